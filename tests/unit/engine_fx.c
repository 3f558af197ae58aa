/* engine_fx.c: the fake BPF session and process events, and the engine fixture (engine_fx.h). */
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
#include "engine_fx.h"

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

struct bpfsession_opts fake_opts;
int fake_checks, fake_opens, fake_check_rc, fake_open_rc;
void (*fake_on_drain)(void);

int bpfsession__check(const struct bpfsession_opts *o)
{
	fake_checks++;
	fake_opts = *o;
	return fake_check_rc;
}

int bpfsession__ncpus(const struct bpfsession *s) { return 1; }

struct bpfsession *bpfsession__open(const struct bpfsession_opts *o, bpfsession_sample_fn fn,
				    void *ctx, int *rc)
{
	fake_opens++;
	fake_opts = *o;
	if (fake_open_rc) {
		*rc = fake_open_rc;
		return NULL;
	}
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
	if (fake_on_drain)
		fake_on_drain();
	for (int i = 0; i < s->n; i++) {
		s->fn(s->ctx, s->rec[i], s->len[i]);
		free(s->rec[i]);
	}
	s->n = 0;
	return 0;
}

int bpfsession__poll(struct bpfsession *s, int timeout_ms) { return bpfsession__drain(s); }
int bpfsession__attach(struct bpfsession *s) { return 0; }
int fake_paused, fake_pause_rc;

int bpfsession__pause(struct bpfsession *s, int paused)
{
	if (fake_pause_rc)
		return fake_pause_rc;
	fake_paused = paused;
	return 0;
}
void bpfsession__detach(struct bpfsession *s) {}
int bpfsession__epoll_fd(const struct bpfsession *s) { return -1; }
int bpfsession__ctx_map_fd(const struct bpfsession *s) { return -1; }
int bpfsession__gens_fd(const struct bpfsession *s) { return -1; }
uint64_t *bpfsession__gen(struct bpfsession *s, int which) { return NULL; }
int bpfsession__is_target(const struct bpfsession *s, uint32_t pid) { return 0; }
int bpfsession__offcpu_track(struct bpfsession *s, uint32_t pid, int on) { return 0; }

uint64_t fake_counters[SP_CNT__MAX];

/* The counters' names, as bpfsession.c has them from the one table in profiler.h. */
const char *const sp_counter_names[SP_CNT__MAX] = {
#define SP_COUNTER_NAME(id, name, help) [SP_CNT_##id] = name,
	SP_COUNTERS(SP_COUNTER_NAME)
#undef SP_COUNTER_NAME
};

/* The sampler's run time is not measured. */
int bpfsession__run_time(const struct bpfsession *s, uint64_t *run_time_ns, uint64_t *run_cnt)
{
	return -ENODATA;
}

int bpfsession__offcpu_run_time(const struct bpfsession *s, uint64_t *run_time_ns, uint64_t *run_cnt)
{
	return -ENODATA;
}

/* Long blocks' stacks from their places: no rseq_update here. */
int bpfsession__offcpu_at_return(const struct bpfsession *s, uint64_t *skipped, const char **why)
{
	*skipped = 0;
	*why = "this kernel has no rseq_update";
	return 0;
}

int bpfsession__counters(const struct bpfsession *s, uint64_t out[SP_CNT__MAX])
{
	memcpy(out, fake_counters, sizeof(fake_counters));
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

/* The fake process events: off unless fake_events; then a queue that each consume hands over. */
int fake_events;
static struct {
	procevents_fn fn;
	void *ctx;
	struct sp_proc_event q[8];
	int n;
} fake_pe;

struct procevents *procevents__open(int ctx_map_fd, int gens_fd, procevents_fn fn, void *ctx)
{
	if (!fake_events) {
		errno = ENOSYS;
		return NULL;
	}
	fake_pe.fn = fn;
	fake_pe.ctx = ctx;
	fake_pe.n = 0;
	return (struct procevents *)&fake_pe;
}

void queue_event(uint32_t type, uint32_t tgid, const char *comm)
{
	struct sp_proc_event *ev = &fake_pe.q[fake_pe.n];

	assert_true(fake_pe.n < (int)(sizeof(fake_pe.q) / sizeof(fake_pe.q[0])));
	fake_pe.n++;
	*ev = (struct sp_proc_event){ .time_ns = now_ns(), .type = type, .tgid = tgid,
				      .proc_start_ticks = tgid == (uint32_t)getpid() ?
							  testutil__start_ticks(tgid) : 1 };
	strncpy(ev->comm, comm, sizeof(ev->comm));
}

int procevents__attach(struct procevents *pe) { return fake_events ? 0 : -ENOSYS; }
int procevents__ctx_err(const struct procevents *pe) { return -ENOSYS; }
enum procevents_ctx_src procevents__ctx_src(const struct procevents *pe) { return PE_CTX_NONE; }
const char *procevents__ctx_src_name(enum procevents_ctx_src src) { return "none"; }
int procevents__fd(const struct procevents *pe) { return -1; }
int procevents__consume(struct procevents *pe)
{
	for (int i = 0; i < fake_pe.n; i++)
		fake_pe.fn(fake_pe.ctx, &fake_pe.q[i]);
	fake_pe.n = 0;
	return 0;
}
int procevents__counters(const struct procevents *pe, uint64_t out[SP_EV_CNT__MAX]) { return 0; }
void procevents__free(struct procevents *pe) {}

/* Their names, as procevents.c has them from profiler.h. */
const char *const sp_ev_counter_names[SP_EV_CNT__MAX] = {
#define SP_EV_COUNTER_NAME(id, name, help) [SP_EV_CNT_##id] = name,
	SP_EV_COUNTERS(SP_EV_COUNTER_NAME)
#undef SP_EV_COUNTER_NAME
};

/* ---- samples ------------------------------------------------------------------------------- */

/* A function of this program for user frames to land in (not inlined, not folded away). */
__attribute__((noinline)) int test_engine_marked_function(int x)
{
	return x * 3 + 1;
}

/* A record of this process (tid: this thread) with n user frames, queued in the fake ring. */
void queue_sample(const uint64_t *user, uint16_t n, size_t cut)
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


static uint32_t self_pid[1];

void fake_reset(void)
{
	memset(fake_counters, 0, sizeof(fake_counters));
	memset(&fake_opts, 0, sizeof(fake_opts));
	fake_checks = fake_opens = fake_check_rc = fake_open_rc = 0;
	fake_paused = fake_pause_rc = fake_events = 0;
	fake_on_drain = NULL;
}

int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	int rc = 0;

	fake_reset();
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

int teardown(void **state)
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
struct profile *build(struct fx *f, uint64_t received, struct engine_counters *c)
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
