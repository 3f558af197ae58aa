/* test_dotnet.c: unit tests for perfmap/dotnet (runtime detection, the runtime's directory rules, JIT files inside a root). */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dotnet.h"
#include "procfs.h"
#include "testutil.h"

static void test_dotnet_is_runtime_path(void **state)
{
	(void)state;
	assert_true(dotnet__is_runtime_path(
		"/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.12/libcoreclr.so"));
	assert_true(dotnet__is_runtime_path("libcoreclr.so"));
	assert_true(dotnet__is_runtime_path("/app/libcoreclr.so (deleted)"));
	assert_false(dotnet__is_runtime_path("/app/libcoreclrtraceptprovider.so"));
	assert_false(dotnet__is_runtime_path("/app/libcoreclr.so.dbg"));
	assert_false(dotnet__is_runtime_path("/app/libcoreclr.so/x"));
	assert_false(dotnet__is_runtime_path("/app/mylibcoreclr.so"));
	assert_false(dotnet__is_runtime_path("[anon:libcoreclr.so]x"));
	assert_false(dotnet__is_runtime_path(""));
	assert_false(dotnet__is_runtime_path(NULL));
}

/* The pid's /proc directory, opened once the exec is done. */
static int proc_dir(pid_t pid)
{
	int dir_fd = procfs__open(pid);

	assert_true(dir_fd >= 0);
	return dir_fd;
}

static void test_dotnet_dirs_process(void **state)
{
	char *envp[] = { "A=1", "DOTNET_PerfMapJitDumpPath=/var/maps", "TMPDIR=/scratch", NULL };
	char buf[DOTNET_DIR_MAX];
	int dir_fd;
	pid_t pid;

	(void)state;
	pid = testutil__spawn_env(envp);
	dir_fd = proc_dir(pid);
	assert_int_equal(dotnet__jit_dir(dir_fd, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/var/maps");
	assert_int_equal(dotnet__tmp_dir(dir_fd, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/scratch");
	testutil__reap(pid);
	/* Gone: its directory fd reads nothing (never the environment of a newer process). */
	assert_true(dotnet__jit_dir(dir_fd, buf, sizeof(buf)) < 0);
	assert_true(dotnet__tmp_dir(dir_fd, buf, sizeof(buf)) < 0);
	close(dir_fd);
	assert_int_equal(dotnet__jit_dir(-1, buf, sizeof(buf)), -EINVAL);
}

static void test_dotnet_dirs_default_and_legacy(void **state)
{
	char *plain[] = { "A=1", NULL };
	char *legacy[] = { "COMPlus_PerfMapJitDumpPath=/old", "TMPDIR=", NULL };
	char *relative[] = { "DOTNET_PerfMapJitDumpPath=maps", "TMPDIR=rel", NULL };
	char buf[DOTNET_DIR_MAX];
	int dir_fd;
	pid_t pid;

	(void)state;
	pid = testutil__spawn_env(plain);
	dir_fd = proc_dir(pid);
	assert_int_equal(dotnet__jit_dir(dir_fd, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/tmp");
	assert_int_equal(dotnet__tmp_dir(dir_fd, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/tmp");
	close(dir_fd);
	testutil__reap(pid);

	pid = testutil__spawn_env(legacy);
	dir_fd = proc_dir(pid);
	assert_int_equal(dotnet__jit_dir(dir_fd, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/old");
	assert_int_equal(dotnet__tmp_dir(dir_fd, buf, sizeof(buf)), 0);	/* empty TMPDIR: /tmp */
	assert_string_equal(buf, "/tmp");
	close(dir_fd);
	testutil__reap(pid);

	pid = testutil__spawn_env(relative);
	dir_fd = proc_dir(pid);
	assert_int_equal(dotnet__jit_dir(dir_fd, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(dotnet__tmp_dir(dir_fd, buf, sizeof(buf)), -EINVAL);
	close(dir_fd);
	testutil__reap(pid);
}

/* On testutil__root_setup's container root (its layout: testutil.h). */
static void test_dotnet_open_jit_files(void **state)
{
	struct testutil_root *fx = *state;
	struct dotnet_jit_files f;
	char buf[64];

	/* nspid 7: the map is a regular file, the jitdump a symlink to a host file */
	assert_int_equal(dotnet__open_jit_files_in(fx->root_fd, "/tmp", 7, &f), 0);
	assert_string_equal(f.dir, "/tmp");
	assert_int_equal(f.map_err, 0);
	assert_true(f.map_fd >= 0);
	testutil__read_fd(f.map_fd, buf, sizeof(buf));
	assert_string_equal(buf, "inside\n");
	assert_int_equal(f.jitdump_err, -ELOOP);
	assert_int_equal(f.jitdump_fd, -1);
	dotnet__close_jit_files(&f);
	assert_int_equal(f.map_fd, -1);
	dotnet__close_jit_files(NULL);

	/* nspid 9 in a subdirectory; nothing for nspid 10 */
	assert_int_equal(dotnet__open_jit_files_in(fx->root_fd, "/tmp/sub", 9, &f), 0);
	assert_int_equal(f.map_err, 0);
	assert_int_equal(f.jitdump_err, -ENOENT);
	dotnet__close_jit_files(&f);
	assert_int_equal(dotnet__open_jit_files_in(fx->root_fd, "/tmp", 10, &f), 0);
	assert_int_equal(f.map_err, -ENOENT);
	assert_int_equal(f.jitdump_err, -ENOENT);
	assert_int_equal(dotnet__open_jit_files_in(fx->root_fd, "/tmp", 0, &f), -EINVAL);
}

static void test_dotnet_open_jit_files_process(void **state)
{
	struct testutil_root *fx = *state;
	char env_dir[PATH_MAX + 64], name[PATH_MAX + 64];
	char *envp[] = { env_dir, NULL };
	struct dotnet_jit_files f;
	int dir_fd, root_fd;
	pid_t pid;

	/* A process whose DOTNET_PerfMapJitDumpPath points into the fixture; its root is ours. */
	snprintf(env_dir, sizeof(env_dir), "DOTNET_PerfMapJitDumpPath=%s/tmp", fx->root);
	pid = testutil__spawn_env(envp);
	dir_fd = proc_dir(pid);
	root_fd = procfs__open_root(dir_fd);
	assert_true(root_fd >= 0);
	assert_int_equal(dotnet__open_jit_files(dir_fd, root_fd, 7, &f), 0);
	snprintf(name, sizeof(name), "%s/tmp", fx->root);
	assert_string_equal(f.dir, name);
	assert_int_equal(f.map_err, 0);
	assert_int_equal(f.jitdump_err, -ELOOP);
	dotnet__close_jit_files(&f);
	close(root_fd);
	testutil__reap(pid);
	assert_true(procfs__open_root(dir_fd) < 0);
	/* A root fd still open does not help: the directory comes from the gone process. */
	assert_true(dotnet__open_jit_files(dir_fd, fx->root_fd, 7, &f) < 0);
	assert_int_equal(f.map_fd, -1);
	close(dir_fd);
	assert_true(procfs__open(pid) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dotnet_is_runtime_path),
		cmocka_unit_test(test_dotnet_dirs_process),
		cmocka_unit_test(test_dotnet_dirs_default_and_legacy),
		cmocka_unit_test_setup_teardown(test_dotnet_open_jit_files,
						testutil__root_setup, testutil__root_teardown),
		cmocka_unit_test_setup_teardown(test_dotnet_open_jit_files_process,
						testutil__root_setup, testutil__root_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
