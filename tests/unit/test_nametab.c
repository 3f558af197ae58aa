/* test_nametab.c: shared names (lib/nametab.c) and their use by perfmaps: one copy for every
 * holder, freed with the last reference, the table intact under heavy churn. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nametab.h"
#include "perfmap.h"

static void test_nametab_one_copy_per_string(void **state)
{
	struct nametab *t = nametab__new();
	struct nametab_stats st;
	const char *a, *b, *c;

	assert_non_null(t);
	a = nametab__get(t, "System.String::Concat", 21);
	b = nametab__get(t, "System.String::Concat(ignored)", 21);	/* same 21 bytes */
	c = nametab__get(t, "System.String::Join", 19);
	assert_non_null(a);
	assert_ptr_equal(a, b);
	assert_string_equal(a, "System.String::Concat");
	assert_ptr_not_equal(a, c);
	nametab__stats(t, &st);
	assert_int_equal(st.names, 2);
	assert_int_equal(st.refs, 3);
	nametab__put(t, a);
	nametab__stats(t, &st);
	assert_int_equal(st.names, 2);	/* b still holds it */
	assert_string_equal(b, "System.String::Concat");
	nametab__put(t, b);
	nametab__put(t, c);
	nametab__put(t, NULL);
	nametab__stats(t, &st);
	assert_int_equal(st.names, 0);
	assert_int_equal(st.refs, 0);
	nametab__free(t);
}

/* Random gets and puts against a reference count model: every get of a live string returns its
 * one copy, the table finds every live string after thousands of deletions (backward shift). */
static void test_nametab_churn_against_model(void **state)
{
	enum { KEYS = 3000, OPS = 200000 };
	struct nametab *t = nametab__new();
	const char **ptr = calloc(KEYS, sizeof(*ptr));
	uint32_t *refs = calloc(KEYS, sizeof(*refs));
	uint64_t rng = 42, live = 0;
	struct nametab_stats st;
	char key[32];

	assert_non_null(t);
	for (int op = 0; op < OPS; op++) {
		uint32_t k;
		int n;

		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		k = (uint32_t)(rng % KEYS);
		n = snprintf(key, sizeof(key), "k%u", k);
		if ((rng >> 40) & 1 || !refs[k]) {
			const char *p = nametab__get(t, key, (size_t)n);

			assert_non_null(p);
			assert_string_equal(p, key);
			if (refs[k])
				assert_ptr_equal(p, ptr[k]);
			if (!refs[k]++)
				live++;
			ptr[k] = p;
		} else {
			nametab__put(t, ptr[k]);
			if (!--refs[k])
				live--;
		}
	}
	nametab__stats(t, &st);
	assert_int_equal(st.names, live);
	for (uint32_t k = 0; k < KEYS; k++) {
		int n = snprintf(key, sizeof(key), "k%u", k);

		if (!refs[k])
			continue;
		assert_ptr_equal(nametab__get(t, key, (size_t)n), ptr[k]);	/* still found */
		refs[k]++;
		while (refs[k]--)
			nametab__put(t, ptr[k]);
	}
	nametab__stats(t, &st);
	assert_int_equal(st.names, 0);
	assert_int_equal(st.refs, 0);
	nametab__free(t);
	free(ptr);
	free(refs);
}

/* One holder takes one reference per distinct string, however often it asks. */
static void test_nameset_one_reference_per_holder(void **state)
{
	struct nameset a = { .tab = nametab__new() }, b = { .tab = a.tab };
	struct nametab_stats st;
	char key[32];

	assert_non_null(a.tab);
	for (int i = 0; i < 5000; i++) {
		int n = snprintf(key, sizeof(key), "m%d", i % 1000);

		assert_string_equal(nameset__get(&a, key, (size_t)n), key);
	}
	assert_ptr_equal(nameset__get(&b, "m7", 2), nameset__get(&a, "m7", 2));
	nametab__stats(a.tab, &st);
	assert_int_equal(st.names, 1000);
	assert_int_equal(st.refs, 1001);
	nameset__clear(&a);
	nametab__stats(b.tab, &st);
	assert_int_equal(st.names, 1);
	assert_string_equal(nameset__get(&b, "m7", 2), "m7");
	nameset__clear(&b);
	nametab__stats(b.tab, &st);
	assert_int_equal(st.names, 0);
	nametab__free(b.tab);
}

