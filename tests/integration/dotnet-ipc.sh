#!/usr/bin/env bash
# dotnet-ipc.sh: integration check of perfmap/diagipc + perfmap/dotnet on the real .NET runtime: late EnablePerfMap on a host process, one with TMPDIR/PerfMapJitDumpPath set, and one in its own pid+mount namespace.
set -euo pipefail

cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
APP=$PWD/$BUILD/apps/HotChain/HotChain
DRIVER=$PWD/$BUILD/tools/diagipc-enable
passed=0
failed=0
started=()

if [ "$(id -u)" != 0 ]; then
	echo "dotnet-ipc: needs root (unshare, /proc/<pid>/root of other processes)" >&2
	exit 1
fi

mkdir -p "$BUILD/tmp"
WORK=$(mktemp -d "$PWD/$BUILD/tmp/dotnet-ipc-XXXXXX")	# outside /tmp: visible in the namespace too

cleanup() {
	local p
	for p in "${started[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
	done
	for p in "${started[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*" >&2; failed=$((failed + 1)); }
check() {	# check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}

stop() {	# stop PID: kill one process we started and reap it quietly
	{ kill -KILL "$1" && wait "$1"; } 2>/dev/null || true
}

wait_ready() {	# wait_ready OUTFILE: the app prints "ready" when the hot loop starts
	local i
	for i in $(seq 300); do
		grep -q '^ready' "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "timed out waiting for ready in $1:" >&2
	cat "$1" >&2 || true
	return 1
}

wait_file() {	# wait_file PATH PATTERN: up to 5 s for PATTERN to appear in PATH
	local i
	for i in $(seq 50); do
		grep -aq -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

for f in "$APP" "$DRIVER"; do	# from `make apps tools`
	[ -x "$f" ] || { echo "dotnet-ipc: $f missing: run make apps tools" >&2; exit 1; }
done

# ---- 1. a plain host process, started without perf maps ---------------------------------------
echo "== host process"
env -u DOTNET_PerfMapEnabled -u TMPDIR -u DOTNET_PerfMapJitDumpPath "$APP" 30 >"$WORK/host.out" 2>&1 &
P=$!
started+=("$P")
wait_ready "$WORK/host.out"
rm -f "/tmp/perf-$P.map" "/tmp/jit-$P.dump"	# stale files of an earlier process with this pid
check "no perf map before EnablePerfMap" test ! -e "/tmp/perf-$P.map"

"$DRIVER" -t 3 -f "$P" >"$WORK/a.txt" || true
cat "$WORK/a.txt"
check "EnablePerfMap(3) reply ok" grep -q '^reply ok hresult 0x00000000$' "$WORK/a.txt"
check "socket found in /tmp" grep -q "socket /tmp/dotnet-diagnostic-$P-[0-9]*-socket (ok)" "$WORK/a.txt"
check "perf map opened, no jitdump for type 3" \
	grep -q '^jit dir /tmp map ok jitdump No such file or directory$' "$WORK/a.txt"
check "perf map has HotLoop" wait_file "/tmp/perf-$P.map" 'Program::HotLoop'
# Main/Outer/Middle were jitted long before the enable: a late enable writes existing code.
for m in Main Outer Middle; do
	check "perf map has already-jitted Program::$m" grep -q "Program::$m(" "/tmp/perf-$P.map"
done
check "perf map has no R2R ([PreJIT]) lines" bash -c "! grep -q 'PreJIT' /tmp/perf-$P.map"

"$DRIVER" -t 2 "$P" >"$WORK/b.txt" || true
check "EnablePerfMap(2) on top: reply ok" grep -q '^reply ok' "$WORK/b.txt"
check "jitdump has HotLoop" wait_file "/tmp/jit-$P.dump" 'Program::HotLoop'
check "jitdump has R2R methods ([PreJIT])" grep -aq 'PreJIT' "/tmp/jit-$P.dump"

rc=0
"$DRIVER" -t 7 "$P" >"$WORK/c.txt" || rc=$?
check "EnablePerfMap(7): runtime error E_INVALIDARG, exit 3" \
	bash -c "[ $rc = 3 ] && grep -q '^reply error hresult 0x80070057$' '$WORK/c.txt'"
"$DRIVER" -d "$P" >"$WORK/d.txt" || true
check "DisablePerfMap reply ok" grep -q '^reply ok hresult 0x00000000$' "$WORK/d.txt"
stop "$P"
rm -f "/tmp/perf-$P.map" "/tmp/jit-$P.dump"

# ---- 2. TMPDIR moves the socket; DOTNET_PerfMapJitDumpPath moves the maps ------------------------
echo "== TMPDIR and DOTNET_PerfMapJitDumpPath"
mkdir -p "$WORK/td" "$WORK/pm"
env -u DOTNET_PerfMapEnabled TMPDIR="$WORK/td" DOTNET_PerfMapJitDumpPath="$WORK/pm" \
	"$APP" 30 >"$WORK/env.out" 2>&1 &
P=$!
started+=("$P")
wait_ready "$WORK/env.out"
"$DRIVER" -t 3 -f "$P" >"$WORK/e.txt" || true
cat "$WORK/e.txt"
check "socket found under TMPDIR" grep -q "socket $WORK/td/dotnet-diagnostic-$P-" "$WORK/e.txt"
check "perf map written under DOTNET_PerfMapJitDumpPath" wait_file "$WORK/pm/perf-$P.map" 'Program::HotLoop'
check "driver opened it there" grep -q "^jit dir $WORK/pm map ok" "$WORK/e.txt"
check "nothing written to /tmp" test ! -e "/tmp/perf-$P.map"
stop "$P"

# ---- 3. own pid + mount namespace with a private /tmp ----------------------------------------
echo "== pid+mount namespace"
echo "host secret" >"$WORK/host-secret"
# Inside the namespace, jit-1.dump is a symlink to a host file: we must refuse it. Type 3 only,
# so the runtime itself never opens (and truncates) that path.
NSRUN_SETUP="ln -s '$WORK/host-secret' /tmp/jit-1.dump" \
	tests/integration/nsrun.sh env -u DOTNET_PerfMapEnabled -u TMPDIR "$APP" 30 >"$WORK/ns.out" 2>&1 &
U=$!
started+=("$U")
H=""
for _ in $(seq 100); do
	H=$(pgrep -P "$U" || true)
	[ -n "$H" ] && [ "$(cat "/proc/$H/comm" 2>/dev/null)" = HotChain ] && break
	H=""
	sleep 0.1
done
[ -n "$H" ] || { bad "HotChain did not start in the namespace"; cat "$WORK/ns.out"; exit 1; }
started+=("$H")
wait_ready "$WORK/ns.out"
check "app sees itself as pid 1" grep -q '^pid 1$' "$WORK/ns.out"
check "NStgid ends in 1" bash -c "grep -q '^NStgid:.*[[:space:]]1$' /proc/$H/status"
check "socket only in the namespace's /tmp" \
	bash -c "ls /proc/$H/root/tmp/ | grep -q '^dotnet-diagnostic-1-.*-socket$' &&
		 ! ls /tmp/ | grep -q '^dotnet-diagnostic-1-'"
"$DRIVER" -t 3 -f "$H" >"$WORK/n.txt" || true
cat "$WORK/n.txt"
check "namespace: EnablePerfMap(3) reply ok" grep -q '^reply ok hresult 0x00000000$' "$WORK/n.txt"
check "namespace: socket /tmp/dotnet-diagnostic-1-* found through the root" \
	grep -q "^pid $H nspid 1 key [0-9]* socket /tmp/dotnet-diagnostic-1-[0-9]*-socket (ok)$" "$WORK/n.txt"
check "namespace: perf map at /proc/$H/root/tmp/perf-1.map has HotLoop" \
	wait_file "/proc/$H/root/tmp/perf-1.map" 'Program::HotLoop'
check "namespace: planted jitdump symlink refused" \
	grep -q '^jit dir /tmp map ok jitdump Too many levels of symbolic links$' "$WORK/n.txt"
check "namespace: host /tmp untouched" test ! -e /tmp/perf-1.map
check "namespace: host file untouched" grep -q '^host secret$' "$WORK/host-secret"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
