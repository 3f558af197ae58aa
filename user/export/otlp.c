/* otlp.c: encodes a batch as one OTLP profiles ExportProfilesServiceRequest (protobuf-c, one
 * dictionary shared by every profile of the request), writes it to files, resolves the OTLP
 * exporter settings (flags over OTEL_EXPORTER_OTLP_*), and hands requests to the delivery path. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>
#include <zlib.h>

#include "intern.h"
#include "otlp.h"
#include "profile.h"
#include "util.h"
#include "vec.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

#ifndef SPANPROF_VERSION
#define SPANPROF_VERSION "dev"
#endif

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	pb_request;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary pb_dict;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles pb_rprofiles;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles pb_sprofiles;
typedef Opentelemetry__Proto__Profiles__V1development__Profile pb_profile;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType pb_value_type;
typedef Opentelemetry__Proto__Profiles__V1development__Sample pb_sample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping pb_mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Location pb_location;
typedef Opentelemetry__Proto__Profiles__V1development__Line pb_line;
typedef Opentelemetry__Proto__Profiles__V1development__Function pb_function;
typedef Opentelemetry__Proto__Profiles__V1development__Stack pb_stack;
typedef Opentelemetry__Proto__Profiles__V1development__Link pb_link;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit pb_kvu;
typedef Opentelemetry__Proto__Common__V1__AnyValue pb_any;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_kv;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope pb_scope;
typedef Opentelemetry__Proto__Resource__V1__Resource pb_resource;

#define REQ_SIZE	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size
#define REQ_PACK	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack
#define REQ_INIT	OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT
#define ANY_STRING	OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE
#define ANY_INT		OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE

#define SCOPE_NAME	"spanprof"
#define FRAME_TYPE_KEY	"profile.frame.type"
#define BUILD_ID_KEY	"process.executable.build_id.gnu"
#define UNKNOWN_SERVICE	"unknown_service"	/* the SDKs' default service.name */

/* ---- label names -> semantic conventions ----------------------------------------------------- */

/* spanprof's pprof label (or agent series label) names and the attribute each becomes. */
static const struct {
	const char *label;
	const char *attr;
	int integer;	/* an int attribute when the value is a decimal number */
} semconv[] = {
	{ "pid", "process.pid", 1 },
	{ "tid", "thread.id", 1 },
	{ "thread_name", "thread.name", 0 },
	{ "process_name", "process.executable.name", 0 },
	{ "container_id", "container.id", 0 },
	{ "service_name", "service.name", 0 },
	{ "namespace", "k8s.namespace.name", 0 },
	{ "pod", "k8s.pod.name", 0 },
	{ "container", "k8s.container.name", 0 },
	{ "node", "k8s.node.name", 0 },
};

static const char *attr_name(const char *label, int *integer)
{
	for (size_t i = 0; i < sizeof(semconv) / sizeof(semconv[0]); i++) {
		if (!strcmp(label, semconv[i].label)) {
			*integer = semconv[i].integer;
			return semconv[i].attr;
		}
	}
	*integer = 0;
	return label;
}

