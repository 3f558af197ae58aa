/* test_dirout.c: unit tests for user/export/dirout.c: one pprof file per series and window under
 * DIR/<service>/, names sanitised, atomic writes, the size cap, symlinks, in a temp dir. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dirout.h"
#include "exporter.h"
#include "profile.h"
#include "testutil.h"

#define NS 1000000000ll

static char tmp[64];	/* /tmp/test_dirout.XXXXXX */
static char dir[128];	/* tmp/out: the exporter's directory */
static struct profile *prof, *prof2, *empty;
static int64_t t0;	/* 2026-12-01T10:15:00Z */

static struct profile *make_profile(const char *leaf, uint64_t count)
{
	struct profile_opts o = { .period_ns = 10000000 };
	struct profile *p = profile__new(&o);
	uint32_t locs[2];

	assert_non_null(p);
	if (!count)
		return p;
	locs[1] = profile__location(p, 0, 0x1000, profile__function(p, "main", NULL, NULL));
	locs[0] = profile__location(p, 0, 0x2000, profile__function(p, leaf, NULL, NULL));
	assert_int_equal(profile__add(p, locs, 2, NULL, 0, count), 0);
	return p;
}

static void *pprof_of(const struct profile *p, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	assert_non_null(f);
	assert_int_equal(pprof__write(p, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* The file at path is p's pprof, byte for byte. */
static void assert_file_is(const char *path, const struct profile *p)
{
	size_t glen, wlen;
	void *got = testutil__slurp(path, &glen), *want;

	assert_non_null(got);
	want = pprof_of(p, &wlen);
	assert_int_equal(glen, wlen);
	assert_memory_equal(got, want, wlen);
	free(got);
	free(want);
}

/* Entries of a directory, sorted, "" separated by ' '; hidden ones included. */
static void list_dir(const char *path, char *out, size_t len)
{
	struct dirent **ents;
	int n = scandir(path, &ents, NULL, alphasort);

	out[0] = 0;
	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		if (strcmp(ents[i]->d_name, ".") && strcmp(ents[i]->d_name, "..")) {
			if (out[0])
				strncat(out, " ", len - strlen(out) - 1);
			strncat(out, ents[i]->d_name, len - strlen(out) - 1);
		}
		free(ents[i]);
	}
	free(ents);
}

static struct exporter *cur;	/* the test's exporter, freed by teardown if the test fails */

static struct exporter *open_dir(uint64_t max_bytes)
{
	char err[256] = "";

	cur = dirout__new(dir, "service_name", max_bytes, err, sizeof(err));
	if (!cur)
		fail_msg("dirout__new: %s", err);
	return cur;
}

static void close_dir(void)
{
	cur->ops->free(cur->self);
	cur = NULL;
}

/* Export one window [start, start + 15 s) with one series per service (NULL: no label). */
static int export_until(struct exporter *x, int64_t start, int64_t end,
			const char *const *services, struct profile *const *profs, size_t n)
{
	struct pf_label labels[8][2];
	struct export_series s[8];
	struct export_batch b = { .start_ns = start, .end_ns = end, .series = s, .n = n };

	assert_true(n <= 8);
	for (size_t i = 0; i < n; i++) {
		labels[i][0] = (struct pf_label){ "__name__", "process_cpu", 0 };
		labels[i][1] = (struct pf_label){ "service_name", services[i], 0 };
		s[i] = (struct export_series){ .labels = labels[i], .n_labels = services[i] ? 2 : 1,
					       .prof = profs[i] };
	}
	return x->ops->export(x->self, &b);
}

static int export(struct exporter *x, int64_t start, const char *const *services,
		  struct profile *const *profs, size_t n)
{
	return export_until(x, start, start + 15 * NS, services, profs, n);
}

static int export1(struct exporter *x, int64_t start, const char *service, struct profile *p)
{
	return export(x, start, &service, &p, 1);
}

static int group_setup(void **state)
{
	struct tm tm = { .tm_year = 126, .tm_mon = 11, .tm_mday = 1, .tm_hour = 10, .tm_min = 15 };

	t0 = (int64_t)timegm(&tm) * NS;
	if (!testutil__mkdtemp(tmp, sizeof(tmp)))
		return -1;
	snprintf(dir, sizeof(dir), "%s/out", tmp);
	prof = make_profile("work", 3);
	prof2 = make_profile("other", 7);
	empty = make_profile("none", 0);
	return 0;
}

static int group_teardown(void **state)
{
	profile__free(prof);
	profile__free(prof2);
	profile__free(empty);
	return testutil__rm_rf(tmp);
}

static int teardown(void **state)
{
	if (cur)
		close_dir();
	return 0;
}

static int setup(void **state)
{
	return testutil__empty_dir(tmp);
}

/* ---- tests ------------------------------------------------------------------------------------ */

/* DIR/<service>/<start>-<end>.pb.gz per series, the pprof of its own profile. */
static void test_dirout_file_per_series(void **state)
{
	const char *services[] = { "api", "worker" };
	struct profile *profs[] = { prof, prof2 };
	struct exporter *x = open_dir(0);
	struct export_stats st;
	char path[512];

	assert_string_equal(x->ops->name, "dir");
	assert_true(testutil__exists("%s", dir));	/* created */
	assert_int_equal(export(x, t0, services, profs, 2), 0);
	assert_int_equal(x->ops->flush(x->self, 10), 0);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s/20261201T101500.000Z-20261201T101515.000Z.pb.gz", dir,
			 services[i]);
		assert_file_is(path, profs[i]);
	}
	/* The next window: a second file beside the first. */
	assert_int_equal(export1(x, t0 + 15 * NS, "api", prof), 0);
	list_dir(strcat(strcpy(path, dir), "/api"), path, sizeof(path));
	assert_string_equal(path, "20261201T101500.000Z-20261201T101515.000Z.pb.gz "
				  "20261201T101515.000Z-20261201T101530.000Z.pb.gz");
	x->ops->stats(x->self, &st);
	assert_int_equal(st.batches, 2);
	assert_int_equal(st.sent_ok, 3);
	assert_int_equal(st.failed, 0);
	close_dir();
}

