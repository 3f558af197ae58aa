/* test_proctab.c: unit tests for user/proctab.c: maps parsing and the (pid, start) identity,
 * against a fake /proc tree in a temp dir. */
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

#include "proctab.h"
#include "testutil.h"

static const char maps_text[] =
	"55d0c0a00000-55d0c0a01000 r--p 00000000 fd:01 1234   /usr/bin/app with space\n"
	"55d0c0a01000-55d0c0a02000 r-xp 00001000 fd:01 1234   /usr/bin/app with space\n"
	"7f0000000000-7f0000001000 r-xp 00000000 00:01 99     /memfd:doublemapper (deleted)\n"
	"this line is garbage\n"
	"7f0000100000-7f0000200000 r-xp 00026000 fe:00 332096 /usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.12/libcoreclr.so\n"
	"7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0      [vdso]\n"
	"7f0000300000-7f0000200000 r-xp 00000000 00:00 0      \n"	/* end < start */
	"7fff00000000-7fff00001000 rw-p 00000000 00:00 0 ";	/* no newline, anonymous */

static void test_proctab_maps_parse(void **state)
{
	struct vma *v;
	size_t n, bad;

	assert_int_equal(maps__parse(maps_text, strlen(maps_text), &v, &n, &bad), 0);
	assert_int_equal(n, 6);
	assert_int_equal(bad, 2);
	assert_int_equal(v[0].start, 0x55d0c0a00000);
	assert_string_equal(v[1].path, "/usr/bin/app with space");
	assert_int_equal(v[1].pgoff, 0x1000);
	assert_true(v[1].exec);
	assert_false(v[0].exec);
	assert_int_equal(v[1].kind, VMA_FILE);
	assert_int_equal(v[1].dev, (0xfdull << 32) | 1);
	assert_int_equal(v[1].ino, 1234);
	assert_int_equal(v[2].kind, VMA_MEMFD);
	assert_int_equal(v[3].kind, VMA_FILE);
	assert_int_equal(v[4].start, 0x7ffd00000000);	/* sorted by start */
	assert_int_equal(v[4].kind, VMA_VDSO);
	assert_int_equal(v[5].kind, VMA_ANON);
	assert_string_equal(v[5].path, "");
	maps__free(v, n);
}

/* A file's segments share one copy of its path; an anonymous mapping between them, or another
 * file, does not make a segment take the wrong path. */
static void test_proctab_maps_parse_shared_paths(void **state)
{
	static const char text[] =
		"1000-2000 r--p 00000000 fd:01 7 /lib/a.so\n"
		"2000-3000 r-xp 00001000 fd:01 7 /lib/a.so\n"
		"3000-4000 rw-p 00000000 00:00 0 \n"
		"4000-5000 rw-p 00003000 fd:01 7 /lib/a.so\n"
		"5000-6000 r--p 00000000 fd:01 8 /lib/a.so.1\n"
		"6000-7000 r--p 00000000 fd:01 9 /lib/a.s\n"
		"7000-8000 r--p 00000000 fd:01 7 /lib/a.so\n";
	struct vma *v;
	size_t n, bad;

	(void)state;
	assert_int_equal(maps__parse(text, strlen(text), &v, &n, &bad), 0);
	assert_int_equal(n, 7);
	assert_ptr_equal(v[0].path, v[1].path);
	assert_string_equal(v[1].path, "/lib/a.so");
	assert_string_equal(v[2].path, "");
	assert_int_equal(v[2].kind, VMA_ANON);
	assert_string_equal(v[3].path, "/lib/a.so");
	assert_ptr_equal(v[3].path, v[1].path);	/* the anonymous mapping between: still shared */
	assert_string_equal(v[4].path, "/lib/a.so.1");
	assert_string_equal(v[5].path, "/lib/a.s");
	assert_string_equal(v[6].path, "/lib/a.so");
	for (size_t i = 0; i < n; i++)
		assert_int_equal(v[i].kind, i == 2 ? VMA_ANON : VMA_FILE);
	maps__free(v, n);
}

static void test_proctab_maps_parse_empty_and_huge_numbers(void **state)
{
	const char over[] = "1ffffffffffffffff-2 r-xp 0 0:0 0 x\n";
	struct vma *v;
	size_t n, bad;

	assert_int_equal(maps__parse("", 0, &v, &n, &bad), 0);
	assert_int_equal(n, 0);
	maps__free(v, n);
	assert_int_equal(maps__parse(over, strlen(over), &v, &n, &bad), 0);
	assert_int_equal(n, 0);
	assert_int_equal(bad, 1);
	maps__free(v, n);
}

