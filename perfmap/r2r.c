/* r2r.c: ReadyToRun images: PE/COFF, the CLI header, the READYTORUN header and its sections,
 * and the ECMA-335 metadata needed to name precompiled methods as the runtime's perf map does. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "intern.h"
#include "prefault.h"
#include "r2r.h"
#include "siphash.h"
#include "symbudget.h"

/*
 * Checked against the .NET 10.0.12 shared framework (crossgen2 output, R2R 16.0) and the
 * dotnet/runtime sources: docs/design/coreclr/botr/readytorun-format.md, readytorun.h,
 * nativeformatreader.h (NativeArray, NativeHashtable), ECMA-335 II.22-II.24 (metadata), and
 * the runtime's names: MethodDesc::GetFullMethodInfo = PrettyPrintSig (formattype.cpp, the
 * ILDASM type syntax) of the method's signature around "[Assembly] Class::Method", where Class
 * is TypeString::AppendType of the method table (nesting with '+', instantiation in [...]).
 */

#define PE_MAX_SECTIONS	96
#define R2R_SIGNATURE	0x00525452u	/* "RTR" */
#define R2R_MAX_SECTIONS 256
#define MD_SIGNATURE	0x424A5342u	/* "BSJB" */
#define NAME_MAX_LEN	2048
#define SIG_MAX_DEPTH	24
#define NAME_MAX_STEPS	4096	/* types and classes visited for one name (TypeSpecs can nest) */

enum {	/* READYTORUN_SECTION_* */
	SEC_RUNTIME_FUNCTIONS = 102,
	SEC_METHODDEF_ENTRYPOINTS = 103,
	SEC_INSTANCE_ENTRYPOINTS = 109,
	SEC_COMPONENT_ASSEMBLIES = 115,
	SEC_HOT_COLD_MAP = 120,
};
#define R2R_FLAG_COMPONENT 0x20

enum {	/* READYTORUN_METHOD_SIG_* */
	MSIG_UNBOXING = 0x01, MSIG_INSTANTIATING = 0x02, MSIG_METHOD_INST = 0x04,
	MSIG_SLOT = 0x08, MSIG_MEMBERREF = 0x10, MSIG_CONSTRAINED = 0x20, MSIG_OWNER_TYPE = 0x40,
	MSIG_UPDATE_CONTEXT = 0x80,
};

enum {	/* CorElementType, and the runtime's zap signature extensions */
	ET_END = 0x00, ET_VOID = 0x01, ET_BOOLEAN, ET_CHAR, ET_I1, ET_U1, ET_I2, ET_U2, ET_I4,
	ET_U4, ET_I8, ET_U8, ET_R4, ET_R8, ET_STRING, ET_PTR = 0x0f, ET_BYREF = 0x10,
	ET_VALUETYPE = 0x11, ET_CLASS = 0x12, ET_VAR = 0x13, ET_ARRAY = 0x14, ET_GENERICINST = 0x15,
	ET_TYPEDBYREF = 0x16, ET_I = 0x18, ET_U = 0x19, ET_FNPTR = 0x1b, ET_OBJECT = 0x1c,
	ET_SZARRAY = 0x1d, ET_MVAR = 0x1e, ET_CMOD_REQD = 0x1f, ET_CMOD_OPT = 0x20,
	ET_INTERNAL = 0x21, ET_SENTINEL = 0x41, ET_PINNED = 0x45,
	ET_NATIVE_VALUETYPE_ZAPSIG = 0x3d, ET_CANON_ZAPSIG = 0x3e, ET_MODULE_ZAPSIG = 0x3f,
};

enum {	/* metadata tables used by name */
	T_MODULE = 0x00, T_TYPEREF = 0x01, T_TYPEDEF = 0x02, T_METHODDEF = 0x06,
	T_MODULEREF = 0x1a, T_TYPESPEC = 0x1b, T_ASSEMBLY = 0x20, T_ASSEMBLYREF = 0x23,
	T_NESTEDCLASS = 0x29, T__MAX = 0x2d,
};

/*
 * Table schemas (ECMA-335 II.22), one byte per column: 'h' u16, 'w' u32, 's' #Strings, 'g'
 * #GUID, 'b' #Blob index; 0x80|t an index into table t; 'A'+k the coded index k below.
 */
static const char *const schema[T__MAX] = {
	"hsggg", "Lss", "wssA\x84\x86", "\x84", "hsb", "\x86", "whhsb\x88", "\x88", "hhs",
	"\x82" "A", "Fsb", "hBb", "CKb", "Db", "hEb", "hw\x82", "w\x84", "b", "\x82\x94", "\x94",
	"hsA", "\x82\x97", "\x97", "hsb", "h\x86G", "\x82HH", "s", "b", "hIs\x9a", "w\x84", "ww",
	"w", "whhhhwbss", "w", "www", "hhhhwbssb", "w\xa3", "www\xa3", "wsb", "wwssJ", "wwsJ",
	"\x82\x82", "hhMs", "Hb", "\xaa" "A",
};

#define NOTAB 0xff
struct coded { uint8_t bits, n; uint8_t tab[22]; };
static const struct coded coded[13] = {
	{ 2, 3, { 0x02, 0x01, 0x1b } },				/* TypeDefOrRef */
	{ 2, 3, { 0x04, 0x08, 0x17 } },				/* HasConstant */
	{ 5, 22, { 0x06, 0x04, 0x01, 0x02, 0x08, 0x09, 0x0a, 0x00, 0x0e, 0x17, 0x14, 0x11,
		   0x1a, 0x1b, 0x20, 0x23, 0x26, 0x27, 0x28, 0x2a, 0x2c, 0x2b } },	/* HasCustomAttribute */
	{ 1, 2, { 0x04, 0x08 } },				/* HasFieldMarshal */
	{ 2, 3, { 0x02, 0x06, 0x20 } },				/* HasDeclSecurity */
	{ 3, 5, { 0x02, 0x01, 0x1a, 0x06, 0x1b } },		/* MemberRefParent */
	{ 1, 2, { 0x14, 0x17 } },				/* HasSemantics */
	{ 1, 2, { 0x06, 0x0a } },				/* MethodDefOrRef */
	{ 1, 2, { 0x04, 0x06 } },				/* MemberForwarded */
	{ 2, 3, { 0x26, 0x23, 0x27 } },				/* Implementation */
	{ 3, 5, { NOTAB, NOTAB, 0x06, 0x0a, NOTAB } },		/* CustomAttributeType */
	{ 2, 4, { 0x00, 0x1a, 0x23, 0x01 } },			/* ResolutionScope */
	{ 1, 2, { 0x02, 0x06 } },				/* TypeOrMethodDef */
};

struct pe_sec {
	uint32_t va, vsize, raw, rawsize;
};

struct md_table {
	const uint8_t *base;
	uint32_t rows, row_size;
	uint8_t ncols;
	uint8_t off[10], width[10];
};

/* A runtime function and the method its code belongs to: 16 bytes, no per-method table (most
 * methods are never looked up). Cold parts and funclets carry their method's rid and owner. */
struct rfunc {
	uint32_t begin, end;
	uint32_t rid;		/* MethodDef row; 0: no method known */
	uint32_t owner_off;	/* owner type signature in the instance section (0: the declaring type) */
};

/* The name of a method looked up: an open-addressed table by method (rid and owner), so only
 * what is sampled costs memory. */
struct named {
	uint32_t rid;		/* 0: empty */
	uint32_t owner_off;
	int32_t name;		/* intern id; -2 cannot be named */
};

struct r2r_key {
	uint64_t dev, ino, size;
	int64_t mtime_ns, ctime_ns;
};

struct r2r_image {
	struct r2r_image_stats st;
	struct r2r_limits lim;
	struct pe_sec sec[PE_MAX_SECTIONS];
	uint32_t nsec;
	int arm64;
	/* metadata (kept: names are formatted on first lookup) */
	uint8_t *md;
	const uint8_t *strings, *blob;
	uint32_t strings_len, blob_len;
	uint8_t str4, guid4, blob4;
	struct md_table tab[T__MAX];
	uint32_t *enclosing;	/* TypeDef rid -> enclosing TypeDef rid, 0: not nested */
	const char *assembly;
	/* the instance entry point section (owner type signatures point into it) */
	uint8_t *inst;
	uint32_t inst_rva, inst_len;
	struct rfunc *rf;
	uint32_t nrf;
	uint32_t nmethods;	/* functions with an entry point of their own */
	struct named *named;
	uint32_t named_cap, nnamed;
	struct intern *names;
	/* the shared cache (r2r__get) */
	struct r2r_key key;
	uint32_t refs;
	uint64_t charged;	/* bytes taken from the symbol budget */
	struct r2r_image *next;
};

/* ---- bounded input --------------------------------------------------------------------- */

struct src {
	int fd;
	const uint8_t *buf;
	uint64_t size;
};

