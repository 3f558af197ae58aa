/* dotnetenable.c: perf maps turned on in a .NET process over the diagnostics IPC (on a worker),
 * written down first in the state directory, and undone: when the process is left, or by the
 * next spanprof after a crash (dotnetproc__sweep). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diagipc.h"
#include "dotnetproc_int.h"
#include "log.h"
#include "pmpolicy.h"
#include "procfs.h"
#include "proctab.h"
#include "rootfs.h"
#include "talker.h"
#include "util.h"

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

void dn_note_enabled(const struct proc *p)
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

void dn_forget_enabled(const struct proc *p)
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
		dn_remove_files(&p, &d, 0);
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

int dn_start_enable(struct proc *p, struct dotnet_state *d, uint32_t type, uint64_t deadline_ns)
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

uint32_t dn_enable_type(const struct dotnet_state *d, const struct runtime_env *o)
{
	if (d->gate.late_jitdump_only && o->perfmap_type == PMPOLICY_PERFMAP_TYPE)
		return DIAGIPC_PERFMAP_JITDUMP;
	return o->perfmap_type;
}

/* The end of an EnablePerfMap talk: err is its result, hr the runtime's HRESULT. */
void dn_enable_ended(struct proc *p, struct dotnet_state *d, uint32_t type, int err,
			 uint32_t hr)
{
	if (d->adding_jitdump) {
		d->adding_jitdump = 0;
		if (err) {
			log_warn("pid %u: could not turn its jitdump on beside its perf map: %s "
				 "(hresult 0x%08x): the newest JIT methods stay unnamed until the "
				 "runtime writes them", p->pid, strerror(err < 0 ? -err : EIO), hr);
			return;
		}
		d->jitdump_added = 1;
		perfmap__set_jitdump_replay(d->pm, now_ns());
		dn_open_files(p, d);
		dn_set_state(d, DOTNETPROC_READING, "reading perf map + jitdump (turned on beside "
			     "the perf map, which runtime %s holds back)", d->ver.text);
		log_info("pid %u: runtime %s holds back the newest lines of its perf map (8 KiB "
			 "blocks, lost at SIGTERM): its jitdump was turned on beside it to name them; "
			 "it stays on (turning it off would end the perf map too); its file is removed "
			 "if the process exits while spanprof runs", p->pid, d->ver.text);
		return;
	}
	if (err)
		dn_forget_enabled(p);
	if (err == 0) {
		d->enabled_by_us = 1;
		dn_set_state(d, DOTNETPROC_ENABLED, "perf map enabled at run time (type %u)", type);
		/* The jitdump starts with the replay of the methods jitted before: they name earlier
		 * samples too (perfmap__set_jitdump_replay). */
		if (type == DIAGIPC_PERFMAP_ALL || type == DIAGIPC_PERFMAP_JITDUMP)
			perfmap__set_jitdump_replay(d->pm, now_ns());
		dn_open_files(p, d);
		dn_bounded_enabled(d);
	} else {
		dn_set_state(d, DOTNETPROC_FAILED, "could not enable its perf map: %s (hresult 0x%08x)",
			  strerror(err < 0 ? -err : EIO), hr);
	}
}

/* Take back the EnablePerfMap talk when it has ended (wait: also while it runs), and act on its
 * answer; one still out is left alone. */
void dn_take_enable(struct proc *p, struct dotnet_state *d, int wait)
{
	struct enable_talk *t = d->enable_arg;
	int err = -ECANCELED;

	if (!wait && !talk__poll(d->enabling, NULL))
		return;
	if (talk__finish(d->enabling, &err))
		dn_enable_ended(p, d, t->type, err, t->hr);
	else
		dn_forget_enabled(p);	/* still queued: never sent */
	d->enabling = NULL;
	d->enable_arg = NULL;
	enable_talk_free(t);
}

/* The process is being left with its EnablePerfMap talk out: one queued is dropped, one running
 * waited for (its timeout bounds it, and the session's deadline bounds that); told to stop at
 * once, it is left to end on its own, and the entry in the state directory makes the next
 * spanprof start turn off what it may turn on. */
void dn_end_enabling(struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
{
	if (!d->enabling)
		return;
	if (o && o->talks_held) {
		talk__abandon(d->enabling);	/* frees enable_arg when it ends */
		d->enabling = NULL;
		d->enable_arg = NULL;
		return;
	}
	dn_take_enable(p, d, 1);
}

/* Whether EnablePerfMap may be sent now: the version gate allows it, the runtime has settled and
 * the recording does not end within a millisecond. */
static int may_talk_now(struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
{
	if (!dn_gate_allows(p, d, o))
		return 0;
	/* Enabling during runtime start-up crashed older runtimes: wait until it has settled. */
	if (p->start_ticks && proc__age_ns(p) < o->min_age_ns)
		return 0;
	return !o->deadline_ns || now_ns() + 1000000 < o->deadline_ns;
}

/* Perf maps turned on in a process that lacks them: EnablePerfMap is sent on a worker, and the
 * sampling loop goes on; its answer is taken at a later poll. */
void dn_try_enable(struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
{
	int err;

	/* Perf maps are turned on only in processes we actually sample; ones turned off idle, by
	 * the policy at their next sample (also those on from their start: perfmaps_ours). */
	if (!o->enable_perfmap || !p->sampled || d->enable_tried || d->enabling || d->off_idle ||
	    p->root_fd < 0 || o->talks_held)
		return;
	if (!may_talk_now(p, d, o))
		return;
	d->enable_tried = 1;
	dn_note_enabled(p);	/* first: a kill -9 right after the enable is still undone */
	dn_set_state(d, DOTNETPROC_WAITING, "asking it to turn its perf map on");
	if ((err = dn_start_enable(p, d, dn_enable_type(d, o), o->deadline_ns)))
		dn_enable_ended(p, d, dn_enable_type(d, o), err, 0);
}

void dn_try_add_jitdump(struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
{
	int err;

	if (!o->jitdump_beside_perfmap || !o->enable_perfmap || !p->sampled || d->enabled_by_us ||
	    d->jitdump_tried || d->enabling || p->root_fd < 0 || o->talks_held ||
	    d->files.map_fd < 0 || d->files.jitdump_fd >= 0)
		return;
	if (!may_talk_now(p, d, o) || !d->gate.jitdump_beside_perfmap)
		return;
	d->jitdump_tried = 1;
	d->adding_jitdump = 1;
	if ((err = dn_start_enable(p, d, DIAGIPC_PERFMAP_JITDUMP, o->deadline_ns)))
		dn_enable_ended(p, d, DIAGIPC_PERFMAP_JITDUMP, err, 0);
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
void dn_remove_files(struct proc *p, struct dotnet_state *d, int jitdump_only)
{
	char name[64];
	int dir;

	if (!d->files.dir[0] || p->root_fd < 0)
		return;
	dir = rootfs__open(p->root_fd, d->files.dir, O_PATH | O_DIRECTORY, S_IFDIR, 0,
			   ROOTFS_NO_SYMLINKS);
	if (dir < 0)
		return;
	if (!jitdump_only) {
		snprintf(name, sizeof(name), "perf-%d.map", p->nspid);
		unlink_if_same(dir, name, d->files.map_fd);
	}
	snprintf(name, sizeof(name), "jit-%d.dump", p->nspid);
	unlink_if_same(dir, name, d->files.jitdump_fd);
	close(dir);
}
