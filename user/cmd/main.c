/* main.c: the spanprof program: the process's set-up, then the command line (cli.c). */
#include <malloc.h>

#include "cli.h"

int main(int argc, char **argv)
{
	/* Symbol tables and perf map indexes come and go (budget, idle processes, exits): each large
	 * one in its own mapping, so that freeing it returns the memory. (glibc raises the threshold
	 * after the first such free, and later tables would stay in the heap after they are freed.)
	 * Above the 256 KiB read buffers, which come and go with every read of a file. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	return cli__run(argc, argv);
}
