#!/usr/bin/env bash
# kernel-hooks.sh: spanprof hooks the kernel only where its events happen (issue 30). While
# `spanprof agent` and a host-wide `spanprof record` run, none of their BPF programs sits on a
# syscall tracepoint (raw sys_enter / sys_exit, or syscalls:*): one such program sends every task
# of the node through the syscall slow path. Their exec program is there (so the listing works).
# On a kernel with the task_prctl_unknown tracepoint (6.13+) the span-table source is the hook's
# prctl announcement. SPANPROF_TEST_CTX_EVENTS=none (no span-table source, as on an older kernel
# without ftrace; read by the test build, build/spanprof-test, only): still no syscall tracepoint, and the report says span tables are polled.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd bpftool
need_built "$SPANPROF_TEST"

# hooks PID: "fd_type:tracepoint-or-name" of every program attached through PID's fds.
hooks() {
	bpftool perf -j | node -e '
		const pid = Number(process.argv[1]);
		const all = JSON.parse(require("fs").readFileSync(0, "utf8"));
		for (const h of all.filter((h) => h.pid === pid))
			console.log(`${h.fd_type}:${h.tracepoint || h.func || h.filename || ""}`);
	' "$1"
}

# check_hooks NAME PID: PID's programs include the exec tracepoint and no syscall tracepoint.
check_hooks() {
	local name=$1 pid=$2 list bad
	list=$(hooks "$pid")
	note "$name (pid $pid): $(tr '\n' ' ' <<<"$list")"
	grep -qx 'raw_tracepoint:sched_process_exec' <<<"$list" ||
		fail "$name: no sched_process_exec program found for pid $pid (listing broken?)"
	bad=$(grep -E ':(sys_enter|sys_exit|raw_syscalls:.*|syscalls:.*)$' <<<"$list" || true)
	[ -z "$bad" ] || fail "$name: a syscall tracepoint is attached: $(tr '\n' ' ' <<<"$bad")"
	if [ "${3:-}" = announce ] && [ -n "$PRCTL_TP" ]; then
		grep -qx 'raw_tracepoint:task_prctl_unknown' <<<"$list" ||
			fail "$name: the kernel has task_prctl_unknown but no program is on it"
	fi
}
# Does this kernel have the tracepoint on unknown prctl options (Linux 6.13+)?
PRCTL_TP=$(bpftool btf dump file /sys/kernel/btf/vmlinux format raw 2>/dev/null |
	grep -m1 -o "'btf_trace_task_prctl_unknown'" || true)

# 1. The agent.
mkdir -p "$TMP/agent"
"$SPANPROF" agent -v --output-dir "$TMP/agent" > "$TMP/agent.log" 2>&1 &
agent=$!
register "$agent"
wait_for_line "$TMP/agent.log" 'agent sampling' 60
check_hooks agent "$agent" announce
stop "$agent"
pass "agent: no syscall tracepoint"

# 2. A host-wide recording.
"$SPANPROF" record -v -d 60 -o "$TMP/rec.pb.gz" > "$TMP/rec.txt" 2> "$TMP/rec.err" &
rec=$!
register "$rec"
wait_for_line "$TMP/rec.err" ' sampling .* Hz on ' 60
check_hooks record "$rec" announce
kill -INT "$rec"
wait "$rec" || { cat "$TMP/rec.txt"; fail "record exited non-zero"; }
pass "record: no syscall tracepoint"

# 3. Without a span-table source: the same, and the report names the polling.
SPANPROF_TEST_CTX_EVENTS=none "$SPANPROF_TEST" record -v -d 60 -o "$TMP/nofexit.pb.gz" > "$TMP/nofexit.txt" \
	2> "$TMP/nofexit.err" &
rec=$!
register "$rec"
wait_for_line "$TMP/nofexit.err" ' sampling .* Hz on ' 60
check_hooks "record without fexit" "$rec"
kill -INT "$rec"
wait "$rec" || { cat "$TMP/nofexit.txt"; fail "record without fexit exited non-zero"; }
grep -q 'span-table events unavailable.*span tables found by polling' "$TMP/nofexit.txt" ||
	{ cat "$TMP/nofexit.txt"; fail "the report does not say span tables are polled"; }
grep -q 'span-table events unavailable' "$TMP/nofexit.err" || fail "-v does not say it at start"
pass "without fexit: no syscall tracepoint, polling said in the report and at start"
