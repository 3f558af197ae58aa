/* log.h: spanprof's log lines on stderr: time (RFC 3339, UTC), level and message, as text, logfmt
 * or JSON (--log-format), filtered by level (--log-level). */
#ifndef SPANPROF_LOG_H
#define SPANPROF_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_LEVEL_DEBUG, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR };
enum log_format {
	LOG_FORMAT_TEXT,	/* 2026-01-02T03:04:05.678Z info message */
	LOG_FORMAT_LOGFMT,	/* time=... level=info msg="message" */
	LOG_FORMAT_JSON,	/* {"time":"...","level":"info","msg":"message"} */
};

/* "debug", "info", "warn" (or "warning"), "error" / "text", "logfmt", "json": 0, or -EINVAL. */
int log__parse_level(const char *s, enum log_level *out);
int log__parse_format(const char *s, enum log_format *out);
const char *log__level_name(enum log_level l);

/* Where lines go from now on (default: text, info and above, stderr). Not thread-safe: set it
 * before threads start. */
void log__setup(enum log_format format, enum log_level min_level);
/* The fd lines are written to (default 2), for tests. */
void log__set_fd(int fd);
int log__enabled(enum log_level l);

/*
 * One line for msg at wall_ns (CLOCK_REALTIME, ns) into buf, NUL-terminated, ending in '\n' (a
 * message's own trailing newlines are dropped; inner ones escaped in logfmt and JSON). Returns its
 * length; a line longer than len - 1 is cut short, keeping a valid line (JSON stays JSON). len
 * must be at least 128.
 */
size_t log__format(char *buf, size_t len, enum log_format format, uint64_t wall_ns,
		   enum log_level level, const char *msg);

/* Log a printf-style message, one write(2) per line, if level passes the filter. */
void log__msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log__vmsg(enum log_level level, const char *fmt, va_list ap);

#define log_debug(...) log__msg(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...)  log__msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...)  log__msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log__msg(LOG_LEVEL_ERROR, __VA_ARGS__)

#endif /* SPANPROF_LOG_H */
