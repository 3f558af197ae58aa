#!/usr/bin/env bash
# bench-hook.sh: BenchmarkDotNet figures for the managed hook (ns per ExecutionContext switch, per span, per label).
#
# Not part of `make test`. Usage: scripts/bench-hook.sh [BenchmarkDotNet args...]
#   JOB=short|medium|long (default short), FILTER='*EcSwitch*' (default all).
# Results (markdown, csv) go to $BUILD/bench-hook/results/; the tables are printed at the end.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
ARTIFACTS=$BUILD/bench-hook
rm -rf "$ARTIFACTS/results"
dotnet run -c Release --project "$ROOT/hook/bench/SpanProf.Hook.Bench.csproj" -- \
	--filter "${FILTER:-*}" --job "${JOB:-short}" --artifacts "$ARTIFACTS" "$@"
echo
for f in "$ARTIFACTS"/results/*-report-github.md; do
	[ -e "$f" ] || continue
	echo "== $(basename "$f" -report-github.md)"
	grep -E '^\|' "$f"
	echo
done
