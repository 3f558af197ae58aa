#!/usr/bin/env bash
# hook-table.sh: runs HookCheck under the managed hook and checks its span table from outside with ctxdump.
#
# Modes: startup hook only, project (package) reference only, both at once (+ a second copy in
# another load context), a 16-slot table (overflow and reclaim), Pyroscope profile id, failure
# injection (the hook must disable itself and the app must run on), forged tables for the C reader.
. "$(dirname "$0")/lib.sh"
need_cmd dotnet python3 "${CC:-cc}"

CTXDUMP=$BUILD/tools/ctxdump
HOOK_DLL=$BUILD/hook/SpanProf.Hook.dll
STARTUP_DLL=$BUILD/hook/SpanProf.Hook.Startup.dll
PLAIN=$BUILD/apps/hookcheck-plain/HookCheck.dll
REF=$BUILD/apps/hookcheck-ref/HookCheck.Ref.dll
# The hook and ctxdump come from `make hook tools`; only this test's own builds happen here.
need_built "$CTXDUMP" "$HOOK_DLL" "$STARTUP_DLL" "$TESTHOOK"

build_apps() {
	mkdir -p "$BUILD/apps"
	: >"$TMP/build.log"
	dotnet build "$ROOT/hook/startup/SpanProf.Hook.Startup.csproj" -c Release -o "$BUILD/hook-skew" -p:Version=9.9.0 \
		-p:BaseIntermediateOutputPath="$BUILD/obj/hook/SpanProf.Hook.Startup-skew/" -nologo -v q >>"$TMP/build.log" 2>&1 &&
	dotnet build "$ROOT/tests/apps/HookCheck/HookCheck.csproj" -c Release -o "$BUILD/apps/hookcheck-plain" \
		-nologo -v q >>"$TMP/build.log" 2>&1 &&
	dotnet build "$ROOT/tests/apps/HookCheck/Ref/HookCheck.Ref.csproj" -c Release \
		-o "$BUILD/apps/hookcheck-ref" -nologo -v q >>"$TMP/build.log" 2>&1 ||
		{ cat "$TMP/build.log"; fail "dotnet build of the skewed hook and HookCheck failed"; }
}

# The slot line of `ctxdump -t TID PID` without "slot N tid=T start_ticks=S ".
slot_of() {
	"$CTXDUMP" -t "$2" "$1" 2>&1 | grep -E '^(slot|noslot) ' | tail -1 |
		sed -E 's/^slot [0-9]+ tid=[0-9]+ start_ticks=[0-9]+ //' || true
}

check_slot() { # label pid tid want
	local got=""
	for _ in $(seq 1 40); do
		got=$(slot_of "$2" "$3")
		if [[ $4 == any-nospan ]]; then
			[[ $got == noslot* || $got == "thread=live valid=1 nospan" ]] && { pass "$1 ($got)"; return; }
		elif [[ $got == "$4" ]]; then
			pass "$1"
			return
		fi
		sleep 0.1 # a pool thread may still be on its way back to the pool
	done
	note "want: $4"
	note "got:  $got"
	hookcheck_fail "$1: tid $3"
}

