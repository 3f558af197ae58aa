/* test_spanctx.c: unit tests for the span-context table reader (maps lookup, header checks, keys, decode, a live table). */
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

#include <cmocka.h>

#include "procfs.h"
#include "spanctx.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------------------------- */

static const uint8_t TRACE[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
				   0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
static const uint8_t SPAN[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };

static struct spanctx_keys *std_keys(void)
{
	static const char *const names[] = { "local_root_span_id", "span_name", "tenant", "region" };
	uint8_t buf[256];
	size_t n = testutil__key_table(buf, names, 4);
	struct spanctx_keys *k = spanctx_keys__new();

	assert_non_null(k);
	assert_int_equal(spanctx_keys__parse(k, buf, n, 4), 4);
	return k;
}

/* A header that passes every check, for a mapping of MAP_LEN bytes. */
#define MAP_START 0x7f0000000000ull
#define MAP_LEN (20480ull + 4096ull * 656ull)

static struct sp_ctx_header good_header(void)
{
	struct sp_ctx_header h;

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, SP_CTX_MAGIC, 8);
	h.abi_version = SP_CTX_ABI;
	h.header_size = sizeof(h);
	h.slot_count = 4096;
	h.slot_size = 656;
	h.slots_offset = 20480;
	h.keys_offset = 128;
	h.keys_size = 16384;
	h.keys_count = 3;
	h.pid = 1234;
	h.published_at_ns = 42;
	h.slots_full = 7;
	return h;
}

static int check(const struct sp_ctx_header *h)
{
	struct spanctx_table t;

	return spanctx__check_header(h, sizeof(*h), MAP_START, MAP_START + MAP_LEN, &t);
}

/* ---- maps ---------------------------------------------------------------------------------- */

static const char MAPS_HOOKED[] =
	"55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 1234                       /usr/bin/dotnet\n"
	"7f3a1c000000-7f3a1c021000 rw-p 00000000 00:00 0 \n"
	"7f3a2e9a5000-7f3a2ecaa000 rw-s 00000000 00:01 5678                       /memfd:spanprof-ctx (deleted)\n"
	"7f3a2f000000-7f3a2f100000 r-xs 00000000 00:01 99                         /memfd:doublemapper (deleted)\n"
	"7ffd6b1e0000-7ffd6b201000 rw-p 00000000 00:00 0                          [stack]\n";

static void test_spanctx_maps_found(void **state)
{
	uint64_t s = 0, e = 0;

	(void)state;
	assert_int_equal(spanctx__find_mapping(MAPS_HOOKED, strlen(MAPS_HOOKED), &s, &e), 0);
	assert_int_equal(s, 0x7f3a2e9a5000ull);
	assert_int_equal(e, 0x7f3a2ecaa000ull);
}

static void test_spanctx_maps_not_hooked(void **state)
{
	static const char maps[] =
		"55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 1234 /usr/bin/dotnet\n"
		"7f3a2e9a5000-7f3a2ecaa000 rw-s 00000000 00:01 5678 /memfd:spanprof-ctx2 (deleted)\n"
		"7f3a2e9a5000-7f3a2ecaa000 rw-s 00000000 00:01 5678 /tmp/memfd:spanprof-ctx (deleted)\n"
		"7f3a2e9a5000-7f3a2ecaa000 rw-s 00000000 00:01 5678 /memfd:spanprof-ctx (deleted) x\n"
		"7f3a2f000000-7f3a2f100000 r-xs 00000000 00:01 99 /memfd:doublemapper (deleted)\n";
	uint64_t s = 1, e = 1;

	(void)state;
	assert_int_equal(spanctx__find_mapping(maps, strlen(maps), &s, &e), -ENOENT);
	assert_int_equal(s, 1);	/* untouched on failure */
	assert_int_equal(spanctx__find_mapping("", 0, &s, &e), -ENOENT);
}

static void test_spanctx_maps_last_line_no_newline(void **state)
{
	static const char maps[] = "1000-3000 rw-s 00000000 00:01 5 /memfd:spanprof-ctx (deleted)";
	uint64_t s = 0, e = 0;

	(void)state;
	assert_int_equal(spanctx__find_mapping(maps, strlen(maps), &s, &e), 0);
	assert_int_equal(s, 0x1000);
	assert_int_equal(e, 0x3000);
	/* The length bounds the scan: a prefix that cuts the name finds nothing. */
	assert_int_equal(spanctx__find_mapping(maps, strlen(maps) - 12, &s, &e), -ENOENT);
}

static void test_spanctx_maps_without_deleted_suffix(void **state)
{
	static const char maps[] = "1000-3000 rw-s 00000000 00:01 5 /memfd:spanprof-ctx\n";
	uint64_t s = 0, e = 0;

	(void)state;
	assert_int_equal(spanctx__find_mapping(maps, strlen(maps), &s, &e), 0);
	assert_int_equal(s, 0x1000);
}

static void test_spanctx_maps_two_tables(void **state)
{
	static const char maps[] =
		"1000-3000 rw-s 00000000 00:01 5 /memfd:spanprof-ctx (deleted)\n"
		"5000-7000 rw-s 00000000 00:01 6 /memfd:spanprof-ctx (deleted)\n";
	uint64_t s, e;

	(void)state;
	assert_int_equal(spanctx__find_mapping(maps, strlen(maps), &s, &e), -EBADMSG);
}

