/* pmpolicy.h: what a process's perf maps cost its pod, kept bounded: when to start a perf map
 * afresh (size cap), when to turn perf maps off (idle) and on again. A pure decision on state and
 * time, so that it is tested without a runtime; dotnetbounded.c carries it out. */
#ifndef SPANPROF_PMPOLICY_H
#define SPANPROF_PMPOLICY_H

#include <stdint.h>

/* The PerfMapType spanprof turns on (IPC EnablePerfMap, DOTNET_PerfMapEnabled for a command it
 * starts): 3, the perf map only. ReadyToRun code is named from the images and copied stubs by
 * their bytes, so the jitdump (every method's code bytes, and dead on .NET 10 at its first stub
 * block, dotnet/runtime#132935) adds no name: perfmap/README.md. */
#define PMPOLICY_PERFMAP_TYPE	3
#define PMPOLICY_PERFMAP_TYPE_STR "3"

#define PMPOLICY_MAX_MB_DEFAULT	32	/* --perfmap-max-mb */
#define PMPOLICY_IDLE_S_DEFAULT	3600	/* --perfmap-idle (the agent) */

struct pmpolicy_cfg {
	uint64_t max_bytes;	/* a perf map we turned on past this is started afresh; 0: no cap */
	uint64_t idle_ns;	/* one we turned on, unsampled this long, is turned off; 0: never */
};

/* One process, now. Times are CLOCK_MONOTONIC (the samples' clock). */
struct pmpolicy_proc {
	int ours;		/* its perf maps are on because spanprof turned them on */
	int off_idle;		/* spanprof turned them off for idleness (and removed the files) */
	int busy;		/* a talk to it is out: nothing new is decided */
	int warned;		/* its perf map, not ours, was already found past the cap */
	uint64_t bytes;		/* what its perf map files hold now */
	uint64_t base_bytes;	/* ... right after the last start afresh (its live methods); 0 */
	uint64_t last_sample_ns;	/* its newest sample; 0: never */
	uint64_t off_ns;	/* when it was turned off for idleness */
};

/* What was done, for the report and /metrics (the session's; every process adds to it). */
struct pmpolicy_counters {
	uint64_t restarts;	/* perf maps we turned on started afresh past the cap */
	uint64_t not_ours_over_cap;	/* processes whose own perf map passed the cap: left alone */
	uint64_t idle_off;	/* turned off after perfmap_idle_ns unsampled, files removed */
	uint64_t on_again;	/* ... turned on again at a later sample */
	uint64_t failed;	/* talks for these that failed (that process is then left as is) */
};

enum pmpolicy_action {
	PMPOLICY_NONE = 0,
	PMPOLICY_RESTART,	/* off and on again over IPC: the runtime writes live methods only */
	PMPOLICY_OFF,		/* off over IPC, and the files spanprof caused removed */
	PMPOLICY_ON,		/* sampled again after PMPOLICY_OFF: on again */
	PMPOLICY_WARN,		/* past the cap, but the user's: counted once, left alone */
};

/*
 * What to do with process s at now_ns. A perf map is started afresh only when it is past the cap
 * and at least twice what the last start afresh left (the live methods alone): a process whose
 * live code nears the cap is not restarted over and over. Idleness goes first: a process turned
 * off needs no restart.
 */
enum pmpolicy_action pmpolicy__decide(const struct pmpolicy_cfg *c, const struct pmpolicy_proc *s,
				      uint64_t now_ns);

const char *pmpolicy__action_name(enum pmpolicy_action a);

#endif /* SPANPROF_PMPOLICY_H */
