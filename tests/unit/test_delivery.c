/* test_delivery.c: the HTTP delivery path and the Pyroscope exporter against a real HTTP server
 * (libmicrohttpd on 127.0.0.1, ephemeral port) started by the test: retries, drops, deadlines. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <microhttpd.h>
#include <cmocka.h>

#include "delivery.h"
#include "profile.h"
#include "push/v1/push.pb-c.h"
#include "pyroscope.h"
#include "util.h"

#define MS 1000000ull
#define MAX_REQS 64

/* ---- the test server ---------------------------------------------------------------------- */

struct step {
	int status;		/* 0: hang (never answer) */
	int retry_after;	/* seconds, 0: no header */
	const char *body;
};

struct req_rec {
	char path[128];
	char content_type[64];
	char connect_version[16];
	char tenant[64];
	char custom[64];
	char auth[128];
	uint8_t *body;
	size_t body_len;
	uint64_t at_ns;		/* when the whole request had arrived */
};

struct server {
	struct MHD_Daemon *mhd;
	int port;
	char url[64];
	pthread_mutex_t mu;
	struct step script[8];	/* answers in order, then dflt */
	size_t n_script;
	size_t next;
	struct step dflt;
	struct req_rec reqs[MAX_REQS];
	size_t n_reqs;
	atomic_int release;	/* hanging handlers give up */
};

struct upload {
	uint8_t *buf;
	size_t len;
	size_t cap;
};

