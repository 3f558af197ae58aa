/* agent.c: `spanprof agent`: the engine cut into windows; each window becomes one profile per
 * service, handed to every exporter; self-metrics on /metrics. Runs until SIGTERM. */
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "agent.h"
#include "dirout.h"
#include "dotnetproc.h"
#include "engine.h"
#include "exporter.h"
#include "hookproc.h"
#include "identity.h"
#include "log.h"
#include "metrics.h"
#include "nametab.h"
#include "otlp.h"
#include "proctab.h"
#include "profile.h"
#include "pyroscope.h"
#include "report.h"
#include "rtversion.h"
#include "runtime.h"
#include "symbudget.h"
#include "util.h"

#define POLL_MS		100
#define CUT_GRACE_NS	(20 * 1000000ull)	/* samples of the last moment reach the ring first */
#define MAX_EXPORTERS	3	/* Pyroscope, OTLP, a directory */
#define SERIES_LABELS	8

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* One service in one window. */
struct series {
	char service[IDENTITY_SERVICE_LEN];
	const struct proc_identity *id;	/* the first process's (names of the k8s labels) */
	struct pf_label labels[SERIES_LABELS];
	size_t n_labels;
	struct profile *prof;
};

struct agent {
	const struct agent_opts *o;
	struct engine *e;
	struct identity_ctx *ids;
	struct exporter *ex[MAX_EXPORTERS];
	int nex;
	struct metrics_server *metrics;
	struct metrics_buf *mb;
	struct series *series;
	struct profile **profs;
	size_t nseries, cap;
	/* figures for /metrics */
	uint64_t windows_built, window_samples, window_series, export_errors;
	struct metrics_hist build_seconds;	/* time to build and hand over a window */
	uint64_t wall_minus_mono;	/* CLOCK_REALTIME - CLOCK_MONOTONIC, ns */
};

/* A secret from a file (first line) or, when file is NULL, an environment variable. */
static int read_secret(const char *file, const char *env, char *buf, size_t len)
{
	const char *v;
	long n;

	if (file) {
		n = read_small_file(AT_FDCWD, file, buf, len);
		if (n < 0)
			return setup_error("cannot read %s: %s", file, strerror(-n));
		buf[strcspn(buf, "\r\n")] = 0;
		return 0;
	}
	v = getenv(env);
	snprintf(buf, len, "%s", v ? v : "");
	return 0;
}

static int open_exporters(struct agent *a, char *pw, char *token, size_t len)
{
	const struct agent_opts *o = a->o;
	char err[512];

	if (!o->pyroscope_url && !o->otlp && !o->output_dir)
		return setup_error("nowhere to send profiles: give --pyroscope-url URL, --otlp-url URL and/or "
			    "--output-dir DIR");
	if (o->pyroscope_url) {
		struct pyroscope_opts po = { .url = o->pyroscope_url };
		int rc;

		if ((rc = read_secret(o->pyroscope_password_file, "SPANPROF_PYROSCOPE_PASSWORD", pw,
				      len)) ||
		    (rc = read_secret(o->pyroscope_token_file, "SPANPROF_PYROSCOPE_TOKEN", token, len)))
			return rc;
		if (pw[0] && !o->pyroscope_user)
			return setup_error("a Pyroscope password needs --pyroscope-user");
		po.delivery.basic_user = o->pyroscope_user;
		po.delivery.basic_password = o->pyroscope_user ? pw : NULL;
		po.delivery.bearer_token = token[0] ? token : NULL;
		po.delivery.tenant = o->pyroscope_tenant;
		po.delivery.ca_file = o->pyroscope_ca;
		po.delivery.headers = o->headers;
		po.delivery.n_headers = o->nheaders;
		po.delivery.queue_max_bytes = o->queue_bytes;
		a->ex[a->nex] = pyroscope__new(&po, err, sizeof(err));
		if (!a->ex[a->nex])
			return setup_error("%s", err);
		a->nex++;
	}
	if (o->otlp) {
		struct otlp_opts oo = {
			.url = o->otlp_url,
			.headers = o->otlp_headers,
			.n_headers = o->n_otlp_headers,
			.timeout_ms = o->otlp_timeout_ms,
			.compression = o->otlp_compression == AGENT_OTLP_NONE ? OTLP_COMPRESSION_NONE :
				       o->otlp_compression == AGENT_OTLP_GZIP ? OTLP_COMPRESSION_GZIP :
										  OTLP_COMPRESSION_UNSET,
			.ca_file = o->otlp_ca,
			.delivery = { .queue_max_bytes = o->queue_bytes },
		};
		struct otlp_config cfg;

		a->ex[a->nex] = otlp__new(&oo, &cfg, err, sizeof(err));
		if (!a->ex[a->nex])
			return setup_error("%s", err);
		a->nex++;
		/* where it goes, after the environment had its say */
		log_info("otlp: %s %s (%s, %zu extra headers%s)",
			cfg.protocol == OTLP_PROTOCOL_GRPC ? "gRPC" : "POST", cfg.url,
			cfg.gzip ? "gzip" : "uncompressed", cfg.n_headers,
			cfg.client_cert[0] ? ", client certificate" : "");
		otlp_config__clear(&cfg);
	}
	if (o->output_dir) {
		a->ex[a->nex] = dirout__new(o->output_dir, "service_name", o->output_max_bytes, err,
					    sizeof(err));
		if (!a->ex[a->nex])
			return setup_error("%s", err);
		a->nex++;
	}
	return 0;
}

