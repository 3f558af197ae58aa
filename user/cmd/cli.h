/* cli.h: the spanprof command line, apart from the process's set-up in main.c (so tests run it). */
#ifndef SPANPROF_CLI_H
#define SPANPROF_CLI_H

/* Parse argv (argv[1]: the command), set up the log, run record or agent. Returns the exit code:
 * 0 (also for --help and --version), 2 for a bad command line (one line on the log), else the
 * command's. */
int cli__run(int argc, char **argv);

#endif /* SPANPROF_CLI_H */
