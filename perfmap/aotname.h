/* aotname.h: .NET names read back from a Native AOT binary's symbols (ILCompiler's mangling). */
#ifndef SPANPROF_AOTNAME_H
#define SPANPROF_AOTNAME_H

#include <stddef.h>

/*
 * ILCompiler names a method "<Assembly>_<Namespace>_<Type>__<Method>", every character outside
 * [A-Za-z0-9_] (the dots too) made '_', "System.Private." shortened to "S_P_", a nested type
 * joined to its outer one by '_', a generic method's instantiation in <...>. The mangling loses
 * where the assembly ends and which '_' were dots, so a name is read back only where that is
 * unambiguous (aotname__readback); the others keep their symbol and are counted by the caller.
 *
 * One struct aotnames per binary: it learns, from the binary's own symbols, the assembly
 * prefixes ILCompiler gave the module types ("HotChain__Module___StartupCodeMain").
 */
struct aotnames;

struct aotnames *aotnames__new(void);	/* NULL + errno (ENOMEM) */
void aotnames__free(struct aotnames *an);	/* NULL-safe */

/* Feed every function symbol of the binary once, before the first readback. */
void aotnames__learn(struct aotnames *an, const char *sym);

/* 1 when the symbols fed are a Native AOT binary's (CoreLib's "S_P_CoreLib_" methods). */
int aotnames__is_aot(const struct aotnames *an);

/*
 * The .NET name of symbol sym, "[System.Private.CoreLib] System.SpanHelpers::IndexOf_0<...>",
 * into buf: 0; -ENOENT when sym is not a managed method's (a C/C++ symbol of the runtime);
 * -EILSEQ when it is but cannot be read back for certain (its assembly, or where its type ends,
 * is ambiguous); -ENOSPC when buf is too small.
 */
int aotname__readback(const struct aotnames *an, const char *sym, char *buf, size_t len);

#endif /* SPANPROF_AOTNAME_H */