/* ---- a fake /proc ----------------------------------------------------------------------- */

static char root[64];

/* A process dir whose stat says it started at `ticks` (field 22); comm has spaces and ')'. */
static void fake_proc(int pid, unsigned long long ticks, const char *maps)
{
	char name[16], stat[512];

	snprintf(name, sizeof(name), "%d", pid);
	snprintf(stat, sizeof(stat),
		 "%d (my (odd) app) S 1 %d %d 0 -1 4194304 100 0 0 0 5 6 0 0 20 0 3 0 %llu 1000 "
		 "10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
		 pid, pid, pid, ticks);
	testutil__proc_file(root, name, "stat", stat);
	testutil__proc_file(root, name, "maps", maps);
}

static int setup(void **state)
{
	return testutil__mkdtemp(root, sizeof(root)) ? 0 : -1;
}

static int teardown(void **state)
{
	return testutil__rm_rf(root);
}

/* The real runtimes detect themselves from the fake mappings; nothing talks to a process. */
static const struct runtime_env env = { .runtimes = runtime_registry, .ctx_map_fd = -1 };

static void free_table(struct proctab *pt)
{
	for (uint32_t i = 0; i < proctab__count(pt); i++)
		if (proctab__at(pt, i))
			runtime__detach_all(proctab__at(pt, i));
	proctab__free(pt);
}

static void test_proctab_identity_and_maps(void **state)
{
	struct proctab *pt = proctab__new(root, &env);
	struct proc *p, *q;
	const struct vma *v;

	fake_proc(4242, 12345, maps_text);
	p = proctab__get(pt, 4242, 12345, "app");
	assert_non_null(p);
	assert_false(p->gone);
	assert_true(runtime__has(p, RT_DOTNET));
	assert_int_equal(p->nvmas, 6);
	v = proc__vma(p, 0x55d0c0a01010);
	assert_non_null(v);
	assert_string_equal(v->path, "/usr/bin/app with space");
	assert_null(proc__vma(p, 0x1000));
	/* The same process again: the same entry. */
	q = proctab__get(pt, 4242, 12345, "app");
	assert_ptr_equal(p, q);
	assert_int_equal(proctab__count(pt), 1);
	free_table(pt);
}

/* A pid now used by another process (other start time): an entry marked gone, no mappings. */
static void test_proctab_reused_pid_is_gone(void **state)
{
	struct proctab *pt = proctab__new(root, &env);
	struct proc *old, *cur;

	fake_proc(777, 50000, maps_text);
	old = proctab__get(pt, 777, 40000, "old");
	assert_non_null(old);
	assert_true(old->gone);
	assert_int_equal(old->nvmas, 0);
	assert_null(proc__vma(old, 0x55d0c0a01010));
	cur = proctab__get(pt, 777, 50000, "new");
	assert_ptr_not_equal(old, cur);
	assert_false(cur->gone);
	assert_int_equal(cur->nvmas, 6);
	assert_int_equal(proctab__count(pt), 2);
	free_table(pt);
}

static void test_proctab_missing_process(void **state)
{
	struct proctab *pt = proctab__new(root, &env);
	struct proc *p = proctab__get(pt, 99999, 1, "ghost");

	assert_non_null(p);
	assert_true(p->gone);
	assert_string_equal(p->comm, "ghost");
	free_table(pt);
}

/* A miss re-reads the maps: a new mapping (dlopen) is found after the file changes. */
static void test_proctab_refresh_on_miss(void **state)
{
	struct proctab *pt = proctab__new(root, &env);
	struct proc *p;

	fake_proc(31337, 100, "400000-401000 r-xp 00000000 fd:01 1 /bin/a\n");
	p = proctab__get(pt, 31337, 100, "a");
	assert_null(proc__vma(p, 0x500000));
	assert_int_equal(proc__refresh_maps(p, UINT64_MAX), -EAGAIN);	/* no re-read allowed yet */
	testutil__proc_file(root, "31337", "maps", "400000-401000 r-xp 00000000 fd:01 1 /bin/a\n"
						  "500000-501000 r-xp 00000000 fd:01 2 /lib/b.so\n");
	assert_int_equal(proc__refresh_maps(p, UINT64_MAX), -EAGAIN);
	assert_null(proc__vma(p, 0x500000));
	/* Right after a read even "now" waits for 50 times what it cost; a second later it does not. */
	p->maps_cost_ns = 1000000;
	assert_int_equal(proc__refresh_maps(p, 0), -EAGAIN);
	p->maps_read_ns -= 1000000000ull;
	assert_int_equal(proc__refresh_maps(p, 0), 0);
	assert_non_null(proc__vma(p, 0x500000));
	assert_string_equal(proc__vma(p, 0x500800)->path, "/lib/b.so");
	free_table(pt);
}

