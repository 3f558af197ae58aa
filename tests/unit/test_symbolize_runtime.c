/* test_symbolize_runtime.c: unit tests for user/symbols/symbolize.c: runtime code named through the
 * fake runtime of symbolize_fx.c (at the finish, in groups, tiers, retries, claimed files, forget),
 * and leaves without their frame. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "profiler.h"
#include "proctab.h"
#include "runtime.h"
#include "symbolize.h"
#include "symbudget.h"
#include "testutil.h"
#include "symbolize_fx.h"

/* ---- runtime code ------------------------------------------------------------------------------ */

/* JIT code the runtime claims is pending until finish, then named with the runtime's name. */
static void test_symbolize_runtime_frame_named_at_finish(void **state)
{
	struct symbolizer_stats st;
	struct agg_frame f;
	struct proc *p;
	int64_t id;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	id = symbolizer__user(fx.sym, p, JIT_START + 0x1010, 1, 77);
	assert_true(id >= 0);
	assert_true(rt_claims_calls > 0);
	assert_int_equal(rt_symbolize_calls, 0);	/* not named before the runtime's last poll */
	f = frame_of(p, id);
	assert_string_equal(f.name, "[unknown]");
	assert_true(f.has_mapping);
	assert_true(f.mapping.is_jit);
	assert_string_equal(f.mapping.filename, "[jit]");
	assert_int_equal(f.mapping.start, JIT_START);

	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_int_equal(rt_symbolize_calls, 1);
	f = frame_of(p, id);
	assert_string_equal(f.name, "[App] App.Worker::Run()");	/* no tier without show_tiers */
	assert_non_null(f.system_name);
	assert_string_equal(f.system_name, "[App] App.Worker::Run(int32)");
	assert_true(f.mapping.is_jit);
	/* Named frames are not asked for again. */
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_int_equal(rt_symbolize_calls, 1);
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.jit_named, 1);
	assert_int_equal(st.jit_unnamed, 0);
}

/* Many new frames: named a group at a time, the runtime told each group's addresses before it
 * names them (its hint to fetch them all at once), every frame named once. */
static void test_symbolize_runtime_frames_named_in_groups(void **state)
{
	enum { N = 40 };
	struct agg_frame f;
	struct proc *p;
	int64_t id[N];

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	for (int k = 0; k < N; k++) {
		id[k] = symbolizer__user(fx.sym, p, JIT_START + 0x1000 + 4 * k, 1, 77);
		assert_true(id[k] >= 0);
	}
	assert_int_equal(rt_ntold, 0);
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_int_equal(rt_symbolize_calls, N);
	assert_int_equal(rt_untold_symbolized, 0);	/* told before named */
	assert_int_equal(rt_ntold, N);			/* each once */
	assert_int_equal(rt_groups, (N + RUNTIME_PREFETCH_MAX - 1) / RUNTIME_PREFETCH_MAX);
	assert_int_equal(rt_largest_group, RUNTIME_PREFETCH_MAX);
	for (int k = 0; k < N; k++) {
		f = frame_of(p, id[k]);
		assert_string_equal(f.name, "[App] App.Worker::Run()");
	}
	/* Nothing left to name: nothing told. */
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_int_equal(rt_ntold, N);
}

static void test_symbolize_runtime_frame_show_tiers(void **state)
{
	struct agg_frame f;
	struct proc *p;
	int64_t id, id2;

	fx_open(kallsyms, 1, 0);
	p = get(1001);
	id = symbolizer__user(fx.sym, p, JIT_START + 0x1010, 1, 77);
	id2 = symbolizer__user(fx.sym, p, DLL_START + 0x180, 0, 77);	/* a return address */
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	f = frame_of(p, id);
	assert_string_equal(f.name, "[App] App.Worker::Run() [OptimizedTier1]");
	assert_string_equal(f.system_name, "[App] App.Worker::Run(int32)");
	/* ReadyToRun code in a file the runtime claims: named by it, in its file mapping. */
	f = frame_of(p, id2);
	assert_string_equal(f.name, "[App] App.Program::Main() [PreJIT]");
	assert_null(f.system_name);
	assert_true(f.has_mapping);
	assert_string_equal(f.mapping.filename, "/app/app.dll");
	assert_false(f.mapping.is_jit);
}

/* A claimed frame the runtime cannot name yet: "[unknown]", and tried again at the next finish. */
static void test_symbolize_unnamed_runtime_frame_retried(void **state)
{
	struct symbolizer_stats st;
	struct proc *p;
	int64_t id;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	id = symbolizer__user(fx.sym, p, JIT_START + 0x2020, 1, 5);
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_string_equal(name_of(p, id), "[unknown]");
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.jit_unnamed, 1);
	assert_int_equal(st.jit_named, 0);
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);	/* still nothing */
	assert_string_equal(name_of(p, id), "[unknown]");
	assert_int_equal(rt_symbolize_calls, 2);

	jit_syms[1].published = 1;	/* the perf map line arrives */
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_string_equal(name_of(p, id), "[App] App.Worker::Late()");
	assert_null(frame_of(p, id).system_name);
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.jit_unnamed, 0);
	assert_int_equal(st.jit_named, 1);
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_int_equal(rt_symbolize_calls, 3);
}

