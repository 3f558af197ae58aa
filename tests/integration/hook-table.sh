#!/usr/bin/env bash
# hook-table.sh: runs HookCheck under the managed hook and checks its span table from outside with ctxdump.
#
# Modes: startup hook only, project (package) reference only, both at once (+ a second copy in
# another load context), a 16-slot table (overflow and reclaim), Pyroscope profile id, failure
# injection (the hook must disable itself and the app must run on), forged tables for the C reader.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
CTXDUMP=$BUILD/tools/ctxdump
HOOK_DLL=$BUILD/hook/SpanProf.Hook.dll
STARTUP_DLL=$BUILD/hook/SpanProf.Hook.Startup.dll
PLAIN=$BUILD/apps/hookcheck-plain/HookCheck.dll
REF=$BUILD/apps/hookcheck-ref/HookCheck.Ref.dll
mkdir -p "$BUILD/tmp"
TMP=$(mktemp -d "$BUILD/tmp/hook-table.XXXXXX") # not /tmp: seen cleaned under a running test
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

build() {
	# The hook and ctxdump come from `make hook tools`; only this test's own builds happen here.
	for f in "$CTXDUMP" "$HOOK_DLL" "$STARTUP_DLL"; do
		[ -e "$f" ] || { echo "hook-table: $f missing: run make hook tools" >&2; return 1; }
	done
	mkdir -p "$BUILD/apps"
	: >"$TMP/build.log"
	dotnet build "$ROOT/hook/startup/SpanProf.Hook.Startup.csproj" -c Release -o "$BUILD/hook-skew" -p:Version=9.9.0 \
		-p:BaseIntermediateOutputPath="$BUILD/obj/hook/SpanProf.Hook.Startup-skew/" -nologo -v q >>"$TMP/build.log" 2>&1 &&
	dotnet build "$ROOT/tests/apps/HookCheck/HookCheck.csproj" -c Release -o "$BUILD/apps/hookcheck-plain" \
		-nologo -v q >>"$TMP/build.log" 2>&1 &&
	dotnet build "$ROOT/tests/apps/HookCheck/Ref/HookCheck.Ref.csproj" -c Release \
		-o "$BUILD/apps/hookcheck-ref" -nologo -v q >>"$TMP/build.log" 2>&1 || { cat "$TMP/build.log"; return 1; }
}

# The slot line of `ctxdump -t TID PID` without "slot N tid=T start_ticks=S ".
slot_of() {
	"$CTXDUMP" -t "$2" "$1" 2>&1 | grep -E '^(slot|noslot) ' | tail -1 |
		sed -E 's/^slot [0-9]+ tid=[0-9]+ start_ticks=[0-9]+ //'
}

check_slot() { # label pid tid want
	local got=""
	for _ in $(seq 1 40); do
		got=$(slot_of "$2" "$3")
		if [[ $4 == any-nospan ]]; then
			[[ $got == noslot* || $got == "thread=live valid=1 nospan" ]] && { ok "$1 ($got)"; return; }
		elif [[ $got == "$4" ]]; then
			ok "$1"
			return
		fi
		sleep 0.1 # a pool thread may still be on its way back to the pool
	done
	bad "$1: tid $3"
	echo "     want: $4"
	echo "     got:  $got"
}

check_header() { # label pid cond
	local field=${3%%[>=]*} op val
	op=$(sed -E 's/^[a-z_]+([>=]+).*/\1/' <<<"$3")
	val=${3##*[>=]}
	local got
	got=$("$CTXDUMP" "$2" | head -1 | grep -oE "(^| )$field=[0-9]+" | cut -d= -f2)
	if [[ -z $got ]]; then
		bad "$1: no $field in ctxdump header"
	elif [[ $op == "=" && $got -eq $val ]] || [[ $op == ">=" && $got -ge $val ]]; then
		ok "$1 ($field=$got)"
	else
		bad "$1: $field=$got, want $op$val"
	fi
}

mappings() { grep -c "/memfd:spanprof-ctx" "/proc/$1/maps" 2>/dev/null; }

# run_app LABEL DLL "ENV=..."... -- SCENARIO...
run_app() {
	local label=$1 dll=$2 pid="" line rc done=0 first=1
	shift 2
	local envs=()
	while [[ $# -gt 0 && $1 != -- ]]; do envs+=("$1"); shift; done
	shift
	echo "== $label"
	coproc APP { exec env "${envs[@]}" dotnet "$dll" "$@" 2>"$TMP/stderr"; }
	local app_pid=$APP_PID app_in app_out
	# Own copies of the pipe ends: bash drops APP[] as soon as the app exits.
	exec {app_in}<&"${APP[0]}" {app_out}>&"${APP[1]}"
	while IFS= read -r -t 180 line <&"$app_in"; do
		case $line in
		"INFO mode="*)
			pid=$(sed -E 's/.* pid=([0-9]+).*/\1/' <<<"$line")
			echo "     $line" ;;
		CHECK*)
			local name tid want
			name=$(awk '{print $2}' <<<"$line")
			tid=$(sed -E 's/.* tid=([0-9]+) .*/\1/' <<<"$line")
			want=${line#* want=}
			if [[ $first == 1 ]]; then
				first=0
				[[ $(mappings "$pid") == 1 ]] && ok "$label: one table mapping" ||
					bad "$label: $(mappings "$pid") table mappings"
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
		"SELF "*" ok"*) ok "$label/${line#SELF }" ;;
		SELF*) bad "$label/${line#SELF }" ;;
		DONE) done=1 ;;
		*) echo "     $line" ;;
		esac
	done
	exec {app_out}>&- {app_in}<&-
	wait "$app_pid"
	rc=$?
	[[ $done == 1 && $rc == 0 ]] && ok "$label: app finished" || bad "$label: app rc=$rc done=$done"
	[[ -d $TMP ]] || bad "$label: work dir $TMP vanished (something else cleaned it)"
	if [[ -s $TMP/stderr ]]; then
		sed 's/^/     stderr: /' "$TMP/stderr"
	fi
}

