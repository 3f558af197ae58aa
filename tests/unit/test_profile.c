/* test_profile.c: interning, sample merging, table access and top functions of the in-memory profile. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "profile.h"
#include "testutil.h"

static int setup(void **state)
{
	struct profile_opts o = { .period_ns = 10000000, .time_ns = 1, .duration_ns = 2 };
	struct profile *p = profile__new(&o);

	if (!p)
		return -1;
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	profile__free(*state);
	return 0;
}

static uint32_t fn_loc(struct profile *p, const char *name, uint64_t addr)
{
	uint32_t f = profile__function(p, name, NULL, NULL);

	assert_int_not_equal(f, 0);
	return profile__location(p, 0, addr, f);
}

static void test_profile_new_defaults(void **state)
{
	struct profile *p = profile__new(NULL);

	(void)state;
	assert_non_null(p);
	assert_int_equal(profile__string_count(p), 1);
	assert_string_equal(profile__string(p, 0), "");
	assert_null(profile__string(p, 1));
	assert_int_equal(profile__sample_count(p), 0);
	assert_int_equal(profile__total(p), 0);
	assert_int_equal(profile__opts(p)->period_ns, 0);
	profile__free(p);
	profile__free(NULL);	/* NULL-safe */
}

static void test_profile_function_interning(void **state)
{
	struct profile *p = *state;
	struct pf_function_view fv;
	uint32_t a = profile__function(p, "Foo.Bar()", NULL, NULL);
	uint32_t b = profile__function(p, "Foo.Bar()", NULL, NULL);
	uint32_t c = profile__function(p, "Foo.Bar()", "_ZFoo", NULL);
	uint32_t d = profile__function(p, "Foo.Bar()", NULL, "foo.cs");
	uint32_t e = profile__function(p, "Foo.Baz()", NULL, NULL);
	char buf[32];

	assert_int_equal(a, 1);
	assert_int_equal(b, a);
	assert_true(c != a && d != a && e != a && c != d && d != e);
	assert_int_equal(profile__function_count(p), 4);
	assert_int_equal(profile__function_get(p, c, &fv), 0);
	assert_string_equal(fv.name, "Foo.Bar()");
	assert_string_equal(fv.system_name, "_ZFoo");
	assert_string_equal(fv.filename, "");
	assert_int_equal(profile__function_get(p, 0, &fv), -ENOENT);
	assert_int_equal(profile__function_get(p, 5, &fv), -ENOENT);

	/* the name is copied, not referenced */
	strcpy(buf, "Tmp.Name");
	a = profile__function(p, buf, NULL, NULL);
	strcpy(buf, "XXXXXXXX");
	assert_int_equal(profile__function_get(p, a, &fv), 0);
	assert_string_equal(fv.name, "Tmp.Name");
	assert_int_equal(profile__string_id(p, "Tmp.Name") != 0, 1);
	assert_int_equal(profile__string_id(p, "XXXXXXXX"), 0);
	assert_int_equal(profile__string_id(p, ""), 0);

	errno = 0;
	assert_int_equal(profile__function(p, NULL, NULL, NULL), 0);
	assert_int_equal(errno, EINVAL);
}

static void test_profile_mapping_dedupe_all_fields(void **state)
{
	struct profile *p = *state;
	struct pf_mapping base = { .start = 0x1000, .limit = 0x2000, .offset = 0x100,
				   .filename = "/lib/libc.so.6", .build_id = "abcd", .has_functions = 1,
				   .is_jit = 0 };
	struct pf_mapping m, got;
	uint32_t id0 = profile__mapping(p, &base), ids[8];
	size_t i, j;

	assert_int_equal(id0, 1);
	m = base;
	assert_int_equal(profile__mapping(p, &m), id0);
	for (i = 0; i < 7; i++) {	/* change one field at a time: every one must matter */
		m = base;
		switch (i) {
		case 0: m.start++; break;
		case 1: m.limit++; break;
		case 2: m.offset++; break;
		case 3: m.filename = "/lib/libm.so.6"; break;
		case 4: m.build_id = NULL; break;
		case 5: m.has_functions = 0; break;
		case 6: m.is_jit = 1; break;
		}
		ids[i] = profile__mapping(p, &m);
		assert_int_not_equal(ids[i], 0);
		assert_int_not_equal(ids[i], id0);
		for (j = 0; j < i; j++)
			assert_int_not_equal(ids[i], ids[j]);
		assert_int_equal(profile__mapping(p, &m), ids[i]);
	}
	assert_int_equal(profile__mapping_count(p), 8);
	assert_int_equal(profile__mapping_get(p, id0, &got), 0);
	assert_int_equal(got.start, 0x1000);
	assert_int_equal(got.limit, 0x2000);
	assert_int_equal(got.offset, 0x100);
	assert_string_equal(got.filename, "/lib/libc.so.6");
	assert_string_equal(got.build_id, "abcd");
	assert_int_equal(got.has_functions, 1);
	assert_int_equal(got.is_jit, 0);
	assert_int_equal(profile__mapping_get(p, ids[4], &got), 0);
	assert_null(got.build_id);
	assert_int_equal(profile__mapping_get(p, 9, &got), -ENOENT);
}

