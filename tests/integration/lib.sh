# lib.sh: the harness of the integration tests, sourced first by every tests/integration/*.sh.
# Real kernel, real BPF, real processes.
#
# A test fails fast: `set -euo pipefail`, and `fail MSG` exits 1 with the message; any other
# command that fails outside a condition ends the test too, and the ERR trap says which one.
# `skip MSG` exits 77, which tests/run-all.sh reports as skipped (need_root, need_cmd). `pass MSG`
# and `note MSG` print; at a successful exit the number of passes is printed.
#
# Cleanup happens only here, in the EXIT trap: every process a test starts goes into PIDS_TO_KILL
# through `register` (spawn, start_app and record_bg do that) and every file it writes goes under
# $TMP. At exit the processes still running are stopped (see stop), the perf maps the .NET runtime
# left for them are removed, and $TMP is removed.
#
# The steps a test is made of: start_app (an app, ready), record (spanprof and its report),
# decode (pprof -> JSON), query / field / count_samples (numbers from it), check_pprof (two
# readers agree), check (one named assertion).
set -eEuo pipefail
# A command that ends the test without `fail` still says which one (-E: also inside functions).
# Only the test's own shell reports: a subshell's failure shows as the command that ran it, and
# a process substitution's end (a forger killed on purpose) is no failure.
trap '_rc=$?; if [ "$BASHPID" = "$$" ]; then echo "FAIL: ${BASH_SOURCE[0]##*/}:$LINENO: $BASH_COMMAND (exit $_rc)" >&2; fi' ERR

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SPANPROF=$BUILD/spanprof
# The same program with the test-only switches compiled in (SPANPROF_TEST_REMOTE_FSTYPES,
# SPANPROF_TEST_CTX_EVENTS, SPANPROF_BPF_VARIANT; `make tools`): tests that set them run this one.
SPANPROF_TEST=$BUILD/spanprof-test
TOOLS=$ROOT/tests/tools
NSRUN=$ROOT/tests/integration/nsrun.sh
GO=/usr/lib/go-1.19/bin/go
HOTCHAIN=$BUILD/apps/native/hotchain	# from `make tools`
FORGED=$BUILD/apps/native/forged_table
SVC=$BUILD/apps/SpanService/SpanService.dll	# from `make apps`
LOADGEN=$BUILD/apps/LoadGen/LoadGen.dll
HOOK=$BUILD/hook/SpanProf.Hook.dll
# The hook's test build (`make tools`): the only one that reads SPANPROF_HOOK_FAULT.
TESTHOOK=$BUILD/testhook/hook/SpanProf.Hook.dll
TEST=$(basename "$0" .sh)
PIDS_TO_KILL=()
declare -A STARTED_AT=()
PASSED=0

# ---- output and outcome ------------------------------------------------------------------------
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
pass() { echo "ok: $*"; PASSED=$((PASSED + 1)); }
note() { echo "  $*"; }

# check DESCRIPTION CMD...: CMD must succeed; passes DESCRIPTION or fails with it.
check() {
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}

# Compare floating-point numbers: ge A B -> A >= B. Both must be numbers: an empty or non-numeric
# value (a metric that is missing, a field the report no longer prints) fails the comparison and
# says so, instead of comparing as 0.
is_number() { [[ $1 =~ ^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$ ]]; }
_cmp() {
	local a=$1 op=$2 b=$3
	is_number "$a" && is_number "$b" || { echo "  not a number: '$a' $op '$b'" >&2; return 1; }
	awk -v a="$a" -v b="$b" "BEGIN { exit !(a $op b) }"
}
ge() { _cmp "$1" '>=' "$2"; }
le() { _cmp "$1" '<=' "$2"; }

# pprof_has TEXT FILE.pb.gz: the profile's strings contain TEXT (decompressed first: a grep of the
# gzip bytes could never find it). Fails, with the cause, on a file that is not gzip.
pprof_has() {
	local raw
	raw=$(mktemp)
	zcat -- "$2" > "$raw" || { rm -f "$raw"; fail "pprof_has: $2 is not a gzip file"; }
	grep -aqF -- "$1" "$raw"
	local rc=$?
	rm -f "$raw"
	return $rc
}

