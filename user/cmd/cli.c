/* cli.c: the spanprof command line: the command, its options (options.c), the log, the run. */
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "cli.h"
#include "log.h"
#include "options.h"
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

int cli__run(int argc, char **argv)
{
	static struct options o;	/* large (the pid list): not on the stack */
	enum options_cmd cmd;
	char err[512];
	int rc;

	if (argc < 2) {
		fputs(usage_main, stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage_main, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("spanprof %s\n", SPANPROF_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "record") || !strcmp(argv[1], "agent")) {
		cmd = !strcmp(argv[1], "agent") ? OPTIONS_AGENT : OPTIONS_RECORD;
	} else {
		log_error("unknown command '%s'; see 'spanprof --help'", argv[1]);
		return 2;
	}
	rc = options__parse(&o, cmd, argc - 1, argv + 1, err, sizeof(err));
	log__setup(o.log_format, o.log_level);
	if (rc == 1) {
		options__help(cmd, stdout);
		return 0;
	}
	if (rc) {
		log_error("%s; see 'spanprof %s --help'", err, argv[1]);
		return rc;
	}
	return cmd == OPTIONS_AGENT ? agent__run(&o.agent) : record__run(&o.rec);
}
