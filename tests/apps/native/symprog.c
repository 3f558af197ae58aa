/* symprog.c: prints its pid, then runs symlib_run (symlib.c) for argv[1] seconds. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void symlib_run(double seconds);

int main(int argc, char **argv)
{
	printf("%d\n", getpid());
	fflush(stdout);
	symlib_run(argc > 1 ? atof(argv[1]) : 10);
	return 0;
}
