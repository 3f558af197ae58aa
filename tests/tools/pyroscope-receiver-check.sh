#!/usr/bin/env bash
# pyroscope-receiver-check.sh: spanprof's Pyroscope exporter end to end against the local receiver:
# pyroscope-push (our encoder + delivery) posts synthetic span-labelled profiles to
# pyroscope-receiver.js, which decodes them with protobufjs and pprof-format; what it decoded must
# match what was built, the raw profiles must read in go tool pprof, and the receiver's failure
# modes (503 for a while, 400, hang, garbage) must give the retries and drops they should.
#
# Usage: pyroscope-receiver-check.sh [BUILD]   (default build; needs BUILD/tools/pyroscope-push:
#        make BUILD=... BUILD/tools/pyroscope-push). KEEP=1 keeps the work folder.
# Exit: 0 all passed, 1 a check failed, 2 setup error. Ends with "N passed, N failed".
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-${BUILD:-build}}
case $build in /*) ;; *) build=$root/$build ;; esac
push=$build/tools/pyroscope-push
NODE=${NODE:-$(command -v node || true)}
[ -x "$push" ] || { echo "pyroscope-receiver-check: $push missing (make BUILD=... $push)" >&2; exit 2; }
[ -n "$NODE" ] || { echo "pyroscope-receiver-check: node not found" >&2; exit 2; }
if [ ! -f "$here/node_modules/protobufjs/package.json" ] || [ ! -f "$here/node_modules/pprof-format/package.json" ]; then
	(cd "$here" && npm ci --no-audit --no-fund --silent) >&2 || { echo "pyroscope-receiver-check: npm ci failed" >&2; exit 2; }
fi

tmp=$(mktemp -d)
recv_pid=
cleanup() {
	[ -n "$recv_pid" ] && kill "$recv_pid" 2>/dev/null && wait "$recv_pid" 2>/dev/null
	if [ "${KEEP:-0}" = 1 ]; then echo "pyroscope-receiver-check: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

"$NODE" "$here/pyroscope-receiver.js" --port 0 --ready "$tmp/port" --out "$tmp/out.jsonl" \
	--stacks 2>"$tmp/receiver.err" &
recv_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || { cat "$tmp/receiver.err" >&2; echo "pyroscope-receiver-check: receiver did not start" >&2; exit 2; }
port=$(cat "$tmp/port")
base=http://127.0.0.1:$port
: >"$tmp/out.jsonl"

# control JSON: changes the receiver's behaviour
control() {
	"$NODE" -e '
const req = require("http").request(process.argv[1] + "/control",
  { method: "POST", headers: { "Content-Type": "application/json" } }, (res) => {
    res.resume(); res.on("end", () => process.exit(res.statusCode === 200 ? 0 : 1)); });
req.on("error", (e) => { console.error(e.message); process.exit(1); });
req.end(process.argv[2]);' "$base" "$1"
}

# post CONTENT_TYPE BODY: a raw POST to the push route; prints the HTTP status
post() {
	"$NODE" -e '
const req = require("http").request(process.argv[1] + "/push.v1.PusherService/Push",
  { method: "POST", headers: { "Content-Type": process.argv[2] } }, (res) => {
    res.resume(); res.on("end", () => console.log(res.statusCode)); });
req.on("error", (e) => { console.error(e.message); process.exit(1); });
req.end(process.argv[3]);' "$base" "$1" "$2"
}

# run NAME ARGS...: one push; its JSON summary in $tmp/NAME.json, the receiver's lines for it in
# $tmp/NAME.lines, its exit code in $tmp/NAME.rc, its run time (ms) in $tmp/NAME.ms
run() {
	local name=$1 before t0 rc
	shift
	before=$(wc -l <"$tmp/out.jsonl")
	t0=$(date +%s%N)
	"$push" --url "$base" "$@" >"$tmp/$name.json" 2>"$tmp/$name.err"
	rc=$?
	echo $(( ($(date +%s%N) - t0) / 1000000 )) >"$tmp/$name.ms"
	echo "$rc" >"$tmp/$name.rc"
	sleep 0.1	# the receiver writes its line after answering
	tail -n +$((before + 1)) "$tmp/out.jsonl" >"$tmp/$name.lines"
}

# expect NAME DESCRIPTION JS: JS (an expression over push = the summary, lines = the receiver's
# lines, last = the last line, rc, ms) must be true
expect() {
	local name=$1 what=$2 js=$3 out
	if out=$("$NODE" -e '
const fs = require("fs");
const [dir, name, js] = process.argv.slice(1);
const read = (f) => fs.readFileSync(`${dir}/${name}.${f}`, "utf8");
const push = (() => { try { return JSON.parse(read("json")); } catch (e) { return {}; } })();
const lines = read("lines").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const last = lines[lines.length - 1] || {};
const rc = Number(read("rc")), ms = Number(read("ms"));
const sum = (a, f) => a.reduce((s, x) => s + f(x), 0);
const canon = (x) => (x && typeof x === "object" && !Array.isArray(x) ?
  Object.keys(x).sort().reduce((o, k) => (o[k] = canon(x[k]), o), {}) : x);
const same = (a, b) => JSON.stringify(canon(a)) === JSON.stringify(canon(b));	// objects: any key order
let v;
try { v = eval(js); } catch (e) { console.log(`threw ${e.message}`); process.exit(1); }
if (!v) { console.log(`push=${JSON.stringify(push)} lines=${JSON.stringify(lines).slice(0, 600)}`); process.exit(1); }
' "$tmp" "$name" "$js" 2>&1); then
		ok "$what"
	else
		bad "$what: $js: $out"
	fi
}

# ---- delivered and decoded -------------------------------------------------------------------
run basic --samples 200 --spans 4 --tenant team-a --dump "$tmp/basic"
expect basic "basic: delivered once, no retry" 'rc === 0 && push.sent_ok === 1 && push.retried === 0 && lines.length === 1 && last.answered === 200'
expect basic "basic: Connect headers, tenant" 'last.path === "/push.v1.PusherService/Push" && last.headers["content-type"] === "application/proto" && last.headers["connect-protocol-version"] === "1" && last.headers["x-scope-orgid"] === "team-a"'
expect basic "basic: series labels cleaned, __name__ and service_name first" 'same(Object.keys(last.series[0].labels), ["__name__", "service_name", "k8s_namespace"]) && last.series[0].labels.service_name === "checkout" && last.series[0].labels.__name__ === "process_cpu"'
expect basic "basic: samples, totals and span totals as built" 'last.series.length === 1 && last.series[0].profiles.length === 1 && last.series[0].profiles[0].samples === push.samples && last.series[0].profiles[0].total === push.total && last.series[0].profiles[0].sampleLabels.span_id === push.withSpan && same(last.series[0].profiles[0].spans, push.spans)'
expect basic "basic: profile id is a UUID, cpu time = samples x period" '/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(last.series[0].profiles[0].id) && last.series[0].profiles[0].totalNs === push.total * 10101010'
if "$here/check-pprof.sh" "$tmp/basic/part-0.pb.gz" "$("$NODE" -p "require('$tmp/basic.json').total")" >"$tmp/check.out" 2>&1; then
	ok "basic: the raw profile reads the same in go tool pprof and pprof-format"
else
	bad "basic: check-pprof: $(cat "$tmp/check.out")"
fi

run noname --no-name --samples 10 --spans 0
expect noname "no __name__ given: process_cpu added" 'rc === 0 && last.answered === 200 && last.series[0].labels.__name__ === "process_cpu" && !("span_id" in last.series[0].profiles[0].sampleLabels)'

run split --samples 40000 --spans 8 --dump "$tmp/split"
expect split "40000 samples: split into 3 profiles of one series, under 16000 each" 'rc === 0 && push.rawSamples === 3 && push.split === 1 && last.answered === 200 && last.series.length === 1 && last.series[0].profiles.length === 3 && last.series[0].profiles.every((p) => p.samples <= 16000)'
expect split "split: every sample once, totals and span totals kept" 'const ps = last.series[0].profiles; const spans = {}; ps.forEach((p) => Object.entries(p.spans).forEach(([k, v]) => spans[k] = (spans[k] || 0) + v)); sum(ps, (p) => p.samples) === 40000 && sum(ps, (p) => p.total) === push.total && same(spans, push.spans) && new Set(ps.map((p) => p.id)).size === 3'
split_ok=1
for f in "$tmp"/split/part-*.pb.gz; do
	"$here/check-pprof.sh" "$f" >"$tmp/check.out" 2>&1 || { split_ok=0; bad "split: check-pprof $f: $(cat "$tmp/check.out")"; }
done
[ $split_ok = 1 ] && ok "split: each part reads the same in go tool pprof and pprof-format"

# ---- failure modes -----------------------------------------------------------------------------
control '{"status": 503, "for_ms": 1200}'
run unavailable --samples 20 --backoff-ms 200 --deadline-ms 10000
expect unavailable "503 for 1.2 s: retried, then delivered" 'rc === 0 && push.sent_ok === 1 && push.retried >= 1 && push.retried === lines.length - 1 && lines.slice(0, -1).every((l) => l.answered === 503) && last.answered === 200'

control '{"status": 400}'
run invalid --samples 20 --backoff-ms 50
control '{"mode": "ok"}'
expect invalid "400: failed, not retried" 'rc === 1 && push.failed === 1 && push.retried === 0 && lines.length === 1 && last.answered === 400'

before=$(wc -l <"$tmp/out.jsonl")
status=$(post application/proto 'definitely not a PushRequest')
sleep 0.1
tail -n +$((before + 1)) "$tmp/out.jsonl" >"$tmp/garbage_in.lines"
echo "{}" >"$tmp/garbage_in.json"; echo 0 >"$tmp/garbage_in.rc"; echo 0 >"$tmp/garbage_in.ms"
if [ "$status" = 400 ]; then ok "undecodable body: HTTP 400"; else bad "undecodable body: HTTP $status, not 400"; fi
expect garbage_in "undecodable body: an error line" 'lines.length === 1 && last.answered === 400 && typeof last.error === "string" && last.error.length > 0'

control '{"mode": "garbage"}'
run garbage_out --samples 20
control '{"mode": "ok"}'
expect garbage_out "200 with a garbage body: delivered (the answer body is not needed)" 'rc === 0 && push.sent_ok === 1 && push.failed === 0 && last.answered === 200'

control '{"mode": "hang"}'
run hang --samples 20 --timeout-ms 400 --backoff-ms 100 --deadline-ms 1500 --flush-ms 10000
expect hang "backend hangs: each attempt bounded by the timeout, then expired" 'rc === 1 && push.dropped_expired === 1 && push.sent_ok === 0 && push.retried >= 1 && lines.length === push.retried + 1 && lines.every((l) => l.answered === "hang") && ms < 6000'

run hang_flush --samples 20 --timeout-ms 20000 --flush-ms 300
control '{"mode": "ok"}'
expect hang_flush "backend hangs, short flush: dropped_shutdown, bounded" 'rc === 1 && push.flush < 0 && push.dropped_shutdown === 1 && ms < 4000'

run after --samples 5
expect after "back to normal afterwards" 'rc === 0 && push.sent_ok === 1 && last.answered === 200'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
