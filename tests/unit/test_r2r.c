/* test_r2r.c: unit tests for the ReadyToRun image reader, on the installed runtime's real
 * System.Private.CoreLib.dll (names and code ranges against the runtime's own jitdump records)
 * and on truncated, sparse and garbage images. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "r2r.h"
#include "symbudget.h"
#include "testutil.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures/perfmap"
#endif

/* The runtime the fixture was recorded on; other versions get the version-free checks only. */
#define CORELIB_10012 "/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.12/System.Private.CoreLib.dll"

static char corelib[4096];

/* Any installed CoreLib (the 10.0.12 one first); 0, or -1 to skip. */
static int find_corelib(void)
{
	FILE *f;

	if (!access(CORELIB_10012, R_OK)) {
		snprintf(corelib, sizeof(corelib), "%s", CORELIB_10012);
		return 0;
	}
	f = popen("ls -d /usr/share/dotnet/shared/Microsoft.NETCore.App/*/System.Private.CoreLib.dll "
		  "2>/dev/null | tail -1", "r");
	if (!f)
		return -1;
	if (!fgets(corelib, sizeof(corelib), f))
		corelib[0] = 0;
	pclose(f);
	corelib[strcspn(corelib, "\n")] = 0;
	return corelib[0] ? 0 : -1;
}

static struct r2r_image *open_corelib(void)
{
	int fd = open(corelib, O_RDONLY | O_CLOEXEC);
	struct r2r_image *img;

	assert_true(fd >= 0);
	img = r2r__open_fd(fd, NULL);
	close(fd);
	assert_non_null(img);
	return img;
}

static void *slurp_prefix(const char *path, size_t n, size_t *got)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint8_t *buf = malloc(n);
	ssize_t r;

	assert_true(fd >= 0);
	assert_non_null(buf);
	r = pread(fd, buf, n, 0);
	close(fd);
	assert_true(r > 0);
	*got = r;
	return buf;
}

/* Every runtime function of CoreLib has a method, and the method names read like the runtime's. */
static void test_r2r_corelib_parses(void **state)
{
	struct r2r_image *img;
	struct r2r_image_stats st;
	uint32_t start, end, named = 0, utf8 = 0;
	const char *name;

	if (find_corelib())
		skip();
	img = open_corelib();
	r2r__stats(img, &st);
	print_message("  %s: R2R %u.%u, %u functions, %u methods (%u instantiations), read %.1f MB, "
		      "holds %.1f MB, parsed in %.1f ms\n", corelib, st.major, st.minor, st.functions,
		      st.methods, st.instances, st.bytes_read / 1e6, st.mem_bytes / 1e6,
		      st.parse_ns / 1e6);
	assert_int_equal(st.status, R2R_OK);
	assert_true(st.functions > 10000);
	assert_true(st.methods > 10000);
	assert_true(st.instances > 1000);
	assert_int_equal(st.orphans, 0);
	assert_int_equal(st.bad_entries, 0);
	/* The metadata naming does not use (most of CoreLib's: custom attributes, fields, member
	 * references) is never read (10.0.12: 3.2 MB read; 4.7 MB when the whole metadata was). */
	assert_true(st.bytes_read < 4000000);
	/* What is held is what naming reads, and the functions' table: TypeDef and MethodDef keep
	 * the columns named, the heaps the names and signatures those point at, the instance
	 * section its owner types' signatures, and a function carries its method, with no
	 * per-method table (10.0.12: 2.0 MB held; 2.4 MB with the whole instance section, 2.7 MB
	 * with whole heaps too, 3.5 MB with a 16-byte entry a method too, 4.3 MB with whole rows
	 * too). */
	assert_true(st.mem_bytes < st.bytes_read * 2 / 3);
	for (uint32_t i = 0; !r2r__function(img, i, &start, &end, &name); i++) {
		assert_true(end > start);
		if (!name)
			continue;
		named++;
		assert_non_null(strstr(name, "[System.Private.CoreLib] "));
		assert_non_null(strstr(name, "::"));
		if (strstr(name, "System.Text.Unicode.Utf8Utility::TranscodeToUtf16("))
			utf8++;
	}
	r2r__stats(img, &st);
	assert_int_equal(named, st.functions);
	assert_int_equal(st.bad_sigs, 0);
	assert_true(utf8 >= 1);
	r2r__free(img);
}

