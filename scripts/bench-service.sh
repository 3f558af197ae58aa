#!/usr/bin/env bash
# bench-service.sh: what being profiled costs SpanService, side by side: spanprof against Linux perf
# and dotnet-trace, each arm in a fresh service process, the order of the arms rotated every round.
#
# Arms (MODES, default: all but perfmap):
#   off           no hook, no profiler
#   hook          the hook only (span table kept, nobody reads it)
#   record        spanprof record -p PID -F HZ, no hook (it turns perf maps on at attach)
#   spanprof      the hook plus spanprof record -p PID -F HZ
#   agent         the hook plus spanprof agent at its defaults (19 Hz, host-wide .NET, LoadGen
#                 included), pushing to a local Pyroscope receiver
#   perf          DOTNET_PerfMapEnabled=1 plus perf record -F HZ -g -p PID (perf 6.1 polls in a
#                 busy loop once a thread it follows exits, and the thread pool retires threads:
#                 its own CPU, in machine-cpu, then reaches most of a core; docs/benchmarks.md)
#   dotnet-trace  dotnet-trace collect -p PID --profile dotnet-sampled-thread-time --duration
#   perfmap       DOTNET_PerfMapEnabled=1 only: what writing perf maps costs by itself
#
# Figures per arm, as ratios to `off` of the same round (median, min, max, mean with a 95 %
# confidence interval over the rounds). A fresh process differs from the next by several per cent
# here (JIT tiering, thread pool), more than the costs measured, so the arms whose profiler
# attaches to a running service (record, spanprof, agent, perf, dotnet-trace) are also measured
# within their own process (PAIRED=1, the default): a run without the profiler, one with it, and
# one without it again; the ratio is to the mean of the two runs without ("in-process" rows). The
# hook and perf maps are chosen at start, so `hook` and `perfmap` have only the ratio across
# processes. Figures:
#   rps         requests/s (higher is better)
#   p99         p99 latency
#   svc-cpu     the service's CPU per request (utime+stime over the measured LoadGen run)
#   machine-cpu the service's plus the profiler's processes' CPU per request
# The bars of issue 11 are checked at the end and printed as met / NOT met; nothing exits non-zero
# for a figure (only for a failed run).
#
# Settings (environment): BUILD (build), ROUNDS (5), DURATION (15), WARMUP (5), CONCURRENCY (64),
#   HZ (99), PATHS (/work/a,/work/b,/work/labels?tenant=acme), CHUNK_US (100), PIN (1: service on
#   CPU 1, LoadGen on CPU 0, profilers unpinned), BG_DUTY (0), PAIRED (1), MODES, SVC_ENV (more
#   environment for every service process, e.g. "DOTNET_TieredPGO=0 DOTNET_TieredCompilation=0",
#   which makes fresh processes more alike).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-15}
WARMUP=${WARMUP:-5}
CONCURRENCY=${CONCURRENCY:-64}
HZ=${HZ:-99}
PATHS=${PATHS:-/work/a,/work/b,/work/labels?tenant=acme}
CHUNK_US=${CHUNK_US:-100}
PIN=${PIN:-1}
BG_DUTY=${BG_DUTY:-0}
MODES=${MODES:-off hook record spanprof agent perf dotnet-trace}
SVC_ENV=${SVC_ENV-}
PAIRED=${PAIRED:-1}
HOOK_DLL=$BUILD/hook/SpanProf.Hook.dll
SVC_DLL=$BUILD/apps/SpanService/SpanService.dll
GEN_DLL=$BUILD/apps/LoadGen/LoadGen.dll
SPANPROF=$BUILD/spanprof
TRACE_DIR=$BUILD/tools/dotnet-trace
TICK=$(getconf CLK_TCK)

