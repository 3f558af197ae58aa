#!/usr/bin/env bash
# agent-sparse.sh: the agent keeps a .NET process's whole perf map index only while it brings new
# code to name. Once it has had nothing new to name for two windows (or was idle), the index goes
# and the process is read for the addresses it is sampled at only. Code the service runs only
# after that (/work/b after a while of /work/a) is named all the same, with its callers, and no
# frame is left unnamed (but for a rare runtime stub page the runtime never logs).
. "$(dirname "$0")/lib.sh"
need_root
need_cmd dotnet

need_built "$SVC" "$LOADGEN" "$HOOK" "$SPANPROF"

start_app --ready-file "$TMP/svc.ready" "$TMP/svc.out" env DOTNET_PerfMapEnabled=1 \
	SPANSERVICE_READY="$TMP/svc.ready" SPANSERVICE_BG_DUTY=0 DOTNET_STARTUP_HOOKS="$HOOK" \
	dotnet "$SVC" --port 0
svc=$APP_PID
url=http://127.0.0.1:$(node -pe "JSON.parse(require('fs').readFileSync('$TMP/svc.ready')).port")
# Its first request builds every endpoint (RequestDelegateFactory): a burst of code that its perf
# map partly never lists (the addresses of such unnamed frames were in none of its lines), and
# that is no work of /work/a. Done before the agent starts, so /work/a's naming is measured alone.
node -e 'fetch(process.argv[1]).then((r) => r.text()).then((t) => process.exit(t === "ok\n" ? 0 : 1))' \
	"$url/healthz" || fail "GET /healthz failed"

"$SPANPROF" agent -v -F 99 --interval 1 --output-dir "$TMP/out" > "$TMP/agent.log" 2>&1 &
agent=$!
register "$agent"
wait_for_line "$TMP/agent.log" 'agent sampling' 30
# The agent reads a process sparsely from the start: the service, idle until now, holds no index.
started_sparse() { grep -aq "pid $svc: read sparsely from its first sample on" "$TMP/agent.log"; }
poll 10 started_sparse ||
	fail "the agent did not start the service sparse: $(grep -a "pid $svc" "$TMP/agent.log" | head -3)"
# /work/a (named from sparse reads first, then from the whole index once the service is busy),
# then quiet until the agent reads the service sparsely again (its frames all named, or idle: the
# index gone); only then /work/b, code the service has not run yet.
dotnet "$LOADGEN" --url "$url" --paths /work/a --rate 20 --duration 5 --warmup 0 > "$TMP/a.load" ||
	fail "LoadGen /work/a: $(cat "$TMP/a.load")"
went=$(wc -l < "$TMP/agent.log")
sparse_since() { tail -n +"$((went + 1))" "$TMP/agent.log" | grep -a "pid $svc: .*read sparsely"; }
poll 30 sparse_since > /dev/null || fail "the service was not read sparsely 30 s after its load stopped"
note "then: $(sparse_since | tail -1)"
b_from=$(date +%s%N)
dotnet "$LOADGEN" --url "$url" --paths /work/b --rate 20 --duration 6 --warmup 0 > "$TMP/b.load" ||
	fail "LoadGen /work/b: $(cat "$TMP/b.load")"
# The last window: one more written after the load ended (a window file newer than its end).
touch "$TMP/b.end"
window_after() { [ -n "$(find "$TMP/out" -name '*.pb.gz' -newer "$TMP/b.end" -print -quit)" ]; }
wait_for 15 "a window written after /work/b's load ended" window_after
kill -TERM "$agent"
wait_exit 30 "$agent" "the agent after SIGTERM" || { cat "$TMP/agent.log"; fail "agent exited non-zero"; }

line=$(grep -a "\.NET pid $svc " "$TMP/agent.log") || { cat "$TMP/agent.log"; fail "no report line for the service"; }
sparse=$(echo "$line" | grep -Eo 'sparse( before)?: [0-9]+ reads for [0-9]+ sampled addresses, whole again [0-9]+, let go quiet [0-9]+') ||
	fail "the service was never read sparsely: $line"
note "service: $sparse; $(echo "$line" | grep -Eo '[0-9]+ code ranges;')"

# The windows after /work/b started: its hot methods named, under WorkB, nothing unnamed.
for f in "$TMP"/out/*/*.pb.gz; do pprof_json "$f"; echo; done > "$TMP/windows.jsonl" ||
	fail "pprof-format could not decode a window"
r=$(node - "$TMP/windows.jsonl" "$svc" "$b_from" << 'EOF'
const [file, pid, from] = process.argv.slice(2);
let total = 0, hotb = 0, hotb_caller = 0, unnamed = 0, example, a_total = 0, a_hot = 0, a_unnamed = 0, a_example;
for (const l of require('fs').readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
  const p = JSON.parse(l);
  const before = BigInt(p.timeNanos) < BigInt(from);
  for (const s of p.samples) {
    if (s.labels.pid !== pid) continue;
    const v = s.values[0];
    // unnamed .NET code: [unknown] in a stack of managed frames (a native stack's garbage root
    // frame is not this test's business)
    const unknown = s.stack.includes('[unknown]') && s.stack.some((f) => f.includes('::'));
    if (before) {	// /work/a, the service read sparsely from the start
      a_total += v;
      if (unknown) {
        a_unnamed += v;
        a_example = s.stack.join(';');
      }
      if (s.stack.some((f) => /HotA_InSpan/.test(f))) a_hot += v;
      continue;
    }
    total += v;
    if (unknown) {
      unnamed += v;
      example = s.stack.join(';');
    }
    if (!s.stack.some((f) => /HotB_(Inner|Outer)/.test(f))) continue;
    hotb += v;
    if (s.stack.some((f) => /WorkB/.test(f))) hotb_caller += v;
  }
}
console.log(JSON.stringify({ total, hotb, hotb_caller, unnamed, example, a_total, a_hot, a_unnamed, a_example }));
EOF
) || fail "checking the windows: $r"
note "after /work/b started: $r"
[ "$(field "$r" a_hot)" -ge 20 ] || fail "only $(field "$r" a_hot) samples named in /work/a's hot method: $r"
le "$(field "$r" a_unnamed)" "$(($(field "$r" a_total) * 2 / 100))" || fail "$(field "$r" a_unnamed) samples with an unnamed frame under /work/a: $r"
[ "$(field "$r" hotb)" -ge 20 ] || fail "only $(field "$r" hotb) samples named in /work/b's hot methods: $r"
ge "$(field "$r" hotb_caller)" "$(($(field "$r" hotb) * 95 / 100))" || fail "/work/b's hot methods lost their caller WorkB: $r"
# A rare runtime stub page the runtime never logs stays unnamed whatever spanprof does.
le "$(field "$r" unnamed)" "$(($(field "$r" total) * 2 / 100))" || fail "$(field "$r" unnamed) samples with an unnamed frame: $r"
pass "code first run after the index went (and came back) is named, its callers kept ($sparse): $r"