/* An idle process's mappings are freed; the next refresh reads them at once, whatever its
 * interval, and only that one. */
static void test_proctab_release_maps(void **state)
{
	struct proctab *pt = proctab__new(root, &env);
	struct proc *p;

	fake_proc(4343, 100, maps_text);
	p = proctab__get(pt, 4343, 100, "app");
	assert_int_equal(p->nvmas, 6);
	assert_true(p->maps_bytes > 6 * sizeof(struct vma));
	proc__release_maps(p);
	assert_int_equal(p->nvmas, 0);
	assert_null(p->vmas);
	assert_int_equal(p->maps_bytes, 0);
	assert_null(proc__vma(p, 0x55d0c0a01010));
	assert_int_equal(proc__refresh_maps(p, UINT64_MAX), 0);
	assert_int_equal(p->nvmas, 6);
	assert_false(p->maps_released);
	assert_string_equal(proc__vma(p, 0x55d0c0a01010)->path, "/usr/bin/app with space");
	assert_int_equal(proc__refresh_maps(p, UINT64_MAX), -EAGAIN);
	free_table(pt);
}

/* An exec: a new entry with the new program's mappings takes the pid and start time; the old
 * one keeps its mappings for the samples taken before the exec, and is found by time only. */
static void test_proctab_exec_splits(void **state)
{
	struct proctab *pt = proctab__new(root, &env);
	struct proc *a, *b, *c;

	fake_proc(4243, 300, "400000-401000 r-xp 00000000 fd:01 11 /bin/exec_a\n");
	a = proctab__get(pt, 4243, 300, "exec_a");
	assert_string_equal(proc__vma(a, 0x400100)->path, "/bin/exec_a");
	testutil__proc_file(root, "4243", "maps", "400000-401000 r-xp 00000000 fd:01 12 /bin/exec_b\n");
	b = proctab__exec(pt, a, "exec_b", 5000);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	assert_true(a->execed);
	assert_true(a->gone);
	assert_false(b->gone);
	assert_string_equal(b->comm, "exec_b");
	assert_string_equal(proc__vma(b, 0x400100)->path, "/bin/exec_b");
	assert_string_equal(proc__vma(a, 0x400100)->path, "/bin/exec_a");	/* kept */
	assert_null(b->syms);
	/* The lookup finds the new program; time finds the one that ran then. */
	assert_ptr_equal(proctab__find(pt, 4243, 300), b);
	assert_ptr_equal(proctab__get(pt, 4243, 300, "x"), b);
	assert_ptr_equal(proctab__at_time(pt, b, 4999), a);
	assert_ptr_equal(proctab__at_time(pt, b, 5000), b);
	assert_int_equal(proctab__exec(pt, a, "again", 6000), NULL);	/* an old entry: refused */
	/* A second exec: three entries, each found by its time. */
	c = proctab__exec(pt, b, "exec_c", 7000);
	assert_non_null(c);
	assert_ptr_equal(proctab__find(pt, 4243, 300), c);
	assert_ptr_equal(proctab__at_time(pt, c, 6000), b);
	assert_ptr_equal(proctab__at_time(pt, c, 100), a);
	/* The oldest freed: time stops at the oldest still there. */
	runtime__detach_all(a);
	proctab__remove(pt, a);
	assert_ptr_equal(proctab__at_time(pt, c, 100), b);
	assert_ptr_equal(proctab__find(pt, 4243, 300), c);
	/* Growing the buckets keeps exec'd entries out of the lookup. */
	for (int i = 0; i < 600; i++)
		proctab__get(pt, 100000 + i, 1, "ghost");
	assert_ptr_equal(proctab__find(pt, 4243, 300), c);
	free_table(pt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proctab_maps_parse),
		cmocka_unit_test(test_proctab_maps_parse_shared_paths),
		cmocka_unit_test(test_proctab_maps_parse_empty_and_huge_numbers),
		cmocka_unit_test(test_proctab_identity_and_maps),
		cmocka_unit_test(test_proctab_release_maps),
		cmocka_unit_test(test_proctab_reused_pid_is_gone),
		cmocka_unit_test(test_proctab_missing_process),
		cmocka_unit_test(test_proctab_refresh_on_miss),
		cmocka_unit_test(test_proctab_exec_splits),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
