#!/usr/bin/env bash
# otelctx.sh: the OTEP 4719 process context (OTEL_CTX) the hook publishes, read from outside by a
# reader written from the OTEP's text (tests/tools/otelctx-read.js: /proc/<pid>/maps, /proc/<pid>/mem,
# protobufjs on the published schema) and by spanprof (the report line of the process).
#
#   1. SpanService (ASP.NET Core, OpenTelemetry SDK): the SDK's resource once its TracerProvider
#      exists, the key map equal to the span table's, grown by a new label key; spanprof's report.
#   2. HookCheck (no SDK): service.name from OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, else
#      the entry assembly; a random service.instance.id per process; MADV_DONTFORK.
#   3. Key churn: 150 keys added while the reader reads in a loop: no torn read, the key map only
#      grows, the final one equals the span table's.
#   4. No context: hook disabled, SPANPROF_PROCESS_CONTEXT=0, memfd refused (the table works on).
#   5. A hostile context (a payload nested 10000 deep): spanprof refuses it and lives.
. "$(dirname "$0")/lib.sh"
need_root "spanprof record; reading other processes' memory"
need_cmd dotnet node curl

CTXDUMP=$BUILD/tools/ctxdump
READER=$TOOLS/otelctx-read.js
HOOKCHECK=$BUILD/apps/hookcheck-plain/HookCheck.dll
need_built "$SPANPROF" "$HOOK" "$SVC" "$CTXDUMP"
[ -d "$TOOLS/node_modules/protobufjs" ] || skip "protobufjs not installed in tests/tools"

dotnet build "$ROOT/tests/apps/HookCheck/HookCheck.csproj" -c Release -o "$BUILD/apps/hookcheck-plain" \
	-nologo -v q > "$TMP/build.log" 2>&1 || { cat "$TMP/build.log"; fail "dotnet build of HookCheck failed"; }

# read_ctx PID OUT: one consistent read by the independent reader, JSON in OUT.
read_ctx() { node "$READER" "$1" > "$2"; }
# get FILE EXPR: a field of the JSON in FILE (EXPR on `c`, the decoded context).
get() { node -e "const c = JSON.parse(require('fs').readFileSync('$1')); const v = ($2); console.log(typeof v === 'string' ? v : JSON.stringify(v))"; }
# ctxdump_keys PID: the span table's key names, comma-separated, by index.
ctxdump_keys() { "$CTXDUMP" "$1" | awk '$1 == "key" { printf "%s%s", (n++ ? "," : ""), $3 } END { print "" }'; }
is_uuid() { [[ $1 =~ ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$ ]]; }
starts_with() { [[ $1 == "$2"* ]]; }
has_key() { [[ ,$1, == *,"$2",* ]]; }	# has_key LIST NAME: NAME is one of comma-separated LIST

# ---- 1. SpanService: the SDK's resource, the key map, spanprof's report ---------------------

note "== SpanService with the OpenTelemetry SDK (OTEL_SERVICE_NAME=octx-env, AddService(\"SpanService\") in code)"
start_app --ready-file "$TMP/svc.ready" "$TMP/svc.out" env OTEL_SERVICE_NAME=octx-env \
	SPANSERVICE_READY="$TMP/svc.ready" DOTNET_STARTUP_HOOKS="$HOOK" dotnet "$SVC" --port 0
SVC_PID=$APP_PID
PORT=$(node -pe "JSON.parse(require('fs').readFileSync('$TMP/svc.ready')).port")

check "one OTEL_CTX mapping, a memfd" \
	[ "$(grep -c '/memfd:OTEL_CTX (deleted)$' "/proc/$SVC_PID/maps")" = 1 ]
read_ctx "$SVC_PID" "$TMP/svc1.json" || fail "the reader found no context in SpanService"
check "header: version 2, published, payload in the mapping" \
	[ "$(get "$TMP/svc1.json" 'c.header.version + "," + (c.header.published_at_ns !== "0") + "," + c.header.payload_in_mapping')" = "2,true,true" ]

