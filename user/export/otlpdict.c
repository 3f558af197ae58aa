/* otlpdict.c: the OTLP request's dictionary (strings, mappings, functions, locations, stacks,
 * links, attributes: one per request, shared by its profiles) and one profile put into it;
 * spanprof's labels named as the semantic conventions name them. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "intern.h"
#include "otlp.h"
#include "otlp_int.h"
#include "profile.h"
#include "util.h"
#include "vec.h"

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

const char *otlp_attr_name(const char *label, int *integer)
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
int otlp_parse_int(const char *s, int64_t *out)
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


void otlp_dict_free(struct dict *d)
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

int32_t otlp_dict_str(struct dict *d, const char *s)
{
	return put(d->str, s ? s : "", s ? strlen(s) : 0);
}

static int32_t dict_attr(struct dict *d, const char *key, int kind, const char *sval, int64_t ival)
{
	size_t vlen = kind == KIND_STR ? strlen(sval) : sizeof(ival), len = ATTR_HDR + vlen;
	int32_t k = otlp_dict_str(d, key), idx;
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
	const char *name = otlp_attr_name(key, &integer);
	int64_t v;

	if (integer && !otlp_parse_int(value, &v))
		return dict_attr(d, name, KIND_INT, NULL, v);
	return dict_attr(d, name, KIND_STR, value, 0);
}

int otlp_dict_init(struct dict *d)
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
	if (otlp_dict_str(d, "") || put(d->map, &mk, sizeof(mk)) || put(d->fn, &fk, sizeof(fk)) ||
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
	k.filename = otlp_dict_str(d, mv->filename);
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
	k.name = otlp_dict_str(d, fv->name);
	k.system_name = otlp_dict_str(d, fv->system_name);
	k.filename = otlp_dict_str(d, fv->filename);
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
int otlp_add_profile(struct build *b, const struct profile *p, int off_cpu,
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
