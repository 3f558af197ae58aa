/* test_pyroscope.c: the Pyroscope PushRequest encoder and pprof__encode, decoded back with the
 * protobuf-c unpackers: labels, totals, splitting within Pyroscope's limits, pruned tables. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "profile.h"
#include "profile.pb-c.h"
#include "push/v1/push.pb-c.h"
#include "pyroscope.h"
#include "testutil.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Push__V1__PushRequest pb_push;

#define PERIOD 10101010ull

/* ---- helpers ------------------------------------------------------------------------------ */

static struct profile *new_profile(void)
{
	struct profile_opts o = { .period_ns = PERIOD, .time_ns = 1700000000000000000LL,
				  .duration_ns = 15000000000LL };
	struct profile *p = profile__new(&o);

	assert_non_null(p);
	return p;
}

/*
 * n distinct samples: stack main -> work<k> -> leaf<i % 7>, label "i" = the index (so every
 * sample is its own), span_id on even ones, count 1 + i % 3. blob: an extra label of that
 * many bytes, different per sample, to make the profile big.
 */
static uint64_t fill(struct profile *p, size_t n, size_t blob)
{
	uint32_t f_main = profile__function(p, "main", NULL, "main.c");
	uint32_t l_main = profile__location(p, 0, 0x1000, f_main);
	char ibuf[24], key[32], *bb = NULL;
	uint64_t total = 0;
	size_t i, j;

	assert_int_not_equal(l_main, 0);
	if (blob) {
		bb = malloc(blob + 1);
		assert_non_null(bb);
	}
	for (i = 0; i < n; i++) {
		struct pf_label l[3] = { { "i", ibuf, 0 }, { "span_id", "00000000000000ab", 0 },
					 { "blob", bb, 0 } };
		uint32_t locs[3];
		uint64_t count = 1 + i % 3;

		snprintf(key, sizeof(key), "[App] Work%zu::Run()", i % 50);
		locs[2] = l_main;
		locs[1] = profile__location(p, 0, 0x2000 + i % 50,
					    profile__function(p, key, NULL, NULL));
		snprintf(key, sizeof(key), "leaf%zu", i % 7);
		locs[0] = profile__location(p, 0, 0x3000 + i % 7,
					    profile__function(p, key, NULL, NULL));
		snprintf(ibuf, sizeof(ibuf), "%zu", i);
		if (bb) {
			uint64_t x = i * 0x9e3779b97f4a7c15ull + 1;

			for (j = 0; j < blob; j++) {	/* poorly compressible, distinct per sample */
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				bb[j] = "0123456789abcdefghijklmnopqrstuv"[x & 31];
			}
			bb[blob] = 0;
			l[1] = l[2];
		}
		assert_int_equal(profile__add(p, locs, 3, l, (i % 2 == 0 || bb) ? 2 : 1, count), 0);
		total += count;
	}
	free(bb);
	assert_int_equal(profile__sample_count(p), n);
	return total;
}

static pb_profile *decode_gz(const uint8_t *gz, size_t len, size_t *raw_len)
{
	size_t n;
	uint8_t *raw = testutil__gunzip(gz, len, &n);
	pb_profile *prof = perftools__profiles__profile__unpack(NULL, n, raw);

	assert_non_null(prof);
	free(raw);
	if (raw_len)
		*raw_len = n;
	return prof;
}

static const char *S(const pb_profile *prof, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < prof->n_string_table);
	return prof->string_table[i];
}

static const char *sample_label(const pb_profile *prof, const Perftools__Profiles__Sample *s,
				const char *key)
{
	size_t i;

	for (i = 0; i < s->n_label; i++) {
		if (!strcmp(S(prof, s->label[i]->key), key))
			return S(prof, s->label[i]->str);
	}
	return NULL;
}

