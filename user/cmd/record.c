/* record.c: one recording session: checks, BPF set-up, the sample loop, output and report. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "dotnetproc.h"
#include "hookproc.h"
#include "intern.h"
#include "proctab.h"
#include "profile.h"
#include "profiler.h"
#include "profiler.skel.h"
#include "record.h"
#include "symbolize.h"
#include "util.h"

#define POLL_MS		100
#define YOUNG_NS	(30 * 1000000000ull)	/* a process this young may still load .NET */
#define YOUNG_MAPS_NS	(250 * 1000000ull)	/* how often its mappings are looked at meanwhile */
#define MAX_LABELS	(8 + HOOKPROC_MAX_LABELS)

/* Losses and oddities seen in user space, reported next to the BPF counters. */
struct user_counters {
	uint64_t received;
	uint64_t malformed;	/* ring buffer record shorter than its header says */
	uint64_t dropped_nomem;	/* could not be aggregated: out of memory */
	uint64_t ctx_undecodable;	/* span record present but not decodable */
};

struct session {
	const struct record_opts *o;
	struct profiler_bpf *skel;
	struct bpf_link **links;
	int nlinks;
	struct ring_buffer *rb;
	struct proctab *procs;
	struct symbolizer *sym;
	struct profile *prof;
	struct intern *labelsets;	/* "k\0v\0k\0v\0" -> id */
	struct intern *stacks;		/* [labelset, frame...] (u32) -> id */
	uint64_t *counts;		/* by stack id */
	uint32_t counts_cap;
	struct user_counters uc;
	struct dotnetproc_opts dn;
	struct dotnetproc_opts dn_passive;	/* dn without enabling perf maps */
	struct output outs[RECORD_MAX_OUTPUTS];
	int nouts;
	int stats_fd;		/* held open while BPF run-time stats are wanted */
	double cpu_loop_start, cpu_loop_end;	/* our CPU ms around the sampling loop */
	uint64_t t_start, t_end;
	int64_t wall_start;
	uint64_t bpf_counters[SP_CNT__MAX];
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Setup errors: one line naming the cause and the fix, exit code 2. */
static int fail(const char *fmt, ...)
{
	va_list ap;

	fputs("spanprof: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

/* ---- preflight ------------------------------------------------------------------------------ */

static int has_cap(int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };

	if (syscall(SYS_capget, &hdr, data))
		return 0;
	return !!(data[cap / 32].effective & (1u << (cap % 32)));
}

static int check_privileges(void)
{
	int bpf = has_cap(CAP_BPF) || has_cap(CAP_SYS_ADMIN);
	int perfmon = has_cap(CAP_PERFMON) || has_cap(CAP_SYS_ADMIN);

	if (!bpf || !perfmon)
		return fail("missing %s%s%s: run as root (sudo spanprof record ...) or grant "
			    "CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE",
			    bpf ? "" : "CAP_BPF", !bpf && !perfmon ? " and " : "",
			    perfmon ? "" : "CAP_PERFMON");
	return 0;
}

static int check_btf(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return fail("this kernel has no BTF (/sys/kernel/btf/vmlinux: %s): use a kernel built "
			    "with CONFIG_DEBUG_INFO_BTF=y", strerror(errno));
	return 0;
}

static int check_pids(const struct record_opts *o)
{
	char path[64];

	for (int i = 0; i < o->npids; i++) {
		snprintf(path, sizeof(path), "/proc/%u", o->pids[i]);
		if (access(path, F_OK))
			return fail("no process with pid %u: check the pid (ps -p %u)", o->pids[i],
				    o->pids[i]);
	}
	return 0;
}

static int max_sample_rate(void)
{
	char buf[32];
	long n = read_small_file(AT_FDCWD, "/proc/sys/kernel/perf_event_max_sample_rate", buf,
				 sizeof(buf));

	return n > 0 ? atoi(buf) : 100000;
}

/* Open every output now, so a bad path fails before anything is recorded. */
static int open_outputs(struct session *s)
{
	char err[512];

	for (int i = 0; i < s->o->noutputs; i++) {
		if (output__open(&s->outs[i], s->o->outputs[i], s->o->format, err, sizeof(err)))
			return fail("%s", err);
		s->nouts++;
	}
	return 0;
}

/* ---- BPF ------------------------------------------------------------------------------------ */

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int online_cpus(int *cpus, int max)
{
	char buf[1024], *s = buf, *end;
	int n = 0;

	if (read_small_file(AT_FDCWD, "/sys/devices/system/cpu/online", buf, sizeof(buf)) <= 0)
		return -EIO;
	while (*s && *s != '\n') {
		long a = strtol(s, &end, 10), b = a;

		if (end == s)
			return -EINVAL;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			s = end;
		}
		for (long c = a; c <= b && n < max; c++)
			cpus[n++] = c;
		if (*s == ',')
			s++;
	}
	return n;
}

static int handle_sample(void *ctx, void *data, size_t size);

static int load_bpf(struct session *s)
{
	const struct record_opts *o = s->o;
	__u8 one = 1;
	int err;

	libbpf_set_print(libbpf_log);
	s->skel = profiler_bpf__open();
	if (!s->skel)
		return fail("cannot open the BPF object: %s", strerror(errno));
	s->skel->rodata->filter_pids = o->npids > 0;
	s->skel->rodata->wakeup_bytes = (uint64_t)(o->ringbuf_mb << 20) / 4;
	bpf_map__set_max_entries(s->skel->maps.pid_filter, o->npids > 0 ? o->npids : 1);
	bpf_map__set_max_entries(s->skel->maps.events, o->ringbuf_mb << 20);
	err = profiler_bpf__load(s->skel);
	if (err)
		return fail("cannot load the BPF program (%s): needs root, CAP_BPF and a kernel "
			    ">= 5.8 with BTF; run with -v for the verifier log", strerror(-err));
	for (int i = 0; i < o->npids; i++)
		if (bpf_map__update_elem(s->skel->maps.pid_filter, &o->pids[i], sizeof(o->pids[i]),
					 &one, sizeof(one), BPF_ANY))
			return fail("cannot add pid %u to the filter: %s", o->pids[i],
				    strerror(errno));
	return 0;
}

static int attach_bpf(struct session *s)
{
	const struct record_opts *o = s->o;
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.freq = 1,
		.sample_freq = o->freq,
	};
	int cpus[4096], ncpu, err;

