/* test_procfs.c: unit tests for lib/procfs (status/stat/environ parsers, reads through a /proc/<pid> fd). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "procfs.h"
#include "testutil.h"

static void test_procfs_parse_nspid(void **state)
{
	static const char nested[] = "Name:\tHotChain\nTgid:\t9488\nNgid:\t0\nPid:\t9488\n"
				     "NStgid:\t9488\t1\nNSpid:\t9488\t1\n";
	static const char flat[] = "Name:\tx\nTgid:\t42\nNStgid:\t42\n";
	static const char old_kernel[] = "Name:\tx\nTgid:\t77\nPid:\t77\n";
	static const char no_newline[] = "Tgid:\t5\nNStgid:\t5\t4\t3";
	static const char garbage[] = "NStgid:\tabc\n";
	static const char overflow[] = "NStgid:\t1\t99999999999\n";
	int nspid = -1;

	(void)state;
	assert_int_equal(procfs__parse_nspid(nested, strlen(nested), &nspid), 0);
	assert_int_equal(nspid, 1);
	assert_int_equal(procfs__parse_nspid(flat, strlen(flat), &nspid), 0);
	assert_int_equal(nspid, 42);
	assert_int_equal(procfs__parse_nspid(old_kernel, strlen(old_kernel), &nspid), 0);
	assert_int_equal(nspid, 77);
	assert_int_equal(procfs__parse_nspid(no_newline, strlen(no_newline), &nspid), 0);
	assert_int_equal(nspid, 3);
	assert_int_equal(procfs__parse_nspid(garbage, strlen(garbage), &nspid), -EINVAL);
	assert_int_equal(procfs__parse_nspid(overflow, strlen(overflow), &nspid), -EINVAL);
	assert_int_equal(procfs__parse_nspid("Name:\tx\n", 8, &nspid), -ENOENT);
	/* The length bounds the parse: the NStgid line past len is not seen. */
	assert_int_equal(procfs__parse_nspid(nested, 25, &nspid), 0);
	assert_int_equal(nspid, 9488);
}

static void test_procfs_nspid_self(void **state)
{
	int nspid = 0, dir_fd;

	(void)state;
	/* The tests run in one pid namespace with their reader: the innermost pid is getpid(). */
	dir_fd = procfs__open(getpid());
	assert_true(dir_fd >= 0);
	assert_int_equal(procfs__nspid(dir_fd, &nspid), 0);
	assert_int_equal(nspid, getpid());
	close(dir_fd);
	/* A pid number is never a directory fd: -1 and AT_FDCWD are refused. */
	assert_int_equal(procfs__nspid(-1, &nspid), -EINVAL);
	assert_int_equal(procfs__nspid(AT_FDCWD, &nspid), -EINVAL);
	assert_int_equal(procfs__open(0), -EINVAL);
}

static void test_procfs_parse_starttime(void **state)
{
	/* comm "(a) b) c" contains spaces and parentheses: only the last ')' ends it. */
	static const char stat[] = "5480 ((a) b) c) R 5478 5476 2439 0 -1 4194304 1449 0 0 0 71 0 "
				   "0 0 20 0 8 0 53834 53712465920 6578 18446744073709551615\n";
	static const char short_stat[] = "1 (x) R 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0\n";
	static const char bad[] = "1 (x) R 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12a3 0\n";
	uint64_t st = 0;

	(void)state;
	assert_int_equal(procfs__parse_starttime(stat, strlen(stat), &st), 0);
	assert_int_equal(st, 53834);
	assert_int_equal(procfs__parse_starttime(short_stat, strlen(short_stat), &st), -EINVAL);
	assert_int_equal(procfs__parse_starttime(bad, strlen(bad), &st), -EINVAL);
	assert_int_equal(procfs__parse_starttime("no paren", 8, &st), -EINVAL);
}