# The SDK's TracerProvider is built when the host starts: its resource replaces the
# environment's within a second or two (the hook looks every 0.5 s).
sdk_resource() { read_ctx "$SVC_PID" "$TMP/svc2.json" && [ "$(get "$TMP/svc2.json" 'c.attributes["spanprof.resource.source"]')" = opentelemetry-sdk ]; }
poll 20 sdk_resource || { cat "$TMP/svc2.json"; fail "the SDK's resource was not published within 20 s"; }
pass "the OpenTelemetry SDK's resource is published (spanprof.resource.source=opentelemetry-sdk)"
check "service.name is the SDK's (the app's AddService wins over OTEL_SERVICE_NAME in the .NET SDK)" \
	[ "$(get "$TMP/svc2.json" 'c.resource["service.name"]')" = SpanService ]
check "telemetry.sdk.* are the SDK's" \
	[ "$(get "$TMP/svc2.json" '[c.resource["telemetry.sdk.name"], c.resource["telemetry.sdk.language"]].join()')" = opentelemetry,dotnet ]
check "service.instance.id is a UUID" is_uuid "$(get "$TMP/svc2.json" 'c.resource["service.instance.id"]')"
check "threadlocal.schema_version = spanprof_ctx_v1" \
	[ "$(get "$TMP/svc2.json" 'c.schema_version')" = spanprof_ctx_v1 ]
KM=$(get "$TMP/svc2.json" 'c.key_map.join()')
check "key map starts local_root_span_id, span_name ($KM)" starts_with "$KM" local_root_span_id,span_name
check "key map = the span table's key names" [ "$KM" = "$(ctxdump_keys "$SVC_PID")" ]

AT1=$(get "$TMP/svc2.json" 'c.header.published_at_ns')
curl -sf "http://127.0.0.1:$PORT/work/labels" > /dev/null || fail "GET /work/labels"
read_ctx "$SVC_PID" "$TMP/svc3.json"
KM2=$(get "$TMP/svc3.json" 'c.key_map.join()')
check "a new label key (tenant) is republished in the key map ($KM2)" has_key "$KM2" tenant
check "... with a later published_at_ns" [ "$(get "$TMP/svc3.json" "BigInt(c.header.published_at_ns) > ${AT1}n")" = true ]
check "... and still = the span table's" [ "$KM2" = "$(ctxdump_keys "$SVC_PID")" ]
NKEYS=$(get "$TMP/svc3.json" 'c.key_map.length')

record svc.pb.gz -p "$SVC_PID" -d 2
LINE=$(grep "^  .NET pid $SVC_PID " "$TMP/svc.txt" || true)
note "$LINE"
check "spanprof's report: the process's service.name from OTEL_CTX" \
	grep -qF 'OTEL_CTX v2: service.name "SpanService"' <<<"$LINE"
check "spanprof's report: the key map, no mismatch with the span table" \
	grep -qF "key map $NKEYS keys (spanprof_ctx_v1), 0 mismatches with the span table" <<<"$LINE"
stop "$SVC_PID"

# ---- 2. no SDK: the environment, the entry assembly ---------------------------------------

note "== HookCheck, no SDK"
start_app --ready '^INFO scenario sleep' "$TMP/hc1.out" env OTEL_SERVICE_NAME=octx-env-only \
	OTEL_RESOURCE_ATTRIBUTES='deployment.environment.name=test,team=a%2Cb,service.name=ignored' \
	DOTNET_STARTUP_HOOKS="$HOOK" dotnet "$HOOKCHECK" sleep 30
read_ctx "$APP_PID" "$TMP/hc1.json"
check "service.name from OTEL_SERVICE_NAME (over OTEL_RESOURCE_ATTRIBUTES)" \
	[ "$(get "$TMP/hc1.json" 'c.resource["service.name"] + "/" + c.attributes["spanprof.resource.source"]')" = octx-env-only/environment ]
