/* nametab.c: reference-counted shared strings (linear probing, backward-shift deletion). */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "nametab.h"
#include "siphash.h"

#define MIN_SLOTS 1024u

struct nt_entry {
	uint64_t hash;
	uint32_t refs;
	uint32_t len;
	char s[];		/* len bytes and a NUL */
};

struct nametab {
	pthread_mutex_t lock;
	struct nt_entry **slots;	/* NULL = empty */
	uint32_t nslots;	/* power of two */
	uint32_t n;
	uint64_t refs;
	uint64_t bytes;		/* entries only */
};

struct nametab *nametab__new(void)
{
	struct nametab *t = calloc(1, sizeof(*t));

	if (t && !(t->slots = calloc(MIN_SLOTS, sizeof(*t->slots)))) {
		free(t);
		t = NULL;
	}
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	t->nslots = MIN_SLOTS;
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

void nametab__free(struct nametab *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->nslots; i++)
		free(t->slots[i]);
	free(t->slots);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static int grow(struct nametab *t)
{
	uint32_t n = t->nslots * 2, mask = n - 1;
	struct nt_entry **s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->nslots; i++) {
		struct nt_entry *e = t->slots[i];
		uint32_t k;

		if (!e)
			continue;
		for (k = (uint32_t)e->hash & mask; s[k]; k = (k + 1) & mask)
			;
		s[k] = e;
	}
	free(t->slots);
	t->slots = s;
	t->nslots = n;
	return 0;
}

const char *nametab__get(struct nametab *t, const char *str, size_t len)
{
	uint64_t h = siphash__table(str, len)	/* names come from processes */;
	struct nt_entry *e = NULL;
	uint32_t k, mask;

	if (len > UINT32_MAX - 1)
		return NULL;
	pthread_mutex_lock(&t->lock);
	if ((t->n + 1) * 2 > t->nslots && grow(t))
		goto out;
	mask = t->nslots - 1;
	for (k = (uint32_t)h & mask; (e = t->slots[k]); k = (k + 1) & mask)
		if (e->hash == h && e->len == len && !memcmp(e->s, str, len))
			break;
	if (!e) {
		if (!(e = malloc(sizeof(*e) + len + 1)))
			goto out;
		e->hash = h;
		e->refs = 0;
		e->len = (uint32_t)len;
		memcpy(e->s, str, len);
		e->s[len] = 0;
		t->slots[k] = e;
		t->n++;
		t->bytes += sizeof(*e) + len + 1;
	}
	if (e->refs == UINT32_MAX) {
		e = NULL;	/* never wraps: the caller sees out of memory */
		goto out;
	}
	e->refs++;
	t->refs++;
out:
	pthread_mutex_unlock(&t->lock);
	return e ? e->s : NULL;
}

void nametab__put(struct nametab *t, const char *name)
{
	struct nt_entry *e;
	uint32_t k, mask, hole;

	if (!name)
		return;
	e = (struct nt_entry *)(name - offsetof(struct nt_entry, s));
	pthread_mutex_lock(&t->lock);
	t->refs--;
	if (--e->refs) {
		pthread_mutex_unlock(&t->lock);
		return;
	}
	mask = t->nslots - 1;
	for (k = (uint32_t)e->hash & mask; t->slots[k] != e; k = (k + 1) & mask)
		;
	/* Backward shift: move later entries of the probe run into the hole they may use. */
	hole = k;
	for (k = (hole + 1) & mask; t->slots[k]; k = (k + 1) & mask) {
		uint32_t home = (uint32_t)t->slots[k]->hash & mask;

		if (((k - home) & mask) >= ((k - hole) & mask)) {
			t->slots[hole] = t->slots[k];
			hole = k;
		}
	}
	t->slots[hole] = NULL;
	t->n--;
	t->bytes -= sizeof(*e) + e->len + 1;
	pthread_mutex_unlock(&t->lock);
	free(e);
}

void nametab__stats(struct nametab *t, struct nametab_stats *out)
{
	pthread_mutex_lock(&t->lock);
	out->names = t->n;
	out->refs = t->refs;
	out->bytes = t->bytes + (uint64_t)t->nslots * sizeof(*t->slots);
	pthread_mutex_unlock(&t->lock);
}

/* ---- one holder's references ---------------------------------------------------------------- */

static uint32_t ptr_hash(const char *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint32_t)x;
}

static int set_insert(struct nameset *set, const char *p)
{
	uint32_t mask, k;

	if ((set->n + 1) * 4 > set->nslots * 3) {	/* at most 3/4 full: one pointer per name */
		uint32_t n = set->nslots ? set->nslots * 2 : 64;
		const char **s = calloc(n, sizeof(*s));

		if (!s)
			return -ENOMEM;
		for (uint32_t i = 0; i < set->nslots; i++) {
			if (!set->slots[i])
				continue;
			for (k = ptr_hash(set->slots[i]) & (n - 1); s[k]; k = (k + 1) & (n - 1))
				;
			s[k] = set->slots[i];
		}
		free(set->slots);
		set->slots = s;
		set->nslots = n;
	}
	mask = set->nslots - 1;
	for (k = ptr_hash(p) & mask; set->slots[k]; k = (k + 1) & mask)
		if (set->slots[k] == p)
			return 1;	/* held already */
	set->slots[k] = p;
	set->n++;
	return 0;
}

const char *nameset__get(struct nameset *set, const char *s, size_t len)
{
	const char *p = nametab__get(set->tab, s, len);
	int rc;

	if (!p)
		return NULL;
	rc = set_insert(set, p);
	if (rc)
		nametab__put(set->tab, p);	/* held already (1), or no room to remember it */
	return rc < 0 ? NULL : p;
}

void nameset__clear(struct nameset *set)
{
	for (uint32_t i = 0; i < set->nslots; i++)
		nametab__put(set->tab, set->slots[i]);
	free(set->slots);
	set->slots = NULL;
	set->nslots = set->n = 0;
}

uint64_t nameset__bytes(const struct nameset *set)
{
	return (uint64_t)set->nslots * sizeof(*set->slots);
}
