/* symbolize.h: sampled addresses -> named frames (kernel, native ELF, runtime code, fallback).
 * Frames persist across windows; a process's frames are freed with it. */
#ifndef SPANPROF_SYMBOLIZE_H
#define SPANPROF_SYMBOLIZE_H

#include <stdint.h>

#include "aggregate.h"

struct proc;
struct proctab;

struct symbolizer_opts {
	const char *kallsyms;	/* "/proc/kallsyms" */
	int show_tiers;		/* append " [OptimizedTier1]" etc. to .NET frame names */
	uint64_t maps_refresh_ns;	/* minimum interval between re-reads of a process's maps */
	uint32_t max_frames;	/* distinct frames per process; past it: one [truncated] frame (0: no cap) */
};

struct symbolizer_stats {
	uint64_t frames;	/* distinct (process, address) frames */
	uint64_t jit_named;	/* runtime frames named from a perf map / jitdump */
	uint64_t jit_unnamed;	/* runtime frames outside every known range */
	uint64_t unnamed_by[4];	/* jit_unnamed by enum rt_unnamed: [1] no perf map / image entry,
				 * [2] jitdump stopped, [3] image unreadable or not R2R */
	uint64_t native_named;
	uint64_t native_unnamed;	/* module+offset */
	uint64_t unknown;	/* no mapping, or anonymous memory no runtime claims ([heap]) */
	uint64_t kernel;
	uint64_t forgotten;	/* frames freed with their exited process */
	uint64_t truncated;	/* frames past a process's max_frames, shown as [truncated] */
	int kernel_hidden;	/* kallsyms addresses are zeroed (kptr_restrict) */
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
int64_t symbolizer__kernel(struct symbolizer *sym, uint64_t addr, int leaf);

/* Name every pending frame of every process in pt. Call after the runtimes' last poll for the
 * window. A frame still unnamed keeps a fallback name and is tried again next time. 0 or -errno. */
int symbolizer__finish(struct symbolizer *sym, struct proctab *pt);

/* The same for one process (it exited: what its runtimes hold now is all there will be). */
int symbolizer__finish_proc(struct symbolizer *sym, struct proc *p);

/* The frame as a profile needs it (p: NULL for kernel frames). 0, or -ENOENT. */
int symbolizer__frame(const struct symbolizer *sym, const struct proc *p, uint32_t id,
		      struct agg_frame *out);

/* Free the frames of p (it exited); its ids become invalid. */
void symbolizer__forget(struct symbolizer *sym, struct proc *p);

void symbolizer__stats(const struct symbolizer *sym, struct symbolizer_stats *out);

#endif /* SPANPROF_SYMBOLIZE_H */
