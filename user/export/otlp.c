/* otlp.c: encodes a batch as one OTLP profiles ExportProfilesServiceRequest (protobuf-c, one
 * dictionary shared by every profile of the request), writes it to files, resolves the OTLP
 * exporter settings (flags over OTEL_EXPORTER_OTLP_*), and hands requests to the delivery path.
 * The dictionary and one profile in it: otlpdict.c; the settings: otlpconfig.c; shared: otlp_int.h. */
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
#include "otlp_int.h"
#include "profile.h"
#include "util.h"
#include "vec.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

#ifndef SPANPROF_VERSION
#define SPANPROF_VERSION "dev"
#endif
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
		key = otlp_attr_name(l->key, &integer);
		for (size_t j = 0; j < n && !dup; j++)
			dup = !strcmp(so->kv[j].key, key);
		if (dup)
			continue;
		opentelemetry__proto__common__v1__key_value__init(&so->kv[n]);
		opentelemetry__proto__common__v1__any_value__init(&so->any[n]);
		so->kv[n].key = (char *)key;
		so->kv[n].value = &so->any[n];
		if (integer && !otlp_parse_int(l->value, &v)) {
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
	err = otlp_dict_init(&bd.d);
	if (err)
		goto free_all;
	st.type_strindex = otlp_dict_str(&bd.d, "samples");
	st.unit_strindex = otlp_dict_str(&bd.d, "count");
	pt.type_strindex = otlp_dict_str(&bd.d, "cpu");
	pt.unit_strindex = otlp_dict_str(&bd.d, "nanoseconds");
	ot.unit_strindex = pt.unit_strindex;
	for (i = 0; i < b->n && ot.type_strindex == 0; i++)
		if (b->series[i].prof && profile__opts(b->series[i].prof)->off_cpu)
			ot.type_strindex = otlp_dict_str(&bd.d, "off_cpu");
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
		err = otlp_add_profile(&bd, s->prof, 0, info, &proc_name, &proc_many);
		if (err)
			goto free_all;
		so[n_res].n = bd.n_smp - so[n_res].first;
		so[n_res].off_first = bd.n_smp;
		if (profile__opts(s->prof)->off_cpu &&
		    (err = otlp_add_profile(&bd, s->prof, 1, info, &proc_name, &proc_many)))
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
	otlp_dict_free(&bd.d);
	return err;
}

int otlp__write(const struct profile *p, FILE *f, int gzip)
{
	const struct profile_opts *po;
	struct pf_label svc = { .key = PROFILE_SERVICE_LABEL, .value = profile__service(p) };
	struct export_series s = { .labels = &svc, .n_labels = svc.value ? 1 : 0, .prof = p };
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

/* ---- the exporter ---------------------------------------------------------------------------- */

struct otlp_x {
	struct delivery_exporter de;	/* first: the exporter handed out */
	int gzip;
	int grpc;			/* one length-prefixed message per request */
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
		return 0;
	}
	if (x->grpc && (err = otlp_grpc__frame(body, len, x->gzip))) {
		free(*body);
		*body = NULL;
	}
	return err;
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
	char why[400], deadline[48];
	const char *hdrs[OTLP_MAX_HEADERS + 4];
	size_t nh = 0;
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
	dopt.name = "otlp";
	x->grpc = c.protocol == OTLP_PROTOCOL_GRPC;
	if (x->grpc) {
		/* gRPC over HTTP/2: its content type, trailers asked for (te: the one value HTTP/2
		 * allows), the message's compression named, the deadline told to the server. */
		snprintf(deadline, sizeof(deadline), "grpc-timeout: %um", c.timeout_ms);
		hdrs[nh++] = "te: trailers";
		hdrs[nh++] = deadline;
		hdrs[nh++] = "grpc-accept-encoding: identity, gzip";
		if (c.gzip)
			hdrs[nh++] = "grpc-encoding: gzip";
		dopt.content_type = "application/grpc";
		dopt.http2 = 1;
		dopt.judge = otlp_grpc__judge;
	} else {
		dopt.content_type = "application/x-protobuf";
		dopt.content_encoding = c.gzip ? "gzip" : NULL;
	}
	for (size_t i = 0; i < c.n_headers; i++)
		hdrs[nh++] = c.headers[i];
	dopt.headers = hdrs;
	dopt.n_headers = nh;
	dopt.timeout_ms = c.timeout_ms;
	dopt.ca_file = c.ca_file[0] ? c.ca_file : NULL;
	dopt.client_cert = c.client_cert[0] ? c.client_cert : NULL;
	dopt.client_key = c.client_key[0] ? c.client_key : NULL;
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
