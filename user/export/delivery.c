/* delivery.c: a byte-bounded FIFO of request bodies and one worker thread that POSTs them with
 * libcurl (HTTP/1.1, or HTTP/2 for gRPC), retrying connection errors, timeouts, 5xx and 429 (or
 * what the exporter's judge says) with exponential backoff. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include <curl/curl.h>

#include "delivery.h"
#include "log.h"
#include "util.h"

#ifndef SPANPROF_VERSION
#define SPANPROF_VERSION "dev"
#endif

#define DEF_TIMEOUT_MS		10000u
#define DEF_QUEUE_BYTES		(64u << 20)
#define DEF_BACKOFF_MIN_MS	500u
#define DEF_BACKOFF_MAX_MS	30000u
#define DEF_DEADLINE_MS		(5u * 60 * 1000)
#define RESP_KEEP		400	/* bytes of an error answer kept for last_error */
#define NS_PER_MS		1000000ull
#define LOG_EVERY_NS		(60 * 1000000000ull)	/* the same refusal on stderr at most once */

struct item {
	struct item *next;
	uint8_t *body;
	size_t len;
	uint64_t enqueued_ns;
	uint64_t deadline_ns;
	uint64_t not_before_ns;	/* backoff: the next attempt starts no earlier */
	unsigned attempts;
};

struct delivery {
	pthread_mutex_t mu;
	pthread_cond_t wake;	/* to the worker: new work, or stop */
	pthread_cond_t idle;	/* to flush: an item left the queue */
	pthread_t thread;
	struct item *head, *tail;
	struct item *inflight;	/* the head while an attempt on it runs */
	size_t queue_bytes;
	int stop;
	atomic_int abort;	/* end the attempt in flight now (flush timed out, or free) */
	struct export_stats st;
	char last_error[RESP_KEEP + 64];
	char logged[RESP_KEEP + 64];	/* the last refusal written to stderr, and when */
	uint64_t logged_ns;

	/* set up once; used by the worker only, except multi for curl_multi_wakeup */
	CURL *easy;
	CURLM *multi;
	struct curl_slist *hdrs;
	char *url, *user, *password, *bearer, *ca_file, *cert, *key, *name;
	int http2;
	delivery_judge_fn judge;
	void *judge_arg;
	size_t queue_cap;
	uint32_t timeout_ms, backoff_min_ms, backoff_max_ms, deadline_ms;
	uint64_t rng;
	char resp[DELIVERY_BODY_KEEP + 1];
	size_t resp_len;
	int resp_cut;
	char hdr[DELIVERY_HEADERS_KEEP];
	size_t hdr_len;
	char curl_err[CURL_ERROR_SIZE];
};

enum outcome { OUT_OK, OUT_RETRY, OUT_FAIL };

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	/* Not thread-safe in every libcurl, hence once, before any thread of ours uses curl. */
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

__attribute__((format(printf, 3, 4)))
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int has_crlf(const char *s)
{
	return s && strpbrk(s, "\r\n") != NULL;
}

/* xorshift64*: jitter only, no need for quality */
static uint64_t rnd(struct delivery *d)
{
	d->rng ^= d->rng >> 12;
	d->rng ^= d->rng << 25;
	d->rng ^= d->rng >> 27;
	return d->rng * 2685821657736338717ull;
}

static void ts_at(struct timespec *ts, uint64_t mono_ns)
{
	ts->tv_sec = (time_t)(mono_ns / 1000000000ull);
	ts->tv_nsec = (long)(mono_ns % 1000000000ull);
}

static void item_free(struct item *it)
{
	if (it) {
		free(it->body);
		free(it);
	}
}

/* Unlinks the head (the only item ever removed alone). Called locked. */
static struct item *pop_head(struct delivery *d)
{
	struct item *it = d->head;

	d->head = it->next;
	if (!d->head)
		d->tail = NULL;
	d->queue_bytes -= it->len;
	pthread_cond_broadcast(&d->idle);
	return it;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct delivery *d = arg;
	size_t len = size * n, room = DELIVERY_BODY_KEEP - d->resp_len;

