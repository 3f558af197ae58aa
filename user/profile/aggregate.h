/* aggregate.h: samples -> counts, cut into windows. A window holds (process, label set, stack)
 * -> count and is built into one profile per target, then freed; names live elsewhere. */
#ifndef SPANPROF_AGGREGATE_H
#define SPANPROF_AGGREGATE_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

/* A frame as a profile needs it, from whoever names frames. */
struct agg_frame {
	const char *name;
	const char *system_name;	/* NULL: none */
	uint64_t address;
	int has_mapping;
	struct pf_mapping mapping;
};

struct agg_window;
struct aggregator;

/*
 * Constructor: the first window covers [0, first_end_ns) of the sample clock; each later one
 * interval_ns. first_end_ns UINT64_MAX: one window for ever (record). NULL and errno on failure.
 */
struct aggregator *aggregate__new(uint64_t first_end_ns, uint64_t interval_ns);
void aggregate__free(struct aggregator *a);	/* NULL-safe, frees the open windows */
/* At most max distinct stacks (and label sets) per window (0: no cap). Past it a sample keeps its
 * stack and its labels but the identity ones (span and trace ids), in up to max / 4 more; past
 * that it is counted in its process's one [truncated] stack, without labels: counted, never
 * dropped. */
void aggregate__set_max_stacks(struct aggregator *a, uint32_t max);

/* The frame id of the [truncated] stack's one frame; the frame source is not asked about it. */
#define AGG_TRUNCATED_FRAME UINT32_MAX

/*
 * Count one sample at time_ns (the sampler's clock) in the window it belongs to: the open one,
 * or the next one when time_ns is at or past the open window's end (a sample drained late is
 * never counted in the wrong window, nor in two). frames are leaf first, as the frame source
 * numbers them; labels are copied. 0 or -errno (-ENOMEM; nothing counted).
 */
int aggregate__add(struct aggregator *a, uint64_t time_ns, uint32_t proc, const uint32_t *frames,
		   size_t n_frames, const struct pf_label *labels, size_t n_labels);

/*
 * The same for an off-CPU block of off_ns nanoseconds (its wake-up at time_ns): added to the
 * entry's off-CPU time, not to its sample count (nor to the window's samples). 0 or -errno.
 */
int aggregate__add_off_cpu(struct aggregator *a, uint64_t time_ns, uint32_t proc,
			   const uint32_t *frames, size_t n_frames, const struct pf_label *labels,
			   size_t n_labels, uint64_t off_ns);

/*
 * Close the open window and return it (the caller frees it); the next one opens. Call once every
 * sample before its end has been added. NULL on allocation failure (the window stays open).
 */
struct agg_window *aggregate__cut(struct aggregator *a);
/* The open window's start and end (sample clock). */
uint64_t aggregate__window_start(const struct aggregator *a);
uint64_t aggregate__window_end(const struct aggregator *a);
/* Samples in the open windows (the one to cut next and the one after it, which a sample past the
 * first one's end goes to): a last flush cuts until this is 0. */
uint64_t aggregate__open_samples(const struct aggregator *a);
/* Memory the open windows hold. */
uint64_t aggregate__open_bytes(const struct aggregator *a);

struct agg_window_info {
	uint64_t start_ns, end_ns;	/* sample clock */
	uint64_t samples;	/* sum of counts */
	uint64_t stacks;	/* distinct (process, labels, stack) */
	uint64_t late;		/* samples past the next window's end, counted in it anyway */
	uint64_t truncated;	/* samples past the stack cap, in the [truncated] stacks */
	uint64_t ids_dropped;	/* samples past it that kept their stack without span/trace ids */
	uint64_t bytes;		/* memory held */
	uint64_t off_blocks;	/* off-CPU blocks added, and their nanoseconds */
	uint64_t off_ns;
};
void aggregate__info(const struct agg_window *w, struct agg_window_info *out);

/* Slots that looking each of w's stacks, label sets and entries up once visits: what stacks or
 * labels forged to collide would cost (tests). */
uint64_t aggregate__window_probes(const struct agg_window *w);

/* Whether process proc has samples in w (so its frames must outlive w). */
int aggregate__uses_proc(const struct agg_window *w, uint32_t proc);

/* Frame source and target choice for aggregate__build. */
struct agg_sink {
	/* Name frame id of process proc; 0 or -errno. */
	int (*frame)(void *arg, uint32_t proc, uint32_t frame, struct agg_frame *out);
	/* Profile index for samples of proc (0 .. n_profiles-1), or -1 to leave them out. */
	int (*target)(void *arg, uint32_t proc);
	void *arg;
};

/*
 * Add w's samples to profiles[target]. Returns the number of samples added, or -errno. Samples a
 * profile refuses (a label no writer could encode) are counted in *refused, samples of processes
 * the target leaves out in *left_out; every sample of w is added or counted.
 */
int64_t aggregate__build(const struct agg_window *w, const struct agg_sink *sink,
			 struct profile **profiles, size_t n_profiles, uint64_t *refused,
			 uint64_t *left_out);

void aggregate__window_free(struct agg_window *w);	/* NULL-safe */

#endif /* SPANPROF_AGGREGATE_H */
