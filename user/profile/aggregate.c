/* aggregate.c: samples -> counts per window; a closed window becomes one profile per target. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "idmap.h"
#include "intern.h"
#include "vec.h"

#define MAX_FRAMES  512
#define MAX_LABELS  64
#define LSET_MAX    8192	/* bytes of one "k\0v\0..." label set; longer sets are cut */

/*
 * A window counts samples by entry: a (stack, label set) pair. Stacks and label sets are interned
 * apart, so a sample whose labels are new (a span per request: most samples of a traced service)
 * adds its label set and an 8-byte pair, not another copy of its frames.
 */
struct agg_window {
	uint64_t start, end;
	struct intern *lsets;	/* "k\0v\0k\0v\0" -> id */
	struct intern *stacks;	/* [proc, frame...] (u32) -> id */
	struct idmap *entries;	/* entry_key(stack, lset) -> id */
	uint64_t *counts;	/* by entry id */
	size_t cap;
	uint64_t *off_ns;	/* by entry id: off-CPU nanoseconds */
	size_t cap_off;
	uint64_t samples, late, truncated, ids_dropped;
	uint64_t off_blocks, off_total_ns;
	uint32_t max_stacks;
};

struct aggregator {
	struct agg_window *cur, *next;
	uint64_t interval;
	uint32_t max_stacks;
};

static struct agg_window *window_new(uint64_t start, uint64_t end)
{
	struct agg_window *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->start = start;
	w->end = end;
	w->lsets = intern__new();
	w->stacks = intern__new();
	w->entries = idmap__new();
	if (!w->lsets || !w->stacks || !w->entries) {
		aggregate__window_free(w);
		errno = ENOMEM;
		return NULL;
	}
	return w;
}

void aggregate__window_free(struct agg_window *w)
{
	if (!w)
		return;
	intern__free(w->lsets);
	intern__free(w->stacks);
	idmap__free(w->entries);
	free(w->counts);
	free(w->off_ns);
	free(w);
}

static uint64_t end_after(uint64_t end, uint64_t interval)
{
	return end > UINT64_MAX - interval ? UINT64_MAX : end + interval;
}

struct aggregator *aggregate__new(uint64_t first_end_ns, uint64_t interval_ns)
{
	struct aggregator *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->interval = interval_ns ? interval_ns : UINT64_MAX;
	a->cur = window_new(0, first_end_ns);
	a->next = window_new(first_end_ns, end_after(first_end_ns, a->interval));
	if (!a->cur || !a->next) {
		aggregate__free(a);
		errno = ENOMEM;
		return NULL;
	}
	return a;
}

void aggregate__set_max_stacks(struct aggregator *a, uint32_t max)
{
	a->max_stacks = a->cur->max_stacks = a->next->max_stacks = max;
}

void aggregate__free(struct aggregator *a)
{
	if (!a)
		return;
	aggregate__window_free(a->cur);
	aggregate__window_free(a->next);
	free(a);
}

/*
 * Past max_stacks distinct entries a window keeps a sample's stack and drops its span and trace
 * ids (the labels that are new for every request), in up to a quarter as many entries again;
 * past that, the process's [truncated] stack takes it.
 */
static uint32_t hard_cap(const struct agg_window *w)
{
	return w->max_stacks + w->max_stacks / 4;
}

/* Interned id of key in t, or -ENOSPC when it is new and t already holds cap entries (0: none). */
static int64_t capped_id(struct intern *t, const void *key, size_t len, uint32_t cap)
{
	if (cap && intern__count(t) >= cap && intern__find(t, key, len) < 0)
		return -ENOSPC;
	return intern__id(t, key, len, NULL);
}

/* Label set as one interned byte string "k\0v\0k\0v\0..." (without the identity labels when
 * no_ids); -ENOSPC past cap, or when it is new and store is 0 (looked up only). */
static int64_t lset_id(struct agg_window *w, const struct pf_label *l, size_t n, int no_ids,
		       uint32_t cap, int store)
{
	char buf[LSET_MAX];
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		size_t kl = strlen(l[i].key) + 1, vl = strlen(l[i].value) + 1;

		if (no_ids && l[i].identity)
			continue;
		if (len + kl + vl > sizeof(buf))
			break;
		memcpy(buf + len, l[i].key, kl);
		memcpy(buf + len + kl, l[i].value, vl);
		len += kl + vl;
	}
	if (!store) {
		int64_t id = intern__find(w->lsets, buf, len);

		return id < 0 ? -ENOSPC : id;
	}
	return capped_id(w->lsets, buf, len, cap);
}

/* Entry id of (stack, the label set) within cap, or -errno (-ENOSPC past it). With the entries
 * full, a label set never seen makes a new entry, so it is not stored for nothing. */
/* An entry's key: its stack in the low half, its label set in the high (read back by
 * aggregate__build). */
static inline uint64_t entry_key(uint32_t stack, uint32_t lset)
{
	return stack | (uint64_t)lset << 32;
}

