/* main.c: the spanprof command line. */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "pmpolicy.h"
#include "record.h"

static const char usage_main[] =
	"Usage: spanprof <command> [options]\n"
	"\n"
	"eBPF CPU profiler for .NET on Linux: every frame named, every sample labelled with\n"
	"the OpenTelemetry span it ran in.\n"
	"\n"
	"Commands:\n"
	"  record     sample CPUs and write a profile (spanprof record --help)\n"
	"  agent      profile every .NET process continuously, push to Pyroscope or OTLP\n"
	"             (spanprof agent --help)\n"
	"\n"
	"Options:\n"
	"  -h, --help     this text\n"
	"  --version      print the version\n";

/* Debug files by build id: the same flags for record and agent. */
#define SYMBOL_USAGE(pad) \
	"      --symbol-server URL  debug files of stripped libraries by build id (repeatable;\n" \
	pad "also $DEBUGINFOD_URLS): debuginfod URL/buildid/ID/debuginfo, or SSQP as\n" \
	pad "Microsoft's https://msdl.microsoft.com/download/symbols\n" \
	"      --symbol-cache DIR   where they are kept (default " SYMSRV_CACHE_DIR ")\n" \
	"      --symbol-cache-mb N  its cap, least recently used removed (default 2048)\n"
/* --max-symbol-mb, after the flag and its padding. */
#define BUDGET_USAGE(pad) \
	"memory for all symbol data (default 256): .NET code\n" \
	pad "ranges, ELF symbol tables, ReadyToRun method tables; past it\n" \
	pad ".NET ranges are not read, the ELF tables used least recently\n" \
	pad "make room (read again when needed), a table that does not fit\n" \
	pad "is not kept (its frames module+offset); all of it counted\n"
enum { OPT_SYM_SERVER = 1000, OPT_SYM_CACHE, OPT_SYM_CACHE_MB };
#define SYMBOL_LONGOPTS \
	{ "symbol-server", required_argument, NULL, OPT_SYM_SERVER }, \
	{ "symbol-cache", required_argument, NULL, OPT_SYM_CACHE }, \
	{ "symbol-cache-mb", required_argument, NULL, OPT_SYM_CACHE_MB }

static const char usage_record[] =
	"Usage: spanprof record [-p PID]... [-F HZ] [-d SECONDS] [-o FILE]... [--format F] [-v]\n"
	"       spanprof record [options] [--user NAME] -- COMMAND [ARGS...]\n"
	"\n"
	"Sample every CPU (or only the given processes) and write a profile. With a COMMAND: run it\n"
	"with the span hook injected (appended to DOTNET_STARTUP_HOOKS) and perf maps on, profile it\n"
	"and its children until they exit (or -d ends), and exit with its exit code.\n"
	"\n"
	"  -p, --pid PID          profile this process (repeat for several; recording ends when\n"
	"                         they have all exited); default: all\n"
	"  -F, --freq HZ          samples per second per CPU (default 99)\n"
	"  -d, --duration SECS    stop after SECS seconds (default: at Ctrl-C / SIGTERM); SIGUSR1\n"
	"                         pauses sampling, SIGUSR2 resumes it (nothing is sampled while\n"
	"                         paused; the duration still counts the pause)\n"
	"  -o, --output FILE      output file (default spanprof.pb.gz); repeat for several\n"
	"      --format F         pprof | folded | svg | otlp (default from the suffix: .pb.gz\n"
	"                         pprof, .otlp.pb or .otlp.pb.gz OTLP profiles, .svg flame graph,\n"
	"                         anything else folded stacks)\n"
	"      --by-span          print CPU time and top functions per local root span (with\n"
	"                         --off-cpu: off-CPU time and top blocking functions too)\n"
	"      --off-cpu          also time how long profiled threads block (off the CPU, not\n"
	"                         runnable), with the stack and span they blocked in: pprof\n"
	"                         sample type off_cpu/nanoseconds beside the CPU ones\n"
	"      --off-cpu-threshold MS  blocks this long or longer get stacks (default 1); shorter\n"
	"                         ones are only counted, with their total time\n"
	"      --value V          cpu | off-cpu: what folded and SVG outputs show (default cpu)\n"
	"      --pyroscope-labels span labels in Pyroscope's convention (span_id = local root)\n"
	"      --no-enable-perfmap  do not turn perf maps on in .NET processes that lack them\n"
	"      --allow-remote-files read perf maps and jitdumps on remote or FUSE file systems\n"
	"                         (refused by default: a server that does not answer stalls us)\n"
	"      --perfmap-max-mb N a perf map spanprof turned on that passes N MiB is started\n"
	"                         afresh (perf maps off and on again: the runtime writes the live\n"
	"                         methods only); 0: no cap (default 32)\n"
	"      --perfmap-idle SECS  perf maps spanprof turned on in a process not sampled for\n"
	"                         SECS are turned off and their files removed, on again at its\n"
	"                         next sample (default 0: never)\n"
	"      --tiers            keep the JIT tier in .NET frame names ([OptimizedTier1], ...)\n"
	"      --ringbuf-mb N     ring buffer size in MiB (default 8)\n"
	"      --bpf-stats        measure the sampler's BPF run time per sample\n"
	"      --user NAME        run COMMAND as this user (spanprof itself stays root)\n"
	"      --max-frames N     distinct frames kept per process (default 100000)\n"
	"      --max-stacks N     distinct stacks and label sets kept (default 200000); past\n"
	"                         it samples keep their stack without span and trace ids (in\n"
	"                         up to N/4 more), then go under [truncated]; past --max-frames\n"
	"                         too; all of it counted\n"
	"      --max-span-tables N  hooked processes the sampler reads at once (default 4096);\n"
	"                         past it, those sampled least recently make room (counted)\n"
	"      --max-symbol-mb N  " BUDGET_USAGE("                         ")
	SYMBOL_USAGE("                         ")
	"                         (record waits up to 5 s at the end for files being fetched)\n"
	"  -v, --verbose          progress and loss counters every second\n"
	"  -h, --help             this text\n";

