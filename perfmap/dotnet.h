/* dotnet.h: recognise a .NET process and reach its files from the host (container-safe, never following symlinks). */
#ifndef SPANPROF_DOTNET_H
#define SPANPROF_DOTNET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Conventions: functions return 0 (or an fd / a count) on success and -errno on failure.
 * Parsers take a buffer so tests can feed fixtures; the /proc readers are thin wrappers.
 * Everything read from /proc/<pid>/ of another process is untrusted: reads are bounded and
 * files inside its root are opened without following any symlink (see dotnet__open_in_root).
 */

/* Longest directory we accept from a process's environment (DOTNET_PerfMapJitDumpPath, TMPDIR). */
#define DOTNET_DIR_MAX 1024

/* 1 when maps_path (a /proc/<pid>/maps path column) names the CoreCLR runtime, libcoreclr.so
 * (also with a " (deleted)" suffix, as after a runtime upgrade under a running process); else 0. */
int dotnet__is_runtime_path(const char *maps_path);

/* The pid inside the process's own (innermost) pid namespace: the last field of "NStgid:" in
 * /proc/<pid>/status. Kernels without NStgid (< 4.1) fall back to "Tgid:".
 * Returns 0, -EINVAL (malformed), -ENOENT (no such line), or the error reading the file. */
int dotnet__parse_nspid(const char *status, size_t len, int *nspid);
int dotnet__nspid(int pid, int *nspid);

/* Field 22 (starttime, clock ticks since boot) of /proc/<pid>/stat. This is the
 * "disambiguation key" in the runtime's diagnostic socket name (checked against
 * GetProcessIdDisambiguationKey in dotnet/runtime's PAL and on .NET 10.0.12).
 * Returns 0 or -EINVAL (malformed) or the error reading the file. */
int dotnet__parse_starttime(const char *stat, size_t len, uint64_t *starttime);
int dotnet__starttime(int pid, uint64_t *starttime);

/* One variable from a NUL-separated environment block (the content of /proc/<pid>/environ).
 * Copies the value, NUL-terminated, into buf. Returns 0, -ENOENT (not set), -ENAMETOOLONG
 * (value does not fit in len), -EINVAL (bad arguments). The /proc variant reads at most
 * 4 MiB; a variable past that is reported as -E2BIG. */
int dotnet__parse_environ(const char *env, size_t env_len, const char *name, char *buf, size_t len);
int dotnet__getenv(int pid, const char *name, char *buf, size_t len);

/* Directory the runtime writes perf-<nspid>.map and jit-<nspid>.dump to: DOTNET_PerfMapJitDumpPath
 * (or COMPlus_PerfMapJitDumpPath), else "/tmp". TMPDIR is ignored by the runtime for these files
 * (checked on .NET 10.0.12). A relative path (it would be relative to the process's cwd) is -EINVAL. */
int dotnet__jit_dir(int pid, char *buf, size_t len);

/* Directory of the diagnostic socket: $TMPDIR of the process, else "/tmp" (checked on .NET 10.0.12:
 * the socket follows TMPDIR, the perf map does not). A relative TMPDIR is -EINVAL. */
int dotnet__tmp_dir(int pid, char *buf, size_t len);

/* O_PATH|O_DIRECTORY fd of /proc/<pid>/root, the process's view of "/". Keep it open while the
 * process is of interest: the link disappears when the process exits. Returns fd or -errno. */
int dotnet__open_root(int pid);

/*
 * Open path (absolute or relative, either way resolved from root_fd as "/") inside the root,
 * refusing to follow any symlink anywhere in the path (-ELOOP): a process in a container cannot
 * point us at a host file. ".." cannot climb above the root. Uses openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS); when openat2 is unavailable (kernel < 5.6: ENOSYS,
 * or a seccomp filter: EPERM) it walks the path one component at a time with O_PATH|O_NOFOLLOW,
 * refusing symlinks the same way and refusing ".." components (-EXDEV). Mount points inside the
 * root are crossed (a container's /tmp is often its own mount).
 *
 * The inode is first opened as O_PATH and checked with fstat to be of type want_type
 * (S_IFREG, S_IFDIR, S_IFSOCK); a FIFO or device is therefore never opened (no blocking, no side
 * effects). Then, unless flags contains O_PATH, the same inode is reopened with
 * flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC. Returns the fd, or -errno: -ENOENT (missing),
 * -ELOOP (symlink refused), -EINVAL (not of want_type), -EXDEV ("..", fallback walk only).
 */
int dotnet__openat_in_root(int root_fd, const char *path, int flags, mode_t want_type);

/* dotnet__openat_in_root for regular files. */
int dotnet__open_in_root(int root_fd, const char *path, int flags);

/* The component walk used when openat2 is missing; exposed so tests can exercise it. */
int dotnet__openat_in_root_walk(int root_fd, const char *path, int flags, mode_t want_type);

/* The perf map and jitdump of one process, opened read-only inside its root. */
struct dotnet_jit_files {
	int map_fd;		/* perf-<nspid>.map, -1 when not opened */
	int jitdump_fd;		/* jit-<nspid>.dump, -1 when not opened */
	int map_err;		/* 0, or -ENOENT (not written: normal), -ELOOP (symlink refused), ... */
	int jitdump_err;	/* same for the jitdump */
	char dir[DOTNET_DIR_MAX];	/* directory inside the root that was searched */
};

/* Open <dir>/perf-<nspid>.map and <dir>/jit-<nspid>.dump inside root_fd, dir from
 * dotnet__jit_dir(pid). Per-file results go to out (fds -1 on failure); the return value is 0
 * when the directory was determined (even if both files are missing), else -errno. */
int dotnet__open_jit_files(int pid, int root_fd, int nspid, struct dotnet_jit_files *out);

/* Same with the directory given (tests, or a caller that already knows it). */
int dotnet__open_jit_files_in(int root_fd, const char *dir, int nspid, struct dotnet_jit_files *out);

/* Close the fds in f and set them to -1. NULL-safe. */
void dotnet__close_jit_files(struct dotnet_jit_files *f);

#endif /* SPANPROF_DOTNET_H */
