/* elfsym_fx.h: what the test_elfsym*.c programs share (elfsym_fx.c): the fixture binaries built
 * from tests/fixtures/elf at group setup, and ground truth from nm, readelf and /proc maps. */
#ifndef SPANPROF_ELFSYM_FX_H
#define SPANPROF_ELFSYM_FX_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct elfsym;

#define LIBC_PATH	"/usr/lib/x86_64-linux-gnu/libc.so.6"
#define CORECLR_PATH	"/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.12/libcoreclr.so"

/* The fixture binaries, built once per program (fx_setup) into fx_tmpdir ("/tmp/test_elfsym.XXXXXX")
 * from the sources in fx_srcdir. */
extern char fx_tmpdir[64];
extern char fx_srcdir[PATH_MAX];
int fx_setup(void **state);
int fx_teardown(void **state);
/* out: fx_tmpdir/name. */
void fx_path(char *out, size_t size, const char *name);
/* Builds fixture source src into fx_tmpdir/out with the group's flags and these; 0 or -1. */
int fx_build(const char *flags, const char *out, const char *src);
/* elfsym__open of fx_tmpdir/name; fails the test when it cannot. */
struct elfsym *open_fx(const char *name);

/* File offset of addr in pid's mappings, as the profiler computes it; the mapping's path must
 * be path. Returns 0 or -1. */
int maps_file_off(pid_t pid, uint64_t addr, const char *path, uint64_t *off);

struct child {
	pid_t pid;
	int in_fd;
	FILE *out;
	char names[8][64];
	uint64_t addrs[8];
	int n;
};

/* Start a fixture executable; it prints "name addr" lines and "READY", then waits on stdin. */
int child_start(struct child *c, const char *exe);
void child_stop(struct child *c);

/* nm's view of a file: (value, name) for text symbols. */
struct nmsym {
	uint64_t value;
	int text;	/* T/t/i: surely code, must resolve; W/w may be data, only a valid alias */
	char name[256];
};

int nm_load(const char *path, int dynamic, struct nmsym **out);
/* Every text symbol nm lists (for each of n files) must resolve, at offset 0, to one of the
 * names any of them gives its address. */
void assert_agrees_with_nm_n(struct elfsym *es, const char **paths, const int *dynamic, int n_paths);
void assert_agrees_with_nm(struct elfsym *es, const char *path, int dynamic);
/* Value and size of a .symtab function of a fixture, as nm -S prints them. */
void nm_size(const char *fixture, const char *name, uint64_t *value, uint64_t *size);
/* The executable PT_LOAD of path as readelf prints it. Returns 0 or -1. */
int exec_segment(const char *path, uint64_t *x_off, uint64_t *x_vaddr, uint64_t *x_filesz);

/* A memfd holding buf; a whole file read into memory. Both fail the test when they cannot. */
int memfd_with(const void *buf, size_t len);
unsigned char *read_all(const char *path, size_t *len);

#endif
