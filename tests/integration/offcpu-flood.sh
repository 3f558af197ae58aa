#!/usr/bin/env bash
# offcpu-flood.sh: a process whose threads block long very often cannot flood what spanprof takes
# from its neighbours. tests/apps/native/placechurn `threads` (2,000 threads each sleeping 20 ms
# over and over: about 100,000 long blocks a second) in one cgroup; in another, hotchain (on the
# CPU: CPU samples) and placechurn `victim` (one thread sleeping 200 ms in victim_wait(), over and
# over: its long blocks). All profiled with --off-cpu for 6 s. The off-CPU records once shared the
# ring buffer with the CPU samples, with no bound on how many one cgroup sent.
#   - no CPU sample was lost to a full ring buffer;
#   - the flood was held to its cgroup's --off-cpu-max-rate, here 5,000 a second: between 20,000
#     and 35,000 long blocks sent in the 6 s, both cgroups together (the victim sends 5 a second),
#     the rest thinned out (counted in the report);
#   - those sent stand for the rest: the profile's off-CPU time is within 10 % of all the long
#     blocks' time, and within 5 % with the time the report says the blocks cut at the bound (a
#     tick that grows too fast) stood for;
#   - at its onset, before the smoothed rate has seen it, the flood is thinned from its first
#     tick's own blocks once half the bound on what is sent at once is taken: at most 1,500 cut
#     at the bound;
#   - and stand for them by stack: a quarter of the flood's threads block in wait_b(), the rest
#     in wait_a(), and wait_b holds 0.22-0.28 of the two's off-CPU time in the profile;
#   - the victim's off-CPU time with victim_wait in its stack is >= 4.5 s of the 6 s;
#   - a sleeper in the flood's own cgroup (one thread sleeping 1 s in sleeper_wait, over and over)
#     has each of its blocks sent with its own time: thinning is by time, and a block longer than
#     the quantum (the flood's blocked time a second over the rate, here about 0.4 s) is never
#     thinned: 4.5-6.5 s in sleeper_wait. Thinned by count, as before, each was sent with the
#     chance 1 in 20, standing for 20 s.
#   - where the kernel reports a thread's return to user space (the report's "off-CPU stacks: taken
#     as each long block's thread returned"), each thread's first block is taken there too, as
#     every later one is: the frames above the syscall were read for at most 50 blocks (the
#     flood's 2,000 threads each read theirs once, taking the cgroup's whole budget of new places
#     at once), and no long block was sent without stacks. The sleeper's first block after the
#     flood started once came without its stacks, and its time without sleeper_wait.
# Then four cgroups each flood at once (500 threads each), each held to --off-cpu-max-rate 10000:
# together they send more than user space reads, and the off-CPU ring buffer (1 MiB) once
# filled and lost tens of thousands of long blocks, their time with them:
#   - no long block lost to a full ring: past half full, blocks are thinned (counted), those sent
#     standing for them;
#   - the profile's off-CPU time is within 10 % of all the long blocks' time (5 % with the time of
#     those cut at the bound), and wait_b still holds 0.22-0.28 of it.
. "$(dirname "$0")/lib.sh"
need_root "BPF"
CHURN=$BUILD/apps/native/placechurn
HOT=$BUILD/apps/native/hotchain
need_built "$CHURN"
need_built "$HOT"

test_cgroups flood victim f1 f2 f3 f4

start_app "$TMP/flood.out" in_cgroup flood "$CHURN" threads 30 2000 0
FLOOD_PID=$APP_PID
start_app "$TMP/victim.out" in_cgroup victim "$CHURN" victim 30 200
VICTIM_PID=$APP_PID
start_app "$TMP/sleeper.out" in_cgroup flood "$CHURN" sleeper 30 1000
SLEEPER_PID=$APP_PID
in_cgroup victim "$HOT" > /dev/null 2>&1 &
HOT_PID=$!
register "$HOT_PID"
sleep 1	# past the victim's first block, which began before it was profiled

record_offcpu flood -p "$FLOOD_PID" -p "$VICTIM_PID" -p "$SLEEPER_PID" -p "$HOT_PID" \
	--off-cpu-max-rate 5000 -d 6