static int src_read(struct r2r_image *img, const struct src *s, uint64_t off, void *dst,
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

static uint16_t le16(const uint8_t *p)
{
	return p[0] | p[1] << 8;
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The file offset of [rva, rva + len) when one section's file data holds all of it. */
static int rva_to_off(const struct r2r_image *img, uint32_t rva, uint32_t len, uint64_t *off)
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
static uint8_t *read_rva(struct r2r_image *img, const struct src *s, uint32_t rva, uint32_t len,
			 uint64_t cap, enum r2r_status *st)
{
	uint64_t off;
	uint8_t *buf;

	if (len > cap) {
		*st = R2R_TOO_BIG;
		return NULL;
	}
	if (rva_to_off(img, rva, len, &off)) {
		*st = R2R_BAD_HEADER;
		return NULL;
	}
	buf = malloc(len ? len : 1);
	if (!buf) {
		*st = R2R_NOMEM;
		return NULL;
	}
	prefault__write(buf, len);
	if (src_read(img, s, off, buf, len)) {
		free(buf);
		*st = R2R_BAD_HEADER;	/* the section table promised bytes the file lacks */
		return NULL;
	}
	img->st.mem_bytes += len;
	return buf;
}

/* ---- PE/COFF and the CLI header ---------------------------------------------------------- */

struct hdrs {
	uint32_t md_rva, md_size;
	uint32_t r2r_rva, r2r_size;
};

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

static enum r2r_status parse_pe(struct r2r_image *img, const struct src *s, struct hdrs *h)
{
	uint8_t dos[64], coff[24], opt[240], sec[40], cor[72];
	uint32_t pe, nsec, optsz, ndirs, dir_off;
	uint16_t magic;
	uint64_t off;

	if (src_read(img, s, 0, dos, sizeof(dos)) || dos[0] != 'M' || dos[1] != 'Z')
		return R2R_NOT_PE;
	pe = le32(dos + 0x3c);
	if (pe > (1u << 20) || src_read(img, s, pe, coff, sizeof(coff)) || memcmp(coff, "PE\0\0", 4))
		return R2R_NOT_PE;
	nsec = le16(coff + 6);
	optsz = le16(coff + 20);
	if (optsz > sizeof(opt) || optsz < 112 || src_read(img, s, pe + 24, opt, optsz))
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

		if (src_read(img, s, (uint64_t)pe + 24 + optsz + 40ull * i, sec, sizeof(sec)))
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
	if (rva_to_off(img, le32(opt + dir_off + 14 * 8), sizeof(cor), &off) ||
	    src_read(img, s, off, cor, sizeof(cor)))
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

/* ---- ECMA-335 metadata ------------------------------------------------------------------- */

static uint32_t row_count(const struct r2r_image *img, unsigned t)
{
	return t < T__MAX ? img->tab[t].rows : 0;
}

static uint8_t col_width(const struct r2r_image *img, uint8_t c)
{
	uint32_t max = 0;

	switch (c) {
	case 'h': return 2;
	case 'w': return 4;
	case 's': return img->str4 ? 4 : 2;
	case 'g': return img->guid4 ? 4 : 2;
	case 'b': return img->blob4 ? 4 : 2;
	}
	if (c & 0x80)
		return row_count(img, c & 0x7f) > 0xffff ? 4 : 2;
	c -= 'A';
	for (unsigned i = 0; i < coded[c].n; i++)
		if (coded[c].tab[i] != NOTAB && row_count(img, coded[c].tab[i]) > max)
			max = row_count(img, coded[c].tab[i]);
	return max >= (1u << (16 - coded[c].bits)) ? 4 : 2;
}

/* Column col of row rid (1-based) of table t; 0 when out of range. */
static uint32_t cell(const struct r2r_image *img, unsigned t, uint32_t rid, unsigned col)
{
	const struct md_table *tb = &img->tab[t];
	const uint8_t *p;

	if (!rid || rid > tb->rows || col >= tb->ncols || !tb->base || !tb->width[col])
		return 0;
	p = tb->base + (uint64_t)(rid - 1) * tb->row_size + tb->off[col];
	return tb->width[col] == 4 ? le32(p) : le16(p);
}

static const char *md_string(const struct r2r_image *img, uint32_t idx)
{
	if (idx >= img->strings_len || !memchr(img->strings + idx, 0, img->strings_len - idx))
		return "";
	return (const char *)img->strings + idx;
}

/* ECMA compressed unsigned integer (II.23.2); -1 on bad input. */
static int cuint(const uint8_t **p, const uint8_t *end, uint32_t *v)
{
	const uint8_t *q = *p;

	if (q >= end)
		return -1;
	if (!(q[0] & 0x80)) {
		*v = q[0];
		*p = q + 1;
	} else if ((q[0] & 0xc0) == 0x80 && end - q >= 2) {
		*v = (q[0] & 0x3fu) << 8 | q[1];
		*p = q + 2;
	} else if ((q[0] & 0xe0) == 0xc0 && end - q >= 4) {
		*v = (q[0] & 0x1fu) << 24 | q[1] << 16 | q[2] << 8 | q[3];
		*p = q + 4;
	} else {
		return -1;
	}
	return 0;
}

static int md_blob(const struct r2r_image *img, uint32_t idx, const uint8_t **p, const uint8_t **end)
{
	const uint8_t *q = img->blob + idx, *lim = img->blob + img->blob_len;
	uint32_t len;

	if (idx >= img->blob_len || cuint(&q, lim, &len) || len > (uint32_t)(lim - q))
		return -1;
	*p = q;
	*end = q + len;
	return 0;
}

/* The #~ stream's header (row counts) is at most this long; the metadata root and its stream
 * headers are a few hundred bytes (a version string of up to 255, five or six streams). */
#define TABLES_HEAD_MAX (24 + 4 + 64 * 4)
#define MD_HEAD_MAX	4096

/*
 * The tables' layout from the first hlen bytes of a #~ stream of len bytes: each table's row
 * count, row size and offset in the stream (into tab_off).
 */
static enum r2r_status parse_tables(struct r2r_image *img, const uint8_t *head, uint32_t hlen,
				    uint32_t len, uint32_t tab_off[T__MAX])
{
	const uint8_t *p = head, *end = head + hlen;
	uint64_t valid, at;
	uint32_t nrows = 0;
	uint8_t heaps;

	if (end - p < 24)
		return R2R_BAD_METADATA;
	heaps = p[6];
	img->str4 = heaps & 1;
	img->guid4 = heaps & 2;
	img->blob4 = heaps & 4;
	memcpy(&valid, p + 8, 8);
	p += 24;
	if (heaps & 0x40)	/* "extra data": 4 more bytes before the row counts */
		p += 4;
	for (unsigned t = 0; t < 64; t++) {
		if (!(valid >> t & 1))
			continue;
		if (t >= T__MAX)
			return R2R_UNSUPPORTED;	/* tables beyond ECMA's (portable PDB, future) */
		if (end - p < 4)
			return R2R_BAD_METADATA;
		img->tab[t].rows = le32(p);
		if (img->tab[t].rows > (1u << 24))
			return R2R_BAD_METADATA;
		p += 4;
		nrows++;
	}
	at = (uint64_t)(p - head);
	for (unsigned t = 0; t < T__MAX; t++) {
		struct md_table *tb = &img->tab[t];
		uint32_t w = 0;

		tb->ncols = strlen(schema[t]);
		for (unsigned c = 0; c < tb->ncols; c++) {
			tb->off[c] = w;
			tb->width[c] = col_width(img, (uint8_t)schema[t][c]);
			w += tb->width[c];
		}
		tb->row_size = w;
		tab_off[t] = (uint32_t)at;
		if (!tb->rows)
			continue;
		if (at > len || (uint64_t)tb->rows * w > len - at)
			return R2R_BAD_METADATA;
		at += (uint64_t)tb->rows * w;
	}
	return nrows ? R2R_OK : R2R_BAD_METADATA;
}

struct md_stream {
	uint32_t off, size;	/* in the metadata */
	int found;
};

/*
 * Naming needs the #Strings and #Blob heaps and the tables in kept[]; the rest of the metadata
 * (custom attributes, fields, parameters, member references, user strings: most of CoreLib's)
 * is never read. One buffer, each part read straight into it: no copy of the whole metadata is
 * made (a fresh page costs a fault, 13 us in some VMs).
 */
static enum r2r_status read_named_metadata(struct r2r_image *img, const struct src *s,
					   uint64_t md_off, const struct md_stream *tables,
					   const struct md_stream *strings,
					   const struct md_stream *blob, const uint32_t tab_off[T__MAX])
{
	static const uint8_t kept[] = { T_MODULE, T_TYPEREF, T_TYPEDEF, T_METHODDEF, T_MODULEREF,
					T_TYPESPEC, T_ASSEMBLY, T_ASSEMBLYREF, T_NESTEDCLASS };
	uint64_t len = (uint64_t)strings->size + blob->size;
	uint8_t *md, *p;

	for (size_t k = 0; k < sizeof(kept); k++)
		len += (uint64_t)img->tab[kept[k]].rows * img->tab[kept[k]].row_size;
	if (!(md = malloc(len ? len : 1)))
		return R2R_NOMEM;
	prefault__write(md, len);
	img->md = md;
	img->st.mem_bytes += len;
	p = md;
	if (src_read(img, s, md_off + strings->off, p, strings->size))
		return R2R_BAD_METADATA;
	img->strings = p;
	img->strings_len = strings->size;
	p += strings->size;
	if (src_read(img, s, md_off + blob->off, p, blob->size))
		return R2R_BAD_METADATA;
	img->blob = p;
	img->blob_len = blob->size;
	p += blob->size;
	for (unsigned t = 0; t < T__MAX; t++) {
		struct md_table *tb = &img->tab[t];
		uint64_t n = (uint64_t)tb->rows * tb->row_size;

		tb->base = NULL;	/* a table not kept: its rows still size the others' indexes */
		if (!memchr(kept, (int)t, sizeof(kept)) || !n)
			continue;
		if (src_read(img, s, md_off + tables->off + tab_off[t], p, n))
			return R2R_BAD_METADATA;
		tb->base = p;
		p += n;
	}
	return R2R_OK;
}

/* Metadata root (II.24.2.1), its streams, then the parts naming needs. */
static enum r2r_status parse_metadata(struct r2r_image *img, const struct src *s,
				      const struct hdrs *h)
{
	uint8_t head[MD_HEAD_MAX], th[TABLES_HEAD_MAX];
	struct md_stream tables = { 0 }, strings = { 0 }, blob = { 0 };
	uint32_t tab_off[T__MAX], hlen, vlen, nstreams;
	const uint8_t *p, *end;
	enum r2r_status st;
	uint64_t md_off;

	if (h->md_size > img->lim.max_metadata)
		return R2R_TOO_BIG;
	hlen = h->md_size < sizeof(head) ? h->md_size : sizeof(head);
	if (rva_to_off(img, h->md_rva, h->md_size, &md_off) || src_read(img, s, md_off, head, hlen))
		return R2R_BAD_METADATA;
	p = head;
	end = head + hlen;
	if (h->md_size < 20 || le32(p) != MD_SIGNATURE)
		return R2R_BAD_METADATA;
	vlen = le32(p + 12);
	if (vlen > hlen - 20)
		return R2R_BAD_METADATA;
	p += 16 + vlen;
	nstreams = le16(p + 2);
	p += 4;
	for (uint32_t i = 0; i < nstreams; i++) {
		struct md_stream *which = NULL;
		uint32_t off, size;
		const uint8_t *name;
		size_t n;

		if (end - p < 9)
			return R2R_BAD_METADATA;
		off = le32(p);
		size = le32(p + 4);
		name = p + 8;
		n = strnlen((const char *)name, end - name < 32 ? end - name : 32);
		if (n >= 32 || name + n >= end || off > h->md_size || size > h->md_size - off)
			return R2R_BAD_METADATA;
		p = name + ((n + 4) & ~3u);
		if (!strcmp((const char *)name, "#~"))
			which = &tables;
		else if (!strcmp((const char *)name, "#-"))
			return R2R_UNSUPPORTED;
		else if (!strcmp((const char *)name, "#Strings"))
			which = &strings;
		else if (!strcmp((const char *)name, "#Blob"))
			which = &blob;
		if (which)
			*which = (struct md_stream){ off, size, 1 };
	}
	if (!tables.found || !strings.found || !blob.found)
		return R2R_BAD_METADATA;
	hlen = tables.size < sizeof(th) ? tables.size : sizeof(th);
	if (src_read(img, s, md_off + tables.off, th, hlen))
		return R2R_BAD_METADATA;
	st = parse_tables(img, th, hlen, tables.size, tab_off);
	if (st != R2R_OK)
		return st;
	return read_named_metadata(img, s, md_off, &tables, &strings, &blob, tab_off);
}

/* The type that declares method rid: the last whose TypeDef.MethodList run starts at or before
 * it (index_types checked the runs are in order); 0: none. */
static uint32_t decl_type(const struct r2r_image *img, uint32_t rid)
{
	uint32_t lo = 1, hi = img->tab[T_TYPEDEF].rows + 1;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (cell(img, T_TYPEDEF, mid, 5) <= rid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/* The TypeDef.MethodList runs are in order (ECMA-335 II.22.37), so a method's type is found by
 * binary search; and which type encloses each. */
static enum r2r_status index_types(struct r2r_image *img)
{
	uint32_t ntypes = img->tab[T_TYPEDEF].rows, nmeth = img->tab[T_METHODDEF].rows;

	for (uint32_t t = 1, prev = 1; t <= ntypes; t++) {
		uint32_t first = cell(img, T_TYPEDEF, t, 5);

		if (first < prev || first > nmeth + 1)
			return R2R_BAD_METADATA;
		prev = first;
	}
	img->enclosing = calloc((size_t)ntypes + 1, sizeof(*img->enclosing));
	if (!img->enclosing)
		return R2R_NOMEM;
	img->st.mem_bytes += ((uint64_t)ntypes + 1) * 4;
	for (uint32_t i = 1; i <= img->tab[T_NESTEDCLASS].rows; i++) {
		uint32_t inner = cell(img, T_NESTEDCLASS, i, 0);
		uint32_t outer = cell(img, T_NESTEDCLASS, i, 1);

		if (inner && inner <= ntypes && outer <= ntypes && outer != inner)
			img->enclosing[inner] = outer;
	}
	return R2R_OK;
}

/*
 * Once the types are indexed, naming reads three columns of TypeDef (name, namespace, method
 * list) and two of MethodDef (name, signature), of rows of 18 and 20 bytes in CoreLib: the kept
 * tables are packed down to the columns read (bit k: column k; 0: all).
 */
static const uint16_t named_cols[T__MAX] = {
	[T_TYPEDEF] = 1u << 1 | 1u << 2 | 1u << 5,
	[T_METHODDEF] = 1u << 3 | 1u << 4,
};

/* Pack the kept tables' rows down to the columns read, in place from w: the end of the last. */
static uint8_t *pack_columns(struct r2r_image *img, uint8_t *w)
{
	for (unsigned t = 0; t < T__MAX; t++) {
		struct md_table *tb = &img->tab[t];
		uint8_t off[10], width[10];
		uint32_t size = 0;

		if (!tb->base)
			continue;
		for (unsigned c = 0; c < tb->ncols; c++) {
			int keep = !named_cols[t] || (named_cols[t] >> c & 1);

			off[c] = (uint8_t)size;
			width[c] = keep ? tb->width[c] : 0;
			size += width[c];
		}
		/* Rows move down (w <= base), column by column in order: no byte is written before
		 * it was read. */
		for (uint32_t r = 0; r < tb->rows; r++)
			for (unsigned c = 0; c < tb->ncols; c++)
				if (width[c])
					memmove(w + (uint64_t)r * size + off[c],
						tb->base + (uint64_t)r * tb->row_size + tb->off[c], width[c]);
		memcpy(tb->off, off, sizeof(off));
		memcpy(tb->width, width, sizeof(width));
		tb->row_size = size;
		tb->base = w;
		w += (uint64_t)tb->rows * size;
	}
	return w;
}

/* Where the #Strings ('s') or #Blob ('b') entry at off ends; 0: it does not decode. */
static uint32_t entry_end(const uint8_t *heap, uint32_t len, char kind, uint32_t off)
{
	const uint8_t *q = heap + off, *z;
	uint32_t n;

	if (off >= len)
		return 0;
	if (kind == 's')
		return (z = memchr(q, 0, len - off)) ? (uint32_t)(z - heap) + 1 : 0;
	if (cuint(&q, heap + len, &n) || n > (uint32_t)(heap + len - q))
		return 0;
	return (uint32_t)(q - heap) + n;
}

/*
 * The bytes of a buffer to keep (a bit a byte), and the count of kept bytes before each 64: a
 * kept byte's offset once the buffer is compacted is its rank.
 */
struct keep {
	uint64_t *bits;
	uint32_t *before;
	uint32_t len, kept;
};

static int keep_init(struct keep *k, uint32_t len)
{
	*k = (struct keep){ .len = len };
	k->bits = calloc(len / 64 + 1, sizeof(*k->bits));
	k->before = malloc((len / 64 + 1) * sizeof(*k->before));
	return k->bits && k->before ? 0 : -ENOMEM;
}

static void keep_free(struct keep *k)
{
	free(k->bits);
	free(k->before);
}

static int keep_has(const struct keep *k, uint32_t off)
{
	return off < k->len && k->bits[off / 64] >> (off % 64) & 1;
}

static void keep_mark(struct keep *k, uint32_t from, uint32_t to)
{
	for (uint32_t i = from; i < to && i < k->len; i++)
		k->bits[i / 64] |= 1ull << (i % 64);
}

/* Once every byte is marked: the ranks, and how many are kept (k->kept). */
static void keep_rank(struct keep *k)
{
	k->kept = 0;
	for (uint32_t i = 0; i <= k->len / 64; i++) {
		k->before[i] = k->kept;
		k->kept += (uint32_t)__builtin_popcountll(k->bits[i]);
	}
}

/* The new offset of kept byte off. */
static uint32_t keep_to(const struct keep *k, uint32_t off)
{
	return k->before[off / 64] +
	       (uint32_t)__builtin_popcountll(k->bits[off / 64] & ((1ull << (off % 64)) - 1));
}

/* Move each run of kept bytes of buf down, in order: buf then holds k->kept bytes. */
static void keep_move(const struct keep *k, uint8_t *buf)
{
	for (uint32_t i = 0, to = 0; i < k->len;) {
		uint32_t j = i;

		if (!keep_has(k, i)) {
			i++;
			continue;
		}
		while (keep_has(k, j))
			j++;
		memmove(buf + to, buf + i, j - i);
		to += j - i;
		i = j;
	}
}

/* A metadata heap being compacted. */
struct heap_pass {
	const uint8_t *heap;
	char kind;
	struct keep keep;
	unsigned min_width;
};

static uint32_t cell_get(const uint8_t *p, unsigned width)
{
	return width == 4 ? le32(p) : le16(p);
}

static void mark_cell(uint8_t *p, unsigned width, void *arg)
{
	struct heap_pass *h = arg;
	uint32_t off = cell_get(p, width), end = entry_end(h->heap, h->keep.len, h->kind, off);

	if (width < h->min_width)
		h->min_width = width;
	/* A string within a kept one ends at its end: already marked. */
	if (end && (h->kind != 's' || !keep_has(&h->keep, off)))
		keep_mark(&h->keep, off, end);
}

/* A cell moved with its entry. One that does not decode keeps its bytes if they were kept (and
 * what follows them is no longer than before: it still does not decode), else points past the
 * new heap's end: it names nothing, as before. */
static void move_cell(uint8_t *p, unsigned width, void *arg)
{
	struct heap_pass *h = arg;
	uint32_t off = cell_get(p, width);
	uint32_t to = keep_has(&h->keep, off) ? keep_to(&h->keep, off) : h->keep.kept;

	if (width == 4) {
		p[0] = (uint8_t)to, p[1] = (uint8_t)(to >> 8), p[2] = (uint8_t)(to >> 16);
		p[3] = (uint8_t)(to >> 24);
	} else {
		p[0] = (uint8_t)to, p[1] = (uint8_t)(to >> 8);
	}
}

/* Each kept cell of heap kind, given to visit with its width. */
static void each_cell(struct r2r_image *img, char kind,
		      void (*visit)(uint8_t *p, unsigned width, void *arg), void *arg)
{
	for (unsigned t = 0; t < T__MAX; t++) {
		struct md_table *tb = &img->tab[t];

		for (unsigned c = 0; tb->base && c < tb->ncols; c++) {
			if (!tb->width[c] || schema[t][c] != kind)
				continue;
			for (uint32_t r = 0; r < tb->rows; r++)
				visit((uint8_t *)tb->base + (uint64_t)r * tb->row_size + tb->off[c],
				      tb->width[c], arg);
		}
	}
}

/*
 * Keep of heap [heap, heap + len) only the entries kept cells point at (CoreLib: the names of
 * types and methods, not of fields and parameters; the signatures of methods and type specs,
 * not custom attributes), moved down in place, in order; the cells rewritten. Returns the new
 * length; len when it cannot be done (no memory, or a 2-byte cell could not point past a new
 * end beyond 0xffff).
 */
static uint32_t compact_heap(struct r2r_image *img, uint8_t *heap, uint32_t len, char kind)
{
	struct heap_pass h = { .heap = heap, .kind = kind, .min_width = 4 };
	uint32_t end0, new_len = len;

	if (!len)
		return 0;
	if (keep_init(&h.keep, len))
		goto out;
	end0 = entry_end(heap, len, kind, 0);
	keep_mark(&h.keep, 0, end0 ? end0 : 1);	/* index 0: the empty entry */
	each_cell(img, kind, mark_cell, &h);
	keep_rank(&h.keep);
	if (h.keep.kept == len || (h.min_width == 2 && h.keep.kept > 0xffff))
		goto out;
	each_cell(img, kind, move_cell, &h);
	keep_move(&h.keep, heap);
	new_len = h.keep.kept;
out:
	keep_free(&h.keep);
	return new_len;
}

/*
 * The metadata buffer holds #Strings, #Blob, then the kept tables. Pack the tables' columns,
 * keep of each heap what the kept cells point at, move the parts down to meet, and shrink the
 * buffer to fit.
 */
static void pack_tables(struct r2r_image *img)
{
	uint8_t *md = img->md, *w = NULL, *tabs, *moved;
	uint64_t len, old_len = 0, tab_len;
	uint32_t strings_len, blob_len;

	if (!md)
		return;
	for (unsigned t = 0; t < T__MAX; t++)
		if (img->tab[t].base) {
			if (!w)
				w = (uint8_t *)img->tab[t].base;	/* the tables follow the heaps */
			old_len = (uint64_t)(img->tab[t].base - md) +
				  (uint64_t)img->tab[t].rows * img->tab[t].row_size;
		}
	if (!w)
		return;
	tabs = w;
	tab_len = (uint64_t)(pack_columns(img, w) - tabs);
	/* Both heaps first, then the tables down to meet them: cells are rewritten in place. */
	strings_len = compact_heap(img, (uint8_t *)img->strings, img->strings_len, 's');
	blob_len = compact_heap(img, (uint8_t *)img->blob, img->blob_len, 'b');
	memmove(md + strings_len, img->blob, blob_len);
	memmove(md + strings_len + blob_len, tabs, tab_len);
	for (unsigned t = 0; t < T__MAX; t++)
		if (img->tab[t].base)
			img->tab[t].base -= tabs - (md + strings_len + blob_len);
	img->strings_len = strings_len;
	img->blob_len = blob_len;
	len = (uint64_t)strings_len + blob_len + tab_len;
	img->st.mem_bytes -= old_len - len;
	/* Every pointer into the buffer, as an offset, to be rebased if it moves. */
	uint64_t tab[T__MAX];

	for (unsigned t = 0; t < T__MAX; t++)
		tab[t] = img->tab[t].base ? (uint64_t)(img->tab[t].base - md) : UINT64_MAX;
	if ((moved = realloc(md, len ? len : 1)))
		img->md = moved;
	img->strings = img->md;
	img->blob = img->md + strings_len;
	for (unsigned t = 0; t < T__MAX; t++)
		if (tab[t] != UINT64_MAX)
			img->tab[t].base = img->md + tab[t];
}

/* ---- names ------------------------------------------------------------------------------- */

struct sb {
	char buf[NAME_MAX_LEN];
	size_t len;
	int bad;	/* signature did not decode */
	uint32_t steps;	/* work done: past NAME_MAX_STEPS the name is given up (bad) */
	int foreign;	/* a type of another module: cannot be named from this image */
	int discard;	/* a sink: types are decoded (bounds, steps, bad) but nothing is written */
};

/* A sink for skipping a type: its buffer is never written, so not cleared either. */
static void sb_sink(struct sb *b)
{
	b->len = 0;
	b->buf[0] = 0;
	b->bad = 0;
	b->steps = 0;
	b->foreign = 0;
	b->discard = 1;
}

static void put(struct sb *b, const char *s)
{
	size_t n;

	if (b->discard)
		return;
	n = strlen(s);

	if (n > sizeof(b->buf) - 1 - b->len)
		n = sizeof(b->buf) - 1 - b->len;
	memcpy(b->buf + b->len, s, n);
	b->len += n;
	b->buf[b->len] = 0;
}

static void putf(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void putf(struct sb *b, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;

	if (b->discard)
		return;
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	put(b, tmp);
}

/* "Ns.Name", or "Name" without a namespace. */
static void put_name(struct sb *b, const char *ns, const char *name)
{
	if (*ns) {
		put(b, ns);
		put(b, ".");
	}
	put(b, name);
}

/* pre s post, when s is not empty ("[System.Runtime]"). */
static void put_around(struct sb *b, const char *pre, const char *s, const char *post)
{
	if (!*s)
		return;
	put(b, pre);
	put(b, s);
	put(b, post);
}

/* A signature being read: bounded, and failing for good at the first bad byte. */
struct sig {
	const uint8_t *p, *end;
	struct sb *out;
	int depth;
};

static int sig_u8(struct sig *s, uint8_t *v)
{
	if (s->p >= s->end) {
		s->out->bad = 1;
		return -1;
	}
	*v = *s->p++;
	return 0;
}

static int sig_uint(struct sig *s, uint32_t *v)
{
	if (cuint(&s->p, s->end, v)) {
		s->out->bad = 1;
		return -1;
	}
	return 0;
}

/* ECMA compressed signed integer (II.23.2): rotated left by one, sign in bit 0. */
static int sig_int(struct sig *s, int32_t *v)
{
	const uint8_t *start = s->p;
	uint32_t u, bits;

	if (sig_uint(s, &u))
		return -1;
	bits = s->p - start == 1 ? 7 : s->p - start == 2 ? 14 : 29;
	*v = (int32_t)(u >> 1);
	if (u & 1)
		*v -= (int32_t)(1u << (bits - 1));
	return 0;
}

/* A TypeDefOrRefOrSpec coded token (II.23.2.8) as (table, rid). */
static int sig_token(struct sig *s, unsigned *table, uint32_t *rid)
{
	static const unsigned tabs[4] = { T_TYPEDEF, T_TYPEREF, T_TYPESPEC, 0xff };
	uint32_t v;

	if (sig_uint(s, &v))
		return -1;
	*table = tabs[v & 3];
	*rid = v >> 2;	/* its range is checked where the row is read */
	if (*table == 0xff) {
		s->out->bad = 1;
		return -1;
	}
	return 0;
}

static void il_type(const struct r2r_image *img, struct sig *s);

/* ILDASM PrettyPrintClass: "[Asm]Ns.Outer/Inner" for a TypeRef, "Ns.Outer/Inner" for a TypeDef. */
static void il_class(const struct r2r_image *img, unsigned table, uint32_t rid, struct sb *b,
		     int depth)
{
	if (depth > SIG_MAX_DEPTH || ++b->steps > NAME_MAX_STEPS) {
		b->bad = 1;
		return;
	}
	if (table == T_TYPEDEF) {
		const char *ns = md_string(img, cell(img, T_TYPEDEF, rid, 2));

		if (!rid || rid > img->tab[T_TYPEDEF].rows) {
			b->bad = 1;
			return;
		}
		if (img->enclosing[rid]) {
			il_class(img, T_TYPEDEF, img->enclosing[rid], b, depth + 1);
			put(b, "/");
		}
		put_name(b, ns, md_string(img, cell(img, T_TYPEDEF, rid, 1)));
	} else if (table == T_TYPEREF) {
		uint32_t scope = cell(img, T_TYPEREF, rid, 0);
		const char *ns = md_string(img, cell(img, T_TYPEREF, rid, 2));
		unsigned stag = scope & 3;
		uint32_t srid = scope >> 2;

		if (!rid || rid > img->tab[T_TYPEREF].rows) {
			b->bad = 1;
			return;
		}
		if (!scope) {
			put(b, "[*]");
		} else if (stag == 2) {	/* AssemblyRef */
			put_around(b, "[", md_string(img, cell(img, T_ASSEMBLYREF, srid, 6)), "]");
		} else if (stag == 1) {	/* ModuleRef */
			put_around(b, "[.module ", md_string(img, cell(img, T_MODULEREF, srid, 0)), "]");
		} else if (stag == 3 && srid) {	/* nested in a TypeRef */
			il_class(img, T_TYPEREF, srid, b, depth + 1);
			put(b, "/");
		}
		put_name(b, ns, md_string(img, cell(img, T_TYPEREF, rid, 1)));
	} else if (table == T_TYPESPEC) {
		struct sig ts = { .out = b, .depth = depth + 1 };

		if (md_blob(img, cell(img, T_TYPESPEC, rid, 0), &ts.p, &ts.end)) {
			b->bad = 1;
			return;
		}
		il_type(img, &ts);
	} else {
		b->bad = 1;
	}
}

static const char *const il_prim[] = {
	[ET_VOID] = "void", [ET_BOOLEAN] = "bool", [ET_CHAR] = "char", [ET_I1] = "int8",
	[ET_U1] = "uint8", [ET_I2] = "int16", [ET_U2] = "uint16", [ET_I4] = "int32",
	[ET_U4] = "uint32", [ET_I8] = "int64", [ET_U8] = "uint64", [ET_R4] = "float32",
	[ET_R8] = "float64", [ET_STRING] = "string", [ET_TYPEDBYREF] = "typedref",
	[ET_I] = "native int", [ET_U] = "native uint", [ET_OBJECT] = "object",
};

static void il_sig_args(const struct r2r_image *img, struct sig *s, const char *name);

/* Prepend str to the modifier suffix (formattype.cpp's "Appendix": "uint8*&", "int32[][]"). */
static void prepend(char *app, size_t cap, const char *str)
{
	size_t n = strlen(str), have = strlen(app);

	if (n + have >= cap)
		return;
	memmove(app + n, app, have + 1);
	memcpy(app, str, n);
}

/* ILDASM PrettyPrintType: one type of a signature. */
static void il_type(const struct r2r_image *img, struct sig *s)
{
	char app[256] = "";
	uint8_t et;
	unsigned table;
	uint32_t rid, n;

	if (++s->depth > SIG_MAX_DEPTH || ++s->out->steps > NAME_MAX_STEPS || s->out->bad) {
		s->out->bad = 1;
		s->depth--;
		return;
	}
	for (;;) {
		if (sig_u8(s, &et))
			break;
		if (et < sizeof(il_prim) / sizeof(il_prim[0]) && il_prim[et]) {
			put(s->out, il_prim[et]);
			break;
		}
		if (et == ET_SZARRAY || et == ET_PTR || et == ET_BYREF || et == ET_PINNED) {
			prepend(app, sizeof(app), et == ET_SZARRAY ? "[]" : et == ET_PTR ? "*" :
						  et == ET_BYREF ? "&" : " pinned");
			continue;
		}
		if (et == ET_CMOD_REQD || et == ET_CMOD_OPT) {
			struct sb m = { .len = 0 };

			if (sig_token(s, &table, &rid))
				break;
			m.steps = s->out->steps;	/* one budget for the whole name */
			put(&m, et == ET_CMOD_REQD ? " modreq(" : " modopt(");
			il_class(img, table, rid, &m, s->depth);
			put(&m, ")");
			s->out->bad |= m.bad;
			s->out->steps = m.steps;
			prepend(app, sizeof(app), m.buf);
			continue;
		}
		switch (et) {
		case ET_VALUETYPE:
		case ET_CLASS:
			if (sig_token(s, &table, &rid))
				break;
			put(s->out, et == ET_CLASS ? "class " : "valuetype ");
			il_class(img, table, rid, s->out, s->depth);
			break;
		case ET_VAR:
		case ET_MVAR:
			if (!sig_uint(s, &n))
				putf(s->out, "%s%u", et == ET_VAR ? "!" : "!!", n);
			break;
		case ET_GENERICINST:
			il_type(img, s);
			put(s->out, "<");
			if (sig_uint(s, &n))
				break;
			for (uint32_t i = 0; i < n && !s->out->bad; i++) {
				if (i)
					put(s->out, ",");
				il_type(img, s);
			}
			put(s->out, ">");
			break;
		case ET_ARRAY: {
			uint32_t rank, nsizes, nlo, sizes[8] = { 0 };
			int32_t lo[8] = { 0 };

			il_type(img, s);
			if (sig_uint(s, &rank) || sig_uint(s, &nsizes))
				break;
			for (uint32_t i = 0; i < nsizes && !sig_uint(s, &n); i++)
				if (i < 8)
					sizes[i] = n;
			if (sig_uint(s, &nlo))
				break;
			for (uint32_t i = 0; i < nlo && !sig_int(s, &lo[i < 8 ? i : 7]); i++)
				;
			if (rank == 0) {
				put(s->out, "[BAD: RANK == 0!]");
				break;
			}
			put(s->out, "[");
			if (rank == 1 && nsizes == 0 && nlo == 0)
				put(s->out, "...");
			for (uint32_t i = 0; !(rank == 1 && nsizes == 0 && nlo == 0) && i < rank && i < 64; i++) {
				if (i < 8 && lo[i] == 0 && i < nsizes)
					putf(s->out, "%u", sizes[i]);
				else if (i < 8 && i < nlo) {
					putf(s->out, "%d...", lo[i]);
					if (i < nsizes)
						putf(s->out, "%d", lo[i] + (int32_t)sizes[i] - 1);
				}
				if (i < rank - 1)
					put(s->out, ",");
			}
			put(s->out, "]");
			break;
		}
		case ET_FNPTR:
			put(s->out, "method ");
			il_sig_args(img, s, "*");
			break;
		default:
			s->out->bad = 1;
			break;
		}
		break;
	}
	put(s->out, app);
	s->depth--;
}

/* ILDASM PrettyPrintSignature of a method signature around name. */
static void il_sig_args(const struct r2r_image *img, struct sig *s, const char *name)
{
	static const char *const cc_names[16] = {
		"", "unmanaged cdecl ", "unmanaged stdcall ", "unmanaged thiscall ",
		"unmanaged fastcall ", "vararg ", NULL, NULL, NULL, "unmanaged ",
	};
	uint32_t cc, ntypes, nargs;
	int comma = 0;

	if (sig_uint(s, &cc))
		return;
	if ((cc & 0xf) == 6 || (cc & 0xf) == 0xa || (cc & 0xf) == 7) {
		s->out->bad = 1;	/* a field, a method instantiation or a local: not a method */
		return;
	}
	if (cc & 0x40)
		put(s->out, "explicit ");
	if (cc & 0x20)
		put(s->out, "instance ");
	if (cc_names[cc & 0xf])
		put(s->out, cc_names[cc & 0xf]);
	else
		putf(s->out, "callconv(%u) ", cc & 0xf);
	if ((cc & 0x10) && sig_uint(s, &ntypes))
		return;
	if (sig_uint(s, &nargs))
		return;
	il_type(img, s);
	if (*name) {
		put(s->out, " ");
		put(s->out, name);
	}
	put(s->out, "(");
	while (s->p < s->end && !s->out->bad) {
		if (*s->p == ET_SENTINEL) {
			if (comma)
				put(s->out, ",");
			put(s->out, "...");
			s->p++;
		} else {
			if (!nargs)
				break;
			if (comma)
				put(s->out, ",");
			il_type(img, s);
			nargs--;
		}
		comma = 1;
	}
	if (nargs)
		put(s->out, " [SIGNATURE ENDED PREMATURELY]");
	put(s->out, ")");
}

/* TypeString (the class part of a runtime name): "Ns.Outer+Inner", no assembly. */
static void ts_class(const struct r2r_image *img, unsigned table, uint32_t rid, struct sb *b,
		     int depth)
{
	const char *ns, *name;

	if (depth > SIG_MAX_DEPTH || ++b->steps > NAME_MAX_STEPS) {
		b->bad = 1;
		return;
	}
	if (table == T_TYPEDEF) {
		if (!rid || rid > img->tab[T_TYPEDEF].rows) {
			b->bad = 1;
			return;
		}
		if (img->enclosing[rid]) {
			ts_class(img, T_TYPEDEF, img->enclosing[rid], b, depth + 1);
			put(b, "+");
		}
		if (b->discard)
			return;
		ns = md_string(img, cell(img, T_TYPEDEF, rid, 2));
		name = md_string(img, cell(img, T_TYPEDEF, rid, 1));
	} else if (table == T_TYPEREF) {
		uint32_t scope = cell(img, T_TYPEREF, rid, 0);

		if (!rid || rid > img->tab[T_TYPEREF].rows) {
			b->bad = 1;
			return;
		}
		if ((scope & 3) == 3 && scope >> 2) {
			ts_class(img, T_TYPEREF, scope >> 2, b, depth + 1);
			put(b, "+");
		}
		if (b->discard)
			return;
		ns = md_string(img, cell(img, T_TYPEREF, rid, 2));
		name = md_string(img, cell(img, T_TYPEREF, rid, 1));
	} else {
		b->bad = 1;
		return;
	}
	put_name(b, ns, name);
}

static const char *const ts_prim[] = {
	[ET_VOID] = "System.Void", [ET_BOOLEAN] = "System.Boolean", [ET_CHAR] = "System.Char",
	[ET_I1] = "System.SByte", [ET_U1] = "System.Byte", [ET_I2] = "System.Int16",
	[ET_U2] = "System.UInt16", [ET_I4] = "System.Int32", [ET_U4] = "System.UInt32",
	[ET_I8] = "System.Int64", [ET_U8] = "System.UInt64", [ET_R4] = "System.Single",
	[ET_R8] = "System.Double", [ET_STRING] = "System.String",
	[ET_TYPEDBYREF] = "System.TypedReference", [ET_I] = "System.IntPtr",
	[ET_U] = "System.UIntPtr", [ET_OBJECT] = "System.Object",
};

/* A type of an R2R signature as TypeString writes it: "System.Collections.Generic.List`1[
 * System.__Canon]", "System.Int32[]", "System.Byte*". */
static void ts_type(const struct r2r_image *img, struct sig *s)
{
	uint8_t et;
	unsigned table;
	uint32_t rid, n;

	if (++s->depth > SIG_MAX_DEPTH || ++s->out->steps > NAME_MAX_STEPS || s->out->bad ||
	    sig_u8(s, &et)) {
		s->out->bad = 1;
		s->depth--;
		return;
	}
	if (et < sizeof(ts_prim) / sizeof(ts_prim[0]) && ts_prim[et]) {
		put(s->out, ts_prim[et]);
	} else if (et == ET_CANON_ZAPSIG) {
		put(s->out, "System.__Canon");
	} else if (et == ET_CLASS || et == ET_VALUETYPE) {
		if (!sig_token(s, &table, &rid))
			ts_class(img, table, rid, s->out, s->depth);
	} else if (et == ET_GENERICINST) {
		ts_type(img, s);
		put(s->out, "[");
		if (!sig_uint(s, &n)) {
			for (uint32_t i = 0; i < n && !s->out->bad; i++) {
				if (i)
					put(s->out, ",");
				ts_type(img, s);
			}
		}
		put(s->out, "]");
	} else if (et == ET_SZARRAY || et == ET_PTR || et == ET_BYREF) {
		ts_type(img, s);
		put(s->out, et == ET_SZARRAY ? "[]" : et == ET_PTR ? "*" : "&");
	} else if (et == ET_ARRAY) {
		uint32_t rank, cnt;

		ts_type(img, s);
		if (sig_uint(s, &rank) || rank > 64)
			s->out->bad = 1;
		for (int k = 0; k < 2 && !s->out->bad; k++)	/* sizes, then lower bounds */
			if (!sig_uint(s, &cnt))
				for (uint32_t i = 0; i < cnt && !sig_uint(s, &n); i++)
					;
		put(s->out, "[");
		for (uint32_t i = 1; i < rank && !s->out->bad; i++)
			put(s->out, ",");
		put(s->out, rank == 1 ? "*]" : "]");
	} else if (et == ET_MODULE_ZAPSIG) {
		s->out->foreign = 1;	/* its tokens are another module's */
		s->out->bad = 1;
	} else if (et == ET_VAR || et == ET_MVAR) {
		if (!sig_uint(s, &n))
			putf(s->out, "%s%u", et == ET_VAR ? "!" : "!!", n);
	} else {
		s->out->bad = 1;
	}
	s->depth--;
}

/* The runtime's name of method m (GetFullMethodInfo): into b; b->bad when it cannot be named. */
static void format_method(const struct r2r_image *img, const struct rfunc *m, struct sb *b)
{
	struct sb cls = { .len = 0 }, pre = { .len = 0 };
	struct sig s = { .out = b };
	uint32_t type = decl_type(img, m->rid);

	if (m->owner_off) {
		struct sig os = { .p = img->inst + (m->owner_off - img->inst_rva),
				  .end = img->inst + img->inst_len, .out = &cls };

		ts_type(img, &os);
	} else {
		ts_class(img, T_TYPEDEF, type, &cls, 0);
	}
	if (cls.bad || !type) {
		b->bad = 1;
		b->foreign = cls.foreign;
		return;
	}
	put(&pre, "[");
	put(&pre, img->assembly);
	put(&pre, "] ");
	put(&pre, cls.buf);
	put(&pre, "::");
	put(&pre, md_string(img, cell(img, T_METHODDEF, m->rid, 3)));
	if (md_blob(img, cell(img, T_METHODDEF, m->rid, 4), &s.p, &s.end)) {
		b->bad = 1;
		return;
	}
	il_sig_args(img, &s, pre.buf);
}

/* The slot of method m in the name table: its own, or the empty one it would take. */
static struct named *named_slot(const struct r2r_image *img, const struct rfunc *m)
{
	uint32_t mask = img->named_cap - 1;
	/* Keyed (siphash.h): the image is the process's, and so are its row and blob numbers. */
	uint32_t i = (uint32_t)siphash__table_u64((uint64_t)m->owner_off << 32 | m->rid) & mask;

	while (img->named[i].rid && (img->named[i].rid != m->rid ||
				     img->named[i].owner_off != m->owner_off))
		i = (i + 1) & mask;
	return &img->named[i];
}

/* Room for one more name, at most half full. -ENOMEM. */
static int named_reserve(struct r2r_image *img)
{
	struct named *old = img->named;
	uint32_t old_cap = img->named_cap, cap = old_cap ? old_cap * 2 : 64;

	if ((uint64_t)(img->nnamed + 1) * 2 <= old_cap)
		return 0;
	if (!(img->named = calloc(cap, sizeof(*img->named)))) {
		img->named = old;
		return -ENOMEM;
	}
	img->named_cap = cap;
	for (uint32_t i = 0; i < old_cap; i++)
		if (old[i].rid)
			*named_slot(img, &(struct rfunc){ .rid = old[i].rid,
							  .owner_off = old[i].owner_off }) = old[i];
	free(old);
	return 0;
}

/* Function fn's method, named once (NULL: it cannot be, or no method is known). */
static const char *method_name(struct r2r_image *img, uint32_t fn)
{
	const struct rfunc *m = &img->rf[fn];
	struct sb b = { .len = 0 };
	struct named *nm;
	int64_t id;

	if (!m->rid)
		return NULL;
	if (img->named_cap && (nm = named_slot(img, m))->rid)
		return nm->name >= 0 ? intern__key(img->names, (uint32_t)nm->name, NULL) : NULL;
	format_method(img, m, &b);
	if (b.bad) {
		id = -2;
		if (b.foreign)
			img->st.unsupported++;
		else
			img->st.bad_sigs++;
	} else if ((id = intern__id(img->names, b.buf, b.len, NULL)) < 0 || id > INT32_MAX) {
		return NULL;	/* out of memory: tried again next time */
	}
	if (named_reserve(img))
		return id >= 0 ? intern__key(img->names, (uint32_t)id, NULL) : NULL;
	nm = named_slot(img, m);
	*nm = (struct named){ .rid = m->rid, .owner_off = m->owner_off, .name = (int32_t)id };
	img->nnamed++;
	return id >= 0 ? intern__key(img->names, (uint32_t)id, NULL) : NULL;
}

/* ---- the native format (nativeformatreader.h) over one section's bytes -------------------- */

struct nreader {
	const uint8_t *b;
	uint32_t rva, len;	/* the bytes are the image's [rva, rva + len) */
};

static int nr_u8(const struct nreader *r, uint32_t at, uint32_t *v)
{
	if (at < r->rva || at - r->rva >= r->len)
		return -1;
	*v = r->b[at - r->rva];
	return 0;
}

static int nr_uint(const struct nreader *r, uint32_t at, uint32_t n, uint32_t *v)
{
	uint32_t x = 0, b;

	for (uint32_t i = 0; i < n; i++) {
		if (nr_u8(r, at + i, &b))
			return -1;
		x |= b << (8 * i);
	}
	*v = x;
	return 0;
}

/* NativeReader::DecodeUnsigned: the position after the value, 0 on bad input. The low bits
 * of the first byte say how many bytes follow (k trailing ones: k more bytes; four: a u32). */
static uint32_t nr_unsigned(const struct nreader *r, uint32_t at, uint32_t *v)
{
	uint32_t b0, rest = 0, k = 0;

	if (nr_u8(r, at, &b0))
		return 0;
	while (k < 5 && (b0 >> k & 1))
		k++;
	if (k == 5 || (k && nr_uint(r, at + 1, k, &rest)))
		return 0;
	*v = k == 4 ? rest : b0 >> (k + 1) | rest << (7 - k);
	return at + 1 + k;
}

static uint32_t nr_signed(const struct nreader *r, uint32_t at, int32_t *v)
{
	uint32_t u, next = nr_unsigned(r, at, &u), b0;

	if (!next || nr_u8(r, at, &b0))
		return 0;
	/* The same layout as the unsigned form, sign-extended from its top bit. */
	switch (next - at) {
	case 1: *v = (int32_t)(u << 25) >> 25; break;
	case 2: *v = (int32_t)(u << 18) >> 18; break;
	case 3: *v = (int32_t)(u << 11) >> 11; break;
	case 4: *v = (int32_t)(u << 4) >> 4; break;
	default: *v = (int32_t)u; break;
	}
	return next;
}

/* NativeArray::TryGetAt: the element offset of index, 0 when absent. */
static uint32_t narray_get(const struct nreader *r, uint32_t base, uint32_t count, uint32_t isz,
			   uint32_t index)
{
	uint32_t off, val, next;

	if (index >= count)
		return 0;
	if (nr_uint(r, base + (isz == 0 ? 1 : isz == 1 ? 2 : 4) * (index / 16),
		    isz == 0 ? 1 : isz == 1 ? 2 : 4, &off))
		return 0;
	off += base;
	for (uint32_t bit = 8; bit; bit >>= 1) {
		if (!(next = nr_unsigned(r, off, &val)))
			return 0;
		if (index & bit) {
			if (val & 2) {
				if (val >> 2 == 0)
					return 0;	/* would loop on itself */
				off += val >> 2;
				continue;
			}
		} else if (val & 1) {
			off = next;
			continue;
		}
		if ((val & 3) == 0 && (val >> 2) == (index & 15)) {
			off = next;
			break;
		}
		return 0;
	}
	return off;
}

/* A method entry (METHODDEF_ENTRYPOINTS element, or after an instance's signature): the index
 * of its runtime function. */
static int entry_index(const struct nreader *r, uint32_t at, uint32_t *id)
{
	uint32_t v;

	if (!nr_unsigned(r, at, &v))
		return -1;
	*id = v & 1 ? v >> 2 : v >> 1;
	return 0;
}

static int add_method(struct r2r_image *img, uint32_t rid, uint32_t owner_off, uint32_t fn)
{
	if (!rid || rid > img->tab[T_METHODDEF].rows || fn >= img->nrf) {
		img->st.bad_entries++;
		return 0;
	}
	if (img->rf[fn].rid)
		return 0;	/* two entries for one body (an unboxing stub's twin): keep the first */
	img->rf[fn].rid = rid;
	img->rf[fn].owner_off = owner_off;
	img->nmethods++;
	return 0;
}

static enum r2r_status read_methoddefs(struct r2r_image *img, const struct nreader *r)
{
	uint32_t hdr, base = nr_unsigned(r, r->rva, &hdr);

	if (!base)
		return R2R_BAD_HEADER;
	/* Only rows that both the array and the MethodDef table have. */
	for (uint32_t rid = 1; rid <= img->tab[T_METHODDEF].rows && rid <= hdr >> 2; rid++) {
		uint32_t at = narray_get(r, base, hdr >> 2, hdr & 3, rid - 1), fn;

		if (!at)
			continue;
		if (entry_index(r, at, &fn)) {
			img->st.bad_entries++;
			continue;
		}
		if (add_method(img, rid, 0, fn))
			return R2R_NOMEM;
	}
	return R2R_OK;
}

/* Skip one type of an R2R signature (bounded); -1 when it does not decode. */
static int skip_type(const struct r2r_image *img, struct sig *s)
{
	struct sb scratch;
	struct sb *out = s->out;

	sb_sink(&scratch);
	s->out = &scratch;
	ts_type(img, s);
	s->out = out;
	return scratch.bad && !scratch.foreign ? -1 : 0;
}

/* One INSTANCE_METHOD_ENTRYPOINTS entry: the method's R2R signature, then its entry. The bytes
 * of its owner type's signature, which naming reads again, are marked in owners. */
static int read_instance(struct r2r_image *img, const struct nreader *r, uint32_t at,
			 struct keep *owners)
{
	struct sb scratch;
	struct sig s = { .p = r->b + (at - r->rva), .end = r->b + r->len, .out = &scratch };
	uint32_t flags, rid, n, owner = 0, owner_end = 0, fn;

	sb_sink(&scratch);
	if (sig_uint(&s, &flags))
		goto bad;
	if (flags & (MSIG_UPDATE_CONTEXT | MSIG_SLOT | MSIG_MEMBERREF)) {
		img->st.unsupported++;	/* a method of another module, or by slot */
		return 0;
	}
	if (flags & MSIG_OWNER_TYPE) {
		owner = r->rva + (uint32_t)(s.p - r->b);
		if (skip_type(img, &s))
			goto bad;
		owner_end = r->rva + (uint32_t)(s.p - r->b);
	}
	if (sig_uint(&s, &rid))
		goto bad;
	if (flags & MSIG_METHOD_INST) {
		if (sig_uint(&s, &n) || n > 64)
			goto bad;
		for (uint32_t i = 0; i < n; i++)
			if (skip_type(img, &s))
				goto bad;
	}
	if ((flags & MSIG_CONSTRAINED) && skip_type(img, &s))
		goto bad;
	if (entry_index(r, r->rva + (uint32_t)(s.p - r->b), &fn))
		goto bad;
	img->st.instances++;
	if (owner)	/* at least its first byte */
		keep_mark(owners, owner - r->rva, (owner_end > owner ? owner_end : owner + 1) - r->rva);
	return add_method(img, rid, owner, fn);
bad:
	img->st.bad_entries++;
	return 0;
}

static enum r2r_status read_instances(struct r2r_image *img, const struct nreader *r,
				      struct keep *owners)
{
	uint32_t header, shift, isz, nbuckets, esz;
	uint64_t visits = 0;

	if (nr_u8(r, r->rva, &header))
		return R2R_BAD_HEADER;
	shift = header >> 2;
	isz = header & 3;
	if (shift > 24 || isz > 2)
		return R2R_BAD_HEADER;
	nbuckets = 1u << shift;
	esz = isz == 0 ? 1 : isz == 1 ? 2 : 4;
	/* The bucket table is in the section; entries take 2 bytes at least, so a section holds at
	 * most len / 2 of them whatever the buckets claim (they could all span the section). */
	if ((uint64_t)(nbuckets + 1) * esz + 1 > r->len)
		return R2R_BAD_HEADER;
	for (uint32_t bkt = 0; bkt < nbuckets; bkt++) {
		uint32_t start, end, base = r->rva + 1;

		if (nr_uint(r, base + bkt * esz, esz, &start) ||
		    nr_uint(r, base + (bkt + 1) * esz, esz, &end))
			return R2R_BAD_HEADER;
		start += base;
		end += base;
		if (end > r->rva + r->len)
			end = r->rva + r->len;
		/* Entries: a low hash byte, then a signed offset to the entry from where it is. */
		while (start < end) {
			int32_t delta;
			uint32_t next = nr_signed(r, start + 1, &delta);

			if (!next)
				break;
			if (++visits > r->len / 2 + 1)
				return R2R_BAD_HEADER;
			if (read_instance(img, r, start + 1 + (uint32_t)delta, owners))
				return R2R_NOMEM;
			start = next;
		}
	}
	return R2R_OK;
}

/* ---- runtime functions ------------------------------------------------------------------- */

static enum r2r_status read_functions(struct r2r_image *img, const uint8_t *b, uint32_t len)
{
	uint32_t esz = img->arm64 ? 8 : 12, n = len / esz;

	if (n > img->lim.max_functions)
		return R2R_TOO_BIG;
	img->rf = malloc((n ? n : 1) * sizeof(*img->rf));	/* every field set below */
	if (!img->rf)
		return R2R_NOMEM;
	prefault__write(img->rf, (size_t)n * sizeof(*img->rf));
	img->st.mem_bytes += (uint64_t)n * sizeof(*img->rf);
	for (uint32_t i = 0; i < n; i++) {
		img->rf[i].begin = le32(b + (uint64_t)i * esz);
		/* arm64 entries have no end: the next function's start bounds it */
		img->rf[i].end = img->arm64 ? 0 : le32(b + (uint64_t)i * esz + 4);
		img->rf[i].rid = 0;
		img->rf[i].owner_off = 0;
		/* Sorted and disjoint as the compiler writes them: lookups depend on it. */
		if (i && img->rf[i].begin < img->rf[i - 1].begin)
			return R2R_BAD_HEADER;
		if (!img->arm64 && (img->rf[i].end <= img->rf[i].begin ||
				    (i && img->rf[i].begin < img->rf[i - 1].end)))
			return R2R_BAD_HEADER;
	}
	for (uint32_t i = 0; img->arm64 && i < n; i++)
		img->rf[i].end = i + 1 < n ? img->rf[i + 1].begin : img->rf[i].begin + 1;
	img->nrf = n;
	return R2R_OK;
}

static void set_owner(struct rfunc *f, const struct rfunc *of)
{
	f->rid = of->rid;
	f->owner_off = of->owner_off;
}

/* Cold parts (HOT_COLD_MAP: (cold, hot) index pairs) belong to their hot part's method; then
 * every function without an entry of its own (funclets, and the funclets of a cold part)
 * belongs to the method before it, which the compiler lays out first. */
static void assign_owners(struct r2r_image *img, const uint8_t *hc, uint32_t hc_len)
{
	for (uint32_t i = 0; hc && i + 8 <= hc_len; i += 8) {
		uint32_t cold = le32(hc + i), hot = le32(hc + i + 4);

		if (cold < img->nrf && hot < img->nrf && !img->rf[cold].rid)
			set_owner(&img->rf[cold], &img->rf[hot]);
		else
			img->st.bad_entries++;
	}
	for (uint32_t i = 0; i < img->nrf; i++) {
		if (img->rf[i].rid)
			continue;
		if (i && img->rf[i - 1].rid)
			set_owner(&img->rf[i], &img->rf[i - 1]);
		else
			img->st.orphans++;
	}
}

/*
 * Naming reads of the instance section only the owner types' signatures, marked in k as the
 * entries were read: keep those (CoreLib 10.0.12: 0.17 of a 0.58 MB section), moved down in
 * place, and point the functions at them.
 */
static void compact_owners(struct r2r_image *img, struct keep *k)
{
	uint8_t *moved;

	keep_rank(k);
	for (uint32_t i = 0; i < img->nrf; i++)
		if (img->rf[i].owner_off)
			img->rf[i].owner_off = img->inst_rva +
					       keep_to(k, img->rf[i].owner_off - img->inst_rva);
	keep_move(k, img->inst);
	img->st.mem_bytes -= img->inst_len - k->kept;
	img->inst_len = k->kept;
	if ((moved = realloc(img->inst, k->kept)))
		img->inst = moved;
}

/* ---- the READYTORUN header --------------------------------------------------------------- */

static enum r2r_status parse_r2r(struct r2r_image *img, const struct src *s, const struct hdrs *h)
{
	enum r2r_status st = R2R_OK;
	uint8_t hdr[16], *dir = NULL, *sec[4] = { NULL };
	uint32_t nsec, srva[4] = { 0 }, slen[4] = { 0 };
	struct keep owners = { 0 };	/* the instance section's bytes naming reads */
	static const uint32_t want[4] = { SEC_RUNTIME_FUNCTIONS, SEC_METHODDEF_ENTRYPOINTS,
					  SEC_INSTANCE_ENTRYPOINTS, SEC_HOT_COLD_MAP };
	uint64_t off;

	if (rva_to_off(img, h->r2r_rva, sizeof(hdr), &off) || src_read(img, s, off, hdr, sizeof(hdr)))
		return R2R_BAD_HEADER;
	if (le32(hdr) != R2R_SIGNATURE)
		return R2R_NOT_R2R;
	img->st.major = le16(hdr + 4);
	img->st.minor = le16(hdr + 6);
	nsec = le32(hdr + 12);
	if (img->st.major < 5 || img->st.major > 32 || (le32(hdr + 8) & R2R_FLAG_COMPONENT))
		return R2R_UNSUPPORTED;
	if (nsec > R2R_MAX_SECTIONS)
		return R2R_BAD_HEADER;
	dir = read_rva(img, s, h->r2r_rva + 16, nsec * 12, R2R_MAX_SECTIONS * 12, &st);
	if (!dir)
		return st;
	for (uint32_t i = 0; i < nsec; i++) {
		uint32_t type = le32(dir + 12 * i);

		if (type == SEC_COMPONENT_ASSEMBLIES)
			st = R2R_UNSUPPORTED;	/* composite: methods of many assemblies */
		for (int k = 0; k < 4; k++)
			if (type == want[k] && !srva[k]) {
				srva[k] = le32(dir + 12 * i + 4);
				slen[k] = le32(dir + 12 * i + 8);
			}
	}
	free(dir);
	img->st.mem_bytes -= nsec * 12;
	if (st != R2R_OK)
		return st;
	if (!srva[0] || !srva[1])
		return R2R_BAD_HEADER;
	for (int k = 0; k < 4 && st == R2R_OK; k++)
		if (srva[k] && !(sec[k] = read_rva(img, s, srva[k], slen[k], img->lim.max_section, &st)))
			break;
	if (st == R2R_OK)
		st = read_functions(img, sec[0], slen[0]);
	if (st == R2R_OK)
		st = read_methoddefs(img, &(struct nreader){ sec[1], srva[1], slen[1] });
	if (st == R2R_OK && sec[2]) {
		img->inst = sec[2];
		img->inst_rva = srva[2];
		img->inst_len = slen[2];
		sec[2] = NULL;
		st = keep_init(&owners, img->inst_len) ? R2R_NOMEM : R2R_OK;
		if (st == R2R_OK) {
			keep_mark(&owners, 0, 1);	/* the header: no owner starts there */
			st = read_instances(img, &(struct nreader){ img->inst, img->inst_rva,
								   img->inst_len }, &owners);
		}
	}
	if (st == R2R_OK) {
		assign_owners(img, sec[3], slen[3]);
		if (img->inst)
			compact_owners(img, &owners);
	}
	keep_free(&owners);
	for (int k = 0; k < 4; k++) {
		if (sec[k])
			img->st.mem_bytes -= slen[k];
		free(sec[k]);
	}
	return st;
}

/* ---- the image --------------------------------------------------------------------------- */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Drop everything but the status and counters: an unusable image names nothing. */
static void drop_tables(struct r2r_image *img)
{
	free(img->md);
	free(img->inst);
	free(img->enclosing);
	free(img->rf);
	free(img->named);
	intern__free(img->names);
	img->md = img->inst = NULL;
	img->enclosing = NULL;
	img->rf = NULL;
	img->named = NULL;
	img->named_cap = img->nnamed = 0;
	img->names = NULL;
	img->nrf = img->nmethods = 0;
	img->st.mem_bytes = 0;
}

static struct r2r_image *open_src(const struct src *s, const struct r2r_limits *limits)
{
	struct r2r_image *img = calloc(1, sizeof(*img));
	uint64_t t0 = mono_ns();
	enum r2r_status st;
	struct hdrs h;

	if (!img) {
		errno = ENOMEM;
		return NULL;
	}
	if (limits)
		img->lim = *limits;
	if (!img->lim.max_section)
		img->lim.max_section = 64ull << 20;
	if (!img->lim.max_metadata)
		img->lim.max_metadata = 128ull << 20;
	if (!img->lim.max_functions)
		img->lim.max_functions = 4u << 20;
	img->names = intern__new();
	st = img->names ? parse_pe(img, s, &h) : R2R_NOMEM;
	if (st == R2R_OK)
		st = parse_metadata(img, s, &h);
	if (st == R2R_OK)
		st = index_types(img);
	if (st == R2R_OK) {
		pack_tables(img);
		/* the assembly's name, in the packed heap */
		img->assembly = md_string(img, cell(img, T_ASSEMBLY, 1, 7));
		st = parse_r2r(img, s, &h);
	}
	img->st.status = st;
	if (st != R2R_OK)
		drop_tables(img);
	img->st.functions = img->nrf;
	img->st.methods = img->nmethods;
	img->st.mem_bytes += sizeof(*img);
	img->st.parse_ns = mono_ns() - t0;
	return img;
}

struct r2r_image *r2r__open_buf(const void *buf, size_t len, const struct r2r_limits *limits)
{
	struct src s = { .fd = -1, .buf = buf ? buf : (const uint8_t *)"", .size = buf ? len : 0 };

	return open_src(&s, limits);
}

struct r2r_image *r2r__open_fd(int fd, const struct r2r_limits *limits)
{
	struct stat st;
	struct src s = { .fd = fd };

	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		struct r2r_image *img = calloc(1, sizeof(*img));

		if (img)
			img->st.status = R2R_UNREADABLE;
		else
			errno = ENOMEM;
		return img;
	}
	s.size = st.st_size;
	return open_src(&s, limits);
}

void r2r__free(struct r2r_image *img)
{
	if (!img)
		return;
	drop_tables(img);
	free(img);
}

void r2r__stats(const struct r2r_image *img, struct r2r_image_stats *out)
{
	if (img)
		*out = img->st;
	else
		memset(out, 0, sizeof(*out));
}

const char *r2r__status_str(enum r2r_status st)
{
	static const char *const s[R2R__STATUS_MAX] = {
		[R2R_OK] = "ok", [R2R_UNREADABLE] = "unreadable", [R2R_NOT_PE] = "not a PE image",
		[R2R_NOT_CLI] = "not a .NET image", [R2R_NOT_R2R] = "not ReadyToRun (IL only)",
		[R2R_UNSUPPORTED] = "unsupported ReadyToRun image (composite, #- metadata or version)",
		[R2R_BAD_HEADER] = "malformed PE/ReadyToRun headers",
		[R2R_BAD_METADATA] = "malformed metadata", [R2R_TOO_BIG] = "larger than the caps",
		[R2R_NOMEM] = "out of memory",
		[R2R_OVER_BUDGET] = "over the symbol budget (--max-symbol-mb)",
	};

	return st < R2R__STATUS_MAX ? s[st] : "?";
}

static int64_t find_function(const struct r2r_image *img, uint32_t rva)
{
	uint32_t lo = 0, hi = img->nrf;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (img->rf[mid].begin <= rva)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || rva >= img->rf[lo - 1].end)
		return -1;
	return lo - 1;
}

const char *r2r__lookup(struct r2r_image *img, uint32_t rva, uint32_t *start, uint32_t *end)
{
	int64_t i = img ? find_function(img, rva) : -1;

	if (i < 0)
		return NULL;
	if (start)
		*start = img->rf[i].begin;
	if (end)
		*end = img->rf[i].end;
	return method_name(img, (uint32_t)i);
}

int r2r__function(struct r2r_image *img, uint32_t i, uint32_t *start, uint32_t *end,
		  const char **name)
{
	if (!img || i >= img->nrf)
		return -ENOENT;
	*start = img->rf[i].begin;
	*end = img->rf[i].end;
	*name = method_name(img, i);
	return 0;
}

/* ---- the cache shared by every process ---------------------------------------------------- */

static struct r2r_image *cache;

struct r2r_image *r2r__get(int fd)
{
	struct r2r_image *img;
	struct r2r_key k;
	struct stat st;

	if (fstat(fd, &st))
		return NULL;
	memset(&k, 0, sizeof(k));
	k.dev = st.st_dev;
	k.ino = st.st_ino;
	k.size = st.st_size;
	k.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	k.ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	for (img = cache; img; img = img->next)
		if (!memcmp(&img->key, &k, sizeof(k))) {
			img->refs++;
			return img;
		}
	img = r2r__open_fd(fd, NULL);
	if (!img)
		return NULL;
	if (!symbudget__take(SB_R2R, img->st.mem_bytes)) {
		struct r2r_image *empty = calloc(1, sizeof(*empty));

		r2r__free(img);
		if (!empty)
			return NULL;
		empty->st.status = R2R_OVER_BUDGET;
		empty->refs = 1;	/* not in the cache: r2r__put frees it */
		return empty;
	}
	img->charged = img->st.mem_bytes;
	img->key = k;
	img->refs = 1;
	img->next = cache;
	cache = img;
	return img;
}

void r2r__put(struct r2r_image *img)
{
	struct r2r_image **pp;

	if (!img || --img->refs)
		return;
	for (pp = &cache; *pp; pp = &(*pp)->next)
		if (*pp == img) {
			*pp = img->next;
			break;
		}
	symbudget__give(SB_R2R, img->charged);
	r2r__free(img);
}

uint32_t r2r__cached(void)
{
	uint32_t n = 0;

	for (struct r2r_image *img = cache; img; img = img->next)
		n++;
	return n;
}
