/* test_talker.c: talks run on worker threads (talker.h): the caller never waits on one it does not
 * take back, talks beyond TALK_WORKERS wait their turn, a queued one can be dropped unrun, an
 * abandoned one is freed when it ends. Each talk blocks on a pipe until the test lets it go. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "talker.h"

struct job {
	int fd;			/* read end: the talk blocks until a byte comes */
	int ran, value;
};

static volatile int freed;	/* by a worker */

static int run(void *arg)
{
	struct job *j = arg;
	char c;

	j->ran = 1;
	return read(j->fd, &c, 1) == 1 ? j->value : -EIO;
}

static void free_job(void *arg)
{
	freed++;
	free(arg);
}

static struct job *job(int fds[2], int value)
{
	struct job *j = calloc(1, sizeof(*j));

	assert_non_null(j);
	assert_int_equal(pipe(fds), 0);
	j->fd = fds[0];
	j->value = value;
	return j;
}

/* Until the stats say n talks are running (the workers took them), at most 5 s. */
static void wait_running(uint32_t n)
{
	struct talk_stats st;

	for (int i = 0; i < 5000; i++) {
		talk__stats(&st);
		if (st.running == n)
			return;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	fail_msg("%u talks running, want %u", st.running, n);
}

static void test_talker_runs_beside_the_caller(void **state)
{
	enum { N = TALK_WORKERS + 2 };
	int fds[N][2], r;
	struct job *jobs[N];
	struct talk *t[N];
	struct talk_stats st;

	for (int i = 0; i < N; i++) {
		jobs[i] = job(fds[i], 100 + i);
		t[i] = talk__start(run, jobs[i], free_job);
		assert_non_null(t[i]);
	}
	/* TALK_WORKERS run, blocked; the others wait their turn; the caller is not held. */
	wait_running(TALK_WORKERS);
	talk__stats(&st);
	assert_int_equal(st.queued, N - TALK_WORKERS);
	for (int i = 0; i < N; i++)
		assert_int_equal(talk__poll(t[i], &r), 0);

	/* One let go: it ends with its result; a queued one takes its worker. */
	assert_int_equal(write(fds[0][1], "x", 1), 1);
	assert_int_equal(talk__finish(t[0], &r), 1);
	assert_int_equal(r, 100);
	assert_true(jobs[0]->ran);
	wait_running(TALK_WORKERS);

	/* The last one is still queued: taken back, it never runs. */
	assert_int_equal(talk__finish(t[N - 1], &r), 0);
	assert_false(jobs[N - 1]->ran);

	/* One running, abandoned: freed (free_arg) once it ends, not before. */
	assert_int_equal(freed, 0);
	talk__abandon(t[1]);
	assert_int_equal(freed, 0);
	assert_int_equal(write(fds[1][1], "x", 1), 1);
	for (int i = 0; i < 5000 && !freed; i++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	assert_int_equal(freed, 1);

	/* The rest let go and taken back. */
	for (int i = 2; i < N - 1; i++) {
		assert_int_equal(write(fds[i][1], "x", 1), 1);
		assert_int_equal(talk__finish(t[i], &r), 1);
		assert_int_equal(r, 100 + i);
	}
	talk__stats(&st);
	assert_int_equal(st.running, 0);
	assert_int_equal(st.queued, 0);
	assert_int_equal(st.cancelled, 1);
	assert_int_equal(st.abandoned, 1);
	for (int i = 0; i < N; i++) {
		close(fds[i][0]);
		close(fds[i][1]);
		if (i != 1)
			free(jobs[i]);	/* taken back: the caller's */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_talker_runs_beside_the_caller),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
