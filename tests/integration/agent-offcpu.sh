#!/usr/bin/env bash
# agent-offcpu.sh: `spanprof agent --off-cpu` against tests/apps/OffCpu (blocks inside four known
# spans: Thread.Sleep, a contended lock, sync-over-async .Result, a blocking socket read), pushing
# to the local Pyroscope receiver and the local OTLP receiver at once, both decoding every byte:
#   - Pyroscope: the service's off-CPU time in a series of its own, __name__ off_cpu, profile type
#     off_cpu:off_cpu:nanoseconds:: (what Pyroscope files off-CPU profiles as), the CPU series'
#     labels otherwise; its CPU series stays process_cpu with the CPU types only;
#   - span labels: per scenario, the off-CPU time under its span name with its blocking method in
#     the stack is within 10 % of what the app measured;
#   - OTLP: the same windows carry a second profile, off_cpu/nanoseconds, with the same total and
#     span links;
#   - /metrics: the off-CPU counters; a native process blocking ~100,000 times a second
#     (tests/apps/native/pingpong) is not timed: its threads leave at the BPF filter.
# No timing asserts: accounting comparisons only.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd dotnet node curl

OFFCPU=$BUILD/apps/OffCpu/OffCpu.dll
PINGPONG=$BUILD/apps/native/pingpong	# from `make tools`
need_built "$OFFCPU" "$HOOK" "$SPANPROF" "$PINGPONG"
[ -f "$TOOLS/node_modules/protobufjs/package.json" ] ||
	(cd "$TOOLS" && npm ci --no-audit --no-fund --silent) || fail "npm ci in $TOOLS failed"
SERVICE=offcpu-agent-test

# Refused: the threshold without --off-cpu.
rc=0
"$SPANPROF" agent --off-cpu-threshold 2 --output-dir "$TMP/x" > "$TMP/bad.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "agent --off-cpu-threshold without --off-cpu: exit $rc, want 2"
pass "agent --off-cpu-threshold needs --off-cpu"

# start_receiver NAME SCRIPT [ARGS]: sets RX_PORT; JSON lines in $TMP/NAME.rx.jsonl.
start_receiver() {
	local name=$1 script=$2
	shift 2
	spawn "$TMP/$name.rx.log" node "$TOOLS/$script" --port 0 --ready "$TMP/$name.rx.ready" \
		--out "$TMP/$name.rx.jsonl" "$@"
	poll 10 test -s "$TMP/$name.rx.ready" || { cat "$TMP/$name.rx.log"; fail "$name: receiver did not start"; }
	RX_PORT=$(cat "$TMP/$name.rx.ready")
}
start_receiver pyro pyroscope-receiver.js --stacks
PYRO_PORT=$RX_PORT
start_receiver otlp otlp-receiver.js
OTLP_PORT=$RX_PORT

spawn "$TMP/agent.log" "$SPANPROF" agent -F 99 --interval 2 --off-cpu --metrics-addr 127.0.0.1:0 -v \
	--pyroscope-url "http://127.0.0.1:$PYRO_PORT" --otlp-url "http://127.0.0.1:$OTLP_PORT"
AGENT_PID=$SPAWNED
wait_for_line "$TMP/agent.log" 'metrics on port' 30
grep -q 'off-CPU time too' "$TMP/agent.log" || { cat "$TMP/agent.log"; fail "the agent does not say it times blocks"; }
METRICS_PORT=$(sed -n 's/.*metrics on port \([0-9]*\).*/\1/p' "$TMP/agent.log" | head -1)

# The app waits outside any span while the agent finds it (a .NET process: its blocks timed).
start_app --ready ' ready$' "$TMP/app.out" env DOTNET_STARTUP_HOOKS="$HOOK" OTEL_SERVICE_NAME=$SERVICE \
	dotnet "$OFFCPU" --truth "$TMP/truth.json" --blocks 40 --block-ms 20 --delay-ms 3000
poll 60 gone "$APP_PID" || fail "the app did not finish"
[ -s "$TMP/truth.json" ] || { cat "$TMP/app.out"; fail "the app wrote no truth file"; }
sleep 3	# its last window
metrics=$(curl -s "http://127.0.0.1:$METRICS_PORT/metrics")

