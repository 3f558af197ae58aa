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
#include "idmap.h"
#include "intern.h"
#include "kallsyms.h"
#include "leafunwind.h"
#include "procfs.h"
#include "proctab.h"
#include "rootfs.h"
#include "runtime.h"
#include "symbolize.h"
#include "symbudget.h"
#include "symsrv.h"
#include "util.h"
#include "vec.h"

/* What tells one file's content from another's: a file rewritten in place keeps its device and
 * inode, not its size, times or build id. */
struct file_key {
	uint64_t dev, ino, size;
	int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
};

static struct file_key file_key_of(const struct stat *st)
{
	return (struct file_key){ st->st_dev, st->st_ino, st->st_size, st->st_mtim.tv_sec,
				  st->st_mtim.tv_nsec, st->st_ctim.tv_sec, st->st_ctim.tv_nsec };
}

struct symfile {
	struct elfsym *es;	/* NULL: not ELF or unreadable, or not held (evicted, over budget) */
	struct file_key key;	/* the content its table was read from (a reload must match) */
	uint64_t charged;	/* bytes es took from the symbol budget */
	uint64_t last_used_ns;	/* sample time of its last lookup */
	uint64_t reload_after_ns;	/* evicted: read again on demand from then; 0: not evicted */
	uint32_t build_id;	/* string id, kept when es is not */
	uint8_t is_elf;		/* its table was read once: an ELF file whatever es is now */
	struct leafcfi *cfi;	/* its CFI, opened at the first leaf sample in it; NULL: none */
	uint64_t cfi_charged;	/* bytes cfi took from the symbol budget */
	int cfi_tried;
	uint32_t base;		/* basename, a string id */
	uint8_t awaiting;	/* its debug file was asked of the symbol servers, not there yet */
	uint8_t no_debug;	/* a debug file of its build id came and did not fit: not asked again */
	uint32_t attached_gen;	/* symbolizer attach_gen when its debug file came; 0: none */
};

/* What named a native frame, for the counters when a debug file renames it. */
enum { NK_NONE, NK_SYMBOL, NK_FUNCTION, NK_OFFSET };
/* JIT code a leaf was sampled in: the first bytes of the method, read once (leafunwind). */
#define LEAF_CODE_MAX	 1024	/* bytes of a method kept */
#define LEAF_AT_IP	 16	/* bytes read at ip past them */
#define LEAF_METHODS_MAX 4096	/* methods kept per process */

struct leafmethod {
	uint8_t *code;		/* NULL: unreadable */
	uint32_t len;
};

/* The vDSO's CFI, once per distinct image (every 64-bit process of a kernel has the same). */
#define LEAF_VDSO_MAX	 4
#define LEAF_VDSO_SIZE	 (64u << 10)	/* larger [vdso] mappings are not read */

struct vdso {
	uint8_t *image;		/* what processes' [vdso] mappings are compared with */
	size_t len;
	struct leafcfi *cfi;
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
	uint8_t kind;		/* NK_* of a native frame */
	uint8_t unnamed;	/* counted as .NET unnamed, for this reason (enum rt_unnamed) */
	uint8_t off_code;	/* a return address in memory that holds no code (symbolizer__ends_chain) */
	uint8_t unmapped;	/* in no mapping, or in data, of maps read before the sample and
				 * too recently to read again: tried again in finish, with the
				 * maps read then */
	uint32_t file;		/* symfile index + 1, 0: none */
};

#define TRUNCATED_ADDR UINT64_MAX	/* the key of a process's [truncated] frame */
_Static_assert(RT_UNNAMED__MAX <= 5, "symbolizer_stats.unnamed_by is too small");

struct proc_syms {
	struct idmap *keys;	/* addr -> frame index */
	struct frame *frames;
	size_t cap;
	struct intern *maps;	/* struct smap -> index */
	uint32_t npending;
	uint32_t nunmapped;	/* frames with unmapped set */
	uint32_t renamed_gen;	/* frames named again for every debug file attached up to this */
	struct intern *vmas;	/* the mappings met (start, end, offset, dev, ino) -> symfile */
	uint32_t *vma_file;	/* symfile index + 1 by vmas id; 0: not file-backed ELF */
	size_t vma_cap;
	struct intern *leaf_keys;	/* JIT method (start, size) -> leafmethod index */
	struct leafmethod *methods;
	size_t methods_cap;
	int vdso;		/* index + 1 into the symbolizer's vdsos; -1: not known; 0: not read */
	struct fcache *fcache;	/* FCACHE_SLOTS, at the process's first frame */
	struct lcache *lcache;	/* LCACHE_SLOTS, at the process's first JIT leaf */
};

/* Samples repeat their hot frames: the last frame id found for an address, direct-mapped in
 * front of the keys table (which stays the truth: ids never change while the process lives). */
#define FCACHE_BITS  8
#define FCACHE_SLOTS (1u << FCACHE_BITS)
struct fcache {
	uint64_t addr;		/* lookup address + 1; 0: empty */
	int64_t id;
};

/* The same for JIT leaves: what the prologue analysis said for a leaf ip (the code at an address
 * stays what the process's first sample there found, as for frame ids). */
#define LCACHE_BITS  6
#define LCACHE_SLOTS (1u << LCACHE_BITS)
struct lcache {
	uint64_t ip;		/* + 1; 0: empty */
	struct leaf_where w;
};

struct kframe {
	uint64_t addr;
	uint32_t name;
};