/* A decimal integer that fits int64, all of s. */
static int parse_int(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!s[0] || isspace((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* Exactly 2 * n hex digits into n bytes. */
static int parse_hex(const char *s, uint8_t *out, size_t n)
{
	size_t i;

	if (strlen(s) != 2 * n)
		return -1;
	for (i = 0; i < 2 * n; i++) {
		int c = (unsigned char)s[i], v;

		if (c >= '0' && c <= '9')
			v = c - '0';
		else if (c >= 'a' && c <= 'f')
			v = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v = c - 'A' + 10;
		else
			return -1;
		if (i % 2)
			out[i / 2] |= (uint8_t)v;
		else
			out[i / 2] = (uint8_t)(v << 4);
	}
	return 0;
}

/* ---- the dictionary ------------------------------------------------------------------------- */

/*
 * Each table interns a fixed key per entry (zeroed first: padding takes part in the hash), so
 * equal entries share one index across every profile of the request. Entry 0 of each is the zero
 * value, interned first, so index 0 means "none" as the schema requires.
 */
struct map_key {
	uint64_t start, limit, offset;
	int32_t filename;
	int32_t attr;		/* build id attribute, or 0 */
};

struct fn_key {
	int32_t name, system_name, filename;
};

struct loc_key {
	uint64_t address;
	int32_t mapping;
	int32_t function;	/* 0: no line */
	int32_t attr;		/* profile.frame.type */
	int32_t pad;
};

struct link_key {
	uint8_t trace[16];
	uint8_t span[8];
	uint8_t has_trace, has_span;
};

/* An attribute: key string index, a kind byte, then the value (the intern's NUL ends a string). */
#define ATTR_HDR (sizeof(int32_t) + 1)
enum { KIND_STR = 's', KIND_INT = 'i' };

struct dict {
	struct intern *str, *map, *fn, *loc, *stack, *link, *attr;
	int32_t frame_type[3];	/* the kernel, dotnet, native attributes once used; 0 before */
};

static void dict_free(struct dict *d)
{
	intern__free(d->str);
	intern__free(d->map);
	intern__free(d->fn);
	intern__free(d->loc);
	intern__free(d->stack);
	intern__free(d->link);
	intern__free(d->attr);
}

/* The index of a new or known entry, or -ENOMEM. Tables stay far below 2^31 entries: a window's
 * profile is bounded by the engine, and intern ids are 32-bit anyway. */
static int32_t put(struct intern *in, const void *key, size_t len)
{
	int64_t id = intern__id(in, key, len, NULL);

	return id < 0 || id > INT32_MAX ? -ENOMEM : (int32_t)id;
}

static int32_t dict_str(struct dict *d, const char *s)
{
	return put(d->str, s ? s : "", s ? strlen(s) : 0);
}

static int32_t dict_attr(struct dict *d, const char *key, int kind, const char *sval, int64_t ival)
{
	size_t vlen = kind == KIND_STR ? strlen(sval) : sizeof(ival), len = ATTR_HDR + vlen;
	int32_t k = dict_str(d, key), idx;
	uint8_t stack_buf[256], *buf = len <= sizeof(stack_buf) ? stack_buf : malloc(len);

	if (k < 0 || !buf) {
		if (buf && buf != stack_buf)
			free(buf);
		return -ENOMEM;
	}
	memcpy(buf, &k, sizeof(k));
	buf[sizeof(k)] = (uint8_t)kind;
	memcpy(buf + ATTR_HDR, kind == KIND_STR ? (const void *)sval : (const void *)&ival, vlen);
	idx = put(d->attr, buf, len);
	if (buf != stack_buf)
		free(buf);
	return idx;
}

/* A label as an attribute (semantic-convention name, integers where they are numbers). */
static int32_t dict_label_attr(struct dict *d, const char *key, const char *value)
{
	int integer;
	const char *name = attr_name(key, &integer);
	int64_t v;

	if (integer && !parse_int(value, &v))
		return dict_attr(d, name, KIND_INT, NULL, v);
	return dict_attr(d, name, KIND_STR, value, 0);
}

static int dict_init(struct dict *d)
{
	struct map_key mk;
	struct fn_key fk;
	struct loc_key lk;
	struct link_key nk;

	memset(d, 0, sizeof(*d));
	memset(&mk, 0, sizeof(mk));
	memset(&fk, 0, sizeof(fk));
	memset(&lk, 0, sizeof(lk));
	memset(&nk, 0, sizeof(nk));
	d->str = intern__new();
	d->map = intern__new();
	d->fn = intern__new();
	d->loc = intern__new();
	d->stack = intern__new();
	d->link = intern__new();
	d->attr = intern__new();
	if (!d->str || !d->map || !d->fn || !d->loc || !d->stack || !d->link || !d->attr)
		return -ENOMEM;
	/* the zero entries; an empty attribute key decodes as KeyValueAndUnit{} */
	if (dict_str(d, "") || put(d->map, &mk, sizeof(mk)) || put(d->fn, &fk, sizeof(fk)) ||
	    put(d->loc, &lk, sizeof(lk)) || put(d->stack, "", 0) ||
	    put(d->link, &nk, sizeof(nk)) || put(d->attr, "", 0))
		return -ENOMEM;
	return 0;
}

/* The profile.frame.type attribute of kind 0..2, interned on first use (no orphan entries). */
static int32_t dict_frame_type(struct dict *d, int kind)
{
	static const char *const types[] = { "kernel", "dotnet", "native" };

	if (!d->frame_type[kind])
		d->frame_type[kind] = dict_attr(d, FRAME_TYPE_KEY, KIND_STR, types[kind], 0);
	return d->frame_type[kind];
}

/* ---- one profile into the dictionary ------------------------------------------------------- */

/* Profile ids -> dictionary indexes, per profile (0: not seen yet). */
struct remap {
	int32_t *map, *fn, *loc;
	size_t n_loc;
};

static int ends_with_ci(const char *s, const char *suffix)
{
	size_t n = s ? strlen(s) : 0, m = strlen(suffix);

	return n >= m && !strcasecmp(s + n - m, suffix);
}

/*
 * The frame's kind, from what symbolization left: the kernel's one mapping; .NET code, which is
 * JIT code (perf map / jitdump), a frame the .NET runtime named (only it gives system names), or
 * ReadyToRun code inside an assembly image; everything else native.
 */
static int frame_kind(const struct pf_mapping *m, const struct pf_function_view *f)
{
	if (m && m->filename && !strcmp(m->filename, "[kernel.kallsyms]"))
		return 0;
	if ((m && m->is_jit) || (f && f->system_name && f->system_name[0]) ||
	    (m && ends_with_ci(m->filename, ".dll")))
		return 1;
	return 2;
}

static int32_t mapping_of(struct dict *d, const struct profile *p, struct remap *r, uint32_t id,
			  struct pf_mapping *mv)
{
	struct map_key k;
	int32_t idx;

	memset(mv, 0, sizeof(*mv));
	if (!id || profile__mapping_get(p, id, mv))
		return 0;
	if (r->map[id])
		return r->map[id];
	memset(&k, 0, sizeof(k));
	k.start = mv->start;
	k.limit = mv->limit;
	k.offset = mv->offset;
	k.filename = dict_str(d, mv->filename);
	k.attr = mv->build_id && mv->build_id[0] ?
			 dict_attr(d, BUILD_ID_KEY, KIND_STR, mv->build_id, 0) : 0;
	if (k.filename < 0 || k.attr < 0)
		return -ENOMEM;
	idx = put(d->map, &k, sizeof(k));
	if (idx > 0)
		r->map[id] = idx;
	return idx;
}

static int32_t function_of(struct dict *d, const struct profile *p, struct remap *r,
			   uint32_t id, struct pf_function_view *fv)
{
	struct fn_key k;
	int32_t idx;

	memset(fv, 0, sizeof(*fv));
	if (!id || profile__function_get(p, id, fv))
		return 0;
	if (r->fn[id])
		return r->fn[id];
	memset(&k, 0, sizeof(k));
	k.name = dict_str(d, fv->name);
	k.system_name = dict_str(d, fv->system_name);
	k.filename = dict_str(d, fv->filename);
	if (k.name < 0 || k.system_name < 0 || k.filename < 0)
		return -ENOMEM;
	idx = put(d->fn, &k, sizeof(k));
	if (idx > 0)
		r->fn[id] = idx;
	return idx;
}

static int32_t location_of(struct dict *d, const struct profile *p, struct remap *r, uint32_t id)
{
	struct pf_location_view lv;
	struct pf_mapping mv;
	struct pf_function_view fv;
	struct loc_key k;
	int32_t idx;

	if (!id || id > r->n_loc || profile__location_get(p, id, &lv))
		return -EINVAL;
	if (r->loc[id])
		return r->loc[id];
	memset(&k, 0, sizeof(k));
	k.address = lv.address;
	k.mapping = mapping_of(d, p, r, lv.mapping_id, &mv);
	k.function = function_of(d, p, r, lv.function_id, &fv);
	if (k.mapping < 0 || k.function < 0)
		return -ENOMEM;
	k.attr = dict_frame_type(d, frame_kind(lv.mapping_id ? &mv : NULL,
					       lv.function_id ? &fv : NULL));
	if (k.attr < 0)
		return -ENOMEM;
	idx = put(d->loc, &k, sizeof(k));
	if (idx > 0)
		r->loc[id] = idx;
	return idx;
}

/* One sample as the request will hold it. */
struct smp {
	int32_t stack;
	int32_t link;
	size_t attr_off;	/* its attribute indices in the batch-wide pool */
	size_t n_attr;
	int64_t value;
};

struct build {
	struct dict d;
	struct smp *smp;
	size_t n_smp, cap_smp;
	int32_t *attrs;		/* every sample's attribute indices */
	size_t n_attrs, cap_attrs;
	int32_t *locs;		/* scratch: one stack */
	size_t cap_locs;
};

static int link_of(struct dict *d, const struct pf_sample_view *s, int32_t *link, uint32_t *used)
{
	const char *trace = profile__label(s, "trace_id"), *span = profile__label(s, "span_id");
	struct link_key k;

	*used = 0;
	*link = 0;
	memset(&k, 0, sizeof(k));
	k.has_trace = trace && !parse_hex(trace, k.trace, sizeof(k.trace));
	k.has_span = span && !parse_hex(span, k.span, sizeof(k.span));
	/* Without a span id, a trace id alone still names the trace the sample ran in. */
	if (!k.has_trace && !k.has_span)
		return 0;
	*used = (k.has_trace ? 1 : 0) | (k.has_span ? 2 : 0);
	*link = put(d->link, &k, sizeof(k));
	return *link < 0 ? -ENOMEM : 0;
}

/*
 * Every sample of p into b, its tables into b->d. *proc_name: the one process_name label of
 * every sample, NULL when there are several (for a default service.name).
 */
static int add_profile(struct build *b, const struct profile *p, int off_cpu,
		       struct otlp_encode_info *info, const char **proc_name, int *proc_many)
{
	struct remap r = { 0 };
	size_t n = profile__sample_count(p), i, j;
	int err = 0;

	r.map = calloc(profile__mapping_count(p) + 1, sizeof(*r.map));
	r.fn = calloc(profile__function_count(p) + 1, sizeof(*r.fn));
	r.n_loc = profile__location_count(p);
	r.loc = calloc(r.n_loc + 1, sizeof(*r.loc));
	if (!r.map || !r.fn || !r.loc) {
		err = -ENOMEM;
		goto free_remap;
	}
	for (i = 0; i < n; i++) {
		struct pf_sample_view s;
		struct smp *o;
		const char *pn;
		uint32_t used;

		if (profile__sample(p, i, &s)) {
			err = -EINVAL;
			goto free_remap;
		}
		if (off_cpu ? !s.off_ns : !s.count)
			continue;	/* only the other value */
		if (VEC_RESERVE(b->smp, b->cap_smp, b->n_smp + 1) ||
		    VEC_RESERVE(b->locs, b->cap_locs, s.n_locs + 1) ||
		    VEC_RESERVE(b->attrs, b->cap_attrs, b->n_attrs + s.n_labels + 1)) {
			err = -ENOMEM;
			goto free_remap;
		}
		o = &b->smp[b->n_smp];
		memset(o, 0, sizeof(*o));
		for (j = 0; j < s.n_locs; j++) {
			int32_t l = location_of(&b->d, p, &r, s.locs[j]);

			if (l < 0) {
				err = l;
				goto free_remap;
			}
			b->locs[j] = l;
		}
		o->stack = put(b->d.stack, b->locs, s.n_locs * sizeof(*b->locs));
		if (o->stack < 0 || link_of(&b->d, &s, &o->link, &used)) {
			err = -ENOMEM;
			goto free_remap;
		}
		info->linked += o->link != 0;
		o->attr_off = b->n_attrs;
		for (j = 0; j < s.n_labels; j++) {
			const char *k = s.labels[j].key;
			int32_t a;
			int dup = 0;

			if (((used & 1) && !strcmp(k, "trace_id")) ||
			    ((used & 2) && !strcmp(k, "span_id")))
				continue;	/* in the Link */
			a = dict_label_attr(&b->d, k, s.labels[j].value);
			if (a < 0) {
				err = -ENOMEM;
				goto free_remap;
			}
			/* Keys are unique per sample: a second value of one label (or a user label
			 * that is already a semantic-convention name) keeps the first. */
			for (size_t m = o->attr_off; m < b->n_attrs && !dup; m++) {
				const uint8_t *x = intern__key(b->d.attr, b->attrs[m], NULL);
				const uint8_t *y = intern__key(b->d.attr, a, NULL);

				dup = !memcmp(x, y, sizeof(int32_t));
			}
			if (!dup)
				b->attrs[b->n_attrs++] = a;
		}
		o->n_attr = b->n_attrs - o->attr_off;
		if (off_cpu) {
			o->value = s.off_ns > INT64_MAX ? INT64_MAX : (int64_t)s.off_ns;
			info->off_samples++;
			info->off_total_ns += s.off_ns;
		} else {
			o->value = s.count > INT64_MAX ? INT64_MAX : (int64_t)s.count;
			info->samples++;
			info->total += s.count;
		}
		pn = profile__label(&s, "process_name");
		if (pn && !*proc_name)
			*proc_name = pn;
		else if (!pn || strcmp(pn, *proc_name))
			*proc_many = 1;
		b->n_smp++;
	}
free_remap:
	free(r.map);
	free(r.fn);
	free(r.loc);
	return err;
}

/* ---- the request ---------------------------------------------------------------------------- */

/* Where each series' samples and resource attributes are. */
struct series_out {
	size_t first, n;	/* samples in b->smp */
	size_t off_first, off_n;	/* its off-CPU profile's samples in b->smp */
	uint8_t off_id[16];
	pb_kv *kv;
	pb_kv **kv_p;
	pb_any *any;
	size_t n_kv;
	char *service;		/* a default service.name, malloc'd, or NULL */
	uint8_t id[16];
	const struct profile *prof;
};

/* Random profile ids; when the kernel has no entropy yet, time, pid and a counter mixed. */
static void new_profile_id(uint8_t *id)
{
	static uint64_t counter;
	uint64_t x;

	if (getrandom(id, 16, GRND_NONBLOCK) == 16)
		return;
	x = now_ns() ^ ((uint64_t)getpid() << 32) ^
	    __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 16; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		id[i] = (uint8_t)(x >> 24);
	}
	id[0] |= 1;	/* never all zero: that id is invalid */
}

/*
 * The series' resource: its labels as semantic-convention attributes (inline keys: Resource is
 * not in the dictionary), __name__ left out (Pyroscope's profile type: OTLP has sample_type),
 * service.name always present.
 */
static int resource_of(const struct export_series *s, const char *proc_name, int proc_many,
		       struct series_out *so)
{
	size_t i, n = 0;
	int have_service = 0, integer;
	int64_t v;

	so->kv = calloc(s->n_labels + 1, sizeof(*so->kv));
	so->kv_p = calloc(s->n_labels + 1, sizeof(*so->kv_p));
	so->any = calloc(s->n_labels + 1, sizeof(*so->any));
	if (!so->kv || !so->kv_p || !so->any)
		return -ENOMEM;
	for (i = 0; i < s->n_labels; i++) {
		const struct pf_label *l = &s->labels[i];
		const char *key;
		int dup = 0;

		if (!l->key || !l->key[0] || !l->value || !l->value[0] || !strcmp(l->key, "__name__"))
			continue;
		key = attr_name(l->key, &integer);
		for (size_t j = 0; j < n && !dup; j++)
			dup = !strcmp(so->kv[j].key, key);
		if (dup)
			continue;
		opentelemetry__proto__common__v1__key_value__init(&so->kv[n]);
		opentelemetry__proto__common__v1__any_value__init(&so->any[n]);
		so->kv[n].key = (char *)key;
		so->kv[n].value = &so->any[n];
		if (integer && !parse_int(l->value, &v)) {
			so->any[n].value_case = ANY_INT;
			so->any[n].int_value = v;
		} else {
			so->any[n].value_case = ANY_STRING;
			so->any[n].string_value = (char *)l->value;
		}
		have_service |= !strcmp(key, "service.name");
		so->kv_p[n] = &so->kv[n];
		n++;
	}
	if (!have_service) {
		/* What an SDK says when nobody named the service: of the one process, if one. */
		if (proc_name && !proc_many) {
			if (asprintf(&so->service, UNKNOWN_SERVICE ":%s", proc_name) < 0) {
				so->service = NULL;
				return -ENOMEM;
			}
		} else if (!(so->service = strdup(UNKNOWN_SERVICE))) {
			return -ENOMEM;
		}
		opentelemetry__proto__common__v1__key_value__init(&so->kv[n]);
		opentelemetry__proto__common__v1__any_value__init(&so->any[n]);
		so->kv[n].key = "service.name";
		so->kv[n].value = &so->any[n];
		so->any[n].value_case = ANY_STRING;
		so->any[n].string_value = so->service;
		so->kv_p[n] = &so->kv[n];
		n++;
	}
	so->n_kv = n;
	return 0;
}

/* The messages built from the dictionary and the samples; freed with msgs_free. */
struct msgs {
	char **strings;
	pb_mapping *maps;
	pb_mapping **maps_p;
	int32_t *map_attr;
	pb_function *fns;
	pb_function **fns_p;
	pb_location *locs;
	pb_location **locs_p;
	pb_line *lines;
	pb_line **lines_p;
	int32_t *loc_attr;
	pb_stack *stacks;
	pb_stack **stacks_p;
	int32_t *stack_locs;
	pb_link *links;
	pb_link **links_p;
	pb_kvu *attrs;
	pb_kvu **attrs_p;
	pb_any *attr_vals;
	pb_sample *samples;
	pb_sample **samples_p;
};

static void msgs_free(struct msgs *m)
{
	free(m->strings);
	free(m->maps);
	free(m->maps_p);
	free(m->map_attr);
	free(m->fns);
	free(m->fns_p);
	free(m->locs);
	free(m->locs_p);
	free(m->lines);
	free(m->lines_p);
	free(m->loc_attr);
	free(m->stacks);
	free(m->stacks_p);
	free(m->stack_locs);
	free(m->links);
	free(m->links_p);
	free(m->attrs);
	free(m->attrs_p);
	free(m->attr_vals);
	free(m->samples);
	free(m->samples_p);
}

/* The dictionary's tables as protobuf-c messages (pointing into the interned keys). */
static int build_dict(struct build *b, struct msgs *m, pb_dict *pd)
{
	struct dict *d = &b->d;
	size_t ns = intern__count(d->str), nm = intern__count(d->map), nf = intern__count(d->fn);
	size_t nl = intern__count(d->loc), nk = intern__count(d->stack);
	size_t nn = intern__count(d->link), na = intern__count(d->attr);
	size_t i, len, stack_total = 0, at = 0;

	for (i = 0; i < nk; i++) {
		intern__key(d->stack, i, &len);
		stack_total += len / sizeof(int32_t);
	}
	m->strings = calloc(ns, sizeof(*m->strings));
	m->maps = calloc(nm, sizeof(*m->maps));
	m->maps_p = calloc(nm, sizeof(*m->maps_p));
	m->map_attr = calloc(nm, sizeof(*m->map_attr));
	m->fns = calloc(nf, sizeof(*m->fns));
	m->fns_p = calloc(nf, sizeof(*m->fns_p));
	m->locs = calloc(nl, sizeof(*m->locs));
	m->locs_p = calloc(nl, sizeof(*m->locs_p));
	m->lines = calloc(nl, sizeof(*m->lines));
	m->lines_p = calloc(nl, sizeof(*m->lines_p));
	m->loc_attr = calloc(nl, sizeof(*m->loc_attr));
	m->stacks = calloc(nk, sizeof(*m->stacks));
	m->stacks_p = calloc(nk, sizeof(*m->stacks_p));
	m->stack_locs = calloc(stack_total + 1, sizeof(*m->stack_locs));
	m->links = calloc(nn, sizeof(*m->links));
	m->links_p = calloc(nn, sizeof(*m->links_p));
	m->attrs = calloc(na, sizeof(*m->attrs));
	m->attrs_p = calloc(na, sizeof(*m->attrs_p));
	m->attr_vals = calloc(na, sizeof(*m->attr_vals));
	if (!m->strings || !m->maps || !m->maps_p || !m->map_attr || !m->fns || !m->fns_p ||
	    !m->locs || !m->locs_p || !m->lines || !m->lines_p || !m->loc_attr || !m->stacks ||
	    !m->stacks_p || !m->stack_locs || !m->links || !m->links_p || !m->attrs ||
	    !m->attrs_p || !m->attr_vals)
		return -ENOMEM;

	for (i = 0; i < ns; i++)	/* interned keys end in a NUL: C strings as they are */
		m->strings[i] = (char *)intern__key(d->str, i, NULL);
	for (i = 0; i < nm; i++) {
		struct map_key k;

		memcpy(&k, intern__key(d->map, i, NULL), sizeof(k));	/* keys are not aligned */
		opentelemetry__proto__profiles__v1development__mapping__init(&m->maps[i]);
		m->maps[i].memory_start = k.start;
		m->maps[i].memory_limit = k.limit;
		m->maps[i].file_offset = k.offset;
		m->maps[i].filename_strindex = k.filename;
		m->map_attr[i] = k.attr;
		m->maps[i].n_attribute_indices = k.attr ? 1 : 0;
		m->maps[i].attribute_indices = &m->map_attr[i];
		m->maps_p[i] = &m->maps[i];
	}
	for (i = 0; i < nf; i++) {
		struct fn_key k;

		memcpy(&k, intern__key(d->fn, i, NULL), sizeof(k));
		opentelemetry__proto__profiles__v1development__function__init(&m->fns[i]);
		m->fns[i].name_strindex = k.name;
		m->fns[i].system_name_strindex = k.system_name;
		m->fns[i].filename_strindex = k.filename;
		m->fns_p[i] = &m->fns[i];
	}
	for (i = 0; i < nl; i++) {
		struct loc_key k;

		memcpy(&k, intern__key(d->loc, i, NULL), sizeof(k));
		opentelemetry__proto__profiles__v1development__location__init(&m->locs[i]);
		opentelemetry__proto__profiles__v1development__line__init(&m->lines[i]);
		m->locs[i].mapping_index = k.mapping;
		m->locs[i].address = k.address;
		m->lines[i].function_index = k.function;
		m->lines_p[i] = &m->lines[i];
		m->locs[i].n_lines = k.function ? 1 : 0;
		m->locs[i].lines = &m->lines_p[i];
		m->loc_attr[i] = k.attr;
		m->locs[i].n_attribute_indices = k.attr ? 1 : 0;
		m->locs[i].attribute_indices = &m->loc_attr[i];
		m->locs_p[i] = &m->locs[i];
	}
	for (i = 0; i < nk; i++) {
		const void *key = intern__key(d->stack, i, &len);

		opentelemetry__proto__profiles__v1development__stack__init(&m->stacks[i]);
		memcpy(m->stack_locs + at, key, len);
		m->stacks[i].n_location_indices = len / sizeof(int32_t);
		m->stacks[i].location_indices = m->stack_locs + at;
		at += len / sizeof(int32_t);
		m->stacks_p[i] = &m->stacks[i];
	}
	for (i = 0; i < nn; i++) {
		const struct link_key *k = intern__key(d->link, i, NULL);	/* bytes only */

		opentelemetry__proto__profiles__v1development__link__init(&m->links[i]);
		if (k->has_trace) {
			m->links[i].trace_id.data = (uint8_t *)k->trace;
			m->links[i].trace_id.len = sizeof(k->trace);
		}
		if (k->has_span) {
			m->links[i].span_id.data = (uint8_t *)k->span;
			m->links[i].span_id.len = sizeof(k->span);
		}
		m->links_p[i] = &m->links[i];
	}
	for (i = 0; i < na; i++) {
		const uint8_t *key = intern__key(d->attr, i, &len);
		int32_t kidx;

		opentelemetry__proto__profiles__v1development__key_value_and_unit__init(&m->attrs[i]);
		m->attrs_p[i] = &m->attrs[i];
		if (len < ATTR_HDR)
			continue;	/* the zero entry */
		memcpy(&kidx, key, sizeof(kidx));
		opentelemetry__proto__common__v1__any_value__init(&m->attr_vals[i]);
		m->attrs[i].key_strindex = kidx;
		m->attrs[i].value = &m->attr_vals[i];
		if (key[sizeof(kidx)] == KIND_INT) {
			m->attr_vals[i].value_case = ANY_INT;
			memcpy(&m->attr_vals[i].int_value, key + ATTR_HDR, sizeof(int64_t));
		} else {
			m->attr_vals[i].value_case = ANY_STRING;
			m->attr_vals[i].string_value = (char *)(key + ATTR_HDR);
		}
	}
	pd->n_string_table = ns;
	pd->string_table = m->strings;
	pd->n_mapping_table = nm;
	pd->mapping_table = m->maps_p;
	pd->n_function_table = nf;
	pd->function_table = m->fns_p;
	pd->n_location_table = nl;
	pd->location_table = m->locs_p;
	pd->n_stack_table = nk;
	pd->stack_table = m->stacks_p;
	pd->n_link_table = nn;
	pd->link_table = m->links_p;
	pd->n_attribute_table = na;
	pd->attribute_table = m->attrs_p;
	return 0;
}

static int build_samples(struct build *b, struct msgs *m)
{
	m->samples = calloc(b->n_smp + 1, sizeof(*m->samples));
	m->samples_p = calloc(b->n_smp + 1, sizeof(*m->samples_p));
	if (!m->samples || !m->samples_p)
		return -ENOMEM;
	for (size_t i = 0; i < b->n_smp; i++) {
		pb_sample *s = &m->samples[i];

		opentelemetry__proto__profiles__v1development__sample__init(s);
		s->stack_index = b->smp[i].stack;
		s->link_index = b->smp[i].link;
		s->n_attribute_indices = b->smp[i].n_attr;
		s->attribute_indices = b->attrs + b->smp[i].attr_off;
		s->n_values = 1;
		s->values = &b->smp[i].value;
		m->samples_p[i] = s;
	}
	return 0;
}

/* ---- serialization --------------------------------------------------------------------------- */

/* The packed request, gzip'd (RFC 1952: what Content-Encoding: gzip and .gz files are) or not. */
static int pack(const pb_request *req, int gzip, uint8_t **out, size_t *len, size_t *raw_len)
{
	size_t n = REQ_SIZE(req);
	uint8_t *raw = malloc(n ? n : 1), *gz;
	z_stream zs;
	uLong bound;
	int rc;

	if (!raw)
		return -ENOMEM;
	REQ_PACK(req, raw);
	*raw_len = n;
	if (!gzip) {
		*out = raw;
		*len = n;
		return 0;
	}
	memset(&zs, 0, sizeof(zs));
	/* Fastest level, as the pprof writer: the agent compresses every window on its loop. */
	if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(raw);
		return -ENOMEM;
	}
	bound = deflateBound(&zs, (uLong)n) + 32;	/* + the gzip header and trailer */
	gz = malloc(bound);
	if (!gz) {
		deflateEnd(&zs);
		free(raw);
		return -ENOMEM;
	}
	zs.next_in = raw;
	zs.avail_in = (uInt)n;
	zs.next_out = gz;
	zs.avail_out = (uInt)bound;
	rc = deflate(&zs, Z_FINISH);
	*len = zs.total_out;
	deflateEnd(&zs);
	free(raw);
	if (rc != Z_STREAM_END) {
		free(gz);
		return -EIO;
	}
	*out = gz;
	return 0;
}

/* The profile's own times (set when the window or recording ended), else the batch's. */
static void profile_times(const struct profile *p, const struct export_batch *b, pb_profile *pp)
{
	const struct profile_opts *po = profile__opts(p);
	int64_t t = po->time_ns > 0 ? po->time_ns : b->start_ns;
	int64_t d = po->time_ns > 0 ? po->duration_ns : b->end_ns - b->start_ns;

	pp->time_unix_nano = t > 0 ? (uint64_t)t : 0;
	pp->duration_nano = d > 0 ? (uint64_t)d : 0;
}

int otlp__encode(const struct export_batch *b, int gzip, uint8_t **out, size_t *len,
		 struct otlp_encode_info *info)
{
	struct otlp_encode_info dummy;
	struct build bd;
	struct msgs m;
	struct series_out *so = NULL;
	pb_request req = REQ_INIT;
	pb_dict pd = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;
	pb_scope scope = OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
	pb_value_type st = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__VALUE_TYPE__INIT;
	pb_value_type pt = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__VALUE_TYPE__INIT;
	pb_value_type ot = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__VALUE_TYPE__INIT;
	pb_rprofiles *rp = NULL, **rp_p = NULL;
	pb_sprofiles *sp = NULL, **sp_p = NULL;
	pb_profile *pp = NULL, **pp_p = NULL;
	pb_resource *res = NULL;
	size_t i, n_res = 0;
	int err;

	if (!b || !out || !len || (b->n && !b->series))
		return -EINVAL;
	if (!info)
		info = &dummy;
	memset(info, 0, sizeof(*info));
	memset(&bd, 0, sizeof(bd));
	memset(&m, 0, sizeof(m));
	err = dict_init(&bd.d);
	if (err)
		goto free_all;
	st.type_strindex = dict_str(&bd.d, "samples");
	st.unit_strindex = dict_str(&bd.d, "count");
	pt.type_strindex = dict_str(&bd.d, "cpu");
	pt.unit_strindex = dict_str(&bd.d, "nanoseconds");
	ot.unit_strindex = pt.unit_strindex;
	for (i = 0; i < b->n && ot.type_strindex == 0; i++)
		if (b->series[i].prof && profile__opts(b->series[i].prof)->off_cpu)
			ot.type_strindex = dict_str(&bd.d, "off_cpu");
	if (st.type_strindex < 0 || st.unit_strindex < 0 || pt.type_strindex < 0 ||
	    pt.unit_strindex < 0 || ot.type_strindex < 0) {
		err = -ENOMEM;
		goto free_all;
	}
	so = calloc(b->n + 1, sizeof(*so));
	if (!so) {
		err = -ENOMEM;
		goto free_all;
	}
	for (i = 0; i < b->n; i++) {
		const struct export_series *s = &b->series[i];
		const char *proc_name = NULL;
		int proc_many = 0;

		if (!s->prof || (s->n_labels && !s->labels)) {
			err = -EINVAL;
			goto free_all;
		}
		so[n_res].first = bd.n_smp;
		err = add_profile(&bd, s->prof, 0, info, &proc_name, &proc_many);
		if (err)
			goto free_all;
		so[n_res].n = bd.n_smp - so[n_res].first;
		so[n_res].off_first = bd.n_smp;
		if (profile__opts(s->prof)->off_cpu &&
		    (err = add_profile(&bd, s->prof, 1, info, &proc_name, &proc_many)))
			goto free_all;
		so[n_res].off_n = bd.n_smp - so[n_res].off_first;
		if (!so[n_res].n && !so[n_res].off_n) {
			info->series_empty++;	/* nothing to say about this service in this window */
			continue;
		}
		err = resource_of(s, proc_name, proc_many, &so[n_res]);
		if (err)
			goto free_all;
		new_profile_id(so[n_res].id);
		new_profile_id(so[n_res].off_id);
		so[n_res].prof = s->prof;
		n_res++;
	}
	if ((err = build_dict(&bd, &m, &pd)) || (err = build_samples(&bd, &m)))
		goto free_all;

	rp = calloc(n_res + 1, sizeof(*rp));
	rp_p = calloc(n_res + 1, sizeof(*rp_p));
	sp = calloc(n_res + 1, sizeof(*sp));
	sp_p = calloc(n_res + 1, sizeof(*sp_p));
	pp = calloc(2 * n_res + 1, sizeof(*pp));	/* CPU, off-CPU */
	pp_p = calloc(2 * n_res + 1, sizeof(*pp_p));
	res = calloc(n_res + 1, sizeof(*res));
	if (!rp || !rp_p || !sp || !sp_p || !pp || !pp_p || !res) {
		err = -ENOMEM;
		goto free_all;
	}
	scope.name = SCOPE_NAME;
	scope.version = SPANPROF_VERSION;
	for (i = 0; i < n_res; i++) {
		pb_profile *cpu = &pp[2 * i], *off = &pp[2 * i + 1];
		size_t np = 0;

		opentelemetry__proto__profiles__v1development__profile__init(cpu);
		cpu->sample_type = &st;
		cpu->period_type = &pt;
		cpu->n_samples = so[i].n;
		cpu->samples = m.samples_p + so[i].first;
		cpu->profile_id.data = so[i].id;
		cpu->profile_id.len = sizeof(so[i].id);
		cpu->period = (int64_t)profile__opts(so[i].prof)->period_ns;
		profile_times(so[i].prof, b, cpu);
		/* Off-CPU time is measured, not sampled: no period. */
		opentelemetry__proto__profiles__v1development__profile__init(off);
		off->sample_type = &ot;
		off->n_samples = so[i].off_n;
		off->samples = m.samples_p + so[i].off_first;
		off->profile_id.data = so[i].off_id;
		off->profile_id.len = sizeof(so[i].off_id);
		profile_times(so[i].prof, b, off);
		if (so[i].n || !so[i].off_n)
			pp_p[2 * i + np++] = cpu;
		if (so[i].off_n)
			pp_p[2 * i + np++] = off;
		opentelemetry__proto__profiles__v1development__scope_profiles__init(&sp[i]);
		sp[i].scope = &scope;
		sp[i].n_profiles = np;
		sp[i].profiles = &pp_p[2 * i];
		sp_p[i] = &sp[i];
		opentelemetry__proto__resource__v1__resource__init(&res[i]);
		res[i].n_attributes = so[i].n_kv;
		res[i].attributes = so[i].kv_p;
		opentelemetry__proto__profiles__v1development__resource_profiles__init(&rp[i]);
		rp[i].resource = &res[i];
		rp[i].n_scope_profiles = 1;
		rp[i].scope_profiles = &sp_p[i];
		rp_p[i] = &rp[i];
	}
	req.n_resource_profiles = n_res;
	req.resource_profiles = rp_p;
	req.dictionary = &pd;
	info->resources = n_res;
	info->strings = pd.n_string_table;
	info->mappings = pd.n_mapping_table;
	info->locations = pd.n_location_table;
	info->functions = pd.n_function_table;
	info->stacks = pd.n_stack_table;
	info->links = pd.n_link_table;
	info->attributes = pd.n_attribute_table;
	err = pack(&req, gzip, out, len, &info->raw_bytes);

free_all:
	for (i = 0; so && i < b->n; i++) {
		free(so[i].kv);
		free(so[i].kv_p);
		free(so[i].any);
		free(so[i].service);
	}
	free(so);
	free(rp);
	free(rp_p);
	free(sp);
	free(sp_p);
	free(pp);
	free(pp_p);
	free(res);
	msgs_free(&m);
	free(bd.smp);
	free(bd.attrs);
	free(bd.locs);
	dict_free(&bd.d);
	return err;
}

int otlp__write(const struct profile *p, FILE *f, int gzip)
{
	const struct profile_opts *po;
	struct export_series s = { .prof = p };
	struct export_batch b = { 0 };
	uint8_t *buf;
	size_t len;
	int err;

	if (!p || !f)
		return -EINVAL;
	po = profile__opts(p);
	b.start_ns = po->time_ns;
	b.end_ns = po->time_ns + po->duration_ns;
	b.series = &s;
	b.n = 1;
	err = otlp__encode(&b, gzip, &buf, &len, NULL);
	if (err)
		return err;
	errno = 0;
	if (len && fwrite(buf, 1, len, f) != len)
		err = -(errno ? errno : EIO);
	free(buf);
	return err;
}

/* ---- settings -------------------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4)))
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static const char *env_getenv(const char *name)
{
	return getenv(name);
}

/* OTEL_EXPORTER_OTLP_PROFILES_<what>, else OTEL_EXPORTER_OTLP_<what> (the signal's own wins);
 * *which names the one used. NULL when neither is set (or set empty). */
static const char *env_of(const char *(*get)(const char *), const char *what, char *which,
			  size_t len)
{
	const char *v;

	snprintf(which, len, "OTEL_EXPORTER_OTLP_PROFILES_%s", what);
	v = get(which);
	if (v && *v)
		return v;
	snprintf(which, len, "OTEL_EXPORTER_OTLP_%s", what);
	v = get(which);
	return v && *v ? v : NULL;
}

/* The URL's path is more than "/" (a query or fragment does not count). */
static int has_path(const char *url)
{
	const char *p = strstr(url, "://");

	p = p ? p + 3 : url;
	p += strcspn(p, "/?#");
	return *p == '/' && p[1] && p[1] != '?' && p[1] != '#';
}

static int http_url(const char *u)
{
	return !strncasecmp(u, "http://", 7) || !strncasecmp(u, "https://", 8);
}

/* base with trailing slashes removed, then the profiles path. */
static int append_path(char *out, size_t len, const char *base)
{
	size_t n = strlen(base);

	while (n > 0 && base[n - 1] == '/')
		n--;
	return snprintf(out, len, "%.*s%s", (int)n, base, OTLP_PROFILES_PATH) >= (int)len ? -1 : 0;
}

static int resolve_url(const struct otlp_opts *o, const char *(*get)(const char *),
		       struct otlp_config *c, char *err, size_t errlen)
{
	const char *v;
	int r;

	if (o->url) {
		/* the flag: a base URL, as with OTEL_EXPORTER_OTLP_ENDPOINT, unless it names a path */
		if (!http_url(o->url))
			return bad(err, errlen, "OTLP URL '%s' is not http:// or https://", o->url);
		r = has_path(o->url) ? snprintf(c->url, sizeof(c->url), "%s", o->url) >=
					       (int)sizeof(c->url)
				     : append_path(c->url, sizeof(c->url), o->url);
	} else if (!o->no_env &&
		   (v = get("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT")) && *v) {
		/* the signal's own endpoint is used as it is (OTLP exporter specification) */
		if (!http_url(v))
			return bad(err, errlen, "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT '%s' is not "
				   "http:// or https://", v);
		r = snprintf(c->url, sizeof(c->url), "%s", v) >= (int)sizeof(c->url);
	} else if (!o->no_env && (v = get("OTEL_EXPORTER_OTLP_ENDPOINT")) && *v) {
		/* the shared base: the signal's path is appended to whatever path it has */
		if (!http_url(v))
			return bad(err, errlen, "OTEL_EXPORTER_OTLP_ENDPOINT '%s' is not http:// or "
				   "https://", v);
		r = append_path(c->url, sizeof(c->url), v);
	} else {
		r = append_path(c->url, sizeof(c->url), OTLP_DEFAULT_ENDPOINT);
	}
	return r ? bad(err, errlen, "OTLP URL too long") : 0;
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* s[0..n) trimmed of blanks and percent-decoded into a malloc'd string; NULL with *bad_pct set
 * on a broken %XX, or out of memory. */
static char *decode_part(const char *s, size_t n, int *bad_pct)
{
	char *o, *w;

	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	o = w = malloc(n + 1);
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			*w++ = s[i];
			continue;
		}
		if (i + 2 >= n || hexval((unsigned char)s[i + 1]) < 0 ||
		    hexval((unsigned char)s[i + 2]) < 0) {
			*bad_pct = 1;
			free(o);
			return NULL;
		}
		*w++ = (char)(hexval((unsigned char)s[i + 1]) * 16 + hexval((unsigned char)s[i + 2]));
		i += 2;
	}
	*w = 0;
	return o;
}

