/* test_addrindex.c: unit tests for the perfmap address index (overlaps, times, runs, scale). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "addrindex.h"

static int setup(void **state)
{
	*state = addrindex__new();
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	addrindex__free(*state);
	return 0;
}

static int64_t add(struct addrindex *ix, uint64_t start, uint64_t size, uint64_t load_ns,
		   uint64_t order, const char *name, unsigned flags)
{
	struct perfmap_sym s = {
		.start = start, .size = size, .load_ns = load_ns, .name = name, .tier = "",
		.source = load_ns ? PERFMAP_SRC_JITDUMP : PERFMAP_SRC_MAP,
	};

	return addrindex__add(ix, &s, order, flags);
}

static const char *name_at(struct addrindex *ix, uint64_t addr, uint64_t t)
{
	const struct perfmap_sym *s = addrindex__lookup(ix, addr, t);

	return s ? s->name : NULL;
}

static void test_addrindex_disjoint(void **state)
{
	struct addrindex *ix = *state;

	assert_int_equal(add(ix, 0x2000, 0x100, 0, 1, "b", 0), 0);
	assert_int_equal(add(ix, 0x1000, 0x10, 0, 1, "a", 0), 1);
	assert_int_equal(add(ix, 0x3000, 0x1, 0, 1, "c", 0), 2);
	assert_null(name_at(ix, 0xfff, 0));
	assert_string_equal(name_at(ix, 0x1000, 0), "a");
	assert_string_equal(name_at(ix, 0x100f, 0), "a");
	assert_null(name_at(ix, 0x1010, 0));	/* end is exclusive */
	assert_string_equal(name_at(ix, 0x20ff, 0), "b");
	assert_string_equal(name_at(ix, 0x3000, 0), "c");
	assert_null(name_at(ix, 0x3001, 0));
	assert_null(name_at(ix, UINT64_MAX, 0));
	assert_null(name_at(ix, 0, 0));
}

static void test_addrindex_invalid_ranges(void **state)
{
	struct addrindex *ix = *state;

	assert_int_equal(add(ix, 0x1000, 0, 0, 1, "empty", 0), -EINVAL);
	assert_int_equal(add(ix, UINT64_MAX - 4, 0x10, 0, 1, "wraps", 0), -EINVAL);
	assert_int_equal(addrindex__count(ix), 0);
	assert_null(name_at(ix, 0x1000, 0));
}

/* The largest range there may be, beside a small one: both found, at either end. */
static void test_addrindex_largest_range(void **state)
{
	struct addrindex *ix = *state;
	uint64_t big = 0x7f0000000000ULL;

	assert_int_equal(add(ix, big, ADDRINDEX_MAX_SIZE, 0, 1, "big", 0), 0);
	assert_int_equal(add(ix, big + ADDRINDEX_MAX_SIZE, 0x10, 0, 1, "after", 0), 1);
	assert_int_equal(add(ix, big, ADDRINDEX_MAX_SIZE + 1, 0, 1, "too big", 0), -EINVAL);
	assert_int_equal(addrindex__flush(ix), 0);	/* into a run: a tail this small is scanned */
	assert_string_equal(name_at(ix, big, 0), "big");
	assert_string_equal(name_at(ix, big + ADDRINDEX_MAX_SIZE - 1, 0), "big");
	assert_string_equal(name_at(ix, big + ADDRINDEX_MAX_SIZE, 0), "after");
	assert_null(name_at(ix, big - 1, 0));
}