struct symbolizer {
	struct symbolizer_opts opts;
	struct ksyms *ksyms;
	struct idmap *kkeys;	/* kernel addr -> kframe index */
	struct kframe *kframes;
	size_t kcap;
	struct intern *file_keys;	/* file identity (struct file_key + build id) -> symfile index */
	struct intern *inode_keys;	/* (dev, ino) as the maps show it -> the newest symfile read */
	uint32_t *inode_file;		/* symfile index + 1 by inode_keys id */
	size_t inode_cap;
	struct symfile **files;
	size_t files_cap;
	struct intern *strings;	/* every name and path, once for all processes; id 0 is "" */
	uint64_t symsrv_gen;	/* symsrv__generation when the files were last looked at */
	uint64_t next_scan_ns;	/* files whose fetch failed are asked again from then */
	uint32_t nawaiting;	/* symfiles with awaiting set */
	uint32_t attach_gen;	/* debug files attached so far */
	struct vdso vdsos[LEAF_VDSO_MAX];
	size_t nvdsos;
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
	sym->kkeys = idmap__new();
	sym->file_keys = intern__new();
	sym->inode_keys = intern__new();
	sym->strings = intern__new();
	if (!sym->kkeys || !sym->file_keys || !sym->inode_keys || !sym->strings ||
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
		symbudget__give(SB_ELF, sym->files[i]->charged + sym->files[i]->cfi_charged);
		elfsym__free(sym->files[i]->es);
		leafcfi__free(sym->files[i]->cfi);
		free(sym->files[i]);
	}
	free(sym->files);
	for (size_t i = 0; i < sym->nvdsos; i++) {
		free(sym->vdsos[i].image);
		leafcfi__free(sym->vdsos[i].cfi);
	}
	free(sym->kframes);
	idmap__free(sym->kkeys);
	intern__free(sym->file_keys);
	intern__free(sym->inode_keys);
	free(sym->inode_file);
	intern__free(sym->strings);
	ksyms__free(sym->ksyms);
	free(sym);
}

/* Open the file behind a mapping. /proc/<pid>/map_files/<range> names exactly the inode that is
 * mapped (no path for a container to redirect); the path inside the root is the fallback, and
 * the only way once the process exec'd (map_files then shows the new program's files).
 * Returns an fd, or -errno. */
static int open_file(const struct proc *p, const struct vma *v)
{
	char name[64], self[64];
	struct stat st;
	int pfd, fd;

	snprintf(name, sizeof(name), "map_files/%" PRIx64 "-%" PRIx64, v->start, v->end);
	pfd = p->dir_fd >= 0 && !p->execed ? openat(p->dir_fd, name, O_PATH | O_CLOEXEC) : -1;
	if (pfd >= 0) {
		if (fstat(pfd, &st) || !S_ISREG(st.st_mode)) {
			close(pfd);
			return -EINVAL;
		}
		snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
		fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		close(pfd);
		if (fd >= 0)
			return fd;
	}
	if (p->root_fd < 0)
		return -ESRCH;
	return rootfs__open(p->root_fd, v->path, O_RDONLY, S_IFREG, ELFSYM_MAX_FILE, 0);
}

static void note_refusal(struct symbolizer *sym, const struct proc *p, const struct vma *v,
			 const char *refused)
{
	char what[512];

	sym->stats.debug_refused++;
	if (sym->stats.n_refused_named >= SYM_REFUSED_NAMED)
		return;
	snprintf(what, sizeof(what), "%s (pid %u): %s", v->path, p->pid, refused);
	sym->stats.refused_named[sym->stats.n_refused_named] = str_id(sym, what);
	if (sym->stats.refused_named[sym->stats.n_refused_named])
		sym->stats.n_refused_named++;
}

/*
 * ELF tables come out of the program's symbol budget (symbudget.h). To make room, the tables used
 * least recently are evicted (frames already named keep their names; a new frame in an evicted
 * file reads it again, at most once a second per file). One that still does not fit is not kept:
 * its frames are module+offset, and it is tried again after RELOAD_REFUSED_NS. Tables with a
 * debug file from a symbol server stay: that file was fetched at a cost.
 */
#define RELOAD_EVICTED_NS (10 * 1000000000ull)
#define RELOAD_REFUSED_NS (10 * 1000000000ull)

static int evictable(const struct symfile *f, const struct symfile *keep)
{
	return f && f != keep && f->es && !f->attached_gen && !f->awaiting;
}

/* Its CFI goes with its table (read again at a leaf sample once the table is back). */
static void drop_cfi(struct symfile *f)
{
	symbudget__give(SB_ELF, f->cfi_charged);
	f->cfi_charged = 0;
	leafcfi__free(f->cfi);
	f->cfi = NULL;
	f->cfi_tried = 0;
}

static void evict(struct symbolizer *sym, struct symfile *f, uint64_t now)
{
	symbudget__give(SB_ELF, f->charged);
	f->charged = 0;
	elfsym__free(f->es);
	f->es = NULL;
	drop_cfi(f);
	f->reload_after_ns = now + RELOAD_EVICTED_NS;
}

/* Evict the least recently used table but keep; 0 when there was none to evict. */
static int evict_lru(struct symbolizer *sym, const struct symfile *keep, uint64_t now)
{
	struct symfile *lru = NULL;

	for (uint32_t i = 0; i < intern__count(sym->file_keys); i++) {
		struct symfile *f = sym->files[i];

		if (evictable(f, keep) && (!lru || f->last_used_ns < lru->last_used_ns))
			lru = f;
	}
	if (!lru)
		return 0;
	evict(sym, lru, now);
	sym->stats.elf_evicted++;
	return 1;
}

