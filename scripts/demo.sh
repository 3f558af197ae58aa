#!/usr/bin/env bash
# demo.sh: the whole mission in one command. Starts the bundled ASP.NET Core service with the
# span hook loaded, drives it with 200 concurrent clients, profiles it with spanprof, and leaves
# a span-labelled pprof profile and a flame graph in build/demo/, with the per-span summary on
# screen.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=$BUILD/demo
SECONDS_PROFILED=${DEMO_SECONDS:-10}
mkdir -p "$OUT"
rm -f "$OUT"/*

[ "$(id -u)" = 0 ] || { echo "demo: run as root (sudo make demo): BPF needs it" >&2; exit 2; }

svc_pid=
load_pid=
cleanup() {
	[ -n "$load_pid" ] && kill "$load_pid" 2>/dev/null || true
	[ -n "$svc_pid" ] && kill -TERM "$svc_pid" 2>/dev/null || true
	wait 2>/dev/null || true
}
trap cleanup EXIT

echo "demo: starting SpanService (ASP.NET Core + OpenTelemetry) with DOTNET_STARTUP_HOOKS=$BUILD/hook/SpanProf.Hook.dll"
SPANSERVICE_SPANS=$OUT/spans.jsonl SPANSERVICE_READY=$OUT/ready.json \
	DOTNET_STARTUP_HOOKS=$(realpath "$BUILD/hook/SpanProf.Hook.dll") \
	dotnet "$BUILD/apps/SpanService/SpanService.dll" --port 0 > "$OUT/service.log" 2>&1 &
svc_pid=$!
for _ in $(seq 600); do [ -s "$OUT/ready.json" ] && break; sleep 0.1; done
[ -s "$OUT/ready.json" ] || { cat "$OUT/service.log"; echo "demo: the service did not start" >&2; exit 1; }
port=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$OUT/ready.json")
echo "demo: service pid $svc_pid on http://127.0.0.1:$port; load: 200 concurrent clients"

dotnet "$BUILD/apps/LoadGen/LoadGen.dll" --url "http://127.0.0.1:$port" --concurrency 200 \
	--duration $((SECONDS_PROFILED + 4)) --paths '/work/a,/work/b,/work/labels?tenant=acme' \
	> "$OUT/load.json" 2>&1 &
load_pid=$!
sleep 2

echo "demo: spanprof record -p $svc_pid -d $SECONDS_PROFILED --by-span -o $OUT/profile.pb.gz -o $OUT/flame.svg"
echo
"$BUILD/spanprof" record -p "$svc_pid" -d "$SECONDS_PROFILED" --by-span \
	-o "$OUT/profile.pb.gz" -o "$OUT/flame.svg" -o "$OUT/profile.folded" | tee "$OUT/summary.txt"
echo

wait "$load_pid" || true
load_pid=
echo "demo: load: $(cat "$OUT/load.json")"
echo
echo "demo: done. Open the results:"
echo "  flame graph:  $OUT/flame.svg (any browser)"
echo "  pprof:        go tool pprof -http=: $OUT/profile.pb.gz   (or drop it into speedscope / Grafana Pyroscope)"
echo "  by span:      go tool pprof -tagfocus='span_name=GET /work/a' -top $OUT/profile.pb.gz"
