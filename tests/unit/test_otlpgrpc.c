/* test_otlpgrpc.c: OTLP over gRPC on bytes: the message framing, the status trailers, the
 * answer judged (partial success, retryable and permanent codes), and the exporter's refusal of
 * client certificate files it cannot read. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <cmocka.h>

#include "otlp.h"
#include "testutil.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

static void test_otlp_grpc_frame(void **state)
{
	uint8_t *b = malloc(3), big[300];
	size_t len = 3, mlen;
	const uint8_t *m;
	int comp;
	const uint8_t want[] = { 0, 0, 0, 0, 3, 'a', 'b', 'c' };
	const uint8_t hdr300[] = { 1, 0, 0, 1, 44 };

	memcpy(b, "abc", 3);
	assert_int_equal(otlp_grpc__frame(&b, &len, 0), 0);
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(b, want, sizeof(want));
	assert_int_equal(otlp_grpc__unframe(b, len, &m, &mlen, &comp), 0);
	assert_int_equal(mlen, 3);
	assert_int_equal(comp, 0);
	assert_memory_equal(m, "abc", 3);
	/* a message cut short, a header cut short, a flag that is neither */
	assert_int_equal(otlp_grpc__unframe(b, len - 1, &m, &mlen, &comp), -EAGAIN);
	assert_int_equal(otlp_grpc__unframe(b, 4, &m, &mlen, &comp), -EAGAIN);
	b[0] = 2;
	assert_int_equal(otlp_grpc__unframe(b, len, &m, &mlen, &comp), -EINVAL);
	free(b);

	/* the length is big-endian; compressed flag 1 */
	b = malloc(sizeof(big));
	memset(b, 7, sizeof(big));
	len = sizeof(big);
	assert_int_equal(otlp_grpc__frame(&b, &len, 1), 0);
	assert_memory_equal(b, hdr300, sizeof(hdr300));
	assert_int_equal(otlp_grpc__unframe(b, len, &m, &mlen, &comp), 0);
	assert_int_equal(mlen, 300);
	assert_int_equal(comp, 1);
	free(b);

	/* an empty message: a zero length */
	b = NULL;
	len = 0;
	assert_int_equal(otlp_grpc__frame(&b, &len, 0), 0);
	assert_int_equal(len, 5);
	assert_int_equal(otlp_grpc__unframe(b, len, &m, &mlen, &comp), 0);
	assert_int_equal(mlen, 0);
	free(b);
}

static void test_otlp_grpc_status(void **state)
{
	/* headers, then the trailers: the trailers' status is the answer's */
	const char trailers[] = "content-type: application/grpc\n"
				"grpc-accept-encoding: identity\n"
				"Grpc-Status: 14\n"
				"grpc-message: no%20backend%0Ahere%zz\n";
	const char only_ok[] = "content-type: application/grpc\ngrpc-status:0\n";
	const char none[] = "content-type: text/html\n";
	const char junk[] = "grpc-status: 1x\n";
	const char prefix[] = "grpc-status-details-bin: AAAA\n";
	char msg[64];

	assert_int_equal(otlp_grpc__status(trailers, strlen(trailers), msg, sizeof(msg)), 14);
	assert_string_equal(msg, "no backend here%zz");
	assert_int_equal(otlp_grpc__status(only_ok, strlen(only_ok), msg, sizeof(msg)), 0);
	assert_string_equal(msg, "");
	assert_int_equal(otlp_grpc__status(none, strlen(none), msg, sizeof(msg)), -1);
	assert_int_equal(otlp_grpc__status(junk, strlen(junk), NULL, 0), -1);
	assert_int_equal(otlp_grpc__status(prefix, strlen(prefix), NULL, 0), -1);
	/* the message is cut to its buffer */
	assert_int_equal(otlp_grpc__status(trailers, strlen(trailers), msg, 5), 14);
	assert_string_equal(msg, "no b");

	assert_string_equal(otlp_grpc__code_name(14), "UNAVAILABLE");
	assert_string_equal(otlp_grpc__code_name(16), "UNAUTHENTICATED");
	assert_string_equal(otlp_grpc__code_name(17), "UNKNOWN_CODE");
	for (int code = 0; code <= 16; code++)
		assert_int_equal(otlp_grpc__retryable(code),
				 code == 1 || code == 4 || code == 8 || code == 10 || code == 11 ||
				 code == 14 || code == 15);
}

/* A framed ExportProfilesServiceResponse with this partial success (rejected < 0: none). */
static uint8_t *response_bytes(int64_t rejected, const char *msg, int gzip, size_t *len)
{
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse r =
		OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_RESPONSE__INIT;
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesPartialSuccess ps =
		OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_PARTIAL_SUCCESS__INIT;
	uint8_t *b;

	if (rejected >= 0) {
		ps.rejected_profiles = rejected;
		ps.error_message = (char *)msg;
		r.partial_success = &ps;
	}
	*len = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__get_packed_size(&r);
	b = malloc(*len + 1);
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__pack(&r, b);
	if (gzip) {
		uLongf n = compressBound(*len) + 32;
		uint8_t *gz = malloc(n);
		z_stream zs = { 0 };

		assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
		zs.next_in = b;
		zs.avail_in = (uInt)*len;
		zs.next_out = gz;
		zs.avail_out = (uInt)n;
		assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
		*len = zs.total_out;
		deflateEnd(&zs);
		free(b);
		b = gz;
	}
	assert_int_equal(otlp_grpc__frame(&b, len, gzip), 0);
	return b;
}

