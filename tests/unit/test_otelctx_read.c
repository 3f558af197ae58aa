/* test_otelctx_read.c: unit tests for user/process/otelctx.c on a context mapped in this very
 * process: the OTEP 4719 reading protocol (half-written, updated, oversize, unmapped payload, a
 * writer racing the reader), and the runtime: service name, describe line, key-map cross-check
 * against a span table. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "otelctx.h"
#include "procfs.h"
#include "profiler.h"
#include "proctab.h"
#include "runtime.h"
#include "spanctx.h"
#include "util.h"

extern const struct runtime_ops otelctx_runtime;	/* otelctx.c */

#include "otelctx_pb.h"

/* ---- a context mapped in this process ------------------------------------------------------- */

#define MAP_LEN (64u << 10)
#define BUF_A	4096u
#define BUF_B	(4096u + 16384u)

static int ctx_fd = -1;
static uint8_t *ctx_map;
static struct proctab *pt;
static int dir_fd = -1;

static struct otelctx_header *hdr(void)
{
	return (struct otelctx_header *)ctx_map;
}

/* Writes payload at off and publishes it (first publication: fields, signature, timestamp). */
static void publish_at(uint32_t off, const struct pb *p)
{
	struct otelctx_header *h = hdr();

	memcpy(ctx_map + off, p->b, p->n);
	h->version = OTELCTX_VERSION;
	h->payload_size = (uint32_t)p->n;
	h->payload_ptr = (uint64_t)(uintptr_t)(ctx_map + off);
	atomic_thread_fence(memory_order_seq_cst);
	memcpy(h->signature, OTELCTX_SIGNATURE, 8);
	atomic_thread_fence(memory_order_seq_cst);
	h->published_at_ns = boottime_ns();
}

/* OTEP 4719's update: published_at 0, fields, new published_at. */
static void update_at(uint32_t off, const struct pb *p)
{
	struct otelctx_header *h = hdr();
	uint64_t before = h->published_at_ns;

	memcpy(ctx_map + off, p->b, p->n);
	atomic_store((_Atomic uint64_t *)&h->published_at_ns, 0);
	h->payload_size = (uint32_t)p->n;
	h->payload_ptr = (uint64_t)(uintptr_t)(ctx_map + off);
	atomic_thread_fence(memory_order_seq_cst);
	atomic_store((_Atomic uint64_t *)&h->published_at_ns, before + 1);
}

static int map_setup(void **state)
{
	ctx_fd = memfd_create(OTELCTX_SIGNATURE, MFD_CLOEXEC);
	if (ctx_fd < 0 || ftruncate(ctx_fd, MAP_LEN))
		return -1;
	ctx_map = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE, ctx_fd, 0);
	if (ctx_map == MAP_FAILED)
		return -1;
	close(ctx_fd);
	ctx_fd = -1;
	dir_fd = procfs__open(getpid());
	return dir_fd < 0 ? -1 : 0;
}

static int map_teardown(void **state)
{
	for (uint32_t i = 0; pt && i < proctab__count(pt); i++)
		if (proctab__at(pt, i))
			runtime__detach_all(proctab__at(pt, i));
	proctab__free(pt);
	pt = NULL;
	munmap(ctx_map, MAP_LEN);
	if (dir_fd >= 0)
		close(dir_fd);
	dir_fd = -1;
	return 0;
}

static void test_otelctx_read_live(void **state)
{
	struct otelctx *c = otelctx__new();
	struct otelctx_read_stats st = { 0 };
	struct pb *p1 = hook_payload("first", KEYS, 2), *p2 = hook_payload("second", KEYS, 3);
	uint64_t at = 0, at1;

	publish_at(BUF_A, p1);
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), 0);
	assert_string_equal(otelctx__get(c, "service.name"), "first");
	assert_int_equal(otelctx__key_count(c), 2);
	assert_int_equal(at, hdr()->published_at_ns);
	assert_int_equal(st.reads, 1);
	/* Nothing new: the header alone is read. */
	at1 = at;
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), 1);
	assert_int_equal(st.unchanged, 1);
	assert_int_equal(at, at1);
	/* The key map grew: republished in the other buffer. */
	update_at(BUF_B, p2);
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), 0);
	assert_string_equal(otelctx__get(c, "service.name"), "second");
	assert_int_equal(otelctx__key_count(c), 3);
	assert_int_equal(st.reads, 2);
	assert_int_equal(st.mid_update, 0);
	pb_free(p1);
	pb_free(p2);
	otelctx__free(c);
}

