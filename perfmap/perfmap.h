/* perfmap.h: .NET perf map and jitdump readers, and the address index behind them. */
#ifndef SPANPROF_PERFMAP_H
#define SPANPROF_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

/*
 * One struct perfmap holds the JIT code ranges of one process, fed from its perf-<pid>.map
 * (text) and/or jit-<pid>.dump (binary). Both readers are incremental: feed bytes as the files
 * grow; a partial trailing line or record is kept until the rest arrives.
 */
struct perfmap;

enum perfmap_source {
	PERFMAP_SRC_MAP = 1,	/* perf-<pid>.map line */
	PERFMAP_SRC_JITDUMP = 2,	/* jit-<pid>.dump JIT_CODE_LOAD record */
};

struct perfmap_sym {
	uint64_t start;
	uint64_t size;
	uint64_t load_ns;	/* jitdump timestamp (CLOCK_MONOTONIC); 0 when unknown (perf map) */
	const char *name;	/* method name without the tier suffix; owned by the perfmap */
	const char *tier;	/* "OptimizedTier1", "PreJIT", ... without brackets; "" when none */
	int source;		/* enum perfmap_source */
};

struct perfmap_stats {
	uint64_t lines;		/* perf map lines accepted */
	uint64_t records;	/* jitdump code-load records accepted */
	uint64_t malformed;	/* lines/records rejected and skipped */
	uint64_t skipped;	/* unknown jitdump record types skipped by size */
	uint64_t capped;	/* input dropped because a cap (file size, line length, entries) hit */
	uint64_t bytes;		/* bytes consumed so far, both files */
	uint64_t entries;	/* ranges in the index */
	/* Added by the perfmap core (issue 3): */
	uint64_t dups;		/* perf map lines dropped as twins of jitdump records */
	uint64_t partial;	/* bytes of an unfinished trailing line/record seen so far */
	uint64_t jitdump_flags;	/* header flags; bit 0 (ARCH_TIMESTAMP) voids record times */
	uint32_t jitdump_version;	/* 0 until a valid header was read */
	uint32_t jitdump_pid;	/* pid in the jitdump header */
	uint32_t jitdump_stopped;	/* 1: a record with impossible framing ended the stream */
	uint32_t map_stale;	/* 1: the perf map shrank under us (-ESTALE was returned) */
	uint64_t budget_capped;	/* ranges not taken: the program's budget (perfmap__set_budget) was spent */
	uint64_t held_bytes;	/* memory the perfmap holds: index, runs, buffers (not the shared names) */
	uint64_t filtered;	/* ranges passed over: no address of the filter in them */
	uint64_t jitdump_partial;	/* bytes of the unfinished jitdump record (part of partial); if it
				 * never completes the writer gave up (runtime 10.0.12 does, on a
				 * 64 KiB stub block: see perfmap/README.md) */
	uint32_t runs;		/* sorted runs a lookup searches: a read that finds nothing new
				 * merges them into one (addrindex__settle) */
};

struct perfmap_limits {
	uint64_t max_file_bytes;	/* stop reading a file past this (default 1 GiB) */
	uint32_t max_line;		/* longest accepted perf map line (default 8 KiB) */
	uint32_t max_record;		/* largest jitdump record (default 16 MiB) */
	uint64_t max_entries;		/* index cap (default 16 M) */
	uint64_t max_range;		/* largest accepted code range (default 64 MiB, at most 256 MiB) */
};
/* A zero field in struct perfmap_limits means its default. */

/* Constructors return NULL and set errno. limits may be NULL for the defaults. */
struct perfmap *perfmap__new(const struct perfmap_limits *limits);
void perfmap__free(struct perfmap *pm);	/* NULL-safe */
/* Free the code ranges (and give their budget back) but keep the names until perfmap__free: a
 * perfmap read again from the start frees the old one this way first, so the names it reads
 * again are found, not allocated anew. pm serves no lookup after this. NULL-safe. */
void perfmap__free_ranges(struct perfmap *pm);

/* Feed the next bytes of the perf map / the jitdump. Return 0, or -errno on a fatal error
 * (bad jitdump header: -EINVAL; out of memory: -ENOMEM). Malformed input is counted, not fatal. */
int perfmap__feed_map(struct perfmap *pm, const char *buf, size_t len);
int perfmap__feed_jitdump(struct perfmap *pm, const void *buf, size_t len);

/* Read what was appended to an open file since the last call (offset is remembered per
 * source). Returns bytes consumed (>= 0) or -errno. */
