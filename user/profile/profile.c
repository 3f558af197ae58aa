/* profile.c: the in-memory profile: interned strings, mappings, functions, locations, stacks, label sets and samples. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intern.h"
#include "profile.h"
#include "vec.h"

#define MAX_STRING_LEN	(1u << 24)	/* longer strings are refused: no symbol is that long */
#define MAX_ID		(UINT32_MAX - 1)

/* ---- the model ----------------------------------------------------------------------------- */

/*
 * Every table is a lib/intern table of fixed-layout keys (zeroed before they are filled, so equal
 * records are equal bytes): its dense ids are the pprof ids less one (strings: equal, "" is 0).
 */
struct mapping {
	uint64_t start;
	uint64_t limit;
	uint64_t offset;
	uint32_t filename;
	uint32_t build_id;
	uint32_t has_functions;
	uint32_t is_jit;
};

struct function {
	uint32_t name;
	uint32_t system_name;
	uint32_t filename;
};

struct location {
	uint64_t address;
	uint32_t mapping;
	uint32_t function;
};

struct sample {
	uint32_t stack;		/* stacks id: location ids, leaf first */
	uint32_t lset;		/* lsets id: sorted (key, value) string id pairs */
};

struct profile {
	struct profile_opts opts;
	uint64_t total;

	struct intern *strs;
	struct intern *maps;
	struct intern *funcs;
	struct intern *locs;
	uint32_t *loc_names;		/* by location: the name shown (string id) */
	size_t cap_loc_names;
	struct intern *stacks;
	struct intern *lsets;
	struct pf_label *lset_labels;	/* every set's labels as views want them, back to back */
	size_t n_lset_labels, cap_lset_labels;
	size_t *lset_off;		/* by set: its first label in lset_labels */
	size_t cap_lset_off;
	struct intern *samples;
	uint64_t *counts;		/* by sample */
	size_t cap_counts;
	uint64_t *off_ns;		/* by sample: off-CPU nanoseconds */
	size_t cap_off_ns;
	uint64_t total_off_ns;

	uint32_t *scratch;		/* label id pairs of the sample being added */
	size_t cap_scratch;
	uint32_t service;		/* string id of the service of every sample, or 0 */
};

struct profile *profile__new(const struct profile_opts *opts)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (opts)
		p->opts = *opts;
	p->strs = intern__new();
	p->maps = intern__new();
	p->funcs = intern__new();
	p->locs = intern__new();
	p->stacks = intern__new();
	p->lsets = intern__new();
	p->samples = intern__new();
	if (!p->strs || !p->maps || !p->funcs || !p->locs || !p->stacks || !p->lsets ||
	    !p->samples || intern__id(p->strs, "", 0, NULL) != 0) {
		profile__free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	intern__free(p->strs);
	intern__free(p->maps);
	intern__free(p->funcs);
	intern__free(p->locs);
	intern__free(p->stacks);
	intern__free(p->lsets);
	intern__free(p->samples);
	free(p->loc_names);
	free(p->lset_labels);
	free(p->lset_off);
	free(p->counts);
	free(p->off_ns);
	free(p->scratch);
	free(p);
}

/* ---- strings ------------------------------------------------------------------------------- */

/* Returns the string's id (0 for NULL or ""), or -errno. */
static int64_t intern_str(struct profile *p, const char *s)
{
	size_t len;

	if (!s || !*s)
		return 0;
	len = strlen(s);
	if (len > MAX_STRING_LEN)
		return -E2BIG;
	return intern__id(p->strs, s, len, NULL);
}

static const char *str(const struct profile *p, uint32_t id)
{
	return intern__key(p->strs, id, NULL);
}

uint32_t profile__string_id(const struct profile *p, const char *s)
{
	int64_t id;

	if (!p || !s || !*s)
		return 0;
	id = intern__find(p->strs, s, strlen(s));
	return id < 0 ? 0 : id;
}

size_t profile__string_count(const struct profile *p)
{
	return p ? intern__count(p->strs) : 0;
}

const char *profile__string(const struct profile *p, uint32_t id)
{
	return p ? str(p, id) : NULL;
}

/* ---- mappings, functions, locations -------------------------------------------------------- */