/* ---- one window ----------------------------------------------------------------------------- */

static void add_label(struct series *s, const char *k, const char *v)
{
	if (v && v[0] && s->n_labels < SERIES_LABELS)
		s->labels[s->n_labels++] = (struct pf_label){ .key = k, .value = v };
}

/* The series of process p in this window (created on first use), or -1. */
static int series_of(void *arg, struct proc *p)
{
	struct agent *a = arg;
	const struct proc_identity *id = identity__of_proc(a->ids, engine__procs(a->e), p);
	struct profile_opts po = { .period_ns = 1000000000ull / a->o->freq,
				   .off_cpu = a->o->off_cpu };
	struct series *s;

	if (!id)
		return -1;
	for (size_t i = 0; i < a->nseries; i++) {
		const struct proc_identity *o = a->series[i].id;

		if (!strcmp(o->service_name, id->service_name) && !strcmp(o->namespace, id->namespace) &&
		    !strcmp(o->pod, id->pod) && !strcmp(o->container, id->container))
			return i;
	}
	if (a->nseries == a->cap)
		return -1;	/* cap = processes in the table: cannot happen */
	s = &a->series[a->nseries];
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->prof = a->profs[a->nseries] = profile__new(&po);
	if (!s->prof)
		return -1;
	add_label(s, "__name__", "process_cpu");
	add_label(s, "service_name", id->service_name);
	if (id->in_k8s) {
		add_label(s, "namespace", id->namespace);
		add_label(s, "pod", id->pod);
		add_label(s, "container", id->container);
		add_label(s, "node", id->node);
	}
	return a->nseries++;
}

static int64_t mono_to_wall(const struct agent *a, uint64_t mono)
{
	return (int64_t)(mono + a->wall_minus_mono);
}

