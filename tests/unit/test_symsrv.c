/* test_symsrv.c: unit tests for user/symbols/symsrv.c against a local HTTP server (python3's
 * http.server) serving a debug file made at setup time in the debuginfod or the SSQP layout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsym.h"
#include "symsrv.h"
#include "testutil.h"

static char tmp[64];		/* /tmp/test_symsrv.XXXXXX */
static char bid[256], other_bid[256];
static char lib[PATH_MAX], dbg[PATH_MAX], other_dbg[PATH_MAX];
static uint64_t hidden_vaddr;
static pid_t servers[16];	/* killed at teardown too, should a test fail before it stops one */
static int n_servers;

/* ---- helpers -------------------------------------------------------------------------------- */

/* Serves dir on 127.0.0.1 (a free port) until stopped; the port into *port, the pid returned. */
static pid_t serve(const char *dir, int *port)
{
	char pidf[PATH_MAX], portf[PATH_MAX], buf[32];
	pid_t pid = -1;

	testutil__path(pidf, sizeof(pidf), tmp, "server.pid");
	testutil__path(portf, sizeof(portf), tmp, "server.port");
	unlink(portf);
	assert_int_equal(testutil__run(
		"python3 -c 'import http.server as h, os, sys; os.chdir(sys.argv[1]); "
		"s = h.ThreadingHTTPServer((\"127.0.0.1\", 0), h.SimpleHTTPRequestHandler); "
		"open(sys.argv[2] + \".new\", \"w\").write(str(s.server_address[1])); "
		"os.rename(sys.argv[2] + \".new\", sys.argv[2]); s.serve_forever()' %s %s "
		">/dev/null 2>&1 & echo $! > %s", dir, portf, pidf), 0);
	for (int i = 0; i < 100 && !testutil__exists("%s", portf); i++)
		usleep(50000);
	testutil__read_fd(open(portf, O_RDONLY | O_CLOEXEC), buf, sizeof(buf));
	*port = atoi(buf);
	testutil__read_fd(open(pidf, O_RDONLY | O_CLOEXEC), buf, sizeof(buf));
	pid = atoi(buf);
	assert_true(*port > 0 && pid > 0);
	if (n_servers < 16)
		servers[n_servers++] = pid;
	return pid;
}

static void unserve(pid_t pid)
{
	kill(pid, SIGTERM);
}

static struct symsrv *open_srv(const char *url, const char *cache, uint64_t cap)
{
	struct symsrv_opts o = { .n_urls = url ? 1 : 0, .cache_dir = cache, .cache_max_bytes = cap,
				 .timeout_ms = 5000 };
	struct symsrv *s;
	char err[256];

	o.urls[0] = url;
	s = symsrv__new(&o, err, sizeof(err));
	if (!s)
		fail_msg("symsrv__new: %s", err[0] ? err : strerror(errno));
	return s;
}

/* Waits for build id to leave the pending state (5 s at most). */
static enum symsrv_state settle(struct symsrv *s, const char *id)
{
	enum symsrv_state st = symsrv__want(s, id, "libfx.so");

	for (int i = 0; i < 100 && st == SYMSRV_PENDING; i++) {
		symsrv__wait(s, 50);
		st = symsrv__want(s, id, "libfx.so");
	}
	return st;
}

static void cache_dir(char *out, size_t size, const char *name)
{
	testutil__path(out, size, tmp, name);
	testutil__run("rm -rf %s", out);
}

/* The server tree for layout "debuginfod" or "ssqp", with file src as the build id's debug file. */
static void server_tree(char *out, size_t size, const char *name, int ssqp, const char *id,
			const char *src)
{
	char url_path[512];

	testutil__path(out, size, tmp, name);
	assert_int_equal(symsrv__url("", id, ssqp, url_path, sizeof(url_path)), 0);
	assert_int_equal(testutil__run("rm -rf %s && mkdir -p %s$(dirname %s) && cp %s %s%s", out, out,
				       url_path, src, out, url_path), 0);
}

/* ---- fixtures ------------------------------------------------------------------------------- */

