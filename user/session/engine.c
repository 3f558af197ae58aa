/* engine.c: one sample from the ring buffer to a window; windows to profiles; process polling. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dotnetproc.h"
#include "engine.h"
#include "hookproc.h"
#include "log.h"
#include "perfmap.h"
#include "pmpolicy.h"
#include "procevents.h"
#include "procfs.h"
#include "proctab.h"
#include "symbudget.h"
#include "util.h"

#define YOUNG_MAPS_NS	(250 * 1000000ull)	/* a young process's mappings looked at this often */
#define MAPS_REFRESH_NS (50 * 1000000ull)	/* at most this often on a symbolizer miss */
#define MAX_LABELS	(8 + HOOKPROC_MAX_LABELS)
#define ALIVE_CHECK_NS	(1000 * 1000000ull)	/* how often processes are checked for exit */
/* A span table just mapped: until it is registered, tried again this often (its header is
 * written right after the mmap), for at most URGENT_FOR_NS; at most URGENT_MAX processes. */
#define URGENT_RETRY_MS 2
#define URGENT_FOR_NS	(500 * 1000000ull)
#define URGENT_MAX	64
#define URGENT_AGAIN_NS (10 * 1000000000ull)
/* Maps re-read at once on a span-table event: at most this many per process and second. */
#define EV_READS_PER_SEC 4

struct urgent {
	uint32_t idx, pid;
	uint64_t start_ticks, until_ns;
};

struct engine {
	struct engine_opts o;
	struct runtime_env env;
	struct bpfsession *bpf;
	struct procevents *pe;	/* NULL: unavailable (span tables found by polling only) */
	int pe_err;		/* why (errno) */
	uint64_t ev_drained_ns;	/* every event committed before this was handled */
	struct urgent urgent[URGENT_MAX];
	int nurgent;
	int stopping;		/* engine__stop ran: the last polls are not cut short */
	struct proctab *procs;
	struct symbolizer *sym;
	struct symsrv *symsrv;
	struct aggregator *agg;
	struct engine_counters c;
	uint64_t attached_ns;
	uint64_t next_alive_check_ns;
};

static int handle_sample(void *ctx, const void *data, size_t size);
static void handle_event(void *ctx, const struct sp_proc_event *ev);

struct engine *engine__open(const struct engine_opts *o, int *rc)
{
	struct engine *e = calloc(1, sizeof(*e));
	char err[512];
	struct symbolizer_opts so = { .show_tiers = o->show_tiers,
				      .maps_refresh_ns = MAPS_REFRESH_NS,
				      .max_frames = o->max_frames ? o->max_frames : ENGINE_MAX_FRAMES };