static int64_t entry_id(struct agg_window *w, uint32_t stack, const struct pf_label *labels,
			size_t n_labels, int no_ids, uint32_t cap)
{
	int64_t ls = lset_id(w, labels, n_labels, no_ids, cap,
			     !cap || idmap__count(w->entries) < cap);
	uint64_t key;

	if (ls < 0)
		return ls;
	key = entry_key(stack, ls);
	if (cap && idmap__count(w->entries) >= cap && idmap__find(w->entries, key) < 0)
		return -ENOSPC;
	return idmap__id(w->entries, key, NULL);
}

static int has_ids(const struct pf_label *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (l[i].identity)
			return 1;
	return 0;
}

static int add(struct aggregator *a, uint64_t time_ns, uint32_t proc, const uint32_t *frames,
	       size_t n_frames, const struct pf_label *labels, size_t n_labels, uint64_t off_ns)
{
	struct agg_window *w = time_ns >= a->cur->end ? a->next : a->cur;
	uint32_t key[1 + MAX_FRAMES];
	int64_t stack, id;

	if (n_frames > MAX_FRAMES)
		n_frames = MAX_FRAMES;
	key[0] = proc;
	memcpy(key + 1, frames, n_frames * sizeof(*frames));
	/* A new stack is a new entry: with the entries (or the stacks) at their hard cap it goes to
	 * [truncated] unstored. Below the caps, one probe finds or adds it. */
	if (hard_cap(w) && (idmap__count(w->entries) >= hard_cap(w) ||
			    intern__count(w->stacks) >= hard_cap(w))) {
		stack = intern__find(w->stacks, key, (1 + n_frames) * sizeof(*key));
		if (stack < 0)
			stack = -ENOSPC;
	} else {
		stack = intern__id(w->stacks, key, (1 + n_frames) * sizeof(*key), NULL);
	}
	id = stack < 0 ? stack : entry_id(w, stack, labels, n_labels, 0, w->max_stacks);
	if (id == -ENOSPC && stack >= 0 && has_ids(labels, n_labels) &&
	    (id = entry_id(w, stack, labels, n_labels, 1, hard_cap(w))) >= 0)
		w->ids_dropped++;
	if (id == -ENOSPC) {
		/* Past both caps: the process's one [truncated] stack, with no labels. */
		int64_t ls;

		key[1] = AGG_TRUNCATED_FRAME;
		if ((stack = intern__id(w->stacks, key, 2 * sizeof(*key), NULL)) < 0)
			return stack;
		if ((ls = intern__id(w->lsets, "", 0, NULL)) < 0)
			return ls;
		w->truncated++;
		id = idmap__id(w->entries, entry_key(stack, ls), NULL);
	}
	if (id < 0)
		return id;
	if (VEC_RESERVE(w->counts, w->cap, (size_t)id + 1) ||
	    (off_ns && VEC_RESERVE(w->off_ns, w->cap_off, (size_t)id + 1)))
		return -ENOMEM;
	if (off_ns) {
		w->off_ns[id] += off_ns;
		w->off_blocks++;
		w->off_total_ns += off_ns;
		return 0;
	}
	w->counts[id]++;
	w->samples++;
	if (w == a->next && time_ns >= w->end)
		w->late++;
	return 0;
}

int aggregate__add(struct aggregator *a, uint64_t time_ns, uint32_t proc, const uint32_t *frames,
		   size_t n_frames, const struct pf_label *labels, size_t n_labels)
{
	return add(a, time_ns, proc, frames, n_frames, labels, n_labels, 0);
}

int aggregate__add_off_cpu(struct aggregator *a, uint64_t time_ns, uint32_t proc,
			   const uint32_t *frames, size_t n_frames, const struct pf_label *labels,
			   size_t n_labels, uint64_t off_ns)
{
	return off_ns ? add(a, time_ns, proc, frames, n_frames, labels, n_labels, off_ns) : 0;
}

struct agg_window *aggregate__cut(struct aggregator *a)
{
	struct agg_window *closed = a->cur;
	struct agg_window *n = window_new(a->next->end, end_after(a->next->end, a->interval));

	if (!n)
		return NULL;
	n->max_stacks = a->max_stacks;
	a->cur = a->next;
	a->next = n;
	return closed;
}

uint64_t aggregate__window_end(const struct aggregator *a)
{
	return a->cur->end;
}

uint64_t aggregate__window_start(const struct aggregator *a)
{
	return a->cur->start;
}

uint64_t aggregate__open_samples(const struct aggregator *a)
{
	return a->cur->samples + a->next->samples;
}

uint64_t aggregate__window_probes(const struct agg_window *w)
{
	const struct intern *t[] = { w->stacks, w->lsets };
	uint64_t n = 0;
	size_t len;

	for (size_t i = 0; i < 2; i++) {
		for (uint32_t id = 0; id < intern__count(t[i]); id++) {
			const void *key = intern__key(t[i], id, &len);

			n += intern__probes(t[i], key, len);
		}
	}
	for (uint32_t id = 0; id < idmap__count(w->entries); id++)
		n += idmap__probes(w->entries, idmap__key(w->entries, id));
	return n;
}

