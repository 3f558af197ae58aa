/* test_pprof.c: pprof writer: gunzip + protobuf-c decode of what it wrote, table by table; then two outside readers. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "profile.h"
#include "profile.pb-c.h"
#include "testutil.h"

typedef Perftools__Profiles__Profile pb_profile;

#define PERIOD 10101010ull

struct fixture {
	char dir[64];
	char path[128];
	struct profile *p;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct profile_opts o = { .period_ns = PERIOD, .time_ns = 1700000000123456789LL,
				  .duration_ns = 30000000000LL };

	if (!fx)
		return -1;
	if (!testutil__mkdtemp(fx->dir, sizeof(fx->dir)))
		return -1;
	snprintf(fx->path, sizeof(fx->path), "%s/profile.pb.gz", fx->dir);
	fx->p = profile__new(&o);
	if (!fx->p)
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	profile__free(fx->p);
	testutil__rm_rf(fx->dir);
	free(fx);
	return 0;
}

static void write_file(struct fixture *fx)
{
	FILE *f = fopen(fx->path, "w");

	assert_non_null(f);
	assert_int_equal(pprof__write(fx->p, f), 0);
	assert_int_equal(fclose(f), 0);
}

/* gunzip (gzip framing only) and unpack with protobuf-c. */
static pb_profile *decode_file(const char *path)
{
	size_t len, out_len;
	unsigned char *gz = (unsigned char *)testutil__slurp(path, &len), *raw;
	pb_profile *prof;

	assert_non_null(gz);
	assert_true(len > 18);
	assert_int_equal(gz[0], 0x1f);	/* gzip magic and deflate method */
	assert_int_equal(gz[1], 0x8b);
	assert_int_equal(gz[2], 8);
	raw = testutil__gunzip(gz, len, &out_len);	/* and nothing after the gzip trailer */
	prof = perftools__profiles__profile__unpack(NULL, out_len, raw);
	assert_non_null(prof);
	free(raw);
	free(gz);
	return prof;
}

static const char *S(const pb_profile *prof, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < prof->n_string_table);
	return prof->string_table[i];
}

static const Perftools__Profiles__Location *loc_by_id(const pb_profile *prof, uint64_t id)
{
	size_t i;

	for (i = 0; i < prof->n_location; i++) {
		if (prof->location[i]->id == id)
			return prof->location[i];
	}
	fail_msg("no location %llu", (unsigned long long)id);
	return NULL;
}

static const Perftools__Profiles__Function *fn_by_id(const pb_profile *prof, uint64_t id)
{
	size_t i;

	for (i = 0; i < prof->n_function; i++) {
		if (prof->function[i]->id == id)
			return prof->function[i];
	}
	fail_msg("no function %llu", (unsigned long long)id);
	return NULL;
}

static const char *leaf_name(const pb_profile *prof, const Perftools__Profiles__Sample *s)
{
	const Perftools__Profiles__Location *l = loc_by_id(prof, s->location_id[0]);

	if (l->n_line == 0)
		return NULL;
	return S(prof, fn_by_id(prof, l->line[0]->function_id)->name);
}

static const char *label_str(const pb_profile *prof, const Perftools__Profiles__Sample *s,
			     const char *key)
{
	size_t i;

	for (i = 0; i < s->n_label; i++) {
		if (strcmp(S(prof, s->label[i]->key), key) == 0)
			return S(prof, s->label[i]->str);
	}
	return NULL;
}