	if (!e) {
		log_error("out of memory");
		*rc = 2;
		return NULL;
	}
	e->o = *o;
	/* Host-wide with dotnet_only: off-CPU time only for the .NET processes, in BPF, as they are
	 * found (poll_processes), so that the blocks of every other thread cost one lookup. */
	if (o->dotnet_only && o->bpf.off_cpu && !o->bpf.npids && !o->bpf.offcpu_procs_max)
		e->o.bpf.offcpu_procs_max = ENGINE_OFFCPU_PROCS;
	e->env = (struct runtime_env){ .runtimes = runtime_registry,
				       .enable_perfmap = o->enable_perfmap,
				       .jitdump_beside_perfmap = o->jitdump_beside_perfmap,
				       .perfmap_type = o->perfmap_type ? o->perfmap_type :
								       PMPOLICY_PERFMAP_TYPE,
				       .min_age_ns = 1000000000ull, .ctx_map_fd = -1,
				       .perfmaps_ours = o->perfmaps_ours,
				       .allow_remote_files = o->allow_remote_files,
				       .verbose = o->verbose };
	/* Windows name their frames at each cut: after two of them without a sample, nothing of an
	 * idle process's symbol data is needed until it runs again. One window (record): kept. */
	e->env.idle_release_ns = 2 * o->interval_ns;
	symbudget__set((uint64_t)(o->max_symbol_mb ? o->max_symbol_mb : ENGINE_MAX_SYMBOL_MB) << 20);
	e->env.remote_refused = &e->c.remote_refused;
	e->env.perfmap_max_bytes = (uint64_t)o->perfmap_max_mb << 20;
	e->env.perfmap_idle_ns = (uint64_t)o->perfmap_idle_s * 1000000000ull;
	e->env.perfmap_counts = &e->c.perfmap;
	e->procs = proctab__new("/proc", &e->env);
	if (!e->procs) {
		log_error("out of memory");
		*rc = 2;
		goto err_free;
	}
	e->symsrv = symsrv__new(&o->symsrv, err, sizeof(err));
	if (!e->symsrv && errno != ENODATA) {
		log_error("%s", err[0] ? err : strerror(errno));
		*rc = 2;
		goto err_free;
	}
	so.symsrv = e->symsrv;
	e->sym = symbolizer__new(&so);
	if (!e->sym) {
		log_error("cannot start the symbolizer: %s", strerror(errno));
		*rc = 2;
		goto err_free;
	}
	e->bpf = bpfsession__open(&e->o.bpf, handle_sample, e, rc);
	if (!e->bpf)
		goto err_free;
	e->env.ctx_map_fd = bpfsession__ctx_map_fd(e->bpf);
	e->env.ctx_gen = bpfsession__gen(e->bpf, SP_GEN_CTX_PROCS);
	e->pe = procevents__open(e->env.ctx_map_fd, bpfsession__gens_fd(e->bpf), handle_event, e);
	if (!e->pe)
		e->pe_err = errno;
	/* A spanprof killed before it could leave processes as found: finish its job first. */
	e->c.leftovers_undone = dotnetproc__sweep();
	return e;

err_free:
	engine__free(e);
	return NULL;
}

/* ---- samples -------------------------------------------------------------------------------- */

