/* options.c: the one table of spanprof's options (record and agent), and the checks between them. */
#include <errno.h>
#include <string.h>

#include "options.h"
#include "pmpolicy.h"
#include "profiler.h"

#define R(field) offsetof(struct options, rec.field)
#define A(field) offsetof(struct options, agent.field)
#define REC	(1u << OPTIONS_RECORD)
#define AGT	(1u << OPTIONS_AGENT)
#define BOTH	(REC | AGT)
#define STR_(x) #x
#define STR(x)	STR_(x)

static const struct flag_choice formats[] = {
	{ "pprof", FMT_PPROF }, { "folded", FMT_FOLDED }, { "svg", FMT_SVG }, { "otlp", FMT_OTLP },
	{ NULL, 0 },
};
static const struct flag_choice values[] = { { "cpu", 0 }, { "off-cpu", 1 }, { NULL, 0 } };
/* Runtime 11 holds back the newest lines of a perf map it was started with (8 KiB blocks). */
#define BUFFERED_PERFMAP_HELP									\
	"add-jitdump | leave: a .NET process with its own perf map alone, in a runtime that holds "	\
	"back the map's newest lines (runtime 11): turn its jitdump on beside it to name them. It "	\
	"stays on after spanprof leaves (the runtime cannot turn it off without the perf map); its "	\
	"file is removed if the process exits while spanprof runs"
#define BUFFERED_PERFMAP_BAD "unknown buffered perf map choice (add-jitdump or leave)"
static const struct flag_choice buffered_perfmap[] = {
	{ "leave", 0 }, { "add-jitdump", 1 }, { NULL, 0 },
};
static const struct flag_choice compressions[] = {
	{ "gzip", AGENT_OTLP_GZIP }, { "none", AGENT_OTLP_NONE }, { NULL, 0 },
};
static const struct flag_choice log_formats[] = {
	{ "text", LOG_FORMAT_TEXT }, { "logfmt", LOG_FORMAT_LOGFMT }, { "json", LOG_FORMAT_JSON },
	{ NULL, 0 },
};
static const struct flag_choice log_levels[] = {
	{ "debug", LOG_LEVEL_DEBUG }, { "info", LOG_LEVEL_INFO }, { "warn", LOG_LEVEL_WARN },
	{ "error", LOG_LEVEL_ERROR }, { NULL, 0 },
};

#define BAD_FREQ	"bad frequency (want a whole number of Hz, e.g. -F 99)"
#define BAD_CAP		"bad cap (a whole number > 0)"
#define BAD_THRESHOLD	"bad off-CPU threshold (milliseconds > 0, e.g. 1 or 0.5)"
#define BAD_URL(what)	"bad " what " URL (want http://HOST:PORT or https://...)"
#define BAD_HEADER	"bad header (want 'Name: value')"

