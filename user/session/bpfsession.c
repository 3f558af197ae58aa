/* bpfsession.c: checks, BPF load and attach on every online CPU, counters, ring buffer polling. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfsession.h"
#include "log.h"
#include "profiler.skel.h"
#include "util.h"

#define CTX_PROCS_DEFAULT 4096
#define FOLLOWED_MAX	  8192	/* processes a followed command may have at once */

const char *const sp_counter_names[SP_CNT__MAX] = {
#define SP_COUNTER_NAME(id, name, help) [SP_CNT_##id] = name,
	SP_COUNTERS(SP_COUNTER_NAME)
#undef SP_COUNTER_NAME
};

const char *const sp_counter_help[SP_CNT__MAX] = {
#define SP_COUNTER_HELP(id, name, help) [SP_CNT_##id] = help,
	SP_COUNTERS(SP_COUNTER_HELP)
#undef SP_COUNTER_HELP
};

/* Places where profiled threads block whose stacks the off-CPU switch-out keeps (an LRU in the
 * kernel, about 2.2 KiB each, allocated at load): a thread's repeat block at one of them costs a
 * lookup, not a stack walk. */
#define OFFCPU_SITES 2048
/* Cgroups whose new places in it are counted against OFFCPU_PLACES_PER_SEC (bpf/profiler.bpf.c): an
 * LRU, so a cgroup left out starts its second afresh. */
#define OFFCPU_BUDGETS 1024
/* The long blocks' own ring buffer: a wake-up at a quarter full, a bit more than 25 ms of 10,000
 * records of 1 KiB and under a second (20 cgroups at the default --off-cpu-max-rate). Its data
 * pages are mapped twice: up to 2 MiB resident once it has wrapped. */
#define OFFCPU_RING_BYTES (1u << 20)

struct bpfsession {
	struct bpfsession_opts o;
	struct profiler_bpf *skel;
	struct bpf_link **links;
	int *event_fds;		/* links[i]'s perf event (the link closes it) */
	int nlinks;
	struct bpf_link *fork_link;
	struct bpf_link *offcpu_link;	/* sched_switch */
	struct bpf_link *resume_link;	/* rseq_update: a thread's return to user space */
	int resume_ok;			/* this kernel reports the returns: long blocks are sent there */
	char resume_why[128];		/* if not, why not (the report says) */
	struct bpf_link *offcpu_exit_link;	/* sched_process_exit: not detached by a pause */
	struct ring_buffer *rb;
	bpfsession_sample_fn fn;
	void *ctx;
	int stats_fd;		/* held open while BPF run-time stats are wanted */
	uint32_t ctx_procs_max;
	uint64_t *gens;		/* the gens map, mapped (profiler.h SP_GEN_*) */
	size_t gens_len;
	uint64_t *pid_bits;	/* the pid_bits map, mapped: pid_filter's keys as bits */
	size_t pid_bits_len;
	uint32_t pid_words;
};

/* A mmapable BPF array of at least bytes, mapped read-write; *len: the length mapped (whole pages,
 * for munmap). NULL with errno. */
static void *map_mmap(const struct bpf_map *map, size_t bytes, size_t *len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p;

	*len = (bytes + page - 1) / page * page;
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(map), 0);
	return p == MAP_FAILED ? NULL : p;
}

/* The words of pid_bits for this node's pid_max (PID_MAX_LIMIT when unreadable). */
static uint32_t pid_words(void)
{
	unsigned long max = 4194304;
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");

	if (f) {
		if (fscanf(f, "%lu", &max) != 1 || max == 0 || max > 4194304)
			max = 4194304;
		fclose(f);
	}
	return (uint32_t)((max + 63) / 64);
}

/* pid's bit in pid_bits (pid_filter's keys as bits): set after its entry is added, cleared before it
 * is deleted. A pid past the bitmap (pid_max raised since) has none: BPF looks it up in the hash. */
