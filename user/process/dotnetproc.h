/* dotnetproc.h: per-process .NET state: its perf map / jitdump readers and perf-map enabling. */
#ifndef SPANPROF_DOTNETPROC_H
#define SPANPROF_DOTNETPROC_H

#include <stdint.h>

#include "perfmap.h"

struct proc;

struct dotnetproc_opts {
	int enable_perfmap;	/* send EnablePerfMap to processes that have no perf map */
	uint32_t perfmap_type;	/* PerfMapType sent: 1 perf map + jitdump, 2 jitdump, 3 perf map */
	uint64_t min_age_ns;	/* never enable in a process younger than this (startup race) */
	int verbose;
};

/* What happened to a process, for the end-of-run report. */
enum dotnetproc_state {
	DOTNETPROC_NEW = 0,
	DOTNETPROC_READING,	/* perf map and/or jitdump open */
	DOTNETPROC_WAITING,	/* no files yet; enabling not possible or not yet tried */
	DOTNETPROC_ENABLED,	/* we enabled its perf map over diagnostics IPC */
	DOTNETPROC_REFUSED,	/* a file was refused (symlink out of root, not regular) */
	DOTNETPROC_FAILED,	/* could not reach it (no root, IPC error) */
};

/*
 * Called when the process is first seen to be .NET, then on every poll: opens its files through
 * its root (container-safe), enables perf maps when asked, and reads what was appended since the
 * last call. Returns 0 or -errno; never fatal for the session.
 */
int dotnetproc__poll(struct proc *p, const struct dotnetproc_opts *opts);

/* Code at addr live at time_ns in this process, or NULL. */
const struct perfmap_sym *dotnetproc__lookup(struct proc *p, uint64_t addr, uint64_t time_ns);

/* Undo what we changed (DisablePerfMap for processes we enabled) and free the state. */
void dotnetproc__detach(struct proc *p, const struct dotnetproc_opts *opts);

enum dotnetproc_state dotnetproc__state(const struct proc *p, const char **detail);
void dotnetproc__stats(const struct proc *p, struct perfmap_stats *out);

#endif /* SPANPROF_DOTNETPROC_H */