/* Dense ids from 1, every reference resolvable, every string used in range, no duplicates. */
static void check_pruned(const pb_profile *prof)
{
	size_t i, j;

	assert_string_equal(prof->string_table[0], "");
	for (i = 0; i < prof->n_mapping; i++)
		assert_int_equal(prof->mapping[i]->id, i + 1);
	for (i = 0; i < prof->n_function; i++) {
		assert_int_equal(prof->function[i]->id, i + 1);
		S(prof, prof->function[i]->name);
	}
	for (i = 0; i < prof->n_location; i++) {
		const Perftools__Profiles__Location *l = prof->location[i];

		assert_int_equal(l->id, i + 1);
		assert_true(l->mapping_id <= prof->n_mapping);
		for (j = 0; j < l->n_line; j++)
			assert_true(l->line[j]->function_id >= 1 &&
				    l->line[j]->function_id <= prof->n_function);
	}
	for (i = 0; i < prof->n_sample; i++) {
		const Perftools__Profiles__Sample *s = prof->sample[i];

		assert_int_equal(s->n_value, 2);
		for (j = 0; j < s->n_location_id; j++)
			assert_true(s->location_id[j] >= 1 && s->location_id[j] <= prof->n_location);
		for (j = 0; j < s->n_label; j++) {
			S(prof, s->label[j]->key);
			S(prof, s->label[j]->str);
		}
	}
}

static const char *series_label(const Push__V1__RawProfileSeries *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n_labels; i++) {
		if (!strcmp(s->labels[i]->name, name))
			return s->labels[i]->value;
	}
	return NULL;
}

/* A well-formed version 4 UUID in lower-case hex. */
static void check_uuid(const char *id)
{
	size_t i;

	assert_non_null(id);
	assert_int_equal(strlen(id), 36);
	for (i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23)
			assert_int_equal(id[i], '-');
		else
			assert_non_null(strchr("0123456789abcdef", id[i]));
	}
	assert_int_equal(id[14], '4');
	assert_non_null(strchr("89ab", id[19]));
}

static int utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3 : (*p >> 3) == 30 ? 4 : 0;
		size_t i;

		if (!n)
			return 0;
		for (i = 1; i < n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return 0;
		}
		p += n;
	}
	return 1;
}

static pb_push *encode(const struct export_batch *b, struct pyroscope_encode_info *info)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	pb_push *req;

	assert_int_equal(pyroscope__encode(b, &buf, &len, info), 0);
	req = push__v1__push_request__unpack(NULL, len, buf);
	assert_non_null(req);
	free(buf);
	return req;
}

/*
 * Every sample of every RawSample of series s, by its "i" label: each of 0..n-1 exactly once,
 * with its count; each part within the limits. Returns the number of parts.
 */
static size_t check_parts(const Push__V1__RawProfileSeries *s, size_t n, uint64_t total)
{
	uint8_t *seen = calloc(n, 1);
	uint64_t sum = 0;
	size_t k, i, got = 0;

	assert_non_null(seen);
	for (k = 0; k < s->n_samples; k++) {
		size_t raw_len;
		pb_profile *prof = decode_gz(s->samples[k]->raw_profile.data,
					     s->samples[k]->raw_profile.len, &raw_len);

		check_uuid(s->samples[k]->id);
		assert_true(raw_len <= PYROSCOPE_MAX_PROFILE_BYTES);
		assert_true(prof->n_sample <= PYROSCOPE_MAX_SAMPLES);
		assert_true(prof->n_sample > 0);
		assert_int_equal(prof->period, PERIOD);
		check_pruned(prof);
		for (i = 0; i < prof->n_sample; i++) {
			const char *v = sample_label(prof, prof->sample[i], "i");
			unsigned long idx;

			assert_non_null(v);
			idx = strtoul(v, NULL, 10);
			assert_true(idx < n);
			assert_int_equal(seen[idx], 0);
			seen[idx] = 1;
			assert_int_equal(prof->sample[i]->value[0], 1 + idx % 3);
			assert_int_equal(prof->sample[i]->value[1], (1 + idx % 3) * PERIOD);
			sum += (uint64_t)prof->sample[i]->value[0];
			got++;
		}
		perftools__profiles__profile__free_unpacked(prof, NULL);
	}
	assert_int_equal(got, n);
	assert_int_equal(sum, total);
	free(seen);
	return s->n_samples;
}

/* ---- pprof__encode ------------------------------------------------------------------------- */

