/* prefault.h: fresh memory faulted in with one call instead of one fault per page. */
#ifndef SPANPROF_PREFAULT_H
#define SPANPROF_PREFAULT_H

#include <stddef.h>

#define PREFAULT_MIN (256u << 10)	/* smaller ranges are left to fault page by page */

/*
 * Fault in the whole pages of [p, p + len) for writing, when the range is PREFAULT_MIN or more:
 * a buffer about to be filled (a file read into it, a table that grows) would otherwise take
 * one page fault per 4 KiB, and a fault costs 13 us in some VMs (6 us a page in one call,
 * measured in the same guest). Pages already there cost only the walk. Best effort: kernels
 * before 5.14 refuse it and the pages fault one by one.
 */
void prefault__write(void *p, size_t len);

#endif /* SPANPROF_PREFAULT_H */
