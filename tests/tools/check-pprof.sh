#!/bin/sh
# check-pprof.sh: reads a pprof file with two independent readers (go tool pprof, pprof-format)
# and fails unless both accept it and agree on the sample totals and on every function's flat count.
#
# Usage: check-pprof.sh FILE [EXPECTED_SAMPLES]
#   EXPECTED_SAMPLES: if given, the total of sample value 0 (samples/count) must equal it.
# Exit: 0 agree, 1 disagree or a reader rejected the file, 2 usage or missing tool.
# Environment: GO (go binary), NODE (node binary), KEEP=1 keeps the readers' output.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
file=${1:-}
expected=${2:-}
if [ -z "$file" ] || [ ! -r "$file" ]; then
	echo "usage: $0 FILE [EXPECTED_SAMPLES] (FILE must be readable)" >&2
	exit 2
fi

GO=${GO:-$(command -v go 2>/dev/null || echo /usr/lib/go-1.19/bin/go)}
NODE=${NODE:-$(command -v node 2>/dev/null || true)}
if [ ! -x "$GO" ]; then
	echo "check-pprof: go not found (install golang-1.19-go or set GO)" >&2
	exit 2
fi
if [ -z "$NODE" ]; then
	echo "check-pprof: node not found" >&2
	exit 2
fi
if [ ! -f "$here/node_modules/pprof-format/package.json" ]; then
	(cd "$here" && npm ci --no-audit --no-fund --silent) >&2 || {
		echo "check-pprof: npm ci in $here failed" >&2
		exit 2
	}
fi

tmp=$(mktemp -d)
if [ "${KEEP:-0}" = 1 ]; then
	echo "check-pprof: keeping $tmp" >&2
else
	trap 'rm -rf "$tmp"' EXIT
fi
# go wants a writable cache and home even for `go tool`; never touch the caller's
export HOME="$tmp" GOCACHE="$tmp/gocache" GOPATH="$tmp/gopath" GOFLAGS= GO111MODULE=off
export PPROF_TMPDIR="$tmp"

"$NODE" "$here/pprof-json.js" "$file" > "$tmp/profile.json" || {
	echo "check-pprof: pprof-format rejected $file" >&2
	exit 1
}
# -top over every node (nodefraction 0, no trimming), flat counts in samples
"$GO" tool pprof -top -sample_index=samples -nodecount=1000000 -nodefraction=0 -edgefraction=0 \
	-trim=false "$file" > "$tmp/go-top.txt" 2> "$tmp/go-top.err" || {
	echo "check-pprof: go tool pprof rejected $file:" >&2
	cat "$tmp/go-top.err" >&2
	exit 1
}

"$NODE" - "$tmp/profile.json" "$tmp/go-top.txt" "$expected" <<'EOF'
'use strict';
const fs = require('fs');
const [json, top, expected] = process.argv.slice(2);
const p = JSON.parse(fs.readFileSync(json, 'utf8'));
const lines = fs.readFileSync(top, 'utf8').split('\n');
const fail = (msg) => { process.stderr.write(`check-pprof: ${msg}\n`); process.exit(1); };

// "Showing nodes accounting for 123, 100% of 123 total" (counts are printed unscaled)
const head = lines.find((l) => /Showing nodes accounting for/.test(l));
const m = head && head.match(/of (\d+) total/);
if (!m) fail(`no total in go tool pprof -top output:\n${lines.slice(0, 8).join('\n')}`);
const goTotal = BigInt(m[1]);
const jsTotal = BigInt(p.totals[0] ?? 0);
if (goTotal !== jsTotal) fail(`sample totals differ: go tool pprof ${goTotal}, pprof-format ${jsTotal}`);
if (expected !== '' && jsTotal !== BigInt(expected)) fail(`sample total ${jsTotal}, expected ${expected}`);
if (p.sampleTypes[0] !== 'samples/count') fail(`sample type 0 is ${p.sampleTypes[0]}`);

// Cross-check every cpu value against count * period.
for (const s of p.samples) {
  if (s.values.length !== p.sampleTypes.length) fail(`sample with ${s.values.length} values`);
  if (p.sampleTypes[1] === 'cpu/nanoseconds' && BigInt(s.values[1]) !== BigInt(s.values[0]) * BigInt(p.period))
    fail(`cpu value ${s.values[1]} != ${s.values[0]} * period ${p.period}`);
}

// Flat (leaf) count per function: both readers must agree row by row. go tool pprof names an
// unsymbolized location after its mapping ("[libc.so.6]") or "<unknown>"; pprof-json.js prints
// "libc.so.6+0x1234" or "0x1234", so those are folded into go's names first, unless go shows the
// name as is (a function really named "libc.so.6+0x1234", as spanprof names frames it could not
// symbolize).
const goFlat = new Map();
let inRows = false;
for (const l of lines) {
  if (/^\s*flat\s+flat%/.test(l)) { inRows = true; continue; }
  if (!inRows) continue;
  const r = l.match(/^\s*(\d+)\s+\S+%\s+\S+%\s+(\d+)\s+\S+%\s+(.*)$/);
  if (!r) continue;
  if (BigInt(r[1]) !== 0n) goFlat.set(r[3], (goFlat.get(r[3]) ?? 0n) + BigInt(r[1]));
}
// go tool pprof also shortens some names for display: a trailing argument list or template
// ("[Fake] Burst::Spin()" shows as "[Fake] Burst::Spin", "stub X<Y>" as "stub X"). A name go does not
// show as is is compared under the shortest such form go shows (overloads then add up, as in go).
const shorten = (n) => {
  for (let m = n; ;) {
    const t = m.replace(/\([^()]*\)$/, '').replace(/<[^<>]*>$/, '');
    if (t === m) return n;
    if (goFlat.has(t)) return t;
    m = t;
  }
};
const goName = (n) => goFlat.has(n) ? n :
  /^0x[0-9a-f]+$/.test(n) ? '<unknown>' : /\+0x[0-9a-f]+$/.test(n) ? n.replace(/^(.+)\+0x[0-9a-f]+$/, '[$1]') :
  shorten(n);
const flat = new Map();
for (const s of p.samples) {
  const leaf = s.stack.length ? goName(s.stack[s.stack.length - 1]) : null;
  if (leaf !== null) flat.set(leaf, (flat.get(leaf) ?? 0n) + BigInt(s.values[0]));
}
for (const [name, n] of flat) {
  if (goFlat.get(name) !== n)
    fail(`flat count of ${JSON.stringify(name)}: pprof-format ${n}, go tool pprof ${goFlat.get(name) ?? 'missing'}`);
}
for (const [name, n] of goFlat) {
  if (!flat.has(name)) fail(`go tool pprof shows ${JSON.stringify(name)} (flat ${n}) that pprof-format does not`);
}
process.stdout.write(`check-pprof: ok: ${jsTotal} samples, ${p.samples.length} distinct, ${flat.size} leaf functions agree\n`);
EOF
