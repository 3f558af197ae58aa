/* test_blocking.c: off-CPU time by the frame that blocked (blocking__top, --by-span), and the .NET
 * frame kinds it rests on (perfmap__frame_kind). Stacks as spanprof records them on .NET 10. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "blocking.h"
#include "perfmap.h"
#include "profile.h"

#define SLEEP_FN "[System.Private.CoreLib] System.Threading.Thread::Sleep(int32)"
#define ENTER_SLOW "[System.Private.CoreLib] System.Threading.Monitor::Enter_Slowpath(object)"
#define ENTER "[System.Private.CoreLib] System.Threading.Monitor::Enter(object,bool&)"
#define WAIT_SIGNAL "[System.Private.CoreLib] System.Threading.LowLevelLifoSemaphore::WaitForSignal(int32)"
#define POOL "[System.Private.CoreLib] System.Threading.PortableThreadPool+WorkerThread::WorkerThreadStart()"
#define BLOCK_SLEEP "[OffCpu] Program::BlockSleep()"
#define BLOCK_LOCK "[OffCpu] Program::BlockLock(object)"
#define RUN "[OffCpu] Program::Run(string)"

struct fixture {
	struct profile *p;
	uint32_t kernel, libc, coreclr, jit;
};

static uint32_t loc(struct fixture *f, uint32_t mapping, const char *name)
{
	static uint64_t addr = 0x1000;
	uint32_t id = profile__location(f->p, mapping, addr += 0x10,
					profile__function(f->p, name, NULL, NULL));

	assert_int_not_equal(id, 0);
	return id;
}

/* names leaf first, each with its mapping; one sample of off_ns (and count) under span. */
static void add(struct fixture *f, const char *span, const char *tid, uint64_t count,
		uint64_t off_ns, size_t n, const uint32_t *maps, const char *const *names)
{
	struct pf_label l[2] = { { "tid", tid, 0 }, { "span_name", span, 0 } };
	uint32_t locs[16];

	for (size_t i = 0; i < n; i++)
		locs[i] = loc(f, maps[i], names[i]);
	assert_int_equal(profile__add_values(f->p, locs, n, l, span ? 2 : 1, count, off_ns), 0);
}

static int setup(void **state)
{
	static struct fixture f;
	struct profile_opts o = { .period_ns = 10000000, .off_cpu = 1 };

	f.p = profile__new(&o);
	assert_non_null(f.p);
	f.kernel = profile__mapping(f.p, &(struct pf_mapping){ .filename = "[kernel.kallsyms]" });
	f.libc = profile__mapping(f.p, &(struct pf_mapping){ .filename = "/usr/lib/libc.so.6" });
	f.coreclr = profile__mapping(f.p, &(struct pf_mapping){ .filename = "/dotnet/libcoreclr.so" });
	f.jit = profile__mapping(f.p, &(struct pf_mapping){ .filename = "[jit]", .is_jit = 1 });
	{	/* Thread.Sleep in BlockSleep, twice (two threads): futex, libc, the runtime */
		const uint32_t m[] = { f.kernel, f.kernel, f.libc, f.coreclr, f.coreclr, f.jit, f.jit,
				       f.jit, f.libc };
		const char *const n[] = { "__schedule", "futex_wait", "pthread_cond_timedwait",
					  "libcoreclr.so!0x6363d0", "libcoreclr.so!0x46f5e0", SLEEP_FN,
					  BLOCK_SLEEP, RUN, "start_thread" };

		add(&f, "sleep", "11", 0, 20000000, 9, m, n);
		add(&f, "sleep", "12", 0, 10000000, 9, m, n);
		add(&f, "sleep", "13", 3, 0, 9, m, n);	/* CPU only: not blocking */
	}
	{	/* a contended lock: two framework frames over the runtime's */
		const uint32_t m[] = { f.kernel, f.libc, f.coreclr, f.jit, f.jit, f.jit, f.jit };
		const char *const n[] = { "__schedule", "pthread_cond_wait", "libcoreclr.so!0x41bf40",
					  ENTER_SLOW, ENTER, BLOCK_LOCK, RUN };

		add(&f, "lock", "11", 0, 5000000, 7, m, n);
	}
	{	/* no .NET frame: the leaf-most frame outside the kernel */
		const uint32_t m[] = { f.kernel, f.kernel, f.libc, f.libc };
		const char *const n[] = { "__schedule", "do_sys_poll", "__poll", "start_thread" };

		add(&f, "sleep", "14", 0, 2000000, 4, m, n);
	}
	{	/* an idle thread-pool worker outside any span: framework frames only */
		const uint32_t m[] = { f.kernel, f.coreclr, f.jit, f.jit };
		const char *const n[] = { "__schedule", "libcoreclr.so!0x631110", WAIT_SIGNAL, POOL };

		add(&f, NULL, "15", 0, 40000000, 4, m, n);
	}
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	profile__free(f->p);
	return 0;
}

