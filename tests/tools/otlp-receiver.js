#!/usr/bin/env node
// otlp-receiver.js: a local OTLP/HTTP profiles receiver for tests. It decodes every
// ExportProfilesServiceRequest with protobufjs from spanprof's own .proto files (an independent
// decoder; opentelemetry-proto v1.10.0), gunzips what says Content-Encoding: gzip, checks the
// data model's rules (dictionary zero entries, indices in range, one value per sample, link id
// sizes, unique attribute keys per sample, a frame type per location, service.name on every
// resource), and writes one JSON line per request. It also decodes a file (record's .otlp.pb).
// Its decoder is also a module (loadProtos, decodeBody) for pyroscope-receiver.js.
// With --grpc it is an OTLP/gRPC server instead (@grpc/grpc-js, the service loaded from the same
// .proto files by @grpc/proto-loader; the request's bytes are handed to the same decoder).
//
// Usage: node otlp-receiver.js [--port N] [--ready FILE] [--out FILE] [--stacks]
//          [--proto-dir DIR] [--status CODE [--for-ms MS | --count N]]
//          [--grpc [--partial N:MESSAGE] [--tls-cert FILE --tls-key FILE [--client-ca FILE]]]
//        node otlp-receiver.js --decode FILE      (plain or gzip; one JSON object, with stacks)
//   --port 0 (the default) picks a free port; --ready FILE then receives it once listening.
//   --out FILE: where the JSON lines go (appended; default stdout). --stacks adds every sample.
//   --status CODE: answer CODE (an HTTP status, or with --grpc a gRPC status code) for --for-ms
//     milliseconds, or to the first --count requests, or always.
//   --grpc: ProfilesService/Export over HTTP/2 (h2c, or TLS with --tls-cert/--tls-key; with
//     --client-ca a client certificate signed by it is required). --partial N:MESSAGE answers a
//     partial_success. Lines then have "grpc": true, "answered": the gRPC status (0: OK),
//     "headers": the call's metadata, "bytes": the message's size after any grpc-encoding.
// Routes (127.0.0.1 only):
//   POST <any path ending in /v1development/profiles>  Content-Type application/x-protobuf
//   POST /control  JSON {"status": 503, "for_ms": 20000}: answer that status for a while
// One line per request:
//   {"t": ms, "path", "headers", "answered": 200|..., "bytes": n (on the wire), "rawBytes": n,
//    "dictionary": {"strings": n, "mappings", "locations", "functions", "stacks", "links",
//      "attributes"},
//    "resources": [{"attributes": {key: value}, "scope": {"name", "version"},
//      "profiles": [{"sampleType": "samples/count", "periodType": "cpu/nanoseconds", "period",
//        "timeUnixNano": "ns", "durationNano": "ns", "profileId": hex, "samples": n,
//        "total": sum of values, "linked": total of samples with a link,
//        "spans": {span_id hex: total}, "traces": {trace_id hex: total},
//        "attributes": {key: samples with it}, "frameTypes": {kernel|dotnet|native: locations},
//        "stacks": [{"stack": "root;...;leaf", "value", "trace_id", "span_id",
//          "attributes": {key: value}}] (--stacks, --decode)}]}]}
//   plus "error": "..." when something did not decode or broke a rule (then answered 400).
'use strict';

const fs = require('fs');
const http = require('http');
const path = require('path');
const zlib = require('zlib');
const protobuf = require('protobufjs');

const PATH_SUFFIX = '/v1development/profiles';
const SERVICE_PROTO = 'opentelemetry/proto/collector/profiles/v1development/profiles_service.proto';
const FRAME_TYPE = 'profile.frame.type';