/* Adds "name: value", replacing a header of the same name (case-insensitive). 0 or -errno. */
static int put_header(struct otlp_config *c, const char *name, size_t nlen, const char *value)
{
	char *line;
	size_t i;

	if (asprintf(&line, "%.*s: %s", (int)nlen, name, value) < 0)
		return -ENOMEM;
	for (i = 0; i < c->n_headers; i++) {
		if (!strncasecmp(c->headers[i], name, nlen) && c->headers[i][nlen] == ':') {
			free(c->headers[i]);
			c->headers[i] = line;
			return 0;
		}
	}
	if (c->n_headers == OTLP_MAX_HEADERS) {
		free(line);
		return -E2BIG;
	}
	c->headers[c->n_headers++] = line;
	return 0;
}

/* OTEL_EXPORTER_OTLP_*_HEADERS: "key1=value1,key2=value2", values percent-encoded (the W3C
 * baggage form the specification names). A malformed entry is an error: a silently missing
 * Authorization would only show as 401s. */
static int env_headers(const char *v, const char *which, struct otlp_config *c, char *err,
		       size_t errlen)
{
	const char *p = v;

	while (*p) {
		size_t n = strcspn(p, ","), klen;
		const char *eq = memchr(p, '=', n);
		char *key = NULL, *val = NULL;
		int bad_pct = 0, rc;

		if (strspn(p, " \t") >= n) {	/* an empty entry ("a=b,,c=d") */
			p += n + (p[n] == ',');
			continue;
		}
		if (eq)
			key = decode_part(p, (size_t)(eq - p), &bad_pct);
		if (eq && key)
			val = decode_part(eq + 1, n - (size_t)(eq - p) - 1, &bad_pct);
		klen = key ? strlen(key) : 0;
		if (!eq || !key || !val || !klen || strpbrk(key, ": \t\r\n") || strpbrk(val, "\r\n")) {
			free(key);
			free(val);
			if (eq && !bad_pct && (!key || !val))
				return -ENOMEM;
			return bad(err, errlen, "%s: entry '%.*s' is not key=value (values "
				   "percent-encoded)", which, (int)n, p);
		}
		rc = put_header(c, key, klen, val);
		free(key);
		free(val);
		if (rc)
			return rc == -E2BIG ? bad(err, errlen, "more than %d OTLP headers",
						  OTLP_MAX_HEADERS) : rc;
		p += n + (p[n] == ',');
	}
	return 0;
}

