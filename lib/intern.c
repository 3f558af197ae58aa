/* intern.c: open-addressing hash table over an append-only arena of byte strings. Keys are
 * often what a profiled process chose (stacks, label values, names): they are hashed under the
 * run's secret key (siphash.h), so that no process can make them collide. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "intern.h"
#include "prefault.h"
#include "siphash.h"

/* A table starts small and doubles: every process has a few (its frames, its mappings), and a
 * node has hundreds of processes, most with few frames. */
#define CHUNK_MIN (1u << 10)
#define SLOTS_MIN 64
#define ENTS_MIN  32
#define CHUNK_MAX (1u << 20)

struct entry {
	uint32_t off_chunk;	/* chunk index */
	uint32_t off;		/* offset in chunk */
	uint32_t len;
	uint32_t hash32;
};

struct intern {
	struct entry *ents;	/* by id */
	uint32_t n, cap_ents;
	uint64_t *slots;	/* hash32 << 32 | id + 1, 0 = empty: a probe compares the hash
				 * without touching ents[] */
	uint32_t nslots;	/* power of two */
	char **chunks;
	uint32_t nchunks, chunk_used, chunk_size;
	uint64_t bytes;		/* arena + tables */
};

struct intern *intern__new(void)
{
	struct intern *in = calloc(1, sizeof(*in));

	if (!in)
		return NULL;
	in->nslots = SLOTS_MIN;
	in->slots = calloc(in->nslots, sizeof(*in->slots));
	if (!in->slots) {
		free(in);
		errno = ENOMEM;
		return NULL;
	}
	return in;
}

void intern__free(struct intern *in)
{
	if (!in)
		return;
	for (uint32_t i = 0; i < in->nchunks; i++)
		free(in->chunks[i]);
	free(in->chunks);
	free(in->ents);
	free(in->slots);
	free(in);
}

static const char *entry_bytes(const struct intern *in, const struct entry *e)
{
	return in->chunks[e->off_chunk] + e->off;
}

/* Id of key, or -ENOENT with *slot the empty slot where it would go; *probes (when non-NULL)
 * the slots visited. */
static int64_t lookup(const struct intern *in, const void *key, size_t len, uint64_t h,
		      uint32_t *slot, uint32_t *probes)
{
	uint32_t mask = in->nslots - 1, i = (uint32_t)h & mask, h32 = (uint32_t)(h >> 32);

	for (uint32_t n = 1;; i = (i + 1) & mask, n++) {
		if (probes)
			*probes = n;
		uint64_t v = in->slots[i];
		const struct entry *e;

		if (!v) {
			*slot = i;
			return -ENOENT;
		}
		if ((uint32_t)(v >> 32) != h32)
			continue;
		e = &in->ents[(uint32_t)v - 1];
		if (e->len == len && (!len || memcmp(entry_bytes(in, e), key, len) == 0))
			return (uint32_t)v - 1;
	}
}

static int grow_slots(struct intern *in)
{
	uint32_t n = in->nslots * 2, mask = n - 1;
	uint64_t *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	prefault__write(slots, n * sizeof(*slots));
	for (uint32_t id = 0; id < in->n; id++) {
		const struct entry *e = &in->ents[id];
		uint64_t h = siphash__table(entry_bytes(in, e), e->len);
		uint32_t i = (uint32_t)h & mask;

		while (slots[i])
			i = (i + 1) & mask;
		slots[i] = (uint64_t)e->hash32 << 32 | (id + 1);
	}
	free(in->slots);
	in->slots = slots;
	in->nslots = n;
	return 0;
}

/* Copy bytes and a NUL into the arena; a big key gets a chunk of its own. */
static int store(struct intern *in, const void *key, size_t len, struct entry *e)
{
	if (!in->nchunks || in->chunk_used + len + 1 > in->chunk_size) {
		size_t size = in->chunk_size ? in->chunk_size * 2 : CHUNK_MIN;
		char **chunks = realloc(in->chunks, (in->nchunks + 1) * sizeof(*chunks));

		if (size > CHUNK_MAX)
			size = CHUNK_MAX;
		if (size < len + 1)
			size = len + 1;
		if (!chunks)
			return -ENOMEM;
		in->chunks = chunks;
		in->chunks[in->nchunks] = malloc(size);
		if (!in->chunks[in->nchunks])
			return -ENOMEM;
		prefault__write(in->chunks[in->nchunks], size);
		in->nchunks++;
		in->chunk_used = 0;
		in->chunk_size = size;
		in->bytes += size;
	}
	e->off_chunk = in->nchunks - 1;
	e->off = in->chunk_used;
	e->len = len;
	if (len)	/* key may be NULL when empty */
		memcpy(in->chunks[e->off_chunk] + e->off, key, len);
	in->chunks[e->off_chunk][e->off + len] = 0;
	/* Keys stay 8-byte aligned: stacks are read back as u32 arrays. */
	in->chunk_used += (len + 1 + 7) & ~(size_t)7;
	if (in->chunk_used > in->chunk_size)
		in->chunk_used = in->chunk_size;
	return 0;
}

int64_t intern__id(struct intern *in, const void *key, size_t len, int *added)
{
	uint64_t h = siphash__table(key, len);
	uint32_t slot;
	int64_t id;
	struct entry e;

	if (added)
		*added = 0;
	if (len >= UINT32_MAX)
		return -EINVAL;
	id = lookup(in, key, len, h, &slot, NULL);
	if (id >= 0)
		return id;
	if ((uint64_t)(in->n + 1) * 4 > (uint64_t)in->nslots * 3) {
		if (grow_slots(in))
			return -ENOMEM;
		lookup(in, key, len, h, &slot, NULL);
	}
	if (in->n == in->cap_ents) {
		uint32_t cap = in->cap_ents ? in->cap_ents * 2 : ENTS_MIN;
		struct entry *ents = realloc(in->ents, cap * sizeof(*ents));

		if (!ents)
			return -ENOMEM;
		prefault__write(ents + in->cap_ents, (cap - in->cap_ents) * sizeof(*ents));
		in->ents = ents;
		in->cap_ents = cap;
	}
	if (store(in, key, len, &e))
		return -ENOMEM;
	e.hash32 = (uint32_t)(h >> 32);
	in->ents[in->n] = e;
	in->slots[slot] = (uint64_t)e.hash32 << 32 | (in->n + 1);
	if (added)
		*added = 1;
	return in->n++;
}

int64_t intern__find(const struct intern *in, const void *key, size_t len)
{
	uint32_t slot;

	return lookup(in, key, len, siphash__table(key, len), &slot, NULL);
}

const void *intern__key(const struct intern *in, uint32_t id, size_t *len)
{
	if (id >= in->n)
		return NULL;
	if (len)
		*len = in->ents[id].len;
	return entry_bytes(in, &in->ents[id]);
}

uint32_t intern__count(const struct intern *in)
{
	return in->n;
}

uint64_t intern__bytes(const struct intern *in)
{
	return in->bytes + (uint64_t)in->cap_ents * sizeof(struct entry) +
	       (uint64_t)in->nslots * sizeof(*in->slots);
}

uint32_t intern__probes(const struct intern *in, const void *key, size_t len)
{
	uint32_t slot, probes;

	lookup(in, key, len, siphash__table(key, len), &slot, &probes);
	return probes;
}