/* Hold es as f's table if the budget has room (made by eviction); else free it. */
static void keep_table(struct symbolizer *sym, struct symfile *f, struct elfsym *es, uint64_t now)
{
	uint64_t bytes = elfsym__bytes(es);

	f->is_elf = 1;
	f->build_id = str_id(sym, elfsym__build_id(es));
	/* Evict only for a table that fits the budget at all. */
	while (symbudget__fits(bytes) < 0 && evict_lru(sym, f, now))
		;
	if (!symbudget__take(SB_ELF, bytes)) {
		elfsym__free(es);
		sym->stats.elf_over_budget++;
		f->reload_after_ns = now + RELOAD_REFUSED_NS;
		return;
	}
	f->es = es;
	f->charged = bytes;
	f->last_used_ns = now;
	f->reload_after_ns = 0;
}

/* f's table for a lookup in p's mapping v at time now: read again if it was evicted, when the
 * file there is still the same content. NULL: none. */
static struct elfsym *table(struct symbolizer *sym, struct symfile *f, const struct proc *p,
			    const struct vma *v, uint64_t now)
{
	struct file_key key;
	struct stat st;
	int fd;

	if (f->es) {
		f->last_used_ns = now;
		return f->es;
	}
	if (!f->reload_after_ns || now < f->reload_after_ns)
		return NULL;
	f->reload_after_ns = now + RELOAD_EVICTED_NS;
	fd = open_file(p, v);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	key = file_key_of(&st);
	if (memcmp(&key, &f->key, sizeof(key))) {
		close(fd);
		f->reload_after_ns = 0;	/* another file now: this table is gone for good */
		return NULL;
	}
	{
		struct elfsym *es = elfsym__open_fd(fd, v->path, p->root_fd);

		if (!es)
			return NULL;
		sym->stats.elf_reloaded++;
		keep_table(sym, f, es, now);
	}
	return f->es;
}

void symbolizer__release_idle(struct symbolizer *sym, uint64_t now, uint64_t idle_ns)
{
	for (uint32_t i = 0; i < intern__count(sym->file_keys); i++) {
		struct symfile *f = sym->files[i];

		if (evictable(f, NULL) && f->last_used_ns + idle_ns < now) {
			evict(sym, f, now);
			f->reload_after_ns = now;	/* on demand at once */
			sym->stats.elf_idle_released++;
		}
	}
}

/* The symbol file of a file-backed mapping, shared by every process that maps the same content.
 * A process that exited before its samples were read has no file to open: it gets the newest
 * symbol file read for the same device and inode. Returns its index + 1, or 0 (none, or no
 * memory). */
static uint32_t symfile_id(struct symbolizer *sym, const struct proc *p, const struct vma *v,
			   uint64_t now)
{
	char buf[sizeof(struct file_key) + 2 * 64 + 4096], bid[2 * 64 + 1];
	struct { uint64_t dev, ino; } ikey = { v->dev, v->ino };
	struct file_key key;
	struct symfile *f;
	const char *slash;
	int64_t id, iid;
	size_t klen;
	struct stat st;
	int fd;

	iid = intern__id(sym->inode_keys, &ikey, sizeof(ikey), NULL);
	if (iid < 0 || VEC_RESERVE(sym->inode_file, sym->inode_cap, (size_t)iid + 1))
		return 0;
	memset(&key, 0, sizeof(key));
	bid[0] = 0;
	fd = open_file(p, v);
	if (fd >= 0 && fstat(fd, &st) == 0) {
		key = file_key_of(&st);
		elfsym__read_build_id(fd, bid, sizeof(bid));
	} else {
		if (fd >= 0)
			close(fd);
		if (sym->inode_file[iid])
			return sym->inode_file[iid];
		fd = -1;
		key.dev = v->dev;	/* unreadable: one failed entry per mapped inode */
		key.ino = v->ino;
	}
	memcpy(buf, &key, sizeof(key));
	klen = sizeof(key);
	memcpy(buf + klen, bid, strlen(bid) + 1);
	klen += strlen(bid) + 1;
	/* Inode 0 (odd filesystems): tell files apart by path too. */
	if (!key.ino) {
		size_t n = strnlen(v->path, sizeof(buf) - klen);

		memcpy(buf + klen, v->path, n);
		klen += n;
	}
	id = intern__id(sym->file_keys, buf, klen, NULL);
	if (id < 0 || VEC_RESERVE(sym->files, sym->files_cap, (size_t)id + 1))
		goto close_fd;
	if (sym->files[id])
		goto close_fd;
	f = calloc(1, sizeof(*f));
	if (!f)
		goto close_fd;
	slash = strrchr(v->path, '/');
	f->base = str_id(sym, slash ? slash + 1 : v->path);
	f->key = key;
	if (fd >= 0) {
		struct elfsym *es = elfsym__open_fd(fd, v->path, p->root_fd);

		fd = -1;
		if (es)
			keep_table(sym, f, es, now);
	}
	if (f->es && elfsym__debug_refused(f->es))
		note_refusal(sym, p, v, elfsym__debug_refused(f->es));
	if (f->es && sym->opts.symsrv && elfsym__needs_debug(f->es) &&
	    symsrv__want(sym->opts.symsrv, elfsym__build_id(f->es), str(sym, f->base)) ==
		    SYMSRV_PENDING) {
		f->awaiting = 1;
		sym->nawaiting++;
	}
	sym->files[id] = f;
close_fd:
	if (fd >= 0)
		close(fd);
	if (id < 0 || !sym->files[id])
		return 0;
	if (sym->files[id]->es || !sym->inode_file[iid])
		sym->inode_file[iid] = id + 1;
	return id + 1;
}

