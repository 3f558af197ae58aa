/* symfiles.c: the symbolizer's ELF files: opened through map_files or the process's root, one
 * table per file content (shared by every process that maps it), charged to the symbol budget,
 * evicted least recently used and released when idle, read again on demand. */
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
#include "leafunwind.h"
#include "procfs.h"
#include "proctab.h"
#include "rootfs.h"
#include "symbolize_int.h"
#include "symbudget.h"
#include "symsrv.h"
#include "util.h"
#include "vec.h"

static struct file_key file_key_of(const struct stat *st)
{
	return (struct file_key){ st->st_dev, st->st_ino, st->st_size, st->st_mtim.tv_sec,
				  st->st_mtim.tv_nsec, st->st_ctim.tv_sec, st->st_ctim.tv_nsec };
}

/* Open the file behind a mapping. /proc/<pid>/map_files/<range> names exactly the inode that is
 * mapped (no path for a container to redirect); the path inside the root is the fallback, and
 * the only way once the process exec'd (map_files then shows the new program's files).
 * Returns an fd, or -errno. */
int sym_open_file(struct symbolizer *sym, const struct proc *p, const struct vma *v)
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
		if (fd >= 0) {
			sym->stats.opened_by_handle++;
			return fd;
		}
	}
	if (p->root_fd < 0)
		return -ESRCH;
	fd = rootfs__open(p->root_fd, v->path, O_RDONLY, S_IFREG, ELFSYM_MAX_FILE, 0);
	if (fd >= 0)
		sym->stats.opened_by_path++;
	return fd;
}

static void note_refusal(struct symbolizer *sym, const struct proc *p, const struct vma *v,
			 const char *refused)
{
	char what[512];

	sym->stats.debug_refused++;
	if (sym->stats.n_refused_named >= SYM_REFUSED_NAMED)
		return;
	snprintf(what, sizeof(what), "%s (pid %u): %s", v->path, p->pid, refused);
	sym->stats.refused_named[sym->stats.n_refused_named] = sym_str_id(sym, what);
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
	f->build_id = sym_str_id(sym, elfsym__build_id(es));
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
struct elfsym *sym_table(struct symbolizer *sym, struct symfile *f, const struct proc *p,
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
	fd = sym_open_file(sym, p, v);
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
	fd = sym_open_file(sym, p, v);
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
	f->base = sym_str_id(sym, slash ? slash + 1 : v->path);
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
	    symsrv__want(sym->opts.symsrv, elfsym__build_id(f->es), sym_str(sym, f->base)) ==
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
struct symfile *sym_symfile(struct symbolizer *sym, struct proc_syms *ps, const struct proc *p,
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
