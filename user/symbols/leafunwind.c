/* leafunwind.c: where a leaf that has not set up its frame keeps its return address (CFI for
 * native code, prologue and epilogue decoding for JIT code), and putting that caller back. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "leafunwind.h"
#include "util.h"

const char *const leaf_outcome_names[LEAF__MAX] = {
#define LEAF_OUTCOME_NAME(id, name, help) name,
	LEAF_OUTCOMES(LEAF_OUTCOME_NAME)
#undef LEAF_OUTCOME_NAME
};

/* x86-64 DWARF register numbers. */
#define DW_X64_RBP 6
#define DW_X64_RSP 7
#define DW_X64_RA  16

struct leafcfi {
	Elf *elf;
	Dwarf *dw;		/* for .debug_frame, when there is no .eh_frame */
	Dwarf_CFI *cfi;		/* owned by elf (dwarf_getcfi_elf: .eh_frame) or dw (debug_frame) */
	int own_cfi;		/* dwarf_getcfi_elf's: freed with dwarf_cfi_end */
	void *image;		/* the memory elf reads from (leafcfi__open_image), or NULL */
	uint64_t bytes;		/* CFI sections read into memory (leafcfi__open_fd) */
	uint64_t debug_bytes;	/* what the .debug_frame way would read (cfi_fits) */
	int no_eh;		/* the .eh_frame way is refused (cfi_fits) */
	int no_debug;		/* the .debug_frame way is refused (cfi_fits) */
};

/* The CFI of c->elf, .eh_frame first. 0, or ENOEXEC (not ELF) / ENOENT (no CFI). */
static int find_cfi(struct leafcfi *c)
{
	if (!c->elf || elf_kind(c->elf) != ELF_K_ELF)
		return ENOEXEC;
	c->cfi = c->no_eh ? NULL : dwarf_getcfi_elf(c->elf);
	if (c->cfi) {
		c->own_cfi = 1;
		return 0;
	}
	if (c->no_debug)
		return ENOENT;
	c->bytes = c->debug_bytes;
	c->dw = dwarf_begin_elf(c->elf, DWARF_C_READ, NULL);
	if (c->dw)
		c->cfi = dwarf_getcfi(c->dw);
	return c->cfi ? 0 : ENOENT;
}

/*
 * What reading a file's CFI costs, checked before libdw reads it. The .eh_frame way: the
 * .eh_frame_hdr and .eh_frame sections, or without them (libdw then goes by the program headers)
 * the PT_GNU_EH_FRAME segment and up to a whole PT_LOAD segment. The .debug_frame way, when that
 * gives nothing: every .debug_ section (libdw's dwarf_begin_elf reads them all at once). What is
 * read must lie inside the file and be stored on it (a sparse file declares what it never wrote,
 * and reading it costs as much as a real one), debug sections must not be compressed (what they
 * expand to is the file's word), and each way reads at most LEAF_CFI_MAX_BYTES. 0 (c->bytes,
 * c->debug_bytes, c->no_eh and c->no_debug set), or EFBIG: .eh_frame sections that fail this.
 */
#define SHSTRTAB_MAX	(1u << 20)
#define PHDRS_MAX	64u

static int stored(int fd, uint64_t fsize, uint64_t off, uint64_t len)
{
	return off <= fsize && len <= fsize - off && !file_has_hole(fd, off, len);
}

