/* test_engine.c: unit tests for user/session/engine.c with the BPF session replaced by a fake
 * (engine_fx.c: the ring buffer is a queue of sample records the test writes) and process events
 * unavailable. Samples of this process go from a record to a window to a profile. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "bpfsession.h"
#include "engine.h"
#include "procevents.h"
#include "profile.h"
#include "proctab.h"
#include "testutil.h"
#include "util.h"
#include "engine_fx.h"


/* The engine opened again with f->o as the test changed it, attached. */
static void reopen(struct fx *f)
{
	int rc = 0;

	engine__free(f->e);
	f->e = engine__open(&f->o, &rc);
	assert_non_null(f->e);
	assert_int_equal(engine__attach(f->e), 0);
}

static void test_engine_sample_to_profile(void **state)
{
	struct fx *f = *state;
	uint64_t user[2] = { (uint64_t)(uintptr_t)test_engine_marked_function + 4,
			     (uint64_t)(uintptr_t)test_engine_marked_function + 8 };
	struct engine_counters c;
	struct pf_sample_view s;
	struct profile *prof;
	char tid[16];

	queue_sample(user, 1, 0);
	queue_sample(user, 1, 0);
	prof = build(f, 2, &c);
	assert_int_equal(profile__total(prof), 2);
	assert_int_equal(profile__sample_count(prof), 1);	/* the same stack and labels */
	assert_int_equal(profile__sample(prof, 0, &s), 0);
	assert_int_equal(s.n_locs, 1);
	assert_string_equal(profile__location_name(prof, s.locs[0]), "test_engine_marked_function");
	snprintf(tid, sizeof(tid), "%d", (int)gettid());
	assert_string_equal(profile__label(&s, "tid"), tid);
	assert_string_equal(profile__label(&s, "thread_name"), "worker");
	assert_string_equal(profile__label(&s, "process_name"), "test_engine");
	assert_int_equal(c.malformed, 0);
	assert_int_equal(c.windows, 1);
	profile__free(prof);
}

/* A record shorter than its header says is counted and left out, the next one taken. */
static void test_engine_malformed_record_counted(void **state)
{
	struct fx *f = *state;
	uint64_t user[2] = { (uint64_t)(uintptr_t)test_engine_marked_function + 4,
			     (uint64_t)(uintptr_t)test_engine_marked_function + 8 };
	struct engine_counters c;
	struct profile *prof;

	queue_sample(user, 2, 8);	/* says 2 frames, holds 1 */
	queue_sample(user, 2, 0);
	prof = build(f, 2, &c);
	assert_int_equal(c.malformed, 1);
	assert_int_equal(profile__total(prof), 1);
	profile__free(prof);
}

/* --dotnet-only: a process without the .NET runtime is counted, not profiled. */
static void test_engine_dotnet_only_leaves_others_out(void **state)
{
	struct fx *f = *state;
	uint64_t user[1] = { (uint64_t)(uintptr_t)test_engine_marked_function + 4 };
	struct engine_counters c;
	struct profile *prof;

	f->o.dotnet_only = 1;
	reopen(f);
	queue_sample(user, 1, 0);
	prof = build(f, 1, &c);
	assert_int_equal(c.not_target, 1);
	assert_int_equal(profile__total(prof), 0);
	profile__free(prof);
}

static int all_in_one(void *arg, struct proc *p)
{
	(void)arg;
	(void)p;
	return 0;
}

/* An idle process (unsampled for two windows' length, as in the agent) has its mappings let go
 * at a window's cut, counted; its next sample reads them again and is named. */
