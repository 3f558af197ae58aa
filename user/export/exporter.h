/* exporter.h: where a window's profiles go. One small interface for every destination: files,
 * a directory of windows, Pyroscope (and OTLP). */
#ifndef SPANPROF_EXPORTER_H
#define SPANPROF_EXPORTER_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"

struct profile;
struct pf_label;

/* One profile and the labels of its series (service_name, __name__, namespace, pod, ...). */
struct export_series {
	const struct pf_label *labels;
	size_t n_labels;
	const struct profile *prof;
};

/* Everything one window produced: one series per target (service). */
struct export_batch {
	int64_t start_ns;	/* wall clock (CLOCK_REALTIME, ns since the epoch) of the window */
	int64_t end_ns;
	const struct export_series *series;
	size_t n;
};

/* Counters every exporter keeps; what does not apply stays 0. */
struct export_stats {
	uint64_t batches;	/* export() calls accepted */
	uint64_t sent_ok;	/* requests (or files) delivered */
	uint64_t retried;	/* attempts repeated after a retryable failure */
	uint64_t failed;	/* given up: a non-retryable answer (4xx other than 429) */
	uint64_t dropped_queue_full;	/* did not fit in the bounded queue */
	uint64_t dropped_shutdown;	/* still queued when the flush deadline passed */
	uint64_t dropped_expired;	/* retried past the retry deadline */
	uint64_t dropped_encode;	/* could not be encoded (out of memory, too large) */
	uint64_t split;		/* profiles split to stay within a backend's limits */
	uint64_t queue_bytes;	/* bytes waiting now */
	uint64_t bytes_sent;
	uint64_t last_latency_ns;	/* from export() to the backend's answer, last request */
	uint64_t max_latency_ns;
	struct metrics_hist latency;	/* the same, every request (seconds) */
};

struct exporter_ops {
	const char *name;	/* "file", "dir", "pyroscope", "otlp" */
	/* Encode and hand over; never blocks on the network. 0 or -errno (counted by the exporter). */
	int (*export)(void *self, const struct export_batch *b);
	/* Wait until everything queued is delivered or timeout_ms passes; what is left is counted
	 * as dropped_shutdown. 0, or -ETIMEDOUT. */
	int (*flush)(void *self, uint32_t timeout_ms);
	void (*stats)(void *self, struct export_stats *out);
	void (*free)(void *self);	/* NULL-safe on self */
	/* The last failure's one-line reason, "" if none (NULL op: the exporter keeps none). */
	void (*last_error)(void *self, char *buf, size_t len);
};

struct exporter {
	const struct exporter_ops *ops;
	void *self;
};

#endif /* SPANPROF_EXPORTER_H */
