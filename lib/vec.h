/* vec.h: the one growable-array helper (amortised doubling, overflow-checked). */
#ifndef SPANPROF_VEC_H
#define SPANPROF_VEC_H

#include <stddef.h>

/*
 * Make room for need elements of elem bytes in *arr (capacity *cap, in elements): grows by doubling
 * from min_cap, zeroes the new tail, and keeps *arr on failure. 0 or -ENOMEM.
 */
int vec__reserve(void **arr, size_t *cap, size_t need, size_t elem, size_t min_cap);

/* VEC_RESERVE(ptr, cap, need): typed wrapper; cap is a size_t lvalue. */
#define VEC_RESERVE(v, capv, need) vec__reserve((void **)&(v), &(capv), (need), sizeof(*(v)), 16)

#endif /* SPANPROF_VEC_H */
