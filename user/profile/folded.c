/* folded.c: writes a profile as folded stacks ("root;caller;leaf count"), the input of flamegraph.pl and speedscope. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

/*
 * Samples differ by labels the folded format does not carry, so lines must be merged. Sorting
 * the samples frame by frame (names compared as precomputed ranks) puts equal lines next to
 * each other, and the output is sorted, stable for diffs and fixtures, without holding any text.
 */
struct rec {
	const uint32_t *locs;	/* leaf first, owned by the profile */
	uint32_t n_locs;
	uint32_t root_rank;
	const char *root;	/* root label value, NULL if none */
	uint64_t count;
};

struct named {
	const char *s;
	uint32_t *rank_out;
};

struct sorter {
	const uint32_t *loc_rank;	/* by location id */
	const char **loc_name;
};

static int named_cmp(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	int c = x->s == y->s ? 0 : strcmp(x->s, y->s);

	return c < 0 ? -1 : c > 0;
}

/* Rank of the i-th frame, root first: the root label, then the locations. */
static uint32_t frame_rank(const struct sorter *st, const struct rec *r, uint32_t i)
{
	if (r->root) {
		if (i == 0)
			return r->root_rank;
		i--;
	}
	return st->loc_rank[r->locs[r->n_locs - 1 - i]];
}

static int rec_cmp(const void *a, const void *b, void *arg)
{
	const struct rec *x = a, *y = b;
	uint32_t nx = x->n_locs + (x->root ? 1 : 0), ny = y->n_locs + (y->root ? 1 : 0), i;

	for (i = 0; i < nx && i < ny; i++) {
		uint32_t rx = frame_rank(arg, x, i), ry = frame_rank(arg, y, i);

		if (rx != ry)
			return rx < ry ? -1 : 1;
	}
	return nx < ny ? -1 : nx > ny;
}

/* A frame may not contain the separator or end the line. */
static void put_frame(FILE *f, const char *name, int first)
{
	size_t run;

	if (!first)
		fputc(';', f);
	for (;;) {
		run = strcspn(name, ";\n\r");
		fwrite(name, 1, run, f);
		name += run;
		if (!*name)
			break;
		fputc(*name == ';' ? ':' : ' ', f);
		name++;
	}
}

static void put_line(FILE *f, const struct sorter *st, const struct rec *r, uint64_t count)
{
	uint32_t j;
	int first = 1;

	if (r->root) {
		put_frame(f, r->root, first);
		first = 0;
	}
	if (!r->root && r->n_locs == 0)
		put_frame(f, "[unknown]", first);	/* an empty line would not parse */
	for (j = r->n_locs; j > 0; j--) {
		put_frame(f, st->loc_name[r->locs[j - 1]], first);
		first = 0;
	}
	fprintf(f, " %llu\n", (unsigned long long)count);
}

int folded__write(const struct profile *p, FILE *f, const char *root_key)
{
	size_t n_locs, n, i, k = 0;
	struct pf_sample_view v;
	struct named *names = NULL;
	struct rec *recs = NULL;
	uint32_t *loc_rank = NULL, rank = 0;
	const char **loc_name = NULL;
	struct sorter st;
	int err = 0;

	if (!p || !f)
		return -EINVAL;
	n_locs = profile__location_count(p);
	n = profile__sample_count(p);
	recs = calloc(n + 1, sizeof(*recs));
	loc_rank = calloc(n_locs + 1, sizeof(*loc_rank));
	loc_name = calloc(n_locs + 1, sizeof(*loc_name));
	names = calloc(n_locs + n + 1, sizeof(*names));
	if (!recs || !loc_rank || !loc_name || !names) {
		err = -ENOMEM;
		goto free_tables;
	}

	/* one rank space for location names and root values: equal strings, equal ranks */
	for (i = 1; i <= n_locs; i++) {
		const char *name = profile__location_name(p, (uint32_t)i);

		loc_name[i] = name && *name ? name : "[unknown]";
		names[k].s = loc_name[i];
		names[k++].rank_out = &loc_rank[i];
	}
	for (i = 0; i < n; i++) {
		err = profile__sample(p, i, &v);
		if (err)
			goto free_tables;
		recs[i].locs = v.locs;
		recs[i].n_locs = (uint32_t)v.n_locs;
		recs[i].count = profile__shown_value(p, &v);
		recs[i].root = root_key ? profile__label(&v, root_key) : NULL;
		if (recs[i].root) {
			names[k].s = recs[i].root;
			names[k++].rank_out = &recs[i].root_rank;
		}
	}
	qsort(names, k, sizeof(*names), named_cmp);
	for (i = 0; i < k; i++) {
		if (i && named_cmp(&names[i - 1], &names[i]) != 0)
			rank++;
		*names[i].rank_out = rank;
	}
	st.loc_rank = loc_rank;
	st.loc_name = loc_name;
	qsort_r(recs, n, sizeof(*recs), rec_cmp, &st);

	for (i = 0; i < n; i++) {
		uint64_t count = recs[i].count;

		while (i + 1 < n && rec_cmp(&recs[i], &recs[i + 1], &st) == 0)
			count += recs[++i].count;
		if (count)	/* 0: only the other value (CPU or off-CPU) */
			put_line(f, &st, &recs[i], count);
	}
	if (ferror(f) || fflush(f) != 0)
		err = -(errno ? errno : EIO);

free_tables:
	free(names);
	free(loc_name);
	free(loc_rank);
	free(recs);
	return err;
}
