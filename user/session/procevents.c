/* procevents.c: load and attach bpf/procevents.bpf.c, hand its ring buffer's events over. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfsession.h"
#include "procevents.h"
#include "procevents.skel.h"

const char *const sp_ev_counter_names[SP_EV_CNT__MAX] = {
#define SP_EV_COUNTER_NAME(id, name, help) [SP_EV_CNT_##id] = name,
	SP_EV_COUNTERS(SP_EV_COUNTER_NAME)
#undef SP_EV_COUNTER_NAME
};

const char *const sp_ev_counter_help[SP_EV_CNT__MAX] = {
#define SP_EV_COUNTER_HELP(id, name, help) [SP_EV_CNT_##id] = help,
	SP_EV_COUNTERS(SP_EV_COUNTER_HELP)
#undef SP_EV_COUNTER_HELP
};

struct procevents {
	struct procevents_bpf *skel;
	struct ring_buffer *rb;
	procevents_fn fn;
	void *ctx;
};

static int on_event(void *ctx, void *data, size_t size)
{
	struct procevents *pe = ctx;

	if (size >= sizeof(struct sp_proc_event))
		pe->fn(pe->ctx, data);
	return 0;
}

struct procevents *procevents__open(int ctx_map_fd, procevents_fn fn, void *ctx)
{
	struct procevents *pe = calloc(1, sizeof(*pe));
	int err;

	if (!pe)
		return NULL;
	pe->fn = fn;
	pe->ctx = ctx;
	pe->skel = procevents_bpf__open();
	if (!pe->skel) {
		err = -errno;
		goto err_free;
	}
	if (ctx_map_fd >= 0 && (err = bpf_map__reuse_fd(pe->skel->maps.ctx_procs, ctx_map_fd)))
		goto err_free;
	if ((err = procevents_bpf__load(pe->skel)))
		goto err_free;
	pe->rb = ring_buffer__new(bpf_map__fd(pe->skel->maps.events), on_event, pe, NULL);
	if (!pe->rb) {
		err = -errno;
		goto err_free;
	}
	return pe;

err_free:
	procevents__free(pe);
	errno = err < 0 ? -err : EINVAL;
	return NULL;
}

int procevents__attach(struct procevents *pe)
{
	int err = procevents_bpf__attach(pe->skel);

	return err < 0 ? err : 0;
}

int procevents__fd(const struct procevents *pe)
{
	return ring_buffer__epoll_fd(pe->rb);
}

int procevents__consume(struct procevents *pe)
{
	int err = ring_buffer__consume(pe->rb);

	return err < 0 ? err : 0;
}

int procevents__counters(const struct procevents *pe, uint64_t out[SP_EV_CNT__MAX])
{
	return bpf_counters__sum(pe->skel->maps.counters, SP_EV_CNT__MAX, out);
}

void procevents__free(struct procevents *pe)
{
	if (!pe)
		return;
	ring_buffer__free(pe->rb);
	procevents_bpf__destroy(pe->skel);
	free(pe);
}
