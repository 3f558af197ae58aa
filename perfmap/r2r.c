/* r2r.c: ReadyToRun images: PE/COFF, the CLI header, the READYTORUN header and its sections,
 * and the ECMA-335 metadata needed to name precompiled methods as the runtime's perf map does.
 * Here: the native format (MethodDef and instance entry points), runtime functions, the READYTORUN
 * header, the image and the cache. PE/COFF: pe.c; metadata: ecma335.c; names: r2rnames.c;
 * shared: r2r_int.h. */
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
#include "r2r_int.h"
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

/* ---- the native format (nativeformatreader.h) over one section's bytes -------------------- */

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

/* Function fn is the code of row rid of metadata md (img, or its component tag - 1). */
static int add_method(struct r2r_image *img, const struct r2r_image *md, uint32_t tag,
		      uint32_t rid, uint32_t owner_off, uint32_t fn)
{
	if (!rid || rid > md->tab[T_METHODDEF].rows || fn >= img->nrf) {
		img->st.bad_entries++;
		return 0;
	}
	if (img->rf[fn].rid)
		return 0;	/* two entries for one body (an unboxing stub's twin): keep the first */
	img->rf[fn].rid = rid | tag << RID_BITS;
	img->rf[fn].owner_off = owner_off;
	img->nmethods++;
	return 0;
}

enum r2r_status r2r_read_methoddefs(struct r2r_image *img, const struct r2r_image *md,
				    const struct nreader *r, uint32_t tag)
{
	uint32_t hdr, base = nr_unsigned(r, r->rva, &hdr);

	if (!base)
		return R2R_BAD_HEADER;
	/* Only rows that both the array and the MethodDef table have. */
	for (uint32_t rid = 1; rid <= md->tab[T_METHODDEF].rows && rid <= hdr >> 2; rid++) {
		uint32_t at = narray_get(r, base, hdr >> 2, hdr & 3, rid - 1), fn;

		if (!at)
			continue;
		if (entry_index(r, at, &fn)) {
			img->st.bad_entries++;
			continue;
		}
		if (add_method(img, md, tag, rid, 0, fn))
			return R2R_NOMEM;
	}
	return R2R_OK;
}

/* Skip one type of an R2R signature (bounded); -1 when it does not decode. */
static int skip_type(const struct r2r_image *img, struct sig *s)
{
	struct sb scratch;
	struct sb *out = s->out;

	rn_sb_sink(&scratch);
	s->out = &scratch;
	rn_ts_type(img, s);
	s->out = out;
	return scratch.bad && !scratch.foreign ? -1 : 0;
}

/*
 * In a composite image, an instance entry without a context of its own names its method by a
 * row of its owner type's module: the module (and its tag) of the type definition the owner
 * signature starts with ("3f <module> 15 12 <token>": a module override, a generic instance,
 * a class). NULL when there is none.
 */
static const struct r2r_image *owner_module(const struct r2r_image *img, const uint8_t *p,
					    const uint8_t *end, uint32_t *tag)
{
	const struct r2r_image *md = NULL;
	uint32_t idx;

	for (int k = 0; k < 4 && p < end; k++) {
		if (*p == ET_MODULE_ZAPSIG) {
			p++;
			if (md_cuint(&p, end, &idx) || !(md = r2r_module(img, idx)))
				return NULL;
			*tag = idx - 1;	/* module index i is component i - 2 (r2r_module) */
		} else if (*p == ET_GENERICINST) {
			p++;
		} else {
			break;
		}
	}
	return md;
}

/* One INSTANCE_METHOD_ENTRYPOINTS entry: the method's R2R signature, then its entry. The bytes
 * of its owner type's signature, which naming reads again, are marked in owners. */
static int read_instance(struct r2r_image *img, const struct nreader *r, uint32_t at,
			 struct keep *owners)
{
	struct sb scratch;
	struct sig s = { .p = r->b + (at - r->rva), .end = r->b + r->len, .out = &scratch };
	uint32_t flags, rid, n, owner = 0, owner_end = 0, fn, tag = 0;
	const struct r2r_image *md = img;	/* whose tokens the signature holds */

