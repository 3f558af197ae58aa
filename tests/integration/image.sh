#!/usr/bin/env bash
# image.sh: the deployment (deploy/), as the cluster would run it, with nothing written by hand.
# Builds the agent image and the hook-only image with podman as deploy/README.md says for a machine
# without Docker (deploy/build-local.sh: a bookworm base, an SDK image from the host's .NET SDK,
# deploy/Dockerfile, deploy/hook.Dockerfile on a local busybox), renders the DaemonSet with
# `kubectl kustomize` (base + pyroscope, the URL pointed at a local Pyroscope receiver by an
# overlay, as a user would) and the example workloads through deploy/tools/inject-hook.mjs, then:
#   - the init container of the rendered workloads, from the hook-only image, as uid 65532 with no
#     capabilities: it copies the hook into a directory standing in for the emptyDir;
#   - a .NET app (HotChain) as nobody, loading the copied hook from there, no perf map;
#   - the agent container of the rendered DaemonSet (tests/integration/podspec.js: its command,
#     args and env with ConfigMap references resolved, its volume mounts, and its capabilities)
#     inside the image,
#     three times on the same app: with the rendered capabilities (CHECKPOINT_RESTORE), with
#     SYS_ADMIN in its place, and with neither. Each time: the effective capabilities of the agent
#     process are exactly those, /healthz and /metrics answer, pushes reach the receiver, and the
#     .NET frames of the app are named as well as with the rendered set; the symbolizer's count of
#     mapped files opened by handle (/proc/<pid>/map_files) and by path shows which way each took.
#
# Running the image: `podman run` is refused here (setrlimit in the OCI runtime), so the image
# runs through a buildah working container with chroot isolation, which shares the host's pid,
# network and cgroup namespaces (like hostPID: true) and shows the host's /proc and /sys
# (/sys/kernel/btf/vmlinux included: no extra mount). `--security-opt seccomp=unconfined` as the
# DaemonSet's seccompProfile. buildah cannot limit capabilities exactly (`--cap-drop ALL` with
# `--cap-add` drops everything), so the container gets a superset and `setpriv` inside it sets
# the bounding, inheritable and ambient sets to the wanted ones and no_new_privs
# (allowPrivilegeEscalation: false) before exec'ing the agent as uid 0 (runAsUser: 0): for uid 0
# exec then makes the permitted and effective sets the bounding set, as the container runtime does.
# A capability that this shell's own bounding set lacks (CAP_SYS_RESOURCE in some sandboxes) cannot
# be granted: it is left out of every run and named in the output.
#
# Environment: SPANPROF_IT_IMAGE (default localhost/spanprof:test), SPANPROF_IT_HOOK_IMAGE
# (localhost/spanprof-hook:test). Timings of each phase are printed at the end.
. "$(dirname "$0")/lib.sh"
need_root "podman's root storage, debootstrap, BPF"

T_START=$(date +%s)
IMAGE=${SPANPROF_IT_IMAGE:-localhost/spanprof:test}
HOOK_IMAGE=${SPANPROF_IT_HOOK_IMAGE:-localhost/spanprof-hook:test}
CTR=spanprof-it-image HCTR=spanprof-it-hook
SERVICE=spanprof-it-dotnet
OUT=$TMP/out		# bind-mounted at /out in the container: profiles come out through it
mkdir -p "$OUT"
chmod 755 "$TMP"

# ---- tools ---------------------------------------------------------------------------------------
missing=()
for c in podman buildah debootstrap; do command -v "$c" > /dev/null || missing+=("$c"); done
if [ ${#missing[@]} -gt 0 ]; then
	note "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	{ apt-get install -y -qq --no-install-recommends podman buildah debootstrap ||
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends podman buildah debootstrap; }
	} > "$TMP/apt.log" 2>&1 || true
	for c in podman buildah debootstrap; do
		command -v "$c" > /dev/null || skip "$c not installed and apt-get could not install it"
	done