/* In the order --help lists them; a row per command where the default or the help differs. */
static const struct flag rows[] = {
	{ .name = "pid", .short_name = 'p', .arg = "PID", .cmds = REC, .type = FLAG_PID,
	  .off = { R(pids) }, .count_off = { R(npids) }, .max_n = RECORD_MAX_PIDS,
	  .help = "profile this process (repeat for several; recording ends when they have all "
		  "exited); default: all", .bad = "bad pid" },
	{ .name = "freq", .short_name = 'F', .arg = "HZ", .cmds = REC, .type = FLAG_U32,
	  .off = { R(freq) }, .min = 1, .max = 1000000, .def = "99",
	  .help = "samples per second per CPU", .bad = BAD_FREQ },
	{ .name = "freq", .short_name = 'F', .arg = "HZ", .cmds = AGT, .type = FLAG_U32,
	  .off = { [OPTIONS_AGENT] = A(freq) }, .min = 1, .max = 1000000, .def = "19",
	  .help = "samples per second per CPU", .bad = BAD_FREQ },
	{ .name = "duration", .short_name = 'd', .arg = "SECS", .cmds = REC, .type = FLAG_DOUBLE,
	  .off = { R(duration) }, .min = 1e-9, .max = 1e7, .def_doc = "at Ctrl-C / SIGTERM",
	  .help = "stop after SECS seconds; SIGUSR1 pauses sampling, SIGUSR2 resumes it (nothing is "
		  "sampled while paused; the duration still counts the pause)",
	  .bad = "bad duration (want seconds > 0, e.g. -d 30)" },
	{ .name = "interval", .arg = "SECS", .cmds = AGT, .type = FLAG_DOUBLE,
	  .off = { [OPTIONS_AGENT] = A(interval) }, .min = 0.1, .max = 3600, .def = "15",
	  .help = "window length", .bad = "bad interval (seconds, 0.1 to 3600)" },
	{ .name = "all-processes", .cmds = AGT, .type = FLAG_SWITCH,
	  .off = { [OPTIONS_AGENT] = A(all_processes) },
	  .help = "native processes too (default: .NET processes only)" },
	{ .name = "output", .short_name = 'o', .arg = "FILE", .cmds = REC, .type = FLAG_STRING,
	  .off = { R(outputs) }, .count_off = { R(noutputs) }, .max_n = RECORD_MAX_OUTPUTS,
	  .def_doc = "spanprof.pb.gz", .help = "output file; repeat for several",
	  .bad = "empty output path" },
	{ .name = "format", .arg = "F", .cmds = REC, .type = FLAG_ENUM, .off = { R(format) },
	  .choices = formats, .def_doc = "from the suffix: .pb.gz pprof, .otlp.pb or .otlp.pb.gz "
	  "OTLP profiles, .svg flame graph, anything else folded stacks",
	  .help = "pprof | folded | svg | otlp", .bad = "unknown format (pprof, folded, svg or otlp)" },
	{ .name = "by-span", .cmds = REC, .type = FLAG_SWITCH, .off = { R(by_span) },
	  .help = "print CPU time and top functions per local root span (with --off-cpu: off-CPU "
		  "time and top blocking functions too)" },
	{ .name = "pyroscope-url", .arg = "URL", .cmds = AGT, .type = FLAG_URL,
	  .off = { [OPTIONS_AGENT] = A(pyroscope_url) },
	  .help = "push to Grafana Pyroscope (URL/push.v1.PusherService/Push)",
	  .bad = BAD_URL("Pyroscope") },
	{ .name = "pyroscope-user", .arg = "USER", .cmds = AGT, .type = FLAG_STRING,
	  .off = { [OPTIONS_AGENT] = A(pyroscope_user) },
	  .help = "basic auth user; the password from --pyroscope-password-file or "
		  "$SPANPROF_PYROSCOPE_PASSWORD" },
	{ .name = "pyroscope-password-file", .arg = "FILE", .cmds = AGT, .type = FLAG_STRING,
	  .off = { [OPTIONS_AGENT] = A(pyroscope_password_file) },
	  .help = "basic auth password, first line of FILE" },
	{ .name = "pyroscope-token-file", .arg = "FILE", .cmds = AGT, .type = FLAG_STRING,
	  .off = { [OPTIONS_AGENT] = A(pyroscope_token_file) },
	  .help = "bearer token, first line of FILE (or $SPANPROF_PYROSCOPE_TOKEN)" },
	{ .name = "pyroscope-tenant", .arg = "ID", .cmds = AGT, .type = FLAG_STRING,
	  .off = { [OPTIONS_AGENT] = A(pyroscope_tenant) }, .help = "X-Scope-OrgID" },
	{ .name = "pyroscope-header", .arg = "'Name: value'", .cmds = AGT, .type = FLAG_HEADER,
	  .off = { [OPTIONS_AGENT] = A(headers) }, .count_off = { [OPTIONS_AGENT] = A(nheaders) },
	  .max_n = AGENT_MAX_HEADERS, .help = "extra header (repeatable)", .bad = BAD_HEADER },
	{ .name = "pyroscope-ca", .arg = "FILE", .cmds = AGT, .type = FLAG_STRING,
	  .off = { [OPTIONS_AGENT] = A(pyroscope_ca) }, .help = "CA bundle for TLS" },
	{ .name = "otlp-url", .arg = "URL", .cmds = AGT, .type = FLAG_URL,
	  .off = { [OPTIONS_AGENT] = A(otlp_url) },
	  .help = "send OTLP profiles: POST URL/v1development/profiles (a URL with a path is used "
		  "as given), or gRPC ProfilesService/Export to URL with "
		  "$OTEL_EXPORTER_OTLP_PROTOCOL=grpc", .bad = BAD_URL("OTLP") },
	{ .name = "otlp", .cmds = AGT, .type = FLAG_SWITCH, .off = { [OPTIONS_AGENT] = A(otlp) },
	  .help = "the same, to $OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT, else "
		  "$OTEL_EXPORTER_OTLP_ENDPOINT/v1development/profiles, else "
		  "http://localhost:4318/v1development/profiles" },
	{ .name = "otlp-header", .arg = "'Name: value'", .cmds = AGT, .type = FLAG_HEADER,
	  .off = { [OPTIONS_AGENT] = A(otlp_headers) },
	  .count_off = { [OPTIONS_AGENT] = A(n_otlp_headers) }, .max_n = AGENT_MAX_HEADERS,
	  .help = "extra header (repeatable; over OTEL_EXPORTER_OTLP_HEADERS)", .bad = BAD_HEADER },
	{ .name = "otlp-timeout", .arg = "SECS", .cmds = AGT, .type = FLAG_SCALED32,
	  .off = { [OPTIONS_AGENT] = A(otlp_timeout_ms) }, .min = 0.001, .max = 3600, .scale = 1000,
	  .def_doc = "$OTEL_EXPORTER_OTLP_TIMEOUT ms, else 10", .help = "per request",
	  .bad = "bad --otlp-timeout (seconds, 0.001..3600)" },
	{ .name = "otlp-compression", .arg = "gzip|none", .cmds = AGT, .type = FLAG_ENUM,
	  .off = { [OPTIONS_AGENT] = A(otlp_compression) }, .choices = compressions,
	  .def_doc = "$OTEL_EXPORTER_OTLP_COMPRESSION, else gzip", .help = "request compression",
	  .bad = "bad --otlp-compression (gzip or none)" },
	{ .name = "otlp-ca", .arg = "FILE", .cmds = AGT, .type = FLAG_STRING,
	  .off = { [OPTIONS_AGENT] = A(otlp_ca) }, .def_doc = "$OTEL_EXPORTER_OTLP_CERTIFICATE",
	  .help = "CA bundle for TLS; the _PROFILES_ form of each OTEL_ variable wins over the "
		  "shared one" },
	{ .name = "output-dir", .arg = "DIR", .cmds = AGT, .type = FLAG_STRING,
	  .off = { [OPTIONS_AGENT] = A(output_dir) },
	  .help = "also write DIR/<service>/<start>-<end>.pb.gz", .bad = "empty --output-dir" },
	{ .name = "output-max-mb", .arg = "N", .cmds = AGT, .type = FLAG_MIB,
	  .off = { [OPTIONS_AGENT] = A(output_max_bytes) }, .min = 1, .max = 1u << 30, .def = "1024",
	  .help = "total size of --output-dir; oldest removed",
	  .bad = "bad --output-max-mb (MiB, at least 1)" },
	{ .name = "metrics-addr", .arg = "HOST:PORT", .cmds = AGT, .type = FLAG_STRING,
	  .off = { [OPTIONS_AGENT] = A(metrics_addr) }, .help = "serve Prometheus /metrics and /healthz" },
	{ .name = "pods-dir", .arg = "DIR", .cmds = AGT, .type = FLAG_STRING,
	  .off = { [OPTIONS_AGENT] = A(pods_dir) }, .def_doc = "/var/log/pods",
	  .help = "the kubelet's pod logs" },
	{ .name = "containers-dir", .arg = "DIR", .cmds = AGT, .type = FLAG_STRING,
	  .off = { [OPTIONS_AGENT] = A(containers_dir) }, .def_doc = "/var/log/containers",
	  .help = "the kubelet's container log links" },
	{ .name = "node", .arg = "NAME", .cmds = AGT, .type = FLAG_STRING,
	  .off = { [OPTIONS_AGENT] = A(node) }, .def_doc = "$NODE_NAME, else the host name",
	  .help = "node label" },
	{ .name = "queue-mb", .arg = "N", .cmds = AGT, .type = FLAG_SCALED64,
	  .off = { [OPTIONS_AGENT] = A(queue_bytes) }, .min = 0.001, .max = 4096, .scale = 1048576,
	  .def = "64", .help = "delivery queue bound", .bad = "bad --queue-mb (MiB, 0.001..4096)" },
	{ .name = "flush-timeout", .arg = "SECS", .cmds = AGT, .type = FLAG_SCALED32,
	  .off = { [OPTIONS_AGENT] = A(flush_timeout_ms) }, .min = 0, .max = 600, .scale = 1000,
	  .def = "5", .help = "wait at SIGTERM for delivery",
	  .bad = "bad --flush-timeout (seconds, 0..600)" },
	{ .name = "full-span-labels", .cmds = AGT, .type = FLAG_SWITCH,
	  .off = { [OPTIONS_AGENT] = A(full_span_labels) },
	  .help = "trace_id, span_id (active span), local_root_span_id instead of Pyroscope's "
		  "span_id = local root span" },
	{ .name = "off-cpu", .cmds = REC, .type = FLAG_SWITCH, .off = { R(off_cpu) },
	  .help = "also time how long profiled threads block (off the CPU, not runnable), with the "
		  "stack and span they blocked in: pprof sample type off_cpu/nanoseconds beside the "
		  "CPU ones" },
	{ .name = "off-cpu", .cmds = AGT, .type = FLAG_SWITCH, .off = { [OPTIONS_AGENT] = A(off_cpu) },
	  .help = "also time how long the threads of .NET processes (with --all-processes: of every "
		  "process) block, with stack and span: its own profile type, Pyroscope's off_cpu "
		  "(off_cpu/nanoseconds), in series with the CPU ones' labels; OTLP: a second "
		  "profile" },
	{ .name = "off-cpu-threshold", .arg = "MS", .cmds = BOTH, .type = FLAG_SCALED64,
	  .off = { R(off_cpu_threshold_ns), A(off_cpu_threshold_ns) }, .min = 1e-6, .max = 1e6,
	  .scale = 1e6, .def_doc = "1",
	  .help = "blocks this long or longer get stacks; shorter ones are only counted, with their "
		  "total time", .bad = BAD_THRESHOLD },
	{ .name = "off-cpu-max-threads", .arg = "N", .cmds = BOTH, .type = FLAG_U32,
	  .off = { R(off_cpu_max_threads), A(off_cpu_max_threads) }, .min = 1, .max = 1u << 22,
	  .def_doc = STR(SP_OFFCPU_MAX_THREADS),
	  .help = "threads with a block record at once, at most half of them in one cgroup (about 2 "
		  "KiB of kernel memory each, charged to spanprof's memory cgroup); the blocks of "
		  "threads past it are counted, not timed",
	  .bad = "bad --off-cpu-max-threads (1..4194304)" },
	{ .name = "off-cpu-max-rate", .arg = "N", .cmds = BOTH, .type = FLAG_U32,
	  .off = { R(off_cpu_max_rate), A(off_cpu_max_rate) }, .min = 1, .max = 1000000,
	  .def_doc = STR(SP_OFFCPU_MAX_RATE),
	  .help = "long blocks a cgroup (a process outside any; a container, whatever cgroups and "
		  "namespaces it makes, one) sends a second at most; past three quarters of it they "
		  "are thinned at random by their time, those sent carrying the time of those left "
		  "out (counted)",
	  .bad = "bad --off-cpu-max-rate (1..1000000)" },
	{ .name = "value", .arg = "V", .cmds = REC, .type = FLAG_ENUM, .off = { R(value_off_cpu) },
	  .choices = values, .def_doc = "cpu", .help = "cpu | off-cpu: what folded and SVG outputs show",
	  .bad = "unknown value (cpu or off-cpu)" },
	{ .name = "pyroscope-labels", .cmds = REC, .type = FLAG_SWITCH, .off = { R(pyroscope_labels) },
	  .help = "span labels in Pyroscope's convention (span_id = local root)" },
	{ .name = "no-enable-perfmap", .cmds = BOTH, .type = FLAG_CLEAR,
	  .off = { R(enable_perfmap), A(enable_perfmap) }, .def = "1",
	  .help = "do not turn perf maps on in .NET processes that lack them" },
	{ .name = "buffered-perfmap", .arg = "B", .cmds = REC, .type = FLAG_ENUM,
	  .off = { R(jitdump_beside_perfmap) }, .choices = buffered_perfmap, .def = "add-jitdump",
	  .help = BUFFERED_PERFMAP_HELP, .bad = BUFFERED_PERFMAP_BAD },
	{ .name = "buffered-perfmap", .arg = "B", .cmds = AGT, .type = FLAG_ENUM,
	  .off = { [OPTIONS_AGENT] = A(jitdump_beside_perfmap) }, .choices = buffered_perfmap,
	  .def = "leave", .help = BUFFERED_PERFMAP_HELP, .bad = BUFFERED_PERFMAP_BAD },
	{ .name = "allow-remote-files", .cmds = BOTH, .type = FLAG_SWITCH,
	  .off = { R(allow_remote_files), A(allow_remote_files) },
	  .help = "read perf maps and jitdumps on remote or FUSE file systems (refused by default: a "
		  "server that does not answer stalls us)" },
	{ .name = "perfmap-max-mb", .arg = "N", .cmds = BOTH, .type = FLAG_U32,
	  .off = { R(perfmap_max_mb), A(perfmap_max_mb) }, .min = 0, .max = 1u << 20,
	  .def = STR(PMPOLICY_MAX_MB_DEFAULT),
	  .help = "a perf map spanprof turned on that passes N MiB is started afresh (perf maps off "
		  "and on again: the runtime writes the live methods only); 0: no cap",
	  .bad = "bad perf map cap (MiB, 0..1048576)" },
	{ .name = "perfmap-idle", .arg = "SECS", .cmds = REC, .type = FLAG_U32,
	  .off = { R(perfmap_idle_s) }, .min = 0, .max = 100u * 24 * 3600, .def = "0",
	  .help = "perf maps spanprof turned on in a process not sampled for SECS are turned off and "
		  "their files removed, on again at its next sample; 0: never",
	  .bad = "bad perf map idle time (seconds, 0..8640000)" },
	{ .name = "perfmap-idle", .arg = "SECS", .cmds = AGT, .type = FLAG_U32,
	  .off = { [OPTIONS_AGENT] = A(perfmap_idle_s) }, .min = 0, .max = 100u * 24 * 3600,
	  .def = STR(PMPOLICY_IDLE_S_DEFAULT),
	  .help = "perf maps spanprof turned on in a process not sampled for SECS are turned off and "
		  "their files removed, on again at its next sample; 0: never",
	  .bad = "bad perf map idle time (seconds, 0..8640000)" },
	{ .name = "tiers", .cmds = REC, .type = FLAG_SWITCH, .off = { R(show_tiers) },
	  .help = "keep the JIT tier in .NET frame names ([OptimizedTier1], ...)" },
	{ .name = "ringbuf-mb", .arg = "N", .cmds = REC, .type = FLAG_U32, .off = { R(ringbuf_mb) },
	  .min = 1, .max = 1024, .def = "8",
	  .help = "ring buffer size in MiB, for the CPU samples (long off-CPU blocks have their own)",
	  .bad = "bad ring buffer size (MiB, 1..1024)" },
	{ .name = "ringbuf-mb", .arg = "N", .cmds = AGT, .type = FLAG_U32,
	  .off = { [OPTIONS_AGENT] = A(ringbuf_mb) }, .min = 1, .max = 1024,
	  .def_doc = "2 s of samples from every CPU, a power of two: 256 KiB on a small node at 19 Hz",
	  .help = "ring buffer size in MiB, for the CPU samples (long off-CPU blocks have their own)",
	  .bad = "bad ring buffer size (MiB, 1..1024)" },
	{ .name = "bpf-stats", .cmds = REC, .type = FLAG_SWITCH, .off = { R(bpf_stats) },
	  .help = "measure the sampler's BPF run time per sample" },
	{ .name = "user", .arg = "NAME", .cmds = REC, .type = FLAG_STRING, .off = { R(user) },
	  .help = "run COMMAND as this user (spanprof itself stays root)" },
	{ .name = "max-frames", .arg = "N", .cmds = BOTH, .type = FLAG_U32,
	  .off = { R(max_frames), A(max_frames) }, .min = 1, .max = UINT32_MAX, .def_doc = "100000",
	  .help = "distinct frames kept per process", .bad = BAD_CAP },
	{ .name = "max-stacks", .arg = "N", .cmds = BOTH, .type = FLAG_U32,
	  .off = { R(max_stacks), A(max_stacks) }, .min = 1, .max = UINT32_MAX, .def_doc = "200000",
	  .help = "distinct stacks and label sets per window; past it samples keep their stack "
		  "without span and trace ids (in up to N/4 more), then go under [truncated]; past "
		  "--max-frames too; all of it counted", .bad = BAD_CAP },
	{ .name = "max-span-tables", .arg = "N", .cmds = BOTH, .type = FLAG_U32,
	  .off = { R(max_span_tables), A(max_span_tables) }, .min = 1, .max = 1u << 20,
	  .def_doc = "4096", .help = "hooked processes the sampler reads at once; past it, those "
	  "sampled least recently make room (counted)", .bad = BAD_CAP },
	{ .name = "max-symbol-mb", .arg = "N", .cmds = BOTH, .type = FLAG_U32,
	  .off = { R(max_symbol_mb), A(max_symbol_mb) }, .min = 1, .max = 1u << 20, .def_doc = "256",
	  .help = "memory for all symbol data: .NET code ranges, ELF symbol tables, ReadyToRun method "
		  "tables; past it .NET ranges are not read, the ELF tables used least recently make "
		  "room (read again when needed), a table that does not fit is not kept (its frames "
		  "module+offset); all of it counted", .bad = "bad symbol budget (MiB, 1..1048576)" },
	{ .name = "symbol-server", .arg = "URL", .cmds = BOTH, .type = FLAG_URL,
	  .off = { R(symsrv.urls), A(symsrv.urls) },
	  .count_off = { R(symsrv.n_urls), A(symsrv.n_urls) }, .max_n = SYMSRV_MAX_URLS,
	  .help = "debug files of stripped libraries by build id (repeatable; also $DEBUGINFOD_URLS): "
		  "debuginfod URL/buildid/ID/debuginfo, or SSQP as Microsoft's "
		  "https://msdl.microsoft.com/download/symbols; record waits up to 5 s at the end for "
		  "files being fetched", .bad = BAD_URL("symbol server") },
	{ .name = "symbol-cache", .arg = "DIR", .cmds = BOTH, .type = FLAG_STRING,
	  .off = { R(symsrv.cache_dir), A(symsrv.cache_dir) }, .def_doc = SYMSRV_CACHE_DIR,
	  .help = "where debug files are kept", .bad = "empty --symbol-cache" },
	{ .name = "symbol-cache-mb", .arg = "N", .cmds = BOTH, .type = FLAG_MIB,
	  .off = { R(symsrv.cache_max_bytes), A(symsrv.cache_max_bytes) }, .min = 1, .max = 1u << 30,
	  .def_doc = STR(SYMSRV_CACHE_MB), .help = "the cache's cap, least recently used removed",
	  .bad = "bad --symbol-cache-mb (MiB, at least 1)" },
	{ .name = "log-format", .arg = "F", .cmds = BOTH, .type = FLAG_ENUM,
	  .off = { offsetof(struct options, log_format), offsetof(struct options, log_format) },
	  .choices = log_formats, .def = "text",
	  .help = "text | logfmt | json: every log line on stderr has time (RFC 3339, UTC), level "
		  "and message", .bad = "bad --log-format (text, logfmt or json)" },
	{ .name = "log-level", .arg = "L", .cmds = BOTH, .type = FLAG_ENUM,
	  .off = { offsetof(struct options, log_level), offsetof(struct options, log_level) },
	  .choices = log_levels, .def = "info", .help = "debug | info | warn | error: the least "
	  "that is logged", .bad = "bad --log-level (debug, info, warn or error)" },
	{ .name = "verbose", .short_name = 'v', .cmds = REC, .type = FLAG_COUNT, .off = { R(verbose) },
	  .help = "progress and loss counters every second" },
	{ .name = "verbose", .short_name = 'v', .cmds = AGT, .type = FLAG_COUNT,
	  .off = { [OPTIONS_AGENT] = A(verbose) }, .help = "one line per window" },
	{ .name = "help", .short_name = 'h', .cmds = BOTH, .type = FLAG_HELP, .help = "this text" },
};