# ---- preconditions -----------------------------------------------------------------------------
need_root() { [ "$(id -u)" = 0 ] || skip "needs root${1:+ ($1)}"; }
need_cmd() { local c; for c; do command -v "$c" > /dev/null || skip "$c not found"; done; }
need_built() { local f; for f; do [ -e "$f" ] || fail "$f missing: run make apps tools"; done; }
# need_node_modules DIR MODULE...: DIR's npm packages (npm ci from its lock file) when one of the
# MODULEs is missing; the test is skipped when npm cannot install them.
need_node_modules() {
	local dir=$1 m
	shift
	for m; do
		[ -d "$dir/node_modules/$m" ] && continue
		command -v npm > /dev/null || skip "npm not found ($dir needs npm ci)"
		npm ci --prefix "$dir" --no-audit --no-fund > "$TMP/npm.log" 2>&1 ||
			{ cat "$TMP/npm.log"; skip "npm ci in $dir failed"; }
		return 0
	done
}

# ---- waiting -----------------------------------------------------------------------------------
# poll SECS CMD...: run CMD every 0.1 s until it succeeds (status 0) or SECS seconds of tries
# have passed (status 1).
poll() {
	local n=$(($1 * 10))
	shift
	for _ in $(seq "$n"); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# catches_usr1 PID: whether PID has its SIGUSR1 handler in place (record pauses on it; before that
# the signal would end it).
catches_usr1() {
	local m
	m=$(awk '/^SigCgt:/ { print $2 }' "/proc/$1/status" 2> /dev/null)
	[ -n "$m" ] && (((16#$m & 512) != 0))	# bit 9: SIGUSR1
}

# wait_for SECS WHAT CMD...: poll CMD until it succeeds; after SECS seconds, fail naming WHAT
# ("timed out after 30s waiting for WHAT").
wait_for() {
	local secs=$1 what=$2
	shift 2
	poll "$secs" "$@" || fail "timed out after ${secs}s waiting for $what"
}

# wait_exit SECS PID [WHAT]: wait for PID (a child of the test, already told to stop) to exit, at
# most SECS seconds; returns its exit status. Past SECS it is killed and the test fails naming WHAT
# (default "process PID"): a hang never outlasts the test's deadline unnamed.
wait_exit() {
	local secs=$1 pid=$2 what=${3:-process $2}
	poll "$secs" gone "$pid" ||
		{ kill -KILL "$pid" 2>/dev/null || true; fail "$what: still running ${secs}s after it was told to stop"; }
	wait "$pid"
}

# cpu_ticks PID: the CPU PID has used (utime + stime, clock ticks), or nothing once it is gone.
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null; }

# wait_busy SECS PID TICKS [WHAT]: until PID has used TICKS more clock ticks (1/100 s) of CPU from
# now: it runs its hot code (warmed up, under load), an event where a sleep would be a guess.
# Fails naming WHAT after SECS seconds, or at once when PID is gone.
wait_busy() {
	local secs=$1 pid=$2 ticks=$3 what=${4:-process $2 busy} from
	from=$(cpu_ticks "$pid") || true
	[ -n "$from" ] || fail "$what: process $pid is gone"
	_busy() { local t; t=$(cpu_ticks "$pid") || true; [ -n "$t" ] || fail "$what: process $pid exited"; [ "$t" -ge $((from + ticks)) ]; }
	wait_for "$secs" "$what ($ticks ticks of CPU)" _busy
}

# has_line FILE PATTERN: FILE exists and has a line matching PATTERN (grep -a: binary files too).
has_line() { grep -aqs -e "$2" "$1"; }

# wait_for_line FILE PATTERN [SECS=30]: until FILE has a line matching PATTERN, or fail showing it.
wait_for_line() {
	local file=$1 pat=$2 secs=${3:-30}
	poll "$secs" has_line "$file" "$pat" && return 0
	cat "$file" >&2 2>/dev/null || true
	fail "timed out after ${secs}s waiting for '$pat' in $file"
}

# alive PID: the process exists, is not a zombie and, if it was registered, is still the one
# registered (same start time: pids wrap, at 32768 by default).
alive() {
	local st
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	st=${st##*) }
	set -- "$1" $st	# $2 is the state (field 3), $21 the start time (field 22)
	[ "$2" != Z ] || return 1
	[ -z "${STARTED_AT[$1]+set}" ] || [ "${STARTED_AT[$1]}" = "${21}" ]
}
gone() { ! alive "$1"; }

# ---- processes ---------------------------------------------------------------------------------
# stop [-t SECS] PID...: SIGTERM, up to SECS (5) seconds for all to exit, then SIGKILL; reaps
# those that are our children. Without -t, a process that is pid 1 of its own pid namespace gets
# SIGKILL after 1 s: the kernel drops signals whose action is the default there, and the .NET
# runtime answers SIGTERM by re-raising it with the default action, so it never lands.
stop() {
	local secs=5 fixed="" live=() inits=() p i
	if [ "${1:-}" = -t ]; then secs=$2; fixed=1; shift 2; fi
	for p; do
		alive "$p" || continue
		live+=("$p")
		if [ -z "$fixed" ] && ns_init "$p"; then inits+=("$p"); fi
		kill -TERM "$p" 2>/dev/null || true
	done
	[ ${#live[@]} -gt 0 ] || return 0
	for i in $(seq $((secs * 10))); do
		all_gone "${live[@]}" && break
		if [ "$i" = 10 ]; then
			for p in "${inits[@]}"; do
				if alive "$p"; then kill -KILL "$p" 2>/dev/null || true; fi
			done
		fi
		sleep 0.1
	done
	for p in "${live[@]}"; do
		if alive "$p"; then kill -KILL "$p" 2>/dev/null || true; fi
	done
	for p in "${live[@]}"; do wait "$p" 2>/dev/null || true; done
}
all_gone() { local p; for p; do alive "$p" && return 1; done; return 0; }
# ns_init PID: PID is pid 1 of a pid namespace below ours.
ns_init() { awk '/^NSpid:/ { exit !(NF > 2 && $NF == 1) }' "/proc/$1/status" 2>/dev/null; }

# register PID...: stopped at exit (PIDS_TO_KILL), and remembered by start time so that a pid
# reused by another process after ours exited is left alone.
register() {
	local p st
	for p; do
		st=$(cat "/proc/$p/stat" 2>/dev/null) || st=""
		st=${st##*) }
		set -- $st
		STARTED_AT[$p]=${20:-gone}
		PIDS_TO_KILL+=("$p")
	done
}

# spawn OUT CMD...: CMD in the background, stdout and stderr to OUT; SPAWNED is its pid.
spawn() {
	local out=$1
	shift
	"$@" > "$out" 2>&1 &
	SPAWNED=$!
	register "$SPAWNED"
}

# start_app [--ns] [--ready PATTERN | --ready-file FILE | --pid-line] [--timeout SECS] OUT CMD...
#   Starts CMD (a .NET app or a test program) with spawn and waits until it is ready, or fails
#   showing OUT: until a line of OUT matches PATTERN ('^ready', the test apps' line once their hot
#   loop runs), until FILE is not empty (--ready-file), or until OUT has a line that is a pid
#   (--pid-line: the native test programs print their pid once set up). SECS defaults to 60.
#   APP_PID is the app's pid (with --pid-line, the one it printed). With --ns, CMD runs through
#   nsrun.sh as pid 1 of its own pid and mount namespaces with a private /tmp; APP_PID is its pid
#   on the host and APP_LAUNCHER nsrun's unshare (NSRUN_SETUP passes through).
start_app() {
	local ns="" ready='^ready' ready_file="" pid_line="" secs=60 out
	while :; do
		case $1 in
		--ns) ns=1; shift ;;
		--ready) ready=$2; shift 2 ;;
		--ready-file) ready_file=$2; shift 2 ;;
		--pid-line) pid_line=1; ready='^[0-9][0-9]*$'; shift ;;
		--timeout) secs=$2; shift 2 ;;
		*) break ;;
		esac
	done
	out=$1
	shift
	if [ -n "$ns" ]; then
		spawn "$out" "$NSRUN" "$@"
	else
		spawn "$out" "$@"
	fi
	APP_LAUNCHER=$SPAWNED
	APP_PID=$SPAWNED
	if [ -n "$ready_file" ]; then
		poll "$secs" test -s "$ready_file" || { cat "$out" >&2; fail "$out: not ready ($ready_file empty) after ${secs}s"; }
	else
		wait_for_line "$out" "$ready" "$secs"
	fi
	if [ -n "$pid_line" ]; then
		APP_PID=$(grep -m1 -x '[0-9][0-9]*' "$out")
	fi
	if [ -n "$ns" ]; then
		APP_PID=""
		for _ in $(seq 100); do
			APP_PID=$(pgrep -P "$APP_LAUNCHER" | head -1 || true)
			[ -n "$APP_PID" ] && break
			sleep 0.1
		done
		[ -n "$APP_PID" ] || { cat "$out" >&2; fail "$out: no child of unshare"; }
		register "$APP_PID"
	fi
}

# ---- spanprof ----------------------------------------------------------------------------------
# record NAME.EXT [ARGS...]: spanprof record ARGS... -o $TMP/NAME.EXT, its report (stdout) in
# $TMP/NAME.txt; fails, showing the report, unless spanprof exits 0.
record() {
	local out=$1 rc=0
	shift
	"$SPANPROF" record "$@" -o "$TMP/$out" > "$TMP/${out%%.*}.txt" || rc=$?
	[ "$rc" = 0 ] || { cat "$TMP/${out%%.*}.txt"; fail "spanprof record $* -o $out: exit code $rc"; }
}

# record_bg NAME.EXT [ARGS...]: the same in the background; RECORD_PID is spanprof's pid. Its
# stderr goes to RECORD_ERR ($TMP/NAME.err), shown when wait_record fails.
# wait_sampling [SECS=60]: until the recording samples (needs -v among ARGS: its "sampling ... Hz
# on N CPUs" log line comes once BPF is attached and the processes already running were scanned).
# wait_record [SECS=120]: wait for it, at most SECS seconds (then it is killed); fails, showing the
# report, unless it exits 0.
record_bg() {
	local out=$1
	shift
	RECORD_REPORT=$TMP/${out%%.*}.txt
	RECORD_ERR=$TMP/${out%%.*}.err
	"$SPANPROF" record "$@" -o "$TMP/$out" > "$RECORD_REPORT" 2> "$RECORD_ERR" &
	RECORD_PID=$!
	register "$RECORD_PID"
}
wait_sampling() { wait_for_line "$RECORD_ERR" ' sampling .* Hz on ' "${1:-60}"; }
wait_record() {
	local rc=0 secs=${1:-120}
	poll "$secs" gone "$RECORD_PID" || {
		kill -KILL "$RECORD_PID" 2>/dev/null || true
		cat "$RECORD_REPORT"; tail -20 "$RECORD_ERR" >&2
		fail "spanprof record (pid $RECORD_PID): still running after ${secs}s"
	}
	wait "$RECORD_PID" || rc=$?
	[ "$rc" = 0 ] || { cat "$RECORD_REPORT"; tail -20 "$RECORD_ERR" >&2; fail "spanprof record (pid $RECORD_PID): exit code $rc"; }
}

# ---- profiles ----------------------------------------------------------------------------------
# The profile as JSON through the independent pprof-format decoder.
# It installs the decoder from the lock file when no earlier test has, so any test runs alone.
pprof_json() {
	[ -f "$TOOLS/node_modules/pprof-format/package.json" ] ||
		(cd "$TOOLS" && npm ci --no-audit --no-fund --silent) >&2 || fail "npm ci in $TOOLS failed"
	node "$TOOLS/pprof-json.js" "$1"
}

# decode PROFILE: PROFILE.pb.gz decoded by pprof_json into PROFILE.json ($TMP/a.pb.gz -> $TMP/a.json).
decode() { pprof_json "$1" > "${1%.pb.gz}.json" || fail "pprof-format could not decode $1"; }

# check_pprof PROFILE MESSAGE: go tool pprof and pprof-format both read PROFILE and agree
# (tests/tools/check-pprof.sh), or fail with MESSAGE showing what check-pprof said.
check_pprof() {
	"$TOOLS/check-pprof.sh" "$1" > "$TMP/check-pprof.txt" || { cat "$TMP/check-pprof.txt"; fail "$2"; }
}

# query.js SUBCOMMAND JSON-FILE ARGS...: stack statistics over a decoded profile (one JSON object).
query() { node "$ROOT/tests/integration/query.js" "$@"; }

# field JSON KEY: one field of a JSON object (as printed by query and spancheck.js).
field() { node -pe "($1).$2"; }

# offcpu_count REPORT LABEL: the number after LABEL in the report's off-CPU lines ("stacks left
# the cache", "no per-thread record", ...); empty when the lines or the label are missing.
offcpu_count() { grep '^  off-CPU' "$1" | sed -n "s/.*$2 \([0-9][0-9]*\).*/\1/p"; }

# record_offcpu NAME [ARGS...]: record NAME.folded with --off-cpu --value off-cpu and ARGS;
# OFFCPU_LINES are its report's off-CPU lines ("  off-CPU: ...", "  off-CPU places: ", ...).
record_offcpu() {
	local name=$1
	shift
	record "$name.folded" "$@" --off-cpu --value off-cpu
	grep -q '^  off-CPU: ' "$TMP/$name.txt" || { cat "$TMP/$name.txt"; fail "no off-CPU line in the report"; }
	OFFCPU_LINES=$(grep '^  off-CPU' "$TMP/$name.txt")
}

# cgroup_v2_root: where the cgroup v2 hierarchy is mounted, alone (/sys/fs/cgroup) or beside v1
# (systemd's hybrid layout, /sys/fs/cgroup/unified); nothing when there is none.
cgroup_v2_root() {
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then echo /sys/fs/cgroup
	elif [ -f /sys/fs/cgroup/unified/cgroup.procs ]; then echo /sys/fs/cgroup/unified; fi
}

# test_cgroups NAME...: a cgroup v2 cgroup for each NAME under CGBASE (CGROOT/spanprof-test.PID),
# emptied and removed at exit; skips the test where there is no cgroup v2 or it cannot create one.
# in_cgroup NAME CMD...: run CMD in CGBASE/NAME, as the same process (call it in a subshell, or as
# start_app's command).
test_cgroups() {
	local g
	CGROOT=$(cgroup_v2_root)
	[ -n "$CGROOT" ] || skip "no cgroup v2 hierarchy"
	CGBASE=$CGROOT/spanprof-test.$$
	CGNAMES=("$@")
	for g; do mkdir -p "$CGBASE/$g" || skip "cannot create a cgroup"; done
	at_exit remove_test_cgroups
}
remove_test_cgroups() {
	local g p
	for g in "${CGNAMES[@]}"; do
		for p in $(cat "$CGBASE/$g/cgroup.procs" 2> /dev/null); do
			echo "$p" > "$CGROOT/cgroup.procs" 2> /dev/null || true
		done
	done
	find "$CGBASE" -depth -type d -exec rmdir {} \; 2> /dev/null || true
}
in_cgroup() {
	local g=$1
	shift
	exec sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CGBASE/$g" "$@"
}

# offcpu_starved TRUTH SCENARIO: for a failure message, why tests/apps/OffCpu's own measure of a
# scenario's blocking may be off: its thread waited for a CPU most of the scenario (.NET's waits
# spin and yield before they block, and on a busy machine a yielding thread waits its turn: it is
# runnable, not blocked, and the app measures little blocking). Nothing otherwise.
offcpu_starved() {
	node -e '
const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).scenarios[process.argv[2]];
if (s && s.wall_ns > 0 && s.thread_runq_ns > s.wall_ns / 2)
  process.stdout.write(`; its thread in the app waited for a CPU ${Math.round(100 * s.thread_runq_ns / s.wall_ns)} % ` +
    "of the scenario: the machine was too busy for the app to measure its blocking");
' "$1" "$2"
}

