#!/usr/bin/env bash
# stalls.sh: spanprof is never held up by the processes it profiles (issue 9, "never stalled"):
# a perf map on a FUSE file system that never answers is refused, not read (and a file system
# named by SPANPROF_TEST_REMOTE_FSTYPES likewise, read again with --allow-remote-files: the test
# build, build/spanprof-test, runs here; the shipped one ignores it); -d is a deadline even when
# every .NET process's diagnostics socket is silent; SIGTERM during a slow exit still writes what
# there is, at once.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3 dotnet

FUSEHANG=$BUILD/apps/native/fusehang
HOTCHAIN_DLL=$BUILD/apps/HotChain/HotChain.dll
FAKE=$ROOT/tests/integration/fake_dotnet.py
need_built "$FUSEHANG" "$HOTCHAIN_DLL" "$HOTCHAIN" "$SPANPROF_TEST"

# timed NAME SECS ARGS...: spanprof record ARGS -o $TMP/NAME.pb.gz (the test build, which reads
# SPANPROF_TEST_REMOTE_FSTYPES), killed after SECS, a bound far above what it should take: RC 137
# means it hung. Sets TOOK (seconds: a figure printed for scripts/bench-robust.sh, never asserted
# here: speed is the benchmarks').
timed() {
	local name=$1 secs=$2 t0
	shift 2
	t0=$(date +%s.%N)
	RC=0
	timeout -s KILL "$secs" "$SPANPROF_TEST" record "$@" -o "$TMP/$name.pb.gz" > "$TMP/$name.txt" 2>&1 || RC=$?
	TOOK=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
}

# 1. A .NET process whose perf map directory is a FUSE mount that never answers.
mkdir -p "$TMP/fuse" "$TMP/lib"
start_app --pid-line --timeout 10 "$TMP/fusehang.out" "$FUSEHANG" "$TMP/fuse"
FUSE_PID=$APP_PID
unmount_fuse() { kill -KILL "$FUSE_PID" 2>/dev/null || true; umount -l "$TMP/fuse" 2>/dev/null || true; }
at_exit unmount_fuse
start_app --pid-line --timeout 10 "$TMP/fake1.out" env DOTNET_PerfMapJitDumpPath="$TMP/fuse" \
	python3 "$FAKE" "$TMP/lib" 30
timed fuse 20 -p "$APP_PID" -d 2 --no-enable-perfmap
unmount_fuse	# a spanprof stuck on it is let go now
[ "$RC" = 0 ] || { cat "$TMP/fuse.txt"; fail "perf map on a silent FUSE mount: exit $RC after ${TOOK}s"; }
note "figure fuse_s=$TOOK: -d 2 with a perf map on a silent FUSE mount"
grep -q "refused $TMP/fuse/perf-$APP_PID.map: on a fuse.fusehang file system" "$TMP/fuse.txt" ||
	{ cat "$TMP/fuse.txt"; fail "the FUSE perf map was not refused by name"; }
grep -q 'refused: 1 perf maps / jitdumps on remote or FUSE' "$TMP/fuse.txt" || { cat "$TMP/fuse.txt"; fail "refusal not counted"; }
pass "perf map on a FUSE mount that never answers: refused, counted, ${TOOK}s for -d 2"

# 2. A file system the test names remote (tmpfs under /dev/shm): refused; read with the flag.
SHM=$(mktemp -d /dev/shm/spanprof-stalls-XXXXXX)
rm_shm() { rm -rf "$SHM"; }
at_exit rm_shm
start_app --timeout 60 "$TMP/hc.out" env DOTNET_PerfMapEnabled=1 DOTNET_PerfMapJitDumpPath="$SHM" \
	dotnet "$HOTCHAIN_DLL" 90	# stopped below; long enough for two recordings on a busy machine
HC=$APP_PID
SPANPROF_TEST_REMOTE_FSTYPES=tmpfs timed shm 30 -p "$HC" -d 2
[ "$RC" = 0 ] || { cat "$TMP/shm.txt"; fail "tmpfs named remote: exit $RC"; }
grep -q "refused $SHM/perf-$HC.map: on a tmpfs file system" "$TMP/shm.txt" || { cat "$TMP/shm.txt"; fail "tmpfs named remote: not refused"; }
decode "$TMP/shm.pb.gz"
named=$(field "$(query leaf "$TMP/shm.json" --leaf 'HotChain.*HotLoop')" hit)
[ "$named" = 0 ] || fail "refused perf map, yet $named samples named from it"
SPANPROF_TEST_REMOTE_FSTYPES=tmpfs timed shm2 30 -p "$HC" -d 2 --allow-remote-files
[ "$RC" = 0 ] || { cat "$TMP/shm2.txt"; fail "--allow-remote-files: exit $RC"; }
! grep -q "refused" "$TMP/shm2.txt" || { cat "$TMP/shm2.txt"; fail "--allow-remote-files still refused"; }
decode "$TMP/shm2.pb.gz"
named=$(field "$(query leaf "$TMP/shm2.json" --leaf 'HotChain.*HotLoop')" hit)
[ "$named" -ge 20 ] || { cat "$TMP/shm2.txt"; fail "--allow-remote-files: HotLoop named in $named samples"; }
pass "file system named remote: perf map refused (0 named), read with --allow-remote-files ($named named)"
stop "$HC"

