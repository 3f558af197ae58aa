/* elfsym.c: function symbols of one ELF file through libelf, with build id, debug files and safe opens. */
#include "elfsym.h"
#include "rootfs.h"
#include "util.h"
#include "vec.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

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

/* ---- reading one ELF file ------------------------------------------------------------------- */

static void elffile_close(struct elffile *f)
{
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	free(f->secs);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

static void hex_encode(char *out, const unsigned char *in, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * len] = '\0';
}

/* Scan one block of notes for NT_GNU_BUILD_ID. Returns 1 when found. */
static int find_build_id(struct elffile *f, Elf_Data *data)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	if (!data || !data->d_buf)
		return 0;
	while (off < data->d_size && (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((const char *)data->d_buf + name_off, "GNU", 4) == 0 &&
		    nh.n_descsz > 0 && nh.n_descsz <= MAX_BUILD_ID) {
			memcpy(f->build_id, (const char *)data->d_buf + desc_off, nh.n_descsz);
			f->build_id_len = nh.n_descsz;
			return 1;
		}
		off = next;
	}
	return 0;
}

static int in_file(const struct elffile *f, uint64_t off, uint64_t len)
{
	return off <= f->size && len <= f->size - off;
}

/* A table with a hole in the file (file_has_hole): no symbol table anybody wrote, refused
 * (counted as sparse). libelf reads with pread (ELF_C_READ), so the seek there is harmless. */
static int sparse(const struct elffile *f, uint64_t off, uint64_t len)
{
	return file_has_hole(f->fd, off, len);
}

/* Open the ELF behind fd (taking it) and read its headers: segments go to es when es != NULL
 * (the main file), sections and the interesting section handles to f. Returns 0 or -errno. */
static int elffile_open(struct elffile *f, int fd, struct elfsym *es)
{
	size_t phnum, shnum, shstrndx, i;
	Elf_Scn *scn = NULL;
	GElf_Phdr ph;
	GElf_Shdr sh;
	struct stat st;
	const char *name;

	memset(f, 0, sizeof(*f));
	f->fd = fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > ELFSYM_MAX_FILE)
		return -EFBIG;
	f->size = st.st_size;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	/* ELF_C_READ reads with pread on demand: a file truncated under us gives read errors,
	 * where a mapping would give SIGBUS. */
	f->elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF || !gelf_getehdr(f->elf, &f->ehdr))
		return -ENOEXEC;
	if (f->ehdr.e_type != ET_EXEC && f->ehdr.e_type != ET_DYN)
		return -ENOEXEC;

	if (elf_getphdrnum(f->elf, &phnum) != 0)
		phnum = 0;
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(f->elf, i, &ph))
			break;
		if (ph.p_type == PT_LOAD && es) {
			if (es->n_segs == MAX_SEGS) {
				es->stats.capped++;
				continue;
			}
			es->segs[es->n_segs++] = (struct seg){
				.off = ph.p_offset, .filesz = ph.p_filesz, .vaddr = ph.p_vaddr,
				.exec = !!(ph.p_flags & PF_X),
			};
		}
	}

	if (elf_getshdrnum(f->elf, &shnum) != 0 || elf_getshdrstrndx(f->elf, &shstrndx) != 0)
		shnum = 0;
	if (shnum > MAX_SECS)
		shnum = MAX_SECS;
	if (shnum) {
		f->secs = calloc(shnum, sizeof(*f->secs));
		if (!f->secs)
			return -ENOMEM;
		f->n_secs = shnum;
	}
	while ((scn = elf_nextscn(f->elf, scn)) != NULL) {
		size_t idx = elf_ndxscn(scn);

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (idx < f->n_secs)
			f->secs[idx] = (struct sec){ .addr = sh.sh_addr, .size = sh.sh_size,
						     .exec = !!(sh.sh_flags & SHF_EXECINSTR) };
		if (sh.sh_type == SHT_NOBITS)
			continue;
		if (sh.sh_type == SHT_SYMTAB && !f->symtab)
			f->symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM && !f->dynsym)
			f->dynsym = scn;
		else if (sh.sh_type == SHT_NOTE && !f->build_id_len &&
			 in_file(f, sh.sh_offset, sh.sh_size))
			find_build_id(f, elf_getdata(scn, NULL));
		else if (sh.sh_type == SHT_PROGBITS &&
			 (name = elf_strptr(f->elf, shstrndx, sh.sh_name))) {
			if (!f->debuglink && strcmp(name, ".gnu_debuglink") == 0)
				f->debuglink = scn;
			else if (!f->eh_frame && strcmp(name, ".eh_frame") == 0 &&
				 in_file(f, sh.sh_offset, sh.sh_size))
				f->eh_frame = scn;
		}
	}

	/* Files whose section headers were removed still have their notes in PT_NOTE. */
	for (i = 0; i < phnum && !f->build_id_len; i++) {
		if (!gelf_getphdr(f->elf, i, &ph) || ph.p_type != PT_NOTE ||
		    !in_file(f, ph.p_offset, ph.p_filesz) || ph.p_filesz == 0)
			continue;
		find_build_id(f, elf_getdata_rawchunk(f->elf, ph.p_offset, ph.p_filesz,
						      ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR));
	}
	/* libelf keeps errors per thread; a bad optional part must not fail the file. */
	elf_errno();
	return 0;
}