static int cfi_fits(struct leafcfi *c, int fd, uint64_t fsize)
{
	uint64_t eh = 0, dbg = 0, ph = 0, load = 0;
	int has_eh = 0, eh_bad = 0, dbg_bad = 0, ph_bad = 0;
	size_t shstrndx, n;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Phdr p;

	if (elf_getshdrstrndx(c->elf, &shstrndx) || !(scn = elf_getscn(c->elf, shstrndx)) ||
	    !gelf_getshdr(scn, &sh) || sh.sh_size > SHSTRTAB_MAX ||
	    !stored(fd, fsize, sh.sh_offset, sh.sh_size))
		return EFBIG;
	for (scn = NULL; (scn = elf_nextscn(c->elf, scn));) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(c->elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".eh_frame") || !strcmp(name, ".eh_frame_hdr")) {
			eh_bad |= !stored(fd, fsize, sh.sh_offset, sh.sh_size);
			has_eh = 1;
			eh += sh.sh_size;
		} else if (!strncmp(name, ".debug_", 7) || !strncmp(name, ".zdebug_", 8)) {
			dbg_bad |= name[1] == 'z' || (sh.sh_flags & SHF_COMPRESSED) ||
				   !stored(fd, fsize, sh.sh_offset, sh.sh_size);
			dbg += sh.sh_size;
		}
	}
	if (elf_getphdrnum(c->elf, &n) || n > PHDRS_MAX)
		ph_bad = 1;
	for (size_t i = 0; !ph_bad && i < n; i++) {
		if (!gelf_getphdr(c->elf, i, &p)) {
			ph_bad = 1;
			break;
		}
		if (p.p_type == PT_GNU_EH_FRAME || p.p_type == PT_LOAD)
			ph_bad = !stored(fd, fsize, p.p_offset, p.p_filesz);
		if (p.p_type == PT_GNU_EH_FRAME)
			ph += p.p_filesz;
		else if (p.p_type == PT_LOAD && p.p_filesz > load)
			load = p.p_filesz;
	}
	if (eh_bad || eh > LEAF_CFI_MAX_BYTES)
		return EFBIG;
	/* libdw goes by the program headers when the sections give nothing */
	c->no_eh = ph_bad || (!has_eh && ph && ph + load > LEAF_CFI_MAX_BYTES);
	c->bytes = has_eh ? eh : ph ? ph + load : 0;
	c->debug_bytes = dbg;
	c->no_debug = dbg_bad || dbg > LEAF_CFI_MAX_BYTES;
	return 0;
}

struct leafcfi *leafcfi__open_fd(int fd)
{
	struct leafcfi *c;
	struct stat st;
	int err;

