#!/usr/bin/env bash
# otlp-grpc.sh: OTLP over gRPC (OTEL_EXPORTER_OTLP_PROTOCOL=grpc) against a real gRPC server:
# @grpc/grpc-js serving ProfilesService from spanprof's .proto files (tests/tools/otlp-receiver.js
# --grpc), every request's bytes decoded and checked there. The agent profiles a busy process
# named by OTEL_SERVICE_NAME:
#   1. grpc over h2c: every window with samples arrives as one call and decodes; the service's
#      resource; a partial success is reported, not retried.
#   2. http/protobuf (PROFILES_PROTOCOL over the shared PROTOCOL) still posts to /v1development/profiles;
#      and to Pyroscope, which takes OTLP there too (tests/tools/pyroscope-receiver.js, the same
#      route and answers as Pyroscope's distributor), with OTEL_EXPORTER_OTLP_ENDPOINT only.
#   3. UNAVAILABLE for the first calls: retried with backoff, then delivered, nothing lost.
#   4. PERMISSION_DENIED: refused for good, one line on stderr naming the code and message.
#   5. mutual TLS (a CA, server and client certificates made here): accepted with the client
#      certificate, refused without it; a client certificate that is not there stops the agent
#      at start with one line.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd node openssl
need_built "$SPANPROF"
need_node_modules "$TOOLS" @grpc/grpc-js @grpc/proto-loader protobufjs
RECEIVER=$TOOLS/otlp-receiver.js
SERVICE=otlp-grpc-burner

# The workload: a shell loop on the CPU, named by its environment as an OTel SDK's process is.
spawn "$TMP/burner.log" env OTEL_SERVICE_NAME=$SERVICE sh -c 'while :; do :; done'
BURNER=$SPAWNED

# start_receiver NAME [receiver args]: sets RX_PORT; JSON lines in $TMP/NAME.rx.jsonl.
start_receiver() {
	local name=$1
	shift
	spawn "$TMP/$name.rx.log" node "$RECEIVER" --port 0 --ready "$TMP/$name.rx.ready" \
		--out "$TMP/$name.rx.jsonl" "$@"
	RX_PID=$SPAWNED
	poll 15 test -s "$TMP/$name.rx.ready" || { cat "$TMP/$name.rx.log"; fail "$name: receiver did not start"; }
	RX_PORT=$(cat "$TMP/$name.rx.ready")
	touch "$TMP/$name.rx.jsonl"
}

lines() { wc -l < "$1"; }
at_least() { [ "$(lines "$1")" -ge "$2" ]; }

# run_agent NAME UNTIL_CMD... -- AGENT ARGS: the agent (1 s windows) until UNTIL_CMD succeeds
# (30 s at most), then SIGTERM; it must exit 0. Its stderr in $TMP/NAME.agent.
run_agent() {
	local name=$1 until=()
	shift
	while [ "$1" != -- ]; do until+=("$1"); shift; done
	shift
	spawn "$TMP/$name.agent" "$SPANPROF" agent --all-processes -F 49 --interval 1 -v "$@"
	AGENT_PID=$SPAWNED
	wait_for_line "$TMP/$name.agent" 'agent sampling' 30
	poll 30 "${until[@]}" || { cat "$TMP/$name.agent"; fail "$name: timed out waiting for: ${until[*]}"; }
	kill -TERM "$AGENT_PID"
	poll 15 gone "$AGENT_PID" || { cat "$TMP/$name.agent"; fail "$name: agent still running 15 s after SIGTERM"; }
	wait "$AGENT_PID" || { cat "$TMP/$name.agent"; fail "$name: agent exited non-zero"; }
	grep 'otlp' "$TMP/$name.agent" | sed 's/^/  /'
}