/* A stub block logged before or after a single stub inside it: the stub wins where it is. */
static void test_addrindex_block_smallest_wins(void **state)
{
	struct addrindex *ix = *state;

	add(ix, 0x10000, 0x10000, 0, 1, "stub ReportStubBlock<MethodCallThunk>", ADDRINDEX_BLOCK);
	add(ix, 0x10100, 0x20, 0, 2, "stub CreateHelper<DynamicHelper>", 0);
	add(ix, 0x18000, 0x20, 0, 0, "stub Allocate<FixupPrecode>", 0);	/* logged earlier */
	add(ix, 0x18000, 0x1000, 0, 3, "stub<9> ReportStubBlock<Inner>", ADDRINDEX_BLOCK);
	assert_string_equal(name_at(ix, 0x10110, 0), "stub CreateHelper<DynamicHelper>");
	assert_string_equal(name_at(ix, 0x18010, 0), "stub Allocate<FixupPrecode>");
	/* outside single stubs: the smallest block */
	assert_string_equal(name_at(ix, 0x18100, 0), "stub<9> ReportStubBlock<Inner>");
	assert_string_equal(name_at(ix, 0x10000, 0), "stub ReportStubBlock<MethodCallThunk>");
	assert_string_equal(name_at(ix, 0x1ffff, 0), "stub ReportStubBlock<MethodCallThunk>");
	assert_int_equal(addrindex__flush(ix), 0);	/* same answers from a sorted run */
	assert_string_equal(name_at(ix, 0x18010, 0), "stub Allocate<FixupPrecode>");
	assert_string_equal(name_at(ix, 0x18100, 0), "stub<9> ReportStubBlock<Inner>");
}

/* Code inside blocks and inside older code: code beats the blocks around it at once, but not
 * newer code around it, and a stub not loaded yet at the sample time leaves its block. */
static void test_addrindex_code_inside_blocks(void **state)
{
	struct addrindex *ix = *state;

	add(ix, 0x10000, 0x10000, 0, 1, "outer block", ADDRINDEX_BLOCK);
	add(ix, 0x10000, 0x1000, 0, 2, "inner block", ADDRINDEX_BLOCK);
	add(ix, 0x10100, 0x20, 500, 500, "stub", 0);
	add(ix, 0x30000, 0x1000, 0, 9, "old method", 0);
	add(ix, 0x30100, 0x20, 0, 8, "older method inside", 0);
	add(ix, 0x30200, 0x20, 0, 10, "newer method inside", 0);
	static const struct {
		uint64_t addr, t;
		const char *want;
	} cases[] = {
		{ 0x10110, 0, "stub" },
		{ 0x10110, 600, "stub" },
		{ 0x10110, 400, "inner block" },	/* the stub was not loaded yet */
		{ 0x10120, 0, "inner block" },
		{ 0x11000, 0, "outer block" },
		{ 0x30110, 0, "old method" },
		{ 0x30210, 0, "newer method inside" },
		{ 0x30220, 0, "old method" },
	};

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			assert_string_equal(name_at(ix, cases[i].addr, cases[i].t), cases[i].want);
		assert_int_equal(addrindex__flush(ix), 0);	/* the same from a sorted run */
	}
}

/* The same range reused by newer code: the newest load at or before the sample time wins. */
static void test_addrindex_reuse_by_time(void **state)
{
	struct addrindex *ix = *state;

	add(ix, 0x1000, 0x40, 100, 100, "old", 0);
	add(ix, 0x1000, 0x40, 300, 300, "new", 0);
	add(ix, 0x1000, 0x40, 200, 200, "middle", 0);	/* arrives late, ranks by time */
	for (int pass = 0; pass < 2; pass++) {
		assert_null(name_at(ix, 0x1010, 50));	/* nothing was loaded yet */
		assert_string_equal(name_at(ix, 0x1010, 100), "old");
		assert_string_equal(name_at(ix, 0x1010, 250), "middle");
		assert_string_equal(name_at(ix, 0x1010, 300), "new");
		assert_string_equal(name_at(ix, 0x1010, 0), "new");
		assert_int_equal(addrindex__flush(ix), 0);
	}
}

/* Freed code reused by a bigger newer method (seen on .NET 10.0.12 with DynamicHelper stubs):
 * the newer range wins even though an older, smaller one also contains the address. */