/* The payload anywhere in the process, as the C reference implementation puts it (the heap). */
static void test_otelctx_read_payload_elsewhere(void **state)
{
	struct otelctx *c = otelctx__new();
	struct otelctx_read_stats st = { 0 };
	struct pb *p = hook_payload("heap", KEYS, 3);
	uint8_t *heap = malloc(p->n);
	uint64_t at = 0;

	memcpy(heap, p->b, p->n);
	publish_at(BUF_A, p);
	hdr()->payload_ptr = (uintptr_t)heap;
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), 0);
	assert_string_equal(otelctx__get(c, "service.name"), "heap");
	free(heap);
	pb_free(p);
	otelctx__free(c);
}

static void test_otelctx_read_half_written(void **state)
{
	struct otelctx *c = otelctx__new();
	struct otelctx_read_stats st = { 0 };
	struct pb *p1 = hook_payload("before", KEYS, 2), *p2 = hook_payload("after", KEYS, 3);
	uint64_t at = 0, at1;

	/* Being created: no signature yet. Not a mid-update: nothing was published. */
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), -EAGAIN);
	assert_int_equal(st.mid_update, 0);
	publish_at(BUF_A, p1);
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), 0);
	at1 = at;
	/* An update caught in the middle: published_at 0, the new payload half there. */
	memcpy(ctx_map + BUF_B, p2->b, p2->n / 2);
	hdr()->published_at_ns = 0;
	hdr()->payload_ptr = (uintptr_t)(ctx_map + BUF_B);
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), -EAGAIN);
	assert_int_equal(st.mid_update, 3);	/* read again at once, twice, then left for later */
	assert_string_equal(otelctx__get(c, "service.name"), "before");	/* the last one stands */
	assert_int_equal(at, at1);
	/* Finished: read. */
	memcpy(ctx_map + BUF_B, p2->b, p2->n);
	hdr()->payload_size = (uint32_t)p2->n;
	hdr()->published_at_ns = at1 + 1;
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), 0);
	assert_string_equal(otelctx__get(c, "service.name"), "after");
	pb_free(p1);
	pb_free(p2);
	otelctx__free(c);
}

static void test_otelctx_read_refused(void **state)
{
	struct otelctx *c = otelctx__new();
	struct otelctx_read_stats st = { 0 };
	struct pb *p = hook_payload("svc", KEYS, 3);
	uint64_t at = 0;
	static const uint8_t junk[] = { 0x0a, 0x7f, 0x01, 0x02, 0x03 };

	publish_at(BUF_A, p);
	hdr()->payload_size = OTELCTX_PAYLOAD_MAX + 1;
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), -E2BIG);
	/* A pointer to nothing. */
	hdr()->payload_size = 64;
	hdr()->payload_ptr = 0x1000;
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), -EFAULT);
	/* Garbage where the payload is. */
	memcpy(ctx_map + BUF_A, junk, sizeof(junk));
	hdr()->payload_size = sizeof(junk);
	hdr()->payload_ptr = (uintptr_t)(ctx_map + BUF_A);
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), -EBADMSG);
	/* Another version. */
	hdr()->version = 1;
	assert_int_equal(otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st), -EPROTONOSUPPORT);
	assert_int_equal(st.reads, 0);
	assert_int_equal(at, 0);
	pb_free(p);
	otelctx__free(c);
}

/* A writer that republishes as fast as it can, by the protocol; every read that succeeds must
 * be one whole payload (service.name and key count belong together), never a mix. */
static atomic_int race_stop;
static struct pb *race_p[2];

static void *racer(void *arg)
{
	uint32_t off[2] = { BUF_A, BUF_B };

	/* Never into the buffer the header points at: the first update goes to B. */
	for (unsigned i = 1; !atomic_load(&race_stop); i++) {
		update_at(off[i & 1], race_p[i & 1]);
		if (i % 64 == 0)
			usleep(200);	/* bursts of updates, whole reads between them */
	}
	return NULL;
}

