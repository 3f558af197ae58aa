/* aotname.c: .NET names read back from a Native AOT binary's symbols (ILCompiler's mangling). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aotname.h"

/*
 * Checked against ILCompiler's NativeAotNameMangler (dotnet/runtime
 * src/coreclr/tools/Common/Compiler, .NET 10) and the symbols of a .NET 10.0.12 `PublishAot`
 * binary: a type is SanitizeName("<Assembly>") + '_' + SanitizeName("<Namespace>") + '_' +
 * "<Outer>_<Inner>" (SanitizeName: every character outside [A-Za-z0-9_] becomes '_'; an
 * assembly "System.Private.X" is first shortened to "S.P.X"), made unique in its module by a
 * "_<n>" suffix; CoreLib's primitive types are "Int32", "String", ... alone; a method is
 * "<type>__<SanitizeName(name)>", a generic one followed by "<args>"; an unboxing thunk is
 * prefixed "unbox_".
 */

#define MAX_PREFIXES	256
#define MAX_ASM_SEGS	6	/* segments an assembly name is looked for in */

struct aotnames {
	char *prefix[MAX_PREFIXES];	/* assembly prefixes of "<prefix>__Module___" symbols */
	unsigned nprefix;
	int corelib;			/* saw "S_P_CoreLib_" methods */
};

struct aotnames *aotnames__new(void)
{
	struct aotnames *an = calloc(1, sizeof(*an));

	if (!an)
		errno = ENOMEM;
	return an;
}

void aotnames__free(struct aotnames *an)
{
	if (!an)
		return;
	for (unsigned i = 0; i < an->nprefix; i++)
		free(an->prefix[i]);
	free(an);
}

void aotnames__learn(struct aotnames *an, const char *sym)
{
	const char *m;
	size_t n;

	if (!an || !sym)
		return;
	if (!strncmp(sym, "S_P_CoreLib_", 12))
		an->corelib = 1;
	/* "<Module>" of an assembly without a namespace: "<prefix>_" + "_Module_" */
	if (!(m = strstr(sym, "__Module___")) || m == sym || an->nprefix >= MAX_PREFIXES)
		return;
	n = (size_t)(m - sym);
	for (unsigned i = 0; i < an->nprefix; i++)
		if (strlen(an->prefix[i]) == n && !strncmp(an->prefix[i], sym, n))
			return;
	if ((an->prefix[an->nprefix] = strndup(sym, n)))
		an->nprefix++;
}

int aotnames__is_aot(const struct aotnames *an)
{
	return an && an->corelib;
}

/* Output with a bound: -ENOSPC once full. */
struct out {
	char *buf;
	size_t len, cap;
	int full;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->full || n >= o->cap - o->len) {
		o->full = 1;
		return;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = 0;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* '_'-separated name segments as dots, "_<digits>" after a segment as a generic arity ("`2"). */
static void put_dotted(struct out *o, const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t j = i;
		int digits = 1;

		while (j < n && s[j] != '_')
			digits &= s[j] >= '0' && s[j] <= '9', j++;
		if (i)
			puts_(o, digits && j > i ? "`" : ".");
		put(o, s + i, j - i);
		i = j + 1;
	}
}

static int is_ident(const char *s, size_t n)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	return 1;
}

/* CoreLib's primitive types, which ILCompiler names alone. */
static const char *const prims[][2] = {
	{ "Bool", "Boolean" }, { "UInt8", "Byte" }, { "Int8", "SByte" }, { "UInt16", "UInt16" },
	{ "Int16", "Int16" }, { "UInt32", "UInt32" }, { "Int32", "Int32" }, { "UInt64", "UInt64" },
	{ "Int64", "Int64" }, { "Char", "Char" }, { "Double", "Double" }, { "Single", "Single" },
	{ "IntPtr", "IntPtr" }, { "UIntPtr", "UIntPtr" }, { "Object", "Object" },
	{ "String", "String" },
};

/* Length of the assembly prefix of s ("S_P_CoreLib", a learned one, or "A_B" followed by a
 * namespace that starts with "A_"); 0: not known for certain. */
static size_t assembly_len(const struct aotnames *an, const char *s, size_t n)
{
	const char *e0;
	size_t best = 0, k = 0, first;

	if (n > 4 && !strncmp(s, "S_P_", 4)) {
		const char *e = memchr(s + 4, '_', n - 4);

		return e ? (size_t)(e - s) : 0;
	}
	for (unsigned i = 0; i < an->nprefix; i++) {
		size_t p = strlen(an->prefix[i]);

		if (p > best && p < n && s[p] == '_' && !strncmp(s, an->prefix[i], p))
			best = p;
	}
	if (best)
		return best;
	/* The namespace usually starts with the assembly's first segment ("System_Console_System_
	 * ConsolePal"): the shortest such split. */
	if (!(e0 = memchr(s, '_', n)))
		return 0;
	first = (size_t)(e0 - s);
	for (const char *p = e0; p && k < MAX_ASM_SEGS; k++) {
		const char *rest = p + 1;
		size_t rlen = (size_t)(s + n - rest);

		if (rlen > first + 1 && !strncmp(rest, s, first) && rest[first] == '_')
			return (size_t)(p - s);
		p = rlen ? memchr(rest, '_', rlen) : NULL;
	}
	return 0;
}

