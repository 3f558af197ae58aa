#!/bin/sh
# bench.sh: run spanprof's benchmarks (`make bench`) and print their figures; nothing here passes or fails.
# One section per benchmark: a line in SCRIPTS (one script each) or a bench_NAME function, and its
# name in the list at the bottom.
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

# ---- elfsym: ELF symbol table load and lookup on real libraries (libc, libcoreclr) ----
bench_elfsym() {
	section "elfsym (load best of 10, lookup ns over the executable segment)"
	"$BUILD/bench/bench_elfsym"
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

# ---- the sections that are one script each: name, script, title (docs/benchmarks.md has each) ----
SCRIPTS='
robust   bench-robust.sh    the robustness tests' speed figures: stalled processes (stalls.sh), hostile ones (hostile.sh)
collide  bench-collide.sh   record on a process forging frames that collide under the former hash, against random ones
parts    bench-sampler.sh   sampler parts: BPF run time per sample on SpanService, without each part in turn
syscall  bench-syscall.sh   an unrelated process: getppid and mmap with no spanprof, agent, record (about 2 minutes)
offcpu   bench-offcpu.sh    --off-cpu at a high context-switch rate: BPF time per switch, throughput
handoff  bench-handoff.sh   --off-cpu on a .NET ring of threads handing work along and on a saturated web service: BPF time per switch, throughput side by side (about 14 minutes)
hook     bench-hook.sh      the hook: cost per ExecutionContext switch (BenchmarkDotNet; minutes)
service  bench-service.sh   the service side by side: spanprof, perf, dotnet-trace (ratios to none)
slices   bench-slices.py    profilers switched off and on in slices of one run (about 35 minutes)
node     bench-node.sh      the agent with N .NET services (about 30 minutes)
growth   bench-growth.sh    RSS after 10^5, 10^6, 10^7 samples (about 15 minutes)
enable   bench-enable.sh    p99 and req/s around turning perf maps on in 1, 10, 50 services (about 6 minutes)
pod      bench-pod.sh       one pod compiling code all the time: its /tmp bytes and names (30 minutes)
soak     bench-soak.sh      the agent for an hour with 50 .NET processes restarting (60 minutes)
'

run_section() {
	line=$(printf '%s\n' "$SCRIPTS" | awk -v b="$1" '$1 == b')
	if [ -z "$line" ]; then
		"bench_$1"
		return
	fi
	set -- $line
	name=$1 script=$2
	shift 2
	section "$name: $*"
	BUILD=$BUILD "./scripts/$script"
}

# ---- sections run, in order (BENCH="perfmap sampler" runs a subset) ----
uptime | sed 's/^/load: /'
for b in ${BENCH:-perfmap hash elfsym robust collide syscall sampler parts offcpu handoff hook service slices node growth enable pod soak}; do
	run_section "$b"
done
