/* dotnetproc.c: per-process .NET state: finds and reads its perf map / jitdump through its root,
 * and turns perf maps on over the diagnostics IPC when the process started without them. */
#include <errno.h>
#include <dirent.h>
#include <inttypes.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/sysmacros.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "diagipc.h"
#include "dotnet.h"
#include "dotnetproc.h"
#include "dotnetstubs.h"
#include "pmpolicy.h"
#include "talker.h"
#include "procfs.h"
#include "proctab.h"
#include "r2r.h"
#include "rootfs.h"
#include "rtversion.h"
#include "util.h"
#include "vec.h"

#define REOPEN_NS (RUNTIME_BACKOFF_MAX_NS)	/* the file still missing while the other is read */
#define MAX_IMAGES 1024		/* file-backed mappings looked at as ReadyToRun images, per process */

/* A file mapped by the process, looked at once as a ReadyToRun image (shared by file identity
 * across processes: perfmap/r2r.c). */
struct dn_image {
	uint64_t dev, ino;	/* as /proc/<pid>/maps gives them */
	struct r2r_image *img;	/* NULL: could not be opened (unreadable) */
	int managed;		/* a .NET image (PE with a CLI header, or a .dll/.exe we could not read) */
};

struct dotnet_state {
	struct perfmap *pm;
	struct dotnet_jit_files files;
	enum dotnetproc_state state;
	char detail[160];
	int enabled_by_us;
	int enable_tried;
	struct talk *enabling;	/* the EnablePerfMap talk, on a worker, until it ends */
	struct enable_talk *enable_arg;	/* ... and what it sent and heard */
	uint64_t last_open_ns;
	uint32_t restarts;
	uint32_t restarts_deferred;	/* truncations seen before the last restart's pause ended */
	uint64_t next_restart_ns;	/* no restart before: RESTART_PACE times the last one's cost */
	uint64_t read_last_ns, read_max_ns;	/* what reading both files from the start took */
	uint32_t released;	/* times its symbol data was freed while it was idle */
	uint32_t stale;		/* files of an earlier process with the same pid, passed over */	/* files truncated and re-read */
	struct dn_image *images;
	size_t nimages, images_cap;
	uint64_t r2r_named;	/* frames named from an image */
	struct dn_stubs *stubs;	/* runtime code copied out of libcoreclr.so */
	/* Sparse: freed while idle, then read for the addresses it is sampled at only (below). */
	int sparse;		/* d->pm holds the ranges at its filter's addresses only */
	uint64_t *wanted;	/* claimed since, not among them: the next read's */
	size_t nwanted, wanted_cap;
	uint32_t sparse_reads;	/* reads from the start since it was last freed */
	int sparse_read_now;	/* a read for a lookup was done since the last window's end */
	uint32_t claimed;	/* frames claimed, or left unnamed, since the last window's end */
	uint32_t quiet;		/* windows in a row without one */
	uint32_t went_sparse;	/* times its whole index went for that */
	uint64_t sparse_reads_total;
	uint32_t went_whole;	/* times it left sparse reading for the whole index */
	/* Bounded files (pmpolicy.h, "bounded" below). */
	struct talk *pm_talk;	/* a DisablePerfMap (+ EnablePerfMap) talk, until it ends */
	struct policy_talk *pm_talk_arg;
	/* Indexes from before our starts afresh (and turning off), newest last: frames sampled
	 * before them are named from these, until the window after the newest is named (record:
	 * its one window, at the end). */
	struct perfmap **prev;
	size_t nprev, prev_cap;
	uint32_t prev_windows;	/* windows named since the newest was added */
	uint64_t base_bytes;	/* the files' size right after our last start afresh */
	uint64_t off_ns;	/* when we turned them off for idleness */
	int off_idle;		/* ... and they are still off */
	int over_cap_warned;	/* its own perf map (not ours) passed the cap: said once */
	int pm_gave_up;		/* a talk for it failed: left as it is */
	uint32_t cap_restarts, idle_offs, on_agains;
	/* Its runtime's version and what it allows (perfmap/rtversion.h), read once. */
	int ver_read;		/* 1 once tried */
	int ver_err;		/* 0: ver holds it; -errno: not known */
	struct rtversion ver;
	struct rtgate gate;
	int withheld;		/* perf maps not turned on for gate.reason */
	int warned;		/* the warning about perf maps on in an affected runtime was given */
};