/* The end of the "<...>" that starts at p (nested), or NULL. */
static const char *close_angle(const char *p)
{
	int depth = 0;

	for (; *p; p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>' && --depth == 0)
			return p;
	}
	return NULL;
}

static int readback(const struct aotnames *an, const char *sym, struct out *o);

int aotname__readback(const struct aotnames *an, const char *sym, char *buf, size_t len)
{
	struct out o = { .buf = buf, .cap = len };
	int err;

	if (!an || !sym || !buf || !len)
		return -EINVAL;
	buf[0] = 0;
	err = readback(an, sym, &o);
	if (!err && o.full)
		err = -ENOSPC;
	if (err)
		buf[0] = 0;
	return err;
}

static int readback(const struct aotnames *an, const char *sym, struct out *o)
{
	const char *s = sym, *inst, *split, *targs = NULL, *tend = NULL, *u;
	size_t n, alen;

	if (!strncmp(s, "unbox_", 6))
		s += 6;
	/* a boxed value type's unboxing stub: "<Boxed><type><args>__<unbox><type>__<method>" */
	if (!strncmp(s, "<Boxed>", 7) && (u = strstr(s, "__<unbox>")))
		s = u + 9;
	/* an assembly's global functions: "<prefix>__Module___<method>" */
	for (unsigned i = 0; i < an->nprefix; i++) {
		size_t p = strlen(an->prefix[i]);

		if (!strncmp(s, an->prefix[i], p) && !strncmp(s + p, "__Module___", 11) &&
		    is_ident(s + p + 11, strcspn(s + p + 11, "<")) && s[p + 11] && s[p + 11] != '_') {
			puts_(o, "[");
			put_dotted(o, s, p);
			puts_(o, "] <Module>::");
			puts_(o, s + p + 11);
			return 0;
		}
	}
	inst = strchr(s, '<');
	n = inst ? (size_t)(inst - s) : strlen(s);
	split = strstr(s, "__");
	if (inst && (!split || split > inst)) {
		/* a generic type's instantiation before its method: "<type><args>__<method>" */
		targs = inst;
		if (!(tend = close_angle(inst)) || strncmp(tend + 1, "__", 2))
			return -ENOENT;
		split = tend + 1;
		inst = strchr(split + 2, '<');
		n = inst ? (size_t)(inst - s) : strlen(s);
	}
	if (!split || split >= s + n || split == s || !strncmp(s, "_Z", 2) ||
	    !is_ident(s, (size_t)((targs ? targs : split) - s)) ||
	    !is_ident(split + 2, (size_t)(s + n - split - 2)))
		return -ENOENT;	/* no "<type>__<method>": a C or C++ symbol */
	if (targs)	/* from here on, the type ends where its instantiation starts */
		split = targs;
	for (size_t i = 0; i < sizeof(prims) / sizeof(prims[0]); i++)
		if ((size_t)(split - s) == strlen(prims[i][0]) && !strncmp(s, prims[i][0], split - s)) {
			puts_(o, "[System.Private.CoreLib] System.");
			puts_(o, prims[i][1]);
			goto method;
		}
	alen = assembly_len(an, s, (size_t)(split - s));
	if (!alen || alen + 1 >= (size_t)(split - s))
		return -EILSEQ;	/* no assembly known, or no type after it */
	puts_(o, "[");
	if (!strncmp(s, "S_P_", 4)) {
		puts_(o, "System.Private.");
		put_dotted(o, s + 4, alen - 4);
	} else {
		put_dotted(o, s, alen);
	}
	puts_(o, "] ");
	put_dotted(o, s + alen + 1, (size_t)(split - s) - alen - 1);
	if (targs)	/* its instantiation, in ILCompiler's spelling */
		put(o, targs, (size_t)(tend - targs) + 1);
	if (targs)
		split = tend + 1;
method:
	/* "___" is "__" and a method name sanitized from "<...>" (a lambda) or a type's "<>c":
	 * where the type ends is not known, but ".ctor" and ".cctor" are */
	split += 2;
	if (*split == '_') {
		size_t m = (size_t)(s + n - split);

		if (!((m == 5 && !strncmp(split, "_ctor", 5)) || (m == 6 && !strncmp(split, "_cctor", 6))))
			return -EILSEQ;
		puts_(o, "::.");
		puts_(o, split + 1);	/* with the instantiation, if any */
	} else {
		if (split >= s + n)
			return -EILSEQ;
		puts_(o, "::");
		puts_(o, split);
	}
	return 0;
}
