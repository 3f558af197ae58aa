/* r2r_int.h: what the files of the ReadyToRun reader (r2r.c) share: the image, its bounded
 * input, the metadata tables it keeps, the name builder, and the calls between its parts. Not for
 * use outside perfmap/r2r.c, pe.c, ecma335.c, r2rnames.c and r2rcomposite.c; the API is r2r.h. */
#ifndef SPANPROF_R2R_INT_H
#define SPANPROF_R2R_INT_H

#include <stddef.h>
#include <stdint.h>

#include "r2r.h"

struct intern;
struct symbudget;

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
	SEC_OWNER_COMPOSITE = 116,
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
	uint32_t rid;		/* MethodDef row; 0: no method known. In a composite image, the
				 * component's index + 1 above RID_BITS (r2r_md_of) */
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
	/* a composite image: its component assemblies' metadata (r2rcomposite.c); a component:
	 * the composite it belongs to */
	struct r2r_image **comps;
	uint32_t ncomps;
	const struct r2r_image *composite;
	/* the shared cache (r2r__get) */
	struct r2r_key key;
	uint32_t refs;
	uint64_t charged;	/* bytes taken from the symbol budget */
	struct r2r_image *next;
};

/* What an image is read from: a file (pread, bounded by its size) or a buffer. */
struct src {
	int fd;
	const uint8_t *buf;
	uint64_t size;
};

/* A method's row in a composite image's rfunc.rid: the component's index + 1 above the row
 * (metadata tables hold fewer than 2^24 rows; a composite at most 255 components). */
#define RID_BITS	24
#define RID_MASK	((1u << RID_BITS) - 1)
#define MAX_COMPONENTS	255

/* The bytes [rva, rva + len) of one section, for the native format readers. */
struct nreader {
	const uint8_t *b;
	uint32_t rva, len;	/* the bytes are the image's [rva, rva + len) */
};

static inline uint16_t le16(const uint8_t *p)
{
	return p[0] | p[1] << 8;
}

static inline uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

struct hdrs {
	uint32_t md_rva, md_size;
	uint32_t r2r_rva, r2r_size;
};

/*
 * The bytes of a buffer to keep (a bit a byte), and the count of kept bytes before each 64: a
 * kept byte's offset once the buffer is compacted is its rank.
 */
struct keep {
	uint64_t *bits;
	uint32_t *before;
	uint32_t len, kept;
};

struct sb {
	char buf[NAME_MAX_LEN];
	size_t len;
	int bad;	/* signature did not decode */
	uint32_t steps;	/* work done: past NAME_MAX_STEPS the name is given up (bad) */
	int foreign;	/* a type of another module: cannot be named from this image */
	int discard;	/* a sink: types are decoded (bounds, steps, bad) but nothing is written */
};

/* A signature being read: bounded, and failing for good at the first bad byte. */
struct sig {
	const uint8_t *p, *end;
	struct sb *out;
	int depth;
};


/* pe.c: bounded input, PE/COFF and the CLI header. */
/* len bytes at off of s into dst, counted in img's stats: 0, or -ERANGE / -errno. */
int pe_src_read(struct r2r_image *img, const struct src *s, uint64_t off, void *dst, size_t len);
/* The file offset of [rva, rva + len) when one section's file data holds all of it: 0, or -ENOENT. */
int pe_rva_to_off(const struct r2r_image *img, uint32_t rva, uint32_t len, uint64_t *off);
/* A copy of [rva, rva + len) of the image, at most cap bytes: NULL with *st set. */
uint8_t *pe_read_rva(struct r2r_image *img, const struct src *s, uint32_t rva, uint32_t len,
		     uint64_t cap, enum r2r_status *st);
/* The PE headers, its sections and the CLI header into img and h. */
enum r2r_status pe_parse(struct r2r_image *img, const struct src *s, struct hdrs *h);