const struct flag_table options_table = {
	.rows = rows,
	.n = sizeof(rows) / sizeof(rows[0]),
	.env_prefix = "SPANPROF_",
	.env_cmds = AGT,
};

static const char usage_record[] =
	"Usage: spanprof record [-p PID]... [-F HZ] [-d SECONDS] [-o FILE]... [--format F] [-v]\n"
	"       spanprof record [options] [--user NAME] -- COMMAND [ARGS...]\n"
	"\n"
	"Sample every CPU (or only the given processes) and write a profile. With a COMMAND: run it\n"
	"with the span hook injected (appended to DOTNET_STARTUP_HOOKS) and perf maps on, profile it\n"
	"and its children until they exit (or -d ends), and exit with its exit code.\n"
	"\n";

static const char usage_agent[] =
	"Usage: spanprof agent [--pyroscope-url URL] [--otlp-url URL] [--output-dir DIR] [options]\n"
	"\n"
	"Profile every .NET process on the host continuously (started before or after the agent, in\n"
	"any container) and send one span-labelled profile per service per window. Runs until\n"
	"SIGTERM, which flushes the last window. SIGUSR1 pauses sampling, SIGUSR2 resumes it.\n"
	"Every option also comes from the environment variable named after it: SPANPROF_ and the\n"
	"name in upper case, '-' as '_' (switches: true or false); the flag wins.\n"
	"\n";