/* Cut the window, build one profile per service, hand them to every exporter. */
static int export_window(struct agent *a)
{
	struct agg_window *w = engine__cut(a->e);
	struct agg_window_info wi;
	struct export_series *es;
	double t0 = report__cpu_ms(), ms;
	uint64_t wall0 = now_ns();
	int64_t n;
	size_t cap, nseries;

	if (!w)
		return -ENOMEM;
	aggregate__info(w, &wi);
	if (wi.start_ns < engine__attached_ns(a->e))
		wi.start_ns = engine__attached_ns(a->e);	/* the first window starts with sampling */
	if (wi.end_ns > wall0)
		wi.end_ns = wall0 > wi.start_ns ? wall0 : wi.start_ns;	/* cut at the stop: ends now */
	cap = proctab__live(engine__procs(a->e)) + 1;
	a->series = calloc(cap, sizeof(*a->series));
	a->profs = calloc(cap, sizeof(*a->profs));
	a->cap = a->series && a->profs ? cap : 0;
	a->nseries = 0;
	es = calloc(cap, sizeof(*es));
	n = es && a->cap ? engine__build(a->e, w, series_of, a, a->profs, a->cap) : -ENOMEM;
	aggregate__window_free(w);
	if (n >= 0) {
		struct export_batch b = { mono_to_wall(a, wi.start_ns), mono_to_wall(a, wi.end_ns), es, 0 };

		for (size_t i = 0; i < a->nseries; i++) {
			profile__set_times(a->series[i].prof, b.start_ns, b.end_ns - b.start_ns);
			es[b.n++] = (struct export_series){ a->series[i].labels, a->series[i].n_labels,
							    a->series[i].prof };
		}
		for (int i = 0; i < a->nex; i++)
			if (a->ex[i]->ops->export(a->ex[i]->self, &b))
				a->export_errors++;
		a->windows_built++;
		a->window_samples += n;
		a->window_series += a->nseries;
	}
	nseries = a->nseries;
	for (size_t i = 0; i < a->nseries; i++)
		profile__free(a->series[i].prof);
	free(a->series);
	free(a->profs);
	free(es);
	a->series = NULL;
	a->profs = NULL;
	a->nseries = a->cap = 0;
	engine__prune(a->e);
	/* The window's profiles and the tables of exited and idle processes are freed: give the
	 * free pages inside the heap back to the kernel. */
	malloc_trim(0);
	ms = (now_ns() - wall0) / 1e6;
	metrics_hist__observe(&a->build_seconds, ms / 1e3);
	if (a->o->verbose)
		log_info("window %" PRIu64 ": %" PRId64 " samples, %" PRIu64
			" series, built in %.1f ms (%.1f ms CPU)", a->windows_built, n,
			(uint64_t)nseries, ms, report__cpu_ms() - t0);
	if (a->o->verbose) {
		LOG_REPORT(report__symbols(f, a->e));
	}
	return n < 0 ? (int)n : 0;
}

/* ---- self-metrics --------------------------------------------------------------------------- */

#define C(name, help, labels, v) metrics_buf__counter(mb, "spanprof_" name, help, labels, (double)(v))
#define G(name, help, labels, v) metrics_buf__gauge(mb, "spanprof_" name, help, labels, (double)(v))

