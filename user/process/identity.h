/* identity.h: who a process is (service name, Kubernetes namespace/pod/container, node) for the
 * agent's series labels, from /proc and the kubelet's log tree, without the API server. */
#ifndef SPANPROF_IDENTITY_H
#define SPANPROF_IDENTITY_H

#include <stddef.h>

#define IDENTITY_ENVIRON_MAX	(1u << 20)	/* environ is another process's data: bounded */
#define IDENTITY_CGROUP_MAX	(64u << 10)

/* Kubernetes names are DNS labels (63) or subdomains (253); UIDs are 36 characters dashed, or 32
 * hex digits for static pods (the kubelet's hash of the manifest). */
#define IDENTITY_NAME_LEN	254
#define IDENTITY_LABEL_LEN	64
#define IDENTITY_UID_LEN	40
#define IDENTITY_CID_LEN	72
#define IDENTITY_SERVICE_LEN	256

/* What the cgroup path says. */
struct k8s_ids {
	char pod_uid[IDENTITY_UID_LEN];		/* dashed form (or 32 hex for static pods) */
	char container_id[IDENTITY_CID_LEN];	/* 64 hex; empty when the path stops at the pod */
	char runtime[16];			/* "containerd", "cri-o", "docker", "" (cgroupfs) */
};

enum identity_source {
	IDENTITY_SRC_NONE = 0,
	IDENTITY_SRC_OTEL_SERVICE_NAME,		/* OTEL_SERVICE_NAME */
	IDENTITY_SRC_OTEL_RESOURCE_ATTRIBUTES,	/* service.name in OTEL_RESOURCE_ATTRIBUTES */
	IDENTITY_SRC_K8S,			/* <namespace>/<container> */
	IDENTITY_SRC_COMM,			/* the process name */
	IDENTITY_SRC_OTEL_CTX,			/* service.name in the OTEP 4719 process context */
};

const char *identity_source__name(enum identity_source s);	/* "otel_service_name", ... */

struct proc_identity {
	char service_name[IDENTITY_SERVICE_LEN];
	enum identity_source source;
	int in_k8s;				/* a pod UID was found in the cgroup path */
	char namespace[IDENTITY_LABEL_LEN];	/* from the pods dir; empty if not found there */
	char pod[IDENTITY_NAME_LEN];
	char pod_uid[IDENTITY_UID_LEN];
	char container[IDENTITY_LABEL_LEN];	/* empty when it cannot be told apart */
	char container_id[IDENTITY_CID_LEN];
	char node[IDENTITY_NAME_LEN];
};

/*
 * Parsers on buffers (fixtures in tests, /proc contents in the agent).
 */

/* The pod UID and container id in /proc/<pid>/cgroup text (v1: many "N:controllers:/path"
 * lines, v2: "0::/path"; systemd or cgroupfs driver; containerd, CRI-O, Docker; any prefix
 * before the kubepods part, as under kind or k3s, or "/.." when seen from another cgroup
 * namespace). 0 with out filled, -ENOENT if no line names a pod (out zeroed). */
int identity__parse_cgroup(const char *buf, size_t len, struct k8s_ids *out);

/*
 * The service name in environ text (NUL-separated KEY=VALUE): OTEL_SERVICE_NAME if set and not
 * empty, else service.name in OTEL_RESOURCE_ATTRIBUTES (comma-separated key=value, values
 * percent-decoded; a malformed list is ignored as a whole, as the OTel SDK specification says).
 * 0 with out and *src set; -ENOENT if neither names one; -ENAMETOOLONG if the name does not fit
 * outlen (never truncated: a cut name would be a wrong one).
 */
int identity__parse_environ_service(const char *env, size_t len, char *out, size_t outlen,
				    enum identity_source *src);

/* The node name: $NODE_NAME, else the host name. 0 or -errno. */
int identity__default_node(char *out, size_t outlen);

/*
 * The resolver. Not thread-safe: the agent's loop owns it. Pods are cached by UID (a pod's
 * namespace, name, and the container names of the container ids seen so far), so the log tree
 * is scanned once per pod and once per new container, not per process.
 */
struct identity_ctx;

/* pods_dir: NULL means /var/log/pods; containers_dir: NULL means /var/log/containers; node:
 * copied (NULL or "": identity__default_node()). NULL and errno on failure. A missing directory
 * is not an error: names are then left empty. */
struct identity_ctx *identity__new(const char *pods_dir, const char *containers_dir,
				   const char *node);
void identity__free(struct identity_ctx *ctx);	/* NULL-safe */

/*
 * Who the process whose /proc/<pid> directory is open at proc_dir_fd is. comm: its name for the
 * last fallback (NULL: read from proc_dir_fd). Never fails for want of information: what is not
 * found is left empty and the service name falls back; an unreadable environ (permissions, the
 * process exiting) only skips the OTel sources. 0, or -ENOMEM / -EINVAL.
 */
int identity__resolve(struct identity_ctx *ctx, int proc_dir_fd, const char *comm,
		      struct proc_identity *out);

/* Drop what is cached for this pod (it was deleted, or a lookup through it failed). NULL drops
 * everything. */
void identity__forget(struct identity_ctx *ctx, const char *pod_uid);

/*
 * Who process p of the table is, for every front-end (the agent's series, record's outputs):
 * resolved once through ctx (OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES in its environment,
 * Kubernetes, its name) and kept in p->ident (p->ident_free frees it); the service.name of its
 * OTel process context (OTEP 4719, what the app's SDK uses) wins whenever it is read. A process
 * that exec'd is named by the program it became, found in procs (NULL: not looked up). NULL when
 * out of memory. procident.c.
 */
struct proc;
struct proctab;
const struct proc_identity *identity__of_proc(struct identity_ctx *ctx, const struct proctab *procs,
					      struct proc *p);

/* Pods in the cache, and how many times the pods dir has been scanned (for tests and metrics). */
size_t identity__cached_pods(const struct identity_ctx *ctx);
unsigned long identity__pod_scans(const struct identity_ctx *ctx);

#endif /* SPANPROF_IDENTITY_H */
