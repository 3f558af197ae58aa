#!/usr/bin/env bash
# command.sh: `spanprof record -- COMMAND`: the command runs with the hook injected (appended to an
# existing DOTNET_STARTUP_HOOKS) and perf maps on, it and its children are profiled from the start,
# spanprof exits with the command's exit code, --user drops privileges for the command only, and
# the perf maps it caused are gone afterwards.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd dotnet
APP=$BUILD/apps/HotChain/HotChain.dll
need_built "$APP" "$HOTCHAIN" "$BUILD/hook/SpanProf.Hook.dll"

# A .NET app and a native program, both children of a shell; the shell's exit code is 3.
rc=0
"$SPANPROF" record -d 60 -o "$TMP/cmd.pb.gz" -- sh -c "
	echo \"\$DOTNET_STARTUP_HOOKS\" > '$TMP/hooks'; echo \"\$DOTNET_PerfMapEnabled\" > '$TMP/pme'
	dotnet '$APP' 3 > '$TMP/app.out'
	'$HOTCHAIN' 1 > /dev/null; exit 3" > "$TMP/cmd.txt" 2>&1 || rc=$?
[ "$rc" = 3 ] || { cat "$TMP/cmd.txt"; fail "exit code $rc, want the command's 3"; }
pass "spanprof exits with the command's exit code"
grep -q "SpanProf.Hook.dll$" "$TMP/hooks" || fail "hook not injected: $(cat "$TMP/hooks")"
[ "$(cat "$TMP/pme")" = 3 ] || fail "perf maps not turned on as type 3 (the perf map only): $(cat "$TMP/pme")"
decode "$TMP/cmd.pb.gz"
leaf_samples() { field "$(query leaf "$TMP/cmd.json" --leaf "$1")" hit; }
[ "$(leaf_samples HotLoop)" -ge 50 ] || fail "the .NET child was not profiled (HotLoop: $(leaf_samples HotLoop))"
[ "$(leaf_samples inner_hot)" -ge 20 ] || fail "the native grandchild was not profiled (inner_hot: $(leaf_samples inner_hot))"
grep -q "span table v1" "$TMP/cmd.txt" || { cat "$TMP/cmd.txt"; fail "the hook's span table was not found in the .NET child"; }
pass "the command's .NET and native children profiled, hook loaded"
pid=$(grep -o '^  \.NET pid [0-9]*' "$TMP/cmd.txt" | grep -o '[0-9]*$' | head -1)
[ ! -e "/tmp/perf-$pid.map" ] || fail "/tmp/perf-$pid.map left behind"
pass "its perf maps removed"

# An existing DOTNET_STARTUP_HOOKS is kept, the hook appended.
DOTNET_STARTUP_HOOKS=/opt/other/Other.dll "$SPANPROF" record -d 10 -o "$TMP/h.pb.gz" -- \
	sh -c "echo \"\$DOTNET_STARTUP_HOOKS\" > '$TMP/hooks2'" > /dev/null 2>&1
grep -q '^/opt/other/Other.dll:.*SpanProf.Hook.dll$' "$TMP/hooks2" || fail "DOTNET_STARTUP_HOOKS not appended to: $(cat "$TMP/hooks2")"
pass "an existing DOTNET_STARTUP_HOOKS is kept"

# --user: the command runs as that user, spanprof stays root (its file in world_dir: see lib.sh).
world_dir
udir=$WORLD_DIR
: > "$udir/uid"
chmod 666 "$udir/uid"
"$SPANPROF" record -d 10 -o "$TMP/u.pb.gz" --user nobody -- sh -c "id -u > '$udir/uid'" > /dev/null 2>&1 ||
	fail "--user nobody failed"
[ "$(cat "$udir/uid")" = "$(id -u nobody)" ] || fail "--user: the command ran as uid $(cat "$udir/uid")"
pass "--user drops privileges for the command"

# Errors: one line and exit code 2 before anything runs; a missing command is 127.
r1=0 r2=0 r3=0
"$SPANPROF" record --user no-such-user-x -- true > /dev/null 2> "$TMP/e1" || r1=$?
"$SPANPROF" record -p 1 -- true > /dev/null 2> "$TMP/e2" || r2=$?
"$SPANPROF" record -d 5 -o "$TMP/m.pb.gz" -- /no/such/command > /dev/null 2> "$TMP/e3" || r3=$?
[ "$r1" = 2 ] && grep -q 'no user' "$TMP/e1" || fail "--user unknown: rc $r1 $(cat "$TMP/e1")"
[ "$r2" = 2 ] && grep -q 'not both' "$TMP/e2" || fail "-p with a command: rc $r2 $(cat "$TMP/e2")"
[ "$r3" = 127 ] && grep -q 'cannot run' "$TMP/e3" || fail "missing command: rc $r3 $(cat "$TMP/e3")"
pass "bad --user, -p with a command, a missing command"
