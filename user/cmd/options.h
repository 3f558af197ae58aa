/* options.h: every option of `spanprof record` and `spanprof agent`, in one table (options.c):
 * parsing, the environment (SPANPROF_<OPTION>, the agent's) and --help come from it. */
#ifndef SPANPROF_OPTIONS_H
#define SPANPROF_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "agent.h"
#include "flags.h"
#include "log.h"
#include "record.h"

enum options_cmd { OPTIONS_RECORD, OPTIONS_AGENT };

struct options {
	struct record_opts rec;
	struct agent_opts agent;
	enum log_format log_format;	/* --log-format */
	enum log_level log_level;	/* --log-level */
};

extern const struct flag_table options_table;

/*
 * Parse argv (argv[0]: the command's name) for cmd into o, over the defaults and, for the agent,
 * the environment. 0: ready to run; 1: --help was asked for (nothing printed); 2: a usage error,
 * one line in err (the exit code).
 */
int options__parse(struct options *o, enum options_cmd cmd, int argc, char **argv, char *err,
		   size_t errlen);

/* `spanprof CMD --help`: the usage, then every option of the table that cmd takes. */
void options__help(enum options_cmd cmd, FILE *f);

#endif /* SPANPROF_OPTIONS_H */
