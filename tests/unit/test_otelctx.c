/* test_otelctx.c: unit tests for user/process/otelctx.c: mapping names, header checks and payload
 * decoding (fixtures encoded by the tests' own protobuf writer, otelctx_pb.c), hostile payloads
 * included. The reading protocol and the runtime: test_otelctx_read.c. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "otelctx.h"
#include "procfs.h"
#include "profiler.h"
#include "proctab.h"
#include "runtime.h"
#include "spanctx.h"
#include "util.h"

extern const struct runtime_ops otelctx_runtime;	/* otelctx.c */

#include "otelctx_pb.h"

/* ---- paths and mappings ------------------------------------------------------------------- */

static void test_otelctx_paths(void **state)
{
	assert_true(otelctx__is_mapping_path("/memfd:OTEL_CTX (deleted)"));
	assert_true(otelctx__is_mapping_path("/memfd:OTEL_CTX"));
	assert_true(otelctx__is_mapping_path("[anon:OTEL_CTX]"));
	assert_true(otelctx__is_mapping_path("[anon_shmem:OTEL_CTX]"));
	assert_false(otelctx__is_mapping_path("/memfd:OTEL_CTX2 (deleted)"));
	assert_false(otelctx__is_mapping_path("/memfd:spanprof-ctx (deleted)"));
	assert_false(otelctx__is_mapping_path("[anon:OTEL_CTX2]"));
	assert_false(otelctx__is_mapping_path("/tmp/OTEL_CTX"));
	assert_false(otelctx__is_mapping_path(""));
}

static void test_otelctx_find_mapping(void **state)
{
	struct vma v[3] = {
		{ .start = 0x1000, .end = 0x2000, .path = "/usr/lib/libc.so.6", .kind = VMA_FILE },
		{ .start = 0x5000, .end = 0x8000, .path = "/memfd:OTEL_CTX (deleted)", .kind = VMA_MEMFD },
		{ .start = 0x9000, .end = 0xa000, .path = "[anon:OTEL_CTX]", .kind = VMA_ANON, .pgoff = 9 },
	};
	uint64_t s = 0, e = 0;

	assert_int_equal(otelctx__find_mapping(v, 1, &s, &e), -ENOENT);
	assert_int_equal(otelctx__find_mapping(v, 2, &s, &e), 0);
	assert_int_equal(s, 0x5000);
	assert_int_equal(e, 0x8000);
	/* Two contexts in one process: OTEP 4719 says one; which would be the right one? */
	assert_int_equal(otelctx__find_mapping(v, 3, &s, &e), -EBADMSG);
	/* Anonymous memory's offset is its page number: fine alone. */
	assert_int_equal(otelctx__find_mapping(v + 2, 1, &s, &e), 0);
	assert_int_equal(s, 0x9000);
	/* A memfd mapped from the middle: its start is not the header. */
	v[1].pgoff = 1;
	assert_int_equal(otelctx__find_mapping(v, 2, &s, &e), -EBADMSG);
}

/* ---- header -------------------------------------------------------------------------------- */

static struct otelctx_header good_header(void)
{
	struct otelctx_header h = { .version = OTELCTX_VERSION, .payload_size = 100,
				    .published_at_ns = 123456789, .payload_ptr = 0x7f0000001000ull };

	memcpy(h.signature, OTELCTX_SIGNATURE, 8);
	return h;
}

