/* test_util.c: unit tests for lib/util.c helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "util.h"

/* u32_decimal writes what printf's %u does, for the edges and a spread of values. */
static void test_util_u32_decimal(void **state)
{
	static const uint32_t edge[] = { 0, 1, 9, 10, 99, 100, 4242, 999999999, 1000000000,
					 UINT32_MAX - 1, UINT32_MAX };
	char got[11], want[16];

	(void)state;
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++) {
		snprintf(want, sizeof(want), "%u", edge[i]);
		assert_string_equal(u32_decimal(got, edge[i]), want);
	}
	for (uint64_t v = 1; v <= UINT32_MAX; v = v * 7 + 3) {
		snprintf(want, sizeof(want), "%u", (uint32_t)v);
		assert_ptr_equal(u32_decimal(got, (uint32_t)v), got);
		assert_string_equal(got, want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_util_u32_decimal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
