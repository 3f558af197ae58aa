/* fuzz_r2r.c: libFuzzer target for the ReadyToRun image reader (PE, R2R sections, metadata,
 * signatures): every function of what parses is walked and named, and lookups must agree. */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "r2r.h"

#define MAX_WALK 20000	/* functions named per input: bounds the time of one run */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Small caps so that inputs exercise them too. */
	struct r2r_limits lim = { .max_section = 1 << 20, .max_metadata = 2 << 20,
				  .max_functions = 1 << 16 };
	struct r2r_image *img = r2r__open_buf(data, size, &lim);
	struct r2r_image_stats st;
	uint32_t start, end, prev = 0, rva;
	const char *name;

	assert(img);
	r2r__stats(img, &st);
	assert(st.status < R2R__STATUS_MAX);
	assert(st.status == R2R_OK || st.functions == 0);
	for (uint32_t i = 0; i < MAX_WALK && !r2r__function(img, i, &start, &end, &name); i++) {
		const char *again;
		uint32_t s2, e2;

		assert(end > start && start >= prev);
		prev = start;
		if (name)
			assert(strlen(name) < 4096);
		again = r2r__lookup(img, start, &s2, &e2);
		assert(again == name || (again && name && !strcmp(again, name)) || s2 != start);
		assert(!again || (start >= s2 && start < e2));
	}
	for (uint64_t off = 0; off < size; off += 4093)
		if (!r2r__file_to_rva(img, off, &rva))
			(void)r2r__lookup(img, rva, NULL, NULL);
	r2r__free(img);
	return 0;
}