static int rawvec_push(struct rawvec *rv, const struct rawsym *s)
{
	if (VEC_RESERVE(rv->v, rv->cap, rv->n + 1))
		return -ENOMEM;
	rv->v[rv->n++] = *s;
	return 0;
}

/* Copy the string table a symbol table links to, NUL-terminated so every name ends inside. */
static char *copy_strtab(struct elffile *f, GElf_Shdr *symsh, size_t *len)
{
	Elf_Scn *scn;
	Elf_Data *d;
	GElf_Shdr sh;
	char *copy;

	if (symsh->sh_link == 0 || symsh->sh_link >= f->n_secs)
		return NULL;
	scn = elf_getscn(f->elf, symsh->sh_link);
	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB ||
	    !in_file(f, sh.sh_offset, sh.sh_size) || sh.sh_size > MAX_TABLE)
		return NULL;
	if (sparse(f, sh.sh_offset, sh.sh_size)) {
		*len = SIZE_MAX;	/* tells the caller why */
		return NULL;
	}
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf)
		return NULL;
	copy = malloc(d->d_size + 1);
	if (!copy)
		return NULL;
	memcpy(copy, d->d_buf, d->d_size);
	copy[d->d_size] = '\0';
	*len = d->d_size;
	return copy;
}

/* Extended section indexes (files with >= 0xff00 sections) live in a SHT_SYMTAB_SHNDX section. */
static Elf_Data *find_shndx(struct elffile *f, Elf_Scn *symscn)
{
	size_t idx = elf_ndxscn(symscn);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(f->elf, scn)) != NULL) {
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB_SHNDX && sh.sh_link == idx &&
		    in_file(f, sh.sh_offset, sh.sh_size))
			return elf_getdata(scn, NULL);
	}
	return NULL;
}

/* Append the function symbols of one table. The string table copy goes to es->strtabs[slot]. */
static int load_table(struct elfsym *es, struct elffile *f, Elf_Scn *scn, int src, int slot,
		      struct rawvec *rv)
{
	Elf_Data *data, *shndx_data;
	GElf_Shdr sh;
	GElf_Sym sym;
	Elf32_Word xndx;
	size_t strlen_tab = 0, nsyms, entsz, i;
	uint64_t *count = src == SRC_SYMTAB ? &es->stats.symtab : &es->stats.dynsym;
	char *strtab;
	int err;

	if (!gelf_getshdr(scn, &sh) || !in_file(f, sh.sh_offset, sh.sh_size)) {
		es->stats.malformed++;
		return 0;
	}
	if (sh.sh_size > MAX_TABLE) {
		es->stats.capped++;
		return 0;
	}
	if (sparse(f, sh.sh_offset, sh.sh_size)) {
		es->stats.sparse++;
		return 0;
	}
	strtab = copy_strtab(f, &sh, &strlen_tab);
	if (!strtab) {
		if (strlen_tab == SIZE_MAX)
			es->stats.sparse++;
		else
			es->stats.malformed++;
		return 0;
	}
	es->strtabs[slot] = strtab;
	es->strtab_bytes += strlen_tab;
	data = elf_getdata(scn, NULL);
	entsz = gelf_fsize(f->elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!data || !data->d_buf || entsz == 0) {
		es->stats.malformed++;
		return 0;
	}
	nsyms = data->d_size / entsz;
	shndx_data = find_shndx(f, scn);

