/* test_record.c: unit tests for user/cmd/record.c, `spanprof record`, run in-process on an engine
 * whose BPF session is faked (engine_fx.c): what the options ask of the sampler, which file each
 * -o writes in which format, and the exit code of a setup that cannot work. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine_fx.h"
#include "record.h"
#include "testutil.h"

struct rfx {
	char state[PATH_MAX];	/* SPANPROF_STATE_DIR */
	char dir[PATH_MAX];	/* where the outputs go */
	char paths[RECORD_MAX_OUTPUTS][PATH_MAX];
	struct record_opts o;
	char *printed;		/* record's stdout (run) */
};

static int queued;

/* The first drain of a run finds two samples of test_engine_marked_function in the ring. */
static void queue_two(void)
{
	uint64_t user[1] = { (uint64_t)(uintptr_t)test_engine_marked_function + 4 };

	if (queued++)
		return;
	queue_sample(user, 1, 0);
	queue_sample(user, 1, 0);
}

static int rsetup(void **state)
{
	struct rfx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	fake_reset();
	queued = 0;
	fake_on_drain = queue_two;
	assert_non_null(testutil__mkdtemp(f->state, sizeof(f->state)));
	assert_non_null(testutil__mkdtemp(f->dir, sizeof(f->dir)));
	setenv("SPANPROF_STATE_DIR", f->state, 1);
	unsetenv("DEBUGINFOD_URLS");
	/* As options.c leaves them for `record -p <this process> -d 0.001`. */
	f->o.pids[0] = getpid();
	f->o.npids = 1;
	f->o.freq = 99;
	f->o.duration = 0.001;
	*state = f;
	return 0;
}

static int rteardown(void **state)
{
	struct rfx *f = *state;

	testutil__rm_rf(f->state);
	testutil__rm_rf(f->dir);
	unsetenv("SPANPROF_STATE_DIR");
	unsetenv("SPANPROF_HOOK");
	free(f->printed);
	free(f);
	return 0;
}

/* -o DIR/name, one more output of the recording. */
static const char *out(struct rfx *f, const char *name)
{
	char *p = f->paths[f->o.noutputs];

	testutil__path(p, PATH_MAX, f->dir, name);
	f->o.outputs[f->o.noutputs++] = p;
	return p;
}

/* record__run(&f->o), and what it printed on stdout (the report, "wrote" lines) in f->printed. */
static int run(struct rfx *f)
{
	char path[PATH_MAX];
	int fd, saved, rc;

	testutil__path(path, sizeof(path), f->state, "stdout");
	fflush(stdout);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	saved = dup(1);
	assert_true(fd >= 0 && saved >= 0);
	assert_int_equal(dup2(fd, 1), 1);
	close(fd);
	rc = record__run(&f->o);
	fflush(stdout);
	assert_int_equal(dup2(saved, 1), 1);
	close(saved);
	free(f->printed);
	f->printed = testutil__slurp(path, NULL);
	assert_non_null(f->printed);
	return rc;
}

static char *slurp(const char *path, size_t *len)
{
	char *text = testutil__slurp(path, len);

	assert_non_null(text);
	return text;
}

/* The options reach the sampler: -p, -F, --off-cpu with its threshold, the command's name. */
static void test_record_options_to_sampler(void **state)
{
	struct rfx *f = *state;

	f->o.off_cpu = 1;
	f->o.off_cpu_threshold_ns = 5000000;
	f->o.off_cpu_max_rate = 300;
	f->o.max_span_tables = 77;
	f->o.ringbuf_mb = 3;
	out(f, "p.folded");
	assert_int_equal(run(f), 0);
	assert_int_equal(fake_checks, 1);
	assert_int_equal(fake_opens, 1);
	assert_int_equal(fake_opts.npids, 1);
	assert_int_equal(fake_opts.pids[0], getpid());
	assert_int_equal(fake_opts.freq, 99);
	assert_int_equal(fake_opts.off_cpu, 1);
	assert_int_equal(fake_opts.off_cpu_threshold_ns, 5000000);
	assert_int_equal(fake_opts.off_cpu_max_rate, 300);
	assert_int_equal(fake_opts.ctx_procs_max, 77);
	assert_int_equal(fake_opts.ringbuf_mb, 3);
	assert_string_equal(fake_opts.command, "record");
	assert_int_equal(fake_opts.follow_forks, 0);	/* only `record -- COMMAND` follows forks */
}

/* Each -o is written in the format its suffix names: .pb.gz pprof (gzip), .folded and any other
 * name folded text, .svg a flame graph, .otlp.pb an OTLP request; every one holds the samples. */
