/* fusehang.c: a FUSE file system that never answers, for tests/integration/stalls.sh. It mounts
 * /dev/fuse at DIR and reads nothing: every request (the kernel's INIT first, then any lookup)
 * waits for good, as on a hung FUSE or NFS server. Killing it closes the device, which aborts the
 * connection: whatever waited fails with ENOTCONN. Needs root. Usage: fusehang DIR */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char opts[128];
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: fusehang DIR\n");
		return 2;
	}
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror("fusehang: /dev/fuse");
		return 1;
	}
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fd);
	if (mount("fusehang", argv[1], "fuse.fusehang", MS_NOSUID | MS_NODEV, opts)) {
		perror("fusehang: mount");
		return 1;
	}
	printf("%d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