static enum delivery_verdict judge(long code, const char *hdrs, const uint8_t *body, size_t len,
				   char *why, size_t whylen)
{
	struct delivery_answer a = { .http_code = code, .http2 = 1, .headers = hdrs,
				     .headers_len = strlen(hdrs), .body = body, .body_len = len };

	why[0] = 0;
	return otlp_grpc__judge(NULL, &a, why, whylen);
}

static void test_otlp_grpc_judge(void **state)
{
	const char ok[] = "content-type: application/grpc\ngrpc-status: 0\n";
	char why[512];
	uint8_t *b;
	size_t len;

	/* accepted, nothing to say: an empty response, and no message at all */
	b = response_bytes(-1, NULL, 0, &len);
	assert_int_equal(len, 5);
	assert_int_equal(judge(200, ok, b, len, why, sizeof(why)), DELIVERY_OK);
	assert_string_equal(why, "");
	free(b);
	assert_int_equal(judge(200, ok, NULL, 0, why, sizeof(why)), DELIVERY_OK);
	assert_string_equal(why, "");

	/* a partial success: delivered (never retried), said */
	b = response_bytes(3, "three dropped", 0, &len);
	assert_int_equal(judge(200, ok, b, len, why, sizeof(why)), DELIVERY_OK);
	assert_string_equal(why, "partial success: 3 profiles rejected: three dropped");
	free(b);
	b = response_bytes(2, "", 1, &len);	/* grpc-encoding: gzip */
	assert_int_equal(judge(200, ok, b, len, why, sizeof(why)), DELIVERY_OK);
	assert_string_equal(why, "partial success: 2 profiles rejected: ");
	/* a cut message is still delivered, the answer's fault said */
	assert_int_equal(judge(200, ok, b, len - 1, why, sizeof(why)), DELIVERY_OK);
	assert_non_null(strstr(why, "not one gRPC message"));
	free(b);

	/* retryable and permanent codes, from headers (trailers-only) or trailers */
	assert_int_equal(judge(200, "grpc-status: 14\ngrpc-message: backend%20down\n", NULL, 0, why,
			       sizeof(why)), DELIVERY_RETRY);
	assert_string_equal(why, "gRPC UNAVAILABLE (14): backend down");
	assert_int_equal(judge(200, "grpc-status: 8\n", NULL, 0, why, sizeof(why)), DELIVERY_RETRY);
	assert_string_equal(why, "gRPC RESOURCE_EXHAUSTED (8)");
	assert_int_equal(judge(200, "grpc-status: 3\ngrpc-message: bad dictionary\n", NULL, 0, why,
			       sizeof(why)), DELIVERY_FAIL);
	assert_string_equal(why, "gRPC INVALID_ARGUMENT (3): bad dictionary");
	assert_int_equal(judge(200, "grpc-status: 16\n", NULL, 0, why, sizeof(why)), DELIVERY_FAIL);
	assert_int_equal(judge(200, "grpc-status: 12\n", NULL, 0, why, sizeof(why)), DELIVERY_FAIL);
	assert_string_equal(why, "gRPC UNIMPLEMENTED (12)");

	/* no grpc-status: a proxy's 503 is retried, anything else refused */
	assert_int_equal(judge(503, "content-type: text/plain\n", NULL, 0, why, sizeof(why)),
			 DELIVERY_RETRY);
	assert_non_null(strstr(why, "HTTP 503 without a grpc-status"));
	assert_int_equal(judge(200, "content-type: text/html\n", NULL, 0, why, sizeof(why)),
			 DELIVERY_FAIL);
	assert_int_equal(judge(404, "", NULL, 0, why, sizeof(why)), DELIVERY_FAIL);
}

static void test_otlp_exporter_bad_client_files(void **state)
{
	struct otlp_opts o = { .url = "https://127.0.0.1:1", .protocol = OTLP_PROTOCOL_GRPC,
			       .client_cert = "/nonexistent/client.crt", .no_env = 1 };
	struct exporter *e;
	char err[256];

	assert_null(otlp__new(&o, NULL, err, sizeof(err)));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err, "client certificate '/nonexistent/client.crt' unreadable"));
	o.client_cert = "/dev/null";
	o.client_key = "/nonexistent/client.key";
	assert_null(otlp__new(&o, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "client key '/nonexistent/client.key' unreadable"));
	o.client_key = "/dev/null";
	e = otlp__new(&o, NULL, err, sizeof(err));
	if (!e)
		fail_msg("otlp__new: %s", err);
	assert_non_null(e->ops->last_error);
	e->ops->last_error(e->self, err, sizeof(err));
	assert_string_equal(err, "");
	e->ops->free(e->self);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_otlp_grpc_frame),
		cmocka_unit_test(test_otlp_grpc_status),
		cmocka_unit_test(test_otlp_grpc_judge),
		cmocka_unit_test(test_otlp_exporter_bad_client_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
