/* identity.c: a process's service name and Kubernetes identity from /proc/<pid>/{environ,cgroup}
 * and the kubelet's /var/log/pods and /var/log/containers trees. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "identity.h"
#include "util.h"
#include "vec.h"

#define POD_DIRNAME_LEN	(IDENTITY_LABEL_LEN + IDENTITY_NAME_LEN + IDENTITY_UID_LEN + 4)
#define POD_CONTAINERS_MAX	64	/* containers (init, sidecars, ephemeral) listed per pod */
#define POD_CIDS_MAX		64	/* container ids remembered per pod (restarts add new ones) */
#define CACHE_PODS_MAX		4096	/* a node runs ~110 pods by default; this is generous */

struct cid_name {
	char cid[IDENTITY_CID_LEN];
	char name[IDENTITY_LABEL_LEN];
};

struct pod_entry {
	char uid[IDENTITY_UID_LEN];
	char dirname[POD_DIRNAME_LEN];	/* <namespace>_<pod>_<uid> under pods_dir */
	char ns[IDENTITY_LABEL_LEN];
	char pod[IDENTITY_NAME_LEN];
	struct cid_name cids[POD_CIDS_MAX];
	size_t ncids;
};

struct identity_ctx {
	char *pods_dir;
	char *containers_dir;
	char node[IDENTITY_NAME_LEN];
	struct pod_entry **pods;	/* oldest first; linear search (a node's pods are few) */
	size_t npods, cappods;
	unsigned long pod_scans;
};

const char *identity_source__name(enum identity_source s)
{
	switch (s) {
	case IDENTITY_SRC_OTEL_SERVICE_NAME:
		return "otel_service_name";
	case IDENTITY_SRC_OTEL_RESOURCE_ATTRIBUTES:
		return "otel_resource_attributes";
	case IDENTITY_SRC_K8S:
		return "k8s";
	case IDENTITY_SRC_COMM:
		return "comm";
	case IDENTITY_SRC_OTEL_CTX:
		return "otel_ctx";
	default:
		return "none";
	}
}

/* Copy n bytes as a string; -ENAMETOOLONG (dst emptied) if they do not fit. */
static int copy_str(char *dst, size_t cap, const char *src, size_t n)
{
	if (n >= cap) {
		if (cap)
			dst[0] = 0;
		return -ENAMETOOLONG;
	}
	memcpy(dst, src, n);
	dst[n] = 0;
	return 0;
}

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* ---- cgroup -------------------------------------------------------------------------------- */

/* A pod UID as the cgroup path spells it (8-4-4-4-12 with '-' or, under the systemd driver, '_';
 * or 32 hex digits for a static pod), written dashed into out. */
static int parse_uid(const char *s, size_t n, char *out)
{
	size_t i;

	if (n == 32) {
		for (i = 0; i < n; i++)
			if (!is_hex(s[i]))
				return 0;
		memcpy(out, s, n);
		out[n] = 0;
		return 1;
	}
	if (n != 36)
		return 0;
	for (i = 0; i < n; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-' && s[i] != '_')
				return 0;
			out[i] = '-';
		} else if (is_hex(s[i])) {
			out[i] = s[i];
		} else {
			return 0;
		}
	}
	out[n] = 0;
	return 1;
}

static int has_prefix(const char *s, size_t n, const char *p)
{
	size_t m = strlen(p);

	return n >= m && !memcmp(s, p, m);
}

static int has_suffix(const char *s, size_t n, const char *p)
{
	size_t m = strlen(p);

	return n >= m && !memcmp(s + n - m, p, m);
}

static int comp_is(const char *s, size_t n, const char *w)
{
	return n == strlen(w) && !memcmp(s, w, n);
}

static int mem_contains(const char *s, size_t n, const char *w)
{
	size_t m = strlen(w), i;

	for (i = 0; i + m <= n; i++)
		if (!memcmp(s + i, w, m))
			return 1;
	return 0;
}

/*
 * A path component naming a pod:
 *  systemd driver: kubepods-pod<uid>.slice, kubepods-<qos>-pod<uid>.slice, and kind's
 *                  kubelet-kubepods-<qos>-pod<uid>.slice (UID with '_');
 *  cgroupfs:       pod<uid> below kubepods (or a QoS dir, or "..", as seen from a container's
 *                  own cgroup namespace, where the kubepods part is above the root).
 */
