/* test_runtime.c: unit tests for user/process/runtime.c, the one attach / poll / backoff policy,
 * driven through a table of fake runtimes on hand-made processes and a fake /proc tree. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "profiler.h"
#include "proctab.h"
#include "runtime.h"
#include "testutil.h"
#include "util.h"

#define MS 1000000ull
#define S  1000000000ull

/* ---- two fake runtimes, one per runtime_id slot --------------------------------------------- */

struct fake {
	const char *name;
	const char *marker;	/* detected when a mapping's path contains this */
	int attach_fail;	/* attach returns NULL */
	int poll_ret;		/* what poll answers */
	uint64_t claim_lo, claim_hi;	/* claims [lo, hi) */
	const char *sym;	/* symbolize's answer for claimed addresses (NULL: -ENOENT) */
	const char *desc;	/* describe's line */
	/* what happened */
	int detects, attaches, polls, maps_changes, claims_asked, symbolized, detaches;
	int detach_seq;		/* order of detach calls (1-based) */
	int in_file_seen;
	void *state_seen;	/* state passed to detach */
};

static struct fake fakes[RT__MAX];
static int detach_counter;

struct fake_state {
	int id;
};

static int detect_in(int id, const struct proc *p)
{
	fakes[id].detects++;
	for (size_t i = 0; i < p->nvmas; i++)
		if (strstr(p->vmas[i].path, fakes[id].marker))
			return 1;
	return 0;
}

static void *attach_in(int id, struct proc *p, const struct runtime_env *env)
{
	struct fake_state *s;

	fakes[id].attaches++;
	if (fakes[id].attach_fail)
		return NULL;
	s = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->id = id;
	return s;
}

static int detect0(const struct proc *p) { return detect_in(0, p); }
static int detect1(const struct proc *p) { return detect_in(1, p); }
static void *attach0(struct proc *p, const struct runtime_env *e) { return attach_in(0, p, e); }
static void *attach1(struct proc *p, const struct runtime_env *e) { return attach_in(1, p, e); }

static int fake_poll(struct proc *p, void *state, const struct runtime_env *env)
{
	struct fake *f = &fakes[((struct fake_state *)state)->id];

	f->polls++;
	return f->poll_ret;
}

static void fake_maps_changed(struct proc *p, void *state)
{
	fakes[((struct fake_state *)state)->id].maps_changes++;
}

static int fake_claims(const struct proc *p, void *state, uint64_t addr, int in_file)
{
	struct fake *f = &fakes[((struct fake_state *)state)->id];

	f->claims_asked++;
	f->in_file_seen = in_file;
	return addr >= f->claim_lo && addr < f->claim_hi;
}

static int fake_symbolize(struct proc *p, void *state, uint64_t addr, uint64_t time_ns,
			  struct rt_symbol *out)
{
	struct fake *f = &fakes[((struct fake_state *)state)->id];

	f->symbolized++;
	if (!f->sym || addr < f->claim_lo || addr >= f->claim_hi)
		return -ENOENT;
	out->name = f->sym;
	out->system_name = NULL;
	out->tier = NULL;
	return 0;
}

static void fake_describe(const struct proc *p, const void *state, char *buf, size_t len)
{
	snprintf(buf, len, "%s", fakes[((const struct fake_state *)state)->id].desc);
}

static void fake_detach(struct proc *p, void *state, const struct runtime_env *env)
{
	struct fake *f = &fakes[((struct fake_state *)state)->id];

	f->detaches++;
	f->detach_seq = ++detach_counter;
	f->state_seen = state;
	free(state);
}

/* Only fake0 has shared data to let go. */
static int idle_releases;
static uint64_t idle_now_seen, idle_ns_seen;

static void fake_release_idle(uint64_t now, uint64_t idle_ns)
{
	idle_releases++;
	idle_now_seen = now;
	idle_ns_seen = idle_ns;
}

