/* test_report.c: unit tests for user/cmd/report.c, the text report of `spanprof record` and the -v
 * progress line, on an engine whose BPF session is faked (engine_fx.c): what the counters say is
 * what the report says, and the top functions are the profile's. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine_fx.h"
#include "profiler.h"
#include "report.h"

/* The report of the engine's one window so far, with prof, as record prints it; freed by caller. */
static char *report_of(struct fx *f, const struct profile *prof, int by_span)
{
	struct report_info ri = { .freq = 99, .t_start = 1000000000ull, .t_end = 3500000000ull,
				  .by_span = by_span };
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	assert_non_null(out);
	report__print(out, f->e, prof, &ri);
	assert_int_equal(fclose(out), 0);
	assert_non_null(text);
	return text;
}

/* Two samples of one function: the first line's duration, frequency and counts, no loss, and
 * the function on top with all of the time. */
static void test_report_counts_and_top(void **state)
{
	struct fx *f = *state;
	uint64_t user[1] = { (uint64_t)(uintptr_t)test_engine_marked_function + 4 };
	struct engine_counters c;
	struct profile *prof;
	char *text;

	fake_counters[SP_CNT_SAMPLES] = 2;
	fake_counters[SP_CNT_SENT] = 2;
	queue_sample(user, 1, 0);
	queue_sample(user, 1, 0);
	prof = build(f, 2, &c);
	text = report_of(f, prof, 0);
	assert_non_null(strstr(text, "spanprof: 2.50s at 99 Hz, 2 samples taken, 2 in profile, 0 lost\n"));
	assert_non_null(strstr(text, "  lost: ring buffer full 0, scratch 0, malformed 0,"));
	assert_non_null(strstr(text, "100.00%"));
	assert_non_null(strstr(text, "test_engine_marked_function"));
	assert_null(strstr(text, ".NET pid"));	/* this process is not .NET */
	free(text);
	profile__free(prof);
}

/* Losses are counted by cause and added up on the first line: the sampler's ring buffer and
 * scratch (its counters) and a malformed record (the engine's). */
static void test_report_losses_by_cause(void **state)
{
	struct fx *f = *state;
	uint64_t user[2] = { (uint64_t)(uintptr_t)test_engine_marked_function + 4,
			     (uint64_t)(uintptr_t)test_engine_marked_function + 8 };
	struct engine_counters c;
	struct profile *prof;
	char *text;

	fake_counters[SP_CNT_SAMPLES] = 12;
	fake_counters[SP_CNT_SENT] = 2;
	fake_counters[SP_CNT_LOST_RINGBUF] = 7;
	fake_counters[SP_CNT_LOST_SCRATCH] = 3;
	queue_sample(user, 2, 8);	/* malformed: says 2 frames, holds 1 */
	queue_sample(user, 1, 0);
	prof = build(f, 2, &c);
	text = report_of(f, prof, 0);
	assert_non_null(strstr(text, ", 12 samples taken, 1 in profile, 11 lost\n"));
	assert_non_null(strstr(text, "  lost: ring buffer full 7, scratch 3, malformed 1,"));
	free(text);
	profile__free(prof);
}

/* -v: one line of every counter, by the names the one table in profiler.h gives them. */
static void test_report_progress_line(void **state)
{
	struct fx *f = *state;
	uint64_t user[1] = { (uint64_t)(uintptr_t)test_engine_marked_function + 4 };
	struct engine_counters c;
	struct profile *prof;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	fake_counters[SP_CNT_SAMPLES] = 5;
	fake_counters[SP_CNT_CTX_OK] = 4;
	queue_sample(user, 1, 0);
	prof = build(f, 1, &c);
	out = open_memstream(&text, &len);
	assert_non_null(out);
	report__progress(out, f->e, 1.5);
	assert_int_equal(fclose(out), 0);
	assert_memory_equal(text, "1.5s samples=5 ", 15);	/* the log line's message */
	assert_non_null(strstr(text, " ctx_ok=4 "));
	assert_non_null(strstr(text, " received=1 malformed=0 "));
	assert_non_null(strchr(text, '\n'));
	assert_ptr_equal(strchr(text, '\n'), text + len - 1);	/* one line */
	free(text);
	profile__free(prof);
}

/* --by-span: one line per local root span name, busiest first, CPU outside spans last, each
 * span's top functions under it. */
static void test_report_by_span(void **state)
{
	struct fx *f = *state;
	struct profile_opts po = { .period_ns = 10000000 };
	struct profile *prof = profile__new(&po);
	struct pf_label get = { .key = "span_name", .value = "GET /a" };
	struct pf_label post = { .key = "span_name", .value = "POST /b" };
	uint32_t la, lb;
	char *text, *a, *b, *none;

	assert_non_null(prof);
	la = profile__location(prof, 0, 0x1000, profile__function(prof, "handle_a", NULL, NULL));
	lb = profile__location(prof, 0, 0x2000, profile__function(prof, "handle_b", NULL, NULL));
	assert_int_equal(profile__add(prof, &lb, 1, &post, 1, 3), 0);
	assert_int_equal(profile__add(prof, &la, 1, &get, 1, 6), 0);
	assert_int_equal(profile__add(prof, &lb, 1, NULL, 0, 4), 0);	/* more than POST /b */
	text = report_of(f, prof, 1);
	a = strstr(text, "\n  GET /a ");
	b = strstr(text, "\n  POST /b ");
	none = strstr(text, "\n  (no span) ");
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(none);
	assert_true(a < b && b < none);	/* busiest first, outside spans last all the same */
	/* the share of all CPU time at the end of each span's line */
	assert_true(strstr(a, " 46.2%\n") && strstr(a, " 46.2%\n") < strchr(a + 1, '\n'));
	assert_true(strstr(b, " 23.1%\n") && strstr(b, " 23.1%\n") < strchr(b + 1, '\n'));
	assert_true(strstr(none, " 30.8%\n") && strstr(none, " 30.8%\n") < strchr(none + 1, '\n'));
	/* each span's top function under it, before the next span */
	assert_true(strstr(a, "handle_a") && strstr(a, "handle_a") < b);
	assert_true(strstr(b, "handle_b") && strstr(b, "handle_b") < none);
	free(text);
	profile__free(prof);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_report_counts_and_top, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_losses_by_cause, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_progress_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_by_span, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
