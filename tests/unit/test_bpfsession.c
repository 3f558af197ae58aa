/* test_bpfsession.c: unit tests for user/session/bpfsession.c on the real kernel: the checks and
 * their one-line causes, the ring buffer's size, and a session on this very process (-p): its
 * samples arrive with its pid, the counters agree with what was received, the pid filter holds it
 * and no other, pausing stops the samples, off-CPU tracking refuses what it cannot do. Needs root
 * (CAP_BPF, CAP_PERFMON), as spanprof does; skipped without. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "bpfsession.h"
#include "profiler.h"
#include "testutil.h"

struct got {
	uint64_t records, ours, others, bad_size;
};

static int on_sample(void *ctx, const void *data, size_t size)
{
	struct got *g = ctx;
	const struct sp_sample *s = data;

	g->records++;
	if (size < sizeof(*s)) {
		g->bad_size++;
		return 0;
	}
	if (s->tgid == (uint32_t)getpid())
		g->ours++;
	else
		g->others++;
	return 0;
}

/* Burn CPU for ms milliseconds (the sampler fires only while we run). */
static void spin(double ms)
{
	volatile uint64_t x = 0;
	double t0 = testutil__now_ms();

	while (testutil__now_ms() - t0 < ms)
		x++;
}

/* Spin and drain in turns until the session has delivered want records of ours, or 10 s of
 * trying passed: a deadline, not a speed (a loaded machine gives us fewer samples per second). */
static void run_until(struct bpfsession *s, struct got *g, uint64_t want)
{
	double t0 = testutil__now_ms();

	while (g->ours < want && testutil__now_ms() - t0 < 10000) {
		spin(50);
		assert_int_equal(bpfsession__drain(s), 0);
	}
}

static int need_root(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		print_message("not root: the BPF session needs CAP_BPF and CAP_PERFMON\n");
		skip();
	}
	return 0;
}

static struct bpfsession_opts self_opts(uint32_t *pid)
{
	*pid = (uint32_t)getpid();
	return (struct bpfsession_opts){ .pids = pid, .npids = 1, .freq = 999, .command = "record" };
}

static void test_bpfsession_check(void **state)
{
	uint32_t pid, gone = 0x3ffffff0;	/* above any pid_max */
	struct bpfsession_opts o = self_opts(&pid);

	need_root(state);
	assert_int_equal(bpfsession__check(&o), 0);
	/* A pid that does not exist: exit code 2 (after one line naming it). */
	o.pids = &gone;
	assert_int_equal(bpfsession__check(&o), 2);
	/* Above kernel.perf_event_max_sample_rate. */
	o = self_opts(&pid);
	o.freq = 100000000;
	assert_int_equal(bpfsession__check(&o), 2);
}

static void test_bpfsession_auto_ringbuf(void **state)
{
	uint64_t prev = 0;

	(void)state;
	for (uint32_t f = 1; f <= 100000; f *= 10) {
		uint64_t b = bpfsession__auto_ringbuf_bytes(f);

		assert_true(b >= (256u << 10) && b <= (64u << 20));
		assert_int_equal(b & (b - 1), 0);	/* a power of two, as BPF ring buffers must be */
		assert_true(b >= prev);			/* more for a higher frequency */
		prev = b;
	}
	assert_true(bpfsession__auto_ringbuf_bytes(100000) > bpfsession__auto_ringbuf_bytes(1));
}

/* Samples of this process arrive, and only of it; the counters add up to what was received. */
/* kernel.bpf_stats_enabled, which any process on the host may turn on. */
static int bpf_stats_on(void)
{
	FILE *f = fopen("/proc/sys/kernel/bpf_stats_enabled", "r");
	int on = 0;

	if (f) {
		if (fscanf(f, "%d", &on) != 1)
			on = 0;
		fclose(f);
	}
	return on;
}

