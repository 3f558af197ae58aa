/* test_dotnet.c: unit tests for perfmap/dotnet (/proc parsing and symlink-safe opens inside a root). */
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

static void test_dotnet_parse_nspid(void **state)
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
	assert_int_equal(dotnet__parse_nspid(nested, strlen(nested), &nspid), 0);
	assert_int_equal(nspid, 1);
	assert_int_equal(dotnet__parse_nspid(flat, strlen(flat), &nspid), 0);
	assert_int_equal(nspid, 42);
	assert_int_equal(dotnet__parse_nspid(old_kernel, strlen(old_kernel), &nspid), 0);
	assert_int_equal(nspid, 77);
	assert_int_equal(dotnet__parse_nspid(no_newline, strlen(no_newline), &nspid), 0);
	assert_int_equal(nspid, 3);
	assert_int_equal(dotnet__parse_nspid(garbage, strlen(garbage), &nspid), -EINVAL);
	assert_int_equal(dotnet__parse_nspid(overflow, strlen(overflow), &nspid), -EINVAL);
	assert_int_equal(dotnet__parse_nspid("Name:\tx\n", 8, &nspid), -ENOENT);
	/* The length bounds the parse: the NStgid line past len is not seen. */
	assert_int_equal(dotnet__parse_nspid(nested, 25, &nspid), 0);
	assert_int_equal(nspid, 9488);
}

static void test_dotnet_nspid_self(void **state)
{
	int nspid = 0;

	(void)state;
	/* The tests run in one pid namespace with their reader: the innermost pid is getpid(). */
	assert_int_equal(dotnet__nspid(getpid(), &nspid), 0);
	assert_int_equal(nspid, getpid());
	assert_int_equal(dotnet__nspid(0, &nspid), -EINVAL);
}

static void test_dotnet_parse_starttime(void **state)
{
	/* comm "(a) b) c" contains spaces and parentheses: only the last ')' ends it. */
	static const char stat[] = "5480 ((a) b) c) R 5478 5476 2439 0 -1 4194304 1449 0 0 0 71 0 "
				   "0 0 20 0 8 0 53834 53712465920 6578 18446744073709551615\n";
	static const char short_stat[] = "1 (x) R 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0\n";
	static const char bad[] = "1 (x) R 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12a3 0\n";
	uint64_t st = 0;

	(void)state;
	assert_int_equal(dotnet__parse_starttime(stat, strlen(stat), &st), 0);
	assert_int_equal(st, 53834);
	assert_int_equal(dotnet__parse_starttime(short_stat, strlen(short_stat), &st), -EINVAL);
	assert_int_equal(dotnet__parse_starttime(bad, strlen(bad), &st), -EINVAL);
	assert_int_equal(dotnet__parse_starttime("no paren", 8, &st), -EINVAL);
}

