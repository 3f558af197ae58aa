/* otelctx.c: the OTEP 4719 process context runtime (runtime.h): find a process's OTEL_CTX mapping,
 * read it with OTEP 4719's reading protocol, decode its ProcessContext payload (protobuf-c), and
 * check OTEP 4947's key map against the hook's span table. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opentelemetry/proto/processcontext/v1development/process_context.pb-c.h"

#include "otelctx.h"
#include "procfs.h"
#include "proctab.h"
#include "runtime.h"
#include "spanctx.h"
#include "utf8.h"

typedef Opentelemetry__Proto__Processcontext__V1development__ProcessContext PbContext;
typedef Opentelemetry__Proto__Common__V1__KeyValue PbKeyValue;
typedef Opentelemetry__Proto__Common__V1__AnyValue PbAnyValue;

#define SCHEMA_KEY  "threadlocal.schema_version"
#define KEY_MAP_KEY "threadlocal.attribute_key_map"
#define READ_TRIES  3	/* a context caught mid-update is read again at once this often */

struct otelctx {
	struct otelctx_attr res[OTELCTX_MAX_ATTRS];
	size_t n_res;
	struct otelctx_attr extra[OTELCTX_MAX_ATTRS];
	size_t n_extra;
	char *keys[OTELCTX_MAX_KEYS];
	uint32_t n_keys;
	int has_key_map;
	uint32_t key_bad;
	char *schema;
	uint32_t skipped;
	uint32_t truncated;
};

struct otelctx *otelctx__new(void)
{
	return calloc(1, sizeof(struct otelctx));
}

static void reset(struct otelctx *c)
{
	for (size_t i = 0; i < c->n_res; i++) {
		free((char *)c->res[i].key);
		free((char *)c->res[i].value);
	}
	for (size_t i = 0; i < c->n_extra; i++) {
		free((char *)c->extra[i].key);
		free((char *)c->extra[i].value);
	}
	for (uint32_t i = 0; i < c->n_keys; i++)
		free(c->keys[i]);
	free(c->schema);
	memset(c, 0, sizeof(*c));
}

void otelctx__free(struct otelctx *c)
{
	if (!c)
		return;
	reset(c);
	free(c);
}

/* ---- discovery and header ------------------------------------------------------------------ */

int otelctx__is_mapping_path(const char *path)
{
	return !strcmp(path, "/memfd:" OTELCTX_SIGNATURE) ||
	       !strcmp(path, "/memfd:" OTELCTX_SIGNATURE " (deleted)") ||
	       !strcmp(path, "[anon:" OTELCTX_SIGNATURE "]") ||
	       !strcmp(path, "[anon_shmem:" OTELCTX_SIGNATURE "]");
}

int otelctx__find_mapping(const struct vma *v, size_t n, uint64_t *start, uint64_t *end)
{
	const struct vma *found = NULL;

	for (size_t i = 0; i < n; i++) {
		if (!v[i].path || !otelctx__is_mapping_path(v[i].path))
			continue;
		/* A memfd mapped whole starts at offset 0; anonymous memory has pgoff = start >> 12,
		 * so only a file mapping's offset says anything. */
		if (found || (v[i].kind == VMA_MEMFD && v[i].pgoff != 0))
			return -EBADMSG;
		found = &v[i];
	}
	if (!found)
		return -ENOENT;
	*start = found->start;
	*end = found->end;
	return 0;
}