static void test_pyroscope_pprof_encode_range_prunes(void **state)
{
	struct profile *p = new_profile();
	uint8_t *gz, *raw, *plain;
	size_t gz_len, raw_len, plain_len, i;
	pb_profile *prof;

	(void)state;
	fill(p, 100, 0);
	/* samples 10..19: 10 samples, only their leaves and Work functions in the tables */
	assert_int_equal(pprof__encode(p, 10, 10, 1, &gz, &gz_len), 0);
	prof = decode_gz(gz, gz_len, NULL);
	check_pruned(prof);
	assert_int_equal(prof->n_sample, 10);
	assert_true(prof->n_location < profile__location_count(p));
	assert_int_equal(prof->n_location, 1 + 10 + 7);	/* main, Work10..19, leaf0..6 */
	assert_int_equal(prof->n_function, 1 + 10 + 7);
	assert_true(prof->n_string_table < profile__string_count(p));
	for (i = 0; i < prof->n_sample; i++) {
		struct pf_sample_view v;

		assert_int_equal(profile__sample(p, 10 + i, &v), 0);
		assert_string_equal(sample_label(prof, prof->sample[i], "i"), profile__label(&v, "i"));
		assert_int_equal(prof->sample[i]->value[0], v.count);
	}
	assert_int_equal(prof->n_sample_type, 2);
	assert_string_equal(S(prof, prof->sample_type[1]->type), "cpu");
	assert_int_equal(prof->time_nanos, 1700000000000000000LL);
	perftools__profiles__profile__free_unpacked(prof, NULL);

	/* gzip 0: the same message, uncompressed */
	assert_int_equal(pprof__encode(p, 10, 10, 0, &plain, &plain_len), 0);
	raw = testutil__gunzip(gz, gz_len, &raw_len);
	assert_int_equal(raw_len, plain_len);
	assert_memory_equal(raw, plain, raw_len);
	free(raw);
	free(plain);
	free(gz);

	/* the empty range and the whole profile; past the end is refused */
	assert_int_equal(pprof__encode(p, 100, 0, 1, &gz, &gz_len), 0);
	prof = decode_gz(gz, gz_len, NULL);
	assert_int_equal(prof->n_sample, 0);
	assert_int_equal(prof->n_location, 0);
	perftools__profiles__profile__free_unpacked(prof, NULL);
	free(gz);
	assert_int_equal(pprof__encode(p, 0, 100, 1, &gz, &gz_len), 0);
	prof = decode_gz(gz, gz_len, NULL);
	check_pruned(prof);
	assert_int_equal(prof->n_sample, 100);
	assert_int_equal(prof->n_location, profile__location_count(p));
	perftools__profiles__profile__free_unpacked(prof, NULL);
	free(gz);
	assert_int_equal(pprof__encode(p, 95, 6, 1, &gz, &gz_len), -EINVAL);
	assert_int_equal(pprof__encode(p, 101, 0, 1, &gz, &gz_len), -EINVAL);
	profile__free(p);
}

/* ---- the PushRequest ----------------------------------------------------------------------- */

