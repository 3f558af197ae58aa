/* rtversion.c: a .NET runtime's version from its libcoreclr.so, and the perf map hazards of each
 * version (the facts and their sources: perfmap/README.md, "Runtime versions and perf map
 * hazards"). */
#include "rtversion.h"
#include "rootfs.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char SCCSID[] = "@(#)Version ";
static const char COMMIT[] = " @Commit: ";

/* A decimal field of at most 9 digits at *p (below end): 0 and *p past it, or -1. */
static int field(const char **p, const char *end, uint32_t *v)
{
	const char *s = *p;
	uint32_t n = 0;
	int digits = 0;

	while (s < end && *s >= '0' && *s <= '9' && digits < 10) {
		n = n * 10 + (uint32_t)(*s++ - '0');
		digits++;
	}
	if (!digits || digits > 9)
		return -1;
	*v = n;
	*p = s;
	return 0;
}

/* The string at s (s..end), just past "@(#)Version ". */
static int parse_at(const char *s, const char *end, struct rtversion *out)
{
	uint32_t f[4];
	uint32_t date;

	for (int i = 0; i < 4; i++) {
		if (field(&s, end, &f[i]) || (i < 3 && (s >= end || *s++ != '.')))
			return -1;
	}
	memset(out, 0, sizeof(*out));
	out->major = f[0];
	out->minor = f[1];
	/* major.minor.(patch * 100 + yy).((mm * 50 + dd) * 100 + revision) (Arcade's versioning
	 * of official builds; 10.0.12 is 10.0.1226.42308, built 2026-08-23). */
	out->patch = f[2] / 100;
	date = f[3] / 100;
	if (date / 50 >= 1 && date / 50 <= 12 && date % 50 >= 1 && date % 50 <= 31) {
		out->build_year = 2000 + f[2] % 100;
		out->build_month = date / 50;
		out->build_day = date % 50;
	}
	snprintf(out->text, sizeof(out->text), "%u.%u.%u", out->major, out->minor, out->patch);
	if ((size_t)(end - s) > sizeof(COMMIT) - 1 && !memcmp(s, COMMIT, sizeof(COMMIT) - 1)) {
		size_t n = 0;

		s += sizeof(COMMIT) - 1;
		while (s + n < end && n < sizeof(out->commit) - 1 &&
		       ((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			n++;
		memcpy(out->commit, s, n);
		out->commit[n] = 0;
	}
	return 0;
}

int rtversion__parse_sccsid(const void *buf, size_t len, struct rtversion *out)
{
	const char *p = buf, *end = p + len;

	while (p && (size_t)(end - p) >= sizeof(SCCSID) - 1) {
		const char *hit = memmem(p, end - p, SCCSID, sizeof(SCCSID) - 1);

		if (!hit)
			break;
		if (!parse_at(hit + sizeof(SCCSID) - 1, end, out))
			return 0;
		p = hit + 1;
	}
	return -ENOENT;
}

/* pread all of [off, off + len) into buf: 0, or -errno (-EIO for a short file). */
static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		got += (size_t)n;
	}
	return 0;
}

/* Scan [off, off + len) of fd, clipped to the file and to *budget bytes. */
static int scan(int fd, uint64_t off, uint64_t len, uint64_t size, uint64_t *budget,
		struct rtversion *out)
{
	char *buf;
	int err;

	if (off >= size)
		return -ENOENT;
	if (len > size - off)
		len = size - off;
	if (len > *budget)
		len = *budget;
	if (!len)
		return -ENOENT;
	*budget -= len;
	if (!(buf = malloc(len)))
		return -ENOMEM;
	err = pread_all(fd, buf, len, off);
	if (!err)
		err = rtversion__parse_sccsid(buf, len, out);
	free(buf);
	return err;
}

int rtversion__read_fd(int fd, struct rtversion *out)
{
	uint64_t budget = RTVERSION_READ_MAX;
	Elf64_Ehdr eh;
	struct stat st;
	int err = -ENOENT;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (pread_all(fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phnum == 0 || eh.e_phnum > 64)
		/* Not a 64-bit ELF file (a test's fake runtime): its start. */
		return scan(fd, 0, 1u << 20, (uint64_t)st.st_size, &budget, out);
	/* The string is initialised data: in a writable PT_LOAD segment's file bytes. */
	for (unsigned i = 0; i < eh.e_phnum && err == -ENOENT; i++) {
		Elf64_Phdr ph;

		if ((err = pread_all(fd, &ph, sizeof(ph), eh.e_phoff + (uint64_t)i * sizeof(ph))))
			return err;
		err = -ENOENT;
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) && ph.p_filesz)
			err = scan(fd, ph.p_offset, ph.p_filesz, (uint64_t)st.st_size, &budget, out);
	}
	return err;
}