static void copy_hdr(struct MHD_Connection *c, const char *name, char *out, size_t len)
{
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);

	snprintf(out, len, "%s", v ? v : "");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *data_len, void **req_cls)
{
	struct server *s = cls;
	struct upload *up = *req_cls;
	struct MHD_Response *resp;
	struct req_rec *r = NULL;
	struct step st;
	enum MHD_Result ret;
	char ra[16];
	int waited;

	if (!up) {	/* headers only so far */
		up = calloc(1, sizeof(*up));
		*req_cls = up;
		return up ? MHD_YES : MHD_NO;
	}
	if (*data_len) {
		if (up->len + *data_len > up->cap) {
			up->cap = (up->len + *data_len) * 2;
			up->buf = realloc(up->buf, up->cap);
			if (!up->buf)
				return MHD_NO;
		}
		memcpy(up->buf + up->len, data, *data_len);
		up->len += *data_len;
		*data_len = 0;
		return MHD_YES;
	}

	pthread_mutex_lock(&s->mu);
	st = s->next < s->n_script ? s->script[s->next++] : s->dflt;
	if (s->n_reqs < MAX_REQS) {
		r = &s->reqs[s->n_reqs++];
		snprintf(r->path, sizeof(r->path), "%s %s", method, url);
		copy_hdr(c, "Content-Type", r->content_type, sizeof(r->content_type));
		copy_hdr(c, "Connect-Protocol-Version", r->connect_version,
			 sizeof(r->connect_version));
		copy_hdr(c, "X-Scope-OrgID", r->tenant, sizeof(r->tenant));
		copy_hdr(c, "X-Test", r->custom, sizeof(r->custom));
		copy_hdr(c, "Authorization", r->auth, sizeof(r->auth));
		r->body = up->buf;
		r->body_len = up->len;
		up->buf = NULL;
		r->at_ns = now_ns();
	}
	pthread_mutex_unlock(&s->mu);

	if (!st.status) {	/* a backend that accepted the request and went silent */
		for (waited = 0; !atomic_load(&s->release) && waited < 10000; waited += 5)
			usleep(5000);
		return MHD_NO;
	}
	st.body = st.body ? st.body : "";
	resp = MHD_create_response_from_buffer(strlen(st.body), (void *)st.body,
					       MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	if (st.retry_after) {
		snprintf(ra, sizeof(ra), "%d", st.retry_after);
		MHD_add_response_header(resp, "Retry-After", ra);
	}
	if (st.status != 200)
		MHD_add_response_header(resp, "Content-Type", "application/json");
	ret = MHD_queue_response(c, (unsigned)st.status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct upload *up = *req_cls;

	if (up) {
		free(up->buf);
		free(up);
		*req_cls = NULL;
	}
}

static struct server *server_start(void)
{
	struct server *s = calloc(1, sizeof(*s));
	struct sockaddr_in sa = { .sin_family = AF_INET };
	const union MHD_DaemonInfo *info;

	assert_non_null(s);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	pthread_mutex_init(&s->mu, NULL);
	s->dflt.status = 200;
	/* a thread per connection: a hanging handler blocks only its own connection */
	s->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION,
				  0, NULL, NULL, on_request, s,
				  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
	assert_non_null(s->mhd);
	info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
	assert_non_null(info);
	s->port = info->port;
	assert_true(s->port > 0);
	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d/ingest", s->port);
	return s;
}

static void server_stop(struct server *s)
{
	size_t i;

	atomic_store(&s->release, 1);
	MHD_stop_daemon(s->mhd);
	for (i = 0; i < s->n_reqs; i++)
		free(s->reqs[i].body);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

static size_t server_count(struct server *s)
{
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = s->n_reqs;
	pthread_mutex_unlock(&s->mu);
	return n;
}

static void server_default(struct server *s, int status)
{
	pthread_mutex_lock(&s->mu);
	s->dflt.status = status;
	pthread_mutex_unlock(&s->mu);
}

static int setup(void **state)
{
	*state = server_start();
	return 0;
}

static int teardown(void **state)
{
	server_stop(*state);
	return 0;
}

/* ---- helpers ------------------------------------------------------------------------------ */

static struct delivery_opts fast_opts(const char *url)
{
	struct delivery_opts o = {
		.url = url,
		.content_type = "application/x-test",
		.timeout_ms = 2000,
		.backoff_min_ms = 20,
		.backoff_max_ms = 100,
		.retry_deadline_ms = 5000,
	};

	return o;
}

static struct delivery *new_delivery(const struct delivery_opts *o)
{
	char err[256];
	struct delivery *d = delivery__new(o, err, sizeof(err));

	if (!d)
		fail_msg("delivery__new: %s", err);
	return d;
}

static uint8_t *body_of(size_t len, uint8_t fill)
{
	uint8_t *b = malloc(len);

	assert_non_null(b);
	memset(b, fill, len);
	return b;
}

static struct export_stats stats_of(struct delivery *d)
{
	struct export_stats st;

	delivery__stats(d, &st);
	return st;
}

/* ---- delivery ------------------------------------------------------------------------------ */

static void test_delivery_ok_200(void **state)
{
	struct server *s = *state;
	const char *hdrs[] = { "X-Test: yes" };
	struct delivery_opts o = fast_opts(s->url);
	struct export_stats st;
	struct delivery *d;
	uint64_t t0 = now_ns();

	o.headers = hdrs;
	o.n_headers = 1;
	o.tenant = "team-a";
	o.bearer_token = "s3cret";
	d = new_delivery(&o);
	assert_int_equal(delivery__submit(d, body_of(1000, 'a'), 1000, t0), 0);
	assert_int_equal(delivery__flush(d, 5000), 0);
	st = stats_of(d);
	assert_int_equal(st.sent_ok, 1);
	assert_int_equal(st.bytes_sent, 1000);
	assert_int_equal(st.retried, 0);
	assert_int_equal(st.failed, 0);
	assert_int_equal(st.queue_bytes, 0);
	assert_true(st.last_latency_ns > 0);
	assert_true(st.max_latency_ns >= st.last_latency_ns);

	assert_int_equal(server_count(s), 1);
	assert_string_equal(s->reqs[0].path, "POST /ingest");
	assert_string_equal(s->reqs[0].content_type, "application/x-test");
	assert_string_equal(s->reqs[0].tenant, "team-a");
	assert_string_equal(s->reqs[0].custom, "yes");
	assert_string_equal(s->reqs[0].auth, "Bearer s3cret");
	assert_int_equal(s->reqs[0].body_len, 1000);
	assert_int_equal(s->reqs[0].body[999], 'a');
	delivery__free(d);
}

static void test_delivery_retry_503_then_200(void **state)
{
	struct server *s = *state;
	struct delivery_opts o = fast_opts(s->url);
	struct export_stats st;
	struct delivery *d;
	char why[128];

	s->script[0] = (struct step){ 503, 0, "{\"code\":\"unavailable\"}" };
	s->script[1] = (struct step){ 502, 0, NULL };
	s->n_script = 2;
	d = new_delivery(&o);
	assert_int_equal(delivery__submit(d, body_of(10, 'b'), 10, 0), 0);
	assert_int_equal(delivery__flush(d, 5000), 0);
	st = stats_of(d);
	assert_int_equal(st.sent_ok, 1);
	assert_int_equal(st.retried, 2);
	assert_int_equal(st.failed, 0);
	assert_int_equal(st.dropped_expired, 0);
	assert_int_equal(server_count(s), 3);
	/* the same body each time */
	assert_int_equal(s->reqs[2].body_len, 10);
	assert_int_equal(s->reqs[2].body[0], 'b');
	/* backoff: at least the minimum between attempts, doubling */
	assert_true(s->reqs[1].at_ns - s->reqs[0].at_ns >= 20 * MS);
	assert_true(s->reqs[2].at_ns - s->reqs[1].at_ns >= 40 * MS);
	delivery__last_error(d, why, sizeof(why));
	assert_non_null(strstr(why, "HTTP 502"));
	delivery__free(d);
}

static void test_delivery_400_failed_no_retry(void **state)
{
	struct server *s = *state;
	struct delivery_opts o = fast_opts(s->url);
	struct export_stats st;
	struct delivery *d;
	char why[256];

	s->script[0] = (struct step){ 400, 0,
				      "{\"code\":\"invalid_argument\",\"message\":\"bad\nlabels\"}" };
	s->n_script = 1;
	d = new_delivery(&o);
	assert_int_equal(delivery__submit(d, body_of(10, 'c'), 10, 0), 0);
	assert_int_equal(delivery__submit(d, body_of(20, 'd'), 20, 0), 0);	/* goes on after */
	assert_int_equal(delivery__flush(d, 5000), 0);
	st = stats_of(d);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.retried, 0);
	assert_int_equal(st.sent_ok, 1);
	assert_int_equal(st.bytes_sent, 20);
	assert_int_equal(server_count(s), 2);
	assert_int_equal(s->reqs[1].body_len, 20);
	delivery__last_error(d, why, sizeof(why));
	assert_non_null(strstr(why, "HTTP 400"));
	assert_non_null(strstr(why, "invalid_argument"));
	assert_null(strchr(why, '\n'));	/* one line */
	delivery__free(d);
}

static void test_delivery_429_retry_after(void **state)
{
	struct server *s = *state;
	struct delivery_opts o = fast_opts(s->url);
	struct export_stats st;
	struct delivery *d;
	uint64_t gap;

	s->script[0] = (struct step){ 429, 1, "{\"code\":\"resource_exhausted\"}" };
	s->n_script = 1;
	d = new_delivery(&o);
	assert_int_equal(delivery__submit(d, body_of(10, 'e'), 10, 0), 0);
	assert_int_equal(delivery__flush(d, 5000), 0);
	st = stats_of(d);
	assert_int_equal(st.sent_ok, 1);
	assert_int_equal(st.retried, 1);
	assert_int_equal(server_count(s), 2);
	/* Retry-After: 1 honoured, although backoff_max is 100 ms (how soon after is no test's) */
	gap = s->reqs[1].at_ns - s->reqs[0].at_ns;
	assert_true(gap >= 950 * MS);
	delivery__free(d);
}

static void test_delivery_hang_bounded_then_expired(void **state)
{
	struct server *s = *state;
	struct delivery_opts o = fast_opts(s->url);
	struct export_stats st;
	struct delivery *d;
	uint64_t t0, took;
	size_t i, n;

	s->dflt.status = 0;	/* never answers */
	o.timeout_ms = 300;
	o.backoff_min_ms = 50;
	o.retry_deadline_ms = 1000;
	d = new_delivery(&o);
	t0 = now_ns();
	assert_int_equal(delivery__submit(d, body_of(10, 'f'), 10, t0), 0);
	assert_int_equal(delivery__flush(d, 5000), 0);	/* empty once expired */
	took = now_ns() - t0;
	st = stats_of(d);
	assert_int_equal(st.sent_ok, 0);
	assert_int_equal(st.dropped_expired, 1);
	assert_true(st.retried >= 1);
	assert_true(took >= 600 * MS);	/* two timeouts at least */
	n = server_count(s);
	assert_int_equal(n, st.retried + 1);
	/* each attempt waited for the timeout (how much longer is the machine's, not a test's) */
	for (i = 1; i < n; i++)
		assert_true(s->reqs[i].at_ns - s->reqs[i - 1].at_ns >= 300 * MS);
	delivery__free(d);
}

static void test_delivery_refused_retried_then_expired(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	struct delivery_opts o;
	struct export_stats st;
	struct delivery *d;
	char url[64], why[256];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	(void)state;
	/* a port that was free a moment ago: nothing listens there */
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", ntohs(sa.sin_port));
	o = fast_opts(url);
	o.retry_deadline_ms = 400;
	d = new_delivery(&o);
	assert_int_equal(delivery__submit(d, body_of(10, 'g'), 10, 0), 0);
	assert_int_equal(delivery__flush(d, 3000), 0);
	st = stats_of(d);
	assert_int_equal(st.dropped_expired, 1);
	assert_true(st.retried >= 2);
	assert_int_equal(st.sent_ok + st.failed, 0);
	delivery__last_error(d, why, sizeof(why));
	assert_memory_equal(why, "curl: ", 6);
	delivery__free(d);
}

static void test_delivery_queue_full(void **state)
{
	struct server *s = *state;
	struct delivery_opts o = fast_opts(s->url);
	struct export_stats st;
	struct delivery *d;
	uint64_t t0;

	s->dflt.status = 0;	/* nothing drains */
	o.queue_max_bytes = 1000;
	o.timeout_ms = 5000;
	d = new_delivery(&o);
	assert_int_equal(delivery__submit(d, body_of(600, 'h'), 600, 0), 0);
	assert_int_equal(delivery__submit(d, body_of(600, 'i'), 600, 0), -ENOBUFS);	/* newest dropped */
	assert_int_equal(delivery__submit(d, body_of(400, 'j'), 400, 0), 0);	/* still fits */
	assert_int_equal(delivery__submit(d, body_of(1, 'k'), 1, 0), -ENOBUFS);
	assert_int_equal(delivery__submit(d, body_of(2000, 'l'), 2000, 0), -ENOBUFS);	/* never fits */
	assert_int_equal(delivery__submit(d, NULL, 5, 0), -EINVAL);
	st = stats_of(d);
	assert_int_equal(st.dropped_queue_full, 3);
	assert_int_equal(st.queue_bytes, 1000);
	/* free with a request hanging in flight: it does not wait for the request's timeout */
	t0 = now_ns();
	delivery__free(d);
	assert_true(now_ns() - t0 < (uint64_t)o.timeout_ms * MS);
}

static void test_delivery_flush_timeout_shutdown(void **state)
{
	struct server *s = *state;
	struct delivery_opts o = fast_opts(s->url);
	struct export_stats st;
	struct delivery *d;
	uint64_t t0, took;

	s->dflt.status = 0;
	o.timeout_ms = 10000;	/* the hang would last 10 s without the flush deadline */
	d = new_delivery(&o);
	assert_int_equal(delivery__submit(d, body_of(100, 'm'), 100, 0), 0);
	assert_int_equal(delivery__submit(d, body_of(100, 'n'), 100, 0), 0);
	assert_int_equal(delivery__submit(d, body_of(100, 'o'), 100, 0), 0);
	t0 = now_ns();
	assert_int_equal(delivery__flush(d, 200), -ETIMEDOUT);
	took = now_ns() - t0;
	assert_true(took >= 190 * MS && took < (uint64_t)o.timeout_ms * MS);	/* the deadline, not the hang */
	st = stats_of(d);
	assert_int_equal(st.dropped_shutdown, 3);	/* two waiting, one in flight */
	assert_int_equal(st.queue_bytes, 0);
	assert_int_equal(st.sent_ok, 0);

	/* still usable afterwards */
	server_default(s, 200);
	assert_int_equal(delivery__submit(d, body_of(100, 'p'), 100, 0), 0);
	assert_int_equal(delivery__flush(d, 5000), 0);
	st = stats_of(d);
	assert_int_equal(st.sent_ok, 1);
	assert_int_equal(st.dropped_shutdown, 3);
	t0 = now_ns();
	delivery__free(d);
	assert_true(now_ns() - t0 < (uint64_t)o.timeout_ms * MS);	/* not a request's timeout */
}

static void test_delivery_bad_options(void **state)
{
	const char *bad_hdr[] = { "NoColonHere" }, *crlf_hdr[] = { "X-A: b\r\nX-Evil: 1" };
	struct delivery_opts o = fast_opts("ftp://127.0.0.1/");
	char err[256];

	(void)state;
	assert_null(delivery__new(&o, err, sizeof(err)));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err, "scheme"));

	o.url = "not a url";
	assert_null(delivery__new(&o, err, sizeof(err)));
	assert_true(err[0] != 0);
	o.url = NULL;
	assert_null(delivery__new(&o, err, sizeof(err)));
	assert_non_null(strstr(err, "URL"));

	o.url = "https://127.0.0.1:1/";
	o.ca_file = "/nonexistent/ca.pem";
	assert_null(delivery__new(&o, err, sizeof(err)));
	assert_non_null(strstr(err, "CA file"));
	o.ca_file = NULL;

	o.headers = bad_hdr;
	o.n_headers = 1;
	assert_null(delivery__new(&o, err, sizeof(err)));
	assert_non_null(strstr(err, "NoColonHere"));
	o.headers = crlf_hdr;
	assert_null(delivery__new(&o, err, sizeof(err)));
	o.n_headers = 0;

	o.basic_user = "u";
	o.bearer_token = "t";
	assert_null(delivery__new(&o, err, sizeof(err)));
	assert_non_null(strstr(err, "exclusive"));
	o.bearer_token = NULL;
	o.backoff_min_ms = 1000;
	o.backoff_max_ms = 10;
	assert_null(delivery__new(&o, err, sizeof(err)));
	assert_null(delivery__new(NULL, err, sizeof(err)));
	delivery__free(NULL);	/* NULL-safe */
}

