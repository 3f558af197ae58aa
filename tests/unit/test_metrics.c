/* test_metrics.c: unit tests for user/export/metrics.c: the endpoint over real HTTP (libcurl),
 * the exposition builder, and promtool's verdict on what it builds. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "metrics.h"
#include "util.h"
#include "testutil.h"

struct http_reply {
	long status;
	char body[8192];
	size_t len;
	char ctype[256];
	char allow[256];
};

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
	struct http_reply *r = arg;
	size_t len = sz * n, room = sizeof(r->body) - 1 - r->len;

	if (len > room)
		len = room;
	memcpy(r->body + r->len, p, len);
	r->len += len;
	r->body[r->len] = 0;
	return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
	struct http_reply *r = arg;
	size_t len = sz * n;
	char line[256];

	if (len >= sizeof(line))
		return len;
	memcpy(line, p, len);
	line[len] = 0;
	line[strcspn(line, "\r\n")] = 0;
	if (!strncasecmp(line, "Content-Type: ", 14))
		snprintf(r->ctype, sizeof(r->ctype), "%s", line + 14);
	if (!strncasecmp(line, "Allow: ", 7))
		snprintf(r->allow, sizeof(r->allow), "%s", line + 7);
	return len;
}

/* One request; method NULL is GET; body non-NULL is sent as the request body. */
static struct http_reply http(const char *host, int port, const char *method, const char *path,
			      const char *body)
{
	struct http_reply r = { 0 };
	char url[256];
	CURL *c = curl_easy_init();
	CURLcode rc;

	assert_non_null(c);
	snprintf(url, sizeof(url), "http://%s:%d%s", host, port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	if (method && !strcmp(method, "HEAD"))
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (method)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	rc = curl_easy_perform(c);
	if (rc != CURLE_OK)
		fail_msg("%s %s: %s", method ? method : "GET", url, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
	curl_easy_cleanup(c);
	return r;
}

static struct metrics_server *start_local(void)
{
	char err[256];
	struct metrics_server *s = metrics__start("127.0.0.1:0", err, sizeof(err));

	if (!s)
		fail_msg("metrics__start: %s", err);
	assert_true(metrics__port(s) > 0);
	return s;
}

static char *build_sample(size_t *len)
{
	struct metrics_buf *b = metrics_buf__new();
	const char *t;
	char *copy;

	assert_non_null(b);
	assert_int_equal(metrics_buf__counter(b, "spanprof_samples_total", "Samples taken.",
					      (const char *[]){ "service", "api", NULL }, 42), 0);
	assert_int_equal(metrics_buf__gauge(b, "spanprof_processes", "Processes profiled.", NULL, 3), 0);
	t = metrics_buf__text(b, len);
	assert_non_null(t);
	copy = strdup(t);
	metrics_buf__free(b);
	return copy;
}

static void test_metrics_serve_published_text(void **state)
{
	struct metrics_server *s = start_local();
	struct http_reply r;
	size_t len;
	char *text = build_sample(&len);

	(void)state;
	/* Before anything is published: an empty, valid exposition. */
	r = http("127.0.0.1", metrics__port(s), NULL, "/metrics", NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.len, 0);

	assert_int_equal(metrics__publish(s, text, len), 0);
	r = http("127.0.0.1", metrics__port(s), NULL, "/metrics", NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.ctype, "text/plain; version=0.0.4; charset=utf-8");
	assert_string_equal(r.body, text);

	/* The latest publish wins; the query string does not change the path. */
	assert_int_equal(metrics__publish(s, "x 1\n", 4), 0);
	r = http("127.0.0.1", metrics__port(s), NULL, "/metrics?foo=bar", NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "x 1\n");

	r = http("127.0.0.1", metrics__port(s), "HEAD", "/metrics", NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.len, 0);
	free(text);
	metrics__stop(s);
}

static void test_metrics_healthz_fresh_and_stale(void **state)
{
	struct metrics_server *s = start_local();
	struct http_reply r;

	(void)state;
	/* No heartbeat yet: the start counts as one. */
	r = http("127.0.0.1", metrics__port(s), NULL, "/healthz", NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "ok\n");

	metrics__heartbeat(s, now_ns() - 31ull * 1000000000ull);
	r = http("127.0.0.1", metrics__port(s), NULL, "/healthz", NULL);
	assert_int_equal(r.status, 503);
	assert_non_null(strstr(r.body, "stale: last heartbeat 31."));

	metrics__heartbeat(s, now_ns());
	r = http("127.0.0.1", metrics__port(s), NULL, "/healthz", NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "ok\n");
	metrics__stop(s);
}

static void test_metrics_healthz_custom_staleness(void **state)
{
	struct metrics_opts o = { .addr = "127.0.0.1:0", .stale_ns = 1000000000ull };
	char err[256];
	struct metrics_server *s = metrics__start_opts(&o, err, sizeof(err));
	struct http_reply r;

	(void)state;
	assert_non_null(s);
	metrics__heartbeat(s, now_ns() - 2000000000ull);
	r = http("127.0.0.1", metrics__port(s), NULL, "/healthz", NULL);
	assert_int_equal(r.status, 503);
	assert_non_null(strstr(r.body, "limit 1.0 s"));
	metrics__stop(s);
}

static void test_metrics_not_found_and_bad_method(void **state)
{
	struct metrics_server *s = start_local();
	int port = metrics__port(s);
	struct http_reply r;

	(void)state;
	assert_int_equal(http("127.0.0.1", port, NULL, "/", NULL).status, 404);
	assert_int_equal(http("127.0.0.1", port, NULL, "/metrics/", NULL).status, 404);
	assert_int_equal(http("127.0.0.1", port, NULL, "/metricsx", NULL).status, 404);
	assert_int_equal(http("127.0.0.1", port, "POST", "/nope", "a=b").status, 404);

	r = http("127.0.0.1", port, "POST", "/metrics", "a=b");
	assert_int_equal(r.status, 405);
	assert_string_equal(r.allow, "GET, HEAD");
	assert_int_equal(http("127.0.0.1", port, "DELETE", "/healthz", NULL).status, 405);
	assert_int_equal(http("127.0.0.1", port, "PUT", "/metrics", "x").status, 405);

	/* A GET that carries a body is refused without reading it. */
	assert_int_equal(http("127.0.0.1", port, "GET", "/metrics", "some body").status, 413);

	/* The server still answers afterwards. */
	assert_int_equal(http("127.0.0.1", port, NULL, "/healthz", NULL).status, 200);
	metrics__stop(s);
}

static void expect_bad_addr(const char *addr, const char *msg_part)
{
	char err[256] = "unset";
	struct metrics_server *s;

	errno = 0;
	s = metrics__start(addr, err, sizeof(err));
	if (s) {
		metrics__stop(s);
		fail_msg("\"%s\" was accepted", addr ? addr : "(null)");
	}
	assert_int_not_equal(errno, 0);
	assert_null(strchr(err, '\n'));
	if (!strstr(err, msg_part))
		fail_msg("\"%s\": message \"%s\" lacks \"%s\"", addr ? addr : "(null)", err, msg_part);
}

static void test_metrics_bad_address(void **state)
{
	(void)state;
	expect_bad_addr(NULL, "empty");
	expect_bad_addr("", "empty");
	expect_bad_addr("9090", "HOST:PORT");
	expect_bad_addr("127.0.0.1", "HOST:PORT");
	expect_bad_addr("127.0.0.1:", "port");
	expect_bad_addr("127.0.0.1:99999", "port");
	expect_bad_addr("127.0.0.1:-1", "port");
	expect_bad_addr("127.0.0.1:90x", "port");
	expect_bad_addr("::1:9090", "[ADDR]:PORT");
	expect_bad_addr("[::1]9090", "[IPV6]:PORT");
	expect_bad_addr("[::1", "[IPV6]:PORT");
	expect_bad_addr("1.2.3.4.5:80", "numeric");
	expect_bad_addr("metrics.example:80", "numeric");
	expect_bad_addr("[127.0.0.1x]:80", "numeric");
	/* 192.0.2.1 (TEST-NET-1) is not an address of this host. */
	expect_bad_addr("192.0.2.1:0", "192.0.2.1:0");
}

static void test_metrics_port_in_use(void **state)
{
	struct metrics_server *s = start_local(), *s2;
	char addr[64], err[256];

	(void)state;
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", metrics__port(s));
	s2 = metrics__start(addr, err, sizeof(err));
	assert_null(s2);
	assert_int_equal(errno, EADDRINUSE);
	assert_non_null(strstr(err, "port already in use"));
	metrics__stop(s);
	metrics__stop(NULL);
}

static void test_metrics_any_and_ipv6(void **state)
{
	char err[256];
	struct metrics_server *s = metrics__start(":0", err, sizeof(err));
	int fd;

	(void)state;
	if (!s)
		fail_msg(":0: %s", err);
	/* Every address: reached over IPv4 loopback (and IPv6 when the host has it). */
	assert_int_equal(http("127.0.0.1", metrics__port(s), NULL, "/healthz", NULL).status, 200);
	metrics__stop(s);

	s = metrics__start("localhost:0", err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(http("127.0.0.1", metrics__port(s), NULL, "/healthz", NULL).status, 200);
	metrics__stop(s);

	fd = socket(AF_INET6, SOCK_STREAM, 0);
	if (fd < 0)
		return;	/* no IPv6 here */
	close(fd);
	s = metrics__start("[::1]:0", err, sizeof(err));
	if (!s && strstr(err, "Cannot assign"))
		return;	/* IPv6 without ::1 */
	if (!s)
		fail_msg("[::1]:0: %s", err);
	assert_int_equal(http("[::1]", metrics__port(s), NULL, "/healthz", NULL).status, 200);
	metrics__stop(s);
}

/* A client that sends half a request and stalls holds one slot only, and only until the timeout. */
static void test_metrics_slow_client(void **state)
{
	struct metrics_opts o = { .addr = "127.0.0.1:0", .timeout_s = 3 };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char err[256], buf[64];
	struct metrics_server *s = metrics__start_opts(&o, err, sizeof(err));
	struct pollfd pfd;
	int fd;

	(void)state;
	assert_non_null(s);
	sa.sin_port = htons(metrics__port(s));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(fd, "GET /metr", 9), 9);

	/* Answered while the stalled connection still holds its slot: not after its timeout. */
	assert_int_equal(http("127.0.0.1", metrics__port(s), NULL, "/healthz", NULL).status, 200);
	pfd.fd = fd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 0), 0);

	/* The stalled connection is closed by the server after its 3 s of silence. */
	assert_int_equal(poll(&pfd, 1, 15000), 1);
	assert_true(read(fd, buf, sizeof(buf)) <= 0);
	close(fd);
	metrics__stop(s);
}