	rn_sb_sink(&scratch);
	if (rn_sig_uint(&s, &flags))
		goto bad;
	if (flags & MSIG_UPDATE_CONTEXT) {
		/* A composite image's methods name their component first. */
		if (rn_sig_uint(&s, &n))
			goto bad;
		if (!img->ncomps || !(md = r2r_module(img, n))) {
			img->st.unsupported++;	/* a method of another module */
			return 0;
		}
		tag = n - 1;	/* module index i is component i - 2 (r2r_module) */
	}
	if (flags & (MSIG_SLOT | MSIG_MEMBERREF)) {
		img->st.unsupported++;	/* by slot, or by reference */
		return 0;
	}
	if (flags & MSIG_OWNER_TYPE) {
		owner = r->rva + (uint32_t)(s.p - r->b);
		if (!tag && img->ncomps)	/* the owner's module is the method's */
			md = owner_module(img, s.p, s.end, &tag);
		if (!md) {
			img->st.unsupported++;
			return 0;
		}
		if (skip_type(md, &s))
			goto bad;
		owner_end = r->rva + (uint32_t)(s.p - r->b);
	}
	if (rn_sig_uint(&s, &rid))
		goto bad;
	if (flags & MSIG_METHOD_INST) {
		if (rn_sig_uint(&s, &n) || n > 64)
			goto bad;
		for (uint32_t i = 0; i < n; i++)
			if (skip_type(md, &s))
				goto bad;
	}
	if ((flags & MSIG_CONSTRAINED) && skip_type(md, &s))
		goto bad;
	if (entry_index(r, r->rva + (uint32_t)(s.p - r->b), &fn))
		goto bad;
	img->st.instances++;
	if (owner)	/* at least its first byte */
		md_keep_mark(owners, owner - r->rva, (owner_end > owner ? owner_end : owner + 1) - r->rva);
	return add_method(img, md, tag, rid, owner, fn);
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
		/* In a composite with a component unread, the functions of its methods would pass
		 * for funclets of the method before them: left unnamed instead. */
		if (i && img->rf[i - 1].rid && !img->st.components_unread)
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

	md_keep_rank(k);
	for (uint32_t i = 0; i < img->nrf; i++)
		if (img->rf[i].owner_off)
			img->rf[i].owner_off = img->inst_rva +
					       md_keep_to(k, img->rf[i].owner_off - img->inst_rva);
	md_keep_move(k, img->inst);
	img->st.mem_bytes -= img->inst_len - k->kept;
	img->inst_len = k->kept;
	if ((moved = realloc(img->inst, k->kept)))
		img->inst = moved;
}

/* ---- the READYTORUN header --------------------------------------------------------------- */

