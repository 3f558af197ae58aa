/* siphash.c: SipHash-c-d (the paper's reference algorithm) and the run's key for the tables. */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "siphash.h"

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND							\
	do {								\
		v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
		v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;			\
		v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;			\
		v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
	} while (0)

/* c compression rounds per 8-byte word, d finalization rounds; inlined, so each caller's c and d
 * (and the length, where it is a constant) unroll. */
static inline __attribute__((always_inline)) uint64_t
sip(const struct siphash_key *k, const void *data, size_t len, int c, int d)
{
	uint64_t v0 = 0x736f6d6570736575ull ^ k->k0, v1 = 0x646f72616e646f6dull ^ k->k1;
	uint64_t v2 = 0x6c7967656e657261ull ^ k->k0, v3 = 0x7465646279746573ull ^ k->k1;
	const unsigned char *p = data, *end = p + (len & ~(size_t)7);
	uint64_t m, b = (uint64_t)len << 56;

	for (; p != end; p += 8) {
		memcpy(&m, p, 8);
		m = le64toh(m);
		v3 ^= m;
		for (int i = 0; i < c; i++)
			SIPROUND;
		v0 ^= m;
	}
	switch (len & 7) {
	case 7: b |= (uint64_t)p[6] << 48; __attribute__((fallthrough));
	case 6: b |= (uint64_t)p[5] << 40; __attribute__((fallthrough));
	case 5: b |= (uint64_t)p[4] << 32; __attribute__((fallthrough));
	case 4: b |= (uint64_t)p[3] << 24; __attribute__((fallthrough));
	case 3: b |= (uint64_t)p[2] << 16; __attribute__((fallthrough));
	case 2: b |= (uint64_t)p[1] << 8; __attribute__((fallthrough));
	case 1: b |= (uint64_t)p[0]; break;
	default: break;
	}
	v3 ^= b;
	for (int i = 0; i < c; i++)
		SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	for (int i = 0; i < d; i++)
		SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t siphash__24(const struct siphash_key *key, const void *data, size_t len)
{
	return sip(key, data, len, 2, 4);
}

uint64_t siphash__13(const struct siphash_key *key, const void *data, size_t len)
{
	return sip(key, data, len, 1, 3);
}

/* ---- the run's key -------------------------------------------------------------------------- */

static struct siphash_key table_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_ready;

/* 16 bytes from getrandom() (it waits, at most, for the kernel's generator to be seeded, early in
 * boot). Should it fail (a seccomp filter without it), the clock, the pid and where the stack
 * and this code were placed: weaker, but still not a constant a process could collide against. */
static void draw_key(void)
{
	uint64_t k[2], x;
	ssize_t n;

	do
		n = getrandom(k, sizeof(k), 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(k)) {
		struct timespec t;
		struct siphash_key mix;

		clock_gettime(CLOCK_MONOTONIC, &t);
		mix.k0 = (uint64_t)t.tv_nsec ^ (uint64_t)t.tv_sec << 30 ^ (uint64_t)getpid() << 48;
		mix.k1 = (uint64_t)(uintptr_t)&t ^ (uint64_t)(uintptr_t)draw_key << 7;
		clock_gettime(CLOCK_REALTIME, &t);
		x = (uint64_t)t.tv_nsec ^ (uint64_t)t.tv_sec << 32;
		k[0] = siphash__24(&mix, &x, sizeof(x));
		k[1] = siphash__24(&mix, k, sizeof(k[0]));
	}
	table_key = (struct siphash_key){ k[0], k[1] };
	__atomic_store_n(&key_ready, 1, __ATOMIC_RELEASE);
}

static inline const struct siphash_key *run_key(void)
{
	if (__builtin_expect(!__atomic_load_n(&key_ready, __ATOMIC_ACQUIRE), 0))
		pthread_once(&key_once, draw_key);
	return &table_key;
}

void siphash__set_table_key(const struct siphash_key *key)
{
	pthread_once(&key_once, draw_key);	/* a first use after this must not draw over it */
	table_key = *key;
}

uint64_t siphash__table(const void *data, size_t len)
{
	return sip(run_key(), data, len, 1, 3);
}

uint64_t siphash__table_u64(uint64_t x)
{
	x = htole64(x);
	return sip(run_key(), &x, sizeof(x), 1, 3);
}
