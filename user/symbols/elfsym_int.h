/* elfsym_int.h: what the files of the ELF symbol reader (elfsym.c) share: its limits, the table,
 * one ELF file being read, and the calls between its parts. Not for use outside user/symbols/elf*.c. */
#ifndef SPANPROF_ELFSYM_INT_H
#define SPANPROF_ELFSYM_INT_H

#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_SYMS	(4u << 20)	/* merged symbols per file; Chromium has ~1 M functions */
#define MAX_TABLE	(256u << 20)	/* bytes of one symbol or string table libelf may read */
#define MAX_SEGS	64u		/* PT_LOAD segments kept; real files have 2-5 */
#define MAX_SECS	(1u << 20)	/* section headers looked at */
#define MAX_BUILD_ID	64u		/* bytes; GNU ld writes 20 (sha1) or 16 (md5/uuid) */
#define MAX_DEMANGLE	2048u		/* longer names stay mangled: the demangler sizes its stack
					 * arrays by the name's length, on the caller's thread */
#define BACKWALK	16		/* earlier symbols tried when the nearest one does not cover */
#define DEBUG_DIR	"/usr/lib/debug"
#define MAX_FDES	(2u << 20)	/* functions with an FDE kept per file */
#define MAX_REFUSED	256u		/* bytes of the first refused debug file's path kept */

/* libstdc++'s demangler (the binary links -lstdc++); declared here to keep this file C. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

enum { SRC_SYMTAB = 0, SRC_DYNSYM = 1 };
enum { SYM_DEMANGLE_TRIED = 1u << 0, SYM_NAME_OWNED = 1u << 1 };

/* One function as .eh_frame describes it, from its FDE: [fde_base + start, + len). A library's
 * code spans less than 4 GiB: 8 bytes a function (libcoreclr.so has 16,975). */
struct fde {
	uint32_t start, len;
};

struct sym {		/* its start is in addrs[] */
	uint64_t end;		/* exclusive */
	uint64_t maxend;	/* max end over this and every earlier entry: bounds the back-walk */
	const char *name;
	uint32_t flags;
};

/* A symbol while the table is built: what the alias and size rules need. */
struct rawsym {
	uint64_t addr;
	uint64_t size;
	uint64_t bound;		/* end of its section, UINT64_MAX when unknown */
	const char *name;
	uint32_t name_len;
	uint32_t index;		/* load order: the final tie-break */
	uint8_t bind_rank;	/* 0 global, 1 weak, 2 local/other */
	uint8_t type_rank;	/* 0 FUNC/IFUNC, 1 NOTYPE */
	uint8_t versioned;	/* "memcpy@@GLIBC_2.14" in .symtab: the plain .dynsym name reads better */
	uint8_t src;
};

struct seg {
	uint64_t off;
	uint64_t filesz;
	uint64_t vaddr;
	int exec;
};

struct sec {
	uint64_t addr;
	uint64_t size;
	int exec;
};

struct elfsym {
	struct sym *syms;
	uint64_t *addrs;	/* syms[i]'s start, packed: the binary search touches fewer lines */
	size_t n;
	struct seg segs[MAX_SEGS];
	size_t n_segs;
	char *strtabs[3];	/* copies of the string tables the names point into; once the table
				 * is built, [0] holds the kept names only */
	uint64_t strtab_bytes, demangled_bytes;	/* what those copies and demangled names hold */
	char *debug_path;
	struct fde *fdes;	/* sorted by start, not overlapping */
	size_t n_fdes;
	uint64_t fde_base;	/* the first FDE's start */
	struct elfsym *dbg;	/* symbols of a debug file attached later (elfsym__attach_debug) */
	char build_id[2 * MAX_BUILD_ID + 1];
	char refused[MAX_REFUSED];	/* the first debug file refused outside the root */
	unsigned char ei_class;
	uint16_t machine;
	struct elfsym_stats stats;
};

/* Growable list of candidate symbols. */
struct rawvec {
	struct rawsym *v;
	size_t n, cap;
};

/* One opened ELF file: the libelf handle and what we learned from its headers. */
struct elffile {
	int fd;
	Elf *elf;
	uint64_t size;
	GElf_Ehdr ehdr;
	struct sec *secs;
	size_t n_secs;
	Elf_Scn *symtab;
	Elf_Scn *dynsym;
	Elf_Scn *debuglink;
	Elf_Scn *eh_frame;
	unsigned char build_id[MAX_BUILD_ID];
	size_t build_id_len;
};


/* elffile.c: reading one ELF file. */
/* Open fd as an ELF file for es (headers, segments, sections, build id): 0, or -errno. */
int elffile_open(struct elffile *f, int fd, struct elfsym *es);
void elffile_close(struct elffile *f);
/* in as lowercase hex, NUL-terminated (out holds 2 * len + 1). */
void elf_hex_encode(char *out, const unsigned char *in, size_t len);
/* Whether [off, off + len) lies inside the file. */
int elf_in_file(const struct elffile *f, uint64_t off, uint64_t len);
/* The functions of symbol table scn (src: SRC_*) added to rv: 0, or -errno. */
int elf_load_table(struct elfsym *es, struct elffile *f, Elf_Scn *scn, int src, int slot,
		   struct rawvec *rv);

/* elfehframe.c: function ranges from .eh_frame. */
void elf_load_fdes(struct elfsym *es, struct elffile *f);
/* The FDE covering vaddr, or -1; the start of FDE i; the next FDE start above addr (UINT64_MAX). */
ssize_t elf_fde_find(const struct elfsym *es, uint64_t vaddr);
uint64_t elf_fde_start(const struct elfsym *es, size_t i);
uint64_t elf_fde_bound(const struct elfsym *es, uint64_t addr);

/* elfdebug.c: debug files (build id, .gnu_debuglink), searched inside the process's root. */
int elf_find_debug(struct elfsym *es, struct elffile *f, int root_fd, const char *path_hint,
		   struct elffile *dbg);

#endif /* SPANPROF_ELFSYM_INT_H */