static void test_pyroscope_encode_batch(void **state)
{
	struct profile *a = new_profile(), *b = new_profile();
	const struct pf_label la[] = { { "service_name", "checkout", 0 }, { "__name__", "process_cpu", 0 },
				       { "namespace", "shop", 0 }, { "k8s.pod-name", "checkout-7d9", 0 } };
	const struct pf_label lb[] = { { "__name__", "process_cpu", 0 }, { "service_name", "cart", 0 } };
	struct export_series s[2] = { { la, 4, a }, { lb, 2, b } };
	struct export_batch batch = { 1, 2, s, 2 };
	struct pyroscope_encode_info info;
	uint64_t ta = fill(a, 30, 0), tb = fill(b, 5, 0);
	const Push__V1__RawProfileSeries *sa, *sb;
	pb_push *req;
	pb_profile *prof;
	size_t i, with_span = 0;

	(void)state;
	req = encode(&batch, &info);
	assert_int_equal(req->n_series, 2);
	assert_int_equal(info.series, 2);
	assert_int_equal(info.raw_samples, 2);
	assert_int_equal(info.profiles_split, 0);
	assert_int_equal(info.samples, 35);
	assert_int_equal(info.labels_renamed, 1);
	assert_int_equal(info.labels_added, 0);
	sa = req->series[0];
	sb = req->series[1];
	/* identity labels first, the rest in their order, names cleaned */
	assert_int_equal(sa->n_labels, 4);
	assert_string_equal(sa->labels[0]->name, "__name__");
	assert_string_equal(sa->labels[0]->value, "process_cpu");
	assert_string_equal(sa->labels[1]->name, "service_name");
	assert_string_equal(sa->labels[1]->value, "checkout");
	assert_string_equal(sa->labels[2]->name, "namespace");
	assert_string_equal(sa->labels[3]->name, "k8s_pod_name");
	assert_string_equal(sa->labels[3]->value, "checkout-7d9");
	assert_string_equal(series_label(sb, "service_name"), "cart");

	assert_int_equal(sa->n_samples, 1);
	check_uuid(sa->samples[0]->id);
	check_uuid(sb->samples[0]->id);
	assert_string_not_equal(sa->samples[0]->id, sb->samples[0]->id);
	assert_int_equal(check_parts(sa, 30, ta), 1);
	assert_int_equal(check_parts(sb, 5, tb), 1);
	prof = decode_gz(sa->samples[0]->raw_profile.data, sa->samples[0]->raw_profile.len, NULL);
	for (i = 0; i < prof->n_sample; i++) {	/* per-sample labels stay in the pprof */
		const char *span = sample_label(prof, prof->sample[i], "span_id");

		if (span) {
			assert_string_equal(span, "00000000000000ab");
			with_span++;
		}
	}
	assert_int_equal(with_span, 15);
	perftools__profiles__profile__free_unpacked(prof, NULL);
	push__v1__push_request__free_unpacked(req, NULL);
	profile__free(a);
	profile__free(b);
}

/* A profile with off-CPU time: its CPU values in the series as given (samples without CPU left
 * out), its off-CPU time in a second series, the same labels but __name__ off_cpu, whose pprof
 * has one sample type, off_cpu/nanoseconds, no period (Pyroscope's off_cpu:off_cpu:nanoseconds::). */
