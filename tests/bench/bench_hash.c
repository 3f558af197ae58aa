/* bench_hash.c: what the tables' hash costs: ns per hash at the key lengths the tables see, and
 * per lookup in the per-sample tables (a window's stacks, a process's frame addresses). The
 * former unkeyed hash is timed in the same run as the baseline. Best of 15 runs each. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "idmap.h"
#include "intern.h"
#include "siphash.h"

#define RUNS 15

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);	/* CPU time: a busy machine deschedules us */
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* The tables' hash before it was keyed (FNV-1a over words, then an avalanche): the baseline. */
static uint64_t former_hash(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = 0xcbf29ce484222325ull ^ len, w;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	while (len--)
		h = (h ^ *p++) * 0x100000001b3ull;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

static uint64_t rng = 42;

static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static volatile uint64_t sink;

/* ns per hash of len bytes; the hash of one key feeds the next key, so calls do not overlap. */
static double per_hash(uint64_t (*fn)(const void *, size_t), size_t len)
{
	unsigned char buf[512];
	double best = 1e9;
	long n = 20000000 / (long)(len + 16);

	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)rnd();
	for (int r = 0; r < RUNS; r++) {
		double t0 = now();
		uint64_t h = 0;

		for (long i = 0; i < n; i++) {
			memcpy(buf, &h, len < 8 ? len : 8);
			h = fn(buf, len);
		}
		sink = h;
		if ((now() - t0) / n * 1e9 < best)
			best = (now() - t0) / n * 1e9;
	}
	return best;
}

static uint64_t table_hash(const void *p, size_t len)
{
	return siphash__table(p, len);
}

/* ns per intern__find hit on a table of n stacks of depth frames (+ the process: the window's
 * key), looked up in random order. */
static double per_stack_lookup(uint32_t n, uint32_t depth)
{
	struct intern *in = intern__new();
	uint32_t *keys = malloc((size_t)n * (depth + 1) * sizeof(*keys));
	uint32_t *order = malloc((size_t)n * sizeof(*order));
	size_t len = (depth + 1) * sizeof(*keys);
	double best = 1e9;

	for (uint32_t i = 0; i < n; i++) {
		keys[(size_t)i * (depth + 1)] = 7;
		for (uint32_t d = 1; d <= depth; d++)
			keys[(size_t)i * (depth + 1) + d] = (uint32_t)rnd() % 5000;
		intern__id(in, keys + (size_t)i * (depth + 1), len, NULL);
		order[i] = (uint32_t)(rnd() % n);
	}
	for (int r = 0; r < RUNS; r++) {
		double t0 = now(), t;
		uint64_t s = 0;

		for (int rep = 0; rep < 4; rep++)
			for (uint32_t i = 0; i < n; i++)
				s += (uint64_t)intern__find(in, keys + (size_t)order[i] * (depth + 1), len);
		sink = s;
		t = (now() - t0) / (4.0 * n) * 1e9;
		if (t < best)
			best = t;
	}
	intern__free(in);
	free(keys);
	free(order);
	return best;
}

/* ns per idmap__find hit on n random addresses. */
static double per_address_lookup(uint32_t n)
{
	struct idmap *m = idmap__new();
	uint64_t *keys = malloc((size_t)n * sizeof(*keys));
	double best = 1e9;

	for (uint32_t i = 0; i < n; i++)
		idmap__id(m, keys[i] = 0x7f0000000000ull + (rnd() & 0xffffffffffull), NULL);
	for (int r = 0; r < RUNS; r++) {
		double t0 = now(), t;
		uint64_t s = 0;

		for (int rep = 0; rep < 10; rep++)
			for (uint32_t i = 0; i < n; i++)
				s += (uint64_t)idmap__find(m, keys[(i * 7919u) % n]);
		sink = s;
		t = (now() - t0) / (10.0 * n) * 1e9;
		if (t < best)
			best = t;
	}
	idmap__free(m);
	free(keys);
	return best;
}

int main(void)
{
	static const size_t lens[] = { 8, 16, 24, 36, 68, 132, 260 };

	printf("ns per hash (best of %d)\n%6s %10s %10s %7s\n", RUNS, "bytes", "former", "siphash13",
	       "ratio");
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		double a = per_hash(former_hash, lens[i]), b = per_hash(table_hash, lens[i]);

		printf("%6zu %10.2f %10.2f %7.2f\n", lens[i], a, b, b / a);
	}
	printf("ns per lookup (hits, random order)\n");
	for (uint32_t depth = 8; depth <= 32; depth *= 2)
		printf("  window stacks, 100000 stacks of %2u frames: %6.1f\n", depth,
		       per_stack_lookup(100000, depth));
	printf("  frame addresses, 100000:                    %6.1f\n", per_address_lookup(100000));
	printf("  frame addresses, 1000:                      %6.1f\n", per_address_lookup(1000));
	return 0;
}
