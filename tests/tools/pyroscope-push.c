/* pyroscope-push.c: test driver: builds a small synthetic span-labelled profile, pushes it with
 * the Pyroscope exporter (encoder + delivery) and prints what it sent and the exporter's counters. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "profile.h"
#include "push/v1/push.pb-c.h"
#include "pyroscope.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: pyroscope-push --url BASE [options]\n"
		"  --service NAME      service_name of the series (default checkout)\n"
		"  --no-name           leave __name__ out (the encoder must add process_cpu)\n"
		"  --samples N         distinct samples (default 200); over 16000 splits the profile\n"
		"  --spans K           span ids used by the samples, every third sample has none (default 4)\n"
		"  --tenant T          X-Scope-OrgID\n"
		"  --timeout-ms N      per attempt (default 2000)\n"
		"  --backoff-ms N      first retry delay (default 100)\n"
		"  --deadline-ms N     retry deadline (default 10000)\n"
		"  --flush-ms N        how long to wait for delivery (default 15000)\n"
		"  --dump DIR          also write each encoded RawSample as DIR/part-N.pb.gz\n"
		"prints one JSON object: what was built and the exporter's counters\n"
		"exit: 0 delivered, 1 not delivered, 2 usage or setup error\n");
}

/* Samples i = 0..n-1: main -> handler<i % 13> -> leaf<i % 5>, label "i" (all distinct), span
 * s<i % k> on two samples in three, count 1 + i % 4. Totals per span into span_total. */
static struct profile *build(size_t n, size_t k, uint64_t *total, uint64_t *span_total,
			     size_t *with_span)
{
	struct profile_opts po = { .period_ns = 10101010, .time_ns = 0, .duration_ns = 15000000000LL };
	struct profile *p;
	uint32_t f_main, locs[3];
	char ibuf[24], span[17], name[48];
	size_t i;

	po.time_ns = (int64_t)time(NULL) * 1000000000LL;	/* recent: Pyroscope refuses old */
	p = profile__new(&po);
	if (!p)
		return NULL;
	f_main = profile__function(p, "main", NULL, "app.c");
	*total = 0;
	*with_span = 0;
	for (i = 0; i < n; i++) {
		struct pf_label l[2] = { { "i", ibuf, 0 }, { "span_id", span, 0 } };
		uint64_t count = 1 + i % 4;
		int has_span = k && i % 3 != 2;

		snprintf(ibuf, sizeof(ibuf), "%zu", i);
		snprintf(span, sizeof(span), "%016zx", k ? 0xa000 + i % k : 0);
		locs[2] = profile__location(p, 0, 0x1000, f_main);
		snprintf(name, sizeof(name), "[App] Shop.Handler%zu::Run()", i % 13);
		locs[1] = profile__location(p, 0, 0x2000 + i % 13, profile__function(p, name, NULL, NULL));
		snprintf(name, sizeof(name), "leaf%zu", i % 5);
		locs[0] = profile__location(p, 0, 0x3000 + i % 5, profile__function(p, name, NULL, NULL));
		if (profile__add(p, locs, 3, l, has_span ? 2 : 1, count)) {
			profile__free(p);
			return NULL;
		}
		*total += count;
		if (has_span) {
			span_total[i % k] += count;
			(*with_span)++;
		}
	}
	return p;
}

