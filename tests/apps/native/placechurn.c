/* placechurn.c: a neighbour that blocks at a new place every time, and a victim that blocks long at
 * one place, for the off-CPU cache of places (tests/integration/offcpu-churn.sh).
 *
 *   placechurn churn SECONDS THREADS   THREADS threads, each recursing to a depth that changes at
 *                                      every block (a new user stack pointer: a new place), then
 *                                      sleeping 1 us there: all short blocks, each at a new place
 *   placechurn victim SECONDS MS       one thread sleeping MS ms in victim_wait(), over and over:
 *                                      every block long, always at the same place
 *   placechurn sleeper SECONDS MS      the same in sleeper_wait(): a victim told apart from
 *                                      another (tests/integration/offcpu-flood.sh)
 *   placechurn threads SECONDS LIVE N  LIVE threads at a time, each sleeping 20 ms N times (one in
 *                                      four in wait_b(), the others in wait_a()) and
 *                                      exiting, replaced at once (N 0: they never exit), for the
 *                                      cap on threads with a block record
 *                                      (tests/integration/offcpu-threads.sh)
 *
 * Prints "ready" once its threads run, and after SECONDS "blocks N" (threads: "threads N", how
 * many were started). Frame pointers kept. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEPTHS 4096	/* twice the off-CPU cache of places: never a repeat in the cache */

static volatile int stop;
static unsigned long blocks[64];

static void sleep_ns(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

	nanosleep(&ts, NULL);
}

/* Recurse `depth` frames, then block: each depth is its own place (its own sp). */
static __attribute__((noinline)) int churn_at(int depth)
{
	volatile char frame[48];

	frame[0] = (char)depth;
	if (depth > 0)
		return churn_at(depth - 1) + frame[0];
	sleep_ns(1000);
	return frame[0];
}

static void *churn(void *arg)
{
	unsigned long i = (unsigned long)arg, n = 0;
	int depth = (int)(i * 997) % DEPTHS;

	while (!stop) {
		churn_at(depth);
		/* Back to the place 8 back: past the 4 a thread remembers, so the cache is asked for
		 * it again and marks it used. */
		churn_at((depth + DEPTHS - 8) % DEPTHS);
		depth = (depth + 1) % DEPTHS;
		n += 2;
	}
	blocks[i] = n;
	return NULL;
}

static __attribute__((noinline)) void victim_wait(long ms)
{
	sleep_ns(ms * 1000000L);
	__asm__ volatile("" ::: "memory");	/* keeps the call a call, not a tail call */
}

static __attribute__((noinline)) void sleeper_wait(long ms)
{
	sleep_ns(ms * 1000000L);
	__asm__ volatile("" ::: "memory");
}

static void (*victim_at)(long ms) = victim_wait;

static void *victim(void *arg)
{
	long ms = (long)arg;
	unsigned long n = 0;

	while (!stop) {
		victim_at(ms);
		n++;
	}
	blocks[0] = n;
	return NULL;
}

static volatile int live;
static long thread_blocks;

/* Where the threads block: one in four in wait_b, the others in wait_a, so that a profile can be
 * checked for how it splits the time between two stacks (3:1). */
static __attribute__((noinline)) void wait_a(void)
{
	sleep_ns(20 * 1000000L);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void wait_b(void)
{
	sleep_ns(20 * 1000000L);
	__asm__ volatile("" ::: "memory");
}

static void *short_lived(void *arg)
{
	long i, n = (long)arg;

	for (i = 0; (!thread_blocks || i < thread_blocks) && !stop; i++)
		if (n % 4 == 0)
			wait_b();
		else
			wait_a();
	__sync_fetch_and_sub(&live, 1);
	return NULL;
}

/* LIVE threads at a time until SECONDS are up; returns how many were started, or -1. */
static long run_threads(double secs, long nlive)
{
	struct timespec t0, now;
	pthread_attr_t attr;
	pthread_t t;
	long started = 0;
	int said = 0;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 << 10);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		while (live < nlive) {
			__sync_fetch_and_add(&live, 1);
			if (pthread_create(&t, &attr, short_lived, (void *)started))
				return -1;
			started++;
		}
		if (!said) {
			printf("ready\n");
			fflush(stdout);
			said = 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec + (now.tv_nsec - t0.tv_nsec) / 1e9 >= secs)
			break;
		sleep_ns(1000000L);
	}
	stop = 1;
	while (live > 0)
		sleep_ns(1000000L);
	return started;
}

int main(int argc, char **argv)
{
	pthread_t t[64];
	double secs = 0;
	long arg = 0, i, nthreads;
	unsigned long total = 0;
	int is_churn = argc == 4 && !strcmp(argv[1], "churn");
	int is_sleeper = argc == 4 && !strcmp(argv[1], "sleeper");

	if (argc == 5 && !strcmp(argv[1], "threads") && (secs = atof(argv[2])) > 0 &&
	    (arg = atol(argv[3])) > 0 && (thread_blocks = atol(argv[4])) >= 0) {
		long started = run_threads(secs, arg);

		if (started < 0) {
			fprintf(stderr, "placechurn: pthread_create failed\n");
			return 1;
		}
		printf("threads %ld\n", started);
		return 0;
	}
	if (argc == 4) {
		secs = atof(argv[2]);
		arg = atol(argv[3]);
	}
	if (argc != 4 || (!is_churn && !is_sleeper && strcmp(argv[1], "victim")) || secs <= 0 ||
	    arg <= 0 || (is_churn && arg > 64)) {
		fprintf(stderr, "usage: placechurn churn SECONDS THREADS(1-64) | victim SECONDS MS | "
			"sleeper SECONDS MS | threads SECONDS LIVE N\n");
		return 2;
	}
	if (is_sleeper)
		victim_at = sleeper_wait;
	nthreads = is_churn ? arg : 1;
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&t[i], NULL, is_churn ? churn : victim,
				   is_churn ? (void *)i : (void *)arg)) {
			fprintf(stderr, "placechurn: pthread_create failed\n");
			return 1;
		}
	printf("ready\n");
	fflush(stdout);
	sleep_ns((long)(secs * 1e9));
	stop = 1;
	for (i = 0; i < nthreads; i++) {
		pthread_join(t[i], NULL);
		total += blocks[i];
	}
	printf("blocks %lu\n", total);
	return 0;
}
