/* test_diagipc.c: unit tests for perfmap/diagipc (wire bytes, reply parsing, socket discovery, a fake runtime server). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "diagipc.h"
#include "dotnet.h"
#include "procfs.h"
#include "testutil.h"

/* Replies captured from .NET 10.0.12 (EnablePerfMap type 3, and type 7 -> E_INVALIDARG). */
static const uint8_t REPLY_OK[24] = {
	'D', 'O', 'T', 'N', 'E', 'T', '_', 'I', 'P', 'C', '_', 'V', '1', 0,
	0x18, 0x00, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};
static const uint8_t REPLY_EINVAL[24] = {
	'D', 'O', 'T', 'N', 'E', 'T', '_', 'I', 'P', 'C', '_', 'V', '1', 0,
	0x18, 0x00, 0xff, 0xff, 0x00, 0x00, 0x57, 0x00, 0x07, 0x80,
};
static const uint8_t REQ_ENABLE_3[24] = {
	'D', 'O', 'T', 'N', 'E', 'T', '_', 'I', 'P', 'C', '_', 'V', '1', 0,
	0x18, 0x00, 0x04, 0x05, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
};

static void test_diagipc_encode_enable(void **state)
{
	uint8_t buf[64];

	(void)state;
	memset(buf, 0xAA, sizeof(buf));
	assert_int_equal(diagipc__encode_enable_perfmap(DIAGIPC_PERFMAP_PERFMAP, buf, sizeof(buf)), 24);
	assert_memory_equal(buf, REQ_ENABLE_3, 24);
	assert_int_equal(buf[24], 0xAA);	/* nothing written past the message */
	assert_int_equal(diagipc__encode_enable_perfmap(0x01020304, buf, sizeof(buf)), 24);
	assert_int_equal(buf[20], 0x04);
	assert_int_equal(buf[21], 0x03);
	assert_int_equal(buf[22], 0x02);
	assert_int_equal(buf[23], 0x01);
	assert_int_equal(diagipc__encode_enable_perfmap(1, buf, 23), -ENOSPC);
}

static void test_diagipc_encode_disable(void **state)
{
	static const uint8_t want[20] = {
		'D', 'O', 'T', 'N', 'E', 'T', '_', 'I', 'P', 'C', '_', 'V', '1', 0,
		0x14, 0x00, 0x04, 0x06, 0x00, 0x00,
	};
	uint8_t buf[20];

	(void)state;
	assert_int_equal(diagipc__encode_disable_perfmap(buf, sizeof(buf)), 20);
	assert_memory_equal(buf, want, 20);
	assert_int_equal(diagipc__encode_disable_perfmap(buf, 19), -ENOSPC);
}

static void test_diagipc_encode_limits(void **state)
{
	uint8_t *big = calloc(1, 70000), *payload = calloc(1, 70000);

	(void)state;
	assert_non_null(big);
	assert_non_null(payload);
	assert_int_equal(diagipc__encode(4, 0, payload, 65515, big, 70000), 65535);
	assert_int_equal(big[14], 0xff);
	assert_int_equal(big[15], 0xff);
	assert_int_equal(diagipc__encode(4, 0, payload, 65516, big, 70000), -EMSGSIZE);
	assert_int_equal(diagipc__encode(4, 0, NULL, 4, big, 70000), -EINVAL);
	assert_int_equal(diagipc__encode(4, 0, NULL, 0, NULL, 0), -EINVAL);
	free(big);
	free(payload);
}

static void test_diagipc_parse_header(void **state)
{
	struct diagipc_header h;
	uint8_t buf[24];

	(void)state;
	assert_int_equal(diagipc__parse_header(REQ_ENABLE_3, 24, &h), 0);
	assert_int_equal(h.size, 24);
	assert_int_equal(h.command_set, 4);
	assert_int_equal(h.command_id, 5);
	assert_int_equal(h.reserved, 0);
	assert_int_equal(diagipc__parse_header(REQ_ENABLE_3, 19, &h), -ENODATA);
	memcpy(buf, REQ_ENABLE_3, 24);
	buf[13] = 'x';	/* the magic's NUL is part of the magic */
	assert_int_equal(diagipc__parse_header(buf, 24, &h), -EPROTO);
	memcpy(buf, REQ_ENABLE_3, 24);
	buf[14] = 19;
	assert_int_equal(diagipc__parse_header(buf, 24, &h), -EPROTO);
}

