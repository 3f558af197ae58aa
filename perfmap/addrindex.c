/* addrindex.c: address index for JIT code ranges: log-structured sorted runs with a max-end tree. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "addrindex.h"

#define CHUNK_SHIFT	16			/* entries live in fixed chunks: no realloc copies */
#define CHUNK_SIZE	(1u << CHUNK_SHIFT)
#define FANOUT		16			/* max-end tree fan-out */
#define MAX_LEVELS	10			/* 16^9 > 2^32 slots */
#define SUM_SHIFT	5			/* one summary key per 32 slots */
#define TOP_SHIFT	3			/* one top key per 8 summary keys (a cache line) */
#define MAX_RUNS	40			/* GROWTH 4 keeps runs below log4(2^32) + 1 */
#define GROWTH		4
#define TAIL_SCAN	64			/* a tail this small is scanned, not sorted */
#define MAX_ENTRIES	(UINT32_MAX - 1)

/* One appended range, 32 bytes: a node holds thousands per process. A timed range (load_ns
 * known) ranks by its load time, an untimed one by the order it was given: one field for both.
 * Tiers are few (the runtime has about eight): an entry holds an index into the index's table. */
enum {
	AI_TIMED = 0x80,	/* in flags, beside enum addrindex_flags: time is the load time */
};

#define MAX_TIERS	255	/* distinct tiers an index names; past them, a tier shows as "" */

struct ai_entry {
	uint64_t start;
	uint64_t time;		/* rank among overlapping ranges; the load time when AI_TIMED */
	const char *name;
	uint32_t size;
	uint8_t tier;		/* into tiers[]; MAX_TIERS: not kept */
	uint8_t source;
	uint8_t flags;		/* enum addrindex_flags | AI_TIMED */
};

/*
 * A run: distinct ranges ("slots") sorted by start ascending, end descending. A slot holds one
 * entry (ref = its id) or several with exactly that range (SLOT_MULTI: ref indexes ver[], where
 * ver[ref] is the count and the ids follow, oldest first). SLOT_COVERED marks slots whose start
 * lies inside an earlier slot, SLOT_CODE_COVERED those whose start lies inside an earlier slot
 * with code in it (a version that is not a block). So the common lookup (no overlap, or a stub
 * inside its block) is a search in the top keys (every 256th start, small enough to stay
 * cached), one line of the summary (every 32nd start), one probe of 32 slots and a look at the one entry found (its load time, then its name):
 * memory latency, not instructions, is what a lookup costs.
 * lmax[l][k] is the largest end among the FANOUT^l slots under node k (level 0: slot ends);
 * pre[] lets the walk stop as soon as nothing further left can reach the address.
 */
#define SLOT_COVERED	(1u << 31)	/* in len, above the range's length */
#define SLOT_MULTI	(1u << 30)
#define SLOT_CODE_COVERED (1u << 29)
#define SLOT_LEN	(SLOT_CODE_COVERED - 1)

_Static_assert(ADDRINDEX_MAX_SIZE <= SLOT_LEN, "a range's length fits below the slot flags");

struct slot {		/* 16 bytes */
	uint64_t start;
	uint32_t len;		/* end - start, with the SLOT_ flags above it */
	uint32_t ref;
};

static inline uint64_t slot_end(const struct slot *sl)
{
	return sl->start + (sl->len & SLOT_LEN);
}

struct run {
	uint32_t nslots;
	uint32_t nver;		/* entries in the run */
	uint32_t nextra;	/* used length of ver[] */
	struct slot *slots;
	uint64_t *sum;		/* slots[k << SUM_SHIFT].start */
	uint64_t *top;		/* sum[k << TOP_SHIFT]: a search in sum reads one line of it */
	uint64_t *pre;		/* pre[g]: largest end among slots [0, g * FANOUT) */
	uint32_t *ver;
	uint32_t nlevels;
	uint32_t lcount[MAX_LEVELS];
	uint64_t *lmax[MAX_LEVELS];	/* lmax[0] unused: level 0 reads slots[].end */
};

/* What addrindex__prefetch found for one address, for the lookup that follows it: the slot it
 * falls on in each run (NULL: before the run). Kept for indexes of at most HINT_RUNS runs (a
 * settled one has one, maybe a small second). */
#define HINT_RUNS	2

struct hint {
	uint64_t addr;
	const struct slot *sl[HINT_RUNS];
};

