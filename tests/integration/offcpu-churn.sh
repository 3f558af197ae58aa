#!/usr/bin/env bash
# offcpu-churn.sh: a neighbour that blocks at a new place every time cannot take the off-CPU
# stacks of another cgroup's process away. tests/apps/native/placechurn: in one cgroup, `churn`
# (2 threads blocking 1 us at ever new stack depths, and again at each 8 places later, so that the
# cache of places marks them used); in another, `victim` (one thread sleeping 200 ms in
# victim_wait(), over and over: every block long, at one place). Both profiled with --off-cpu for
# 6 s. Without a budget of new places per cgroup the churn pushes the victim's place out of the
# cache while it sleeps, and nearly every victim block comes without stacks.
#   - the victim's off-CPU time with victim_wait in its stack is >= 4.5 s of the 6 s;
#   - the churn was held to its budget (blocks at new places past it counted in the report);
#   - none of the victim's long blocks lost its stacks (the report's "stacks left the cache").
# Then a tenant that makes cgroups of its own: in its own cgroup namespace (as a container is, whose
# cgroup file system may be writable), the churn split over 16 cgroups it made under its cgroup,
# one churning process in each. The budget is the cgroup namespace's, not each cgroup's: a new
# cgroup is no new budget. Each cgroup a budget of its own, the 16 push the victim's place out.
#   - the same three, with the tenant's 16 processes in place of the churn.
# Then a container that nests: in its own pid and cgroup namespaces, 16 processes, each in a cgroup
# the container made under its own and in a cgroup namespace of its own rooted there. A budget per
# cgroup namespace root, each of the 16 was a budget (the victim's time: none with stacks); the
# budget is the container's outermost pid namespace's, which nothing it makes escapes.
#   - the same three, with the container's 16 processes.
# The cache of places is what a long block's stacks come from where the kernel does not report a
# thread's return to user space (rseq_update), or the thread has no rseq (musl): the cases above
# run that way, with the test build's SPANPROF_BPF_VARIANT=offcpu-places. Where it does, the stacks
# are taken at the return, each block's own, and the churn has no cache to push the victim's out
# of: first, the churn and the victim that way.
. "$(dirname "$0")/lib.sh"
need_root "BPF"
CHURN=$BUILD/apps/native/placechurn
need_built "$CHURN" "$SPANPROF_TEST"

SPLIT=16
tenant=() nest=()
for i in $(seq $SPLIT); do tenant+=("tenant/s$i") nest+=("nest/s$i"); done
test_cgroups churn victim tenant "${tenant[@]}" nest "${nest[@]}"

# churn_case NAME WHO PID...: 6 s of the victim and WHO (the pids) with --off-cpu; the victim's
# long blocks keep their stacks, WHO is held to a budget of new places.
churn_case() {
	local name=$1 who=$2 lost budget named pid args=(-p "$VICTIM_PID")
	shift 2
	for pid; do args+=(-p "$pid"); done
	sleep 1	# past the victim's first block, which began before it was profiled
	record_offcpu "$name" "${args[@]}" -d 6
	kill -0 "$VICTIM_PID" 2> /dev/null ||
		fail "the victim (placechurn victim) ended before the recording did: the case started too late for its lifetime"
	lost=$(offcpu_count "$TMP/$name.txt" 'stacks left the cache')
	budget=$(offcpu_count "$TMP/$name.txt" "past their cgroup's budget (stacks not taken)")
	# The victim's time with its stacks: the folded lines through victim_wait (VALUE in ns).
	named=$(awk '$1 ~ /;victim_wait;/ { n += $NF } END { printf "%.0f\n", n }' "$TMP/$name.folded")
	note "victim: ${named} ns off-CPU in victim_wait; $who: $budget blocks past its budget; long blocks whose stacks left the cache: $lost"
	ge "$named" 4500000000 || {
		echo "$OFFCPU_LINES"; awk '{ print $NF, $1 }' "$TMP/$name.folded" | sort -rn | head -5 | cut -c1-160
		fail "the victim's off-CPU time with its stacks (victim_wait) next to the $who: $named ns of about 6 s"
	}
	pass "the victim's off-CPU time kept its stacks next to the $who: $named ns in victim_wait"
	if [ -z "${SPANPROF_BPF_VARIANT:-}" ]; then
		[ "$lost" = 0 ] || { echo "$OFFCPU_LINES"; fail "$lost long blocks lost their stacks next to the $who"; }
		pass "no long block lost its stacks next to the $who (stacks taken at the return)"
		return
	fi
	ge "$budget" 1000 || { echo "$OFFCPU_LINES"; fail "the $who was not held to a budget of new places (blocks past it: $budget)"; }
	pass "the $who was held to one budget of new places ($budget blocks at new places past it)"
	[ "$lost" = 0 ] || { echo "$OFFCPU_LINES"; fail "$lost long blocks lost their stacks from the cache next to the $who"; }
	pass "no long block lost its stacks from the cache next to the $who"
}

