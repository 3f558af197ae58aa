/* engine.h: the profiling engine both front-ends run (record, agent): BPF session -> process
 * table and runtimes -> symbolizer -> windows of aggregated samples -> profiles per target.
 * open -> attach -> poll ... cut/build ... -> stop -> free, each a call into the module that owns it. */
#ifndef SPANPROF_ENGINE_H
#define SPANPROF_ENGINE_H

#include <signal.h>
#include <stdint.h>

#include "aggregate.h"
#include "bpfsession.h"
#include "pmpolicy.h"
#include "procevents.h"
#include "runtime.h"
#include "symbolize.h"
#include "symsrv.h"

struct proc;
struct proctab;

/* Default caps on what a hostile process can make us hold: past them, a counted [truncated]. */
#define ENGINE_MAX_FRAMES 100000
#define ENGINE_OFFCPU_PROCS 8192	/* .NET processes whose blocks are timed at once (dotnet_only) */
#define ENGINE_MAX_STACKS 200000
#define ENGINE_MAX_SYMBOL_MB 256

struct engine_opts {
	struct bpfsession_opts bpf;
	int enable_perfmap;	/* turn perf maps on in sampled .NET processes that lack them */
	uint32_t perfmap_type;
	int jitdump_beside_perfmap;	/* runtime_env's */
	int show_tiers;
	int pyroscope_labels;	/* span_id = the local root span id */
	int dotnet_only;	/* keep samples of .NET processes only (counted otherwise) */
	int perfmaps_ours;	/* perf maps were turned on by us (record -- COMMAND): remove them */
	int allow_remote_files;	/* read perf maps / jitdumps on remote and FUSE file systems */
	uint64_t first_window_ns;	/* length of the first window from attach; 0: one window */
	uint64_t interval_ns;	/* of every later window */
	uint32_t max_frames;	/* distinct frames per process (0: ENGINE_MAX_FRAMES) */
	uint32_t max_stacks;	/* distinct stacks per window (0: ENGINE_MAX_STACKS) */
	uint32_t max_symbol_mb;	/* symbol budget: code ranges, ELF and R2R tables (0: ENGINE_MAX_SYMBOL_MB) */
	uint32_t perfmap_max_mb;	/* a perf map we turned on past it is started afresh (0: none) */
	uint32_t perfmap_idle_s;	/* one unsampled this long is turned off (0: never) */
	struct symsrv_opts symsrv;	/* debug files by build id; no server (nor $DEBUGINFOD_URLS): off */
	int verbose;
	/* Set (by a signal handler) when the exit must not wait: processes are then left without a
	 * talk (perf maps we turned on stay on, and the next start turns them off). NULL: never. */
	volatile sig_atomic_t *hurry;
};

/* Losses and oddities seen in user space, reported next to the BPF counters. */
struct engine_counters {
	uint64_t bpf[SP_CNT__MAX];
	uint64_t received;
	uint64_t malformed;	/* ring buffer record shorter than its header says */
	uint64_t dropped_nomem;	/* could not be aggregated: out of memory */
	uint64_t ctx_undecodable;	/* span record present but not decodable */
	uint64_t not_target;	/* samples of processes the front-end does not profile */
	uint64_t refused;	/* samples a profile refused (a label no writer could encode) */
	uint64_t left_out;	/* samples no profile took (no series for their process: out of
				 * memory, or its entry gone) */
	uint64_t windows;	/* windows cut */
	uint64_t stacks_truncated;	/* samples past the stack cap (in [truncated] stacks) */
	uint64_t span_ids_dropped;	/* samples past it kept with their stack, without span ids */
	uint64_t procs_exited;	/* processes seen to exit (fds closed, runtimes detached) */
	uint64_t procs_pruned;	/* exited processes whose entry was freed */
	uint64_t procs_idle_released;	/* idle processes whose frames and mappings were freed */
	uint64_t leftovers_undone;	/* perf maps a dead spanprof left on, turned off at start */
	uint64_t chains_cut;	/* samples whose user stack walk left code: cut there, marked */
	uint64_t scan_dropped;	/* off-CPU frames from a scanned frame pointer that were data */
	uint64_t offcpu_untracked;	/* .NET processes whose blocks could not be timed (more than
					 * ENGINE_OFFCPU_PROCS at once, or a map error) */
	uint64_t ctx_reregistered;	/* span tables put back after the sampler's LRU dropped them */
	/* Process events (procevents.h). */
	uint64_t ev[SP_EV_CNT__MAX];	/* BPF's counters */
	int ev_unavailable;	/* 0, or the errno that kept them off (span tables then polled) */
	int ev_ctx_unavailable;	/* 0, or the errno that kept span-table events off (neither source loads):
				 * span tables polled, execs still events */
	uint64_t ev_ctx;	/* span-table events handled: maps read at once */
	uint64_t ev_ctx_at_once;	/* ... whose table was registered then and there */
	uint64_t ev_urgent_full;	/* ... left to the ordinary poll: too many retried at once, or
					 * this process retried less than 10 s ago */
	uint64_t ev_throttled;	/* ... past EV_READS_PER_SEC of their process: left to the poll */
	uint64_t ev_not_target;	/* ... of processes not profiled (-p) */
	uint64_t ev_exec;	/* execs of known processes: frames, mappings, runtimes anew */
	uint64_t polls_past_deadline;	/* loop turns cut short by the deadline */
	uint64_t remote_refused;	/* process-supplied files on remote / FUSE file systems refused */
	uint64_t ev_before_exec;	/* samples handled after their process's exec, filed before it */
	uint64_t paused_ns;	/* time sampling was paused (SIGUSR1), up to now */
	struct pmpolicy_counters perfmap;	/* perf maps started afresh, turned off and on again */
};

