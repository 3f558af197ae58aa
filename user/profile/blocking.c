/* blocking.c: off-CPU time by the frame that blocked (--by-span), .NET frames told apart by
 * perfmap__frame_kind. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "blocking.h"
#include "intern.h"
#include "perfmap.h"
#include "vec.h"

static int kernel_frame(const struct profile *p, uint32_t loc)
{
	struct pf_location_view lv;
	struct pf_mapping m;

	return !profile__location_get(p, loc, &lv) && lv.mapping_id &&
	       !profile__mapping_get(p, lv.mapping_id, &m) && m.filename &&
	       (!strncmp(m.filename, "[kernel", 7) || !strcmp(m.filename, "[vmlinux]"));
}

/* Leaf first: the first .NET frame is the wait, the first of the application's from there the
 * frame; the first user-space frame stands in when there is no .NET frame. */
static void blocked_at(const struct profile *p, const struct pf_sample_view *v, const char *k[2])
{
	const char *user = NULL, *wait = NULL;

	k[0] = k[1] = NULL;
	for (size_t i = 0; i < v->n_locs; i++) {
		const char *name = profile__location_name(p, v->locs[i]);
		enum perfmap_frame kind = perfmap__frame_kind(name);

		if (kind == PERFMAP_FRAME_OTHER) {
			if (!user && !wait && !kernel_frame(p, v->locs[i]))
				user = name;
			continue;
		}
		if (!wait)
			wait = name;
		if (kind == PERFMAP_FRAME_APP) {
			k[0] = name;
			k[1] = name == wait ? NULL : wait;
			return;
		}
	}
	k[0] = wait ? wait : user ? user : v->n_locs ? profile__location_name(p, v->locs[0]) :
								 "[no stack]";
	if (!k[0])
		k[0] = "[unknown]";
}

static int by_ns_desc(const void *a, const void *b)
{
	const struct pf_blocking *x = a, *y = b;
	int c;

	if (x->off_ns != y->off_ns)
		return x->off_ns < y->off_ns ? 1 : -1;
	c = strcmp(x->frame, y->frame);
	if (c)
		return c < 0 ? -1 : 1;
	c = strcmp(x->via ? x->via : "", y->via ? y->via : "");
	return c < 0 ? -1 : c > 0;
}

size_t blocking__top(const struct profile *p, const char *key, const char *value,
		     struct pf_blocking *out, size_t n)
{
	struct intern *pairs = intern__new();
	struct pf_blocking *all = NULL;
	size_t cap = 0, filled = 0;
	uint32_t count;

	if (!pairs) {
		errno = ENOMEM;
		return 0;
	}
	for (size_t i = 0; p && out && n && i < profile__sample_count(p); i++) {
		struct pf_sample_view v;
		const char *k[2], *lv;
		int64_t id;
		int added;

		if (profile__sample(p, i, &v) || !v.off_ns)
			continue;
		if (key && (!(lv = profile__label(&v, key)) || (value && strcmp(lv, value))))
			continue;
		blocked_at(p, &v, k);
		id = intern__id(pairs, k, sizeof(k), &added);	/* the names are interned by p */
		if (id < 0 || VEC_RESERVE(all, cap, (size_t)id + 1)) {
			errno = ENOMEM;
			goto free_all;
		}
		if (added)
			all[id] = (struct pf_blocking){ k[0], k[1], 0 };
		all[id].off_ns += v.off_ns;
	}
	count = intern__count(pairs);
	if (count) {
		qsort(all, count, sizeof(*all), by_ns_desc);
		filled = count < n ? count : n;
		memcpy(out, all, filled * sizeof(*out));
	}
free_all:
	free(all);
	intern__free(pairs);
	return filled;
}