/* ecma335.c: the ECMA-335 metadata naming needs, kept packed. */
/* Metadata root (II.24.2.1), its streams, then the parts naming needs. */
enum r2r_status md_parse(struct r2r_image *img, const struct src *s, const struct hdrs *h);
/* The TypeDef.MethodList runs checked in order, and which type encloses each. */
enum r2r_status md_index_types(struct r2r_image *img);
/* Keep what naming reads only, packed (img->md shrunk to fit). */
void md_pack_tables(struct r2r_image *img);
/* Column col of row rid (1-based) of table t; 0 when out of range. */
uint32_t md_cell(const struct r2r_image *img, unsigned t, uint32_t rid, unsigned col);
/* The #Strings entry at idx ("" when out of range); the #Blob entry at idx: 0, or -1. */
const char *md_string(const struct r2r_image *img, uint32_t idx);
int md_blob(const struct r2r_image *img, uint32_t idx, const uint8_t **p, const uint8_t **end);
/* ECMA compressed unsigned integer (II.23.2); -1 on bad input. */
int md_cuint(const uint8_t **p, const uint8_t *end, uint32_t *v);
/* The type that declares method rid; 0: none. */
uint32_t md_decl_type(const struct r2r_image *img, uint32_t rid);
/* The bytes of a buffer to keep: init (0, or -ENOMEM), mark [from, to), rank once all are
 * marked, a kept byte's new offset, the kept bytes moved down, free. */
int md_keep_init(struct keep *k, uint32_t len);
void md_keep_mark(struct keep *k, uint32_t from, uint32_t to);
void md_keep_rank(struct keep *k);
uint32_t md_keep_to(const struct keep *k, uint32_t off);
void md_keep_move(const struct keep *k, uint8_t *buf);
void md_keep_free(struct keep *k);

/* r2r.c: the READYTORUN header, the image. */
/* An image's PE headers and metadata only (a composite's component assembly: its code is the
 * composite's). Never NULL except out of memory; status != R2R_OK names nothing. */
struct r2r_image *r2r_open_metadata(const struct src *s, const struct r2r_limits *limits);
/* MethodDefEntryPoints of metadata md into img's functions, rows tagged with tag << RID_BITS. */
enum r2r_status r2r_read_methoddefs(struct r2r_image *img, const struct r2r_image *md,
				    const struct nreader *r, uint32_t tag);

/* r2rcomposite.c: composite images. */
/* Where a composite's component assemblies are read from (r2r__open_*_in). */
struct r2r_files {
	int dir_fd;				/* the composite's directory, or -1 */
	const struct r2r_named_buf *bufs;	/* or named buffers */
	size_t nbufs;
};
/* A composite image's components and their method entry points, from its ComponentAssemblies
 * section (srva, slen): 0 (R2R_OK) or why not. */
enum r2r_status r2r_composite_parse(struct r2r_image *img, const struct src *s, uint32_t srva,
				    uint32_t slen, const struct r2r_files *files);
/* The metadata that names row rid (a composite's component, or img itself); NULL: none. */
const struct r2r_image *r2r_md_of(const struct r2r_image *img, uint32_t rid);
/* The module a signature's module index (a module override) names, read in image ctx: a
 * component of ctx's composite image; NULL when it is not one we hold. */
const struct r2r_image *r2r_module(const struct r2r_image *ctx, uint32_t idx);
void r2r_composite_free(struct r2r_image *img);

/* r2rnames.c: names in the runtime's format. */
/* Function fn's method, named once (NULL: it cannot be, or no method is known). */
const char *rn_method_name(struct r2r_image *img, uint32_t fn);
/* A sink for skipping a type: its buffer is never written. */
void rn_sb_sink(struct sb *b);
/* A compressed unsigned integer of a signature: 0, or -1 (the signature is bad from then on). */
int rn_sig_uint(struct sig *s, uint32_t *v);
/* A type of an R2R signature as TypeString writes it. */
void rn_ts_type(const struct r2r_image *img, struct sig *s);

#endif /* SPANPROF_R2R_INT_H */