static int pod_component(const char *c, size_t n, int below_kubepods, const char *prev,
			 size_t prevn, char *uid)
{
	size_t i;

	if (has_suffix(c, n, ".slice") && mem_contains(c, n, "kubepods")) {
		n -= strlen(".slice");
		for (i = n; i >= 4; i--)
			if (!memcmp(c + i - 4, "-pod", 4))
				return parse_uid(c + i, n - i, uid);
		return 0;
	}
	if (!has_prefix(c, n, "pod"))
		return 0;
	if (!below_kubepods && !comp_is(prev, prevn, "..") && !comp_is(prev, prevn, "burstable") &&
	    !comp_is(prev, prevn, "besteffort"))
		return 0;
	return parse_uid(c + 3, n - 3, uid);
}

/* The container component after the pod: cri-containerd-<id>.scope, crio-<id>.scope,
 * docker-<id>.scope (systemd), <id> or crio-<id> (cgroupfs). crio-conmon-<id> is CRI-O's monitor
 * process, not the container. */
static void container_component(const char *c, size_t n, struct k8s_ids *out)
{
	static const struct {
		const char *prefix, *runtime;
	} kinds[] = {
		{ "cri-containerd-", "containerd" },
		{ "crio-conmon-", NULL },
		{ "crio-", "cri-o" },
		{ "docker-", "docker" },
		{ "", "" },
	};
	size_t i, k, m;

	if (has_suffix(c, n, ".scope"))
		n -= strlen(".scope");
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		m = strlen(kinds[k].prefix);
		if (has_prefix(c, n, kinds[k].prefix))
			break;
	}
	if (!kinds[k].runtime)
		return;
	c += m;
	n -= m;
	if (n != 64)
		return;
	for (i = 0; i < n; i++)
		if (!is_hex(c[i]))
			return;
	memcpy(out->container_id, c, n);
	out->container_id[n] = 0;
	strcpy(out->runtime, kinds[k].runtime);
}

/* One cgroup path; the innermost pod wins (a kind node inside a pod has two). */
static int parse_path(const char *p, size_t n, struct k8s_ids *out)
{
	const char *c = p, *end = p + n, *prev = "", *pod_next = NULL;
	size_t cn, prevn = 0, pod_nextn = 0;
	int below = 0, found = 0;
	char uid[IDENTITY_UID_LEN];

	memset(out, 0, sizeof(*out));
	while (c < end) {
		const char *slash = memchr(c, '/', end - c);

		cn = (slash ? slash : end) - c;
		if (cn) {
			if (pod_component(c, cn, below, prev, prevn, uid)) {
				memset(out, 0, sizeof(*out));
				strcpy(out->pod_uid, uid);
				found = 1;
				pod_next = NULL;
			} else if (found && !pod_next) {
				pod_next = c;
				pod_nextn = cn;
			}
			if (mem_contains(c, cn, "kubepods"))
				below = 1;
			prev = c;
			prevn = cn;
		}
		if (!slash)
			break;
		c = slash + 1;
	}
	if (found && pod_next)
		container_component(pod_next, pod_nextn, out);
	return found;
}

