#!/usr/bin/env bash
# rtversion.sh: perf maps are never turned on in a runtime with a known perf map deadlock
# (dotnet/runtime#128401, .NET 10 before 10.0.11), nor in one whose version cannot be read; they
# are in a fixed one. Fake runtimes (tests/integration/fake_dotnet.py) carry the version string
# of the runtime they pass for, and answer EnablePerfMap. The report says why, per process.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd python3

FAKE=$ROOT/tests/integration/fake_dotnet.py

# fake NAME VERSION: a fake .NET process passing for runtime file version VERSION; sets APP_PID.
fake() {
	mkdir -p "$TMP/$1"
	FAKE_CORECLR_VERSION=$2 start_app --pid-line --timeout 10 "$TMP/$1.out" python3 "$FAKE" "$TMP/$1" 20 enable-only
}

fake affected 10.0.526.12345	# 10.0.5
affected=$APP_PID
fake fixed 10.0.1226.42308	# 10.0.12
fixed=$APP_PID
fake unknown none
unknown=$APP_PID
sleep 1	# older than the runtime start-up guard
SPANPROF_STATE_DIR=$TMP/state "$SPANPROF" record -p "$affected" -p "$fixed" -p "$unknown" -d 3 \
	-o "$TMP/r.pb.gz" > "$TMP/r.txt" 2>&1 || { cat "$TMP/r.txt"; fail "record failed"; }
grep -q "pid $affected .*perf maps not turned on: runtime 10.0.5 has a known deadlock (dotnet/runtime#128401)" "$TMP/r.txt" ||
	{ cat "$TMP/r.txt"; fail "the affected runtime's refusal is not in the report"; }
grep -q "pid $unknown .*perf maps not turned on: runtime version unknown" "$TMP/r.txt" ||
	{ cat "$TMP/r.txt"; fail "the unknown runtime's refusal is not in the report"; }
grep -q "pid $fixed .*runtime 10.0.12 (commit 0123456)" "$TMP/r.txt" ||
	{ cat "$TMP/r.txt"; fail "the fixed runtime's version is not in the report"; }
grep -q EnablePerfMap "$TMP/affected.out" && fail "EnablePerfMap sent to runtime 10.0.5"
grep -q EnablePerfMap "$TMP/unknown.out" && fail "EnablePerfMap sent to a runtime of unknown version"
grep -q EnablePerfMap "$TMP/fixed.out" || { cat "$TMP/r.txt"; fail "EnablePerfMap not sent to runtime 10.0.12"; }
pass "perf maps withheld from runtime 10.0.5 (#128401) and an unknown runtime, turned on in 10.0.12; the report says why"
