/* dotnetproc_int.h: what the files of the .NET runtime (dotnetproc.c) share: the per-process
 * state, and the calls between its parts. Not for use outside user/process/dotnet*.c. */
#ifndef SPANPROF_DOTNETPROC_INT_H
#define SPANPROF_DOTNETPROC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "dotnet.h"
#include "dotnetproc.h"
#include "perfmap.h"
#include "rtversion.h"
#include "runtime.h"

struct dn_stubs;
struct r2r_image;
struct talk;
struct enable_talk;
struct policy_talk;

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
	/* Its own perf map alone, in a runtime that holds back the newest lines (the gate's
	 * jitdump_beside_perfmap): the jitdump turned on beside it. The runtime cannot turn the
	 * jitdump off alone, so it stays on; its file goes if the process exits while we run. */
	int jitdump_tried;	/* asked (once) */
	int adding_jitdump;	/* the talk out is that one */
	int jitdump_added;	/* on, at our asking */
	uint64_t last_open_ns;
	uint32_t restarts;
	uint32_t restarts_deferred;	/* truncations seen before the last restart's pause ended */
	uint64_t next_restart_ns;	/* no restart before: RESTART_PACE times the last one's cost */
	uint64_t read_last_ns, read_max_ns;	/* what reading both files from the start took */
	uint32_t released;	/* times its symbol data was freed while it was idle */
	uint32_t stale;		/* files of an earlier process with the same pid, passed over */
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
	uint64_t base_bytes;	/* the files' size right after our last enable or start afresh */
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

/* dotnetproc.c: the runtime's hooks (runtime.h), its version, its files. */
/* The state and its detail for the report. */
void dn_set_state(struct dotnet_state *d, enum dotnetproc_state st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Open whichever of the two files is not open yet (refused ones: the reason in the state). */
void dn_open_files(struct proc *p, struct dotnet_state *d);
/* 1 when perf maps may be turned on in it (its runtime's version, perfmap/rtversion.h); 0 sets
 * the state to WITHHELD. */
int dn_gate_allows(const struct proc *p, struct dotnet_state *d, const struct runtime_env *o);

/* dotnetenable.c: perf maps turned on over the diagnostics IPC, written down in the state
 * directory first, and undone (here, or by the next spanprof: dotnetproc__sweep). */
void dn_note_enabled(const struct proc *p);
void dn_forget_enabled(const struct proc *p);
/* EnablePerfMap of type on a worker: 0 (d->enabling set), or -errno. */
int dn_start_enable(struct proc *p, struct dotnet_state *d, uint32_t type, uint64_t deadline_ns);
/* The PerfMapType to send it: o's, or 2 (jitdump only) where its runtime writes no perf map when
 * turned on late (rtversion.c's gate: runtime 11.0) and o's is the default; the gate read first. */
uint32_t dn_enable_type(const struct dotnet_state *d, const struct runtime_env *o);
/* Act on the end of an EnablePerfMap talk: err its result, hr the runtime's HRESULT. */
void dn_enable_ended(struct proc *p, struct dotnet_state *d, uint32_t type, int err, uint32_t hr);
/* Take back the talk once it ended (wait: also while it runs). */
void dn_take_enable(struct proc *p, struct dotnet_state *d, int wait);
/* The process is being left with a talk out: dropped, waited for, or abandoned (o->talks_held). */
void dn_end_enabling(struct proc *p, struct dotnet_state *d, const struct runtime_env *o);
/* Start EnablePerfMap in a sampled process without files, once, when o allows it. */
void dn_try_enable(struct proc *p, struct dotnet_state *d, const struct runtime_env *o);
/* Start EnablePerfMap of the jitdump in a sampled process that has its own perf map alone, in a
 * runtime that holds back that perf map's newest lines; once, when o and its gate allow it. */
void dn_try_add_jitdump(struct proc *p, struct dotnet_state *d, const struct runtime_env *o);
/* Remove the perf map and jitdump behind d->files (only those very files), through its root;
 * jitdump_only: the jitdump alone. */
void dn_remove_files(struct proc *p, struct dotnet_state *d, int jitdump_only);

/* dotnetsparse.c: both files read again from the start (a truncation, a sparse read), reading
 * for the sampled addresses only, and letting an idle process's index go. */
/* Read both files from the start into a new perfmap: entries read, or -errno. keep (NULL: freed)
 * receives the old one. */
int64_t dn_restart(struct proc *p, struct dotnet_state *d);
int64_t dn_restart_keeping(struct proc *p, struct dotnet_state *d, struct perfmap **keep);
/* dn_restart, paced by what the last one cost (0: deferred). */
int64_t dn_restart_paced(struct proc *p, struct dotnet_state *d);
/* Sparse from now on (the index freed); sparse no more (what was wanted freed). */
void dn_sparse_start(struct dotnet_state *d);
void dn_sparse_end(struct dotnet_state *d);
/* An address the next sparse read must cover (too many: the whole index instead). */
void dn_sparse_want(struct dotnet_state *d, uint64_t addr);
/* Read again for what was wanted: 0 when nothing was, entries read, or -errno. */
int64_t dn_sparse_read(struct proc *p, struct dotnet_state *d);
/* Whether the sparse index was read for addr; how many addresses it was read for. */
int dn_in_filter(const struct dotnet_state *d, uint64_t addr);
size_t dn_nfilter(const struct dotnet_state *d);
/* At a window's end: quiet windows in a row let the whole index go. */
void dn_quiet_window(const struct proc *p, struct dotnet_state *d, const struct runtime_env *o);
/* 1 when the process is idle (its index let go, if any), else 0. */
int dn_idle(const struct proc *p, struct dotnet_state *d, const struct runtime_env *o);

/* dotnetproc.c: what the files gained since the last read, into the index (a truncation: read
 * from the start, paced); 1 if they grew. */
int dn_read_files(struct proc *p, struct dotnet_state *d, const struct runtime_env *o);

/* dotnetbounded.c: the perf map policy (pmpolicy.h) applied: started afresh past the cap,
 * turned off when idle, on again when sampled. */
void dn_bounded(struct proc *p, struct dotnet_state *d, const struct runtime_env *o);
void dn_end_bounded(struct proc *p, struct dotnet_state *d, const struct runtime_env *o);
/* Our EnablePerfMap was answered: what the files hold now (the live methods, written before the
 * answer) is what the cap is measured against, as after a start afresh. */
void dn_bounded_enabled(struct dotnet_state *d);
/* A window named: the indexes kept from before a start afresh go after the next one. */
void dn_prev_window(struct dotnet_state *d);
void dn_free_prev(struct dotnet_state *d);

#endif /* SPANPROF_DOTNETPROC_INT_H */