struct engine;

/* Set up everything but sampling (after bpfsession__check). NULL on failure, after a one-line
 * message; *rc is the exit code. */
struct engine *engine__open(const struct engine_opts *o, int *rc);
/* Start sampling. 0 or the exit code after a one-line message. */
int engine__attach(struct engine *e);
/* One turn of the loop: drain the ring buffer (waiting up to timeout_ms), poll the processes'
 * runtimes. 0 or -errno (a broken ring buffer: fatal). */
int engine__poll(struct engine *e, int timeout_ms);
/* The open window's end, CLOCK_MONOTONIC (UINT64_MAX: one window). */
uint64_t engine__window_end(const struct engine *e);
/* Samples in the open windows (a sample past the open window's end goes to the one after it):
 * the last flush cuts until none is left. */
uint64_t engine__open_samples(const struct engine *e);
/* Memory the open windows hold. */
uint64_t engine__open_bytes(const struct engine *e);
/* Close the open window once its end has passed: drain, name its frames, return it (free with
 * aggregate__window_free). NULL and errno on failure. */
struct agg_window *engine__cut(struct engine *e);
/* Build w into profiles (n_profiles of them) as target(arg, p) chooses: an index, or -1 to leave
 * the process out. Returns samples added or -errno. */
int64_t engine__build(struct engine *e, const struct agg_window *w,
		      int (*target)(void *arg, struct proc *p), void *arg,
		      struct profile **profiles, size_t n_profiles);
/* Free the state of processes that exited and have no samples in an open window. */
void engine__prune(struct engine *e);
/* The session's end (CLOCK_MONOTONIC, 0: none): no talk to a process (diagnostics socket) starts
 * at or past it, one started before gives up by then, and a loop turn stops polling processes. */
void engine__set_deadline(struct engine *e, uint64_t deadline_ns);
/* Stop sampling and drain what is left (the open window can still be cut). */
void engine__stop(struct engine *e);
/* Leave every process as found (runtimes detached) and free. NULL-safe. */
void engine__free(struct engine *e);

void engine__counters(struct engine *e, struct engine_counters *out);
struct proctab *engine__procs(const struct engine *e);
const struct symbolizer *engine__symbolizer(const struct engine *e);
const struct symsrv *engine__symsrv(const struct engine *e);	/* NULL: no symbol server */
/* Wait up to timeout_ms for debug files still being fetched (frames are named with them at the
 * next cut). Returns how many are still pending. */
uint64_t engine__wait_symbols(struct engine *e, uint32_t timeout_ms);
const struct bpfsession *engine__bpf(const struct engine *e);
/* From now on SIGUSR1 pauses sampling and SIGUSR2 resumes it, at the next engine__poll, which says
 * so on stderr with the CLOCK_MONOTONIC time. Process-wide: there is one engine per process. */
void engine__catch_pause_signals(void);
uint64_t engine__attached_ns(const struct engine *e);	/* CLOCK_MONOTONIC at attach */

#endif /* SPANPROF_ENGINE_H */
