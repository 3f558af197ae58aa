#!/usr/bin/env bash
# bench-growth.sh: spanprof's memory against the samples it has taken. SpanService with the hook
# under LoadGen (every request a new span: each span id is a new label set), profiled at HZ:
#   record: one run that aggregates until the end (-p SVC -p LOADGEN: both .NET processes, so the
#           two CPUs are sampled nearly all the time and 10^7 samples take minutes, where the
#           service alone gave ~3,800 samples/s); RSS when it has received 10^5, 10^6, 10^7
#           samples (up to MAX);
#   agent:  windows of INTERVAL s (host-wide), RSS at the same counts.
# RSS is read from /proc while the counts come from `record -v` and the agent's /metrics.
#
#   BUILD=build HZ=19999 MAX=10000000 scripts/bench-growth.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
HZ=${HZ:-19999}
MAX=${MAX:-10000000}
INTERVAL=${INTERVAL:-15}
SVC=$BUILD/apps/SpanService/SpanService.dll
GEN=$BUILD/apps/LoadGen/LoadGen.dll
HOOK=$BUILD/hook/SpanProf.Hook.dll
OUT=$(mktemp -d "${TMPDIR:-/tmp}/bench-growth.XXXXXX")
PIDS=()
trap 'kill "${PIDS[@]}" 2> /dev/null || true; wait 2> /dev/null || true; rm -rf "$OUT"' EXIT
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2> /dev/null || echo 0; }

SPANSERVICE_READY="$OUT/ready" DOTNET_STARTUP_HOOKS="$(realpath "$HOOK")" dotnet "$SVC" --port 0 > "$OUT/svc.log" 2>&1 &
svc=$!
PIDS+=($svc)
for _ in $(seq 300); do [ -s "$OUT/ready" ] && break; sleep 0.1; done
port=$(node -pe "JSON.parse(require('fs').readFileSync('$OUT/ready')).port")
dotnet "$GEN" --url "http://127.0.0.1:$port" --concurrency 32 --duration 3600 \
	--paths '/work/a,/work/b,/work/labels?tenant=acme' > /dev/null 2> "$OUT/loadgen.err" &
gen=$!
PIDS+=($gen)
sleep 5
# A load generator that refused its arguments would leave an idle service: no spans, no figure.
kill -0 "$gen" 2> /dev/null || { cat "$OUT/loadgen.err" >&2; echo "bench-growth: LoadGen exited" >&2; exit 1; }
echo "bench-growth: $(nproc) CPUs, kernel $(uname -r); SpanService under LoadGen -c 32, spans on every request; $HZ Hz; record profiles both"

# watch NAME PID COUNT_CMD: print RSS at each power of ten of COUNT_CMD's output, up to MAX.
watch() {
	local name=$1 pid=$2 next=100000 n t0=$SECONDS
	shift 2
	while [ "$next" -le "$MAX" ] && kill -0 "$pid" 2> /dev/null; do
		n=$("$@" 2> /dev/null || echo 0)
		if [ "${n:-0}" -ge "$next" ]; then
			printf 'bench-growth: RESULT %-6s %9d samples after %4ds: RSS %6.1f MiB\n' "$name" "$n" \
				$((SECONDS - t0)) "$(awk -v r="$(rss "$pid")" 'BEGIN { print r / 1024 }')"
			next=$((next * 10))
		fi
		sleep 1
	done
}

"$BUILD/spanprof" record -p "$svc" -p "$gen" -F "$HZ" -v -o "$OUT/growth.pb.gz" > "$OUT/record.txt" 2> "$OUT/record.err" &
rec=$!
PIDS+=($rec)
watch record "$rec" sh -c "tail -n 1 '$OUT/record.err' | sed -n 's/.* received=\([0-9]*\).*/\1/p'"
kill -INT "$rec" 2> /dev/null || true
wait "$rec" || { cat "$OUT/record.txt" "$OUT/record.err" >&2; exit 1; }
grep -E 'samples taken|truncated|max RSS' "$OUT/record.txt" | sed 's/^/bench-growth:   record: /'

"$BUILD/spanprof" agent -F "$HZ" --interval "$INTERVAL" --output-dir "$OUT/windows" --output-max-mb 64 \
	--metrics-addr 127.0.0.1:0 > "$OUT/agent.log" 2>&1 &
agent=$!
PIDS+=($agent)
for _ in $(seq 300); do grep -qs 'metrics on port' "$OUT/agent.log" && break; sleep 0.1; done
mport=$(sed -n 's/.*metrics on port \([0-9]*\).*/\1/p' "$OUT/agent.log")
watch agent "$agent" sh -c "curl -s http://127.0.0.1:$mport/metrics | awk '/^spanprof_samples_received_total/ { print \$NF }'"
kill -TERM "$agent"
wait "$agent" || true