static void test_procfs_parse_cputime(void **state)
{
	/* utime (field 14) 71, stime (field 15) 29: fields counted past the last ")" of comm. */
	static const char stat[] = "5480 ((a) b) c) R 5478 5476 2439 0 -1 4194304 1449 0 0 0 71 29 "
				   "0 0 20 0 8 0 53834 53712465920 6578 18446744073709551615\n";
	static const char short_stat[] = "1 (x) R 0 1 1 0 -1 0 0 0 0 0 7\n";
	static const char bad[] = "1 (x) R 0 1 1 0 -1 0 0 0 0 0 7 -1 0 0\n";
	static const char huge[] = "1 (x) R 0 1 1 0 -1 0 0 0 0 0 18446744073709551615 1 0 0\n";
	uint64_t t = 0;

	(void)state;
	assert_int_equal(procfs__parse_cputime(stat, strlen(stat), &t), 0);
	assert_int_equal(t, 100);
	assert_int_equal(procfs__parse_cputime(short_stat, strlen(short_stat), &t), -EINVAL);
	assert_int_equal(procfs__parse_cputime(bad, strlen(bad), &t), -EINVAL);
	assert_int_equal(procfs__parse_cputime(huge, strlen(huge), &t), -EINVAL);
	assert_int_equal(procfs__parse_cputime("no paren", 8, &t), -EINVAL);
}

static void test_procfs_starttime_self(void **state)
{
	uint64_t a = 0, b = 0;
	int dir_fd;

	(void)state;
	dir_fd = procfs__open(getpid());
	assert_true(dir_fd >= 0);
	assert_int_equal(procfs__starttime(dir_fd, &a), 0);
	assert_int_equal(procfs__starttime(dir_fd, &b), 0);
	assert_true(a > 0);
	assert_int_equal(a, b);
	close(dir_fd);
	assert_int_equal(procfs__starttime(-1, &a), -EINVAL);
}

