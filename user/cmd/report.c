/* report.c: the text report of a recording, and the -v progress line. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "blocking.h"
#include "engine.h"
#include "intern.h"
#include "profile.h"
#include "proctab.h"
#include "perfmap.h"
#include "report.h"
#include "symbudget.h"
#include "runtime.h"
#include "vec.h"

double report__cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 + ru.ru_stime.tv_sec * 1e3 +
	       ru.ru_stime.tv_usec / 1e3;
}

void report__progress(FILE *f, struct engine *e, double elapsed_s)
{
	struct engine_counters c;
	struct symbolizer_stats st;

	engine__counters(e, &c);
	symbolizer__stats(engine__symbolizer(e), &st);
	fprintf(f, "%.1fs", elapsed_s);
	for (int i = 0; i < SP_CNT__MAX; i++)
		fprintf(f, " %s=%" PRIu64, sp_counter_names[i], c.bpf[i]);
	for (int i = 0; i < LEAF__MAX; i++)
		fprintf(f, " leaf_%s=%" PRIu64, leaf_outcome_names[i], st.leaf[i]);
	fprintf(f, " received=%" PRIu64 " malformed=%" PRIu64 " dropped_nomem=%" PRIu64
		" not_target=%" PRIu64 " processes=%u", c.received, c.malformed, c.dropped_nomem,
		c.not_target, proctab__live(engine__procs(e)));
	if (engine__symsrv(e)) {
		struct symsrv_stats ss;

		symsrv__stats(engine__symsrv(e), &ss);
		fprintf(f, " debug_fetched=%" PRIu64 " debug_cached=%" PRIu64 " debug_not_found=%"
			PRIu64 " debug_failed=%" PRIu64 " debug_pending=%" PRIu64, ss.fetched,
			ss.cache_hits, ss.not_found, ss.failed, ss.pending);
	}
	fputc('\n', f);
}

/* Process events: span tables found when mapped, execs; what was left to the ordinary poll. */
static void print_events(FILE *f, const struct engine_counters *c)
{
	if (c->ev_unavailable) {
		fprintf(f, "  process events unavailable (%s): span tables found by polling, execs not "
			"seen\n", strerror(c->ev_unavailable));
		return;
	}
	if (c->ev_ctx_unavailable)
		fprintf(f, "  span-table events unavailable (neither the prctl tracepoint nor fexit "
			"loads: %s): span tables found by polling\n", strerror(c->ev_ctx_unavailable));
	fprintf(f, "  process events: span tables mapped %" PRIu64 " (read at once %" PRIu64
		", registered at once %" PRIu64 ", read by the sampler from the announcement on %"
		PRIu64 "), execs %" PRIu64 " (of processes seen: %" PRIu64
		", samples filed before their exec %" PRIu64 "); left to the poll: throttled %" PRIu64
		" in BPF, %" PRIu64 " here, %" PRIu64 " past the retry list; lost %" PRIu64 "\n",
		c->ev[SP_EV_CNT_CTX_MAPPED], c->ev_ctx, c->ev_ctx_at_once, c->ev[SP_EV_CNT_CTX_EARLY], c->ev[SP_EV_CNT_EXEC],
		c->ev_exec, c->ev_before_exec, c->ev[SP_EV_CNT_THROTTLED] + c->ev[SP_EV_CNT_BUDGET_FULL],
		c->ev_throttled, c->ev_urgent_full, c->ev[SP_EV_CNT_LOST_RINGBUF]);
}

static void print_top(FILE *f, const struct profile *prof, const char *key, const char *value,
		      size_t n, uint64_t period_ns, const char *indent)
{
	struct pf_top top[16];
	uint64_t total = profile__total(prof);
	size_t got = profile__top(prof, key, value, top, n < 16 ? n : 16);

	for (size_t i = 0; i < got && top[i].self; i++)
		fprintf(f, "%s%6.2f%% %8.0fms  %s\n", indent, total ? 100.0 * top[i].self / total : 0,
			top[i].self * period_ns / 1e6, top[i].name);
}