static void set_state(struct dotnet_state *d, enum dotnetproc_state st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_state(struct dotnet_state *d, enum dotnetproc_state st, const char *fmt, ...)
{
	va_list ap;

	d->state = st;
	va_start(ap, fmt);
	vsnprintf(d->detail, sizeof(d->detail), fmt, ap);
	va_end(ap);
}

/* ---- the runtime's version and its perf map hazards -------------------------------------- */

/* The runtime's version, from the libcoreclr.so the process maps, read inside its root once; the
 * file read must be the very one mapped. Sets d->gate (unknown: every hazard assumed). */
static void read_version(const struct proc *p, struct dotnet_state *d)
{
	const struct vma *v = NULL;
	struct stat st;
	int fd;

	if (d->ver_read)
		return;
	d->ver_read = 1;
	d->ver_err = -ENOENT;
	for (size_t i = 0; i < p->nvmas && !v; i++)
		if (p->vmas[i].kind == VMA_FILE && dotnet__is_runtime_path(p->vmas[i].path))
			v = &p->vmas[i];
	if (v && p->root_fd >= 0) {
		fd = rootfs__open(p->root_fd, v->path, O_RDONLY, S_IFREG, 0, 0);
		if (fd < 0)
			d->ver_err = fd;
		else if (fstat(fd, &st) ||
			 ((uint64_t)major(st.st_dev) << 32 | minor(st.st_dev)) != v->dev ||
			 st.st_ino != v->ino)
			d->ver_err = -ESTALE;	/* another file at that path now (an upgrade) */
		else
			d->ver_err = rtversion__read_fd(fd, &d->ver);
		if (fd >= 0)
			close(fd);
	}
	rtversion__gate(d->ver_err ? NULL : &d->ver, &d->gate);
}

/* Whether perf maps may be turned on in it over the diagnostics IPC; when not, the process is
 * left as it is, with the reason as its state (its JIT frames are then counted as
 * RT_UNNAMED_WITHHELD; ReadyToRun code and copied stubs are still named). */
static int gate_allows(const struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
{
	read_version(p, d);
	if (d->gate.may_enable)
		return 1;
	if (!d->withheld) {
		d->withheld = 1;
		set_state(d, DOTNETPROC_WITHHELD, "%s", d->gate.reason);
		if (o->verbose)
			fprintf(stderr, "spanprof: pid %u: %s\n", p->pid, d->gate.reason);
	}
	return 0;
}

/* Perf maps on that we did not turn on (its environment, another tool) in a runtime with the
 * deadlock: read as usual (the user's choice), said once. */
static void warn_hazard(const struct proc *p, struct dotnet_state *d)
{
	if (d->warned || d->enabled_by_us)
		return;
	read_version(p, d);
	if (!(d->gate.hazards & RTHAZ_DEADLOCK_128401))
		return;
	d->warned = 1;
	fprintf(stderr, "spanprof: warning: pid %u (%s) has perf maps on in .NET runtime %s, which has "
		"a known deadlock with perf maps on (dotnet/runtime#128401): the process may hang; "
		"10.0.11 and later are fixed\n", p->pid, p->comm, d->ver.text);
}

static int detect(const struct proc *p)
{
	for (size_t i = 0; i < p->nvmas; i++)
		if (p->vmas[i].kind == VMA_FILE && dotnet__is_runtime_path(p->vmas[i].path))
			return 1;
	return 0;
}

static void sparse_start(struct dotnet_state *d);

static void *attach(struct proc *p, const struct runtime_env *env)
{
	struct dotnet_state *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->files.map_fd = -1;
	d->files.jitdump_fd = -1;
	d->pm = perfmap__new(NULL);
	d->stubs = dnstubs__new();
	if (!d->pm || !d->stubs) {
		perfmap__free(d->pm);
		dnstubs__free(d->stubs);
		free(d);
		return NULL;
	}
	set_state(d, DOTNETPROC_WAITING, "not sampled yet: nothing read");
	/* Where idle processes' data is let go (the agent), a process starts sparse: most of a
	 * node's processes are idle when the agent starts, and their whole indexes would be let go
	 * two quiet windows later anyway. A busy one goes whole after a few reads (below). */
	if (env->idle_release_ns) {
		sparse_start(d);
		if (env->verbose)
			fprintf(stderr, "spanprof: pid %u: read sparsely from its first sample on\n",
				p->pid);
	}
	return d;
}

/*
 * The runtime writes its files as the process's user, as new files with one link. Anything else
 * was put there (a bind mount or a hard link of a file the process could never write: a root-only
 * file of the host), and we would read it as root: checked on what was opened, not on the path.
 * Refused (fd closed, -1) with the reason in the state.
 */
static void not_its_own(const struct proc *p, struct dotnet_state *d, int *fd, const char *stem,
			const char *ext)
{
	struct statfs sf;
	struct stat st;

	int64_t born, changed;

	if (*fd < 0)
		return;
	if (fstat(*fd, &st)) {
		close(*fd);
		*fd = -1;
		return;
	}
	/* A file last written before the process started belongs to an earlier process that had the
	 * same pid (pids wrap): not refused, just not ours; it is left alone and perf maps are turned
	 * on, which makes the runtime write it anew. One second of slack for the 10 ms start ticks. */
	born = (int64_t)realtime_ns() - (int64_t)proc__age_ns(p);
	changed = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	if (p->start_ticks && changed < born - 1000000000ll) {
		close(*fd);
		*fd = -1;
		d->stale++;
		return;
	}
	/* Mounted there after on_remote_fs looked (a race): the file system's own answer. */
	if (!(p->env && p->env->allow_remote_files) && !fstatfs(*fd, &sf) &&
	    procfs__fsmagic_remote(sf.f_type)) {
		set_state(d, DOTNETPROC_REFUSED, "refused %s/%s-%d.%s: on a remote or FUSE file system "
			  "(magic 0x%lx; --allow-remote-files reads it)", d->files.dir, stem, p->nspid,
			  ext, (unsigned long)sf.f_type);
		if (p->env && p->env->remote_refused)
			(*p->env->remote_refused)++;
		close(*fd);
		*fd = -1;
		return;
	}
	if (p->uid < 0 ||
	    (S_ISREG(st.st_mode) && st.st_nlink == 1 && (int64_t)st.st_uid == p->uid))
		return;
	set_state(d, DOTNETPROC_REFUSED, "refused %s/%s-%d.%s: %s", d->files.dir, stem, p->nspid, ext,
		  st.st_nlink != 1 ? "a hard link (not the runtime's file)" :
				     "not owned by the process's user (not the runtime's file)");
	close(*fd);
	*fd = -1;
}

/*
 * A file on a remote or FUSE file system is never opened (unless allowed): a server that does not
 * answer would hold us in an uninterruptible read. Asked of the process's mountinfo, which names
 * every mount (a bind mount over the file itself too) without touching the file system. 0, or
 * -EREMOTE after setting the state.
 */
static int on_remote_fs(struct proc *p, struct dotnet_state *d)
{
	static const char *const fmts[] = { "%s/perf-%d.map", "%s/jit-%d.dump" };
	char path[DOTNET_DIR_MAX + 64], type[64];

	if (p->env && p->env->allow_remote_files)
		return 0;
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		snprintf(path, sizeof(path), fmts[i], d->files.dir, p->nspid);
		if (procfs__fstype(p->dir_fd, path, type, sizeof(type)) || !procfs__fstype_remote(type))
			continue;
		set_state(d, DOTNETPROC_REFUSED, "refused %s: on a %s file system (remote or FUSE: "
			  "its reads may hang; --allow-remote-files reads it)", path, type);
		if (p->env && p->env->remote_refused)
			(*p->env->remote_refused)++;
		return -EREMOTE;
	}
	return 0;
}

/* Open whichever of the two files is not open yet. */
static void open_files(struct proc *p, struct dotnet_state *d)
{
	struct dotnet_jit_files f;

	d->last_open_ns = now_ns();
	/* The directory comes from the environment, fixed at exec: read it once. */
	if (p->root_fd < 0 ||
	    (!d->files.dir[0] && dotnet__jit_dir(p->dir_fd, d->files.dir, sizeof(d->files.dir))) ||
	    on_remote_fs(p, d) || dotnet__open_jit_files_in(p->root_fd, d->files.dir, p->nspid, &f))
		return;
	not_its_own(p, d, &f.map_fd, "perf", "map");
	not_its_own(p, d, &f.jitdump_fd, "jit", "dump");
	if (d->files.map_fd < 0 && f.map_fd >= 0) {
		d->files.map_fd = f.map_fd;
		f.map_fd = -1;
	}
	if (d->files.jitdump_fd < 0 && f.jitdump_fd >= 0) {
		d->files.jitdump_fd = f.jitdump_fd;
		f.jitdump_fd = -1;
	}
	if (f.map_err == -ELOOP || f.jitdump_err == -ELOOP)
		set_state(d, DOTNETPROC_REFUSED,
			  "refused %s/%s-%d.%s: a symlink (possible escape from the container)", f.dir,
			  f.map_err == -ELOOP ? "perf" : "jit", p->nspid,
			  f.map_err == -ELOOP ? "map" : "dump");
	else if (f.map_err == -EINVAL || f.jitdump_err == -EINVAL)
		set_state(d, DOTNETPROC_REFUSED, "refused a perf map / jitdump in %s: not a regular file",
			  f.dir);
	dotnet__close_jit_files(&f);
}

static void remove_files(struct proc *p, struct dotnet_state *d);

/* ---- crash-safe: what we turned on is written down ---------------------------------------- */

/*
 * Before EnablePerfMap, an entry "<our pid>-<our start>-<pid>-<start>" goes into
 * $SPANPROF_STATE_DIR/enabled (default /run/spanprof); it goes when the process is left as found.
 * A spanprof killed in between leaves it behind, and the next one to start (dotnetproc__sweep)
 * turns those perf maps off and removes their files, whether it is a record or an agent.
 */
static const char *state_dir(void)
{
	const char *d = getenv("SPANPROF_STATE_DIR");

	return d && d[0] ? d : "/run/spanprof";
}

static uint64_t self_ticks(void)
{
	static uint64_t ticks;
	int fd;

	if (!ticks && (fd = procfs__open(getpid())) >= 0) {
		procfs__starttime(fd, &ticks);
		close(fd);
	}
	return ticks;
}

static int entry_path(const struct proc *p, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/enabled/%d-%" PRIu64 "-%u-%" PRIu64, state_dir(), (int)getpid(),
			 self_ticks(), p->pid, p->start_ticks);

	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

static void note_enabled(const struct proc *p)
{
	char path[4096], dir[4096];
	int fd;

	snprintf(dir, sizeof(dir), "%s", state_dir());
	mkdir(dir, 0700);
	snprintf(dir, sizeof(dir), "%s/enabled", state_dir());
	mkdir(dir, 0700);
	if (entry_path(p, path, sizeof(path)) == 0 &&
	    (fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) >= 0)
		close(fd);
}

static void forget_enabled(const struct proc *p)
{
	char path[4096];

	if (entry_path(p, path, sizeof(path)) == 0)
		unlink(path);
}

/* Turn off and remove the perf maps of process pid (started at ticks) that a dead spanprof turned
 * on: 1 when done, 0 when there is nothing to undo (gone, or another process now). */
static int undo(int pid, uint64_t ticks)
{
	struct proc p = { .pid = pid, .start_ticks = ticks, .dir_fd = -1, .root_fd = -1 };
	struct dotnet_state d = { .files = { .map_fd = -1, .jitdump_fd = -1 } };
	uint64_t now_ticks = 0;
	uint32_t hr;
	int done = 0;

	p.dir_fd = procfs__open(pid);
	if (p.dir_fd < 0 || procfs__starttime(p.dir_fd, &now_ticks) || now_ticks != ticks)
		goto out;
	p.root_fd = procfs__open_root(p.dir_fd);
	if (p.root_fd < 0 || procfs__nspid(p.dir_fd, &p.nspid))
		goto out;
	if (diagipc__disable_perfmap(p.dir_fd, p.root_fd, pid, p.nspid, &hr) == 0) {
		char jit_dir[DOTNET_DIR_MAX];

		/* Open the files first: only the very files found are removed. */
		if (!dotnet__jit_dir(p.dir_fd, jit_dir, sizeof(jit_dir)))
			dotnet__open_jit_files_in(p.root_fd, jit_dir, p.nspid, &d.files);
		remove_files(&p, &d);
		dotnet__close_jit_files(&d.files);
		done = 1;
	}
out:
	if (p.root_fd >= 0)
		close(p.root_fd);
	if (p.dir_fd >= 0)
		close(p.dir_fd);
	return done;
}

int dotnetproc__sweep(void)
{
	char dir[4096], path[8192];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/enabled", state_dir());
	if (!(d = opendir(dir)))
		return 0;
	while ((de = readdir(d))) {
		int owner, pid, fd;
		uint64_t oticks, ticks, cur = 0;

		if (sscanf(de->d_name, "%d-%" SCNu64 "-%d-%" SCNu64, &owner, &oticks, &pid, &ticks) != 4)
			continue;
		/* A spanprof still running owns its entries. */
		if ((fd = procfs__open(owner)) >= 0) {
			int same = !procfs__starttime(fd, &cur) && cur == oticks;

			close(fd);
			if (same)
				continue;
		}
		n += undo(pid, ticks);
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	return n;
}

/* EnablePerfMap on a worker (talker.h): its own copies of the process's fds, its answer. */
struct enable_talk {
	int dir_fd, root_fd, pid, nspid;
	uint64_t deadline_ns;	/* the session's end (0: none): no talk goes past it */
	uint32_t type, hr;
};

static int enable_talk_run(void *arg)
{
	struct enable_talk *t = arg;
	int timeout_ms = 0;	/* the default */

	/* A silent socket may cost the whole timeout: never past the session's deadline (the talk
	 * may have waited its turn). */
	if (t->deadline_ns) {
		uint64_t now = now_ns();

		if (now + 1000000 >= t->deadline_ns)
			return -ETIMEDOUT;
		if ((t->deadline_ns - now) / 1000000 < DIAGIPC_DEFAULT_TIMEOUT_MS)
			timeout_ms = (t->deadline_ns - now) / 1000000;
	}
	return diagipc__enable_perfmap_within(t->dir_fd, t->root_fd, t->pid, t->nspid, t->type,
					      timeout_ms, &t->hr);
}

static void enable_talk_free(void *arg)
{
	struct enable_talk *t = arg;

	if (t->dir_fd >= 0)
		close(t->dir_fd);
	if (t->root_fd >= 0)
		close(t->root_fd);
	free(t);
}

static int start_enable(struct proc *p, struct dotnet_state *d, uint32_t type, uint64_t deadline_ns)
{
	struct enable_talk *t = malloc(sizeof(*t));

	if (!t)
		return -ENOMEM;
	*t = (struct enable_talk){ fcntl(p->dir_fd, F_DUPFD_CLOEXEC, 0),
				   fcntl(p->root_fd, F_DUPFD_CLOEXEC, 0), p->pid, p->nspid,
				   deadline_ns, type, 0 };
	if (t->dir_fd < 0 || t->root_fd < 0 ||
	    !(d->enabling = talk__start(enable_talk_run, t, enable_talk_free))) {
		int err = -errno;

		enable_talk_free(t);
		return err;
	}
	d->enable_arg = t;
	return 0;
}

/* The end of an EnablePerfMap talk: err is its result, hr the runtime's HRESULT. */
static void enable_ended(struct proc *p, struct dotnet_state *d, uint32_t type, int err,
			 uint32_t hr)
{
	if (err)
		forget_enabled(p);
	if (err == 0) {
		d->enabled_by_us = 1;
		set_state(d, DOTNETPROC_ENABLED, "perf map enabled at run time (type %u)", type);
		open_files(p, d);
	} else {
		set_state(d, DOTNETPROC_FAILED, "could not enable its perf map: %s (hresult 0x%08x)",
			  strerror(err < 0 ? -err : EIO), hr);
	}
}

/* Take back the EnablePerfMap talk when it has ended (wait: also while it runs), and act on its
 * answer; one still out is left alone. */
static void take_enable(struct proc *p, struct dotnet_state *d, int wait)
{
	struct enable_talk *t = d->enable_arg;
	int err = -ECANCELED;

	if (!wait && !talk__poll(d->enabling, NULL))
		return;
	if (talk__finish(d->enabling, &err))
		enable_ended(p, d, t->type, err, t->hr);
	else
		forget_enabled(p);	/* still queued: never sent */
	d->enabling = NULL;
	d->enable_arg = NULL;
	enable_talk_free(t);
}

/* The process is being left with its EnablePerfMap talk out: one queued is dropped, one running
 * waited for (its timeout bounds it, and the session's deadline bounds that); told to stop at
 * once, it is left to end on its own, and the entry in the state directory makes the next
 * spanprof start turn off what it may turn on. */
static void end_enabling(struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
{
	if (!d->enabling)
		return;
	if (o && o->talks_held) {
		talk__abandon(d->enabling);	/* frees enable_arg when it ends */
		d->enabling = NULL;
		d->enable_arg = NULL;
		return;
	}
	take_enable(p, d, 1);
}

/* Perf maps turned on in a process that lacks them: EnablePerfMap is sent on a worker, and the
 * sampling loop goes on; its answer is taken at a later poll. */
static void try_enable(struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
{
	int err;

	/* Perf maps are turned on only in processes we actually sample. */
	if (!o->enable_perfmap || !p->sampled || d->enable_tried || d->enabling || p->root_fd < 0 ||
	    o->talks_held)
		return;
	if (!gate_allows(p, d, o))
		return;
	/* Enabling during runtime start-up crashed older runtimes: wait until it has settled. */
	if (p->start_ticks && proc__age_ns(p) < o->min_age_ns)
		return;
	if (o->deadline_ns && now_ns() + 1000000 >= o->deadline_ns)
		return;
	d->enable_tried = 1;
	note_enabled(p);	/* first: a kill -9 right after the enable is still undone */
	set_state(d, DOTNETPROC_WAITING, "asking it to turn its perf map on");
	if ((err = start_enable(p, d, o->perfmap_type, o->deadline_ns)))
		enable_ended(p, d, o->perfmap_type, err, 0);
}

/* A sparse process's new perfmap is read for what the old one was and what was wanted since. */
static int sparse_filter(struct dotnet_state *d, struct perfmap *pm)
{
	size_t n;
	const uint64_t *had = perfmap__filter(d->pm, &n);

	if (VEC_RESERVE(d->wanted, d->wanted_cap, d->nwanted + n))
		return -ENOMEM;
	if (n)
		memcpy(d->wanted + d->nwanted, had, n * sizeof(*had));
	if (perfmap__set_filter(pm, d->wanted, d->nwanted + n))
		return -ENOMEM;
	d->nwanted = 0;
	return 0;
}

/*
 * Both files from their beginning into a new perfmap: the runtime truncated one (perf maps were
 * disabled and enabled again, by another tool, and it writes every live method anew), or what
 * was read was freed while the process was idle. A sparse process's perfmap keeps the ranges at
 * its filter's addresses only.
 */
static int64_t restart_keeping(struct proc *p, struct dotnet_state *d, struct perfmap **keep);

static int64_t restart(struct proc *p, struct dotnet_state *d)
{
	return restart_keeping(p, d, NULL);
}

/* keep: the old perfmap is handed over there, whole, rather than freed. */
static int64_t restart_keeping(struct proc *p, struct dotnet_state *d, struct perfmap **keep)
{
	struct perfmap *pm = perfmap__new(NULL);
	uint64_t t0 = now_ns();
	int64_t n = 0;

	if (!pm)
		return -ENOMEM;
	if (d->sparse && sparse_filter(d, pm)) {
		perfmap__free(pm);
		return -ENOMEM;
	}
	if (!keep)
		perfmap__free_ranges(d->pm);
	if (d->files.jitdump_fd >= 0)	/* first, as in poll */
		n = perfmap__read_jitdump_fd(pm, d->files.jitdump_fd);
	if (n >= 0 && d->files.map_fd >= 0)
		n = perfmap__read_map_fd(pm, d->files.map_fd);
	/* The old names go only now: those read again are found, a reference taken and one put
	 * back, not a string freed and allocated again. */
	if (keep)
		*keep = d->pm;
	else
		perfmap__free(d->pm);
	d->pm = pm;
	d->read_last_ns = now_ns() - t0;
	if (d->read_last_ns > d->read_max_ns)
		d->read_max_ns = d->read_last_ns;
	return n;
}

/*
 * Sparse reading. A process idle long enough to have its data freed is one sampled now and then
 * (most of a node's services, most of the time). Its whole index would cost an entry for every
 * line of its perf map, for a few samples a window. So from then on (and in the agent from the
 * start: attach) it is read for the addresses it is sampled at: claims() notes them, and the poll
 * right before they are named (a window's end, the process leaving) reads both files from the
 * start, keeping only the ranges that cover them (perfmap__set_filter), which answer as the
 * whole index would. Appended lines are read as usual. A lookup of an address not read for (the
 * leaf of a sample, whose method's range is needed then) reads at once, once a window; later ones
 * wait for the window's end. A process read more than SPARSE_READS times, or for more than
 * SPARSE_ADDRS addresses, is busy (again): the whole index, until it idles again. A process
 * whose frames are all named, SPARSE_QUIET windows in a row without a new one, needs its whole
 * index no more than an idle one: sparse too.
 */
#define SPARSE_READS	6
#define SPARSE_ADDRS	4096
#define SPARSE_QUIET	2

static void sparse_end(struct dotnet_state *d)
{
	d->sparse = 0;
	free(d->wanted);
	d->wanted = NULL;
	d->nwanted = d->wanted_cap = 0;
}

/* Addresses the perfmap of a sparse process was read for. */
static size_t nfilter(const struct dotnet_state *d)
{
	size_t n;

	perfmap__filter(d->pm, &n);
	return n;
}

/* Sparse, d->pm is NULL (nothing read yet) or filtered. */
static int in_filter(const struct dotnet_state *d, uint64_t addr)
{
	return d->pm && perfmap__filter_has(d->pm, addr);
}

/* An address the next sparse read must cover. Out of memory: the whole index instead. */
static void sparse_want(struct dotnet_state *d, uint64_t addr)
{
	if (!d->sparse || in_filter(d, addr))
		return;
	for (size_t i = d->nwanted; i-- > 0 && i + 8 >= d->nwanted;)
		if (d->wanted[i] == addr)	/* a frame asked about twice in a row */
			return;
	if (nfilter(d) + d->nwanted >= SPARSE_ADDRS ||
	    VEC_RESERVE(d->wanted, d->wanted_cap, d->nwanted + 1)) {
		d->went_whole++;
		sparse_end(d);
		perfmap__free(d->pm);	/* read whole at the next poll */
		d->pm = NULL;
		return;
	}
	d->wanted[d->nwanted++] = addr;
}

/* At a window's end: the files read again from the start for the filter and what was wanted
 * since. 0 when there was nothing to read; -errno. */
static int64_t sparse_read(struct proc *p, struct dotnet_state *d)
{
	if (!d->nwanted)
		return 0;
	if (++d->sparse_reads > SPARSE_READS) {
		d->went_whole++;
		sparse_end(d);
		return restart(p, d);
	}
	d->sparse_reads_total++;
	return restart(p, d);
}

static void sparse_start(struct dotnet_state *d)
{
	perfmap__free(d->pm);
	d->pm = NULL;
	sparse_end(d);
	d->sparse = 1;
	d->sparse_reads = 0;
	d->sparse_read_now = 0;
}

/* At a window's end: SPARSE_QUIET windows without a new frame to name let the whole index go. */
static void quiet_window(const struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
{
	if (!o->idle_release_ns || p->gone)
		return;	/* record keeps what it read; a process leaving needs nothing more */
	d->quiet = d->claimed ? 0 : d->quiet + 1;
	d->claimed = 0;
	if (!d->sparse && d->pm && d->quiet >= SPARSE_QUIET) {
		sparse_start(d);
		d->went_sparse++;
		if (o->verbose)
			fprintf(stderr, "spanprof: pid %u: nothing new to name for %u windows: its perf "
				"map index let go, read sparsely from now on\n", p->pid, d->quiet);
	}
}

/* Idle (no sample for env->idle_release_ns): free what was read; the files stay open, and the
 * process is read sparsely from its next sample on. */
static int idle(const struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
{
	if (!o->idle_release_ns || !p->last_sample_ns || p->gone ||
	    now_ns() < p->last_sample_ns + o->idle_release_ns)
		return 0;
	if (d->pm || d->nwanted) {
		d->released++;
		sparse_start(d);
		if (o->verbose)
			fprintf(stderr, "spanprof: pid %u: idle: its perf map index let go, read "
				"sparsely from its next sample on\n", p->pid);
	}
	return 1;
}

/*
 * A truncated file (-ESTALE) means a restart: both files read again from their start. A process
 * that rewrites a big perf map every half second would make that a full read every time: a
 * restart waits RESTART_PACE times what the last one cost (the data read so far is kept
 * meanwhile, and the truncation counted as deferred).
 */
#define RESTART_PACE 50
static int64_t restart_paced(struct proc *p, struct dotnet_state *d)
{
	int64_t n;

	if (now_ns() < d->next_restart_ns) {
		d->restarts_deferred++;
		return 0;
	}
	d->restarts++;
	n = restart(p, d);
	d->next_restart_ns = now_ns() + RESTART_PACE * d->read_last_ns;
	return n;
}

/* ---- bounded: what our perf maps cost the pod (pmpolicy.h) -------------------------------- */

/*
 * A perf map we turned on that passed env->perfmap_max_bytes is started afresh: DisablePerfMap
 * then EnablePerfMap over the IPC, and the runtime (checked on 10.0.12: perfmap/README.md)
 * truncates the file in place and writes the methods live now. One unsampled for
 * env->perfmap_idle_ns is turned off and its files removed; its next sample turns it on again.
 * The talks run on a worker, as EnablePerfMap does; the entry in the state directory stays while
 * perf maps may be on, so a spanprof killed meanwhile is undone by the next one.
 */
struct policy_talk {
	int dir_fd, root_fd, pid, nspid;
	uint32_t type;		/* EnablePerfMap after DisablePerfMap; 0: DisablePerfMap only */
	uint32_t hr;
	int stage;		/* 1 when DisablePerfMap was answered */
};

static int policy_talk_run(void *arg)
{
	struct policy_talk *t = arg;
	int err = diagipc__disable_perfmap(t->dir_fd, t->root_fd, t->pid, t->nspid, &t->hr);

	if (err || !t->type)
		return err;
	t->stage = 1;
	return diagipc__enable_perfmap(t->dir_fd, t->root_fd, t->pid, t->nspid, t->type, &t->hr);
}

static void policy_talk_free(void *arg)
{
	struct policy_talk *t = arg;

	if (t->dir_fd >= 0)
		close(t->dir_fd);
	if (t->root_fd >= 0)
		close(t->root_fd);
	free(t);
}

static int start_policy_talk(struct proc *p, struct dotnet_state *d, uint32_t type)
{
	struct policy_talk *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	*t = (struct policy_talk){ .dir_fd = fcntl(p->dir_fd, F_DUPFD_CLOEXEC, 0),
				   .root_fd = fcntl(p->root_fd, F_DUPFD_CLOEXEC, 0), .pid = p->pid,
				   .nspid = p->nspid, .type = type };
	if (t->dir_fd < 0 || t->root_fd < 0 ||
	    !(d->pm_talk = talk__start(policy_talk_run, t, policy_talk_free))) {
		int err = -errno;

		policy_talk_free(t);
		return err;
	}
	d->pm_talk_arg = t;
	return 0;
}

/* What the perf map holds now (a jitdump beside it is none of ours: type 3 writes none). */
static uint64_t files_bytes(const struct dotnet_state *d)
{
	struct stat st;

	return d->files.map_fd >= 0 && !fstat(d->files.map_fd, &st) ? (uint64_t)st.st_size : 0;
}

#define COUNT(o, f)                          \
	do {                                 \
		if ((o)->perfmap_counts)     \
			(o)->perfmap_counts->f++; \
	} while (0)

/* Keep pm (NULL: nothing) for the frames sampled before it was replaced; out of memory, it goes. */
static void keep_prev(struct dotnet_state *d, struct perfmap *pm)
{
	if (!pm)
		return;
	if (VEC_RESERVE(d->prev, d->prev_cap, d->nprev + 1)) {
		perfmap__free(pm);
		return;
	}
	d->prev[d->nprev++] = pm;
	d->prev_windows = 0;
}

static void free_prev(struct dotnet_state *d)
{
	for (size_t i = 0; i < d->nprev; i++)
		perfmap__free(d->prev[i]);
	free(d->prev);
	d->prev = NULL;
	d->nprev = d->prev_cap = 0;
}

/* A talk for the policy ended with err: act on it. */
static void bounded_ended(struct proc *p, struct dotnet_state *d, const struct runtime_env *o,
			  const struct policy_talk *t, int err)
{
	if (err) {
		/* Left as it is now: on (the disable failed) or off (the enable did; the entry in
		 * the state directory and detach turn it off again and remove the files). */
		d->pm_gave_up = 1;
		COUNT(o, failed);
		set_state(d, DOTNETPROC_FAILED, "could not %s its perf map: %s (hresult 0x%08x)",
			  !t->type ? "turn off" : t->stage ? "turn on again" : "start afresh",
			  strerror(err < 0 ? -err : EIO), t->hr);
		return;
	}
	if (t->type) {
		struct perfmap *old = NULL;

		/* The runtime truncated the file and wrote the live methods before it answered:
		 * read from the start now; the old index stays a window for frames in flight. The
		 * files are opened again: one removed meanwhile (by another tool) is a new file now. */
		dotnet__close_jit_files(&d->files);
		open_files(p, d);
		if (d->pm && restart_keeping(p, d, &old) >= 0) {
			keep_prev(d, old);
		} else {
			perfmap__free(old);
		}
		d->base_bytes = files_bytes(d);
		d->cap_restarts++;
		COUNT(o, restarts);
		if (o->verbose)
			fprintf(stderr, "spanprof: pid %u: perf map past the cap: started afresh "
				"(%" PRIu64 " bytes now)\n", p->pid, d->base_bytes);
		return;
	}
	/* Off: the files we had it write go, and nothing is left to undo. */
	remove_files(p, d);
	dotnet__close_jit_files(&d->files);
	forget_enabled(p);
	/* Its index had the files' offsets: the new files are read from their start. It stays
	 * for lookups a window more (record names its frames only at its end). */
	keep_prev(d, d->pm);
	d->pm = NULL;
	d->enabled_by_us = 0;
	d->off_idle = 1;
	d->off_ns = now_ns();
	d->base_bytes = 0;
	d->idle_offs++;
	COUNT(o, idle_off);
	set_state(d, DOTNETPROC_WAITING, "perf maps turned off after %" PRIu64 " s unsampled, "
		  "files removed; on again at its next sample", o->perfmap_idle_ns / 1000000000);
	if (o->verbose)
		fprintf(stderr, "spanprof: pid %u: %s\n", p->pid, d->detail);
}

/* Take back the policy's talk once it ended (wait: also while it runs). */
static void take_bounded(struct proc *p, struct dotnet_state *d, const struct runtime_env *o,
			 int wait)
{
	struct policy_talk *t = d->pm_talk_arg;
	int err = -ECANCELED;

	if (!d->pm_talk || (!wait && !talk__poll(d->pm_talk, NULL)))
		return;
	if (talk__finish(d->pm_talk, &err))
		bounded_ended(p, d, o, t, err);
	d->pm_talk = NULL;
	d->pm_talk_arg = NULL;
	policy_talk_free(t);
}

/* The process is being left: a queued talk dropped, a running one waited for (its timeout
 * bounds it), or left to end on its own when told to stop at once. */
static void end_bounded(struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
{
	if (!d->pm_talk)
		return;
	if (o && o->talks_held) {
		talk__abandon(d->pm_talk);
		d->pm_talk = NULL;
		d->pm_talk_arg = NULL;
		return;
	}
	take_bounded(p, d, o, 1);
}

/* The index kept for frames in flight goes once the window after our start afresh is named. */
static void prev_window(struct dotnet_state *d)
{
	if (d->nprev && ++d->prev_windows > 1)
		free_prev(d);
}

/* Decide (pmpolicy__decide) and start what it says; at every poll, idle or not. */
static void bounded(struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
{
	struct pmpolicy_cfg cfg = { o->perfmap_max_bytes, o->perfmap_idle_ns };
	struct pmpolicy_proc s = {
		.ours = d->enabled_by_us || (o->perfmaps_ours && (d->files.map_fd >= 0 ||
								  d->files.jitdump_fd >= 0)),
		.off_idle = d->off_idle,
		.busy = d->pm_talk || d->enabling || d->pm_gave_up || p->gone || p->root_fd < 0 ||
			o->talks_held || (o->deadline_ns && now_ns() + 1000000000 >= o->deadline_ns),
		.warned = d->over_cap_warned,
		.base_bytes = d->base_bytes,
		.last_sample_ns = p->last_sample_ns,
		.off_ns = d->off_ns,
	};
	int err = 0;

	take_bounded(p, d, o, 0);
	s.busy |= d->pm_talk != NULL;
	if (!cfg.max_bytes && !cfg.idle_ns)
		return;
	s.bytes = files_bytes(d);
	switch (pmpolicy__decide(&cfg, &s, now_ns())) {
	case PMPOLICY_NONE:
		return;
	case PMPOLICY_WARN:
		d->over_cap_warned = 1;
		COUNT(o, not_ours_over_cap);
		fprintf(stderr, "spanprof: pid %u: its perf map (%" PRIu64 " MiB) is past "
			"--perfmap-max-mb, but it was not turned on by spanprof: left alone\n", p->pid,
			s.bytes >> 20);
		return;
	case PMPOLICY_RESTART:
		err = start_policy_talk(p, d, o->perfmap_type);
		break;
	case PMPOLICY_OFF:
		err = start_policy_talk(p, d, 0);
		break;
	case PMPOLICY_ON:
		/* As the first time (try_enable): written down first, its answer taken by poll. */
		d->off_idle = 0;
		d->on_agains++;
		COUNT(o, on_again);
		note_enabled(p);
		set_state(d, DOTNETPROC_WAITING, "sampled again: asking it to turn its perf map on");
		if ((err = start_enable(p, d, o->perfmap_type, o->deadline_ns)))
			enable_ended(p, d, o->perfmap_type, err, 0);
		return;
	}
	if (err) {
		d->pm_gave_up = 1;
		COUNT(o, failed);
	}
}

/* Idle enough to have its mappings freed: perf maps off after long idleness all the same. */
static void idle_poll(struct proc *p, void *state, const struct runtime_env *o)
{
	bounded(p, state, o);
}

static int poll(struct proc *p, void *state, const struct runtime_env *o)
{
	struct dotnet_state *d = state;
	int have, missing, grew = 0;
	int64_t n;

	/* The answer to EnablePerfMap, once it came (the files may be there before it). */
	if (d->enabling)
		take_enable(p, d, 0);
	bounded(p, d, o);
	/* Nothing is read for a process until it is sampled, nor kept while it is idle. */
	if (!p->sampled || idle(p, d, o))
		return RT_WAIT;
	if (d->state == DOTNETPROC_WAITING && d->files.map_fd < 0 && d->files.jitdump_fd < 0 &&
	    !d->enabling)
		set_state(d, DOTNETPROC_WAITING, "no perf map yet");
	if (o->naming_next) {
		quiet_window(p, d, o);
		prev_window(d);
	}
	if (d->sparse && (o->naming_next || p->gone)) {
		d->sparse_read_now = 0;
		if ((n = sparse_read(p, d)) < 0)
			return (int)n;
	} else if (!d->sparse && !d->pm && (n = restart(p, d)) < 0) {
		return (int)n;
	}

	have = d->files.map_fd >= 0 || d->files.jitdump_fd >= 0;
	missing = d->files.map_fd < 0 || d->files.jitdump_fd < 0;
	/* With nothing open, the caller's backoff paces the retries; with one file open, the other
	 * (often never written, e.g. PerfMapType 3) is looked for now and then. */
	if (!p->gone && d->state != DOTNETPROC_REFUSED && missing &&
	    (!have || now_ns() - d->last_open_ns >= REOPEN_NS))
		open_files(p, d);
	if (d->files.map_fd < 0 && d->files.jitdump_fd < 0 && d->state != DOTNETPROC_REFUSED)
		try_enable(p, d, o);	/* once, and only when o allows it */
	/* The jitdump first: a perf map line it already holds is then skipped, where the other
	 * way round both would be kept (the map entry hidden). */
	if (d->files.jitdump_fd >= 0 && d->pm) {
		n = perfmap__read_jitdump_fd(d->pm, d->files.jitdump_fd);
		grew |= n != 0;
		if (n == -ESTALE)
			n = restart_paced(p, d);
		if (n < 0 && o->verbose)
			fprintf(stderr, "spanprof: pid %u: jitdump: %s\n", p->pid, strerror(-n));
	}
	if (d->files.map_fd >= 0 && d->pm) {
		n = perfmap__read_map_fd(d->pm, d->files.map_fd);
		grew |= n != 0;
		if (n == -ESTALE)
			n = restart_paced(p, d);
		if (n < 0 && o->verbose)
			fprintf(stderr, "spanprof: pid %u: perf map: %s\n", p->pid, strerror(-n));
	}
	have = d->files.map_fd >= 0 || d->files.jitdump_fd >= 0;
	if (have)
		warn_hazard(p, d);
	if (have && d->state == DOTNETPROC_WAITING)
		set_state(d, DOTNETPROC_READING, "reading %s%s%s", d->files.map_fd >= 0 ? "perf map" : "",
			  d->files.map_fd >= 0 && d->files.jitdump_fd >= 0 ? " + " : "",
			  d->files.jitdump_fd >= 0 ? "jitdump" : "");
	if (p->gone)
		return RT_DONE;	/* what the files hold now is all there will be */
	/* A talk out: its answer at once. Files that grew: read again at once (the runtime is
	 * compiling). Files that did not: the backoff paces the next read (most processes, most of
	 * the time: each read costs system calls); a window's end reads them all (engine__cut). */
	return d->enabling || (have && grew) ? RT_READY : RT_WAIT;
}

/* Anything outside the ELF files' symbols may be JIT or ReadyToRun code, except the vDSO. A
 * sparse process's next read covers it. */
static int claims(const struct proc *p, void *state, uint64_t addr, int in_file)
{
	const struct vma *v = proc__vma(p, addr);
	struct dotnet_state *d = state;

	if (v && v->kind == VMA_VDSO)
		return 0;
	d->claimed++;
	sparse_want(d, addr);
	return 1;
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

/*
 * The image behind file mapping v, opened once per process through its root (never leaving it)
 * and checked to be the very inode mapped; the parsed table is shared by every process that maps
 * the same file. NULL when the process has too many.
 */
static struct dn_image *image_of(struct proc *p, struct dotnet_state *d, const struct vma *v)
{
	struct dn_image *im;
	struct stat st;
	int fd;

	for (size_t i = 0; i < d->nimages; i++)
		if (d->images[i].dev == v->dev && d->images[i].ino == v->ino)
			return &d->images[i];
	if (d->nimages >= MAX_IMAGES || VEC_RESERVE(d->images, d->images_cap, d->nimages + 1))
		return NULL;
	im = &d->images[d->nimages++];
	memset(im, 0, sizeof(*im));
	im->dev = v->dev;
	im->ino = v->ino;
	im->managed = ends_with(v->path, ".dll") || ends_with(v->path, ".exe");
	fd = p->root_fd >= 0 ? rootfs__open(p->root_fd, v->path, O_RDONLY, S_IFREG, 0, 0) : -1;
	if (fd < 0)
		return im;
	/* A path another file now sits at (replaced, or a container remapping it) is not read. */
	if (!fstat(fd, &st) && ((uint64_t)major(st.st_dev) << 32 | minor(st.st_dev)) == v->dev &&
	    st.st_ino == v->ino)
		im->img = r2r__get(fd);
	close(fd);
	if (im->img) {
		struct r2r_image_stats rs;

		r2r__stats(im->img, &rs);
		im->managed = rs.status != R2R_NOT_PE && rs.status != R2R_NOT_CLI;
	}
	return im;
}

/* Precompiled code named from its image, whatever the perf maps hold: 0, or -ENOENT with the
 * reason in out->unnamed. */
static int symbolize_image(struct proc *p, struct dotnet_state *d, uint64_t addr,
			   struct rt_symbol *out)
{
	const struct vma *v = proc__vma(p, addr);
	struct dn_image *im;
	const char *name;
	uint32_t rva;

	if (!v || v->kind != VMA_FILE) {
		struct perfmap_stats ps;

		perfmap__stats(d->pm, &ps);
		out->unnamed = ps.jitdump_stopped && d->files.map_fd < 0 ? RT_UNNAMED_JITDUMP_STOPPED :
									    RT_UNNAMED_NO_ENTRY;
		if (d->withheld && d->files.map_fd < 0 && d->files.jitdump_fd < 0)
			out->unnamed = RT_UNNAMED_WITHHELD;
		return -ENOENT;
	}
	im = image_of(p, d, v);
	if (!im || !im->img || r2r__file_to_rva(im->img, addr - v->start + v->pgoff, &rva) ||
	    !(name = r2r__lookup(im->img, rva, NULL, NULL))) {
		struct r2r_image_stats rs;

		r2r__stats(im ? im->img : NULL, &rs);
		out->unnamed = !im || !im->managed ? RT_UNNAMED_NOT_OURS :
			       im->img && rs.status == R2R_OK ? RT_UNNAMED_NO_ENTRY : RT_UNNAMED_IMAGE;
		return -ENOENT;
	}
	d->r2r_named++;
	out->name = name + perfmap__method_offset(name, strlen(name));
	out->system_name = name;
	out->tier = "PreJIT";	/* what the runtime's jitdump calls precompiled code */
	return 0;
}

static int symbolize(struct proc *p, void *state, uint64_t addr, uint64_t time_ns,
		     struct rt_symbol *out)
{
	struct dotnet_state *d = state;
	const struct perfmap_sym *s;

	/* Sparse, and not read for this address (a sample's leaf, whose method's range is needed
	 * now): read at once, once a window; else at the window's end. */
	if (d->sparse && !in_filter(d, addr)) {
		sparse_want(d, addr);
		if (d->sparse && !d->sparse_read_now) {
			d->sparse_read_now = 1;
			sparse_read(p, d);
		}
	}
	if (!d->sparse && !d->pm)	/* it went whole just now */
		restart(p, d);
	s = d->pm ? perfmap__lookup(d->pm, addr, time_ns) : NULL;

	/* Code logged after the sample: a perf map enabled late logs existing code with the time of
	 * the enabling, so the code was there before its record. Take what the range holds now. */
	if (!s && time_ns && d->pm)
		s = perfmap__lookup(d->pm, addr, 0);
	/* Code that was there before our last start afresh (a frame in flight). */
	for (size_t i = d->nprev; !s && i-- > 0;)
		s = perfmap__lookup(d->prev[i], addr, 0);
	if (!s) {
		int err = symbolize_image(p, d, addr, out);

		if (err)	/* a frame left to name again: not a quiet window */
			d->claimed++;
		return err;
	}
	out->name = s->name + perfmap__method_offset(s->name, strlen(s->name));
	out->system_name = s->name;
	out->tier = s->tier;
	/* A method's range, for reading its prologue; stubs (one line per stub or per block of
	 * them) are hand-written code whose start says nothing about its frame. */
	if (strncmp(s->name, "stub", 4)) {
		out->start = s->start;
		out->size = s->size;
	}
	return 0;
}

static void prefetch(struct proc *p, void *state, const uint64_t *addrs, size_t n)
{
	struct dotnet_state *d = state;

	(void)p;
	perfmap__prefetch(d->pm, addrs, n);	/* NULL-safe */
}

/* No perf map names it: it may be the runtime's copy of its own code (dotnetstubs.h). */
static int copy_of(struct proc *p, void *state, uint64_t addr, uint64_t *orig)
{
	struct dotnet_state *d = state;

	return dnstubs__copy_of(d->stubs, p, addr, orig);
}

/* Unlink name in dir if it is still the very file behind fd (not a newer process's file of the
 * same name, after the namespace reused the pid). */
static void unlink_if_same(int dir, const char *name, int fd)
{
	struct stat ours, now;

	if (fd >= 0 && !fstat(fd, &ours) && !fstatat(dir, name, &now, AT_SYMLINK_NOFOLLOW) &&
	    ours.st_dev == now.st_dev && ours.st_ino == now.st_ino)
		unlinkat(dir, name, 0);
}

/* Remove the perf map and jitdump we had the runtime create, through its root (still valid after
 * the process exited), never following a symlink. */
static void remove_files(struct proc *p, struct dotnet_state *d)
{
	char name[64];
	int dir;

	if (!d->files.dir[0] || p->root_fd < 0)
		return;
	dir = rootfs__open(p->root_fd, d->files.dir, O_PATH | O_DIRECTORY, S_IFDIR, 0,
			   ROOTFS_NO_SYMLINKS);
	if (dir < 0)
		return;
	snprintf(name, sizeof(name), "perf-%d.map", p->nspid);
	unlink_if_same(dir, name, d->files.map_fd);
	snprintf(name, sizeof(name), "jit-%d.dump", p->nspid);
	unlink_if_same(dir, name, d->files.jitdump_fd);
	close(dir);
}

static void detach(struct proc *p, void *state, const struct runtime_env *o)
{
	struct dotnet_state *d = state;
	uint32_t hr;

	end_enabling(p, d, o);
	end_bounded(p, d, o);
	/* Told to stop at once: no talk. The entry in the state directory stays, so the next
	 * spanprof start turns its perf maps off (as after a kill -9). */
	if (d->enabled_by_us && o && o->talks_held && !p->execed && proc__alive(p)) {
		dotnet__close_jit_files(&d->files);
		perfmap__free(d->pm);
		free_prev(d);
		sparse_end(d);
		dnstubs__free(d->stubs);
		free(d);
		return;
	}
	/* Leave the process as we found it: perf map writing costs it CPU while it jits, and the
	 * files we made it write would stay in its /tmp for good. After an exec the runtime we
	 * talked to is gone: nothing to turn off (its socket, if any, is the new program's). */
	if (d->enabled_by_us && p->root_fd >= 0 &&
	    (p->execed || diagipc__disable_perfmap(p->dir_fd, p->root_fd, p->pid, p->nspid, &hr) == 0 ||
	     !proc__alive(p)))
		remove_files(p, d);
	if (d->enabled_by_us)
		forget_enabled(p);
	/* record -- COMMAND turned them on through the environment: gone with the process. */
	else if (o && o->perfmaps_ours && p->root_fd >= 0 && !proc__alive(p))
		remove_files(p, d);
	dotnet__close_jit_files(&d->files);
	perfmap__free(d->pm);
	free_prev(d);
	sparse_end(d);
	for (size_t i = 0; i < d->nimages; i++)
		r2r__put(d->images[i].img);
	free(d->images);
	dnstubs__free(d->stubs);
	free(d);
}

static void describe(const struct proc *p, const void *state, char *buf, size_t len)
{
	const struct dotnet_state *d = state;
	struct perfmap_stats ps;

	perfmap__stats(d->pm, &ps);
	snprintf(buf, len, "%s; %" PRIu64 " code ranges%s", d->detail, ps.entries,
		 ps.jitdump_stopped ? "; jitdump stopped (runtime bug dotnet/runtime#132935)" : "");
	if (d->r2r_named) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "; %" PRIu64 " frames named from ReadyToRun images (%zu mapped files looked at)",
			 d->r2r_named, d->nimages);
	}
	{
		struct dnstubs_stats ss;

		dnstubs__stats(d->stubs, &ss);
		if (ss.found || ss.searches || ss.capped) {
			size_t n = strlen(buf);

			snprintf(buf + n, len - n, "; %u runtime stub addresses named as the "
				 "libcoreclr.so code they copy (%u searches, %u not found, %u past the cap)",
				 ss.found, ss.searches, ss.not_found, ss.capped);
		}
	}
	if (d->ver_read) {
		size_t n = strlen(buf);

		if (d->ver_err)
			snprintf(buf + n, len - n, "; runtime version unknown (%s)", strerror(-d->ver_err));
		else
			snprintf(buf + n, len - n, "; runtime %s%s%.7s%s", d->ver.text,
				 d->ver.commit[0] ? " (commit " : "", d->ver.commit,
				 d->ver.commit[0] ? ")" : "");
	}
	if (d->stale) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "; passed over %u stale files of an earlier process with its pid",
			 d->stale);
	}
	if (ps.budget_capped) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "; %" PRIu64 " code ranges not kept: the symbol budget "
			 "(--max-symbol-mb) is spent", ps.budget_capped);
	}
	if (d->released) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "; symbols freed %u times while idle", d->released);
	}
	if (d->sparse_reads_total || d->went_whole || d->went_sparse) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "; sparse%s: %" PRIu64 " reads for %zu sampled addresses,"
			 " whole again %u, let go quiet %u", d->sparse ? "" : " before",
			 d->sparse_reads_total, d->sparse ? nfilter(d) : 0, d->went_whole,
			 d->went_sparse);
	}
	if (d->cap_restarts || d->idle_offs || d->over_cap_warned) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "; perf map started afresh %u times past the cap, turned "
			 "off %u times idle, on again %u%s", d->cap_restarts, d->idle_offs, d->on_agains,
			 d->over_cap_warned ? "; its own perf map past the cap (not ours: left alone)" : "");
	}
	if (ps.malformed || ps.capped || d->restarts) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "; %" PRIu64 " malformed lines/records, %" PRIu64
			 " dropped at a cap, %u restarts (%u more deferred; a read from the start took"
			 " up to %" PRIu64 " ms)", ps.malformed, ps.capped, d->restarts,
			 d->restarts_deferred, d->read_max_ns / 1000000);
	}
}

