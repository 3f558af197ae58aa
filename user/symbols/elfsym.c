/* elfsym.c: function symbols of one ELF file through libelf, with build id, debug files and safe opens.
 * Reading the file: elffile.c; .eh_frame ranges: elfehframe.c; debug files: elfdebug.c; shared:
 * elfsym_int.h. */
#include "elfsym.h"
#include "elfsym_int.h"
#include "rootfs.h"
#include "util.h"
#include "vec.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

/* ---- the table ------------------------------------------------------------------------------ */

/* Address order; at one address the preferred alias first: global, then typed, then without a
 * version suffix, then .symtab, then the shorter name, then load order. */
static int rawsym_cmp(const void *a, const void *b)
{
	const struct rawsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->bind_rank != y->bind_rank)
		return x->bind_rank < y->bind_rank ? -1 : 1;
	if (x->type_rank != y->type_rank)
		return x->type_rank < y->type_rank ? -1 : 1;
	if (x->versioned != y->versioned)
		return x->versioned < y->versioned ? -1 : 1;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	if (x->name_len != y->name_len)
		return x->name_len < y->name_len ? -1 : 1;
	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return 0;
}

/*
 * Once built, the table holds what lookups need: arrays of the symbols kept (aliases are
 * dropped: libc's .symtab and .dynsym give 9,640 for 3,706), and of the string tables (data,
 * undefined and alias names too: libc's 165 KB) the names kept. Each step is skipped when out
 * of memory: the table is then larger, not wrong.
 */
static void shrink_table(struct elfsym *es)
{
	size_t bytes = 0, i, k;
	struct sym *syms;
	uint64_t *addrs;
	char *names, *w;

	if (!es->n)
		return;
	if ((syms = realloc(es->syms, es->n * sizeof(*es->syms))))
		es->syms = syms;
	if ((addrs = realloc(es->addrs, es->n * sizeof(*es->addrs))))
		es->addrs = addrs;
	for (i = 0; i < es->n; i++)
		bytes += strlen(es->syms[i].name) + 1;
	if (bytes >= es->strtab_bytes || !(names = malloc(bytes)))
		return;
	for (i = 0, w = names; i < es->n; i++) {
		size_t len = strlen(es->syms[i].name) + 1;

		memcpy(w, es->syms[i].name, len);
		es->syms[i].name = w;
		w += len;
	}
	for (k = 0; k < sizeof(es->strtabs) / sizeof(es->strtabs[0]); k++) {
		free(es->strtabs[k]);
		es->strtabs[k] = NULL;
	}
	es->strtabs[0] = names;
	es->strtab_bytes = bytes;
}

static int build_table(struct elfsym *es, struct rawvec *rv)
{
	size_t i, j, n = 0;
	uint64_t maxend = 0;

	if (rv->n == 0)
		return 0;
	qsort(rv->v, rv->n, sizeof(*rv->v), rawsym_cmp);
	es->syms = calloc(rv->n, sizeof(*es->syms));
	es->addrs = calloc(rv->n, sizeof(*es->addrs));
	if (!es->syms || !es->addrs)
		return -ENOMEM;

	for (i = 0; i < rv->n; i = j) {
		const struct rawsym *best = &rv->v[i];
		uint64_t size = best->size;

		/* One run of aliases: keep the first (preferred) name, the largest size. */
		for (j = i + 1; j < rv->n && rv->v[j].addr == best->addr; j++) {
			if (rv->v[j].size > size)
				size = rv->v[j].size;
			es->stats.aliases++;
		}
		es->addrs[n] = best->addr;
		es->syms[n].name = best->name;
		if (size) {
			es->syms[n].end = best->addr + size < best->addr ? UINT64_MAX : best->addr + size;
		} else {
			/* Unsized (assembly) symbol: runs to the next symbol, never past its section,
			 * nor into the next function .eh_frame knows (a stripped file's hidden ones). */
			uint64_t end = j < rv->n ? rv->v[j].addr : UINT64_MAX;

			if (best->bound < end)
				end = best->bound;
			if (elf_fde_bound(es, best->addr) < end)
				end = elf_fde_bound(es, best->addr);
			es->syms[n].end = end == UINT64_MAX ? best->addr + 1 : end;
		}
		n++;
	}
	for (i = 0; i < n; i++) {
		if (es->syms[i].end > maxend)
			maxend = es->syms[i].end;
		es->syms[i].maxend = maxend;
	}
	es->n = n;
	shrink_table(es);
	return 0;
}

/*
 * Both constructors: the symbols of the ELF file at fd (taken). A binary (want_id NULL): its
 * segments, FDEs, .symtab or a debug file's, and .dynsym. A debug file found elsewhere (want_id
 * its binary's build id): its build id must be want_id and its .symtab is all that is read.
 */
