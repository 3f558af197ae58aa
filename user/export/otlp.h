/* otlp.h: the OpenTelemetry profiles exporter: a batch as one OTLP ExportProfilesServiceRequest
 * (opentelemetry-proto v1.10.0, profiles v1development), written to a file or sent over
 * OTLP/HTTP (http/protobuf) or OTLP/gRPC (a unary call over HTTP/2) through the shared delivery
 * path. */
#ifndef SPANPROF_OTLP_H
#define SPANPROF_OTLP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "delivery.h"
#include "exporter.h"

struct profile;

#define OTLP_PROFILES_PATH	"/v1development/profiles"	/* OTLP/HTTP, profiles signal */
#define OTLP_GRPC_PATH		"/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
#define OTLP_DEFAULT_ENDPOINT	"http://localhost:4318"
#define OTLP_DEFAULT_GRPC_ENDPOINT	"http://localhost:4317"
#define OTLP_DEFAULT_TIMEOUT_MS	10000u
#define OTLP_MAX_HEADERS	32

/* What one encode did, for tests, the file writer and the exporter's counters. */
struct otlp_encode_info {
	size_t resources;	/* ResourceProfiles written: one per series with samples */
	size_t series_empty;	/* series without samples: left out */
	size_t samples;		/* Sample messages of the CPU profiles */
	uint64_t total;		/* sum of their values */
	size_t off_samples;	/* Sample messages of the off-CPU profiles */
	uint64_t off_total_ns;	/* sum of their values */
	size_t linked;		/* samples with a Link */
	size_t strings, mappings, locations, functions, stacks, links, attributes;
				/* dictionary entries, each table's zero entry included */
	size_t raw_bytes;	/* the serialized request, before any compression */
};

/*
 * The whole batch as one serialized ExportProfilesServiceRequest in a malloc'd *out (gzip when
 * gzip is set): one dictionary for the request, one ResourceProfiles per series with samples
 * (resource attributes from the series labels: service_name -> service.name, namespace, pod,
 * container, node -> k8s.*.name; __name__ left out; others kept by name; service.name always
 * set), scope "spanprof", one Profile of sample type samples/count, period type
 * cpu/nanoseconds. One OTLP sample per profile sample, values = [count], no timestamps (the
 * engine aggregates). A profile with off-CPU time (profile_opts.off_cpu) adds a second Profile
 * in the same scope, sample type off_cpu/nanoseconds (the OpenTelemetry eBPF profiler's name),
 * one sample per profile sample with off-CPU time, values = [nanoseconds], the same attributes
 * and links. Sample labels: trace_id + span_id -> a Link (span_id alone, Pyroscope's
 * convention, -> a Link without a trace id); pid, tid, thread_name, process_name,
 * container_id -> process.pid, thread.id (integers), thread.name, process.executable.name,
 * container.id; the rest kept by name. Each location carries profile.frame.type (kernel, dotnet
 * or native). info may be NULL. 0, -EINVAL or -ENOMEM.
 */
int otlp__encode(const struct export_batch *b, int gzip, uint8_t **out, size_t *len,
		 struct otlp_encode_info *info);

/* One profile as the request above, into f, gzip when gzip is set; its service
 * (profile__service) is the resource's service.name. For `record -o FILE.otlp.pb`. 0 or -errno. */
int otlp__write(const struct profile *p, FILE *f, int gzip);

enum otlp_compression {
	OTLP_COMPRESSION_UNSET = 0,	/* the environment's, else gzip */
	OTLP_COMPRESSION_NONE,
	OTLP_COMPRESSION_GZIP,
};

enum otlp_protocol {
	OTLP_PROTOCOL_UNSET = 0,	/* the environment's, else http/protobuf */
	OTLP_PROTOCOL_HTTP_PROTOBUF,
	OTLP_PROTOCOL_GRPC,
};

/*
 * The exporter's settings. Flags win over the environment; what a flag leaves unset (NULL, 0)
 * comes from OTEL_EXPORTER_OTLP_PROFILES_<X>, else OTEL_EXPORTER_OTLP_<X>, else the default.
 */
struct otlp_opts {
	/* UNSET: _PROTOCOL (http/protobuf | grpc), else http/protobuf */
	enum otlp_protocol protocol;
	/* --otlp-url: a base URL gets /v1development/profiles appended; a URL with a path is used
	 * as given. NULL: $OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT as given, else
	 * $OTEL_EXPORTER_OTLP_ENDPOINT + /v1development/profiles, else http://localhost:4318/...
	 * gRPC: the scheme and host:port of the same (a path is ignored, as the OTLP/gRPC exporters
	 * do), + OTLP_GRPC_PATH; default http://localhost:4317. */
	const char *url;
	const char *const *headers;	/* "Name: value"; over the environment's of the same name */
	size_t n_headers;
	uint32_t timeout_ms;		/* 0: _TIMEOUT (ms), else 10 s */
	enum otlp_compression compression;	/* UNSET: _COMPRESSION (gzip|none), else gzip */
	const char *ca_file;		/* NULL: _CERTIFICATE, else the system's trust store */
	const char *client_cert;	/* mutual TLS; NULL: _CLIENT_CERTIFICATE */
	const char *client_key;		/* NULL: _CLIENT_KEY */
	int no_env;			/* ignore the environment (tests) */
	struct delivery_opts delivery;	/* queue and retries; url, content type, encoding, headers,
					 * timeout and CA are set from the above */
};

