/* metrics.c: the agent's Prometheus endpoint on libmicrohttpd and the text-format builder. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

#include "metrics.h"
#include "util.h"
#include "vec.h"

#define METRICS_MAX_CONNS_DEFAULT	32
#define METRICS_PER_IP_CONNS		8	/* one client cannot take every slot */
#define METRICS_TIMEOUT_S_DEFAULT	10
#define METRICS_CONN_MEMORY		(16u << 10)	/* request headers; scrapes send a few hundred bytes */
#define METRICS_BACKLOG			64

static const char CT_METRICS[] = "text/plain; version=0.0.4; charset=utf-8";
static const char CT_TEXT[] = "text/plain; charset=utf-8";

struct metrics_server {
	struct MHD_Daemon *mhd;
	int port;
	uint64_t stale_ns;
	_Atomic uint64_t heartbeat_ns;
	pthread_mutex_t lock;	/* guards text/len: published by the loop, copied by the handler */
	char *text;
	size_t len;
};

/* ---- HTTP ---------------------------------------------------------------------------------- */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *ctype,
			     const void *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)body, mode);
	if (!r)
		return MHD_NO;	/* MHD closes the connection */
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_const(struct MHD_Connection *c, unsigned status, const char *msg)
{
	return reply(c, status, CT_TEXT, msg, strlen(msg), MHD_RESPMEM_PERSISTENT);
}

static int has_body(struct MHD_Connection *c)
{
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_LENGTH);

	if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING))
		return 1;
	return cl && strspn(cl, "0 \t") != strlen(cl);
}

static enum MHD_Result serve_metrics(struct metrics_server *s, struct MHD_Connection *c)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	/* Copy under the lock (MUST_COPY): the loop may publish the next text while this one is
	 * still being sent to a slow client. */
	pthread_mutex_lock(&s->lock);
	r = MHD_create_response_from_buffer(s->len, s->text ? s->text : (char *)"",
					    MHD_RESPMEM_MUST_COPY);
	pthread_mutex_unlock(&s->lock);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CT_METRICS);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result serve_healthz(struct metrics_server *s, struct MHD_Connection *c)
{
	uint64_t hb = atomic_load_explicit(&s->heartbeat_ns, memory_order_relaxed);
	uint64_t now = now_ns(), age = now > hb ? now - hb : 0;
	char msg[128];
	int n;

	if (age <= s->stale_ns)
		return reply_const(c, MHD_HTTP_OK, "ok\n");
	n = snprintf(msg, sizeof(msg), "stale: last heartbeat %.1f s ago (limit %.1f s)\n",
		     age / 1e9, s->stale_ns / 1e9);
	return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, CT_TEXT, msg, n, MHD_RESPMEM_MUST_COPY);
}