/* The 1-based id of a record, added if new; 0 with errno on failure. */
static uint32_t record_id(struct intern *t, const void *key, size_t len, int *added)
{
	int64_t id = intern__id(t, key, len, added);

	if (id < 0 || id >= MAX_ID) {
		errno = id < 0 ? (int)-id : ENOSPC;
		return 0;
	}
	return id + 1;
}

uint32_t profile__mapping(struct profile *p, const struct pf_mapping *m)
{
	struct mapping key;
	int64_t fn, bid;

	if (!p || !m) {
		errno = EINVAL;
		return 0;
	}
	fn = intern_str(p, m->filename);
	bid = fn < 0 ? fn : intern_str(p, m->build_id);
	if (fn < 0 || bid < 0) {
		errno = (int)-(fn < 0 ? fn : bid);
		return 0;
	}
	memset(&key, 0, sizeof(key));
	key.start = m->start;
	key.limit = m->limit;
	key.offset = m->offset;
	key.filename = (uint32_t)fn;
	key.build_id = (uint32_t)bid;
	key.has_functions = m->has_functions != 0;
	key.is_jit = m->is_jit != 0;
	return record_id(p->maps, &key, sizeof(key), NULL);
}

uint32_t profile__function(struct profile *p, const char *name, const char *system_name,
			   const char *filename)
{
	struct function key;
	int64_t n, sn, fn;

	if (!p || !name) {
		errno = EINVAL;
		return 0;
	}
	n = intern_str(p, name);
	sn = n < 0 ? n : intern_str(p, system_name);
	fn = sn < 0 ? sn : intern_str(p, filename);
	if (fn < 0) {
		errno = (int)-fn;
		return 0;
	}
	key.name = (uint32_t)n;
	key.system_name = (uint32_t)sn;
	key.filename = (uint32_t)fn;
	return record_id(p->funcs, &key, sizeof(key), NULL);
}

static const struct mapping *mapping_at(const struct profile *p, uint32_t id)
{
	return intern__key(p->maps, id - 1, NULL);
}

static const struct function *function_at(const struct profile *p, uint32_t id)
{
	return intern__key(p->funcs, id - 1, NULL);
}

static const struct location *location_at(const struct profile *p, uint32_t id)
{
	return intern__key(p->locs, id - 1, NULL);
}

/* The name folded stacks and flame graphs show for a location without a function name. */
static int64_t address_name(struct profile *p, uint32_t mapping_id, uint64_t address)
{
	char buf[256];
	const struct mapping *m = mapping_id ? mapping_at(p, mapping_id) : NULL;
	const char *file = m ? str(p, m->filename) : "";
	const char *base = strrchr(file, '/');

	base = base ? base + 1 : file;
	if (*base && address >= m->start)
		snprintf(buf, sizeof(buf), "%.200s+0x%llx", base,
			 (unsigned long long)(address - m->start + m->offset));
	else
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)address);
	return intern_str(p, buf);
}

uint32_t profile__location(struct profile *p, uint32_t mapping_id, uint64_t address,
			   uint32_t function_id)
{
	struct location key;
	uint32_t id;
	int64_t name;
	int added;

	if (!p || mapping_id > intern__count(p->maps) || function_id > intern__count(p->funcs)) {
		errno = EINVAL;
		return 0;
	}
	memset(&key, 0, sizeof(key));
	key.address = address;
	key.mapping = mapping_id;
	key.function = function_id;
	if (VEC_RESERVE(p->loc_names, p->cap_loc_names, intern__count(p->locs) + 1)) {
		errno = ENOMEM;
		return 0;
	}
	id = record_id(p->locs, &key, sizeof(key), &added);
	if (!id || !added)
		return id;
	name = function_id ? function_at(p, function_id)->name : 0;
	if (!name)
		name = address_name(p, mapping_id, address);
	p->loc_names[id - 1] = name < 0 ? 0 : (uint32_t)name;
	return id;
}

/* ---- stacks, label sets, samples ----------------------------------------------------------- */

