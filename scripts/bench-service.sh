#!/bin/sh
# bench-service.sh: SpanService request throughput without and with the spanprof hook, interleaved A/B, as a ratio.
#
# Each run is a fresh SpanService process (the hook can only load at startup), driven by LoadGen for
# WARMUP s unmeasured and DURATION s measured. Rounds alternate their order (off,on / on,off / ...)
# so a linear drift of the machine's speed cancels in the mean. The chunk size of the service's hot
# loops is fixed from the first (discarded) run, so every run does exactly the same work per request.
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

cd "$(dirname "$0")/.."
ROOT=$(pwd)
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
HOOK_DLL=$BUILD/hook/SpanProf.Hook.dll
SVC_DLL=$BUILD/apps/SpanService/SpanService.dll
GEN_DLL=$BUILD/apps/LoadGen/LoadGen.dll

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
	if [ "$mode" = on ]; then hooks=$HOOK_DLL disable=""; else hooks="" disable=1; fi
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
	if [ "$mode" = on ] && [ "$mapped" != true ]; then die "hook loaded but its spanprof-ctx mapping is missing"; fi
	if [ "$mode" = off ] && [ "$mapped" != false ]; then die "hook mapping present in a run without the hook"; fi
	if [ "$warm" != 0 ]; then
		loadgen "$port" "$warm" "$TMP/warmup.json" || die "LoadGen warm-up failed ($mode)"
	fi
	cpu0=$(cpu_ticks "$SVC_PID")
	loadgen "$port" "$dur" "$out" || die "LoadGen failed ($mode)"
	cpu1=$(cpu_ticks "$SVC_PID")
	CPU_S=$(awk -v a="$cpu0" -v b="$cpu1" -v hz="$HZ" 'BEGIN { printf "%.2f", (b - a) / hz }')
	kill -TERM "$SVC_PID"
	wait "$SVC_PID" || { cat "$TMP/service.log" >&2; die "service ($mode) exited with an error"; }
	SVC_PID=""
	at_exit=$(sed -n 's/^spanservice: stopped .*hook_mapped=\([01]\).*/\1/p' "$TMP/service.log")
	if [ "$mode" = on ] && [ "$at_exit" != 1 ]; then die "hook mapping gone at exit of a run with the hook"; fi
	if [ "$mode" = off ] && [ "$at_exit" != 0 ]; then die "hook mapping appeared during a run without the hook"; fi
	errors=$(json_num "$out" errors)
	[ "$errors" = 0 ] || echo "bench-service: warning: $errors failed requests in a $mode run" >&2
}

echo "bench-service: SpanService throughput without/with the spanprof hook"
echo "bench-service: rounds=$ROUNDS duration=${DURATION}s warmup=${WARMUP}s concurrency=$CONCURRENCY chunk_us=$CHUNK_US pin=$PIN cpus=$(nproc) bg_duty=$BG_DUTY%"
echo "bench-service: paths=$PATHS"

# Discarded run: jits everything once and fixes the work per chunk for all measured runs.
run_one off 1 2 "$TMP/calibrate.json"
echo "bench-service: hot loop iterations per chunk: $ITERS"

: >"$TMP/results"
r=1
while [ $r -le "$ROUNDS" ]; do
	if [ $((r % 2)) = 1 ]; then order="off on"; else order="on off"; fi
	for mode in $order; do
		run_one "$mode" "$WARMUP" "$DURATION" "$TMP/run.json"
		rps=$(json_num "$TMP/run.json" rps)
		p50=$(json_num "$TMP/run.json" p50)
		p99=$(json_num "$TMP/run.json" p99)
		errors=$(json_num "$TMP/run.json" errors)
		ok=$(json_num "$TMP/run.json" ok)
		cpu_us=$(awk -v c="$CPU_S" -v n="$ok" 'BEGIN { printf "%.1f", (n > 0 ? c * 1e6 / n : 0) }')
		printf 'bench-service: round %d hook=%-3s %8.1f req/s  %7.1f service-CPU-us/req  p50 %7.2f ms  p99 %7.2f ms  errors %s\n' \
			"$r" "$mode" "$rps" "$cpu_us" "$p50" "$p99" "$errors"
		echo "$r $mode $rps $p50 $p99 $cpu_us" >>"$TMP/results"
	done
	r=$((r + 1))
done

awk '
	{ rps[$1, $2] = $3; p99[$1, $2] = $5; cpu[$1, $2] = $6; if ($1 > n) n = $1 }
	# median of v[1..n] (insertion sort: n is small)
	function median(v,    i, j, t, w) {
		for (i = 1; i <= n; i++) w[i] = v[i]
		for (i = 2; i <= n; i++) for (j = i; j > 1 && w[j - 1] > w[j]; j--) { t = w[j]; w[j] = w[j - 1]; w[j - 1] = t }
		return n % 2 ? w[(n + 1) / 2] : (w[n / 2] + w[n / 2 + 1]) / 2
	}
	function stats(name, v, sum, sq, lo, hi,    mean, sd) {
		mean = sum / n
		sd = n > 1 ? (sq - n * mean * mean) / (n - 1) : 0
		sd = sd > 0 ? sqrt(sd) : 0
		printf "bench-service: RESULT %s = %.4f (median %.4f, per-round min %.4f, max %.4f, sd %.4f, n=%d)\n", name, mean, median(v), lo, hi, sd, n
		return mean
	}
	END {
		for (r = 1; r <= n; r++) {
			off += rps[r, "off"]; on += rps[r, "on"]; poff += p99[r, "off"]; pon += p99[r, "on"]
			coff += cpu[r, "off"]; con += cpu[r, "on"]
			t = rps[r, "on"] / rps[r, "off"]; tv[r] = t; ts += t; tq += t * t
			if (r == 1 || t < tlo) tlo = t
			if (r == 1 || t > thi) thi = t
			# requests per service CPU-second, with/without: robust to other load on the machine
			e = cpu[r, "off"] / cpu[r, "on"]; ev[r] = e; es += e; eq += e * e
			if (r == 1 || e < elo) elo = e
			if (r == 1 || e > ehi) ehi = e
			printf "bench-service: round %d with/without: throughput %.4f, requests per CPU-second %.4f\n", r, t, e
		}
		printf "bench-service: without hook: mean %.1f req/s, %.1f service-CPU-us/req, p99 %.2f ms\n", off / n, coff / n, poff / n
		printf "bench-service: with hook:    mean %.1f req/s, %.1f service-CPU-us/req, p99 %.2f ms\n", on / n, con / n, pon / n
		t = stats("throughput ratio with_hook/without_hook (req/s)", tv, ts, tq, tlo, thi)
		e = stats("CPU-efficiency ratio with_hook/without_hook (req per service CPU-s)", ev, es, eq, elo, ehi)
		printf "bench-service: RESULT throughput change %+.2f%%, service CPU per request change %+.2f%%\n", (t - 1) * 100, (con / coff - 1) * 100
	}' "$TMP/results"