	for (i = 1; i < nsyms; i++) {	/* entry 0 is the reserved null symbol */
		struct rawsym rs = { 0 };
		size_t shndx;
		int type;

		if (!gelf_getsymshndx(data, shndx_data, i, &sym, &xndx)) {
			es->stats.malformed++;
			break;
		}
		type = GELF_ST_TYPE(sym.st_info);
		shndx = sym.st_shndx == SHN_XINDEX ? xndx : sym.st_shndx;
		if (sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS || sym.st_shndx == SHN_COMMON ||
		    sym.st_value == 0 || sym.st_name == 0) {
			es->stats.skipped++;
			continue;
		}
		if (sym.st_name >= strlen_tab || shndx >= f->n_secs) {
			es->stats.malformed++;
			continue;
		}
		rs.name = strtab + sym.st_name;
		if (type == STT_FUNC || type == STT_GNU_IFUNC) {
			rs.type_rank = 0;
		} else if (type == STT_NOTYPE && f->secs[shndx].exec && rs.name[0] != '$' &&
			   strncmp(rs.name, ".L", 2) != 0) {
			/* Assembly entry points (_start, hand-written routines) often carry no type. */
			rs.type_rank = 1;
		} else {
			es->stats.skipped++;
			continue;
		}
		if (rv->n >= MAX_SYMS) {
			es->stats.capped++;
			continue;
		}
		rs.addr = sym.st_value;
		rs.size = sym.st_size;
		rs.bound = UINT64_MAX;
		if (f->secs[shndx].size && sym.st_value >= f->secs[shndx].addr &&
		    sym.st_value - f->secs[shndx].addr < f->secs[shndx].size)
			rs.bound = f->secs[shndx].addr + f->secs[shndx].size;
		rs.name_len = strnlen(rs.name, UINT32_MAX);
		rs.versioned = strchr(rs.name, '@') != NULL;
		rs.index = rv->n;
		rs.src = src;
		switch (GELF_ST_BIND(sym.st_info)) {
		case STB_GLOBAL: rs.bind_rank = 0; break;
		case STB_WEAK: rs.bind_rank = 1; break;
		default: rs.bind_rank = 2; break;
		}
		err = rawvec_push(rv, &rs);
		if (err)
			return err;
		(*count)++;
	}
	return 0;
}

/* ---- function ranges from .eh_frame -------------------------------------------------------- */

/* Bytes of a pointer in DWARF EH encoding enc (its format, low 4 bits); 0 when not fixed-size. */
static size_t eh_ptr_size(unsigned enc, size_t addr_size)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: return addr_size;
	case DW_EH_PE_udata2: case DW_EH_PE_sdata2: return 2;
	case DW_EH_PE_udata4: case DW_EH_PE_sdata4: return 4;
	case DW_EH_PE_udata8: case DW_EH_PE_sdata8: return 8;
	default: return 0;
	}
}

/* The FDE pointer encoding of a CIE (its 'R' augmentation), or -1 when it cannot be known. */
static int cie_fde_encoding(const Dwarf_CIE *cie, size_t addr_size)
{
	const uint8_t *d = cie->augmentation_data;
	size_t k = 0, n = cie->augmentation_data_size, sz;
	const char *a = cie->augmentation;

	if (!a || a[0] != 'z')
		return a && a[0] == '\0' ? DW_EH_PE_absptr : -1;
	for (a++; *a; a++) {
		switch (*a) {
		case 'R':
			return k < n ? d[k] : -1;
		case 'L':
			k++;
			break;
		case 'P':
			if (k >= n || !(sz = eh_ptr_size(d[k], addr_size)) || (d[k] & 0x70) == DW_EH_PE_aligned)
				return -1;
			k += 1 + sz;
			break;
		case 'S': case 'B':
			break;
		default:
			return -1;
		}
	}
	return DW_EH_PE_absptr;
}

static uint64_t rd_uint(const unsigned char *p, size_t size, int msb)
{
	uint64_t v = 0;

	for (size_t i = 0; i < size; i++)
		v |= (uint64_t)p[msb ? i : size - 1 - i] << (8 * (size - 1 - i));
	return v;
}

static uint64_t fde_start(const struct elfsym *es, size_t i)
{
	return es->fde_base + es->fdes[i].start;
}

static uint64_t fde_end(const struct elfsym *es, size_t i)
{
	return fde_start(es, i) + es->fdes[i].len;
}

/*
 * Where no symbol names an address, its function is still known: .eh_frame has one FDE per
 * function. The search table of .eh_frame_hdr (PT_GNU_EH_FRAME) lists every FDE's start and
 * place, sorted; libdw's dwarf_next_cfi reads the FDE and its CIE, whose pointer encoding gives
 * the size of the address_range that follows the start. Only the table layout GNU ld, gold and
 * lld write is read (a udata4 count, datarel sdata4 pairs): anything else leaves the file
 * without ranges, counted.
 */