static const struct runtime_ops fake_ops[RT__MAX] = {
	{ .name = "fake0", .detect = detect0, .attach = attach0, .poll = fake_poll,
	  .maps_changed = fake_maps_changed, .claims = fake_claims, .symbolize = fake_symbolize,
	  .describe = fake_describe, .detach = fake_detach, .release_idle = fake_release_idle },
	{ .name = "fake1", .detect = detect1, .attach = attach1, .poll = fake_poll,
	  .claims = fake_claims, .symbolize = fake_symbolize, .describe = fake_describe,
	  .detach = fake_detach },
};
static const struct runtime_ops *const fake_table[RT__MAX] = { &fake_ops[0], &fake_ops[1] };
static const struct runtime_env env = { .runtimes = fake_table, .ctx_map_fd = -1 };

/* ---- hand-made processes -------------------------------------------------------------------- */

static const char MAPS_PLAIN[] =
	"400000-401000 r-xp 00000000 fd:01 11 /usr/bin/app\n"
	"7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]\n";
static const char MAPS_RT0[] =
	"400000-401000 r-xp 00000000 fd:01 11 /usr/bin/app\n"
	"7f0000000000-7f0000100000 r-xp 00000000 fd:01 12 /opt/rt/libfake0.so\n";
static const char MAPS_BOTH[] =
	"400000-401000 r-xp 00000000 fd:01 11 /usr/bin/app\n"
	"7f0000000000-7f0000100000 r-xp 00000000 fd:01 12 /opt/rt/libfake0.so\n"
	"7f1000000000-7f1000100000 r-xp 00000000 fd:01 13 /opt/rt/libfake1.so\n";

/* Replace p's mappings and tell the runtimes, as proc__read_maps does. */
static void set_maps(struct proc *p, const char *text)
{
	struct vma *v;
	size_t n;

	assert_int_equal(maps__parse(text, strlen(text), &v, &n, NULL), 0);
	maps__free(p->vmas, p->nvmas);
	p->vmas = v;
	p->nvmas = n;
	runtime__maps_changed(p);
}

/* A process started at boot (old), or just now (young). */
static struct proc *new_proc(int young, const char *maps)
{
	struct proc *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	p->pid = 4242;
	p->dir_fd = -1;
	p->root_fd = -1;
	p->env = &env;
	p->start_ticks = young ? boottime_ns() / SP_NSEC_PER_TICK : 0;
	if (maps)
		set_maps(p, maps);
	return p;
}

static void free_proc(struct proc *p)
{
	runtime__detach_all(p);
	runtime__release(p);
	maps__free(p->vmas, p->nvmas);
	free(p);
}

static int setup(void **state)
{
	memset(fakes, 0, sizeof(fakes));
	fakes[0] = (struct fake){ .name = "fake0", .marker = "libfake0.so", .poll_ret = RT_READY,
				  .claim_lo = 0x7f0000010000, .claim_hi = 0x7f0000020000,
				  .sym = "Zero::Run", .desc = "fake0: ok" };
	fakes[1] = (struct fake){ .name = "fake1", .marker = "libfake1.so", .poll_ret = RT_READY,
				  .claim_lo = 0x7f1000010000, .claim_hi = 0x7f1000020000,
				  .sym = "One::Run", .desc = "fake1: ok" };
	detach_counter = 0;
	return 0;
}

static int group_setup(void **state)
{
	/* Old processes are those started at boot: the host must have been up past "young". */
	return boottime_ns() > RUNTIME_YOUNG_NS + 5 * S ? 0 : -1;
}

/* ---- tests ---------------------------------------------------------------------------------- */

/* Nothing is attached until the mappings show the runtime; then exactly once. */
static void test_runtime_detect_on_maps_change_attaches(void **state)
{
	struct proc *p = new_proc(0, MAPS_PLAIN);

	assert_false(runtime__has(p, RT_DOTNET));
	assert_null(runtime__state(p, 0));
	assert_int_equal(fakes[0].attaches, 0);
	runtime__poll(p, 1 * S);
	assert_int_equal(fakes[0].polls, 0);	/* not detected: never polled */

	set_maps(p, MAPS_RT0);
	assert_true(runtime__has(p, 0));
	assert_false(runtime__has(p, 1));
	assert_non_null(runtime__state(p, 0));
	assert_null(runtime__state(p, 1));
	assert_int_equal(fakes[0].attaches, 1);
	assert_int_equal(fakes[1].attaches, 0);
	assert_int_equal(p->rt[0].next_poll_ns, 0);	/* due at once */
	assert_int_equal(fakes[0].maps_changes, 0);	/* attach, not maps_changed, the first time */

	/* Later changes reach the attached instance; it is not attached again. */
	set_maps(p, MAPS_BOTH);
	assert_int_equal(fakes[0].attaches, 1);
	assert_int_equal(fakes[0].maps_changes, 1);
	assert_int_equal(fakes[1].attaches, 1);
	assert_true(runtime__has(p, 1));
	/* Detected once is detected for good: a mapping that goes away does not detach it. */
	set_maps(p, MAPS_PLAIN);
	assert_true(runtime__has(p, 0));
	assert_non_null(runtime__state(p, 0));
	free_proc(p);
}