/* pairs: n sorted, distinct (key id, value id) pairs. */
static int64_t intern_lset(struct profile *p, const uint32_t *pairs, uint32_t n)
{
	int64_t id;
	int added;
	uint32_t i;

	if (VEC_RESERVE(p->lset_off, p->cap_lset_off, intern__count(p->lsets) + 1) ||
	    VEC_RESERVE(p->lset_labels, p->cap_lset_labels, p->n_lset_labels + n))
		return -ENOMEM;
	id = intern__id(p->lsets, pairs, 2 * n * sizeof(*pairs), &added);
	if (id < 0 || !added)
		return id;
	p->lset_off[id] = p->n_lset_labels;
	for (i = 0; i < n; i++) {
		p->lset_labels[p->n_lset_labels + i].key = str(p, pairs[2 * i]);
		p->lset_labels[p->n_lset_labels + i].value = str(p, pairs[2 * i + 1]);
	}
	p->n_lset_labels += n;
	return id;
}

/* Orders label pairs by key id, then value id: any input order gives the same set. */
static int pair_cmp(const void *a, const void *b)
{
	const uint32_t *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	if (x[1] != y[1])
		return x[1] < y[1] ? -1 : 1;
	return 0;
}

static uint32_t sort_pairs(uint32_t *pairs, uint32_t n)
{
	uint32_t i, out;

	if (n > 1)
		qsort(pairs, n, 2 * sizeof(*pairs), pair_cmp);
	for (i = 0, out = 0; i < n; i++) {	/* drop exact duplicates: a label set is a set */
		if (out && pair_cmp(&pairs[2 * (out - 1)], &pairs[2 * i]) == 0)
			continue;
		pairs[2 * out] = pairs[2 * i];
		pairs[2 * out + 1] = pairs[2 * i + 1];
		out++;
	}
	return out;
}

int profile__add(struct profile *p, const uint32_t *locs, size_t n_locs,
		 const struct pf_label *labels, size_t n_labels, uint64_t count)
{
	return profile__add_values(p, locs, n_locs, labels, n_labels, count, 0);
}

int profile__add_values(struct profile *p, const uint32_t *locs, size_t n_locs,
			const struct pf_label *labels, size_t n_labels, uint64_t count,
			uint64_t off_ns)
{
	struct sample key;
	uint32_t n_pairs;
	int64_t sid, lid, id;
	int added;
	size_t i;

	if (!p || (n_locs && !locs) || (n_labels && !labels))
		return -EINVAL;
	if (n_locs > UINT32_MAX / 4 || n_labels > UINT32_MAX / 4)
		return -E2BIG;
	for (i = 0; i < n_locs; i++) {
		if (locs[i] == 0 || locs[i] > intern__count(p->locs))
			return -EINVAL;
	}
	for (i = 0; i < n_labels; i++) {
		if (!labels[i].key || !*labels[i].key || !labels[i].value)
			return -EINVAL;
	}
	if (count == 0 && off_ns == 0)
		return 0;

	if (VEC_RESERVE(p->scratch, p->cap_scratch, 2 * n_labels))
		return -ENOMEM;
	for (i = 0; i < n_labels; i++) {
		int64_t k = intern_str(p, labels[i].key);
		int64_t v = k < 0 ? k : intern_str(p, labels[i].value);

		if (v < 0)
			return (int)v;
		p->scratch[2 * i] = (uint32_t)k;
		p->scratch[2 * i + 1] = (uint32_t)v;
	}
	n_pairs = sort_pairs(p->scratch, (uint32_t)n_labels);

	sid = intern__id(p->stacks, locs, n_locs * sizeof(*locs), NULL);
	if (sid < 0)
		return (int)sid;
	lid = intern_lset(p, p->scratch, n_pairs);
	if (lid < 0)
		return (int)lid;
	key.stack = (uint32_t)sid;
	key.lset = (uint32_t)lid;
	if (VEC_RESERVE(p->counts, p->cap_counts, intern__count(p->samples) + 1) ||
	    VEC_RESERVE(p->off_ns, p->cap_off_ns, intern__count(p->samples) + 1))
		return -ENOMEM;
	id = intern__id(p->samples, &key, sizeof(key), &added);
	if (id < 0)
		return (int)id;
	if (added) {
		p->counts[id] = 0;
		p->off_ns[id] = 0;
	}
	p->counts[id] += count;
	p->total += count;
	p->off_ns[id] += off_ns;
	p->total_off_ns += off_ns;
	return 0;
}