const struct runtime_ops dotnet_runtime = {
	.name = "dotnet",
	.detect = detect,
	.attach = attach,
	.poll = poll,
	.idle_poll = idle_poll,
	.claims = claims,
	.symbolize = symbolize,
	.prefetch = prefetch,
	.copy_of = copy_of,
	.describe = describe,
	.detach = detach,
	/* The library code the stub copies are matched against goes while nothing needs it. */
	.release_idle = dnstubs__release_idle,
};

enum dotnetproc_state dotnetproc__state(const struct proc *p, const char **detail)
{
	const struct dotnet_state *d = runtime__state(p, RT_DOTNET);

	if (detail)
		*detail = d ? d->detail : "";
	return d ? d->state : DOTNETPROC_NEW;
}

void dotnetproc__stats(const struct proc *p, struct perfmap_stats *out)
{
	const struct dotnet_state *d = runtime__state(p, RT_DOTNET);

	memset(out, 0, sizeof(*out));
	if (!d)
		return;
	perfmap__stats(d->pm, out);
	out->held_bytes += d->wanted_cap * sizeof(*d->wanted);
}

int dotnetproc__withheld(const struct proc *p)
{
	const struct dotnet_state *d = runtime__state(p, RT_DOTNET);

	return d && d->withheld ? (int)d->gate.withheld : RTWITHHELD_NONE;
}

int dotnetproc__sparse(const struct proc *p)
{
	const struct dotnet_state *d = runtime__state(p, RT_DOTNET);

	return d && d->sparse;
}
