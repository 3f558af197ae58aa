#!/usr/bin/env bash
# run-integration.sh: the integration suite alone (tests/run-all.sh does the work; TESTS="native
# errors" runs a subset). A test that exits 77 is reported as skipped.
exec env SUITES=integration "$(dirname "$0")/run-all.sh"