static void load_fdes(struct elfsym *es, struct elffile *f)
{
	int msb = f->ehdr.e_ident[EI_DATA] == ELFDATA2MSB;
	size_t addr_size = f->ehdr.e_ident[EI_CLASS] == ELFCLASS64 ? 8 : 4;
	const unsigned char *p = NULL;
	size_t phnum, i, n = 0, k, ptr_size, off;
	uint64_t hdr_vaddr = 0, cie_off = UINT64_MAX;
	int cie_enc = -1;
	Elf_Data *d, *eh;
	GElf_Shdr eh_sh;
	GElf_Phdr ph;

	if (!f->eh_frame || !gelf_getshdr(f->eh_frame, &eh_sh) || eh_sh.sh_size > MAX_TABLE ||
	    elf_getphdrnum(f->elf, &phnum) != 0)
		return;
	for (i = 0; i < phnum && !p; i++) {
		if (!gelf_getphdr(f->elf, i, &ph) || ph.p_type != PT_GNU_EH_FRAME)
			continue;
		if (!in_file(f, ph.p_offset, ph.p_filesz) || ph.p_filesz < 12 ||
		    ph.p_filesz > MAX_TABLE) {
			es->stats.fde_malformed++;
			return;
		}
		d = elf_getdata_rawchunk(f->elf, ph.p_offset, ph.p_filesz, ELF_T_BYTE);
		if (!d || !d->d_buf || d->d_size != ph.p_filesz) {
			es->stats.fde_malformed++;
			return;
		}
		p = d->d_buf;
		n = d->d_size;
		hdr_vaddr = ph.p_vaddr;
	}
	eh = p ? elf_rawdata(f->eh_frame, NULL) : NULL;
	if (!eh || !eh->d_buf)
		return;
	ptr_size = eh_ptr_size(p[1], addr_size);	/* eh_frame_ptr: only skipped */
	if (p[0] != 1 || !ptr_size || p[2] != DW_EH_PE_udata4 ||
	    p[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || 4 + ptr_size + 4 > n) {
		es->stats.fde_malformed++;
		return;
	}
	off = 4 + ptr_size;
	k = rd_uint(p + off, 4, msb);
	off += 4;
	if (k > (n - off) / 8) {
		es->stats.fde_malformed++;
		k = (n - off) / 8;
	}
	if (k > MAX_FDES) {
		es->stats.capped++;
		k = MAX_FDES;
	}
	es->fdes = k ? calloc(k, sizeof(*es->fdes)) : NULL;
	for (i = 0; es->fdes && i < k; i++) {
		uint64_t start = hdr_vaddr + (int64_t)(int32_t)rd_uint(p + off + 8 * i, 4, msb);
		uint64_t fde_vaddr = hdr_vaddr + (int64_t)(int32_t)rd_uint(p + off + 8 * i + 4, 4, msb);
		Dwarf_CFI_Entry entry, cie;
		Dwarf_Off next;
		size_t sz;
		uint64_t len;

		if (fde_vaddr < eh_sh.sh_addr || fde_vaddr - eh_sh.sh_addr >= eh->d_size ||
		    dwarf_next_cfi(f->ehdr.e_ident, eh, true, fde_vaddr - eh_sh.sh_addr, &next,
				   &entry) != 0 || dwarf_cfi_cie_p(&entry))
			goto bad;
		if (entry.fde.CIE_pointer != cie_off) {	/* FDEs share few CIEs: keep the last */
			cie_off = entry.fde.CIE_pointer;
			cie_enc = dwarf_next_cfi(f->ehdr.e_ident, eh, true, cie_off, &next, &cie) == 0 &&
				  dwarf_cfi_cie_p(&cie) ? cie_fde_encoding(&cie.cie, addr_size) : -1;
		}
		/* initial_location, then address_range in the same format. */
		if (cie_enc < 0 || !(sz = eh_ptr_size(cie_enc, addr_size)) ||
		    entry.fde.end < entry.fde.start || (size_t)(entry.fde.end - entry.fde.start) < 2 * sz)
			goto bad;
		len = rd_uint(entry.fde.start + sz, sz, msb);
		/* Sorted and disjoint, or it is not the table it claims to be. */
		if (len == 0 || start + len < start || (es->n_fdes && start < fde_end(es, es->n_fdes - 1)))
			goto bad;
		if (!es->n_fdes)
			es->fde_base = start;
		if (start - es->fde_base > UINT32_MAX || len > UINT32_MAX) {
			es->stats.capped++;	/* code beyond 4 GiB of the first function */
			continue;
		}
		es->fdes[es->n_fdes++] = (struct fde){ (uint32_t)(start - es->fde_base), (uint32_t)len };
		continue;
bad:
		es->stats.fde_malformed++;
	}
	if (es->n_fdes && es->n_fdes < k) {
		struct fde *fdes = realloc(es->fdes, es->n_fdes * sizeof(*fdes));

		if (fdes)
			es->fdes = fdes;
	}
	es->stats.fdes = es->n_fdes;
	elf_errno();
}

/* Index of the FDE holding vaddr, or -1. */
static ssize_t fde_find(const struct elfsym *es, uint64_t vaddr)
{
	size_t lo = 0, hi = es->n_fdes;

	while (lo < hi) {	/* first FDE starting past vaddr */
		size_t mid = lo + (hi - lo) / 2;

		if (fde_start(es, mid) <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && vaddr < fde_end(es, lo - 1) ? (ssize_t)lo - 1 : -1;
}

/* Where the function holding addr ends by .eh_frame: its FDE's end, else the next FDE's start;
 * UINT64_MAX when no FDE says. */
static uint64_t fde_bound(const struct elfsym *es, uint64_t addr)
{
	ssize_t i = fde_find(es, addr);
	size_t lo = 0, hi = es->n_fdes;

	if (i >= 0)
		return fde_end(es, (size_t)i);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fde_start(es, mid) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < es->n_fdes ? fde_start(es, lo) : UINT64_MAX;
}

/* ---- debug files ---------------------------------------------------------------------------- */

static int crc_matches(int fd, uint32_t want)
{
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		crc = crc32(crc, buf, n);
		off += n;
	}
	return n == 0 && (uint32_t)crc == want;
}

static void refuse_outside(struct elfsym *es, const char *path)
{
	es->stats.debug_outside_refused++;
	if (!es->refused[0])
		snprintf(es->refused, sizeof(es->refused), "%s", path);
}

/* Try one candidate debug file: open inside the root, then outside it (spanprof's own root)
 * unless that is the same directory. Outside the root a file is taken only on the binary's build
 * id: a .gnu_debuglink of a container's binary must not name the host's files. Keeps its .symtab
 * handle in dbg. Returns 1 when dbg is usable, 0 otherwise (dbg closed). */
static int try_debug(struct elfsym *es, const struct elffile *main_f, int root_fd, int same_root,
		     const char *path, const uint32_t *crc, struct elffile *dbg)
{
	int pass, fd;

	for (pass = 0; pass < 2; pass++) {
		int outside = pass == 1;

		if (outside && same_root)
			break;
		fd = rootfs__open(outside ? AT_FDCWD : root_fd, path, O_RDONLY, S_IFREG,
				  ELFSYM_MAX_FILE, 0);
		if (fd < 0)
			continue;
		if (outside && !main_f->build_id_len) {
			close(fd);
			refuse_outside(es, path);
			continue;
		}
		if (elffile_open(dbg, fd, NULL) != 0)
			goto reject;
		if (dbg->ehdr.e_ident[EI_CLASS] != main_f->ehdr.e_ident[EI_CLASS] ||
		    dbg->ehdr.e_machine != main_f->ehdr.e_machine || !dbg->symtab)
			goto reject;
		if (crc && !crc_matches(dbg->fd, *crc))
			goto reject;
		/* A build id on both sides must agree, whichever way the file was found. */
		if (main_f->build_id_len &&
		    (dbg->build_id_len != main_f->build_id_len ||
		     memcmp(dbg->build_id, main_f->build_id, main_f->build_id_len) != 0)) {
			if (outside) {
				refuse_outside(es, path);
				goto close_dbg;
			}
			goto reject;
		}
		es->debug_path = strdup(path);
		if (!es->debug_path)
			goto close_dbg;
		return 1;
reject:
		es->stats.debug_rejected++;
close_dbg:
		elffile_close(dbg);
	}
	return 0;
}

/* Read the .gnu_debuglink name and CRC. Returns 1 when present and sane. */
static int read_debuglink(struct elffile *f, char *name, size_t name_size, uint32_t *crc)
{
	GElf_Shdr sh;
	Elf_Data *d;
	const unsigned char *p;
	size_t len, crc_off;

	if (!f->debuglink || !gelf_getshdr(f->debuglink, &sh) || !in_file(f, sh.sh_offset, sh.sh_size))
		return 0;
	d = elf_getdata(f->debuglink, NULL);
	if (!d || !d->d_buf)
		return 0;
	p = d->d_buf;
	len = strnlen((const char *)p, d->d_size);
	crc_off = (len + 4) & ~(size_t)3;	/* name, NUL, pad to 4 */
	if (len == 0 || len >= name_size || crc_off + 4 > d->d_size)
		return 0;
	memcpy(name, p, len);
	name[len] = '\0';
	/* The name is a file name: one with a slash could point anywhere on the host. */
	if (strchr(name, '/') || strcmp(name, "..") == 0 || strcmp(name, ".") == 0)
		return 0;
	if (f->ehdr.e_ident[EI_DATA] == ELFDATA2MSB)
		*crc = (uint32_t)p[crc_off] << 24 | p[crc_off + 1] << 16 | p[crc_off + 2] << 8 | p[crc_off + 3];
	else
		*crc = (uint32_t)p[crc_off + 3] << 24 | p[crc_off + 2] << 16 | p[crc_off + 1] << 8 | p[crc_off];
	return 1;
}

/* 1 when root_fd is spanprof's own root (a host process): looking outside it finds nothing new. */
static int is_own_root(int root_fd)
{
	struct stat a, b;

	return root_fd == AT_FDCWD ||
	       (fstat(root_fd, &a) == 0 && stat("/", &b) == 0 && a.st_dev == b.st_dev &&
		a.st_ino == b.st_ino);
}

static int find_debug(struct elfsym *es, struct elffile *f, int root_fd, const char *path_hint,
		      struct elffile *dbg)
{
	char link[256], dir[PATH_MAX], path[sizeof(dir) + sizeof(link) + 32];
	int same_root = is_own_root(root_fd);
	const char *slash;
	uint32_t crc;

	if (f->build_id_len >= 2) {
		char hex[2 * MAX_BUILD_ID + 1];

		hex_encode(hex, f->build_id, f->build_id_len);
		snprintf(path, sizeof(path), DEBUG_DIR "/.build-id/%.2s/%s.debug", hex, hex + 2);
		if (try_debug(es, f, root_fd, same_root, path, NULL, dbg))
			return 1;
	}
	if (!read_debuglink(f, link, sizeof(link), &crc))
		return 0;
	if (!path_hint || path_hint[0] != '/' || !(slash = strrchr(path_hint, '/')) ||
	    (size_t)(slash - path_hint) >= sizeof(dir))
		return 0;
	memcpy(dir, path_hint, slash - path_hint);
	dir[slash - path_hint] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, link);
	if (try_debug(es, f, root_fd, same_root, path, &crc, dbg))
		return 1;
	snprintf(path, sizeof(path), "%s/.debug/%s", dir, link);
	if (try_debug(es, f, root_fd, same_root, path, &crc, dbg))
		return 1;
	snprintf(path, sizeof(path), DEBUG_DIR "%s/%s", dir, link);
	return try_debug(es, f, root_fd, same_root, path, &crc, dbg);
}

/* ---- the table ------------------------------------------------------------------------------ */

/* Address order; at one address the preferred alias first: global, then typed, then without a
 * version suffix, then .symtab, then the shorter name, then load order. */
static int rawsym_cmp(const void *a, const void *b)
{
	const struct rawsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->bind_rank != y->bind_rank)
		return x->bind_rank < y->bind_rank ? -1 : 1;
	if (x->type_rank != y->type_rank)
		return x->type_rank < y->type_rank ? -1 : 1;
	if (x->versioned != y->versioned)
		return x->versioned < y->versioned ? -1 : 1;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	if (x->name_len != y->name_len)
		return x->name_len < y->name_len ? -1 : 1;
	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return 0;
}

