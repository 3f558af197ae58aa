/* test_idmap.c: unit tests for lib/idmap.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <errno.h>

#include <cmocka.h>

#include "idmap.h"

static void test_idmap_dense_ids_and_dedupe(void **state)
{
	struct idmap *m = idmap__new();
	int added;

	assert_non_null(m);
	assert_int_equal(idmap__id(m, 7, &added), 0);
	assert_true(added);
	assert_int_equal(idmap__id(m, 0, &added), 1);	/* 0 is a key like any other */
	assert_true(added);
	assert_int_equal(idmap__id(m, UINT64_MAX, &added), 2);
	assert_int_equal(idmap__id(m, 7, &added), 0);
	assert_false(added);
	assert_int_equal(idmap__count(m), 3);
	assert_int_equal(idmap__find(m, 0), 1);
	assert_int_equal(idmap__find(m, 8), -ENOENT);
	assert_true(idmap__key(m, 2) == UINT64_MAX);
	idmap__free(m);
}

/* Keys that share their home slot (the same low bits, a stride of the table's size apart) and
 * keys past many growths: every id stays stable, every key findable, the table at most 2/3 full. */
static void test_idmap_growth_and_collisions(void **state)
{
	struct idmap *m = idmap__new();
	const uint32_t n = 300000;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t k = i % 2 ? (uint64_t)i << 32 : 0x7f0000000000ull + i * 4096ull;

		assert_int_equal(idmap__id(m, k, NULL), i);
	}
	assert_int_equal(idmap__count(m), n);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t k = i % 2 ? (uint64_t)i << 32 : 0x7f0000000000ull + i * 4096ull;

		assert_int_equal(idmap__find(m, k), i);
		assert_true(idmap__key(m, i) == k);
	}
	assert_int_equal(idmap__find(m, 1), -ENOENT);
	/* 16-byte slots at most 2/3 full and 8 bytes a key: under 2 x (24 + 8) bytes a key */
	assert_true(idmap__bytes(m) >= (uint64_t)n * (16 * 3 / 2 + 8));
	assert_true(idmap__bytes(m) < (uint64_t)n * 2 * (24 + 8));
	idmap__free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idmap_dense_ids_and_dedupe),
		cmocka_unit_test(test_idmap_growth_and_collisions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