static void pid_bit(struct bpfsession *s, uint32_t pid, int on)
{
	uint64_t m = 1ull << (pid % 64);

	if (!s->pid_bits || pid / 64 >= s->pid_words)
		return;
	if (on)
		__atomic_fetch_or(&s->pid_bits[pid / 64], m, __ATOMIC_SEQ_CST);
	else
		__atomic_fetch_and(&s->pid_bits[pid / 64], ~m, __ATOMIC_SEQ_CST);
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

static int check_privileges(const char *cmd)
{
	int bpf = has_cap(CAP_BPF) || has_cap(CAP_SYS_ADMIN);
	int perfmon = has_cap(CAP_PERFMON) || has_cap(CAP_SYS_ADMIN);

	if (!bpf || !perfmon)
		return setup_error("missing %s%s%s: run as root (sudo spanprof %s ...) or grant "
			    "CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE",
			    bpf ? "" : "CAP_BPF", !bpf && !perfmon ? " and " : "",
			    perfmon ? "" : "CAP_PERFMON", cmd);
	return 0;
}

static int check_btf(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return setup_error("this kernel has no BTF (/sys/kernel/btf/vmlinux: %s): use a kernel built "
			    "with CONFIG_DEBUG_INFO_BTF=y", strerror(errno));
	return 0;
}

static int check_pids(const struct bpfsession_opts *o)
{
	char path[64];

	for (int i = 0; i < o->npids; i++) {
		snprintf(path, sizeof(path), "/proc/%u", o->pids[i]);
		if (access(path, F_OK))
			return setup_error("no process with pid %u: check the pid (ps -p %u)", o->pids[i],
				    o->pids[i]);
	}
	return 0;
}

static int check_freq(uint32_t freq)
{
	char buf[32];
	long n = read_small_file(AT_FDCWD, "/proc/sys/kernel/perf_event_max_sample_rate", buf,
				 sizeof(buf));
	int max = n > 0 ? atoi(buf) : 100000;

	if (freq > (uint32_t)max)
		return setup_error("frequency %u Hz is above kernel.perf_event_max_sample_rate (%d): use a "
			    "lower -F", freq, max);
	return 0;
}

/* ---- load and attach ------------------------------------------------------------------------ */

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	log__vmsg(level == LIBBPF_WARN ? LOG_LEVEL_WARN : LOG_LEVEL_INFO, fmt, ap);
	return 0;
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

static int on_record(void *ctx, void *data, size_t size)
{
	struct bpfsession *s = ctx;

	return s->fn(s->ctx, data, size);
}

int bpfsession__check(const struct bpfsession_opts *o)
{
	int rc;

	if ((rc = check_freq(o->freq)) || (rc = check_privileges(o->command ? o->command : "record")) ||
	    (rc = check_btf()) || (rc = check_pids(o)))
		return rc;
	return 0;
}

/*
 * SPANPROF_BPF_VARIANT=no-ustack,no-span,...: a variant of the sampler without those parts
 * (parts[] below, bpf/profiler.h SP_VAR_*), for measuring what each costs
 * (scripts/bench-sampler.sh); the offcpu-* ones for the off-CPU program (scripts/bench-slices.py
 * TARGET=handoff).
 * Only in build/spanprof-test (SPANPROF_TEST_BUILD): a shipped binary always loads the whole
 * sampler (tests/integration/switches.sh). Said on stderr, since its profiles lack what it skips.
 * 0, or the exit code after a one-line message.
 */
static int sampler_variant(volatile __u32 *variant, int *rc)
{
#ifdef SPANPROF_TEST_BUILD
	static const struct { const char *name; __u32 bit; } parts[] = {
		{ "no-ustack", SP_VAR_NO_USTACK }, { "no-kstack", SP_VAR_NO_KSTACK },
		{ "no-leaf", SP_VAR_NO_LEAF }, { "no-span", SP_VAR_NO_SPAN },
		{ "no-output", SP_VAR_NO_OUTPUT }, { "offcpu-floor", SP_VAR_OFFCPU_FLOOR },
		{ "offcpu-times", SP_VAR_OFFCPU_TIMES },
		{ "offcpu-no-place", SP_VAR_OFFCPU_NO_PLACE }, { "offcpu-no-end", SP_VAR_OFFCPU_NO_END },
		{ "offcpu-places", SP_VAR_OFFCPU_PLACES }, { "rseq-on-change", SP_VAR_RSEQ_ON_CHANGE },
	};
	const char *env = getenv("SPANPROF_BPF_VARIANT"), *p = env;

	*variant = 0;
	while (p && *p) {
		size_t len = strcspn(p, ","), i;

		for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
			if (strlen(parts[i].name) == len && !strncmp(p, parts[i].name, len))
				break;
		if (i == sizeof(parts) / sizeof(parts[0])) {
			char names[256] = "";	/* every name of parts[] fits */

			for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
					 i ? ", " : "", parts[i].name);
			*rc = setup_error("SPANPROF_BPF_VARIANT: unknown variant \"%.*s\" (%s)",
					  (int)len, p, names);
			return *rc;
		}
		*variant |= parts[i].bit;
		p += len + (p[len] == ',');
	}
	if (*variant)
		log_info("sampler variant: %s", env);
#else
	(void)rc;
	*variant = 0;
#endif
	return 0;
}

