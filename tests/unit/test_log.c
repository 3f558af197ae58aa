/* test_log.c: unit tests for lib/log.c: each format's line, JSON that parses back to the message,
 * logfmt quoting, level parsing and filtering, long lines cut short but still valid. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "log.h"
#include "testutil.h"

#define T0 1767323045678000000ull	/* 2026-01-02T03:04:05.678Z */

/* ---- a strict JSON reader: one flat object of string members ---------------------------------- */

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A JSON string at *p (at its opening quote) decoded into out (UTF-8); 0, or -1 if it is not one
 * (raw control characters, bad escapes, a missing quote). */
static int json_string(const char **p, char *out, size_t cap)
{
	const char *s = *p;
	size_t n = 0;

	if (*s++ != '"')
		return -1;
	while (*s != '"') {
		unsigned cp;

		if (!*s || (unsigned char)*s < 0x20 || n + 4 >= cap)
			return -1;
		if (*s != '\\') {
			out[n++] = *s++;
			continue;
		}
		s++;
		switch (*s) {
		case '"': case '\\': case '/':
			out[n++] = *s++;
			continue;
		case 'n': out[n++] = '\n'; s++; continue;
		case 't': out[n++] = '\t'; s++; continue;
		case 'r': out[n++] = '\r'; s++; continue;
		case 'b': out[n++] = '\b'; s++; continue;
		case 'f': out[n++] = '\f'; s++; continue;
		case 'u':
			cp = 0;
			for (int i = 1; i <= 4; i++) {
				if (hexval(s[i]) < 0)
					return -1;
				cp = cp * 16 + hexval(s[i]);
			}
			s += 5;
			if (cp >= 0x80)
				return -1;	/* the writer escapes only ASCII controls */
			out[n++] = cp;
			continue;
		default:
			return -1;
		}
	}
	out[n] = 0;
	*p = s + 1;
	return 0;
}

/* line is exactly {"k":"v",...}\n; the value of key into out. 0, or -1. */
static int json_get(const char *line, const char *key, char *out, size_t cap)
{
	const char *p = line;
	char k[64], v[8192];
	int found = -1;

	if (*p++ != '{')
		return -1;
	for (;;) {
		if (json_string(&p, k, sizeof(k)) || *p++ != ':' || json_string(&p, v, sizeof(v)))
			return -1;
		if (!strcmp(k, key)) {
			if (strlen(v) >= cap)
				return -1;
			memcpy(out, v, strlen(v) + 1);
			found = 0;
		}
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p++ != '}')
			return -1;
		break;
	}
	return *p == '\n' && !p[1] ? found : -1;
}

/* ---- the tests --------------------------------------------------------------------------------- */

static void test_log_text(void **state)
{
	char buf[256];
	size_t n;

	(void)state;
	n = log__format(buf, sizeof(buf), LOG_FORMAT_TEXT, T0, LOG_LEVEL_INFO, "sampling every CPU\n");
	assert_string_equal(buf, "2026-01-02T03:04:05.678Z info sampling every CPU\n");
	assert_int_equal(n, strlen(buf));
	log__format(buf, sizeof(buf), LOG_FORMAT_TEXT, T0, LOG_LEVEL_WARN, "two\nlines");
	assert_string_equal(buf, "2026-01-02T03:04:05.678Z warn two\\nlines\n");
}

static void test_log_logfmt(void **state)
{
	char buf[256];

	(void)state;
	log__format(buf, sizeof(buf), LOG_FORMAT_LOGFMT, T0, LOG_LEVEL_ERROR, "oneword");
	assert_string_equal(buf, "time=2026-01-02T03:04:05.678Z level=error msg=oneword\n");
	log__format(buf, sizeof(buf), LOG_FORMAT_LOGFMT, T0, LOG_LEVEL_DEBUG,
		    "pid 42: said \"x=1\" \\ bye");
	assert_string_equal(buf, "time=2026-01-02T03:04:05.678Z level=debug "
			    "msg=\"pid 42: said \\\"x=1\\\" \\\\ bye\"\n");
	log__format(buf, sizeof(buf), LOG_FORMAT_LOGFMT, T0, LOG_LEVEL_INFO, "a=b");
	assert_string_equal(buf, "time=2026-01-02T03:04:05.678Z level=info msg=\"a=b\"\n");
	log__format(buf, sizeof(buf), LOG_FORMAT_LOGFMT, T0, LOG_LEVEL_INFO, "");
	assert_string_equal(buf, "time=2026-01-02T03:04:05.678Z level=info msg=\"\"\n");
}

