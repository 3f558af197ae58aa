/* pingpong.c: two threads passing one byte back and forth over two pipes, as fast as they can:
 * every round trip is two blocking reads, two wake-ups and (on one CPU or a busy host) two
 * context switches. For the off-CPU benchmark (scripts/bench-offcpu.sh): prints "ready" once both
 * threads run, then after SECONDS "roundtrips N rate R/s". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];
static volatile int stop;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *echo(void *arg)
{
	char b;

	(void)arg;
	while (read(ping[0], &b, 1) == 1 && write(pong[1], &b, 1) == 1)
		;
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10, t0;
	unsigned long n = 0;
	pthread_t t;
	char b = 1;

	if (secs <= 0 || pipe(ping) || pipe(pong) || pthread_create(&t, NULL, echo, NULL)) {
		fprintf(stderr, "usage: pingpong [SECONDS > 0]\n");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	t0 = now_s();
	while (!stop) {
		if (write(ping[1], &b, 1) != 1 || read(pong[0], &b, 1) != 1)
			return 1;
		if (++n % 1024 == 0 && now_s() - t0 >= secs)
			stop = 1;
	}
	printf("roundtrips %lu rate %.0f/s\n", n, n / (now_s() - t0));
	return 0;
}
