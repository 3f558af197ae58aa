/* dotnetstubs.h: .NET runtime code that lives in anonymous memory as a copy of code in
 * libcoreclr.so: the GC write barriers (copied at start-up, then patched: their immediates hold
 * the card table's address) and the precode thunk pages (a template repeated). The runtime names
 * them in its perf map only when perf maps are on from its start; turned on later, they are
 * found by their bytes in the library, and named as the library code they copy. */
#ifndef SPANPROF_DOTNETSTUBS_H
#define SPANPROF_DOTNETSTUBS_H

#include <stdint.h>

#define DNSTUBS_WINDOW	     64		/* bytes around an address compared with the library */
#define DNSTUBS_SEARCHES_MAX 32	/* scans of the whole library per process, 2 per mapping
					 * (where copies were found before is searched first, at no
					 * such cost) */
#define DNSTUBS_LIB_MAX	     (32u << 20)	/* larger code segments are not read */
#define DNSTUBS_HOT_SPAN     (64u << 10)	/* held of the library each way around a copy found */

struct proc;
struct dn_stubs;

struct dn_stubs *dnstubs__new(void);	/* NULL when out of memory */
void dnstubs__free(struct dn_stubs *s);	/* NULL-safe */

/*
 * The address in p's own libcoreclr.so mapping whose code the code at addr (executable memory
 * outside any file) is a copy of: the window of DNSTUBS_WINDOW bytes around addr matches the
 * library there, walking out from addr, in at least 24 bytes, in stretches of 4 or more (patched immediates may differ).
 * 0 and *orig, or -ENOENT
 * (no copy found, or not looked for: past DNSTUBS_SEARCHES_MAX, unreadable).
 */
int dnstubs__copy_of(struct dn_stubs *s, struct proc *p, uint64_t addr, uint64_t *orig);

/* Free the library code (the spans around copies found) no address was matched against for
 * idle_ns (before now, CLOCK_MONOTONIC); the next address that needs it reads it again. */
void dnstubs__release_idle(uint64_t now, uint64_t idle_ns);

struct dnstubs_stats {
	uint32_t found, not_found, searches, capped;
};
void dnstubs__stats(const struct dn_stubs *s, struct dnstubs_stats *out);

#endif /* SPANPROF_DOTNETSTUBS_H */