static void drain_events(struct engine *e)
{
	e->ev_drained_ns = now_ns();
	procevents__consume(e->pe);
}

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
	size_t n_user, scan_at;
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

	/* An exec before this sample must be known before its frames are named. */
	if (e->pe && smp->time_ns >= e->ev_drained_ns)
		drain_events(e);
	p = proctab__get(e->procs, smp->tgid, smp->proc_start_ticks, pcomm);
	if (!p)
		goto nomem;
	if (smp->time_ns < p->exec_ns) {
		/* Taken before an exec already handled: the program before it ran this. */
		p = proctab__at_time(e->procs, p, smp->time_ns);
		e->c.ev_before_exec++;
	}
	/* The summary names a process as its latest sample does (it may have renamed itself). */
	if (pcomm[0] && strcmp(pcomm, p->comm))
		snprintf(p->comm, sizeof(p->comm), "%s", pcomm);
	if (!p->sampled || (e->env.idle_release_ns && p->last_sample_ns &&
			    smp->time_ns > p->last_sample_ns + e->env.idle_release_ns)) {
		p->sampled = 1;
		/* its mappings, freed while it was idle, before its runtimes look at them */
		if (p->maps_released)
			proc__refresh_maps(p, 0);
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
	if (smp->ctx_status == SP_CNT_CTX_UNHOOKED && hookproc__evicted(p, smp->time_ns) > 0)
		e->c.ctx_reregistered++;

	/* pprof order: leaf first; kernel frames are above the user ones. */
	addrs = (const __u64 *)smp->data;
	for (int i = 0; i < smp->n_kernel; i++) {
		id = symbolizer__kernel(e->sym, addrs[smp->n_user + i], i == 0);
		if (id < 0)
			goto nomem;
		/* an off-CPU stack, taken in the sched_switch tracepoint, starts in its BPF program */
		if (!nf && (smp->flags & SP_F_OFFCPU) && symbolizer__kernel_tracing(e->sym, id))
			continue;
		frames[nf++] = id;
	}
	/* The leaf's caller that a frame-pointer walk skips, put back from the copied stack. */
	n_user = smp->n_user;
	memcpy(user, addrs, n_user * sizeof(*user));
	if (n_user && symbolizer__leaf(e->sym, p, (smp->flags & SP_F_LEAF_REGS) &&
				       (smp->flags & SP_F_LEAF_WORDS) ? &regs : NULL,
				       user, &n_user, SP_MAX_FRAMES + 1, smp->time_ns) < 0)
		goto nomem;
	/* the leaf's caller, if put back, shifts the scanned frames by one */
	scan_at = smp->flags & SP_F_USTACK_SCAN ? smp->user_scan_at + (n_user - smp->n_user) : SIZE_MAX;
	for (size_t i = 0; i < n_user; i++) {
		id = symbolizer__user(e->sym, p, user[i], i == 0, smp->time_ns);
		if (id < 0)
			goto nomem;
		if (i && symbolizer__ends_chain(p, id)) {
			if (i >= scan_at) {
				/* found by a scan for a frame pointer: data before the chain */
				e->c.scan_dropped++;
				continue;
			}
			frames[nf++] = id;
			e->c.chains_cut++;	/* the rest is no callers: kept, marked, counted */
			break;
		}
		frames[nf++] = id;
	}

	u32_decimal(pid, smp->tgid);
	u32_decimal(tid, smp->tid);
	labels[nl++] = (struct pf_label){ .key = "pid", .value = pid };
	labels[nl++] = (struct pf_label){ .key = "tid", .value = tid };
	labels[nl++] = (struct pf_label){ .key = "thread_name", .value = comm };
	labels[nl++] = (struct pf_label){ .key = "process_name", .value = pcomm[0] ? pcomm : p->comm };
	if (smp->ctx_len) {
		int n = hookproc__labels(p, smp->data + (smp->n_user + smp->n_kernel) * 8ul,
					 smp->ctx_len, e->o.pyroscope_labels, labels + nl,
					 MAX_LABELS - nl);

		if (n < 0)
			e->c.ctx_undecodable++;
		else
			nl += n;
	}
	if (smp->flags & SP_F_OFFCPU ?
		    aggregate__add_off_cpu(e->agg, smp->time_ns, p->idx, frames, nf, labels, nl,
					   smp->off_ns) :
		    aggregate__add(e->agg, smp->time_ns, p->idx, frames, nf, labels, nl))
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
	e->env.naming_next = 1;
	runtime__poll(p, now);
	runtime__wake(p);
	runtime__poll(p, now);
	e->env.naming_next = 0;
	if (symbolizer__finish_proc(e->sym, p))
		return;	/* out of memory: tried again at the next check */
	runtime__detach_all(p);
	if (p->offcpu_tracked) {
		/* An exec'd program's pid is the newer entry's now: its exit takes the pid out. */
		struct proc *now = p->execed ? proctab__find(e->procs, p->pid, p->start_ticks) : NULL;

		if (now && now != p)
			now->offcpu_tracked = 1;
		else
			bpfsession__offcpu_track(e->bpf, p->pid, 0);
		p->offcpu_tracked = 0;
	}
	if (p->dir_fd >= 0)
		close(p->dir_fd);
	if (p->root_fd >= 0)
		close(p->root_fd);
	p->dir_fd = p->root_fd = -1;
	p->retired = 1;
	if (!p->execed)
		e->c.procs_exited++;	/* an exec'd program's entry goes the same way; not an exit */
}

/* ---- process events ------------------------------------------------------------------------- */

/* p's span table was just mapped: try to register it every URGENT_RETRY_MS for a while. */
static void urgent_add(struct engine *e, struct proc *p, uint64_t now)
{
	for (int i = 0; i < e->nurgent; i++)
		if (e->urgent[i].idx == p->idx && e->urgent[i].pid == p->pid)
			return;
	/* Retries keep the loop at URGENT_RETRY_MS: a process that maps tables in a loop gets them
	 * once per URGENT_AGAIN_NS. */
	if (p->ev_urgent_ns && now - p->ev_urgent_ns < URGENT_AGAIN_NS) {
		e->c.ev_urgent_full++;
		return;
	}
	p->ev_urgent_ns = now;
	if (e->nurgent == URGENT_MAX) {
		e->c.ev_urgent_full++;	/* found by the ordinary poll, later */
		return;
	}
	e->urgent[e->nurgent++] = (struct urgent){ p->idx, p->pid, p->start_ticks, now + URGENT_FOR_NS };
}