static void test_otelctx_header_checks(void **state)
{
	struct otelctx_header h, out;

	h = good_header();
	assert_int_equal(otelctx__check_header(&h, sizeof(h), &out), 0);
	assert_int_equal(out.payload_size, 100);
	assert_int_equal(out.payload_ptr, 0x7f0000001000ull);
	/* Short read. */
	assert_int_equal(otelctx__check_header(&h, sizeof(h) - 1, &out), -EBADMSG);
	/* Not published yet: the signature comes after the fields. */
	memset(h.signature, 0, 8);
	assert_int_equal(otelctx__check_header(&h, sizeof(h), &out), -EAGAIN);
	/* Another signature. */
	h = good_header();
	memcpy(h.signature, "OTEL_CTY", 8);
	assert_int_equal(otelctx__check_header(&h, sizeof(h), &out), -EBADMSG);
	/* Version 1 (development) and future versions. */
	h = good_header();
	h.version = 1;
	assert_int_equal(otelctx__check_header(&h, sizeof(h), &out), -EPROTONOSUPPORT);
	h.version = 3;
	assert_int_equal(otelctx__check_header(&h, sizeof(h), &out), -EPROTONOSUPPORT);
	/* Half-written: published_at_ns is 0 while an update is in progress. */
	h = good_header();
	h.published_at_ns = 0;
	assert_int_equal(otelctx__check_header(&h, sizeof(h), &out), -EAGAIN);
	/* Oversize. */
	h = good_header();
	h.payload_size = OTELCTX_PAYLOAD_MAX + 1;
	assert_int_equal(otelctx__check_header(&h, sizeof(h), &out), -E2BIG);
	h.payload_size = OTELCTX_PAYLOAD_MAX;
	assert_int_equal(otelctx__check_header(&h, sizeof(h), &out), 0);
	/* A size without a pointer, a range that wraps. */
	h = good_header();
	h.payload_ptr = 0;
	assert_int_equal(otelctx__check_header(&h, sizeof(h), &out), -EBADMSG);
	h.payload_ptr = UINT64_MAX - 10;
	assert_int_equal(otelctx__check_header(&h, sizeof(h), &out), -EBADMSG);
	/* An empty payload needs no pointer. */
	h.payload_ptr = 0;
	h.payload_size = 0;
	assert_int_equal(otelctx__check_header(&h, sizeof(h), &out), 0);
	assert_int_equal(otelctx__check_header(NULL, sizeof(h), &out), -EINVAL);
}

/* ---- payload ------------------------------------------------------------------------------- */

static void test_otelctx_decode_hook_payload(void **state)
{
	struct otelctx *c = otelctx__new();
	struct pb *p = hook_payload("checkout", KEYS, 3);
	const struct otelctx_attr *a;

	assert_non_null(c);
	assert_int_equal(otelctx__decode(c, p->b, p->n), 0);
	assert_string_equal(otelctx__get(c, "service.name"), "checkout");
	assert_string_equal(otelctx__get(c, "telemetry.sdk.language"), "dotnet");
	assert_null(otelctx__get(c, "threadlocal.schema_version"));	/* not a resource attribute */
	assert_int_equal(otelctx__resource_attrs(c, &a), 3);
	assert_string_equal(a[1].key, "service.instance.id");
	assert_string_equal(otelctx__schema_version(c), "spanprof_ctx_v1");
	assert_true(otelctx__has_key_map(c));
	assert_int_equal(otelctx__key_count(c), 3);
	assert_string_equal(otelctx__key(c, 0), "local_root_span_id");
	assert_string_equal(otelctx__key(c, 2), "tenant");
	assert_null(otelctx__key(c, 3));
	assert_int_equal(otelctx__key_map_bad(c), 0);
	/* The key map is not listed among the extra attributes; the schema version is. */
	assert_int_equal(otelctx__extra_attrs(c, &a), 1);
	assert_string_equal(a[0].key, "threadlocal.schema_version");
	assert_int_equal(otelctx__skipped(c), 0);
	pb_free(p);
	otelctx__free(c);
}

static void test_otelctx_decode_value_types(void **state)
{
	struct otelctx *c = otelctx__new();
	struct pb *res = pb_new(), *p;
	static const char *const arr[] = { "a", "b" };

	kv(res, 1, "service.name", any_str("svc"));
	kv(res, 1, "b.true", any_varint(2, 1));
	kv(res, 1, "b.false", any_varint(2, 0));
	kv(res, 1, "i.neg", any_varint(3, (uint64_t)-42));
	kv(res, 1, "d.half", any_double(0.5));
	kv(res, 1, "process.command_args", any_str_array(arr, 2));	/* arrays are not kept */
	kv(res, 1, "service.name", any_str("second"));			/* duplicate: first stands */
	kv(res, 1, "no.value", NULL);					/* empty value */
	kv(res, 1, "", any_str("no key"));
	p = context(res, NULL);
	assert_int_equal(otelctx__decode(c, p->b, p->n), 0);
	assert_string_equal(otelctx__get(c, "service.name"), "svc");
	assert_string_equal(otelctx__get(c, "b.true"), "true");
	assert_string_equal(otelctx__get(c, "b.false"), "false");
	assert_string_equal(otelctx__get(c, "i.neg"), "-42");
	assert_string_equal(otelctx__get(c, "d.half"), "0.5");
	assert_string_equal(otelctx__get(c, "no.value"), "");
	assert_null(otelctx__get(c, "process.command_args"));
	assert_int_equal(otelctx__skipped(c), 3);	/* array, duplicate, empty key */
	assert_false(otelctx__has_key_map(c));
	assert_null(otelctx__schema_version(c));
	pb_free(p);
	otelctx__free(c);
}

