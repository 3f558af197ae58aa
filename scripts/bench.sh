#!/bin/sh
# bench.sh: run spanprof's benchmarks (`make bench`) and print their figures; nothing here passes or fails.
# One section per benchmark: add a section function and call it from the list at the bottom.
set -eu

BUILD=${BUILD:-build}

section() {
	printf '\n==== %s ====\n' "$1"
}

# ---- perfmap: perf map / jitdump parse throughput, address lookup cost (1M synthetic lines) ----
bench_perfmap() {
	section "perfmap"
	if [ ! -x "$BUILD/bench/bench_perfmap" ]; then
		echo "bench.sh: $BUILD/bench/bench_perfmap missing; run make bench" >&2
		return 1
	fi
	"$BUILD/bench/bench_perfmap"
}

# ---- sections run, in order ----
uptime | sed 's/^/load: /'
bench_perfmap
