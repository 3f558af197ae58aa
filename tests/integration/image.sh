#!/usr/bin/env bash
# image.sh: the deployment (deploy/). Builds the container image with podman exactly as
# deploy/README.md says for a machine without Docker (deploy/build-local.sh: a debootstrap base,
# cached; an SDK image from the host's .NET SDK, cached per SDK version; deploy/Dockerfile), runs
# spanprof *inside the image* against host processes with the DaemonSet's capabilities (a native
# busy process, and a .NET app running as another user with the hook that the app-patch init
# container copies), and renders and checks both kustomizations.
#
# Running the image: `podman run` is refused here (setrlimit in the OCI runtime), so the image
# runs through a buildah working container with chroot isolation, which shares the host's pid,
# network and cgroup namespaces (like hostPID: true) and shows the host's /proc and /sys
# (/sys/kernel/btf/vmlinux included: no extra mount). What BPF needs there:
#   buildah from --security-opt seccomp=unconfined IMAGE     (the containers-common seccomp
#       profile lets bpf() and perf_event_open() through only with CAP_SYS_ADMIN)
#   buildah run --isolation=chroot --cap-drop <all others> --cap-add <the DaemonSet's list> CTR -- CMD
#   (--cap-drop ALL cannot be combined with --cap-add: buildah then drops everything)
# No /sys/fs/bpf mount (nothing is pinned). CAP_SYS_RESOURCE is left out where this shell's own
# bounding set lacks it (as in some sandboxes; noted in the output).
#
# Environment: SPANPROF_IT_IMAGE (default localhost/spanprof:test), IMAGE_PROFILER (auto|record|agent,
# see below). Timings of each phase are printed at the end.
. "$(dirname "$0")/lib.sh"
need_root "podman's root storage, debootstrap, BPF"

T_START=$(date +%s)
IMAGE=${SPANPROF_IT_IMAGE:-localhost/spanprof:test}
CTR=spanprof-it-image
OUT=$TMP/out		# bind-mounted at /out in the container: profiles come out through it
mkdir -p "$OUT"
chmod 755 "$TMP"	# the .NET app below runs as nobody and loads the hook from under $TMP

# ---- what runs inside the image ------------------------------------------------------------------
# IMAGE_PROFILER=record: `spanprof record -p PID -d 3 -o /out/NAME.pb.gz`.
# IMAGE_PROFILER=agent:  `spanprof agent --output-dir /out/NAME.d --interval 3` for 10 s, then
#                        SIGTERM; its /healthz and /metrics are read from the host meanwhile, and the
#                        largest window of the target's service (OTEL_SERVICE_NAME) is checked.
# IMAGE_PROFILER=auto (default): agent when the image's spanprof has the subcommand, else record.
IMAGE_PROFILER=${IMAGE_PROFILER:-auto}
METRICS_CHECKED=""
AGENT_PID=""

metrics_match() {
	curl -fsS "http://127.0.0.1:$1/metrics" > "$TMP/metrics.txt" 2>&1 && grep -Eq -- "$2" "$TMP/metrics.txt"
}

