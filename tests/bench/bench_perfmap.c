/* bench_perfmap.c: perf map / jitdump parse throughput and lookup cost on 1M synthetic .NET lines. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perfmap.h"

#define LINES		1000000
#define LOOKUPS		2000000
#define CHUNK_LINES	5000	/* lines per incremental read (~100 ms of a busy startup) */
#define REPS		3	/* timings are the best of REPS runs */
#define STUB_BASE	0x7f1d0f600000ULL	/* stubs above, methods below */

struct line {
	uint64_t start;
	uint32_t size;
	uint32_t gap;		/* free bytes after the range (0 = none) */
};

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long rss_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char buf[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(buf, sizeof(buf), f))
		if (!strncmp(buf, field, strlen(field)))
			v = strtol(buf + strlen(field), NULL, 10);
	fclose(f);
	return v;
}

/* Dependent random loads over 64 MiB: what one cache + TLB miss costs on this machine. */
static double load_latency_ns(void)
{
	size_t n = (64u << 20) / sizeof(uint64_t);
	uint64_t *a = malloc(n * sizeof(*a)), p = 0;
	double t0, best = 1e9;

	if (!a)
		return -1;
	for (size_t i = 0; i < n; i++)
		a[i] = i;
	for (size_t i = n - 1; i > 0; i--) {	/* one random cycle (Sattolo) */
		size_t j = rnd() % i;
		uint64_t x = a[i];

		a[i] = a[j];
		a[j] = x;
	}
	for (int rep = 0; rep < REPS; rep++) {
		t0 = now_s();
		for (int i = 0; i < 1000000; i++)
			p = a[p];
		if (now_s() - t0 < best)
			best = now_s() - t0;
	}
	free(a);
	return p == n ? -1 : best * 1e9 / 1000000;
}

static const char *rets[] = { "void", "int32", "bool", "string", "object", "int64", "class System.Threading.Tasks.Task`1<!0>",
	"valuetype System.ReadOnlySpan`1<uint8>", "instance void", "instance bool", "instance class System.String",
	"instance valuetype System.Threading.Tasks.ValueTask`1<int32>", "native int", "!!0", "class [System.Runtime]System.Collections.Generic.IEnumerable`1<!!0>" };
static const char *asms[] = { "System.Private.CoreLib", "System.Linq", "System.Text.Json", "Microsoft.AspNetCore.Server.Kestrel.Core",
	"System.Net.Http", "App", "Microsoft.Extensions.DependencyInjection", "Npgsql", "OpenTelemetry", "System.Collections.Concurrent",
	"Anonymously Hosted DynamicMethods Assembly" };
static const char *nss[] = { "System.Collections.Generic", "System.Threading", "System.Text.Json.Serialization.Metadata", "Microsoft.AspNetCore.Routing",
	"System.Runtime.CompilerServices", "App.Services", "App.Controllers", "System.Linq", "Npgsql.Internal", "OpenTelemetry.Trace", "dynamicClass" };
static const char *types[] = { "Dictionary`2[System.__Canon,System.__Canon]", "List`1[System.Int32]", "ThreadPoolWorkQueue", "AsyncTaskMethodBuilder`1[System.Int32]",
	"JsonPropertyInfo`1[System.String]", "EndpointRoutingMiddleware", "OrderService", "Enumerable+WhereSelectArrayIterator`2[System.__Canon,System.Int32]",
	"NpgsqlConnector+<ReadMessage>d__10", "ActivityProcessor", "ConcurrentDictionary`2[System.Int64,System.__Canon]", "Closure" };
static const char *meths[] = { "TryInsert", "MoveNext", "Dequeue", "AwaitUnsafeOnCompleted", "GetValue", "Invoke", "HandleRequest",
	"<ProcessAsync>b__12_0", ".ctor", "get_Item", "Select", "lambda_method", "ReadMessageLong", "OnEnd", "FindValue" };
static const char *args[] = { "", "!0,!1,valuetype System.Collections.Generic.InsertionBehavior", "class System.Threading.ThreadPoolWorkQueueThreadLocals,object&",
	"!!0&,class System.Runtime.CompilerServices.IAsyncStateMachineBox", "int32", "string,int32", "class Microsoft.AspNetCore.Http.HttpContext",
	"System.Runtime.CompilerServices.Closure /* MT: 0x7f1c9113b950 */,int32", "valuetype System.ReadOnlySpan`1<char>", "!0" };
