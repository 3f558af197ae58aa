#!/usr/bin/env bash
# procevents.sh: processes started after a host-wide recording began are seen at once (issues 8
# and 9): a hooked .NET process carries its span from its first sample (the table is found when
# it is mapped, not at the next poll); a process that execs into another binary at the same
# addresses is named from the new binary; the summary names a process as it was when sampled
# (dotnet, not the bash it was before exec). SPAN_RUNS=10 for the issue's 10-run figure.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd dotnet node

HOTCHAIN_DLL=$BUILD/apps/HotChain/HotChain.dll
EXEC_A=$BUILD/apps/native/exec_a
EXEC_B=$BUILD/apps/native/exec_b
FLOOD=$BUILD/apps/native/memfd_flood
need_built "$HOTCHAIN_DLL" "$HOOK" "$EXEC_A" "$EXEC_B" "$FLOOD"
SPAN_RUNS=${SPAN_RUNS:-3}

# record_started NAME.EXT: a host-wide recording in the background (record_bg), once it samples
# (its set-up, the scan of every process, can take a while on a busy host), and one more second.
record_started() {
	"$SPANPROF" record -v -d 60 -o "$TMP/$1" > "$TMP/${1%%.*}.txt" 2> "$TMP/${1%%.*}.err" &
	RECORD_PID=$!
	RECORD_REPORT=$TMP/${1%%.*}.txt
	register "$RECORD_PID"
	wait_for_line "$TMP/${1%%.*}.err" ' sampling .* Hz on ' 60
	sleep 1
}

# stop_record: SIGINT to the background recording, which writes its output and exits 0.
stop_record() {
	kill -INT "$RECORD_PID"
	wait_record
}

