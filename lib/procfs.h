/* procfs.h: parsers of /proc/<pid>/{status,stat,environ} and readers that go through an open
 * /proc/<pid> directory, so every read stays tied to one process even after its pid is reused. */
#ifndef SPANPROF_PROCFS_H
#define SPANPROF_PROCFS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Conventions: 0 (or an fd) on success, -errno on failure. Parsers take a buffer so tests can
 * feed fixtures; the readers take dir_fd, an fd of /proc/<pid> (procfs__open, or struct proc's
 * dir_fd), never a pid number: once the process exits, reads through dir_fd fail (-ESRCH,
 * -ENOENT, or an empty file) instead of reaching a newer process with the same pid. dir_fd < 0
 * (AT_FDCWD included) is -EINVAL. Everything read from another process is untrusted: reads are
 * bounded.
 */

/* fd of /proc/<pid> (O_RDONLY | O_DIRECTORY | O_CLOEXEC), the one place a pid number is used:
 * check it is the process meant (procfs__starttime) before trusting it. fd or -errno. */
int procfs__open(int pid);

/* O_PATH | O_DIRECTORY fd of <dir_fd>/root, the process's view of "/". Keep it open while the
 * process is of interest: the link disappears when the process exits. fd or -errno. */
int procfs__open_root(int dir_fd);

/* The pid inside the process's own (innermost) pid namespace: the last field of "NStgid:" in
 * status. Kernels without NStgid (< 4.1) fall back to "Tgid:". Returns 0, -EINVAL (malformed),
 * -ENOENT (no such line), or the error reading the file. */
int procfs__parse_nspid(const char *status, size_t len, int *nspid);
int procfs__nspid(int dir_fd, int *nspid);

/* Field 22 (starttime, clock ticks since boot) of stat: with the pid, the identity of a process
 * across pid reuse (and the .NET runtime's "disambiguation key"). comm may hold spaces and
 * parentheses: fields are counted from its last ')'. Returns 0, -EINVAL (malformed), or the
 * error reading the file. */
int procfs__parse_starttime(const char *stat, size_t len, uint64_t *starttime);
int procfs__starttime(int dir_fd, uint64_t *starttime);

/* Fields 14 and 15 of stat (utime + stime): the CPU time the whole process has used, in clock
 * ticks. Returns 0 or -EINVAL (malformed, or a sum past 64 bits). */
int procfs__parse_cputime(const char *stat, size_t len, uint64_t *ticks);

/* One variable from a NUL-separated environment block (the content of environ). Copies the
 * value, NUL-terminated, into buf. Returns 0, -ENOENT (not set), -ENAMETOOLONG (value does not
 * fit in len), -EINVAL (bad arguments). procfs__getenv reads at most 4 MiB of environ; a
 * variable past that is -E2BIG; an empty environ (kernel thread, zombie, exited) is -ENOENT. */
int procfs__parse_environ(const char *env, size_t env_len, const char *name, char *buf, size_t len);
int procfs__getenv(int dir_fd, const char *name, char *buf, size_t len);

/*
 * Read len bytes at addr of the process's memory with pread on <dir_fd>/mem, opened for this
 * call and closed after (no fd is kept per process). Needs ptrace access (root, or the same
 * user without Yama restrictions). Returns 0, -EFAULT (part of the range is not mapped), or
 * -errno (-EACCES/-EPERM: no access; -ESRCH/-ENOENT: the process is gone).
 */
int procfs__read_mem(int dir_fd, uint64_t addr, void *buf, size_t len);

/* The same for a batch of reads: procfs__open_mem gives an fd of <dir_fd>/mem (or -errno) that
 * the caller closes when the batch is done; procfs__pread_mem returns as procfs__read_mem. */
int procfs__open_mem(int dir_fd);
int procfs__pread_mem(int mem_fd, uint64_t addr, void *buf, size_t len);

/*
 * The file system type of path (absolute, as the process sees it; no symlinks, no "..") from a
 * mountinfo text: the type of the last mount whose mount point is path or a directory above it.
 * Mount points are unescaped (\040 is a space). Copies it into type. Returns 0, -ENOENT (no
 * mount covers it: "/" is missing), -EINVAL (bad path), -ENAMETOOLONG. Nothing on the file system
 * itself is asked (a hung FUSE or NFS server cannot stall this); procfs__fstype reads at most
 * 16 MiB of <dir_fd>/mountinfo.
 */
int procfs__parse_fstype(const char *mountinfo, size_t len, const char *path, char *type,
			 size_t type_len);
int procfs__fstype(int dir_fd, const char *path, char *type, size_t type_len);
/* Whether a file system type (mountinfo's, e.g. "nfs4", "fuse.sshfs") is remote or served by a
 * user process (FUSE), whose reads may hang; in a test build (SPANPROF_TEST_BUILD), also any type
 * listed in $SPANPROF_TEST_REMOTE_FSTYPES (comma-separated). statfs_magic: the f_type of
 * fstatfs, the same question (0: unknown). */
int procfs__fstype_remote(const char *type);
int procfs__fsmagic_remote(long statfs_magic);

#endif /* SPANPROF_PROCFS_H */
