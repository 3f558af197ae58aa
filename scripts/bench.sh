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

# ---- hash: the tables' keyed hash (SipHash-1-3) against the former unkeyed one, per-sample lookups ----
bench_hash() {
	section "hash (ns per hash by key length; lookups in a window's stacks and a process's addresses)"
	"$BUILD/bench/bench_hash"
}

# ---- collide: record's CPU on a process forging colliding frames, against random ones ------------
bench_collide() {
	section "collide (forged_stacks: frames forged to collide under the former hash, against random)"
	BUILD=$BUILD ./scripts/bench-collide.sh
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

# ---- the kernel hooks' cost to processes not profiled: getppid, mmap (about 2 minutes) ----------
bench_syscall() {
	section "syscall: an unrelated process's syscalls with no spanprof, agent, record (ratios)"
	BUILD=$BUILD ./scripts/bench-syscall.sh
}

# ---- the agent under an hour of churn: 50 .NET processes restarting (60 minutes; docs/benchmarks.md) ----
bench_soak() {
	section "soak: the agent for DURATION_MIN (60) minutes with N (50) .NET processes restarting"
	BUILD=$BUILD ./scripts/bench-soak.sh
}

# ---- one pod that generates code all the time: its /tmp bytes and names (30 minutes) -----------
bench_pod() {
	section "pod: /tmp bytes and names of an app compiling an Expression per request"
	BUILD=$BUILD ./scripts/bench-pod.sh
}

# ---- the pause when perf maps are turned on late, in 1, 10, 50 busy services (about 5 minutes) --
bench_enable() {
	section "enable: p99 and req/s per second around turning perf maps on"
	BUILD=$BUILD ./scripts/bench-enable.sh
}

# ---- off-CPU: BPF time per context switch, unprofiled and profiled; throughput with --off-cpu ----
bench_offcpu() {
	section "offcpu: --off-cpu at a high context-switch rate (pipe ping-pong between two threads)"
	BUILD=$BUILD ./scripts/bench-offcpu.sh
}

# ---- sections run, in order (BENCH="perfmap sampler" runs a subset) ----
uptime | sed 's/^/load: /'
for b in ${BENCH:-perfmap hash collide syscall sampler parts offcpu hook service slices node growth enable pod soak}; do
	"bench_$b"
done
