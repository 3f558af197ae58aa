#!/usr/bin/env bash
# agent.sh: `spanprof agent` end to end on the real kernel with real .NET services, pushing to a
# local Pyroscope receiver that decodes every request from the published .proto files:
#   1. two SpanService instances (named svc-before, started before the agent, and
#      svc-after, started after it in its own pid+mount namespace, in a cgroup of the kubepods
#      form with a matching pods tree): one series each with the right labels; span labels right;
#      every window arrives; samples add up to what the sampler sent less the counted losses; a
#      native busy process is left out; /metrics passes promtool and a real Prometheus scrapes it.
#   2. --all-processes: the native process gets its own series.
#   3. the receiver answers 503 for 20 s: what was queued arrives afterwards, what did not fit is
#      counted as dropped, every window is accounted for; RSS after 10 windows vs after 2.
#   4. the receiver answers garbage, then hangs: the agent stays up and healthy, and SIGTERM still
#      ends it in bounded time.
. "$(dirname "$0")/lib.sh"
need_root
command -v dotnet > /dev/null || skip "no dotnet"

RECEIVER=$TOOLS/pyroscope-receiver.js
need_built "$SVC" "$LOADGEN" "$HOOK" "$HOTCHAIN" "$SPANPROF"
[ -f "$TOOLS/node_modules/protobufjs/package.json" ] ||
	(cd "$TOOLS" && npm ci --no-audit --no-fund --silent) || fail "npm ci in $TOOLS failed"

# ---- helpers ------------------------------------------------------------------------------------

# start_receiver NAME [receiver args]: sets RX_PORT; JSON lines in $TMP/NAME.rx.jsonl.
start_receiver() {
	local name=$1
	shift
	node "$RECEIVER" --port 0 --ready "$TMP/$name.rx.ready" --out "$TMP/$name.rx.jsonl" "$@" \
		> "$TMP/$name.rx.log" 2>&1 &
	PIDS_TO_KILL+=($!)
	for _ in $(seq 100); do [ -s "$TMP/$name.rx.ready" ] && break; sleep 0.1; done
	[ -s "$TMP/$name.rx.ready" ] || { cat "$TMP/$name.rx.log"; fail "$name: receiver did not start"; }
	RX_PORT=$(cat "$TMP/$name.rx.ready")
}

rx_control() { curl -s -X POST -H 'Content-Type: application/json' -d "$2" "http://127.0.0.1:$1/control" > /dev/null; }

# start_agent NAME ARGS...: sets AGENT_PID and METRICS_PORT; stderr in $TMP/NAME.agent.
start_agent() {
	local name=$1
	shift
	"$SPANPROF" agent --metrics-addr 127.0.0.1:0 -v "$@" > "$TMP/$name.agent" 2>&1 &
	AGENT_PID=$!
	PIDS_TO_KILL+=($AGENT_PID)
	wait_for_line "$TMP/$name.agent" 'metrics on port' 30
	METRICS_PORT=$(sed -n 's/.*metrics on port \([0-9]*\).*/\1/p' "$TMP/$name.agent" | head -1)
}

# stop_agent NAME [max seconds]: SIGTERM; it must exit 0 within the bound.
stop_agent() {
	local name=$1 max=${2:-15} start=$SECONDS
	kill -TERM "$AGENT_PID"
	for _ in $(seq $((max * 10))); do kill -0 "$AGENT_PID" 2> /dev/null || break; sleep 0.1; done
	kill -0 "$AGENT_PID" 2> /dev/null && { cat "$TMP/$name.agent"; fail "$name: agent still running ${max}s after SIGTERM"; }
	wait "$AGENT_PID" || { cat "$TMP/$name.agent"; fail "$name: agent exited non-zero"; }
	note "$name: agent stopped $((SECONDS - start))s after SIGTERM"
	grep 'agent stopped' "$TMP/$name.agent" | sed 's/^/  /'
}

metric() {	# metric NAME_REGEX: the value of the first matching sample on /metrics
	{ curl -s "http://127.0.0.1:$METRICS_PORT/metrics" || true; } |
		awk -v re="^$1( |\\\\{)" '$0 ~ re { print $NF; exit }'
}
# windows_ge N: the agent has built at least N windows (an event to wait for, not a sleep).
windows_ge() { local w; w=$(metric spanprof_windows_total); [ -n "$w" ] && [ "$w" -ge "$1" ]; }