struct bpfsession *bpfsession__open(const struct bpfsession_opts *o, bpfsession_sample_fn fn,
				    void *ctx, int *rc)
{
	struct bpfsession *s;
	uint64_t ring;
	__u8 one = 1;
	int err;

	s = calloc(1, sizeof(*s));
	if (!s) {
		*rc = setup_error("out of memory");
		return NULL;
	}
	s->o = *o;
	s->fn = fn;
	s->ctx = ctx;
	s->stats_fd = -1;
	s->ctx_procs_max = o->ctx_procs_max ? o->ctx_procs_max : CTX_PROCS_DEFAULT;
	libbpf_set_print(libbpf_log);
	s->skel = profiler_bpf__open();
	if (!s->skel) {
		*rc = setup_error("cannot open the BPF object: %s", strerror(errno));
		goto err_free;
	}
	if (sampler_variant(&s->skel->rodata->variant, rc))
		goto err_free;
	s->skel->rodata->filter_pids = o->npids > 0;
	s->skel->rodata->follow_forks = o->follow_forks && o->npids > 0;
	s->skel->rodata->offcpu_filter = o->off_cpu && !o->npids && o->offcpu_procs_max;
	ring = o->ringbuf_mb ? (uint64_t)o->ringbuf_mb << 20 : bpfsession__auto_ringbuf_bytes(o->freq);
	o = &s->o;
	s->skel->rodata->wakeup_bytes = ring / 4;
	s->pid_words = o->npids > 0 || s->skel->rodata->offcpu_filter ? pid_words() : 1;
	bpf_map__set_max_entries(s->skel->maps.pid_bits, s->pid_words);
	bpf_map__set_max_entries(s->skel->maps.pid_filter,
				 o->follow_forks ? FOLLOWED_MAX : o->npids > 0 ? (uint32_t)o->npids :
				 o->off_cpu && o->offcpu_procs_max ? o->offcpu_procs_max : 1);
	bpf_program__set_autoload(s->skel->progs.on_fork, o->follow_forks && o->npids > 0);
	bpf_program__set_autoload(s->skel->progs.offcpu_switch, o->off_cpu);
	bpf_program__set_autoload(s->skel->progs.offcpu_exit, o->off_cpu);
	/* Not every kernel has the tracepoint (rseq: Linux 4.18+, CONFIG_RSEQ). */
	bpf_program__set_autoload(s->skel->progs.offcpu_resume, o->off_cpu &&
				  libbpf_find_vmlinux_btf_id("rseq_update", BPF_TRACE_RAW_TP) > 0);
	if (o->off_cpu_threshold_ns)
		s->skel->rodata->offcpu_threshold_ns = o->off_cpu_threshold_ns;
	if (o->off_cpu_max_threads)
		s->skel->rodata->offcpu_max_threads = o->off_cpu_max_threads;
	if (o->off_cpu_max_rate)
		s->skel->rodata->offcpu_max_rate = o->off_cpu_max_rate;
	s->skel->rodata->offcpu_wakeup_bytes = OFFCPU_RING_BYTES / 4;
	bpf_map__set_max_entries(s->skel->maps.events, (uint32_t)ring);
	if (o->off_cpu)
		bpf_map__set_max_entries(s->skel->maps.offcpu_events, OFFCPU_RING_BYTES);
	bpf_map__set_max_entries(s->skel->maps.ctx_procs, s->ctx_procs_max);
	bpf_map__set_max_entries(s->skel->maps.offcpu_sites, o->off_cpu ? OFFCPU_SITES : 1);
	bpf_map__set_max_entries(s->skel->maps.offcpu_budgets, o->off_cpu ? OFFCPU_BUDGETS : 1);
	err = profiler_bpf__load(s->skel);
	if (err) {
		*rc = setup_error("cannot load the BPF program (%s): needs root, CAP_BPF and a kernel "
			   ">= 5.8 with BTF; run with -v for the verifier log", strerror(-err));
		goto err_free;
	}
	s->pid_bits = map_mmap(s->skel->maps.pid_bits, (size_t)s->pid_words * 8, &s->pid_bits_len);
	if (!s->pid_bits) {
		*rc = setup_error("cannot map the BPF pid filter's bits: %s", strerror(errno));
		goto err_free;
	}
	for (int i = 0; i < o->npids; i++) {
		if (bpf_map__update_elem(s->skel->maps.pid_filter, &o->pids[i], sizeof(o->pids[i]),
					 &one, sizeof(one), BPF_ANY)) {
			*rc = setup_error("cannot add pid %u to the filter: %s", o->pids[i],
				   strerror(errno));
			goto err_free;
		}
		pid_bit(s, o->pids[i], 1);
	}
	s->gens = map_mmap(s->skel->maps.gens, SP_GEN__MAX * sizeof(*s->gens), &s->gens_len);
	if (!s->gens) {
		*rc = setup_error("cannot map the BPF generations: %s", strerror(errno));
		goto err_free;
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_record, s, NULL);
	if (!s->rb || (o->off_cpu && ring_buffer__add(s->rb, bpf_map__fd(s->skel->maps.offcpu_events),
						      on_record, s))) {
		*rc = setup_error("cannot open the ring buffer: %s", strerror(errno));
		goto err_free;
	}
	return s;

err_free:
	bpfsession__free(s);
	return NULL;
}

