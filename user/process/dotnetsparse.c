/* dotnetsparse.c: a .NET process's perf map and jitdump read again from the start (a truncation,
 * paced), read for its sampled addresses only (sparse), and its index let go while it is idle. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dotnetproc_int.h"
#include "log.h"
#include "proctab.h"
#include "util.h"
#include "vec.h"

/* A sparse process's new perfmap is read for what the old one was and what was wanted since. */
static int sparse_filter(struct dotnet_state *d, struct perfmap *pm)
{
	size_t n;
	const uint64_t *had = perfmap__filter(d->pm, &n);

	if (VEC_RESERVE(d->wanted, d->wanted_cap, d->nwanted + n))
		return -ENOMEM;
	if (n)
		memcpy(d->wanted + d->nwanted, had, n * sizeof(*had));
	if (perfmap__set_filter(pm, d->wanted, d->nwanted + n))
		return -ENOMEM;
	d->nwanted = 0;
	return 0;
}

/*
 * Both files from their beginning into a new perfmap: the runtime truncated one (perf maps were
 * disabled and enabled again, by another tool, and it writes every live method anew), or what
 * was read was freed while the process was idle. A sparse process's perfmap keeps the ranges at
 * its filter's addresses only.
 */

int64_t dn_restart(struct proc *p, struct dotnet_state *d)
{
	return dn_restart_keeping(p, d, NULL);
}

/* keep: the old perfmap is handed over there, whole, rather than freed. */
int64_t dn_restart_keeping(struct proc *p, struct dotnet_state *d, struct perfmap **keep)
{
	struct perfmap *pm = perfmap__new(NULL);
	uint64_t t0 = now_ns();
	int64_t n = 0;

	if (!pm)
		return -ENOMEM;
	if (d->sparse && sparse_filter(d, pm)) {
		perfmap__free(pm);
		return -ENOMEM;
	}
	if (!keep)
		perfmap__free_ranges(d->pm);
	if (d->files.jitdump_fd >= 0)	/* first, as in poll */
		n = perfmap__read_jitdump_fd(pm, d->files.jitdump_fd);
	if (n >= 0 && d->files.map_fd >= 0)
		n = perfmap__read_map_fd(pm, d->files.map_fd);
	/* The old names go only now: those read again are found, a reference taken and one put
	 * back, not a string freed and allocated again. */
	if (keep)
		*keep = d->pm;
	else
		perfmap__free(d->pm);
	d->pm = pm;
	d->read_last_ns = now_ns() - t0;
	if (d->read_last_ns > d->read_max_ns)
		d->read_max_ns = d->read_last_ns;
	return n;
}

/*
 * Sparse reading. A process idle long enough to have its data freed is one sampled now and then
 * (most of a node's services, most of the time). Its whole index would cost an entry for every
 * line of its perf map, for a few samples a window. So from then on (and in the agent from the
 * start: attach) it is read for the addresses it is sampled at: claims() notes them, and the poll
 * right before they are named (a window's end, the process leaving) reads both files from the
 * start, keeping only the ranges that cover them (perfmap__set_filter), which answer as the
 * whole index would. Appended lines are read as usual. A lookup of an address not read for (the
 * leaf of a sample, whose method's range is needed then) reads at once, once a window; later ones
 * wait for the window's end. A process read more than SPARSE_READS times, or for more than
 * SPARSE_ADDRS addresses, is busy (again): the whole index, until it idles again. A process
 * whose frames are all named, SPARSE_QUIET windows in a row without a new one, needs its whole
 * index no more than an idle one: sparse too.
 */
#define SPARSE_READS	6
#define SPARSE_ADDRS	4096
#define SPARSE_QUIET	2

void dn_sparse_end(struct dotnet_state *d)
{
	d->sparse = 0;
	free(d->wanted);
	d->wanted = NULL;
	d->nwanted = d->wanted_cap = 0;
}