static void test_blocking_app_caller_under_the_wait(void **state)
{
	struct fixture *f = *state;
	struct pf_blocking top[5];

	assert_int_equal(blocking__top(f->p, "span_name", "sleep", top, 5), 2);
	assert_string_equal(top[0].frame, BLOCK_SLEEP);
	assert_string_equal(top[0].via, SLEEP_FN);
	assert_int_equal(top[0].off_ns, 30000000);	/* both threads; not the CPU-only sample */
	assert_string_equal(top[1].frame, "__poll");
	assert_null(top[1].via);
	assert_int_equal(top[1].off_ns, 2000000);

	/* the leaf-most .NET frame is the wait, not the framework frame above it */
	assert_int_equal(blocking__top(f->p, "span_name", "lock", top, 5), 1);
	assert_string_equal(top[0].frame, BLOCK_LOCK);
	assert_string_equal(top[0].via, ENTER_SLOW);
	assert_int_equal(top[0].off_ns, 5000000);
}

static void test_blocking_all_samples_and_limits(void **state)
{
	struct fixture *f = *state;
	struct pf_blocking top[5];

	assert_int_equal(blocking__top(f->p, NULL, NULL, top, 5), 4);
	/* framework frames only: the leaf-most .NET frame, most off-CPU time first */
	assert_string_equal(top[0].frame, WAIT_SIGNAL);
	assert_null(top[0].via);
	assert_int_equal(top[0].off_ns, 40000000);
	assert_string_equal(top[1].frame, BLOCK_SLEEP);
	assert_int_equal(blocking__top(f->p, NULL, NULL, top, 1), 1);
	assert_string_equal(top[0].frame, WAIT_SIGNAL);
	assert_int_equal(blocking__top(f->p, "span_name", "nothing", top, 5), 0);
	assert_int_equal(blocking__top(f->p, "no_such_key", NULL, top, 5), 0);
	assert_int_equal(blocking__top(NULL, NULL, NULL, top, 5), 0);
	assert_int_equal(blocking__top(f->p, NULL, NULL, top, 0), 0);
}

static void test_blocking_frame_kinds(void **state)
{
	(void)state;
	assert_int_equal(perfmap__frame_kind(SLEEP_FN), PERFMAP_FRAME_FRAMEWORK);
	assert_int_equal(perfmap__frame_kind("[System] System.Uri::get_Host()"), PERFMAP_FRAME_FRAMEWORK);
	assert_int_equal(perfmap__frame_kind("[Microsoft.AspNetCore.Server.Kestrel.Core] A::B()"),
			 PERFMAP_FRAME_FRAMEWORK);
	assert_int_equal(perfmap__frame_kind("[mscorlib] X::Y()"), PERFMAP_FRAME_FRAMEWORK);
	assert_int_equal(perfmap__frame_kind(BLOCK_SLEEP), PERFMAP_FRAME_APP);
	assert_int_equal(perfmap__frame_kind("[Systemic] A::B()"), PERFMAP_FRAME_APP);
	assert_int_equal(perfmap__frame_kind("[MicrosoftX] A::B()"), PERFMAP_FRAME_APP);
	assert_int_equal(perfmap__frame_kind("[kernel] 0xffffffff81000000"), PERFMAP_FRAME_OTHER);
	assert_int_equal(perfmap__frame_kind("[unknown]"), PERFMAP_FRAME_OTHER);
	assert_int_equal(perfmap__frame_kind("[] A::B()"), PERFMAP_FRAME_OTHER);
	assert_int_equal(perfmap__frame_kind("libcoreclr.so!0x631110"), PERFMAP_FRAME_OTHER);
	assert_int_equal(perfmap__frame_kind("stub ReportStubBlock<MethodCallThunk>"), PERFMAP_FRAME_OTHER);
	assert_int_equal(perfmap__frame_kind(NULL), PERFMAP_FRAME_OTHER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_blocking_app_caller_under_the_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_blocking_all_samples_and_limits, setup, teardown),
		cmocka_unit_test(test_blocking_frame_kinds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
