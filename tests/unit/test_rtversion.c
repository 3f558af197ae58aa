/* test_rtversion.c: unit tests for perfmap/rtversion (the runtime's version from its own files,
 * and the gate that says which perf map hazards apply to it). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "rtversion.h"

/* The strings as the runtimes on this machine and in NuGet's runtime packs carry them. */
static const char V10_12[] = "@(#)Version 10.0.1226.42308 @Commit: 95017c711e6afc1085133d440e42b4bd78155701";
static const char V10_11[] = "@(#)Version 10.0.1126.37416 @Commit: e2f47b0110ed922f21a1522da67279133ce28f32";
static const char V8_31[] = "@(#)Version 8.0.3126.42015 @Commit: 1219a42122cf5190c7f512850557e38c422430dc";
static const char V9_20[] = "@(#)Version 9.0.2026.41315 @Commit: 3879076d9a06ce098d37c3882fb1845a6627335b";

static struct rtversion parse(const char *s)
{
	struct rtversion v;
	char buf[512];

	/* Inside other bytes, as in the runtime's .data. */
	memset(buf, 0, sizeof(buf));
	memcpy(buf + 100, "\x01\x02@(#)", 6);
	memcpy(buf + 200, s, strlen(s));
	assert_int_equal(rtversion__parse_sccsid(buf, sizeof(buf), &v), 0);
	return v;
}

static void test_rtversion_sccsid(void **state)
{
	struct rtversion v;

	(void)state;
	v = parse(V10_12);
	assert_int_equal(v.major, 10);
	assert_int_equal(v.minor, 0);
	assert_int_equal(v.patch, 12);
	assert_string_equal(v.text, "10.0.12");
	assert_string_equal(v.commit, "95017c711e6afc1085133d440e42b4bd78155701");
	/* Built 2026-08-23 (10.0.12 shipped 2026-09-08). */
	assert_int_equal(v.build_year, 2026);
	assert_int_equal(v.build_month, 8);
	assert_int_equal(v.build_day, 23);
	v = parse(V8_31);
	assert_string_equal(v.text, "8.0.31");
	v = parse(V9_20);
	assert_string_equal(v.text, "9.0.20");
	/* A first release (synthetic string): the third field is the build year alone. */
	v = parse("@(#)Version 10.0.25.52411 @Commit: 0123456789abcdef0123456789abcdef01234567");
	assert_string_equal(v.text, "10.0.0");
	assert_int_equal(v.build_year, 2025);
	assert_int_equal(v.build_month, 10);
	assert_int_equal(v.build_day, 24);
}

static void test_rtversion_sccsid_malformed(void **state)
{
	static const char *const bad[] = {
		"@(#)Version", "@(#)Version 10.0", "@(#)Version 10.0.1226", "@(#)Version x.0.1226.1",
		"@(#)Version 99999999999.0.1.1 @Commit: ab", "nothing here",
	};
	struct rtversion v;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(rtversion__parse_sccsid(bad[i], strlen(bad[i]), &v), -ENOENT);
	/* Cut off at the end of the buffer: not read past it. */
	assert_int_equal(rtversion__parse_sccsid(V10_12, 20, &v), -ENOENT);
	/* No commit: the version alone. */
	assert_int_equal(rtversion__parse_sccsid("@(#)Version 10.0.1226.42308 ", 28, &v), 0);
	assert_string_equal(v.text, "10.0.12");
	assert_string_equal(v.commit, "");
}

static struct rtgate gate_of(const char *s)
{
	struct rtversion v = parse(s);
	struct rtgate g;

	rtversion__gate(&v, &g);
	return g;
}

static struct rtgate gate_v(unsigned major, unsigned patch, unsigned y, unsigned m, unsigned d)
{
	struct rtversion v = { .major = major, .patch = patch, .build_year = y, .build_month = m,
			       .build_day = d };
	struct rtgate g;

	snprintf(v.text, sizeof(v.text), "%u.0.%u", major, patch);
	rtversion__gate(&v, &g);
	return g;
}