forged_table() { # label expect-exit python-header-expr
	local pyfd ppid="" rc out
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
	read -r -t 20 ppid <&"$pyfd"
	if [[ -z $ppid ]]; then
		bad "$1: forger did not start"
		exec {pyfd}<&-
		return
	fi
	out=$("$CTXDUMP" "$ppid" 2>&1)
	rc=$?
	kill "$ppid" 2>/dev/null
	exec {pyfd}<&-
	[[ $rc == "$2" ]] && ok "$1 (exit $rc)" || { bad "$1: ctxdump exit $rc, want $2"; echo "$out"; }
}

for tool in dotnet python3 "${CC:-cc}"; do
	command -v "$tool" >/dev/null || { echo "skip: $tool not found"; exit 77; }
done
if ! build; then
	echo "0 passed, 1 failed"
	exit 1
fi
export SPANPROF_HOOK_VERBOSE=1

run_app "startup-hook" "$PLAIN" "DOTNET_STARTUP_HOOKS=$HOOK_DLL" --
run_app "reference" "$REF" "SPANPROF_UNUSED=1" --
run_app "both" "$REF" "DOTNET_STARTUP_HOOKS=$HOOK_DLL" -- nested async twocopies "$HOOK_DLL"
grep -q "forwarding" "$TMP/stderr" && ok "both: second copy forwards to the owner" ||
	bad "both: no forwarding message from the second copy"
run_app "startup-hook+second-copy" "$PLAIN" "DOTNET_STARTUP_HOOKS=$HOOK_DLL" -- nested twocopies "$BUILD/apps/hookcheck-ref/SpanProf.Hook.dll"
run_app "startup-variant" "$PLAIN" "DOTNET_STARTUP_HOOKS=$STARTUP_DLL" -- nested async labels-nospan
run_app "startup-variant-9.9+reference-1.0" "$REF" "DOTNET_STARTUP_HOOKS=$BUILD/hook-skew/SpanProf.Hook.Startup.dll" -- nested async nested-labels
grep -q "forwarding" "$TMP/stderr" && ok "startup-variant+reference: the app's copy forwards to the startup copy" ||
	bad "startup-variant+reference: no forwarding message"
run_app "small-table" "$PLAIN" "DOTNET_STARTUP_HOOKS=$HOOK_DLL" "SPANPROF_MAX_THREADS=16" -- churn overflow
run_app "pyroscope" "$PLAIN" "DOTNET_STARTUP_HOOKS=$HOOK_DLL" "SPANPROF_PYROSCOPE_PROFILE_ID=1" -- pyroscope nested

PAUSED_MAPPINGS=x
run_app "fault-memfd" "$PLAIN" "DOTNET_STARTUP_HOOKS=$HOOK_DLL" "SPANPROF_HOOK_FAULT=memfd" -- pause label-noop
[[ $PAUSED_MAPPINGS == 0 ]] && ok "fault-memfd: no mapping" || bad "fault-memfd: $PAUSED_MAPPINGS mappings"
[[ $(grep -c "spanprof-hook: disabled: memfd_create failed" "$TMP/stderr") == 1 ]] &&
	ok "fault-memfd: one stderr line" || bad "fault-memfd: stderr: $(cat "$TMP/stderr")"
run_app "fault-mmap-quiet" "$REF" "SPANPROF_HOOK_FAULT=mmap" "SPANPROF_HOOK_QUIET=1" -- label-noop pause
[[ ! -s $TMP/stderr ]] && ok "fault-mmap-quiet: silent" || bad "fault-mmap-quiet: stderr not empty"
[[ $PAUSED_MAPPINGS == 0 ]] && ok "fault-mmap-quiet: no mapping" || bad "fault-mmap-quiet: $PAUSED_MAPPINGS mappings"

echo "== ctxdump on tables that are not ours"
sleep 30 &
sleeper=$!
"$CTXDUMP" "$sleeper" >/dev/null 2>&1
rc=$?
kill "$sleeper"
[[ $rc == 3 ]] && ok "ctxdump: unhooked process (exit 3)" || bad "ctxdump: unhooked process exit $rc"
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

echo "$pass passed, $fail failed"
[[ $fail == 0 ]]