/*
 * Once built, the table holds what lookups need: arrays of the symbols kept (aliases are
 * dropped: libc's .symtab and .dynsym give 9,640 for 3,706), and of the string tables (data,
 * undefined and alias names too: libc's 165 KB) the names kept. Each step is skipped when out
 * of memory: the table is then larger, not wrong.
 */
static void shrink_table(struct elfsym *es)
{
	size_t bytes = 0, i, k;
	struct sym *syms;
	uint64_t *addrs;
	char *names, *w;

	if (!es->n)
		return;
	if ((syms = realloc(es->syms, es->n * sizeof(*es->syms))))
		es->syms = syms;
	if ((addrs = realloc(es->addrs, es->n * sizeof(*es->addrs))))
		es->addrs = addrs;
	for (i = 0; i < es->n; i++)
		bytes += strlen(es->syms[i].name) + 1;
	if (bytes >= es->strtab_bytes || !(names = malloc(bytes)))
		return;
	for (i = 0, w = names; i < es->n; i++) {
		size_t len = strlen(es->syms[i].name) + 1;

		memcpy(w, es->syms[i].name, len);
		es->syms[i].name = w;
		w += len;
	}
	for (k = 0; k < sizeof(es->strtabs) / sizeof(es->strtabs[0]); k++) {
		free(es->strtabs[k]);
		es->strtabs[k] = NULL;
	}
	es->strtabs[0] = names;
	es->strtab_bytes = bytes;
}