static void test_spanctx_maps_offset_not_zero(void **state)
{
	static const char maps[] = "1000-3000 rw-s 00001000 00:01 5 /memfd:spanprof-ctx (deleted)\n";
	uint64_t s, e;

	(void)state;
	assert_int_equal(spanctx__find_mapping(maps, strlen(maps), &s, &e), -EBADMSG);
}

static void test_spanctx_maps_garbage(void **state)
{
	char buf[4096];
	uint64_t s, e;

	(void)state;
	/* Binary noise, an over-long line and half lines must not match or crash. */
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)((i * 2654435761u) >> 13);
	assert_int_equal(spanctx__find_mapping(buf, sizeof(buf), &s, &e), -ENOENT);
	memset(buf, 'a', sizeof(buf));
	assert_int_equal(spanctx__find_mapping(buf, sizeof(buf), &s, &e), -ENOENT);
	assert_int_equal(spanctx__find_mapping("1000-", 5, &s, &e), -ENOENT);
	assert_int_equal(spanctx__find_mapping(NULL, 0, &s, &e), -EINVAL);
}

/* ---- header -------------------------------------------------------------------------------- */

static void test_spanctx_header_good(void **state)
{
	struct sp_ctx_header h = good_header();
	struct spanctx_table t;

	(void)state;
	assert_int_equal(spanctx__check_header(&h, sizeof(h), MAP_START, MAP_START + MAP_LEN, &t), 0);
	assert_int_equal(t.proc.slots_addr, MAP_START + 20480);
	assert_int_equal(t.proc.slot_count, 4096);
	assert_int_equal(t.proc.slot_size, 656);
	assert_int_equal(t.proc.proc_start_ticks, 0);
	assert_int_equal(t.keys_addr, MAP_START + 128);
	assert_int_equal(t.keys_size, 16384);
	assert_int_equal(t.keys_count, 3);
	assert_int_equal(t.ns_pid, 1234);
	assert_int_equal(t.slots_full, 7);
	assert_int_equal(t.published_at_ns, 42);
	assert_int_equal(t.map_end, MAP_START + MAP_LEN);
}

static void test_spanctx_header_not_published(void **state)
{
	struct sp_ctx_header h = good_header();

	(void)state;
	memset(h.magic, 0, sizeof(h.magic));
	assert_int_equal(check(&h), -EAGAIN);
}

static void test_spanctx_header_bad_magic(void **state)
{
	struct sp_ctx_header h = good_header();

	(void)state;
	h.magic[7] = 'X';
	assert_int_equal(check(&h), -EBADMSG);
}

static void test_spanctx_header_other_abi(void **state)
{
	struct sp_ctx_header h = good_header();

	(void)state;
	h.abi_version = 2;
	assert_int_equal(check(&h), -EPROTONOSUPPORT);
	h.abi_version = 0;
	assert_int_equal(check(&h), -EPROTONOSUPPORT);
}

static void test_spanctx_header_sizes(void **state)
{
	struct sp_ctx_header h;

	(void)state;
	h = good_header();
	h.header_size = 79;
	assert_int_equal(check(&h), -EBADMSG);
	h = good_header();
	h.header_size = 96; /* a later, longer header is fine */
	assert_int_equal(check(&h), 0);
	h = good_header();
	h.header_size = 0xffffffff;
	assert_int_equal(check(&h), -EBADMSG);
}

static void test_spanctx_header_slot_count(void **state)
{
	static const uint32_t bad[] = { 0, 3, 4095, 4097, SP_CTX_MAX_SLOTS * 2, 0x80000000u };
	struct sp_ctx_header h;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		h = good_header();
		h.slot_count = bad[i];
		assert_int_equal(check(&h), -EBADMSG);
	}
	h = good_header();
	h.slot_count = 1;
	assert_int_equal(check(&h), 0);
}

static void test_spanctx_header_slot_size(void **state)
{
	static const uint32_t bad[] = { 0, 8, SP_SLOT_HEAD + SP_CTX_HEAD - 4, 660, 4104, 0xfffffff8u };
	struct sp_ctx_header h;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		h = good_header();
		h.slot_size = bad[i];
		assert_int_equal(check(&h), -EBADMSG);
	}
	h = good_header();
	h.slot_size = 48; /* smallest multiple of 8 that holds head + OTEP head */
	assert_int_equal(check(&h), 0);
}

static void test_spanctx_header_slots_outside_mapping(void **state)
{
	struct sp_ctx_header h;

	(void)state;
	h = good_header();
	h.slots_offset = 20480 + 4096; /* one page past: last slots beyond the end */
	assert_int_equal(check(&h), -EBADMSG);
	h = good_header();
	h.slots_offset = 20480 + 100; /* not page aligned */
	assert_int_equal(check(&h), -EBADMSG);
	h = good_header();
	h.slots_offset = 0; /* over the header */
	assert_int_equal(check(&h), -EBADMSG);
	h = good_header();
	h.slot_count = SP_CTX_MAX_SLOTS;
	h.slot_size = 4096; /* 256 MiB of slots in a 2.6 MiB mapping; no 32-bit wrap */
	assert_int_equal(check(&h), -EBADMSG);
}

