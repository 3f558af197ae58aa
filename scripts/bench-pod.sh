#!/usr/bin/env bash
# bench-pod.sh: what the agent costs one pod over time: the bytes in its /tmp (perf maps, jitdump,
# anything else spanprof causes) for an app that generates code all the time, and whether its
# frames stay named. SpanService with the hook runs as pid 1 of its own pid and mount namespaces
# with a private tmpfs /tmp (tests/integration/nsrun.sh: a container's view); LoadGen sends RATE
# requests/s to /work/codegen, each compiling a new Expression (a DynamicMethod, jitted once);
# `spanprof agent` (windows to a directory, no Pyroscope) profiles it, with --perfmap-max-mb CAP_MB
# when this build's agent has that flag. Every SAMPLE_S seconds a CSV row: the pod's /tmp bytes
# by kind, and from the agent's newest window of the service, its samples and the share of .NET
# leaves and frames named (tests/integration/query.js `dotnet`, as dotnet-r2r.sh counts them).
#
#   scripts/bench-pod.sh                        # 30 minutes (the issue's run)
#   DURATION_MIN=10 scripts/bench-pod.sh        # a shorter one
#
# Settings (environment): DURATION_MIN (30), RATE (100 requests/s), CONCURRENCY (8), CAP_MB (32:
#   the cap the bar holds the bytes to, and the value of --perfmap-max-mb), SAMPLE_S (60), HZ (99:
#   enough samples of one process per window to judge the names), INTERVAL (15), CHUNK_US (100:
#   the hot work per request), AGENT_ARGS, OUT (default: a new dir in /tmp), BUILD. REPORT=DIR
#   prints the summary of the run whose data is in DIR again.
# Output in OUT: pod.csv, summary.txt, agent.log. Bars print PASS/FAIL; exit non-zero only when
# the run itself failed.
set -euo pipefail
cd "$(dirname "$0")/.."
BL_NAME=bench-pod
. scripts/bench-lib.sh
DURATION_MIN=${DURATION_MIN:-30}
RATE=${RATE:-100}
CONCURRENCY=${CONCURRENCY:-8}
CAP_MB=${CAP_MB:-32}
SAMPLE_S=${SAMPLE_S:-60}
HZ=${HZ:-99}
INTERVAL=${INTERVAL:-15}
CHUNK_US=${CHUNK_US:-100}
OUT=${OUT:-$(mktemp -d /tmp/bench-pod.XXXXXX)}
mkdir -p "$OUT"
# summary: the figures and bars from pod.csv. Names: the app's .NET leaves in the windows read
# after the first row, pooled (a window holds a few dozen of them: one unnamed is 3 %), and the
# lowest share in one window.
summary() {
	awk -F, -v cap="$CAP_MB" -v capped="$capped" 'NR > 1 { n++; if ($3 > mx) mx = $3; last = $3; r = $8; t = $2
		if (n == 1) { b0 = $3; r0 = $8; t0 = $2 }
		if (n > 1 && $11 > 0) { k++; if (lo == "" || $12 < lo) lo = $12; lv += $11; ln += $11 * $12; fv += $13; fn += $13 * $14 } }
	END { if (!n) { print "bench-pod: no rows"; exit }
	      d = t - t0
	      printf "bench-pod: %d rows; %.1f requests/s (each a new compiled Expression); /tmp bytes max %.2f MiB, at the end %.2f MiB; growth after the first row %.2f MiB per hour\n", n, (d > 0 ? (r - r0) / d : 0), mx / 1048576, last / 1048576, (d > 0 ? (last - b0) / 1048576 / d * 3600 : 0)
	      printf "bench-pod: BAR /tmp bytes stay under the cap of %d MiB (agent cap: %s): %s\n", cap, capped, (mx <= cap * 1048576 ? "PASS" : "FAIL")
	      if (k) printf "bench-pod: %d windows after the first row: .NET leaves named %.4f of %d (lowest in one window %.4f); .NET frames named %.4f of %d\n", k, ln / lv, lv, lo, fn / fv, fv
	      printf "bench-pod: BAR names stay right (.NET leaves named >= 0.98, pooled over those windows): %s\n", (k && ln / lv >= 0.98 ? "PASS" : "FAIL") }' "$OUT/pod.csv"
}
# REPORT=DIR: print the summary of the run whose data is in DIR again, run nothing.
if [ -n "${REPORT:-}" ]; then
	OUT=$REPORT
	capped=$(cat "$OUT/cap" 2> /dev/null || echo '?')
	summary
	exit 0
