/* fuzz_elfsym.c: libFuzzer target for the ELF symbol reader (elfsym.c) through its public API: the
 * input is written to a memfd and opened with elfsym__open_fd, as a process's mapped file is
 * (/proc/<pid>/map_files), then looked up at the addresses and offsets it holds. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsym.h"

static int mem_fd = -1, root_fd = -1;
static char root[64];	/* an empty container root: debug-file lookups start there */

static void cleanup(void)
{
	rmdir(root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	mem_fd = memfd_create("fuzz_elfsym", MFD_CLOEXEC);
	assert(mem_fd >= 0);
	snprintf(root, sizeof(root), "/tmp/fuzz_elfsym.XXXXXX");
	assert(mkdtemp(root));
	atexit(cleanup);
	root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert(root_fd >= 0);
	return 0;
}

static void check(struct elfsym *es, uint64_t v, int by_offset)
{
	uint64_t off = 0;
	const char *name = by_offset ? elfsym__lookup(es, v, &off) : elfsym__lookup_vaddr(es, v, &off);

	if (!name)
		return;
	assert(strlen(name) < (1u << 20));
	assert(off <= v || by_offset);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfsym_stats st;
	struct elfsym *es;
	const char *bid;
	int fd;

	assert(ftruncate(mem_fd, 0) == 0);
	assert(pwrite(mem_fd, data, size, 0) == (ssize_t)size);
	fd = fcntl(mem_fd, F_DUPFD_CLOEXEC, 0);	/* elfsym__open_fd takes it */
	assert(fd >= 0);
	es = elfsym__open_fd(fd, "/usr/lib/fuzz.so", root_fd);
	if (!es) {
		assert(errno == ENOEXEC || errno == ENOMEM || errno == EINVAL || errno == EFBIG ||
		       errno == EIO);
		return 0;
	}
	elfsym__stats(es, &st);
	assert(elfsym__count(es) <= st.symtab + st.dynsym);
	if ((bid = elfsym__build_id(es)))
		assert(strlen(bid) % 2 == 0 && strlen(bid) <= 128);
	/* Every 8-byte word of the input (at 4-byte steps) as an address and as a file offset. */
	for (size_t i = 0; i + 8 <= size && i < 4096; i += 4) {
		uint64_t a, va;

		memcpy(&a, data + i, sizeof(a));
		check(es, a, 0);
		check(es, a & 0xffffffff, 0);
		check(es, a & 0xffffff, 1);
		if (!elfsym__file_to_vaddr(es, a & 0xffffff, &va))
			check(es, va, 0);
	}
	check(es, 0, 0);
	check(es, UINT64_MAX, 0);
	elfsym__free(es);
	return 0;
}
