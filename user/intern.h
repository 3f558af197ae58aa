/* intern.h: byte strings interned to dense ids (0, 1, 2, ...): stacks, label sets, frame keys. */
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
/* The bytes of id (stable for the table's life); *len set when non-NULL. */
const void *intern__key(const struct intern *in, uint32_t id, size_t *len);
uint32_t intern__count(const struct intern *in);
uint64_t intern__hash(const void *key, size_t len);

#endif /* SPANPROF_INTERN_H */
