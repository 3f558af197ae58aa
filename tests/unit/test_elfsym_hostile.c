/* test_elfsym_hostile.c: elfsym against what it must refuse or survive: symlinks, non-regular
 * files, garbage, truncation, sparse tables, mutation fuzzing (fixtures: elfsym_fx.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <elf.h>
#include <sys/resource.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elfsym.h"
#include "rootfs.h"
#include "testutil.h"

#include "elfsym_fx.h"

/* ---- opening safely ------------------------------------------------------------------------ */

static void test_elfsym_symlink_refused(void **state)
{
	char root[PATH_MAX], real_target[PATH_MAX];
	int rfd, fd, slash;
	struct elfsym *es;

	(void)state;
	snprintf(root, sizeof(root), "%s/root_links", fx_tmpdir);
	snprintf(real_target, sizeof(real_target), "%s/fx_lib.so", fx_tmpdir);
	assert_int_equal(testutil__run("rm -rf %s && mkdir -p %s/lib %s/inside && cp %s %s/inside/ok.so && "
			     "ln -s %s %s/lib/abs.so && ln -s ../../../../../../../..%s %s/lib/rel.so && "
			     "ln -s /inside/ok.so %s/lib/in_root.so && ln -s /proc/self/root%s %s/lib/magic.so",
			     root, root, root, real_target, root, real_target, root, real_target, root,
			     root, real_target, root), 0);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0);

	/* Absolute and climbing symlinks resolve against the root, where the host file is not. */
	es = elfsym__open(rfd, "/lib/abs.so");
	assert_null(es);
	assert_int_equal(errno, ENOENT);
	es = elfsym__open(rfd, "/lib/rel.so");
	assert_null(es);
	assert_int_equal(errno, ENOENT);
	{
		char climb[PATH_MAX + 64];

		snprintf(climb, sizeof(climb), "/../../../../../../../..%s", real_target);
		es = elfsym__open(rfd, climb);
		assert_null(es);
		assert_int_equal(errno, ENOENT);
	}
	es = elfsym__open(rfd, "/lib/magic.so");	/* no /proc inside this root */
	assert_null(es);
	/* A symlink that stays inside the root is followed within it. */
	es = elfsym__open(rfd, "/lib/in_root.so");
	assert_non_null(es);
	elfsym__free(es);

	/* Magic links are refused even where /proc is reachable (a container's own /proc). */
	fd = rootfs__open(AT_FDCWD, "/proc/self/root/etc/hostname",
			  O_RDONLY, S_IFREG, ELFSYM_MAX_FILE, 0);
	assert_int_equal(fd, -ELOOP);
	slash = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(slash >= 0);
	fd = rootfs__open(slash, "/proc/self/root/etc/hostname",
			  O_RDONLY, S_IFREG, ELFSYM_MAX_FILE, 0);
	assert_int_equal(fd, -ELOOP);
	close(slash);

	/* The walk used without openat2 refuses every symlink and "..". */
	fd = rootfs__open(rfd, "/lib/abs.so", O_RDONLY, S_IFREG, ELFSYM_MAX_FILE, ROOTFS_WALK);
	assert_int_equal(fd, -ELOOP);
	fd = rootfs__open(rfd, "/lib/in_root.so", O_RDONLY, S_IFREG, ELFSYM_MAX_FILE, ROOTFS_WALK);
	assert_int_equal(fd, -ELOOP);
	fd = rootfs__open(rfd, "/inside/../lib/abs.so",
			  O_RDONLY, S_IFREG, ELFSYM_MAX_FILE, ROOTFS_WALK);
	assert_int_equal(fd, -EXDEV);
	fd = rootfs__open(rfd, "/inside/ok.so", O_RDONLY, S_IFREG, ELFSYM_MAX_FILE, ROOTFS_WALK);
	assert_true(fd >= 0);
	es = elfsym__open_fd(fd, "/inside/ok.so", rfd);
	assert_non_null(es);
	assert_true(elfsym__count(es) > 0);
	elfsym__free(es);
	close(rfd);
}

