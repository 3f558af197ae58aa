#!/usr/bin/env bash
# dotnet-aot.sh: HotChain published with PublishAot (make shapes: build/shapes/aot/HotChain), its
# symbols in HotChain.dbg next to it (found by .gnu_debuglink). Frames in the binary that are
# managed methods must carry .NET names, "[HotChain] Program::HotLoop", read back from
# ILCompiler's symbols (perfmap/aotname.c); bar (issue 32): >= 98 % of the leaves in managed code.
. "$(dirname "$0")/lib.sh"
need_root
APP=${AOT_APP:-$BUILD/shapes/aot/HotChain/HotChain}
# Published by make shapes (minutes), which make test-matrix runs (MATRIX=1: required there).
[ -e "$APP" ] || [ -n "${MATRIX:-}" ] || skip "$APP not built (make shapes; make test-matrix)"
need_built "$APP"
BAR=${AOT_BAR:-0.98}

# aot_fracs JSON PID: leaves that are managed methods of the binary (a .NET name, or an ILCompiler
# symbol kept), and the .NET-named fraction; the same over every frame.
aot_fracs() {
	node -e '
const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const net = (f) => /^\[[^\]]+\] \S.*::/.test(f);
const raw = (f) => /^(S_P_|HotChain_|System_|Microsoft_|unbox_|<Boxed>)\w*__/.test(f);
let l = 0, ln = 0, f = 0, fn = 0, main = 0;
for (const s of p.samples) {
  if (s.labels.pid !== process.argv[2]) continue;
  const c = Number(s.values[0]), leaf = s.stack[s.stack.length - 1] || "";
  if (net(leaf) || raw(leaf)) { l += c; if (net(leaf)) ln += c; }
  for (const x of s.stack) {
    if (net(x) || raw(x)) { f += c; if (net(x)) fn += c; }
    if (x === "[HotChain] Program::Main") { main += c; break; }
  }
}
console.log(JSON.stringify({ leaves: l, leaf_frac: l ? ln / l : 0, frames: f, frame_frac: f ? fn / f : 0, main }));
' "$1" "$2"
}

for mode in jit r2r; do
	start_app --ready '^pid' "$TMP/$mode.out" "$APP" 30 "$mode"; pid=$APP_PID
	sleep 1
	record "$mode.pb.gz" -p "$pid" -d 5 -F 199
	decode "$TMP/$mode.pb.gz"
	d=$(aot_fracs "$TMP/$mode.json" "$pid")
	note "$mode: $d"
	matrix_row "$mode" "$(ge "$(field "$d" leaf_frac)" "$BAR" && [ "$(field "$d" leaves)" -ge 50 ] && echo pass || echo fail)" \
		leaf_frac="$(field "$d" leaf_frac)" leaves="$(field "$d" leaves)"
	grep -a "Native AOT" "$TMP/$mode.txt" || true
	[ "$(field "$d" leaves)" -ge 50 ] || { query top "$TMP/$mode.json" --pid "$pid"; fail "$mode: too few managed leaves ($d)"; }
	ge "$(field "$d" leaf_frac)" "$BAR" || { query top "$TMP/$mode.json" --pid "$pid"; fail "$mode: .NET-named managed leaves $(field "$d" leaf_frac) (want >= $BAR)"; }
	[ "$(field "$d" main)" -ge 1 ] || { query top "$TMP/$mode.json" --pid "$pid"; fail "$mode: no [HotChain] Program::Main frame"; }
	pass "$mode: .NET-named managed leaves $(field "$d" leaf_frac) of $(field "$d" leaves), frames $(field "$d" frame_frac)"
	stop "$pid"
done
