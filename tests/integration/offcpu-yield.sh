#!/usr/bin/env bash
# offcpu-yield.sh: a thread that switches out runnable (preempted, or yielding to another thread on
# its CPU) is not blocking: such switches are counted apart in the report ("preempted or yielding
# switches"), not timed. Two profiled processes on one CPU each alternate a 1 ms sleep (a block,
# timed) and 200 sched_yield() calls (each a switch to the other, its state still runnable); a
# third, not profiled, yields beside them. `record --off-cpu -d 3` of the two:
#   - the count is at least half the involuntary switches the two made meanwhile (the kernel's
#     nonvoluntary_ctxt_switches, read before and after the recording, which also holds the
#     recording's start and end) and no more than them;
#   - their blocks (one a sleep) are timed, and far fewer than the yields: the yields were not
#     timed as blocks.
. "$(dirname "$0")/lib.sh"
need_root "BPF"
command -v python3 > /dev/null || skip "no python3"

YIELDER='
import os, time
print("ready", flush=True)
while True:
    time.sleep(0.001)
    for _ in range(200):
        os.sched_yield()
'
# nivcsw PID...: their threads' involuntary switches, summed.
nivcsw() {
	local p n=0 v
	for p; do
		v=$(sed -n 's/^nonvoluntary_ctxt_switches:[[:space:]]*//p' "/proc/$p/status") ||
			fail "pid $p is gone"
		n=$((n + v))
	done
	echo "$n"
}

pids=()
for i in 1 2 3; do
	start_app "$TMP/yield$i.out" taskset -c 0 python3 -c "$YIELDER"
	pids+=("$APP_PID")
done
before=$(nivcsw "${pids[0]}" "${pids[1]}")
record_offcpu yield -p "${pids[0]}" -p "${pids[1]}" -d 3
after=$(nivcsw "${pids[0]}" "${pids[1]}")
switched=$((after - before))
counted=$(offcpu_count "$TMP/yield.txt" 'preempted or yielding switches (runnable: not blocking, not timed)')
long=$(echo "$OFFCPU_LINES" | sed -n 's/^  off-CPU: \([0-9][0-9]*\) blocks at or above.*/\1/p')
short=$(echo "$OFFCPU_LINES" | sed -n 's/.*; \([0-9][0-9]*\) shorter blocks.*/\1/p')
note "involuntary switches of the two profiled: $switched; counted preempted or yielding: $counted; blocks: $long long, $short short"
[ -n "$counted" ] && [ -n "$long" ] && [ -n "$short" ] ||
	{ echo "$OFFCPU_LINES"; fail "no preempted count or block counts in the report"; }
ge "$counted" $((switched / 2)) || { echo "$OFFCPU_LINES"; fail "preempted or yielding switches counted: $counted of $switched"; }
le "$counted" "$switched" || { echo "$OFFCPU_LINES"; fail "more preempted or yielding switches counted ($counted) than the two made ($switched)"; }
pass "preempted or yielding switches counted: $counted of the $switched the two profiled processes made"
ge "$switched" 10000 || fail "the yielders switched only $switched times: the check above proves little"
ge "$((long + short))" 100 || { echo "$OFFCPU_LINES"; fail "the sleeps were not timed: $long long and $short short blocks"; }
le $(((long + short) * 10)) "$counted" ||
	{ echo "$OFFCPU_LINES"; fail "the yields were timed as blocks: $long long and $short short blocks, $counted yields"; }
pass "the yields were not timed: $long long and $short short blocks (the sleeps) beside $counted yields"
