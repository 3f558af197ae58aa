/* otlpgrpc.c: OTLP over gRPC without an RPC library: the length-prefixed message around the
 * request, and the answer read back: grpc-status and grpc-message from the headers or trailers,
 * the ExportProfilesServiceResponse and its partial_success. The HTTP/2 is libcurl's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "delivery.h"
#include "otlp.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

#define ANSWER_MAX	(64u << 10)	/* an inflated answer: a status and a message */

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse
	pb_response;
#define RESP_UNPACK	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__unpack
#define RESP_FREE	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__free_unpacked

int otlp_grpc__frame(uint8_t **buf, size_t *len, int compressed)
{
	uint8_t *b;
	size_t n;

	if (!buf || !len || (!*buf && *len))
		return -EINVAL;
	n = *len;
	if (n > 0xffffffffu)
		return -E2BIG;
	b = malloc(n + GRPC_FRAME_HDR);
	if (!b)
		return -ENOMEM;
	b[0] = compressed ? 1 : 0;
	b[1] = (uint8_t)(n >> 24);
	b[2] = (uint8_t)(n >> 16);
	b[3] = (uint8_t)(n >> 8);
	b[4] = (uint8_t)n;
	if (n)
		memcpy(b + GRPC_FRAME_HDR, *buf, n);
	free(*buf);
	*buf = b;
	*len = n + GRPC_FRAME_HDR;
	return 0;
}

int otlp_grpc__unframe(const uint8_t *b, size_t len, const uint8_t **msg, size_t *msg_len,
		       int *compressed)
{
	uint32_t n;

	if (len < GRPC_FRAME_HDR)
		return -EAGAIN;
	if (b[0] > 1)
		return -EINVAL;
	n = (uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 | b[4];
	if (len - GRPC_FRAME_HDR < n)
		return -EAGAIN;
	*msg = b + GRPC_FRAME_HDR;
	*msg_len = n;
	*compressed = b[0];
	return 0;
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* grpc-message is percent-encoded (the gRPC HTTP/2 protocol document); a broken %XX stays. */
static void pct_decode(const char *s, size_t n, char *out, size_t outlen)
{
	size_t w = 0;

	for (size_t i = 0; i < n && w + 1 < outlen; i++) {
		int c = (unsigned char)s[i];

		if (c == '%' && i + 2 < n && hexval((unsigned char)s[i + 1]) >= 0 &&
		    hexval((unsigned char)s[i + 2]) >= 0) {
			c = hexval((unsigned char)s[i + 1]) * 16 + hexval((unsigned char)s[i + 2]);
			i += 2;
		}
		out[w++] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
	}
	out[w] = 0;
}

/* The value of header line l (n bytes, no newline) when its name is name, trimmed; else NULL. */
static const char *value_of(const char *l, size_t n, const char *name, size_t *vlen)
{
	size_t k = strlen(name);

	if (n <= k || strncasecmp(l, name, k) || l[k] != ':')
		return NULL;
	l += k + 1;
	n -= k + 1;
	while (n && (*l == ' ' || *l == '\t'))
		l++, n--;
	while (n && (l[n - 1] == ' ' || l[n - 1] == '\t' || l[n - 1] == '\r'))
		n--;
	*vlen = n;
	return l;
}

int otlp_grpc__status(const char *headers, size_t len, char *msg, size_t msglen)
{
	const char *p = headers, *end = headers + len, *v;
	int status = -1;
	size_t vlen;

	if (msg && msglen)
		msg[0] = 0;
	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if ((v = value_of(p, n, "grpc-status", &vlen))) {
			status = -1;
			if (vlen && vlen <= 9 && strspn(v, "0123456789") >= vlen)
				status = (int)strtol(v, NULL, 10);
		} else if (msg && msglen && (v = value_of(p, n, "grpc-message", &vlen))) {
			pct_decode(v, vlen, msg, msglen);
		}
		p = nl ? nl + 1 : NULL;
	}
	return status;
}

const char *otlp_grpc__code_name(int code)
{
	static const char *const names[] = {
		"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
		"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
		"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
		"UNAUTHENTICATED",
	};

	return code >= 0 && code < (int)(sizeof(names) / sizeof(names[0])) ? names[code] :
									      "UNKNOWN_CODE";
}

int otlp_grpc__retryable(int code)
{
	switch (code) {
	case 1:		/* CANCELLED */
	case 4:		/* DEADLINE_EXCEEDED */
	case 8:		/* RESOURCE_EXHAUSTED */
	case 10:	/* ABORTED */
	case 11:	/* OUT_OF_RANGE */
	case 14:	/* UNAVAILABLE */
	case 15:	/* DATA_LOSS */
		return 1;
	default:
		return 0;
	}
}

/* gzip (what grpc-encoding: gzip means) of src into a malloc'd *out, at most ANSWER_MAX bytes. */
static int gunzip(const uint8_t *src, size_t n, uint8_t **out, size_t *out_len)
{
	z_stream zs;
	uint8_t *buf = malloc(ANSWER_MAX);
	int rc;

	if (!buf)
		return -ENOMEM;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK) {
		free(buf);
		return -ENOMEM;
	}
	zs.next_in = (uint8_t *)src;
	zs.avail_in = (uInt)n;
	zs.next_out = buf;
	zs.avail_out = ANSWER_MAX;
	rc = inflate(&zs, Z_FINISH);
	*out_len = zs.total_out;
	inflateEnd(&zs);
	if (rc != Z_STREAM_END) {
		free(buf);
		return -EINVAL;
	}
	*out = buf;
	return 0;
}