/* Answers on the first call, when only the headers have arrived: no request body is ever read
 * (MHD closes the connection instead of reading one it was not asked for). */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **req_cls)
{
	struct metrics_server *s = cls;
	int is_metrics = !strcmp(url, "/metrics"), is_healthz = !strcmp(url, "/healthz");

	if (!is_metrics && !is_healthz)
		return reply_const(c, MHD_HTTP_NOT_FOUND, "not found\n");
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_const(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	if (*upload_data_size || has_body(c))
		return reply_const(c, MHD_HTTP_CONTENT_TOO_LARGE, "request body not accepted\n");
	return is_metrics ? serve_metrics(s, c) : serve_healthz(s, c);
}

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Split HOST:PORT ("[v6]:port", ":port" for every address) and resolve the numeric host. */
static int parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *sslen,
		      char *err, size_t errlen)
{
	char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2], *end;
	struct addrinfo hints = { 0 }, *ai;
	const char *colon, *h = addr;
	size_t hlen;
	unsigned long port;
	int rc;

	if (!addr || !*addr) {
		seterr(err, errlen, "metrics address is empty; expected HOST:PORT, e.g. 0.0.0.0:9090");
		return -EINVAL;
	}
	if (*addr == '[') {
		colon = strchr(addr, ']');
		if (!colon || colon[1] != ':') {
			seterr(err, errlen, "metrics address \"%s\": expected [IPV6]:PORT", addr);
			return -EINVAL;
		}
		h = addr + 1;
		hlen = colon - h;
		colon++;
	} else {
		colon = strrchr(addr, ':');
		if (!colon || memchr(addr, ':', colon - addr)) {
			seterr(err, errlen, "metrics address \"%s\": expected HOST:PORT (IPv6 as [ADDR]:PORT)",
			       addr);
			return -EINVAL;
		}
		hlen = colon - addr;
	}
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || port > 65535 || colon[1] == '-' || colon[1] == '+' ||
	    colon[1] == ' ') {
		seterr(err, errlen, "metrics address \"%s\": port must be a number from 0 to 65535", addr);
		return -EINVAL;
	}
	if (hlen >= sizeof(host)) {
		seterr(err, errlen, "metrics address \"%s\": host too long", addr);
		return -EINVAL;
	}

	memset(ss, 0, sizeof(*ss));
	if (hlen == 0) {
		/* Every address: an IPv6 socket that also takes IPv4 (see open_listener), or plain
		 * IPv4 when the kernel has no IPv6. */
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_any;
		s6->sin6_port = htons(port);
		*sslen = sizeof(*s6);
		return 0;
	}
	memcpy(host, h, hlen);
	host[hlen] = 0;
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	/* Numeric only: no name lookup (and no DNS stall) at start-up. */
	hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(host, NULL, &hints, &ai);
	if (rc) {
		seterr(err, errlen, "metrics address \"%s\": host must be a numeric IPv4 or [IPv6] address",
		       addr);
		return -EINVAL;
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*sslen = ai->ai_addrlen;
	freeaddrinfo(ai);
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	return 0;
}

static int open_listener(const char *addr, struct sockaddr_storage *ss, socklen_t sslen,
			 int *port, char *err, size_t errlen)
{
	int fd, one = 1, zero = 0, any6 = 0;
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);

	if (ss->ss_family == AF_INET6)
		any6 = !memcmp(&((struct sockaddr_in6 *)ss)->sin6_addr, &in6addr_any,
			       sizeof(in6addr_any));
	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 && any6 && errno == EAFNOSUPPORT) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		in_port_t p = ((struct sockaddr_in6 *)ss)->sin6_port;

		memset(ss, 0, sizeof(*ss));
		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
		s4->sin_port = p;
		sslen = sizeof(*s4);
		any6 = 0;
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	}
	if (fd < 0) {
		seterr(err, errlen, "metrics address \"%s\": socket: %s", addr, strerror(errno));
		return -errno;
	}
	/* A restarted agent must not wait for the old connections' TIME_WAIT. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (any6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)ss, sslen) || listen(fd, METRICS_BACKLOG)) {
		int e = errno;

		close(fd);
		if (e == EADDRINUSE)
			seterr(err, errlen, "metrics address \"%s\": port already in use", addr);
		else
			seterr(err, errlen, "metrics address \"%s\": %s", addr, strerror(e));
		return -e;
	}
	if (getsockname(fd, (struct sockaddr *)&bound, &blen)) {
		int e = errno;

		close(fd);
		seterr(err, errlen, "metrics address \"%s\": getsockname: %s", addr, strerror(e));
		return -e;
	}
	*port = ntohs(bound.ss_family == AF_INET ? ((struct sockaddr_in *)&bound)->sin_port
						 : ((struct sockaddr_in6 *)&bound)->sin6_port);
	return fd;
}

struct metrics_server *metrics__start(const char *addr, char *err, size_t errlen)
{
	struct metrics_opts o = { .addr = addr };

	return metrics__start_opts(&o, err, errlen);
}

struct metrics_server *metrics__start_opts(const struct metrics_opts *o, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	struct metrics_server *s;
	struct stat lst, dst;
	socklen_t sslen;
	int fd, mhd_fd, e;

	if (err && errlen)
		err[0] = 0;
	e = parse_addr(o->addr, &ss, &sslen, err, errlen);
	if (e) {
		errno = -e;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		seterr(err, errlen, "metrics: out of memory");
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->stale_ns = o->stale_ns ? o->stale_ns : METRICS_STALE_NS_DEFAULT;
	/* Healthy for one staleness period after start, before the loop's first heartbeat. */
	atomic_store(&s->heartbeat_ns, now_ns());

	/* Our own listener, so that a bad address or a port in use is reported as such (MHD's start
	 * failure says neither), and port 0 is read back. */
	fd = open_listener(o->addr, &ss, sslen, &s->port, err, errlen);
	if (fd < 0) {
		e = -fd;
		goto err_free;
	}
	/* MHD owns the socket it is given, but whether it closes it when its start fails is not
	 * documented: hand it a duplicate and keep the original until we know. */
	mhd_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (mhd_fd < 0) {
		e = errno;
		seterr(err, errlen, "metrics: dup: %s", strerror(e));
		goto err_close;
	}
	s->mhd = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, handle, s,
				  MHD_OPTION_LISTEN_SOCKET, mhd_fd,
				  MHD_OPTION_CONNECTION_LIMIT,
				  (unsigned)(o->max_conns ? o->max_conns : METRICS_MAX_CONNS_DEFAULT),
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)METRICS_PER_IP_CONNS,
				  MHD_OPTION_CONNECTION_TIMEOUT,
				  (unsigned)(o->timeout_s ? o->timeout_s : METRICS_TIMEOUT_S_DEFAULT),
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)METRICS_CONN_MEMORY,
				  MHD_OPTION_END);
	if (!s->mhd) {
		e = errno ? errno : EIO;
		seterr(err, errlen, "metrics address \"%s\": the HTTP server did not start", o->addr);
		/* Close the duplicate only if it is still our socket (same inode), never an fd
		 * number MHD closed and something else reused. */
		if (!fstat(fd, &lst) && !fstat(mhd_fd, &dst) && S_ISSOCK(dst.st_mode) &&
		    dst.st_ino == lst.st_ino && dst.st_dev == lst.st_dev)
			close(mhd_fd);
		goto err_close;
	}
	close(fd);
	return s;