static void test_engine_idle_process_released(void **state)
{
	struct fx *f = *state;
	uint64_t user[1] = { (uint64_t)(uintptr_t)test_engine_marked_function + 4 };
	struct profile_opts po = { .period_ns = 10000000 };
	struct engine_counters c;
	struct agg_window *w;
	struct profile *prof;
	struct pf_sample_view s;
	struct proc *p;

	f->o.first_window_ns = f->o.interval_ns = 1000000000ull;	/* idle after 2 s unsampled */
	reopen(f);
	queue_sample(user, 1, 0);
	assert_int_equal(engine__poll(f->e, 0), 0);
	w = engine__cut(f->e);	/* the sample's window; the process was sampled in it: kept */
	assert_non_null(w);
	aggregate__window_free(w);
	p = proctab__find(engine__procs(f->e), getpid(), testutil__start_ticks(getpid()));
	assert_non_null(p);
	assert_non_null(p->vmas);
	engine__counters(f->e, &c);
	assert_int_equal(c.procs_idle_released, 0);

	p->last_sample_ns = now_ns() - 3000000000ull;	/* as if three seconds passed unsampled */
	w = engine__cut(f->e);
	assert_non_null(w);
	aggregate__window_free(w);
	engine__counters(f->e, &c);
	assert_int_equal(c.procs_idle_released, 1);
	assert_null(p->vmas);

	queue_sample(user, 1, 0);	/* sampled again: its mappings read again, its frame named */
	assert_int_equal(engine__poll(f->e, 0), 0);
	assert_non_null(p->vmas);
	w = engine__cut(f->e);
	assert_non_null(w);
	prof = profile__new(&po);
	assert_non_null(prof);
	assert_true(engine__build(f->e, w, all_in_one, NULL, &prof, 1) >= 0);
	aggregate__window_free(w);
	assert_int_equal(profile__total(prof), 1);
	assert_int_equal(profile__sample(prof, 0, &s), 0);
	assert_string_equal(profile__location_name(prof, s.locs[0]), "test_engine_marked_function");
	profile__free(prof);
}

/* SIGUSR1 pauses the sampling and SIGUSR2 resumes it, at the next poll; the time paused is
 * counted. A pause the session refuses leaves the sampling as it was. */
static void test_engine_pause_signals(void **state)
{
	struct fx *f = *state;
	struct engine_counters c;
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	engine__catch_pause_signals();
	raise(SIGUSR1);
	assert_int_equal(fake_paused, 0);	/* not before the next poll */
	assert_int_equal(engine__poll(f->e, 0), 0);
	assert_int_equal(fake_paused, 1);
	engine__counters(f->e, &c);
	assert_true(c.paused_ns > 0);
	raise(SIGUSR2);
	assert_int_equal(engine__poll(f->e, 0), 0);
	assert_int_equal(fake_paused, 0);

	fake_pause_rc = -EPERM;
	raise(SIGUSR1);
	assert_int_equal(engine__poll(f->e, 0), 0);	/* said, and sampling goes on */
	fake_pause_rc = 0;
	assert_int_equal(engine__poll(f->e, 0), 0);
	assert_int_equal(fake_paused, 0);	/* the refused pause is not tried again */
	sigaction(SIGUSR1, &dfl, NULL);
	sigaction(SIGUSR2, &dfl, NULL);
}

/* With process events: an exec of a sampled process starts its new program (counted); a sample
 * taken before the exec but handled after it is filed before it. An event of a process not
 * profiled, and one of an unknown type, are counted. */
static void test_engine_exec_event(void **state)
{
	struct fx *f = *state;
	uint64_t user[1] = { (uint64_t)(uintptr_t)test_engine_marked_function + 4 };
	struct engine_counters c;
	struct profile *prof;

	fake_events = 1;
	reopen(f);
	queue_sample(user, 1, 0);
	assert_int_equal(engine__poll(f->e, 0), 0);	/* known and sampled */
	queue_sample(user, 1, 0);	/* taken before the exec, handled after it */
	queue_event(SP_EV_EXEC, getpid(), "newprog");
	queue_event(SP_EV_CTX_MAPPED, getpid() + 1, "other");	/* not a -p process */
	queue_event(99, getpid(), "bad");
	assert_int_equal(engine__poll(f->e, 0), 0);
	queue_sample(user, 1, 0);	/* the new program's */
	prof = build(f, 3, &c);
	assert_int_equal(c.ev_unavailable, 0);
	assert_int_equal(c.ev_exec, 1);
	assert_int_equal(c.ev_before_exec, 1);
	assert_int_equal(c.ev_not_target, 1);
	assert_int_equal(c.malformed, 1);
	assert_int_equal(profile__total(prof), 3);
	profile__free(prof);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_engine_sample_to_profile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_malformed_record_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_dotnet_only_leaves_others_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_idle_process_released, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_pause_signals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_exec_event, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

