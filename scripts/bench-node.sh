#!/usr/bin/env bash
# bench-node.sh: the agent at the scale of a node. For each N in NS, N small ASP.NET services
# (SpanService with the hook, perf maps on from the start), LOADED of them under light load (RATE
# requests/s each, from one node.js client: no extra .NET process), the rest idle; `spanprof agent`
# at HZ (19, its default) pushing to a local Pyroscope receiver. After WARMUP s, the agent's CPU
# (% of one core) and RSS over DURATION s, its RSS minute by minute from its start (start-up
# apart from the steady state), and where its memory goes (/metrics spanprof_memory_bytes by
# structure).
#
#   BUILD=build NS="1 10 25 50" DURATION=300 scripts/bench-node.sh
# BG_DUTY gives every service a background worker busy that % of the time (SpanService's own
# default is 20; before session 9 this script left it so, and no service was idle).
# AGENT_LOG=FILE keeps the agent's output (with AGENT_ARGS=-v, what it read of each process) as FILE.N.
# AGENT_ARGS adds agent options (e.g. --no-enable-perfmap, to leave other .NET processes on a
# shared machine alone: the services here have their perf maps on from the start anyway).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
NS=${NS:-1 10 25 50}
LOADED=${LOADED:-10}
RATE=${RATE:-20}
BG_DUTY=${BG_DUTY:-0}	# SpanService's own background worker (% busy): 0, or the idle ones are not idle
HZ=${HZ:-19}
DURATION=${DURATION:-300}
WARMUP=${WARMUP:-60}
SVC=$BUILD/apps/SpanService/SpanService.dll
HOOK=$BUILD/hook/SpanProf.Hook.dll
for f in "$SVC" "$HOOK" "$BUILD/spanprof"; do [ -e "$f" ] || { echo "bench-node: $f missing: run make all apps" >&2; exit 1; }; done
OUT=$(mktemp -d "${TMPDIR:-/tmp}/bench-node.XXXXXX")
PIDS=() SVCPIDS=()
stop_all() {
	kill "${PIDS[@]}" "${SVCPIDS[@]}" 2> /dev/null || true
	wait 2> /dev/null || true
	for p in "${SVCPIDS[@]}"; do rm -f "/tmp/perf-$p.map" "/tmp/jit-$p.dump" "/tmp/perfinfo-$p.map"; done
	PIDS=() SVCPIDS=()
}
trap 'stop_all; rm -rf "$OUT"' EXIT
tick() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# watch_rss SECONDS: the agent's RSS every 5 s into $OUT/rss, as "seconds since its start (a0), KiB".
watch_rss() {
	local until=$((SECONDS + $1)) r
	while [ "$SECONDS" -lt "$until" ]; do
		r=$(rss "$agent")
		echo "$((SECONDS - a0)) $r" >> "$OUT/rss"
		sleep 5
	done
}
hz=$(getconf CLK_TCK)