static void test_diagipc_parse_reply(void **state)
{
	uint32_t hr = 1234;
	uint8_t buf[32];

	(void)state;
	assert_int_equal(diagipc__parse_hresult_reply(REPLY_OK, 24, &hr), 0);
	assert_int_equal(hr, 0);
	assert_int_equal(diagipc__parse_hresult_reply(REPLY_EINVAL, 24, &hr), -EREMOTEIO);
	assert_int_equal(hr, DIAGIPC_E_INVALIDARG);
	assert_int_equal(diagipc__parse_hresult_reply(REPLY_OK, 24, NULL), 0);
	/* truncated */
	assert_int_equal(diagipc__parse_hresult_reply(REPLY_OK, 23, &hr), -EPROTO);
	assert_int_equal(diagipc__parse_hresult_reply(REPLY_OK, 10, &hr), -EPROTO);
	/* garbage magic */
	memcpy(buf, REPLY_OK, 24);
	memcpy(buf, "HTTP/1.1 200 ", 13);
	assert_int_equal(diagipc__parse_hresult_reply(buf, 24, &hr), -EPROTO);
	/* not the server command set */
	memcpy(buf, REPLY_OK, 24);
	buf[16] = 0x04;
	assert_int_equal(diagipc__parse_hresult_reply(buf, 24, &hr), -EPROTO);
	/* unknown response id */
	memcpy(buf, REPLY_OK, 24);
	buf[17] = 0x01;
	assert_int_equal(diagipc__parse_hresult_reply(buf, 24, &hr), -EPROTO);
	/* a size other than header + u32 */
	memcpy(buf, REPLY_OK, 24);
	buf[14] = 28;
	assert_int_equal(diagipc__parse_hresult_reply(buf, 28, &hr), -EPROTO);
}

static void test_diagipc_parse_socket_name(void **state)
{
	uint64_t key = 0;

	(void)state;
	assert_int_equal(diagipc__parse_socket_name("dotnet-diagnostic-7-53834-socket", 7, &key), 0);
	assert_int_equal(key, 53834);
	assert_int_equal(diagipc__parse_socket_name(
		"dotnet-diagnostic-1-18446744073709551615-socket", 1, &key), 0);
	assert_true(key == UINT64_MAX);
	assert_int_equal(diagipc__parse_socket_name(
		"dotnet-diagnostic-1-18446744073709551616-socket", 1, &key), -EINVAL);
	assert_int_equal(diagipc__parse_socket_name("dotnet-diagnostic-77-1-socket", 7, &key),
			 -EINVAL);
	assert_int_equal(diagipc__parse_socket_name("dotnet-diagnostic-7-1-socket", 77, &key),
			 -EINVAL);
	assert_int_equal(diagipc__parse_socket_name("dotnet-diagnostic-7--socket", 7, &key), -EINVAL);
	assert_int_equal(diagipc__parse_socket_name("dotnet-diagnostic-7-1-socketx", 7, &key),
			 -EINVAL);
	assert_int_equal(diagipc__parse_socket_name("dotnet-diagnostic-7-1", 7, &key), -EINVAL);
	assert_int_equal(diagipc__parse_socket_name("dotnet-dsrouter-7-1-socket", 7, &key), -EINVAL);
	assert_int_equal(diagipc__parse_socket_name(
		"dotnet-diagnostic-99999999999999-1-socket", 7, &key), -EINVAL);
}

/* ---- fixtures: a fake container root with diagnostic sockets ---------------------------- */

struct server {
	int listen_fd;
	pthread_t thread;
	const uint8_t *reply;	/* bytes sent after the request arrives */
	size_t reply_len;
	int hold_ms;		/* keep the connection open this long after replying */
	uint8_t got[64];
	size_t got_len;
};

struct fixture {
	char root[PATH_MAX];
	int root_fd;
	struct diagipc_target t;
	struct server srv;
	int have_server;
	char extra[PATH_MAX + 64];	/* a file created outside the root, removed at teardown */
};

static void path_in(const struct fixture *fx, const char *rel, char *out, size_t len)
{
	testutil__path(out, len, fx->root, rel);
}

