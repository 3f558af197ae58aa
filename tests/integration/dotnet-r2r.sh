#!/usr/bin/env bash
# dotnet-r2r.sh: a CoreLib-heavy app (most of its CPU in precompiled ReadyToRun code) profiled
# three ways: perf maps on from the start (runtime 10's jitdump dies early, so ReadyToRun code is
# named from the image), turned on by spanprof, and left off (--no-enable-perfmap: only the
# ReadyToRun frames can be named). Bars (issue 8): named .NET leaves >= 98 %, frames >= 99 %.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd dotnet

APP=${R2R_APP:-$BUILD/apps/CoreLibMix/CoreLibMix}	# R2R_APP: the same app in another shape (make test-matrix)
need_built "$APP"
LEAF_BAR=${LEAF_BAR:-0.98}
FRAME_BAR=${FRAME_BAR:-0.99}

# check_case NAME PID PROFILE [LEAF_BAR]: the two bars on one recording.
check_case() {
	local name=$1 pid=$2 prof=$3 json=${3%.pb.gz}.json d LEAF_BAR=${4:-$LEAF_BAR}
	decode "$prof"
	d=$(query dotnet "$json" --pid "$pid")
	note "$name: $d"
	[ "$(field "$d" leaves)" -ge 100 ] || fail "$name: too few .NET samples ($d)"
	ge "$(field "$d" leaf_frac)" "$LEAF_BAR" || { query top "$json" --pid "$pid"; fail "$name: named .NET leaves $(field "$d" leaf_frac) (want >= $LEAF_BAR)"; }
	ge "$(field "$d" frame_frac)" "$FRAME_BAR" || { query top "$json" --pid "$pid"; fail "$name: named .NET frames $(field "$d" frame_frac) (want >= $FRAME_BAR)"; }
	pass "$name: named .NET leaves $(field "$d" leaf_frac), frames $(field "$d" frame_frac)"
}

# r2r_fracs JSON PID: ReadyToRun frames (named, or a .dll's module+offset) and leaves, and the
# named fractions of each.
r2r_fracs() {
	node -e '
const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const named = (f) => /\[[^\]]+\] \S.*::/.test(f), r2r = (f) => named(f) || /\.dll\+0x[0-9a-f]+$/.test(f);
let l = 0, ln = 0, f = 0, fn = 0;
for (const s of p.samples) {
  if (s.labels.pid !== process.argv[2]) continue;
  const c = Number(s.values[0]), leaf = s.stack[s.stack.length - 1] || "";
  if (r2r(leaf)) { l += c; if (named(leaf)) ln += c; }
  for (const x of s.stack) if (r2r(x)) { f += c; if (named(x)) fn += c; }
}
console.log(JSON.stringify({ leaves: l, leaf_frac: l ? ln / l : 0, frames: f, frame_frac: f ? fn / f : 0 }));
' "$1" "$2"
}

# 1. DOTNET_PerfMapEnabled=1 from the start.
start_app --ready '^pid' "$TMP/a.out" env DOTNET_PerfMapEnabled=1 "$APP" 14; pid=$APP_PID
wait_busy 30 "$pid" 50 "CoreLibMix in its loop"
record a.pb.gz -p "$pid" -d 6 -F 199
grep -q "pid $pid .*reading perf map" "$TMP/a.txt" || { cat "$TMP/a.txt"; fail "perf map not read"; }
check_case "perfmap-at-start" "$pid" "$TMP/a.pb.gz"
stop "$pid"

# 2. Started without perf maps: spanprof turns them on.
start_app --ready '^pid' "$TMP/b.out" env "$APP" 14; pid=$APP_PID
wait_busy 30 "$pid" 50 "CoreLibMix in its loop"
record b.pb.gz -p "$pid" -d 6 -F 199
# A host-wide spanprof of someone else may have turned them on first: the naming is the same.
grep -q "pid $pid .*perf map enabled at run time" "$TMP/b.txt" ||
	grep -q "pid $pid .*reading perf map" "$TMP/b.txt" || { cat "$TMP/b.txt"; fail "perf map not enabled"; }
# The runtime's copied GC write barrier ("stub InitThreadManagerPerfMapData<JIT_CopiedWriteBarriers>"
# in anonymous memory, 3-8 % of leaves here, under ArraySortHelper.IntroSort) and its precode
# thunks are logged only when perf maps are on at startup: after a late enable they are named as
# the libcoreclr.so code they copy (case 4 checks those names against the runtime's own).
check_case "enabled-at-runtime" "$pid" "$TMP/b.pb.gz"
grep -q "pid $pid .*[1-9][0-9]* runtime stub addresses named as the libcoreclr.so code" "$TMP/b.txt" ||
	{ cat "$TMP/b.txt"; fail "enabled-at-runtime: no runtime stub named as the code it copies"; }
stop "$pid"

# 3. --no-enable-perfmap: no perf map at all, so JIT frames stay unnamed; every ReadyToRun frame
#    (named, or a .dll's module+offset) must be named from the image. The diagnostics IPC is off
#    in the app, so that no other profiler on the host can turn its perf maps on either.
start_app --ready '^pid' "$TMP/c.out" env DOTNET_EnableDiagnostics_IPC=0 "$APP" 14; pid=$APP_PID
wait_busy 30 "$pid" 50 "CoreLibMix in its loop"
record c.pb.gz -p "$pid" -d 6 -F 199 --no-enable-perfmap --tiers
[ ! -e "/tmp/perf-$pid.map" ] || { ls -la --time-style=full-iso "/tmp/perf-$pid.map"; head -3 "/tmp/perf-$pid.map"; grep -a . "$TMP/c.txt" | head -8; fail "--no-enable-perfmap still enabled perf maps"; }
decode "$TMP/c.pb.gz"
d=$(r2r_fracs "$TMP/c.json" "$pid")
note "no-enable-perfmap (ReadyToRun frames): $d"
# Hot precompiled methods are soon re-jitted at tier 1, so ReadyToRun code is mostly callers here.
[ "$(field "$d" frames)" -ge 200 ] || fail "no-enable-perfmap: too few ReadyToRun frames ($d)"
[ "$(field "$d" leaves)" -lt 20 ] || ge "$(field "$d" leaf_frac)" "$LEAF_BAR" ||
	{ query top "$TMP/c.json" --pid "$pid"; fail "no-enable-perfmap: named ReadyToRun leaves $(field "$d" leaf_frac)"; }
