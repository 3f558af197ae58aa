/* pprof.c: writes a profile (or a range of its samples) as pprof (profile.proto), gzip-compressed,
 * with protobuf-c and zlib: to a FILE, or to memory for exporters. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "intern.h"
#include "profile.h"
#include "profile.pb-c.h"

#ifndef SPANPROF_VERSION
#define SPANPROF_VERSION "dev"
#endif

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;

/* ---- gzip sink: protobuf-c packs straight into deflate, no whole-message buffer ---------- */

struct gz_sink {
	ProtobufCBuffer base;	/* first: protobuf-c calls base.append with a pointer to it */
	z_stream zs;
	FILE *f;		/* the output, or NULL: into mem */
	uint8_t *mem;
	size_t mem_len;
	size_t mem_cap;
	int err;		/* first error, as -errno */
	unsigned char out[64 * 1024];
};

static int sink_put(struct gz_sink *g, const unsigned char *data, size_t n)
{
	if (g->f) {
		errno = 0;
		if (fwrite(data, 1, n, g->f) != n)
			return -(errno ? errno : EIO);
		return 0;
	}
	if (g->mem_cap - g->mem_len < n) {
		size_t cap = g->mem_cap ? g->mem_cap : sizeof(g->out);
		uint8_t *m;

		while (cap - g->mem_len < n)
			cap *= 2;
		m = realloc(g->mem, cap);
		if (!m)
			return -ENOMEM;
		g->mem = m;
		g->mem_cap = cap;
	}
	memcpy(g->mem + g->mem_len, data, n);
	g->mem_len += n;
	return 0;
}

