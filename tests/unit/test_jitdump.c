/* test_jitdump.c: unit tests for the jit-<pid>.dump reader (header, records, splits, times, caps). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "perfmap.h"
#include "testutil.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures/perfmap"
#endif

/* ---- building jitdump bytes -------------------------------------------------------------- */

struct jb {
	uint8_t *p;
	size_t len;
	size_t cap;
	bool swap;	/* write big-endian (the other endianness on x86/arm64) */
};

static void jb_put(struct jb *b, const void *src, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void jb_u32(struct jb *b, uint32_t v)
{
	if (b->swap)
		v = __builtin_bswap32(v);
	jb_put(b, &v, 4);
}

static void jb_u64(struct jb *b, uint64_t v)
{
	if (b->swap)
		v = __builtin_bswap64(v);
	jb_put(b, &v, 8);
}

static void jb_header(struct jb *b, uint32_t version, uint32_t size, uint64_t flags)
{
	jb_u32(b, 0x4A695444);
	jb_u32(b, version);
	jb_u32(b, size);
	jb_u32(b, 62);		/* EM_X86_64 */
	jb_u32(b, 0);
	jb_u32(b, 4242);
	jb_u64(b, 123456789);
	jb_u64(b, flags);
	for (uint32_t i = 40; i < size; i++)
		jb_put(b, "\xee", 1);
}

/* A JIT_CODE_LOAD record as .NET writes it, code bytes included. */
static void jb_load(struct jb *b, uint64_t addr, uint64_t size, uint64_t ts, const char *name)
{
	size_t nl = strlen(name) + 1;

	jb_u32(b, 0);
	jb_u32(b, (uint32_t)(16 + 40 + nl + size));
	jb_u64(b, ts);
	jb_u32(b, 4242);
	jb_u32(b, 4243);
	jb_u64(b, addr);
	jb_u64(b, addr);
	jb_u64(b, size);
	jb_u64(b, 7);
	jb_put(b, name, nl);
	for (uint64_t i = 0; i < size; i++)
		jb_put(b, i % 3 ? "\x00" : "\x44", 1);	/* NULs and magic-ish bytes in the code */
}

/* A code-load record that claims code_size but carries no code bytes (total_size says so). */
static void jb_load_nocode(struct jb *b, uint64_t addr, uint64_t size, uint64_t ts, const char *name)
{
	size_t nl = strlen(name) + 1;

	jb_u32(b, 0);
	jb_u32(b, (uint32_t)(16 + 40 + nl));
	jb_u64(b, ts);
	jb_u32(b, 4242);
	jb_u32(b, 4243);
	jb_u64(b, addr);
	jb_u64(b, addr);
	jb_u64(b, size);
	jb_u64(b, 7);
	jb_put(b, name, nl);
}

static void jb_record(struct jb *b, uint32_t id, uint32_t total, uint64_t ts, size_t payload)
{
	jb_u32(b, id);
	jb_u32(b, total);
	jb_u64(b, ts);
	for (size_t i = 0; i < payload; i++)
		jb_put(b, "\x01", 1);
}

/* ---- fixtures ----------------------------------------------------------------------------- */

static int setup(void **state)
{
	*state = perfmap__new(NULL);
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	perfmap__free(*state);
	return 0;
}

static struct perfmap_stats stats(struct perfmap *pm)
{
	struct perfmap_stats st;

	perfmap__stats(pm, &st);
	return st;
}

static const char *name_at(struct perfmap *pm, uint64_t addr, uint64_t t)
{
	const struct perfmap_sym *s = perfmap__lookup(pm, addr, t);

	return s ? s->name : NULL;
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_jitdump_header_fields(void **state)
{
	struct perfmap *pm = *state;
	struct jb b = { 0 };

	jb_header(&b, 1, 40, 0);
	assert_int_equal(perfmap__feed_jitdump(pm, b.p, b.len), 0);
	assert_int_equal(stats(pm).jitdump_version, 1);
	assert_int_equal(stats(pm).jitdump_pid, 4242);
	assert_int_equal(stats(pm).jitdump_flags, 0);
	assert_int_equal(stats(pm).partial, 0);
	free(b.p);
}

static void test_jitdump_header_rejected(void **state)
{
	struct {
		uint32_t magic, version, size;
	} bad[] = {
		{ 0x4A695445, 1, 40 },	/* wrong magic */
		{ 0x4A695444, 2, 40 },	/* unknown version */
		{ 0x4A695444, 0, 40 },
		{ 0x4A695444, 1, 39 },	/* header too small */
		{ 0x4A695444, 1, 5000 },	/* header absurdly big */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct perfmap *pm = perfmap__new(NULL);
		struct jb b = { 0 };

		jb_u32(&b, bad[i].magic);
		jb_u32(&b, bad[i].version);
		jb_u32(&b, bad[i].size);
		assert_int_equal(perfmap__feed_jitdump(pm, b.p, b.len), -EINVAL);
		/* sticky: the rest of the file is not read as records */
		assert_int_equal(perfmap__feed_jitdump(pm, b.p, b.len), -EINVAL);
		assert_int_equal(stats(pm).jitdump_version, 0);
		assert_int_equal(stats(pm).malformed, 1);
		perfmap__free(pm);
		free(b.p);
	}
}

static void test_jitdump_other_endianness(void **state)
{
	struct perfmap *pm = *state;
	struct jb b = { .swap = true };
	const struct perfmap_sym *s;

	jb_header(&b, 1, 40, 0);
	jb_load(&b, 0x7f0000001000, 0x30, 555, "void [A] A::Swapped()[OptimizedTier1]");
	assert_int_equal(perfmap__feed_jitdump(pm, b.p, b.len), 0);
	assert_int_equal(stats(pm).jitdump_pid, 4242);
	s = perfmap__lookup(pm, 0x7f000000102f, 0);
	assert_non_null(s);
	assert_int_equal(s->size, 0x30);
	assert_int_equal(s->load_ns, 555);
	assert_string_equal(s->name, "void [A] A::Swapped()");
	free(b.p);
}

static void test_jitdump_code_load_records(void **state)
{
	struct perfmap *pm = *state;
	struct jb b = { 0 };
	const struct perfmap_sym *s;

	jb_header(&b, 1, 40, 0);
	jb_load(&b, 0x1000, 0x84, 100, "int32 [App] Program::Fresh0(int32)[QuickJitted]");
	jb_load(&b, 0x2000, 0x17, 200, "int32 [App] Program::Fresh0(int32)[OptimizedTier1]");
	jb_load(&b, 0x3000, 0xa8, 300, "void [System.Private.CoreLib] System.AppContext::Setup(char**,char**,int32)[PreJIT]");
	assert_int_equal(perfmap__feed_jitdump(pm, b.p, b.len), 0);
	assert_int_equal(stats(pm).records, 3);
	assert_int_equal(stats(pm).malformed, 0);
	assert_int_equal(stats(pm).bytes, b.len);
	s = perfmap__lookup(pm, 0x1083, 0);
	assert_non_null(s);
	assert_int_equal(s->source, PERFMAP_SRC_JITDUMP);
	assert_int_equal(s->load_ns, 100);
	assert_string_equal(s->tier, "QuickJitted");
	s = perfmap__lookup(pm, 0x2000, 0);
	assert_string_equal(s->tier, "OptimizedTier1");
	assert_ptr_equal(s->name, perfmap__lookup(pm, 0x1000, 0)->name);
	assert_string_equal(perfmap__lookup(pm, 0x3000, 0)->tier, "PreJIT");
	assert_null(perfmap__lookup(pm, 0x1084, 0));
	free(b.p);
}

/* The same stream split at every byte offset, and fed byte by byte, gives the same result. */
static void test_jitdump_split_anywhere(void **state)
{
	struct jb b = { 0 };

	(void)state;
	jb_header(&b, 1, 48, 0);
	jb_load(&b, 0x1000, 0x20, 100, "a[QuickJitted]");
	jb_record(&b, 2, 16 + 20, 150, 20);	/* JIT_CODE_DEBUG_INFO */
	jb_load(&b, 0x2000, 0x20, 200, "b name with spaces");
	jb_load(&b, 0x3000, 0, 300, "c");	/* code_size 0: malformed, skipped */
	jb_load(&b, 0x4000, 0x10, 400, "d");
	for (size_t cut = 0; cut <= b.len; cut++) {
		struct perfmap *pm = perfmap__new(NULL);
		struct perfmap_stats st;

		assert_int_equal(perfmap__feed_jitdump(pm, b.p, cut), 0);
		assert_int_equal(perfmap__feed_jitdump(pm, b.p + cut, b.len - cut), 0);
		perfmap__stats(pm, &st);
		assert_int_equal(st.records, 3);
		assert_int_equal(st.skipped, 1);
		assert_int_equal(st.malformed, 1);
		assert_int_equal(st.partial, 0);
		assert_string_equal(name_at(pm, 0x1000, 0), "a");
		assert_string_equal(name_at(pm, 0x201f, 0), "b name with spaces");
		assert_string_equal(name_at(pm, 0x400f, 0), "d");
		perfmap__free(pm);
	}
	struct perfmap *pm = perfmap__new(NULL);

	for (size_t i = 0; i < b.len; i++)
		assert_int_equal(perfmap__feed_jitdump(pm, b.p + i, 1), 0);
	assert_int_equal(stats(pm).records, 3);
	assert_string_equal(name_at(pm, 0x2000, 0), "b name with spaces");
	perfmap__free(pm);
	free(b.p);
}

static void test_jitdump_unknown_records_skipped(void **state)
{
	struct perfmap *pm = *state;
	struct jb b = { 0 };

	jb_header(&b, 1, 40, 0);
	jb_record(&b, 1, 16 + 40, 10, 40);	/* JIT_CODE_MOVE */
	jb_record(&b, 2, 16 + 64, 11, 64);	/* JIT_CODE_DEBUG_INFO */
	jb_record(&b, 3, 16, 12, 0);		/* JIT_CODE_CLOSE, no body */
	jb_record(&b, 4, 16 + 8, 13, 8);	/* JIT_CODE_UNWINDING_INFO */
	jb_record(&b, 77, 16 + 3, 14, 3);	/* unknown */
	jb_load(&b, 0x5000, 0x10, 20, "after the unknown ones");
	assert_int_equal(perfmap__feed_jitdump(pm, b.p, b.len), 0);
	assert_int_equal(stats(pm).skipped, 5);
	assert_int_equal(stats(pm).records, 1);
	assert_int_equal(stats(pm).malformed, 0);
	assert_string_equal(name_at(pm, 0x5000, 0), "after the unknown ones");
	free(b.p);
}

/* total_size below the record header or above the cap: framing is lost, the stream stops. */
static void test_jitdump_bad_record_size_stops(void **state)
{
	uint32_t sizes[] = { 0, 15, 1024 };

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct perfmap_limits lim = { .max_record = 512 };
		struct perfmap *pm = perfmap__new(&lim);
		struct jb b = { 0 };

		jb_header(&b, 1, 40, 0);
		jb_load(&b, 0x1000, 0x10, 10, "before");
		jb_record(&b, 0, sizes[i], 11, 0);
		jb_load(&b, 0x2000, 0x10, 12, "after");
		assert_int_equal(perfmap__feed_jitdump(pm, b.p, b.len), 0);
		assert_int_equal(perfmap__feed_jitdump(pm, b.p, b.len), 0);	/* still ignored */
		assert_int_equal(stats(pm).malformed, 1);
		assert_int_equal(stats(pm).jitdump_stopped, 1);
		assert_int_equal(stats(pm).records, 1);
		assert_string_equal(name_at(pm, 0x1000, 0), "before");
		assert_null(name_at(pm, 0x2000, 0));
		perfmap__free(pm);
		free(b.p);
	}
}

/* A framed but inconsistent code-load record is counted and skipped by its size. */
static void test_jitdump_bad_load_record_skipped(void **state)
{
	struct perfmap *pm = *state;
	struct jb b = { 0 };

	jb_header(&b, 1, 40, 0);
	jb_record(&b, 0, 16 + 24, 1, 24);	/* too short to hold the fixed body */
	jb_u32(&b, 0);				/* name without NUL inside the record */
	jb_u32(&b, 16 + 40 + 4);
	jb_u64(&b, 2);
	for (int i = 0; i < 5; i++)
		jb_u64(&b, 0x3000);
	jb_put(&b, "abcd", 4);
	jb_load(&b, UINT64_MAX - 8, 0x10, 3, "wraps");
	jb_load_nocode(&b, 0x4000, 100ULL << 20, 4, "bigger than max_range");
	jb_load(&b, 0x6000, 0x10, 5, "");	/* empty name */
	jb_load(&b, 0x5000, 0x10, 6, "fine");
	assert_int_equal(perfmap__feed_jitdump(pm, b.p, b.len), 0);
	assert_int_equal(stats(pm).malformed, 5);
	assert_int_equal(stats(pm).jitdump_stopped, 0);
	assert_string_equal(name_at(pm, 0x5000, 0), "fine");
	assert_null(name_at(pm, 0x3000, 0));
	assert_null(name_at(pm, 0x4000, 0));
	free(b.p);
}

static void test_jitdump_long_name_capped(void **state)
{
	struct perfmap_limits lim = { .max_line = 16 };
	struct perfmap *pm = perfmap__new(&lim);
	struct jb b = { 0 };

	(void)state;
	jb_header(&b, 1, 40, 0);
	jb_load(&b, 0x1000, 0x10, 1, "a name that is much longer than sixteen bytes");
	jb_load(&b, 0x2000, 0x10, 2, "short enough");
	assert_int_equal(perfmap__feed_jitdump(pm, b.p, b.len), 0);
	assert_int_equal(stats(pm).capped, 1);
	assert_null(name_at(pm, 0x1000, 0));
	assert_string_equal(name_at(pm, 0x2000, 0), "short enough");
	perfmap__free(pm);
	free(b.p);
}

/* Code bytes are skipped without buffering: a record larger than any buffer still parses. */
static void test_jitdump_big_code_not_buffered(void **state)
{
	struct perfmap *pm = *state;
	struct jb b = { 0 };

	jb_header(&b, 1, 40, 0);
	jb_load(&b, 0x100000, 1 << 20, 1, "one MiB of code");
	jb_load(&b, 0x300000, 0x10, 2, "next");
	for (size_t off = 0; off < b.len; off += 4096) {
		size_t n = b.len - off < 4096 ? b.len - off : 4096;

		assert_int_equal(perfmap__feed_jitdump(pm, b.p + off, n), 0);
	}
	assert_string_equal(name_at(pm, 0x1fffff, 0), "one MiB of code");
	assert_string_equal(name_at(pm, 0x300000, 0), "next");
	free(b.p);
}

/* JITDUMP_FLAGS_ARCH_TIMESTAMP: times are CPU counter ticks, not CLOCK_MONOTONIC: ignored. */
static void test_jitdump_arch_timestamp_flag(void **state)
{
	struct perfmap *pm = *state;
	struct jb b = { 0 };
	const struct perfmap_sym *s;

	jb_header(&b, 1, 40, 1);
	jb_load(&b, 0x1000, 0x10, 999999999999, "tsc stamped");
	assert_int_equal(perfmap__feed_jitdump(pm, b.p, b.len), 0);
	assert_int_equal(stats(pm).jitdump_flags, 1);
	s = perfmap__lookup(pm, 0x1000, 1000);	/* a sample "before" the TSC value still resolves */
	assert_non_null(s);
	assert_int_equal(s->load_ns, 0);
	free(b.p);
}

/* Timestamps pick the code live at the sample's time when a range is reused. */
static void test_jitdump_timestamp_selection(void **state)
{
	struct perfmap *pm = *state;
	struct jb b = { 0 };

	jb_header(&b, 1, 40, 0);
	jb_load(&b, 0x7000, 0x40, 1000, "int32 [Anonymously Hosted DynamicMethods Assembly] dynamicClass::lambda_method1(int32)[Optimized]");
	jb_load(&b, 0x7000, 0x40, 2000, "int32 [Anonymously Hosted DynamicMethods Assembly] dynamicClass::lambda_method2(int32)[Optimized]");
	jb_load(&b, 0x7020, 0x40, 3000, "int32 [Anonymously Hosted DynamicMethods Assembly] dynamicClass::lambda_method3(int32)[Optimized]");
	assert_int_equal(perfmap__feed_jitdump(pm, b.p, b.len), 0);
	assert_null(name_at(pm, 0x7010, 999));
	assert_string_equal(name_at(pm, 0x7010, 1000), "int32 [Anonymously Hosted DynamicMethods Assembly] dynamicClass::lambda_method1(int32)");
	assert_string_equal(name_at(pm, 0x7030, 2500), "int32 [Anonymously Hosted DynamicMethods Assembly] dynamicClass::lambda_method2(int32)");
	assert_string_equal(name_at(pm, 0x7030, 3000), "int32 [Anonymously Hosted DynamicMethods Assembly] dynamicClass::lambda_method3(int32)");
	assert_string_equal(name_at(pm, 0x7010, 0), "int32 [Anonymously Hosted DynamicMethods Assembly] dynamicClass::lambda_method2(int32)");
	assert_string_equal(name_at(pm, 0x7050, 0), "int32 [Anonymously Hosted DynamicMethods Assembly] dynamicClass::lambda_method3(int32)");
	free(b.p);
}

/* A jitdump turned on late: the replay of methods jitted before (stamped up to the enable's answer)
 * names samples taken before it; a record after it is timed as usual. */
static void test_jitdump_late_enable_replay_untimed(void **state)
{
	struct perfmap *pm = *state;
	struct jb b = { 0 };

	perfmap__set_jitdump_replay(pm, 5000);
	jb_header(&b, 1, 40, 0);
	jb_load(&b, 0x1000, 0x10, 4000, "void [App] Program::HotLoop()[Optimized]");
	jb_load(&b, 0x2000, 0x10, 5000, "void [App] Program::Outer()[Optimized]");
	jb_load(&b, 0x3000, 0x10, 6000, "void [App] Program::Later()[QuickJitted]");
	assert_int_equal(perfmap__feed_jitdump(pm, b.p, b.len), 0);
	assert_string_equal(name_at(pm, 0x1008, 100), "void [App] Program::HotLoop()");
	assert_string_equal(name_at(pm, 0x2008, 100), "void [App] Program::Outer()");
	assert_null(name_at(pm, 0x3008, 5500));
	assert_string_equal(name_at(pm, 0x3008, 6000), "void [App] Program::Later()");
	free(b.p);
}

/* .NET 10.0.12 with default stub logging: the writev of a 64 KiB stub block fails half way
 * (EFAULT), the runtime closes the file, and the dump ends inside that record for good. */
static void test_jitdump_truncated_record_pending(void **state)
{
	struct perfmap *pm = *state;
	struct jb b = { 0 };
	size_t full;

	jb_header(&b, 1, 40, 0);
	jb_load(&b, 0x7f339ec30000, 0x110, 10, "stub InitThreadManagerPerfMapData<JIT_CopiedWriteBarriers>");
	full = b.len;
	jb_load(&b, 0x7f339fc20000, 0x10000, 20, "stub ReportStubBlock<Unknown>");
	assert_int_equal(perfmap__feed_jitdump(pm, b.p, full + 32854), 0);
	assert_int_equal(stats(pm).records, 2);	/* the name came before the code bytes */
	assert_int_equal(stats(pm).partial, 32854);
	assert_string_equal(name_at(pm, 0x7f339ec30000, 0), "stub InitThreadManagerPerfMapData<JIT_CopiedWriteBarriers>");
	assert_int_equal(perfmap__feed_jitdump(pm, b.p + full + 32854, b.len - full - 32854), 0);
	assert_int_equal(stats(pm).partial, 0);
	free(b.p);
}

/* The real file runtime 10.0.12 left on this machine (see perfmap/README.md). */
static void test_jitdump_real_runtime_fixture(void **state)
{
	struct perfmap *pm = *state;
	int fd = open(FIXTURES "/jit-10.0.12-stubblock.dump", O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(perfmap__read_jitdump_fd(pm, fd), 33281);
	close(fd);
	assert_int_equal(stats(pm).jitdump_version, 1);
	assert_int_equal(stats(pm).jitdump_flags, 0);
	assert_int_equal(stats(pm).jitdump_pid, 6670);
	assert_int_equal(stats(pm).records, 2);
	assert_int_equal(stats(pm).malformed, 0);
	assert_int_equal(stats(pm).partial, 33281 - 40 - 387);
	assert_int_equal(stats(pm).jitdump_partial, 33281 - 40 - 387);
	assert_string_equal(name_at(pm, 0x7f339ec30000 + 0x10f, 0),
			    "stub InitThreadManagerPerfMapData<JIT_CopiedWriteBarriers>");
	assert_string_equal(name_at(pm, 0x7f339fc20000, 0), "stub ReportStubBlock<Unknown>");
}

static void test_jitdump_read_fd_incremental(void **state)
{
	struct perfmap *pm = *state;
	char path[64];
	int wfd = testutil__mkstemp(path, sizeof(path)), rfd;
	struct jb b = { 0 };
	size_t cut;

	assert_true(wfd >= 0);
	rfd = open(path, O_RDONLY);
	assert_true(rfd >= 0);
	jb_header(&b, 1, 40, 0);
	jb_load(&b, 0x1000, 0x100, 10, "first");
	cut = b.len - 50;
	jb_load(&b, 0x2000, 0x100, 20, "second");
	assert_int_equal(write(wfd, b.p, cut), (ssize_t)cut);
	assert_int_equal(perfmap__read_jitdump_fd(pm, rfd), (int64_t)cut);
	assert_non_null(name_at(pm, 0x1000, 0));
	assert_null(name_at(pm, 0x2000, 0));
	assert_int_equal(perfmap__read_jitdump_fd(pm, rfd), 0);
	assert_int_equal(write(wfd, b.p + cut, b.len - cut), (ssize_t)(b.len - cut));
	assert_int_equal(perfmap__read_jitdump_fd(pm, rfd), (int64_t)(b.len - cut));
	assert_string_equal(name_at(pm, 0x2000, 0), "second");
	assert_int_equal(stats(pm).bytes, b.len);
	close(rfd);
	close(wfd);
	unlink(path);
	free(b.p);
}

static void test_jitdump_file_cap(void **state)
{
	struct perfmap_limits lim = { .max_file_bytes = 200 };
	struct perfmap *pm = perfmap__new(&lim);
	struct jb b = { 0 };

	(void)state;
	jb_header(&b, 1, 40, 0);
	jb_load(&b, 0x1000, 0x10, 1, "first");		/* ends at 40 + 78 = 118 */
	jb_load(&b, 0x2000, 0x10, 2, "second");		/* ends at 197: the second feed crosses 200 */
	assert_int_equal(perfmap__feed_jitdump(pm, b.p, b.len), 0);
	assert_int_equal(perfmap__feed_jitdump(pm, b.p, b.len), 0);
	assert_int_equal(stats(pm).bytes, 200);
	assert_int_equal(stats(pm).capped, 1);
	assert_non_null(name_at(pm, 0x1000, 0));
	perfmap__free(pm);
	free(b.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_jitdump_header_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jitdump_header_rejected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jitdump_other_endianness, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jitdump_code_load_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jitdump_split_anywhere, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jitdump_unknown_records_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jitdump_bad_record_size_stops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jitdump_bad_load_record_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jitdump_long_name_capped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jitdump_big_code_not_buffered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jitdump_arch_timestamp_flag, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jitdump_late_enable_replay_untimed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jitdump_timestamp_selection, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jitdump_truncated_record_pending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jitdump_real_runtime_fixture, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jitdump_read_fd_incremental, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jitdump_file_cap, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
