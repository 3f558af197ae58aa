/* vec.c: the one growable-array helper. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vec.h"

int vec__reserve(void **arr, size_t *cap, size_t need, size_t elem, size_t min_cap)
{
	size_t ncap;
	void *na;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : (min_cap ? min_cap : 16);
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	na = realloc(*arr, ncap * elem);
	if (!na)
		return -ENOMEM;
	memset((char *)na + *cap * elem, 0, (ncap - *cap) * elem);
	*arr = na;
	*cap = ncap;
	return 0;
}
