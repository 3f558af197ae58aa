#!/usr/bin/env bash
# leaf.sh: a leaf that has not set up its frame keeps its caller. Native: leafcall's mix() (-O2,
# no frame) is called 3:1 from caller_a and caller_b; the caller must be under it in >= 95 % of its
# samples, in that ratio within 10 points, and no stack may show a caller under a callee that a
# DWARF unwind (perf record --call-graph dwarf, the same program) never shows. JIT: LeafCall's
# Mix (the JIT gives it no frame: checked from its code bytes) from CallerA and CallerB, 3:1.
. "$(dirname "$0")/lib.sh"
need_root
LEAFCALL=$BUILD/apps/native/leafcall
APP=$BUILD/apps/LeafCall/LeafCall
need_built "$LEAFCALL"

# check_callers NAME JSON PID LEAF-RE A B: A and B under the leaf in >= 95 % of its samples, A's
# share of them 0.75 within 0.10.
check_callers() {
	local name=$1 json=$2 pid=$3 leaf=$4 a=$5 b=$6 r n na nb
	r=$(query callers "$json" --pid "$pid" --leaf "$leaf")
	note "$name: callers of the leaf: $r"
	n=$(field "$r" leaf_samples)
	na=$(node -pe "($r).callers['$a'] || 0")
	nb=$(node -pe "($r).callers['$b'] || 0")
	[ "$n" -ge 100 ] || fail "$name: only $n samples with the leaf $leaf"
	ge "$(node -pe "($na + $nb) / $n")" 0.95 ||
		fail "$name: $a or $b under the leaf in $na + $nb of $n samples (want >= 95 %)"
	ge "$(node -pe "Math.abs($na / ($na + $nb) - 0.75) <= 0.10 ? 1 : 0")" 1 ||
		fail "$name: $a:$b = $na:$nb, want 3:1 within 10 points"
	pass "$name: caller present in $(node -pe "(100 * ($na + $nb) / $n).toFixed(1)") % of $n leaf samples, $a $(node -pe "(100 * $na / ($na + $nb)).toFixed(1)") %"
}

# 1. Native: spanprof, then perf's DWARF unwind of the same program.
start_app --pid-line --timeout 30 "$TMP/leafcall.out" "$LEAFCALL" 30
pid=$APP_PID
record native.pb.gz -p "$pid" -d 4 -F 499
grep 'leaf callers' "$TMP/native.txt" || true
decode "$TMP/native.pb.gz"
check_callers native "$TMP/native.json" "$pid" '^mix$' caller_a caller_b

if command -v perf > /dev/null; then
	perf record -q -e cpu-clock -F 499 --call-graph dwarf -p "$pid" -o "$TMP/perf.data" -- sleep 3 \
		> "$TMP/perf.txt" 2>&1 || { cat "$TMP/perf.txt"; fail "perf record failed"; }
	# "callee<TAB>caller" for every pair of adjacent user frames perf shows (inlined frames left
	# out: a frame-pointer walk cannot see them; kernel frames too: the kernel's own unwinder
	# gives both tools those, and a rare kernel path one run saw and the other did not is no
	# fault of either).
	perf script -i "$TMP/perf.data" -F ip,sym 2> /dev/null | awk '
		/^[[:space:]]*$/ { prev = ""; next }
		/\(inlined\)$/ { next }
		$1 ~ /^ffff/ { prev = ""; next }
		{ $1 = ""; sub(/^ /, ""); if (prev != "" && $0 != "") print prev "\t" $0; prev = $0 }' \
		| sort -u > "$TMP/perf.pairs"
	[ -s "$TMP/perf.pairs" ] || fail "perf script gave no stacks"
	grep -q "^mix	caller_a$" "$TMP/perf.pairs" || { head "$TMP/perf.pairs"; fail "perf's DWARF unwind has no mix <- caller_a"; }
	r=$(query unwound "$TMP/native.json" --pid "$pid" --pairs "$TMP/perf.pairs")
	note "against perf --call-graph dwarf: $r"
	[ "$(field "$r" bad)" = 0 ] || fail "stacks with a caller perf's DWARF unwind never shows: $r"
	pass "native: every caller under a callee is one perf's DWARF unwind shows too ($(field "$r" checked) samples)"
else
	note "perf not installed: DWARF comparison skipped"
fi
stop "$pid"

# 2. JIT: Mix must really be frameless, or the case proves nothing.
need_cmd dotnet
need_built "$APP"
start_app "$TMP/leafjit.out" env DOTNET_PerfMapEnabled=3 "$APP" 30
pid=$APP_PID
record jit.pb.gz -p "$pid" -d 5 -F 499
grep 'leaf callers' "$TMP/jit.txt" || true
map=/tmp/perf-$pid.map
start=$(awk '/Program::Mix\(/ { print $1; exit }' "$map")
[ -n "$start" ] || fail "Mix not in $map"
first=$(dd if="/proc/$pid/mem" bs=1 skip=$((16#${start#0x})) count=4 iflag=skip_bytes 2> /dev/null | od -An -tx1 | tr -d ' \n')
note "Mix at $start starts with $first"
case $first in
55*) fail "Mix has a frame (push rbp): the JIT case proves nothing" ;;
esac
decode "$TMP/jit.pb.gz"
check_callers jit "$TMP/jit.json" "$pid" 'Program::Mix\(' '[LeafCall] Program::CallerA(uint64)' '[LeafCall] Program::CallerB(uint64)'