int rtversion__read(int root_fd, const char *path, struct rtversion *out)
{
	int fd = rootfs__open(root_fd, path, O_RDONLY, S_IFREG, 0, 0);
	int err;

	if (fd < 0)
		return fd;
	err = rtversion__read_fd(fd, out);
	close(fd);
	return err;
}

/* y-m-d as one number, for comparisons. */
static uint32_t ymd(uint32_t y, uint32_t m, uint32_t d)
{
	return y * 10000 + m * 100 + d;
}

/*
 * The known hazards, by version (sources in perfmap/README.md):
 * - dotnet/runtime#128401, the deadlock: stub logging (#113943) came in .NET 10; the fix (#129021
 *   on main, #129142 on release/10.0, merged 2026-06-08) is proved in 10.0.11 (its
 *   DOTNET_PerfMapStubGranularity=4 turns stub logging off, a switch the backport added), not
 *   provable here for 10.0.10, so every 10.0 before 10.0.11 counts as affected. An 11.0 build
 *   (patch 0, previews alike) is placed by its build date: before July 2026 it may predate the fix.
 * - dotnet/runtime#132935, the jitdump stopping at its first stub block (#120419 on main, fixed
 *   by #122274; #133048 on release/10.0): measured in 10.0.11 and 10.0.12, fixed in 10.0.13.
 * - runtime 11.0 turned on over the diagnostics IPC (EnablePerfMap) writes no perf map: type 3
 *   (perf map only) leaves perf-<pid>.map empty, type 1 writes the jitdump alone; the jitdump is
 *   whole (measured on 11.0.0, build 2026-10-30; perfmap/README.md). Every 11.x until a fix is
 *   known: the JIT code is then named from a jitdump of type 2.
 */
void rtversion__gate(const struct rtversion *v, struct rtgate *out)
{
	uint32_t built;

	memset(out, 0, sizeof(*out));
	out->may_enable = 1;
	out->jitdump_ok = 1;
	if (!v) {
		out->hazards = RTHAZ_UNKNOWN;
		out->may_enable = 0;
		out->jitdump_ok = 0;
		out->withheld = RTWITHHELD_UNKNOWN;
		snprintf(out->reason, sizeof(out->reason), "perf maps not turned on: runtime version "
			 "unknown (a .NET 10 build may have the deadlock dotnet/runtime#128401)");
		return;
	}
	built = v->build_year ? ymd(v->build_year, v->build_month, v->build_day) : 0;
	if (v->major == 10) {
		if (v->patch < 11)
			out->hazards |= RTHAZ_DEADLOCK_128401;
		if (v->patch < 13)
			out->hazards |= RTHAZ_JITDUMP_132935;
	} else if (v->major == 11) {
		if (v->patch == 0 && built < ymd(2026, 7, 1))
			out->hazards |= RTHAZ_DEADLOCK_128401;
		if (v->patch == 0 && built < ymd(2026, 2, 1))
			out->hazards |= RTHAZ_JITDUMP_132935;
		out->hazards |= RTHAZ_LATE_NO_PERFMAP | RTHAZ_PERFMAP_BUFFERED;
	}
	if (out->hazards & RTHAZ_JITDUMP_132935)
		out->jitdump_ok = 0;
	out->late_jitdump_only = (out->hazards & RTHAZ_LATE_NO_PERFMAP) && out->jitdump_ok;
	out->jitdump_beside_perfmap = (out->hazards & RTHAZ_PERFMAP_BUFFERED) && out->jitdump_ok;
	if (out->hazards & RTHAZ_DEADLOCK_128401) {
		out->may_enable = 0;
		out->withheld = RTWITHHELD_DEADLOCK;
		snprintf(out->reason, sizeof(out->reason), "perf maps not turned on: runtime %s has a "
			 "known deadlock (dotnet/runtime#128401)", v->text);
	}
}

