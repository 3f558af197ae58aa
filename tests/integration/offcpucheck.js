#!/usr/bin/env node
// offcpucheck.js: the off-CPU time a profile (decoded by tests/tools/pprof-json.js) puts on each
// scenario of tests/apps/OffCpu, against what the app measured (its truth file).
//
//   offcpucheck.js PROFILE.json TRUTH.json
// Prints one JSON object: per scenario, the off-CPU ms on its span with its blocking method in the
// stack (on_ms), on its span whatever the stack (span_ms), with its method under another span
// (wrong_ms), the app's blocked ms (truth_ms) and on_ms / truth_ms (ratio); per helper thread that
// blocks outside any span (go: the main thread's wait for --go), its off-CPU ms and the part of it
// that carries a span.
'use strict';
const fs = require('fs');

const [profFile, truthFile] = process.argv.slice(2);
const prof = JSON.parse(fs.readFileSync(profFile, 'utf8'));
const truth = JSON.parse(fs.readFileSync(truthFile, 'utf8'));
if (!prof.sampleTypes.includes('off_cpu/nanoseconds'))
  throw new Error(`no off_cpu/nanoseconds sample type: ${prof.sampleTypes}`);
const vi = prof.sampleTypes.indexOf('off_cpu/nanoseconds');
const methods = { sleep: 'Program::BlockSleep', lock: 'Program::BlockLock', result: 'Program::BlockResult', socket: 'Program::BlockSocket',
  twina: 'Program::BlockTwinA', twinb: 'Program::BlockTwinB' };
const helpers = { hold: 'Program::HoldLock', serve: 'Program::ServeSocket', go: 'Program::WaitGo' };
const samples = prof.samples.filter((s) => s.labels.pid === String(truth.pid));
const off = (s) => Number(s.values[vi]) / 1e6;
const has = (s, m) => s.stack.some((f) => f.includes(m));

const out = { scenarios: {}, helpers: {}, pid_off_ms: samples.reduce((t, s) => t + off(s), 0) };
for (const [name, m] of Object.entries(methods)) {
  const r = { on_ms: 0, span_ms: 0, wrong_ms: 0, truth_ms: truth.scenarios[name].blocked_ns / 1e6 };
  for (const s of samples) {
    const span = s.labels.span_name;
    if (span === name) r.span_ms += off(s);
    if (!has(s, m)) continue;
    if (span === name) r.on_ms += off(s);
    else if (span !== undefined) r.wrong_ms += off(s);
  }
  r.ratio = r.truth_ms ? r.on_ms / r.truth_ms : 0;
  r.wrong_rate = r.truth_ms ? r.wrong_ms / r.truth_ms : 1;
  for (const k of Object.keys(r)) r[k] = Number(r[k].toFixed(4));
  out.scenarios[name] = r;
}
for (const [name, m] of Object.entries(helpers)) {
  const r = { off_ms: 0, with_span_ms: 0 };
  for (const s of samples) {
    if (!has(s, m)) continue;
    r.off_ms += off(s);
    if (s.labels.span_id !== undefined || s.labels.span_name !== undefined) r.with_span_ms += off(s);
  }
  out.helpers[name] = { off_ms: Number(r.off_ms.toFixed(3)), with_span_ms: Number(r.with_span_ms.toFixed(3)) };
}
process.stdout.write(JSON.stringify(out) + '\n');