void otlp_config__clear(struct otlp_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_headers; i++)
		free(c->headers[i]);
	memset(c, 0, sizeof(*c));
}

int otlp__config(const struct otlp_opts *o, const char *(*getenv_fn)(const char *),
		 struct otlp_config *c, char *err, size_t errlen)
{
	const char *(*get)(const char *) = getenv_fn ? getenv_fn : env_getenv;
	char which[64];
	const char *v;
	size_t i;
	int rc;

	if (err && errlen)
		err[0] = 0;
	if (!o || !c)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	if ((rc = resolve_url(o, get, c, err, errlen)))
		goto clear;

	if (!o->no_env && (v = env_of(get, "HEADERS", which, sizeof(which))) &&
	    (rc = env_headers(v, which, c, err, errlen)))
		goto clear;
	for (i = 0; i < o->n_headers; i++) {	/* the flags win over the environment */
		const char *h = o->headers[i], *colon = h ? strchr(h, ':') : NULL;
		const char *val = colon ? colon + 1 : NULL;

		if (!colon || colon == h || strpbrk(h, "\r\n")) {
			rc = bad(err, errlen, "header '%s' is not 'Name: value'", h ? h : "(null)");
			goto clear;
		}
		while (*val == ' ' || *val == '\t')
			val++;
		if ((rc = put_header(c, h, (size_t)(colon - h), val))) {
			if (rc == -E2BIG)
				rc = bad(err, errlen, "more than %d OTLP headers", OTLP_MAX_HEADERS);
			goto clear;
		}
	}

