/* test_procident.c: unit tests for user/process/procident.c, identity__of_proc: the service a
 * process of the table is named by in the agent's series and record's outputs, against a fake
 * /proc tree in a temp dir. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "identity.h"
#include "proctab.h"
#include "runtime.h"
#include "testutil.h"

struct ifx {
	char root[PATH_MAX];	/* the fake /proc */
	char pods[PATH_MAX];	/* an empty pods (and containers) dir: no Kubernetes */
	struct proctab *pt;
	struct identity_ctx *ids;
};

/* The real runtimes look at the fake mappings (none of theirs); nothing talks to a process. */
static const struct runtime_env env = { .runtimes = runtime_registry, .ctx_map_fd = -1 };

/* /proc/<pid> started at ticks, with its environ (NUL-separated, len bytes; NULL: none). */
static void fake_proc(struct ifx *f, int pid, unsigned long long ticks, const char *environ,
		      size_t len)
{
	char name[16], stat[512], rel[64];

	snprintf(name, sizeof(name), "%d", pid);
	snprintf(stat, sizeof(stat),
		 "%d (app) S 1 %d %d 0 -1 4194304 100 0 0 0 5 6 0 0 20 0 3 0 %llu 1000 "
		 "10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
		 pid, pid, pid, ticks);
	testutil__proc_file(f->root, name, "stat", stat);
	testutil__proc_file(f->root, name, "maps", "");
	if (environ) {
		snprintf(rel, sizeof(rel), "%d/environ", pid);
		testutil__write(f->root, rel, environ, len);
	}
}

#define ENVIRON(s) s, sizeof(s) - 1	/* a literal with its inner NULs */

static int isetup(void **state)
{
	struct ifx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_non_null(testutil__mkdtemp(f->root, sizeof(f->root)));
	assert_non_null(testutil__mkdtemp(f->pods, sizeof(f->pods)));
	f->pt = proctab__new(f->root, &env);
	f->ids = identity__new(f->pods, f->pods, "node1");
	assert_non_null(f->pt);
	assert_non_null(f->ids);
	*state = f;
	return 0;
}

static int iteardown(void **state)
{
	struct ifx *f = *state;

	for (uint32_t i = 0; i < proctab__count(f->pt); i++)
		if (proctab__at(f->pt, i))
			runtime__detach_all(proctab__at(f->pt, i));
	proctab__free(f->pt);
	identity__free(f->ids);
	testutil__rm_rf(f->root);
	testutil__rm_rf(f->pods);
	free(f);
	return 0;
}

/* OTEL_SERVICE_NAME in the process's environment names it, as its SDK would. */
static void test_procident_otel_service_name(void **state)
{
	struct ifx *f = *state;
	const struct proc_identity *id;
	struct proc *p;

	fake_proc(f, 4100, 100, ENVIRON("PATH=/bin\0OTEL_SERVICE_NAME=checkout\0HOME=/\0"));
	p = proctab__get(f->pt, 4100, 100, "dotnet");
	assert_non_null(p);
	id = identity__of_proc(f->ids, f->pt, p);
	assert_non_null(id);
	assert_string_equal(id->service_name, "checkout");
	assert_int_equal(id->source, IDENTITY_SRC_OTEL_SERVICE_NAME);
	assert_string_equal(id->node, "node1");
	assert_false(id->in_k8s);
}

/* service.name in OTEL_RESOURCE_ATTRIBUTES names it when OTEL_SERVICE_NAME is not set. */
static void test_procident_resource_attributes(void **state)
{
	struct ifx *f = *state;
	const struct proc_identity *id;

	fake_proc(f, 4101, 100,
		  ENVIRON("OTEL_RESOURCE_ATTRIBUTES=deployment.environment=prod,service.name=cart\0"));
	id = identity__of_proc(f->ids, f->pt, proctab__get(f->pt, 4101, 100, "dotnet"));
	assert_non_null(id);
	assert_string_equal(id->service_name, "cart");
	assert_int_equal(id->source, IDENTITY_SRC_OTEL_RESOURCE_ATTRIBUTES);
}

