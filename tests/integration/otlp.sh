#!/usr/bin/env bash
# otlp.sh: OTLP profiles (opentelemetry-proto v1.10.0) from a real hooked ASP.NET Core service
# under load, decoded by an independent reader (protobufjs on our .proto files,
# tests/tools/otlp-receiver.js):
#   1. record: one recording written as pprof and as OTLP: the same sample totals, the same
#      stacks with the same labels (pprof labels <-> OTLP attributes and links), span links
#      that are the pprof span labels and are right against the spans the service exported;
#      the service named as the agent names it (OTEL_SERVICE_NAME): OTLP service.name, and the
#      pprof's service_name label on every sample; the payload sizes of both. The recording
#      runs until the service has REC_SAMPLES samples (not a fixed time: a loaded machine
#      gives the service fewer).
#   2. the agent pushing to a local OTLP/HTTP receiver: every window with samples arrives and
#      decodes, gzip'd; the service's resource attributes; span links (Pyroscope's convention:
#      the local root) right against the exported spans; totals = what the agent exported.
#   3. the agent configured from OTEL_EXPORTER_OTLP_* only (endpoint with a path, headers,
#      compression none), with --full-span-labels: links carry trace ids.
. "$(dirname "$0")/lib.sh"
need_root
command -v dotnet > /dev/null || skip "no dotnet"
command -v node > /dev/null || skip "no node"

RECEIVER=$TOOLS/otlp-receiver.js
need_built "$SVC" "$LOADGEN" "$HOOK" "$SPANPROF"
[ -f "$TOOLS/node_modules/protobufjs/package.json" ] ||
	(cd "$TOOLS" && npm ci --no-audit --no-fund --silent) || skip "npm ci in $TOOLS failed"
PATHS='/work/a,/work/b,/work/labels?tenant=acme'

# ---- helpers ------------------------------------------------------------------------------------

# start_service NAME SERVICE: SpanService with the hook, as agent.sh starts it (the app names itself
# SERVICE in code and in OTEL_SERVICE_NAME); sets SVC_PID, SVC_PORT.
start_service() {
	local name=$1 service=$2
	start_app --ready-file "$TMP/$name.ready" "$TMP/$name.svc" \
		env OTEL_SERVICE_NAME="$service" SPANSERVICE_SERVICE_NAME="$service" SPANSERVICE_SPANS="$TMP/$name.spans.jsonl" \
		SPANSERVICE_READY="$TMP/$name.ready" DOTNET_STARTUP_HOOKS="$HOOK" dotnet "$SVC" --port 0
	SVC_PORT=$(node -pe "JSON.parse(require('fs').readFileSync('$TMP/$name.ready')).port")
	SVC_PID=$APP_PID
	grep -q '"hook_mapped":true' "$TMP/$name.ready" || fail "$name: hook not loaded"
}

# stop_service NAME: SIGTERM, so every span is flushed to the span file.
stop_service() {
	stop -t 30 "$SVC_PID"
	grep -q 'spans_dropped=0' "$TMP/$1.svc" || { cat "$TMP/$1.svc"; fail "$1: spans dropped or not flushed"; }
}

# load NAME SECONDS: LoadGen in the background; LOAD_PID.
load() {
	spawn "$TMP/$1.load" dotnet "$LOADGEN" --url "http://127.0.0.1:$SVC_PORT" --concurrency 100 \
		--duration "$2" --paths "$PATHS"
	LOAD_PID=$SPAWNED
}

