/* fuzz_kallsyms.c: libFuzzer target for the kallsyms parser (ksyms__parse) and its lookups. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kallsyms.h"

/* A symbol found must hold a bounded name; its start must name the same symbol at offset 0. */
static void check(const struct ksyms *ks, uint64_t addr)
{
	char name[KSYMS_MAX_LINE], again[KSYMS_MAX_LINE];
	const char *mod;
	uint64_t off, off2;

	if (!ksyms__lookup(ks, addr, &off, &mod, name, sizeof(name)))
		return;
	assert(strlen(name) < KSYMS_MAX_LINE);
	assert(!mod || strlen(mod) < KSYMS_MAX_LINE);	/* a NUL byte may shorten it: not ours to judge */
	assert(off <= addr);
	assert(ksyms__lookup(ks, addr - off, &off2, NULL, again, sizeof(again)) == again);
	assert(!strcmp(again, name) && off2 == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ksyms_stats st;
	struct ksyms *ks;
	size_t i = 0;

	ks = ksyms__parse((const char *)data, size);
	if (!ks)
		return 0;
	ksyms__stats(ks, &st);
	assert(ksyms__count(ks) <= st.text && st.text <= st.lines);
	/* Every number that starts a line, its neighbours, and the ends of the address space. */
	for (int lines = 0; i < size && lines < 256; lines++) {
		char buf[20];
		size_t k = 0;
		uint64_t a;

		while (i + k < size && k < sizeof(buf) - 1 && data[i + k] != ' ' && data[i + k] != '\n') {
			buf[k] = (char)data[i + k];
			k++;
		}
		buf[k] = '\0';
		a = strtoull(buf, NULL, 16);
		check(ks, a);
		check(ks, a - 1);
		check(ks, a + 1);
		check(ks, a + KSYMS_TAIL_MAX);
		while (i < size && data[i] != '\n')
			i++;
		i++;
	}
	check(ks, 0);
	check(ks, UINT64_MAX);
	ksyms__free(ks);
	return 0;
}
