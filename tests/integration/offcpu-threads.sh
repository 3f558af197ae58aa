#!/usr/bin/env bash
# offcpu-threads.sh: the off-CPU block records (kernel memory, about 2 KiB a thread, charged to
# spanprof's memory cgroup) are bounded by --off-cpu-max-threads, and a thread's goes at its exit.
# tests/apps/native/placechurn threads:
#   1. 400 threads that never exit, each sleeping 20 ms over and over, `--off-cpu-max-threads
#      100`: one cgroup (or process outside any) holds at most half the cap, so at most 50 threads
#      (plus one per CPU, made at once) have off-CPU time in the profile, and the blocks of the
#      rest are counted lost ("no per-thread record");
#   2. 50 threads at a time, each sleeping 20 ms three times and exiting, replaced at once
#      (thousands in the run), a cap of 200 (100 for the process): every thread's record goes at
#      its exit, so none is refused and the blocks of threads started late in the run are timed;
#   3. the same with the recording paused (SIGUSR1) for 2 s of its 5 and resumed (SIGUSR2);
#   4. two cgroups, cap 100: 400 threads in one, and 400 in the other started 1.5 s later, when
#      the first's have long taken their records: the late cgroup's threads still get their half.
. "$(dirname "$0")/lib.sh"
need_root "BPF"
CHURN=$BUILD/apps/native/placechurn
need_built "$CHURN"

# lost FILE: the report's count of blocks without a per-thread record.
lost() { offcpu_count "$1" 'no per-thread record'; }
# tids JSON [PID]: the number of threads (of process PID) with off-CPU time in the decoded profile.
tids() {
	node -e 'const p = JSON.parse(require("fs").readFileSync(process.argv[1]));
		const i = p.sampleTypes.indexOf("off_cpu/nanoseconds"); const t = new Set();
		for (const s of p.samples)
			if (s.values[i] > 0 && (!process.argv[2] || s.labels.pid === process.argv[2]))
				t.add(s.labels.tid);
		console.log(t.size)' "$@"
}

# 1. The cap.
start_app "$TMP/hold.out" "$CHURN" threads 10 400 0
record hold.pb.gz -p "$APP_PID" --off-cpu --off-cpu-max-threads 100 -d 3
decode "$TMP/hold.pb.gz"
n=$(tids "$TMP/hold.json") refused=$(lost "$TMP/hold.txt") ncpu=$(nproc)
note "400 threads, cap 100: $n threads with off-CPU time, $refused blocks without a record"
le "$n" $((50 + ncpu)) || fail "$n threads had a block record, past half the cap of 100 (+$ncpu CPUs)"
ge "$n" 45 || fail "only $n of the 50 threads half the cap allows had off-CPU time"
ge "$refused" 1000 || { grep '^  off-CPU' "$TMP/hold.txt"; fail "the blocks of the threads past the cap were not counted lost ($refused)"; }
pass "at most half the cap's threads have a block record in one process ($n of 400), the others' blocks counted lost ($refused)"

# none_refused NAME MIN WHAT: the recording NAME (placechurn threads 12 50 3: 50 threads at a time,
# each gone after 3 blocks, under a cap of 200: 100 for the process) timed at least MIN threads and
# refused no block.
none_refused() {
	local name=$1 min=$2 what=$3 n refused
	decode "$TMP/$name.pb.gz"
	n=$(tids "$TMP/$name.json") refused=$(lost "$TMP/$name.txt")
	note "$what: $n threads with off-CPU time, $refused blocks without a record"
	ge "$n" "$min" || fail "$what: only $n threads had off-CPU time (at least $min expected): records not freed at exit?"
	[ "$refused" = 0 ] || { grep '^  off-CPU' "$TMP/$name.txt"; fail "$what: $refused blocks found no record with at most 50 threads alive under a cap of 100 for the process"; }
	pass "$what: $n short-lived threads timed under a cap of 100 for the process, none refused"
}

# 2. Records go at exit: thousands of threads over the run (about 3,000 in 4 s), 50 alive at a time.
start_app "$TMP/churn.out" "$CHURN" threads 12 50 3
record churn.pb.gz -p "$APP_PID" --off-cpu --off-cpu-max-threads 200 -d 4
none_refused churn 1000 "records go at thread exit"

# 3. The same through a pause: the threads that exit while the switch program is detached take
# their records along too (the exit program stays attached), so none is refused after the resume.
start_app "$TMP/pause.out" "$CHURN" threads 12 50 3
record_bg pause.pb.gz -p "$APP_PID" --off-cpu --off-cpu-max-threads 200 -d 5
poll 30 catches_usr1 "$RECORD_PID" || fail "record does not catch SIGUSR1"
sleep 1
kill -USR1 "$RECORD_PID"
sleep 2
kill -USR2 "$RECORD_PID"
wait_record
none_refused pause 500 "through a pause of 2 s of 5"

# 4. Fair shares: a cgroup whose threads took their records first leaves the other half of the cap
# to the others, so a cgroup that starts blocking later still gets its threads timed.
if [ -z "$(cgroup_v2_root)" ]; then
	note "no cgroup v2 hierarchy: the per-cgroup share not checked"
	exit 0
fi
test_cgroups early late
start_app "$TMP/early.out" in_cgroup early "$CHURN" threads 10 400 0
EARLY=$APP_PID
(in_cgroup late sh -c 'sleep 1.5; exec "$0" threads 8 400 0' "$CHURN" > "$TMP/late.out" 2>&1) &
LATE=$!
register "$LATE"
record share.pb.gz -p "$EARLY" -p "$LATE" --off-cpu --off-cpu-max-threads 100 -d 4
decode "$TMP/share.pb.gz"
ne=$(tids "$TMP/share.json" "$EARLY") nl=$(tids "$TMP/share.json" "$LATE")
note "cap 100, two cgroups of 400 threads: the early one $ne threads with off-CPU time, the late one $nl"
grep -q ready "$TMP/late.out" || fail "the late process did not start its threads: $(cat "$TMP/late.out")"
ge "$nl" 45 || { grep '^  off-CPU' "$TMP/share.txt"; fail "the late cgroup's threads got $nl records of the 50 its half of the cap allows (the early one: $ne)"; }
le "$ne" $((50 + ncpu)) || fail "the early cgroup held $ne records, past half the cap of 100"
pass "each cgroup holds at most half the cap: the early one $ne threads, the one that started later $nl"
