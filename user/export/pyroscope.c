/* pyroscope.c: encodes a batch as a Pyroscope push.v1 PushRequest (protobuf-c) within the
 * backend's ingestion limits, and hands it to the HTTP delivery path. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "pyroscope.h"
#include "profile.h"
#include "push/v1/push.pb-c.h"
#include "utf8.h"
#include "util.h"
#include "vec.h"

#define PUSH_PATH	"/push.v1.PusherService/Push"
#define DEFAULT_NAME	"process_cpu"	/* what Alloy's eBPF profiler sends */
/* Pyroscope's name for off-CPU time (pkg/model ProfileNameOffCpu): its OTLP ingest files the
 * OpenTelemetry eBPF profiler's off_cpu/nanoseconds profile as off_cpu:off_cpu:nanoseconds::. */
#define OFF_CPU_NAME	"off_cpu"
#define DEFAULT_SERVICE	"unknown"
#define ID_LEN		36		/* 8-4-4-4-12 hex */

struct limits {
	size_t max_bytes;
	size_t max_samples;
};

/* ---- labels ------------------------------------------------------------------------------ */

struct lbl {
	char *name;
	char *value;
};

/* A label value Pyroscope accepts: valid UTF-8 ('?' for what is not), at most max bytes, cut
 * on a character boundary. NULL: out of memory. */
static char *clean_value(const char *v, size_t max, int *truncated)
{
	size_t len = strlen(v), i;
	char *c = strdup(v);

	if (!c)
		return NULL;
	utf8__repair(c, len, 0);
	*truncated = 0;
	if (len > max) {
		i = max;
		while (i > 0 && ((unsigned char)c[i] & 0xc0) == 0x80)
			i--;
		c[i] = 0;
		*truncated = 1;
	}
	return c;
}

/* A label name matching [a-zA-Z_][a-zA-Z0-9_]*: other characters become '_'. */
static char *clean_name(const char *k, size_t max, int *renamed, int *truncated)
{
	size_t len = strlen(k), i;
	char *c;

	*truncated = len > max;
	if (len > max)
		len = max;
	c = strndup(k, len);
	if (!c)
		return NULL;
	*renamed = 0;
	for (i = 0; i < len; i++) {
		char ch = c[i];
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
			 (i > 0 && ch >= '0' && ch <= '9');

		if (!ok) {
			c[i] = '_';
			*renamed = 1;
		}
	}
	return c;
}

static void lbls_free(struct lbl *l, size_t n)
{
	size_t i;

	for (i = 0; l && i < n; i++) {
		free(l[i].name);
		free(l[i].value);
	}
	free(l);
}

/*
 * The series' labels as Pyroscope wants them: __name__ and service_name first (defaulted when
 * absent or empty), then the others in their order, with at most PYROSCOPE_MAX_LABEL_NAMES in
 * all. Duplicates after cleaning keep the first. name, when not NULL, is __name__ whatever the
 * series says. 0 or -ENOMEM.
 */
static int series_labels(const struct export_series *s, const char *name_override,
			 struct lbl **out, size_t *n_out, struct pyroscope_encode_info *info)
{
	struct lbl *l = calloc(s->n_labels + 2, sizeof(*l));
	size_t n = 2, i, j;
	int renamed, trunc_n, trunc_v, dup;

	if (!l)
		return -ENOMEM;
	for (i = 0; i < s->n_labels; i++) {
		const struct pf_label *in = &s->labels[i];
		char *name, *value;
		size_t slot;

		if (!in->key || !*in->key || !in->value || !*in->value) {
			info->labels_dropped++;	/* an empty value means "no label" to Pyroscope */
			continue;
		}
		name = clean_name(in->key, PYROSCOPE_MAX_NAME_LEN, &renamed, &trunc_n);
		value = name ? clean_value(in->value, PYROSCOPE_MAX_VALUE_LEN, &trunc_v) : NULL;
		if (!value) {
			free(name);
			lbls_free(l, n);
			return -ENOMEM;
		}
		info->labels_renamed += renamed;
		info->labels_truncated += trunc_n || trunc_v;
		slot = !strcmp(name, "__name__") ? 0 : !strcmp(name, "service_name") ? 1 : n;
		if (!slot && name_override) {
			free(name);
			free(value);
			continue;	/* supplied below */
		}
		for (dup = 0, j = 0; j < n && !dup; j++)
			dup = l[j].name && !strcmp(l[j].name, name);
		if (!dup)
			l[slot] = (struct lbl){ name, value };
		if (!dup && slot == n)
			n++;
		if (dup) {
			info->labels_dropped++;
			free(name);
			free(value);
		}
	}
	for (i = 0; i < 2; i++) {
		if (l[i].name)
			continue;
		l[i].name = strdup(i ? "service_name" : "__name__");
		l[i].value = strdup(i ? DEFAULT_SERVICE : name_override ? name_override : DEFAULT_NAME);
		if (!l[i].name || !l[i].value) {
			lbls_free(l, n);
			return -ENOMEM;
		}
		info->labels_added += i || !name_override;
	}
	/* Over the limit: the first ones stay, the identity labels among them. */
	for (i = PYROSCOPE_MAX_LABEL_NAMES; i < n; i++) {
		free(l[i].name);
		free(l[i].value);
		info->labels_dropped++;
	}
	if (n > PYROSCOPE_MAX_LABEL_NAMES)
		n = PYROSCOPE_MAX_LABEL_NAMES;
	*out = l;
	*n_out = n;
	return 0;
}

