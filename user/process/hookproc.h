/* hookproc.h: per-process span-table state: find the hook's table, register it with the BPF
 * sampler, and turn sampled span records into pprof labels. */
#ifndef SPANPROF_HOOKPROC_H
#define SPANPROF_HOOKPROC_H

#include <stddef.h>
#include <stdint.h>

#include "spanctx.h"

#define HOOKPROC_MAX_LABELS (4 + SPANCTX_MAX_LABELS)

struct proc;
struct pf_label;
struct runtime_env;

/* The runtime itself is spanctx_runtime (runtime.h): it finds the process's span table and
 * registers it in the BPF map ctx_procs. */

/* Whether p's span table is registered with the sampler. */
int hookproc__registered(const struct proc *p);
/* A sample of p found no span table in the sampler's map although p has one registered: it was
 * evicted (the map is an LRU). Registers it again, at most every 100 ms: 1 when it did, 0 when
 * not (too soon, or already back: the sample was taken before an earlier put-back), or -errno. */
int hookproc__evicted(struct proc *p, uint64_t now_ns);	/* now_ns: CLOCK_MONOTONIC (a sample time) */

/*
 * Labels for one sampled record (head + attributes, len bytes). pyroscope: span_id is the local
 * root span id (Pyroscope's span-profile convention); otherwise span_id is the active span and
 * trace_id, local_root_span_id follow. User labels keep their names. Returns the number of labels
 * written to out or -errno. Their strings live until the next call, for any process: one decode
 * buffer serves them all (calls come from one thread).
 */
int hookproc__labels(struct proc *p, const uint8_t *rec, size_t len, int pyroscope,
		     struct pf_label *out, size_t max);

/* Removes pid's entry from the sampler's span-table map (env's ctx_map_fd) when it belongs to the
 * process that started at start_ticks: one the sampler made at the announcement that user space
 * does not keep (not a target, table refused, process gone before it was registered). */
void hookproc__unregister_early(const struct runtime_env *env, uint32_t pid, uint64_t start_ticks);

#endif /* SPANPROF_HOOKPROC_H */