check_header() { # label pid cond
	local field=${3%%[>=]*} op val
	op=$(sed -E 's/^[a-z_]+([>=]+).*/\1/' <<<"$3")
	val=${3##*[>=]}
	local got
	got=$("$CTXDUMP" "$2" | head -1 | grep -oE "(^| )$field=[0-9]+" | cut -d= -f2) || true
	if [[ -z $got ]]; then
		hookcheck_fail "$1: no $field in ctxdump header"
	elif [[ $op == "=" && $got -eq $val ]] || [[ $op == ">=" && $got -ge $val ]]; then
		pass "$1 ($field=$got)"
	else
		hookcheck_fail "$1: $field=$got, want $op$val"
	fi
}

mappings() { grep -c "/memfd:spanprof-ctx" "/proc/$1/maps" 2>/dev/null || true; }

# run_hookcheck LABEL DLL "ENV=..."... -- SCENARIO...: HookCheck as a coprocess; every CHECK,
# HEADER and SELF line it prints is checked before it is told to go on. Its stderr is left in
# $TMP/stderr.
run_hookcheck() {
	local label=$1 dll=$2 pid="" line rc=0 done=0 first=1
	shift 2
	local envs=()
	while [[ $# -gt 0 && $1 != -- ]]; do envs+=("$1"); shift; done
	shift
	note "== $label"
	coproc HOOKCHECK { exec env "${envs[@]}" dotnet "$dll" "$@" 2>"$TMP/stderr"; }
	local app_pid=$HOOKCHECK_PID app_in app_out
	register "$app_pid"
	# Own copies of the pipe ends: bash drops HOOKCHECK[] as soon as the app exits.
	exec {app_in}<&"${HOOKCHECK[0]}" {app_out}>&"${HOOKCHECK[1]}"
	while IFS= read -r -t 180 line <&"$app_in"; do
		case $line in
		"INFO mode="*)
			pid=$(sed -E 's/.* pid=([0-9]+).*/\1/' <<<"$line")
			note "$line" ;;
		CHECK*)
			local name tid want
			name=$(awk '{print $2}' <<<"$line")
			tid=$(sed -E 's/.* tid=([0-9]+) .*/\1/' <<<"$line")
			want=${line#* want=}
			if [[ $first == 1 ]]; then
				first=0
				[[ $(mappings "$pid") == 1 ]] || hookcheck_fail "$label: $(mappings "$pid") table mappings"
				pass "$label: one table mapping"
			fi
			check_slot "$label/$name" "$pid" "$tid" "$want"
			echo next >&"$app_out" ;;
		HEADER*)
			check_header "$label/$(awk '{print $2}' <<<"$line")" "$pid" "$(awk '{print $3}' <<<"$line")"
			echo next >&"$app_out" ;;
		PAUSE*)
			pid=${line#PAUSE pid=}
			PAUSED_MAPPINGS=$(mappings "$pid")
			echo next >&"$app_out" ;;
		"SELF "*" ok"*) pass "$label/${line#SELF }" ;;
		SELF*) hookcheck_fail "$label/${line#SELF }" ;;
		DONE) done=1 ;;
		*) note "$line" ;;
		esac
	done
	exec {app_out}>&- {app_in}<&-
	[[ $done == 1 ]] || stop "$app_pid"	# no DONE within 180 s of a line: do not wait forever
	wait_exit 60 "$app_pid" "$label: the app after DONE" || rc=$?
	[[ $done == 1 && $rc == 0 ]] || hookcheck_fail "$label: app rc=$rc done=$done"
	pass "$label: app finished"
	[[ -d $TMP ]] || fail "$label: work dir $TMP vanished (something else cleaned it)"
	show_stderr
}
show_stderr() { if [[ -s $TMP/stderr ]]; then sed 's/^/     stderr: /' "$TMP/stderr"; fi; }
hookcheck_fail() { show_stderr; fail "$@"; }

forged_table() { # label expect-exit python-header-expr
	local pyfd ppid="" rc=0 out
	# The forger prints its pid once the table is in place and waits to be killed.
	exec {pyfd}< <(python3 - <<EOF
import mmap, os, struct, time
fd = os.memfd_create("spanprof-ctx", 0)
size = 4096 * 2 + 656 * 16
os.ftruncate(fd, size)
m = mmap.mmap(fd, size)
magic, abi, hsize, count, ssize, soff, koff, ksize, kcount, pid = $3
m[0:80] = struct.pack("<8sIIIIIIIIIIQQ16s", magic, abi, hsize, count, ssize, soff, koff, ksize,
                      kcount, pid, 0, 0, 0, b"")
print(os.getpid(), flush=True)
time.sleep(60)
EOF
)
	read -r -t 20 ppid <&"$pyfd" || true
	exec {pyfd}<&-
	[[ -n $ppid ]] || fail "$1: forger did not start"
	register "$ppid"
	out=$("$CTXDUMP" "$ppid" 2>&1) || rc=$?
	stop "$ppid"
	[[ $rc == "$2" ]] || { echo "$out"; fail "$1: ctxdump exit $rc, want $2"; }
	pass "$1 (exit $rc)"
}

build_apps
export SPANPROF_HOOK_VERBOSE=1

