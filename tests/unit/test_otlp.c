/* test_otlp.c: the OTLP profiles encoder decoded back with the protobuf-c unpackers (dictionary,
 * totals, stacks, links, attributes, frame types, resources), the settings resolved from flags
 * and a fake environment, the file writer and the exporter against a local HTTP server (gRPC's wire
 * format: test_otlpgrpc.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>
#include <microhttpd.h>
#include <cmocka.h>

#include "otlp.h"
#include "testutil.h"
#include "profile.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	pb_request;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary pb_dict;
typedef Opentelemetry__Proto__Profiles__V1development__Profile pb_profile;
typedef Opentelemetry__Proto__Profiles__V1development__Sample pb_sample;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit pb_kvu;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_kv;
typedef Opentelemetry__Proto__Resource__V1__Resource pb_resource;

#define REQ_UNPACK	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack
#define REQ_FREE	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked
#define ANY_STRING	OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE
#define ANY_INT		OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE
#define PERIOD		10101010ull
#define T0		1700000000000000000LL
#define TRACE		"0af7651916cd43dd8448eb211c80319c"
#define SPAN		"b7ad6b7169203331"
#define ROOT		"00f067aa0ba902b7"

/* ---- decoding ------------------------------------------------------------------------------- */

/* A gzip body (its magic checked) inflated. */
static uint8_t *gunzip(const uint8_t *gz, size_t len, size_t *out_len)
{
	assert_true(len > 18);
	assert_int_equal(gz[0], 0x1f);
	assert_int_equal(gz[1], 0x8b);
	return testutil__gunzip(gz, len, out_len);
}

static pb_request *decode(const uint8_t *buf, size_t len)
{
	pb_request *r = REQ_UNPACK(NULL, len, buf);

	assert_non_null(r);
	assert_non_null(r->dictionary);
	return r;
}

static void request_free(pb_request *r)
{
	REQ_FREE(r, NULL);
}

static const char *S(const pb_dict *d, int32_t i)
{
	assert_true(i >= 0 && (size_t)i < d->n_string_table);
	return d->string_table[i];
}

/* Every table's zero entry is the zero value, and every index points into its table. */
static void check_dictionary(const pb_request *r)
{
	const pb_dict *d = r->dictionary;
	size_t i, j;

	assert_true(d->n_string_table >= 1 && !strcmp(d->string_table[0], ""));
	assert_true(d->n_mapping_table >= 1 && d->n_location_table >= 1 &&
		    d->n_function_table >= 1 && d->n_link_table >= 1 &&
		    d->n_attribute_table >= 1 && d->n_stack_table >= 1);
	assert_int_equal(d->mapping_table[0]->memory_limit, 0);
	assert_int_equal(d->mapping_table[0]->filename_strindex, 0);
	assert_int_equal(d->location_table[0]->n_lines, 0);
	assert_int_equal(d->location_table[0]->address, 0);
	assert_int_equal(d->function_table[0]->name_strindex, 0);
	assert_int_equal(d->link_table[0]->trace_id.len + d->link_table[0]->span_id.len, 0);
	assert_int_equal(d->attribute_table[0]->key_strindex, 0);
	assert_null(d->attribute_table[0]->value);
	assert_int_equal(d->stack_table[0]->n_location_indices, 0);
	for (i = 1; i < d->n_location_table; i++) {
		assert_true((size_t)d->location_table[i]->mapping_index < d->n_mapping_table);
		for (j = 0; j < d->location_table[i]->n_lines; j++)
			assert_true((size_t)d->location_table[i]->lines[j]->function_index <
				    d->n_function_table);
	}
	for (i = 1; i < d->n_stack_table; i++)
		for (j = 0; j < d->stack_table[i]->n_location_indices; j++)
			assert_true(d->stack_table[i]->location_indices[j] > 0 &&
				    (size_t)d->stack_table[i]->location_indices[j] <
					    d->n_location_table);
	for (i = 1; i < d->n_attribute_table; i++) {
		assert_true(d->attribute_table[i]->key_strindex > 0);
		assert_non_null(d->attribute_table[i]->value);
		S(d, d->attribute_table[i]->key_strindex);
	}
}

/* The stack root first, "a;b;c", frames named by function (or 0x<address>). */
static void folded(const pb_dict *d, int32_t stack, char *out, size_t len)
{
	const Opentelemetry__Proto__Profiles__V1development__Stack *s;
	size_t at = 0;

	assert_true(stack >= 0 && (size_t)stack < d->n_stack_table);
	s = d->stack_table[stack];
	out[0] = 0;
	for (size_t i = s->n_location_indices; i-- > 0;) {
		const Opentelemetry__Proto__Profiles__V1development__Location *l =
			d->location_table[s->location_indices[i]];

		if (l->n_lines)
			at += snprintf(out + at, len - at, "%s%s", at ? ";" : "",
				       S(d, d->function_table[l->lines[0]->function_index]->name_strindex));
		else
			at += snprintf(out + at, len - at, "%s0x%llx", at ? ";" : "",
				       (unsigned long long)l->address);
		assert_true(at < len);
	}
}

/* The value of attribute key among a sample's (or location's) attribute indices; NULL if absent.
 * *ival set for an int attribute (then the string is "<int>"). */