# start_service NAME SERVICE [ns]: SpanService with the hook; sets SVC_PID (host pid), SVC_PORT.
start_service() {
	local name=$1 service=$2 ns=${3:-}
	# The app names itself in code (the SDK's resource, published in its OTEL_CTX); the
	# environment says otherwise: the agent must take the process context's name.
	local env=(SPANSERVICE_SERVICE_NAME="$service" OTEL_SERVICE_NAME="env-$service"
		SPANSERVICE_SPANS="$TMP/$name.spans.jsonl"
		SPANSERVICE_READY="$TMP/$name.ready" DOTNET_STARTUP_HOOKS="$HOOK")
	if [ -n "$ns" ]; then
		env "${env[@]}" NSRUN_SETUP="echo \$\$ > $CGROUP/cgroup.procs" \
			"$ROOT/tests/integration/nsrun.sh" dotnet "$SVC" --port 0 > "$TMP/$name.svc" 2>&1 &
	else
		env "${env[@]}" dotnet "$SVC" --port 0 > "$TMP/$name.svc" 2>&1 &
	fi
	local launcher=$!
	PIDS_TO_KILL+=($launcher)
	for _ in $(seq 600); do [ -s "$TMP/$name.ready" ] && break; sleep 0.1; done
	[ -s "$TMP/$name.ready" ] || { cat "$TMP/$name.svc"; fail "$name: service did not start"; }
	SVC_PORT=$(node -pe "JSON.parse(require('fs').readFileSync('$TMP/$name.ready')).port")
	SVC_PID=$launcher
	if [ -n "$ns" ]; then
		SVC_PID=$(pgrep -P "$launcher" | head -1)
		PIDS_TO_KILL+=($SVC_PID)
	fi
}

