/* test_dotnetproc.c: unit tests for the .NET runtime (user/process/dotnet*.c) against a fake
 * runtime: this program run again as a child ("--fake-runtime DIR") that maps a libcoreclr.so
 * with a 10.0.12 version string, keeps its perf map in DIR (TMPDIR and DOTNET_PerfMapJitDumpPath)
 * and answers EnablePerfMap / DisablePerfMap on its diagnostics socket, logging each to DIR/log.
 * Covers the state sweep after a crash, enable/undo, sparse reads and idle release. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dotnetproc.h"
#include "proctab.h"
#include "runtime.h"
#include "testutil.h"
#include "util.h"

extern const struct runtime_ops dotnet_runtime;

#define METHODS 64		/* lines of the fake runtime's perf map */
#define BASE	0x10000000ull	/* the first method's start; each is 0x40 bytes */
#define WAIT_MS 10000		/* a deadline for what the fake runtime does, not a timing check */

/* ---- the fake runtime (the child) ------------------------------------------------------------ */

static void fake_log(const char *dir, const char *line)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/log", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd >= 0) {
		if (write(fd, line, strlen(line)) < 0)
			_exit(3);
		close(fd);
	}
}

static void fake_write_map(const char *dir, int lines)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/perf-%d.map", dir, (int)getpid());
	f = fopen(path, "w");	/* truncates, as the runtime's OpenForWrite does */
	if (!f)
		_exit(3);
	for (int i = 0; i < lines; i++)
		fprintf(f, "%llx 40 [Fake] Fake.Type::Method%d()[OptimizedTier1]\n",
			(unsigned long long)(BASE + 0x40ull * i), i);
	fclose(f);
}

/* FAKE_RT=refuse answers every command with an error HRESULT; FAKE_RT=map writes the perf map at
 * start (perf maps on through the environment); FAKE_RT=slow takes 0.1 s before it writes the
 * perf map at an enable, and 0.3 s more before it answers. */
static int fake_runtime(const char *dir)
{
	static const char version[] =
		"@(#)Version 10.0.1226.42308 @Commit: 0123456789abcdef0123456789abcdef01234567";
	const char *mode = getenv("FAKE_RT") ? getenv("FAKE_RT") : "";
	char path[PATH_MAX], buf[4096] = { 0 };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, s;

	snprintf(path, sizeof(path), "%s/libcoreclr.so", dir);
	memcpy(buf + 1024, version, sizeof(version));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) ||
	    mmap(NULL, sizeof(buf), PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED)
		return 3;
	if (!strcmp(mode, "map"))
		fake_write_map(dir, METHODS);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/dotnet-diagnostic-%d-1-socket", dir,
		 (int)getpid());
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 16))
		return 3;
	printf("%d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		uint8_t req[64], reply[24] = "DOTNET_IPC_V1";
		int c = accept(s, NULL, NULL);
		ssize_t n;
		int refuse = !strcmp(mode, "refuse"), slow = !strcmp(mode, "slow");

		if (c < 0)
			continue;
		n = read(c, req, sizeof(req));
		reply[14] = 24;
		reply[16] = 0xff;
		reply[17] = refuse ? 0xff : 0x00;
		if (refuse) {	/* 0x80131385: an unknown command */
			reply[20] = 0x85;
			reply[21] = 0x13;
			reply[22] = 0x13;
			reply[23] = 0x80;
		}
		if (n >= 24 && req[16] == 0x04 && req[17] == 0x05) {
			char line[64];

			snprintf(line, sizeof(line), "enable %u\n", req[20]);
			if (slow)
				usleep(100000);
			if (!refuse)
				fake_write_map(dir, METHODS);
			fake_log(dir, line);
			if (slow)	/* written, not answered yet */
				usleep(300000);
		} else if (n >= 20 && req[16] == 0x04 && req[17] == 0x06) {
			fake_log(dir, "disable\n");
		}
		if (write(c, reply, sizeof(reply)) < 0)
			_exit(3);
		close(c);
	}
}

/* ---- fixture ----------------------------------------------------------------------------------- */

