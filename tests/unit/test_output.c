/* test_output.c: unit tests for user/export/output.c: format choice, opening (with its one-line
 * reasons), writing, abort, and the file exporter over several outputs, in a temp dir. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "exporter.h"
#include "output.h"
#include "profile.h"
#include "testutil.h"

static char tmp[64];	/* /tmp/test_output.XXXXXX */
static struct profile *prof, *prof2;

static void path_in(char *out, size_t len, const char *name)
{
	testutil__path(out, len, tmp, name);
}

/* A small profile: main -> work, twice; main alone once. */
static struct profile *make_profile(const char *leaf, uint64_t count)
{
	struct profile_opts o = { .period_ns = 10000000, .time_ns = 1700000000000000000ll,
				  .duration_ns = 1000000000 };
	struct profile *p = profile__new(&o);
	struct pf_label l = { "process_name", "app", 0 };
	uint32_t locs[2];

	assert_non_null(p);
	locs[1] = profile__location(p, 0, 0x1000, profile__function(p, "main", NULL, NULL));
	locs[0] = profile__location(p, 0, 0x2000, profile__function(p, leaf, NULL, NULL));
	assert_int_equal(profile__add(p, locs, 2, &l, 1, count), 0);
	assert_int_equal(profile__add(p, locs + 1, 1, &l, 1, 1), 0);
	return p;
}