static int group_setup(void **state)
{
	char src[PATH_MAX], full[PATH_MAX], other_full[PATH_MAX], cmd[PATH_MAX * 2];
	FILE *p;

	(void)state;
	if (testutil__src_path(src, sizeof(src), "tests/fixtures/elf/fx_lib.c") ||
	    !testutil__mkdtemp(tmp, sizeof(tmp)))
		return -1;
	testutil__path(full, sizeof(full), tmp, "full.so");
	testutil__path(other_full, sizeof(other_full), tmp, "other_full.so");
	testutil__path(lib, sizeof(lib), tmp, "libfx.so");
	testutil__path(dbg, sizeof(dbg), tmp, "libfx.so.debug");
	testutil__path(other_dbg, sizeof(other_dbg), tmp, "other.debug");
	if (testutil__cc("-O1 -g -fPIC -shared -Wl,--build-id=sha1", full, src) ||
	    testutil__cc("-O1 -g -fPIC -shared -Wl,--build-id=md5", other_full, src) ||
	    testutil__run("objcopy --only-keep-debug %s %s && strip --strip-all -o %s %s && "
			  "objcopy --only-keep-debug %s %s", full, dbg, lib, full, other_full,
			  other_dbg))
		return -1;
	testutil__build_id(lib, bid, sizeof(bid));
	testutil__build_id(other_full, other_bid, sizeof(other_bid));
	snprintf(cmd, sizeof(cmd), "nm --defined-only '%s' | awk '$3 == \"fx_lib_hidden\" { print $1 }'",
		 full);
	p = popen(cmd, "r");
	if (!p || fscanf(p, "%" SCNx64, &hidden_vaddr) != 1)
		return -1;
	pclose(p);
	return bid[0] && other_bid[0] ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	for (int i = 0; i < n_servers; i++)
		kill(servers[i], SIGTERM);
	if (tmp[0])
		testutil__rm_rf(tmp);
	return 0;
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_symsrv_urls(void **state)
{
	char u[512];

	(void)state;
	assert_int_equal(symsrv__url("http://h:1/", "ab12", 0, u, sizeof(u)), 0);
	assert_string_equal(u, "http://h:1/buildid/ab12/debuginfo");
	assert_int_equal(symsrv__url("https://msdl.microsoft.com/download/symbols",
				     "180a373d6afbabf0eb1f09be1bc45bd796a71085", 1, u, sizeof(u)), 0);
	assert_string_equal(u, "https://msdl.microsoft.com/download/symbols/_.debug/"
			       "elf-buildid-sym-180a373d6afbabf0eb1f09be1bc45bd796a71085/_.debug");
	/* SSQP keys are 20 bytes: a 16-byte build id is padded with zeros. */
	assert_int_equal(symsrv__url("http://h", "180a373d6afbabf0eb1f09be1bc45bd7", 1, u, sizeof(u)), 0);
	assert_string_equal(u, "http://h/_.debug/elf-buildid-sym-180a373d6afbabf0eb1f09be1bc45bd700000000/_.debug");
	assert_int_equal(symsrv__url("http://h", "00112233445566778899aabbccddeeff0011223344", 1, u,
				     sizeof(u)), -ENAMETOOLONG);
	assert_int_equal(symsrv__url("http://h", "ab", 0, u, 10), -ENAMETOOLONG);
}

/* No server configured anywhere: no symsrv. */
static void test_symsrv_none(void **state)
{
	struct symsrv_opts o = { 0 };
	char err[64];

	(void)state;
	unsetenv("DEBUGINFOD_URLS");
	assert_null(symsrv__new(&o, err, sizeof(err)));
	assert_int_equal(errno, ENODATA);
}

/* Each layout alone serves the file: fetched, checked, cached; then a cache hit with no server. */
static void check_layout(int ssqp)
{
	char tree[PATH_MAX], cache[PATH_MAX], url[64], cached[PATH_MAX + 300];
	struct symsrv_stats st;
	struct elfsym *es, *d;
	struct symsrv *s;
	int port;
	pid_t srv;

	server_tree(tree, sizeof(tree), ssqp ? "srv_ssqp" : "srv_dinfod", ssqp, bid, dbg);
	cache_dir(cache, sizeof(cache), ssqp ? "cache_ssqp" : "cache_dinfod");
	srv = serve(tree, &port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
	s = open_srv(url, cache, 0);
	assert_int_equal(settle(s, bid), SYMSRV_READY);
	d = symsrv__take(s, bid);
	assert_non_null(d);
	assert_null(symsrv__take(s, bid));	/* once */
	symsrv__stats(s, &st);
	assert_int_equal(st.fetched, 1);
	assert_int_equal(st.requested, 1);
	assert_int_equal(st.pending, 0);
	es = elfsym__open(AT_FDCWD, lib);
	assert_non_null(es);
	assert_null(elfsym__lookup_vaddr(es, hidden_vaddr, NULL));
	assert_int_equal(elfsym__attach_debug(es, d), 0);
	assert_string_equal(elfsym__lookup_vaddr(es, hidden_vaddr, NULL), "fx_lib_hidden");
	elfsym__free(es);
	/* A second file with this build id (another container's copy) gets its own, from the cache. */
	assert_int_equal(settle(s, bid), SYMSRV_READY);
	d = symsrv__take(s, bid);
	assert_non_null(d);
	elfsym__free(d);
	symsrv__stats(s, &st);
	assert_int_equal(st.cache_hits, 1);
	assert_int_equal(st.fetched, 1);
	symsrv__free(s);
	unserve(srv);
	snprintf(cached, sizeof(cached), "%s/%s.debug", cache, bid);
	assert_true(testutil__exists("%s", cached));

	/* The server is gone; the cache answers. */
	s = open_srv("http://127.0.0.1:1", cache, 0);
	assert_int_equal(settle(s, bid), SYMSRV_READY);
	symsrv__stats(s, &st);
	assert_int_equal(st.cache_hits, 1);
	assert_int_equal(st.fetched, 0);
	symsrv__free(s);
}

static void test_symsrv_debuginfod_layout(void **state)
{
	(void)state;
	check_layout(0);
}

static void test_symsrv_ssqp_layout(void **state)
{
	(void)state;
	check_layout(1);
}

/* Server down: a counted failure, remembered (not asked again at once), no crash. */
static void test_symsrv_server_down(void **state)
{
	char cache[PATH_MAX], err[256];
	struct symsrv_stats st;
	struct symsrv *s;

	(void)state;
	cache_dir(cache, sizeof(cache), "cache_down");
	s = open_srv("http://127.0.0.1:1", cache, 0);
	assert_int_equal(settle(s, bid), SYMSRV_FAILED);
	symsrv__stats(s, &st);
	assert_int_equal(st.failed, 1);
	assert_true(st.errors >= 1);
	symsrv__last_error(s, err, sizeof(err));
	assert_non_null(strstr(err, "127.0.0.1:1"));
	/* The negative entry holds: no second request. */
	assert_int_equal(symsrv__want(s, bid, "libfx.so"), SYMSRV_FAILED);
	symsrv__wait(s, 100);
	symsrv__stats(s, &st);
	assert_int_equal(st.requested, 1);
	assert_int_equal(st.failed, 1);
	/* Garbage ids are refused without a request. */
	assert_int_equal(symsrv__want(s, "../../etc", "x"), SYMSRV_FAILED);
	symsrv__free(s);
}

/* 404 everywhere is "not found"; a file of another build id is refused, not cached. */
static void test_symsrv_not_found_and_invalid(void **state)
{
	char tree[PATH_MAX], cache[PATH_MAX], url[64];
	struct symsrv_stats st;
	struct symsrv *s;
	int port;
	pid_t srv;

	(void)state;
	server_tree(tree, sizeof(tree), "srv_wrong", 1, bid, other_dbg);	/* the wrong file */
	cache_dir(cache, sizeof(cache), "cache_wrong");
	srv = serve(tree, &port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	s = open_srv(url, cache, 0);
	assert_int_equal(settle(s, bid), SYMSRV_FAILED);
	assert_int_equal(settle(s, other_bid), SYMSRV_FAILED);
	symsrv__stats(s, &st);
	assert_int_equal(st.invalid, 1);
	assert_int_equal(st.not_found, 1);	/* other_bid: 404 in both layouts */
	assert_int_equal(st.fetched, 0);
	assert_false(testutil__exists("%s/%s.debug", cache, bid));
	symsrv__free(s);
	unserve(srv);
}

/* The cache stays under its cap: the least recently used file goes. */
static void test_symsrv_cache_cap(void **state)
{
	char tree[PATH_MAX], cache[PATH_MAX], url[64];
	struct symsrv_stats st;
	struct stat sb;
	struct symsrv *s;
	int port;
	pid_t srv;

	(void)state;
	server_tree(tree, sizeof(tree), "srv_cap", 0, bid, dbg);
	cache_dir(cache, sizeof(cache), "cache_cap");
	assert_int_equal(stat(dbg, &sb), 0);
	/* An old file already there, as big as the new one: both do not fit. */
	testutil__mkdirs(cache, "");
	assert_int_equal(testutil__run("cp %s %s/%s.debug && touch -d '2001-01-01' %s/%s.debug",
				       other_dbg, cache, other_bid, cache, other_bid), 0);
	srv = serve(tree, &port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	s = open_srv(url, cache, sb.st_size + sb.st_size / 2);
	assert_int_equal(settle(s, bid), SYMSRV_READY);
	symsrv__stats(s, &st);
	assert_int_equal(st.evicted, 1);
	assert_true(testutil__exists("%s/%s.debug", cache, bid));
	assert_false(testutil__exists("%s/%s.debug", cache, other_bid));
	elfsym__free(symsrv__take(s, bid));
	symsrv__free(s);
	unserve(srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symsrv_urls),
		cmocka_unit_test(test_symsrv_none),
		cmocka_unit_test(test_symsrv_debuginfod_layout),
		cmocka_unit_test(test_symsrv_ssqp_layout),
		cmocka_unit_test(test_symsrv_server_down),
		cmocka_unit_test(test_symsrv_not_found_and_invalid),
		cmocka_unit_test(test_symsrv_cache_cap),
	};

	signal(SIGPIPE, SIG_IGN);
	unsetenv("DEBUGINFOD_URLS");
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