# stat_of NAME FIELD: sent|retried|failed from the agent's stop line.
stat_of() {
	sed -n 's/.*otlp: \([0-9]*\) sent, \([0-9]*\) retried, \([0-9]*\) failed, dropped \([0-9]*\) (queue full) \([0-9]*\) (shutdown) \([0-9]*\) (expired).*/\1 \2 \3 \4 \5 \6/p' "$TMP/$1.agent" |
		awk -v f="$2" '{ print f == "sent" ? $1 : f == "retried" ? $2 : f == "failed" ? $3 : f == "shutdown" ? $5 : $6 }'
}

# summary FILE SERVICE: requests, answered codes, and the service's totals, checked for decode errors.
summary() {
	node - "$@" << 'EOF'
const fs = require('fs');
const [file, service] = process.argv.slice(2);
const lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map(JSON.parse);
const bad = lines.find((l) => l.error);
if (bad) throw new Error(`did not decode: ${bad.error}`);
let total = 0, svc = 0, res = null;
for (const l of lines)
  for (const r of l.resources || [])
    for (const p of r.profiles) {
      total += p.total;
      if (r.attributes['service.name'] === service) { svc += p.total; res = r.attributes; }
    }
console.log(JSON.stringify({ requests: lines.length, answered: lines.map((l) => l.answered),
  paths: [...new Set(lines.map((l) => l.path))], grpc: lines.every((l) => l.grpc), total,
  service_total: svc, resource: res }));
EOF
}

# ---- 1. gRPC over h2c ---------------------------------------------------------------------------

start_receiver h2c --grpc --partial '2:two profiles too old'
OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$RX_PORT" \
	run_agent h2c at_least "$TMP/h2c.rx.jsonl" 3 -- --otlp
grep -q "otlp: gRPC http://127.0.0.1:$RX_PORT/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export (gzip" "$TMP/h2c.agent" ||
	fail "the agent did not say it sends gRPC: $(grep otlp "$TMP/h2c.agent")"
S=$(summary "$TMP/h2c.rx.jsonl" $SERVICE) || fail "$S"
note "$S"
[ "$(field "$S" grpc)" = true ] || fail "not every request came over gRPC"
[ "$(field "$S" 'answered.every((a) => a === 0)')" = true ] || fail "a call was not answered OK: $S"
[ "$(field "$S" requests)" = "$(stat_of h2c sent)" ] || fail "$(field "$S" requests) calls received, $(stat_of h2c sent) sent"
[ "$(stat_of h2c retried)" = 0 ] && [ "$(stat_of h2c failed)" = 0 ] || fail "retried or failed: a partial success is neither"
total=$(sed -n 's/.*agent stopped: [0-9]* windows, \([0-9]*\) samples exported.*/\1/p' "$TMP/h2c.agent")
[ "$(field "$S" total)" = "$total" ] || fail "the receiver decoded $(field "$S" total) samples, the agent exported $total"
[ "$(field "$S" service_total)" -gt 0 ] || fail "no samples of service.name $SERVICE"
grep -q 'otlp: last error: partial success: 2 profiles rejected: two profiles too old' "$TMP/h2c.agent" ||
	fail "the partial success was not reported"
pass "gRPC (h2c): every window one Export call, decoded by grpc-js + protobufjs; totals = exported; service.name; partial success reported"

# ---- 2. http/protobuf still -----------------------------------------------------------------------

start_receiver http
OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL=http/protobuf \
	run_agent http at_least "$TMP/http.rx.jsonl" 2 -- --otlp-url "http://127.0.0.1:$RX_PORT"
S=$(summary "$TMP/http.rx.jsonl" $SERVICE) || fail "$S"
[ "$(field "$S" 'paths.join()')" = /v1development/profiles ] && [ "$(field "$S" grpc)" = false ] ||
	fail "http/protobuf: $S"
[ "$(field "$S" 'answered.every((a) => a === 200)')" = true ] && [ "$(field "$S" service_total)" -gt 0 ] || fail "http/protobuf: $S"
pass "http/protobuf (the signal's PROTOCOL over the shared one): POST /v1development/profiles, decoded"