function parseArgs(argv) {
  const o = { port: 0, ready: null, out: null, stacks: false, status: 0, forMs: 0, count: 0,
    decode: null, grpc: false, partial: null, tlsCert: null, tlsKey: null, clientCa: null,
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
    else if (a === '--decode') o.decode = val();
    else if (a === '--count') o.count = Number(val());
    else if (a === '--grpc') o.grpc = true;
    else if (a === '--partial') o.partial = val();
    else if (a === '--tls-cert') o.tlsCert = val();
    else if (a === '--tls-key') o.tlsKey = val();
    else if (a === '--client-ca') o.clientCa = val();
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
  root.loadSync(SERVICE_PROTO, { keepCase: true });
  return root.lookupType('opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest');
}

const int = (v) => (v === undefined || v === null ? 0 : Number(v));
const hex = (b) => (b && b.length ? Buffer.from(b).toString('hex') : '');

function anyValue(v, str) {
  if (!v || v.value === undefined)
    return null;
  if (v.value === 'string_value_strindex')
    return str(v.string_value_strindex);
  if (v.value === 'int_value')
    return Number(v.int_value);
  return v[v.value];
}

// One request's message as the summary above; throws on a broken rule.
function summarize(msg, wantStacks) {
  const d = msg.dictionary;
  if (!d)
    throw new Error('no dictionary');
  const t = (name) => d[name] || [];
  const strings = t('string_table');
  const str = (i) => {
    const s = strings[int(i)];
    if (s === undefined)
      throw new Error(`string index ${i} out of range`);
    return s;
  };
  const at = (name, i) => {
    const e = t(name)[int(i)];
    if (e === undefined)
      throw new Error(`${name} index ${i} out of range`);
    return e;
  };
  // every table present with its zero value first (the schema's "null" entry)
  if (strings[0] !== '')
    throw new Error('string_table[0] is not ""');
  for (const name of ['mapping_table', 'location_table', 'function_table', 'link_table',
    'attribute_table', 'stack_table']) {
    const z = t(name)[0];
    if (!z)
      throw new Error(`${name}[0] missing`);
    const set = Object.entries(z).filter(([, v]) => !(v === 0 || v === '' || v === null ||
      (Array.isArray(v) && !v.length) || (v && v.length === 0)));
    if (set.length)
      throw new Error(`${name}[0] is not the zero value: ${JSON.stringify(set)}`);
  }
  const attrOf = (i) => {
    const a = at('attribute_table', i);
    if (!int(i))
      throw new Error('attribute index 0 referenced');
    return [str(a.key_strindex), anyValue(a.value, str)];
  };
  const attrs = (idx, what) => {
    const out = {};
    for (const i of idx || []) {
      const [k, v] = attrOf(i);
      if (k in out)
        throw new Error(`${what}: attribute key '${k}' twice`);
      out[k] = v;
    }
    return out;
  };
  const locName = (li) => {
    const l = at('location_table', li);
    if (l.lines && l.lines.length)
      return l.lines.map((ln) => str(at('function_table', ln.function_index).name_strindex)).reverse();
    const addr = BigInt(l.address || 0);
    const m = int(l.mapping_index) ? at('mapping_table', l.mapping_index) : null;
    const file = m ? str(m.filename_strindex) : '';
    const base = file.slice(file.lastIndexOf('/') + 1);
    if (m && base && addr >= BigInt(m.memory_start || 0))
      return [`${base}+0x${(addr - BigInt(m.memory_start || 0) + BigInt(m.file_offset || 0)).toString(16)}`];
    return [`0x${addr.toString(16)}`];
  };
  const frameTypesAll = {};
  t('location_table').forEach((l, i) => {
    if (!i)
      return;
    const a = attrs(l.attribute_indices, `location ${i}`);
    if (!a[FRAME_TYPE])
      throw new Error(`location ${i} has no ${FRAME_TYPE}`);
    frameTypesAll[i] = a[FRAME_TYPE];
  });

  const resources = (msg.resource_profiles || []).map((rp, ri) => {
    const ra = {};
    for (const kv of (rp.resource && rp.resource.attributes) || [])
      ra[kv.key] = anyValue(kv.value, str);
    if (!ra['service.name'])
      throw new Error(`resource ${ri} has no service.name`);
    const out = { attributes: ra, profiles: [] };
    for (const sp of rp.scope_profiles || []) {
      out.scope = { name: (sp.scope && sp.scope.name) || '', version: (sp.scope && sp.scope.version) || '' };
      for (const p of sp.profiles || []) {
        if (!p.sample_type)
          throw new Error('profile without sample_type');
        // A sampled profile has a period; off-CPU time is measured, not sampled: none.
        const measured = str(p.sample_type.type_strindex) === 'off_cpu';
        if (!measured && !p.period_type)
          throw new Error('profile without period_type');
        if (!measured && !(int(p.period) > 0))
          throw new Error('profile period is not positive');
        if (measured && (p.period_type || int(p.period)))
          throw new Error('off_cpu profile with a period');
        if (p.profile_id && p.profile_id.length && (p.profile_id.length !== 16 || !p.profile_id.some((x) => x)))
          throw new Error('profile_id is not 16 bytes, or all zero');
        const pr = {
          sampleType: `${str(p.sample_type.type_strindex)}/${str(p.sample_type.unit_strindex)}`,
          periodType: p.period_type ? `${str(p.period_type.type_strindex)}/${str(p.period_type.unit_strindex)}` : '',
          period: int(p.period),
          timeUnixNano: String(p.time_unix_nano || 0),
          durationNano: String(p.duration_nano || 0),
          profileId: hex(p.profile_id),
          samples: (p.samples || []).length,
          total: 0, linked: 0, spans: {}, traces: {}, attributes: {}, frameTypes: {},
        };
        const stacks = [];
        const locSeen = new Set();
        for (const s of p.samples || []) {
          const vals = (s.values || []).map(Number);
          const ts = s.timestamps_unix_nano || [];
          if (vals.length !== 1 && !(vals.length === 0 && ts.length))
            throw new Error(`sample with ${vals.length} values for one sample type`);
          if (vals.length && ts.length && ts.length !== vals.length)
            throw new Error('values and timestamps of different lengths');
          const v = vals.length ? vals[0] : ts.length;
          const st = at('stack_table', s.stack_index);
          const names = [];
          for (const li of st.location_indices || []) {
            if (!int(li))
              throw new Error('stack references location 0');
            names.push(...locName(li).reverse());	// leaf first
            locSeen.add(int(li));
          }
          const a = attrs(s.attribute_indices, 'sample');
          let trace = '', span = '';
          if (int(s.link_index)) {
            const l = at('link_table', s.link_index);
            trace = hex(l.trace_id);
            span = hex(l.span_id);
            if ((trace && trace.length !== 32) || (span && span.length !== 16))
              throw new Error(`link ids of ${trace.length / 2} and ${span.length / 2} bytes`);
            pr.linked += v;
            if (span)
              pr.spans[span] = (pr.spans[span] || 0) + v;
            if (trace)
              pr.traces[trace] = (pr.traces[trace] || 0) + v;
          }
          for (const k of Object.keys(a))
            pr.attributes[k] = (pr.attributes[k] || 0) + 1;
          pr.total += v;
          if (wantStacks)
            stacks.push({ stack: names.reverse().join(';'), value: v, trace_id: trace, span_id: span, attributes: a });
        }
        for (const li of locSeen)
          pr.frameTypes[frameTypesAll[li]] = (pr.frameTypes[frameTypesAll[li]] || 0) + 1;
        if (wantStacks)
          pr.stacks = stacks;
        out.profiles.push(pr);
      }
    }
    return out;
  });
  return {
    dictionary: { strings: strings.length, mappings: t('mapping_table').length,
      locations: t('location_table').length, functions: t('function_table').length,
      stacks: t('stack_table').length, links: t('link_table').length,
      attributes: t('attribute_table').length },
    resources,
  };
}

function decodeBody(Request, raw, wantStacks) {
  const msg = Request.decode(raw);
  const obj = Request.toObject(msg, { defaults: false, arrays: true, oneofs: true });
  return summarize(obj, wantStacks);
}

function decodeFile(Request, file) {
  let data = fs.readFileSync(file);
  const bytes = data.length;
  if (data.length >= 2 && data[0] === 0x1f && data[1] === 0x8b)
    data = zlib.gunzipSync(data);
  return { bytes, rawBytes: data.length, ...decodeBody(Request, data, true) };
}

// OTLP/gRPC: the generated service definition, except that the request stays bytes, decoded and
// checked by decodeBody like the HTTP requests.
function serveGrpc(opt, Request, emit, state, injected) {
  const grpc = require('@grpc/grpc-js');
  const loader = require('@grpc/proto-loader');
  const def = loader.loadSync(SERVICE_PROTO, { includeDirs: [opt.protoDir], keepCase: true });
  const svc = grpc.loadPackageDefinition(def).opentelemetry.proto.collector.profiles.v1development
    .ProfilesService.service;
  const server = new grpc.Server();
  server.addService({ Export: { ...svc.Export, requestDeserialize: (b) => b } }, {
    Export: (call, done) => {
      const raw = call.request;
      const line = { t: Date.now(), grpc: true, path: svc.Export.path, headers: call.metadata.getMap(),
        peer: call.getPeer(), bytes: raw.length, rawBytes: raw.length };
      let status = 0, details = '';
      try {
        Object.assign(line, decodeBody(Request, raw, opt.stacks));
      } catch (e) {
        line.error = e.message;
        status = grpc.status.INVALID_ARGUMENT;
        details = e.message;
      }
      const inj = injected();
      if (inj) {
        status = inj;
        details = 'failure injected by the test';
      }
      line.answered = status;
      if (line.error)
        state.rejected++;
      else
        state.requests++;
      emit(line);
      if (status)
        return done({ code: status, details });
      const resp = {};
      if (opt.partial) {
        const i = opt.partial.indexOf(':');
        resp.partial_success = { rejected_profiles: Number(opt.partial.slice(0, i)),
          error_message: opt.partial.slice(i + 1) };
      }
      done(null, resp);
    },
  });
  let creds = grpc.ServerCredentials.createInsecure();
  if (opt.tlsCert)
    creds = grpc.ServerCredentials.createSsl(opt.clientCa ? fs.readFileSync(opt.clientCa) : null,
      [{ cert_chain: fs.readFileSync(opt.tlsCert), private_key: fs.readFileSync(opt.tlsKey) }],
      !!opt.clientCa);
  server.bindAsync(`127.0.0.1:${opt.port}`, creds, (err, port) => {
    if (err) {
      process.stderr.write(`otlp-receiver: ${err.message}\n`);
      process.exit(2);
    }
    if (opt.ready) {
      fs.writeFileSync(`${opt.ready}.tmp`, `${port}\n`);
      fs.renameSync(`${opt.ready}.tmp`, opt.ready);
    }
    process.stderr.write(`otlp-receiver: gRPC${opt.tlsCert ? ' (TLS)' : ''} on 127.0.0.1:${port}\n`);
  });
  const stop = () => {
    server.forceShutdown();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

function main() {
  const opt = parseArgs(process.argv);
  const Request = loadProtos(opt.protoDir);
  if (opt.decode) {
    process.stdout.write(JSON.stringify(decodeFile(Request, opt.decode)) + '\n');
    return;
  }
  const state = { status: opt.status, statusUntil: 0, statusLeft: Infinity, requests: 0, rejected: 0 };
  if (opt.status)
    state.statusUntil = opt.forMs ? Date.now() + opt.forMs : Infinity;
  if (opt.status && opt.count)
    state.statusLeft = opt.count;
  // The injected status for this request, or 0.
  const injected = () => {
    if (!state.status || Date.now() >= state.statusUntil || state.statusLeft <= 0)
      return 0;
    state.statusLeft--;
    return state.status;
  };
  const emit = (obj) => {
    const line = JSON.stringify(obj) + '\n';
    if (opt.out)
      fs.appendFileSync(opt.out, line);
    else
      process.stdout.write(line);
  };
  const answer = (res, status, body) => {
    res.writeHead(status, { 'Content-Type': status === 200 ? 'application/x-protobuf' : 'text/plain' });
    res.end(body || '');
  };

  const onExport = (req, res, body) => {
    const line = { t: Date.now(), path: req.url, headers: req.headers, bytes: body.length };
    const ctype = String(req.headers['content-type'] || '').split(';')[0].trim();
    const enc = String(req.headers['content-encoding'] || '').trim().toLowerCase();
    let status = 200;
    try {
      if (ctype !== 'application/x-protobuf')
        throw Object.assign(new Error(`content type '${ctype}' is not application/x-protobuf`), { status: 415 });
      let raw = body;
      if (enc === 'gzip')
        raw = zlib.gunzipSync(body);
      else if (enc && enc !== 'identity')
        throw Object.assign(new Error(`content encoding '${enc}'`), { status: 415 });
      else if (body.length >= 2 && body[0] === 0x1f && body[1] === 0x8b)
        throw new Error('a gzip body without Content-Encoding: gzip');
      line.rawBytes = raw.length;
      Object.assign(line, decodeBody(Request, raw, opt.stacks));
    } catch (e) {
      line.error = e.message;
      status = e.status || 400;
    }
    status = injected() || status;
    line.answered = status;
    if (line.error)
      state.rejected++;
    else
      state.requests++;
    emit(line);
    // an empty ExportProfilesServiceResponse (no partial_success) is zero bytes
    answer(res, status, status === 200 ? '' : line.error || 'failure injected by the test');
  };

  if (opt.grpc) {
    serveGrpc(opt, Request, emit, state, injected);
    return;
  }
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (d) => chunks.push(d));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const url = req.url.split('?')[0];
      if (req.method === 'POST' && url.endsWith(PATH_SUFFIX)) {
        onExport(req, res, body);
      } else if (req.method === 'POST' && url === '/control') {
        try {
          const c = JSON.parse(body.toString('utf8') || '{}');
          state.status = Number(c.status) || 0;
          state.statusUntil = c.for_ms ? Date.now() + Number(c.for_ms) : Infinity;
          answer(res, 200, JSON.stringify(state));
        } catch (e) {
          answer(res, 400, e.message);
        }
      } else {
        state.rejected++;
        emit({ t: Date.now(), path: req.url, headers: req.headers, bytes: body.length,
          answered: 404, error: `no route ${req.method} ${req.url}` });
        answer(res, 404, `no route ${req.method} ${req.url}`);
      }
    });
  });
  server.listen(opt.port, '127.0.0.1', () => {
    const port = server.address().port;
    if (opt.ready) {
      fs.writeFileSync(`${opt.ready}.tmp`, `${port}\n`);
      fs.renameSync(`${opt.ready}.tmp`, opt.ready);	// readers never see a partial file
    }
    process.stderr.write(`otlp-receiver: listening on 127.0.0.1:${port}\n`);
  });
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections?.();
    setTimeout(() => process.exit(0), 1000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

// The decoder, for the Pyroscope stand-in's OTLP route.
module.exports = { loadProtos, decodeBody };

if (require.main === module) {
  try {
    main();
  } catch (e) {
    process.stderr.write(`otlp-receiver: ${e.message}\n`);
    process.exit(2);
  }
}
