#!/usr/bin/env bash
# errors.sh: every setup error gives one line naming the cause and the fix, and exit code 2.
. "$(dirname "$0")/lib.sh"
need_root

# expect_error NAME PATTERN CMD...: exit code 2, exactly one line on stderr matching PATTERN.
expect_error() {
	local name=$1 pat=$2 rc=0
	shift 2
	"$@" > "$TMP/out" 2> "$TMP/err" || rc=$?
	[ "$rc" = 2 ] || { cat "$TMP/err"; fail "$name: exit code $rc, want 2"; }
	[ "$(wc -l < "$TMP/err")" = 1 ] || { cat "$TMP/err"; fail "$name: want one line on stderr"; }
	grep -Eq "$pat" "$TMP/err" || { cat "$TMP/err"; fail "$name: message does not match /$pat/"; }
	pass "$name: $(cat "$TMP/err")"
}

expect_error "not root" 'CAP_BPF.*root' \
	setpriv --reuid=65534 --regid=65534 --clear-groups "$SPANPROF" record -d 1 -o "$TMP/a.pb.gz"
expect_error "root without CAP_BPF/CAP_PERFMON" 'missing CAP_BPF and CAP_PERFMON' \
	setpriv --bounding-set=-bpf,-perfmon,-sys_admin "$SPANPROF" record -d 1 -o "$TMP/a.pb.gz"
# A kernel without BTF, as seen from a mount namespace where /sys/kernel/btf is empty.
expect_error "no BTF" 'no BTF.*CONFIG_DEBUG_INFO_BTF' \
	unshare --mount sh -c "mount -t tmpfs none /sys/kernel/btf && exec '$SPANPROF' record -d 1 -o '$TMP/a.pb.gz'"
pid=$(($(cat /proc/sys/kernel/pid_max) - 1))
while [ -e "/proc/$pid" ]; do pid=$((pid - 1)); done
expect_error "missing pid" "no process with pid $pid" "$SPANPROF" record -p "$pid" -d 1 -o "$TMP/a.pb.gz"
expect_error "bad pid" 'bad pid' "$SPANPROF" record -p abc -d 1
expect_error "unwritable output (no such dir)" 'cannot write /nonexistent-dir/x.pb.gz.*-o' \
	"$SPANPROF" record -d 1 -o /nonexistent-dir/x.pb.gz
expect_error "unwritable output (read-only fs)" 'cannot write /proc/spanprof.pb.gz' \
	"$SPANPROF" record -d 1 -o /proc/spanprof.pb.gz
expect_error "output is a directory" 'is a directory' "$SPANPROF" record -d 1 -o "$TMP"
expect_error "zero frequency" 'bad frequency' "$SPANPROF" record -F 0 -d 1
expect_error "garbage frequency" 'bad frequency' "$SPANPROF" record -F 99x -d 1
expect_error "frequency above the kernel limit" 'perf_event_max_sample_rate' "$SPANPROF" record -F 1000000 -d 1
expect_error "bad duration" 'bad duration' "$SPANPROF" record -d -3
expect_error "unknown format" 'unknown format' "$SPANPROF" record --format xml
expect_error "unknown option" 'bad option' "$SPANPROF" record --frobnicate
expect_error "unknown command" 'unknown command' "$SPANPROF" frobnicate
[ ! -e /nonexistent-dir ] || fail "created a directory"

"$SPANPROF" --help > "$TMP/help.txt" && grep -q 'record' "$TMP/help.txt" || fail "--help"
"$SPANPROF" record --help > "$TMP/record-help.txt" && grep -q -- '--format' "$TMP/record-help.txt" || fail "record --help"
"$SPANPROF" --version | grep -Eq '^spanprof ' || fail "--version"
pass "--help, record --help, --version"

# The agent: bad configuration is one line naming the fix and exit code 2, before anything runs.
expect_error "agent: nowhere to send" 'nowhere to send profiles' "$SPANPROF" agent
expect_error "agent: bad Pyroscope URL" 'bad Pyroscope URL' "$SPANPROF" agent --pyroscope-url ftp://x
expect_error "agent: bad URL from the environment" 'bad Pyroscope URL' \
	env SPANPROF_PYROSCOPE_URL=pyroscope:4040 "$SPANPROF" agent
expect_error "agent: bad switch from the environment" 'SPANPROF_OFF_CPU' env SPANPROF_OFF_CPU=maybe "$SPANPROF" agent --output-dir "$TMP/ad"
expect_error "agent: unreadable password file" 'cannot read /nonexistent-secret' \
	"$SPANPROF" agent --pyroscope-url http://127.0.0.1:1 --pyroscope-user u --pyroscope-password-file /nonexistent-secret
expect_error "agent: password without user" 'needs --pyroscope-user' \
	env SPANPROF_PYROSCOPE_PASSWORD=x "$SPANPROF" agent --pyroscope-url http://127.0.0.1:1
expect_error "agent: bad header" 'bad header' "$SPANPROF" agent --pyroscope-header nocolon
expect_error "agent: bad metrics address" 'metrics|address' \
	"$SPANPROF" agent --output-dir "$TMP/ad" --metrics-addr not-an-address
expect_error "agent: unwritable output dir" 'output-dir' "$SPANPROF" agent --output-dir /proc/x
expect_error "agent: bad interval" 'bad interval' "$SPANPROF" agent --interval 0
expect_error "agent: not root" 'CAP_BPF.*root' \
	setpriv --reuid=65534 --regid=65534 --clear-groups "$SPANPROF" agent --output-dir "$TMP/ad"
# (to a file: the text is longer than a pipe write, and grep -q would end it early)
"$SPANPROF" agent --help > "$TMP/agent-help.txt" && grep -q -- '--pyroscope-url' "$TMP/agent-help.txt" || fail "agent --help"
pass "agent: bad configuration, one line and exit code 2 each"
