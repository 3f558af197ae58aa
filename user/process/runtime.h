/* runtime.h: per-process runtime knowledge behind one interface. The process table knows that a
 * process has runtime instances, not what .NET or a span table is: each runtime is one module
 * (dotnetproc.c: perf maps and jitdump; hookproc.c: the hook's span table). */
#ifndef SPANPROF_RUNTIME_H
#define SPANPROF_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

struct proc;
struct pmpolicy_counters;

struct runtime_ops;

/* What every runtime may use, owned by the session. */
struct runtime_env {
	const struct runtime_ops *const *runtimes;	/* by enum runtime_id: runtime_registry */
	int enable_perfmap;	/* send EnablePerfMap to sampled .NET processes that lack perf maps */
	uint32_t perfmap_type;	/* PerfMapType sent: 1 perf map + jitdump, 2 jitdump, 3 perf map */
	/* A process with its own perf map alone, in a runtime that holds back its newest lines
	 * (runtime 11): turn its jitdump on beside it (--buffered-perfmap add-jitdump). It stays
	 * on: the runtime cannot turn it off without the perf map. */
	int jitdump_beside_perfmap;
	uint64_t min_age_ns;	/* never talk to a process younger than this (runtime start-up race) */
	int ctx_map_fd;		/* the sampler's ctx_procs map */
	uint64_t *ctx_gen;	/* its generation (profiler.h SP_GEN_CTX_PROCS), mapped: one more
				 * after each change, or NULL */
	int perfmaps_ours;	/* every perf map was turned on by us (its files go at detach) */
	/* A process not sampled for this long holds no symbol data: its runtimes free what they
	 * read and read it again at its next sample (0: kept). Longer than a window, so frames
	 * are always named before their data goes. */
	uint64_t idle_release_ns;
	int naming_next;	/* this poll comes right before the frames are named (a window's end,
				 * a process leaving the table): what they need is read now */
	int allow_remote_files;	/* read process-supplied files on remote / FUSE file systems too */
	uint64_t *remote_refused;	/* the session's count of such files refused (or NULL) */
	uint64_t deadline_ns;	/* CLOCK_MONOTONIC; 0: none. No talk to a process starts at or past
				 * it, and one that starts before gives up by then (-d is a deadline) */
	int talks_held;		/* no talk starts now (the scan at start: they wait for sampling) */
	/* What perf maps we turned on may cost a pod (pmpolicy.h): a perf map past
	 * perfmap_max_bytes is started afresh (0: no cap); a process unsampled for perfmap_idle_ns
	 * has them turned off and its files removed (0: never), on again at its next sample. */
	uint64_t perfmap_max_bytes;
	uint64_t perfmap_idle_ns;
	struct pmpolicy_counters *perfmap_counts;	/* the session's (or NULL) */
	int verbose;
};

/* Why code a runtime knows to be its own has no name (rt_symbol.unnamed, set with -ENOENT). */
enum rt_unnamed {
	RT_UNNAMED_NOT_OURS = 0,	/* not known to be the runtime's code */
	RT_UNNAMED_NO_ENTRY,		/* JIT or precompiled code without a perf map / image entry */
	RT_UNNAMED_JITDUMP_STOPPED,	/* JIT code, and the jitdump (the only source) stopped early */
	RT_UNNAMED_IMAGE,		/* a managed image that could not be read, is not R2R, or
					 * did not fit the symbol budget */
	RT_UNNAMED_WITHHELD,		/* JIT code of a process whose perf maps were not turned on:
					 * its runtime has a known perf map hazard (perfmap/rtversion.h) */
	RT_UNNAMED__MAX,
};

/* A symbol a runtime gives for code it owns. */
struct rt_symbol {
	const char *name;	/* display name */
	const char *system_name;	/* full name, or NULL */
	const char *tier;	/* "OptimizedTier1", ... or NULL */
	uint64_t start, size;	/* the method's code range, prologue first (0, 0: not known, or
				 * not a method: a stub) */
	int unnamed;		/* on -ENOENT: enum rt_unnamed */
};

/* poll's answers, besides -errno (a failure: retried with the same backoff as RT_WAIT). */
#define RT_READY 0	/* working: poll again on the next tick */
#define RT_DONE	 1	/* nothing to do until the mappings change */
#define RT_WAIT	 2	/* waiting on the process (no files yet, table not published) */

