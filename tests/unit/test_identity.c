/* test_identity.c: unit tests for user/process/identity.c: cgroup and environ parsing, and
 * resolution against fake /proc/<pid> dirs and kubelet log trees built in a temp dir. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "identity.h"
#include "testutil.h"

#define UID	"0b7632a2-a56e-4278-987a-22de18008dbe"
#define UID_US	"0b7632a2_a56e_4278_987a_22de18008dbe"
#define UID2	"7e5f5ac0-1af4-49ab-8938-664970a26cfd"
#define UID2_US	"7e5f5ac0_1af4_49ab_8938_664970a26cfd"
#define UID3	"83ca8044-3e7c-457b-8647-a21dabad5079"
#define STATIC_UID "6d6a4e8e0c8e2b2a0a2e5c8f1c1d3f4a"
#define CID	"9a7c72f122922fe3445ba85ce72c507c8976c0f3d919403fda7c22dfe516f66f"
#define CID2	"57ac76ffc93d7e7735ca186bc67115656967fc8aecbe1f65526c4c48b033e6a5"
#define NODECID	"8e126766ee34e1d3b203c0a7cfc2a619c49d482a2ecc99a190fff577111a4dca"

static char root[256];

static void path_of(char *out, const char *rel)
{
	testutil__path(out, PATH_MAX, root, rel);
}

static void mkdirs(const char *rel)
{
	testutil__mkdirs(root, rel);
}

static void write_file(const char *rel, const void *data, size_t len)
{
	testutil__write(root, rel, data, len);
}

/* A fake /proc/<name> with these files (environ of envlen bytes, NUL separators included);
 * NULL leaves a file out. Returns an open directory fd, as the agent holds one. */
static int fake_proc(const char *name, const char *env, size_t envlen, const char *cgroup,
		     const char *comm)
{
	char proc[PATH_MAX], dir[PATH_MAX];
	int fd;

	path_of(proc, "proc");
	testutil__proc_dir(dir, sizeof(dir), proc, name);
	if (env)
		testutil__write(dir, "environ", env, envlen);
	if (cgroup)
		testutil__write_file(dir, "cgroup", cgroup);
	if (comm)
		testutil__write_file(dir, "comm", comm);
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	return fd;
}

/* A pod in the kubelet's log tree, with its containers' dirs and /var/log/containers links. */
static void fake_pod(const char *ns, const char *pod, const char *uid, const char *const *containers,
		     const char *const *cids)
{
	char rel[512], target[PATH_MAX], link[PATH_MAX];
	size_t i;

	snprintf(rel, sizeof(rel), "pods/%s_%s_%s", ns, pod, uid);
	mkdirs(rel);
	for (i = 0; containers && containers[i]; i++) {
		snprintf(rel, sizeof(rel), "pods/%s_%s_%s/%s", ns, pod, uid, containers[i]);
		mkdirs(rel);
		snprintf(rel, sizeof(rel), "pods/%s_%s_%s/%s/0.log", ns, pod, uid, containers[i]);
		write_file(rel, "log\n", 4);
		if (!cids || !cids[i])
			continue;
		mkdirs("containers");
		snprintf(rel, sizeof(rel), "pods/%s_%s_%s/%s/0.log", ns, pod, uid, containers[i]);
		path_of(target, rel);
		snprintf(rel, sizeof(rel), "containers/%s_%s_%s-%s.log", pod, ns, containers[i], cids[i]);
		path_of(link, rel);
		assert_int_equal(symlink(target, link), 0);
	}
}

static struct identity_ctx *new_ctx(void)
{
	char pods[PATH_MAX], conts[PATH_MAX];
	struct identity_ctx *ctx;

	path_of(pods, "pods");
	path_of(conts, "containers");
	ctx = identity__new(pods, conts, "node-a");
	assert_non_null(ctx);
	return ctx;
}

static int setup(void **state)
{
	(void)state;
	return testutil__mkdtemp(root, sizeof(root)) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return testutil__rm_rf(root);
}

/* ---- cgroup parsing -------------------------------------------------------------------------- */

static void expect_ids(const char *text, const char *uid, const char *cid, const char *runtime)
{
	struct k8s_ids ids;
	int rc = identity__parse_cgroup(text, strlen(text), &ids);

	if (!uid) {
		if (rc != -ENOENT)
			fail_msg("expected no pod in \"%s\", got rc %d uid %s", text, rc, ids.pod_uid);
		assert_string_equal(ids.pod_uid, "");
		assert_string_equal(ids.container_id, "");
		return;
	}
	if (rc)
		fail_msg("no pod found in \"%s\": %d", text, rc);
	assert_string_equal(ids.pod_uid, uid);
	assert_string_equal(ids.container_id, cid);
	assert_string_equal(ids.runtime, runtime);
}

