#!/usr/bin/env bash
# bench-agent.sh: the agent's own cost on a node: the demo service (SpanService under light
# LoadGen load) plus N idle .NET services, `spanprof agent` at its defaults (19 Hz, 15 s windows)
# pushing to a local Pyroscope receiver. Prints the agent's RSS and CPU (% of one core) over the
# run, window build time and push latency, and what the runtime wrote to /tmp for us (perf map and
# jitdump sizes after warm-up and their growth per hour).
#
#   BUILD=build DURATION=600 IDLE=10 scripts/bench-agent.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
DURATION=${DURATION:-600}
IDLE=${IDLE:-10}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/bench-agent.XXXXXX")
SVC=$BUILD/apps/SpanService/SpanService.dll
HOOK=$BUILD/hook/SpanProf.Hook.dll
PIDS=()
trap 'kill ${PIDS[*]} 2>/dev/null; wait 2>/dev/null; for p in ${SVCPIDS[*]:-}; do rm -f /tmp/perf-$p.map /tmp/jit-$p.dump; done; rm -rf "$OUT"' EXIT

tick() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }	# utime + stime, clock ticks
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
hz=$(getconf CLK_TCK)

node tests/tools/pyroscope-receiver.js --port 0 --ready "$OUT/rx.ready" --out "$OUT/rx.jsonl" > /dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$OUT/rx.ready" ] && break; sleep 0.1; done
SVCPIDS=()
start_svc() {	# start_svc NAME
	OTEL_SERVICE_NAME=$1 SPANSERVICE_READY="$OUT/$1.ready" DOTNET_STARTUP_HOOKS="$PWD/$HOOK" \
		dotnet "$SVC" --port 0 > "$OUT/$1.log" 2>&1 &
	PIDS+=($!)
	SVCPIDS+=($!)
	for _ in $(seq 300); do [ -s "$OUT/$1.ready" ] && break; sleep 0.1; done
}
start_svc demo
DEMO_PID=${SVCPIDS[0]}
DEMO_PORT=$(node -pe "JSON.parse(require('fs').readFileSync('$OUT/demo.ready')).port")
for i in $(seq "$IDLE"); do start_svc "idle$i"; done

"$BUILD/spanprof" agent --pyroscope-url "http://127.0.0.1:$(cat "$OUT/rx.ready")" \
	--metrics-addr 127.0.0.1:0 > "$OUT/agent.log" 2>&1 &
AGENT=$!
PIDS+=($AGENT)
for _ in $(seq 100); do grep -q 'metrics on port' "$OUT/agent.log" && break; sleep 0.1; done
MPORT=$(sed -n 's/.*metrics on port \([0-9]*\).*/\1/p' "$OUT/agent.log")
dotnet "$BUILD/apps/LoadGen/LoadGen.dll" --url "http://127.0.0.1:$DEMO_PORT" --concurrency 8 \
	--duration "$DURATION" --paths '/work/a,/work/b,/work/labels?tenant=acme' > "$OUT/load.log" 2>&1 &
PIDS+=($!)

sleep 60	# warm-up: perf maps enabled and read, first windows
t0=$(tick "$AGENT") s0=$SECONDS
map_size() { stat -c %s "/tmp/perf-$DEMO_PID.map" "/tmp/jit-$DEMO_PID.dump" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }
files0=$(map_size)
idle_files=0
for p in "${SVCPIDS[@]:1}"; do idle_files=$((idle_files + $(stat -c %s "/tmp/perf-$p.map" "/tmp/jit-$p.dump" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'))); done
rss_min=999999999 rss_max=0
while [ $((SECONDS - s0)) -lt $((DURATION - 60)) ]; do
	r=$(rss "$AGENT")
	[ "$r" -lt "$rss_min" ] && rss_min=$r
	[ "$r" -gt "$rss_max" ] && rss_max=$r
	sleep 10
done
t1=$(tick "$AGENT") s1=$SECONDS
files1=$(map_size)
metrics=$(curl -s "http://127.0.0.1:$MPORT/metrics")
m() { echo "$metrics" | awk -v re="^$1" '$0 ~ re { print $NF; exit }'; }
elapsed=$((s1 - s0))
echo "machine: $(nproc) CPUs, kernel $(uname -r), .NET $(dotnet --list-runtimes | awk '/NETCore/ { v = $2 } END { print v }')"
echo "agent at defaults (19 Hz, 15 s windows), demo service under LoadGen -c 8 + $IDLE idle .NET services, ${elapsed}s measured after 60 s warm-up"
awk -v a="$t0" -v b="$t1" -v hz="$hz" -v s="$elapsed" 'BEGIN { printf "  agent CPU: %.2f%% of one core\n", (b - a) / hz / s * 100 }'
echo "  agent RSS: min $((rss_min / 1024)) MiB, max $((rss_max / 1024)) MiB, at end $(( $(rss "$AGENT") / 1024 )) MiB"
echo "  windows exported: $(m spanprof_windows_total), window build $(m spanprof_window_build_seconds) s (max $(m spanprof_window_build_seconds_max) s)"
echo "  push latency (queued -> Pyroscope answered), last request: $(m 'spanprof_export_latency_seconds\{exporter="pyroscope"')"
echo "  pushes: $(wc -l < "$OUT/rx.jsonl") received, answered 200: $(grep -c '"answered":200' "$OUT/rx.jsonl")"
echo "  files the runtime wrote for us: demo service perf map + jitdump $((files0 / 1024)) KiB after warm-up, $((files1 / 1024)) KiB at end ($(awk -v a="$files0" -v b="$files1" -v s="$elapsed" 'BEGIN { printf "%.1f", (b - a) / 1024 / s * 3600 }') KiB/hour under load); $IDLE idle services: $((idle_files / 1024)) KiB in all"