static void test_elfsym_non_regular_refused(void **state)
{
	char root[PATH_MAX], fifo[PATH_MAX + 16], big[PATH_MAX + 16];
	struct elfsym *es;
	int rfd, fd;

	(void)state;
	snprintf(root, sizeof(root), "%s/root_special", fx_tmpdir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", root);
	snprintf(big, sizeof(big), "%s/big.so", root);
	assert_int_equal(testutil__run("rm -rf %s && mkdir -p %s/dir", root, root), 0);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0);

	/* A FIFO nobody writes to would block a plain open(): must fail at once. */
	es = elfsym__open(rfd, "/fifo");
	assert_null(es);
	assert_int_equal(errno, EINVAL);
	es = elfsym__open(rfd, "/dir");
	assert_null(es);
	assert_int_equal(errno, EINVAL);
	es = elfsym__open(AT_FDCWD, "/dev/null");
	assert_null(es);
	assert_int_equal(errno, EINVAL);

	/* Sparse 3 GiB file: over the cap, refused before a byte is read. */
	fd = open(big, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 3LL << 30), 0);
	close(fd);
	es = elfsym__open(rfd, "/big.so");
	assert_null(es);
	assert_int_equal(errno, EFBIG);
	fd = rootfs__open(rfd, "/big.so", O_RDONLY, S_IFREG, 4096, 0);
	assert_int_equal(fd, -EFBIG);
	close(rfd);
}


/* ---- hostile input ------------------------------------------------------------------------- */

/* Whatever came back must be usable: lookups anywhere, accessors, free. */
static void poke(struct elfsym *es)
{
	uint64_t off, v;
	struct elfsym_stats st;

	for (off = 0; off < 0x3000; off += 0x61) {
		elfsym__lookup(es, off, NULL);
		if (elfsym__file_to_vaddr(es, off, &v) == 0)
			elfsym__lookup_vaddr(es, v, &v);
	}
	elfsym__build_id(es);
	elfsym__stats(es, &st);
	elfsym__free(es);
}

static void test_elfsym_garbage(void **state)
{
	const char text[] = "#!/bin/sh\necho not an elf file\n";
	unsigned char junk[4096];
	struct elfsym *es;
	size_t i;

	(void)state;
	es = elfsym__open_fd(memfd_with("", 0), NULL, AT_FDCWD);
	assert_null(es);
	assert_int_equal(errno, ENOEXEC);
	es = elfsym__open_fd(memfd_with(text, sizeof(text)), NULL, AT_FDCWD);
	assert_null(es);
	assert_int_equal(errno, ENOEXEC);
	srand(7);
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = rand();
	es = elfsym__open_fd(memfd_with(junk, sizeof(junk)), NULL, AT_FDCWD);
	assert_null(es);
	assert_int_equal(errno, ENOEXEC);
	/* ELF magic over junk. */
	memcpy(junk, "\177ELF\2\1\1", 7);
	es = elfsym__open_fd(memfd_with(junk, sizeof(junk)), NULL, AT_FDCWD);
	if (es)
		poke(es);
	else
		assert_int_equal(errno, ENOEXEC);
	es = elfsym__open_fd(-1, NULL, AT_FDCWD);
	assert_null(es);
	assert_int_equal(errno, EBADF);
	elfsym__free(NULL);
	assert_null(elfsym__lookup(NULL, 0, NULL));
}

static void test_elfsym_truncated(void **state)
{
	char path[PATH_MAX];
	unsigned char *buf;
	struct elfsym *full;
	size_t len, cut;
	int loaded = 0, refused = 0;

	(void)state;
	fx_path(path, sizeof(path), "fx_lib.so");
	buf = read_all(path, &len);
	full = open_fx("fx_lib.so");
	/* Every length below 4 KiB, then coarser steps to the end. */
	for (cut = 0; cut < len; cut += cut < 4096 ? 1 : 97) {
		struct elfsym *es = elfsym__open_fd(memfd_with(buf, cut), NULL, AT_FDCWD);

		if (!es) {
			assert_int_equal(errno, ENOEXEC);
			refused++;
			continue;
		}
		loaded++;
		assert_true(elfsym__count(es) <= elfsym__count(full));
		poke(es);
	}
	print_message("truncated: %d refused, %d loaded (fewer symbols)\n", refused, loaded);
	assert_true(refused > 0);
	elfsym__free(full);
	free(buf);
}

