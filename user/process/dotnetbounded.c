/* dotnetbounded.c: the bounded perf map policy (pmpolicy.h) applied to a .NET process: the
 * DisablePerfMap / EnablePerfMap talks that start a perf map afresh past its cap, turn it off
 * when idle and on again when sampled. */
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
#include "proctab.h"
#include "talker.h"
#include "util.h"
#include "vec.h"

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

void dn_free_prev(struct dotnet_state *d)
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
		dn_set_state(d, DOTNETPROC_FAILED, "could not %s its perf map: %s (hresult 0x%08x)",
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
		dn_open_files(p, d);
		if (d->pm && dn_restart_keeping(p, d, &old) >= 0) {
			keep_prev(d, old);
		} else {
			perfmap__free(old);
		}
		dn_bounded_enabled(d);
		d->cap_restarts++;
		COUNT(o, restarts);
		if (o->verbose)
			log_info("pid %u: perf map past the cap: started afresh "
				"(%" PRIu64 " bytes now)", p->pid, d->base_bytes);
		return;
	}
	/* Off: the files we had it write go, and nothing is left to undo. */
	dn_remove_files(p, d, 0);
	dotnet__close_jit_files(&d->files);
	dn_forget_enabled(p);
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
	dn_set_state(d, DOTNETPROC_WAITING, "perf maps turned off after %" PRIu64 " s unsampled, "
		  "files removed; on again at its next sample", o->perfmap_idle_ns / 1000000000);
	if (o->verbose)
		log_info("pid %u: %s", p->pid, d->detail);
}

void dn_bounded_enabled(struct dotnet_state *d)
{
	d->base_bytes = files_bytes(d);
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
void dn_end_bounded(struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
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
void dn_prev_window(struct dotnet_state *d)
{
	if (d->nprev && ++d->prev_windows > 1)
		dn_free_prev(d);
}

/* Decide (pmpolicy__decide) and start what it says; at every poll, idle or not. */
void dn_bounded(struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
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
		log_warn("pid %u: its perf map (%" PRIu64 " MiB) is past "
			"--perfmap-max-mb, but it was not turned on by spanprof: left alone", p->pid,
			s.bytes >> 20);
		return;
	case PMPOLICY_RESTART:
		/* What it wrote up to now, first: a method freed before the runtime writes the live
		 * ones again keeps its name for the frames sampled before. */
		dn_read_files(p, d, o);
		err = start_policy_talk(p, d, dn_enable_type(d, o));
		break;
	case PMPOLICY_OFF:
		err = start_policy_talk(p, d, 0);
		break;
	case PMPOLICY_ON:
		/* As the first time (try_enable): written down first, its answer taken by poll. */
		d->off_idle = 0;
		d->on_agains++;
		COUNT(o, on_again);
		dn_note_enabled(p);
		dn_set_state(d, DOTNETPROC_WAITING, "sampled again: asking it to turn its perf map on");
		if ((err = dn_start_enable(p, d, dn_enable_type(d, o), o->deadline_ns)))
			dn_enable_ended(p, d, dn_enable_type(d, o), err, 0);
		return;
	}
	if (err) {
		d->pm_gave_up = 1;
		COUNT(o, failed);
	}
}
