/* test_engine.c: unit tests for user/session/engine.c with the BPF session replaced by a fake
 * (defined here: the ring buffer is a queue of sample records the test writes) and process events
 * unavailable. Samples of this process go from a record to a window to a profile. */
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

#include "bpfsession.h"
#include "engine.h"
#include "procevents.h"
#include "profile.h"
#include "proctab.h"
#include "testutil.h"
#include "util.h"

/* ---- the fake BPF session and process events ---------------------------------------------- */

#define QUEUE_MAX 16

struct bpfsession {
	bpfsession_sample_fn fn;
	void *ctx;
	uint8_t *rec[QUEUE_MAX];
	size_t len[QUEUE_MAX];
	int n;
};

static struct bpfsession *fake;	/* the one the engine opened */

struct bpfsession *bpfsession__open(const struct bpfsession_opts *o, bpfsession_sample_fn fn,
				    void *ctx, int *rc)
{
	fake = calloc(1, sizeof(*fake));
	if (!fake) {
		*rc = 2;
		return NULL;
	}
	fake->fn = fn;
	fake->ctx = ctx;
	return fake;
}

int bpfsession__drain(struct bpfsession *s)
{
	for (int i = 0; i < s->n; i++) {
		s->fn(s->ctx, s->rec[i], s->len[i]);
		free(s->rec[i]);
	}
	s->n = 0;
	return 0;
}

int bpfsession__poll(struct bpfsession *s, int timeout_ms) { return bpfsession__drain(s); }
int bpfsession__attach(struct bpfsession *s) { return 0; }
int bpfsession__pause(struct bpfsession *s, int paused) { return 0; }
void bpfsession__detach(struct bpfsession *s) {}
int bpfsession__epoll_fd(const struct bpfsession *s) { return -1; }
int bpfsession__ctx_map_fd(const struct bpfsession *s) { return -1; }
int bpfsession__is_target(const struct bpfsession *s, uint32_t pid) { return 0; }
int bpfsession__offcpu_track(struct bpfsession *s, uint32_t pid, int on) { return 0; }

int bpfsession__counters(const struct bpfsession *s, uint64_t out[SP_CNT__MAX])
{
	memset(out, 0, SP_CNT__MAX * sizeof(*out));
	return 0;
}

void bpfsession__free(struct bpfsession *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n; i++)
		free(s->rec[i]);
	free(s);
	fake = NULL;
}

struct procevents *procevents__open(int ctx_map_fd, procevents_fn fn, void *ctx)
{
	errno = ENOSYS;
	return NULL;
}

int procevents__attach(struct procevents *pe) { return -ENOSYS; }
int procevents__ctx_err(const struct procevents *pe) { return -ENOSYS; }
enum procevents_ctx_src procevents__ctx_src(const struct procevents *pe) { return PE_CTX_NONE; }
const char *procevents__ctx_src_name(enum procevents_ctx_src src) { return "none"; }
int procevents__fd(const struct procevents *pe) { return -1; }
int procevents__consume(struct procevents *pe) { return 0; }
int procevents__counters(const struct procevents *pe, uint64_t out[SP_EV_CNT__MAX]) { return 0; }
void procevents__free(struct procevents *pe) {}

/* ---- samples ------------------------------------------------------------------------------- */

/* A function of this program for user frames to land in (not inlined, not folded away). */
__attribute__((noinline)) int test_engine_marked_function(int x)
{
	return x * 3 + 1;
}

/* A record of this process (tid: this thread) with n user frames, queued in the fake ring. */
static void queue_sample(const uint64_t *user, uint16_t n, size_t cut)
{
	size_t len = sizeof(struct sp_sample) + n * 8ul;
	struct sp_sample *s = calloc(1, len);

	assert_non_null(s);
	s->time_ns = now_ns();
	s->proc_start_ticks = testutil__start_ticks(getpid());
	s->tgid = getpid();
	s->tid = gettid();
	s->n_user = n;
	memcpy(s->comm, "worker", 6);
	memcpy(s->pcomm, "test_engine", 11);
	memcpy(s->data, user, n * 8ul);
	assert_true(fake->n < QUEUE_MAX);
	fake->rec[fake->n] = (uint8_t *)s;
	fake->len[fake->n++] = len - cut;
}

struct fx {
	struct engine *e;
	struct engine_opts o;
	char state[PATH_MAX];
};

static uint32_t self_pid[1];

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	int rc = 0;

	assert_non_null(f);
	/* No leftovers of another spanprof are looked at: an empty state directory. */
	assert_non_null(testutil__mkdtemp(f->state, sizeof(f->state)));
	setenv("SPANPROF_STATE_DIR", f->state, 1);
	unsetenv("DEBUGINFOD_URLS");
	self_pid[0] = getpid();
	f->o.bpf.pids = self_pid;	/* -p: this process only (no scan of the host's /proc) */
	f->o.bpf.npids = 1;
	*state = f;
	f->e = engine__open(&f->o, &rc);
	assert_non_null(f->e);
	assert_int_equal(engine__attach(f->e), 0);
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	engine__free(f->e);
	testutil__rm_rf(f->state);
	unsetenv("SPANPROF_STATE_DIR");
	free(f);
	return 0;
}

static int everyone(void *arg, struct proc *p)
{
	return 0;
}

/* The queued records taken (asserts: received of them), then the one window so far built into
 * one profile; the counters. */
static struct profile *build(struct fx *f, uint64_t received, struct engine_counters *c)
{
	struct profile_opts po = { .period_ns = 10000000 };
	struct profile *prof = profile__new(&po);
	struct agg_window *w;

	assert_non_null(prof);
	assert_int_equal(engine__poll(f->e, 0), 0);
	engine__stop(f->e);
	w = engine__cut(f->e);
	assert_non_null(w);
	assert_true(engine__build(f->e, w, everyone, NULL, &prof, 1) >= 0);
	aggregate__window_free(w);
	engine__counters(f->e, c);
	assert_int_equal(c->received, received);
	return prof;
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
	int rc = 0;

	engine__free(f->e);
	f->o.dotnet_only = 1;
	f->e = engine__open(&f->o, &rc);
	assert_non_null(f->e);
	assert_int_equal(engine__attach(f->e), 0);
	queue_sample(user, 1, 0);
	prof = build(f, 1, &c);
	assert_int_equal(c.not_target, 1);
	assert_int_equal(profile__total(prof), 0);
	profile__free(prof);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_engine_sample_to_profile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_malformed_record_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_engine_dotnet_only_leaves_others_out, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