static void poll_urgent(struct engine *e, uint64_t now)
{
	for (int i = 0; i < e->nurgent;) {
		struct urgent *u = &e->urgent[i];
		struct proc *p = proctab__at(e->procs, u->idx);

		int due = p && p->pid == u->pid && p->start_ticks == u->start_ticks && !p->gone &&
			  !hookproc__registered(p) && now < u->until_ns;

		if (due) {
			runtime__wake(p);
			runtime__poll(p, now);
		}
		if (!due || hookproc__registered(p))
			*u = e->urgent[--e->nurgent];
		else
			i++;
	}
}

/* A bounded number of at-once maps reads per process: the rest waits for the ordinary poll. */
static int ev_read_allowed(struct proc *p, uint64_t now)
{
	if (now - p->ev_window_ns >= 1000000000ull) {
		p->ev_window_ns = now;
		p->ev_reads = 0;
	}
	return p->ev_reads++ < EV_READS_PER_SEC;
}

static void ctx_mapped(struct engine *e, const struct sp_proc_event *ev, uint64_t now)
{
	char comm[SP_COMM_LEN + 1];
	struct proc *p;

	if (!bpfsession__is_target(e->bpf, ev->tgid)) {
		e->c.ev_not_target++;
		hookproc__unregister_early(&e->env, ev->tgid, ev->proc_start_ticks);
		return;
	}
	memcpy(comm, ev->comm, SP_COMM_LEN);
	comm[SP_COMM_LEN] = 0;
	p = proctab__find(e->procs, ev->tgid, ev->proc_start_ticks);
	if (p && p->retired)
		return;
	if (p && !ev_read_allowed(p, now)) {
		e->c.ev_throttled++;
		return;
	}
	if (!p)	/* new: its mappings are read now */
		p = proctab__get(e->procs, ev->tgid, ev->proc_start_ticks, comm);
	else if (proc__read_maps(p))
		return;
	if (!p || p->gone)
		return;
	e->c.ev_ctx++;
	runtime__wake(p);
	runtime__poll(p, now);
	if (hookproc__registered(p))
		e->c.ev_ctx_at_once++;
	else
		urgent_add(e, p, now);
}

static void exec_seen(struct engine *e, const struct sp_proc_event *ev, uint64_t now)
{
	struct proc *p = proctab__find(e->procs, ev->tgid, ev->proc_start_ticks), *np;
	char comm[SP_COMM_LEN + 1];

	/* Not seen before: its first sample reads the new program's mappings anyway. */
	if (!p)
		return;
	memcpy(comm, ev->comm, SP_COMM_LEN);
	comm[SP_COMM_LEN] = 0;
	np = proctab__exec(e->procs, p, comm, ev->time_ns);
	if (!np) {
		e->c.dropped_nomem++;
		return;
	}
	e->c.ev_exec++;
	np->sampled = p->sampled;
	/* The old program's runtimes go now (its BPF span-table entry went at the exec itself). */
	retire(e, p, now);
}

static void handle_event(void *ctx, const struct sp_proc_event *ev)
{
	struct engine *e = ctx;
	uint64_t now = now_ns();

	switch (ev->type) {
	case SP_EV_CTX_MAPPED:
		ctx_mapped(e, ev, now);
		break;
	case SP_EV_EXEC:
		exec_seen(e, ev, now);
		break;
	default:
		e->c.malformed++;
		break;
	}
}