static void test_identity_cgroup_v2_systemd(void **state)
{
	(void)state;
	expect_ids("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_US
		   ".slice/cri-containerd-" CID ".scope\n", UID, CID, "containerd");
	expect_ids("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_US
		   ".slice/crio-" CID ".scope\n", UID, CID, "cri-o");
	/* crun's systemd sub-cgroup below the CRI-O scope */
	expect_ids("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_US
		   ".slice/crio-" CID ".scope/container\n", UID, CID, "cri-o");
	/* cri-dockerd */
	expect_ids("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_US
		   ".slice/docker-" CID ".scope", UID, CID, "docker");
	/* Guaranteed QoS: the pod slice sits right under kubepods.slice. */
	expect_ids("0::/kubepods.slice/kubepods-pod" UID2_US ".slice/cri-containerd-" CID2 ".scope\n",
		   UID2, CID2, "containerd");
	/* CRI-O's conmon: the pod, not a container. */
	expect_ids("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_US
		   ".slice/crio-conmon-" CID ".scope\n", UID, "", "");
	/* A process in the pod slice itself. */
	expect_ids("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_US ".slice\n",
		   UID, "", "");
}

static void test_identity_cgroup_cgroupfs(void **state)
{
	(void)state;
	expect_ids("0::/kubepods/burstable/pod" UID "/" CID "\n", UID, CID, "");
	expect_ids("0::/kubepods/besteffort/pod" UID "/" CID, UID, CID, "");
	expect_ids("0::/kubepods/pod" UID2 "/" CID2 "\n", UID2, CID2, "");	/* guaranteed */
	expect_ids("0::/kubepods/burstable/pod" UID "/crio-" CID "\n", UID, CID, "cri-o");
	/* A static pod: its UID is the kubelet's 32-hex hash of the manifest. */
	expect_ids("0::/kubepods/burstable/pod" STATIC_UID "/" CID "\n", STATIC_UID, CID, "");
	expect_ids("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" STATIC_UID
		   ".slice/cri-containerd-" CID ".scope\n", STATIC_UID, CID, "containerd");
}

static void test_identity_cgroup_v1(void **state)
{
	static const char v1_cgroupfs[] =
		"12:hugetlb:/kubepods/burstable/pod" UID "/" CID "\n"
		"11:pids:/kubepods/burstable/pod" UID "/" CID "\n"
		"10:cpu,cpuacct:/kubepods/burstable/pod" UID "/" CID "\n"
		"9:memory:/kubepods/burstable/pod" UID "/" CID "\n"
		"1:name=systemd:/kubepods/burstable/pod" UID "/" CID "\n";
	/* The systemd line stops at the pod; a later controller line has the container. */
	static const char v1_mixed[] =
		"13:rdma:/\n"
		"12:name=systemd:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_US ".slice\n"
		"11:memory:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_US
		".slice/cri-containerd-" CID ".scope\n"
		"0::/\n";
	/* RancherOS-style: the kubepods part below a docker prefix. */
	static const char v1_docker_prefix[] =
		"11:name=systemd:/kubepods/besteffort/pod" UID "/" CID "\n"
		"10:cpuset:/docker/" NODECID "/kubepods/besteffort/pod" UID "/" CID "\n";

	(void)state;
	expect_ids(v1_cgroupfs, UID, CID, "");
	expect_ids(v1_mixed, UID, CID, "containerd");
	expect_ids(v1_docker_prefix, UID, CID, "");
}

static void test_identity_cgroup_nested(void **state)
{
	(void)state;
	/* kind: the kubelet's cgroup root is /kubelet.slice */
	expect_ids("0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
		   "kubelet-kubepods-besteffort-pod" UID_US ".slice/cri-containerd-" CID ".scope\n",
		   UID, CID, "containerd");
	expect_ids("0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod" UID_US
		   ".slice/cri-containerd-" CID ".scope\n", UID, CID, "containerd");
	/* kind seen from the host: the node container's docker scope first; the container is the
	 * one after the pod, not the node's. */
	expect_ids("0::/system.slice/docker-" NODECID ".scope/kubelet.slice/kubelet-kubepods.slice/"
		   "kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" UID_US
		   ".slice/cri-containerd-" CID ".scope\n", UID, CID, "containerd");
	/* k3s in a container, cgroupfs */
	expect_ids("0::/k3s/kubepods/besteffort/pod" UID "/" CID "\n", UID, CID, "");
	/* Read from inside another cgroup namespace: the kubepods part is above the root. */
	expect_ids("0::/../../kubepods-besteffort-pod" UID_US ".slice/cri-containerd-" CID ".scope\n",
		   UID, CID, "containerd");
	expect_ids("0::/../../besteffort/pod" UID "/" CID "\n", UID, CID, "");
	expect_ids("0::/../pod" UID "/" CID "\n", UID, CID, "");
	/* A kind node running in a pod of an outer cluster: the innermost pod is the process's. */
	expect_ids("0::/kubepods/burstable/pod" UID3 "/" NODECID "/kubelet.slice/kubelet-kubepods.slice/"
		   "kubelet-kubepods-pod" UID_US ".slice/cri-containerd-" CID ".scope\n",
		   UID, CID, "containerd");
}