# 3. -d is a deadline: four .NET processes whose diagnostics sockets accept and never answer.
fakes=()
for i in 1 2 3 4; do
	start_app --pid-line --timeout 10 "$TMP/silent$i.out" python3 "$FAKE" "$TMP/lib" 60
	fakes+=(-p "$APP_PID")
done
timed silent 60 "${fakes[@]}" -d 2
[ "$RC" = 0 ] || { cat "$TMP/silent.txt"; fail "silent sockets: exit $RC after ${TOOK}s"; }
note "figure silent_s=$TOOK: -d 2 with four silent diagnostics sockets"
pass "-d 2 with four silent diagnostics sockets: ${TOOK}s"

# 3b. Talks to diagnostics sockets run beside sampling and never cost samples: five .NET
#    processes whose sockets never answer (each talk waits its 2 s timeout) and a busy process
#    sampled at 999 Hz into a 1 MiB ring buffer (under 3 s of its samples). With the talks in the
#    sampling loop, the ring buffer filled while it waited (40 % of samples lost with five).
fakes=() fake_pids=()
for i in 1 2 3 4 5; do
	start_app --pid-line --timeout 10 "$TMP/talk$i.out" python3 "$FAKE" "$TMP/lib" 60
	fakes+=(-p "$APP_PID")
	fake_pids+=("$APP_PID")
done
start_app --pid-line --timeout 30 "$TMP/talkhot.out" "$HOTCHAIN" 60
hot=$APP_PID
timed talks 60 "${fakes[@]}" -p "$hot" -d 8 -F 999 --ringbuf-mb 1
[ "$RC" = 0 ] || { cat "$TMP/talks.txt"; fail "silent sockets beside a busy process: exit $RC after ${TOOK}s"; }
lost=$(sed -n 's/.*lost: ring buffer full \([0-9]*\),.*/\1/p' "$TMP/talks.txt")
tried=$(grep -c "could not enable its perf map" "$TMP/talks.txt" || true)
decode "$TMP/talks.pb.gz"
got=$(field "$(query total "$TMP/talks.json" --pid "$hot")" total)
note "five silent sockets and a busy process at 999 Hz, 1 MiB ring buffer: ${TOOK}s for -d 8, $got samples of the busy one, $lost lost (ring buffer full), $tried talks timed out"
[ "$tried" -ge 1 ] || { cat "$TMP/talks.txt"; fail "no talk to a silent socket was tried"; }
[ "$lost" = 0 ] || { cat "$TMP/talks.txt"; fail "$lost samples lost while talking to silent sockets"; }
# How many the busy process had is the machine's load (a figure); that the ring buffer never
# filled while the talks waited is the test.
note "figure talks_busy_samples=$got: of the busy process in 8 s at 999 Hz"
[ "$got" -gt 0 ] || fail "no sample of the busy process"
note "figure talks_s=$TOOK: -d 8 with five silent sockets beside a busy process"
stop "$hot" "${fake_pids[@]}"
pass "talks to five silent sockets cost no sample ($got of the busy process, 0 lost), -d 8 in ${TOOK}s"

# 4. SIGTERM during a slow exit: four processes answer EnablePerfMap and nothing else, so leaving
#    them as found (DisablePerfMap) costs a timeout each. The second SIGTERM ends it at
#    once; the output was written, and the next start turns their perf maps off.
fakes=()
for i in 1 2 3 4; do
	start_app --pid-line --timeout 10 "$TMP/once$i.out" python3 "$FAKE" "$TMP/lib" 30 enable-only
	fakes+=(-p "$APP_PID")
done
sleep 1	# older than the runtime start-up guard
# A private state directory: the entries left behind are no other spanprof's business.
SPANPROF_STATE_DIR=$TMP/state "$SPANPROF" record "${fakes[@]}" -o "$TMP/exit.pb.gz" > "$TMP/exit.txt" 2> "$TMP/exit.err" &
RECORD_PID=$!
register "$RECORD_PID"
# Until it has turned perf maps on in all four (each written down in the state directory first).
enabled4() { [ "$(ls "$TMP/state/enabled" 2>/dev/null | wc -l)" -ge 4 ]; }
wait_for 30 "perf maps turned on in the four enable-only processes" enabled4
kill -TERM "$RECORD_PID"
# The report is on a pipe (flushed at exit); the output file is written before the slow part.
poll 10 test -s "$TMP/exit.pb.gz" || { cat "$TMP/exit.err"; fail "no output 10 s after SIGTERM"; }
sleep 0.5
t0=$(date +%s.%N)
kill -TERM "$RECORD_PID" 2>/dev/null || true
rc=0
# Without the second SIGTERM's hurry it would take four DisablePerfMap timeouts and more.
wait_exit 10 "$RECORD_PID" "spanprof after the second SIGTERM" || rc=$?
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
note "exit after the second SIGTERM: ${took}s (exit $rc)"
note "figure second_sigterm_s=$took"
check_pprof "$TMP/exit.pb.gz" "slow exit: output unreadable"
grep -q 'left on' "$TMP/exit.err" || { cat "$TMP/exit.err"; fail "hurried exit not explained"; }
grep -q '^wrote ' "$TMP/exit.txt" || { cat "$TMP/exit.txt"; fail "hurried exit: no report"; }
[ "$(ls "$TMP/state/enabled" | wc -l)" -ge 3 ] || fail "the perf maps left on are not written down for the next start"
pass "SIGTERM during a slow exit: output written, gone ${took}s after the second, perf maps left on written down"
