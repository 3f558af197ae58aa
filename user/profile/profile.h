/* profile.h: the in-memory profile (pprof's model) that every writer reads. */
#ifndef SPANPROF_PROFILE_H
#define SPANPROF_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Ids are indexes into the profile's tables; 0 means "none" everywhere, so a real id starts at 1
 * (pprof ids are 1-based too and string 0 is ""). Every interning call deduplicates.
 */
struct profile;	/* not thread-safe: one thread at a time (the caller locks) */

struct pf_mapping {
	uint64_t start;
	uint64_t limit;
	uint64_t offset;	/* file offset of start */
	const char *filename;	/* e.g. "/usr/lib/x86_64-linux-gnu/libc.so.6", "[kernel.kallsyms]", "[jit]" */
	const char *build_id;	/* hex, or NULL */
	int has_functions;	/* every location in it is symbolized */
	int is_jit;		/* .NET JIT code (from perf map / jitdump) */
};

struct pf_label {
	const char *key;
	const char *value;
	/* The id of one span or trace (unbounded values): the first thing a full aggregation
	 * window drops, so the sample keeps its stack (aggregate__set_max_stacks). */
	int identity;
};

struct profile_opts {
	uint64_t period_ns;	/* cpu/nanoseconds per sample (1e9 / frequency) */
	int64_t time_ns;	/* wall-clock start, ns since the epoch */
	int64_t duration_ns;
	int off_cpu;		/* samples carry off-CPU time too: pprof gets a third sample type,
				 * off_cpu/nanoseconds */
	int show_off_cpu;	/* folded and SVG writers show off-CPU time, not CPU samples */
};

/* Constructors return NULL and set errno. */
struct profile *profile__new(const struct profile_opts *opts);
void profile__free(struct profile *p);	/* NULL-safe */
/* Wall-clock start and duration of the recording, known only when it ends. */
void profile__set_times(struct profile *p, int64_t time_ns, int64_t duration_ns);
/*
 * The service every sample belongs to (a recording of one service; NULL or "": none). The pprof
 * writer gives every sample a service_name label (the series label Pyroscope takes from sample
 * labels when an upload names no service), the OTLP writer its resource service.name. 0 or
 * -errno. profile__service: NULL when none.
 */
#define PROFILE_SERVICE_LABEL	"service_name"
int profile__set_service(struct profile *p, const char *name);
const char *profile__service(const struct profile *p);

/*
 * Interning; each returns an id >= 1, or 0 on failure (errno: ENOMEM; EINVAL for a NULL
 * function name or an id that does not exist). NULL strings other than the name mean "".
 */
uint32_t profile__mapping(struct profile *p, const struct pf_mapping *m);
uint32_t profile__function(struct profile *p, const char *name, const char *system_name,
			   const char *filename);
/* Deduplicated on (mapping_id, address, function_id). mapping_id or function_id may be 0. */
uint32_t profile__location(struct profile *p, uint32_t mapping_id, uint64_t address,
			   uint32_t function_id);

/*
 * Add count samples of a stack. locs is leaf first (pprof order). Samples with the same
 * stack and the same labels (same keys and values, any order) merge. Returns 0 or -errno.
 * -EINVAL: a location id that does not exist, a NULL or "" key, a NULL value ("" is a value).
 * An empty stack is allowed; count 0 adds nothing. Nothing is added on error.
 */
int profile__add(struct profile *p, const uint32_t *locs, size_t n_locs,
		 const struct pf_label *labels, size_t n_labels, uint64_t count);
/* The same with off_ns nanoseconds of off-CPU time too (count may then be 0). */
int profile__add_values(struct profile *p, const uint32_t *locs, size_t n_locs,
			const struct pf_label *labels, size_t n_labels, uint64_t count,
			uint64_t off_ns);

/*
 * Read access for writers, summaries and tests. Pointers in views stay valid until the next
 * call that changes p. Labels in a view are deduplicated, in one canonical order (by interned
 * key, then value), not necessarily the order they were added in.
 */
struct pf_sample_view {
	const uint32_t *locs;	/* leaf first */
	size_t n_locs;
	const struct pf_label *labels;
	size_t n_labels;
	uint64_t count;
	uint64_t off_ns;	/* off-CPU nanoseconds (profile_opts.off_cpu) */
	uint32_t stack_id;	/* equal stacks (same locs) have equal stack ids */
};
size_t profile__sample_count(const struct profile *p);	/* distinct samples */
uint64_t profile__total(const struct profile *p);		/* sum of counts */
uint64_t profile__total_off_ns(const struct profile *p);	/* sum of off-CPU ns */
/* What the folded and SVG writers show for a sample: its count, or its off-CPU ns
 * (profile_opts.show_off_cpu). */