# 1. A span that starts as Main's first statement, in a process started 1 s after the recording:
#    >= 99 % of the samples in it carry it, in every run.
runs_ok=0 worst=1
for run in $(seq "$SPAN_RUNS"); do
	record_started "span$run.pb.gz"
	# Perf maps on from the start: naming is not what this measures.
	spawn "$TMP/span$run.out" env DOTNET_STARTUP_HOOKS="$HOOK" DOTNET_PerfMapEnabled=1 \
		dotnet "$HOTCHAIN_DLL" 3 span
	app=$SPAWNED
	wait "$app" || { cat "$TMP/span$run.out"; fail "run $run: HotChain failed"; }
	stop_record
	span=$(awk '$1 == "span" { print $2 }' "$TMP/span$run.out")
	[ -n "$span" ] || { cat "$TMP/span$run.out"; fail "run $run: HotChain printed no span"; }
	decode "$TMP/span$run.pb.gz"
	r=$(node -e '
		const p = JSON.parse(require("fs").readFileSync(process.argv[1]));
		const [pid, span] = process.argv.slice(2);
		let n = 0, right = 0, none = 0, wrong = 0;
		for (const s of p.samples) {
			if (s.labels.pid !== pid || !s.stack.some((f) => /HotChain.*Program::Outer/.test(f))) continue;
			const c = Number(s.values[0]);
			n += c;
			if (s.labels.span_id === span) right += c;
			else if (s.labels.span_id === undefined) none += c;
			else wrong += c;
		}
		console.log(JSON.stringify({ n, right, none, wrong, rate: n ? right / n : 0 }));
	' "$TMP/span$run.json" "$app" "$span")
	note "run $run: $r"
	note "$(grep 'process events' "$TMP/span$run.txt" || echo 'no process events line')"
	[ "$(field "$r" n)" -ge 20 ] || { cat "$TMP/span$run.txt" "$TMP/span$run.out"; fail "run $run: only $(field "$r" n) samples in the span"; }
	[ "$(field "$r" wrong)" = 0 ] || fail "run $run: $(field "$r" wrong) samples carry another span"
	rate=$(field "$r" rate)
	if ge "$rate" 0.99; then runs_ok=$((runs_ok + 1)); fi
	if ! ge "$rate" "$worst"; then worst=$rate; fi
done
[ "$runs_ok" = "$SPAN_RUNS" ] || fail "span from the first sample in $runs_ok of $SPAN_RUNS runs (worst $worst, want >= 0.99)"
pass "span from the first sample: >= 99 % labelled in $runs_ok of $SPAN_RUNS runs (worst $worst)"

# 2. exec into another binary whose code sits at the same addresses (exec_a -> exec_b, -no-pie):
#    every sample after the exec is named from exec_b.
record_started exec.pb.gz
spawn "$TMP/exec.out" "$EXEC_A" "$EXEC_B" 1.5
app=$SPAWNED
wait "$app" || { cat "$TMP/exec.out"; fail "exec_a/exec_b failed"; }
stop_record
decode "$TMP/exec.pb.gz"
r=$(node -e '
	const p = JSON.parse(require("fs").readFileSync(process.argv[1]));
	const pid = process.argv[2];
	const o = { a: 0, a_right: 0, b: 0, b_right: 0, b_stale: 0 };
	for (const s of p.samples) {
		if (s.labels.pid !== pid) continue;
		const c = Number(s.values[0]), leaf = s.stack[s.stack.length - 1] || "";
		if (s.labels.thread_name === "exec_a") {
			o.a += c;
			if (leaf === "spin_a") o.a_right += c;
		} else if (s.labels.thread_name === "exec_b") {
			o.b += c;
			if (leaf === "spin_b") o.b_right += c;
			if (s.stack.some((f) => f === "spin_a")) o.b_stale += c;
		}
	}
	console.log(JSON.stringify(o));
' "$TMP/exec.json" "$app")
note "exec: $r"
[ "$(field "$r" a)" -ge 20 ] && [ "$(field "$r" b)" -ge 20 ] || { cat "$TMP/exec.txt"; fail "too few samples before or after exec: $r"; }
[ "$(field "$r" b_stale)" = 0 ] || fail "$(field "$r" b_stale) of $(field "$r" b) samples after exec named from the binary before it"
ge "$(node -pe "($r).b_right / ($r).b")" 0.9 || fail "after exec, spin_b is the leaf of $(field "$r" b_right) of $(field "$r" b) samples"
ge "$(node -pe "($r).a_right / ($r).a")" 0.9 || fail "before exec, spin_a is the leaf of $(field "$r" a_right) of $(field "$r" a) samples"
pass "exec: $(field "$r" b) samples after exec all named from the new binary ($(field "$r" b_right) in spin_b), $(field "$r" a_right) of $(field "$r" a) before it in spin_a"

# 3. bash that execs dotnet: the summary names the .NET process dotnet.
record_started name.pb.gz
spawn "$TMP/name.out" bash -c 'i=0; while [ $i -lt 300000 ]; do i=$((i + 1)); done; exec dotnet "$1" 1.5' bash "$HOTCHAIN_DLL"
app=$SPAWNED
wait "$app" || { cat "$TMP/name.out"; fail "bash -> dotnet failed"; }
stop_record
grep "^  \.NET pid $app " "$TMP/name.txt" || { cat "$TMP/name.txt"; fail "no .NET line for pid $app"; }
grep -q "^  \.NET pid $app (dotnet)" "$TMP/name.txt" || fail "pid $app not named dotnet in the summary"
decode "$TMP/name.pb.gz"
n=$(node -pe "JSON.parse(require('fs').readFileSync('$TMP/name.json')).samples.filter((s) => s.labels.pid === '$app' && s.labels.process_name === 'bash' && s.stack.some((f) => /HotChain/.test(f))).length")
[ "$n" = 0 ] || fail "$n .NET samples labelled process_name=bash"
pass "bash -> dotnet: named dotnet in the summary and in the samples"

# 4. A process that maps "spanprof-ctx" memfds in a loop costs a bounded number of events and maps
#    reads, each counted.
start_app --pid-line --timeout 10 "$TMP/flood.out" "$FLOOD" 4
record flood.pb.gz -p "$APP_PID" -d 2
wait "$APP_PID" || true
rounds=$(awk '$1 == "rounds" { print $2 }' "$TMP/flood.out")
line=$(grep 'process events:' "$TMP/flood.txt")
note "flood: $rounds rounds; $line"
mapped=$(sed -n 's/.*span tables mapped \([0-9]*\) (read at once \([0-9]*\).*/\1 \2/p' <<<"$line")
throttled=$(sed -n 's/.*throttled \([0-9]*\) in BPF.*/\1/p' <<<"$line")
set -- $mapped
[ "$1" -le 40 ] || fail "$1 span-table events sent for one process in about 2 s (want <= 40)"
[ "$2" -le 20 ] || fail "$2 maps reads at once for one process in about 2 s (want <= 20)"
[ "${rounds:-0}" -le 100 ] || [ "$throttled" -gt 0 ] || fail "$rounds rounds, none throttled"
pass "memfd flood: $rounds rounds -> $1 events, $2 maps reads at once, $throttled throttled in BPF"