/* ---- read access --------------------------------------------------------------------------- */

size_t profile__sample_count(const struct profile *p)
{
	return p ? intern__count(p->samples) : 0;
}

uint64_t profile__total(const struct profile *p)
{
	return p ? p->total : 0;
}

uint64_t profile__total_off_ns(const struct profile *p)
{
	return p ? p->total_off_ns : 0;
}

uint64_t profile__shown_value(const struct profile *p, const struct pf_sample_view *s)
{
	return p->opts.show_off_cpu ? s->off_ns : s->count;
}

int profile__sample(const struct profile *p, size_t i, struct pf_sample_view *out)
{
	const struct sample *s;
	size_t len;

	if (!p || !out)
		return -EINVAL;
	if (i >= intern__count(p->samples))
		return -ENOENT;
	s = intern__key(p->samples, i, NULL);
	out->locs = intern__key(p->stacks, s->stack, &len);
	out->n_locs = len / sizeof(*out->locs);
	intern__key(p->lsets, s->lset, &len);
	out->labels = p->lset_labels + p->lset_off[s->lset];
	out->n_labels = len / (2 * sizeof(uint32_t));
	out->count = p->counts[i];
	out->off_ns = p->off_ns[i];
	out->stack_id = s->stack + 1;
	return 0;
}

const char *profile__location_name(const struct profile *p, uint32_t loc_id)
{
	if (!p || loc_id == 0 || loc_id > intern__count(p->locs))
		return NULL;
	return str(p, p->loc_names[loc_id - 1]);
}

const char *profile__label(const struct pf_sample_view *s, const char *key)
{
	size_t i;

	if (!s || !key)
		return NULL;
	for (i = 0; i < s->n_labels; i++) {
		if (strcmp(s->labels[i].key, key) == 0)
			return s->labels[i].value;
	}
	return NULL;
}

void profile__set_times(struct profile *p, int64_t time_ns, int64_t duration_ns)
{
	p->opts.time_ns = time_ns;
	p->opts.duration_ns = duration_ns;
}

int profile__set_service(struct profile *p, const char *name)
{
	int64_t id;

	if (!p)
		return -EINVAL;
	id = intern_str(p, name);
	if (id > 0 && intern_str(p, PROFILE_SERVICE_LABEL) < 0)	/* the writers' key */
		id = -ENOMEM;
	if (id < 0)
		return (int)id;
	p->service = (uint32_t)id;
	return 0;
}

const char *profile__service(const struct profile *p)
{
	return p && p->service ? str(p, p->service) : NULL;
}

const struct profile_opts *profile__opts(const struct profile *p)
{
	return p ? &p->opts : NULL;
}

size_t profile__mapping_count(const struct profile *p)
{
	return p ? intern__count(p->maps) : 0;
}

int profile__mapping_get(const struct profile *p, uint32_t id, struct pf_mapping *out)
{
	const struct mapping *m;

	if (!p || !out)
		return -EINVAL;
	if (id == 0 || id > intern__count(p->maps))
		return -ENOENT;
	m = mapping_at(p, id);
	out->start = m->start;
	out->limit = m->limit;
	out->offset = m->offset;
	out->filename = str(p, m->filename);
	out->build_id = m->build_id ? str(p, m->build_id) : NULL;
	out->has_functions = m->has_functions;
	out->is_jit = m->is_jit;
	return 0;
}

size_t profile__function_count(const struct profile *p)
{
	return p ? intern__count(p->funcs) : 0;
}

int profile__function_get(const struct profile *p, uint32_t id, struct pf_function_view *out)
{
	const struct function *f;

	if (!p || !out)
		return -EINVAL;
	if (id == 0 || id > intern__count(p->funcs))
		return -ENOENT;
	f = function_at(p, id);
	out->name = str(p, f->name);
	out->system_name = str(p, f->system_name);
	out->filename = str(p, f->filename);
	return 0;
}

size_t profile__location_count(const struct profile *p)
{
	return p ? intern__count(p->locs) : 0;
}