static void test_otelctx_read_racing_writer(void **state)
{
	static const char *const many[] = { "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7" };
	struct otelctx *c = otelctx__new();
	struct otelctx_read_stats st = { 0 };
	uint64_t at = 0, ok = 0, t_end;
	pthread_t t;

	race_p[0] = hook_payload("even", many, 2);
	race_p[1] = hook_payload("odd-and-longer-name", many, 8);
	publish_at(BUF_A, race_p[0]);
	atomic_store(&race_stop, 0);
	assert_int_equal(pthread_create(&t, NULL, racer, NULL), 0);
	t_end = now_ns() + 300 * 1000000ull;
	while (now_ns() < t_end) {
		int err = otelctx__read(dir_fd, (uintptr_t)ctx_map, c, &at, &st);

		assert_true(err == 0 || err == 1 || err == -EAGAIN);
		if (err == 0) {
			const char *svc = otelctx__get(c, "service.name");

			ok++;
			assert_non_null(svc);
			if (!strcmp(svc, "even"))
				assert_int_equal(otelctx__key_count(c), 2);
			else {
				assert_string_equal(svc, "odd-and-longer-name");
				assert_int_equal(otelctx__key_count(c), 8);
			}
		}
	}
	atomic_store(&race_stop, 1);
	pthread_join(t, NULL);
	print_message("racing writer: %" PRIu64 " whole reads, %" PRIu64 " caught mid-update\n", ok,
		      st.mid_update);
	assert_true(ok > 0);
	pb_free(race_p[0]);
	pb_free(race_p[1]);
	otelctx__free(c);
}

/* ---- the runtime ---------------------------------------------------------------------------- */

static const struct runtime_ops *const only_otelctx[RT__MAX] = { [RT_OTELCTX] = &otelctx_runtime };
static struct runtime_env env = { .runtimes = only_otelctx, .ctx_map_fd = -1 };

/* This process, its runtimes polled as if the backoff had passed. */
static struct proc *this_proc(void)
{
	struct proc *p;

	if (!pt)
		assert_non_null(pt = proctab__new("/proc", &env));
	p = proctab__open(pt, getpid());
	assert_non_null(p);
	return p;
}

static void poll_again(struct proc *p)
{
	static uint64_t later = 0;

	later += 100ull * 1000000000ull;
	runtime__poll(p, now_ns() + later);
}

static void describe(const struct proc *p, char *buf, size_t len)
{
	runtime__describe(p, buf, len);
}

/* A span table (hook ABI v1) in this process with these key names, for the cross-check. */
static uint8_t *table;
#define TBL_LEN 16384u

static void map_table(const char *const *keys, uint32_t n)
{
	int fd = memfd_create(SP_CTX_MEMFD_NAME, MFD_CLOEXEC);
	struct sp_ctx_header *h;
	size_t pos = 128;

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, TBL_LEN), 0);
	table = mmap(NULL, TBL_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(table != MAP_FAILED);
	close(fd);
	h = (struct sp_ctx_header *)table;
	h->abi_version = SP_CTX_ABI;
	h->header_size = sizeof(*h);
	h->slot_count = 16;
	h->slot_size = 656;
	h->slots_offset = 4096;
	h->keys_offset = 128;
	h->keys_size = 1024;
	h->pid = getpid();
	for (uint32_t i = 0; i < n; i++) {
		size_t l = strlen(keys[i]);

		table[pos++] = (uint8_t)l;
		memcpy(table + pos, keys[i], l);
		pos += l;
	}
	h->keys_count = n;
	memcpy(h->magic, SP_CTX_MAGIC, 8);
}

static void unmap_table(void)
{
	munmap(table, TBL_LEN);
	table = NULL;
}

