/* idmap.c: open addressing over slots that hold the key and its id, and the keys by id. */
#include <errno.h>
#include <stdlib.h>

#include "idmap.h"
#include "prefault.h"
#include "siphash.h"

/* Small to start: every process has one (its frame addresses), most with few frames. */
#define SLOTS_MIN 32
#define KEYS_MIN  16

struct slot {
	uint64_t key;
	uint32_t id1;		/* id + 1, 0 = empty */
};

struct idmap {
	struct slot *slots;
	uint32_t nslots;	/* power of two, at most 2/3 full */
	uint32_t n, cap;
	uint64_t *keys;		/* by id */
};

static inline uint32_t home(uint64_t key, uint32_t nslots)
{
	/* Keyed: a process chooses its frame addresses (a forged stack can hold any), and any
	 * unkeyed mix of them it could invert into addresses that share a slot. */
	return (uint32_t)siphash__table_u64(key) & (nslots - 1);
}

struct idmap *idmap__new(void)
{
	struct idmap *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->nslots = SLOTS_MIN;
	if (!(m->slots = calloc(m->nslots, sizeof(*m->slots)))) {
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	return m;
}

void idmap__free(struct idmap *m)
{
	if (!m)
		return;
	free(m->slots);
	free(m->keys);
	free(m);
}

/* The slot of key, or the empty slot where it would go. */
static struct slot *probe(const struct idmap *m, uint64_t key)
{
	uint32_t mask = m->nslots - 1;

	for (uint32_t i = home(key, m->nslots);; i = (i + 1) & mask) {
		struct slot *s = &m->slots[i];

		if (!s->id1 || s->key == key)
			return s;
	}
}

static int grow_slots(struct idmap *m)
{
	struct idmap bigger = { .nslots = m->nslots * 2 };

	if (!(bigger.slots = calloc(bigger.nslots, sizeof(*bigger.slots))))
		return -ENOMEM;
	prefault__write(bigger.slots, (size_t)bigger.nslots * sizeof(*bigger.slots));
	for (uint32_t id = 0; id < m->n; id++)
		*probe(&bigger, m->keys[id]) = (struct slot){ m->keys[id], id + 1 };
	free(m->slots);
	m->slots = bigger.slots;
	m->nslots = bigger.nslots;
	return 0;
}

int64_t idmap__id(struct idmap *m, uint64_t key, int *added)
{
	struct slot *s = probe(m, key);

	if (added)
		*added = 0;
	if (s->id1)
		return s->id1 - 1;
	if (m->n == UINT32_MAX - 1)
		return -ENOMEM;
	if (m->n == m->cap) {
		uint32_t cap = m->cap ? m->cap * 2 : KEYS_MIN;
		uint64_t *keys = realloc(m->keys, (size_t)cap * sizeof(*keys));

		if (!keys)
			return -ENOMEM;
		m->keys = keys;
		m->cap = cap;
	}
	if ((uint64_t)(m->n + 1) * 3 > (uint64_t)m->nslots * 2) {
		if (grow_slots(m))
			return -ENOMEM;
		s = probe(m, key);
	}
	m->keys[m->n] = key;
	*s = (struct slot){ key, m->n + 1 };
	if (added)
		*added = 1;
	return m->n++;
}

int64_t idmap__find(const struct idmap *m, uint64_t key)
{
	const struct slot *s = probe(m, key);

	return s->id1 ? (int64_t)s->id1 - 1 : -ENOENT;
}

uint64_t idmap__key(const struct idmap *m, uint32_t id)
{
	return m->keys[id];
}

uint32_t idmap__count(const struct idmap *m)
{
	return m->n;
}

uint64_t idmap__bytes(const struct idmap *m)
{
	return sizeof(*m) + (uint64_t)m->nslots * sizeof(*m->slots) +
	       (uint64_t)m->cap * sizeof(*m->keys);
}

uint32_t idmap__probes(const struct idmap *m, uint64_t key)
{
	uint32_t mask = m->nslots - 1, n = 1;

	for (uint32_t i = home(key, m->nslots); m->slots[i].id1 && m->slots[i].key != key;
	     i = (i + 1) & mask)
		n++;
	return n;
}