static const char *attr(const pb_dict *d, const int32_t *idx, size_t n, const char *key,
			int64_t *ival)
{
	for (size_t i = 0; i < n; i++) {
		const pb_kvu *a;

		assert_true(idx[i] > 0 && (size_t)idx[i] < d->n_attribute_table);
		a = d->attribute_table[idx[i]];
		if (strcmp(S(d, a->key_strindex), key))
			continue;
		if (a->value->value_case == ANY_INT) {
			if (ival)
				*ival = a->value->int_value;
			return "<int>";
		}
		assert_int_equal(a->value->value_case, ANY_STRING);
		return a->value->string_value;
	}
	return NULL;
}

static const char *resource_attr(const pb_resource *r, const char *key)
{
	for (size_t i = 0; i < r->n_attributes; i++)
		if (!strcmp(r->attributes[i]->key, key))
			return r->attributes[i]->value->string_value;
	return NULL;
}

static const char *frame_type_of(const pb_dict *d, int32_t loc)
{
	const Opentelemetry__Proto__Profiles__V1development__Location *l = d->location_table[loc];

	return attr(d, l->attribute_indices, l->n_attribute_indices, "profile.frame.type", NULL);
}

static int parse_hex_for_test(const char *s, uint8_t *out, size_t n)
{
	unsigned v;

	if (strlen(s) != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return 0;
}

/* ---- a profile with every kind of frame ------------------------------------------------------ */

struct fixture {
	struct profile *p;
	uint64_t total;
};

/*
 * Stacks (root first):
 *   A: main (libc, build id) -> [App] App.Handler::Run() (JIT) -> [System.Private.CoreLib]
 *      System.String::Concat() (ReadyToRun, in a .dll) -> do_syscall_64 (kernel), in a span
 *   B: main -> 0x7f0000002000 (libc, unsymbolized), outside any span
 *   C: main -> [App] App.Handler::Run(), in a span in Pyroscope's convention (span_id only)
 */
static void build_fixture(struct fixture *fx, int64_t time_ns)
{
	struct profile_opts o = { .period_ns = PERIOD, .time_ns = time_ns,
				  .duration_ns = 15000000000LL };
	struct pf_mapping libc = { .start = 0x7f0000000000, .limit = 0x7f0000100000,
				   .offset = 0x1000, .filename = "/usr/lib/libc.so.6",
				   .build_id = "abcdef0123", .has_functions = 1 };
	struct pf_mapping jit = { .start = 0x7e0000000000, .limit = 0x7e0000100000,
				  .filename = "[jit]", .has_functions = 1, .is_jit = 1 };
	struct pf_mapping r2r = { .start = 0x7d0000000000, .limit = 0x7d0000100000,
				  .filename = "/usr/share/dotnet/System.Private.CoreLib.dll",
				  .has_functions = 1 };
	struct pf_mapping kern = { .start = 0xffff800000000000ull, .limit = UINT64_MAX,
				   .filename = "[kernel.kallsyms]", .has_functions = 1 };
	uint32_t m_libc, m_jit, m_r2r, m_kern, l_main, l_run, l_concat, l_sys, l_raw;
	struct profile *p = profile__new(&o);

	assert_non_null(p);
	m_libc = profile__mapping(p, &libc);
	m_jit = profile__mapping(p, &jit);
	m_r2r = profile__mapping(p, &r2r);
	m_kern = profile__mapping(p, &kern);
	l_main = profile__location(p, m_libc, 0x7f0000001234,
				   profile__function(p, "main", NULL, NULL));
	l_run = profile__location(p, m_jit, 0x7e0000000100,
				  profile__function(p, "[App] App.Handler::Run()",
						    "[App] App.Handler::Run()[Optimized]", NULL));
	l_concat = profile__location(p, m_r2r, 0x7d0000000200,
				     profile__function(p, "[System.Private.CoreLib] System.String::Concat()",
						       NULL, NULL));
	l_sys = profile__location(p, m_kern, 0xffffffff81000010ull,
				  profile__function(p, "do_syscall_64", NULL, NULL));
	l_raw = profile__location(p, m_libc, 0x7f0000002000, 0);
	assert_true(l_main && l_run && l_concat && l_sys && l_raw);
	{
		uint32_t a[] = { l_sys, l_concat, l_run, l_main };	/* leaf first */
		uint32_t b[] = { l_raw, l_main };
		uint32_t c[] = { l_run, l_main };
		struct pf_label la[] = { { "trace_id", TRACE, 0 }, { "span_id", SPAN, 0 },
					 { "local_root_span_id", ROOT, 0 }, { "span_name", "GET /a", 0 },
					 { "pid", "4242", 0 }, { "tid", "4243", 0 },
					 { "thread_name", ".NET TP Worker", 0 },
					 { "process_name", "SpanService", 0 }, { "tenant", "acme", 0 },
					 { "thread.name", "a user label named like ours", 0 } };
		struct pf_label lb[] = { { "pid", "4242", 0 }, { "tid", "4250", 0 },
					 { "thread_name", "main", 0 }, { "process_name", "SpanService", 0 } };
		struct pf_label lc[] = { { "span_id", ROOT, 0 }, { "span_name", "GET /b", 0 },
					 { "pid", "4242", 0 }, { "tid", "4244", 0 },
					 { "thread_name", ".NET TP Worker", 0 },
					 { "process_name", "SpanService", 0 } };

		assert_int_equal(profile__add(p, a, 4, la, 10, 5), 0);
		assert_int_equal(profile__add(p, b, 2, lb, 4, 3), 0);
		assert_int_equal(profile__add(p, c, 2, lc, 6, 2), 0);
	}
	fx->p = p;
	fx->total = 10;
}

static const pb_sample *find_sample(const pb_dict *d, const pb_profile *pr, const char *stack)
{
	char buf[1024];

	for (size_t i = 0; i < pr->n_samples; i++) {
		folded(d, pr->samples[i]->stack_index, buf, sizeof(buf));
		if (!strcmp(buf, stack))
			return pr->samples[i];
	}
	fail_msg("no sample with stack %s", stack);
	return NULL;
}

static const char STACK_A[] = "main;[App] App.Handler::Run();"
			      "[System.Private.CoreLib] System.String::Concat();do_syscall_64";
static const char STACK_B[] = "main;0x7f0000002000";
static const char STACK_C[] = "main;[App] App.Handler::Run()";

/* ---- encoding -------------------------------------------------------------------------------- */

static void test_otlp_encode_roundtrip(void **state)
{
	struct fixture fx;
	struct pf_label series[] = { { "__name__", "process_cpu", 0 }, { "service_name", "checkout", 0 },
				     { "namespace", "shop", 0 }, { "pod", "checkout-7d9f8", 0 },
				     { "container", "api", 0 }, { "node", "node-1", 0 } };
	struct export_series es;
	struct export_batch b = { T0, T0 + 15000000000LL, &es, 1 };
	struct otlp_encode_info info;
	const pb_dict *d;
	const pb_profile *pr;
	const pb_resource *res;
	const pb_sample *sa, *sb, *sc;
	const Opentelemetry__Proto__Profiles__V1development__Link *ln;
	const Opentelemetry__Proto__Profiles__V1development__Stack *st;
	pb_request *r;
	uint8_t *buf, trace[16], span[8];
	size_t len, i;
	int64_t iv = 0;
	uint64_t total = 0;
	int nonzero = 0;

	build_fixture(&fx, 0);	/* no times of its own: the batch's are used */
	es = (struct export_series){ series, 6, fx.p };
	assert_int_equal(otlp__encode(&b, 0, &buf, &len, &info), 0);
	assert_int_equal(info.resources, 1);
	assert_int_equal(info.samples, 3);
	assert_int_equal(info.total, fx.total);
	assert_int_equal(info.linked, 2);
	assert_int_equal(info.raw_bytes, len);
	r = decode(buf, len);
	check_dictionary(r);
	d = r->dictionary;
	assert_int_equal(info.strings, d->n_string_table);
	assert_int_equal(info.stacks, d->n_stack_table);
	assert_int_equal(d->n_stack_table, 4);	/* zero + 3 */
	assert_int_equal(d->n_link_table, 3);	/* zero + full + span only */
	assert_int_equal(d->n_function_table, 5);	/* zero + 4 */
	assert_int_equal(d->n_mapping_table, 5);	/* zero + 4 */

	/* one resource, its attributes the semantic-convention names of the series labels */
	assert_int_equal(r->n_resource_profiles, 1);
	res = r->resource_profiles[0]->resource;
	assert_non_null(res);
	assert_int_equal(res->n_attributes, 5);	/* __name__ left out */
	assert_string_equal(resource_attr(res, "service.name"), "checkout");
	assert_string_equal(resource_attr(res, "k8s.namespace.name"), "shop");
	assert_string_equal(resource_attr(res, "k8s.pod.name"), "checkout-7d9f8");
	assert_string_equal(resource_attr(res, "k8s.container.name"), "api");
	assert_string_equal(resource_attr(res, "k8s.node.name"), "node-1");
	assert_null(resource_attr(res, "__name__"));
	assert_int_equal(r->resource_profiles[0]->n_scope_profiles, 1);
	assert_string_equal(r->resource_profiles[0]->scope_profiles[0]->scope->name, "spanprof");
	assert_int_equal(r->resource_profiles[0]->scope_profiles[0]->n_profiles, 1);
	pr = r->resource_profiles[0]->scope_profiles[0]->profiles[0];

	/* the profile's types, times and id */
	assert_string_equal(S(d, pr->sample_type->type_strindex), "samples");
	assert_string_equal(S(d, pr->sample_type->unit_strindex), "count");
	assert_string_equal(S(d, pr->period_type->type_strindex), "cpu");
	assert_string_equal(S(d, pr->period_type->unit_strindex), "nanoseconds");
	assert_int_equal(pr->period, PERIOD);
	assert_int_equal(pr->time_unix_nano, T0);
	assert_int_equal(pr->duration_nano, 15000000000ull);
	assert_int_equal(pr->profile_id.len, 16);
	for (i = 0; i < 16; i++)
		nonzero |= pr->profile_id.data[i];
	assert_true(nonzero);

	/* totals: one value per sample, no timestamps */
	assert_int_equal(pr->n_samples, 3);
	for (i = 0; i < pr->n_samples; i++) {
		assert_int_equal(pr->samples[i]->n_values, 1);
		assert_int_equal(pr->samples[i]->n_timestamps_unix_nano, 0);
		total += pr->samples[i]->values[0];
	}
	assert_int_equal(total, fx.total);

	/* stacks, leaf first in the table */
	sa = find_sample(d, pr, STACK_A);
	sb = find_sample(d, pr, STACK_B);
	sc = find_sample(d, pr, STACK_C);
	assert_int_equal(sa->values[0], 5);
	assert_int_equal(sb->values[0], 3);
	assert_int_equal(sc->values[0], 2);
	st = d->stack_table[sa->stack_index];
	assert_string_equal(frame_type_of(d, st->location_indices[0]), "kernel");
	assert_string_equal(frame_type_of(d, st->location_indices[1]), "dotnet");	/* R2R .dll */
	assert_string_equal(frame_type_of(d, st->location_indices[2]), "dotnet");	/* JIT */
	assert_string_equal(frame_type_of(d, st->location_indices[3]), "native");
	st = d->stack_table[sb->stack_index];
	assert_string_equal(frame_type_of(d, st->location_indices[0]), "native");
	assert_int_equal(d->location_table[st->location_indices[0]]->n_lines, 0);
	/* the libc mapping keeps its file offset and build id */
	{
		const Opentelemetry__Proto__Profiles__V1development__Mapping *m =
			d->mapping_table[d->location_table[st->location_indices[0]]->mapping_index];

		assert_string_equal(S(d, m->filename_strindex), "/usr/lib/libc.so.6");
		assert_int_equal(m->file_offset, 0x1000);
		assert_string_equal(attr(d, m->attribute_indices, m->n_attribute_indices,
					 "process.executable.build_id.gnu", NULL), "abcdef0123");
	}
	/* the JIT function keeps the runtime's signature as its system name */
	st = d->stack_table[sc->stack_index];
	assert_string_equal(S(d, d->function_table[d->location_table[st->location_indices[0]]
							    ->lines[0]->function_index]->system_name_strindex),
			    "[App] App.Handler::Run()[Optimized]");

	/* links: trace and span ids as bytes, out of the attributes */
	assert_int_equal(parse_hex_for_test(TRACE, trace, 16), 0);
	assert_int_equal(parse_hex_for_test(SPAN, span, 8), 0);
	assert_true(sa->link_index > 0);
	ln = d->link_table[sa->link_index];
	assert_int_equal(ln->trace_id.len, 16);
	assert_memory_equal(ln->trace_id.data, trace, 16);
	assert_int_equal(ln->span_id.len, 8);
	assert_memory_equal(ln->span_id.data, span, 8);
	assert_null(attr(d, sa->attribute_indices, sa->n_attribute_indices, "trace_id", NULL));
	assert_null(attr(d, sa->attribute_indices, sa->n_attribute_indices, "span_id", NULL));
	assert_int_equal(sb->link_index, 0);
	/* Pyroscope's convention: the local root as the span, no trace id */
	ln = d->link_table[sc->link_index];
	assert_true(sc->link_index > 0);
	assert_int_equal(ln->trace_id.len, 0);
	assert_int_equal(ln->span_id.len, 8);
	assert_int_equal(parse_hex_for_test(ROOT, span, 8), 0);
	assert_memory_equal(ln->span_id.data, span, 8);

	/* attributes: semantic-convention names, integers as integers, the rest by name */
	assert_string_equal(attr(d, sa->attribute_indices, sa->n_attribute_indices, "process.pid",
				 &iv), "<int>");
	assert_int_equal(iv, 4242);
	assert_string_equal(attr(d, sa->attribute_indices, sa->n_attribute_indices, "thread.id",
				 &iv), "<int>");
	assert_int_equal(iv, 4243);
	assert_non_null(attr(d, sa->attribute_indices, sa->n_attribute_indices, "thread.name",
			     NULL));
	assert_string_equal(attr(d, sa->attribute_indices, sa->n_attribute_indices,
				 "process.executable.name", NULL), "SpanService");
	assert_string_equal(attr(d, sa->attribute_indices, sa->n_attribute_indices,
				 "local_root_span_id", NULL), ROOT);
	assert_string_equal(attr(d, sa->attribute_indices, sa->n_attribute_indices, "span_name",
				 NULL), "GET /a");
	assert_string_equal(attr(d, sa->attribute_indices, sa->n_attribute_indices, "tenant", NULL),
			    "acme");
	assert_null(attr(d, sa->attribute_indices, sa->n_attribute_indices, "pid", NULL));
	/* a user label named like a semantic convention: keys stay unique, one kept */
	assert_int_equal(sa->n_attribute_indices, 7);
	for (i = 0; i < sa->n_attribute_indices; i++)
		for (size_t j = i + 1; j < sa->n_attribute_indices; j++)
			assert_int_not_equal(d->attribute_table[sa->attribute_indices[i]]->key_strindex,
					     d->attribute_table[sa->attribute_indices[j]]->key_strindex);
	assert_string_equal(attr(d, sc->attribute_indices, sc->n_attribute_indices, "thread.name",
				 NULL), ".NET TP Worker");
	assert_int_equal(sc->n_attribute_indices, 5);	/* span_name, pid, tid, thread, process */
	request_free(r);
	free(buf);
	profile__free(fx.p);
}

/* Two services sharing code, one empty, one without labels: one dictionary, entries shared. */
static void test_otlp_encode_series_share_dictionary(void **state)
{
	struct fixture a, c;
	struct profile_opts o = { .period_ns = PERIOD };
	struct profile *empty = profile__new(&o);
	struct pf_label la[] = { { "service_name", "svc-a", 0 } };
	struct export_series es[3];
	struct export_batch b = { T0, T0 + 1000, es, 3 };
	struct otlp_encode_info info;
	pb_request *r;
	uint8_t *buf;
	size_t len;

	build_fixture(&a, T0 + 5);
	build_fixture(&c, T0 + 5);
	assert_non_null(empty);
	es[0] = (struct export_series){ la, 1, a.p };
	es[1] = (struct export_series){ la, 1, empty };
	es[2] = (struct export_series){ NULL, 0, c.p };
	assert_int_equal(otlp__encode(&b, 0, &buf, &len, &info), 0);
	assert_int_equal(info.resources, 2);
	assert_int_equal(info.series_empty, 1);
	assert_int_equal(info.samples, 6);
	assert_int_equal(info.total, a.total + c.total);
	r = decode(buf, len);
	check_dictionary(r);
	/* the same stacks, functions and links as one profile alone */
	assert_int_equal(r->dictionary->n_stack_table, 4);
	assert_int_equal(r->dictionary->n_function_table, 5);
	assert_int_equal(r->dictionary->n_link_table, 3);
	assert_int_equal(r->n_resource_profiles, 2);
	assert_string_equal(resource_attr(r->resource_profiles[0]->resource, "service.name"),
			    "svc-a");
	/* no service name given: what an SDK says, of the one process */
	assert_string_equal(resource_attr(r->resource_profiles[1]->resource, "service.name"),
			    "unknown_service:SpanService");
	/* the profile's own times win over the batch's */
	assert_int_equal(r->resource_profiles[1]->scope_profiles[0]->profiles[0]->time_unix_nano,
			 T0 + 5);
	assert_memory_not_equal(r->resource_profiles[0]->scope_profiles[0]->profiles[0]->profile_id.data,
				r->resource_profiles[1]->scope_profiles[0]->profiles[0]->profile_id.data, 16);
	request_free(r);
	free(buf);

	/* a batch with nothing sampled is a valid, empty request */
	es[0].prof = empty;
	b.n = 1;
	assert_int_equal(otlp__encode(&b, 0, &buf, &len, &info), 0);
	assert_int_equal(info.resources, 0);
	r = decode(buf, len);
	assert_int_equal(r->n_resource_profiles, 0);
	request_free(r);
	free(buf);
	profile__free(a.p);
	profile__free(c.p);
	profile__free(empty);
}

static void test_otlp_encode_gzip_and_file(void **state)
{
	struct fixture fx;
	struct export_series es;
	struct export_batch b = { T0, T0 + 1, &es, 1 };
	struct otlp_encode_info info;
	pb_request *r;
	uint8_t *gz, *raw;
	size_t len, raw_len;
	char path[] = "/tmp/test_otlp_XXXXXX";
	int fd;
	FILE *f;
	long size;

	build_fixture(&fx, T0);
	es = (struct export_series){ NULL, 0, fx.p };
	assert_int_equal(otlp__encode(&b, 1, &gz, &len, &info), 0);
	raw = gunzip(gz, len, &raw_len);
	assert_int_equal(raw_len, info.raw_bytes);
	r = decode(raw, raw_len);
	assert_int_equal(r->resource_profiles[0]->scope_profiles[0]->profiles[0]->n_samples, 3);
	request_free(r);
	free(raw);
	free(gz);

	/* the file writer: plain, then gzip */
	for (int gzip = 0; gzip <= 1; gzip++) {
		fd = mkstemp(path);
		assert_true(fd >= 0);
		f = fdopen(fd, "w+");
		assert_non_null(f);
		assert_int_equal(otlp__write(fx.p, f, gzip), 0);
		fflush(f);
		size = ftell(f);
		assert_true(size > 0);
		gz = malloc(size);
		rewind(f);
		assert_int_equal(fread(gz, 1, size, f), (size_t)size);
		fclose(f);
		unlink(path);
		strcpy(path, "/tmp/test_otlp_XXXXXX");
		raw = gzip ? gunzip(gz, size, &raw_len) : gz;
		r = decode(raw, gzip ? raw_len : (size_t)size);
		check_dictionary(r);
		assert_int_equal(r->resource_profiles[0]->scope_profiles[0]->profiles[0]->time_unix_nano,
				 T0);
		request_free(r);
		if (gzip)
			free(raw);
		free(gz);
	}
	assert_int_equal(otlp__write(NULL, stdout, 0), -EINVAL);

	/* a recording's service (profile__set_service) is its resource's service.name */
	{
		char *mem = NULL;
		size_t mlen = 0;

		f = open_memstream(&mem, &mlen);
		assert_int_equal(profile__set_service(fx.p, "svc-rec"), 0);
		assert_string_equal(profile__service(fx.p), "svc-rec");
		assert_int_equal(otlp__write(fx.p, f, 0), 0);
		fclose(f);
		r = decode((uint8_t *)mem, mlen);
		assert_int_equal(r->n_resource_profiles, 1);
		assert_string_equal(resource_attr(r->resource_profiles[0]->resource, "service.name"),
				    "svc-rec");
		request_free(r);
		free(mem);
	}
	profile__free(fx.p);
}

/* ---- settings -------------------------------------------------------------------------------- */

static const char *const *fake_env;

static const char *fake_getenv(const char *name)
{
	size_t n = strlen(name);

	for (const char *const *e = fake_env; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

static int config_with(const char *const *env, const struct otlp_opts *o, struct otlp_config *c,
		       char *err, size_t len)
{
	fake_env = env;
	return otlp__config(o, fake_getenv, c, err, len);
}

static void test_otlp_config_endpoint(void **state)
{
	struct otlp_opts o = { 0 };
	struct otlp_config c;
	char err[256];
	const char *env_base[] = { "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318/", NULL };
	const char *env_base_path[] = { "OTEL_EXPORTER_OTLP_ENDPOINT=https://gw/otlp", NULL };
	const char *env_both[] = { "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318",
				   "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT=http://prof:9999/custom",
				   NULL };
	const char *env_bad[] = { "OTEL_EXPORTER_OTLP_ENDPOINT=grpc://x:4317", NULL };

	assert_int_equal(config_with(NULL, &o, &c, err, sizeof(err)), 0);
	assert_string_equal(c.url, "http://localhost:4318/v1development/profiles");
	assert_int_equal(c.timeout_ms, 10000);
	assert_int_equal(c.gzip, 1);
	assert_string_equal(c.ca_file, "");
	otlp_config__clear(&c);

	/* the shared base: the signal path appended, after any path it has */
	assert_int_equal(config_with(env_base, &o, &c, err, sizeof(err)), 0);
	assert_string_equal(c.url, "http://collector:4318/v1development/profiles");
	otlp_config__clear(&c);
	assert_int_equal(config_with(env_base_path, &o, &c, err, sizeof(err)), 0);
	assert_string_equal(c.url, "https://gw/otlp/v1development/profiles");
	otlp_config__clear(&c);
	/* the signal's own: as given */
	assert_int_equal(config_with(env_both, &o, &c, err, sizeof(err)), 0);
	assert_string_equal(c.url, "http://prof:9999/custom");
	otlp_config__clear(&c);

	/* the flag wins; a base URL gets the path, a URL with a path is used as given */
	o.url = "http://127.0.0.1:4318";
	assert_int_equal(config_with(env_both, &o, &c, err, sizeof(err)), 0);
	assert_string_equal(c.url, "http://127.0.0.1:4318/v1development/profiles");
	otlp_config__clear(&c);
	o.url = "http://127.0.0.1:4318/";
	assert_int_equal(config_with(NULL, &o, &c, err, sizeof(err)), 0);
	assert_string_equal(c.url, "http://127.0.0.1:4318/v1development/profiles");
	otlp_config__clear(&c);
	o.url = "http://pyroscope:4040/v1development/profiles";
	assert_int_equal(config_with(NULL, &o, &c, err, sizeof(err)), 0);
	assert_string_equal(c.url, "http://pyroscope:4040/v1development/profiles");
	otlp_config__clear(&c);

	o.url = "ftp://x";
	assert_int_equal(config_with(NULL, &o, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "ftp://x"));
	o.url = NULL;
	assert_int_equal(config_with(env_bad, &o, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "OTEL_EXPORTER_OTLP_ENDPOINT"));
	/* no_env: the environment is not read */
	o.no_env = 1;
	assert_int_equal(config_with(env_bad, &o, &c, err, sizeof(err)), 0);
	assert_string_equal(c.url, "http://localhost:4318/v1development/profiles");
	otlp_config__clear(&c);
}

static void test_otlp_config_headers_timeout_compression_ca(void **state)
{
	const char *flags[] = { "Authorization: Bearer from-flag", "X-Extra:  1" };
	struct otlp_opts o = { .url = "http://h:1" };
	struct otlp_config c;
	char err[256];
	const char *env[] = {
		"OTEL_EXPORTER_OTLP_HEADERS=ignored=1",
		"OTEL_EXPORTER_OTLP_PROFILES_HEADERS= authorization = Basic%20abc=, x-scope-orgid=t%2C1 ,,",
		"OTEL_EXPORTER_OTLP_TIMEOUT=2500",
		"OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION=none",
		"OTEL_EXPORTER_OTLP_CERTIFICATE=/etc/ssl/ca.pem",
		NULL,
	};
	const char *bad_hdr[] = { "OTEL_EXPORTER_OTLP_HEADERS=novalue", NULL };
	const char *bad_pct[] = { "OTEL_EXPORTER_OTLP_HEADERS=a=b%2", NULL };
	const char *bad_to[] = { "OTEL_EXPORTER_OTLP_TIMEOUT=10s", NULL };
	const char *bad_comp[] = { "OTEL_EXPORTER_OTLP_COMPRESSION=zstd", NULL };

	/* the signal's list replaces the shared one; values percent-decoded, blanks trimmed */
	assert_int_equal(config_with(env, &o, &c, err, sizeof(err)), 0);
	assert_int_equal(c.n_headers, 2);
	assert_string_equal(c.headers[0], "authorization: Basic abc=");
	assert_string_equal(c.headers[1], "x-scope-orgid: t,1");
	assert_int_equal(c.timeout_ms, 2500);
	assert_int_equal(c.gzip, 0);
	assert_string_equal(c.ca_file, "/etc/ssl/ca.pem");
	otlp_config__clear(&c);

	/* flags win: a header of the same name replaced, the others kept */
	o.headers = flags;
	o.n_headers = 2;
	o.timeout_ms = 700;
	o.compression = OTLP_COMPRESSION_GZIP;
	o.ca_file = "/my/ca.pem";
	assert_int_equal(config_with(env, &o, &c, err, sizeof(err)), 0);
	assert_int_equal(c.n_headers, 3);
	assert_string_equal(c.headers[0], "Authorization: Bearer from-flag");
	assert_string_equal(c.headers[1], "x-scope-orgid: t,1");
	assert_string_equal(c.headers[2], "X-Extra: 1");
	assert_int_equal(c.timeout_ms, 700);
	assert_int_equal(c.gzip, 1);
	assert_string_equal(c.ca_file, "/my/ca.pem");
	otlp_config__clear(&c);

	o = (struct otlp_opts){ .url = "http://h:1" };
	assert_int_equal(config_with(bad_hdr, &o, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "OTEL_EXPORTER_OTLP_HEADERS"));
	assert_int_equal(config_with(bad_pct, &o, &c, err, sizeof(err)), -EINVAL);
	assert_int_equal(config_with(bad_to, &o, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "milliseconds"));
	assert_int_equal(config_with(bad_comp, &o, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "zstd"));
	{
		const char *nocolon[] = { "NoColon" };

		o.headers = nocolon;
		o.n_headers = 1;
		assert_int_equal(config_with(NULL, &o, &c, err, sizeof(err)), -EINVAL);
	}
	otlp_config__clear(NULL);
}

/* ---- the exporter over HTTP ---------------------------------------------------------------- */

struct rx {
	struct MHD_Daemon *mhd;
	int port;
	pthread_mutex_t mu;
	int n;
	char path[128], ctype[64], cenc[32], custom[64];
	uint8_t *body;
	size_t len;
};

struct upload {
	uint8_t *buf;
	size_t len;
};

static void copy_hdr(struct MHD_Connection *c, const char *name, char *out, size_t len)
{
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);

	snprintf(out, len, "%s", v ? v : "");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *data_len, void **req_cls)
{
	struct rx *s = cls;
	struct upload *up = *req_cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (!up) {
		*req_cls = up = calloc(1, sizeof(*up));
		return up ? MHD_YES : MHD_NO;
	}
	if (*data_len) {
		up->buf = realloc(up->buf, up->len + *data_len);
		if (!up->buf)
			return MHD_NO;
		memcpy(up->buf + up->len, data, *data_len);
		up->len += *data_len;
		*data_len = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&s->mu);
	s->n++;
	snprintf(s->path, sizeof(s->path), "%s %s", method, url);
	copy_hdr(c, "Content-Type", s->ctype, sizeof(s->ctype));
	copy_hdr(c, "Content-Encoding", s->cenc, sizeof(s->cenc));
	copy_hdr(c, "X-Test", s->custom, sizeof(s->custom));
	free(s->body);
	s->body = up->buf;
	s->len = up->len;
	up->buf = NULL;
	pthread_mutex_unlock(&s->mu);
	/* an empty ExportProfilesServiceResponse: full success */
	resp = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(resp, "Content-Type", "application/x-protobuf");
	ret = MHD_queue_response(c, 200, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct upload *up = *req_cls;

	if (up) {
		free(up->buf);
		free(up);
		*req_cls = NULL;
	}
}

static int rx_setup(void **state)
{
	struct rx *s = calloc(1, sizeof(*s));
	struct sockaddr_in sa = { .sin_family = AF_INET };
	const union MHD_DaemonInfo *info;

	assert_non_null(s);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	pthread_mutex_init(&s->mu, NULL);
	s->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, s,
				  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
	assert_non_null(s->mhd);
	info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
	assert_non_null(info);
	s->port = info->port;
	*state = s;
	return 0;
}

static int rx_teardown(void **state)
{
	struct rx *s = *state;

	MHD_stop_daemon(s->mhd);
	free(s->body);
	pthread_mutex_destroy(&s->mu);
	free(s);
	return 0;
}

static void test_otlp_exporter_posts_gzip(void **state)
{
	struct rx *s = *state;
	const char *hdrs[] = { "X-Test: otlp" };
	struct otlp_opts o = { .headers = hdrs, .n_headers = 1, .no_env = 1 };
	struct otlp_config cfg;
	struct fixture fx;
	struct pf_label series[] = { { "service_name", "svc", 0 } };
	struct export_series es;
	struct export_batch b = { T0, T0 + 1, &es, 1 };
	struct export_stats st;
	struct otlp_encode_info tot;
	struct exporter *e;
	char url[64], err[256];
	uint8_t *raw;
	size_t raw_len;
	pb_request *r;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s->port);
	o.url = url;
	e = otlp__new(&o, &cfg, err, sizeof(err));
	if (!e)
		fail_msg("otlp__new: %s", err);
	assert_string_equal(e->ops->name, "otlp");
	assert_non_null(strstr(cfg.url, "/v1development/profiles"));
	otlp_config__clear(&cfg);
	build_fixture(&fx, T0);
	es = (struct export_series){ series, 1, fx.p };
	assert_int_equal(e->ops->export(e->self, &b), 0);
	assert_int_equal(e->ops->flush(e->self, 5000), 0);
	e->ops->stats(e->self, &st);
	assert_int_equal(st.batches, 1);
	assert_int_equal(st.sent_ok, 1);
	assert_int_equal(st.dropped_queue_full + st.failed + st.dropped_encode, 0);

	pthread_mutex_lock(&s->mu);
	assert_int_equal(s->n, 1);
	assert_string_equal(s->path, "POST /v1development/profiles");
	assert_string_equal(s->ctype, "application/x-protobuf");
	assert_string_equal(s->cenc, "gzip");
	assert_string_equal(s->custom, "otlp");
	assert_int_equal(st.bytes_sent, s->len);
	raw = gunzip(s->body, s->len, &raw_len);
	pthread_mutex_unlock(&s->mu);
	r = decode(raw, raw_len);
	assert_string_equal(resource_attr(r->resource_profiles[0]->resource, "service.name"), "svc");
	request_free(r);
	free(raw);
	assert_int_equal(otlp__encode_totals(e, &tot), 0);
	assert_int_equal(tot.total, fx.total);
	assert_int_equal(otlp__encode_totals(NULL, &tot), -EINVAL);
	e->ops->free(e->self);

	/* compression off: no Content-Encoding, a plain body */
	o.compression = OTLP_COMPRESSION_NONE;
	e = otlp__new(&o, NULL, err, sizeof(err));
	assert_non_null(e);
	assert_int_equal(e->ops->export(e->self, &b), 0);
	assert_int_equal(e->ops->flush(e->self, 5000), 0);
	pthread_mutex_lock(&s->mu);
	assert_int_equal(s->n, 2);
	assert_string_equal(s->cenc, "");
	r = decode(s->body, s->len);
	pthread_mutex_unlock(&s->mu);
	request_free(r);
	e->ops->free(e->self);
	profile__free(fx.p);

	/* bad settings fail at once, with the reason */
	o.url = "mailto:x";
	assert_null(otlp__new(&o, NULL, err, sizeof(err)));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err, "otlp:"));
}