/* What the folded writer makes of p, as output__write calls it. */
static char *folded_of(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(folded__write(p, f, "process_name"), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static int group_setup(void **state)
{
	/* an unprivileged child may enter it */
	if (!testutil__mkdtemp(tmp, sizeof(tmp)) || chmod(tmp, 0755))
		return -1;
	prof = make_profile("work", 2);
	prof2 = make_profile("other", 5);
	return 0;
}

static int group_teardown(void **state)
{
	profile__free(prof);
	profile__free(prof2);
	return testutil__rm_rf(tmp);
}

static int setup(void **state)
{
	return testutil__empty_dir(tmp);
}

/* ---- format ----------------------------------------------------------------------------------- */

static void test_output_format_by_suffix_and_forced(void **state)
{
	assert_int_equal(output__format("cpu.pb.gz", FMT_AUTO), FMT_PPROF);
	assert_int_equal(output__format("/a/b/.pb.gz", FMT_AUTO), FMT_PPROF);
	assert_int_equal(output__format("cpu.svg", FMT_AUTO), FMT_SVG);
	assert_int_equal(output__format("cpu.folded", FMT_AUTO), FMT_FOLDED);
	assert_int_equal(output__format("cpu.gz", FMT_AUTO), FMT_FOLDED);
	assert_int_equal(output__format("cpu.pb", FMT_AUTO), FMT_FOLDED);
	assert_int_equal(output__format("cpu.svg.txt", FMT_AUTO), FMT_FOLDED);
	assert_int_equal(output__format("svg", FMT_AUTO), FMT_FOLDED);
	assert_int_equal(output__format("", FMT_AUTO), FMT_FOLDED);
	/* Forced wins over the suffix. */
	assert_int_equal(output__format("cpu.pb.gz", FMT_SVG), FMT_SVG);
	assert_int_equal(output__format("cpu.svg", FMT_FOLDED), FMT_FOLDED);
	assert_int_equal(output__format("cpu.txt", FMT_PPROF), FMT_PPROF);
	assert_string_equal(output__format_name(FMT_PPROF), "pprof");
	assert_string_equal(output__format_name(FMT_SVG), "svg flame graph");
	assert_string_equal(output__format_name(FMT_FOLDED), "folded stacks");
}

/* ---- open --------------------------------------------------------------------------------------- */

static void assert_one_line_reason(const char *err, const char *path)
{
	assert_non_null(strstr(err, path));
	assert_null(strchr(err, '\n'));
	assert_non_null(strstr(err, "-o"));	/* names the fix */
}

static void test_output_open_refuses_directory(void **state)
{
	struct output o;
	char dir[128], err[256] = "";

	path_in(dir, sizeof(dir), "adir");
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(output__open(&o, dir, FMT_AUTO, err, sizeof(err)), -EISDIR);
	assert_int_equal(o.fd, -1);
	assert_one_line_reason(err, dir);
	assert_non_null(strstr(err, "it is a directory"));
	output__abort(&o);	/* harmless */
	assert_true(testutil__exists("%s", dir));
}

static void test_output_open_refuses_missing_dir(void **state)
{
	struct output o;
	char path[128], err[256] = "";

	path_in(path, sizeof(path), "no/such/dir/cpu.pb.gz");
	assert_int_equal(output__open(&o, path, FMT_AUTO, err, sizeof(err)), -ENOENT);
	assert_one_line_reason(err, path);
	assert_non_null(strstr(err, strerror(ENOENT)));
	assert_false(testutil__exists("%s", path));

	/* A path through a regular file. */
	path_in(path, sizeof(path), "afile");
	testutil__write_file(NULL, path, "x");
	path_in(path, sizeof(path), "afile/cpu.svg");
	memset(err, 0, sizeof(err));
	assert_int_equal(output__open(&o, path, FMT_AUTO, err, sizeof(err)), -ENOTDIR);
	assert_one_line_reason(err, path);
}

/* A directory the user may not write to: opened by an unprivileged child. */
static void test_output_open_refuses_unwritable(void **state)
{
	char dir[128], path[160], err[256] = "";
	int fds[2], status;
	struct output o;
	pid_t pid;
	ssize_t n;

	path_in(dir, sizeof(dir), "ro");
	assert_int_equal(mkdir(dir, 0555), 0);
	assert_int_equal(chmod(dir, 0555), 0);
	snprintf(path, sizeof(path), "%s/cpu.pb.gz", dir);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int rc;

		close(fds[0]);
		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(99);
		rc = output__open(&o, path, FMT_PPROF, err, sizeof(err));
		if (write(fds[1], err, strlen(err) + 1) < 0)
			_exit(98);
		_exit(rc == -EACCES ? 0 : 1);
	}
	close(fds[1]);
	n = read(fds[0], err, sizeof(err) - 1);
	close(fds[0]);
	status = testutil__wait(pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(n > 0);
	assert_one_line_reason(err, path);
	assert_non_null(strstr(err, strerror(EACCES)));
	assert_false(testutil__exists("%s", path));
}

/* ---- write / abort ---------------------------------------------------------------------------------- */

/* Opening keeps what is there; writing replaces it entirely, in the chosen format. */
static void test_output_write_replaces_content(void **state)
{
	char path[128], err[256], *got, *want, old[8192];
	struct output o;
	size_t len;

	path_in(path, sizeof(path), "cpu.txt");
	memset(old, 'A', sizeof(old) - 1);
	old[sizeof(old) - 1] = 0;
	testutil__write_file(NULL, path, old);
	assert_int_equal(output__open(&o, path, FMT_AUTO, err, sizeof(err)), 0);
	assert_int_equal(o.format, FMT_FOLDED);
	assert_false(o.created);
	got = testutil__slurp(path, NULL);
	assert_string_equal(got, old);	/* untouched until the end of the run */
	free(got);

	assert_int_equal(output__write(&o, prof), 0);
	assert_int_equal(o.fd, -1);
	got = testutil__slurp(path, &len);
	want = folded_of(prof);
	assert_string_equal(got, want);	/* nothing of the old, longer content remains */
	free(got);
	free(want);
	/* Written and closed: a second write has nothing to write to; abort keeps the file. */
	assert_int_equal(output__write(&o, prof), -EBADF);
	output__abort(&o);
	assert_true(testutil__exists("%s", path));
}

static void test_output_write_each_format(void **state)
{
	char path[128], err[256], *got;
	struct output o;
	size_t len;

	path_in(path, sizeof(path), "cpu.pb.gz");
	assert_int_equal(output__open(&o, path, FMT_AUTO, err, sizeof(err)), 0);
	assert_int_equal(output__write(&o, prof), 0);
	got = testutil__slurp(path, &len);
	assert_true(len > 20);
	assert_int_equal((unsigned char)got[0], 0x1f);	/* gzip */
	assert_int_equal((unsigned char)got[1], 0x8b);
	free(got);

	path_in(path, sizeof(path), "cpu.svg");
	assert_int_equal(output__open(&o, path, FMT_AUTO, err, sizeof(err)), 0);
	assert_int_equal(output__write(&o, prof), 0);
	got = testutil__slurp(path, &len);
	assert_non_null(strstr(got, "<svg"));
	assert_non_null(strstr(got, "work"));
	free(got);

	/* Forced: folded into a .svg name. */
	assert_int_equal(output__open(&o, path, FMT_FOLDED, err, sizeof(err)), 0);
	assert_int_equal(output__write(&o, prof), 0);
	got = testutil__slurp(path, &len);
	assert_null(strstr(got, "<svg"));
	assert_non_null(strstr(got, "app;main;work 2\n"));
	free(got);
}

/* A path that opens is a path that can be written: a character device (/dev/null, /dev/stdout
 * on a terminal) or a pipe has no content to replace, and must not fail only at the end. */
static void test_output_write_to_device_or_pipe(void **state)
{
	char err[256], path[64], buf[4096];
	struct output o;
	int fds[2];
	ssize_t n;

	assert_int_equal(output__open(&o, "/dev/null", FMT_AUTO, err, sizeof(err)), 0);
	assert_false(o.created);
	assert_int_equal(output__write(&o, prof), 0);
	output__abort(&o);

	assert_int_equal(pipe(fds), 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[1]);
	assert_int_equal(output__open(&o, path, FMT_FOLDED, err, sizeof(err)), 0);
	close(fds[1]);
	assert_int_equal(output__write(&o, prof), 0);
	output__abort(&o);
	n = read(fds[0], buf, sizeof(buf) - 1);
	close(fds[0]);
	assert_true(n > 0);
	buf[n] = 0;
	assert_non_null(strstr(buf, "app;main;work 2\n"));
}

static void test_output_abort_removes_created_file(void **state)
{
	char path[128], err[256];
	struct output o;

	path_in(path, sizeof(path), "new.pb.gz");
	assert_int_equal(output__open(&o, path, FMT_AUTO, err, sizeof(err)), 0);
	assert_true(o.created);
	/* written to a temporary file, renamed when complete */
	assert_false(testutil__exists("%s", path));
	output__abort(&o);
	assert_false(testutil__exists("%s", path));
	assert_int_equal(o.fd, -1);
	output__abort(&o);	/* twice: nothing */
}

static void test_output_abort_keeps_existing_file(void **state)
{
	char path[128], err[256], *got;
	struct output o;

	path_in(path, sizeof(path), "old.folded");
	testutil__write_file(NULL, path, "precious 1\n");
	assert_int_equal(output__open(&o, path, FMT_AUTO, err, sizeof(err)), 0);
	assert_false(o.created);
	output__abort(&o);
	got = testutil__slurp(path, NULL);
	assert_non_null(got);
	assert_string_equal(got, "precious 1\n");
	free(got);
}

/* ---- the exporter ---------------------------------------------------------------------------------- */

static struct export_batch batch_of(const struct export_series *s, size_t n)
{
	return (struct export_batch){ .start_ns = 1, .end_ns = 2, .series = s, .n = n };
}

static void test_output_exporter_writes_every_output(void **state)
{
	const char *names[] = { "a.pb.gz", "b.svg", "c.folded" };
	struct export_series s[2] = { { .prof = prof }, { .prof = prof2 } };
	struct export_batch b = batch_of(s, 2);
	struct output outs[3];
	struct export_stats st;
	struct exporter *x;
	char paths[3][128], err[256], *got, *want;

	for (int i = 0; i < 3; i++) {
		path_in(paths[i], sizeof(paths[i]), names[i]);
		assert_int_equal(output__open(&outs[i], paths[i], FMT_AUTO, err, sizeof(err)), 0);
	}
	x = output__exporter(outs, 3);
	assert_non_null(x);
	assert_string_equal(x->ops->name, "file");
	assert_int_equal(x->ops->export(x->self, &b), 0);
	assert_int_equal(x->ops->flush(x->self, 100), 0);
	for (int i = 0; i < 3; i++) {
		struct stat sb;

		assert_int_equal(stat(paths[i], &sb), 0);
		assert_true(sb.st_size > 0);
	}
	/* The batch's first profile is the one written. */
	got = testutil__slurp(paths[2], NULL);
	want = folded_of(prof);
	assert_string_equal(got, want);
	free(got);
	free(want);
	x->ops->stats(x->self, &st);
	assert_int_equal(st.batches, 1);
	assert_int_equal(st.sent_ok, 3);
	assert_int_equal(st.failed, 0);
	x->ops->free(x->self);
}

/* One output that fails does not keep the others from being written; export returns its error. */
static void test_output_exporter_failure_does_not_stop_others(void **state)
{
	struct export_series s = { .prof = prof };
	struct export_batch b = batch_of(&s, 1);
	struct output outs[4];
	struct export_stats st;
	struct exporter *x;
	char paths[4][128], err[256];
	int rc;

	if (access("/dev/full", W_OK))
		skip();
	path_in(paths[1], sizeof(paths[1]), "ok1.pb.gz");
	snprintf(paths[0], sizeof(paths[0]), "/dev/full");	/* first: the error is not masked */
	path_in(paths[2], sizeof(paths[2]), "aborted.folded");
	path_in(paths[3], sizeof(paths[3]), "ok2.folded");
	for (int i = 0; i < 4; i++)
		assert_int_equal(output__open(&outs[i], paths[i], FMT_FOLDED, err, sizeof(err)), 0);
	output__abort(&outs[2]);	/* closed before the end: cannot be written */
	x = output__exporter(outs, 4);
	assert_non_null(x);
	rc = x->ops->export(x->self, &b);
	assert_true(rc < 0);
	assert_int_not_equal(rc, -EBADF);	/* the first failure's error */
	assert_true(testutil__exists("%s", paths[1]));
	assert_true(testutil__exists("%s", paths[3]));
	{
		char *got = testutil__slurp(paths[3], NULL), *want = folded_of(prof);

		assert_string_equal(got, want);
		free(got);
		free(want);
	}
	x->ops->stats(x->self, &st);
	assert_int_equal(st.sent_ok, 2);
	assert_int_equal(st.failed, 2);
	x->ops->free(x->self);
}

/* A regular file whose write fails midway (EFBIG past RLIMIT_FSIZE, as ENOSPC would): the
 * error is returned, the small outputs around it are still written. In a child, for the limit. */
static void test_output_exporter_write_error_returned(void **state)
{
	char paths[3][128], err[256];
	struct output outs[3];
	int status;
	pid_t pid;

	path_in(paths[0], sizeof(paths[0]), "small1.folded");
	path_in(paths[1], sizeof(paths[1]), "big.svg");	/* the flame graph is far over 4 KiB */
	path_in(paths[2], sizeof(paths[2]), "small2.folded");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { .rlim_cur = 4096, .rlim_max = 4096 };
		struct export_series s = { .prof = prof };
		struct export_batch b = batch_of(&s, 1);
		struct export_stats st;
		struct exporter *x;
		int rc;

		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl))
			_exit(90);
		for (int i = 0; i < 3; i++)
			if (output__open(&outs[i], paths[i], FMT_AUTO, err, sizeof(err)))
				_exit(91);
		x = output__exporter(outs, 3);
		rc = x->ops->export(x->self, &b);
		x->ops->stats(x->self, &st);
		x->ops->free(x->self);
		if (rc != -EFBIG)
			_exit(92);
		_exit(st.sent_ok == 2 && st.failed == 1 ? 0 : 93);
	}
	status = testutil__wait(pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	for (int i = 0; i < 3; i += 2) {
		char *got = testutil__slurp(paths[i], NULL), *want = folded_of(prof);

		assert_non_null(got);
		assert_string_equal(got, want);
		free(got);
		free(want);
	}
}

