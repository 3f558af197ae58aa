/* addrlookup.c: the address index's lookups (addrindex.c builds it): the newest alive range at an
 * address in each run (top keys, summary, one probe of a block, the max-end tree for overlaps),
 * and the prefetch that finds the slots of a batch of addresses before their lookups. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "addrindex.h"
#include "addrindex_int.h"

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