/* A claimed file-backed frame the runtime does not know: module+offset, not asked again. */
static void test_symbolize_unnamed_claimed_file_frame_is_module_offset(void **state)
{
	struct symbolizer_stats st;
	struct proc *p;
	int64_t id;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	id = symbolizer__user(fx.sym, p, DLL_START + 0x4000, 1, 5);
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_string_equal(name_of(p, id), "app.dll+0x4000");
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_int_equal(rt_symbolize_calls, 1);
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.native_unnamed, 1);
	assert_int_equal(st.jit_unnamed, 0);
}

/* Managed code the runtime cannot name is .NET unnamed, by cause, even in a file-backed mapping
 * (a ReadyToRun .dll): still shown as module+offset, never counted as native. */
static void test_symbolize_unnamed_managed_file_frame_counts_as_dotnet(void **state)
{
	struct symbolizer_stats st;
	struct proc *p;
	int64_t id;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	id = symbolizer__user(fx.sym, p, DLL_START + 0x7000, 1, 5);
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_string_equal(name_of(p, id), "app.dll+0x7000");
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.native_unnamed, 0);
	assert_int_equal(st.jit_unnamed, 1);
	assert_int_equal(st.unnamed_by[RT_UNNAMED_IMAGE], 1);
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_int_equal(rt_symbolize_calls, 1);	/* not asked again */
}

/* forget frees a process's frames and counts them. */
static void test_symbolize_forget_frees_frames(void **state)
{
	struct symbolizer_stats st;
	struct agg_frame f;
	struct proc *p, *q;
	int64_t id, idq;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	q = get(1002);
	id = symbolizer__user(fx.sym, p, lib_addr(LIB_START, "fx_lib_add", 0), 1, 1);
	symbolizer__user(fx.sym, p, JIT_START + 0x1010, 1, 1);
	symbolizer__user(fx.sym, p, HEAP_START, 1, 1);
	idq = symbolizer__user(fx.sym, q, lib_addr(LIB_START, "fx_lib_add", 0), 1, 1);
	assert_non_null(p->syms);
	symbolizer__forget(fx.sym, p);
	assert_null(p->syms);
	assert_int_equal(symbolizer__frame(fx.sym, p, id, &f), -ENOENT);
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.forgotten, 3);
	/* The other process keeps its frames; a pending frame of a forgotten one is no more. */
	assert_string_equal(name_of(q, idq), "fx_lib_add");
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_int_equal(rt_symbolize_calls, 0);
	symbolizer__forget(fx.sym, p);	/* twice: nothing */
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.forgotten, 3);
}

/* Every kind is counted once per distinct frame. */
static void test_symbolize_stats_count_each_kind(void **state)
{
	struct symbolizer_stats st;
	struct proc *p;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	symbolizer__user(fx.sym, p, lib_addr(LIB_START, "fx_lib_add", 0), 1, 1);	/* named */
	symbolizer__user(fx.sym, p, lib_addr(LIB_START, "fx_lib_add", 0), 1, 1);	/* again */
	symbolizer__user(fx.sym, p, lib_addr(LIB_START, "fx_lib_mul", 0), 1, 1);	/* named */
	symbolizer__user(fx.sym, p, LIB_START + 0x20, 1, 1);	/* module+offset */
	symbolizer__user(fx.sym, p, JIT_START + 0x1010, 1, 1);	/* jit, named at finish */
	symbolizer__user(fx.sym, p, JIT_START + 0x2010, 1, 1);	/* jit, unnamed */
	symbolizer__user(fx.sym, p, JIT_START + 0x9000, 1, 1);	/* jit, unnamed */
	symbolizer__user(fx.sym, p, 0x2000, 1, 1);		/* no mapping */
	symbolizer__kernel(fx.sym, 0xffffffff81000100, 1);
	symbolizer__kernel(fx.sym, 0xffffffff81000100, 1);
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.frames, 8);
	assert_int_equal(st.native_named, 2);
	assert_int_equal(st.native_unnamed, 1);
	assert_int_equal(st.jit_named, 1);
	assert_int_equal(st.jit_unnamed, 2);
	assert_int_equal(st.unnamed_by[RT_UNNAMED_NO_ENTRY], 1);
	assert_int_equal(st.unnamed_by[RT_UNNAMED_JITDUMP_STOPPED], 1);
	assert_int_equal(st.unnamed_by[RT_UNNAMED_IMAGE], 0);
	assert_int_equal(st.unknown, 1);
	assert_int_equal(st.kernel, 1);
	assert_int_equal(st.forgotten, 0);
}

/* ---- leaves without their frame --------------------------------------------------------------- */

