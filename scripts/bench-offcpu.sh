#!/bin/sh
# bench-offcpu.sh: what --off-cpu costs at a high context-switch rate (`make bench`, section
# offcpu). The load is tests/apps/native/pingpong: two threads passing a byte over two pipes, a
# blocking read and a wake-up per hop. Prints
#   1. BPF run time of the off-CPU program (sched_switch; BPF_ENABLE_STATS, --bpf-stats) per
#      context switch while pingpong is NOT profiled (spanprof profiles an idle process): what
#      every other thread on the node pays;
#   2. the same while pingpong IS profiled, its blocks all below the 1 ms threshold: the run time
#      left once the switches of other threads are taken out at the price measured in 1, over
#      pingpong's blocks (its switch-outs, blocking or preempted, and its switch-ins all in);
#   3. pingpong's round trips per second with no profiler, with `record -p` and with
#      `record -p --off-cpu`, in alternating runs, and their ratios to no profiler.
# LOAD=handoff: the load is SpanLoop --handoff instead (tests/apps/SpanLoop/Handoff.cs: .NET
# threads in a ring on CPU 1 handing tokens along, blocking at three places, inside spans; hook
# on), and 3 is left to scripts/bench-slices.py TARGET=handoff (scripts/bench-handoff.sh).
# Figures only; nothing passes or fails. Other work on the host adds switches to every figure.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SECS=${SECS:-8}
ROUNDS=${ROUNDS:-3}
LOAD=${LOAD:-pingpong}
PP=$BUILD/apps/native/pingpong
SL=$BUILD/apps/SpanLoop/SpanLoop.dll
SP=$BUILD/spanprof
OUT=$(mktemp -d)
idle=
trap 'rm -rf "$OUT"; [ -z "$idle" ] || kill "$idle" 2>/dev/null || true' EXIT
for f in "$PP" "$SP"; do
	[ -x "$f" ] || { echo "bench-offcpu.sh: $f missing: run make && make tools" >&2; exit 1; }
done
[ "$LOAD" != handoff ] || [ -f "$SL" ] || { echo "bench-offcpu.sh: $SL missing: run make apps" >&2; exit 1; }

# start_load SECS OUT: the load for SECS seconds, its output in OUT, its pid in $pp; returns once
# it runs (the .NET one once it has said it is ready, and a second more for its first JIT work).
start_load() {
	if [ "$LOAD" = handoff ]; then
		DOTNET_STARTUP_HOOKS=$(cd "$BUILD" && pwd)/hook/SpanProf.Hook.dll DOTNET_PerfMapEnabled=1 taskset -c 1 \
			dotnet "$SL" --handoff --chunk-us "${CHUNK_US:-10}" --duration "$(($1 + 2))" > "$2" & pp=$!
		n=0
		until grep -q ' ready$' "$2" 2> /dev/null; do
			n=$((n + 1)); [ "$n" -lt 300 ] || { echo "bench-offcpu.sh: SpanLoop not ready" >&2; exit 1; }
			sleep 0.1
		done
		sleep 1
	else
		"$PP" "$1" > "$2" & pp=$!
		sleep 1
	fi
}
# rate OUT SECS: the load's rate (pingpong: round trips/s; handoff: hand-offs/s over its run).
rate() {
	if [ "$LOAD" = handoff ]; then
		sed -n "s/^units \([0-9]*\)/\1/p" "$1" | awk -v s="$2" '{ printf "%d hand-offs/s", $1 / (s + 2) }'
	else
		sed -n 's/.*rate \([0-9]*\).*/\1 round trips\/s/p' "$1"
	fi
}

# cost FILE: "per_run_us runs" of the off-CPU program's line.
cost() { sed -n "s/^  off-CPU cost: \([0-9.]*\) us of BPF run time per context switch (\([0-9]*\) runs)/\1 \2/p" "$1"; }
# blocks FILE: "long short preempted" from the off-CPU report line.
blocks() {
	sed -n 's/^  off-CPU: \([0-9]*\) blocks at.* \([0-9]*\) shorter blocks.*yielding switches (runnable: not blocking, not timed) \([0-9]*\)$/\1 \2 \3/p' "$1"
}

# 1. pingpong not profiled: spanprof follows an idle process.
sleep 1000 > /dev/null 2>&1 & idle=$!
start_load $((SECS + 2)) "$OUT/pp1.out"
"$SP" record -p "$idle" --off-cpu --bpf-stats -d "$SECS" -o "$OUT/u.pb.gz" > "$OUT/u.txt"
wait "$pp"
kill "$idle" 2>/dev/null || true
idle=
set -- $(cost "$OUT/u.txt")
u_sw=$1 u_sw_runs=$2
echo "-- not profiled ($LOAD $(rate "$OUT/pp1.out" $((SECS + 2))))"
echo "   sched_switch program: $u_sw us per context switch over $u_sw_runs switches"

# 2. pingpong profiled, every block below the threshold.
start_load $((SECS + 2)) "$OUT/pp2.out"
"$SP" record -p "$pp" --off-cpu --bpf-stats -d "$SECS" -o "$OUT/p.pb.gz" > "$OUT/p.txt"
wait "$pp"
set -- $(cost "$OUT/p.txt") $(blocks "$OUT/p.txt")
p_sw=$1 p_sw_runs=$2 long=$3 short=$4 preempt=$5
awk -v psw="$p_sw" -v pswr="$p_sw_runs" -v usw="$u_sw" -v long="$long" -v short="$short" \
    -v pre="$preempt" 'BEGIN {
	own = long + short + pre; blk = long + short
	sw = own ? (psw * pswr - usw * (pswr - own)) / own : 0
	printf "-- profiled (%s), below the threshold: %d blocks (%d at or above it), %d preempted switches\n", "'"$(rate "$OUT/pp2.out" $((SECS + 2)))"'", blk, long, pre
	printf "   all switches: %.3f us per run over %d\n", psw, pswr
	printf "   per profiled switch-out (its switch-in in): %.3f us; per profiled block (preempted switches in): %.3f us\n",
	       sw, blk ? sw * own / blk : 0
}'

[ "$LOAD" = pingpong ] || exit 0

# 3. Throughput, alternating: no profiler, record -p, record -p --off-cpu.
run_pp() {	# run_pp MODE: pingpong's rate under MODE (none | record | offcpu)
	"$PP" "$SECS" > "$OUT/pp.out" & pp=$!
	case $1 in
	record) "$SP" record -p "$pp" -o "$OUT/r.pb.gz" > /dev/null ;;
	offcpu) "$SP" record -p "$pp" --off-cpu -o "$OUT/o.pb.gz" > /dev/null ;;
	esac
	wait "$pp"
	sed -n 's/.*rate \([0-9]*\).*/\1/p' "$OUT/pp.out"
}
: > "$OUT/rates"
i=0
while [ "$i" -lt "$ROUNDS" ]; do
	for m in none record offcpu; do
		echo "$m $(run_pp $m)" >> "$OUT/rates"
	done
	i=$((i + 1))
done
awk '{ s[$1] += $2; n[$1]++; v[$1] = v[$1] " " $2 } END {
	printf "-- throughput, %d alternating rounds of %s s (round trips/s)\n", n["none"], "'"$SECS"'"
	for (m in s) printf "   %-7s mean %.0f  (%s )\n", m, s[m] / n[m], v[m]
	printf "   ratio to no profiler: record -p %.3f, record -p --off-cpu %.3f; --off-cpu to record -p %.3f\n",
	       s["record"] / s["none"], s["offcpu"] / s["none"], s["offcpu"] / s["record"]
}' "$OUT/rates"
