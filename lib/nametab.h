/* nametab.h: strings shared by all their holders, each stored once and freed with its last
 * reference. The framework's method names are the same in every .NET process: a node with 50 of
 * them keeps one copy. Thread-safe. */
#ifndef SPANPROF_NAMETAB_H
#define SPANPROF_NAMETAB_H

#include <stddef.h>
#include <stdint.h>

struct nametab;

/* Constructor returns NULL and sets errno. */
struct nametab *nametab__new(void);
/* NULL-safe. Every reference must have been put back. */
void nametab__free(struct nametab *t);

/* A new reference to the one stored copy of s[0..len), NUL-terminated, stable until the
 * reference is put back. NULL when out of memory. */
const char *nametab__get(struct nametab *t, const char *s, size_t len);
/* Give back one reference from nametab__get (NULL is ignored). */
void nametab__put(struct nametab *t, const char *name);

struct nametab_stats {
	uint64_t names;		/* distinct strings held */
	uint64_t refs;		/* references held */
	uint64_t bytes;		/* memory: strings, their headers and the table */
};
void nametab__stats(struct nametab *t, struct nametab_stats *out);

/* A set of references one holder keeps (each distinct string once): the holder's side of a
 * shared nametab. Not thread-safe: one holder, one thread. */
struct nameset {
	struct nametab *tab;
	const char **slots;	/* open addressing by pointer; NULL = empty */
	uint32_t nslots;	/* power of two, or 0 */
	uint32_t n;
};

/* The stored copy of s[0..len) for this holder: a reference taken once per distinct string. */
const char *nameset__get(struct nameset *set, const char *s, size_t len);
/* Put back every reference and free the set's table (the set can be used again). */
void nameset__clear(struct nameset *set);
uint64_t nameset__bytes(const struct nameset *set);

#endif /* SPANPROF_NAMETAB_H */
