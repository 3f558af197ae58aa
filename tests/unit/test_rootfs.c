/* test_rootfs.c: unit tests for lib/rootfs (opening files inside a root, never leaving it). */
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

#include "rootfs.h"
#include "testutil.h"

/* Every test runs on testutil__root_setup's container root (its layout: testutil.h). */

typedef int (*open_fn)(int root_fd, const char *path, int flags, mode_t want_type);

/* The same expectations hold for openat2 and for the component walk fallback. */
static void check_open_in_root(struct testutil_root *fx, open_fn fn, int walk)
{
	char buf[64];
	int fd;

	fd = fn(fx->root_fd, "/tmp/perf-7.map", O_RDONLY, S_IFREG);
	assert_true(fd >= 0);
	testutil__read_fd(fd, buf, sizeof(buf));
	assert_string_equal(buf, "inside\n");
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);

	/* relative paths are relative to the root too */
	fd = fn(fx->root_fd, "tmp/sub/perf-9.map", O_RDONLY, S_IFREG);
	assert_true(fd >= 0);
	testutil__read_fd(fd, buf, sizeof(buf));
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
		testutil__read_fd(fd, buf, sizeof(buf));
		assert_string_equal(buf, "container\n");
		close(fd);
		fd = fn(fx->root_fd, "/tmp/sub/../../tmp/perf-7.map", O_RDONLY, S_IFREG);
		assert_true(fd >= 0);
		close(fd);
	} else {
		assert_int_equal(fn(fx->root_fd, "/../etc/hostname", O_RDONLY, S_IFREG), -EXDEV);
	}
}

/* rootfs__open as perfmap/ calls it (no symlinks), by openat2 and by the forced walk. */
static int open_openat2(int root_fd, const char *path, int flags, mode_t want_type)
{
	return rootfs__open(root_fd, path, flags, want_type, 0, ROOTFS_NO_SYMLINKS);
}

static int open_walk(int root_fd, const char *path, int flags, mode_t want_type)
{
	return rootfs__open(root_fd, path, flags, want_type, 0, ROOTFS_NO_SYMLINKS | ROOTFS_WALK);
}

static void test_rootfs_open_openat2(void **state)
{
	check_open_in_root(*state, open_openat2, 0);
}

static void test_rootfs_open_walk(void **state)
{
	check_open_in_root(*state, open_walk, 1);
}

static void test_rootfs_open_regular(void **state)
{
	struct testutil_root *fx = *state;
	int fd;

	fd = rootfs__open(fx->root_fd, "/tmp/perf-7.map", O_RDONLY, S_IFREG, 0, ROOTFS_NO_SYMLINKS);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rootfs__open(fx->root_fd, "/tmp/jit-7.dump", O_RDONLY, S_IFREG, 0,
				      ROOTFS_NO_SYMLINKS), -ELOOP);
	assert_int_equal(rootfs__open(-1, "/tmp/perf-7.map", O_RDONLY, S_IFREG, 0,
				      ROOTFS_NO_SYMLINKS), -EINVAL);
	assert_int_equal(rootfs__open(fx->root_fd, NULL, O_RDONLY, S_IFREG, 0, ROOTFS_NO_SYMLINKS),
			 -EINVAL);
	assert_int_equal(rootfs__open(fx->root_fd, "", O_RDONLY, S_IFREG, 0, ROOTFS_NO_SYMLINKS),
			 -EINVAL);
}

static void test_rootfs_open_max_size(void **state)
{
	struct testutil_root *fx = *state;
	int fd;

	/* "inside\n" is 7 bytes: a cap of 7 opens it, 6 refuses it; 0 means no cap. */
	fd = rootfs__open(fx->root_fd, "/tmp/perf-7.map", O_RDONLY, S_IFREG, 7, ROOTFS_NO_SYMLINKS);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rootfs__open(fx->root_fd, "/tmp/perf-7.map", O_RDONLY, S_IFREG, 6,
				      ROOTFS_NO_SYMLINKS), -EFBIG);
	assert_int_equal(rootfs__open(fx->root_fd, "/tmp/perf-7.map", O_RDONLY, S_IFREG, 6,
				      ROOTFS_NO_SYMLINKS | ROOTFS_WALK), -EFBIG);
}

static void test_rootfs_open_follows_inside_without_flag(void **state)
{
	struct testutil_root *fx = *state;
	char buf[64];
	int fd;

	/* Without ROOTFS_NO_SYMLINKS a symlink is followed, resolved against the root: the
	 * absolute /etc/hostname of jit-7.dump is the root's own file, not the host's. */
	fd = rootfs__open(fx->root_fd, "/tmp/jit-7.dump", O_RDONLY, S_IFREG, 0, 0);
	assert_true(fd >= 0);
	testutil__read_fd(fd, buf, sizeof(buf));
	assert_string_equal(buf, "container\n");
	close(fd);
	fd = rootfs__open(fx->root_fd, "/link/perf-7.map", O_RDONLY, S_IFREG, 0, 0);
	assert_true(fd >= 0);
	close(fd);
	/* The walk refuses symlinks whatever the flags. */
	assert_int_equal(rootfs__open(fx->root_fd, "/tmp/jit-7.dump", O_RDONLY, S_IFREG, 0,
				      ROOTFS_WALK), -ELOOP);
}

int main(void)
{
#define ROOTED(t) cmocka_unit_test_setup_teardown(t, testutil__root_setup, \
						   testutil__root_teardown)
	const struct CMUnitTest tests[] = {
		ROOTED(test_rootfs_open_openat2),
		ROOTED(test_rootfs_open_walk),
		ROOTED(test_rootfs_open_regular),
		ROOTED(test_rootfs_open_max_size),
		ROOTED(test_rootfs_open_follows_inside_without_flag),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
