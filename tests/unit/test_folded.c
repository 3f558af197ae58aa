/* test_folded.c: folded-stack writer: exact output for small fixtures built in memory. */
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

static int setup(void **state)
{
	struct profile_opts o = { .period_ns = 1000000 };

	*state = profile__new(&o);
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	profile__free(*state);
	return 0;
}

static uint32_t loc(struct profile *p, const char *name, uint64_t addr)
{
	uint32_t f = profile__function(p, name, NULL, NULL);

	assert_int_not_equal(f, 0);
	return profile__location(p, 0, addr, f);
}

/* Runs the writer into memory; the caller frees the result. */
static char *folded(struct profile *p, const char *root_key)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(folded__write(p, f, root_key), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void expect(struct profile *p, const char *root_key, const char *want)
{
	char *got = folded(p, root_key);

	assert_string_equal(got, want);
	free(got);
}

static void test_folded_root_first_sorted(void **state)
{
	struct profile *p = *state;
	uint32_t m = loc(p, "main", 1), a = loc(p, "a", 2), b = loc(p, "b", 3);
	uint32_t s1[] = { b, a, m }, s2[] = { a, m }, s3[] = { m };

	assert_int_equal(profile__add(p, s1, 3, NULL, 0, 123), 0);
	assert_int_equal(profile__add(p, s3, 1, NULL, 0, 1), 0);
	assert_int_equal(profile__add(p, s2, 2, NULL, 0, 40), 0);
	expect(p, NULL,
	       "main 1\n"
	       "main;a 40\n"
	       "main;a;b 123\n");
}

static void test_folded_merges_samples_split_by_labels(void **state)
{
	struct profile *p = *state;
	uint32_t m = loc(p, "main", 1), a = loc(p, "a", 2);
	uint32_t s[] = { a, m };
	struct pf_label x[] = { { "span_name", "GET /x", 0 }, { "span_id", "1", 0 } };
	struct pf_label y[] = { { "span_name", "GET /x", 0 }, { "span_id", "2", 0 } };
	struct pf_label z[] = { { "span_name", "POST /y", 0 } };

	assert_int_equal(profile__add(p, s, 2, x, 2, 2), 0);
	assert_int_equal(profile__add(p, s, 2, y, 2, 3), 0);
	assert_int_equal(profile__add(p, s, 2, z, 1, 5), 0);
	assert_int_equal(profile__add(p, s, 2, NULL, 0, 7), 0);
	assert_int_equal(profile__sample_count(p), 4);
	expect(p, NULL, "main;a 17\n");
	/* with a root key: one root per value, unlabelled samples keep their plain stack */
	expect(p, "span_name",
	       "GET /x;main;a 5\n"
	       "POST /y;main;a 5\n"
	       "main;a 7\n");
	expect(p, "no_such_key", "main;a 17\n");
}

static void test_folded_sanitizes_names(void **state)
{
	struct profile *p = *state;
	uint32_t a = loc(p, "ns;Type::M(a;b)", 1), b = loc(p, "line\nbreak\rhere", 2);
	uint32_t s[] = { b, a };
	struct pf_label l[] = { { "span_name", "GET /a;b\n", 0 } };

	assert_int_equal(profile__add(p, s, 2, l, 1, 9), 0);
	expect(p, "span_name", "GET /a:b ;ns:Type::M(a:b);line break here 9\n");
}

static void test_folded_unsymbolized_and_empty(void **state)
{
	struct profile *p = *state;
	struct pf_mapping lib = { .start = 0x7f0000000000, .limit = 0x7f0000100000, .offset = 0x1000,
				  .filename = "/usr/lib/x86_64-linux-gnu/libc.so.6" };
	uint32_t mid = profile__mapping(p, &lib);
	uint32_t m = loc(p, "main", 1);
	uint32_t raw = profile__location(p, mid, 0x7f0000000234, 0);
	uint32_t anon = profile__location(p, 0, 0xdeadbeef, 0);
	uint32_t s1[] = { raw, m }, s2[] = { anon, m };

	assert_int_equal(profile__add(p, s1, 2, NULL, 0, 2), 0);
	assert_int_equal(profile__add(p, s2, 2, NULL, 0, 3), 0);
	assert_int_equal(profile__add(p, NULL, 0, NULL, 0, 4), 0);
	expect(p, NULL,
	       "[unknown] 4\n"
	       "main;0xdeadbeef 3\n"
	       "main;libc.so.6+0x1234 2\n");
}

static void test_folded_same_text_from_different_stacks(void **state)
{
	struct profile *p = *state;
	/* two addresses in one function: distinct locations, the same folded line */
	uint32_t m = loc(p, "main", 1), a1 = loc(p, "a", 2), a2 = loc(p, "a", 3);
	uint32_t s1[] = { a1, m }, s2[] = { a2, m };

	assert_int_equal(profile__add(p, s1, 2, NULL, 0, 1), 0);
	assert_int_equal(profile__add(p, s2, 2, NULL, 0, 2), 0);
	assert_int_equal(profile__sample_count(p), 2);
	expect(p, NULL, "main;a 3\n");
}

static void test_folded_empty_profile_and_errors(void **state)
{
	struct profile *p = *state;
	uint32_t m = loc(p, "main", 1);
	FILE *f;

	expect(p, NULL, "");
	assert_int_equal(folded__write(NULL, stdout, NULL), -EINVAL);
	assert_int_equal(folded__write(p, NULL, NULL), -EINVAL);
	assert_int_equal(profile__add(p, &m, 1, NULL, 0, 1), 0);
	f = fopen("/dev/full", "w");
	if (!f)
		skip();
	assert_int_equal(folded__write(p, f, NULL), -ENOSPC);
	fclose(f);
}

/* --value: CPU samples or off-CPU nanoseconds; a stack with none of the value shown has no line. */
static void test_folded_cpu_or_off_cpu(void **state)
{
	struct profile_opts o[2] = { { .off_cpu = 1 }, { .off_cpu = 1, .show_off_cpu = 1 } };

	(void)state;
	for (int i = 0; i < 2; i++) {
		struct profile *p = profile__new(&o[i]);
		uint32_t m = loc(p, "main", 1), run = loc(p, "run", 2), wait = loc(p, "wait", 3);
		uint32_t s1[2] = { run, m }, s2[2] = { wait, m };

		assert_int_equal(profile__add(p, s1, 2, NULL, 0, 4), 0);
		assert_int_equal(profile__add_values(p, s2, 2, NULL, 0, 0, 25000000), 0);
		assert_int_equal(profile__add_values(p, s1, 2, NULL, 0, 0, 1000), 0);
		expect(p, NULL, i ? "main;run 1000\nmain;wait 25000000\n" : "main;run 4\n");
		profile__free(p);
	}
}

static void test_folded_deep_stack(void **state)
{
	struct profile *p = *state;
	uint32_t locs[256];
	char name[16], *got, *want, *w;
	int i;

	for (i = 0; i < 256; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		locs[255 - i] = loc(p, name, (uint64_t)i + 1);	/* f0 is the root */
	}
	assert_int_equal(profile__add(p, locs, 256, NULL, 0, 42), 0);
	want = malloc(256 * 6 + 16);
	assert_non_null(want);
	for (i = 0, w = want; i < 256; i++)
		w += sprintf(w, "%sf%d", i ? ";" : "", i);
	strcpy(w, " 42\n");
	got = folded(p, NULL);
	assert_string_equal(got, want);
	free(got);
	free(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_folded_root_first_sorted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_folded_merges_samples_split_by_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_folded_sanitizes_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_folded_unsymbolized_and_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_folded_same_text_from_different_stacks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_folded_empty_profile_and_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_folded_deep_stack, setup, teardown),
		cmocka_unit_test(test_folded_cpu_or_off_cpu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