fi
[ -r /sys/kernel/btf/vmlinux ] || skip "no /sys/kernel/btf/vmlinux: the image build compiles BPF against it"
need_cmd dotnet node kubectl setpriv
APPSRC=$BUILD/apps/HotChain
need_built "$APPSRC/HotChain"
VT=$ROOT/deploy/tools
need_node_modules "$VT" yaml kubernetes-models @kubernetes-models/prometheus-operator
need_node_modules "$ROOT/tests/tools" protobufjs pprof-format

# ---- a Pyroscope for the agents to push to ---------------------------------------------------------
spawn "$TMP/receiver.log" node "$ROOT/tests/tools/pyroscope-receiver.js" --port 0 \
	--ready "$TMP/receiver.port" --out "$TMP/pushes.jsonl"
poll 20 test -s "$TMP/receiver.port" || { cat "$TMP/receiver.log"; fail "the Pyroscope receiver did not start"; }
RPORT=$(cat "$TMP/receiver.port")

# ---- the manifests, rendered ---------------------------------------------------------------------
K=$ROOT/deploy/kubernetes
mkdir -p "$TMP/overlay"
cat > "$TMP/overlay/kustomization.yaml" <<EOF2
resources: [$(realpath --relative-to="$TMP/overlay" "$K/base")]
components: [$(realpath --relative-to="$TMP/overlay" "$K/components/pyroscope")]
configMapGenerator:
  - name: spanprof-config
    behavior: merge
    literals: [pyroscope-url=http://127.0.0.1:$RPORT]
EOF2
kubectl kustomize "$TMP/overlay" > "$TMP/agent.yaml" || fail "kubectl kustomize (base + pyroscope)"
kubectl kustomize "$K/app-patch" | node "$VT/inject-hook.mjs" --image "$HOOK_IMAGE" > "$TMP/app.yaml" ||
	fail "kubectl kustomize deploy/kubernetes/app-patch | inject-hook.mjs"
node "$VT/validate-manifests.mjs" "$TMP/agent.yaml" > "$TMP/schema.txt" || { cat "$TMP/schema.txt"; fail "the DaemonSet: schema check"; }
node "$VT/validate-manifests.mjs" "$TMP/app.yaml" > "$TMP/schema.txt" || { cat "$TMP/schema.txt"; fail "app-patch: schema check"; }
pass "rendered: the DaemonSet (base + pyroscope, $(grep -c '^kind:' "$TMP/agent.yaml") objects) and app-patch through inject-hook.mjs, schema-valid"

# The init container and the hook path of the StatefulSet example (its only container, hook added).
read_app() {
	node -e '
const y = require(process.argv[1]);
const docs = y.parseAllDocuments(require("fs").readFileSync(process.argv[2], "utf8")).map((d) => d.toJS());
const p = docs.find((o) => o.kind === "StatefulSet").spec.template.spec;
const what = process.argv[3];
if (what === "init") for (const a of p.initContainers[0].command) console.log(a);
if (what === "image") console.log(p.initContainers[0].image);
if (what === "user") console.log(p.initContainers[0].securityContext.runAsUser);
if (what === "hooks") console.log(p.containers[0].env.find((e) => e.name === "DOTNET_STARTUP_HOOKS").value);' \
	"$VT/node_modules/yaml" "$TMP/app.yaml" "$1"
}

# ---- build ---------------------------------------------------------------------------------------
stamp() { date +%s; }
t0=$(stamp)
phase() { # NAME: deploy/build-local.sh NAME, or fail showing its log
	IMAGE=$IMAGE HOOK_IMAGE=$HOOK_IMAGE "$ROOT/deploy/build-local.sh" "$1" > "$TMP/build-$1.log" 2>&1 ||
		{ tail -60 "$TMP/build-$1.log"; fail "deploy/build-local.sh $1"; }
}
phase base; t1=$(stamp)
phase sdk; t2=$(stamp)
phase image; t3=$(stamp)
phase hook; t4=$(stamp)
grep -h '^build-local:' "$TMP"/build-*.log | sed 's/^/  /'
pass "images built: base $((t1 - t0))s, sdk $((t2 - t1))s, image $((t3 - t2))s, hook $((t4 - t3))s"

entry=$(podman image inspect --format '{{json .Config.Entrypoint}}' "$IMAGE")
[ "$entry" = '["/usr/local/bin/spanprof","agent"]' ] || fail "entrypoint is $entry, want spanprof agent"
hsize=$(podman image inspect --format '{{.Size}}' "$HOOK_IMAGE")
[ "$hsize" -lt $((8 << 20)) ] || fail "the hook-only image is $hsize bytes"
pass "agent image entrypoint $entry; hook-only image $(awk -v b="$hsize" 'BEGIN { printf "%.2f MB", b / 1e6 }')"

# ---- working containers --------------------------------------------------------------------------
ALL_CAPS=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE
	NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT
	SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE
	AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ
	PERFMON BPF CHECKPOINT_RESTORE)
