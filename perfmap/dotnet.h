/* dotnet.h: recognise a .NET process, apply the runtime's rules for where its perf map, jitdump and
 * diagnostic socket are, and open those files from the host (container-safe, no symlinks). */
#ifndef SPANPROF_DOTNET_H
#define SPANPROF_DOTNET_H

#include <stddef.h>
#include <stdint.h>

/*
 * Conventions: functions return 0 (or an fd / a count) on success and -errno on failure.
 * The process is given as dir_fd, its open /proc/<pid> directory, and root_fd, its
 * /proc/<pid>/root (lib/procfs.h), never as a pid number. Everything read from another process
 * is untrusted: files inside its root are opened with rootfs__open(ROOTFS_NO_SYMLINKS)
 * (lib/rootfs.h), without following any symlink.
 */

/* Longest directory we accept from a process's environment (DOTNET_PerfMapJitDumpPath, TMPDIR). */
#define DOTNET_DIR_MAX 1024

/* 1 when maps_path (a /proc/<pid>/maps path column) names the CoreCLR runtime, libcoreclr.so
 * (also with a " (deleted)" suffix, as after a runtime upgrade under a running process); else 0. */
int dotnet__is_runtime_path(const char *maps_path);

/* Directory the runtime writes perf-<nspid>.map and jit-<nspid>.dump to, from the environment of
 * the process whose /proc/<pid> directory is dir_fd (procfs__getenv): DOTNET_PerfMapJitDumpPath
 * (or COMPlus_PerfMapJitDumpPath), else "/tmp"; set but empty is "/" (the runtime formats
 * "<empty>/perf-<pid>.map"). TMPDIR is ignored by the runtime for these files (checked on
 * .NET 10.0.12). A relative path (it would be relative to the process's cwd) is -EINVAL. */
int dotnet__jit_dir(int dir_fd, char *buf, size_t len);

/* Directory of the diagnostic socket: $TMPDIR of the process (dir_fd as above), else "/tmp"
 * (checked on .NET 10.0.12: the socket follows TMPDIR, the perf map does not; an empty TMPDIR is
 * "/tmp", as in the PAL's GetTempPathA). A relative TMPDIR is -EINVAL. */
int dotnet__tmp_dir(int dir_fd, char *buf, size_t len);

/* The perf map and jitdump of one process, opened read-only inside its root. */
struct dotnet_jit_files {
	int map_fd;		/* perf-<nspid>.map, -1 when not opened */
	int jitdump_fd;		/* jit-<nspid>.dump, -1 when not opened */
	int map_err;		/* 0, or -ENOENT (not written: normal), -ELOOP (symlink refused), ... */
	int jitdump_err;	/* same for the jitdump */
	char dir[DOTNET_DIR_MAX];	/* directory inside the root that was searched */
};

/* Open <dir>/perf-<nspid>.map and <dir>/jit-<nspid>.dump inside root_fd, dir from
 * dotnet__jit_dir(dir_fd). Per-file results go to out (fds -1 on failure): -ELOOP for a symlink,
 * -EINVAL for what is not a regular file (a FIFO is never opened). The return value is 0 when the
 * directory was determined (even if both files are missing), else -errno. */
int dotnet__open_jit_files(int dir_fd, int root_fd, int nspid, struct dotnet_jit_files *out);

/* Same with the directory given (tests, or a caller that already knows it). */
int dotnet__open_jit_files_in(int root_fd, const char *dir, int nspid, struct dotnet_jit_files *out);

/* Close the fds in f and set them to -1. NULL-safe. */
void dotnet__close_jit_files(struct dotnet_jit_files *f);

#endif /* SPANPROF_DOTNET_H */