static void test_identity_cgroup_not_k8s(void **state)
{
	(void)state;
	expect_ids("0::/user.slice/user-1000.slice/user@1000.service/app.slice/dotnet.scope\n",
		   NULL, NULL, NULL);
	expect_ids("0::/system.slice/docker-" CID ".scope\n", NULL, NULL, NULL);
	expect_ids("0::/init.scope\n", NULL, NULL, NULL);
	expect_ids("0::/\n", NULL, NULL, NULL);
	expect_ids("", NULL, NULL, NULL);
	expect_ids("0::/kubepods.slice/kubepods-burstable.slice\n", NULL, NULL, NULL);
	expect_ids("0::/kubepods/burstable\n", NULL, NULL, NULL);
	/* pod<uid> outside any kubepods tree is somebody's own cgroup name */
	expect_ids("0::/system.slice/pod" UID "/" CID "\n", NULL, NULL, NULL);
	expect_ids("12:memory:/docker/" CID "\n1:name=systemd:/docker/" CID "\n", NULL, NULL, NULL);
}

static void test_identity_cgroup_garbage(void **state)
{
	static const char nul_inside[] = "0::/kubepods/burstable/pod" UID "\0/" CID "\n";
	char big[100000];
	struct k8s_ids ids;
	size_t i;

	(void)state;
	expect_ids("garbage without colons\n\n\n", NULL, NULL, NULL);
	expect_ids("::::::::\n:\n", NULL, NULL, NULL);
	/* UIDs of the wrong shape */
	expect_ids("0::/kubepods/burstable/pod0b7632a2-a56e-4278-987a-22de18008db/" CID "\n", NULL,
		   NULL, NULL);
	expect_ids("0::/kubepods/burstable/podZb7632a2-a56e-4278-987a-22de18008dbe/" CID "\n", NULL,
		   NULL, NULL);
	expect_ids("0::/kubepods/burstable/pod0b7632a2xa56e-4278-987a-22de18008dbe/" CID "\n", NULL,
		   NULL, NULL);
	expect_ids("0::/kubepods.slice/kubepods-burstable-pod.slice\n", NULL, NULL, NULL);
	expect_ids("0::/kubepods.slice/kubepods-pod" UID_US "\n", NULL, NULL, NULL);
	/* A container id of the wrong length or alphabet: the pod without it. */
	expect_ids("0::/kubepods/burstable/pod" UID "/" "9a7c72f122922fe3445ba85ce72c507c8976c0f3d919403fda7c22dfe516f66\n",
		   UID, "", "");
	expect_ids("0::/kubepods/burstable/pod" UID "/" "9A7C72F122922FE3445BA85CE72C507C8976C0F3D919403FDA7C22DFE516F66F\n",
		   UID, "", "");
	expect_ids("0::/kubepods.slice/kubepods-pod" UID_US ".slice/cri-containerd-" CID "x.scope\n",
		   UID, "", "");
	/* A NUL inside a line: that line is not trusted. */
	assert_int_equal(identity__parse_cgroup(nul_inside, sizeof(nul_inside) - 1, &ids), -ENOENT);
	/* A huge line of slashes and a huge line without newline. */
	for (i = 0; i < sizeof(big); i++)
		big[i] = i % 7 ? '/' : 'p';
	assert_int_equal(identity__parse_cgroup(big, sizeof(big), &ids), -ENOENT);
	memset(big, 'a', sizeof(big));
	memcpy(big, "0::/", 4);
	assert_int_equal(identity__parse_cgroup(big, sizeof(big), &ids), -ENOENT);
	/* Random bytes. */
	srand(7);
	for (i = 0; i < sizeof(big); i++)
		big[i] = (char)(rand() & 0xff);
	assert_int_equal(identity__parse_cgroup(big, sizeof(big), &ids), -ENOENT);
	assert_int_equal(identity__parse_cgroup(NULL, 0, &ids), -ENOENT);
}

/* ---- environ parsing ------------------------------------------------------------------------- */

static int env_service(const char *env, size_t len, char *out, size_t outlen, enum identity_source *src)
{
	return identity__parse_environ_service(env, len, out, outlen, src);
}

#define ENV(lit) (lit), sizeof(lit) - 1

static void expect_service(const char *env, size_t len, const char *want, enum identity_source want_src)
{
	enum identity_source src = 99;
	char out[IDENTITY_SERVICE_LEN];
	int rc = env_service(env, len, out, sizeof(out), &src);

	if (!want) {
		assert_int_equal(rc, -ENOENT);
		assert_string_equal(out, "");
		assert_int_equal(src, IDENTITY_SRC_NONE);
		return;
	}
	if (rc)
		fail_msg("expected \"%s\", got rc %d", want, rc);
	assert_string_equal(out, want);
	assert_int_equal(src, want_src);
}

