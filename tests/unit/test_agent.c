/* test_agent.c: unit tests for user/cmd/agent.c, `spanprof agent`, run in-process on the fake BPF
 * session (engine_fx.c): where the profiles go is set up from the options and the environment,
 * and a setup that cannot work is one line and exit code 2 before the sampler is loaded. The
 * fake sampler refuses to open, so that no test scans the host's processes; the one run of the
 * window loop is in a PID namespace of its own, where the test is the only process. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent.h"
#include "engine_fx.h"
#include "log.h"
#include "testutil.h"

#define OPENED 99	/* the fake sampler's exit code: the setup got as far as loading it */

struct afx {
	char state[PATH_MAX];	/* SPANPROF_STATE_DIR, and the log */
	struct agent_opts o;
	char *logged;		/* what the run logged (run) */
};

static const char *const env_vars[] = {
	"SPANPROF_PYROSCOPE_PASSWORD", "SPANPROF_PYROSCOPE_TOKEN", "OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
	"OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS",
	"OTEL_EXPORTER_OTLP_PROFILES_HEADERS",
};

static void clear_env(void)
{
	for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
		unsetenv(env_vars[i]);
}

static int asetup(void **state)
{
	struct afx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	fake_reset();
	fake_open_rc = OPENED;
	clear_env();
	assert_non_null(testutil__mkdtemp(f->state, sizeof(f->state)));
	setenv("SPANPROF_STATE_DIR", f->state, 1);
	unsetenv("DEBUGINFOD_URLS");
	/* options.c's defaults for `spanprof agent` */
	f->o.freq = 19;
	f->o.interval = 15;
	f->o.flush_timeout_ms = 100;
	*state = f;
	return 0;
}

static int ateardown(void **state)
{
	struct afx *f = *state;

	testutil__rm_rf(f->state);
	unsetenv("SPANPROF_STATE_DIR");
	clear_env();
	free(f->logged);
	free(f);
	return 0;
}

/* agent__run(&f->o), what it logged in f->logged. */
static int run(struct afx *f)
{
	char path[PATH_MAX];
	int fd, rc;

	testutil__path(path, sizeof(path), f->state, "log");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	log__set_fd(fd);
	rc = agent__run(&f->o);
	log__set_fd(2);
	close(fd);
	free(f->logged);
	f->logged = testutil__slurp(path, NULL);
	assert_non_null(f->logged);
	return rc;
}

/* Neither Pyroscope, nor OTLP, nor a directory: one line naming the three, exit 2, the sampler
 * never loaded. */
static void test_agent_no_destination(void **state)
{
	struct afx *f = *state;

	assert_int_equal(run(f), 2);
	assert_int_equal(fake_opens, 0);
	assert_non_null(strstr(f->logged, "nowhere to send profiles"));
	assert_non_null(strstr(f->logged, "--pyroscope-url"));
	assert_non_null(strstr(f->logged, "--otlp-url"));
	assert_non_null(strstr(f->logged, "--output-dir"));
	assert_int_equal(testutil__lines(f->logged), 1);
}

/* The sampler's checks (privileges, -F) come first: their exit code, nothing else set up. */
static void test_agent_check_refused(void **state)
{
	struct afx *f = *state;

	f->o.otlp = 1;
	f->o.otlp_url = "http://127.0.0.1:9/v1development/profiles";
	fake_check_rc = 2;
	assert_int_equal(run(f), 2);
	assert_int_equal(fake_checks, 1);
	assert_int_equal(fake_opens, 0);
	assert_null(strstr(f->logged, "otlp:"));	/* no exporter made */
}

/* OTLP alone is a destination; the agent's options reach the sampler. */
static void test_agent_otlp_only(void **state)
{
	struct afx *f = *state;

	f->o.otlp = 1;
	f->o.otlp_url = "http://127.0.0.1:9/v1development/profiles";
	f->o.off_cpu = 1;
	f->o.max_span_tables = 55;
	assert_int_equal(run(f), OPENED);
	assert_int_equal(fake_opens, 1);
	assert_non_null(strstr(f->logged, "otlp: POST http://127.0.0.1:9/v1development/profiles ("));
	assert_int_equal(fake_opts.freq, 19);
	assert_int_equal(fake_opts.npids, 0);	/* the whole host */
	assert_int_equal(fake_opts.off_cpu, 1);
	assert_int_equal(fake_opts.ctx_procs_max, 55);
	assert_string_equal(fake_opts.command, "agent");
}

/* --otlp without a URL takes the endpoint from the environment, as the OTel SDKs do. */
static void test_agent_otlp_from_environment(void **state)
{
	struct afx *f = *state;

	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9", 1);
	f->o.otlp = 1;
	assert_int_equal(run(f), OPENED);
	assert_non_null(strstr(f->logged, "otlp: POST http://127.0.0.1:9/"));
}