	if (room) {
		memcpy(d->resp + d->resp_len, data, len < room ? len : room);
		d->resp_len += len < room ? len : room;
	}
	if (len > room)
		d->resp_cut = 1;
	return len;	/* read and discard the rest: a reused connection needs the whole answer */
}

/* Header lines, and after the body the trailers (libcurl hands HTTP/2 trailers to the same
 * callback): kept while they fit, each ending in "\n". A status line starts over (an interim
 * answer's headers are not the final one's). */
static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct delivery *d = arg;
	size_t len = size * n, l = len;

	while (l && (data[l - 1] == '\n' || data[l - 1] == '\r'))
		l--;
	if (l >= 5 && !strncmp(data, "HTTP/", 5)) {
		d->hdr_len = 0;
		return len;
	}
	if (l && l + 1 <= sizeof(d->hdr) - d->hdr_len) {
		memcpy(d->hdr + d->hdr_len, data, l);
		d->hdr_len += l;
		d->hdr[d->hdr_len++] = '\n';
	}
	return len;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct delivery *d = arg;

	return atomic_load(&d->abort) ? 1 : 0;
}

/* Errors no retry can cure: the configuration is wrong. */
static int curl_permanent(CURLcode rc)
{
	switch (rc) {
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_NOT_BUILT_IN:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_BAD_FUNCTION_ARGUMENT:
	case CURLE_OUT_OF_MEMORY:
		return 1;
	default:
		return 0;
	}
}

