#!/usr/bin/env node
// flamegraph-check.js: runs the script embedded in a spanprof flame graph SVG against a minimal
// stand-in DOM and checks what a user would see: hover details, click-to-zoom, reset, search.
//
// Usage: node flamegraph-check.js FILE.svg [SEARCH_TERM]
// Prints one line per check; exits 0 if all pass, 1 otherwise, 2 on usage or parse errors.
// No dependencies: the SVG is written by flamegraph.c in a fixed shape, one frame per line.
'use strict';

const fs = require('fs');
const vm = require('vm');

const file = process.argv[2];
const term = process.argv[3] || null;
if (!file) {
  process.stderr.write('usage: flamegraph-check.js FILE.svg [SEARCH_TERM]\n');
  process.exit(2);
}
const svg = fs.readFileSync(file, 'utf8');

const unescape = (s) => s.replace(/&(lt|gt|amp|quot|apos);/g,
  (_, e) => ({ lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" })[e]);

class El {
  constructor(tag, attrs = {}, text = '') {
    this.tag = tag;
    this.attrs = { ...attrs };
    this.textContent = text;
    this.children = [];
    this.parent = null;
    this.listeners = {};
    const el = this;
    this.classList = {
      set() { return new Set((el.attrs.class || '').split(/\s+/).filter(Boolean)); },
      write(s) { el.attrs.class = [...s].join(' '); },
      add(c) { const s = this.set(); s.add(c); this.write(s); },
      remove(c) { const s = this.set(); s.delete(c); this.write(s); },
      contains(c) { return this.set().has(c); },
      toggle(c, on) { if (on === undefined) on = !this.contains(c); if (on) this.add(c); else this.remove(c); return on; },
    };
  }
  append(c) { c.parent = this; this.children.push(c); return c; }
  getAttribute(n) { return n in this.attrs ? this.attrs[n] : null; }
  setAttribute(n, v) { this.attrs[n] = String(v); }
  getElementsByTagName(t) {
    const out = [];
    const walk = (e) => { for (const c of e.children) { if (c.tag === t) out.push(c); walk(c); } };
    walk(this);
    return out;
  }
  closest(t) { for (let e = this; e; e = e.parent) if (e.tag === t) return e; return null; }
  addEventListener(type, fn) { (this.listeners[type] = this.listeners[type] || []).push(fn); }
  fire(type, target, extra = {}) {
    const ev = { type, target, preventDefault() { ev.prevented = true; }, ...extra };
    for (const fn of this.listeners[type] || []) fn(ev);
    return ev;
  }
}

function attrsOf(s) {
  const a = {};
  for (const m of s.matchAll(/([\w-]+)="([^"]*)"/g)) a[m[1]] = unescape(m[2]);
  return a;
}

// Build the stand-in document from the parts the script touches.
const byId = {};
for (const m of svg.matchAll(/<text ([^>]*id="[^"]+"[^>]*)>([^<]*)<\/text>/g)) {
  const a = attrsOf(m[1]);
  byId[a.id] = new El('text', a, unescape(m[2]));
}
const frames = new El('g', { id: 'frames' });
byId.frames = frames;
const frameRe = /^<g (data-s[^>]*)><title>([^<]*)<\/title><rect ([^>]*)\/><text ([^>]*)>([^<]*)<\/text><\/g>$/gm;
for (const m of svg.matchAll(frameRe)) {
  const g = frames.append(new El('g', attrsOf(m[1])));
  g.append(new El('title', {}, unescape(m[2])));
  g.append(new El('rect', attrsOf(m[3])));
  g.append(new El('text', attrsOf(m[4]), unescape(m[5])));
}
const script = (svg.match(/<script[^>]*><!\[CDATA\[([\s\S]*?)\]\]><\/script>/) || [])[1];
if (!script || !frames.children.length || !byId.details || !byId.reset || !byId.search || !byId.matched) {
  process.stderr.write('flamegraph-check: could not find the script, frames or controls\n');
  process.exit(2);
}

const win = new El('window');
let promptAnswer = null;
const sandbox = {
  document: { getElementById: (id) => byId[id] || null },
  window: win,
  prompt: () => promptAnswer,
  Math, RegExp, Number, String,
};
vm.createContext(sandbox);
vm.runInContext(script, sandbox, { filename: 'flamegraph-script.js' });

let failed = 0;
const check = (ok, what) => {
  process.stdout.write(`${ok ? 'ok  ' : 'FAIL'} ${what}\n`);
  if (!ok) failed++;
};
const near = (a, b) => Math.abs(Number(a) - Number(b)) < 0.02;
const info = (g) => {
  const s = +g.getAttribute('data-s'), n = +g.getAttribute('data-n'), d = +g.getAttribute('data-d');
  const t = g.children[0].textContent;
  return { g, s, n, d, name: t.slice(0, t.lastIndexOf(' (')), rect: g.children[1], text: g.children[2] };
};
const all = frames.children.map(info);
const root = all.find((f) => f.d === 0);
const W = 1200, PAD = 10, scale = (W - 2 * PAD) / root.n;
const hidden = (f) => f.g.classList.contains('hidden');

// 1. After load (the script lays out once), geometry matches what the C writer drew.
check(all.every((f) => near(f.rect.getAttribute('x'), PAD + f.s * scale) &&
                       near(f.rect.getAttribute('width'), f.n * scale)), 'initial layout matches data-s/data-n');
check(byId.reset.classList.contains('hidden'), 'reset hidden before zooming');

// 2. Hover shows the frame's details.
// The widest frame at depth 2 or more that has children, so zooming has a subtree to show.
const hasKids = (f) => all.some((c) => c.d === f.d + 1 && c.s >= f.s && c.s < f.s + f.n);
const deep = all.filter((f) => f.d >= 2 && hasKids(f)).sort((a, b) => b.n - a.n)[0] ||
  all.filter((f) => f.d >= 1).sort((a, b) => b.n - a.n)[0] || root;
frames.fire('mouseover', deep.rect);
check(byId.details.textContent === deep.g.children[0].textContent, `hover shows "${byId.details.textContent}"`);
frames.fire('mouseout', deep.rect);

// 3. Click zooms: the frame fills the width, its subtree scales, others hide, ancestors stay.
frames.fire('click', deep.rect);
check(near(deep.rect.getAttribute('x'), PAD) && near(deep.rect.getAttribute('width'), W - 2 * PAD),
  `clicked frame "${deep.name}" fills the width`);
check(deep.text.textContent === (deep.name.length * 6.6 + 6 <= W - 2 * PAD ? deep.name : deep.text.textContent) &&
      deep.text.textContent.length > 0, `its label is redrawn for the new width: "${deep.text.textContent}"`);
const inside = (f) => f.d >= deep.d && f.s >= deep.s && f.s + f.n <= deep.s + deep.n;
const above = (f) => f.d < deep.d && f.s <= deep.s && f.s + f.n >= deep.s + deep.n;
check(all.filter(inside).every((f) => !hidden(f) || f.n * (W - 2 * PAD) / deep.n < 0.1) &&
      all.filter(inside).every((f) => hidden(f) || near(f.rect.getAttribute('width'), f.n * (W - 2 * PAD) / deep.n)),
  'subtree shown and rescaled');
check(all.filter((f) => !inside(f) && !above(f)).every(hidden), 'frames outside the zoom hidden');
check(all.filter(above).every((f) => f.g.classList.contains('parent') && !hidden(f)), 'ancestors kept, faded');
check(!byId.reset.classList.contains('hidden'), 'reset shown while zoomed');
byId.reset.fire('click', byId.reset);
check(all.every((f) => !hidden(f) && near(f.rect.getAttribute('width'), f.n * scale)), 'reset restores the full view');

// 4. Search highlights matches and reports the matched share without double counting.
const needle = term || deep.name.slice(0, 3);
promptAnswer = needle;
const ev = win.fire('keydown', win, { key: 'f', ctrlKey: true });
check(ev.prevented === true, 'ctrl-F opens the search');
let re;
try { re = new RegExp(needle); } catch (e) { re = new RegExp(needle.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')); }
const hits = all.filter((f) => re.test(f.name));
check(hits.length > 0 && hits.every((f) => f.rect.getAttribute('fill') === 'rgb(230,0,230)'), `search "${needle}" highlights ${hits.length} frames`);
check(all.filter((f) => !re.test(f.name)).every((f) => f.rect.getAttribute('fill') !== 'rgb(230,0,230)'), 'non-matching frames keep their colour');
const iv = hits.map((f) => [f.s, f.s + f.n]).sort((a, b) => a[0] - b[0]);
let sum = 0, end = -1;
for (const [a0, b0] of iv) { const a = Math.max(a0, end); if (b0 > a) sum += b0 - a; if (b0 > end) end = b0; }
const want = `Matched: ${(100 * sum / root.n).toFixed(2)}% (${sum} samples)`;
check(byId.matched.textContent === want, `matched line "${byId.matched.textContent}" (want "${want}")`);
win.fire('keydown', win, { key: 'Escape' });
check(byId.matched.textContent === '' && all.every((f) => f.rect.getAttribute('fill') !== 'rgb(230,0,230)'), 'escape clears the search');

// 5. Clicking the root resets too.
frames.fire('click', deep.rect);
frames.fire('click', root.rect);
check(all.every((f) => !hidden(f)), 'clicking the root resets the zoom');

process.stdout.write(`flamegraph-check: ${failed ? `${failed} failed` : 'all passed'} (${all.length} frames)\n`);
process.exit(failed ? 1 : 0);
