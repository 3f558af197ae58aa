/* elfsym_fx.c: the fixture binaries and ground-truth helpers (nm, readelf, /proc maps) the
 * test_elfsym*.c programs share. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <elf.h>
#include <sys/resource.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elfsym.h"
#include "rootfs.h"
#include "testutil.h"
#include "elfsym_fx.h"


/* Fixture binaries, built once for the whole group. */
char fx_tmpdir[64];
char fx_srcdir[PATH_MAX];

void fx_path(char *out, size_t size, const char *name)
{
	testutil__path(out, size, fx_tmpdir, name);
}

/* Builds the fixture source src into the fixture binary out, with the group's flags and these. */
int fx_build(const char *flags, const char *out, const char *src)
{
	char all[256], o[PATH_MAX], s[PATH_MAX];

	snprintf(all, sizeof(all), "-O1 -g -fno-inline -fno-omit-frame-pointer %s", flags);
	return testutil__cc(all, testutil__path(o, sizeof(o), fx_tmpdir, out),
			    testutil__path(s, sizeof(s), fx_srcdir, src));
}

int fx_setup(void **state)
{
	const char *t = fx_tmpdir;

	if (testutil__src_path(fx_srcdir, sizeof(fx_srcdir), "tests/fixtures/elf"))
		return -1;
	if (!testutil__mkdtemp(fx_tmpdir, sizeof(fx_tmpdir)))
		return -1;
	if (fx_build("-fPIE -pie", "fx_pie", "fx_main.c") ||
	    fx_build("-fno-pie -no-pie", "fx_nopie", "fx_main.c") ||
	    fx_build("-fPIC -shared", "fx_lib.so", "fx_lib.c") ||
	    /* Preferred load address 0x7000000: p_vaddr != p_offset, as after prelink. */
	    fx_build("-fPIC -shared -Wl,-Ttext-segment=0x7000000", "fx_prelink.so", "fx_lib.c") ||
	    testutil__run("strip --strip-all -o %s/fx_stripped.so %s/fx_lib.so", t, t) ||
	    /* debuglink: no build id, so only the link can find the debug file. */
	    fx_build("-fPIC -shared -Wl,--build-id=none", "fx_dl_full.so", "fx_lib.c") ||
	    testutil__run("cd %s && objcopy --only-keep-debug fx_dl_full.so fx_dl.so.debug && "
			  "strip --strip-all -o fx_dl.so fx_dl_full.so && "
			  "objcopy --add-gnu-debuglink=fx_dl.so.debug fx_dl.so", t) ||
	    /* build id: debug file for a fake /usr/lib/debug/.build-id tree. */
	    fx_build("-fPIC -shared -Wl,--build-id=sha1", "fx_bid_full.so", "fx_lib.c") ||
	    testutil__run("cd %s && objcopy --only-keep-debug fx_bid_full.so fx_bid.debug && "
			  "strip --strip-all -o fx_bid.so fx_bid_full.so", t) ||
	    /* Same code, other build id: its debug file must be refused at fx_bid's path. */
	    fx_build("-fPIC -shared -Wl,--build-id=md5", "fx_other_full.so", "fx_lib.c") ||
	    testutil__run("cd %s && objcopy --only-keep-debug fx_other_full.so fx_other.debug", t))
		return -1;
	(void)state;
	return 0;
}

int fx_teardown(void **state)
{
	(void)state;
	if (fx_tmpdir[0])
		testutil__rm_rf(fx_tmpdir);
	return 0;
}

/* ---- ground truth helpers ------------------------------------------------------------------ */

/* File offset of addr in pid's mappings, as the profiler computes it; the mapping's path must
 * be path. Returns 0 or -1. */
int maps_file_off(pid_t pid, uint64_t addr, const char *path, uint64_t *off)
{
	char maps[64], line[PATH_MAX + 256], mpath[PATH_MAX];
	uint64_t start, end, pgoff;
	int found = -1;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		mpath[0] = '\0';
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*s %s", &start, &end,
			   &pgoff, mpath) < 3)
			continue;
		if (addr >= start && addr < end) {
			if (strcmp(mpath, path) == 0) {
				*off = addr - start + pgoff;
				found = 0;
			}
			break;
		}
	}
	fclose(f);
	return found;
}