/* What the profiler itself cost: BPF run time per sample (kernel.bpf_stats_enabled or
 * --bpf-stats) and user-space CPU per 1000 samples. */
static void print_cost(FILE *f, struct engine *e, const struct engine_counters *c,
		       const struct report_info *ri)
{
	uint64_t run_ns, runs, samples = c->received;
	double loop = ri->cpu_loop_end - ri->cpu_loop_start;
	struct rusage ru;

	/* Runs include samples of processes the -p filter drops, which cost almost nothing. */
	if (!bpfsession__run_time(engine__bpf(e), &run_ns, &runs))
		fprintf(f, "  sampler cost: %.2f us of BPF run time per sample taken (%.2f us per run, "
			"%" PRIu64 " runs)\n", c->bpf[SP_CNT_SAMPLES] ?
			run_ns / 1e3 / c->bpf[SP_CNT_SAMPLES] : 0, run_ns / 1e3 / runs, runs);
	else
		fprintf(f, "  sampler cost: not measured (sysctl kernel.bpf_stats_enabled=1 or --bpf-stats)\n");
	if (!getrusage(RUSAGE_SELF, &ru))
		fprintf(f, "  user space: %.2f ms CPU per 1000 samples while sampling (%.0f ms), %.0f ms "
			"set-up (BTF, kallsyms, process scan), %.0f ms naming and writing; max RSS "
			"%ld MiB\n", samples ? loop * 1000 / samples : 0, loop, ri->cpu_loop_start,
			report__cpu_ms() - ri->cpu_loop_end, ru.ru_maxrss / 1024);
}

/* --off-cpu: what the off-CPU programs saw and cost, a line each: the blocks; their places (where
 * stacks come from a cache of places); those thinned, standing for others; those lost; where the
 * stacks were taken; the cost. */
static void print_off_cpu(FILE *f, struct engine *e, const struct profile *prof, const uint64_t *c,
			  uint64_t scan_dropped)
{
	uint64_t run_ns, runs, skipped;
	const char *why;

	fprintf(f, "  off-CPU: %" PRIu64 " blocks at or above the threshold, %.1f ms (in profile %.1f "
		"ms); %" PRIu64 " shorter blocks, %.1f ms in all (counted, no stacks); preempted or "
		"yielding switches (runnable: not blocking, not timed) %" PRIu64 "\n",
		c[SP_CNT_OFFCPU_LONG], c[SP_CNT_OFFCPU_LONG_NS] / 1e6, profile__total_off_ns(prof) / 1e6,
		c[SP_CNT_OFFCPU_SHORT], c[SP_CNT_OFFCPU_SHORT_NS] / 1e6, c[SP_CNT_OFFCPU_PREEMPT]);
	fprintf(f, "  off-CPU places: blocks at a place blocked at before (stacks cached, not walked) %"
		PRIu64 "; blocks whose frames above the syscall were read to tell their place %" PRIu64
		"; blocks at new places past their cgroup's budget (stacks not taken) %" PRIu64 ", of "
		"them long (sent without stacks) %" PRIu64 "\n", c[SP_CNT_OFFCPU_SITE_HIT],
		c[SP_CNT_OFFCPU_FRAMES_READ], c[SP_CNT_OFFCPU_PLACE_BUDGET],
		c[SP_CNT_OFFCPU_BUDGET_NO_STACKS]);
	fprintf(f, "  off-CPU thinned: long blocks past their cgroup's rate: thinned by their time "
		"(stood for by others, each carrying a quantum) %" PRIu64 ", past the bound (not sent) %"
		PRIu64 ", standing for %.1f ms not in the profile; long blocks thinned while the ring "
		"buffer was over half full (stood for by others) %" PRIu64 "\n",
		c[SP_CNT_OFFCPU_THINNED], c[SP_CNT_OFFCPU_RATE], c[SP_CNT_OFFCPU_RATE_NS] / 1e6,
		c[SP_CNT_OFFCPU_RING_THINNED]);
	fprintf(f, "  off-CPU lost: no per-thread record %" PRIu64 ", stacks left the cache %" PRIu64
		", lost to a full ring buffer %" PRIu64 "; frames found by a frame-pointer scan that "
		"were data, dropped %" PRIu64 "\n", c[SP_CNT_OFFCPU_NO_STORAGE],
		c[SP_CNT_OFFCPU_SITE_LOST], c[SP_CNT_OFFCPU_LOST_RINGBUF], scan_dropped);
	if (bpfsession__offcpu_at_return(engine__bpf(e), &skipped, &why))
		fprintf(f, "  off-CPU stacks: taken as each long block's thread returned to user space "
			"(%" PRIu64 " long blocks); returns missed, not sent %" PRIu64 " (%.1f ms), returns "
			"the kernel skipped the program for %" PRIu64 "\n", c[SP_CNT_OFFCPU_RESUMED],
			c[SP_CNT_OFFCPU_RESUME_MISSED], c[SP_CNT_OFFCPU_RESUME_MISSED_NS] / 1e6, skipped);
	else
		fprintf(f, "  off-CPU stacks: taken at switch-out, once per place (not at the thread's "
			"return to user space: %s)\n", why);
	if (!bpfsession__offcpu_run_time(engine__bpf(e), &run_ns, &runs))
		fprintf(f, "  off-CPU cost: %.3f us of BPF run time per context switch (%" PRIu64
			" runs)\n", run_ns / 1e3 / runs, runs);
}

