/* fake_dotnet.c: a process that passes for .NET (it maps a file named libcoreclr.so) and writes a
 * perf map of LINES synthetic methods into DIR/perf-<pid>.map, the last one covering code it
 * copied into anonymous executable memory ("[Fake] Burst::Spin()"), as a JIT would. Every EVERY
 * seconds it runs that code for BURST_MS milliseconds (EVERY 0: never, an idle process), until
 * SECONDS have passed. Prints its pid once the map is written. With REWRITE_MS, it writes the
 * whole perf map anew (truncated first) that often, as a runtime does when perf maps are turned
 * off and on again, here without end.
 * Usage: fake_dotnet FAKE_LIBCORECLR_PATH DIR LINES SECONDS EVERY BURST_MS [REWRITE_MS] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* mov rcx, imm64; 1: dec rcx; jnz 1b; ret */
static const unsigned char spin_code[] = { 0x48, 0xb9, 0, 0, 0, 0, 0, 0, 0, 0,
					   0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3 };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int write_map(const char *path, long lines, const unsigned char *code)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	/* Methods far below the spin code, each 0x40 bytes, names like a framework's. */
	for (long i = 0; i < lines; i++)
		fprintf(f, "%lx 40 [System.Private.Fake] System.Fake.Namespace%ld.Type%ld::Method%ld(int32,string)[OptimizedTier1]\n",
			0x10000000ul + (unsigned long)i * 0x40, i % 97, i % 1009, i);
	fprintf(f, "%lx %zx [Fake] Burst::Spin()[OptimizedTier1]\n", (unsigned long)(uintptr_t)code,
		sizeof(spin_code));
	return fclose(f) ? -1 : 0;
}

int main(int argc, char **argv)
{
	uint64_t iters = 1000000;
	unsigned char *code;
	void (*spin)(void);
	double t0, end;
	char path[4096];
	int fd;

	if (argc != 7 && argc != 8) {
		fprintf(stderr, "usage: fake_dotnet FAKE_LIBCORECLR_PATH DIR LINES SECONDS EVERY BURST_MS [REWRITE_MS]\n");
		return 2;
	}
	long lines = atol(argv[3]);
	double seconds = atof(argv[4]), every = atof(argv[5]), burst = atof(argv[6]) / 1000;
	double rewrite = argc > 7 ? atof(argv[7]) / 1000 : 0, rewritten;

	fd = open(argv[1], O_RDWR | O_CREAT, 0644);
	if (fd < 0 || ftruncate(fd, 4096) || mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED)
		return 1;
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return 1;
	memcpy(code, spin_code, sizeof(spin_code));
	spin = (void (*)(void))code;
	snprintf(path, sizeof(path), "%s/perf-%d.map", argv[2], (int)getpid());
	if (write_map(path, lines, code))
		return 1;
	printf("%d\n", (int)getpid());
	fflush(stdout);

	/* Calibrate: one call of ~1 ms. */
	memcpy(code + 2, &iters, 8);
	t0 = now_s();
	spin();
	if (now_s() > t0)
		iters = (uint64_t)(iters * 0.001 / (now_s() - t0)) + 1;
	memcpy(code + 2, &iters, 8);

	end = now_s() + seconds;
	rewritten = now_s();
	while (now_s() < end) {
		if (rewrite > 0 && now_s() - rewritten >= rewrite) {
			if (write_map(path, lines, code))
				return 1;
			rewritten = now_s();
		}
		if (every <= 0) {
			sleep((unsigned)seconds + 1);	/* off the CPU the whole time */
			continue;
		}
		for (double b = now_s() + burst; now_s() < b;)
			spin();
		usleep((useconds_t)(every * 1e6));
	}
	unlink(path);
	return 0;
}
