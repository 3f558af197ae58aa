/* many_maps.c: a hostile process for the maps re-read cost: N separate mappings (alternating
 * protections, so none merge), then it spins. Usage: many_maps N SECONDS; prints its pid. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 60000;
	double seconds = argc > 2 ? atof(argv[2]) : 10;
	long page = sysconf(_SC_PAGESIZE);
	char *base = mmap(NULL, 2 * n * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct timespec t0, t;
	volatile unsigned long x = 0;

	if (base == MAP_FAILED)
		return 1;
	for (long i = 0; i < n; i++)	/* every other page readable: 2n - 1 mappings at most */
		mprotect(base + 2 * i * page, page, PROT_READ);
	printf("%d\n", getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1000000; i++)
			x += i;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return 0;
}