struct span_cpu {
	const struct intern *names;
	const uint64_t *cpu;
};

static int by_cpu_desc(const void *a, const void *b, void *arg)
{
	const struct span_cpu *sc = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int xe = !*(const char *)intern__key(sc->names, x, NULL);
	int ye = !*(const char *)intern__key(sc->names, y, NULL);

	if (xe != ye)
		return xe - ye;	/* "(no span)" last */
	return sc->cpu[x] < sc->cpu[y] ? 1 : sc->cpu[x] > sc->cpu[y] ? -1 : 0;
}

/* The frames a span's threads blocked in, by off-CPU time: the application's method, and the wait
 * it called into. */
static void print_blocking(FILE *f, const struct profile *prof, const char *key, const char *value,
			   uint64_t span_off_ns)
{
	struct pf_blocking top[3];
	size_t got = blocking__top(prof, key, value, top, 3);

	for (size_t i = 0; i < got; i++)
		fprintf(f, "      blocked %5.1f%% %8.1fms  %s%s%s\n",
			span_off_ns ? 100.0 * top[i].off_ns / span_off_ns : 0, top[i].off_ns / 1e6,
			top[i].frame, top[i].via ? "  in " : "", top[i].via ? top[i].via : "");
}

/* Per local root span name: CPU time and the top functions; with off-CPU time, the top frames
 * that blocked. */
static void print_by_span(FILE *f, const struct profile *prof, uint64_t period_ns)
{
	struct intern *names = intern__new();
	uint64_t *cpu = NULL, *off = NULL, total;
	uint32_t *order;
	size_t n = profile__sample_count(prof), cap = 0, cap_off = 0;
	int show_off = profile__opts(prof)->off_cpu;
	const char *key = "span_name";

	if (!names)
		return;
	for (size_t i = 0; i < n; i++) {
		struct pf_sample_view v;
		const char *name;
		int64_t id;

		if (profile__sample(prof, i, &v))
			continue;
		name = profile__label(&v, key);
		id = intern__id(names, name ? name : "", name ? strlen(name) + 1 : 1, NULL);
		if (id < 0 || VEC_RESERVE(cpu, cap, (size_t)id + 1) ||
		    VEC_RESERVE(off, cap_off, (size_t)id + 1))
			continue;
		cpu[id] += v.count;
		off[id] += v.off_ns;
	}
	/* Busiest span first; CPU outside any span last. */
	order = calloc(intern__count(names) + 1, sizeof(*order));
	for (uint32_t id = 0; order && cpu && id < intern__count(names); id++)
		order[id] = id;
	if (order && cpu)
		qsort_r(order, intern__count(names), sizeof(*order), by_cpu_desc,
			&(struct span_cpu){ names, cpu });
	total = profile__total(prof);
	fprintf(f, "by span (local root span name), CPU time%s and top functions%s:\n",
		show_off ? ", off-CPU time" : "", show_off ? ", top blocking frames" : "");
	for (uint32_t i = 0; order && cpu && off && i < intern__count(names); i++) {
		const char *name = intern__key(names, order[i], NULL);

		fprintf(f, "  %-44s %8.0fms %5.1f%%", name[0] ? name : "(no span)",
			cpu[order[i]] * period_ns / 1e6, total ? 100.0 * cpu[order[i]] / total : 0);
		if (show_off)
			fprintf(f, "  off-CPU %8.1fms", off[order[i]] / 1e6);
		fputc('\n', f);
		if (name[0])
			print_top(f, prof, key, name, 5, period_ns, "      ");
		if (name[0] && show_off && off[order[i]])
			print_blocking(f, prof, key, name, off[order[i]]);
	}
	free(order);
	free(cpu);
	free(off);
	intern__free(names);
}

