/* addrindex.c: address index for JIT code ranges: log-structured sorted runs with a max-end tree.
 * Here: entries, runs built, merged and settled; lookups: addrlookup.c; shared: addrindex_int.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "addrindex.h"
#include "addrindex_int.h"

struct addrindex *addrindex__new(void)
{
	struct addrindex *ix = calloc(1, sizeof(*ix));

	if (!ix)
		errno = ENOMEM;
	return ix;
}

static void run_free(struct run *r)
{
	free(r->slots);
	free(r->sum);
	free(r->top);
	free(r->pre);
	free(r->ver);
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
	free(ix->hbits);
	free(ix->tiers);
	free(ix);
}

/* The index of tier t in ix->tiers (pointers: the strings are interned), added if new. */
static int tier_index(struct addrindex *ix, const char *t, uint8_t *out)
{
	if (ix->ntiers && ix->tiers[ix->last_tier] == t) {
		*out = ix->last_tier;
		return 0;
	}
	for (uint32_t i = 0; i < ix->ntiers; i++)
		if (ix->tiers[i] == t) {
			*out = ix->last_tier = (uint8_t)i;
			return 0;
		}
	if (ix->ntiers == MAX_TIERS) {
		ix->tiers_dropped++;
		*out = MAX_TIERS;
		return 0;
	}
	if (ix->ntiers == ix->tiers_cap) {
		uint32_t cap = ix->tiers_cap ? ix->tiers_cap * 2 : 8;
		const char **nt = realloc(ix->tiers, (cap > MAX_TIERS ? MAX_TIERS : cap) * sizeof(*nt));

		if (!nt)
			return -ENOMEM;
		ix->tiers = nt;
		ix->tiers_cap = cap > MAX_TIERS ? MAX_TIERS : cap;
	}
	ix->tiers[ix->ntiers] = t;
	*out = ix->last_tier = (uint8_t)ix->ntiers++;
	return 0;
}