static int dump(const struct export_batch *b, const char *dir)
{
	Push__V1__PushRequest *req;
	uint8_t *buf;
	size_t len, i, j, k = 0;
	char path[4096];
	FILE *f;
	int err;

	err = pyroscope__encode(b, &buf, &len, NULL);
	if (err)
		return err;
	req = push__v1__push_request__unpack(NULL, len, buf);
	free(buf);
	if (!req)
		return -EIO;
	mkdir(dir, 0755);
	for (i = 0; i < req->n_series; i++) {
		for (j = 0; j < req->series[i]->n_samples; j++, k++) {
			ProtobufCBinaryData *r = &req->series[i]->samples[j]->raw_profile;

			snprintf(path, sizeof(path), "%s/part-%zu.pb.gz", dir, k);
			f = fopen(path, "w");
			if (!f || fwrite(r->data, 1, r->len, f) != r->len || fclose(f)) {
				push__v1__push_request__free_unpacked(req, NULL);
				return -EIO;
			}
		}
	}
	push__v1__push_request__free_unpacked(req, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "url", required_argument, NULL, 'u' }, { "service", required_argument, NULL, 's' },
		{ "no-name", no_argument, NULL, 'N' }, { "samples", required_argument, NULL, 'n' },
		{ "spans", required_argument, NULL, 'k' }, { "tenant", required_argument, NULL, 't' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "backoff-ms", required_argument, NULL, 'b' },
		{ "deadline-ms", required_argument, NULL, 'D' },
		{ "flush-ms", required_argument, NULL, 'f' }, { "dump", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' }, { 0 } };
	const char *url = NULL, *service = "checkout", *tenant = NULL, *dump_dir = NULL;
	unsigned long n = 200, k = 4, timeout = 2000, backoff = 100, deadline = 10000, flush = 15000;
	int no_name = 0, c, rc, flushed;
	struct pf_label labels[3];
	size_t n_labels = 0, with_span, i;
	uint64_t total, *span_total;
	struct pyroscope_opts o = { 0 };
	struct pyroscope_encode_info info;
	struct export_series es;
	struct export_batch batch;
	struct export_stats st;
	struct exporter *e;
	struct profile *p;
	char err[256];

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'u': url = optarg; break;
		case 's': service = optarg; break;
		case 'N': no_name = 1; break;
		case 'n': n = strtoul(optarg, NULL, 10); break;
		case 'k': k = strtoul(optarg, NULL, 10); break;
		case 't': tenant = optarg; break;
		case 'T': timeout = strtoul(optarg, NULL, 10); break;
		case 'b': backoff = strtoul(optarg, NULL, 10); break;
		case 'D': deadline = strtoul(optarg, NULL, 10); break;
		case 'f': flush = strtoul(optarg, NULL, 10); break;
		case 'd': dump_dir = optarg; break;
		default: usage(); return c == 'h' ? 0 : 2;
		}
	}
	if (!url || optind != argc) {
		usage();
		return 2;
	}
	span_total = calloc(k + 1, sizeof(*span_total));
	p = span_total ? build(n, k, &total, span_total, &with_span) : NULL;
	if (!p) {
		fprintf(stderr, "pyroscope-push: cannot build the profile: %s\n", strerror(errno));
		return 2;
	}
	labels[n_labels++] = (struct pf_label){ "service_name", service, 0 };
	labels[n_labels++] = (struct pf_label){ "k8s.namespace", "shop", 0 };	/* renamed to _ */
	if (!no_name)
		labels[n_labels++] = (struct pf_label){ "__name__", "process_cpu", 0 };
	es = (struct export_series){ labels, n_labels, p };
	batch = (struct export_batch){ 0, 0, &es, 1 };
	if (dump_dir && (rc = dump(&batch, dump_dir))) {
		fprintf(stderr, "pyroscope-push: dump to %s: %s\n", dump_dir, strerror(-rc));
		return 2;
	}

	o.url = url;
	o.delivery.tenant = tenant;
	o.delivery.timeout_ms = (uint32_t)timeout;
	o.delivery.backoff_min_ms = (uint32_t)backoff;
	o.delivery.backoff_max_ms = (uint32_t)(backoff * 8);
	o.delivery.retry_deadline_ms = (uint32_t)deadline;
	e = pyroscope__new(&o, err, sizeof(err));
	if (!e) {
		fprintf(stderr, "pyroscope-push: %s\n", err);
		return 2;
	}
	rc = e->ops->export(e->self, &batch);
	flushed = e->ops->flush(e->self, (uint32_t)flush);
	e->ops->stats(e->self, &st);
	pyroscope__encode_totals(e, &info);

	printf("{\"export\": %d, \"flush\": %d, \"samples\": %zu, \"withSpan\": %zu, \"total\": %llu, "
	       "\"spans\": {", rc, flushed, profile__sample_count(p), with_span,
	       (unsigned long long)total);
	for (i = 0; i < k; i++)
		printf("%s\"%016zx\": %llu", i ? ", " : "", (size_t)(0xa000 + i),
		       (unsigned long long)span_total[i]);
	printf("}, \"rawSamples\": %zu, \"split\": %llu, \"batches\": %llu, \"sent_ok\": %llu, "
	       "\"retried\": %llu, \"failed\": %llu, \"dropped_queue_full\": %llu, "
	       "\"dropped_shutdown\": %llu, \"dropped_expired\": %llu, \"dropped_encode\": %llu, "
	       "\"bytes_sent\": %llu, \"last_latency_ms\": %.1f}\n",
	       info.raw_samples, (unsigned long long)st.split, (unsigned long long)st.batches,
	       (unsigned long long)st.sent_ok, (unsigned long long)st.retried,
	       (unsigned long long)st.failed, (unsigned long long)st.dropped_queue_full,
	       (unsigned long long)st.dropped_shutdown, (unsigned long long)st.dropped_expired,
	       (unsigned long long)st.dropped_encode, (unsigned long long)st.bytes_sent,
	       (double)st.last_latency_ns / 1e6);
	e->ops->free(e->self);
	profile__free(p);
	free(span_total);
	return st.sent_ok ? 0 : 1;
}