static void test_metrics_publish_many(void **state)
{
	struct metrics_server *s = start_local();
	char text[64];
	int i, n;

	(void)state;
	for (i = 0; i < 200; i++) {
		n = snprintf(text, sizeof(text), "spanprof_iteration %d\n", i);
		assert_int_equal(metrics__publish(s, text, n), 0);
		metrics__heartbeat(s, now_ns());
		if (i % 50 == 0)
			assert_string_equal(http("127.0.0.1", metrics__port(s), NULL, "/metrics", NULL).body,
					    text);
	}
	metrics__stop(s);
}

/* ---- builder ------------------------------------------------------------------------------- */

static void test_metrics_buf_groups_families(void **state)
{
	struct metrics_buf *b = metrics_buf__new();
	const char *t;
	size_t len;

	(void)state;
	/* Interleaved on purpose: the output must still have each family in one group. */
	assert_int_equal(metrics_buf__counter(b, "a_total", "A things.",
					      (const char *[]){ "k", "1", NULL }, 1), 0);
	assert_int_equal(metrics_buf__gauge(b, "b", "B things.", NULL, 2.5), 0);
	assert_int_equal(metrics_buf__counter(b, "a_total", "ignored second help",
					      (const char *[]){ "k", "2", NULL }, 2), 0);
	assert_int_equal(metrics_buf__gauge(b, "b", NULL,
					    (const char *[]){ "x", "y", "z", "w", NULL }, -3), 0);
	t = metrics_buf__text(b, &len);
	assert_non_null(t);
	assert_string_equal(t,
			    "# HELP a_total A things.\n"
			    "# TYPE a_total counter\n"
			    "a_total{k=\"1\"} 1\n"
			    "a_total{k=\"2\"} 2\n"
			    "# HELP b B things.\n"
			    "# TYPE b gauge\n"
			    "b 2.5\n"
			    "b{x=\"y\",z=\"w\"} -3\n");
	assert_int_equal(len, strlen(t));
	/* text() is repeatable, and reset empties. */
	assert_string_equal(metrics_buf__text(b, NULL), t);
	metrics_buf__reset(b);
	assert_string_equal(metrics_buf__text(b, &len), "");
	assert_int_equal(len, 0);
	assert_int_equal(metrics_buf__gauge(b, "c", "C.", NULL, 1), 0);
	assert_string_equal(metrics_buf__text(b, NULL), "# HELP c C.\n# TYPE c gauge\nc 1\n");
	metrics_buf__free(b);
	metrics_buf__free(NULL);
}