/* every_sampled: make every sampled process's runtimes due first (runtime__wake). */
static void poll_processes(struct engine *e, int every_sampled)
{
	uint64_t now = now_ns();
	int check = now >= e->next_alive_check_ns;

	if (check)
		e->next_alive_check_ns = now + ALIVE_CHECK_NS;
	for (uint32_t i = 0; i < proctab__count(e->procs); i++) {
		struct proc *p = proctab__at(e->procs, i);

		if (!p || p->retired)
			continue;
		/* Past the deadline, the loop's turn ends: the rest wait (or the end's last poll). */
		if (e->env.deadline_ns && !e->stopping && now_ns() >= e->env.deadline_ns) {
			e->c.polls_past_deadline++;
			break;
		}
		if (p->gone || (check && !proc__alive(p))) {
			retire(e, p, now);
			continue;
		}
		if (every_sampled && p->sampled)
			runtime__wake(p);
		/* A process seen while starting may load a runtime a moment later. */
		if (p->sampled && !runtime__has(p, RT_DOTNET) && proc__young(p))
			proc__refresh_maps(p, YOUNG_MAPS_NS);
		runtime__poll(p, now);
		if (e->o.bpf.offcpu_procs_max && !p->offcpu_tracked && runtime__has(p, RT_DOTNET)) {
			if (bpfsession__offcpu_track(e->bpf, p->pid, 1))
				e->c.offcpu_untracked++;
			p->offcpu_tracked = 1;	/* tried once: counted when it failed */
		}
	}
}

/* A process found by the scan at start, and how busy it has been. */
struct scanned {
	uint32_t pid;
	double busy;	/* CPU ticks per tick of its life */
};

static int by_busy(const void *a, const void *b)
{
	const struct scanned *x = a, *y = b;

	if (x->busy != y->busy)
		return x->busy < y->busy ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The share of its life pid has spent on a CPU (0 when its stat is unreadable). */
static double busy_of(int proc_fd, uint32_t pid, uint64_t now_ticks)
{
	char name[16], stat[1024];
	uint64_t start, cpu;
	long n;

	snprintf(name, sizeof(name), "%u/stat", pid);
	n = read_small_file(proc_fd, name, stat, sizeof(stat));
	if (n <= 0 || procfs__parse_starttime(stat, n, &start) || procfs__parse_cputime(stat, n, &cpu))
		return 0;
	return (double)cpu / (now_ticks > start ? now_ticks - start : 1);
}

/*
 * Processes already running when sampling starts: find their runtimes and register their span
 * tables now, so their first samples are labelled and named like every later one. Host-wide they
 * are taken least busy first: with more span tables than the sampler's table holds
 * (--max-span-tables), those registered last stay, so the busiest keep theirs rather than losing
 * them to idle processes until their first samples reach user space.
 */
static void prescan(struct engine *e)
{
	const struct bpfsession_opts *o = &e->o.bpf;
	struct scanned *all = NULL, *grown;
	size_t n = 0, cap = 0;
	struct dirent *de;
	struct proc *p;
	DIR *d;

	if (o->npids) {
		for (int i = 0; i < o->npids; i++)
			if ((p = proctab__open(e->procs, o->pids[i])))
				p->sampled = 1;
	} else if ((d = opendir("/proc"))) {
		uint64_t now_ticks = boottime_ns() / SP_NSEC_PER_TICK;

		while ((de = readdir(d))) {
			char *end;
			unsigned long pid = strtoul(de->d_name, &end, 10);

			if (*end || pid == 0 || pid > UINT32_MAX || pid == (unsigned long)getpid())
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 1024;
				if (!(grown = realloc(all, cap * sizeof(*all)))) {
					/* out of memory: taken now, as the least busy */
					proctab__open(e->procs, pid);
					continue;
				}
				all = grown;
			}
			all[n].pid = pid;
			all[n++].busy = busy_of(dirfd(d), pid, now_ticks);
		}
		closedir(d);
		if (n)
			qsort(all, n, sizeof(*all), by_busy);
		for (size_t i = 0; i < n; i++)
			proctab__open(e->procs, all[i].pid);
		free(all);
	}
	/* A silent diagnostics socket would hold the start up: talks begin with sampling. */
	e->env.talks_held = 1;
	poll_processes(e, 0);
	e->env.talks_held = 0;
}

