/* forged_stacks.c: a hostile process for the cardinality caps: it spins with its frame pointer on
 * a forged chain of random return addresses, so every sample shows frames never seen before.
 * Usage: forged_stacks SECONDS; prints its pid once running. x86-64 only. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define DEPTH 24

/* About a millisecond of work with rbp pointing at chain: the sampler walks the forged frames. */
static void __attribute__((noinline)) spin_on(unsigned long *chain)
{
#if defined(__x86_64__)
	__asm__ volatile("push %%rbp\n\t"
			 "mov %0, %%rbp\n\t"
			 "mov $1000000, %%rcx\n"
			 "1:\n\t"
			 "dec %%rcx\n\t"
			 "jnz 1b\n\t"
			 "pop %%rbp\n\t"
			 :
			 : "r"(chain)
			 : "rcx", "memory");
#else
	(void)chain;
#endif
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	unsigned long chain[2 * DEPTH + 2];
	struct timespec t0, t;
	unsigned seed = getpid();

	printf("%d\n", getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < DEPTH; i++) {
			chain[2 * i] = (unsigned long)&chain[2 * (i + 1)];
			chain[2 * i + 1] = 0x100000000ul + ((unsigned long)rand_r(&seed) << 4);
		}
		chain[2 * DEPTH] = 0;
		chain[2 * DEPTH + 1] = 0;
		spin_on(chain);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return 0;
}