	c->timeout_ms = o->timeout_ms;
	if (!c->timeout_ms && !o->no_env && (v = env_of(get, "TIMEOUT", which, sizeof(which)))) {
		char *end;
		unsigned long ms;

		errno = 0;
		ms = strtoul(v, &end, 10);
		if (errno || end == v || *end || v[0] == '-' || ms == 0 || ms > 3600000) {
			rc = bad(err, errlen, "%s '%s' is not a timeout in milliseconds (1..3600000)",
				 which, v);
			goto clear;
		}
		c->timeout_ms = (uint32_t)ms;
	}
	if (!c->timeout_ms)
		c->timeout_ms = OTLP_DEFAULT_TIMEOUT_MS;

	c->gzip = o->compression != OTLP_COMPRESSION_NONE;
	if (o->compression == OTLP_COMPRESSION_UNSET && !o->no_env &&
	    (v = env_of(get, "COMPRESSION", which, sizeof(which)))) {
		if (!strcasecmp(v, "none")) {
			c->gzip = 0;
		} else if (strcasecmp(v, "gzip")) {
			rc = bad(err, errlen, "%s '%s': want gzip or none", which, v);
			goto clear;
		}
	}

	v = o->ca_file;
	if (!v && !o->no_env)
		v = env_of(get, "CERTIFICATE", which, sizeof(which));
	if (v && snprintf(c->ca_file, sizeof(c->ca_file), "%s", v) >= (int)sizeof(c->ca_file)) {
		rc = bad(err, errlen, "CA file name too long");
		goto clear;
	}
	return 0;
clear:
	otlp_config__clear(c);
	return rc;
}

