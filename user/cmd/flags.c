/* flags.c: a command line from one table of options (flags.h). */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flags.h"

#define HELP_COL	30	/* where the help text starts */
#define HELP_WIDTH	100

char *flags__env_name(const struct flag_table *t, const struct flag *f, char *buf, size_t len)
{
	size_t n = snprintf(buf, len, "%s", t->env_prefix);

	for (const char *s = f->name; *s && n + 1 < len; s++)
		buf[n++] = *s == '-' ? '_' : toupper((unsigned char)*s);
	if (n < len)
		buf[n] = 0;
	return buf;
}

static int takes(const struct flag *f, int cmd)
{
	return (f->cmds >> cmd) & 1;
}

static int reads_env(const struct flag_table *t, const struct flag *f, int cmd)
{
	return (t->env_cmds >> cmd) & 1 && !f->no_env && f->type != FLAG_HELP;
}

/* Where one value of f goes: the next element of a list, else the field itself. NULL: full. */
static void *slot(const struct flag *f, int cmd, void *base, size_t elem)
{
	char *p = (char *)base + f->off[cmd];
	int *count;

	if (!f->max_n)
		return p;
	count = (int *)((char *)base + f->count_off[cmd]);
	if ((unsigned)*count >= f->max_n)
		return NULL;
	return p + elem * (*count)++;
}

static int parse_number(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || isspace((unsigned char)*s) || !isfinite(*out) ? -1 : 0;
}

static int parse_whole(const char *s, double min, double max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int truthy(const char *s, int *out)
{
	static const char *const yes[] = { "1", "true", "yes", "on" };
	static const char *const no[] = { "0", "false", "no", "off" };

	for (int i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i]))
			return *out = 1, 0;
		if (!strcasecmp(s, no[i]))
			return *out = 0, 0;
	}
	return -1;
}

/* The reason a value of f is bad, for err. */
static const char *why_bad(const struct flag *f, char *buf, size_t len)
{
	if (f->bad)
		return f->bad;
	snprintf(buf, len, "bad --%s", f->name);
	return buf;
}

/* Set f from one value (from_env: the environment's, where switches take true/false). */
static int set_value(const struct flag *f, int cmd, void *base, const char *v, int from_env)
{
	char *field = (char *)base + f->off[cmd];
	uint64_t u;
	double d;
	int b;
	void *p;

	switch (f->type) {
	case FLAG_SWITCH:
	case FLAG_CLEAR:
		if (from_env && truthy(v, &b))
			return -1;
		if (!from_env || b)
			*(int *)field = f->type == FLAG_SWITCH;
		return 0;
	case FLAG_COUNT:
		if (from_env) {
			if (!truthy(v, &b))
				*(int *)field = b;
			else if (!parse_whole(v, 0, 9, &u))
				*(int *)field = u;
			else
				return -1;
		} else {
			(*(int *)field)++;
		}
		return 0;
	case FLAG_HELP:
		return 0;
	case FLAG_U32:
	case FLAG_PID:
		if (f->type == FLAG_PID ? parse_whole(v, 1, 0x7fffffff, &u) :
					  parse_whole(v, f->min, f->max, &u))
			return -1;
		if (!(p = slot(f, cmd, base, sizeof(uint32_t))))
			return -E2BIG;
		*(uint32_t *)p = u;
		return 0;
	case FLAG_MIB:
		if (parse_whole(v, f->min, f->max, &u))
			return -1;
		*(uint64_t *)field = u << 20;
		return 0;
	case FLAG_DOUBLE:
	case FLAG_SCALED32:
	case FLAG_SCALED64:
		if (parse_number(v, &d) || !(d >= f->min) || d > f->max)
			return -1;
		if (f->type == FLAG_DOUBLE) {
			*(double *)field = d;
			return 0;
		}
		d *= f->scale;
		if (d > 0 && d < 1)
			d = 1;
		if (f->type == FLAG_SCALED32)
			*(uint32_t *)field = d;
		else
			*(uint64_t *)field = d;
		return 0;
	case FLAG_URL:
		if (strncmp(v, "http://", 7) && strncmp(v, "https://", 8))
			return -1;
		goto string;
	case FLAG_HEADER:
		if (!strchr(v, ':') || v[0] == ':')
			return -1;
		goto string;
	case FLAG_STRING:
	string:
		if (!v[0])
			return -1;
		if (!(p = slot(f, cmd, base, sizeof(const char *))))
			return -E2BIG;
		*(const char **)p = v;
		return 0;
	case FLAG_ENUM:
		for (const struct flag_choice *c = f->choices; c && c->name; c++)
			if (!strcmp(c->name, v)) {
				*(int *)field = c->value;
				return 0;
			}
		return -1;
	}
	return -1;
}

