/* test_perfmap.c: unit tests for the perf-<pid>.map reader, tier split, caps, twins, fd reads. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "perfmap.h"
#include "symbudget.h"
#include "testutil.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures/perfmap"
#endif

struct ctx {
	struct perfmap *pm;
	char path[64];
	int fd;
};

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return -1;
	c->pm = perfmap__new(NULL);
	c->fd = testutil__mkstemp(c->path, sizeof(c->path));
	if (!c->pm || c->fd < 0)
		return -1;
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;

	perfmap__free(c->pm);
	close(c->fd);
	unlink(c->path);
	free(c);
	return 0;
}

static struct perfmap *PM(void **state)
{
	return ((struct ctx *)*state)->pm;
}

static void feed(struct perfmap *pm, const char *s)
{
	assert_int_equal(perfmap__feed_map(pm, s, strlen(s)), 0);
}

static struct perfmap_stats stats(struct perfmap *pm)
{
	struct perfmap_stats st;

	perfmap__stats(pm, &st);
	return st;
}

static void test_perfmap_basic_line(void **state)
{
	struct perfmap *pm = PM(state);
	const struct perfmap_sym *s;

	feed(pm, "0x7f339fc83480 84 int32 [App] Program::Fresh0(int32)[QuickJitted]\n"
		 "7F339FC83520 87 int32 [App] Program::Fresh1(int32)[QuickJitted]\n");
	s = perfmap__lookup(pm, 0x7f339fc83480, 0);
	assert_non_null(s);
	assert_int_equal(s->start, 0x7f339fc83480);
	assert_int_equal(s->size, 0x84);
	assert_int_equal(s->load_ns, 0);
	assert_int_equal(s->source, PERFMAP_SRC_MAP);
	assert_string_equal(s->name, "int32 [App] Program::Fresh0(int32)");
	assert_string_equal(s->tier, "QuickJitted");
	s = perfmap__lookup(pm, 0x7f339fc83520 + 0x86, 0);	/* no 0x, upper-case hex */
	assert_non_null(s);
	assert_string_equal(s->name, "int32 [App] Program::Fresh1(int32)");
	assert_null(perfmap__lookup(pm, 0x7f339fc83520 + 0x87, 0));
	assert_int_equal(stats(pm).lines, 2);
	assert_int_equal(stats(pm).malformed, 0);
	assert_int_equal(stats(pm).entries, 2);
}

/* Names are the rest of the line: spaces, <>, backticks, [], !0, commas, parentheses, and the
 * "/" "*" MT comments .NET 10.0.12 puts into dynamic method names. */
static void test_perfmap_names_with_every_character(void **state)
{
	struct perfmap *pm = PM(state);
	static const char *names[] = {
		"instance bool [System.Private.CoreLib] System.Threading.ThreadPoolWorkQueue::Dequeue(class System.Threading.ThreadPoolWorkQueueThreadLocals,object&)",
		"instance void [System.Linq] System.Linq.Enumerable+RangeIterator`1[System.Int32]::.ctor(!0,!0)",
		"int32 [Anonymously Hosted DynamicMethods Assembly] dynamicClass::lambda_method1(System.Runtime.CompilerServices.Closure /* MT: 0x7f1c9113b950 */,int32)",
		"void [System.Private.CoreLib] System.Runtime.CompilerServices.AsyncTaskMethodBuilder`1[System.Int32]::AwaitUnsafeOnCompleted(!!0&,class System.Runtime.CompilerServices.IAsyncStateMachineBox)",
		"stub<12> Allocate<FixupPrecode>",
		"  leading spaces are eaten by the separator, inner   spaces kept\t",
	};
	char line[1024];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(line, sizeof(line), "%lx %x %s\n", 0x1000ul + i * 0x100, 0x80, names[i]);
		feed(pm, line);
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) - 1; i++) {
		const struct perfmap_sym *s = perfmap__lookup(pm, 0x1000 + i * 0x100 + 5, 0);

		assert_non_null(s);
		assert_string_equal(s->name, names[i]);
		assert_string_equal(s->tier, "");
	}
	assert_string_equal(perfmap__lookup(pm, 0x1500, 0)->name,
			    "leading spaces are eaten by the separator, inner   spaces kept\t");
}

static void test_perfmap_tier_split(void **state)
{
	static const char *tiers[] = {
		"OptimizedTier1", "QuickJitted", "PreJIT", "MinOptJitted", "Optimized",
		"OptimizedTier1OSR", "InstrumentedTier", "InstrumentedTierOptimized", "PreJit-cold",
		"SomeFutureTier2",
	};
	const char *t;
	size_t tl, n;
	char buf[256];

	(void)state;
	for (size_t i = 0; i < sizeof(tiers) / sizeof(tiers[0]); i++) {
		int len = snprintf(buf, sizeof(buf), "void [A] B`1[System.Int32]::C(!0)[%s]", tiers[i]);

		n = perfmap__split_tier(buf, (size_t)len, &t, &tl);
		assert_int_equal(n, strlen("void [A] B`1[System.Int32]::C(!0)"));
		assert_int_equal(tl, strlen(tiers[i]));
		assert_memory_equal(t, tiers[i], tl);
	}
	/* not tiers: no suffix, a bracket that holds a type, a name that is only a bracket */
	static const char *plain[] = {
		"stub ReportStubBlock<Unknown>", "foo[System.Int32]", "[QuickJitted]", "x[]",
		"x[1abc]", "x[Quick Jitted]", "",
	};
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		n = perfmap__split_tier(plain[i], strlen(plain[i]), &t, &tl);
		assert_int_equal(n, strlen(plain[i]));
		assert_int_equal(tl, 0);
	}
	n = perfmap__split_tier(NULL, 0, &t, &tl);
	assert_int_equal(n, 0);
	assert_int_equal(tl, 0);
}