# A native process that blocks all the time: not a .NET process, so its blocks are not timed. The
# other .NET processes on the host are: the host's own rate over as long a quiet stretch, taken
# right after, is subtracted, and pingpong's share must stay well below its blocks.
short() { curl -s "http://127.0.0.1:$METRICS_PORT/metrics" | awk '/^spanprof_sampler_events_total\{outcome="offcpu_short"\}/ { print $NF }'; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
s0=$(short); t0=$(now_ms)
"$PINGPONG" 2 > "$TMP/pingpong.out" || fail "pingpong failed"
ran_ms=$(( $(now_ms) - t0 ))
sleep 1.2	# the counters on /metrics are a second old at most
s1=$(short)
sleep "$(awk -v ms="$ran_ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
sleep 1.2
s2=$(short)
trips=$(awk '/^roundtrips/ { print $2 }' "$TMP/pingpong.out")
timed=$(( (s1 - s0) - (s2 - s1) ))
note "pingpong: $trips round trips (two blocks each) in $ran_ms ms; short blocks timed on the host meanwhile: $((s1 - s0)), as long without it: $((s2 - s1))"
[ "$timed" -lt "$((trips / 2))" ] ||
	fail "$timed short blocks more than the host's own while pingpong made $trips round trips: its threads are timed"
pass "a native process's blocks are not timed ($timed short blocks on the host beyond its own rate, against pingpong's $((2 * trips)))"
kill -TERM "$AGENT_PID"
poll 15 gone "$AGENT_PID" || { cat "$TMP/agent.log"; fail "agent still running 15 s after SIGTERM"; }
wait "$AGENT_PID" || { cat "$TMP/agent.log"; fail "agent exited non-zero"; }
grep 'agent stopped\|pyroscope:\|otlp:\|off-CPU:' "$TMP/agent.log" | sed 's/^/  /'
grep -Eq '^[0-9T:.Z-]+ info off-CPU: [1-9][0-9]* blocks at or above the threshold' "$TMP/agent.log" ||
	fail "the agent's last words lack the off-CPU counts"
grep -q '"error"' "$TMP/pyro.rx.jsonl" && { grep '"error"' "$TMP/pyro.rx.jsonl" | head -3; fail "Pyroscope receiver refused a push"; }

long=$(echo "$metrics" | awk '/^spanprof_sampler_events_total\{outcome="offcpu_long"\}/ { print $NF }')
note "metrics: offcpu_long $long"
[ -n "$long" ] && ge "$long" 1 || { echo "$metrics" | grep -i offcpu; fail "no off-CPU blocks counted on /metrics"; }
pass "/metrics counts the off-CPU blocks ($long at or above the threshold)"

# Pyroscope: both series of the service, summed over every push.
r=$(node - "$TMP/pyro.rx.jsonl" "$SERVICE" << 'EOF'
const fs = require('fs');
const [file, service] = process.argv.slice(2);
const out = { cpu: { series: 0, types: [], total: 0, labels: null },
  off: { series: 0, types: [], total: 0, spanNames: {}, onMethod: {}, offMethod: {}, withSpan: 0, samples: 0,
    labels: null } };
const methods = { sleep: 'Program::BlockSleep(', lock: 'Program::BlockLock(', result: 'Program::BlockResult(',
  socket: 'Program::BlockSocket(' };
for (const line of fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
  for (const s of JSON.parse(line).series || []) {
    if (s.labels.service_name !== service) continue;
    const k = s.labels.__name__ === 'off_cpu' ? 'off' : s.labels.__name__ === 'process_cpu' ? 'cpu' : null;
    if (!k) throw new Error(`unexpected __name__ ${s.labels.__name__}`);
    const o = out[k];
    o.series++;
    const { __name__, ...rest } = s.labels;
    o.labels = Object.keys(rest).sort().join(',');
    for (const p of s.profiles) {
      for (const t of p.profileTypes) if (!o.types.includes(t)) o.types.push(t);
      o.total += p.total;
      if (k === 'off') {
        o.samples += p.samples;
        o.withSpan += p.sampleLabels.span_id || 0;
        for (const [n, v] of Object.entries(p.spanNames)) o.spanNames[n] = (o.spanNames[n] || 0) + v;
        for (const st of p.stacks) {
          if (!methods[st.spanName]) continue;
          if (st.stack.includes(methods[st.spanName])) {
            o.onMethod[st.spanName] = (o.onMethod[st.spanName] || 0) + st.value;
          } else {	/* kept to say what the stacks held instead, on a failure */
            const m = (o.offMethod[st.spanName] = o.offMethod[st.spanName] || {});
            m[st.stack] = (m[st.stack] || 0) + st.value;
          }
        }
      }
    }
  }
}
/* Only the heaviest three stacks without the method, per span name. */
for (const [n, m] of Object.entries(out.off.offMethod))
  out.off.offMethod[n] = Object.entries(m).sort((a, b) => b[1] - a[1]).slice(0, 3);
console.log(JSON.stringify(out));
EOF
) || fail "could not read the Pyroscope pushes"
note "pyroscope: $(node -pe "const o = $r; delete o.off.offMethod; JSON.stringify(o)")"
[ "$(field "$r" off.series)" -ge 1 ] || fail "no off_cpu series for $SERVICE"
[ "$(field "$r" cpu.series)" -ge 1 ] || fail "no process_cpu series for $SERVICE"
[ "$(field "$r" "off.types.join(' ')")" = "off_cpu:off_cpu:nanoseconds::" ] ||
	fail "off-CPU profile types: $(field "$r" off.types)"
[ "$(field "$r" "cpu.types.join(' ')")" = "process_cpu:samples:count:cpu:nanoseconds process_cpu:cpu:nanoseconds:cpu:nanoseconds" ] ||
	fail "CPU profile types: $(field "$r" cpu.types)"
[ "$(field "$r" off.labels)" = "$(field "$r" cpu.labels)" ] ||
	fail "the off-CPU series' labels ($(field "$r" off.labels)) are not the CPU series' ($(field "$r" cpu.labels))"
pass "Pyroscope: off_cpu:off_cpu:nanoseconds:: beside process_cpu, same series labels ($(field "$r" off.labels))"

for n in sleep lock result socket; do
	got=$(field "$r" "off.onMethod.$n || 0")
	want=$(node -pe "JSON.parse(require('fs').readFileSync('$TMP/truth.json')).scenarios.$n.blocked_ns")
	ratio=$(node -pe "($got / $want).toFixed(3)")
	ge "$ratio" 0.9 && le "$ratio" 1.1 || {
		echo "  the heaviest stacks under span_name $n without its method (ns): $(node -pe "JSON.stringify(($r).off.offMethod.$n || [])")"
		echo "  the agent on the app (pid $APP_PID):"
		grep "pid $APP_PID\b" "$TMP/agent.log" | tail -20 | sed 's/^/    /'
		fail "$n: $((got / 1000000)) ms off-CPU under span_name $n with its method, the app measured $((want / 1000000)) ms (ratio $ratio, want 0.9..1.1)$(offcpu_starved "$TMP/truth.json" $n)"
	}
	pass "$n: $((got / 1000000)) ms off-CPU under its span name with its method, app $((want / 1000000)) ms (ratio $ratio; $(($(field "$r" "off.spanNames.$n") / 1000000)) ms under the span in all)"
done
[ "$(field "$r" off.withSpan)" -gt 0 ] || fail "no off-CPU sample carries a span_id"

# OTLP: the same windows, a second profile per resource.
o=$(node - "$TMP/otlp.rx.jsonl" "$SERVICE" << 'EOF'
const fs = require('fs');
const [file, service] = process.argv.slice(2);
const out = { off: 0, cpu: 0, off_total: 0, off_linked: 0 };
for (const line of fs.readFileSync(file, 'utf8').split('\n').filter(Boolean))
  for (const r of JSON.parse(line).resources || []) {
    if (r.attributes['service.name'] !== service) continue;
    for (const p of r.profiles) {
      if (p.sampleType === 'off_cpu/nanoseconds') {
        out.off++;
        out.off_total += p.total;
        out.off_linked += p.linked;
      } else if (p.sampleType === 'samples/count') out.cpu++;
    }
  }
console.log(JSON.stringify(out));
EOF
) || fail "could not read the OTLP requests"
note "otlp: $o"
[ "$(field "$o" off)" -ge 1 ] && [ "$(field "$o" cpu)" -ge 1 ] || fail "OTLP profiles: $o (want CPU and off-CPU)"
[ "$(field "$o" off_total)" = "$(field "$r" off.total)" ] ||
	fail "OTLP off-CPU total $(field "$o" off_total) ns, Pyroscope's $(field "$r" off.total) ns"
[ "$(field "$o" off_linked)" -gt 0 ] || fail "no off-CPU sample links a span in OTLP: $o"
pass "OTLP: off_cpu/nanoseconds profiles, $(field "$o" off_total) ns as pushed to Pyroscope, span links"
