/* forged_stacks.c: a hostile process for the cardinality caps: it spins with its frame pointer on
 * a forged chain of random return addresses, so every sample shows frames never seen before.
 * With "collide", the addresses are drawn from a pool forged against the frame table's former
 * unkeyed hash (Fibonacci hashing of the lookup address, return address - 1): all of them share
 * one slot in tables of up to 2^16 slots. With "pool", from a pool of random ones as large (the
 * baseline for collide). Usage: forged_stacks SECONDS [collide|pool]; prints its pid once
 * running (after the pool is made). x86-64 only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

#define POOL 60000

/* Distinct addresses, forged to collide or random, used in turn. */
static unsigned long *make_pool(int collide, unsigned seed)
{
	unsigned long *pool = malloc(POOL * sizeof(*pool));
	uint64_t a = 0x100000000ul;

	for (size_t n = 0; pool && n < POOL; n++) {
		if (collide) {
			do
				a += 16;
			while (((a - 1) * 0x9e3779b97f4a7c15ull) >> 32 & 0xffff);
		} else {
			a += 16 + ((unsigned long)rand_r(&seed) % 4096) * 16;
		}
		pool[n] = a;
	}
	return pool;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	const char *mode = argc > 2 ? argv[2] : "";
	unsigned long chain[2 * DEPTH + 2], *pool = NULL;
	struct timespec t0, t;
	unsigned seed = getpid();
	size_t next = 0;

	if (!strcmp(mode, "collide") || !strcmp(mode, "pool"))
		pool = make_pool(!strcmp(mode, "collide"), seed);

	printf("%d\n", getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < DEPTH; i++) {
			chain[2 * i] = (unsigned long)&chain[2 * (i + 1)];
			chain[2 * i + 1] = pool ? pool[next++ % POOL] :
					      0x100000000ul + ((unsigned long)rand_r(&seed) << 4);
		}
		chain[2 * DEPTH] = 0;
		chain[2 * DEPTH + 1] = 0;
		spin_on(chain);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return 0;
}
