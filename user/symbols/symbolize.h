/* symbolize.h: sampled addresses -> profile locations (kernel, native ELF, .NET JIT, fallback). */
#ifndef SPANPROF_SYMBOLIZE_H
#define SPANPROF_SYMBOLIZE_H

#include <stdint.h>

struct profile;
struct proc;

struct symbolizer_opts {
	const char *kallsyms;	/* "/proc/kallsyms" */
	int show_tiers;		/* append " [OptimizedTier1]" etc. to .NET frame names */
	uint64_t maps_refresh_ns;	/* minimum interval between re-reads of a process's maps */
};

struct symbolizer_stats {
	uint64_t frames;	/* distinct (process, address) frames */
	uint64_t jit_named;	/* .NET frames named from a perf map / jitdump */
	uint64_t jit_unnamed;	/* .NET frames outside every known range */
	uint64_t native_named;
	uint64_t native_unnamed;	/* module+offset */
	uint64_t unknown;	/* no mapping at all */
	uint64_t kernel;
	int kernel_hidden;	/* kallsyms addresses are zeroed (kptr_restrict) */
};

struct symbolizer;

/* Constructor returns NULL and sets errno. Locations are interned into prof. */
struct symbolizer *symbolizer__new(struct profile *prof, const struct symbolizer_opts *opts);
void symbolizer__free(struct symbolizer *sym);	/* NULL-safe */

/*
 * A frame id for a user address of p (leaf: the interrupted instruction; otherwise a return
 * address, looked up at addr - 1). Native frames are named now, while the process lives; .NET
 * JIT candidates are named in symbolizer__finish, after the last perf map read. Returns a frame
 * id, or -ENOMEM.
 */
int64_t symbolizer__user(struct symbolizer *sym, struct proc *p, uint64_t addr, int leaf,
			 uint64_t time_ns);
int64_t symbolizer__kernel(struct symbolizer *sym, uint64_t addr, int leaf);

/* Name every pending frame. Call once, after the last dotnetproc__poll. 0 or -errno. */
int symbolizer__finish(struct symbolizer *sym);

/* Profile location of a frame id (after finish for .NET frames). */
uint32_t symbolizer__location(const struct symbolizer *sym, uint32_t frame);

void symbolizer__stats(const struct symbolizer *sym, struct symbolizer_stats *out);

#endif /* SPANPROF_SYMBOLIZE_H */