static void test_pyroscope_encode_off_cpu(void **state)
{
	struct profile_opts o = { .period_ns = PERIOD, .off_cpu = 1, .duration_ns = 15000000000LL };
	struct profile *p = profile__new(&o);
	const struct pf_label l[] = { { "__name__", "process_cpu", 0 }, { "service_name", "shop", 0 },
				      { "pod", "shop-1", 0 } };
	const struct pf_label sl[] = { { "span_name", "GET /a", 0 } };
	struct export_series s = { l, 3, p };
	struct export_batch batch = { 1, 2, &s, 1 };
	struct pyroscope_encode_info info;
	const Push__V1__RawProfileSeries *cpu, *off;
	uint32_t f1, f2, loc[2];
	pb_profile *prof;
	pb_push *req;

	(void)state;
	assert_non_null(p);
	f1 = profile__function(p, "Monitor.Wait", NULL, NULL);
	f2 = profile__function(p, "Work", NULL, NULL);
	loc[0] = profile__location(p, 0, 0x10, f1);
	loc[1] = profile__location(p, 0, 0x20, f2);
	/* CPU only; off-CPU only (another stack); both on one stack and label set */
	assert_int_equal(profile__add_values(p, loc + 1, 1, NULL, 0, 3, 0), 0);
	assert_int_equal(profile__add_values(p, loc, 2, sl, 1, 0, 5000000), 0);
	assert_int_equal(profile__add_values(p, loc, 1, NULL, 0, 2, 7000000), 0);
	assert_int_equal(profile__sample_count(p), 3);
	req = encode(&batch, &info);
	assert_int_equal(req->n_series, 2);
	assert_int_equal(info.series, 2);
	assert_int_equal(info.samples, 4);	/* 2 with CPU, 2 with off-CPU time */
	assert_int_equal(info.labels_added, 0);
	cpu = req->series[0];
	off = req->series[1];
	assert_string_equal(series_label(cpu, "__name__"), "process_cpu");
	assert_string_equal(series_label(off, "__name__"), "off_cpu");
	assert_int_equal(off->n_labels, 3);
	assert_string_equal(off->labels[0]->name, "__name__");
	assert_string_equal(series_label(off, "service_name"), "shop");
	assert_string_equal(series_label(off, "pod"), "shop-1");

	prof = decode_gz(cpu->samples[0]->raw_profile.data, cpu->samples[0]->raw_profile.len, NULL);
	assert_int_equal(prof->n_sample_type, 2);
	assert_string_equal(S(prof, prof->sample_type[1]->type), "cpu");
	assert_int_equal(prof->n_sample, 2);
	check_pruned(prof);
	assert_int_equal(prof->sample[0]->value[0] + prof->sample[1]->value[0], 5);
	perftools__profiles__profile__free_unpacked(prof, NULL);

	prof = decode_gz(off->samples[0]->raw_profile.data, off->samples[0]->raw_profile.len, NULL);
	assert_int_equal(prof->n_sample_type, 1);
	assert_string_equal(S(prof, prof->sample_type[0]->type), "off_cpu");
	assert_string_equal(S(prof, prof->sample_type[0]->unit), "nanoseconds");
	assert_string_equal(S(prof, prof->default_sample_type), "off_cpu");
	assert_null(prof->period_type);
	assert_int_equal(prof->period, 0);
	assert_int_equal(prof->n_sample, 2);
	for (size_t i = 0; i < prof->n_sample; i++) {
		const Perftools__Profiles__Sample *sm = prof->sample[i];

		assert_int_equal(sm->n_value, 1);
		if (sm->n_location_id == 2) {
			assert_int_equal(sm->value[0], 5000000);
			assert_string_equal(sample_label(prof, sm, "span_name"), "GET /a");
		} else {
			assert_int_equal(sm->value[0], 7000000);
		}
	}
	assert_int_equal(prof->n_function, 2);	/* the CPU-only stack's Work is used too */
	perftools__profiles__profile__free_unpacked(prof, NULL);
	push__v1__push_request__free_unpacked(req, NULL);

	/* a window without blocks: the CPU series only */
	profile__free(p);
	p = profile__new(&o);
	s.prof = p;
	f2 = profile__function(p, "Work", NULL, NULL);
	loc[1] = profile__location(p, 0, 0x20, f2);
	assert_int_equal(profile__add_values(p, loc + 1, 1, NULL, 0, 3, 0), 0);
	req = encode(&batch, &info);
	assert_int_equal(req->n_series, 1);
	assert_int_equal(info.series_empty, 1);
	assert_string_equal(series_label(req->series[0], "__name__"), "process_cpu");
	push__v1__push_request__free_unpacked(req, NULL);
	profile__free(p);
}

static void test_pyroscope_encode_required_labels(void **state)
{
	struct profile *p = new_profile();
	const struct pf_label l[] = { { "pod", "x", 0 }, { "service_name", "", 0 } };
	struct export_series s = { l, 2, p };
	struct export_batch batch = { 0, 0, &s, 1 };
	struct pyroscope_encode_info info;
	pb_push *req;

	(void)state;
	fill(p, 3, 0);
	req = encode(&batch, &info);
	assert_int_equal(req->n_series, 1);
	assert_int_equal(req->series[0]->n_labels, 3);
	assert_string_equal(req->series[0]->labels[0]->name, "__name__");
	assert_string_equal(req->series[0]->labels[0]->value, "process_cpu");
	assert_string_equal(req->series[0]->labels[1]->name, "service_name");
	assert_string_equal(req->series[0]->labels[1]->value, "unknown");
	assert_string_equal(req->series[0]->labels[2]->name, "pod");
	assert_int_equal(info.labels_added, 2);
	assert_int_equal(info.labels_dropped, 1);	/* the empty service_name */
	push__v1__push_request__free_unpacked(req, NULL);

	/* no labels at all: still accepted */
	s.n_labels = 0;
	req = encode(&batch, &info);
	assert_int_equal(req->series[0]->n_labels, 2);
	assert_int_equal(info.labels_added, 2);
	push__v1__push_request__free_unpacked(req, NULL);
	profile__free(p);
}

