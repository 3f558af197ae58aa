/* proctab.h: the processes seen in samples, keyed by pid and start time, with their mappings and
 * runtime instances. */
#ifndef SPANPROF_PROCTAB_H
#define SPANPROF_PROCTAB_H

#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

#define PROC_MAPS_MAX (256u << 20)	/* 65530 mappings of long paths fit many times over */

enum vma_kind {
	VMA_ANON = 0,	/* anonymous, [heap], [stack], [anon:...] */
	VMA_FILE,	/* a file path */
	VMA_MEMFD,	/* /memfd:... (the .NET runtime's W^X double mapping holds JIT code) */
	VMA_VDSO,	/* [vdso], [vsyscall] */
};

struct vma {
	uint64_t start, end, pgoff;
	uint64_t dev, ino;
	const char *path;	/* as /proc/<pid>/maps shows it; owned by the table */
	enum vma_kind kind;
	int exec;
};

struct proc_syms;
struct runtime_env;

struct proc {
	uint32_t pid;
	int nspid;		/* its pid inside its own pid namespace (the name of its files) */
	int64_t uid;		/* effective uid, as the host sees it; -1 unknown */
	uint32_t idx;		/* dense index, stable while the process is in the table */
	uint64_t start_ticks;	/* group leader's start, /proc/<pid>/stat field 22 (10 ms ticks):
				 * pid + start_ticks is the identity across pid reuse */
	char comm[16];
	int dir_fd;		/* open /proc/<pid>: keeps reads tied to this process, not a reused pid;
				 * every per-process read (maps, status, environ, mem) goes through it
				 * (lib/procfs.h), never through the pid number */
	int root_fd;		/* O_PATH /proc/<pid>/root, -1 if unavailable */
	int gone;		/* exited, or the pid now belongs to another process */
	int retired;		/* gone, its frames named, its runtimes detached and fds closed */
	int sampled;		/* a target: seen in a sample, or named with -p */
	int offcpu_tracked;	/* its blocks are timed off-CPU (the agent's .NET processes) */
	int execed;		/* its program exec'd another: a newer entry has its pid and start time
				 * (gone is set: its /proc directory now shows the new program) */
	uint64_t exec_ns;	/* its program began with an exec seen at this time (bpf clock), or 0 */
	uint32_t before_exec;	/* idx + 1 of the entry of the program before that exec, or 0 */
	struct vma *vmas;	/* sorted by start */
	size_t nvmas;
	uint64_t maps_bytes;	/* what vmas holds (maps__bytes) */
	int maps_released;	/* vmas freed while the process was idle (proc__release_maps) */
	uint64_t maps_read_ns;	/* when the mappings were last read (CLOCK_MONOTONIC) */
	uint64_t maps_cost_ns;	/* what that read and parse cost */
	uint64_t last_sample_ns;	/* time of its newest sample (bpf_ktime_get_ns clock) */
	uint64_t ev_window_ns;	/* the engine's throttle of maps reads on process events */
	uint32_t ev_reads;
	uint64_t ev_urgent_ns;	/* when its span table was last retried at once */
	const struct runtime_env *env;	/* the session's, for its runtimes */
	struct rt_instance rt[RT__MAX];	/* runtime instances (runtime.h) */
	struct proc_syms *syms;	/* the symbolizer's frames of this process, owned by it */
	void *ident;		/* the front-end's view (service, pod) ... */
	void (*ident_free)(void *ident);	/* ... freed with the process through this */
};

struct proctab;

/* Constructor returns NULL and sets errno. proc_root is "/proc" except in tests; env is given to
 * every process's runtimes (NULL: no runtime is attached). */
struct proctab *proctab__new(const char *proc_root, const struct runtime_env *env);
void proctab__free(struct proctab *pt);	/* NULL-safe; closes every fd (detach runtimes first) */

/*
 * The process with this pid and start time, created (and its mappings read) on first sight.
 * Never NULL except on allocation failure: a process that is already gone gets an entry with
 * gone set and no mappings, so its samples are still counted.
 */
struct proc *proctab__get(struct proctab *pt, uint32_t pid, uint64_t start_ticks, const char *comm);
/* The entry of this pid and start time, or NULL: a lookup only. */
struct proc *proctab__find(const struct proctab *pt, uint32_t pid, uint64_t start_ticks);
/*
 * p exec'd another program at exec_ns: p becomes execed and gone (its frames and mappings stay
 * for its own samples) and leaves the lookup; a new entry (new mappings, no frames, runtimes
 * detected anew) takes the pid and start time and is returned. NULL and errno ENOMEM (p stays).
 */
struct proc *proctab__exec(struct proctab *pt, struct proc *p, const char *comm, uint64_t exec_ns);
/* The entry that ran as p at time_ns (bpf clock): p, or the program before an exec after it. */
struct proc *proctab__at_time(const struct proctab *pt, struct proc *p, uint64_t time_ns);
/* The process now running as pid (start time and name from /proc/<pid>/stat), as proctab__get
 * would file it. NULL and errno ESRCH when there is no such process. */
struct proc *proctab__open(struct proctab *pt, uint32_t pid);
/* The process at idx, or NULL (a free index). Iterate with idx < proctab__count(). */
struct proc *proctab__at(const struct proctab *pt, uint32_t idx);
uint32_t proctab__count(const struct proctab *pt);	/* upper bound of indexes in use */
uint32_t proctab__live(const struct proctab *pt);	/* processes in the table */
/* Drop p from the table: closes its fds and frees it. Its runtimes and symbols must be gone. */
void proctab__remove(struct proctab *pt, struct proc *p);

/* The mapping holding addr, or NULL. A lookup only: no I/O. */
const struct vma *proc__vma(const struct proc *p, uint64_t addr);
/* Time since the process started (CLOCK_BOOTTIME, the clock of its start ticks). */
uint64_t proc__age_ns(const struct proc *p);
int proc__young(const struct proc *p);	/* younger than RUNTIME_YOUNG_NS */
/* Re-read /proc/<pid>/maps and tell the runtimes (runtime__maps_changed). 0 or -errno (-ESRCH:
 * the process is gone). proc__refresh_maps does it only when the last read is older than
 * min_interval_ns, and than 50 times what the last read cost: 0 when re-read, -EAGAIN when too
 * soon. */
int proc__read_maps(struct proc *p);
int proc__refresh_maps(struct proc *p, uint64_t min_interval_ns);
/* Free the mappings of a process that is idle; the next proc__refresh_maps reads them again at
 * once, whatever its interval (maps_released says they were freed). */
void proc__release_maps(struct proc *p);
/* Whether the process still runs (its /proc directory still reads); sets gone when not. */
int proc__alive(struct proc *p);

/* Parse /proc/<pid>/maps text into a sorted array (caller frees with maps__free). 0 or -errno;
 * malformed lines are skipped and counted in *bad when non-NULL. */
int maps__parse(const char *buf, size_t len, struct vma **out, size_t *n, size_t *bad);
void maps__free(struct vma *v, size_t n);
/* The bytes of a maps__parse block: the array and the paths it holds. */
uint64_t maps__bytes(const struct vma *v, size_t n);

#endif /* SPANPROF_PROCTAB_H */
