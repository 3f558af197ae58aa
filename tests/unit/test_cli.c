/* test_cli.c: unit tests for user/cmd/cli.c, the spanprof command line (what main runs): which
 * command runs with which options, --help and --version, and a bad command line as one line and
 * exit code 2. record__run and agent__run are stubs here (test_record.c and test_agent.c run the
 * real ones); the option table itself is test_options.c's. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent.h"
#include "cli.h"
#include "record.h"
#include "testutil.h"

/* ---- the front-ends, stubbed: what they were given ------------------------------------------- */

static struct record_opts got_rec;
static struct agent_opts got_agent;
static int records, agents, stub_rc;

int record__run(const struct record_opts *o)
{
	records++;
	got_rec = *o;
	return stub_rc;
}

int agent__run(const struct agent_opts *o)
{
	agents++;
	got_agent = *o;
	return stub_rc;
}

/* ---- running the command line ----------------------------------------------------------------- */

static char dir[PATH_MAX];
static char *out, *err;	/* what the run wrote on stdout and stderr */

static int csetup(void **state)
{
	assert_non_null(testutil__mkdtemp(dir, sizeof(dir)));
	records = agents = 0;
	stub_rc = 0;
	unsetenv("SPANPROF_OTLP_URL");
	unsetenv("SPANPROF_FREQ");
	return 0;
}

static int cteardown(void **state)
{
	free(out);
	free(err);
	out = err = NULL;
	unsetenv("SPANPROF_FREQ");
	return testutil__rm_rf(dir);
}

/* fd (1 or 2) into dir/name until restored; the saved fd. */
static int redirect(int fd, const char *name)
{
	char path[PATH_MAX];
	int to, saved = dup(fd);

	testutil__path(path, sizeof(path), dir, name);
	to = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(to >= 0 && saved >= 0);
	assert_int_equal(dup2(to, fd), fd);
	close(to);
	return saved;
}

static char *restore(int fd, int saved, const char *name)
{
	char path[PATH_MAX], *text;

	assert_int_equal(dup2(saved, fd), fd);
	close(saved);
	testutil__path(path, sizeof(path), dir, name);
	text = testutil__slurp(path, NULL);
	assert_non_null(text);
	return text;
}

/* `spanprof ARGS...` (NULL-terminated); its exit code, its output in out and err. */
static int cli(const char *arg, ...)
{
	static char *argv[32];
	int argc = 0, so, se, rc;
	va_list ap;

	argv[argc++] = "spanprof";
	va_start(ap, arg);
	for (; arg; arg = va_arg(ap, const char *))
		argv[argc++] = (char *)arg;
	va_end(ap);
	argv[argc] = NULL;
	free(out);
	free(err);
	fflush(stdout);
	fflush(stderr);
	so = redirect(1, "stdout");
	se = redirect(2, "stderr");
	rc = cli__run(argc, argv);
	fflush(stdout);
	fflush(stderr);
	out = restore(1, so, "stdout");
	err = restore(2, se, "stderr");
	return rc;
}

/* ---- the tests ------------------------------------------------------------------------------ */

/* No command: the usage on stderr, exit 2. */
static void test_cli_no_command(void **state)
{
	assert_int_equal(cli(NULL), 2);
	assert_non_null(strstr(err, "Usage: spanprof <command>"));
	assert_string_equal(out, "");
	assert_int_equal(records + agents, 0);
}

/* --help and -h: the usage, naming both commands, on stdout; exit 0. */
static void test_cli_help(void **state)
{
	assert_int_equal(cli("--help", NULL), 0);
	assert_non_null(strstr(out, "Usage: spanprof <command>"));
	assert_non_null(strstr(out, "  record "));
	assert_non_null(strstr(out, "  agent "));
	assert_string_equal(err, "");
	assert_int_equal(cli("-h", NULL), 0);
	assert_non_null(strstr(out, "Usage: spanprof <command>"));
	assert_int_equal(records + agents, 0);
}

/* --version and `version`: one line, "spanprof <version>" (the version cli.o was built with,
 * which may be older than this test's); exit 0. */