/* Tiers of one method share one interned name. */
static void test_perfmap_names_interned(void **state)
{
	struct perfmap *pm = PM(state);
	struct perfmap_sym a, b, c;	/* a result lasts until the next lookup: copied */

	feed(pm, "1000 10 int32 [App] Program::Fresh3(int32)[QuickJitted]\n"
		 "2000 10 int32 [App] Program::Fresh3(int32)[InstrumentedTier]\n"
		 "3000 10 int32 [App] Program::Fresh3(int32)[OptimizedTier1]\n"
		 "4000 10 int32 [App] Program::Fresh4(int32)[OptimizedTier1]\n");
	a = *perfmap__lookup(pm, 0x1000, 0);
	b = *perfmap__lookup(pm, 0x2000, 0);
	c = *perfmap__lookup(pm, 0x3000, 0);
	assert_ptr_equal(a.name, b.name);
	assert_ptr_equal(b.name, c.name);
	assert_string_equal(b.tier, "InstrumentedTier");
	assert_ptr_equal(c.tier, perfmap__lookup(pm, 0x4000, 0)->tier);
	assert_ptr_not_equal(c.name, perfmap__lookup(pm, 0x4000, 0)->name);
}

/* A line split anywhere across feeds parses as if fed whole. */
static void test_perfmap_partial_lines_across_feeds(void **state)
{
	static const char text[] = "0x1000 40 void [A] A::B(string, int32)[QuickJitted]\n"
				   "0x2000 8 stub<3> Allocate<FixupPrecode>\n"
				   "0x3000 10 last line without newline[OptimizedTier1]";

	(void)state;
	for (size_t cut = 1; cut < sizeof(text) - 1; cut++) {
		struct perfmap *pm = perfmap__new(NULL);
		struct perfmap_stats st;

		assert_non_null(pm);
		assert_int_equal(perfmap__feed_map(pm, text, cut), 0);
		assert_int_equal(perfmap__feed_map(pm, text + cut, sizeof(text) - 1 - cut), 0);
		assert_non_null(perfmap__lookup(pm, 0x1000, 0));
		assert_string_equal(perfmap__lookup(pm, 0x1000, 0)->name, "void [A] A::B(string, int32)");
		assert_string_equal(perfmap__lookup(pm, 0x2007, 0)->name, "stub<3> Allocate<FixupPrecode>");
		/* the last line waits for its newline: it may still be growing */
		assert_null(perfmap__lookup(pm, 0x3000, 0));
		perfmap__stats(pm, &st);
		assert_int_equal(st.partial, strlen("0x3000 10 last line without newline[OptimizedTier1]"));
		assert_int_equal(perfmap__feed_map(pm, "\n", 1), 0);
		assert_string_equal(perfmap__lookup(pm, 0x3000, 0)->tier, "OptimizedTier1");
		perfmap__stats(pm, &st);
		assert_int_equal(st.lines, 3);
		assert_int_equal(st.partial, 0);
		assert_int_equal(st.malformed, 0);
		perfmap__free(pm);
	}
}

static void test_perfmap_byte_by_byte(void **state)
{
	struct perfmap *pm = PM(state);
	static const char text[] = "7f0000001000 20 a b c\r\n7f0000002000 20 d\n";

	for (size_t i = 0; i < sizeof(text) - 1; i++)
		assert_int_equal(perfmap__feed_map(pm, text + i, 1), 0);
	assert_string_equal(perfmap__lookup(pm, 0x7f0000001000, 0)->name, "a b c");	/* \r dropped */
	assert_string_equal(perfmap__lookup(pm, 0x7f0000002000, 0)->name, "d");
	assert_int_equal(stats(pm).bytes, sizeof(text) - 1);
}

static void test_perfmap_malformed_lines_counted(void **state)
{
	struct perfmap *pm = PM(state);

	feed(pm, "zz 10 not hex\n"
		 "1000 0 zero size\n"
		 "1000 10\n"		/* no name */
		 "1000 10 \n"		/* empty name */
		 "(nil) 10 null start\n"
		 "fffffffffffffff0 20 wraps around\n"
		 "12345678901234567 1 seventeen digits\n"
		 "1000 10000000 larger than max_range\n"
		 "\n"
		 "0x 10 no digits\n"
		 "1000-10 dash\n");
	assert_int_equal(perfmap__feed_map(pm, "1000 10 nul\0inside\n", 19), 0);
	feed(pm, "5000 10 good one\n");
	assert_int_equal(stats(pm).malformed, 12);
	assert_int_equal(stats(pm).lines, 1);
	assert_int_equal(stats(pm).entries, 1);
	assert_null(perfmap__lookup(pm, 0x1000, 0));
	assert_string_equal(perfmap__lookup(pm, 0x5000, 0)->name, "good one");
}