static const char usage_agent[] =
	"Usage: spanprof agent [--pyroscope-url URL] [--otlp-url URL] [--output-dir DIR] [options]\n"
	"\n"
	"Profile every .NET process on the host continuously (started before or after the agent, in\n"
	"any container) and send one span-labelled profile per service per window. Runs until\n"
	"SIGTERM, which flushes the last window. SIGUSR1 pauses sampling, SIGUSR2 resumes it.\n"
	"\n"
	"  -F, --freq HZ              samples per second per CPU (default 19)\n"
	"      --interval SECS        window length (default 15)\n"
	"      --all-processes        native processes too (default: .NET processes only)\n"
	"      --pyroscope-url URL    push to Grafana Pyroscope (URL/push.v1.PusherService/Push);\n"
	"                             also $SPANPROF_PYROSCOPE_URL, _USER, _TENANT, _PASSWORD, _TOKEN\n"
	"      --pyroscope-user USER  basic auth user; the password from --pyroscope-password-file\n"
	"                             or $SPANPROF_PYROSCOPE_PASSWORD\n"
	"      --pyroscope-password-file FILE\n"
	"      --pyroscope-token-file FILE  bearer token (or $SPANPROF_PYROSCOPE_TOKEN)\n"
	"      --pyroscope-tenant ID  X-Scope-OrgID\n"
	"      --pyroscope-header 'Name: value'  extra header (repeatable)\n"
	"      --pyroscope-ca FILE    CA bundle for TLS\n"
	"      --otlp-url URL         send OTLP profiles over OTLP/HTTP: POST URL/v1development/profiles\n"
	"                             (a URL with a path is used as given)\n"
	"      --otlp                 the same, to $OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT, else\n"
	"                             $OTEL_EXPORTER_OTLP_ENDPOINT/v1development/profiles, else\n"
	"                             http://localhost:4318/v1development/profiles\n"
	"      --otlp-header 'Name: value'  extra header (repeatable; over OTEL_EXPORTER_OTLP_HEADERS)\n"
	"      --otlp-timeout SECS    per request (default $OTEL_EXPORTER_OTLP_TIMEOUT ms, else 10)\n"
	"      --otlp-compression gzip|none  (default $OTEL_EXPORTER_OTLP_COMPRESSION, else gzip)\n"
	"      --otlp-ca FILE         CA bundle for TLS (default $OTEL_EXPORTER_OTLP_CERTIFICATE)\n"
	"                             the _PROFILES_ form of each variable wins over the shared one\n"
	"      --output-dir DIR       also write DIR/<service>/<start>-<end>.pb.gz\n"
	"      --output-max-mb N      total size of --output-dir; oldest removed (default 1024)\n"
	"      --metrics-addr HOST:PORT  serve Prometheus /metrics and /healthz\n"
	"      --pods-dir DIR         the kubelet's pod logs (default /var/log/pods)\n"
	"      --containers-dir DIR   the kubelet's container log links (default /var/log/containers)\n"
	"      --node NAME            node label (default $NODE_NAME, else the host name)\n"
	"      --queue-mb N           delivery queue bound (default 64)\n"
	"      --flush-timeout SECS   wait at SIGTERM for delivery (default 5)\n"
	"      --full-span-labels     trace_id, span_id (active span), local_root_span_id instead of\n"
	"                             Pyroscope's span_id = local root span\n"
	"      --off-cpu              also time how long the threads of .NET processes (with\n"
	"                             --all-processes: of every process) block, with stack and span:\n"
	"                             its own profile type, Pyroscope's off_cpu (off_cpu/nanoseconds),\n"
	"                             in series with the CPU ones' labels; OTLP: a second profile\n"
	"      --off-cpu-threshold MS blocks this long or longer get stacks (default 1); shorter\n"
	"                             ones are only counted (/metrics), with their total time\n"
	"      --no-enable-perfmap    do not turn perf maps on in .NET processes that lack them\n"
	"      --allow-remote-files   read perf maps and jitdumps on remote or FUSE file systems\n"
	"      --perfmap-max-mb N     a perf map spanprof turned on that passes N MiB is started\n"
	"                             afresh (perf maps off and on again: the runtime writes the\n"
	"                             live methods only); 0: no cap (default 32)\n"
	"      --perfmap-idle SECS    perf maps spanprof turned on in a process not sampled for\n"
	"                             SECS are turned off and their files removed, on again at\n"
	"                             its next sample; 0: never (default 3600)\n"
	"      --ringbuf-mb N         ring buffer size in MiB (default: 2 s of samples from every\n"
	"                             CPU, a power of two: 256 KiB on a small node at 19 Hz)\n"
	"      --max-frames N         distinct frames kept per process (default 100000)\n"
	"      --max-stacks N         distinct stacks per window (default 200000); past it\n"
	"                             samples keep their stack without span and trace ids (in\n"
	"                             up to N/4 more), then go under [truncated]; past\n"
	"                             --max-frames too; all of it counted\n"
	"      --max-span-tables N    hooked processes the sampler reads at once (default 4096);\n"
	"                             past it, those sampled least recently make room (counted)\n"
	"      --max-symbol-mb N      " BUDGET_USAGE("                             ")
	SYMBOL_USAGE("                             ")
	"  -v, --verbose              one line per window\n"
	"  -h, --help                 this text\n";