static struct elfsym *load(int fd, const char *path_hint, int root_fd, const char *want_id)
{
	struct elffile f = { .fd = -1 }, dbg = { .fd = -1 };
	struct rawvec rv = { 0 };
	struct elfsym *es;
	int err;

	if (fd < 0) {
		errno = EBADF;
		return NULL;
	}
	es = calloc(1, sizeof(*es));
	if (!es) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	err = elffile_open(&f, fd, want_id ? NULL : es);
	if (err)
		goto close_files;
	if (f.build_id_len)
		elf_hex_encode(es->build_id, f.build_id, f.build_id_len);
	es->ei_class = f.ehdr.e_ident[EI_CLASS];
	es->machine = f.ehdr.e_machine;
	if (want_id) {
		err = strcmp(es->build_id, want_id) ? -EBADMSG : !f.symtab ? -ENOEXEC : 0;
		if (!err && path_hint && !(es->debug_path = strdup(path_hint)))
			err = -ENOMEM;
		if (err)
			goto close_files;
	} else {
		elf_load_fdes(es, &f);
	}

	if (f.symtab) {
		err = elf_load_table(es, &f, f.symtab, SRC_SYMTAB, 0, &rv);
		if (err)
			goto close_files;
	} else if (elf_find_debug(es, &f, root_fd, path_hint, &dbg)) {
		/* Only the debug file's symbols are used: its segments describe NOBITS sections, so
		 * offsets still go through the main file's PT_LOAD. */
		err = elf_load_table(es, &dbg, dbg.symtab, SRC_SYMTAB, 2, &rv);
		if (err)
			goto close_files;
	}
	if (f.dynsym && !want_id) {
		err = elf_load_table(es, &f, f.dynsym, SRC_DYNSYM, 1, &rv);
		if (err)
			goto close_files;
	}
	err = build_table(es, &rv);
	if (err)
		goto close_files;
	es->stats.segments = es->n_segs;
	elf_errno();	/* nothing of a skipped table should linger in libelf's per-thread error */

close_files:
	elffile_close(&dbg);
	elffile_close(&f);
	free(rv.v);
	if (err) {
		elfsym__free(es);
		errno = -err;
		return NULL;
	}
	return es;
}

struct elfsym *elfsym__open_fd(int fd, const char *path_hint, int root_fd)
{
	return load(fd, path_hint, root_fd, NULL);
}

struct elfsym *elfsym__open_debug(int fd, const char *build_id, const char *path)
{
	if (!build_id) {
		if (fd >= 0)
			close(fd);
		errno = EBADMSG;
		return NULL;
	}
	return load(fd, path, AT_FDCWD, build_id);
}

int elfsym__attach_debug(struct elfsym *es, struct elfsym *dbg)
{
	if (!es || !dbg || es->dbg || !es->build_id[0] || strcmp(es->build_id, dbg->build_id) != 0 ||
	    es->ei_class != dbg->ei_class || es->machine != dbg->machine) {
		elfsym__free(dbg);
		return -EINVAL;
	}
	es->dbg = dbg;
	es->stats.symtab += dbg->stats.symtab;
	return 0;
}

int elfsym__needs_debug(const struct elfsym *es)
{
	return es && es->build_id[0] && es->stats.symtab == 0 && !es->dbg;
}

const char *elfsym__debug_refused(const struct elfsym *es)
{
	return es && es->refused[0] ? es->refused : NULL;
}

int elfsym__function_start(const struct elfsym *es, uint64_t vaddr, uint64_t *start)
{
	ssize_t i = es ? elf_fde_find(es, vaddr) : -1;

	if (i < 0)
		return -ENOENT;
	*start = elf_fde_start(es, (size_t)i);
	return 0;
}

int elfsym__read_build_id(int fd, char *hex, size_t len)
{
	struct elffile f = { .fd = -1 };
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0), err;

	if (len)
		hex[0] = 0;
	if (dfd < 0)
		return -errno;
	err = elffile_open(&f, dfd, NULL);
	if (!err && !f.build_id_len)
		err = -ENOENT;
	if (!err && 2 * f.build_id_len + 1 > len)
		err = -ENAMETOOLONG;
	if (!err)
		elf_hex_encode(hex, f.build_id, f.build_id_len);
	elffile_close(&f);
	elf_errno();
	return err;
}

struct elfsym *elfsym__open(int root_fd, const char *path)
{
	int fd = rootfs__open(root_fd, path, O_RDONLY, S_IFREG, ELFSYM_MAX_FILE, 0);

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	return elfsym__open_fd(fd, path, root_fd);
}

