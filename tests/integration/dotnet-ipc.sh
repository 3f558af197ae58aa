#!/usr/bin/env bash
# dotnet-ipc.sh: integration check of perfmap/diagipc + perfmap/dotnet on the real .NET runtime:
# late EnablePerfMap on a host process, one with TMPDIR/PerfMapJitDumpPath set, and one in its own
# pid+mount namespace.
. "$(dirname "$0")/lib.sh"
need_root "unshare, /proc/<pid>/root of other processes"

APP=$BUILD/apps/HotChain/HotChain
DRIVER=$BUILD/tools/diagipc-enable
need_built "$APP" "$DRIVER"	# from `make apps tools`

# ---- 1. a plain host process, started without perf maps ---------------------------------------
note "== host process"
start_app --timeout 30 "$TMP/host.out" \
	env -u DOTNET_PerfMapEnabled -u TMPDIR -u DOTNET_PerfMapJitDumpPath "$APP" 30
P=$APP_PID
rm -f "/tmp/perf-$P.map" "/tmp/jit-$P.dump"	# stale files of an earlier process with this pid
check "no perf map before EnablePerfMap" test ! -e "/tmp/perf-$P.map"

"$DRIVER" -t 3 -f "$P" >"$TMP/a.txt" || true
cat "$TMP/a.txt"
check "EnablePerfMap(3) reply ok" grep -q '^reply ok hresult 0x00000000$' "$TMP/a.txt"
check "socket found in /tmp" grep -q "socket /tmp/dotnet-diagnostic-$P-[0-9]*-socket (ok)" "$TMP/a.txt"
check "perf map opened, no jitdump for type 3" \
	grep -q '^jit dir /tmp map ok jitdump No such file or directory$' "$TMP/a.txt"
check "perf map has HotLoop" poll 5 has_line "/tmp/perf-$P.map" 'Program::HotLoop'
# Main/Outer/Middle were jitted long before the enable: a late enable writes existing code.
for m in Main Outer Middle; do
	check "perf map has already-jitted Program::$m" grep -q "Program::$m(" "/tmp/perf-$P.map"
done
check "perf map has no R2R ([PreJIT]) lines" bash -c "! grep -q 'PreJIT' /tmp/perf-$P.map"

"$DRIVER" -t 2 "$P" >"$TMP/b.txt" || true
check "EnablePerfMap(2) on top: reply ok" grep -q '^reply ok' "$TMP/b.txt"
check "jitdump has HotLoop" poll 5 has_line "/tmp/jit-$P.dump" 'Program::HotLoop'
check "jitdump has R2R methods ([PreJIT])" grep -aq 'PreJIT' "/tmp/jit-$P.dump"

rc=0
"$DRIVER" -t 7 "$P" >"$TMP/c.txt" || rc=$?
check "EnablePerfMap(7): runtime error E_INVALIDARG, exit 3" \
	bash -c "[ $rc = 3 ] && grep -q '^reply error hresult 0x80070057$' '$TMP/c.txt'"
"$DRIVER" -d "$P" >"$TMP/d.txt" || true
check "DisablePerfMap reply ok" grep -q '^reply ok hresult 0x00000000$' "$TMP/d.txt"
stop "$P"

# ---- 2. TMPDIR moves the socket; DOTNET_PerfMapJitDumpPath moves the maps ------------------------
note "== TMPDIR and DOTNET_PerfMapJitDumpPath"
mkdir -p "$TMP/td" "$TMP/pm"
start_app --timeout 30 "$TMP/env.out" \
	env -u DOTNET_PerfMapEnabled TMPDIR="$TMP/td" DOTNET_PerfMapJitDumpPath="$TMP/pm" "$APP" 30
P=$APP_PID
"$DRIVER" -t 3 -f "$P" >"$TMP/e.txt" || true
cat "$TMP/e.txt"
check "socket found under TMPDIR" grep -q "socket $TMP/td/dotnet-diagnostic-$P-" "$TMP/e.txt"
check "perf map written under DOTNET_PerfMapJitDumpPath" poll 5 has_line "$TMP/pm/perf-$P.map" 'Program::HotLoop'
check "driver opened it there" grep -q "^jit dir $TMP/pm map ok" "$TMP/e.txt"
check "nothing written to /tmp" test ! -e "/tmp/perf-$P.map"
stop "$P"

# ---- 3. own pid + mount namespace with a private /tmp ----------------------------------------
note "== pid+mount namespace"
echo "host secret" >"$TMP/host-secret"
# Inside the namespace, jit-1.dump is a symlink to a host file: we must refuse it. Type 3 only,
# so the runtime itself never opens (and truncates) that path.
NSRUN_SETUP="ln -s '$TMP/host-secret' /tmp/jit-1.dump" \
	start_app --ns --timeout 30 "$TMP/ns.out" env -u DOTNET_PerfMapEnabled -u TMPDIR "$APP" 30
H=$APP_PID
[ "$(cat "/proc/$H/comm" 2>/dev/null)" = HotChain ] || { cat "$TMP/ns.out"; fail "HotChain did not start in the namespace"; }
check "app sees itself as pid 1" grep -q '^pid 1$' "$TMP/ns.out"
check "NStgid ends in 1" bash -c "grep -q '^NStgid:.*[[:space:]]1$' /proc/$H/status"
check "socket only in the namespace's /tmp" \
	bash -c "ls /proc/$H/root/tmp/ | grep -q '^dotnet-diagnostic-1-.*-socket$' &&
		 ! ls /tmp/ | grep -q '^dotnet-diagnostic-1-'"
"$DRIVER" -t 3 -f "$H" >"$TMP/n.txt" || true
cat "$TMP/n.txt"
check "namespace: EnablePerfMap(3) reply ok" grep -q '^reply ok hresult 0x00000000$' "$TMP/n.txt"
check "namespace: socket /tmp/dotnet-diagnostic-1-* found through the root" \
	grep -q "^pid $H nspid 1 key [0-9]* socket /tmp/dotnet-diagnostic-1-[0-9]*-socket (ok)$" "$TMP/n.txt"
check "namespace: perf map at /proc/$H/root/tmp/perf-1.map has HotLoop" \
	poll 5 has_line "/proc/$H/root/tmp/perf-1.map" 'Program::HotLoop'
check "namespace: planted jitdump symlink refused" \
	grep -q '^jit dir /tmp map ok jitdump Too many levels of symbolic links$' "$TMP/n.txt"
check "namespace: host /tmp untouched" test ! -e /tmp/perf-1.map
check "namespace: host file untouched" grep -q '^host secret$' "$TMP/host-secret"
