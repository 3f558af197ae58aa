/* execer.c: a process that execs into another binary at the same addresses, for
 * tests/integration/procevents.sh. Built twice, -no-pie (text at the same fixed address in both):
 * STAGE 1 (exec_a) spins in spin_a for SECS_A seconds, then execs argv[1] (exec_b), which spins
 * in spin_b, the same code at the same address, for SECS_B seconds. A profiler that keeps the
 * first binary's symbols names exec_b's samples spin_a. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if STAGE == 1
#define SPIN spin_a
#else
#define SPIN spin_b
#endif

static volatile double sink;
static volatile int stage = STAGE;	/* read at run time: both builds have the same code */

static double elapsed(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

__attribute__((noinline, noipa)) void SPIN(double seconds)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (long i = 1; i <= 200000; i++)
			sink += (double)(i % 7) / (double)i;
	} while (elapsed(&t0) < seconds);
}

int main(int argc, char **argv)
{
	double secs = argc > 2 ? atof(argv[2]) : 1.5;

	printf("%d\n", (int)getpid());
	fflush(stdout);
	SPIN(secs);
	if (stage == 1 && argc > 1) {
		execv(argv[1], argv);
		perror("execv");
		return 1;
	}
	return 0;
}
