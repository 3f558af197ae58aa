/* symbolize.c: names frames. Kernel from kallsyms, native from ELF files (opened while the
 * process lives), runtime code (.NET JIT, ReadyToRun) through the process's runtimes, deferred
 * until their files are read. Names are interned once for all processes; frames per process. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsym.h"
#include "intern.h"
#include "kallsyms.h"
#include "proctab.h"
#include "runtime.h"
#include "symbolize.h"
#include "vec.h"

struct symfile {
	struct elfsym *es;	/* NULL: not ELF or unreadable */
	uint32_t base;		/* basename, a string id */
};

/* A mapping frames sit in, as the profile shows it. */
struct smap {
	uint64_t start, limit, offset;
	uint32_t filename, build_id;	/* string ids; 0: none */
	uint32_t is_jit;
	uint32_t pad;
};

struct frame {
	uint64_t addr;		/* lookup address (return addresses already less one) */
	uint64_t time_ns;	/* first sample that saw it (for runtime lookups by time) */
	uint64_t file_off;	/* module+offset fallback */
	uint32_t name, system_name;	/* string ids; name 0 while pending */
	uint32_t map;		/* smap index + 1 in the process, 0: none */
	uint32_t base;		/* string id of the file's basename, 0: not file-backed */
	uint8_t pending;	/* runtime code: named (again) in finish */
	uint8_t unnamed;	/* counted as .NET unnamed, for this reason (enum rt_unnamed) */
	uint8_t pad[6];
};

#define TRUNCATED_ADDR UINT64_MAX	/* the key of a process's [truncated] frame */
_Static_assert(RT_UNNAMED__MAX <= 4, "symbolizer_stats.unnamed_by is too small");

struct proc_syms {
	struct intern *keys;	/* addr -> frame index */
	struct frame *frames;
	size_t cap;
	struct intern *maps;	/* struct smap -> index */
	uint32_t npending;
};

struct kframe {
	uint64_t addr;
	uint32_t name;
};

struct symbolizer {
	struct symbolizer_opts opts;
	struct ksyms *ksyms;
	struct intern *kkeys;	/* kernel addr -> kframe index */
	struct kframe *kframes;
	size_t kcap;
	struct intern *file_keys;	/* (dev, ino[, path]) -> symfile index */
	struct symfile **files;
	size_t files_cap;
	struct intern *strings;	/* every name and path, once for all processes; id 0 is "" */
	struct symbolizer_stats stats;
};

static uint32_t str_id(struct symbolizer *sym, const char *s)
{
	int64_t id;

	if (!s || !*s)
		return 0;
	id = intern__id(sym->strings, s, strlen(s), NULL);
	return id < 0 ? 0 : id;
}

static const char *str(const struct symbolizer *sym, uint32_t id)
{
	return id ? intern__key(sym->strings, id, NULL) : NULL;
}

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts)
{
	struct symbolizer *sym = calloc(1, sizeof(*sym));

	if (!sym)
		return NULL;
	sym->opts = *opts;
	sym->kkeys = intern__new();
	sym->file_keys = intern__new();
	sym->strings = intern__new();
	if (!sym->kkeys || !sym->file_keys || !sym->strings ||
	    intern__id(sym->strings, "", 0, NULL) != 0)
		goto err_free;
	sym->ksyms = ksyms__load(opts->kallsyms ? opts->kallsyms : "/proc/kallsyms");
	if (!sym->ksyms && errno == ENODATA)
		sym->stats.kernel_hidden = 1;
	return sym;

err_free:
	symbolizer__free(sym);
	errno = ENOMEM;
	return NULL;
}

void symbolizer__free(struct symbolizer *sym)
{
	if (!sym)
		return;
	for (uint32_t i = 0; i < intern__count(sym->file_keys) && sym->files; i++) {
		if (!sym->files[i])
			continue;
		elfsym__free(sym->files[i]->es);
		free(sym->files[i]);
	}
	free(sym->files);
	free(sym->kframes);
	intern__free(sym->kkeys);
	intern__free(sym->file_keys);
	intern__free(sym->strings);
	ksyms__free(sym->ksyms);
	free(sym);
}

/* Open the file behind a mapping. /proc/<pid>/map_files/<range> names exactly the inode that is
 * mapped (no path for a container to redirect); the path inside the root is the fallback. */