/* The same through a fake /proc: a re-read of the maps (dlopen of the runtime) attaches. */
static void test_runtime_detect_through_proctab(void **state)
{
	char root[64];
	struct proctab *pt;
	struct proc *p;

	assert_non_null(testutil__mkdtemp(root, sizeof(root)));
	testutil__proc_file(root, "321", "maps", MAPS_PLAIN);

	pt = proctab__new(root, &env);
	assert_non_null(pt);
	p = proctab__get(pt, 321, 0, "app");
	assert_non_null(p);
	assert_false(p->gone);
	assert_false(runtime__has(p, 0));

	testutil__proc_file(root, "321", "maps", MAPS_RT0);
	assert_int_equal(proc__read_maps(p), 0);
	assert_true(runtime__has(p, 0));
	assert_non_null(runtime__state(p, 0));
	runtime__poll(p, now_ns());
	assert_int_equal(fakes[0].polls, 1);

	runtime__detach_all(p);
	assert_int_equal(fakes[0].detaches, 1);
	proctab__free(pt);
	assert_int_equal(testutil__rm_rf(root), 0);
}

/* RT_READY: polled on every tick, however close together. */
static void test_runtime_ready_polled_every_tick(void **state)
{
	struct proc *p = new_proc(0, MAPS_RT0);
	uint64_t t = 100 * S;

	for (int i = 0; i < 10; i++)
		runtime__poll(p, t + i * MS);
	assert_int_equal(fakes[0].polls, 10);
	assert_int_equal(p->rt[0].last, RT_READY);
	assert_int_equal(p->rt[0].backoff_ns, 0);
	/* The same instant twice is two ticks too. */
	runtime__poll(p, t + 9 * MS);
	assert_int_equal(fakes[0].polls, 11);
	free_proc(p);
}

/* RT_DONE: not polled again, whatever the time or a wake, until the mappings change. */
static void test_runtime_done_not_polled_until_maps_change(void **state)
{
	struct proc *p;

	fakes[0].poll_ret = RT_DONE;
	p = new_proc(0, MAPS_RT0);
	runtime__poll(p, 10 * S);
	assert_int_equal(fakes[0].polls, 1);
	runtime__poll(p, 20 * S);
	runtime__poll(p, 3600 * S);
	runtime__wake(p);
	runtime__poll(p, 3601 * S);
	assert_int_equal(fakes[0].polls, 1);

	set_maps(p, MAPS_RT0);
	runtime__poll(p, 3602 * S);
	assert_int_equal(fakes[0].polls, 2);
	runtime__poll(p, 3603 * S);
	assert_int_equal(fakes[0].polls, 2);
	free_proc(p);
}

/* Poll p at every millisecond of [from, to); returns how many polls happened and where. */
static int poll_range(struct proc *p, uint64_t from, uint64_t to, uint64_t step, uint64_t *at,
		      int max)
{
	int before = fakes[0].polls, n = 0;

	for (uint64_t t = from; t < to; t += step) {
		int was = fakes[0].polls;

		runtime__poll(p, t);
		if (fakes[0].polls != was && n < max)
			at[n++] = t;
	}
	return fakes[0].polls - before;
}

