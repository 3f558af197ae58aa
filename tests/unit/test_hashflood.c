/* test_hashflood.c: keys forged to collide under the tables' former unkeyed hashes cost the
 * tables (intern, idmap, a window's stacks and label sets) no more than random keys, within 2x.
 * Work is counted in slots visited (intern__probes, idmap__probes), not timed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "aggregate.h"
#include "idmap.h"
#include "intern.h"

#define N_KEYS 4096
#define N_SAMPLES 1024

/* ---- the attacker's model: the hashes the tables used before they were keyed -------------- */

#define FNV_BASIS 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull
#define FIB	  0x9e3779b97f4a7c15ull

/* The former intern hash: FNV-1a over 8-byte words, then bytes, then an avalanche. */
static uint64_t old_intern_hash(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = FNV_BASIS ^ len, w;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * FNV_PRIME;
		h ^= h >> 29;
	}
	while (len--)
		h = (h ^ *p++) * FNV_PRIME;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

/*
 * A 16-byte stack [proc, j, a, b] whose former hash is the same for every j: the state after the
 * first word is known, so the second word sets the state after it to a constant of our choice.
 * Every forged stack collides in all 64 bits, whatever the table's size.
 */
static void forged_stack(uint32_t proc, uint32_t j, uint32_t out[4])
{
	uint64_t h = FNV_BASIS ^ 16, w0 = proc | (uint64_t)j << 32, w1;

	h = (h ^ w0) * FNV_PRIME;
	h ^= h >> 29;
	w1 = h ^ 0x5eed5eed5eed5eedull;
	out[0] = proc;
	out[1] = j;
	out[2] = (uint32_t)w1;
	out[3] = (uint32_t)(w1 >> 32);
}

/* The inverse of an odd number modulo 2^64 (Newton's iteration). */
static uint64_t inverse(uint64_t a)
{
	uint64_t x = a;

	for (int i = 0; i < 6; i++)
		x *= 2 - a * x;
	return x;
}

/* Addresses that the former idmap hash (the product's bits 32 up) sends to one slot in tables of
 * up to 2^16 slots: their products with FIB are j << 48. */
static uint64_t forged_address(uint32_t j)
{
	return ((uint64_t)j << 48) * inverse(FIB);
}

static uint64_t rng = 0x1234567887654321ull;

static uint64_t rnd(void)
{
	uint64_t z = (rng += FIB);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Forged costs at most twice what random keys cost; printed either way. */
static void assert_within_2x(const char *what, uint64_t forged, uint64_t random)
{
	print_message("  %s: forged %llu slots visited, random %llu (ratio %.2f)\n", what,
		      (unsigned long long)forged, (unsigned long long)random,
		      (double)forged / (double)random);
	assert_true(forged <= 2 * random);
}

/* ---- the tables -------------------------------------------------------------------------- */

static uint64_t intern_cost(int forge)
{
	struct intern *in = intern__new();
	uint32_t key[4];
	uint64_t probes = 0;

	assert_non_null(in);
	for (uint32_t j = 0; j < N_KEYS; j++) {
		if (forge) {
			forged_stack(7, j, key);
		} else {
			key[0] = 7;
			key[1] = j;
			key[2] = (uint32_t)rnd();
			key[3] = (uint32_t)rnd();
		}
		assert_int_equal(intern__id(in, key, sizeof(key), NULL), j);
	}
	for (uint32_t j = 0; j < N_KEYS; j++) {
		size_t len;
		const void *k = intern__key(in, j, &len);

		probes += intern__probes(in, k, len);
	}
	intern__free(in);
	return probes;
}

static void test_hashflood_intern_forged_stacks(void **state)
{
	uint32_t a[4], b[4];

	/* The forgery works against the former hash. */
	forged_stack(7, 1, a);
	forged_stack(7, 2, b);
	assert_int_equal(old_intern_hash(a, sizeof(a)), old_intern_hash(b, sizeof(b)));
	assert_within_2x("intern, 16-byte stacks", intern_cost(1), intern_cost(0));
}

static uint64_t idmap_cost(int forge)
{
	struct idmap *m = idmap__new();
	uint64_t probes = 0;

	assert_non_null(m);
	for (uint32_t j = 0; j < N_KEYS; j++)
		assert_int_equal(idmap__id(m, forge ? forged_address(j + 1) : rnd(), NULL), j);
	for (uint32_t j = 0; j < N_KEYS; j++)
		probes += idmap__probes(m, idmap__key(m, j));
	idmap__free(m);
	return probes;
}

static void test_hashflood_idmap_forged_addresses(void **state)
{
	assert_int_equal((forged_address(1) * FIB) >> 32 & 0xffff,
			 (forged_address(2) * FIB) >> 32 & 0xffff);
	assert_within_2x("idmap, frame addresses", idmap_cost(1), idmap_cost(0));
}

/*
 * A span label value "v-XXXXXXXXXXXX" whose label set "span\0<value>\0" has its former hash's low
 * 11 bits zero (a table of N_SAMPLES label sets has 2048 slots): found by trying counters, as an
 * attacker would, offline.
 */
static uint64_t forged_value_next;

static void forged_value(char *out, size_t size)
{
	char buf[64];

	for (;; forged_value_next++) {
		int n = snprintf(out, size, "v-%012llx", (unsigned long long)forged_value_next);

		memcpy(buf, "span", 5);
		memcpy(buf + 5, out, (size_t)n + 1);
		if (!(old_intern_hash(buf, 5 + (size_t)n + 1) & 2047))
			break;
	}
	forged_value_next++;
}

static uint64_t window_cost(int forge)
{
	struct aggregator *a = aggregate__new(UINT64_MAX, 0);
	struct agg_window *w;
	uint64_t probes;
	char value[32];

	assert_non_null(a);
	for (uint32_t j = 0; j < N_SAMPLES; j++) {
		struct pf_label l = { .key = "span", .value = value, .identity = 0 };
		uint32_t key[4];

		if (forge) {
			forged_stack(3, j, key);
			forged_value(value, sizeof(value));
		} else {
			key[1] = j;
			key[2] = (uint32_t)rnd();
			key[3] = (uint32_t)rnd();
			snprintf(value, sizeof(value), "v-%012llx",
				 (unsigned long long)(rnd() & 0xffffffffffffull));
		}
		assert_int_equal(aggregate__add(a, 1, 3, key + 1, 3, &l, 1), 0);
	}
	assert_non_null(w = aggregate__cut(a));
	probes = aggregate__window_probes(w);
	aggregate__window_free(w);
	aggregate__free(a);
	return probes;
}

static void test_hashflood_window_forged_stacks_and_labels(void **state)
{
	assert_within_2x("window, stacks + label sets", window_cost(1), window_cost(0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hashflood_intern_forged_stacks),
		cmocka_unit_test(test_hashflood_idmap_forged_addresses),
		cmocka_unit_test(test_hashflood_window_forged_stacks_and_labels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