# load_done: the load generator's end; it exits 1 when no request succeeded, which fails the test.
load_done() {
	local rc=0
	wait "$LOAD_PID" || rc=$?
	[ "$rc" = 0 ] || { tail -5 "$TMP"/*.load >&2; fail "the load generator failed (exit $rc): no request succeeded"; }
}

# start_receiver NAME [receiver args]: sets RX_PORT; JSON lines in $TMP/NAME.rx.jsonl.
start_receiver() {
	local name=$1
	shift
	spawn "$TMP/$name.rx.log" node "$RECEIVER" --port 0 --ready "$TMP/$name.rx.ready" \
		--out "$TMP/$name.rx.jsonl" --stacks "$@"
	poll 10 test -s "$TMP/$name.rx.ready" || { cat "$TMP/$name.rx.log"; fail "$name: receiver did not start"; }
	RX_PORT=$(cat "$TMP/$name.rx.ready")
}

# run_agent NAME SECONDS ARGS...: the agent for SECONDS under load, then SIGTERM; it must exit 0.
# Its stderr in $TMP/NAME.agent.
run_agent() {
	local name=$1 secs=$2
	shift 2
	spawn "$TMP/$name.agent" "$SPANPROF" agent -F 99 --interval 2 -v "$@"
	AGENT_PID=$SPAWNED
	wait_for_line "$TMP/$name.agent" 'agent sampling' 30
	load "$name" "$secs"
	wait "$LOAD_PID" || fail "$name: load generator failed"
	kill -TERM "$AGENT_PID"
	poll 15 gone "$AGENT_PID" || { cat "$TMP/$name.agent"; fail "$name: agent still running 15 s after SIGTERM"; }
	wait "$AGENT_PID" || { cat "$TMP/$name.agent"; fail "$name: agent exited non-zero"; }
	grep 'agent stopped\|otlp' "$TMP/$name.agent" | sed 's/^/  /'
}

# to_pprof_json OTLP.json SERVICE OUT.json: the OTLP samples of SERVICE's resource (all when
# SERVICE is "") in pprof-json.js form, attributes and links named back as spanprof's pprof
# labels, so the pprof checkers (spancheck.js) read them.
to_pprof_json() {
	node - "$@" << 'EOF'
const fs = require('fs');
const [inFile, service, outFile] = process.argv.slice(2);
const back = { 'process.pid': 'pid', 'thread.id': 'tid', 'thread.name': 'thread_name',
  'process.executable.name': 'process_name' };
const lines = fs.readFileSync(inFile, 'utf8').split('\n').filter(Boolean).map(JSON.parse);
const samples = [];
for (const l of lines)
  for (const r of l.resources || []) {
    if (service && r.attributes['service.name'] !== service) continue;
    for (const p of r.profiles)
      for (const s of p.stacks) {
        const labels = {};
        for (const [k, v] of Object.entries(s.attributes)) labels[back[k] || k] = String(v);
        if (s.trace_id) labels.trace_id = s.trace_id;
        if (s.span_id) labels.span_id = s.span_id;
        samples.push({ stack: s.stack ? s.stack.split(';') : [], labels, values: [s.value] });
      }
  }
fs.writeFileSync(outFile, JSON.stringify({ samples, totals: [samples.reduce((a, s) => a + s.values[0], 0)] }));
EOF
}

# check_spans NAME PROFILE.json PID [spancheck args]: span links right against the exported spans.
check_spans() {
	local name=$1 prof=$2 pid=$3 r
	shift 3
	node "$ROOT/tests/integration/spancheck.js" "$prof" "$TMP/$name.spans.jsonl" --pid "$pid" "$@" \
		> "$TMP/$name.check"
	r=$(cat "$TMP/$name.check")
	note "$name: $(node -pe "const r=($r); delete r.wrong_examples; delete r.by_method; JSON.stringify(r)")"
	[ "$(field "$r" samples_in_span_methods)" -ge 50 ] || fail "$name: only $(field "$r" samples_in_span_methods) samples in span-only methods"
	ge "$(field "$r" right_rate)" 0.95 || fail "$name: right span on $(field "$r" right_rate) of span-only samples"
	le "$(field "$r" wrong_rate)" 0.01 || fail "$name: wrong span on $(field "$r" wrong_rate)"
	[ "$(field "$r" nospan_with_span)" = 0 ] || fail "$name: samples outside any span carry a link"
}

# ---- 1. record: pprof and OTLP of one recording -------------------------------------------------

REC_SAMPLES=${REC_SAMPLES:-800}
start_service rec svc-otlp
load rec 60
sleep 2
# -v: a progress line a second, whose received= counts the samples of -p's process
"$SPANPROF" record -v -p "$SVC_PID" -d 45 -o "$TMP/cpu.pb.gz" -o "$TMP/cpu.otlp.pb" -o "$TMP/cpu.otlp.pb.gz" \
	> "$TMP/cpu.txt" 2> "$TMP/cpu.progress" &
REC_PID=$!
register "$REC_PID"
enough() { [ "$(sed -n 's/.* received=\([0-9]*\) .*/\1/p' "$TMP/cpu.progress" | tail -1)" -ge "$REC_SAMPLES" ] 2> /dev/null; }
poll 40 enough || note "record: fewer than $REC_SAMPLES samples in 40 s"
kill -INT "$REC_PID" 2> /dev/null || true
rc=0
wait "$REC_PID" || rc=$?
[ "$rc" = 0 ] || { cat "$TMP/cpu.txt" "$TMP/cpu.progress"; fail "spanprof record: exit code $rc"; }
note "record: $(sed -n 's/^spanprof: \([0-9.]*s\) .* received=\([0-9]*\) .*/\1, \2 samples/p' "$TMP/cpu.progress" | tail -1)"
stop "$LOAD_PID"
stop_service rec
grep -q 'wrote .*cpu.otlp.pb (OTLP profiles)' "$TMP/cpu.txt" || { cat "$TMP/cpu.txt"; fail "record did not write the OTLP file"; }
decode "$TMP/cpu.pb.gz"
node "$RECEIVER" --decode "$TMP/cpu.otlp.pb" > "$TMP/cpu.otlp.json" || fail "the OTLP file does not decode"
node "$RECEIVER" --decode "$TMP/cpu.otlp.pb.gz" > "$TMP/cpu.otlp.gz.json" || fail "the gzip OTLP file does not decode"

node - "$TMP/cpu.json" "$TMP/cpu.otlp.json" "$TMP/cpu.otlp.gz.json" > "$TMP/cmp.txt" << 'EOF' || fail "$(cat "$TMP/cmp.txt")"
const fs = require('fs');
const [pf, of, ogf] = process.argv.slice(2).map((f) => JSON.parse(fs.readFileSync(f, 'utf8')));
const attrName = { pid: 'process.pid', tid: 'thread.id', thread_name: 'thread.name',
  process_name: 'process.executable.name' };
if (of.resources.length !== 1 || of.resources[0].profiles.length !== 1)
  throw new Error(`${of.resources.length} resources: want one profile`);
const op = of.resources[0].profiles[0];
if (op.sampleType !== 'samples/count' || op.periodType !== 'cpu/nanoseconds' || op.period !== pf.period)
  throw new Error(`types ${op.sampleType} ${op.periodType} ${op.period} (pprof period ${pf.period})`);
if (op.timeUnixNano !== String(pf.timeNanos) || op.durationNano !== String(pf.durationNanos))
  throw new Error(`times ${op.timeUnixNano}+${op.durationNano} != pprof ${pf.timeNanos}+${pf.durationNanos}`);
// Every pprof sample is one OTLP sample: the same stack, value, labels (as attributes or link).
const key = (stack, attrs) => stack + '\u0000' + Object.keys(attrs).sort().map((k) => `${k}=${attrs[k]}`).join('\u0001');
const want = new Map(), got = new Map();
const add = (m, k, v) => m.set(k, (m.get(k) || 0) + v);
for (const s of pf.samples) {
  const a = {};
  // service_name is the whole recording's: OTLP has it once, as the resource's service.name
  if (s.labels.service_name !== 'svc-otlp')
    throw new Error(`pprof sample with service_name ${s.labels.service_name}`);
  for (const [k, v] of Object.entries(s.labels))
    if (k !== 'service_name') a[k === 'trace_id' || k === 'span_id' ? `link.${k}` : attrName[k] || k] = String(v);
  add(want, key(s.stack.join(';'), a), Number(s.values[0]));
}
for (const s of op.stacks) {
  const a = {};
  for (const [k, v] of Object.entries(s.attributes)) a[k] = String(v);
  if (s.trace_id) a['link.trace_id'] = s.trace_id;
  if (s.span_id) a['link.span_id'] = s.span_id;
  add(got, key(s.stack, a), s.value);
}
let diff = 0, example = '';
for (const [k, v] of want) if (got.get(k) !== v) { diff++; example = example || `${k.replace(/\u0000|\u0001/g, ' | ')}: pprof ${v}, otlp ${got.get(k)}`; }
for (const [k, v] of got) if (!want.has(k)) { diff++; example = example || `${k.replace(/\u0000|\u0001/g, ' | ')}: only in otlp (${v})`; }
if (diff) throw new Error(`${diff} samples differ, e.g. ${example}`);
const total = pf.totals[0];
if (op.total !== total || pf.samples.length !== op.samples)
  throw new Error(`otlp ${op.samples} samples/${op.total} != pprof ${pf.samples.length}/${total}`);
const spanTotal = pf.samples.filter((s) => s.labels.span_id).reduce((a, s) => a + Number(s.values[0]), 0);
if (op.linked !== spanTotal || !spanTotal)
  throw new Error(`linked ${op.linked}, pprof samples with span_id ${spanTotal}`);
const gp = ogf.resources[0].profiles[0];
if (gp.total !== total || gp.samples !== op.samples || ogf.rawBytes !== of.rawBytes)
  throw new Error('the gzip file says otherwise');
if (!(op.frameTypes.dotnet > 0 && op.frameTypes.native > 0))
  throw new Error(`frame types ${JSON.stringify(op.frameTypes)}`);
// the service as the agent names it (the app's OTEL_SERVICE_NAME, or its OTel process context)
if (of.resources[0].attributes['service.name'] !== 'svc-otlp')
  throw new Error(`service.name ${of.resources[0].attributes['service.name']}, want svc-otlp`);
console.log(JSON.stringify({ samples: op.samples, total, linked: op.linked, spans: Object.keys(op.spans).length,
  traces: Object.keys(op.traces).length, frameTypes: op.frameTypes, dictionary: of.dictionary,
  resource: of.resources[0].attributes }));
EOF
note "$(cat "$TMP/cmp.txt")"
pass "record: OTLP = pprof of the same recording (totals, every stack with its labels, span links)"

to_pprof_json "$TMP/cpu.otlp.json" "" "$TMP/cpu.otlp.as-pprof.json"
check_spans rec "$TMP/cpu.otlp.as-pprof.json" "$SVC_PID"
pass "record: OTLP span links right against the spans the service exported"

PPROF_GZ=$(stat -c %s "$TMP/cpu.pb.gz")
PPROF_RAW=$(gzip -dc "$TMP/cpu.pb.gz" | wc -c)
OTLP_RAW=$(stat -c %s "$TMP/cpu.otlp.pb")
OTLP_GZ=$(stat -c %s "$TMP/cpu.otlp.pb.gz")
note "payload: pprof $PPROF_RAW bytes ($PPROF_GZ gzip), OTLP $OTLP_RAW bytes ($OTLP_GZ gzip):" \
	"OTLP/pprof $(awk -v a="$OTLP_RAW" -v b="$PPROF_RAW" 'BEGIN { printf "%.2f", a / b }') raw," \
	"$(awk -v a="$OTLP_GZ" -v b="$PPROF_GZ" 'BEGIN { printf "%.2f", a / b }') gzip"

# ---- 2. the agent to an OTLP/HTTP receiver ------------------------------------------------------

start_service agent svc-otlp-agent
AGENT_SVC_PID=$SVC_PID
start_receiver main
run_agent agent 8 --otlp-url "http://127.0.0.1:$RX_PORT" --queue-mb 64
grep -q "otlp: POST http://127.0.0.1:$RX_PORT/v1development/profiles (gzip" "$TMP/agent.agent" ||
	fail "the agent did not say where OTLP goes: $(grep otlp "$TMP/agent.agent")"

node - "$TMP/main.rx.jsonl" "$TMP/agent.agent" svc-otlp-agent > "$TMP/agent.summary" << 'EOF' || fail "$(cat "$TMP/agent.summary")"
const fs = require('fs');
const [rxFile, agentFile, service] = process.argv.slice(2);
const lines = fs.readFileSync(rxFile, 'utf8').split('\n').filter(Boolean).map(JSON.parse);
const log = fs.readFileSync(agentFile, 'utf8');
const windows = [...log.matchAll(/window \d+: (\d+) samples, (\d+) series/g)].map((m) => [+m[1], +m[2]]);
const stopped = log.match(/agent stopped: (\d+) windows, (\d+) samples exported/);
const st = log.match(/otlp: (\d+) sent, (\d+) retried, (\d+) failed, dropped (\d+) \(queue full\) (\d+) \(shutdown\) (\d+) \(expired\)/);
if (!stopped || !st) throw new Error('no "agent stopped" or otlp stats line');
const bad = lines.filter((l) => l.answered !== 200 || l.error);
if (bad.length) throw new Error(`requests not accepted: ${JSON.stringify(bad[0]).slice(0, 400)}`);
const withSeries = windows.filter((w) => w[1] > 0).length;
if (lines.length !== withSeries || +st[1] !== lines.length)
  throw new Error(`${lines.length} requests, ${st[1]} sent, for ${withSeries} windows with samples`);
if (lines.some((l) => l.path !== '/v1development/profiles' || l.headers['content-encoding'] !== 'gzip' ||
  l.headers['content-type'] !== 'application/x-protobuf'))
  throw new Error(`path or headers: ${JSON.stringify(lines[0].headers)}`);
let total = 0, svcTotal = 0, linked = 0, spans = new Set(), resource = null, wins = 0, nres = 0;
const series = new Set();
for (const l of lines) {
  let seen = false;
  for (const r of l.resources) {
    nres++;
    const key = JSON.stringify(r.attributes);
    if (series.has(`${lines.indexOf(l)} ${key}`)) throw new Error(`two resources ${key} in one request`);
    series.add(`${lines.indexOf(l)} ${key}`);
    if (r.scope.name !== 'spanprof') throw new Error(`scope ${JSON.stringify(r.scope)}`);
    for (const p of r.profiles) {
      total += p.total;
      if (r.attributes['service.name'] !== service) continue;
      seen = true;
      resource = r.attributes;
      svcTotal += p.total;
      linked += p.linked;
      Object.keys(p.spans).forEach((s) => spans.add(s));
      if (Object.keys(p.traces).length) throw new Error('trace ids in Pyroscope convention');
      if (p.durationNano === '0' || p.timeUnixNano === '0') throw new Error('no profile times');
    }
  }
  wins += seen;
}
if (total !== +stopped[2]) throw new Error(`receiver saw ${total} samples, agent exported ${stopped[2]}`);
if (!resource) throw new Error(`no resource with service.name ${service}`);
if (Object.keys(resource).some((k) => !['service.name'].includes(k)))
  throw new Error(`resource attributes ${JSON.stringify(resource)} (outside Kubernetes: service.name only)`);
if (!linked || !spans.size) throw new Error('no span links');
console.log(JSON.stringify({ requests: lines.length, windows: windows.length, resources: nres, exported: +stopped[2],
  service: { windows: wins, total: svcTotal, linked, spans: spans.size, resource } }));
EOF
note "$(cat "$TMP/agent.summary")"
pass "agent: every window with samples arrived gzip'd and decoded; totals = exported; resource service.name"
stop_service agent
to_pprof_json "$TMP/main.rx.jsonl" svc-otlp-agent "$TMP/agent.as-pprof.json"
check_spans agent "$TMP/agent.as-pprof.json" "$AGENT_SVC_PID" --pyroscope
pass "agent: span links (local root, Pyroscope's convention) right against the exported spans"

# ---- 3. settings from the environment only, full span ids ---------------------------------------

start_service env svc-otlp-env
start_receiver envrx
OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$RX_PORT/base/" OTEL_EXPORTER_OTLP_HEADERS='x-test=a%20b,x-other=1' \
	OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION=none OTEL_EXPORTER_OTLP_TIMEOUT=5000 \
	run_agent env 4 --otlp --full-span-labels --otlp-header 'X-Other: from-flag'
stop_service env
node - "$TMP/envrx.rx.jsonl" svc-otlp-env > "$TMP/env.summary" << 'EOF' || fail "$(cat "$TMP/env.summary")"
const fs = require('fs');
const [rxFile, service] = process.argv.slice(2);
const lines = fs.readFileSync(rxFile, 'utf8').split('\n').filter(Boolean).map(JSON.parse);
if (!lines.length) throw new Error('nothing arrived');
for (const l of lines) {
  if (l.error || l.answered !== 200) throw new Error(l.error || `answered ${l.answered}`);
  if (l.path !== '/base/v1development/profiles') throw new Error(`path ${l.path}`);
  if (l.headers['content-encoding']) throw new Error('compressed despite COMPRESSION=none');
  if (l.headers['x-test'] !== 'a b' || l.headers['x-other'] !== 'from-flag')
    throw new Error(`headers ${JSON.stringify(l.headers)}`);
}
let traces = 0, spans = 0;
for (const l of lines) for (const r of l.resources) for (const p of r.profiles)
  if (r.attributes['service.name'] === service) { traces += Object.keys(p.traces).length; spans += Object.keys(p.spans).length; }
if (!traces || !spans) throw new Error(`links: ${traces} traces, ${spans} spans`);
console.log(JSON.stringify({ requests: lines.length, traces, spans }));
EOF
note "$(cat "$TMP/env.summary")"
pass "agent from OTEL_EXPORTER_OTLP_* (endpoint path, headers, no compression; flag header wins); trace+span links"