static void publish_metrics(struct agent *a)
{
	struct metrics_buf *mb = a->mb;
	struct engine_counters c;
	struct proctab *pt = engine__procs(a->e);
	uint32_t dotnet = 0, hooked = 0, maps_held = 0, maps_sparse = 0;
	uint32_t withheld_by[RTWITHHELD__MAX] = { 0 };
	uint64_t maps_bytes = 0, frames_bytes = 0, procmaps_bytes = 0;
	struct symbolizer_stats st;
	struct nametab_stats names;
	const char *text;
	char libbpf_ver[32];
	size_t len;

	if (!a->metrics || !mb)
		return;
	metrics_buf__reset(mb);
	snprintf(libbpf_ver, sizeof(libbpf_ver), "%u.%u", libbpf_major_version(),
		 libbpf_minor_version());
	engine__counters(a->e, &c);
	for (int i = 0; i < SP_CNT__MAX; i++) {
		const char *l[] = { "outcome", sp_counter_names[i], NULL };

		C("sampler_events_total", "Sampler outcomes by kind (BPF counters).", l, c.bpf[i]);
	}
	for (int i = 0; i < SP_EV_CNT__MAX; i++) {
		const char *l[] = { "outcome", sp_ev_counter_names[i], NULL };

		C("process_events_total", "Process events by kind (BPF counters).", l, c.ev[i]);
	}
	C("process_events_throttled_total", "Span-table events left to the ordinary poll here.",
	  NULL, c.ev_throttled + c.ev_urgent_full);
	G("process_events_available", "1 when the kind of process event is caught in the kernel "
	  "(0: span tables found by polling; execs not seen).",
	  ((const char *[]){ "kind", "exec", NULL }), !c.ev_unavailable);
	G("process_events_available", NULL, ((const char *[]){ "kind", "span_table", NULL }),
	  !c.ev_unavailable && !c.ev_ctx_unavailable);
	C("remote_files_refused_total", "Perf maps / jitdumps refused: on remote or FUSE file "
	  "systems.", NULL, c.remote_refused);
	C("samples_received_total", "Samples read from the ring buffer.", NULL, c.received);
	{
		const char *causes[][2] = { { "ringbuf_full", NULL }, { "scratch", NULL },
					    { "malformed", NULL }, { "out_of_memory", NULL },
					    { "unencodable_labels", NULL }, { "left_out", NULL } };
		uint64_t v[] = { c.bpf[SP_CNT_LOST_RINGBUF], c.bpf[SP_CNT_LOST_SCRATCH], c.malformed,
				 c.dropped_nomem, c.refused, c.left_out };

		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			const char *l[] = { "cause", causes[i][0], NULL };

			C("samples_lost_total", "Samples lost, by cause.", l, v[i]);
		}
	}
	C("samples_not_target_total", "Samples of processes that are not profiled.", NULL,
	  c.not_target);
	C("samples_capped_total", "Samples past --max-stacks in their window: kept with their stack "
	  "but without span and trace ids, or past that too, in the [truncated] stack.",
	  ((const char *[]){ "kept_as", "stack_without_span_ids", NULL }), c.span_ids_dropped);
	C("samples_capped_total", NULL, ((const char *[]){ "kept_as", "truncated", NULL }),
	  c.stacks_truncated);
	C("samples_chain_cut_total", "Samples whose user stack walk left code (a frameless caller "
	  "used the frame pointer for data): kept up to there, callers lost.", NULL, c.chains_cut);
	C("offcpu_processes_untracked_total", "Processes whose blocks could not be timed off-CPU "
	  "(more .NET processes at once than the sampler's table holds).", NULL,
	  c.offcpu_untracked);
	C("span_undecodable_total", "Span records that could not be decoded.", NULL,
	  c.ctx_undecodable);
	C("span_tables_reregistered_total", "Span tables registered again after the sampler's LRU "
	  "table evicted them (more hooked processes than --max-span-tables).", NULL,
	  c.ctx_reregistered);
	symbolizer__stats(engine__symbolizer(a->e), &st);
	{
		const char *ev[] = { "evicted", "over_budget", "reloaded", "idle_released" };
		uint64_t n[] = { st.elf_evicted, st.elf_over_budget, st.elf_reloaded,
				 st.elf_idle_released };

		for (int i = 0; i < 4; i++)
			C("elf_tables_total", i ? NULL : "ELF symbol tables by what the symbol "
			  "budget did to them.", ((const char *[]){ "event", ev[i], NULL }), n[i]);
	}
	for (int i = 0; i < LEAF__MAX; i++) {
		const char *l[] = { "outcome", leaf_outcome_names[i], NULL };

		C("leaf_callers_total", i ? NULL : "Sampled leaves by what became of their "
		  "caller (frame not set up: put back from the copied stack).", l, st.leaf[i]);
	}
	for (uint32_t i = 0; i < proctab__count(pt); i++) {
		struct proc *p = proctab__at(pt, i);

		struct perfmap_stats ps;

		if (!p)
			continue;
		frames_bytes += symbolizer__proc_bytes(p);
		procmaps_bytes += p->maps_bytes;
		if (!runtime__has(p, RT_DOTNET))
			continue;
		dotnet++;
		hooked += hookproc__registered(p);
		dotnetproc__stats(p, &ps);
		maps_bytes += ps.held_bytes;
		maps_held += ps.held_bytes > 0;
		maps_sparse += dotnetproc__sparse(p);
		withheld_by[dotnetproc__withheld(p) % RTWITHHELD__MAX]++;
	}
	perfmap__shared_names(&names);
	G("processes_tracked", "Processes in the table.", NULL, proctab__live(pt));
	G("processes", "Processes in the table by what is known of them (.NET; with a span "
	  "table; holding a perf map index, or reading it sparsely): overlapping sets, not parts of "
	  "spanprof_processes_tracked.", ((const char *[]){ "kind", "dotnet", NULL }), dotnet);
	G("processes", NULL, ((const char *[]){ "kind", "span_table", NULL }), hooked);
	G("processes", NULL, ((const char *[]){ "kind", "perf_map_held", NULL }), maps_held);
	G("processes", NULL, ((const char *[]){ "kind", "perf_map_sparse", NULL }), maps_sparse);
	for (int w = RTWITHHELD_NONE + 1; w < RTWITHHELD__MAX; w++)
		G("dotnet_perf_maps_withheld", w == RTWITHHELD_NONE + 1 ? ".NET processes whose perf "
		  "maps were not turned on, by reason: a runtime with a known perf map deadlock "
		  "(dotnet/runtime#128401), or one whose version could not be read." : NULL,
		  ((const char *[]){ "reason", rtversion__withheld_name(w), NULL }), withheld_by[w]);
	{
		static const char *const causes[RT_UNNAMED__MAX] = {
			[RT_UNNAMED_NO_ENTRY] = "no_entry", [RT_UNNAMED_JITDUMP_STOPPED] = "jitdump_stopped",
			[RT_UNNAMED_IMAGE] = "image", [RT_UNNAMED_WITHHELD] = "perf_maps_withheld",
		};

		for (int k = RT_UNNAMED_NOT_OURS + 1; k < RT_UNNAMED__MAX; k++)
			G("dotnet_frames_unnamed", k == RT_UNNAMED_NOT_OURS + 1 ? "Distinct .NET frames "
			  "left without a name, by cause." : NULL,
			  ((const char *[]){ "cause", causes[k], NULL }), st.unnamed_by[k]);
	}
	C("processes_pruned_total", "Exited processes whose state was freed.", NULL, c.procs_pruned);
	C("processes_idle_released_total", "Times a process not sampled for two windows had its "
	  "frames and mappings freed (read again at its next sample).", NULL, c.procs_idle_released);
	C("perfmap_actions_total", "What was done to bound perf map files spanprof turned on "
	  "(--perfmap-max-mb, --perfmap-idle): started afresh past the cap, turned off idle (files "
	  "removed), on again at a sample, talks that failed; and processes whose own perf map "
	  "passed the cap (left alone).", ((const char *[]){ "action", "restart", NULL }),
	  c.perfmap.restarts);
	C("perfmap_actions_total", NULL, ((const char *[]){ "action", "idle_off", NULL }),
	  c.perfmap.idle_off);
	C("perfmap_actions_total", NULL, ((const char *[]){ "action", "on_again", NULL }),
	  c.perfmap.on_again);
	C("perfmap_actions_total", NULL, ((const char *[]){ "action", "failed", NULL }),
	  c.perfmap.failed);
	C("perfmap_actions_total", NULL, ((const char *[]){ "action", "not_ours_over_cap", NULL }),
	  c.perfmap.not_ours_over_cap);
	G("memory_bytes", "Memory held, by structure (perf map indexes of every process; the "
	  "method names they share).", ((const char *[]){ "structure", "perf_maps", NULL }), maps_bytes);
	G("memory_bytes", NULL, ((const char *[]){ "structure", "names_shared", NULL }), names.bytes);
	G("memory_bytes", NULL, ((const char *[]){ "structure", "frames", NULL }),
	  frames_bytes + st.bytes);
	G("memory_bytes", NULL, ((const char *[]){ "structure", "process_maps", NULL }),
	  procmaps_bytes);
	G("memory_bytes", NULL, ((const char *[]){ "structure", "open_windows", NULL }),
	  engine__open_bytes(a->e));
	G("memory_bytes", NULL, ((const char *[]){ "structure", "kernel_symbols", NULL }),
	  st.kernel_symbols_bytes);
	{
		/* The whole heap, to hold the structures above against: what is in use, and what
		 * malloc keeps free inside it (given back at each window's malloc_trim). */
		struct mallinfo2 mi = mallinfo2();

		G("heap_bytes", "The C heap (malloc): in use, and free but held.",
		  ((const char *[]){ "state", "in_use", NULL }), mi.uordblks + mi.hblkhd);
		G("heap_bytes", NULL, ((const char *[]){ "state", "free", NULL }), mi.fordblks);
	}
	{
		struct symbudget_stats sb;

		symbudget__stats(&sb);
		G("memory_bytes", NULL, ((const char *[]){ "structure", "elf_tables", NULL }),
		  sb.used_by[SB_ELF]);
		G("memory_bytes", NULL, ((const char *[]){ "structure", "ready_to_run", NULL }),
		  sb.used_by[SB_R2R]);
		G("symbol_budget_max_bytes", "The symbol budget (--max-symbol-mb).", NULL, sb.max);
		G("symbol_budget_used_bytes", "What is held of the symbol budget.", NULL, sb.used);
		for (int k = 0; k < SB__MAX; k++)
			C("symbol_budget_refused_total", k ? NULL : "Tables (code ranges for perf "
			  "maps) the symbol budget had no room for.",
			  ((const char *[]){ "kind", symbudget__kind_name(k), NULL }), sb.refused_by[k]);
	}
	{
		struct symsrv_stats ss;

		C("debug_files_refused_total", "Debug files outside a process's root without its "
		  "build id, refused.", NULL, st.debug_refused);
		if (engine__symsrv(a->e)) {
			const char *res[] = { "cache", "fetched", "not_found", "failed", "invalid" };
			uint64_t v[5];

			symsrv__stats(engine__symsrv(a->e), &ss);
			v[0] = ss.cache_hits, v[1] = ss.fetched, v[2] = ss.not_found, v[3] = ss.failed;
			v[4] = ss.invalid;
			for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
				C("symbol_fetch_total", "Debug files asked of the symbol servers, by result.",
				  ((const char *[]){ "result", res[i], NULL }), v[i]);
			C("symbol_fetch_errors_total", "Failed symbol server requests.", NULL, ss.errors);
			C("symbol_cache_evicted_total", "Cached debug files removed to stay under the cap.",
			  NULL, ss.evicted);
			G("symbol_fetch_pending", "Debug files queued or being fetched.", NULL, ss.pending);
		}
	}
	C("windows_total", "Windows built and exported.", NULL, a->windows_built);
	C("window_samples_total", "Samples in exported windows.", NULL, a->window_samples);
	metrics_buf__histogram(mb, "spanprof_window_build_seconds", "Time to build a window's "
			       "profiles and hand them to the exporters.", NULL, &a->build_seconds);
	for (int i = 0; i < a->nex; i++) {
		struct export_stats st;
		const char *name = a->ex[i]->ops->name;

		a->ex[i]->ops->stats(a->ex[i]->self, &st);
		C("export_sent_total", "Requests or files delivered.",
		  ((const char *[]){ "exporter", name, NULL }), st.sent_ok);
		C("export_retried_total", "Attempts repeated after a retryable failure.",
		  ((const char *[]){ "exporter", name, NULL }), st.retried);
		C("export_failed_total", "Given up: the backend refused (4xx other than 429).",
		  ((const char *[]){ "exporter", name, NULL }), st.failed);
		C("export_dropped_total", "Dropped, by cause.",
		  ((const char *[]){ "exporter", name, "cause", "queue_full", NULL }),
		  st.dropped_queue_full);
		C("export_dropped_total", NULL,
		  ((const char *[]){ "exporter", name, "cause", "shutdown", NULL }), st.dropped_shutdown);
		C("export_dropped_total", NULL,
		  ((const char *[]){ "exporter", name, "cause", "expired", NULL }), st.dropped_expired);
		C("export_dropped_total", NULL,
		  ((const char *[]){ "exporter", name, "cause", "encode", NULL }), st.dropped_encode);
		C("export_split_total", "Profiles split to fit the backend's limits.",
		  ((const char *[]){ "exporter", name, NULL }), st.split);
		G("export_queue_bytes", "Bytes waiting for delivery.",
		  ((const char *[]){ "exporter", name, NULL }), st.queue_bytes);
		C("export_bytes_total", "Bytes delivered.",
		  ((const char *[]){ "exporter", name, NULL }), st.bytes_sent);
		metrics_buf__histogram(mb, "spanprof_export_latency_seconds", "From a window's hand-over "
				       "to the backend's answer, per request.",
				       ((const char *[]){ "exporter", name, NULL }), &st.latency);
	}
	G("build_info", "The agent's version (value 1).",
	  ((const char *[]){ "version", SPANPROF_VERSION, "libbpf", libbpf_ver, NULL }), 1);
	metrics_buf__process(mb);
	text = metrics_buf__text(mb, &len);
	if (text)
		metrics__publish(a->metrics, text, len);
}

