/* engine.c: one sample from the ring buffer to a window; windows to profiles; process polling. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dotnetproc.h"
#include "engine.h"
#include "hookproc.h"
#include "perfmap.h"
#include "proctab.h"
#include "util.h"

#define YOUNG_MAPS_NS	(250 * 1000000ull)	/* a young process's mappings looked at this often */
#define MAPS_REFRESH_NS (50 * 1000000ull)	/* at most this often on a symbolizer miss */
#define MAX_LABELS	(8 + HOOKPROC_MAX_LABELS)
#define ALIVE_CHECK_NS	(1000 * 1000000ull)	/* how often processes are checked for exit */

struct engine {
	struct engine_opts o;
	struct runtime_env env;
	struct bpfsession *bpf;
	struct proctab *procs;
	struct symbolizer *sym;
	struct symsrv *symsrv;
	struct aggregator *agg;
	struct engine_counters c;
	uint64_t attached_ns;
	uint64_t next_alive_check_ns;
};

static int handle_sample(void *ctx, const void *data, size_t size);

struct engine *engine__open(const struct engine_opts *o, int *rc)
{
	struct engine *e = calloc(1, sizeof(*e));
	char err[512];
	struct symbolizer_opts so = { .show_tiers = o->show_tiers,
				      .maps_refresh_ns = MAPS_REFRESH_NS,
				      .max_frames = o->max_frames ? o->max_frames : ENGINE_MAX_FRAMES };

	if (!e) {
		fprintf(stderr, "spanprof: out of memory\n");
		*rc = 2;
		return NULL;
	}
	e->o = *o;
	e->env = (struct runtime_env){ .runtimes = runtime_registry,
				       .enable_perfmap = o->enable_perfmap,
				       .perfmap_type = o->perfmap_type ? o->perfmap_type : 1,
				       .min_age_ns = 1000000000ull, .ctx_map_fd = -1,
				       .perfmaps_ours = o->perfmaps_ours,
				       .verbose = o->verbose };
	/* Windows name their frames at each cut: after two of them without a sample, nothing of an
	 * idle process's symbol data is needed until it runs again. One window (record): kept. */
	e->env.idle_release_ns = 2 * o->interval_ns;
	perfmap__set_budget(((uint64_t)(o->max_symbol_mb ? o->max_symbol_mb : ENGINE_MAX_SYMBOL_MB)
			     << 20) / PERFMAP_BYTES_PER_RANGE);
	e->procs = proctab__new("/proc", &e->env);
	if (!e->procs) {
		fprintf(stderr, "spanprof: out of memory\n");
		*rc = 2;
		goto err_free;
	}
	e->symsrv = symsrv__new(&o->symsrv, err, sizeof(err));
	if (!e->symsrv && errno != ENODATA) {
		fprintf(stderr, "spanprof: %s\n", err[0] ? err : strerror(errno));
		*rc = 2;
		goto err_free;
	}
	so.symsrv = e->symsrv;
	e->sym = symbolizer__new(&so);
	if (!e->sym) {
		fprintf(stderr, "spanprof: cannot start the symbolizer: %s\n", strerror(errno));
		*rc = 2;
		goto err_free;
	}
	e->bpf = bpfsession__open(&o->bpf, handle_sample, e, rc);
	if (!e->bpf)
		goto err_free;
	e->env.ctx_map_fd = bpfsession__ctx_map_fd(e->bpf);
	/* A spanprof killed before it could leave processes as found: finish its job first. */
	e->c.leftovers_undone = dotnetproc__sweep();
	return e;

err_free:
	engine__free(e);
	return NULL;
}

/* ---- samples -------------------------------------------------------------------------------- */

