/* flags.h: a command line from one table of options: parsing (getopt_long), values from the
 * environment (PREFIX_<OPTION>, flags win), defaults and the --help text all come from the rows. */
#ifndef SPANPROF_FLAGS_H
#define SPANPROF_FLAGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FLAGS_MAX_CMDS 2

enum flag_type {
	FLAG_SWITCH,	/* no argument: sets an int to 1 */
	FLAG_CLEAR,	/* no argument: sets an int to 0 (--no-...) */
	FLAG_COUNT,	/* no argument: an int counted up (-v -v) */
	FLAG_HELP,	/* no argument: the caller prints the help */
	FLAG_U32,	/* a whole number in [min, max] into a uint32_t */
	FLAG_MIB,	/* whole MiB in [min, max] into a uint64_t of bytes */
	FLAG_DOUBLE,	/* a number in [min, max] into a double */
	FLAG_SCALED32,	/* a number in [min, max] times scale into a uint32_t (at least 1 if > 0) */
	FLAG_SCALED64,	/* the same into a uint64_t */
	FLAG_STRING,	/* a non-empty string (const char *) */
	FLAG_URL,	/* an http:// or https:// URL */
	FLAG_HEADER,	/* 'Name: value' */
	FLAG_PID,	/* a process id > 0 (uint32_t) */
	FLAG_ENUM,	/* one of choices, its value into an int */
};

struct flag_choice {
	const char *name;
	int value;
};

/*
 * One option. off[cmd] is where its value lives in the caller's struct for command cmd (the bit
 * 1 << cmd in cmds). A list (max_n > 0) is an array at off with its int count at count_off, filled
 * by repeating the option, or from a comma-separated environment value.
 */
struct flag {
	const char *name;	/* long name, without "--" */
	char short_name;	/* 0: none */
	const char *arg;	/* the argument's name in the help (NULL: takes none) */
	unsigned cmds;		/* commands that take it: bit 1 << cmd */
	enum flag_type type;
	size_t off[FLAGS_MAX_CMDS];
	size_t count_off[FLAGS_MAX_CMDS];
	unsigned max_n;		/* a list of at most max_n values; 0: one value */
	double min, max, scale;
	const struct flag_choice *choices;	/* FLAG_ENUM: ends with a NULL name */
	const char *def;	/* default, parsed as a value before anything else (NULL: zero) */
	const char *def_doc;	/* default as the help says it, when not def */
	const char *help;	/* one sentence; the help adds the default and the variable */
	const char *bad;	/* the error for a bad value, e.g. "bad frequency (want Hz > 0)" */
	int no_env;		/* never from the environment */
};

struct flag_table {
	const struct flag *rows;
	size_t n;
	const char *env_prefix;	/* "SPANPROF_" */
	unsigned env_cmds;	/* commands that read the environment: bit 1 << cmd */
};

/* The variable of f: prefix, then its name in upper case with '-' as '_'. Returns buf. */
char *flags__env_name(const struct flag_table *t, const struct flag *f, char *buf, size_t len);

/*
 * Fill base for command cmd: every default, then (if cmd reads it) the environment (an empty
 * variable counts as unset), then argv[1..]. With stop_at_arg, options end at the first word that
 * is not one; *first_arg (if not NULL) gets the index of the first word left. 0; 1 when a
 * FLAG_HELP option was given (nothing after it is parsed); -EINVAL with a one-line reason in err
 * (the variable named for a value from the environment).
 */
int flags__parse(const struct flag_table *t, int cmd, void *base, int argc, char **argv,
		 int stop_at_arg, int *first_arg, char *err, size_t errlen);

/* The options of cmd as --help lists them, wrapped at 100 columns; with_env: each with its
 * variable, as "[env NAME]". */
void flags__help(const struct flag_table *t, int cmd, FILE *f);

#endif /* SPANPROF_FLAGS_H */