# profile_in_image NAME PID SERVICE [AGENT-ARGS...]: profile PID (whose OTEL_SERVICE_NAME is
# SERVICE) from inside the image into $TMP/NAME.pb.gz, decoded into $TMP/NAME.json; spanprof's
# report (stdout and stderr) in $TMP/NAME.txt.
profile_in_image() {
	local name=$1 pid=$2 service=$3 rc=0 apid port f
	shift 3
	case $IMAGE_PROFILER in
	record)
		in_image timeout -s INT 30 spanprof record -p "$pid" -d 3 -o "/out/$name.pb.gz" \
			> "$TMP/$name.txt" 2>&1 || rc=$?
		[ "$rc" = 0 ] || { cat "$TMP/$name.txt"; fail "spanprof record in the image: exit code $rc"; }
		;;
	agent)
		mkdir -p "$OUT/$name.d"
		in_image timeout --preserve-status -s TERM 10 spanprof agent --output-dir "/out/$name.d" \
			--interval 3 -F 99 --metrics-addr 127.0.0.1:0 -v "$@" > "$TMP/$name.txt" 2>&1 &
		apid=$!
		AGENT_PID=$apid		# the EXIT trap waits for it (at most its 10 s timeout)
		# The container shares the host's network namespace: the probes' endpoints are here.
		wait_for_line "$TMP/$name.txt" 'metrics on port [0-9]' 20
		port=$(grep -o -m1 'metrics on port [0-9]*' "$TMP/$name.txt" | awk '{ print $NF }')
		[ "$(curl -fsS "http://127.0.0.1:$port/healthz")" = ok ] || fail "agent /healthz is not ok"
		# The text is published at the end of each window (3 s); METRICS_WANT: a line to wait for.
		poll 8 metrics_match "$port" "${METRICS_WANT:-^# TYPE }" ||
			{ cat "$TMP/metrics.txt"; fail "agent /metrics: no line matching ${METRICS_WANT:-^# TYPE } after 8 s"; }
		cp "$TMP/metrics.txt" "$TMP/$name.metrics"
		if [ -z "$METRICS_CHECKED" ]; then
			pass "agent in the image serves /healthz (ok) and /metrics ($(grep -c '^# TYPE ' "$TMP/metrics.txt") metrics)"
			METRICS_CHECKED=1
		fi
		wait "$apid" || rc=$?
		AGENT_PID=""
		[ "$rc" = 0 ] || { cat "$TMP/$name.txt"; fail "spanprof agent in the image: exit code $rc after SIGTERM"; }
		[ -d "$OUT/$name.d/$service" ] || { cat "$TMP/$name.txt"; ls "$OUT/$name.d"; fail "agent wrote nothing for service $service"; }
		f=$(ls -S "$OUT/$name.d/$service/"*.pb.gz | head -1)
		note "agent windows for $service: $(ls "$OUT/$name.d/$service" | wc -l), checking the largest (${f##*/})"
		cp "$f" "$OUT/$name.pb.gz"
		;;
	*) fail "IMAGE_PROFILER=$IMAGE_PROFILER: record, agent or auto" ;;
	esac
	[ -s "$OUT/$name.pb.gz" ] || { cat "$TMP/$name.txt"; fail "no profile from spanprof $IMAGE_PROFILER in the image"; }
	cp "$OUT/$name.pb.gz" "$TMP/$name.pb.gz"
	decode "$TMP/$name.pb.gz"
}

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
need_cmd dotnet node

# kustomize output, when kubectl is there (also the source of the capability list below).
KUBECTL=$(command -v kubectl || true)
if [ -n "$KUBECTL" ]; then
	"$KUBECTL" kustomize "$ROOT/deploy/kubernetes" > "$TMP/agent.yaml"
	# The example workloads with the hook added by deploy/tools/inject-hook.mjs; the init
	# container's image is this image (it holds the hook at the same path as the hook-only image).
	VT=$ROOT/deploy/tools
	if [ ! -d "$VT/node_modules/yaml" ] && command -v npm > /dev/null; then
		npm ci --prefix "$VT" --no-audit --no-fund > "$TMP/npm.log" 2>&1 || note "npm ci failed: $(tail -1 "$TMP/npm.log")"
	fi
	"$KUBECTL" kustomize "$ROOT/deploy/kubernetes/app-patch" | node "$VT/inject-hook.mjs" --image "$IMAGE" > "$TMP/app.yaml" ||
		fail "kubectl kustomize deploy/kubernetes/app-patch | inject-hook.mjs"
fi

# ---- build ---------------------------------------------------------------------------------------
stamp() { date +%s; }
t0=$(stamp)
IMAGE=$IMAGE "$ROOT/deploy/build-local.sh" base > "$TMP/build-base.log" 2>&1 ||
	{ tail -40 "$TMP/build-base.log"; fail "deploy/build-local.sh base"; }
t1=$(stamp)
IMAGE=$IMAGE "$ROOT/deploy/build-local.sh" sdk > "$TMP/build-sdk.log" 2>&1 ||
	{ tail -40 "$TMP/build-sdk.log"; fail "deploy/build-local.sh sdk"; }
t2=$(stamp)
IMAGE=$IMAGE "$ROOT/deploy/build-local.sh" image > "$TMP/build-image.log" 2>&1 ||
	{ tail -60 "$TMP/build-image.log"; fail "deploy/build-local.sh image"; }
t3=$(stamp)
grep -h '^build-local:' "$TMP/build-base.log" "$TMP/build-sdk.log" "$TMP/build-image.log" | sed 's/^/  /'
pass "image built: base $((t1 - t0))s, sdk $((t2 - t1))s, image $((t3 - t2))s"