#undef C
#undef G

/* ---- the agent ------------------------------------------------------------------------------ */

int agent__run(const struct agent_opts *o)
{
	struct engine_opts eo = {
		.bpf = { .freq = o->freq, .ringbuf_mb = o->ringbuf_mb, .command = "agent",
			 .ctx_procs_max = o->max_span_tables, .off_cpu = o->off_cpu,
			 .off_cpu_threshold_ns = o->off_cpu_threshold_ns,
			 .off_cpu_max_threads = o->off_cpu_max_threads,
			 .off_cpu_max_rate = o->off_cpu_max_rate },
		.enable_perfmap = o->enable_perfmap,
		.jitdump_beside_perfmap = o->jitdump_beside_perfmap,
		.allow_remote_files = o->allow_remote_files,
		.pyroscope_labels = !o->full_span_labels,
		.dotnet_only = !o->all_processes,
		.first_window_ns = (uint64_t)(o->interval * 1e9),
		.interval_ns = (uint64_t)(o->interval * 1e9),
		.max_frames = o->max_frames,
		.max_stacks = o->max_stacks,
		.max_symbol_mb = o->max_symbol_mb,
		.perfmap_max_mb = o->perfmap_max_mb,
		.perfmap_idle_s = o->perfmap_idle_s,
		.symsrv = o->symsrv,
		.verbose = o->verbose,
	};
	struct sigaction sa = { .sa_handler = on_signal };
	struct agent a = { .o = o };
	char pw[1024] = "", token[4096] = "", err[512];
	uint64_t next_metrics = 0;
	struct rlimit rl;
	int rc;

	a.wall_minus_mono = realtime_ns() - now_ns();
	if ((rc = bpfsession__check(&eo.bpf)) || (rc = open_exporters(&a, pw, token, sizeof(pw))))
		goto out;
	a.ids = identity__new(o->pods_dir, o->containers_dir, o->node);
	if (!a.ids) {
		rc = setup_error("out of memory");
		goto out;
	}
	if (o->metrics_addr) {
		a.metrics = metrics__start(o->metrics_addr, err, sizeof(err));
		a.mb = metrics_buf__new();
		if (!a.metrics || !a.mb) {
			rc = setup_error("%s", a.metrics ? "out of memory" : err);
			goto out;
		}
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (!(a.e = engine__open(&eo, &rc)) || (rc = engine__attach(a.e)))
		goto out;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	engine__catch_pause_signals();
	signal(SIGPIPE, SIG_IGN);
	{
		struct engine_counters c;

		engine__counters(a.e, &c);
		if (c.leftovers_undone)
			log_info("turned off perf maps left on by a spanprof that "
				"died: %" PRIu64 " processes", c.leftovers_undone);
	}
	{
		char port[48] = "";

		/* The first page before the port is announced: a scrape right after it finds every
		 * family, not an empty page. */
		if (a.metrics) {
			publish_metrics(&a);
			metrics__heartbeat(a.metrics, now_ns());
			next_metrics = now_ns() + 1000000000ull;
			snprintf(port, sizeof(port), "; metrics on port %d", metrics__port(a.metrics));
		}
		log_info("agent sampling %s at %u Hz on %d CPUs%s, windows of %g s%s",
			 o->all_processes ? "every process" : ".NET processes", o->freq,
			 bpfsession__ncpus(engine__bpf(a.e)), o->off_cpu ? ", off-CPU time too" : "",
			 o->interval, port);
	}

	while (!stop) {
		uint64_t now = now_ns(), end = engine__window_end(a.e) + CUT_GRACE_NS;
		int timeout = POLL_MS;

		if (now >= end) {
			if ((rc = export_window(&a)))
				log_error("window lost: %s", strerror(-rc));
			rc = 0;
			continue;
		}
		if ((end - now) / 1000000 < (uint64_t)timeout)
			timeout = (end - now) / 1000000 + 1;
		if ((rc = engine__poll(a.e, timeout))) {
			log_error("ring buffer poll failed: %s", strerror(-rc));
			rc = 1;
			break;
		}
		if (a.metrics && now_ns() >= next_metrics) {
			publish_metrics(&a);
			metrics__heartbeat(a.metrics, now_ns());
			next_metrics = now_ns() + 1000000000ull;
		}
	}
	/* SIGTERM: the windows so far are flushed (a sample past the open window's end waits in the
	 * one after it), then delivery gets a bounded wait. */
	engine__stop(a.e);
	for (int i = 0; i < 3 && (!i || engine__open_samples(a.e)); i++)
		if ((rc = export_window(&a)))
			log_error("window lost: %s", strerror(-rc));
	rc = 0;
	for (int i = 0; i < a.nex; i++)
		a.ex[i]->ops->flush(a.ex[i]->self, o->flush_timeout_ms);
	if (a.metrics)
		metrics__heartbeat(a.metrics, now_ns());
	publish_metrics(&a);
	{
		struct engine_counters c;

		engine__counters(a.e, &c);
		log_info("agent stopped: %" PRIu64 " windows, %" PRIu64 " samples "
			"exported; sampler sent %" PRIu64 ", lost %" PRIu64 " (ring buffer full) %"
			PRIu64 " (scratch); received %" PRIu64 ", not profiled %" PRIu64
			", malformed %" PRIu64 ", out of memory %" PRIu64 ", unencodable %" PRIu64
			", left out %" PRIu64 "\n",
			a.windows_built, a.window_samples, c.bpf[SP_CNT_SENT],
			c.bpf[SP_CNT_LOST_RINGBUF], c.bpf[SP_CNT_LOST_SCRATCH], c.received,
			c.not_target, c.malformed, c.dropped_nomem, c.refused, c.left_out);
		if (o->off_cpu)
			log_info("off-CPU: %" PRIu64 " blocks at or above the threshold "
				"(%.1f ms), %" PRIu64 " shorter (%.1f ms, counted); preempted or yielding "
				"switches %" PRIu64 "; lost: no per-thread record %" PRIu64 "; processes "
				"not timed (filter full) %" PRIu64 "; long blocks without stacks: their "
				"place left the cache %" PRIu64 ", new past their cgroup's budget %" PRIu64
				"; long blocks past their cgroup's rate: thinned (stood for) %" PRIu64
				", not sent %" PRIu64 " (standing for %.1f ms); ring buffer over half full: "
				"thinned (stood for) %" PRIu64 ", full %" PRIu64
				"\n",
				c.bpf[SP_CNT_OFFCPU_LONG],
				c.bpf[SP_CNT_OFFCPU_LONG_NS] / 1e6, c.bpf[SP_CNT_OFFCPU_SHORT],
				c.bpf[SP_CNT_OFFCPU_SHORT_NS] / 1e6, c.bpf[SP_CNT_OFFCPU_PREEMPT],
				c.bpf[SP_CNT_OFFCPU_NO_STORAGE], c.offcpu_untracked,
				c.bpf[SP_CNT_OFFCPU_SITE_LOST], c.bpf[SP_CNT_OFFCPU_BUDGET_NO_STACKS],
				c.bpf[SP_CNT_OFFCPU_THINNED], c.bpf[SP_CNT_OFFCPU_RATE],
				c.bpf[SP_CNT_OFFCPU_RATE_NS] / 1e6,
				c.bpf[SP_CNT_OFFCPU_RING_THINNED],
				c.bpf[SP_CNT_OFFCPU_LOST_RINGBUF]);
		if (o->verbose)
			LOG_REPORT(report__dotnet_processes(f, a.e, "  "));
	}
	{
		for (int i = 0; i < a.nex; i++) {
			struct export_stats st;

			a.ex[i]->ops->stats(a.ex[i]->self, &st);
			log_info("%s: %" PRIu64 " sent, %" PRIu64 " retried, %" PRIu64
				" failed, dropped %" PRIu64 " (queue full) %" PRIu64 " (shutdown) %"
				PRIu64 " (expired)", a.ex[i]->ops->name, st.sent_ok, st.retried,
				st.failed, st.dropped_queue_full, st.dropped_shutdown,
				st.dropped_expired);
			if (a.ex[i]->ops->last_error) {
				char last[512];

				a.ex[i]->ops->last_error(a.ex[i]->self, last, sizeof(last));
				if (last[0])
					log_info("%s: last error: %s",
						a.ex[i]->ops->name, last);
			}
		}
	}
out:
	engine__free(a.e);	/* leaves every process as found */
	for (int i = 0; i < a.nex; i++)
		a.ex[i]->ops->free(a.ex[i]->self);
	metrics__stop(a.metrics);
	metrics_buf__free(a.mb);
	identity__free(a.ids);
	return rc;
}