int identity__parse_cgroup(const char *buf, size_t len, struct k8s_ids *out)
{
	const char *line = buf, *end = buf + len;
	struct k8s_ids cand, best;
	int have = 0;

	memset(out, 0, sizeof(*out));
	memset(&best, 0, sizeof(best));
	while (line < end) {
		const char *nl = memchr(line, '\n', end - line), *eol = nl ? nl : end, *c1, *c2;

		/* hierarchy-id:controllers:path; the path may itself contain ':' */
		c1 = memchr(line, ':', eol - line);
		c2 = c1 ? memchr(c1 + 1, ':', eol - c1 - 1) : NULL;
		if (c2 && !memchr(line, 0, eol - line) && parse_path(c2 + 1, eol - c2 - 1, &cand)) {
			/* v1 controllers can disagree (a name=systemd line may stop at the pod):
			 * prefer a line that also names the container. */
			if (cand.container_id[0]) {
				*out = cand;
				return 0;
			}
			if (!have) {
				best = cand;
				have = 1;
			}
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	if (!have)
		return -ENOENT;
	*out = best;
	return 0;
}

/* ---- environ -------------------------------------------------------------------------------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decode s[0..n) into out (NULL: only check). -EINVAL on a bad or NUL escape,
 * -ENAMETOOLONG if it does not fit. */
static int pct_decode(const char *s, size_t n, char *out, size_t cap)
{
	size_t i, o = 0;
	int hi, lo;

	for (i = 0; i < n; i++) {
		char ch = s[i];

		if (ch == '%') {
			if (i + 2 >= n)
				return -EINVAL;
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			/* %00 would cut the name short: refused like a bad escape */
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return -EINVAL;
			ch = (char)(hi << 4 | lo);
			i += 2;
		}
		if (out) {
			if (o + 1 >= cap)
				return -ENAMETOOLONG;
			out[o] = ch;
		}
		o++;
	}
	if (out)
		out[o] = 0;
	return 0;
}

static void trim(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*n)--;
	}
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

/* service.name in an OTEL_RESOURCE_ATTRIBUTES value. The last one wins, as in the SDKs' maps. */
static int resource_service(const char *v, size_t n, char *out, size_t cap)
{
	const char *m = v, *end = v + n, *sn = NULL;
	size_t snn = 0;

	if (!n)
		return -ENOENT;
	for (;;) {
		const char *comma = memchr(m, ',', end - m), *mend = comma ? comma : end, *eq;
		const char *key = m, *val;
		size_t kn, vn;

		eq = memchr(m, '=', mend - m);
		if (!eq)
			return -EINVAL;	/* a member without '=': the whole list is void */
		kn = eq - key;
		val = eq + 1;
		vn = mend - val;
		trim(&key, &kn);
		trim(&val, &vn);
		if (!kn || pct_decode(val, vn, NULL, 0))
			return -EINVAL;
		if (comp_is(key, kn, "service.name")) {
			sn = val;
			snn = vn;
		}
		if (!comma)
			break;
		m = comma + 1;
	}
	if (!sn || !snn)
		return -ENOENT;
	return pct_decode(sn, snn, out, cap);
}

int identity__parse_environ_service(const char *env, size_t len, char *out, size_t outlen,
				    enum identity_source *src)
{
	static const char SN[] = "OTEL_SERVICE_NAME=", RA[] = "OTEL_RESOURCE_ATTRIBUTES=";
	const char *e = env, *end = env + len, *sn = NULL, *ra = NULL;
	size_t snn = 0, ran = 0;
	int rc;

	if (outlen)
		out[0] = 0;
	*src = IDENTITY_SRC_NONE;
	while (e < end) {
		const char *z = memchr(e, 0, end - e), *eend = z ? z : end;
		size_t n = eend - e;

		/* The first occurrence, as getenv() in the process itself would see it. */
		if (!sn && has_prefix(e, n, SN)) {
			sn = e + strlen(SN);
			snn = eend - sn;
		} else if (!ra && has_prefix(e, n, RA)) {
			ra = e + strlen(RA);
			ran = eend - ra;
		}
		if (!z)
			break;
		e = z + 1;
	}
	if (sn && snn) {
		rc = copy_str(out, outlen, sn, snn);
		if (!rc)
			*src = IDENTITY_SRC_OTEL_SERVICE_NAME;
		return rc;
	}
	if (!ra)
		return -ENOENT;
	rc = resource_service(ra, ran, out, outlen);
	if (rc == -EINVAL)
		rc = -ENOENT;
	if (rc) {
		if (outlen)
			out[0] = 0;
		return rc;
	}
	*src = IDENTITY_SRC_OTEL_RESOURCE_ATTRIBUTES;
	return 0;
}

int identity__default_node(char *out, size_t outlen)
{
	const char *env = getenv("NODE_NAME");

	if (!outlen)
		return -EINVAL;
	if (env && *env)
		return copy_str(out, outlen, env, strlen(env));
	if (gethostname(out, outlen))
		return -errno;
	out[outlen - 1] = 0;
	return 0;
}

/* ---- the kubelet's log tree ------------------------------------------------------------------ */

/* DNS label (namespace, container) or subdomain (pod), as Kubernetes validates them. */
static int valid_k8s_name(const char *s, size_t n, size_t max, int dots)
{
	size_t i;

	if (!n || n > max)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || (dots && c == '.')))
			return 0;
	}
	return 1;
}

