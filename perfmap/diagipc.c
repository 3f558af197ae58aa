/* diagipc.c: .NET diagnostics IPC client: encode/parse, socket discovery inside a container root, bounded-time request/reply. */
#include "diagipc.h"
#include "procfs.h"
#include "rootfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SOCKET_PREFIX	"dotnet-diagnostic-"
#define SOCKET_SUFFIX	"-socket"
#define MAX_DIR_ENTRIES	100000	/* a huge /tmp must not stall the profiler */
#define HRESULT_REPLY_LEN (DIAGIPC_HEADER_LEN + 4)

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

int diagipc__encode(uint8_t command_set, uint8_t command_id, const void *payload,
		    size_t payload_len, uint8_t *buf, size_t len)
{
	size_t total;

	if (!buf || (payload_len && !payload))
		return -EINVAL;
	if (payload_len > DIAGIPC_MAX_MESSAGE - DIAGIPC_HEADER_LEN)
		return -EMSGSIZE;
	total = DIAGIPC_HEADER_LEN + payload_len;
	if (len < total)
		return -ENOSPC;
	memcpy(buf, DIAGIPC_MAGIC, DIAGIPC_MAGIC_LEN);	/* includes the NUL */
	put_le16(buf + 14, (uint16_t)total);
	buf[16] = command_set;
	buf[17] = command_id;
	put_le16(buf + 18, 0);
	if (payload_len)
		memcpy(buf + DIAGIPC_HEADER_LEN, payload, payload_len);
	return (int)total;
}

int diagipc__encode_enable_perfmap(uint32_t type, uint8_t *buf, size_t len)
{
	uint8_t le[4] = { (uint8_t)type, (uint8_t)(type >> 8), (uint8_t)(type >> 16),
			  (uint8_t)(type >> 24) };

	return diagipc__encode(DIAGIPC_SET_PROCESS, DIAGIPC_PROCESS_ENABLE_PERFMAP, le, sizeof(le),
			       buf, len);
}

int diagipc__encode_disable_perfmap(uint8_t *buf, size_t len)
{
	return diagipc__encode(DIAGIPC_SET_PROCESS, DIAGIPC_PROCESS_DISABLE_PERFMAP, NULL, 0, buf,
			       len);
}

int diagipc__parse_header(const uint8_t *buf, size_t len, struct diagipc_header *h)
{
	if (!buf || !h)
		return -EINVAL;
	if (len < DIAGIPC_HEADER_LEN)
		return -ENODATA;
	if (memcmp(buf, DIAGIPC_MAGIC, DIAGIPC_MAGIC_LEN) != 0)
		return -EPROTO;
	h->size = get_le16(buf + 14);
	h->command_set = buf[16];
	h->command_id = buf[17];
	h->reserved = get_le16(buf + 18);
	if (h->size < DIAGIPC_HEADER_LEN)
		return -EPROTO;
	return 0;
}

int diagipc__parse_hresult_reply(const uint8_t *buf, size_t len, uint32_t *hresult)
{
	struct diagipc_header h;
	uint32_t hr;

	if (!buf)
		return -EINVAL;
	if (diagipc__parse_header(buf, len, &h))
		return -EPROTO;
	if (h.command_set != DIAGIPC_SET_SERVER || h.size != HRESULT_REPLY_LEN ||
	    len < HRESULT_REPLY_LEN)
		return -EPROTO;
	hr = get_le32(buf + DIAGIPC_HEADER_LEN);
	if (hresult)
		*hresult = hr;
	if (h.command_id == DIAGIPC_SERVER_OK)
		return 0;
	if (h.command_id == DIAGIPC_SERVER_ERROR)
		return -EREMOTEIO;
	return -EPROTO;
}

int diagipc__parse_socket_name(const char *name, int nspid, uint64_t *key)
{
	const size_t plen = sizeof(SOCKET_PREFIX) - 1;
	const char *p;
	long long pid = 0;
	uint64_t k = 0;
	int digits = 0;

	if (!name || strncmp(name, SOCKET_PREFIX, plen) != 0)
		return -EINVAL;
	p = name + plen;
	while (*p >= '0' && *p <= '9' && pid <= INT_MAX) {
		pid = pid * 10 + (*p++ - '0');
		digits++;
	}
	if (!digits || pid != nspid || *p++ != '-')
		return -EINVAL;
	digits = 0;
	while (*p >= '0' && *p <= '9') {
		uint64_t d = (uint64_t)(*p++ - '0');

		if (k > UINT64_MAX / 10 || (k == UINT64_MAX / 10 && d > UINT64_MAX % 10))
			return -EINVAL;
		k = k * 10 + d;
		digits++;
	}
	if (!digits || strcmp(p, SOCKET_SUFFIX) != 0)
		return -EINVAL;
	if (key)
		*key = k;
	return 0;
}