static int value_error(const struct flag *f, int rc, const char *v, const char *env, char *err,
		       size_t errlen)
{
	char buf[128];

	if (rc == -E2BIG)
		snprintf(err, errlen, "too many --%s options%s%s", f->name, env ? " in $" : "",
			 env ? env : "");
	else if (env)
		snprintf(err, errlen, "%s: '%s' (from $%s)", f->type <= FLAG_CLEAR ?
			 "bad value (want true or false)" : why_bad(f, buf, sizeof(buf)), v, env);
	else
		snprintf(err, errlen, "%s: %s", why_bad(f, buf, sizeof(buf)), v);
	return -EINVAL;
}

/* The copies that lists from the environment point into: kept until exit, and reachable. */
static char **env_copies;
static size_t n_env_copies;

/* A list from the environment: comma-separated values, in a copy of the variable. */
static int set_env(const struct flag_table *t, const struct flag *f, int cmd, void *base,
		   const char *v, const char *env, char *err, size_t errlen)
{
	char *copy, *save = NULL;
	int rc;

	if (!f->max_n) {
		rc = set_value(f, cmd, base, v, 1);
		return rc ? value_error(f, rc, v, env, err, errlen) : 0;
	}
	copy = strdup(v);
	if (copy) {
		char **more = realloc(env_copies, (n_env_copies + 1) * sizeof(*more));

		if (!more) {
			free(copy);
			copy = NULL;
		} else {
			env_copies = more;
			env_copies[n_env_copies++] = copy;
		}
	}
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (char *s = strtok_r(copy, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
		while (*s == ' ')
			s++;
		if ((rc = set_value(f, cmd, base, s, 1)))
			return value_error(f, rc, s, env, err, errlen);
	}
	return 0;
}

int flags__parse(const struct flag_table *t, int cmd, void *base, int argc, char **argv,
		 int stop_at_arg, int *first_arg, char *err, size_t errlen)
{
	struct option *lo = calloc(t->n + 1, sizeof(*lo));
	char *shorts = calloc(2 * t->n + 3, 1), env[128];
	unsigned char *from_env = calloc(t->n, 1);
	size_t nl = 0, ns = 0;
	int c, rc = 0;

	if (!lo || !shorts || !from_env) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	if (stop_at_arg)
		shorts[ns++] = '+';
	shorts[ns++] = ':';	/* a missing value is ':', not '?' */
	for (size_t i = 0; i < t->n; i++) {
		const struct flag *f = &t->rows[i];

		if (!takes(f, cmd))
			continue;
		lo[nl++] = (struct option){ f->name, f->arg ? required_argument : no_argument, NULL,
					    256 + (int)i };
		if (f->short_name) {
			shorts[ns++] = f->short_name;
			if (f->arg)
				shorts[ns++] = ':';
		}
		if (f->def && f->type <= FLAG_COUNT)
			*(int *)((char *)base + f->off[cmd]) = atoi(f->def);
		else if (f->def && (rc = set_value(f, cmd, base, f->def, 0))) {
			snprintf(err, errlen, "bad default of --%s: %s", f->name, f->def);
			rc = -EINVAL;
			goto out;
		}
	}
	for (size_t i = 0; i < t->n; i++) {
		const struct flag *f = &t->rows[i];
		const char *v;

		if (!takes(f, cmd) || !reads_env(t, f, cmd))
			continue;
		v = getenv(flags__env_name(t, f, env, sizeof(env)));
		if (!v || !v[0])
			continue;
		if ((rc = set_env(t, f, cmd, base, v, env, err, errlen)))
			goto out;
		from_env[i] = 1;
	}
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		const struct flag *f = NULL;

		if (c >= 256) {
			f = &t->rows[c - 256];
		} else if (c != '?' && c != ':') {
			for (size_t i = 0; i < t->n && !f; i++)
				if (t->rows[i].short_name == c && takes(&t->rows[i], cmd))
					f = &t->rows[i];
		}
		if (!f) {
			snprintf(err, errlen, "%s: %s", c == ':' ? "missing value for" : "bad option",
				 argv[optind - 1]);
			rc = -EINVAL;
			goto out;
		}
		if (f->type == FLAG_HELP) {
			rc = 1;
			goto out;
		}
		if (f->max_n && from_env[f - t->rows]) {
			/* the flags replace the environment's list */
			*(int *)((char *)base + f->count_off[cmd]) = 0;
			from_env[f - t->rows] = 0;
		}
		if ((rc = set_value(f, cmd, base, optarg ? optarg : "", 0))) {
			rc = value_error(f, rc, optarg ? optarg : "", NULL, err, errlen);
			goto out;
		}
	}
	if (first_arg)
		*first_arg = optind;
out:
	free(lo);
	free(shorts);
	free(from_env);
	return rc;
}