/* Every id unique and nonzero, every reference resolvable, every string index in range. */
static void check_integrity(const pb_profile *prof)
{
	size_t i, j;

	assert_true(prof->n_string_table >= 1);
	assert_string_equal(prof->string_table[0], "");
	for (i = 1; i < prof->n_string_table; i++) {
		for (j = i + 1; j < prof->n_string_table && j < i + 64; j++)
			assert_string_not_equal(prof->string_table[i], prof->string_table[j]);
	}
	for (i = 0; i < prof->n_mapping; i++) {
		assert_int_equal(prof->mapping[i]->id, i + 1);
		S(prof, prof->mapping[i]->filename);
		S(prof, prof->mapping[i]->build_id);
	}
	for (i = 0; i < prof->n_function; i++) {
		assert_int_equal(prof->function[i]->id, i + 1);
		S(prof, prof->function[i]->name);
		S(prof, prof->function[i]->system_name);
		S(prof, prof->function[i]->filename);
	}
	for (i = 0; i < prof->n_location; i++) {
		const Perftools__Profiles__Location *l = prof->location[i];

		assert_int_equal(l->id, i + 1);
		assert_true(l->mapping_id <= prof->n_mapping);
		for (j = 0; j < l->n_line; j++)
			assert_true(l->line[j]->function_id >= 1 && l->line[j]->function_id <= prof->n_function);
	}
	for (i = 0; i < prof->n_sample; i++) {
		const Perftools__Profiles__Sample *s = prof->sample[i];

		assert_int_equal(s->n_value, prof->n_sample_type);
		for (j = 0; j < s->n_location_id; j++)
			assert_true(s->location_id[j] >= 1 && s->location_id[j] <= prof->n_location);
		for (j = 0; j < s->n_label; j++) {
			S(prof, s->label[j]->key);
			S(prof, s->label[j]->str);
			assert_int_equal(s->label[j]->num, 0);
		}
	}
}

static void test_pprof_roundtrip_tables(void **state)
{
	struct fixture *fx = *state;
	struct profile *p = fx->p;
	struct pf_mapping app = { .start = 0x400000, .limit = 0x480000, .offset = 0x1000,
				  .filename = "/app/App", .build_id = "0123456789abcdef", .has_functions = 0 };
	struct pf_mapping jit = { .start = 0x7f1000000000, .limit = 0x7f1000100000,
				  .filename = "[jit]", .has_functions = 1, .is_jit = 1 };
	uint32_t m_app = profile__mapping(p, &app), m_jit = profile__mapping(p, &jit);
	uint32_t f_main = profile__function(p, "main", NULL, "main.c");
	uint32_t f_run = profile__function(p, "void [App] App.Worker::Run(int32)[Optimized]", "Run", NULL);
	uint32_t l_main = profile__location(p, m_app, 0x401234, f_main);
	uint32_t l_run = profile__location(p, m_jit, 0x7f1000000100, f_run);
	uint32_t l_raw = profile__location(p, m_app, 0x402000, 0);
	uint32_t s1[] = { l_run, l_main }, s2[] = { l_raw, l_main };
	struct pf_label lab[] = { { "span_name", "GET /orders", 0 }, { "trace_id", "4bf92f3577b34da6a3ce929d0e0e4736", 0 } };
	struct pf_label lab_rev[] = { lab[1], lab[0] };
	const Perftools__Profiles__Location *l;
	const Perftools__Profiles__Mapping *m;
	const Perftools__Profiles__Function *f;
	const Perftools__Profiles__Sample *s;
	pb_profile *prof;

	assert_int_equal(profile__add(p, s1, 2, lab, 2, 3), 0);
	assert_int_equal(profile__add(p, s1, 2, lab_rev, 2, 4), 0);	/* merges */
	assert_int_equal(profile__add(p, s2, 2, NULL, 0, 5), 0);
	write_file(fx);
	prof = decode_file(fx->path);
	check_integrity(prof);

	/* header */
	assert_int_equal(prof->n_sample_type, 2);
	assert_string_equal(S(prof, prof->sample_type[0]->type), "samples");
	assert_string_equal(S(prof, prof->sample_type[0]->unit), "count");
	assert_string_equal(S(prof, prof->sample_type[1]->type), "cpu");
	assert_string_equal(S(prof, prof->sample_type[1]->unit), "nanoseconds");
	assert_non_null(prof->period_type);
	assert_string_equal(S(prof, prof->period_type->type), "cpu");
	assert_string_equal(S(prof, prof->period_type->unit), "nanoseconds");
	assert_int_equal(prof->period, PERIOD);
	assert_int_equal(prof->time_nanos, 1700000000123456789LL);
	assert_int_equal(prof->duration_nanos, 30000000000LL);
	assert_string_equal(S(prof, prof->default_sample_type), "cpu");
	assert_int_equal(prof->n_comment, 1);
	assert_memory_equal(S(prof, prof->comment[0]), "spanprof ", 9);

	/* mappings */
	assert_int_equal(prof->n_mapping, 2);
	m = prof->mapping[m_app - 1];
	assert_int_equal(m->id, m_app);
	assert_int_equal(m->memory_start, 0x400000);
	assert_int_equal(m->memory_limit, 0x480000);
	assert_int_equal(m->file_offset, 0x1000);
	assert_string_equal(S(prof, m->filename), "/app/App");
	assert_string_equal(S(prof, m->build_id), "0123456789abcdef");
	assert_false(m->has_functions);
	m = prof->mapping[m_jit - 1];
	assert_string_equal(S(prof, m->filename), "[jit]");
	assert_int_equal(m->build_id, 0);
	assert_true(m->has_functions);

	/* functions */
	assert_int_equal(prof->n_function, 2);
	f = fn_by_id(prof, f_main);
	assert_string_equal(S(prof, f->name), "main");
	assert_int_equal(f->system_name, 0);
	assert_string_equal(S(prof, f->filename), "main.c");
	f = fn_by_id(prof, f_run);
	assert_string_equal(S(prof, f->name), "void [App] App.Worker::Run(int32)[Optimized]");
	assert_string_equal(S(prof, f->system_name), "Run");

	/* locations */
	assert_int_equal(prof->n_location, 3);
	l = loc_by_id(prof, l_run);
	assert_int_equal(l->mapping_id, m_jit);
	assert_int_equal(l->address, 0x7f1000000100);
	assert_int_equal(l->n_line, 1);
	assert_int_equal(l->line[0]->function_id, f_run);
	l = loc_by_id(prof, l_raw);
	assert_int_equal(l->mapping_id, m_app);
	assert_int_equal(l->address, 0x402000);
	assert_int_equal(l->n_line, 0);

	/* samples: merged, leaf first, values [count, count * period], string labels */
	assert_int_equal(prof->n_sample, 2);
	s = prof->sample[0];
	assert_int_equal(s->n_location_id, 2);
	assert_int_equal(s->location_id[0], l_run);
	assert_int_equal(s->location_id[1], l_main);
	assert_int_equal(s->n_value, 2);
	assert_int_equal(s->value[0], 7);
	assert_int_equal(s->value[1], 7 * PERIOD);
	assert_int_equal(s->n_label, 2);
	assert_string_equal(label_str(prof, s, "span_name"), "GET /orders");
	assert_string_equal(label_str(prof, s, "trace_id"), "4bf92f3577b34da6a3ce929d0e0e4736");
	assert_string_equal(leaf_name(prof, s), "void [App] App.Worker::Run(int32)[Optimized]");
	s = prof->sample[1];
	assert_int_equal(s->value[0], 5);
	assert_int_equal(s->value[1], 5 * PERIOD);
	assert_int_equal(s->n_label, 0);
	assert_null(leaf_name(prof, s));

	perftools__profiles__profile__free_unpacked(prof, NULL);
}