die() { echo "bench-service: $*" >&2; exit 1; }
for f in "$HOOK_DLL" "$SVC_DLL" "$GEN_DLL" "$SPANPROF"; do [ -e "$f" ] || die "$f missing: run make all apps"; done
if [ "$PIN" = 1 ]; then
	[ "$(nproc)" -ge 2 ] || die "PIN=1 needs 2 CPUs"
	PIN_SVC=(taskset -c 1) PIN_GEN=(taskset -c 0)
else
	PIN_SVC=() PIN_GEN=()
fi
case " $MODES " in *" perf "*) command -v perf > /dev/null || die "perf missing (apt-get install linux-perf)";; esac
case " $MODES " in *" dotnet-trace "*)
	if [ ! -x "$TRACE_DIR/dotnet-trace" ]; then
		echo "bench-service: installing dotnet-trace into $TRACE_DIR (local NuGet feed)"
		dotnet tool install --tool-path "$TRACE_DIR" dotnet-trace > /dev/null || die "dotnet tool install dotnet-trace failed"
	fi;;
esac

TMP=$(mktemp -d /tmp/bench-service.XXXXXX)
PIDS=()	# the receiver; RUN_PIDS: the current run's service and profiler
RUN_PIDS=()
cleanup() {
	for p in "${RUN_PIDS[@]}" "${PIDS[@]}"; do kill -TERM "$p" 2> /dev/null || true; done
	wait 2> /dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

json_num() { grep -o "\"$2\":[0-9.eE+-]*" "$1" | head -n 1 | cut -d: -f2; }
# ticks PID...: user + system CPU of these processes so far (clock ticks; 0 for a gone one).
ticks() {
	local t=0 p
	for p in "$@"; do t=$((t + $(sed 's/.*) //' "/proc/$p/stat" 2> /dev/null | awk '{ print $12 + $13 }' || echo 0))); done
	echo "$t"
}

RX_PORT=""
case " $MODES " in *" agent "*)
	node tests/tools/pyroscope-receiver.js --port 0 --ready "$TMP/rx.ready" --out /dev/null > /dev/null 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do [ -s "$TMP/rx.ready" ] && break; sleep 0.1; done
	RX_PORT=$(cat "$TMP/rx.ready");;
esac

declare -A PH
# steal: "stolen total" ticks of all CPUs so far (/proc/stat): the hypervisor's share.
steal() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print $9, t }' /proc/stat; }
# phase SVC NAME [PROFILER_PID...]: one measured LoadGen run against the service; PH[NAME.rps],
# PH[NAME.p99], PH[NAME.svc], PH[NAME.mach] (CPU microseconds per request: the service's, and the
# service's plus the profiler's).
phase() {
	local svc=$1 name=$2 s0 p0 s1 p1 ok st0 st1
	shift 2
	st0=$(steal) s0=$(ticks "$svc") p0=$(ticks "$@")
	gen "$DURATION" "$TMP/run.json"
	s1=$(ticks "$svc") p1=$(ticks "$@") st1=$(steal)
	PH[$name.steal]=$(awk -v a="$st0" -v b="$st1" 'BEGIN { split(a, x); split(b, y); t = y[2] - x[2]
		printf "%.1f", (t > 0 ? 100 * (y[1] - x[1]) / t : 0) }')
	[ -z "${VERBOSE:-}" ] || echo "bench-service:   phase $name: ${PH[$name.steal]} % stolen" >&2
	ok=$(json_num "$TMP/run.json" ok)
	[ "$(json_num "$TMP/run.json" errors)" = 0 ] || echo "bench-service: warning: failed requests ($name)" >&2
	PH[$name.rps]=$(json_num "$TMP/run.json" rps) PH[$name.p99]=$(json_num "$TMP/run.json" p99)
	PH[$name.svc]=$(awk -v t=$((s1 - s0)) -v n="$ok" -v hz="$TICK" 'BEGIN { printf "%.2f", t / hz * 1e6 / n }')
	PH[$name.mach]=$(awk -v t=$((s1 - s0 + p1 - p0)) -v n="$ok" -v hz="$TICK" 'BEGIN { printf "%.2f", t / hz * 1e6 / n }')
}