# A cgroup of the kubepods form (systemd driver, containerd) in the cgroup v2 hierarchy, or the
# cgroupfs form in a v1 hierarchy; the kubelet's log tree for it under $TMP/pods.
POD_UID=5f0c2a7e-1b3d-4e8f-9a6b-7c8d9e0f1a2b
CID=$(printf 'spanprof-agent-test' | sha256sum | cut -c1-64)
CGROOT=$(cgroup_v2_root)
if [ -n "$CGROOT" ]; then
	CGBASE=$CGROOT/kubepods.slice
	CGROUP=$CGBASE/kubepods-burstable.slice/kubepods-burstable-pod${POD_UID//-/_}.slice/cri-containerd-$CID.scope
else
	CGBASE=/sys/fs/cgroup/pids/kubepods
	CGROUP=$CGBASE/burstable/pod$POD_UID/$CID
fi
mkdir -p "$CGROUP" || skip "cannot create a cgroup"
remove_cgroup() {
	# Move anything left back to the root, then remove the directories deepest first.
	local root=${CGROOT:-/sys/fs/cgroup/pids}
	for p in $(cat "$CGROUP/cgroup.procs" 2> /dev/null); do echo "$p" > "$root/cgroup.procs" 2> /dev/null || true; done
	find "$CGBASE" -depth -type d -exec rmdir {} \; 2> /dev/null || true
}
at_exit remove_cgroup
PODS=$TMP/pods
mkdir -p "$PODS/shop_checkout-7d9f8_$POD_UID/api" "$TMP/containers"
: > "$PODS/shop_checkout-7d9f8_$POD_UID/api/0.log"

# ---- 1. two services, before and after the agent --------------------------------------------

start_receiver main
start_service before svc-before
BEFORE_PID=$SVC_PID BEFORE_PORT=$SVC_PORT
start_agent main -F 99 --interval 3 --pyroscope-url "http://127.0.0.1:$RX_PORT" \
	--output-dir "$TMP/main.out" --pods-dir "$PODS" --containers-dir "$TMP/containers" --node test-node
start_service after svc-after ns
AFTER_PID=$SVC_PID AFTER_PORT=$SVC_PORT
grep -q "kubepods" "/proc/$AFTER_PID/cgroup" || fail "svc-after is not in the kubepods cgroup"
"$HOTCHAIN" 30 > /dev/null &
NATIVE_PID=$!
PIDS_TO_KILL+=($NATIVE_PID)
PATHS='/work/a,/work/b,/work/labels?tenant=acme'
dotnet "$LOADGEN" --url "http://127.0.0.1:$BEFORE_PORT" --concurrency 100 --duration 10 --paths "$PATHS" > "$TMP/load1" 2>&1 &
L1=$!
dotnet "$LOADGEN" --url "http://127.0.0.1:$AFTER_PORT" --concurrency 100 --duration 10 --paths "$PATHS" > "$TMP/load2" 2>&1 &
L2=$!
wait $L1 $L2 || fail "load generator failed"
# thread ids of svc-after, host -> its namespace (its span file holds the namespace's)
for t in /proc/$AFTER_PID/task/*; do
	echo "$(basename "$t") $(awk '/^NSpid:/ { print $NF }' "$t/status")"
done > "$TMP/after.tidmap"

curl -s "http://127.0.0.1:$METRICS_PORT/metrics" > "$TMP/metrics.txt"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$METRICS_PORT/healthz")" = 200 ] || fail "/healthz not 200"
promtool check metrics < "$TMP/metrics.txt" || fail "promtool rejects /metrics"
pass "/metrics passes promtool check metrics ($(grep -vc '^#' "$TMP/metrics.txt") samples)"
# Metrics by convention: histograms of window build time and push latency (their +Inf bucket is
# their count), the build info, the standard process_* metrics, no series that is the sum of its
# siblings.
sample() { awk -v k="$1" '$1 == k { print $2; found = 1; exit } END { if (!found) print -1 }' "$TMP/metrics.txt"; }
for h in 'spanprof_window_build_seconds' 'spanprof_export_latency_seconds{exporter="pyroscope"}'; do
	base=${h%%\{*} labels=${h#"$base"}
	count=$(sample "${base}_count$labels")
	if [ -n "$labels" ]; then inf=$(sample "${base}_bucket${labels%\}},le=\"+Inf\"}")
	else inf=$(sample "${base}_bucket{le=\"+Inf\"}"); fi
	[ "$count" -ge 1 ] && [ "$inf" = "$count" ] && grep -q "^# TYPE $base histogram$" "$TMP/metrics.txt" ||
		{ grep "^$base" "$TMP/metrics.txt"; fail "$h: not a histogram with observations (count $count, +Inf $inf)"; }
done
grep -Eq '^spanprof_build_info\{version="[^"]+".*\} 1$' "$TMP/metrics.txt" || fail "no spanprof_build_info{version} 1"
for m in process_cpu_seconds_total process_resident_memory_bytes process_start_time_seconds process_open_fds; do
	awk -v m="$m" '$1 == m && $2 > 0 { ok = 1 } END { exit !ok }' "$TMP/metrics.txt" || fail "no $m > 0 on /metrics"
done
! grep -Eq '="(all|total|max)"' "$TMP/metrics.txt" || { grep -E '="(all|total|max)"' "$TMP/metrics.txt"; fail "a series sums its siblings"; }
pass "/metrics: window build and push latency histograms, spanprof_build_info, process_* metrics, no total among parts"
# Memory by structure, held against the heap: the frames and mappings of the processes sampled
# are there, and the heap in use holds at least them.
mem() { awk -v re="^spanprof_$1\\{$2=\"$3\"\\}" '$0 ~ re { print $NF; exit }' "$TMP/metrics.txt"; }
FRAMES=$(mem memory_bytes structure frames) MAPS=$(mem memory_bytes structure process_maps)
KSYMS=$(mem memory_bytes structure kernel_symbols) HEAP=$(mem heap_bytes state in_use)
{ ! le "${FRAMES:-0}" 0 && ! le "${MAPS:-0}" 0 && ! le "${KSYMS:-0}" 0 &&
	le "$((FRAMES + MAPS + KSYMS))" "${HEAP:-0}"; } ||
	fail "memory by structure: frames ${FRAMES:-none}, process_maps ${MAPS:-none}, kernel_symbols ${KSYMS:-none}, heap in use ${HEAP:-none}"
pass "memory by structure: frames $((FRAMES / 1024)) KiB, process mappings $((MAPS / 1024)) KiB, kernel symbols $((KSYMS / 1024)) KiB, heap in use $((HEAP / 1024)) KiB"

# A real Prometheus server scrapes the agent on loopback.
PROM_PORT=$((20000 + RANDOM % 20000))
cat > "$TMP/prom.yml" << EOF
global: { scrape_interval: 1s }
scrape_configs: [ { job_name: spanprof, static_configs: [ { targets: ['127.0.0.1:$METRICS_PORT'] } ] } ]
EOF
prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/prom" \
	--web.listen-address="127.0.0.1:$PROM_PORT" > "$TMP/prom.log" 2>&1 &
PIDS_TO_KILL+=($!)
up=
for _ in $(seq 100); do
	up=$(curl -s "http://127.0.0.1:$PROM_PORT/api/v1/query?query=spanprof_windows_total" |
		node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{const r=JSON.parse(s).data.result;console.log(r.length?r[0].value[1]:"")}catch(e){}})' || true)
	[ -n "$up" ] && break
	sleep 0.2
done
[ -n "$up" ] || { tail -5 "$TMP/prom.log"; fail "Prometheus did not scrape the agent"; }
pass "Prometheus scraped spanprof_windows_total=$up"

stop_agent main
kill -TERM "$NATIVE_PID" 2> /dev/null || true
for pid in $BEFORE_PID $AFTER_PID; do kill -TERM "$pid"; done
for _ in $(seq 300); do kill -0 "$BEFORE_PID" 2> /dev/null || kill -0 "$AFTER_PID" 2> /dev/null || break; sleep 0.1; done

# Every window with samples arrived, each answered 200, and the totals add up.
node - "$TMP/main.rx.jsonl" "$TMP/main.agent" "$BEFORE_PID" "$AFTER_PID" > "$TMP/main.summary" << 'EOF' || fail "$(cat "$TMP/main.summary")"
const fs = require('fs');
const [rxFile, agentFile] = process.argv.slice(2);
const lines = fs.readFileSync(rxFile, 'utf8').split('\n').filter(Boolean).map(JSON.parse);
const log = fs.readFileSync(agentFile, 'utf8');
const windows = [...log.matchAll(/window \d+: (\d+) samples, (\d+) series/g)].map(m => [+m[1], +m[2]]);
const stopped = log.match(/agent stopped: (\d+) windows, (\d+) samples exported; sampler sent (\d+), lost (\d+) \(ring buffer full\) (\d+) \(scratch\); received (\d+), not profiled (\d+), malformed (\d+), out of memory (\d+), unencodable (\d+), left out (\d+)/);
if (!stopped) throw new Error('no "agent stopped" line');
const [, nwin, exported, sent, lostRb, lostScratch, received, notTarget, malformed, nomem, unenc, leftOut] = stopped.map(Number);
const bad = lines.filter(l => l.answered !== 200 || l.error);
if (bad.length) throw new Error(`requests not accepted: ${JSON.stringify(bad[0]).slice(0, 400)}`);
const withSeries = windows.filter(w => w[1] > 0).length;
if (lines.length !== withSeries) throw new Error(`${lines.length} pushes for ${withSeries} windows with samples`);
let total = 0;
const series = {};
// A service's series before its process context was read (or published with the SDK's name:
// the hook first publishes the environment's) is named from the environment; once the context
// names it, its series never goes back (docs/agent.md). envAfter counts windows that did.
let envAfter = 0;
for (const l of lines)
  for (const s of l.series) {
    const key = s.labels.service_name;
    (series[key] = series[key] || { labels: s.labels, total: 0, windows: 0 }).windows++;
    for (const p of s.profiles) { total += p.total; series[key].total += p.total; }
    if (key.startsWith('env-') && series[key.slice(4)]) envAfter++;
  }
if (total !== exported) throw new Error(`receiver saw ${total} samples, agent exported ${exported}`);
if (received !== sent) throw new Error(`sampler sent ${sent}, agent received ${received}`);
if (exported !== received - notTarget - malformed - nomem - unenc - leftOut)
  throw new Error(`exported ${exported} != received ${received} - not profiled ${notTarget} - losses`);
console.log(JSON.stringify({ pushes: lines.length, windows: nwin, exported, sent, lostRb, notTarget, envAfter, series }));
EOF
note "$(cat "$TMP/main.summary")"
pass "every window arrived; receiver total = exported = sampler sent - not profiled - losses"

summary() { node -pe "const r=JSON.parse(require('fs').readFileSync('$TMP/main.summary'));$1"; }
[ "$(summary 'JSON.stringify(r.series["svc-before"] && r.series["svc-before"].labels)')" = '{"__name__":"process_cpu","service_name":"svc-before"}' ] ||
	fail "svc-before series labels: $(summary 'JSON.stringify(r.series["svc-before"])')"
[ "$(summary 'const l=(r.series["svc-after"]||{}).labels||{};[l.namespace,l.pod,l.container,l.node].join(" ")')" = "shop checkout-7d9f8 api test-node" ] ||
	fail "svc-after series labels: $(summary 'JSON.stringify(r.series["svc-after"])')"
[ "$(summary 'Object.keys(r.series).filter(k=>/hotchain/.test(k)).length')" = 0 ] || fail "the native process has a series without --all-processes"
[ "$(summary 'Object.values(r.series).filter(s=>s.labels.pid||s.labels.tid).length')" = 0 ] || fail "pid or tid as a series label"
[ "$(summary 'r.envAfter')" = 0 ] && [ -n "$(summary 'r.series["svc-before"] && r.series["svc-after"] && 1 || ""')" ] ||
	fail "a series named from OTEL_SERVICE_NAME after the process context named the service"
[ "$(summary 'Object.keys(r.series).filter(k=>/^env-/.test(k)).length')" = 0 ] ||
	note "series named from the environment before the process context named the service: $(summary 'JSON.stringify(Object.keys(r.series).filter(k=>/^env-/.test(k)).map(k=>[k,r.series[k].windows,r.series[k].total]))')"
pass "one series per service with its labels (service.name from the OTEL_CTX process context over the environment); the native process left out"

# Span labels: each service's window profiles (the same profiles were pushed and written to
# --output-dir; their totals must agree with what the receiver decoded), merged over windows,
# checked against the spans the service exported (the checker of spans.sh, Pyroscope's convention).
merge_service() {	# merge_service SERVICE OUT.json
	for f in "$TMP/main.out/$1"/*.pb.gz; do pprof_json "$f"; done |
		node -e 'const lines=require("fs").readFileSync(0,"utf8").split("\n").filter(Boolean).map(JSON.parse);
		const out=lines[0]; for (const p of lines.slice(1)) out.samples.push(...p.samples);
		out.totals=[out.samples.reduce((a,s)=>a+s.values[0],0)]; console.log(JSON.stringify(out));' > "$2"
	[ "$(node -pe "JSON.parse(require('fs').readFileSync('$2')).totals[0]")" = "$(summary "r.series['$1'].total")" ] ||
		fail "$1: --output-dir total differs from what the receiver decoded"
}
check_service() {	# check_service NAME SERVICE PID [spancheck args]
	local name=$1 service=$2 pid=$3 r
	shift 3
	merge_service "$service" "$TMP/$name.merged.json"
	node "$ROOT/tests/integration/spancheck.js" "$TMP/$name.merged.json" "$TMP/$name.spans.jsonl" \
		--pid "$pid" --pyroscope "$@" > "$TMP/$name.check"
	r=$(cat "$TMP/$name.check")
	note "$name: $(node -pe "const r=($r); delete r.wrong_examples; JSON.stringify(r)")"
	field() { node -pe "($1).$2"; }
	[ "$(field "$r" samples_in_span_methods)" -ge 50 ] || fail "$name: only $(field "$r" samples_in_span_methods) samples in span-only methods"
	ge "$(field "$r" right_rate)" 0.95 || fail "$name: right span on $(field "$r" right_rate) of span-only samples"
	le "$(field "$r" wrong_rate)" 0.01 || fail "$name: wrong span on $(field "$r" wrong_rate)"
	[ "$(field "$r" nospan_with_span)" = 0 ] || fail "$name: samples outside any span carry a span"
}
check_service before svc-before "$BEFORE_PID"
check_service after svc-after "$AFTER_PID" --tidmap "$TMP/after.tidmap"
pass "span labels right in both services' pushed profiles"

# ---- 2. --all-processes ---------------------------------------------------------------------

"$HOTCHAIN" 30 > /dev/null &
NATIVE_PID=$!
PIDS_TO_KILL+=($NATIVE_PID)
start_receiver all
start_agent all --all-processes --interval 1 --pyroscope-url "http://127.0.0.1:$RX_PORT"
hotchain_series() { grep -q '"service_name":"hotchain"' "$TMP/all.rx.jsonl" 2> /dev/null; }
wait_for 30 "--all-processes: a hotchain series at the receiver" hotchain_series
stop_agent all
kill -TERM "$NATIVE_PID" 2> /dev/null || true
grep -q '"service_name":"hotchain"' "$TMP/all.rx.jsonl" || fail "--all-processes: no hotchain series"
pass "--all-processes: the native process has its series"

# ---- 2b. a process idle for two windows: its frames and mappings freed, named again after ----

start_receiver idle --stacks
start_agent idle --all-processes --interval 1 --pyroscope-url "http://127.0.0.1:$RX_PORT"
"$HOTCHAIN" 2 5 2 > /dev/null &
IDLE_PID=$!
PIDS_TO_KILL+=($IDLE_PID)
wait_exit 30 "$IDLE_PID" "hotchain 2 5 2 (runs 9 s)"
w=$(metric spanprof_windows_total)
wait_for 15 "the window after the idle process exited" windows_ge $((w + 2))	# its last window, built
curl -s "http://127.0.0.1:$METRICS_PORT/metrics" > "$TMP/idle.metrics"
stop_agent idle
RELEASED=$(awk '/^spanprof_processes_idle_released_total / { print $NF }' "$TMP/idle.metrics")
! le "${RELEASED:-0}" 0 || fail "idle process: nothing released (processes_idle_released_total ${RELEASED:-none})"
# Pushes with hotchain's inner_hot <- outer stack: some before the pause, some after it.
node - "$TMP/idle.rx.jsonl" > "$TMP/idle.summary" << 'EOF' || fail "idle process: $(cat "$TMP/idle.summary")"
const lines = require('fs').readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean).map(JSON.parse);
const hot = lines.filter(l => (l.series || []).some(s => /hotchain/.test(s.labels.service_name) &&
  s.profiles.some(p => (p.stacks || []).some(st => /outer;inner_hot$/.test(st.stack))))).map(l => l.t);
let gap = 0;
for (let i = 1; i < hot.length; i++) gap = Math.max(gap, hot[i] - hot[i - 1]);
console.log(JSON.stringify({ pushes: lines.length, with_hot_stack: hot.length, longest_gap_ms: gap }));
if (gap < 3000) throw new Error('no named hot stack on both sides of the 5 s pause');
EOF
pass "idle process: freed $RELEASED time(s) while idle, named again after ($(cat "$TMP/idle.summary"))"

# ---- 3. an outage: 503 for 20 s -------------------------------------------------------------

"$HOTCHAIN" 120 > /dev/null &
NATIVE_PID=$!
PIDS_TO_KILL+=($NATIVE_PID)
start_receiver outage --status 503 --for-ms 20000
start_agent outage --all-processes --interval 1 --queue-mb 0.01 --flush-timeout 5 \
	--pyroscope-url "http://127.0.0.1:$RX_PORT"
rss_at() {	# rss_at WINDOWS: the agent's RSS (bytes) once it has built that many windows
	for _ in $(seq 300); do
		[ "$(metric spanprof_windows_total)" -ge "$1" ] 2> /dev/null && break
		sleep 0.1
	done
	metric process_resident_memory_bytes
}
RSS2=$(rss_at 2)
RSS10=$(rss_at 10)
RSS20=$(rss_at 20)
RSS30=$(rss_at 30)
note "agent RSS after 2 windows $((RSS2 / 1024)) KiB, after 10 $((RSS10 / 1024)) KiB, after 20 $((RSS20 / 1024)) KiB, after 30 $((RSS30 / 1024)) KiB"
# A window must not cost memory. A process sampled for the first time does, once (its symbol
# tables: the receiver's node binary alone is tens of MiB, whenever it is first sampled), so at
# most 64 MiB of such warm-up over the run, and no growth of more than 10 % + 2 MiB in both of
# the two later ten-window spans: a leak grows in every span, a first sample in one.
le "$RSS30" "$((RSS2 + 64 * 1048576))" || fail "RSS grew from $RSS2 to $RSS30 over 28 windows"
grew() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(b > a * 1.10 + 2097152) }'; }
! { grew "$RSS10" "$RSS20" && grew "$RSS20" "$RSS30"; } ||
	fail "RSS grew in every span: $RSS10 -> $RSS20 -> $RSS30 bytes at windows 10, 20, 30"
# The outage ends at 20 s; the retry backoff (at most 30 s) brings what was queued.
for _ in $(seq 600); do grep -q '"answered":200' "$TMP/outage.rx.jsonl" 2> /dev/null && break; sleep 0.1; done
sleep 3
stop_agent outage
kill -TERM "$NATIVE_PID" 2> /dev/null || true
node - "$TMP/outage.rx.jsonl" "$TMP/outage.agent" > "$TMP/outage.summary" << 'EOF' || fail "$(cat "$TMP/outage.summary")"
const fs = require('fs');
const [rxFile, agentFile] = process.argv.slice(2);
const lines = fs.readFileSync(rxFile, 'utf8').split('\n').filter(Boolean).map(JSON.parse);
const log = fs.readFileSync(agentFile, 'utf8');
const withSeries = [...log.matchAll(/window \d+: \d+ samples, (\d+) series/g)].filter(m => +m[1] > 0).length;
const st = log.match(/pyroscope: (\d+) sent, (\d+) retried, (\d+) failed, dropped (\d+) \(queue full\) (\d+) \(shutdown\) (\d+) \(expired\)/);
if (!st) throw new Error('no pyroscope stats line');
const [, sent, retried, failed, full, shutdown, expired] = st.map(Number);
const n503 = lines.filter(l => l.answered === 503).length, ok = lines.filter(l => l.answered === 200).length;
if (!n503) throw new Error('the receiver answered no 503');
if (ok !== sent) throw new Error(`receiver accepted ${ok}, agent counted ${sent} sent`);
if (!retried) throw new Error('nothing was retried');
if (!full) throw new Error('nothing was dropped for a full queue: the test does not exercise the bound');
if (sent + failed + full + shutdown + expired !== withSeries)
  throw new Error(`windows ${withSeries} != sent ${sent} + failed ${failed} + dropped ${full}+${shutdown}+${expired}`);
console.log(JSON.stringify({ windows: withSeries, answered503: n503, delivered: ok, retried, droppedQueueFull: full, droppedShutdown: shutdown, expired }));
EOF
note "$(cat "$TMP/outage.summary")"
pass "503 for 20 s: queued windows delivered after it, the rest counted as dropped; all accounted for"

# ---- 4. garbage answers, then a receiver that hangs -----------------------------------------

"$HOTCHAIN" 60 > /dev/null &
NATIVE_PID=$!
PIDS_TO_KILL+=($NATIVE_PID)
start_receiver bad --mode garbage
start_agent bad --all-processes --interval 1 --flush-timeout 2 --pyroscope-url "http://127.0.0.1:$RX_PORT"
answered() { [ -f "$TMP/bad.rx.jsonl" ] && [ "$(grep -c . "$TMP/bad.rx.jsonl")" -ge "$1" ]; }
wait_for 30 "three pushes answered with garbage" answered 3
kill -0 "$AGENT_PID" || fail "agent died on garbage answers"
rx_control "$RX_PORT" '{"mode":"hang"}'
w=$(metric spanprof_windows_total)
wait_for 30 "windows to go on while the receiver hangs (from $w)" windows_ge $((w + 4))
kill -0 "$AGENT_PID" || fail "agent died on a hanging receiver"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$METRICS_PORT/healthz")" = 200 ] || fail "agent unhealthy while the receiver hangs"
stop_agent bad 12
kill -TERM "$NATIVE_PID" 2> /dev/null || true
pass "garbage and a hanging receiver: the agent stays up, healthy, and stops in bounded time"
