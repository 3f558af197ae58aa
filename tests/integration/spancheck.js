#!/usr/bin/env node
// spancheck.js: checks span labels in a spanprof profile against the spans SpanService exported.
//
//   spancheck.js PROFILE_JSON SPANS_JSONL --pid P [--tidmap FILE] [--pyroscope]
//
// PROFILE_JSON is tests/tools/pprof-json.js output. SPANS_JSONL is SpanService's span file.
// --tidmap: lines "hosttid nstid" for a service in its own pid namespace (span files hold the
// namespace's thread ids, samples the host's).
// For every sample whose leaf is a span-only hot method it decides: right (the span that ran that
// code: right name, trace and local root, and the sample's thread worked in it), wrong (some other
// span), or missing (no span labels). Prints one JSON object of counts and rates.
'use strict';
const fs = require('fs');

const args = process.argv.slice(2);
const opt = { pyroscope: false };
const pos = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--pid') opt.pid = args[++i];
  else if (args[i] === '--tidmap') opt.tidmap = args[++i];
  else if (args[i] === '--pyroscope') opt.pyroscope = true;
  else pos.push(args[i]);
}
const prof = JSON.parse(fs.readFileSync(pos[0], 'utf8'));
const spans = new Map();
for (const line of fs.readFileSync(pos[1], 'utf8').split('\n')) {
  if (!line.trim()) continue;
  const s = JSON.parse(line);
  spans.set(s.span_id, s);
}
const tidmap = new Map();
if (opt.tidmap) {
  for (const line of fs.readFileSync(opt.tidmap, 'utf8').split('\n')) {
    const [h, n] = line.trim().split(/\s+/);
    if (h && n) tidmap.set(h, n);
  }
}

// Hot method -> what must be current when it runs.
//   span: name of the span that runs it; label: the user label it must (or must not) carry.
// A method's name ends in its parameter list, or (Native AOT, named from its symbols) at the name.
const method = (m) => new RegExp(`HotWork::${m}(\\(|$)`);
const rules = [
  { m: 'HotA_InSpan', span: 'compute-a', tenant: null },
  { m: 'HotB_Outer', span: 'outer-b', tenant: null },
  { m: 'HotB_Inner', span: 'inner-b', tenant: null },
  { m: 'HotLabelled', span: 'GET /work/labels', tenant: 'acme' },
  { m: 'HotUnlabelled', span: 'GET /work/labels', tenant: null },
  { m: 'HotNoSpan', span: null, tenant: null, worker: 'nospan' },
].map((r) => ({ ...r, re: method(r.m) }));

const c = {
  samples_in_span_methods: 0, right: 0, wrong: 0, missing: 0, tid_unmapped: 0,
  nospan_samples: 0, nospan_with_span: 0,
  span_name_right: 0, span_name_wrong: 0,
  label_scope_samples: 0, label_right: 0,
  label_outside_samples: 0, label_leaked: 0,
  nospan_label_right: 0, worker_label_leaked: 0,
  by_method: {}, wrong_examples: [],
};

const count = (s) => Number(s.values[0]);
for (const s of prof.samples) {
  if (opt.pid && s.labels.pid !== opt.pid) continue;
  const leaf = s.stack[s.stack.length - 1] || '';
  const rule = rules.find((r) => r.re.test(leaf));
  if (!rule) continue;
  const n = count(s);
  const L = s.labels;
  const m = rule.m;
  const bm = (c.by_method[m] = c.by_method[m] || { samples: 0, right: 0, wrong: 0, missing: 0 });
  bm.samples += n;

  // User labels: inside the scope only.
  if (rule.tenant) {
    c.label_scope_samples += n;
    if (L.tenant === rule.tenant) c.label_right += n;
  } else {
    c.label_outside_samples += n;
    if (L.tenant !== undefined) c.label_leaked += n;
  }

  // The background worker's label (set outside any span) stays on its own samples.
  if (rule.worker === undefined && L.worker !== undefined) c.worker_label_leaked += n;
  if (rule.span === null) {
    c.nospan_samples += n;
    if (L.span_id !== undefined || L.trace_id !== undefined) c.nospan_with_span += n;
    if (L.worker === rule.worker) c.nospan_label_right += n;
    continue;
  }
  c.samples_in_span_methods += n;
  if (L.span_id === undefined) {
    c.missing += n;
    bm.missing += n;
    continue;
  }
  // Pyroscope convention: span_id is the local root's id.
  const sp = spans.get(L.span_id);
  let ok = false;
  if (sp) {
    const expect = opt.pyroscope ? spans.get(sp.local_root_span_id) : sp;
    let tidOk = true;
    const tid = opt.tidmap ? tidmap.get(L.tid) : L.tid;
    if (opt.tidmap && tid === undefined) c.tid_unmapped += n;
    else {
      // The sample's thread must have done work in that span (or in its subtree for a root).
      tidOk = sp.tids.map(String).includes(String(tid));
    }
    if (opt.pyroscope) {
      ok = sp.local_root_span_id === sp.span_id && sp.name === rule.span.replace(/^(compute-a|outer-b|inner-b)$/, sp.name) && tidOk;
      // In Pyroscope mode the label names the local root: its descendants must include the span
      // named rule.span on this trace.
      if (rule.span !== sp.name) {
        ok = tidOk && [...spans.values()].some((d) => d.local_root_span_id === sp.span_id && d.name === rule.span &&
          d.tids.map(String).includes(String(tid)));
      }
    } else {
      ok = sp.name === rule.span && (L.trace_id === undefined || L.trace_id === sp.trace_id) &&
        (L.local_root_span_id === undefined || L.local_root_span_id === sp.local_root_span_id) && tidOk;
    }
    if (expect && L.span_name !== undefined) {
      if (L.span_name === (opt.pyroscope ? sp.name : sp.local_root_name)) c.span_name_right += n;
      else c.span_name_wrong += n;
    }
  }
  if (ok) {
    c.right += n;
    bm.right += n;
  } else {
    c.wrong += n;
    bm.wrong += n;
    if (c.wrong_examples.length < 5)
      c.wrong_examples.push({ leaf, labels: L, span: sp ? { name: sp.name, tids: sp.tids } : null });
  }
}
const rate = (a, b) => (b ? a / b : 0);
c.right_rate = rate(c.right, c.samples_in_span_methods);
c.wrong_rate = rate(c.wrong, c.samples_in_span_methods);
c.missing_rate = rate(c.missing, c.samples_in_span_methods);
c.nospan_clean_rate = c.nospan_samples ? 1 - c.nospan_with_span / c.nospan_samples : 0;
c.nospan_label_rate = rate(c.nospan_label_right, c.nospan_samples);
c.label_right_rate = rate(c.label_right, c.label_scope_samples);
c.label_leak_rate = rate(c.label_leaked, c.label_outside_samples);
c.span_name_right_rate = rate(c.span_name_right, c.span_name_right + c.span_name_wrong);
process.stdout.write(JSON.stringify(c) + '\n');