/* Append words of text to the help, wrapped at HELP_WIDTH with continuation lines at HELP_COL;
 * whole: text is one word, never broken. */
static void wrap_(FILE *out, const char *text, int *col, int whole)
{
	const char *s = text;

	while (*s) {
		size_t w = whole ? strlen(s) : strcspn(s, " ");

		if (*col > HELP_COL && *col + 1 + (int)w > HELP_WIDTH) {
			fprintf(out, "\n%*s", HELP_COL, "");
			*col = HELP_COL;
		} else if (*col > HELP_COL) {
			fputc(' ', out);
			(*col)++;
		}
		fwrite(s, 1, w, out);
		*col += w;
		s += w;
		while (*s == ' ')
			s++;
	}
}

static void wrap(FILE *out, const char *text, int *col)
{
	wrap_(out, text, col, 0);
}

void flags__help(const struct flag_table *t, int cmd, FILE *out)
{
	char buf[512], env[128];

	for (size_t i = 0; i < t->n; i++) {
		const struct flag *f = &t->rows[i];
		const char *def = f->def_doc ? f->def_doc : f->arg ? f->def : NULL;
		int col;

		if (!takes(f, cmd))
			continue;
		col = f->short_name ? fprintf(out, "  -%c, --%s", f->short_name, f->name) :
				      fprintf(out, "      --%s", f->name);
		if (f->arg)
			col += fprintf(out, " %s", f->arg);
		if (col >= HELP_COL - 1) {
			fprintf(out, "\n%*s", HELP_COL, "");
		} else {
			fprintf(out, "%*s", HELP_COL - col, "");
		}
		col = HELP_COL;
		wrap(out, f->help, &col);
		if (def && def[0]) {
			snprintf(buf, sizeof(buf), "(default %s)", def);
			wrap(out, buf, &col);
		}
		if (reads_env(t, f, cmd)) {
			snprintf(buf, sizeof(buf), "[env %s%s]", flags__env_name(t, f, env, sizeof(env)),
				 f->max_n ? ", comma-separated" : "");
			wrap_(out, buf, &col, 1);
		}
		fputc('\n', out);
	}
}