/* Service names become one safe path component: nothing escapes DIR. */
static void test_dirout_service_names_sanitised(void **state)
{
	const char *services[] = { "../x", "a/b c", "..", "", NULL, "ok-1.2_3" };
	struct profile *profs[] = { prof, prof, prof, prof, prof, prof };
	struct exporter *x = open_dir(0);
	char names[512];

	assert_int_equal(export(x, t0, services, profs, 6), 0);
	list_dir(dir, names, sizeof(names));
	assert_string_equal(names, ".._x a_b_c ok-1.2_3 unknown");
	list_dir(tmp, names, sizeof(names));
	assert_string_equal(names, "out");	/* nothing written beside DIR ("..") */
	assert_false(testutil__exists("%s/../x", dir));
	assert_true(testutil__exists("%s/.._x/20261201T101500.000Z-20261201T101515.000Z.pb.gz", dir));
	assert_true(testutil__exists("%s/unknown/20261201T101500.000Z-20261201T101515.000Z.pb.gz", dir));
	close_dir();
}

/* Atomic: only the final name appears, no temporary file is left behind. */
static void test_dirout_atomic_no_temp_left(void **state)
{
	struct exporter *x = open_dir(0);
	char path[256], names[512];

	assert_int_equal(export1(x, t0, "api", prof), 0);
	snprintf(path, sizeof(path), "%s/api", dir);
	list_dir(path, names, sizeof(names));
	assert_string_equal(names, "20261201T101500.000Z-20261201T101515.000Z.pb.gz");

	/* A failed rename (directories squat the name and the one numbered after it) leaves no
	 * temporary file either. */
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/api/20261201T101515.000Z-20261201T101530.000Z%s.pb.gz",
			 dir, i ? ".2" : "");
		assert_int_equal(mkdir(path, 0755), 0);
	}
	assert_true(export1(x, t0 + 15 * NS, "api", prof) < 0);
	snprintf(path, sizeof(path), "%s/api", dir);
	list_dir(path, names, sizeof(names));
	assert_string_equal(names, "20261201T101500.000Z-20261201T101515.000Z.pb.gz "
				   "20261201T101515.000Z-20261201T101530.000Z.2.pb.gz "
				   "20261201T101515.000Z-20261201T101530.000Z.pb.gz");
	close_dir();
}