check "OTEL_RESOURCE_ATTRIBUTES published, percent-decoded" \
	[ "$(get "$TMP/hc1.json" 'c.resource["deployment.environment.name"] + "|" + c.resource["team"]')" = "test|a,b" ]
check "telemetry.sdk.* name the hook" \
	[ "$(get "$TMP/hc1.json" '[c.resource["telemetry.sdk.name"], c.resource["telemetry.sdk.language"]].join()')" = spanprof-hook,dotnet ]
ID1=$(get "$TMP/hc1.json" 'c.resource["service.instance.id"]')
check "service.instance.id is a UUID" is_uuid "$ID1"
check "key map: the two fixed keys" [ "$(get "$TMP/hc1.json" 'c.key_map.join()')" = local_root_span_id,span_name ]
check "the mapping is not inherited by fork() (VmFlags dc)" \
	bash -c "awk '/OTEL_CTX/ { m = 1 } m && /^VmFlags:/ { print; exit }' /proc/$APP_PID/smaps | grep -qw dc"
HC1=$APP_PID

start_app --ready '^INFO scenario sleep' "$TMP/hc2.out" \
	env -u OTEL_SERVICE_NAME -u OTEL_RESOURCE_ATTRIBUTES DOTNET_STARTUP_HOOKS="$HOOK" dotnet "$HOOKCHECK" sleep 30
read_ctx "$APP_PID" "$TMP/hc2.json"
check "no environment: service.name is the entry assembly's name" \
	[ "$(get "$TMP/hc2.json" 'c.resource["service.name"] + "/" + c.attributes["spanprof.resource.source"]')" = HookCheck/entry-assembly ]
check "another process, another service.instance.id" [ "$(get "$TMP/hc2.json" 'c.resource["service.instance.id"]')" != "$ID1" ]
stop "$HC1" "$APP_PID"

# ---- 3. key churn under a reader --------------------------------------------------------------

note "== 150 new keys, one every 10 ms, under a reader that reads in a loop"
start_app --ready '^INFO scenario sleep' "$TMP/hc3.out" \
	env DOTNET_STARTUP_HOOKS="$HOOK" dotnet "$HOOKCHECK" sleep 1 keys 150 10 sleep 30
node "$READER" --watch 4 "$APP_PID" > "$TMP/watch.json" || { cat "$TMP/watch.json"; fail "the watching reader saw an inconsistent context"; }
wait_for_line "$TMP/hc3.out" '^INFO keys added=150' 10
note "$(get "$TMP/watch.json" '"reads " + c.reads + ", publications seen " + c.publishes_seen + ", retries " + JSON.stringify(c.retries)')"
check "the reader saw the key map grow, never shrink or rename (no torn read)" \
	[ "$(get "$TMP/watch.json" 'c.bad.length === 0 && c.publishes_seen > 10')" = true ]
read_ctx "$APP_PID" "$TMP/hc3.json"
check "the final key map has the 152 keys, = the span table's" \
	[ "$(get "$TMP/hc3.json" 'c.key_map.length')" = 152 -a "$(get "$TMP/hc3.json" 'c.key_map.join()')" = "$(ctxdump_keys "$APP_PID")" ]
record hc3.pb.gz -p "$APP_PID" -d 1
check "spanprof's report: 152 keys, 0 mismatches" \
	grep -qF "key map 152 keys (spanprof_ctx_v1), 0 mismatches with the span table" "$TMP/hc3.txt"
stop "$APP_PID"

# ---- 4. no context ---------------------------------------------------------------------------