ge "$(field "$d" frame_frac)" "$FRAME_BAR" || fail "no-enable-perfmap: named ReadyToRun frames $(field "$d" frame_frac)"
grep -q 'PreJIT' "$TMP/c.json" || fail "no-enable-perfmap: no [PreJIT] frame"
pass "no-enable-perfmap: named ReadyToRun leaves $(field "$d" leaf_frac), frames $(field "$d" frame_frac)"
stop "$pid"

# 3b. The same without tiered compilation: precompiled code is never replaced, so most leaves are
#     ReadyToRun code and the leaf bar is measured on hundreds of them.
start_app --ready '^pid' "$TMP/c2.out" env DOTNET_EnableDiagnostics_IPC=0 DOTNET_TieredCompilation=0 "$APP" 14; pid=$APP_PID
wait_busy 30 "$pid" 50 "CoreLibMix in its loop"
record c2.pb.gz -p "$pid" -d 6 -F 199 --no-enable-perfmap
decode "$TMP/c2.pb.gz"
d=$(r2r_fracs "$TMP/c2.json" "$pid")
note "no-enable-perfmap, no tiering (ReadyToRun frames): $d"
[ "$(field "$d" leaves)" -ge 100 ] || fail "no tiering: too few ReadyToRun leaves ($d)"
ge "$(field "$d" leaf_frac)" "$LEAF_BAR" ||
	{ query top "$TMP/c2.json" --pid "$pid"; fail "no tiering: named ReadyToRun leaves $(field "$d" leaf_frac)"; }
ge "$(field "$d" frame_frac)" "$FRAME_BAR" || fail "no tiering: named ReadyToRun frames $(field "$d" frame_frac)"
pass "no-enable-perfmap, no tiering: named ReadyToRun leaves $(field "$d" leaf_frac) of $(field "$d" leaves), frames $(field "$d" frame_frac)"
stop "$pid"

# 4. The copies named right: perf maps on from the start, but only the runtime sees its perf map
#    (moved away before spanprof starts; it keeps writing to it). A frame spanprof names as a copy
#    of libcoreclr.so code must not lie in code the runtime names as anything but a stub (a JIT
#    method misnamed), and some must lie in the runtime's own stub ranges. Runtime 10.0.12 does
#    not log every page of its interleaved stub heaps: next to the logged 64 KiB
#    "ReportStubBlock<MethodCallThunk>" blocks, executable pages of the same memfd mapping that
#    hold its call-counting stubs (`mov rax,[rip+..]; dec word [rax]; je ..; jmp [rip+..]`, a
#    template copied from libcoreclr.so; seen in a live process) stay unlogged for the process's
#    life. Copies found there are counted, and allowed, as unlogged.
start_app --ready '^pid' "$TMP/d.out" env DOTNET_PerfMapEnabled=3 "$APP" 14; pid=$APP_PID
wait_busy 30 "$pid" 50 "CoreLibMix in its loop"
mv "/tmp/perf-$pid.map" "$TMP/hidden-$pid.map"
record d.pb.gz -p "$pid" -d 6 -F 199 --no-enable-perfmap
"$GO" tool pprof -raw "$TMP/d.pb.gz" 2> /dev/null | awk '/\[copy\]/ { print $2 }' > "$TMP/d.copies"
r=$(node -e '
const fs = require("fs");
const ranges = fs.readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map((l) => {
  const [a, n, ...name] = l.split(" "); const s = BigInt(a.startsWith("0x") ? a : "0x" + a);
  return { s, e: s + BigInt("0x" + n), stub: name[0] === "stub" };
});
const copies = fs.readFileSync(process.argv[2], "utf8").split("\n").filter(Boolean).map((x) => BigInt(x));
const hex = (a) => "0x" + a.toString(16), at = (a) => ranges.filter((r) => a >= r.s && a < r.e);
const in_stub = copies.filter((a) => at(a).some((r) => r.stub));
const in_method = copies.filter((a) => !at(a).some((r) => r.stub) && at(a).length);
const unlogged = copies.filter((a) => !at(a).length);
console.log(JSON.stringify({ copies: copies.length, in_stub: in_stub.length, unlogged: unlogged.map(hex), in_method: in_method.map(hex) }));
' "$TMP/hidden-$pid.map" "$TMP/d.copies")
note "copies checked against the runtime's own perf map: $r"
[ "$(field "$r" in_stub)" -ge 1 ] || { grep -a "pid $pid" "$TMP/d.txt"; fail "no frame named as a copy of libcoreclr.so code in a stub range of the runtime: $r"; }
[ "$(field "$r" in_method.length)" = 0 ] || fail "frames named as copies inside code the runtime names as a method: $r"
pass "no frame named as a copy ($(field "$r" copies) addresses) is in code the runtime names as a method; $(field "$r" in_stub) in its stub ranges"
stop "$pid"
rm -f "$TMP/hidden-$pid.map"