static void test_bpfsession_samples_self(void **state)
{
	int stats_were_on;
	uint32_t pid;
	struct bpfsession_opts o = self_opts(&pid);
	uint64_t c[SP_CNT__MAX] = { 0 };
	struct got g = { 0 };
	struct bpfsession *s;
	int rc = 0;

	need_root(state);
	s = bpfsession__open(&o, on_sample, &g, &rc);
	assert_non_null(s);
	assert_int_equal(bpfsession__attach(s), 0);
	assert_true(bpfsession__ncpus(s) >= 1);
	assert_true(bpfsession__epoll_fd(s) >= 0);
	assert_true(bpfsession__ctx_map_fd(s) >= 0);
	assert_true(bpfsession__ctx_procs_max(s) > 0);
	assert_true(bpfsession__is_target(s, pid));
	assert_false(bpfsession__is_target(s, pid + 1));
	stats_were_on = bpf_stats_on();
	run_until(s, &g, 20);
	bpfsession__detach(s);
	stats_were_on |= bpf_stats_on();
	assert_int_equal(bpfsession__drain(s), 0);
	print_message("%" PRIu64 " records, %" PRIu64 " ours\n", g.records, g.ours);
	assert_true(g.ours >= 20);
	assert_int_equal(g.others, 0);
	assert_int_equal(g.bad_size, 0);
	assert_int_equal(bpfsession__counters(s, c), 0);
	assert_int_equal(c[SP_CNT_SENT], g.records);
	assert_true(c[SP_CNT_SAMPLES] >= c[SP_CNT_SENT]);
	assert_int_equal(c[SP_CNT_SAMPLES], c[SP_CNT_SENT] + c[SP_CNT_LOST_RINGBUF] + c[SP_CNT_LOST_SCRATCH]);
	/* Not measured unless asked for (a benchmark elsewhere on the host may have turned the
	 * kernel's BPF statistics on during the run: then there is nothing to check). */
	{
		uint64_t ns, cnt;

		if (!stats_were_on)
			assert_int_equal(bpfsession__run_time(s, &ns, &cnt), -ENODATA);
		else
			print_message("kernel.bpf_stats_enabled was on during the run: not checked\n");
	}
	bpfsession__free(s);
}

/* Paused, the CPUs' events are off: spinning sends nothing; resumed, samples come again. */
static void test_bpfsession_pause(void **state)
{
	uint32_t pid;
	struct bpfsession_opts o = self_opts(&pid);
	struct got g = { 0 };
	struct bpfsession *s;
	uint64_t before;
	int rc = 0;

	need_root(state);
	s = bpfsession__open(&o, on_sample, &g, &rc);
	assert_non_null(s);
	assert_int_equal(bpfsession__attach(s), 0);
	run_until(s, &g, 5);
	assert_true(g.ours >= 5);
	assert_int_equal(bpfsession__pause(s, 1), 0);
	assert_int_equal(bpfsession__drain(s), 0);
	before = g.ours;
	spin(300);
	assert_int_equal(bpfsession__drain(s), 0);
	assert_int_equal(g.ours, before);
	assert_int_equal(bpfsession__pause(s, 0), 0);
	run_until(s, &g, before + 5);
	assert_true(g.ours >= before + 5);
	bpfsession__free(s);
}

/* Off-CPU tracking by pid is for host-wide sessions with --off-cpu and a process budget only. */
static void test_bpfsession_offcpu_track_refused(void **state)
{
	uint32_t pid;
	struct bpfsession_opts o = self_opts(&pid);
	struct got g = { 0 };
	struct bpfsession *s;
	int rc = 0;

	need_root(state);
	s = bpfsession__open(&o, on_sample, &g, &rc);
	assert_non_null(s);
	assert_int_equal(bpfsession__offcpu_track(s, pid, 1), -EINVAL);
	bpfsession__free(s);
	bpfsession__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bpfsession_check),
		cmocka_unit_test(test_bpfsession_auto_ringbuf),
		cmocka_unit_test(test_bpfsession_samples_self),
		cmocka_unit_test(test_bpfsession_pause),
		cmocka_unit_test(test_bpfsession_offcpu_track_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