/* An OTLP endpoint that is not http(s), from a flag or the environment: exit 2 before sampling. */
static void test_agent_otlp_bad_url(void **state)
{
	struct afx *f = *state;

	f->o.otlp = 1;
	f->o.otlp_url = "ftp://127.0.0.1:9/profiles";
	assert_int_equal(run(f), 2);
	assert_int_equal(fake_opens, 0);
	assert_non_null(strstr(f->logged, "otlp:"));
	f->o.otlp_url = NULL;
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "gopher://127.0.0.1:9", 1);
	assert_int_equal(run(f), 2);
	assert_int_equal(fake_opens, 0);
}

/* A Pyroscope URL is http or https: anything else is refused with the URL's fault named. */
static void test_agent_pyroscope_url(void **state)
{
	struct afx *f = *state;

	f->o.pyroscope_url = "http://127.0.0.1:9";
	assert_int_equal(run(f), OPENED);
	f->o.pyroscope_url = "ftp://127.0.0.1:9";
	assert_int_equal(run(f), 2);
	assert_non_null(strstr(f->logged, "URL scheme 'ftp' is not http or https"));
	assert_int_equal(testutil__lines(f->logged), 1);
	f->o.pyroscope_url = "not a url at all";
	assert_int_equal(run(f), 2);
	assert_int_equal(fake_opens, 1);	/* only the good one got that far */
}

/* A password (from the environment) without --pyroscope-user cannot be used: refused. */
static void test_agent_pyroscope_password_needs_user(void **state)
{
	struct afx *f = *state;

	setenv("SPANPROF_PYROSCOPE_PASSWORD", "secret", 1);
	f->o.pyroscope_url = "http://127.0.0.1:9";
	assert_int_equal(run(f), 2);
	assert_non_null(strstr(f->logged, "a Pyroscope password needs --pyroscope-user"));
	assert_null(strstr(f->logged, "secret"));
	f->o.pyroscope_user = "me";
	assert_int_equal(run(f), OPENED);
}

/* A secret file: its first line is the secret; one that cannot be read is a setup error. */
static void test_agent_pyroscope_secret_files(void **state)
{
	struct afx *f = *state;
	char pw[PATH_MAX], missing[PATH_MAX];

	testutil__path(pw, sizeof(pw), f->state, "pw");
	testutil__write_file(NULL, pw, "secret\nignored\n");
	testutil__path(missing, sizeof(missing), f->state, "missing");
	f->o.pyroscope_url = "http://127.0.0.1:9";
	f->o.pyroscope_password_file = pw;
	assert_int_equal(run(f), 2);	/* a password: needs a user */
	assert_non_null(strstr(f->logged, "needs --pyroscope-user"));
	f->o.pyroscope_user = "me";
	assert_int_equal(run(f), OPENED);
	f->o.pyroscope_token_file = missing;
	assert_int_equal(run(f), 2);
	assert_non_null(strstr(f->logged, "cannot read "));
	assert_non_null(strstr(f->logged, missing));
	/* basic auth and a token at once: refused by the exporter */
	f->o.pyroscope_token_file = pw;
	assert_int_equal(run(f), 2);
	assert_non_null(strstr(f->logged, "exclusive"));
}

/* --output-dir alone is a destination; one that cannot be made is refused. */
static void test_agent_output_dir(void **state)
{
	struct afx *f = *state;
	char dir[PATH_MAX], file[PATH_MAX], under_file[PATH_MAX];

	testutil__path(dir, sizeof(dir), f->state, "out");
	testutil__path(file, sizeof(file), f->state, "file");
	testutil__write_file(NULL, file, "x");
	testutil__path(under_file, sizeof(under_file), file, "out");
	f->o.output_dir = dir;
	assert_int_equal(run(f), OPENED);
	assert_int_equal(testutil__exists("%s", dir), 1);
	f->o.output_dir = under_file;
	assert_int_equal(run(f), 2);
	assert_non_null(strstr(f->logged, "give a writable --output-dir"));
	assert_int_equal(fake_opens, 1);
}

/* A --metrics-addr that cannot be listened on fails the setup; an ephemeral port does not. */
static void test_agent_metrics_addr(void **state)
{
	struct afx *f = *state;

	f->o.otlp = 1;
	f->o.otlp_url = "http://127.0.0.1:9/v1development/profiles";
	f->o.metrics_addr = "127.0.0.1:0";
	assert_int_equal(run(f), OPENED);
	f->o.metrics_addr = "not-an-address:99999";
	assert_int_equal(run(f), 2);
	assert_int_equal(fake_opens, 1);
}

/* ---- the window loop, in a PID namespace of its own ------------------------------------------ */

static char loop_dir[PATH_MAX];	/* --output-dir of the loop's run */
static double loop_deadline_ms;