	ncpu = online_cpus(cpus, 4096);
	if (ncpu <= 0)
		return fail("cannot read the online CPUs from /sys/devices/system/cpu/online");
	s->links = calloc(ncpu, sizeof(*s->links));
	if (!s->links)
		return fail("out of memory");
	for (int i = 0; i < ncpu; i++) {
		int fd = syscall(SYS_perf_event_open, &attr, -1, cpus[i], -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			if (errno == ENODEV)	/* CPU went offline meanwhile */
				continue;
			return fail("perf_event_open on CPU %d failed: %s; needs CAP_PERFMON (root) "
				    "and kernel.perf_event_paranoid allowing CPU-wide events",
				    cpus[i], strerror(errno));
		}
		s->links[s->nlinks] = bpf_program__attach_perf_event(s->skel->progs.sample, fd);
		if (!s->links[s->nlinks]) {
			err = errno;
			close(fd);
			return fail("cannot attach the sampler to CPU %d: %s", cpus[i], strerror(err));
		}
		s->nlinks++;
	}
	if (o->bpf_stats) {
		s->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (s->stats_fd < 0)
			fprintf(stderr, "spanprof: cannot enable BPF run-time stats: %s\n",
				strerror(errno));
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), handle_sample, s, NULL);
	if (!s->rb)
		return fail("cannot open the ring buffer: %s", strerror(errno));
	return 0;
}

static void read_bpf_counters(struct session *s)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals;

	if (ncpu <= 0 || !(vals = calloc(ncpu, sizeof(*vals))))
		return;
	for (__u32 k = 0; k < SP_CNT__MAX; k++) {
		uint64_t sum = 0;

		if (bpf_map__lookup_elem(s->skel->maps.counters, &k, sizeof(k), vals,
					 ncpu * sizeof(*vals), 0))
			continue;
		for (int c = 0; c < ncpu; c++)
			sum += vals[c];
		s->bpf_counters[k] = sum;
	}
	free(vals);
}

/* ---- samples -------------------------------------------------------------------------------- */

