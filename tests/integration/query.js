#!/usr/bin/env node
// query.js: statistics over a profile decoded by tests/tools/pprof-json.js, for the integration
// tests' assertions. Counts are sample counts (values[0]).
//
//   query.js leaf     JSON --leaf RE [--pid P] [--label k=v]... [--among RE]   fraction of samples whose leaf matches (of those whose leaf matches --among)
//   query.js chain    JSON --leaf RE --chain A,B,C [--pid P]          among leaf matches, fraction with A..B..C in order (root->leaf)
//   query.js named    JSON --pid P [--after NS]                        fraction of samples whose every frame is named
//   query.js managed  JSON --pid P                                     fraction of samples with a named .NET frame and no unnamed frame
//   query.js dotnet   JSON --pid P                                     .NET leaves and frames: how many are named
//   query.js top      JSON [--pid P]                                   leaf functions by count
//   query.js roots    JSON [--pid P]                                   samples by their outermost frame
//   query.js unwound  JSON --pairs FILE [--pid P]                      adjacent frames that a reference unwind (FILE: "callee<TAB>caller" lines) never shows
//   query.js callers  JSON --leaf RE [--pid P]                         among leaf matches, count by the frame right under the leaf
//   query.js total    JSON [--pid P]
'use strict';
const fs = require('fs');

function parse(argv) {
  const o = { labels: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--label') o.labels.push(argv[++i].split('='));
    else if (a.startsWith('--')) o[a.slice(2)] = argv[++i];
    else (o._ = o._ || []).push(a);
  }
  return o;
}

const [cmd, file, ...rest] = process.argv.slice(2);
const o = parse(rest);
const prof = JSON.parse(fs.readFileSync(file, 'utf8'));
let samples = prof.samples;
if (o.pid) samples = samples.filter((s) => s.labels.pid === o.pid);
for (const [k, v] of o.labels) samples = samples.filter((s) => s.labels[k] === v);
const count = (s) => Number(s.values[0]);
const sum = (arr) => arr.reduce((t, s) => t + count(s), 0);
const total = sum(samples);
const leafRe = o.leaf ? new RegExp(o.leaf) : null;
const leafOf = (s) => s.stack[s.stack.length - 1] || '';

// A frame is unnamed when it is an address, a module+offset fallback or a function known only by
// its start (module!0x...).
const unnamed = (f) => f === '[unknown]' || /^0x[0-9a-f]+$/.test(f) || /[+!]0x[0-9a-f]+$/.test(f);

function inOrder(stack, chain) {
  let i = 0;
  for (const f of stack) if (i < chain.length && new RegExp(chain[i]).test(f)) i++;
  return i === chain.length;
}

let out;
switch (cmd) {
case 'total':
  out = { total };
  break;
case 'leaf': {
  const amongRe = o.among ? new RegExp(o.among) : null;
  const among = amongRe ? samples.filter((s) => amongRe.test(leafOf(s))) : samples;
  const hit = sum(among.filter((s) => leafRe.test(leafOf(s)))), n = sum(among);
  out = { total: n, hit, frac: n ? hit / n : 0 };
  break;
}
case 'chain': {
  const leafs = samples.filter((s) => leafRe.test(leafOf(s)));
  const chain = o.chain.split(',');
  const hit = sum(leafs.filter((s) => inOrder(s.stack, chain)));
  const n = sum(leafs);
  out = { leaf_samples: n, hit, frac: n ? hit / n : 0 };
  break;
}
case 'named': {
  // Managed frames named: samples whose leaf is named (the leaf is what the sample is charged to).
  const named = sum(samples.filter((s) => !unnamed(leafOf(s))));
  out = { total, named, frac: total ? named / total : 0 };
  break;
}
case 'managed': {
  // "[Assembly] Namespace.Type::Method(args)": a .NET frame named from the perf map / jitdump.
  const managed = (f) => /\[[^\]]+\] \S.*::/.test(f);
  const ok = samples.filter((s) => s.stack.some(managed) && !s.stack.some((f) => f === '[unknown]'));
  const n = sum(ok);
  out = { total, named: n, frac: total ? n / total : 0 };
  break;
}
case 'callers': {
  // The leaf's direct caller (stacks are root -> leaf): what a frame-pointer walk loses when the
  // leaf has no frame. "" when the leaf is the whole stack.
  const leafs = samples.filter((s) => leafRe.test(leafOf(s)));
  const callers = {};
  for (const s of leafs) {
    const c = s.stack.length > 1 ? s.stack[s.stack.length - 2] : '';
    callers[c] = (callers[c] || 0) + count(s);
  }
  out = { leaf_samples: sum(leafs), callers };
  break;
}
case 'roots': {
  const roots = {};
  for (const s of samples) roots[s.stack[0] || ''] = (roots[s.stack[0] || ''] || 0) + count(s);
  out = { total, roots };
  break;
}
case 'unwound': {
  // Only frames the reference knows are compared (its unwind names them too), so frames it
  // never saw (a sample it missed) do not count; a caller it never shows under a callee does.
  const pairs = new Set(), names = new Set();
  for (const line of fs.readFileSync(o.pairs, 'utf8').split('\n')) {
    const [callee, caller] = line.split('\t');
    if (!caller) continue;
    pairs.add(callee + '\t' + caller);
    names.add(callee);
    names.add(caller);
  }
  const extra = {};
  let checked = 0, bad = 0;
  for (const s of samples) {
    let wrong = false;
    for (let i = 0; i + 1 < s.stack.length; i++) {
      const caller = s.stack[i], callee = s.stack[i + 1];
      if (!names.has(caller) || !names.has(callee)) continue;
      if (!pairs.has(callee + '\t' + caller)) {
        wrong = true;
        extra[callee + ' <- ' + caller] = (extra[callee + ' <- ' + caller] || 0) + count(s);
      }
    }
    checked += count(s);
    if (wrong) bad += count(s);
  }
  out = { checked, bad, extra };
  break;
}
case 'dotnet': {
  // .NET code: a named method, a JIT address without a name ([unknown]) or precompiled code
  // without one (a .dll's module+offset). Leaves per sample; frames per sample and stack slot.
  const named = (f) => /\[[^\]]+\] \S.*::/.test(f);
  const dotnet = (f) => named(f) || f === '[unknown]' || /\.dll\+0x[0-9a-f]+$/.test(f);
  let leaves = 0, leavesNamed = 0, frames = 0, framesNamed = 0;
  for (const s of samples) {
    const c = count(s), leaf = leafOf(s);
    if (dotnet(leaf)) { leaves += c; if (named(leaf)) leavesNamed += c; }
    for (const f of s.stack) if (dotnet(f)) { frames += c; if (named(f)) framesNamed += c; }
  }
  out = { total, leaves, leaf_frac: leaves ? leavesNamed / leaves : 0, frames,
          frame_frac: frames ? framesNamed / frames : 0 };
  break;
}
case 'top': {
  const m = new Map();
  for (const s of samples) m.set(leafOf(s), (m.get(leafOf(s)) || 0) + count(s));
  out = [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(o.n || 15));
  break;
}
default:
  process.stderr.write(`unknown command ${cmd}\n`);
  process.exit(2);
}
process.stdout.write(JSON.stringify(out) + '\n');
