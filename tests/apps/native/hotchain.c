/* hotchain.c: a native program with a known hot path main -> outer -> inner_hot, for the
 * integration tests. Built with -O0 -fno-omit-frame-pointer: gcc 12 at -O1 and above leaves a
 * leaf that needs no stack (inner_hot) without a frame even with -fno-omit-frame-pointer and
 * -mno-omit-leaf-frame-pointer, which hides its caller from a frame-pointer unwinder. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

__attribute__((noinline, noipa)) static double inner_hot(long n)
{
	double x = 0;

	for (long i = 1; i <= n; i++)
		x += (double)(i % 7) / (double)i;
	return x;
}

__attribute__((noinline, noipa)) static void outer(double seconds)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sink += inner_hot(2000000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

/* hotchain [SECONDS [PAUSE SECONDS2]]: busy SECONDS (5), then, when given, asleep PAUSE and
 * busy SECONDS2 again: one process idle in the middle. */
int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;

	printf("%d\n", getpid());
	fflush(stdout);
	outer(seconds);
	if (argc > 3) {
		usleep((useconds_t)(atof(argv[2]) * 1e6));
		outer(atof(argv[3]));
	}
	return 0;
}
