#!/usr/bin/env node
// pprof-json.js: decodes a .pb.gz (or plain .pb) with the independent pprof-format package and
// prints it as JSON, so tests can check spanprof's pprof writer against a reader it does not share.
//
// Usage: node pprof-json.js FILE
// Output (one JSON object):
//   {"sampleTypes": ["samples/count", "cpu/nanoseconds"], "periodType": "cpu/nanoseconds",
//    "period": 10000000, "timeNanos": N, "durationNanos": N, "comments": ["spanprof ..."],
//    "totals": [sum of value[0], sum of value[1], ...],
//    "samples": [{"stack": [root, ..., leaf], "labels": {"key": "value"}, "values": [..]}]}
// A frame is its function name; a location without a line is "<mapping basename>+0x<offset>",
// or "0x<address>" without a mapping (the names spanprof's folded writer uses). Inlined lines
// are expanded caller first. A label key seen twice on one sample gets an array of values.
'use strict';

const fs = require('fs');
const zlib = require('zlib');
const { Profile } = require('pprof-format');

function num(v) {
  // pprof-format returns Number or BigInt; print exact integers, as strings if too big.
  if (typeof v === 'bigint')
    return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v.toString();
  return v;
}

function main() {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: pprof-json.js FILE\n');
    process.exit(2);
  }
  let data = fs.readFileSync(file);
  if (data.length >= 2 && data[0] === 0x1f && data[1] === 0x8b)
    data = zlib.gunzipSync(data);
  const p = Profile.decode(new Uint8Array(data.buffer, data.byteOffset, data.length));
  const str = (i) => p.stringTable.strings[Number(i)] ?? '';
  const vt = (t) => (t ? `${str(t.type)}/${str(t.unit)}` : '');

  const mappings = new Map(p.mapping.map((m) => [Number(m.id), m]));
  const functions = new Map(p.function.map((f) => [Number(f.id), f]));
  const locations = new Map(p.location.map((l) => [Number(l.id), l]));

  function frames(locId) {
    const l = locations.get(Number(locId));
    if (!l)
      throw new Error(`sample references missing location ${locId}`);
    if (l.line.length) {
      return l.line.map((ln) => {
        const f = functions.get(Number(ln.functionId));
        if (!f)
          throw new Error(`location ${locId} references missing function ${ln.functionId}`);
        return str(f.name);
      }).reverse();
    }
    const addr = BigInt(l.address);
    const m = Number(l.mappingId) ? mappings.get(Number(l.mappingId)) : undefined;
    if (Number(l.mappingId) && !m)
      throw new Error(`location ${locId} references missing mapping ${l.mappingId}`);
    const file = m ? str(m.filename) : '';
    const base = file.slice(file.lastIndexOf('/') + 1);
    if (m && base && addr >= BigInt(m.memoryStart))
      return [`${base}+0x${(addr - BigInt(m.memoryStart) + BigInt(m.fileOffset)).toString(16)}`];
    return [`0x${addr.toString(16)}`];
  }

  const totals = p.sampleType.map(() => 0n);
  const samples = p.sample.map((s) => {
    const stack = [];
    for (let i = s.locationId.length - 1; i >= 0; i--)
      stack.push(...frames(s.locationId[i]));
    const labels = {};
    for (const l of s.label) {
      const k = str(l.key);
      const v = Number(l.str) ? str(l.str) : num(l.num);
      if (k in labels)
        labels[k] = [].concat(labels[k], v);
      else
        labels[k] = v;
    }
    s.value.forEach((v, i) => { if (i < totals.length) totals[i] += BigInt(v); });
    return { stack, labels, values: s.value.map(num) };
  });

  const out = {
    sampleTypes: p.sampleType.map(vt),
    periodType: vt(p.periodType),
    period: num(p.period),
    timeNanos: num(p.timeNanos),
    durationNanos: num(p.durationNanos),
    comments: p.comment.map(str),
    totals: totals.map(num),
    samples,
  };
  process.stdout.write(JSON.stringify(out) + '\n');
}

try {
  main();
} catch (e) {
  process.stderr.write(`pprof-json: ${e.message}\n`);
  process.exit(1);
}
