#!/bin/sh
# bench-service.sh: SpanService request throughput without the hook, with it, and with it while spanprof
# records the service (the application's whole cost of being profiled), interleaved, as ratios.
#
# Each run is a fresh SpanService process (the hook can only load at startup), driven by LoadGen for
# WARMUP s unmeasured and DURATION s measured. Rounds alternate their order (off,on / on,off / ...)
# so a linear drift of the machine's speed cancels in the mean. The chunk size of the service's hot
# loops is fixed from the first (discarded) run, so every run does exactly the same work per request.
#
# Arms (MODES, default "off on prof"): off = no hook; on = hook loaded; prof = hook loaded and
# `spanprof record -p PID -F PROF_HZ` running through the measured window.
#
# Settings (environment): BUILD (build), ROUNDS (3), DURATION (10), WARMUP (3), CONCURRENCY (200),
#   PATHS (/work/a,/work/b,/work/labels?tenant=acme), CHUNK_US (100: small hot chunks, so per-request
#   costs such as the hook's context switches weigh more than with the service's 2000 default),
#   PIN (0; 1 = service on CPU 1 and LoadGen on CPU 0 with taskset), BG_DUTY (0: the span-less
#   background thread is off, its constant CPU would only dilute the per-request figure).
#
# Two figures: requests/s (what the service delivers) and requests per CPU-second of the service
# process (utime+stime from /proc over the measured LoadGen run). The second is what the hook costs
# and stays meaningful when other work shares the machine; the first moves with any such work.
# Exit status: 0 when every run completed and the figures were printed; 1 on any failure.
set -eu

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-3}
CONCURRENCY=${CONCURRENCY:-200}
PATHS=${PATHS:-/work/a,/work/b,/work/labels?tenant=acme}
CHUNK_US=${CHUNK_US:-100}
PIN=${PIN:-0}
BG_DUTY=${BG_DUTY:-0}
MODES=${MODES:-off on prof}
PROF_HZ=${PROF_HZ:-99}

cd "$(dirname "$0")/.."
ROOT=$(pwd)
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
HOOK_DLL=$BUILD/hook/SpanProf.Hook.dll
SVC_DLL=$BUILD/apps/SpanService/SpanService.dll
GEN_DLL=$BUILD/apps/LoadGen/LoadGen.dll
SPANPROF=$BUILD/spanprof

die() { echo "bench-service: $*" >&2; exit 1; }

# build_if_stale "DIRS" PROJ OUT DLL: builds PROJ into OUT unless DLL is newer than every source in DIRS.
build_if_stale() {
	dirs=$1 proj=$2 out=$3 dll=$4
	# shellcheck disable=SC2086
	if [ -f "$dll" ] && [ -z "$(find $dirs -newer "$dll" \( -name '*.cs' -o -name '*.csproj' \) -not -path '*/obj/*' -not -path '*/bin/*' | head -n 1)" ]; then
		return 0
	fi
	echo "bench-service: building $proj"
	dotnet build "$proj" -c Release -o "$out" -nologo -v q >"$TMP/build.log" 2>&1 ||
		{ tail -n 20 "$TMP/build.log" >&2; die "build of $proj failed"; }
}

if [ "$PIN" = 1 ]; then
	[ "$(nproc)" -ge 2 ] || die "PIN=1 needs 2 CPUs"
	PIN_SVC="taskset -c 1"
	PIN_GEN="taskset -c 0"
else
	PIN_SVC=""
	PIN_GEN=""
fi

TMP=$(mktemp -d /tmp/bench-service.XXXXXX)
SVC_PID=""
cleanup() {
	if [ -n "$SVC_PID" ]; then kill -TERM "$SVC_PID" 2>/dev/null || true; wait "$SVC_PID" 2>/dev/null || true; fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

[ -f hook/SpanProf.Hook.csproj ] || die "hook/SpanProf.Hook.csproj not found: nothing to compare against"
build_if_stale hook hook/SpanProf.Hook.csproj "$BUILD/hook" "$HOOK_DLL"
build_if_stale "tests/apps/SpanService hook" tests/apps/SpanService/SpanService.csproj "$BUILD/apps/SpanService" "$SVC_DLL"
build_if_stale tests/apps/LoadGen tests/apps/LoadGen/LoadGen.csproj "$BUILD/apps/LoadGen" "$GEN_DLL"

# json_num FILE KEY: the first numeric value of "KEY": in a one-line JSON file.
json_num() { grep -o "\"$2\":[0-9.eE+-]*" "$1" | head -n 1 | cut -d: -f2; }
json_bool() { grep -o "\"$2\":\(true\|false\)" "$1" | head -n 1 | cut -d: -f2; }

HZ=$(getconf CLK_TCK)
# cpu_ticks PID: user + system CPU time of the process so far, in clock ticks.
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }

