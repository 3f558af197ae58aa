/* symbolize_int.h: what the files of the symbolizer (symbolize.c) share: its state, a process's
 * frames and mappings, the ELF files read, and the calls between its parts. Not for use outside
 * user/symbols/sym*.c. */
#ifndef SPANPROF_SYMBOLIZE_INT_H
#define SPANPROF_SYMBOLIZE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "leafunwind.h"
#include "proctab.h"
#include "runtime.h"
#include "symbolize.h"

struct elfsym;
struct idmap;
struct intern;
struct ksyms;
struct aotnames;
struct leafcfi;

/* What tells one file's content from another's: a file rewritten in place keeps its device and
 * inode, not its size, times or build id. */
struct file_key {
	uint64_t dev, ino, size;
	int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
};

struct symfile {
	struct elfsym *es;	/* NULL: not ELF or unreadable, or not held (evicted, over budget) */
	struct file_key key;	/* the content its table was read from (a reload must match) */
	uint64_t charged;	/* bytes es took from the symbol budget */
	uint64_t last_used_ns;	/* sample time of its last lookup */
	uint64_t reload_after_ns;	/* evicted: read again on demand from then; 0: not evicted */
	uint32_t build_id;	/* string id, kept when es is not */
	uint8_t is_elf;		/* its table was read once: an ELF file whatever es is now */
	struct leafcfi *cfi;	/* its CFI, opened at the first leaf sample in it; NULL: none */
	uint64_t cfi_charged;	/* bytes cfi took from the symbol budget */
	int cfi_tried;
	struct aotnames *aot;	/* a Native AOT binary: its .NET names read back; NULL: not one */
	int aot_tried;
	uint32_t base;		/* basename, a string id */
	uint8_t awaiting;	/* its debug file was asked of the symbol servers, not there yet */
	uint8_t no_debug;	/* a debug file of its build id came and did not fit: not asked again */
	uint32_t attached_gen;	/* symbolizer attach_gen when its debug file came; 0: none */
};

/* What named a native frame, for the counters when a debug file renames it. */
enum { NK_NONE, NK_SYMBOL, NK_FUNCTION, NK_OFFSET };
/* JIT code a leaf was sampled in: the first bytes of the method, read once (leafunwind). */
#define LEAF_CODE_MAX	 1024	/* bytes of a method kept */
#define LEAF_AT_IP	 16	/* bytes read at ip past them */
#define LEAF_METHODS_MAX 4096	/* methods kept per process */

struct leafmethod {
	uint8_t *code;		/* NULL: unreadable */
	uint32_t len;
};

/* The vDSO's CFI, once per distinct image (every 64-bit process of a kernel has the same). */
#define LEAF_VDSO_MAX	 4
#define LEAF_VDSO_SIZE	 (64u << 10)	/* larger [vdso] mappings are not read */

struct vdso {
	uint8_t *image;		/* what processes' [vdso] mappings are compared with */
	size_t len;
	struct leafcfi *cfi;
};

/* A mapping frames sit in, as the profile shows it. */
struct smap {
	uint64_t start, limit, offset;
	uint32_t filename, build_id;	/* string ids; 0: none */
	uint32_t is_jit;
	uint32_t pad;
};

struct frame {
	uint64_t addr;		/* lookup address (return addresses already less one) */
	uint64_t time_ns;	/* first sample that saw it (for runtime lookups by time) */
	uint64_t file_off;	/* module+offset fallback */
	uint32_t name, system_name;	/* string ids; name 0 while pending */
	uint32_t map;		/* smap index + 1 in the process, 0: none */
	uint32_t base;		/* string id of the file's basename, 0: not file-backed */
	uint8_t pending;	/* runtime code: named (again) in finish */
	uint8_t kind;		/* NK_* of a native frame */
	uint8_t unnamed;	/* counted as .NET unnamed, for this reason (enum rt_unnamed) */
	uint8_t off_code;	/* a return address in memory that holds no code (symbolizer__ends_chain) */
	uint8_t unmapped;	/* in no mapping, or in data, of maps read before the sample and
				 * too recently to read again: tried again in finish, with the
				 * maps read then */
	uint32_t file;		/* symfile index + 1, 0: none */
};

#define TRUNCATED_ADDR UINT64_MAX	/* the key of a process's [truncated] frame */
_Static_assert(RT_UNNAMED__MAX <= 5, "symbolizer_stats.unnamed_by is too small");

