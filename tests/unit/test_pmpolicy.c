/* test_pmpolicy.c: the decisions that keep a pod's perf map files bounded (pmpolicy.h): a map we
 * turned on past the cap is started afresh, one the user turned on is only warned about, an idle
 * process's perf maps go off and come back on at its next sample. State and time are made up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pmpolicy.h"

#define S 1000000000ull
#define MiB (1ull << 20)

static const struct pmpolicy_cfg cfg = { .max_bytes = 32 * MiB, .idle_ns = 3600 * S };

/* A process we turned perf maps on in, sampled a second ago, its map under the cap. */
static struct pmpolicy_proc ours(void)
{
	return (struct pmpolicy_proc){ .ours = 1, .bytes = 1 * MiB, .last_sample_ns = 999 * S };
}

static void test_pmpolicy_under_cap_nothing(void **state)
{
	struct pmpolicy_proc p = ours();

	(void)state;
	assert_int_equal(pmpolicy__decide(&cfg, &p, 1000 * S), PMPOLICY_NONE);
	p.bytes = 32 * MiB;	/* at the cap is not past it */
	assert_int_equal(pmpolicy__decide(&cfg, &p, 1000 * S), PMPOLICY_NONE);
}

static void test_pmpolicy_cap_passed_restarts(void **state)
{
	struct pmpolicy_proc p = ours();

	(void)state;
	p.bytes = 32 * MiB + 1;
	assert_int_equal(pmpolicy__decide(&cfg, &p, 1000 * S), PMPOLICY_RESTART);
	/* A talk out: decided again when it ends. */
	p.busy = 1;
	assert_int_equal(pmpolicy__decide(&cfg, &p, 1000 * S), PMPOLICY_NONE);
}

static void test_pmpolicy_no_cap_no_restart(void **state)
{
	struct pmpolicy_cfg c = cfg;
	struct pmpolicy_proc p = ours();

	(void)state;
	c.max_bytes = 0;
	p.bytes = 1ull << 40;
	assert_int_equal(pmpolicy__decide(&c, &p, 1000 * S), PMPOLICY_NONE);
}

static void test_pmpolicy_live_code_near_cap_not_restarted_again(void **state)
{
	struct pmpolicy_proc p = ours();

	(void)state;
	/* The last start afresh left 20 MiB of live methods: past the cap at 33 MiB, but a restart
	 * would win back little; at twice that it pays again. */
	p.base_bytes = 20 * MiB;
	p.bytes = 33 * MiB;
	assert_int_equal(pmpolicy__decide(&cfg, &p, 1000 * S), PMPOLICY_NONE);
	p.bytes = 40 * MiB;
	assert_int_equal(pmpolicy__decide(&cfg, &p, 1000 * S), PMPOLICY_RESTART);
}

static void test_pmpolicy_only_maps_we_turned_on(void **state)
{
	struct pmpolicy_proc p = ours();

	(void)state;
	p.ours = 0;
	p.bytes = 64 * MiB;
	assert_int_equal(pmpolicy__decide(&cfg, &p, 1000 * S), PMPOLICY_WARN);
	p.warned = 1;	/* once */
	assert_int_equal(pmpolicy__decide(&cfg, &p, 1000 * S), PMPOLICY_NONE);
	/* Nor turned off when idle: the user's choice. */
	p.warned = 0;
	p.bytes = 1 * MiB;
	assert_int_equal(pmpolicy__decide(&cfg, &p, 999 * S + 7200 * S), PMPOLICY_NONE);
}

static void test_pmpolicy_idle_turns_off(void **state)
{
	struct pmpolicy_proc p = ours();

	(void)state;
	assert_int_equal(pmpolicy__decide(&cfg, &p, 999 * S + 3599 * S), PMPOLICY_NONE);
	assert_int_equal(pmpolicy__decide(&cfg, &p, 999 * S + 3600 * S), PMPOLICY_OFF);
	/* Idle and past the cap: off, not started afresh. */
	p.bytes = 64 * MiB;
	assert_int_equal(pmpolicy__decide(&cfg, &p, 999 * S + 3600 * S), PMPOLICY_OFF);
	/* Never sampled (perf maps are turned on only in sampled processes): no idea, left on. */
	p.last_sample_ns = 0;
	p.bytes = 1 * MiB;
	assert_int_equal(pmpolicy__decide(&cfg, &p, 999 * S + 3600 * S), PMPOLICY_NONE);
}

static void test_pmpolicy_idle_off_when_disabled(void **state)
{
	struct pmpolicy_cfg c = cfg;
	struct pmpolicy_proc p = ours();

	(void)state;
	c.idle_ns = 0;
	assert_int_equal(pmpolicy__decide(&c, &p, 999 * S + 100000 * S), PMPOLICY_NONE);
}

static void test_pmpolicy_sampled_again_turns_on(void **state)
{
	struct pmpolicy_proc p = ours();

	(void)state;
	p.ours = 0;	/* turned off: nothing of ours is on */
	p.off_idle = 1;
	p.bytes = 0;
	p.off_ns = 999 * S + 3600 * S;
	/* Still unsampled: stays off, however long. */
	assert_int_equal(pmpolicy__decide(&cfg, &p, 999 * S + 99999 * S), PMPOLICY_NONE);
	/* A sample after it went off: on again. */
	p.last_sample_ns = p.off_ns + 1;
	assert_int_equal(pmpolicy__decide(&cfg, &p, p.off_ns + 2 * S), PMPOLICY_ON);
	p.busy = 1;
	assert_int_equal(pmpolicy__decide(&cfg, &p, p.off_ns + 2 * S), PMPOLICY_NONE);
}

static void test_pmpolicy_action_names(void **state)
{
	(void)state;
	assert_string_equal(pmpolicy__action_name(PMPOLICY_RESTART), "restart");
	assert_string_equal(pmpolicy__action_name(PMPOLICY_OFF), "off");
	assert_string_equal(pmpolicy__action_name(PMPOLICY_ON), "on");
	assert_string_equal(pmpolicy__action_name((enum pmpolicy_action)99), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pmpolicy_under_cap_nothing),
		cmocka_unit_test(test_pmpolicy_cap_passed_restarts),
		cmocka_unit_test(test_pmpolicy_no_cap_no_restart),
		cmocka_unit_test(test_pmpolicy_live_code_near_cap_not_restarted_again),
		cmocka_unit_test(test_pmpolicy_only_maps_we_turned_on),
		cmocka_unit_test(test_pmpolicy_idle_turns_off),
		cmocka_unit_test(test_pmpolicy_idle_off_when_disabled),
		cmocka_unit_test(test_pmpolicy_sampled_again_turns_on),
		cmocka_unit_test(test_pmpolicy_action_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