static int handle_sample(void *ctx, const void *data, size_t size)
{
	struct engine *e = ctx;
	const struct sp_sample *smp = data;
	struct pf_label labels[MAX_LABELS];
	char pid[16], tid[16], comm[SP_COMM_LEN + 1], pcomm[SP_COMM_LEN + 1];
	uint32_t frames[2 * SP_MAX_FRAMES + 1];
	uint64_t user[SP_MAX_FRAMES + 1];
	struct leaf_regs regs = { smp->leaf_ip, smp->leaf_sp, smp->leaf_bp,
				  (const uint64_t *)smp->leaf_words,
				  SP_LEAF_WORDS };
	size_t n_user;
	const __u64 *addrs;
	struct proc *p;
	size_t nl = 0, nf = 0;
	int64_t id;

	e->c.received++;
	if (size < sizeof(*smp) || smp->n_user > SP_MAX_FRAMES || smp->n_kernel > SP_MAX_FRAMES ||
	    size < sizeof(*smp) + (smp->n_user + smp->n_kernel) * 8ul + smp->ctx_len) {
		e->c.malformed++;
		return 0;
	}
	memcpy(comm, smp->comm, SP_COMM_LEN);
	comm[SP_COMM_LEN] = 0;
	memcpy(pcomm, smp->pcomm, SP_COMM_LEN);
	pcomm[SP_COMM_LEN] = 0;

	p = proctab__get(e->procs, smp->tgid, smp->proc_start_ticks, pcomm);
	if (!p)
		goto nomem;
	if (!p->sampled || (e->env.idle_release_ns && p->last_sample_ns &&
			    smp->time_ns > p->last_sample_ns + e->env.idle_release_ns)) {
		p->sampled = 1;
		/* e.g. perf maps are turned on and read only in sampled processes, and read again
		 * in one that was idle */
		runtime__wake(p);
		runtime__poll(p, now_ns());
	}
	if (e->o.dotnet_only && !runtime__has(p, RT_DOTNET)) {
		e->c.not_target++;
		return 0;
	}
	p->last_sample_ns = smp->time_ns;
	if (smp->ctx_status == SP_CNT_CTX_UNHOOKED && hookproc__evicted(p, now_ns()) > 0)
		e->c.ctx_reregistered++;

	/* pprof order: leaf first; kernel frames are above the user ones. */
	addrs = (const __u64 *)smp->data;
	for (int i = 0; i < smp->n_kernel; i++) {
		id = symbolizer__kernel(e->sym, addrs[smp->n_user + i], i == 0);
		if (id < 0)
			goto nomem;
		frames[nf++] = id;
	}
	/* The leaf's caller that a frame-pointer walk skips, put back from the copied stack. */
	n_user = smp->n_user;
	memcpy(user, addrs, n_user * sizeof(*user));
	if (n_user && symbolizer__leaf(e->sym, p, (smp->flags & SP_F_LEAF_REGS) &&
				       (smp->flags & SP_F_LEAF_WORDS) ? &regs : NULL,
				       user, &n_user, SP_MAX_FRAMES + 1, smp->time_ns) < 0)
		goto nomem;
	for (size_t i = 0; i < n_user; i++) {
		id = symbolizer__user(e->sym, p, user[i], i == 0, smp->time_ns);
		if (id < 0)
			goto nomem;
		frames[nf++] = id;
	}

	snprintf(pid, sizeof(pid), "%u", smp->tgid);
	snprintf(tid, sizeof(tid), "%u", smp->tid);
	labels[nl++] = (struct pf_label){ "pid", pid };
	labels[nl++] = (struct pf_label){ "tid", tid };
	labels[nl++] = (struct pf_label){ "thread_name", comm };
	labels[nl++] = (struct pf_label){ "process_name", pcomm[0] ? pcomm : p->comm };
	if (smp->ctx_len) {
		int n = hookproc__labels(p, smp->data + (smp->n_user + smp->n_kernel) * 8ul,
					 smp->ctx_len, e->o.pyroscope_labels, labels + nl,
					 MAX_LABELS - nl);

		if (n < 0)
			e->c.ctx_undecodable++;
		else
			nl += n;
	}
	if (aggregate__add(e->agg, smp->time_ns, p->idx, frames, nf, labels, nl))
		goto nomem;
	return 0;
nomem:
	e->c.dropped_nomem++;
	return 0;
}

/* ---- processes ------------------------------------------------------------------------------ */

/*
 * A process that exited: its runtimes are read one last time, its pending frames named, then its
 * runtimes detached (files it was made to write removed, BPF map entries deleted) and its fds
 * closed. Its frames stay for the profile; the rest of its entry goes at the next prune.
 */
static void retire(struct engine *e, struct proc *p, uint64_t now)
{
	runtime__poll(p, now);
	runtime__wake(p);
	runtime__poll(p, now);
	if (symbolizer__finish_proc(e->sym, p))
		return;	/* out of memory: tried again at the next check */
	runtime__detach_all(p);
	if (p->dir_fd >= 0)
		close(p->dir_fd);
	if (p->root_fd >= 0)
		close(p->root_fd);
	p->dir_fd = p->root_fd = -1;
	p->retired = 1;
	e->c.procs_exited++;
}

static void poll_processes(struct engine *e)
{
	uint64_t now = now_ns();
	int check = now >= e->next_alive_check_ns;

	if (check)
		e->next_alive_check_ns = now + ALIVE_CHECK_NS;
	for (uint32_t i = 0; i < proctab__count(e->procs); i++) {
		struct proc *p = proctab__at(e->procs, i);

		if (!p || p->retired)
			continue;
		if (p->gone || (check && !proc__alive(p))) {
			retire(e, p, now);
			continue;
		}
		/* A process seen while starting may load a runtime a moment later. */
		if (p->sampled && !runtime__has(p, RT_DOTNET) && proc__young(p))
			proc__refresh_maps(p, YOUNG_MAPS_NS);
		runtime__poll(p, now);
	}
}

/*
 * Processes already running when sampling starts: find their runtimes and register their span
 * tables now, so their first samples are labelled and named like every later one.
 */
static void prescan(struct engine *e)
{
	const struct bpfsession_opts *o = &e->o.bpf;
	struct dirent *de;
	struct proc *p;
	DIR *d;

	if (o->npids) {
		for (int i = 0; i < o->npids; i++)
			if ((p = proctab__open(e->procs, o->pids[i])))
				p->sampled = 1;
	} else if ((d = opendir("/proc"))) {
		while ((de = readdir(d))) {
			char *end;
			unsigned long pid = strtoul(de->d_name, &end, 10);

			if (*end == 0 && pid > 0 && pid != (unsigned long)getpid())
				proctab__open(e->procs, pid);
		}
		closedir(d);
	}
	poll_processes(e);
}