/* A real directory (never a symlink) named name inside dirfd. */
static int is_dir_entry(int dirfd, const struct dirent *d)
{
	struct stat st;

	if (d->d_type == DT_DIR)
		return 1;
	if (d->d_type != DT_UNKNOWN)
		return 0;
	return !fstatat(dirfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode);
}

static DIR *open_dir_at(int at, const char *path)
{
	int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (at == AT_FDCWD ? 0 : O_NOFOLLOW));
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

/* Find <namespace>_<pod>_<uid> in the pods dir. 0 with e filled, -ENOENT. */
static int scan_pods_dir(struct identity_ctx *ctx, const char *uid, struct pod_entry *e)
{
	size_t ul = strlen(uid);
	struct dirent *d;
	DIR *dir;
	int rc = -ENOENT;

	ctx->pod_scans++;
	dir = open_dir_at(AT_FDCWD, ctx->pods_dir);
	if (!dir)
		return -ENOENT;
	while ((d = readdir(dir))) {
		const char *name = d->d_name, *u1, *u2;
		size_t n = strlen(name);

		if (n <= ul + 1 || name[n - ul - 1] != '_' || memcmp(name + n - ul, uid, ul))
			continue;
		u1 = strchr(name, '_');
		u2 = name + n - ul - 1;
		/* Namespace and pod names cannot hold '_', so the first and last split exactly. */
		if (u1 == u2 || !valid_k8s_name(name, u1 - name, 63, 0) ||
		    !valid_k8s_name(u1 + 1, u2 - u1 - 1, 253, 1) || n >= sizeof(e->dirname) ||
		    !is_dir_entry(dirfd(dir), d))
			continue;
		memset(e, 0, sizeof(*e));
		strcpy(e->uid, uid);
		strcpy(e->dirname, name);
		copy_str(e->ns, sizeof(e->ns), name, u1 - name);
		copy_str(e->pod, sizeof(e->pod), u1 + 1, u2 - u1 - 1);
		rc = 0;
		break;
	}
	closedir(dir);
	return rc;
}

/* The container directories of a pod. Their count, or -ENOENT if the pod dir is gone. */
static int list_containers(struct identity_ctx *ctx, const struct pod_entry *e,
			   char names[][IDENTITY_LABEL_LEN], size_t max)
{
	DIR *pods, *dir;
	struct dirent *d;
	int fd, n = 0;

	pods = open_dir_at(AT_FDCWD, ctx->pods_dir);
	if (!pods)
		return -ENOENT;
	/* O_NOFOLLOW: the pod dir must be the kubelet's directory, not a link planted in its place. */
	fd = openat(dirfd(pods), e->dirname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	closedir(pods);
	if (fd < 0)
		return -ENOENT;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -ENOENT;
	}
	while ((d = readdir(dir)) && (size_t)n < max) {
		size_t l = strlen(d->d_name);

		if (!valid_k8s_name(d->d_name, l, 63, 0) || !is_dir_entry(dirfd(dir), d))
			continue;
		strcpy(names[n++], d->d_name);
	}
	closedir(dir);
	return n;
}

/* The container name from /var/log/containers/<pod>_<namespace>_<container>-<cid>.log, one of
 * names. Only entry names are read; the entries are symlinks and are never followed. */
static int container_from_logs(struct identity_ctx *ctx, const struct pod_entry *e,
			       const char *cid, char names[][IDENTITY_LABEL_LEN], int nnames,
			       char *out)
{
	char prefix[IDENTITY_NAME_LEN + IDENTITY_LABEL_LEN + 2], suffix[IDENTITY_CID_LEN + 8];
	size_t pl, sl;
	struct dirent *d;
	DIR *dir;
	int rc = -ENOENT, i;

	pl = strlen(e->pod) + 1 + strlen(e->ns) + 1;
	strcpy(prefix, e->pod);
	strcat(prefix, "_");
	strcat(prefix, e->ns);
	strcat(prefix, "_");
	sl = strlen(cid) + 5;
	strcpy(suffix, "-");
	strcat(suffix, cid);
	strcat(suffix, ".log");
	dir = open_dir_at(AT_FDCWD, ctx->containers_dir);
	if (!dir)
		return -ENOENT;
	while (rc && (d = readdir(dir))) {
		size_t n = strlen(d->d_name);

		if (n <= pl + sl || memcmp(d->d_name, prefix, pl) || memcmp(d->d_name + n - sl, suffix, sl))
			continue;
		for (i = 0; i < nnames; i++) {
			if (strlen(names[i]) == n - pl - sl && !memcmp(d->d_name + pl, names[i], n - pl - sl)) {
				strcpy(out, names[i]);
				rc = 0;
				break;
			}
		}
	}
	closedir(dir);
	return rc;
}

