/* addrindex.c: address index for JIT code ranges: log-structured sorted runs with a max-end tree. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "addrindex.h"

#define CHUNK_SHIFT	16			/* entries live in fixed chunks: no realloc copies */
#define CHUNK_SIZE	(1u << CHUNK_SHIFT)
#define FANOUT		16			/* max-end tree fan-out */
#define MAX_LEVELS	10			/* 16^9 > 2^32 slots */
#define MAX_RUNS	40			/* GROWTH 4 keeps runs below log4(2^32) + 1 */
#define GROWTH		4
#define TAIL_SCAN	64			/* a tail this small is scanned, not sorted */
#define MAX_ENTRIES	(UINT32_MAX - 1)

#define HIDDEN_FLAG	0x80000000u

struct ai_entry {
	struct perfmap_sym sym;
	uint64_t order;
	uint32_t flags;		/* enum addrindex_flags | HIDDEN_FLAG */
};

/*
 * A run: distinct ranges ("slots") sorted by start ascending, end descending; each slot lists
 * the entries with exactly that range (versions), oldest first. covered marks slots whose start
 * lies inside an earlier slot, so the common non-overlapping lookup is one binary search.
 * lmax[l][k] is the largest end among the FANOUT^l slots under node k (lmax[0] = end).
 */
struct run {
	uint32_t nslots;
	uint32_t nver;
	uint64_t *start;
	uint64_t *end;
	uint32_t *vfirst;	/* nslots + 1: versions of slot s are ver[vfirst[s] .. vfirst[s+1]) */
	uint32_t *ver;
	uint8_t *covered;	/* bitmap */
	uint32_t nlevels;
	uint32_t lcount[MAX_LEVELS];
	uint64_t *lmax[MAX_LEVELS];
};

struct addrindex {
	struct ai_entry **chunks;
	uint32_t nchunks;
	uint32_t chunks_cap;
	uint32_t chunk0_cap;	/* entries allocated in chunks[0] (<= CHUNK_SIZE) */
	uint32_t n;		/* entries appended */
	uint32_t indexed;	/* entries [0, indexed) are in runs or hidden; the rest is the tail */
	uint64_t hidden;
	uint64_t merges;
	uint32_t nruns;
	struct run runs[MAX_RUNS];	/* runs[0] is the oldest and biggest */
};

/* Sort key: copied out of the entries so sorting touches one compact array. */
struct skey {
	uint64_t start;
	uint64_t end;
	uint64_t order;
	uint32_t id;
};

struct best {
	const struct ai_entry *e;
	uint32_t id;
};

static inline struct ai_entry *entry(const struct addrindex *ix, uint32_t id)
{
	return &ix->chunks[id >> CHUNK_SHIFT][id & (CHUNK_SIZE - 1)];
}

struct addrindex *addrindex__new(void)
{
	struct addrindex *ix = calloc(1, sizeof(*ix));

	if (!ix)
		errno = ENOMEM;
	return ix;
}

static void run_free(struct run *r)
{
	free(r->start);
	free(r->end);
	free(r->vfirst);
	free(r->ver);
	free(r->covered);
	for (uint32_t l = 1; l < r->nlevels; l++)
		free(r->lmax[l]);
	memset(r, 0, sizeof(*r));
}

void addrindex__free(struct addrindex *ix)
{
	if (!ix)
		return;
	for (uint32_t i = 0; i < ix->nruns; i++)
		run_free(&ix->runs[i]);
	for (uint32_t c = 0; c < ix->nchunks; c++)
		free(ix->chunks[c]);
	free(ix->chunks);
	free(ix);
}