static void test_pyroscope_encode_label_rules(void **state)
{
	struct profile *p = new_profile();
	struct pf_label l[48];
	char names[40][16], long_name[1500], long_value[3000];
	struct export_series s = { l, 0, p };
	struct export_batch batch = { 0, 0, &s, 1 };
	struct pyroscope_encode_info info;
	const Push__V1__RawProfileSeries *ser;
	pb_push *req;
	size_t i, n = 0;
	const char *v;

	(void)state;
	fill(p, 2, 0);
	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = 0;
	/* "x" then 'é' (2 bytes) repeated: byte 2048 falls inside a character */
	long_value[0] = 'x';
	for (i = 1; i + 2 < sizeof(long_value); i += 2)
		memcpy(long_value + i, "\xc3\xa9", 2);
	long_value[i] = 0;
	l[n++] = (struct pf_label){ "9lives", "digit first", 0 };
	l[n++] = (struct pf_label){ "a.b", "first", 0 };
	l[n++] = (struct pf_label){ "a-b", "dup after renaming", 0 };
	l[n++] = (struct pf_label){ long_name, "long name", 0 };
	l[n++] = (struct pf_label){ "long_value", long_value, 0 };
	l[n++] = (struct pf_label){ "bad_utf8", "ok\xff\xfe" "end\xc3", 0 };
	for (i = 0; i < 40; i++) {
		snprintf(names[i], sizeof(names[i]), "extra%zu", i);
		l[n++] = (struct pf_label){ names[i], "v", 0 };
	}
	l[n++] = (struct pf_label){ "service_name", "late", 0 };	/* identity labels given last */
	l[n++] = (struct pf_label){ "__name__", "process_cpu", 0 };
	s.n_labels = n;

	req = encode(&batch, &info);
	ser = req->series[0];
	assert_int_equal(ser->n_labels, PYROSCOPE_MAX_LABEL_NAMES);
	assert_string_equal(ser->labels[0]->name, "__name__");
	assert_string_equal(ser->labels[1]->name, "service_name");
	assert_string_equal(ser->labels[1]->value, "late");
	assert_string_equal(ser->labels[2]->name, "_lives");
	assert_string_equal(ser->labels[3]->name, "a_b");
	assert_string_equal(ser->labels[3]->value, "first");
	assert_int_equal(strlen(ser->labels[4]->name), PYROSCOPE_MAX_NAME_LEN);
	v = series_label(ser, "long_value");
	assert_non_null(v);
	assert_int_equal(strlen(v), PYROSCOPE_MAX_VALUE_LEN - 1);	/* cut before the 'é' */
	assert_true(utf8_valid(v));
	assert_string_equal(series_label(ser, "bad_utf8"), "ok??end?");
	for (i = 0; i < ser->n_labels; i++) {
		const char *nm = ser->labels[i]->name;
		size_t j;

		assert_true(utf8_valid(ser->labels[i]->value));
		assert_true(strlen(ser->labels[i]->value) <= PYROSCOPE_MAX_VALUE_LEN);
		assert_false(nm[0] >= '0' && nm[0] <= '9');
		for (j = 0; nm[j]; j++)
			assert_non_null(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					       "0123456789_", nm[j]));
		for (j = i + 1; j < ser->n_labels; j++)
			assert_string_not_equal(nm, ser->labels[j]->name);
	}
	/* 2 identity + 5 cleaned (the duplicate aside) + 40 extras = 47 names: 17 over the limit */
	assert_int_equal(info.labels_dropped, 1 + 17);
	assert_int_equal(info.labels_renamed, 3);
	assert_int_equal(info.labels_truncated, 2);
	assert_int_equal(info.labels_added, 0);
	assert_string_equal(ser->labels[29]->name, "extra22");
	push__v1__push_request__free_unpacked(req, NULL);
	profile__free(p);
}

static void test_pyroscope_encode_split_samples(void **state)
{
	struct profile *p = new_profile();
	const struct pf_label l[] = { { "service_name", "big", 0 } };
	struct export_series s = { l, 1, p };
	struct export_batch batch = { 0, 0, &s, 1 };
	struct pyroscope_encode_info info;
	uint64_t total = fill(p, 40000, 0);
	pb_push *req;

	(void)state;
	req = encode(&batch, &info);
	assert_int_equal(req->n_series, 1);
	assert_int_equal(check_parts(req->series[0], 40000, total), 3);	/* 16000 + 16000 + 8000 */
	assert_int_equal(info.profiles_split, 1);
	assert_int_equal(info.raw_samples, 3);
	assert_int_equal(info.samples, 40000);
	assert_string_not_equal(req->series[0]->samples[0]->id, req->series[0]->samples[1]->id);
	push__v1__push_request__free_unpacked(req, NULL);

	/* exactly at the limit: one part */
	profile__free(p);
	p = new_profile();
	s.prof = p;
	total = fill(p, PYROSCOPE_MAX_SAMPLES, 0);
	req = encode(&batch, &info);
	assert_int_equal(check_parts(req->series[0], PYROSCOPE_MAX_SAMPLES, total), 1);
	assert_int_equal(info.profiles_split, 0);
	push__v1__push_request__free_unpacked(req, NULL);
	profile__free(p);
}