struct runtime_ops {
	const char *name;
	/* Whether the runtime is in this process, from its mappings (p->vmas). */
	int (*detect)(const struct proc *p);
	/* Create the instance's state; NULL on failure (retried at the next poll). */
	void *(*attach)(struct proc *p, const struct runtime_env *env);
	/* Periodic work; RT_READY, RT_DONE, RT_WAIT or -errno. */
	int (*poll)(struct proc *p, void *state, const struct runtime_env *env);
	/* Instead of poll while the process is idle enough to have its mappings freed (optional):
	 * what must happen even so (perf maps turned off after long idleness). Same pace as poll. */
	void (*idle_poll)(struct proc *p, void *state, const struct runtime_env *env);
	/* The process's mappings were re-read (optional). */
	void (*maps_changed)(struct proc *p, void *state);
	/* Whether code at addr may be the runtime's (optional): in_file says it lies in a file-backed
	 * mapping that is not an ELF file (a ReadyToRun .dll); ELF code is never asked about. Claimed frames are named at window close, after
	 * the last poll, by symbolize(): 0, or -ENOENT. */
	int (*claims)(const struct proc *p, void *state, uint64_t addr, int in_file);
	int (*symbolize)(struct proc *p, void *state, uint64_t addr, uint64_t time_ns,
			 struct rt_symbol *out);
	/* A hint (optional): these claimed addresses, at most RUNTIME_PREFETCH_MAX, are about to be
	 * symbolize()d one after another; start fetching what naming them reads. */
	void (*prefetch)(struct proc *p, void *state, const uint64_t *addrs, size_t n);
	/* Code at addr that no symbolize() names may be the runtime's copy of code in one of the
	 * process's files: *orig, the address of the original (named as that). 0, or -ENOENT.
	 * Asked once per frame, when it is first found unnamed; may be NULL. */
	int (*copy_of)(struct proc *p, void *state, uint64_t addr, uint64_t *orig);
	/* One line for the report ("" when there is nothing to say). */
	void (*describe)(const struct proc *p, const void *state, char *buf, size_t len);
	/* Undo what was changed in the process (leave it as found) and free the state. */
	void (*detach)(struct proc *p, void *state, const struct runtime_env *env);
	/* Once per window, for the runtime as a whole rather than one process (optional): free
	 * what its processes share and nothing used for idle_ns (read again when next needed). */
	void (*release_idle)(uint64_t now_ns, uint64_t idle_ns);
};

enum runtime_id {
	RT_DOTNET = 0,		/* dotnetproc.c */
	RT_SPANCTX,		/* hookproc.c */
	RT_OTELCTX,		/* otelctx.c: OTEP 4719 process context */
	RT__MAX,
};

/* Every runtime, by enum runtime_id (registry.c): adding a runtime is one module and one line. */
extern const struct runtime_ops *const runtime_registry[RT__MAX];

/* One runtime in one process. */
struct rt_instance {
	void *state;		/* NULL until attached, and after detach */
	char *last_desc;	/* describe() at detach, for the report of an exited process */
	int detached;		/* never attached again */
	int detected;
	int last;		/* last poll answer */
	uint64_t next_poll_ns;	/* CLOCK_MONOTONIC */
	uint64_t backoff_ns;
};

/* A process this young may still be starting its runtime: its mappings are re-read often and
 * waiting runtimes retry at the base interval. The one notion of a "young" process. */
#define RUNTIME_YOUNG_NS	(30 * 1000000000ull)
#define RUNTIME_BACKOFF_MIN_NS	(500 * 1000000ull)
#define RUNTIME_BACKOFF_MAX_NS	(8000 * 1000000ull)

/* The mappings of p were (re-)read: attach runtimes newly detected, tell the others. */
void runtime__maps_changed(struct proc *p);
/* Poll every attached instance that is due (one backoff policy for all). */
void runtime__poll(struct proc *p, uint64_t now_ns);
/* Make every instance of p due now, except those done until the mappings change (a sample
 * arrived from it for the first time, or after idle_release_ns without one). */
void runtime__wake(struct proc *p);
/* Symbol for addr from the runtimes that claim it: 0, or -ENOENT. in_file: addr is in a
 * file-backed mapping whose ELF symbols did not name it (ReadyToRun code is such a file). */
int runtime__claims(const struct proc *p, uint64_t addr, int in_file);
int runtime__symbolize(struct proc *p, uint64_t addr, uint64_t time_ns, struct rt_symbol *out);
/* Tell every runtime of p that these addresses are about to be symbolized (a hint): naming a
 * window's new frames a group at a time, their lookups' waits on memory overlap. */
#define RUNTIME_PREFETCH_MAX 16
void runtime__prefetch(struct proc *p, const uint64_t *addrs, size_t n);
/* The first runtime's copy_of answer for addr: 0 and *orig, or -ENOENT. */
int runtime__copy_of(struct proc *p, uint64_t addr, uint64_t *orig);
void *runtime__state(const struct proc *p, enum runtime_id id);	/* NULL: not attached */
int runtime__has(const struct proc *p, enum runtime_id id);	/* detected in p */
/* "; dotnet: ...; spanctx: ..." for the report; each runtime's part is cut at RUNTIME_DESC_MAX. */
#define RUNTIME_DESC_MAX 768
void runtime__describe(const struct proc *p, char *buf, size_t len);
/* Detach every runtime (leave the process as found); what they said of it stays for the report
 * and runtime__has() stays true. runtime__release frees that too (the process leaves the table). */
void runtime__detach_all(struct proc *p);
/* Every runtime's release_idle with env->idle_release_ns, once per window. Not called when that
 * is 0 (nothing goes: engine__cut decides, for the symbolizer's tables too). */
void runtime__release_idle(const struct runtime_env *env, uint64_t now_ns);
void runtime__release(struct proc *p);

#endif /* SPANPROF_RUNTIME_H */
