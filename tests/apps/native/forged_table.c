/* forged_table.c: a hostile "hooked" process for the tests. It passes for .NET (it maps a file
 * named libcoreclr.so) and publishes a span table that passes user space's header checks but whose
 * records are garbage (oversized lengths, unknown keys, truncated attributes, torn writes without
 * the valid-flag protocol), or, with "bad-header", a table that must be refused. Then it burns CPU
 * so the sampler reads that garbage many times. With "idle", a valid table and no CPU use: one of
 * many hooked processes that sit in the sampler's table of span tables.
 * Usage: forged_table garbage|bad-header|idle SECONDS FAKE_LIBCORECLR_PATH */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "profiler.h"

#define SLOTS 16
#define SLOT_SIZE 656
#define SLOTS_OFF 4096

static uint64_t start_ticks(void)
{
	char buf[1024], *s;
	FILE *f = fopen("/proc/thread-self/stat", "r");
	int field = 2;

	if (!f || !fgets(buf, sizeof(buf), f))
		exit(1);
	fclose(f);
	s = strrchr(buf, ')');
	for (s++; *s && field < 22; s++)
		if (*s == ' ')
			field++;
	return strtoull(s, NULL, 10);
}

int main(int argc, char **argv)
{
	int bad_header = argc > 1 && !strcmp(argv[1], "bad-header");
	int idle = argc > 1 && !strcmp(argv[1], "idle");
	double seconds = argc > 2 ? atof(argv[2]) : 10;
	size_t size = SLOTS_OFF + SLOTS * SLOT_SIZE;
	int fd = memfd_create(SP_CTX_MEMFD_NAME, MFD_CLOEXEC);
	struct sp_ctx_header *h;
	uint8_t *map, *slot, *rec;
	uint32_t tid = gettid(), i;
	struct timespec t0, t;
	volatile uint64_t sink = 0;
	uint64_t n = 0;

	int lib = argc > 3 ? open(argv[3], O_RDWR | O_CREAT, 0600) : -1;

	if (lib < 0 || ftruncate(lib, 4096) ||
	    mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, lib, 0) == MAP_FAILED)
		return 1;
	if (fd < 0 || ftruncate(fd, size))
		return 1;
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return 1;
	h = (struct sp_ctx_header *)map;
	h->abi_version = SP_CTX_ABI;
	h->header_size = sizeof(*h);
	h->slot_count = bad_header ? 1u << 30 : SLOTS;	/* far past the mapping when bad */
	h->slot_size = SLOT_SIZE;
	h->slots_offset = SLOTS_OFF;
	h->keys_offset = 128;
	h->keys_size = 1024;
	/* Key table: one name, then an entry whose length runs past the table. */
	map[128] = 5;
	memcpy(map + 129, "alpha", 5);
	map[134] = 250;
	h->keys_count = idle ? 1 : 200;
	h->pid = getpid();
	memcpy(h->magic, SP_CTX_MAGIC, 8);

	slot = map + SLOTS_OFF + (SP_SLOT_HASH(tid) & (SLOTS - 1)) * SLOT_SIZE;
	((struct sp_slot_head *)slot)->start_ticks = start_ticks();
	((struct sp_slot_head *)slot)->tid = tid;
	rec = slot + SP_SLOT_HEAD;
	printf("%d\n", getpid());
	fflush(stdout);
	if (idle) {
		sleep((unsigned)seconds);
		return 0;
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		/* Garbage, rewritten all the time with no protocol: ids, a valid flag that flips,
		 * attrs_data_size far beyond the record, attributes with unknown keys and lengths
		 * that overrun. */
		for (i = 0; i < 24; i++)
			rec[i] = (uint8_t)(n * 131 + i * 7) | 1;
		rec[24] = n & 1;
		rec[25] = 1;
		rec[26] = 0xff;
		rec[27] = 0xff;
		for (i = SP_CTX_HEAD; i < SLOT_SIZE - SP_SLOT_HEAD; i += 2) {
			rec[i] = (uint8_t)(i + n);	/* key index: mostly unknown */
			rec[i + 1] = 255;		/* length: overruns */
		}
		for (i = 0; i < 200000; i++)
			sink += i * n;
		n++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return 0;
}
