/* util.c: clock and bounded file-read helpers. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

uint64_t boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int open_ro(int dirfd, const char *name)
{
	return openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
}

long read_small_file(int dirfd, const char *name, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;
	int fd;

	if (cap == 0)
		return -EINVAL;
	fd = open_ro(dirfd, name);
	if (fd < 0)
		return -errno;
	while (len < cap - 1 && (n = read(fd, buf + len, cap - 1 - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return n;
		}
		len += n;
	}
	close(fd);
	buf[len] = 0;
	return len;
}

int file_has_hole(int fd, uint64_t off, uint64_t len)
{
	off_t hole;

	if (len < (1u << 20) || fd < 0)
		return 0;
	hole = lseek(fd, (off_t)off, SEEK_HOLE);
	return hole >= 0 && (uint64_t)hole < off + len;
}

long read_file_alloc(int dirfd, const char *name, size_t cap, char **out, int *truncated)
{
	size_t len = 0, size = cap < 16384 ? cap + 1 : 16384;
	char *buf, *nb;
	ssize_t n;
	int fd, err;

	if (truncated)
		*truncated = 0;
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	fd = open_ro(dirfd, name);
	if (fd < 0) {
		err = -errno;
		goto err_free;
	}
	for (;;) {
		if (len + 1 >= size) {
			if (len >= cap) {
				if (!truncated) {
					err = -EFBIG;
					goto err_close;
				}
				*truncated = 1;
				break;
			}
			size = size * 2 > cap + 1 ? cap + 1 : size * 2;
			nb = realloc(buf, size);
			if (!nb) {
				err = -ENOMEM;
				goto err_close;
			}
			buf = nb;
		}
		n = read(fd, buf + len, size - 1 - len);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto err_close;
		}
		len += n;
	}
	close(fd);
	buf[len] = 0;
	*out = buf;
	return len;

err_close:
	close(fd);
err_free:
	free(buf);
	return err;
}

int setup_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log__vmsg(LOG_LEVEL_ERROR, fmt, ap);
	va_end(ap);
	return 2;
}

char *u32_decimal(char *buf, uint32_t v)
{
	char tmp[10];
	size_t n = 0, i = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		buf[i++] = tmp[--n];
	buf[i] = '\0';
	return buf;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

size_t u64_sort_unique(uint64_t *a, size_t n)
{
	size_t k = 0;

	qsort(a, n, sizeof(*a), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (!k || a[i] != a[k - 1])
			a[k++] = a[i];
	return k;
}

/* The first index of sorted a[0..n) whose value is >= x, for each width. */
#define LOWER_BOUND(name, type)							\
	size_t name(const type *a, size_t n, type x)					\
	{										\
		size_t lo = 0, hi = n;							\
											\
		while (lo < hi) {							\
			size_t mid = lo + (hi - lo) / 2;				\
											\
			if (a[mid] < x)							\
				lo = mid + 1;						\
			else								\
				hi = mid;						\
		}									\
		return lo;								\
	}

LOWER_BOUND(u32_lower_bound, uint32_t)
LOWER_BOUND(u64_lower_bound, uint64_t)
