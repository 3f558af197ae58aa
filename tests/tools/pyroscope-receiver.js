#!/usr/bin/env node
// pyroscope-receiver.js: a local stand-in for Grafana Pyroscope's push endpoint, for tests. It
// decodes every PushRequest with protobufjs from spanprof's own .proto files (an independent
// decoder), every raw profile with pprof-format, checks them against Pyroscope's default
// ingestion rules, and writes one JSON line per request. It can also misbehave on command.
//
// Usage: node pyroscope-receiver.js [--port N] [--ready FILE] [--out FILE] [--stacks]
//          [--proto-dir DIR] [--status CODE [--for-ms MS]] [--mode ok|garbage|hang]
//   --port 0 (the default) picks a free port; --ready FILE then receives it once listening.
//   --out FILE: where the JSON lines go (appended; default stdout). --stacks adds folded stacks.
// Routes (127.0.0.1 only):
//   POST /push.v1.PusherService/Push  Connect unary, Content-Type application/proto
//   POST /v1development/profiles  OTLP/HTTP profiles (Content-Type application/x-protobuf or
//                  application/protobuf, Content-Encoding gzip or none), as Pyroscope's
//                  distributor takes them: decoded and checked by otlp-receiver.js's decoder;
//                  each resource becomes a series whose service_name is its service.name (else
//                  unknown_service[:process.executable.name], Pyroscope's fallback). The line
//                  has "otlp": true and "series": [{"labels": {"service_name"}, "profiles":
//                  [{"sampleType", "samples", "total", ...} as otlp-receiver.js says]}].
//   POST /control  JSON: {"status": 503, "for_ms": 20000} answer that status for a while
//                  (no for_ms: until changed); {"mode": "garbage"} 200 with a garbage body;
//                  {"mode": "hang"} never answer; {"mode": "ok"} back to normal (clears status).
//                  Answers the resulting state as JSON.
//   GET /state     the current state and request counts.
// One line per push (or rejected request):
//   {"t": ms, "path": "...", "headers": {...}, "answered": 200|503|"hang"|..., "bytes": n,
//    "series": [{"labels": {...}, "profiles": [{"id", "bytes", "rawBytes", "samples", "total",
//      "totalNs", "sampleLabels": {"span_id": samples with it, ...}, "spans": {id: total},
//      "spanNames": {span_name: total}, "sampleTypes": ["type/unit", ...],
//      "profileTypes": ["__name__:type:unit:period_type:period_unit", ...] (Pyroscope's profile
//      type ids; the period part empty without a period), "stacks": [{"stack": "root;...;leaf",
//      "value", "spanName"}] (--stacks)}]}]}
//   plus "error": "..." when something did not decode or broke a rule (then answered 400
//   unless a failure mode decided otherwise).
'use strict';

const fs = require('fs');
const http = require('http');
const path = require('path');
const zlib = require('zlib');
const protobuf = require('protobufjs');
const { Profile } = require('pprof-format');

const PUSH_PATH = '/push.v1.PusherService/Push';
const OTLP_PATH = '/v1development/profiles';
const otlp = require('./otlp-receiver.js');
// Pyroscope's default limits (distributor validation).
const MAX_PROFILE_BYTES = 4 << 20;
const MAX_SAMPLES = 16000;
const MAX_LABEL_NAMES = 30;
const MAX_NAME_LEN = 1024;
const MAX_VALUE_LEN = 2048;
const NAME_RE = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function parseArgs(argv) {
  const o = { port: 0, ready: null, out: null, stacks: false, status: 0, forMs: 0, mode: 'ok',
    protoDir: path.resolve(__dirname, '../../user/export/proto') };
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length)
        throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--port') o.port = Number(val());
    else if (a === '--ready') o.ready = val();
    else if (a === '--out') o.out = val();
    else if (a === '--stacks') o.stacks = true;
    else if (a === '--proto-dir') o.protoDir = path.resolve(val());
    else if (a === '--status') o.status = Number(val());
    else if (a === '--for-ms') o.forMs = Number(val());
    else if (a === '--mode') o.mode = val();
    else throw new Error(`unknown option ${a}`);
  }
  if (!Number.isInteger(o.port) || o.port < 0 || o.port > 65535)
    throw new Error('--port must be 0..65535');
  return o;
}

