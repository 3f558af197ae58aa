#!/usr/bin/env node
// otelctx-read.js: an OTEP 4719 process-context reader written from the OTEP's text and the published
// ProcessContext schema, independent of spanprof's C reader (user/process/otelctx.c), for the
// integration tests.
//
//   node otelctx-read.js PID                 one consistent read, printed as JSON
//   node otelctx-read.js --watch SECS PID    read in a loop for SECS seconds while the process updates
//                                            its context; prints a summary (reads, retries, key-map
//                                            growth) and exits 1 if any decoded read broke the rules
//
// Reading protocol (OTEP 4719): find the mapping named OTEL_CTX in /proc/<pid>/maps
// ("/memfd:OTEL_CTX", "[anon:OTEL_CTX]" or "[anon_shmem:OTEL_CTX]"); the header at its start is
//   char signature[8] = "OTEL_CTX"; u32 version = 2; u32 payload_size;
//   u64 monotonic_published_at_ns; u64 payload (a pointer in the process)
// in the process's byte order. A published_at_ns of 0 means an update is in progress. Read the
// header, then payload_size bytes at payload, then the header again: only when published_at_ns is
// the same non-zero value both times are header and payload consistent; otherwise read again.
// The payload is an opentelemetry.proto.processcontext.v1development.ProcessContext; OTEP 4947
// keeps threadlocal.schema_version and threadlocal.attribute_key_map (index -> name) in its
// attributes.
'use strict';
const fs = require('fs');
const path = require('path');
const protobuf = require(path.join(__dirname, 'node_modules', 'protobufjs'));

// The published schema (opentelemetry-proto: common/v1, resource/v1, processcontext/v1development),
// only the messages the payload is made of, field numbers as published.
const SCHEMA = `
syntax = "proto3";
package opentelemetry.proto.common.v1;
message AnyValue {
  oneof value {
    string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4;
    ArrayValue array_value = 5; KeyValueList kvlist_value = 6; bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message EntityRef { string schema_url = 1; string type = 2; repeated string id_keys = 3; repeated string description_keys = 4; }
`;
const SCHEMA2 = `
syntax = "proto3";
package opentelemetry.proto.resource.v1;
message Resource {
  repeated opentelemetry.proto.common.v1.KeyValue attributes = 1;
  uint32 dropped_attributes_count = 2;
  repeated opentelemetry.proto.common.v1.EntityRef entity_refs = 3;
}
`;
const SCHEMA3 = `
syntax = "proto3";
package opentelemetry.proto.processcontext.v1development;
message ProcessContext {
  opentelemetry.proto.resource.v1.Resource resource = 1;
  repeated opentelemetry.proto.common.v1.KeyValue attributes = 2;
}
`;
const root = new protobuf.Root();
for (const s of [SCHEMA, SCHEMA2, SCHEMA3]) protobuf.parse(s, root, { keepCase: true });
const ProcessContext = root.lookupType('opentelemetry.proto.processcontext.v1development.ProcessContext');

const NAMES = ['/memfd:OTEL_CTX', '[anon:OTEL_CTX]', '[anon_shmem:OTEL_CTX]'];
const HEADER = 32;
const MAX_PAYLOAD = 16 << 20; // a sanity bound of this reader, not of the OTEP

function findMapping(pid) {
	const found = [];
	for (const line of fs.readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n')) {
		const m = line.match(/^([0-9a-f]+)-([0-9a-f]+) (\S+) ([0-9a-f]+) \S+ \d+\s*(.*)$/);
		if (m && NAMES.some((n) => m[5].startsWith(n)))
			found.push({ start: BigInt('0x' + m[1]), end: BigInt('0x' + m[2]), perms: m[3], path: m[5] });
	}
	return found;
}

function readAt(fd, addr, len) {
	const buf = Buffer.alloc(len);
	let done = 0;
	while (done < len) {
		const n = fs.readSync(fd, buf, done, len - done, addr + BigInt(done));
		if (n <= 0) throw new Error(`short read at 0x${(addr + BigInt(done)).toString(16)}`);
		done += n;
	}
	return buf;
}

function header(buf) {
	return {
		signature: buf.subarray(0, 8).toString('latin1'),
		version: buf.readUInt32LE(8),
		payload_size: buf.readUInt32LE(12),
		published_at_ns: buf.readBigUInt64LE(16),
		payload: buf.readBigUInt64LE(24),
	};
}

function anyValue(v) {
	if (!v) return null;
	if (v.string_value !== undefined && v.string_value !== null) return v.string_value;
	if (v.bool_value !== undefined && v.bool_value !== null) return v.bool_value;
	if (v.int_value !== undefined && v.int_value !== null) return v.int_value.toString();
	if (v.double_value !== undefined && v.double_value !== null) return v.double_value;
	if (v.array_value) return (v.array_value.values || []).map(anyValue);
	if (v.kvlist_value) return kvs(v.kvlist_value.values);
	if (v.bytes_value) return Buffer.from(v.bytes_value).toString('hex');
	return null;
}

function kvs(list) {
	const out = {};
	for (const kv of list || []) {
		if (kv.key in out) throw new Error(`duplicate key ${kv.key}`);
		out[kv.key] = anyValue(kv.value);
	}
	return out;
}

