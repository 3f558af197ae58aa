#!/usr/bin/env bash
# deploy.sh: the Kubernetes manifests, rendered and checked without a cluster (issue 33).
# `kubectl kustomize` of the base with every combination of the components (pyroscope, otlp,
# off-cpu, podmonitor: 16), each checked against the Kubernetes schema
# (deploy/tools/validate-manifests.mjs: kubernetes-models, and the Prometheus Operator's models for
# the PodMonitor) and for what the DaemonSet must be: the generated ConfigMap's hashed name in the
# pod template (and a changed setting changes it), the least-privilege capability set, the state
# on a hostPath, the symbol cache's volume, every agent option one that `spanprof agent --help`
# knows (when build/spanprof is built). Then the app side: deploy/kubernetes/app-patch's workloads of
# every kind through deploy/tools/inject-hook.mjs: annotated containers get the hook appended to
# their DOTNET_STARTUP_HOOKS, others nothing; a second run changes nothing; a wrong container name
# and a DOTNET_STARTUP_HOOKS from valueFrom are refused.
. "$(dirname "$0")/lib.sh"
need_cmd kubectl node
VT=$ROOT/deploy/tools
K=$ROOT/deploy/kubernetes
need_node_modules "$VT" kubernetes-models @kubernetes-models/prometheus-operator
HELP=
if [ -x "$SPANPROF" ]; then HELP=$("$SPANPROF" agent --help); else note "no $SPANPROF: agent options not checked"; fi

# ds_check FILE: facts of the rendered DaemonSet, as JSON lines of problems (none: empty output).
ds_check() {
	node --input-type=module -e '
import fs from "node:fs";
import { createRequire } from "node:module";
const YAML = createRequire(process.argv[1] + "/")("yaml");
const docs = YAML.parseAllDocuments(fs.readFileSync(process.argv[2], "utf8")).map((d) => d.toJS());
const bad = (m) => console.log(m);
const ds = docs.find((o) => o.kind === "DaemonSet"), cm = docs.find((o) => o.kind === "ConfigMap");
if (!ds || !cm) { bad("no DaemonSet or ConfigMap"); process.exit(0); }
if (!/^spanprof-config-[a-z0-9]{10}$/.test(cm.metadata.name)) bad(`ConfigMap name not hashed: ${cm.metadata.name}`);
const pod = ds.spec.template.spec, c = pod.containers[0];
for (const e of c.env ?? []) {
  const r = e.valueFrom?.configMapKeyRef;
  if (r && r.name !== cm.metadata.name) bad(`env ${e.name} refers to ConfigMap ${r.name}, not ${cm.metadata.name}`);
  if (r && !(r.key in (cm.data ?? {}))) bad(`env ${e.name}: key ${r.key} not in the ConfigMap`);
}
const caps = c.securityContext.capabilities.add;
for (const want of ["BPF", "PERFMON", "SYS_PTRACE", "CHECKPOINT_RESTORE", "DAC_OVERRIDE", "SYSLOG", "SYS_RESOURCE"])
  if (!caps.includes(want)) bad(`capability ${want} missing`);
for (const no of ["SYS_ADMIN", "CAP_SYS_ADMIN", "NET_ADMIN"]) if (caps.includes(no)) bad(`capability ${no} present`);
if (c.securityContext.privileged) bad("privileged");
if (c.securityContext.allowPrivilegeEscalation !== false) bad("allowPrivilegeEscalation is not false");
const vol = (n) => pod.volumes.find((v) => v.name === n), mnt = (n) => c.volumeMounts.find((m) => m.name === n);
if (pod.volumes.some((v) => (v.hostPath?.path ?? "").startsWith("/sys/fs/cgroup"))) bad("/sys/fs/cgroup mounted");
const state = c.env.find((e) => e.name === "SPANPROF_STATE_DIR")?.value;
if (vol("state")?.hostPath?.path !== "/var/lib/spanprof" || mnt("state")?.mountPath !== state) bad(`state: SPANPROF_STATE_DIR=${state}, volume ${JSON.stringify(vol("state"))}, mount ${JSON.stringify(mnt("state"))}`);
const cacheDefault = (process.argv[3].match(/--symbol-cache DIR .*default ([^)]*)\)/) ?? [])[1] ?? "/var/cache/spanprof/debug";
const cm_ = mnt("symbol-cache");
if (!cm_ || !cacheDefault.startsWith(cm_.mountPath + "/")) bad(`symbol cache ${cacheDefault} not on a volume`);
if (!pod.hostPID) bad("no hostPID");
if (process.argv[3]) for (const a of c.args) if (a.startsWith("--") && !process.argv[3].includes(a.split("=")[0] + " ") && !process.argv[3].includes(a.split("=")[0] + ",")) bad(`agent option ${a} not in spanprof agent --help`);
if (!c.args.some((a) => a === "--pyroscope-url" || a === "--otlp" || a === "--otlp-url")) bad("no destination (--pyroscope-url, --otlp)");
' "$VT/node_modules" "$1" "$HELP"
}

