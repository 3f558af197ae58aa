/* perfmap_int.h: private state shared by the perf map reader, the jitdump reader and the index. */
#ifndef SPANPROF_PERFMAP_INT_H
#define SPANPROF_PERFMAP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addrindex.h"
#include "intern.h"
#include "nametab.h"
#include "perfmap.h"

#define PERFMAP_DEF_MAX_FILE	(1ULL << 30)
#define PERFMAP_DEF_MAX_LINE	(8u << 10)
#define PERFMAP_DEF_MAX_RECORD	(16u << 20)
#define PERFMAP_DEF_MAX_ENTRIES	(16ULL << 20)
#define PERFMAP_DEF_MAX_RANGE	(64ULL << 20)

/* Twins: the same code logged to both files. One bucket per (start, size, name, tier). */
struct twin_bucket {
	uint32_t map_id;	/* newest map entry id + 1 not yet matched by a record; 0 = none */
	uint32_t jit_id;	/* newest jitdump entry id + 1; 0 = none */
};

struct jd_reader {
	int phase;		/* enum jd_phase in jitdump.c */
	bool swap;		/* the file is of the other endianness */
	bool arch_ts;		/* record times are a CPU counter, not CLOCK_MONOTONIC */
	uint8_t *pend;		/* header / record prefix being assembled */
	size_t pend_len;
	size_t pend_cap;
	uint32_t hdr_size;
	uint32_t rec_id;
	uint32_t rec_size;
	uint64_t rec_ts;
	uint64_t rec_seen;	/* bytes of the current record consumed */
	uint64_t skip_left;	/* bytes of the current record still to skip */
	uint64_t fed;		/* bytes fed (file-size cap) */
	bool capped_file;
};

struct map_reader {
	char *line;		/* partial line carried over between feeds */
	size_t len;
	size_t cap;
	bool discarding;	/* inside an over-long line: drop until newline */
	uint64_t fed;
	bool capped_file;
};

struct perfmap {
	struct perfmap_limits lim;
	struct addrindex *ix;
	uint64_t budget_held;	/* ranges it took from the program's budget */
	struct nameset names;	/* its references to names shared by every perfmap (lib/nametab.h) */
	struct map_reader map;
	struct jd_reader jd;
	uint64_t map_off;	/* fd offsets for the read_*_fd helpers */
	uint64_t jd_off;
	struct twin_bucket *twins;	/* NULL until both sources produced entries */
	uint32_t twin_cap;
	uint32_t twin_n;
	uint32_t *twin_prev;	/* map entry id -> previous map entry id + 1 with its key */
	uint32_t twin_prev_cap;
	bool twins_jit_only;	/* the jitdump stopped: the table holds its entries only */
	int64_t jd_moved_ns;	/* feed clock when the jitdump was last written (read_jitdump_fd);
				 * before the first feed for a file read late */
	bool jd_moved_known;
	bool jd_ended;		/* the jitdump stopped or stalled: no record will hide a map line */
	uint64_t *filter;	/* perfmap__set_filter: sorted, distinct; NULL keeps every range */
	size_t nfilter;
	bool have_map;
	bool have_jit;
	uint64_t pinned_now;	/* perfmap__set_feed_time */
	uint64_t jd_replay_until;	/* perfmap__set_jitdump_replay: records stamped up to it untimed */
	uint64_t feed_now;	/* time of the feed in progress */
	struct perfmap_stats st;
};

/* The jitdump reader stopped for good: what only served records to come is let go. */
void perfmap_jitdump_stopped(struct perfmap *pm);

/* Insert one code range from either reader: validates, splits the tier, interns, dedups.
 * Malformed input is counted; returns 0, or -ENOMEM. */
int perfmap_add(struct perfmap *pm, uint64_t start, uint64_t size, uint64_t load_ns,
		const char *name, size_t len, int source);

/* Bytes of a feed that fit under the file-size cap; counts the cap once. */
size_t perfmap_file_room(struct perfmap *pm, uint64_t *fed, bool *capped, size_t len);

void jd_reader_free(struct jd_reader *jd);

/* Bytes of the unfinished jitdump header or record consumed so far. */
uint64_t jd_reader_partial(const struct jd_reader *jd);

#endif /* SPANPROF_PERFMAP_INT_H */
