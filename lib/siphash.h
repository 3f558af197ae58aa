/* siphash.h: SipHash (Aumasson and Bernstein, 2012), and the one hash of every table keyed by
 * what a profiled process controls (stacks, label values, frame names and addresses, perf map
 * lines): SipHash-1-3 under a key drawn at random once per run, so that a process cannot forge
 * keys that collide in our tables. */
#ifndef SPANPROF_SIPHASH_H
#define SPANPROF_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

struct siphash_key {
	uint64_t k0, k1;	/* the 16 key bytes, read little-endian */
};

/* SipHash-2-4, the paper's function, and SipHash-1-3, the one tables use (as Rust's HashMap and
 * CPython do): a pseudorandom function of data under key. */
uint64_t siphash__24(const struct siphash_key *key, const void *data, size_t len);
uint64_t siphash__13(const struct siphash_key *key, const void *data, size_t len);

/* The tables' hash: SipHash-1-3 under this run's key, drawn from getrandom() at first use. */
uint64_t siphash__table(const void *data, size_t len);
/* The same of one 64-bit word (an address, or ids packed into one). */
uint64_t siphash__table_u64(uint64_t x);

/* For tests: use key from now on (before any table is made: a table holds hashes under the key
 * of its time). */
void siphash__set_table_key(const struct siphash_key *key);

#endif /* SPANPROF_SIPHASH_H */