static void test_perfmap_cap_line_length(void **state)
{
	struct perfmap_limits lim = { .max_line = 40 };
	struct perfmap *pm = perfmap__new(&lim);
	char longline[200];

	(void)state;
	assert_non_null(pm);
	memset(longline, 'x', sizeof(longline));
	memcpy(longline, "1000 10 ", 8);
	/* an over-long line split across feeds, then a good one */
	assert_int_equal(perfmap__feed_map(pm, longline, 100), 0);
	assert_int_equal(perfmap__feed_map(pm, longline + 100, 100), 0);
	feed(pm, "tail of the long line\n2000 10 fits in forty bytes\n");
	/* an over-long line in one buffer */
	feed(pm, "3000 10 this line is clearly longer than forty bytes\n4000 10 ok\n");
	assert_int_equal(stats(pm).capped, 2);
	assert_int_equal(stats(pm).lines, 2);
	assert_null(perfmap__lookup(pm, 0x1000, 0));
	assert_null(perfmap__lookup(pm, 0x3000, 0));
	assert_string_equal(perfmap__lookup(pm, 0x2000, 0)->name, "fits in forty bytes");
	assert_string_equal(perfmap__lookup(pm, 0x4000, 0)->name, "ok");
	assert_true(stats(pm).partial <= 40);
	perfmap__free(pm);
}

static void test_perfmap_cap_entries_and_file(void **state)
{
	struct perfmap_limits lim = { .max_entries = 3, .max_file_bytes = 100 };
	struct perfmap *pm = perfmap__new(&lim);
	char line[64];

	(void)state;
	assert_non_null(pm);
	for (int i = 0; i < 5; i++) {
		snprintf(line, sizeof(line), "%x 10 m%d\n", 0x1000 + i * 0x10, i);
		feed(pm, line);
	}
	assert_int_equal(stats(pm).entries, 3);
	assert_int_equal(stats(pm).capped, 2);
	assert_null(perfmap__lookup(pm, 0x1030, 0));
	/* 5 lines of 11 bytes = 55; the file cap (100) drops the rest of this feed, once */
	feed(pm, "9000 10 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n");
	feed(pm, "9100 10 b\n");
	assert_int_equal(stats(pm).bytes, 100);
	assert_int_equal(stats(pm).capped, 3);
	assert_null(perfmap__lookup(pm, 0x9100, 0));
	perfmap__free(pm);
}

/* Later lines win over older ones for the same addresses (freed code reused). */
static void test_perfmap_newer_line_wins(void **state)
{
	struct perfmap *pm = PM(state);

	feed(pm, "7f339c204688 f stub CreateHelper<DynamicHelper>\n");
	feed(pm, "7f339c204688 12 stub CreateHelperArgMove<DynamicHelper>\n");
	assert_string_equal(perfmap__lookup(pm, 0x7f339c204688, 0)->name,
			    "stub CreateHelperArgMove<DynamicHelper>");
	feed(pm, "1000 20 first\n1000 20 second\n");	/* same range, same feed */
	assert_string_equal(perfmap__lookup(pm, 0x1000, 0)->name, "second");
	/* map lines have no load time: a sample time never hides them */
	assert_string_equal(perfmap__lookup(pm, 0x1000, 1)->name, "second");
}

static void test_perfmap_stub_block_vs_stub(void **state)
{
	struct perfmap *pm = PM(state);

	feed(pm, "7f0000010100 18 stub Allocate<FixupPrecode>\n"
		 "7f0000010000 10000 stub ReportStubBlock<MethodCallThunk>\n"
		 "7f0000012000 18 stub<7> Allocate<FixupPrecode>\n");
	assert_string_equal(perfmap__lookup(pm, 0x7f0000010100, 0)->name, "stub Allocate<FixupPrecode>");
	assert_string_equal(perfmap__lookup(pm, 0x7f0000012010, 0)->name, "stub<7> Allocate<FixupPrecode>");
	assert_string_equal(perfmap__lookup(pm, 0x7f0000013000, 0)->name,
			    "stub ReportStubBlock<MethodCallThunk>");
}

/* Little-endian jitdump bytes for the twin tests. */
static size_t jd_bytes(uint8_t *out, uint64_t addr, uint64_t size, uint64_t ts, const char *name,
		       bool header)
{
	size_t off = 0, nl = strlen(name) + 1;
	uint32_t h[6] = { 0x4A695444, 1, 40, 62, 0, 77 };
	uint64_t h64[2] = { 1, 0 };
	uint32_t r[2] = { 0, (uint32_t)(16 + 40 + nl + size) };
	uint32_t pt[2] = { 77, 78 };
	uint64_t body[4] = { addr, addr, size, 1 };

	if (header) {
		memcpy(out, h, 24);
		memcpy(out + 24, h64, 16);
		off = 40;
	}
	memcpy(out + off, r, 8);
	memcpy(out + off + 8, &ts, 8);
	memcpy(out + off + 16, pt, 8);
	memcpy(out + off + 24, body, 32);
	memcpy(out + off + 56, name, nl);
	memset(out + off + 56 + nl, 0xcc, size);
	return off + 56 + nl + size;
}