static void test_dotnet_parse_environ(void **state)
{
	static const char env[] = "PATH=/usr/bin\0DOTNET_PerfMapJitDumpPathX=/wrong\0"
				  "DOTNET_PerfMapJitDumpPath=/var/maps\0EMPTY=\0TMPDIR=/scratch";
	char buf[16];

	(void)state;
	assert_int_equal(dotnet__parse_environ(env, sizeof(env) - 1, "DOTNET_PerfMapJitDumpPath",
					       buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/var/maps");
	/* last entry without its NUL */
	assert_int_equal(dotnet__parse_environ(env, sizeof(env) - 1, "TMPDIR", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/scratch");
	assert_int_equal(dotnet__parse_environ(env, sizeof(env) - 1, "EMPTY", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(dotnet__parse_environ(env, sizeof(env) - 1, "DOTNET", buf, sizeof(buf)),
			 -ENOENT);
	assert_int_equal(dotnet__parse_environ(env, sizeof(env) - 1, "MISSING", buf, sizeof(buf)),
			 -ENOENT);
	/* "/var/maps" needs 10 bytes */
	assert_int_equal(dotnet__parse_environ(env, sizeof(env) - 1, "DOTNET_PerfMapJitDumpPath",
					       buf, 9), -ENAMETOOLONG);
	assert_int_equal(dotnet__parse_environ(env, sizeof(env) - 1, "A=B", buf, sizeof(buf)),
			 -EINVAL);
	assert_int_equal(dotnet__parse_environ(env, sizeof(env) - 1, "", buf, sizeof(buf)), -EINVAL);
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
			if (strstr(target, "sleep"))
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

static void test_dotnet_getenv_process(void **state)
{
	char *envp[] = { "A=1", "DOTNET_PerfMapJitDumpPath=/var/maps", "TMPDIR=/scratch", NULL };
	char buf[DOTNET_DIR_MAX];
	pid_t pid;

	(void)state;
	pid = spawn_with_env(envp);
	assert_int_equal(dotnet__getenv(pid, "A", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1");
	assert_int_equal(dotnet__getenv(pid, "NOPE", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(dotnet__jit_dir(pid, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/var/maps");
	assert_int_equal(dotnet__tmp_dir(pid, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/scratch");
	reap(pid);
	assert_true(dotnet__getenv(pid, "A", buf, sizeof(buf)) < 0);
}

static void test_dotnet_dirs_default_and_legacy(void **state)
{
	char *plain[] = { "A=1", NULL };
	char *legacy[] = { "COMPlus_PerfMapJitDumpPath=/old", "TMPDIR=", NULL };
	char *relative[] = { "DOTNET_PerfMapJitDumpPath=maps", "TMPDIR=rel", NULL };
	char buf[DOTNET_DIR_MAX];
	pid_t pid;

	(void)state;
	pid = spawn_with_env(plain);
	assert_int_equal(dotnet__jit_dir(pid, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/tmp");
	assert_int_equal(dotnet__tmp_dir(pid, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/tmp");
	reap(pid);

	pid = spawn_with_env(legacy);
	assert_int_equal(dotnet__jit_dir(pid, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/old");
	assert_int_equal(dotnet__tmp_dir(pid, buf, sizeof(buf)), 0);	/* empty TMPDIR: /tmp */
	assert_string_equal(buf, "/tmp");
	reap(pid);

	pid = spawn_with_env(relative);
	assert_int_equal(dotnet__jit_dir(pid, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(dotnet__tmp_dir(pid, buf, sizeof(buf)), -EINVAL);
	reap(pid);
}

static void test_dotnet_starttime_self(void **state)
{
	uint64_t a = 0, b = 0;

	(void)state;
	assert_int_equal(dotnet__starttime(getpid(), &a), 0);
	assert_int_equal(dotnet__starttime(getpid(), &b), 0);
	assert_true(a > 0);
	assert_int_equal(a, b);
}

typedef int (*open_fn)(int root_fd, const char *path, int flags, mode_t want_type);

/* The same expectations hold for openat2 and for the component walk fallback. */
static void check_open_in_root(struct fixture *fx, open_fn fn, int walk)
{
	char buf[64];
	int fd;

	fd = fn(fx->root_fd, "/tmp/perf-7.map", O_RDONLY, S_IFREG);
	assert_true(fd >= 0);
	read_fd(fd, buf, sizeof(buf));
	assert_string_equal(buf, "inside\n");
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);

	/* relative paths are relative to the root too */
	fd = fn(fx->root_fd, "tmp/sub/perf-9.map", O_RDONLY, S_IFREG);
	assert_true(fd >= 0);
	read_fd(fd, buf, sizeof(buf));
	assert_string_equal(buf, "sub\n");
	close(fd);

	/* a symlink to a host file, a relative symlink, a symlinked directory: all refused */
	assert_int_equal(fn(fx->root_fd, "/tmp/jit-7.dump", O_RDONLY, S_IFREG), -ELOOP);
	assert_int_equal(fn(fx->root_fd, "/tmp/perf-8.map", O_RDONLY, S_IFREG), -ELOOP);
	assert_int_equal(fn(fx->root_fd, "/link/perf-7.map", O_RDONLY, S_IFREG), -ELOOP);

	assert_int_equal(fn(fx->root_fd, "/tmp/perf-1.map", O_RDONLY, S_IFREG), -ENOENT);
	/* wrong types: a FIFO (must not block), a directory, a file where a dir is needed */
	alarm(5);
	assert_int_equal(fn(fx->root_fd, "/tmp/fifo", O_RDONLY, S_IFREG), -EINVAL);
	alarm(0);
	assert_int_equal(fn(fx->root_fd, "/tmp", O_RDONLY, S_IFREG), -EINVAL);
	assert_int_equal(fn(fx->root_fd, "/tmp/perf-7.map/x", O_RDONLY, S_IFREG), -ENOTDIR);

	fd = fn(fx->root_fd, "/tmp", O_RDONLY | O_DIRECTORY, S_IFDIR);
	assert_true(fd >= 0);
	close(fd);
	fd = fn(fx->root_fd, "/tmp/perf-7.map", O_PATH, S_IFREG);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFL) & O_PATH);
	close(fd);

	if (!walk) {
		/* ".." cannot climb out: "/../../etc/hostname" is the root's own etc/hostname. */
		fd = fn(fx->root_fd, "/../../../etc/hostname", O_RDONLY, S_IFREG);
		assert_true(fd >= 0);
		read_fd(fd, buf, sizeof(buf));
		assert_string_equal(buf, "container\n");
		close(fd);
		fd = fn(fx->root_fd, "/tmp/sub/../../tmp/perf-7.map", O_RDONLY, S_IFREG);
		assert_true(fd >= 0);
		close(fd);
	} else {
		assert_int_equal(fn(fx->root_fd, "/../etc/hostname", O_RDONLY, S_IFREG), -EXDEV);
	}
}

static void test_dotnet_open_in_root_openat2(void **state)
{
	check_open_in_root(*state, dotnet__openat_in_root, 0);
}

static void test_dotnet_open_in_root_walk(void **state)
{
	check_open_in_root(*state, dotnet__openat_in_root_walk, 1);
}

static void test_dotnet_open_in_root_helper(void **state)
{
	struct fixture *fx = *state;
	int fd;

	fd = dotnet__open_in_root(fx->root_fd, "/tmp/perf-7.map", O_RDONLY);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(dotnet__open_in_root(fx->root_fd, "/tmp/jit-7.dump", O_RDONLY), -ELOOP);
	assert_int_equal(dotnet__open_in_root(-1, "/tmp/perf-7.map", O_RDONLY), -EINVAL);
	assert_int_equal(dotnet__open_in_root(fx->root_fd, NULL, O_RDONLY), -EINVAL);
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
	int root_fd;
	pid_t pid;

	/* A process whose DOTNET_PerfMapJitDumpPath points into the fixture; its root is ours. */
	snprintf(env_dir, sizeof(env_dir), "DOTNET_PerfMapJitDumpPath=%s/tmp", fx->root);
	pid = spawn_with_env(envp);
	root_fd = dotnet__open_root(pid);
	assert_true(root_fd >= 0);
	assert_int_equal(dotnet__open_jit_files(pid, root_fd, 7, &f), 0);
	snprintf(name, sizeof(name), "%s/tmp", fx->root);
	assert_string_equal(f.dir, name);
	assert_int_equal(f.map_err, 0);
	assert_int_equal(f.jitdump_err, -ELOOP);
	dotnet__close_jit_files(&f);
	close(root_fd);
	reap(pid);
	assert_true(dotnet__open_root(pid) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dotnet_is_runtime_path),
		cmocka_unit_test(test_dotnet_parse_nspid),
		cmocka_unit_test(test_dotnet_nspid_self),
		cmocka_unit_test(test_dotnet_parse_starttime),
		cmocka_unit_test(test_dotnet_starttime_self),
		cmocka_unit_test(test_dotnet_parse_environ),
		cmocka_unit_test(test_dotnet_getenv_process),
		cmocka_unit_test(test_dotnet_dirs_default_and_legacy),
		cmocka_unit_test_setup_teardown(test_dotnet_open_in_root_openat2, setup_root,
						teardown_root),
		cmocka_unit_test_setup_teardown(test_dotnet_open_in_root_walk, setup_root,
						teardown_root),
		cmocka_unit_test_setup_teardown(test_dotnet_open_in_root_helper, setup_root,
						teardown_root),
		cmocka_unit_test_setup_teardown(test_dotnet_open_jit_files, setup_root,
						teardown_root),
		cmocka_unit_test_setup_teardown(test_dotnet_open_jit_files_process, setup_root,
						teardown_root),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
