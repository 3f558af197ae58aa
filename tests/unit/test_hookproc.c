/* test_hookproc.c: unit tests for user/process/hookproc.c (+ spanctx.c): a span table built in a
 * "spanprof-ctx" memfd mapped in this very process, found through /proc/self, registered in a
 * real BPF hash map, its records decoded into pprof labels. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <cmocka.h>

#include "hookproc.h"
#include "profile.h"
#include "profiler.h"
#include "proctab.h"
#include "runtime.h"
#include "testutil.h"
#include "util.h"

#define MAP_LEN     16384u
#define SLOTS_OFF   4096u
#define SLOT_COUNT  16u
#define SLOT_SIZE   656u
#define KEYS_OFF    128u
#define KEYS_SIZE   1024u

extern const struct runtime_ops spanctx_runtime;	/* hookproc.c */

static const struct runtime_ops *const only_spanctx[RT__MAX] = { [RT_SPANCTX] = &spanctx_runtime };
static struct runtime_env env = { .runtimes = only_spanctx, .ctx_map_fd = -1 };
static int map_fd = -1;	/* BPF_MAP_TYPE_HASH pid -> struct sp_ctx_proc, as ctx_procs */
static int map_errno;

/* The table of this test, mapped in this process. */
static int memfd = -1;
static uint8_t *table;
static struct proctab *pt;

/* User keys from SP_KEY_USER (2): tenant, pid (reserved), "" (empty), bad utf-8, span_id
 * (reserved), region. Indexes 0 and 1 are the fixed ones. */
static const char *const KEY_NAMES[] = { "local_root_span_id", "span_name", "tenant", "pid", "",
					 "bad\xff" "name", "span_id", "region" };
#define K_TENANT 2
#define K_PID	 3
#define K_EMPTY	 4
#define K_BADUTF 5
#define K_SPANID 6
#define K_REGION 7
#define N_KEYS	 8

static const uint8_t TRACE[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
				   0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
static const uint8_t SPAN[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };
#define TRACE_HEX "4bf92f3577b34da6a3ce929d0e0e4736"
#define SPAN_HEX  "00f067aa0ba902b7"
#define ROOT_HEX  "1122334455667788"

static struct sp_ctx_header *hdr(void)
{
	return (struct sp_ctx_header *)table;
}

/* Key table entries 0..count-1 written at KEYS_OFF; header keys_count set. */
static void publish_keys(uint32_t count)
{
	size_t pos = KEYS_OFF + testutil__key_table(table + KEYS_OFF, KEY_NAMES, count);

	assert_true(pos <= KEYS_OFF + KEYS_SIZE);
	hdr()->keys_count = count;
}

/* A header that passes every check; the magic is written last, as the hook does. */
static void good_header(void)
{
	struct sp_ctx_header *h = hdr();

	memset(h, 0, sizeof(*h));
	h->abi_version = SP_CTX_ABI;
	h->header_size = sizeof(*h);
	h->slot_count = SLOT_COUNT;
	h->slot_size = SLOT_SIZE;
	h->slots_offset = SLOTS_OFF;
	h->keys_offset = KEYS_OFF;
	h->keys_size = KEYS_SIZE;
	h->pid = getpid();
	h->published_at_ns = realtime_ns();
	publish_keys(N_KEYS - 1);	/* "region" comes later */
	memcpy(h->magic, SP_CTX_MAGIC, 8);
}

static int group_setup(void **state)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts);

	map_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "test_ctx_procs", sizeof(uint32_t),
				sizeof(struct sp_ctx_proc), 64, &opts);
	map_errno = map_fd < 0 ? -map_fd : 0;
	if (map_fd < 0)
		map_fd = -1;
	env.ctx_map_fd = map_fd;
	return 0;
}

static int group_teardown(void **state)
{
	if (map_fd >= 0)
		close(map_fd);
	return 0;
}

/* The table mapped, header written (or not, for the test to forge). */
static int setup(void **state)
{
	table = testutil__memfd_map(SP_CTX_MEMFD_NAME, MAP_LEN, &memfd);
	good_header();
	pt = proctab__new("/proc", &env);
	return pt ? 0 : -1;
}