static void test_spanctx_header_keys(void **state)
{
	struct sp_ctx_header h;

	(void)state;
	h = good_header();
	h.keys_offset = 40; /* inside the header */
	assert_int_equal(check(&h), -EBADMSG);
	h = good_header();
	h.keys_size = 20480; /* runs into the slots */
	assert_int_equal(check(&h), -EBADMSG);
	h = good_header();
	h.keys_offset = 0xfffffff0u; /* past the mapping, and wraps in 32 bits */
	assert_int_equal(check(&h), -EBADMSG);
	h = good_header();
	h.keys_count = SP_CTX_MAX_KEYS + 1;
	assert_int_equal(check(&h), -EBADMSG);
	h = good_header();
	h.keys_count = SP_CTX_MAX_KEYS;
	assert_int_equal(check(&h), 0);
}

static void test_spanctx_header_disabled(void **state)
{
	struct sp_ctx_header h = good_header();
	struct spanctx_table t;

	(void)state;
	h.flags = SPANCTX_F_DISABLED;
	assert_int_equal(spanctx__check_header(&h, sizeof(h), MAP_START, MAP_START + MAP_LEN, &t), -ENOENT);
	assert_int_equal(t.flags, SPANCTX_F_DISABLED); /* still filled, to say why */
}

static void test_spanctx_header_short_input(void **state)
{
	struct sp_ctx_header h = good_header();
	struct spanctx_table t;

	(void)state;
	assert_int_equal(spanctx__check_header(&h, sizeof(h) - 1, MAP_START, MAP_START + MAP_LEN, &t), -EBADMSG);
	assert_int_equal(spanctx__check_header(&h, sizeof(h), MAP_START, MAP_START + 64, &t), -EBADMSG);
	assert_int_equal(spanctx__check_header(&h, sizeof(h), MAP_START, MAP_START, &t), -EBADMSG);
	assert_int_equal(spanctx__check_header(NULL, sizeof(h), MAP_START, MAP_START + MAP_LEN, &t), -EINVAL);
}

/* ---- probe --------------------------------------------------------------------------------- */

static void test_spanctx_probe_sequence(void **state)
{
	(void)state;
	/* tid 1: hash 0x9E3779B1, low 12 bits 0x9b1. */
	assert_int_equal(spanctx__probe(1, 0, 4096), 0x9b1);
	assert_int_equal(spanctx__probe(1, 7, 4096), 0x9b8);
	/* 0x9E3779B1 is 1 mod 16: tid 15 starts at slot 15 of 16 and wraps to 0. */
	assert_int_equal(spanctx__probe(15, 0, 16), 15);
	assert_int_equal(spanctx__probe(15, 1, 16), 0);
	assert_int_equal(spanctx__probe(15, 7, 16), 6);
	/* The multiply wraps in 32 bits: 0x10000 * 0x9E3779B1 = 0x79B10000 mod 2^32. */
	assert_int_equal(spanctx__probe(0x10000, 0, 65536), 0);
	assert_int_equal(spanctx__probe(0x10001, 0, 65536), 0x79b1);
	for (uint32_t tid = 1; tid < 5000; tid++)
		for (uint32_t i = 0; i < SP_CTX_PROBES; i++)
			assert_true(spanctx__probe(tid, i, 64) < 64);
}

/* ---- keys ---------------------------------------------------------------------------------- */

static void test_spanctx_keys_parse(void **state)
{
	struct spanctx_keys *k = std_keys();

	(void)state;
	assert_int_equal(spanctx_keys__count(k), 4);
	assert_string_equal(spanctx_keys__name(k, 0), "local_root_span_id");
	assert_string_equal(spanctx_keys__name(k, 2), "tenant");
	assert_string_equal(spanctx_keys__name(k, 3), "region");
	assert_null(spanctx_keys__name(k, 4));
	assert_null(spanctx_keys__name(k, 255));
	assert_int_equal(spanctx_keys__bad(k), 0);
	spanctx_keys__free(k);
}

static void test_spanctx_keys_count_past_entries(void **state)
{
	static const char *const names[] = { "a", "bb" };
	uint8_t buf[64];
	size_t n = testutil__key_table(buf, names, 2);
	struct spanctx_keys *k = spanctx_keys__new();

	(void)state;
	/* keys_count says 5 but only 2 entries are there. */
	assert_int_equal(spanctx_keys__parse(k, buf, n, 5), 2);
	assert_int_equal(spanctx_keys__bad(k), 3);
	assert_string_equal(spanctx_keys__name(k, 1), "bb");
	assert_null(spanctx_keys__name(k, 2));
	spanctx_keys__free(k);
}

