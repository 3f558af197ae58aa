/* bpfsession.h: the sampler's BPF side: checks, load, attach on every online CPU, counters, ring
 * buffer. Nothing here knows what a sample means. */
#ifndef SPANPROF_BPFSESSION_H
#define SPANPROF_BPFSESSION_H

#include <stddef.h>
#include <stdint.h>

#include "profiler.h"

struct bpfsession_opts {
	const uint32_t *pids;	/* only these processes; NULL / 0: every process */
	int npids;
	uint32_t freq;		/* Hz per CPU */
	uint32_t ringbuf_mb;	/* 0: bpfsession__auto_ringbuf_mb(freq) */
	uint32_t ctx_procs_max;	/* hooked processes the sampler can hold (0: default) */
	int bpf_stats;		/* measure run time (BPF_ENABLE_STATS) */
	int follow_forks;	/* children of the given pids are profiled too */
	int off_cpu;		/* also time the blocks of profiled threads (off-CPU) */
	uint64_t off_cpu_threshold_ns;	/* blocks this long or longer are sent with stacks;
					 * shorter ones only counted (0: the default, 1 ms) */
	uint32_t off_cpu_max_threads;	/* threads with a block record at once (0: the default) */
	uint32_t off_cpu_max_rate;	/* long blocks a cgroup sends a second (0: the default) */
	uint32_t offcpu_procs_max;	/* without pids: > 0 times only the blocks of the processes
					 * given to bpfsession__offcpu_track (at most this many) */
	const char *command;	/* "record" / "agent", for the messages */
};

/* Called for every ring buffer record; returns 0 (anything else stops the drain). */
typedef int (*bpfsession_sample_fn)(void *ctx, const void *data, size_t size);

struct bpfsession;

/* Checks (frequency, privileges, BTF, pids): 0, or the exit code (2) after printing one line
 * naming the cause and the fix to stderr. */
int bpfsession__check(const struct bpfsession_opts *o);
/*
 * Load (after bpfsession__check). NULL on failure, after printing one line naming the cause and
 * the fix to stderr; *rc is then the exit code.
 */
struct bpfsession *bpfsession__open(const struct bpfsession_opts *o, bpfsession_sample_fn fn,
				    void *ctx, int *rc);
/* Start sampling on every online CPU. 0, or the exit code after a one-line message. */
int bpfsession__attach(struct bpfsession *s);
/* Wait up to timeout_ms for the ring to fill, then drain it. 0 or -errno. */
int bpfsession__poll(struct bpfsession *s, int timeout_ms);
int bpfsession__drain(struct bpfsession *s);	/* consume what is there now; 0 or -errno */
/* Turn the CPUs' sampling events off (paused 1) or on again, and detach the off-CPU programs
 * while paused (attached again on resume). -errno. */
int bpfsession__pause(struct bpfsession *s, int paused);
void bpfsession__detach(struct bpfsession *s);	/* stop sampling (the ring stays readable) */
/* A ring buffer size for freq on this machine's CPUs (bytes, a power of two). */
uint64_t bpfsession__auto_ringbuf_bytes(uint32_t freq);
int bpfsession__ncpus(const struct bpfsession *s);	/* CPUs attached */
int bpfsession__ctx_map_fd(const struct bpfsession *s);
/* The generations of the maps the off-CPU program caches per thread (bpf/profiler.h SP_GEN_*):
 * the map's fd, and one of them, mapped (one more after each change to its map). */
int bpfsession__gens_fd(const struct bpfsession *s);
uint64_t *bpfsession__gen(struct bpfsession *s, int which);
uint32_t bpfsession__ctx_procs_max(const struct bpfsession *s);

/* Sum of every per-CPU counter. 0 or -errno. */
int bpfsession__counters(const struct bpfsession *s, uint64_t out[SP_CNT__MAX]);
/* out[k] = the sum over CPUs of entry k < n of a per-CPU array of u64 counters. 0 or -errno. */
struct bpf_map;
int bpf_counters__sum(const struct bpf_map *map, uint32_t n, uint64_t *out);
/* The ring buffer's epoll fd: polls readable when the sampler woke us (the ring fills). */
int bpfsession__epoll_fd(const struct bpfsession *s);
/* Whether the sampler profiles pid: always without -p, else when the pid filter holds it. */
int bpfsession__is_target(const struct bpfsession *s, uint32_t pid);
/* Time the blocks of process pid off-CPU too (on 1) or no longer (0), with offcpu_procs_max.
 * 0, -ENOSPC (offcpu_procs_max reached) or -errno. */
int bpfsession__offcpu_track(struct bpfsession *s, uint32_t pid, int on);
/* The sampler's run time so far: 0, or -ENODATA when not measured. */
int bpfsession__run_time(const struct bpfsession *s, uint64_t *run_time_ns, uint64_t *run_cnt);
/* The same for the off-CPU programs: their run time together (sched_switch, and rseq_update
 * where it is used), and sched_switch's runs. -ENODATA: not attached, or no stats. */
int bpfsession__offcpu_run_time(const struct bpfsession *s, uint64_t *run_time_ns, uint64_t *run_cnt);
/* Whether long blocks are sent at their thread's return to user space (1), or from their place's
 * stacks taken at switch-out (0), and *why not then; *skipped: returns the kernel did not run the
 * program for (it was still running on that CPU: a preemptible kernel). */
int bpfsession__offcpu_at_return(const struct bpfsession *s, uint64_t *skipped, const char **why);
void bpfsession__free(struct bpfsession *s);	/* NULL-safe */

/* The counters' short names and meanings, from the one table in profiler.h. */
extern const char *const sp_counter_names[SP_CNT__MAX];
extern const char *const sp_counter_help[SP_CNT__MAX];

#endif /* SPANPROF_BPFSESSION_H */