static void test_otelctx_runtime_service_name(void **state)
{
	struct pb *p = hook_payload("checkout", KEYS, 3);
	const struct otelctx_attr *a;
	struct proc *p0;
	size_t n;
	char buf[512];

	publish_at(BUF_A, p);
	p0 = this_proc();
	assert_true(runtime__has(p0, RT_OTELCTX));	/* detected from the mapping alone */
	runtime__poll(p0, now_ns());
	assert_string_equal(otelctx__service_name(p0), "checkout");
	assert_int_equal(otelctx__resource(p0, &a, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(a[2].value, "dotnet");
	assert_int_equal(p0->rt[RT_OTELCTX].last, RT_WAIT);	/* watched for updates */
	describe(p0, buf, sizeof(buf));
	assert_string_equal(buf, "OTEL_CTX v2: service.name \"checkout\", 3 resource attributes, key map "
				 "3 keys (spanprof_ctx_v1), no span table to check it against; 1 read");
	pb_free(p);
}

static void test_otelctx_runtime_cross_check(void **state)
{
	static const char *const other[] = { "local_root_span_id", "span_name", "region" };
	static const char *const more[] = { "local_root_span_id", "span_name", "tenant", "region" };
	struct pb *p = hook_payload("svc", KEYS, 3);
	struct proc *p0;
	char buf[512];

	map_table(KEYS, 3);
	publish_at(BUF_A, p);
	p0 = this_proc();
	runtime__poll(p0, now_ns());
	describe(p0, buf, sizeof(buf));
	assert_non_null(strstr(buf, "key map 3 keys (spanprof_ctx_v1), 0 mismatches with the span table"));
	unmap_table();

	/* A table whose key 2 is another name. The context is republished, the mappings re-read. */
	map_table(other, 3);
	update_at(BUF_B, p);
	proc__read_maps(p0);
	poll_again(p0);
	describe(p0, buf, sizeof(buf));
	assert_non_null(strstr(buf, "1 mismatches with the span table"));
	unmap_table();

	/* A table ahead of the key map (a key appended, the context not republished yet). */
	map_table(more, 4);
	update_at(BUF_A, p);
	proc__read_maps(p0);
	poll_again(p0);
	describe(p0, buf, sizeof(buf));
	assert_non_null(strstr(buf, "0 mismatches with the span table (1 table keys not in it yet)"));
	unmap_table();
	pb_free(p);
}

static void test_otelctx_runtime_states(void **state)
{
	struct pb *p = hook_payload("svc", KEYS, 3);
	struct proc *p0;
	char buf[512];

	/* Mapped, not published: waiting. */
	p0 = this_proc();
	runtime__poll(p0, now_ns());
	describe(p0, buf, sizeof(buf));
	assert_string_equal(buf, "OTEL_CTX not published yet");
	assert_null(otelctx__service_name(p0));
	assert_int_equal(p0->rt[RT_OTELCTX].last, RT_WAIT);
	/* Half-written at first sight: still waiting, counted. */
	publish_at(BUF_A, p);
	hdr()->published_at_ns = 0;
	poll_again(p0);
	describe(p0, buf, sizeof(buf));
	assert_string_equal(buf, "OTEL_CTX not published yet; 0 read, 3 caught mid-update (retried)");
	/* Done. */
	hdr()->published_at_ns = 5;
	poll_again(p0);
	assert_string_equal(otelctx__service_name(p0), "svc");
	/* Republished with another version: the old context is dropped, not kept. */
	hdr()->version = 7;
	hdr()->published_at_ns = 6;
	poll_again(p0);
	assert_null(otelctx__service_name(p0));
	describe(p0, buf, sizeof(buf));
	assert_string_equal(buf, "OTEL_CTX of version 7: ignored; 1 read, 3 caught mid-update "
				 "(retried), 1 refused");
	/* Oversize. */
	hdr()->version = OTELCTX_VERSION;
	hdr()->payload_size = 5u << 20;
	poll_again(p0);
	describe(p0, buf, sizeof(buf));
	assert_non_null(strstr(buf, "OTEL_CTX payload of 5242880 bytes (limit 1048576): ignored"));
	assert_non_null(strstr(buf, ", 2 refused"));
	/* The same refused header again: not counted again. */
	poll_again(p0);
	describe(p0, buf, sizeof(buf));
	assert_non_null(strstr(buf, ", 2 refused"));
	/* An undecodable payload: refused once, then not read again until it changes. */
	hdr()->payload_size = 3;
	memcpy(ctx_map + BUF_A, "\x0a\x7f\x01", 3);
	hdr()->published_at_ns = 7;
	poll_again(p0);
	poll_again(p0);
	describe(p0, buf, sizeof(buf));
	assert_string_equal(buf, "invalid OTEL_CTX (header or payload): ignored; 1 read, 3 caught "
				 "mid-update (retried), 3 refused");
	/* Fixed: read. */
	memcpy(ctx_map + BUF_A, p->b, p->n);
	hdr()->payload_size = (uint32_t)p->n;
	hdr()->published_at_ns = 8;
	poll_again(p0);
	assert_string_equal(otelctx__service_name(p0), "svc");
	pb_free(p);
}

/* No context in the process (the mapping gone): nothing to say but that. */
static void test_otelctx_runtime_none(void **state)
{
	struct proc *p0;
	char buf[256];

	munmap(ctx_map, MAP_LEN);
	ctx_map = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(ctx_map != MAP_FAILED);
	p0 = this_proc();
	assert_false(runtime__has(p0, RT_OTELCTX));	/* not .NET, no mapping: not looked at */
	assert_null(otelctx__service_name(p0));
	describe(p0, buf, sizeof(buf));
	assert_string_equal(buf, "");
}


int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, map_setup, map_teardown)
	const struct CMUnitTest tests[] = {
		T(test_otelctx_read_live),
		T(test_otelctx_read_payload_elsewhere),
		T(test_otelctx_read_half_written),
		T(test_otelctx_read_refused),
		T(test_otelctx_read_racing_writer),
		T(test_otelctx_runtime_service_name),
		T(test_otelctx_runtime_cross_check),
		T(test_otelctx_runtime_states),
		T(test_otelctx_runtime_none),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