/* RT_WAIT on an old process: 0.5 s, 1, 2, 4, 8, 8 s between polls. */
static void test_runtime_wait_backs_off_doubling(void **state)
{
	static const uint64_t want[] = { 0, 500 * MS, 1500 * MS, 3500 * MS, 7500 * MS,
					 15500 * MS, 23500 * MS, 31500 * MS };
	uint64_t at[16], t0 = 1000 * S;
	struct proc *p;
	int n;

	fakes[0].poll_ret = RT_WAIT;
	p = new_proc(0, MAPS_RT0);
	n = poll_range(p, t0, t0 + 32 * S, 10 * MS, at, 16);
	assert_int_equal(n, 8);
	for (int i = 0; i < n; i++)
		assert_int_equal(at[i] - t0, want[i]);
	assert_int_equal(p->rt[0].backoff_ns, RUNTIME_BACKOFF_MAX_NS);

	/* Working again resets the backoff: the next wait starts at the base interval. */
	fakes[0].poll_ret = RT_READY;
	runtime__poll(p, t0 + 40 * S);
	assert_int_equal(p->rt[0].backoff_ns, 0);
	fakes[0].poll_ret = RT_WAIT;
	runtime__poll(p, t0 + 41 * S);
	assert_int_equal(p->rt[0].backoff_ns, RUNTIME_BACKOFF_MIN_NS);
	assert_int_equal(p->rt[0].next_poll_ns, t0 + 41 * S + RUNTIME_BACKOFF_MIN_NS);
	free_proc(p);
}

/* A failure (-errno) backs off exactly like RT_WAIT. */
static void test_runtime_error_backs_off_like_wait(void **state)
{
	uint64_t at[16], t0 = 50 * S;
	struct proc *p;

	fakes[0].poll_ret = -EIO;
	p = new_proc(0, MAPS_RT0);
	assert_int_equal(poll_range(p, t0, t0 + 8 * S, 10 * MS, at, 16), 5);
	assert_int_equal(at[1] - t0, 500 * MS);
	assert_int_equal(at[2] - t0, 1500 * MS);
	assert_int_equal(at[3] - t0, 3500 * MS);
	assert_int_equal(at[4] - t0, 7500 * MS);
	assert_int_equal(p->rt[0].last, -EIO);
	free_proc(p);
}

/* A young process keeps being polled at the base interval while it waits. */
static void test_runtime_wait_young_stays_at_base(void **state)
{
	uint64_t at[64], t0 = 500 * S;
	struct proc *p;
	int n;

	assert_true(RUNTIME_YOUNG_NS > 10 * S);
	fakes[0].poll_ret = RT_WAIT;
	p = new_proc(1, MAPS_RT0);
	assert_true(proc__young(p));
	n = poll_range(p, t0, t0 + 10 * S, 10 * MS, at, 64);
	assert_int_equal(n, 20);
	for (int i = 1; i < n; i++)
		assert_int_equal(at[i] - at[i - 1], RUNTIME_BACKOFF_MIN_NS);
	assert_int_equal(p->rt[0].backoff_ns, RUNTIME_BACKOFF_MIN_NS);

	/* Once it is old, the next waits double again. */
	p->start_ticks = 0;
	runtime__poll(p, t0 + 100 * S);
	assert_int_equal(p->rt[0].backoff_ns, 2 * RUNTIME_BACKOFF_MIN_NS);
	free_proc(p);
}

/* runtime__wake makes a waiting instance due now; so does a change of the mappings. */
static void test_runtime_wake_makes_waiting_due(void **state)
{
	uint64_t t = 2000 * S;
	struct proc *p;

	fakes[0].poll_ret = RT_WAIT;
	p = new_proc(0, MAPS_RT0);
	for (int i = 0; i < 6; i++, t += 9 * S)
		runtime__poll(p, t);
	assert_int_equal(fakes[0].polls, 6);
	assert_int_equal(p->rt[0].backoff_ns, RUNTIME_BACKOFF_MAX_NS);
	runtime__poll(p, t - 9 * S + 1);
	assert_int_equal(fakes[0].polls, 6);	/* not due for 8 s */

	runtime__wake(p);
	assert_int_equal(p->rt[0].next_poll_ns, 0);
	runtime__poll(p, t - 9 * S + 2);
	assert_int_equal(fakes[0].polls, 7);

	set_maps(p, MAPS_RT0);
	assert_int_equal(p->rt[0].next_poll_ns, 0);
	runtime__poll(p, t - 9 * S + 3);
	assert_int_equal(fakes[0].polls, 8);

	/* No instance: nothing to wake, nothing breaks. */
	free_proc(p);
	p = new_proc(0, MAPS_PLAIN);
	runtime__wake(p);
	assert_int_equal(p->rt[0].next_poll_ns, 0);
	assert_null(runtime__state(p, 0));
	free_proc(p);
}

