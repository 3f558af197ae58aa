/* symbolize.c: names frames. Kernel from kallsyms, native from ELF files (opened while the
 * process lives), .NET JIT from perf maps / jitdump (deferred until the maps are complete). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dotnetproc.h"
#include "elfsym.h"
#include "intern.h"
#include "kallsyms.h"
#include "proctab.h"
#include "profile.h"
#include "symbolize.h"

#define KERNEL_KEY UINT32_MAX

struct symfile {
	struct elfsym *es;	/* NULL: not ELF or unreadable */
	const char *base;	/* basename, owned by the symbolizer's string table */
};

struct frame {
	uint32_t loc;		/* profile location; 0 while pending */
	uint32_t pending;	/* a .NET JIT candidate named in finish */
	struct proc *proc;
	uint64_t addr;		/* lookup address (return addresses already less one) */
	/* Kept for pending frames only, to name them in finish: */
	uint64_t time_ns;	/* first sample that saw it */
	uint64_t map_start, map_end, map_pgoff;	/* the mapping it sat in (0s: none) */
	const char *map_path;	/* interned; NULL: none */
	struct symfile *file;	/* for a .dll or other file-backed mapping, if any */
};

struct symbolizer {
	struct profile *prof;
	struct symbolizer_opts opts;
	struct ksyms *ksyms;
	struct intern *frame_keys;	/* (proc idx, addr) -> frame index */
	struct frame *frames;
	uint32_t nframes, cap;
	struct intern *file_keys;	/* (dev, ino, path) -> symfile index */
	struct symfile **files;	/* individually allocated: vmas and frames point at them */
	uint32_t nfiles, files_cap;
	struct intern *strings;		/* paths and basenames kept beyond maps re-reads */
	uint32_t kernel_mapping;
	struct symbolizer_stats stats;
};

static const char *keep_string(struct symbolizer *sym, const char *s)
{
	int64_t id = intern__id(sym->strings, s, strlen(s) + 1, NULL);

	return id < 0 ? NULL : intern__key(sym->strings, id, NULL);
}

struct symbolizer *symbolizer__new(struct profile *prof, const struct symbolizer_opts *opts)
{
	struct symbolizer *sym = calloc(1, sizeof(*sym));
	struct pf_mapping km = {
		.start = 0xffff800000000000ull,
		.limit = UINT64_MAX,
		.filename = "[kernel.kallsyms]",
		.has_functions = 1,
	};

	if (!sym)
		return NULL;
	sym->prof = prof;
	sym->opts = *opts;
	sym->frame_keys = intern__new();
	sym->file_keys = intern__new();
	sym->strings = intern__new();
	if (!sym->frame_keys || !sym->file_keys || !sym->strings)
		goto err_free;
	sym->ksyms = ksyms__load(opts->kallsyms ? opts->kallsyms : "/proc/kallsyms");
	if (!sym->ksyms && errno == ENODATA)
		sym->stats.kernel_hidden = 1;
	sym->kernel_mapping = profile__mapping(prof, &km);
	if (!sym->kernel_mapping)
		goto err_free;
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
	for (uint32_t i = 0; i < sym->nfiles; i++) {
		elfsym__free(sym->files[i]->es);
		free(sym->files[i]);
	}
	free(sym->files);
	free(sym->frames);
	intern__free(sym->frame_keys);
	intern__free(sym->file_keys);
	intern__free(sym->strings);
	ksyms__free(sym->ksyms);
	free(sym);
}

/* system_name: NULL, or for a .NET method the runtime's full signature (with "instance" and the
 * return type) behind its short "[Assembly] Type::Method(args)" name. */
