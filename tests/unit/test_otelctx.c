/* test_otelctx.c: unit tests for user/process/otelctx.c: mapping names, header checks, payload
 * decoding (fixtures encoded by the test's own protobuf writer), the OTEP 4719 reading protocol on
 * a context mapped in this very process (half-written, updated, oversize, unmapped payload, a
 * writer racing the reader), and the runtime: service name, describe line, key-map cross-check
 * against a span table. */
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

/* ---- a protobuf writer of the test's own (wire format: varints, tags, length-delimited) ---- */

struct pb {
	uint8_t *b;
	size_t n, cap;
};

static struct pb *pb_new(void)
{
	struct pb *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	p->cap = 1 << 16;
	p->b = malloc(p->cap);
	assert_non_null(p->b);
	return p;
}

static void pb_free(struct pb *p)
{
	if (p) {
		free(p->b);
		free(p);
	}
}

static void pb_raw(struct pb *p, const void *d, size_t n)
{
	while (p->n + n > p->cap) {
		p->cap *= 2;
		p->b = realloc(p->b, p->cap);
		assert_non_null(p->b);
	}
	memcpy(p->b + p->n, d, n);
	p->n += n;
}

static void pb_varint(struct pb *p, uint64_t v)
{
	uint8_t c;

	do {
		c = v & 0x7f;
		v >>= 7;
		if (v)
			c |= 0x80;
		pb_raw(p, &c, 1);
	} while (v);
}

static void pb_tag(struct pb *p, int field, int wire)
{
	pb_varint(p, (uint64_t)field << 3 | (uint64_t)wire);
}

static void pb_bytes(struct pb *p, int field, const void *d, size_t n)
{
	pb_tag(p, field, 2);
	pb_varint(p, n);
	pb_raw(p, d, n);
}

static void pb_msg(struct pb *p, int field, const struct pb *m)
{
	pb_bytes(p, field, m->b, m->n);
}

/* AnyValue builders: a fresh message each. */
static struct pb *any_str(const char *s)
{
	struct pb *a = pb_new();

	pb_bytes(a, 1, s, strlen(s));
	return a;
}

static struct pb *any_varint(int field, uint64_t v)
{
	struct pb *a = pb_new();

	pb_tag(a, field, 0);
	pb_varint(a, v);
	return a;
}

static struct pb *any_double(double d)
{
	struct pb *a = pb_new();
	uint64_t bits;

	memcpy(&bits, &d, 8);
	pb_tag(a, 4, 1);
	pb_raw(a, &bits, 8);	/* little-endian host */
	return a;
}

/* An ArrayValue of strings (NULL entries become an int value, to test non-string entries). */
static struct pb *any_str_array(const char *const *s, size_t n)
{
	struct pb *arr = pb_new(), *a = pb_new();

	for (size_t i = 0; i < n; i++) {
		struct pb *e = s[i] ? any_str(s[i]) : any_varint(3, 7);

		pb_msg(arr, 1, e);
		pb_free(e);
	}
	pb_msg(a, 5, arr);
	pb_free(arr);
	return a;
}

/* list += field: KeyValue { key, value } (value consumed; NULL: no value field). */
static void kv(struct pb *list, int field, const char *key, struct pb *value)
{
	struct pb *m = pb_new();

	pb_bytes(m, 1, key, strlen(key));
	if (value)
		pb_msg(m, 2, value);
	pb_msg(list, field, m);
	pb_free(m);
	pb_free(value);
}

/* ProcessContext { resource = Resource { attributes = res }, attributes = extra } (consumed). */
static struct pb *context(struct pb *res, struct pb *extra)
{
	struct pb *c = pb_new(), *r = pb_new();

	if (res) {
		pb_raw(r, res->b, res->n);
		pb_msg(c, 1, r);
	}
	if (extra)
		pb_raw(c, extra->b, extra->n);
	pb_free(r);
	pb_free(res);
	pb_free(extra);
	return c;
}

static const char *const KEYS[] = { "local_root_span_id", "span_name", "tenant" };

/* What the hook publishes: a resource and the thread-local reference data. */
static struct pb *hook_payload(const char *service, const char *const *keys, size_t nkeys)
{
	struct pb *res = pb_new(), *extra = pb_new();