# count_samples JSON-FILE [--pid PID]: the number of samples (of PID).
count_samples() {
	local r
	r=$(query total "$@")
	field "$r" total
}

# matrix_row CASE STATUS [KEY=VALUE...]: one cell of make test-matrix (tests/matrix.sh): printed as
# "matrix: {json}" and, when MATRIX_ROWS names a file, appended to it as one JSON line, with the
# shape (MATRIX_SHAPE, default "fd/10": framework-dependent on the installed runtime) and the test.
# STATUS: pass, fail, or not-run (with why=...). Numeric values stay numbers.
matrix_row() {
	local row
	row=$(node -e '
const [shape, test, kase, status, ...kv] = process.argv.slice(1);
const r = { shape, test, case: kase, status };
for (const x of kv) {
  const i = x.indexOf("=");
  const k = x.slice(0, i), v = x.slice(i + 1);
  r[k] = v !== "" && !isNaN(Number(v)) ? Number(v) : v;
}
console.log(JSON.stringify(r));' "${MATRIX_SHAPE:-fd/10}" "$TEST" "$@")
	echo "matrix: $row"
	if [ -n "${MATRIX_ROWS:-}" ]; then echo "$row" >> "$MATRIX_ROWS"; fi
}

# perfmaps_preempted PID: true when the process's perf map or jitdump exists before spanprof asked
# for it: another tool (another helper's spanprof agent, host-wide) turned them on first, so a
# "turned on at run time" case cannot be run on it.
perfmaps_preempted() {
	local ns
	ns=$(awk '/^NStgid:/ { print $NF }' "/proc/$1/status" 2>/dev/null || echo "$1")
	[ -e "/proc/$1/root/tmp/perf-$ns.map" ] || [ -e "/proc/$1/root/tmp/jit-$ns.dump" ]
}

# ---- setup and cleanup -------------------------------------------------------------------------
# at_exit CMD: run CMD (a function name) at exit, after the test's processes are stopped.
AT_EXIT=()
at_exit() { AT_EXIT+=("$1"); }

# world_dir: WORLD_DIR, a directory under /tmp that another user can reach (mode 711), removed at
# exit. For what runs as nobody: $TMP lies in the checkout, whose parents (a clone in a 0700
# directory) need not be open to other users.
world_dir() {
	WORLD_DIR=$(mktemp -d /tmp/spanprof-world.XXXXXX)
	chmod 711 "$WORLD_DIR"
	at_exit rm_world_dir
}
rm_world_dir() { rm -rf "$WORLD_DIR"; }

cleanup() {
	local rc=$? p
	trap - EXIT ERR
	set +e
	stop "${PIDS_TO_KILL[@]}"
	for p in "${AT_EXIT[@]}"; do "$p"; done
	# The .NET runtime never removes the perf maps of the apps we started.
	for p in "${PIDS_TO_KILL[@]}"; do
		[ -e "/proc/$p" ] || rm -f "/tmp/perf-$p.map" "/tmp/jit-$p.dump"
	done
	[ -z "${TMP:-}" ] || [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
	[ "$rc" != 0 ] || echo "$TEST: $PASSED passed"
	exit "$rc"
}
trap cleanup EXIT

# Under build/, not /tmp: tests run apps in mount namespaces with a private /tmp, and their files
# must stay visible from the host.
mkdir -p "$BUILD/tmp" 2>/dev/null || true
TMP=$(mktemp -d "$BUILD/tmp/$TEST-XXXXXX" 2>/dev/null) ||
	fail "cannot create a work dir in $BUILD/tmp as uid $(id -u) (run as the user who built, or as root)"
