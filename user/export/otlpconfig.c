/* otlpconfig.c: the OTLP exporter's settings: flags over the OTEL_EXPORTER_OTLP_* variables
 * (protocol, endpoint, headers, compression, timeout, certificates), checked and resolved into
 * struct otlp_config. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "otlp.h"
#include "util.h"

/* ---- settings -------------------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4)))
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static const char *env_getenv(const char *name)
{
	return getenv(name);
}

/* OTEL_EXPORTER_OTLP_PROFILES_<what>, else OTEL_EXPORTER_OTLP_<what> (the signal's own wins);
 * *which names the one used. NULL when neither is set (or set empty). */
static const char *env_of(const char *(*get)(const char *), const char *what, char *which,
			  size_t len)
{
	const char *v;

	snprintf(which, len, "OTEL_EXPORTER_OTLP_PROFILES_%s", what);
	v = get(which);
	if (v && *v)
		return v;
	snprintf(which, len, "OTEL_EXPORTER_OTLP_%s", what);
	v = get(which);
	return v && *v ? v : NULL;
}

/* The URL's path is more than "/" (a query or fragment does not count). */
static int has_path(const char *url)
{
	const char *p = strstr(url, "://");

	p = p ? p + 3 : url;
	p += strcspn(p, "/?#");
	return *p == '/' && p[1] && p[1] != '?' && p[1] != '#';
}

static int http_url(const char *u)
{
	return !strncasecmp(u, "http://", 7) || !strncasecmp(u, "https://", 8);
}

/* base with trailing slashes removed, then the profiles path. */
static int append_path(char *out, size_t len, const char *base)
{
	size_t n = strlen(base);

	while (n > 0 && base[n - 1] == '/')
		n--;
	return snprintf(out, len, "%.*s%s", (int)n, base, OTLP_PROFILES_PATH) >= (int)len ? -1 : 0;
}

/* gRPC: the scheme and authority of base, then the method's path. */
static int grpc_url(char *out, size_t len, const char *base)
{
	const char *p = strstr(base, "://");
	size_t n;

	p = p ? p + 3 : base;
	n = (size_t)(p - base) + strcspn(p, "/?#");
	return snprintf(out, len, "%.*s%s", (int)n, base, OTLP_GRPC_PATH) >= (int)len ? -1 : 0;
}

static int resolve_url(const struct otlp_opts *o, const char *(*get)(const char *),
		       struct otlp_config *c, char *err, size_t errlen)
{
	const char *v, *given = NULL;
	int r;

	if (c->protocol == OTLP_PROTOCOL_GRPC) {
		/* One endpoint for every signal: only its scheme (TLS or not) and host:port count. */
		if (o->url)
			given = o->url;
		else if (!o->no_env && (v = get("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT")) && *v)
			given = v;
		else if (!o->no_env && (v = get("OTEL_EXPORTER_OTLP_ENDPOINT")) && *v)
			given = v;
		if (given && !http_url(given))
			return bad(err, errlen, "OTLP endpoint '%s' is not http:// or https://", given);
		r = grpc_url(c->url, sizeof(c->url), given ? given : OTLP_DEFAULT_GRPC_ENDPOINT);
		return r ? bad(err, errlen, "OTLP URL too long") : 0;
	}
	if (o->url) {
		/* the flag: a base URL, as with OTEL_EXPORTER_OTLP_ENDPOINT, unless it names a path */
		if (!http_url(o->url))
			return bad(err, errlen, "OTLP URL '%s' is not http:// or https://", o->url);
		r = has_path(o->url) ? snprintf(c->url, sizeof(c->url), "%s", o->url) >=
					       (int)sizeof(c->url)
				     : append_path(c->url, sizeof(c->url), o->url);
	} else if (!o->no_env &&
		   (v = get("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT")) && *v) {
		/* the signal's own endpoint is used as it is (OTLP exporter specification) */
		if (!http_url(v))
			return bad(err, errlen, "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT '%s' is not "
				   "http:// or https://", v);
		r = snprintf(c->url, sizeof(c->url), "%s", v) >= (int)sizeof(c->url);
	} else if (!o->no_env && (v = get("OTEL_EXPORTER_OTLP_ENDPOINT")) && *v) {
		/* the shared base: the signal's path is appended to whatever path it has */
		if (!http_url(v))
			return bad(err, errlen, "OTEL_EXPORTER_OTLP_ENDPOINT '%s' is not http:// or "
				   "https://", v);
		r = append_path(c->url, sizeof(c->url), v);
	} else {
		r = append_path(c->url, sizeof(c->url), OTLP_DEFAULT_ENDPOINT);
	}
	return r ? bad(err, errlen, "OTLP URL too long") : 0;
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* s[0..n) trimmed of blanks and percent-decoded into a malloc'd string; NULL with *bad_pct set
 * on a broken %XX, or out of memory. */
static char *decode_part(const char *s, size_t n, int *bad_pct)
{
	char *o, *w;

	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	o = w = malloc(n + 1);
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			*w++ = s[i];
			continue;
		}
		if (i + 2 >= n || hexval((unsigned char)s[i + 1]) < 0 ||
		    hexval((unsigned char)s[i + 2]) < 0) {
			*bad_pct = 1;
			free(o);
			return NULL;
		}
		*w++ = (char)(hexval((unsigned char)s[i + 1]) * 16 + hexval((unsigned char)s[i + 2]));
		i += 2;
	}
	*w = 0;
	return o;
}