uint64_t profile__shown_value(const struct profile *p, const struct pf_sample_view *s);
int profile__sample(const struct profile *p, size_t i, struct pf_sample_view *out);
/* The function name; unsymbolized: "<mapping basename>+0x<file offset>" or "0x<address>". NULL: bad id. */
const char *profile__location_name(const struct profile *p, uint32_t loc_id);
const char *profile__label(const struct pf_sample_view *s, const char *key); /* NULL if absent */

/*
 * Table access for writers. Strings run 0..string_count-1 (0 is ""); mappings, functions and
 * locations run 1..count. The getters return 0, or -ENOENT for an id out of range.
 */
const struct profile_opts *profile__opts(const struct profile *p);
size_t profile__string_count(const struct profile *p);
const char *profile__string(const struct profile *p, uint32_t id);	/* NULL if out of range */
uint32_t profile__string_id(const struct profile *p, const char *s);	/* 0 if absent or "" */
size_t profile__mapping_count(const struct profile *p);
int profile__mapping_get(const struct profile *p, uint32_t id, struct pf_mapping *out);
struct pf_function_view {
	const char *name;
	const char *system_name;	/* "" when not given */
	const char *filename;		/* "" when not given */
};
size_t profile__function_count(const struct profile *p);
int profile__function_get(const struct profile *p, uint32_t id, struct pf_function_view *out);
struct pf_location_view {
	uint32_t mapping_id;	/* 0: none */
	uint64_t address;
	uint32_t function_id;	/* 0: unsymbolized */
};
size_t profile__location_count(const struct profile *p);
int profile__location_get(const struct profile *p, uint32_t id, struct pf_location_view *out);

/*
 * The n functions with the most self samples, optionally only over samples whose label key
 * equals value (key NULL: all samples). Fills names/counts, returns how many were filled.
 * Functions are grouped by display name; total counts a name once per sample (recursion).
 * Ties: more total first, then by name. value NULL with a key: any value of that key.
 * Returns 0 with errno ENOMEM when out of memory.
 */
struct pf_top {
	const char *name;
	uint64_t self;
	uint64_t total;
};
size_t profile__top(const struct profile *p, const char *key, const char *value,
		    struct pf_top *out, size_t n);
/* The same by off-CPU nanoseconds (off_cpu set) instead of sample counts. */
size_t profile__top_values(const struct profile *p, const char *key, const char *value, int off_cpu,
			   struct pf_top *out, size_t n);

/* Writers. Each returns 0 or -errno. */
int pprof__write(const struct profile *p, FILE *f);	/* gzip-compressed profile.proto */
/*
 * Samples [first_sample, first_sample + n_samples) (indexed as profile__sample()) as one pprof
 * in a malloc'd *out of *len bytes, gzip-compressed when gzip is set. The tables hold only what
 * those samples use, renumbered densely from 1 in table order, so a slice of a big profile stays
 * small. -EINVAL: a range past the end; -ENOMEM.
 */
int pprof__encode(const struct profile *p, size_t first_sample, size_t n_samples, int gzip,
		  uint8_t **out, size_t *len);
/*
 * Which values a pprof carries: all (samples/count and cpu/nanoseconds, then off_cpu/nanoseconds
 * when the profile has off-CPU time), the CPU ones only, or the off-CPU time only (one sample type,
 * off_cpu/nanoseconds, and no period: it is measured, not sampled). With CPU or OFF_CPU, a sample
 * without a value of that kind is left out.
 */
enum pprof_values { PPROF_VALUES_ALL, PPROF_VALUES_CPU, PPROF_VALUES_OFF_CPU };
/* pprof__encode with the values chosen; *n_written (may be NULL): the samples written. */
int pprof__encode_values(const struct profile *p, size_t first_sample, size_t n_samples,
			 enum pprof_values which, int gzip, uint8_t **out, size_t *len,
			 size_t *n_written);
/* Folded stacks, root first: "root_label_value;frame;...;leaf count\n". root_key may be NULL. */
int folded__write(const struct profile *p, FILE *f, const char *root_key);
/* Self-contained interactive SVG flame graph; root_key as for folded. */
int flamegraph__write(const struct profile *p, FILE *f, const char *title, const char *root_key);

#endif /* SPANPROF_PROFILE_H */