static void test_identity_environ_precedence(void **state)
{
	(void)state;
	expect_service(ENV("PATH=/bin\0OTEL_SERVICE_NAME=checkout\0OTEL_RESOURCE_ATTRIBUTES=service.name=other\0"),
		       "checkout", IDENTITY_SRC_OTEL_SERVICE_NAME);
	expect_service(ENV("OTEL_RESOURCE_ATTRIBUTES=service.name=other\0OTEL_SERVICE_NAME=checkout\0"),
		       "checkout", IDENTITY_SRC_OTEL_SERVICE_NAME);
	expect_service(ENV("HOME=/root\0OTEL_RESOURCE_ATTRIBUTES=deployment.environment=prod,service.name=cart\0"),
		       "cart", IDENTITY_SRC_OTEL_RESOURCE_ATTRIBUTES);
	/* An empty OTEL_SERVICE_NAME counts as unset. */
	expect_service(ENV("OTEL_SERVICE_NAME=\0OTEL_RESOURCE_ATTRIBUTES=service.name=cart\0"),
		       "cart", IDENTITY_SRC_OTEL_RESOURCE_ATTRIBUTES);
	/* The first definition wins, as getenv() in the process sees it. */
	expect_service(ENV("OTEL_SERVICE_NAME=first\0OTEL_SERVICE_NAME=second\0"), "first",
		       IDENTITY_SRC_OTEL_SERVICE_NAME);
	/* Names that only look alike; a last entry without NUL. */
	expect_service(ENV("XOTEL_SERVICE_NAME=no\0OTEL_SERVICE_NAMES=no\0OTEL_SERVICE_NAME=yes"), "yes",
		       IDENTITY_SRC_OTEL_SERVICE_NAME);
	expect_service(ENV("PATH=/bin\0HOME=/\0"), NULL, 0);
	expect_service(ENV(""), NULL, 0);
	expect_service(ENV("OTEL_RESOURCE_ATTRIBUTES=\0"), NULL, 0);
	expect_service(ENV("OTEL_RESOURCE_ATTRIBUTES=service.namespace=shop\0"), NULL, 0);
	expect_service(ENV("OTEL_RESOURCE_ATTRIBUTES=service.name=\0"), NULL, 0);
}

static void test_identity_environ_resource_attributes(void **state)
{
	(void)state;
	/* Percent-decoded values (W3C baggage octets); '+' is not a space. */
	expect_service(ENV("OTEL_RESOURCE_ATTRIBUTES=service.name=my%20svc%2C%3Dx+y\0"), "my svc,=x+y",
		       IDENTITY_SRC_OTEL_RESOURCE_ATTRIBUTES);
	expect_service(ENV("OTEL_RESOURCE_ATTRIBUTES=service.name=caf%C3%A9\0"), "caf\xc3\xa9",
		       IDENTITY_SRC_OTEL_RESOURCE_ATTRIBUTES);
	/* Spaces around keys and values are trimmed; the last service.name wins. */
	expect_service(ENV("OTEL_RESOURCE_ATTRIBUTES= service.name = a , k=v, service.name=b \0"), "b",
		       IDENTITY_SRC_OTEL_RESOURCE_ATTRIBUTES);
	/* '=' inside a value is kept. */
	expect_service(ENV("OTEL_RESOURCE_ATTRIBUTES=service.name=a=b\0"), "a=b",
		       IDENTITY_SRC_OTEL_RESOURCE_ATTRIBUTES);
	/* A malformed list is discarded as a whole (OTel SDK spec), even a valid service.name. */
	expect_service(ENV("OTEL_RESOURCE_ATTRIBUTES=service.name=a,broken\0"), NULL, 0);
	expect_service(ENV("OTEL_RESOURCE_ATTRIBUTES=service.name=a,,k=v\0"), NULL, 0);
	expect_service(ENV("OTEL_RESOURCE_ATTRIBUTES==v,service.name=a\0"), NULL, 0);
	expect_service(ENV("OTEL_RESOURCE_ATTRIBUTES=k=%zz,service.name=a\0"), NULL, 0);
	expect_service(ENV("OTEL_RESOURCE_ATTRIBUTES=service.name=a%4\0"), NULL, 0);
	expect_service(ENV("OTEL_RESOURCE_ATTRIBUTES=service.name=a%\0"), NULL, 0);
	expect_service(ENV("OTEL_RESOURCE_ATTRIBUTES=service.name=a%00b\0"), NULL, 0);
	/* OTEL_SERVICE_NAME is taken as is, no decoding. */
	expect_service(ENV("OTEL_SERVICE_NAME=a%20b\0"), "a%20b", IDENTITY_SRC_OTEL_SERVICE_NAME);
}