# loadgen PORT SECONDS OUT: one LoadGen run against the service.
loadgen() {
	# shellcheck disable=SC2086
	$PIN_GEN dotnet "$GEN_DLL" --url "http://127.0.0.1:$1" --concurrency "$CONCURRENCY" \
		--duration "$2" --paths "$PATHS" >"$3" 2>"$TMP/loadgen.err" || { cat "$TMP/loadgen.err" >&2; return 1; }
}

ITERS=""
CPU_S=0
# run_one MODE(off|on) WARMUP DURATION OUTFILE: one service process, one LoadGen run.
run_one() {
	mode=$1 warm=$2 dur=$3 out=$4
	ready=$TMP/ready.json
	rm -f "$ready"
	# SpanService references the hook for SpanProf.Label, whose first call would start the hook:
	# SPANPROF_HOOK_DISABLE=1 keeps the "without" runs unhooked (Label is then a no-op scope).
	if [ "$mode" != off ]; then hooks=$HOOK_DLL disable=""; else hooks="" disable=1; fi
	# shellcheck disable=SC2086
	env DOTNET_STARTUP_HOOKS="$hooks" SPANPROF_HOOK_DISABLE="$disable" SPANSERVICE_READY="$ready" SPANSERVICE_CHUNK_US="$CHUNK_US" \
		SPANSERVICE_ITERS="$ITERS" SPANSERVICE_BG_DUTY="$BG_DUTY" SPANSERVICE_SPANS= \
		$PIN_SVC dotnet "$SVC_DLL" --port 0 >"$TMP/service.log" 2>&1 &
	SVC_PID=$!
	i=0
	while [ ! -s "$ready" ]; do
		kill -0 "$SVC_PID" 2>/dev/null || { cat "$TMP/service.log" >&2; die "service ($mode) exited during startup"; }
		i=$((i + 1))
		[ $i -le 300 ] || die "service ($mode) not ready after 30 s"
		sleep 0.1
	done
	port=$(json_num "$ready" port)
	mapped=$(json_bool "$ready" hook_mapped)
	[ -n "$ITERS" ] || ITERS=$(json_num "$ready" iters)
	if [ "$mode" != off ] && [ "$mapped" != true ]; then die "hook loaded but its spanprof-ctx mapping is missing"; fi
	if [ "$mode" = off ] && [ "$mapped" != false ]; then die "hook mapping present in a run without the hook"; fi
	if [ "$warm" != 0 ]; then
		loadgen "$port" "$warm" "$TMP/warmup.json" || die "LoadGen warm-up failed ($mode)"
	fi
	prof_pid=""
	if [ "$mode" = prof ]; then
		"$SPANPROF" record -p "$SVC_PID" -F "$PROF_HZ" -d $((dur + 30)) --bpf-stats \
			-o "$TMP/prof.pb.gz" >"$TMP/prof.txt" 2>&1 &
		prof_pid=$!
		sleep 1	# BPF load and process scan happen before the measured window
	fi
	cpu0=$(cpu_ticks "$SVC_PID")
	loadgen "$port" "$dur" "$out" || die "LoadGen failed ($mode)"
	cpu1=$(cpu_ticks "$SVC_PID")
	if [ -n "$prof_pid" ]; then
		kill -INT "$prof_pid"
		wait "$prof_pid" || { cat "$TMP/prof.txt" >&2; die "spanprof failed"; }
		grep -E 'samples taken|span context|sampler cost|user space' "$TMP/prof.txt" | sed 's/^/bench-service:   spanprof: /'
	fi
	CPU_S=$(awk -v a="$cpu0" -v b="$cpu1" -v hz="$HZ" 'BEGIN { printf "%.2f", (b - a) / hz }')
	kill -TERM "$SVC_PID"
	wait "$SVC_PID" || { cat "$TMP/service.log" >&2; die "service ($mode) exited with an error"; }
	SVC_PID=""
	at_exit=$(sed -n 's/^spanservice: stopped .*hook_mapped=\([01]\).*/\1/p' "$TMP/service.log")
	if [ "$mode" != off ] && [ "$at_exit" != 1 ]; then die "hook mapping gone at exit of a run with the hook"; fi
	if [ "$mode" = off ] && [ "$at_exit" != 0 ]; then die "hook mapping appeared during a run without the hook"; fi
	errors=$(json_num "$out" errors)
	[ "$errors" = 0 ] || echo "bench-service: warning: $errors failed requests in a $mode run" >&2
}

