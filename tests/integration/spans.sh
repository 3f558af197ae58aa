#!/usr/bin/env bash
# spans.sh: span-labelled profiles of a real ASP.NET Core service with OpenTelemetry under load:
# every sample of span-only code carries the span that ran it (checked against the spans the
# service exported), code outside spans carries none, user labels only inside their scope. With
# the service started before spanprof, after it, in its own pid+mount namespace, and with
# Pyroscope's label convention.
. "$(dirname "$0")/lib.sh"
need_root
command -v dotnet > /dev/null || { echo "SKIP: no dotnet"; exit 77; }

SVC=$BUILD/apps/SpanService/SpanService.dll
LOADGEN=$BUILD/apps/LoadGen/LoadGen.dll
HOOK=$BUILD/hook/SpanProf.Hook.dll
for f in "$SVC" "$LOADGEN" "$HOOK"; do [ -f "$f" ] || fail "$f missing: run make apps"; done
PATHS='/work/a,/work/b,/work/labels?tenant=acme'

# start_service NAME [ns]: SpanService with the startup hook; sets SVC_PID (host pid), SVC_PORT.
start_service() {
	local name=$1 ns=${2:-}
	local env=(SPANSERVICE_SPANS="$TMP/$name.spans.jsonl" SPANSERVICE_READY="$TMP/$name.ready"
		DOTNET_STARTUP_HOOKS="$HOOK")
	if [ -n "$ns" ]; then
		env "${env[@]}" "$ROOT/tests/integration/nsrun.sh" dotnet "$SVC" --port 0 \
			> "$TMP/$name.svc" 2>&1 &
	else
		env "${env[@]}" dotnet "$SVC" --port 0 > "$TMP/$name.svc" 2>&1 &
	fi
	local launcher=$!
	PIDS_TO_KILL+=($launcher)
	for _ in $(seq 600); do [ -s "$TMP/$name.ready" ] && break; sleep 0.1; done
	[ -s "$TMP/$name.ready" ] || { cat "$TMP/$name.svc"; fail "$name: service did not start"; }
	SVC_PORT=$(node -pe "JSON.parse(require('fs').readFileSync('$TMP/$name.ready')).port")
	if [ -n "$ns" ]; then
		SVC_PID=$(pgrep -P "$launcher" | head -1)
		PIDS_TO_KILL+=($SVC_PID)
	else
		SVC_PID=$launcher
	fi
	grep -q '"hook_mapped":true' "$TMP/$name.ready" || fail "$name: hook not loaded"
}

# stop_service NAME: SIGTERM, so every span is flushed to the span file.
stop_service() {
	kill -TERM "$SVC_PID"
	for _ in $(seq 300); do kill -0 "$SVC_PID" 2>/dev/null || break; sleep 0.1; done
	grep -q 'spans_dropped=0' "$TMP/$1.svc" || { cat "$TMP/$1.svc"; fail "$1: spans dropped or not flushed"; }
}

load() {	# load NAME SECONDS
	dotnet "$LOADGEN" --url "http://127.0.0.1:$SVC_PORT" --concurrency 200 --duration "$2" \
		--paths "$PATHS" > "$TMP/$1.load" 2>&1 &
	LOAD_PID=$!
}

# check NAME PROFILE [spancheck args]: the bars of issue 4.
check() {
	local name=$1 prof=$2; shift 2
	pprof_json "$prof" > "$TMP/$name.json"
	node "$ROOT/tests/integration/spancheck.js" "$TMP/$name.json" "$TMP/$name.spans.jsonl" \
		--pid "$SVC_PID" "$@" > "$TMP/$name.check"
	local r
	r=$(cat "$TMP/$name.check")
	v() { node -pe "($r).$1"; }
	note "$name: $(node -pe "const r=($r); delete r.wrong_examples; JSON.stringify(r)")"
	[ "$(v samples_in_span_methods)" -ge 100 ] || fail "$name: only $(v samples_in_span_methods) samples in span-only methods"
	ge "$(v right_rate)" 0.95 || fail "$name: right span on $(v right_rate) of span-only samples (want >= 0.95)"
	le "$(v wrong_rate)" 0.01 || fail "$name: wrong span on $(v wrong_rate) (want <= 0.01): $(node -pe "JSON.stringify(($r).wrong_examples)")"
	[ "$(v nospan_samples)" -ge 5 ] || fail "$name: too few samples outside spans"
	[ "$(v nospan_with_span)" = 0 ] || fail "$name: $(v nospan_with_span) samples outside any span carry a span"
	ge "$(v label_right_rate)" 0.95 || fail "$name: user label on $(v label_right_rate) of in-scope samples"
	[ "$(v label_leaked)" = 0 ] || fail "$name: user label on $(v label_leaked) samples outside its scope"
	ge "$(v nospan_label_rate)" 0.95 || fail "$name: label set outside any span on $(v nospan_label_rate) of its samples"
	[ "$(v worker_label_leaked)" = 0 ] || fail "$name: the worker's label on $(v worker_label_leaked) other samples"
	ge "$(v span_name_right_rate)" 0.95 || fail "$name: span_name right on $(v span_name_right_rate) (want >= 0.95)"
	pass "$name: right $(v right_rate), wrong $(v wrong_rate), missing $(v missing_rate) of $(v samples_in_span_methods); no-span clean $(v nospan_clean_rate); label $(v label_right_rate), leaked $(v label_leaked)"
}

# 1. Service started before spanprof.
start_service before
load before 9
sleep 2
"$SPANPROF" record -p "$SVC_PID" -d 5 --by-span -o "$TMP/before.pb.gz" > "$TMP/before.txt"
wait "$LOAD_PID" || true
stop_service before
cat "$TMP/before.load"
grep -q 'span context: with span [1-9]' "$TMP/before.txt" || { cat "$TMP/before.txt"; fail "no span context"; }
for n in 'GET /work/a' 'GET /work/b' 'GET /work/labels'; do
	grep -q "^  $n " "$TMP/before.txt" || { cat "$TMP/before.txt"; fail "--by-span lacks $n"; }
done
check before "$TMP/before.pb.gz"

# 2. Service started after spanprof (host-wide recording already running).
"$SPANPROF" record -d 20 -o "$TMP/after.pb.gz" > "$TMP/after.txt" &
SP=$!
sleep 1
start_service after
load after 8
wait "$LOAD_PID" || true
stop_service after
wait "$SP"
check after "$TMP/after.pb.gz"

# 3. Service in its own pid and mount namespace (private /tmp); thread ids mapped to the host's.
start_service container ns
load container 9
sleep 2
"$SPANPROF" record -p "$SVC_PID" -d 5 -o "$TMP/container.pb.gz" > "$TMP/container.txt"
for st in /proc/"$SVC_PID"/task/*/status; do
	awk -v t="$(basename "$(dirname "$st")")" '/^NSpid:/ { print t, $NF }' "$st" 2>/dev/null || true
done > "$TMP/container.tidmap"
wait "$LOAD_PID" || true
stop_service container
check container "$TMP/container.pb.gz" --tidmap "$TMP/container.tidmap"

# 4. Pyroscope's convention: span_id is the local root span's id.
start_service pyro
load pyro 9
sleep 2
"$SPANPROF" record -p "$SVC_PID" -d 5 --pyroscope-labels -o "$TMP/pyro.pb.gz" > /dev/null
wait "$LOAD_PID" || true
stop_service pyro
check pyro "$TMP/pyro.pb.gz" --pyroscope