/* Label set as one interned byte string "k\0v\0k\0v\0...". */
static int64_t labelset(struct session *s, const struct pf_label *l, size_t n)
{
	char buf[8192];
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		size_t kl = strlen(l[i].key) + 1, vl = strlen(l[i].value) + 1;

		if (len + kl + vl > sizeof(buf))
			break;
		memcpy(buf + len, l[i].key, kl);
		memcpy(buf + len + kl, l[i].value, vl);
		len += kl + vl;
	}
	return intern__id(s->labelsets, buf, len, NULL);
}

static int add_count(struct session *s, const uint32_t *key, size_t n)
{
	int64_t id = intern__id(s->stacks, key, n * sizeof(*key), NULL);

	if (id < 0)
		return id;
	if (id >= s->counts_cap) {
		uint32_t cap = s->counts_cap ? s->counts_cap * 2 : 4096;
		uint64_t *nc = realloc(s->counts, cap * sizeof(*nc));

		if (!nc)
			return -ENOMEM;
		memset(nc + s->counts_cap, 0, (cap - s->counts_cap) * sizeof(*nc));
		s->counts = nc;
		s->counts_cap = cap;
	}
	s->counts[id]++;
	return 0;
}

static int handle_sample(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct sp_sample *smp = data;
	struct pf_label labels[MAX_LABELS];
	char pid[16], tid[16], comm[SP_COMM_LEN + 1], pcomm[SP_COMM_LEN + 1];
	uint32_t key[1 + 2 * SP_MAX_FRAMES];
	const __u64 *frames;
	struct proc *p;
	size_t nl = 0, nk = 0;
	int64_t id;

	s->uc.received++;
	if (size < sizeof(*smp) || smp->n_user > SP_MAX_FRAMES || smp->n_kernel > SP_MAX_FRAMES ||
	    size < sizeof(*smp) + (smp->n_user + smp->n_kernel) * 8ul + smp->ctx_len) {
		s->uc.malformed++;
		return 0;
	}
	memcpy(comm, smp->comm, SP_COMM_LEN);
	comm[SP_COMM_LEN] = 0;
	memcpy(pcomm, smp->pcomm, SP_COMM_LEN);
	pcomm[SP_COMM_LEN] = 0;

	p = proctab__get(s->procs, smp->tgid, smp->proc_start_ticks, pcomm);
	if (!p)
		goto nomem;
	if (!p->sampled) {
		p->sampled = 1;
		if (p->is_dotnet)
			dotnetproc__poll(p, &s->dn);
	}
	if (p->is_dotnet && !p->hook)
		hookproc__poll(p, bpf_map__fd(s->skel->maps.ctx_procs));

	/* pprof order: leaf first; kernel frames are above the user ones. */
	frames = (const __u64 *)smp->data;
	for (int i = 0; i < smp->n_kernel; i++) {
		id = symbolizer__kernel(s->sym, frames[smp->n_user + i], i == 0);
		if (id < 0)
			goto nomem;
		key[1 + nk++] = id;
	}
	for (int i = 0; i < smp->n_user; i++) {
		id = symbolizer__user(s->sym, p, frames[i], i == 0, smp->time_ns);
		if (id < 0)
			goto nomem;
		key[1 + nk++] = id;
	}

	snprintf(pid, sizeof(pid), "%u", smp->tgid);
	snprintf(tid, sizeof(tid), "%u", smp->tid);
	labels[nl++] = (struct pf_label){ "pid", pid };
	labels[nl++] = (struct pf_label){ "tid", tid };
	labels[nl++] = (struct pf_label){ "thread_name", comm };
	labels[nl++] = (struct pf_label){ "process_name", pcomm[0] ? pcomm : p->comm };
	if (smp->ctx_len) {
		int n = hookproc__labels(p, smp->data + (smp->n_user + smp->n_kernel) * 8ul,
					 smp->ctx_len, s->o->pyroscope_labels, labels + nl,
					 MAX_LABELS - nl);

		if (n < 0)
			s->uc.ctx_undecodable++;
		else
			nl += n;
	}
	id = labelset(s, labels, nl);
	if (id < 0)
		goto nomem;
	key[0] = id;
	if (add_count(s, key, 1 + nk))
		goto nomem;
	return 0;
nomem:
	s->uc.dropped_nomem++;
	return 0;
}

/* ---- periodic work -------------------------------------------------------------------------- */

