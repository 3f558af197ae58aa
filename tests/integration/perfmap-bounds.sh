#!/usr/bin/env bash
# perfmap-bounds.sh: what the perf maps spanprof turns on cost a pod stays bounded (pmpolicy.h).
# CodeGen compiles an Expression per step (one perf map line each), profiled with a 1 MiB cap and
# a 3 s idle time: its perf map (type 3: no jitdump) is started afresh each time it passes the
# cap (the file shrinks, and never grows far past it), its frames stay named, and once the app
# sleeps its perf maps go off and the file goes; its next sample turns them on again. A process
# the user started with perf maps on is only counted and warned about, never restarted.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd dotnet

APP=$BUILD/apps/CodeGen/CodeGen
need_built "$APP"
CAP=$((1 << 20))
LEAF_BAR=${LEAF_BAR:-0.98}

# watch_map PID LOG [RESUME]: the perf map's size ("absent" when there is none) and whether a
# jitdump exists, every 0.1 s while PID lives. With RESUME: created once the map, after being
# there, has gone (the app then wakes up).
watch_map() {
	local pid=$1 log=$2 resume=${3:-} seen="" s j
	while [ -e "/proc/$pid" ]; do
		s=$(stat -c %s "/tmp/perf-$pid.map" 2> /dev/null || echo absent)
		j=$([ -e "/tmp/jit-$pid.dump" ] && echo jitdump || echo -)
		echo "$s $j"
		[ "$s" != absent ] && seen=1
		[ -n "$resume" ] && [ "$s" = absent ] && [ -n "$seen" ] && touch "$resume"
		sleep 0.1
	done > "$log"
}

# report_count REPORT WHAT: the number after WHAT on the report's "perf map files:" line.
report_count() { grep -a '^  perf map files:' "$1" | grep -Eo "$2 [0-9]+" | grep -Eo '[0-9]+$' || echo 0; }

# 1. Perf maps turned on by spanprof: started afresh past the cap, off when idle, on again. The app
#    is spanprof's command (DOTNET_PerfMapEnabled=3 from its start, so that another profiler on the
#    host, if any, finds its perf map on and leaves it alone); turned off, it is turned on again
#    over the IPC.
resume=$TMP/resume
"$SPANPROF" record -F 99 --perfmap-max-mb 1 --perfmap-idle 3 -v -d 90 -o "$TMP/a.pb.gz" \
	-- "$APP" 800 16 "$resume" 8 > "$TMP/a.txt" 2>&1 &
rec=$!
register "$rec"
wait_for_line "$TMP/a.txt" '^pid [0-9]' 30
pid=$(awk '/^pid [0-9]/ { print $2; exit }' "$TMP/a.txt")
watch_map "$pid" "$TMP/a.sizes" "$resume" &
wait "$rec" || { cat "$TMP/a.txt"; fail "spanprof record: exit code $?"; }
grep -aq '^done' "$TMP/a.txt" || { cat "$TMP/a.txt"; fail "the app did not finish"; }
line=$(grep -a "\.NET pid $pid " "$TMP/a.txt") || { cat "$TMP/a.txt"; fail "no report line for the app"; }
# Another profiler on this host (a host-wide spanprof) turned them on too (a jitdump: type 1).
! grep -q jitdump "$TMP/a.sizes" || skip "another profiler turned the app's perf maps on: $line"
note "report: $(grep -a '^  perf map files:' "$TMP/a.txt")"
note "sizes: $(awk '{ print $1 }' "$TMP/a.sizes" | uniq | tr '\n' ' ' | cut -c1-600)"
restarts=$(report_count "$TMP/a.txt" 'started afresh past the cap')
offs=$(report_count "$TMP/a.txt" 'turned off idle \(files removed\)')
ons=$(report_count "$TMP/a.txt" 'on again')
[ "$restarts" -ge 1 ] || fail "the perf map was never started afresh past the cap: $line"
pass "perf map started afresh $restarts times past the 1 MiB cap"
r=$(awk -v cap="$CAP" '
$1 != "absent" { if (prev != "" && $1 < prev) shrank++; if ($1 > max) max = $1; prev = $1; if (off) back = 1 }
$1 == "absent" && prev != "" { off = 1 }
$2 == "jitdump" { jd++ }
END { printf "{\"shrank\":%d,\"max\":%d,\"off\":%d,\"back\":%d,\"jitdump\":%d}\n", shrank, max, off, back, jd }' "$TMP/a.sizes")
note "perf map file seen: $r"
[ "$(field "$r" shrank)" -ge 1 ] || fail "the perf map file never shrank: $r"
# Bounded: restarted within a few polls of passing the cap (the app writes ~0.2 MiB/s).
[ "$(field "$r" max)" -le $((2 * CAP)) ] || fail "the perf map grew to $(field "$r" max) bytes with a 1 MiB cap"
[ "$(field "$r" jitdump)" = 0 ] || fail "a jitdump was written (type 3 writes none)"
pass "the file shrank when started afresh and stayed at most $(field "$r" max) bytes; no jitdump"
[ "$offs" -ge 1 ] && [ "$(field "$r" off)" = 1 ] || fail "perf maps not turned off (files removed) while the app slept: $line"
pass "idle: perf maps turned off and the file removed"
[ "$ons" -ge 1 ] && [ "$(field "$r" back)" = 1 ] || fail "perf maps not turned on again when the app was sampled again: $line"
pass "sampled again: perf maps on again"
[ ! -e "/tmp/perf-$pid.map" ] && [ ! -e "/tmp/jit-$pid.dump" ] || fail "perf map files left behind"
pass "files removed at the end"
decode "$TMP/a.pb.gz"
d=$(query dotnet "$TMP/a.json" --pid "$pid")
note "names: $d"
[ "$(field "$d" leaves)" -ge 100 ] || fail "too few .NET samples ($d)"
ge "$(field "$d" leaf_frac)" "$LEAF_BAR" || { query top "$TMP/a.json" --pid "$pid"; fail "named .NET leaves $(field "$d" leaf_frac) (want >= $LEAF_BAR)"; }
pass "named .NET leaves $(field "$d" leaf_frac), frames $(field "$d" frame_frac) across restarts and off/on"

# 2. Perf maps the user turned on: past the cap, counted and warned about, never restarted.
start_app --ready '^pid' "$TMP/b.out" env DOTNET_PerfMapEnabled=3 "$APP" 800 10; pid=$APP_PID
watch_map "$pid" "$TMP/b.sizes" &
"$SPANPROF" record -p "$pid" -d 60 -F 99 --perfmap-max-mb 1 -o "$TMP/b.pb.gz" > "$TMP/b.txt" 2>&1 ||
	{ cat "$TMP/b.txt"; fail "spanprof record: exit code $?"; }
grep -aq "pid $pid: its perf map .* past --perfmap-max-mb, but it was not turned on by spanprof" "$TMP/b.txt" ||
	{ cat "$TMP/b.txt"; fail "no warning for a perf map the user turned on, past the cap"; }
[ "$(report_count "$TMP/b.txt" 'left alone\)')" = 1 ] || fail "not counted: $(grep -a '^  perf map files:' "$TMP/b.txt")"
[ "$(report_count "$TMP/b.txt" 'started afresh past the cap')" = 0 ] || fail "the user's perf map was restarted"
max=$(awk '$1 != "absent" && $1 > m { m = $1 } END { print m + 0 }' "$TMP/b.sizes")
[ "$max" -gt "$CAP" ] || fail "the app's own perf map did not pass the cap ($max bytes): nothing shown"
pass "the user's perf map passed the cap ($max bytes): warned, counted, left alone"
