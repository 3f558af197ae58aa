/* addrindex.h: private address index behind perfmap: overlapping, time-stamped code ranges. */
#ifndef SPANPROF_ADDRINDEX_H
#define SPANPROF_ADDRINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perfmap.h"

/*
 * Ranges are only ever appended (the runtime never retracts a line). Lookup rules, in order:
 *   1. a range loaded after the sample (load_ns > time_ns, both known) does not exist yet;
 *   2. a stub block (ADDRINDEX_BLOCK) loses against any other range: the smallest block wins;
 *   3. otherwise the newest range (highest order, then highest id) wins: freed code is
 *      reused, and whatever was written last at an address is what runs there.
 * Appends go to an unsorted tail; a lookup turns the tail into a sorted run and merges runs
 * log-structured (a run is merged into the previous one while that is at most GROWTH times
 * bigger), so lookups search O(log n) runs and each entry is copied O(log n) times.
 */
struct addrindex;

enum addrindex_flags {
	ADDRINDEX_BLOCK = 1,	/* a stub block: container of stubs, not code of its own */
};

struct addrindex_shape {
	uint64_t entries;	/* appended, hidden ones included */
	uint64_t hidden;
	uint64_t tail;		/* appended but not yet in a run */
	uint32_t runs;
	uint64_t slots;		/* distinct ranges over all runs */
	uint64_t bytes;		/* memory held by entries and runs */
	uint64_t merges;	/* run merges done so far */
	uint64_t tiers_dropped;	/* entries past the 255 distinct tiers an index keeps: tier "" */
};

/* Constructor returns NULL and sets errno. */
struct addrindex *addrindex__new(void);
void addrindex__free(struct addrindex *ix);	/* NULL-safe */

#define ADDRINDEX_MAX_SIZE	(1ULL << 28)	/* largest range */

/* Append sym (copied; name/tier pointers must outlive the index). Overlapping ranges rank by
 * time, higher is newer: a timed range's (load_ns) is its load time, an untimed one's is order.
 * Returns the entry id (>= 0), -EINVAL (empty, wrapping or over ADDRINDEX_MAX_SIZE), -ENOMEM or
 * -EOVERFLOW (4G entries). */
int64_t addrindex__add(struct addrindex *ix, const struct perfmap_sym *sym, uint64_t order,
		       unsigned flags);

/* Exclude an entry from lookups (it duplicates another one). */
void addrindex__hide(struct addrindex *ix, uint32_t id);
bool addrindex__hidden(const struct addrindex *ix, uint32_t id);

/* Copy the entry with this id to out; false when out of range. */
bool addrindex__get(const struct addrindex *ix, uint32_t id, struct perfmap_sym *out);

/* Find the code live at addr at time_ns (0 = newest), by the rules above. NULL when none.
 * Valid until the next lookup, add or free. Never fails: without memory to build a run it
 * scans. */
const struct perfmap_sym *addrindex__lookup(struct addrindex *ix, uint64_t addr, uint64_t time_ns);

/* A hint before looking up several addresses (at most ADDRINDEX_PREFETCH_MAX) one after another:
 * fetch what their lookups will read, for all of them at once, so that their waits on memory
 * overlap rather than add up. Their lookups, while the runs stay as they are, start from the slots
 * it found instead of searching again (kept for indexes of one or two runs). It changes no answer
 * and never fails. The unsorted tail, and slots with several versions, are not fetched. */
#define ADDRINDEX_PREFETCH_MAX PERFMAP_PREFETCH_MAX
void addrindex__prefetch(struct addrindex *ix, const uint64_t *addrs, size_t n);

/* Sort the tail into runs now (lookup does it lazily). Returns 0 or -ENOMEM. */
int addrindex__flush(struct addrindex *ix);

/* The process has stopped compiling for now: flush, then merge every run into one, so a lookup
 * searches one run. Done only when the runs after the first hold at least 1/ADDRINDEX_SETTLE_SHARE
 * of its ranges, so a trickle of late methods does not copy the whole index again and again.
 * Returns 0 or -ENOMEM (the runs stay as they were: still correct). NULL-safe. */
#define ADDRINDEX_SETTLE_SHARE 64
int addrindex__settle(struct addrindex *ix);

uint64_t addrindex__count(const struct addrindex *ix);
void addrindex__shape(const struct addrindex *ix, struct addrindex_shape *out);

#endif /* SPANPROF_ADDRINDEX_H */
