/* fuzz_diagipc.c: libFuzzer target for what a .NET diagnostics server (or a process posing as one)
 * sends spanprof: the reply to a command, parsed from a buffer or read by diagipc__command from a
 * real socket in a fake container root, and the socket names found in its temp directory. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "diagipc.h"
#include "dotnet.h"

/* The reply as diagipc__command takes it: the header alone first, then the rest once the header
 * says the size is right. */
static int read_reply(const uint8_t *buf, size_t len, uint32_t *hr)
{
	struct diagipc_header h;
	int err;

	err = diagipc__parse_header(buf, len < DIAGIPC_HEADER_LEN ? len : DIAGIPC_HEADER_LEN, &h);
	if (err)
		return err;
	assert(h.size >= DIAGIPC_HEADER_LEN);
	if (h.size != DIAGIPC_HEADER_LEN + 4)
		return -EPROTO;
	return diagipc__parse_hresult_reply(buf, len, hr);
}

static void fuzz_reply(const uint8_t *buf, size_t len)
{
	struct diagipc_header h;
	uint32_t hr = 0xdeadbeef;
	uint8_t copy[64];
	int err;

	err = diagipc__parse_hresult_reply(buf, len, &hr);
	assert(err == 0 || err == -EREMOTEIO || err == -EPROTO);
	if (!err || err == -EREMOTEIO) {
		assert(len >= DIAGIPC_HEADER_LEN + 4 && buf[16] == DIAGIPC_SET_SERVER);
		assert(!memcmp(&hr, buf + DIAGIPC_HEADER_LEN, 4));	/* little-endian hosts */
		assert(read_reply(buf, len, NULL) == err);
	}
	err = diagipc__parse_header(buf, len, &h);
	assert(err == 0 || err == -EPROTO || err == -ENODATA);
	/* A reply re-encoded from what was parsed parses the same. */
	if (!err && h.size >= DIAGIPC_HEADER_LEN && len >= h.size && h.size <= sizeof(copy)) {
		int n = diagipc__encode(h.command_set, h.command_id, buf + DIAGIPC_HEADER_LEN,
					h.size - DIAGIPC_HEADER_LEN, copy, sizeof(copy));
		struct diagipc_header h2;

		assert(n == h.size);
		assert(diagipc__parse_header(copy, (size_t)n, &h2) == 0);
		assert(h2.size == h.size && h2.command_set == h.command_set && h2.command_id == h.command_id);
	}
}

/* A socket name as readdir gives it: NUL-terminated, at most NAME_MAX bytes. */
static void fuzz_name(const uint8_t *buf, size_t len, int nspid)
{
	char name[256];
	uint64_t key = 0;

	if (len > sizeof(name) - 1)
		len = sizeof(name) - 1;
	memcpy(name, buf, len);
	name[len] = '\0';
	if (!diagipc__parse_socket_name(name, nspid, &key)) {
		char again[256];
		uint64_t k2;

		assert(!strncmp(name, "dotnet-diagnostic-", 18));
		assert(snprintf(again, sizeof(again), "dotnet-diagnostic-%d-%llu-socket", nspid,
				(unsigned long long)key) > 0);
		assert(!diagipc__parse_socket_name(again, nspid, &k2) && k2 == key);
	}
	(void)dotnet__is_runtime_path(name);
}

/* ---- the reply over a socket: a server thread answers every connection with the input ---- */
#define NSPID 7
#define KEY 12345

static char root[64];		/* the fake root; root/tmp holds the socket */
static int root_fd = -1, listen_fd = -1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const uint8_t *reply;
static size_t reply_len;

static void *serve(void *arg)
{
	for (;;) {
		uint8_t req[64];
		int c = accept(listen_fd, NULL, NULL);

		if (c < 0)
			continue;
		/* The request first, as the runtime reads it, then the reply, then close. */
		(void)!recv(c, req, sizeof(req), 0);
		pthread_mutex_lock(&lock);
		if (reply_len)
			(void)!send(c, reply, reply_len, MSG_NOSIGNAL);
		pthread_mutex_unlock(&lock);
		close(c);
	}
	return NULL;
}

static void cleanup(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/tmp/dotnet-diagnostic-%d-%d-socket", root, NSPID, KEY);
	unlink(path);
	snprintf(path, sizeof(path), "%s/tmp", root);
	rmdir(path);
	rmdir(root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	pthread_t th;

	snprintf(root, sizeof(root), "/tmp/fuzz_diagipc.XXXXXX");
	assert(mkdtemp(root));
	atexit(cleanup);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/tmp", root);
	assert(mkdir(sa.sun_path, 0700) == 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/tmp/dotnet-diagnostic-%d-%d-socket", root,
		 NSPID, KEY);
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert(listen_fd >= 0);
	assert(bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	assert(listen(listen_fd, 16) == 0);
	root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert(root_fd >= 0);
	assert(pthread_create(&th, NULL, serve, NULL) == 0);
	return 0;
}

static void fuzz_socket(const uint8_t *buf, size_t len)
{
	struct diagipc_target t = { .root_fd = root_fd, .pid = getpid(), .nspid = NSPID,
				    .key = KEY, .timeout_ms = 2000, .dir = "/tmp" };
	uint32_t hr = 0;
	int err, want;

	pthread_mutex_lock(&lock);
	reply = buf;
	reply_len = len;
	pthread_mutex_unlock(&lock);
	err = diagipc__command(&t, DIAGIPC_SET_PROCESS, DIAGIPC_PROCESS_DISABLE_PERFMAP, NULL, 0, &hr);
	/* Exactly what the parser says of the first 24 bytes, or -EPROTO for a short reply. */
	want = len < DIAGIPC_HEADER_LEN + 4 ? -EPROTO : read_reply(buf, len, NULL);
	if (want == -ENODATA)
		want = -EPROTO;
	assert(err == want);
	pthread_mutex_lock(&lock);
	reply_len = 0;
	pthread_mutex_unlock(&lock);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int nspid;

	if (size < 2)
		return 0;
	/* data[1]: the namespace pid the name must carry (1..255; the seeds use 7). */
	nspid = data[1] ? data[1] : 1;
	switch (data[0] & 3) {
	case 1:
		fuzz_name(data + 2, size - 2, nspid);
		break;
	case 2:
		fuzz_socket(data + 2, size - 2);
		break;
	default:
		fuzz_reply(data + 2, size - 2);
		break;
	}
	return 0;
}
