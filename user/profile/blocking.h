/* blocking.h: off-CPU time by the frame that blocked. A blocked .NET thread's stack ends in the
 * runtime's wait (futex, libc, libcoreclr.so, the framework's Monitor / WaitHandle / Socket code);
 * the frame worth reading is the application's method that called into it. */
#ifndef SPANPROF_BLOCKING_H
#define SPANPROF_BLOCKING_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

struct pf_blocking {
	const char *frame;	/* the application's leaf-most .NET method; without one, the leaf-most
				 * .NET method; without .NET frames, the leaf-most frame outside the
				 * kernel (else the leaf) */
	const char *via;	/* the leaf-most .NET method (the wait it called) when not frame, or NULL */
	uint64_t off_ns;
};

/*
 * The n (frame, via) pairs with the most off-CPU time over the samples whose label key equals
 * value (key NULL: all samples), most first (ties by name). Names point into p: valid until p
 * changes. Fills out, returns how many; 0 with errno ENOMEM when out of memory.
 */
size_t blocking__top(const struct profile *p, const char *key, const char *value,
		     struct pf_blocking *out, size_t n);

#endif /* SPANPROF_BLOCKING_H */
