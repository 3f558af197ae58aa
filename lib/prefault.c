/* prefault.c: fresh memory faulted in with one call (MADV_POPULATE_WRITE). */
#include <stdint.h>
#include <sys/mman.h>

#include "prefault.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23	/* Linux 5.14; older kernels say EINVAL */
#endif

void prefault__write(void *p, size_t len)
{
	uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
	uintptr_t e = ((uintptr_t)p + len) & ~(uintptr_t)4095;

	if (len >= PREFAULT_MIN && e > a)
		(void)madvise((void *)a, e - a, MADV_POPULATE_WRITE);
}
