/* procevents.h: process events from BPF (bpf/procevents.bpf.c): a span table mapped, an exec.
 * They make the engine look at a process at once, not at its next poll. */
#ifndef SPANPROF_PROCEVENTS_H
#define SPANPROF_PROCEVENTS_H

#include <stdint.h>

#include "profiler.h"

/* Called for every event, in ring order. */
typedef void (*procevents_fn)(void *ctx, const struct sp_proc_event *ev);

struct procevents;

/* Where span-table events come from, most preferred first (bpf/procevents.bpf.c). */
enum procevents_ctx_src {
	PE_CTX_PRCTL,	/* the hook's prctl(SP_PRCTL_ANNOUNCE): tracepoint task_prctl_unknown (6.13+) */
	PE_CTX_FEXIT,	/* fexit on shmem_mmap (ftrace trampolines) */
	PE_CTX_NONE,	/* neither loads: span tables are found by polling */
};

/*
 * Load, sharing the sampler's ctx_procs map (ctx_map_fd: an exec removes the entry of the old
 * program in BPF) and its generations (gens_fd, profiler.h SP_GEN_*, moved by each such change). NULL and errno on failure: the caller goes on without events (polling finds
 * span tables then) and says so. The first span-table source that loads is kept; with none the
 * rest loads and procevents__ctx_err says why.
 */
struct procevents *procevents__open(int ctx_map_fd, int gens_fd, procevents_fn fn, void *ctx);
int procevents__attach(struct procevents *pe);	/* 0 or -errno */
/* 0 when span-table mappings are events; else -errno, why not (span tables are then polled). */
int procevents__ctx_err(const struct procevents *pe);
enum procevents_ctx_src procevents__ctx_src(const struct procevents *pe);
const char *procevents__ctx_src_name(enum procevents_ctx_src src);	/* for reports */
/* A file descriptor that polls readable when events wait (the ring's epoll fd). */
int procevents__fd(const struct procevents *pe);
/* Hand every waiting event to fn. 0 or -errno. */
int procevents__consume(struct procevents *pe);
/* Sum of every per-CPU counter. 0 or -errno. */
int procevents__counters(const struct procevents *pe, uint64_t out[SP_EV_CNT__MAX]);
void procevents__free(struct procevents *pe);	/* NULL-safe */

extern const char *const sp_ev_counter_names[SP_EV_CNT__MAX];
extern const char *const sp_ev_counter_help[SP_EV_CNT__MAX];

#endif /* SPANPROF_PROCEVENTS_H */