/* DOTNET_PerfMapEnabled=1 logs each method to both files: one answer, the jitdump one. */
static void test_perfmap_twins_deduplicated(void **state)
{
	struct perfmap *pm = PM(state);
	uint8_t buf[512];
	size_t n;
	const struct perfmap_sym *s;

	/* map first, then the jitdump twin */
	feed(pm, "1000 20 int32 [App] Program::Fresh0(int32)[QuickJitted]\n"
		 "3000 20 int32 [App] Program::OnlyInMap(int32)[QuickJitted]\n");
	n = jd_bytes(buf, 0x1000, 0x20, 5000, "int32 [App] Program::Fresh0(int32)[QuickJitted]", true);
	assert_int_equal(perfmap__feed_jitdump(pm, buf, n), 0);
	s = perfmap__lookup(pm, 0x1010, 0);
	assert_int_equal(s->source, PERFMAP_SRC_JITDUMP);
	assert_int_equal(s->load_ns, 5000);
	assert_null(perfmap__lookup(pm, 0x1010, 4000));	/* the twin's time applies */
	/* jitdump first, then the map twin */
	n = jd_bytes(buf, 0x2000, 0x20, 6000, "void [App] Program::Other()[OptimizedTier1]", false);
	assert_int_equal(perfmap__feed_jitdump(pm, buf, n), 0);
	feed(pm, "2000 20 void [App] Program::Other()[OptimizedTier1]\n");
	s = perfmap__lookup(pm, 0x2000, 0);
	assert_int_equal(s->source, PERFMAP_SRC_JITDUMP);
	assert_null(perfmap__lookup(pm, 0x2000, 5999));
	/* same range, different tier: not a twin */
	feed(pm, "2000 20 void [App] Program::Other()[QuickJitted]\n");
	assert_int_equal(stats(pm).dups, 2);
	assert_string_equal(perfmap__lookup(pm, 0x2000, 0)->tier, "QuickJitted");
	assert_int_equal(perfmap__lookup(pm, 0x3000, 0)->source, PERFMAP_SRC_MAP);
	assert_int_equal(stats(pm).entries, 4);
}

/* The same stub re-created at the same place is logged again with the same text: every map
 * copy of it yields to the jitdump, whichever file is read first. */
static void test_perfmap_twins_repeated_key(void **state)
{
	struct perfmap *pm = PM(state);
	static const char *line = "1000 20 stub CreateHelper<DynamicHelper>\n";
	uint8_t buf[512];
	size_t n;

	feed(pm, line);
	feed(pm, "1008 20 stub CreateReturnConst<DynamicHelper>\n");
	feed(pm, line);
	n = jd_bytes(buf, 0x1000, 0x20, 100, "stub CreateHelper<DynamicHelper>", true);
	assert_int_equal(perfmap__feed_jitdump(pm, buf, n), 0);
	assert_int_equal(stats(pm).dups, 2);
	assert_int_equal(perfmap__lookup(pm, 0x1000, 0)->source, PERFMAP_SRC_JITDUMP);
	assert_int_equal(perfmap__lookup(pm, 0x1000, 0)->load_ns, 100);
	/* the map copy of the second stub, without a jitdump twin, is newer where they overlap */
	assert_string_equal(perfmap__lookup(pm, 0x1010, 0)->name, "stub CreateReturnConst<DynamicHelper>");
	feed(pm, line);	/* logged once more: the jitdump twin stands for it */
	assert_int_equal(stats(pm).dups, 3);
	assert_int_equal(stats(pm).entries, 2);
}

/* Runtime 10's jitdump stops at its first stub block: from then on the twin table keeps the
 * jitdump's entries only (no record will come to hide a map line), so 20,000 perf map lines do
 * not cost a table of their own; a map line the jitdump has is still skipped. */
static void test_perfmap_twins_after_jitdump_stopped(void **state)
{
	struct perfmap *pm = PM(state);
	uint8_t buf[512];
	uint32_t bad[4] = { 0, 3, 0, 0 };	/* a record of 3 bytes: the stream stops */
	char line[128];
	size_t n;

	n = jd_bytes(buf, 0x1000, 0x20, 100, "void [App] Program::Jitted()[OptimizedTier1]", true);
	memcpy(buf + n, bad, sizeof(bad));
	assert_int_equal(perfmap__feed_jitdump(pm, buf, n + sizeof(bad)), 0);
	assert_int_equal(stats(pm).jitdump_stopped, 1);
	for (int i = 0; i < 20000; i++) {
		int len = snprintf(line, sizeof(line), "%x 10 void [App] P::M%d()\n", 0x100000 + i * 0x10, i);

		feed(pm, line);
		(void)len;
	}
	feed(pm, "1000 20 void [App] Program::Jitted()[OptimizedTier1]\n");
	assert_int_equal(stats(pm).dups, 1);
	assert_int_equal(stats(pm).entries, 20001);
	assert_int_equal(perfmap__lookup(pm, 0x1000, 0)->source, PERFMAP_SRC_JITDUMP);
	assert_string_equal(perfmap__lookup(pm, 0x100000 + 7 * 0x10, 0)->name, "void [App] P::M7()");
	/* The table: a few buckets, not 2 per map line and a chain entry each (~36 bytes a line). */
	assert_true(stats(pm).held_bytes < 20001 * 150);
	{
		struct perfmap_stats st = stats(pm);
		uint64_t per_line = st.held_bytes / st.entries;

		print_message("  held %" PRIu64 " bytes, %" PRIu64 " a range\n", st.held_bytes, per_line);
		assert_true(per_line < 120);
	}
}

