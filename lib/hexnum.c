/* hexnum.c: hexadecimal number parsing shared by the perf map and /proc/<pid>/maps readers. */
#include "hexnum.h"

int hexnum__parse(const char **pp, const char *end, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;
	int digits = 0;

	if (end - p >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	for (; p < end; p++, digits++) {
		char c = *p;
		unsigned int d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			break;
		if (digits == 16)
			return -1;
		v = v << 4 | d;
	}
	if (!digits)
		return -1;
	*out = v;
	*pp = p;
	return 0;
}
