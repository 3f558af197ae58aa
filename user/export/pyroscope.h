/* pyroscope.h: the Grafana Pyroscope exporter: each batch as one push.v1 PushRequest, POSTed over
 * the Connect protocol (what Grafana Alloy's pyroscope.write sends). */
#ifndef SPANPROF_PYROSCOPE_H
#define SPANPROF_PYROSCOPE_H

#include <stddef.h>
#include <stdint.h>

#include "delivery.h"
#include "exporter.h"

/* Pyroscope's default ingestion limits (distributor validation), checked against 1.x. */
#define PYROSCOPE_MAX_PROFILE_BYTES	(4u << 20)	/* uncompressed pprof */
#define PYROSCOPE_MAX_SAMPLES		16000u		/* pprof samples in one profile */
#define PYROSCOPE_MAX_LABEL_NAMES	30u		/* per series */
#define PYROSCOPE_MAX_NAME_LEN		1024u
#define PYROSCOPE_MAX_VALUE_LEN		2048u

struct pyroscope_opts {
	const char *url;		/* Pyroscope's base URL, e.g. http://pyroscope:4040 */
	struct delivery_opts delivery;	/* auth, tenant, TLS, queue, retries; url and
					 * content_type are ignored (set from url) */
	size_t max_profile_bytes;	/* a tenant's own limits; 0: the defaults above */
	size_t max_samples;
};

/* What one encode did, for tests and the exporter's counters. */
struct pyroscope_encode_info {
	size_t series;		/* RawProfileSeries written */
	size_t series_empty;	/* series without samples: not sent */
	size_t raw_samples;	/* RawSamples (one pprof each) written */
	size_t profiles_split;	/* profiles cut into more than one RawSample to fit the limits */
	size_t samples;		/* pprof samples written, over every RawSample */
	size_t samples_too_big;	/* samples over the size limit on their own: not sent */
	size_t labels_renamed;	/* names with characters outside [a-zA-Z0-9_] or a leading digit */
	size_t labels_truncated;	/* names over 1024 or values over 2048 bytes, cut */
	size_t labels_dropped;	/* beyond 30 names, duplicate names, empty names or values */
	size_t labels_added;	/* __name__ (process_cpu) or service_name (unknown) supplied */
};

/*
 * The whole batch as one serialized PushRequest in a malloc'd *out: one RawProfileSeries per
 * series with samples, its labels cleaned to Pyroscope's rules (__name__ and service_name
 * first), one RawSample per gzip pprof, a profile over the default limits split into several
 * RawSamples of the same series, each sample in exactly one. Fresh random (UUID v4) ids.
 * info may be NULL. 0, -EINVAL or -ENOMEM.
 */
int pyroscope__encode(const struct export_batch *b, uint8_t **out, size_t *len,
		      struct pyroscope_encode_info *info);

/*
 * The exporter: export() encodes and queues the PushRequest for
 * POST {url}/push.v1.PusherService/Push (Content-Type: application/proto,
 * Connect-Protocol-Version: 1). NULL with errno and a one-line reason in err on a bad option.
 * Free it with e->ops->free(e->self).
 */
struct exporter *pyroscope__new(const struct pyroscope_opts *o, char *err, size_t errlen);

/* Label and split counts summed over every export so far, for the agent's report. 0 or -EINVAL
 * (not a Pyroscope exporter). */
int pyroscope__encode_totals(const struct exporter *e, struct pyroscope_encode_info *out);

#endif /* SPANPROF_PYROSCOPE_H */
