/* hexnum.h: hexadecimal numbers in text from /proc and the .NET runtime. */
#ifndef SPANPROF_HEXNUM_H
#define SPANPROF_HEXNUM_H

#include <stdint.h>

/* Parse a hex number (optional 0x, at most 16 digits) at *pp, stopping before end. Returns 0 and
 * advances *pp past it, or -1 (no digits, or more than 16) leaving *pp alone. */
int hexnum__parse(const char **pp, const char *end, uint64_t *out);

#endif /* SPANPROF_HEXNUM_H */
