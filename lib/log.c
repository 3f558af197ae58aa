/* log.c: log lines with time, level and message, as text, logfmt or JSON. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "utf8.h"
#include "util.h"

static enum log_format cur_format = LOG_FORMAT_TEXT;
static enum log_level cur_min = LOG_LEVEL_INFO;
static int cur_fd = 2;

static const char *const level_names[] = { "debug", "info", "warn", "error" };

const char *log__level_name(enum log_level l)
{
	return (unsigned)l < sizeof(level_names) / sizeof(level_names[0]) ? level_names[l] : "info";
}

int log__parse_level(const char *s, enum log_level *out)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (!strcmp(s, level_names[i])) {
			*out = i;
			return 0;
		}
	if (!strcmp(s, "warning")) {
		*out = LOG_LEVEL_WARN;
		return 0;
	}
	return -EINVAL;
}

int log__parse_format(const char *s, enum log_format *out)
{
	if (!strcmp(s, "text"))
		*out = LOG_FORMAT_TEXT;
	else if (!strcmp(s, "logfmt"))
		*out = LOG_FORMAT_LOGFMT;
	else if (!strcmp(s, "json"))
		*out = LOG_FORMAT_JSON;
	else
		return -EINVAL;
	return 0;
}

void log__setup(enum log_format format, enum log_level min_level)
{
	cur_format = format;
	cur_min = min_level;
}

void log__set_fd(int fd)
{
	cur_fd = fd;
}

int log__enabled(enum log_level l)
{
	return l >= cur_min;
}

/* A bounded appender: room is kept at the end for the line's closing bytes. */
struct out {
	char *p;
	size_t n, cap;	/* cap: what the body may use */
	int full;
};

static int put(struct out *o, const char *s, size_t len)
{
	if (o->full || o->n + len > o->cap) {
		o->full = 1;
		return -1;
	}
	memcpy(o->p + o->n, s, len);
	o->n += len;
	return 0;
}

static int puts_(struct out *o, const char *s)
{
	return put(o, s, strlen(s));
}

/* The message, escaped for the format: JSON string body (RFC 8259), a logfmt quoted value, or
 * text with control characters escaped. Invalid UTF-8 becomes U+FFFD in JSON and logfmt. */
static void put_msg(struct out *o, enum log_format f, const char *msg, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0;

	while (i < len && !o->full) {
		unsigned char c = msg[i];
		size_t cl = utf8__char_len(msg + i, len - i, 0);
		char esc[8];

		if (c == '\n' || c == '\r' || c == '\t') {
			esc[0] = '\\', esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
			put(o, esc, 2);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			if (f == LOG_FORMAT_JSON || c < 0x20) {
				memcpy(esc, "\\u00", 4);
				esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
				put(o, esc, 6);
			} else {
				put(o, "\\u007f", 6);
			}
			i++;
		} else if (f != LOG_FORMAT_TEXT && (c == '"' || c == '\\')) {
			esc[0] = '\\', esc[1] = c;
			put(o, esc, 2);
			i++;
		} else if (!cl) {
			put(o, f == LOG_FORMAT_TEXT ? "?" : "\xef\xbf\xbd", f == LOG_FORMAT_TEXT ? 1 : 3);
			i++;
		} else {
			put(o, msg + i, cl);
			i += cl;
		}
	}
}

/* logfmt quotes a value with a space, '=', '"', a backslash, a control character, or none. */
static int logfmt_needs_quotes(const char *s, size_t len)
{
	if (!len)
		return 1;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = s[i];

		if (c <= ' ' || c == '=' || c == '"' || c == '\\' || c == 0x7f)
			return 1;
	}
	return 0;
}

size_t log__format(char *buf, size_t len, enum log_format f, uint64_t wall_ns,
		   enum log_level level, const char *msg)
{
	struct out o = { buf, 0, len - 8, 0 };	/* room for the closing `"}` and newline */
	time_t secs = wall_ns / 1000000000ull;
	struct tm tm;
	char ts[96];
	size_t mlen = strlen(msg);
	const char *lv = log__level_name(level);

	while (mlen && (msg[mlen - 1] == '\n' || msg[mlen - 1] == '\r'))
		mlen--;
	gmtime_r(&secs, &tm);
	snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned)(wall_ns % 1000000000ull / 1000000));
	switch (f) {
	case LOG_FORMAT_JSON:
		puts_(&o, "{\"time\":\"");
		puts_(&o, ts);
		puts_(&o, "\",\"level\":\"");
		puts_(&o, lv);
		puts_(&o, "\",\"msg\":\"");
		put_msg(&o, f, msg, mlen);
		o.full = 0, o.cap = len - 1;
		puts_(&o, "\"}");
		break;
	case LOG_FORMAT_LOGFMT: {
		int q = logfmt_needs_quotes(msg, mlen);

		puts_(&o, "time=");
		puts_(&o, ts);
		puts_(&o, " level=");
		puts_(&o, lv);
		puts_(&o, q ? " msg=\"" : " msg=");
		put_msg(&o, f, msg, mlen);
		o.full = 0, o.cap = len - 1;
		if (q)
			puts_(&o, "\"");
		break;
	}
	default:
		puts_(&o, ts);
		puts_(&o, " ");
		puts_(&o, lv);
		puts_(&o, " ");
		put_msg(&o, f, msg, mlen);
		o.full = 0, o.cap = len - 1;
		break;
	}
	put(&o, "\n", 1);
	buf[o.n] = 0;
	return o.n;
}

void log__vmsg(enum log_level level, const char *fmt, va_list ap)
{
	char msg[4096], line[8192];
	size_t n;
	int saved = errno;

	if (!log__enabled(level))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = log__format(line, sizeof(line), cur_format, realtime_ns(), level, msg);
	/* one write per line: lines of several threads never interleave */
	if (write(cur_fd, line, n) < 0) {
		/* nowhere else to say it */
	}
	errno = saved;
}

void log__msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log__vmsg(level, fmt, ap);
	va_end(ap);
}