err_close:
	close(fd);
err_free:
	pthread_mutex_destroy(&s->lock);
	free(s);
	errno = e;
	return NULL;
}

int metrics__port(const struct metrics_server *s)
{
	return s ? s->port : -EINVAL;
}

int metrics__publish(struct metrics_server *s, const char *text, size_t len)
{
	char *copy, *old;

	/* The copy is made outside the lock: the handler only ever waits for a pointer swap. */
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	copy[len] = 0;
	pthread_mutex_lock(&s->lock);
	old = s->text;
	s->text = copy;
	s->len = len;
	pthread_mutex_unlock(&s->lock);
	free(old);
	return 0;
}

void metrics__heartbeat(struct metrics_server *s, uint64_t now_mono_ns)
{
	atomic_store_explicit(&s->heartbeat_ns, now_mono_ns, memory_order_relaxed);
}

void metrics__stop(struct metrics_server *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->mhd);	/* joins the server thread and closes the listener */
	pthread_mutex_destroy(&s->lock);
	free(s->text);
	free(s);
}

/* ---- exposition builder ---------------------------------------------------------------------- */

/* A growing string whose allocation failure is sticky, so a sequence of appends is checked once. */
struct sbuf {
	char *p;
	size_t len, cap;
	int oom;
};

enum mtype { MT_COUNTER, MT_GAUGE, MT_HISTOGRAM };

struct family {
	char *name;
	char *help;		/* escaped already */
	enum mtype type;
	struct sbuf samples;
};

