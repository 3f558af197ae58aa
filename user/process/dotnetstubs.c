/* dotnetstubs.c: runtime code copied out of libcoreclr.so, found by its bytes (dotnetstubs.h).
 *
 * An address is matched by anchors: 8 bytes at or near it are looked for in the library (memmem),
 * and each place found is scored over the window. The last place found in a page is tried first
 * for the next address there (the code of one copy sits at one distance from its original), then
 * the spans of the library copies were found in so far, then (a few times per process, as a scan
 * costs milliseconds) the whole library.
 *
 * What is held is those spans only (copies come from a few corners of the library: the write
 * barriers, the precode templates), one set per distinct file (device, inode, size), shared by
 * every process of that runtime and freed with the last, or sooner when no address asked for
 * it for a while (dnstubs__release_idle: read again, from the process that asks next). A scan of
 * the whole library reads its code segment from the process that asks, scans it and lets it go.
 * Held spans take their size from the symbol budget; a scan takes the library's while it runs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dotnet.h"
#include "dotnetstubs.h"
#include "prefault.h"
#include "procfs.h"
#include "proctab.h"
#include "symbudget.h"
#include "util.h"

#define ANCHOR		8
#define OCCURRENCES_MAX	32	/* places an anchor is scored at */
#define PAGES		16	/* pages whose distance to the library is remembered */
#define SPANS		8	/* spans of the library held; past them the two nearest merge */
#define MAPS		32	/* mappings whose full scans are counted */
#define SCANS_PER_MAP	2	/* full scans for addresses of one mapping (a JIT code heap's
				 * code is no copy: it must not use up the process's scans) */

/* Bytes [lo, hi) of the library's code segment: b[0] is the byte at offset lo. */
struct view {
	const uint8_t *b;
	uint64_t lo, hi;
};

struct span {
	uint64_t lo, hi;	/* hi == 0: unused */
	uint8_t *b;		/* NULL while unread (released while idle) */
};

struct lib_text {
	uint64_t dev, ino, len;
	struct span spans[SPANS];	/* by lo, not overlapping */
	uint32_t nspans;
	int unread;		/* the spans' bytes are read from the next process that asks */
	uint64_t held;		/* bytes of the spans, taken from the symbol budget */
	uint64_t used_ns;	/* the last address matched against it */
	uint32_t refs;
	struct lib_text *next;
};

static struct lib_text *libs;	/* the main thread's only: symbolizing is not threaded */

struct dn_stubs {
	struct lib_text *lib;
	uint64_t lib_start;	/* where the process maps the code segment */
	int lib_tried;
	struct { uint64_t page; int64_t delta; } pages[PAGES];	/* library offset - address */
	uint32_t next_page;
	struct { uint64_t start; uint32_t scans; } maps[MAPS];	/* full scans by mapping */
	uint32_t next_map;
	struct dnstubs_stats st;
};

struct dn_stubs *dnstubs__new(void)
{
	return calloc(1, sizeof(struct dn_stubs));
}

/* The spans' bytes go (their places stay: read again when asked). */
static void spans_drop(struct lib_text *l)
{
	for (uint32_t i = 0; i < l->nspans; i++) {
		free(l->spans[i].b);
		l->spans[i].b = NULL;
	}
	symbudget__give(SB_ELF, l->held);
	l->held = 0;
}