static struct elfsym *open_elf(const struct proc *p, const struct vma *v)
{
	char name[64], self[64];
	struct stat st;
	int pfd, fd;

	snprintf(name, sizeof(name), "map_files/%" PRIx64 "-%" PRIx64, v->start, v->end);
	pfd = p->dir_fd >= 0 ? openat(p->dir_fd, name, O_PATH | O_CLOEXEC) : -1;
	if (pfd >= 0) {
		if (fstat(pfd, &st) || !S_ISREG(st.st_mode)) {
			close(pfd);
			errno = EINVAL;
			return NULL;
		}
		snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
		fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		close(pfd);
		if (fd >= 0)
			return elfsym__open_fd(fd, v->path, p->root_fd);
	}
	if (p->root_fd < 0) {
		errno = ESRCH;
		return NULL;
	}
	return elfsym__open(p->root_fd, v->path);
}

/* The symbol file of a file-backed mapping, shared by every process that maps the same inode. */
static struct symfile *symfile(struct symbolizer *sym, const struct proc *p, const struct vma *v)
{
	struct { uint64_t dev, ino; } key = { v->dev, v->ino };
	char buf[4096 + sizeof(key)];
	size_t klen = sizeof(key);
	struct symfile *f;
	const char *slash;
	int64_t id;

	/* Inode 0 (odd filesystems): tell files apart by path too. */
	memcpy(buf, &key, sizeof(key));
	if (!v->ino) {
		size_t n = strnlen(v->path, sizeof(buf) - sizeof(key));

		memcpy(buf + sizeof(key), v->path, n);
		klen += n;
	}
	id = intern__id(sym->file_keys, buf, klen, NULL);
	if (id < 0 || VEC_RESERVE(sym->files, sym->files_cap, (size_t)id + 1))
		return NULL;
	if (sym->files[id])
		return sym->files[id];
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	slash = strrchr(v->path, '/');
	f->base = str_id(sym, slash ? slash + 1 : v->path);
	f->es = open_elf(p, v);
	sym->files[id] = f;
	return f;
}

static struct proc_syms *proc_syms(struct proc *p)
{
	struct proc_syms *ps = p->syms;

	if (ps)
		return ps;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return NULL;
	ps->keys = intern__new();
	ps->maps = intern__new();
	if (!ps->keys || !ps->maps) {
		intern__free(ps->keys);
		intern__free(ps->maps);
		free(ps);
		return NULL;
	}
	return p->syms = ps;
}

/* The mapping of v as the profile shows it: a file, or is_jit runtime code. */
static uint32_t smap_of(struct symbolizer *sym, struct proc_syms *ps, const struct vma *v,
			const struct symfile *f, int is_jit)
{
	struct smap m;
	int64_t id;

	memset(&m, 0, sizeof(m));
	m.start = v->start;
	m.limit = v->end;
	m.offset = is_jit ? 0 : v->pgoff;
	m.filename = is_jit ? str_id(sym, "[jit]") : str_id(sym, v->path);
	m.build_id = f && f->es ? str_id(sym, elfsym__build_id(f->es)) : 0;
	m.is_jit = is_jit;
	id = intern__id(ps->maps, &m, sizeof(m), NULL);
	return id < 0 ? 0 : id + 1;
}

/* "libc.so.6+0x1234" (file offset) for a file-backed frame with no covering symbol. */
static uint32_t module_offset(struct symbolizer *sym, uint32_t base, uint64_t file_off)
{
	char name[320];

	snprintf(name, sizeof(name), "%s+0x%" PRIx64, base ? str(sym, base) : "?", file_off);
	return str_id(sym, name);
}

int64_t symbolizer__kernel(struct symbolizer *sym, uint64_t addr, int leaf)
{
	const char *name = NULL, *module = NULL;
	char buf[64];
	uint64_t off;
	int added;
	int64_t id;

	if (!leaf)
		addr--;
	id = intern__id(sym->kkeys, &addr, sizeof(addr), &added);
	if (id < 0 || !added)
		return id < 0 ? id : (int64_t)(id | SYM_KERNEL_FRAME);
	if (id >= SYM_KERNEL_FRAME || VEC_RESERVE(sym->kframes, sym->kcap, (size_t)id + 1))
		return -ENOMEM;
	if (sym->ksyms)
		name = ksyms__lookup(sym->ksyms, addr, &off, &module);
	if (!name) {
		snprintf(buf, sizeof(buf), "[kernel] 0x%" PRIx64, addr);
		name = sym->stats.kernel_hidden ? "[kernel]" : buf;
	}
	sym->stats.kernel++;
	sym->stats.frames++;
	sym->kframes[id].addr = addr;
	sym->kframes[id].name = str_id(sym, name);
	return sym->kframes[id].name ? (int64_t)(id | SYM_KERNEL_FRAME) : -ENOMEM;
}

