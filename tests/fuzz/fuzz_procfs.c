/* fuzz_procfs.c: libFuzzer target for the /proc/<pid> parsers: maps, status, stat, environ,
 * cgroup, one at a time on a buffer, or all at once through a fake /proc that the process table
 * and the identity resolver read as they read the real one. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dotnet.h"
#include "identity.h"
#include "procfs.h"
#include "proctab.h"
#include "spanctx.h"

#define FAKE_PID 4242
#define SEP "\n#%#\n"	/* splits a whole-process input into stat, status, maps, environ, cgroup */

static char root[64];	/* the fake /proc; root/4242 is the process */

static void check_vmas(const struct vma *v, size_t n)
{
	uint64_t start, end;

	for (size_t i = 0; i < n; i++) {
		assert(v[i].start < v[i].end && v[i].path);
		assert(!i || v[i - 1].start <= v[i].start);
		(void)dotnet__is_runtime_path(v[i].path);
	}
	if (!spanctx__find_table(v, n, &start, &end))
		assert(start < end);
}

static void fuzz_maps(const char *buf, size_t len)
{
	struct proc p = { .dir_fd = -1 };
	struct vma *v;
	size_t n, bad;

	if (maps__parse(buf, len, &v, &n, &bad))
		return;
	check_vmas(v, n);
	p.vmas = v;
	p.nvmas = n;
	for (size_t i = 0; i < n && i < 64; i++) {
		const struct vma *f = proc__vma(&p, v[i].start);

		assert(f && f->start <= v[i].start && v[i].start < f->end);
		f = proc__vma(&p, v[i].end - 1);
		assert(!f || (f->start <= v[i].end - 1 && v[i].end - 1 < f->end));
	}
	maps__free(v, n);
}

static void fuzz_environ(const char *buf, size_t len)
{
	static const char *const names[] = { "TMPDIR", "DOTNET_PerfMapJitDumpPath",
					     "OTEL_SERVICE_NAME", "A", "" };
	enum identity_source src;
	char small[8], big[IDENTITY_SERVICE_LEN];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!procfs__parse_environ(buf, len, names[i], small, sizeof(small)))
			assert(strlen(small) < sizeof(small));
		if (!procfs__parse_environ(buf, len, names[i], big, sizeof(big)))
			assert(strlen(big) < sizeof(big));
	}
	if (!identity__parse_environ_service(buf, len, big, sizeof(big), &src))
		assert(big[0] && strlen(big) < sizeof(big) && src != IDENTITY_SRC_NONE);
	if (!identity__parse_environ_service(buf, len, small, sizeof(small), &src))
		assert(strlen(small) < sizeof(small));
}

static void fuzz_cgroup(const char *buf, size_t len)
{
	struct k8s_ids ids;

	if (identity__parse_cgroup(buf, len, &ids))
		return;
	assert(ids.pod_uid[0] && strlen(ids.pod_uid) < sizeof(ids.pod_uid));
	assert(strlen(ids.container_id) < sizeof(ids.container_id));
	assert(strlen(ids.runtime) < sizeof(ids.runtime));
}

static void put(const char *name, const char *buf, size_t len)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%d/%s", root, FAKE_PID, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert(fd >= 0);
	assert(write(fd, buf, len) == (ssize_t)len);
	close(fd);
}

/* Every file of the fake process from one input, then the process table and the identity
 * resolver on it, as the session and the agent use them. */
static void fuzz_process(const char *buf, size_t len)
{
	static const char *const files[] = { "stat", "status", "maps", "environ", "cgroup" };
	const char *p = buf, *end = buf + len;
	struct proc_identity id;
	struct identity_ctx *ctx;
	struct proctab *pt;
	struct proc *proc;
	char dir[96];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		const char *s = p < end ? memmem(p, end - p, SEP, sizeof(SEP) - 1) : NULL;
		const char *e = s ? s : end;

		put(files[i], p, p < end ? e - p : 0);
		p = s ? s + sizeof(SEP) - 1 : end;
	}
	pt = proctab__new(root, NULL);
	assert(pt);
	proc = proctab__open(pt, FAKE_PID);
	if (proc) {
		assert(proc->pid == FAKE_PID && strlen(proc->comm) < sizeof(proc->comm));
		check_vmas(proc->vmas, proc->nvmas);
		/* The same process again by pid and start time: the entry found, not a second one. */
		assert(proctab__get(pt, FAKE_PID, proc->start_ticks, proc->comm) == proc);
		snprintf(dir, sizeof(dir), "%s/pods", root);
		ctx = identity__new(dir, dir, "node");
		assert(ctx);
		assert(identity__resolve(ctx, proc->dir_fd, proc->comm, &id) == 0);
		assert(strlen(id.service_name) < sizeof(id.service_name));
		assert(identity__resolve(ctx, proc->dir_fd, NULL, &id) == 0);
		identity__free(ctx);
	}
	proctab__free(pt);
}

static void cleanup(void)
{
	static const char *const names[] = { "4242/stat", "4242/status", "4242/maps", "4242/environ",
					     "4242/cgroup", "4242/root", "4242", "pods", "" };
	char path[128];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, names[i]);
		if (unlink(path))
			rmdir(path);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char path[128];

	snprintf(root, sizeof(root), "%s/fuzz_procfs.XXXXXX", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
	assert(mkdtemp(root));
	atexit(cleanup);
	snprintf(path, sizeof(path), "%s/%d", root, FAKE_PID);
	assert(mkdir(path, 0700) == 0);
	snprintf(path, sizeof(path), "%s/%d/root", root, FAKE_PID);
	assert(mkdir(path, 0700) == 0);
	snprintf(path, sizeof(path), "%s/pods", root);
	assert(mkdir(path, 0700) == 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data + 1;
	size_t len = size - 1;
	uint64_t ticks;
	int pid;

	if (size < 1)
		return 0;
	switch (data[0] & 7) {
	case 0:
		fuzz_maps(buf, len);
		break;
	case 1:
		if (!procfs__parse_nspid(buf, len, &pid))
			assert(pid > 0);
		break;
	case 2:
		(void)procfs__parse_starttime(buf, len, &ticks);
		break;
	case 3:
		fuzz_environ(buf, len);
		break;
	case 4:
		fuzz_cgroup(buf, len);
		break;
	default:
		fuzz_process(buf, len);
		break;
	}
	return 0;
}
