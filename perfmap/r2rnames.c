/* r2rnames.c: ReadyToRun methods named as the runtime's perf map names them: PrettyPrintSig of
 * the signature around "[Assembly] Class::Method", classes as TypeString writes them. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "intern.h"
#include "siphash.h"
#include "r2r.h"
#include "r2r_int.h"

/* ---- names ------------------------------------------------------------------------------- */

/* A sink for skipping a type: its buffer is never written, so not cleared either. */
void rn_sb_sink(struct sb *b)
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

static int sig_u8(struct sig *s, uint8_t *v)
{
	if (s->p >= s->end) {
		s->out->bad = 1;
		return -1;
	}
	*v = *s->p++;
	return 0;
}

int rn_sig_uint(struct sig *s, uint32_t *v)
{
	if (md_cuint(&s->p, s->end, v)) {
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

	if (rn_sig_uint(s, &u))
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

	if (rn_sig_uint(s, &v))
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
		const char *ns = md_string(img, md_cell(img, T_TYPEDEF, rid, 2));

		if (!rid || rid > img->tab[T_TYPEDEF].rows) {
			b->bad = 1;
			return;
		}
		if (img->enclosing[rid]) {
			il_class(img, T_TYPEDEF, img->enclosing[rid], b, depth + 1);
			put(b, "/");
		}
		put_name(b, ns, md_string(img, md_cell(img, T_TYPEDEF, rid, 1)));
	} else if (table == T_TYPEREF) {
		uint32_t scope = md_cell(img, T_TYPEREF, rid, 0);
		const char *ns = md_string(img, md_cell(img, T_TYPEREF, rid, 2));
		unsigned stag = scope & 3;
		uint32_t srid = scope >> 2;

		if (!rid || rid > img->tab[T_TYPEREF].rows) {
			b->bad = 1;
			return;
		}
		if (!scope) {
			put(b, "[*]");
		} else if (stag == 2) {	/* AssemblyRef */
			put_around(b, "[", md_string(img, md_cell(img, T_ASSEMBLYREF, srid, 6)), "]");
		} else if (stag == 1) {	/* ModuleRef */
			put_around(b, "[.module ", md_string(img, md_cell(img, T_MODULEREF, srid, 0)), "]");
		} else if (stag == 3 && srid) {	/* nested in a TypeRef */
			il_class(img, T_TYPEREF, srid, b, depth + 1);
			put(b, "/");
		}
		put_name(b, ns, md_string(img, md_cell(img, T_TYPEREF, rid, 1)));
	} else if (table == T_TYPESPEC) {
		struct sig ts = { .out = b, .depth = depth + 1 };

		if (md_blob(img, md_cell(img, T_TYPESPEC, rid, 0), &ts.p, &ts.end)) {
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
			if (!rn_sig_uint(s, &n))
				putf(s->out, "%s%u", et == ET_VAR ? "!" : "!!", n);
			break;
		case ET_GENERICINST:
			il_type(img, s);
			put(s->out, "<");
			if (rn_sig_uint(s, &n))
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
			if (rn_sig_uint(s, &rank) || rn_sig_uint(s, &nsizes))
				break;
			for (uint32_t i = 0; i < nsizes && !rn_sig_uint(s, &n); i++)
				if (i < 8)
					sizes[i] = n;
			if (rn_sig_uint(s, &nlo))
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

	if (rn_sig_uint(s, &cc))
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
	if ((cc & 0x10) && rn_sig_uint(s, &ntypes))
		return;
	if (rn_sig_uint(s, &nargs))
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
		ns = md_string(img, md_cell(img, T_TYPEDEF, rid, 2));
		name = md_string(img, md_cell(img, T_TYPEDEF, rid, 1));
	} else if (table == T_TYPEREF) {
		uint32_t scope = md_cell(img, T_TYPEREF, rid, 0);

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
		ns = md_string(img, md_cell(img, T_TYPEREF, rid, 2));
		name = md_string(img, md_cell(img, T_TYPEREF, rid, 1));
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
void rn_ts_type(const struct r2r_image *img, struct sig *s)
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
		rn_ts_type(img, s);
		put(s->out, "[");
		if (!rn_sig_uint(s, &n)) {
			for (uint32_t i = 0; i < n && !s->out->bad; i++) {
				if (i)
					put(s->out, ",");
				rn_ts_type(img, s);
			}
		}
		put(s->out, "]");
	} else if (et == ET_SZARRAY || et == ET_PTR || et == ET_BYREF) {
		rn_ts_type(img, s);
		put(s->out, et == ET_SZARRAY ? "[]" : et == ET_PTR ? "*" : "&");
	} else if (et == ET_ARRAY) {
		uint32_t rank, cnt;

		rn_ts_type(img, s);
		if (rn_sig_uint(s, &rank) || rank > 64)
			s->out->bad = 1;
		for (int k = 0; k < 2 && !s->out->bad; k++)	/* sizes, then lower bounds */
			if (!rn_sig_uint(s, &cnt))
				for (uint32_t i = 0; i < cnt && !rn_sig_uint(s, &n); i++)
					;
		put(s->out, "[");
		for (uint32_t i = 1; i < rank && !s->out->bad; i++)
			put(s->out, ",");
		put(s->out, rank == 1 ? "*]" : "]");
	} else if (et == ET_MODULE_ZAPSIG) {
		const struct r2r_image *mod;

		/* The type's tokens are another module's: named when it is a component of the same
		 * composite image, foreign otherwise. */
		if (!rn_sig_uint(s, &n)) {
			if ((mod = r2r_module(img, n)))
				rn_ts_type(mod, s);
			else
				s->out->foreign = s->out->bad = 1;
		}
	} else if (et == ET_VAR || et == ET_MVAR) {
		if (!rn_sig_uint(s, &n))
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
	/* the metadata the method is in: img, or a composite image's component */
	const struct r2r_image *md = r2r_md_of(img, m->rid);
	uint32_t rid = m->rid & RID_MASK, type;

	if (!md) {
		b->bad = 1;
		return;
	}
	type = md_decl_type(md, rid);
	if (m->owner_off) {
		struct sig os = { .p = img->inst + (m->owner_off - img->inst_rva),
				  .end = img->inst + img->inst_len, .out = &cls };

		rn_ts_type(md, &os);
	} else {
		ts_class(md, T_TYPEDEF, type, &cls, 0);
	}
	if (cls.bad || !type) {
		b->bad = 1;
		b->foreign = cls.foreign;
		return;
	}
	put(&pre, "[");
	put(&pre, md->assembly);
	put(&pre, "] ");
	put(&pre, cls.buf);
	put(&pre, "::");
	put(&pre, md_string(md, md_cell(md, T_METHODDEF, rid, 3)));
	if (md_blob(md, md_cell(md, T_METHODDEF, rid, 4), &s.p, &s.end)) {
		b->bad = 1;
		return;
	}
	il_sig_args(md, &s, pre.buf);
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
const char *rn_method_name(struct r2r_image *img, uint32_t fn)
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