static void test_addrindex_reuse_partial_overlap(void **state)
{
	struct addrindex *ix = *state;

	add(ix, 0x4688, 0xf, 10, 10, "stub CreateHelper<DynamicHelper>", 0);
	add(ix, 0x4688, 0x12, 20, 20, "stub CreateHelperArgMove<DynamicHelper>", 0);
	add(ix, 0x4690, 0x21, 30, 30, "stub CreateDictionaryLookupHelper<DynamicHelper>", 0);
	assert_string_equal(name_at(ix, 0x4689, 0), "stub CreateHelperArgMove<DynamicHelper>");
	assert_string_equal(name_at(ix, 0x4689, 15), "stub CreateHelper<DynamicHelper>");
	assert_string_equal(name_at(ix, 0x4692, 0), "stub CreateDictionaryLookupHelper<DynamicHelper>");
	assert_string_equal(name_at(ix, 0x4692, 25), "stub CreateHelperArgMove<DynamicHelper>");
	assert_null(name_at(ix, 0x46a0, 25));	/* only the newest (time 30) covers 0x46a0 */
	assert_string_equal(name_at(ix, 0x46a0, 31), "stub CreateDictionaryLookupHelper<DynamicHelper>");
}

/* Re-jitting at a new address: every tier stays valid for its own range. */
static void test_addrindex_rejit_keeps_tiers(void **state)
{
	struct addrindex *ix = *state;
	const struct perfmap_sym *s;
	struct perfmap_sym q = { .start = 0x5000, .size = 0x80, .load_ns = 10, .name = "M",
				 .tier = "QuickJitted", .source = PERFMAP_SRC_JITDUMP };
	struct perfmap_sym o = { .start = 0x9000, .size = 0x20, .load_ns = 90, .name = "M",
				 .tier = "OptimizedTier1", .source = PERFMAP_SRC_JITDUMP };

	assert_int_equal(addrindex__add(ix, &q, 10, 0), 0);
	assert_int_equal(addrindex__add(ix, &o, 90, 0), 1);
	s = addrindex__lookup(ix, 0x5010, 0);
	assert_non_null(s);
	assert_string_equal(s->tier, "QuickJitted");
	s = addrindex__lookup(ix, 0x9010, 0);
	assert_non_null(s);
	assert_string_equal(s->tier, "OptimizedTier1");
	s = addrindex__lookup(ix, 0x5010, 1000);	/* still runs after tier-up (on-stack frames) */
	assert_non_null(s);
	assert_string_equal(s->tier, "QuickJitted");
	assert_null(addrindex__lookup(ix, 0x9010, 50));	/* tier 1 did not exist yet */
}

static void test_addrindex_hidden_entries_skipped(void **state)
{
	struct addrindex *ix = *state;

	add(ix, 0x1000, 0x10, 0, 1, "map copy", 0);
	add(ix, 0x1000, 0x10, 0, 0, "older", 0);
	addrindex__hide(ix, 0);
	assert_true(addrindex__hidden(ix, 0));
	assert_false(addrindex__hidden(ix, 1));
	assert_string_equal(name_at(ix, 0x1000, 0), "older");
	addrindex__hide(ix, 1);
	assert_null(name_at(ix, 0x1000, 0));
	assert_int_equal(addrindex__flush(ix), 0);
	assert_null(name_at(ix, 0x1000, 0));
	add(ix, 0x1000, 0x10, 0, 5, "later", 0);
	assert_string_equal(name_at(ix, 0x1000, 0), "later");
}

/* One huge range at the bottom and 200k disjoint small ones on top of it: lookups must reach
 * the huge one through the max-end tree without scanning, and still prefer the newer ones. */
static void test_addrindex_deep_cover(void **state)
{
	struct addrindex *ix = *state;
	struct addrindex_shape sh;

	add(ix, 0x100000, 0x10000000, 0, 0, "big", 0);
	for (uint64_t i = 0; i < 200000; i++)
		add(ix, 0x100000 + i * 0x40, 0x20, 0, 1, "small", 0);
	for (uint64_t i = 0; i < 200000; i += 997) {
		assert_string_equal(name_at(ix, 0x100000 + i * 0x40 + 0x1f, 0), "small");
		assert_string_equal(name_at(ix, 0x100000 + i * 0x40 + 0x20, 0), "big");
	}
	assert_string_equal(name_at(ix, 0x100000 + 0x10000000 - 1, 0), "big");
	assert_null(name_at(ix, 0x100000 + 0x10000000, 0));
	addrindex__shape(ix, &sh);
	assert_int_equal(sh.entries, 200001);
	assert_int_equal(sh.tail, 0);
	assert_true(sh.runs >= 1);
}