static int teardown(void **state)
{
	for (uint32_t i = 0; pt && i < proctab__count(pt); i++)
		if (proctab__at(pt, i))
			runtime__detach_all(proctab__at(pt, i));
	proctab__free(pt);
	pt = NULL;
	munmap(table, MAP_LEN);
	close(memfd);
	if (map_fd >= 0) {
		uint32_t pid = getpid();

		bpf_map_delete_elem(map_fd, &pid);
	}
	return 0;
}

static void need_map(void)
{
	if (map_fd < 0) {
		fprintf(stderr, "bpf_map_create: %s: skipped\n", strerror(map_errno));
		skip();
	}
}

/* This process, as the sampler's loop would see it; its runtimes polled once. */
static struct proc *this_proc(void)
{
	struct proc *p = proctab__open(pt, getpid());

	assert_non_null(p);
	assert_false(p->gone);
	runtime__poll(p, now_ns());
	return p;
}

static void describe(const struct proc *p, char *buf, size_t len)
{
	runtime__describe(p, buf, len);
}

static int map_has(uint32_t pid, struct sp_ctx_proc *out)
{
	struct sp_ctx_proc v;

	return bpf_map_lookup_elem(map_fd, &pid, out ? out : &v) == 0;
}

/* ---- records (built with testutil__rec_*): their labels ------------------------------------- */

static const char *label(const struct pf_label *l, int n, const char *key)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(l[i].key, key))
			return l[i].value;
	return NULL;
}

/* ---- discovery and registration -------------------------------------------------------------- */

static void test_hookproc_found_and_registered(void **state)
{
	struct sp_ctx_proc v;
	struct proc *p;
	char buf[256];

	need_map();
	p = this_proc();
	assert_true(runtime__has(p, RT_SPANCTX));
	assert_true(hookproc__registered(p));
	assert_int_equal(p->rt[RT_SPANCTX].last, RT_DONE);
	assert_true(map_has(getpid(), &v));
	assert_int_equal(v.slots_addr, (uint64_t)(uintptr_t)table + SLOTS_OFF);
	assert_int_equal(v.slot_count, SLOT_COUNT);
	assert_int_equal(v.slot_size, SLOT_SIZE);
	assert_int_equal(v.proc_start_ticks, p->start_ticks);	/* a reused pid never reads it */
	describe(p, buf, sizeof(buf));
	assert_string_equal(buf, "span table v1: 16 slots");
	/* Done: not polled again until the mappings change. */
	runtime__poll(p, now_ns() + 100ull * 1000000000ull);
	assert_true(hookproc__registered(p));
}

/* A header not published yet (no magic): wait, then register once it is. */
static void test_hookproc_unpublished_then_registered(void **state)
{
	struct proc *p;
	char buf[256];

	need_map();
	memset(hdr()->magic, 0, 8);
	p = this_proc();
	assert_true(runtime__has(p, RT_SPANCTX));
	assert_false(hookproc__registered(p));
	assert_int_equal(p->rt[RT_SPANCTX].last, RT_WAIT);
	describe(p, buf, sizeof(buf));
	assert_string_equal(buf, "span table not published yet");
	assert_false(map_has(getpid(), NULL));

	memcpy(hdr()->magic, SP_CTX_MAGIC, 8);
	runtime__poll(p, p->rt[RT_SPANCTX].next_poll_ns);
	assert_true(hookproc__registered(p));
	assert_true(map_has(getpid(), NULL));
}