static void test_pprof_empty_profile(void **state)
{
	struct fixture *fx = *state;
	pb_profile *prof;

	write_file(fx);
	prof = decode_file(fx->path);
	check_integrity(prof);
	assert_int_equal(prof->n_sample, 0);
	assert_int_equal(prof->n_location, 0);
	assert_int_equal(prof->n_sample_type, 2);
	assert_int_equal(prof->period, PERIOD);
	perftools__profiles__profile__free_unpacked(prof, NULL);
}

/* A recording's service (profile__set_service): a service_name label on every sample, one Label
 * message shared by all; a sample that has its own service_name keeps it. */
static void test_pprof_service_label(void **state)
{
	struct fixture *fx = *state;
	struct pf_label own = { "service_name", "other", 0 };
	struct pf_label span = { "span_name", "GET /a", 0 };
	uint32_t loc;
	pb_profile *prof;

	loc = profile__location(fx->p, 0, 0x1000, profile__function(fx->p, "Run", NULL, NULL));
	assert_int_equal(profile__add(fx->p, &loc, 1, &span, 1, 3), 0);
	assert_int_equal(profile__add(fx->p, &loc, 1, NULL, 0, 2), 0);
	assert_int_equal(profile__add(fx->p, &loc, 1, &own, 1, 1), 0);
	assert_null(profile__service(fx->p));
	assert_int_equal(profile__set_service(fx->p, "svc-a"), 0);
	assert_string_equal(profile__service(fx->p), "svc-a");
	write_file(fx);
	prof = decode_file(fx->path);
	check_integrity(prof);
	assert_int_equal(prof->n_sample, 3);
	for (size_t i = 0; i < prof->n_sample; i++) {
		const Perftools__Profiles__Sample *smp = prof->sample[i];
		const char *svc = NULL;
		int n = 0;

		for (size_t j = 0; j < smp->n_label; j++)
			if (!strcmp(S(prof, smp->label[j]->key), "service_name")) {
				svc = S(prof, smp->label[j]->str);
				n++;
			}
		assert_int_equal(n, 1);
		assert_string_equal(svc, smp->value[0] == 1 ? "other" : "svc-a");
	}
	perftools__profiles__profile__free_unpacked(prof, NULL);
	/* none again */
	assert_int_equal(profile__set_service(fx->p, NULL), 0);
	assert_null(profile__service(fx->p));
}

