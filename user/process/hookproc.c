/* hookproc.c: the span-table runtime (runtime.h): discovery of the hook's table, BPF
 * registration, label decoding. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "hookproc.h"
#include "profile.h"
#include "proctab.h"
#include "runtime.h"
#include "utf8.h"
#include "util.h"

struct hook_state {
	struct spanctx_table tbl;
	struct spanctx_keys *keys;
	int registered;
	struct sp_ctx_proc cp;	/* as registered */
	uint64_t evicted;	/* the sampler's LRU map dropped it: registered again */
	uint64_t next_refresh_ns;
	int last_err;
	uint64_t bad_labels;	/* user labels dropped: empty, reserved or malformed names */
	char desc[160];
};

/* The one decode buffer (8.8 KB: too much to keep per hooked process). Records are decoded on
 * the engine's thread only, one sample at a time, and the labels pointing into it are used
 * before the next (hookproc.h). */
static struct spanctx_labels dec;

/* A .NET process may load the hook at any time; any process that maps a table is looked at. */
static int detect(const struct proc *p)
{
	uint64_t start, end;

	return runtime__has(p, RT_DOTNET) || spanctx__find_table(p->vmas, p->nvmas, &start, &end) == 0;
}

static void *attach(struct proc *p, const struct runtime_env *env)
{
	struct hook_state *h = calloc(1, sizeof(*h));

	if (h && !(h->keys = spanctx_keys__new())) {
		free(h);
		h = NULL;
	}
	return h;
}

/*
 * Every change to the sampler's span-table map goes through these two: the off-CPU program keeps
 * each thread's table in the thread's own record and looks it up again only after the map's
 * generation moves (bpf/profiler.h SP_GEN_*), so each change moves it, after the change.
 */