/* A native leaf at its entry (CFI: return address at [sp]) gets its caller from the copied stack;
 * a word that is not code, a stale ip, no registers, the vDSO and JIT code without a method range
 * keep the walked stack, each counted. */
static void test_symbolize_leaf_caller(void **state)
{
	uint64_t ip = lib_addr(LIB_START, "fx_lib_mul", 0), caller = lib_addr(LIB_START, "fx_lib_add", 1);
	uint64_t words[SP_LEAF_WORDS] = { caller }, frames[4];
	struct leaf_regs r = { ip, 0x7ffc0000f000, 0x7ffc0000f100, words, SP_LEAF_WORDS };
	struct symbolizer_stats st;
	struct proc *p;
	size_t n;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	frames[0] = ip, frames[1] = LIB_START + 0x20, n = 2;
	assert_int_equal(symbolizer__leaf(fx.sym, p, &r, frames, &n, 4, 1), LEAF_INSERTED);
	assert_int_equal(n, 3);
	assert_int_equal(frames[1], caller);
	assert_int_equal(frames[2], LIB_START + 0x20);

	/* The walk has it already. */
	frames[0] = ip, frames[1] = caller, n = 2;
	assert_int_equal(symbolizer__leaf(fx.sym, p, &r, frames, &n, 4, 1), LEAF_DUPLICATE);
	assert_int_equal(n, 2);
	/* A word in the heap is no return address. */
	words[0] = HEAP_START + 8;
	assert_int_equal(symbolizer__leaf(fx.sym, p, &r, frames, &n, 4, 1), LEAF_NOT_CODE);
	assert_int_equal(n, 2);
	/* Registers of another ip than the walk's leaf. */
	frames[0] = ip + 1;
	assert_int_equal(symbolizer__leaf(fx.sym, p, &r, frames, &n, 4, 1), LEAF_IP_MISMATCH);
	assert_int_equal(symbolizer__leaf(fx.sym, p, NULL, frames, &n, 4, 1), LEAF_NO_REGS);
	r.ip = frames[0] = VDSO_START + 0x10;
	assert_int_equal(symbolizer__leaf(fx.sym, p, &r, frames, &n, 4, 1), LEAF_NO_CFI);
	r.ip = frames[0] = HEAP_START + 0x10;
	assert_int_equal(symbolizer__leaf(fx.sym, p, &r, frames, &n, 4, 1), LEAF_NO_CODE);
	r.ip = frames[0] = JIT_START + 0x1010;	/* the fake runtime gives no range */
	assert_int_equal(symbolizer__leaf(fx.sym, p, &r, frames, &n, 4, 1), LEAF_JIT_NO_RANGE);
	assert_int_equal(n, 2);

	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.leaf[LEAF_INSERTED], 1);
	assert_int_equal(st.leaf[LEAF_DUPLICATE], 1);
	assert_int_equal(st.leaf[LEAF_NOT_CODE], 1);
	assert_int_equal(st.leaf[LEAF_IP_MISMATCH], 1);
	assert_int_equal(st.leaf[LEAF_NO_REGS], 1);
	assert_int_equal(st.leaf[LEAF_NO_CFI], 1);
	assert_int_equal(st.leaf[LEAF_NO_CODE], 1);
	assert_int_equal(st.leaf[LEAF_JIT_NO_RANGE], 1);
}

/* A JIT leaf the runtime does not know yet makes its runtime due at once: the runtime reads its
 * files on a backoff while they do not grow, and the samples after this one need the new code. */
static void test_symbolize_unknown_jit_leaf_wakes_the_runtime(void **state)
{
	uint64_t words[SP_LEAF_WORDS] = { 0 }, frames[4];
	struct leaf_regs r = { JIT_START + 0x3010, 0x7ffc0000f000, 0x7ffc0000f100, words, SP_LEAF_WORDS };
	struct proc *p;
	size_t n = 2;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	assert_non_null(p->rt[0].state);
	frames[0] = r.ip, frames[1] = LIB_START + 0x20;
	p->rt[0].next_poll_ns = 1000000000000ull;	/* backing off */
	assert_int_equal(symbolizer__leaf(fx.sym, p, &r, frames, &n, 4, 1), LEAF_JIT_NO_RANGE);
	assert_int_equal(p->rt[0].next_poll_ns, 0);
	(void)state;
}


int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_symbolize_runtime_frame_named_at_finish),
		T(test_symbolize_runtime_frames_named_in_groups),
		T(test_symbolize_runtime_frame_show_tiers),
		T(test_symbolize_unnamed_runtime_frame_retried),
		T(test_symbolize_unnamed_claimed_file_frame_is_module_offset),
		T(test_symbolize_unnamed_managed_file_frame_counts_as_dotnet),
		T(test_symbolize_forget_frees_frames),
		T(test_symbolize_stats_count_each_kind),
		T(test_symbolize_leaf_caller),
		T(test_symbolize_unknown_jit_leaf_wakes_the_runtime),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
