#!/usr/bin/env bash
# bench-syscall.sh: what spanprof's kernel hooks cost processes it does not profile. An unrelated
# process (build/bench/bench_syscall) times getppid(), mmap+munmap of an anonymous page and of a
# memfd page (thread CPU time per call, median of its rounds) with nothing running, with
# `spanprof agent` (output to a temp dir, no pushing) and with a host-wide `spanprof record`,
# the conditions alternated (none agent record none agent record ...) CYCLES times. Prints every
# run, then per condition the median and its ratio to none. Nothing passes or fails here.
# SPANPROF=path/to/spanprof measures another build (the bar: agent within 5 % of none).
# Other BPF programs on syscall tracepoints (another profiler) tax every condition alike: they
# are listed before each run.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
SPANPROF=${SPANPROF:-$BUILD/spanprof}
BIN=$BUILD/bench/bench_syscall
CYCLES=${CYCLES:-4}
N=${N:-200000}
ROUNDS=${ROUNDS:-5}
[ -x "$BIN" ] || { echo "bench-syscall.sh: $BIN missing; run make bench" >&2; exit 1; }
TMP=$(mktemp -d /tmp/bench-syscall.XXXXXX)
PROF=""
cleanup() {
	[ -z "$PROF" ] || kill -KILL "$PROF" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT

# foreign: programs of other processes on syscall tracepoints, "pid(comm)" each.
foreign() {
	bpftool perf -j 2>/dev/null | python3 -c '
import json, sys
ours = {int(p) for p in sys.argv[1:] if p}
for h in json.load(sys.stdin):
    t = h.get("tracepoint", "")
    pid = h["pid"]
    if pid not in ours and (t in ("sys_enter", "sys_exit") or t.startswith("syscalls:")):
        try:
            comm = open("/proc/%d/comm" % pid).read().strip()
        except OSError:
            comm = "?"
        print("%d(%s):%s" % (pid, comm, t), end=" ")
' "$PROF" || true
}

# start COND: the profiler of COND running and sampling (PROF its pid), none: nothing.
start() {
	PROF=""
	case $1 in
	none) return ;;
	agent) "$SPANPROF" agent -v --output-dir "$TMP/agent" > "$TMP/prof.log" 2>&1 & ;;
	record) "$SPANPROF" record -v -d 3600 -o "$TMP/rec.pb.gz" > /dev/null 2> "$TMP/prof.log" & ;;
	esac
	PROF=$!
	for _ in $(seq 600); do
		grep -q 'sampling' "$TMP/prof.log" 2>/dev/null && { sleep 1; return; }
		sleep 0.1
	done
	echo "bench-syscall.sh: $1 did not start" >&2
	cat "$TMP/prof.log" >&2
	exit 1
}

stop() {
	[ -n "$PROF" ] || return 0
	kill -INT "$PROF" 2>/dev/null || true
	for _ in $(seq 300); do kill -0 "$PROF" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$PROF" 2>/dev/null || true
	wait "$PROF" 2>/dev/null || true
	PROF=""
}

echo "spanprof: $SPANPROF; $CYCLES cycles; $N getppid calls per round, $((N / 10)) mmaps; median of $ROUNDS rounds"
printf '%-6s %-7s %10s %10s %11s  %s\n' cycle cond getppid mmap_anon mmap_memfd "foreign syscall hooks"
for c in $(seq "$CYCLES"); do
	for cond in none agent record; do
		start "$cond"
		f=$(foreign)
		"$BIN" "$N" "$ROUNDS" > "$TMP/out"
		stop
		read -r g a m < <(awk '{ v[$1] = $2 } END { print v["getppid"], v["mmap_anon"], v["mmap_memfd"] }' "$TMP/out")
		printf '%-6s %-7s %10s %10s %11s  %s\n' "$c" "$cond" "$g" "$a" "$m" "${f:--}"
		echo "$cond $g $a $m" >> "$TMP/all"
	done
done
echo "-- median ns per call (ratio to none)"
python3 - "$TMP/all" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for cond, *v in rows:
    by.setdefault(cond, []).append([float(x) for x in v])
med = {c: [statistics.median(col) for col in zip(*v)] for c, v in by.items()}
print(f"{'cond':7} {'getppid':>16} {'mmap_anon':>16} {'mmap_memfd':>16}")
for c in ("none", "agent", "record"):
    cells = [f"{m:.0f} ({m / b:.3f})" for m, b in zip(med[c], med["none"])]
    print(f"{c:7} " + " ".join(f"{x:>16}" for x in cells))
PY