struct fx {
	char dir[PATH_MAX];	/* the fake runtime's TMPDIR */
	char state[PATH_MAX];	/* SPANPROF_STATE_DIR */
	pid_t child;
	struct proctab *pt;
	struct proc *p;
	struct runtime_env env;
};

static const struct runtime_ops *const only_dotnet[RT__MAX] = { &dotnet_runtime };

/* Starts the fake runtime (mode: FAKE_RT) in f->dir; its pid, once it is listening. */
static pid_t start_fake(struct fx *f, const char *mode)
{
	char tmpdir[PATH_MAX + 16], jitdir[PATH_MAX + 32], fake_rt[64], line[32] = "";
	char *envp[] = { tmpdir, jitdir, fake_rt, NULL };
	int pfd[2];
	pid_t pid;
	ssize_t n;

	snprintf(tmpdir, sizeof(tmpdir), "TMPDIR=%s", f->dir);
	snprintf(jitdir, sizeof(jitdir), "DOTNET_PerfMapJitDumpPath=%s", f->dir);
	snprintf(fake_rt, sizeof(fake_rt), "FAKE_RT=%s", mode);
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = { "test_dotnetproc", "--fake-runtime", f->dir, NULL };

		dup2(pfd[1], 1);
		close(pfd[0]);
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	close(pfd[1]);
	n = read(pfd[0], line, sizeof(line) - 1);	/* its pid, or EOF if it failed */
	close(pfd[0]);
	assert_true(n > 0);
	assert_int_equal(atoi(line), pid);
	return pid;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_non_null(testutil__mkdtemp(f->dir, sizeof(f->dir)));
	assert_non_null(testutil__mkdtemp(f->state, sizeof(f->state)));
	setenv("SPANPROF_STATE_DIR", f->state, 1);
	f->env = (struct runtime_env){ .runtimes = only_dotnet, .ctx_map_fd = -1, .perfmap_type = 3 };
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f->p)
		runtime__detach_all(f->p);
	proctab__free(f->pt);
	if (f->child > 0)
		testutil__reap(f->child);
	testutil__rm_rf(f->dir);
	testutil__rm_rf(f->state);
	unsetenv("SPANPROF_STATE_DIR");
	free(f);
	return 0;
}

/* The fake runtime as the session sees it, its .NET instance attached, sampled. */
static void *open_proc(struct fx *f, const char *mode)
{
	void *d;

	f->child = start_fake(f, mode);
	f->pt = proctab__new("/proc", &f->env);
	assert_non_null(f->pt);
	f->p = proctab__open(f->pt, f->child);
	assert_non_null(f->p);
	runtime__poll(f->p, now_ns());	/* reads its mappings: .NET detected and attached */
	d = runtime__state(f->p, RT_DOTNET);
	assert_non_null(d);
	f->p->sampled = 1;
	return d;
}

static int poll_once(struct fx *f, void *d)
{
	return dotnet_runtime.poll(f->p, d, &f->env);
}

/* Polls until the talk's answer came, within WAIT_MS: the state is neither WAITING nor READING
 * (the runtime writes the perf map before it answers, so it may be read before the answer). */
static enum dotnetproc_state poll_until_answered(struct fx *f, void *d)
{
	double end = testutil__now_ms() + WAIT_MS;
	enum dotnetproc_state st;

	for (;;) {
		poll_once(f, d);
		st = dotnetproc__state(f->p, NULL);
		if ((st != DOTNETPROC_WAITING && st != DOTNETPROC_READING) || testutil__now_ms() > end)
			return st;
		usleep(5000);
	}
}

/* Polls until the fake runtime's log reads want (its commands so far), within WAIT_MS; 1 if it
 * did. */
static int poll_until_log(struct fx *f, void *d, const char *want)
{
	double end = testutil__now_ms() + WAIT_MS;
	char path[PATH_MAX + 8];
	int same;

	snprintf(path, sizeof(path), "%s/log", f->dir);
	for (;;) {
		char *s;

		poll_once(f, d);
		s = testutil__slurp(path, NULL);
		same = s && !strcmp(s, want);
		free(s);
		if (same || testutil__now_ms() > end)
			return same;
		usleep(5000);
	}
}