echo "bench-node: machine $(nproc) CPUs, $(awk '/MemTotal/ { printf "%d GiB", $2 / 1048576 }' /proc/meminfo), kernel $(uname -r), .NET $(dotnet --list-runtimes | awk '/NETCore/ { v = $2 } END { print v }')"
echo "bench-node: agent at $HZ Hz, default windows; $LOADED services under $RATE req/s each, the rest idle; ${WARMUP}s warm-up, ${DURATION}s measured"
for n in $NS; do
	rm -f "$OUT"/*.ready
	node tests/tools/pyroscope-receiver.js --port 0 --ready "$OUT/rx.ready" --out /dev/null > /dev/null 2>&1 &
	PIDS+=($!)
	urls=()
	for i in $(seq "$n"); do
		DOTNET_PerfMapEnabled=1 OTEL_SERVICE_NAME="svc$i" SPANSERVICE_READY="$OUT/$i.ready" \
			SPANSERVICE_BG_DUTY="$BG_DUTY" \
			DOTNET_STARTUP_HOOKS="$(realpath "$HOOK")" dotnet "$SVC" --port 0 > "$OUT/$i.log" 2>&1 &
		SVCPIDS+=($!)
		for _ in $(seq 600); do [ -s "$OUT/$i.ready" ] && break; sleep 0.1; done
		[ -s "$OUT/$i.ready" ] || { cat "$OUT/$i.log" >&2; echo "bench-node: service $i not ready" >&2; exit 1; }
		[ "$i" -gt "$LOADED" ] || urls+=("http://127.0.0.1:$(node -pe "JSON.parse(require('fs').readFileSync('$OUT/$i.ready')).port")/work/a")
	done
	for _ in $(seq 100); do [ -s "$OUT/rx.ready" ] && break; sleep 0.1; done
	[ -s "$OUT/rx.ready" ] || { echo "bench-node: the receiver did not start" >&2; exit 1; }
	# Light load: RATE requests/s to each loaded service, never more than one in flight each.
	node -e '
const http = require("http"), rate = +process.argv[1];
for (const u of process.argv.slice(2)) {
  let busy = false;
  setInterval(() => { if (busy) return; busy = true;
    http.get(u, r => { r.resume(); r.on("end", () => busy = false); }).on("error", () => busy = false); }, 1000 / rate);
}' "$RATE" "${urls[@]}" &
	PIDS+=($!)
	# shellcheck disable=SC2086
	"$BUILD/spanprof" agent -F "$HZ" ${AGENT_ARGS:-} --pyroscope-url "http://127.0.0.1:$(cat "$OUT/rx.ready")" \
		--metrics-addr 127.0.0.1:0 > "$OUT/agent.log" 2>&1 &
	agent=$!
	PIDS+=($agent)
	for _ in $(seq 600); do grep -qs 'metrics on port' "$OUT/agent.log" && break; sleep 0.1; done
	mport=$(sed -n 's/.*metrics on port \([0-9]*\).*/\1/p' "$OUT/agent.log")
	[ -n "$mport" ] || { cat "$OUT/agent.log" >&2; echo "bench-node: the agent did not start" >&2; exit 1; }
	# The RSS every 5 s from the agent's start, warm-up included: start-up (the first read of
	# every process, the indexes of processes not yet known to be idle) shows apart from the
	# steady state in the minute-by-minute line below.
	a0=$SECONDS
	: > "$OUT/rss"
	watch_rss "$WARMUP"
	t0=$(tick "$agent") s0=$SECONDS
	watch_rss "$DURATION"
	read -r rmin rmax < <(awk -v w="$WARMUP" '$1 >= w { if (lo == "" || $2 < lo) lo = $2; if ($2 > hi) hi = $2 }
		END { print lo, hi }' "$OUT/rss")
	awk -v n="$n" -v w="$WARMUP" '{ m = int($1 / 60); if (!(m in lo) || $2 < lo[m]) lo[m] = $2
			if ($2 > hi[m]) hi[m] = $2; if (m > last) last = m }
		END { printf "bench-node:   N=%d RSS by minute since the agent started (MiB, min-max;", n
		      printf " warm-up %d s):", w
		      for (m = 0; m <= last; m++)
			      if (m in lo) printf " %d: %.1f-%.1f", m + 1, lo[m] / 1024, hi[m] / 1024
		      print "" }' "$OUT/rss"
	t1=$(tick "$agent") el=$((SECONDS - s0))
	kill -0 "$agent" || { cat "$OUT/agent.log" >&2; echo "bench-node: the agent died" >&2; exit 1; }
	# What the RSS is: the agent's own memory (anonymous: heap, BPF ring buffer pages it reads)
	# or pages of files (its program and shared libraries, shared with other processes).
	awk -v n="$n" '/^Rss(Anon|File|Shmem):/ { printf "bench-node:   N=%d %s %.1f MiB\n", n, $1, $2 / 1024 }' "/proc/$agent/status"
	# The mappings holding most of it (smaps): which files, which anonymous regions.
	awk -v n="$n" '/^[0-9a-f]+-[0-9a-f]+ / { name = NF >= 6 ? $6 : "[anon]" }
		/^Rss:/ { rss[name] += $2 }
		END { for (k in rss) printf "%d %s\n", rss[k], k }' "/proc/$agent/smaps" |
		sort -rn | head -"${TOP:-8}" | awk -v n="$n" '{ printf "bench-node:   N=%d mapping %8.1f KiB %s\n", n, $1, $2 }'
	metrics=$(curl -s "http://127.0.0.1:$mport/metrics" || true)
	awk -v n="$n" -v a="$t0" -v b="$t1" -v hz="$hz" -v s="$el" -v lo="$rmin" -v hi="$rmax" 'BEGIN {
		printf "bench-node: RESULT N=%-3d agent CPU %.2f%% of one core, RSS min %.1f MiB max %.1f MiB\n", n, (b - a) / hz / s * 100, lo / 1024, hi / 1024 }'
	echo "$metrics" | awk -v n="$n" '/^spanprof_memory_bytes/ { match($0, /structure="[^"]*"/); s = substr($0, RSTART + 11, RLENGTH - 12)
		printf "bench-node:   N=%d memory %-16s %8.1f KiB\n", n, s, $NF / 1024 }
		/^spanprof_processes\{kind="dotnet"\}/ { printf "bench-node:   N=%d .NET processes seen: %s\n", n, $NF }
		/^spanprof_processes\{kind="perf_map_held"\}/ { printf "bench-node:   N=%d .NET processes holding a perf map: %s\n", n, $NF }
		/^spanprof_processes\{kind="perf_map_sparse"\}/ { printf "bench-node:   N=%d .NET processes read for their sampled addresses only: %s\n", n, $NF }
		/^spanprof_samples_received_total/ { printf "bench-node:   N=%d samples received: %s\n", n, $NF }
		/^spanprof_heap_bytes/ { match($0, /state="[^"]*"/); printf "bench-node:   N=%d heap %-8s %8.1f KiB\n", n, substr($0, RSTART + 7, RLENGTH - 8), $NF / 1024 }'
	stop_all
	[ -z "${AGENT_LOG:-}" ] || cp "$OUT/agent.log" "$AGENT_LOG.$n"
done