struct proc_syms {
	struct idmap *keys;	/* addr -> frame index */
	struct frame *frames;
	size_t cap;
	struct intern *maps;	/* struct smap -> index */
	uint32_t npending;
	uint32_t nunmapped;	/* frames with unmapped set */
	uint32_t renamed_gen;	/* frames named again for every debug file attached up to this */
	struct intern *vmas;	/* the mappings met (start, end, offset, dev, ino) -> symfile */
	uint32_t *vma_file;	/* symfile index + 1 by vmas id; 0: not file-backed ELF */
	size_t vma_cap;
	struct intern *leaf_keys;	/* JIT method (start, size) -> leafmethod index */
	struct leafmethod *methods;
	size_t methods_cap;
	int vdso;		/* index + 1 into the symbolizer's vdsos; -1: not known; 0: not read */
	struct fcache *fcache;	/* FCACHE_SLOTS, at the process's first frame */
	struct lcache *lcache;	/* LCACHE_SLOTS, at the process's first JIT leaf */
};

/* Samples repeat their hot frames: the last frame id found for an address, direct-mapped in
 * front of the keys table (which stays the truth: ids never change while the process lives). */
#define FCACHE_BITS  8
#define FCACHE_SLOTS (1u << FCACHE_BITS)
struct fcache {
	uint64_t addr;		/* lookup address + 1; 0: empty */
	int64_t id;
};

/* The same for JIT leaves: what the prologue analysis said for a leaf ip (the code at an address
 * stays what the process's first sample there found, as for frame ids). */
#define LCACHE_BITS  6
#define LCACHE_SLOTS (1u << LCACHE_BITS)
struct lcache {
	uint64_t ip;		/* + 1; 0: empty */
	struct leaf_where w;
};

struct kframe {
	uint64_t addr;
	uint32_t name;
	uint8_t tracing;	/* a BPF program or the tracepoint code that ran it */
};

struct symbolizer {
	struct symbolizer_opts opts;
	struct ksyms *ksyms;
	struct idmap *kkeys;	/* kernel addr -> kframe index */
	struct kframe *kframes;
	size_t kcap;
	struct intern *file_keys;	/* file identity (struct file_key + build id) -> symfile index */
	struct intern *inode_keys;	/* (dev, ino) as the maps show it -> the newest symfile read */
	uint32_t *inode_file;		/* symfile index + 1 by inode_keys id */
	size_t inode_cap;
	struct symfile **files;
	size_t files_cap;
	struct intern *strings;	/* every name and path, once for all processes; id 0 is "" */
	uint64_t symsrv_gen;	/* symsrv__generation when the files were last looked at */
	uint64_t next_scan_ns;	/* files whose fetch failed are asked again from then */
	uint32_t nawaiting;	/* symfiles with awaiting set */
	uint32_t attach_gen;	/* debug files attached so far */
	struct vdso vdsos[LEAF_VDSO_MAX];
	size_t nvdsos;
	struct symbolizer_stats stats;
};


/* symbolize.c */
/* The id of string s, interned once for all processes (0: out of memory, or ""); its string. */
uint32_t sym_str_id(struct symbolizer *sym, const char *s);
const char *sym_str(const struct symbolizer *sym, uint32_t id);
/* The frames of p, made at its first frame (NULL: out of memory). */
struct proc_syms *sym_proc_syms(struct symbolizer *sym, struct proc *p);

/* symfiles.c: the ELF files behind mappings, shared by file identity, within the symbol budget. */
/* Open the file behind a mapping (map_files, else the path inside its root): an fd, or -errno. */
int sym_open_file(struct symbolizer *sym, const struct proc *p, const struct vma *v);
/* The symbol file of v in p, looked up once per mapping of the process (*file: its index + 1,
 * 0: none); NULL when it is not a file or not read. */
struct symfile *sym_symfile(struct symbolizer *sym, struct proc_syms *ps, const struct proc *p,
			    const struct vma *v, uint32_t *file, uint64_t now);
/* f's symbol table, read (again) when it is not held; NULL: not ELF, unreadable, over budget. */
struct elfsym *sym_table(struct symbolizer *sym, struct symfile *f, const struct proc *p,
			 const struct vma *v, uint64_t now);

#endif /* SPANPROF_SYMBOLIZE_INT_H */