/* Adds "name: value", replacing a header of the same name (case-insensitive). 0 or -errno. */
static int put_header(struct otlp_config *c, const char *name, size_t nlen, const char *value)
{
	char *line;
	size_t i;

	if (asprintf(&line, "%.*s: %s", (int)nlen, name, value) < 0)
		return -ENOMEM;
	for (i = 0; i < c->n_headers; i++) {
		if (!strncasecmp(c->headers[i], name, nlen) && c->headers[i][nlen] == ':') {
			free(c->headers[i]);
			c->headers[i] = line;
			return 0;
		}
	}
	if (c->n_headers == OTLP_MAX_HEADERS) {
		free(line);
		return -E2BIG;
	}
	c->headers[c->n_headers++] = line;
	return 0;
}

/* OTEL_EXPORTER_OTLP_*_HEADERS: "key1=value1,key2=value2", values percent-encoded (the W3C
 * baggage form the specification names). A malformed entry is an error: a silently missing
 * Authorization would only show as 401s. */
static int env_headers(const char *v, const char *which, struct otlp_config *c, char *err,
		       size_t errlen)
{
	const char *p = v;

	while (*p) {
		size_t n = strcspn(p, ","), klen;
		const char *eq = memchr(p, '=', n);
		char *key = NULL, *val = NULL;
		int bad_pct = 0, rc;

		if (strspn(p, " \t") >= n) {	/* an empty entry ("a=b,,c=d") */
			p += n + (p[n] == ',');
			continue;
		}
		if (eq)
			key = decode_part(p, (size_t)(eq - p), &bad_pct);
		if (eq && key)
			val = decode_part(eq + 1, n - (size_t)(eq - p) - 1, &bad_pct);
		klen = key ? strlen(key) : 0;
		if (!eq || !key || !val || !klen || strpbrk(key, ": \t\r\n") || strpbrk(val, "\r\n")) {
			free(key);
			free(val);
			if (eq && !bad_pct && (!key || !val))
				return -ENOMEM;
			return bad(err, errlen, "%s: entry '%.*s' is not key=value (values "
				   "percent-encoded)", which, (int)n, p);
		}
		rc = put_header(c, key, klen, val);
		free(key);
		free(val);
		if (rc)
			return rc == -E2BIG ? bad(err, errlen, "more than %d OTLP headers",
						  OTLP_MAX_HEADERS) : rc;
		p += n + (p[n] == ',');
	}
	return 0;
}

const char *otlp_protocol__name(enum otlp_protocol p)
{
	return p == OTLP_PROTOCOL_GRPC ? "grpc" : "http/protobuf";
}

static int resolve_protocol(const struct otlp_opts *o, const char *(*get)(const char *),
			    struct otlp_config *c, char *err, size_t errlen)
{
	char which[64];
	const char *v;

	c->protocol = o->protocol ? o->protocol : OTLP_PROTOCOL_HTTP_PROTOBUF;
	if (o->protocol || o->no_env || !(v = env_of(get, "PROTOCOL", which, sizeof(which))))
		return 0;
	if (!strcasecmp(v, "grpc"))
		c->protocol = OTLP_PROTOCOL_GRPC;
	else if (!strcasecmp(v, "http/protobuf"))
		c->protocol = OTLP_PROTOCOL_HTTP_PROTOBUF;
	else if (!strcasecmp(v, "http/json"))
		return bad(err, errlen, "%s 'http/json' is not supported: use http/protobuf or grpc",
			   which);
	else
		return bad(err, errlen, "%s '%s': want http/protobuf or grpc", which, v);
	return 0;
}

