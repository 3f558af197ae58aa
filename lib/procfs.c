/* procfs.c: /proc/<pid> parsers (status, stat, environ) and bounded reads through its fd. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"
#include "util.h"

#define ENVIRON_MAX	(4u << 20)	/* the kernel caps argv+envp near this by default */
#define PROC_SMALL_MAX	8192		/* status and stat are far smaller */

int procfs__open(int pid)
{
	char path[64];
	int fd;

	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d", pid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int procfs__open_root(int dir_fd)
{
	int fd;

	if (dir_fd < 0)
		return -EINVAL;
	fd = openat(dir_fd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Parse a decimal pid in [1, INT_MAX]; *end is set past the digits. */
static int parse_pid(const char *p, const char *limit, const char **end, int *out)
{
	long long v = 0;
	const char *s = p;

	while (s < limit && *s >= '0' && *s <= '9') {
		v = v * 10 + (*s - '0');
		if (v > INT_MAX)
			return -EINVAL;
		s++;
	}
	if (s == p || v == 0)
		return -EINVAL;
	*end = s;
	*out = (int)v;
	return 0;
}

/* Last number on a "Key:\t1\t2\t3" line (line excludes the key). */
static int last_number(const char *p, const char *eol, int *out)
{
	int found = 0, v;

	while (p < eol) {
		if (*p == ' ' || *p == '\t') {
			p++;
			continue;
		}
		if (parse_pid(p, eol, &p, &v))
			return -EINVAL;
		*out = v;
		found = 1;
	}
	return found ? 0 : -EINVAL;
}

int procfs__parse_nspid(const char *status, size_t len, int *nspid)
{
	const char *p = status, *end = status + len;
	const char *tgid = NULL, *tgid_eol = NULL;

	if (!status || !nspid)
		return -EINVAL;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));

		if (!eol)
			eol = end;
		if ((size_t)(eol - p) >= 7 && memcmp(p, "NStgid:", 7) == 0)
			return last_number(p + 7, eol, nspid);
		if ((size_t)(eol - p) >= 5 && memcmp(p, "Tgid:", 5) == 0) {
			tgid = p + 5;
			tgid_eol = eol;
		}
		p = eol + 1;
	}
	/* Kernels before 4.1 have no NStgid; they cannot report another namespace's view. */
	if (tgid)
		return last_number(tgid, tgid_eol, nspid);
	return -ENOENT;
}

