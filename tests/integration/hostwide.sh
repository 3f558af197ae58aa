#!/usr/bin/env bash
# hostwide.sh: profile the whole host (no -p) into an SVG flame graph; stop early with SIGINT and
# SIGTERM and still get complete output.
. "$(dirname "$0")/lib.sh"
need_root
need_built "$HOTCHAIN"

# Two known busy processes so the host profile has something to show besides idle.
spawn /dev/null "$HOTCHAIN" 30
spawn /dev/null sh -c 'while :; do :; done'

record host.svg -d 3
grep -q '<svg' "$TMP/host.svg" || fail "not an SVG"
grep -q 'inner_hot' "$TMP/host.svg" || fail "host flame graph lacks inner_hot"
grep -q '>hotchain<\|hotchain (' "$TMP/host.svg" || grep -q 'hotchain' "$TMP/host.svg" || fail "no hotchain process frame"
nproc=$(grep -c '^  \.NET pid' "$TMP/host.txt" || true)
node "$TOOLS/flamegraph-check.js" "$TMP/host.svg" inner_hot > "$TMP/fg.txt" || { cat "$TMP/fg.txt"; fail "flame graph script check"; }
pass "host-wide SVG flame graph ($(stat -c %s "$TMP/host.svg") bytes, .NET processes: $nproc)"

# Host-wide pprof: several processes, each sample labelled with its process.
record host.pb.gz -d 2
decode "$TMP/host.pb.gz"
procs=$(node -e 'const p=JSON.parse(require("fs").readFileSync(process.argv[1]));
  console.log(new Set(p.samples.map(s=>s.labels.process_name)).size)' "$TMP/host.json")
[ "$procs" -ge 2 ] || fail "host-wide profile has $procs processes"
pass "host-wide pprof: $procs processes"

# SIGINT and SIGTERM stop a run without -d and still write complete output.
for sig in INT TERM; do
	record_bg sig.pb.gz
	sleep 2
	kill -"$sig" "$RECORD_PID"
	rc=0; wait "$RECORD_PID" || rc=$?
	[ "$rc" = 0 ] || fail "SIG$sig: exit code $rc"
	grep -q 'samples taken' "$TMP/sig.txt" || fail "SIG$sig: no summary"
	check_pprof "$TMP/sig.pb.gz" "SIG$sig: output unreadable"
	pass "SIG$sig: stopped early, complete pprof ($(grep -o '[0-9]* samples taken' "$TMP/sig.txt"))"
done