static void test_record_outputs_by_suffix(void **state)
{
	struct rfx *f = *state;
	const char *pb = out(f, "p.pb.gz"), *folded = out(f, "p.folded"), *svg = out(f, "p.svg");
	const char *txt = out(f, "p.txt"), *otlp = out(f, "p.otlp.pb");
	uint8_t *raw;
	char *text;
	size_t len, n;

	assert_int_equal(run(f), 0);
	/* the report, then a line per file written, naming its format */
	assert_non_null(strstr(f->printed, "2 in profile, 0 lost\n"));
	assert_non_null(strstr(f->printed, "test_engine_marked_function"));
	assert_non_null(strstr(f->printed, "(pprof)\n"));
	assert_non_null(strstr(f->printed, "p.svg (svg flame graph)\n"));
	assert_non_null(strstr(f->printed, "p.txt (folded stacks)\n"));
	assert_non_null(strstr(f->printed, "p.otlp.pb (OTLP profiles)\n"));
	raw = (uint8_t *)slurp(pb, &len);
	assert_true(len > 2 && raw[0] == 0x1f && raw[1] == 0x8b);
	free(testutil__gunzip(raw, len, &n));
	free(raw);
	text = slurp(folded, &len);
	assert_non_null(strstr(text, "test_engine_marked_function 2\n"));
	free(text);
	text = slurp(txt, &len);
	assert_non_null(strstr(text, "test_engine_marked_function 2\n"));
	free(text);
	text = slurp(svg, &len);
	assert_non_null(strstr(text, "<svg"));
	assert_non_null(strstr(text, "test_engine_marked_function"));
	free(text);
	raw = (uint8_t *)slurp(otlp, &len);
	assert_false(len > 2 && raw[0] == 0x1f && raw[1] == 0x8b);	/* no .gz: not compressed */
	assert_non_null(memmem(raw, len, "test_engine_marked_function", 27));
	free(raw);
}

/* --format forces every output's format, whatever its name says. */
static void test_record_format_forced(void **state)
{
	struct rfx *f = *state;
	const char *p = out(f, "p.svg");
	char *text;
	size_t len;

	f->o.format = FMT_FOLDED;
	assert_int_equal(run(f), 0);
	text = slurp(p, &len);
	assert_null(strstr(text, "<svg"));
	assert_non_null(strstr(text, "test_engine_marked_function 2\n"));
	free(text);
}

/* An output that cannot be written fails the setup (exit 2) before the sampler is loaded, and
 * the outputs opened before it leave nothing behind. */
static void test_record_bad_output_before_sampling(void **state)
{
	struct rfx *f = *state;
	const char *good = out(f, "p.folded");

	out(f, "no/such/dir/p.pb.gz");
	assert_int_equal(run(f), 2);
	assert_int_equal(fake_opens, 0);
	assert_string_equal(f->printed, "");	/* no report of a recording that never was */
	assert_int_equal(access(good, F_OK), -1);
	assert_int_equal(testutil__entries(f->dir, NULL), 0);
}

/* -o naming a directory is refused the same way. */
static void test_record_output_is_directory(void **state)
{
	struct rfx *f = *state;

	f->o.outputs[f->o.noutputs++] = f->dir;
	assert_int_equal(run(f), 2);
	assert_int_equal(fake_opens, 0);
}

/* What the sampler's checks refuse (privileges, -F, -p) is the exit code, nothing opened or
 * written. */
static void test_record_check_refused(void **state)
{
	struct rfx *f = *state;

	out(f, "p.folded");
	fake_check_rc = 2;
	assert_int_equal(run(f), 2);
	assert_int_equal(fake_opens, 0);
	assert_int_equal(testutil__entries(f->dir, NULL), 0);
}

/* A sampler that cannot be loaded: its exit code, and no output left half-made. */
static void test_record_open_failed(void **state)
{
	struct rfx *f = *state;

	out(f, "p.pb.gz");
	fake_open_rc = 1;
	assert_int_equal(run(f), 1);
	assert_int_equal(fake_opens, 1);
	assert_int_equal(testutil__entries(f->dir, NULL), 0);
}

/* --value off-cpu: folded and SVG show off-CPU time, so samples on CPU are not in them; the
 * pprof holds both. */