/* ---- gRPC ------------------------------------------------------------------------------------ */

static void test_otlp_config_protocol(void **state)
{
	struct otlp_opts o = { 0 };
	struct otlp_config c;
	char err[256];
	const char *grpc[] = { "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", NULL };
	const char *grpc_ep[] = { "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
				  "OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL=grpc",
				  "OTEL_EXPORTER_OTLP_ENDPOINT=https://collector:4317/ignored/path",
				  NULL };
	const char *sig_ep[] = { "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
				 "OTEL_EXPORTER_OTLP_ENDPOINT=http://shared:4317",
				 "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT=http://prof:4317/", NULL };
	const char *http_wins[] = { "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
				    "OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL=http/protobuf", NULL };
	const char *json[] = { "OTEL_EXPORTER_OTLP_PROTOCOL=http/json", NULL };
	const char *bogus[] = { "OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL=thrift", NULL };
	const char *certs[] = { "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=/shared.crt",
				"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE=/prof.crt",
				"OTEL_EXPORTER_OTLP_CLIENT_KEY=/shared.key", NULL };
	const char *key_only[] = { "OTEL_EXPORTER_OTLP_CLIENT_KEY=/k.pem", NULL };

	/* the default: http/protobuf, as before */
	assert_int_equal(config_with(NULL, &o, &c, err, sizeof(err)), 0);
	assert_int_equal(c.protocol, OTLP_PROTOCOL_HTTP_PROTOBUF);
	assert_string_equal(otlp_protocol__name(c.protocol), "http/protobuf");
	otlp_config__clear(&c);
	/* grpc: the default port follows the protocol, the method's path */
	assert_int_equal(config_with(grpc, &o, &c, err, sizeof(err)), 0);
	assert_int_equal(c.protocol, OTLP_PROTOCOL_GRPC);
	assert_string_equal(c.url, "http://localhost:4317" OTLP_GRPC_PATH);
	otlp_config__clear(&c);
	/* the signal's protocol wins; a path in the endpoint is not gRPC's */
	assert_int_equal(config_with(grpc_ep, &o, &c, err, sizeof(err)), 0);
	assert_int_equal(c.protocol, OTLP_PROTOCOL_GRPC);
	assert_string_equal(c.url, "https://collector:4317" OTLP_GRPC_PATH);
	otlp_config__clear(&c);
	assert_int_equal(config_with(sig_ep, &o, &c, err, sizeof(err)), 0);
	assert_string_equal(c.url, "http://prof:4317" OTLP_GRPC_PATH);
	otlp_config__clear(&c);
	assert_int_equal(config_with(http_wins, &o, &c, err, sizeof(err)), 0);
	assert_int_equal(c.protocol, OTLP_PROTOCOL_HTTP_PROTOBUF);
	assert_string_equal(c.url, "http://localhost:4318/v1development/profiles");
	otlp_config__clear(&c);
	/* the flag's URL under gRPC */
	o.url = "http://127.0.0.1:9999";
	assert_int_equal(config_with(grpc, &o, &c, err, sizeof(err)), 0);
	assert_string_equal(c.url, "http://127.0.0.1:9999" OTLP_GRPC_PATH);
	otlp_config__clear(&c);
	/* the option wins over the environment */
	o.url = NULL;
	o.protocol = OTLP_PROTOCOL_HTTP_PROTOBUF;
	assert_int_equal(config_with(grpc, &o, &c, err, sizeof(err)), 0);
	assert_int_equal(c.protocol, OTLP_PROTOCOL_HTTP_PROTOBUF);
	otlp_config__clear(&c);
	o.protocol = OTLP_PROTOCOL_UNSET;

	assert_int_equal(config_with(json, &o, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "http/json"));
	assert_int_equal(config_with(bogus, &o, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL 'thrift'"));

	/* mutual TLS: the signal's certificate wins, the shared key is taken */
	assert_int_equal(config_with(certs, &o, &c, err, sizeof(err)), 0);
	assert_string_equal(c.client_cert, "/prof.crt");
	assert_string_equal(c.client_key, "/shared.key");
	otlp_config__clear(&c);
	assert_int_equal(config_with(key_only, &o, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "/k.pem"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_otlp_encode_roundtrip),
		cmocka_unit_test(test_otlp_encode_series_share_dictionary),
		cmocka_unit_test(test_otlp_encode_gzip_and_file),
		cmocka_unit_test(test_otlp_config_endpoint),
		cmocka_unit_test(test_otlp_config_headers_timeout_compression_ca),
		cmocka_unit_test_setup_teardown(test_otlp_exporter_posts_gzip, rx_setup, rx_teardown),
		cmocka_unit_test(test_otlp_config_protocol),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