int64_t perfmap__read_map_fd(struct perfmap *pm, int fd);
int64_t perfmap__read_jitdump_fd(struct perfmap *pm, int fd);

/*
 * Find the code live at addr at time_ns (CLOCK_MONOTONIC; 0 = the newest code). Ranges loaded
 * after time_ns are skipped. Overlaps: a stub block loses to any range inside it (smallest block
 * wins); otherwise the newest range wins (load time; feed time for perf map lines), because freed
 * code is reused (perfmap/README.md). NULL when nothing covers addr. The result stays valid until
 * the next lookup, feed or free; its name and tier strings until perfmap__free. Not thread-safe.
 */
const struct perfmap_sym *perfmap__lookup(struct perfmap *pm, uint64_t addr, uint64_t time_ns);

/*
 * A hint before looking up several addresses one after another (naming a window's new frames):
 * fetch what their lookups, and reading the names they find, will read. A lookup in a million
 * ranges waits on two loads from memory in a row (its slot block, then its entry) and its caller
 * on a third (the name); fetched for PERFMAP_PREFETCH_MAX addresses at once, these waits overlap.
 * Give it at most that many addresses ahead of their lookups (more are fetched in groups, the
 * first ones evicted again by the last). Their lookups then start from what it found rather than
 * search again, until a lookup of an address not told or new code read ends the group. It changes
 * no answer and never fails.
 */
#define PERFMAP_PREFETCH_MAX 16
void perfmap__prefetch(struct perfmap *pm, const uint64_t *addrs, size_t n);

void perfmap__stats(const struct perfmap *pm, struct perfmap_stats *out);

/*
 * Keep only the ranges that cover one of these addresses (copied; any order, repeats allowed):
 * what a process sampled now and then needs, where the whole index would cost a range's entry
 * for every line. Every range covering an address is kept, so lookups there answer as the whole
 * index would; any other address finds nothing. Set before the first feed. 0, or -ENOMEM.
 */
int perfmap__set_filter(struct perfmap *pm, const uint64_t *addrs, size_t n);
/* Whether lookups answer for addr: always without a filter. */
int perfmap__filter_has(const struct perfmap *pm, uint64_t addr);
/* The filter's addresses, sorted and distinct, and their count in *n; NULL (and 0) without one. */
const uint64_t *perfmap__filter(const struct perfmap *pm, size_t *n);

/* Each code range takes PERFMAP_BYTES_PER_RANGE (what its index entry and names cost) from the
 * program's symbol budget (symbudget.h); past it ranges are dropped and counted (budget_capped).
 * What a perfmap took is given back when it is freed. */
#define PERFMAP_BYTES_PER_RANGE 180

/* The names every perfmap of the program shares (lib/nametab.h): distinct, references, bytes. */
struct nametab_stats;
void perfmap__shared_names(struct nametab_stats *out);

/* Perf map lines carry no time, so a line is ranked against overlapping jitdump records by the
 * CLOCK_MONOTONIC time it was fed (an upper bound of its load time). Tests and replays can pin
 * that time: now_ns != 0 is used for all later feeds, 0 returns to the clock. */
void perfmap__set_feed_time(struct perfmap *pm, uint64_t now_ns);

/* A jitdump turned on late (EnablePerfMap over the IPC) starts with the runtime's replay of every
 * method already jitted, stamped with the time of the replay, not of the code's load: records
 * stamped at or before until_ns (CLOCK_MONOTONIC; the enable's answer) are taken untimed, like
 * perf map lines, so that samples taken before the enable are named. 0: every record timed. */
void perfmap__set_jitdump_replay(struct perfmap *pm, uint64_t until_ns);

/* Split "name[Tier]" into name and tier in place-free form: returns the name length without the
 * suffix and points *tier, *tier_len at the tier inside the brackets (len 0 when none). */
size_t perfmap__split_tier(const char *name, size_t len, const char **tier, size_t *tier_len);

/* Offset of "[Assembly] Type::Method(args)" in a runtime method name, past "instance" and the
 * return type; 0 when the name has another shape (stubs). */
size_t perfmap__method_offset(const char *name, size_t len);

/* What a frame's display name ("[Assembly] Type::Method(args)") is: not a .NET method (native,
 * kernel, a stub), a method of the framework (the System.*, Microsoft.*, mscorlib and
 * netstandard assemblies: where the wait APIs are), or one of the application's. */
enum perfmap_frame { PERFMAP_FRAME_OTHER, PERFMAP_FRAME_FRAMEWORK, PERFMAP_FRAME_APP };
enum perfmap_frame perfmap__frame_kind(const char *name);

#endif /* SPANPROF_PERFMAP_H */