int64_t addrindex__add(struct addrindex *ix, const struct perfmap_sym *sym, uint64_t order,
		       unsigned flags)
{
	uint8_t tier;
	uint32_t id = ix->n;
	struct ai_entry *e;

	if (id >= MAX_ENTRIES)
		return -EOVERFLOW;
	if (!sym->size || sym->size > ADDRINDEX_MAX_SIZE || sym->start + sym->size < sym->start)
		return -EINVAL;
	if (tier_index(ix, sym->tier ? sym->tier : "", &tier))
		return -ENOMEM;
	if ((id >> 6) >= ix->hbits_cap) {
		uint32_t cap = ix->hbits_cap ? ix->hbits_cap * 2 : 8;
		uint64_t *h = realloc(ix->hbits, (size_t)cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		memset(h + ix->hbits_cap, 0, (size_t)(cap - ix->hbits_cap) * sizeof(*h));
		ix->hbits = h;
		ix->hbits_cap = cap;
	}
	if (id < CHUNK_SIZE && id >= ix->chunk0_cap) {
		/* The first chunk grows by a quarter so small processes stay small: a .NET process's
		 * few thousand methods leave at most a quarter of it unused (doubling left half). */
		uint32_t cap = ix->chunk0_cap ? ix->chunk0_cap + ix->chunk0_cap / 4 : 256;

		if (cap > CHUNK_SIZE)
			cap = CHUNK_SIZE;
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
	e->start = sym->start;
	e->size = (uint32_t)sym->size;
	e->time = sym->load_ns ? sym->load_ns : order;
	e->name = sym->name;
	e->tier = tier;
	e->source = (uint8_t)sym->source;
	e->flags = (uint8_t)(flags & ADDRINDEX_BLOCK) | (sym->load_ns ? AI_TIMED : 0);
	ix->n++;
	return id;
}

void addrindex__hide(struct addrindex *ix, uint32_t id)
{
	if (id >= ix->n || is_hidden(ix, id))
		return;
	ix->hbits[id >> 6] |= 1ULL << (id & 63);
	ix->hidden++;
}

bool addrindex__hidden(const struct addrindex *ix, uint32_t id)
{
	return id < ix->n && is_hidden(ix, id);
}


bool addrindex__get(const struct addrindex *ix, uint32_t id, struct perfmap_sym *out)
{
	if (id >= ix->n)
		return false;
	sym_of(ix, entry(ix, id), out);
	return true;
}

uint64_t addrindex__count(const struct addrindex *ix)
{
	return ix ? ix->n : 0;
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

/* Merge the sorted runs a[lo..mid) and a[mid..hi) into tmp[lo..hi) (stable). */
static void merge(const struct skey *a, struct skey *tmp, uint32_t lo, uint32_t mid, uint32_t hi)
{
	uint32_t i = lo, j = mid, k = lo;

	while (i < mid && j < hi)
		tmp[k++] = skey_less(&a[j], &a[i]) ? a[j++] : a[i++];
	while (i < mid)
		tmp[k++] = a[i++];
	while (j < hi)
		tmp[k++] = a[j++];
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
				merge(a, tmp, lo, mid, hi);
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
			merge(a, tmp, lo, bounds[r + 1], bounds[r + 2]);
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

static int run_alloc(struct run *r, uint32_t nslots, uint64_t nextra)
{
	memset(r, 0, sizeof(*r));
	if (nextra > UINT32_MAX)
		return -ENOMEM;
	r->slots = malloc((size_t)nslots * sizeof(*r->slots) + 1);
	r->ver = malloc((size_t)nextra * sizeof(*r->ver) + 1);
	if (!r->slots || !r->ver) {
		run_free(r);
		return -ENOMEM;
	}
	return 0;
}

static void emit_single(struct run *r, uint64_t start, uint64_t end, uint32_t id)
{
	struct slot *sl = &r->slots[r->nslots++];

	sl->start = start;
	sl->len = (uint32_t)(end - start);
	sl->ref = id;
	r->nver++;
}

static void multi_begin(struct run *r, uint64_t start, uint64_t end)
{
	struct slot *sl = &r->slots[r->nslots++];

	sl->start = start;
	sl->len = (uint32_t)(end - start) | SLOT_MULTI;
	sl->ref = r->nextra;
	r->ver[r->nextra++] = 0;
}

static void multi_add(struct run *r, uint32_t id)
{
	r->ver[r->nextra++] = id;
	r->ver[r->slots[r->nslots - 1].ref]++;
	r->nver++;
}

/* Copy slot sl of run src, versions and all, to the end of r. */
static void copy_slot(struct run *r, const struct run *src, const struct slot *sl)
{
	if (!(sl->len & SLOT_MULTI)) {
		emit_single(r, sl->start, slot_end(sl), sl->ref);
		return;
	}
	multi_begin(r, sl->start, slot_end(sl));
	for (uint32_t k = 0; k < slot_nver(src, sl); k++)
		multi_add(r, slot_id(src, sl, k));
}

/* Does the slot hold code, a version that is not a block? */
static bool slot_has_code(const struct addrindex *ix, const struct run *r, const struct slot *sl)
{
	for (uint32_t k = 0; k < slot_nver(r, sl); k++)
		if (!(entry(ix, slot_id(r, sl, k))->flags & ADDRINDEX_BLOCK))
			return true;
	return false;
}

/* Fill the covered flags, the summary and the max-end levels of a run whose slots are set. */
static int run_finish(const struct addrindex *ix, struct run *r)
{
	uint32_t n = r->nslots;
	uint64_t pmax = 0, code_max = 0;	/* the largest end so far: of any slot, of code */

	size_t nsum = ((size_t)n + (1u << SUM_SHIFT) - 1) >> SUM_SHIFT;

	r->sum = malloc(nsum * sizeof(*r->sum) + 1);
	r->top = malloc(((nsum + (1u << TOP_SHIFT) - 1) >> TOP_SHIFT) * sizeof(*r->top) + 1);
	r->pre = malloc(((size_t)n / FANOUT + 1) * sizeof(*r->pre));
	if (!r->sum || !r->top || !r->pre)
		return -ENOMEM;
	for (uint32_t s = 0; s < n; s++) {
		struct slot *sl = &r->slots[s];

		if (!(s % FANOUT))
			r->pre[s / FANOUT] = pmax;
		if (pmax > sl->start)
			sl->len |= SLOT_COVERED;
		if (code_max > sl->start)
			sl->len |= SLOT_CODE_COVERED;
		if (slot_end(sl) > pmax)
			pmax = slot_end(sl);
		if (slot_end(sl) > code_max && slot_has_code(ix, r, sl))
			code_max = slot_end(sl);
		if (!(s & ((1u << SUM_SHIFT) - 1)))
			r->sum[s >> SUM_SHIFT] = sl->start;
		if (!(s & ((1u << (SUM_SHIFT + TOP_SHIFT)) - 1)))
			r->top[s >> (SUM_SHIFT + TOP_SHIFT)] = sl->start;
	}
	r->lcount[0] = n;
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

			for (uint32_t c = k * FANOUT; c < below && c < (k + 1) * FANOUT; c++) {
				uint64_t v = l == 1 ? slot_end(&r->slots[c]) : r->lmax[l - 1][c];

				if (v > mx)
					mx = v;
			}
			m[k] = mx;
		}
		r->lmax[l] = m;
		r->lcount[l] = cnt;
		r->nlevels++;
	}
	return 0;
}

/* Build a run from keys sorted by skey_less. */
static int run_from_keys(const struct addrindex *ix, struct run *r, const struct skey *k,
			 uint32_t m)
{
	uint32_t nslots = 0;
	uint64_t nextra = 0;
	int err;

	for (uint32_t i = 0, j; i < m; i = j) {
		for (j = i + 1; j < m && k[j].start == k[i].start && k[j].end == k[i].end; j++)
			;
		nslots++;
		if (j - i > 1)
			nextra += 1 + (j - i);
	}
	err = run_alloc(r, nslots, nextra);
	if (err)
		return err;
	for (uint32_t i = 0, j; i < m; i = j) {
		for (j = i + 1; j < m && k[j].start == k[i].start && k[j].end == k[i].end; j++)
			;
		if (j - i == 1) {
			emit_single(r, k[i].start, k[i].end, k[i].id);
			continue;
		}
		multi_begin(r, k[i].start, k[i].end);
		for (uint32_t x = i; x < j; x++)
			multi_add(r, k[x].id);
	}
	err = run_finish(ix, r);
	if (err)
		run_free(r);
	return err;
}

static inline bool ver_less(const struct addrindex *ix, uint32_t x, uint32_t y)
{
	const struct ai_entry *a = entry(ix, x), *b = entry(ix, y);

	if (a->time != b->time)
		return a->time < b->time;
	return x < y;
}

/* Merge run b (newer) into run a (older) giving out; a and b stay untouched. */
static int run_merge(const struct addrindex *ix, const struct run *a, const struct run *b,
		     struct run *out)
{
	uint32_t ia = 0, ib = 0;
	uint32_t common = a->nslots < b->nslots ? a->nslots : b->nslots;
	int err = run_alloc(out, a->nslots + b->nslots,
			    (uint64_t)a->nextra + b->nextra + 3ULL * common);

	if (err)
		return err;
	while (ia < a->nslots || ib < b->nslots) {
		const struct slot *sa = ia < a->nslots ? &a->slots[ia] : NULL;
		const struct slot *sb = ib < b->nslots ? &b->slots[ib] : NULL;
		int cmp;

		if (!sa)
			cmp = 1;
		else if (!sb)
			cmp = -1;
		else if (sa->start != sb->start)
			cmp = sa->start < sb->start ? -1 : 1;
		else if (slot_end(sa) != slot_end(sb))
			cmp = slot_end(sa) > slot_end(sb) ? -1 : 1;
		else
			cmp = 0;

		if (cmp < 0) {
			copy_slot(out, a, sa);
			ia++;
		} else if (cmp > 0) {
			copy_slot(out, b, sb);
			ib++;
		} else {
			/* the same range in both: one slot, versions merged by age (rare) */
			uint32_t i = 0, ie = slot_nver(a, sa), j = 0, je = slot_nver(b, sb);

			multi_begin(out, sa->start, slot_end(sa));
			while (i < ie && j < je) {
				uint32_t x = slot_id(a, sa, i), y = slot_id(b, sb, j);

				if (ver_less(ix, y, x)) {
					multi_add(out, y);
					j++;
				} else {
					multi_add(out, x);
					i++;
				}
			}
			for (; i < ie; i++)
				multi_add(out, slot_id(a, sa, i));
			for (; j < je; j++)
				multi_add(out, slot_id(b, sb, j));
			ia++;
			ib++;
		}
	}
	err = run_finish(ix, out);
	if (err)
		run_free(out);
	return err;
}

/* Keep each run more than GROWTH times bigger than the next one; all: merge them all into one.
 * 0, or -ENOMEM (more runs to search, still correct). */
static int runs_compact(struct addrindex *ix, bool all)
{
	while (ix->nruns >= 2 &&
	       (all || ix->runs[ix->nruns - 2].nver <= (uint64_t)GROWTH * ix->runs[ix->nruns - 1].nver)) {
		struct run merged;

		if (run_merge(ix, &ix->runs[ix->nruns - 2], &ix->runs[ix->nruns - 1], &merged))
			return -ENOMEM;
		run_free(&ix->runs[ix->nruns - 2]);
		run_free(&ix->runs[ix->nruns - 1]);
		ix->runs[ix->nruns - 2] = merged;
		ix->nruns--;
		ix->merges++;
		ix->nhints = 0;	/* their slots are gone */
	}
	return 0;
}

/* The first chunk grew by quarters while the process compiled; between bursts it keeps a
 * sixteenth spare, not up to a quarter. */
static void shrink_chunk0(struct addrindex *ix)
{
	uint32_t cap = ix->n + ix->n / 16 + 64;
	struct ai_entry *c;

	if (ix->nchunks != 1 || cap >= ix->chunk0_cap)
		return;
	if ((c = realloc(ix->chunks[0], (size_t)cap * sizeof(*c)))) {
		ix->chunks[0] = c;
		ix->chunk0_cap = cap;
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
		runs_compact(ix, false);
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

		if (is_hidden(ix, id))
			continue;
		keys[m].start = e->start;
		keys[m].end = e->start + e->size;
		keys[m].order = e->time;
		keys[m].id = id;
		m++;
	}
	if (m) {
		sorted = skey_sort(keys, tmp, m);
		err = run_from_keys(ix, &ix->runs[ix->nruns], sorted, m);
		if (err)
			goto out_free;
		ix->nruns++;
		ix->nhints = 0;	/* they name no slot of the new run */
	}
	ix->indexed = ix->n;
	runs_compact(ix, false);
	shrink_chunk0(ix);
	err = 0;
out_free:
	free(keys);
	free(tmp);
	return err;
}

int addrindex__settle(struct addrindex *ix)
{
	uint64_t rest = 0;
	int err;

	if (!ix)
		return 0;
	if ((err = addrindex__flush(ix)))
		return err;
	for (uint32_t i = 1; i < ix->nruns; i++)
		rest += ix->runs[i].nver;
	if (!rest || rest * ADDRINDEX_SETTLE_SHARE < ix->runs[0].nver)
		return 0;
	return runs_compact(ix, true);
}
