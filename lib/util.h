/* util.h: small helpers shared by user/ and perfmap/ (clocks, bounded file reads). */
#ifndef SPANPROF_UTIL_H
#define SPANPROF_UTIL_H

#include <stddef.h>
#include <stdint.h>

uint64_t now_ns(void);		/* CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns() */
uint64_t realtime_ns(void);	/* CLOCK_REALTIME */
uint64_t boottime_ns(void);	/* CLOCK_BOOTTIME: the clock of process start times */

/* Read the file name (relative to dirfd) into buf, at most cap - 1 bytes, NUL-terminated.
 * Returns the length or -errno. Never blocks on a FIFO. */
long read_small_file(int dirfd, const char *name, char *buf, size_t cap);

/* Read a whole file relative to dirfd into a malloc'd NUL-terminated buffer. A file of cap
 * bytes or more is refused (-EFBIG), or, when truncated is not NULL, cut to its first cap bytes
 * with *truncated set. Returns the length or -errno; *out set on success. Never blocks on a
 * FIFO. */
long read_file_alloc(int dirfd, const char *name, size_t cap, char **out, int *truncated);

/* Whether [off, off + len) of the file behind fd has a hole: a sparse file declares what it never
 * stored (a 536 MB table on 16 KiB of disk), and reading it costs as much as a real one. Ranges
 * under 1 MiB are not looked at (0). Moves nothing a pread user depends on. */
int file_has_hole(int fd, uint64_t off, uint64_t len);

/* v in decimal into buf (at least 11 bytes), NUL-terminated; returns buf. For every sample's
 * pid and tid labels, where snprintf cost more than the rest of the label set. */
char *u32_decimal(char *buf, uint32_t v);

/* Sorted sets of 64-bit values (addresses): sort a[0..n) ascending and drop repeats, returning
 * the new count; the first index of a sorted a[0..n) whose value is >= x (n when none). */
size_t u64_sort_unique(uint64_t *a, size_t n);
size_t u64_lower_bound(const uint64_t *a, size_t n, uint64_t x);
/* The same search over 32-bit values (indexes). */
size_t u32_lower_bound(const uint32_t *a, size_t n, uint32_t x);

/* A setup error: one error line in the log (lib/log.h) on stderr; returns the exit code, 2. */
int setup_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* SPANPROF_UTIL_H */