/* ---- profiles ---------------------------------------------------------------------------- */

struct part {
	uint8_t *gz;
	size_t len;
	char id[ID_LEN + 1];
};

struct parts {
	struct part *v;
	size_t n;
	size_t cap;
};

/* A random (version 4) UUID: Pyroscope keys stored profiles by it. */
static void new_id(char *out)
{
	static uint64_t counter;
	uint8_t r[16];
	uint64_t x;
	size_t i, o = 0;

	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		/* no entropy yet (early boot): splitmix64 over time, pid and a counter */
		x = now_ns() ^ ((uint64_t)getpid() << 32) ^
		    __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
		for (i = 0; i < sizeof(r); i++) {
			uint64_t z = (x += 0x9e3779b97f4a7c15ull);

			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
			z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
			r[i] = (uint8_t)(z ^ (z >> 31));
		}
	}
	r[6] = (r[6] & 0x0f) | 0x40;
	r[8] = (r[8] & 0x3f) | 0x80;
	for (i = 0; i < sizeof(r); i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		o += (size_t)sprintf(out + o, "%02x", r[i]);
	}
	out[o] = 0;
}

/* The uncompressed size, from the gzip trailer (ISIZE, RFC 1952): pprofs stay far below 4 GiB. */
static size_t gzip_isize(const uint8_t *gz, size_t len)
{
	if (len < 18)
		return 0;
	return (size_t)gz[len - 4] | (size_t)gz[len - 3] << 8 | (size_t)gz[len - 2] << 16 |
	       (size_t)gz[len - 1] << 24;
}

static int parts_push(struct parts *ps, uint8_t *gz, size_t len)
{
	if (VEC_RESERVE(ps->v, ps->cap, ps->n + 1))
		return -ENOMEM;
	ps->v[ps->n].gz = gz;
	ps->v[ps->n].len = len;
	new_id(ps->v[ps->n].id);
	ps->n++;
	return 0;
}

/*
 * The profile's values of one kind (pprof_values) as gzip pprofs of consecutive sample ranges,
 * each within both limits. A range over the byte limit is re-encoded smaller, in proportion to
 * how far over it was (the tables are pruned to each range, so size follows the sample count); a
 * single sample still over it is left out and counted. A range with no value of that kind is not
 * sent. 0 or -errno.
 */
static int encode_profile(const struct profile *p, enum pprof_values which,
			  const struct limits *lim, struct parts *ps,
			  struct pyroscope_encode_info *info)
{
	size_t n = profile__sample_count(p), first = 0, guess = lim->max_samples, cnt, raw, nxt;
	size_t before = ps->n, written = 0;
	uint8_t *gz;
	size_t len;
	int err;

	while (first < n) {
		cnt = n - first < guess ? n - first : guess;
		for (;;) {
			err = pprof__encode_values(p, first, cnt, which, 1, &gz, &len, &written);
			if (err)
				return err;
			raw = gzip_isize(gz, len);
			if (raw <= lim->max_bytes)
				break;
			free(gz);
			gz = NULL;
			if (cnt == 1) {
				info->samples_too_big++;
				break;
			}
			nxt = (size_t)((double)cnt * 0.9 * (double)lim->max_bytes / (double)raw);
			cnt = nxt < 1 ? 1 : nxt >= cnt ? cnt - 1 : nxt;
			guess = cnt;
		}
		if (gz && !written) {
			free(gz);
			gz = NULL;
		}
		if (gz) {
			err = parts_push(ps, gz, len);
			if (err) {
				free(gz);
				return err;
			}
			info->samples += written;
		}
		first += cnt;
	}
	if (ps->n - before > 1)
		info->profiles_split++;
	return 0;
}

/* ---- the request ------------------------------------------------------------------------- */

struct series_out {
	struct lbl *labels;
	size_t n_labels;
	size_t first_part;	/* its parts in the batch-wide list */
	size_t n_parts;
};

