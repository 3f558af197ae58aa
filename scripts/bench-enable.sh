#!/usr/bin/env bash
# bench-enable.sh: the pause at enable. When perf maps are turned on in a running .NET process, the
# runtime writes a line for every method already loaded, under its perf map lock. For each N in
# NS, N SpanService processes (hook, perf maps off) under RATE requests/s in all (one LoadGen
# spreading its clients over them, open loop); PRE seconds into the measured run spanprof turns
# perf maps on in all N at once; the run goes on POST seconds. LoadGen's per-second figures
# (--per-second: requests ended in each wall-clock second, their p99) give the seconds before,
# during and after. "During" runs from the enabler's start until every process's perf map exists
# (polled every 0.1 s). Check the enabler's log (enabler-N.log in OUT) for processes it could not
# enable: on a loaded machine the runtime can answer the IPC after spanprof stopped waiting.
#
#   scripts/bench-enable.sh                     # NS="1 10 50", ENABLER=record
#   NS=50 ENABLER=agent scripts/bench-enable.sh
#
# ENABLER: record (`spanprof record -p PID...`, default: only these processes are touched),
#   agent (`spanprof agent` host-wide: the agent starting on a busy node; it also turns perf maps
#   on in any other .NET process of the host), ipc (tests/tools/diagipc-enable, every process at
#   once, PERFMAP_TYPE 1 all or 3 map only: the runtime's own part, no profiler starting).
# Settings (environment): NS ("1 10 50"), ENABLER (record), RATE (200), CONCURRENCY (2 per
#   process, at least 16), PRE (10), POST (20), WARMUP (15), HZ (99), CHUNK_US (100), PERFMAP_TYPE
#   (1, ipc only), OUT, BUILD. REPORT=DIR prints the tables of the run whose data is in DIR again.
# Output in OUT: per N, enable-N.csv (LoadGen's seconds) and a table; summary.txt. A p99 in the
# enable seconds over twice the second before is noted ("PAUSE"); nothing exits non-zero for it.
set -euo pipefail
cd "$(dirname "$0")/.."
BL_NAME=bench-enable
. scripts/bench-lib.sh
NS=${NS:-1 10 50}
ENABLER=${ENABLER:-record}
RATE=${RATE:-200}
PRE=${PRE:-10}
POST=${POST:-20}
WARMUP=${WARMUP:-15}
HZ=${HZ:-99}
CHUNK_US=${CHUNK_US:-100}
PERFMAP_TYPE=${PERFMAP_TYPE:-1}
IPC=$BUILD/tools/diagipc-enable
OUT=${REPORT:-${OUT:-$(mktemp -d /tmp/bench-enable.XXXXXX)}}
mkdir -p "$OUT"
bl_need "$SPANPROF" "$SVC_DLL" "$GEN_DLL" "$HOOK_DLL"
[ "$ENABLER" != ipc ] || bl_need "$IPC"
bl_init
[ -n "${REPORT:-}" ] || : > "$OUT/summary.txt"
[ -n "${REPORT:-}" ] || bl_say "$(bl_machine)" | tee -a "$OUT/summary.txt"
[ -n "${REPORT:-}" ] || bl_say "enabler $ENABLER$([ "$ENABLER" != ipc ] || echo " (type $PERFMAP_TYPE)"); $RATE req/s in all (/work/a, /work/b; ${CHUNK_US} us chunks); enable ${PRE}s into the run, ${POST}s after" | tee -a "$OUT/summary.txt"

# table N: the seconds around the enable, relative to the enabler's start, from enable-N.csv and
# enable-N.times ("start all_there" as Unix seconds); RESULT: the p99 before (the last second, and
# the mean of the 5 before), the largest during, the second after.
table() {
	local n=$1 t_start t_all
	read -r t_start t_all < "$OUT/enable-$n.times"
	awk -F, -v n="$n" -v ts="$t_start" -v ta="${t_all:-0}" -v post="$POST" '
		NR == 1 { next }
		{ s = $1 - int(ts); rows[s] = $0; if (s > hi) hi = s }
		END {
			e = ta > 0 ? int(ta) - int(ts) : post
			printf "bench-enable: N=%d: every perf map there %s after the start (seconds 0..%d are \"during\"; the last, partial second left out)\n", n, (ta > 0 ? sprintf("%.2f s", ta - ts) : "NOT within the run"), e
			printf "bench-enable: N=%-3d %4s  %-6s %8s %9s %9s %9s\n", n, "sec", "phase", "req/s", "p50 ms", "p99 ms", "max ms"
			for (s = -5; s <= e + 5 && s < hi; s++) {
				if (!(s in rows)) continue
				split(rows[s], f, ",")
				ph = s < 0 ? "before" : s <= e ? "during" : "after"
				printf "bench-enable: N=%-3d %+4d  %-6s %8d %9.2f %9.2f %9.2f\n", n, s, ph, f[2], f[4], f[5], f[6]
				if (s < 0) { bp += f[5]; bk++; b1 = f[5]; br = f[2] }
				else if (s <= e) { if (f[5] > dp) dp = f[5]; if (dmin == "" || f[2] < dmin) dmin = f[2] }
				else if (s == e + 1) { ap = f[5]; ar = f[2]; have_after = 1 }
			}
			printf "bench-enable: RESULT N=%-3d p99 before %.2f ms (5 s mean %.2f), during max %.2f ms, after %s; req/s before %d, during min %d, after %s%s\n",
				n, b1, (bk ? bp / bk : 0), dp, (have_after ? sprintf("%.2f ms", ap) : "n/a"), br, dmin, (have_after ? ar : "n/a"),
				(bk && dp > 2 * bp / bk ? "  PAUSE: p99 during > 2x the 5 s before" : "")
		}' "$OUT/enable-$n.csv"
}

