/* test_elfsym.c: symbol lookups of user/symbols/elfsym.c in executables, shared objects and real
 * libraries against nm and live processes, and function ranges from .eh_frame (fixtures:
 * elfsym_fx.c). */
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

/* ---- executables --------------------------------------------------------------------------- */

/* Look every function the child printed up by its file offset, at +0 and inside. */
static void check_child(const char *name)
{
	char path[PATH_MAX], exe[PATH_MAX];
	struct child c;
	struct elfsym *es;
	int i;

	fx_path(path, sizeof(path), name);
	assert_non_null(realpath(path, exe));
	es = open_fx(name);
	assert_int_equal(child_start(&c, exe), 0);
	assert_int_equal(c.n, 3);
	for (i = 0; i < c.n; i++) {
		uint64_t off, sym_off = 99;
		const char *got;

		assert_int_equal(maps_file_off(c.pid, c.addrs[i], exe, &off), 0);
		got = elfsym__lookup(es, off, &sym_off);
		assert_non_null(got);
		assert_string_equal(got, c.names[i]);
		assert_int_equal(sym_off, 0);
		assert_int_equal(maps_file_off(c.pid, c.addrs[i] + 3, exe, &off), 0);
		got = elfsym__lookup(es, off, &sym_off);
		assert_non_null(got);
		assert_string_equal(got, c.names[i]);
		assert_int_equal(sym_off, 3);
	}
	child_stop(&c);
	elfsym__free(es);
}

static void test_elfsym_pie_lookup(void **state)
{
	(void)state;
	check_child("fx_pie");
}

static void test_elfsym_nonpie_lookup(void **state)
{
	(void)state;
	check_child("fx_nopie");
}

static void test_elfsym_agrees_with_nm(void **state)
{
	const char *names[] = { "fx_pie", "fx_nopie", "fx_lib.so", "fx_prelink.so" };
	char path[PATH_MAX];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct elfsym *es = open_fx(names[i]);

		fx_path(path, sizeof(path), names[i]);
		assert_agrees_with_nm(es, path, 0);
		elfsym__free(es);
	}
}

/* libc through its debug file (libc6-dbg): thousands of aliases, versioned names, IFUNCs. */
static void test_elfsym_libc_agrees_with_nm(void **state)
{
	char bid[256], dbg[PATH_MAX], real[PATH_MAX];
	const char *name;
	struct elfsym *es;
	uint64_t off;
	void *h, *fn;

	(void)state;
	testutil__build_id(LIBC_PATH, bid, sizeof(bid));
	snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
	if (!bid[0] || access(dbg, R_OK) != 0) {
		print_message("skipped: no debug file for libc (%s)\n", dbg);
		skip();
	}
	es = elfsym__open(AT_FDCWD, LIBC_PATH);
	assert_non_null(es);
	assert_non_null(elfsym__debug_file(es));
	{
		const char *paths[] = { dbg, LIBC_PATH };
		const int dyn[] = { 0, 1 };

		assert_agrees_with_nm_n(es, paths, dyn, 2);
	}

	/* This process runs libc: its live addresses, by file offset. */
	h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(h);
	assert_non_null(realpath(LIBC_PATH, real));
	fn = dlsym(h, "malloc");
	assert_int_equal(maps_file_off(getpid(), (uintptr_t)fn, real, &off), 0);
	/* Aliases there (__libc_malloc, __malloc, malloc...): the short global one. */
	assert_string_equal(elfsym__lookup(es, off, NULL), "malloc");
	/* memcpy is an IFUNC: dlsym gives the implementation chosen for this CPU, a local. */
	fn = dlsym(h, "memcpy");
	assert_int_equal(maps_file_off(getpid(), (uintptr_t)fn, real, &off), 0);
	name = elfsym__lookup(es, off, NULL);
	assert_non_null(name);
	print_message("memcpy resolves to %s\n", name);
	assert_true(strncmp(name, "__mem", 5) == 0);
	dlclose(h);
	elfsym__free(es);
}