static void test_metrics_buf_escaping(void **state)
{
	struct metrics_buf *b = metrics_buf__new();

	(void)state;
	assert_int_equal(metrics_buf__gauge(b, "g", "a \\ b\nc \"q\"",
					    (const char *[]){ "v", "back\\slash \"quoted\"\nnext", NULL },
					    1), 0);
	/* Invalid UTF-8 (a lone continuation byte, a truncated sequence, an overlong '/') becomes
	 * U+FFFD; valid multi-byte text stays. */
	assert_int_equal(metrics_buf__gauge(b, "g", NULL,
					    (const char *[]){ "v", "\x80 caf\xc3\xa9 \xe2\x82 \xc0\xaf", NULL },
					    2), 0);
	assert_string_equal(metrics_buf__text(b, NULL),
			    "# HELP g a \\\\ b\\nc \"q\"\n"
			    "# TYPE g gauge\n"
			    "g{v=\"back\\\\slash \\\"quoted\\\"\\nnext\"} 1\n"
			    "g{v=\"\xef\xbf\xbd caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\"} 2\n");
	metrics_buf__free(b);
}

static void test_metrics_buf_rejects(void **state)
{
	struct metrics_buf *b = metrics_buf__new();

	(void)state;
	assert_int_equal(metrics_buf__gauge(b, "", NULL, NULL, 1), -EINVAL);
	assert_int_equal(metrics_buf__gauge(b, "9lives", NULL, NULL, 1), -EINVAL);
	assert_int_equal(metrics_buf__gauge(b, "has-dash", NULL, NULL, 1), -EINVAL);
	assert_int_equal(metrics_buf__gauge(b, "g", NULL, (const char *[]){ "a:b", "v", NULL }, 1),
			 -EINVAL);
	assert_int_equal(metrics_buf__gauge(b, "g", NULL, (const char *[]){ "__name__", "v", NULL }, 1),
			 -EINVAL);
	assert_int_equal(metrics_buf__gauge(b, "g", NULL,
					    (const char *[]){ "a", "1", "a", "2", NULL }, 1), -EINVAL);
	assert_int_equal(metrics_buf__gauge(b, "g", NULL, (const char *[]){ "odd", NULL }, 1), -EINVAL);
	assert_int_equal(metrics_buf__counter(b, "c_total", "C.", NULL, -1), -EINVAL);
	assert_int_equal(metrics_buf__counter(b, "c_total", "C.", NULL, NAN), -EINVAL);
	/* What promtool refuses: a counter not named *_total, a gauge named so, no help. */
	assert_int_equal(metrics_buf__counter(b, "c", "C.", NULL, 1), -EINVAL);
	assert_int_equal(metrics_buf__counter(b, "_total", "C.", NULL, 1), -EINVAL);
	assert_int_equal(metrics_buf__gauge(b, "g_total", "G.", NULL, 1), -EINVAL);
	assert_int_equal(metrics_buf__counter(b, "c_total", NULL, NULL, 1), -EINVAL);
	assert_int_equal(metrics_buf__counter(b, "c_total", "", NULL, 1), -EINVAL);
	assert_int_equal(metrics_buf__counter(b, "c_total", "C.", NULL, 1), 0);
	/* A name keeps its first type. */
	assert_int_equal(metrics_buf__gauge(b, "c_total", "G.", NULL, 1), -EINVAL);
	/* Colons are allowed in metric names (recording rules use them). */
	assert_int_equal(metrics_buf__gauge(b, "job:x:rate5m", "R.", NULL, 1), 0);
	/* Nothing from the refused calls was written. */
	assert_string_equal(metrics_buf__text(b, NULL),
			    "# HELP c_total C.\n# TYPE c_total counter\nc_total 1\n"
			    "# HELP job:x:rate5m R.\n# TYPE job:x:rate5m gauge\njob:x:rate5m 1\n");
	metrics_buf__free(b);
}