static int build_table(struct elfsym *es, struct rawvec *rv)
{
	size_t i, j, n = 0;
	uint64_t maxend = 0;

	if (rv->n == 0)
		return 0;
	qsort(rv->v, rv->n, sizeof(*rv->v), rawsym_cmp);
	es->syms = calloc(rv->n, sizeof(*es->syms));
	es->addrs = calloc(rv->n, sizeof(*es->addrs));
	if (!es->syms || !es->addrs)
		return -ENOMEM;

	for (i = 0; i < rv->n; i = j) {
		const struct rawsym *best = &rv->v[i];
		uint64_t size = best->size;

		/* One run of aliases: keep the first (preferred) name, the largest size. */
		for (j = i + 1; j < rv->n && rv->v[j].addr == best->addr; j++) {
			if (rv->v[j].size > size)
				size = rv->v[j].size;
			es->stats.aliases++;
		}
		es->addrs[n] = best->addr;
		es->syms[n].name = best->name;
		if (size) {
			es->syms[n].end = best->addr + size < best->addr ? UINT64_MAX : best->addr + size;
		} else {
			/* Unsized (assembly) symbol: runs to the next symbol, never past its section,
			 * nor into the next function .eh_frame knows (a stripped file's hidden ones). */
			uint64_t end = j < rv->n ? rv->v[j].addr : UINT64_MAX;

			if (best->bound < end)
				end = best->bound;
			if (fde_bound(es, best->addr) < end)
				end = fde_bound(es, best->addr);
			es->syms[n].end = end == UINT64_MAX ? best->addr + 1 : end;
		}
		n++;
	}
	for (i = 0; i < n; i++) {
		if (es->syms[i].end > maxend)
			maxend = es->syms[i].end;
		es->syms[i].maxend = maxend;
	}
	es->n = n;
	shrink_table(es);
	return 0;
}