static void test_profile_location_dedupe_and_names(void **state)
{
	struct profile *p = *state;
	struct pf_mapping lib = { .start = 0x7f0000000000, .limit = 0x7f0000100000, .offset = 0x2000,
				  .filename = "/usr/lib/libcoreclr.so" };
	uint32_t mid = profile__mapping(p, &lib);
	uint32_t f = profile__function(p, "Main", NULL, NULL);
	uint32_t l1 = profile__location(p, mid, 0x7f0000000010, f);
	uint32_t l2 = profile__location(p, mid, 0x7f0000000010, f);
	uint32_t l3 = profile__location(p, mid, 0x7f0000000011, f);
	uint32_t l4 = profile__location(p, mid, 0x7f0000000010, 0);
	uint32_t l5 = profile__location(p, 0, 0x7f0000000010, 0);
	uint32_t l6 = profile__location(p, 0, 0xdead, f);
	struct pf_location_view lv;

	assert_int_equal(l1, 1);
	assert_int_equal(l2, l1);
	assert_int_equal(l3, 2);
	assert_int_equal(l4, 3);
	assert_int_equal(l5, 4);
	assert_int_equal(l6, 5);
	assert_int_equal(profile__location_count(p), 5);
	assert_string_equal(profile__location_name(p, l1), "Main");
	assert_string_equal(profile__location_name(p, l6), "Main");
	/* unsymbolized: mapping basename + file offset, or the bare address */
	assert_string_equal(profile__location_name(p, l4), "libcoreclr.so+0x2010");
	assert_string_equal(profile__location_name(p, l5), "0x7f0000000010");
	assert_null(profile__location_name(p, 0));
	assert_null(profile__location_name(p, 6));
	assert_int_equal(profile__location_get(p, l4, &lv), 0);
	assert_int_equal(lv.mapping_id, mid);
	assert_int_equal(lv.address, 0x7f0000000010);
	assert_int_equal(lv.function_id, 0);

	/* ids must exist */
	errno = 0;
	assert_int_equal(profile__location(p, 2, 0x10, f), 0);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(profile__location(p, mid, 0x10, 99), 0);
	assert_int_equal(profile__location_count(p), 5);
}

static void test_profile_add_merges_label_order(void **state)
{
	struct profile *p = *state;
	uint32_t a = fn_loc(p, "a", 1), b = fn_loc(p, "b", 2);
	uint32_t stack[] = { b, a };
	struct pf_label l1[] = { { "span_id", "s1", 0 }, { "trace_id", "t1", 0 } };
	struct pf_label l2[] = { { "trace_id", "t1", 0 }, { "span_id", "s1", 0 } };
	struct pf_sample_view v;

	assert_int_equal(profile__add(p, stack, 2, l1, 2, 3), 0);
	assert_int_equal(profile__add(p, stack, 2, l2, 2, 4), 0);
	assert_int_equal(profile__sample_count(p), 1);
	assert_int_equal(profile__total(p), 7);
	assert_int_equal(profile__sample(p, 0, &v), 0);
	assert_int_equal(v.count, 7);
	assert_int_equal(v.n_locs, 2);
	assert_int_equal(v.locs[0], b);	/* leaf first, as given */
	assert_int_equal(v.locs[1], a);
	assert_int_equal(v.n_labels, 2);
	assert_string_equal(profile__label(&v, "span_id"), "s1");
	assert_string_equal(profile__label(&v, "trace_id"), "t1");
	assert_null(profile__label(&v, "nope"));
	assert_int_equal(profile__sample(p, 1, &v), -ENOENT);
}