/* The off-CPU programs (a block's start and end are both context switches; a long one is sent
 * at its thread's return to user space where the kernel reports it), the return's first. 0, or
 * -1 with errno. */
static int offcpu_attach(struct bpfsession *s)
{
	if (s->resume_ok && !s->resume_link &&
	    !(s->resume_link = bpf_program__attach(s->skel->progs.offcpu_resume)))
		return -1;
	s->offcpu_link = bpf_program__attach(s->skel->progs.offcpu_switch);
	return s->offcpu_link ? 0 : -1;
}

static void offcpu_detach(struct bpfsession *s)
{
	bpf_link__destroy(s->offcpu_link);
	s->offcpu_link = NULL;
	bpf_link__destroy(s->resume_link);
	s->resume_link = NULL;
}

/*
 * Whether this kernel reports a thread's return to user space after it blocked: offcpu_resume,
 * attached, must see this thread come back from each of RESUME_PROBE_SLEEPS sleeps, pinned to one
 * CPU (rseq_update fires for threads registered with rseq, as glibc registers every one: up to
 * Linux 6.18 after every switch; from 6.19 only where the thread's CPU or concurrency id changed,
 * which a return on the same CPU usually does not, so there most returns would be missed). If
 * not, it is detached and every block's stacks are taken at its switch-out.
 */