/* Runtime 10's files after its jitdump stopped: 5,000 perf map lines and a jitdump cut short
 * inside its second record (a stub block), its file last written age_s seconds ago; opened. */
struct stalled_files {
	char mpath[PATH_MAX], jpath[PATH_MAX];
	int mfd, jfd;
};

static void stalled_files_open(struct stalled_files *f, time_t age_s)
{
	char *map = malloc(5000 * 64);
	struct timespec when[2];
	uint8_t buf[512];
	size_t n, mlen = 0;

	assert_non_null(map);
	for (int i = 0; i < 5000; i++)
		mlen += sprintf(map + mlen, "%x 10 void [App] P::M%d()\n", 0x100000 + i * 0x10, i);
	n = jd_bytes(buf, 0x1000, 0x20, 100, "void [App] Program::Jitted()", true);
	n += jd_bytes(buf + n, 0x2000, 0x20, 200, "stub ReportStubBlock<Unknown>", false) - 10;
	assert_int_equal(testutil__temp_file(f->mpath, sizeof(f->mpath), map, mlen), 0);
	assert_int_equal(testutil__temp_file(f->jpath, sizeof(f->jpath), buf, n), 0);
	free(map);
	f->mfd = open(f->mpath, O_RDONLY);
	f->jfd = open(f->jpath, O_RDWR);
	assert_true(f->mfd >= 0 && f->jfd >= 0);
	clock_gettime(CLOCK_REALTIME, &when[0]);
	when[0].tv_sec -= age_s;
	when[1] = when[0];
	assert_int_equal(futimens(f->jfd, when), 0);
}

/* Still one answer each: the jitdump's record, a map line. */
static void stalled_files_check(struct perfmap *pm, struct stalled_files *f)
{
	assert_int_equal(perfmap__lookup(pm, 0x1000, 0)->source, PERFMAP_SRC_JITDUMP);
	assert_string_equal(perfmap__lookup(pm, 0x100000 + 9 * 0x10, 0)->name, "void [App] P::M9()");
	close(f->mfd);
	close(f->jfd);
	unlink(f->mpath);
	unlink(f->jpath);
}

/* A jitdump that ends inside a record and stays so for 30 s while the perf map is read (runtime
 * 10) lets its twin table go, as after a stop: 5,000 perf map lines no longer cost one. */
static void test_perfmap_twins_after_jitdump_stalls(void **state)
{
	struct perfmap *pm = perfmap__new(NULL);
	struct stalled_files f;
	uint64_t before;

	(void)state;
	assert_non_null(pm);
	stalled_files_open(&f, 0);
	perfmap__set_feed_time(pm, 1000000000ull);
	assert_true(perfmap__read_map_fd(pm, f.mfd) > 0);
	assert_true(perfmap__read_jitdump_fd(pm, f.jfd) > 0);
	assert_true(stats(pm).jitdump_partial > 0);
	assert_int_equal(perfmap__read_map_fd(pm, f.mfd), 0);	/* nothing new: runs merged */
	before = stats(pm).held_bytes;
	perfmap__set_feed_time(pm, 20000000000ull);	/* 19 s later: not yet */
	assert_int_equal(perfmap__read_jitdump_fd(pm, f.jfd), 0);
	assert_int_equal(stats(pm).held_bytes, before);
	perfmap__set_feed_time(pm, 40000000000ull);
	assert_int_equal(perfmap__read_jitdump_fd(pm, f.jfd), 0);
	print_message("  held %" PRIu64 " -> %" PRIu64 " bytes\n", before, stats(pm).held_bytes);
	assert_true(stats(pm).held_bytes + 5000 * 16 <= before);
	stalled_files_check(pm, &f);
	perfmap__free(pm);
}

/* Held bytes after reading, as a read from the start does (jitdump first, then the map), the
 * stalled files last written age_s seconds ago. */
static uint64_t held_after_first_read(time_t age_s)
{
	struct perfmap *pm = perfmap__new(NULL);
	struct stalled_files f;
	uint64_t held;

	assert_non_null(pm);
	stalled_files_open(&f, age_s);
	perfmap__set_feed_time(pm, 1000000000ull);	/* the feed clock says nothing of the past */
	assert_true(perfmap__read_jitdump_fd(pm, f.jfd) > 0);
	assert_true(perfmap__read_map_fd(pm, f.mfd) > 0);
	assert_true(stats(pm).jitdump_partial > 0);
	held = stats(pm).held_bytes;
	stalled_files_check(pm, &f);
	perfmap__free(pm);
	return held;
}

