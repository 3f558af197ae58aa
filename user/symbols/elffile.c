/* elffile.c: one ELF file read for the symbol reader (elfsym.c): headers, segments, sections,
 * build id, and its .symtab / .dynsym functions. */
#include "elfsym.h"
#include "elfsym_int.h"
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

/* ---- reading one ELF file ------------------------------------------------------------------- */

void elffile_close(struct elffile *f)
{
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	free(f->secs);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

void elf_hex_encode(char *out, const unsigned char *in, size_t len)
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

int elf_in_file(const struct elffile *f, uint64_t off, uint64_t len)
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
int elffile_open(struct elffile *f, int fd, struct elfsym *es)
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
			 elf_in_file(f, sh.sh_offset, sh.sh_size))
			find_build_id(f, elf_getdata(scn, NULL));
		else if (sh.sh_type == SHT_PROGBITS &&
			 (name = elf_strptr(f->elf, shstrndx, sh.sh_name))) {
			if (!f->debuglink && strcmp(name, ".gnu_debuglink") == 0)
				f->debuglink = scn;
			else if (!f->eh_frame && strcmp(name, ".eh_frame") == 0 &&
				 elf_in_file(f, sh.sh_offset, sh.sh_size))
				f->eh_frame = scn;
		}
	}

	/* Files whose section headers were removed still have their notes in PT_NOTE. */
	for (i = 0; i < phnum && !f->build_id_len; i++) {
		if (!gelf_getphdr(f->elf, i, &ph) || ph.p_type != PT_NOTE ||
		    !elf_in_file(f, ph.p_offset, ph.p_filesz) || ph.p_filesz == 0)
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
	    !elf_in_file(f, sh.sh_offset, sh.sh_size) || sh.sh_size > MAX_TABLE)
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
		    elf_in_file(f, sh.sh_offset, sh.sh_size))
			return elf_getdata(scn, NULL);
	}
	return NULL;
}

/* Append the function symbols of one table. The string table copy goes to es->strtabs[slot]. */
int elf_load_table(struct elfsym *es, struct elffile *f, Elf_Scn *scn, int src, int slot,
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

	if (!gelf_getshdr(scn, &sh) || !elf_in_file(f, sh.sh_offset, sh.sh_size)) {
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