/* A series without samples writes nothing (not even its directory). */
static void test_dirout_empty_profiles_skipped(void **state)
{
	const char *services[] = { "idle", "busy" };
	struct profile *profs[] = { empty, prof };
	struct exporter *x = open_dir(0);
	struct export_stats st;
	char names[256];

	assert_int_equal(export(x, t0, services, profs, 2), 0);
	list_dir(dir, names, sizeof(names));
	assert_string_equal(names, "busy");
	x->ops->stats(x->self, &st);
	assert_int_equal(st.sent_ok, 1);
	assert_int_equal(st.failed, 0);
	close_dir();
}

/* Past the cap the oldest files go, across services; the newest stay. */
static void test_dirout_size_cap_keeps_newest(void **state)
{
	char path[512], names[1024];
	struct exporter *x;
	size_t len;
	void *one = pprof_of(prof, &len);

	free(one);
	x = open_dir(2 * len + len / 2);	/* room for two files */
	for (int i = 0; i < 5; i++)
		assert_int_equal(export1(x, t0 + i * 15 * NS, i < 3 ? "api" : "web", prof), 0);
	snprintf(path, sizeof(path), "%s/api", dir);
	list_dir(path, names, sizeof(names));
	assert_string_equal(names, "");
	snprintf(path, sizeof(path), "%s/web", dir);
	list_dir(path, names, sizeof(names));
	assert_string_equal(names, "20261201T101545.000Z-20261201T101600.000Z.pb.gz "
				   "20261201T101600.000Z-20261201T101615.000Z.pb.gz");
	close_dir();
}

/* dirout__trim: by modification time, .pb.gz regular files only, symlinked subdirs untouched. */
static void test_dirout_trim_oldest_first(void **state)
{
	char path[512], names[1024], outside[256];
	struct timespec ts[2];
	int fd;

	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/svc", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	/* Five 1000-byte files; names out of time order on purpose: age is the mtime. */
	for (int i = 0; i < 5; i++) {
		char buf[1000] = { 0 };

		snprintf(path, sizeof(path), "%s/svc/f%d.pb.gz", dir, 4 - i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, buf, sizeof(buf)), sizeof(buf));
		ts[0].tv_sec = ts[1].tv_sec = 1700000000 + i * 60;
		ts[0].tv_nsec = ts[1].tv_nsec = 0;
		assert_int_equal(futimens(fd, ts), 0);
		close(fd);
	}
	/* Not profiles: never counted nor removed. */
	snprintf(path, sizeof(path), "%s/svc/notes.txt", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/svc/.tmp.pb.gz", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	/* A subdirectory that is a symlink elsewhere: not followed. */
	snprintf(outside, sizeof(outside), "%s/outside", tmp);
	assert_int_equal(mkdir(outside, 0755), 0);
	snprintf(path, sizeof(path), "%s/old.pb.gz", outside);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
	snprintf(path, sizeof(path), "%s/link", dir);
	assert_int_equal(symlink(outside, path), 0);

	fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(dirout__trim(fd, 2500), 3);	/* f4 f3 f2 (oldest) go */
	snprintf(path, sizeof(path), "%s/svc", dir);
	list_dir(path, names, sizeof(names));
	assert_string_equal(names, ".tmp.pb.gz f0.pb.gz f1.pb.gz notes.txt");
	assert_int_equal(dirout__trim(fd, 2500), 0);
	assert_int_equal(dirout__trim(fd, 0), 2);
	assert_true(testutil__exists("%s/old.pb.gz", outside));
	close(fd);
}

/* A symlink planted as the service directory is not followed: nothing is written through it. */
static void test_dirout_symlinked_service_dir_not_followed(void **state)
{
	const char *services[] = { "evil", "good" };
	struct profile *profs[] = { prof, prof };
	char path[256], outside[256], names[256];
	struct export_stats st;
	struct exporter *x = open_dir(0);

	snprintf(outside, sizeof(outside), "%s/outside", tmp);
	assert_int_equal(mkdir(outside, 0755), 0);
	snprintf(path, sizeof(path), "%s/evil", dir);
	assert_int_equal(symlink(outside, path), 0);
	assert_true(export(x, t0, services, profs, 2) < 0);
	list_dir(outside, names, sizeof(names));
	assert_string_equal(names, "");
	assert_true(testutil__exists("%s/good/20261201T101500.000Z-20261201T101515.000Z.pb.gz", dir));
	x->ops->stats(x->self, &st);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.sent_ok, 1);
	close_dir();
}