/* A failed attach leaves the runtime detected, unattached, never polled; retried later. */
static void test_runtime_attach_failure_retried(void **state)
{
	struct proc *p;

	fakes[0].attach_fail = 1;
	p = new_proc(0, MAPS_RT0);
	assert_true(runtime__has(p, 0));
	assert_null(runtime__state(p, 0));
	assert_int_equal(fakes[0].attaches, 1);
	runtime__poll(p, 10 * S);
	assert_int_equal(fakes[0].polls, 0);

	fakes[0].attach_fail = 0;
	set_maps(p, MAPS_RT0);
	assert_non_null(runtime__state(p, 0));
	runtime__poll(p, 11 * S);
	assert_int_equal(fakes[0].polls, 1);
	free_proc(p);
}

/* Claims and symbols come from the runtimes that are attached, first claimer first. */
static void test_runtime_claims_and_symbolize_go_through_runtimes(void **state)
{
	struct rt_symbol rs = { 0 };
	struct proc *p = new_proc(0, MAPS_RT0);

	assert_true(runtime__claims(p, 0x7f0000010000, 0));
	assert_true(runtime__claims(p, 0x7f000001ffff, 1));
	assert_int_equal(fakes[0].in_file_seen, 1);
	assert_false(runtime__claims(p, 0x7f0000020000, 0));
	/* fake1 is not attached: its range is nobody's. */
	assert_false(runtime__claims(p, 0x7f1000010000, 0));
	assert_int_equal(fakes[1].claims_asked, 0);

	assert_int_equal(runtime__symbolize(p, 0x7f0000010010, 7, &rs), 0);
	assert_string_equal(rs.name, "Zero::Run");
	assert_int_equal(runtime__symbolize(p, 0x7f1000010010, 7, &rs), -ENOENT);
	assert_int_equal(fakes[1].symbolized, 0);

	set_maps(p, MAPS_BOTH);
	assert_true(runtime__claims(p, 0x7f1000010000, 0));
	memset(&rs, 0, sizeof(rs));
	assert_int_equal(runtime__symbolize(p, 0x7f1000010010, 7, &rs), 0);
	assert_string_equal(rs.name, "One::Run");
	assert_int_equal(fakes[0].symbolized, 3);	/* asked first each time, said no */

	/* A runtime that claims but cannot name: -ENOENT. */
	fakes[0].sym = NULL;
	assert_int_equal(runtime__symbolize(p, 0x7f0000010010, 7, &rs), -ENOENT);
	assert_int_equal(runtime__symbolize(p, 0x12345, 7, &rs), -ENOENT);
	free_proc(p);
}

/* No env (a proctab without runtimes): nothing is detected, nothing claimed. */
static void test_runtime_no_env_does_nothing(void **state)
{
	struct rt_symbol rs;
	struct proc *p = new_proc(0, NULL);
	char buf[64];

	p->env = NULL;
	set_maps(p, MAPS_BOTH);
	runtime__poll(p, 1 * S);
	assert_false(runtime__has(p, 0));
	assert_int_equal(fakes[0].detects + fakes[1].detects, 0);
	assert_false(runtime__claims(p, 0x7f0000010000, 0));
	assert_int_equal(runtime__symbolize(p, 0x7f0000010000, 0, &rs), -ENOENT);
	runtime__describe(p, buf, sizeof(buf));
	assert_string_equal(buf, "");
	free_proc(p);
}

/* describe joins the runtimes' lines with "; ", skips empty ones, never overflows. */
static void test_runtime_describe_joins(void **state)
{
	struct proc *p = new_proc(0, MAPS_PLAIN);
	char buf[128], small[12];

	runtime__describe(p, buf, sizeof(buf));
	assert_string_equal(buf, "");
	set_maps(p, MAPS_BOTH);
	runtime__describe(p, buf, sizeof(buf));
	assert_string_equal(buf, "fake0: ok; fake1: ok");

	fakes[0].desc = "";
	runtime__describe(p, buf, sizeof(buf));
	assert_string_equal(buf, "fake1: ok");
	fakes[0].desc = "fake0: ok";
	fakes[1].desc = "";
	runtime__describe(p, buf, sizeof(buf));
	assert_string_equal(buf, "fake0: ok");

	fakes[1].desc = "fake1: a longer line";
	memset(small, 'X', sizeof(small));
	runtime__describe(p, small, sizeof(small));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_memory_equal(small, "fake0: ok; ", sizeof(small) - 1);
	free_proc(p);
}