static void test_identity_environ_too_long(void **state)
{
	char env[600], out[16];
	enum identity_source src;
	int n;

	(void)state;
	n = snprintf(env, sizeof(env), "OTEL_SERVICE_NAME=%s", "a-name-longer-than-16");
	assert_int_equal(env_service(env, n, out, sizeof(out), &src), -ENAMETOOLONG);
	assert_string_equal(out, "");
	assert_int_equal(src, IDENTITY_SRC_NONE);
	n = snprintf(env, sizeof(env), "OTEL_RESOURCE_ATTRIBUTES=service.name=%s", "a-name-longer-than-16");
	assert_int_equal(env_service(env, n, out, sizeof(out), &src), -ENAMETOOLONG);
	assert_string_equal(out, "");
	/* Exactly fitting: 15 characters and the NUL. */
	n = snprintf(env, sizeof(env), "OTEL_RESOURCE_ATTRIBUTES=service.name=%%41%s", "bcdefghijklmno");
	assert_int_equal(env_service(env, n, out, sizeof(out), &src), 0);
	assert_string_equal(out, "Abcdefghijklmno");
}

static void test_identity_default_node(void **state)
{
	char out[IDENTITY_NAME_LEN], host[256], small[4];
	struct identity_ctx *ctx;
	struct proc_identity id;
	int fd;

	(void)state;
	setenv("NODE_NAME", "worker-7", 1);
	assert_int_equal(identity__default_node(out, sizeof(out)), 0);
	assert_string_equal(out, "worker-7");
	assert_int_equal(identity__default_node(small, sizeof(small)), -ENAMETOOLONG);

	ctx = identity__new("/nonexistent/pods", "/nonexistent/containers", NULL);
	assert_non_null(ctx);
	fd = fake_proc("node", NULL, 0, "0::/init.scope\n", "init\n");
	assert_int_equal(identity__resolve(ctx, fd, NULL, &id), 0);
	assert_string_equal(id.node, "worker-7");
	close(fd);
	identity__free(ctx);

	unsetenv("NODE_NAME");
	assert_int_equal(identity__default_node(out, sizeof(out)), 0);
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	assert_string_equal(out, host);
	identity__free(NULL);
}

/* ---- resolution ------------------------------------------------------------------------------ */

static const char CG_ONE[] = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_US
			     ".slice/cri-containerd-" CID ".scope\n";
static const char CG_TWO_A[] = "0::/kubepods/besteffort/pod" UID2 "/" CID "\n";
static const char CG_TWO_B[] = "0::/kubepods/besteffort/pod" UID2 "/" CID2 "\n";

static void test_identity_resolve_precedence(void **state)
{
	static const char env_sn[] = "OTEL_SERVICE_NAME=checkout\0OTEL_RESOURCE_ATTRIBUTES=service.name=x\0";
	static const char env_ra[] = "A=b\0OTEL_RESOURCE_ATTRIBUTES=service.name=cart%2Dv2\0";
	static const char env_none[] = "PATH=/usr/bin\0";
	struct identity_ctx *ctx;
	struct proc_identity id;
	int fd;

	(void)state;
	fake_pod("shop", "api-7d9f-x2x", UID, (const char *[]){ "api", NULL }, NULL);
	ctx = new_ctx();

	fd = fake_proc("p1", env_sn, sizeof(env_sn) - 1, CG_ONE, NULL);
	assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);
	assert_string_equal(id.service_name, "checkout");
	assert_int_equal(id.source, IDENTITY_SRC_OTEL_SERVICE_NAME);
	assert_true(id.in_k8s);
	assert_string_equal(id.namespace, "shop");
	assert_string_equal(id.pod, "api-7d9f-x2x");
	assert_string_equal(id.pod_uid, UID);
	assert_string_equal(id.container, "api");
	assert_string_equal(id.container_id, CID);
	assert_string_equal(id.node, "node-a");
	close(fd);

	fd = fake_proc("p2", env_ra, sizeof(env_ra) - 1, CG_ONE, NULL);
	assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);
	assert_string_equal(id.service_name, "cart-v2");
	assert_int_equal(id.source, IDENTITY_SRC_OTEL_RESOURCE_ATTRIBUTES);
	close(fd);

	fd = fake_proc("p3", env_none, sizeof(env_none) - 1, CG_ONE, NULL);
	assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);
	assert_string_equal(id.service_name, "shop/api");
	assert_int_equal(id.source, IDENTITY_SRC_K8S);
	close(fd);

	/* Not in Kubernetes: the process name; given, or read from comm. */
	fd = fake_proc("p4", env_none, sizeof(env_none) - 1,
		       "0::/user.slice/user-1000.slice/session-2.scope\n", "myapp\n");
	assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);
	assert_string_equal(id.service_name, "dotnet");
	assert_int_equal(id.source, IDENTITY_SRC_COMM);
	assert_false(id.in_k8s);
	assert_string_equal(id.namespace, "");
	assert_string_equal(id.pod_uid, "");
	assert_int_equal(identity__resolve(ctx, fd, NULL, &id), 0);
	assert_string_equal(id.service_name, "myapp");
	assert_string_equal(identity_source__name(id.source), "comm");
	close(fd);

	/* No environ (unreadable, exited) and no cgroup file: still an answer. */
	fd = fake_proc("p5", NULL, 0, NULL, "lonely\n");
	assert_int_equal(identity__resolve(ctx, fd, NULL, &id), 0);
	assert_string_equal(id.service_name, "lonely");
	close(fd);
	fd = fake_proc("p6", NULL, 0, NULL, NULL);
	assert_int_equal(identity__resolve(ctx, fd, NULL, &id), 0);
	assert_string_equal(id.service_name, "");
	assert_int_equal(id.source, IDENTITY_SRC_NONE);
	assert_int_equal(identity__resolve(ctx, -1, NULL, &id), -EINVAL);
	close(fd);
	identity__free(ctx);
}

