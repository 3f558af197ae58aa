#!/usr/bin/env bash
# offcpu.sh: off-CPU time by span (--off-cpu). tests/apps/OffCpu blocks inside known spans in four
# ways (Thread.Sleep, a contended lock, sync-over-async .Result, a blocking socket read) and
# measures each block itself; per scenario the off-CPU time spanprof puts on that span, with the
# blocking method in the stack, is within 10 % of what the app measured, the scenario's method
# under another span gets at most 1 % of it, and the helper threads that block outside any span
# carry no span. No timing asserts: accounting comparisons only.
#
# A long block's stacks and span are taken as its thread returns to user space, where the kernel
# reports that (rseq_update); else from its place, at its switch-out. OFFCPU_PLACES=1
# (offcpu-places.sh) runs it all the second way, as on a kernel without the tracepoint (the test
# build's SPANPROF_BPF_VARIANT=offcpu-places).
. "$(dirname "$0")/lib.sh"
need_root
need_cmd dotnet node bpftool
if [ -n "${OFFCPU_PLACES:-}" ]; then
	need_built "$SPANPROF_TEST"
	SPANPROF=$SPANPROF_TEST
	export SPANPROF_BPF_VARIANT=offcpu-places
	WANT_STACKS='taken at switch-out'
elif [ "$(bpftool btf dump file /sys/kernel/btf/vmlinux format raw | grep -c "'btf_trace_rseq_update'")" -gt 0 ]; then
	WANT_STACKS='taken as each long block.s thread returned to user space \([1-9]'
else
	WANT_STACKS='taken at switch-out'	# no rseq_update on this kernel
fi

# OFFCPU_EXE: the app in another shape .NET ships in (make test-matrix: self-contained, composite
# ReadyToRun, Native AOT, trimmed), its hook from the package; else framework-dependent.
if [ -n "${OFFCPU_EXE:-}" ]; then
	OFFCPU_CMD=("$OFFCPU_EXE")
	need_built "$OFFCPU_EXE" "$HOOK"
else
	OFFCPU_CMD=(dotnet "$BUILD/apps/OffCpu/OffCpu.dll")
	need_built "$BUILD/apps/OffCpu/OffCpu.dll" "$HOOK"
fi

# Refused: the off-CPU choices without --off-cpu.
rc=0
"$SPANPROF" record --value off-cpu -d 1 -o "$TMP/bad.folded" > "$TMP/bad.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "--value off-cpu without --off-cpu: exit $rc, want 2"
pass "--value off-cpu needs --off-cpu"

# The scenarios (tests/apps/OffCpu) and the method each blocks in. twina and twinb block on one
# thread at the same depth of its stack with the same registers: only the frames above tell them
# apart, so each must keep its own stack.
SCENARIOS="sleep lock result socket twina twinb"
declare -A METHOD=([sleep]=BlockSleep [lock]=BlockLock [result]=BlockResult [socket]=BlockSocket
	[twina]=BlockTwinA [twinb]=BlockTwinB)

# The app waits before its first span, while spanprof attaches and reads the hook's table.
start_app --ready ' ready$' "$TMP/app.out" env DOTNET_STARTUP_HOOKS="$HOOK" \
	"${OFFCPU_CMD[@]}" --truth "$TMP/truth.json" --blocks 40 --block-ms 20 --delay-ms 3000
record offcpu.pb.gz -p "$APP_PID" --off-cpu --by-span -o "$TMP/offcpu.folded" --value off-cpu \
	-o "$TMP/offcpu.otlp.pb"
[ -s "$TMP/truth.json" ] || { cat "$TMP/app.out"; fail "the app wrote no truth file"; }
note "$(grep -E '^  off-CPU' "$TMP/offcpu.txt")"
grep -q '^  off-CPU: [1-9][0-9]* blocks at or above the threshold' "$TMP/offcpu.txt" ||
	{ cat "$TMP/offcpu.txt"; fail "no off-CPU blocks in the report"; }
