#!/usr/bin/env bash
# offcpu-places.sh: offcpu.sh with every block's stacks and span taken at its switch-out, from its
# place (the test build's SPANPROF_BPF_VARIANT=offcpu-places): what a kernel without rseq_update,
# or a thread not registered with rseq (musl), gets.
OFFCPU_PLACES=1 exec bash "$(dirname "$0")/offcpu.sh"
