/* record.c: `spanprof record`: one window from start to stop, written to files, and a report. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "command.h"
#include "engine.h"
#include "exporter.h"
#include "identity.h"
#include "log.h"
#include "output.h"
#include "profile.h"
#include "record.h"
#include "report.h"
#include "util.h"

#define POLL_MS 100

static volatile sig_atomic_t stop;
static volatile sig_atomic_t hurry;	/* a second signal: the exit skips what can wait */
static volatile pid_t child;	/* `record -- COMMAND` */

static void on_signal(int sig)
{
	/* With a command, the signal is the command's to handle: it goes on being profiled until it
	 * exits (Ctrl-C reaches it anyway through the terminal's process group). */
	if (child > 0)
		kill(child, sig);
	else if (stop)
		hurry = 1;
	else
		stop = 1;
}

static void raise_fd_limit(void)
{
	struct rlimit rl;

	/* One /proc/<pid> fd, one root fd and up to two perf map fds per process. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * -p: a pidfd per given process, so that record ends when they have all exited, as perf record -p
 * does (a pid reused meanwhile is another process: its pidfd stays readable). Returns how many
 * were opened; a process gone already counts as exited, one whose pidfd cannot be had (no
 * pidfd_open) keeps record running until -d or a signal, as before.
 */
static int watch_pids(const struct record_opts *o, int *fds)
{
	int n = 0;

	for (int i = 0; i < o->npids; i++) {
		int fd = syscall(SYS_pidfd_open, (pid_t)o->pids[i], 0);

		if (fd < 0 && errno != ESRCH) {
			while (n--)	/* cannot tell: never "all exited" */
				if (fds[n] >= 0)
					close(fds[n]);
			return 0;
		}
		fds[n++] = fd;
	}
	return n;
}

static int all_exited(const int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		struct pollfd p = { .fd = fds[i], .events = POLLIN };

		if (fds[i] >= 0 && poll(&p, 1, 0) == 0)
			return 0;
	}
	return n > 0;
}

static int run_loop(struct engine *e, const struct record_opts *o, uint64_t t_start, int *cmd_rc)
{
	uint64_t deadline = o->duration > 0 ? t_start + (uint64_t)(o->duration * 1e9) : 0;
	uint64_t next_progress = t_start + 1000000000ull;
	int err, npidfds, pidfds[RECORD_MAX_PIDS];

	npidfds = o->command ? 0 : watch_pids(o, pidfds);
	while (!stop) {
		uint64_t now = now_ns();
		int timeout = POLL_MS;

		if (deadline && now >= deadline)
			break;
		if (all_exited(pidfds, npidfds)) {
			log_info("%s exited: recording ends",
				o->npids > 1 ? "every given process has" : "the process");
			break;
		}
		if (child > 0 && (*cmd_rc = command__reap(child, 0)) >= 0) {
			child = 0;
			break;
		}
		if (deadline && (deadline - now) / 1000000 < (uint64_t)timeout)
			timeout = (deadline - now) / 1000000 + 1;
		if ((err = engine__poll(e, timeout))) {
			log_error("ring buffer poll failed: %s", strerror(-err));
			return 1;
		}
		if (o->verbose && now_ns() >= next_progress) {
			LOG_REPORT(report__progress(f, e, (now_ns() - t_start) / 1e9));
			next_progress += 1000000000ull;
		}
	}
	for (int i = 0; i < npidfds; i++)
		if (pidfds[i] >= 0)
			close(pidfds[i]);
	return 0;
}

/* The services of the recorded processes, named as the agent names its series. */
struct services {
	struct identity_ctx *ids;
	const struct proctab *procs;
	char name[IDENTITY_SERVICE_LEN];	/* the first one seen */
	int many;				/* another one seen too */
};

static int every_process(void *arg, struct proc *p)
{
	struct services *s = arg;
	const struct proc_identity *id = s->ids ? identity__of_proc(s->ids, s->procs, p) : NULL;

	if (id && !s->name[0])
		snprintf(s->name, sizeof(s->name), "%s", id->service_name);
	else if (id && strcmp(s->name, id->service_name))
		s->many = 1;
	return 0;	/* one profile */
}