static void poll_processes(struct session *s)
{
	int map_fd = bpf_map__fd(s->skel->maps.ctx_procs);

	for (uint32_t i = 0; i < proctab__count(s->procs); i++) {
		struct proc *p = proctab__at(s->procs, i);

		/* A process seen while starting may load the .NET runtime a moment later. */
		if (!p->is_dotnet && p->sampled && !p->gone && proc__age_ns(p) < YOUNG_NS &&
		    now_ns() - p->maps_read_ns > YOUNG_MAPS_NS)
			proc__read_maps(p);
		if (!p->is_dotnet || p->gone)
			continue;
		/* Perf maps are turned on only in processes we actually sample. */
		dotnetproc__poll(p, p->sampled ? &s->dn : &s->dn_passive);
		if (!p->hook || hookproc__pending(p))
			hookproc__poll(p, map_fd);
	}
}

/*
 * Processes already running when the recording starts: find the .NET ones and register their span
 * tables now, so their first samples are labelled and named like every later one.
 */
static void prescan(struct session *s)
{
	struct dirent *de;
	DIR *d;

	struct proc *p;

	if (s->o->npids) {
		for (int i = 0; i < s->o->npids; i++)
			if ((p = proctab__open(s->procs, s->o->pids[i])))
				p->sampled = 1;
	} else if ((d = opendir("/proc"))) {
		while ((de = readdir(d))) {
			char *end;
			unsigned long pid = strtoul(de->d_name, &end, 10);

			if (*end == 0 && pid > 0 && pid != (unsigned long)getpid())
				proctab__open(s->procs, pid);
		}
		closedir(d);
	}
	poll_processes(s);
}

/* -v: every counter, once a second. */
static void print_progress(struct session *s)
{
	static const char *const names[SP_CNT__MAX] = {
		[SP_CNT_SAMPLES] = "samples", [SP_CNT_SENT] = "sent",
		[SP_CNT_LOST_RINGBUF] = "lost-ringbuf", [SP_CNT_LOST_SCRATCH] = "lost-scratch",
		[SP_CNT_USTACK_ERR] = "ustack-err", [SP_CNT_KSTACK_ERR] = "kstack-err",
		[SP_CNT_TASK_ERR] = "task-err", [SP_CNT_CTX_UNHOOKED] = "ctx-unhooked",
		[SP_CNT_CTX_NO_SLOT] = "ctx-no-slot", [SP_CNT_CTX_READ_ERR] = "ctx-read-err",
		[SP_CNT_CTX_INVALID] = "ctx-invalid", [SP_CNT_CTX_NONE] = "ctx-none",
		[SP_CNT_CTX_OK] = "ctx-ok",
	};

	read_bpf_counters(s);
	fprintf(stderr, "spanprof: %.1fs", (now_ns() - s->t_start) / 1e9);
	for (int i = 0; i < SP_CNT__MAX; i++)
		fprintf(stderr, " %s=%" PRIu64, names[i], s->bpf_counters[i]);
	fprintf(stderr, " received=%" PRIu64 " malformed=%" PRIu64 " dropped-nomem=%" PRIu64
		" processes=%u\n", s->uc.received, s->uc.malformed, s->uc.dropped_nomem,
		proctab__count(s->procs));
}

static int run_loop(struct session *s)
{
	uint64_t deadline = s->o->duration > 0 ? s->t_start + (uint64_t)(s->o->duration * 1e9) : 0;
	uint64_t next_progress = s->t_start + 1000000000ull;
	int err;

	while (!stop) {
		uint64_t now = now_ns();
		int timeout = POLL_MS;

		if (deadline && now >= deadline)
			break;
		if (deadline && (deadline - now) / 1000000 < (uint64_t)timeout)
			timeout = (deadline - now) / 1000000 + 1;
		/* The sampler wakes us only when the ring fills; otherwise drain on the timeout. */
		err = ring_buffer__poll(s->rb, timeout);
		if (err >= 0)
			err = ring_buffer__consume(s->rb);
		if (err < 0 && err != -EINTR) {
			fprintf(stderr, "spanprof: ring buffer poll failed: %s\n", strerror(-err));
			return 1;
		}
		poll_processes(s);
		if (s->o->verbose && now_ns() >= next_progress) {
			print_progress(s);
			next_progress += 1000000000ull;
		}
	}
	return 0;
}

/* ---- output --------------------------------------------------------------------------------- */