/* ---- the Pyroscope exporter end to end ------------------------------------------------------ */

static void test_delivery_pyroscope_exporter(void **state)
{
	struct server *s = *state;
	struct profile_opts po = { .period_ns = 10000000, .time_ns = 1, .duration_ns = 2 };
	struct profile *p = profile__new(&po);
	const struct pf_label series_labels[] = { { "service_name", "svc", 0 } };
	const struct pf_label sample_labels[] = { { "span_id", "0123456789abcdef", 0 } };
	const char *hdrs[] = { "X-Test: pyro" };
	struct export_series es = { series_labels, 1, p };
	struct export_batch batch = { 1, 2, &es, 1 };
	struct pyroscope_opts o = { 0 };
	struct pyroscope_encode_info totals;
	struct export_stats st;
	struct exporter *e;
	Push__V1__PushRequest *req;
	char base[64], err[256];
	uint32_t loc;

	assert_non_null(p);
	loc = profile__location(p, 0, 0x10, profile__function(p, "main", NULL, NULL));
	assert_int_equal(profile__add(p, &loc, 1, sample_labels, 1, 7), 0);

	o.url = "ftp://nowhere";
	assert_null(pyroscope__new(&o, err, sizeof(err)));
	assert_non_null(strstr(err, "scheme"));

	snprintf(base, sizeof(base), "http://127.0.0.1:%d/", s->port);	/* trailing '/' */
	o.url = base;
	o.delivery = fast_opts(NULL);
	o.delivery.headers = hdrs;
	o.delivery.n_headers = 1;
	o.delivery.basic_user = "user";
	o.delivery.basic_password = "pw";
	o.delivery.tenant = "t1";
	e = pyroscope__new(&o, err, sizeof(err));
	if (!e)
		fail_msg("pyroscope__new: %s", err);
	assert_string_equal(e->ops->name, "pyroscope");
	assert_int_equal(e->ops->export(e->self, &batch), 0);
	assert_int_equal(e->ops->flush(e->self, 5000), 0);
	e->ops->stats(e->self, &st);
	assert_int_equal(st.batches, 1);
	assert_int_equal(st.sent_ok, 1);
	assert_int_equal(st.split, 0);
	assert_true(st.last_latency_ns > 0);

	assert_int_equal(server_count(s), 1);
	assert_string_equal(s->reqs[0].path, "POST /push.v1.PusherService/Push");
	assert_string_equal(s->reqs[0].content_type, "application/proto");
	assert_string_equal(s->reqs[0].connect_version, "1");
	assert_string_equal(s->reqs[0].tenant, "t1");
	assert_string_equal(s->reqs[0].custom, "pyro");
	assert_string_equal(s->reqs[0].auth, "Basic dXNlcjpwdw==");	/* user:pw */
	assert_int_equal(st.bytes_sent, s->reqs[0].body_len);
	req = push__v1__push_request__unpack(NULL, s->reqs[0].body_len, s->reqs[0].body);
	assert_non_null(req);
	assert_int_equal(req->n_series, 1);
	assert_string_equal(req->series[0]->labels[1]->value, "svc");
	assert_int_equal(req->series[0]->n_samples, 1);
	push__v1__push_request__free_unpacked(req, NULL);
	assert_int_equal(pyroscope__encode_totals(e, &totals), 0);
	assert_int_equal(totals.series, 1);
	assert_int_equal(totals.labels_added, 1);	/* __name__ */

	/* a window without samples sends nothing but is accepted */
	es.prof = profile__new(&po);
	assert_int_equal(e->ops->export(e->self, &batch), 0);
	assert_int_equal(e->ops->flush(e->self, 1000), 0);
	e->ops->stats(e->self, &st);
	assert_int_equal(st.batches, 2);
	assert_int_equal(server_count(s), 1);
	profile__free((struct profile *)es.prof);
	e->ops->free(e->self);
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_delivery_ok_200, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delivery_retry_503_then_200, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delivery_400_failed_no_retry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delivery_429_retry_after, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delivery_hang_bounded_then_expired, setup,
						teardown),
		cmocka_unit_test(test_delivery_refused_retried_then_expired),
		cmocka_unit_test_setup_teardown(test_delivery_queue_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delivery_flush_timeout_shutdown, setup, teardown),
		cmocka_unit_test(test_delivery_bad_options),
		cmocka_unit_test_setup_teardown(test_delivery_pyroscope_exporter, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
