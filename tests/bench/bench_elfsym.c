/* bench_elfsym.c: ELF symbol table load and lookup cost on real libraries (libc, the .NET runtime's
 * libcoreclr), the figures test_elfsym once printed. Usage: bench_elfsym [LIBRARY...] */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "elfsym.h"

#define REPS	 10		/* the load is the best of REPS */
#define LOOKUPS	 1000000

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The executable PT_LOAD of path as readelf prints it: its vaddr range. Returns 0 or -1. */
static int exec_segment(const char *path, uint64_t *lo, uint64_t *hi)
{
	char cmd[4200], line[512], flags[8];
	uint64_t off, vaddr, filesz, memsz;
	int found = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", path);
	if (!(p = popen(cmd, "r")))
		return -1;
	while (fgets(line, sizeof(line), p))
		if (found < 0 &&
		    sscanf(line, " LOAD 0x%" SCNx64 " 0x%" SCNx64 " %*s 0x%" SCNx64 " 0x%" SCNx64 " %7[RWE ]",
			   &off, &vaddr, &filesz, &memsz, flags) == 5 && strchr(flags, 'E')) {
			*lo = vaddr;
			*hi = vaddr + filesz;
			found = 0;
		}
	pclose(p);
	return found;
}

static int bench(const char *path)
{
	struct elfsym *es = NULL;
	double best = 1e9, t0, look_ns;
	uint64_t lo, hi, hits = 0;

	if (access(path, R_OK))
		return printf("%-70s (not here)\n", path), 0;
	for (int r = 0; r < REPS; r++) {
		elfsym__free(es);
		t0 = now_ms();
		if (!(es = elfsym__open(AT_FDCWD, path)))
			return perror(path), -1;
		if (now_ms() - t0 < best)
			best = now_ms() - t0;
	}
	if (exec_segment(path, &lo, &hi) || hi <= lo)
		return fprintf(stderr, "%s: no executable segment\n", path), elfsym__free(es), -1;
	t0 = now_ms();
	for (uint64_t r = 0; r < LOOKUPS; r++)
		hits += elfsym__lookup_vaddr(es, lo + (r * 2654435761u) % (hi - lo), NULL) != NULL;
	look_ns = (now_ms() - t0) * 1e6 / LOOKUPS;
	printf("%-70s load %8.3f ms (best of %d)  %8" PRIu64 " symbols  lookup %6.1f ns  %" PRIu64
	       "/%d hit  debug %s\n", path, best, REPS, elfsym__count(es), look_ns, hits, LOOKUPS,
	       elfsym__debug_file(es) ? elfsym__debug_file(es) : "none");
	elfsym__free(es);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const def[] = {
		"/usr/lib/x86_64-linux-gnu/libc.so.6",
		"/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.12/libcoreclr.so",
	};
	int rc = 0;

	if (argc > 1)
		for (int i = 1; i < argc; i++)
			rc |= bench(argv[i]);
	else
		for (size_t i = 0; i < sizeof(def) / sizeof(def[0]); i++)
			rc |= bench(def[i]);
	return rc ? 1 : 0;
}