spawn "$TMP/pyro.rx.log" node "$TOOLS/pyroscope-receiver.js" --port 0 --ready "$TMP/pyro.rx.ready" --out "$TMP/pyro.rx.jsonl"
poll 15 test -s "$TMP/pyro.rx.ready" || { cat "$TMP/pyro.rx.log"; fail "the Pyroscope receiver did not start"; }
touch "$TMP/pyro.rx.jsonl"
OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$(cat "$TMP/pyro.rx.ready")" \
	run_agent pyro at_least "$TMP/pyro.rx.jsonl" 2 -- --otlp
S=$(node - "$TMP/pyro.rx.jsonl" $SERVICE << 'EOF'
const fs = require('fs');
const [file, service] = process.argv.slice(2);
const lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map(JSON.parse);
const bad = lines.find((l) => l.error || l.answered !== 200 || !l.otlp || l.path !== '/v1development/profiles');
if (bad) throw new Error(`not accepted as OTLP: ${JSON.stringify(bad).slice(0, 400)}`);
let svc = 0;
for (const l of lines)
  for (const s of l.series)
    if (s.labels.service_name === service) svc += s.profiles.reduce((a, p) => a + p.total, 0);
if (!svc) throw new Error(`no series with service_name ${service}`);
console.log(JSON.stringify({ requests: lines.length, service_total: svc }));
EOF
) || fail "Pyroscope: $S"
[ "$(field "$S" requests)" = "$(stat_of pyro sent)" ] || fail "Pyroscope: $(stat_of pyro sent) sent, $S"
pass "Pyroscope's OTLP route (/v1development/profiles, OTEL_EXPORTER_OTLP_ENDPOINT=http://pyroscope:4040): accepted, decoded, service_name $SERVICE: $S"

# ---- 3. UNAVAILABLE, then OK ---------------------------------------------------------------------

start_receiver retry --grpc --status 14 --count 2
# until a call after the two refused ones was accepted
accepted() { grep -q '"answered":0' "$TMP/retry.rx.jsonl"; }
OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$RX_PORT" \
	run_agent retry accepted -- --otlp
S=$(summary "$TMP/retry.rx.jsonl" $SERVICE) || fail "$S"
note "$S"
[ "$(field "$S" 'answered.slice(0, 2).join()')" = 14,14 ] || fail "the first two calls were not refused: $S"
[ "$(stat_of retry retried)" -ge 2 ] || fail "$(stat_of retry retried) retries after two UNAVAILABLE"
[ "$(stat_of retry failed)" = 0 ] && [ "$(stat_of retry expired)" = 0 ] || fail "UNAVAILABLE was not retried"
# the first window refused twice is among those delivered: every window's samples arrived
total=$(sed -n 's/.*agent stopped: [0-9]* windows, \([0-9]*\) samples exported.*/\1/p' "$TMP/retry.agent")
delivered=$(node -e "
const l = require('fs').readFileSync('$TMP/retry.rx.jsonl', 'utf8').split('\n').filter(Boolean).map(JSON.parse);
let t = 0; for (const x of l) if (x.answered === 0) for (const r of x.resources) for (const p of r.profiles) t += p.total;
console.log(t)")
dropped=$(($(stat_of retry shutdown)))
[ "$dropped" -gt 0 ] || [ "$delivered" = "$total" ] || fail "delivered $delivered samples of $total exported"
grep -q 'otlp: last error: gRPC UNAVAILABLE (14): failure injected by the test' "$TMP/retry.agent" ||
	fail "the last error does not name UNAVAILABLE"
pass "UNAVAILABLE twice: retried with backoff, then delivered ($delivered of $total samples, $dropped requests left at shutdown)"

# ---- 4. PERMISSION_DENIED ------------------------------------------------------------------------

start_receiver denied --grpc --status 7
refused() { grep -q 'request refused, not retried' "$TMP/denied.agent"; }
OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$RX_PORT" \
	run_agent denied refused -- --otlp
line=$(grep 'request refused' "$TMP/denied.agent" | head -1)
case "$line" in *" otlp: request refused, not retried: gRPC PERMISSION_DENIED (7): failure injected by the test") ;; *) false ;; esac ||
	fail "refusal line: $line"