/* Two processes' perf maps with the framework's names: one copy of each name, gone with both. */
static void test_perfmaps_share_names(void **state)
{
	const char *map = "7f0000001000 40 [System.Private.CoreLib] System.String::Concat(string,string)[PreJIT]\n"
			  "7f0000002000 80 [System.Private.CoreLib] System.Text.UTF8Encoding::GetString(uint8[])[Optimized]\n";
	struct perfmap *p1 = perfmap__new(NULL), *p2 = perfmap__new(NULL);
	const struct perfmap_sym *s1, *s2;
	struct nametab_stats st;

	assert_non_null(p1);
	assert_non_null(p2);
	assert_int_equal(perfmap__feed_map(p1, map, strlen(map)), 0);
	assert_int_equal(perfmap__feed_map(p2, map, strlen(map)), 0);
	s1 = perfmap__lookup(p1, 0x7f0000001010, 0);
	s2 = perfmap__lookup(p2, 0x7f0000001010, 0);
	assert_non_null(s1);
	assert_non_null(s2);
	assert_ptr_equal(s1->name, s2->name);
	assert_ptr_equal(s1->tier, s2->tier);
	perfmap__shared_names(&st);
	assert_int_equal(st.names, 4);	/* two names, two tiers */
	assert_int_equal(st.refs, 8);
	perfmap__free(p1);
	s2 = perfmap__lookup(p2, 0x7f0000002010, 0);
	assert_non_null(s2);
	assert_string_equal(s2->tier, "Optimized");
	perfmap__shared_names(&st);
	assert_int_equal(st.refs, 4);
	perfmap__free(p2);
	perfmap__shared_names(&st);
	assert_int_equal(st.names, 0);
}

/* A perf map read again from the start: with the old one's ranges freed first and its names kept
 * until the new read is done, every name read again is the string already stored (no name is
 * freed and allocated again), the old one serves nothing in between, and the budget it held is
 * back before the new read takes its own. */
static void test_perfmap_read_again_keeps_names(void **state)
{
	const char *map = "7f0000001000 40 [System.Private.CoreLib] System.String::Concat(string,string)[PreJIT]\n"
			  "7f0000002000 80 [App] App.Old::Gone()[Optimized]\n";
	const char *again = "7f0000001000 40 [System.Private.CoreLib] System.String::Concat(string,string)[PreJIT]\n";
	struct perfmap *old = perfmap__new(NULL), *pm = perfmap__new(NULL);
	const char *name;
	struct nametab_stats st;

	assert_non_null(old);
	assert_non_null(pm);
	assert_int_equal(perfmap__feed_map(old, map, strlen(map)), 0);
	name = perfmap__lookup(old, 0x7f0000001010, 0)->name;
	perfmap__free_ranges(old);
	perfmap__shared_names(&st);
	assert_int_equal(st.names, 4);	/* the names stay, the ranges went */
	assert_int_equal(perfmap__feed_map(pm, again, strlen(again)), 0);
	assert_ptr_equal(perfmap__lookup(pm, 0x7f0000001010, 0)->name, name);
	perfmap__free(old);
	perfmap__shared_names(&st);
	assert_int_equal(st.names, 2);	/* App.Old::Gone and its tier went with the old one */
	assert_int_equal(st.refs, 2);
	assert_string_equal(perfmap__lookup(pm, 0x7f0000001010, 0)->name,
			    "[System.Private.CoreLib] System.String::Concat(string,string)");
	perfmap__free(pm);
	perfmap__shared_names(&st);
	assert_int_equal(st.names, 0);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nametab_one_copy_per_string),
		cmocka_unit_test(test_nametab_churn_against_model),
		cmocka_unit_test(test_nameset_one_reference_per_holder),
		cmocka_unit_test(test_perfmaps_share_names),
		cmocka_unit_test(test_perfmap_read_again_keeps_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
