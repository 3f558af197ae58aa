/* test_names.c: unit tests for perfmap/names.c on names written by .NET 10.0.12. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "perfmap.h"

static const char *method(const char *name)
{
	return name + perfmap__method_offset(name, strlen(name));
}

static void test_names_return_type_dropped(void **state)
{
	assert_string_equal(method("float64 [HotChain] Program::HotLoop(float64)"),
			    "[HotChain] Program::HotLoop(float64)");
	assert_string_equal(method("instance bool [System.Private.CoreLib] System.Threading.ThreadPoolWorkQueue::Dequeue(class System.Threading.ThreadPoolWorkQueueThreadLocals,bool&)"),
			    "[System.Private.CoreLib] System.Threading.ThreadPoolWorkQueue::Dequeue(class System.Threading.ThreadPoolWorkQueueThreadLocals,bool&)");
}

/* A return type from another assembly has its own bracket, without a space after it. */
static void test_names_return_type_with_assembly(void **state)
{
	assert_string_equal(method("instance valuetype [System.Runtime]System.TimeSpan [System.Diagnostics.DiagnosticSource] System.Diagnostics.Activity::get_Duration()"),
			    "[System.Diagnostics.DiagnosticSource] System.Diagnostics.Activity::get_Duration()");
}

static void test_names_generic_and_array(void **state)
{
	assert_string_equal(method("!0 [System.Private.CoreLib] System.RuntimeType+IGenericCacheEntry`1[System.__Canon]::CreateAndCache(class System.RuntimeType)"),
			    "[System.Private.CoreLib] System.RuntimeType+IGenericCacheEntry`1[System.__Canon]::CreateAndCache(class System.RuntimeType)");
	assert_string_equal(method("int32[] [App] App.X::Arr(int32[])"), "[App] App.X::Arr(int32[])");
	assert_string_equal(method("class [System.Runtime]System.Collections.Generic.List`1<int32> [App] A.B::C()"),
			    "[App] A.B::C()");
}

/* Names of another shape are kept whole. */
static void test_names_other_shapes_kept(void **state)
{
	assert_string_equal(method("stub<1> AllocateTemporaryEntryPoints<PreStubWorker>"),
			    "stub<1> AllocateTemporaryEntryPoints<PreStubWorker>");
	assert_string_equal(method("no colons [here] at all"), "no colons [here] at all");
	assert_string_equal(method("X::Y"), "X::Y");
	assert_string_equal(method("] ::"), "] ::");	/* unbalanced: kept */
	assert_int_equal(perfmap__method_offset("", 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_return_type_dropped),
		cmocka_unit_test(test_names_return_type_with_assembly),
		cmocka_unit_test(test_names_generic_and_array),
		cmocka_unit_test(test_names_other_shapes_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