static const char *tiers[] = { "QuickJitted", "InstrumentedTier", "OptimizedTier1", "Optimized", "MinOptJitted", "OptimizedTier1OSR", "InstrumentedTierOptimized" };
static const char *stubs[] = { "Allocate<FixupPrecode>", "CreateHelper<DynamicHelper>", "GenerateResolveStub<VSD_ResolveStub>",
	"GenerateDispatchStub<VSD_DispatchStub>", "CreateDictionaryLookupHelper<DynamicHelper>", "Allocate<PInvokeImportPrecode>" };

/* One method name; the same id always gives the same text (tiers share it). */
static int method_name(char *out, size_t cap, uint64_t id)
{
	uint64_t h = id * 0x9e3779b97f4a7c15ULL;

	return snprintf(out, cap, "%s [%s] %s.%s::%s%" PRIu64 "(%s)", rets[h % 15], asms[(h >> 8) % 11],
			nss[(h >> 16) % 11], types[(h >> 24) % 12], meths[(h >> 32) % 15], id % 5000,
			args[(h >> 40) % 10]);
}

/* Synthetic perf map shaped like a big ASP.NET service: methods in several tiers at growing
 * code-heap addresses, stub blocks with stubs inside them, DynamicHelper stubs reused. */
static char *make_map(struct line *lines, size_t *len_out)
{
	size_t cap = (size_t)LINES * 200, len = 0;
	char *buf = malloc(cap);
	uint64_t code = 0x7f1c90000000ULL, stub = STUB_BASE, block_end = 0;
	uint64_t method = 0, stubno = 0;

	if (!buf)
		return NULL;
	for (size_t i = 0; i < LINES; i++) {
		uint64_t k = rnd() % 100;
		char name[512];
		struct line *l = &lines[i];

		if (len + 1024 > cap)
			break;
		if (k < 70) {
			/* a method, often a new tier of a recent one */
			uint64_t id = (k < 30 && method > 10) ? method - 1 - rnd() % 10 : method++;

			method_name(name, sizeof(name), id);
			l->start = code;
			l->size = 16 + (uint32_t)(rnd() % 2000);
			l->gap = (uint32_t)(rnd() % 4) * 16;
			code += l->size + l->gap;
			code = (code + 15) & ~15ULL;
			l->gap = (uint32_t)(code - l->start - l->size);
			len += (size_t)snprintf(buf + len, cap - len, "0x%" PRIx64 " %x %s[%s]\n", l->start, l->size,
						name, tiers[rnd() % 7]);
		} else if (k < 72) {
			/* a stub block; the next stubs land inside it */
			stub = (stub + 0xffff) & ~0xffffULL;
			l->start = stub;
			l->size = 0x10000;
			l->gap = 0;
			block_end = stub + 0x10000;
			len += (size_t)snprintf(buf + len, cap - len, "0x%" PRIx64 " %x stub ReportStubBlock<MethodCallThunk>\n",
						l->start, l->size);
		} else if (k < 75 && stub > 0x7f1d0f600100ULL) {
			/* freed DynamicHelper memory reused by a bigger stub */
			l->start = stub - 0x40;
			l->size = 0x21;
			l->gap = 0;
			len += (size_t)snprintf(buf + len, cap - len, "0x%" PRIx64 " %x stub CreateDictionaryLookupHelper<DynamicHelper>\n",
						l->start, l->size);
		} else {
			l->start = stub;
			l->size = 0x18;
			l->gap = stub + 0x20 < block_end ? 0 : 8;
			stub += 0x20;
			len += (size_t)snprintf(buf + len, cap - len, "0x%" PRIx64 " %x stub<%" PRIu64 "> %s\n", l->start,
						l->size, ++stubno, stubs[rnd() % 6]);
		}
	}
	*len_out = len;
	return buf;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* A jitdump with n code-load records of realistic names and code sizes. */
static uint8_t *make_jitdump(size_t n, size_t *len_out)
{
	size_t cap = 40 + n * (56 + 300 + 2048), len = 40;
	uint8_t *b = calloc(1, cap);
	uint64_t code = 0x7f1c90000000ULL;

	if (!b)
		return NULL;
	put32(b, 0x4A695444);
	put32(b + 4, 1);
	put32(b + 8, 40);
	put32(b + 12, 62);
	for (size_t i = 0; i < n; i++) {
		char name[512];
		int nl = method_name(name, sizeof(name), i) + 1;
		uint32_t size = 16 + (uint32_t)(rnd() % 1500);
		uint32_t total = 56 + (uint32_t)nl + size;

		put32(b + len, 0);
		put32(b + len + 4, total);
		put64(b + len + 8, 1000 + i);
		put64(b + len + 24, code);
		put64(b + len + 32, code);
		put64(b + len + 40, size);
		memcpy(b + len + 56, name, (size_t)nl);
		len += total;
		code += size + 16;
	}
	*len_out = len;
	return b;
}

/* n addresses in lines drawn like a profile's: the line of rank r (a random order of the lines)
 * with a weight of 1/r (Zipf, s = 1), so a few hundred lines take half the draws. */
static void draw_profile(uint64_t *out, size_t n, const struct line *lines, size_t nlines)
{
	double *cdf = malloc(nlines * sizeof(*cdf)), sum = 0;
	uint32_t *perm = malloc(nlines * sizeof(*perm));

	if (!cdf || !perm)
		goto out;
	for (size_t r = 0; r < nlines; r++) {
		sum += 1.0 / (double)(r + 1);
		cdf[r] = sum;
		perm[r] = (uint32_t)r;
	}
	for (size_t i = nlines - 1; i > 0; i--) {
		size_t j = rnd() % (i + 1);
		uint32_t x = perm[i];

		perm[i] = perm[j];
		perm[j] = x;
	}
	for (size_t i = 0; i < n; i++) {
		double u = (double)(rnd() >> 11) / (double)(1ULL << 53) * sum;
		size_t lo = 0, hi = nlines - 1;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (cdf[mid] < u)
				lo = mid + 1;
			else
				hi = mid;
		}
		const struct line *l = &lines[perm[lo]];

		out[i] = l->start + rnd() % l->size;
	}
out:
	free(cdf);
	free(perm);
}