const char *rtversion__withheld_name(enum rtwithheld w)
{
	switch (w) {
	case RTWITHHELD_DEADLOCK:
		return "deadlock_128401";
	case RTWITHHELD_UNKNOWN:
		return "version_unknown";
	default:
		return "";
	}
}

/* Every runtime under dir (a self-contained app's directory, or a dotnet root's
 * shared/Microsoft.NETCore.App/<version>/): 1 when some were found and all may be enabled, 0 when
 * one may not (reason set), -ENOENT when none was found. */
static int runtimes_in(const char *dir, int frameworks, char *reason, size_t len)
{
	char path[4096];
	struct rtversion v;
	struct rtgate g;
	int found = 0;

	if (!frameworks) {
		snprintf(path, sizeof(path), "%s/libcoreclr.so", dir);
		if (access(path, F_OK))
			return -ENOENT;
		rtversion__gate(rtversion__read(AT_FDCWD, path, &v) ? NULL : &v, &g);
		if (!g.may_enable)
			snprintf(reason, len, "%s", g.reason);
		return g.may_enable;
	} else {
		struct dirent *de;
		DIR *d;

		snprintf(path, sizeof(path), "%s/shared/Microsoft.NETCore.App", dir);
		if (!(d = opendir(path)))
			return -ENOENT;
		while ((de = readdir(d))) {
			char lib[4096 + 512];

			if (de->d_name[0] == '.')
				continue;
			if (snprintf(lib, sizeof(lib), "%s/%s/libcoreclr.so", path, de->d_name) >=
			    (int)sizeof(lib) || access(lib, F_OK))
				continue;
			found = 1;
			rtversion__gate(rtversion__read(AT_FDCWD, lib, &v) ? NULL : &v, &g);
			if (!g.may_enable) {
				snprintf(reason, len, "%s (%s)", g.reason, lib);
				closedir(d);
				return 0;
			}
		}
		closedir(d);
		return found ? 1 : -ENOENT;
	}
}

int rtversion__command_may_enable(const char *cmd, char *reason, size_t len)
{
	static const char *const roots[] = { "/usr/share/dotnet", "/usr/lib/dotnet",
					     "/usr/lib64/dotnet" };
	char exe[4096], dir[4096], *slash;
	const char *root = getenv("DOTNET_ROOT");
	int r;

	snprintf(reason, len, "perf maps not turned on at start: no .NET runtime found for the "
		 "command (turned on over the diagnostics IPC if its runtime allows)");
	/* The command as execvp finds it. */
	if (strchr(cmd, '/')) {
		snprintf(exe, sizeof(exe), "%s", cmd);
	} else {
		const char *p = getenv("PATH");

		exe[0] = 0;
		while (p && *p && !exe[0]) {
			size_t n = strcspn(p, ":");

			snprintf(dir, sizeof(dir), "%.*s/%s", (int)n, p, cmd);
			if (!access(dir, X_OK))
				snprintf(exe, sizeof(exe), "%s", dir);
			p += n + (p[n] == ':');
		}
		if (!exe[0])
			return 0;
	}
	if (!realpath(exe, dir))
		return 0;
	if ((slash = strrchr(dir, '/')))
		*slash = 0;
	/* A self-contained app carries its runtime next to it. */
	if ((r = runtimes_in(dir, 0, reason, len)) >= 0)
		return r;
	/* A framework-dependent one (or the dotnet muxer) uses a dotnet root's: every one installed
	 * must allow it, whichever the app rolls forward to. */
	if (slash && !strcmp(slash + 1, "dotnet") && (r = runtimes_in(dir, 1, reason, len)) >= 0)
		return r;
	if (root && root[0] && (r = runtimes_in(root, 1, reason, len)) >= 0)
		return r;
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if ((r = runtimes_in(roots[i], 1, reason, len)) >= 0)
			return r;
	return 0;
}