/* Nothing in the environment: the process's name. */
static void test_procident_falls_back_to_comm(void **state)
{
	struct ifx *f = *state;
	const struct proc_identity *id;

	fake_proc(f, 4102, 100, ENVIRON("PATH=/bin\0"));
	id = identity__of_proc(f->ids, f->pt, proctab__get(f->pt, 4102, 100, "worker"));
	assert_non_null(id);
	assert_string_equal(id->service_name, "worker");
	assert_int_equal(id->source, IDENTITY_SRC_COMM);
}

/* A process gone before it was named (no /proc/<pid>): its name from the sample, else
 * "unknown"; never NULL for want of information. */
static void test_procident_gone_process(void **state)
{
	struct ifx *f = *state;
	const struct proc_identity *id;
	struct proc *p;

	p = proctab__get(f->pt, 4103, 100, "ghost");
	assert_non_null(p);
	assert_true(p->dir_fd < 0);
	id = identity__of_proc(f->ids, f->pt, p);
	assert_non_null(id);
	assert_string_equal(id->service_name, "ghost");
	assert_int_equal(id->source, IDENTITY_SRC_COMM);
	p = proctab__get(f->pt, 4104, 100, "");
	assert_non_null(p);
	id = identity__of_proc(f->ids, f->pt, p);
	assert_non_null(id);
	assert_string_equal(id->service_name, "unknown");
}

/* Resolved once: the same identity for every later sample, whatever the environment becomes
 * (a process's environ does not change; reading it again per window would cost). */
static void test_procident_resolved_once(void **state)
{
	struct ifx *f = *state;
	const struct proc_identity *a, *b;
	struct proc *p;

	fake_proc(f, 4105, 100, ENVIRON("OTEL_SERVICE_NAME=first\0"));
	p = proctab__get(f->pt, 4105, 100, "dotnet");
	a = identity__of_proc(f->ids, f->pt, p);
	assert_non_null(a);
	assert_ptr_equal(p->ident, a);
	testutil__write(f->root, "4105/environ", ENVIRON("OTEL_SERVICE_NAME=second\0"));
	b = identity__of_proc(f->ids, f->pt, p);
	assert_ptr_equal(a, b);
	assert_string_equal(b->service_name, "first");
}

/* A launcher that exec'd is one service with the program it became: its samples (taken before
 * the exec) are named by the new program's entry, while the table holds it. */
static void test_procident_exec_named_by_new_program(void **state)
{
	struct ifx *f = *state;
	const struct proc_identity *before, *after;
	struct proc *a, *b;

	fake_proc(f, 4106, 100, ENVIRON("PATH=/bin\0"));
	a = proctab__get(f->pt, 4106, 100, "launcher");
	assert_non_null(a);
	b = proctab__exec(f->pt, a, "server", 5000);
	assert_non_null(b);
	before = identity__of_proc(f->ids, f->pt, a);
	after = identity__of_proc(f->ids, f->pt, b);
	assert_ptr_equal(before, after);
	assert_string_equal(before->service_name, "server");
	/* Without the table to look in, the old entry is named on its own. */
	assert_string_equal(identity__of_proc(f->ids, NULL, a)->service_name, "launcher");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_procident_otel_service_name, isetup, iteardown),
		cmocka_unit_test_setup_teardown(test_procident_resource_attributes, isetup, iteardown),
		cmocka_unit_test_setup_teardown(test_procident_falls_back_to_comm, isetup, iteardown),
		cmocka_unit_test_setup_teardown(test_procident_gone_process, isetup, iteardown),
		cmocka_unit_test_setup_teardown(test_procident_resolved_once, isetup, iteardown),
		cmocka_unit_test_setup_teardown(test_procident_exec_named_by_new_program, isetup,
						iteardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
