/* fuzz_perfmap.c: libFuzzer target for the perf map reader (random feed splits, caps, lookups). */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perfmap.h"

/* Lookups must only ever return a range that holds the address and was live at the time. */
static void check(struct perfmap *pm, uint64_t addr, uint64_t t)
{
	const struct perfmap_sym *s = perfmap__lookup(pm, addr, t);

	if (!s)
		return;
	assert(addr >= s->start && addr - s->start < s->size);
	assert(!t || !s->load_ns || s->load_ns <= t);
	assert(s->name && s->tier);
	assert(strlen(s->name) < (1u << 20));
}

static uint64_t xs(uint64_t *st)
{
	*st ^= *st << 13;
	*st ^= *st >> 7;
	*st ^= *st << 17;
	return *st;
}

/* The addresses that start the input's first lines (hex, as a perf map line starts). */
static size_t line_starts(const uint8_t *data, size_t size, uint64_t *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < size && n < max;) {
		char buf[24];
		size_t k = 0;

		while (i + k < size && k < sizeof(buf) - 1 && data[i + k] != ' ' && data[i + k] != '\n') {
			buf[k] = (char)data[i + k];
			k++;
		}
		buf[k] = '\0';
		out[n] = strtoull(buf, NULL, 16) + (n & 1);
		n++;
		while (i < size && data[i] != '\n')
			i++;
		i++;
	}
	return n;
}

/* A perfmap filtered to some addresses answers there as the whole one does, nowhere else. */
static void check_filtered(struct perfmap *whole, const uint8_t *data, size_t size, size_t split,
			   const uint8_t *hdr, size_t hdr_len, uint64_t *rng)
{
	struct perfmap *part = perfmap__new(NULL);
	uint64_t addrs[16];
	size_t n = line_starts(data, size, addrs, 16);

	if (!part)
		return;
	perfmap__set_feed_time(part, 1000);
	assert(perfmap__set_filter(part, addrs, n) == 0);
	assert(perfmap__feed_map(part, (const char *)data, split) == 0);
	if (split < size) {
		assert(perfmap__feed_jitdump(part, hdr, hdr_len) == 0);
		assert(perfmap__feed_jitdump(part, data + split, size - split) == 0);
	}
	/* told first, as a window's frames are: a hint that must not change an answer */
	perfmap__prefetch(whole, addrs, n);
	perfmap__prefetch(part, addrs, n);
	for (size_t i = 0; i < n; i++) {
		uint64_t t = i & 1 ? xs(rng) % 4096 : 0;
		const struct perfmap_sym *w = perfmap__lookup(whole, addrs[i], t);
		struct perfmap_sym wc = w ? *w : (struct perfmap_sym){ 0 };
		const struct perfmap_sym *p = perfmap__lookup(part, addrs[i], t);

		assert(!w == !p);
		if (w)
			assert(wc.start == p->start && wc.size == p->size && wc.load_ns == p->load_ns &&
			       wc.source == p->source && !strcmp(wc.name, p->name) &&
			       !strcmp(wc.tier, p->tier));
	}
	if (!perfmap__filter_has(part, addrs[0] + 2))
		assert(!perfmap__lookup(part, addrs[0] + 2, 0));
	perfmap__free(part);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t hdr[40] = { 0x44, 0x54, 0x69, 0x4a, 1, 0, 0, 0, 40 };
	struct perfmap_limits lim = { 0 };
	struct perfmap_stats st;
	struct perfmap *pm;
	uint64_t rng;
	size_t off = 0, split;
	uint8_t cfg;

	if (size < 3)
		return 0;
	cfg = data[0];
	rng = (uint64_t)data[1] << 8 | data[2] | 0x10000;
	data += 3;
	size -= 3;
	if (cfg & 1) {
		lim.max_line = 48;
		lim.max_entries = 40;
		lim.max_file_bytes = 2048;
		lim.max_range = 1024;
	}
	pm = perfmap__new(&lim);
	if (!pm)
		return 0;
	/* cfg & 8 (no caps): a filtered perfmap, fed the same, is compared with this one; both
	 * rank perf map lines by one pinned feed time. */
	if ((cfg & 9) == 8)
		perfmap__set_feed_time(pm, 1000);
	/* cfg & 2: the tail of the input is a jitdump body, to mix both sources (twins). */
	split = (cfg & 2) ? size - size / 4 : size;
	while (off < split) {
		size_t n = 1 + xs(&rng) % ((cfg & 4) ? 7 : 200);

		if (n > split - off)
			n = split - off;
		assert(perfmap__feed_map(pm, (const char *)data + off, n) == 0);
		off += n;
		check(pm, xs(&rng) & 0xffff, 0);
	}
	if (cfg & 2) {
		assert(perfmap__feed_jitdump(pm, hdr, sizeof(hdr)) == 0);
		assert(perfmap__feed_jitdump(pm, data + split, size - split) == 0);
	}
	/* Look up every number that starts a line, its last byte and its end. */
	for (size_t i = 0, lines = 0; i < size && lines < 64; lines++) {
		char buf[24];
		size_t k = 0;
		uint64_t a;

		while (i + k < size && k < sizeof(buf) - 1 && data[i + k] != ' ' && data[i + k] != '\n') {
			buf[k] = (char)data[i + k];
			k++;
		}
		buf[k] = '\0';
		a = strtoull(buf, NULL, 16);
		for (uint64_t d = 0; d < 3; d++) {
			check(pm, a + d, 0);
			check(pm, a + d, xs(&rng) % 4096);
		}
		while (i < size && data[i] != '\n')
			i++;
		i++;
	}
	check(pm, 0, 0);
	check(pm, UINT64_MAX, 0);
	if ((cfg & 9) == 8)
		check_filtered(pm, data, size, split, hdr, sizeof(hdr), &rng);
	perfmap__stats(pm, &st);
	assert(st.entries <= (lim.max_entries ? lim.max_entries : 16ULL << 20));
	if (cfg & 1)
		assert(st.bytes <= 2 * lim.max_file_bytes);
	perfmap__free(pm);
	return 0;
}
