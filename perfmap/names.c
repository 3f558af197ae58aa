/* names.c: the readable part of a runtime method name (checked against .NET 10.0.12 perf maps). */
#include <string.h>

#include "perfmap.h"

/*
 * The runtime writes "[instance ]<return type> [<Assembly>] <Type>::<Method>(<args>)", e.g.
 * "instance valuetype [System.Runtime]System.TimeSpan [System.Diagnostics.DiagnosticSource]
 * System.Diagnostics.Activity::get_Duration()". The assembly bracket of the method is the last
 * "[...] " before the first "::" (a return type's own assembly has no space after its bracket,
 * and "int32[] " arrays sit further left).
 */
size_t perfmap__method_offset(const char *name, size_t len)
{
	const char *colons = memmem(name, len, "::", 2);
	size_t i, depth;

	if (!colons)
		return 0;
	for (i = colons - name; i >= 2; i--) {
		if (name[i - 1] != ' ' || name[i - 2] != ']')
			continue;
		/* name[i - 2] closes the assembly bracket: find where it opens. */
		depth = 0;
		for (size_t j = i - 2; j-- > 0;) {
			if (name[j] == ']')
				depth++;
			else if (name[j] == '[' && depth-- == 0)
				return j;
		}
		return 0;
	}
	return 0;
}

/* The framework's assemblies, by the name in the brackets (the .NET 10.0.12 shared
 * framework: System.Private.CoreLib, System.Net.Sockets, Microsoft.AspNetCore.*, ...). */
static int framework_assembly(const char *a, size_t len)
{
	static const char *const exact[] = { "System", "mscorlib", "netstandard" };
	static const char *const prefix[] = { "System.", "Microsoft." };

	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (len == strlen(exact[i]) && !memcmp(a, exact[i], len))
			return 1;
	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (len > strlen(prefix[i]) && !memcmp(a, prefix[i], strlen(prefix[i])))
			return 1;
	return 0;
}

enum perfmap_frame perfmap__frame_kind(const char *name)
{
	const char *close, *colons;

	if (!name || name[0] != '[')
		return PERFMAP_FRAME_OTHER;
	close = strstr(name, "] ");
	colons = close ? strstr(close, "::") : NULL;
	if (!close || close == name + 1 || !colons)
		return PERFMAP_FRAME_OTHER;	/* "[kernel] 0x...", "[unknown]" */
	return framework_assembly(name + 1, (size_t)(close - name - 1)) ? PERFMAP_FRAME_FRAMEWORK :
									   PERFMAP_FRAME_APP;
}