cap_bit() { local i; for i in "${!ALL_CAPS[@]}"; do [ "${ALL_CAPS[$i]}" = "$1" ] && { echo "$i"; return; }; done; fail "unknown capability $1"; }
bnd=$((16#$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)))
grantable() { (( bnd >> $(cap_bit "$1") & 1 )); }
cap_mask() { local m=0 c; for c; do m=$((m | 1 << $(cap_bit "$c"))); done; printf '%016x' "$m"; }

buildah rm "$CTR" "$HCTR" > /dev/null 2>&1 || true
buildah from --name "$CTR" --security-opt seccomp=unconfined --pull=never "$IMAGE" > /dev/null
buildah from --name "$HCTR" --pull=never "$HOOK_IMAGE" > /dev/null
# lib.sh's cleanup is the EXIT trap (it stops the registered processes, agents included): the
# working containers go first, keeping the exit status.
image_cleanup() {
	local rc=$?
	trap - ERR
	set +e
	stop "${PIDS_TO_KILL[@]}"
	buildah rm "$CTR" "$HCTR" > /dev/null 2>&1
	(exit "$rc")	# lib.sh's cleanup takes the exit status from $?
	cleanup
}
trap image_cleanup EXIT

v=$(buildah run --isolation=chroot "$CTR" -- spanprof --version)
buildah run --isolation=chroot "$CTR" -- ldd /usr/local/bin/spanprof > "$TMP/ldd.txt"
if grep -q 'not found' "$TMP/ldd.txt"; then cat "$TMP/ldd.txt"; fail "libraries missing in the image"; fi
pass "in the image: spanprof --version ($v), ldd ($(grep -c '=>' "$TMP/ldd.txt") libraries, none missing)"

# ---- the init container: hook-only image, uid 65532, no capabilities --------------------------------
world_dir	# the hook volume and the app run as nobody below: somewhere nobody can reach (lib.sh)
HOOKVOL=$WORLD_DIR/spanprof-hook
mkdir -m 1777 "$HOOKVOL"
mapfile -t initcmd < <(read_app init)
[ "$(read_app image)" = "$HOOK_IMAGE" ] || fail "init container image $(read_app image), want $HOOK_IMAGE"
uid=$(read_app user)
buildah run --isolation=chroot --user "$uid:$uid" --cap-drop "$(IFS=,; echo "${ALL_CAPS[*]/#/CAP_}")" \
	-v "$HOOKVOL:/spanprof-hook" "$HCTR" -- "${initcmd[@]}" || fail "the init container's command ${initcmd[*]}"
[ "$(stat -c %u "$HOOKVOL/SpanProf.Hook.dll")" = "$uid" ] || fail "init container copy: wrong owner"
pass "init container (hook-only image) as uid $uid: ${initcmd[*]} copies $(ls "$HOOKVOL" | wc -l) files"

# ---- the app: as nobody, with the copied hook, no perf map --------------------------------------------
cp -a "$APPSRC" "$WORLD_DIR/HotChain"
hookpath=$(read_app hooks)
# Every variable is set before setpriv, so each program of the chain (setpriv, HotChain) has the
# same environment: the service name cannot depend on which exec a reader saw. (The agent names a
# process by the program it exec'd into last, from /proc/<pid>/environ, and the hook by
# OTEL_SERVICE_NAME, else the entry assembly: HotChain.)
start_app --timeout 60 "$TMP/app.out" env -u DOTNET_PerfMapEnabled HOME=/tmp OTEL_SERVICE_NAME=$SERVICE \
	DOTNET_STARTUP_HOOKS="$HOOKVOL/${hookpath##*/}" \
	setpriv --reuid 65534 --regid 65534 --clear-groups "$WORLD_DIR/HotChain/HotChain" 300
APP=$APP_PID
tr '\0' '\n' < "/proc/$APP/environ" | grep -qx "OTEL_SERVICE_NAME=$SERVICE" ||
	fail "the app's environment lacks OTEL_SERVICE_NAME=$SERVICE"
[ "$(awk '/^Uid:/ { print $2 }' "/proc/$APP/status")" = 65534 ] || fail "the app does not run as nobody"
note "app: pid $APP, uid 65534, DOTNET_STARTUP_HOOKS=$HOOKVOL/${hookpath##*/}"

# ---- the agent container of the rendered DaemonSet ---------------------------------------------------
mapfile -t ARGV < <(node "$ROOT/tests/integration/podspec.js" "$TMP/agent.yaml" --part argv --entrypoint "$entry")
mapfile -t ENVS < <(node "$ROOT/tests/integration/podspec.js" "$TMP/agent.yaml" --part env --node it-node)
mapfile -t WANT < <(node "$ROOT/tests/integration/podspec.js" "$TMP/agent.yaml" --part caps)
[ ${#ARGV[@]} -gt 2 ] && [ ${#WANT[@]} -ge 3 ] || fail "podspec.js: argv (${ARGV[*]}), caps (${WANT[*]})"
# Its volumes: a hostPath from a directory standing in for the node's (under $TMP/host: the real
# /var/lib/spanprof may be another agent's here), an emptyDir from a fresh directory; kept across
# the three runs, as a node keeps its hostPaths across pod replacements.
MOUNTS=()
while IFS=$'\t' read -r mpath how kind src; do
	case $kind in
	hostPath) d=$TMP/host$src ;;
	emptyDir) d=$TMP/vol/$src ;;
	esac
	mkdir -p "$d"
	MOUNTS+=(-v "$d:$mpath:$how")
done < <(node "$ROOT/tests/integration/podspec.js" "$TMP/agent.yaml" --part mounts)
[ ${#MOUNTS[@]} -gt 0 ] || fail "podspec.js: no volume mounts"
note "rendered: ${ENVS[*]} ${ARGV[*]}; capabilities ${WANT[*]}; ${MOUNTS[*]}"
# The test's own additions, after the rendered args (later options win): an ephemeral metrics
# port (9464 may be taken here), windows of 3 s at 99 Hz written to /out too, and the report.
EXTRA=(--metrics-addr 127.0.0.1:0 -F 99 --interval 3 -v)
GRANT=() LEFT=()
for c in "${WANT[@]}"; do if grantable "$c"; then GRANT+=("$c"); else LEFT+=("$c"); fi; done
[ ${#LEFT[@]} -eq 0 ] || note "not in this shell's bounding set, so granted in no run: ${LEFT[*]}"
grantable SYS_ADMIN || fail "CAP_SYS_ADMIN not in this shell's bounding set: the comparison needs it"
# The working container's superset: the wanted capabilities, SYS_ADMIN, and SETPCAP for setpriv.
sup=("${GRANT[@]}" SYS_ADMIN SETPCAP) drop=()
for c in "${ALL_CAPS[@]}"; do [[ " ${sup[*]} " == *" $c "* ]] || drop+=("CAP_$c"); done
BCAPS=(--cap-drop "$(IFS=,; echo "${drop[*]}")" --cap-add "$(IFS=,; c=("${sup[@]/#/CAP_}"); echo "${c[*]}")")

# run_agent NAME CAP...: the rendered agent under exactly CAP..., until the app's service has four
# windows in /out/NAME.d; sets NAMED (fraction of the app's samples named), BY_HANDLE, BY_PATH.
run_agent() {
	local name=$1 list pid bpid port f win rc=0 i total named nwin r per
	shift
	list=-all$(printf ',+%s' "${@,,}")
	mkdir -p "$OUT/$name.d"
	# sh writes its pid (that of the agent it execs into: the host's pid namespace) for the checks.
	buildah run --isolation=chroot "${BCAPS[@]}" -v "$OUT:/out" "${MOUNTS[@]}" "$CTR" -- \
		setpriv --no-new-privs --bounding-set="$list" --inh-caps="$list" --ambient-caps="$list" -- \
		sh -c 'echo $$ > "$0"; exec "$@"' "/out/$name.pid" \
		env "${ENVS[@]}" "${ARGV[@]}" "${EXTRA[@]}" --output-dir "/out/$name.d" > "$TMP/$name.txt" 2>&1 &
	bpid=$!
	register "$bpid"
	poll 20 test -s "$OUT/$name.pid" || { cat "$TMP/$name.txt"; fail "$name: the agent did not start"; }
	pid=$(cat "$OUT/$name.pid")
	register "$pid"
	wait_for_line "$TMP/$name.txt" 'metrics on port [0-9]' 30
	[ "$(awk '/^CapEff:/ { print $2 }' "/proc/$pid/status")" = "$(cap_mask "$@")" ] ||
		fail "$name: agent pid $pid CapEff $(awk '/^CapEff:/ { print $2 }' "/proc/$pid/status"), want $(cap_mask "$@") ($*)"
	[ "$(awk '/^NoNewPrivs:/ { print $2 }' "/proc/$pid/status")" = 1 ] || fail "$name: no_new_privs not set"
	[ "$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status")" = 0 ] || fail "$name: the agent is not uid 0"
	port=$(grep -o -m1 'metrics on port [0-9]*' "$TMP/$name.txt" | awk '{ print $NF }')
	[ "$(curl -fsS "http://127.0.0.1:$port/healthz")" = ok ] || fail "$name: /healthz is not ok"
	curl -fsS "http://127.0.0.1:$port/metrics" > "$TMP/$name.metrics" || fail "$name: /metrics"
	windows() { [ "$(ls "$OUT/$name.d/$SERVICE" 2>/dev/null | wc -l)" -ge 4 ]; }
	poll 60 windows || { cat "$TMP/$name.txt"; ls -R "$OUT/$name.d"; fail "$name: fewer than 4 windows of $SERVICE after 60 s"; }
	kill -TERM "$pid"
	for i in $(seq 100); do alive "$pid" || break; sleep 0.1; done
	wait "$bpid" || rc=$?	# buildah run, with the agent's exit status
	[ "$rc" = 0 ] || { cat "$TMP/$name.txt"; fail "$name: the agent's exit status after SIGTERM: $rc"; }
	grep -q 'kernel symbols hidden' "$TMP/$name.txt" && fail "$name: kernel symbols hidden: CAP_SYSLOG missing?"
	# The windows of the service after its first (which holds the time before the agent turned the
	# app's perf map on, whatever the capabilities; the names sort by time): samples of the app, and
	# those with .NET frames all named.
	total=0 named=0 nwin=0 per=""
	for win in $(ls "$OUT/$name.d/$SERVICE/"*.pb.gz | sed 1d); do
		cp "$win" "$TMP/$name-$nwin.pb.gz"
		decode "$TMP/$name-$nwin.pb.gz"
		r=$(query managed "$TMP/$name-$nwin.json" --pid "$APP")
		total=$((total + $(field "$r" total))) named=$((named + $(field "$r" named))) nwin=$((nwin + 1))
		per+=" $(field "$r" named)/$(field "$r" total)"
	done
	SAMPLES=$total
	[ "$SAMPLES" -ge 50 ] || fail "$name: only $SAMPLES samples of the app in $nwin windows"
	NAMED=$(awk -v n="$named" -v t="$total" 'BEGIN { printf "%.3f", n / t }')
	f=$(grep 'mapped files opened:' "$TMP/$name.txt" | tail -1)
	BY_HANDLE=$(sed -n 's/.*opened: \([0-9]*\) by handle.*/\1/p' <<< "$f")
	BY_PATH=$(sed -n 's/.* \([0-9]*\) by path.*/\1/p' <<< "$f")
	[ -n "$BY_HANDLE" ] && [ -n "$BY_PATH" ] || { cat "$TMP/$name.txt"; fail "$name: no 'mapped files opened' line in the agent's report"; }
	note "$name ($*): CapEff $(cap_mask "$@"), .NET frames named in $NAMED of the app's $SAMPLES samples ($nwin windows after the first:$per), mapped files opened by handle $BY_HANDLE, by path $BY_PATH"
}

run_agent rendered "${GRANT[@]}"
N0=$NAMED
ge "$N0" 0.90 || { cat "$TMP/rendered.txt"; fail "rendered capabilities: .NET frames named in only $N0 of the samples"; }
[ "$BY_HANDLE" -gt 0 ] || fail "rendered capabilities (CHECKPOINT_RESTORE): no file opened through map_files"
grep -qE '^spanprof_processes\{[^}]*kind="span_table"[^}]*\} [1-9]' "$TMP/rendered.metrics" ||
	{ grep '^spanprof_processes' "$TMP/rendered.metrics"; fail "rendered: the span table of the app (uid nobody) not read"; }
grep -q "\"service_name\":\"$SERVICE\"" "$TMP/pushes.jsonl" ||
	{ head -c 2000 "$TMP/pushes.jsonl"; fail "rendered: no push of $SERVICE reached the receiver at the ConfigMap's pyroscope-url"; }
pass "the rendered agent container (${GRANT[*]}): effective capabilities exactly these, no_new_privs, uid 0; pushes of $SERVICE reach the ConfigMap's URL; span table read; .NET frames named in $N0; map_files opened by handle ($BY_HANDLE, by path $BY_PATH)"

sysadmin=()
for c in "${GRANT[@]}"; do [ "$c" = CHECKPOINT_RESTORE ] && sysadmin+=(SYS_ADMIN) || sysadmin+=("$c"); done
run_agent sys_admin "${sysadmin[@]}"
N1=$NAMED
[ "$BY_HANDLE" -gt 0 ] || fail "SYS_ADMIN: no file opened through map_files"
neither=()
for c in "${GRANT[@]}"; do [ "$c" = CHECKPOINT_RESTORE ] || neither+=("$c"); done
run_agent neither "${neither[@]}"
N2=$NAMED
[ "$BY_HANDLE" = 0 ] && [ "$BY_PATH" -gt 0 ] ||
	fail "neither CHECKPOINT_RESTORE nor SYS_ADMIN: mapped files opened by handle $BY_HANDLE, by path $BY_PATH (want 0 and some)"
# The same naming: each within 0.05 of the rendered set's fraction (a few hundred samples each).
for n in "$N1" "$N2"; do
	awk -v a="$n" -v b="$N0" 'BEGIN { d = a - b; exit !(d <= 0.05 && d >= -0.05) }' || fail ".NET naming $N0 with CHECKPOINT_RESTORE, $N1 with SYS_ADMIN, $N2 with neither"
done
pass "naming unchanged: .NET frames named in $N0 (CHECKPOINT_RESTORE), $N1 (SYS_ADMIN instead), $N2 (neither: map_files refused, opened by path)"

t5=$(stamp)
note "timing: base $((t1 - t0))s, sdk $((t2 - t1))s, image $((t3 - t2))s, hook $((t4 - t3))s, checks $((t5 - t4))s, total $((t5 - T_START))s"
