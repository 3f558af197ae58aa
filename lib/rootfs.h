/* rootfs.h: the one way to open a file inside a process's root (/proc/<pid>/root) without ever
 * leaving it: perf maps, jitdumps and diagnostic sockets (perfmap/), ELF files (user/symbols/). */
#ifndef SPANPROF_ROOTFS_H
#define SPANPROF_ROOTFS_H

#include <stdint.h>
#include <sys/types.h>

/* how: */
#define ROOTFS_NO_SYMLINKS (1u << 0)	/* refuse every symlink (-ELOOP): files a container writes */
#define ROOTFS_WALK	   (1u << 1)	/* force the component walk (what kernels < 5.6 get; tests) */

/*
 * Open path (absolute or relative, either way resolved from root_fd as "/"; AT_FDCWD: the host,
 * no confinement; any other negative fd is -EINVAL). With a root, the lookup never leaves it:
 * openat2(RESOLVE_IN_ROOT) resolves ".." and absolute symlinks against the root, and with
 * ROOTFS_NO_SYMLINKS every symlink anywhere in the path is refused (-ELOOP), so a process in a
 * container cannot point us at a host file. Where openat2 is missing (ENOSYS: kernel < 5.6, or
 * EPERM from seccomp), or with ROOTFS_WALK, a component walk with O_PATH|O_NOFOLLOW refuses every
 * symlink (-ELOOP) and ".." (-EXDEV). Magic links (/proc/<x>/root, /proc/<x>/fd/<n>) are refused.
 * Mount points inside the root are crossed (a container's /tmp is often its own mount).
 *
 * The inode is opened O_PATH first and must be of want_type (S_IFREG, S_IFDIR, S_IFSOCK: else
 * -EINVAL), so a FIFO or a device is never opened for reading (no blocking, no side effects); a
 * regular file larger than max_size (when not 0) is -EFBIG. Unless flags holds O_PATH, the same
 * inode is then reopened with flags | O_NONBLOCK | O_CLOEXEC. Returns the fd or -errno.
 */
int rootfs__open(int root_fd, const char *path, int flags, mode_t want_type, uint64_t max_size,
		 unsigned int how);

#endif /* SPANPROF_ROOTFS_H */
