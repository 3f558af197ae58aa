#!/bin/sh
# bench.sh: run spanprof's benchmarks (`make bench`) and print their figures; nothing here passes or fails.
# One section per benchmark: add a section function and call it from the list at the bottom.
set -eu
cd "$(dirname "$0")/.."

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

# ---- sampler: BPF run time per sample and user-space CPU per 1000 samples, host-wide ------------
bench_sampler() {
	section "sampler (host-wide, two busy processes; BPF run time from BPF_ENABLE_STATS)"
	"$BUILD/apps/native/hotchain" 30 > /dev/null & h1=$!
	"$BUILD/apps/native/hotchain" 30 > /dev/null & h2=$!
	for hz in 99 999; do
		echo "-- $hz Hz, 10 s"
		"$BUILD/spanprof" record -F "$hz" -d 10 --bpf-stats -o "$BUILD/bench/sampler.pb.gz" |
			grep -E 'samples taken|sampler cost|user space'
	done
	kill "$h1" "$h2" 2>/dev/null || true
	wait 2>/dev/null || true
}

# ---- sampler parts: BPF run time per sample on SpanService, without each part in turn ----------
bench_parts() {
	section "sampler parts (SpanService under LoadGen; variants of the BPF program)"
	BUILD=$BUILD ./scripts/bench-sampler.sh
}

# ---- hook: cost per ExecutionContext switch (BenchmarkDotNet; minutes) ----------------------------
bench_hook() {
	section "hook (BenchmarkDotNet)"
	./scripts/bench-hook.sh
}

# ---- the application's cost, side by side: off, hook, record, spanprof, agent, perf, dotnet-trace ---
bench_service() {
	section "service: spanprof against perf and dotnet-trace (ratios to no profiler)"
	BUILD=$BUILD ./scripts/bench-service.sh
}

# ---- sampling's cost within one run: profilers switched off and on in slices (about 35 minutes) ---
bench_slices() {
	section "slices: spanprof, perf and dotnet-trace switched off and on (SpanLoop, on/off ratios)"
	BUILD=$BUILD ./scripts/bench-slices.py
}

# ---- the agent at node scale: 1, 10, 25, 50 .NET services (about 30 minutes) --------------------
bench_node() {
	section "node: the agent with N .NET services"
	BUILD=$BUILD ./scripts/bench-node.sh
}

# ---- memory against samples taken: record, and the agent's windows (about 15 minutes) ----------
bench_growth() {
	section "growth: RSS after 10^5, 10^6, 10^7 samples"
	BUILD=$BUILD ./scripts/bench-growth.sh
}

# ---- off-CPU: BPF time per context switch, unprofiled and profiled; throughput with --off-cpu ----
bench_offcpu() {
	section "offcpu: --off-cpu at a high context-switch rate (pipe ping-pong between two threads)"
	BUILD=$BUILD ./scripts/bench-offcpu.sh
}

# ---- sections run, in order (BENCH="perfmap sampler" runs a subset) ----
uptime | sed 's/^/load: /'
for b in ${BENCH:-perfmap sampler parts offcpu hook service slices node growth}; do
	"bench_$b"
done
