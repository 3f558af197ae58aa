/* testutil.c: the unit tests' shared setup helpers (see testutil.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "profiler.h"
#include "testutil.h"

/* ---- temp dirs and files ------------------------------------------------------------------- */

/* "/tmp/<test program>.XXXXXX" into out; 0, or -1 if it does not fit. */
static int temp_name(char *out, size_t size)
{
	int n = snprintf(out, size, "/tmp/%s.XXXXXX", program_invocation_short_name);

	return n > 0 && (size_t)n < size ? 0 : -1;
}

char *testutil__mkdtemp(char *out, size_t size)
{
	return temp_name(out, size) ? NULL : mkdtemp(out);
}

int testutil__mkstemp(char *out, size_t size)
{
	return temp_name(out, size) ? -1 : mkostemp(out, O_CLOEXEC);
}

int testutil__temp_file(char *out, size_t size, const void *data, size_t len)
{
	int fd = testutil__mkstemp(out, size);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, data, len);
	close(fd);
	if (n != (ssize_t)len) {
		unlink(out);
		return -1;
	}
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int testutil__rm_rf(const char *path)
{
	struct stat st;

	if (lstat(path, &st) && errno == ENOENT)
		return 0;
	return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) ? -1 : 0;
}

int testutil__empty_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[PATH_MAX];
	int rc = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path) ||
		    testutil__rm_rf(path))
			rc = -1;
	}
	closedir(d);
	return rc;
}

int testutil__entries(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		n += !suffix || (e->d_name[0] != '.' && len >= strlen(suffix) &&
				 !strcmp(e->d_name + len - strlen(suffix), suffix));
	}
	closedir(d);
	return n;
}

char *testutil__path(char *out, size_t size, const char *dir, const char *rel)
{
	int n = dir ? snprintf(out, size, "%s/%s", dir, rel) : snprintf(out, size, "%s", rel);

	if (n < 0 || (size_t)n >= size)
		fail_msg("path too long: %s/%s", dir ? dir : "", rel);
	return out;
}

void testutil__mkdirs(const char *dir, const char *rel)
{
	char p[PATH_MAX], *s;

	testutil__path(p, sizeof(p), dir, rel);
	/* dir exists: only what rel adds is made */
	for (s = p + (dir ? strlen(dir) + 1 : 1); (s = strchr(s, '/')); s++) {
		*s = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			fail_msg("mkdir %s: %s", p, strerror(errno));
		*s = '/';
	}
	if (mkdir(p, 0755) && errno != EEXIST)
		fail_msg("mkdir %s: %s", p, strerror(errno));
}