grep -q 'shorter blocks, [0-9.]* ms in all' "$TMP/offcpu.txt" || fail "the report lacks the short blocks"
grep -Eq "^  off-CPU stacks: $WANT_STACKS" "$TMP/offcpu.txt" ||
	{ grep '^  off-CPU' "$TMP/offcpu.txt"; fail "the report does not say the stacks were $WANT_STACKS"; }
# Taken at the return: none missed, the helper threads' last blocks, which end as the app exits,
# sent from the exit.
if [[ $WANT_STACKS == 'taken as'* ]]; then
	grep -q '^  off-CPU stacks: .* returns missed, not sent 0 ' "$TMP/offcpu.txt" ||
		{ grep '^  off-CPU stacks' "$TMP/offcpu.txt"; fail "long blocks whose return was missed"; }
fi
for n in $SCENARIOS; do
	grep -Eq "^  $n +[0-9]+ms +[0-9.]+%  off-CPU +[0-9.]+ms" "$TMP/offcpu.txt" ||
		{ cat "$TMP/offcpu.txt"; fail "--by-span lacks off-CPU time for $n"; }
done
pass "report: off-CPU blocks, short blocks counted, off-CPU time per span"
# --by-span: each span's top blocking frame is the app's method that blocked, not the runtime's wait.
for n in $SCENARIOS; do
	top=$(sed -n "/^  $n /,/^  [^ ]/p" "$TMP/offcpu.txt" | grep -m1 '^      blocked') ||
		{ cat "$TMP/offcpu.txt"; fail "--by-span: no blocking frame under $n"; }
	# Native AOT names a method without its signature
	echo "$top" | grep -Eq "\] Program::${METHOD[$n]}(\(|  in |$)" || fail "--by-span: $n's top blocking frame: $top"
	note "$top"
done
pass "--by-span: the top blocking frame of each span is its Program::Block* method"

decode "$TMP/offcpu.pb.gz"
types=$(node -pe "JSON.parse(require('fs').readFileSync('$TMP/offcpu.json')).sampleTypes.join(',')")
[ "$types" = "samples/count,cpu/nanoseconds,off_cpu/nanoseconds" ] || fail "sample types: $types"
pass "pprof sample types: $types"

r=$(node "$ROOT/tests/integration/offcpucheck.js" "$TMP/offcpu.json" "$TMP/truth.json")
for n in $SCENARIOS; do
	s=$(node -pe "JSON.stringify(($r).scenarios.$n)")
	note "$n: $s"
	ratio=$(field "$s" ratio)
	matrix_row "$n" "$(ge "$ratio" 0.9 && le "$ratio" 1.1 && le "$(field "$s" wrong_rate)" 0.01 && echo pass || echo fail)" \
		ratio="$ratio" on_ms="$(field "$s" on_ms)" truth_ms="$(field "$s" truth_ms)" wrong_ms="$(field "$s" wrong_ms)"
	ge "$ratio" 0.9 && le "$ratio" 1.1 ||
		fail "$n: off-CPU on its span with its method $(field "$s" on_ms) ms, the app measured $(field "$s" truth_ms) ms (ratio $ratio, want 0.9..1.1)$(offcpu_starved "$TMP/truth.json" $n)"
	le "$(field "$s" wrong_rate)" 0.01 || fail "$n: $(field "$s" wrong_ms) ms of its blocking under another span (want <= 1 %)"
	pass "$n: $(field "$s" on_ms) ms on its span with its method, app $(field "$s" truth_ms) ms (ratio $ratio); wrong span $(field "$s" wrong_ms) ms"
done
for h in hold serve; do
	s=$(node -pe "JSON.stringify(($r).helpers.$h)")
	ge "$(field "$s" off_ms)" 100 || fail "$h: only $(field "$s" off_ms) ms off-CPU for a thread that blocks most of the run"
	[ "$(field "$s" with_span_ms)" = 0 ] || fail "$h blocks outside any span, yet $(field "$s" with_span_ms) ms carry a span"
	pass "$h (outside any span): $(field "$s" off_ms) ms off-CPU, none with a span"
done

