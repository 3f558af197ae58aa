/* hookproc.c: span tables of hooked processes: discovery, BPF registration, label decoding. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "hookproc.h"
#include "profile.h"
#include "proctab.h"
#include "util.h"

#define RETRY_NS	(1000 * 1000000ull)	/* first retry; doubles up to RETRY_MAX_NS */
#define RETRY_MAX_NS	(8000 * 1000000ull)
#define YOUNG_NS	(60 * 1000000000ull)

struct hook_state {
	struct spanctx_table tbl;
	struct spanctx_keys *keys;
	struct spanctx_labels dec;	/* decode scratch: labels point into it */
	int registered;
	int last_err;
	uint64_t bad_labels;	/* user labels dropped: empty, reserved or malformed names */
	uint64_t next_try_ns;
	uint32_t maps_seen;	/* p->maps_reads when the mappings were last searched */
	uint64_t retry_ns;	/* backoff: a process without a table rarely gets one later */
	char desc[160];
};

static struct hook_state *state(struct proc *p)
{
	if (!p->hook) {
		p->hook = calloc(1, sizeof(*p->hook));
		if (p->hook && !(p->hook->keys = spanctx_keys__new())) {
			free(p->hook);
			p->hook = NULL;
		}
	}
	return p->hook;
}

int hookproc__poll(struct proc *p, int ctx_map_fd)
{
	struct hook_state *h = state(p);
	struct sp_ctx_proc cp;
	uint64_t now = now_ns(), start, end;
	int err;

	if (!h)
		return -ENOMEM;
	if (h->registered)
		return 0;
	/*
	 * Mappings re-read for any reason (a symbolizer miss, a young process's check) are looked
	 * at as they come, at no I/O cost. A read of our own only on the retry timer: every second
	 * while the process is young and its startup hook is about to create the table, then backing
	 * off (an old process without a table rarely gets one).
	 */
	if (p->gone)
		return h->last_err;
	if (p->maps_reads == h->maps_seen) {
		if (now < h->next_try_ns)
			return h->last_err;
		if (proc__age_ns(p) < YOUNG_NS)
			h->retry_ns = RETRY_NS;
		else
			h->retry_ns = h->retry_ns ? h->retry_ns * 2 : RETRY_NS;
		if (h->retry_ns > RETRY_MAX_NS)
			h->retry_ns = RETRY_MAX_NS;
		h->next_try_ns = now + h->retry_ns;
		proc__read_maps(p);
	}
	h->maps_seen = p->maps_reads;
	err = spanctx__find_table(p->vmas, p->nvmas, &start, &end);
	if (!err)
		err = spanctx__open(p->pid, p->nspid, start, end, &cp, &h->tbl);
	h->last_err = err;
	switch (err) {
	case 0:
		break;
	case -ENOENT:
		snprintf(h->desc, sizeof(h->desc), "no span table (hook not loaded)");
		return err;
	case -EAGAIN:
		snprintf(h->desc, sizeof(h->desc), "span table not published yet");
		return err;
	case -EPROTONOSUPPORT:
		snprintf(h->desc, sizeof(h->desc), "span table of another hook ABI version: ignored");
		return err;
	case -EBADMSG:
		snprintf(h->desc, sizeof(h->desc), "invalid span table: ignored");
		return err;
	default:
		snprintf(h->desc, sizeof(h->desc), "span table unreadable: %s", strerror(-err));
		return err;
	}
	/* The sampler checks this against each sample, so a reused pid never reads this table. */
	cp.proc_start_ticks = p->start_ticks;
	if (bpf_map_update_elem(ctx_map_fd, &p->pid, &cp, BPF_ANY)) {
		err = -errno;
		snprintf(h->desc, sizeof(h->desc), "span table found, not registered: %s",
			 strerror(-err));
		return h->last_err = err;
	}
	spanctx_keys__load(h->keys, p->pid, &h->tbl);
	h->registered = 1;
	snprintf(h->desc, sizeof(h->desc), "span table v%u: %u slots", SP_CTX_ABI,
		 cp.slot_count);
	return 0;
}