struct metrics_buf {
	struct family *fam;	/* in first-use order; linear lookup: an agent has tens of families */
	size_t nfam, capfam;
	struct sbuf out;
	int oom;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (!n && b->p) {
		b->p[b->len] = 0;
		return;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *np;

		while (cap < b->len + n + 1)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_put(b, s, strlen(s));
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t need, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		need = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		need = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		need = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n < need)
		return 0;
	for (i = 1; i < need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* overlong, surrogates, beyond U+10FFFF */
	if ((need == 3 && cp < 0x800) || (need == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return need;
}

/* Escape for a label value (quote = 1) or a HELP text (quote = 0), as the text format says:
 * backslash and newline always, double quote inside label values. Invalid UTF-8 becomes U+FFFD,
 * since Prometheus refuses the whole scrape over one bad byte. */
static void sb_escaped(struct sbuf *b, const char *s, int quote)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, run = 0, l;

	while (i < n) {
		const char *rep = NULL;

		if (p[i] == '\\')
			rep = "\\\\";
		else if (p[i] == '\n')
			rep = "\\n";
		else if (p[i] == '"' && quote)
			rep = "\\\"";
		l = rep ? 1 : utf8_len(p + i, n - i);
		if (!rep && l) {
			i += l;
			run += l;
			continue;
		}
		sb_put(b, (const char *)p + i - run, run);
		sb_str(b, rep ? rep : "\xef\xbf\xbd");
		run = 0;
		i++;
	}
	sb_put(b, (const char *)p + n - run, run);
}

static int valid_name(const char *s, int colon)
{
	size_t i;

	if (!s || !*s)
		return 0;
	for (i = 0; s[i]; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
		      (colon && c == ':') || (i && c >= '0' && c <= '9')))
			return 0;
	}
	return 1;
}

static int valid_labels(const char *const *labels)
{
	size_t i, j;

	if (!labels)
		return 1;
	for (i = 0; labels[i]; i += 2) {
		if (!labels[i + 1] || !valid_name(labels[i], 0) || !strncmp(labels[i], "__", 2))
			return 0;
		for (j = 0; j < i; j += 2)
			if (!strcmp(labels[i], labels[j]))
				return 0;
	}
	return 1;
}

