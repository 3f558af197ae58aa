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
	enum procevents_ctx_src src;	/* where span-table events come from */
	int ctx_err;	/* with PE_CTX_NONE: -errno, why the last source could not load */
};

static int on_event(void *ctx, void *data, size_t size)
{
	struct procevents *pe = ctx;

	if (size >= sizeof(struct sp_proc_event))
		pe->fn(pe->ctx, data);
	return 0;
}

static struct bpf_program *ctx_prog(struct procevents_bpf *skel, enum procevents_ctx_src src)
{
	return src == PE_CTX_PRCTL ? skel->progs.on_prctl_unknown
	     : src == PE_CTX_FEXIT ? skel->progs.on_shmem_mmap : NULL;
}

/* Open and load with one span-table source (PE_CTX_NONE: none). 0 or -errno. */
static int load(struct procevents *pe, int ctx_map_fd, int gens_fd, enum procevents_ctx_src src)
{
	int err;

	pe->skel = procevents_bpf__open();
	if (!pe->skel)
		return -errno;
	for (int s = PE_CTX_PRCTL; s < PE_CTX_NONE; s++)
		bpf_program__set_autoload(ctx_prog(pe->skel, s), s == (int)src);
	if (ctx_map_fd >= 0 && (err = bpf_map__reuse_fd(pe->skel->maps.ctx_procs, ctx_map_fd)))
		return err;
	if (gens_fd >= 0 && (err = bpf_map__reuse_fd(pe->skel->maps.gens, gens_fd)))
		return err;
	return procevents_bpf__load(pe->skel);
}

struct procevents *procevents__open(int ctx_map_fd, int gens_fd, procevents_fn fn, void *ctx)
{
	struct procevents *pe = calloc(1, sizeof(*pe));
#ifdef SPANPROF_TEST_BUILD
	const char *test = getenv("SPANPROF_TEST_CTX_EVENTS");
#else
	const char *test = NULL;
#endif
	int err = 0, s;

	if (!pe)
		return NULL;
	pe->fn = fn;
	pe->ctx = ctx;
	/*
	 * The span-table sources in order (procevents.bpf.c): the hook's prctl announcement
	 * (task_prctl_unknown, Linux 6.13+), then fexit on shmem_mmap (needs ftrace trampolines);
	 * a kernel that loads neither gets the rest without them, and span tables are polled. Never
	 * a syscall tracepoint: it would slow every syscall of the node.
	 * SPANPROF_TEST_CTX_EVENTS=none|fexit starts further down the list (build/spanprof-test
	 * only: a shipped binary never reads it).
	 */
	s = !test ? PE_CTX_PRCTL : !strcmp(test, "fexit") ? PE_CTX_FEXIT : PE_CTX_NONE;
	if (s == PE_CTX_NONE)
		err = -EOPNOTSUPP;
	for (;; s++) {
		int rc = load(pe, ctx_map_fd, gens_fd, s);

		if (!rc)
			break;
		procevents_bpf__destroy(pe->skel);
		pe->skel = NULL;
		if (s == PE_CTX_NONE) {
			err = rc;
			goto err_free;
		}
		err = rc;
	}
	pe->src = s;
	pe->ctx_err = s == PE_CTX_NONE ? err : 0;
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
	struct bpf_program *prog = ctx_prog(skel, pe->src);

	skel->links.on_exec = bpf_program__attach(skel->progs.on_exec);
	if (!skel->links.on_exec)
		return -errno;
	if (!prog)
		return 0;
	if (pe->src == PE_CTX_PRCTL)
		skel->links.on_prctl_unknown = bpf_program__attach(prog);
	else
		skel->links.on_shmem_mmap = bpf_program__attach(prog);
	if (!skel->links.on_prctl_unknown && !skel->links.on_shmem_mmap) {
		pe->ctx_err = -errno;
		pe->src = PE_CTX_NONE;
	}
	return 0;
}

enum procevents_ctx_src procevents__ctx_src(const struct procevents *pe)
{
	return pe->src;
}

const char *procevents__ctx_src_name(enum procevents_ctx_src src)
{
	return src == PE_CTX_PRCTL ? "the hook's prctl announcement (tracepoint task_prctl_unknown)"
	     : src == PE_CTX_FEXIT ? "fexit on shmem_mmap" : "none";
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
