/* profile.c: the in-memory profile: hash-interned strings, mappings, functions, locations, stacks, label sets and samples. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

#define MAX_STRING_LEN	(1u << 24)	/* longer strings are refused: no symbol is that long */
#define MAX_ID		(UINT32_MAX - 1)
#define ARENA_BLOCK	(64 * 1024)

/* ---- hashing ----------------------------------------------------------------------------- */

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ULL;
	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ULL;
	x ^= x >> 32;
	return x;
}

static uint64_t hash_bytes(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *b = data;
	uint64_t h = seed ^ (len * 0x9e3779b97f4a7c15ULL);
	uint64_t w;

	for (; len >= 8; b += 8, len -= 8) {
		memcpy(&w, b, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	w = 0;
	if (len)	/* b may be NULL when the whole input is empty */
		memcpy(&w, b, len);
	h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
	return mix64(h);
}

/* ---- open-addressing id table ------------------------------------------------------------- */

/*
 * Maps a key to an id without storing the key: the key lives in the owning table (strings,
 * stacks, ...), and an equality callback compares a probe key against an id. Slots keep the
 * 32-bit hash so growing never touches the keys and most mismatches cost no comparison.
 */
struct slot {
	uint32_t hash;
	uint32_t id;	/* 0: empty */
};

struct htab {
	struct slot *slots;
	uint32_t mask;	/* capacity - 1, capacity a power of two */
	uint32_t used;
};

typedef bool (*eq_fn)(const struct profile *p, const void *key, uint32_t id);

static int htab_grow(struct htab *t)
{
	uint32_t cap = t->slots ? (t->mask + 1) * 2 : 64;
	struct slot *ns;
	uint32_t i;

	if (cap == 0 || cap > (1u << 31))
		return -ENOSPC;
	ns = calloc(cap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (i = 0; t->slots && i <= t->mask; i++) {
		uint32_t j;

		if (!t->slots[i].id)
			continue;
		for (j = t->slots[i].hash & (cap - 1); ns[j].id; j = (j + 1) & (cap - 1))
			;
		ns[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = ns;
	t->mask = cap - 1;
	return 0;
}

/* Returns the id of an equal key, or 0 with *at set to the empty slot where it belongs. */
static inline uint32_t htab_find(const struct htab *t, const struct profile *p, uint32_t hash,
				 const void *key, eq_fn eq, uint32_t *at)
{
	uint32_t i;

	if (!t->slots) {
		*at = UINT32_MAX;
		return 0;
	}
	for (i = hash & t->mask; t->slots[i].id; i = (i + 1) & t->mask) {
		if (t->slots[i].hash == hash && eq(p, key, t->slots[i].id))
			return t->slots[i].id;
	}
	*at = i;
	return 0;
}

/* Records id under hash at the slot htab_find returned; grows first when 3/4 full. */
static int htab_insert(struct htab *t, uint32_t hash, uint32_t id, uint32_t at)
{
	int err;

	if (!t->slots || (t->used + 1) * 4ull > (t->mask + 1) * 3ull) {
		err = htab_grow(t);
		if (err)
			return err;
		for (at = hash & t->mask; t->slots[at].id; at = (at + 1) & t->mask)
			;
	}
	t->slots[at].hash = hash;
	t->slots[at].id = id;
	t->used++;
	return 0;
}

/* ---- growable arrays ----------------------------------------------------------------------- */

static int vec_reserve(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *na;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	na = realloc(*arr, ncap * elem);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

#define VEC_RESERVE(v, capv, need) vec_reserve((void **)&(v), &(capv), (need), sizeof(*(v)))

/* ---- the model ----------------------------------------------------------------------------- */

struct arena_block {
	struct arena_block *next;
	size_t used;
	size_t size;
	char data[];
};

struct str {
	const char *s;
	uint32_t len;
};

struct mapping {
	uint64_t start;
	uint64_t limit;
	uint64_t offset;
	uint32_t filename;
	uint32_t build_id;
	uint8_t has_functions;
	uint8_t is_jit;
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
	uint32_t name;	/* display name (string id) */
};

struct span {	/* a run in a pool */
	size_t off;
	uint32_t len;
};

struct sample {
	uint32_t stack;
	uint32_t lset;
	uint64_t count;
};

struct profile {
	struct profile_opts opts;
	uint64_t total;

	struct arena_block *arena;
	struct str *strs;		/* index = string id */
	size_t n_strs, cap_strs;
	struct htab str_h;

	struct mapping *maps;		/* index = id - 1 */
	size_t n_maps, cap_maps;
	struct htab map_h;

	struct function *funcs;
	size_t n_funcs, cap_funcs;
	struct htab func_h;

	struct location *locs;
	size_t n_locs, cap_locs;
	struct htab loc_h;

	struct span *stacks;		/* runs in stack_pool, leaf first */
	size_t n_stacks, cap_stacks;
	uint32_t *stack_pool;
	size_t n_stack_pool, cap_stack_pool;
	struct htab stack_h;

	struct span *lsets;		/* runs in lset_ids (2 per label) and lset_labels */
	size_t n_lsets, cap_lsets;
	uint32_t *lset_ids;		/* key id, value id */
	size_t n_lset_ids, cap_lset_ids;
	struct pf_label *lset_labels;
	size_t n_lset_labels, cap_lset_labels;
	struct htab lset_h;

	struct sample *samples;		/* index = sample index (id - 1) */
	size_t n_samples, cap_samples;
	struct htab sample_h;

	uint32_t *scratch;		/* label id pairs of the sample being added */
	size_t cap_scratch;
};

struct profile *profile__new(const struct profile_opts *opts)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (opts)
		p->opts = *opts;
	if (VEC_RESERVE(p->strs, p->cap_strs, 1)) {
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	p->strs[0].s = "";
	p->strs[0].len = 0;
	p->n_strs = 1;
	return p;
}

void profile__free(struct profile *p)
{
	struct arena_block *b, *next;

	if (!p)
		return;
	for (b = p->arena; b; b = next) {
		next = b->next;
		free(b);
	}
	free(p->strs);
	free(p->str_h.slots);
	free(p->maps);
	free(p->map_h.slots);
	free(p->funcs);
	free(p->func_h.slots);
	free(p->locs);
	free(p->loc_h.slots);
	free(p->stacks);
	free(p->stack_pool);
	free(p->stack_h.slots);
	free(p->lsets);
	free(p->lset_ids);
	free(p->lset_labels);
	free(p->lset_h.slots);
	free(p->samples);
	free(p->sample_h.slots);
	free(p->scratch);
	free(p);
}

/* ---- strings ------------------------------------------------------------------------------- */

/* String bytes never move (views and labels point at them), so they live in an arena. */
static char *arena_copy(struct profile *p, const char *s, size_t len)
{
	struct arena_block *b = p->arena;
	char *out;

	if (!b || b->size - b->used < len + 1) {
		size_t size = len + 1 > ARENA_BLOCK / 4 ? len + 1 : ARENA_BLOCK;

		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->size = size;
		b->used = 0;
		if (size == ARENA_BLOCK || !p->arena) {
			b->next = p->arena;
			p->arena = b;
		} else {	/* a big string gets its own block behind the current one */
			b->next = p->arena->next;
			p->arena->next = b;
		}
	}
	out = b->data + b->used;
	memcpy(out, s, len);
	out[len] = '\0';
	b->used += len + 1;
	return out;
}

struct str_key {
	const char *s;
	size_t len;
};

static bool str_eq(const struct profile *p, const void *key, uint32_t id)
{
	const struct str_key *k = key;

	return p->strs[id].len == k->len && memcmp(p->strs[id].s, k->s, k->len) == 0;
}

/* Returns the string's id (0 for NULL or ""), or -errno. */
static int64_t intern_str(struct profile *p, const char *s)
{
	struct str_key k;
	uint32_t hash, id, at;
	char *copy;
	int err;

	if (!s || !*s)
		return 0;
	k.s = s;
	k.len = strlen(s);
	if (k.len > MAX_STRING_LEN)
		return -E2BIG;
	hash = (uint32_t)hash_bytes(s, k.len, 0);
	id = htab_find(&p->str_h, p, hash, &k, str_eq, &at);
	if (id)
		return id;
	if (p->n_strs > MAX_ID)
		return -ENOSPC;
	if (VEC_RESERVE(p->strs, p->cap_strs, p->n_strs + 1))
		return -ENOMEM;
	copy = arena_copy(p, s, k.len);
	if (!copy)
		return -ENOMEM;
	id = (uint32_t)p->n_strs;
	err = htab_insert(&p->str_h, hash, id, at);
	if (err)
		return err;	/* the copy stays in the arena, unreferenced: bounded by this call */
	p->strs[id].s = copy;
	p->strs[id].len = (uint32_t)k.len;
	p->n_strs++;
	return id;
}

uint32_t profile__string_id(const struct profile *p, const char *s)
{
	struct str_key k;
	uint32_t at;

	if (!p || !s || !*s)
		return 0;
	k.s = s;
	k.len = strlen(s);
	if (k.len > MAX_STRING_LEN)
		return 0;
	return htab_find(&p->str_h, p, (uint32_t)hash_bytes(s, k.len, 0), &k, str_eq, &at);
}

size_t profile__string_count(const struct profile *p)
{
	return p ? p->n_strs : 0;
}

const char *profile__string(const struct profile *p, uint32_t id)
{
	return p && id < p->n_strs ? p->strs[id].s : NULL;
}

/* ---- mappings, functions, locations -------------------------------------------------------- */

static bool map_eq(const struct profile *p, const void *key, uint32_t id)
{
	const struct mapping *a = key, *b = &p->maps[id - 1];

	return a->start == b->start && a->limit == b->limit && a->offset == b->offset &&
	       a->filename == b->filename && a->build_id == b->build_id &&
	       a->has_functions == b->has_functions && a->is_jit == b->is_jit;
}

static uint32_t hash_mapping(const struct mapping *m)
{
	uint64_t h = mix64(m->start ^ 0x6d617070ULL);

	h = mix64(h ^ m->limit);
	h = mix64(h ^ m->offset);
	h = mix64(h ^ ((uint64_t)m->filename << 32 | m->build_id));
	h = mix64(h ^ ((uint64_t)m->has_functions << 1 | m->is_jit));
	return (uint32_t)h;
}

uint32_t profile__mapping(struct profile *p, const struct pf_mapping *m)
{
	struct mapping key = { 0 };
	int64_t fn, bid;
	uint32_t hash, id, at;
	int err;

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
	key.start = m->start;
	key.limit = m->limit;
	key.offset = m->offset;
	key.filename = (uint32_t)fn;
	key.build_id = (uint32_t)bid;
	key.has_functions = m->has_functions != 0;
	key.is_jit = m->is_jit != 0;
	hash = hash_mapping(&key);
	id = htab_find(&p->map_h, p, hash, &key, map_eq, &at);
	if (id)
		return id;
	if (p->n_maps >= MAX_ID || VEC_RESERVE(p->maps, p->cap_maps, p->n_maps + 1)) {
		errno = p->n_maps >= MAX_ID ? ENOSPC : ENOMEM;
		return 0;
	}
	id = (uint32_t)p->n_maps + 1;
	err = htab_insert(&p->map_h, hash, id, at);
	if (err) {
		errno = -err;
		return 0;
	}
	p->maps[p->n_maps++] = key;
	return id;
}

static bool func_eq(const struct profile *p, const void *key, uint32_t id)
{
	const struct function *a = key, *b = &p->funcs[id - 1];

	return a->name == b->name && a->system_name == b->system_name && a->filename == b->filename;
}

uint32_t profile__function(struct profile *p, const char *name, const char *system_name,
			   const char *filename)
{
	struct function key;
	int64_t n, sn, fn;
	uint32_t hash, id, at;
	int err;

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
	hash = (uint32_t)mix64(((uint64_t)key.name << 32 | key.system_name) ^
			       mix64(key.filename ^ 0x66756e63ULL));
	id = htab_find(&p->func_h, p, hash, &key, func_eq, &at);
	if (id)
		return id;
	if (p->n_funcs >= MAX_ID || VEC_RESERVE(p->funcs, p->cap_funcs, p->n_funcs + 1)) {
		errno = p->n_funcs >= MAX_ID ? ENOSPC : ENOMEM;
		return 0;
	}
	id = (uint32_t)p->n_funcs + 1;
	err = htab_insert(&p->func_h, hash, id, at);
	if (err) {
		errno = -err;
		return 0;
	}
	p->funcs[p->n_funcs++] = key;
	return id;
}

static bool loc_eq(const struct profile *p, const void *key, uint32_t id)
{
	const struct location *a = key, *b = &p->locs[id - 1];

	return a->address == b->address && a->mapping == b->mapping && a->function == b->function;
}

/* The name folded stacks and flame graphs show for a location without a function name. */
static int64_t address_name(struct profile *p, uint32_t mapping_id, uint64_t address)
{
	char buf[256];
	const struct mapping *m = mapping_id ? &p->maps[mapping_id - 1] : NULL;
	const char *file = m ? p->strs[m->filename].s : "";
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
	struct location key = { 0 };
	uint32_t hash, id, at;
	int64_t name;
	int err;

	if (!p || mapping_id > p->n_maps || function_id > p->n_funcs) {
		errno = EINVAL;
		return 0;
	}
	key.address = address;
	key.mapping = mapping_id;
	key.function = function_id;
	hash = (uint32_t)mix64(address ^ mix64((uint64_t)mapping_id << 32 | function_id));
	id = htab_find(&p->loc_h, p, hash, &key, loc_eq, &at);
	if (id)
		return id;
	if (p->n_locs >= MAX_ID || VEC_RESERVE(p->locs, p->cap_locs, p->n_locs + 1)) {
		errno = p->n_locs >= MAX_ID ? ENOSPC : ENOMEM;
		return 0;
	}
	name = function_id ? p->funcs[function_id - 1].name : 0;
	if (!name)
		name = address_name(p, mapping_id, address);
	if (name < 0) {
		errno = (int)-name;
		return 0;
	}
	key.name = (uint32_t)name;
	/* address_name may have grown the string table, never the location table: at is valid */
	id = (uint32_t)p->n_locs + 1;
	err = htab_insert(&p->loc_h, hash, id, at);
	if (err) {
		errno = -err;
		return 0;
	}
	p->locs[p->n_locs++] = key;
	return id;
}

/* ---- stacks, label sets, samples ----------------------------------------------------------- */

struct run_key {
	const uint32_t *v;
	uint32_t len;
};

static bool stack_eq(const struct profile *p, const void *key, uint32_t id)
{
	const struct run_key *k = key;
	const struct span *s = &p->stacks[id - 1];

	return s->len == k->len &&
	       (!k->len || memcmp(p->stack_pool + s->off, k->v, k->len * sizeof(*k->v)) == 0);
}

static int64_t intern_stack(struct profile *p, const uint32_t *locs, uint32_t n)
{
	struct run_key k = { locs, n };
	uint32_t hash = (uint32_t)hash_bytes(locs, n * sizeof(*locs), 0x737461636bULL);
	uint32_t id, at;
	int err;

	id = htab_find(&p->stack_h, p, hash, &k, stack_eq, &at);
	if (id)
		return id;
	if (p->n_stacks >= MAX_ID)
		return -ENOSPC;
	if (VEC_RESERVE(p->stacks, p->cap_stacks, p->n_stacks + 1) ||
	    VEC_RESERVE(p->stack_pool, p->cap_stack_pool, p->n_stack_pool + n))
		return -ENOMEM;
	id = (uint32_t)p->n_stacks + 1;
	err = htab_insert(&p->stack_h, hash, id, at);
	if (err)
		return err;
	if (n)
		memcpy(p->stack_pool + p->n_stack_pool, locs, n * sizeof(*locs));
	p->stacks[p->n_stacks].off = p->n_stack_pool;
	p->stacks[p->n_stacks].len = n;
	p->n_stacks++;
	p->n_stack_pool += n;
	return id;
}

static bool lset_eq(const struct profile *p, const void *key, uint32_t id)
{
	const struct run_key *k = key;
	const struct span *s = &p->lsets[id - 1];

	return s->len == k->len &&
	       (!k->len || memcmp(p->lset_ids + 2 * s->off, k->v, 2 * k->len * sizeof(*k->v)) == 0);
}

/* pairs: n sorted, distinct (key id, value id) pairs. */
static int64_t intern_lset(struct profile *p, const uint32_t *pairs, uint32_t n)
{
	struct run_key k = { pairs, n };
	uint32_t hash = (uint32_t)hash_bytes(pairs, 2 * n * sizeof(*pairs), 0x6c6162656cULL);
	uint32_t id, at, i;
	int err;

	id = htab_find(&p->lset_h, p, hash, &k, lset_eq, &at);
	if (id)
		return id;
	if (p->n_lsets >= MAX_ID)
		return -ENOSPC;
	if (VEC_RESERVE(p->lsets, p->cap_lsets, p->n_lsets + 1) ||
	    VEC_RESERVE(p->lset_ids, p->cap_lset_ids, p->n_lset_ids + 2 * n) ||
	    VEC_RESERVE(p->lset_labels, p->cap_lset_labels, p->n_lset_labels + n))
		return -ENOMEM;
	id = (uint32_t)p->n_lsets + 1;
	err = htab_insert(&p->lset_h, hash, id, at);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		p->lset_ids[p->n_lset_ids + 2 * i] = pairs[2 * i];
		p->lset_ids[p->n_lset_ids + 2 * i + 1] = pairs[2 * i + 1];
		p->lset_labels[p->n_lset_labels + i].key = p->strs[pairs[2 * i]].s;
		p->lset_labels[p->n_lset_labels + i].value = p->strs[pairs[2 * i + 1]].s;
	}
	/* lset_ids holds pairs, so a set's offset counts pairs: the same index works for both */
	p->lsets[p->n_lsets].off = p->n_lset_labels;
	p->lsets[p->n_lsets].len = n;
	p->n_lsets++;
	p->n_lset_ids += 2 * n;
	p->n_lset_labels += n;
	return id;
}

/* Orders label pairs by key id, then value id: any input order gives the same set. */
static int pair_cmp(const uint32_t *a, const uint32_t *b)
{
	if (a[0] != b[0])
		return a[0] < b[0] ? -1 : 1;
	if (a[1] != b[1])
		return a[1] < b[1] ? -1 : 1;
	return 0;
}

static int pair_qsort_cmp(const void *a, const void *b)
{
	return pair_cmp(a, b);
}

static uint32_t sort_pairs(uint32_t *pairs, uint32_t n)
{
	uint32_t i, j, out;

	if (n > 16) {
		qsort(pairs, n, 2 * sizeof(*pairs), pair_qsort_cmp);
	} else {
		for (i = 1; i < n; i++) {	/* insertion sort: label sets are small */
			uint32_t k0 = pairs[2 * i], k1 = pairs[2 * i + 1];

			for (j = i; j > 0 && pair_cmp(&pairs[2 * (j - 1)], (uint32_t[]){ k0, k1 }) > 0; j--) {
				pairs[2 * j] = pairs[2 * (j - 1)];
				pairs[2 * j + 1] = pairs[2 * (j - 1) + 1];
			}
			pairs[2 * j] = k0;
			pairs[2 * j + 1] = k1;
		}
	}
	for (i = 0, out = 0; i < n; i++) {	/* drop exact duplicates: a label set is a set */
		if (out && pair_cmp(&pairs[2 * (out - 1)], &pairs[2 * i]) == 0)
			continue;
		pairs[2 * out] = pairs[2 * i];
		pairs[2 * out + 1] = pairs[2 * i + 1];
		out++;
	}
	return out;
}

static bool sample_eq(const struct profile *p, const void *key, uint32_t id)
{
	const struct sample *a = key, *b = &p->samples[id - 1];

	return a->stack == b->stack && a->lset == b->lset;
}

int profile__add(struct profile *p, const uint32_t *locs, size_t n_locs,
		 const struct pf_label *labels, size_t n_labels, uint64_t count)
{
	struct sample key = { 0 };
	uint32_t hash, id, at, n_pairs;
	int64_t sid, lid;
	size_t i;
	int err;

	if (!p || (n_locs && !locs) || (n_labels && !labels))
		return -EINVAL;
	if (n_locs > UINT32_MAX / 4 || n_labels > UINT32_MAX / 4)
		return -E2BIG;
	for (i = 0; i < n_locs; i++) {
		if (locs[i] == 0 || locs[i] > p->n_locs)
			return -EINVAL;
	}
	for (i = 0; i < n_labels; i++) {
		if (!labels[i].key || !*labels[i].key || !labels[i].value)
			return -EINVAL;
	}
	if (count == 0)
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

	sid = intern_stack(p, locs, (uint32_t)n_locs);
	if (sid < 0)
		return (int)sid;
	lid = intern_lset(p, p->scratch, n_pairs);
	if (lid < 0)
		return (int)lid;

	key.stack = (uint32_t)sid;
	key.lset = (uint32_t)lid;
	hash = (uint32_t)mix64((uint64_t)key.stack << 32 | key.lset);
	id = htab_find(&p->sample_h, p, hash, &key, sample_eq, &at);
	if (!id) {
		if (p->n_samples >= MAX_ID)
			return -ENOSPC;
		if (VEC_RESERVE(p->samples, p->cap_samples, p->n_samples + 1))
			return -ENOMEM;
		id = (uint32_t)p->n_samples + 1;
		err = htab_insert(&p->sample_h, hash, id, at);
		if (err)
			return err;
		p->samples[p->n_samples++] = key;
	}
	p->samples[id - 1].count += count;
	p->total += count;
	return 0;
}

/* ---- read access --------------------------------------------------------------------------- */

size_t profile__sample_count(const struct profile *p)
{
	return p ? p->n_samples : 0;
}

uint64_t profile__total(const struct profile *p)
{
	return p ? p->total : 0;
}

int profile__sample(const struct profile *p, size_t i, struct pf_sample_view *out)
{
	const struct sample *s;
	const struct span *st, *ls;

	if (!p || !out)
		return -EINVAL;
	if (i >= p->n_samples)
		return -ENOENT;
	s = &p->samples[i];
	st = &p->stacks[s->stack - 1];
	ls = &p->lsets[s->lset - 1];
	out->locs = p->stack_pool + st->off;
	out->n_locs = st->len;
	out->labels = p->lset_labels + ls->off;
	out->n_labels = ls->len;
	out->count = s->count;
	out->stack_id = s->stack;
	return 0;
}

const char *profile__location_name(const struct profile *p, uint32_t loc_id)
{
	if (!p || loc_id == 0 || loc_id > p->n_locs)
		return NULL;
	return p->strs[p->locs[loc_id - 1].name].s;
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

const struct profile_opts *profile__opts(const struct profile *p)
{
	return p ? &p->opts : NULL;
}

size_t profile__mapping_count(const struct profile *p)
{
	return p ? p->n_maps : 0;
}

int profile__mapping_get(const struct profile *p, uint32_t id, struct pf_mapping *out)
{
	const struct mapping *m;

	if (!p || !out)
		return -EINVAL;
	if (id == 0 || id > p->n_maps)
		return -ENOENT;
	m = &p->maps[id - 1];
	out->start = m->start;
	out->limit = m->limit;
	out->offset = m->offset;
	out->filename = p->strs[m->filename].s;
	out->build_id = m->build_id ? p->strs[m->build_id].s : NULL;
	out->has_functions = m->has_functions;
	out->is_jit = m->is_jit;
	return 0;
}

size_t profile__function_count(const struct profile *p)
{
	return p ? p->n_funcs : 0;
}

int profile__function_get(const struct profile *p, uint32_t id, struct pf_function_view *out)
{
	const struct function *f;

	if (!p || !out)
		return -EINVAL;
	if (id == 0 || id > p->n_funcs)
		return -ENOENT;
	f = &p->funcs[id - 1];
	out->name = p->strs[f->name].s;
	out->system_name = p->strs[f->system_name].s;
	out->filename = p->strs[f->filename].s;
	return 0;
}

size_t profile__location_count(const struct profile *p)
{
	return p ? p->n_locs : 0;
}

int profile__location_get(const struct profile *p, uint32_t id, struct pf_location_view *out)
{
	const struct location *l;

	if (!p || !out)
		return -EINVAL;
	if (id == 0 || id > p->n_locs)
		return -ENOENT;
	l = &p->locs[id - 1];
	out->mapping_id = l->mapping;
	out->address = l->address;
	out->function_id = l->function;
	return 0;
}

/* ---- top functions ------------------------------------------------------------------------- */

static bool lset_has(const struct profile *p, uint32_t lset, uint32_t key, uint32_t value)
{
	const struct span *s = &p->lsets[lset - 1];
	const uint32_t *ids = p->lset_ids + 2 * s->off;
	uint32_t i;

	for (i = 0; i < s->len; i++) {
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
	return strcmp(c->p->strs[x].s, c->p->strs[y].s) < 0 ? -1 : 1;	/* distinct ids, distinct strings */
}

/*
 * Functions are grouped by their display name (string id), so the same method seen through
 * two mappings is one row. "total" counts a name once per sample even under recursion.
 */
size_t profile__top(const struct profile *p, const char *key, const char *value,
		    struct pf_top *out, size_t n)
{
	uint64_t *self = NULL, *total = NULL;
	uint32_t *seen = NULL, *names = NULL;
	uint32_t key_id = 0, value_id = UINT32_MAX;
	size_t i, j, n_names = 0, filled = 0;
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
	self = calloc(p->n_strs, sizeof(*self));
	total = calloc(p->n_strs, sizeof(*total));
	seen = calloc(p->n_strs, sizeof(*seen));	/* sample index + 1 that last counted it */
	names = malloc(p->n_strs * sizeof(*names));
	if (!self || !total || !seen || !names) {
		errno = ENOMEM;
		goto free_tables;
	}

	for (i = 0; i < p->n_samples; i++) {
		const struct sample *s = &p->samples[i];
		const struct span *st = &p->stacks[s->stack - 1];
		const uint32_t *locs = p->stack_pool + st->off;

		if (key && !lset_has(p, s->lset, key_id, value_id))
			continue;
		for (j = 0; j < st->len; j++) {
			uint32_t name = p->locs[locs[j] - 1].name;

			if (j == 0)
				self[name] += s->count;
			if (seen[name] == i + 1)
				continue;
			seen[name] = (uint32_t)(i + 1);
			if (total[name] == 0)
				names[n_names++] = name;
			total[name] += s->count;
		}
	}

	ctx.p = p;
	ctx.self = self;
	ctx.total = total;
	qsort_r(names, n_names, sizeof(*names), top_cmp, &ctx);
	for (filled = 0; filled < n && filled < n_names; filled++) {
		out[filled].name = p->strs[names[filled]].s;
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
