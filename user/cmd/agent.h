/* agent.h: `spanprof agent`: every .NET process on the host, profiled continuously, one profile per
 * service per window, to Pyroscope, OTLP and/or a directory, with Prometheus self-metrics. */
#ifndef SPANPROF_AGENT_H
#define SPANPROF_AGENT_H

#include <stdint.h>

#include "symsrv.h"

#define AGENT_MAX_HEADERS 16
#define AGENT_OTLP_NONE	1	/* --otlp-compression none */
#define AGENT_OTLP_GZIP	2

struct agent_opts {
	uint32_t freq;		/* Hz per CPU (19) */
	double interval;	/* seconds per window (15) */
	int all_processes;	/* native processes too */
	int allow_remote_files;	/* --allow-remote-files */
	int enable_perfmap;
	int jitdump_beside_perfmap;	/* --buffered-perfmap add-jitdump */
	int full_span_labels;	/* trace_id/span_id/local_root_span_id instead of Pyroscope's */
	int off_cpu;		/* --off-cpu: blocked time too, its own profile type */
	uint64_t off_cpu_threshold_ns;	/* --off-cpu-threshold (0: the sampler's default) */
	uint32_t off_cpu_max_threads;	/* --off-cpu-max-threads (0: the sampler's default) */
	uint32_t off_cpu_max_rate;	/* --off-cpu-max-rate (0: the sampler's default) */
	const char *pyroscope_url;
	const char *pyroscope_user;
	const char *pyroscope_password_file;
	const char *pyroscope_token_file;
	const char *pyroscope_tenant;
	const char *pyroscope_ca;
	const char *headers[AGENT_MAX_HEADERS];
	int nheaders;
	int otlp;		/* --otlp or --otlp-url: the OTLP profiles exporter */
	const char *otlp_url;	/* NULL: from the environment (otlp.h) */
	const char *otlp_headers[AGENT_MAX_HEADERS];
	int n_otlp_headers;
	uint32_t otlp_timeout_ms;	/* 0: the environment's, else 10 s */
	int otlp_compression;	/* AGENT_OTLP_*; 0: the environment's, else gzip */
	const char *otlp_ca;
	const char *output_dir;
	uint64_t output_max_bytes;
	const char *metrics_addr;
	const char *pods_dir;
	const char *containers_dir;
	const char *node;
	uint64_t queue_bytes;
	uint32_t flush_timeout_ms;
	uint32_t ringbuf_mb;
	uint32_t max_frames, max_stacks;
	uint32_t max_span_tables;	/* 0: the sampler's default */
	uint32_t max_symbol_mb;	/* 0: ENGINE_MAX_SYMBOL_MB */
	uint32_t perfmap_max_mb;	/* --perfmap-max-mb (0: no cap) */
	uint32_t perfmap_idle_s;	/* --perfmap-idle (0: never) */
	struct symsrv_opts symsrv;	/* --symbol-server, --symbol-cache, --symbol-cache-mb */
	int verbose;
};

/* Run until SIGTERM/SIGINT. Returns the exit code: 0, 1 (runtime failure), 2 (bad setup). */
int agent__run(const struct agent_opts *o);

#endif /* SPANPROF_AGENT_H */
