/* test_options.c: unit tests for user/cmd/options.c and flags.c: defaults, the environment (the
 * agent's, flags win, a bad value names its variable), the checks between options, and --help
 * made from the same table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "options.h"

static struct options o;
static char err[512];

/* Parse a NULL-terminated argument list (after the command's name) for cmd. */
static int parse(enum options_cmd cmd, ...)
{
	static char *argv[64];
	va_list ap;
	int argc = 0;

	argv[argc++] = cmd == OPTIONS_AGENT ? "agent" : "record";
	va_start(ap, cmd);
	while ((argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	err[0] = 0;
	return options__parse(&o, cmd, argc, argv, err, sizeof(err));
}

static int clear_env(void **state)
{
	char name[128];

	(void)state;
	for (size_t i = 0; i < options_table.n; i++)
		unsetenv(flags__env_name(&options_table, &options_table.rows[i], name, sizeof(name)));
	return 0;
}

static void test_options_defaults(void **state)
{
	(void)state;
	assert_int_equal(parse(OPTIONS_RECORD, NULL), 0);
	assert_int_equal(o.rec.freq, 99);
	assert_int_equal(o.rec.enable_perfmap, 1);
	assert_int_equal(o.rec.ringbuf_mb, 8);
	assert_int_equal(o.rec.perfmap_max_mb, 32);
	assert_int_equal(o.rec.perfmap_idle_s, 0);
	assert_int_equal(o.rec.jitdump_beside_perfmap, 1);	/* --buffered-perfmap add-jitdump */
	assert_int_equal(o.rec.noutputs, 1);
	assert_string_equal(o.rec.outputs[0], "spanprof.pb.gz");
	assert_int_equal(o.log_format, LOG_FORMAT_TEXT);
	assert_int_equal(o.log_level, LOG_LEVEL_INFO);
	assert_int_equal(parse(OPTIONS_AGENT, NULL), 0);
	assert_int_equal(o.agent.freq, 19);
	assert_true(o.agent.interval == 15);
	assert_int_equal(o.agent.enable_perfmap, 1);
	assert_int_equal(o.agent.output_max_bytes, 1024ull << 20);
	assert_int_equal(o.agent.queue_bytes, 64ull << 20);
	assert_int_equal(o.agent.flush_timeout_ms, 5000);
	assert_int_equal(o.agent.perfmap_idle_s, 3600);
	assert_int_equal(o.agent.jitdump_beside_perfmap, 0);	/* leave: outside the pod caps */
	assert_int_equal(o.agent.ringbuf_mb, 0);
	assert_null(o.agent.pyroscope_url);
}

static void test_options_flags(void **state)
{
	(void)state;
	assert_int_equal(parse(OPTIONS_RECORD, "-p", "12", "--pid", "13", "-F", "999", "-d", "2.5",
			       "-o", "a.svg", "-o", "b.pb.gz", "--format", "folded", "--off-cpu",
			       "--off-cpu-threshold", "0.5", "--off-cpu-max-rate", "500", "--value",
			       "off-cpu", "--no-enable-perfmap",
			       "--buffered-perfmap", "leave",
			       "--symbol-server", "http://a", "--symbol-cache-mb", "3", "-vv",
			       "--log-format", "json", "--log-level", "warn", NULL), 0);
	assert_int_equal(o.rec.npids, 2);
	assert_int_equal(o.rec.pids[1], 13);
	assert_int_equal(o.rec.freq, 999);
	assert_true(o.rec.duration == 2.5);
	assert_int_equal(o.rec.noutputs, 2);
	assert_string_equal(o.rec.outputs[1], "b.pb.gz");
	assert_int_equal(o.rec.format, FMT_FOLDED);
	assert_int_equal(o.rec.off_cpu_threshold_ns, 500000);
	assert_int_equal(o.rec.off_cpu_max_rate, 500);
	assert_int_equal(o.rec.value_off_cpu, 1);
	assert_int_equal(o.rec.enable_perfmap, 0);
	assert_int_equal(o.rec.jitdump_beside_perfmap, 0);
	assert_int_equal(o.rec.symsrv.n_urls, 1);
	assert_int_equal(o.rec.symsrv.cache_max_bytes, 3ull << 20);
	assert_int_equal(o.rec.verbose, 2);
	assert_int_equal(o.log_format, LOG_FORMAT_JSON);
	assert_int_equal(o.log_level, LOG_LEVEL_WARN);
	/* the command after the options, with or without "--" */
	assert_int_equal(parse(OPTIONS_RECORD, "-d", "1", "dotnet", "app.dll", "-F", "3", NULL), 0);
	assert_non_null(o.rec.command);
	assert_string_equal(o.rec.command[0], "dotnet");
	assert_string_equal(o.rec.command[2], "-F");
	assert_int_equal(o.rec.freq, 99);
	assert_int_equal(parse(OPTIONS_AGENT, "--otlp-url", "http://c:4318", "--otlp-timeout", "0.0001",
			       "--queue-mb", "0.5", "--otlp-compression", "none", NULL), 2);
	assert_non_null(strstr(err, "--otlp-timeout"));
	assert_int_equal(parse(OPTIONS_AGENT, "--otlp-url", "http://c:4318", "--otlp-timeout", "0.5",
			       "--queue-mb", "0.5", "--otlp-compression", "none", NULL), 0);
	assert_int_equal(o.agent.otlp, 1);
	assert_int_equal(o.agent.otlp_timeout_ms, 500);
	assert_int_equal(o.agent.queue_bytes, 512 * 1024);
	assert_int_equal(o.agent.otlp_compression, AGENT_OTLP_NONE);
}

/* Each bad value or combination is exit code 2 with the reason. */
static void test_options_bad(void **state)
{
	(void)state;
	assert_int_equal(parse(OPTIONS_RECORD, "-F", "0", NULL), 2);
	assert_non_null(strstr(err, "bad frequency"));
	assert_int_equal(parse(OPTIONS_RECORD, "-F", "99x", NULL), 2);
	assert_int_equal(parse(OPTIONS_RECORD, "-d", "-3", NULL), 2);
	assert_non_null(strstr(err, "bad duration"));
	assert_int_equal(parse(OPTIONS_RECORD, "-p", "abc", NULL), 2);
	assert_non_null(strstr(err, "bad pid"));
	assert_int_equal(parse(OPTIONS_RECORD, "--frobnicate", NULL), 2);
	assert_non_null(strstr(err, "bad option: --frobnicate"));
	assert_int_equal(parse(OPTIONS_RECORD, "--format", "xml", NULL), 2);
	assert_int_equal(parse(OPTIONS_RECORD, "-F", NULL), 2);
	assert_non_null(strstr(err, "missing value"));
	assert_int_equal(parse(OPTIONS_RECORD, "--user", "x", NULL), 2);
	assert_int_equal(parse(OPTIONS_RECORD, "-p", "1", "--", "true", NULL), 2);
	assert_int_equal(parse(OPTIONS_RECORD, "--value", "off-cpu", NULL), 2);
	assert_int_equal(parse(OPTIONS_RECORD, "--interval", "3", NULL), 2);	/* the agent's */
	assert_int_equal(parse(OPTIONS_AGENT, "--pyroscope-url", "ftp://x", NULL), 2);
	assert_non_null(strstr(err, "bad Pyroscope URL"));
	assert_int_equal(parse(OPTIONS_AGENT, "--pyroscope-header", "nocolon", NULL), 2);
	assert_int_equal(parse(OPTIONS_AGENT, "--interval", "0", NULL), 2);
	assert_int_equal(parse(OPTIONS_AGENT, "--off-cpu-threshold", "2", NULL), 2);
	assert_int_equal(parse(OPTIONS_AGENT, "--off-cpu-max-rate", "20", NULL), 2);
	assert_non_null(strstr(err, "go with --off-cpu"));
	assert_int_equal(parse(OPTIONS_RECORD, "--off-cpu", "--off-cpu-max-rate", "0", NULL), 2);
	assert_non_null(strstr(err, "bad --off-cpu-max-rate"));
	assert_int_equal(parse(OPTIONS_AGENT, "--log-level", "loud", NULL), 2);
	assert_int_equal(parse(OPTIONS_AGENT, "stray", NULL), 2);
	assert_int_equal(parse(OPTIONS_AGENT, "--tiers", NULL), 2);	/* record's */
	assert_int_equal(parse(OPTIONS_AGENT, "-h", NULL), 1);
}

/* The agent reads SPANPROF_<OPTION>; the flag wins, a list given as flags replaces the
 * environment's, an empty variable is unset. record reads none. */
static void test_options_env(void **state)
{
	(void)state;
	setenv("SPANPROF_FREQ", "7", 1);
	setenv("SPANPROF_OFF_CPU", "true", 1);
	setenv("SPANPROF_ALL_PROCESSES", "false", 1);
	setenv("SPANPROF_NO_ENABLE_PERFMAP", "1", 1);
	setenv("SPANPROF_PYROSCOPE_HEADER", "A: 1, B: 2", 1);
	setenv("SPANPROF_SYMBOL_SERVER", "http://s1,https://s2", 1);
	setenv("SPANPROF_OTLP_URL", "", 1);
	setenv("SPANPROF_LOG_FORMAT", "logfmt", 1);
	setenv("SPANPROF_QUEUE_MB", "2", 1);
	setenv("SPANPROF_BUFFERED_PERFMAP", "add-jitdump", 1);
	assert_int_equal(parse(OPTIONS_AGENT, NULL), 0);
	assert_int_equal(o.agent.jitdump_beside_perfmap, 1);
	assert_int_equal(o.agent.freq, 7);
	assert_int_equal(o.agent.off_cpu, 1);
	assert_int_equal(o.agent.all_processes, 0);
	assert_int_equal(o.agent.enable_perfmap, 0);
	assert_int_equal(o.agent.nheaders, 2);
	assert_string_equal(o.agent.headers[1], "B: 2");
	assert_int_equal(o.agent.symsrv.n_urls, 2);
	assert_string_equal(o.agent.symsrv.urls[1], "https://s2");
	assert_null(o.agent.otlp_url);
	assert_int_equal(o.agent.otlp, 0);
	assert_int_equal(o.log_format, LOG_FORMAT_LOGFMT);
	assert_int_equal(o.agent.queue_bytes, 2ull << 20);

	assert_int_equal(parse(OPTIONS_AGENT, "-F", "9", "--pyroscope-header", "C: 3",
			       "--log-format", "json", NULL), 0);
	assert_int_equal(o.agent.freq, 9);
	assert_int_equal(o.agent.nheaders, 1);
	assert_string_equal(o.agent.headers[0], "C: 3");
	assert_int_equal(o.log_format, LOG_FORMAT_JSON);

	assert_int_equal(parse(OPTIONS_RECORD, NULL), 0);
	assert_int_equal(o.rec.freq, 99);
	assert_int_equal(o.rec.off_cpu, 0);
	assert_int_equal(o.log_format, LOG_FORMAT_TEXT);
	clear_env(NULL);
}

/* A bad value from the environment is one line naming the variable, even when a flag follows. */
static void test_options_env_bad(void **state)
{
	static const char *const cases[][3] = {
		{ "SPANPROF_FREQ", "fast", "bad frequency" },
		{ "SPANPROF_OFF_CPU", "maybe", "true or false" },
		{ "SPANPROF_PYROSCOPE_URL", "pyroscope:4040", "bad Pyroscope URL" },
		{ "SPANPROF_INTERVAL", "0", "bad interval" },
		{ "SPANPROF_OTLP_HEADER", "A: 1,nocolon", "bad header" },
		{ "SPANPROF_LOG_LEVEL", "verbose", "--log-level" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setenv(cases[i][0], cases[i][1], 1);
		assert_int_equal(parse(OPTIONS_AGENT, "-F", "9", NULL), 2);
		assert_non_null(strstr(err, cases[i][2]));
		assert_non_null(strstr(err, cases[i][0]));
		assert_null(strchr(err, '\n'));
		unsetenv(cases[i][0]);
	}
}

/* How many lines of the help start with the option line head (then a space or the line's end). */
static int option_lines(const char *text, const char *head)
{
	int n = 0;

	for (const char *at = strstr(text, head); at; at = strstr(at + 1, head))
		n += at[strlen(head)] == ' ' || at[strlen(head)] == '\n';
	return n;
}

/* Every row: a name, help, a bad-value message for a value that can be bad; a variable of the
 * one scheme; and --help lists every option of its command once, the agent's with its variable. */
static void test_options_table_and_help(void **state)
{
	(void)state;
	for (int cmd = OPTIONS_RECORD; cmd <= OPTIONS_AGENT; cmd++) {
		char *text = NULL, name[128], want[200];
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		assert_non_null(f);
		options__help(cmd, f);
		fclose(f);
		for (size_t i = 0; i < options_table.n; i++) {
			const struct flag *r = &options_table.rows[i];

			assert_non_null(r->help);
			if (r->arg && r->type != FLAG_STRING)
				assert_non_null(r->bad);
			flags__env_name(&options_table, r, name, sizeof(name));
			assert_int_equal(strncmp(name, "SPANPROF_", 9), 0);
			assert_null(strchr(name, '-'));
			if (!((r->cmds >> cmd) & 1))
				continue;
			if (r->short_name)
				snprintf(want, sizeof(want), "\n  -%c, --%s", r->short_name, r->name);
			else
				snprintf(want, sizeof(want), "\n      --%s", r->name);
			assert_int_equal(option_lines(text, want), 1);
			snprintf(want, sizeof(want), "[env %s", name);
			if (cmd == OPTIONS_AGENT && r->type != FLAG_HELP)
				assert_non_null(strstr(text, want));
			else
				assert_null(strstr(text, want));
		}
		/* the default and the variable as the table has them */
		if (cmd == OPTIONS_AGENT) {
			assert_non_null(strstr(text, "samples per second per CPU (default 19) "
						     "[env SPANPROF_FREQ]\n"));
			assert_non_null(strstr(text, "[env SPANPROF_PYROSCOPE_HEADER, comma-separated]"));
		} else {
			assert_non_null(strstr(text, "samples per second per CPU (default 99)\n"));
		}
		free(text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_options_defaults, clear_env),
		cmocka_unit_test_setup(test_options_flags, clear_env),
		cmocka_unit_test_setup(test_options_bad, clear_env),
		cmocka_unit_test_setup(test_options_env, clear_env),
		cmocka_unit_test_setup(test_options_env_bad, clear_env),
		cmocka_unit_test_setup(test_options_table_and_help, clear_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
