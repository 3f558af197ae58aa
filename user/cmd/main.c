/* main.c: the spanprof command line. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

static const char usage_main[] =
	"Usage: spanprof <command> [options]\n"
	"\n"
	"eBPF CPU profiler for .NET on Linux: every frame named, every sample labelled with\n"
	"the OpenTelemetry span it ran in.\n"
	"\n"
	"Commands:\n"
	"  record     sample CPUs and write a profile (spanprof record --help)\n"
	"\n"
	"Options:\n"
	"  -h, --help     this text\n"
	"  --version      print the version\n";

static const char usage_record[] =
	"Usage: spanprof record [-p PID]... [-F HZ] [-d SECONDS] [-o FILE]... [--format F] [-v]\n"
	"\n"
	"Sample every CPU (or only the given processes) and write a profile.\n"
	"\n"
	"  -p, --pid PID          profile this process (repeat for several); default: all\n"
	"  -F, --freq HZ          samples per second per CPU (default 99)\n"
	"  -d, --duration SECS    stop after SECS seconds (default: at Ctrl-C / SIGTERM)\n"
	"  -o, --output FILE      output file (default spanprof.pb.gz); repeat for several\n"
	"      --format F         pprof | folded | svg (default from the suffix: .pb.gz pprof,\n"
	"                         .svg flame graph, anything else folded stacks)\n"
	"      --by-span          print CPU time and top functions per local root span\n"
	"      --pyroscope-labels span labels in Pyroscope's convention (span_id = local root)\n"
	"      --no-enable-perfmap  do not turn perf maps on in .NET processes that lack them\n"
	"      --tiers            keep the JIT tier in .NET frame names ([OptimizedTier1], ...)\n"
	"      --ringbuf-mb N     ring buffer size in MiB (default 8)\n"
	"      --bpf-stats        measure the sampler's BPF run time per sample\n"
	"  -v, --verbose          progress and loss counters every second\n"
	"  -h, --help             this text\n";

static int bad_usage(const char *msg, const char *arg)
{
	fprintf(stderr, "spanprof: %s%s%s; see 'spanprof record --help'\n", msg, arg ? ": " : "",
		arg ? arg : "");
	return 2;
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

static int cmd_record(int argc, char **argv)
{
	enum { OPT_FORMAT = 256, OPT_BY_SPAN, OPT_PYRO, OPT_NO_ENABLE, OPT_TIERS, OPT_RINGBUF,
	       OPT_BPF_STATS };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "freq", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "by-span", no_argument, NULL, OPT_BY_SPAN },
		{ "pyroscope-labels", no_argument, NULL, OPT_PYRO },
		{ "no-enable-perfmap", no_argument, NULL, OPT_NO_ENABLE },
		{ "tiers", no_argument, NULL, OPT_TIERS },
		{ "ringbuf-mb", required_argument, NULL, OPT_RINGBUF },
		{ "bpf-stats", no_argument, NULL, OPT_BPF_STATS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct record_opts o = {
		.freq = 99,
		.enable_perfmap = 1,
		.ringbuf_mb = 8,
	};
	unsigned long v;
	char *end;
	int c;

	optind = 1;
	opterr = 0;	/* one line of our own instead of getopt's */
	while ((c = getopt_long(argc, argv, "p:F:d:o:vh", longopts, NULL)) != -1) {
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
			else
				return bad_usage("unknown format (pprof, folded or svg)", optarg);
			break;
		case OPT_BY_SPAN:
			o.by_span = 1;
			break;
		case OPT_PYRO:
			o.pyroscope_labels = 1;
			break;
		case OPT_NO_ENABLE:
			o.enable_perfmap = 0;
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
		return bad_usage("unexpected argument", argv[optind]);
	if (!o.noutputs)
		o.outputs[o.noutputs++] = "spanprof.pb.gz";
	return record__run(&o);
}

int main(int argc, char **argv)
{
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
	fprintf(stderr, "spanprof: unknown command '%s'; see 'spanprof --help'\n", argv[1]);
	return 2;
usage:
	fputs(usage_main, stderr);
	return 2;
}
