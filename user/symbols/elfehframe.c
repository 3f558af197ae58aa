/* elfehframe.c: function ranges from an ELF file's .eh_frame FDEs, for the symbol reader
 * (elfsym.c): where a function without a symbol starts and ends. */
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

uint64_t elf_fde_start(const struct elfsym *es, size_t i)
{
	return es->fde_base + es->fdes[i].start;
}

static uint64_t fde_end(const struct elfsym *es, size_t i)
{
	return elf_fde_start(es, i) + es->fdes[i].len;
}

/*
 * Where no symbol names an address, its function is still known: .eh_frame has one FDE per
 * function. The search table of .eh_frame_hdr (PT_GNU_EH_FRAME) lists every FDE's start and
 * place, sorted; libdw's dwarf_next_cfi reads the FDE and its CIE, whose pointer encoding gives
 * the size of the address_range that follows the start. Only the table layout GNU ld, gold and
 * lld write is read (a udata4 count, datarel sdata4 pairs): anything else leaves the file
 * without ranges, counted.
 */
void elf_load_fdes(struct elfsym *es, struct elffile *f)
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
		if (!elf_in_file(f, ph.p_offset, ph.p_filesz) || ph.p_filesz < 12 ||
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
ssize_t elf_fde_find(const struct elfsym *es, uint64_t vaddr)
{
	size_t lo = 0, hi = es->n_fdes;

	while (lo < hi) {	/* first FDE starting past vaddr */
		size_t mid = lo + (hi - lo) / 2;

		if (elf_fde_start(es, mid) <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && vaddr < fde_end(es, lo - 1) ? (ssize_t)lo - 1 : -1;
}

/* Where the function holding addr ends by .eh_frame: its FDE's end, else the next FDE's start;
 * UINT64_MAX when no FDE says. */
uint64_t elf_fde_bound(const struct elfsym *es, uint64_t addr)
{
	ssize_t i = elf_fde_find(es, addr);
	size_t lo = 0, hi = es->n_fdes;

	if (i >= 0)
		return fde_end(es, (size_t)i);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (elf_fde_start(es, mid) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < es->n_fdes ? elf_fde_start(es, lo) : UINT64_MAX;
}