fi
bl_need "$SPANPROF" "$SVC_DLL" "$GEN_DLL" "$HOOK_DLL"
bl_init
WIN=$OUT/windows
rm -rf "$WIN"
[ -f tests/tools/node_modules/pprof-format/package.json ] ||
	(cd tests/tools && npm ci --no-audit --no-fund --silent) || bl_die "npm ci in tests/tools failed"
# The ready file where the pod can write it and the host read it: the repository is seen by both.
SHARED=$(mktemp -d "$BUILD/tmp/bench-pod.XXXXXX" 2> /dev/null || { mkdir -p "$BUILD/tmp"; mktemp -d "$BUILD/tmp/bench-pod.XXXXXX"; })
BL_AT_EXIT='rm -rf "$SHARED"'

bl_say "$(bl_machine)"
OTEL_SERVICE_NAME=codegen SPANSERVICE_SERVICE_NAME=codegen SPANSERVICE_READY="$SHARED/ready.json" SPANSERVICE_BG_DUTY=0 SPANSERVICE_CHUNK_US="$CHUNK_US" \
	DOTNET_STARTUP_HOOKS=$HOOK_DLL tests/integration/nsrun.sh dotnet "$SVC_DLL" --port 0 > "$OUT/service.log" 2>&1 &
launcher=$!
bl_track "$launcher"
for _ in $(seq 600); do [ -s "$SHARED/ready.json" ] && break; bl_alive "$launcher" || break; sleep 0.1; done
[ -s "$SHARED/ready.json" ] || { cat "$OUT/service.log" >&2; bl_die "the service is not ready"; }
APP=$(pgrep -P "$launcher" | head -1)
[ -n "$APP" ] || bl_die "no process under nsrun's unshare"
bl_track "$APP"
PODTMP=/proc/$APP/root/tmp
port=$(node -pe "JSON.parse(require('fs').readFileSync('$SHARED/ready.json')).port")

cap_args=() capped="no (this agent has no --perfmap-max-mb)"
if bl_agent_has --perfmap-max-mb; then cap_args=(--perfmap-max-mb "$CAP_MB"); capped="--perfmap-max-mb $CAP_MB"; fi
echo "$capped" > "$OUT/cap"
bl_say "SpanService (pid $APP on the host, private /tmp) under $RATE req/s of /work/codegen; agent at $HZ Hz, windows of ${INTERVAL}s, cap: $capped; ${DURATION_MIN} min; out $OUT"
dotnet "$GEN_DLL" --url "http://127.0.0.1:$port" --concurrency "$CONCURRENCY" --rate "$RATE" \
	--duration $((DURATION_MIN * 60 + 120)) --paths /work/codegen --progress "$OUT/progress" > "$OUT/loadgen.json" 2> "$OUT/loadgen.err" &
gen=$!
bl_track "$gen"
sleep 5
bl_alive "$gen" || { cat "$OUT/loadgen.err" >&2; bl_die "LoadGen exited"; }
# shellcheck disable=SC2086
bl_start_agent "$OUT/agent.log" -F "$HZ" --interval "$INTERVAL" --output-dir "$WIN" "${cap_args[@]}" ${AGENT_ARGS:-}
t0=$(date +%s)