int64_t addrindex__add(struct addrindex *ix, const struct perfmap_sym *sym, uint64_t order,
		       unsigned flags)
{
	uint32_t id = ix->n;
	struct ai_entry *e;

	if (id >= MAX_ENTRIES)
		return -EOVERFLOW;
	if (!sym->size || sym->start + sym->size < sym->start)
		return -EINVAL;
	if (id < CHUNK_SIZE && id >= ix->chunk0_cap) {
		/* The first chunk grows by doubling so small processes stay small. */
		uint32_t cap = ix->chunk0_cap ? ix->chunk0_cap * 2 : 256;
		struct ai_entry *c;

		if (!ix->chunks) {
			ix->chunks = malloc(16 * sizeof(*ix->chunks));
			if (!ix->chunks)
				return -ENOMEM;
			ix->chunks_cap = 16;
			ix->chunks[0] = NULL;
		}
		c = realloc(ix->chunks[0], (size_t)cap * sizeof(*c));
		if (!c)
			return -ENOMEM;
		ix->chunks[0] = c;
		ix->chunk0_cap = cap;
		ix->nchunks = 1;
	} else if ((id >> CHUNK_SHIFT) >= ix->nchunks) {
		if (ix->nchunks == ix->chunks_cap) {
			uint32_t cap = ix->chunks_cap * 2;
			struct ai_entry **c = realloc(ix->chunks, cap * sizeof(*c));

			if (!c)
				return -ENOMEM;
			ix->chunks = c;
			ix->chunks_cap = cap;
		}
		ix->chunks[ix->nchunks] = malloc(CHUNK_SIZE * sizeof(struct ai_entry));
		if (!ix->chunks[ix->nchunks])
			return -ENOMEM;
		ix->nchunks++;
	}
	e = entry(ix, id);
	e->sym = *sym;
	e->order = order;
	e->flags = flags & ~HIDDEN_FLAG;
	ix->n++;
	return id;
}

void addrindex__hide(struct addrindex *ix, uint32_t id)
{
	if (id >= ix->n || (entry(ix, id)->flags & HIDDEN_FLAG))
		return;
	entry(ix, id)->flags |= HIDDEN_FLAG;
	ix->hidden++;
}

bool addrindex__hidden(const struct addrindex *ix, uint32_t id)
{
	return id < ix->n && (entry(ix, id)->flags & HIDDEN_FLAG);
}

const struct perfmap_sym *addrindex__get(const struct addrindex *ix, uint32_t id)
{
	return id < ix->n ? &entry(ix, id)->sym : NULL;
}

uint64_t addrindex__count(const struct addrindex *ix)
{
	return ix ? ix->n : 0;
}

/* ---- ranking ------------------------------------------------------------------------------ */

static inline bool alive(const struct ai_entry *e, uint64_t t)
{
	return !(e->flags & HIDDEN_FLAG) && !(t && e->sym.load_ns && e->sym.load_ns > t);
}

/* Is (a, aid) a better answer than (b, bid)? Both contain the address and are alive. */
static inline bool better(const struct ai_entry *a, uint32_t aid, const struct ai_entry *b,
			  uint32_t bid)
{
	bool ablk = a->flags & ADDRINDEX_BLOCK, bblk = b->flags & ADDRINDEX_BLOCK;

	if (ablk != bblk)
		return !ablk;
	if (ablk && a->sym.size != b->sym.size)
		return a->sym.size < b->sym.size;
	if (a->order != b->order)
		return a->order > b->order;
	return aid > bid;
}

static inline void offer(struct best *b, const struct ai_entry *e, uint32_t id)
{
	if (!b->e || better(e, id, b->e, b->id)) {
		b->e = e;
		b->id = id;
	}
}

/* ---- sorting ------------------------------------------------------------------------------ */

static inline bool skey_less(const struct skey *x, const struct skey *y)
{
	if (x->start != y->start)
		return x->start < y->start;
	if (x->end != y->end)
		return x->end > y->end;
	if (x->order != y->order)
		return x->order < y->order;
	return x->id < y->id;
}

/* Natural merge sort: perf maps are mostly ascending stretches (code heaps fill upwards), so
 * this is close to linear on real input and O(n log n) on any. Returns the sorted buffer. */
static struct skey *skey_sort(struct skey *a, struct skey *tmp, uint32_t n)
{
	uint32_t *bounds, nb = 0;

