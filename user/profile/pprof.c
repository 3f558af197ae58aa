/* pprof.c: writes a profile as gzip-compressed pprof (profile.proto) with protobuf-c and zlib. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

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
	FILE *f;
	int err;		/* first error, as -errno */
	unsigned char out[64 * 1024];
};

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
		errno = 0;
		if (have && fwrite(g->out, 1, have, g->f) != have) {
			g->err = -(errno ? errno : EIO);
			return;
		}
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

/*
 * The pprof string table is the profile's own table (already deduplicated, 0 = "") plus the
 * few strings only this writer uses, appended when the profile does not have them.
 */
struct strtab {
	char **v;
	size_t n;
	size_t cap;
};

static int64_t str_index(const struct profile *p, struct strtab *t, const char *s)
{
	uint32_t id;
	size_t i;

	if (!s || !*s)
		return 0;
	id = profile__string_id(p, s);
	if (id)
		return id;
	for (i = profile__string_count(p); i < t->n; i++) {	/* a handful of extras */
		if (strcmp(t->v[i], s) == 0)
			return (int64_t)i;
	}
	if (t->n == t->cap)
		return -ENOSPC;	/* cap was sized for every extra this writer adds */
	t->v[t->n] = (char *)(uintptr_t)s;
	return (int64_t)t->n++;
}

/* ---- building the message --------------------------------------------------------------- */

#define N_EXTRA_STRINGS 8

struct pb_build {
	pb_profile prof;
	pb_value_type vt[3];	/* samples/count, cpu/nanoseconds, period type */
	pb_value_type *vt_ptrs[2];
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
	int64_t *values;	/* 2 per sample */
	pb_label *labels;	/* all samples' labels, one pool */
	pb_label **label_ptrs;
	int64_t comment;
	char comment_text[64];
};

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
}

static int build_tables(const struct profile *p, struct pb_build *b)
{
	size_t n_maps = profile__mapping_count(p), n_funcs = profile__function_count(p);
	size_t n_locs = profile__location_count(p), i;
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

	for (i = 0; i < n_maps; i++) {
		pb_mapping *pm = &b->maps[i];

		if (profile__mapping_get(p, (uint32_t)(i + 1), &m))
			return -EIO;
		idx[0] = str_index(p, &b->st, m.filename);
		idx[1] = str_index(p, &b->st, m.build_id);
		if (idx[0] < 0 || idx[1] < 0)
			return -EIO;	/* interned by the profile, so always found */
		perftools__profiles__mapping__init(pm);
		pm->id = i + 1;
		pm->memory_start = m.start;
		pm->memory_limit = m.limit;
		pm->file_offset = m.offset;
		pm->filename = idx[0];
		pm->build_id = idx[1];
		pm->has_functions = m.has_functions != 0;
		b->map_ptrs[i] = pm;
	}
	for (i = 0; i < n_funcs; i++) {
		pb_function *pf = &b->funcs[i];

		if (profile__function_get(p, (uint32_t)(i + 1), &fv))
			return -EIO;
		idx[0] = str_index(p, &b->st, fv.name);
		idx[1] = str_index(p, &b->st, fv.system_name);
		idx[2] = str_index(p, &b->st, fv.filename);
		if (idx[0] < 0 || idx[1] < 0 || idx[2] < 0)
			return -EIO;
		perftools__profiles__function__init(pf);
		pf->id = i + 1;
		pf->name = idx[0];
		/*
		 * Left 0 when not given: pprof treats name == system_name as "not yet demangled"
		 * and strips argument lists, which would merge .NET overloads.
		 */
		pf->system_name = idx[1];
		pf->filename = idx[2];
		b->func_ptrs[i] = pf;
	}
	for (i = 0; i < n_locs; i++) {
		pb_location *pl = &b->locs[i];

		if (profile__location_get(p, (uint32_t)(i + 1), &lv))
			return -EIO;
		perftools__profiles__location__init(pl);
		pl->id = i + 1;
		pl->mapping_id = lv.mapping_id;
		pl->address = lv.address;
		if (lv.function_id) {
			perftools__profiles__line__init(&b->lines[i]);
			b->lines[i].function_id = lv.function_id;
			b->line_ptrs[i] = &b->lines[i];
			pl->n_line = 1;
			pl->line = &b->line_ptrs[i];
		}
		b->loc_ptrs[i] = pl;
	}
	b->prof.n_mapping = n_maps;
	b->prof.mapping = b->map_ptrs;
	b->prof.n_function = n_funcs;
	b->prof.function = b->func_ptrs;
	b->prof.n_location = n_locs;
	b->prof.location = b->loc_ptrs;
	return 0;
}

