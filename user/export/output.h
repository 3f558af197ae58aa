/* output.h: the files a recording writes: opened before sampling (so a bad path fails early),
 * written once at the end in the format their suffix or --format names. */
#ifndef SPANPROF_OUTPUT_H
#define SPANPROF_OUTPUT_H

#include <stdio.h>

struct profile;

enum out_format {
	FMT_AUTO = 0,
	FMT_PPROF,
	FMT_FOLDED,
	FMT_SVG,
	FMT_OTLP,	/* OTLP profiles ExportProfilesServiceRequest; gzip when the name ends in .gz */
};

struct output {
	const char *path;
	enum out_format format;	/* resolved: never FMT_AUTO after output__open */
	int fd;			/* the temporary file, or a device or pipe written in place */
	int created;		/* did not exist before */
	char tmp[4096];		/* the temporary file, renamed over path once written; "" in place */
	int written;		/* output__write completed */
};

/* The format for path: forced (not FMT_AUTO), else .otlp.pb or .otlp.pb.gz -> otlp, .pb.gz ->
 * pprof, .svg -> svg, else folded. */
enum out_format output__format(const char *path, enum out_format forced);
const char *output__format_name(enum out_format f);

/* Get ready to write path: a temporary file beside it now (so a bad path fails early), renamed
 * over it by output__write. 0, or -errno with a one-line reason in err. */
int output__open(struct output *out, const char *path, enum out_format forced, char *err,
		 size_t err_len);
/* Write the profile, replacing the file's content, and close it. 0 or -errno. */
int output__write(struct output *out, const struct profile *prof);
/* Whether output__write completed. */
int output__written(const struct output *out);
/* Close without writing: the path is left as it was. */
void output__abort(struct output *out);

struct exporter;
/* The outputs as an exporter (exporter.h): export() writes the batch's first profile to each of
 * them (outs must outlive it). NULL when out of memory. */
struct exporter *output__exporter(struct output *outs, int n);

#endif /* SPANPROF_OUTPUT_H */