/* Asserts that the fake runtime got these commands, in this order ("enable 3\n", "disable\n"). */
static void assert_log(struct fx *f, const char *want)
{
	char path[PATH_MAX + 8];
	char *s;

	snprintf(path, sizeof(path), "%s/log", f->dir);
	s = testutil__slurp(path, NULL);
	assert_string_equal(s ? s : "", want);
	free(s);
}

static int map_exists(struct fx *f)
{
	return testutil__exists("%s/perf-%d.map", f->dir, (int)f->child);
}

/* Polls until the answer to an idle-off is taken (the files it wrote removed: only then is it off,
 * and a sample before that is not one after it), within WAIT_MS. */
static void poll_until_off(struct fx *f, void *d)
{
	for (double end = testutil__now_ms() + WAIT_MS; map_exists(f) && testutil__now_ms() < end;)
		poll_once(f, d);
	assert_false(map_exists(f));
}

/* An entry of the state directory, as a spanprof (owner, its start) writes before it enables. */
static void write_entry(struct fx *f, int owner, uint64_t oticks, int pid, uint64_t ticks,
			char *name, size_t len)
{
	testutil__mkdirs(f->state, "enabled");
	snprintf(name, len, "enabled/%d-%" PRIu64 "-%d-%" PRIu64, owner, oticks, pid, ticks);
	testutil__write_file(f->state, name, "");
}

static int entries(struct fx *f)
{
	char cmd[PATH_MAX + 64];
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "ls -A '%s/enabled' 2>/dev/null | wc -l", f->state);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%d", &n), 1);
	pclose(p);
	return n;
}

/* A pid that no process has now (one that was just reaped). */
static pid_t dead_pid(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	testutil__wait(pid);
	return pid;
}

/* ---- the state sweep: what a dead spanprof turned on is undone --------------------------------- */

static void test_dotnetproc_sweep_undoes_a_dead_owners_perf_maps(void **state)
{
	struct fx *f = *state;
	char name[256];

	f->child = start_fake(f, "map");
	assert_true(map_exists(f));
	write_entry(f, dead_pid(), 12345, f->child, testutil__start_ticks(f->child), name, sizeof(name));
	assert_int_equal(dotnetproc__sweep(), 1);
	assert_log(f, "disable\n");		/* turned off ... */
	assert_false(map_exists(f));		/* ... its file removed ... */
	assert_false(testutil__exists("%s/%s", f->state, name));	/* ... nothing left to undo */
	assert_int_equal(entries(f), 0);
}

static void test_dotnetproc_sweep_leaves_a_live_owners_entries(void **state)
{
	struct fx *f = *state;
	char name[256];

	f->child = start_fake(f, "map");
	write_entry(f, getpid(), testutil__start_ticks(getpid()), f->child, testutil__start_ticks(f->child), name, sizeof(name));
	testutil__write_file(f->state, "enabled/not-an-entry", "");
	assert_int_equal(dotnetproc__sweep(), 0);
	assert_log(f, "");
	assert_true(map_exists(f));
	assert_true(testutil__exists("%s/%s", f->state, name));
	assert_true(testutil__exists("%s/enabled/not-an-entry", f->state));
}

/* The pid now belongs to another process (another start time): nothing is sent to it, and the
 * stale entry goes. */
static void test_dotnetproc_sweep_passes_over_a_reused_pid(void **state)
{
	struct fx *f = *state;
	char name[256];

	f->child = start_fake(f, "map");
	write_entry(f, dead_pid(), 12345, f->child, testutil__start_ticks(f->child) + 1, name, sizeof(name));
	assert_int_equal(dotnetproc__sweep(), 0);
	assert_log(f, "");
	assert_true(map_exists(f));
	assert_int_equal(entries(f), 0);
}

static void test_dotnetproc_sweep_without_a_state_dir(void **state)
{
	struct fx *f = *state;
	char missing[PATH_MAX + 16];

	snprintf(missing, sizeof(missing), "%s/none", f->state);
	setenv("SPANPROF_STATE_DIR", missing, 1);
	assert_int_equal(dotnetproc__sweep(), 0);
}

/* ---- enable and undo --------------------------------------------------------------------------- */

