/* metrics.h: the agent's Prometheus endpoint (/metrics, /healthz on libmicrohttpd) and a builder
 * for the text exposition format it serves. */
#ifndef SPANPROF_METRICS_H
#define SPANPROF_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define METRICS_STALE_NS_DEFAULT	(30ull * 1000000000ull)

/*
 * The HTTP side. The agent's loop owns every counter; the server thread only ever sees the last
 * text handed to metrics__publish() and the last heartbeat time, so nothing the loop owns is
 * touched from another thread.
 */
struct metrics_server;

struct metrics_opts {
	const char *addr;	/* HOST:PORT: "127.0.0.1:9090", "0.0.0.0:9090", "[::1]:9090", ":9090"
				 * (every address, IPv6 and IPv4); port 0 picks a free port */
	uint64_t stale_ns;	/* /healthz answers 503 once the last heartbeat is older; 0: 30 s */
	unsigned max_conns;	/* simultaneous connections; 0: 32 */
	unsigned timeout_s;	/* an idle connection is closed after this; 0: 10 s */
};

/* Listen on addr with the defaults. NULL with a one-line reason in err (bad address, port in
 * use, ...) and errno set. */
struct metrics_server *metrics__start(const char *addr, char *err, size_t errlen);
struct metrics_server *metrics__start_opts(const struct metrics_opts *o, char *err, size_t errlen);

/* The port actually bound (the chosen one when the address asked for port 0). */
int metrics__port(const struct metrics_server *s);

/* Replace what GET /metrics serves with a copy of text[0..len). 0 or -ENOMEM (the previous text
 * stays). */
int metrics__publish(struct metrics_server *s, const char *text, size_t len);

/* The loop is alive at now_mono_ns (CLOCK_MONOTONIC, as now_ns()). Lock-free. */
void metrics__heartbeat(struct metrics_server *s, uint64_t now_mono_ns);

/* Close the listener and every connection, waiting for the server thread. NULL-safe. */
void metrics__stop(struct metrics_server *s);

/*
 * The exposition builder (text format 0.0.4). Samples are grouped per family whatever the order of
 * the calls, each family gets its # HELP / # TYPE lines once, names are checked, label values
 * and help texts escaped (backslash, double quote, newline) and invalid UTF-8 replaced with
 * U+FFFD, so promtool and Prometheus accept the result. Duplicate series (same name and labels
 * twice) are the caller's to avoid.
 */
struct metrics_buf;

struct metrics_buf *metrics_buf__new(void);	/* NULL and errno on failure */
void metrics_buf__reset(struct metrics_buf *b);	/* empty it for the next round (keeps the output buffer) */
void metrics_buf__free(struct metrics_buf *b);	/* NULL-safe */

/*
 * Add one sample. name: [a-zA-Z_:][a-zA-Z0-9_:]*, ending in _total for a counter and only for a
 * counter (promtool refuses either mistake; it also lints camelCase, ':' and non-base units such
 * as _milliseconds, which are left to the caller). help: required on a family's first sample,
 * ignored (may be NULL) on later ones. labels: NULL, or a NULL-terminated list of name, value
 * pairs, e.g. (const char *[]){"service", svc, "pid", pid, NULL}; label names are
 * [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__", each at most once. A counter's value must be
 * >= 0. 0; -EINVAL for a bad name, help, label or value, or a name already used with the other
 * type (nothing is written); -ENOMEM (then metrics_buf__text() fails until reset).
 */
int metrics_buf__counter(struct metrics_buf *b, const char *name, const char *help,
			 const char *const *labels, double value);
int metrics_buf__gauge(struct metrics_buf *b, const char *name, const char *help,
		       const char *const *labels, double value);

/*
 * A histogram of seconds with fixed buckets, the same for every histogram (1 ms to 60 s), so that
 * observing needs no setup: a zeroed struct is empty. Not thread-safe: the owner's lock guards it.
 */
#define METRICS_HIST_BOUNDS { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, \
			      10, 30, 60 }
#define METRICS_HIST_BUCKETS 15

struct metrics_hist {
	uint64_t counts[METRICS_HIST_BUCKETS + 1];	/* per bucket (not cumulative); last: > 60 s */
	uint64_t count;
	double sum;
};

static inline void metrics_hist__observe(struct metrics_hist *h, double seconds)
{
	static const double bounds[METRICS_HIST_BUCKETS] = METRICS_HIST_BOUNDS;
	int i = 0;

	while (i < METRICS_HIST_BUCKETS && !(seconds <= bounds[i]))
		i++;
	h->counts[i]++;
	h->count++;
	h->sum += seconds;
}

/* Add a histogram family's series: name_bucket{labels..., le} (cumulative, up to le="+Inf"),
 * name_sum and name_count. name must not end in _total, _bucket, _sum or _count, and labels must
 * not have le. Returns as metrics_buf__counter. */
int metrics_buf__histogram(struct metrics_buf *b, const char *name, const char *help,
			   const char *const *labels, const struct metrics_hist *h);

/*
 * The standard process metrics of this process, as Prometheus's client libraries give them, from
 * /proc/self: process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_start_time_seconds, process_open_fds, process_max_fds.
 * 0, or the first error of the adds (one unreadable file leaves out its metrics only).
 */
int metrics_buf__process(struct metrics_buf *b);

/* The exposition so far, NUL-terminated, owned by b and valid until the next call on b; *len
 * (if not NULL) its length. NULL with errno ENOMEM if an allocation failed since the last reset. */
const char *metrics_buf__text(struct metrics_buf *b, size_t *len);

#endif /* SPANPROF_METRICS_H */
