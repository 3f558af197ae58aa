/* idmap.h: 64-bit keys mapped to dense ids (0, 1, 2, ...): addresses, pairs of ids. */
#ifndef SPANPROF_IDMAP_H
#define SPANPROF_IDMAP_H

#include <stdint.h>

/*
 * What intern does for byte strings, for keys that are one 64-bit word. The key is kept in its
 * slot, so a lookup reads one slot (one cache line, where the table is cold), where intern reads
 * a slot, an entry and the key's bytes: the per-sample tables (a window's (stack, label set)
 * entries, a process's frame addresses) are probed at every sample.
 */
struct idmap;

/* Constructor returns NULL and sets errno. */
struct idmap *idmap__new(void);
void idmap__free(struct idmap *m);	/* NULL-safe */

/* Id of key, added if new (*added set when non-NULL). -ENOMEM on failure. */
int64_t idmap__id(struct idmap *m, uint64_t key, int *added);
/* Id of key if present, else -ENOENT. */
int64_t idmap__find(const struct idmap *m, uint64_t key);
/* The key of id, which must be below idmap__count. */
uint64_t idmap__key(const struct idmap *m, uint32_t id);
uint32_t idmap__count(const struct idmap *m);
uint64_t idmap__bytes(const struct idmap *m);	/* memory held, for reports and caps */
/* Slots a lookup of key visits (present or not): what keys forged to collide would cost, for
 * tests. */
uint32_t idmap__probes(const struct idmap *m, uint64_t key);

#endif /* SPANPROF_IDMAP_H */
