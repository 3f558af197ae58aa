/* leafunwind.h: where the return address of the sampled leaf is when the leaf has not set up its
 * frame (it has none, or ip is in its prologue or epilogue), so the caller that a frame-pointer
 * walk skips can be put back. Native code by its CFI (elfutils libdw), JIT code by its prologue. */
#ifndef SPANPROF_LEAFUNWIND_H
#define SPANPROF_LEAFUNWIND_H

#include <stddef.h>
#include <stdint.h>

/*
 * What became of one sample's leaf. X(enum suffix, short name for -v and the report, meaning):
 * every sample with a user stack ends in exactly one.
 */
#define LEAF_OUTCOMES(X)                                                                        \
	X(INSERTED, "inserted", "frame not set up: caller put back from the copied stack")      \
	X(FRAMED, "framed", "the leaf's frame is set up: the walked stack is right")            \
	X(DUPLICATE, "duplicate", "frame not set up, but the walk already has that caller")     \
	X(NO_REGS, "no_regs", "no registers or stack words in the sample (BPF could not read)") \
	X(IP_MISMATCH, "ip_mismatch", "the registers' ip is not the walked leaf: kept")         \
	X(NO_CODE, "no_code", "ip outside every executable mapping: kept")                      \
	X(NO_CFI, "no_cfi", "native code without CFI at ip (or unreadable): kept")              \
	X(CFI_UNSURE, "cfi_unsure", "CFI rule at ip not a plain sp/bp offset: kept")            \
	X(JIT_NO_RANGE, "jit_no_range", "no method range (a stub, not in the perf map): kept")  \
	X(JIT_UNREADABLE, "jit_unreadable", "method code unreadable from the process: kept")    \
	X(JIT_UNSURE, "jit_unsure", "prologue or epilogue not understood: kept")                \
	X(CACHE_FULL, "cache_full", "per-process method cache full: kept")                      \
	X(BEYOND_WORDS, "beyond_words", "return address past the copied stack words: kept")     \
	X(NOT_CODE, "not_code", "the word found is not in executable mapped code: kept")

enum leaf_outcome {
#define LEAF_OUTCOME_ENUM(id, name, help) LEAF_##id,
	LEAF_OUTCOMES(LEAF_OUTCOME_ENUM)
#undef LEAF_OUTCOME_ENUM
	LEAF__MAX,
};

extern const char *const leaf_outcome_names[LEAF__MAX];

/* The answer for one ip: LEAF_FRAMED, LEAF_INSERTED with the return address at sp + ra_off, or
 * a reason it is not known (LEAF_CFI_UNSURE, LEAF_JIT_UNSURE, LEAF_NO_CFI). */
struct leaf_where {
	enum leaf_outcome outcome;
	int64_t ra_off;		/* bytes from the leaf's sp; valid with LEAF_INSERTED */
};

/* The leaf's state as the sampler copied it. */
struct leaf_regs {
	uint64_t ip, sp, bp;
	const uint64_t *words;	/* n_words u64 from sp */
	size_t n_words;
};

/* ---- native: CFI ------------------------------------------------------------------------------ */

struct leafcfi;

#define LEAF_CFI_MAX_BYTES (64u << 20)	/* CFI sections one file may have read into memory */

/* The CFI (.eh_frame, else .debug_frame) of the ELF file behind fd, read into memory (never
 * mapped: the file may shrink under us). Always takes ownership of fd (closed before return).
 * NULL and errno (ENOEXEC: not ELF, ENOENT: no CFI it may read, EFBIG: .eh_frame sections over
 * LEAF_CFI_MAX_BYTES, outside the file or not stored in it, ENOMEM). */
struct leafcfi *leafcfi__open_fd(int fd);
/* Bytes of CFI sections c read into memory (0 for an image). */
uint64_t leafcfi__bytes(const struct leafcfi *c);
/* The same for an ELF image in memory (the vDSO, copied from the process): takes ownership of
 * image (malloc'd, freed with c or on failure). */
struct leafcfi *leafcfi__open_image(void *image, size_t len);
void leafcfi__free(struct leafcfi *c);	/* NULL-safe */
/* ELF virtual address of offset off in the file (or image), through its PT_LOAD segments; 0 or
 * -ENOENT. */
int leafcfi__vaddr(const struct leafcfi *c, uint64_t off, uint64_t *vaddr);

/* Where the return address is at ELF virtual address vaddr (x86-64 DWARF registers): CFA =
 * rsp + k with the return address at CFA - 8 is LEAF_INSERTED, ra_off = k - 8; a CFA from rbp is
 * LEAF_FRAMED; no FDE covers vaddr: LEAF_NO_CFI; any other rule: LEAF_CFI_UNSURE. */
struct leaf_where leafcfi__where(struct leafcfi *c, uint64_t vaddr);

/* ---- JIT: x86-64 prologue and epilogue -------------------------------------------------------- */

/*
 * Where the return address is at ip_off bytes into x86-64 code that starts at code[0] (len bytes
 * of the method from its first instruction, len >= 1). at/at_len: the bytes at ip (at least the
 * next instruction or two; may point into code). Understands the JIT's prologue (push rbp, pushes
 * of callee-saved registers, sub rsp, then mov rbp,rsp or lea rbp,[rsp+N]) and epilogue (add rsp,
 * pops, ret); anything it does not understand where it matters is LEAF_JIT_UNSURE.
 */
struct leaf_where leaf__x64_where(const uint8_t *code, size_t len, uint64_t ip_off,
				  const uint8_t *at, size_t at_len);

/* ---- the stack -------------------------------------------------------------------------------- */

/*
 * Put the return address found at sp + w.ra_off (words: n_words u64 copied from sp) into the
 * walked user stack (frames: *n leaf first, room for cap) after the leaf, when is_code(arg,
 * address) says it lies in executable mapped code and the walk's second frame is not already it.
 * Returns the outcome: w's own when not LEAF_INSERTED, else LEAF_INSERTED, LEAF_DUPLICATE,
 * LEAF_BEYOND_WORDS or LEAF_NOT_CODE. A full stack loses its outermost frame to the insertion.
 */
enum leaf_outcome leaf__insert(struct leaf_where w, const uint64_t *words, size_t n_words,
			       uint64_t *frames, size_t *n, size_t cap,
			       int (*is_code)(void *arg, uint64_t addr), void *arg);

#endif /* SPANPROF_LEAFUNWIND_H */