# REPORT=DIR: print the tables of an earlier run's data again, run nothing.
if [ -n "${REPORT:-}" ]; then
	for n in $NS; do [ ! -e "$OUT/enable-$n.times" ] || table "$n"; done
	exit 0
fi
for n in $NS; do
	svcs=() urls=()
	rm -f "$OUT"/ready.*
	for i in $(seq "$n"); do
		SPANSERVICE_READY="$OUT/ready.$i" SPANSERVICE_BG_DUTY=0 SPANSERVICE_CHUNK_US="$CHUNK_US" DOTNET_PerfMapEnabled=0 \
			DOTNET_STARTUP_HOOKS=$HOOK_DLL dotnet "$SVC_DLL" --port 0 > "$OUT/svc.$i.log" 2>&1 &
		svcs+=($!)
		bl_track "$!"
	done
	for i in $(seq "$n"); do
		for _ in $(seq 1200); do [ -s "$OUT/ready.$i" ] && break; sleep 0.1; done
		[ -s "$OUT/ready.$i" ] || { cat "$OUT/svc.$i.log" >&2; bl_die "service $i not ready"; }
		urls+=("http://127.0.0.1:$(node -pe "JSON.parse(require('fs').readFileSync('$OUT/ready.$i')).port")")
	done
	conc=${CONCURRENCY:-$((2 * n > 16 ? 2 * n : 16))}
	url_list=$(IFS=,; echo "${urls[*]}")
	dotnet "$GEN_DLL" --url "$url_list" --concurrency "$conc" --rate "$RATE" --warmup "$WARMUP" \
		--duration $((PRE + POST)) --paths /work/a,/work/b --per-second "$OUT/enable-$n.csv" \
		--progress "$OUT/progress.$n" > "$OUT/loadgen-$n.json" 2> "$OUT/loadgen-$n.err" &
	gen=$!
	bl_track "$gen"
	# PRE seconds after the measured run began (its first progress line).
	for _ in $(seq $(((WARMUP + 30) * 10))); do [ -s "$OUT/progress.$n" ] && break; sleep 0.1; done
	[ -s "$OUT/progress.$n" ] || { cat "$OUT/loadgen-$n.err" >&2; bl_die "LoadGen did not start"; }
	sleep "$PRE"
	t_start=$(date +%s.%N)
	prof=()
	case $ENABLER in
	record)
		pargs=()
		for p in "${svcs[@]}"; do pargs+=(-p "$p"); done
		"$SPANPROF" record "${pargs[@]}" -F "$HZ" -d $((POST + 5)) -o "$OUT/record-$n.pb.gz" > "$OUT/enabler-$n.log" 2>&1 &
		prof=($!) ;;
	agent)
		"$SPANPROF" agent -F "$HZ" --output-dir "$OUT/windows-$n" > "$OUT/enabler-$n.log" 2>&1 &
		prof=($!) ;;
	ipc)
		for p in "${svcs[@]}"; do "$IPC" -t "$PERFMAP_TYPE" "$p" >> "$OUT/enabler-$n.log" 2>&1 & done ;;
	*) bl_die "ENABLER: record, agent or ipc" ;;
	esac
	bl_track "${prof[@]}"
	# The enable has reached every process when each has its perf map (the runtime creates it
	# and then writes every loaded method into it); polled every 0.1 s until the run's last seconds.
	t_all="" have=0
	for _ in $(seq $(((POST - 2) * 10))); do
		have=$(for p in "${svcs[@]}"; do [ ! -e "/tmp/perf-$p.map" ] || echo; done | wc -l)
		[ "$have" != "$n" ] || { t_all=$(date +%s.%N); break; }
		sleep 0.1
	done
	[ -n "$t_all" ] || bl_say "N=$n: only $have of $n perf maps appeared within $((POST - 2)) s"
	echo "$t_start ${t_all:-}" > "$OUT/enable-$n.times"
	wait "$gen" || { cat "$OUT/loadgen-$n.err" >&2; bl_die "LoadGen failed"; }
	[ ${#prof[@]} = 0 ] || bl_stop -t 15 "${prof[@]}"
	[ "$ENABLER" != ipc ] || for p in "${svcs[@]}"; do "$IPC" -d "$p" > /dev/null 2>&1 || true; done
	table "$n" | tee -a "$OUT/summary.txt"
	bl_stop "${svcs[@]}"
	rm -rf "$OUT/windows-$n"
done
bl_say "data in $OUT (enable-N.csv: LoadGen per second; summary.txt)"
