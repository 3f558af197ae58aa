/* dotnetproc.h: the .NET runtime (runtime.h): per-process perf map / jitdump readers, perf maps
 * turned on over the diagnostics IPC, and names for JIT and ReadyToRun code. */
#ifndef SPANPROF_DOTNETPROC_H
#define SPANPROF_DOTNETPROC_H

#include <stdint.h>

#include "perfmap.h"

struct proc;

/* What happened to a process, for the end-of-run report. */
enum dotnetproc_state {
	DOTNETPROC_NEW = 0,
	DOTNETPROC_READING,	/* perf map and/or jitdump open */
	DOTNETPROC_WAITING,	/* no files yet; enabling not possible or not yet tried */
	DOTNETPROC_ENABLED,	/* we enabled its perf map over diagnostics IPC */
	DOTNETPROC_REFUSED,	/* a file was refused (symlink out of root, not regular) */
	DOTNETPROC_FAILED,	/* could not reach it (no root, IPC error) */
	DOTNETPROC_WITHHELD,	/* perf maps not turned on: its runtime has a known perf map hazard,
				 * or its version could not be read (perfmap/rtversion.h) */
};

/* Undo what a spanprof that died left on: perf maps it had turned on (written down in
 * $SPANPROF_STATE_DIR/enabled, default /run/spanprof) are turned off and their files removed.
 * Returns how many processes were put back. Call once at start. */
int dotnetproc__sweep(void);

/* The runtime itself is dotnet_runtime (runtime.h); these are for reports and tests. */
enum dotnetproc_state dotnetproc__state(const struct proc *p, const char **detail);
void dotnetproc__stats(const struct proc *p, struct perfmap_stats *out);
/* Whether p is read for its sampled addresses only (sparse: it was idle). */
int dotnetproc__sparse(const struct proc *p);
/* Why its perf maps were not turned on (enum rtwithheld, perfmap/rtversion.h): RTWITHHELD_NONE (0)
 * when they were, or were never withheld. */
int dotnetproc__withheld(const struct proc *p);

#endif /* SPANPROF_DOTNETPROC_H */