static void gz_deflate(struct gz_sink *g, int flush)
{
	size_t have;
	int rc;

	do {
		g->zs.next_out = g->out;
		g->zs.avail_out = sizeof(g->out);
		rc = deflate(&g->zs, flush);
		if (rc == Z_STREAM_ERROR) {
			g->err = -EIO;
			return;
		}
		have = sizeof(g->out) - g->zs.avail_out;
		if (have && (g->err = sink_put(g, g->out, have)))
			return;
	} while (g->zs.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
}

static void gz_append(ProtobufCBuffer *buf, size_t len, const uint8_t *data)
{
	struct gz_sink *g = (struct gz_sink *)buf;

	while (len && !g->err) {
		uInt chunk = len > (1u << 30) ? (1u << 30) : (uInt)len;

		g->zs.next_in = (Bytef *)(uintptr_t)data;
		g->zs.avail_in = chunk;
		gz_deflate(g, Z_NO_FLUSH);
		data += chunk;
		len -= chunk;
	}
}

/* ---- string table ---------------------------------------------------------------------- */

#define N_EXTRA_STRINGS 8

/*
 * The pprof string table is the profile's own table (already deduplicated, 0 = "") plus the
 * few strings only this writer uses, appended when the profile does not have them. With
 * pruned tables (a sample range) it holds only the strings the written entries use, numbered
 * in order of first use through remap, so a slice of a big profile stays small.
 */
struct strtab {
	char **v;
	size_t n;
	size_t cap;
	uint32_t *remap;	/* pruned: profile string id -> index in v, 0 = not used yet */
	size_t extra[N_EXTRA_STRINGS];	/* where the writer's own strings are in v */
	size_t n_extra;
};

static int64_t str_index(const struct profile *p, struct strtab *t, const char *s)
{
	uint32_t id;
	size_t i;

	if (!s || !*s)
		return 0;
	id = profile__string_id(p, s);
	if (id && !t->remap)
		return id;
	if (id) {
		if (!t->remap[id]) {
			if (t->n == t->cap)
				return -ENOSPC;
			t->remap[id] = (uint32_t)t->n;
			t->v[t->n++] = (char *)(uintptr_t)profile__string(p, id);
		}
		return t->remap[id];
	}
	for (i = 0; i < t->n_extra; i++) {	/* a handful of extras */
		if (strcmp(t->v[t->extra[i]], s) == 0)
			return (int64_t)t->extra[i];
	}
	if (t->n == t->cap || t->n_extra == N_EXTRA_STRINGS)
		return -ENOSPC;	/* cap was sized for every extra this writer adds */
	t->extra[t->n_extra++] = t->n;
	t->v[t->n] = (char *)(uintptr_t)s;
	return (int64_t)t->n++;
}

/* ---- building the message --------------------------------------------------------------- */

struct pb_build {
	pb_profile prof;
	pb_value_type vt[4];	/* samples/count, cpu/nanoseconds, period type, off_cpu/nanoseconds */
	pb_value_type *vt_ptrs[3];
	size_t n_values;	/* per sample: 2, 3 with off-CPU time; 2 or 1 for one kind of value */
	enum pprof_values which;
	struct strtab st;
	pb_mapping *maps;
	pb_mapping **map_ptrs;
	pb_function *funcs;
	pb_function **func_ptrs;
	pb_location *locs;
	pb_location **loc_ptrs;
	pb_line *lines;
	pb_line **line_ptrs;
	pb_sample *samples;
	pb_sample **sample_ptrs;
	uint64_t *loc_ids;	/* all samples' location ids, one pool */
	int64_t *values;	/* n_values per sample */
	pb_label *labels;	/* all samples' labels, one pool */
	pb_label **label_ptrs;
	int64_t comment;
	char comment_text[64];
	size_t first;		/* the sample range written */
	size_t count;
	/*
	 * Pruned tables: the id each entry the range uses gets (dense from 1, in table order, as
	 * readers that index tables by id - 1 expect), 0 for the unused. NULL: every entry, ids
	 * unchanged.
	 */
	uint32_t *new_map;
	uint32_t *new_func;
	uint32_t *new_loc;
};

static uint64_t out_id(const uint32_t *remap, uint32_t id)
{
	return remap ? remap[id] : id;
}

static void build_free(struct pb_build *b)
{
	free(b->st.v);
	free(b->maps);
	free(b->map_ptrs);
	free(b->funcs);
	free(b->func_ptrs);
	free(b->locs);
	free(b->loc_ptrs);
	free(b->lines);
	free(b->line_ptrs);
	free(b->samples);
	free(b->sample_ptrs);
	free(b->loc_ids);
	free(b->values);
	free(b->labels);
	free(b->label_ptrs);
	free(b->st.remap);
	free(b->new_map);
	free(b->new_func);
	free(b->new_loc);
}

/* Whether the sample goes into this pprof: every sample, or those with a value of the kind chosen. */
static int kept(const struct pb_build *b, const struct pf_sample_view *v)
{
	return b->which == PPROF_VALUES_CPU ? v->count > 0 :
	       b->which == PPROF_VALUES_OFF_CPU ? v->off_ns > 0 : 1;
}

/* Marks used ids with 1, then numbers them 1, 2, ... in place; [0] ("none") stays 0. */
static void number_used(uint32_t *map, size_t n)
{
	uint32_t next = 1;
	size_t i;

	map[0] = 0;
	for (i = 1; i <= n; i++)
		map[i] = map[i] ? next++ : 0;
}

/* Pruned tables: the locations the range's samples use, then their functions and mappings. */
static int mark_used(const struct profile *p, struct pb_build *b)
{
	size_t n_maps = profile__mapping_count(p), n_funcs = profile__function_count(p);
	size_t n_locs = profile__location_count(p), i, j;
	struct pf_sample_view v;
	struct pf_location_view lv;

	b->new_map = calloc(n_maps + 1, sizeof(*b->new_map));
	b->new_func = calloc(n_funcs + 1, sizeof(*b->new_func));
	b->new_loc = calloc(n_locs + 1, sizeof(*b->new_loc));
	b->st.remap = calloc(profile__string_count(p) + 1, sizeof(*b->st.remap));
	if (!b->new_map || !b->new_func || !b->new_loc || !b->st.remap)
		return -ENOMEM;
	for (i = b->first; i < b->first + b->count; i++) {
		if (profile__sample(p, i, &v))
			return -EIO;
		if (!kept(b, &v))
			continue;
		for (j = 0; j < v.n_locs; j++) {
			if (v.locs[j] > n_locs)
				return -EIO;
			b->new_loc[v.locs[j]] = 1;
		}
	}
	for (i = 1; i <= n_locs; i++) {
		if (!b->new_loc[i])
			continue;
		if (profile__location_get(p, (uint32_t)i, &lv) || lv.mapping_id > n_maps ||
		    lv.function_id > n_funcs)
			return -EIO;
		b->new_map[lv.mapping_id] = 1;
		b->new_func[lv.function_id] = 1;
	}
	number_used(b->new_map, n_maps);
	number_used(b->new_func, n_funcs);
	number_used(b->new_loc, n_locs);
	return 0;
}

static int build_tables(const struct profile *p, struct pb_build *b)
{
	size_t n_maps = profile__mapping_count(p), n_funcs = profile__function_count(p);
	size_t n_locs = profile__location_count(p), i, k;
	struct pf_mapping m;
	struct pf_function_view fv;
	struct pf_location_view lv;
	int64_t idx[4];

	b->maps = calloc(n_maps + 1, sizeof(*b->maps));
	b->map_ptrs = calloc(n_maps + 1, sizeof(*b->map_ptrs));
	b->funcs = calloc(n_funcs + 1, sizeof(*b->funcs));
	b->func_ptrs = calloc(n_funcs + 1, sizeof(*b->func_ptrs));
	b->locs = calloc(n_locs + 1, sizeof(*b->locs));
	b->loc_ptrs = calloc(n_locs + 1, sizeof(*b->loc_ptrs));
	b->lines = calloc(n_locs + 1, sizeof(*b->lines));
	b->line_ptrs = calloc(n_locs + 1, sizeof(*b->line_ptrs));
	if (!b->maps || !b->map_ptrs || !b->funcs || !b->func_ptrs || !b->locs || !b->loc_ptrs ||
	    !b->lines || !b->line_ptrs)
		return -ENOMEM;

	for (i = 0, k = 0; i < n_maps; i++) {
		pb_mapping *pm = &b->maps[i];

		if (b->new_map && !b->new_map[i + 1])
			continue;
		if (profile__mapping_get(p, (uint32_t)(i + 1), &m))
			return -EIO;
		idx[0] = str_index(p, &b->st, m.filename);
		idx[1] = str_index(p, &b->st, m.build_id);
		if (idx[0] < 0 || idx[1] < 0)
			return -EIO;	/* interned by the profile, so always found */
		perftools__profiles__mapping__init(pm);
		pm->id = out_id(b->new_map, (uint32_t)(i + 1));
		pm->memory_start = m.start;
		pm->memory_limit = m.limit;
		pm->file_offset = m.offset;
		pm->filename = idx[0];
		pm->build_id = idx[1];
		pm->has_functions = m.has_functions != 0;
		b->map_ptrs[k++] = pm;
	}
	b->prof.n_mapping = k;
	for (i = 0, k = 0; i < n_funcs; i++) {
		pb_function *pf = &b->funcs[i];

		if (b->new_func && !b->new_func[i + 1])
			continue;
		if (profile__function_get(p, (uint32_t)(i + 1), &fv))
			return -EIO;
		idx[0] = str_index(p, &b->st, fv.name);
		idx[1] = str_index(p, &b->st, fv.system_name);
		idx[2] = str_index(p, &b->st, fv.filename);
		if (idx[0] < 0 || idx[1] < 0 || idx[2] < 0)
			return -EIO;
		perftools__profiles__function__init(pf);
		pf->id = out_id(b->new_func, (uint32_t)(i + 1));
		pf->name = idx[0];
		/*
		 * Left 0 when not given: pprof treats name == system_name as "not yet demangled"
		 * and strips argument lists, which would merge .NET overloads.
		 */
		pf->system_name = idx[1];
		pf->filename = idx[2];
		b->func_ptrs[k++] = pf;
	}
	b->prof.n_function = k;
	for (i = 0, k = 0; i < n_locs; i++) {
		pb_location *pl = &b->locs[i];

		if (b->new_loc && !b->new_loc[i + 1])
			continue;
		if (profile__location_get(p, (uint32_t)(i + 1), &lv))
			return -EIO;
		perftools__profiles__location__init(pl);
		pl->id = out_id(b->new_loc, (uint32_t)(i + 1));
		pl->mapping_id = out_id(b->new_map, lv.mapping_id);
		pl->address = lv.address;
		if (lv.function_id) {
			perftools__profiles__line__init(&b->lines[i]);
			b->lines[i].function_id = out_id(b->new_func, lv.function_id);
			b->line_ptrs[i] = &b->lines[i];
			pl->n_line = 1;
			pl->line = &b->line_ptrs[i];
		}
		b->loc_ptrs[k++] = pl;
	}
	b->prof.n_location = k;
	b->prof.mapping = b->map_ptrs;
	b->prof.function = b->func_ptrs;
	b->prof.location = b->loc_ptrs;
	return 0;
}

/*
 * The samples. Samples that share a stack share its location ids, and samples that share a label
 * (key and value) point at one Label message: a profile where every sample has its own span id
 * holds a few stacks and a few labels many times over. The pools are sized for the worst case
 * (every stack and label distinct) but only what is used is written; protobuf-c packs each
 * pointer's message wherever it is referenced.
 */
static int build_samples(const struct profile *p, struct pb_build *b, int64_t period)
{
	size_t n = 0, n_loc_ids = 0, n_labels = 0, i, j, k;
	size_t at_loc = 0, at_label = 0, n_pbl = 0;
	uint32_t max_stack = 0;
	size_t *stack_at = NULL;	/* by stack id: 1 + its offset in loc_ids, 0: not yet */
	struct intern *pairs = NULL;	/* (key, str) -> index in labels */
	struct pf_sample_view v;
	const char *service = profile__service(p);
	struct pf_label svc_label = { .key = PROFILE_SERVICE_LABEL, .value = service };
	int err = -ENOMEM;

	for (i = 0; i < b->count; i++) {
		if (profile__sample(p, b->first + i, &v))
			return -EIO;
		if (!kept(b, &v))
			continue;
		n++;
		n_loc_ids += v.n_locs;
		n_labels += v.n_labels + (service != NULL);
		if (v.stack_id > max_stack)
			max_stack = v.stack_id;
	}
	b->samples = calloc(n + 1, sizeof(*b->samples));
	b->sample_ptrs = calloc(n + 1, sizeof(*b->sample_ptrs));
	b->loc_ids = calloc(n_loc_ids + 1, sizeof(*b->loc_ids));
	b->values = calloc(b->n_values * n + 1, sizeof(*b->values));
	b->labels = calloc(n_labels + 1, sizeof(*b->labels));
	b->label_ptrs = calloc(n_labels + 1, sizeof(*b->label_ptrs));
	stack_at = calloc((size_t)max_stack + 1, sizeof(*stack_at));
	pairs = intern__new();
	if (!b->samples || !b->sample_ptrs || !b->loc_ids || !b->values || !b->labels ||
	    !b->label_ptrs || !stack_at || !pairs)
		goto out;

	for (i = 0, k = 0; i < b->count; i++) {
		pb_sample *ps = &b->samples[k];

		err = -EIO;
		if (profile__sample(p, b->first + i, &v))
			goto out;
		if (!kept(b, &v))
			continue;
		perftools__profiles__sample__init(ps);
		ps->n_location_id = v.n_locs;
		if (!stack_at[v.stack_id]) {
			stack_at[v.stack_id] = 1 + at_loc;
			for (j = 0; j < v.n_locs; j++)
				b->loc_ids[at_loc++] = out_id(b->new_loc, v.locs[j]);
		}
		ps->location_id = b->loc_ids + stack_at[v.stack_id] - 1;
		ps->n_value = b->n_values;
		ps->value = b->values + b->n_values * k;
		/* int64 on the wire: clamp instead of wrapping negative */
		if (b->which != PPROF_VALUES_OFF_CPU) {
			ps->value[0] = v.count > INT64_MAX ? INT64_MAX : (int64_t)v.count;
			ps->value[1] = period > 0 && v.count > (uint64_t)(INT64_MAX / period) ?
				       INT64_MAX : (int64_t)v.count * period;
		}
		if (b->which == PPROF_VALUES_OFF_CPU || b->n_values > 2)
			ps->value[b->n_values - 1] = v.off_ns > INT64_MAX ? INT64_MAX :
									    (int64_t)v.off_ns;
		ps->n_label = v.n_labels + (service && !profile__label(&v, PROFILE_SERVICE_LABEL));
		ps->label = b->label_ptrs + at_label;
		for (j = 0; j < ps->n_label; j++) {
			const struct pf_label *l = j < v.n_labels ? &v.labels[j] : &svc_label;
			int64_t ks[2] = { str_index(p, &b->st, l->key), str_index(p, &b->st, l->value) }, id;
			int added;

			err = -EIO;
			if (ks[0] < 0 || ks[1] < 0)
				goto out;
			if ((id = intern__id(pairs, ks, sizeof(ks), &added)) < 0) {
				err = (int)id;
				goto out;
			}
			if (added) {
				pb_label *pl = &b->labels[n_pbl++];

				perftools__profiles__label__init(pl);
				pl->key = ks[0];
				pl->str = ks[1];
			}
			b->label_ptrs[at_label++] = &b->labels[id];
		}
		b->sample_ptrs[k++] = ps;
	}
	b->prof.n_sample = n;
	b->prof.sample = b->sample_ptrs;
	err = 0;
out:
	free(stack_at);
	intern__free(pairs);
	return err;
}

/* Builds the message for samples [first, first + count) with the values chosen; prune: only the
 * entries they use. */
static int build(const struct profile *p, struct pb_build *b, size_t first, size_t count,
		 enum pprof_values which, int prune)
{
	const struct profile_opts *o = profile__opts(p);
	int64_t period = o->period_ns > INT64_MAX ? INT64_MAX : (int64_t)o->period_ns;
	int64_t s[5];
	size_t i;
	int err;

	perftools__profiles__profile__init(&b->prof);
	b->first = first;
	b->count = count;
	b->which = which;
	b->st.cap = profile__string_count(p) + N_EXTRA_STRINGS;
	b->st.v = calloc(b->st.cap, sizeof(*b->st.v));
	if (!b->st.v)
		return -ENOMEM;
	if (prune) {
		err = mark_used(p, b);
		if (err)
			return err;
		b->st.v[0] = "";
		b->st.n = 1;
	} else {
		for (i = 0; i < profile__string_count(p); i++)
			b->st.v[i] = (char *)(uintptr_t)profile__string(p, (uint32_t)i);
		b->st.n = i;
	}

	s[0] = str_index(p, &b->st, "samples");
	s[1] = str_index(p, &b->st, "count");
	s[2] = str_index(p, &b->st, "cpu");
	s[3] = str_index(p, &b->st, "nanoseconds");
	s[4] = o->off_cpu || which == PPROF_VALUES_OFF_CPU ? str_index(p, &b->st, "off_cpu") : 0;
	snprintf(b->comment_text, sizeof(b->comment_text), "spanprof %s", SPANPROF_VERSION);
	b->comment = str_index(p, &b->st, b->comment_text);
	if (s[0] < 0 || s[1] < 0 || s[2] < 0 || s[3] < 0 || s[4] < 0 || b->comment < 0)
		return -EIO;
	for (i = 0; i < 4; i++)
		perftools__profiles__value_type__init(&b->vt[i]);
	b->vt[0].type = s[0];
	b->vt[0].unit = s[1];
	b->vt[1].type = s[2];
	b->vt[1].unit = s[3];
	b->vt[2].type = s[2];
	b->vt[2].unit = s[3];
	b->vt_ptrs[0] = &b->vt[0];
	b->vt_ptrs[1] = &b->vt[1];
	b->vt[3].type = s[4];
	b->vt[3].unit = s[3];
	b->vt_ptrs[2] = &b->vt[3];
	b->n_values = which == PPROF_VALUES_OFF_CPU ? 1 : which == PPROF_VALUES_CPU ? 2 :
		      o->off_cpu ? 3 : 2;
	b->prof.n_sample_type = b->n_values;
	b->prof.sample_type = which == PPROF_VALUES_OFF_CPU ? &b->vt_ptrs[2] : b->vt_ptrs;
	/* Off-CPU time alone is measured, not sampled: no period (as Pyroscope's off_cpu type). */
	b->prof.period_type = which == PPROF_VALUES_OFF_CPU ? NULL : &b->vt[2];
	b->prof.period = which == PPROF_VALUES_OFF_CPU ? 0 : period;
	b->prof.time_nanos = o->time_ns;
	b->prof.duration_nanos = o->duration_ns;
	b->prof.default_sample_type = which == PPROF_VALUES_OFF_CPU ? s[4] : s[2];
	b->prof.n_comment = 1;
	b->prof.comment = &b->comment;

	err = build_tables(p, b);
	if (err)
		return err;
	err = build_samples(p, b, period);
	if (err)
		return err;
	b->prof.n_string_table = b->st.n;	/* last: the builders above may append extras */
	b->prof.string_table = b->st.v;
	return 0;
}

/* Packs the built message through deflate into g's FILE or memory. 0 or -errno. */
static int pack_gzip(const struct pb_build *b, struct gz_sink *g)
{
	int err;

	g->base.append = gz_append;
	/*
	 * windowBits 15 + 16: a gzip header and trailer, which every pprof reader expects.
	 * Fastest level, as Go's runtime/pprof does: the agent writes a profile every interval.
	 */
	if (deflateInit2(&g->zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	perftools__profiles__profile__pack_to_buffer(&b->prof, &g->base);
	if (!g->err) {
		g->zs.next_in = NULL;
		g->zs.avail_in = 0;
		gz_deflate(g, Z_FINISH);
	}
	err = g->err;
	deflateEnd(&g->zs);
	return err;
}

int pprof__write(const struct profile *p, FILE *f)
{
	struct pb_build b;
	struct gz_sink *g = NULL;
	int err;

	if (!p || !f)
		return -EINVAL;
	memset(&b, 0, sizeof(b));
	err = build(p, &b, 0, profile__sample_count(p), PPROF_VALUES_ALL, 0);
	if (err)
		goto free_build;

	g = calloc(1, sizeof(*g));
	if (!g) {
		err = -ENOMEM;
		goto free_build;
	}
	g->f = f;
	err = pack_gzip(&b, g);
	if (!err && fflush(f) != 0)
		err = -(errno ? errno : EIO);
	free(g);
free_build:
	build_free(&b);
	return err;
}

int pprof__encode(const struct profile *p, size_t first_sample, size_t n_samples, int gzip,
		  uint8_t **out, size_t *len)
{
	return pprof__encode_values(p, first_sample, n_samples, PPROF_VALUES_ALL, gzip, out, len,
				    NULL);
}

int pprof__encode_values(const struct profile *p, size_t first_sample, size_t n_samples,
			 enum pprof_values which, int gzip, uint8_t **out, size_t *len,
			 size_t *n_written)
{
	struct pb_build b;
	struct gz_sink *g = NULL;
	uint8_t *buf;
	size_t n;
	int err;

	if (!p || !out || !len || first_sample > profile__sample_count(p) ||
	    n_samples > profile__sample_count(p) - first_sample)
		return -EINVAL;
	memset(&b, 0, sizeof(b));
	err = build(p, &b, first_sample, n_samples, which, 1);
	if (err)
		goto free_build;
	if (n_written)
		*n_written = b.prof.n_sample;

	if (!gzip) {
		n = perftools__profiles__profile__get_packed_size(&b.prof);
		buf = malloc(n ? n : 1);
		if (!buf) {
			err = -ENOMEM;
			goto free_build;
		}
		perftools__profiles__profile__pack(&b.prof, buf);
		*out = buf;
		*len = n;
		goto free_build;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		err = -ENOMEM;
		goto free_build;
	}
	err = pack_gzip(&b, g);
	if (err) {
		free(g->mem);
	} else {
		*out = g->mem;
		*len = g->mem_len;
	}
	free(g);
free_build:
	build_free(&b);
	return err;
}