static int encode_with(const struct export_batch *b, const struct limits *lim, uint8_t **out,
		       size_t *len, struct pyroscope_encode_info *info)
{
	struct pyroscope_encode_info dummy;
	struct series_out *so = NULL;
	struct parts ps = { 0 };
	Push__V1__PushRequest req = PUSH__V1__PUSH_REQUEST__INIT;
	Push__V1__RawProfileSeries *ser = NULL, **ser_p = NULL;
	Push__V1__RawSample *smp = NULL, **smp_p = NULL;
	Types__V1__LabelPair *lp = NULL, **lp_p = NULL;
	size_t i, j, n_ser = 0, n_lp = 0, at_lp = 0, size;
	uint8_t *buf;
	int err = 0;

	if (!b || !out || !len || (b->n && !b->series))
		return -EINVAL;
	if (!info)
		info = &dummy;
	memset(info, 0, sizeof(*info));
	so = calloc(2 * b->n + 1, sizeof(*so));	/* CPU, off-CPU */
	if (!so)
		return -ENOMEM;
	for (i = 0; i < 2 * b->n; i++) {
		const struct export_series *s = &b->series[i / 2];
		int off = i % 2, has_off;

		if (!s->prof || (s->n_labels && !s->labels)) {
			err = -EINVAL;
			goto free_all;
		}
		/* Off-CPU time is its own profile type in Pyroscope, in a series of its own with
		 * the same labels but __name__. */
		has_off = profile__opts(s->prof)->off_cpu;
		if (off && !has_off)
			continue;
		so[n_ser].first_part = ps.n;
		err = encode_profile(s->prof, off ? PPROF_VALUES_OFF_CPU : has_off ? PPROF_VALUES_CPU :
						    PPROF_VALUES_ALL, lim, &ps, info);
		if (err)
			goto free_all;
		so[n_ser].n_parts = ps.n - so[n_ser].first_part;
		if (!so[n_ser].n_parts) {
			info->series_empty++;	/* nothing to show; Pyroscope stores no empty profile */
			continue;
		}
		err = series_labels(s, off ? OFF_CPU_NAME : NULL, &so[n_ser].labels,
				    &so[n_ser].n_labels, info);
		if (err)
			goto free_all;
		n_lp += so[n_ser].n_labels;
		n_ser++;
	}

	ser = calloc(n_ser + 1, sizeof(*ser));
	ser_p = calloc(n_ser + 1, sizeof(*ser_p));
	smp = calloc(ps.n + 1, sizeof(*smp));
	smp_p = calloc(ps.n + 1, sizeof(*smp_p));
	lp = calloc(n_lp + 1, sizeof(*lp));
	lp_p = calloc(n_lp + 1, sizeof(*lp_p));
	if (!ser || !ser_p || !smp || !smp_p || !lp || !lp_p) {
		err = -ENOMEM;
		goto free_all;
	}
	for (i = 0; i < ps.n; i++) {
		push__v1__raw_sample__init(&smp[i]);
		smp[i].raw_profile.data = ps.v[i].gz;
		smp[i].raw_profile.len = ps.v[i].len;
		smp[i].id = ps.v[i].id;
		smp_p[i] = &smp[i];
	}
	for (i = 0; i < n_ser; i++) {
		push__v1__raw_profile_series__init(&ser[i]);
		ser[i].n_labels = so[i].n_labels;
		ser[i].labels = lp_p + at_lp;
		for (j = 0; j < so[i].n_labels; j++, at_lp++) {
			types__v1__label_pair__init(&lp[at_lp]);
			lp[at_lp].name = so[i].labels[j].name;
			lp[at_lp].value = so[i].labels[j].value;
			lp_p[at_lp] = &lp[at_lp];
		}
		ser[i].n_samples = so[i].n_parts;
		ser[i].samples = smp_p + so[i].first_part;
		ser_p[i] = &ser[i];
	}
	req.n_series = n_ser;
	req.series = ser_p;

	size = push__v1__push_request__get_packed_size(&req);
	buf = malloc(size ? size : 1);
	if (!buf) {
		err = -ENOMEM;
		goto free_all;
	}
	push__v1__push_request__pack(&req, buf);
	*out = buf;
	*len = size;
	info->series = n_ser;
	info->raw_samples = ps.n;

free_all:
	for (i = 0; so && i < n_ser; i++)
		lbls_free(so[i].labels, so[i].n_labels);
	for (i = 0; i < ps.n; i++)
		free(ps.v[i].gz);
	free(ps.v);
	free(so);
	free(ser);
	free(ser_p);
	free(smp);
	free(smp_p);
	free(lp);
	free(lp_p);
	return err;
}