/* The shortest of %.15g..%.17g that reads back as the same double; integers in full. */
static void format_value(char *out, size_t n, double v)
{
	int prec;

	if (isnan(v)) {
		snprintf(out, n, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(out, n, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	/* Integral and exact: in full (no libm: the cast truncates toward zero). */
	if (v > -1e17 && v < 1e17 && (double)(int64_t)v == v) {
		snprintf(out, n, "%.0f", v);
		return;
	}
	for (prec = 15; prec < 17; prec++) {
		snprintf(out, n, "%.*g", prec, v);
		if (strtod(out, NULL) == v)
			return;
	}
	snprintf(out, n, "%.17g", v);
}

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n > m && !strcmp(s + n - m, suf);
}

static struct family *family_find(struct metrics_buf *b, const char *name)
{
	size_t i;

	for (i = 0; i < b->nfam; i++)
		if (!strcmp(b->fam[i].name, name))
			return &b->fam[i];
	return NULL;
}

static struct family *family_get(struct metrics_buf *b, const char *name, enum mtype type,
				 int *rc)
{
	struct family *f = family_find(b, name);

	if (f) {
		if (f->type != type) {
			*rc = -EINVAL;
			return NULL;
		}
		return f;
	}
	if (VEC_RESERVE(b->fam, b->capfam, b->nfam + 1))
		goto err_oom;
	f = &b->fam[b->nfam];
	memset(f, 0, sizeof(*f));
	f->name = strdup(name);
	if (!f->name)
		goto err_oom;
	f->type = type;
	b->nfam++;
	return f;

err_oom:
	*rc = -ENOMEM;
	return NULL;
}

/* The family of name for a new series of type, its help set on first use; NULL with *rc. */
static struct family *family_for(struct metrics_buf *b, enum mtype type, const char *name,
				 const char *help, int *rc)
{
	struct family *f;

	if ((!help || !*help) && !family_find(b, name)) {
		*rc = -EINVAL;
		return NULL;
	}
	f = family_get(b, name, type, rc);
	if (!f)
		return NULL;
	if (help && *help && !f->help) {
		struct sbuf h = { 0 };

		sb_escaped(&h, help, 0);
		sb_put(&h, "", 0);	/* an empty help is still a (NUL-terminated) string */
		if (h.oom) {
			free(h.p);
			*rc = -ENOMEM;
			return NULL;
		}
		f->help = h.p;
	}
	return f;
}

/* One sample line: name[suffix]{labels[, le="le"]} value. */
static void sample_line(struct sbuf *sb, const char *name, const char *suffix,
			const char *const *labels, const char *le, double value)
{
	char num[40];
	size_t i;

	format_value(num, sizeof(num), value);
	sb_str(sb, name);
	sb_str(sb, suffix);
	for (i = 0; labels && labels[i]; i += 2) {
		sb_str(sb, i ? "," : "{");
		sb_str(sb, labels[i]);
		sb_str(sb, "=\"");
		sb_escaped(sb, labels[i + 1], 1);
		sb_str(sb, "\"");
	}
	if (le) {
		sb_str(sb, labels && labels[0] ? ",le=\"" : "{le=\"");
		sb_str(sb, le);
		sb_str(sb, "\"}");
	} else if (labels && labels[0]) {
		sb_str(sb, "}");
	}
	sb_str(sb, " ");
	sb_str(sb, num);
	sb_str(sb, "\n");
}

static int add_sample(struct metrics_buf *b, enum mtype type, const char *name, const char *help,
		      const char *const *labels, double value)
{
	struct family *f;
	int rc = 0;

	if (!valid_name(name, 1) || !valid_labels(labels) || (type == MT_COUNTER && !(value >= 0)))
		return -EINVAL;
	/* What promtool lints as errors is refused here: a counter not named *_total, anything else
	 * named so, a family without help. */
	if (has_suffix(name, "_total") != (type == MT_COUNTER))
		return -EINVAL;
	f = family_for(b, type, name, help, &rc);
	if (!f)
		goto err;
	sample_line(&f->samples, name, "", labels, NULL, value);
	if (f->samples.oom) {
		rc = -ENOMEM;
		goto err;
	}
	return 0;

err:
	if (rc == -ENOMEM)
		b->oom = 1;	/* a half-written line may be in the family: the text is void */
	return rc;
}

int metrics_buf__histogram(struct metrics_buf *b, const char *name, const char *help,
			   const char *const *labels, const struct metrics_hist *h)
{
	static const double bounds[METRICS_HIST_BUCKETS] = METRICS_HIST_BOUNDS;
	struct family *f;
	uint64_t cum = 0;
	char le[40];
	int rc = 0;

	if (!valid_name(name, 1) || !valid_labels(labels) || has_suffix(name, "_total") ||
	    has_suffix(name, "_bucket") || has_suffix(name, "_sum") || has_suffix(name, "_count"))
		return -EINVAL;
	for (size_t i = 0; labels && labels[i]; i += 2)
		if (!strcmp(labels[i], "le"))
			return -EINVAL;
	f = family_for(b, MT_HISTOGRAM, name, help, &rc);
	if (!f)
		goto err;
	for (int i = 0; i < METRICS_HIST_BUCKETS; i++) {
		cum += h->counts[i];
		format_value(le, sizeof(le), bounds[i]);
		sample_line(&f->samples, name, "_bucket", labels, le, cum);
	}
	sample_line(&f->samples, name, "_bucket", labels, "+Inf", h->count);
	sample_line(&f->samples, name, "_sum", labels, NULL, h->sum);
	sample_line(&f->samples, name, "_count", labels, NULL, h->count);
	if (f->samples.oom) {
		rc = -ENOMEM;
		goto err;
	}
	return 0;

err:
	if (rc == -ENOMEM)
		b->oom = 1;
	return rc;
}

struct metrics_buf *metrics_buf__new(void)
{
	struct metrics_buf *b = calloc(1, sizeof(*b));

	if (!b)
		errno = ENOMEM;
	return b;
}

void metrics_buf__reset(struct metrics_buf *b)
{
	size_t i;

	for (i = 0; i < b->nfam; i++) {
		free(b->fam[i].name);
		free(b->fam[i].help);
		free(b->fam[i].samples.p);
	}
	b->nfam = 0;
	b->out.len = 0;
	b->out.oom = 0;
	b->oom = 0;
}

void metrics_buf__free(struct metrics_buf *b)
{
	if (!b)
		return;
	metrics_buf__reset(b);
	free(b->fam);
	free(b->out.p);
	free(b);
}

int metrics_buf__counter(struct metrics_buf *b, const char *name, const char *help,
			 const char *const *labels, double value)
{
	return add_sample(b, MT_COUNTER, name, help, labels, value);
}

int metrics_buf__gauge(struct metrics_buf *b, const char *name, const char *help,
		       const char *const *labels, double value)
{
	return add_sample(b, MT_GAUGE, name, help, labels, value);
}

/* Fields 14 (utime), 15 (stime), 22 (starttime), 23 (vsize), 24 (rss) of /proc/self/stat. */
static int self_stat(uint64_t *utime, uint64_t *stime, uint64_t *start, uint64_t *vsize,
		     uint64_t *rss)
{
	char buf[1024], *p, *save = NULL;
	long n = read_small_file(AT_FDCWD, "/proc/self/stat", buf, sizeof(buf));
	uint64_t f[25] = { 0 };
	int i = 3;

	p = n > 0 ? strrchr(buf, ')') : NULL;	/* the name may hold spaces and parentheses */
	if (!p)
		return -EIO;
	for (char *t = strtok_r(p + 1, " ", &save); t && i < 25; t = strtok_r(NULL, " ", &save))
		f[i++] = strtoull(t, NULL, 10);	/* field 3, the state, reads as 0 */
	if (i < 25)
		return -EIO;
	*utime = f[14], *stime = f[15], *start = f[22], *vsize = f[23], *rss = f[24];
	return 0;
}

static long boot_time_s(void)
{
	char buf[8192], *s;
	long n = read_small_file(AT_FDCWD, "/proc/stat", buf, sizeof(buf));

	s = n > 0 ? strstr(buf, "\nbtime ") : NULL;
	return s ? strtol(s + 7, NULL, 10) : -1;
}

static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the directory's own fd */
}

int metrics_buf__process(struct metrics_buf *b)
{
	uint64_t ut, st, start, vsize, rss;
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE), btime = boot_time_s();
	long fds = open_fds();
	struct rlimit rl;
	int rc = 0, r;

#define ADD(call) do { if ((r = (call)) && !rc) rc = r; } while (0)
	if (!self_stat(&ut, &st, &start, &vsize, &rss) && tck > 0) {
		ADD(metrics_buf__counter(b, "process_cpu_seconds_total", "Total user and system CPU "
					 "time spent in seconds.", NULL, (double)(ut + st) / tck));
		ADD(metrics_buf__gauge(b, "process_resident_memory_bytes", "Resident memory size in "
				       "bytes.", NULL, (double)rss * page));
		ADD(metrics_buf__gauge(b, "process_virtual_memory_bytes", "Virtual memory size in "
				       "bytes.", NULL, (double)vsize));
		if (btime > 0)
			ADD(metrics_buf__gauge(b, "process_start_time_seconds", "Start time of the "
					       "process since unix epoch in seconds.", NULL,
					       btime + (double)start / tck));
	}
	if (fds >= 0)
		ADD(metrics_buf__gauge(b, "process_open_fds", "Number of open file descriptors.", NULL,
				       fds));
	if (!getrlimit(RLIMIT_NOFILE, &rl))
		ADD(metrics_buf__gauge(b, "process_max_fds", "Maximum number of open file "
				       "descriptors.", NULL, rl.rlim_cur == RLIM_INFINITY ? -1 :
				       (double)rl.rlim_cur));
#undef ADD
	return rc;
}

const char *metrics_buf__text(struct metrics_buf *b, size_t *len)
{
	struct sbuf *out = &b->out;
	size_t i;

	if (b->oom) {
		errno = ENOMEM;
		return NULL;
	}
	out->len = 0;
	out->oom = 0;
	sb_put(out, "", 0);
	for (i = 0; i < b->nfam; i++) {
		const struct family *f = &b->fam[i];

		if (f->help) {
			sb_str(out, "# HELP ");
			sb_str(out, f->name);
			sb_str(out, " ");
			sb_str(out, f->help);
			sb_str(out, "\n");
		}
		sb_str(out, "# TYPE ");
		sb_str(out, f->name);
		sb_str(out, f->type == MT_COUNTER ? " counter\n" : f->type == MT_GAUGE ? " gauge\n" :
									" histogram\n");
		sb_put(out, f->samples.p, f->samples.len);
	}
	if (out->oom) {
		errno = ENOMEM;
		return NULL;
	}
	if (len)
		*len = out->len;
	return out->p;
}
