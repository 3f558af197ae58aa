/* dirout.c: a directory of profiles, one file per series and window, bounded in total size. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dirout.h"
#include "exporter.h"
#include "log.h"
#include "profile.h"
#include "vec.h"

struct dirout {
	struct exporter x;	/* first: the allocation is the exporter */
	int dir_fd;
	char name_label[64];
	uint64_t max_bytes;
	struct export_stats st;
};

static void safe_name(const char *in, char *out, size_t len)
{
	size_t i = 0;

	for (; in && in[i] && i + 1 < len; i++)
		out[i] = (in[i] >= 'a' && in[i] <= 'z') || (in[i] >= 'A' && in[i] <= 'Z') ||
			 (in[i] >= '0' && in[i] <= '9') || in[i] == '.' || in[i] == '-' ? in[i] : '_';
	out[i] = 0;
	if (!i || !strcmp(out, ".") || !strcmp(out, ".."))
		snprintf(out, len, "%s", "unknown");
}

/* UTC time to the millisecond as 20261201T101500.250Z, so names sort by time and windows
 * shorter than a second keep names of their own. */
static void stamp(int64_t ns, char *buf, size_t len)
{
	time_t t = ns / 1000000000;
	struct tm tm;
	size_t n;

	gmtime_r(&t, &tm);
	n = strftime(buf, len, "%Y%m%dT%H%M%S", &tm);
	snprintf(buf + n, len - n, ".%03dZ", (int)(ns % 1000000000 / 1000000));
}

/* Write to a temporary file in the same directory, fsync, rename: readers never see half a file.
 * (EINVAL from renameat2: a file system without RENAME_NOREPLACE, renamed over.) */
static int write_one(int dir_fd, const char *sub, const char *name, const struct profile *prof)
{
	char tmp[320];
	FILE *f;
	int sfd, fd, err;

	if (mkdirat(dir_fd, sub, 0755) && errno != EEXIST)
		return -errno;
	sfd = openat(dir_fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0)
		return -errno;
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd = openat(sfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		close(sfd);
		return err;
	}
	err = pprof__write(prof, f);
	if (!err && (fflush(f) || fsync(fileno(f))))
		err = -errno;
	if (fclose(f) && !err)
		err = -errno;
	/* Never over a file already there (a window of the same name: a failure, counted). */
	if (!err && renameat2(sfd, tmp, sfd, name, RENAME_NOREPLACE) &&
	    (errno != EINVAL || renameat(sfd, tmp, sfd, name)))
		err = -errno;
	if (err)
		unlinkat(sfd, tmp, 0);
	close(sfd);
	return err;
}

struct old_file {
	char sub[256], name[256];
	struct timespec mtime;
	uint64_t size;
};

static int newest_first(const void *a, const void *b)
{
	const struct old_file *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
	return -strcmp(x->name, y->name);
}

int dirout__trim(int dir_fd, uint64_t max_bytes)
{
	struct old_file *files = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	int removed = 0, dfd = dup(dir_fd);
	struct dirent *de;
	DIR *d;

	if (dfd < 0 || !(d = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		return -errno;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		struct dirent *fe;
		DIR *sd;
		int sfd;

		/* Every service counts against the cap, ".hidden" ones too. */
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		sfd = openat(dir_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sfd < 0 || !(sd = fdopendir(sfd))) {
			if (sfd >= 0)
				close(sfd);
			continue;
		}
		while ((fe = readdir(sd))) {
			struct stat st;
			size_t nl = strlen(fe->d_name);

			if (fe->d_name[0] == '.' || nl < 6 || strcmp(fe->d_name + nl - 6, ".pb.gz") ||
			    fstatat(dirfd(sd), fe->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
			    !S_ISREG(st.st_mode) || VEC_RESERVE(files, cap, n + 1))
				continue;
			snprintf(files[n].sub, sizeof(files[n].sub), "%s", de->d_name);
			snprintf(files[n].name, sizeof(files[n].name), "%s", fe->d_name);
			files[n].mtime = st.st_mtim;
			files[n].size = st.st_size;
			n++;
		}
		closedir(sd);
	}
	closedir(d);
	if (n)
		qsort(files, n, sizeof(*files), newest_first);
	for (size_t i = 0; i < n; i++) {
		char path[520];

		total += files[i].size;
		if (total <= max_bytes)
			continue;
		snprintf(path, sizeof(path), "%s/%s", files[i].sub, files[i].name);
		if (!unlinkat(dir_fd, path, 0))
			removed++;
	}
	free(files);
	return removed;
}

static const char *label(const struct export_series *s, const char *key)
{
	for (size_t i = 0; i < s->n_labels; i++)
		if (!strcmp(s->labels[i].key, key))
			return s->labels[i].value;
	return NULL;
}

static int dir_export(void *self, const struct export_batch *b)
{
	struct dirout *d = self;
	char start[32], end[32], sub[256], name[128];
	int first = 0;

	d->st.batches++;
	stamp(b->start_ns, start, sizeof(start));
	stamp(b->end_ns, end, sizeof(end));
	for (size_t i = 0; i < b->n; i++) {
		int err;

		if (!profile__total(b->series[i].prof))
			continue;
		safe_name(label(&b->series[i], d->name_label), sub, sizeof(sub));
		snprintf(name, sizeof(name), "%s-%s.pb.gz", start, end);
		err = write_one(d->dir_fd, sub, name, b->series[i].prof);
		/* Series of one name (a service's pods) in one window: a file each, numbered. */
		for (size_t k = 2; err == -EEXIST && k <= b->n + 1; k++) {
			snprintf(name, sizeof(name), "%s-%s.%zu.pb.gz", start, end, k);
			err = write_one(d->dir_fd, sub, name, b->series[i].prof);
		}
		if (err) {
			log_error("cannot write %s/%s: %s", sub, name, strerror(-err));
			d->st.failed++;
			first = first ? first : err;
			continue;
		}
		d->st.sent_ok++;
	}
	if (d->max_bytes)
		dirout__trim(d->dir_fd, d->max_bytes);
	return first;
}

static int dir_flush(void *self, uint32_t timeout_ms)
{
	return 0;	/* written synchronously */
}

static void dir_stats(void *self, struct export_stats *out)
{
	*out = ((struct dirout *)self)->st;
}

static void dir_free(void *self)
{
	struct dirout *d = self;

	if (!d)
		return;
	close(d->dir_fd);
	free(d);
}

static const struct exporter_ops dir_ops = {
	.name = "dir",
	.export = dir_export,
	.flush = dir_flush,
	.stats = dir_stats,
	.free = dir_free,
};

struct exporter *dirout__new(const char *dir, const char *name_label, uint64_t max_bytes,
			     char *err, size_t errlen)
{
	struct dirout *d;
	int fd;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s; give a writable --output-dir", dir,
			 strerror(errno));
		return NULL;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || faccessat(fd, ".", W_OK, 0)) {
		snprintf(err, errlen, "cannot write to %s: %s; give a writable --output-dir", dir,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		close(fd);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->dir_fd = fd;
	snprintf(d->name_label, sizeof(d->name_label), "%s", name_label);
	d->max_bytes = max_bytes;
	d->x.ops = &dir_ops;
	d->x.self = d;
	return &d->x;
}
