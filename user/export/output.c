/* output.c: output files of a recording. */
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exporter.h"
#include "log.h"
#include "otlp.h"
#include "output.h"
#include "profile.h"

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

enum out_format output__format(const char *path, enum out_format forced)
{
	size_t n = strlen(path);

	if (forced != FMT_AUTO)
		return forced;
	/* before .pb.gz: an OTLP file may be gzip'd too */
	if (ends_with(path, ".otlp.pb") || ends_with(path, ".otlp.pb.gz"))
		return FMT_OTLP;
	if (n >= 6 && !strcmp(path + n - 6, ".pb.gz"))
		return FMT_PPROF;
	if (n >= 4 && !strcmp(path + n - 4, ".svg"))
		return FMT_SVG;
	return FMT_FOLDED;
}

const char *output__format_name(enum out_format f)
{
	switch (f) {
	case FMT_PPROF:
		return "pprof";
	case FMT_SVG:
		return "svg flame graph";
	case FMT_OTLP:
		return "OTLP profiles";
	default:
		return "folded stacks";
	}
}

/*
 * A regular file (or a name not yet taken) is written to a temporary file in the same directory,
 * then fsync'd and renamed over the path: a reader, or a run killed midway, never sees half a
 * profile, the old file stays whole until the new one is complete, and a symlink planted at the
 * path is replaced, never followed. A device or a pipe (/dev/stdout) is written in place.
 */
int output__open(struct output *out, const char *path, enum out_format forced, char *err,
		 size_t err_len)
{
	const char *slash = strrchr(path, '/');
	struct stat st;
	int e, exists;

	out->path = path;
	out->format = output__format(path, forced);
	out->tmp[0] = 0;
	out->fd = -1;
	out->written = 0;
	exists = !lstat(path, &st);
	out->created = !exists;
	if (exists && S_ISLNK(st.st_mode) && !stat(path, &st) && S_ISDIR(st.st_mode))
		exists = 1;	/* a link to a directory: refused like one */
	if (exists && S_ISDIR(st.st_mode)) {
		snprintf(err, err_len, "cannot write %s: it is a directory; give a file name with -o",
			 path);
		return -EISDIR;
	}
	if (exists && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
		out->fd = open(path, O_WRONLY | O_CLOEXEC);
	} else if (snprintf(out->tmp, sizeof(out->tmp), "%.*s.%s.spanprof-XXXXXX",
			    slash ? (int)(slash - path + 1) : 0, path, slash ? slash + 1 : path) >=
		   (int)sizeof(out->tmp)) {
		errno = ENAMETOOLONG;
	} else {
		out->fd = mkostemp(out->tmp, O_CLOEXEC);
		if (out->fd >= 0)
			fchmod(out->fd, 0644);
	}
	if (out->fd < 0) {
		e = errno;
		out->tmp[0] = 0;
		snprintf(err, err_len, "cannot write %s: %s; choose a writable path with -o", path,
			 strerror(e));
		return -e;
	}
	return 0;
}

int output__write(struct output *out, const struct profile *prof)
{
	FILE *f;
	int err;

	if (out->fd < 0)
		return -EBADF;
	f = fdopen(out->fd, "w");
	if (!f)
		return -errno;
	out->fd = -1;
	switch (out->format) {
	case FMT_PPROF:
		err = pprof__write(prof, f);
		break;
	case FMT_SVG:
		err = flamegraph__write(prof, f, "spanprof CPU profile", "process_name");
		break;
	case FMT_OTLP:
		err = otlp__write(prof, f, ends_with(out->path, ".gz"));
		break;
	default:
		err = folded__write(prof, f, "process_name");
		break;
	}
	if (!err && out->tmp[0] && (fflush(f) || fsync(fileno(f))))
		err = -errno;
	if (fclose(f) && !err)
		err = -errno;
	if (out->tmp[0]) {
		/* Complete or not at all: the old file (if any) stays until the rename. */
		if (!err && rename(out->tmp, out->path))
			err = -errno;
		if (err)
			unlink(out->tmp);
		out->tmp[0] = 0;
	}
	out->created = 0;
	out->written = !err;
	return err;
}

int output__written(const struct output *out)
{
	return out->written;
}

void output__abort(struct output *out)
{
	if (out->fd >= 0) {
		close(out->fd);
		out->fd = -1;
	}
	if (out->tmp[0]) {
		unlink(out->tmp);
		out->tmp[0] = 0;
	}
}

/* ---- the exporter: a recording's one profile to every output ------------------------------- */

struct file_exporter {
	struct exporter x;	/* first: the allocation is the exporter */
	struct output *outs;
	int n;
	struct export_stats st;
};

/* Every output is tried: one that fails does not keep the others from being written. */
static int files_export(void *self, const struct export_batch *b)
{
	struct file_exporter *fx = self;
	int first = 0, err = 0;

	fx->st.batches++;
	for (int i = 0; i < fx->n; i++) {
		if (!b->n || (err = output__write(&fx->outs[i], b->series[0].prof))) {
			err = b->n ? err : -EINVAL;
			log_error("cannot write %s: %s", fx->outs[i].path,
				strerror(-err));
			fx->st.failed++;
			first = first ? first : err;
			continue;
		}
		fx->st.sent_ok++;
	}
	return first;
}

static int files_flush(void *self, uint32_t timeout_ms)
{
	return 0;	/* written synchronously */
}

static void files_stats(void *self, struct export_stats *out)
{
	*out = ((struct file_exporter *)self)->st;
}

static void files_free(void *self)
{
	free(self);
}

static const struct exporter_ops files_ops = {
	.name = "file",
	.export = files_export,
	.flush = files_flush,
	.stats = files_stats,
	.free = files_free,
};

struct exporter *output__exporter(struct output *outs, int n)
{
	struct file_exporter *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return NULL;
	fx->outs = outs;
	fx->n = n;
	fx->x.ops = &files_ops;
	fx->x.self = fx;
	return &fx->x;
}