int64_t symbolizer__user(struct symbolizer *sym, struct proc *p, uint64_t addr, int leaf,
			 uint64_t time_ns)
{
	struct proc_syms *ps = proc_syms(p);
	struct symfile *f = NULL;
	const struct vma *v;
	struct frame *fr;
	const char *name;
	uint64_t sym_off;
	int added;
	int64_t id;

	if (!ps)
		return -ENOMEM;
	if (!leaf)
		addr--;
	/* A process that forges stacks gets one frame for all it shows past the cap. */
	if (sym->opts.max_frames && intern__count(ps->keys) >= sym->opts.max_frames &&
	    intern__find(ps->keys, &addr, sizeof(addr)) < 0) {
		sym->stats.truncated++;
		addr = TRUNCATED_ADDR;
	}
	id = intern__id(ps->keys, &addr, sizeof(addr), &added);
	if (id < 0 || !added)
		return id;
	if (id >= SYM_KERNEL_FRAME || VEC_RESERVE(ps->frames, ps->cap, (size_t)id + 1))
		return -ENOMEM;
	fr = &ps->frames[id];
	fr->addr = addr;
	fr->time_ns = time_ns;
	sym->stats.frames++;
	if (addr == TRUNCATED_ADDR) {
		fr->name = str_id(sym, "[truncated: too many distinct frames in this process]");
		return fr->name ? id : -ENOMEM;
	}

	/* A mapping we have not seen yet: the process mapped something since we last looked. */
	v = proc__vma(p, addr);
	if (!v && !proc__refresh_maps(p, sym->opts.maps_refresh_ns))
		v = proc__vma(p, addr);
	if (v && v->kind == VMA_FILE)
		f = symfile(sym, p, v);
	if (f) {
		fr->base = f->base;
		fr->file_off = addr - v->start + v->pgoff;
	}
	if (f && f->es) {
		name = elfsym__lookup(f->es, fr->file_off, &sym_off);
		if (name)
			sym->stats.native_named++;
		else
			sym->stats.native_unnamed++;
		fr->map = smap_of(sym, ps, v, f, 0);
		fr->name = name ? str_id(sym, name) : module_offset(sym, f->base, fr->file_off);
		return fr->name ? id : -ENOMEM;
	}
	/* Runtime code (JIT, ReadyToRun): named at the end of the window, after the last poll. */
	if (runtime__claims(p, addr, f != NULL)) {
		fr->pending = 1;
		ps->npending++;
		if (v)
			fr->map = smap_of(sym, ps, v, f, f == NULL);
		return id;
	}
	if (f) {
		sym->stats.native_unnamed++;
		fr->map = smap_of(sym, ps, v, f, 0);
		fr->name = module_offset(sym, f->base, fr->file_off);
	} else {
		sym->stats.unknown++;
		if (v) {
			struct smap m = { .start = v->start, .limit = v->end,
					  .filename = str_id(sym, v->path) };
			int64_t mid = intern__id(ps->maps, &m, sizeof(m), NULL);

			fr->map = mid < 0 ? 0 : mid + 1;
		}
		fr->name = str_id(sym, v && v->kind == VMA_VDSO ? v->path : "[unknown]");
	}
	return fr->name ? id : -ENOMEM;
}

static int finish_frame(struct symbolizer *sym, struct proc *p, struct proc_syms *ps,
			struct frame *fr)
{
	struct rt_symbol rs = { 0 };
	char name[4096];
	int first = fr->name == 0;

