/* ecma335.c: the ECMA-335 metadata the ReadyToRun reader (r2r.c) names methods from: the
 * metadata root and its streams, the tables' schemas and coded indexes, TypeDef runs, and the
 * tables and heaps packed down to what naming reads. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prefault.h"
#include "r2r.h"
#include "r2r_int.h"

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
uint32_t md_cell(const struct r2r_image *img, unsigned t, uint32_t rid, unsigned col)
{
	const struct md_table *tb = &img->tab[t];
	const uint8_t *p;

	if (!rid || rid > tb->rows || col >= tb->ncols || !tb->base || !tb->width[col])
		return 0;
	p = tb->base + (uint64_t)(rid - 1) * tb->row_size + tb->off[col];
	return tb->width[col] == 4 ? le32(p) : le16(p);
}

const char *md_string(const struct r2r_image *img, uint32_t idx)
{
	if (idx >= img->strings_len || !memchr(img->strings + idx, 0, img->strings_len - idx))
		return "";
	return (const char *)img->strings + idx;
}

/* ECMA compressed unsigned integer (II.23.2); -1 on bad input. */
int md_cuint(const uint8_t **p, const uint8_t *end, uint32_t *v)
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

int md_blob(const struct r2r_image *img, uint32_t idx, const uint8_t **p, const uint8_t **end)
{
	const uint8_t *q = img->blob + idx, *lim = img->blob + img->blob_len;
	uint32_t len;

	if (idx >= img->blob_len || md_cuint(&q, lim, &len) || len > (uint32_t)(lim - q))
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
		if (img->tab[t].rows > RID_MASK)	/* rows fit RID_BITS (r2r_int.h) */
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
	if (pe_src_read(img, s, md_off + strings->off, p, strings->size))
		return R2R_BAD_METADATA;
	img->strings = p;
	img->strings_len = strings->size;
	p += strings->size;
	if (pe_src_read(img, s, md_off + blob->off, p, blob->size))
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
		if (pe_src_read(img, s, md_off + tables->off + tab_off[t], p, n))
			return R2R_BAD_METADATA;
		tb->base = p;
		p += n;
	}
	return R2R_OK;
}

/* Metadata root (II.24.2.1), its streams, then the parts naming needs. */
enum r2r_status md_parse(struct r2r_image *img, const struct src *s,
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
	if (pe_rva_to_off(img, h->md_rva, h->md_size, &md_off) || pe_src_read(img, s, md_off, head, hlen))
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
	if (pe_src_read(img, s, md_off + tables.off, th, hlen))
		return R2R_BAD_METADATA;
	st = parse_tables(img, th, hlen, tables.size, tab_off);
	if (st != R2R_OK)
		return st;
	return read_named_metadata(img, s, md_off, &tables, &strings, &blob, tab_off);
}

/* The type that declares method rid: the last whose TypeDef.MethodList run starts at or before
 * it (index_types checked the runs are in order); 0: none. */
uint32_t md_decl_type(const struct r2r_image *img, uint32_t rid)
{
	uint32_t lo = 1, hi = img->tab[T_TYPEDEF].rows + 1;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (md_cell(img, T_TYPEDEF, mid, 5) <= rid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/* The TypeDef.MethodList runs are in order (ECMA-335 II.22.37), so a method's type is found by
 * binary search; and which type encloses each. */
enum r2r_status md_index_types(struct r2r_image *img)
{
	uint32_t ntypes = img->tab[T_TYPEDEF].rows, nmeth = img->tab[T_METHODDEF].rows;

	for (uint32_t t = 1, prev = 1; t <= ntypes; t++) {
		uint32_t first = md_cell(img, T_TYPEDEF, t, 5);

		if (first < prev || first > nmeth + 1)
			return R2R_BAD_METADATA;
		prev = first;
	}
	img->enclosing = calloc((size_t)ntypes + 1, sizeof(*img->enclosing));
	if (!img->enclosing)
		return R2R_NOMEM;
	img->st.mem_bytes += ((uint64_t)ntypes + 1) * 4;
	for (uint32_t i = 1; i <= img->tab[T_NESTEDCLASS].rows; i++) {
		uint32_t inner = md_cell(img, T_NESTEDCLASS, i, 0);
		uint32_t outer = md_cell(img, T_NESTEDCLASS, i, 1);

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
	if (md_cuint(&q, heap + len, &n) || n > (uint32_t)(heap + len - q))
		return 0;
	return (uint32_t)(q - heap) + n;
}

int md_keep_init(struct keep *k, uint32_t len)
{
	*k = (struct keep){ .len = len };
	k->bits = calloc(len / 64 + 1, sizeof(*k->bits));
	k->before = malloc((len / 64 + 1) * sizeof(*k->before));
	return k->bits && k->before ? 0 : -ENOMEM;
}

void md_keep_free(struct keep *k)
{
	free(k->bits);
	free(k->before);
}

static int keep_has(const struct keep *k, uint32_t off)
{
	return off < k->len && k->bits[off / 64] >> (off % 64) & 1;
}

void md_keep_mark(struct keep *k, uint32_t from, uint32_t to)
{
	for (uint32_t i = from; i < to && i < k->len; i++)
		k->bits[i / 64] |= 1ull << (i % 64);
}

/* Once every byte is marked: the ranks, and how many are kept (k->kept). */
void md_keep_rank(struct keep *k)
{
	k->kept = 0;
	for (uint32_t i = 0; i <= k->len / 64; i++) {
		k->before[i] = k->kept;
		k->kept += (uint32_t)__builtin_popcountll(k->bits[i]);
	}
}

/* The new offset of kept byte off. */
uint32_t md_keep_to(const struct keep *k, uint32_t off)
{
	return k->before[off / 64] +
	       (uint32_t)__builtin_popcountll(k->bits[off / 64] & ((1ull << (off % 64)) - 1));
}

/* Move each run of kept bytes of buf down, in order: buf then holds k->kept bytes. */
void md_keep_move(const struct keep *k, uint8_t *buf)
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
		md_keep_mark(&h->keep, off, end);
}

/* A cell moved with its entry. One that does not decode keeps its bytes if they were kept (and
 * what follows them is no longer than before: it still does not decode), else points past the
 * new heap's end: it names nothing, as before. */
static void move_cell(uint8_t *p, unsigned width, void *arg)
{
	struct heap_pass *h = arg;
	uint32_t off = cell_get(p, width);
	uint32_t to = keep_has(&h->keep, off) ? md_keep_to(&h->keep, off) : h->keep.kept;

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
	if (md_keep_init(&h.keep, len))
		goto out;
	end0 = entry_end(heap, len, kind, 0);
	md_keep_mark(&h.keep, 0, end0 ? end0 : 1);	/* index 0: the empty entry */
	each_cell(img, kind, mark_cell, &h);
	md_keep_rank(&h.keep);
	if (h.keep.kept == len || (h.min_width == 2 && h.keep.kept > 0xffff))
		goto out;
	each_cell(img, kind, move_cell, &h);
	md_keep_move(&h.keep, heap);
	new_len = h.keep.kept;
out:
	md_keep_free(&h.keep);
	return new_len;
}

/*
 * The metadata buffer holds #Strings, #Blob, then the kept tables. Pack the tables' columns,
 * keep of each heap what the kept cells point at, move the parts down to meet, and shrink the
 * buffer to fit.
 */
void md_pack_tables(struct r2r_image *img)
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