static void test_identity_two_containers(void **state)
{
	struct identity_ctx *ctx;
	struct proc_identity id;
	char pods[PATH_MAX];
	int fa, fb;

	(void)state;
	fake_pod("default", "web-0", UID2, (const char *[]){ "app", "envoy", NULL },
		 (const char *[]){ CID, CID2 });
	/* A look-alike in another pod must not match. */
	fake_pod("default", "web-1", UID3, (const char *[]){ "app", "envoy", NULL },
		 (const char *[]){ NODECID, NODECID });
	fa = fake_proc("two-a", NULL, 0, CG_TWO_A, NULL);
	fb = fake_proc("two-b", NULL, 0, CG_TWO_B, NULL);

	ctx = new_ctx();
	assert_int_equal(identity__resolve(ctx, fa, "dotnet", &id), 0);
	assert_string_equal(id.namespace, "default");
	assert_string_equal(id.pod, "web-0");
	assert_string_equal(id.container, "app");
	assert_string_equal(id.service_name, "default/app");
	assert_int_equal(identity__resolve(ctx, fb, "envoy", &id), 0);
	assert_string_equal(id.container, "envoy");
	assert_string_equal(id.service_name, "default/envoy");
	identity__free(ctx);

	/* Without the containers dir the container cannot be told; the pod still is. */
	path_of(pods, "pods");
	ctx = identity__new(pods, "/nonexistent/containers", "node-a");
	assert_non_null(ctx);
	assert_int_equal(identity__resolve(ctx, fa, "dotnet", &id), 0);
	assert_true(id.in_k8s);
	assert_string_equal(id.namespace, "default");
	assert_string_equal(id.pod, "web-0");
	assert_string_equal(id.container, "");
	assert_string_equal(id.container_id, CID);
	assert_string_equal(id.service_name, "dotnet");
	assert_int_equal(id.source, IDENTITY_SRC_COMM);
	identity__free(ctx);
	close(fa);
	close(fb);
}

static void test_identity_missing_pod_dir(void **state)
{
	static const char cg[] = "0::/kubepods/burstable/pod" UID3 "/" CID "\n";
	struct identity_ctx *ctx = new_ctx();
	struct proc_identity id;
	int fd = fake_proc("nopod", NULL, 0, cg, NULL);

	(void)state;
	assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);
	assert_true(id.in_k8s);
	assert_string_equal(id.pod_uid, UID3);
	assert_string_equal(id.container_id, CID);
	assert_string_equal(id.namespace, "");
	assert_string_equal(id.pod, "");
	assert_string_equal(id.container, "");
	assert_string_equal(id.service_name, "dotnet");
	assert_int_equal(identity__cached_pods(ctx), 0);
	identity__free(ctx);

	/* No pods dir at all. */
	ctx = identity__new("/nonexistent/pods", NULL, "n");
	assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);
	assert_string_equal(id.pod_uid, UID3);
	assert_string_equal(id.namespace, "");
	identity__free(ctx);
	close(fd);
}

static void test_identity_cache(void **state)
{
	static const char cg_new[] = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_US
				     ".slice/cri-containerd-" CID2 ".scope\n";
	struct identity_ctx *ctx;
	struct proc_identity id;
	char p[PATH_MAX], q[PATH_MAX];
	int fd, fd2, i;

	(void)state;
	fake_pod("shop", "api-0", UID, (const char *[]){ "api", NULL }, NULL);
	fd = fake_proc("c1", NULL, 0, CG_ONE, NULL);
	fd2 = fake_proc("c2", NULL, 0, cg_new, NULL);
	ctx = new_ctx();
	for (i = 0; i < 5; i++) {
		assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);
		assert_string_equal(id.container, "api");
	}
	assert_int_equal(identity__pod_scans(ctx), 1);
	assert_int_equal(identity__cached_pods(ctx), 1);

	/* A restarted container (new id) in a cached pod: no pods dir scan. */
	assert_int_equal(identity__resolve(ctx, fd2, "dotnet", &id), 0);
	assert_string_equal(id.container, "api");
	assert_string_equal(id.container_id, CID2);
	assert_int_equal(identity__pod_scans(ctx), 1);

	identity__forget(ctx, "no-such-uid");
	assert_int_equal(identity__cached_pods(ctx), 1);
	identity__forget(ctx, UID);
	assert_int_equal(identity__cached_pods(ctx), 0);
	assert_int_equal(identity__resolve(ctx, fd2, "dotnet", &id), 0);
	assert_int_equal(identity__pod_scans(ctx), 2);

	/* The pod dir renamed away (the pod deleted): the stale entry is noticed and dropped. */
	path_of(p, "pods/shop_api-0_" UID);
	path_of(q, "gone");
	assert_int_equal(rename(p, q), 0);
	assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);	/* cid cached: no look */
	assert_int_equal(identity__resolve(ctx, fd2, "dotnet", &id), 0);
	identity__forget(ctx, NULL);
	assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);
	assert_true(id.in_k8s);
	assert_string_equal(id.namespace, "");
	assert_int_equal(identity__cached_pods(ctx), 0);
	assert_int_equal(rename(q, p), 0);
	identity__free(ctx);
	close(fd);
	close(fd2);
}

