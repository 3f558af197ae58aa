#!/usr/bin/env bash
# run-integration.sh: run every tests/integration/*.sh; exit non-zero if any fails.
# A test that exits 77 is reported as skipped. TESTS="native errors" runs a subset.
set -uo pipefail
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}

failed=() skipped=() passed=()
list=${TESTS:-$(ls tests/integration/*.sh | xargs -n1 basename | sed 's/\.sh$//' | grep -vx -e lib -e nsrun)}
for t in $list; do
	echo "=== integration: $t"
	start=$(date +%s)
	bash "tests/integration/$t.sh"
	rc=$?
	echo "=== $t: rc=$rc ($(( $(date +%s) - start ))s)"
	case $rc in
	0) passed+=("$t") ;;
	77) skipped+=("$t") ;;
	*) failed+=("$t") ;;
	esac
done
echo "integration tests: passed (${passed[*]:-}), skipped (${skipped[*]:-}), failed (${failed[*]:-})"
echo "integration: ${#passed[@]} passed, ${#failed[@]} failed, ${#skipped[@]} skipped"
[ ${#failed[@]} -eq 0 ]
