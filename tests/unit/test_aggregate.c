/* test_aggregate.c: windows cut from one stream of samples: every sample counted once, in the
 * window its time belongs to; windows built into profiles per target. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aggregate.h"
#include "profile.h"

#define SEC 1000000000ull

/* Frames are named after their id; process p goes to profile p % 2 (two targets), 7 is left out. */
static int fake_frame(void *arg, uint32_t proc, uint32_t frame, struct agg_frame *out)
{
	static char names[64][32];
	uint32_t slot = frame % 64;

	snprintf(names[slot], sizeof(names[slot]), "f%u", frame);
	memset(out, 0, sizeof(*out));
	out->name = names[slot];
	out->address = 0x1000 + frame;
	return 0;
}

static int fake_target(void *arg, uint32_t proc)
{
	return proc == 7 ? -1 : (int)(proc % 2);
}

static const struct agg_sink sink = { fake_frame, fake_target, NULL };

static uint64_t build_total(struct agg_window *w, uint64_t *per_target)
{
	struct profile_opts po = { .period_ns = 10000000 };
	struct profile *profs[2] = { profile__new(&po), profile__new(&po) };
	uint64_t refused = 0, left_out = 0;
	struct agg_window_info wi;
	int64_t n;

	assert_non_null(profs[0]);
	assert_non_null(profs[1]);
	n = aggregate__build(w, &sink, profs, 2, &refused, &left_out);
	assert_true(n >= 0);
	assert_int_equal(refused, 0);
	aggregate__info(w, &wi);
	assert_int_equal((uint64_t)n + left_out, wi.samples);	/* every sample added or counted */
	per_target[0] += profile__total(profs[0]);
	per_target[1] += profile__total(profs[1]);
	assert_int_equal((uint64_t)n, profile__total(profs[0]) + profile__total(profs[1]));
	profile__free(profs[0]);
	profile__free(profs[1]);
	return n;
}

/*
 * One stream, 10 windows of 1 s from t=1 s: samples arrive in bursts, as a ring buffer drains
 * them, some after their window's end has passed (they are drained just before the cut) and
 * some early for the next window (a CPU ahead of the cut). Every window holds exactly the
 * samples of its time range, and the windows add up to the stream.
 */
static void test_aggregate_windows_add_up(void **state)
{
	struct aggregator *a = aggregate__new(1 * SEC, SEC);
	uint64_t expect[12] = { 0 }, got_total = 0, per_target[2] = { 0 }, expect_target[2] = { 0 };
	uint64_t left_out = 0, sent = 0, t = 0;
	struct pf_label l[2] = { { "span_id", "00000000000000aa", 0 }, { "tid", "1", 0 } };
	uint32_t frames[3];
	unsigned seed = 42;

	assert_non_null(a);
	for (int win = 0; win < 10; win++) {
		uint64_t end = aggregate__window_end(a);
		struct agg_window_info wi;
		struct agg_window *w;

		assert_int_equal(end, (uint64_t)(win + 1) * SEC);
		/* Samples up to 50 ms past this window's end, as a late drain sees them. */
		while (t < end + 50000000ull) {
			uint32_t proc = rand_r(&seed) % 8;

			frames[0] = rand_r(&seed) % 5;
			frames[1] = 10 + rand_r(&seed) % 3;
			frames[2] = 100;
			assert_int_equal(aggregate__add(a, t, proc, frames, 3, l, 2), 0);
			expect[t / SEC]++;
			if (proc == 7)
				left_out++;
			else
				expect_target[proc % 2]++;
			sent++;
			t += 1000000ull + rand_r(&seed) % 4000000ull;
		}
		w = aggregate__cut(a);
		assert_non_null(w);
		aggregate__info(w, &wi);
		assert_int_equal(wi.start_ns, win ? (uint64_t)win * SEC : 0);
		assert_int_equal(wi.end_ns, end);
		assert_int_equal(wi.samples, expect[win]);	/* exactly its own time range */
		assert_int_equal(wi.late, 0);
		got_total += wi.samples;
		build_total(w, per_target);
		aggregate__window_free(w);
	}
	/* What was added past the last cut waits in the open window. */
	assert_int_equal(aggregate__open_samples(a), expect[10]);
	{
		struct agg_window *w = aggregate__cut(a);
		struct agg_window_info wi;

		assert_int_equal(aggregate__open_samples(a), 0);
		aggregate__info(w, &wi);
		assert_int_equal(wi.samples, expect[10]);
		got_total += wi.samples;
		build_total(w, per_target);
		aggregate__window_free(w);
	}
	assert_int_equal(got_total, sent);
	assert_int_equal(per_target[0], expect_target[0]);
	assert_int_equal(per_target[1], expect_target[1]);
	assert_int_equal(per_target[0] + per_target[1] + left_out, sent);
	aggregate__free(a);
}