int engine__attach(struct engine *e)
{
	int rc;

	prescan(e);
	/* The ring buffer is not read before the aggregator exists. */
	if ((rc = bpfsession__attach(e->bpf)))
		return rc;
	e->attached_ns = now_ns();
	/* Windows are timed from the start of sampling; the first sample can come any moment. */
	e->agg = aggregate__new(e->o.first_window_ns ? e->attached_ns + e->o.first_window_ns
						     : UINT64_MAX, e->o.interval_ns);
	if (!e->agg) {
		fprintf(stderr, "spanprof: out of memory\n");
		return 2;
	}
	aggregate__set_max_stacks(e->agg, e->o.max_stacks ? e->o.max_stacks : ENGINE_MAX_STACKS);
	return 0;
}

int engine__poll(struct engine *e, int timeout_ms)
{
	int err = bpfsession__poll(e->bpf, timeout_ms);

	poll_processes(e);
	return err;
}

uint64_t engine__window_end(const struct engine *e)
{
	return e->agg ? aggregate__window_end(e->agg) : UINT64_MAX;
}

struct agg_window *engine__cut(struct engine *e)
{
	struct agg_window *w;

	if (!e->agg) {
		errno = EINVAL;
		return NULL;
	}
	bpfsession__drain(e->bpf);
	poll_processes(e);	/* the last perf map lines, for the pending runtime frames */
	if (symbolizer__finish(e->sym, e->procs)) {
		errno = ENOMEM;
		return NULL;
	}
	w = aggregate__cut(e->agg);
	if (w) {
		struct agg_window_info wi;

		aggregate__info(w, &wi);
		e->c.stacks_truncated += wi.truncated;
		e->c.windows++;
	}
	return w;
}

struct build_ctx {
	struct engine *e;
	int (*target)(void *arg, struct proc *p);
	void *arg;
};

static int sink_frame(void *arg, uint32_t proc, uint32_t frame, struct agg_frame *out)
{
	struct build_ctx *b = arg;

	return symbolizer__frame(b->e->sym, proctab__at(b->e->procs, proc), frame, out);
}

static int sink_target(void *arg, uint32_t proc)
{
	struct build_ctx *b = arg;
	struct proc *p = proctab__at(b->e->procs, proc);

	return p ? b->target(b->arg, p) : -1;
}

int64_t engine__build(struct engine *e, const struct agg_window *w,
		      int (*target)(void *arg, struct proc *p), void *arg,
		      struct profile **profiles, size_t n_profiles)
{
	struct build_ctx b = { e, target, arg };
	struct agg_sink sink = { sink_frame, sink_target, &b };

	return aggregate__build(w, &sink, profiles, n_profiles, &e->c.refused);
}

void engine__prune(struct engine *e)
{
	/* Samples at or past this time may sit in the open windows, and name their frames later. */
	uint64_t open_from = e->agg ? aggregate__window_start(e->agg) : 0;

	for (uint32_t i = 0; i < proctab__count(e->procs); i++) {
		struct proc *p = proctab__at(e->procs, i);

		if (!p || !p->retired || p->last_sample_ns >= open_from)
			continue;
		runtime__detach_all(p);
		symbolizer__forget(e->sym, p);
		proctab__remove(e->procs, p);
		e->c.procs_pruned++;
	}
}

void engine__stop(struct engine *e)
{
	bpfsession__detach(e->bpf);
	bpfsession__drain(e->bpf);
	bpfsession__counters(e->bpf, e->c.bpf);
}

void engine__free(struct engine *e)
{
	if (!e)
		return;
	for (uint32_t i = 0; e->procs && i < proctab__count(e->procs); i++) {
		struct proc *p = proctab__at(e->procs, i);

		if (!p)
			continue;
		runtime__detach_all(p);
		if (e->sym)
			symbolizer__forget(e->sym, p);
	}
	bpfsession__free(e->bpf);
	symbolizer__free(e->sym);
	symsrv__free(e->symsrv);
	proctab__free(e->procs);
	aggregate__free(e->agg);
	free(e);
}

void engine__counters(struct engine *e, struct engine_counters *out)
{
	if (e->bpf)
		bpfsession__counters(e->bpf, e->c.bpf);
	*out = e->c;
}

struct proctab *engine__procs(const struct engine *e)
{
	return e->procs;
}

const struct symbolizer *engine__symbolizer(const struct engine *e)
{
	return e->sym;
}

const struct symsrv *engine__symsrv(const struct engine *e)
{
	return e->symsrv;
}

uint64_t engine__wait_symbols(struct engine *e, uint32_t timeout_ms)
{
	return symsrv__wait(e->symsrv, timeout_ms);
}

const struct bpfsession *engine__bpf(const struct engine *e)
{
	return e->bpf;
}

uint64_t engine__attached_ns(const struct engine *e)
{
	return e->attached_ns;
}