/* Drafts of OTEP 4947 put the thread-local data among the resource attributes: still found. */
static void test_otelctx_decode_key_map_in_resource(void **state)
{
	struct otelctx *c = otelctx__new();
	struct pb *res = pb_new(), *p;

	kv(res, 1, "service.name", any_str("svc"));
	kv(res, 1, "threadlocal.schema_version", any_str("tlsdesc_v1_dev"));
	kv(res, 1, "threadlocal.attribute_key_map", any_str_array(KEYS, 2));
	p = context(res, NULL);
	assert_int_equal(otelctx__decode(c, p->b, p->n), 0);
	assert_string_equal(otelctx__schema_version(c), "tlsdesc_v1_dev");
	assert_int_equal(otelctx__key_count(c), 2);
	assert_string_equal(otelctx__key(c, 1), "span_name");
	pb_free(p);
	otelctx__free(c);
}

/* A key-map entry that is not a string keeps its index: later names must not shift. */
static void test_otelctx_decode_key_map_bad_entries(void **state)
{
	struct otelctx *c = otelctx__new();
	static const char *const keys[] = { "a", NULL, "c" };
	struct pb *extra = pb_new(), *p;

	kv(extra, 2, "threadlocal.attribute_key_map", any_str_array(keys, 3));
	p = context(NULL, extra);
	assert_int_equal(otelctx__decode(c, p->b, p->n), 0);
	assert_int_equal(otelctx__key_count(c), 3);
	assert_string_equal(otelctx__key(c, 1), "");
	assert_string_equal(otelctx__key(c, 2), "c");
	assert_int_equal(otelctx__key_map_bad(c), 1);
	pb_free(p);

	/* A key map that is not an array: no key map. */
	extra = pb_new();
	kv(extra, 2, "threadlocal.attribute_key_map", any_str("a,b"));
	p = context(NULL, extra);
	assert_int_equal(otelctx__decode(c, p->b, p->n), 0);
	assert_false(otelctx__has_key_map(c));
	assert_int_equal(otelctx__skipped(c), 1);
	pb_free(p);
	otelctx__free(c);
}

static void test_otelctx_decode_bounds(void **state)
{
	struct otelctx *c = otelctx__new();
	struct pb *res = pb_new(), *extra = pb_new(), *p;
	const char **keys = calloc(300, sizeof(*keys));
	char (*names)[8] = calloc(300, 8);
	char *big = malloc(5000);
	const char *v;

	/* 200 attributes: 128 kept. */
	for (int i = 0; i < 200; i++) {
		char k[16];

		snprintf(k, sizeof(k), "k%d", i);
		kv(res, 1, k, any_str("v"));
	}
	/* A 5000-byte value of 2-byte characters, cut at a character boundary. */
	for (int i = 0; i < 5000; i += 2) {
		big[i] = (char)0xc3;
		big[i + 1] = (char)0xa9;	/* U+00E9 */
	}
	big[4999] = 0;
	big[4998] = 'x';
	kv(extra, 2, "big", any_str(big));
	kv(extra, 2, "ctl", any_str("a\tb\xff" "c"));
	/* 300 keys: 256 kept (a u8 index). */
	for (int i = 0; i < 300; i++) {
		snprintf(names[i], 8, "n%d", i);
		keys[i] = names[i];
	}
	kv(extra, 2, "threadlocal.attribute_key_map", any_str_array(keys, 300));
	p = context(res, extra);
	assert_int_equal(otelctx__decode(c, p->b, p->n), 0);
	{
		const struct otelctx_attr *r;

		assert_int_equal(otelctx__resource_attrs(c, &r), 128);
		assert_string_equal(r[127].key, "k127");
	}
	assert_int_equal(otelctx__skipped(c), 72);
	assert_int_equal(otelctx__key_count(c), OTELCTX_MAX_KEYS);
	assert_int_equal(otelctx__key_map_bad(c), 300 - OTELCTX_MAX_KEYS);
	assert_string_equal(otelctx__key(c, 255), "n255");
	{
		const struct otelctx_attr *x;
		size_t n = otelctx__extra_attrs(c, &x);

		assert_int_equal(n, 2);
		v = x[0].value;
		assert_int_equal(strlen(v), OTELCTX_VALUE_MAX);
		assert_int_equal((unsigned char)v[OTELCTX_VALUE_MAX - 1], 0xa9);	/* whole characters */
		assert_string_equal(x[1].value, "a?b?c");	/* control and invalid bytes */
	}
	assert_int_equal(otelctx__truncated(c), 1);
	pb_free(p);
	free(keys);
	free(names);
	free(big);
	otelctx__free(c);
}

