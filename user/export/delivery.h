/* delivery.h: one HTTP delivery path for the network exporters (Pyroscope, OTLP over HTTP or
 * gRPC): a byte-bounded queue, one worker thread posting with libcurl, retries with backoff. */
#ifndef SPANPROF_DELIVERY_H
#define SPANPROF_DELIVERY_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "exporter.h"

struct delivery;	/* thread-safe: submit, flush and stats may be called from any thread */

#define DELIVERY_BODY_KEEP	4096	/* bytes of an answer's body kept for the judge */
#define DELIVERY_HEADERS_KEEP	8192	/* bytes of its header and trailer lines */

/* One completed exchange, for a judge. */
struct delivery_answer {
	long http_code;
	int http2;			/* the answer came over HTTP/2 */
	const char *headers;		/* header then trailer lines, each ending in "\n" (no "\r"), the
					 * status line left out; lines past DELIVERY_HEADERS_KEEP are lost */
	size_t headers_len;
	const uint8_t *body;		/* its first DELIVERY_BODY_KEEP bytes */
	size_t body_len;
	int body_truncated;
};

enum delivery_verdict { DELIVERY_OK, DELIVERY_RETRY, DELIVERY_FAIL };

/* Decides what an answer means when plain HTTP status codes do not say it all (gRPC answers 200
 * and puts its status in the trailers). why: a one-line reason, kept as last_error even with
 * DELIVERY_OK (a partial success). Runs on the worker thread. */
typedef enum delivery_verdict (*delivery_judge_fn)(void *arg, const struct delivery_answer *a,
						   char *why, size_t whylen);

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
	const char *client_cert;	/* PEM client certificate for mutual TLS (may hold the key) */
	const char *client_key;		/* its PEM private key; needs client_cert */
	int http2;			/* HTTP/2 only: prior knowledge on http://, ALPN h2 on https://;
					 * an answer in HTTP/1 fails for good */
	delivery_judge_fn judge;	/* NULL: 2xx delivered, 429 and 5xx retried, others failed */
	void *judge_arg;
	const char *name;		/* in log lines ("otlp"); NULL: "delivery" */
};

/*
 * Checks the options and starts the worker. NULL with errno set and a one-line reason in err
 * (bad URL scheme, unreadable CA, client certificate or key file, a key without a certificate,
 * a header without ':', basic and bearer auth together, HTTP/2 without libcurl support ...).
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

/* The last failed attempt's reason ("HTTP 400: {...}", "curl: ...", "gRPC UNAVAILABLE: ..."),
 * "" if none; into buf. A refusal that is not retried is also written to stderr, once per
 * distinct reason a minute. */
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
void delivery_exporter__last_error(void *self, char *buf, size_t len);
#define DELIVERY_EXPORTER_OPS                                                           \
	.export = delivery_exporter__export, .flush = delivery_exporter__flush,         \
	.stats = delivery_exporter__stats, .free = delivery_exporter__free,             \
	.last_error = delivery_exporter__last_error
void delivery__exporter_init(struct delivery_exporter *de, const struct exporter_ops *ops);

#endif /* SPANPROF_DELIVERY_H */