/* A process read again from the start (its data was freed while it was idle) whose jitdump
 * stopped long ago: the file's own time says so at once, so its perf map lines never cost a
 * twin table, where waiting 30 s more on the feed clock would keep one all that time. */
static void test_perfmap_jitdump_stalled_before_first_read(void **state)
{
	uint64_t fresh = held_after_first_read(0), old = held_after_first_read(60);

	(void)state;
	print_message("  held %" PRIu64 " (written now), %" PRIu64 " (60 s ago)\n", fresh, old);
	assert_true(old + 5000 * 16 <= fresh);
}

/* Ranges crowded into 64 KiB so that most overlap: methods and stubs from both files, code
 * freed and reused, stub blocks, the same range logged twice, tiers. */
static void feed_crowded(struct perfmap *pm, unsigned seed)
{
	static const char *const names[] = { "void [App] A::M()[OptimizedTier1]", "void [App] A::M()[QuickJitted]",
		"int32 [App] B::N(int32)[Tier0]", "stub CreateHelper<DynamicHelper>",
		"stub ReportStubBlock<MethodCallThunk>", "void [App] C::O()" };
	uint8_t *jd = malloc(3000 * 1024);
	char line[160];
	size_t jn = 0, fed = 0;

	assert_non_null(jd);
	for (int i = 0; i < 3000; i++) {
		uint64_t start = 0x100000 + (rand_r(&seed) % 0x10000);
		uint64_t size = 1 + rand_r(&seed) % (i % 50 ? 0x100 : 0x4000);
		const char *name = names[rand_r(&seed) % 6];

		perfmap__set_feed_time(pm, 1000 + (uint64_t)i * 10);
		if (rand_r(&seed) % 3) {
			snprintf(line, sizeof(line), "%" PRIx64 " %" PRIx64 " %s\n", start, size, name);
			feed(pm, line);
			continue;
		}
		if (size > 0x200)
			size = 0x200;
		jn += jd_bytes(jd + jn, start, size, 1000 + (uint64_t)i * 10, name, jn == 0);
		if (rand_r(&seed) % 4 == 0) {	/* now and then, the jitdump is read */
			assert_int_equal(perfmap__feed_jitdump(pm, jd + fed, jn - fed), 0);
			fed = jn;
		}
	}
	assert_int_equal(perfmap__feed_jitdump(pm, jd + fed, jn - fed), 0);
	free(jd);
}

/* A filtered perfmap answers at its addresses exactly as the whole index does, at every time,
 * knows nothing elsewhere, and holds a fraction. */
static void test_perfmap_filter_answers_as_whole(void **state)
{
	struct perfmap *whole = perfmap__new(NULL), *part = perfmap__new(NULL);
	uint64_t addrs[64];
	unsigned seed = 7;
	int found = 0;

	(void)state;
	assert_non_null(whole);
	assert_non_null(part);
	for (int i = 0; i < 64; i++)
		addrs[i] = 0x100000 + (rand_r(&seed) % 0x10400);
	addrs[63] = addrs[0];	/* repeats are fine */
	assert_int_equal(perfmap__set_filter(part, addrs, 64), 0);
	feed_crowded(whole, 42);
	feed_crowded(part, 42);
	for (int i = 0; i < 64; i++) {
		for (uint64_t t = 0; t < 40000; t += 997) {
			const struct perfmap_sym *w = perfmap__lookup(whole, addrs[i], t);
			struct perfmap_sym wc = w ? *w : (struct perfmap_sym){ 0 };
			const struct perfmap_sym *p = perfmap__lookup(part, addrs[i], t);

			assert_int_equal(!w, !p);
			if (!w)
				continue;
			found++;
			assert_int_equal(wc.start, p->start);
			assert_int_equal(wc.size, p->size);
			assert_int_equal(wc.load_ns, p->load_ns);
			assert_int_equal(wc.source, p->source);
			assert_string_equal(wc.name, p->name);
			assert_string_equal(wc.tier, p->tier);
		}
		assert_true(perfmap__filter_has(part, addrs[i]));
	}
	assert_true(found > 64 * 20);
	/* Elsewhere: nothing, though the whole index has an answer there. */
	for (uint64_t a = 0x100000; a < 0x110000; a += 0x101) {
		int listed = 0;

		for (int i = 0; i < 64; i++)
			listed |= addrs[i] == a;
		if (!listed && perfmap__lookup(whole, a, 0)) {
			assert_null(perfmap__lookup(part, a, 0));
			assert_false(perfmap__filter_has(part, a));
		}
	}
	print_message("  whole %" PRIu64 " ranges, %" PRIu64 " bytes; filtered %" PRIu64 " ranges (%" PRIu64
		      " passed over), %" PRIu64 " bytes\n", stats(whole).entries, stats(whole).held_bytes,
		      stats(part).entries, stats(part).filtered, stats(part).held_bytes);
	assert_true(stats(part).filtered > 0);
	assert_true(stats(part).entries * 4 < stats(whole).entries);
	assert_true(stats(part).held_bytes * 2 < stats(whole).held_bytes);
	assert_true(perfmap__filter_has(whole, 0x12345));	/* no filter: every address */
	{
		size_t n;
		const uint64_t *f = perfmap__filter(part, &n);

		assert_true(n > 0 && n < 64);	/* addrs[63] repeats addrs[0] */
		for (size_t i = 1; i < n; i++)
			assert_true(f[i - 1] < f[i]);
		assert_null(perfmap__filter(whole, &n));
		assert_int_equal(n, 0);
	}
	perfmap__free(whole);
	perfmap__free(part);
}

