/* symbolize.h: sampled addresses -> named frames (kernel, native ELF, runtime code, fallback).
 * Frames persist across windows; a process's frames are freed with it. */
#ifndef SPANPROF_SYMBOLIZE_H
#define SPANPROF_SYMBOLIZE_H

#include <stdint.h>

#include "aggregate.h"
#include "leafunwind.h"

struct proc;
struct proctab;
struct symsrv;

#define SYM_REFUSED_NAMED 4	/* debug-file refusals named in the stats (all are counted) */

struct symbolizer_opts {
	const char *kallsyms;	/* "/proc/kallsyms" */
	int show_tiers;		/* append " [OptimizedTier1]" etc. to .NET frame names */
	uint64_t maps_refresh_ns;	/* minimum interval between re-reads of a process's maps */
	uint32_t max_frames;	/* distinct frames per process; past it: one [truncated] frame (0: no cap) */
	struct symsrv *symsrv;	/* debug files by build id for files without .symtab; NULL: none */
};

struct symbolizer_stats {
	uint64_t frames;	/* distinct (process, address) frames */
	uint64_t jit_named;	/* runtime frames named from a perf map / jitdump */
	uint64_t jit_unnamed;	/* runtime frames outside every known range */
	uint64_t jit_copied;	/* runtime frames in a copy of library code, named as that code */
	uint64_t unnamed_by[5];	/* jit_unnamed by enum rt_unnamed: [1] no perf map / image entry,
				 * [2] jitdump stopped, [3] image unreadable or not R2R,
				 * [4] perf maps withheld (the runtime has a known hazard) */
	uint64_t native_named;
	uint64_t native_function;	/* no symbol: "lib.so!0x<function start>" from .eh_frame */
	uint64_t native_unnamed;	/* module+offset */
	uint64_t aot_named;	/* Native AOT methods named as .NET methods from their symbols */
	uint64_t aot_raw;	/* Native AOT methods whose symbol could not be read back for certain */
	uint64_t debug_attached;	/* debug files from the symbol servers put to use */
	uint64_t debug_refused;		/* files whose debug file outside their root was refused */
	uint64_t opened_by_handle;	/* mapped files opened through /proc/<pid>/map_files (needs
					 * CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN) */
	uint64_t opened_by_path;	/* ... through their path inside the process's root instead */
	uint32_t refused_named[SYM_REFUSED_NAMED];	/* "binary (pid N): debug file", string ids */
	uint32_t n_refused_named;
	uint64_t unknown;	/* no mapping, or anonymous memory no runtime claims ([heap]) */
	uint64_t unmapped_named;	/* in no mapping, or in data, when first seen (maps not
					 * read again so soon), named at the end of the window */
	uint64_t off_code;	/* return addresses in anonymous data memory (symbolizer__ends_chain) */
	uint64_t kernel;
	uint64_t forgotten;	/* frames freed with their exited process */
	/* ELF tables and the symbol budget (--max-symbol-mb) */
	uint64_t elf_evicted;	/* least recently used tables dropped to make room */
	uint64_t elf_over_budget;	/* tables read and not kept: no room even after evicting */
	uint64_t elf_reloaded;	/* dropped tables read again for a new frame */
	uint64_t elf_idle_released;	/* tables dropped after going unused (agent) */
	uint64_t elf_not_held;	/* frames named module+offset because their table was not held */
	uint64_t truncated;	/* frames past a process's max_frames, shown as [truncated] */
	uint64_t leaf[LEAF__MAX];	/* samples by what became of their leaf's caller (leafunwind.h) */
	int kernel_hidden;	/* kallsyms addresses are zeroed (kptr_restrict) */
	uint64_t bytes;		/* held by the tables every process shares (names, kernel frames,
				 * the files met); ELF tables are the symbol budget's */
	uint64_t kernel_symbols_bytes;	/* the kallsyms table */
};

struct symbolizer;