# 1. One churning process in a cgroup of its own.
start_app "$TMP/churn.out" in_cgroup churn "$CHURN" churn 60 2
CHURN_PID=$APP_PID
start_app "$TMP/victim.out" in_cgroup victim "$CHURN" victim 60 200
VICTIM_PID=$APP_PID
grep -qx "0::/spanprof-test.$$/churn" "/proc/$CHURN_PID/cgroup" ||
	fail "placechurn churn is not in its cgroup: $(cat "/proc/$CHURN_PID/cgroup")"
churn_case churn-return churn "$CHURN_PID"
SPANPROF=$SPANPROF_TEST
export SPANPROF_BPF_VARIANT=offcpu-places
churn_case churn churn "$CHURN_PID"

# 2. The tenant: 16 cgroups under its own, in its cgroup namespace (rooted at tenant).
# The tenant's processes start first: 16 starts take seconds on a slow machine, which the victim
# must not spend.
kill "$CHURN_PID" "$VICTIM_PID" 2> /dev/null
pids=()
for i in $(seq $SPLIT); do
	start_app "$TMP/tenant$i.out" in_cgroup tenant unshare --cgroup \
		sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CGBASE/tenant/s$i" "$CHURN" churn 60 1
	grep -qx "0::/spanprof-test.$$/tenant/s$i" "/proc/$APP_PID/cgroup" ||
		fail "tenant process $i is not in cgroup tenant/s$i: $(grep '^0::' "/proc/$APP_PID/cgroup")"
	[ "$(readlink "/proc/$APP_PID/ns/cgroup")" != "$(readlink /proc/self/ns/cgroup)" ] ||
		fail "tenant process $i is not in a cgroup namespace of its own"
	pids+=("$APP_PID")
done
start_app "$TMP/victim2.out" in_cgroup victim "$CHURN" victim 60 200
VICTIM_PID=$APP_PID
churn_case tenant "tenant's $SPLIT cgroups" "${pids[@]}"

# 3. A container that nests: in its own pid and cgroup namespaces (rooted at nest), it makes 16
# cgroups under its own and a process in each that makes a cgroup namespace of its own, rooted at
# that cgroup. A budget per cgroup namespace, each nested one would be a new budget; the budget is
# the container's outermost pid namespace's (below the host's), which no namespace it makes
# escapes.
kill "${pids[@]}" "$VICTIM_PID" 2> /dev/null
NEST_ARGS="churn 59 1"	# its processes' command line, told apart from the others'
start_app "$TMP/nest.out" in_cgroup nest unshare --pid --fork --kill-child --cgroup sh -c '
	i=0
	while [ $i -lt "$1" ]; do
		i=$((i + 1))
		sh -c '\''echo $$ > "$0/cgroup.procs" && exec unshare --cgroup "$@"'\'' "$0/s$i" "$2" $3 &
	done
	wait' "$CGBASE/nest" "$SPLIT" "$CHURN" "$NEST_ARGS"
poll 30 sh -c '[ "$(pgrep -xcf "$0")" -ge "$1" ]' "$CHURN $NEST_ARGS" "$SPLIT" ||
	fail "the container's $SPLIT processes did not start: $(cat "$TMP/nest.out")"
pids=()
for pid in $(pgrep -xf "$CHURN $NEST_ARGS"); do
	[ "$(readlink "/proc/$pid/ns/pid")" != "$(readlink /proc/self/ns/pid)" ] ||
		fail "container process $pid is not in a pid namespace of its own"
	grep -q "^0::/spanprof-test.$$/nest/s[0-9]*$" "/proc/$pid/cgroup" ||
		fail "container process $pid is not in a cgroup under nest: $(grep '^0::' "/proc/$pid/cgroup")"
	pids+=("$pid")
done
cgns=$(for pid in "${pids[@]}"; do readlink "/proc/$pid/ns/cgroup"; done | sort -u | wc -l)
[ "$cgns" = "$SPLIT" ] || fail "the container's processes are in $cgns cgroup namespaces, not $SPLIT"
start_app "$TMP/victim3.out" in_cgroup victim "$CHURN" victim 60 200
VICTIM_PID=$APP_PID
churn_case nest "container's $SPLIT nested cgroup namespaces" "${pids[@]}"