static void test_identity_stale_cache_entry(void **state)
{
	static const char cg_c[] = "0::/kubepods/besteffort/pod" UID3 "/" CID "\n";
	static const char cg_d[] = "0::/kubepods/besteffort/pod" UID3 "/" CID2 "\n";
	struct identity_ctx *ctx;
	struct proc_identity id;
	char dir[PATH_MAX];
	int fc, fd;

	(void)state;
	fake_pod("ns1", "job-a", UID3, (const char *[]){ "worker", NULL }, NULL);
	fc = fake_proc("s1", NULL, 0, cg_c, NULL);
	fd = fake_proc("s2", NULL, 0, cg_d, NULL);
	ctx = new_ctx();
	assert_int_equal(identity__resolve(ctx, fc, "dotnet", &id), 0);
	assert_string_equal(id.pod, "job-a");
	/* The directory disappears; a new container id forces a look, which drops the entry and
	 * rescans (finding nothing). */
	path_of(dir, "pods/ns1_job-a_" UID3);
	assert_int_equal(testutil__rm_rf(dir), 0);
	assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);
	assert_string_equal(id.pod, "");
	assert_string_equal(id.pod_uid, UID3);
	assert_int_equal(identity__cached_pods(ctx), 0);
	assert_int_equal(identity__pod_scans(ctx), 2);
	identity__free(ctx);
	close(fc);
	close(fd);
}

static void test_identity_symlinks_refused(void **state)
{
	static const char cg[] = "0::/kubepods/burstable/pod" STATIC_UID "/" CID "\n";
	char target[PATH_MAX], link[PATH_MAX];
	struct identity_ctx *ctx;
	struct proc_identity id;
	int fd;

	(void)state;
	/* A pod entry that is a symlink to a directory elsewhere is not the kubelet's. */
	mkdirs("elsewhere/evil/app");
	mkdirs("pods");
	path_of(target, "elsewhere/evil");
	path_of(link, "pods/kube-system_etcd-node_" STATIC_UID);
	assert_int_equal(symlink(target, link), 0);
	fd = fake_proc("sym", NULL, 0, cg, NULL);
	ctx = new_ctx();
	assert_int_equal(identity__resolve(ctx, fd, "etcd", &id), 0);
	assert_string_equal(id.pod_uid, STATIC_UID);
	assert_string_equal(id.namespace, "");
	unlink(link);

	/* A symlinked container dir beside a real one is not counted: one container left. */
	fake_pod("kube-system", "etcd-node", STATIC_UID, (const char *[]){ "etcd", NULL }, NULL);
	path_of(target, "elsewhere/evil/app");
	path_of(link, "pods/kube-system_etcd-node_" STATIC_UID "/sidecar");
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(identity__resolve(ctx, fd, "etcd", &id), 0);
	assert_string_equal(id.namespace, "kube-system");
	assert_string_equal(id.pod, "etcd-node");
	assert_string_equal(id.container, "etcd");

	/* The cached pod dir swapped for a symlink (to a tree with one container "app"): a new
	 * container id makes the resolver look again, and the link is not followed. */
	{
		static const char cg2[] = "0::/kubepods/burstable/pod" STATIC_UID "/" CID2 "\n";
		char dir[PATH_MAX];
		int fd2 = fake_proc("sym2", NULL, 0, cg2, NULL);

		path_of(dir, "pods/kube-system_etcd-node_" STATIC_UID);
		assert_int_equal(testutil__rm_rf(dir), 0);
		path_of(target, "elsewhere/evil");
		path_of(link, "pods/kube-system_etcd-node_" STATIC_UID);
		assert_int_equal(symlink(target, link), 0);
		assert_int_equal(identity__resolve(ctx, fd2, "etcd", &id), 0);
		assert_string_equal(id.container, "");
		assert_string_equal(id.namespace, "");
		assert_int_equal(identity__cached_pods(ctx), 0);
		close(fd2);
	}
	identity__free(ctx);
	close(fd);
}

