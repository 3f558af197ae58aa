#!/usr/bin/env node
// matrix-table.js: the rows of make test-matrix (tests/matrix.sh, lib.sh matrix_row: one JSON line
// per cell) as one Markdown table: a row per shape, a column per (test, case), each cell the
// measured figures and pass / FAIL / not run. Usage: matrix-table.js ROWS.jsonl
'use strict';
const fs = require('fs');

const rows = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
const pct = (x) => (typeof x === 'number' ? `${(x * 100).toFixed(1)} %` : '?');
const figures = (r) => {
  if (r.status === 'not-run') return `not run: ${r.why || '?'}`;
  const f = [];
  if ('named' in r) f.push(`named ${pct(r.named)}`);
  if ('chain' in r) f.push(`chain ${pct(r.chain)}`);
  if ('right' in r) f.push(`right ${pct(r.right)} of ${r.samples}`);
  if ('wrong' in r && r.wrong) f.push(`wrong ${pct(r.wrong)}`);
  if ('worker_label' in r) f.push(`worker's label on ${pct(r.worker_label)} of ${r.samples}`);
  if ('ratio' in r) f.push(`off-CPU on its span ${r.on_ms} of ${r.truth_ms} ms (${r.ratio})`);
  if ('wrong_ms' in r && r.wrong_ms) f.push(`another span's ${r.wrong_ms} ms`);
  if ('leaf_frac' in r) f.push(`.NET-named leaves ${pct(r.leaf_frac)}`);
  if ('rc' in r) f.push(`exit ${r.rc}, ${r.seconds} s`);
  return `${f.join(', ')}${r.status === 'pass' ? '' : r.status === 'skip' ? ' (skipped)' : ' **FAIL**'}`;
};

const shapes = [...new Set(rows.map((r) => r.shape))];
const tests = [...new Set(rows.map((r) => r.test))];
const out = [];
for (const t of tests) {
  // the test's exit last: its cases first, in the order they ran
  const cases = [...new Set(rows.filter((r) => r.test === t).map((r) => r.case))]
    .sort((a, b) => (a === '(exit)') - (b === '(exit)'));
  out.push(`\n**${t}**\n`);
  out.push(`| shape | ${cases.join(' | ')} |`);
  out.push(`|---|${cases.map(() => '---').join('|')}|`);
  for (const s of shapes) {
    const mine = rows.filter((r) => r.shape === s && r.test === t);
    if (!mine.length) continue;
    out.push(`| ${s} | ${cases.map((c) => {
      const r = mine.filter((x) => x.case === c).pop();
      return r ? figures(r) : '–';
    }).join(' | ')} |`);
  }
}
console.log(out.join('\n'));
