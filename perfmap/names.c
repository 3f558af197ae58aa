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