#define RESUME_PROBE_SLEEPS 4
static void resume_probe(struct bpfsession *s)
{
	const struct timespec ms = { 0, 1000000 };
	cpu_set_t was, one;
	bool pinned;
	int cpu;

	if (bpf_program__fd(s->skel->progs.offcpu_resume) < 0) {
		snprintf(s->resume_why, sizeof(s->resume_why), "this kernel has no rseq_update");
		return;
	}
	if (s->skel->rodata->variant & SP_VAR_OFFCPU_PLACES) {
		snprintf(s->resume_why, sizeof(s->resume_why), "the test build's variant offcpu-places");
		return;
	}
	s->resume_link = bpf_program__attach(s->skel->progs.offcpu_resume);
	if (!s->resume_link) {
		snprintf(s->resume_why, sizeof(s->resume_why), "cannot attach to rseq_update: %s",
			 strerror(errno));
		log_info("off-CPU: %s: stacks taken at switch-out", s->resume_why);
		return;
	}
	cpu = sched_getcpu();
	CPU_ZERO(&one);
	if (cpu >= 0)
		CPU_SET(cpu, &one);
	pinned = cpu >= 0 && !sched_getaffinity(0, sizeof(was), &was) &&
		 !sched_setaffinity(0, sizeof(one), &one);
	s->skel->bss->offcpu_probe_seen = 0;
	s->skel->bss->offcpu_probe_tid = (uint32_t)syscall(SYS_gettid);
	for (int i = 0; i < RESUME_PROBE_SLEEPS; i++)
		nanosleep(&ms, NULL);
	s->skel->bss->offcpu_probe_tid = 0;
	if (pinned)
		sched_setaffinity(0, sizeof(was), &was);
	s->resume_ok = s->skel->bss->offcpu_probe_seen >= RESUME_PROBE_SLEEPS;
	if (!s->resume_ok) {
		snprintf(s->resume_why, sizeof(s->resume_why), "this kernel reported %u of spanprof's "
			 "%d returns from a sleep on one CPU (rseq_update)",
			 s->skel->bss->offcpu_probe_seen, RESUME_PROBE_SLEEPS);
		log_info("off-CPU: %s: stacks taken at switch-out", s->resume_why);
		bpf_link__destroy(s->resume_link);
		s->resume_link = NULL;
		return;
	}
	s->skel->bss->offcpu_resume_ok = 1;	/* the link stays: offcpu_attach keeps it */
}

int bpfsession__attach(struct bpfsession *s)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.freq = 1,
		.sample_freq = s->o.freq,
	};
	int cpus[4096], ncpu, err;

	ncpu = online_cpus(cpus, 4096);
	if (ncpu <= 0)
		return setup_error("cannot read the online CPUs from /sys/devices/system/cpu/online");
	s->links = calloc(ncpu, sizeof(*s->links));
	s->event_fds = calloc(ncpu, sizeof(*s->event_fds));
	if (!s->links || !s->event_fds)
		return setup_error("out of memory");
	for (int i = 0; i < ncpu; i++) {
		int fd = syscall(SYS_perf_event_open, &attr, -1, cpus[i], -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			if (errno == ENODEV)	/* CPU went offline meanwhile */
				continue;
			return setup_error("perf_event_open on CPU %d failed: %s; needs CAP_PERFMON (root) "
				    "and kernel.perf_event_paranoid allowing CPU-wide events",
				    cpus[i], strerror(errno));
		}
		s->links[s->nlinks] = bpf_program__attach_perf_event(s->skel->progs.sample, fd);
		if (!s->links[s->nlinks]) {
			err = errno;
			close(fd);
			return setup_error("cannot attach the sampler to CPU %d: %s", cpus[i], strerror(err));
		}
		s->event_fds[s->nlinks++] = fd;
	}
	if (s->o.follow_forks && s->o.npids > 0) {
		s->fork_link = bpf_program__attach(s->skel->progs.on_fork);
		if (!s->fork_link)
			return setup_error("cannot follow the command's children (sched_process_fork): %s",
				    strerror(errno));
	}
	/* The exit program first: a thread that exits with a record must always take it along. */
	if (s->o.off_cpu)
		resume_probe(s);
	if (s->o.off_cpu &&
	    (!(s->offcpu_exit_link = bpf_program__attach(s->skel->progs.offcpu_exit)) ||
	     offcpu_attach(s)))
		return setup_error("cannot attach the off-CPU programs (tp_btf/sched_switch, "
				   "sched_process_exit): %s; needs a kernel with BTF (5.11+ "
				   "for task storage in tracing)", strerror(errno));
	if (s->o.bpf_stats) {
		s->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (s->stats_fd < 0)
			log_warn("cannot enable BPF run-time stats: %s",
				strerror(errno));
	}
	return 0;
}