/* A drain delayed past two window ends: those samples go to the next window, counted late. */
static void test_aggregate_late_samples_counted(void **state)
{
	struct aggregator *a = aggregate__new(SEC, SEC);
	uint32_t f = 1;
	struct agg_window *w;
	struct agg_window_info wi;

	assert_int_equal(aggregate__add(a, 0, 0, &f, 1, NULL, 0), 0);
	assert_int_equal(aggregate__add(a, SEC + 1, 0, &f, 1, NULL, 0), 0);
	assert_int_equal(aggregate__add(a, 5 * SEC, 0, &f, 1, NULL, 0), 0);
	/* Samples of both open windows count as open: a last flush must cut until none is. */
	assert_int_equal(aggregate__open_samples(a), 3);
	w = aggregate__cut(a);
	aggregate__info(w, &wi);
	assert_int_equal(wi.samples, 1);
	aggregate__window_free(w);
	assert_int_equal(aggregate__open_samples(a), 2);
	w = aggregate__cut(a);
	aggregate__info(w, &wi);
	assert_int_equal(wi.samples, 2);
	assert_int_equal(wi.late, 1);
	aggregate__window_free(w);
	assert_int_equal(aggregate__open_samples(a), 0);
	aggregate__free(a);
}

/* Same stack and labels merge; other labels or processes do not. One window for ever (record). */
static void test_aggregate_merge_and_single_window(void **state)
{
	struct aggregator *a = aggregate__new(UINT64_MAX, 0);
	struct pf_label x = { "k", "x", 0 }, y = { "k", "y", 0 };
	uint32_t f[2] = { 1, 2 };
	uint64_t per[2] = { 0 };
	struct agg_window_info wi;
	struct agg_window *w;

	for (int i = 0; i < 5; i++)
		assert_int_equal(aggregate__add(a, UINT64_MAX - 1 - i, 0, f, 2, &x, 1), 0);
	assert_int_equal(aggregate__add(a, 3, 0, f, 2, &y, 1), 0);
	assert_int_equal(aggregate__add(a, 4, 2, f, 2, &x, 1), 0);
	assert_int_equal(aggregate__add(a, 4, 1, f, 2, &x, 1), 0);
	w = aggregate__cut(a);
	assert_non_null(w);
	assert_true(aggregate__uses_proc(w, 2));
	assert_false(aggregate__uses_proc(w, 5));
	aggregate__info(w, &wi);
	assert_int_equal(wi.samples, 8);
	assert_int_equal(wi.stacks, 4);
	assert_int_equal(build_total(w, per), 8);
	assert_int_equal(per[0], 7);
	assert_int_equal(per[1], 1);
	aggregate__window_free(w);
	aggregate__free(a);
}

/* Past the stack cap a process's samples go to its one [truncated] stack: counted, not dropped. */
static void test_aggregate_stack_cap(void **state)
{
	struct aggregator *a = aggregate__new(UINT64_MAX, 0);
	struct pf_label l = { "span_id", "x", 0 };
	uint64_t per[2] = { 0 };
	struct agg_window_info wi;
	struct agg_window *w;

	aggregate__set_max_stacks(a, 3);
	for (uint32_t i = 0; i < 10; i++) {
		uint32_t f = 100 + i;

		assert_int_equal(aggregate__add(a, 1, 0, &f, 1, &l, 1), 0);
	}
	w = aggregate__cut(a);
	aggregate__info(w, &wi);
	assert_int_equal(wi.samples, 10);
	assert_int_equal(wi.truncated, 7);
	assert_int_equal(wi.stacks, 4);	/* three kept, one [truncated] */
	assert_int_equal(build_total(w, per), 10);
	aggregate__window_free(w);
	aggregate__free(a);
}

