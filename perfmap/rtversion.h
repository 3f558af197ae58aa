/* rtversion.h: a .NET runtime's exact version, read from its own libcoreclr.so, and the gate that
 * says which known perf map hazards apply to it (perfmap/README.md, "Runtime versions and perf map
 * hazards"). */
#ifndef SPANPROF_RTVERSION_H
#define SPANPROF_RTVERSION_H

#include <stddef.h>
#include <stdint.h>

/*
 * A runtime's version. libcoreclr.so carries "@(#)Version <file version> @Commit: <sha>" (every
 * runtime from 8 to 10 checked; what `strings` finds). The file version is
 * major.minor.(patch * 100 + yy).(((mm * 50) + dd) * 100 + revision) of the build, so the product
 * version (10.0.12) and the build date (2026-08-23) both follow from it; a preview is not told
 * from its release (both patch 0), only by its build date.
 */
struct rtversion {
	uint32_t major, minor, patch;
	uint32_t build_year, build_month, build_day;	/* 0: not known */
	char text[32];		/* "10.0.12" */
	char commit[41];	/* the dotnet/runtime commit, "" when not given */
};

/* Find and parse the first well-formed sccsid string in buf (any bytes around it). 0, or -ENOENT. */
int rtversion__parse_sccsid(const void *buf, size_t len, struct rtversion *out);

/* Read it from fd, an open libcoreclr.so: the file-backed parts of its writable ELF segments
 * (where the string lives, ~300 KiB of a 7 MiB file), or the first MiB of a file that is not ELF
 * (test fakes). At most RTVERSION_READ_MAX bytes are read. 0, -ENOENT (no version in it), -errno. */
#define RTVERSION_READ_MAX (8u << 20)
int rtversion__read_fd(int fd, struct rtversion *out);

/* The same for the file at path inside root_fd (rootfs__open: never leaves the root). */
int rtversion__read(int root_fd, const char *path, struct rtversion *out);

/* Known perf map hazards. */
enum {
	RTHAZ_DEADLOCK_128401 = 1u << 0,	/* perf maps on can hang the process for good */
	RTHAZ_JITDUMP_132935 = 1u << 1,		/* the jitdump stops at its first stub block */
	RTHAZ_UNKNOWN = 1u << 2,		/* version not known: assumed to have them all */
	RTHAZ_LATE_NO_PERFMAP = 1u << 3,	/* EnablePerfMap writes no perf map (the jitdump only) */
	RTHAZ_PERFMAP_BUFFERED = 1u << 4,	/* the perf map is written in 8 KiB blocks: its newest
						 * lines wait, and are lost at SIGTERM */
};

/* Why perf maps are not turned on in a process (a bounded label for /metrics). */
enum rtwithheld {
	RTWITHHELD_NONE = 0,
	RTWITHHELD_DEADLOCK,	/* dotnet/runtime#128401 */
	RTWITHHELD_UNKNOWN,	/* the version could not be read */
	RTWITHHELD__MAX,
};

struct rtgate {
	unsigned hazards;	/* RTHAZ_* */
	int may_enable;		/* spanprof may turn perf maps on over the diagnostics IPC */
	int jitdump_ok;		/* perf map types 1 and 2 give a complete jitdump */
	int late_jitdump_only;	/* turned on over the IPC, only a jitdump is written: send type 2
				 * and name JIT code from it (runtime 11.0) */
	int jitdump_beside_perfmap;	/* the perf map alone holds back its newest lines: a
					 * jitdump turned on beside it names them (runtime 11.0) */
	enum rtwithheld withheld;	/* why not, when !may_enable */
	char reason[160];	/* "perf maps not turned on: runtime 10.0.5 has a known deadlock
				 * (dotnet/runtime#128401)"; "" when nothing to say */
};

/* The gate for version v (NULL: not known, treated as having every hazard). Pure. */
void rtversion__gate(const struct rtversion *v, struct rtgate *out);

/* "deadlock_128401", "version_unknown" ("" for none): the /metrics label of a reason. */
const char *rtversion__withheld_name(enum rtwithheld w);

/*
 * Whether `record -- cmd` may start cmd with perf maps on in its environment: 1 when every .NET
 * runtime it may run on allows it (its own libcoreclr.so for a self-contained app; else every
 * runtime of its dotnet root: the muxer's directory, $DOTNET_ROOT, /usr/share/dotnet,
 * /usr/lib/dotnet, /usr/lib64/dotnet, the first that has any). 0 otherwise, or when none is
 * found, with the reason in reason (then perf maps are left to the diagnostics IPC, which reads
 * the version of the runtime the process really loaded). Reads host files: the command is
 * started on the host.
 */
int rtversion__command_may_enable(const char *cmd, char *reason, size_t len);

#endif /* SPANPROF_RTVERSION_H */