struct addrindex {
	struct ai_entry **chunks;
	uint32_t nchunks;
	uint32_t chunks_cap;
	uint32_t chunk0_cap;	/* entries allocated in chunks[0] (<= CHUNK_SIZE) */
	uint32_t n;		/* entries appended */
	uint32_t indexed;	/* entries [0, indexed) are in runs or hidden; the rest is the tail */
	uint64_t *hbits;	/* hidden entries, one bit per id */
	uint32_t hbits_cap;	/* in 64-bit words */
	uint64_t hidden;
	uint64_t merges;
	uint32_t nruns;
	struct run runs[MAX_RUNS];	/* runs[0] is the oldest and biggest */
	struct hint hints[ADDRINDEX_PREFETCH_MAX];	/* the last prefetch's, until the runs change */
	uint32_t nhints, hint_next;	/* hint_next: where the next lookup's is, most likely */
	const char **tiers;
	uint32_t ntiers, tiers_cap;
	uint8_t last_tier;
	uint64_t tiers_dropped;	/* entries whose tier did not fit in tiers[] */
	struct perfmap_sym out;	/* what lookup returns */
};

/* Sort key: copied out of the entries so sorting touches one compact array. */
struct skey {
	uint64_t start;
	uint64_t end;
	uint64_t order;
	uint32_t id;
};

struct best {
	uint32_t id;
	bool set;
};

static inline struct ai_entry *entry(const struct addrindex *ix, uint32_t id)
{
	return &ix->chunks[id >> CHUNK_SHIFT][id & (CHUNK_SIZE - 1)];
}