# The twins again, twina's blocks short (1 ms under a 5 ms threshold), 20 of them before each of
# twinb's 40 long ones: a place whose blocks were all short is taken on its registers, so a long
# block there must have it checked from then on, however many short ones come between, or every
# twinb block gets twina's stacks. The first twinb block may (its place was taken on its registers).
start_app --ready ' ready$' "$TMP/rare.out" env DOTNET_STARTUP_HOOKS="$HOOK" \
	"${OFFCPU_CMD[@]}" --truth "$TMP/rare.truth.json" --blocks 40 --block-ms 20 --delay-ms 3000 --twins-rare
record rare.pb.gz -p "$APP_PID" --off-cpu --off-cpu-threshold 5
decode "$TMP/rare.pb.gz"
s=$(node -pe "JSON.stringify($(node "$ROOT/tests/integration/offcpucheck.js" "$TMP/rare.json" "$TMP/rare.truth.json").scenarios.twinb)")
note "twinb after twina's short blocks: $s"
ratio=$(field "$s" ratio)
matrix_row twins-rare "$(ge "$ratio" 0.9 && le "$ratio" 1.1 && echo pass || echo fail)" ratio="$ratio" \
	on_ms="$(field "$s" on_ms)" truth_ms="$(field "$s" truth_ms)"
ge "$ratio" 0.9 && le "$ratio" 1.1 ||
	fail "twinb, each block after 20 short ones of twina: $(field "$s" on_ms) ms on its span with its method, app $(field "$s" truth_ms) ms (ratio $ratio, want 0.9..1.1)"
pass "twinb after twina's short blocks keeps its own stacks: ratio $ratio"

# The twins once more, both blocking under 40 frames of one shared method: a place is told apart
# by at most 16 frames above its syscall, so on the place path the two share one (a limit of
# that path, not tested there); the stacks taken at the thread's return are each block's own.
if [[ $WANT_STACKS == 'taken as'* ]]; then
	start_app --ready ' ready$' "$TMP/deep.out" env DOTNET_STARTUP_HOOKS="$HOOK" \
		"${OFFCPU_CMD[@]}" --truth "$TMP/deep.truth.json" --blocks 40 --block-ms 20 --delay-ms 3000 --twins-deep 40
	record deep.pb.gz -p "$APP_PID" --off-cpu
	decode "$TMP/deep.pb.gz"
	r=$(node "$ROOT/tests/integration/offcpucheck.js" "$TMP/deep.json" "$TMP/deep.truth.json")
	for n in twina twinb; do
		s=$(node -pe "JSON.stringify(($r).scenarios.$n)")
		note "$n under 40 shared frames: $s"
		ratio=$(field "$s" ratio)
		matrix_row "twins-deep-$n" "$(ge "$ratio" 0.9 && le "$ratio" 1.1 && echo pass || echo fail)" \
			ratio="$ratio" on_ms="$(field "$s" on_ms)" truth_ms="$(field "$s" truth_ms)"
		ge "$ratio" 0.9 && le "$ratio" 1.1 ||
			fail "$n under 40 shared frames: $(field "$s" on_ms) ms on its span with its method, app $(field "$s" truth_ms) ms (ratio $ratio, want 0.9..1.1)"
	done
	pass "the twins under 40 shared frames keep their own stacks"
else
	note "the twins under 40 shared frames: not checked (their stacks come from their place)"
fi

# OTLP: a second profile, off_cpu/nanoseconds, with the pprof's off-CPU total and span links.
node "$TOOLS/otlp-receiver.js" --decode "$TMP/offcpu.otlp.pb" > "$TMP/offcpu.otlp.json" ||
	fail "the OTLP file does not decode"