static void test_elfsym_build_id(void **state)
{
	const char *names[] = { "fx_pie", "fx_nopie", "fx_lib.so", "fx_bid.so", "fx_other_full.so" };
	char path[PATH_MAX], want[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct elfsym *es = open_fx(names[i]);

		fx_path(path, sizeof(path), names[i]);
		testutil__build_id(path, want, sizeof(want));
		assert_true(want[0] != '\0');
		assert_non_null(elfsym__build_id(es));
		assert_string_equal(elfsym__build_id(es), want);
		elfsym__free(es);
	}
	/* --build-id=none: no note at all. */
	{
		struct elfsym *es = open_fx("fx_dl_full.so");

		assert_null(elfsym__build_id(es));
		elfsym__free(es);
	}
}

/* ---- shared objects ------------------------------------------------------------------------ */

/* dlopen the fixture and check symbols by the file offsets of their live addresses. */
static void check_shared(const char *name, const char *open_as, int expect_locals)
{
	char path[PATH_MAX], real[PATH_MAX];
	struct {
		const char *sym;
		const char *want;
	} cases[] = {
		{ "fx_lib_add", "fx_lib_add" },
		{ "fx_lib_weak_add", "fx_lib_add" },	/* alias: the global name wins */
		{ "fx_lib_mul", "fx_lib_mul" },
		{ "_ZN7fixture3Lib3addEii", "fixture::Lib::add(int, int)" },
		{ "fx_asm_entry", "fx_asm_entry" },
		{ "fx_lib_after_asm", "fx_lib_after_asm" },
	};
	void *(*hidden_addr)(void), *(*local_add_addr)(void);
	struct elfsym *es;
	uint64_t off, sym_off;
	const char *got;
	void *h;
	size_t i;

	fx_path(path, sizeof(path), open_as);
	assert_non_null(realpath(path, real));
	es = open_fx(name);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fail_msg("dlopen: %s", dlerror());
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t *a = dlsym(h, cases[i].sym);

		assert_non_null(a);
		assert_int_equal(maps_file_off(getpid(), (uintptr_t)a, real, &off), 0);
		sym_off = 99;
		got = elfsym__lookup(es, off, &sym_off);
		if (!got || strcmp(got, cases[i].want) != 0)
			fail_msg("%s: %s -> %s", name, cases[i].sym, got ? got : "(null)");
		assert_int_equal(sym_off, 0);
		assert_int_equal(maps_file_off(getpid(), (uintptr_t)a + 1, real, &off), 0);
		got = elfsym__lookup(es, off, &sym_off);
		assert_non_null(got);
		assert_string_equal(got, cases[i].want);
		assert_int_equal(sym_off, 1);
	}

	/* The unsized assembly routine runs up to the next symbol (8 nops + ret). */
	{
		uint8_t *a = dlsym(h, "fx_asm_entry");

		assert_int_equal(maps_file_off(getpid(), (uintptr_t)a + 8, real, &off), 0);
		got = elfsym__lookup(es, off, &sym_off);
		assert_non_null(got);
		assert_string_equal(got, "fx_asm_entry");
		assert_int_equal(sym_off, 8);
	}

	/* fx_tail_entry is 4 bytes, alone in section fx_tail: its end is the section's end. */
	{
		uint8_t *a = dlsym(h, "fx_tail_entry");

		assert_non_null(a);
		assert_int_equal(maps_file_off(getpid(), (uintptr_t)a + 3, real, &off), 0);
		got = elfsym__lookup(es, off, &sym_off);
		assert_non_null(got);
		assert_string_equal(got, "fx_tail_entry");
		assert_int_equal(sym_off, 3);
		assert_int_equal(maps_file_off(getpid(), (uintptr_t)a + 4, real, &off), 0);
		got = elfsym__lookup(es, off, &sym_off);
		if (got && strcmp(got, "fx_tail_entry") == 0)
			fail_msg("%s: fx_tail_entry runs past its section", name);
	}

	/* fx_inner (2 bytes at fx_outer+4) nests in fx_outer (10 bytes). */
	{
		uint8_t *a = dlsym(h, "fx_outer");
		struct {
			int delta;
			const char *want;
			int want_off;
		} nest[] = {
			{ 0, "fx_outer", 0 }, { 3, "fx_outer", 3 },
			{ 4, expect_locals ? "fx_inner" : "fx_outer", expect_locals ? 0 : 4 },
			{ 5, expect_locals ? "fx_inner" : "fx_outer", expect_locals ? 1 : 5 },
			{ 6, "fx_outer", 6 }, { 9, "fx_outer", 9 },
		};

		assert_non_null(a);
		for (i = 0; i < sizeof(nest) / sizeof(nest[0]); i++) {
			assert_int_equal(maps_file_off(getpid(), (uintptr_t)a + nest[i].delta, real, &off), 0);
			got = elfsym__lookup(es, off, &sym_off);
			if (!got || strcmp(got, nest[i].want) != 0 || (int)sym_off != nest[i].want_off)
				fail_msg("%s: fx_outer+%d -> %s+%d, want %s+%d", name, nest[i].delta,
					 got ? got : "(null)", got ? (int)sym_off : 0, nest[i].want,
					 nest[i].want_off);
		}
	}

	hidden_addr = (void *(*)(void))dlsym(h, "fx_lib_hidden_addr");
	local_add_addr = (void *(*)(void))dlsym(h, "fx_lib_local_add_addr");
	assert_non_null(hidden_addr);
	assert_non_null(local_add_addr);
	assert_int_equal(maps_file_off(getpid(), (uintptr_t)hidden_addr(), real, &off), 0);
	got = elfsym__lookup(es, off, &sym_off);
	if (expect_locals) {
		assert_non_null(got);
		assert_string_equal(got, "fx_lib_hidden");
		assert_int_equal(sym_off, 0);
	} else {
		/* Stripped: no symbol covers a local function (the neighbours have sizes). */
		assert_null(got);
	}
	/* A local alias of a global: still the global name. */
	assert_int_equal(maps_file_off(getpid(), (uintptr_t)local_add_addr(), real, &off), 0);
	got = elfsym__lookup(es, off, &sym_off);
	assert_non_null(got);
	assert_string_equal(got, "fx_lib_add");

	dlclose(h);
	elfsym__free(es);
}