	if (n < 2)
		return a;
	bounds = malloc(((size_t)n + 1) * sizeof(*bounds));
	if (!bounds) {
		/* no memory for run bounds: plain bottom-up merge sort */
		for (uint32_t w = 1; w < n; w *= 2) {
			for (uint32_t lo = 0; lo < n; lo += 2 * w) {
				uint32_t mid = lo + w < n ? lo + w : n;
				uint32_t hi = lo + 2 * w < n ? lo + 2 * w : n;
				uint32_t i = lo, j = mid, k = lo;

				while (i < mid && j < hi)
					tmp[k++] = skey_less(&a[j], &a[i]) ? a[j++] : a[i++];
				while (i < mid)
					tmp[k++] = a[i++];
				while (j < hi)
					tmp[k++] = a[j++];
			}
			struct skey *s = a;
			a = tmp;
			tmp = s;
		}
		return a;
	}
	bounds[nb++] = 0;
	for (uint32_t i = 1; i < n; i++)
		if (skey_less(&a[i], &a[i - 1]))
			bounds[nb++] = i;
	bounds[nb] = n;
	while (nb > 1) {
		uint32_t out = 0;

		for (uint32_t r = 0; r < nb; r += 2) {
			uint32_t lo = bounds[r];

			if (r + 1 == nb) {	/* odd run out: copy through */
				memcpy(&tmp[lo], &a[lo], (size_t)(n - lo) * sizeof(*a));
				bounds[out++] = lo;
				break;
			}
			uint32_t mid = bounds[r + 1], hi = bounds[r + 2];
			uint32_t i = lo, j = mid, k = lo;

			while (i < mid && j < hi)
				tmp[k++] = skey_less(&a[j], &a[i]) ? a[j++] : a[i++];
			while (i < mid)
				tmp[k++] = a[i++];
			while (j < hi)
				tmp[k++] = a[j++];
			bounds[out++] = lo;
		}
		bounds[out] = n;
		nb = out;
		struct skey *s = a;
		a = tmp;
		tmp = s;
	}
	free(bounds);
	return a;
}

/* ---- runs --------------------------------------------------------------------------------- */

static inline bool covered(const struct run *r, uint32_t s)
{
	return r->covered[s >> 3] & (1u << (s & 7));
}

/* Fill covered and the max-end levels of a run whose slots are set. */
static int run_finish(struct run *r)
{
	uint32_t n = r->nslots;
	uint64_t pmax = 0;

	r->covered = calloc(n / 8 + 1, 1);
	if (!r->covered)
		return -ENOMEM;
	for (uint32_t s = 0; s < n; s++) {
		if (s && pmax > r->start[s])
			r->covered[s >> 3] |= 1u << (s & 7);
		if (r->end[s] > pmax)
			pmax = r->end[s];
	}
	r->lcount[0] = n;
	r->lmax[0] = r->end;
	r->nlevels = 1;
	while (r->lcount[r->nlevels - 1] > FANOUT) {
		uint32_t l = r->nlevels, below = r->lcount[l - 1];
		uint32_t cnt = (below + FANOUT - 1) / FANOUT;
		uint64_t *m = malloc((size_t)cnt * sizeof(*m));

		if (!m || l >= MAX_LEVELS) {
			free(m);
			return -ENOMEM;
		}
		for (uint32_t k = 0; k < cnt; k++) {
			uint64_t mx = 0;

			for (uint32_t c = k * FANOUT; c < below && c < (k + 1) * FANOUT; c++)
				if (r->lmax[l - 1][c] > mx)
					mx = r->lmax[l - 1][c];
			m[k] = mx;
		}
		r->lmax[l] = m;
		r->lcount[l] = cnt;
		r->nlevels++;
	}
	return 0;
}

static int run_alloc(struct run *r, uint32_t nslots, uint32_t nver)
{
	memset(r, 0, sizeof(*r));
	r->start = malloc((size_t)nslots * sizeof(uint64_t) + 1);
	r->end = malloc((size_t)nslots * sizeof(uint64_t) + 1);
	r->vfirst = malloc(((size_t)nslots + 1) * sizeof(uint32_t));
	r->ver = malloc((size_t)nver * sizeof(uint32_t) + 1);
	if (!r->start || !r->end || !r->vfirst || !r->ver) {
		run_free(r);
		return -ENOMEM;
	}
	return 0;
}

/* Build a run from keys sorted by skey_less. */
static int run_from_keys(struct run *r, const struct skey *k, uint32_t m)
{
	uint32_t nslots = 0, s = 0;
	int err;

	for (uint32_t i = 0; i < m; i++)
		if (!i || k[i].start != k[i - 1].start || k[i].end != k[i - 1].end)
			nslots++;
	err = run_alloc(r, nslots, m);
	if (err)
		return err;
	for (uint32_t i = 0; i < m; i++) {
		if (!i || k[i].start != k[i - 1].start || k[i].end != k[i - 1].end) {
			r->start[s] = k[i].start;
			r->end[s] = k[i].end;
			r->vfirst[s] = i;
			s++;
		}
		r->ver[i] = k[i].id;
	}
	r->vfirst[nslots] = m;
	r->nslots = nslots;
	r->nver = m;
	err = run_finish(r);
	if (err)
		run_free(r);
	return err;
}