/* Aggregated stacks -> profile samples, once every frame has its name. */
static int build_profile(struct session *s)
{
	uint32_t locs[2 * SP_MAX_FRAMES];
	struct pf_label labels[MAX_LABELS];

	for (uint32_t id = 0; id < intern__count(s->stacks); id++) {
		size_t klen, llen, nl = 0;
		const uint32_t *key = intern__key(s->stacks, id, &klen);
		const char *ls = intern__key(s->labelsets, key[0], &llen), *end = ls + llen;
		size_t nf = klen / sizeof(*key) - 1;
		int err;

		for (size_t i = 0; i < nf; i++)
			locs[i] = symbolizer__location(s->sym, key[1 + i]);
		while (ls < end && nl < MAX_LABELS) {
			labels[nl].key = ls;
			ls += strlen(ls) + 1;
			labels[nl++].value = ls;
			ls += strlen(ls) + 1;
		}
		err = profile__add(s->prof, locs, nf, labels, nl, s->counts[id]);
		if (err == -EINVAL) {
			s->uc.malformed += s->counts[id];	/* a label no writer could encode */
			continue;
		}
		if (err)
			return err;
	}
	return 0;
}

static void print_top(const struct profile *prof, const char *key, const char *value, size_t n,
		      uint64_t period_ns, const char *indent)
{
	struct pf_top top[16];
	uint64_t total = profile__total(prof);
	size_t got = profile__top(prof, key, value, top, n < 16 ? n : 16);

	for (size_t i = 0; i < got && top[i].self; i++)
		printf("%s%6.2f%% %8.0fms  %s\n", indent, total ? 100.0 * top[i].self / total : 0,
		       top[i].self * period_ns / 1e6, top[i].name);
}

static void print_by_span(struct session *s, uint64_t period_ns);

/* What the profiler itself cost: BPF run time per sample (kernel.bpf_stats_enabled or
 * --bpf-stats) and user-space CPU per 1000 samples. */
static double cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 + ru.ru_stime.tv_sec * 1e3 +
	       ru.ru_stime.tv_usec / 1e3;
}

static void print_cost(struct session *s)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);
	struct rusage ru;
	uint64_t samples = s->uc.received;
	double loop = s->cpu_loop_end - s->cpu_loop_start;

	/* Runs include samples of processes the -p filter drops, which cost almost nothing. */
	if (!bpf_obj_get_info_by_fd(bpf_program__fd(s->skel->progs.sample), &info, &len) &&
	    info.run_cnt)
		printf("  sampler cost: %.2f us of BPF run time per sample taken (%.2f us per run, "
		       "%llu runs)\n", s->bpf_counters[SP_CNT_SAMPLES] ?
		       info.run_time_ns / 1e3 / s->bpf_counters[SP_CNT_SAMPLES] : 0,
		       info.run_time_ns / 1e3 / info.run_cnt, (unsigned long long)info.run_cnt);
	else
		printf("  sampler cost: not measured (sysctl kernel.bpf_stats_enabled=1 or --bpf-stats)\n");
	if (!getrusage(RUSAGE_SELF, &ru))
		printf("  user space: %.2f ms CPU per 1000 samples while sampling (%.0f ms), %.0f ms "
		       "set-up (BTF, kallsyms, process scan), %.0f ms naming and writing; max RSS "
		       "%ld MiB\n", samples ? loop * 1000 / samples : 0, loop, s->cpu_loop_start,
		       cpu_ms() - s->cpu_loop_end, ru.ru_maxrss / 1024);
}