static void test_elfsym_shared_object(void **state)
{
	(void)state;
	check_shared("fx_lib.so", "fx_lib.so", 1);
}

static void test_elfsym_prelinked(void **state)
{
	struct elfsym *es;
	uint64_t vaddr;

	(void)state;
	check_shared("fx_prelink.so", "fx_prelink.so", 1);
	es = open_fx("fx_prelink.so");
	/* readelf: LOAD 0x001000 -> 0x7001000 (R E). */
	assert_int_equal(elfsym__file_to_vaddr(es, 0x1010, &vaddr), 0);
	assert_int_equal(vaddr, 0x7001010);
	elfsym__free(es);
}

/* A read-only segment whose file range also covers the code, at another address: offsets in
 * the code must still go through the executable segment. */
static void test_elfsym_overlapping_segments(void **state)
{
	char path[PATH_MAX];
	unsigned char *buf;
	struct elfsym *es, *ref;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	size_t len;
	uint64_t off;
	int i, edited = 0, named = 0;

	(void)state;
	fx_path(path, sizeof(path), "fx_lib.so");
	buf = read_all(path, &len);
	eh = (Elf64_Ehdr *)buf;
	assert_int_equal(eh->e_ident[EI_CLASS], ELFCLASS64);
	ph = (Elf64_Phdr *)(buf + eh->e_phoff);
	for (i = 0; i < eh->e_phnum && !edited; i++) {
		if (ph[i].p_type == PT_LOAD && !(ph[i].p_flags & PF_X) && ph[i].p_offset == 0) {
			ph[i].p_filesz = ph[i].p_memsz = len;
			ph[i].p_vaddr = ph[i].p_paddr = 0x100000;
			edited = 1;
		}
	}
	assert_true(edited);
	es = elfsym__open_fd(memfd_with(buf, len), NULL, AT_FDCWD);
	assert_non_null(es);
	ref = open_fx("fx_lib.so");
	for (off = 0x1000; off < 0x1200; off++) {
		const char *want = elfsym__lookup(ref, off, NULL), *got = elfsym__lookup(es, off, NULL);

		if (!want && !got)
			continue;
		if (!want || !got || strcmp(want, got) != 0)
			fail_msg("offset %#" PRIx64 ": %s vs %s", off, want ? want : "-", got ? got : "-");
		named++;
	}
	assert_true(named > 100);
	elfsym__free(ref);
	elfsym__free(es);
	free(buf);
}

