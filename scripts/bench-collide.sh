#!/usr/bin/env bash
# bench-collide.sh: what a process that forges colliding frames costs spanprof, against one that
# forges as many random frames. tests/apps/native/forged_stacks shows a new forged stack of 24
# frames in every sample, its addresses from a pool: "collide" (all in one slot of the frame
# table under its former unkeyed hash) or "pool" (random). `record -p` samples it for SECS s at
# HZ, ROUNDS times each, in turn; the figure is record's own user-space CPU while sampling (its
# report's "user space" line) and the ratio collide / pool. A benchmark: it prints, never fails.
# SPANPROF=path compares another build (e.g. one from before the tables were keyed).
#
#   BUILD=build HZ=199 SECS=12 ROUNDS=3 scripts/bench-collide.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SPANPROF=${SPANPROF:-$BUILD/spanprof}
FORGED=$BUILD/apps/native/forged_stacks
HZ=${HZ:-199}
SECS=${SECS:-12}
ROUNDS=${ROUNDS:-3}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/bench-collide.XXXXXX")
APP=""
trap '[ -z "$APP" ] || kill "$APP" 2> /dev/null || true; wait 2> /dev/null || true; rm -rf "$OUT"' EXIT

# run MODE: one recording of a forged_stacks in MODE; prints "ms_per_1000_samples loop_ms samples".
run() {
	"$FORGED" $((SECS + 30)) "$1" > "$OUT/app.out" &
	APP=$!
	for _ in $(seq 600); do [ -s "$OUT/app.out" ] && break; sleep 0.1; done
	"$SPANPROF" record -p "$APP" -F "$HZ" -d "$SECS" -o "$OUT/p.pb.gz" > "$OUT/r.txt" 2>&1
	kill "$APP" 2> /dev/null || true
	wait "$APP" 2> /dev/null || true
	APP=""
	local per loop taken
	per=$(sed -n 's/.*user space: \([0-9.]*\) ms CPU per 1000 samples while sampling (\([0-9]*\) ms).*/\1/p' "$OUT/r.txt")
	loop=$(sed -n 's/.*user space: \([0-9.]*\) ms CPU per 1000 samples while sampling (\([0-9]*\) ms).*/\2/p' "$OUT/r.txt")
	taken=$(grep -o '[0-9]* samples taken' "$OUT/r.txt" | grep -o '^[0-9]*')
	echo "${per:-?} ${loop:-?} ${taken:-?}"
}

echo "spanprof: $SPANPROF; forged_stacks sampled at $HZ Hz for $SECS s, $ROUNDS rounds"
printf '%-8s %-8s %22s %14s %8s\n' round mode "ms CPU / 1000 samples" "loop CPU ms" samples
sum_c=0 sum_p=0
for r in $(seq "$ROUNDS"); do
	for mode in pool collide; do
		read -r per loop taken < <(run "$mode")
		printf '%-8s %-8s %22s %14s %8s\n' "$r" "$mode" "$per" "$loop" "$taken"
		if [ "$mode" = pool ]; then sum_p=$(echo "$sum_p + $per" | bc -l); else sum_c=$(echo "$sum_c + $per" | bc -l); fi
	done
done
printf 'collide / pool, CPU per 1000 samples: %.2f\n' "$(echo "$sum_c / $sum_p" | bc -l)"
