/* intern.h: byte strings interned to dense ids (0, 1, 2, ...): names, stacks, label sets, keys. */
#ifndef SPANPROF_INTERN_H
#define SPANPROF_INTERN_H

#include <stddef.h>
#include <stdint.h>

struct intern;

/* Constructor returns NULL and sets errno. */
struct intern *intern__new(void);
void intern__free(struct intern *in);	/* NULL-safe */

/* Id of the bytes key[0..len), added if new (*added set when non-NULL). -ENOMEM on failure. */
int64_t intern__id(struct intern *in, const void *key, size_t len, int *added);
/* Id of key if present, else -ENOENT. */
int64_t intern__find(const struct intern *in, const void *key, size_t len);
/* The bytes of id, followed by a NUL so a string key is a C string; stable for the table's life.
 * *len (without the NUL) set when non-NULL. NULL for an unknown id. */
const void *intern__key(const struct intern *in, uint32_t id, size_t *len);
uint32_t intern__count(const struct intern *in);
uint64_t intern__bytes(const struct intern *in);	/* memory held, for reports and caps */
/* Slots a lookup of key visits (present or not): what keys forged to collide would cost, for
 * tests. */
uint32_t intern__probes(const struct intern *in, const void *key, size_t len);

#endif /* SPANPROF_INTERN_H */