static void test_dotnetproc_enable_then_detach_undoes(void **state)
{
	struct fx *f = *state;
	struct perfmap_stats ps;
	struct rt_symbol rs = { 0 };
	const char *detail;
	void *d;

	f->env.enable_perfmap = 1;
	d = open_proc(f, "");
	assert_false(map_exists(f));
	assert_int_equal(poll_once(f, d), RT_READY);	/* a talk out: polled again at once */
	assert_int_equal(entries(f), 1);	/* written down before it was sent */
	assert_int_equal(poll_until_answered(f, d), DOTNETPROC_ENABLED);
	dotnetproc__state(f->p, &detail);
	assert_string_equal(detail, "perf map enabled at run time (type 3)");
	assert_log(f, "enable 3\n");
	poll_once(f, d);	/* reads what it wrote */
	dotnetproc__stats(f->p, &ps);
	assert_int_equal(ps.entries, METHODS);
	assert_int_equal(dotnet_runtime.symbolize(f->p, d, BASE + 0x40 * 5 + 1, 0, &rs), 0);
	assert_string_equal(rs.system_name, "[Fake] Fake.Type::Method5()");

	runtime__detach_all(f->p);	/* leaves it as found */
	assert_log(f, "enable 3\ndisable\n");
	assert_false(map_exists(f));
	assert_int_equal(entries(f), 0);
}

/* Perf maps it had on already (its environment) are read, never turned on or off by us. */
static void test_dotnetproc_perf_maps_not_ours_left_alone(void **state)
{
	struct fx *f = *state;
	struct perfmap_stats ps;
	void *d;

	f->env.enable_perfmap = 1;
	d = open_proc(f, "map");
	poll_once(f, d);
	assert_int_equal(dotnetproc__state(f->p, NULL), DOTNETPROC_READING);
	dotnetproc__stats(f->p, &ps);
	assert_int_equal(ps.entries, METHODS);
	assert_int_equal(entries(f), 0);
	runtime__detach_all(f->p);
	assert_log(f, "");
	assert_true(map_exists(f));
}

static void test_dotnetproc_enable_refused_forgets_its_entry(void **state)
{
	struct fx *f = *state;
	const char *detail;
	void *d;

	f->env.enable_perfmap = 1;
	d = open_proc(f, "refuse");
	poll_once(f, d);
	assert_int_equal(poll_until_answered(f, d), DOTNETPROC_FAILED);
	dotnetproc__state(f->p, &detail);
	assert_non_null(strstr(detail, "hresult 0x80131385"));
	assert_int_equal(entries(f), 0);	/* nothing was turned on: nothing to undo */
	runtime__detach_all(f->p);
	assert_int_equal(entries(f), 0);
}

/* Perf maps are turned on only in processes that are sampled, and only when asked to. */
static void test_dotnetproc_enable_only_when_sampled_and_asked(void **state)
{
	struct fx *f = *state;
	void *d;

	d = open_proc(f, "");
	poll_once(f, d);	/* enable_perfmap is 0 */
	assert_int_equal(entries(f), 0);
	f->env.enable_perfmap = 1;
	f->p->sampled = 0;
	assert_int_equal(poll_once(f, d), RT_WAIT);
	assert_int_equal(entries(f), 0);
	assert_int_equal(dotnetproc__state(f->p, NULL), DOTNETPROC_WAITING);
}

/* ---- sparse reads and idle release ------------------------------------------------------------- */