function loadProtos(dir) {
  const root = new protobuf.Root();
  // imports are relative to the proto root, as with protoc's --proto_path
  root.resolvePath = (origin, target) => (path.isAbsolute(target) ? target : path.join(dir, target));
  root.loadSync('push/v1/push.proto', { keepCase: true });
  return root.lookupType('push.v1.PushRequest');
}

function num(v) {
  return typeof v === 'bigint' ? Number(v) : Number(v);
}

// One raw profile: gunzip (or plain), decode with pprof-format, summarize; throws on bad data.
function decodeProfile(raw, wantStacks) {
  let data = Buffer.from(raw);
  const bytes = data.length;
  if (data.length >= 2 && data[0] === 0x1f && data[1] === 0x8b)
    data = zlib.gunzipSync(data);
  const rawBytes = data.length;
  const p = Profile.decode(new Uint8Array(data.buffer, data.byteOffset, data.length));
  const str = (i) => {
    const s = p.stringTable.strings[Number(i)];
    if (s === undefined)
      throw new Error(`string index ${i} out of range`);
    return s;
  };
  const functions = new Map(p.function.map((f) => [Number(f.id), f]));
  const locations = new Map(p.location.map((l) => [Number(l.id), l]));
  const frame = (id) => {
    const l = locations.get(Number(id));
    if (!l)
      throw new Error(`sample references missing location ${id}`);
    if (!l.line.length)
      return `0x${BigInt(l.address).toString(16)}`;
    return l.line.map((ln) => {
      const f = functions.get(Number(ln.functionId));
      if (!f)
        throw new Error(`location ${id} references missing function ${ln.functionId}`);
      return str(f.name);
    }).reverse().join(';');
  };
  let total = 0;
  let totalNs = 0;
  const sampleLabels = {};
  const spans = {};
  const spanNames = {};
  const stacks = wantStacks ? [] : undefined;
  for (const s of p.sample) {
    const v0 = s.value.length ? num(s.value[0]) : 0;
    total += v0;
    totalNs += s.value.length > 1 ? num(s.value[1]) : 0;
    const seen = new Set();
    let spanName;
    for (const l of s.label) {
      const k = str(l.key);
      if (!seen.has(k))
        sampleLabels[k] = (sampleLabels[k] || 0) + 1;
      seen.add(k);
      if (k === 'span_id')
        spans[str(l.str)] = (spans[str(l.str)] || 0) + v0;
      if (k === 'span_name') {
        spanName = str(l.str);
        spanNames[spanName] = (spanNames[spanName] || 0) + v0;
      }
    }
    const names = s.locationId.map(frame);	// leaf first; check every reference
    if (stacks)
      stacks.push({ stack: names.reverse().join(';'), value: v0, spanName });
  }
  const sampleTypes = p.sampleType.map((t) => `${str(t.type)}/${str(t.unit)}`);
  const period = p.periodType && num(p.period) ? `${str(p.periodType.type)}:${str(p.periodType.unit)}` : ':';
  const out = { bytes, rawBytes, samples: p.sample.length, total, totalNs, sampleLabels, spans,
    spanNames, sampleTypes, period };
  if (stacks)
    out.stacks = stacks;
  return out;
}

// Pyroscope's series rules; returns a reason or null.
function checkLabels(labels) {
  const names = new Set();
  for (const l of labels) {
    if (!NAME_RE.test(l.name))
      return `invalid label name '${l.name}'`;
    if (l.name.length > MAX_NAME_LEN)
      return `label name longer than ${MAX_NAME_LEN}`;
    if (Buffer.byteLength(l.value) > MAX_VALUE_LEN)
      return `label value of '${l.name}' longer than ${MAX_VALUE_LEN}`;
    if (names.has(l.name))
      return `duplicate label name '${l.name}'`;
    names.add(l.name);
  }
  if (names.size > MAX_LABEL_NAMES)
    return `${names.size} label names, more than ${MAX_LABEL_NAMES}`;
  if (!names.has('__name__'))
    return 'no __name__ label';
  if (!names.has('service_name'))
    return 'no service_name label';
  return null;
}