/* Bind a listening unix socket at <root>/<rel>; returns its fd. */
static int make_socket_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(s >= 0);
	assert_true(strlen(path) < sizeof(sa.sun_path));
	strcpy(sa.sun_path, path);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s, 4), 0);
	return s;
}

static void set_mtime(const char *path, time_t sec)
{
	struct timespec ts[2] = { { sec, 0 }, { sec, 0 } };

	assert_int_equal(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static int setup_root(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	assert_non_null(testutil__mkdtemp(fx->root, sizeof(fx->root)));
	testutil__mkdirs(fx->root, "tmp");
	fx->root_fd = open(fx->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fx->root_fd >= 0);
	fx->t.root_fd = fx->root_fd;
	fx->t.pid = getpid();	/* the fake server runs in this process */
	fx->t.nspid = 7;
	fx->t.key = 0;
	fx->t.timeout_ms = 2000;
	strcpy(fx->t.dir, "/tmp");
	fx->srv.listen_fd = -1;
	*state = fx;
	return 0;
}

static void server_stop(struct server *srv)
{
	pthread_join(srv->thread, NULL);
	close(srv->listen_fd);
}

static int teardown_root(void **state)
{
	struct fixture *fx = *state;

	if (fx->have_server)
		server_stop(&fx->srv);
	close(fx->root_fd);
	if (fx->extra[0])
		unlink(fx->extra);
	assert_int_equal(testutil__rm_rf(fx->root), 0);
	free(fx);
	return 0;
}

static void test_diagipc_find_socket(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX + 64], name[256];
	int a, b, c;

	/* two real sockets of nspid 7 (stale + current), one of nspid 8, decoys */
	path_in(fx, "tmp/dotnet-diagnostic-7-111-socket", path, sizeof(path));
	a = make_socket_at(path);
	set_mtime(path, 1000);
	path_in(fx, "tmp/dotnet-diagnostic-7-222-socket", path, sizeof(path));
	b = make_socket_at(path);
	set_mtime(path, 2000);
	path_in(fx, "tmp/dotnet-diagnostic-8-333-socket", path, sizeof(path));
	c = make_socket_at(path);
	set_mtime(path, 3000);
	path_in(fx, "tmp/dotnet-diagnostic-7-444-socket", path, sizeof(path));
	assert_int_equal(symlink("dotnet-diagnostic-7-111-socket", path), 0);
	path_in(fx, "tmp/dotnet-diagnostic-7-555-socket", path, sizeof(path));
	close(open(path, O_CREAT | O_WRONLY, 0600));
	set_mtime(path, 9000);

	fx->t.key = 111;	/* the key names the stale-looking one: it wins */
	assert_int_equal(diagipc__find_socket(&fx->t, name, sizeof(name)), 0);
	assert_string_equal(name, "dotnet-diagnostic-7-111-socket");
	fx->t.key = 999;	/* no key match: newest socket (not the newer regular file) */
	assert_int_equal(diagipc__find_socket(&fx->t, name, sizeof(name)), 0);
	assert_string_equal(name, "dotnet-diagnostic-7-222-socket");
	fx->t.key = 444;	/* a symlink never counts, even with the right key */
	assert_int_equal(diagipc__find_socket(&fx->t, name, sizeof(name)), 0);
	assert_string_equal(name, "dotnet-diagnostic-7-222-socket");
	fx->t.nspid = 8;
	fx->t.key = 0;
	assert_int_equal(diagipc__find_socket(&fx->t, name, sizeof(name)), 0);
	assert_string_equal(name, "dotnet-diagnostic-8-333-socket");
	assert_int_equal(diagipc__find_socket(&fx->t, name, 10), -ENAMETOOLONG);
	fx->t.nspid = 9;
	assert_int_equal(diagipc__find_socket(&fx->t, name, sizeof(name)), -ENOENT);
	close(a);
	close(b);
	close(c);
}

static void test_diagipc_find_socket_dir_symlink(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX + 64], name[256];
	int s;

	path_in(fx, "tmp/dotnet-diagnostic-7-1-socket", path, sizeof(path));
	s = make_socket_at(path);
	path_in(fx, "tmplink", path, sizeof(path));
	assert_int_equal(symlink("tmp", path), 0);
	strcpy(fx->t.dir, "/tmplink");
	assert_int_equal(diagipc__find_socket(&fx->t, name, sizeof(name)), -ELOOP);
	/* ".." stays inside the root */
	strcpy(fx->t.dir, "/../../tmp");
	assert_int_equal(diagipc__find_socket(&fx->t, name, sizeof(name)), 0);
	assert_string_equal(name, "dotnet-diagnostic-7-1-socket");
	close(s);
}

