/* otelctx_pb.c: a protobuf writer of the test_otelctx*.c programs' own, and OTEP 4719 payloads
 * (otelctx_pb.h). */
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

struct pb *pb_new(void)
{
	struct pb *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	p->cap = 1 << 16;
	p->b = malloc(p->cap);
	assert_non_null(p->b);
	return p;
}

void pb_free(struct pb *p)
{
	if (p) {
		free(p->b);
		free(p);
	}
}

void pb_raw(struct pb *p, const void *d, size_t n)
{
	while (p->n + n > p->cap) {
		p->cap *= 2;
		p->b = realloc(p->b, p->cap);
		assert_non_null(p->b);
	}
	memcpy(p->b + p->n, d, n);
	p->n += n;
}

void pb_varint(struct pb *p, uint64_t v)
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

void pb_tag(struct pb *p, int field, int wire)
{
	pb_varint(p, (uint64_t)field << 3 | (uint64_t)wire);
}

void pb_bytes(struct pb *p, int field, const void *d, size_t n)
{
	pb_tag(p, field, 2);
	pb_varint(p, n);
	pb_raw(p, d, n);
}

void pb_msg(struct pb *p, int field, const struct pb *m)
{
	pb_bytes(p, field, m->b, m->n);
}

/* AnyValue builders: a fresh message each. */
struct pb *any_str(const char *s)
{
	struct pb *a = pb_new();

	pb_bytes(a, 1, s, strlen(s));
	return a;
}

struct pb *any_varint(int field, uint64_t v)
{
	struct pb *a = pb_new();

	pb_tag(a, field, 0);
	pb_varint(a, v);
	return a;
}

struct pb *any_double(double d)
{
	struct pb *a = pb_new();
	uint64_t bits;

	memcpy(&bits, &d, 8);
	pb_tag(a, 4, 1);
	pb_raw(a, &bits, 8);	/* little-endian host */
	return a;
}

/* An ArrayValue of strings (NULL entries become an int value, to test non-string entries). */
struct pb *any_str_array(const char *const *s, size_t n)
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
void kv(struct pb *list, int field, const char *key, struct pb *value)
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
struct pb *context(struct pb *res, struct pb *extra)
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

const char *const KEYS[] = { "local_root_span_id", "span_name", "tenant" };

/* What the hook publishes: a resource and the thread-local reference data. */
struct pb *hook_payload(const char *service, const char *const *keys, size_t nkeys)
{
	struct pb *res = pb_new(), *extra = pb_new();

	kv(res, 1, "service.name", any_str(service));
	kv(res, 1, "service.instance.id", any_str("0b7e2c4a-7a51-4c43-9b1e-2a0d8c5f3e11"));
	kv(res, 1, "telemetry.sdk.language", any_str("dotnet"));
	kv(extra, 2, "threadlocal.schema_version", any_str("spanprof_ctx_v1"));
	kv(extra, 2, "threadlocal.attribute_key_map", any_str_array(keys, nkeys));
	return context(res, extra);
}