static inline bool ver_less(const struct addrindex *ix, uint32_t x, uint32_t y)
{
	const struct ai_entry *a = entry(ix, x), *b = entry(ix, y);

	if (a->order != b->order)
		return a->order < b->order;
	return x < y;
}

/* Merge run b (newer) into run a (older) giving out; a and b stay untouched. */
static int run_merge(const struct addrindex *ix, const struct run *a, const struct run *b,
		     struct run *out)
{
	uint32_t ia = 0, ib = 0, s = 0, v = 0;
	int err = run_alloc(out, a->nslots + b->nslots, a->nver + b->nver);

	if (err)
		return err;
	while (ia < a->nslots || ib < b->nslots) {
		int cmp;

		if (ia == a->nslots)
			cmp = 1;
		else if (ib == b->nslots)
			cmp = -1;
		else if (a->start[ia] != b->start[ib])
			cmp = a->start[ia] < b->start[ib] ? -1 : 1;
		else if (a->end[ia] != b->end[ib])
			cmp = a->end[ia] > b->end[ib] ? -1 : 1;
		else
			cmp = 0;

		out->vfirst[s] = v;
		if (cmp < 0) {
			out->start[s] = a->start[ia];
			out->end[s] = a->end[ia];
			for (uint32_t k = a->vfirst[ia]; k < a->vfirst[ia + 1]; k++)
				out->ver[v++] = a->ver[k];
			ia++;
		} else if (cmp > 0) {
			out->start[s] = b->start[ib];
			out->end[s] = b->end[ib];
			for (uint32_t k = b->vfirst[ib]; k < b->vfirst[ib + 1]; k++)
				out->ver[v++] = b->ver[k];
			ib++;
		} else {
			uint32_t i = a->vfirst[ia], ie = a->vfirst[ia + 1];
			uint32_t j = b->vfirst[ib], je = b->vfirst[ib + 1];

			out->start[s] = a->start[ia];
			out->end[s] = a->end[ia];
			while (i < ie && j < je)
				out->ver[v++] = ver_less(ix, b->ver[j], a->ver[i]) ? b->ver[j++] : a->ver[i++];
			while (i < ie)
				out->ver[v++] = a->ver[i++];
			while (j < je)
				out->ver[v++] = b->ver[j++];
			ia++;
			ib++;
		}
		s++;
	}
	out->vfirst[s] = v;
	out->nslots = s;
	out->nver = v;
	err = run_finish(out);
	if (err)
		run_free(out);
	return err;
}

/* Keep each run more than GROWTH times bigger than the next one. */
static void runs_compact(struct addrindex *ix)
{
	while (ix->nruns >= 2 &&
	       ix->runs[ix->nruns - 2].nver <= (uint64_t)GROWTH * ix->runs[ix->nruns - 1].nver) {
		struct run merged;

		if (run_merge(ix, &ix->runs[ix->nruns - 2], &ix->runs[ix->nruns - 1], &merged))
			return;	/* out of memory: more runs to search, still correct */
		run_free(&ix->runs[ix->nruns - 2]);
		run_free(&ix->runs[ix->nruns - 1]);
		ix->runs[ix->nruns - 2] = merged;
		ix->nruns--;
		ix->merges++;
	}
}

int addrindex__flush(struct addrindex *ix)
{
	struct skey *keys, *tmp, *sorted;
	uint32_t m = 0;
	int err;

	if (!ix || ix->indexed == ix->n)
		return 0;
	if (ix->nruns == MAX_RUNS) {
		runs_compact(ix);
		if (ix->nruns == MAX_RUNS)
			return -ENOMEM;
	}
	keys = malloc((size_t)(ix->n - ix->indexed) * sizeof(*keys));
	tmp = malloc((size_t)(ix->n - ix->indexed) * sizeof(*tmp));
	if (!keys || !tmp) {
		free(keys);
		free(tmp);
		return -ENOMEM;
	}
	for (uint32_t id = ix->indexed; id < ix->n; id++) {
		const struct ai_entry *e = entry(ix, id);

		if (e->flags & HIDDEN_FLAG)
			continue;
		keys[m].start = e->sym.start;
		keys[m].end = e->sym.start + e->sym.size;
		keys[m].order = e->order;
		keys[m].id = id;
		m++;
	}
	if (m) {
		sorted = skey_sort(keys, tmp, m);
		err = run_from_keys(&ix->runs[ix->nruns], sorted, m);
		if (err)
			goto out_free;
		ix->nruns++;
	}
	ix->indexed = ix->n;
	runs_compact(ix);
	err = 0;
out_free:
	free(keys);
	free(tmp);
	return err;
}

