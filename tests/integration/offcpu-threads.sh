#!/usr/bin/env bash
# offcpu-threads.sh: the off-CPU block records (kernel memory, about 2 KiB a thread, charged to
# spanprof's memory cgroup) are bounded by --off-cpu-max-threads, and a thread's goes at its exit.
# tests/apps/native/placechurn threads:
#   1. 400 threads that never exit, each sleeping 20 ms over and over, `--off-cpu-max-threads
#      100`: at most 100 threads (plus one per CPU, made at once) have off-CPU time in the
#      profile, and the blocks of the rest are counted lost ("no per-thread record");
#   2. 50 threads at a time, each sleeping 20 ms three times and exiting, replaced at once
#      (thousands in the run), the same cap of 100: every thread's record goes at its exit, so
#      none is refused and the blocks of threads started late in the run are timed too;
#   3. the same with the recording paused (SIGUSR1) for 2 s of its 5 and resumed (SIGUSR2).
. "$(dirname "$0")/lib.sh"
need_root "BPF"
CHURN=$BUILD/apps/native/placechurn
need_built "$CHURN"

# lost FILE: the report's count of blocks without a per-thread record.
lost() { offcpu_count "$1" 'no per-thread record'; }
# tids JSON: the number of threads with off-CPU time in the decoded profile.
tids() {
	node -e 'const p = JSON.parse(require("fs").readFileSync(process.argv[1]));
		const i = p.sampleTypes.indexOf("off_cpu/nanoseconds"); const t = new Set();
		for (const s of p.samples) if (s.values[i] > 0) t.add(s.labels.tid);
		console.log(t.size)' "$1"
}

# 1. The cap.
start_app "$TMP/hold.out" "$CHURN" threads 10 400 0
record hold.pb.gz -p "$APP_PID" --off-cpu --off-cpu-max-threads 100 -d 3
decode "$TMP/hold.pb.gz"
n=$(tids "$TMP/hold.json") refused=$(lost "$TMP/hold.txt") ncpu=$(nproc)
note "400 threads, cap 100: $n threads with off-CPU time, $refused blocks without a record"
le "$n" $((100 + ncpu)) || fail "$n threads had a block record, past the cap of 100 (+$ncpu CPUs)"
ge "$n" 90 || fail "only $n of the 100 threads the cap allows had off-CPU time"
ge "$refused" 1000 || { grep '^  off-CPU' "$TMP/hold.txt"; fail "the blocks of the threads past the cap were not counted lost ($refused)"; }
pass "at most the cap's threads have a block record ($n of 400), the others' blocks counted lost ($refused)"

# none_refused NAME MIN WHAT: the recording NAME (placechurn threads 12 50 3: 50 threads at a time,
# each gone after 3 blocks, under a cap of 100) timed at least MIN threads and refused no block.
none_refused() {
	local name=$1 min=$2 what=$3 n refused
	decode "$TMP/$name.pb.gz"
	n=$(tids "$TMP/$name.json") refused=$(lost "$TMP/$name.txt")
	note "$what: $n threads with off-CPU time, $refused blocks without a record"
	ge "$n" "$min" || fail "$what: only $n threads had off-CPU time (at least $min expected): records not freed at exit?"
	[ "$refused" = 0 ] || { grep '^  off-CPU' "$TMP/$name.txt"; fail "$what: $refused blocks found no record with at most 50 threads alive under a cap of 100"; }
	pass "$what: $n short-lived threads timed under a cap of 100, none refused"
}

# 2. Records go at exit: thousands of threads over the run (about 3,000 in 4 s), 50 alive at a time.
start_app "$TMP/churn.out" "$CHURN" threads 12 50 3
record churn.pb.gz -p "$APP_PID" --off-cpu --off-cpu-max-threads 100 -d 4
none_refused churn 1000 "records go at thread exit"

# 3. The same through a pause: the threads that exit while the switch program is detached take
# their records along too (the exit program stays attached), so none is refused after the resume.
start_app "$TMP/pause.out" "$CHURN" threads 12 50 3
record_bg pause.pb.gz -p "$APP_PID" --off-cpu --off-cpu-max-threads 100 -d 5
sleep 1
kill -USR1 "$RECORD_PID"
sleep 2
kill -USR2 "$RECORD_PID"
wait_record
none_refused pause 500 "through a pause of 2 s of 5"