static uint64_t window_bytes(const struct agg_window *w)
{
	return intern__bytes(w->lsets) + intern__bytes(w->stacks) + idmap__bytes(w->entries) +
	       w->cap * sizeof(*w->counts) + w->cap_off * sizeof(*w->off_ns);
}

uint64_t aggregate__open_bytes(const struct aggregator *a)
{
	return window_bytes(a->cur) + window_bytes(a->next);
}

void aggregate__info(const struct agg_window *w, struct agg_window_info *out)
{
	memset(out, 0, sizeof(*out));
	out->start_ns = w->start;
	out->end_ns = w->end;
	out->samples = w->samples;
	out->stacks = idmap__count(w->entries);
	out->late = w->late;
	out->ids_dropped = w->ids_dropped;
	out->truncated = w->truncated;
	out->off_blocks = w->off_blocks;
	out->off_ns = w->off_total_ns;
	out->bytes = window_bytes(w);
}

int aggregate__uses_proc(const struct agg_window *w, uint32_t proc)
{
	for (uint32_t id = 0; id < intern__count(w->stacks); id++)
		if (*(const uint32_t *)intern__key(w->stacks, id, NULL) == proc)
			return 1;
	return 0;
}

/* Location of a frame in one profile, through a per-build cache: frames repeat across stacks. */
struct loc_cache {
	struct intern *keys;	/* (target, proc, frame) -> index */
	uint32_t *locs;
	size_t cap;
};

static int64_t frame_location(struct loc_cache *c, const struct agg_sink *sink, struct profile *prof,
			      uint32_t target, uint32_t proc, uint32_t frame)
{
	uint32_t key[3] = { target, proc, frame }, mapping = 0, fn;
	struct agg_frame f;
	int added, err;
	int64_t id = intern__id(c->keys, key, sizeof(key), &added);

	if (id < 0)
		return id;
	if (!added)
		return c->locs[id];
	if (VEC_RESERVE(c->locs, c->cap, (size_t)id + 1))
		return -ENOMEM;
	memset(&f, 0, sizeof(f));
	if (frame == AGG_TRUNCATED_FRAME)
		f.name = "[truncated: too many distinct stacks]";
	else if ((err = sink->frame(sink->arg, proc, frame, &f)))
		f.name = "[unknown]";
	if (f.has_mapping && !(mapping = profile__mapping(prof, &f.mapping)))
		return -ENOMEM;
	fn = profile__function(prof, f.name ? f.name : "[unknown]", f.system_name, NULL);
	if (!fn || !(c->locs[id] = profile__location(prof, mapping, f.address, fn)))
		return -ENOMEM;
	return c->locs[id];
}

int64_t aggregate__build(const struct agg_window *w, const struct agg_sink *sink,
			 struct profile **profiles, size_t n_profiles, uint64_t *refused,
			 uint64_t *left_out)
{
	struct loc_cache cache = { .keys = intern__new() };
	struct pf_label labels[MAX_LABELS];
	uint32_t locs[MAX_FRAMES];
	int64_t added = 0;
	int err = 0;

	if (!cache.keys)
		return -ENOMEM;
	for (uint32_t id = 0; id < idmap__count(w->entries); id++) {
		size_t klen, llen, nl = 0;
		uint64_t ent = idmap__key(w->entries, id);
		const uint32_t *key = intern__key(w->stacks, (uint32_t)ent, &klen);
		const char *ls = intern__key(w->lsets, ent >> 32, &llen), *end = ls + llen;
		size_t nf = klen / sizeof(*key) - 1;
		int t = sink->target(sink->arg, key[0]);
		uint64_t off = id < w->cap_off ? w->off_ns[id] : 0;

		if (!w->counts[id] && !off)
			continue;
		if (t < 0 || (size_t)t >= n_profiles) {
			if (left_out)
				*left_out += w->counts[id];
			continue;
		}
		for (size_t i = 0; i < nf; i++) {
			int64_t loc = frame_location(&cache, sink, profiles[t], t, key[0], key[1 + i]);

			if (loc < 0) {
				err = loc;
				goto out;
			}
			locs[i] = loc;
		}
		while (ls < end && nl < MAX_LABELS) {
			labels[nl].key = ls;
			ls += strlen(ls) + 1;
			labels[nl++].value = ls;
			ls += strlen(ls) + 1;
		}
		err = profile__add_values(profiles[t], locs, nf, labels, nl, w->counts[id], off);
		if (err == -EINVAL) {
			if (refused)
				*refused += w->counts[id];	/* a label no writer could encode */
			err = 0;
			continue;
		}
		if (err)
			goto out;
		added += w->counts[id];
	}
out:
	intern__free(cache.keys);
	free(cache.locs);
	return err ? err : added;
}