/* One POST of it->body. Runs unlocked on the worker; *retry_after_s from the answer, or 0. */
static enum outcome attempt(struct delivery *d, struct item *it, long *retry_after_s,
			    char *why, size_t whylen)
{
	CURLcode rc = CURLE_OK;
	CURLMcode mc;
	CURLMsg *msg;
	curl_off_t ra = 0;
	long code = 0, version = 0;
	int running = 1, left, done = 0;
	size_t i;

	*retry_after_s = 0;
	d->resp_len = 0;
	d->resp_cut = 0;
	d->hdr_len = 0;
	d->curl_err[0] = 0;
	curl_easy_setopt(d->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)it->len);
	/* never NULL: with no fields curl would read the body from stdin */
	curl_easy_setopt(d->easy, CURLOPT_POSTFIELDS, it->body ? (char *)it->body : "");
	if (curl_multi_add_handle(d->multi, d->easy) != CURLM_OK) {
		snprintf(why, whylen, "curl: cannot start a transfer");
		return OUT_RETRY;
	}
	/*
	 * The multi interface only so that flush and free can interrupt a hung attempt at once
	 * (curl_multi_wakeup); CURLOPT_TIMEOUT_MS bounds it anyway, and poll's wait is capped by
	 * curl's own timers.
	 */
	while (running && !atomic_load(&d->abort)) {
		mc = curl_multi_perform(d->multi, &running);
		if (mc == CURLM_OK && running)
			mc = curl_multi_poll(d->multi, NULL, 0, 1000, NULL);
		if (mc != CURLM_OK) {
			rc = CURLE_RECV_ERROR;
			done = 1;
			snprintf(d->curl_err, sizeof(d->curl_err), "%s", curl_multi_strerror(mc));
			break;
		}
	}
	while (!done && (msg = curl_multi_info_read(d->multi, &left))) {
		if (msg->msg == CURLMSG_DONE) {
			rc = msg->data.result;
			done = 1;
		}
	}
	if (!done)	/* aborted before the end */
		rc = CURLE_ABORTED_BY_CALLBACK;
	if (rc == CURLE_OK) {
		curl_easy_getinfo(d->easy, CURLINFO_RESPONSE_CODE, &code);
		curl_easy_getinfo(d->easy, CURLINFO_RETRY_AFTER, &ra);
		curl_easy_getinfo(d->easy, CURLINFO_HTTP_VERSION, &version);
	}
	curl_multi_remove_handle(d->multi, d->easy);

	if (rc != CURLE_OK) {
		/* A gRPC port given an HTTP/1.1 request, or the reverse, fails with words that do
		 * not say so: say it. */
		const char *hint = "";

		if (!d->http2 && rc == CURLE_UNSUPPORTED_PROTOCOL && strstr(d->curl_err, "HTTP/0.9"))
			hint = " (the server speaks HTTP/2 only: a gRPC port?)";
		else if (d->http2 && (rc == CURLE_GOT_NOTHING || rc == CURLE_HTTP2 ||
				      rc == CURLE_WEIRD_SERVER_REPLY || rc == CURLE_SEND_ERROR ||
				      rc == CURLE_RECV_ERROR))	/* hung up on the preface, early or late */
			hint = " (no HTTP/2 answer: not a gRPC port?)";
		snprintf(why, whylen, "curl: %s%s%s%s", curl_easy_strerror(rc),
			 d->curl_err[0] ? ": " : "", d->curl_err, hint);
		return curl_permanent(rc) ? OUT_FAIL : OUT_RETRY;
	}
	if (d->http2 && version != CURL_HTTP_VERSION_2_0) {
		snprintf(why, whylen, "the server answered HTTP %ld over HTTP/1, not HTTP/2: not a "
			 "gRPC endpoint (the OTLP/HTTP port is 4318, gRPC's 4317)", code);
		return OUT_FAIL;
	}
	if (d->judge) {
		struct delivery_answer a = {
			.http_code = code, .http2 = version == CURL_HTTP_VERSION_2_0,
			.headers = d->hdr, .headers_len = d->hdr_len,
			.body = (const uint8_t *)d->resp, .body_len = d->resp_len,
			.body_truncated = d->resp_cut,
		};

		switch (d->judge(d->judge_arg, &a, why, whylen)) {
		case DELIVERY_OK:
			return OUT_OK;
		case DELIVERY_RETRY:
			*retry_after_s = ra > 0 ? (long)(ra > 86400 ? 86400 : ra) : 0;
			return OUT_RETRY;
		default:
			return OUT_FAIL;
		}
	}
	if (code >= 200 && code < 300)
		return OUT_OK;
	if (d->resp_len > RESP_KEEP)
		d->resp_len = RESP_KEEP;
	/* Keep the answer's text (Connect errors are JSON) printable and on one line. */
	d->resp[d->resp_len] = 0;
	for (i = 0; i < d->resp_len; i++) {
		if ((unsigned char)d->resp[i] < 0x20 || (unsigned char)d->resp[i] == 0x7f)
			d->resp[i] = ' ';
	}
	snprintf(why, whylen, "HTTP %ld%s%.*s", code, d->resp_len ? ": " : "", RESP_KEEP, d->resp);
	if (code == 429 || code >= 500) {
		*retry_after_s = ra > 0 ? (long)(ra > 86400 ? 86400 : ra) : 0;
		return OUT_RETRY;
	}
	return OUT_FAIL;
}

static uint64_t backoff_ms(struct delivery *d, unsigned attempts, long retry_after_s)
{
	uint64_t ms = d->backoff_min_ms;
	unsigned i;

	/* The server's Retry-After wins (not earlier than asked), but never below our minimum. */
	if (retry_after_s > 0) {
		ms = (uint64_t)retry_after_s * 1000;
		return ms > d->backoff_min_ms ? ms : d->backoff_min_ms;
	}
	for (i = 1; i < attempts && ms < d->backoff_max_ms; i++)
		ms *= 2;
	/* + up to 25%: agents that failed together do not all come back in the same instant */
	ms += rnd(d) % (ms / 4 + 1);
	return ms < d->backoff_max_ms ? ms : d->backoff_max_ms;
}

static void record_answer(struct delivery *d, const struct item *it, uint64_t now)
{
	uint64_t lat = now > it->enqueued_ns ? now - it->enqueued_ns : 0;

	d->st.last_latency_ns = lat;
	metrics_hist__observe(&d->st.latency, lat / 1e9);
	if (lat > d->st.max_latency_ns)
		d->st.max_latency_ns = lat;
}

