/* diagipc-enable.c: test driver: send EnablePerfMap/DisablePerfMap to a .NET process (host pid) through perfmap/diagipc, then report its JIT files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diagipc.h"
#include "dotnet.h"
#include "procfs.h"

static void usage(void)
{
	fprintf(stderr, "usage: diagipc-enable [-t TYPE(0-3)] [-d] [-T TIMEOUT_MS] [-f] PID\n"
			"  -t  PerfMapType: 1 all (default), 2 jitdump, 3 perf map, 0 disabled\n"
			"  -d  send DisablePerfMap instead\n"
			"  -f  afterwards, open perf-<nspid>.map / jit-<nspid>.dump inside the root\n");
}

static const char *err_name(int err)
{
	return err ? strerror(-err) : "ok";
}

int main(int argc, char **argv)
{
	struct dotnet_jit_files files;
	struct diagipc_target t;
	char name[256];
	uint32_t type = DIAGIPC_PERFMAP_ALL, hresult = 0;
	int opt, disable = 0, show_files = 0, timeout = DIAGIPC_DEFAULT_TIMEOUT_MS;
	int pid, nspid, dir_fd, root_fd, err, ret = 1;

	while ((opt = getopt(argc, argv, "t:dT:fh")) != -1) {
		switch (opt) {
		case 't': type = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'd': disable = 1; break;
		case 'T': timeout = atoi(optarg); break;
		case 'f': show_files = 1; break;
		default: usage(); return 2;
		}
	}
	if (optind != argc - 1) {
		usage();
		return 2;
	}
	pid = atoi(argv[optind]);
	/* Everything about the process is read through this one directory fd. */
	dir_fd = procfs__open(pid);
	if (dir_fd < 0) {
		fprintf(stderr, "diagipc-enable: pid %d: %s\n", pid, err_name(dir_fd));
		return 1;
	}
	err = procfs__nspid(dir_fd, &nspid);
	if (err) {
		fprintf(stderr, "diagipc-enable: pid %d: nspid: %s\n", pid, err_name(err));
		goto close_dir;
	}
	root_fd = procfs__open_root(dir_fd);
	if (root_fd < 0) {
		fprintf(stderr, "diagipc-enable: pid %d: root: %s\n", pid, err_name(root_fd));
		goto close_dir;
	}
	err = diagipc__target_init(&t, dir_fd, root_fd, pid, nspid);
	if (err) {
		fprintf(stderr, "diagipc-enable: pid %d: target: %s\n", pid, err_name(err));
		goto close_root;
	}
	t.timeout_ms = timeout;
	err = diagipc__find_socket(&t, name, sizeof(name));
	printf("pid %d nspid %d key %llu socket %s/%s (%s)\n", pid, nspid,
	       (unsigned long long)t.key, t.dir, err ? "-" : name, err_name(err));
	if (err)
		goto close_root;
	if (disable) {
		err = diagipc__command(&t, DIAGIPC_SET_PROCESS, DIAGIPC_PROCESS_DISABLE_PERFMAP,
				       NULL, 0, &hresult);
	} else {
		uint8_t le[4] = { (uint8_t)type, (uint8_t)(type >> 8), (uint8_t)(type >> 16),
				  (uint8_t)(type >> 24) };

		err = diagipc__command(&t, DIAGIPC_SET_PROCESS, DIAGIPC_PROCESS_ENABLE_PERFMAP,
				       le, sizeof(le), &hresult);
	}
	if (err == 0)
		printf("reply ok hresult 0x%08x\n", hresult);
	else if (err == -EREMOTEIO)
		printf("reply error hresult 0x%08x\n", hresult);
	else
		printf("reply none: %s\n", err_name(err));
	ret = err == 0 ? 0 : err == -EREMOTEIO ? 3 : 1;
	if (show_files) {
		err = dotnet__open_jit_files(dir_fd, root_fd, nspid, &files);
		if (err) {
			printf("jit dir: %s\n", err_name(err));
			ret = ret ? ret : 1;
		} else {
			printf("jit dir %s map %s jitdump %s\n", files.dir, err_name(files.map_err),
			       err_name(files.jitdump_err));
			dotnet__close_jit_files(&files);
		}
	}
close_root:
	close(root_fd);
close_dir:
	close(dir_fd);
	return ret;
}