function decodePush(PushRequest, body, wantStacks) {
  const msg = PushRequest.decode(body);
  const series = [];
  for (const s of msg.series || []) {
    const labels = {};
    for (const l of s.labels || [])
      labels[l.name] = l.value;
    const bad = checkLabels(s.labels || []);
    if (bad)
      throw new Error(bad);
    const profiles = (s.samples || []).map((r) => {
      const p = decodeProfile(r.raw_profile, wantStacks);
      if (p.rawBytes > MAX_PROFILE_BYTES)
        throw new Error(`profile of ${p.rawBytes} bytes, over ${MAX_PROFILE_BYTES}`);
      if (p.samples > MAX_SAMPLES)
        throw new Error(`profile of ${p.samples} samples, over ${MAX_SAMPLES}`);
      p.profileTypes = p.sampleTypes.map((t) => `${labels.__name__}:${t.replace('/', ':')}:${p.period}`);
      delete p.period;
      return { id: r.ID, ...p };
    });
    series.push({ labels, profiles });
  }
  return series;
}

function main() {
  const opt = parseArgs(process.argv);
  const PushRequest = loadProtos(opt.protoDir);
  const OtlpRequest = otlp.loadProtos(opt.protoDir);
  const state = { mode: opt.mode, status: opt.status, statusUntil: 0, pushes: 0, rejected: 0 };
  const hanging = new Set();
  if (opt.status)
    state.statusUntil = opt.forMs ? Date.now() + opt.forMs : Infinity;

  const emit = (obj) => {
    const line = JSON.stringify(obj) + '\n';
    if (opt.out)
      fs.appendFileSync(opt.out, line);
    else
      process.stdout.write(line);
  };
  const connectError = (res, status, code, message) => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ code, message }));
  };
  const codeOf = (status) => ({ 400: 'invalid_argument', 401: 'unauthenticated',
    403: 'permission_denied', 404: 'unimplemented', 415: 'internal', 429: 'resource_exhausted',
    503: 'unavailable', 504: 'deadline_exceeded' }[status] || 'unknown');
  const publicState = () => ({ mode: state.mode,
    status: state.status && Date.now() < state.statusUntil ? state.status : 0,
    pushes: state.pushes, rejected: state.rejected, hanging: hanging.size });

  const onPush = (req, res, body) => {
    const line = { t: Date.now(), path: req.url, headers: req.headers, bytes: body.length };
    let answered;
    const ctype = String(req.headers['content-type'] || '').split(';')[0].trim();
    try {
      if (ctype !== 'application/proto')
        throw Object.assign(new Error(`content type '${ctype}' is not application/proto`),
          { status: 415 });
      line.series = decodePush(PushRequest, body, opt.stacks);
    } catch (e) {
      line.error = e.message;
      line.errorStatus = e.status || 400;
    }
    if (state.mode === 'hang') {
      answered = 'hang';
      hanging.add(res);
      res.on('close', () => hanging.delete(res));
    } else if (state.status && Date.now() < state.statusUntil) {
      answered = state.status;
      if (state.status >= 200 && state.status < 300) {
        res.writeHead(state.status, { 'Content-Type': 'application/proto' });
        res.end();
      } else {
        connectError(res, state.status, codeOf(state.status), 'failure injected by the test');
      }
    } else if (line.error) {
      answered = line.errorStatus;
      connectError(res, answered, codeOf(answered), line.error);
    } else if (state.mode === 'garbage') {
      answered = 200;
      res.writeHead(200, { 'Content-Type': 'application/proto' });
      res.end(Buffer.from('\xff\xfe garbage, not a PushResponse \x00\x01', 'latin1'));
    } else {
      answered = 200;
      res.writeHead(200, { 'Content-Type': 'application/proto' });
      res.end();	// an empty PushResponse is zero bytes
    }
    delete line.errorStatus;
    line.answered = answered;
    if (line.error)
      state.rejected++;
    else
      state.pushes++;
    emit(line);
  };

  // OTLP as Pyroscope's ingest handler takes it (pkg/ingester/otlp): the HTTP answer is a
  // (here empty) ExportProfilesServiceResponse, a bad request a 400 with a text reason.
  const onOtlp = (req, res, body) => {
    const line = { t: Date.now(), otlp: true, path: req.url, headers: req.headers, bytes: body.length };
    const ctype = String(req.headers['content-type'] || '').split(';')[0].trim();
    let status = 200;
    try {
      if (ctype !== 'application/x-protobuf' && ctype !== 'application/protobuf')
        throw Object.assign(new Error(`Unsupported Content-Type: ${ctype}`), { status: 415 });
      const raw = /gzip/i.test(String(req.headers['content-encoding'] || '')) ? zlib.gunzipSync(body) : body;
      const d = otlp.decodeBody(OtlpRequest, raw, opt.stacks);
      line.rawBytes = raw.length;
      line.series = d.resources.map((r) => {
        const exe = r.attributes['process.executable.name'];
        const svc = r.attributes['service.name'] || (exe ? `unknown_service:${exe}` : 'unknown_service');
        return { labels: { service_name: svc }, attributes: r.attributes, profiles: r.profiles };
      });
    } catch (e) {
      line.error = e.message;
      status = e.status || 400;
    }
    if (state.status && Date.now() < state.statusUntil)
      status = state.status;
    line.answered = status;
    if (line.error)
      state.rejected++;
    else
      state.pushes++;
    emit(line);
    res.writeHead(status, { 'Content-Type': status === 200 ? 'application/x-protobuf' : 'text/plain' });
    res.end(status === 200 ? '' : line.error || 'failure injected by the test');
  };

  const onControl = (req, res, body) => {
    let c;
    try {
      c = JSON.parse(body.toString('utf8') || '{}');
    } catch (e) {
      connectError(res, 400, 'invalid_argument', `control body is not JSON: ${e.message}`);
      return;
    }
    if (c.mode !== undefined) {
      if (!['ok', 'garbage', 'hang'].includes(c.mode)) {
        connectError(res, 400, 'invalid_argument', `unknown mode '${c.mode}'`);
        return;
      }
      state.mode = c.mode;
      if (c.mode === 'ok' && c.status === undefined)
        state.status = 0;
    }
    if (c.status !== undefined) {
      state.status = Number(c.status) || 0;
      state.statusUntil = c.for_ms ? Date.now() + Number(c.for_ms) : Infinity;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(publicState()));
  };

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (d) => chunks.push(d));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.method === 'POST' && req.url === PUSH_PATH) {
        onPush(req, res, body);
      } else if (req.method === 'POST' && req.url === OTLP_PATH) {
        onOtlp(req, res, body);
      } else if (req.method === 'POST' && req.url === '/control') {
        onControl(req, res, body);
      } else if (req.method === 'GET' && req.url === '/state') {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(publicState()));
      } else {
        state.rejected++;
        emit({ t: Date.now(), path: req.url, headers: req.headers, bytes: body.length,
          answered: 404, error: `no route ${req.method} ${req.url}` });
        connectError(res, 404, 'unimplemented', `no route ${req.method} ${req.url}`);
      }
    });
  });
  // a hanging answer must outlast any client timeout
  server.requestTimeout = 0;
  server.headersTimeout = 60000;
  server.keepAliveTimeout = 30000;

  server.listen(opt.port, '127.0.0.1', () => {
    const port = server.address().port;
    if (opt.ready) {
      fs.writeFileSync(`${opt.ready}.tmp`, `${port}\n`);
      fs.renameSync(`${opt.ready}.tmp`, opt.ready);	// readers never see a partial file
    }
    process.stderr.write(`pyroscope-receiver: listening on 127.0.0.1:${port}\n`);
  });
  const stop = () => {
    for (const res of hanging)
      res.destroy();
    server.close(() => process.exit(0));
    server.closeAllConnections?.();
    setTimeout(() => process.exit(0), 1000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

try {
  main();
} catch (e) {
  process.stderr.write(`pyroscope-receiver: ${e.message}\n`);
  process.exit(2);
}
