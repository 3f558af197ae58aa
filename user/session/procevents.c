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
	int ctx_err;	/* 0, or -errno: span-table mappings are not events (polled instead) */
};

static int on_event(void *ctx, void *data, size_t size)
{
	struct procevents *pe = ctx;

	if (size >= sizeof(struct sp_proc_event))
		pe->fn(pe->ctx, data);
	return 0;
}

/* Open and load; without_ctx: the span-table program is left out. 0 or -errno. */
static int load(struct procevents *pe, int ctx_map_fd, int without_ctx)
{
	int err;

	pe->skel = procevents_bpf__open();
	if (!pe->skel)
		return -errno;
	if (without_ctx)
		bpf_program__set_autoload(pe->skel->progs.on_shmem_mmap, false);
	if (ctx_map_fd >= 0 && (err = bpf_map__reuse_fd(pe->skel->maps.ctx_procs, ctx_map_fd)))
		return err;
	return procevents_bpf__load(pe->skel);
}

struct procevents *procevents__open(int ctx_map_fd, procevents_fn fn, void *ctx)
{
	struct procevents *pe = calloc(1, sizeof(*pe));
	const char *no_fexit = getenv("SPANPROF_NO_FEXIT");
	int err;

	if (!pe)
		return NULL;
	pe->fn = fn;
	pe->ctx = ctx;
	/*
	 * The span-table program is an fexit (a kernel without ftrace, or whose shmem has no
	 * shmem_mmap, cannot load it): then the rest goes on without it, and span tables are found
	 * by polling. Never a syscall tracepoint instead: it would slow every syscall of the node.
	 * SPANPROF_NO_FEXIT=1 takes that path on purpose (tests).
	 */
	if (no_fexit && *no_fexit == '1') {
		err = -EOPNOTSUPP;
	} else {
		err = load(pe, ctx_map_fd, 0);
		if (!err)
			goto loaded;
		procevents_bpf__destroy(pe->skel);
		pe->skel = NULL;
	}
	pe->ctx_err = err;
	if ((err = load(pe, ctx_map_fd, 1)))
		goto err_free;
loaded:
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
	struct procevents_bpf *skel = pe->skel;

	skel->links.on_exec = bpf_program__attach(skel->progs.on_exec);
	if (!skel->links.on_exec)
		return -errno;
	if (pe->ctx_err)
		return 0;
	skel->links.on_shmem_mmap = bpf_program__attach(skel->progs.on_shmem_mmap);
	if (!skel->links.on_shmem_mmap)
		pe->ctx_err = -errno;
	return 0;
}

int procevents__ctx_err(const struct procevents *pe)
{
	return pe->ctx_err;
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
