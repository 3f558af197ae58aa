/* pe.c: the ReadyToRun reader's (r2r.c) bounded input and PE/COFF: the DOS and PE headers,
 * the section table (RVA to file offset), the CLI header. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prefault.h"
#include "r2r.h"
#include "r2r_int.h"

/* ---- bounded input --------------------------------------------------------------------- */

int pe_src_read(struct r2r_image *img, const struct src *s, uint64_t off, void *dst,
		    size_t len)
{
	size_t done = 0;

	if (off > s->size || len > s->size - off)
		return -ERANGE;
	if (s->buf) {
		memcpy(dst, s->buf + off, len);
		img->st.bytes_read += len;
		return 0;
	}
	while (done < len) {
		ssize_t n = pread(s->fd, (uint8_t *)dst + done, len - done, off + done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ERANGE;	/* shrank under us */
		done += n;
	}
	img->st.bytes_read += len;
	return 0;
}

/* The file offset of [rva, rva + len) when one section's file data holds all of it. */
int pe_rva_to_off(const struct r2r_image *img, uint32_t rva, uint32_t len, uint64_t *off)
{
	for (uint32_t i = 0; i < img->nsec; i++) {
		const struct pe_sec *s = &img->sec[i];

		if (rva >= s->va && rva - s->va < s->rawsize && len <= s->rawsize - (rva - s->va)) {
			*off = (uint64_t)s->raw + (rva - s->va);
			return 0;
		}
	}
	return -ENOENT;
}

int r2r__file_to_rva(const struct r2r_image *img, uint64_t off, uint32_t *rva)
{
	for (uint32_t i = 0; img && i < img->nsec; i++) {
		const struct pe_sec *s = &img->sec[i];

		if (off >= s->raw && off - s->raw < s->rawsize) {
			*rva = s->va + (uint32_t)(off - s->raw);
			return 0;
		}
	}
	return -ENOENT;
}

/* A copy of [rva, rva + len) of the image, at most cap bytes: NULL with *st set. */
uint8_t *pe_read_rva(struct r2r_image *img, const struct src *s, uint32_t rva, uint32_t len,
			 uint64_t cap, enum r2r_status *st)
{
	uint64_t off;
	uint8_t *buf;

	if (len > cap) {
		*st = R2R_TOO_BIG;
		return NULL;
	}
	if (pe_rva_to_off(img, rva, len, &off)) {
		*st = R2R_BAD_HEADER;
		return NULL;
	}
	buf = malloc(len ? len : 1);
	if (!buf) {
		*st = R2R_NOMEM;
		return NULL;
	}
	prefault__write(buf, len);
	if (pe_src_read(img, s, off, buf, len)) {
		free(buf);
		*st = R2R_BAD_HEADER;	/* the section table promised bytes the file lacks */
		return NULL;
	}
	img->st.mem_bytes += len;
	return buf;
}

/* ---- PE/COFF and the CLI header ---------------------------------------------------------- */

/* Machines an R2R image runs on: the COFF machine XORed with an OS value (readytorun.h). */
static int machine_arch(uint16_t m, int *arm64)
{
	static const uint16_t os[] = { 0, 0x7b79 /* Linux */, 0x4644 /* Apple */,
				       0xadc4 /* FreeBSD */, 0x1993 /* NetBSD */, 0x1992 /* SunOS */ };

	for (size_t i = 0; i < sizeof(os) / sizeof(os[0]); i++) {
		if ((uint16_t)(m ^ os[i]) == 0x8664) {
			*arm64 = 0;
			return 0;
		}
		if ((uint16_t)(m ^ os[i]) == 0xaa64) {
			*arm64 = 1;
			return 0;
		}
	}
	return -1;
}

enum r2r_status pe_parse(struct r2r_image *img, const struct src *s, struct hdrs *h)
{
	uint8_t dos[64], coff[24], opt[240], sec[40], cor[72];
	uint32_t pe, nsec, optsz, ndirs, dir_off;
	uint16_t magic;
	uint64_t off;

	if (pe_src_read(img, s, 0, dos, sizeof(dos)) || dos[0] != 'M' || dos[1] != 'Z')
		return R2R_NOT_PE;
	pe = le32(dos + 0x3c);
	if (pe > (1u << 20) || pe_src_read(img, s, pe, coff, sizeof(coff)) || memcmp(coff, "PE\0\0", 4))
		return R2R_NOT_PE;
	nsec = le16(coff + 6);
	optsz = le16(coff + 20);
	if (optsz > sizeof(opt) || optsz < 112 || pe_src_read(img, s, pe + 24, opt, optsz))
		return R2R_NOT_PE;
	magic = le16(opt);
	if (magic != 0x20b && magic != 0x10b)
		return R2R_NOT_PE;
	/* The data directories: after 96 (PE32) or 112 (PE32+) bytes, their count just before. */
	dir_off = magic == 0x20b ? 112 : 96;
	if (optsz < dir_off)
		return R2R_NOT_PE;
	ndirs = le32(opt + dir_off - 4);
	if (ndirs <= 14 || dir_off + 15 * 8 > optsz)
		return R2R_NOT_CLI;
	if (nsec == 0 || nsec > PE_MAX_SECTIONS)
		return R2R_BAD_HEADER;
	for (uint32_t i = 0; i < nsec; i++) {
		struct pe_sec *ps = &img->sec[i];

		if (pe_src_read(img, s, (uint64_t)pe + 24 + optsz + 40ull * i, sec, sizeof(sec)))
			return R2R_NOT_PE;
		ps->vsize = le32(sec + 8);
		ps->va = le32(sec + 12);
		ps->rawsize = le32(sec + 16);
		ps->raw = le32(sec + 20);
		/* Only what the file holds counts: a section cut short is read as far as it goes. */
		if (ps->raw >= s->size)
			ps->rawsize = 0;
		else if (ps->rawsize > s->size - ps->raw)
			ps->rawsize = (uint32_t)(s->size - ps->raw);
		if (ps->rawsize > ps->vsize && ps->vsize)
			ps->rawsize = ps->vsize;
	}
	img->nsec = nsec;
	if (!le32(opt + dir_off + 14 * 8))
		return R2R_NOT_CLI;
	if (pe_rva_to_off(img, le32(opt + dir_off + 14 * 8), sizeof(cor), &off) ||
	    pe_src_read(img, s, off, cor, sizeof(cor)))
		return R2R_BAD_HEADER;
	h->md_rva = le32(cor + 8);
	h->md_size = le32(cor + 12);
	h->r2r_rva = le32(cor + 64);
	h->r2r_size = le32(cor + 68);
	if (!h->r2r_rva)
		return R2R_NOT_R2R;	/* IL only (reference facades are even "x86") */
	if (machine_arch(le16(coff + 4), &img->arm64))
		return R2R_UNSUPPORTED;
	return R2R_OK;
}