void elfsym__free(struct elfsym *es)
{
	size_t i;

	if (!es)
		return;
	for (i = 0; i < es->n; i++) {
		if (es->syms[i].flags & SYM_NAME_OWNED)
			free((char *)es->syms[i].name);
	}
	free(es->syms);
	free(es->addrs);
	for (i = 0; i < sizeof(es->strtabs) / sizeof(es->strtabs[0]); i++)
		free(es->strtabs[i]);
	free(es->debug_path);
	free(es->fdes);
	elfsym__free(es->dbg);
	free(es);
}

const char *elfsym__build_id(const struct elfsym *es)
{
	return es && es->build_id[0] ? es->build_id : NULL;
}

const char *elfsym__debug_file(const struct elfsym *es)
{
	if (es && !es->debug_path && es->dbg)
		return es->dbg->debug_path;
	return es ? es->debug_path : NULL;
}

uint64_t elfsym__count(const struct elfsym *es)
{
	return es ? es->n : 0;
}

uint64_t elfsym__bytes(const struct elfsym *es)
{
	if (!es)
		return 0;
	return sizeof(*es) + es->n * (sizeof(*es->syms) + sizeof(*es->addrs)) + es->strtab_bytes +
	       es->demangled_bytes + es->n_fdes * sizeof(*es->fdes) +
	       (es->debug_path ? strlen(es->debug_path) + 1 : 0) + elfsym__bytes(es->dbg);
}

void elfsym__stats(const struct elfsym *es, struct elfsym_stats *out)
{
	if (es)
		*out = es->stats;
	else
		memset(out, 0, sizeof(*out));
}

int elfsym__file_to_vaddr(const struct elfsym *es, uint64_t file_off, uint64_t *vaddr)
{
	int pass;
	size_t i;

	/* A page of a mapping can hold the end of one segment and the start of the next; samples
	 * land in code, so executable segments answer first. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < es->n_segs; i++) {
			const struct seg *s = &es->segs[i];

			if (s->exec != (pass == 0))
				continue;
			if (file_off >= s->off && file_off - s->off < s->filesz) {
				*vaddr = file_off - s->off + s->vaddr;
				return 0;
			}
		}
	}
	return -ENOENT;
}

static const char *sym_name(struct elfsym *es, struct sym *s)
{
	char *dm;
	int status = -1;

	if (s->flags & SYM_DEMANGLE_TRIED)
		return s->name;
	s->flags |= SYM_DEMANGLE_TRIED;
	if (s->name[0] != '_' || s->name[1] != 'Z' || strnlen(s->name, MAX_DEMANGLE + 1) > MAX_DEMANGLE)
		return s->name;
	dm = __cxa_demangle(s->name, NULL, NULL, &status);
	if (status == 0 && dm) {
		es->demangled_bytes += strlen(dm) + 1;
		s->name = dm;
		s->flags |= SYM_NAME_OWNED;
	} else {
		free(dm);
	}
	return s->name;
}

void elfsym__each(const struct elfsym *es, void (*fn)(const char *name, void *arg), void *arg)
{
	if (es && es->dbg)
		elfsym__each(es->dbg, fn, arg);
	for (size_t i = 0; es && i < es->n; i++)
		fn(es->syms[i].name, arg);
}

const char *elfsym__lookup_vaddr(struct elfsym *es, uint64_t vaddr, uint64_t *sym_off)
{
	size_t lo = 0, hi, steps;
	ssize_t i;

	if (es && es->dbg) {
		const char *name = elfsym__lookup_vaddr(es->dbg, vaddr, sym_off);

		if (name)
			return name;
	}
	if (!es || es->n == 0)
		return NULL;
	hi = es->n;
	/* First entry with addr > vaddr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (es->addrs[mid] <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Usually the nearest symbol below covers vaddr; a symbol nested in a larger one can hide
	 * the larger one, which maxend finds without scanning the whole table. */
	for (i = (ssize_t)lo - 1, steps = 0; i >= 0 && steps < BACKWALK; i--, steps++) {
		struct sym *s = &es->syms[i];

		if (vaddr < s->end) {
			if (sym_off)
				*sym_off = vaddr - es->addrs[i];
			return sym_name(es, s);
		}
		if (s->maxend <= vaddr)
			break;
	}
	return NULL;
}

const char *elfsym__lookup(struct elfsym *es, uint64_t file_off, uint64_t *sym_off)
{
	uint64_t vaddr;

	if (!es || elfsym__file_to_vaddr(es, file_off, &vaddr) != 0)
		return NULL;
	return elfsym__lookup_vaddr(es, vaddr, sym_off);
}