static void test_profile_add_separates_stacks_and_labels(void **state)
{
	struct profile *p = *state;
	uint32_t a = fn_loc(p, "a", 1), b = fn_loc(p, "b", 2);
	uint32_t s1[] = { b, a }, s2[] = { a, b }, s3[] = { b };
	struct pf_label x[] = { { "span_id", "s1", 0 } }, y[] = { { "span_id", "s2", 0 } };
	struct pf_label z[] = { { "span", "s1", 0 } };
	struct pf_sample_view v0, v1, v2;

	assert_int_equal(profile__add(p, s1, 2, x, 1, 1), 0);
	assert_int_equal(profile__add(p, s1, 2, y, 1, 1), 0);	/* other value */
	assert_int_equal(profile__add(p, s1, 2, z, 1, 1), 0);	/* other key */
	assert_int_equal(profile__add(p, s1, 2, NULL, 0, 1), 0);	/* no labels */
	assert_int_equal(profile__add(p, s2, 2, x, 1, 1), 0);	/* order matters in a stack */
	assert_int_equal(profile__add(p, s3, 1, x, 1, 1), 0);	/* a prefix is another stack */
	assert_int_equal(profile__add(p, NULL, 0, x, 1, 1), 0);	/* empty stack is allowed */
	assert_int_equal(profile__sample_count(p), 7);
	assert_int_equal(profile__total(p), 7);
	assert_int_equal(profile__sample(p, 0, &v0), 0);
	assert_int_equal(profile__sample(p, 1, &v1), 0);
	assert_int_equal(profile__sample(p, 4, &v2), 0);
	assert_int_equal(v0.stack_id, v1.stack_id);
	assert_int_not_equal(v0.stack_id, v2.stack_id);
	assert_int_equal(profile__sample(p, 3, &v1), 0);
	assert_int_equal(v1.n_labels, 0);
	assert_int_equal(profile__sample(p, 6, &v2), 0);
	assert_int_equal(v2.n_locs, 0);
}

static void test_profile_add_duplicate_labels_are_a_set(void **state)
{
	struct profile *p = *state;
	uint32_t a = fn_loc(p, "a", 1);
	struct pf_label dup[] = { { "k", "v", 0 }, { "k", "v", 0 }, { "k", "w", 0 } };
	struct pf_label one[] = { { "k", "w", 0 }, { "k", "v", 0 } };
	struct pf_sample_view v;

	assert_int_equal(profile__add(p, &a, 1, dup, 3, 1), 0);
	assert_int_equal(profile__add(p, &a, 1, one, 2, 1), 0);
	assert_int_equal(profile__sample_count(p), 1);
	assert_int_equal(profile__sample(p, 0, &v), 0);
	assert_int_equal(v.n_labels, 2);
	assert_int_equal(v.count, 2);
}

static void test_profile_add_many_labels(void **state)
{
	struct profile *p = *state;
	uint32_t a = fn_loc(p, "a", 1);
	struct pf_label fwd[40], rev[40];
	char keys[40][8];
	struct pf_sample_view v;
	int i;

	for (i = 0; i < 40; i++) {	/* more than the insertion-sort cut-off */
		snprintf(keys[i], sizeof(keys[i]), "k%02d", i);
		fwd[i].key = keys[i];
		fwd[i].value = keys[(i * 7) % 40];
		rev[39 - i] = fwd[i];
	}
	assert_int_equal(profile__add(p, &a, 1, fwd, 40, 1), 0);
	assert_int_equal(profile__add(p, &a, 1, rev, 40, 1), 0);
	assert_int_equal(profile__sample_count(p), 1);
	assert_int_equal(profile__sample(p, 0, &v), 0);
	assert_int_equal(v.n_labels, 40);
	assert_string_equal(profile__label(&v, "k03"), "k21");
}

static void test_profile_add_rejects_bad_input(void **state)
{
	struct profile *p = *state;
	uint32_t a = fn_loc(p, "a", 1);
	uint32_t bad[] = { a, 7 }, zero[] = { 0 };
	struct pf_label nokey[] = { { NULL, "v", 0 } }, emptykey[] = { { "", "v", 0 } };
	struct pf_label noval[] = { { "k", NULL, 0 } }, ok[] = { { "k", "", 0 } };

	assert_int_equal(profile__add(p, bad, 2, NULL, 0, 1), -EINVAL);
	assert_int_equal(profile__add(p, zero, 1, NULL, 0, 1), -EINVAL);
	assert_int_equal(profile__add(p, NULL, 1, NULL, 0, 1), -EINVAL);
	assert_int_equal(profile__add(p, &a, 1, NULL, 1, 1), -EINVAL);
	assert_int_equal(profile__add(p, &a, 1, nokey, 1, 1), -EINVAL);
	assert_int_equal(profile__add(p, &a, 1, emptykey, 1, 1), -EINVAL);
	assert_int_equal(profile__add(p, &a, 1, noval, 1, 1), -EINVAL);
	assert_int_equal(profile__add(NULL, &a, 1, NULL, 0, 1), -EINVAL);
	assert_int_equal(profile__sample_count(p), 0);
	assert_int_equal(profile__add(p, &a, 1, NULL, 0, 0), 0);	/* nothing to count */
	assert_int_equal(profile__sample_count(p), 0);
	assert_int_equal(profile__add(p, &a, 1, ok, 1, 2), 0);	/* an empty value is a value */
	assert_int_equal(profile__sample_count(p), 1);
	assert_int_equal(profile__total(p), 2);
}

