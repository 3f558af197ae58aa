#!/usr/bin/env bash
# hooks-compose.sh: spanprof's startup hook composes with another one (issue 33). OpenTelemetry .NET
# auto-instrumentation, which the OpenTelemetry Operator injects, is a startup hook too; it is not
# served here, so tests/apps/HookCompose/OtherHook stands in for it: a startup hook of its own that
# makes spans on a thread it starts, while the app (HookCompose) makes spans on its main thread.
# DOTNET_STARTUP_HOOKS is what deploy/tools/inject-hook.mjs writes for a container that already
# lists OtherHook (ours appended after ':'), and the other order with every variable the Operator
# sets at admission of a pod that the filter already gave our hook (it appends its own after ':').
# In both: both hooks load (the app lists both assemblies, OtherHook says so on stderr, the report
# finds the span table), and `spanprof record -p PID` labels the samples of either hook's spans
# with their span (ids and span_name).
. "$(dirname "$0")/lib.sh"
need_root
need_cmd dotnet node
need_built "$SPANPROF" "$HOOK"
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
unset DOTNET_STARTUP_HOOKS SPANPROF_HOOK_FAULT SPANPROF_HOOK_DISABLE SPANPROF_HOOK_QUIET

# The two projects (not in the Makefile's apps: only this test uses them).
APPDIR=$BUILD/apps/HookCompose
for p in HookCompose.csproj:$APPDIR OtherHook/OtherHook.csproj:$APPDIR/OtherHook; do
	dotnet build "$ROOT/tests/apps/HookCompose/${p%%:*}" -c Release -o "${p#*:}" -nologo -v q -clp:NoSummary \
		> "$TMP/build.log" 2>&1 || { cat "$TMP/build.log"; fail "dotnet build ${p%%:*}"; }
done
APP=$APPDIR/HookCompose.dll OTHER=$APPDIR/OtherHook/OtherHook.dll
need_built "$APP" "$OTHER"

# DOTNET_STARTUP_HOOKS as the filter composes it for a container that lists OtherHook already.
VT=$ROOT/deploy/tools
need_node_modules "$VT" yaml
cat > "$TMP/pod.yaml" <<POD
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {spanprof.io/inject-dotnet: "true"}}
spec:
  containers:
    - name: app
      image: x
      env: [{name: DOTNET_STARTUP_HOOKS, value: $OTHER}]