int diagipc__target_init(struct diagipc_target *t, int dir_fd, int root_fd, int pid, int nspid)
{
	int err;

	if (!t || dir_fd < 0 || root_fd < 0 || pid <= 0 || nspid <= 0)
		return -EINVAL;
	t->root_fd = root_fd;
	t->nspid = nspid;
	t->timeout_ms = DIAGIPC_DEFAULT_TIMEOUT_MS;
	t->pid = pid;
	err = dotnet__tmp_dir(dir_fd, t->dir, sizeof(t->dir));
	if (err)
		return err;
	/* Unknown start time only loses the tie-break between stale sockets. */
	if (procfs__starttime(dir_fd, &t->key))
		t->key = 0;
	return 0;
}

static int newer(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec != b->tv_sec ? a->tv_sec > b->tv_sec : a->tv_nsec > b->tv_nsec;
}

int diagipc__find_socket(const struct diagipc_target *t, char *name, size_t len)
{
	struct timespec best_mtime = { 0, 0 };
	struct dirent *de;
	unsigned long seen = 0;
	int dfd, found = 0, err = 0;
	DIR *d;

	/* A root is required: AT_FDCWD (the host's own /) is refused like any negative fd. */
	if (!t || t->root_fd < 0 || !name || len == 0)
		return -EINVAL;
	dfd = rootfs__open(t->root_fd, t->dir, O_RDONLY | O_DIRECTORY, S_IFDIR, 0,
			   ROOTFS_NO_SYMLINKS);
	if (dfd < 0)
		return dfd;
	d = fdopendir(dfd);
	if (!d) {
		err = -errno;
		close(dfd);
		return err;
	}
	while ((de = readdir(d)) != NULL && seen++ < MAX_DIR_ENTRIES) {
		struct stat st;
		uint64_t key;

		if (diagipc__parse_socket_name(de->d_name, t->nspid, &key))
			continue;
		/* A name inside this directory fd: no path walk, and the link itself is stat'ed. */
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISSOCK(st.st_mode))
			continue;
		if (strlen(de->d_name) >= len) {
			err = -ENAMETOOLONG;
			continue;
		}
		if (t->key && key == t->key) {
			strcpy(name, de->d_name);
			found = 2;	/* exact match: done */
			break;
		}
		if (!found || newer(&st.st_mtim, &best_mtime)) {
			strcpy(name, de->d_name);
			best_mtime = st.st_mtim;
			found = 1;
		}
	}
	closedir(d);
	if (found)
		return 0;
	return err ? err : -ENOENT;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for events on fd until the deadline. 0 ready, -ETIMEDOUT, -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = events };
		int64_t left = deadline - now_ms();
		int n;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)(left > INT_MAX ? INT_MAX : left));
		if (n > 0)
			return 0;	/* errors and hangups surface in the following call */
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

static int connect_until(const struct diagipc_target *t, const char *name, int64_t deadline)
{
	char path[DOTNET_DIR_MAX + NAME_MAX + 2];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int pfd, s, n, err;

	n = snprintf(path, sizeof(path), "%s/%s", t->dir, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	pfd = rootfs__open(t->root_fd, path, O_PATH, S_IFSOCK, 0, ROOTFS_NO_SYMLINKS);
	if (pfd < 0)
		return pfd;
	/* The fd's magic link reaches the checked inode and keeps sun_path short. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", pfd);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0) {
		err = -errno;
		goto close_path;
	}
	for (;;) {
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			/* Listen backlog full: the runtime is busy; retry until the deadline. */
			struct timespec pause = { 0, 10 * 1000000 };

			if (now_ms() >= deadline) {
				err = -ETIMEDOUT;
				goto close_socket;
			}
			nanosleep(&pause, NULL);
			continue;
		}
		if (errno == EINPROGRESS) {
			int soerr = 0;
			socklen_t slen = sizeof(soerr);

			err = wait_fd(s, POLLOUT, deadline);
			if (err)
				goto close_socket;
			if (getsockopt(s, SOL_SOCKET, SO_ERROR, &soerr, &slen) < 0)
				soerr = errno;
			if (soerr) {
				err = -soerr;
				goto close_socket;
			}
			break;
		}
		err = -errno;
		goto close_socket;
	}
	/* The listener must be the process we mean, not another one that planted a socket under
	 * its name (the kernel reports the pid that called listen(), in our pid namespace). */
	if (t->pid > 0) {
		if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
			err = -errno;
			goto close_socket;
		}
		if (cred.pid != t->pid) {
			err = -EPERM;
			goto close_socket;
		}
	}
	close(pfd);
	return s;