/* A map line is ranked against jitdump records by when it was fed. */
static void test_perfmap_feed_time_orders_sources(void **state)
{
	struct perfmap *pm = PM(state);
	uint8_t buf[256];
	size_t n;

	perfmap__set_feed_time(pm, 1000);
	feed(pm, "1000 40 old map line\n");
	n = jd_bytes(buf, 0x1000, 0x40, 2000, "new jit code", true);
	assert_int_equal(perfmap__feed_jitdump(pm, buf, n), 0);
	assert_string_equal(perfmap__lookup(pm, 0x1000, 0)->name, "new jit code");
	assert_string_equal(perfmap__lookup(pm, 0x1000, 1500)->name, "old map line");
	perfmap__set_feed_time(pm, 3000);
	feed(pm, "1000 40 newer map line\n");
	assert_string_equal(perfmap__lookup(pm, 0x1000, 0)->name, "newer map line");
	perfmap__set_feed_time(pm, 0);
}

static void write_all(int fd, const char *s)
{
	assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

/* Only what was appended is read; a partial last line waits; a shrunk file is refused. */
static void test_perfmap_read_fd_incremental(void **state)
{
	struct ctx *c = *state;
	int rfd = open(c->path, O_RDONLY);

	assert_true(rfd >= 0);
	assert_int_equal(perfmap__read_map_fd(c->pm, rfd), 0);
	write_all(c->fd, "1000 10 one\n2000 10 tw");
	assert_int_equal(perfmap__read_map_fd(c->pm, rfd), 22);
	assert_non_null(perfmap__lookup(c->pm, 0x1000, 0));
	assert_null(perfmap__lookup(c->pm, 0x2000, 0));
	assert_int_equal(perfmap__read_map_fd(c->pm, rfd), 0);
	write_all(c->fd, "o\n3000 10 three\n");
	assert_int_equal(perfmap__read_map_fd(c->pm, rfd), 16);
	assert_string_equal(perfmap__lookup(c->pm, 0x2000, 0)->name, "two");
	assert_string_equal(perfmap__lookup(c->pm, 0x3000, 0)->name, "three");
	assert_int_equal(stats(c->pm).lines, 3);
	assert_int_equal(stats(c->pm).bytes, 38);
	assert_int_equal(ftruncate(c->fd, 5), 0);
	assert_int_equal(perfmap__read_map_fd(c->pm, rfd), -ESTALE);
	assert_int_equal(stats(c->pm).map_stale, 1);
	assert_int_equal(perfmap__read_map_fd(c->pm, -1), -EBADF);
	close(rfd);
}

/* While the process compiles, each poll's lines become a run of their own for the lookups after
 * it; the first poll that finds nothing new merges them into one, for lookups to search once. */
static void test_perfmap_quiet_read_merges_runs(void **state)
{
	struct ctx *c = *state;
	int rfd = open(c->path, O_RDONLY);
	char line[64];

	assert_true(rfd >= 0);
	for (int poll = 0; poll < 8; poll++) {
		for (int i = 0; i < 100; i++) {
			snprintf(line, sizeof(line), "%x 10 m%d_%d\n", 0x100000 + (poll * 100 + i) * 0x20,
				 poll, i);
			write_all(c->fd, line);
		}
		assert_true(perfmap__read_map_fd(c->pm, rfd) > 0);
		assert_string_equal(perfmap__lookup(c->pm, 0x100000 + poll * 100 * 0x20, 0)->name,
				    (snprintf(line, sizeof(line), "m%d_0", poll), line));
	}
	assert_true(stats(c->pm).runs > 1);
	assert_int_equal(perfmap__read_map_fd(c->pm, rfd), 0);
	assert_int_equal(stats(c->pm).runs, 1);
	for (int k = 0; k < 800; k += 7) {
		snprintf(line, sizeof(line), "m%d_%d", k / 100, k % 100);
		assert_string_equal(perfmap__lookup(c->pm, 0x100000 + k * 0x20 + 0xf, 0)->name, line);
		assert_null(perfmap__lookup(c->pm, 0x100000 + k * 0x20 + 0x10, 0));
	}
	close(rfd);
}

static void test_perfmap_read_fd_file_cap(void **state)
{
	struct ctx *c = *state;
	struct perfmap_limits lim = { .max_file_bytes = 24 };
	struct perfmap *pm = perfmap__new(&lim);
	int rfd = open(c->path, O_RDONLY);

	assert_non_null(pm);
	write_all(c->fd, "1000 10 one\n2000 10 two\n3000 10 three\n");
	assert_int_equal(perfmap__read_map_fd(pm, rfd), 24);
	assert_int_equal(perfmap__read_map_fd(pm, rfd), 0);
	assert_non_null(perfmap__lookup(pm, 0x2000, 0));
	assert_null(perfmap__lookup(pm, 0x3000, 0));
	assert_int_equal(stats(pm).capped, 1);
	perfmap__free(pm);
	close(rfd);
}

/* Lines written by runtime 10.0.12 on this machine (DOTNET_PerfMapEnabled=1). */
static void test_perfmap_real_runtime_fixture(void **state)
{
	struct perfmap *pm = PM(state);
	int fd = open(FIXTURES "/perf-10.0.12.map", O_RDONLY);
	const struct perfmap_sym *s;

	assert_true(fd >= 0);
	assert_true(perfmap__read_map_fd(pm, fd) > 0);
	close(fd);
	assert_int_equal(stats(pm).lines, 77);
	assert_int_equal(stats(pm).malformed, 0);
	s = perfmap__lookup(pm, 0x7f69b4c95400 + 0x10, 0);
	assert_non_null(s);
	assert_string_equal(s->name, "int32 [App] Program::Fresh3(int32)");
	assert_string_equal(s->tier, "OptimizedTier1");
	assert_string_equal(perfmap__lookup(pm, 0x7f69b4c94750, 0)->tier, "InstrumentedTier");
	assert_ptr_equal(perfmap__lookup(pm, 0x7f69b4c94750, 0)->name, s->name);
	s = perfmap__lookup(pm, 0x7f339fc30000 + 0x8000, 0);
	assert_non_null(s);
	assert_string_equal(s->name, "stub ReportStubBlock<MethodCallThunk>");
	/* the reused DynamicHelper stub: the later, bigger one */
	assert_string_equal(perfmap__lookup(pm, 0x7f339c204688, 0)->name,
			    "stub CreateHelperArgMove<DynamicHelper>");
}

static void test_perfmap_null_safe(void **state)
{
	struct perfmap_stats st;

	(void)state;
	perfmap__free(NULL);
	assert_null(perfmap__lookup(NULL, 0x1000, 0));
	assert_int_equal(perfmap__feed_map(NULL, "x", 1), -EINVAL);
	assert_int_equal(perfmap__feed_map(PM(state), NULL, 1), -EINVAL);
	assert_int_equal(perfmap__feed_map(PM(state), NULL, 0), 0);
	perfmap__stats(NULL, &st);
	assert_int_equal(st.lines, 0);
}


/* One budget of code ranges for every perfmap: past it ranges are dropped and counted; what a
 * perfmap took comes back when it is freed. */
static void test_perfmap_shared_budget(void **state)
{
	struct perfmap *a = perfmap__new(NULL), *b = perfmap__new(NULL);
	struct perfmap_stats st;
	struct symbudget_stats sb;
	char line[128];

	assert_non_null(a);
	assert_non_null(b);
	symbudget__set(100 * PERFMAP_BYTES_PER_RANGE);
	for (int i = 0; i < 150; i++) {
		int n = snprintf(line, sizeof(line), "%x 10 M%d\n", 0x1000 + i * 0x10, i);

		assert_int_equal(perfmap__feed_map(a, line, (size_t)n), 0);
	}
	perfmap__stats(a, &st);
	assert_int_equal(st.entries, 100);
	assert_int_equal(st.budget_capped, 50);
	assert_non_null(perfmap__lookup(a, 0x1000 + 99 * 0x10, 0));
	assert_null(perfmap__lookup(a, 0x1000 + 100 * 0x10, 0));
	assert_int_equal(perfmap__feed_map(b, "9000 10 Other\n", 14), 0);
	perfmap__stats(b, &st);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.budget_capped, 1);
	symbudget__stats(&sb);
	assert_int_equal(sb.used_by[SB_PERF_MAPS], 100 * PERFMAP_BYTES_PER_RANGE);
	assert_int_equal(sb.used, 100 * PERFMAP_BYTES_PER_RANGE);
	assert_int_equal(sb.max, 100 * PERFMAP_BYTES_PER_RANGE);
	assert_int_equal(sb.refused_by[SB_PERF_MAPS], 51);
	perfmap__free(a);
	symbudget__stats(&sb);
	assert_int_equal(sb.used, 0);
	assert_int_equal(perfmap__feed_map(b, "a000 10 Again\n", 14), 0);
	perfmap__stats(b, &st);
	assert_int_equal(st.entries, 1);
	perfmap__free(b);
	symbudget__stats(&sb);
	assert_int_equal(sb.used, 0);
	symbudget__set(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_perfmap_basic_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_names_with_every_character, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_tier_split, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_names_interned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_partial_lines_across_feeds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_byte_by_byte, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_malformed_lines_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_cap_line_length, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_cap_entries_and_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_newer_line_wins, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_stub_block_vs_stub, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_twins_deduplicated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_twins_repeated_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_twins_after_jitdump_stopped, setup, teardown),
		cmocka_unit_test(test_perfmap_twins_after_jitdump_stalls),
		cmocka_unit_test(test_perfmap_jitdump_stalled_before_first_read),
		cmocka_unit_test(test_perfmap_filter_answers_as_whole),
		cmocka_unit_test_setup_teardown(test_perfmap_feed_time_orders_sources, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_read_fd_incremental, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_quiet_read_merges_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_read_fd_file_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_real_runtime_fixture, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_null_safe, setup, teardown),
		cmocka_unit_test(test_perfmap_shared_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