static void test_dotnetproc_sparse_reads_only_what_was_sampled(void **state)
{
	struct fx *f = *state;
	struct perfmap_stats ps;
	struct rt_symbol rs = { 0 };
	void *d;

	f->env.idle_release_ns = 3600ull * 1000000000ull;	/* the agent: sparse from the start */
	d = open_proc(f, "map");
	assert_true(dotnetproc__sparse(f->p));
	poll_once(f, d);
	dotnetproc__stats(f->p, &ps);
	assert_int_equal(ps.entries, 0);	/* nothing wanted yet: nothing read */
	assert_true(dotnet_runtime.claims(f->p, d, BASE + 0x40 * 7 + 4, 0));
	assert_true(dotnet_runtime.claims(f->p, d, BASE + 0x40 * 9, 0));
	f->env.naming_next = 1;	/* a window's end: read for what was claimed */
	poll_once(f, d);
	f->env.naming_next = 0;
	dotnetproc__stats(f->p, &ps);
	assert_int_equal(ps.entries, 2);
	assert_int_equal(ps.filtered, METHODS - 2);
	assert_int_equal(dotnet_runtime.symbolize(f->p, d, BASE + 0x40 * 7 + 4, 0, &rs), 0);
	assert_string_equal(rs.system_name, "[Fake] Fake.Type::Method7()");
	/* A leaf not read for: read at once (once a window), the filter kept. */
	assert_int_equal(dotnet_runtime.symbolize(f->p, d, BASE + 0x40 * 20, 0, &rs), 0);
	assert_string_equal(rs.system_name, "[Fake] Fake.Type::Method20()");
	dotnetproc__stats(f->p, &ps);
	assert_int_equal(ps.entries, 3);
	assert_true(dotnetproc__sparse(f->p));
}

/* A process read sparsely too often is busy: its whole index from then on. */
static void test_dotnetproc_sparse_goes_whole_when_busy(void **state)
{
	struct fx *f = *state;
	struct perfmap_stats ps;
	void *d;
	int i;

	f->env.idle_release_ns = 3600ull * 1000000000ull;
	d = open_proc(f, "map");
	f->env.naming_next = 1;
	for (i = 0; i < 16 && dotnetproc__sparse(f->p); i++) {
		dotnet_runtime.claims(f->p, d, BASE + 0x40 * i, 0);
		poll_once(f, d);
	}
	assert_false(dotnetproc__sparse(f->p));
	assert_int_equal(i, 7);	/* SPARSE_READS (6) reads, the seventh went whole */
	dotnetproc__stats(f->p, &ps);
	assert_int_equal(ps.entries, METHODS);
	assert_int_equal(ps.filtered, 0);
}

/* Idle past idle_release_ns: what was read goes, read sparsely from its next sample on. */
static void test_dotnetproc_idle_release(void **state)
{
	struct fx *f = *state;
	struct perfmap_stats ps;
	char buf[1024];
	void *d;

	f->env.idle_release_ns = 1000000000ull;
	d = open_proc(f, "map");
	dotnet_runtime.claims(f->p, d, BASE, 0);
	f->env.naming_next = 1;
	poll_once(f, d);
	f->env.naming_next = 0;
	dotnetproc__stats(f->p, &ps);
	assert_int_equal(ps.entries, 1);
	/* Its whole index, as a busy process has. */
	for (int i = 0; i < 16 && dotnetproc__sparse(f->p); i++) {
		dotnet_runtime.claims(f->p, d, BASE + 0x40 * i, 0);
		f->env.naming_next = 1;
		poll_once(f, d);
	}
	f->env.naming_next = 0;
	assert_false(dotnetproc__sparse(f->p));
	f->p->last_sample_ns = now_ns();
	assert_int_equal(poll_once(f, d), RT_WAIT);	/* sampled lately: kept */
	dotnetproc__stats(f->p, &ps);
	assert_int_equal(ps.entries, METHODS);
	f->p->last_sample_ns = now_ns() - 2 * f->env.idle_release_ns;
	assert_int_equal(poll_once(f, d), RT_WAIT);
	dotnetproc__stats(f->p, &ps);
	assert_int_equal(ps.entries, 0);
	assert_true(dotnetproc__sparse(f->p));
	dotnet_runtime.describe(f->p, d, buf, sizeof(buf));
	assert_non_null(strstr(buf, "symbols freed 1 times while idle"));
}

/* ---- the bounded policy: a perf map we turned on goes off when idle, on again when sampled --- */