static const char *cmd_name = "record";

static int bad_usage(const char *msg, const char *arg)
{
	fprintf(stderr, "spanprof: %s%s%s; see 'spanprof %s --help'\n", msg, arg ? ": " : "",
		arg ? arg : "", cmd_name);
	return 2;
}

static int parse_seconds(const char *s, double min, double max, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || !(*out >= min) || *out > max ? -1 : 0;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max)
		return -1;
	*out = v;
	return 0;
}

/* One of SYMBOL_LONGOPTS into o: 0, or the exit code of a bad value. */
static int symbol_opt(int c, char *arg, struct symsrv_opts *o)
{
	unsigned long v;

	switch (c) {
	case OPT_SYM_SERVER:
		if (strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8))
			return bad_usage("bad symbol server URL (want http://HOST:PORT or https://...)",
					 arg);
		if (o->n_urls == SYMSRV_MAX_URLS)
			return bad_usage("too many --symbol-server options", NULL);
		o->urls[o->n_urls++] = arg;
		return 0;
	case OPT_SYM_CACHE:
		if (!arg[0])
			return bad_usage("empty --symbol-cache", NULL);
		o->cache_dir = arg;
		return 0;
	default:
		if (parse_uint(arg, 1u << 30, &v) || v == 0)
			return bad_usage("bad --symbol-cache-mb (MiB, at least 1)", arg);
		o->cache_max_bytes = (uint64_t)v << 20;
		return 0;
	}
}