static void test_metrics_buf_values(void **state)
{
	struct metrics_buf *b = metrics_buf__new();

	(void)state;
	metrics_buf__gauge(b, "v", "V.", (const char *[]){ "i", "0", NULL }, 0);
	metrics_buf__gauge(b, "v", NULL, (const char *[]){ "i", "1", NULL }, 0.1);
	metrics_buf__gauge(b, "v", NULL, (const char *[]){ "i", "2", NULL }, 1e-9);
	metrics_buf__gauge(b, "v", NULL, (const char *[]){ "i", "3", NULL }, 9007199254740993.0);
	metrics_buf__gauge(b, "v", NULL, (const char *[]){ "i", "4", NULL }, 1e300);
	metrics_buf__gauge(b, "v", NULL, (const char *[]){ "i", "5", NULL }, INFINITY);
	metrics_buf__gauge(b, "v", NULL, (const char *[]){ "i", "6", NULL }, -INFINITY);
	metrics_buf__gauge(b, "v", NULL, (const char *[]){ "i", "7", NULL }, NAN);
	metrics_buf__counter(b, "c_total", "C.", NULL, 18446744073709551615.0);
	metrics_buf__counter(b, "c_total", NULL, (const char *[]){ "x", "inf", NULL }, INFINITY);
	assert_string_equal(metrics_buf__text(b, NULL),
			    "# HELP v V.\n"
			    "# TYPE v gauge\n"
			    "v{i=\"0\"} 0\n"
			    "v{i=\"1\"} 0.1\n"
			    "v{i=\"2\"} 1e-09\n"
			    "v{i=\"3\"} 9007199254740992\n"
			    "v{i=\"4\"} 1e+300\n"
			    "v{i=\"5\"} +Inf\n"
			    "v{i=\"6\"} -Inf\n"
			    "v{i=\"7\"} NaN\n"
			    "# HELP c_total C.\n"
			    "# TYPE c_total counter\n"
			    "c_total 1.8446744073709552e+19\n"
			    "c_total{x=\"inf\"} +Inf\n");
	metrics_buf__free(b);
}