	kv(res, 1, "service.name", any_str(service));
	kv(res, 1, "service.instance.id", any_str("0b7e2c4a-7a51-4c43-9b1e-2a0d8c5f3e11"));
	kv(res, 1, "telemetry.sdk.language", any_str("dotnet"));
	kv(extra, 2, "threadlocal.schema_version", any_str("spanprof_ctx_v1"));
	kv(extra, 2, "threadlocal.attribute_key_map", any_str_array(keys, nkeys));
	return context(res, extra);
}

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

/* ---- a context mapped in this process ------------------------------------------------------- */

#define MAP_LEN (64u << 10)
#define BUF_A	4096u
#define BUF_B	(4096u + 16384u)

static int ctx_fd = -1;
static uint8_t *ctx_map;
static struct proctab *pt;
static int dir_fd = -1;

static struct otelctx_header *hdr(void)
{
	return (struct otelctx_header *)ctx_map;
}

/* Writes payload at off and publishes it (first publication: fields, signature, timestamp). */
static void publish_at(uint32_t off, const struct pb *p)
{
	struct otelctx_header *h = hdr();

	memcpy(ctx_map + off, p->b, p->n);
	h->version = OTELCTX_VERSION;
	h->payload_size = (uint32_t)p->n;
	h->payload_ptr = (uint64_t)(uintptr_t)(ctx_map + off);
	atomic_thread_fence(memory_order_seq_cst);
	memcpy(h->signature, OTELCTX_SIGNATURE, 8);
	atomic_thread_fence(memory_order_seq_cst);
	h->published_at_ns = boottime_ns();
}

/* OTEP 4719's update: published_at 0, fields, new published_at. */
static void update_at(uint32_t off, const struct pb *p)
{
	struct otelctx_header *h = hdr();
	uint64_t before = h->published_at_ns;

	memcpy(ctx_map + off, p->b, p->n);
	atomic_store((_Atomic uint64_t *)&h->published_at_ns, 0);
	h->payload_size = (uint32_t)p->n;
	h->payload_ptr = (uint64_t)(uintptr_t)(ctx_map + off);
	atomic_thread_fence(memory_order_seq_cst);
	atomic_store((_Atomic uint64_t *)&h->published_at_ns, before + 1);
}

static int map_setup(void **state)
{
	ctx_fd = memfd_create(OTELCTX_SIGNATURE, MFD_CLOEXEC);
	if (ctx_fd < 0 || ftruncate(ctx_fd, MAP_LEN))
		return -1;
	ctx_map = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE, ctx_fd, 0);
	if (ctx_map == MAP_FAILED)
		return -1;
	close(ctx_fd);
	ctx_fd = -1;
	dir_fd = procfs__open(getpid());
	return dir_fd < 0 ? -1 : 0;
}

static int map_teardown(void **state)
{
	for (uint32_t i = 0; pt && i < proctab__count(pt); i++)
		if (proctab__at(pt, i))
			runtime__detach_all(proctab__at(pt, i));
	proctab__free(pt);
	pt = NULL;
	munmap(ctx_map, MAP_LEN);
	if (dir_fd >= 0)
		close(dir_fd);
	dir_fd = -1;
	return 0;
}

static void test_otelctx_read_live(void **state)
{
	struct otelctx *c = otelctx__new();
	struct otelctx_read_stats st = { 0 };
	struct pb *p1 = hook_payload("first", KEYS, 2), *p2 = hook_payload("second", KEYS, 3);
	uint64_t at = 0, at1;

	publish_at(BUF_A, p1);
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), 0);
	assert_string_equal(otelctx__get(c, "service.name"), "first");
	assert_int_equal(otelctx__key_count(c), 2);
	assert_int_equal(at, hdr()->published_at_ns);
	assert_int_equal(st.reads, 1);
	/* Nothing new: the header alone is read. */
	at1 = at;
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), 1);
	assert_int_equal(st.unchanged, 1);
	assert_int_equal(at, at1);
	/* The key map grew: republished in the other buffer. */
	update_at(BUF_B, p2);
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), 0);
	assert_string_equal(otelctx__get(c, "service.name"), "second");
	assert_int_equal(otelctx__key_count(c), 3);
	assert_int_equal(st.reads, 2);
	assert_int_equal(st.mid_update, 0);
	pb_free(p1);
	pb_free(p2);
	otelctx__free(c);
}

