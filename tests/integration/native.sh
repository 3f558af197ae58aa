#!/usr/bin/env bash
# native.sh: profile the bundled C program (main -> outer -> inner_hot) with real BPF and check
# the stacks, then read the pprof with go tool pprof and pprof-format.
. "$(dirname "$0")/lib.sh"
need_root
need_built "$HOTCHAIN"

start_app --pid-line --timeout 30 "$TMP/hot.out" "$HOTCHAIN" 30
pid=$APP_PID

record native.pb.gz -p "$pid" -d 3
cat "$TMP/native.txt"
grep -q 'samples taken' "$TMP/native.txt" || fail "no summary on stdout"
grep -q 'top functions by self time' "$TMP/native.txt" || fail "no top functions on stdout"

decode "$TMP/native.pb.gz"
total=$(count_samples "$TMP/native.json" --pid "$pid")
[ "$total" -ge 50 ] || fail "only $total samples of pid $pid in 3 s at 99 Hz"
leaf=$(query leaf "$TMP/native.json" --pid "$pid" --leaf '^inner_hot$')
note "leaf inner_hot: $leaf"
frac=$(field "$leaf" frac)
ge "$frac" 0.90 || fail "inner_hot is the leaf of only $frac of the samples (want >= 0.90)"
chain=$(query chain "$TMP/native.json" --pid "$pid" --leaf '^inner_hot$' --chain '^main$,^outer$,^inner_hot$')
note "chain main->outer->inner_hot: $chain"
ge "$(field "$chain" frac)" 0.90 || fail "main -> outer -> inner_hot missing from the stacks"
pass "native stacks: inner_hot leaf $frac, chain $(field "$chain" frac)"

# Both readers agree on totals, and go tool pprof ranks inner_hot first.
check_pprof "$TMP/native.pb.gz" "check-pprof.sh"
HOME=$TMP GOCACHE=$TMP/gocache "$GO" tool pprof -top "$TMP/native.pb.gz" > "$TMP/top.txt" 2>&1 ||
	{ cat "$TMP/top.txt"; fail "go tool pprof -top failed"; }
first=$(awk '/flat%/ { getline; print $NF; exit }' "$TMP/top.txt")
[ "$first" = inner_hot ] || { cat "$TMP/top.txt"; fail "go tool pprof -top: first function is '$first'"; }
pass "go tool pprof -top: inner_hot on top; pprof-format totals match"

# Folded and SVG outputs of the same program.
record native.folded -p "$pid" -d 1
grep -Eq '^hotchain;(.*;)?main;outer;inner_hot [0-9]+$' "$TMP/native.folded" ||
	{ head "$TMP/native.folded"; fail "folded output lacks hotchain;...;main;outer;inner_hot N"; }
record native.svg -p "$pid" -d 1
grep -q '<svg' "$TMP/native.svg" && grep -q 'inner_hot' "$TMP/native.svg" || fail "svg lacks inner_hot"
pass "folded and svg outputs"

# SIGUSR1 pauses sampling and SIGUSR2 resumes it (scripts/bench-slices.py switches record so):
# the paused time has no samples, and both switches are said on stderr with their time.
"$SPANPROF" record -p "$pid" -F 999 -d 4 -o "$TMP/pause.pb.gz" > "$TMP/pause.txt" 2> "$TMP/pause.err" &
rec=$!
register "$rec"
poll 10 catches_usr1 "$rec" || fail "record does not catch SIGUSR1"
sleep 0.5
kill -USR1 "$rec"
sleep 1.5
kill -USR2 "$rec"
wait "$rec" || { cat "$TMP/pause.txt" "$TMP/pause.err"; fail "record with a pause: exit code $?"; }
paused=$(awk '/sampling paused at/ { sub(/.*sampling paused at /, ""); p = $1 } /sampling resumed at/ { sub(/.*sampling resumed at /, ""); r = $1 } END { if (p && r) print r - p }' "$TMP/pause.err")
[ -n "$paused" ] && ge "$paused" 1.2 || { cat "$TMP/pause.err"; fail "no pause of >= 1.2 s said on stderr"; }
taken=$(sed -n 's/.* \([0-9]*\) samples taken.*/\1/p' "$TMP/pause.txt")
# One busy thread: at most 999 samples a second while sampling, and the run is 4 s.
max=$(awk -v p="$paused" 'BEGIN { printf "%d", 999 * (4 - p) * 1.05 }')
[ -n "$taken" ] && [ "$taken" -le "$max" ] && [ "$taken" -ge 300 ] ||
	{ cat "$TMP/pause.txt" "$TMP/pause.err"; fail "$taken samples taken with $paused s of 4 paused (want 300-$max)"; }
grep -Eq '^spanprof: [0-9.]+s at 999 Hz \(1\.[0-9]+s of it paused\), ' "$TMP/pause.txt" ||
	{ head -1 "$TMP/pause.txt"; fail "the summary does not say how long sampling was paused"; }
pass "SIGUSR1/SIGUSR2: paused ${paused}s, $taken samples taken (at most $max)"

# record -p ends when the process exits, as perf record -p does, and writes what it sampled.
start_app --pid-line --timeout 30 "$TMP/short.out" "$HOTCHAIN" 4
short=$APP_PID
t0=$(date +%s)
"$SPANPROF" record -p "$short" -d 60 -o "$TMP/short.pb.gz" > "$TMP/short.txt" 2> "$TMP/short.err" &
rec=$!
register "$rec"
poll 20 gone "$rec" || { cat "$TMP/short.err"; fail "record -p still runs 20 s after a 4 s process"; }
wait "$rec" || { cat "$TMP/short.txt" "$TMP/short.err"; fail "record -p of an exiting process: exit code $?"; }
grep -q 'the process exited: recording ends' "$TMP/short.err" || { cat "$TMP/short.err"; fail "no word of the exit"; }
decode "$TMP/short.pb.gz"
n=$(count_samples "$TMP/short.json" --pid "$short")
[ "$n" -ge 20 ] || fail "only $n samples of a busy process's last seconds"
pass "record -p ends when the process exits (after $(($(date +%s) - t0)) s, $n samples)"