int bpfsession__poll(struct bpfsession *s, int timeout_ms)
{
	/* The sampler wakes us only when the ring fills; otherwise drain on the timeout. */
	int err = ring_buffer__poll(s->rb, timeout_ms);

	if (err >= 0)
		err = ring_buffer__consume(s->rb);
	return err == -EINTR || err >= 0 ? 0 : err;
}

int bpfsession__drain(struct bpfsession *s)
{
	int err = ring_buffer__consume(s->rb);

	return err < 0 ? err : 0;
}

/*
 * Paused costs nothing: the sampling events are disabled, and the off-CPU program, which would
 * otherwise run at every context switch, are detached. On resume they are attached again after
 * the resume time is set, so that a block that began before the pause is timed from the resume.
 */
int bpfsession__pause(struct bpfsession *s, int paused)
{
	unsigned long req = paused ? PERF_EVENT_IOC_DISABLE : PERF_EVENT_IOC_ENABLE;
	struct timespec ts;

	for (int i = 0; i < s->nlinks; i++)
		if (ioctl(s->event_fds[i], req, 0))
			return -errno;
	if (!s->o.off_cpu)
		return 0;
	if (paused) {
		offcpu_detach(s);
		return 0;
	}
	if (s->offcpu_link)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);	/* bpf_ktime_get_ns()'s clock */
	s->skel->bss->offcpu_resume_ns = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	return offcpu_attach(s) ? -errno : 0;
}

void bpfsession__detach(struct bpfsession *s)
{
	for (int i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	s->nlinks = 0;
	bpf_link__destroy(s->fork_link);
	s->fork_link = NULL;
	offcpu_detach(s);
	bpf_link__destroy(s->offcpu_exit_link);
	s->offcpu_exit_link = NULL;
}

/*
 * Room for RINGBUF_AUTO_S seconds of the largest samples from every CPU at freq, as a power of two
 * (the kernel wants one), RINGBUF_AUTO_MIN at least: 256 KiB on a small node at the agent's 19 Hz
 * (was 1 MiB), more with many CPUs. The data pages are mapped twice, so each MiB costs two of
 * resident memory once the ring has wrapped.
 */
#define RINGBUF_AUTO_S	 2
#define RINGBUF_AUTO_MIN (256u << 10)
#define RINGBUF_AUTO_MAX (64u << 20)
uint64_t bpfsession__auto_ringbuf_bytes(uint32_t freq)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t need = (uint64_t)(ncpu > 0 ? ncpu : 1) * freq * SP_SAMPLE_MAX * RINGBUF_AUTO_S;
	uint64_t bytes = RINGBUF_AUTO_MIN;

	while (bytes < need && bytes < RINGBUF_AUTO_MAX)
		bytes *= 2;
	return bytes;
}

int bpfsession__ncpus(const struct bpfsession *s)
{
	return s->nlinks;
}

int bpfsession__ctx_map_fd(const struct bpfsession *s)
{
	return bpf_map__fd(s->skel->maps.ctx_procs);
}

int bpfsession__gens_fd(const struct bpfsession *s)
{
	return bpf_map__fd(s->skel->maps.gens);
}

uint64_t *bpfsession__gen(struct bpfsession *s, int which)
{
	return which >= 0 && which < SP_GEN__MAX ? &s->gens[which] : NULL;
}

uint32_t bpfsession__ctx_procs_max(const struct bpfsession *s)
{
	return s->ctx_procs_max;
}

