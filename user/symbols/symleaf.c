/* symleaf.c: the symbolizer's leaves sampled before their frame was made: where the caller is
 * (native code from its file's CFI, the vDSO's, JIT code's prologue) for leafunwind.c. */
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
#include "leafunwind.h"
#include "procfs.h"
#include "proctab.h"
#include "runtime.h"
#include "symbolize_int.h"
#include "symbudget.h"
#include "util.h"
#include "vec.h"

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
		fd = sym_open_file(sym, p, v);
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
	struct proc_syms *ps = sym_proc_syms(sym, p);
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
	if (v->kind == VMA_FILE && (f = sym_symfile(sym, ps, p, v, &file, time_ns)) &&
	    sym_table(sym, f, p, v, time_ns))
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
