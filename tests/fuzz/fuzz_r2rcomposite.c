/* fuzz_r2rcomposite.c: libFuzzer target for composite ReadyToRun images (perfmap/r2rcomposite.c):
 * the composite and its two component assemblies come from one input, every function is walked
 * and named, and lookups must agree. */
#include <assert.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "r2r.h"

#define MAX_WALK 20000	/* functions named per input: bounds the time of one run */

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Input: u32 composite length, u32 first component's length, then the composite, "CompApp.dll"
 * and "Lib.dll" (the rest), each length clamped to what is left (make_seeds.py's seeds are the
 * fixture of tests/fixtures/r2r-composite). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct r2r_limits lim = { .max_section = 1 << 20, .max_metadata = 2 << 20,
				  .max_functions = 1 << 16 };
	struct r2r_named_buf comps[2] = { { "CompApp.dll", NULL, 0 }, { "Lib.dll", NULL, 0 } };
	const uint8_t *p;
	size_t left, clen, alen;
	struct r2r_image *img;
	struct r2r_image_stats st;
	uint32_t start, end, prev = 0;
	const char *name;

	if (size < 8)
		return 0;
	p = data + 8;
	left = size - 8;
	clen = le32(data) < left ? le32(data) : left;
	left -= clen;
	alen = le32(data + 4) < left ? le32(data + 4) : left;
	comps[0].buf = p + clen;
	comps[0].len = alen;
	comps[1].buf = p + clen + alen;
	comps[1].len = left - alen;
	img = r2r__open_buf_with(p, clen, comps, 2, &lim);
	assert(img);
	r2r__stats(img, &st);
	assert(st.status < R2R__STATUS_MAX);
	assert(st.status == R2R_OK || st.functions == 0);
	assert(st.components_unread <= st.components);
	for (uint32_t i = 0; i < MAX_WALK && !r2r__function(img, i, &start, &end, &name); i++) {
		const char *again;
		uint32_t s2, e2;

		assert(end > start && start >= prev);
		prev = start;
		if (name)
			assert(strlen(name) < 4096);
		again = r2r__lookup(img, start, &s2, &e2);
		assert(again == name || (again && name && !strcmp(again, name)) || s2 != start);
	}
	r2r__free(img);
	return 0;
}