/* Look every address up, and read its name's first byte as naming a frame does (names): one by
 * one, or in groups told to perfmap__prefetch first, as the window's end names its new frames.
 * Returns the number found. */
static size_t lookup_names(struct perfmap *pm, const uint64_t *addrs, size_t n, int grouped,
			   int names, unsigned *sum)
{
	size_t found = 0;

	for (size_t i = 0; i < n; i++) {
		const struct perfmap_sym *s;

		if (grouped && i % PERFMAP_PREFETCH_MAX == 0)
			perfmap__prefetch(pm, addrs + i, n - i < PERFMAP_PREFETCH_MAX ?
						       n - i : PERFMAP_PREFETCH_MAX);
		if ((s = perfmap__lookup(pm, addrs[i], 0))) {
			found++;
			*sum += names ? (unsigned char)s->name[0] : 0;
		}
	}
	return found;
}

static void bench_lookups(struct perfmap *pm, const struct line *lines, size_t n, const char *what)
{
	uint64_t *hit = malloc(LOOKUPS * sizeof(*hit)), *miss = malloc(LOOKUPS * sizeof(*miss));
	uint64_t *meth = malloc(LOOKUPS / 4 * sizeof(*meth)), *prof = calloc(LOOKUPS, sizeof(*prof));
	size_t nmiss = 0, found = 0, mfound = 0;
	double t0, t1, t2;

	if (!hit || !miss || !meth || !prof)
		goto out_free;
	draw_profile(prof, LOOKUPS, lines, n);
	for (size_t i = 0; i < LOOKUPS; i++) {
		const struct line *l = &lines[rnd() % n];

		hit[i] = l->start + rnd() % l->size;
	}
	/* methods only: ranges nothing else overlaps (most of a real map) */
	for (size_t i = 0; i < LOOKUPS / 4;) {
		const struct line *l = &lines[rnd() % n];

		if (l->start < STUB_BASE)
			meth[i++] = l->start + rnd() % l->size;
	}
	while (nmiss < LOOKUPS) {
		const struct line *l = &lines[rnd() % n];

		if (l->gap)
			miss[nmiss++] = l->start + l->size + rnd() % l->gap;
		else if (rnd() % 8 == 0)
			miss[nmiss++] = rnd() % 0x7f0000000000ULL;	/* far from any code */
	}
	/* best of REPS: the machine is shared, the minimum is the least disturbed run */
	double th = 1e9, tm = 1e9, tt = 1e9, tme = 1e9, tp = 1e9, tn[4] = { 1e9, 1e9, 1e9, 1e9 };
	size_t nfound[4] = { 0 };
	unsigned sum = 0;

	for (int rep = 0; rep < REPS; rep++) {
		found = mfound = 0;
		t0 = now_s();
		for (size_t i = 0; i < LOOKUPS; i++)
			found += perfmap__lookup(pm, hit[i], 0) != NULL;
		t1 = now_s();
		for (size_t i = 0; i < LOOKUPS; i++)
			mfound += perfmap__lookup(pm, miss[i], 0) != NULL;
		t2 = now_s();
		th = t1 - t0 < th ? t1 - t0 : th;
		tm = t2 - t1 < tm ? t2 - t1 : tm;
		t0 = now_s();
		for (size_t i = 0; i < LOOKUPS; i++)
			perfmap__lookup(pm, hit[i], 1 + (hit[i] >> 4) % 1000000);
		t1 = now_s();
		tt = t1 - t0 < tt ? t1 - t0 : tt;
		t0 = now_s();
		for (size_t i = 0; i < LOOKUPS / 4; i++)
			perfmap__lookup(pm, meth[i], 0);
		t1 = now_s();
		tme = t1 - t0 < tme ? t1 - t0 : tme;
		t0 = now_s();
		for (size_t i = 0; i < LOOKUPS; i++)
			perfmap__lookup(pm, prof[i], 0);
		t1 = now_s();
		tp = t1 - t0 < tp ? t1 - t0 : tp;
		for (int k = 0; k < 4; k++) {	/* grouped: k & 1; names read: k & 2 */
			t0 = now_s();
			nfound[k] = lookup_names(pm, hit, LOOKUPS, k & 1, k & 2, &sum);
			t1 = now_s();
			tn[k] = t1 - t0 < tn[k] ? t1 - t0 : tn[k];
		}
	}
	printf("  lookup %-10s hits %6.1f ns (%zu/%d found), misses %6.1f ns (%zu found)\n", what,
	       th * 1e9 / LOOKUPS, found, LOOKUPS, tm * 1e9 / LOOKUPS, mfound);
	printf("  lookup %-10s hits with a sample time %6.1f ns; hits in non-overlapping methods %6.1f ns\n",
	       what, tt * 1e9 / LOOKUPS, tme * 1e9 / (LOOKUPS / 4));
	printf("  lookup %-10s hits drawn like a profile's (Zipf over the lines) %6.1f ns\n", what,
	       tp * 1e9 / LOOKUPS);
	printf("  lookup %-10s hits in groups of %d told to perfmap__prefetch first %6.1f ns (%zu found)\n",
	       what, PERFMAP_PREFETCH_MAX, tn[1] * 1e9 / LOOKUPS, nfound[1]);
	printf("  lookup %-10s hits and their names read: one by one %6.1f ns, in groups %6.1f ns (%zu, %zu found; %u)\n",
	       what, tn[2] * 1e9 / LOOKUPS, tn[3] * 1e9 / LOOKUPS, nfound[2], nfound[3], sum & 1);
out_free:
	free(prof);
	free(meth);
	free(hit);
	free(miss);
}

