/* kallsyms.h: kernel symbols from /proc/kallsyms. */
#ifndef SPANPROF_KALLSYMS_H
#define SPANPROF_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Text symbols (t/T, w/W) of the kernel and its modules, sorted by address. kallsyms has no
 * sizes: a symbol runs to the next symbol of any type; the last symbol of a run that ends at a
 * module boundary (or the end of the list) covers at most KSYMS_TAIL_MAX bytes.
 */
struct ksyms;

#define KSYMS_MAX_BYTES	(256u << 20)	/* input read or parsed at most */
#define KSYMS_MAX_SYMS	(8u << 20)	/* symbols kept at most */
#define KSYMS_MAX_LINE	1024u		/* KSYM_NAME_LEN is 512 since 6.1; longer lines are malformed */
#define KSYMS_TAIL_MAX	(64u << 10)

struct ksyms_stats {
	uint64_t lines;		/* lines seen */
	uint64_t text;		/* text symbols kept (before alias dedupe) */
	uint64_t other;		/* data/bss/rodata/absolute symbols (boundaries only) */
	uint64_t zero_addr;	/* lines with address 0 (kptr_restrict hides them) */
	uint64_t malformed;	/* unparsable lines */
	uint64_t aliases;	/* names dropped for another at the same address */
	uint64_t capped;	/* lines dropped because a cap was hit */
	uint64_t modules;	/* distinct module names */
	uint64_t bytes;		/* memory the table holds (ksyms__stats) */
};

/*
 * Load a kallsyms file ("/proc/kallsyms" or a fixture). NULL and errno on failure: ENODATA when
 * every address reads 0 (kptr_restrict, or not root: kernel symbols are hidden), ENOENT/EACCES
 * from the open, ENOMEM. Input past KSYMS_MAX_BYTES is dropped and counted.
 */
struct ksyms *ksyms__load(const char *path);

/* Same from a buffer; the last line may lack its newline. */
struct ksyms *ksyms__parse(const char *buf, size_t len);

/*
 * Find the text symbol covering addr. Returns its name, copied to name (len bytes, cut to fit),
 * or NULL; *sym_off (may be NULL) = offset into it; *module (may be NULL) = module name without
 * brackets ("ext4", "bpf"), or NULL for vmlinux, living as long as ks. Safe to call from several
 * threads. A few microseconds (the names are stored deflated): keep what it finds.
 */
const char *ksyms__lookup(const struct ksyms *ks, uint64_t addr, uint64_t *sym_off,
			  const char **module, char *name, size_t len);

uint64_t ksyms__count(const struct ksyms *ks);	/* symbols in the table */
void ksyms__stats(const struct ksyms *ks, struct ksyms_stats *out);

void ksyms__free(struct ksyms *ks);	/* NULL-safe */

#endif /* SPANPROF_KALLSYMS_H */