/*
 * Both constructors: the symbols of the ELF file at fd (taken). A binary (want_id NULL): its
 * segments, FDEs, .symtab or a debug file's, and .dynsym. A debug file found elsewhere (want_id
 * its binary's build id): its build id must be want_id and its .symtab is all that is read.
 */
static struct elfsym *load(int fd, const char *path_hint, int root_fd, const char *want_id)
{
	struct elffile f = { .fd = -1 }, dbg = { .fd = -1 };
	struct rawvec rv = { 0 };
	struct elfsym *es;
	int err;

	if (fd < 0) {
		errno = EBADF;
		return NULL;
	}
	es = calloc(1, sizeof(*es));
	if (!es) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	err = elffile_open(&f, fd, want_id ? NULL : es);
	if (err)
		goto close_files;
	if (f.build_id_len)
		hex_encode(es->build_id, f.build_id, f.build_id_len);
	es->ei_class = f.ehdr.e_ident[EI_CLASS];
	es->machine = f.ehdr.e_machine;
	if (want_id) {
		err = strcmp(es->build_id, want_id) ? -EBADMSG : !f.symtab ? -ENOEXEC : 0;
		if (!err && path_hint && !(es->debug_path = strdup(path_hint)))
			err = -ENOMEM;
		if (err)
			goto close_files;
	} else {
		load_fdes(es, &f);
	}

	if (f.symtab) {
		err = load_table(es, &f, f.symtab, SRC_SYMTAB, 0, &rv);
		if (err)
			goto close_files;
	} else if (find_debug(es, &f, root_fd, path_hint, &dbg)) {
		/* Only the debug file's symbols are used: its segments describe NOBITS sections, so
		 * offsets still go through the main file's PT_LOAD. */
		err = load_table(es, &dbg, dbg.symtab, SRC_SYMTAB, 2, &rv);
		if (err)
			goto close_files;
	}
	if (f.dynsym && !want_id) {
		err = load_table(es, &f, f.dynsym, SRC_DYNSYM, 1, &rv);
		if (err)
			goto close_files;
	}
	err = build_table(es, &rv);
	if (err)
		goto close_files;
	es->stats.segments = es->n_segs;
	elf_errno();	/* nothing of a skipped table should linger in libelf's per-thread error */

close_files:
	elffile_close(&dbg);
	elffile_close(&f);
	free(rv.v);
	if (err) {
		elfsym__free(es);
		errno = -err;
		return NULL;
	}
	return es;
}

struct elfsym *elfsym__open_fd(int fd, const char *path_hint, int root_fd)
{
	return load(fd, path_hint, root_fd, NULL);
}

struct elfsym *elfsym__open_debug(int fd, const char *build_id, const char *path)
{
	if (!build_id) {
		if (fd >= 0)
			close(fd);
		errno = EBADMSG;
		return NULL;
	}
	return load(fd, path, AT_FDCWD, build_id);
}

int elfsym__attach_debug(struct elfsym *es, struct elfsym *dbg)
{
	if (!es || !dbg || es->dbg || !es->build_id[0] || strcmp(es->build_id, dbg->build_id) != 0 ||
	    es->ei_class != dbg->ei_class || es->machine != dbg->machine) {
		elfsym__free(dbg);
		return -EINVAL;
	}
	es->dbg = dbg;
	es->stats.symtab += dbg->stats.symtab;
	return 0;
}

int elfsym__needs_debug(const struct elfsym *es)
{
	return es && es->build_id[0] && es->stats.symtab == 0 && !es->dbg;
}

const char *elfsym__debug_refused(const struct elfsym *es)
{
	return es && es->refused[0] ? es->refused : NULL;
}

int elfsym__function_start(const struct elfsym *es, uint64_t vaddr, uint64_t *start)
{
	ssize_t i = es ? fde_find(es, vaddr) : -1;

	if (i < 0)
		return -ENOENT;
	*start = fde_start(es, (size_t)i);
	return 0;
}

int elfsym__read_build_id(int fd, char *hex, size_t len)
{
	struct elffile f = { .fd = -1 };
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0), err;

	if (len)
		hex[0] = 0;
	if (dfd < 0)
		return -errno;
	err = elffile_open(&f, dfd, NULL);
	if (!err && !f.build_id_len)
		err = -ENOENT;
	if (!err && 2 * f.build_id_len + 1 > len)
		err = -ENAMETOOLONG;
	if (!err)
		hex_encode(hex, f.build_id, f.build_id_len);
	elffile_close(&f);
	elf_errno();
	return err;
}