[ "$(stat_of denied retried)" = 0 ] && [ "$(stat_of denied failed)" -ge 1 ] || fail "PERMISSION_DENIED was retried"
[ "$(grep -c 'request refused' "$TMP/denied.agent")" = 1 ] || fail "the same refusal said more than once"
pass "PERMISSION_DENIED: not retried, said once on stderr: $line"

# ---- 5. mutual TLS -------------------------------------------------------------------------------

PKI=$TMP/pki
mkdir -p "$PKI"
ec() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "$@" 2> /dev/null; }
ec -x509 -days 1 -subj /CN=spanprof-test-ca -keyout "$PKI/ca.key" -out "$PKI/ca.pem"
for who in server client; do
	ec -subj "/CN=spanprof-test-$who" -keyout "$PKI/$who.key" -out "$PKI/$who.csr"
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=%s\n' \
		"$([ $who = server ] && echo serverAuth || echo clientAuth)" > "$PKI/$who.ext"
	openssl x509 -req -days 1 -in "$PKI/$who.csr" -CA "$PKI/ca.pem" -CAkey "$PKI/ca.key" \
		-CAcreateserial -extfile "$PKI/$who.ext" -out "$PKI/$who.pem" 2> /dev/null
done
start_receiver mtls --grpc --tls-cert "$PKI/server.pem" --tls-key "$PKI/server.key" --client-ca "$PKI/ca.pem"
export OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_EXPORTER_OTLP_ENDPOINT="https://127.0.0.1:$RX_PORT"
export OTEL_EXPORTER_OTLP_CERTIFICATE=$PKI/ca.pem
OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=$PKI/client.pem OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY=$PKI/client.key \
	run_agent mtls at_least "$TMP/mtls.rx.jsonl" 2 -- --otlp
grep -q 'otlp: gRPC https://.*, client certificate)' "$TMP/mtls.agent" || fail "the start line does not say client certificate"
S=$(summary "$TMP/mtls.rx.jsonl" $SERVICE) || fail "$S"
[ "$(field "$S" 'answered.every((a) => a === 0)')" = true ] && [ "$(field "$S" service_total)" -gt 0 ] || fail "mTLS: $S"
[ "$(stat_of mtls sent)" = "$(field "$S" requests)" ] || fail "mTLS: sent $(stat_of mtls sent), received $(field "$S" requests)"
pass "mutual TLS with the client certificate: $(field "$S" requests) calls accepted"

n=$(lines "$TMP/mtls.rx.jsonl")
windows3() { [ "$(grep -c 'window [0-9]*:' "$TMP/nocert.agent")" -ge 3 ]; }
run_agent nocert windows3 -- --otlp
[ "$(lines "$TMP/mtls.rx.jsonl")" = "$n" ] || fail "a call without a client certificate was accepted"
[ "$(stat_of nocert sent)" = 0 ] || fail "sent without a client certificate"
grep -q 'otlp: last error: curl: ' "$TMP/nocert.agent" || fail "no TLS error reported"
pass "without the client certificate: refused in the handshake ($(grep 'last error' "$TMP/nocert.agent" | sed 's/.*last error: //'))"

rc=0
OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=$PKI/missing.pem "$SPANPROF" agent --otlp > "$TMP/badcert.out" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "the agent started with a client certificate that is not there"
[ "$(wc -l < "$TMP/badcert.out")" = 1 ] && grep -q "client certificate '$PKI/missing.pem' unreadable" "$TMP/badcert.out" ||
	fail "bad certificate path: $(cat "$TMP/badcert.out")"
pass "a missing client certificate: exit $rc at start, one line: $(cat "$TMP/badcert.out")"
unset OTEL_EXPORTER_OTLP_PROTOCOL OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_CERTIFICATE
stop "$BURNER"