int procfs__nspid(int dir_fd, int *nspid)
{
	char buf[PROC_SMALL_MAX];
	long n;

	if (dir_fd < 0 || !nspid)
		return -EINVAL;
	n = read_small_file(dir_fd, "status", buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	return procfs__parse_nspid(buf, (size_t)n, nspid);
}

/* Field `field` (counted from 1, as in proc(5)) of stat as an unsigned decimal. */
static int stat_field(const char *stat, size_t len, int field, uint64_t *out)
{
	const char *p, *end = stat + len;
	int f = 3;	/* the first field after "pid (comm) " */

	/* comm may contain spaces and parentheses: the last ')' ends it. */
	p = memrchr(stat, ')', len);
	if (!p)
		return -EINVAL;
	p++;
	while (p < end) {
		const char *tok;

		while (p < end && *p == ' ')
			p++;
		tok = p;
		while (p < end && *p != ' ' && *p != '\n')
			p++;
		if (p == tok)
			break;
		if (f == field) {
			uint64_t v = 0;

			for (const char *s = tok; s < p; s++) {
				uint64_t d = (uint64_t)(*s - '0');

				if (*s < '0' || *s > '9' || v > UINT64_MAX / 10 ||
				    (v == UINT64_MAX / 10 && d > UINT64_MAX % 10))
					return -EINVAL;
				v = v * 10 + d;
			}
			*out = v;
			return 0;
		}
		f++;
	}
	return -EINVAL;
}

int procfs__parse_starttime(const char *stat, size_t len, uint64_t *starttime)
{
	if (!stat || !starttime)
		return -EINVAL;
	return stat_field(stat, len, 22, starttime);
}

int procfs__parse_cputime(const char *stat, size_t len, uint64_t *ticks)
{
	uint64_t utime, stime;
	int err;

	if (!stat || !ticks)
		return -EINVAL;
	if ((err = stat_field(stat, len, 14, &utime)) || (err = stat_field(stat, len, 15, &stime)))
		return err;
	if (utime > UINT64_MAX - stime)
		return -EINVAL;
	*ticks = utime + stime;
	return 0;
}

int procfs__starttime(int dir_fd, uint64_t *starttime)
{
	char buf[PROC_SMALL_MAX];
	long n;

	if (dir_fd < 0 || !starttime)
		return -EINVAL;
	n = read_small_file(dir_fd, "stat", buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	return procfs__parse_starttime(buf, (size_t)n, starttime);
}

int procfs__parse_environ(const char *env, size_t env_len, const char *name, char *buf, size_t len)
{
	const char *p = env, *end = env + env_len;
	size_t nlen;

	if (!env || !name || !buf || len == 0)
		return -EINVAL;
	nlen = strlen(name);
	if (nlen == 0 || strchr(name, '='))
		return -EINVAL;
	while (p < end) {
		const char *eoe = memchr(p, '\0', (size_t)(end - p));
		size_t elen;

		if (!eoe)
			eoe = end;	/* last entry without its NUL */
		elen = (size_t)(eoe - p);
		if (elen > nlen && p[nlen] == '=' && memcmp(p, name, nlen) == 0) {
			size_t vlen = elen - nlen - 1;

			if (vlen >= len)
				return -ENAMETOOLONG;
			memcpy(buf, p + nlen + 1, vlen);
			buf[vlen] = '\0';
			return 0;
		}
		p = eoe + 1;
	}
	return -ENOENT;
}

int procfs__getenv(int dir_fd, const char *name, char *buf, size_t len)
{
	char *env;
	int truncated, err;
	long n;

	if (dir_fd < 0 || !name || !buf || len == 0)
		return -EINVAL;
	n = read_file_alloc(dir_fd, "environ", ENVIRON_MAX, &env, &truncated);
	if (n < 0)
		return (int)n;
	/* empty: a kernel thread, a zombie, or a process that exited since dir_fd was opened */
	err = n ? procfs__parse_environ(env, (size_t)n, name, buf, len) : -ENOENT;
	if (err == -ENOENT && truncated)
		err = -E2BIG;
	free(env);
	return err;
}

int procfs__open_mem(int dir_fd)
{
	int fd;

	if (dir_fd < 0)
		return -EINVAL;
	fd = openat(dir_fd, "mem", O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int procfs__pread_mem(int mem_fd, uint64_t addr, void *buf, size_t len)
{
	size_t done = 0;

	if (mem_fd < 0 || (!buf && len))
		return -EINVAL;
	/* Offsets are signed: an address past INT64_MAX (kernel space) is never the process's. */
	if (len && (addr > (uint64_t)INT64_MAX || len - 1 > (uint64_t)INT64_MAX - addr))
		return -EFAULT;
	while (done < len) {
		ssize_t n = pread(mem_fd, (char *)buf + done, len - done, (off_t)(addr + done));

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n == 0)
			return -ESRCH;	/* no address space left: the process exited */
		if (errno == EINTR)
			continue;
		/* The kernel says EIO for an unmapped page: the same -EFAULT as process_vm_readv. */
		return errno == EIO ? -EFAULT : -errno;
	}
	return 0;
}

int procfs__read_mem(int dir_fd, uint64_t addr, void *buf, size_t len)
{
	int fd, err;

	if (dir_fd < 0 || (!buf && len))
		return -EINVAL;
	if (len == 0)
		return 0;
	fd = procfs__open_mem(dir_fd);
	if (fd < 0)
		return fd;
	err = procfs__pread_mem(fd, addr, buf, len);
	close(fd);
	return err;
}

/* ---- file system types ------------------------------------------------------------------- */

/* Copy a mountinfo field (ends at a space or the line's end) into out, \ooo escapes undone. */
static int unescape_field(const char *s, const char *end, char *out, size_t len)
{
	size_t n = 0;

	while (s < end && *s != ' ') {
		char c = *s++;

		if (c == '\\' && end - s >= 3 && s[0] >= '0' && s[0] <= '3' && s[1] >= '0' &&
		    s[1] <= '7' && s[2] >= '0' && s[2] <= '7') {
			c = (char)((s[0] - '0') << 6 | (s[1] - '0') << 3 | (s[2] - '0'));
			s += 3;
		}
		if (n + 1 >= len)
			return -ENAMETOOLONG;
		out[n++] = c;
	}
	out[n] = 0;
	return 0;
}

/* Whether mount point m is path or a directory above it. */
static int covers(const char *m, const char *path)
{
	size_t n = strlen(m);

	if (n == 1 && m[0] == '/')
		return 1;
	return !strncmp(m, path, n) && (path[n] == 0 || path[n] == '/');
}

int procfs__parse_fstype(const char *mountinfo, size_t len, const char *path, char *type,
			 size_t type_len)
{
	const char *s = mountinfo, *end = mountinfo + len;
	size_t best = 0;
	int found = 0;

	if (!mountinfo || !path || path[0] != '/' || strstr(path, "/../") || !type || !type_len)
		return -EINVAL;
	while (s < end) {
		const char *eol = memchr(s, '\n', end - s), *f = s, *sep;
		char point[PATH_MAX];
		size_t n;

		if (!eol)
			eol = end;
		/* Fields: id parent major:minor root mount-point options [optional...] - type ... */
		for (int i = 0; i < 4 && f < eol; i++) {
			f = memchr(f, ' ', eol - f);
			f = f ? f + 1 : eol;
		}
		sep = f < eol ? memmem(f, eol - f, " - ", 3) : NULL;
		if (sep && !unescape_field(f, eol, point, sizeof(point)) && covers(point, path) &&
		    (n = strlen(point)) >= best) {
			if (unescape_field(sep + 3, eol, type, type_len))
				return -ENAMETOOLONG;
			best = n;
			found = 1;
		}
		s = eol + 1;
	}
	return found ? 0 : -ENOENT;
}

int procfs__fstype(int dir_fd, const char *path, char *type, size_t type_len)
{
	char *buf;
	long n;
	int err;

	if (dir_fd < 0)
		return -EINVAL;
	n = read_file_alloc(dir_fd, "mountinfo", 16u << 20, &buf, NULL);
	if (n < 0)
		return n;
	err = procfs__parse_fstype(buf, n, path, type, type_len);
	free(buf);
	return err;
}

int procfs__fstype_remote(const char *type)
{
	static const char *const remote[] = { "fuse", "fuseblk", "nfs", "nfs4", "cifs", "smb3",
					      "smbfs", "ncpfs", "9p", "ceph", "afs", "coda",
					      "glusterfs", "lustre", "gfs2", "ocfs2", "virtiofs",
					      "orangefs", "davfs", "sshfs" };

	if (!strncmp(type, "fuse.", 5))
		return 1;
	for (size_t i = 0; i < sizeof(remote) / sizeof(remote[0]); i++)
		if (!strcmp(type, remote[i]))
			return 1;
#ifdef SPANPROF_TEST_BUILD
	/* Only in build/spanprof-test: a shipped binary never reads it (tests/integration/switches.sh). */
	size_t n = strlen(type);

	for (const char *t = getenv("SPANPROF_TEST_REMOTE_FSTYPES"); t && *t;
	     t += strcspn(t, ",") + (t[strcspn(t, ",")] == ',')) {
		if (!strncmp(t, type, n) && (t[n] == ',' || t[n] == 0))
			return 1;
	}
#endif
	return 0;
}

int procfs__fsmagic_remote(long magic)
{
	/* include/uapi/linux/magic.h and fs/smb: FUSE, NFS, SMB2, CIFS, SMB1, 9P, Ceph, AFS (two),
	 * Coda, OCFS2, GFS2, Lustre, OrangeFS. */
	static const unsigned long remote[] = { 0x65735546, 0x6969, 0xfe534d42, 0xff534d42, 0x517b,
						0x01021997, 0x00c36400, 0x5346414f, 0x6b414653,
						0x73757245, 0x7461636f, 0x01161970, 0x0bd00bd0,
						0x20030528 };

	for (size_t i = 0; i < sizeof(remote) / sizeof(remote[0]); i++)
		if ((unsigned long)magic == remote[i])
			return 1;
	return 0;
}