static void test_elfsym_stripped_dynsym_only(void **state)
{
	struct elfsym *full, *stripped;
	struct elfsym_stats st;

	(void)state;
	/* Symbols from the stripped file, addresses from the unstripped one (same code). */
	check_shared("fx_stripped.so", "fx_lib.so", 0);
	stripped = open_fx("fx_stripped.so");
	full = open_fx("fx_lib.so");
	elfsym__stats(stripped, &st);
	assert_int_equal(st.symtab, 0);
	assert_true(st.dynsym > 0);
	assert_null(elfsym__debug_file(stripped));
	assert_true(elfsym__count(stripped) < elfsym__count(full));
	elfsym__free(stripped);
	elfsym__free(full);
}


/* ---- real libraries ------------------------------------------------------------------------ */



/* libcoreclr (lld layout: text p_vaddr = p_offset + 0x1000): exported functions by file offset,
 * with offsets computed from readelf's program headers. */
static void test_elfsym_coreclr_layout(void **state)
{
	uint64_t x_off = 0, x_vaddr = 0, x_filesz = 0;
	struct nmsym *v = NULL;
	struct elfsym *es;
	int n, i, checked = 0;

	(void)state;
	if (access(CORECLR_PATH, R_OK) != 0) {
		print_message("skipped: %s not installed\n", CORECLR_PATH);
		skip();
	}
	assert_int_equal(exec_segment(CORECLR_PATH, &x_off, &x_vaddr, &x_filesz), 0);
	assert_true(x_vaddr != x_off);	/* the layout this test is about */

	es = elfsym__open(AT_FDCWD, CORECLR_PATH);
	assert_non_null(es);
	n = nm_load(CORECLR_PATH, 1, &v);
	assert_true(n > 0);
	for (i = 0; i < n; i++) {
		uint64_t sym_off = 99;
		const char *got;

		if (v[i].value < x_vaddr || v[i].value - x_vaddr >= x_filesz)
			continue;
		got = elfsym__lookup(es, v[i].value - x_vaddr + x_off, &sym_off);
		assert_non_null(got);
		assert_string_equal(got, v[i].name);
		assert_int_equal(sym_off, 0);
		checked++;
	}
	assert_true(checked > 0);
	free(v);
	elfsym__free(es);
}


/* ---- function ranges (.eh_frame) ----------------------------------------------------------- */

/* Stripped: a local function no symbol names has one function start for all its addresses,
 * and an unsized exported routine before it does not swallow it. */
