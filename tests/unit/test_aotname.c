/* test_aotname.c: unit tests for reading .NET names back from Native AOT symbols (symbols as
 * ILCompiler 10.0.12 wrote them in a PublishAot build of tests/apps/HotChain). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "aotname.h"

/* The binary's symbols a readback learns from (its module types name its assemblies). */
static const char *const binary[] = {
	"HotChain__Module___StartupCodeMain",
	"Internal_CompilerGenerated__Module___<DynamicInvoke>None<Bool__Char>",
	"S_P_CoreLib_System_SpanHelpers__IndexOf_0",
	"RhpNewFast",
	"_Z10RhFailFastv",
};

static struct aotnames *learned(void)
{
	struct aotnames *an = aotnames__new();

	assert_non_null(an);
	for (size_t i = 0; i < sizeof(binary) / sizeof(binary[0]); i++)
		aotnames__learn(an, binary[i]);
	return an;
}

static void expect(struct aotnames *an, const char *sym, int err, const char *name)
{
	char buf[512];
	int got = aotname__readback(an, sym, buf, sizeof(buf));

	if (got != err)
		fail_msg("%s: %d, want %d ('%s')", sym, got, err, buf);
	if (!err)
		assert_string_equal(buf, name);
	else
		assert_string_equal(buf, "");
}

/* Names whose assembly and type are unambiguous read back in the runtime's format. */
static void test_aotname_readback(void **state)
{
	struct aotnames *an = learned();

	(void)state;
	assert_true(aotnames__is_aot(an));
	expect(an, "HotChain_Program__HotLoop", 0, "[HotChain] Program::HotLoop");
	expect(an, "HotChain_Program___cctor", 0, "[HotChain] Program::.cctor");
	expect(an, "HotChain__Module___StartupCodeMain", 0, "[HotChain] <Module>::StartupCodeMain");
	expect(an, "S_P_CoreLib_System_Marvin__ComputeHash32_0", 0,
	       "[System.Private.CoreLib] System.Marvin::ComputeHash32_0");
	expect(an, "S_P_CoreLib_System_Collections_Generic_Dictionary_2<System___Canon__Int32>__FindValue", 0,
	       "[System.Private.CoreLib] System.Collections.Generic.Dictionary`2<System___Canon__Int32>::FindValue");
	expect(an, "S_P_CoreLib_System_SpanHelpers__BinarySearch_0<UInt16__UInt16>", 0,
	       "[System.Private.CoreLib] System.SpanHelpers::BinarySearch_0<UInt16__UInt16>");
	expect(an, "String__Concat_3", 0, "[System.Private.CoreLib] System.String::Concat_3");
	expect(an, "unbox_S_P_CoreLib_System_Nullable_1<Char>__GetHashCode", 0,
	       "[System.Private.CoreLib] System.Nullable`1<Char>::GetHashCode");
	/* an assembly found by the namespace that repeats its first segment */
	expect(an, "System_Console_System_ConsolePal__Write", 0, "[System.Console] System.ConsolePal::Write");
	aotnames__free(an);
}

/* Ambiguous names keep their symbol (-EILSEQ); C and C++ symbols are not managed (-ENOENT). */
static void test_aotname_uncertain(void **state)
{
	struct aotnames *an = learned();
	char small[8];

	(void)state;
	/* a lambda in "<>c": where the type ends is lost */
	expect(an, "HotChain_Program___c___StartSpan_b__2_0", -EILSEQ, NULL);
	/* an assembly neither learned nor repeated in its namespace */
	expect(an, "System_Console_Interop_Sys__Write", -EILSEQ, NULL);
	expect(an, "RhpNewFast", -ENOENT, NULL);
	expect(an, "_Z10RhFailFastv", -ENOENT, NULL);
	expect(an, "__GetGCStaticBase_S_P_CoreLib_System_Environment", -ENOENT, NULL);
	expect(an, "S_P_CoreLib_System_Action_2<Int32__Broken__Run", -ENOENT, NULL);
	assert_int_equal(aotname__readback(an, "HotChain_Program__HotLoop", small, sizeof(small)), -ENOSPC);
	assert_string_equal(small, "");
	aotnames__free(an);
	/* without CoreLib's methods the binary is no Native AOT one */
	an = aotnames__new();
	aotnames__learn(an, "HotChain_Program__HotLoop");
	assert_false(aotnames__is_aot(an));
	aotnames__free(an);
	aotnames__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aotname_readback),
		cmocka_unit_test(test_aotname_uncertain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
