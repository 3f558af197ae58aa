/* dotnet.c: /proc plumbing for .NET processes: runtime detection, namespace pid, environment, and opening files inside a container root without following symlinks. */
#include "dotnet.h"
#include "rootfs.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ENVIRON_MAX	(4u << 20)	/* the kernel caps argv+envp near this by default */
#define PROC_SMALL_MAX	8192		/* /proc/<pid>/status and stat are far smaller */

static const char RUNTIME_LIB[] = "libcoreclr.so";

int dotnet__is_runtime_path(const char *maps_path)
{
	static const char deleted[] = " (deleted)";
	const char *base;
	size_t len;

	if (!maps_path)
		return 0;
	base = strrchr(maps_path, '/');
	base = base ? base + 1 : maps_path;
	len = strlen(base);
	if (len >= sizeof(deleted) - 1 &&
	    strcmp(base + len - (sizeof(deleted) - 1), deleted) == 0)
		len -= sizeof(deleted) - 1;
	return len == sizeof(RUNTIME_LIB) - 1 && memcmp(base, RUNTIME_LIB, len) == 0;
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

int dotnet__parse_nspid(const char *status, size_t len, int *nspid)
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

int dotnet__nspid(int pid, int *nspid)
{
	char path[64], buf[PROC_SMALL_MAX];
	ssize_t n;

	if (pid <= 0 || !nspid)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	n = read_small_file(AT_FDCWD, path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	return dotnet__parse_nspid(buf, (size_t)n, nspid);
}

int dotnet__parse_starttime(const char *stat, size_t len, uint64_t *starttime)
{
	const char *p, *end = stat + len;
	int field = 3;	/* the first field after "pid (comm) " */

	if (!stat || !starttime)
		return -EINVAL;
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
		if (field == 22) {
			uint64_t v = 0;

			for (const char *s = tok; s < p; s++) {
				uint64_t d = (uint64_t)(*s - '0');

				if (*s < '0' || *s > '9' || v > UINT64_MAX / 10 ||
				    (v == UINT64_MAX / 10 && d > UINT64_MAX % 10))
					return -EINVAL;
				v = v * 10 + d;
			}
			*starttime = v;
			return 0;
		}
		field++;
	}
	return -EINVAL;
}

int dotnet__starttime(int pid, uint64_t *starttime)
{
	char path[64], buf[PROC_SMALL_MAX];
	ssize_t n;

	if (pid <= 0 || !starttime)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	n = read_small_file(AT_FDCWD, path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	return dotnet__parse_starttime(buf, (size_t)n, starttime);
}

int dotnet__parse_environ(const char *env, size_t env_len, const char *name, char *buf, size_t len)
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

int dotnet__getenv(int pid, const char *name, char *buf, size_t len)
{
	char path[64], *env;
	int truncated, err;
	long n;

	if (pid <= 0 || !name || !buf || len == 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	n = read_file_alloc(AT_FDCWD, path, ENVIRON_MAX, &env, &truncated);
	if (n < 0)
		return n;
	/* empty: a kernel thread or a zombie */
	err = n ? dotnet__parse_environ(env, n, name, buf, len) : -ENOENT;
	if (err == -ENOENT && truncated)
		err = -E2BIG;
	free(env);
	return err;
}

/* getenv for a directory variable: absolute, fits DOTNET_DIR_MAX-ish buffers. */
static int dir_from_env(int pid, const char *name, char *buf, size_t len)
{
	int err = dotnet__getenv(pid, name, buf, len);

	if (err)
		return err;
	if (buf[0] != '/')
		return buf[0] ? -EINVAL : -ENOENT;
	return 0;
}

int dotnet__jit_dir(int pid, char *buf, size_t len)
{
	int err;

	if (!buf || len < sizeof("/tmp"))
		return -EINVAL;
	/* CLRConfig looks the DOTNET_ prefix up before the legacy COMPlus_ one. */
	err = dotnet__getenv(pid, "DOTNET_PerfMapJitDumpPath", buf, len);
	if (err == -ENOENT)
		err = dotnet__getenv(pid, "COMPlus_PerfMapJitDumpPath", buf, len);
	if (err == -ENOENT) {
		strcpy(buf, "/tmp");
		return 0;
	}
	if (err)
		return err;
	if (buf[0] == '\0') {
		/* Set but empty: the runtime formats "<empty>/perf-<pid>.map", i.e. the root. */
		strcpy(buf, "/");
		return 0;
	}
	return buf[0] == '/' ? 0 : -EINVAL;
}

int dotnet__tmp_dir(int pid, char *buf, size_t len)
{
	int err;

	if (!buf || len < sizeof("/tmp"))
		return -EINVAL;
	/* The PAL's GetTempPathA: $TMPDIR when set and non-empty, else /tmp. */
	err = dir_from_env(pid, "TMPDIR", buf, len);
	if (err == -ENOENT) {
		strcpy(buf, "/tmp");
		return 0;
	}
	return err;
}

int dotnet__open_root(int pid)
{
	char path[64];
	int fd;

	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int dotnet__openat_in_root_walk(int root_fd, const char *path, int flags, mode_t want_type)
{
	if (root_fd < 0)
		return -EINVAL;
	return rootfs__open(root_fd, path, flags, want_type, 0, ROOTFS_NO_SYMLINKS | ROOTFS_WALK);
}

int dotnet__openat_in_root(int root_fd, const char *path, int flags, mode_t want_type)
{
	if (root_fd < 0)
		return -EINVAL;
	return rootfs__open(root_fd, path, flags, want_type, 0, ROOTFS_NO_SYMLINKS);
}

int dotnet__open_in_root(int root_fd, const char *path, int flags)
{
	return dotnet__openat_in_root(root_fd, path, flags, S_IFREG);
}

static int open_one(int root_fd, const char *dir, const char *fmt, int nspid, int *fd_out)
{
	char path[DOTNET_DIR_MAX + 64];
	int n, fd;

	*fd_out = -1;
	n = snprintf(path, sizeof(path), fmt, dir, nspid);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	fd = dotnet__open_in_root(root_fd, path, O_RDONLY);
	if (fd < 0)
		return fd;
	*fd_out = fd;
	return 0;
}

int dotnet__open_jit_files_in(int root_fd, const char *dir, int nspid, struct dotnet_jit_files *out)
{
	if (!out)
		return -EINVAL;
	out->map_fd = out->jitdump_fd = -1;
	out->map_err = out->jitdump_err = -EINVAL;
	out->dir[0] = '\0';
	if (root_fd < 0 || !dir || nspid <= 0)
		return -EINVAL;
	if (strlen(dir) >= sizeof(out->dir))
		return -ENAMETOOLONG;
	strcpy(out->dir, dir);
	out->map_err = open_one(root_fd, dir, "%s/perf-%d.map", nspid, &out->map_fd);
	out->jitdump_err = open_one(root_fd, dir, "%s/jit-%d.dump", nspid, &out->jitdump_fd);
	return 0;
}

int dotnet__open_jit_files(int pid, int root_fd, int nspid, struct dotnet_jit_files *out)
{
	char dir[DOTNET_DIR_MAX];
	int err;

	if (!out)
		return -EINVAL;
	out->map_fd = out->jitdump_fd = -1;
	out->map_err = out->jitdump_err = -EINVAL;
	out->dir[0] = '\0';
	err = dotnet__jit_dir(pid, dir, sizeof(dir));
	if (err)
		return err;
	return dotnet__open_jit_files_in(root_fd, dir, nspid, out);
}

void dotnet__close_jit_files(struct dotnet_jit_files *f)
{
	if (!f)
		return;
	if (f->map_fd >= 0)
		close(f->map_fd);
	if (f->jitdump_fd >= 0)
		close(f->jitdump_fd);
	f->map_fd = f->jitdump_fd = -1;
}