	if (runtime__symbolize(p, fr->addr, fr->time_ns, &rs) == 0) {
		sym->stats.jit_named++;
		if (!first && fr->unnamed) {
			sym->stats.jit_unnamed--;	/* named at last */
			sym->stats.unnamed_by[fr->unnamed]--;
		}
		if (sym->opts.show_tiers && rs.tier && rs.tier[0])
			snprintf(name, sizeof(name), "%s [%s]", rs.name, rs.tier);
		else
			snprintf(name, sizeof(name), "%s", rs.name);
		fr->name = str_id(sym, name);
		fr->system_name = str_id(sym, rs.system_name);
		fr->pending = 0;
		ps->npending--;
		return fr->name ? 0 : -ENOMEM;
	}
	if (!first)
		return 0;	/* still unnamed: keeps its fallback, tried again next window */
	/* Managed code without a name is .NET unnamed, whatever it looks like (a ReadyToRun .dll's
	 * code shows as module+offset): the report says why, not "native". */
	if (fr->base && rs.unnamed == RT_UNNAMED_NOT_OURS) {
		sym->stats.native_unnamed++;
	} else {
		fr->unnamed = rs.unnamed > RT_UNNAMED_NOT_OURS && rs.unnamed < RT_UNNAMED__MAX ?
			      rs.unnamed : RT_UNNAMED_NO_ENTRY;
		sym->stats.jit_unnamed++;
		sym->stats.unnamed_by[fr->unnamed]++;
	}
	fr->name = fr->base ? module_offset(sym, fr->base, fr->file_off) : str_id(sym, "[unknown]");
	/* A file-backed frame the runtime does not know stays module+offset; nothing more will come
	 * from an exited process either. */
	if (fr->base || p->gone) {
		fr->pending = 0;
		ps->npending--;
	}
	return fr->name ? 0 : -ENOMEM;
}

int symbolizer__finish_proc(struct symbolizer *sym, struct proc *p)
{
	struct proc_syms *ps = p->syms;

	for (size_t f = 0; ps && ps->npending && f < intern__count(ps->keys); f++)
		if (ps->frames[f].pending && finish_frame(sym, p, ps, &ps->frames[f]))
			return -ENOMEM;
	return 0;
}

int symbolizer__finish(struct symbolizer *sym, struct proctab *pt)
{
	for (uint32_t i = 0; i < proctab__count(pt); i++) {
		struct proc *p = proctab__at(pt, i);

		if (p && symbolizer__finish_proc(sym, p))
			return -ENOMEM;
	}
	return 0;
}

int symbolizer__frame(const struct symbolizer *sym, const struct proc *p, uint32_t id,
		      struct agg_frame *out)
{
	const struct proc_syms *ps = p ? p->syms : NULL;
	const struct frame *fr;
	const struct smap *m;

	memset(out, 0, sizeof(*out));
	if (id & SYM_KERNEL_FRAME) {
		id &= ~SYM_KERNEL_FRAME;
		if (id >= intern__count(sym->kkeys))
			return -ENOENT;
		out->name = str(sym, sym->kframes[id].name);
		out->address = sym->kframes[id].addr;
		out->has_mapping = 1;
		out->mapping = (struct pf_mapping){ .start = 0xffff800000000000ull,
						    .limit = UINT64_MAX,
						    .filename = "[kernel.kallsyms]",
						    .has_functions = 1 };
		return 0;
	}
	if (!ps || id >= intern__count(ps->keys))
		return -ENOENT;
	fr = &ps->frames[id];
	out->name = fr->name ? str(sym, fr->name) : "[unknown]";
	out->system_name = str(sym, fr->system_name);
	out->address = fr->addr;
	if (fr->map && (m = intern__key(ps->maps, fr->map - 1, NULL))) {
		out->has_mapping = 1;
		out->mapping = (struct pf_mapping){ .start = m->start, .limit = m->limit,
						    .offset = m->offset,
						    .filename = str(sym, m->filename),
						    .build_id = str(sym, m->build_id),
						    .has_functions = 1, .is_jit = m->is_jit };
	}
	return 0;
}

void symbolizer__forget(struct symbolizer *sym, struct proc *p)
{
	struct proc_syms *ps = p->syms;

	if (!ps)
		return;
	sym->stats.forgotten += intern__count(ps->keys);
	intern__free(ps->keys);
	intern__free(ps->maps);
	free(ps->frames);
	free(ps);
	p->syms = NULL;
}

void symbolizer__stats(const struct symbolizer *sym, struct symbolizer_stats *out)
{
	*out = sym->stats;
}