[ -x "$SPANPROF" ] || case " $MODES " in *" prof "*) die "$SPANPROF missing: run make";; esac
echo "bench-service: SpanService throughput, arms: $MODES (prof = hook + spanprof at ${PROF_HZ} Hz)"
echo "bench-service: rounds=$ROUNDS duration=${DURATION}s warmup=${WARMUP}s concurrency=$CONCURRENCY chunk_us=$CHUNK_US pin=$PIN cpus=$(nproc) bg_duty=$BG_DUTY%"
echo "bench-service: paths=$PATHS"

# Discarded run: jits everything once and fixes the work per chunk for all measured runs.
run_one off 1 2 "$TMP/calibrate.json"
echo "bench-service: hot loop iterations per chunk: $ITERS"

: >"$TMP/results"
r=1
while [ $r -le "$ROUNDS" ]; do
	# Rotate the order of the arms every round so a drift of the machine's speed cancels.
	order=$(echo $MODES | awk -v r="$r" '{ for (i = 0; i < NF; i++) printf "%s ", $(((i + r - 1) % NF) + 1) }')
	for mode in $order; do
		run_one "$mode" "$WARMUP" "$DURATION" "$TMP/run.json"
		rps=$(json_num "$TMP/run.json" rps)
		p50=$(json_num "$TMP/run.json" p50)
		p99=$(json_num "$TMP/run.json" p99)
		errors=$(json_num "$TMP/run.json" errors)
		ok=$(json_num "$TMP/run.json" ok)
		cpu_us=$(awk -v c="$CPU_S" -v n="$ok" 'BEGIN { printf "%.1f", (n > 0 ? c * 1e6 / n : 0) }')
		printf 'bench-service: round %d %-4s %8.1f req/s  %7.1f service-CPU-us/req  p50 %7.2f ms  p99 %7.2f ms  errors %s\n' \
			"$r" "$mode" "$rps" "$cpu_us" "$p50" "$p99" "$errors"
		echo "$r $mode $rps $p50 $p99 $cpu_us" >>"$TMP/results"
	done
	r=$((r + 1))
done

# Every arm against "off": throughput ratio and requests per service CPU-second ratio.
awk '
	{ rps[$1, $2] = $3; p99[$1, $2] = $5; cpu[$1, $2] = $6; if ($1 > n) n = $1; arms[$2] = 1 }
	function median(v,    i, j, t, w) {
		for (i = 1; i <= n; i++) w[i] = v[i]
		for (i = 2; i <= n; i++) for (j = i; j > 1 && w[j - 1] > w[j]; j--) { t = w[j]; w[j] = w[j - 1]; w[j - 1] = t }
		return n % 2 ? w[(n + 1) / 2] : (w[n / 2] + w[n / 2 + 1]) / 2
	}
	function ratio(arm, what,    r, v, s, lo, hi, x) {
		for (r = 1; r <= n; r++) {
			x = what == "rps" ? rps[r, arm] / rps[r, "off"] : cpu[r, "off"] / cpu[r, arm]
			v[r] = x; s += x
			if (r == 1 || x < lo) lo = x
			if (r == 1 || x > hi) hi = x
		}
		printf "bench-service: RESULT %s/off %s = %.4f (median %.4f, min %.4f, max %.4f, n=%d)\n", arm,
			what == "rps" ? "throughput ratio (req/s)" : "CPU-efficiency ratio (req per service CPU-s)", s / n, median(v), lo, hi, n
	}
	END {
		for (a in arms) {
			m = 0; c = 0; p = 0
			for (r = 1; r <= n; r++) { m += rps[r, a]; c += cpu[r, a]; p += p99[r, a] }
			printf "bench-service: %-4s mean %.1f req/s, %.1f service-CPU-us/req, p99 %.2f ms\n", a, m / n, c / n, p / n
		}
		if (!("off" in arms)) exit
		for (a in arms) if (a != "off") { ratio(a, "rps"); ratio(a, "cpu") }
	}' "$TMP/results"