static void test_spanctx_keys_overrun(void **state)
{
	uint8_t buf[8] = { 1, 'a', 200, 'x', 'y' }; /* second entry claims 200 bytes */
	struct spanctx_keys *k = spanctx_keys__new();

	(void)state;
	assert_int_equal(spanctx_keys__parse(k, buf, sizeof(buf), 2), 1);
	assert_int_equal(spanctx_keys__bad(k), 1);
	/* A re-parse replaces the old names. */
	assert_int_equal(spanctx_keys__parse(k, buf, 0, 0), 0);
	assert_null(spanctx_keys__name(k, 0));
	assert_int_equal(spanctx_keys__parse(NULL, buf, 1, 1), -EINVAL);
	assert_int_equal(spanctx_keys__parse(k, NULL, 1, 1), -EINVAL);
	spanctx_keys__free(k);
	spanctx_keys__free(NULL);
}

static void test_spanctx_keys_too_many_and_nul(void **state)
{
	uint8_t *buf = malloc(300 * 3);
	struct spanctx_keys *k = spanctx_keys__new();

	(void)state;
	assert_non_null(buf);
	for (int i = 0; i < 300; i++) {
		buf[3 * i] = 2;
		buf[3 * i + 1] = 'k';
		buf[3 * i + 2] = (uint8_t)(i == 7 ? 0 : 'A' + i % 26);
	}
	assert_int_equal(spanctx_keys__parse(k, buf, 900, 300), SP_CTX_MAX_KEYS);
	assert_int_equal(spanctx_keys__bad(k), 300 - SP_CTX_MAX_KEYS);
	assert_string_equal(spanctx_keys__name(k, 7), "k?"); /* a NUL would hide the rest of the name */
	assert_string_equal(spanctx_keys__name(k, 254), "kU");
	free(buf);
	spanctx_keys__free(k);
}

static void test_spanctx_keys_long_names(void **state)
{
	/* 255 names of 255 bytes: the largest table a reader can be handed. */
	size_t len = 255 * 256;
	uint8_t *buf = malloc(len);
	struct spanctx_keys *k = spanctx_keys__new();

	(void)state;
	assert_non_null(buf);
	for (int i = 0; i < 255; i++) {
		buf[256 * i] = 255;
		memset(buf + 256 * i + 1, 'a' + i % 26, 255);
	}
	assert_int_equal(spanctx_keys__parse(k, buf, len, 255), 255);
	assert_int_equal(strlen(spanctx_keys__name(k, 254)), 255);
	assert_int_equal(spanctx_keys__name(k, 254)[0], 'a' + 254 % 26);
	free(buf);
	spanctx_keys__free(k);
}

/* ---- decode -------------------------------------------------------------------------------- */

