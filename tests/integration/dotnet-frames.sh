#!/usr/bin/env bash
# dotnet-frames.sh: .NET JIT and ReadyToRun frames named from perf maps / jitdump, on the real
# runtime: perf maps on from the start, turned on at run time by spanprof, inside a pid+mount
# namespace with a private /tmp (both ways), and precompiled CoreLib code named by the jitdump.
. "$(dirname "$0")/lib.sh"
need_root
command -v dotnet > /dev/null || { echo "SKIP: no dotnet"; exit 77; }

APP=$BUILD/apps/HotChain/HotChain
need_built "$APP"
CHAIN='Program::Main,Program::Outer,Program::Middle,Program::HotLoop'

# start_app OUT MODE [env...]: HotChain on the host; sets APP_PID.
start_app() {
	local out=$1 mode=$2; shift 2
	env "$@" "$APP" 20 "$mode" > "$out" 2>&1 &
	APP_PID=$!
	PIDS_TO_KILL+=($APP_PID)
	wait_for_line "$out" '^ready' 60
}

# start_app_ns OUT MODE [env...]: HotChain as pid 1 of its own pid and mount namespace, with a
# private /tmp (its perf map and diagnostic socket are invisible from the host's /tmp); sets
# APP_PID to its host pid.
start_app_ns() {
	local out=$1 mode=$2; shift 2
	env "$@" "$ROOT/tests/integration/nsrun.sh" "$APP" 20 "$mode" > "$out" 2>&1 &
	local u=$!
	PIDS_TO_KILL+=($u)
	wait_for_line "$out" '^ready' 60
	local child
	child=$(pgrep -P "$u" | head -1)
	[ -n "$child" ] || fail "no child of unshare"
	PIDS_TO_KILL+=($child)
	grep -q '^pid 1$' "$out" || fail "app is not pid 1 in its namespace: $(head -1 "$out")"
	[ ! -e "/tmp/perf-1.map" ] || [ "$(stat -c %i /tmp/perf-1.map)" != "$(stat -c %i "/proc/$child/root/tmp/perf-1.map" 2>/dev/null)" ] ||
		fail "namespace /tmp is not private"
	APP_PID=$child
}

# check_case NAME PID PROFILE OUT: the bars of issue 3 on one recording.
check_case() {
	local name=$1 pid=$2 prof=$3
	pprof_json "$prof" > "$TMP/$name.json"
	local named chain
	named=$(query managed "$TMP/$name.json" --pid "$pid")
	chain=$(query chain "$TMP/$name.json" --pid "$pid" --leaf 'Program::HotLoop' --chain "$CHAIN")
	note "$name: managed-named $named; chain $chain"
	ge "$(node -pe "($named).frac")" 0.90 || { query top "$TMP/$name.json" --pid "$pid"; fail "$name: named managed frames in $(node -pe "($named).frac") of samples (want >= 0.90)"; }
	ge "$(node -pe "($chain).frac")" 0.80 || fail "$name: Main -> Outer -> Middle -> HotLoop in $(node -pe "($chain).frac") of HotLoop samples (want >= 0.80)"
	[ "$(node -pe "($chain).leaf_samples")" -ge 30 ] || fail "$name: too few HotLoop samples"
	pass "$name: named $(node -pe "($named).frac"), chain $(node -pe "($chain).frac") of $(node -pe "($chain).leaf_samples") HotLoop samples"
}

# 1. Perf maps on from the start.
start_app "$TMP/a.out" jit DOTNET_PerfMapEnabled=1; pid=$APP_PID
"$SPANPROF" record -p "$pid" -d 4 -o "$TMP/a.pb.gz" > "$TMP/a.txt"
grep -q "pid $pid .*reading perf map" "$TMP/a.txt" || { cat "$TMP/a.txt"; fail "perf map not read"; }
check_case "perfmap-at-start" "$pid" "$TMP/a.pb.gz"
kill "$pid"

# 2. Started without perf maps: spanprof turns them on over the diagnostics IPC, and off again.
start_app "$TMP/b.out" jit; pid=$APP_PID
[ ! -e "/tmp/perf-$pid.map" ] || fail "perf map exists before enabling"
"$SPANPROF" record -p "$pid" -d 4 -o "$TMP/b.pb.gz" > "$TMP/b.txt"
grep -q "pid $pid .*perf map enabled at run time" "$TMP/b.txt" || { cat "$TMP/b.txt"; fail "not enabled at run time"; }
# Left as found: perf maps turned off again, and the files we had it write removed.
[ ! -e "/tmp/perf-$pid.map" ] && [ ! -e "/tmp/jit-$pid.dump" ] || fail "perf map files left behind"
pass "perf maps turned off and their files removed after the recording"
check_case "enabled-at-runtime" "$pid" "$TMP/b.pb.gz"
# --no-enable-perfmap leaves a process alone.
start_app "$TMP/b2.out" jit; pid2=$APP_PID
"$SPANPROF" record -p "$pid2" -d 1 --no-enable-perfmap -o "$TMP/b2.pb.gz" > "$TMP/b2.txt"
[ ! -e "/tmp/perf-$pid2.map" ] || fail "--no-enable-perfmap still enabled perf maps"
pass "--no-enable-perfmap leaves the process untouched"
kill "$pid" "$pid2"