/* Names and code ranges agree with what runtime 10.0.12 itself logged for the same methods. */
static void test_r2r_corelib_matches_runtime(void **state)
{
	char line[4096];
	struct r2r_image *img;
	unsigned checked = 0;
	FILE *f;

	if (access(CORELIB_10012, R_OK))
		skip();
	snprintf(corelib, sizeof(corelib), "%s", CORELIB_10012);
	img = open_corelib();
	f = fopen(FIXTURES "/r2r-corelib-10.0.12.txt", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned rva, size;
		uint32_t start, end;
		int n = 0;
		const char *name, *last;

		if (line[0] == '#' || sscanf(line, "%x %x %n", &rva, &size, &n) != 2 || !n)
			continue;
		line[strcspn(line, "\n")] = 0;
		name = r2r__lookup(img, rva, &start, &end);
		if (!name || strcmp(name, line + n))
			fail_msg("rva 0x%x: runtime says '%s', image says '%s'", rva, line + n,
				 name ? name : "(none)");
		assert_int_equal(start, rva);	/* the method's entry is a function's start */
		assert_true(end - start <= size);
		/* Its last byte (a funclet's, when it has some) is the same method. */
		last = r2r__lookup(img, rva + size - 1, NULL, NULL);
		assert_non_null(last);
		assert_string_equal(last, line + n);
		checked++;
	}
	fclose(f);
	assert_true(checked >= 50);
	r2r__free(img);
}

/* File offsets map to RVAs through the section table, as the loader maps them. */
static void test_r2r_file_to_rva(void **state)
{
	struct r2r_image *img;
	uint32_t rva = 0, start, end;
	const char *name;

	if (find_corelib())
		skip();
	img = open_corelib();
	assert_int_equal(r2r__function(img, 0, &start, &end, &name), 0);
	/* .text of the 10.0.x images: RVA 0x10200 at file offset 0x200 */
	assert_int_equal(r2r__file_to_rva(img, 0x200, &rva), 0);
	assert_int_equal(rva, 0x10200);
	assert_int_equal(r2r__file_to_rva(img, 1ull << 40, &rva), -ENOENT);
	assert_null(r2r__lookup(img, 0, NULL, NULL));
	assert_null(r2r__lookup(img, UINT32_MAX, NULL, NULL));
	r2r__free(img);
}

/* Cut short anywhere, the image is refused with a cause (never a crash, never half a table). */
static void test_r2r_truncated(void **state)
{
	static const size_t cuts[] = { 0, 1, 63, 64, 200, 0x200, 4096, 65536, 1 << 20, 4 << 20 };
	size_t len;
	uint8_t *buf;

	if (find_corelib())
		skip();
	buf = slurp_prefix(corelib, 4 << 20, &len);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		struct r2r_image *img = r2r__open_buf(buf, cuts[i] < len ? cuts[i] : len, NULL);
		struct r2r_image_stats st;
		uint32_t s, e;
		const char *n;

		assert_non_null(img);
		r2r__stats(img, &st);
		assert_int_not_equal(st.status, R2R_OK);
		assert_int_equal(st.functions, 0);
		assert_int_equal(r2r__function(img, 0, &s, &e, &n), -ENOENT);
		assert_true(strlen(r2r__status_str(st.status)) > 0);
		r2r__free(img);
	}
	free(buf);
}

static enum r2r_status status_of(const void *buf, size_t len)
{
	struct r2r_image *img = r2r__open_buf(buf, len, NULL);
	struct r2r_image_stats st;

	assert_non_null(img);
	r2r__stats(img, &st);
	r2r__free(img);
	return st.status;
}