int otelctx__check_header(const void *buf, size_t len, struct otelctx_header *out)
{
	static const char zero[8];
	struct otelctx_header h;

	if (!buf || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (len < sizeof(h))
		return -EBADMSG;
	memcpy(&h, buf, sizeof(h));
	*out = h;
	if (!memcmp(h.signature, zero, sizeof(zero)))
		return -EAGAIN;		/* the signature is written after the other fields */
	if (memcmp(h.signature, OTELCTX_SIGNATURE, sizeof(h.signature)))
		return -EBADMSG;
	if (h.version != OTELCTX_VERSION)
		return -EPROTONOSUPPORT;
	if (!h.published_at_ns)
		return -EAGAIN;		/* being written: 0 until the payload fields are */
	if (h.payload_size > OTELCTX_PAYLOAD_MAX)
		return -E2BIG;
	if (h.payload_size && (!h.payload_ptr || h.payload_ptr + h.payload_size < h.payload_ptr))
		return -EBADMSG;
	return 0;
}

/* ---- payload ------------------------------------------------------------------------------- */

/* A copy of len bytes of s, cut at a character boundary to OTELCTX_VALUE_MAX, made valid UTF-8
 * without control characters. */
static char *copy_text(struct otelctx *c, const char *s, size_t len)
{
	char *out;

	if (len > OTELCTX_VALUE_MAX) {
		len = OTELCTX_VALUE_MAX;
		while (len && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;
		c->truncated++;
	}
	out = malloc(len + 1);
	if (!out)
		return NULL;
	memcpy(out, s, len);
	out[len] = 0;
	utf8__repair(out, len, UTF8_NO_CONTROL);
	return out;
}

/* A scalar value as text into buf; 0, or -1 for arrays, maps and bytes (not kept). */
static int scalar_text(const PbAnyValue *v, char *buf, size_t len, const char **text)
{
	if (!v) {
		*text = "";
		return 0;
	}
	switch (v->value_case) {
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE__NOT_SET:
		*text = "";
		return 0;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
		*text = v->string_value ? v->string_value : "";
		return 0;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
		*text = v->bool_value ? "true" : "false";
		return 0;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
		snprintf(buf, len, "%" PRId64, v->int_value);
		*text = buf;
		return 0;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE:
		snprintf(buf, len, "%.17g", v->double_value);
		*text = buf;
		return 0;
	default:
		return -1;
	}
}

/* OTEP 4947's key map: an array of strings, index -> name. */
static int take_key_map(struct otelctx *c, const PbAnyValue *v)
{
	const Opentelemetry__Proto__Common__V1__ArrayValue *a;

	if (c->has_key_map)
		return 0;	/* the first one counts */
	if (!v || v->value_case != OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE) {
		c->skipped++;
		return 0;
	}
	a = v->array_value;
	c->has_key_map = 1;
	for (size_t i = 0; a && i < a->n_values; i++) {
		const PbAnyValue *e = a->values[i];
		const char *name = "";

		if (c->n_keys == OTELCTX_MAX_KEYS) {
			c->key_bad += a->n_values - i;
			break;
		}
		if (e && e->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE &&
		    e->string_value)
			name = e->string_value;
		else
			c->key_bad++;	/* keeps its index: later names stay where they are */
		if (!(c->keys[c->n_keys] = copy_text(c, name, strlen(name))))
			return -ENOMEM;
		c->n_keys++;
	}
	return 0;
}

/* One KeyValue into list (resource or extra), or into the thread-local reference data. */
static int take_attr(struct otelctx *c, struct otelctx_attr *list, size_t *n, const PbKeyValue *kv)
{
	char num[40];
	const char *text;
	char *k, *val;

	if (!kv || !kv->key || !kv->key[0]) {
		c->skipped++;
		return 0;
	}
	if (!strcmp(kv->key, KEY_MAP_KEY))
		return take_key_map(c, kv->value);
	if (scalar_text(kv->value, num, sizeof(num), &text)) {
		c->skipped++;
		return 0;
	}
	if (!strcmp(kv->key, SCHEMA_KEY) && !c->schema) {
		if (!(c->schema = copy_text(c, text, strlen(text))))
			return -ENOMEM;
	}
	if (*n == OTELCTX_MAX_ATTRS) {
		c->skipped++;
		return 0;
	}
	for (size_t i = 0; i < *n; i++) {
		if (!strcmp(list[i].key, kv->key)) {
			c->skipped++;	/* keys must be unique: the first one stands */
			return 0;
		}
	}
	k = copy_text(c, kv->key, strlen(kv->key));
	val = copy_text(c, text, strlen(text));
	if (!k || !val) {
		free(k);
		free(val);
		return -ENOMEM;
	}
	list[*n] = (struct otelctx_attr){ k, val };
	(*n)++;
	return 0;
}

/* c from a decoded message (c reset first). */
static int fill(struct otelctx *c, const PbContext *m)
{
	int err = 0;

	reset(c);
	/* ProcessContext.attributes first: that is where OTEP 4947 puts its data. */
	for (size_t i = 0; !err && i < m->n_attributes; i++)
		err = take_attr(c, c->extra, &c->n_extra, m->attributes[i]);
	for (size_t i = 0; !err && m->resource && i < m->resource->n_attributes; i++)
		err = take_attr(c, c->res, &c->n_res, m->resource->attributes[i]);
	if (err)
		reset(c);
	return err;
}

/*
 * protobuf-c unpacks nested messages by recursion, without a depth limit: AnyValue -> ArrayValue ->
 * AnyValue -> ... 10000 levels deep (about 100 KB) overflowed spanprof's stack. And it allocates a
 * struct per message: 1 MiB of empty KeyValues is half a million of them. So the wire format is
 * walked first, descending only where the schema has a message, at most NEST_MAX levels deep (the
 * deepest sensible payload has under 10), over at most MSGS_MAX messages in all.
 */
#define NEST_MAX 32
#define MSGS_MAX 16384u

enum pb_msg { M_LEAF, M_CONTEXT, M_RESOURCE, M_KEYVALUE, M_ANYVALUE, M_ARRAY, M_KVLIST };

/* The message type of field f of a message of type t (M_LEAF: not a message). */
static enum pb_msg sub_msg(enum pb_msg t, uint64_t f)
{
	switch (t) {
	case M_CONTEXT:
		return f == 1 ? M_RESOURCE : f == 2 ? M_KEYVALUE : M_LEAF;
	case M_RESOURCE:
		return f == 1 ? M_KEYVALUE : M_LEAF;	/* entity_refs (3) hold strings only */
	case M_KEYVALUE:
		return f == 2 ? M_ANYVALUE : M_LEAF;
	case M_ANYVALUE:
		return f == 5 ? M_ARRAY : f == 6 ? M_KVLIST : M_LEAF;
	case M_ARRAY:
		return f == 1 ? M_ANYVALUE : M_LEAF;
	case M_KVLIST:
		return f == 1 ? M_KEYVALUE : M_LEAF;
	default:
		return M_LEAF;
	}
}

static int get_varint(const uint8_t *p, size_t len, size_t *i, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *i < len; shift += 7) {
		uint8_t b = p[(*i)++];

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 1;
	}
	return 0;
}

/* 1 when the message of type t in p[0, len) nests no deeper than NEST_MAX - depth more levels and
 * holds no more than *budget messages (taken from it), and is well-formed as far as the walk goes
 * (the rest is protobuf-c's to judge). */
static int nesting_ok(const uint8_t *p, size_t len, enum pb_msg t, int depth, uint32_t *budget)
{
	size_t i = 0;
	uint64_t key, v;

	if (depth > NEST_MAX || !*budget)
		return 0;
	(*budget)--;
	while (i < len) {
		if (!get_varint(p, len, &i, &key))
			return 0;
		switch (key & 7) {
		case 0:
			if (!get_varint(p, len, &i, &v))
				return 0;
			break;
		case 1:
			if (len - i < 8)
				return 0;
			i += 8;
			break;
		case 5:
			if (len - i < 4)
				return 0;
			i += 4;
			break;
		case 2:
			if (!get_varint(p, len, &i, &v) || v > len - i)
				return 0;
			if (sub_msg(t, key >> 3) != M_LEAF &&
			    !nesting_ok(p + i, v, sub_msg(t, key >> 3), depth + 1, budget))
				return 0;
			i += v;
			break;
		default:
			return 0;	/* groups and reserved wire types: not in this schema */
		}
	}
	return 1;
}

static PbContext *unpack(const uint8_t *payload, size_t len)
{
	uint32_t budget = MSGS_MAX;

	if (!len)
		payload = (const uint8_t *)"";
	if (!nesting_ok(payload, len, M_CONTEXT, 0, &budget))
		return NULL;
	return opentelemetry__proto__processcontext__v1development__process_context__unpack(NULL, len,
										    payload);
}

int otelctx__decode(struct otelctx *c, const uint8_t *payload, size_t len)
{
	PbContext *m;
	int err;

	if (!c || (!payload && len))
		return -EINVAL;
	m = unpack(payload, len);
	if (!m) {
		reset(c);
		return -EBADMSG;
	}
	err = fill(c, m);
	opentelemetry__proto__processcontext__v1development__process_context__free_unpacked(m, NULL);
	return err;
}

/* ---- reading ------------------------------------------------------------------------------- */

static int mid_update(int err, const struct otelctx_header *h)
{
	return err == -EAGAIN && !memcmp(h->signature, OTELCTX_SIGNATURE, sizeof(h->signature));
}

int otelctx__read(int dir_fd, uint64_t addr, struct otelctx *c, uint64_t *published_at,
		  struct otelctx_read_stats *st)
{
	struct otelctx_header raw, h, again;
	uint8_t *buf = NULL;
	PbContext *m;
	int mem, err = -EAGAIN;

	if (dir_fd < 0 || !c || !published_at || !st)
		return -EINVAL;
	mem = procfs__open_mem(dir_fd);
	if (mem < 0)
		return mem;
	for (int tries = 0; tries < READ_TRIES; tries++) {
		err = procfs__pread_mem(mem, addr, &raw, sizeof(raw));
		if (err)
			break;
		err = otelctx__check_header(&raw, sizeof(raw), &h);
		if (mid_update(err, &h)) {
			st->mid_update++;
			continue;
		}
		if (err)
			break;
		if (h.published_at_ns == *published_at) {
			st->unchanged++;
			err = 1;
			break;
		}
		free(buf);
		if (!(buf = malloc(h.payload_size ? h.payload_size : 1))) {
			err = -ENOMEM;
			break;
		}
		err = procfs__pread_mem(mem, h.payload_ptr, buf, h.payload_size);
		/* Then the header again: the same one means header and payload belong together (a
		 * payload freed by an update may also fail to read: that, too, shows here). */
		if (procfs__pread_mem(mem, addr, &again, sizeof(again)) == 0 &&
		    memcmp(&again, &h, sizeof(h))) {
			st->mid_update++;
			err = -EAGAIN;
			continue;
		}
		if (err)
			break;
		m = unpack(buf, h.payload_size);
		if (!m) {
			err = -EBADMSG;
			break;
		}
		err = fill(c, m);
		opentelemetry__proto__processcontext__v1development__process_context__free_unpacked(m, NULL);
		if (!err) {
			st->reads++;
			*published_at = h.published_at_ns;
		}
		break;
	}
	free(buf);
	close(mem);
	return err;
}

/* ---- accessors ----------------------------------------------------------------------------- */

size_t otelctx__resource_attrs(const struct otelctx *c, const struct otelctx_attr **out)
{
	*out = c->res;
	return c->n_res;
}

size_t otelctx__extra_attrs(const struct otelctx *c, const struct otelctx_attr **out)
{
	*out = c->extra;
	return c->n_extra;
}

const char *otelctx__get(const struct otelctx *c, const char *key)
{
	for (size_t i = 0; i < c->n_res; i++)
		if (!strcmp(c->res[i].key, key))
			return c->res[i].value;
	return NULL;
}

uint32_t otelctx__skipped(const struct otelctx *c)
{
	return c->skipped;
}

uint32_t otelctx__truncated(const struct otelctx *c)
{
	return c->truncated;
}

const char *otelctx__schema_version(const struct otelctx *c)
{
	return c->schema;
}

int otelctx__has_key_map(const struct otelctx *c)
{
	return c->has_key_map;
}

uint32_t otelctx__key_count(const struct otelctx *c)
{
	return c->n_keys;
}

const char *otelctx__key(const struct otelctx *c, uint32_t index)
{
	return index < c->n_keys ? c->keys[index] : NULL;
}

uint32_t otelctx__key_map_bad(const struct otelctx *c)
{
	return c->key_bad;
}

/* ---- the runtime --------------------------------------------------------------------------- */

/* The key map against the span table's key names (spanctx.c), when both exist. */
enum xcheck {
	XC_NONE = 0,	/* no key map, or not checked yet */
	XC_DONE,	/* compared: see mismatches, behind */
	XC_NO_TABLE,	/* a key map, but no (usable) span table to compare with */
};

struct otel_state {
	struct otelctx *ctx;
	int have;			/* ctx holds a decoded context */
	uint64_t map_start, map_end;
	uint64_t published_at;		/* of ctx */
	int last_err;
	struct otelctx_header bad_hdr;	/* of the last refused header (version, size) */
	struct otelctx_read_stats st;
	uint64_t refused;		/* reads that ended in a refusal (invalid, oversize, ...) */
	enum xcheck xc;
	int xc_due;
	uint32_t mismatches;		/* indexes whose names differ, or that the table lacks */
	uint32_t behind;		/* table keys the key map does not have yet */
};

/* A .NET process may publish at any time; any process that maps a context is looked at. */
static int detect(const struct proc *p)
{
	uint64_t start, end;

	return runtime__has(p, RT_DOTNET) || otelctx__find_mapping(p->vmas, p->nvmas, &start, &end) == 0;
}

static void *attach(struct proc *p, const struct runtime_env *env)
{
	struct otel_state *s = calloc(1, sizeof(*s));

	if (s && !(s->ctx = otelctx__new())) {
		free(s);
		s = NULL;
	}
	if (s)
		s->last_err = -ENOENT;
	return s;
}

static void forget(struct otel_state *s)
{
	s->have = 0;
	s->published_at = 0;
	s->xc = XC_NONE;
	s->xc_due = 0;
	s->mismatches = s->behind = 0;
}

/* Run when a new context was decoded (or the last check must be repeated): the table's names are
 * read for the check and not kept (hookproc.c keeps its own copy for decoding). */
static void cross_check(struct proc *p, struct otel_state *s)
{
	struct spanctx_keys *keys = NULL;
	struct spanctx_table tbl;
	struct sp_ctx_proc cp;
	uint64_t start, end;
	uint32_t n_map, n_table;
	int n = -1;

	s->xc_due = 0;
	if (!otelctx__has_key_map(s->ctx)) {
		s->xc = XC_NONE;
		return;
	}
	if (spanctx__find_table(p->vmas, p->nvmas, &start, &end) ||
	    spanctx__open(p->dir_fd, p->nspid, start, end, &cp, &tbl) ||
	    !(keys = spanctx_keys__new()) || (n = spanctx_keys__load(keys, p->dir_fd, &tbl)) < 0) {
		spanctx_keys__free(keys);
		s->xc = XC_NO_TABLE;
		s->xc_due = 1;	/* the table may come (or be readable) later */
		return;
	}
	n_map = otelctx__key_count(s->ctx);
	n_table = (uint32_t)n;
	s->mismatches = s->behind = 0;
	for (uint32_t i = 0; i < n_map; i++) {
		const char *t = spanctx_keys__name(keys, i);

		if (!t || strcmp(t, otelctx__key(s->ctx, i)))
			s->mismatches++;
	}
	/* The hook appends a key to its table before it republishes the context: a reader can see
	 * the table ahead for a moment. Looked at again at the next poll. */
	if (n_table > n_map) {
		s->behind = n_table - n_map;
		s->xc_due = 1;
	}
	s->xc = XC_DONE;
	spanctx_keys__free(keys);
}

static int find_and_read(struct proc *p, struct otel_state *s)
{
	uint64_t start, end;
	int err;

	err = otelctx__find_mapping(p->vmas, p->nvmas, &start, &end);
	if (err) {
		if (s->have || s->last_err != err)
			forget(s);	/* dropped, or never there */
		return s->last_err = err;
	}
	if (start != s->map_start || end != s->map_end) {
		forget(s);	/* published anew in another mapping */
		s->map_start = start;
		s->map_end = end;
	}
	err = otelctx__read(p->dir_fd, start, s->ctx, &s->published_at, &s->st);
	if (err == 1 && !s->have)
		return s->last_err;	/* the refused context, unchanged: its payload is not read again */
	if (err >= 0) {
		if (err == 0) {
			s->have = 1;
			s->xc_due = 1;
		}
		s->last_err = 0;
		return 0;
	}
	if (err == -EAGAIN && s->have)
		return 0;	/* the last context stands while the next one is written */
	if (err == -EBADMSG || err == -E2BIG || err == -EPROTONOSUPPORT) {
		struct otelctx_header h;

		/* Counted once per refused header, however often it is looked at again. */
		if (procfs__read_mem(p->dir_fd, start, &h, sizeof(h)) ||
		    memcmp(&h, &s->bad_hdr, sizeof(h)) || s->last_err != err)
			s->refused++;
		s->bad_hdr = h;
		forget(s);
		s->published_at = h.published_at_ns;
	}
	return s->last_err = err;
}

/*
 * The mappings as last read are searched first; only when no context is there are they read
 * again, at the pace of the runtime backoff. A context found stays watched: its header is read
 * again at every poll (RT_WAIT, so with the backoff: every 0.5 s while the process is young, up
 * to every 8 s later) and its payload only when published_at_ns changed (key map grown, SDK
 * resource known).
 */
static int poll(struct proc *p, void *state, const struct runtime_env *env)
{
	struct otel_state *s = state;
	int err;

	if (p->gone)
		return RT_DONE;
	err = find_and_read(p, s);
	if (err == -ENOENT && !proc__refresh_maps(p, RUNTIME_BACKOFF_MIN_NS))
		err = find_and_read(p, s);
	if (!err && s->xc_due)
		cross_check(p, s);
	return !err || err == -ENOENT || err == -EAGAIN ? RT_WAIT : err;
}

static void describe(const struct proc *p, const void *state, char *buf, size_t len)
{
	const struct otel_state *s = state;
	const char *svc, *schema;
	size_t off = 0;

#define OUT(...)                                                                   \
	do {                                                                       \
		if (off < len)                                                     \
			off += snprintf(buf + off, len - off, __VA_ARGS__);        \
	} while (0)
	if (!s->have) {
		switch (s->last_err) {
		case -ENOENT:
			OUT("no OTEL_CTX");
			break;
		case -EAGAIN:
			OUT("OTEL_CTX not published yet");
			break;
		case -EPROTONOSUPPORT:
			OUT("OTEL_CTX of version %u: ignored", s->bad_hdr.version);
			break;
		case -E2BIG:
			OUT("OTEL_CTX payload of %u bytes (limit %u): ignored", s->bad_hdr.payload_size,
			    OTELCTX_PAYLOAD_MAX);
			break;
		case -EBADMSG:
			OUT("invalid OTEL_CTX (header or payload): ignored");
			break;
		default:
			OUT("OTEL_CTX unreadable: %s", strerror(-s->last_err));
			break;
		}
	} else {
		svc = otelctx__get(s->ctx, "service.name");
		schema = otelctx__schema_version(s->ctx);
		OUT("OTEL_CTX v%u: service.name \"%.64s\", %zu resource attributes", OTELCTX_VERSION,
		    svc ? svc : "", s->ctx->n_res);
		if (otelctx__has_key_map(s->ctx))
			OUT(", key map %u keys (%.32s)", otelctx__key_count(s->ctx),
			    schema ? schema : "no schema_version");
		if (s->xc == XC_DONE)
			OUT(", %u mismatches with the span table", s->mismatches);
		if (s->xc == XC_DONE && s->behind)
			OUT(" (%u table keys not in it yet)", s->behind);
		if (s->xc == XC_NO_TABLE)
			OUT(", no span table to check it against");
	}
	if (s->st.reads || s->st.mid_update || s->refused)
		OUT("; %" PRIu64 " read", s->st.reads);
	if (s->st.mid_update)
		OUT(", %" PRIu64 " caught mid-update (retried)", s->st.mid_update);
	if (s->refused)
		OUT(", %" PRIu64 " refused", s->refused);
#undef OUT
}

static void detach(struct proc *p, void *state, const struct runtime_env *env)
{
	struct otel_state *s = state;

	otelctx__free(s->ctx);
	free(s);
}

const struct runtime_ops otelctx_runtime = {
	.name = "otelctx",
	.detect = detect,
	.attach = attach,
	.poll = poll,
	.describe = describe,
	.detach = detach,
};

const char *otelctx__service_name(const struct proc *p)
{
	const struct otel_state *s = runtime__state(p, RT_OTELCTX);
	const char *v;

	if (!s || !s->have)
		return NULL;
	v = otelctx__get(s->ctx, "service.name");
	return v && v[0] ? v : NULL;
}

int otelctx__resource(const struct proc *p, const struct otelctx_attr **attrs, size_t *n)
{
	const struct otel_state *s = runtime__state(p, RT_OTELCTX);

	if (!s || !s->have)
		return -ENOENT;
	*n = otelctx__resource_attrs(s->ctx, attrs);
	return 0;
}