/* Addresses the perfmap of a sparse process was read for. */
size_t dn_nfilter(const struct dotnet_state *d)
{
	size_t n;

	perfmap__filter(d->pm, &n);
	return n;
}

/* Sparse, d->pm is NULL (nothing read yet) or filtered. */
int dn_in_filter(const struct dotnet_state *d, uint64_t addr)
{
	return d->pm && perfmap__filter_has(d->pm, addr);
}

/* An address the next sparse read must cover. Out of memory: the whole index instead. */
void dn_sparse_want(struct dotnet_state *d, uint64_t addr)
{
	if (!d->sparse || dn_in_filter(d, addr))
		return;
	for (size_t i = d->nwanted; i-- > 0 && i + 8 >= d->nwanted;)
		if (d->wanted[i] == addr)	/* a frame asked about twice in a row */
			return;
	if (dn_nfilter(d) + d->nwanted >= SPARSE_ADDRS ||
	    VEC_RESERVE(d->wanted, d->wanted_cap, d->nwanted + 1)) {
		d->went_whole++;
		dn_sparse_end(d);
		perfmap__free(d->pm);	/* read whole at the next poll */
		d->pm = NULL;
		return;
	}
	d->wanted[d->nwanted++] = addr;
}

/* At a window's end: the files read again from the start for the filter and what was wanted
 * since. 0 when there was nothing to read; -errno. */
int64_t dn_sparse_read(struct proc *p, struct dotnet_state *d)
{
	if (!d->nwanted)
		return 0;
	if (++d->sparse_reads > SPARSE_READS) {
		d->went_whole++;
		dn_sparse_end(d);
		return dn_restart(p, d);
	}
	d->sparse_reads_total++;
	return dn_restart(p, d);
}

void dn_sparse_start(struct dotnet_state *d)
{
	perfmap__free(d->pm);
	d->pm = NULL;
	dn_sparse_end(d);
	d->sparse = 1;
	d->sparse_reads = 0;
	d->sparse_read_now = 0;
}

/* At a window's end: SPARSE_QUIET windows without a new frame to name let the whole index go. */
void dn_quiet_window(const struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
{
	if (!o->idle_release_ns || p->gone)
		return;	/* record keeps what it read; a process leaving needs nothing more */
	d->quiet = d->claimed ? 0 : d->quiet + 1;
	d->claimed = 0;
	if (!d->sparse && d->pm && d->quiet >= SPARSE_QUIET) {
		dn_sparse_start(d);
		d->went_sparse++;
		if (o->verbose)
			log_info("pid %u: nothing new to name for %u windows: its perf "
				"map index let go, read sparsely from now on", p->pid, d->quiet);
	}
}

/* Idle (no sample for env->idle_release_ns): free what was read; the files stay open, and the
 * process is read sparsely from its next sample on. */
int dn_idle(const struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
{
	if (!o->idle_release_ns || !p->last_sample_ns || p->gone ||
	    now_ns() < p->last_sample_ns + o->idle_release_ns)
		return 0;
	if (d->pm || d->nwanted) {
		d->released++;
		dn_sparse_start(d);
		if (o->verbose)
			log_info("pid %u: idle: its perf map index let go, read "
				"sparsely from its next sample on", p->pid);
	}
	return 1;
}

/*
 * A truncated file (-ESTALE) means a restart: both files read again from their start. A process
 * that rewrites a big perf map every half second would make that a full read every time: a
 * restart waits RESTART_PACE times what the last one cost (the data read so far is kept
 * meanwhile, and the truncation counted as deferred).
 */
#define RESTART_PACE 50
int64_t dn_restart_paced(struct proc *p, struct dotnet_state *d)
{
	int64_t n;

	if (now_ns() < d->next_restart_ns) {
		d->restarts_deferred++;
		return 0;
	}
	d->restarts++;
	n = dn_restart(p, d);
	d->next_restart_ns = now_ns() + RESTART_PACE * d->read_last_ns;
	return n;
}