static void test_diagipc_connect_refuses_symlink(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX + 64];
	int s, c;

	path_in(fx, "tmp/dotnet-diagnostic-7-1-socket", path, sizeof(path));
	s = make_socket_at(path);
	path_in(fx, "tmp/dotnet-diagnostic-7-2-socket", path, sizeof(path));
	assert_int_equal(symlink("dotnet-diagnostic-7-1-socket", path), 0);
	assert_int_equal(diagipc__connect(&fx->t, "dotnet-diagnostic-7-2-socket"), -ELOOP);
	path_in(fx, "tmp/dotnet-diagnostic-7-3-socket", path, sizeof(path));
	close(open(path, O_CREAT | O_WRONLY, 0600));
	assert_int_equal(diagipc__connect(&fx->t, "dotnet-diagnostic-7-3-socket"), -EINVAL);
	assert_int_equal(diagipc__connect(&fx->t, "../tmp/dotnet-diagnostic-7-1-socket"), -EINVAL);
	c = diagipc__connect(&fx->t, "dotnet-diagnostic-7-1-socket");
	assert_true(c >= 0);
	close(c);
	close(s);
}

/* ---- fake runtime: accept one connection, record the request, send a canned reply ------- */

static void *server_main(void *arg)
{
	struct server *srv = arg;
	int c = accept(srv->listen_fd, NULL, NULL);

	if (c < 0)
		return NULL;
	/* The client sends one request of at least a header; read what arrives within 1 s. */
	for (;;) {
		struct timeval tv = { 1, 0 };
		ssize_t n;

		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		n = recv(c, srv->got + srv->got_len, sizeof(srv->got) - srv->got_len, 0);
		if (n <= 0)
			break;
		srv->got_len += (size_t)n;
		if (srv->got_len >= DIAGIPC_HEADER_LEN &&
		    srv->got_len >= (size_t)(srv->got[14] | (srv->got[15] << 8)))
			break;
	}
	if (srv->reply_len)
		(void)send(c, srv->reply, srv->reply_len, MSG_NOSIGNAL);
	if (srv->hold_ms)
		usleep((useconds_t)srv->hold_ms * 1000);
	close(c);
	return NULL;
}

static void server_start(struct fixture *fx, const char *dir_path, int nspid, uint64_t key,
			 const uint8_t *reply, size_t reply_len, int hold_ms)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/dotnet-diagnostic-%d-%llu-socket", dir_path, nspid,
		 (unsigned long long)key);
	fx->srv.listen_fd = make_socket_at(path);
	fx->srv.reply = reply;
	fx->srv.reply_len = reply_len;
	fx->srv.hold_ms = hold_ms;
	assert_int_equal(pthread_create(&fx->srv.thread, NULL, server_main, &fx->srv), 0);
	fx->have_server = 1;
}

static void start_in_root(struct fixture *fx, const uint8_t *reply, size_t len, int hold_ms)
{
	char dir[PATH_MAX + 8];

	path_in(fx, "tmp", dir, sizeof(dir));
	server_start(fx, dir, fx->t.nspid, 4242, reply, len, hold_ms);
}

static int enable3(struct fixture *fx, uint32_t *hr)
{
	uint8_t payload[4] = { 3, 0, 0, 0 };

	return diagipc__command(&fx->t, DIAGIPC_SET_PROCESS, DIAGIPC_PROCESS_ENABLE_PERFMAP,
				payload, sizeof(payload), hr);
}

static void test_diagipc_command_ok(void **state)
{
	struct fixture *fx = *state;
	uint32_t hr = 77;

	start_in_root(fx, REPLY_OK, sizeof(REPLY_OK), 0);
	assert_int_equal(enable3(fx, &hr), 0);
	assert_int_equal(hr, 0);
	server_stop(&fx->srv);
	fx->have_server = 0;
	assert_int_equal(fx->srv.got_len, 24);
	assert_memory_equal(fx->srv.got, REQ_ENABLE_3, 24);
}

