/* procident.c: who a process of the table is, the same for every front-end (the agent's series,
 * record's OTLP resource and pprof): the OTel process context first, then identity.c's sources. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "identity.h"
#include "otelctx.h"
#include "proctab.h"

static void free_ident(void *ident)
{
	free(ident);
}

/* The OTel process context (OTEP 4719) names the service first: it is what the app's SDK uses.
 * It may be read after the process's first window: from then on its series follows it. */
static const struct proc_identity *otel_service(struct proc *p, struct proc_identity *id)
{
	const char *name = otelctx__service_name(p);

	if (name && name[0] && strcmp(name, id->service_name) &&
	    strlen(name) < sizeof(id->service_name)) {
		snprintf(id->service_name, sizeof(id->service_name), "%s", name);
		id->source = IDENTITY_SRC_OTEL_CTX;
	}
	return id;
}

const struct proc_identity *identity__of_proc(struct identity_ctx *ctx, const struct proctab *procs,
					      struct proc *p)
{
	struct proc_identity *id;
	struct proc *now;

	/* A process is one service across exec (its launcher's samples too, env and cgroup being
	 * the same): the entry of the program it exec'd into names it, while that entry is there. */
	if (p->execed && procs && (now = proctab__find(procs, p->pid, p->start_ticks)))
		p = now;
	id = p->ident;

	if (id)
		return otel_service(p, id);
	id = calloc(1, sizeof(*id));
	if (!id)
		return NULL;
	if (p->dir_fd < 0 || identity__resolve(ctx, p->dir_fd, p->comm, id)) {
		memset(id, 0, sizeof(*id));
		snprintf(id->service_name, sizeof(id->service_name), "%s",
			 p->comm[0] ? p->comm : "unknown");
		id->source = IDENTITY_SRC_COMM;
	}
	p->ident = id;
	p->ident_free = free_ident;
	return otel_service(p, id);
}
