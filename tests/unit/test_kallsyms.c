/* test_kallsyms.c: unit tests for user/kallsyms.c (fixture text, temp files, the live /proc/kallsyms). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kallsyms.h"
#include "testutil.h"

/* Out of order on purpose (modules first); data symbols inside; last line without newline. */
static const char fixture[] =
	"ffffffffc0001000 t ext4_get_block\t[ext4]\n"
	"ffffffffc0001400 T ext4_readdir\t[ext4]\n"
	"ffffffffc0003000 t nft_do_chain\t[nf_tables]\n"
	"ffffffffc0005000 t bpf_prog_6deef7357e7b4530_handle\t[bpf]\n"
	"0000000000000000 A fixed_percpu_data\n"
	"0000000000001000 A cpu_number\n"
	"ffffffff81000000 t srso_alias_untrain_ret\n"
	"ffffffff81000000 T _stext\n"
	"ffffffff81000000 T _text\n"
	"ffffffff81000100 T do_one_initcall\n"
	"ffffffff81000800 W arch_cpu_idle\n"
	"ffffffff81000900 w weak_hook\n"
	"ffffffff81000a00 r some_table\n"
	"ffffffff81001000 T vfs_read\n"
	"ffffffff81001800 T _etext\n"
	"ffffffff82000000 D init_task\n"
	"ffffffff82001000 b bss_thing";

static struct ksyms *parse_fixture(void)
{
	struct ksyms *ks = ksyms__parse(fixture, strlen(fixture));

	if (!ks)
		fail_msg("ksyms__parse: %s", strerror(errno));
	return ks;
}

static char nb[KSYMS_MAX_LINE];	/* names are copied out */

static void expect(const struct ksyms *ks, uint64_t addr, const char *name, uint64_t off,
		   const char *module)
{
	const char *got, *mod = "unset";
	uint64_t got_off = 12345;

	got = ksyms__lookup(ks, addr, &got_off, &mod, nb, sizeof(nb));
	if (!name) {
		if (got)
			fail_msg("%#" PRIx64 ": expected nothing, got %s", addr, got);
		return;
	}
	if (!got)
		fail_msg("%#" PRIx64 ": expected %s, got nothing", addr, name);
	assert_string_equal(got, name);
	assert_int_equal(got_off, off);
	if (module) {
		assert_non_null(mod);
		assert_string_equal(mod, module);
	} else {
		assert_null(mod);
	}
}

static void test_kallsyms_vmlinux_lookup(void **state)
{
	struct ksyms *ks = parse_fixture();

	(void)state;
	expect(ks, 0xffffffff81000100, "do_one_initcall", 0, NULL);
	expect(ks, 0xffffffff810007ff, "do_one_initcall", 0x6ff, NULL);
	expect(ks, 0xffffffff81000800, "arch_cpu_idle", 0, NULL);	/* W is text */
	expect(ks, 0xffffffff81000905, "weak_hook", 5, NULL);		/* w too */
	expect(ks, 0xffffffff81001234, "vfs_read", 0x234, NULL);
	/* Below the first symbol: nothing. */
	expect(ks, 0xffffffff80ffffff, NULL, 0, NULL);
	expect(ks, 0x1000, NULL, 0, NULL);	/* absolute symbols are not places */
	ksyms__free(ks);
}

static void test_kallsyms_aliases(void **state)
{
	struct ksyms *ks = parse_fixture();
	struct ksyms_stats st;

	(void)state;
	/* srso_alias_untrain_ret (t), _stext (T), _text (T): global first, then the shorter. */
	expect(ks, 0xffffffff81000000, "_text", 0, NULL);
	expect(ks, 0xffffffff810000ff, "_text", 0xff, NULL);
	ksyms__stats(ks, &st);
	assert_int_equal(st.aliases, 2);
	ksyms__free(ks);

	/* Already in address order (the input is not re-sorted): the same choice. */
	{
		const char sorted[] = "ffffffff81000000 t srso_alias_untrain_ret\n"
				      "ffffffff81000000 D data_alias\n"
				      "ffffffff81000000 T _stext\n"
				      "ffffffff81000000 T _text\n"
				      "ffffffff81000100 T next_fn\n";

		ks = ksyms__parse(sorted, sizeof(sorted) - 1);
		assert_non_null(ks);
		expect(ks, 0xffffffff81000010, "_text", 0x10, NULL);
		expect(ks, 0xffffffff81000100, "next_fn", 0, NULL);
		ksyms__stats(ks, &st);
		assert_int_equal(st.aliases, 2);
		assert_int_equal(ksyms__count(ks), 2);
		ksyms__free(ks);
	}
}