/* Garbage, native files and broken headers are told apart by cause. */
static void test_r2r_garbage(void **state)
{
	uint8_t junk[8192];
	size_t len;
	uint8_t *buf;

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 2654435761u >> 13);
	assert_int_equal(status_of(junk, sizeof(junk)), R2R_NOT_PE);
	assert_int_equal(status_of("MZ", 2), R2R_NOT_PE);
	assert_int_equal(status_of(NULL, 0), R2R_NOT_PE);
	buf = (uint8_t *)testutil__slurp("/proc/self/exe", &len);	/* an ELF file */
	assert_non_null(buf);
	assert_int_equal(status_of(buf, len), R2R_NOT_PE);
	free(buf);
	if (find_corelib())
		return;
	buf = slurp_prefix(corelib, 64 << 20, &len);
	/* the whole image from a buffer parses as from its file */
	{
		struct r2r_image *img = r2r__open_buf(buf, len, NULL);
		struct r2r_image_stats st;

		r2r__stats(img, &st);
		assert_int_equal(st.status, R2R_OK);
		r2r__free(img);
	}
	/* e_lfanew pointing past the end */
	memcpy(junk, buf, 64);
	junk[0x3c] = 0xff;
	junk[0x3d] = 0xff;
	junk[0x3e] = 0x0f;
	assert_int_equal(status_of(junk, sizeof(junk)), R2R_NOT_PE);
	/* the metadata signature broken */
	{
		uint8_t *p = memmem(buf, len, "BSJB", 4);

		assert_non_null(p);
		p[0] = 'X';
		assert_int_equal(status_of(buf, len), R2R_BAD_METADATA);
		p[0] = 'B';
		p = memmem(buf, len, "RTR\0", 4);
		assert_non_null(p);
		p[0] = 'X';
		assert_int_equal(status_of(buf, len), R2R_NOT_R2R);
	}
	free(buf);
}

/* A 4 GiB sparse file with CoreLib's headers: parsed in bounded time and reads. */
static void test_r2r_sparse_huge(void **state)
{
	char path[PATH_MAX];
	struct r2r_image *img;
	struct r2r_image_stats st;
	size_t len;
	uint8_t *buf;
	int fd;

	if (find_corelib())
		skip();
	buf = slurp_prefix(corelib, 1 << 20, &len);
	/* every section claims a huge size: the caps, not the file, bound the reads */
	fd = testutil__mkstemp(path, sizeof(path));
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	assert_int_equal(ftruncate(fd, 4ull << 30), 0);
	img = r2r__open_fd(fd, NULL);
	assert_non_null(img);
	r2r__stats(img, &st);
	print_message("  sparse 4 GiB: %s, read %.1f MB in %.1f ms\n", r2r__status_str(st.status),
		      st.bytes_read / 1e6, st.parse_ns / 1e6);
	assert_true(st.bytes_read < 256ull << 20);
	assert_true(st.parse_ns < 5000000000ull);
	r2r__free(img);
	/* tight caps refuse it outright */
	img = r2r__open_fd(fd, &(struct r2r_limits){ .max_metadata = 4096 });
	r2r__stats(img, &st);
	assert_int_equal(st.status, R2R_TOO_BIG);
	r2r__free(img);
	close(fd);
	unlink(path);
	free(buf);
}

/* One parse per file identity, shared by every fd of it, freed with the last reference. */
static void test_r2r_cache(void **state)
{
	struct r2r_image *a, *b, *c;
	char path[PATH_MAX];
	int fd1, fd2, fd3;

	if (find_corelib())
		skip();
	fd1 = open(corelib, O_RDONLY | O_CLOEXEC);
	fd2 = open(corelib, O_RDONLY | O_CLOEXEC);
	assert_true(fd1 >= 0 && fd2 >= 0);
	assert_int_equal(r2r__cached(), 0);
	a = r2r__get(fd1);
	b = r2r__get(fd2);
	assert_non_null(a);
	assert_ptr_equal(a, b);
	assert_int_equal(r2r__cached(), 1);
	/* another file: another entry, even with the same content */
	assert_int_equal(testutil__temp_file(path, sizeof(path), "MZ", 2), 0);
	fd3 = open(path, O_RDONLY | O_CLOEXEC);
	c = r2r__get(fd3);
	assert_non_null(c);
	assert_ptr_not_equal(c, a);
	assert_int_equal(r2r__cached(), 2);
	r2r__put(c);
	assert_int_equal(r2r__cached(), 1);
	r2r__put(a);
	assert_int_equal(r2r__cached(), 1);	/* b still holds it */
	assert_int_equal(r2r__function(b, 0, &(uint32_t){ 0 }, &(uint32_t){ 0 }, &(const char *){ NULL }), 0);
	r2r__put(b);
	assert_int_equal(r2r__cached(), 0);
	r2r__put(NULL);
	close(fd1);
	close(fd2);
	close(fd3);
	unlink(path);
}