static void test_spanctx_decode_full(void **state)
{
	struct spanctx_keys *k = std_keys();
	struct spanctx_labels l;
	struct testutil_rec r;

	(void)state;
	testutil__rec_start(&r, TRACE, SPAN, 1);
	testutil__rec_str(&r, SP_KEY_LOCAL_ROOT_SPAN_ID, "00f067aa0ba902b7");
	testutil__rec_str(&r, SP_KEY_SPAN_NAME, "GET /work/a");
	testutil__rec_str(&r, 2, "acme");
	testutil__rec_str(&r, 3, "eu");
	testutil__rec_end(&r);
	assert_int_equal(spanctx__decode(r.b, r.len, k, &l), 0);
	assert_true(l.head.has_span);
	assert_string_equal(l.head.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
	assert_string_equal(l.head.span_id, "00f067aa0ba902b7");
	assert_int_equal(l.head.trace_flags, 1);
	assert_string_equal(l.head.local_root_span_id, "00f067aa0ba902b7");
	assert_int_equal(l.head.span_name_len, 11);
	assert_string_equal(l.span_name, "GET /work/a");
	assert_int_equal(l.head.n_labels, 2);
	assert_string_equal(l.labels[0].key, "tenant");
	assert_string_equal(l.labels[0].value, "acme");
	assert_int_equal(l.labels[0].len, 4);
	assert_string_equal(l.labels[1].key, "region");
	assert_string_equal(l.labels[1].value, "eu");
	assert_int_equal(l.head.unknown_keys + l.head.skipped + (uint32_t)l.head.truncated, 0);
	spanctx_keys__free(k);
}

static void test_spanctx_decode_no_span(void **state)
{
	struct spanctx_labels l;
	struct testutil_rec r;

	(void)state;
	testutil__rec_start(&r, NULL, NULL, 1);
	r.b[25] = 0;
	testutil__rec_end(&r);
	assert_int_equal(spanctx__decode(r.b, r.len, NULL, &l), 0);
	assert_false(l.head.has_span);
	assert_string_equal(l.head.trace_id, "00000000000000000000000000000000");
	assert_string_equal(l.head.local_root_span_id, "");
	assert_int_equal(l.head.span_name_len, 0);
	assert_int_equal(l.head.n_labels, 0);
}

static void test_spanctx_decode_labels_without_span(void **state)
{
	struct spanctx_keys *k = std_keys();
	struct spanctx_labels l;
	struct testutil_rec r;

	(void)state;
	testutil__rec_start(&r, NULL, NULL, 1);
	testutil__rec_str(&r, 2, "batch");
	testutil__rec_end(&r);
	assert_int_equal(spanctx__decode(r.b, r.len, k, &l), 0);
	assert_false(l.head.has_span);
	assert_int_equal(l.head.n_labels, 1);
	assert_string_equal(l.labels[0].value, "batch");
	spanctx_keys__free(k);
}

static void test_spanctx_decode_mid_write(void **state)
{
	struct spanctx_labels l;
	struct testutil_rec r;

	(void)state;
	testutil__rec_start(&r, TRACE, SPAN, 0);
	testutil__rec_str(&r, SP_KEY_SPAN_NAME, "x");
	testutil__rec_end(&r);
	assert_int_equal(spanctx__decode(r.b, r.len, NULL, &l), -EAGAIN);
	assert_int_equal(l.head.span_name_len, 0); /* nothing from a torn record */
	assert_int_equal(l.head.n_labels, 0);
}

static void test_spanctx_decode_short(void **state)
{
	struct spanctx_labels l;
	struct testutil_rec r;

	(void)state;
	testutil__rec_start(&r, TRACE, SPAN, 1);
	testutil__rec_end(&r);
	assert_int_equal(spanctx__decode(r.b, SP_CTX_HEAD - 1, NULL, &l), -EINVAL);
	assert_int_equal(spanctx__decode(r.b, 0, NULL, &l), -EINVAL);
	assert_int_equal(spanctx__decode(NULL, 100, NULL, &l), -EINVAL);
	assert_int_equal(spanctx__decode(r.b, r.len, NULL, NULL), -EINVAL);
	assert_int_equal(spanctx__decode(r.b, SP_CTX_HEAD, NULL, &l), 0);
	assert_true(l.head.has_span);
}

/* The head is reset whole on every call, whatever it held: nothing of one record is left in the
 * next (nor of a field added to the head later). */
static void test_spanctx_decode_resets_head(void **state)
{
	static const struct spanctx_labels_head zero;
	struct spanctx_keys *k = std_keys();
	struct spanctx_labels *l = malloc(sizeof(*l)), *fresh = calloc(1, sizeof(*fresh));
	struct testutil_rec full, bare;

	(void)state;
	assert_non_null(l);
	assert_non_null(fresh);
	memset(l, 0xa5, sizeof(*l));
	assert_int_equal(spanctx__decode(NULL, 0, NULL, l), -EINVAL);
	assert_memory_equal(&l->head, &zero, sizeof(zero));

	/* Every field of the head set: ids, root id, span name, a label, an unknown key, a lone
	 * byte (skipped), attributes claimed past the record (truncated). */
	testutil__rec_start(&full, TRACE, SPAN, 1);
	testutil__rec_str(&full, SP_KEY_LOCAL_ROOT_SPAN_ID, "00f067aa0ba902b7");
	testutil__rec_str(&full, SP_KEY_SPAN_NAME, "GET /work/a");
	testutil__rec_str(&full, 2, "acme");
	testutil__rec_str(&full, 9, "later");
	full.b[full.len++] = 3;
	full.b[SP_CTX_OFF_ATTRS_LEN + 1] = 2;
	testutil__rec_start(&bare, NULL, NULL, 1);
	bare.b[SP_CTX_OFF_FLAGS] = 0;
	assert_int_equal(spanctx__decode(full.b, full.len, k, l), 0);
	assert_true(l->head.has_span && l->head.trace_flags && l->head.local_root_span_id[0] &&
		    l->head.span_name_len && l->head.n_labels && l->head.unknown_keys &&
		    l->head.skipped && l->head.truncated);
	assert_int_equal(spanctx__decode(bare.b, bare.len, k, l), 0);
	assert_int_equal(spanctx__decode(bare.b, bare.len, k, fresh), 0);
	assert_memory_equal(&l->head, &fresh->head, sizeof(l->head));
	free(fresh);
	free(l);
	spanctx_keys__free(k);
}

static void test_spanctx_decode_attrs_size_past_len(void **state)
{
	struct spanctx_labels l;
	struct testutil_rec r;

	(void)state;
	testutil__rec_start(&r, TRACE, SPAN, 1);
	testutil__rec_str(&r, SP_KEY_SPAN_NAME, "name");
	testutil__rec_end(&r);
	/* Claims 600 bytes of attributes; only the 6 given are read. */
	r.b[26] = 600 & 0xff;
	r.b[27] = 600 >> 8;
	assert_int_equal(spanctx__decode(r.b, r.len, NULL, &l), 0);
	assert_true(l.head.truncated);
	assert_string_equal(l.span_name, "name");
	assert_int_equal(l.head.skipped, 0);
}

static void test_spanctx_decode_attr_overrun(void **state)
{
	struct spanctx_keys *k = std_keys();
	struct spanctx_labels l;
	struct testutil_rec r;

	(void)state;
	testutil__rec_start(&r, TRACE, SPAN, 1);
	testutil__rec_str(&r, 2, "ok");
	r.b[r.len++] = 3;	/* region, 50 bytes claimed, 3 given */
	r.b[r.len++] = 50;
	memcpy(r.b + r.len, "abc", 3);
	r.len += 3;
	testutil__rec_end(&r);
	assert_int_equal(spanctx__decode(r.b, r.len, k, &l), 0);
	assert_int_equal(l.head.n_labels, 1);
	assert_string_equal(l.labels[0].value, "ok");
	assert_int_equal(l.head.skipped, 1);
	spanctx_keys__free(k);
}

static void test_spanctx_decode_lone_byte(void **state)
{
	struct spanctx_labels l;
	struct testutil_rec r;

	(void)state;
	testutil__rec_start(&r, TRACE, SPAN, 1);
	testutil__rec_str(&r, SP_KEY_SPAN_NAME, "n");
	r.b[r.len++] = 2;
	testutil__rec_end(&r);
	assert_int_equal(spanctx__decode(r.b, r.len, NULL, &l), 0);
	assert_string_equal(l.span_name, "n");
	assert_int_equal(l.head.skipped, 1);
}

static void test_spanctx_decode_unknown_key(void **state)
{
	struct spanctx_keys *k = std_keys();
	struct spanctx_labels l;
	struct testutil_rec r;

	(void)state;
	testutil__rec_start(&r, TRACE, SPAN, 1);
	testutil__rec_str(&r, 9, "later");	/* published after our copy of the key table */
	testutil__rec_str(&r, 2, "acme");
	testutil__rec_end(&r);
	assert_int_equal(spanctx__decode(r.b, r.len, k, &l), 0);
	assert_int_equal(l.head.unknown_keys, 1);
	assert_int_equal(l.head.n_labels, 1);
	assert_string_equal(l.labels[0].key, "tenant");
	/* Without keys every user label is unknown. */
	assert_int_equal(spanctx__decode(r.b, r.len, NULL, &l), 0);
	assert_int_equal(l.head.unknown_keys, 2);
	assert_int_equal(l.head.n_labels, 0);
	spanctx_keys__free(k);
}

static void test_spanctx_decode_bad_root_id(void **state)
{
	struct spanctx_labels l;
	struct testutil_rec r;

	(void)state;
	testutil__rec_start(&r, TRACE, SPAN, 1);
	testutil__rec_str(&r, SP_KEY_LOCAL_ROOT_SPAN_ID, "00f067aa0ba902b");	/* 15 digits */
	testutil__rec_str(&r, SP_KEY_LOCAL_ROOT_SPAN_ID, "00f067aa0ba902bz");	/* not hex */
	testutil__rec_end(&r);
	assert_int_equal(spanctx__decode(r.b, r.len, NULL, &l), 0);
	assert_string_equal(l.head.local_root_span_id, "");
	assert_int_equal(l.head.skipped, 2);

	testutil__rec_start(&r, TRACE, SPAN, 1);
	testutil__rec_str(&r, SP_KEY_LOCAL_ROOT_SPAN_ID, "00F067AA0BA902B7");
	testutil__rec_end(&r);
	assert_int_equal(spanctx__decode(r.b, r.len, NULL, &l), 0);
	assert_string_equal(l.head.local_root_span_id, "00f067aa0ba902b7");
}

static void test_spanctx_decode_long_values(void **state)
{
	struct spanctx_keys *k = std_keys();
	struct spanctx_labels l;
	char name[255], val[255];
	struct testutil_rec r;

	(void)state;
	memset(name, 'n', sizeof(name));
	memset(val, 'v', sizeof(val));
	val[10] = '\0';	/* an embedded NUL: len keeps the whole value */
	testutil__rec_start(&r, TRACE, SPAN, 1);
	testutil__rec_attr(&r, SP_KEY_SPAN_NAME, name, 255);
	testutil__rec_attr(&r, 2, val, 255);
	testutil__rec_end(&r);
	assert_int_equal(spanctx__decode(r.b, r.len, k, &l), 0);
	assert_int_equal(strlen(l.span_name), 255);
	assert_int_equal(l.labels[0].len, 255);
	assert_memory_equal(l.labels[0].value, val, 255);
	assert_int_equal(l.labels[0].value[255], '\0');
	spanctx_keys__free(k);
}

static void test_spanctx_decode_duplicate_key(void **state)
{
	struct spanctx_keys *k = std_keys();
	struct spanctx_labels l;
	struct testutil_rec r;

	(void)state;
	testutil__rec_start(&r, TRACE, SPAN, 1);
	testutil__rec_str(&r, 2, "first");
	testutil__rec_str(&r, 3, "eu");
	testutil__rec_str(&r, 2, "second");
	testutil__rec_end(&r);
	assert_int_equal(spanctx__decode(r.b, r.len, k, &l), 0);
	assert_int_equal(l.head.n_labels, 2);
	assert_string_equal(l.labels[0].value, "second");
	assert_int_equal(l.labels[0].len, 6);
	spanctx_keys__free(k);
}

static void test_spanctx_decode_label_cap(void **state)
{
	static const char *names[64];
	char namebuf[64][8];
	uint8_t kb[1024];
	struct spanctx_keys *k = spanctx_keys__new();
	struct spanctx_labels l;
	struct testutil_rec r;

	(void)state;
	for (int i = 0; i < 64; i++) {
		snprintf(namebuf[i], sizeof(namebuf[i]), "k%d", i);
		names[i] = namebuf[i];
	}
	assert_int_equal(spanctx_keys__parse(k, kb, testutil__key_table(kb, names, 64), 64), 64);
	testutil__rec_start(&r, TRACE, SPAN, 1);
	for (int i = 2; i < 2 + SPANCTX_MAX_LABELS + 5; i++)
		testutil__rec_str(&r, (uint8_t)i, "v");
	testutil__rec_end(&r);
	assert_int_equal(spanctx__decode(r.b, r.len, k, &l), 0);
	assert_int_equal(l.head.n_labels, SPANCTX_MAX_LABELS);
	assert_int_equal(l.head.skipped, 5);
	assert_string_equal(l.labels[SPANCTX_MAX_LABELS - 1].key, "k33");
	spanctx_keys__free(k);
}

static void test_spanctx_decode_ignores_past_max(void **state)
{
	struct spanctx_labels l;
	uint8_t buf[SP_CTX_MAX + 100];
	struct testutil_rec r;

	(void)state;
	/* A record claiming 700 bytes: only SP_CTX_MAX are read, the attribute crossing it is cut. */
	testutil__rec_start(&r, TRACE, SPAN, 1);
	memcpy(buf, r.b, SP_CTX_HEAD);
	memset(buf + SP_CTX_HEAD, 0, sizeof(buf) - SP_CTX_HEAD);
	for (size_t p = SP_CTX_HEAD; p + 2 + 98 <= sizeof(buf); p += 100) {
		buf[p] = SP_KEY_SPAN_NAME;
		buf[p + 1] = 98;
		memset(buf + p + 2, 'a' + (int)(p / 100), 98);
	}
	buf[26] = (sizeof(buf) - SP_CTX_HEAD) & 0xff;
	buf[27] = (uint8_t)((sizeof(buf) - SP_CTX_HEAD) >> 8);
	assert_int_equal(spanctx__decode(buf, sizeof(buf), NULL, &l), 0);
	assert_true(l.head.truncated);
	assert_int_equal(l.head.skipped, 1);
	/* Attributes start at 28, 128, ..., 528; the one at 628 crosses 640. */
	assert_int_equal(l.span_name[0], 'a' + 5);
}

static void test_spanctx_decode_garbage(void **state)
{
	struct spanctx_keys *k = std_keys();
	struct spanctx_labels *l = malloc(sizeof(*l));
	uint8_t buf[SP_CTX_MAX];
	uint32_t x = 12345;
	int decoded = 0;

	(void)state;
	assert_non_null(l);
	/* Random records of random lengths: no crash (ASan/UBSan builds check the bounds), every
	 * string terminated, counts within their caps. */
	for (int iter = 0; iter < 20000; iter++) {
		size_t len;

		for (size_t i = 0; i < sizeof(buf); i++) {
			x = x * 1103515245u + 12345u;
			buf[i] = (uint8_t)(x >> 16);
		}
		if (iter % 3 == 0)
			for (size_t i = SP_CTX_HEAD; i < sizeof(buf); i++)
				buf[i] %= 8;	/* small keys and lengths: long chains of attributes */
		buf[24] = (uint8_t)(iter & 1 ? 1 : buf[24]);
		len = (x >> 8) % (sizeof(buf) + 1);
		if (spanctx__decode(buf, len, k, l) == 0) {
			const char *root = l->head.local_root_span_id;

			decoded++;
			assert_true(l->head.n_labels <= SPANCTX_MAX_LABELS);
			assert_true(!l->head.span_name_len ||
				    l->span_name[l->head.span_name_len] == '\0');
			assert_int_equal(strlen(l->head.trace_id), 32);
			assert_true(strlen(root) == 0 || strlen(root) == 16);
			for (uint32_t i = 0; i < l->head.n_labels; i++) {
				assert_non_null(l->labels[i].key);
				assert_int_equal(l->labels[i].value[l->labels[i].len], '\0');
			}
		}
	}
	assert_true(decoded > 1000);
	free(l);
	spanctx_keys__free(k);
}

/* ---- a live table, read through /proc/<pid> ------------------------------------------------ */

/* Maps a table like the hook's (a memfd named spanprof-ctx, MAP_LEN bytes, header with the
 * given namespace pid, three key names) and returns it. */
static uint8_t *map_table(uint32_t ns_pid)
{
	static const char *const names[] = { "local_root_span_id", "span_name", "tenant" };
	struct sp_ctx_header h = good_header();
	uint8_t *m = testutil__memfd_map(SP_CTX_MEMFD_NAME, MAP_LEN, NULL);

	h.pid = ns_pid;
	testutil__key_table(m + h.keys_offset, names, 3);
	memcpy(m, &h, sizeof(h));
	return m;
}

static void test_spanctx_find_in_process(void **state)
{
	struct spanctx_table t;
	struct sp_ctx_proc proc;
	struct spanctx_keys *k = spanctx_keys__new();
	uint8_t *m = map_table((uint32_t)getpid());
	int dir_fd, child_fd;
	pid_t pid;

	(void)state;
	assert_non_null(k);
	dir_fd = procfs__open(getpid());
	assert_true(dir_fd >= 0);
	assert_int_equal(spanctx__find(dir_fd, &proc, &t), 0);
	assert_int_equal(t.map_start, (uintptr_t)m);
	assert_int_equal(t.map_end, (uintptr_t)m + MAP_LEN);
	assert_int_equal(t.ns_pid, getpid());
	assert_int_equal(proc.slots_addr, (uintptr_t)m + 20480);
	assert_int_equal(proc.slot_count, 4096);
	assert_int_equal(spanctx_keys__load(k, dir_fd, &t), 3);
	assert_string_equal(spanctx_keys__name(k, 2), "tenant");
	assert_int_equal(spanctx__open(dir_fd, getpid(), t.map_start, t.map_end, &proc, NULL), 0);
	/* header.pid must be the namespace pid given */
	assert_int_equal(spanctx__open(dir_fd, getpid() + 1, t.map_start, t.map_end, &proc, NULL),
			 -EBADMSG);

	/* A forked child inherits the mapping, not the table: header.pid is its parent's. */
	pid = testutil__fork_paused();
	child_fd = procfs__open(pid);
	assert_true(child_fd >= 0);
	assert_int_equal(spanctx__find(child_fd, &proc, &t), -EBADMSG);
	assert_int_equal(t.map_start, (uintptr_t)m);
	/* Once it is gone nothing is read through its directory, whoever gets the pid next. */
	assert_int_equal(testutil__reap(pid), pid);
	assert_true(spanctx__find(child_fd, &proc, &t) < 0);
	assert_true(spanctx__open(child_fd, pid, t.map_start, t.map_end, &proc, NULL) < 0);
	assert_true(spanctx_keys__load(k, child_fd, &t) < 0);
	close(child_fd);

	assert_int_equal(spanctx__find(-1, &proc, &t), -EINVAL);
	assert_int_equal(spanctx__open(-1, getpid(), t.map_start, t.map_end, &proc, NULL), -EINVAL);
	assert_true(spanctx_keys__load(k, -1, &t) < 0);
	/* A table the hook disabled reads as none. */
	((struct sp_ctx_header *)m)->flags = SPANCTX_F_DISABLED;
	assert_int_equal(spanctx__find(dir_fd, &proc, &t), -ENOENT);
	close(dir_fd);
	munmap(m, MAP_LEN);
	/* No table mapped any more. */
	dir_fd = procfs__open(getpid());
	assert_true(dir_fd >= 0);
	memset(&t, 0, sizeof(t));
	assert_int_equal(spanctx__find(dir_fd, &proc, &t), -ENOENT);
	assert_int_equal(t.map_start, 0);
	close(dir_fd);
	spanctx_keys__free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spanctx_maps_found),
		cmocka_unit_test(test_spanctx_maps_not_hooked),
		cmocka_unit_test(test_spanctx_maps_last_line_no_newline),
		cmocka_unit_test(test_spanctx_maps_without_deleted_suffix),
		cmocka_unit_test(test_spanctx_maps_two_tables),
		cmocka_unit_test(test_spanctx_maps_offset_not_zero),
		cmocka_unit_test(test_spanctx_maps_garbage),
		cmocka_unit_test(test_spanctx_header_good),
		cmocka_unit_test(test_spanctx_header_not_published),
		cmocka_unit_test(test_spanctx_header_bad_magic),
		cmocka_unit_test(test_spanctx_header_other_abi),
		cmocka_unit_test(test_spanctx_header_sizes),
		cmocka_unit_test(test_spanctx_header_slot_count),
		cmocka_unit_test(test_spanctx_header_slot_size),
		cmocka_unit_test(test_spanctx_header_slots_outside_mapping),
		cmocka_unit_test(test_spanctx_header_keys),
		cmocka_unit_test(test_spanctx_header_disabled),
		cmocka_unit_test(test_spanctx_header_short_input),
		cmocka_unit_test(test_spanctx_probe_sequence),
		cmocka_unit_test(test_spanctx_keys_parse),
		cmocka_unit_test(test_spanctx_keys_count_past_entries),
		cmocka_unit_test(test_spanctx_keys_overrun),
		cmocka_unit_test(test_spanctx_keys_too_many_and_nul),
		cmocka_unit_test(test_spanctx_keys_long_names),
		cmocka_unit_test(test_spanctx_decode_full),
		cmocka_unit_test(test_spanctx_decode_no_span),
		cmocka_unit_test(test_spanctx_decode_labels_without_span),
		cmocka_unit_test(test_spanctx_decode_mid_write),
		cmocka_unit_test(test_spanctx_decode_short),
		cmocka_unit_test(test_spanctx_decode_resets_head),
		cmocka_unit_test(test_spanctx_decode_attrs_size_past_len),
		cmocka_unit_test(test_spanctx_decode_attr_overrun),
		cmocka_unit_test(test_spanctx_decode_lone_byte),
		cmocka_unit_test(test_spanctx_decode_unknown_key),
		cmocka_unit_test(test_spanctx_decode_bad_root_id),
		cmocka_unit_test(test_spanctx_decode_long_values),
		cmocka_unit_test(test_spanctx_decode_duplicate_key),
		cmocka_unit_test(test_spanctx_decode_label_cap),
		cmocka_unit_test(test_spanctx_decode_ignores_past_max),
		cmocka_unit_test(test_spanctx_decode_garbage),
		cmocka_unit_test(test_spanctx_find_in_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