static int cmd_record(int argc, char **argv)
{
	enum { OPT_FORMAT = 256, OPT_BY_SPAN, OPT_PYRO, OPT_NO_ENABLE, OPT_TIERS, OPT_RINGBUF,
	       OPT_BPF_STATS, OPT_USER, OPT_MAX_FRAMES, OPT_MAX_STACKS, OPT_MAX_TABLES,
	       OPT_MAX_SYMBOL_MB, OPT_REMOTE, OPT_PERFMAP_MAX, OPT_PERFMAP_IDLE, OPT_OFF_CPU,
	       OPT_OFF_THRESHOLD, OPT_VALUE };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "off-cpu", no_argument, NULL, OPT_OFF_CPU },
		{ "off-cpu-threshold", required_argument, NULL, OPT_OFF_THRESHOLD },
		{ "value", required_argument, NULL, OPT_VALUE },
		{ "freq", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "by-span", no_argument, NULL, OPT_BY_SPAN },
		{ "pyroscope-labels", no_argument, NULL, OPT_PYRO },
		{ "no-enable-perfmap", no_argument, NULL, OPT_NO_ENABLE },
		{ "allow-remote-files", no_argument, NULL, OPT_REMOTE },
		{ "tiers", no_argument, NULL, OPT_TIERS },
		{ "ringbuf-mb", required_argument, NULL, OPT_RINGBUF },
		{ "bpf-stats", no_argument, NULL, OPT_BPF_STATS },
		{ "user", required_argument, NULL, OPT_USER },
		{ "max-frames", required_argument, NULL, OPT_MAX_FRAMES },
		{ "max-stacks", required_argument, NULL, OPT_MAX_STACKS },
		{ "max-span-tables", required_argument, NULL, OPT_MAX_TABLES },
		{ "max-symbol-mb", required_argument, NULL, OPT_MAX_SYMBOL_MB },
		{ "perfmap-max-mb", required_argument, NULL, OPT_PERFMAP_MAX },
		{ "perfmap-idle", required_argument, NULL, OPT_PERFMAP_IDLE },
		SYMBOL_LONGOPTS,
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct record_opts o = {
		.freq = 99,
		.enable_perfmap = 1,
		.ringbuf_mb = 8,
		.perfmap_max_mb = PMPOLICY_MAX_MB_DEFAULT,
	};
	unsigned long v;
	char *end;
	int c;

	optind = 1;
	opterr = 0;	/* one line of our own instead of getopt's */
	/* "+": options end at the first word that is not one: the command (with or without "--"). */
	while ((c = getopt_long(argc, argv, "+p:F:d:o:vh", longopts, NULL)) != -1) {
		if (c >= OPT_SYM_SERVER && c <= OPT_SYM_CACHE_MB) {
			if (symbol_opt(c, optarg, &o.symsrv))
				return 2;
			continue;
		}
		switch (c) {
		case 'p':
			if (parse_uint(optarg, 0x7fffffff, &v) || v == 0)
				return bad_usage("bad pid", optarg);
			if (o.npids == RECORD_MAX_PIDS)
				return bad_usage("too many -p options", NULL);
			o.pids[o.npids++] = v;
			break;
		case 'F':
			if (parse_uint(optarg, 1000000, &v) || v == 0)
				return bad_usage("bad frequency (want a whole number of Hz, e.g. -F 99)",
						 optarg);
			o.freq = v;
			break;
		case 'd':
			errno = 0;
			o.duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o.duration > 0) || o.duration > 1e7)
				return bad_usage("bad duration (want seconds > 0, e.g. -d 30)", optarg);
			break;
		case 'o':
			if (!optarg[0])
				return bad_usage("empty output path", NULL);
			if (o.noutputs == RECORD_MAX_OUTPUTS)
				return bad_usage("too many -o options", NULL);
			o.outputs[o.noutputs++] = optarg;
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "pprof"))
				o.format = FMT_PPROF;
			else if (!strcmp(optarg, "folded"))
				o.format = FMT_FOLDED;
			else if (!strcmp(optarg, "svg"))
				o.format = FMT_SVG;
			else if (!strcmp(optarg, "otlp"))
				o.format = FMT_OTLP;
			else
				return bad_usage("unknown format (pprof, folded, svg or otlp)", optarg);
			break;
		case OPT_BY_SPAN:
			o.by_span = 1;
			break;
		case OPT_OFF_CPU:
			o.off_cpu = 1;
			break;
		case OPT_OFF_THRESHOLD: {
			double ms;

			errno = 0;
			ms = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(ms > 0) || ms > 1e6)
				return bad_usage("bad off-CPU threshold (milliseconds > 0, e.g. 1 or 0.5)",
						 optarg);
			o.off_cpu_threshold_ns = (uint64_t)(ms * 1e6);
			break;
		}
		case OPT_VALUE:
			if (!strcmp(optarg, "cpu"))
				o.value_off_cpu = 0;
			else if (!strcmp(optarg, "off-cpu"))
				o.value_off_cpu = 1;
			else
				return bad_usage("unknown value (cpu or off-cpu)", optarg);
			break;
		case OPT_PYRO:
			o.pyroscope_labels = 1;
			break;
		case OPT_NO_ENABLE:
			o.enable_perfmap = 0;
			break;
		case OPT_REMOTE:
			o.allow_remote_files = 1;
			break;
		case OPT_TIERS:
			o.show_tiers = 1;
			break;
		case OPT_RINGBUF:
			if (parse_uint(optarg, 1024, &v) || v == 0)
				return bad_usage("bad ring buffer size (MiB, 1..1024)", optarg);
			o.ringbuf_mb = v;
			break;
		case OPT_BPF_STATS:
			o.bpf_stats = 1;
			break;
		case OPT_USER:
			o.user = optarg;
			break;
		case OPT_MAX_SYMBOL_MB:
			if (parse_uint(optarg, 1u << 20, &v) || v == 0)
				return bad_usage("bad symbol budget (MiB, 1..1048576)", optarg);
			o.max_symbol_mb = v;
			break;
		case OPT_PERFMAP_MAX:
			if (parse_uint(optarg, 1u << 20, &v))
				return bad_usage("bad perf map cap (MiB, 0..1048576)", optarg);
			o.perfmap_max_mb = v;
			break;
		case OPT_PERFMAP_IDLE:
			if (parse_uint(optarg, 100u * 24 * 3600, &v))
				return bad_usage("bad perf map idle time (seconds, 0..8640000)", optarg);
			o.perfmap_idle_s = v;
			break;
		case OPT_MAX_FRAMES:
		case OPT_MAX_STACKS:
		case OPT_MAX_TABLES:
			if (parse_uint(optarg, c == OPT_MAX_TABLES ? 1u << 20 : UINT32_MAX, &v) || v == 0)
				return bad_usage("bad cap (a whole number > 0)", optarg);
			*(c == OPT_MAX_FRAMES ? &o.max_frames : c == OPT_MAX_STACKS ? &o.max_stacks
										    : &o.max_span_tables) = v;
			break;
		case 'v':
			o.verbose++;
			break;
		case 'h':
			fputs(usage_record, stdout);
			return 0;
		default:
			return bad_usage(optopt && optopt < 256 ? "bad option or missing value for"
								 : "bad option",
					 argv[optind - 1]);
		}
	}
	if (optind < argc)
		o.command = argv + optind;
	if (o.command && o.npids)
		return bad_usage("give -p PID or a COMMAND, not both", NULL);
	if (o.user && !o.command)
		return bad_usage("--user goes with a COMMAND", NULL);
	if ((o.value_off_cpu || o.off_cpu_threshold_ns) && !o.off_cpu)
		return bad_usage("--value off-cpu and --off-cpu-threshold go with --off-cpu", NULL);
	if (!o.noutputs)
		o.outputs[o.noutputs++] = "spanprof.pb.gz";
	return record__run(&o);
}

