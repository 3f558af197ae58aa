/* rootfs.c: opening files inside a container's root (openat2 in-root, or a component walk). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rootfs.h"

#ifndef SYS_openat2
#define SYS_openat2 437	/* same number on every architecture */
#endif

static int openat2_missing;	/* set once the kernel or a seccomp filter refuses openat2 */

/* Component walk: O_PATH|O_NOFOLLOW one name at a time; refuses symlinks and "..", so nothing
 * leaves the root even without openat2. Returns an O_PATH fd or -errno. */
static int walk(int root_fd, const char *path)
{
	char buf[PATH_MAX], *save = NULL, *comp, *next;
	struct stat st;
	int cur, fd, err;

	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, path);
	if (root_fd == AT_FDCWD)
		cur = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	else
		cur = openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	for (comp = strtok_r(buf, "/", &save); comp; comp = next) {
		next = strtok_r(NULL, "/", &save);
		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..")) {
			/* Without openat2, ".." cannot be kept inside the root race-free: refuse. */
			err = -EXDEV;
			goto close_cur;
		}
		fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			goto close_cur;
		}
		close(cur);
		cur = fd;
		if (fstat(cur, &st) < 0) {
			err = -errno;
			goto close_cur;
		}
		if (S_ISLNK(st.st_mode)) {
			err = -ELOOP;
			goto close_cur;
		}
		if (next && !S_ISDIR(st.st_mode)) {
			err = -ENOTDIR;
			goto close_cur;
		}
	}
	return cur;

close_cur:
	close(cur);
	return err;
}

static int open_path(int root_fd, const char *path, unsigned int how_flags)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_NO_MAGICLINKS,
	};
	int fd, tries;

	if (how_flags & ROOTFS_NO_SYMLINKS) {
		how.flags |= O_NOFOLLOW;
		how.resolve |= RESOLVE_NO_SYMLINKS;
	}
	if (root_fd != AT_FDCWD)
		how.resolve |= RESOLVE_IN_ROOT;
	if ((how_flags & ROOTFS_WALK) || openat2_missing)
		goto fallback;
	/* EAGAIN: a concurrent rename raced the in-root lookup, and the kernel asks for a retry. */
	for (tries = 0; tries < 8; tries++) {
		fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
		if (fd >= 0)
			return fd;
		if (errno != EAGAIN && errno != EINTR)
			break;
	}
	/* ENOSYS: kernel < 5.6. EPERM: a seccomp filter rejecting an unknown syscall; an O_PATH
	 * open has no other EPERM case. */
	if (errno != ENOSYS && errno != EPERM)
		return -errno;
	openat2_missing = 1;
fallback:
	if (root_fd == AT_FDCWD && !(how_flags & ROOTFS_NO_SYMLINKS) && !(how_flags & ROOTFS_WALK)) {
		fd = open(path, O_PATH | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	return walk(root_fd, path);
}

int rootfs__open(int root_fd, const char *path, int flags, mode_t want_type, uint64_t max_size,
		 unsigned int how)
{
	struct stat st, st2;
	char self[64];
	int pfd, fd, err;

	if (!path || !*path || (root_fd < 0 && root_fd != AT_FDCWD))
		return -EINVAL;
	pfd = open_path(root_fd, path, how);
	if (pfd < 0)
		return pfd;
	/* Check the inode through O_PATH first: a container chooses what its paths point at. */
	if (fstat(pfd, &st) < 0) {
		err = -errno;
		goto close_pfd;
	}
	if (S_ISLNK(st.st_mode)) {
		err = -ELOOP;
		goto close_pfd;
	}
	if ((st.st_mode & S_IFMT) != (want_type & S_IFMT)) {
		err = -EINVAL;
		goto close_pfd;
	}
	if (max_size && S_ISREG(st.st_mode) && (uint64_t)st.st_size > max_size) {
		err = -EFBIG;
		goto close_pfd;
	}
	if (flags & O_PATH)
		return pfd;
	/* Reopening through the fd's magic link gets the very inode just checked. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, (flags & ~O_NOFOLLOW) | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		err = -errno;
		goto close_pfd;
	}
	if (fstat(fd, &st2) < 0 || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev) {
		err = -ESTALE;
		close(fd);
		goto close_pfd;
	}
	close(pfd);
	return fd;

close_pfd:
	close(pfd);
	return err;
}