static void test_cli_version(void **state)
{
	const char *argv1[] = { "--version", "version" };

	for (int i = 0; i < 2; i++) {
		assert_int_equal(cli(argv1[i], NULL), 0);
		assert_memory_equal(out, "spanprof ", 9);
		assert_true(strlen(out) > 10 && !strchr(out + 9, ' '));
		assert_int_equal(testutil__lines(out), 1);
		assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
		assert_string_equal(err, "");
	}
	assert_int_equal(records + agents, 0);
}

/* An unknown command: one line naming it and where help is; exit 2, nothing run. */
static void test_cli_unknown_command(void **state)
{
	assert_int_equal(cli("recrod", "-d", "1", NULL), 2);
	assert_non_null(strstr(err, "unknown command 'recrod'; see 'spanprof --help'\n"));
	assert_int_equal(testutil__lines(err), 1);
	assert_int_equal(records + agents, 0);
}

/* `record`: record runs with the options given, and its exit code is spanprof's. */
static void test_cli_record_runs_with_options(void **state)
{
	stub_rc = 42;
	assert_int_equal(cli("record", "-p", "12", "-F", "49", "-o", "x.svg", "-o", "y.pb.gz",
			     "--value", "off-cpu", "--off-cpu", NULL), 42);
	assert_int_equal(records, 1);
	assert_int_equal(agents, 0);
	assert_int_equal(got_rec.npids, 1);
	assert_int_equal(got_rec.pids[0], 12);
	assert_int_equal(got_rec.freq, 49);
	assert_int_equal(got_rec.noutputs, 2);
	assert_string_equal(got_rec.outputs[0], "x.svg");
	assert_string_equal(got_rec.outputs[1], "y.pb.gz");
	assert_int_equal(got_rec.value_off_cpu, 1);
	assert_int_equal(got_rec.off_cpu, 1);
}

/* `agent`: the agent runs, its options from flags and from SPANPROF_* variables. */
static void test_cli_agent_runs_with_options(void **state)
{
	stub_rc = 7;
	setenv("SPANPROF_FREQ", "29", 1);
	assert_int_equal(cli("agent", "--otlp-url", "http://127.0.0.1:9/v1development/profiles",
			     NULL), 7);
	assert_int_equal(agents, 1);
	assert_int_equal(records, 0);
	assert_int_equal(got_agent.otlp, 1);
	assert_string_equal(got_agent.otlp_url, "http://127.0.0.1:9/v1development/profiles");
	assert_int_equal(got_agent.freq, 29);
}

/* A bad option or value: one line with the parser's reason and the command's help to see;
 * exit 2, nothing run. */
static void test_cli_bad_option(void **state)
{
	assert_int_equal(cli("record", "--no-such-option", NULL), 2);
	assert_non_null(strstr(err, "no-such-option"));
	assert_non_null(strstr(err, "; see 'spanprof record --help'\n"));
	assert_int_equal(testutil__lines(err), 1);
	assert_int_equal(cli("agent", "-F", "0", NULL), 2);
	assert_non_null(strstr(err, "; see 'spanprof agent --help'\n"));
	assert_int_equal(testutil__lines(err), 1);
	assert_int_equal(cli("record", "--value", "wall", NULL), 2);
	assert_int_equal(testutil__lines(err), 1);
	assert_int_equal(records + agents, 0);
}

/* `record --help`: the command's own help on stdout, exit 0, nothing run. */
static void test_cli_command_help(void **state)
{
	assert_int_equal(cli("record", "--help", NULL), 0);
	assert_non_null(strstr(out, "--output"));
	assert_null(strstr(out, "--pyroscope-url"));	/* the agent's */
	assert_int_equal(cli("agent", "-h", NULL), 0);
	assert_non_null(strstr(out, "--pyroscope-url"));
	assert_int_equal(records + agents, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_cli_no_command, csetup, cteardown),
		cmocka_unit_test_setup_teardown(test_cli_help, csetup, cteardown),
		cmocka_unit_test_setup_teardown(test_cli_version, csetup, cteardown),
		cmocka_unit_test_setup_teardown(test_cli_unknown_command, csetup, cteardown),
		cmocka_unit_test_setup_teardown(test_cli_record_runs_with_options, csetup, cteardown),
		cmocka_unit_test_setup_teardown(test_cli_agent_runs_with_options, csetup, cteardown),
		cmocka_unit_test_setup_teardown(test_cli_bad_option, csetup, cteardown),
		cmocka_unit_test_setup_teardown(test_cli_command_help, csetup, cteardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
