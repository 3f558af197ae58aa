/* addrindex_int.h: what the address index's two files share (addrindex.c: building, merging
 * runs; addrlookup.c: lookups and prefetch): its entries, runs and slots, and the small inline
 * helpers both read them with. Not for use outside them; the API is addrindex.h. */
#ifndef SPANPROF_ADDRINDEX_INT_H
#define SPANPROF_ADDRINDEX_INT_H

#include <stdbool.h>
#include <stdint.h>

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

static inline uint64_t load_ns_of(const struct ai_entry *e)
{
	return (e->flags & AI_TIMED) ? e->time : 0;
}

static inline void sym_of(const struct addrindex *ix, const struct ai_entry *e, struct perfmap_sym *out)
{
	out->start = e->start;
	out->size = e->size;
	out->load_ns = load_ns_of(e);
	out->name = e->name;
	out->tier = e->tier < ix->ntiers ? ix->tiers[e->tier] : "";
	out->source = e->source;
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

static inline uint32_t slot_nver(const struct run *r, const struct slot *sl)
{
	return (sl->len & SLOT_MULTI) ? r->ver[sl->ref] : 1;
}

/* The k-th entry of a slot, oldest first. */
static inline uint32_t slot_id(const struct run *r, const struct slot *sl, uint32_t k)
{
	return (sl->len & SLOT_MULTI) ? r->ver[sl->ref + 1 + k] : sl->ref;
}

#endif /* SPANPROF_ADDRINDEX_INT_H */