static void test_pyroscope_encode_split_bytes(void **state)
{
	struct profile *p = new_profile();
	const struct pf_label l[] = { { "service_name", "fat", 0 } };
	struct export_series s = { l, 1, p };
	struct export_batch batch = { 0, 0, &s, 1 };
	struct pyroscope_encode_info info;
	uint64_t total = fill(p, 9000, 1000);	/* ~9 MB of label strings, under 16,000 samples */
	uint8_t *whole;
	size_t whole_len, parts;
	pb_profile *prof;
	pb_push *req;

	(void)state;
	assert_int_equal(pprof__encode(p, 0, 9000, 0, &whole, &whole_len), 0);
	assert_true(whole_len > 2 * PYROSCOPE_MAX_PROFILE_BYTES);
	free(whole);
	req = encode(&batch, &info);
	parts = check_parts(req->series[0], 9000, total);	/* each part checked under 4 MiB */
	assert_true(parts >= 3);
	assert_true(parts <= 5);	/* pruned tables: the parts are not mostly shared tables */
	assert_int_equal(info.profiles_split, 1);
	assert_int_equal(info.samples, 9000);
	assert_int_equal(info.samples_too_big, 0);
	prof = decode_gz(req->series[0]->samples[0]->raw_profile.data,
			 req->series[0]->samples[0]->raw_profile.len, NULL);
	assert_true(prof->n_string_table < profile__string_count(p) / 2);
	perftools__profiles__profile__free_unpacked(prof, NULL);
	push__v1__push_request__free_unpacked(req, NULL);
	profile__free(p);
}

static void test_pyroscope_encode_empty(void **state)
{
	struct profile *empty = new_profile(), *some = new_profile();
	const struct pf_label l[] = { { "service_name", "idle", 0 } };
	struct export_series s[2] = { { l, 1, empty }, { l, 1, some } };
	struct export_batch batch = { 0, 0, s, 1 };
	struct pyroscope_encode_info info;
	pb_push *req;
	uint8_t *buf;
	size_t len;

	(void)state;
	req = encode(&batch, &info);	/* a window without samples: nothing to send */
	assert_int_equal(req->n_series, 0);
	assert_int_equal(info.series, 0);
	assert_int_equal(info.series_empty, 1);
	push__v1__push_request__free_unpacked(req, NULL);

	fill(some, 4, 0);
	batch.n = 2;
	req = encode(&batch, &info);
	assert_int_equal(req->n_series, 1);
	assert_int_equal(info.series_empty, 1);
	push__v1__push_request__free_unpacked(req, NULL);

	batch.n = 0;
	batch.series = NULL;
	req = encode(&batch, &info);
	assert_int_equal(req->n_series, 0);
	push__v1__push_request__free_unpacked(req, NULL);

	assert_int_equal(pyroscope__encode(NULL, &buf, &len, NULL), -EINVAL);
	s[0].prof = NULL;
	batch.series = s;
	batch.n = 1;
	assert_int_equal(pyroscope__encode(&batch, &buf, &len, NULL), -EINVAL);
	profile__free(empty);
	profile__free(some);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pyroscope_pprof_encode_range_prunes),
		cmocka_unit_test(test_pyroscope_encode_batch),
		cmocka_unit_test(test_pyroscope_encode_off_cpu),
		cmocka_unit_test(test_pyroscope_encode_required_labels),
		cmocka_unit_test(test_pyroscope_encode_label_rules),
		cmocka_unit_test(test_pyroscope_encode_split_samples),
		cmocka_unit_test(test_pyroscope_encode_split_bytes),
		cmocka_unit_test(test_pyroscope_encode_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