/* ---- the exporter ---------------------------------------------------------------------------- */

struct otlp_x {
	struct delivery_exporter de;	/* first: the exporter handed out */
	int gzip;
	struct otlp_encode_info totals;	/* under de.mu */
};

static void totals_add(struct otlp_encode_info *t, const struct otlp_encode_info *i)
{
	t->resources += i->resources;
	t->series_empty += i->series_empty;
	t->samples += i->samples;
	t->total += i->total;
	t->linked += i->linked;
	t->strings += i->strings;
	t->mappings += i->mappings;
	t->locations += i->locations;
	t->functions += i->functions;
	t->stacks += i->stacks;
	t->links += i->links;
	t->attributes += i->attributes;
	t->raw_bytes += i->raw_bytes;
}

static int otlp_encode(struct delivery_exporter *de, const struct export_batch *b, uint8_t **body,
		       size_t *len, uint64_t *split)
{
	struct otlp_x *x = (struct otlp_x *)de;
	struct otlp_encode_info info;
	int err = otlp__encode(b, x->gzip, body, len, &info);

	if (err)
		return err;
	pthread_mutex_lock(&de->mu);
	totals_add(&x->totals, &info);
	pthread_mutex_unlock(&de->mu);
	*split = 0;
	if (!info.resources) {	/* nothing sampled in this window */
		free(*body);
		*body = NULL;
	}
	return 0;
}