int profile__location_get(const struct profile *p, uint32_t id, struct pf_location_view *out)
{
	const struct location *l;

	if (!p || !out)
		return -EINVAL;
	if (id == 0 || id > intern__count(p->locs))
		return -ENOENT;
	l = location_at(p, id);
	out->mapping_id = l->mapping;
	out->address = l->address;
	out->function_id = l->function;
	return 0;
}

/* ---- top functions ------------------------------------------------------------------------- */

static bool lset_has(const struct profile *p, uint32_t lset, uint32_t key, uint32_t value)
{
	size_t len, i;
	const uint32_t *ids = intern__key(p->lsets, lset, &len);

	for (i = 0; i < len / (2 * sizeof(*ids)); i++) {
		if (ids[2 * i] == key && (value == UINT32_MAX || ids[2 * i + 1] == value))
			return true;
	}
	return false;
}

struct top_ctx {
	const struct profile *p;
	const uint64_t *self;
	const uint64_t *total;
};

static int top_cmp(const void *a, const void *b, void *arg)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct top_ctx *c = arg;

	if (c->self[x] != c->self[y])
		return c->self[x] > c->self[y] ? -1 : 1;
	if (c->total[x] != c->total[y])
		return c->total[x] > c->total[y] ? -1 : 1;
	return strcmp(str(c->p, x), str(c->p, y)) < 0 ? -1 : 1;	/* distinct ids, distinct strings */
}

/*
 * Functions are grouped by their display name (string id), so the same method seen through
 * two mappings is one row. "total" counts a name once per sample even under recursion.
 */
size_t profile__top(const struct profile *p, const char *key, const char *value,
		    struct pf_top *out, size_t n)
{
	return profile__top_values(p, key, value, 0, out, n);
}

size_t profile__top_values(const struct profile *p, const char *key, const char *value, int off_cpu,
			   struct pf_top *out, size_t n)
{
	uint64_t *self = NULL, *total = NULL;
	uint32_t *seen = NULL, *names = NULL;
	uint32_t key_id = 0, value_id = UINT32_MAX;
	size_t i, j, n_names = 0, filled = 0, n_strs;
	struct top_ctx ctx;

	if (!p || !out || n == 0)
		return 0;
	if (key) {
		key_id = profile__string_id(p, key);
		if (!key_id)
			return 0;
		if (value) {
			value_id = profile__string_id(p, value);
			if (!value_id && *value)
				return 0;
		}
	}
	n_strs = intern__count(p->strs);
	self = calloc(n_strs, sizeof(*self));
	total = calloc(n_strs, sizeof(*total));
	seen = calloc(n_strs, sizeof(*seen));	/* sample index + 1 that last counted it */
	names = malloc(n_strs * sizeof(*names));
	if (!self || !total || !seen || !names) {
		errno = ENOMEM;
		goto free_tables;
	}

	for (i = 0; i < intern__count(p->samples); i++) {
		const struct sample *s = intern__key(p->samples, i, NULL);
		size_t len;
		const uint32_t *locs = intern__key(p->stacks, s->stack, &len);

		uint64_t val = off_cpu ? p->off_ns[i] : p->counts[i];

		if (!val || (key && !lset_has(p, s->lset, key_id, value_id)))
			continue;	/* 0: a sample of the other value only */
		for (j = 0; j < len / sizeof(*locs); j++) {
			uint32_t name = p->loc_names[locs[j] - 1];

			if (j == 0)
				self[name] += val;
			if (seen[name] == i + 1)
				continue;
			seen[name] = (uint32_t)(i + 1);
			if (total[name] == 0)
				names[n_names++] = name;
			total[name] += val;
		}
	}

	ctx.p = p;
	ctx.self = self;
	ctx.total = total;
	qsort_r(names, n_names, sizeof(*names), top_cmp, &ctx);
	for (filled = 0; filled < n && filled < n_names; filled++) {
		out[filled].name = str(p, names[filled]);
		out[filled].self = self[names[filled]];
		out[filled].total = total[names[filled]];
	}

free_tables:
	free(self);
	free(total);
	free(seen);
	free(names);
	return filled;
}
