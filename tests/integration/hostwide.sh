#!/usr/bin/env bash
# hostwide.sh: profile the whole host (no -p) into an SVG flame graph; stop early with SIGINT and
# SIGTERM and still get complete output.
. "$(dirname "$0")/lib.sh"
need_root

# Two known busy processes so the host profile has something to show besides idle.
need_built "$HOTCHAIN"
"$HOTCHAIN" 30 > /dev/null & PIDS_TO_KILL+=($!)
sh -c 'while :; do :; done' & PIDS_TO_KILL+=($!)

"$SPANPROF" record -d 3 -o "$TMP/host.svg" > "$TMP/out.txt"
grep -q '<svg' "$TMP/host.svg" || fail "not an SVG"
grep -q 'inner_hot' "$TMP/host.svg" || fail "host flame graph lacks inner_hot"
grep -q '>hotchain<\|hotchain (' "$TMP/host.svg" || grep -q 'hotchain' "$TMP/host.svg" || fail "no hotchain process frame"
nproc=$(grep -c '^  \.NET pid' "$TMP/out.txt" || true)
node "$TOOLS/flamegraph-check.js" "$TMP/host.svg" inner_hot > "$TMP/fg.txt" || { cat "$TMP/fg.txt"; fail "flame graph script check"; }
pass "host-wide SVG flame graph ($(stat -c %s "$TMP/host.svg") bytes, .NET processes: $nproc)"

# Host-wide pprof: several processes, each sample labelled with its process.
"$SPANPROF" record -d 2 -o "$TMP/host.pb.gz" > /dev/null
pprof_json "$TMP/host.pb.gz" > "$TMP/host.json"
procs=$(node -e 'const p=JSON.parse(require("fs").readFileSync(process.argv[1]));
  console.log(new Set(p.samples.map(s=>s.labels.process_name)).size)' "$TMP/host.json")
[ "$procs" -ge 2 ] || fail "host-wide profile has $procs processes"
pass "host-wide pprof: $procs processes"

# SIGINT and SIGTERM stop a run without -d and still write complete output.
for sig in INT TERM; do
	"$SPANPROF" record -o "$TMP/sig.pb.gz" > "$TMP/sig.txt" &
	sp=$!
	sleep 2
	kill -"$sig" "$sp"
	rc=0; wait "$sp" || rc=$?
	[ "$rc" = 0 ] || fail "SIG$sig: exit code $rc"
	grep -q 'samples taken' "$TMP/sig.txt" || fail "SIG$sig: no summary"
	"$TOOLS/check-pprof.sh" "$TMP/sig.pb.gz" > "$TMP/check.txt" || { cat "$TMP/check.txt"; fail "SIG$sig: output unreadable"; }
	pass "SIG$sig: stopped early, complete pprof ($(grep -o '[0-9]* samples taken' "$TMP/sig.txt"))"
done