/* Start a fixture executable; it prints "name addr" lines and "READY", then waits on stdin. */
int child_start(struct child *c, const char *exe)
{
	int in[2], out[2];
	char line[256], name[64];
	void *p;

	memset(c, 0, sizeof(*c));
	if (pipe(in) || pipe(out))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(exe, exe, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in_fd = in[1];
	c->out = fdopen(out[0], "r");
	while (c->out && fgets(line, sizeof(line), c->out)) {
		if (strncmp(line, "READY", 5) == 0)
			return 0;
		if (c->n < 8 && sscanf(line, "%63s %p", name, &p) == 2) {
			strcpy(c->names[c->n], name);
			c->addrs[c->n++] = (uint64_t)(uintptr_t)p;
		}
	}
	return -1;
}

void child_stop(struct child *c)
{
	int status;

	close(c->in_fd);
	if (c->out)
		fclose(c->out);
	waitpid(c->pid, &status, 0);
}

/* nm's view of a file: (value, name) for text symbols. */
int nm_load(const char *path, int dynamic, struct nmsym **out)
{
	char cmd[PATH_MAX + 64], line[1024], type;
	struct nmsym *v = NULL;
	int n = 0, cap = 0, pos;
	uint64_t value;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -C --defined-only %s '%s' 2>/dev/null", dynamic ? "-D" : "",
		 path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%" SCNx64 " %c %n", &value, &type, &pos) < 2)
			continue;
		if (!strchr("TtiWw", type) || value == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			v = realloc(v, cap * sizeof(*v));
			assert_non_null(v);
		}
		v[n].value = value;
		v[n].text = type != 'W' && type != 'w';
		snprintf(v[n].name, sizeof(v[n].name), "%s", line + pos);
		if (dynamic)	/* nm -D appends the symbol version: "DllMain@@V1.0" */
			v[n].name[strcspn(v[n].name, "@")] = '\0';
		n++;
	}
	pclose(p);
	*out = v;
	return n;
}

/* Every text symbol nm lists (for each of n files) must resolve, at offset 0, to one of the
 * names any of them gives its address. */
void assert_agrees_with_nm_n(struct elfsym *es, const char **paths, const int *dynamic, int n_paths)
{
	struct nmsym *v = NULL, *part;
	int n = 0, k, m, i, j, ok;

	for (k = 0; k < n_paths; k++) {
		m = nm_load(paths[k], dynamic[k], &part);
		assert_true(m > 0);
		v = realloc(v, (n + m) * sizeof(*v));
		assert_non_null(v);
		memcpy(v + n, part, m * sizeof(*v));
		n += m;
		free(part);
	}
	for (i = 0; i < n; i++) {
		uint64_t off = 99;
		const char *name;

		if (!v[i].text)
			continue;
		name = elfsym__lookup_vaddr(es, v[i].value, &off);
		if (!name)
			fail_msg("nm symbol %s at %#" PRIx64 " not found", v[i].name, v[i].value);
		assert_int_equal(off, 0);
		for (ok = 0, j = 0; j < n && !ok; j++)
			ok = v[j].value == v[i].value && strcmp(v[j].name, name) == 0;
		if (!ok)
			fail_msg("%#" PRIx64 " named %s, nm says %s", v[i].value, name, v[i].name);
	}
	free(v);
}

void assert_agrees_with_nm(struct elfsym *es, const char *path, int dynamic)
{
	assert_agrees_with_nm_n(es, &path, &dynamic, 1);
}

struct elfsym *open_fx(const char *name)
{
	char path[PATH_MAX];
	struct elfsym *es;

	fx_path(path, sizeof(path), name);
	es = elfsym__open(AT_FDCWD, path);
	if (!es)
		fail_msg("elfsym__open(%s): %s", path, strerror(errno));
	return es;
}

/* The executable PT_LOAD of path as readelf prints it. Returns 0 or -1. */
int exec_segment(const char *path, uint64_t *x_off, uint64_t *x_vaddr, uint64_t *x_filesz)
{
	char cmd[PATH_MAX + 32], line[512], flags[8];
	uint64_t off, vaddr, filesz, memsz;
	int found = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, " LOAD 0x%" SCNx64 " 0x%" SCNx64 " %*s 0x%" SCNx64 " 0x%" SCNx64
			   " %7[RWE ]", &off, &vaddr, &filesz, &memsz, flags) == 5 &&
		    strchr(flags, 'E') && found < 0) {
			*x_off = off;
			*x_vaddr = vaddr;
			*x_filesz = filesz;
			found = 0;
		}
	}
	pclose(p);
	return found;
}

/* Value and size of a .symtab function of a fixture, as nm -S prints them. */
void nm_size(const char *fixture, const char *name, uint64_t *value, uint64_t *size)
{
	char path[PATH_MAX], cmd[PATH_MAX + 64], line[512], got[256], type;
	uint64_t v, sz;
	FILE *p;

	fx_path(path, sizeof(path), fixture);
	snprintf(cmd, sizeof(cmd), "nm -S --defined-only '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %c %255s", &v, &sz, &type, got) == 4 &&
		    strcmp(got, name) == 0) {
			pclose(p);
			*value = v;
			*size = sz;
			return;
		}
	pclose(p);
	fail_msg("nm: no sized %s in %s", name, fixture);
}


int memfd_with(const void *buf, size_t len)
{
	int fd = memfd_create("elfsym-test", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	return fd;
}

unsigned char *read_all(const char *path, size_t *len)
{
	unsigned char *buf = (unsigned char *)testutil__slurp(path, len);

	assert_non_null(buf);
	return buf;
}