	if (fd < 0) {
		errno = EBADF;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	elf_version(EV_CURRENT);
	/* Read, never mapped: the file is a process's, which can shrink it under us, and a read of
	 * a mapping past the new end is SIGBUS. What the CFI and leafcfi__vaddr need is read into
	 * memory here (the section and program headers by cfi_fits, the CFI by find_cfi); then the
	 * fd goes. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		err = ENOEXEC;
	else if (!(c->elf = elf_begin(fd, ELF_C_READ, NULL)) || elf_kind(c->elf) != ELF_K_ELF)
		err = ENOEXEC;
	else
		err = cfi_fits(c, fd, (uint64_t)st.st_size);
	if (!err)
		err = find_cfi(c);
	if (c->elf)
		elf_cntl(c->elf, ELF_C_FDDONE);
	close(fd);
	if (err) {
		leafcfi__free(c);
		errno = err;
		return NULL;
	}
	return c;
}

struct leafcfi *leafcfi__open_image(void *image, size_t len)
{
	struct leafcfi *c = calloc(1, sizeof(*c));
	int err;

	if (!c) {
		free(image);
		errno = ENOMEM;
		return NULL;
	}
	c->image = image;
	elf_version(EV_CURRENT);
	c->elf = image ? elf_memory(image, len) : NULL;
	if ((err = find_cfi(c))) {
		leafcfi__free(c);
		errno = err;
		return NULL;
	}
	return c;
}

int leafcfi__vaddr(const struct leafcfi *c, uint64_t off, uint64_t *vaddr)
{
	GElf_Phdr ph;
	size_t n;

	if (!c || elf_getphdrnum(c->elf, &n))
		return -ENOENT;
	for (size_t i = 0; i < n; i++)
		if (gelf_getphdr(c->elf, i, &ph) && ph.p_type == PT_LOAD && off >= ph.p_offset &&
		    off - ph.p_offset < ph.p_filesz) {
			*vaddr = off - ph.p_offset + ph.p_vaddr;
			return 0;
		}
	return -ENOENT;
}

uint64_t leafcfi__bytes(const struct leafcfi *c)
{
	return c ? c->bytes : 0;
}

void leafcfi__free(struct leafcfi *c)
{
	if (!c)
		return;
	if (c->own_cfi)
		dwarf_cfi_end(c->cfi);
	if (c->dw)
		dwarf_end(c->dw);
	if (c->elf)
		elf_end(c->elf);
	free(c->image);
	free(c);
}

/* A register's CFI rule as "saved at CFA + off" (libdw: DW_OP_call_frame_cfa [, plus_uconst]). */
static int saved_at_cfa(Dwarf_Frame *fr, int regno, int64_t *off)
{
	Dwarf_Op mem[3], *ops;
	size_t n;

	if (dwarf_frame_register(fr, regno, mem, &ops, &n) || !ops || n < 1 || n > 2 ||
	    ops[0].atom != DW_OP_call_frame_cfa)
		return -1;
	if (n == 1) {
		*off = 0;
		return 0;
	}
	if (ops[1].atom != DW_OP_plus_uconst)
		return -1;
	*off = (int64_t)ops[1].number;	/* libdw stores a negative offset as its two's complement */
	return 0;
}

struct leaf_where leafcfi__where(struct leafcfi *c, uint64_t vaddr)
{
	struct leaf_where w = { LEAF_NO_CFI, 0 };
	Dwarf_Frame *fr = NULL;
	Dwarf_Op *ops;
	size_t n;
	int64_t ra, cfa_off;
	uint64_t reg;

	if (!c || dwarf_cfi_addrframe(c->cfi, vaddr, &fr))
		return w;
	w.outcome = LEAF_CFI_UNSURE;
	if (dwarf_frame_cfa(fr, &ops, &n) || n != 1)
		goto out;
	if (ops[0].atom == DW_OP_bregx) {
		reg = ops[0].number;
		cfa_off = (int64_t)ops[0].number2;
	} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		reg = ops[0].atom - DW_OP_breg0;
		cfa_off = (int64_t)ops[0].number;
	} else {
		goto out;
	}
	if (reg == DW_X64_RBP) {
		w.outcome = LEAF_FRAMED;
		goto out;
	}
	if (reg != DW_X64_RSP || saved_at_cfa(fr, DW_X64_RA, &ra) || ra != -8 || cfa_off < 8)
		goto out;
	w.outcome = LEAF_INSERTED;
	w.ra_off = cfa_off - 8;
out:
	free(fr);
	return w;
}

/* ---- x86-64 ----------------------------------------------------------------------------------- */

/* One prologue instruction at c (n bytes available): its length, and what it does to the stack
 * (*push: bytes pushed or allocated) and to rbp (*sets_rbp). 0: not a prologue instruction. */
static size_t x64_prologue_insn(const uint8_t *c, size_t n, int64_t *push, int *sets_rbp,
				int *push_rbp)
{
	*push = 0;
	*sets_rbp = *push_rbp = 0;
	if (n >= 1 && c[0] >= 0x50 && c[0] <= 0x57 && c[0] != 0x54) {	/* push r64 (not rsp) */
		*push = 8;
		*push_rbp = c[0] == 0x55;
		return 1;
	}
	if (n >= 2 && c[0] == 0x41 && c[1] >= 0x50 && c[1] <= 0x57) {	/* push r8..r15 */
		*push = 8;
		return 2;
	}
	if (n >= 4 && c[0] == 0x48 && c[1] == 0x83 && c[2] == 0xec) {	/* sub rsp, imm8 */
		*push = (int8_t)c[3];
		return 4;
	}
	if (n >= 7 && c[0] == 0x48 && c[1] == 0x81 && c[2] == 0xec) {	/* sub rsp, imm32 */
		*push = (int32_t)(c[3] | c[4] << 8 | c[5] << 16 | (uint32_t)c[6] << 24);
		return 7;
	}
	if (n >= 3 && c[0] == 0x48 && ((c[1] == 0x89 && c[2] == 0xe5) ||	/* mov rbp, rsp */
				       (c[1] == 0x8b && c[2] == 0xec))) {
		*sets_rbp = 1;
		return 3;
	}
	if (n >= 5 && c[0] == 0x48 && c[1] == 0x8d && c[2] == 0x6c && c[3] == 0x24) {	/* lea rbp,[rsp+i8] */
		*sets_rbp = 1;
		return 5;
	}
	if (n >= 8 && c[0] == 0x48 && c[1] == 0x8d && c[2] == 0xac && c[3] == 0x24) {	/* lea rbp,[rsp+i32] */
		*sets_rbp = 1;
		return 8;
	}
	if (n >= 3 && c[0] == 0xc5 && c[1] == 0xf8 && c[2] == 0x77)	/* vzeroupper */
		return 3;
	if (n >= 1 && c[0] == 0x90)	/* nop */
		return 1;
	return 0;
}

/* Bytes the epilogue at c still pops before its ret (ret itself: 0), or -1: not an epilogue. */
static int64_t x64_epilogue(const uint8_t *c, size_t n)
{
	int64_t off = 0;
	size_t i = 0;

	while (i < n) {
		if (c[i] == 0xc3 || (c[i] == 0xc2 && i + 3 <= n))	/* ret, ret imm16 */
			return off;
		if (c[i] >= 0x58 && c[i] <= 0x5f && c[i] != 0x5c) {	/* pop r64 */
			off += 8;
			i += 1;
		} else if (i + 2 <= n && c[i] == 0x41 && c[i + 1] >= 0x58 && c[i + 1] <= 0x5f) {
			off += 8;
			i += 2;
		} else if (i + 4 <= n && c[i] == 0x48 && c[i + 1] == 0x83 && c[i + 2] == 0xc4) {
			off += (int8_t)c[i + 3];	/* add rsp, imm8 */
			i += 4;
		} else if (i + 7 <= n && c[i] == 0x48 && c[i + 1] == 0x81 && c[i + 2] == 0xc4) {
			off += (int32_t)(c[i + 3] | c[i + 4] << 8 | c[i + 5] << 16 |
					 (uint32_t)c[i + 6] << 24);
			i += 7;
		} else {
			return -1;
		}
	}
	return -1;	/* ran out of bytes before the ret */
}

struct leaf_where leaf__x64_where(const uint8_t *code, size_t len, uint64_t ip_off,
				  const uint8_t *at, size_t at_len)
{
	struct leaf_where w = { LEAF_JIT_UNSURE, 0 };
	int64_t off = 0, push, epi;
	int framed = 0, pushed_rbp = 0, sets_rbp, push_rbp;
	size_t pos = 0, k;

	if (ip_off == 0) {	/* at the entry: nothing ran yet */
		w.outcome = LEAF_INSERTED;
		return w;
	}
	/* Through the prologue: up to ip, or to its first instruction that is not part of one. */
	while (pos < len && !framed) {
		k = x64_prologue_insn(code + pos, len - pos, &push, &sets_rbp, &push_rbp);
		if (!k)
			break;
		if (pos == ip_off) {	/* what ran before ip is known exactly */
			w.outcome = LEAF_INSERTED;
			w.ra_off = off;
			return w;
		}
		if (sets_rbp) {
			if (!pushed_rbp)
				return w;	/* rbp set without being saved: not a frame we know */
			framed = 1;
		}
		if (push < 0)
			return w;
		off += push;
		pushed_rbp |= push_rbp;
		pos += k;
	}
	if (ip_off < pos)
		return w;	/* ip inside a prologue instruction: not an instruction boundary */
	if (pos == len && !framed && ip_off >= len)
		return w;	/* the whole copy was prologue: the rest is not known */

	/* Past the prologue: ret (after the frame is popped) or an epilogue of a frameless method. */
	epi = at_len ? x64_epilogue(at, at_len) : -1;
	if (framed) {
		if (epi == 0) {	/* at ret: rbp was popped */
			w.outcome = LEAF_INSERTED;
			w.ra_off = 0;
		} else {
			w.outcome = LEAF_FRAMED;
		}
		return w;
	}
	if (pushed_rbp)
		return w;	/* rbp pushed but never set: a frameless method we cannot place */
	w.outcome = LEAF_INSERTED;
	if (epi >= 0)
		w.ra_off = epi;
	else if (at_len || off == 0)
		w.ra_off = off;	/* in the body: everything the prologue pushed is on the stack */
	else
		w.outcome = LEAF_JIT_UNSURE;
	return w;
}

/* ---- the stack -------------------------------------------------------------------------------- */

enum leaf_outcome leaf__insert(struct leaf_where w, const uint64_t *words, size_t n_words,
			       uint64_t *frames, size_t *n, size_t cap,
			       int (*is_code)(void *arg, uint64_t addr), void *arg)
{
	uint64_t ra;

	if (w.outcome != LEAF_INSERTED)
		return w.outcome;
	if (w.ra_off < 0 || w.ra_off % 8 || (uint64_t)w.ra_off / 8 >= n_words)
		return LEAF_BEYOND_WORDS;
	ra = words[w.ra_off / 8];
	if (!is_code(arg, ra))
		return LEAF_NOT_CODE;
	if (*n >= 2 && frames[1] == ra)
		return LEAF_DUPLICATE;
	if (*n == 0 || cap < 2)
		return LEAF_NO_REGS;
	if (*n >= cap)
		*n = cap - 1;
	memmove(frames + 2, frames + 1, (*n - 1) * sizeof(*frames));
	frames[1] = ra;
	(*n)++;
	return LEAF_INSERTED;
}