o=$(node -e '
const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const p = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
const off = j.resources.flatMap((r) => r.profiles).filter((x) => x.sampleType === "off_cpu/nanoseconds");
const cpu = j.resources.flatMap((r) => r.profiles).filter((x) => x.sampleType === "samples/count");
console.log(JSON.stringify({ off: off.length, cpu: cpu.length, off_total: off.reduce((t, x) => t + x.total, 0),
  pprof_off_total: Number(p.totals[2]), off_linked: off.reduce((t, x) => t + x.linked, 0) }));
' "$TMP/offcpu.otlp.json" "$TMP/offcpu.json")
note "otlp: $o"
[ "$(field "$o" off)" = 1 ] && [ "$(field "$o" cpu)" = 1 ] || fail "OTLP profiles: $o (want one CPU and one off-CPU)"
[ "$(field "$o" off_total)" = "$(field "$o" pprof_off_total)" ] || fail "OTLP off-CPU total differs from the pprof's: $o"
[ "$(field "$o" off_linked)" -gt 0 ] || fail "no off-CPU sample links a span in OTLP: $o"
pass "OTLP: a second profile off_cpu/nanoseconds, $(field "$o" off_total) ns as in the pprof, span links"

# Span tables polled (no span-table events, as on a kernel before 6.13 without fexit; here by
# SPANPROF_TEST_CTX_EVENTS=none), the app started by record, which is stopped for its first 1.5 s:
# the app's main thread blocks again and again at one place (its --delay-ms sleeps) before user
# space finds and registers the hook's table, then runs the sleep scenario. A thread keeps its
# process's table (none, then) in its own block record: it must look again once the table is
# registered (the generation user space moves with each change to the table map).
SPANPROF_TEST_CTX_EVENTS=none "$SPANPROF_TEST" record -v --off-cpu -o "$TMP/polled.pb.gz" -- \
	"${OFFCPU_CMD[@]}" --truth "$TMP/polled.truth.json" --blocks 20 --block-ms 20 --delay-ms 3000 \
	--sleep-on-main > "$TMP/polled.txt" 2> "$TMP/polled.err" &
rec=$!
register "$rec"
wait_for_line "$TMP/polled.err" ' sampling .* Hz on ' 60
kill -STOP "$rec"
sleep 1.5
kill -CONT "$rec"
wait "$rec" || { cat "$TMP/polled.txt" "$TMP/polled.err"; fail "record -- OffCpu, tables polled: exit code $?"; }
grep -q 'span tables found by polling' "$TMP/polled.txt" || { cat "$TMP/polled.txt"; fail "the tables were not polled"; }
decode "$TMP/polled.pb.gz"
r=$(node "$ROOT/tests/integration/offcpucheck.js" "$TMP/polled.json" "$TMP/polled.truth.json")
s=$(node -pe "JSON.stringify(($r).scenarios.sleep)")
note "polled, sleep on the main thread: $s"
ratio=$(field "$s" ratio)
ge "$ratio" 0.9 && le "$ratio" 1.1 && le "$(field "$s" wrong_rate)" 0.01 ||
	fail "tables polled: the main thread's sleep scenario $(field "$s" on_ms) ms on its span with its method, app $(field "$s" truth_ms) ms (ratio $ratio, want 0.9..1.1); wrong span $(field "$s" wrong_ms) ms"
pass "tables polled: the main thread, blocked before its table was registered, has its span after (ratio $ratio)"

# The folded output shows off-CPU nanoseconds: the sleep scenario's stacks are there, the kernel's
# under the syscall (the wait it blocked in).
grep -Eq 'Program::BlockSleep.*;do_syscall_64;[^;]+;.* [0-9]+$' "$TMP/offcpu.folded" || {
	grep 'Program::BlockSleep' "$TMP/offcpu.folded" | sed 's/.*Program::BlockSleep/  ...BlockSleep/' | head -5
	fail "--value off-cpu: no off-CPU stack of BlockSleep in the folded output"
}
pass "folded --value off-cpu holds the blocking stacks"

# Paused costs nothing: SIGUSR1 detaches the off-CPU programs, so the blocks of a paused run are
# neither timed nor sent; SIGUSR2 attaches them again, and a block that began before the pause
# (the main thread's wait for --go) is timed from the resume, not across the pause.
waits_for_go() { [ "$(cat "/proc/$1/wchan" 2> /dev/null)" = wait_for_partner ]; }	# fifo_open
# paused_run NAME RESUME: the app blocks (10 blocks of 20 ms per scenario) after a pause, resumed
# first (RESUME 1, after a pause of about a second) or not (0); the profile in $TMP/NAME.json.
paused_run() {
	local name=$1 resume=$2 rec
	mkfifo "$TMP/$name.go"
	start_app --ready ' ready$' "$TMP/$name.out" env DOTNET_STARTUP_HOOKS="$HOOK" \
		"${OFFCPU_CMD[@]}" --truth "$TMP/$name.truth.json" --blocks 10 --block-ms 20 --go "$TMP/$name.go"
	"$SPANPROF" record -p "$APP_PID" --off-cpu -o "$TMP/$name.pb.gz" > "$TMP/$name.txt" 2> "$TMP/$name.err" &
	rec=$!
	register "$rec"
	poll 30 catches_usr1 "$rec" || fail "record does not catch SIGUSR1"
	# The main thread's wait for --go, blocked again now that record is attached.
	echo wait > "$TMP/$name.go"
	wait_for_line "$TMP/$name.out" '^waiting for go 2$'
	poll 30 waits_for_go "$APP_PID" || fail "the app's main thread does not wait for --go again"
	kill -USR1 "$rec"
	wait_for_line "$TMP/$name.err" 'sampling paused at'
	if [ "$resume" = 1 ]; then
		sleep 1	# the pause the main thread's wait must not be billed for
		kill -USR2 "$rec"
		wait_for_line "$TMP/$name.err" 'sampling resumed at'
	fi
	echo go > "$TMP/$name.go"
	wait_for_line "$TMP/$name.out" '^done$' 60
	wait "$rec" || { cat "$TMP/$name.txt" "$TMP/$name.err"; fail "record with a pause: exit code $?"; }
	decode "$TMP/$name.pb.gz"
}

paused_run paused 0
note "$(grep -E '^  off-CPU' "$TMP/paused.txt")"
# Only blocks before the pause may be there: none of the scenarios' or their helpers'.
r=$(node "$ROOT/tests/integration/offcpucheck.js" "$TMP/paused.json" "$TMP/paused.truth.json")
t=$(node -pe "const r = $r; Object.values(r.scenarios).reduce((t, s) => t + s.span_ms + s.on_ms, 0) +
	r.helpers.hold.off_ms + r.helpers.serve.off_ms")
[ "$t" = 0 ] || { cat "$TMP/paused.txt"; fail "$t ms off-CPU of the scenarios, all run while paused: $r"; }
pass "paused: the app's blocks are not timed (no off-CPU time on its scenarios)"

paused_run resumed 1
# the time is the word after "at", whatever the log line's prefix
p=$(awk '/sampling (paused|resumed) at/ { for (i = 1; i < NF; i++) if ($i == "at") t = $(i + 1) }
	/sampling paused at/ { p = t } /sampling resumed at/ { r = t }
	END { if (p && r) printf "%d", (r - p) * 1000 }' "$TMP/resumed.err")
ge "$p" 900 || { cat "$TMP/resumed.err"; fail "paused only $p ms"; }
r=$(node "$ROOT/tests/integration/offcpucheck.js" "$TMP/resumed.json" "$TMP/resumed.truth.json")
s=$(node -pe "JSON.stringify(($r).scenarios.sleep)")
ratio=$(field "$s" ratio)
ge "$ratio" 0.9 && le "$ratio" 1.1 ||
	fail "resumed: sleep's off-CPU $(field "$s" on_ms) ms, the app measured $(field "$s" truth_ms) ms (ratio $ratio, want 0.9..1.1)"
g=$(node -pe "($r).helpers.go.off_ms")
note "resumed after $p ms: sleep $s; the main thread's wait for --go $g ms"
le "$g" "$((p / 2))" || fail "the main thread's wait for --go: $g ms off-CPU, billed across the $p ms pause"
pass "resumed: off-CPU timed again (sleep ratio $ratio); a block from before the pause timed from the resume ($g ms)"