ITERS=""
# run_one ARM: one fresh service, warm-up, the profiler started, one measured LoadGen run (with
# PAIRED, one before and one after it too). Sets RPS P99 SVC_US MACH_US (CPU microseconds per
# request) and BASE (the same four figures without the profiler, in the same process; or "").
run_one() {
	local arm=$1 hooks="" disable=1 perfmap=0 svc prof=() port
	case $arm in hook | spanprof | agent) hooks=$HOOK_DLL disable="" ;; esac
	case $arm in perf | perfmap) perfmap=1 ;; esac
	rm -f "$TMP/ready.json" "$TMP/perf.data"
	# SpanService references the hook for SpanProf.Label: SPANPROF_HOOK_DISABLE=1 keeps the arms
	# without the hook unhooked (Label is then a no-op scope).
	env $SVC_ENV DOTNET_STARTUP_HOOKS="$hooks" SPANPROF_HOOK_DISABLE="$disable" DOTNET_PerfMapEnabled=$perfmap \
		SPANSERVICE_READY="$TMP/ready.json" SPANSERVICE_CHUNK_US="$CHUNK_US" SPANSERVICE_ITERS="$ITERS" \
		SPANSERVICE_BG_DUTY="$BG_DUTY" SPANSERVICE_SPANS= \
		"${PIN_SVC[@]}" dotnet "$SVC_DLL" --port 0 > "$TMP/service.log" 2>&1 &
	svc=$!
	RUN_PIDS=($svc)
	for _ in $(seq 300); do [ -s "$TMP/ready.json" ] && break; kill -0 "$svc" 2> /dev/null || break; sleep 0.1; done
	[ -s "$TMP/ready.json" ] || { cat "$TMP/service.log" >&2; die "service ($arm) not ready"; }
	port=$(json_num "$TMP/ready.json" port)
	[ -n "$ITERS" ] || ITERS=$(json_num "$TMP/ready.json" iters)
	gen() { "${PIN_GEN[@]}" dotnet "$GEN_DLL" --url "http://127.0.0.1:$port" --concurrency "$CONCURRENCY" \
		--duration "$1" --paths "$PATHS" > "$2" 2> "$TMP/loadgen.err" || { cat "$TMP/loadgen.err" >&2; die "LoadGen failed ($arm)"; }; }
	[ "$WARMUP" = 0 ] || gen "$WARMUP" "$TMP/warm.json"
	local attaches=0
	case $arm in record | spanprof | agent | perf | dotnet-trace) attaches=$PAIRED ;; esac
	[ "$attaches" = 0 ] || { phase "$svc" base1; }
	case $arm in
	record | spanprof)
		"$SPANPROF" record -p "$svc" -F "$HZ" -d $((DURATION + 60)) -o "$TMP/prof.pb.gz" > "$TMP/prof.txt" 2>&1 &
		prof=($!) ;;
	agent)
		"$SPANPROF" agent --pyroscope-url "http://127.0.0.1:$RX_PORT" > "$TMP/prof.txt" 2>&1 &
		prof=($!) ;;
	perf)
		perf record -F "$HZ" -g -p "$svc" -o "$TMP/perf.data" > "$TMP/prof.txt" 2>&1 &
		prof=($!) ;;
	dotnet-trace)
		"$TRACE_DIR/dotnet-trace" collect -p "$svc" --profile dotnet-sampled-thread-time \
			--duration "00:00:00:$((DURATION + 3))" -o "$TMP/trace.nettrace" > "$TMP/prof.txt" 2>&1 &
		prof=($!) ;;
	esac
	RUN_PIDS+=("${prof[@]}")
	[ ${#prof[@]} = 0 ] || sleep 2	# attach, BPF load, perf map enabling: before the measured run
	for p in "${prof[@]}"; do kill -0 "$p" 2> /dev/null || { cat "$TMP/prof.txt" >&2; die "$arm: the profiler exited early"; }; done
	phase "$svc" on "${prof[@]}"
	for p in "${prof[@]}"; do
		[ "$arm" = dotnet-trace ] || kill -INT "$p" 2> /dev/null || true
		# perf record exits non-zero after SIGINT: its data file says whether it worked.
		if ! wait "$p" && ! { [ "$arm" = perf ] && [ -s "$TMP/perf.data" ]; }; then
			cat "$TMP/prof.txt" >&2
			die "$arm: the profiler failed"
		fi
	done
	[ "$attaches" = 0 ] || { phase "$svc" base2; }
	RPS=${PH[on.rps]} P99=${PH[on.p99]} SVC_US=${PH[on.svc]} MACH_US=${PH[on.mach]}
	BASE=""
	if [ "$attaches" = 1 ]; then
		# the process without its profiler: the mean of the runs before and after
		BASE=$(awk -v a="${PH[base1.rps]} ${PH[base1.p99]} ${PH[base1.svc]} ${PH[base1.mach]}" \
			-v b="${PH[base2.rps]} ${PH[base2.p99]} ${PH[base2.svc]} ${PH[base2.mach]}" \
			'BEGIN { split(a, x); split(b, y); for (i = 1; i <= 4; i++) printf "%.2f ", (x[i] + y[i]) / 2 }')
	fi
	kill -TERM "$svc"
	wait "$svc" || true
	RUN_PIDS=()
}

echo "bench-service: machine $(nproc) CPUs, kernel $(uname -r), .NET $(dotnet --list-runtimes | awk '/NETCore/ { v = $2 } END { print v }'), perf $(perf --version 2> /dev/null | awk '{ print $3 }'), spanprof $("$SPANPROF" --version 2> /dev/null | head -1)"
echo "bench-service: arms: $MODES; rounds=$ROUNDS duration=${DURATION}s warmup=${WARMUP}s concurrency=$CONCURRENCY hz=$HZ chunk_us=$CHUNK_US pin=$PIN paths=$PATHS"
run_one off	# discarded: jits everything once and fixes the work per chunk for every run
echo "bench-service: hot loop iterations per chunk: $ITERS"

: > "$TMP/results"
for r in $(seq "$ROUNDS"); do
	order=$(echo $MODES | awk -v r="$r" '{ for (i = 0; i < NF; i++) printf "%s ", $(((i + r - 1) % NF) + 1) }')
	for arm in $order; do
		run_one "$arm"
		printf 'bench-service: round %d %-12s %8.1f req/s  p99 %7.2f ms  service %7.1f CPU-us/req  machine %7.1f CPU-us/req\n' \
			"$r" "$arm" "$RPS" "$P99" "$SVC_US" "$MACH_US"
		echo "$r $arm $RPS $P99 $SVC_US $MACH_US" >> "$TMP/results"
		if [ -n "$BASE" ]; then
			# shellcheck disable=SC2086 # four numbers
			printf 'bench-service: round %d %-12s %8.1f req/s  p99 %7.2f ms  service %7.1f CPU-us/req  machine %7.1f CPU-us/req  (same process, unprofiled: mean of the runs before and after)\n' \
				"$r" "$arm~base" $BASE
			echo "$r $arm~base $BASE" >> "$TMP/results"
		fi
	done
done

# Ratios to `off` within each round, and (PAIRED) to the same process unprofiled; median/min/max
# and the mean's 95 % confidence interval (Student t over the rounds). Then the bars, on the
# in-process ratios where there are any.
awk -v arms="$MODES" '
	BEGIN { t95[1] = 12.71; t95[2] = 4.30; t95[3] = 3.18; t95[4] = 2.78; t95[5] = 2.57; t95[6] = 2.45
		t95[7] = 2.36; t95[8] = 2.31; t95[9] = 2.26; t95[10] = 2.23; t95[15] = 2.13; t95[20] = 2.09
		na = split(arms, arm, " "); split("rps p99 svc-cpu machine-cpu", fig, " ") }
	{ v[$1, $2, 1] = $3; v[$1, $2, 2] = $4; v[$1, $2, 3] = $5; v[$1, $2, 4] = $6; if ($1 > n) n = $1
	  have[$2] = 1 }
	function tval(df) { while (df > 1 && !(df in t95)) df--; return df >= 1 ? t95[df] : 0 }
	# stats(KEY, ARM, BASE, F): ratios of ARM to BASE, figure F, over the rounds, under KEY.
	function stats(k, a, b, f,    r, x, w, i, j, t, s, ss, m, sd) {
		for (r = 1; r <= n; r++) { x = v[r, a, f] / v[r, b, f]; w[r] = x; s += x; ss += x * x }
		for (i = 2; i <= n; i++) for (j = i; j > 1 && w[j - 1] > w[j]; j--) { t = w[j]; w[j] = w[j - 1]; w[j - 1] = t }
		m = s / n; sd = n > 1 && ss > n * m * m ? sqrt((ss - n * m * m) / (n - 1)) : 0
		MED[k, f] = n % 2 ? w[(n + 1) / 2] : (w[n / 2] + w[n / 2 + 1]) / 2
		MIN[k, f] = w[1]; MAX[k, f] = w[n]; MEAN[k, f] = m; CI[k, f] = n > 1 ? tval(n - 1) * sd / sqrt(n) : 0
	}
	function row(k, a, b, label,    f, line) {
		line = ""
		for (f = 1; f <= 4; f++) {
			stats(k, a, b, f)
			line = line sprintf("%.4f [%.4f, %.4f] %.4f+-%.4f  ", MED[k, f], MIN[k, f], MAX[k, f], MEAN[k, f], CI[k, f])
		}
		printf "bench-service: %-24s %s\n", label, line
	}
	END {
		printf "bench-service: ratios over %d rounds: median [min, max] mean +- 95%% CI\n", n
		printf "bench-service: %-24s %-34s %-34s %-34s %-34s\n", "arm", "rps", "p99", "service CPU/req", "machine CPU/req"
		for (i = 1; i <= na; i++) {
			a = arm[i]; if (a == "off") continue
			row(a, a, "off", a " / off")
			if ((a "~base") in have) row(a "~in", a, a "~base", a " / itself unprof.")
		}
		# The bars: on the in-process ratios when measured (they resolve what fresh processes do not).
		sp = ("spanprof~in", 4) in MED ? "spanprof~in" : "spanprof"
		dt = ("dotnet-trace~in", 4) in MED ? "dotnet-trace~in" : "dotnet-trace"
		pf = ("perf~in", 4) in MED ? "perf~in" : "perf"
		if ((sp, 4) in MED && (dt, 4) in MED) {
			o = MED[sp, 4] - 1; d = MED[dt, 4] - 1
			printf "bench-service: BAR spanprof machine-CPU overhead %+.2f%% <= 1/10 of dotnet-trace %+.2f%% (%s, %s): %s\n", o * 100, d * 100, sp, dt, (o <= d / 10 ? "met" : "NOT met")
		}
		if ((sp, 4) in MED && (pf, 4) in MED) {
			o = MED[sp, 4] - 1; p = MED[pf, 4] - 1
			printf "bench-service: BAR spanprof machine-CPU overhead %+.2f%% below perf %+.2f%% (%s, %s): %s\n", o * 100, p * 100, sp, pf, (o < p ? "met" : "NOT met")
		}
		if ((sp, 1) in MED)
			printf "bench-service: BAR spanprof throughput ratio %.4f >= 0.99 (%s): %s\n", MED[sp, 1], sp, (MED[sp, 1] >= 0.99 ? "met" : "NOT met")
		if ((sp, 4) in CI)
			printf "bench-service: resolution: spanprof machine-CPU 95%% CI half-width %.2f%% (%s; target <= 0.5%%): %s\n", CI[sp, 4] * 100, sp, (CI[sp, 4] <= 0.005 ? "met" : "NOT met")
	}' "$TMP/results"