static void test_elfsym_fde_grouping(void **state)
{
	const char *locals[] = { "fx_lib_hidden", "fx_asm_hidden" };
	struct elfsym *es, *full;
	struct elfsym_stats st;
	uint64_t v, size, start, open_v, open_size;
	size_t i;

	(void)state;
	es = open_fx("fx_stripped.so");
	full = open_fx("fx_lib.so");
	elfsym__stats(es, &st);
	assert_true(st.fdes > 5);
	assert_int_equal(st.fde_malformed, 0);
	for (i = 0; i < sizeof(locals) / sizeof(locals[0]); i++) {
		nm_size("fx_lib.so", locals[i], &v, &size);
		assert_true(size > 1);
		for (uint64_t d = 0; d < size; d++) {
			if (elfsym__lookup_vaddr(es, v + d, NULL))
				fail_msg("%s+%" PRIu64 " named %s in the stripped file", locals[i], d,
					 elfsym__lookup_vaddr(es, v + d, NULL));
			assert_int_equal(elfsym__function_start(es, v + d, &start), 0);
			assert_int_equal(start, v);
		}
		/* The unstripped file names it; the function before it has another start. */
		assert_string_equal(elfsym__lookup_vaddr(full, v, NULL), locals[i]);
		if (elfsym__function_start(es, v - 1, &start) == 0)
			assert_true(start != v);
	}
	/* fx_asm_open (exported, unsized, no CFI) still names its own bytes. */
	nm_size("fx_lib.so", "fx_asm_hidden", &v, &size);
	assert_int_equal(elfsym__function_start(es, v, &start), 0);
	open_v = 0;
	{
		struct nmsym *dyn = NULL;
		char path[PATH_MAX];
		int n = nm_load((fx_path(path, sizeof(path), "fx_stripped.so"), path), 1, &dyn);

		for (int k = 0; k < n; k++)
			if (strcmp(dyn[k].name, "fx_asm_open") == 0)
				open_v = dyn[k].value;
		free(dyn);
	}
	assert_true(open_v && open_v < v);
	open_size = v - open_v;
	assert_string_equal(elfsym__lookup_vaddr(es, open_v + 2, NULL), "fx_asm_open");
	assert_true(open_size >= 3);
	assert_int_equal(elfsym__function_start(es, 0, &start), -ENOENT);
	elfsym__free(full);
	elfsym__free(es);
}

/* libcoreclr ships with 9 exported functions: every other code address has its FDE. */
static void test_elfsym_fde_coreclr(void **state)
{
	uint64_t x_off = 0, x_vaddr = 0, x_filesz = 0, start, prev = 0, distinct = 0, covered = 0;
	struct elfsym_stats st;
	struct elfsym *es;

	(void)state;
	if (access(CORECLR_PATH, R_OK) != 0) {
		print_message("skipped: %s not installed\n", CORECLR_PATH);
		skip();
	}
	es = elfsym__open(AT_FDCWD, CORECLR_PATH);
	assert_non_null(es);
	elfsym__stats(es, &st);
	assert_int_equal(exec_segment(CORECLR_PATH, &x_off, &x_vaddr, &x_filesz), 0);
	for (uint64_t v = x_vaddr; v < x_vaddr + x_filesz; v += 16) {
		if (elfsym__function_start(es, v, &start))
			continue;
		assert_true(start <= v);
		covered++;
		if (start != prev)
			distinct++;
		prev = start;
	}
	print_message("libcoreclr: %" PRIu64 " FDEs, %" PRIu64 " functions met, %.1f%% of code covered\n",
		      st.fdes, distinct, 100.0 * covered * 16 / x_filesz);
	assert_true(st.fdes > 10000);
	assert_int_equal(st.fde_malformed, 0);
	assert_true(covered * 16 > x_filesz / 2);
	elfsym__free(es);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elfsym_pie_lookup),
		cmocka_unit_test(test_elfsym_nonpie_lookup),
		cmocka_unit_test(test_elfsym_agrees_with_nm),
		cmocka_unit_test(test_elfsym_libc_agrees_with_nm),
		cmocka_unit_test(test_elfsym_build_id),
		cmocka_unit_test(test_elfsym_shared_object),
		cmocka_unit_test(test_elfsym_prelinked),
		cmocka_unit_test(test_elfsym_overlapping_segments),
		cmocka_unit_test(test_elfsym_stripped_dynsym_only),
		cmocka_unit_test(test_elfsym_coreclr_layout),
		cmocka_unit_test(test_elfsym_fde_grouping),
		cmocka_unit_test(test_elfsym_fde_coreclr),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, fx_setup, fx_teardown);
}