/* Issue 9, row 3: a string table the file declares but never stored (a sparse file: 200 MiB of
 * table on a few KiB of disk) is refused, not read: the file's other table names it, in bounded
 * time and memory. */
static void test_elfsym_sparse_table_refused(void **state)
{
	const uint64_t at = 256ull << 20, size = 200ull << 20;
	char path[PATH_MAX], sparse_path[PATH_MAX];
	struct elfsym_stats st;
	struct elfsym *es;
	struct rusage r0, r1;
	unsigned char *buf;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;
	uint64_t stroff = 0, strsize = 0;
	size_t len;
	int fd, done = 0;

	(void)state;
	fx_path(path, sizeof(path), "fx_lib.so");
	buf = read_all(path, &len);
	eh = (Elf64_Ehdr *)buf;
	sh = (Elf64_Shdr *)(buf + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum && !done; i++) {
		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		stroff = sh[sh[i].sh_link].sh_offset;
		strsize = sh[sh[i].sh_link].sh_size;
		sh[sh[i].sh_link].sh_offset = at;
		sh[sh[i].sh_link].sh_size = size;
		done = 1;
	}
	assert_true(done);
	fx_path(sparse_path, sizeof(sparse_path), "fx_sparse.so");
	fd = open(sparse_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, len, 0), (ssize_t)len);
	assert_int_equal(pwrite(fd, buf + stroff, strsize, (off_t)at), (ssize_t)strsize);
	assert_int_equal(ftruncate(fd, (off_t)(at + size)), 0);
	close(fd);
	getrusage(RUSAGE_SELF, &r0);
	es = elfsym__open(AT_FDCWD, sparse_path);
	getrusage(RUSAGE_SELF, &r1);
	assert_non_null(es);
	elfsym__stats(es, &st);
	print_message("sparse: %" PRIu64 " tables refused, %" PRIu64 " .dynsym symbols kept, max RSS +%ld KiB\n",
		      st.sparse, st.dynsym, r1.ru_maxrss - r0.ru_maxrss);
	assert_int_equal(st.sparse, 1);
	assert_true(st.dynsym > 0);	/* the exported functions still have their names */
	assert_true(r1.ru_maxrss - r0.ru_maxrss < 64 * 1024);	/* the 200 MiB were not read */
	elfsym__free(es);
	unlink(sparse_path);
	free(buf);
}

/* Mutation fuzz loop: flip bytes of the fixture (headers favoured) and feed it through a memfd. */
static void test_elfsym_fuzz(void **state)
{
	const char *names[] = { "fx_lib.so", "fx_pie", "fx_dl.so.debug" };
	int iters = getenv("ELFSYM_FUZZ_ITERS") ? atoi(getenv("ELFSYM_FUZZ_ITERS")) : 3000;
	int it, loaded = 0, refused = 0;
	uint32_t seed = 12345;
	size_t f;

	(void)state;
	for (f = 0; f < sizeof(names) / sizeof(names[0]); f++) {
		char path[PATH_MAX];
		unsigned char *orig, *buf;
		size_t len;

		fx_path(path, sizeof(path), names[f]);
		orig = read_all(path, &len);
		buf = malloc(len);
		assert_non_null(buf);
		for (it = 0; it < iters; it++) {
			struct elfsym *es;
			int flips, k;
			size_t use = len;

			memcpy(buf, orig, len);
			seed = seed * 1103515245 + 12345;
			flips = 1 + (seed >> 16) % 8;
			for (k = 0; k < flips; k++) {
				size_t pos;

				seed = seed * 1103515245 + 12345;
				/* Half of the flips land in the ELF/program headers or the section
				 * header table at the end, where parsers trust the most. */
				if (k % 2 == 0)
					pos = (seed >> 8) % 256;
				else if (k % 4 == 1)
					pos = len - 1 - (seed >> 8) % (len < 2048 ? len : 2048);
				else
					pos = (seed >> 4) % len;
				seed = seed * 1103515245 + 12345;
				buf[pos] = (k & 1) ? (uint8_t)(seed >> 16) : buf[pos] ^ (1u << ((seed >> 16) % 8));
			}
			if ((seed >> 20) % 8 == 0)
				use = (seed >> 3) % len;
			es = elfsym__open_fd(memfd_with(buf, use), NULL, AT_FDCWD);
			if (!es) {
				assert_true(errno == ENOEXEC || errno == ENOMEM);
				refused++;
				continue;
			}
			loaded++;
			poke(es);
		}
		free(buf);
		free(orig);
	}
	print_message("fuzz: %d loaded, %d refused\n", loaded, refused);
	assert_true(loaded > 0 && refused > 0);
}