static void test_diagipc_command_error_hresult(void **state)
{
	struct fixture *fx = *state;
	uint32_t hr = 0;

	start_in_root(fx, REPLY_EINVAL, sizeof(REPLY_EINVAL), 0);
	assert_int_equal(enable3(fx, &hr), -EREMOTEIO);
	assert_int_equal(hr, 0x80070057u);
}

static void test_diagipc_command_truncated(void **state)
{
	struct fixture *fx = *state;
	uint32_t hr = 0;

	start_in_root(fx, REPLY_OK, 22, 0);	/* closes after 22 bytes */
	assert_int_equal(enable3(fx, &hr), -EPROTO);
}

static void test_diagipc_command_garbage(void **state)
{
	static const uint8_t garbage[24] = "HTTP/1.0 400 Bad Reques";
	struct fixture *fx = *state;
	uint32_t hr = 0;

	start_in_root(fx, garbage, sizeof(garbage), 0);
	assert_int_equal(enable3(fx, &hr), -EPROTO);
}

static void test_diagipc_command_oversized_reply(void **state)
{
	/* A reply announcing a 64 KiB payload is refused without waiting for it. */
	static uint8_t big[24];
	struct fixture *fx = *state;
	uint32_t hr = 0;

	memcpy(big, REPLY_OK, 24);
	big[14] = 0xff;
	big[15] = 0xff;
	start_in_root(fx, big, sizeof(big), 1500);
	fx->t.timeout_ms = 1000;
	assert_int_equal(enable3(fx, &hr), -EPROTO);
}

static void test_diagipc_command_timeout(void **state)
{
	struct fixture *fx = *state;
	uint32_t hr = 0;

	/* The peer holds the connection for 1500 ms and then closes it: only the 200 ms deadline
	 * gives -ETIMEDOUT (a close would be -EPROTO); no clock is asserted. */
	start_in_root(fx, NULL, 0, 1500);	/* reads the request, never answers */
	fx->t.timeout_ms = 200;
	assert_int_equal(enable3(fx, &hr), -ETIMEDOUT);
}

static void test_diagipc_command_wrong_peer(void **state)
{
	struct fixture *fx = *state;
	uint32_t hr = 0;

	start_in_root(fx, REPLY_OK, sizeof(REPLY_OK), 0);
	fx->t.pid = getppid();	/* the listener is this process, not the one we target */
	assert_int_equal(enable3(fx, &hr), -EPERM);
	/* refused before anything was sent */
	server_stop(&fx->srv);
	fx->have_server = 0;
	assert_int_equal(fx->srv.got_len, 0);
}

static void test_diagipc_command_no_socket(void **state)
{
	struct fixture *fx = *state;
	uint32_t hr = 0;

	assert_int_equal(enable3(fx, &hr), -ENOENT);
}

/* The whole path for a real process: TMPDIR and start time read through its /proc/<pid> fd,
 * root from its root link. This test process plays the runtime, serving at
 * <its tmp dir>/dotnet-diagnostic-<pid>-<key>. */
static void test_diagipc_enable_perfmap_process(void **state)
{
	struct fixture *fx = *state;
	char dir[DOTNET_DIR_MAX];
	uint64_t key = 0;
	uint32_t hr = 1;
	int dir_fd, root_fd;

	dir_fd = procfs__open(getpid());
	assert_true(dir_fd >= 0);
	assert_int_equal(dotnet__tmp_dir(dir_fd, dir, sizeof(dir)), 0);
	assert_int_equal(procfs__starttime(dir_fd, &key), 0);
	snprintf(fx->extra, sizeof(fx->extra), "%s/dotnet-diagnostic-%d-%llu-socket", dir,
		 getpid(), (unsigned long long)key);
	unlink(fx->extra);
	server_start(fx, dir, getpid(), key, REPLY_OK, sizeof(REPLY_OK), 0);
	root_fd = procfs__open_root(dir_fd);
	assert_true(root_fd >= 0);
	assert_int_equal(diagipc__enable_perfmap(dir_fd, root_fd, getpid(), getpid(), 1, &hr), 0);
	assert_int_equal(hr, 0);
	server_stop(&fx->srv);
	fx->have_server = 0;
	assert_int_equal(fx->srv.got_len, 24);
	assert_int_equal(fx->srv.got[17], DIAGIPC_PROCESS_ENABLE_PERFMAP);
	assert_int_equal(fx->srv.got[20], 1);
	close(root_fd);
	close(dir_fd);
}