int record__run(const struct record_opts *o)
{
	struct engine_opts eo = {
		.bpf = { .pids = o->pids, .npids = o->npids, .freq = o->freq,
			 .ringbuf_mb = o->ringbuf_mb, .bpf_stats = o->bpf_stats, .command = "record",
			 .ctx_procs_max = o->max_span_tables, .off_cpu = o->off_cpu,
			 .off_cpu_threshold_ns = o->off_cpu_threshold_ns,
			 .off_cpu_max_threads = o->off_cpu_max_threads,
			 .off_cpu_max_rate = o->off_cpu_max_rate },
		.enable_perfmap = o->enable_perfmap,
		.jitdump_beside_perfmap = o->jitdump_beside_perfmap,
		.allow_remote_files = o->allow_remote_files,
		.show_tiers = o->show_tiers,
		.pyroscope_labels = o->pyroscope_labels,
		.max_frames = o->max_frames,
		.max_stacks = o->max_stacks,
		.max_symbol_mb = o->max_symbol_mb,
		.perfmap_max_mb = o->perfmap_max_mb,
		.perfmap_idle_s = o->perfmap_idle_s,
		.symsrv = o->symsrv,
		.verbose = o->verbose,
		.hurry = &hurry,
	};
	struct profile_opts po = { .period_ns = 1000000000ull / o->freq, .off_cpu = o->off_cpu,
				   .show_off_cpu = o->value_off_cpu };
	struct report_info ri = { .freq = o->freq, .by_span = o->by_span, .off_cpu = o->off_cpu };
	struct sigaction sa = { .sa_handler = on_signal };
	struct output outs[RECORD_MAX_OUTPUTS];
	struct exporter *files = NULL;
	struct agg_window *w = NULL;
	struct profile *prof = NULL;
	struct engine *e = NULL;
	struct services svcs = { 0 };
	int64_t wall_start;
	char err[512];
	int rc, nouts = 0, go = -1, cmd_rc = -1;
	uint32_t cmd_pid;

	if ((rc = bpfsession__check(&eo.bpf)))
		return rc;
	/* Every output is opened now, so a bad path fails before anything is recorded. */
	for (; nouts < o->noutputs; nouts++)
		if (output__open(&outs[nouts], o->outputs[nouts], o->format, err, sizeof(err))) {
			log_error("%s", err);
			rc = 2;
			goto out;
		}
	files = output__exporter(outs, nouts);
	if (!files) {
		log_error("out of memory");
		rc = 2;
		goto out;
	}
	raise_fd_limit();
	if (o->command) {
		pid_t pid = command__spawn(o->command, o->user, &go);

		if (pid < 0) {
			rc = -pid;
			goto out;
		}
		child = pid;
		cmd_pid = pid;
		eo.bpf.pids = &cmd_pid;
		eo.bpf.npids = 1;
		eo.bpf.follow_forks = 1;
		eo.perfmaps_ours = 1;	/* DOTNET_PerfMapEnabled is ours: its files go at the end */
	}
	if (!(e = engine__open(&eo, &rc)) || (rc = engine__attach(e)))
		goto out;
	if (go >= 0) {
		/* Sampling is on: the command may start. */
		if (write(go, "g", 1) != 1)
			log_error("cannot start the command: %s", strerror(errno));
		close(go);
		go = -1;
	}

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	engine__catch_pause_signals();
	ri.t_start = engine__attached_ns(e);
	wall_start = realtime_ns();
	ri.cpu_loop_start = report__cpu_ms();
	if (o->verbose)
		log_info("sampling %s at %u Hz on %d CPUs",
			o->npids ? "the given processes" : "every process", o->freq,
			bpfsession__ncpus(engine__bpf(e)));
	if (o->duration > 0)
		engine__set_deadline(e, ri.t_start + (uint64_t)(o->duration * 1e9));
	rc = run_loop(e, o, ri.t_start, &cmd_rc);

	/* Stop sampling, then drain what is already in the ring buffer. */
	engine__stop(e);
	ri.t_end = now_ns();
	ri.cpu_loop_end = report__cpu_ms();
	if (symbolizer__awaiting(engine__symbolizer(e))) {
		log_info("waiting up to %d s for debug files from the symbol servers",
			RECORD_SYMBOL_WAIT_MS / 1000);
		engine__wait_symbols(e, RECORD_SYMBOL_WAIT_MS);
	}
	w = engine__cut(e);
	prof = profile__new(&po);
	svcs.ids = identity__new(NULL, NULL, NULL);	/* none: the outputs name no service */
	svcs.procs = engine__procs(e);
	if (!w || !prof || engine__build(e, w, every_process, &svcs, &prof, 1) < 0 ||
	    (svcs.name[0] && !svcs.many && profile__set_service(prof, svcs.name))) {
		log_error("out of memory while building the profile");
		rc = 2;
		goto out;
	}
	/* The profile holds it all now: the window's memory goes before the outputs are built. */
	aggregate__window_free(w);
	w = NULL;
	profile__set_times(prof, wall_start, ri.t_end - ri.t_start);
	{
		struct export_series s = { .prof = prof };
		struct export_batch b = { wall_start, realtime_ns(), &s, 1 };

		/* Each output is written or not on its own; the report comes either way. */
		if (files->ops->export(files->self, &b))
			rc = 1;
	}
	report__print(stdout, e, prof, &ri);
	for (int i = 0; i < nouts; i++)
		if (output__written(&outs[i]))
			printf("wrote %s (%s)\n", outs[i].path, output__format_name(outs[i].format));
	if (o->command && rc != 2) {
		/* -d ended first: the command runs on, unprofiled; its exit code is still ours. */
		if (child > 0) {
			log_info("recording ended; waiting for %s (pid %d) to exit",
				o->command[0], (int)child);
			cmd_rc = command__reap(child, 1);
			child = 0;
		}
		rc = cmd_rc < 0 ? 1 : cmd_rc;
	}
out:
	if (go >= 0)
		close(go);	/* the command never starts: it exits 127 */
	if (child > 0) {
		command__reap(child, 1);
		child = 0;
	}
	aggregate__window_free(w);
	profile__free(prof);
	engine__free(e);
	identity__free(svcs.ids);
	if (files)
		files->ops->free(files->self);
	for (int i = 0; i < nouts; i++)
		output__abort(&outs[i]);	/* no-op for outputs already written */
	return rc;
}
