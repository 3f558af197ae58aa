/* record.h: one recording session: BPF sampling, symbolization, aggregation, output. */
#ifndef SPANPROF_RECORD_H
#define SPANPROF_RECORD_H

#include <stdint.h>

#include "output.h"
#include "symsrv.h"

#define RECORD_MAX_PIDS	   1024
#define RECORD_MAX_OUTPUTS 8

struct record_opts {
	uint32_t pids[RECORD_MAX_PIDS];
	int npids;		/* 0: every process */
	uint32_t freq;		/* Hz */
	double duration;	/* seconds; 0: until SIGINT/SIGTERM */
	const char *outputs[RECORD_MAX_OUTPUTS];	/* -o, repeatable */
	int noutputs;
	enum out_format format;	/* --format: forces every output's format */
	int verbose;
	int allow_remote_files;	/* --allow-remote-files */
	int enable_perfmap;	/* --no-enable-perfmap clears it */
	int jitdump_beside_perfmap;	/* --buffered-perfmap add-jitdump */
	int show_tiers;
	int by_span;
	int off_cpu;		/* --off-cpu */
	uint64_t off_cpu_threshold_ns;	/* --off-cpu-threshold (0: the sampler's default) */
	uint32_t off_cpu_max_threads;	/* --off-cpu-max-threads (0: the sampler's default) */
	uint32_t off_cpu_max_rate;	/* --off-cpu-max-rate (0: the sampler's default) */
	int value_off_cpu;	/* --value off-cpu: folded and SVG show off-CPU time */
	int pyroscope_labels;
	uint32_t ringbuf_mb;
	int bpf_stats;		/* measure the sampler's run time (BPF_ENABLE_STATS) */
	char *const *command;	/* `record -- COMMAND ARGS`: run and profile it and its children */
	const char *user;	/* --user: run the command as this user */
	uint32_t max_frames;	/* --max-frames */
	uint32_t max_stacks;	/* --max-stacks */
	uint32_t max_span_tables;	/* --max-span-tables (0: the sampler's default) */
	uint32_t max_symbol_mb;	/* --max-symbol-mb (0: ENGINE_MAX_SYMBOL_MB) */
	uint32_t perfmap_max_mb;	/* --perfmap-max-mb (0: no cap) */
	uint32_t perfmap_idle_s;	/* --perfmap-idle (0: never, the default) */
	struct symsrv_opts symsrv;	/* --symbol-server, --symbol-cache, --symbol-cache-mb */
};

#define RECORD_SYMBOL_WAIT_MS 5000	/* at the end, for debug files still being fetched */

/* Run a recording. Returns the process exit code: 0, 1 (runtime failure), 2 (bad setup); with a
 * command, the command's exit code (128 + signal when a signal ended it). */
int record__run(const struct record_opts *opts);

#endif /* SPANPROF_RECORD_H */