/* With off-CPU time: a third sample type off_cpu/nanoseconds, each sample's off-CPU ns in it. */
static void test_pprof_off_cpu_sample_type(void **state)
{
	struct fixture *fx = *state;
	struct profile_opts o = { .period_ns = PERIOD, .off_cpu = 1 };
	struct pf_label l = { "span_name", "GET /a", 0 };
	uint32_t loc;
	pb_profile *prof;
	size_t i;
	int seen_cpu = 0, seen_off = 0;

	profile__free(fx->p);
	fx->p = profile__new(&o);
	assert_non_null(fx->p);
	loc = profile__location(fx->p, 0, 0x1000, profile__function(fx->p, "Wait", NULL, NULL));
	assert_int_equal(profile__add(fx->p, &loc, 1, &l, 1, 3), 0);
	assert_int_equal(profile__add_values(fx->p, &loc, 1, &l, 1, 0, 25000000), 0);	/* same key */
	assert_int_equal(profile__add_values(fx->p, &loc, 1, NULL, 0, 0, 7000000), 0);
	assert_int_equal(profile__add_values(fx->p, &loc, 1, NULL, 0, 0, 0), 0);	/* nothing */
	assert_int_equal(profile__sample_count(fx->p), 2);
	assert_int_equal(profile__total(fx->p), 3);
	assert_int_equal(profile__total_off_ns(fx->p), 32000000);
	write_file(fx);
	prof = decode_file(fx->path);
	check_integrity(prof);
	assert_int_equal(prof->n_sample_type, 3);
	assert_string_equal(S(prof, prof->sample_type[2]->type), "off_cpu");
	assert_string_equal(S(prof, prof->sample_type[2]->unit), "nanoseconds");
	assert_string_equal(S(prof, prof->sample_type[1]->type), "cpu");
	for (i = 0; i < prof->n_sample; i++) {
		const Perftools__Profiles__Sample *ps = prof->sample[i];

		assert_int_equal(ps->n_value, 3);
		if (ps->n_label) {	/* the span's: 3 CPU samples and 25 ms off the CPU */
			assert_int_equal(ps->value[0], 3);
			assert_int_equal(ps->value[1], 3 * PERIOD);
			assert_int_equal(ps->value[2], 25000000);
			seen_cpu = 1;
		} else {
			assert_int_equal(ps->value[0], 0);
			assert_int_equal(ps->value[2], 7000000);
			seen_off = 1;
		}
	}
	assert_true(seen_cpu && seen_off);
	perftools__profiles__profile__free_unpacked(prof, NULL);
}

/* A profile the size of a busy interval: every table must survive the trip intact. */
static void build_big(struct profile *p, size_t n_samples, size_t depth)
{
	char name[96], span[40];
	uint32_t locs[256], seed = 7, fn;
	struct pf_mapping m = { .start = 0x10000, .limit = 0x20000000, .filename = "/usr/lib/libbig.so",
				.build_id = "feedface" };
	uint32_t mid = profile__mapping(p, &m);
	size_t i, j;

	assert_true(depth <= 256);
	for (i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "instance void [Big] Big.Type%zu::Method%zu(string)", i % 37, i);
		fn = profile__function(p, name, NULL, NULL);
		assert_int_equal(profile__location(p, mid, 0x10000 + 64 * i, i % 50 ? fn : 0), i + 1);
	}
	for (i = 0; i < n_samples; i++) {
		struct pf_label l[2] = { { "span_id", span, 0 }, { "span_name", i % 3 ? "GET /a" : "POST /b", 0 } };

		/* A new stack every 4th sample: the others share one with different labels. */
		for (j = 0; j < depth && i % 4 == 0; j++) {
			seed = seed * 1664525 + 1013904223;
			locs[j] = 1 + (seed >> 9) % 500;
		}
		snprintf(span, sizeof(span), "%016zx", i % 97);
		assert_int_equal(profile__add(p, locs, depth, l, 2, 1 + i % 5), 0);
	}
}

