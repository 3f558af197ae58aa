#!/usr/bin/env bash
# offcpu-rseq.sh: a kernel whose rseq_update reports a thread's return to user space only where the
# thread's CPU (or concurrency id) changed, as Linux 6.19's reworked rseq does, simulated by the
# test build's SPANPROF_BPF_VARIANT=rseq-on-change. Taking long blocks' stacks at the return there
# would miss most returns: a thread that blocks and wakes on one CPU is not reported. record must
# see that in its probe (its own thread, pinned to one CPU, back from 4 sleeps: each must be
# reported) and take every block's stacks at its switch-out, from its place. The probe once
# stopped at the first reported return of up to 5, on any CPU, and took a kernel like this one.
#   - the report says the stacks were taken at switch-out, and why: the returns it saw of 4;
#   - a thread sleeping 200 ms at a time (tests/apps/native/placechurn victim) has its off-CPU
#     time with its stacks: >= 4.5 s of the 6 s in victim_wait, none of its returns missed.
. "$(dirname "$0")/lib.sh"
need_root "BPF"
CHURN=$BUILD/apps/native/placechurn
need_built "$CHURN" "$SPANPROF_TEST"
[ "$(bpftool btf dump file /sys/kernel/btf/vmlinux format raw | grep -c "'btf_trace_rseq_update'")" -gt 0 ] ||
	skip "no rseq_update on this kernel"

start_app "$TMP/victim.out" "$CHURN" victim 30 200
sleep 1	# past the victim's first block, which began before it was profiled
SPANPROF=$SPANPROF_TEST SPANPROF_BPF_VARIANT=rseq-on-change record_offcpu onchange -p "$APP_PID" -d 6
stacks=$(grep '^  off-CPU stacks' "$TMP/onchange.txt")
named=$(awk '$1 ~ /;victim_wait;/ { n += $NF } END { printf "%.0f\n", n }' "$TMP/onchange.folded")
note "$stacks"
note "victim: $named ns in victim_wait"
[[ $stacks == *"taken at switch-out, once per place (not at the thread's return to user space: this kernel reported "*" of spanprof's 4 returns from a sleep on one CPU (rseq_update))" ]] ||
	fail "record took a kernel that reports only some returns: $stacks"
pass "a kernel that reports only a return on another CPU: stacks taken at switch-out, and the report says why"
ge "$named" 4500000000 || { echo "$OFFCPU_LINES"; fail "the victim's off-CPU time with its stacks (victim_wait): $named ns of about 6 s"; }
pass "the victim's off-CPU time with its stacks: $named ns in victim_wait"