static void test_procfs_parse_environ(void **state)
{
	static const char env[] = "PATH=/usr/bin\0DOTNET_PerfMapJitDumpPathX=/wrong\0"
				  "DOTNET_PerfMapJitDumpPath=/var/maps\0EMPTY=\0TMPDIR=/scratch";
	char buf[16];

	(void)state;
	assert_int_equal(procfs__parse_environ(env, sizeof(env) - 1, "DOTNET_PerfMapJitDumpPath",
					       buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/var/maps");
	/* last entry without its NUL */
	assert_int_equal(procfs__parse_environ(env, sizeof(env) - 1, "TMPDIR", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/scratch");
	assert_int_equal(procfs__parse_environ(env, sizeof(env) - 1, "EMPTY", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(procfs__parse_environ(env, sizeof(env) - 1, "DOTNET", buf, sizeof(buf)),
			 -ENOENT);
	assert_int_equal(procfs__parse_environ(env, sizeof(env) - 1, "MISSING", buf, sizeof(buf)),
			 -ENOENT);
	/* "/var/maps" needs 10 bytes */
	assert_int_equal(procfs__parse_environ(env, sizeof(env) - 1, "DOTNET_PerfMapJitDumpPath",
					       buf, 9), -ENAMETOOLONG);
	assert_int_equal(procfs__parse_environ(env, sizeof(env) - 1, "A=B", buf, sizeof(buf)),
			 -EINVAL);
	assert_int_equal(procfs__parse_environ(env, sizeof(env) - 1, "", buf, sizeof(buf)), -EINVAL);
}

static void test_procfs_getenv_process(void **state)
{
	char *envp[] = { "A=1", "DOTNET_PerfMapJitDumpPath=/var/maps", "TMPDIR=/scratch", NULL };
	char buf[256];
	int dir_fd;
	pid_t pid;

	(void)state;
	pid = testutil__spawn_env(envp);
	dir_fd = procfs__open(pid);
	assert_true(dir_fd >= 0);
	assert_int_equal(procfs__getenv(dir_fd, "A", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1");
	assert_int_equal(procfs__getenv(dir_fd, "NOPE", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(procfs__getenv(dir_fd, "TMPDIR", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/scratch");
	testutil__reap(pid);
	/* The directory still open, the process gone: nothing is read, whoever gets the pid next. */
	assert_true(procfs__getenv(dir_fd, "A", buf, sizeof(buf)) < 0);
	assert_true(procfs__open_root(dir_fd) < 0);
	close(dir_fd);
	assert_true(procfs__open(pid) < 0);
	assert_int_equal(procfs__getenv(-1, "A", buf, sizeof(buf)), -EINVAL);
}

static void test_procfs_open_root(void **state)
{
	struct stat a, b;
	int dir_fd, root_fd;

	(void)state;
	dir_fd = procfs__open(getpid());
	assert_true(dir_fd >= 0);
	root_fd = procfs__open_root(dir_fd);
	assert_true(root_fd >= 0);
	assert_true(fcntl(root_fd, F_GETFL) & O_PATH);
	assert_true(fcntl(root_fd, F_GETFD) & FD_CLOEXEC);
	/* Our root is "/". */
	assert_int_equal(fstat(root_fd, &a), 0);
	assert_int_equal(stat("/", &b), 0);
	assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	close(root_fd);
	close(dir_fd);
	assert_int_equal(procfs__open_root(-1), -EINVAL);
}

static char mem_buf[64] = "the child's copy";

static void test_procfs_read_mem(void **state)
{
	char got[sizeof(mem_buf)];
	long page = sysconf(_SC_PAGESIZE);
	void *hole;
	int dir_fd, mem;
	pid_t pid;

	(void)state;
	/* A forked child has our layout: mem_buf at the same address, with the bytes of the fork. */
	pid = testutil__fork_paused();
	strcpy(mem_buf, "the parent's own");
	dir_fd = procfs__open(pid);
	assert_true(dir_fd >= 0);
	memset(got, 0, sizeof(got));
	assert_int_equal(procfs__read_mem(dir_fd, (uintptr_t)mem_buf, got, sizeof(got)), 0);
	assert_string_equal(got, "the child's copy");
	assert_int_equal(procfs__read_mem(dir_fd, (uintptr_t)mem_buf, got, 0), 0);

	/* Unmapped memory (mapped in the parent only, after the fork), kernel addresses and ranges
	 * past INT64_MAX are -EFAULT. */
	hole = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(hole != MAP_FAILED);
	assert_int_equal(munmap(hole, 2 * page), 0);
	assert_int_equal(procfs__read_mem(dir_fd, (uintptr_t)hole, got, 8), -EFAULT);
	assert_int_equal(procfs__read_mem(dir_fd, 0xffffffff81000000ull, got, 8), -EFAULT);
	assert_int_equal(procfs__read_mem(dir_fd, INT64_MAX - 3, got, 8), -EFAULT);

	/* A batch through one fd reads the same. */
	mem = procfs__open_mem(dir_fd);
	assert_true(mem >= 0);
	memset(got, 0, sizeof(got));
	assert_int_equal(procfs__pread_mem(mem, (uintptr_t)mem_buf, got, sizeof(got)), 0);
	assert_string_equal(got, "the child's copy");
	assert_int_equal(procfs__pread_mem(mem, (uintptr_t)hole, got, 8), -EFAULT);

	/* Gone: neither the kept fd nor a new open reads anything. */
	testutil__reap(pid);
	assert_true(procfs__pread_mem(mem, (uintptr_t)mem_buf, got, sizeof(got)) < 0);
	assert_true(procfs__read_mem(dir_fd, (uintptr_t)mem_buf, got, sizeof(got)) < 0);
	close(mem);
	close(dir_fd);
	assert_int_equal(procfs__read_mem(-1, (uintptr_t)mem_buf, got, 8), -EINVAL);
	assert_int_equal(procfs__pread_mem(-1, (uintptr_t)mem_buf, got, 8), -EINVAL);
	assert_int_equal(procfs__open_mem(-1), -EINVAL);
}

/* The type of the deepest mount above a path, from mountinfo text; nothing else is asked. */
static void test_procfs_parse_fstype(void **state)
{
	static const char mi[] =
		"22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
		"23 22 0:22 / /tmp rw shared:2 - tmpfs tmpfs rw\n"
		"24 23 0:40 / /tmp/remote\\040dir rw master:3 - nfs4 srv:/x rw\n"
		"25 23 0:41 / /tmp/fuse rw - fuse.sshfs host: rw\n"
		"26 23 0:22 /perf-1.map /tmp/perf-1.map rw - fuseblk /dev/x rw\n"
		"27 22 0:42 / /tmpx rw - xfs /dev/y rw\n"
		"garbage without fields\n"
		"28 22 0:43 / /odd rw no-separator-here";
	char t[32];

	assert_int_equal(procfs__parse_fstype(mi, strlen(mi), "/tmp/perf-7.map", t, sizeof(t)), 0);
	assert_string_equal(t, "tmpfs");
	assert_int_equal(procfs__parse_fstype(mi, strlen(mi), "/tmp/remote dir/perf-7.map", t, sizeof(t)), 0);
	assert_string_equal(t, "nfs4");
	assert_true(procfs__fstype_remote(t));
	assert_int_equal(procfs__parse_fstype(mi, strlen(mi), "/tmp/fuse/a/b", t, sizeof(t)), 0);
	assert_string_equal(t, "fuse.sshfs");
	assert_true(procfs__fstype_remote(t));
	/* A bind mount over the file itself. */
	assert_int_equal(procfs__parse_fstype(mi, strlen(mi), "/tmp/perf-1.map", t, sizeof(t)), 0);
	assert_string_equal(t, "fuseblk");
	/* A prefix that is not a directory above: /tmpx is not under /tmp. */
	assert_int_equal(procfs__parse_fstype(mi, strlen(mi), "/tmpx/perf-1.map", t, sizeof(t)), 0);
	assert_string_equal(t, "xfs");
	assert_false(procfs__fstype_remote(t));
	assert_int_equal(procfs__parse_fstype(mi, strlen(mi), "/odd/perf-1.map", t, sizeof(t)), 0);
	assert_string_equal(t, "ext4");
	assert_int_equal(procfs__parse_fstype(mi, strlen(mi), "relative", t, sizeof(t)), -EINVAL);
	assert_int_equal(procfs__parse_fstype(mi, strlen(mi), "/tmp/../etc", t, sizeof(t)), -EINVAL);
	assert_int_equal(procfs__parse_fstype("", 0, "/tmp/a", t, sizeof(t)), -ENOENT);
	assert_int_equal(procfs__parse_fstype(mi, strlen(mi), "/tmp/fuse/a", t, 4), -ENAMETOOLONG);
	/* The test knob adds types; the magic numbers cover the same file systems. */
	assert_false(procfs__fstype_remote("tmpfs"));
	setenv("SPANPROF_TEST_REMOTE_FSTYPES", "ext4,tmpfs", 1);
	assert_true(procfs__fstype_remote("tmpfs"));
	assert_false(procfs__fstype_remote("tmp"));
	unsetenv("SPANPROF_TEST_REMOTE_FSTYPES");
	assert_true(procfs__fsmagic_remote(0x65735546));	/* FUSE_SUPER_MAGIC */
	assert_true(procfs__fsmagic_remote(0x6969));		/* NFS_SUPER_MAGIC */
	assert_false(procfs__fsmagic_remote(0x01021994));	/* TMPFS_MAGIC */
}

/* This process's own mountinfo: / is always covered. */
static void test_procfs_fstype_self(void **state)
{
	char t[64];
	int fd = procfs__open(getpid());

	assert_true(fd >= 0);
	assert_int_equal(procfs__fstype(fd, "/", t, sizeof(t)), 0);
	assert_true(t[0] != 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_procfs_parse_nspid),
		cmocka_unit_test(test_procfs_nspid_self),
		cmocka_unit_test(test_procfs_parse_starttime),
		cmocka_unit_test(test_procfs_parse_cputime),
		cmocka_unit_test(test_procfs_starttime_self),
		cmocka_unit_test(test_procfs_parse_environ),
		cmocka_unit_test(test_procfs_getenv_process),
		cmocka_unit_test(test_procfs_open_root),
		cmocka_unit_test(test_procfs_read_mem),
		cmocka_unit_test(test_procfs_parse_fstype),
		cmocka_unit_test(test_procfs_fstype_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
