/* leafcall.c: a native program whose hot leaf has no frame, for the frameless-leaf tests. Built
 * -O2 -fno-omit-frame-pointer: gcc still leaves mix() (a leaf that needs no stack) without a frame,
 * so a frame-pointer walk from inside it skips its caller. caller_a calls it three times for every
 * call from caller_b: 75 % of mix's samples belong under caller_a, 25 % under caller_b. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 200000

static volatile unsigned long sink;

__attribute__((noinline, noipa)) unsigned long mix(unsigned long x, long n)
{
	for (long i = 0; i < n; i++) {
		x = x * 6364136223846793005ul + 1442695040888963407ul;
		x ^= x >> 29;
	}
	return x;
}

__attribute__((noinline, noipa)) void caller_a(long n)
{
	sink += mix(sink, n);
	sink += mix(sink + 1, n);
	sink += mix(sink + 2, n);
}

__attribute__((noinline, noipa)) void caller_b(long n)
{
	sink += mix(sink + 3, n);
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5, end = now() + seconds;

	printf("%d\n", getpid());
	fflush(stdout);
	while (now() < end) {
		caller_a(ROUNDS);
		caller_b(ROUNDS);
	}
	return 0;
}
