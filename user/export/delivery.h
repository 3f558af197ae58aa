/* delivery.h: one HTTP delivery path for the network exporters (Pyroscope now, OTLP later): a
 * byte-bounded queue, one worker thread posting with libcurl, retries with backoff. */
#ifndef SPANPROF_DELIVERY_H
#define SPANPROF_DELIVERY_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "exporter.h"

struct delivery;	/* thread-safe: submit, flush and stats may be called from any thread */

struct delivery_opts {
	const char *url;		/* the full URL, http:// or https:// */
	const char *content_type;	/* NULL: application/octet-stream */
	const char *const *headers;	/* extra headers, "Name: value" each */
	size_t n_headers;
	const char *basic_user;		/* HTTP basic auth (with basic_password) */
	const char *basic_password;
	const char *bearer_token;	/* Authorization: Bearer; not together with basic auth */
	const char *tenant;		/* X-Scope-OrgID, for multi-tenant Grafana backends */
	const char *ca_file;		/* PEM bundle that verifies the server; NULL: the system's */
	uint32_t timeout_ms;		/* bounds every attempt, connect to answer; 0: 10 s */
	size_t queue_max_bytes;		/* bodies waiting or in flight; 0: 64 MiB */
	uint32_t backoff_min_ms;	/* first retry delay; 0: 500 ms */
	uint32_t backoff_max_ms;	/* 0: 30 s */
	uint32_t retry_deadline_ms;	/* from enqueue; a request not delivered by then is dropped; 0: 5 min */
	const char *content_encoding;	/* Content-Encoding of every body as submitted (e.g. "gzip":
					 * the caller compresses); NULL: none sent */
};

/*
 * Checks the options and starts the worker. NULL with errno set and a one-line reason in err
 * (bad URL scheme, unreadable CA file, a header without ':', basic and bearer auth together ...).
 * Every string is copied.
 */
struct delivery *delivery__new(const struct delivery_opts *o, char *err, size_t errlen);

/*
 * Queues body (malloc'd; ownership passes to delivery in every case, error or not) for POSTing.
 * Never blocks on the network. enqueued_ns: CLOCK_MONOTONIC time the data was handed over (0:
 * now), the start of the latency the stats record. 0, or -ENOBUFS: it does not fit in the
 * queue's byte cap, counted dropped_queue_full. When full, the newest is dropped: the caller
 * learns at once which batch was lost, and the older ones, which are at the head being retried,
 * keep their place, so delivery resumes in order once the backend is back.
 */
int delivery__submit(struct delivery *d, uint8_t *body, size_t len, uint64_t enqueued_ns);

/*
 * Waits until the queue is empty or timeout_ms passes. Then what is still queued is dropped
 * (dropped_shutdown) and a request in flight is aborted. 0, or -ETIMEDOUT. The delivery stays
 * usable.
 */
int delivery__flush(struct delivery *d, uint32_t timeout_ms);

/* Counters so far (batches, split and dropped_encode are the exporter's and stay 0 here). */
void delivery__stats(const struct delivery *d, struct export_stats *out);

/* The last failed attempt's reason ("HTTP 400: {...}", "curl: ..."), "" if none; into buf. */
void delivery__last_error(const struct delivery *d, char *buf, size_t len);

/* Stops the worker (aborting a request in flight) and frees everything queued. NULL-safe. Call
 * delivery__flush first to give queued data a chance; free itself returns in bounded time. */
void delivery__free(struct delivery *d);

/*
 * The exporter every network backend is: an encoder turns a batch into one request body, the
 * delivery posts it. Embed it first in the encoder's own state, set d, encode (and destroy, if the
 * state needs more than free), then delivery__exporter_init. Its ops come from
 * DELIVERY_EXPORTER_OPS, so each backend names its own ops table.
 */
struct delivery_exporter {
	struct exporter ex;
	struct delivery *d;	/* owned */
	/* 0 with *body malloc'd (NULL: nothing to send this time) and *split set, or -errno. Runs
	 * on the exporting thread; lock mu for anything stats() reads. */
	int (*encode)(struct delivery_exporter *de, const struct export_batch *b, uint8_t **body,
		      size_t *len, uint64_t *split);
	void (*destroy)(struct delivery_exporter *de);	/* NULL: free(de) */
	pthread_mutex_t mu;
	uint64_t batches, split, dropped_encode;
};

int delivery_exporter__export(void *self, const struct export_batch *b);
int delivery_exporter__flush(void *self, uint32_t timeout_ms);
void delivery_exporter__stats(void *self, struct export_stats *out);
void delivery_exporter__free(void *self);
#define DELIVERY_EXPORTER_OPS                                                           \
	.export = delivery_exporter__export, .flush = delivery_exporter__flush,         \
	.stats = delivery_exporter__stats, .free = delivery_exporter__free
void delivery__exporter_init(struct delivery_exporter *de, const struct exporter_ops *ops);

#endif /* SPANPROF_DELIVERY_H */