static void report(struct session *s)
{
	const uint64_t *c = s->bpf_counters;
	uint64_t period_ns = 1000000000ull / s->o->freq;
	uint64_t lost = c[SP_CNT_LOST_RINGBUF] + c[SP_CNT_LOST_SCRATCH] + s->uc.malformed +
			s->uc.dropped_nomem;
	struct symbolizer_stats st;

	symbolizer__stats(s->sym, &st);
	printf("spanprof: %.2fs at %u Hz, %" PRIu64 " samples taken, %" PRIu64 " in profile, %"
	       PRIu64 " lost\n", (s->t_end - s->t_start) / 1e9, s->o->freq, c[SP_CNT_SAMPLES],
	       profile__total(s->prof), lost);
	printf("  lost: ring buffer full %" PRIu64 ", scratch %" PRIu64 ", malformed %" PRIu64
	       ", out of memory %" PRIu64 "\n", c[SP_CNT_LOST_RINGBUF], c[SP_CNT_LOST_SCRATCH],
	       s->uc.malformed, s->uc.dropped_nomem);
	printf("  kept with errors: user stack %" PRIu64 ", kernel stack %" PRIu64 ", task %" PRIu64
	       "\n", c[SP_CNT_USTACK_ERR], c[SP_CNT_KSTACK_ERR], c[SP_CNT_TASK_ERR]);
	printf("  span context: with span %" PRIu64 ", no span %" PRIu64 ", invalid (mid-write) %"
	       PRIu64 ", thread without record %" PRIu64 ", unreadable %" PRIu64
	       ", undecodable %" PRIu64 ", process not hooked %" PRIu64 "\n",
	       c[SP_CNT_CTX_OK], c[SP_CNT_CTX_NONE], c[SP_CNT_CTX_INVALID], c[SP_CNT_CTX_NO_SLOT],
	       c[SP_CNT_CTX_READ_ERR], s->uc.ctx_undecodable, c[SP_CNT_CTX_UNHOOKED]);
	printf("  frames: %" PRIu64 " distinct; native named %" PRIu64 ", module+offset %" PRIu64
	       ", .NET named %" PRIu64 ", .NET unnamed %" PRIu64 ", no mapping %" PRIu64
	       ", kernel %" PRIu64 "%s\n", st.frames, st.native_named, st.native_unnamed,
	       st.jit_named, st.jit_unnamed, st.unknown, st.kernel,
	       st.kernel_hidden ? " (kernel symbols hidden by kptr_restrict)" : "");
	for (uint32_t i = 0; i < proctab__count(s->procs); i++) {
		struct proc *p = proctab__at(s->procs, i);
		struct perfmap_stats ps;
		const char *detail;
		char hook[256];

		if (!p->is_dotnet)
			continue;
		dotnetproc__state(p, &detail);
		dotnetproc__stats(p, &ps);
		hookproc__describe(p, hook, sizeof(hook));
		printf("  .NET pid %u (%s): %s; %" PRIu64 " code ranges%s\n", p->pid, p->comm,
		       detail, ps.entries, hook);
	}
	print_cost(s);
	printf("top functions by self time:\n");
	print_top(s->prof, NULL, NULL, 10, period_ns, "  ");
	if (s->o->by_span)
		print_by_span(s, period_ns);
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

/* Per local root span name: CPU time and the top functions. */
static void print_by_span(struct session *s, uint64_t period_ns)
{
	struct intern *names = intern__new();
	uint64_t *cpu = NULL, total;
	uint32_t *order;
	size_t n = profile__sample_count(s->prof), cap = 0;
	const char *key = "span_name";

	if (!names)
		return;
	for (size_t i = 0; i < n; i++) {
		struct pf_sample_view v;
		const char *name;
		int64_t id;

		if (profile__sample(s->prof, i, &v))
			continue;
		name = profile__label(&v, key);
		id = intern__id(names, name ? name : "", name ? strlen(name) + 1 : 1, NULL);
		if (id < 0)
			continue;
		if ((size_t)id >= cap) {
			size_t nc = cap ? cap * 2 : 64;
			uint64_t *c = realloc(cpu, nc * sizeof(*c));

			if (!c)
				break;
			memset(c + cap, 0, (nc - cap) * sizeof(*c));
			cpu = c;
			cap = nc;
		}
		cpu[id] += v.count;
	}
	/* Busiest span first; CPU outside any span last. */
	order = calloc(intern__count(names) + 1, sizeof(*order));
	for (uint32_t id = 0; order && cpu && id < intern__count(names); id++)
		order[id] = id;
	if (order && cpu)
		qsort_r(order, intern__count(names), sizeof(*order), by_cpu_desc,
			&(struct span_cpu){ names, cpu });
	total = profile__total(s->prof);
	printf("by span (local root span name), CPU time and top functions:\n");
	for (uint32_t i = 0; order && cpu && i < intern__count(names); i++) {
		const char *name = intern__key(names, order[i], NULL);

		printf("  %-44s %8.0fms %5.1f%%\n", name[0] ? name : "(no span)",
		       cpu[order[i]] * period_ns / 1e6, total ? 100.0 * cpu[order[i]] / total : 0);
		if (name[0])
			print_top(s->prof, key, name, 5, period_ns, "      ");
	}
	free(order);
	free(cpu);
	intern__free(names);
}

/* ---- session -------------------------------------------------------------------------------- */

static void raise_fd_limit(void)
{
	struct rlimit rl;

	/* One /proc/<pid> fd, one root fd and up to two perf map fds per process. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void session_free(struct session *s)
{
	for (uint32_t i = 0; s->procs && i < proctab__count(s->procs); i++) {
		struct proc *p = proctab__at(s->procs, i);

		dotnetproc__detach(p, &s->dn);
		hookproc__detach(p);
	}
	if (s->stats_fd >= 0)
		close(s->stats_fd);
	ring_buffer__free(s->rb);
	for (int i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	free(s->links);
	profiler_bpf__destroy(s->skel);
	symbolizer__free(s->sym);
	profile__free(s->prof);
	proctab__free(s->procs);
	intern__free(s->labelsets);
	intern__free(s->stacks);
	free(s->counts);
	for (int i = 0; i < s->nouts; i++)
		output__abort(&s->outs[i]);	/* no-op for outputs already written */
}

int record__run(const struct record_opts *o)
{
	struct session s = { .o = o, .stats_fd = -1 };
	struct symbolizer_opts so = { .show_tiers = o->show_tiers,
				      .maps_refresh_ns = 50 * 1000000ull };
	struct profile_opts po = { .period_ns = 1000000000ull / o->freq };
	struct sigaction sa = { .sa_handler = on_signal };
	int rc, err, max_rate = max_sample_rate();

	s.dn = (struct dotnetproc_opts){ .enable_perfmap = o->enable_perfmap, .perfmap_type = 1,
					 .min_age_ns = 1000000000ull, .verbose = o->verbose };
	s.dn_passive = s.dn;
	s.dn_passive.enable_perfmap = 0;
	if (o->freq > (uint32_t)max_rate)
		return fail("frequency %u Hz is above kernel.perf_event_max_sample_rate (%d): use a "
			    "lower -F", o->freq, max_rate);
	if ((rc = check_privileges()) || (rc = check_btf()) || (rc = check_pids(o)) ||
	    (rc = open_outputs(&s)))
		goto out;

	raise_fd_limit();
	s.procs = proctab__new("/proc");
	s.prof = profile__new(&po);
	s.labelsets = intern__new();
	s.stacks = intern__new();
	if (!s.procs || !s.prof || !s.labelsets || !s.stacks) {
		rc = fail("out of memory");
		goto out;
	}
	s.sym = symbolizer__new(s.prof, &so);
	if (!s.sym) {
		rc = fail("cannot start the symbolizer: %s", strerror(errno));
		goto out;
	}
	if ((rc = load_bpf(&s)))
		goto out;
	prescan(&s);
	if ((rc = attach_bpf(&s)))
		goto out;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	s.t_start = now_ns();
	s.wall_start = realtime_ns();
	s.cpu_loop_start = cpu_ms();
	if (o->verbose)
		fprintf(stderr, "spanprof: sampling %s at %u Hz on %d CPUs\n",
			o->npids ? "the given processes" : "every process", o->freq, s.nlinks);
	rc = run_loop(&s);

	/* Stop sampling, then drain what is already in the ring buffer. */
	for (int i = 0; i < s.nlinks; i++)
		bpf_link__destroy(s.links[i]);
	s.nlinks = 0;
	s.t_end = now_ns();
	ring_buffer__consume(s.rb);
	s.cpu_loop_end = cpu_ms();
	read_bpf_counters(&s);
	poll_processes(&s);	/* the last perf map lines, for the pending .NET frames */

	if (symbolizer__finish(s.sym) || build_profile(&s)) {
		rc = fail("out of memory while building the profile");
		goto out;
	}
	profile__set_times(s.prof, s.wall_start, s.t_end - s.t_start);
	for (int i = 0; i < s.nouts; i++) {
		if ((err = output__write(&s.outs[i], s.prof))) {
			rc = fail("cannot write %s: %s", s.outs[i].path, strerror(-err));
			goto out;
		}
	}
	report(&s);
	for (int i = 0; i < s.nouts; i++)
		printf("wrote %s (%s)\n", s.outs[i].path, output__format_name(s.outs[i].format));
out:
	session_free(&s);
	return rc;
}