static enum r2r_status parse_r2r(struct r2r_image *img, const struct src *s, const struct hdrs *h,
				const struct r2r_files *files)
{
	enum r2r_status st = R2R_OK;
	uint8_t hdr[16], *dir = NULL, *sec[4] = { NULL };
	uint32_t nsec, srva[4] = { 0 }, slen[4] = { 0 }, crva = 0, clen = 0;
	struct keep owners = { 0 };	/* the instance section's bytes naming reads */
	static const uint32_t want[4] = { SEC_RUNTIME_FUNCTIONS, SEC_METHODDEF_ENTRYPOINTS,
					  SEC_INSTANCE_ENTRYPOINTS, SEC_HOT_COLD_MAP };
	uint64_t off;

	if (pe_rva_to_off(img, h->r2r_rva, sizeof(hdr), &off) || pe_src_read(img, s, off, hdr, sizeof(hdr)))
		return R2R_BAD_HEADER;
	if (le32(hdr) != R2R_SIGNATURE)
		return R2R_NOT_R2R;
	img->st.major = le16(hdr + 4);
	img->st.minor = le16(hdr + 6);
	nsec = le32(hdr + 12);
	if (img->st.major < 5 || img->st.major > 32)
		return R2R_UNSUPPORTED;
	if (le32(hdr + 8) & R2R_FLAG_COMPONENT)
		return R2R_COMPONENT;	/* IL and metadata only: its code is in the composite */
	if (nsec > R2R_MAX_SECTIONS)
		return R2R_BAD_HEADER;
	dir = pe_read_rva(img, s, h->r2r_rva + 16, nsec * 12, R2R_MAX_SECTIONS * 12, &st);
	if (!dir)
		return st;
	for (uint32_t i = 0; i < nsec; i++) {
		uint32_t type = le32(dir + 12 * i);

		if (type == SEC_COMPONENT_ASSEMBLIES && !crva) {
			/* composite: methods of many assemblies, MethodDefEntryPoints per component */
			crva = le32(dir + 12 * i + 4);
			clen = le32(dir + 12 * i + 8);
		}
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
	if (!srva[0] || (!srva[1] && !crva))
		return R2R_BAD_HEADER;
	for (int k = 0; k < 4 && st == R2R_OK; k++)
		if (srva[k] && !(k == 1 && crva) &&
		    !(sec[k] = pe_read_rva(img, s, srva[k], slen[k], img->lim.max_section, &st)))
			break;
	if (st == R2R_OK)
		st = read_functions(img, sec[0], slen[0]);
	if (st == R2R_OK && crva)
		st = r2r_composite_parse(img, s, crva, clen, files);
	else if (st == R2R_OK)
		st = r2r_read_methoddefs(img, img, &(struct nreader){ sec[1], srva[1], slen[1] }, 0);
	if (st == R2R_OK && sec[2]) {
		img->inst = sec[2];
		img->inst_rva = srva[2];
		img->inst_len = slen[2];
		sec[2] = NULL;
		st = md_keep_init(&owners, img->inst_len) ? R2R_NOMEM : R2R_OK;
		if (st == R2R_OK) {
			md_keep_mark(&owners, 0, 1);	/* the header: no owner starts there */
			st = read_instances(img, &(struct nreader){ img->inst, img->inst_rva,
								   img->inst_len }, &owners);
		}
	}
	if (st == R2R_OK) {
		assign_owners(img, sec[3], slen[3]);
		if (img->inst)
			compact_owners(img, &owners);
	}
	md_keep_free(&owners);
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
	r2r_composite_free(img);
	img->md = img->inst = NULL;
	img->enclosing = NULL;
	img->rf = NULL;
	img->named = NULL;
	img->named_cap = img->nnamed = 0;
	img->names = NULL;
	img->nrf = img->nmethods = 0;
	img->st.mem_bytes = 0;
}

/* An image from s; files: where a composite's components are (NULL: nowhere); md_only: its
 * headers and metadata, not its code. */
static struct r2r_image *open_src(const struct src *s, const struct r2r_limits *limits,
				  const struct r2r_files *files, int md_only)
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
	st = img->names ? pe_parse(img, s, &h) : R2R_NOMEM;
	if (st == R2R_OK)
		st = md_parse(img, s, &h);
	if (st == R2R_OK)
		st = md_index_types(img);
	if (st == R2R_OK) {
		md_pack_tables(img);
		/* the assembly's name, in the packed heap */
		img->assembly = md_string(img, md_cell(img, T_ASSEMBLY, 1, 7));
		if (!md_only)
			st = parse_r2r(img, s, &h, files);
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

struct r2r_image *r2r_open_metadata(const struct src *s, const struct r2r_limits *limits)
{
	return open_src(s, limits, NULL, 1);
}

struct r2r_image *r2r__open_buf_with(const void *buf, size_t len, const struct r2r_named_buf *comps,
				     size_t ncomps, const struct r2r_limits *limits)
{
	struct src s = { .fd = -1, .buf = buf ? buf : (const uint8_t *)"", .size = buf ? len : 0 };
	struct r2r_files f = { .dir_fd = -1, .bufs = comps, .nbufs = comps ? ncomps : 0 };

	return open_src(&s, limits, &f, 0);
}

struct r2r_image *r2r__open_buf(const void *buf, size_t len, const struct r2r_limits *limits)
{
	return r2r__open_buf_with(buf, len, NULL, 0, limits);
}

struct r2r_image *r2r__open_fd(int fd, const struct r2r_limits *limits)
{
	return r2r__open_fd_in(fd, -1, limits);
}

struct r2r_image *r2r__open_fd_in(int fd, int dir_fd, const struct r2r_limits *limits)
{
	struct stat st;
	struct src s = { .fd = fd };
	struct r2r_files f = { .dir_fd = dir_fd };

	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		struct r2r_image *img = calloc(1, sizeof(*img));

		if (img)
			img->st.status = R2R_UNREADABLE;
		else
			errno = ENOMEM;
		return img;
	}
	s.size = st.st_size;
	return open_src(&s, limits, &f, 0);
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
		[R2R_UNSUPPORTED] = "unsupported ReadyToRun image (#- metadata or version)",
		[R2R_BAD_HEADER] = "malformed PE/ReadyToRun headers",
		[R2R_BAD_METADATA] = "malformed metadata", [R2R_TOO_BIG] = "larger than the caps",
		[R2R_NOMEM] = "out of memory",
		[R2R_OVER_BUDGET] = "over the symbol budget (--max-symbol-mb)",
		[R2R_COMPONENT] = "component of a composite image (its code is in the composite)",
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
	return rn_method_name(img, (uint32_t)i);
}

int r2r__function(struct r2r_image *img, uint32_t i, uint32_t *start, uint32_t *end,
		  const char **name)
{
	if (!img || i >= img->nrf)
		return -ENOENT;
	*start = img->rf[i].begin;
	*end = img->rf[i].end;
	*name = rn_method_name(img, i);
	return 0;
}

/* ---- the cache shared by every process ---------------------------------------------------- */

static struct r2r_image *cache;

struct r2r_image *r2r__get(int fd)
{
	return r2r__get_in(fd, -1);
}

struct r2r_image *r2r__get_in(int fd, int dir_fd)
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
	img = r2r__open_fd_in(fd, dir_fd, NULL);
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
