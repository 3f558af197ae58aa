/* dotnet.c: .NET process plumbing: runtime detection, where the runtime puts its perf map,
 * jitdump and diagnostic socket, and opening the JIT files inside the process's root. */
#include "dotnet.h"
#include "procfs.h"
#include "rootfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* getenv for a directory variable: absolute, fits DOTNET_DIR_MAX-ish buffers. */
static int dir_from_env(int dir_fd, const char *name, char *buf, size_t len)
{
	int err = procfs__getenv(dir_fd, name, buf, len);

	if (err)
		return err;
	if (buf[0] != '/')
		return buf[0] ? -EINVAL : -ENOENT;
	return 0;
}

int dotnet__jit_dir(int dir_fd, char *buf, size_t len)
{
	int err;

	if (!buf || len < sizeof("/tmp"))
		return -EINVAL;
	/* CLRConfig looks the DOTNET_ prefix up before the legacy COMPlus_ one. */
	err = procfs__getenv(dir_fd, "DOTNET_PerfMapJitDumpPath", buf, len);
	if (err == -ENOENT)
		err = procfs__getenv(dir_fd, "COMPlus_PerfMapJitDumpPath", buf, len);
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

int dotnet__tmp_dir(int dir_fd, char *buf, size_t len)
{
	int err;

	if (!buf || len < sizeof("/tmp"))
		return -EINVAL;
	/* The PAL's GetTempPathA: $TMPDIR when set and non-empty, else /tmp. */
	err = dir_from_env(dir_fd, "TMPDIR", buf, len);
	if (err == -ENOENT) {
		strcpy(buf, "/tmp");
		return 0;
	}
	return err;
}

static int open_one(int root_fd, const char *dir, const char *fmt, int nspid, int *fd_out)
{
	char path[DOTNET_DIR_MAX + 64];
	int n, fd;

	*fd_out = -1;
	n = snprintf(path, sizeof(path), fmt, dir, nspid);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	fd = rootfs__open(root_fd, path, O_RDONLY, S_IFREG, 0, ROOTFS_NO_SYMLINKS);
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

int dotnet__open_jit_files(int dir_fd, int root_fd, int nspid, struct dotnet_jit_files *out)
{
	char dir[DOTNET_DIR_MAX];
	int err;

	if (!out)
		return -EINVAL;
	out->map_fd = out->jitdump_fd = -1;
	out->map_err = out->jitdump_err = -EINVAL;
	out->dir[0] = '\0';
	err = dotnet__jit_dir(dir_fd, dir, sizeof(dir));
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