# ---- every combination of the components -------------------------------------------------------
# All 16 subsets of the four. Those without a destination (neither pyroscope nor otlp) render and
# are valid objects, but the agent exits at start without one: the destination check says so.
COMPONENTS=(pyroscope otlp off-cpu podmonitor)
n=0
for mask in $(seq 0 15); do
	comps=()
	for i in 0 1 2 3; do (( mask >> i & 1 )) && comps+=("${COMPONENTS[$i]}"); done
	name=$(IFS=+; echo "${comps[*]:-base}")
	d=$TMP/overlay-$name
	mkdir -p "$d"
	rel=$(realpath --relative-to="$d" "$K")	# kustomize takes no absolute paths
	{
		echo "resources: [$rel/base]"
		echo "components: [$(for c in "${comps[@]}"; do printf '%s' "${c/#/, $rel/components/}"; done | cut -c3-)]"
	} > "$d/kustomization.yaml"
	kubectl kustomize "$d" > "$d/out.yaml" 2> "$d/err" || { cat "$d/err"; fail "$name: kubectl kustomize"; }
	node "$VT/validate-manifests.mjs" "$d/out.yaml" > "$d/schema" || { cat "$d/schema"; fail "$name: schema check"; }
	probs=$(ds_check "$d/out.yaml")
	if [[ " ${comps[*]} " == *" pyroscope "* || " ${comps[*]} " == *" otlp "* ]]; then
		[ -z "$probs" ] || fail "$name: $probs"
	else
		[ "$probs" = "no destination (--pyroscope-url, --otlp)" ] || fail "$name (no destination): $probs"
	fi
	if [[ " ${comps[*]} " == *" podmonitor "* ]]; then grep -q '^kind: PodMonitor' "$d/out.yaml" || fail "$name: no PodMonitor"; fi
	if [[ " ${comps[*]} " == *" otlp "* ]]; then
		grep -q 'name: OTEL_EXPORTER_OTLP_PROTOCOL' "$d/out.yaml" && grep -q 'otlp-protocol: http/protobuf' "$d/out.yaml" ||
			fail "$name: no OTEL_EXPORTER_OTLP_PROTOCOL from the ConfigMap's otlp-protocol"
	fi
	n=$((n + 1))
done
pass "$n combinations of base + components render and match the schema; the DaemonSet holds (hashed ConfigMap, capabilities, state, cache, options; a destination in the 12 that have one)"

# The default kustomization is base + pyroscope.
kubectl kustomize "$K" > "$TMP/default.yaml"
node "$VT/validate-manifests.mjs" "$TMP/default.yaml" > /dev/null || fail "deploy/kubernetes: schema check"
probs=$(ds_check "$TMP/default.yaml")
[ -z "$probs" ] || fail "deploy/kubernetes: $probs"
pass "deploy/kubernetes (base + pyroscope) renders and holds"

# A changed setting, in the overlay form deploy/README.md shows (base, a component, and a merge of
# the ConfigMap in one kustomization): the value is the overlay's (a component's own generator would
# undo it) and the ConfigMap's name in the pod template changes (the pods roll).
mkdir -p "$TMP/changed"
cat > "$TMP/changed/kustomization.yaml" <<EOF2
resources: [$(realpath --relative-to="$TMP/changed" "$K/base")]
components: [$(realpath --relative-to="$TMP/changed" "$K/components/pyroscope")]
configMapGenerator:
  - name: spanprof-config
    behavior: merge
    literals: [pyroscope-url=https://pyroscope.example.com]
EOF2
kubectl kustomize "$TMP/changed" > "$TMP/changed.yaml"
ref() { awk '/configMapKeyRef:/ { c = 1 } c && /name:/ { print $2; exit }' "$1"; }
a=$(ref "$TMP/default.yaml") b=$(ref "$TMP/changed.yaml")
[ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ] || fail "the pod template's ConfigMap name did not change with a setting: '$a' '$b'"
grep -q 'pyroscope-url: https://pyroscope.example.com' "$TMP/changed.yaml" || fail "the overlay's setting is not in the ConfigMap"
pass "a changed setting renames the ConfigMap in the pod template ($a -> $b): the DaemonSet rolls"

# ---- the app side: inject-hook.mjs on workloads of every kind -----------------------------------
kubectl kustomize "$K/app-patch" > "$TMP/apps.yaml"
node "$VT/inject-hook.mjs" --image registry.example/spanprof-hook:1 "$TMP/apps.yaml" > "$TMP/apps.out.yaml" ||
	fail "inject-hook.mjs on app-patch"
node "$VT/validate-manifests.mjs" "$TMP/apps.out.yaml" > "$TMP/apps.schema" || { cat "$TMP/apps.schema"; fail "app-patch + inject-hook: schema check"; }
r=$(node --input-type=module -e '
import fs from "node:fs";
import { createRequire } from "node:module";
const YAML = createRequire(process.argv[1] + "/")("yaml");
const docs = YAML.parseAllDocuments(fs.readFileSync(process.argv[2], "utf8")).map((d) => d.toJS());
const tpl = (o) => o.kind === "CronJob" ? o.spec.jobTemplate.spec.template : o.spec.template;
const out = {};
for (const o of docs) {
  const p = tpl(o).spec;
  out[o.kind + "/" + o.metadata.name] = {
    init: (p.initContainers ?? []).map((c) => `${c.name}=${c.image}`).join(","),
    hooks: Object.fromEntries(p.containers.map((c) => [c.name, (c.env ?? []).find((e) => e.name === "DOTNET_STARTUP_HOOKS")?.value ?? null])),
    mounts: p.containers.filter((c) => (c.volumeMounts ?? []).some((m) => m.name === "spanprof-hook" && m.readOnly)).map((c) => c.name).join(","),
  };
}
console.log(JSON.stringify(out));' "$VT/node_modules" "$TMP/apps.out.yaml")
H=/spanprof-hook/SpanProf.Hook.dll
OTEL=/otel-auto-instrumentation-dotnet/net/OpenTelemetry.AutoInstrumentation.StartupHook.dll
expect() { # KEY JS-EXPR VALUE
	local got
	got=$(node -pe "const r = ($r); JSON.stringify(r['$1']$2)")
	[ "$got" = "$3" ] || fail "$1$2: $got, want $3"
}
expect Deployment/example-web .hooks "{\"proxy\":null,\"web\":\"$OTEL:$H\"}"
expect Deployment/example-web .mounts '"web"'
expect Deployment/example-web .init '"spanprof-hook=registry.example/spanprof-hook:1"'
expect StatefulSet/example-store .hooks "{\"store\":\"$H\"}"
expect DaemonSet/example-node-worker .hooks "{\"worker\":\"$H\"}"
expect Job/example-migrate .hooks "{\"migrate\":\"$H\"}"
expect CronJob/example-report .hooks "{\"report\":\"$H\"}"
expect CronJob/example-report .init '"spanprof-hook=registry.example/spanprof-hook:1"'
expect Deployment/example-untouched .hooks '{"app":null}'
expect Deployment/example-untouched .init '""'
pass "inject-hook.mjs: Deployment, StatefulSet, DaemonSet, Job, CronJob get the hook in the annotated containers (appended to an existing DOTNET_STARTUP_HOOKS), others nothing; schema-valid"

node "$VT/inject-hook.mjs" --image registry.example/spanprof-hook:1 "$TMP/apps.out.yaml" > "$TMP/apps.again.yaml"
cmp -s "$TMP/apps.out.yaml" "$TMP/apps.again.yaml" || { diff "$TMP/apps.out.yaml" "$TMP/apps.again.yaml" | head; fail "a second run changed the output"; }
pass "inject-hook.mjs twice: the same output"

sed 's/spanprof.io\/container-names: web/spanprof.io\/container-names: wbe/' "$TMP/apps.yaml" > "$TMP/wrong.yaml"
rc=0; node "$VT/inject-hook.mjs" "$TMP/wrong.yaml" > /dev/null 2> "$TMP/wrong.err" || rc=$?
[ "$rc" = 1 ] && grep -q 'names container "wbe", the pod has proxy, web' "$TMP/wrong.err" || fail "a wrong container name: exit $rc, $(cat "$TMP/wrong.err")"
cat > "$TMP/valuefrom.yaml" <<'EOF2'
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {spanprof.io/inject-dotnet: "true"}}
spec:
  containers:
    - name: app
      image: x
      env: [{name: DOTNET_STARTUP_HOOKS, valueFrom: {configMapKeyRef: {name: c, key: k}}}]
EOF2
rc=0; node "$VT/inject-hook.mjs" "$TMP/valuefrom.yaml" > /dev/null 2> "$TMP/vf.err" || rc=$?
[ "$rc" = 1 ] && grep -q 'DOTNET_STARTUP_HOOKS comes from valueFrom' "$TMP/vf.err" || fail "valueFrom: exit $rc, $(cat "$TMP/vf.err")"
pass "inject-hook.mjs refuses a wrong container name and a DOTNET_STARTUP_HOOKS from valueFrom (exit 1, nothing written)"
