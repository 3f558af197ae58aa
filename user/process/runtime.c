/* runtime.c: the runtime registry and the one attach / poll / backoff policy for all runtimes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proctab.h"
#include "runtime.h"
#include "util.h"

/* The runtimes of a process: its session's registry (none without an env). */
#define OPS(p, id) ((p)->env && (p)->env->runtimes ? (p)->env->runtimes[id] : NULL)

static int attach(struct proc *p, int id)
{
	struct rt_instance *in = &p->rt[id];

	if (!in->state)
		in->state = OPS(p, id)->attach(p, p->env);
	if (in->state)
		in->next_poll_ns = 0;	/* due now */
	return in->state ? 0 : -ENOMEM;
}

void runtime__maps_changed(struct proc *p)
{
	for (int id = 0; id < RT__MAX; id++) {
		const struct runtime_ops *ops = OPS(p, id);
		struct rt_instance *in = &p->rt[id];

		if (!ops)
			continue;
		if (!in->detected && ops->detect(p))
			in->detected = 1;
		if (!in->detected)
			continue;
		if (!in->state) {
			if (!in->detached)
				attach(p, id);
			continue;
		}
		if (ops->maps_changed)
			ops->maps_changed(p, in->state);
		/* A runtime that was waiting may find what it waited for in the new mappings. */
		if (in->last != RT_READY)
			in->next_poll_ns = 0;
	}
}

/* An idle process's runtimes that ask for it, at the slowest poll pace. */
static void poll_idle(struct proc *p, uint64_t now)
{
	for (int id = 0; id < RT__MAX; id++) {
		struct rt_instance *in = &p->rt[id];

		if (!in->state || !OPS(p, id) || !OPS(p, id)->idle_poll || now < in->next_poll_ns)
			continue;
		OPS(p, id)->idle_poll(p, in->state, p->env);
		in->next_poll_ns = now + RUNTIME_BACKOFF_MAX_NS;
	}
}

void runtime__poll(struct proc *p, uint64_t now)
{
	/* Idle long enough to have its mappings freed (proc__release_maps): not looked at until its
	 * next sample or process event reads them again and wakes its runtimes. */
	if (p->maps_released) {
		poll_idle(p, now);
		return;
	}
	for (int id = 0; id < RT__MAX; id++) {
		struct rt_instance *in = &p->rt[id];

		if (!in->state && in->detected && !in->detached && attach(p, id))
			continue;
		if (!in->state || now < in->next_poll_ns)
			continue;
		in->last = OPS(p, id)->poll(p, in->state, p->env);
		switch (in->last) {
		case RT_READY:
			in->backoff_ns = 0;
			in->next_poll_ns = 0;
			break;
		case RT_DONE:
			in->backoff_ns = 0;
			in->next_poll_ns = UINT64_MAX;	/* until the mappings change */
			break;
		default:	/* RT_WAIT or a failure: back off, but not while the process starts up */
			if (proc__age_ns(p) < RUNTIME_YOUNG_NS || !in->backoff_ns)
				in->backoff_ns = RUNTIME_BACKOFF_MIN_NS;
			else if ((in->backoff_ns *= 2) > RUNTIME_BACKOFF_MAX_NS)
				in->backoff_ns = RUNTIME_BACKOFF_MAX_NS;
			in->next_poll_ns = now + in->backoff_ns;
			break;
		}
	}
}

void runtime__wake(struct proc *p)
{
	for (int id = 0; id < RT__MAX; id++)
		if (p->rt[id].state && p->rt[id].next_poll_ns != UINT64_MAX)
			p->rt[id].next_poll_ns = 0;
}

int runtime__claims(const struct proc *p, uint64_t addr, int in_file)
{
	for (int id = 0; id < RT__MAX; id++)
		if (p->rt[id].state && OPS(p, id)->claims &&
		    OPS(p, id)->claims(p, p->rt[id].state, addr, in_file))
			return 1;
	return 0;
}

int runtime__symbolize(struct proc *p, uint64_t addr, uint64_t time_ns, struct rt_symbol *out)
{
	for (int id = 0; id < RT__MAX; id++)
		if (p->rt[id].state && OPS(p, id)->symbolize &&
		    OPS(p, id)->symbolize(p, p->rt[id].state, addr, time_ns, out) == 0)
			return 0;
	return -ENOENT;
}

void runtime__prefetch(struct proc *p, const uint64_t *addrs, size_t n)
{
	for (int id = 0; id < RT__MAX; id++)
		if (p->rt[id].state && OPS(p, id)->prefetch)
			OPS(p, id)->prefetch(p, p->rt[id].state, addrs, n);
}

int runtime__copy_of(struct proc *p, uint64_t addr, uint64_t *orig)
{
	for (int id = 0; id < RT__MAX; id++)
		if (p->rt[id].state && OPS(p, id)->copy_of &&
		    OPS(p, id)->copy_of(p, p->rt[id].state, addr, orig) == 0)
			return 0;
	return -ENOENT;
}

void *runtime__state(const struct proc *p, enum runtime_id id)
{
	return id < RT__MAX ? p->rt[id].state : NULL;
}

int runtime__has(const struct proc *p, enum runtime_id id)
{
	return id < RT__MAX && p->rt[id].detected;
}

void runtime__release_idle(const struct runtime_env *env, uint64_t now_ns)
{
	if (!env->runtimes)
		return;
	for (int id = 0; id < RT__MAX; id++)
		if (env->runtimes[id] && env->runtimes[id]->release_idle)
			env->runtimes[id]->release_idle(now_ns, env->idle_release_ns);
}

void runtime__describe(const struct proc *p, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (int id = 0; id < RT__MAX && off < len; id++) {
		char one[RUNTIME_DESC_MAX];

		if (p->rt[id].last_desc)
			snprintf(one, sizeof(one), "%s", p->rt[id].last_desc);
		else if (!p->rt[id].state || !OPS(p, id)->describe)
			continue;
		else
			OPS(p, id)->describe(p, p->rt[id].state, one, sizeof(one));
		if (one[0])
			off += snprintf(buf + off, len - off, "%s%s", off ? "; " : "", one);
	}
}

void runtime__detach_all(struct proc *p)
{
	for (int id = RT__MAX - 1; id >= 0; id--) {
		struct rt_instance *in = &p->rt[id];
		int detected = in->detected;
		char one[RUNTIME_DESC_MAX], *desc = in->last_desc;

		if (in->state) {
			if (OPS(p, id)->describe && !desc) {
				OPS(p, id)->describe(p, in->state, one, sizeof(one));
				desc = strdup(one);
			}
			OPS(p, id)->detach(p, in->state, p->env);
		}
		memset(in, 0, sizeof(*in));
		in->detected = detected;
		in->last_desc = desc;
		in->detached = 1;
	}
}

void runtime__release(struct proc *p)
{
	for (int id = 0; id < RT__MAX; id++) {
		free(p->rt[id].last_desc);
		p->rt[id].last_desc = NULL;
	}
}
