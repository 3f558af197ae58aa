/* report.h: the text report of a recording: a consumer of the engine's counters and the profile. */
#ifndef SPANPROF_REPORT_H
#define SPANPROF_REPORT_H

#include <stdint.h>
#include <stdio.h>

struct engine;
struct profile;

struct report_info {
	uint32_t freq;
	uint64_t t_start, t_end;	/* CLOCK_MONOTONIC of sampling */
	double cpu_loop_start, cpu_loop_end;	/* our CPU ms around the sampling loop */
	int by_span;
	int off_cpu;		/* --off-cpu: off-CPU lines, and off-CPU time per span */
};

/* Our own CPU time so far, in ms (user + system). */
double report__cpu_ms(void);
/* The end-of-run report: samples, losses by cause, span outcomes, frames, .NET processes, cost,
 * top functions (and per span with by_span). */
/* The symbol servers' counters and the debug files refused, one line each (when any). */
void report__symbols(FILE *f, struct engine *e);

void report__print(FILE *f, struct engine *e, const struct profile *prof,
		   const struct report_info *ri);
/* One line per .NET process in the table (exited ones too): what its runtimes say of it. */
void report__dotnet_processes(FILE *f, struct engine *e, const char *prefix);
/* -v: every counter on one line. */
void report__progress(FILE *f, struct engine *e, double elapsed_s);

/* A report block that call writes to FILE *f (one of the report__ functions), logged line by
 * line (lib/log.h; the caller includes it). */
#define LOG_REPORT(call)                                                               \
	do {                                                                           \
		char *text_ = NULL, *save_ = NULL;                                     \
		size_t len_ = 0;                                                       \
		FILE *f = open_memstream(&text_, &len_);                               \
                                                                                       \
		if (!f)                                                                \
			break;                                                         \
		call;                                                                  \
		fclose(f);                                                             \
		for (char *l = strtok_r(text_, "\n", &save_); l;                       \
		     l = strtok_r(NULL, "\n", &save_))                                 \
			log_info("%s", l);                                             \
		free(text_);                                                           \
	} while (0)

#endif /* SPANPROF_REPORT_H */