static void test_identity_bad_pod_dir_names(void **state)
{
	static const char cg[] = "0::/kubepods/burstable/pod" UID "/" CID "\n";
	struct identity_ctx *ctx;
	struct proc_identity id;
	int fd;

	(void)state;
	/* Names that end in the UID but are not <namespace>_<pod>_<uid>. */
	mkdirs("pods/" UID);
	mkdirs("pods/_" UID);
	mkdirs("pods/ns__" UID);
	mkdirs("pods/NS_pod_" UID);
	mkdirs("pods/ns_po d_" UID);
	mkdirs("pods/x" UID);
	write_file("pods/ns_file_" UID, "x", 1);
	fd = fake_proc("badnames", NULL, 0, cg, NULL);
	ctx = new_ctx();
	assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);
	assert_string_equal(id.namespace, "");
	assert_string_equal(id.pod, "");
	/* Then the real one. */
	fake_pod("prod", "api.v2-0", UID, (const char *[]){ "api", "INVALID_Name", NULL }, NULL);
	assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);
	assert_string_equal(id.namespace, "prod");
	assert_string_equal(id.pod, "api.v2-0");
	assert_string_equal(id.container, "api");	/* the invalid name is not a container */
	identity__free(ctx);
	close(fd);
}

static void test_identity_oversized_input(void **state)
{
	static const char sn[] = "OTEL_SERVICE_NAME=late";
	size_t big = IDENTITY_ENVIRON_MAX + 4096, i, cglen = IDENTITY_CGROUP_MAX * 2;
	struct identity_ctx *ctx = new_ctx();
	struct proc_identity id;
	char *env = malloc(big), *cgbuf = malloc(cglen + 1);
	int fd;

	(void)state;
	assert_non_null(env);
	assert_non_null(cgbuf);
	/* A 1 MiB+ environ whose OTEL_SERVICE_NAME is beyond the bound: not read. */
	for (i = 0; i < big; i++)
		env[i] = (i % 100 == 99) ? 0 : 'A';
	env[big - sizeof(sn) - 2] = 0;
	memcpy(env + big - sizeof(sn) - 1, sn, sizeof(sn));
	fd = fake_proc("bigenv", env, big, "0::/init.scope\n", NULL);
	assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);
	assert_string_equal(id.service_name, "dotnet");
	assert_int_equal(id.source, IDENTITY_SRC_COMM);
	close(fd);

	/* The same at the start: found, the rest ignored. */
	memset(env, 'B', big);
	memcpy(env, sn, sizeof(sn));
	fd = fake_proc("bigenv2", env, big, "0::/init.scope\n", NULL);
	assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);
	assert_string_equal(id.service_name, "late");
	close(fd);

	/* A cut entry at the bound is not taken for a whole one. */
	memset(env, 'C', big);
	memcpy(env, "X=1", 4);
	env[IDENTITY_ENVIRON_MAX - 31] = 0;
	memcpy(env + IDENTITY_ENVIRON_MAX - 30, "OTEL_SERVICE_NAME=cut-here", 26);
	fd = fake_proc("bigenv3", env, big, "0::/init.scope\n", NULL);
	assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);
	assert_int_equal(id.source, IDENTITY_SRC_COMM);
	close(fd);

	/* An oversized cgroup file: the pod in its first line still counts; the junk after the
	 * bound does not matter. */
	memset(cgbuf, '/', cglen);
	memcpy(cgbuf, CG_ONE, sizeof(CG_ONE) - 1);
	cgbuf[cglen] = 0;
	fd = fake_proc("bigcg", NULL, 0, cgbuf, NULL);
	assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);
	assert_string_equal(id.pod_uid, UID);
	close(fd);

	/* Garbage in both. */
	for (i = 0; i < cglen; i++) {
		cgbuf[i] = (char)((i * 131 + 7) & 0xff);
		if (!cgbuf[i])
			cgbuf[i] = 'x';
	}
	cgbuf[cglen] = 0;
	fd = fake_proc("junk", cgbuf, cglen, cgbuf, NULL);
	assert_int_equal(identity__resolve(ctx, fd, "dotnet", &id), 0);
	assert_false(id.in_k8s);
	assert_string_equal(id.service_name, "dotnet");
	close(fd);
	free(env);
	free(cgbuf);
	identity__free(ctx);
}

/* Each test gets a fresh temp tree. */
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_identity_cgroup_v2_systemd),
		T(test_identity_cgroup_cgroupfs),
		T(test_identity_cgroup_v1),
		T(test_identity_cgroup_nested),
		T(test_identity_cgroup_not_k8s),
		T(test_identity_cgroup_garbage),
		T(test_identity_environ_precedence),
		T(test_identity_environ_resource_attributes),
		T(test_identity_environ_too_long),
		T(test_identity_default_node),
		T(test_identity_resolve_precedence),
		T(test_identity_two_containers),
		T(test_identity_missing_pod_dir),
		T(test_identity_cache),
		T(test_identity_stale_cache_entry),
		T(test_identity_symlinks_refused),
		T(test_identity_bad_pod_dir_names),
		T(test_identity_oversized_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
