# bench-lib.sh: what the long-running benchmarks (bench-soak.sh, bench-pod.sh, bench-enable.sh)
# share, sourced after `set -euo pipefail` and `cd` to the repository: reading a process from
# /proc, starting the agent with its /metrics, reading counters, stopping what was started.
#
# Every process a script starts goes through bl_track, and bl_stop_all (the EXIT trap that
# bl_init sets) stops them: SIGTERM, a bounded wait, then SIGKILL. Nothing is left running and
# the perf maps the .NET runtime leaves in /tmp for the processes started are removed.

BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
SPANPROF=$BUILD/spanprof
HOOK_DLL=$BUILD/hook/SpanProf.Hook.dll
SVC_DLL=$BUILD/apps/SpanService/SpanService.dll
GEN_DLL=$BUILD/apps/LoadGen/LoadGen.dll
LOOP_DLL=$BUILD/apps/SpanLoop/SpanLoop.dll
TICK=$(getconf CLK_TCK)
BL_PIDS=()
BL_NAME=${BL_NAME:-bench}

bl_die() { echo "$BL_NAME: $*" >&2; exit 1; }
bl_say() { echo "$BL_NAME: $*"; }
bl_need() { local f; for f; do [ -e "$f" ] || bl_die "$f missing: run make -j2 all apps tools"; done; }

# bl_machine: one line on where the figures come from.
bl_machine() {
	echo "$(nproc) CPUs, $(awk '/MemTotal/ { printf "%d GiB", $2 / 1048576 }' /proc/meminfo), kernel $(uname -r)," \
		".NET $(dotnet --list-runtimes | awk '/NETCore/ { v = $2 } END { print v }'), spanprof $(git rev-parse --short HEAD 2> /dev/null || echo '?')," \
		"load $(cut -d' ' -f1-3 /proc/loadavg)"
}

# ---- a process, from /proc ---------------------------------------------------------------------
bl_rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2> /dev/null || echo 0; }	# KiB
bl_fds() { ls "/proc/$1/fd" 2> /dev/null | wc -l; }
bl_cpu() { sed 's/.*) //' "/proc/$1/stat" 2> /dev/null | awk -v hz="$TICK" '{ printf "%.2f\n", ($12 + $13) / hz }'; }	# seconds
# bl_starttime PID: the start time (clock ticks after boot): a pid and this name one process.
bl_starttime() { sed 's/.*) //' "/proc/$1/stat" 2> /dev/null | awk '{ print $20 }'; }
bl_ns_init() { awk '/^NSpid:/ { exit !(NF > 2 && $NF == 1) }' "/proc/$1/status" 2> /dev/null; }
bl_alive() { [ -e "/proc/$1" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" 2> /dev/null | cut -d' ' -f1)" != Z ]; }

# ---- processes started here --------------------------------------------------------------------
bl_track() { BL_PIDS+=("$@"); }
# bl_rm_perfmaps PID...: what the runtime writes for perf maps and never removes.
bl_rm_perfmaps() { local p; for p; do rm -f "/tmp/perf-$p.map" "/tmp/jit-$p.dump" "/tmp/perfinfo-$p.map"; done; }
# bl_stop [-t SECS] PID...: SIGTERM, up to SECS (5) for all to exit, SIGKILL, reap, remove their
# perf maps, forget them. Only processes of this shell (or a pod's pid 1, tracked while it runs)
# are given: their pids cannot go to another process before the reap.
bl_stop() {
	local secs=5 p i live
	if [ "${1:-}" = -t ]; then secs=$2; shift 2; fi
	[ $# -gt 0 ] || return 0
	kill -TERM "$@" 2> /dev/null || true
	for i in $(seq $((secs * 10))); do
		live=0
		for p; do bl_alive "$p" && { live=1; break; }; done
		[ "$live" = 1 ] || break
		# pid 1 of a pid namespace (a pod's app): the kernel drops the default-action SIGTERM the
		# .NET runtime re-raises, so it gets SIGKILL after a second.
		[ "$i" != 10 ] || for p; do ! bl_ns_init "$p" || kill -KILL "$p" 2> /dev/null || true; done
		sleep 0.1
	done
	for p; do bl_alive "$p" && kill -KILL "$p" 2> /dev/null || true; done
	for p; do wait "$p" 2> /dev/null || true; done
	bl_rm_perfmaps "$@"
	bl_untrack "$@"
}
# bl_untrack PID...: reaped, so no longer ours: the pid may go to another process now.
bl_untrack() {
	local keep=() p q gone
	for p in "${BL_PIDS[@]}"; do
		gone=""
		for q; do [ "$p" != "$q" ] || gone=1; done
		[ -n "$gone" ] || keep+=("$p")
	done
	BL_PIDS=(${keep[@]+"${keep[@]}"})
}
bl_stop_all() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	[ ${#BL_PIDS[@]} = 0 ] || bl_stop "${BL_PIDS[@]}"
	[ -z "${BL_AT_EXIT:-}" ] || eval "$BL_AT_EXIT"
	exit "$rc"
}
bl_init() {
	set -E
	trap 'echo "$BL_NAME: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
	trap bl_stop_all EXIT
	trap 'exit 130' INT TERM
}

# ---- the agent ---------------------------------------------------------------------------------
# bl_agent_has FLAG: `spanprof agent --help` lists FLAG (a flag other work may add).
bl_agent_has() { "$SPANPROF" agent --help 2>&1 | grep -q -e "$1"; }

# bl_start_agent LOG ARGS...: spanprof agent ARGS --metrics-addr 127.0.0.1:0, output to LOG;
# AGENT_PID and METRICS_PORT once /metrics is served (or die showing LOG).
bl_start_agent() {
	local log=$1
	shift
	"$SPANPROF" agent "$@" --metrics-addr 127.0.0.1:0 > "$log" 2>&1 &
	AGENT_PID=$!
	bl_track "$AGENT_PID"
	for _ in $(seq 300); do grep -qs 'metrics on port' "$log" && break; bl_alive "$AGENT_PID" || break; sleep 0.1; done
	METRICS_PORT=$(sed -n 's/.*metrics on port \([0-9]*\).*/\1/p' "$log")
	[ -n "$METRICS_PORT" ] || { cat "$log" >&2; bl_die "the agent did not start"; }
}
# bl_scrape FILE: the agent's /metrics into FILE (empty if it did not answer).
bl_scrape() { curl -s -m 5 "http://127.0.0.1:$METRICS_PORT/metrics" > "$1" || : > "$1"; }
# bl_metric FILE NAME [LABELS]: the value of the series NAME{LABELS} (LABELS as printed, e.g.
# 'cause="ringbuf_full"'; without, the series without labels or the sum over all of them), 0 if absent.
bl_metric() {
	awk -v n="$2" -v l="${3:-}" '
		$1 ~ /^#/ { next }
		{ name = $1; sub(/\{.*/, "", name); if (name != n) next
		  if (l == "" || index($1, "{" l "}") || index($1, "{" l ",") || index($1, "," l "}") || index($1, "," l ",")) s += $NF }
		END { printf "%.0f\n", s }' "$1"
}
