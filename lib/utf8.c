/* utf8.c: RFC 3629 UTF-8 checks and in-place repair. */
#include "utf8.h"

size_t utf8__char_len(const char *str, size_t left, unsigned int flags)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned int c;
	size_t n;

	if (left == 0)
		return 0;
	c = s[0];
	if (c < 0x80)
		return (flags & UTF8_NO_CONTROL) && (c < 0x20 || c == 0x7f) ? 0 : 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;	/* a continuation byte, an overlong 2-byte lead (c0, c1), or past f4 */
	if (left < n)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* Second-byte ranges that rule out overlongs, surrogates and code points past U+10FFFF. */
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) ||
	    (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

int utf8__valid(const char *s, size_t len, unsigned int flags)
{
	size_t i = 0, n;

	while (i < len) {
		n = utf8__char_len(s + i, len - i, flags);
		if (!n)
			return 0;
		i += n;
	}
	return 1;
}

size_t utf8__repair(char *s, size_t len, unsigned int flags)
{
	size_t i = 0, n, bad = 0;

	while (i < len) {
		n = utf8__char_len(s + i, len - i, flags);
		if (!n) {
			s[i] = '?';
			n = 1;
			bad++;
		}
		i += n;
	}
	return bad;
}
