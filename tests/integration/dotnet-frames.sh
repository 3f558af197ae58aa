#!/usr/bin/env bash
# dotnet-frames.sh: .NET JIT and ReadyToRun frames named from perf maps / jitdump, on the real
# runtime: perf maps on from the start, turned on at run time by spanprof, inside a pid+mount
# namespace with a private /tmp (both ways), and precompiled CoreLib code named from its image.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd dotnet

APP=${FRAMES_APP:-$BUILD/apps/HotChain/HotChain}	# FRAMES_APP: another shape or runtime (make test-matrix)
need_built "$APP"
CHAIN='Program::Main,Program::Outer,Program::Middle,Program::HotLoop'

# start_in_ns OUT MODE [env...]: HotChain as pid 1 of its own pid and mount namespace, with a
# private /tmp (its perf map and diagnostic socket are invisible from the host's /tmp); APP_PID
# is its host pid.
start_in_ns() {
	local out=$1 mode=$2
	shift 2
	start_app --ns "$out" env "$@" "$APP" 20 "$mode"
	grep -q '^pid 1$' "$out" || fail "app is not pid 1 in its namespace: $(head -1 "$out")"
	[ ! -e "/tmp/perf-1.map" ] || [ "$(stat -c %i /tmp/perf-1.map)" != "$(stat -c %i "/proc/$APP_PID/root/tmp/perf-1.map" 2>/dev/null)" ] ||
		fail "namespace /tmp is not private"
}

# check_case NAME PID PROFILE: the bars of issue 3 on one recording.
check_case() {
	local name=$1 pid=$2 prof=$3 json=${3%.pb.gz}.json named chain
	decode "$prof"
	named=$(query managed "$json" --pid "$pid")
	chain=$(query chain "$json" --pid "$pid" --leaf 'Program::HotLoop' --chain "$CHAIN")
	note "$name: managed-named $named; chain $chain"
	if ge "$(field "$named" frac)" 0.90 && ge "$(field "$chain" frac)" 0.80 && [ "$(field "$chain" leaf_samples)" -ge 30 ]; then
		matrix_row "$name" pass named="$(field "$named" frac)" chain="$(field "$chain" frac)" leaves="$(field "$chain" leaf_samples)"
	else
		matrix_row "$name" fail named="$(field "$named" frac)" chain="$(field "$chain" frac)" leaves="$(field "$chain" leaf_samples)"
	fi
	ge "$(field "$named" frac)" 0.90 || { query top "$json" --pid "$pid"; fail "$name: named managed frames in $(field "$named" frac) of samples (want >= 0.90)"; }
	ge "$(field "$chain" frac)" 0.80 || fail "$name: Main -> Outer -> Middle -> HotLoop in $(field "$chain" frac) of HotLoop samples (want >= 0.80)"
	[ "$(field "$chain" leaf_samples)" -ge 30 ] || fail "$name: too few HotLoop samples"
	pass "$name: named $(field "$named" frac), chain $(field "$chain" frac) of $(field "$chain" leaf_samples) HotLoop samples"
}

# enabled_here NAME PID TXT: 0 when spanprof turned perf maps on in PID (its report says so); 1,
# with a matrix row "not run", when another tool (another spanprof on the host) had turned them
# on first and spanprof read what that one had the runtime write; else the case fails.
enabled_here() {
	if grep -q "pid $2 .*perf map enabled at run time" "$3"; then return 0; fi
	if grep -q "pid $2 .*reading perf map" "$3"; then
		note "$1: NOT RUN: another tool turned perf maps on first"
		matrix_row "$1" not-run why="perf maps turned on by another tool first"
		return 1
	fi
	cat "$3"
	fail "$1: not enabled at run time"
}

# 1. Perf maps on from the start.
start_app "$TMP/a.out" env DOTNET_PerfMapEnabled=1 "$APP" 20 jit; pid=$APP_PID
record a.pb.gz -p "$pid" -d 4
grep -q "pid $pid .*reading perf map" "$TMP/a.txt" || { cat "$TMP/a.txt"; fail "perf map not read"; }
check_case "perfmap-at-start" "$pid" "$TMP/a.pb.gz"
stop "$pid"

# 2. Started without perf maps: spanprof turns them on over the diagnostics IPC, and off again.
# Another spanprof agent on the host (other tests, host-wide) may turn them on first: then this
# case cannot be run on that process; a new one is tried, and after three it is reported as not
# run (a matrix row says why), never passed and never silently skipped.
preempted=0
for try in 1 2 3; do
	start_app "$TMP/b.out" env "$APP" 20 jit; pid=$APP_PID
	if perfmaps_preempted "$pid"; then preempted=$try; stop "$pid"; continue; fi
	record b.pb.gz -p "$pid" -d 4
	if grep -q "pid $pid .*perf map enabled at run time" "$TMP/b.txt"; then preempted=0; break; fi
	if grep -q "pid $pid .*reading perf map" "$TMP/b.txt"; then preempted=$try; stop "$pid"; continue; fi
	cat "$TMP/b.txt"; fail "not enabled at run time"