/* Offset and size of section name in path, from readelf; 0 or -1. */
static int section_range(const char *path, const char *name, size_t *off, size_t *size)
{
	char cmd[PATH_MAX + 64], line[512], got[64];
	unsigned long o, sz;
	int found = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -SW '%s'", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		char *b = strchr(line, ']');

		if (b && sscanf(b + 1, " %63s %*s %*x %lx %lx", got, &o, &sz) == 3 &&
		    strcmp(got, name) == 0 && found < 0) {
			*off = o;
			*size = sz;
			found = 0;
		}
	}
	pclose(p);
	return found;
}

/* Mutations inside .eh_frame_hdr and .eh_frame only: the FDE reader meets every lie there. */
static void test_elfsym_fuzz_eh_frame(void **state)
{
	int iters = getenv("ELFSYM_FUZZ_ITERS") ? atoi(getenv("ELFSYM_FUZZ_ITERS")) : 3000;
	size_t len, ranges[2][2];
	const char *secs[] = { ".eh_frame_hdr", ".eh_frame" };
	char path[PATH_MAX];
	unsigned char *orig, *buf;
	uint32_t seed = 777;
	int loaded = 0, with_fdes = 0;

	(void)state;
	fx_path(path, sizeof(path), "fx_stripped.so");
	for (int i = 0; i < 2; i++)
		assert_int_equal(section_range(path, secs[i], &ranges[i][0], &ranges[i][1]), 0);
	orig = read_all(path, &len);
	buf = malloc(len);
	assert_non_null(buf);
	for (int it = 0; it < iters; it++) {
		struct elfsym_stats st;
		struct elfsym *es;
		int flips;

		memcpy(buf, orig, len);
		seed = seed * 1103515245 + 12345;
		flips = 1 + (seed >> 16) % 6;
		for (int k = 0; k < flips; k++) {
			size_t *r;

			seed = seed * 1103515245 + 12345;
			r = ranges[(seed >> 8) & 1];
			seed = seed * 1103515245 + 12345;
			buf[r[0] + (seed >> 4) % r[1]] = (uint8_t)(seed >> 20);
		}
		es = elfsym__open_fd(memfd_with(buf, len), NULL, AT_FDCWD);
		if (!es)
			continue;
		loaded++;
		elfsym__stats(es, &st);
		with_fdes += st.fdes > 0;
		for (uint64_t v = 0; v < 0x3000; v += 7) {
			uint64_t start;

			if (elfsym__function_start(es, v, &start) == 0)
				assert_true(start <= v);
		}
		poke(es);
	}
	print_message("eh_frame fuzz: %d loaded, %d with function ranges\n", loaded, with_fdes);
	assert_true(loaded > 0);
	free(buf);
	free(orig);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elfsym_symlink_refused),
		cmocka_unit_test(test_elfsym_non_regular_refused),
		cmocka_unit_test(test_elfsym_garbage),
		cmocka_unit_test(test_elfsym_truncated),
		cmocka_unit_test(test_elfsym_sparse_table_refused),
		cmocka_unit_test(test_elfsym_fuzz),
		cmocka_unit_test(test_elfsym_fuzz_eh_frame),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