/* ---- lookup ------------------------------------------------------------------------------- */

static void consider_slot(const struct addrindex *ix, const struct run *r, uint32_t s, uint64_t t,
			  struct best *b)
{
	const struct ai_entry *pick = NULL;
	uint32_t pick_id = 0;

	/* Newest alive version; a block only if no alive non-block shares the range. */
	for (uint32_t k = r->vfirst[s + 1]; k-- > r->vfirst[s];) {
		uint32_t id = r->ver[k];
		const struct ai_entry *e = entry(ix, id);

		if (!alive(e, t))
			continue;
		if (!pick) {
			pick = e;
			pick_id = id;
		}
		if (!(e->flags & ADDRINDEX_BLOCK)) {
			if (pick->flags & ADDRINDEX_BLOCK) {
				pick = e;
				pick_id = id;
			}
			break;
		}
	}
	if (pick)
		offer(b, pick, pick_id);
}

static void descend(const struct addrindex *ix, const struct run *r, uint32_t level, uint32_t node,
		    uint64_t addr, uint64_t t, struct best *b)
{
	if (level == 0) {
		if (r->end[node] > addr)
			consider_slot(ix, r, node, t, b);
		return;
	}
	if (r->lmax[level][node] <= addr)
		return;
	uint32_t c = node * FANOUT, ce = c + FANOUT;

	if (ce > r->lcount[level - 1])
		ce = r->lcount[level - 1];
	for (; c < ce; c++)
		descend(ix, r, level - 1, c, addr, t, b);
}

static void run_search(const struct addrindex *ix, const struct run *r, uint64_t addr, uint64_t t,
		       struct best *b)
{
	uint32_t lo = 0, hi = r->nslots, pos, level = 0;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->start[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return;
	pos = lo - 1;
	if (!covered(r, pos)) {
		if (r->end[pos] > addr)
			consider_slot(ix, r, pos, t, b);
		return;
	}
	/* Every slot that contains addr starts at or before slot pos: visit the nodes left of
	 * pos level by level, descending only where some end reaches past addr. */
	for (;;) {
		uint32_t first = pos - pos % FANOUT;

		for (uint32_t n = pos + 1; n-- > first;)
			descend(ix, r, level, n, addr, t, b);
		if (first == 0)
			break;
		pos = first / FANOUT - 1;
		level++;
	}
}

const struct perfmap_sym *addrindex__lookup(struct addrindex *ix, uint64_t addr, uint64_t time_ns)
{
	struct best b = { 0 };

	if (!ix)
		return NULL;
	if (ix->n - ix->indexed > TAIL_SCAN)
		addrindex__flush(ix);	/* on failure the tail is scanned below */
	for (uint32_t i = 0; i < ix->nruns; i++)
		run_search(ix, &ix->runs[i], addr, time_ns, &b);
	for (uint32_t id = ix->indexed; id < ix->n; id++) {
		const struct ai_entry *e = entry(ix, id);

		if (addr >= e->sym.start && addr - e->sym.start < e->sym.size && alive(e, time_ns))
			offer(&b, e, id);
	}
	return b.e ? &b.e->sym : NULL;
}

void addrindex__shape(const struct addrindex *ix, struct addrindex_shape *out)
{
	memset(out, 0, sizeof(*out));
	if (!ix)
		return;
	out->entries = ix->n;
	out->hidden = ix->hidden;
	out->tail = ix->n - ix->indexed;
	out->runs = ix->nruns;
	out->merges = ix->merges;
	out->bytes = ((uint64_t)(ix->nchunks ? ix->nchunks - 1 : 0) * CHUNK_SIZE + ix->chunk0_cap) *
		     sizeof(struct ai_entry) + ix->chunks_cap * sizeof(void *);
	for (uint32_t i = 0; i < ix->nruns; i++) {
		const struct run *r = &ix->runs[i];

		out->slots += r->nslots;
		out->bytes += (uint64_t)r->nslots * (2 * sizeof(uint64_t) + sizeof(uint32_t)) +
			      (uint64_t)r->nver * sizeof(uint32_t) + r->nslots / 8 + 1;
		for (uint32_t l = 1; l < r->nlevels; l++)
			out->bytes += (uint64_t)r->lcount[l] * sizeof(uint64_t);
	}
}