/* Frame ids: user frames are per process; kernel frames carry this bit. */
#define SYM_KERNEL_FRAME 0x80000000u

/* Constructor returns NULL and sets errno. */
struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts);
void symbolizer__free(struct symbolizer *sym);	/* NULL-safe; forget every process first */

/*
 * A frame id for a user address of p (leaf: the interrupted instruction; otherwise a return
 * address, looked up at addr - 1). Native frames are named now, while the process lives; code a
 * runtime claims (JIT, ReadyToRun) is named in symbolizer__finish, after the runtime's last poll.
 * Returns a frame id, or -ENOMEM.
 */
int64_t symbolizer__user(struct symbolizer *sym, struct proc *p, uint64_t addr, int leaf,
			 uint64_t time_ns);
/* Whether user frame id of p is a return address in anonymous memory that was not executable
 * after its sample (maps read since): the frame-pointer walk left the stack's frames there, so
 * no frame past it is a caller (it is named "[callers lost: frame chain left code]"; the caller
 * ends the stack with it). */
int symbolizer__ends_chain(const struct proc *p, int64_t id);
/*
 * Put back the caller of the sampled leaf of p when the leaf has not set up its frame (no frame,
 * or ip in its prologue or epilogue): frames holds the walked user stack (*n, leaf first, room
 * for cap), r the registers and stack words the sampler copied. Native code is judged by its
 * CFI, runtime code by its method's prologue (the first bytes read once per method). Counted in
 * stats.leaf by outcome. Returns the enum leaf_outcome, or -ENOMEM.
 */
int symbolizer__leaf(struct symbolizer *sym, struct proc *p, const struct leaf_regs *r,
		     uint64_t *frames, size_t *n, size_t cap, uint64_t time_ns);
int64_t symbolizer__kernel(struct symbolizer *sym, uint64_t addr, int leaf);
/*
 * Whether kernel frame id (from symbolizer__kernel) is a BPF program or the tracepoint code that
 * called it (bpf_trace_run*, __bpf_trace_*, __traceiter_*, or unnamed). A stack taken in a
 * tracepoint starts with them; how many there are depends on the kernel and on how many probes the
 * tracepoint has, so a reader drops them by name rather than skip a fixed count.
 */
int symbolizer__kernel_tracing(const struct symbolizer *sym, int64_t id);

/* Name every pending frame of every process in pt. Call after the runtimes' last poll for the
 * window. A frame still unnamed keeps a fallback name and is tried again next time. 0 or -errno. */
int symbolizer__finish(struct symbolizer *sym, struct proctab *pt);

/* The same for one process (it exited: what its runtimes hold now is all there will be). Both
 * also name again the frames of files whose debug file arrived from the symbol servers. */
int symbolizer__finish_proc(struct symbolizer *sym, struct proc *p);

/* Files still waiting for a debug file from the symbol servers. */
int symbolizer__awaiting(const struct symbolizer *sym);

/* The string behind a string id of the stats (refused_named), NULL for 0. */
const char *symbolizer__string(const struct symbolizer *sym, uint32_t id);

/* The frame as a profile needs it (p: NULL for kernel frames). 0, or -ENOENT. */
int symbolizer__frame(const struct symbolizer *sym, const struct proc *p, uint32_t id,
		      struct agg_frame *out);

/* Free the frames of p (it exited); its ids become invalid. */
void symbolizer__forget(struct symbolizer *sym, struct proc *p);
/* Drop the ELF tables no lookup used in the last idle_ns (sample clock; now: CLOCK_MONOTONIC):
 * read again when a new frame needs one. Frames already named keep their names. */
void symbolizer__release_idle(struct symbolizer *sym, uint64_t now, uint64_t idle_ns);

void symbolizer__stats(const struct symbolizer *sym, struct symbolizer_stats *out);
/* Bytes held for p's frames (its frame and mapping tables, JIT leaf code). */
uint64_t symbolizer__proc_bytes(const struct proc *p);

#endif /* SPANPROF_SYMBOLIZE_H */