static struct pod_entry *cache_find(struct identity_ctx *ctx, const char *uid)
{
	size_t i;

	for (i = 0; i < ctx->npods; i++)
		if (!strcmp(ctx->pods[i]->uid, uid))
			return ctx->pods[i];
	return NULL;
}

static void cache_drop_at(struct identity_ctx *ctx, size_t i)
{
	free(ctx->pods[i]);
	memmove(&ctx->pods[i], &ctx->pods[i + 1], (ctx->npods - i - 1) * sizeof(ctx->pods[0]));
	ctx->npods--;
}

static int cache_add(struct identity_ctx *ctx, const struct pod_entry *e, struct pod_entry **outp)
{
	struct pod_entry *n;

	if (ctx->npods == CACHE_PODS_MAX)
		cache_drop_at(ctx, 0);	/* the oldest: likely a pod long gone */
	if (VEC_RESERVE(ctx->pods, ctx->cappods, ctx->npods + 1))
		return -ENOMEM;
	n = malloc(sizeof(*n));
	if (!n)
		return -ENOMEM;
	*n = *e;
	ctx->pods[ctx->npods++] = n;
	*outp = n;
	return 0;
}

static void remember_cid(struct pod_entry *e, const char *cid, const char *name)
{
	if (e->ncids == POD_CIDS_MAX) {
		memmove(&e->cids[0], &e->cids[1], (POD_CIDS_MAX - 1) * sizeof(e->cids[0]));
		e->ncids--;
	}
	strcpy(e->cids[e->ncids].cid, cid);
	strcpy(e->cids[e->ncids].name, name);
	e->ncids++;
}

/* The container name of cid in pod e: the only container, or the one the containers dir names.
 * -ENOENT if the pod dir is gone; 0 otherwise (out empty if it could not be told). */
static int resolve_container(struct identity_ctx *ctx, struct pod_entry *e, const char *cid,
			     char *out)
{
	char (*names)[IDENTITY_LABEL_LEN];
	size_t i;
	int n, rc = 0;

	out[0] = 0;
	for (i = 0; i < e->ncids; i++) {
		if (!strcmp(e->cids[i].cid, cid)) {
			strcpy(out, e->cids[i].name);
			return 0;
		}
	}
	names = malloc(POD_CONTAINERS_MAX * sizeof(*names));
	if (!names)
		return -ENOMEM;
	n = list_containers(ctx, e, names, POD_CONTAINERS_MAX);
	if (n < 0) {
		rc = n;
	} else if (n == 1) {
		strcpy(out, names[0]);
	} else if (n > 1 && cid[0]) {
		container_from_logs(ctx, e, cid, names, n, out);
	}
	/* Only successes are kept: the containers dir link may appear just after the process. */
	if (!rc && out[0] && cid[0])
		remember_cid(e, cid, out);
	free(names);
	return rc;
}

static int resolve_k8s(struct identity_ctx *ctx, const struct k8s_ids *ids,
		       struct proc_identity *out)
{
	struct pod_entry tmp, *e = cache_find(ctx, ids->pod_uid);
	int rc, attempt;

	for (attempt = 0; attempt < 2; attempt++) {
		if (!e) {
			if (scan_pods_dir(ctx, ids->pod_uid, &tmp))
				return 0;	/* not in the pods dir: ids only */
			rc = cache_add(ctx, &tmp, &e);
			if (rc)
				return rc;
		}
		rc = resolve_container(ctx, e, ids->container_id, out->container);
		if (rc == -ENOMEM)
			return rc;
		if (!rc) {
			strcpy(out->namespace, e->ns);
			strcpy(out->pod, e->pod);
			return 0;
		}
		/* The cached pod dir is gone (a pod recreated with the same UID is impossible, but
		 * a cache entry can outlive its directory): look again once. */
		identity__forget(ctx, ids->pod_uid);
		e = NULL;
	}
	return 0;
}

