/* folded.c: writes a profile as folded stacks ("root;caller;leaf count"), the input of flamegraph.pl and speedscope. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

struct rec {
	const char *root;	/* root label value, NULL if none */
	uint32_t stack_id;
	size_t sample;		/* a sample with this stack, to read its locations */
	uint64_t count;
	size_t text;		/* offset of the line in the text buffer */
};

struct buf {
	char *s;
	size_t n;
	size_t cap;
};

static int buf_put(struct buf *b, const char *s, size_t len)
{
	if (b->cap - b->n < len + 1) {
		size_t cap = b->cap ? b->cap : 4096;
		char *ns;

		while (cap - b->n < len + 1) {
			if (cap > SIZE_MAX / 2)
				return -ENOMEM;
			cap *= 2;
		}
		ns = realloc(b->s, cap);
		if (!ns)
			return -ENOMEM;
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, len);
	b->n += len;
	b->s[b->n] = '\0';
	return 0;
}

/* A frame may not contain the separator or end the line; an empty one would vanish. */
static int put_frame(struct buf *b, const char *name, int first)
{
	size_t start, i;
	int err;

	if (!first && (err = buf_put(b, ";", 1)))
		return err;
	if (!name || !*name)
		name = "[unknown]";
	start = b->n;
	err = buf_put(b, name, strlen(name));
	if (err)
		return err;
	for (i = start; i < b->n; i++) {
		if (b->s[i] == ';')
			b->s[i] = ':';
		else if (b->s[i] == '\n' || b->s[i] == '\r')
			b->s[i] = ' ';
	}
	return 0;
}

static int rec_stack_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	int c;

	if (x->root != y->root) {
		if (!x->root || !y->root)
			return x->root ? 1 : -1;
		c = strcmp(x->root, y->root);
		if (c)
			return c < 0 ? -1 : 1;
	}
	if (x->stack_id != y->stack_id)
		return x->stack_id < y->stack_id ? -1 : 1;
	return 0;
}

static int rec_text_cmp(const void *a, const void *b, void *arg)
{
	const char *text = arg;
	const struct rec *x = a, *y = b;
	int c = strcmp(text + x->text, text + y->text);

	return c < 0 ? -1 : c > 0;
}

/*
 * Samples differ by labels the folded format does not carry, so lines are merged twice: first
 * on (root value, stack id), cheaply, then on the text, since two stacks can print the same.
 * Output is sorted by line, so it is stable for diffs and fixtures.
 */
int folded__write(const struct profile *p, FILE *f, const char *root_key)
{
	size_t n = profile__sample_count(p), n_uniq = 0, i, j;
	struct buf text = { 0 };
	struct pf_sample_view v;
	struct rec *recs = NULL;
	int err = 0;

	if (!p || !f)
		return -EINVAL;
	recs = calloc(n + 1, sizeof(*recs));
	if (!recs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		err = profile__sample(p, i, &v);
		if (err)
			goto free_recs;
		recs[i].root = root_key ? profile__label(&v, root_key) : NULL;
		recs[i].stack_id = v.stack_id;
		recs[i].sample = i;
		recs[i].count = v.count;
	}
	qsort(recs, n, sizeof(*recs), rec_stack_cmp);
	for (i = 0; i < n; i++) {
		if (n_uniq && rec_stack_cmp(&recs[n_uniq - 1], &recs[i]) == 0)
			recs[n_uniq - 1].count += recs[i].count;
		else
			recs[n_uniq++] = recs[i];
	}

	for (i = 0; i < n_uniq; i++) {
		struct rec *r = &recs[i];
		int first = 1;

		err = profile__sample(p, r->sample, &v);
		if (err)
			goto free_text;
		r->text = text.n;
		if (r->root) {
			err = put_frame(&text, r->root, first);
			first = 0;
		}
		if (!err && v.n_locs == 0)
			err = put_frame(&text, NULL, first);
		for (j = v.n_locs; !err && j > 0; j--) {	/* locs are leaf first */
			err = put_frame(&text, profile__location_name(p, v.locs[j - 1]), first);
			first = 0;
		}
		if (err)
			goto free_text;
		text.n++;	/* keep the NUL buf_put left: lines are C strings in one buffer */
	}

	qsort_r(recs, n_uniq, sizeof(*recs), rec_text_cmp, text.s);
	for (i = 0; i < n_uniq; i++) {
		uint64_t count = recs[i].count;

		while (i + 1 < n_uniq && rec_text_cmp(&recs[i], &recs[i + 1], text.s) == 0)
			count += recs[++i].count;
		if (fprintf(f, "%s %llu\n", text.s + recs[i].text, (unsigned long long)count) < 0) {
			err = -(errno ? errno : EIO);
			goto free_text;
		}
	}
	if (fflush(f) != 0)
		err = -(errno ? errno : EIO);

free_text:
	free(text.s);
free_recs:
	free(recs);
	return err;
}