int engine__attach(struct engine *e)
{
	int rc;

	/* Events first: a process that starts during the scan is not missed. */
	if (e->pe && (rc = procevents__attach(e->pe))) {
		e->pe_err = -rc;
		procevents__free(e->pe);
		e->pe = NULL;
	}
	if (e->o.verbose && !e->pe)
		log_warn("process events unavailable (%s): span tables found by "
			"polling, execs not seen", strerror(e->pe_err ? e->pe_err : EINVAL));
	else if (e->o.verbose && procevents__ctx_src(e->pe) == PE_CTX_NONE)
		log_warn("span-table events unavailable (neither the prctl tracepoint "
			"nor fexit loads: %s): span tables found by polling",
			strerror(-procevents__ctx_err(e->pe)));
	else if (e->o.verbose)
		log_info("span-table events from %s",
			procevents__ctx_src_name(procevents__ctx_src(e->pe)));
	prescan(e);
	/* The ring buffer is not read before the aggregator exists. */
	if ((rc = bpfsession__attach(e->bpf)))
		return rc;
	e->attached_ns = now_ns();
	/* Windows are timed from the start of sampling; the first sample can come any moment. */
	e->agg = aggregate__new(e->o.first_window_ns ? e->attached_ns + e->o.first_window_ns
						     : UINT64_MAX, e->o.interval_ns);
	if (!e->agg) {
		log_error("out of memory");
		return 2;
	}
	aggregate__set_max_stacks(e->agg, e->o.max_stacks ? e->o.max_stacks : ENGINE_MAX_STACKS);
	return 0;
}

/* SIGUSR1 pauses sampling, SIGUSR2 resumes it (engine__catch_pause_signals). One engine per
 * process, so the request is process-wide. */
static volatile sig_atomic_t want_paused, is_paused;
static uint64_t paused_since, paused_total;	/* CLOCK_MONOTONIC ns */

static void on_pause_signal(int sig)
{
	want_paused = sig == SIGUSR1;
}

void engine__catch_pause_signals(void)
{
	struct sigaction sa = { .sa_handler = on_pause_signal };

	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
}

/* A pause or resume asked for by signal, said on stderr with its CLOCK_MONOTONIC time so that a
 * benchmark can line the switch up with its own figures. One that fails is said and dropped:
 * sampling goes on as it was. */
static void apply_pause(struct engine *e)
{
	uint64_t now;
	int err;

	if (want_paused == is_paused)
		return;
	if ((err = bpfsession__pause(e->bpf, want_paused))) {
		log_error("cannot %s sampling: %s", want_paused ? "pause" : "resume",
			strerror(-err));
		want_paused = is_paused;
		return;
	}
	is_paused = want_paused;
	now = now_ns();
	if (is_paused)
		paused_since = now;
	else
		paused_total += now - paused_since;
	log_info("sampling %s at %.6f s (CLOCK_MONOTONIC)",
		is_paused ? "paused" : "resumed", now / 1e9);
}

int engine__poll(struct engine *e, int timeout_ms)
{
	struct pollfd fds[2] = { { .fd = bpfsession__epoll_fd(e->bpf), .events = POLLIN },
				 { .fd = e->pe ? procevents__fd(e->pe) : -1, .events = POLLIN } };
	int err;

	apply_pause(e);
	if (!e->pe)
		err = bpfsession__poll(e->bpf, timeout_ms);
	else {
		if (e->nurgent && timeout_ms > URGENT_RETRY_MS)
			timeout_ms = URGENT_RETRY_MS;
		/* Either ring may wake us; the events are handled before the samples. */
		if (poll(fds, 2, timeout_ms) < 0 && errno != EINTR)
			return -errno;
		drain_events(e);
		err = bpfsession__drain(e->bpf);
		poll_urgent(e, now_ns());
	}
	poll_processes(e, 0);
	return err;
}

uint64_t engine__window_end(const struct engine *e)
{
	return e->agg ? aggregate__window_end(e->agg) : UINT64_MAX;
}

uint64_t engine__open_samples(const struct engine *e)
{
	return e->agg ? aggregate__open_samples(e->agg) : 0;
}

uint64_t engine__open_bytes(const struct engine *e)
{
	return e->agg ? aggregate__open_bytes(e->agg) : 0;
}

/*
 * A process not sampled for idle_release_ns (or never, its mappings read that long ago: the
 * scan at start reads every process's) keeps only its table entry: its frames go (their ids
 * start again at its next sample; no open window holds one, since its last sample is older than
 * the window being cut) and its mappings go (read again at its next sample).
 */