/* detach_all detaches every attached instance (last runtime first) and clears them; the process
 * still has those runtimes (for the report), whose last description stays, and none is attached
 * again, even when its mappings change. */
static void test_runtime_detach_all_frees_and_clears(void **state)
{
	struct proc *p = new_proc(0, MAPS_BOTH);
	void *s0 = runtime__state(p, 0), *s1 = runtime__state(p, 1);

	fakes[0].poll_ret = RT_WAIT;
	runtime__poll(p, 10 * S);
	runtime__detach_all(p);
	assert_int_equal(fakes[0].detaches, 1);
	assert_int_equal(fakes[1].detaches, 1);
	assert_ptr_equal(fakes[0].state_seen, s0);
	assert_ptr_equal(fakes[1].state_seen, s1);
	assert_int_equal(fakes[1].detach_seq, 1);
	assert_int_equal(fakes[0].detach_seq, 2);
	for (int id = 0; id < 2; id++) {	/* the two fakes */
		assert_null(runtime__state(p, id));
		assert_true(runtime__has(p, id));
		assert_int_equal(p->rt[id].last, 0);
		assert_int_equal(p->rt[id].next_poll_ns, 0);
		assert_int_equal(p->rt[id].backoff_ns, 0);
	}
	{
		char buf[128];

		runtime__describe(p, buf, sizeof(buf));
		assert_string_equal(buf, "fake0: ok; fake1: ok");	/* as they said at detach */
	}
	/* Again: nothing left to detach (free_proc does it once more); nothing attached again. */
	runtime__detach_all(p);
	assert_int_equal(fakes[0].detaches + fakes[1].detaches, 2);
	runtime__poll(p, 11 * S);
	runtime__maps_changed(p);
	runtime__poll(p, 12 * S);
	assert_int_equal(fakes[0].polls, 1);
	assert_int_equal(fakes[0].attaches, 1);
	free_proc(p);
}

/* release_idle reaches the runtimes that have one, once each, with the session's idle time. */
static void test_runtime_release_idle_once_per_runtime(void **state)
{
	struct runtime_env idle = env;

	idle_releases = 0;
	idle.idle_release_ns = 30 * S;
	runtime__release_idle(&idle, 100 * S);
	assert_int_equal(idle_releases, 1);
	assert_int_equal(idle_now_seen, 100 * S);
	assert_int_equal(idle_ns_seen, 30 * S);
}

/* Out-of-range ids are answered, not read past the array. */
static void test_runtime_bad_id(void **state)
{
	struct proc *p = new_proc(0, MAPS_BOTH);

	assert_null(runtime__state(p, RT__MAX));
	assert_false(runtime__has(p, RT__MAX));
	free_proc(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_runtime_detect_on_maps_change_attaches, setup),
		cmocka_unit_test_setup(test_runtime_detect_through_proctab, setup),
		cmocka_unit_test_setup(test_runtime_ready_polled_every_tick, setup),
		cmocka_unit_test_setup(test_runtime_done_not_polled_until_maps_change, setup),
		cmocka_unit_test_setup(test_runtime_wait_backs_off_doubling, setup),
		cmocka_unit_test_setup(test_runtime_error_backs_off_like_wait, setup),
		cmocka_unit_test_setup(test_runtime_wait_young_stays_at_base, setup),
		cmocka_unit_test_setup(test_runtime_wake_makes_waiting_due, setup),
		cmocka_unit_test_setup(test_runtime_attach_failure_retried, setup),
		cmocka_unit_test_setup(test_runtime_claims_and_symbolize_go_through_runtimes, setup),
		cmocka_unit_test_setup(test_runtime_no_env_does_nothing, setup),
		cmocka_unit_test_setup(test_runtime_describe_joins, setup),
		cmocka_unit_test_setup(test_runtime_detach_all_frees_and_clears, setup),
		cmocka_unit_test_setup(test_runtime_release_idle_once_per_runtime, setup),
		cmocka_unit_test_setup(test_runtime_bad_id, setup),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