/* A cached image takes what its tables hold from the symbol budget and gives it back with its
 * last reference; one that does not fit is handed out empty (R2R_OVER_BUDGET), not cached. */
static void test_r2r_cache_within_budget(void **state)
{
	struct r2r_image_stats st;
	struct symbudget_stats sb;
	struct r2r_image *a, *b;
	int fd;

	if (find_corelib())
		skip();
	fd = open(corelib, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	symbudget__set(1 << 20);	/* CoreLib's tables are larger */
	a = r2r__get(fd);
	assert_non_null(a);
	r2r__stats(a, &st);
	assert_int_equal(st.status, R2R_OVER_BUDGET);
	assert_null(r2r__lookup(a, 0x1000, NULL, NULL));
	assert_int_equal(r2r__cached(), 0);
	symbudget__stats(&sb);
	assert_int_equal(sb.used_by[SB_R2R], 0);
	assert_int_equal(sb.refused_by[SB_R2R], 1);
	r2r__put(a);

	symbudget__set(0);	/* asked again: parsed again, kept */
	b = r2r__get(fd);
	r2r__stats(b, &st);
	assert_int_equal(st.status, R2R_OK);
	assert_int_equal(r2r__cached(), 1);
	symbudget__stats(&sb);
	assert_true(st.mem_bytes > (1 << 20));
	assert_int_equal(sb.used_by[SB_R2R], st.mem_bytes);
	r2r__put(b);
	symbudget__stats(&sb);
	assert_int_equal(sb.used_by[SB_R2R], 0);
	close(fd);
}

/* ---- composite images: tests/fixtures/r2r-composite (make.sh there rebuilds it) ---------- */

#define COMPOSITE_DIR "tests/fixtures/r2r-composite"

static void *slurp(const char *path, size_t *len)
{
	return slurp_prefix(path, 1 << 20, len);
}

/* The composite's code named from its two components' metadata, as the runtime named it. */
static void test_r2r_composite_matches_runtime(void **state)
{
	int fd = open(COMPOSITE_DIR "/CompApp.r2r.dll", O_RDONLY | O_CLOEXEC);
	int dir_fd = open(COMPOSITE_DIR, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct r2r_image *img;
	struct r2r_image_stats st;
	char line[4096];
	unsigned checked = 0, cross = 0;
	uint32_t start, end;
	const char *name;
	FILE *f;

	assert_true(fd >= 0 && dir_fd >= 0);
	img = r2r__open_fd_in(fd, dir_fd, NULL);
	close(fd);
	close(dir_fd);
	r2r__stats(img, &st);
	assert_int_equal(st.status, R2R_OK);
	assert_int_equal(st.components, 2);
	assert_int_equal(st.components_unread, 0);
	assert_int_equal(st.bad_entries, 0);
	assert_int_equal(st.orphans, 0);
	for (uint32_t i = 0; !r2r__function(img, i, &start, &end, &name); i++)
		assert_non_null(name);
	f = fopen(COMPOSITE_DIR "/runtime.txt", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned rva, size;
		int n = 0;

		if (line[0] == '#' || sscanf(line, "%x %x %n", &rva, &size, &n) != 2 || !n)
			continue;
		line[strcspn(line, "\n")] = 0;
		name = r2r__lookup(img, rva, &start, &end);
		if (!name || strcmp(name, line + n))
			fail_msg("rva 0x%x: runtime says '%s', image says '%s'", rva, line + n,
				 name ? name : "(none)");
		assert_int_equal(start, rva);
		/* Lib's generic type over CompApp's struct: an owner type across components */
		if (strstr(name, "[Lib] CompLib.Box`1[CompApp.Point]::"))
			cross++;
		checked++;
	}
	fclose(f);
	assert_true(checked >= 10);
	assert_true(cross >= 2);
	r2r__free(img);
}

/* A component that is missing leaves its methods unnamed (counted); the others are named. A
 * component file is no image of its own: its code is the composite's. */
static void test_r2r_composite_missing_component(void **state)
{
	size_t clen, alen, llen;
	void *comp = slurp(COMPOSITE_DIR "/CompApp.r2r.dll", &clen);
	void *app = slurp(COMPOSITE_DIR "/CompApp.dll", &alen);
	void *lib = slurp(COMPOSITE_DIR "/Lib.dll", &llen);
	struct r2r_named_buf only_app[] = { { "CompApp.dll", app, alen } };
	struct r2r_named_buf wrong[] = { { "CompApp.dll", lib, llen }, { "Lib.dll", app, alen } };
	struct r2r_image *img;
	struct r2r_image_stats st;
	uint32_t start, end, named = 0, total = 0;
	const char *name;

	img = r2r__open_buf_with(comp, clen, only_app, 1, NULL);
	r2r__stats(img, &st);
	assert_int_equal(st.status, R2R_OK);
	assert_int_equal(st.components_unread, 1);
	for (uint32_t i = 0; !r2r__function(img, i, &start, &end, &name); i++, total++)
		if (name) {
			assert_non_null(strstr(name, "[CompApp] "));
			named++;
		}
	print_message("named %u of %u\n", named, total);
	assert_true(named >= 1 && named < total);
	r2r__free(img);
	/* Files swapped: each is another assembly than the manifest says, so neither is used. */
	img = r2r__open_buf_with(comp, clen, wrong, 2, NULL);
	r2r__stats(img, &st);
	assert_int_equal(st.components_unread, 2);
	assert_int_equal(r2r__function(img, 0, &start, &end, &name), 0);
	assert_null(name);
	r2r__free(img);
	assert_int_equal(status_of(app, alen), R2R_COMPONENT);
	free(comp);
	free(app);
	free(lib);
}

/* Cut short anywhere, with whole or cut components: never a crash, never a bad name. */
static void test_r2r_composite_truncated(void **state)
{
	size_t clen, alen, llen;
	void *comp = slurp(COMPOSITE_DIR "/CompApp.r2r.dll", &clen);
	void *app = slurp(COMPOSITE_DIR "/CompApp.dll", &alen);
	void *lib = slurp(COMPOSITE_DIR "/Lib.dll", &llen);

	for (size_t cut = 0; cut <= clen; cut += cut < 1024 ? 7 : 61) {
		struct r2r_named_buf files[] = { { "CompApp.dll", app, alen },
						 { "Lib.dll", lib, cut < llen ? cut : llen } };
		struct r2r_image *img = r2r__open_buf_with(comp, cut, files, 2, NULL);
		uint32_t start, end;
		const char *name;

		assert_non_null(img);
		for (uint32_t i = 0; !r2r__function(img, i, &start, &end, &name); i++)
			assert_true(!name || strstr(name, "::"));
		r2r__free(img);
	}
	free(comp);
	free(app);
	free(lib);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_r2r_corelib_parses),
		cmocka_unit_test(test_r2r_corelib_matches_runtime),
		cmocka_unit_test(test_r2r_file_to_rva),
		cmocka_unit_test(test_r2r_truncated),
		cmocka_unit_test(test_r2r_garbage),
		cmocka_unit_test(test_r2r_sparse_huge),
		cmocka_unit_test(test_r2r_cache_within_budget),
		cmocka_unit_test(test_r2r_cache),
		cmocka_unit_test(test_r2r_composite_matches_runtime),
		cmocka_unit_test(test_r2r_composite_missing_component),
		cmocka_unit_test(test_r2r_composite_truncated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