entry=$(podman image inspect --format '{{json .Config.Entrypoint}}' "$IMAGE")
[ "$entry" = '["/usr/local/bin/spanprof","agent"]' ] || fail "entrypoint is $entry, want spanprof agent"
pass "entrypoint: $entry"

# ---- the working container -----------------------------------------------------------------------
# The DaemonSet's capabilities (from the rendered manifest; the same list written out otherwise).
if [ -n "$KUBECTL" ]; then
	read -r -a WANT <<< "$(awk '/^ *capabilities:/ { c = 1; next }
		c && /^ *add:/ { a = 1; next }
		a && /^ *- / { printf "%s ", $2; next }
		a { exit }' "$TMP/agent.yaml")"
else
	WANT=(BPF PERFMON SYS_PTRACE CHECKPOINT_RESTORE SYSLOG DAC_OVERRIDE SYS_RESOURCE)
fi
[ ${#WANT[@]} -ge 3 ] || fail "no capabilities.add list in the DaemonSet"
ALL_CAPS=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE
	NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT
	SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE
	AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ
	PERFMON BPF CHECKPOINT_RESTORE)
bnd=$((16#$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)))
have_cap() { local i; for i in "${!ALL_CAPS[@]}"; do [ "${ALL_CAPS[$i]}" = "$1" ] && return $(((bnd >> i & 1) == 0)); done; return 1; }
add=() drop=()
for c in "${WANT[@]}"; do
	if have_cap "$c"; then add+=("CAP_$c"); else note "CAP_$c: not in this shell's bounding set, left out"; fi
done
for c in "${ALL_CAPS[@]}"; do
	[[ " ${WANT[*]} " == *" $c "* ]] || drop+=("CAP_$c")
done
CAPS=(--cap-drop "$(IFS=,; echo "${drop[*]}")" --cap-add "$(IFS=,; echo "${add[*]}")")
note "capabilities in the image: ${add[*]}"

buildah rm "$CTR" > /dev/null 2>&1 || true
buildah from --name "$CTR" --security-opt seccomp=unconfined --pull=never "$IMAGE" > /dev/null
# lib.sh's cleanup is the EXIT trap: remove the working container first, keeping the exit status.
# An agent still running in the image (a check failed while it ran) ends first: its timeout stops
# it, and cleanup must not remove $TMP while it writes there.
image_cleanup() {
	local rc=$?
	trap - ERR
	set +e
	[ -z "$AGENT_PID" ] || wait "$AGENT_PID" 2> /dev/null
	buildah rm "$CTR" > /dev/null 2>&1
	(exit "$rc")	# lib.sh's cleanup takes the exit status from $?
	cleanup
}
trap image_cleanup EXIT
in_image() { buildah run --isolation=chroot "${CAPS[@]}" -v "$OUT:/out" "$CTR" -- "$@"; }

v=$(in_image spanprof --version)
pass "spanprof --version in the image: $v"
in_image ldd /usr/local/bin/spanprof > "$TMP/ldd.txt"
if grep -q 'not found' "$TMP/ldd.txt"; then cat "$TMP/ldd.txt"; fail "libraries missing in the image"; fi
pass "ldd: $(grep -c '=>' "$TMP/ldd.txt") libraries, none missing"
in_image sh -c 'test -s /opt/spanprof/hook/SpanProf.Hook.dll && test -s /opt/spanprof/hook/SpanProf.Hook.Startup.dll'
pass "hook DLLs in /opt/spanprof/hook"
cap_eff=$(in_image awk '/^CapEff:/ { print $2 }' /proc/self/status)
note "CapEff in the image: $cap_eff"
if [ "$IMAGE_PROFILER" = auto ]; then
	if in_image spanprof agent --help > /dev/null 2>&1; then IMAGE_PROFILER=agent; else IMAGE_PROFILER=record; fi
fi
note "profiling in the image with spanprof $IMAGE_PROFILER"

# ---- a native host process, profiled from the image ------------------------------------------------
if [ -x "$HOTCHAIN" ]; then
	start_app --pid-line --timeout 30 "$TMP/hot.out" env OTEL_SERVICE_NAME=spanprof-it-native "$HOTCHAIN" 30
	pid=$APP_PID
else
	note "no $HOTCHAIN (make tools): a shell busy loop instead"
	spawn "$TMP/busy.out" env OTEL_SERVICE_NAME=spanprof-it-native sh -c 'while :; do :; done'
	pid=$SPAWNED
fi
# --all-processes: the agent's default is .NET processes only.
profile_in_image native "$pid" spanprof-it-native --all-processes
total=$(count_samples "$TMP/native.json" --pid "$pid")
[ "$total" -ge 30 ] || { cat "$TMP/native.txt"; fail "only $total samples of pid $pid from the image (3 s at 99 Hz)"; }
if [ -x "$HOTCHAIN" ]; then
	leaf=$(query leaf "$TMP/native.json" --pid "$pid" --leaf '^inner_hot$')
	ge "$(field "$leaf" frac)" 0.90 || { cat "$TMP/native.txt"; fail "inner_hot is the leaf of only $(field "$leaf" frac) of the samples"; }
	pass "native host process from the image: $total samples, inner_hot leaf $(field "$leaf" frac)"
else
	pass "host busy loop from the image: $total samples"
fi
grep -q 'kernel symbols hidden' "$TMP/native.txt" && fail "kernel symbols hidden: CAP_SYSLOG missing?"
stop "$pid"

# ---- the app-patch path: hook copied by the init container, .NET app as another user -----------------
# The init container's command, as its securityContext runs it (uid 65532, no capabilities), into
# a directory standing in for the emptyDir.
world_dir	# the hook volume and the app run as nobody below: somewhere nobody can reach (lib.sh)
HOOKVOL=$WORLD_DIR/spanprof-hook
mkdir -m 1777 "$HOOKVOL"
initcmd=(cp -R /opt/spanprof/hook/. /spanprof-hook/)
if [ -n "$KUBECTL" ]; then
	read -r -a initcmd <<< "$(awk '/^ *initContainers:/ { i = 1 } i && /^ *(- )?command:/ { c = 1; next }
		c && /^ *- / { printf "%s ", $2; next } c { exit }' "$TMP/app.yaml")"
fi
buildah run --isolation=chroot --user 65532:65532 --cap-drop "$(IFS=,; echo "${ALL_CAPS[*]/#/CAP_}")" \
	-v "$HOOKVOL:/spanprof-hook" "$CTR" -- "${initcmd[@]}"
[ "$(stat -c %u "$HOOKVOL/SpanProf.Hook.dll")" = 65532 ] || fail "init container copy: wrong owner"
pass "init container command (${initcmd[*]}) as uid 65532 copies the hook"

APP=$WORLD_DIR/HotChain/HotChain
[ -x "$BUILD/apps/HotChain/HotChain" ] && cp -a "$BUILD/apps/HotChain" "$WORLD_DIR/HotChain"
if [ -x "$APP" ]; then
	hookpath=$(awk '/name: DOTNET_STARTUP_HOOKS/ { getline; print $2; exit }' "$TMP/app.yaml" 2>/dev/null || true)
	hookpath=${hookpath:-/spanprof-hook/SpanProf.Hook.dll}
	# As nobody, without perf maps: the agent must turn them on over the app's diagnostics socket
	# (mode 0600, owned by nobody: CAP_DAC_OVERRIDE) and read its span table (CAP_SYS_PTRACE).
	start_app --timeout 60 "$TMP/app.out" setpriv --reuid 65534 --regid 65534 --clear-groups \
		env -u DOTNET_PerfMapEnabled HOME=/tmp OTEL_SERVICE_NAME=spanprof-it-dotnet \
		DOTNET_STARTUP_HOOKS="$HOOKVOL/${hookpath##*/}" "$APP" 30
	pid=$APP_PID
	# The span table is read (CAP_SYS_PTRACE): the agent's gauge, or record's report line.
	METRICS_WANT='^spanprof_processes\{[^}]*kind="span_table"[^}]*\} [1-9]' \
		profile_in_image dotnet "$pid" spanprof-it-dotnet
	if [ "$IMAGE_PROFILER" = record ]; then
		grep -E "\.NET pid $pid " "$TMP/dotnet.txt" | sed 's/^ */  /' || true
		grep -Eq "\.NET pid $pid .*span table v1" "$TMP/dotnet.txt" ||
			{ cat "$TMP/dotnet.txt"; fail "span table of the hooked app (uid nobody) not read from the image"; }
	else
		grep -E '^spanprof_processes\{' "$TMP/dotnet.metrics" | sed 's/^/  /'
	fi
	named=$(query managed "$TMP/dotnet.json" --pid "$pid")
	ge "$(field "$named" frac)" 0.90 || { cat "$TMP/dotnet.txt"; fail ".NET frames named in only $(field "$named" frac) of the samples"; }
	pass ".NET app as nobody with the copied hook, from the image: span table read, .NET frames named in $(field "$named" frac)"
	stop "$pid"
else
	note "no $APP (make apps): .NET check left out"
fi

# ---- the DaemonSet's own command line, in the image ------------------------------------------------
# Its args as rendered, with the Pyroscope URL pointed at the discard port of this host and the
# metrics port made ephemeral (port 9464 may be taken here): the options must parse, the agent must
# run and stop cleanly on SIGTERM.
if [ -n "$KUBECTL" ] && [ "$IMAGE_PROFILER" = agent ]; then
	mapfile -t dsargs < <(awk '/^kind: DaemonSet/ { d = 1 } d && /^ *- args:/ { a = 1; next }
		a && /^ *- / { sub(/^ *- /, ""); gsub(/^"|"$/, ""); print; next } a { exit }' "$TMP/agent.yaml")
	[ ${#dsargs[@]} -gt 0 ] || fail "no args in the rendered DaemonSet"
	dsargs=("${dsargs[@]//\$(SPANPROF_PYROSCOPE_URL)/http://127.0.0.1:9}")
	dsargs=("${dsargs[@]//0.0.0.0:9464/127.0.0.1:0}")
	rc=0
	buildah run --isolation=chroot "${CAPS[@]}" --env NODE_NAME=it-node "$CTR" -- \
		timeout --preserve-status -s TERM 6 spanprof agent "${dsargs[@]}" > "$TMP/ds.txt" 2>&1 || rc=$?
	[ "$rc" = 0 ] && grep -q 'agent sampling' "$TMP/ds.txt" ||
		{ cat "$TMP/ds.txt"; fail "spanprof agent ${dsargs[*]} (the DaemonSet's args): exit code $rc"; }
	pass "the DaemonSet's args run in the image: spanprof agent ${dsargs[*]}"
fi

# ---- Kubernetes manifests --------------------------------------------------------------------------
if [ -n "$KUBECTL" ]; then
	A=$TMP/agent.yaml P=$TMP/app.yaml
	for want in 'kind: DaemonSet' 'hostPID: true' 'fieldPath: spec.nodeName' 'prometheus.io/scrape: "true"' \
		'prometheus.io/port: "9464"' 'prometheus.io/path: /metrics' 'path: /healthz' 'operator: Exists' \
		'containerPort: 9464' 'path: /var/log/pods' 'path: /var/log/containers' 'name: spanprof-config' \
		'name: spanprof-pyroscope' 'optional: true' 'namespace: spanprof'; do
		grep -qF -- "$want" "$A" || fail "rendered deploy/kubernetes lacks '$want'"
	done
	init_image=$(awk '/initContainers:/ { i = 1 } i && /^ *image:/ { print $2; exit }' "$P")
	[ "$init_image" = "$IMAGE" ] || fail "init container image $init_image, want $IMAGE (inject-hook.mjs --image)"
	grep -qF 'value: /spanprof-hook/SpanProf.Hook.dll' "$P" || fail "app-patch: no DOTNET_STARTUP_HOOKS"
	grep -qF 'mountPath: /spanprof-hook' "$P" || fail "app-patch: no hook volume mount"
	pass "kubectl kustomize renders deploy/kubernetes ($(grep -c '^kind:' "$A") objects) and app-patch"
	# Schema check offline (no API server): deploy/tools/validate-manifests.mjs.
	VT=$ROOT/deploy/tools
	if [ ! -d "$VT/node_modules/kubernetes-models" ] && command -v npm > /dev/null; then
		npm ci --prefix "$VT" --no-audit --no-fund > "$TMP/npm.log" 2>&1 || note "npm ci failed: $(tail -1 "$TMP/npm.log")"
	fi
	if [ -d "$VT/node_modules/kubernetes-models" ]; then
		node "$VT/validate-manifests.mjs" "$A" | sed 's/^/  /' || fail "deploy/kubernetes: schema check"
		node "$VT/validate-manifests.mjs" "$P" | sed 's/^/  /' || fail "app-patch: schema check"
		pass "rendered manifests match the Kubernetes API schema (kubernetes-models)"
	else
		note "kubernetes-models not installed: schema check left out"
	fi
else
	note "no kubectl: kustomize checks left out"
fi

t4=$(stamp)
note "timing: base $((t1 - t0))s, sdk $((t2 - t1))s, image $((t3 - t2))s, checks $((t4 - t3))s, total $((t4 - T_START))s"