int main(void)
{
	struct line *lines = calloc(LINES, sizeof(*lines));
	struct perfmap_stats st;
	struct perfmap *pm;
	size_t len, jlen, off, done;
	double t0, t1, t2;
	char *map;
	uint8_t *jd;
	long rss0, rss1 = 0;
	uint32_t runs;

	if (!lines)
		return 1;
	printf("perfmap benchmark (synthetic .NET perf map, %d lines; best of %d)\n", LINES, REPS);
	printf("  machine: one random memory load (cache+TLB miss) costs %.0f ns\n", load_latency_ns());
	map = make_map(lines, &len);
	if (!map)
		return 1;
	rss0 = rss_kb("VmRSS:");

	/* 1. one read of the whole file, then the first lookup builds the index */
	double tparse = 1e9, tbuild = 1e9;

	pm = NULL;
	for (int rep = 0; rep < REPS; rep++) {
		perfmap__free(pm);
		pm = perfmap__new(NULL);
		if (!pm)
			return 1;
		t0 = now_s();
		if (perfmap__feed_map(pm, map, len))
			return 1;
		t1 = now_s();
		perfmap__lookup(pm, lines[0].start, 0);
		t2 = now_s();
		tparse = t1 - t0 < tparse ? t1 - t0 : tparse;
		tbuild = t2 - t1 < tbuild ? t2 - t1 : tbuild;
		if (!rep)
			rss1 = rss_kb("VmRSS:");
	}
	perfmap__stats(pm, &st);
	printf("  parse whole file: %.1f MB in %.3f s = %.0f MB/s, %.2f M lines/s; index build %.3f s\n",
	       len / 1e6, tparse, len / 1e6 / tparse, st.lines / 1e6 / tparse, tbuild);
	printf("  lines %" PRIu64 " malformed %" PRIu64 " entries %" PRIu64 "; memory +%ld MB (index and names)\n",
	       st.lines, st.malformed, st.entries, (rss1 - rss0) / 1024);
	bench_lookups(pm, lines, LINES, "(1 feed)");
	perfmap__free(pm);

	/* 2. incremental: 5000 lines appended to a file and read, a lookup after each (index
	 * rebuilt lazily), as the process compiles; then a read that finds nothing new */
	char tpath[] = "/tmp/bench_perfmap.XXXXXX";
	int wfd = mkstemp(tpath), rfd = wfd < 0 ? -1 : open(tpath, O_RDONLY);

	if (wfd < 0 || rfd < 0) {
		perror("bench_perfmap: a temporary file");
		return 1;
	}
	unlink(tpath);
	pm = perfmap__new(NULL);
	if (!pm)
		return 1;
	t0 = now_s();
	for (off = 0, done = 0; off < len; done += CHUNK_LINES) {
		const char *end = map + off;
		size_t n;

		for (int k = 0; k < CHUNK_LINES && end < map + len; k++) {
			end = memchr(end, '\n', (size_t)(map + len - end));
			end = end ? end + 1 : map + len;
		}
		n = (size_t)(end - (map + off));
		if (write(wfd, map + off, n) != (ssize_t)n || perfmap__read_map_fd(pm, rfd) != (int64_t)n)
			return 1;
		off += n;
		perfmap__lookup(pm, lines[done < LINES ? done : 0].start, 0);
	}
	t1 = now_s();
	perfmap__stats(pm, &st);
	printf("  incremental: %d lines appended and read + a lookup after each: %.3f s total = %.0f MB/s\n",
	       CHUNK_LINES, t1 - t0, len / 1e6 / (t1 - t0));
	bench_lookups(pm, lines, LINES, "(runs)");
	runs = st.runs;
	t0 = now_s();
	if (perfmap__read_map_fd(pm, rfd) != 0)
		return 1;
	t1 = now_s();
	perfmap__stats(pm, &st);
	printf("  a read that finds nothing new merges the %u runs into %u in %.3f s\n", runs, st.runs,
	       t1 - t0);
	bench_lookups(pm, lines, LINES, "(settled)");
	perfmap__free(pm);
	close(wfd);
	close(rfd);
	free(map);

	/* 3. jitdump: 300k code-load records with code bytes */
	jd = make_jitdump(300000, &jlen);
	if (!jd)
		return 1;
	pm = perfmap__new(NULL);
	if (!pm)
		return 1;
	t0 = now_s();
	for (off = 0; off < jlen; off += 1 << 18) {
		size_t n = jlen - off < (1 << 18) ? jlen - off : (1 << 18);

		if (perfmap__feed_jitdump(pm, jd + off, n))
			return 1;
	}
	t1 = now_s();
	perfmap__stats(pm, &st);
	printf("  jitdump: %.1f MB, %" PRIu64 " records in %.3f s = %.0f MB/s, %.2f M records/s\n", jlen / 1e6,
	       st.records, t1 - t0, jlen / 1e6 / (t1 - t0), st.records / 1e6 / (t1 - t0));
	perfmap__free(pm);
	free(jd);
	free(lines);
	printf("  peak RSS %ld MB\n", rss_kb("VmHWM:") / 1024);
	return 0;
}
