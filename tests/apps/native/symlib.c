/* symlib.c: a shared library whose hot code is in local functions (sym_hot_a, sym_hot_b), which
 * only a .symtab names: stripped, they are known by .eh_frame alone, or by a debug file (a symbol
 * server's, in symbols.sh). Built by the test itself: each case strips and links it its own way. */
#include <time.h>

static volatile double sink;

__attribute__((noinline, noipa)) static double sym_hot_a(long n)
{
	double x = 0;

	for (long i = 1; i <= n; i++)
		x += (double)(i % 7) / (double)i;
	return x;
}

__attribute__((noinline, noipa)) static double sym_hot_b(long n)
{
	double x = 1;

	for (long i = 1; i <= n; i++)
		x += (double)(i % 5) / (double)(i + 3);
	return x;
}

/* Exported: spins in the two locals for about seconds. */
void symlib_run(double seconds)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sink += sym_hot_a(1000000) + sym_hot_b(1000000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}