static int ctx_map_put(const struct runtime_env *env, uint32_t pid, const struct sp_ctx_proc *cp,
		       uint64_t flags)
{
	if (bpf_map_update_elem(env->ctx_map_fd, &pid, cp, flags))
		return -errno;
	if (env->ctx_gen)
		__atomic_fetch_add(env->ctx_gen, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static void ctx_map_del(const struct runtime_env *env, uint32_t pid)
{
	if (!bpf_map_delete_elem(env->ctx_map_fd, &pid) && env->ctx_gen)
		__atomic_fetch_add(env->ctx_gen, 1, __ATOMIC_SEQ_CST);
}

/* Find the table in the current mappings, validate it and register it with the sampler. */
static int find_and_register(struct proc *p, struct hook_state *h, const struct runtime_env *env)
{
	struct sp_ctx_proc cp;
	uint64_t start, end;
	int err;

	err = spanctx__find_table(p->vmas, p->nvmas, &start, &end);
	if (!err)
		err = spanctx__open(p->dir_fd, p->nspid, start, end, &cp, &h->tbl);
	h->last_err = err;
	/* A table refused (bad header, another pid, another ABI) is not read by the sampler either.
	 * Not on -ENOENT: the maps as last read can predate the table; a process that announces a
	 * valid header outside its memfd is read as it announced, as its own records are. */
	if (err && err != -ENOENT && err != -EAGAIN)
		hookproc__unregister_early(env, p->pid, p->start_ticks);
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
	if ((err = ctx_map_put(env, p->pid, &cp, BPF_ANY))) {
		snprintf(h->desc, sizeof(h->desc), "span table found, not registered: %s%s",
			 strerror(-err), err == -E2BIG ? " (too many hooked processes)" : "");
		return h->last_err = err;
	}
	spanctx_keys__load(h->keys, p->dir_fd, &h->tbl);
	h->cp = cp;
	h->registered = 1;
	snprintf(h->desc, sizeof(h->desc), "span table v%u: %u slots", SP_CTX_ABI,
		 cp.slot_count);
	return 0;
}

/*
 * The sampler registers an announced table itself (bpf/procevents.bpf.c register_at_once) before
 * user space has looked at it: an entry of that process (same start time) that user space does not
 * accept goes, whatever its address.
 */
void hookproc__unregister_early(const struct runtime_env *env, uint32_t pid, uint64_t start_ticks)
{
	struct sp_ctx_proc cur;

	if (env && env->ctx_map_fd >= 0 && bpf_map_lookup_elem(env->ctx_map_fd, &pid, &cur) == 0 &&
	    cur.proc_start_ticks == start_ticks)
		ctx_map_del(env, pid);
}

/*
 * The mappings as last read are searched first, at no I/O cost; only when the table is not
 * there are they read again, at the pace of the runtime backoff (every RUNTIME_BACKOFF_MIN_NS
 * while the process is young and its startup hook is about to create the table).
 */
static int poll(struct proc *p, void *state, const struct runtime_env *env)
{
	struct hook_state *h = state;
	int err;

	if (h->registered)
		return RT_DONE;
	if (p->gone)
		return RT_DONE;
	err = find_and_register(p, h, env);
	if (err && !proc__refresh_maps(p, RUNTIME_BACKOFF_MIN_NS))
		err = find_and_register(p, h, env);
	if (!err)
		return RT_DONE;
	return err == -ENOENT || err == -EAGAIN ? RT_WAIT : err;
}

int hookproc__registered(const struct proc *p)
{
	const struct hook_state *h = runtime__state(p, RT_SPANCTX);

	return h && h->registered;
}

/*
 * The sampler's map is an LRU: with more hooked processes than it holds, those not sampled for
 * the longest make room. A sample of a registered process that found no entry puts it back, at
 * most every 100 ms (each time counted and reported): a busy process evicted again soon after
 * (processes registering host-wide; the LRU's per-CPU lists evict before the map is full) loses
 * the spans of at most that much of its samples (once a second cost the Native AOT SpanService 7
 * in-span samples, 3 %, in spans.sh's crowd case). One map update costs microseconds.
 */
#define REFRESH_NS 100000000ull
int hookproc__evicted(struct proc *p, uint64_t now_ns)
{
	struct hook_state *h = runtime__state(p, RT_SPANCTX);
	int err;

	if (!h || !h->registered || p->gone || !p->env || p->env->ctx_map_fd < 0 ||
	    now_ns < h->next_refresh_ns)
		return 0;
	h->next_refresh_ns = now_ns + REFRESH_NS;
	/* Samples taken before the last put-back can come later: one already back is no eviction. */
	if ((err = ctx_map_put(p->env, p->pid, &h->cp, BPF_NOEXIST)))
		return err == -EEXIST ? 0 : err;
	h->evicted++;
	return 1;
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

int hookproc__labels(struct proc *p, const uint8_t *rec, size_t len, int pyroscope,
		     struct pf_label *out, size_t max)
{
	struct hook_state *h = runtime__state(p, RT_SPANCTX);
	struct spanctx_labels *d = &dec;
	const struct spanctx_labels_head *dh = &d->head;
	size_t n = 0;
	int err;

	if (!h)
		return -ENOENT;
	err = spanctx__decode(rec, len, h->keys, d);
	if (!err && dh->unknown_keys && !p->gone) {
		/* A key published after we last looked: read the key table again. */
		spanctx_keys__load(h->keys, p->dir_fd, &h->tbl);
		err = spanctx__decode(rec, len, h->keys, d);
	}
	if (err)
		return err;
#define ADD_AS(k, v, id)                                                \
	do {                                                            \
		if (n < max)                                            \
			out[n++] = (struct pf_label){ (k), (v), (id) };	\
	} while (0)
#define ADD(k, v)    ADD_AS(k, v, 0)
#define ADD_ID(k, v) ADD_AS(k, v, 1)	/* new for every span: dropped first past the cap */
	if (!dh->has_span) {
		/* user labels only (a label scope outside any span) */
	} else if (pyroscope) {
		/* Pyroscope links a trace to its profile through the local root span id. */
		ADD_ID("span_id", dh->local_root_span_id[0] ? dh->local_root_span_id : dh->span_id);
	} else {
		ADD_ID("trace_id", dh->trace_id);
		ADD_ID("span_id", dh->span_id);
		if (dh->local_root_span_id[0])
			ADD_ID("local_root_span_id", dh->local_root_span_id);
	}
	/* pprof strings are UTF-8: what is not (and control characters) becomes '?', in place. */
	if (dh->has_span && dh->span_name_len && d->span_name[0]) {
		utf8__repair(d->span_name, strlen(d->span_name), UTF8_NO_CONTROL);
		ADD("span_name", d->span_name);
	}
	for (uint32_t i = 0; i < dh->n_labels; i++) {
		const char *key = d->labels[i].key;

		/* Names come from the process: never empty, never one of ours. */
		if (!key || !key[0] || reserved(key) ||
		    !utf8__valid(key, strlen(key), UTF8_NO_CONTROL)) {
			h->bad_labels++;
			continue;
		}
		utf8__repair(d->labels[i].value, strlen(d->labels[i].value), UTF8_NO_CONTROL);
		ADD(key, d->labels[i].value);
	}
#undef ADD_ID
#undef ADD
#undef ADD_AS
	return n;
}

static void describe(const struct proc *p, const void *state, char *buf, size_t len)
{
	const struct hook_state *h = state;
	struct spanctx_table t;
	struct sp_ctx_proc cp;
	size_t n;

	snprintf(buf, len, "%s", h->desc);
	n = strlen(buf);
	/* The hook's own count of threads that found no slot, as the table says now. */
	if (h->registered && !p->gone && p->dir_fd >= 0 &&
	    !spanctx__open(p->dir_fd, p->nspid, h->tbl.map_start, h->tbl.map_end, &cp, &t) &&
	    t.slots_full)
		n += snprintf(buf + n, n < len ? len - n : 0, ", %" PRIu64 " threads without a slot "
			      "(table full)", t.slots_full);
	if (h->bad_labels && n < len)
		n += snprintf(buf + n, len - n, ", %" PRIu64 " user labels dropped (empty, reserved or "
			      "malformed names)", h->bad_labels);
	if (h->evicted && n < len)
		n += snprintf(buf + n, len - n, ", registered again %" PRIu64 " times (the sampler's "
			      "table of span tables was full: samples before each unlabelled)", h->evicted);
	if (spanctx_keys__bad(h->keys) && n < len)
		snprintf(buf + n, len - n, ", %u malformed key names", spanctx_keys__bad(h->keys));
}

static void detach(struct proc *p, void *state, const struct runtime_env *env)
{
	struct hook_state *h = state;

	/* A later process with this pid must not inherit the entry (nor fill the map). After an
	 * exec the entry may already be the new program's table: only ours goes. */
	if (h->registered && env && env->ctx_map_fd >= 0) {
		struct sp_ctx_proc cur;

		if (bpf_map_lookup_elem(env->ctx_map_fd, &p->pid, &cur) == 0 &&
		    cur.slots_addr == h->cp.slots_addr && cur.proc_start_ticks == p->start_ticks)
			ctx_map_del(env, p->pid);
	} else if (env && p->gone) {
		/* The sampler's own entry (register_at_once) of a process that exited before user
		 * space registered its table. */
		hookproc__unregister_early(env, p->pid, p->start_ticks);
	}
	spanctx_keys__free(h->keys);
	free(h);
}

const struct runtime_ops spanctx_runtime = {
	.name = "spanctx",
	.detect = detect,
	.attach = attach,
	.poll = poll,
	.describe = describe,
	.detach = detach,
};