static void test_dotnetproc_idle_perf_map_off_then_on_again(void **state)
{
	struct fx *f = *state;
	char buf[1024];
	void *d;

	f->env.enable_perfmap = 1;
	f->env.perfmap_idle_ns = 1000000000ull;
	d = open_proc(f, "");
	poll_once(f, d);
	assert_int_equal(poll_until_answered(f, d), DOTNETPROC_ENABLED);
	f->p->last_sample_ns = now_ns();
	poll_once(f, d);	/* sampled lately: left on */
	assert_log(f, "enable 3\n");
	assert_true(map_exists(f));

	f->p->last_sample_ns = now_ns() - 2 * f->env.perfmap_idle_ns;
	assert_true(poll_until_log(f, d, "enable 3\ndisable\n"));
	poll_until_off(f, d);
	dotnet_runtime.describe(f->p, d, buf, sizeof(buf));
	assert_non_null(strstr(buf, "turned off 1 times idle, on again 0"));
	assert_int_equal(entries(f), 0);	/* nothing left to undo */
	poll_once(f, d);	/* still unsampled: stays off, no command */
	assert_log(f, "enable 3\ndisable\n");

	f->p->last_sample_ns = now_ns();	/* its next sample */
	assert_true(poll_until_log(f, d, "enable 3\ndisable\nenable 3\n"));
	assert_int_equal(entries(f), 1);	/* written down again before it was sent */
	assert_int_equal(poll_until_answered(f, d), DOTNETPROC_ENABLED);
	assert_true(map_exists(f));
	dotnet_runtime.describe(f->p, d, buf, sizeof(buf));
	assert_non_null(strstr(buf, "turned off 1 times idle, on again 1"));

	runtime__detach_all(f->p);	/* leaves it as found */
	assert_log(f, "enable 3\ndisable\nenable 3\ndisable\n");
	assert_int_equal(entries(f), 0);
}

/* Perf maps on from its start because spanprof started it (record's command: perfmaps_ours),
 * turned off idle: they stay off until its next sample, as ones turned on over the IPC do. */
static void test_dotnetproc_idle_off_of_perf_maps_on_from_start(void **state)
{
	struct fx *f = *state;
	void *d;

	f->env.enable_perfmap = 1;
	f->env.perfmaps_ours = 1;
	f->env.perfmap_idle_ns = 1000000000ull;
	d = open_proc(f, "map");
	f->p->last_sample_ns = now_ns();
	poll_once(f, d);
	assert_int_equal(dotnetproc__state(f->p, NULL), DOTNETPROC_READING);

	f->p->last_sample_ns = now_ns() - 2 * f->env.perfmap_idle_ns;
	assert_true(poll_until_log(f, d, "disable\n"));
	poll_until_off(f, d);
	for (int i = 0; i < 20; i++) {	/* still unsampled: stays off, no command */
		poll_once(f, d);
		usleep(5000);
	}
	assert_log(f, "disable\n");
	assert_false(map_exists(f));

	f->p->last_sample_ns = now_ns();	/* its next sample */
	assert_true(poll_until_log(f, d, "disable\nenable 3\n"));
	assert_int_equal(poll_until_answered(f, d), DOTNETPROC_ENABLED);
	assert_true(map_exists(f));
}

/* Appends n lines to the fake runtime's perf map, as new JIT methods would. */
static void grow_map(struct fx *f, int n)
{
	char path[PATH_MAX + 32];
	FILE *m;

	snprintf(path, sizeof(path), "%s/perf-%d.map", f->dir, (int)f->child);
	m = fopen(path, "a");
	assert_non_null(m);
	for (int i = 0; i < n; i++)
		fprintf(m, "%llx 40 [Fake] Fake.Type::New%d()[OptimizedTier1]\n",
			(unsigned long long)(BASE + 0x40ull * (METHODS + i)), i);
	fclose(m);
}

/* Polls n times, 5 ms apart (what the fake runtime is sent meanwhile is read from its log). */
static void poll_n(struct fx *f, void *d, int n)
{
	for (int i = 0; i < n; i++) {
		poll_once(f, d);
		usleep(5000);
	}
}

/* A perf map whose methods written at the enable (the live ones) pass the cap already is not
 * started afresh at once (that would write them again, and win nothing), at the first enable nor
 * on again after idle: only once it has grown to twice that. */