static void test_profile_top_self_and_total(void **state)
{
	struct profile *p = *state;
	uint32_t m = fn_loc(p, "main", 1), w = fn_loc(p, "work", 2), r = fn_loc(p, "recurse", 3);
	uint32_t r2 = fn_loc(p, "recurse", 4);	/* same name, other address: one row */
	uint32_t s1[] = { w, m }, s2[] = { r, r2, r, m }, s3[] = { m };
	struct pf_top top[8];
	size_t n;

	assert_int_equal(profile__add(p, s1, 2, NULL, 0, 10), 0);
	assert_int_equal(profile__add(p, s2, 4, NULL, 0, 5), 0);
	assert_int_equal(profile__add(p, s3, 1, NULL, 0, 2), 0);
	n = profile__top(p, NULL, NULL, top, 8);
	assert_int_equal(n, 3);
	assert_string_equal(top[0].name, "work");
	assert_int_equal(top[0].self, 10);
	assert_int_equal(top[0].total, 10);
	assert_string_equal(top[1].name, "recurse");
	assert_int_equal(top[1].self, 5);
	assert_int_equal(top[1].total, 5);	/* recursion counts once per sample */
	assert_string_equal(top[2].name, "main");
	assert_int_equal(top[2].self, 2);
	assert_int_equal(top[2].total, 17);
	assert_int_equal(profile__top(p, NULL, NULL, top, 1), 1);
	assert_string_equal(top[0].name, "work");
	assert_int_equal(profile__top(p, NULL, NULL, top, 0), 0);
}

static void test_profile_top_filtered_by_label(void **state)
{
	struct profile *p = *state;
	uint32_t m = fn_loc(p, "main", 1), w = fn_loc(p, "work", 2), z = fn_loc(p, "zzz", 3);
	uint32_t s1[] = { w, m }, s2[] = { z, m };
	struct pf_label a[] = { { "span_name", "GET /a", 0 } }, b[] = { { "span_name", "GET /b", 0 } };
	struct pf_label other[] = { { "service", "x", 0 } };
	struct pf_top top[4];
	size_t n;

	assert_int_equal(profile__add(p, s1, 2, a, 1, 3), 0);
	assert_int_equal(profile__add(p, s2, 2, b, 1, 4), 0);
	assert_int_equal(profile__add(p, s2, 2, other, 1, 100), 0);
	n = profile__top(p, "span_name", "GET /a", top, 4);
	assert_int_equal(n, 2);
	assert_string_equal(top[0].name, "work");
	assert_int_equal(top[0].self, 3);
	assert_string_equal(top[1].name, "main");
	assert_int_equal(top[1].total, 3);
	n = profile__top(p, "span_name", NULL, top, 4);	/* any value of the key */
	assert_int_equal(n, 3);
	assert_string_equal(top[0].name, "zzz");
	assert_int_equal(top[0].self, 4);
	assert_int_equal(profile__top(p, "span_name", "GET /none", top, 4), 0);
	assert_int_equal(profile__top(p, "nokey", NULL, top, 4), 0);
	n = profile__top(p, NULL, NULL, top, 4);
	assert_string_equal(top[0].name, "zzz");
	assert_int_equal(top[0].self, 104);
}

/* Many distinct strings and stacks: the tables must grow and keep every id stable. */
/* Off-CPU time beside the counts: top functions by either, only over samples that have it. */
static void test_profile_off_cpu_values_and_top(void **state)
{
	struct profile_opts o = { .period_ns = 1, .off_cpu = 1 };
	struct profile *p = profile__new(&o);
	uint32_t busy, wait;
	struct pf_top top[4];
	struct pf_sample_view v;

	(void)state;
	assert_non_null(p);
	busy = fn_loc(p, "Busy", 0x10);
	wait = fn_loc(p, "Wait", 0x20);
	assert_int_equal(profile__add(p, &busy, 1, NULL, 0, 5), 0);
	assert_int_equal(profile__add_values(p, &wait, 1, NULL, 0, 0, 9000), 0);
	assert_int_equal(profile__add_values(p, &wait, 1, NULL, 0, 1, 1000), 0);
	assert_int_equal(profile__sample_count(p), 2);
	assert_int_equal(profile__sample(p, 1, &v), 0);
	assert_int_equal(v.count, 1);
	assert_int_equal(v.off_ns, 10000);
	assert_int_equal(profile__shown_value(p, &v), 1);

	assert_int_equal(profile__top(p, NULL, NULL, top, 4), 2);	/* by samples */
	assert_string_equal(top[0].name, "Busy");
	assert_int_equal(top[0].self, 5);
	/* by off-CPU ns: Busy has none and is not listed (a zero must not count as a first sight) */
	assert_int_equal(profile__top_values(p, NULL, NULL, 1, top, 4), 1);
	assert_string_equal(top[0].name, "Wait");
	assert_int_equal(top[0].self, 10000);
	assert_int_equal(top[0].total, 10000);
	profile__free(p);
}