static int have_promtool(void)
{
	return system("command -v promtool >/dev/null 2>&1") == 0;
}

/* Run promtool check metrics on text; its exit status, its output in out. */
static int promtool_check(const char *text, size_t len, char *out, size_t outlen)
{
	char in_path[64], out_path[80], cmd[256];
	FILE *f;
	size_t n;
	int st;

	assert_int_equal(testutil__temp_file(in_path, sizeof(in_path), text, len), 0);
	snprintf(out_path, sizeof(out_path), "%s.out", in_path);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s > %s 2>&1", in_path, out_path);
	st = system(cmd);
	f = fopen(out_path, "r");
	n = f ? fread(out, 1, outlen - 1, f) : 0;
	out[n] = 0;
	if (f)
		fclose(f);
	unlink(in_path);
	unlink(out_path);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_metrics_buf_promtool_accepts(void **state)
{
	struct metrics_buf *b;
	char out[4096];
	const char *t;
	size_t len;
	int i, rc;

	(void)state;
	if (!have_promtool()) {
		print_message("promtool not installed (Debian package prometheus): skipped\n");
		skip();
	}
	b = metrics_buf__new();
	for (i = 0; i < 3; i++) {
		char pid[16];

		snprintf(pid, sizeof(pid), "%d", 100 + i);
		metrics_buf__counter(b, "spanprof_samples_total", "CPU samples taken, per process.",
				     (const char *[]){ "pid", pid, "service", i ? "a\\b\"c\nd" : "\xff", NULL },
				     i * 10);
		metrics_buf__gauge(b, "spanprof_queue_bytes", "Bytes waiting to be exported.\nSecond line.",
				   (const char *[]){ "exporter", i ? "pyroscope" : "otlp", "pid", pid, NULL },
				   i * 0.5);
	}
	metrics_buf__counter(b, "spanprof_lost_total", "Samples lost \\ by cause.",
			     (const char *[]){ "cause", "ringbuf", NULL }, 0);
	metrics_buf__gauge(b, "spanprof_up", "1 while the agent runs.", NULL, 1);
	{
		struct metrics_hist h = { 0 };

		metrics_hist__observe(&h, 0.02);
		metrics_hist__observe(&h, 120);
		metrics_buf__histogram(b, "spanprof_export_latency_seconds", "Latency.",
				       (const char *[]){ "exporter", "otlp", NULL }, &h);
		metrics_buf__histogram(b, "spanprof_export_latency_seconds", NULL,
				       (const char *[]){ "exporter", "pyroscope", NULL }, &h);
		metrics_buf__histogram(b, "spanprof_window_build_seconds", "Build time.", NULL, &h);
	}
	assert_int_equal(metrics_buf__process(b), 0);
	metrics_buf__gauge(b, "spanprof_ratio", "Odd values.", (const char *[]){ "k", "nan", NULL }, NAN);
	metrics_buf__gauge(b, "spanprof_ratio", "Odd values.", (const char *[]){ "k", "inf", NULL },
			   -INFINITY);
	t = metrics_buf__text(b, &len);
	assert_non_null(t);
	rc = promtool_check(t, len, out, sizeof(out));
	if (rc != 0)
		fail_msg("promtool check metrics exit %d:\n%s\ninput:\n%s", rc, out, t);

	/* The check is not vacuous: promtool refuses a family split in two groups. */
	t = "# TYPE x gauge\nx{a=\"1\"} 1\n# TYPE y gauge\ny 1\nx{a=\"2\"} 2\n";
	rc = promtool_check(t, strlen(t), out, sizeof(out));
	assert_int_not_equal(rc, 0);
	metrics_buf__free(b);
}

/* A histogram: cumulative buckets up to +Inf (= the count), _sum and _count, le after the
 * series' labels; observations on a bound fall in its bucket. */
static void test_metrics_buf_histogram(void **state)
{
	struct metrics_buf *b = metrics_buf__new();
	struct metrics_hist h = { 0 };
	const char *t;

	(void)state;
	metrics_hist__observe(&h, 0.001);	/* on the first bound */
	metrics_hist__observe(&h, 0.3);
	metrics_hist__observe(&h, 0.3);
	metrics_hist__observe(&h, 100);		/* past the last */
	assert_int_equal(h.count, 4);
	assert_int_equal(metrics_buf__histogram(b, "x_seconds", "Latency.",
						(const char *[]){ "exporter", "otlp", NULL }, &h), 0);
	t = metrics_buf__text(b, NULL);
	assert_non_null(t);
	assert_non_null(strstr(t, "# TYPE x_seconds histogram\n"));
	assert_non_null(strstr(t, "x_seconds_bucket{exporter=\"otlp\",le=\"0.001\"} 1\n"));
	assert_non_null(strstr(t, "x_seconds_bucket{exporter=\"otlp\",le=\"0.25\"} 1\n"));
	assert_non_null(strstr(t, "x_seconds_bucket{exporter=\"otlp\",le=\"0.5\"} 3\n"));
	assert_non_null(strstr(t, "x_seconds_bucket{exporter=\"otlp\",le=\"60\"} 3\n"));
	assert_non_null(strstr(t, "x_seconds_bucket{exporter=\"otlp\",le=\"+Inf\"} 4\n"));
	assert_non_null(strstr(t, "x_seconds_sum{exporter=\"otlp\"} 100.601\n"));
	assert_non_null(strstr(t, "x_seconds_count{exporter=\"otlp\"} 4\n"));
	/* without labels, le alone */
	assert_int_equal(metrics_buf__histogram(b, "y_seconds", "Build.", NULL, &h), 0);
	t = metrics_buf__text(b, NULL);
	assert_non_null(strstr(t, "\ny_seconds_bucket{le=\"+Inf\"} 4\n"));
	assert_non_null(strstr(t, "\ny_seconds_count 4\n"));
	/* refused: an le label, a reserved suffix, a name used as a gauge */
	assert_int_equal(metrics_buf__histogram(b, "z_seconds", "Z.",
						(const char *[]){ "le", "1", NULL }, &h), -EINVAL);
	assert_int_equal(metrics_buf__histogram(b, "z_total", "Z.", NULL, &h), -EINVAL);
	assert_int_equal(metrics_buf__histogram(b, "z_count", "Z.", NULL, &h), -EINVAL);
	assert_int_equal(metrics_buf__gauge(b, "g", "G.", NULL, 1), 0);
	assert_int_equal(metrics_buf__histogram(b, "g", NULL, NULL, &h), -EINVAL);
	metrics_buf__free(b);
}

/* The process_* metrics of this very process: present and plausible. */
static void test_metrics_buf_process(void **state)
{
	struct metrics_buf *b = metrics_buf__new();
	const char *t, *s;
	double v;

	(void)state;
	assert_int_equal(metrics_buf__process(b), 0);
	t = metrics_buf__text(b, NULL);
	assert_non_null(t);
	assert_non_null(strstr(t, "# TYPE process_cpu_seconds_total counter\n"));
	s = strstr(t, "\nprocess_resident_memory_bytes ");
	assert_non_null(s);
	v = strtod(s + 31, NULL);
	assert_true(v > 100000 && v < 1e10);
	s = strstr(t, "\nprocess_start_time_seconds ");
	assert_non_null(s);
	v = strtod(s + 28, NULL);
	assert_true(fabs(v - time(NULL)) < 600);	/* this test started just now */
	s = strstr(t, "\nprocess_open_fds ");
	assert_non_null(s);
	assert_true(strtod(s + 18, NULL) >= 3);
	assert_non_null(strstr(t, "\nprocess_max_fds "));
	assert_non_null(strstr(t, "\nprocess_virtual_memory_bytes "));
	metrics_buf__free(b);
}

static int setup(void **state)
{
	(void)state;
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	curl_global_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_serve_published_text),
		cmocka_unit_test(test_metrics_healthz_fresh_and_stale),
		cmocka_unit_test(test_metrics_healthz_custom_staleness),
		cmocka_unit_test(test_metrics_not_found_and_bad_method),
		cmocka_unit_test(test_metrics_bad_address),
		cmocka_unit_test(test_metrics_port_in_use),
		cmocka_unit_test(test_metrics_any_and_ipv6),
		cmocka_unit_test(test_metrics_slow_client),
		cmocka_unit_test(test_metrics_publish_many),
		cmocka_unit_test(test_metrics_buf_groups_families),
		cmocka_unit_test(test_metrics_buf_escaping),
		cmocka_unit_test(test_metrics_buf_rejects),
		cmocka_unit_test(test_metrics_buf_values),
		cmocka_unit_test(test_metrics_buf_histogram),
		cmocka_unit_test(test_metrics_buf_process),
		cmocka_unit_test(test_metrics_buf_promtool_accepts),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