run_hookcheck "startup-hook" "$PLAIN" "DOTNET_STARTUP_HOOKS=$HOOK_DLL" --
run_hookcheck "reference" "$REF" "SPANPROF_UNUSED=1" --
run_hookcheck "both" "$REF" "DOTNET_STARTUP_HOOKS=$HOOK_DLL" -- nested async twocopies "$HOOK_DLL"
grep -q "forwarding" "$TMP/stderr" || fail "both: no forwarding message from the second copy"
pass "both: second copy forwards to the owner"
run_hookcheck "startup-hook+second-copy" "$PLAIN" "DOTNET_STARTUP_HOOKS=$HOOK_DLL" -- nested twocopies "$BUILD/apps/hookcheck-ref/SpanProf.Hook.dll"
run_hookcheck "startup-variant" "$PLAIN" "DOTNET_STARTUP_HOOKS=$STARTUP_DLL" -- nested async labels-nospan
run_hookcheck "startup-variant-9.9+reference-1.0" "$REF" "DOTNET_STARTUP_HOOKS=$BUILD/hook-skew/SpanProf.Hook.Startup.dll" -- nested async nested-labels
grep -q "forwarding" "$TMP/stderr" || fail "startup-variant+reference: no forwarding message"
pass "startup-variant+reference: the app's copy forwards to the startup copy"
run_hookcheck "small-table" "$PLAIN" "DOTNET_STARTUP_HOOKS=$HOOK_DLL" "SPANPROF_MAX_THREADS=16" -- churn overflow
run_hookcheck "pyroscope" "$PLAIN" "DOTNET_STARTUP_HOOKS=$HOOK_DLL" "SPANPROF_PYROSCOPE_PROFILE_ID=1" -- pyroscope nested

PAUSED_MAPPINGS=x
# Faults are injected through the hook's test build ($TESTHOOK): the shipped one ignores them.
run_hookcheck "fault-memfd" "$PLAIN" "DOTNET_STARTUP_HOOKS=$TESTHOOK" "SPANPROF_HOOK_FAULT=memfd" -- pause label-noop
[[ $PAUSED_MAPPINGS == 0 ]] || fail "fault-memfd: $PAUSED_MAPPINGS mappings"
pass "fault-memfd: no mapping"
[[ $(grep -c "spanprof-hook: disabled: memfd_create failed" "$TMP/stderr" || true) == 1 ]] ||
	fail "fault-memfd: stderr: $(cat "$TMP/stderr")"
pass "fault-memfd: one stderr line"
run_hookcheck "fault-mmap-quiet" "$PLAIN" "DOTNET_STARTUP_HOOKS=$TESTHOOK" "SPANPROF_HOOK_FAULT=mmap" "SPANPROF_HOOK_QUIET=1" -- label-noop pause
[[ ! -s $TMP/stderr ]] || fail "fault-mmap-quiet: stderr not empty"
pass "fault-mmap-quiet: silent"
[[ $PAUSED_MAPPINGS == 0 ]] || fail "fault-mmap-quiet: $PAUSED_MAPPINGS mappings"
pass "fault-mmap-quiet: no mapping"

note "== ctxdump on tables that are not ours"
spawn /dev/null sleep 30
sleeper=$SPAWNED
rc=0
"$CTXDUMP" "$sleeper" >/dev/null 2>&1 || rc=$?
stop "$sleeper"
[[ $rc == 3 ]] || fail "ctxdump: unhooked process exit $rc"
pass "ctxdump: unhooked process (exit 3)"
forged_table "ctxdump: forged good header" 0 \
	'(b"SPANPROF", 1, 80, 16, 656, 4096, 128, 1024, 0, os.getpid())'
forged_table "ctxdump: slot_count not a power of two" 4 \
	'(b"SPANPROF", 1, 80, 15, 656, 4096, 128, 1024, 0, os.getpid())'
forged_table "ctxdump: slots past the mapping" 4 \
	'(b"SPANPROF", 1, 80, 4096, 656, 4096, 128, 1024, 0, os.getpid())'
forged_table "ctxdump: wrong magic" 4 \
	'(b"SPANPROX", 1, 80, 16, 656, 4096, 128, 1024, 0, os.getpid())'
forged_table "ctxdump: other abi" 4 \
	'(b"SPANPROF", 2, 80, 16, 656, 4096, 128, 1024, 0, os.getpid())'
forged_table "ctxdump: foreign pid (inherited through fork)" 4 \
	'(b"SPANPROF", 1, 80, 16, 656, 4096, 128, 1024, 0, os.getpid() + 1)'
forged_table "ctxdump: header not published yet" 4 \
	'(b"\0" * 8, 1, 80, 16, 656, 4096, 128, 1024, 0, os.getpid())'