static void test_record_value_off_cpu(void **state)
{
	struct rfx *f = *state;
	const char *folded = out(f, "p.folded"), *pb = out(f, "p.pb.gz");
	uint8_t *raw, *pprof;
	char *text;
	size_t len, n;

	f->o.off_cpu = 1;
	f->o.value_off_cpu = 1;
	assert_int_equal(run(f), 0);
	text = slurp(folded, &len);
	assert_null(strstr(text, "test_engine_marked_function"));
	free(text);
	raw = (uint8_t *)slurp(pb, &len);
	pprof = testutil__gunzip(raw, len, &n);
	assert_non_null(memmem(pprof, n, "test_engine_marked_function", 27));
	free(pprof);
	free(raw);
}

static double give_up_ms;
static int gave_up;

/* A recording that has not ended by itself in a minute is ended (SIGINT) and fails the test. */
static void queue_two_or_give_up(void)
{
	queue_two();
	if (!gave_up && testutil__now_ms() > give_up_ms) {
		gave_up = 1;
		raise(SIGINT);
	}
}

/* -p: when every given process has exited, the recording ends by itself (no -d, no signal). */
static void test_record_ends_when_processes_exit(void **state)
{
	struct rfx *f = *state;
	const char *folded = out(f, "p.folded");
	siginfo_t si = { 0 };
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	/* exited, not yet reaped: still the process its pid names */
	assert_int_equal(waitid(P_PID, pid, &si, WEXITED | WNOWAIT), 0);
	f->o.pids[0] = pid;
	f->o.duration = 0;	/* until it has exited */
	give_up_ms = testutil__now_ms() + 60000;
	fake_on_drain = queue_two_or_give_up;
	assert_int_equal(run(f), 0);
	assert_false(gave_up);
	assert_int_equal(testutil__exists("%s", folded), 1);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
}

/* `record -- COMMAND`: the command is the one process sampled, its children followed, the span
 * hook in its DOTNET_STARTUP_HOOKS; record exits with the command's exit code. */
static void test_record_command_exit_code(void **state)
{
	struct rfx *f = *state;
	char hook[PATH_MAX], env[PATH_MAX], script[PATH_MAX + 64], *text;
	char *argv[] = { "/bin/sh", "-c", script, NULL };

	testutil__path(hook, sizeof(hook), f->state, "SpanProf.Hook.dll");
	testutil__write_file(NULL, hook, "not a dll");
	setenv("SPANPROF_HOOK", hook, 1);
	testutil__path(env, sizeof(env), f->dir, "env");
	snprintf(script, sizeof(script), "echo \"$DOTNET_STARTUP_HOOKS\" > '%s'; exit 3", env);
	f->o.command = argv;
	f->o.duration = 0;	/* until the command exits */
	f->o.npids = 0;
	out(f, "p.folded");
	assert_int_equal(run(f), 3);
	assert_int_equal(fake_opts.npids, 1);
	assert_int_not_equal(fake_opts.pids[0], getpid());
	assert_int_equal(fake_opts.follow_forks, 1);
	text = slurp(env, NULL);
	assert_non_null(strstr(text, hook));
	free(text);
	assert_int_equal(access(f->paths[0], F_OK), 0);	/* the outputs are written all the same */
}

/* Without the hook to inject, a command is not started: a setup error, nothing sampled. */
static void test_record_command_without_hook(void **state)
{
	struct rfx *f = *state;
	char *argv[] = { "/bin/true", NULL };

	setenv("SPANPROF_HOOK", "/nonexistent/SpanProf.Hook.dll", 1);
	f->o.command = argv;
	f->o.npids = 0;
	out(f, "p.folded");
	assert_int_equal(run(f), 2);
	assert_int_equal(fake_opens, 0);
	assert_int_equal(testutil__entries(f->dir, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_record_options_to_sampler, rsetup, rteardown),
		cmocka_unit_test_setup_teardown(test_record_outputs_by_suffix, rsetup, rteardown),
		cmocka_unit_test_setup_teardown(test_record_format_forced, rsetup, rteardown),
		cmocka_unit_test_setup_teardown(test_record_bad_output_before_sampling, rsetup,
						rteardown),
		cmocka_unit_test_setup_teardown(test_record_output_is_directory, rsetup, rteardown),
		cmocka_unit_test_setup_teardown(test_record_check_refused, rsetup, rteardown),
		cmocka_unit_test_setup_teardown(test_record_open_failed, rsetup, rteardown),
		cmocka_unit_test_setup_teardown(test_record_value_off_cpu, rsetup, rteardown),
		cmocka_unit_test_setup_teardown(test_record_ends_when_processes_exit, rsetup,
						rteardown),
		cmocka_unit_test_setup_teardown(test_record_command_exit_code, rsetup, rteardown),
		cmocka_unit_test_setup_teardown(test_record_command_without_hook, rsetup, rteardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