static const struct exporter_ops otlp_ops = {
	.name = "otlp",
	DELIVERY_EXPORTER_OPS,
};

struct exporter *otlp__new(const struct otlp_opts *o, struct otlp_config *cfg_out, char *err,
			   size_t errlen)
{
	struct otlp_config c;
	struct delivery_opts dopt;
	struct otlp_x *x;
	char why[400];
	int rc;

	if (!o) {
		errno = EINVAL;
		return NULL;
	}
	rc = otlp__config(o, NULL, &c, why, sizeof(why));
	if (rc) {
		if (err && errlen)
			snprintf(err, errlen, "otlp: %s", rc == -ENOMEM ? "out of memory" : why);
		errno = -rc;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		otlp_config__clear(&c);
		if (err && errlen)
			snprintf(err, errlen, "otlp: out of memory");
		errno = ENOMEM;
		return NULL;
	}
	dopt = o->delivery;
	dopt.url = c.url;
	dopt.content_type = "application/x-protobuf";
	dopt.content_encoding = c.gzip ? "gzip" : NULL;
	dopt.headers = (const char *const *)c.headers;
	dopt.n_headers = c.n_headers;
	dopt.timeout_ms = c.timeout_ms;
	dopt.ca_file = c.ca_file[0] ? c.ca_file : NULL;
	x->de.d = delivery__new(&dopt, why, sizeof(why));	/* copies what it keeps */
	if (!x->de.d) {
		rc = errno;
		if (err && errlen)
			snprintf(err, errlen, "otlp: %s", why);
		otlp_config__clear(&c);
		free(x);
		errno = rc;
		return NULL;
	}
	x->gzip = c.gzip;
	x->de.encode = otlp_encode;
	delivery__exporter_init(&x->de, &otlp_ops);
	if (cfg_out)
		*cfg_out = c;	/* the headers move to the caller */
	else
		otlp_config__clear(&c);
	return &x->de.ex;
}

int otlp__encode_totals(const struct exporter *e, struct otlp_encode_info *out)
{
	struct otlp_x *x;

	if (!e || e->ops != &otlp_ops || !out)
		return -EINVAL;
	x = e->self;
	pthread_mutex_lock(&x->de.mu);
	*out = x->totals;
	pthread_mutex_unlock(&x->de.mu);
	return 0;
}