/* Past the cap a sample keeps its stack and drops only its span ids, in up to a quarter as many
 * entries again; past that it goes to [truncated]. Labels that are no ids (the test above) go to
 * [truncated] at once. */
static void test_aggregate_stack_cap_drops_span_ids(void **state)
{
	struct aggregator *a = aggregate__new(UINT64_MAX, 0);
	uint64_t per[2] = { 0 };
	struct agg_window_info wi;
	struct agg_window *w;
	char id[16];

	aggregate__set_max_stacks(a, 4);	/* 4 entries with ids, then 1 without */
	for (uint32_t i = 0; i < 10; i++) {
		uint32_t f = 100 + i % 2;
		struct pf_label l[] = { { "span_id", id, 1 }, { "span_name", "work", 0 } };

		snprintf(id, sizeof(id), "%08x", i);	/* a new span every sample */
		assert_int_equal(aggregate__add(a, 1, 0, &f, 1, l, 2), 0);
	}
	w = aggregate__cut(a);
	aggregate__info(w, &wi);
	assert_int_equal(wi.samples, 10);
	/* 0-3 with their ids; 4, 6, 8 (frame 100) as one entry without; 5, 7, 9 (frame 101) found
	 * no room there. */
	assert_int_equal(wi.ids_dropped, 3);
	assert_int_equal(wi.truncated, 3);
	assert_int_equal(wi.stacks, 6);
	assert_int_equal(build_total(w, per), 10);
	aggregate__window_free(w);
	aggregate__free(a);
}

/* A span per sample (a traced service's usual samples) on one deep stack: the window holds the
 * stack once and per sample its label set and a pair, not a copy of the frames each time (that
 * was 264 bytes of key a sample here, before the table around it). */
static void test_aggregate_new_labels_do_not_copy_the_stack(void **state)
{
	enum { SAMPLES = 20000, DEPTH = 64 };
	struct aggregator *a = aggregate__new(UINT64_MAX, 0);
	uint32_t frames[DEPTH];
	uint64_t per[2] = { 0 };
	struct agg_window_info wi;
	struct agg_window *w;
	char id[17];

	for (uint32_t i = 0; i < DEPTH; i++)
		frames[i] = 1000 + i;
	for (uint32_t i = 0; i < SAMPLES; i++) {
		struct pf_label l[] = { { "span_id", id, 1 } };

		snprintf(id, sizeof(id), "%016x", i);
		assert_int_equal(aggregate__add(a, 1, 0, frames, DEPTH, l, 1), 0);
	}
	w = aggregate__cut(a);
	aggregate__info(w, &wi);
	assert_int_equal(wi.stacks, SAMPLES);
	print_message("%u samples, each a new span on one %u-frame stack: %.1f bytes a sample\n",
		      SAMPLES, DEPTH, (double)wi.bytes / SAMPLES);
	assert_true(wi.bytes < (uint64_t)SAMPLES * DEPTH * sizeof(uint32_t));
	assert_int_equal(build_total(w, per), SAMPLES);
	assert_int_equal(per[0], SAMPLES);
	aggregate__window_free(w);
	aggregate__free(a);
	(void)state;
}

/* Once the entries are at their hard cap, a sample with a stack never seen goes to [truncated]
 * and its stack is not stored: a long tail of new stacks costs nothing past the cap (the stacks
 * alone had room left: the entries had filled on few stacks). */
