/* utf8.h: UTF-8 validity (RFC 3629) of strings that come from other processes, for writers whose
 * formats require UTF-8 (pprof and Pyroscope label strings). */
#ifndef SPANPROF_UTF8_H
#define SPANPROF_UTF8_H

#include <stddef.h>

/* flags: */
#define UTF8_NO_CONTROL (1u << 0)	/* C0 controls (NUL included) and DEL count as invalid */

/* Length (1-4) of the well-formed character at s, which has left bytes, or 0: a byte that
 * starts no character, a truncated sequence, an overlong form, a surrogate (U+D800-DFFF), a code
 * point past U+10FFFF, or (with UTF8_NO_CONTROL) a control character. left == 0 is 0. */
size_t utf8__char_len(const char *s, size_t left, unsigned int flags);

/* 1 when the len bytes at s are all well-formed characters, else 0. */
int utf8__valid(const char *s, size_t len, unsigned int flags);

/* Replace, in place, every byte of the len bytes at s that is not part of a well-formed character
 * with '?' (one '?' per byte: the length never changes). Returns the number of bytes replaced. */
size_t utf8__repair(char *s, size_t len, unsigned int flags);

#endif /* SPANPROF_UTF8_H */
