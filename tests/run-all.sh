#!/usr/bin/env bash
# run-all.sh: every test suite of `make test` (unit, hook, fuzz check, integration), each test under
# a deadline that names what hung; runs them all whatever fails, ends with one line
# "tests: N passed, N failed, N skipped" and exits non-zero if any failed.
# SUITES="unit integration" picks suites; TESTS="native errors" picks integration tests.
set -uo pipefail
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
SUITES=${SUITES:-unit hook fuzz integration}
UNIT_TIMEOUT=${UNIT_TIMEOUT:-300}		# seconds per unit test program
HOOK_TIMEOUT=${HOOK_TIMEOUT:-900}		# the hook's xunit tests, build included
FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-300}		# per fuzz target's corpus check
INTEGRATION_TIMEOUT=${INTEGRATION_TIMEOUT:-900}	# per integration script
IMAGE_TIMEOUT=${IMAGE_TIMEOUT:-2100}		# image.sh (debootstrap, podman build)

passed=() failed=() skipped=()

# run NAME SECS CMD...: one test; exit 77 is a skip, 124/137 a hang past SECS seconds.
run() {
	local name=$1 secs=$2 start rc
	shift 2
	echo "=== $name"
	start=$(date +%s)
	timeout --kill-after=10 "$secs" "$@"
	rc=$?
	case $rc in
	0) passed+=("$name") ;;
	77) skipped+=("$name") ;;
	124 | 137) echo "TIMEOUT: $name hung: no end after $secs s (killed)" >&2; failed+=("$name") ;;
	*) failed+=("$name") ;;
	esac
	echo "=== $name: rc=$rc ($(($(date +%s) - start)) s)"
}

suite_unit() {
	local t
	for t in "$BUILD"/tests/test_*; do
		[ -x "$t" ] && run "unit/${t##*/}" "$UNIT_TIMEOUT" "$t"
	done
}

suite_hook() {
	run hook/xunit "$HOOK_TIMEOUT" make --no-print-directory BUILD="$BUILD" hooktest
}

suite_fuzz() {
	local t
	for t in $(make --no-print-directory -s BUILD="$BUILD" print-fuzz-targets); do
		run "fuzz/$t" "$FUZZ_TIMEOUT" make --no-print-directory BUILD="$BUILD" FUZZ_TARGETS="$t" fuzzcheck
	done
}

suite_integration() {
	local t
	for t in ${TESTS:-$(ls tests/integration/*.sh | xargs -n1 basename | sed 's/\.sh$//' |
		grep -vx -e lib -e nsrun)}; do
		# image.sh builds a Debian base and the image on a fresh machine: its own, longer deadline.
		run "integration/$t" "$([ "$t" = image ] && echo "$IMAGE_TIMEOUT" || echo "$INTEGRATION_TIMEOUT")" \
			bash "tests/integration/$t.sh"
	done
}

for s in $SUITES; do
	"suite_$s"
done
[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
[ ${#skipped[@]} -eq 0 ] || echo "skipped: ${skipped[*]}"
echo "tests: ${#passed[@]} passed, ${#failed[@]} failed, ${#skipped[@]} skipped"
[ ${#failed[@]} -eq 0 ]
