#!/usr/bin/env bash
# walk.sh: the sampler's own user stack walker against the kernel's. With the check-walk variant
# (SPANPROF_BPF_VARIANT) the sampler walks every stack both ways and counts the samples where
# the two differ in any entry: on a .NET service under load, native busy loops, and every other
# process on the host, none may. Then the default sampler's profile keeps the callers the
# kernel's walker finds (the service's request path).
. "$(dirname "$0")/lib.sh"
need_root
SVC=$BUILD/apps/SpanService/SpanService.dll
LOADGEN=$BUILD/apps/LoadGen/LoadGen.dll
need_built "$SVC" "$LOADGEN" "$HOTCHAIN"

start_app --ready-file "$TMP/svc.ready" "$TMP/svc.out" \
	env SPANSERVICE_READY="$TMP/svc.ready" DOTNET_PerfMapEnabled=1 dotnet "$SVC" --port 0
svc=$APP_PID
port=$(node -pe "JSON.parse(require('fs').readFileSync('$TMP/svc.ready')).port")
spawn "$TMP/load.out" dotnet "$LOADGEN" --url "http://127.0.0.1:$port" --concurrency 32 \
	--duration 30 --paths '/work/a,/work/b,/work/labels?tenant=acme'
start_app --pid-line --timeout 30 "$TMP/hot.out" "$HOTCHAIN" 30
sleep 2

# Host-wide at 999 Hz: the walks must agree on every sample.
SPANPROF_BPF_VARIANT=check-walk record check.pb.gz -F 999 -d 6 -v 2> "$TMP/check.err"
grep -q 'sampler variant: check-walk' "$TMP/check.err" || { cat "$TMP/check.err"; fail "the variant was not taken"; }
last=$(grep 'samples=' "$TMP/check.err" | tail -1)
taken=$(echo "$last" | sed -n 's/.* samples=\([0-9]*\).*/\1/p')
mism=$(echo "$last" | sed -n 's/.* walk_mismatch=\([0-9]*\).*/\1/p')
note "check-walk: $taken samples, $mism where the walks differ"
[ -n "$mism" ] || { echo "$last"; fail "no walk_mismatch counter in the -v line"; }
[ "$taken" -ge 3000 ] || fail "only $taken samples in 6 s at 999 Hz on a busy host"
[ "$mism" = 0 ] || fail "the sampler's walk and the kernel's differ on $mism of $taken samples"
decode "$TMP/check.pb.gz"
n_svc=$(count_samples "$TMP/check.json" --pid "$svc")
[ "$n_svc" -ge 500 ] || fail "only $n_svc samples of the service"
pass "check-walk: both walkers agree on all $taken samples ($n_svc of the .NET service)"

# The default sampler (its own walker): the request path keeps its callers down to the thread
# start, as with the kernel's walker.
record own.pb.gz -p "$svc" -F 499 -d 4
SPANPROF_BPF_VARIANT=kernel-walk record kern.pb.gz -p "$svc" -F 499 -d 4 2> /dev/null
for v in own kern; do
	decode "$TMP/$v.pb.gz"
	c=$(query chain "$TMP/$v.json" --pid "$svc" --leaf 'HotWork' --chain 'SpanService\.Program|Microsoft\.AspNetCore,HotWork')
	eval "chain_$v=\$(field \"\$c\" frac)"
done
note "HotWork under the request path: own walker $chain_own, kernel's $chain_kern"
ge "$chain_own" 0.9 || fail "own walker: HotWork reaches the request path in only $chain_own of its samples"
ge "$chain_own" "$(awk -v k="$chain_kern" 'BEGIN { print k - 0.05 }')" ||
	fail "own walker keeps fewer callers ($chain_own) than the kernel's ($chain_kern)"
pass "own walker: callers kept as by the kernel's ($chain_own vs $chain_kern)"