/* What an accepted request's answer adds: a partial success, or nothing. */
static void read_response(const struct delivery_answer *a, char *why, size_t whylen)
{
	const uint8_t *m;
	uint8_t *plain = NULL;
	size_t mlen;
	int compressed;
	pb_response *r;

	if (!a->body_len)
		return;	/* no message: nothing more to say (a proxy's trailers-only answer) */
	if (otlp_grpc__unframe(a->body, a->body_len, &m, &mlen, &compressed)) {
		snprintf(why, whylen, "accepted, but the answer is not one gRPC message%s",
			 a->body_truncated ? " (longer than read)" : "");
		return;
	}
	if (compressed && gunzip(m, mlen, &plain, &mlen)) {
		snprintf(why, whylen, "accepted, but the compressed answer does not inflate");
		return;
	}
	r = RESP_UNPACK(NULL, mlen, plain ? plain : m);
	free(plain);
	if (!r) {
		snprintf(why, whylen, "accepted, but the answer is not an ExportProfilesServiceResponse");
		return;
	}
	/* The specification: a partial success is not retried (the rejected data would be again). */
	if (r->partial_success && (r->partial_success->rejected_profiles ||
				   (r->partial_success->error_message &&
				    r->partial_success->error_message[0])))
		snprintf(why, whylen, "partial success: %lld profiles rejected: %.300s",
			 (long long)r->partial_success->rejected_profiles,
			 r->partial_success->error_message ? r->partial_success->error_message : "");
	RESP_FREE(r, NULL);
}

enum delivery_verdict otlp_grpc__judge(void *arg, const struct delivery_answer *a, char *why,
				       size_t whylen)
{
	char msg[320];
	int code = otlp_grpc__status(a->headers, a->headers_len, msg, sizeof(msg));

	(void)arg;
	if (code < 0) {
		/* Not a gRPC answer: a proxy or a plain HTTP server in the way. */
		snprintf(why, whylen, "HTTP %ld without a grpc-status: not a gRPC endpoint?",
			 a->http_code);
		return a->http_code == 429 || (a->http_code >= 502 && a->http_code <= 504) ?
			       DELIVERY_RETRY : DELIVERY_FAIL;
	}
	if (code) {
		snprintf(why, whylen, "gRPC %s (%d)%s%s", otlp_grpc__code_name(code), code,
			 msg[0] ? ": " : "", msg);
		return otlp_grpc__retryable(code) ? DELIVERY_RETRY : DELIVERY_FAIL;
	}
	read_response(a, why, whylen);
	return DELIVERY_OK;
}