/* The payload anywhere in the process, as the C reference implementation puts it (the heap). */
static void test_otelctx_read_payload_elsewhere(void **state)
{
	struct otelctx *c = otelctx__new();
	struct otelctx_read_stats st = { 0 };
	struct pb *p = hook_payload("heap", KEYS, 3);
	uint8_t *heap = malloc(p->n);
	uint64_t at = 0;

	memcpy(heap, p->b, p->n);
	publish_at(BUF_A, p);
	hdr()->payload_ptr = (uintptr_t)heap;
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), 0);
	assert_string_equal(otelctx__get(c, "service.name"), "heap");
	free(heap);
	pb_free(p);
	otelctx__free(c);
}

static void test_otelctx_read_half_written(void **state)
{
	struct otelctx *c = otelctx__new();
	struct otelctx_read_stats st = { 0 };
	struct pb *p1 = hook_payload("before", KEYS, 2), *p2 = hook_payload("after", KEYS, 3);
	uint64_t at = 0, at1;

	/* Being created: no signature yet. Not a mid-update: nothing was published. */
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), -EAGAIN);
	assert_int_equal(st.mid_update, 0);
	publish_at(BUF_A, p1);
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), 0);
	at1 = at;
	/* An update caught in the middle: published_at 0, the new payload half there. */
	memcpy(ctx_map + BUF_B, p2->b, p2->n / 2);
	hdr()->published_at_ns = 0;
	hdr()->payload_ptr = (uintptr_t)(ctx_map + BUF_B);
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), -EAGAIN);
	assert_int_equal(st.mid_update, 3);	/* read again at once, twice, then left for later */
	assert_string_equal(otelctx__get(c, "service.name"), "before");	/* the last one stands */
	assert_int_equal(at, at1);
	/* Finished: read. */
	memcpy(ctx_map + BUF_B, p2->b, p2->n);
	hdr()->payload_size = (uint32_t)p2->n;
	hdr()->published_at_ns = at1 + 1;
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), 0);
	assert_string_equal(otelctx__get(c, "service.name"), "after");
	pb_free(p1);
	pb_free(p2);
	otelctx__free(c);
}

static void test_otelctx_read_refused(void **state)
{
	struct otelctx *c = otelctx__new();
	struct otelctx_read_stats st = { 0 };
	struct pb *p = hook_payload("svc", KEYS, 3);
	uint64_t at = 0;
	static const uint8_t junk[] = { 0x0a, 0x7f, 0x01, 0x02, 0x03 };

	publish_at(BUF_A, p);
	hdr()->payload_size = OTELCTX_PAYLOAD_MAX + 1;
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), -E2BIG);
	/* A pointer to nothing. */
	hdr()->payload_size = 64;
	hdr()->payload_ptr = 0x1000;
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), -EFAULT);
	/* Garbage where the payload is. */
	memcpy(ctx_map + BUF_A, junk, sizeof(junk));
	hdr()->payload_size = sizeof(junk);
	hdr()->payload_ptr = (uintptr_t)(ctx_map + BUF_A);
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), -EBADMSG);
	/* Another version. */
	hdr()->version = 1;
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), -EPROTONOSUPPORT);
	assert_int_equal(st.reads, 0);
	assert_int_equal(at, 0);
	pb_free(p);
	otelctx__free(c);
}

/* A writer that republishes as fast as it can, by the protocol; every read that succeeds must
 * be one whole payload (service.name and key count belong together), never a mix. */
static atomic_int race_stop;
static struct pb *race_p[2];

static void *racer(void *arg)
{
	uint32_t off[2] = { BUF_A, BUF_B };

	/* Never into the buffer the header points at: the first update goes to B. */
	for (unsigned i = 1; !atomic_load(&race_stop); i++) {
		update_at(off[i & 1], race_p[i & 1]);
		if (i % 64 == 0)
			usleep(200);	/* bursts of updates, whole reads between them */
	}
	return NULL;
}

static void test_otelctx_read_racing_writer(void **state)
{
	static const char *const many[] = { "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7" };
	struct otelctx *c = otelctx__new();
	struct otelctx_read_stats st = { 0 };
	uint64_t at = 0, ok = 0, t_end;
	pthread_t t;

	race_p[0] = hook_payload("even", many, 2);
	race_p[1] = hook_payload("odd-and-longer-name", many, 8);
	publish_at(BUF_A, race_p[0]);
	atomic_store(&race_stop, 0);
	assert_int_equal(pthread_create(&t, NULL, racer, NULL), 0);
	t_end = now_ns() + 300 * 1000000ull;
	while (now_ns() < t_end) {
		int err = otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st);

		assert_true(err == 0 || err == 1 || err == -EAGAIN);
		if (err == 0) {
			const char *svc = otelctx__get(c, "service.name");

			ok++;
			assert_non_null(svc);
			if (!strcmp(svc, "even"))
				assert_int_equal(otelctx__key_count(c), 2);
			else {
				assert_string_equal(svc, "odd-and-longer-name");
				assert_int_equal(otelctx__key_count(c), 8);
			}
		}
	}
	atomic_store(&race_stop, 1);
	pthread_join(t, NULL);
	print_message("racing writer: %" PRIu64 " whole reads, %" PRIu64 " caught mid-update\n", ok,
		      st.mid_update);
	assert_true(ok > 0);
	pb_free(race_p[0]);
	pb_free(race_p[1]);
	otelctx__free(c);
}