/* Messages with every character JSON must escape parse back to themselves. */
static void test_log_json_parses_back(void **state)
{
	static const char *const msgs[] = {
		"plain",
		"quote \" backslash \\ slash /",
		"tab\there, cr\rthere, inner\nnewline",
		"controls \x01\x02\x1f and DEL \x7f",
		"unicode: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5",
		"path C:\\dir\\file \"quoted\" {\"json\":1}",
		"",
	};
	char buf[1024], got[1024];

	(void)state;
	for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
		log__format(buf, sizeof(buf), LOG_FORMAT_JSON, T0, LOG_LEVEL_WARN, msgs[i]);
		assert_int_equal(json_get(buf, "msg", got, sizeof(got)), 0);
		assert_string_equal(got, msgs[i]);
		assert_int_equal(json_get(buf, "level", got, sizeof(got)), 0);
		assert_string_equal(got, "warn");
		assert_int_equal(json_get(buf, "time", got, sizeof(got)), 0);
		assert_string_equal(got, "2026-01-02T03:04:05.678Z");
	}
	/* invalid UTF-8 becomes U+FFFD: the line stays valid UTF-8 */
	log__format(buf, sizeof(buf), LOG_FORMAT_JSON, T0, LOG_LEVEL_INFO, "bad \xff\xc3 end");
	assert_int_equal(json_get(buf, "msg", got, sizeof(got)), 0);
	assert_string_equal(got, "bad \xef\xbf\xbd\xef\xbf\xbd end");
}

/* A message longer than the buffer is cut at a whole escape and the line still closes. */
static void test_log_long_cut(void **state)
{
	char msg[2000], buf[200], got[1024];

	(void)state;
	for (size_t i = 0; i < sizeof(msg) - 1; i++)
		msg[i] = i % 3 ? '"' : 'x';
	msg[sizeof(msg) - 1] = 0;
	for (size_t len = 128; len <= sizeof(buf); len++) {
		size_t n = log__format(buf, len, LOG_FORMAT_JSON, T0, LOG_LEVEL_INFO, msg);

		assert_true(n < len);
		assert_int_equal(json_get(buf, "msg", got, sizeof(got)), 0);
		assert_memory_equal(got, msg, strlen(got));
	}
	log__format(buf, 128, LOG_FORMAT_LOGFMT, T0, LOG_LEVEL_INFO, msg);
	assert_int_equal(buf[strlen(buf) - 1], '\n');
	assert_int_equal(buf[strlen(buf) - 2], '"');
}

static void test_log_parse(void **state)
{
	enum log_level l;
	enum log_format f;

	(void)state;
	assert_int_equal(log__parse_level("debug", &l), 0);
	assert_int_equal(l, LOG_LEVEL_DEBUG);
	assert_int_equal(log__parse_level("warning", &l), 0);
	assert_int_equal(l, LOG_LEVEL_WARN);
	assert_int_equal(log__parse_level("error", &l), 0);
	assert_int_equal(l, LOG_LEVEL_ERROR);
	assert_int_not_equal(log__parse_level("INFO ", &l), 0);
	assert_int_equal(log__parse_format("logfmt", &f), 0);
	assert_int_equal(f, LOG_FORMAT_LOGFMT);
	assert_int_equal(log__parse_format("json", &f), 0);
	assert_int_equal(f, LOG_FORMAT_JSON);
	assert_int_not_equal(log__parse_format("xml", &f), 0);
}

/* Lines below the level are not written; the others are, one line each. */
static void test_log_filter(void **state)
{
	char path[PATH_MAX], *text;
	int fd = testutil__mkstemp(path, sizeof(path));

	(void)state;
	assert_true(fd >= 0);
	log__set_fd(fd);
	log__setup(LOG_FORMAT_JSON, LOG_LEVEL_WARN);
	log_debug("not this");
	log_info("nor this");
	log_warn("this %d", 1);
	log_error("and %s", "this");
	log__setup(LOG_FORMAT_TEXT, LOG_LEVEL_INFO);
	log__set_fd(2);
	close(fd);
	text = testutil__slurp(path, NULL);
	unlink(path);
	assert_non_null(text);
	assert_null(strstr(text, "not this"));
	assert_null(strstr(text, "nor this"));
	assert_non_null(strstr(text, "\"level\":\"warn\",\"msg\":\"this 1\"}\n"));
	assert_non_null(strstr(text, "\"level\":\"error\",\"msg\":\"and this\"}\n"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_text),
		cmocka_unit_test(test_log_logfmt),
		cmocka_unit_test(test_log_json_parses_back),
		cmocka_unit_test(test_log_long_cut),
		cmocka_unit_test(test_log_parse),
		cmocka_unit_test(test_log_filter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