static void test_otelctx_decode_garbage(void **state)
{
	struct otelctx *c = otelctx__new();
	struct pb *p = hook_payload("svc", KEYS, 3);
	static const uint8_t junk[][8] = {
		{ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },	/* endless varint */
		{ 0x0a, 0x7f, 0x01, 0x02 },				/* length past the end */
		{ 0x0b, 0x00 },						/* start group (wire type 3) */
		{ 0x0a, 0x02, 0x0a, 0x05 },				/* nested length past its parent */
	};

	assert_int_equal(otelctx__decode(c, p->b, p->n), 0);
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		assert_int_equal(otelctx__decode(c, junk[i], sizeof(junk[i])), -EBADMSG);
		assert_null(otelctx__get(c, "service.name"));	/* emptied */
		assert_int_equal(otelctx__key_count(c), 0);
	}
	/* Truncated anywhere inside: never a crash; either refused or a prefix of the fields. */
	for (size_t n = 0; n < p->n; n++) {
		int err = otelctx__decode(c, p->b, n);

		assert_true(err == 0 || err == -EBADMSG);
	}
	/* Nothing at all is a valid, empty context. */
	assert_int_equal(otelctx__decode(c, NULL, 0), 0);
	{
		const struct otelctx_attr *r;

		assert_int_equal(otelctx__resource_attrs(c, &r), 0);
	}
	pb_free(p);
	otelctx__free(c);
}

/* AnyValue { array_value { values { ... { string_value "x" } } } } nested depth times, as the value
 * of one attribute. */
static struct pb *nested_payload(int depth)
{
	struct pb *v = any_str("x"), *extra = pb_new();

	for (int i = 0; i < depth; i++) {
		struct pb *arr = pb_new(), *any = pb_new();

		pb_msg(arr, 1, v);
		pb_msg(any, 5, arr);
		pb_free(arr);
		pb_free(v);
		v = any;
	}
	kv(extra, 2, "deep", v);
	return context(NULL, extra);
}

/* What a hostile process could publish to hurt its reader: nesting that protobuf-c would follow
 * down to a stack overflow (it did, at 10000 levels), or a flood of tiny messages. */
static void test_otelctx_decode_hostile(void **state)
{
	struct otelctx *c = otelctx__new();
	struct pb *p, *extra;

	p = nested_payload(10);	/* 23 messages deep (each array level is two), under the 32 allowed */
	assert_int_equal(otelctx__decode(c, p->b, p->n), 0);
	assert_int_equal(otelctx__skipped(c), 1);		/* an array: not kept */
	pb_free(p);
	p = nested_payload(10000);
	assert_int_equal(otelctx__decode(c, p->b, p->n), -EBADMSG);
	pb_free(p);
	/* 20000 empty KeyValues: 40 KB on the wire, 20000 structs for protobuf-c. */
	extra = pb_new();
	for (int i = 0; i < 20000; i++)
		pb_bytes(extra, 2, "", 0);
	p = context(NULL, extra);
	assert_int_equal(otelctx__decode(c, p->b, p->n), -EBADMSG);
	pb_free(p);
	otelctx__free(c);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_otelctx_paths),
		cmocka_unit_test(test_otelctx_find_mapping),
		cmocka_unit_test(test_otelctx_header_checks),
		cmocka_unit_test(test_otelctx_decode_hook_payload),
		cmocka_unit_test(test_otelctx_decode_value_types),
		cmocka_unit_test(test_otelctx_decode_key_map_in_resource),
		cmocka_unit_test(test_otelctx_decode_key_map_bad_entries),
		cmocka_unit_test(test_otelctx_decode_bounds),
		cmocka_unit_test(test_otelctx_decode_garbage),
		cmocka_unit_test(test_otelctx_decode_hostile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