static int cmd_agent(int argc, char **argv)
{
	enum { OPT_INTERVAL = 256, OPT_ALL, OPT_PURL, OPT_PUSER, OPT_PPASS, OPT_PTOKEN, OPT_PTENANT,
	       OPT_PHEADER, OPT_PCA, OPT_OUTDIR, OPT_OUTMAX, OPT_METRICS, OPT_PODS, OPT_CONTAINERS,
	       OPT_NODE, OPT_QUEUE, OPT_FLUSH, OPT_FULL, OPT_NO_ENABLE, OPT_RINGBUF, OPT_AMAX_FRAMES,
	       OPT_AMAX_STACKS, OPT_AMAX_TABLES, OPT_AMAX_SYMBOL_MB, OPT_OTLP, OPT_REMOTE,
	       OPT_OURL, OPT_OHEADER, OPT_OTIMEOUT, OPT_OCOMP, OPT_OCA, OPT_APERFMAP_MAX,
	       OPT_APERFMAP_IDLE, OPT_AOFF_CPU, OPT_AOFF_THRESHOLD };
	static const struct option longopts[] = {
		{ "freq", required_argument, NULL, 'F' },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "all-processes", no_argument, NULL, OPT_ALL },
		{ "pyroscope-url", required_argument, NULL, OPT_PURL },
		{ "pyroscope-user", required_argument, NULL, OPT_PUSER },
		{ "pyroscope-password-file", required_argument, NULL, OPT_PPASS },
		{ "pyroscope-token-file", required_argument, NULL, OPT_PTOKEN },
		{ "pyroscope-tenant", required_argument, NULL, OPT_PTENANT },
		{ "pyroscope-header", required_argument, NULL, OPT_PHEADER },
		{ "pyroscope-ca", required_argument, NULL, OPT_PCA },
		{ "otlp", no_argument, NULL, OPT_OTLP },
		{ "otlp-url", required_argument, NULL, OPT_OURL },
		{ "otlp-header", required_argument, NULL, OPT_OHEADER },
		{ "otlp-timeout", required_argument, NULL, OPT_OTIMEOUT },
		{ "otlp-compression", required_argument, NULL, OPT_OCOMP },
		{ "otlp-ca", required_argument, NULL, OPT_OCA },
		{ "output-dir", required_argument, NULL, OPT_OUTDIR },
		{ "output-max-mb", required_argument, NULL, OPT_OUTMAX },
		{ "metrics-addr", required_argument, NULL, OPT_METRICS },
		{ "pods-dir", required_argument, NULL, OPT_PODS },
		{ "containers-dir", required_argument, NULL, OPT_CONTAINERS },
		{ "node", required_argument, NULL, OPT_NODE },
		{ "queue-mb", required_argument, NULL, OPT_QUEUE },
		{ "flush-timeout", required_argument, NULL, OPT_FLUSH },
		{ "full-span-labels", no_argument, NULL, OPT_FULL },
		{ "no-enable-perfmap", no_argument, NULL, OPT_NO_ENABLE },
		{ "allow-remote-files", no_argument, NULL, OPT_REMOTE },
		{ "ringbuf-mb", required_argument, NULL, OPT_RINGBUF },
		{ "max-frames", required_argument, NULL, OPT_AMAX_FRAMES },
		{ "max-stacks", required_argument, NULL, OPT_AMAX_STACKS },
		{ "max-span-tables", required_argument, NULL, OPT_AMAX_TABLES },
		{ "max-symbol-mb", required_argument, NULL, OPT_AMAX_SYMBOL_MB },
		{ "perfmap-max-mb", required_argument, NULL, OPT_APERFMAP_MAX },
		{ "perfmap-idle", required_argument, NULL, OPT_APERFMAP_IDLE },
		{ "off-cpu", no_argument, NULL, OPT_AOFF_CPU },
		{ "off-cpu-threshold", required_argument, NULL, OPT_AOFF_THRESHOLD },
		SYMBOL_LONGOPTS,
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct agent_opts o = {
		.freq = 19,
		.interval = 15,
		.enable_perfmap = 1,
		.output_max_bytes = 1024ull << 20,
		.queue_bytes = 64u << 20,
		.flush_timeout_ms = 5000,
		.ringbuf_mb = 0,	/* sized to the CPUs and -F */
		.perfmap_max_mb = PMPOLICY_MAX_MB_DEFAULT,
		.perfmap_idle_s = PMPOLICY_IDLE_S_DEFAULT,
	};
	unsigned long v;
	double d;
	int c;

	cmd_name = "agent";
	/* Settings from the environment (a ConfigMap, a Secret); flags win. */
	o.pyroscope_url = getenv("SPANPROF_PYROSCOPE_URL");
	o.pyroscope_user = getenv("SPANPROF_PYROSCOPE_USER");
	o.pyroscope_tenant = getenv("SPANPROF_PYROSCOPE_TENANT");
	if (o.pyroscope_url && !o.pyroscope_url[0])
		o.pyroscope_url = NULL;
	if (o.pyroscope_user && !o.pyroscope_user[0])
		o.pyroscope_user = NULL;
	if (o.pyroscope_tenant && !o.pyroscope_tenant[0])
		o.pyroscope_tenant = NULL;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "F:vh", longopts, NULL)) != -1) {
		if (c >= OPT_SYM_SERVER && c <= OPT_SYM_CACHE_MB) {
			if (symbol_opt(c, optarg, &o.symsrv))
				return 2;
			continue;
		}
		switch (c) {
		case 'F':
			if (parse_uint(optarg, 1000000, &v) || v == 0)
				return bad_usage("bad frequency (want a whole number of Hz, e.g. -F 19)",
						 optarg);
			o.freq = v;
			break;
		case OPT_INTERVAL:
			if (parse_seconds(optarg, 0.1, 3600, &o.interval))
				return bad_usage("bad interval (seconds, 0.1 to 3600)", optarg);
			break;
		case OPT_ALL:
			o.all_processes = 1;
			break;
		case OPT_PURL:
			if (strncmp(optarg, "http://", 7) && strncmp(optarg, "https://", 8))
				return bad_usage("bad Pyroscope URL (want http://HOST:PORT or https://...)",
						 optarg);
			o.pyroscope_url = optarg;
			break;
		case OPT_PUSER:
			o.pyroscope_user = optarg;
			break;
		case OPT_PPASS:
			o.pyroscope_password_file = optarg;
			break;
		case OPT_PTOKEN:
			o.pyroscope_token_file = optarg;
			break;
		case OPT_PTENANT:
			o.pyroscope_tenant = optarg;
			break;
		case OPT_PHEADER:
			if (!strchr(optarg, ':'))
				return bad_usage("bad header (want 'Name: value')", optarg);
			if (o.nheaders == AGENT_MAX_HEADERS)
				return bad_usage("too many --pyroscope-header options", NULL);
			o.headers[o.nheaders++] = optarg;
			break;
		case OPT_PCA:
			o.pyroscope_ca = optarg;
			break;
		case OPT_OURL:
			if (strncmp(optarg, "http://", 7) && strncmp(optarg, "https://", 8))
				return bad_usage("bad OTLP URL (want http://HOST:PORT or https://...)",
						 optarg);
			o.otlp_url = optarg;
			o.otlp = 1;	/* a URL turns the exporter on */
			break;
		case OPT_OTLP:
			o.otlp = 1;
			break;
		case OPT_OHEADER:
			if (!strchr(optarg, ':') || optarg[0] == ':')
				return bad_usage("bad header (want 'Name: value')", optarg);
			if (o.n_otlp_headers == AGENT_MAX_HEADERS)
				return bad_usage("too many --otlp-header options", NULL);
			o.otlp_headers[o.n_otlp_headers++] = optarg;
			break;
		case OPT_OTIMEOUT:
			if (parse_seconds(optarg, 0.001, 3600, &d))
				return bad_usage("bad --otlp-timeout (seconds, 0.001..3600)", optarg);
			o.otlp_timeout_ms = d * 1000 < 1 ? 1 : d * 1000;
			break;
		case OPT_OCOMP:
			if (!strcmp(optarg, "gzip"))
				o.otlp_compression = AGENT_OTLP_GZIP;
			else if (!strcmp(optarg, "none"))
				o.otlp_compression = AGENT_OTLP_NONE;
			else
				return bad_usage("bad --otlp-compression (gzip or none)", optarg);
			break;
		case OPT_OCA:
			o.otlp_ca = optarg;
			break;
		case OPT_OUTDIR:
			if (!optarg[0])
				return bad_usage("empty --output-dir", NULL);
			o.output_dir = optarg;
			break;
		case OPT_OUTMAX:
			if (parse_uint(optarg, 1u << 30, &v) || v == 0)
				return bad_usage("bad --output-max-mb (MiB, at least 1)", optarg);
			o.output_max_bytes = (uint64_t)v << 20;
			break;
		case OPT_METRICS:
			o.metrics_addr = optarg;
			break;
		case OPT_PODS:
			o.pods_dir = optarg;
			break;
		case OPT_CONTAINERS:
			o.containers_dir = optarg;
			break;
		case OPT_NODE:
			o.node = optarg;
			break;
		case OPT_QUEUE:
			if (parse_seconds(optarg, 0.001, 4096, &d))
				return bad_usage("bad --queue-mb (MiB, 0.001..4096)", optarg);
			o.queue_bytes = d * 1048576;
			break;
		case OPT_FLUSH:
			if (parse_seconds(optarg, 0, 600, &d))
				return bad_usage("bad --flush-timeout (seconds, 0..600)", optarg);
			o.flush_timeout_ms = d * 1000;
			break;
		case OPT_FULL:
			o.full_span_labels = 1;
			break;
		case OPT_NO_ENABLE:
			o.enable_perfmap = 0;
			break;
		case OPT_AMAX_SYMBOL_MB:
			if (parse_uint(optarg, 1u << 20, &v) || v == 0)
				return bad_usage("bad symbol budget (MiB, 1..1048576)", optarg);
			o.max_symbol_mb = v;
			break;
		case OPT_APERFMAP_MAX:
			if (parse_uint(optarg, 1u << 20, &v))
				return bad_usage("bad perf map cap (MiB, 0..1048576)", optarg);
			o.perfmap_max_mb = v;
			break;
		case OPT_APERFMAP_IDLE:
			if (parse_uint(optarg, 100u * 24 * 3600, &v))
				return bad_usage("bad perf map idle time (seconds, 0..8640000)", optarg);
			o.perfmap_idle_s = v;
			break;
		case OPT_REMOTE:
			o.allow_remote_files = 1;
			break;
		case OPT_AOFF_CPU:
			o.off_cpu = 1;
			break;
		case OPT_AOFF_THRESHOLD:
			if (parse_seconds(optarg, 1e-6, 1e6, &d))
				return bad_usage("bad off-CPU threshold (milliseconds > 0, e.g. 1 or 0.5)",
						 optarg);
			o.off_cpu_threshold_ns = (uint64_t)(d * 1e6);
			break;
		case OPT_AMAX_FRAMES:
		case OPT_AMAX_STACKS:
		case OPT_AMAX_TABLES:
			if (parse_uint(optarg, c == OPT_AMAX_TABLES ? 1u << 20 : UINT32_MAX, &v) || v == 0)
				return bad_usage("bad cap (a whole number > 0)", optarg);
			*(c == OPT_AMAX_FRAMES ? &o.max_frames : c == OPT_AMAX_STACKS ? &o.max_stacks
										      : &o.max_span_tables) = v;
			break;
		case OPT_RINGBUF:
			if (parse_uint(optarg, 1024, &v) || v == 0)
				return bad_usage("bad ring buffer size (MiB, 1..1024)", optarg);
			o.ringbuf_mb = v;
			break;
		case 'v':
			o.verbose++;
			break;
		case 'h':
			fputs(usage_agent, stdout);
			return 0;
		default:
			return bad_usage(optopt && optopt < 256 ? "bad option or missing value for"
								 : "bad option",
					 argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad_usage("unexpected argument", argv[optind]);
	if (o.off_cpu_threshold_ns && !o.off_cpu)
		return bad_usage("--off-cpu-threshold goes with --off-cpu", NULL);
	if (o.pyroscope_url && strncmp(o.pyroscope_url, "http://", 7) &&
	    strncmp(o.pyroscope_url, "https://", 8))
		return bad_usage("bad Pyroscope URL (want http://HOST:PORT or https://...)",
				 o.pyroscope_url);
	return agent__run(&o);
}

int main(int argc, char **argv)
{
	/* Symbol tables and perf map indexes come and go (budget, idle processes, exits): each large
	 * one in its own mapping, so that freeing it returns the memory. (glibc raises the threshold
	 * after the first such free, and later tables would stay in the heap after they are freed.)
	 * Above the 256 KiB read buffers, which come and go with every read of a file. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	if (argc < 2)
		goto usage;
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage_main, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("spanprof %s\n", SPANPROF_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "agent"))
		return cmd_agent(argc - 1, argv + 1);
	fprintf(stderr, "spanprof: unknown command '%s'; see 'spanprof --help'\n", argv[1]);
	return 2;
usage:
	fputs(usage_main, stderr);
	return 2;
}