/* What the table holds: its arrays and the deflated names, not the input. */
static void test_kallsyms_bytes(void **state)
{
	size_t n = 10000, len = 0, cap = n * 40;
	char *buf = malloc(cap);
	struct ksyms_stats st, small;
	struct ksyms *ks;

	(void)state;
	assert_non_null(buf);
	for (size_t i = 0; i < n; i++)
		len += snprintf(buf + len, cap - len, "ffffffff81%06zx T function_%zu\n", i * 0x40, i);
	ks = ksyms__parse(buf, strchr(strchr(buf, '\n') + 1, '\n') + 1 - buf);	/* two lines */
	assert_non_null(ks);
	ksyms__stats(ks, &small);
	ksyms__free(ks);
	ks = ksyms__parse(buf, len);
	assert_non_null(ks);
	assert_int_equal(ksyms__count(ks), n);
	ksyms__stats(ks, &st);
	assert_true(small.bytes > 0 && small.bytes < 1024);
	/* 4-byte starts, a bit for a size that runs to the next start, a module a run; the names
	 * deflated (was 10 bytes a symbol and the names) */
	print_message("  %zu symbols: %" PRIu64 " bytes\n", n, (uint64_t)st.bytes);
	assert_true(st.bytes >= n * 4);
	assert_true(st.bytes < n * 8);
	ksyms__free(ks);
	/* Symbols 4 GiB or more apart keep their full starts. */
	{
		static const char far[] = "0000000100001000 T far_below\n0000000100001100 T far_end\n"
					  "ffffffff81000000 T text_start\nffffffff81000040 T next_one\n";

		ks = ksyms__parse(far, strlen(far));
	}
	assert_non_null(ks);
	expect(ks, 0x100001010, "far_below", 0x10, NULL);
	expect(ks, 0xffffffff81000044, "next_one", 4, NULL);
	expect(ks, 0xffffffff81000010, "text_start", 0x10, NULL);
	ksyms__free(ks);
	free(buf);
	ksyms__stats(NULL, &st);
	assert_int_equal(st.bytes, 0);
}

static void test_kallsyms_modules(void **state)
{
	struct ksyms *ks = parse_fixture();
	struct ksyms_stats st;

	(void)state;
	expect(ks, 0xffffffffc0001010, "ext4_get_block", 0x10, "ext4");
	expect(ks, 0xffffffffc0001400, "ext4_readdir", 0, "ext4");
	expect(ks, 0xffffffffc0003004, "nft_do_chain", 4, "nf_tables");
	expect(ks, 0xffffffffc0005000, "bpf_prog_6deef7357e7b4530_handle", 0, "bpf");
	ksyms__stats(ks, &st);
	assert_int_equal(st.modules, 3);
	/* Module pointers are interned: one string per module. */
	{
		const char *m1 = NULL, *m2 = NULL;

		ksyms__lookup(ks, 0xffffffffc0001000, NULL, &m1, nb, sizeof(nb));
		ksyms__lookup(ks, 0xffffffffc0001400, NULL, &m2, nb, sizeof(nb));
		assert_ptr_equal(m1, m2);
	}
	ksyms__free(ks);
}

static void test_kallsyms_boundaries(void **state)
{
	struct ksyms *ks = parse_fixture();

	(void)state;
	/* A data symbol ends the text symbol before it. */
	expect(ks, 0xffffffff810009ff, "weak_hook", 0xff, NULL);
	expect(ks, 0xffffffff81000a00, NULL, 0, NULL);
	/* ext4_readdir is the module's last symbol before nf_tables: a bounded tail, never into
	 * the next module. */
	expect(ks, 0xffffffffc0001400 + 0x1000, "ext4_readdir", 0x1000, "ext4");
	expect(ks, 0xffffffffc0003000, "nft_do_chain", 0, "nf_tables");
	/* Last symbol of the list: at most KSYMS_TAIL_MAX. */
	expect(ks, 0xffffffffc0005000 + KSYMS_TAIL_MAX - 1, "bpf_prog_6deef7357e7b4530_handle",
	       KSYMS_TAIL_MAX - 1, "bpf");
	expect(ks, 0xffffffffc0005000 + KSYMS_TAIL_MAX, NULL, 0, NULL);
	/* Inside vmlinux a symbol runs to the next one. */
	expect(ks, 0xffffffff810017ff, "vfs_read", 0x7ff, NULL);
	expect(ks, 0xffffffff81001800, "_etext", 0, NULL);
	ksyms__free(ks);
}

