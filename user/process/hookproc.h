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

/* Look for the process's span table (at most once a second until found) and register it in
 * the BPF map ctx_procs (fd). 0 when registered, else the spanctx__find() code. */
int hookproc__poll(struct proc *p, int ctx_map_fd);
int hookproc__pending(const struct proc *p);	/* not registered yet */

/*
 * Labels for one sampled record (head + attributes, len bytes). pyroscope: span_id is the local
 * root span id (Pyroscope's span-profile convention); otherwise span_id is the active span and
 * trace_id, local_root_span_id follow. User labels keep their names. Returns the number of labels
 * written to out (their strings live until the next call for this process) or -errno.
 */
int hookproc__labels(struct proc *p, const uint8_t *rec, size_t len, int pyroscope,
		     struct pf_label *out, size_t max);

/* For the report: "; <state of the span table>", or "" when there is nothing to say. */
void hookproc__describe(const struct proc *p, char *buf, size_t len);
void hookproc__detach(struct proc *p);			/* frees the state */

#endif /* SPANPROF_HOOKPROC_H */