void testutil__write(const char *dir, const char *rel, const void *data, size_t len)
{
	char p[PATH_MAX];
	int fd;

	testutil__path(p, sizeof(p), dir, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		fail_msg("open %s: %s", p, strerror(errno));
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

void testutil__write_file(const char *dir, const char *name, const char *text)
{
	testutil__write(dir, name, text, strlen(text));
}

int testutil__lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

char *testutil__slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (!f)
		return NULL;
	do {
		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
	} while (r > 0);
	assert_false(ferror(f));
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

int testutil__exists(const char *fmt, ...)
{
	char path[PATH_MAX];
	struct stat st;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return lstat(path, &st) == 0;
}

void testutil__read_fd(int fd, char *buf, size_t size)
{
	ssize_t n = read(fd, buf, size - 1);

	assert_true(n >= 0);
	buf[n] = '\0';
}

void *testutil__memfd_map(const char *name, size_t len, int *fd)
{
	int mfd = memfd_create(name, MFD_CLOEXEC);
	void *m;

	assert_true(mfd >= 0);
	assert_int_equal(ftruncate(mfd, (off_t)len), 0);
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	assert_true(m != MAP_FAILED);
	if (fd)
		*fd = mfd;
	else
		close(mfd);
	return m;
}

/* ---- fake trees ---------------------------------------------------------------------------- */

char *testutil__proc_dir(char *out, size_t size, const char *proc_root, const char *pid)
{
	testutil__path(out, size, proc_root, pid);
	testutil__mkdirs(NULL, out);
	return out;
}

void testutil__proc_file(const char *proc_root, const char *pid, const char *name,
			 const char *text)
{
	char dir[PATH_MAX];

	testutil__write_file(testutil__proc_dir(dir, sizeof(dir), proc_root, pid), name, text);
}

int testutil__root_setup(void **state)
{
	struct testutil_root *fx = calloc(1, sizeof(*fx));
	char path[PATH_MAX + 32];

	assert_non_null(fx);
	assert_non_null(testutil__mkdtemp(fx->root, sizeof(fx->root)));
	testutil__mkdirs(fx->root, "tmp/sub");
	testutil__mkdirs(fx->root, "etc");
	testutil__write_file(fx->root, "tmp/perf-7.map", "inside\n");
	testutil__write_file(fx->root, "tmp/sub/perf-9.map", "sub\n");
	testutil__write_file(fx->root, "etc/hostname", "container\n");
	snprintf(path, sizeof(path), "%s/tmp/jit-7.dump", fx->root);
	assert_int_equal(symlink("/etc/hostname", path), 0);
	snprintf(path, sizeof(path), "%s/tmp/perf-8.map", fx->root);
	assert_int_equal(symlink("perf-7.map", path), 0);
	snprintf(path, sizeof(path), "%s/tmp/fifo", fx->root);
	assert_int_equal(mkfifo(path, 0600), 0);
	snprintf(path, sizeof(path), "%s/link", fx->root);
	assert_int_equal(symlink("tmp", path), 0);
	fx->root_fd = open(fx->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fx->root_fd >= 0);
	*state = fx;
	return 0;
}

int testutil__root_teardown(void **state)
{
	struct testutil_root *fx = *state;

	close(fx->root_fd);
	assert_int_equal(testutil__rm_rf(fx->root), 0);
	free(fx);
	return 0;
}

/* ---- child processes ----------------------------------------------------------------------- */

/* Bytes in /proc/<pid>/environ, 0 while it is empty (or unreadable). */
static long environ_size(pid_t pid)
{
	char path[64], buf[256];
	long n = 0;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		n += r;
	close(fd);
	return n;
}

pid_t testutil__spawn_env(char *const envp[])
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = { "sleep", "5", NULL };

		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	/* Wait until the exec has replaced the environment. */
	for (int i = 0; i < 200; i++) {
		char exe[64], target[PATH_MAX];
		ssize_t n;

		snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
		n = readlink(exe, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = '\0';
			/* The exe link changes before the new stack (and environ) is set up. */
			if (strstr(target, "sleep") && environ_size(pid) > 0)
				break;
		}
		usleep(5000);
	}
	return pid;
}

pid_t testutil__fork_paused(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

uint64_t testutil__start_ticks(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long long ticks = 0;
	const char *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* After the comm's closing parenthesis: state is field 3, the start time field 22. */
	p = strrchr(buf, ')');
	assert_non_null(p);
	assert_int_equal(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
				"%*d %*d %*d %*d %llu", &ticks), 1);
	return ticks;
}

pid_t testutil__reap(pid_t pid)
{
	kill(pid, SIGKILL);
	return waitpid(pid, NULL, 0);
}

int testutil__wait(pid_t pid)
{
	int status = 0;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/* ---- fixture programs and tools ------------------------------------------------------------ */

int testutil__run(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(cmd)) {
		fprintf(stderr, "command too long: %.200s...\n", cmd);
		return -1;
	}
	rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
	return rc;
}

int testutil__cc(const char *flags, const char *out, const char *src)
{
	return testutil__run("cc %s -o '%s' '%s'", flags, out, src);
}

int testutil__src_path(char *out, size_t size, const char *rel)
{
	static const char *const vars[] = { "SPANPROF_SRCDIR", "SPANPROF_SRC" };
	char exe[PATH_MAX], *slash;
	ssize_t n;

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *env = getenv(vars[i]);

		if (env && snprintf(out, size, "%s/%s", env, rel) < (int)size && !access(out, F_OK))
			return 0;
	}
	/* This file is tests/unit/testutil.c of the tree. */
	snprintf(out, size, "%s", __FILE__);
	if ((slash = strrchr(out, '/'))) {
		snprintf(slash, size - (size_t)(slash - out), "/../../%s", rel);
		if (!access(out, F_OK))
			return 0;
	}
	/* The binary is somewhere below the tree (build/tests/test_x). */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		while ((slash = strrchr(exe, '/'))) {
			*slash = '\0';
			if (snprintf(out, size, "%s/%s", exe, rel) < (int)size && !access(out, F_OK))
				return 0;
		}
	}
	fprintf(stderr, "cannot find %s of the source tree (set SPANPROF_SRCDIR)\n", rel);
	return -1;
}