static uint32_t location(struct symbolizer *sym, uint32_t mapping, uint64_t addr, const char *name,
			 const char *system_name)
{
	uint32_t fn = profile__function(sym->prof, name, system_name, NULL);

	return fn ? profile__location(sym->prof, mapping, addr, fn) : 0;
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

static struct symfile *symfile(struct symbolizer *sym, const struct proc *p, const struct vma *v)
{
	struct { uint64_t dev, ino; } key = { v->dev, v->ino };
	char buf[4096 + sizeof(key)];
	size_t klen = sizeof(key);
	struct symfile *f;
	const char *slash;
	int added;
	int64_t id;

	/* Inode 0 (odd filesystems): tell files apart by path too. */
	memcpy(buf, &key, sizeof(key));
	if (!v->ino) {
		size_t n = strnlen(v->path, sizeof(buf) - sizeof(key));

		memcpy(buf + sizeof(key), v->path, n);
		klen += n;
	}
	id = intern__id(sym->file_keys, buf, klen, &added);
	if (id < 0)
		return NULL;
	if (id < sym->nfiles)
		return sym->files[id];
	if (sym->nfiles == sym->files_cap) {
		uint32_t cap = sym->files_cap ? sym->files_cap * 2 : 64;
		struct symfile **nf = realloc(sym->files, cap * sizeof(*nf));

		if (!nf)
			return NULL;
		sym->files = nf;
		sym->files_cap = cap;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	sym->files[sym->nfiles++] = f;
	slash = strrchr(v->path, '/');
	f->base = keep_string(sym, slash ? slash + 1 : v->path);
	f->es = open_elf(p, v);
	return f;
}

static uint32_t file_mapping(struct symbolizer *sym, struct vma *v, struct symfile *f)
{
	struct pf_mapping m = {
		.start = v->start,
		.limit = v->end,
		.offset = v->pgoff,
		.filename = v->path,
		.build_id = f && f->es ? elfsym__build_id(f->es) : NULL,
		.has_functions = 1,
	};

	if (!v->mapping_id)
		v->mapping_id = profile__mapping(sym->prof, &m);
	return v->mapping_id;
}

static int64_t new_frame(struct symbolizer *sym, const void *key, size_t klen, int *added)
{
	int64_t id = intern__id(sym->frame_keys, key, klen, added);

	if (id < 0 || id < sym->nframes)
		return id;
	if (sym->nframes == sym->cap) {
		uint32_t cap = sym->cap ? sym->cap * 2 : 1024;
		struct frame *nf = realloc(sym->frames, cap * sizeof(*nf));

		if (!nf)
			return -ENOMEM;
		sym->frames = nf;
		sym->cap = cap;
	}
	memset(&sym->frames[sym->nframes], 0, sizeof(struct frame));
	*added = 1;
	sym->stats.frames++;
	return sym->nframes++;
}

/*
 * The frame for an address of a process (or the kernel): a return address is looked up at
 * addr - 1, inside the call, so *addr is adjusted. *added says whether it is new and must be named.
 */
static int64_t frame_of(struct symbolizer *sym, uint32_t proc, uint64_t *addr, int leaf, int *added)
{
	struct { uint32_t proc; uint64_t addr; } __attribute__((packed)) key = { proc, 0 };

	if (!leaf)
		(*addr)--;
	key.addr = *addr;
	return new_frame(sym, &key, sizeof(key), added);
}

int64_t symbolizer__kernel(struct symbolizer *sym, uint64_t addr, int leaf)
{
	const char *name = NULL, *module = NULL;
	char buf[64];
	uint64_t off;
	int added;
	int64_t id = frame_of(sym, KERNEL_KEY, &addr, leaf, &added);

	if (id < 0 || !added)
		return id;
	if (sym->ksyms)
		name = ksyms__lookup(sym->ksyms, addr, &off, &module);
	if (!name) {
		snprintf(buf, sizeof(buf), "[kernel] 0x%" PRIx64, addr);
		name = sym->stats.kernel_hidden ? "[kernel]" : buf;
	}
	sym->stats.kernel++;
	sym->frames[id].addr = addr;
	sym->frames[id].loc = location(sym, sym->kernel_mapping, addr, name, NULL);
	return sym->frames[id].loc ? id : -ENOMEM;
}

/* "libc.so.6+0x1234" (file offset) for a file-backed frame with no covering symbol. */
static uint32_t module_offset(struct symbolizer *sym, uint32_t mapping, const char *base,
			      uint64_t addr, uint64_t file_off)
{
	char name[320];

	snprintf(name, sizeof(name), "%s+0x%" PRIx64, base ? base : "?", file_off);
	return location(sym, mapping, addr, name, NULL);
}

int64_t symbolizer__user(struct symbolizer *sym, struct proc *p, uint64_t addr, int leaf,
			 uint64_t time_ns)
{
	struct symfile *f = NULL;
	struct frame *fr;
	struct vma *v;
	const char *name;
	uint64_t off, sym_off;
	int added;
	int64_t id = frame_of(sym, p->idx, &addr, leaf, &added);

	if (id < 0 || !added)
		return id;
	fr = &sym->frames[id];
	fr->addr = addr;

	v = (struct vma *)proc__vma(p, addr, sym->opts.maps_refresh_ns);
	if (v && v->kind == VMA_FILE)
		f = v->file ? v->file : (v->file = symfile(sym, p, v));
	if (f && f->es) {
		off = addr - v->start + v->pgoff;
		name = elfsym__lookup(f->es, off, &sym_off);
		if (name) {
			sym->stats.native_named++;
			fr->loc = location(sym, file_mapping(sym, v, f), addr, name, NULL);
		} else {
			sym->stats.native_unnamed++;
			fr->loc = module_offset(sym, file_mapping(sym, v, f), f->base, addr, off);
		}
		return fr->loc ? id : -ENOMEM;
	}
	/* Anything else in a .NET process may be JIT or ReadyToRun code: name it at the end. */
	if (p->is_dotnet && (!v || v->kind != VMA_VDSO)) {
		fr->pending = 1;
		fr->proc = p;
		fr->time_ns = time_ns;
		fr->file = f;
		if (v) {
			fr->map_start = v->start;
			fr->map_end = v->end;
			fr->map_pgoff = v->pgoff;
			fr->map_path = keep_string(sym, v->path);
		}
		return id;
	}
	if (f) {
		sym->stats.native_unnamed++;
		fr->loc = module_offset(sym, file_mapping(sym, v, f), f->base, addr,
					addr - v->start + v->pgoff);
	} else {
		struct pf_mapping m = { .start = v ? v->start : 0, .limit = v ? v->end : 0,
					.filename = v ? v->path : "", .has_functions = 1 };

		sym->stats.unknown++;
		fr->loc = location(sym, v ? profile__mapping(sym->prof, &m) : 0, addr,
				   v && v->kind == VMA_VDSO ? v->path : "[unknown]", NULL);
	}
	return fr->loc ? id : -ENOMEM;
}

static int finish_frame(struct symbolizer *sym, struct frame *fr)
{
	const struct perfmap_sym *ps = dotnetproc__lookup(fr->proc, fr->addr, fr->time_ns);
	int file_backed = fr->file != NULL;
	struct pf_mapping m = {
		.start = fr->map_start,
		.limit = fr->map_end,
		.offset = file_backed ? fr->map_pgoff : 0,
		.filename = file_backed ? fr->map_path : "[jit]",
		.has_functions = 1,
		.is_jit = !file_backed,
	};
	uint32_t mapping = fr->map_path ? profile__mapping(sym->prof, &m) : 0;
	char name[4096];

	if (ps) {
		const char *method = ps->name + perfmap__method_offset(ps->name, strlen(ps->name));

		sym->stats.jit_named++;
		if (sym->opts.show_tiers && ps->tier && ps->tier[0])
			snprintf(name, sizeof(name), "%s [%s]", method, ps->tier);
		else
			snprintf(name, sizeof(name), "%s", method);
		fr->loc = location(sym, mapping, fr->addr, name, ps->name);
	} else if (file_backed) {
		sym->stats.native_unnamed++;
		fr->loc = module_offset(sym, mapping, fr->file->base, fr->addr,
					fr->addr - fr->map_start + fr->map_pgoff);
	} else {
		sym->stats.jit_unnamed++;
		fr->loc = location(sym, mapping, fr->addr, "[unknown]", NULL);
	}
	fr->pending = 0;
	return fr->loc ? 0 : -ENOMEM;
}

int symbolizer__finish(struct symbolizer *sym)
{
	for (uint32_t i = 0; i < sym->nframes; i++)
		if (sym->frames[i].pending && finish_frame(sym, &sym->frames[i]))
			return -ENOMEM;
	return 0;
}

uint32_t symbolizer__location(const struct symbolizer *sym, uint32_t frame)
{
	return frame < sym->nframes ? sym->frames[frame].loc : 0;
}

void symbolizer__stats(const struct symbolizer *sym, struct symbolizer_stats *out)
{
	*out = sym->stats;
}