static void test_pprof_big_profile_integrity(void **state)
{
	struct fixture *fx = *state;
	pb_profile *prof;
	uint64_t sum0 = 0, sum1 = 0;
	size_t i;

	build_big(fx->p, 3000, 64);
	write_file(fx);
	prof = decode_file(fx->path);
	check_integrity(prof);
	assert_int_equal(prof->n_sample, profile__sample_count(fx->p));
	assert_int_equal(prof->n_location, 500);
	for (i = 0; i < prof->n_sample; i++) {
		struct pf_sample_view v;
		size_t j;

		assert_int_equal(profile__sample(fx->p, i, &v), 0);
		assert_int_equal(prof->sample[i]->n_location_id, v.n_locs);
		for (j = 0; j < v.n_locs; j++)
			assert_int_equal(prof->sample[i]->location_id[j], v.locs[j]);
		assert_int_equal(prof->sample[i]->n_label, v.n_labels);
		for (j = 0; j < v.n_labels; j++)
			assert_string_equal(label_str(prof, prof->sample[i], v.labels[j].key), v.labels[j].value);
		sum0 += prof->sample[i]->value[0];
		sum1 += prof->sample[i]->value[1];
	}
	assert_int_equal(sum0, profile__total(fx->p));
	assert_int_equal(sum1, profile__total(fx->p) * PERIOD);
	perftools__profiles__profile__free_unpacked(prof, NULL);
}

static void test_pprof_write_error_reported(void **state)
{
	struct fixture *fx = *state;
	FILE *f = fopen("/dev/full", "w");
	int err;

	if (!f)
		skip();
	build_big(fx->p, 200, 32);
	err = pprof__write(fx->p, f);
	fclose(f);
	assert_int_equal(err, -ENOSPC);
	assert_int_equal(pprof__write(NULL, stdout), -EINVAL);
	assert_int_equal(pprof__write(fx->p, NULL), -EINVAL);
}

/* Runs tests/tools/check-pprof.sh: go tool pprof and pprof-format must both read the file. */
static int run_check(const char *path, uint64_t expected)
{
	char tool[PATH_MAX];
	int rc;

	if (testutil__src_path(tool, sizeof(tool), "tests/tools/check-pprof.sh") ||
	    access(tool, X_OK) != 0)
		fail_msg("tests/tools/check-pprof.sh not found (set SPANPROF_SRCDIR)");
	rc = testutil__run("'%s' '%s' %llu", tool, path, (unsigned long long)expected);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void test_pprof_external_readers_agree(void **state)
{
	struct fixture *fx = *state;
	struct pf_mapping libc = { .start = 0x7f0000000000, .limit = 0x7f0000200000,
				   .filename = "/lib/x86_64-linux-gnu/libc.so.6" };
	uint32_t mid, raw1, raw2, anon, stack[3];

	build_big(fx->p, 400, 256);	/* the deepest stacks the sampler sends */
	mid = profile__mapping(fx->p, &libc);
	raw1 = profile__location(fx->p, mid, 0x7f0000001000, 0);
	raw2 = profile__location(fx->p, mid, 0x7f0000002000, 0);
	anon = profile__location(fx->p, 0, 0x1234, 0);
	stack[1] = 1;
	stack[2] = 2;
	stack[0] = raw1;
	assert_int_equal(profile__add(fx->p, stack, 3, NULL, 0, 11), 0);
	stack[0] = raw2;
	assert_int_equal(profile__add(fx->p, stack, 3, NULL, 0, 13), 0);
	stack[0] = anon;
	assert_int_equal(profile__add(fx->p, stack, 3, NULL, 0, 17), 0);
	write_file(fx);
	assert_int_equal(run_check(fx->path, profile__total(fx->p)), 0);
	/* and the check can fail: a wrong expectation must be caught */
	assert_int_equal(run_check(fx->path, profile__total(fx->p) + 1), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pprof_roundtrip_tables, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pprof_empty_profile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pprof_big_profile_integrity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pprof_off_cpu_sample_type, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pprof_write_error_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pprof_external_readers_agree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pprof_service_label, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