/* A file name setting: the option, else the environment's; "" for none. */
static int file_setting(const char *opt, const struct otlp_opts *o,
			const char *(*get)(const char *), const char *what, char *out, size_t len,
			char *err, size_t errlen)
{
	char which[64];
	const char *v = opt;

	if (!v && !o->no_env)
		v = env_of(get, what, which, sizeof(which));
	if (v && snprintf(out, len, "%s", v) >= (int)len)
		return bad(err, errlen, "%s file name too long", what);
	return 0;
}

void otlp_config__clear(struct otlp_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_headers; i++)
		free(c->headers[i]);
	memset(c, 0, sizeof(*c));
}

int otlp__config(const struct otlp_opts *o, const char *(*getenv_fn)(const char *),
		 struct otlp_config *c, char *err, size_t errlen)
{
	const char *(*get)(const char *) = getenv_fn ? getenv_fn : env_getenv;
	char which[64];
	const char *v;
	size_t i;
	int rc;

	if (err && errlen)
		err[0] = 0;
	if (!o || !c)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	if ((rc = resolve_protocol(o, get, c, err, errlen)) ||
	    (rc = resolve_url(o, get, c, err, errlen)))
		goto clear;

	if (!o->no_env && (v = env_of(get, "HEADERS", which, sizeof(which))) &&
	    (rc = env_headers(v, which, c, err, errlen)))
		goto clear;
	for (i = 0; i < o->n_headers; i++) {	/* the flags win over the environment */
		const char *h = o->headers[i], *colon = h ? strchr(h, ':') : NULL;
		const char *val = colon ? colon + 1 : NULL;

		if (!colon || colon == h || strpbrk(h, "\r\n")) {
			rc = bad(err, errlen, "header '%s' is not 'Name: value'", h ? h : "(null)");
			goto clear;
		}
		while (*val == ' ' || *val == '\t')
			val++;
		if ((rc = put_header(c, h, (size_t)(colon - h), val))) {
			if (rc == -E2BIG)
				rc = bad(err, errlen, "more than %d OTLP headers", OTLP_MAX_HEADERS);
			goto clear;
		}
	}

	c->timeout_ms = o->timeout_ms;
	if (!c->timeout_ms && !o->no_env && (v = env_of(get, "TIMEOUT", which, sizeof(which)))) {
		char *end;
		unsigned long ms;

		errno = 0;
		ms = strtoul(v, &end, 10);
		if (errno || end == v || *end || v[0] == '-' || ms == 0 || ms > 3600000) {
			rc = bad(err, errlen, "%s '%s' is not a timeout in milliseconds (1..3600000)",
				 which, v);
			goto clear;
		}
		c->timeout_ms = (uint32_t)ms;
	}
	if (!c->timeout_ms)
		c->timeout_ms = OTLP_DEFAULT_TIMEOUT_MS;

	c->gzip = o->compression != OTLP_COMPRESSION_NONE;
	if (o->compression == OTLP_COMPRESSION_UNSET && !o->no_env &&
	    (v = env_of(get, "COMPRESSION", which, sizeof(which)))) {
		if (!strcasecmp(v, "none")) {
			c->gzip = 0;
		} else if (strcasecmp(v, "gzip")) {
			rc = bad(err, errlen, "%s '%s': want gzip or none", which, v);
			goto clear;
		}
	}

	if ((rc = file_setting(o->ca_file, o, get, "CERTIFICATE", c->ca_file, sizeof(c->ca_file),
			       err, errlen)) ||
	    (rc = file_setting(o->client_cert, o, get, "CLIENT_CERTIFICATE", c->client_cert,
			       sizeof(c->client_cert), err, errlen)) ||
	    (rc = file_setting(o->client_key, o, get, "CLIENT_KEY", c->client_key,
			       sizeof(c->client_key), err, errlen)))
		goto clear;
	if (c->client_key[0] && !c->client_cert[0]) {
		rc = bad(err, errlen, "OTLP client key '%s' without a client certificate "
			 "(OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE)", c->client_key);
		goto clear;
	}
	return 0;
clear:
	otlp_config__clear(c);
	return rc;
}