/* ---- differential test against a brute-force reading of the rules ------------------------ */

struct ref {
	uint64_t start, size, load_ns, order;
	unsigned flags;
	bool hidden;
};

static bool ref_better(const struct ref *a, uint32_t ai, const struct ref *b, uint32_t bi)
{
	bool ab = a->flags & ADDRINDEX_BLOCK, bb = b->flags & ADDRINDEX_BLOCK;

	if (ab != bb)
		return !ab;
	if (ab && a->size != b->size)
		return a->size < b->size;
	if (a->order != b->order)
		return a->order > b->order;
	return ai > bi;
}

static int64_t ref_lookup(const struct ref *r, uint32_t n, uint64_t addr, uint64_t t)
{
	int64_t best = -1;

	for (uint32_t i = 0; i < n; i++) {
		if (r[i].hidden || addr < r[i].start || addr - r[i].start >= r[i].size)
			continue;
		if (t && r[i].load_ns && r[i].load_ns > t)
			continue;
		if (best < 0 || ref_better(&r[i], i, &r[best], (uint32_t)best))
			best = i;
	}
	return best;
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Tiers are kept as an index into a table of 255: a 256th distinct tier shows as "", counted. */
static void test_addrindex_tier_table(void **state)
{
	struct addrindex *ix = *state;
	static char tiers[300][8];
	struct addrindex_shape sh;

	for (int i = 0; i < 300; i++) {
		struct perfmap_sym s = { .start = 0x1000 + i * 0x10, .size = 0x10, .name = "m",
					 .tier = tiers[i] };

		snprintf(tiers[i], sizeof(tiers[i]), "T%d", i);
		assert_int_equal(addrindex__add(ix, &s, 1, 0), i);
	}
	for (int i = 0; i < 300; i++) {
		const struct perfmap_sym *s = addrindex__lookup(ix, 0x1000 + i * 0x10 + 1, 0);

		assert_non_null(s);
		if (i < 255)
			assert_ptr_equal(s->tier, tiers[i]);
		else
			assert_string_equal(s->tier, "");
	}
	addrindex__shape(ix, &sh);
	assert_int_equal(sh.tiers_dropped, 45);
}

/* Runs appended while the process compiled are merged into one once it stops (a lookup then
 * searches one run, not a dozen); a few ranges appended after that stay a small run of their
 * own until they are worth a merge. Answers never change. */
static void test_addrindex_settle_merges_runs(void **state)
{
	struct addrindex *ix = *state;
	struct addrindex_shape sh;
	static char names[1100][12];

	for (uint32_t i = 0; i < 1000; i++) {
		snprintf(names[i], sizeof(names[i]), "m%u", i);
		assert_int_equal(add(ix, 0x100000 + (uint64_t)((i * 7919) % 1000) * 0x100, 0x80, 0,
				     i, names[i], 0), i);
		if (i % 50 == 49)
			assert_int_equal(addrindex__flush(ix), 0);	/* a poll, a lookup */
	}
	addrindex__shape(ix, &sh);
	assert_true(sh.runs > 1);
	assert_int_equal(addrindex__settle(ix), 0);
	addrindex__shape(ix, &sh);
	assert_int_equal(sh.runs, 1);
	assert_int_equal(sh.tail, 0);
	assert_int_equal(sh.slots, 1000);
	for (uint32_t i = 0; i < 1000; i++) {
		uint64_t a = 0x100000 + (uint64_t)((i * 7919) % 1000) * 0x100;

		assert_string_equal(name_at(ix, a + 0x7f, 0), names[i]);
		assert_null(name_at(ix, a + 0x80, 0));
	}
	/* a few late ones: a run of their own, too small to merge the thousand again for */
	for (uint32_t i = 1000; i < 1010; i++) {
		snprintf(names[i], sizeof(names[i]), "late%u", i);
		assert_int_equal(add(ix, 0x100000 + (uint64_t)(i - 1000) * 0x100 + 0x80, 0x40, 0, i,
				     names[i], 0), i);
	}
	assert_int_equal(addrindex__settle(ix), 0);
	addrindex__shape(ix, &sh);
	assert_int_equal(sh.runs, 2);
	assert_int_equal(sh.tail, 0);
	assert_string_equal(name_at(ix, 0x100080, 0), "late1000");
	assert_string_equal(name_at(ix, 0x100000, 0), names[0]);
	/* ... until they are */
	for (uint32_t i = 1010; i < 1100; i++) {
		snprintf(names[i], sizeof(names[i]), "late%u", i);
		assert_int_equal(add(ix, 0x200000 + (uint64_t)i * 0x100, 0x40, 0, i, names[i], 0), i);
	}
	assert_int_equal(addrindex__settle(ix), 0);
	addrindex__shape(ix, &sh);
	assert_int_equal(sh.runs, 1);
	assert_string_equal(name_at(ix, 0x100080, 0), "late1000");
	assert_string_equal(name_at(ix, 0x200000 + 1099 * 0x100, 0), "late1099");
	assert_int_equal(addrindex__settle(NULL), 0);
}

/* Lookups told first reuse what the hint found; if the runs change between the hint and the
 * lookups (new ranges sorted in, runs merged), the lookups search again and answer by the index as
 * it is then. */
static void test_addrindex_hint_outlived_by_new_runs(void **state)
{
	struct addrindex *ix = *state;
	uint64_t addrs[3] = { 0x100000 + 5 * 0x100 + 8, 0x100000 + 77 * 0x100 + 8, 0x50 };
	static char names[300][12];

	for (uint32_t i = 0; i < 200; i++) {
		snprintf(names[i], sizeof(names[i]), "m%u", i);
		assert_int_equal(add(ix, 0x100000 + (uint64_t)i * 0x100, 0x80, 0, i, names[i], 0), i);
	}
	assert_int_equal(addrindex__flush(ix), 0);
	addrindex__prefetch(ix, addrs, 3);
	assert_string_equal(name_at(ix, addrs[0], 0), "m5");
	assert_string_equal(name_at(ix, addrs[1], 0), "m77");
	assert_null(name_at(ix, addrs[2], 0));
	/* told, then the method at addrs[0] is compiled again over it, and that is sorted in */
	addrindex__prefetch(ix, addrs, 3);
	for (uint32_t i = 200; i < 300; i++) {
		snprintf(names[i], sizeof(names[i]), "n%u", i);
		assert_int_equal(add(ix, i == 200 ? 0x100000 + 5 * 0x100 : 0x900000 + (uint64_t)i * 0x100,
				     0x80, 0, i, names[i], 0), i);
	}
	assert_int_equal(addrindex__flush(ix), 0);
	assert_string_equal(name_at(ix, addrs[0], 0), "n200");
	assert_string_equal(name_at(ix, addrs[1], 0), "m77");
	/* told, then the runs merged into one */
	addrindex__prefetch(ix, addrs, 3);
	assert_int_equal(addrindex__settle(ix), 0);
	assert_string_equal(name_at(ix, addrs[0], 0), "n200");
	assert_string_equal(name_at(ix, addrs[1], 0), "m77");
	assert_string_equal(name_at(ix, 0x900000 + 299 * 0x100, 0), "n299");
	assert_null(name_at(ix, addrs[2], 0));
}

static void test_addrindex_matches_brute_force(void **state)
{
	struct addrindex *ix = *state;
	enum { N = 6000, Q = 60 };
	static const char *const tiers[] = { "", "QuickJitted", "OptimizedTier1" };
	struct ref *r = calloc(N, sizeof(*r));
	char (*names)[16] = calloc(N, sizeof(*names));
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	uint64_t checked = 0, hits = 0;

	assert_non_null(r);
	assert_non_null(names);
	for (uint32_t i = 0; i < N; i++) {
		uint64_t k = rng_next(&seed);
		struct perfmap_sym s = { 0 };

		/* dense address space so overlaps, reuse and blocks are frequent */
		r[i].start = 0x10000 + (k % 4096) * 8;
		r[i].size = 1 + (k >> 20) % 96;
		r[i].flags = (k >> 40) % 23 == 0 ? ADDRINDEX_BLOCK : 0;
		if (r[i].flags)
			r[i].size *= 16;
		r[i].load_ns = (k >> 30) % 3 ? 1 + (k >> 33) % 100000 : 0;
		r[i].order = r[i].load_ns ? r[i].load_ns : (k >> 50) % 100000;
		snprintf(names[i], sizeof(names[i]), "e%u", i);
		s.start = r[i].start;
		s.size = r[i].size;
		s.load_ns = r[i].load_ns;
		s.name = names[i];
		s.tier = tiers[i % 3];
		s.source = r[i].load_ns ? PERFMAP_SRC_JITDUMP : PERFMAP_SRC_MAP;
		assert_int_equal(addrindex__add(ix, &s, r[i].order, r[i].flags), i);
		if ((k >> 56) % 29 == 0) {
			uint32_t h = (uint32_t)((k >> 8) % (i + 1));

			addrindex__hide(ix, h);
			r[h].hidden = true;
		}
		/* now and then the process stops compiling for a while */
		if (i % 997 == 0)
			assert_int_equal(addrindex__settle(ix), 0);
		/* interleave lookups with appends: tails, runs and merges all get exercised */
		if (i % 37 == 0 || i == N - 1) {
			uint64_t as[Q], ts[Q];
			struct addrindex_shape before, after;

			for (int q = 0; q < Q; q++) {
				as[q] = 0x10000 - 64 + rng_next(&seed) % (4096 * 8 + 2048);
				ts[q] = rng_next(&seed) % 3 ? rng_next(&seed) % 110000 : 0;
			}
			/* told first, as a window's frames are: a hint that changes nothing (not even
			 * the tail) and answers the same */
			addrindex__shape(ix, &before);
			for (int q = 0; q < Q; q += ADDRINDEX_PREFETCH_MAX)
				addrindex__prefetch(ix, as + q, Q - q < ADDRINDEX_PREFETCH_MAX ?
							       Q - q : ADDRINDEX_PREFETCH_MAX);
			addrindex__prefetch(ix, as, ADDRINDEX_PREFETCH_MAX + 1);	/* too many: ignored */
			addrindex__shape(ix, &after);
			assert_memory_equal(&before, &after, sizeof(before));
			for (int q = 0; q < Q; q++) {
				uint64_t a = as[q], t = ts[q];
				int64_t want = ref_lookup(r, i + 1, a, t);
				const struct perfmap_sym *got = addrindex__lookup(ix, a, t);

				if (want < 0) {
					assert_null(got);
				} else {
					struct perfmap_sym e;

					assert_non_null(got);
					assert_ptr_equal(got->name, names[want]);
					/* the whole answer, wherever it was read from */
					assert_true(addrindex__get(ix, (uint32_t)want, &e));
					assert_int_equal(got->start, e.start);
					assert_int_equal(got->size, e.size);
					assert_int_equal(got->load_ns, e.load_ns);
					assert_ptr_equal(got->tier, e.tier);
					assert_int_equal(got->source, e.source);
					hits++;
				}
				checked++;
			}
		}
	}
	assert_true(hits > checked / 3);
	addrindex__prefetch(NULL, &seed, 1);
	free(r);
	free(names);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_addrindex_disjoint, setup, teardown),
		cmocka_unit_test_setup_teardown(test_addrindex_invalid_ranges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_addrindex_largest_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_addrindex_block_smallest_wins, setup, teardown),
		cmocka_unit_test_setup_teardown(test_addrindex_code_inside_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_addrindex_reuse_by_time, setup, teardown),
		cmocka_unit_test_setup_teardown(test_addrindex_reuse_partial_overlap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_addrindex_rejit_keeps_tiers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_addrindex_hidden_entries_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_addrindex_deep_cover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_addrindex_tier_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_addrindex_settle_merges_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_addrindex_hint_outlived_by_new_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_addrindex_matches_brute_force, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