/* ---- the runtime ---------------------------------------------------------------------------- */

static const struct runtime_ops *const only_otelctx[RT__MAX] = { [RT_OTELCTX] = &otelctx_runtime };
static struct runtime_env env = { .runtimes = only_otelctx, .ctx_map_fd = -1 };

/* This process, its runtimes polled as if the backoff had passed. */
static struct proc *this_proc(void)
{
	struct proc *p;

	if (!pt)
		assert_non_null(pt = proctab__new("/proc", &env));
	p = proctab__open(pt, getpid());
	assert_non_null(p);
	return p;
}

static void poll_again(struct proc *p)
{
	static uint64_t later = 0;

	later += 100ull * 1000000000ull;
	runtime__poll(p, now_ns() + later);
}

static void describe(const struct proc *p, char *buf, size_t len)
{
	runtime__describe(p, buf, len);
}

/* A span table (hook ABI v1) in this process with these key names, for the cross-check. */
static uint8_t *table;
#define TBL_LEN 16384u

static void map_table(const char *const *keys, uint32_t n)
{
	int fd = memfd_create(SP_CTX_MEMFD_NAME, MFD_CLOEXEC);
	struct sp_ctx_header *h;
	size_t pos = 128;

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, TBL_LEN), 0);
	table = mmap(NULL, TBL_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(table != MAP_FAILED);
	close(fd);
	h = (struct sp_ctx_header *)table;
	h->abi_version = SP_CTX_ABI;
	h->header_size = sizeof(*h);
	h->slot_count = 16;
	h->slot_size = 656;
	h->slots_offset = 4096;
	h->keys_offset = 128;
	h->keys_size = 1024;
	h->pid = getpid();
	for (uint32_t i = 0; i < n; i++) {
		size_t l = strlen(keys[i]);

		table[pos++] = (uint8_t)l;
		memcpy(table + pos, keys[i], l);
		pos += l;
	}
	h->keys_count = n;
	memcpy(h->magic, SP_CTX_MAGIC, 8);
}

static void unmap_table(void)
{
	munmap(table, TBL_LEN);
	table = NULL;
}

