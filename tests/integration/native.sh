#!/usr/bin/env bash
# native.sh: profile the bundled C program (main -> outer -> inner_hot) with real BPF and check
# the stacks, then read the pprof with go tool pprof and pprof-format.
. "$(dirname "$0")/lib.sh"
need_root

need_built "$HOTCHAIN"
"$HOTCHAIN" 30 > "$TMP/hot.pid" &
PIDS_TO_KILL+=($!)
wait_for_line "$TMP/hot.pid" '^[0-9]'
pid=$(head -1 "$TMP/hot.pid")

"$SPANPROF" record -p "$pid" -d 3 -o "$TMP/native.pb.gz" > "$TMP/out.txt"
cat "$TMP/out.txt"
grep -q 'samples taken' "$TMP/out.txt" || fail "no summary on stdout"
grep -q 'top functions by self time' "$TMP/out.txt" || fail "no top functions on stdout"

pprof_json "$TMP/native.pb.gz" > "$TMP/native.json"
total=$(query total "$TMP/native.json" --pid "$pid" | node -pe 'JSON.parse(require("fs").readFileSync(0)).total')
[ "$total" -ge 50 ] || fail "only $total samples of pid $pid in 3 s at 99 Hz"
leaf=$(query leaf "$TMP/native.json" --pid "$pid" --leaf '^inner_hot$')
note "leaf inner_hot: $leaf"
frac=$(node -pe "($leaf).frac")
ge "$frac" 0.90 || fail "inner_hot is the leaf of only $frac of the samples (want >= 0.90)"
chain=$(query chain "$TMP/native.json" --pid "$pid" --leaf '^inner_hot$' --chain '^main$,^outer$,^inner_hot$')
note "chain main->outer->inner_hot: $chain"
ge "$(node -pe "($chain).frac")" 0.90 || fail "main -> outer -> inner_hot missing from the stacks"
pass "native stacks: inner_hot leaf $frac, chain $(node -pe "($chain).frac")"

# Both readers agree on totals, and go tool pprof ranks inner_hot first.
"$TOOLS/check-pprof.sh" "$TMP/native.pb.gz" > "$TMP/check.txt" || { cat "$TMP/check.txt"; fail "check-pprof.sh"; }
HOME=$TMP GOCACHE=$TMP/gocache "$GO" tool pprof -top "$TMP/native.pb.gz" > "$TMP/top.txt" 2>&1 ||
	{ cat "$TMP/top.txt"; fail "go tool pprof -top failed"; }
first=$(awk '/flat%/ { getline; print $NF; exit }' "$TMP/top.txt")
[ "$first" = inner_hot ] || { cat "$TMP/top.txt"; fail "go tool pprof -top: first function is '$first'"; }
pass "go tool pprof -top: inner_hot on top; pprof-format totals match"

# Folded and SVG outputs of the same program.
"$SPANPROF" record -p "$pid" -d 1 -o "$TMP/native.folded" > /dev/null
grep -Eq '^hotchain;(.*;)?main;outer;inner_hot [0-9]+$' "$TMP/native.folded" ||
	{ head "$TMP/native.folded"; fail "folded output lacks hotchain;...;main;outer;inner_hot N"; }
"$SPANPROF" record -p "$pid" -d 1 -o "$TMP/native.svg" > /dev/null
grep -q '<svg' "$TMP/native.svg" && grep -q 'inner_hot' "$TMP/native.svg" || fail "svg lacks inner_hot"
pass "folded and svg outputs"