static void lib_put(struct lib_text *l)
{
	struct lib_text **pp;

	if (!l || --l->refs)
		return;
	for (pp = &libs; *pp && *pp != l; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = l->next;
	spans_drop(l);
	free(l);
}

void dnstubs__free(struct dn_stubs *s)
{
	if (!s)
		return;
	lib_put(s->lib);
	free(s);
}

/* p's executable mapping of the runtime library, or NULL. */
static const struct vma *lib_vma(const struct proc *p)
{
	for (size_t i = 0; i < p->nvmas; i++)
		if (p->vmas[i].kind == VMA_FILE && p->vmas[i].exec &&
		    dotnet__is_runtime_path(p->vmas[i].path))
			return &p->vmas[i];
	return NULL;
}

/* Whether v maps the file l holds the code of. */
static int lib_is(const struct lib_text *l, const struct vma *v)
{
	return l->dev == v->dev && l->ino == v->ino && l->len == v->end - v->start;
}

/* Read the spans' bytes from the process's own mapping v (the very file it runs, as it is
 * mapped), if the budget has room; the spans are forgotten when they cannot be read. */
static void spans_read(struct lib_text *l, const struct proc *p, const struct vma *v)
{
	uint64_t bytes = 0;

	l->unread = 0;
	for (uint32_t i = 0; i < l->nspans; i++)
		bytes += l->spans[i].hi - l->spans[i].lo;
	if (!bytes)
		return;
	if (symbudget__take(SB_ELF, bytes)) {
		l->held = bytes;
		for (uint32_t i = 0; i < l->nspans; i++) {
			struct span *sp = &l->spans[i];

			if (!(sp->b = malloc(sp->hi - sp->lo)) ||
			    procfs__read_mem(p->dir_fd, v->start + sp->lo, sp->b, sp->hi - sp->lo))
				break;
			if (i + 1 == l->nspans)
				return;
		}
		spans_drop(l);
	}
	l->nspans = 0;
}

/* The shared entry of the file v maps, a new one when there is none; one more ref. */
static struct lib_text *lib_get(const struct vma *v)
{
	struct lib_text *l;

	for (l = libs; l && !lib_is(l, v); l = l->next)
		;
	if (!l) {
		if (!(l = calloc(1, sizeof(*l))))
			return NULL;
		*l = (struct lib_text){ .dev = v->dev, .ino = v->ino, .len = v->end - v->start,
					.next = libs };
		libs = l;
	}
	l->refs++;
	return l;
}

/* p's mapping of the library l holds, or NULL (p maps another file there now). */
static const struct vma *lib_in(const struct lib_text *l, const struct proc *p)
{
	const struct vma *v = lib_vma(p);

	return v && lib_is(l, v) ? v : NULL;
}

/* The library p maps, found at the first call, its spans' bytes read when unread (after an idle
 * release) from the process that asks, as long as that process still maps the same file. */
static struct lib_text *lib_of(struct dn_stubs *s, struct proc *p)
{
	const struct vma *v;
	struct lib_text *l;

	if (!s->lib_tried) {
		s->lib_tried = 1;
		v = lib_vma(p);
		if (v && v->end - v->start <= DNSTUBS_LIB_MAX && (s->lib = lib_get(v)))
			s->lib_start = v->start;
	}
	l = s->lib;
	if (l && l->unread && (v = lib_in(l, p)))
		spans_read(l, p, v);
	return l && !l->unread ? l : NULL;
}

void dnstubs__release_idle(uint64_t now, uint64_t idle_ns)
{
	for (struct lib_text *l = libs; l; l = l->next)
		if (l->held && now > l->used_ns + idle_ns) {
			spans_drop(l);
			l->unread = 1;
		}
}

/*
 * Bytes of the copy (w: n bytes from address w0) equal to the library's when address a is at
 * library offset off, walking out from a both ways until more than GAP_MAX bytes in a row
 * differ: the runtime patches immediates (up to 8 bytes) into its copies, and a copy may sit
 * next to another copied from elsewhere.
 */
#define GAP_MAX	  8
#define SAME_MIN 24	/* bytes that must agree */
#define RUN_MIN	 4	/* ... in stretches of at least this many */
#define AT_A	 2	/* ... the first ones at the address among them */

/* Bytes of w equal to the library (w[0] at library offset base) from w[i] on, one way (step),
 * until more than GAP_MAX in a row differ. */
static int walk(const struct view *l, const uint8_t *w, size_t n, int64_t base, int64_t i,
		int step)
{
	int same = 0, gap = 0, run = 0;

	/* Only stretches of RUN_MIN or more agreeing bytes count: code that is no copy agrees
	 * with the library here and there, a byte or two at a time. */
	for (; i >= 0 && i < (int64_t)n && gap <= GAP_MAX; i += step) {
		int64_t j = base + i;

		if (j >= (int64_t)l->lo && (uint64_t)j < l->hi && w[i] == l->b[j - l->lo]) {
			run++;
			gap = 0;
			continue;
		}
		if (run >= RUN_MIN)
			same += run;
		run = 0;
		gap++;
	}
	return same + (run >= RUN_MIN ? run : 0);
}

static int score(const struct view *l, const uint8_t *w, uint64_t w0, size_t n, uint64_t a,
		 int64_t off)
{
	int64_t base = off - (int64_t)(a - w0);	/* library offset of w[0] */
	int64_t i0 = (int64_t)(a - w0);

	/* The instruction at a starts as the library's does (its opcode, at least). */
	if (i0 + AT_A > (int64_t)n || base + i0 < (int64_t)l->lo ||
	    (uint64_t)(base + i0 + AT_A) > l->hi || memcmp(w + i0, l->b + (base + i0 - l->lo), AT_A))
		return 0;

	return walk(l, w, n, base, i0, 1) + walk(l, w, n, base, i0 - 1, -1);
}

static int good(int same, size_t n)
{
	(void)n;
	return same >= SAME_MIN;
}

static int uniform(const uint8_t *b, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (b[i] != b[0])
			return 0;
	return 1;
}

/* The count of full scans for addresses of the mapping at start (a new one, or the oldest's
 * slot, starts at 0). */
static uint32_t *map_scans(struct dn_stubs *s, uint64_t start)
{
	uint32_t i;

	for (i = 0; i < MAPS; i++)
		if (s->maps[i].start == start)
			return &s->maps[i].scans;
	i = s->next_map;
	s->next_map = (s->next_map + 1) % MAPS;
	s->maps[i].start = start;
	s->maps[i].scans = 0;
	return &s->maps[i].scans;
}

/* The best place of the library in view l for addr, by anchors (8 bytes at or near addr,
 * nearest first, the first that leads to a good place wins): its score, and *off; -1 none. */
static int search(const struct view *l, const uint8_t *w, uint64_t w0, uint64_t w1,
		  uint64_t addr, int64_t *off)
{
	static const int anchors[] = { 0, -8, 8, -16, 16, -24, 24 };
	size_t n = w1 - w0;
	int best = -1;

	for (size_t k = 0; k < sizeof(anchors) / sizeof(anchors[0]) && best < 0; k++) {
		uint64_t at = addr + anchors[k];
		const uint8_t *a, *from = l->b, *end = l->b + (l->hi - l->lo);

		if (at < w0 || at + ANCHOR > w1 || uniform(w + (at - w0), ANCHOR))
			continue;
		a = w + (at - w0);
		for (int occ = 0; occ < OCCURRENCES_MAX && from < end; occ++) {
			const uint8_t *hit = memmem(from, end - from, a, ANCHOR);
			int64_t o;
			int same;

			if (!hit)
				break;
			o = (int64_t)(hit - l->b) + (int64_t)l->lo - anchors[k];	/* addr's byte */
			same = score(l, w, w0, n, addr, o);
			if (good(same, n) && same > best) {
				best = same;
				*off = o;
			}
			from = hit + 1;
		}
	}
	return best;
}

static struct view span_view(const struct span *sp)
{
	return (struct view){ sp->b, sp->lo, sp->hi };
}

/*
 * Hold the library's bytes around offset at (DNSTUBS_HOT_SPAN each way) too, copied from full
 * (the whole code segment, just read): the spans are laid out again (those that meet merged,
 * past SPANS the two nearest merged) and copied afresh, rarely (after a scan that found a copy).
 * Out of memory or budget: what was held stays.
 */
static void spans_add(struct lib_text *l, const struct view *full, uint64_t at)
{
	struct span r[SPANS + 1], *old = l->spans;
	uint32_t n = 0, k;
	uint64_t bytes = 0;

	for (k = 0; k < l->nspans; k++)
		r[n++] = (struct span){ old[k].lo, old[k].hi, NULL };
	r[n].lo = at > DNSTUBS_HOT_SPAN ? at - DNSTUBS_HOT_SPAN : 0;
	r[n].hi = at + DNSTUBS_HOT_SPAN < l->len ? at + DNSTUBS_HOT_SPAN : l->len;
	r[n].b = NULL;
	for (k = n++; k > 0 && r[k - 1].lo > r[k].lo; k--) {	/* into place by lo */
		struct span t = r[k];

		r[k] = r[k - 1];
		r[k - 1] = t;
	}
	/* Merge those that meet; then, while too many, the pair with the smallest gap. */
	for (;;) {
		uint32_t pick = UINT32_MAX;
		uint64_t gap = UINT64_MAX;

		for (k = 0; k + 1 < n; k++) {
			uint64_t g = r[k + 1].lo > r[k].hi ? r[k + 1].lo - r[k].hi : 0;

			if (g < gap) {
				gap = g;
				pick = k;
			}
		}
		if (pick == UINT32_MAX || (gap > 0 && n <= SPANS))
			break;
		r[pick].hi = r[pick + 1].hi > r[pick].hi ? r[pick + 1].hi : r[pick].hi;
		memmove(&r[pick + 1], &r[pick + 2], (n - pick - 2) * sizeof(r[0]));
		n--;
	}
	for (k = 0; k < n; k++)
		bytes += r[k].hi - r[k].lo;
	if (bytes > l->held && !symbudget__take(SB_ELF, bytes - l->held))
		return;
	for (k = 0; k < n; k++)
		if (!(r[k].b = malloc(r[k].hi - r[k].lo)))
			break;
	if (k < n) {
		while (k-- > 0)
			free(r[k].b);
		if (bytes > l->held)
			symbudget__give(SB_ELF, bytes - l->held);
		return;
	}
	for (k = 0; k < n; k++)
		memcpy(r[k].b, full->b + r[k].lo, r[k].hi - r[k].lo);
	for (k = 0; k < l->nspans; k++)
		free(old[k].b);
	if (bytes < l->held)
		symbudget__give(SB_ELF, l->held - bytes);
	memcpy(l->spans, r, n * sizeof(r[0]));
	l->nspans = n;
	l->held = bytes;
}

int dnstubs__copy_of(struct dn_stubs *s, struct proc *p, uint64_t addr, uint64_t *orig)
{
	const struct vma *v = proc__vma(p, addr), *lv;
	uint8_t w[DNSTUBS_WINDOW];
	struct lib_text *l;
	uint64_t w0, w1, page = addr & ~4095ull;
	int64_t best_off = -1;
	int best = -1;
	size_t n;

	if (!v || v->kind == VMA_FILE || !v->exec || !(l = lib_of(s, p)))
		return -ENOENT;
	l->used_ns = now_ns();
	w0 = addr - DNSTUBS_WINDOW / 2 < v->start ? v->start : addr - DNSTUBS_WINDOW / 2;
	w1 = w0 + DNSTUBS_WINDOW > v->end ? v->end : w0 + DNSTUBS_WINDOW;
	n = w1 - w0;
	if (n < 32 || procfs__read_mem(p->dir_fd, w0, w, n))
		return -ENOENT;
	/* The distance found last in this page, first: scored in the span it points into. */
	for (int i = 0; i < PAGES; i++)
		if (s->pages[i].page == page && s->pages[i].delta) {
			int64_t off = (int64_t)addr + s->pages[i].delta;

			for (uint32_t k = 0; k < l->nspans; k++) {
				struct view sv = span_view(&l->spans[k]);
				int same;

				if (off < (int64_t)sv.lo || off >= (int64_t)sv.hi)
					continue;
				if (good(same = score(&sv, w, w0, n, addr, off), n)) {
					best = same;
					best_off = off;
				}
			}
		}
	/* Where copies were found before (in any process of this runtime: they come from a few
	 * corners of the library), then, a few times per process, the whole library. */
	for (uint32_t k = 0; best < 0 && k < l->nspans; k++) {
		struct view sv = span_view(&l->spans[k]);

		best = search(&sv, w, w0, w1, addr, &best_off);
	}
	if (best < 0) {
		uint32_t *scans = map_scans(s, v->start);
		struct view full = { NULL, 0, l->len };
		uint8_t *text;

		if (s->st.searches >= DNSTUBS_SEARCHES_MAX || *scans >= SCANS_PER_MAP) {
			s->st.capped++;
			return -ENOENT;
		}
		s->st.searches++;
		(*scans)++;
		/* The whole code segment, from this process, for this scan only. */
		if (!(lv = lib_in(l, p)) || !symbudget__take(SB_ELF, l->len)) {
			s->st.not_found++;
			return -ENOENT;
		}
		if ((text = malloc(l->len)))
			prefault__write(text, l->len);
		if (text && !procfs__read_mem(p->dir_fd, lv->start, text, l->len)) {
			full.b = text;
			best = search(&full, w, w0, w1, addr, &best_off);
			if (best >= 0)
				spans_add(l, &full, (uint64_t)best_off);
		}
		free(text);
		symbudget__give(SB_ELF, l->len);
	}
	if (best < 0) {
		s->st.not_found++;
		return -ENOENT;
	}
	s->pages[s->next_page].page = page;
	s->pages[s->next_page].delta = best_off - (int64_t)addr;
	s->next_page = (s->next_page + 1) % PAGES;
	s->st.found++;
	*orig = s->lib_start + best_off;
	return 0;
}

void dnstubs__stats(const struct dn_stubs *s, struct dnstubs_stats *out)
{
	if (s)
		*out = s->st;
	else
		memset(out, 0, sizeof(*out));
}