/* Every 10.0 release before the first proved fixed (10.0.11) has the deadlock: refused. */
static void test_rtversion_gate_deadlock_refused(void **state)
{
	struct rtgate g;

	(void)state;
	for (unsigned patch = 0; patch <= 10; patch++) {
		g = gate_v(10, patch, 2026, 1, 1);
		assert_false(g.may_enable);
		assert_true(g.hazards & RTHAZ_DEADLOCK_128401);
		assert_int_equal(g.withheld, RTWITHHELD_DEADLOCK);
	}
	g = gate_v(10, 5, 2026, 3, 1);
	assert_string_equal(g.reason, "perf maps not turned on: runtime 10.0.5 has a known deadlock "
			    "(dotnet/runtime#128401)");
	/* .NET 11 previews built before the fix reached main. */
	g = gate_v(11, 0, 2026, 5, 20);
	assert_false(g.may_enable);
	assert_true(g.hazards & RTHAZ_DEADLOCK_128401);
}

static void test_rtversion_gate_fixed_allowed(void **state)
{
	struct rtgate g;

	(void)state;
	g = gate_of(V10_11);
	assert_true(g.may_enable);
	assert_false(g.hazards & RTHAZ_DEADLOCK_128401);
	assert_int_equal(g.withheld, RTWITHHELD_NONE);
	g = gate_of(V10_12);
	assert_true(g.may_enable);
	assert_false(g.hazards & RTHAZ_DEADLOCK_128401);
	/* ... but its jitdump stops at the first stub block (fixed in 10.0.13). */
	assert_true(g.hazards & RTHAZ_JITDUMP_132935);
	assert_false(g.jitdump_ok);
	g = gate_v(10, 13, 2026, 10, 5);
	assert_true(g.may_enable);
	assert_true(g.jitdump_ok);
	assert_int_equal(g.hazards, 0);
	g = gate_v(11, 0, 2026, 10, 20);
	assert_true(g.may_enable);
	assert_int_equal(g.hazards, RTHAZ_LATE_NO_PERFMAP | RTHAZ_PERFMAP_BUFFERED);
	assert_true(g.late_jitdump_only);
	assert_false(gate_v(10, 13, 2026, 10, 5).late_jitdump_only);
}

/* Runtime 11 turned on late writes only the jitdump: JIT code is named from it (type 2), unless
 * that jitdump is known to stop early too (an 11.0 preview before the fix of #132935). */
static void test_rtversion_gate_11_late_jitdump(void **state)
{
	struct rtgate g;

	(void)state;
	g = gate_v(11, 2, 2027, 3, 1);
	assert_true(g.may_enable);
	assert_true(g.jitdump_ok);
	assert_true(g.late_jitdump_only);
	g = gate_v(11, 0, 2026, 1, 10);
	assert_true(g.hazards & RTHAZ_LATE_NO_PERFMAP);
	assert_false(g.jitdump_ok);
	assert_false(g.late_jitdump_only);
	assert_false(gate_of(V8_31).late_jitdump_only);
	assert_false(gate_of(V9_20).late_jitdump_only);
}

/* Runtime 11 writes its perf map in 8 KiB blocks: a jitdump beside it names the newest methods,
 * where the jitdump is whole; 8, 9 and 10 write each line at once. */
static void test_rtversion_gate_11_buffered_perfmap(void **state)
{
	struct rtgate g;

	(void)state;
	g = gate_v(11, 2, 2027, 3, 1);
	assert_true(g.hazards & RTHAZ_PERFMAP_BUFFERED);
	assert_true(g.jitdump_beside_perfmap);
	g = gate_v(11, 0, 2026, 1, 10);
	assert_true(g.hazards & RTHAZ_PERFMAP_BUFFERED);
	assert_false(g.jitdump_beside_perfmap);
	assert_false(gate_v(10, 13, 2026, 10, 5).jitdump_beside_perfmap);
	assert_false(gate_of(V8_31).jitdump_beside_perfmap);
	assert_false(gate_of(V9_20).jitdump_beside_perfmap);
	rtversion__gate(NULL, &g);
	assert_false(g.jitdump_beside_perfmap);
}

/* .NET 8 and 9 never had the stub logging behind either bug. */
static void test_rtversion_gate_8_9_allowed(void **state)
{
	struct rtgate g;

	(void)state;
	g = gate_of(V8_31);
	assert_true(g.may_enable);
	assert_true(g.jitdump_ok);
	assert_int_equal(g.hazards, 0);
	g = gate_of(V9_20);
	assert_true(g.may_enable);
	assert_int_equal(g.hazards, 0);
	assert_string_equal(g.reason, "");
}