static void print_symbol_budget(FILE *f, const char *prefix)
{
	struct symbudget_stats sb;
	uint64_t refused = 0;

	symbudget__stats(&sb);
	for (int k = 0; k < SB__MAX; k++)
		refused += sb.refused_by[k];
	if (!refused)
		return;
	fprintf(f, "%ssymbol budget spent (--max-symbol-mb %" PRIu64 "): %.1f MiB held (", prefix,
		sb.max >> 20, sb.used / 1048576.0);
	for (int k = 0; k < SB__MAX; k++)
		fprintf(f, "%s%s %.1f", k ? ", " : "", symbudget__kind_name(k),
			sb.used_by[k] / 1048576.0);
	fprintf(f, "); not kept: %" PRIu64 " code ranges, %" PRIu64 " ELF tables, %" PRIu64
		" ReadyToRun images", sb.refused_by[SB_PERF_MAPS], sb.refused_by[SB_ELF],
		sb.refused_by[SB_R2R]);
	fprintf(f, " (their frames: module+offset, or .NET unnamed)\n");
}

void report__symbols(FILE *f, struct engine *e)
{
	const struct symbolizer *sym = engine__symbolizer(e);
	struct symbolizer_stats st;
	struct symsrv_stats ss;
	char last[256];

	symbolizer__stats(sym, &st);
	if (engine__symsrv(e)) {
		symsrv__stats(engine__symsrv(e), &ss);
		symsrv__last_error(engine__symsrv(e), last, sizeof(last));
		fprintf(f, "  symbol servers (%d): %" PRIu64 " debug files asked, %" PRIu64 " from the "
			"cache, %" PRIu64 " fetched (%.1f MiB), %" PRIu64 " not found, %" PRIu64
			" failed, %" PRIu64 " refused as invalid, %" PRIu64 " evicted, %" PRIu64
			" still pending; %" PRIu64 " put to use%s%s\n", ss.n_urls, ss.requested,
			ss.cache_hits, ss.fetched, ss.bytes / 1048576.0, ss.not_found, ss.failed,
			ss.invalid, ss.evicted, ss.pending, st.debug_attached,
			last[0] ? "; last error: " : "", last);
	}
	print_symbol_budget(f, "  ");
	if (st.elf_evicted || st.elf_over_budget || st.elf_idle_released)
		fprintf(f, "  ELF tables: %" PRIu64 " evicted for room, %" PRIu64 " not kept (over the "
			"symbol budget), %" PRIu64 " dropped idle, %" PRIu64 " read again; %" PRIu64
			" frames module+offset for it\n", st.elf_evicted, st.elf_over_budget,
			st.elf_idle_released, st.elf_reloaded, st.elf_not_held);
	if (st.opened_by_handle || st.opened_by_path)
		fprintf(f, "  mapped files opened: %" PRIu64 " by handle (/proc/<pid>/map_files), %"
			PRIu64 " by path (inside the process's root)\n", st.opened_by_handle,
			st.opened_by_path);
	if (st.debug_refused) {
		fprintf(f, "  debug files refused (outside the process's root, no matching build id): %"
			PRIu64 "\n", st.debug_refused);
		for (uint32_t i = 0; i < st.n_refused_named; i++)
			fprintf(f, "    %s\n", symbolizer__string(sym, st.refused_named[i]));
	}
}