/* The settings resolved, for the exporter, the agent's start line and tests. */
struct otlp_config {
	enum otlp_protocol protocol;		/* never UNSET */
	char url[2048];
	char *headers[OTLP_MAX_HEADERS];	/* "Name: value", malloc'd */
	size_t n_headers;
	uint32_t timeout_ms;
	int gzip;
	char ca_file[1024];			/* "" for none */
	char client_cert[1024];			/* "" for none */
	char client_key[1024];
};

const char *otlp_protocol__name(enum otlp_protocol p);	/* "http/protobuf", "grpc" */

/*
 * Resolve o against getenv_fn (getenv when NULL; not consulted with no_env). 0, or -EINVAL with
 * a one-line reason in err (a bad URL scheme, a malformed OTEL_EXPORTER_OTLP_*_HEADERS entry, an
 * unknown protocol or compression, a timeout that is not a number, too many headers, a client
 * key without its certificate; unreadable files are found by otlp__new), -ENOMEM.
 * otlp_config__clear frees what it holds (NULL-safe, repeatable).
 */
int otlp__config(const struct otlp_opts *o, const char *(*getenv_fn)(const char *),
		 struct otlp_config *out, char *err, size_t errlen);
void otlp_config__clear(struct otlp_config *c);

/*
 * The exporter: export() encodes and queues one request per batch with samples for
 * POST {url} (Content-Type: application/x-protobuf, Content-Encoding: gzip unless turned off),
 * or with gRPC the request as one length-prefixed message (compressed flag and grpc-encoding:
 * gzip unless turned off) in a unary call over HTTP/2 (otlp_grpc__judge reads the answer).
 * NULL with errno and a one-line reason in err on a bad setting. cfg_out, when not NULL,
 * receives the resolved settings (the caller clears it). Free with e->ops->free(e->self).
 */
struct exporter *otlp__new(const struct otlp_opts *o, struct otlp_config *cfg_out, char *err,
			   size_t errlen);

/* Encode counts summed over every export so far. 0 or -EINVAL (not an OTLP exporter). */
int otlp__encode_totals(const struct exporter *e, struct otlp_encode_info *out);

/* ---- gRPC's wire format (otlpgrpc.c): length-prefixed messages and status trailers ----------- */

#define GRPC_FRAME_HDR	5	/* compressed flag, then the message length big-endian */

/* Puts the 5-byte prefix in front of the len bytes at *buf (malloc'd; moved, the old pointer
 * freed on success). 0, -ENOMEM, or -E2BIG for a message over 4 GiB - 1. */
int otlp_grpc__frame(uint8_t **buf, size_t *len, int compressed);

/* The first message of a framed body: 0 with *msg (into b), *msg_len, *compressed; -EAGAIN when
 * b ends before the message does; -EINVAL for a flag other than 0 or 1. */
int otlp_grpc__unframe(const uint8_t *b, size_t len, const uint8_t **msg, size_t *msg_len,
		       int *compressed);

/* grpc-status in header lines ("name: value\n" each, names in any case, trailers last: the last
 * one wins), with grpc-message percent-decoded into msg (control bytes as spaces; may be NULL).
 * The code 0..16 and over, or -1 when absent or not a number. */
int otlp_grpc__status(const char *headers, size_t len, char *msg, size_t msglen);

const char *otlp_grpc__code_name(int code);	/* "UNAVAILABLE", ..., "code 42" is "UNKNOWN_CODE" */

/* Worth another try (OTLP exporter specification): CANCELLED, DEADLINE_EXCEEDED,
 * RESOURCE_EXHAUSTED, ABORTED, OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS. */
int otlp_grpc__retryable(int code);

/*
 * The delivery judge of a gRPC answer: grpc-status 0 delivered (a partial_success in the
 * ExportProfilesServiceResponse is said in why, not retried); a retryable code retried; any
 * other, or no grpc-status at all, refused for good with "gRPC <NAME> (<code>): <message>".
 * Without grpc-status, an HTTP 429/502/503/504 (a proxy in front) is retried.
 */
enum delivery_verdict otlp_grpc__judge(void *arg, const struct delivery_answer *a, char *why,
				       size_t whylen);

#endif /* SPANPROF_OTLP_H */