static void test_dotnetproc_replay_past_the_cap_is_not_started_afresh(void **state)
{
	struct fx *f = *state;
	void *d;

	f->env.enable_perfmap = 1;
	f->env.perfmap_max_bytes = 1024;	/* the fake's 64 methods are ~3 KiB */
	f->env.perfmap_idle_ns = 1000000000ull;
	d = open_proc(f, "");
	f->p->last_sample_ns = now_ns();
	poll_once(f, d);
	assert_int_equal(poll_until_answered(f, d), DOTNETPROC_ENABLED);
	poll_n(f, d, 20);
	assert_log(f, "enable 3\n");

	f->p->last_sample_ns = now_ns() - 2 * f->env.perfmap_idle_ns;
	assert_true(poll_until_log(f, d, "enable 3\ndisable\n"));
	poll_until_off(f, d);
	f->p->last_sample_ns = now_ns();	/* on again */
	assert_true(poll_until_log(f, d, "enable 3\ndisable\nenable 3\n"));
	assert_int_equal(poll_until_answered(f, d), DOTNETPROC_ENABLED);
	poll_n(f, d, 20);
	assert_log(f, "enable 3\ndisable\nenable 3\n");

	f->p->last_sample_ns = now_ns();
	grow_map(f, 2 * METHODS);	/* past twice what the enable wrote: started afresh */
	assert_true(poll_until_log(f, d, "enable 3\ndisable\nenable 3\ndisable\nenable 3\n"));
}

/* Started afresh, the runtime truncates the perf map and writes its live methods before it
 * answers. A method gone meanwhile (freed: not written again) keeps its name for the frames
 * sampled before, also when a poll meanwhile finds the file truncated. */
static void test_dotnetproc_start_afresh_keeps_names_of_freed_code(void **state)
{
	struct fx *f = *state;
	struct rt_symbol rs = { 0 };
	char buf[1024];
	void *d;

	f->env.enable_perfmap = 1;
	f->env.perfmap_max_bytes = 1024;
	d = open_proc(f, "slow");
	f->p->last_sample_ns = now_ns();
	poll_once(f, d);
	assert_int_equal(poll_until_answered(f, d), DOTNETPROC_ENABLED);
	poll_once(f, d);
	grow_map(f, 2 * METHODS);	/* New0..127, freed before the start afresh */
	assert_true(poll_until_log(f, d, "enable 3\ndisable\nenable 3\n"));
	for (double end = testutil__now_ms() + WAIT_MS; testutil__now_ms() < end; usleep(5000)) {
		poll_once(f, d);	/* until the answer is taken */
		dotnet_runtime.describe(f->p, d, buf, sizeof(buf));
		if (strstr(buf, "started afresh 1 times"))
			break;
	}
	assert_non_null(strstr(buf, "started afresh 1 times"));
	assert_int_equal(dotnet_runtime.symbolize(f->p, d, BASE + 0x40 * (METHODS + 5) + 1, 0, &rs),
			 0);
	assert_string_equal(rs.system_name, "[Fake] Fake.Type::New5()");
	assert_int_equal(dotnet_runtime.symbolize(f->p, d, BASE + 0x40 * 5 + 1, 0, &rs), 0);
	assert_string_equal(rs.system_name, "[Fake] Fake.Type::Method5()");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dotnetproc_sweep_undoes_a_dead_owners_perf_maps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotnetproc_sweep_leaves_a_live_owners_entries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotnetproc_sweep_passes_over_a_reused_pid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotnetproc_sweep_without_a_state_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotnetproc_enable_then_detach_undoes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotnetproc_perf_maps_not_ours_left_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotnetproc_enable_refused_forgets_its_entry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotnetproc_enable_only_when_sampled_and_asked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotnetproc_sparse_reads_only_what_was_sampled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotnetproc_sparse_goes_whole_when_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotnetproc_idle_release, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotnetproc_idle_perf_map_off_then_on_again, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_dotnetproc_idle_off_of_perf_maps_on_from_start,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotnetproc_replay_past_the_cap_is_not_started_afresh,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotnetproc_start_afresh_keeps_names_of_freed_code,
						setup, teardown),
	};

	if (argc == 3 && !strcmp(argv[1], "--fake-runtime"))
		return fake_runtime(argv[2]);
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