static inline bool is_hidden(const struct addrindex *ix, uint32_t id)
{
	return ix->hbits[id >> 6] & (1ULL << (id & 63));
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

static inline uint64_t load_ns_of(const struct ai_entry *e)
{
	return (e->flags & AI_TIMED) ? e->time : 0;
}

static void sym_of(const struct addrindex *ix, const struct ai_entry *e, struct perfmap_sym *out)
{
	out->start = e->start;
	out->size = e->size;
	out->load_ns = load_ns_of(e);
	out->name = e->name;
	out->tier = e->tier < ix->ntiers ? ix->tiers[e->tier] : "";
	out->source = e->source;
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

/* ---- ranking ------------------------------------------------------------------------------ */

static inline bool alive(const struct addrindex *ix, uint32_t id, uint64_t t)
{
	uint64_t load_ns;

	if (is_hidden(ix, id))
		return false;
	load_ns = load_ns_of(entry(ix, id));
	return !(t && load_ns && load_ns > t);
}

/* Is entry a a better answer than entry b? Both contain the address and are alive. */
static inline bool better(const struct addrindex *ix, uint32_t aid, uint32_t bid)
{
	const struct ai_entry *a = entry(ix, aid), *b = entry(ix, bid);
	bool ablk = a->flags & ADDRINDEX_BLOCK, bblk = b->flags & ADDRINDEX_BLOCK;

	if (ablk != bblk)
		return !ablk;
	if (ablk && a->size != b->size)
		return a->size < b->size;
	if (a->time != b->time)
		return a->time > b->time;
	return aid > bid;
}

static inline void offer(const struct addrindex *ix, struct best *b, uint32_t id)
{
	if (!b->set || better(ix, id, b->id)) {
		b->id = id;
		b->set = true;
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

static inline uint32_t slot_nver(const struct run *r, const struct slot *sl)
{
	return (sl->len & SLOT_MULTI) ? r->ver[sl->ref] : 1;
}

/* The k-th entry of a slot, oldest first. */
static inline uint32_t slot_id(const struct run *r, const struct slot *sl, uint32_t k)
{
	return (sl->len & SLOT_MULTI) ? r->ver[sl->ref + 1 + k] : sl->ref;
}

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

/* ---- lookup ------------------------------------------------------------------------------- */

/* The slot's answer: its newest alive version, a block only if no alive code shares the
 * range. False when no version is alive. */
static bool slot_pick(const struct addrindex *ix, const struct run *r, const struct slot *sl,
		      uint64_t t, uint32_t *out)
{
	bool picked = false, pick_blk = false;

	if (!(sl->len & SLOT_MULTI)) {
		*out = sl->ref;
		return alive(ix, sl->ref, t);
	}
	for (uint32_t k = slot_nver(r, sl); k-- > 0;) {
		uint32_t id = slot_id(r, sl, k);
		bool blk = entry(ix, id)->flags & ADDRINDEX_BLOCK;

		if (!alive(ix, id, t))
			continue;
		if (!picked || (pick_blk && !blk)) {
			*out = id;
			pick_blk = blk;
			picked = true;
		}
		if (!blk)
			break;
	}
	return picked;
}

static void consider_slot(const struct addrindex *ix, const struct run *r, uint32_t s, uint64_t t,
			  struct best *b)
{
	uint32_t id;

	if (slot_pick(ix, r, &r->slots[s], t, &id))
		offer(ix, b, id);
}

static void descend(const struct addrindex *ix, const struct run *r, uint32_t level, uint32_t node,
		    uint64_t addr, uint64_t t, struct best *b)
{
	if (level == 0) {
		if (slot_end(&r->slots[node]) > addr)
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

/* The slot block of run r where addr falls (the last summary key <= addr) and its length in
 * *len; NULL when addr lies before the run. The top keys (every 8th summary key: 31 KB at a
 * million slots) stay cached, so a search reads one line of the summary, not a dozen that other
 * lookups' blocks keep evicting. Branch-free: a lookup is bound by memory, and a mispredicted
 * branch would stop the next lookup's loads from overlapping this one's. */
static const struct slot *block_of(const struct run *r, uint64_t addr, uint32_t *len)
{
	uint32_t nsum = (r->nslots + (1u << SUM_SHIFT) - 1) >> SUM_SHIFT;
	uint32_t ntop = (nsum + (1u << TOP_SHIFT) - 1) >> TOP_SHIFT, n, half, pos, k;
	const uint64_t *top = r->top, *sum;

	if (!ntop || top[0] > addr)
		return NULL;
	for (n = ntop; n > 1; n -= half) {
		half = n / 2;
		top += top[half] <= addr ? half : 0;
	}
	k = (uint32_t)(top - r->top) << TOP_SHIFT;
	sum = &r->sum[k];
	n = nsum - k < (1u << TOP_SHIFT) ? nsum - k : (1u << TOP_SHIFT);
	pos = 0;
	for (uint32_t i = 1; i < n; i++)
		pos += sum[i] <= addr;
	pos = (k + pos) << SUM_SHIFT;
	*len = r->nslots - pos < (1u << SUM_SHIFT) ? r->nslots - pos : (1u << SUM_SHIFT);
	return &r->slots[pos];
}

/* Start fetching a block's cache lines, all of them at once. */
static inline void fetch_block(const struct slot *blk, uint32_t len)
{
	for (uint32_t k = 0; k < len; k += 64 / sizeof(*blk))
		__builtin_prefetch(&blk[k]);
}

/* The last slot of a block with start <= addr (the block's first one does). Branch-free. */
static const struct slot *slot_in_block(const struct slot *blk, uint32_t len, uint64_t addr)
{
	for (uint32_t half; len > 1; len -= half) {
		half = len / 2;
		blk += blk[half].start <= addr ? half : 0;
	}
	return blk;
}

/* The last slot of run r with start <= addr (NULL: addr lies before the run): the top keys and one
 * line of the summary give its block, whose lines are fetched together before the search reads
 * them one by one. */
static const struct slot *slot_of(const struct run *r, uint64_t addr)
{
	const struct slot *blk;
	uint32_t len;

	if (!(blk = block_of(r, addr, &len)))
		return NULL;
	fetch_block(blk, len);
	return slot_in_block(blk, len, addr);
}

/* hinted: slot_of(r, addr) as a hint found it, or NULL to search. */
static void run_search(const struct addrindex *ix, const struct run *r, uint64_t addr, uint64_t t,
		       const struct slot *const *hinted, struct best *b)
{
	uint32_t level = 0, pos, id;
	const struct slot *blk;
	bool found = false;

	if (!(blk = hinted ? *hinted : slot_of(r, addr)))
		return;
	pos = (uint32_t)(blk - r->slots);
	if (slot_end(blk) > addr && slot_pick(ix, r, blk, t, &id)) {
		/* Any other slot holding addr starts before this one and so covers its start. If
		 * none of those holds code, they are blocks, and code here beats them all. */
		if (!(blk->len & SLOT_CODE_COVERED) && !(entry(ix, id)->flags & ADDRINDEX_BLOCK)) {
			offer(ix, b, id);
			return;
		}
		found = true;
	}
	if (!(blk->len & SLOT_COVERED)) {
		if (found)
			offer(ix, b, id);
		return;
	}
	/* Every slot that contains addr starts at or before slot pos: visit the nodes left of
	 * pos level by level, descending only where some end reaches past addr. */
	for (uint64_t span = 1;; span *= FANOUT) {
		uint32_t first = pos - pos % FANOUT;

		for (uint32_t n = pos + 1; n-- > first;)
			descend(ix, r, level, n, addr, t, b);
		/* stop when no slot left of this group reaches past addr */
		if (first == 0 || r->pre[first * span / FANOUT] <= addr)
			break;
		pos = first / FANOUT - 1;
		level++;
	}
}

void addrindex__prefetch(struct addrindex *ix, const uint64_t *addrs, size_t n)
{
	const struct slot *sl[ADDRINDEX_PREFETCH_MAX];
	uint32_t len[ADDRINDEX_PREFETCH_MAX];
	bool keep;

	if (!ix || n > ADDRINDEX_PREFETCH_MAX)
		return;
	keep = ix->nruns <= HINT_RUNS;
	ix->nhints = keep ? (uint32_t)n : 0;
	ix->hint_next = 0;
	for (size_t k = 0; keep && k < n; k++)
		ix->hints[k] = (struct hint){ .addr = addrs[k] };
	/* Run by run, one step of every lookup after the other, each step's loads all in flight
	 * before the next step needs them: the blocks, then the entries their slots name, then
	 * the names. */
	for (uint32_t i = 0; i < ix->nruns; i++) {
		const struct run *r = &ix->runs[i];

		for (size_t k = 0; k < n; k++)
			if ((sl[k] = block_of(r, addrs[k], &len[k])))
				fetch_block(sl[k], len[k]);
		for (size_t k = 0; k < n; k++) {
			if (!sl[k])
				continue;
			sl[k] = slot_in_block(sl[k], len[k], addrs[k]);
			if (keep)
				ix->hints[k].sl[i] = sl[k];
			if (slot_end(sl[k]) <= addrs[k] || (sl[k]->len & SLOT_MULTI)) {
				sl[k] = NULL;	/* a miss, or several versions (rare): found as it is */
				continue;
			}
			__builtin_prefetch(entry(ix, sl[k]->ref));
			__builtin_prefetch(&ix->hbits[sl[k]->ref >> 6]);
		}
		for (size_t k = 0; k < n; k++)
			if (sl[k])
				__builtin_prefetch(entry(ix, sl[k]->ref)->name);
	}
}

/* The slots the last hint found for addr in each run, or NULL: not told, or the runs changed
 * since. Lookups come in the order they were told: the next one is tried first. */
static const struct slot *const *hinted(struct addrindex *ix, uint64_t addr)
{
	uint32_t at = ix->hint_next;

	if (!ix->nhints)
		return NULL;
	if (at >= ix->nhints || ix->hints[at].addr != addr)
		for (at = 0; at < ix->nhints && ix->hints[at].addr != addr; at++)
			;
	if (at == ix->nhints) {
		ix->nhints = 0;	/* an address not told: the group's lookups are over */
		return NULL;
	}
	ix->hint_next = at + 1;
	return ix->hints[at].sl;
}

const struct perfmap_sym *addrindex__lookup(struct addrindex *ix, uint64_t addr, uint64_t time_ns)
{
	const struct slot *const *h;
	struct best b = { 0 };

	if (!ix)
		return NULL;
	if (ix->n - ix->indexed > TAIL_SCAN)
		addrindex__flush(ix);	/* on failure the tail is scanned below */
	h = hinted(ix, addr);
	for (uint32_t i = 0; i < ix->nruns; i++)
		run_search(ix, &ix->runs[i], addr, time_ns, h ? &h[i] : NULL, &b);
	for (uint32_t id = ix->indexed; id < ix->n; id++) {
		const struct ai_entry *e = entry(ix, id);

		if (addr >= e->start && addr - e->start < e->size &&
		    alive(ix, id, time_ns))
			offer(ix, &b, id);
	}
	if (!b.set)
		return NULL;
	sym_of(ix, entry(ix, b.id), &ix->out);
	return &ix->out;
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
		     sizeof(struct ai_entry) + ix->chunks_cap * sizeof(void *) +
		     (uint64_t)ix->hbits_cap * sizeof(uint64_t) +
		     (uint64_t)ix->tiers_cap * sizeof(*ix->tiers);
	out->tiers_dropped = ix->tiers_dropped;
	for (uint32_t i = 0; i < ix->nruns; i++) {
		const struct run *r = &ix->runs[i];

		out->slots += r->nslots;
		out->bytes += (uint64_t)r->nslots * sizeof(struct slot) +
			      (uint64_t)r->nextra * sizeof(uint32_t) +
			      ((r->nslots >> SUM_SHIFT) + 1) * sizeof(uint64_t) +
			      ((r->nslots >> (SUM_SHIFT + TOP_SHIFT)) + 1) * sizeof(uint64_t) +
			      (r->nslots / FANOUT + 1) * sizeof(uint64_t);
		for (uint32_t l = 1; l < r->nlevels; l++)
			out->bytes += (uint64_t)r->lcount[l] * sizeof(uint64_t);
	}
}