void report__dotnet_processes(FILE *f, struct engine *e, const char *prefix)
{
	struct proctab *pt = engine__procs(e);

	for (uint32_t i = 0; i < proctab__count(pt); i++) {
		struct proc *p = proctab__at(pt, i);
		char desc[RT__MAX * (RUNTIME_DESC_MAX + 2)];

		if (!p)
			continue;
		runtime__describe(p, desc, sizeof(desc));
		if (runtime__has(p, RT_DOTNET))
			fprintf(f, "%s.NET pid %u (%s): %s\n", prefix, p->pid, p->comm, desc);
		else if (desc[0])	/* a span table or a process context in a process that is not .NET */
			fprintf(f, "%spid %u (%s): %s\n", prefix, p->pid, p->comm, desc);
	}
}

void report__print(FILE *f, struct engine *e, const struct profile *prof,
		   const struct report_info *ri)
{
	struct engine_counters cnt;
	const uint64_t *c;
	uint64_t period_ns = 1000000000ull / ri->freq, lost;
	struct symbolizer_stats st;

	engine__counters(e, &cnt);
	c = cnt.bpf;
	lost = c[SP_CNT_LOST_RINGBUF] + c[SP_CNT_LOST_SCRATCH] + cnt.malformed + cnt.dropped_nomem +
	       cnt.refused + cnt.left_out;
	symbolizer__stats(engine__symbolizer(e), &st);
	fprintf(f, "spanprof: %.2fs at %u Hz", (ri->t_end - ri->t_start) / 1e9, ri->freq);
	if (cnt.paused_ns)	/* SIGUSR1: the pauses are in the duration, not in the samples */
		fprintf(f, " (%.2fs of it paused)", cnt.paused_ns / 1e9);
	fprintf(f, ", %" PRIu64 " samples taken, %" PRIu64 " in profile, %" PRIu64 " lost\n",
		c[SP_CNT_SAMPLES], profile__total(prof), lost);
	fprintf(f, "  lost: ring buffer full %" PRIu64 ", scratch %" PRIu64 ", malformed %" PRIu64
		", out of memory %" PRIu64 ", unencodable labels %" PRIu64 ", left out %" PRIu64 "\n",
		c[SP_CNT_LOST_RINGBUF], c[SP_CNT_LOST_SCRATCH], cnt.malformed, cnt.dropped_nomem,
		cnt.refused, cnt.left_out);
	if (st.truncated || cnt.stacks_truncated || cnt.span_ids_dropped)
		fprintf(f, "  truncated (caps reached): %" PRIu64 " frames past --max-frames; past "
			"--max-stacks, %" PRIu64 " samples kept their stack without span and trace ids, %"
			PRIu64 " samples went to [truncated]\n", st.truncated, cnt.span_ids_dropped,
			cnt.stacks_truncated);
	if (cnt.ctx_reregistered)
		fprintf(f, "  span tables registered again after the sampler's table evicted them: %" PRIu64
			" (more hooked processes than --max-span-tables)\n", cnt.ctx_reregistered);
	if (cnt.leftovers_undone)
		fprintf(f, "  turned off perf maps left on by a spanprof that died: %" PRIu64
			" processes\n", cnt.leftovers_undone);
	if (cnt.not_target)
		fprintf(f, "  not profiled: %" PRIu64 " samples of processes that are not targets\n",
			cnt.not_target);
	fprintf(f, "  kept with errors: user stack %" PRIu64 ", kernel stack %" PRIu64 ", task %" PRIu64
		", frame chain left code (callers lost) %" PRIu64 "\n", c[SP_CNT_USTACK_ERR],
		c[SP_CNT_KSTACK_ERR], c[SP_CNT_TASK_ERR], cnt.chains_cut);
	fprintf(f, "  span context: with span %" PRIu64 ", no span %" PRIu64 ", invalid (mid-write) %"
		PRIu64 ", thread without record %" PRIu64 ", unreadable %" PRIu64
		", undecodable %" PRIu64 ", process not hooked %" PRIu64 "\n",
		c[SP_CNT_CTX_OK], c[SP_CNT_CTX_NONE], c[SP_CNT_CTX_INVALID], c[SP_CNT_CTX_NO_SLOT],
		c[SP_CNT_CTX_READ_ERR], cnt.ctx_undecodable, c[SP_CNT_CTX_UNHOOKED]);
	print_events(f, &cnt);
	if (cnt.perfmap.restarts || cnt.perfmap.idle_off || cnt.perfmap.on_again ||
	    cnt.perfmap.not_ours_over_cap || cnt.perfmap.failed)
		fprintf(f, "  perf map files: started afresh past the cap %" PRIu64 ", turned off idle "
			"(files removed) %" PRIu64 ", on again %" PRIu64 ", failed %" PRIu64 "; past the "
			"cap but not turned on by spanprof (left alone) %" PRIu64 " processes\n",
			cnt.perfmap.restarts, cnt.perfmap.idle_off, cnt.perfmap.on_again,
			cnt.perfmap.failed, cnt.perfmap.not_ours_over_cap);
	if (cnt.remote_refused)
		fprintf(f, "  refused: %" PRIu64 " perf maps / jitdumps on remote or FUSE file systems "
			"(a server that does not answer would stall us; --allow-remote-files)\n",
			cnt.remote_refused);
	fprintf(f, "  frames: %" PRIu64 " distinct; native named %" PRIu64 ", function start (no "
		"symbol, lib!0x...) %" PRIu64 ", module+offset %" PRIu64 ", .NET named %" PRIu64
		", .NET unnamed %" PRIu64 ", no mapping %" PRIu64 " (%" PRIu64 " more found in maps "
		"read later), return address in data (chain cut) %" PRIu64 ", kernel %" PRIu64 "%s\n",
		st.frames, st.native_named, st.native_function, st.native_unnamed, st.jit_named,
		st.jit_unnamed, st.unknown, st.unmapped_named, st.off_code, st.kernel,
		st.kernel_hidden ? " (kernel symbols hidden by kptr_restrict)" : "");
	if (st.aot_named || st.aot_raw)
		fprintf(f, "  Native AOT: %" PRIu64 " frames named as .NET methods from their symbols, "
			"%" PRIu64 " kept as symbols (the mangled name is ambiguous)\n",
			st.aot_named, st.aot_raw);
	report__symbols(f, e);
	fprintf(f, "  leaf callers (frame not set up: caller put back):");
	for (int i = 0; i < LEAF__MAX; i++)
		fprintf(f, "%s %s %" PRIu64, i ? "," : "", leaf_outcome_names[i], st.leaf[i]);
	fprintf(f, "\n");
	if (st.jit_unnamed)
		fprintf(f, "  .NET unnamed by cause: no perf map or image entry %" PRIu64 ", jitdump stopped %"
			PRIu64 ", image unreadable or not ReadyToRun %" PRIu64 ", perf maps not turned "
			"on (runtime with a known perf map hazard) %" PRIu64 "\n",
			st.unnamed_by[RT_UNNAMED_NO_ENTRY], st.unnamed_by[RT_UNNAMED_JITDUMP_STOPPED],
			st.unnamed_by[RT_UNNAMED_IMAGE], st.unnamed_by[RT_UNNAMED_WITHHELD]);
	report__dotnet_processes(f, e, "  ");
	if (ri->off_cpu)
		print_off_cpu(f, e, prof, c, cnt.scan_dropped);
	print_cost(f, e, &cnt, ri);
	fprintf(f, "top functions by self time:\n");
	print_top(f, prof, NULL, NULL, 10, period_ns, "  ");
	if (ri->by_span)
		print_by_span(f, prof, period_ns);
}
