/* elfsym.h: symbols of one ELF file (.symtab/.dynsym), with its build id and debug file. */
#ifndef SPANPROF_ELFSYM_H
#define SPANPROF_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

/*
 * One struct elfsym holds the function symbols of an executable or shared object, sorted and
 * deduplicated, plus its PT_LOAD segments (to turn file offsets into ELF addresses) and build id.
 * Nothing stays open after a constructor returns: no fd, no mapping.
 */
struct elfsym;

#define ELFSYM_MAX_FILE (2ULL << 30)	/* files larger than this are refused (EFBIG) */

/*
 * Load the symbols of path inside root_fd: root_fd is an O_PATH (or O_DIRECTORY) fd of
 * /proc/<pid>/root, or AT_FDCWD for the host; the file is opened with rootfs__open (lib/rootfs.h:
 * the lookup never leaves the root, magic links are refused, only a regular file no larger than
 * ELFSYM_MAX_FILE opens, so a FIFO or device is never read). When the file has no
 * .symtab, look for a debug file that has one: /usr/lib/debug/.build-id/xx/yyyy.debug (its build
 * id must match), then the .gnu_debuglink name in the file's directory, its .debug/ subdirectory
 * and /usr/lib/debug/<dir>/ (its CRC32 must match); each first inside the root, then on the
 * host, where a file is taken only when the binary has a build id and the file has the same
 * (elfsym__debug_refused names the first one refused). Function ranges come from .eh_frame. NULL and errno on failure: ENOENT/ELOOP/EACCES... from the open, EINVAL not a regular
 * file, EFBIG over ELFSYM_MAX_FILE, ENOEXEC not a usable ELF file (garbage, truncated, not
 * ET_EXEC/ET_DYN), ENOMEM. A valid file without any function symbol loads with count 0.
 */
struct elfsym *elfsym__open(int root_fd, const char *path);

/* Same from an open fd (e.g. /proc/<pid>/map_files/<range>, a memfd). Always takes ownership of
 * fd (closed before return). path_hint is the file's path inside root_fd, used only to find a
 * .gnu_debuglink file next to it; may be NULL. */
struct elfsym *elfsym__open_fd(int fd, const char *path_hint, int root_fd);

void elfsym__free(struct elfsym *es);	/* NULL-safe */

const char *elfsym__build_id(const struct elfsym *es);	/* lowercase hex, NULL if none */

/* The build id of the ELF file open at fd (not taken; its offset is not used) into hex
 * (lowercase, 129 bytes hold any). 0, -ENOENT none, -ENOEXEC not ELF, -ENAMETOOLONG. */
int elfsym__read_build_id(int fd, char *hex, size_t len);

/* Path (as searched, inside the root or on the host) of the debug file whose .symtab was used;
 * NULL when the symbols came from the file itself. */
const char *elfsym__debug_file(const struct elfsym *es);

/* The first debug file found outside the file's root and refused (no build id to match, or
 * another build id), NULL if none. */
const char *elfsym__debug_refused(const struct elfsym *es);

/* 1 when es has a build id but no .symtab of its own or from a debug file: a debug file fetched
 * by build id (elfsym__open_debug, elfsym__attach_debug) would name more. */
int elfsym__needs_debug(const struct elfsym *es);

/*
 * The symbols of a debug file found by build id elsewhere (a cache, a symbol server): takes fd.
 * Its build id must be build_id (lowercase hex) and it must have a .symtab. path is kept for
 * elfsym__debug_file. NULL and errno: EBADMSG another build id, ENOEXEC no .symtab or not ELF,
 * the others as elfsym__open_fd. Safe on another thread than the one using other elfsyms.
 */
struct elfsym *elfsym__open_debug(int fd, const char *build_id, const char *path);

/* Lookups on es consult dbg first from now on. Takes dbg (freed on error). 0, or -EINVAL: not
 * the same build id, class or machine, or es has one already. */
int elfsym__attach_debug(struct elfsym *es, struct elfsym *dbg);

/* The start (ELF virtual address) of the function holding vaddr by the file's .eh_frame FDEs,
 * for naming an address no symbol covers: one name per function. 0, or -ENOENT. */
int elfsym__function_start(const struct elfsym *es, uint64_t vaddr, uint64_t *start);

/*
 * Map a file offset (addr - map_start + map_pgoff, from /proc/<pid>/maps) to the ELF virtual
 * address through the PT_LOAD segment holding that offset (executable segments first), then
 * find the symbol covering it. Returns the symbol name (C++ demangled when possible, computed
 * once and kept) or NULL; *sym_off (may be NULL) = offset into the symbol. The name lives as
 * long as es. Not thread-safe on one es (demangling caches into it).
 */
const char *elfsym__lookup(struct elfsym *es, uint64_t file_off, uint64_t *sym_off);

/* Every function symbol's name (its debug file's first), as stored (not demangled). */
void elfsym__each(const struct elfsym *es, void (*fn)(const char *name, void *arg), void *arg);

/* Same by ELF virtual address directly. */
const char *elfsym__lookup_vaddr(struct elfsym *es, uint64_t vaddr, uint64_t *sym_off);

/* File offset -> ELF virtual address through PT_LOAD. Returns 0, or -ENOENT when no segment
 * holds the offset. */
int elfsym__file_to_vaddr(const struct elfsym *es, uint64_t file_off, uint64_t *vaddr);

uint64_t elfsym__count(const struct elfsym *es);	/* symbols loaded (after dedupe) */
/* Memory es holds (tables, string copies, demangled names so far, its debug file's). */
uint64_t elfsym__bytes(const struct elfsym *es);

struct elfsym_stats {
	uint64_t symtab;	/* function symbols taken from .symtab (the file's or the debug file's) */
	uint64_t dynsym;	/* function symbols taken from .dynsym */
	uint64_t skipped;	/* symbols that are not functions: data, undefined, unnamed, absolute */
	uint64_t malformed;	/* bad name offset or section index, unreadable table */
	uint64_t aliases;	/* dropped because another name at the same address was preferred */
	uint64_t capped;	/* dropped because a cap (symbols, segments) was hit */
	uint64_t sparse;	/* symbol or string tables refused: holes in the file where they lie */
	uint64_t debug_rejected;	/* debug files found but refused (build id / CRC mismatch, no .symtab) */
	uint64_t debug_outside_refused;	/* found outside the file's root without its build id */
	uint64_t fdes;		/* function ranges kept from .eh_frame */
	uint64_t fde_malformed;	/* .eh_frame_hdr / FDEs unreadable, unsorted or of an unknown layout */
	uint64_t segments;	/* PT_LOAD segments kept */
};
void elfsym__stats(const struct elfsym *es, struct elfsym_stats *out);

#endif /* SPANPROF_ELFSYM_H */