int hookproc__pending(const struct proc *p)
{
	return !p->hook || !p->hook->registered;
}

/* Label names spanprof sets itself; a process cannot override them. */
static int reserved(const char *key)
{
	static const char *const ours[] = { "pid", "tid", "thread_name", "process_name",
					    "trace_id", "span_id", "local_root_span_id",
					    "span_name" };

	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (!strcmp(key, ours[i]))
			return 1;
	return 0;
}

/* Length of the UTF-8 character at p, or 0 for a control character or a malformed sequence. */
static int utf8_char(const unsigned char *p)
{
	int n = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 :
		(*p & 0xf8) == 0xf0 ? 4 : 0;

	if (n == 1 && (*p < 0x20 || *p == 0x7f))
		return 0;
	for (int i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

static int utf8_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int n;

	for (; *p; p += n)
		if (!(n = utf8_char(p)))
			return 0;
	return 1;
}

/* pprof strings are UTF-8: replace what is not (and control characters) with '?', in place. */
static void clean_utf8(char *s)
{
	unsigned char *p = (unsigned char *)s;
	int n;

	while (*p) {
		if (!(n = utf8_char(p)))
			*p++ = '?';
		else
			p += n;
	}
}

int hookproc__labels(struct proc *p, const uint8_t *rec, size_t len, int pyroscope,
		     struct pf_label *out, size_t max)
{
	struct hook_state *h = p->hook;
	struct spanctx_labels *d;
	size_t n = 0;
	int err;

	if (!h)
		return -ENOENT;
	d = &h->dec;
	err = spanctx__decode(rec, len, h->keys, d);
	if (!err && d->unknown_keys && !p->gone) {
		/* A key published after we last looked: read the key table again. */
		spanctx_keys__load(h->keys, p->pid, &h->tbl);
		err = spanctx__decode(rec, len, h->keys, d);
	}
	if (err)
		return err;
#define ADD(k, v)                                               \
	do {                                                    \
		if (n < max)                                    \
			out[n++] = (struct pf_label){ (k), (v) }; \
	} while (0)
	if (!d->has_span) {
		/* user labels only (a label scope outside any span) */
	} else if (pyroscope) {
		/* Pyroscope links a trace to its profile through the local root span id. */
		ADD("span_id", d->local_root_span_id[0] ? d->local_root_span_id : d->span_id);
	} else {
		ADD("trace_id", d->trace_id);
		ADD("span_id", d->span_id);
		if (d->local_root_span_id[0])
			ADD("local_root_span_id", d->local_root_span_id);
	}
	if (d->has_span && d->span_name[0]) {
		clean_utf8(d->span_name);
		ADD("span_name", d->span_name);
	}
	for (uint32_t i = 0; i < d->n_labels; i++) {
		const char *key = d->labels[i].key;

		/* Names come from the process: never empty, never one of ours. */
		if (!key || !key[0] || reserved(key) || !utf8_ok(key)) {
			h->bad_labels++;
			continue;
		}
		clean_utf8(d->labels[i].value);
		ADD(key, d->labels[i].value);
	}
#undef ADD
	return n;
}

void hookproc__describe(const struct proc *p, char *buf, size_t len)
{
	const struct hook_state *h = p->hook;

	if (!h || !h->desc[0]) {
		snprintf(buf, len, "%s", "");
		return;
	}
	if (h->bad_labels)
		snprintf(buf, len, "; %s, %" PRIu64 " user labels dropped (empty, reserved or "
			 "malformed names)", h->desc, h->bad_labels);
	else
		snprintf(buf, len, "; %s", h->desc);
}

void hookproc__detach(struct proc *p)
{
	if (!p->hook)
		return;
	spanctx_keys__free(p->hook->keys);
	free(p->hook);
	p->hook = NULL;
}