static void test_otelctx_runtime_service_name(void **state)
{
	struct pb *p = hook_payload("checkout", KEYS, 3);
	const struct otelctx_attr *a;
	struct proc *p0;
	size_t n;
	char buf[512];

	publish_at(BUF_A, p);
	p0 = this_proc();
	assert_true(runtime__has(p0, RT_OTELCTX));	/* detected from the mapping alone */
	runtime__poll(p0, now_ns());
	assert_string_equal(otelctx__service_name(p0), "checkout");
	assert_int_equal(otelctx__resource(p0, &a, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(a[2].value, "dotnet");
	assert_int_equal(p0->rt[RT_OTELCTX].last, RT_WAIT);	/* watched for updates */
	describe(p0, buf, sizeof(buf));
	assert_string_equal(buf, "OTEL_CTX v2: service.name \"checkout\", 3 resource attributes, key map "
				 "3 keys (spanprof_ctx_v1), no span table to check it against; 1 read");
	pb_free(p);
}

static void test_otelctx_runtime_cross_check(void **state)
{
	static const char *const other[] = { "local_root_span_id", "span_name", "region" };
	static const char *const more[] = { "local_root_span_id", "span_name", "tenant", "region" };
	struct pb *p = hook_payload("svc", KEYS, 3);
	struct proc *p0;
	char buf[512];

	map_table(KEYS, 3);
	publish_at(BUF_A, p);
	p0 = this_proc();
	runtime__poll(p0, now_ns());
	describe(p0, buf, sizeof(buf));
	assert_non_null(strstr(buf, "key map 3 keys (spanprof_ctx_v1), 0 mismatches with the span table"));
	unmap_table();

	/* A table whose key 2 is another name. The context is republished, the mappings re-read. */
	map_table(other, 3);
	update_at(BUF_B, p);
	proc__read_maps(p0);
	poll_again(p0);
	describe(p0, buf, sizeof(buf));
	assert_non_null(strstr(buf, "1 mismatches with the span table"));
	unmap_table();

	/* A table ahead of the key map (a key appended, the context not republished yet). */
	map_table(more, 4);
	update_at(BUF_A, p);
	proc__read_maps(p0);
	poll_again(p0);
	describe(p0, buf, sizeof(buf));
	assert_non_null(strstr(buf, "0 mismatches with the span table (1 table keys not in it yet)"));
	unmap_table();
	pb_free(p);
}

static void test_otelctx_runtime_states(void **state)
{
	struct pb *p = hook_payload("svc", KEYS, 3);
	struct proc *p0;
	char buf[512];

	/* Mapped, not published: waiting. */
	p0 = this_proc();
	runtime__poll(p0, now_ns());
	describe(p0, buf, sizeof(buf));
	assert_string_equal(buf, "OTEL_CTX not published yet");
	assert_null(otelctx__service_name(p0));
	assert_int_equal(p0->rt[RT_OTELCTX].last, RT_WAIT);
	/* Half-written at first sight: still waiting, counted. */
	publish_at(BUF_A, p);
	hdr()->published_at_ns = 0;
	poll_again(p0);
	describe(p0, buf, sizeof(buf));
	assert_string_equal(buf, "OTEL_CTX not published yet; 0 read, 3 caught mid-update (retried)");
	/* Done. */
	hdr()->published_at_ns = 5;
	poll_again(p0);
	assert_string_equal(otelctx__service_name(p0), "svc");
	/* Republished with another version: the old context is dropped, not kept. */
	hdr()->version = 7;
	hdr()->published_at_ns = 6;
	poll_again(p0);
	assert_null(otelctx__service_name(p0));
	describe(p0, buf, sizeof(buf));
	assert_string_equal(buf, "OTEL_CTX of version 7: ignored; 1 read, 3 caught mid-update "
				 "(retried), 1 refused");
	/* Oversize. */
	hdr()->version = OTELCTX_VERSION;
	hdr()->payload_size = 5u << 20;
	poll_again(p0);
	describe(p0, buf, sizeof(buf));
	assert_non_null(strstr(buf, "OTEL_CTX payload of 5242880 bytes (limit 1048576): ignored"));
	assert_non_null(strstr(buf, ", 2 refused"));
	/* The same refused header again: not counted again. */
	poll_again(p0);
	describe(p0, buf, sizeof(buf));
	assert_non_null(strstr(buf, ", 2 refused"));
	/* An undecodable payload: refused once, then not read again until it changes. */
	hdr()->payload_size = 3;
	memcpy(ctx_map + BUF_A, "\x0a\x7f\x01", 3);
	hdr()->published_at_ns = 7;
	poll_again(p0);
	poll_again(p0);
	describe(p0, buf, sizeof(buf));
	assert_string_equal(buf, "invalid OTEL_CTX (header or payload): ignored; 1 read, 3 caught "
				 "mid-update (retried), 3 refused");
	/* Fixed: read. */
	memcpy(ctx_map + BUF_A, p->b, p->n);
	hdr()->payload_size = (uint32_t)p->n;
	hdr()->published_at_ns = 8;
	poll_again(p0);
	assert_string_equal(otelctx__service_name(p0), "svc");
	pb_free(p);
}

/* No context in the process (the mapping gone): nothing to say but that. */
static void test_otelctx_runtime_none(void **state)
{
	struct proc *p0;
	char buf[256];

	munmap(ctx_map, MAP_LEN);
	ctx_map = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(ctx_map != MAP_FAILED);
	p0 = this_proc();
	assert_false(runtime__has(p0, RT_OTELCTX));	/* not .NET, no mapping: not looked at */
	assert_null(otelctx__service_name(p0));
	describe(p0, buf, sizeof(buf));
	assert_string_equal(buf, "");
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, map_setup, map_teardown)
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
		T(test_otelctx_read_live),
		T(test_otelctx_read_payload_elsewhere),
		T(test_otelctx_read_half_written),
		T(test_otelctx_read_refused),
		T(test_otelctx_read_racing_writer),
		T(test_otelctx_runtime_service_name),
		T(test_otelctx_runtime_cross_check),
		T(test_otelctx_runtime_states),
		T(test_otelctx_runtime_none),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