/* A directory that cannot be one: NULL and a one-line reason naming it. */
static void test_dirout_bad_dir_refused(void **state)
{
	char path[256], err[256];
	int fd;

	snprintf(path, sizeof(path), "%s/file", tmp);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	err[0] = 0;
	assert_null(dirout__new(path, "service_name", 0, err, sizeof(err)));
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, strerror(ENOTDIR)));
	assert_null(strchr(err, '\n'));

	snprintf(path, sizeof(path), "%s/file/sub", tmp);
	err[0] = 0;
	assert_null(dirout__new(path, "service_name", 0, err, sizeof(err)));
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "--output-dir"));
	assert_null(strchr(err, '\n'));

	/* Missing parents are not created: only dir itself. */
	snprintf(path, sizeof(path), "%s/a/b", tmp);
	err[0] = 0;
	assert_null(dirout__new(path, "service_name", 0, err, sizeof(err)));
	assert_non_null(strstr(err, strerror(ENOENT)));
}

/* The cap applies to every service directory, whatever its (sanitised) name. */
static void test_dirout_size_cap_applies_to_every_service(void **state)
{
	char path[512], names[1024];
	struct exporter *x;
	size_t len;
	void *one = pprof_of(prof, &len);

	free(one);
	x = open_dir(len + len / 2);	/* room for one file */
	assert_int_equal(export1(x, t0, "../x", prof), 0);	/* stored as .._x */
	assert_int_equal(export1(x, t0 + 15 * NS, "../x", prof), 0);
	assert_int_equal(export1(x, t0 + 30 * NS, "../x", prof), 0);
	snprintf(path, sizeof(path), "%s/.._x", dir);
	list_dir(path, names, sizeof(names));
	assert_string_equal(names, "20261201T101530.000Z-20261201T101545.000Z.pb.gz");
	close_dir();
}

/* Windows shorter than a second (--interval 0.1) keep a file each; a file already there is
 * never replaced (series of one name in one window, e.g. a service's two pods: numbered). */
static void test_dirout_subsecond_windows_never_overwrite(void **state)
{
	const char *api = "api", *two[] = { "api", "api" };
	struct profile *profs[] = { prof, prof2 };
	struct exporter *x = open_dir(0);
	struct export_stats st;
	char path[256], names[512];

	for (int i = 0; i < 3; i++)
		assert_int_equal(export_until(x, t0 + i * NS / 10, t0 + (i + 1) * NS / 10, &api,
					      &prof, 1), 0);
	snprintf(path, sizeof(path), "%s/api", dir);
	list_dir(path, names, sizeof(names));
	assert_string_equal(names, "20261201T101500.000Z-20261201T101500.100Z.pb.gz "
				   "20261201T101500.100Z-20261201T101500.200Z.pb.gz "
				   "20261201T101500.200Z-20261201T101500.300Z.pb.gz");
	assert_int_equal(export_until(x, t0 + 3 * NS / 10, t0 + 4 * NS / 10, two, profs, 2), 0);
	x->ops->stats(x->self, &st);
	assert_int_equal(st.sent_ok, 5);
	assert_int_equal(st.failed, 0);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/api/20261201T101500.300Z-20261201T101500.400Z%s.pb.gz",
			 dir, i ? ".2" : "");
		assert_file_is(path, profs[i]);
	}
	close_dir();
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_dirout_file_per_series),
		T(test_dirout_service_names_sanitised),
		T(test_dirout_atomic_no_temp_left),
		T(test_dirout_empty_profiles_skipped),
		T(test_dirout_size_cap_keeps_newest),
		T(test_dirout_trim_oldest_first),
		T(test_dirout_symlinked_service_dir_not_followed),
		T(test_dirout_bad_dir_refused),
		T(test_dirout_size_cap_applies_to_every_service),
		T(test_dirout_subsecond_windows_never_overwrite),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
