#!/usr/bin/env bash
# bench-robust.sh: the speed figures of the robustness tests, which the tests print ("figure
# NAME=VALUE" lines) and no longer assert: how long spanprof takes past stalled processes
# (tests/integration/stalls.sh) and the CPU that hostile processes cost it (hostile.sh). It runs
# both tests (as root; run it under the exclusive lock: flock /tmp/spanprof-heavy.lock), then prints
# each figure beside the bound the tests once asserted. A figure past its bound is flagged, not a
# failure: the tests themselves decide pass or fail on behaviour.
# Usage: scripts/bench-robust.sh [stalls] [hostile]
set -uo pipefail
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
OUT=$(mktemp -d /tmp/bench-robust.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

for t in ${*:-stalls hostile}; do
	echo "bench-robust: running tests/integration/$t.sh" >&2
	timeout --kill-after=10 900 bash "tests/integration/$t.sh" > "$OUT/$t.log" 2>&1 ||
		echo "bench-robust: $t.sh failed (exit $?); its figures below may be missing" >&2
	grep -ho 'figure [a-z_]*=[0-9.]*' "$OUT/$t.log" | sed 's/^figure //' >> "$OUT/figures"
done
[ -s "$OUT/figures" ] || { echo "bench-robust: no figures" >&2; exit 1; }
get() { sed -n "s/^$1=//p" "$OUT/figures" | tail -1; }

echo "$(nproc) CPUs, kernel $(uname -r), spanprof $(git rev-parse --short HEAD 2>/dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-58s %10s %14s %s\n' figure value "former bound" ""
row() {	# row WHAT VALUE OP BOUND UNIT
	local flag=""
	[ -n "$2" ] || { printf '%-58s %10s\n' "$1" "-"; return; }
	awk -v v="$2" -v b="$4" "BEGIN { exit !(v $3 b) }" || flag="PAST"
	printf '%-58s %10s %14s %s\n' "$1" "$2 $5" "$3 $4 $5" "$flag"
}
row "stalls: -d 2, perf map on a silent FUSE mount" "$(get fuse_s)" '<=' 8 s
row "stalls: -d 2, four silent diagnostics sockets" "$(get silent_s)" '<=' 5 s
row "stalls: -d 8, five silent sockets beside a busy process" "$(get talks_s)" '<=' 11 s
row "stalls: busy process's samples in 8 s at 999 Hz" "$(get talks_busy_samples)" '>=' 5600 ""
row "stalls: exit after the second SIGTERM" "$(get second_sigterm_s)" '<=' 2.5 s
row "hostile: CPU while sampling 8 s, 60,000 mappings" "$(get many_maps_cpu_ms)" '<=' 400 ms
read_ms=$(get rewrite_read_ms)
row "hostile: CPU, 300,000-line perf map rewritten every 0.5 s" "$(get rewrite_cpu_ms)" '<=' \
	"$(( ${read_ms:-0} * 4 + 8000 / 50 + 150 ))" ms