int bpf_counters__sum(const struct bpf_map *map, uint32_t n, uint64_t *out)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals;

	if (ncpu <= 0 || !(vals = calloc(ncpu, sizeof(*vals))))
		return -ENOMEM;
	for (__u32 k = 0; k < n; k++) {
		uint64_t sum = 0;

		if (bpf_map__lookup_elem(map, &k, sizeof(k), vals, ncpu * sizeof(*vals), 0))
			continue;
		for (int c = 0; c < ncpu; c++)
			sum += vals[c];
		out[k] = sum;
	}
	free(vals);
	return 0;
}

int bpfsession__counters(const struct bpfsession *s, uint64_t out[SP_CNT__MAX])
{
	return bpf_counters__sum(s->skel->maps.counters, SP_CNT__MAX, out);
}

int bpfsession__epoll_fd(const struct bpfsession *s)
{
	return ring_buffer__epoll_fd(s->rb);
}

int bpfsession__offcpu_track(struct bpfsession *s, uint32_t pid, int on)
{
	__u8 one = 1;
	int err;

	if (!s->o.off_cpu || s->o.npids || !s->o.offcpu_procs_max)
		return -EINVAL;
	if (on) {
		err = bpf_map__update_elem(s->skel->maps.pid_filter, &pid, sizeof(pid), &one,
					   sizeof(one), BPF_ANY);
		if (!err)
			pid_bit(s, pid, 1);
		return err == -E2BIG ? -ENOSPC : err;
	}
	pid_bit(s, pid, 0);
	err = bpf_map__delete_elem(s->skel->maps.pid_filter, &pid, sizeof(pid), 0);
	/* Its threads' records say they are in the filter until the generation moves. */
	if (!err)
		__atomic_fetch_add(&s->gens[SP_GEN_PID_FILTER], 1, __ATOMIC_SEQ_CST);
	return err;
}

int bpfsession__is_target(const struct bpfsession *s, uint32_t pid)
{
	__u8 v;

	if (!s->o.npids)
		return 1;
	return !bpf_map__lookup_elem(s->skel->maps.pid_filter, &pid, sizeof(pid), &v, sizeof(v), 0);
}

static int prog_run_time(const struct bpf_program *prog, uint64_t *run_time_ns, uint64_t *run_cnt)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);
	int fd = bpf_program__fd(prog);

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) || !info.run_cnt)
		return -ENODATA;
	*run_time_ns = info.run_time_ns;
	*run_cnt = info.run_cnt;
	return 0;
}

int bpfsession__run_time(const struct bpfsession *s, uint64_t *run_time_ns, uint64_t *run_cnt)
{
	return prog_run_time(s->skel->progs.sample, run_time_ns, run_cnt);
}

int bpfsession__offcpu_run_time(const struct bpfsession *s, uint64_t *run_time_ns, uint64_t *run_cnt)
{
	uint64_t ns, cnt;

	if (!s->o.off_cpu || prog_run_time(s->skel->progs.offcpu_switch, run_time_ns, run_cnt))
		return -ENODATA;
	if (s->resume_ok && !prog_run_time(s->skel->progs.offcpu_resume, &ns, &cnt))
		*run_time_ns += ns;
	return 0;
}

int bpfsession__offcpu_at_return(const struct bpfsession *s, uint64_t *skipped, const char **why)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);

	*skipped = 0;
	*why = s->resume_why;
	if (!s->resume_ok)
		return 0;
	if (!bpf_obj_get_info_by_fd(bpf_program__fd(s->skel->progs.offcpu_resume), &info, &len))
		*skipped = info.recursion_misses;
	return 1;
}

void bpfsession__free(struct bpfsession *s)
{
	if (!s)
		return;
	if (s->stats_fd >= 0)
		close(s->stats_fd);
	ring_buffer__free(s->rb);
	bpfsession__detach(s);
	free(s->links);
	free(s->event_fds);
	if (s->gens)
		munmap(s->gens, s->gens_len);
	if (s->pid_bits)
		munmap(s->pid_bits, s->pid_bits_len);
	profiler_bpf__destroy(s->skel);
	free(s);
}