done
if [ "$preempted" != 0 ]; then
	note "enabled-at-runtime: NOT RUN: another tool turned perf maps on first in $preempted processes in a row"
	matrix_row "enabled-at-runtime" not-run why="perf maps turned on by another tool first ($preempted tries)"
else
	# Left as found: perf maps turned off again, and the files we had it write removed.
	[ ! -e "/tmp/perf-$pid.map" ] && [ ! -e "/tmp/jit-$pid.dump" ] || fail "perf map files left behind"
	pass "perf maps turned off and their files removed after the recording"
	check_case "enabled-at-runtime" "$pid" "$TMP/b.pb.gz"
fi
# --no-enable-perfmap leaves a process alone.
start_app "$TMP/b2.out" env "$APP" 20 jit; pid2=$APP_PID
record b2.pb.gz -p "$pid2" -d 1 --no-enable-perfmap
# Its report says what it did (another spanprof on the host may turn them on all the same).
! grep -q "pid $pid2 .*perf map enabled at run time" "$TMP/b2.txt" || fail "--no-enable-perfmap still enabled perf maps"
pass "--no-enable-perfmap leaves the process untouched"
stop "$pid" "$pid2"

# 3. In its own pid and mount namespace with a private /tmp, perf maps on from the start.
start_in_ns "$TMP/c.out" jit DOTNET_PerfMapEnabled=1; pid=$APP_PID
record c.pb.gz -p "$pid" -d 4
grep -q "pid $pid .*reading perf map" "$TMP/c.txt" || { cat "$TMP/c.txt"; fail "container perf map not read"; }
check_case "container" "$pid" "$TMP/c.pb.gz"
stop "$pid"

# 4. The same container case, perf maps turned on at run time through the container's root.
start_in_ns "$TMP/d.out" jit; pid=$APP_PID
record d.pb.gz -p "$pid" -d 4
if enabled_here container-enabled-at-runtime "$pid" "$TMP/d.txt"; then
	check_case "container-enabled-at-runtime" "$pid" "$TMP/d.pb.gz"
fi
stop "$pid"

# NO_R2R_CODE=1 (make test-matrix's trimmed shape: the trimmer rewrites CoreLib as IL only, so
# it has no ReadyToRun code) skips 5 and 5b, said in their matrix rows.
if [ -n "${NO_R2R_CODE:-}" ]; then
	note "r2r: not run: NO_R2R_CODE (no ReadyToRun code in this build)"
	matrix_row r2r not-run why="no ReadyToRun code in this shape"
	matrix_row r2r-no-enable not-run why="no ReadyToRun code in this shape"
else
	# 5. ReadyToRun: precompiled CoreLib code (Marvin.ComputeHash32, [PreJIT]) named from the image
	#    (perf maps turned on at run time as type 3 log no ReadyToRun code). Of the samples whose leaf is .NET code: the kernel's
	#    share (first-touch page faults of the GC heap, up to 55 % of this process's samples on some
	#    VMs) is no part of it.
	start_app "$TMP/e.out" env "$APP" 20 r2r; pid=$APP_PID
	record e.pb.gz -p "$pid" -d 4 --tiers
	decode "$TMP/e.pb.gz"
	r2r=$(query leaf "$TMP/e.json" --pid "$pid" --leaf 'Marvin::ComputeHash32.*\[PreJIT\]' \
		--among '^\[[^\]]+\] \S.*::|^\[unknown\]$|\.dll\+0x[0-9a-f]+$')
	note "r2r: $r2r"
	matrix_row r2r "$(ge "$(field "$r2r" frac)" 0.80 && echo pass || echo fail)" named="$(field "$r2r" frac)"
	ge "$(field "$r2r" frac)" 0.80 || { query top "$TMP/e.json" --pid "$pid"; fail "ReadyToRun Marvin.ComputeHash32 [PreJIT] is the leaf of only $(field "$r2r" frac)"; }
	pass "ReadyToRun: Marvin.ComputeHash32 [PreJIT] named in $(field "$r2r" frac) of samples"
	stop "$pid"
	# 5b. The same with --no-enable-perfmap: ReadyToRun code named from the image alone.
	start_app "$TMP/e2.out" env "$APP" 20 r2r; pid=$APP_PID
	record e2.pb.gz -p "$pid" -d 4 --tiers --no-enable-perfmap
	decode "$TMP/e2.pb.gz"
	r2r=$(query leaf "$TMP/e2.json" --pid "$pid" --leaf 'Marvin::ComputeHash32.*\[PreJIT\]' \
		--among '^\[[^\]]+\] \S.*::|^\[unknown\]$|\.dll\+0x[0-9a-f]+$')
	note "r2r-no-enable: $r2r"
	matrix_row r2r-no-enable "$(ge "$(field "$r2r" frac)" 0.80 && echo pass || echo fail)" named="$(field "$r2r" frac)"
	ge "$(field "$r2r" frac)" 0.80 || { query top "$TMP/e2.json" --pid "$pid"; fail "--no-enable-perfmap: ReadyToRun Marvin.ComputeHash32 [PreJIT] is the leaf of only $(field "$r2r" frac)"; }
	pass "--no-enable-perfmap: ReadyToRun Marvin.ComputeHash32 [PreJIT] named in $(field "$r2r" frac) of samples"
	stop "$pid"

