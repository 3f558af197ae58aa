/* test_intern.c: unit tests for user/intern.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <errno.h>

#include <cmocka.h>

#include "intern.h"

static void test_intern_dense_ids_and_dedupe(void **state)
{
	struct intern *in = intern__new();
	int added;

	assert_non_null(in);
	assert_int_equal(intern__id(in, "a", 1, &added), 0);
	assert_true(added);
	assert_int_equal(intern__id(in, "bb", 2, &added), 1);
	assert_int_equal(intern__id(in, "a", 1, &added), 0);
	assert_false(added);
	assert_int_equal(intern__count(in), 2);
	assert_int_equal(intern__find(in, "bb", 2), 1);
	assert_int_equal(intern__find(in, "b", 1), -ENOENT);
	intern__free(in);
}

static void test_intern_binary_and_empty_keys(void **state)
{
	struct intern *in = intern__new();
	const char k1[] = { 0, 1, 0 }, k2[] = { 0, 1 };
	size_t len;

	assert_int_equal(intern__id(in, k1, sizeof(k1), NULL), 0);
	assert_int_equal(intern__id(in, k2, sizeof(k2), NULL), 1);	/* a prefix is another key */
	assert_int_equal(intern__id(in, "", 0, NULL), 2);
	assert_int_equal(intern__id(in, "", 0, NULL), 2);
	assert_memory_equal(intern__key(in, 0, &len), k1, sizeof(k1));
	assert_int_equal(len, 3);
	intern__key(in, 2, &len);
	assert_int_equal(len, 0);
	assert_null(intern__key(in, 3, NULL));
	intern__free(in);
}

/* Many keys: the table grows, every id stays stable, every key stays readable. */
static void test_intern_growth_keeps_ids_and_bytes(void **state)
{
	struct intern *in = intern__new();
	char buf[64];
	size_t len;

	for (int i = 0; i < 200000; i++) {
		int n = snprintf(buf, sizeof(buf), "key-%d", i);

		assert_int_equal(intern__id(in, buf, n, NULL), i);
	}
	for (int i = 0; i < 200000; i += 997) {
		int n = snprintf(buf, sizeof(buf), "key-%d", i);
		const char *k = intern__key(in, i, &len);

		assert_int_equal(len, n);
		assert_memory_equal(k, buf, n);
		assert_int_equal(intern__find(in, buf, n), i);
	}
	intern__free(in);
}

/* A key larger than an arena chunk gets a chunk of its own. */
static void test_intern_huge_key(void **state)
{
	struct intern *in = intern__new();
	static char big[3 << 20];
	size_t len;

	memset(big, 'x', sizeof(big));
	assert_int_equal(intern__id(in, "small", 5, NULL), 0);
	assert_int_equal(intern__id(in, big, sizeof(big), NULL), 1);
	assert_int_equal(intern__id(in, "after", 5, NULL), 2);
	assert_memory_equal(intern__key(in, 1, &len), big, sizeof(big));
	assert_int_equal(len, sizeof(big));
	assert_memory_equal(intern__key(in, 0, NULL), "small", 5);
	assert_memory_equal(intern__key(in, 2, NULL), "after", 5);
	intern__free(in);
}

static void test_intern_free_null(void **state)
{
	intern__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_intern_dense_ids_and_dedupe),
		cmocka_unit_test(test_intern_binary_and_empty_keys),
		cmocka_unit_test(test_intern_growth_keeps_ids_and_bytes),
		cmocka_unit_test(test_intern_huge_key),
		cmocka_unit_test(test_intern_free_null),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