/* A file this run created whose write failed is removed by abort (struct output: "created: did
 * not exist before: removed again if the run fails"), not left behind truncated. */
static void test_output_abort_after_failed_write_removes_created_file(void **state)
{
	char path[128], err[256];
	int status;
	pid_t pid;

	path_in(path, sizeof(path), "cut.svg");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { .rlim_cur = 4096, .rlim_max = 4096 };
		struct output o;

		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl) || output__open(&o, path, FMT_AUTO, err, sizeof(err)))
			_exit(90);
		if (!o.created || output__write(&o, prof) != -EFBIG)
			_exit(91);
		output__abort(&o);	/* what record does when the export failed */
		_exit(0);
	}
	status = testutil__wait(pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_false(testutil__exists("%s", path));
}

/* A batch without any profile: nothing to write, every output counted as failed. */
static void test_output_exporter_empty_batch(void **state)
{
	struct export_batch b = batch_of(NULL, 0);
	struct output o;
	struct export_stats st;
	struct exporter *x;
	char path[128], err[256];

	path_in(path, sizeof(path), "e.folded");
	assert_int_equal(output__open(&o, path, FMT_AUTO, err, sizeof(err)), 0);
	x = output__exporter(&o, 1);
	assert_int_equal(x->ops->export(x->self, &b), -EINVAL);
	x->ops->stats(x->self, &st);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.sent_ok, 0);
	x->ops->free(x->self);
	output__abort(&o);
	assert_false(testutil__exists("%s", path));
}

int main(void)
{
#define T(f) cmocka_unit_test_setup(f, setup)
	const struct CMUnitTest tests[] = {
		T(test_output_format_by_suffix_and_forced),
		T(test_output_open_refuses_directory),
		T(test_output_open_refuses_missing_dir),
		T(test_output_open_refuses_unwritable),
		T(test_output_write_replaces_content),
		T(test_output_write_each_format),
		T(test_output_write_to_device_or_pipe),
		T(test_output_abort_removes_created_file),
		T(test_output_abort_keeps_existing_file),
		T(test_output_exporter_writes_every_output),
		T(test_output_exporter_failure_does_not_stop_others),
		T(test_output_exporter_write_error_returned),
		T(test_output_abort_after_failed_write_removes_created_file),
		T(test_output_exporter_empty_batch),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