static void test_kallsyms_zero_addresses(void **state)
{
	const char hidden[] =
		"0000000000000000 T _stext\n"
		"0000000000000000 T do_one_initcall\n"
		"0000000000000000 t ext4_get_block\t[ext4]\n";
	struct ksyms_stats st;
	struct ksyms *ks;

	(void)state;
	/* kptr_restrict: every address reads 0. The caller must be able to say so. */
	ks = ksyms__parse(hidden, sizeof(hidden) - 1);
	assert_null(ks);
	assert_int_equal(errno, ENODATA);
	/* Zero percpu/absolute entries next to real ones: counted, not fatal. */
	ks = parse_fixture();
	ksyms__stats(ks, &st);
	assert_int_equal(st.zero_addr, 1);
	assert_int_equal(st.other, 4);	/* cpu_number (A), some_table, init_task, bss_thing */
	ksyms__free(ks);
}

static void test_kallsyms_malformed(void **state)
{
	char buf[4096];
	struct ksyms_stats st;
	struct ksyms *ks;
	int n;

	(void)state;
	n = snprintf(buf, sizeof(buf),
		     "garbage line\n"
		     "ffffffff81000000 T\n"			/* no name */
		     "zzzzzzzzzzzzzzzz T bad_addr\n"
		     "ffffffff810000001 T too_many_digits\n"
		     "ffffffff81000000 TT two_type_chars\n"
		     "ffffffff81000000 ! weird_type\n"
		     "ffffffffc0001000 t no_close\t[ext4\n"
		     "ffffffffc0001000 t junk_after\t[ext4] x\n"
		     "\n"
		     "ffffffff81000000 T good_one\n"
		     "ffffffff81000100 T %0*d\n"			/* name longer than a line may be */
		     "ffffffff81000200 T last_no_newline",
		     (int)KSYMS_MAX_LINE, 7);
	assert_true(n > 0 && n < (int)sizeof(buf));
	ks = ksyms__parse(buf, n);
	assert_non_null(ks);
	ksyms__stats(ks, &st);
	assert_int_equal(st.malformed, 9);
	assert_int_equal(st.lines, 11);
	assert_int_equal(ksyms__count(ks), 2);
	expect(ks, 0xffffffff81000010, "good_one", 0x10, NULL);
	expect(ks, 0xffffffff81000200, "last_no_newline", 0, NULL);
	ksyms__free(ks);

	/* Nothing usable at all. */
	ks = ksyms__parse("", 0);
	assert_null(ks);
	assert_int_equal(errno, EINVAL);
	ks = ksyms__parse("\x7f" "ELF\x01\x02\x00\xff\xfe", 9);
	assert_null(ks);
	assert_int_equal(errno, EINVAL);
	ksyms__free(NULL);
	assert_null(ksyms__lookup(NULL, 0xffffffff81000000, NULL, NULL, nb, sizeof(nb)));
}

/* Temp file through setup/teardown. */
static int file_setup(void **state)
{
	char *path = malloc(PATH_MAX);

	if (!path || testutil__temp_file(path, PATH_MAX, fixture, strlen(fixture))) {
		free(path);
		return -1;
	}
	*state = path;
	return 0;
}

static int file_teardown(void **state)
{
	unlink(*state);
	free(*state);
	return 0;
}

static void test_kallsyms_load_file(void **state)
{
	struct ksyms *ks = ksyms__load(*state);

	assert_non_null(ks);
	assert_int_equal(ksyms__count(ks), 10);	/* 12 text lines, two aliases */
	expect(ks, 0xffffffff81001004, "vfs_read", 4, NULL);
	expect(ks, 0xffffffffc0003000, "nft_do_chain", 0, "nf_tables");
	ksyms__free(ks);
	ks = ksyms__load("/nonexistent/kallsyms");
	assert_null(ks);
	assert_int_equal(errno, ENOENT);
}