struct identity_ctx *identity__new(const char *pods_dir, const char *containers_dir,
				   const char *node)
{
	struct identity_ctx *ctx = calloc(1, sizeof(*ctx));
	int rc;

	if (!ctx)
		goto err_nomem;
	ctx->pods_dir = strdup(pods_dir ? pods_dir : "/var/log/pods");
	ctx->containers_dir = strdup(containers_dir ? containers_dir : "/var/log/containers");
	if (!ctx->pods_dir || !ctx->containers_dir)
		goto err_free;
	if (node && *node) {
		rc = copy_str(ctx->node, sizeof(ctx->node), node, strlen(node));
	} else {
		rc = identity__default_node(ctx->node, sizeof(ctx->node));
	}
	if (rc) {
		identity__free(ctx);
		errno = -rc;
		return NULL;
	}
	return ctx;

err_free:
	identity__free(ctx);
err_nomem:
	errno = ENOMEM;
	return NULL;
}

void identity__free(struct identity_ctx *ctx)
{
	if (!ctx)
		return;
	identity__forget(ctx, NULL);
	free(ctx->pods);
	free(ctx->pods_dir);
	free(ctx->containers_dir);
	free(ctx);
}

void identity__forget(struct identity_ctx *ctx, const char *pod_uid)
{
	size_t i;

	if (!pod_uid) {
		while (ctx->npods)
			cache_drop_at(ctx, ctx->npods - 1);
		return;
	}
	for (i = 0; i < ctx->npods; i++) {
		if (!strcmp(ctx->pods[i]->uid, pod_uid)) {
			cache_drop_at(ctx, i);
			return;
		}
	}
}

size_t identity__cached_pods(const struct identity_ctx *ctx)
{
	return ctx->npods;
}

unsigned long identity__pod_scans(const struct identity_ctx *ctx)
{
	return ctx->pod_scans;
}

/* environ read whole, or its first IDENTITY_ENVIRON_MAX bytes cut back to the last complete
 * entry; NULL if unreadable. */
static char *read_environ(int proc_dir_fd, size_t *len)
{
	char *buf;
	int truncated;
	long n = read_file_alloc(proc_dir_fd, "environ", IDENTITY_ENVIRON_MAX, &buf, &truncated);

	if (n < 0)
		return NULL;
	if (truncated) {
		char *z = memrchr(buf, 0, n);

		n = z ? z - buf : 0;
	}
	*len = n;
	return buf;
}

int identity__resolve(struct identity_ctx *ctx, int proc_dir_fd, const char *comm,
		      struct proc_identity *out)
{
	char comm_buf[64], *cg = NULL, *env;
	struct k8s_ids ids;
	size_t envlen = 0;
	long n;
	int rc = 0, truncated;

	if (!ctx || !out || proc_dir_fd < 0)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	strcpy(out->node, ctx->node);

	n = read_file_alloc(proc_dir_fd, "cgroup", IDENTITY_CGROUP_MAX, &cg, &truncated);
	if (n >= 0 && !identity__parse_cgroup(cg, n, &ids)) {
		out->in_k8s = 1;
		strcpy(out->pod_uid, ids.pod_uid);
		strcpy(out->container_id, ids.container_id);
		rc = resolve_k8s(ctx, &ids, out);
	}
	free(cg);
	if (rc)
		return rc;

	env = read_environ(proc_dir_fd, &envlen);
	if (env) {
		identity__parse_environ_service(env, envlen, out->service_name,
						sizeof(out->service_name), &out->source);
		free(env);
	}
	if (out->source != IDENTITY_SRC_NONE)
		return 0;
	if (out->namespace[0] && out->container[0]) {
		strcpy(out->service_name, out->namespace);
		strcat(out->service_name, "/");
		strcat(out->service_name, out->container);
		out->source = IDENTITY_SRC_K8S;
		return 0;
	}
	if (!comm) {
		if (read_small_file(proc_dir_fd, "comm", comm_buf, sizeof(comm_buf)) < 0)
			comm_buf[0] = 0;
		comm_buf[strcspn(comm_buf, "\n")] = 0;
		comm = comm_buf;
	}
	if (*comm && !copy_str(out->service_name, sizeof(out->service_name), comm, strlen(comm)))
		out->source = IDENTITY_SRC_COMM;
	return 0;
}