void options__help(enum options_cmd cmd, FILE *f)
{
	fputs(cmd == OPTIONS_AGENT ? usage_agent : usage_record, f);
	flags__help(&options_table, cmd, f);
}

static int usage_error(char *err, size_t errlen, const char *msg, const char *arg)
{
	snprintf(err, errlen, "%s%s%s", msg, arg ? ": " : "", arg ? arg : "");
	return 2;
}

int options__parse(struct options *o, enum options_cmd cmd, int argc, char **argv, char *err,
		   size_t errlen)
{
	int first = argc, rc;

	memset(o, 0, sizeof(*o));
	rc = flags__parse(&options_table, cmd, o, argc, argv, cmd == OPTIONS_RECORD, &first, err,
			  errlen);
	if (rc)
		return rc == 1 ? 1 : 2;
	if (cmd == OPTIONS_RECORD) {
		struct record_opts *r = &o->rec;

		if (first < argc)
			r->command = argv + first;
		if (r->command && r->npids)
			return usage_error(err, errlen, "give -p PID or a COMMAND, not both", NULL);
		if (r->user && !r->command)
			return usage_error(err, errlen, "--user goes with a COMMAND", NULL);
		if ((r->value_off_cpu || r->off_cpu_threshold_ns || r->off_cpu_max_threads ||
		     r->off_cpu_max_rate) && !r->off_cpu)
			return usage_error(err, errlen, "--value off-cpu, --off-cpu-threshold, "
					   "--off-cpu-max-threads and --off-cpu-max-rate go with "
					   "--off-cpu", NULL);
		if (!r->noutputs)
			r->outputs[r->noutputs++] = "spanprof.pb.gz";
		return 0;
	}
	if (first < argc)
		return usage_error(err, errlen, "unexpected argument", argv[first]);
	if ((o->agent.off_cpu_threshold_ns || o->agent.off_cpu_max_threads ||
	     o->agent.off_cpu_max_rate) && !o->agent.off_cpu)
		return usage_error(err, errlen, "--off-cpu-threshold, --off-cpu-max-threads and "
				   "--off-cpu-max-rate go with --off-cpu", NULL);
	if (o->agent.otlp_url)
		o->agent.otlp = 1;	/* a URL turns the exporter on */
	return 0;
}