static void test_profile_large_tables(void **state)
{
	struct profile *p = *state;
	enum { N = 100000 };
	uint32_t *locs = malloc(N * sizeof(*locs));
	char name[32];
	uint32_t i, stack[3];
	struct pf_sample_view v;

	assert_non_null(locs);
	for (i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "fn_%u", i);
		locs[i] = fn_loc(p, name, 0x1000 + i);
		assert_int_equal(locs[i], i + 1);
	}
	for (i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "fn_%u", i);
		assert_int_equal(profile__function(p, name, NULL, NULL), i + 1);
		assert_int_equal(profile__location(p, 0, 0x1000 + i, i + 1), locs[i]);
	}
	for (i = 0; i < N; i++) {
		stack[0] = locs[i];
		stack[1] = locs[(i * 31) % N];
		stack[2] = locs[0];
		assert_int_equal(profile__add(p, stack, 3, NULL, 0, 1), 0);
		assert_int_equal(profile__add(p, stack, 3, NULL, 0, 1), 0);
	}
	assert_int_equal(profile__sample_count(p), N);
	assert_int_equal(profile__total(p), 2 * N);
	assert_int_equal(profile__sample(p, N - 1, &v), 0);
	assert_int_equal(v.count, 2);
	assert_int_equal(v.locs[0], locs[N - 1]);
	free(locs);
}

/* Many adds over shared stacks and labels: every one counted, samples merged (the cost per add is
 * not asserted: speed is for benchmarks). */
static void test_profile_add_many(void **state)
{
	struct profile *p = *state;
	enum { FUNCS = 2000, STACKS = 1000, DEPTH = 32, SPANS = 200, OPS = 200000 };
	uint32_t (*stacks)[DEPTH] = malloc(sizeof(uint32_t[STACKS][DEPTH]));
	char name[64], spans[SPANS][24], traces[SPANS][40];
	uint32_t i, j, seed = 12345;

	assert_non_null(stacks);
	for (i = 0; i < FUNCS; i++) {
		snprintf(name, sizeof(name), "instance void [App] App.Ns.Class%u::Method%u()", i / 10, i);
		assert_int_equal(fn_loc(p, name, 0x10000 + 16 * i), i + 1);
	}
	for (i = 0; i < STACKS; i++) {
		for (j = 0; j < DEPTH; j++) {
			seed = seed * 1103515245 + 12345;
			stacks[i][j] = 1 + (seed >> 8) % FUNCS;
		}
	}
	for (i = 0; i < SPANS; i++) {
		snprintf(spans[i], sizeof(spans[i]), "%016x", i * 2654435761u);
		snprintf(traces[i], sizeof(traces[i]), "%016x%016x", i, i * 40503u);
	}
	for (i = 0; i < OPS; i++) {
		uint32_t s = (i * 7919) % STACKS, sp = (i * 104729) % SPANS;
		struct pf_label l[3] = { { "span_id", spans[sp], 0 }, { "trace_id", traces[sp], 0 },
					 { "span_name", "GET /api/orders", 0 } };

		assert_int_equal(profile__add(p, stacks[s], DEPTH, l, 3, 1), 0);
	}
	assert_int_equal(profile__total(p), OPS);
	assert_true(profile__sample_count(p) <= (size_t)STACKS * SPANS);
	free(stacks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile_new_defaults),
		cmocka_unit_test_setup_teardown(test_profile_function_interning, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profile_mapping_dedupe_all_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profile_location_dedupe_and_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profile_add_merges_label_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profile_add_separates_stacks_and_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profile_add_duplicate_labels_are_a_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profile_add_many_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profile_add_rejects_bad_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profile_top_self_and_total, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profile_top_filtered_by_label, setup, teardown),
		cmocka_unit_test(test_profile_off_cpu_values_and_top),
		cmocka_unit_test_setup_teardown(test_profile_large_tables, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profile_add_many, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