void testutil__build_id(const char *path, char *out, size_t size)
{
	char cmd[PATH_MAX + 64], line[512], *p;
	FILE *f;

	out[0] = '\0';
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, "Build ID: ");
		if (p) {
			snprintf(out, size, "%s", p + 10);
			out[strcspn(out, "\n")] = '\0';
		}
	}
	pclose(f);
}

uint8_t *testutil__gunzip(const void *gz, size_t len, size_t *out_len)
{
	const uint8_t *in = gz;
	size_t cap = len * 4 + 1024, n = 0;
	uint8_t *raw = malloc(cap);
	z_stream zs = { 0 };
	int rc;

	assert_non_null(raw);
	assert_true(len > 18);
	assert_int_equal(in[0], 0x1f);
	assert_int_equal(in[1], 0x8b);
	assert_int_equal(inflateInit2(&zs, 16 + 15), Z_OK);	/* gzip framing only */
	zs.next_in = (Bytef *)(uintptr_t)in;
	zs.avail_in = (uInt)len;
	do {
		if (n == cap) {
			cap *= 2;
			raw = realloc(raw, cap);
			assert_non_null(raw);
		}
		zs.next_out = raw + n;
		zs.avail_out = (uInt)(cap - n);
		rc = inflate(&zs, Z_NO_FLUSH);
		n = cap - zs.avail_out;
	} while (rc == Z_OK);
	assert_int_equal(rc, Z_STREAM_END);
	assert_int_equal(zs.avail_in, 0);	/* nothing after the gzip trailer */
	inflateEnd(&zs);
	*out_len = n;
	return raw;
}

double testutil__now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- span context records ------------------------------------------------------------------ */

void testutil__rec_start(struct testutil_rec *r, const uint8_t *trace, const uint8_t *span,
			 uint8_t valid)
{
	memset(r, 0, sizeof(*r));
	if (trace)
		memcpy(r->b + SP_CTX_OFF_TRACE_ID, trace, 16);
	if (span)
		memcpy(r->b + SP_CTX_OFF_SPAN_ID, span, 8);
	r->b[SP_CTX_OFF_VALID] = valid;
	r->b[SP_CTX_OFF_FLAGS] = 1;
	r->len = SP_CTX_HEAD;
}

void testutil__rec_attr(struct testutil_rec *r, uint8_t key, const char *val, size_t n)
{
	assert_true(n <= 255 && r->len + 2 + n <= sizeof(r->b));
	r->b[r->len++] = key;
	r->b[r->len++] = (uint8_t)n;
	memcpy(r->b + r->len, val, n);
	r->len += n;
	testutil__rec_end(r);
}

void testutil__rec_str(struct testutil_rec *r, uint8_t key, const char *val)
{
	testutil__rec_attr(r, key, val, strlen(val));
}

void testutil__rec_end(struct testutil_rec *r)
{
	size_t attrs = r->len - SP_CTX_HEAD;

	r->b[SP_CTX_OFF_ATTRS_LEN] = (uint8_t)attrs;
	r->b[SP_CTX_OFF_ATTRS_LEN + 1] = (uint8_t)(attrs >> 8);
}

size_t testutil__key_table(uint8_t *buf, const char *const *names, size_t n)
{
	size_t pos = 0;

	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(names[i]);

		buf[pos++] = (uint8_t)l;
		memcpy(buf + pos, names[i], l);
		pos += l;
	}
	return pos;
}