static void release_idle_procs(struct engine *e, uint64_t now)
{
	uint64_t open_from = aggregate__window_start(e->agg);

	for (uint32_t i = 0; i < proctab__count(e->procs); i++) {
		struct proc *p = proctab__at(e->procs, i);
		uint64_t last;

		if (!p || p->gone || (!p->syms && !p->vmas))
			continue;
		last = p->last_sample_ns ? p->last_sample_ns : p->maps_read_ns;
		if (!last || last >= open_from || last + e->env.idle_release_ns > now)
			continue;
		/* Its runtimes' last look, with the mappings still there (a perf map index goes
		 * now too): they are not polled again while the mappings are freed. */
		runtime__wake(p);
		runtime__poll(p, now_ns());
		symbolizer__forget(e->sym, p);
		proc__release_maps(p);
		e->c.procs_idle_released++;
	}
}

struct agg_window *engine__cut(struct engine *e)
{
	struct agg_window *w;

	if (!e->agg) {
		errno = EINVAL;
		return NULL;
	}
	bpfsession__drain(e->bpf);
	/* The last perf map lines, for the pending runtime frames: read now, whatever the backoff
	 * of files that had not grown said. */
	e->env.naming_next = 1;
	poll_processes(e, 1);
	e->env.naming_next = 0;
	if (symbolizer__finish(e->sym, e->procs)) {
		errno = ENOMEM;
		return NULL;
	}
	/* Windows cut often (agent): symbol tables, runtime data and idle processes' frames and
	 * mappings nothing looked up for a while go. With idle_release_ns 0 (record) everything is
	 * kept: the one place that decides. */
	if (e->env.idle_release_ns) {
		uint64_t now = now_ns();

		symbolizer__release_idle(e->sym, now, e->env.idle_release_ns);
		runtime__release_idle(&e->env, now);
		release_idle_procs(e, now);
	}
	w = aggregate__cut(e->agg);
	if (w) {
		struct agg_window_info wi;

		aggregate__info(w, &wi);
		e->c.stacks_truncated += wi.truncated;
		e->c.span_ids_dropped += wi.ids_dropped;
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

	return aggregate__build(w, &sink, profiles, n_profiles, &e->c.refused, &e->c.left_out);
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

void engine__set_deadline(struct engine *e, uint64_t deadline_ns)
{
	e->env.deadline_ns = deadline_ns;
}

void engine__stop(struct engine *e)
{
	uint64_t now = now_ns();

	/* From now on no talk to a process starts (the last reads of files still happen). */
	if (!e->env.deadline_ns || e->env.deadline_ns > now)
		e->env.deadline_ns = now;
	e->stopping = 1;
	bpfsession__detach(e->bpf);
	if (e->pe)
		drain_events(e);
	bpfsession__drain(e->bpf);
	bpfsession__counters(e->bpf, e->c.bpf);
	if (e->pe)
		procevents__counters(e->pe, e->c.ev);
}

void engine__free(struct engine *e)
{
	if (!e)
		return;
	for (uint32_t i = 0; e->procs && i < proctab__count(e->procs); i++) {
		struct proc *p = proctab__at(e->procs, i);

		if (e->o.hurry && *e->o.hurry && !e->env.talks_held) {
			e->env.talks_held = 1;
			log_warn("stopping at once: perf maps turned on by this run are "
				"left on; the next spanprof start turns them off");
		}
		if (!p)
			continue;
		runtime__detach_all(p);
		if (e->sym)
			symbolizer__forget(e->sym, p);
	}
	procevents__free(e->pe);
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
	if (e->pe)
		procevents__counters(e->pe, e->c.ev);
	e->c.ev_unavailable = e->pe ? 0 : e->pe_err ? e->pe_err : EINVAL;
	e->c.ev_ctx_unavailable = e->pe ? -procevents__ctx_err(e->pe) : 0;
	e->c.paused_ns = paused_total + (is_paused ? now_ns() - paused_since : 0);
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