close_socket:
	close(s);
close_path:
	close(pfd);
	return err;
}

int diagipc__connect(const struct diagipc_target *t, const char *name)
{
	if (!t || t->root_fd < 0 || !name || strchr(name, '/'))
		return -EINVAL;
	return connect_until(t, name, now_ms() + (t->timeout_ms > 0 ? t->timeout_ms : 0));
}

static int send_all(int s, const uint8_t *buf, size_t len, int64_t deadline)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send(s, buf + done, len - done, MSG_NOSIGNAL);

		if (n >= 0) {
			done += (size_t)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		n = wait_fd(s, POLLOUT, deadline);
		if (n)
			return (int)n;
	}
	return 0;
}

/* Read exactly len bytes; -EPROTO when the peer closes first. */
static int recv_all(int s, uint8_t *buf, size_t len, int64_t deadline)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = recv(s, buf + done, len - done, 0);

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n == 0)
			return -EPROTO;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return errno == ECONNRESET ? -EPROTO : -errno;
		n = wait_fd(s, POLLIN, deadline);
		if (n)
			return (int)n;
	}
	return 0;
}

int diagipc__command(const struct diagipc_target *t, uint8_t command_set, uint8_t command_id,
		     const void *payload, size_t payload_len, uint32_t *hresult)
{
	uint8_t req[64], reply[HRESULT_REPLY_LEN];
	char name[NAME_MAX + 1];
	struct diagipc_header h;
	int64_t deadline;
	int s, n, err;

	if (!t)
		return -EINVAL;
	if (payload_len > sizeof(req) - DIAGIPC_HEADER_LEN)
		return -EMSGSIZE;	/* the commands we send are tiny */
	n = diagipc__encode(command_set, command_id, payload, payload_len, req, sizeof(req));
	if (n < 0)
		return n;
	deadline = now_ms() + (t->timeout_ms > 0 ? t->timeout_ms : DIAGIPC_DEFAULT_TIMEOUT_MS);
	err = diagipc__find_socket(t, name, sizeof(name));
	if (err)
		return err;
	s = connect_until(t, name, deadline);
	if (s < 0)
		return s;
	err = send_all(s, req, (size_t)n, deadline);
	if (err)
		goto close_socket;
	/* Header first: a reply of another shape must not make us wait for bytes never sent. */
	err = recv_all(s, reply, DIAGIPC_HEADER_LEN, deadline);
	if (err)
		goto close_socket;
	err = diagipc__parse_header(reply, DIAGIPC_HEADER_LEN, &h);
	if (err || h.size != HRESULT_REPLY_LEN) {
		err = -EPROTO;
		goto close_socket;
	}
	err = recv_all(s, reply + DIAGIPC_HEADER_LEN, sizeof(reply) - DIAGIPC_HEADER_LEN, deadline);
	if (err)
		goto close_socket;
	err = diagipc__parse_hresult_reply(reply, sizeof(reply), hresult);
close_socket:
	close(s);
	return err;
}

int diagipc__enable_perfmap(int dir_fd, int root_fd, int pid, int nspid, uint32_t type,
			    uint32_t *hresult)
{
	return diagipc__enable_perfmap_within(dir_fd, root_fd, pid, nspid, type, 0, hresult);
}

int diagipc__enable_perfmap_within(int dir_fd, int root_fd, int pid, int nspid, uint32_t type,
				   int timeout_ms, uint32_t *hresult)
{
	uint8_t le[4] = { (uint8_t)type, (uint8_t)(type >> 8), (uint8_t)(type >> 16),
			  (uint8_t)(type >> 24) };
	struct diagipc_target t;
	int err;

	err = diagipc__target_init(&t, dir_fd, root_fd, pid, nspid);
	if (err)
		return err;
	if (timeout_ms > 0)
		t.timeout_ms = timeout_ms;
	return diagipc__command(&t, DIAGIPC_SET_PROCESS, DIAGIPC_PROCESS_ENABLE_PERFMAP, le,
				sizeof(le), hresult);
}

int diagipc__disable_perfmap(int dir_fd, int root_fd, int pid, int nspid, uint32_t *hresult)
{
	struct diagipc_target t;
	int err;

	err = diagipc__target_init(&t, dir_fd, root_fd, pid, nspid);
	if (err)
		return err;
	return diagipc__command(&t, DIAGIPC_SET_PROCESS, DIAGIPC_PROCESS_DISABLE_PERFMAP, NULL, 0,
				hresult);
}