static void test_rtversion_gate_unknown(void **state)
{
	struct rtgate g;

	(void)state;
	rtversion__gate(NULL, &g);
	assert_false(g.may_enable);
	assert_true(g.hazards & RTHAZ_UNKNOWN);
	assert_int_equal(g.withheld, RTWITHHELD_UNKNOWN);
	assert_non_null(strstr(g.reason, "perf maps not turned on: runtime version unknown"));
	/* An 11.0 build without a build date cannot be placed either side of the fix. */
	g = gate_v(11, 0, 0, 0, 0);
	assert_false(g.may_enable);
	assert_true(g.hazards & RTHAZ_DEADLOCK_128401);
}

/* Reading it from a file: the writable segments of an ELF file, or the start of anything else. */
static void test_rtversion_read_fd(void **state)
{
	char path[] = "/tmp/test_rtversion.XXXXXX";
	unsigned char elf[8192];
	struct rtversion v;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	memset(elf, 0, sizeof(elf));
	memcpy(elf + 3000, V10_12, sizeof(V10_12));
	assert_int_equal(pwrite(fd, elf, sizeof(elf), 0), (ssize_t)sizeof(elf));
	assert_int_equal(rtversion__read_fd(fd, &v), 0);
	assert_string_equal(v.text, "10.0.12");
	/* Nothing in it. */
	memset(elf, 0, sizeof(elf));
	assert_int_equal(pwrite(fd, elf, sizeof(elf), 0), (ssize_t)sizeof(elf));
	assert_int_equal(rtversion__read_fd(fd, &v), -ENOENT);
	close(fd);
}

/* The runtime installed here, read through its ELF segments. */
static void test_rtversion_read_installed(void **state)
{
	static const char *const dirs[] = { "/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.12",
					    "/usr/lib/dotnet/shared/Microsoft.NETCore.App/10.0.12" };
	struct rtversion v;
	char path[256];
	int fd = -1;

	(void)state;
	for (size_t i = 0; i < 2 && fd < 0; i++) {
		snprintf(path, sizeof(path), "%s/libcoreclr.so", dirs[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		skip();
	assert_int_equal(rtversion__read_fd(fd, &v), 0);
	assert_string_equal(v.text, "10.0.12");
	assert_string_equal(v.commit, "95017c711e6afc1085133d440e42b4bd78155701");
	close(fd);
}

/* record -- COMMAND: a self-contained app's own runtime decides. */
static void test_rtversion_command_self_contained(void **state)
{
	char dir[] = "/tmp/test_rtversion_app.XXXXXX", path[256], why[512];
	static const char v10_5[] = "@(#)Version 10.0.526.12345 @Commit: 0123456789abcdef0123456789abcdef01234567";
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/app", dir);
	assert_non_null(f = fopen(path, "w"));
	fclose(f);
	chmod(path, 0755);
	snprintf(path, sizeof(path), "%s/libcoreclr.so", dir);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "%s", v10_5);
	fclose(f);
	snprintf(path, sizeof(path), "%s/app", dir);
	assert_int_equal(rtversion__command_may_enable(path, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "runtime 10.0.5 has a known deadlock"));
	snprintf(path, sizeof(path), "%s/libcoreclr.so", dir);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "%s", V10_12);
	fclose(f);
	snprintf(path, sizeof(path), "%s/app", dir);
	assert_int_equal(rtversion__command_may_enable(path, why, sizeof(why)), 1);
	unlink(path);
	snprintf(path, sizeof(path), "%s/libcoreclr.so", dir);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rtversion_sccsid),
		cmocka_unit_test(test_rtversion_sccsid_malformed),
		cmocka_unit_test(test_rtversion_gate_deadlock_refused),
		cmocka_unit_test(test_rtversion_gate_fixed_allowed),
		cmocka_unit_test(test_rtversion_gate_11_late_jitdump),
		cmocka_unit_test(test_rtversion_gate_11_buffered_perfmap),
		cmocka_unit_test(test_rtversion_gate_8_9_allowed),
		cmocka_unit_test(test_rtversion_gate_unknown),
		cmocka_unit_test(test_rtversion_read_fd),
		cmocka_unit_test(test_rtversion_read_installed),
		cmocka_unit_test(test_rtversion_command_self_contained),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
