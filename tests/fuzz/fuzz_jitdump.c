/* fuzz_jitdump.c: libFuzzer target for the jitdump reader (headers, records, splits, lookups). */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "perfmap.h"

static void check(struct perfmap *pm, uint64_t addr, uint64_t t)
{
	const struct perfmap_sym *s = perfmap__lookup(pm, addr, t);

	if (!s)
		return;
	assert(addr >= s->start && addr - s->start < s->size);
	assert(!t || !s->load_ns || s->load_ns <= t);
	assert(s->name && s->tier);
}

static uint64_t xs(uint64_t *st)
{
	*st ^= *st << 13;
	*st ^= *st >> 7;
	*st ^= *st << 17;
	return *st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A valid little-endian header (flags at 32) and its byte-swapped twin. */
	static const uint8_t le[40] = { 0x44, 0x54, 0x69, 0x4a, 1, 0, 0, 0, 40, 0, 0, 0, 62 };
	static const uint8_t be[40] = { 0x4a, 0x69, 0x54, 0x44, 0, 0, 0, 1, 0, 0, 0, 40, 0, 0, 0, 62 };
	static const char line[] = "1000 10 int32 [App] Program::Fresh0(int32)[QuickJitted]\n";
	struct perfmap_limits lim = { 0 };
	struct perfmap_stats st;
	struct perfmap *pm;
	uint64_t rng;
	size_t off = 0;
	uint8_t cfg;
	int bad = 0;

	if (size < 3)
		return 0;
	cfg = data[0];
	rng = (uint64_t)data[1] << 8 | data[2] | 0x10000;
	data += 3;
	size -= 3;
	if (cfg & 1) {
		lim.max_line = 32;
		lim.max_record = 256;
		lim.max_entries = 20;
		lim.max_file_bytes = 4096;
		lim.max_range = 4096;
	}
	pm = perfmap__new(&lim);
	if (!pm)
		return 0;
	/* cfg & 2: prepend a valid header so mutations explore records, not just the magic. */
	if (cfg & 2)
		assert(perfmap__feed_jitdump(pm, (cfg & 8) ? be : le, 40) == 0);
	/* cfg & 16: a perf map line first, to exercise twin detection against the records. */
	if (cfg & 16)
		assert(perfmap__feed_map(pm, line, sizeof(line) - 1) == 0);
	while (off < size) {
		size_t n = 1 + xs(&rng) % ((cfg & 4) ? 9 : 300);
		int r;

		if (n > size - off)
			n = size - off;
		r = perfmap__feed_jitdump(pm, data + off, n);
		assert(r == 0 || r == -EINVAL);
		if (r)
			bad = 1;
		else
			assert(!bad);	/* a bad header stays bad */
		off += n;
	}
	/* Every 8-byte word of the input may be a code address. */
	for (size_t i = 0; i + 8 <= size && i < 1024; i += 4) {
		uint64_t a;

		memcpy(&a, data + i, sizeof(a));
		check(pm, a, 0);
		check(pm, a, xs(&rng));
		check(pm, __builtin_bswap64(a), 0);
	}
	perfmap__stats(pm, &st);
	assert(st.entries <= (lim.max_entries ? lim.max_entries : 16ULL << 20));
	perfmap__free(pm);
	return 0;
}