# tmp_bytes: the pod's /tmp by kind, "total perf_map jitdump perfinfo other".
tmp_bytes() {
	find "$PODTMP" -xdev -type f -printf '%s %f\n' 2> /dev/null | awk '
		{ t += $1 } $2 ~ /^perf-[0-9]+\.map$/ { m += $1; next } $2 ~ /^jit-[0-9]+\.dump$/ { j += $1; next }
		$2 ~ /^perfinfo-[0-9]+\.map$/ { i += $1; next } { o += $1 }
		END { printf "%d %d %d %d %d\n", t, m, j, i, o }'
}
# names: "window samples leaves leaf_frac frames frame_frac" of the app (by its pid label) in the
# newest window the agent wrote (any service directory: the name it finds is its own business).
names() {
	local j=$OUT/window.json stamp f r
	stamp=$(find "$WIN" -name '*.pb.gz' -printf '%f\n' 2> /dev/null | cut -c1-41 | sort | tail -n 1 || true)
	[ -n "$stamp" ] || { echo "none 0 0 0 0 0"; return; }
	for f in $(find "$WIN" -name "$stamp*.pb.gz"); do
		node tests/tools/pprof-json.js "$f" > "$j" 2> /dev/null || continue
		r=$(node tests/integration/query.js dotnet "$j" --pid "$APP" | node -e '
			let s = ""; process.stdin.on("data", d => s += d).on("end", () => { const o = JSON.parse(s);
			if (o.total) console.log(o.total, o.leaves, o.leaf_frac.toFixed(4), o.frames, o.frame_frac.toFixed(4)); });')
		[ -z "$r" ] || { echo "$stamp $r"; return; }
	done
	echo "$stamp 0 0 0 0 0"
}
echo "minute,t_s,tmp_bytes,perf_map_bytes,jitdump_bytes,perfinfo_bytes,other_bytes,requests,window,window_samples,dotnet_leaves,leaf_named,dotnet_frames,frame_named,app_rss_kib,agent_rss_kib" > "$OUT/pod.csv"
end=$((t0 + DURATION_MIN * 60)) next=$((t0 + SAMPLE_S))
while :; do
	now=$(date +%s)
	[ "$now" -lt "$end" ] || break
	bl_alive "$AGENT_PID" || { tail -20 "$OUT/agent.log" >&2; bl_die "the agent exited"; }
	bl_alive "$APP" || { tail -20 "$OUT/service.log" >&2; bl_die "the service exited"; }
	if [ "$now" -ge "$next" ]; then
		read -r tot map jit info other < <(tmp_bytes)
		read -r win smp lv lf fr ff < <(names)
		reqs=$(tail -n 1 "$OUT/progress" 2> /dev/null | cut -d' ' -f2 || true)
		echo "$(awk -v t=$((now - t0)) 'BEGIN { printf "%.2f", t / 60 }'),$((now - t0)),$tot,$map,$jit,$info,$other,${reqs:-0},$win,$smp,$lv,$lf,$fr,$ff,$(bl_rss "$APP"),$(bl_rss "$AGENT_PID")" >> "$OUT/pod.csv"
		tail -n 1 "$OUT/pod.csv" | awk -F, '{ printf "bench-pod: %5.1f min  /tmp %.2f MiB (perf map %.2f, jitdump %.2f, other %.2f)  requests %d  window: %d samples, .NET leaves named %.4f, frames %.4f\n", $1, $3 / 1048576, $4 / 1048576, $5 / 1048576, ($6 + $7) / 1048576, $8, $10, $12, $14 }'
		next=$((next + SAMPLE_S))
	fi
	sleep 1
done
bl_stop -t 30 "$AGENT_PID"
bl_say "agent: $(grep 'agent stopped' "$OUT/agent.log" || echo 'no stop line')"
bl_say "pod /tmp after the agent stopped: $(tmp_bytes | awk '{ printf "%.2f MiB", $1 / 1048576 }')"
summary | tee "$OUT/summary.txt"
bl_say "data in $OUT (pod.csv, summary.txt, agent.log)"