static void test_diagipc_target_init(void **state)
{
	struct diagipc_target t;
	char name[256];
	int dir_fd, root_fd, pid;

	(void)state;
	dir_fd = procfs__open(getpid());
	assert_true(dir_fd >= 0);
	root_fd = procfs__open_root(dir_fd);
	assert_true(root_fd >= 0);
	assert_int_equal(diagipc__target_init(&t, dir_fd, root_fd, getpid(), getpid()), 0);
	assert_int_equal(t.pid, getpid());
	assert_int_equal(t.nspid, getpid());
	assert_int_equal(t.root_fd, root_fd);
	assert_true(t.key > 0);
	assert_int_equal(t.dir[0], '/');
	assert_int_equal(diagipc__target_init(NULL, dir_fd, root_fd, getpid(), getpid()), -EINVAL);
	assert_int_equal(diagipc__target_init(&t, -1, root_fd, getpid(), getpid()), -EINVAL);
	assert_int_equal(diagipc__target_init(&t, AT_FDCWD, root_fd, getpid(), getpid()), -EINVAL);
	assert_int_equal(diagipc__target_init(&t, dir_fd, -1, getpid(), getpid()), -EINVAL);
	assert_int_equal(diagipc__target_init(&t, dir_fd, root_fd, 0, getpid()), -EINVAL);
	assert_int_equal(diagipc__target_init(&t, dir_fd, root_fd, getpid(), 0), -EINVAL);

	/* Never the host's own "/": a target without a root finds and connects to nothing. */
	assert_int_equal(diagipc__target_init(&t, dir_fd, root_fd, getpid(), getpid()), 0);
	t.root_fd = AT_FDCWD;
	assert_int_equal(diagipc__find_socket(&t, name, sizeof(name)), -EINVAL);
	assert_int_equal(diagipc__connect(&t, "dotnet-diagnostic-1-1-socket"), -EINVAL);
	close(root_fd);
	close(dir_fd);

	/* A process that exited: its environment is not read through the fd that outlived it. */
	pid = testutil__fork_paused();
	dir_fd = procfs__open(pid);
	assert_true(dir_fd >= 0);
	root_fd = procfs__open_root(dir_fd);
	assert_true(root_fd >= 0);
	assert_int_equal(testutil__reap(pid), pid);
	assert_true(diagipc__target_init(&t, dir_fd, root_fd, pid, pid) < 0);
	assert_true(diagipc__enable_perfmap(dir_fd, root_fd, pid, pid, 1, NULL) < 0);
	close(root_fd);
	close(dir_fd);
}

int main(void)
{
#define ROOTED(t) cmocka_unit_test_setup_teardown(t, setup_root, teardown_root)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_diagipc_encode_enable),
		cmocka_unit_test(test_diagipc_encode_disable),
		cmocka_unit_test(test_diagipc_encode_limits),
		cmocka_unit_test(test_diagipc_parse_header),
		cmocka_unit_test(test_diagipc_parse_reply),
		cmocka_unit_test(test_diagipc_parse_socket_name),
		ROOTED(test_diagipc_find_socket),
		ROOTED(test_diagipc_find_socket_dir_symlink),
		ROOTED(test_diagipc_connect_refuses_symlink),
		ROOTED(test_diagipc_command_ok),
		ROOTED(test_diagipc_command_error_hresult),
		ROOTED(test_diagipc_command_truncated),
		ROOTED(test_diagipc_command_garbage),
		ROOTED(test_diagipc_command_oversized_reply),
		ROOTED(test_diagipc_command_timeout),
		ROOTED(test_diagipc_command_wrong_peer),
		ROOTED(test_diagipc_command_no_socket),
		ROOTED(test_diagipc_enable_perfmap_process),
		cmocka_unit_test(test_diagipc_target_init),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