/* A refusal that will not be retried: logged, unless it was just said. Called locked. */
static void log_refusal(struct delivery *d, const char *why, uint64_t now)
{
	if (!strcmp(d->logged, why) && now - d->logged_ns < LOG_EVERY_NS)
		return;
	snprintf(d->logged, sizeof(d->logged), "%s", why);
	d->logged_ns = now;
	log_warn("%s: request refused, not retried: %s", d->name, why);
}

static void *worker(void *arg)
{
	struct delivery *d = arg;
	struct timespec ts;
	struct item *it;
	enum outcome out;
	char why[sizeof(d->last_error)];
	long retry_after_s;
	uint64_t now, delay;

	pthread_mutex_lock(&d->mu);
	for (;;) {
		while (!d->stop) {
			if (!d->head) {
				pthread_cond_wait(&d->wake, &d->mu);
				continue;
			}
			if (d->head->not_before_ns <= now_ns())
				break;
			ts_at(&ts, d->head->not_before_ns);
			pthread_cond_timedwait(&d->wake, &d->mu, &ts);
		}
		if (d->stop)
			break;
		it = d->head;
		now = now_ns();
		if (now >= it->deadline_ns) {
			d->st.dropped_expired++;
			item_free(pop_head(d));
			continue;
		}
		if (it->attempts)
			d->st.retried++;
		d->inflight = it;
		pthread_mutex_unlock(&d->mu);

		why[0] = 0;
		out = attempt(d, it, &retry_after_s, why, sizeof(why));

		pthread_mutex_lock(&d->mu);
		now = now_ns();
		it->attempts++;
		if (why[0])
			memcpy(d->last_error, why, sizeof(why));
		if (out == OUT_OK) {
			d->st.sent_ok++;
			d->st.bytes_sent += it->len;
			record_answer(d, it, now);
		} else if (out == OUT_FAIL) {
			d->st.failed++;
			record_answer(d, it, now);
			log_refusal(d, why, now);
		} else if (atomic_load(&d->abort) || d->stop) {
			d->st.dropped_shutdown++;
		} else {
			delay = backoff_ms(d, it->attempts, retry_after_s) * NS_PER_MS;
			if (now + delay >= it->deadline_ns) {
				d->st.dropped_expired++;	/* the next try would start too late */
			} else {
				it->not_before_ns = now + delay;
				d->inflight = NULL;
				pthread_cond_broadcast(&d->idle);
				continue;	/* stays at the head: order is kept */
			}
		}
		d->inflight = NULL;
		atomic_store(&d->abort, 0);
		item_free(pop_head(d));
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

static char *dup_opt(const char *s, int *oom)
{
	char *c;

	if (!s)
		return NULL;
	c = strdup(s);
	if (!c)
		*oom = 1;
	return c;
}

/* Checks o; 0 or -EINVAL with the reason in err. */
static int check_opts(const struct delivery_opts *o, char *err, size_t errlen)
{
	curl_version_info_data *ver = curl_version_info(CURLVERSION_NOW);
	char *scheme = NULL, *host = NULL;
	CURLU *u;
	FILE *f;
	size_t i;
	int bad = 0;

	if (!o->url || !*o->url) {
		set_err(err, errlen, "no URL given");
		return -EINVAL;
	}
	u = curl_url();
	if (!u || curl_url_set(u, CURLUPART_URL, o->url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host) {
		set_err(err, errlen, "cannot parse the URL '%s'", o->url);
		bad = 1;
	} else if (strcasecmp(scheme, "http") && strcasecmp(scheme, "https")) {
		set_err(err, errlen, "URL scheme '%s' is not http or https", scheme);
		bad = 1;
	} else if (!strcasecmp(scheme, "https") && !(ver->features & CURL_VERSION_SSL)) {
		set_err(err, errlen, "this libcurl has no TLS support for '%s'", o->url);
		bad = 1;
	}
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	if (bad)
		return -EINVAL;
	for (i = 0; i < o->n_headers; i++) {
		const char *h = o->headers[i], *colon = h ? strchr(h, ':') : NULL;

		if (!h || !colon || colon == h || has_crlf(h)) {
			set_err(err, errlen, "header '%s' is not 'Name: value' on one line",
				h ? h : "(null)");
			return -EINVAL;
		}
	}
	if ((o->basic_user || o->basic_password) && o->bearer_token) {
		set_err(err, errlen, "basic auth and a bearer token are exclusive");
		return -EINVAL;
	}
	if (has_crlf(o->bearer_token) || has_crlf(o->tenant) || has_crlf(o->content_type) ||
	    has_crlf(o->content_encoding)) {
		set_err(err, errlen, "a token, tenant, content type or encoding holds a line break");
		return -EINVAL;
	}
	{
		const char *files[] = { o->ca_file, o->client_cert, o->client_key };
		const char *what[] = { "CA file", "client certificate", "client key" };

		for (i = 0; i < 3; i++) {
			if (!files[i])
				continue;
			f = fopen(files[i], "r");
			if (!f) {
				set_err(err, errlen, "%s '%s' unreadable: %s", what[i], files[i],
					strerror(errno));
				return -EINVAL;
			}
			fclose(f);
		}
	}
	if (o->client_key && !o->client_cert) {
		set_err(err, errlen, "a client key needs a client certificate");
		return -EINVAL;
	}
	if (o->http2 && !(ver->features & CURL_VERSION_HTTP2)) {
		set_err(err, errlen, "this libcurl has no HTTP/2 support (needed for gRPC)");
		return -EINVAL;
	}
	if (o->backoff_min_ms && o->backoff_max_ms && o->backoff_min_ms > o->backoff_max_ms) {
		set_err(err, errlen, "backoff minimum above its maximum");
		return -EINVAL;
	}
	return 0;
}

static struct curl_slist *add_hdr(struct curl_slist *l, const char *name, const char *value,
				  int *oom)
{
	struct curl_slist *n;
	char *line;

	if (asprintf(&line, "%s: %s", name, value) < 0) {
		*oom = 1;
		return l;
	}
	n = curl_slist_append(l, line);
	free(line);
	if (!n)
		*oom = 1;
	return n ? n : l;
}

static int setup_curl(struct delivery *d, const struct delivery_opts *o)
{
	struct curl_slist *n;
	int oom = 0;
	size_t i;

	d->easy = curl_easy_init();
	d->multi = curl_multi_init();
	if (!d->easy || !d->multi)
		return -ENOMEM;
	d->hdrs = add_hdr(NULL, "Content-Type",
			  o->content_type ? o->content_type : "application/octet-stream", &oom);
	/* curl would wait up to 1 s for a "100 Continue" on big bodies: not worth a round trip */
	n = curl_slist_append(d->hdrs, "Expect:");
	d->hdrs = n ? n : d->hdrs;
	oom |= !n;
	if (o->content_encoding && o->content_encoding[0])
		d->hdrs = add_hdr(d->hdrs, "Content-Encoding", o->content_encoding, &oom);
	if (o->tenant)
		d->hdrs = add_hdr(d->hdrs, "X-Scope-OrgID", o->tenant, &oom);
	if (o->bearer_token)
		d->hdrs = add_hdr(d->hdrs, "Authorization", d->bearer, &oom);
	for (i = 0; i < o->n_headers; i++) {
		n = curl_slist_append(d->hdrs, o->headers[i]);
		d->hdrs = n ? n : d->hdrs;
		oom |= !n;
	}
	if (oom)
		return -ENOMEM;

	curl_easy_setopt(d->easy, CURLOPT_URL, d->url);
	curl_easy_setopt(d->easy, CURLOPT_HTTPHEADER, d->hdrs);
	curl_easy_setopt(d->easy, CURLOPT_POST, 1L);
	curl_easy_setopt(d->easy, CURLOPT_NOSIGNAL, 1L);	/* threads: no SIGALRM for DNS */
	curl_easy_setopt(d->easy, CURLOPT_TIMEOUT_MS, (long)d->timeout_ms);
	curl_easy_setopt(d->easy, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(d->timeout_ms < 10000 ? d->timeout_ms : 10000));
	curl_easy_setopt(d->easy, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(d->easy, CURLOPT_USERAGENT, "spanprof/" SPANPROF_VERSION);
	curl_easy_setopt(d->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(d->easy, CURLOPT_WRITEDATA, d);
	curl_easy_setopt(d->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(d->easy, CURLOPT_HEADERDATA, d);
	curl_easy_setopt(d->easy, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(d->easy, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(d->easy, CURLOPT_XFERINFODATA, d);
	curl_easy_setopt(d->easy, CURLOPT_ERRORBUFFER, d->curl_err);
#if LIBCURL_VERSION_NUM >= 0x075500	/* 7.85 */
	curl_easy_setopt(d->easy, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	if (d->user) {
		curl_easy_setopt(d->easy, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(d->easy, CURLOPT_USERNAME, d->user);
		curl_easy_setopt(d->easy, CURLOPT_PASSWORD, d->password ? d->password : "");
	}
	if (d->ca_file)
		curl_easy_setopt(d->easy, CURLOPT_CAINFO, d->ca_file);
	if (d->cert)
		curl_easy_setopt(d->easy, CURLOPT_SSLCERT, d->cert);
	if (d->key)
		curl_easy_setopt(d->easy, CURLOPT_SSLKEY, d->key);
	/* gRPC: HTTP/2 from the first byte on http:// (no Upgrade dance: gRPC servers do not
	 * answer it), negotiated by ALPN on https://; the answer's version is checked. */
	if (d->http2) {
		curl_easy_setopt(d->easy, CURLOPT_HTTP_VERSION,
				 (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
		/* A new connection per request: libcurl 7.88 (Debian 12) sends nothing on a reused
		 * HTTP/2 connection after a gRPC answer and fails with "Error in the HTTP2 framing
		 * layer". One handshake per window is cheap. */
		curl_easy_setopt(d->easy, CURLOPT_FORBID_REUSE, 1L);
	}
	return 0;
}

struct delivery *delivery__new(const struct delivery_opts *o, char *err, size_t errlen)
{
	struct delivery *d;
	pthread_condattr_t ca;
	int rc, oom = 0;

	if (err && errlen)
		err[0] = 0;
	if (!o) {
		set_err(err, errlen, "no options");
		errno = EINVAL;
		return NULL;
	}
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK) {
		set_err(err, errlen, "libcurl: %s", curl_easy_strerror(curl_init_rc));
		errno = ENOMEM;
		return NULL;
	}
	rc = check_opts(o, err, errlen);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		goto oom;
	d->url = dup_opt(o->url, &oom);
	d->user = dup_opt(o->basic_user ? o->basic_user : (o->basic_password ? "" : NULL), &oom);
	d->password = dup_opt(o->basic_password, &oom);
	d->ca_file = dup_opt(o->ca_file, &oom);
	d->cert = dup_opt(o->client_cert, &oom);
	d->key = dup_opt(o->client_key, &oom);
	d->name = dup_opt(o->name ? o->name : "delivery", &oom);
	d->http2 = o->http2;
	d->judge = o->judge;
	d->judge_arg = o->judge_arg;
	if (o->bearer_token && asprintf(&d->bearer, "Bearer %s", o->bearer_token) < 0) {
		d->bearer = NULL;
		oom = 1;
	}
	d->timeout_ms = o->timeout_ms ? o->timeout_ms : DEF_TIMEOUT_MS;
	d->queue_cap = o->queue_max_bytes ? o->queue_max_bytes : DEF_QUEUE_BYTES;
	d->backoff_min_ms = o->backoff_min_ms ? o->backoff_min_ms : DEF_BACKOFF_MIN_MS;
	d->backoff_max_ms = o->backoff_max_ms ? o->backoff_max_ms : DEF_BACKOFF_MAX_MS;
	if (d->backoff_max_ms < d->backoff_min_ms)
		d->backoff_max_ms = d->backoff_min_ms;
	d->deadline_ms = o->retry_deadline_ms ? o->retry_deadline_ms : DEF_DEADLINE_MS;
	if (getrandom(&d->rng, sizeof(d->rng), GRND_NONBLOCK) != sizeof(d->rng) || !d->rng)
		d->rng = now_ns() | 1;
	if (oom || setup_curl(d, o))
		goto oom;

	pthread_mutex_init(&d->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);	/* now_ns()'s clock */
	pthread_cond_init(&d->wake, &ca);
	pthread_cond_init(&d->idle, &ca);
	pthread_condattr_destroy(&ca);
	atomic_init(&d->abort, 0);
	rc = pthread_create(&d->thread, NULL, worker, d);
	if (rc) {
		pthread_cond_destroy(&d->wake);
		pthread_cond_destroy(&d->idle);
		pthread_mutex_destroy(&d->mu);
		set_err(err, errlen, "cannot start the delivery thread: %s", strerror(rc));
		goto free_d;
	}
	return d;

oom:
	set_err(err, errlen, "out of memory");
	rc = ENOMEM;
free_d:
	if (d) {
		curl_slist_free_all(d->hdrs);
		if (d->easy)
			curl_easy_cleanup(d->easy);
		if (d->multi)
			curl_multi_cleanup(d->multi);
		free(d->url);
		free(d->user);
		free(d->password);
		free(d->bearer);
		free(d->ca_file);
		free(d->cert);
		free(d->key);
		free(d->name);
		free(d);
	}
	errno = rc;
	return NULL;
}

int delivery__submit(struct delivery *d, uint8_t *body, size_t len, uint64_t enqueued_ns)
{
	struct item *it;
	uint64_t now = now_ns();

	if (!d || (!body && len)) {
		free(body);
		return -EINVAL;
	}
	it = calloc(1, sizeof(*it));
	if (!it) {
		free(body);
		pthread_mutex_lock(&d->mu);
		d->st.dropped_encode++;	/* out of memory */
		pthread_mutex_unlock(&d->mu);
		return -ENOMEM;
	}
	it->body = body;
	it->len = len;
	it->enqueued_ns = enqueued_ns ? enqueued_ns : now;
	it->deadline_ns = it->enqueued_ns + (uint64_t)d->deadline_ms * NS_PER_MS;

	pthread_mutex_lock(&d->mu);
	if (len > d->queue_cap - d->queue_bytes) {
		d->st.dropped_queue_full++;
		pthread_mutex_unlock(&d->mu);
		item_free(it);
		return -ENOBUFS;
	}
	if (d->tail)
		d->tail->next = it;
	else
		d->head = it;
	d->tail = it;
	d->queue_bytes += len;
	pthread_cond_signal(&d->wake);
	pthread_mutex_unlock(&d->mu);
	return 0;
}

int delivery__flush(struct delivery *d, uint32_t timeout_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * NS_PER_MS;
	struct item **pp, *it;
	struct timespec ts;

	if (!d)
		return -EINVAL;
	pthread_mutex_lock(&d->mu);
	ts_at(&ts, deadline);
	while (d->head && now_ns() < deadline)
		pthread_cond_timedwait(&d->idle, &d->mu, &ts);
	if (!d->head) {
		pthread_mutex_unlock(&d->mu);
		return 0;
	}
	/* Out of time: drop what waits, interrupt what is in flight and wait for it to end. */
	for (pp = &d->head; (it = *pp);) {
		if (it == d->inflight) {
			pp = &it->next;
			continue;
		}
		*pp = it->next;
		d->queue_bytes -= it->len;
		d->st.dropped_shutdown++;
		item_free(it);
	}
	d->tail = d->head;
	if (d->inflight) {
		atomic_store(&d->abort, 1);
		curl_multi_wakeup(d->multi);
		while (d->inflight)
			pthread_cond_wait(&d->idle, &d->mu);
	}
	pthread_mutex_unlock(&d->mu);
	return -ETIMEDOUT;
}

void delivery__stats(const struct delivery *d, struct export_stats *out)
{
	struct delivery *m = (struct delivery *)d;	/* the lock is not part of the value */

	if (!d || !out)
		return;
	pthread_mutex_lock(&m->mu);
	*out = d->st;
	out->queue_bytes = d->queue_bytes;
	pthread_mutex_unlock(&m->mu);
}

void delivery__last_error(const struct delivery *d, char *buf, size_t len)
{
	struct delivery *m = (struct delivery *)d;

	if (!buf || !len)
		return;
	buf[0] = 0;
	if (!d)
		return;
	pthread_mutex_lock(&m->mu);
	snprintf(buf, len, "%s", d->last_error);
	pthread_mutex_unlock(&m->mu);
}

void delivery__free(struct delivery *d)
{
	struct item *it;

	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	d->stop = 1;
	atomic_store(&d->abort, 1);
	curl_multi_wakeup(d->multi);
	pthread_cond_broadcast(&d->wake);
	pthread_mutex_unlock(&d->mu);
	pthread_join(d->thread, NULL);	/* bounded: the attempt in flight was interrupted */

	while ((it = d->head)) {
		d->head = it->next;
		item_free(it);
	}
	pthread_cond_destroy(&d->wake);
	pthread_cond_destroy(&d->idle);
	pthread_mutex_destroy(&d->mu);
	curl_slist_free_all(d->hdrs);
	curl_easy_cleanup(d->easy);
	curl_multi_cleanup(d->multi);
	free(d->url);
	free(d->user);
	free(d->password);
	free(d->bearer);
	free(d->ca_file);
	free(d->cert);
	free(d->key);
	free(d->name);
	free(d);
}

/* ---- the exporter over a delivery ----------------------------------------------------------- */

void delivery__exporter_init(struct delivery_exporter *de, const struct exporter_ops *ops)
{
	pthread_mutex_init(&de->mu, NULL);
	de->ex.ops = ops;
	de->ex.self = de;
}

int delivery_exporter__export(void *self, const struct export_batch *b)
{
	struct delivery_exporter *de = self;
	uint64_t t0 = now_ns(), split = 0;
	uint8_t *body = NULL;
	size_t len = 0;
	int err = de->encode(de, b, &body, &len, &split);

	pthread_mutex_lock(&de->mu);
	if (err)
		de->dropped_encode++;
	de->split += split;
	pthread_mutex_unlock(&de->mu);
	if (err)
		return err;
	if (body)	/* nothing sampled in this window: no request */
		err = delivery__submit(de->d, body, len, t0);	/* counts its own drops */
	if (!err) {
		pthread_mutex_lock(&de->mu);
		de->batches++;
		pthread_mutex_unlock(&de->mu);
	}
	return err;
}

int delivery_exporter__flush(void *self, uint32_t timeout_ms)
{
	return delivery__flush(((struct delivery_exporter *)self)->d, timeout_ms);
}

void delivery_exporter__stats(void *self, struct export_stats *out)
{
	struct delivery_exporter *de = self;

	delivery__stats(de->d, out);
	pthread_mutex_lock(&de->mu);
	out->batches = de->batches;
	out->split += de->split;
	out->dropped_encode += de->dropped_encode;
	pthread_mutex_unlock(&de->mu);
}

void delivery_exporter__last_error(void *self, char *buf, size_t len)
{
	delivery__last_error(((struct delivery_exporter *)self)->d, buf, len);
}

void delivery_exporter__free(void *self)
{
	struct delivery_exporter *de = self;

	if (!de)
		return;
	delivery__free(de->d);
	pthread_mutex_destroy(&de->mu);
	if (de->destroy)
		de->destroy(de);
	else
		free(de);
}