POD
node "$VT/inject-hook.mjs" "$TMP/pod.yaml" > "$TMP/pod.out.yaml" || fail "inject-hook.mjs failed"
composed=$(node -e '
const y = require(process.argv[1]);
const p = y.parse(require("fs").readFileSync(process.argv[2], "utf8"));
console.log(p.spec.containers[0].env.find((e) => e.name === "DOTNET_STARTUP_HOOKS").value);' \
	"$VT/node_modules/yaml" "$TMP/pod.out.yaml")
[ "$composed" = "$OTHER:/spanprof-hook/SpanProf.Hook.dll" ] || fail "inject-hook.mjs composed '$composed'"
pass "inject-hook.mjs keeps the existing hook: DOTNET_STARTUP_HOOKS=$composed"
# The volume's path here is the hook's build directory.
filter_order=${composed//\/spanprof-hook\//$(dirname "$HOOK")/}

# What the OpenTelemetry Operator adds at admission to a container that the filter gave our hook
# (internal/instrumentation/dotnet.go, injectDefaultDotNetEnvVars and setDotNetEnvVar): its own
# startup hook appended after ours, DOTNET_ADDITIONAL_DEPS and DOTNET_SHARED_STORE (appended to
# an existing value, here none), OTEL_DOTNET_AUTO_HOME, and the CLR profiler variables, all under
# its volume /otel-auto-instrumentation-dotnet. Here that directory holds OtherHook as the startup
# hook, empty AdditionalDeps and store, and no native profiler (not served here): the runtime finds
# no profiler at CORECLR_PROFILER_PATH and runs on without one.
AUTO=$TMP/otel-auto-instrumentation-dotnet
mkdir -p "$AUTO/net" "$AUTO/AdditionalDeps" "$AUTO/store" "$AUTO/linux-x64"
cp "$OTHER" "$AUTO/net/"
operator_env=(
	CORECLR_ENABLE_PROFILING=1
	"CORECLR_PROFILER={918728DD-259F-4A6A-AC2B-B85E1B658318}"
	CORECLR_PROFILER_PATH="$AUTO/linux-x64/OpenTelemetry.AutoInstrumentation.Native.so"
	DOTNET_ADDITIONAL_DEPS="$AUTO/AdditionalDeps"
	OTEL_DOTNET_AUTO_HOME="$AUTO"
	DOTNET_SHARED_STORE="$AUTO/store"
)
operator_order=$HOOK:$AUTO/net/OtherHook.dll

# spans_in PROFILE PID LEAF_RE SPAN_NAME: {"leaf": samples of PID in LEAF_RE, "span": those with a
# 16-hex span_id and 32-hex trace_id, "named": those whose span_name is SPAN_NAME}
spans_in() {
	node -e '
const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const pid = process.argv[2], leaf = new RegExp(process.argv[3]), name = process.argv[4];
const n = (s) => Number(s.values[0]);
let inleaf = 0, span = 0, named = 0;
for (const s of p.samples) {
  if (s.labels.pid !== pid || !s.stack.some((f) => leaf.test(f))) continue;
  inleaf += n(s);
  const l = s.labels;
  if (/^[0-9a-f]{16}$/.test(l.span_id || "") && /^[0-9a-f]{32}$/.test(l.trace_id || "") && l.span_id !== "0000000000000000") span += n(s);
  if (l.span_name === name) named += n(s);
}
console.log(JSON.stringify({ leaf: inleaf, span, named }));' "$1" "$2" "$3" "$4"
}

# run NAME HOOKS [VAR=VALUE...]: the app with DOTNET_STARTUP_HOOKS=HOOKS and the VARs, profiled by
# `record -p`; both hooks loaded, both kinds of span on the samples of their code.
run() {
	local name=$1 hooks=$2 rc=0 r what
	shift 2
	env "$@" DOTNET_STARTUP_HOOKS="$hooks" dotnet "$APP" 6 > "$TMP/$name.out" 2> "$TMP/$name.err" &
	APP_PID=$!
	register "$APP_PID"
	wait_for_line "$TMP/$name.out" '^ready ' 60
	record "$name.pb.gz" -p "$APP_PID" -d 4
	wait "$APP_PID" || rc=$?
	[ "$rc" = 0 ] || { cat "$TMP/$name.out" "$TMP/$name.err"; fail "$name: the app exited with $rc"; }
	[ "$(cat "$TMP/$name.err")" = "otherhook: loaded" ] || fail "$name: stderr: $(cat "$TMP/$name.err")"
	grep -qx 'hooks SpanProf.Hook,OtherHook\|hooks OtherHook,SpanProf.Hook' "$TMP/$name.out" ||
		fail "$name: loaded hooks: $(grep '^hooks' "$TMP/$name.out")"
	grep -q "^  \.NET pid $APP_PID .*span table v1" "$TMP/$name.txt" ||
		{ cat "$TMP/$name.txt"; fail "$name: no span table for pid $APP_PID in the report"; }
	decode "$TMP/$name.pb.gz"
	for what in Burn:app-job OtherBurn:otherhook-job; do
		r=$(spans_in "$TMP/$name.json" "$APP_PID" "(^|[.:])${what%%:*}\\b" "${what#*:}")
		note "$name ${what%%:*}: $r"
		[ "$(field "$r" leaf)" -ge 30 ] || fail "$name: only $(field "$r" leaf) samples in ${what%%:*}"
		ge "$(field "$r" "span / $(field "$r" leaf)")" 0.95 || fail "$name: span ids on $(field "$r" span) of $(field "$r" leaf) samples in ${what%%:*}"
		ge "$(field "$r" "named / $(field "$r" leaf)")" 0.95 || fail "$name: span_name ${what#*:} on $(field "$r" named) of $(field "$r" leaf) samples in ${what%%:*}"
	done
	pass "$name: DOTNET_STARTUP_HOOKS=$hooks${1:+ with $*}: both hooks loaded ($(sed -n 's/^hooks //p' "$TMP/$name.out")), the app's spans and OtherHook's label their samples"
}

run filter "$filter_order"
run operator "$operator_order" "${operator_env[@]}"