// One read per the protocol. Returns { ok: true, ctx } or { ok: false, why } (retry-worthy states).
function readOnce(pid, fd, mapping) {
	const h = header(readAt(fd, mapping.start, HEADER));
	if (h.signature === '\0'.repeat(8)) return { ok: false, why: 'not-published' };
	if (h.signature !== 'OTEL_CTX') throw new Error(`bad signature ${JSON.stringify(h.signature)}`);
	if (h.version !== 2) throw new Error(`unsupported version ${h.version}`);
	if (h.published_at_ns === 0n) return { ok: false, why: 'mid-update' };
	if (h.payload_size > MAX_PAYLOAD) throw new Error(`payload_size ${h.payload_size}`);
	let payload;
	try {
		payload = readAt(fd, h.payload, h.payload_size);
	} catch (e) {
		payload = null;
	}
	const again = header(readAt(fd, mapping.start, HEADER));
	if (again.published_at_ns !== h.published_at_ns) return { ok: false, why: 'changed' };
	if (!payload) throw new Error(`payload unreadable at 0x${h.payload.toString(16)}`);
	const msg = ProcessContext.toObject(ProcessContext.decode(payload), { longs: String, defaults: false, oneofs: false });
	const resource = kvs(msg.resource && msg.resource.attributes);
	const attributes = kvs(msg.attributes);
	return {
		ok: true,
		ctx: {
			pid: Number(pid),
			mapping: { start: '0x' + mapping.start.toString(16), end: '0x' + mapping.end.toString(16), path: mapping.path, perms: mapping.perms },
			header: {
				version: h.version,
				payload_size: h.payload_size,
				published_at_ns: h.published_at_ns.toString(),
				payload: '0x' + h.payload.toString(16),
				payload_in_mapping: h.payload >= mapping.start && h.payload + BigInt(h.payload_size) <= mapping.end,
			},
			resource,
			dropped_attributes_count: (msg.resource && msg.resource.dropped_attributes_count) || 0,
			attributes,
			schema_version: attributes['threadlocal.schema_version'] ?? null,
			key_map: attributes['threadlocal.attribute_key_map'] ?? null,
		},
	};
}

function readConsistent(pid, fd, mapping, tries, stats) {
	for (let i = 0; i < tries; i++) {
		const r = readOnce(pid, fd, mapping);
		if (r.ok) return r.ctx;
		stats[r.why] = (stats[r.why] || 0) + 1;
	}
	return null;
}

function main() {
	const args = process.argv.slice(2);
	let watch = 0;
	if (args[0] === '--watch') {
		watch = Number(args[1]);
		args.splice(0, 2);
	}
	const pid = args[0];
	if (!pid || !/^\d+$/.test(pid)) {
		console.error('usage: otelctx-read.js [--watch SECS] PID');
		process.exit(2);
	}
	const maps = findMapping(pid);
	if (maps.length === 0) {
		console.log(JSON.stringify({ pid: Number(pid), found: false }));
		process.exit(3);
	}
	if (maps.length > 1) throw new Error(`${maps.length} OTEL_CTX mappings (OTEP 4719: one per process)`);
	const fd = fs.openSync(`/proc/${pid}/mem`, 'r');
	const stats = {};
	if (!watch) {
		const ctx = readConsistent(pid, fd, maps[0], 100, stats);
		if (!ctx) throw new Error(`no consistent read in 100 tries: ${JSON.stringify(stats)}`);
		ctx.found = true;
		ctx.retries = stats;
		console.log(JSON.stringify(ctx));
		return;
	}
	// Watch: every decoded read must be consistent (the key map only grows, never changes what an
	// index names; published_at_ns only moves forward).
	const end = Date.now() + watch * 1000;
	let reads = 0, publishes = 0, last = null, bad = [];
	while (Date.now() < end) {
		const r = readOnce(pid, fd, maps[0]);
		if (!r.ok) {
			stats[r.why] = (stats[r.why] || 0) + 1;
			continue;
		}
		reads++;
		const c = r.ctx;
		if (last && c.header.published_at_ns !== last.header.published_at_ns) {
			publishes++;
			if (BigInt(c.header.published_at_ns) < BigInt(last.header.published_at_ns))
				bad.push(`published_at_ns went back: ${last.header.published_at_ns} -> ${c.header.published_at_ns}`);
		}
		const km = c.key_map || [];
		const prev = (last && last.key_map) || [];
		if (km.length < prev.length) bad.push(`key map shrank: ${prev.length} -> ${km.length}`);
		for (let i = 0; i < Math.min(km.length, prev.length); i++)
			if (km[i] !== prev[i]) bad.push(`key ${i} renamed: ${prev[i]} -> ${km[i]}`);
		if (new Set(km).size !== km.length) bad.push('duplicate names in the key map');
		last = c;
	}
	console.log(JSON.stringify({ pid: Number(pid), reads, publishes_seen: publishes, retries: stats,
		keys: last ? (last.key_map || []).length : 0, last, bad: bad.slice(0, 10) }));
	process.exit(bad.length ? 1 : 0);
}

try {
	main();
} catch (e) {
	console.error(`otelctx-read: ${e.message}`);
	process.exit(1);
}