/* Mutated fixture and random bytes: never a crash; whatever loads answers lookups. */
static void test_kallsyms_fuzz(void **state)
{
	size_t len = strlen(fixture), i;
	uint32_t seed = 99;
	int it, loaded = 0, refused = 0;
	char *buf = malloc(len);

	(void)state;
	assert_non_null(buf);
	for (it = 0; it < 20000; it++) {
		struct ksyms *ks;
		size_t use = len;
		int k;

		memcpy(buf, fixture, len);
		for (k = 0; k < 1 + it % 6; k++) {
			seed = seed * 1103515245 + 12345;
			i = (seed >> 8) % len;
			seed = seed * 1103515245 + 12345;
			/* Favour the characters the parser branches on. */
			buf[i] = (seed >> 16) % 3 ? " \t\n[]0fTtwA\0"[(seed >> 20) % 13] : (char)(seed >> 16);
		}
		if (it % 7 == 0)
			use = (seed >> 4) % len;
		ks = ksyms__parse(buf, use);
		if (!ks) {
			assert_true(errno == EINVAL || errno == ENODATA);
			refused++;
			continue;
		}
		loaded++;
		for (i = 0; i < 64; i++)
			ksyms__lookup(ks, 0xffffffff81000000 + i * 0x40, NULL, NULL, nb, sizeof(nb));
		ksyms__lookup(ks, 0xffffffffc0001000, NULL, NULL, nb, sizeof(nb));
		ksyms__free(ks);
	}
	free(buf);
	print_message("fuzz: %d loaded, %d refused\n", loaded, refused);
	assert_true(loaded > 0);
}

/* The live kernel: every 50th text line, parsed here with sscanf, must resolve to a name at the
 * same address. */
static void test_kallsyms_live(void **state)
{
	char line[1024], name[600], type;
	uint64_t addr, off, checked = 0, i = 0;
	double t0, load_ms, look_ns;
	struct ksyms *ks;
	FILE *f;

	(void)state;
	t0 = testutil__now_ms();
	ks = ksyms__load("/proc/kallsyms");
	load_ms = testutil__now_ms() - t0;
	if (!ks && (errno == ENODATA || errno == EACCES || errno == ENOENT)) {
		print_message("skipped: /proc/kallsyms unusable (%s)\n", strerror(errno));
		skip();
	}
	assert_non_null(ks);
	f = fopen("/proc/kallsyms", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		const char *got;

		if (sscanf(line, "%" SCNx64 " %c %599s", &addr, &type, name) != 3 ||
		    (type != 'T' && type != 't') || i++ % 50)
			continue;
		got = ksyms__lookup(ks, addr, &off, NULL, nb, sizeof(nb));
		if (!got)
			fail_msg("%s at %#" PRIx64 " not found", name, addr);
		assert_int_equal(off, 0);
		checked++;
	}
	fclose(f);
	assert_true(checked > 100);

	t0 = testutil__now_ms();
	for (i = 0; i < 20000; i++) {	/* each inflates a block of names: microseconds */
		addr = 0xffffffff81000000 + (i * 2654435761u) % (32u << 20);
		ksyms__lookup(ks, addr, &off, NULL, nb, sizeof(nb));
	}
	look_ns = (testutil__now_ms() - t0) * 1e6 / 20000;
	print_message("/proc/kallsyms: load %.1f ms, %" PRIu64 " symbols, lookup %.1f ns, %" PRIu64
		      " checked\n", load_ms, ksyms__count(ks), look_ns, checked);
	ksyms__free(ks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kallsyms_vmlinux_lookup),
		cmocka_unit_test(test_kallsyms_aliases),
		cmocka_unit_test(test_kallsyms_modules),
		cmocka_unit_test(test_kallsyms_bytes),
		cmocka_unit_test(test_kallsyms_boundaries),
		cmocka_unit_test(test_kallsyms_zero_addresses),
		cmocka_unit_test(test_kallsyms_malformed),
		cmocka_unit_test_setup_teardown(test_kallsyms_load_file, file_setup, file_teardown),
		cmocka_unit_test(test_kallsyms_fuzz),
		cmocka_unit_test(test_kallsyms_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