line=$OFFCPU_LINES
cpu_lost=$(sed -n 's/^  lost: ring buffer full \([0-9][0-9]*\),.*/\1/p' "$TMP/flood.txt")
thinned=$(offcpu_count "$TMP/flood.txt" "thinned by their time (stood for by others, each carrying a quantum)")
rate=$(offcpu_count "$TMP/flood.txt" "past the bound (not sent)")
cut_ms=$(echo "$line" | sed -n 's/.*past the bound (not sent) [0-9]*, standing for \([0-9.]*\) ms.*/\1/p')
long=$(sed -n 's/^  off-CPU: \([0-9][0-9]*\) blocks at or above the threshold.*/\1/p' "$TMP/flood.txt")
[ -n "$thinned" ] && [ -n "$rate" ] && [ -n "$long" ] || { echo "$line"; fail "no counts of long blocks thinned and past the bound in the report"; }
sent=$((long - thinned - rate))
# The long blocks' time, and that in the profile: "N blocks at or above the threshold, T ms (in
# profile P ms)".
read -r long_ms prof_ms < <(sed -n 's/^  off-CPU: [0-9]* blocks at or above the threshold, \([0-9.]*\) ms (in profile \([0-9.]*\) ms).*/\1 \2/p' "$TMP/flood.txt")
ratio=$(awk -v p="$prof_ms" -v l="$long_ms" 'BEGIN { printf "%.3f", (l > 0 ? p / l : 0) }')
# With the time that the blocks cut at the bound stood for, all of it.
ratio_all=$(awk -v p="$prof_ms" -v c="${cut_ms:-0}" -v l="$long_ms" 'BEGIN { printf "%.3f", (l > 0 ? (p + c) / l : 0) }')
named=$(awk '$1 ~ /;victim_wait;/ { n += $NF } END { printf "%.0f\n", n }' "$TMP/flood.folded")
slept=$(awk '$1 ~ /;sleeper_wait;/ { n += $NF } END { printf "%.0f\n", n }' "$TMP/flood.folded")
# The flood's split between its two stacks (folded VALUE in nanoseconds).
share_b=$(awk '$1 ~ /;wait_b;/ { b += $NF } $1 ~ /;wait_a;/ { a += $NF }
	END { printf "%.3f", (a + b > 0 ? b / (a + b) : 0) }' "$TMP/flood.folded")
note "CPU samples lost to a full ring: $cpu_lost; long blocks: $long, $sent sent, $thinned thinned, $rate past the bound; in the profile $prof_ms ms of $long_ms ms ($ratio; with those cut at the bound, $cut_ms ms more: $ratio_all); victim: $named ns in victim_wait; sleeper: $slept ns in sleeper_wait"
head -2 "$TMP/flood.txt" | sed 's/^/# /'

[ "$cpu_lost" = 0 ] || fail "$cpu_lost CPU samples lost to a full ring buffer next to the flood"
pass "no CPU sample lost to a full ring buffer next to a process blocking 100,000 times a second"
ge "$thinned" 100000 || { echo "$line"; fail "the flood was not held to a rate of long blocks sent (thinned: $thinned)"; }
pass "the flood was held to its cgroup's rate ($thinned long blocks thinned out, $rate past the bound, counted)"
# in_range VALUE LO HI FAILURE PASS: VALUE in [LO, HI] passes with PASS, else fails with FAILURE
# (the report's off-CPU lines shown).
in_range() {
	ge "$1" "$2" && le "$1" "$3" || { echo "$line"; fail "$4 ($2..$3)"; }
	pass "$5"
}
in_range "$sent" 20000 35000 "$sent long blocks sent in 6 s at --off-cpu-max-rate 5000" \
	"$sent long blocks sent in 6 s at --off-cpu-max-rate 5000"
in_range "$ratio" 0.9 1.1 "the profile's off-CPU time is $ratio of the long blocks': those sent do not stand for those thinned" \
	"those sent stand for those thinned: the profile's off-CPU time is $ratio of the long blocks'"
# Its onset: 6,000 long blocks in its first sixteenth of a second, before the smoothed rate has
# seen any, against a bound of 625 at once. Thinned from that tick's own blocks once half the bound
# is taken, not cut: the bound cuts at most 1,500 (about 6,000 when only the smoothed rate thinned).
le "$rate" 1500 || { echo "$line"; fail "$rate long blocks cut at the bound (at most 1500): the flood's onset was not thinned"; }
pass "the flood's onset thinned, not cut: $rate long blocks past the bound"
in_range "$ratio_all" 0.95 1.05 "the profile's off-CPU time and that of the blocks cut at the bound are $ratio_all of the long blocks'" \
	"the profile's off-CPU time and that of the blocks cut at the bound add up: $ratio_all of the long blocks'"
in_range "$share_b" 0.22 0.28 "wait_b holds $share_b of the flood's off-CPU time in the profile; a quarter of its threads block there" \
	"by stack too: wait_b, where a quarter of the flood's threads block, holds $share_b of its off-CPU time"
ge "$named" 4500000000 || {
	echo "$line"; awk '{ print $NF, $1 }' "$TMP/flood.folded" | sort -rn | head -5 | cut -c1-160
	fail "the victim's off-CPU time with its stacks (victim_wait): $named ns of about 6 s"
}
pass "the victim's off-CPU time was all sent next to the flood: $named ns in victim_wait"
in_range "$slept" 4500000000 6500000000 "the sleeper in the flood's cgroup: $slept ns in sleeper_wait, not its own time: blocks longer than the quantum were thinned" \
	"the sleeper in the flood's cgroup has its own time: $slept ns in sleeper_wait (blocks longer than the quantum are not thinned)"
if grep -q '^  off-CPU stacks: taken as each long block' "$TMP/flood.txt"; then
	frames_read=$(offcpu_count "$TMP/flood.txt" "blocks whose frames above the syscall were read to tell their place")
	no_stacks=$(offcpu_count "$TMP/flood.txt" "of them long (sent without stacks)")
	le "$frames_read" 50 || { echo "$line"; fail "the threads' first blocks took stacks at switch-out, by place: frames read for $frames_read blocks (at most 50)"; }
	[ "$no_stacks" = 0 ] || { echo "$line"; fail "$no_stacks long blocks sent without stacks (their cgroup's budget of new places taken)"; }
	pass "each thread's first block taken at its return too: frames read for $frames_read blocks, no long block without stacks"
else
	note "the kernel does not report returns to user space: first blocks not checked"
fi

# 2. Four flooding cgroups at once: the shared off-CPU ring buffer.
kill "$FLOOD_PID" "$VICTIM_PID" "$SLEEPER_PID" "$HOT_PID" 2> /dev/null
pids=()
for g in f1 f2 f3 f4; do
	start_app "$TMP/$g.out" in_cgroup "$g" "$CHURN" threads 30 500 0
	pids+=(-p "$APP_PID")
done
sleep 1
record_offcpu multi "${pids[@]}" --off-cpu-max-rate 10000 -d 6
line=$OFFCPU_LINES
ring_thinned=$(offcpu_count "$TMP/multi.txt" "over half full (stood for by others)")
ring_thinned=${ring_thinned:-0}
ring_lost=$(offcpu_count "$TMP/multi.txt" "lost to a full ring buffer")
cut_ms=$(echo "$line" | sed -n 's/.*past the bound (not sent) [0-9]*, standing for \([0-9.]*\) ms.*/\1/p')
read -r long_ms prof_ms < <(echo "$line" | sed -n 's/^  off-CPU: [0-9]* blocks at or above the threshold, \([0-9.]*\) ms (in profile \([0-9.]*\) ms).*/\1 \2/p')
[ -n "$ring_lost" ] && [ -n "$long_ms" ] || { echo "$line"; fail "no count of long blocks lost to a full ring in the report"; }
ratio=$(awk -v p="$prof_ms" -v l="$long_ms" 'BEGIN { printf "%.3f", (l > 0 ? p / l : 0) }')
ratio_all=$(awk -v p="$prof_ms" -v c="${cut_ms:-0}" -v l="$long_ms" 'BEGIN { printf "%.3f", (l > 0 ? (p + c) / l : 0) }')
share_b=$(awk '$1 ~ /;wait_b;/ { b += $NF } $1 ~ /;wait_a;/ { a += $NF }
	END { printf "%.3f", (a + b > 0 ? b / (a + b) : 0) }' "$TMP/multi.folded")
note "four floods: $ring_thinned long blocks thinned while the ring was over half full, $ring_lost lost to it; in the profile $prof_ms ms of $long_ms ms ($ratio; with those cut at the bound: $ratio_all); wait_b $share_b"
[ "$ring_lost" = 0 ] || { echo "$line"; fail "$ring_lost long blocks lost to a full off-CPU ring buffer"; }
pass "four floods at once: no long block lost to a full ring ($ring_thinned thinned while it was over half full)"
in_range "$ratio" 0.9 1.1 "four floods: the profile's off-CPU time is $ratio of the long blocks'" \
	"four floods: those sent stand for the rest: the profile's off-CPU time is $ratio of the long blocks'"
in_range "$ratio_all" 0.95 1.05 "four floods: with those cut at the bound, $ratio_all of the long blocks'" \
	"four floods: with those cut at the bound, $ratio_all of the long blocks'"
in_range "$share_b" 0.22 0.28 "four floods: wait_b holds $share_b of their off-CPU time" \
	"four floods, by stack: wait_b holds $share_b of their off-CPU time"
