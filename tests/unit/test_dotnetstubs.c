/* test_dotnetstubs.c: runtime code copied out of libcoreclr.so is found by its bytes
 * (dotnetstubs.h). The "process" is this test: a file named libcoreclr.so of random bytes is
 * mapped, pieces of it are copied into anonymous memory (some bytes patched, as the runtime
 * patches immediates into its write barriers), and the process table entry describes both. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "dotnetstubs.h"
#include "proctab.h"
#include "symbudget.h"
#include "testutil.h"
#include "util.h"

#define LIB_LEN  (1 << 20)	/* bigger than the span kept around copies */
#define ANON_LEN (16 << 10)

static char tmp[256], lib_path[320];
static uint8_t *lib, *anon;
static struct vma vmas[2];
static struct proc proc;

static int setup(void **state)
{
	uint8_t *bytes = malloc(LIB_LEN);
	unsigned seed = 7;
	int fd;

	if (!bytes || !testutil__mkdtemp(tmp, sizeof(tmp)))
		return -1;
	for (size_t i = 0; i < LIB_LEN; i++)
		bytes[i] = rand_r(&seed);
	snprintf(lib_path, sizeof(lib_path), "%s/libcoreclr.so", tmp);
	fd = open(lib_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, bytes, LIB_LEN) != LIB_LEN)
		return -1;
	free(bytes);
	lib = mmap(NULL, LIB_LEN, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	anon = mmap(NULL, ANON_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (lib == MAP_FAILED || anon == MAP_FAILED)
		return -1;
	/* Sorted by address, as the table keeps them; both "executable". */
	struct vma l = { (uintptr_t)lib, (uintptr_t)lib + LIB_LEN, 0, 1, 2, lib_path, VMA_FILE, 1 };
	struct vma a = { (uintptr_t)anon, (uintptr_t)anon + ANON_LEN, 0, 0, 0, "", VMA_ANON, 1 };
	vmas[0] = l.start < a.start ? l : a;
	vmas[1] = l.start < a.start ? a : l;
	memset(&proc, 0, sizeof(proc));
	proc.vmas = vmas;
	proc.nvmas = 2;
	proc.dir_fd = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return proc.dir_fd >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
	close(proc.dir_fd);
	munmap(lib, LIB_LEN);
	munmap(anon, ANON_LEN);
	unlink(lib_path);
	rmdir(tmp);
	return 0;
}

static uint64_t A(const void *p)
{
	return (uintptr_t)p;
}

/* What the library's bytes hold of the symbol budget. */
static uint64_t held(void)
{
	struct symbudget_stats sb;

	symbudget__stats(&sb);
	return sb.used_by[SB_ELF];
}

/* Held: only the span around where copies were found, never the whole library. */
static void assert_hot_held(void)
{
	assert_true(held() > 0);
	assert_true(held() <= 2 * DNSTUBS_HOT_SPAN + 0x4000);
}

static void test_dnstubs_finds_patched_copies(void **state)
{
	struct dn_stubs *s = dnstubs__new();
	struct dnstubs_stats st;
	struct symbudget_stats sb;
	uint64_t orig = 0;

	assert_non_null(s);
	memset(anon, 0, ANON_LEN);
	/* Two pieces side by side (as the runtime copies a barrier variant over its slot), each
	 * with an 8-byte immediate patched in. */
	memcpy(anon + 0x40, lib + 0x1000, 0x40);
	memcpy(anon + 0x80, lib + 0x3000, 0x40);
	memset(anon + 0x48, 0xab, 8);
	memset(anon + 0x98, 0xcd, 8);
	assert_int_equal(dnstubs__copy_of(s, &proc, A(anon + 0x56), &orig), 0);
	assert_int_equal(orig, A(lib + 0x1016));
	assert_int_equal(dnstubs__copy_of(s, &proc, A(anon + 0x84), &orig), 0);
	assert_int_equal(orig, A(lib + 0x3004));
	/* In the patched bytes' neighbourhood, and next to the other piece: still the right one. */
	assert_int_equal(dnstubs__copy_of(s, &proc, A(anon + 0x7c), &orig), 0);
	assert_int_equal(orig, A(lib + 0x103c));
	assert_int_equal(dnstubs__copy_of(s, &proc, A(anon + 0xa0), &orig), 0);
	assert_int_equal(orig, A(lib + 0x3020));

	/* Code that is no copy, and zeros: not found. An address in the library itself is no
	 * copy either (it is named as the file). */
	for (int i = 0; i < 64; i++)
		anon[0x1000 + i] = (uint8_t)(i * 37 + 11);
	assert_int_equal(dnstubs__copy_of(s, &proc, A(anon + 0x1020), &orig), -ENOENT);
	assert_int_equal(dnstubs__copy_of(s, &proc, A(anon + 0x2000), &orig), -ENOENT);
	assert_int_equal(dnstubs__copy_of(s, &proc, A(lib + 0x1000), &orig), -ENOENT);
	dnstubs__stats(s, &st);
	assert_int_equal(st.found, 4);
	assert_int_equal(st.not_found + st.capped, 2);	/* this mapping's two scans spent */
	/* The library's code where copies were found is held once, from the budget, and given
	 * back with its last user. */
	assert_hot_held();
	dnstubs__free(s);
	symbudget__stats(&sb);
	assert_int_equal(sb.used_by[SB_ELF], 0);
}

/* Copies of two far-apart parts of the library (the write barriers and the precode templates
 * live in different corners of it): each part's span is held, not the library between them. */
static void test_dnstubs_far_apart_spans(void **state)
{
	struct dn_stubs *s = dnstubs__new();
	uint64_t orig = 0;

	assert_non_null(s);
	memset(anon, 0, ANON_LEN);
	memcpy(anon + 0x40, lib + 0x1000, 0x40);
	memcpy(anon + 0x1040, lib + 0xf0000, 0x40);
	assert_int_equal(dnstubs__copy_of(s, &proc, A(anon + 0x50), &orig), 0);
	assert_int_equal(orig, A(lib + 0x1010));
	assert_int_equal(dnstubs__copy_of(s, &proc, A(anon + 0x1050), &orig), 0);
	assert_int_equal(orig, A(lib + 0xf0010));
	assert_true(held() <= 2 * (2 * DNSTUBS_HOT_SPAN + 0x4000));
	/* Both found again from what is held, with no scan of the whole library. */
	{
		struct dnstubs_stats st;

		assert_int_equal(dnstubs__copy_of(s, &proc, A(anon + 0x58), &orig), 0);
		assert_int_equal(orig, A(lib + 0x1018));
		assert_int_equal(dnstubs__copy_of(s, &proc, A(anon + 0x1058), &orig), 0);
		assert_int_equal(orig, A(lib + 0xf0018));
		dnstubs__stats(s, &st);
		assert_int_equal(st.searches, 2);
	}
	dnstubs__free(s);
	assert_int_equal(held(), 0);
}

/* The library's code goes back to the budget once idle, and is read again for the next copy. */
static void test_dnstubs_idle_release(void **state)
{
	struct dn_stubs *s = dnstubs__new();
	struct symbudget_stats sb;
	uint64_t orig = 0;

	assert_non_null(s);
	memset(anon, 0, ANON_LEN);
	memcpy(anon + 0x40, lib + 0x2000, 0x40);
	assert_int_equal(dnstubs__copy_of(s, &proc, A(anon + 0x50), &orig), 0);
	assert_int_equal(orig, A(lib + 0x2010));
	dnstubs__release_idle(now_ns(), 60ull * 1000000000);	/* just used: kept */
	assert_hot_held();
	dnstubs__release_idle(now_ns() + 61ull * 1000000000, 60ull * 1000000000);
	symbudget__stats(&sb);
	assert_int_equal(sb.used_by[SB_ELF], 0);
	assert_int_equal(dnstubs__copy_of(s, &proc, A(anon + 0x60), &orig), 0);
	assert_int_equal(orig, A(lib + 0x2020));
	assert_hot_held();
	dnstubs__free(s);
	symbudget__stats(&sb);
	assert_int_equal(sb.used_by[SB_ELF], 0);
}

/* After an idle release the code is read again by whichever process asks first, and only from a
 * process that still maps the same file: one that maps another (an upgraded runtime under the
 * same path) gets nothing, and the budget is not touched. */
static void test_dnstubs_reread_checks_mapping(void **state)
{
	struct dn_stubs *a = dnstubs__new(), *b = dnstubs__new();
	struct vma *lv = vmas[0].kind == VMA_FILE ? &vmas[0] : &vmas[1];
	struct symbudget_stats sb;
	uint64_t orig = 0;

	assert_non_null(a);
	assert_non_null(b);
	memset(anon, 0, ANON_LEN);
	memcpy(anon + 0x40, lib + 0x2000, 0x40);
	assert_int_equal(dnstubs__copy_of(a, &proc, A(anon + 0x50), &orig), 0);
	dnstubs__release_idle(now_ns() + 61ull * 1000000000, 60ull * 1000000000);
	symbudget__stats(&sb);
	assert_int_equal(sb.used_by[SB_ELF], 0);

	/* Another file where the library was (its inode changed): not read from it. */
	lv->ino++;
	assert_int_equal(dnstubs__copy_of(a, &proc, A(anon + 0x60), &orig), -ENOENT);
	symbudget__stats(&sb);
	assert_int_equal(sb.used_by[SB_ELF], 0);
	lv->ino--;

	/* The same file again: read once, by the process that asks first, for both. */
	assert_int_equal(dnstubs__copy_of(b, &proc, A(anon + 0x60), &orig), 0);
	assert_int_equal(orig, A(lib + 0x2020));
	assert_int_equal(dnstubs__copy_of(a, &proc, A(anon + 0x70), &orig), 0);
	assert_int_equal(orig, A(lib + 0x2030));
	assert_hot_held();
	dnstubs__free(a);
	assert_hot_held();	/* b still uses it */
	dnstubs__free(b);
	symbudget__stats(&sb);
	assert_int_equal(sb.used_by[SB_ELF], 0);
}

/* Code that is no copy (JIT code with no perf map) costs at most two scans of the library per
 * mapping: a copy in another mapping is still found. */
static void test_dnstubs_scans_capped_per_mapping(void **state)
{
	struct dn_stubs *s = dnstubs__new();
	struct dnstubs_stats st;
	uint64_t orig;

	for (int i = 0; i < ANON_LEN; i++)
		anon[i] = (uint8_t)(i * 131 + i / 7);
	for (int i = 0; i < 40; i++)
		assert_int_equal(dnstubs__copy_of(s, &proc, A(anon + 64 + i * 16), &orig), -ENOENT);
	dnstubs__stats(s, &st);
	assert_int_equal(st.searches, 2);
	assert_int_equal(st.capped, 38);
	/* The same code as a mapping of its own (vmas[] split in two): found. */
	memcpy(anon + 0x3000, lib + 0x2000, 0x80);
	{
		struct vma *a = vmas[0].kind == VMA_ANON ? &vmas[0] : &vmas[1];
		struct vma split[3];
		size_t k = 0;

		for (int i = 0; i < 2; i++) {
			if (&vmas[i] == a) {
				split[k] = *a;
				split[k++].end = A(anon + 0x3000);
				split[k] = *a;
				split[k++].start = A(anon + 0x3000);
			} else {
				split[k++] = vmas[i];
			}
		}
		proc.vmas = split;
		proc.nvmas = 3;
		assert_int_equal(dnstubs__copy_of(s, &proc, A(anon + 0x3040), &orig), 0);
		assert_int_equal(orig, A(lib + 0x2040));
		proc.vmas = vmas;
		proc.nvmas = 2;
	}
	dnstubs__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dnstubs_finds_patched_copies),
		cmocka_unit_test(test_dnstubs_scans_capped_per_mapping),
		cmocka_unit_test(test_dnstubs_far_apart_spans),
		cmocka_unit_test(test_dnstubs_idle_release),
		cmocka_unit_test(test_dnstubs_reread_checks_mapping),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