int pyroscope__encode(const struct export_batch *b, uint8_t **out, size_t *len,
		      struct pyroscope_encode_info *info)
{
	const struct limits lim = { PYROSCOPE_MAX_PROFILE_BYTES, PYROSCOPE_MAX_SAMPLES };

	return encode_with(b, &lim, out, len, info);
}

/* ---- the exporter ------------------------------------------------------------------------ */

struct pyro {
	struct delivery_exporter de;	/* first: the exporter handed out */
	struct limits lim;
	struct pyroscope_encode_info totals;	/* under de.mu */
};

static void totals_add(struct pyroscope_encode_info *t, const struct pyroscope_encode_info *i)
{
	t->series += i->series;
	t->series_empty += i->series_empty;
	t->raw_samples += i->raw_samples;
	t->profiles_split += i->profiles_split;
	t->samples += i->samples;
	t->samples_too_big += i->samples_too_big;
	t->labels_renamed += i->labels_renamed;
	t->labels_truncated += i->labels_truncated;
	t->labels_dropped += i->labels_dropped;
	t->labels_added += i->labels_added;
}

static int pyro_encode(struct delivery_exporter *de, const struct export_batch *b, uint8_t **body,
		       size_t *len, uint64_t *split)
{
	struct pyro *x = (struct pyro *)de;
	struct pyroscope_encode_info info;
	int err = encode_with(b, &x->lim, body, len, &info);

	if (err)
		return err;
	pthread_mutex_lock(&de->mu);
	totals_add(&x->totals, &info);
	pthread_mutex_unlock(&de->mu);
	*split = info.profiles_split;
	if (!info.series) {	/* nothing sampled in this window */
		free(*body);
		*body = NULL;
	}
	return 0;
}

static const struct exporter_ops pyro_ops = {
	.name = "pyroscope",
	DELIVERY_EXPORTER_OPS,
};

struct exporter *pyroscope__new(const struct pyroscope_opts *o, char *err, size_t errlen)
{
	struct delivery_opts dopt;
	const char **hdrs = NULL;
	char *url = NULL, timeout_hdr[48];
	struct pyro *x = NULL;
	size_t n, i;
	int e;

	if (!o || !o->url || !*o->url) {
		if (err && errlen)
			snprintf(err, errlen, "pyroscope: no URL given");
		errno = EINVAL;
		return NULL;
	}
	n = strlen(o->url);
	while (n > 0 && o->url[n - 1] == '/')
		n--;
	x = calloc(1, sizeof(*x));
	url = malloc(n + sizeof(PUSH_PATH));
	hdrs = calloc(o->delivery.n_headers + 2, sizeof(*hdrs));
	if (!x || !url || !hdrs) {
		e = ENOMEM;
		if (err && errlen)
			snprintf(err, errlen, "pyroscope: out of memory");
		goto free_x;
	}
	memcpy(url, o->url, n);
	memcpy(url + n, PUSH_PATH, sizeof(PUSH_PATH));

	dopt = o->delivery;
	dopt.url = url;
	dopt.content_type = "application/proto";
	for (i = 0; i < o->delivery.n_headers; i++)
		hdrs[i] = o->delivery.headers[i];
	hdrs[i++] = "Connect-Protocol-Version: 1";
	/* tells the server when we stop waiting, so it can give up too */
	snprintf(timeout_hdr, sizeof(timeout_hdr), "Connect-Timeout-Ms: %u",
		 dopt.timeout_ms ? dopt.timeout_ms : 10000u);
	hdrs[i++] = timeout_hdr;
	dopt.headers = hdrs;
	dopt.n_headers = i;

	x->de.d = delivery__new(&dopt, err, errlen);	/* copies what it keeps */
	if (!x->de.d) {
		e = errno;
		goto free_x;
	}
	x->lim.max_bytes = o->max_profile_bytes ? o->max_profile_bytes : PYROSCOPE_MAX_PROFILE_BYTES;
	x->lim.max_samples = o->max_samples ? o->max_samples : PYROSCOPE_MAX_SAMPLES;
	x->de.encode = pyro_encode;
	delivery__exporter_init(&x->de, &pyro_ops);
	free(url);
	free(hdrs);
	return &x->de.ex;

free_x:
	free(x);
	free(url);
	free(hdrs);
	errno = e;
	return NULL;
}

int pyroscope__encode_totals(const struct exporter *e, struct pyroscope_encode_info *out)
{
	struct pyro *x;

	if (!e || e->ops != &pyro_ops || !out)
		return -EINVAL;
	x = e->self;
	pthread_mutex_lock(&x->de.mu);
	*out = x->totals;
	pthread_mutex_unlock(&x->de.mu);
	return 0;
}
