/* otelctx.h: the OTEP 4719 process context of a process (an OTEL_CTX mapping): find, validate, read
 * and decode it. The runtime otelctx_runtime (runtime.h, RT_OTELCTX) keeps it per process. */
#ifndef SPANPROF_OTELCTX_H
#define SPANPROF_OTELCTX_H

#include <stddef.h>
#include <stdint.h>

/*
 * The mapping is a memfd named OTEL_CTX (/memfd:OTEL_CTX) or anonymous memory named with
 * PR_SET_VMA_ANON_NAME ([anon:OTEL_CTX], [anon_shmem:OTEL_CTX]); it starts with this header, in the
 * publisher's byte order. The payload, a protobuf
 * opentelemetry.proto.processcontext.v1development.ProcessContext, lies anywhere in the process
 * (payload_ptr). published_at_ns is CLOCK_BOOTTIME ns, written last; 0 means "being written":
 * a reader reads it, the header and the payload, then it again, and keeps the result only when
 * both reads agree and are not 0.
 */
#define OTELCTX_SIGNATURE   "OTEL_CTX"
#define OTELCTX_VERSION	    2u
#define OTELCTX_PAYLOAD_MAX (1u << 20)	/* larger payloads are refused (-E2BIG) */
#define OTELCTX_MAX_ATTRS   128u	/* resource / extra attributes kept; more are counted */
#define OTELCTX_MAX_KEYS    256u	/* OTEP 4947 key indexes are a u8 */
#define OTELCTX_VALUE_MAX   1024u	/* longer values are cut at a UTF-8 boundary (counted) */

struct otelctx_header {
	char signature[8];
	uint32_t version;
	uint32_t payload_size;
	uint64_t published_at_ns;
	uint64_t payload_ptr;
};
_Static_assert(sizeof(struct otelctx_header) == 32, "OTEP 4719 header is 32 bytes");

/* A decoded attribute: values of scalar types as text (strings as published, bool "true" /
 * "false", integers and doubles in decimal). Strings are UTF-8 without control characters
 * (anything else is replaced by '?'). */
struct otelctx_attr {
	const char *key;
	const char *value;
};

/* A decoded process context. Opaque. */
struct otelctx;

struct vma;
struct proc;

/* Constructor: NULL and errno set on failure. The context is empty until decoded into. */
struct otelctx *otelctx__new(void);
void otelctx__free(struct otelctx *c);	/* NULL-safe */

/* Whether a /proc/<pid>/maps path names a process context: "/memfd:OTEL_CTX" (with or without
 * " (deleted)"), "[anon:OTEL_CTX]" or "[anon_shmem:OTEL_CTX]". */
int otelctx__is_mapping_path(const char *path);

/* The context's mapping among a process's mappings (proctab.h): 0 and *start, *end; -ENOENT when
 * there is none; -EBADMSG when there are several (OTEP 4719: a singleton) or it does not start
 * at file offset 0. */
int otelctx__find_mapping(const struct vma *v, size_t n, uint64_t *start, uint64_t *end);

/*
 * Validates a header (len bytes read from the mapping start) and copies it to *out. Returns 0;
 * -EAGAIN: not published yet (zero signature) or being written (published_at_ns 0);
 * -EPROTONOSUPPORT: another version; -EBADMSG: no signature, or a payload pointer of 0 with a
 * size; -E2BIG: payload_size over OTELCTX_PAYLOAD_MAX.
 */
int otelctx__check_header(const void *buf, size_t len, struct otelctx_header *out);

/*
 * Decodes len payload bytes into c (replacing what it held). Returns 0 or -EBADMSG (not a
 * ProcessContext: c is then empty), -ENOMEM.
 */
int otelctx__decode(struct otelctx *c, const uint8_t *payload, size_t len);

/* What otelctx__read met, added to by each call. */
struct otelctx_read_stats {
	uint64_t reads;		/* payloads read and decoded */
	uint64_t unchanged;	/* header read, same published_at_ns as last time: nothing read */
	uint64_t mid_update;	/* published_at_ns 0, or changed while the payload was read */
};

/*
 * Reads the context whose mapping starts at addr from the process whose /proc/<pid> is dir_fd
 * (one open of its mem for the whole read), per OTEP 4719: header, payload, header again. When
 * the header's published_at_ns equals *published_at (a previous read), nothing more is read
 * and 1 is returned; otherwise the payload is decoded into c, *published_at updated, 0
 * returned. A context caught mid-update is retried twice, then -EAGAIN. Errors as
 * otelctx__check_header and otelctx__decode, or -errno from /proc (-EFAULT: a range not
 * mapped). c is left as it was on any error.
 */
int otelctx__read(int dir_fd, uint64_t addr, struct otelctx *c, uint64_t *published_at,
		  struct otelctx_read_stats *st);

/* The decoded content. Strings live until the next decode into c or its free. */
size_t otelctx__resource_attrs(const struct otelctx *c, const struct otelctx_attr **out);
size_t otelctx__extra_attrs(const struct otelctx *c, const struct otelctx_attr **out);
/* A resource attribute's value (the first of that key), or NULL. */
const char *otelctx__get(const struct otelctx *c, const char *key);
/* Attributes left out: over OTELCTX_MAX_ATTRS, duplicate keys, or values of array, map or bytes
 * type (the key map excepted); values cut to OTELCTX_VALUE_MAX. */
uint32_t otelctx__skipped(const struct otelctx *c);
uint32_t otelctx__truncated(const struct otelctx *c);

/*
 * OTEP 4947's thread-local reference data, from ProcessContext.attributes (or, for publishers
 * of drafts that put it there, from the resource): threadlocal.schema_version (NULL when absent)
 * and threadlocal.attribute_key_map, index -> name. A map entry that is not a string keeps its
 * index with the name "" (counted in otelctx__key_map_bad).
 */
const char *otelctx__schema_version(const struct otelctx *c);
int otelctx__has_key_map(const struct otelctx *c);
uint32_t otelctx__key_count(const struct otelctx *c);
const char *otelctx__key(const struct otelctx *c, uint32_t index);	/* NULL past the end */
uint32_t otelctx__key_map_bad(const struct otelctx *c);

/* ---- per process (the runtime) -------------------------------------------------------------- */

/* p's published service.name, or NULL (no context, none in it, or not read yet). Valid until p's
 * runtimes are next polled. */
const char *otelctx__service_name(const struct proc *p);
/* p's resource attributes: 0 and *attrs, *n; -ENOENT when p has no decoded context. Valid until
 * p's runtimes are next polled. */
int otelctx__resource(const struct proc *p, const struct otelctx_attr **attrs, size_t *n);

#endif /* SPANPROF_OTELCTX_H */
