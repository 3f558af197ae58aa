/* test_dotnet.c: unit tests for perfmap/dotnet (runtime detection, the runtime's directory rules, JIT files inside a root). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "dotnet.h"
#include "procfs.h"

/* A temp directory that plays a container's root:
 *   <root>/tmp/perf-7.map        regular file "inside\n"
 *   <root>/tmp/jit-7.dump        symlink -> /etc/hostname (a host file)
 *   <root>/tmp/perf-8.map        symlink -> perf-7.map (relative, still refused)
 *   <root>/tmp/fifo              FIFO without a writer
 *   <root>/tmp/sub/perf-9.map    regular file
 *   <root>/link -> tmp           symlinked directory
 *   <root>/etc/hostname          the root's own hostname file "container\n"
 */
struct fixture {
	char root[PATH_MAX];
	int root_fd;
};

static void put_file(const char *root, const char *rel, const char *content)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static int setup_root(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	char path[PATH_MAX + 32];

	assert_non_null(fx);
	strcpy(fx->root, "/tmp/spanprof-test-dotnet-XXXXXX");
	assert_non_null(mkdtemp(fx->root));
	snprintf(path, sizeof(path), "%s/tmp", fx->root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/tmp/sub", fx->root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/etc", fx->root);
	assert_int_equal(mkdir(path, 0755), 0);
	put_file(fx->root, "tmp/perf-7.map", "inside\n");
	put_file(fx->root, "tmp/sub/perf-9.map", "sub\n");
	put_file(fx->root, "etc/hostname", "container\n");
	snprintf(path, sizeof(path), "%s/tmp/jit-7.dump", fx->root);
	assert_int_equal(symlink("/etc/hostname", path), 0);
	snprintf(path, sizeof(path), "%s/tmp/perf-8.map", fx->root);
	assert_int_equal(symlink("perf-7.map", path), 0);
	snprintf(path, sizeof(path), "%s/tmp/fifo", fx->root);
	assert_int_equal(mkfifo(path, 0600), 0);
	snprintf(path, sizeof(path), "%s/link", fx->root);
	assert_int_equal(symlink("tmp", path), 0);
	fx->root_fd = open(fx->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fx->root_fd >= 0);
	*state = fx;
	return 0;
}

static int teardown_root(void **state)
{
	struct fixture *fx = *state;
	char cmd[PATH_MAX + 16];

	close(fx->root_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->root);
	assert_int_equal(system(cmd), 0);
	free(fx);
	return 0;
}

static void read_fd(int fd, char *buf, size_t len)
{
	ssize_t n = read(fd, buf, len - 1);

	assert_true(n >= 0);
	buf[n] = '\0';
}

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

/* Bytes in /proc/<pid>/environ, 0 while it is empty (or unreadable). */
static long environ_size(pid_t pid)
{
	char path[64], buf[256];
	long n = 0;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		n += r;
	close(fd);
	return n;
}

/* Start `sleep` with a chosen environment and read it back through /proc. */
static pid_t spawn_with_env(char *const envp[])
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = { "sleep", "5", NULL };

		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	/* Wait until the exec has replaced the environment. */
	for (int i = 0; i < 200; i++) {
		char exe[64], target[PATH_MAX];
		ssize_t n;

		snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
		n = readlink(exe, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = '\0';
			/* The exe link changes before the new stack (and environ) is set up. */
			if (strstr(target, "sleep") && environ_size(pid) > 0)
				break;
		}
		usleep(5000);
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
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
	pid = spawn_with_env(envp);
	dir_fd = proc_dir(pid);
	assert_int_equal(dotnet__jit_dir(dir_fd, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/var/maps");
	assert_int_equal(dotnet__tmp_dir(dir_fd, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/scratch");
	reap(pid);
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
	pid = spawn_with_env(plain);
	dir_fd = proc_dir(pid);
	assert_int_equal(dotnet__jit_dir(dir_fd, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/tmp");
	assert_int_equal(dotnet__tmp_dir(dir_fd, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/tmp");
	close(dir_fd);
	reap(pid);

	pid = spawn_with_env(legacy);
	dir_fd = proc_dir(pid);
	assert_int_equal(dotnet__jit_dir(dir_fd, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/old");
	assert_int_equal(dotnet__tmp_dir(dir_fd, buf, sizeof(buf)), 0);	/* empty TMPDIR: /tmp */
	assert_string_equal(buf, "/tmp");
	close(dir_fd);
	reap(pid);

	pid = spawn_with_env(relative);
	dir_fd = proc_dir(pid);
	assert_int_equal(dotnet__jit_dir(dir_fd, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(dotnet__tmp_dir(dir_fd, buf, sizeof(buf)), -EINVAL);
	close(dir_fd);
	reap(pid);
}

static void test_dotnet_open_jit_files(void **state)
{
	struct fixture *fx = *state;
	struct dotnet_jit_files f;
	char buf[64];

	/* nspid 7: the map is a regular file, the jitdump a symlink to a host file */
	assert_int_equal(dotnet__open_jit_files_in(fx->root_fd, "/tmp", 7, &f), 0);
	assert_string_equal(f.dir, "/tmp");
	assert_int_equal(f.map_err, 0);
	assert_true(f.map_fd >= 0);
	read_fd(f.map_fd, buf, sizeof(buf));
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
	struct fixture *fx = *state;
	char env_dir[PATH_MAX + 64], name[PATH_MAX + 64];
	char *envp[] = { env_dir, NULL };
	struct dotnet_jit_files f;
	int dir_fd, root_fd;
	pid_t pid;

	/* A process whose DOTNET_PerfMapJitDumpPath points into the fixture; its root is ours. */
	snprintf(env_dir, sizeof(env_dir), "DOTNET_PerfMapJitDumpPath=%s/tmp", fx->root);
	pid = spawn_with_env(envp);
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
	reap(pid);
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
		cmocka_unit_test_setup_teardown(test_dotnet_open_jit_files, setup_root,
						teardown_root),
		cmocka_unit_test_setup_teardown(test_dotnet_open_jit_files_process, setup_root,
						teardown_root),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
