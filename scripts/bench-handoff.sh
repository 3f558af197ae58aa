#!/bin/sh
# bench-handoff.sh: what --off-cpu costs a context-switch-heavy .NET service (`make bench`, section
# handoff). The load is SpanLoop --handoff (tests/apps/SpanLoop/Handoff.cs): threads on one CPU
# handing tokens along a ring, a span and a short chunk per hand-off, each thread blocking at three
# places. Prints
#   1. BPF run time per context switch of an unprofiled thread and of a profiled one whose blocks
#      are all below the threshold (scripts/bench-offcpu.sh LOAD=handoff);
#   2. the hand-offs per second with spanprof record, with record --off-cpu and with --off-cpu
#      whose program returns at once (the floor) over none, side by side in slices of one run
#      (scripts/bench-slices.py TARGET=handoff);
#   3. the requests per second of SpanService saturated at 10 us a request (about 12,000 a second,
#      its threads switching about 22,000 times a second, 1,000 of them long blocks) with record
#      --off-cpu over none, side by side (TARGET=service CONCURRENCY=64 CHUNK_US=10).
# Figures only; nothing passes or fails. ROUNDS, PAIRS, SLICE as bench-slices.py (defaults 2, 10, 2).
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
LOAD=handoff BUILD=$BUILD ./scripts/bench-offcpu.sh
echo "-- throughput side by side (bench-slices.py TARGET=handoff)"
TARGET=handoff ARMS="none spanprof spanprof-offcpu offcpu-floor" ROUNDS=${ROUNDS:-2} PAIRS=${PAIRS:-10} \
	SLICE=${SLICE:-2} BUILD=$BUILD ./scripts/bench-slices.py
echo "-- a saturated web service side by side (bench-slices.py TARGET=service CHUNK_US=10)"
TARGET=service CONCURRENCY=64 CHUNK_US=10 ARMS="none spanprof-offcpu" ROUNDS=${ROUNDS:-2} \
	PAIRS=${PAIRS:-10} SLICE=${SLICE:-2} BUILD=$BUILD ./scripts/bench-slices.py