/* Forged headers are refused with the reason, never registered. */
static void test_hookproc_forged_headers_refused(void **state)
{
	static const struct {
		const char *what;
		const char *desc;
	} cases[] = {
		{ "bad magic", "invalid span table: ignored" },
		{ "other ABI", "span table of another hook ABI version: ignored" },
		{ "slots past the mapping", "invalid span table: ignored" },
		{ "keys past the mapping", "invalid span table: ignored" },
		{ "header larger than the mapping", "invalid span table: ignored" },
		{ "another process's pid (inherited by fork)", "invalid span table: ignored" },
		{ "disabled by the hook", "no span table (hook not loaded)" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sp_ctx_header *h = hdr();
		struct proc *p;
		char buf[256];

		good_header();
		switch (i) {
		case 0: memcpy(h->magic, "SPANPROX", 8); break;
		case 1: h->abi_version = SP_CTX_ABI + 1; break;
		case 2: h->slot_count = 64; break;	/* 4096 + 64 * 656 > 16384 */
		case 3: h->keys_offset = MAP_LEN - 512; break;
		case 4: h->header_size = MAP_LEN + 4096; break;
		case 5: h->pid = getpid() + 1; break;
		case 6: h->flags = 1; break;	/* SPANCTX_F_DISABLED */
		}
		p = this_proc();
		describe(p, buf, sizeof(buf));
		if (strcmp(buf, cases[i].desc))
			fail_msg("%s: described as \"%s\", want \"%s\"", cases[i].what, buf,
				 cases[i].desc);
		assert_false(hookproc__registered(p));
		assert_true(p->rt[RT_SPANCTX].last == RT_WAIT || p->rt[RT_SPANCTX].last < 0);
		if (map_fd >= 0)
			assert_false(map_has(getpid(), NULL));
		runtime__detach_all(p);
		proctab__remove(pt, p);
	}
}

/* No table at all: nothing is attached, labels have nothing to decode with. */
static void test_hookproc_no_table(void **state)
{
	struct pf_label out[4];
	struct proc *p;
	struct testutil_rec r;

	munmap(table, MAP_LEN);
	table = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(table != MAP_FAILED);
	p = this_proc();
	assert_false(runtime__has(p, RT_SPANCTX));
	assert_false(hookproc__registered(p));
	testutil__rec_start(&r, TRACE, SPAN, 1);
	assert_int_equal(hookproc__labels(p, r.b, r.len, 0, out, 4), -ENOENT);
}

/* detach removes the map entry (a later process with this pid must not inherit it). */
static void test_hookproc_detach_removes_map_entry(void **state)
{
	struct sp_ctx_proc other = { .slots_addr = 1, .slot_count = 1, .slot_size = 64 };
	uint32_t other_pid = 999999;
	struct proc *p;

	need_map();
	assert_int_equal(bpf_map_update_elem(map_fd, &other_pid, &other, BPF_ANY), 0);
	p = this_proc();
	assert_true(map_has(getpid(), NULL));
	runtime__detach_all(p);
	assert_false(map_has(getpid(), NULL));
	assert_false(hookproc__registered(p));
	assert_true(map_has(other_pid, NULL));	/* only its own entry */
	bpf_map_delete_elem(map_fd, &other_pid);
}

/* Every change to the map moves its generation, after the change (the off-CPU program keeps a
 * thread's table until it moves); a look that changes nothing does not. */
static void test_hookproc_map_changes_move_the_generation(void **state)
{
	struct sp_ctx_proc early = { .slots_addr = 1, .slot_count = 16, .slot_size = SLOT_SIZE };
	uint64_t gen = 0, start_ticks;
	uint32_t pid = getpid();
	struct proc *p;

	need_map();
	env.ctx_gen = &gen;
	p = this_proc();
	start_ticks = p->start_ticks;
	assert_true(hookproc__registered(p));
	assert_int_equal(gen, 1);
	runtime__poll(p, now_ns() + 100ull * 1000000000ull);	/* done: no change */
	assert_int_equal(gen, 1);
	runtime__detach_all(p);
	assert_false(map_has(pid, NULL));
	assert_int_equal(gen, 2);
	proctab__remove(pt, p);

	/* The sampler's own entry from the announcement, for a table user space refuses. */
	early.proc_start_ticks = start_ticks;
	assert_int_equal(bpf_map_update_elem(map_fd, &pid, &early, BPF_ANY), 0);
	hdr()->abi_version = SP_CTX_ABI + 1;
	p = this_proc();
	assert_false(hookproc__registered(p));
	assert_false(map_has(pid, NULL));
	assert_int_equal(gen, 3);
	env.ctx_gen = NULL;
}

/* ---- labels ---------------------------------------------------------------------------------- */

static void test_hookproc_labels_otel_convention(void **state)
{
	struct pf_label out[HOOKPROC_MAX_LABELS];
	struct proc *p = this_proc();
	struct testutil_rec r;
	int n;

	testutil__rec_start(&r, TRACE, SPAN, 1);
	testutil__rec_str(&r, SP_KEY_LOCAL_ROOT_SPAN_ID, ROOT_HEX);
	testutil__rec_str(&r, SP_KEY_SPAN_NAME, "GET /work/a");
	testutil__rec_str(&r, K_TENANT, "acme");
	n = hookproc__labels(p, r.b, r.len, 0, out, HOOKPROC_MAX_LABELS);
	assert_int_equal(n, 5);
	assert_string_equal(label(out, n, "trace_id"), TRACE_HEX);
	assert_string_equal(label(out, n, "span_id"), SPAN_HEX);
	assert_string_equal(label(out, n, "local_root_span_id"), ROOT_HEX);
	assert_string_equal(label(out, n, "span_name"), "GET /work/a");
	assert_string_equal(label(out, n, "tenant"), "acme");

	/* Without a local root: no local_root_span_id label. */
	testutil__rec_start(&r, TRACE, SPAN, 1);
	n = hookproc__labels(p, r.b, r.len, 0, out, HOOKPROC_MAX_LABELS);
	assert_int_equal(n, 2);
	assert_null(label(out, n, "local_root_span_id"));
	assert_null(label(out, n, "span_name"));

	/* max is respected. */
	testutil__rec_start(&r, TRACE, SPAN, 1);
	testutil__rec_str(&r, SP_KEY_LOCAL_ROOT_SPAN_ID, ROOT_HEX);
	testutil__rec_str(&r, K_TENANT, "acme");
	assert_int_equal(hookproc__labels(p, r.b, r.len, 0, out, 2), 2);
	assert_string_equal(out[0].key, "trace_id");
}

/* Pyroscope: span_id is the local root span id (the active span when there is none). */
static void test_hookproc_labels_pyroscope_convention(void **state)
{
	struct pf_label out[HOOKPROC_MAX_LABELS];
	struct proc *p = this_proc();
	struct testutil_rec r;
	int n;

	testutil__rec_start(&r, TRACE, SPAN, 1);
	testutil__rec_str(&r, SP_KEY_LOCAL_ROOT_SPAN_ID, ROOT_HEX);
	testutil__rec_str(&r, SP_KEY_SPAN_NAME, "GET /work/a");
	testutil__rec_str(&r, K_TENANT, "acme");
	n = hookproc__labels(p, r.b, r.len, 1, out, HOOKPROC_MAX_LABELS);
	assert_int_equal(n, 3);
	assert_string_equal(label(out, n, "span_id"), ROOT_HEX);
	assert_null(label(out, n, "trace_id"));
	assert_null(label(out, n, "local_root_span_id"));
	assert_string_equal(label(out, n, "span_name"), "GET /work/a");
	assert_string_equal(label(out, n, "tenant"), "acme");

	testutil__rec_start(&r, TRACE, SPAN, 1);
	n = hookproc__labels(p, r.b, r.len, 1, out, HOOKPROC_MAX_LABELS);
	assert_int_equal(n, 1);
	assert_string_equal(label(out, n, "span_id"), SPAN_HEX);
}

/* A label scope outside any span: user labels only. */
static void test_hookproc_labels_outside_span(void **state)
{
	struct pf_label out[HOOKPROC_MAX_LABELS];
	struct proc *p = this_proc();
	struct testutil_rec r;
	int n;

	testutil__rec_start(&r, NULL, NULL, 1);
	testutil__rec_str(&r, SP_KEY_SPAN_NAME, "ignored without a span");
	testutil__rec_str(&r, K_TENANT, "acme");
	for (int pyro = 0; pyro < 2; pyro++) {
		n = hookproc__labels(p, r.b, r.len, pyro, out, HOOKPROC_MAX_LABELS);
		assert_int_equal(n, 1);
		assert_string_equal(out[0].key, "tenant");
		assert_string_equal(out[0].value, "acme");
	}
}

/* Reserved, empty and malformed user label names are dropped and counted; bad values cleaned. */
static void test_hookproc_bad_user_labels_dropped_and_counted(void **state)
{
	struct pf_label out[HOOKPROC_MAX_LABELS];
	struct proc *p = this_proc();
	char buf[512];
	struct testutil_rec r;
	int n;

	testutil__rec_start(&r, TRACE, SPAN, 1);
	testutil__rec_str(&r, K_PID, "666");		/* would override ours */
	testutil__rec_str(&r, K_SPANID, "ffffffffffffffff");
	testutil__rec_str(&r, K_EMPTY, "x");
	testutil__rec_str(&r, K_BADUTF, "y");
	testutil__rec_str(&r, K_TENANT, "ac\x01me\xc3");	/* control char, cut UTF-8 sequence */
	testutil__rec_str(&r, SP_KEY_SPAN_NAME, "GET \xff");
	n = hookproc__labels(p, r.b, r.len, 0, out, HOOKPROC_MAX_LABELS);
	assert_int_equal(n, 4);
	assert_string_equal(label(out, n, "span_id"), SPAN_HEX);
	assert_null(label(out, n, "pid"));
	assert_string_equal(label(out, n, "tenant"), "ac?me?");
	assert_string_equal(label(out, n, "span_name"), "GET ?");
	describe(p, buf, sizeof(buf));
	assert_non_null(strstr(buf, "4 user labels dropped"));
	/* Counted per occurrence. */
	assert_int_equal(hookproc__labels(p, r.b, r.len, 0, out, HOOKPROC_MAX_LABELS), 4);
	describe(p, buf, sizeof(buf));
	assert_non_null(strstr(buf, "8 user labels dropped"));
}

/* A key the hook published after we read the key table is found on the record that uses it. */
static void test_hookproc_key_published_later(void **state)
{
	struct pf_label out[HOOKPROC_MAX_LABELS];
	struct proc *p = this_proc();
	struct testutil_rec r;
	int n;

	testutil__rec_start(&r, TRACE, SPAN, 1);
	testutil__rec_str(&r, K_TENANT, "acme");
	n = hookproc__labels(p, r.b, r.len, 0, out, HOOKPROC_MAX_LABELS);
	assert_int_equal(n, 3);
	publish_keys(N_KEYS);	/* "region" */
	testutil__rec_str(&r, K_REGION, "eu-west");
	n = hookproc__labels(p, r.b, r.len, 0, out, HOOKPROC_MAX_LABELS);
	assert_int_equal(n, 4);
	assert_string_equal(label(out, n, "region"), "eu-west");
	assert_string_equal(label(out, n, "tenant"), "acme");
}

/* A record caught mid-write, or too short: an error, no labels. */
static void test_hookproc_labels_bad_records(void **state)
{
	struct pf_label out[HOOKPROC_MAX_LABELS];
	struct proc *p = this_proc();
	struct testutil_rec r;

	testutil__rec_start(&r, TRACE, SPAN, 0);
	assert_int_equal(hookproc__labels(p, r.b, r.len, 0, out, HOOKPROC_MAX_LABELS), -EAGAIN);
	testutil__rec_start(&r, TRACE, SPAN, 1);
	assert_int_equal(hookproc__labels(p, r.b, SP_CTX_HEAD - 1, 0, out, HOOKPROC_MAX_LABELS),
			 -EINVAL);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_hookproc_found_and_registered),
		T(test_hookproc_unpublished_then_registered),
		T(test_hookproc_forged_headers_refused),
		T(test_hookproc_no_table),
		T(test_hookproc_detach_removes_map_entry),
		T(test_hookproc_map_changes_move_the_generation),
		T(test_hookproc_labels_otel_convention),
		T(test_hookproc_labels_pyroscope_convention),
		T(test_hookproc_labels_outside_span),
		T(test_hookproc_bad_user_labels_dropped_and_counted),
		T(test_hookproc_key_published_later),
		T(test_hookproc_labels_bad_records),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