struct elfsym *elfsym__open(int root_fd, const char *path)
{
	int fd = rootfs__open(root_fd, path, O_RDONLY, S_IFREG, ELFSYM_MAX_FILE, 0);

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	return elfsym__open_fd(fd, path, root_fd);
}

void elfsym__free(struct elfsym *es)
{
	size_t i;

	if (!es)
		return;
	for (i = 0; i < es->n; i++) {
		if (es->syms[i].flags & SYM_NAME_OWNED)
			free((char *)es->syms[i].name);
	}
	free(es->syms);
	free(es->addrs);
	for (i = 0; i < sizeof(es->strtabs) / sizeof(es->strtabs[0]); i++)
		free(es->strtabs[i]);
	free(es->debug_path);
	free(es->fdes);
	elfsym__free(es->dbg);
	free(es);
}

const char *elfsym__build_id(const struct elfsym *es)
{
	return es && es->build_id[0] ? es->build_id : NULL;
}

const char *elfsym__debug_file(const struct elfsym *es)
{
	if (es && !es->debug_path && es->dbg)
		return es->dbg->debug_path;
	return es ? es->debug_path : NULL;
}

uint64_t elfsym__count(const struct elfsym *es)
{
	return es ? es->n : 0;
}

uint64_t elfsym__bytes(const struct elfsym *es)
{
	if (!es)
		return 0;
	return sizeof(*es) + es->n * (sizeof(*es->syms) + sizeof(*es->addrs)) + es->strtab_bytes +
	       es->demangled_bytes + es->n_fdes * sizeof(*es->fdes) +
	       (es->debug_path ? strlen(es->debug_path) + 1 : 0) + elfsym__bytes(es->dbg);
}

void elfsym__stats(const struct elfsym *es, struct elfsym_stats *out)
{
	if (es)
		*out = es->stats;
	else
		memset(out, 0, sizeof(*out));
}

int elfsym__file_to_vaddr(const struct elfsym *es, uint64_t file_off, uint64_t *vaddr)
{
	int pass;
	size_t i;

	/* A page of a mapping can hold the end of one segment and the start of the next; samples
	 * land in code, so executable segments answer first. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < es->n_segs; i++) {
			const struct seg *s = &es->segs[i];

			if (s->exec != (pass == 0))
				continue;
			if (file_off >= s->off && file_off - s->off < s->filesz) {
				*vaddr = file_off - s->off + s->vaddr;
				return 0;
			}
		}
	}
	return -ENOENT;
}

static const char *sym_name(struct elfsym *es, struct sym *s)
{
	char *dm;
	int status = -1;

	if (s->flags & SYM_DEMANGLE_TRIED)
		return s->name;
	s->flags |= SYM_DEMANGLE_TRIED;
	if (s->name[0] != '_' || s->name[1] != 'Z' || strnlen(s->name, MAX_DEMANGLE + 1) > MAX_DEMANGLE)
		return s->name;
	dm = __cxa_demangle(s->name, NULL, NULL, &status);
	if (status == 0 && dm) {
		es->demangled_bytes += strlen(dm) + 1;
		s->name = dm;
		s->flags |= SYM_NAME_OWNED;
	} else {
		free(dm);
	}
	return s->name;
}

void elfsym__each(const struct elfsym *es, void (*fn)(const char *name, void *arg), void *arg)
{
	if (es && es->dbg)
		elfsym__each(es->dbg, fn, arg);
	for (size_t i = 0; es && i < es->n; i++)
		fn(es->syms[i].name, arg);
}

const char *elfsym__lookup_vaddr(struct elfsym *es, uint64_t vaddr, uint64_t *sym_off)
{
	size_t lo = 0, hi, steps;
	ssize_t i;

	if (es && es->dbg) {
		const char *name = elfsym__lookup_vaddr(es->dbg, vaddr, sym_off);

		if (name)
			return name;
	}
	if (!es || es->n == 0)
		return NULL;
	hi = es->n;
	/* First entry with addr > vaddr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (es->addrs[mid] <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Usually the nearest symbol below covers vaddr; a symbol nested in a larger one can hide
	 * the larger one, which maxend finds without scanning the whole table. */
	for (i = (ssize_t)lo - 1, steps = 0; i >= 0 && steps < BACKWALK; i--, steps++) {
		struct sym *s = &es->syms[i];

		if (vaddr < s->end) {
			if (sym_off)
				*sym_off = vaddr - es->addrs[i];
			return sym_name(es, s);
		}
		if (s->maxend <= vaddr)
			break;
	}
	return NULL;
}

const char *elfsym__lookup(struct elfsym *es, uint64_t file_off, uint64_t *sym_off)
{
	uint64_t vaddr;

	if (!es || elfsym__file_to_vaddr(es, file_off, &vaddr) != 0)
		return NULL;
	return elfsym__lookup_vaddr(es, vaddr, sym_off);
}
