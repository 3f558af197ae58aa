/* otelctx_pb.h: the test_otelctx*.c programs' own protobuf writer (otelctx_pb.c; wire format:
 * varints, tags, length-delimited), independent of protobuf-c, and the OTEP 4719 payloads built
 * with it. */
#ifndef SPANPROF_OTELCTX_PB_H
#define SPANPROF_OTELCTX_PB_H

#include <stddef.h>
#include <stdint.h>

struct pb {
	uint8_t *b;
	size_t n, cap;
};

struct pb *pb_new(void);
void pb_free(struct pb *p);
void pb_raw(struct pb *p, const void *d, size_t n);
void pb_varint(struct pb *p, uint64_t v);
void pb_tag(struct pb *p, int field, int wire);
void pb_bytes(struct pb *p, int field, const void *d, size_t n);
void pb_msg(struct pb *p, int field, const struct pb *m);
/* AnyValue builders: a fresh message each. */
struct pb *any_str(const char *s);
struct pb *any_varint(int field, uint64_t v);
struct pb *any_double(double d);
/* An ArrayValue of strings (NULL entries become an int value, to test non-string entries). */
struct pb *any_str_array(const char *const *s, size_t n);
/* list += field: KeyValue { key, value } (value consumed; NULL: no value field). */
void kv(struct pb *list, int field, const char *key, struct pb *value);
/* ProcessContext { resource = Resource { attributes = res }, attributes = extra } (consumed). */
struct pb *context(struct pb *res, struct pb *extra);
/* The key map the hook publishes: local_root_span_id, span_name, tenant. */
extern const char *const KEYS[];
/* What the hook publishes: a resource and the thread-local reference data. */
struct pb *hook_payload(const char *service, const char *const *keys, size_t nkeys);

#endif