/* The symbol file of v in p: looked up once per mapping of the process. */
static struct symfile *symfile(struct symbolizer *sym, struct proc_syms *ps, const struct proc *p,
			       const struct vma *v, uint32_t *file, uint64_t now)
{
	struct { uint64_t start, end, pgoff, dev, ino; } key = { v->start, v->end, v->pgoff, v->dev,
								   v->ino };
	int added;
	int64_t id = intern__id(ps->vmas, &key, sizeof(key), &added);

	*file = 0;
	if (id < 0 || VEC_RESERVE(ps->vma_file, ps->vma_cap, (size_t)id + 1))
		return NULL;
	if (added)
		ps->vma_file[id] = symfile_id(sym, p, v, now);
	*file = ps->vma_file[id];
	return *file ? sym->files[*file - 1] : NULL;
}

static struct proc_syms *proc_syms(struct symbolizer *sym, struct proc *p)
{
	struct proc_syms *ps = p->syms;

	if (ps)
		return ps;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return NULL;
	ps->renamed_gen = sym->attach_gen;	/* its frames are named with what is there now */
	ps->keys = idmap__new();
	ps->maps = intern__new();
	ps->vmas = intern__new();
	if (!ps->keys || !ps->maps || !ps->vmas) {
		idmap__free(ps->keys);
		intern__free(ps->maps);
		intern__free(ps->vmas);
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
	m.build_id = f ? f->build_id : 0;
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

static uint64_t *kind_counter(struct symbolizer *sym, int kind)
{
	switch (kind) {
	case NK_SYMBOL: return &sym->stats.native_named;
	case NK_FUNCTION: return &sym->stats.native_function;
	case NK_OFFSET: return &sym->stats.native_unnamed;
	default: return NULL;
	}
}

/* A native frame's name: its symbol; else "libcoreclr.so!0x4af210", the start (ELF virtual
 * address) of the function .eh_frame says holds it, one name for all of a function's addresses;
 * else module+offset. Counted by kind (a frame named again is moved between the counters). */
static uint32_t file_name(struct symbolizer *sym, struct symfile *f, uint64_t file_off, int *kind)
{
	char name[320];
	const char *s = elfsym__lookup(f->es, file_off, NULL);
	uint64_t vaddr, start;

	if (s) {
		*kind = NK_SYMBOL;
		return str_id(sym, s);
	}
	if (elfsym__file_to_vaddr(f->es, file_off, &vaddr) == 0 &&
	    elfsym__function_start(f->es, vaddr, &start) == 0) {
		snprintf(name, sizeof(name), "%s!0x%" PRIx64, str(sym, f->base), start);
		*kind = NK_FUNCTION;
		return str_id(sym, name);
	}
	*kind = NK_OFFSET;
	return module_offset(sym, f->base, file_off);
}

static uint32_t native_name(struct symbolizer *sym, struct symfile *f, struct frame *fr)
{
	uint64_t *c = kind_counter(sym, fr->kind);
	int kind;

	if (c)
		(*c)--;
	fr->name = file_name(sym, f, fr->file_off, &kind);
	fr->kind = kind;
	(*kind_counter(sym, fr->kind))++;
	return fr->name;
}

/* Runtime code that is a copy of code in one of the process's files (at orig): named as that
 * code, marked as a copy. 0, or -ENOENT (orig in no ELF file whose table is held). */
static int copy_name(struct symbolizer *sym, struct proc *p, struct proc_syms *ps, struct frame *fr,
		     uint64_t orig)
{
	const struct vma *v = proc__vma(p, orig);
	struct symfile *f;
	uint32_t file, id;
	char name[4096];
	int kind;

	if (!v || v->kind != VMA_FILE || !(f = symfile(sym, ps, p, v, &file, fr->time_ns)) ||
	    !table(sym, f, p, v, fr->time_ns))
		return -ENOENT;
	id = file_name(sym, f, orig - v->start + v->pgoff, &kind);
	snprintf(name, sizeof(name), "%s [copy]", id ? str(sym, id) : "?");
	fr->name = str_id(sym, name);
	return 0;
}

int64_t symbolizer__kernel(struct symbolizer *sym, uint64_t addr, int leaf)
{
	const char *name = NULL, *module = NULL;
	char buf[64], kname[KSYMS_MAX_LINE];
	uint64_t off;
	int added;
	int64_t id;

	if (!leaf)
		addr--;
	id = idmap__id(sym->kkeys, addr, &added);
	if (id < 0 || !added)
		return id < 0 ? id : (int64_t)(id | SYM_KERNEL_FRAME);
	if (id >= SYM_KERNEL_FRAME || VEC_RESERVE(sym->kframes, sym->kcap, (size_t)id + 1))
		return -ENOMEM;
	if (sym->ksyms)
		name = ksyms__lookup(sym->ksyms, addr, &off, &module, kname, sizeof(kname));
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

static int64_t user_frame(struct symbolizer *sym, struct proc *p, struct proc_syms *ps,
			  uint64_t addr, int leaf, uint64_t time_ns);

int64_t symbolizer__user(struct symbolizer *sym, struct proc *p, uint64_t addr, int leaf,
			 uint64_t time_ns)
{
	struct proc_syms *ps = proc_syms(sym, p);
	struct fcache *c;
	int64_t id;

	if (!ps)
		return -ENOMEM;
	if (!leaf)
		addr--;
	if (!ps->fcache && !(ps->fcache = calloc(FCACHE_SLOTS, sizeof(*ps->fcache))))
		return -ENOMEM;
	c = &ps->fcache[(addr * 0x9e3779b97f4a7c15ull) >> (64 - FCACHE_BITS)];
	if (c->addr == addr + 1)
		return c->id;
	id = user_frame(sym, p, ps, addr, leaf, time_ns);
	if (id >= 0)
		*c = (struct fcache){ addr + 1, id };
	return id;
}

int symbolizer__ends_chain(const struct proc *p, int64_t id)
{
	const struct proc_syms *ps = p->syms;

	return ps && id >= 0 && id < SYM_KERNEL_FRAME && (size_t)id < ps->cap &&
	       ps->frames[id].off_code;
}

/* Whether v is anonymous memory that is not executable. */
static int is_data(const struct vma *v)
{
	return v->kind == VMA_ANON && !v->exec;
}

/* Whether maps that show addr in v (NULL: in no mapping) may not tell what ran there at time_ns:
 * they were read before it, and show no code there. */
static int stale_at(const struct proc *p, const struct vma *v, uint64_t time_ns)
{
	return (!v || is_data(v)) && p->maps_read_ns <= time_ns;
}

/* The frame id of lookup address addr in p (named now, or pending for the runtime). */
static int name_user_frame(struct symbolizer *sym, struct proc *p, struct proc_syms *ps,
			   struct frame *fr, const struct vma *v, int leaf);

static int64_t user_frame(struct symbolizer *sym, struct proc *p, struct proc_syms *ps,
			  uint64_t addr, int leaf, uint64_t time_ns)
{
	const struct vma *v;
	struct frame *fr;
	int added;
	int64_t id;

	/* A process that forges stacks gets one frame for all it shows past the cap. */
	if (sym->opts.max_frames && idmap__count(ps->keys) >= sym->opts.max_frames &&
	    idmap__find(ps->keys, addr) < 0) {
		sym->stats.truncated++;
		addr = TRUNCATED_ADDR;
	}
	id = idmap__id(ps->keys, addr, &added);
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

	/* A mapping we have not seen yet: the process mapped something since we last looked; or
	 * data where code should be, in maps older than the sample (the runtime maps its images
	 * over memory it reserved without access). */
	v = proc__vma(p, addr);
	if ((!v || stale_at(p, v, time_ns)) && !proc__refresh_maps(p, sym->opts.maps_refresh_ns))
		v = proc__vma(p, addr);
	if (stale_at(p, v, time_ns) && !p->gone) {
		fr->unmapped = 1;	/* the maps are older than the sample: again in finish */
		ps->nunmapped++;
	}
	return name_user_frame(sym, p, ps, fr, v, leaf) ? -ENOMEM : id;
}

/* Name fr (its address and first sample time set) from v, the mapping its address is in (NULL:
 * none): 0, or -ENOMEM. */
static int name_user_frame(struct symbolizer *sym, struct proc *p, struct proc_syms *ps,
			   struct frame *fr, const struct vma *v, int leaf)
{
	struct symfile *f = NULL;
	uint64_t addr = fr->addr, time_ns = fr->time_ns;
	uint32_t file = 0;
	/*
	 * A return address in anonymous memory that was not executable after the sample (heap,
	 * stack, arena): the frame-pointer walk followed an rbp that a frameless caller (glibc's,
	 * say) used for data, and what it found past here are no callers (seen: one heap word, 126
	 * times over). Only what the maps said after the sample counts: the runtime maps code over
	 * memory it reserved, and a W^X double mapping (memfd) is data in one view, code in another.
	 */
	if (v && !leaf && is_data(v) && p->maps_read_ns > time_ns) {
		sym->stats.off_code++;
		fr->off_code = 1;
		fr->name = str_id(sym, "[callers lost: frame chain left code]");
		return fr->name ? 0 : -ENOMEM;
	}
	if (v && v->kind == VMA_FILE)
		f = symfile(sym, ps, p, v, &file, time_ns);
	if (f) {
		fr->base = f->base;
		fr->file = file;
		fr->file_off = addr - v->start + v->pgoff;
	}
	if (f && table(sym, f, p, v, time_ns)) {
		fr->map = smap_of(sym, ps, v, f, 0);
		return native_name(sym, f, fr) ? 0 : -ENOMEM;
	}
	if (f && f->is_elf) {	/* its table is not held (symbol budget): module+offset */
		sym->stats.native_unnamed++;
		sym->stats.elf_not_held++;
		fr->kind = NK_OFFSET;
		fr->map = smap_of(sym, ps, v, f, 0);
		fr->name = module_offset(sym, f->base, fr->file_off);
		return fr->name ? 0 : -ENOMEM;
	}
	/* Runtime code (JIT, ReadyToRun): named at the end of the window, after the last poll. */
	if (runtime__claims(p, addr, f != NULL)) {
		fr->pending = 1;
		ps->npending++;
		if (v)
			fr->map = smap_of(sym, ps, v, f, f == NULL);
		return 0;
	}
	if (f) {
		sym->stats.native_unnamed++;
		fr->kind = NK_OFFSET;
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
	return fr->name ? 0 : -ENOMEM;
}

/* ---- leaves without their frame ------------------------------------------------------------ */

static int is_code(void *arg, uint64_t addr)
{
	struct proc *p = arg;
	const struct vma *v = proc__vma(p, addr);

	return v && v->exec;
}

/* Native code: the CFI of the file, opened once per file and shared by every process. */
static struct leaf_where native_where(struct symbolizer *sym, struct symfile *f, struct proc *p,
				      const struct vma *v, uint64_t ip)
{
	struct leaf_where w = { LEAF_NO_CFI, 0 };
	uint64_t vaddr;
	int fd;

	if (elfsym__file_to_vaddr(f->es, ip - v->start + v->pgoff, &vaddr))
		return w;
	if (!f->cfi_tried) {
		f->cfi_tried = 1;
		fd = open_file(p, v);
		f->cfi = fd >= 0 ? leafcfi__open_fd(fd) : NULL;
		/* The sections read count in the symbol budget, as the table does. */
		if (f->cfi && !symbudget__take(SB_ELF, leafcfi__bytes(f->cfi))) {
			leafcfi__free(f->cfi);
			f->cfi = NULL;
			sym->stats.elf_over_budget++;
		} else if (f->cfi) {
			f->cfi_charged = leafcfi__bytes(f->cfi);
		}
	}
	return f->cfi ? leafcfi__where(f->cfi, vaddr) : w;
}

/* The vDSO: its image copied from the process once, its CFI once per distinct image. */
static struct leaf_where vdso_where(struct symbolizer *sym, struct proc *p, struct proc_syms *ps,
				    const struct vma *v, uint64_t ip)
{
	struct leaf_where w = { LEAF_NO_CFI, 0 };
	uint64_t len = v->end - v->start, vaddr;
	struct leafcfi *cfi;
	uint8_t *img, *copy;

	if (!ps->vdso) {
		ps->vdso = -1;
		if (len > LEAF_VDSO_SIZE || !(img = malloc(len)))
			return w;
		if (procfs__read_mem(p->dir_fd, v->start, img, len) == 0) {
			for (size_t i = 0; i < sym->nvdsos && ps->vdso < 0; i++)
				if (sym->vdsos[i].len == len && !memcmp(sym->vdsos[i].image, img, len))
					ps->vdso = i + 1;
			if (ps->vdso < 0 && sym->nvdsos < LEAF_VDSO_MAX && (copy = malloc(len))) {
				memcpy(copy, img, len);
				if ((cfi = leafcfi__open_image(copy, len))) {
					sym->vdsos[sym->nvdsos] = (struct vdso){ img, len, cfi };
					ps->vdso = ++sym->nvdsos;
					img = NULL;
				}
			}
		}
		free(img);
	}
	if (ps->vdso < 0 || leafcfi__vaddr(sym->vdsos[ps->vdso - 1].cfi, ip - v->start, &vaddr))
		return w;
	return leafcfi__where(sym->vdsos[ps->vdso - 1].cfi, vaddr);
}

/* Runtime code: the method's range from its runtime, its first bytes read once per method. */
static struct leaf_where jit_where(struct proc *p, struct proc_syms *ps,
				   const struct vma *v, uint64_t ip, uint64_t time_ns)
{
	struct leaf_where w = { LEAF_JIT_NO_RANGE, 0 };
	struct rt_symbol rs = { 0 };
	struct { uint64_t start, size; } key;
	struct leafmethod *m;
	uint8_t at[LEAF_AT_IP];
	const uint8_t *atp;
	uint64_t len, ip_off, at_len;
	int added;
	int64_t id;

	if (runtime__symbolize(p, ip, time_ns, &rs)) {
		/* Code the runtime has not told of yet (its files are read on a backoff while they
		 * do not grow): read them at the next poll, for the samples after this one. */
		runtime__wake(p);
		return w;
	}
	if (!rs.size || ip < rs.start || ip - rs.start >= rs.size || rs.start < v->start)
		return w;
	if (!ps->leaf_keys && !(ps->leaf_keys = intern__new())) {
		w.outcome = LEAF_CACHE_FULL;
		return w;
	}
	key.start = rs.start;
	key.size = rs.size;
	if (intern__count(ps->leaf_keys) >= LEAF_METHODS_MAX &&
	    intern__find(ps->leaf_keys, &key, sizeof(key)) < 0) {
		w.outcome = LEAF_CACHE_FULL;
		return w;
	}
	/* Room first: every interned method has its entry. */
	if (VEC_RESERVE(ps->methods, ps->methods_cap, intern__count(ps->leaf_keys) + 1) ||
	    (id = intern__id(ps->leaf_keys, &key, sizeof(key), &added)) < 0) {
		w.outcome = LEAF_CACHE_FULL;
		return w;
	}
	m = &ps->methods[id];
	if (added) {
		/* Never past the method, nor past the mapping that holds its start. */
		len = rs.size < LEAF_CODE_MAX ? rs.size : LEAF_CODE_MAX;
		if (len > v->end - rs.start)
			len = v->end - rs.start;
		m->len = 0;
		m->code = malloc(len);
		if (m->code && procfs__read_mem(p->dir_fd, rs.start, m->code, len) == 0) {
			m->len = len;
		} else {
			free(m->code);
			m->code = NULL;
		}
	}
	if (!m->code) {
		w.outcome = LEAF_JIT_UNREADABLE;
		return w;
	}
	ip_off = ip - rs.start;
	at_len = rs.size - ip_off < LEAF_AT_IP ? rs.size - ip_off : LEAF_AT_IP;
	if (ip_off + at_len <= m->len) {
		atp = m->code + ip_off;
	} else {
		if (at_len > v->end - ip)
			at_len = v->end - ip;
		if (procfs__read_mem(p->dir_fd, ip, at, at_len)) {
			w.outcome = LEAF_JIT_UNREADABLE;
			return w;
		}
		atp = at;
	}
	return leaf__x64_where(m->code, m->len, ip_off, atp, at_len);
}

/* jit_where, answered from the process's leaf cache when this ip was analysed before. What
 * may change (no range yet, an unreadable method) is asked again. */
static struct leaf_where jit_where_cached(struct proc *p, struct proc_syms *ps,
					  const struct vma *v, uint64_t ip, uint64_t time_ns)
{
	struct leaf_where w;
	struct lcache *c;

	if (!ps->lcache)
		ps->lcache = calloc(LCACHE_SLOTS, sizeof(*ps->lcache));
	if (!ps->lcache)
		return jit_where(p, ps, v, ip, time_ns);
	c = &ps->lcache[(ip * 0x9e3779b97f4a7c15ull) >> (64 - LCACHE_BITS)];
	if (c->ip == ip + 1)
		return c->w;
	w = jit_where(p, ps, v, ip, time_ns);
	if (w.outcome != LEAF_JIT_NO_RANGE && w.outcome != LEAF_JIT_UNREADABLE &&
	    w.outcome != LEAF_CACHE_FULL)
		*c = (struct lcache){ ip + 1, w };
	return w;
}

int symbolizer__leaf(struct symbolizer *sym, struct proc *p, const struct leaf_regs *r,
		     uint64_t *frames, size_t *n, size_t cap, uint64_t time_ns)
{
	struct proc_syms *ps = proc_syms(sym, p);
	struct leaf_where w = { LEAF_NO_REGS, 0 };
	const struct vma *v;
	struct symfile *f;
	enum leaf_outcome o;
	uint32_t file;

	if (!ps)
		return -ENOMEM;
	if (!r || !r->words || !*n) {
		o = LEAF_NO_REGS;
		goto out;
	}
	if (r->ip != frames[0]) {
		o = LEAF_IP_MISMATCH;
		goto out;
	}
	v = proc__vma(p, r->ip);
	if ((!v || !v->exec) && !proc__refresh_maps(p, sym->opts.maps_refresh_ns))
		v = proc__vma(p, r->ip);	/* mapped since (an image over a reserve) */
	if (!v || !v->exec) {
		o = LEAF_NO_CODE;
		goto out;
	}
	if (v->kind == VMA_FILE && (f = symfile(sym, ps, p, v, &file, time_ns)) &&
	    table(sym, f, p, v, time_ns))
		w = native_where(sym, f, p, v, r->ip);
	else if (v->kind == VMA_VDSO && !strcmp(v->path, "[vdso]"))
		w = vdso_where(sym, p, ps, v, r->ip);
	else if (v->kind == VMA_VDSO)
		w.outcome = LEAF_NO_CFI;	/* [vsyscall] */
	else	/* JIT code, or a ReadyToRun image (a file that is not ELF) */
		w = jit_where_cached(p, ps, v, r->ip, time_ns);
	o = leaf__insert(w, r->words, r->n_words, frames, n, cap, is_code, p);
out:
	sym->stats.leaf[o]++;
	return o;
}

static int finish_frame(struct symbolizer *sym, struct proc *p, struct proc_syms *ps,
			struct frame *fr)
{
	struct rt_symbol rs = { 0 };
	char name[4096];
	int first = fr->name == 0;
	uint64_t orig;

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
	/* Runtime code copied out of its library (written down only when perf maps were on from
	 * the start): named as the code it copies, once. */
	if (!fr->base && runtime__copy_of(p, fr->addr, &orig) == 0 &&
	    copy_name(sym, p, ps, fr, orig) == 0) {
		sym->stats.jit_copied++;
		fr->pending = 0;
		ps->npending--;
		return fr->name ? 0 : -ENOMEM;
	}
	/* Managed code without a name is .NET unnamed, whatever it looks like (a ReadyToRun .dll's
	 * code shows as module+offset): the report says why, not "native". */
	if (fr->base && rs.unnamed == RT_UNNAMED_NOT_OURS) {
		sym->stats.native_unnamed++;
		fr->kind = NK_OFFSET;
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

/* Debug files that arrived from the symbol servers: attached to their files. Looked at when the
 * symbol servers have news, and every SCAN_NS for files whose fetch failed (symsrv asks again
 * once its retry time has passed). */
#define SCAN_NS (60 * 1000000000ull)
static void take_debug_files(struct symbolizer *sym)
{
	struct symsrv *ss = sym->opts.symsrv;
	uint64_t gen, now;

	if (!ss)
		return;
	gen = symsrv__generation(ss);
	now = now_ns();
	if (gen == sym->symsrv_gen && now < sym->next_scan_ns)
		return;
	sym->symsrv_gen = gen;
	sym->next_scan_ns = now + SCAN_NS;
	sym->nawaiting = 0;
	for (uint32_t i = 0; i < intern__count(sym->file_keys); i++) {
		struct symfile *f = sym->files[i];
		const char *bid;
		struct elfsym *dbg;

		if (!f || !f->es || f->no_debug || !elfsym__needs_debug(f->es))
			continue;
		bid = elfsym__build_id(f->es);
		f->awaiting = 0;
		switch (symsrv__want(ss, bid, str(sym, f->base))) {
		case SYMSRV_READY:
			dbg = symsrv__take(ss, bid);
			if (dbg && elfsym__attach_debug(f->es, dbg) == 0) {
				uint64_t b = elfsym__bytes(f->es);

				/* Charged past the budget if need be: fetched for this, never evicted. */
				if (b > f->charged)
					symbudget__force(SB_ELF, b - f->charged);
				f->charged = b > f->charged ? b : f->charged;
				f->attached_gen = ++sym->attach_gen;
				sym->stats.debug_attached++;
			} else {
				f->no_debug = 1;
			}
			break;
		case SYMSRV_PENDING:
			f->awaiting = 1;
			sym->nawaiting++;
			break;
		default:
			break;
		}
	}
}

/* Frames of files whose debug file came since p's frames were last named: named again. */
static int rename_frames(struct symbolizer *sym, struct proc *p)
{
	struct proc_syms *ps = p->syms;

	if (!ps || ps->renamed_gen == sym->attach_gen)
		return 0;
	for (size_t i = 0; i < idmap__count(ps->keys); i++) {
		struct frame *fr = &ps->frames[i];
		struct symfile *f = fr->file ? sym->files[fr->file - 1] : NULL;

		if (f && f->attached_gen > ps->renamed_gen && fr->kind != NK_NONE && f->es &&
		    !native_name(sym, f, fr))
			return -ENOMEM;
	}
	ps->renamed_gen = sym->attach_gen;
	return 0;
}

/* Frames in no mapping, or in data, of maps read before their sample, left [unknown] (or to the
 * runtime) because the maps could not be read again so soon: named now from the maps as they are
 * (read again if they may be yet; else the next window tries). */
static int retry_unmapped(struct symbolizer *sym, struct proc *p, struct proc_syms *ps)
{
	if (!ps || !ps->nunmapped || proc__refresh_maps(p, 0))
		return 0;
	for (size_t i = 0; ps->nunmapped && i < idmap__count(ps->keys); i++) {
		struct frame *fr = &ps->frames[i];
		const struct vma *v;

		if (!fr->unmapped)
			continue;
		fr->unmapped = 0;
		ps->nunmapped--;
		if (!(v = proc__vma(p, fr->addr)) || is_data(v))
			continue;	/* no code there still */
		if (fr->pending) {
			/* claimed by the runtime as its own anonymous code: the runtime's to name,
			 * unless a file is mapped there now (an image over the runtime's reserve) */
			if (v->kind != VMA_FILE)
				continue;
			fr->pending = 0;
			ps->npending--;
		} else {
			sym->stats.unknown--;
		}
		sym->stats.unmapped_named++;
		fr->map = 0;
		if (name_user_frame(sym, p, ps, fr, v, 1))
			return -ENOMEM;
	}
	return 0;
}

/* Name the frames left to the runtime, a group at a time: told the group's addresses first, the
 * runtime fetches what their lookups read all at once (a million methods' index does not stay
 * cached, least of all between windows), so their waits on memory overlap. */
static int finish_pending(struct symbolizer *sym, struct proc *p, struct proc_syms *ps)
{
	uint64_t addrs[RUNTIME_PREFETCH_MAX];
	size_t group[RUNTIME_PREFETCH_MAX], f = 0, n = idmap__count(ps->keys);

	while (ps->npending && f < n) {
		size_t m = 0;

		for (; f < n && m < RUNTIME_PREFETCH_MAX; f++)
			if (ps->frames[f].pending) {
				group[m] = f;
				addrs[m++] = ps->frames[f].addr;
			}
		runtime__prefetch(p, addrs, m);
		for (size_t k = 0; k < m; k++)
			if (finish_frame(sym, p, ps, &ps->frames[group[k]]))
				return -ENOMEM;
	}
	return 0;
}

int symbolizer__finish_proc(struct symbolizer *sym, struct proc *p)
{
	struct proc_syms *ps = p->syms;

	take_debug_files(sym);
	if (rename_frames(sym, p) || retry_unmapped(sym, p, ps))
		return -ENOMEM;
	return ps ? finish_pending(sym, p, ps) : 0;
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

int symbolizer__awaiting(const struct symbolizer *sym)
{
	return sym->nawaiting;
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
		if (id >= idmap__count(sym->kkeys))
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
	if (!ps || id >= idmap__count(ps->keys))
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
	sym->stats.forgotten += idmap__count(ps->keys);
	idmap__free(ps->keys);
	intern__free(ps->maps);
	intern__free(ps->vmas);
	free(ps->vma_file);
	for (size_t i = 0; ps->leaf_keys && i < intern__count(ps->leaf_keys); i++)
		free(ps->methods[i].code);
	intern__free(ps->leaf_keys);
	free(ps->methods);
	free(ps->frames);
	free(ps->fcache);
	free(ps->lcache);
	free(ps);
	p->syms = NULL;
}

const char *symbolizer__string(const struct symbolizer *sym, uint32_t id)
{
	return str(sym, id);
}

void symbolizer__stats(const struct symbolizer *sym, struct symbolizer_stats *out)
{
	struct ksyms_stats ks;

	*out = sym->stats;
	out->bytes = idmap__bytes(sym->kkeys) + sym->kcap * sizeof(*sym->kframes) +
		     intern__bytes(sym->file_keys) + intern__bytes(sym->inode_keys) +
		     sym->inode_cap * sizeof(*sym->inode_file) +
		     sym->files_cap * sizeof(*sym->files) + intern__bytes(sym->strings);
	for (uint32_t i = 0; i < intern__count(sym->file_keys); i++)
		out->bytes += sym->files[i] ? sizeof(*sym->files[i]) : 0;
	ksyms__stats(sym->ksyms, &ks);
	out->kernel_symbols_bytes = ks.bytes;
}

uint64_t symbolizer__proc_bytes(const struct proc *p)
{
	const struct proc_syms *ps = p->syms;
	uint64_t bytes;

	if (!ps)
		return 0;
	bytes = sizeof(*ps) + idmap__bytes(ps->keys) + ps->cap * sizeof(*ps->frames) +
		intern__bytes(ps->maps) + intern__bytes(ps->vmas) +
		ps->vma_cap * sizeof(*ps->vma_file) + ps->methods_cap * sizeof(*ps->methods) +
		(ps->fcache ? FCACHE_SLOTS * sizeof(*ps->fcache) : 0) +
		(ps->lcache ? LCACHE_SLOTS * sizeof(*ps->lcache) : 0);
	if (ps->leaf_keys) {
		bytes += intern__bytes(ps->leaf_keys);
		for (uint32_t i = 0; i < intern__count(ps->leaf_keys); i++)
			bytes += ps->methods[i].len;
	}
	return bytes;
}
