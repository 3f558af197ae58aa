/* memfd_flood.c: a hostile process for tests/integration/procevents.sh: it creates and maps a
 * memfd named like the hook's span table (an empty one) and announces it as the hook does
 * (SP_PRCTL_ANNOUNCE) in a loop, for SECONDS, so each round is a span-table event. Prints its pid first, and at the end how many rounds it made.
 * Usage: memfd_flood SECONDS */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "profiler.h"

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	struct timespec t0, t;
	long rounds = 0;

	printf("%d\n", (int)getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		int fd = memfd_create("spanprof-ctx", MFD_CLOEXEC);
		void *p;

		if (fd < 0 || ftruncate(fd, 4096))
			return 1;
		p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			return 1;
		prctl(SP_PRCTL_ANNOUNCE, (unsigned long)p, 4096UL, (unsigned long)SP_CTX_ABI, 0UL);
		munmap(p, 4096);
		close(fd);
		rounds++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	printf("rounds %ld\n", rounds);
	return 0;
}