# 3. In its own pid and mount namespace with a private /tmp, perf maps on from the start.
start_app_ns "$TMP/c.out" jit DOTNET_PerfMapEnabled=1; pid=$APP_PID
"$SPANPROF" record -p "$pid" -d 4 -o "$TMP/c.pb.gz" > "$TMP/c.txt"
grep -q "pid $pid .*reading perf map" "$TMP/c.txt" || { cat "$TMP/c.txt"; fail "container perf map not read"; }
check_case "container" "$pid" "$TMP/c.pb.gz"
kill "$pid"

# 4. The same container case, perf maps turned on at run time through the container's root.
start_app_ns "$TMP/d.out" jit; pid=$APP_PID
"$SPANPROF" record -p "$pid" -d 4 -o "$TMP/d.pb.gz" > "$TMP/d.txt"
grep -q "pid $pid .*perf map enabled at run time" "$TMP/d.txt" || { cat "$TMP/d.txt"; fail "container: not enabled"; }
check_case "container-enabled-at-runtime" "$pid" "$TMP/d.pb.gz"
kill "$pid"

# 5. ReadyToRun: precompiled CoreLib code (Marvin.ComputeHash32, [PreJIT]) named from the jitdump
#    that spanprof turned on at run time.
start_app "$TMP/e.out" r2r; pid=$APP_PID
"$SPANPROF" record -p "$pid" -d 4 --tiers -o "$TMP/e.pb.gz" > "$TMP/e.txt"
pprof_json "$TMP/e.pb.gz" > "$TMP/e.json"
r2r=$(query leaf "$TMP/e.json" --pid "$pid" --leaf 'Marvin::ComputeHash32.*\[PreJIT\]')
note "r2r: $r2r"
ge "$(node -pe "($r2r).frac")" 0.80 || { query top "$TMP/e.json" --pid "$pid"; fail "ReadyToRun Marvin.ComputeHash32 [PreJIT] is the leaf of only $(node -pe "($r2r).frac")"; }
pass "ReadyToRun: Marvin.ComputeHash32 [PreJIT] named in $(node -pe "($r2r).frac") of samples"
kill "$pid"

# 6. A process that exits in the middle of the recording keeps its frames named: its perf map was
#    read while it lived and its fds stay open.
env DOTNET_PerfMapEnabled=3 "$APP" 2.5 > "$TMP/f.out" 2>&1 & pid=$!; PIDS_TO_KILL+=($pid)
wait_for_line "$TMP/f.out" '^ready' 60
"$SPANPROF" record -p "$pid" -d 5 -o "$TMP/f.pb.gz" > "$TMP/f.txt"
[ ! -e "/proc/$pid" ] || fail "the app outlived the recording"
check_case "exited-mid-recording" "$pid" "$TMP/f.pb.gz"

# An app whose perf maps spanprof turned on, exiting mid-recording: its files are removed too.
env "$APP" 2.5 > "$TMP/f2.out" 2>&1 & pid=$!; PIDS_TO_KILL+=($pid)
wait_for_line "$TMP/f2.out" '^ready' 60
sleep 1.2	# spanprof waits until a process is 1 s old before enabling
"$SPANPROF" record -p "$pid" -d 4 -o "$TMP/f2.pb.gz" > "$TMP/f2.txt"
grep -q "pid $pid .*perf map enabled at run time" "$TMP/f2.txt" || { cat "$TMP/f2.txt"; fail "not enabled"; }
[ ! -e "/proc/$pid" ] || fail "the app outlived the recording"
check_case "enabled-then-exited" "$pid" "$TMP/f2.pb.gz"
[ ! -e "/tmp/perf-$pid.map" ] && [ ! -e "/tmp/jit-$pid.dump" ] || fail "files of an exited app left behind"
pass "perf map files of an app that exited mid-recording removed"

# 7. A perf map planted as a symlink to a host file inside a container is refused and reported,
#    never read. (Perf maps stay off in the app: the runtime itself would follow the link.)
start_app_ns "$TMP/g.out" jit; pid=$APP_PID
ln -s /etc/hostname "/proc/$pid/root/tmp/perf-1.map"
"$SPANPROF" record -p "$pid" -d 2 --no-enable-perfmap -o "$TMP/g.pb.gz" > "$TMP/g.txt"
grep -q "pid $pid .*refused .*perf-1.*symlink" "$TMP/g.txt" || { cat "$TMP/g.txt"; fail "symlinked perf map not reported"; }
pprof_json "$TMP/g.pb.gz" > "$TMP/g.json"
! grep -q "$(head -c 20 /etc/hostname)" "$TMP/g.json" || fail "host file content leaked into the profile"
pass "symlinked perf map refused: $(grep -o 'refused[^;]*' "$TMP/g.txt")"