no_context() { # LABEL OUT ENV...: HookCheck with ENV has no OTEL_CTX; the reader says so
	local label=$1 out=$2 rc=0
	shift 2
	env DOTNET_STARTUP_HOOKS="$HOOK" "$@" dotnet "$HOOKCHECK" sleep 30 > "$out" 2>&1 &
	SPAWNED=$!
	register "$SPAWNED"
	wait_for_line "$out" '^INFO scenario sleep' 60
	node "$READER" "$SPAWNED" > "$TMP/none.json" || rc=$?
	check "$label: no OTEL_CTX mapping" [ "$rc" = 3 ]
}
no_context "hook disabled (SPANPROF_HOOK_DISABLE=1)" "$TMP/none1.out" SPANPROF_HOOK_DISABLE=1
stop "$SPAWNED"
no_context "SPANPROF_PROCESS_CONTEXT=0" "$TMP/none2.out" SPANPROF_PROCESS_CONTEXT=0
check "... the span table is there all the same" grep -q '/memfd:spanprof-ctx' "/proc/$SPAWNED/maps"
stop "$SPAWNED"

# memfd refused: OTEP 4719 falls back to anonymous memory named with prctl, which this kernel may
# not name (CONFIG_ANON_VMA_NAME); then there is no context, said once on stderr.
need_built "$TESTHOOK"	# the hook's test build: the only one that reads SPANPROF_HOOK_FAULT
env DOTNET_STARTUP_HOOKS="$TESTHOOK" SPANPROF_HOOK_FAULT=otelctx-memfd dotnet "$HOOKCHECK" sleep 30 > "$TMP/nomemfd.out" 2>&1 &
NM=$!
register "$NM"
wait_for_line "$TMP/nomemfd.out" '^INFO scenario sleep' 60
if grep -q '\[anon:OTEL_CTX\]' "/proc/$NM/maps"; then
	read_ctx "$NM" "$TMP/anon.json"
	check "memfd refused: an [anon:OTEL_CTX] context, read" [ "$(get "$TMP/anon.json" 'c.mapping.path')" = "[anon:OTEL_CTX]" ]
else
	check "memfd refused, no anonymous VMA names here: no context, one line on stderr" \
		grep -q 'process context not published: no memfd and no PR_SET_VMA_ANON_NAME' "$TMP/nomemfd.out"
fi
check "... the span table is there all the same" grep -q '/memfd:spanprof-ctx' "/proc/$NM/maps"
stop "$NM"

# ---- 5. a hostile context ----------------------------------------------------------------------

# A process (not .NET: no report line) whose OTEL_CTX payload nests AnyValue arrays 10000 deep, which
# protobuf-c would follow to a stack overflow: spanprof must refuse it and carry on.
if command -v python3 > /dev/null; then
	start_app --pid-line "$TMP/hostile.out" python3 -c '
import ctypes, mmap, os, struct, time
def msg(field, body):
    n, v = len(body), b""
    while True:
        b = n & 0x7f; n >>= 7
        v += bytes([b | (0x80 if n else 0)])
        if not n: break
    return bytes([field << 3 | 2]) + v + body
any_ = msg(1, b"x")
for _ in range(10000):
    any_ = msg(5, msg(1, any_))
payload = msg(2, msg(1, b"deep") + msg(2, any_))
size = 1 << 20
fd = os.memfd_create("OTEL_CTX", os.MFD_CLOEXEC)
os.ftruncate(fd, size)
m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
addr = ctypes.addressof((ctypes.c_char * size).from_buffer(m))
m[4096:4096 + len(payload)] = payload
m[8:32] = struct.pack("<IIQQ", 2, len(payload), 1, addr + 4096)
m[0:8] = b"OTEL_CTX"
print(os.getpid(), flush=True)
time.sleep(60)
'
	grep -q '/memfd:OTEL_CTX' "/proc/$APP_PID/maps" || fail "the hostile process has no OTEL_CTX mapping"
	record hostile.pb.gz -p "$APP_PID" -d 1
	grep -Eq " pid $APP_PID .* [1-9][0-9]* refused" "$TMP/hostile.txt" ||
		{ grep "pid $APP_PID" "$TMP/hostile.txt"; fail "the context nested 10000 deep was not refused"; }
	pass "spanprof survives an OTEL_CTX payload nested 10000 deep (refused before protobuf-c)"
	stop "$APP_PID"
fi
