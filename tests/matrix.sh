#!/usr/bin/env bash
# matrix.sh: make test-matrix: the frame, span and off-CPU integration tests over every shape .NET ships in
# (make shapes), one cell per (shape, test case), and the table of them (tests/matrix-table.js).
#   MATRIX_SHAPES="rt11 aot" picks shapes (default: all); MATRIX_OUT: where rows and logs go.
# Shapes: fd/10 (framework-dependent, the installed runtime), composite/10, aot/10, trimmed/10,
# sc/8, sc/9 (self-contained on the runtime packs of 8 and 9), sc/11 (runtime 11.0).
# Each test prints its cells (lib.sh matrix_row); a test's exit code is a row of its own.
set -uo pipefail
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
S=$BUILD/shapes
OUT=${MATRIX_OUT:-$BUILD/matrix}
TIMEOUT=${INTEGRATION_TIMEOUT:-900}
mkdir -p "$OUT"
export MATRIX_ROWS=$OUT/rows.jsonl
: > "$MATRIX_ROWS"
# The bar of issue 32 for spans in every cell.
export SPAN_BAR=${SPAN_BAR:-0.99}

# cell SHAPE TEST [VAR=VALUE...]: tests/integration/TEST.sh with those variables, its log in $OUT.
cell() {
	local shape=$1 t=$2 log start rc
	shift 2
	log=$OUT/${shape//\//-}.$t.log
	echo "=== $shape $t"
	start=$(date +%s)
	env MATRIX_SHAPE="$shape" "$@" timeout --kill-after=10 "$TIMEOUT" bash "tests/integration/$t.sh" > "$log" 2>&1
	rc=$?
	grep -E '^(ok|FAIL|SKIP|matrix):' "$log" | sed 's/^/  /'
	node -e 'console.log(JSON.stringify({ shape: process.argv[1], test: process.argv[2], case: "(exit)",
		status: process.argv[3] === "0" ? "pass" : process.argv[3] === "77" ? "skip" : "fail",
		rc: Number(process.argv[3]), seconds: Number(process.argv[4]) }))' \
		"$shape" "$t" "$rc" "$(($(date +%s) - start))" >> "$MATRIX_ROWS"
	echo "=== $shape $t: rc=$rc ($(($(date +%s) - start)) s)"
}

shape_fd() { cell fd/10 dotnet-frames; cell fd/10 spans; cell fd/10 offcpu; }
shape_composite() {
	cell composite/10 dotnet-r2r R2R_APP="$(realpath -m "$S/composite/CoreLibMix/CoreLibMix")"
	cell composite/10 dotnet-frames FRAMES_APP="$(realpath -m "$S/composite/HotChain/HotChain")"
	cell composite/10 spans SVC_EXE="$(realpath -m "$S/composite/SpanService/SpanService")"
	cell composite/10 offcpu OFFCPU_EXE="$(realpath -m "$S/composite/OffCpu/OffCpu")"
}
shape_aot() {
	cell aot/10 dotnet-aot MATRIX=1 AOT_APP="$(realpath -m "$S/aot/HotChain/HotChain")"
	cell aot/10 spans SVC_EXE="$(realpath -m "$S/aot/SpanService/SpanService")"
	cell aot/10 offcpu OFFCPU_EXE="$(realpath -m "$S/aot/OffCpu/OffCpu")"
}
# sc_shape SHAPE-NAME DIR [VAR=VALUE...]: frames and spans of the self-contained builds in $S/DIR.
sc_shape() {
	local name=$1 dir=$2
	shift 2
	cell "$name" dotnet-frames FRAMES_APP="$(realpath -m "$S/$dir/HotChain/HotChain")" "$@"
	cell "$name" spans SVC_EXE="$(realpath -m "$S/$dir/SpanService/SpanService")"
	cell "$name" offcpu OFFCPU_EXE="$(realpath -m "$S/$dir/OffCpu/OffCpu")"
}
# The trimmer rewrites every assembly it trims as IL only (CoreLib: 2.4 MB, not the 15.6 MB of the
# runtime pack's ReadyToRun one): no ReadyToRun code to name.
shape_trimmed() { sc_shape trimmed/10 trimmed NO_R2R_CODE=1; }
shape_rt8() { sc_shape sc/8 rt8; }
shape_rt9() { sc_shape sc/9 rt9; }
shape_rt11() { sc_shape sc/11 rt11; }

start=$(date +%s)
for s in ${MATRIX_SHAPES:-fd composite aot trimmed rt8 rt9 rt11}; do
	"shape_$s"
done
node tests/matrix-table.js "$MATRIX_ROWS" | tee "$OUT/table.md"
echo "matrix: $(($(date +%s) - start)) s"
# Every cell's test passed (a not-run cell is in the table, and fails nothing).
! grep -q '"case":"(exit)","status":"fail"' "$MATRIX_ROWS"
