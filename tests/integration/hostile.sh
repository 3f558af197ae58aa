#!/usr/bin/env bash
# hostile.sh: processes that forge a span table. Garbage records must cost nothing but counted
# outcomes (no crash, output intact); a table whose header lies must be refused.
. "$(dirname "$0")/lib.sh"
need_root

need_built "$FORGED"

# Garbage records behind a plausible header, in a process that passes for .NET.
"$FORGED" garbage 20 "$TMP/libcoreclr.so" > "$TMP/g.pid" & PIDS_TO_KILL+=($!)
wait_for_line "$TMP/g.pid" '^[0-9]'
pid=$(head -1 "$TMP/g.pid")
rc=0
"$SPANPROF" record -p "$pid" -d 3 -o "$TMP/g.pb.gz" > "$TMP/g.txt" 2>&1 || rc=$?
cat "$TMP/g.txt"
[ "$rc" = 0 ] || fail "spanprof exited $rc reading garbage records"
grep -q "pid $pid .*span table v1" "$TMP/g.txt" || fail "the forged table was not registered"
grep -Eq 'invalid \(mid-write\) [1-9]' "$TMP/g.txt" || fail "torn records not counted as invalid"
"$TOOLS/check-pprof.sh" "$TMP/g.pb.gz" > /dev/null || fail "output unreadable after garbage records"
pprof_json "$TMP/g.pb.gz" > "$TMP/g.json"
node -e '
const p = JSON.parse(require("fs").readFileSync(process.argv[1]));
let n = 0;
for (const s of p.samples) for (const [k, v] of Object.entries(s.labels)) {
  if (k === "trace_id" && !/^[0-9a-f]{32}$/.test(v)) throw new Error("bad trace_id " + v);
  if (k === "span_id" && !/^[0-9a-f]{16}$/.test(v)) throw new Error("bad span_id " + v);
  if (k === "trace_id") n++;
}
if (!n) throw new Error("no sample read a record");' "$TMP/g.json" || fail "malformed labels"
pass "garbage records: read, torn ones counted invalid, labels well-formed, output intact"

# A header that points past its mapping: refused, never read.
"$FORGED" bad-header 20 "$TMP/libcoreclr.so" > "$TMP/b.pid" & PIDS_TO_KILL+=($!)
wait_for_line "$TMP/b.pid" '^[0-9]'
pid=$(head -1 "$TMP/b.pid")
"$SPANPROF" record -p "$pid" -d 2 -o "$TMP/b.pb.gz" > "$TMP/b.txt" 2>&1 || fail "spanprof failed"
grep -q "invalid span table: ignored" "$TMP/b.txt" || { cat "$TMP/b.txt"; fail "forged header not refused"; }
grep -Eq 'span context: with span 0, ' "$TMP/b.txt" || fail "a refused table was read"
pass "forged header refused: $(grep -o 'invalid span table[^;]*' "$TMP/b.txt" | head -1)"
