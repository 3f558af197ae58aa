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