fi

# 6. A process that exits in the middle of the recording keeps its frames named: its perf map was
#    read while it lived and its fds stay open. The app is told to exit (SIGTERM) once it has run
#    a second of CPU time while sampled (about 99 samples at 99 Hz), not at a fixed time: under
#    load a 2.5 s app had exited before sampling began. spanprof's log says the recording ended
#    because it exited.
start_app "$TMP/f.out" env DOTNET_PerfMapEnabled=3 "$APP" 600; pid=$APP_PID
record_bg f.pb.gz -v -p "$pid" -d 600
wait_sampling
wait_busy 60 "$pid" 100 "the app running while sampled"
kill -TERM "$pid"
wait_record
grep -q 'the process exited: recording ends' "$RECORD_ERR" || { tail -5 "$RECORD_ERR"; fail "the recording did not end with the app's exit"; }
check_case "exited-mid-recording" "$pid" "$TMP/f.pb.gz"
# Its perf map is the user's: left in place. A runtime that holds back the newest perf map lines
# (runtime 11) had its jitdump turned on beside it, to name them: that file goes with the process.
[ -s "/tmp/perf-$pid.map" ] || fail "the user's perf map of an exited app was removed"
if grep -q "pid $pid: runtime .* holds back the newest lines of its perf map" "$RECORD_ERR"; then
	[ ! -e "/tmp/jit-$pid.dump" ] || fail "the jitdump turned on beside the perf map was left behind"
	pass "held-back perf map: jitdump turned on beside it, removed with the process"
fi
rm -f "/tmp/perf-$pid.map"

# An app whose perf maps spanprof turned on, exiting mid-recording: its files are removed too. It
# exits once its perf map or jitdump exists (spanprof turns them on when it is 1 s old) and it has
# run a second of CPU time after that.
start_app "$TMP/f2.out" env "$APP" 600; pid=$APP_PID
record_bg f2.pb.gz -v -p "$pid" -d 600
wait_sampling
wait_for 60 "perf maps on in the app" perfmaps_preempted "$pid"
wait_busy 60 "$pid" 100 "the app running while sampled"
kill -TERM "$pid"
wait_record
grep -q 'the process exited: recording ends' "$RECORD_ERR" || { tail -5 "$RECORD_ERR"; fail "the recording did not end with the app's exit"; }
if enabled_here enabled-then-exited "$pid" "$TMP/f2.txt"; then
	check_case "enabled-then-exited" "$pid" "$TMP/f2.pb.gz"
	[ ! -e "/tmp/perf-$pid.map" ] && [ ! -e "/tmp/jit-$pid.dump" ] || fail "files of an exited app left behind"
	pass "perf map files of an app that exited mid-recording removed"
fi

# 7. A perf map planted as a symlink to a host file inside a container is refused and reported,
#    never read. (Perf maps stay off in the app: the runtime itself would follow the link.)
#    The host file holds a token of its own: a host name like "vm" is in kernel frame names too.
secret="spanprof-host-secret-$$-$RANDOM$RANDOM"
printf '0x1000 100 %s\n' "$secret" > "$TMP/host-file"
start_in_ns "$TMP/g.out" jit; pid=$APP_PID
ln -s "$TMP/host-file" "/proc/$pid/root/tmp/perf-1.map"
record g.pb.gz -p "$pid" -d 2 --no-enable-perfmap
grep -q "pid $pid .*refused .*perf-1.*symlink" "$TMP/g.txt" || { cat "$TMP/g.txt"; fail "symlinked perf map not reported"; }
decode "$TMP/g.pb.gz"
! grep -q "$secret" "$TMP/g.json" "$TMP/g.txt" || fail "host file content leaked into the profile"
pass "symlinked perf map refused: $(grep -o 'refused[^;]*' "$TMP/g.txt")"

# 8. A stale perf map of an earlier process with the same pid (pids wrap): older than the process,
#    it is not read; its perf map is turned on and the runtime writes it anew.
start_app "$TMP/s.out" env "$APP" 20 jit; pid=$APP_PID
printf '100000000 1000 STALE_EARLIER_PROCESS\n' > "/tmp/perf-$pid.map"
touch -d '1 hour ago' "/tmp/perf-$pid.map"
record s.pb.gz -p "$pid" -d 4
! pprof_has STALE_EARLIER "$TMP/s.pb.gz" || fail "the stale perf map was read"
if enabled_here stale-perf-map "$pid" "$TMP/s.txt"; then
	check_case "stale-perf-map" "$pid" "$TMP/s.pb.gz"
fi
stop "$pid"