static int build_samples(const struct profile *p, struct pb_build *b, int64_t period)
{
	size_t n = profile__sample_count(p), n_loc_ids = 0, n_labels = 0, i, j;
	size_t at_loc = 0, at_label = 0;
	struct pf_sample_view v;

	for (i = 0; i < n; i++) {
		if (profile__sample(p, i, &v))
			return -EIO;
		n_loc_ids += v.n_locs;
		n_labels += v.n_labels;
	}
	b->samples = calloc(n + 1, sizeof(*b->samples));
	b->sample_ptrs = calloc(n + 1, sizeof(*b->sample_ptrs));
	b->loc_ids = calloc(n_loc_ids + 1, sizeof(*b->loc_ids));
	b->values = calloc(2 * n + 1, sizeof(*b->values));
	b->labels = calloc(n_labels + 1, sizeof(*b->labels));
	b->label_ptrs = calloc(n_labels + 1, sizeof(*b->label_ptrs));
	if (!b->samples || !b->sample_ptrs || !b->loc_ids || !b->values || !b->labels ||
	    !b->label_ptrs)
		return -ENOMEM;

	for (i = 0; i < n; i++) {
		pb_sample *ps = &b->samples[i];

		if (profile__sample(p, i, &v))
			return -EIO;
		perftools__profiles__sample__init(ps);
		ps->n_location_id = v.n_locs;
		ps->location_id = b->loc_ids + at_loc;
		for (j = 0; j < v.n_locs; j++)
			b->loc_ids[at_loc++] = v.locs[j];
		ps->n_value = 2;
		ps->value = b->values + 2 * i;
		/* int64 on the wire: clamp instead of wrapping negative */
		ps->value[0] = v.count > INT64_MAX ? INT64_MAX : (int64_t)v.count;
		ps->value[1] = period > 0 && v.count > (uint64_t)(INT64_MAX / period) ?
			       INT64_MAX : (int64_t)v.count * period;
		ps->n_label = v.n_labels;
		ps->label = b->label_ptrs + at_label;
		for (j = 0; j < v.n_labels; j++) {
			pb_label *pl = &b->labels[at_label];
			int64_t k = str_index(p, &b->st, v.labels[j].key);
			int64_t s = str_index(p, &b->st, v.labels[j].value);

			if (k < 0 || s < 0)
				return -EIO;
			perftools__profiles__label__init(pl);
			pl->key = k;
			pl->str = s;
			b->label_ptrs[at_label++] = pl;
		}
		b->sample_ptrs[i] = ps;
	}
	b->prof.n_sample = n;
	b->prof.sample = b->sample_ptrs;
	return 0;
}

static int build(const struct profile *p, struct pb_build *b)
{
	const struct profile_opts *o = profile__opts(p);
	int64_t period = o->period_ns > INT64_MAX ? INT64_MAX : (int64_t)o->period_ns;
	int64_t s[4];
	size_t i;
	int err;

	perftools__profiles__profile__init(&b->prof);
	b->st.cap = profile__string_count(p) + N_EXTRA_STRINGS;
	b->st.v = calloc(b->st.cap, sizeof(*b->st.v));
	if (!b->st.v)
		return -ENOMEM;
	for (i = 0; i < profile__string_count(p); i++)
		b->st.v[i] = (char *)(uintptr_t)profile__string(p, (uint32_t)i);
	b->st.n = i;

	s[0] = str_index(p, &b->st, "samples");
	s[1] = str_index(p, &b->st, "count");
	s[2] = str_index(p, &b->st, "cpu");
	s[3] = str_index(p, &b->st, "nanoseconds");
	snprintf(b->comment_text, sizeof(b->comment_text), "spanprof %s", SPANPROF_VERSION);
	b->comment = str_index(p, &b->st, b->comment_text);
	if (s[0] < 0 || s[1] < 0 || s[2] < 0 || s[3] < 0 || b->comment < 0)
		return -EIO;
	for (i = 0; i < 3; i++)
		perftools__profiles__value_type__init(&b->vt[i]);
	b->vt[0].type = s[0];
	b->vt[0].unit = s[1];
	b->vt[1].type = s[2];
	b->vt[1].unit = s[3];
	b->vt[2].type = s[2];
	b->vt[2].unit = s[3];
	b->vt_ptrs[0] = &b->vt[0];
	b->vt_ptrs[1] = &b->vt[1];
	b->prof.n_sample_type = 2;
	b->prof.sample_type = b->vt_ptrs;
	b->prof.period_type = &b->vt[2];
	b->prof.period = period;
	b->prof.time_nanos = o->time_ns;
	b->prof.duration_nanos = o->duration_ns;
	b->prof.default_sample_type = s[2];
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

int pprof__write(const struct profile *p, FILE *f)
{
	struct pb_build b;
	struct gz_sink *g = NULL;
	int err;

	if (!p || !f)
		return -EINVAL;
	memset(&b, 0, sizeof(b));
	err = build(p, &b);
	if (err)
		goto free_build;

	g = calloc(1, sizeof(*g));
	if (!g) {
		err = -ENOMEM;
		goto free_build;
	}
	g->base.append = gz_append;
	g->f = f;
	/*
	 * windowBits 15 + 16: a gzip header and trailer, which every pprof reader expects.
	 * Fastest level, as Go's runtime/pprof does: the agent writes a profile every interval.
	 */
	if (deflateInit2(&g->zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		err = -ENOMEM;
		goto free_sink;
	}
	perftools__profiles__profile__pack_to_buffer(&b.prof, &g->base);
	if (!g->err) {
		g->zs.next_in = NULL;
		g->zs.avail_in = 0;
		gz_deflate(g, Z_FINISH);
	}
	err = g->err;
	if (!err && fflush(f) != 0)
		err = -(errno ? errno : EIO);
	deflateEnd(&g->zs);
free_sink:
	free(g);
free_build:
	build_free(&b);
	return err;
}
