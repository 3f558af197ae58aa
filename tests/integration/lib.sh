# lib.sh: shared helpers for the integration tests (sourced). Real kernel, real BPF, real processes.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SPANPROF=$BUILD/spanprof
TOOLS=$ROOT/tests/tools
GO=/usr/lib/go-1.19/bin/go
HOTCHAIN=$BUILD/apps/native/hotchain	# from `make tools`
FORGED=$BUILD/apps/native/forged_table
# Under build/, not /tmp: tests run apps in mount namespaces with a private /tmp, and their files
# must stay visible from the host.
mkdir -p "$BUILD/tmp"
TMP=$(mktemp -d "$BUILD/tmp/it.XXXXXX")
PIDS_TO_KILL=()

cleanup() {
	for p in "${PIDS_TO_KILL[@]:-}"; do
		[ -n "$p" ] && kill -TERM "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	# The .NET runtime never removes the perf maps of the apps we started.
	for p in "${PIDS_TO_KILL[@]:-}"; do
		[ -n "$p" ] && rm -f "/tmp/perf-$p.map" "/tmp/jit-$p.dump"
	done
	rm -rf "$TMP"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
note() { echo "  $*"; }

need_root() { [ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }; }
need_built() { for f; do [ -e "$f" ] || fail "$f missing: run make apps tools"; done; }

# The profile as JSON through the independent pprof-format decoder.
pprof_json() { node "$TOOLS/pprof-json.js" "$1"; }

# query.js SUBCOMMAND JSON-FILE ARGS...: stack statistics over a decoded profile.
query() { node "$ROOT/tests/integration/query.js" "$@"; }

# Compare floating-point numbers: ge A B -> A >= B
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

# Wait until a file has a line matching a pattern (max seconds).
wait_for_line() {
	local file=$1 pat=$2 secs=${3:-30}
	for _ in $(seq $((secs * 10))); do
		grep -q "$pat" "$file" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "timed out waiting for '$pat' in $file"
}