static uint64_t window_bytes_after(uint32_t tail, uint64_t *truncated)
{
	struct aggregator *a = aggregate__new(UINT64_MAX, 0);
	uint32_t frames[32] = { 0 }, n = 0;
	uint64_t per[2] = { 0 };
	struct agg_window_info wi;
	struct agg_window *w;
	char id[17];

	aggregate__set_max_stacks(a, 800);	/* 800 entries with ids, 200 more without */
	/* 800 spans on 4 stacks, then 200 spans on new stacks (their ids dropped), then the tail */
	for (uint32_t i = 0; i < 1000 + tail; i++, n++) {
		struct pf_label l[] = { { "span_id", id, 1 } };

		frames[0] = i < 800 ? i % 4 : i;
		snprintf(id, sizeof(id), "%016x", i);
		assert_int_equal(aggregate__add(a, 1, 0, frames, 32, l, 1), 0);
	}
	w = aggregate__cut(a);
	aggregate__info(w, &wi);
	assert_int_equal(wi.stacks, 1000 + 1);	/* the hard cap, and [truncated] */
	*truncated = wi.truncated;
	assert_int_equal(build_total(w, per), n);
	aggregate__window_free(w);
	aggregate__free(a);
	return wi.bytes;
}

static void test_aggregate_new_stacks_past_the_cap_not_stored(void **state)
{
	uint64_t t1, t2, b1 = window_bytes_after(100, &t1), b2 = window_bytes_after(20000, &t2);

	assert_int_equal(t1, 100);
	assert_int_equal(t2, 20000);
	assert_int_equal(b2, b1);	/* nothing more stored for 19,900 more new stacks */
	(void)state;
}

/* Once the entries are at their cap, a sample whose span is new keeps its stack without the ids;
 * its label set with the ids is not stored either (it was, up to the label sets' own cap: a few
 * hundred bytes for every new span past the cap, for nothing). Spans here run on eight stacks
 * each, so the label sets had far more room left than the entries. */
static uint64_t window_bytes_after_spans(uint32_t spans, uint64_t *ids_dropped)
{
	struct aggregator *a = aggregate__new(UINT64_MAX, 0);
	uint64_t per[2] = { 0 };
	struct agg_window_info wi;
	struct agg_window *w;
	char id[17];

	aggregate__set_max_stacks(a, 800);	/* 100 spans x 8 stacks fill it */
	for (uint32_t s = 0; s < 100 + spans; s++)
		for (uint32_t f = 0; f < 8; f++) {
			struct pf_label l[] = { { "span_id", id, 1 }, { "span_name", "work", 0 } };

			snprintf(id, sizeof(id), "%016x", s);
			assert_int_equal(aggregate__add(a, 1, 0, &f, 1, l, 2), 0);
		}
	w = aggregate__cut(a);
	aggregate__info(w, &wi);
	assert_int_equal(wi.stacks, 800 + 8);	/* with ids; the same 8 stacks without */
	assert_int_equal(wi.truncated, 0);
	*ids_dropped = wi.ids_dropped;
	assert_int_equal(build_total(w, per), (100 + spans) * 8);
	aggregate__window_free(w);
	aggregate__free(a);
	return wi.bytes;
}

static void test_aggregate_new_spans_past_the_cap_not_stored(void **state)
{
	uint64_t d1, d2, b1 = window_bytes_after_spans(10, &d1), b2 = window_bytes_after_spans(2000, &d2);

	assert_int_equal(d1, 10 * 8);
	assert_int_equal(d2, 2000 * 8);
	assert_int_equal(b2, b1);	/* nothing more stored for 1,990 more spans */
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aggregate_windows_add_up),
		cmocka_unit_test(test_aggregate_late_samples_counted),
		cmocka_unit_test(test_aggregate_merge_and_single_window),
		cmocka_unit_test(test_aggregate_stack_cap),
		cmocka_unit_test(test_aggregate_stack_cap_drops_span_ids),
		cmocka_unit_test(test_aggregate_new_labels_do_not_copy_the_stack),
		cmocka_unit_test(test_aggregate_new_stacks_past_the_cap_not_stored),
		cmocka_unit_test(test_aggregate_new_spans_past_the_cap_not_stored),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