/* The first window's file in loop_dir/<one service>/, into out; 0, or -1 while there is none. */
static int first_file(char *out, size_t len)
{
	DIR *d = opendir(loop_dir), *sub;
	struct dirent *de, *fe;
	int rc = -1;

	while (d && rc && (de = readdir(d))) {
		char path[PATH_MAX];

		if (de->d_name[0] == '.')
			continue;
		testutil__path(path, sizeof(path), loop_dir, de->d_name);
		sub = opendir(path);
		while (sub && rc && (fe = readdir(sub)))
			if (strstr(fe->d_name, ".pb.gz") && fe->d_name[0] != '.')
				rc = snprintf(out, len, "%s/%s", path, fe->d_name) >= (int)len;
		if (sub)
			closedir(sub);
	}
	if (d)
		closedir(d);
	return rc;
}

/* The first drain, once the engine is attached: two samples. Once the agent has written a
 * window: one more sample, and SIGTERM, as an operator stops it. A loop that has written none in
 * a minute fails the run (the windows flushed at the stop would hide it). */
static void loop_on_drain(void)
{
	static int queued, stopped;
	uint64_t user[1] = { (uint64_t)(uintptr_t)test_engine_marked_function + 4 };
	struct sigaction sa;
	char file[PATH_MAX];

	if (!queued) {
		queued = 1;
		queue_sample(user, 1, 0);
		queue_sample(user, 1, 0);
		return;
	}
	if (testutil__now_ms() > loop_deadline_ms)
		_exit(105);
	sigaction(SIGTERM, NULL, &sa);
	if (!stopped && sa.sa_handler != SIG_DFL && !first_file(file, sizeof(file))) {
		stopped = 1;
		queue_sample(user, 1, 0);	/* in a window still open at the stop */
		raise(SIGTERM);
	}
}

/* In the new PID namespace (this is its pid 1): its own /proc, then the agent, to a directory
 * only. The exit code is the agent's, or 100 + the step that failed (105: no window written). */
static int __attribute__((noreturn)) loop_child(struct afx *f)
{
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		_exit(101);
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		_exit(102);
	fake_open_rc = 0;
	fake_on_drain = loop_on_drain;
	loop_deadline_ms = testutil__now_ms() + 60000;
	f->o.all_processes = 1;	/* this test is not .NET */
	f->o.enable_perfmap = 0;
	f->o.interval = 0.05;
	f->o.output_dir = loop_dir;
	_exit(run(f));
}

/* The agent's loop: a window's samples, cut when the window ends, written as one profile of the
 * process's service; SIGTERM ends the run with exit 0, the open window's samples flushed first
 * (windows without samples write nothing). */
static void test_agent_window_loop(void **state)
{
	struct afx *f = *state;
	char file[PATH_MAX], *gz, *text;
	size_t len, n;
	int status;
	pid_t pid;

	testutil__path(loop_dir, sizeof(loop_dir), f->state, "out");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pid_t inner;

		if (unshare(CLONE_NEWPID | CLONE_NEWNS))
			_exit(errno == EPERM ? 77 : 100);
		inner = fork();
		if (inner == 0)
			loop_child(f);
		if (inner < 0 || waitpid(inner, &status, 0) != inner)
			_exit(103);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 104);
	}
	status = testutil__wait(pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();	/* not root: no namespace of our own */
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(first_file(file, sizeof(file)), 0);
	assert_non_null(strstr(file, "/out/test_engine/"));	/* the samples' process's name */
	gz = testutil__slurp(file, &len);
	assert_non_null(gz);
	text = (char *)testutil__gunzip(gz, len, &n);
	assert_non_null(memmem(text, n, "test_engine_marked_function", 27));
	free(text);
	free(gz);
	*strrchr(file, '/') = 0;
	assert_int_equal(testutil__entries(file, ".pb.gz"), 2);	/* windows' files */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_agent_no_destination, asetup, ateardown),
		cmocka_unit_test_setup_teardown(test_agent_check_refused, asetup, ateardown),
		cmocka_unit_test_setup_teardown(test_agent_otlp_only, asetup, ateardown),
		cmocka_unit_test_setup_teardown(test_agent_otlp_from_environment, asetup, ateardown),
		cmocka_unit_test_setup_teardown(test_agent_otlp_bad_url, asetup, ateardown),
		cmocka_unit_test_setup_teardown(test_agent_pyroscope_url, asetup, ateardown),
		cmocka_unit_test_setup_teardown(test_agent_pyroscope_password_needs_user, asetup,
						ateardown),
		cmocka_unit_test_setup_teardown(test_agent_pyroscope_secret_files, asetup, ateardown),
		cmocka_unit_test_setup_teardown(test_agent_output_dir, asetup, ateardown),
		cmocka_unit_test_setup_teardown(test_agent_metrics_addr, asetup, ateardown),
		cmocka_unit_test_setup_teardown(test_agent_window_loop, asetup, ateardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
