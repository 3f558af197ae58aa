/* gens.bpf.h: the generations map (bpf/profiler.h SP_GEN_*), one definition for both BPF objects;
 * user space shares it between them (bpf_map__reuse_fd) and maps it. */
#ifndef SPANPROF_GENS_BPF_H
#define SPANPROF_GENS_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, SP_GEN__MAX);
	__type(key, __u32);
	__type(value, __u64);
} gens SEC(".maps");

#endif
