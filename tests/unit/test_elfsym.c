/* test_elfsym.c: unit tests for user/elfsym.c against fixture binaries built at setup time. */
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

#define LIBC_PATH	"/usr/lib/x86_64-linux-gnu/libc.so.6"
#define CORECLR_PATH	"/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.12/libcoreclr.so"

/* Fixture binaries, built once for the whole group. */
static char tmpdir[64];	/* "/tmp/test_elfsym.XXXXXX" */
static char fxdir[PATH_MAX];

static void path_in(char *out, size_t size, const char *name)
{
	testutil__path(out, size, tmpdir, name);
}

/* Builds the fixture source src into the fixture binary out, with the group's flags and these. */
static int build(const char *flags, const char *out, const char *src)
{
	char all[256], o[PATH_MAX], s[PATH_MAX];

	snprintf(all, sizeof(all), "-O1 -g -fno-inline -fno-omit-frame-pointer %s", flags);
	return testutil__cc(all, testutil__path(o, sizeof(o), tmpdir, out),
			    testutil__path(s, sizeof(s), fxdir, src));
}

static int group_setup(void **state)
{
	const char *t = tmpdir;

	if (testutil__src_path(fxdir, sizeof(fxdir), "tests/fixtures/elf"))
		return -1;
	if (!testutil__mkdtemp(tmpdir, sizeof(tmpdir)))
		return -1;
	if (build("-fPIE -pie", "fx_pie", "fx_main.c") ||
	    build("-fno-pie -no-pie", "fx_nopie", "fx_main.c") ||
	    build("-fPIC -shared", "fx_lib.so", "fx_lib.c") ||
	    /* Preferred load address 0x7000000: p_vaddr != p_offset, as after prelink. */
	    build("-fPIC -shared -Wl,-Ttext-segment=0x7000000", "fx_prelink.so", "fx_lib.c") ||
	    testutil__run("strip --strip-all -o %s/fx_stripped.so %s/fx_lib.so", t, t) ||
	    /* debuglink: no build id, so only the link can find the debug file. */
	    build("-fPIC -shared -Wl,--build-id=none", "fx_dl_full.so", "fx_lib.c") ||
	    testutil__run("cd %s && objcopy --only-keep-debug fx_dl_full.so fx_dl.so.debug && "
			  "strip --strip-all -o fx_dl.so fx_dl_full.so && "
			  "objcopy --add-gnu-debuglink=fx_dl.so.debug fx_dl.so", t) ||
	    /* build id: debug file for a fake /usr/lib/debug/.build-id tree. */
	    build("-fPIC -shared -Wl,--build-id=sha1", "fx_bid_full.so", "fx_lib.c") ||
	    testutil__run("cd %s && objcopy --only-keep-debug fx_bid_full.so fx_bid.debug && "
			  "strip --strip-all -o fx_bid.so fx_bid_full.so", t) ||
	    /* Same code, other build id: its debug file must be refused at fx_bid's path. */
	    build("-fPIC -shared -Wl,--build-id=md5", "fx_other_full.so", "fx_lib.c") ||
	    testutil__run("cd %s && objcopy --only-keep-debug fx_other_full.so fx_other.debug", t))
		return -1;
	(void)state;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (tmpdir[0])
		testutil__rm_rf(tmpdir);
	return 0;
}

static int memfd_with(const void *buf, size_t len);
static unsigned char *read_all(const char *path, size_t *len);

/* ---- ground truth helpers ------------------------------------------------------------------ */

/* File offset of addr in pid's mappings, as the profiler computes it; the mapping's path must
 * be path. Returns 0 or -1. */
static int maps_file_off(pid_t pid, uint64_t addr, const char *path, uint64_t *off)
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

struct child {
	pid_t pid;
	int in_fd;
	FILE *out;
	char names[8][64];
	uint64_t addrs[8];
	int n;
};

/* Start a fixture executable; it prints "name addr" lines and "READY", then waits on stdin. */
static int child_start(struct child *c, const char *exe)
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

static void child_stop(struct child *c)
{
	int status;

	close(c->in_fd);
	if (c->out)
		fclose(c->out);
	waitpid(c->pid, &status, 0);
}

/* nm's view of a file: (value, name) for text symbols. */
struct nmsym {
	uint64_t value;
	int text;	/* T/t/i: surely code, must resolve; W/w may be data, only a valid alias */
	char name[256];
};

static int nm_load(const char *path, int dynamic, struct nmsym **out)
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
static void assert_agrees_with_nm_n(struct elfsym *es, const char **paths, const int *dynamic, int n_paths)
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

static void assert_agrees_with_nm(struct elfsym *es, const char *path, int dynamic)
{
	assert_agrees_with_nm_n(es, &path, &dynamic, 1);
}

static void nm_size(const char *fixture, const char *name, uint64_t *value, uint64_t *size);

static struct elfsym *open_fx(const char *name)
{
	char path[PATH_MAX];
	struct elfsym *es;

	path_in(path, sizeof(path), name);
	es = elfsym__open(AT_FDCWD, path);
	if (!es)
		fail_msg("elfsym__open(%s): %s", path, strerror(errno));
	return es;
}

/* ---- executables --------------------------------------------------------------------------- */

/* Look every function the child printed up by its file offset, at +0 and inside. */
static void check_child(const char *name)
{
	char path[PATH_MAX], exe[PATH_MAX];
	struct child c;
	struct elfsym *es;
	int i;

	path_in(path, sizeof(path), name);
	assert_non_null(realpath(path, exe));
	es = open_fx(name);
	assert_int_equal(child_start(&c, exe), 0);
	assert_int_equal(c.n, 3);
	for (i = 0; i < c.n; i++) {
		uint64_t off, sym_off = 99;
		const char *got;

		assert_int_equal(maps_file_off(c.pid, c.addrs[i], exe, &off), 0);
		got = elfsym__lookup(es, off, &sym_off);
		assert_non_null(got);
		assert_string_equal(got, c.names[i]);
		assert_int_equal(sym_off, 0);
		assert_int_equal(maps_file_off(c.pid, c.addrs[i] + 3, exe, &off), 0);
		got = elfsym__lookup(es, off, &sym_off);
		assert_non_null(got);
		assert_string_equal(got, c.names[i]);
		assert_int_equal(sym_off, 3);
	}
	child_stop(&c);
	elfsym__free(es);
}

static void test_elfsym_pie_lookup(void **state)
{
	(void)state;
	check_child("fx_pie");
}

static void test_elfsym_nonpie_lookup(void **state)
{
	(void)state;
	check_child("fx_nopie");
}

static void test_elfsym_agrees_with_nm(void **state)
{
	const char *names[] = { "fx_pie", "fx_nopie", "fx_lib.so", "fx_prelink.so" };
	char path[PATH_MAX];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct elfsym *es = open_fx(names[i]);

		path_in(path, sizeof(path), names[i]);
		assert_agrees_with_nm(es, path, 0);
		elfsym__free(es);
	}
}

/* libc through its debug file (libc6-dbg): thousands of aliases, versioned names, IFUNCs. */
static void test_elfsym_libc_agrees_with_nm(void **state)
{
	char bid[256], dbg[PATH_MAX], real[PATH_MAX];
	const char *name;
	struct elfsym *es;
	uint64_t off;
	void *h, *fn;

	(void)state;
	testutil__build_id(LIBC_PATH, bid, sizeof(bid));
	snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
	if (!bid[0] || access(dbg, R_OK) != 0) {
		print_message("skipped: no debug file for libc (%s)\n", dbg);
		skip();
	}
	es = elfsym__open(AT_FDCWD, LIBC_PATH);
	assert_non_null(es);
	assert_non_null(elfsym__debug_file(es));
	{
		const char *paths[] = { dbg, LIBC_PATH };
		const int dyn[] = { 0, 1 };

		assert_agrees_with_nm_n(es, paths, dyn, 2);
	}

	/* This process runs libc: its live addresses, by file offset. */
	h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(h);
	assert_non_null(realpath(LIBC_PATH, real));
	fn = dlsym(h, "malloc");
	assert_int_equal(maps_file_off(getpid(), (uintptr_t)fn, real, &off), 0);
	/* Aliases there (__libc_malloc, __malloc, malloc...): the short global one. */
	assert_string_equal(elfsym__lookup(es, off, NULL), "malloc");
	/* memcpy is an IFUNC: dlsym gives the implementation chosen for this CPU, a local. */
	fn = dlsym(h, "memcpy");
	assert_int_equal(maps_file_off(getpid(), (uintptr_t)fn, real, &off), 0);
	name = elfsym__lookup(es, off, NULL);
	assert_non_null(name);
	print_message("memcpy resolves to %s\n", name);
	assert_true(strncmp(name, "__mem", 5) == 0);
	dlclose(h);
	elfsym__free(es);
}

static void test_elfsym_build_id(void **state)
{
	const char *names[] = { "fx_pie", "fx_nopie", "fx_lib.so", "fx_bid.so", "fx_other_full.so" };
	char path[PATH_MAX], want[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct elfsym *es = open_fx(names[i]);

		path_in(path, sizeof(path), names[i]);
		testutil__build_id(path, want, sizeof(want));
		assert_true(want[0] != '\0');
		assert_non_null(elfsym__build_id(es));
		assert_string_equal(elfsym__build_id(es), want);
		elfsym__free(es);
	}
	/* --build-id=none: no note at all. */
	{
		struct elfsym *es = open_fx("fx_dl_full.so");

		assert_null(elfsym__build_id(es));
		elfsym__free(es);
	}
}

/* ---- shared objects ------------------------------------------------------------------------ */

/* dlopen the fixture and check symbols by the file offsets of their live addresses. */
static void check_shared(const char *name, const char *open_as, int expect_locals)
{
	char path[PATH_MAX], real[PATH_MAX];
	struct {
		const char *sym;
		const char *want;
	} cases[] = {
		{ "fx_lib_add", "fx_lib_add" },
		{ "fx_lib_weak_add", "fx_lib_add" },	/* alias: the global name wins */
		{ "fx_lib_mul", "fx_lib_mul" },
		{ "_ZN7fixture3Lib3addEii", "fixture::Lib::add(int, int)" },
		{ "fx_asm_entry", "fx_asm_entry" },
		{ "fx_lib_after_asm", "fx_lib_after_asm" },
	};
	void *(*hidden_addr)(void), *(*local_add_addr)(void);
	struct elfsym *es;
	uint64_t off, sym_off;
	const char *got;
	void *h;
	size_t i;

	path_in(path, sizeof(path), open_as);
	assert_non_null(realpath(path, real));
	es = open_fx(name);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fail_msg("dlopen: %s", dlerror());
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t *a = dlsym(h, cases[i].sym);

		assert_non_null(a);
		assert_int_equal(maps_file_off(getpid(), (uintptr_t)a, real, &off), 0);
		sym_off = 99;
		got = elfsym__lookup(es, off, &sym_off);
		if (!got || strcmp(got, cases[i].want) != 0)
			fail_msg("%s: %s -> %s", name, cases[i].sym, got ? got : "(null)");
		assert_int_equal(sym_off, 0);
		assert_int_equal(maps_file_off(getpid(), (uintptr_t)a + 1, real, &off), 0);
		got = elfsym__lookup(es, off, &sym_off);
		assert_non_null(got);
		assert_string_equal(got, cases[i].want);
		assert_int_equal(sym_off, 1);
	}

	/* The unsized assembly routine runs up to the next symbol (8 nops + ret). */
	{
		uint8_t *a = dlsym(h, "fx_asm_entry");

		assert_int_equal(maps_file_off(getpid(), (uintptr_t)a + 8, real, &off), 0);
		got = elfsym__lookup(es, off, &sym_off);
		assert_non_null(got);
		assert_string_equal(got, "fx_asm_entry");
		assert_int_equal(sym_off, 8);
	}

	/* fx_tail_entry is 4 bytes, alone in section fx_tail: its end is the section's end. */
	{
		uint8_t *a = dlsym(h, "fx_tail_entry");

		assert_non_null(a);
		assert_int_equal(maps_file_off(getpid(), (uintptr_t)a + 3, real, &off), 0);
		got = elfsym__lookup(es, off, &sym_off);
		assert_non_null(got);
		assert_string_equal(got, "fx_tail_entry");
		assert_int_equal(sym_off, 3);
		assert_int_equal(maps_file_off(getpid(), (uintptr_t)a + 4, real, &off), 0);
		got = elfsym__lookup(es, off, &sym_off);
		if (got && strcmp(got, "fx_tail_entry") == 0)
			fail_msg("%s: fx_tail_entry runs past its section", name);
	}

	/* fx_inner (2 bytes at fx_outer+4) nests in fx_outer (10 bytes). */
	{
		uint8_t *a = dlsym(h, "fx_outer");
		struct {
			int delta;
			const char *want;
			int want_off;
		} nest[] = {
			{ 0, "fx_outer", 0 }, { 3, "fx_outer", 3 },
			{ 4, expect_locals ? "fx_inner" : "fx_outer", expect_locals ? 0 : 4 },
			{ 5, expect_locals ? "fx_inner" : "fx_outer", expect_locals ? 1 : 5 },
			{ 6, "fx_outer", 6 }, { 9, "fx_outer", 9 },
		};

		assert_non_null(a);
		for (i = 0; i < sizeof(nest) / sizeof(nest[0]); i++) {
			assert_int_equal(maps_file_off(getpid(), (uintptr_t)a + nest[i].delta, real, &off), 0);
			got = elfsym__lookup(es, off, &sym_off);
			if (!got || strcmp(got, nest[i].want) != 0 || (int)sym_off != nest[i].want_off)
				fail_msg("%s: fx_outer+%d -> %s+%d, want %s+%d", name, nest[i].delta,
					 got ? got : "(null)", got ? (int)sym_off : 0, nest[i].want,
					 nest[i].want_off);
		}
	}

	hidden_addr = (void *(*)(void))dlsym(h, "fx_lib_hidden_addr");
	local_add_addr = (void *(*)(void))dlsym(h, "fx_lib_local_add_addr");
	assert_non_null(hidden_addr);
	assert_non_null(local_add_addr);
	assert_int_equal(maps_file_off(getpid(), (uintptr_t)hidden_addr(), real, &off), 0);
	got = elfsym__lookup(es, off, &sym_off);
	if (expect_locals) {
		assert_non_null(got);
		assert_string_equal(got, "fx_lib_hidden");
		assert_int_equal(sym_off, 0);
	} else {
		/* Stripped: no symbol covers a local function (the neighbours have sizes). */
		assert_null(got);
	}
	/* A local alias of a global: still the global name. */
	assert_int_equal(maps_file_off(getpid(), (uintptr_t)local_add_addr(), real, &off), 0);
	got = elfsym__lookup(es, off, &sym_off);
	assert_non_null(got);
	assert_string_equal(got, "fx_lib_add");

	dlclose(h);
	elfsym__free(es);
}

static void test_elfsym_shared_object(void **state)
{
	(void)state;
	check_shared("fx_lib.so", "fx_lib.so", 1);
}

static void test_elfsym_prelinked(void **state)
{
	struct elfsym *es;
	uint64_t vaddr;

	(void)state;
	check_shared("fx_prelink.so", "fx_prelink.so", 1);
	es = open_fx("fx_prelink.so");
	/* readelf: LOAD 0x001000 -> 0x7001000 (R E). */
	assert_int_equal(elfsym__file_to_vaddr(es, 0x1010, &vaddr), 0);
	assert_int_equal(vaddr, 0x7001010);
	elfsym__free(es);
}

/* A read-only segment whose file range also covers the code, at another address: offsets in
 * the code must still go through the executable segment. */
static void test_elfsym_overlapping_segments(void **state)
{
	char path[PATH_MAX];
	unsigned char *buf;
	struct elfsym *es, *ref;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	size_t len;
	uint64_t off;
	int i, edited = 0, named = 0;

	(void)state;
	path_in(path, sizeof(path), "fx_lib.so");
	buf = read_all(path, &len);
	eh = (Elf64_Ehdr *)buf;
	assert_int_equal(eh->e_ident[EI_CLASS], ELFCLASS64);
	ph = (Elf64_Phdr *)(buf + eh->e_phoff);
	for (i = 0; i < eh->e_phnum && !edited; i++) {
		if (ph[i].p_type == PT_LOAD && !(ph[i].p_flags & PF_X) && ph[i].p_offset == 0) {
			ph[i].p_filesz = ph[i].p_memsz = len;
			ph[i].p_vaddr = ph[i].p_paddr = 0x100000;
			edited = 1;
		}
	}
	assert_true(edited);
	es = elfsym__open_fd(memfd_with(buf, len), NULL, AT_FDCWD);
	assert_non_null(es);
	ref = open_fx("fx_lib.so");
	for (off = 0x1000; off < 0x1200; off++) {
		const char *want = elfsym__lookup(ref, off, NULL), *got = elfsym__lookup(es, off, NULL);

		if (!want && !got)
			continue;
		if (!want || !got || strcmp(want, got) != 0)
			fail_msg("offset %#" PRIx64 ": %s vs %s", off, want ? want : "-", got ? got : "-");
		named++;
	}
	assert_true(named > 100);
	elfsym__free(ref);
	elfsym__free(es);
	free(buf);
}

static void test_elfsym_stripped_dynsym_only(void **state)
{
	struct elfsym *full, *stripped;
	struct elfsym_stats st;

	(void)state;
	/* Symbols from the stripped file, addresses from the unstripped one (same code). */
	check_shared("fx_stripped.so", "fx_lib.so", 0);
	stripped = open_fx("fx_stripped.so");
	full = open_fx("fx_lib.so");
	elfsym__stats(stripped, &st);
	assert_int_equal(st.symtab, 0);
	assert_true(st.dynsym > 0);
	assert_null(elfsym__debug_file(stripped));
	assert_true(elfsym__count(stripped) < elfsym__count(full));
	elfsym__free(stripped);
	elfsym__free(full);
}

/* ---- debug files --------------------------------------------------------------------------- */

/* fx_dl.so (no .symtab) must get fx_lib_hidden from its debuglink file. */
static void check_debuglink_in(const char *subdir, const char *debug_src, int expect_found)
{
	char dir[PATH_MAX], so[PATH_MAX + 16], full[PATH_MAX];
	struct elfsym *es, *ref;
	struct elfsym_stats st;
	const char *got;
	uint64_t off;
	void *h, *(*hidden_addr)(void);
	uint64_t vaddr_hidden;

	snprintf(dir, sizeof(dir), "%s/dl_%s", tmpdir, subdir[0] ? subdir + 1 : "same");
	assert_int_equal(testutil__run("rm -rf %s && mkdir -p %s%s && cp %s/fx_dl.so %s/ && cp %s/%s %s%s/fx_dl.so.debug",
			     dir, dir, subdir, tmpdir, dir, tmpdir, debug_src, dir, subdir), 0);
	snprintf(so, sizeof(so), "%s/fx_dl.so", dir);

	/* Ground truth for the local's address: the unstripped build's own .symtab, via dlopen. */
	path_in(full, sizeof(full), "fx_dl_full.so");
	h = dlopen(full, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	hidden_addr = (void *(*)(void))dlsym(h, "fx_lib_hidden_addr");
	assert_non_null(hidden_addr);
	assert_int_equal(maps_file_off(getpid(), (uintptr_t)hidden_addr(), full, &off), 0);
	ref = open_fx("fx_dl_full.so");
	assert_int_equal(elfsym__file_to_vaddr(ref, off, &vaddr_hidden), 0);
	elfsym__free(ref);
	dlclose(h);

	es = elfsym__open(AT_FDCWD, so);
	assert_non_null(es);
	elfsym__stats(es, &st);
	got = elfsym__lookup(es, off, NULL);
	if (expect_found) {
		char want[PATH_MAX + 64];

		snprintf(want, sizeof(want), "%s%s/fx_dl.so.debug", dir, subdir);
		assert_non_null(elfsym__debug_file(es));
		assert_string_equal(elfsym__debug_file(es), want);
		assert_true(st.symtab > 0);
		assert_non_null(got);
		assert_string_equal(got, "fx_lib_hidden");
		assert_string_equal(elfsym__lookup_vaddr(es, vaddr_hidden, NULL), "fx_lib_hidden");
	} else {
		assert_null(elfsym__debug_file(es));
		assert_true(st.debug_rejected > 0);
		assert_int_equal(st.symtab, 0);
		assert_null(got);
	}
	/* Exported names come from .dynsym either way. */
	assert_true(st.dynsym > 0);
	elfsym__free(es);
}

static void test_elfsym_debuglink_same_dir(void **state)
{
	(void)state;
	check_debuglink_in("", "fx_dl.so.debug", 1);
}

static void test_elfsym_debuglink_debug_subdir(void **state)
{
	(void)state;
	check_debuglink_in("/.debug", "fx_dl.so.debug", 1);
}

static void test_elfsym_debuglink_crc_mismatch(void **state)
{
	char bad[PATH_MAX];

	(void)state;
	/* Same name, one byte appended: the CRC no longer matches the link. */
	path_in(bad, sizeof(bad), "fx_dl_bad.debug");
	assert_int_equal(testutil__run("cp %s/fx_dl.so.debug %s && printf x >> %s", tmpdir, bad, bad), 0);
	check_debuglink_in("", "fx_dl_bad.debug", 0);
}

/* A fake root holding fx_bid.so and a debug file under usr/lib/debug/.build-id. */
static int make_bid_root(char *root, size_t size, const char *debug_src)
{
	struct elfsym *es;
	char bid[256];

	es = open_fx("fx_bid.so");
	if (!es || !elfsym__build_id(es))
		return -1;
	snprintf(bid, sizeof(bid), "%s", elfsym__build_id(es));
	elfsym__free(es);
	snprintf(root, size, "%s/root_%s", tmpdir, debug_src);
	return testutil__run("rm -rf %s && mkdir -p %s/usr/lib %s/usr/lib/debug/.build-id/%.2s && "
		   "cp %s/fx_bid.so %s/usr/lib/ && cp %s/%s %s/usr/lib/debug/.build-id/%.2s/%s.debug",
		   root, root, root, bid, tmpdir, root, tmpdir, debug_src, root, bid, bid + 2);
}

static void test_elfsym_build_id_debug_dir(void **state)
{
	char root[PATH_MAX], want[256];
	struct elfsym *es, *full;
	struct elfsym_stats st;
	uint64_t vaddr = 0;
	const char *got;
	int rfd;

	(void)state;
	assert_int_equal(make_bid_root(root, sizeof(root), "fx_bid.debug"), 0);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0);
	es = elfsym__open(rfd, "/usr/lib/fx_bid.so");
	assert_non_null(es);
	snprintf(want, sizeof(want), "/usr/lib/debug/.build-id/%.2s/%s.debug", elfsym__build_id(es),
		 elfsym__build_id(es) + 2);
	assert_non_null(elfsym__debug_file(es));
	assert_string_equal(elfsym__debug_file(es), want);
	elfsym__stats(es, &st);
	assert_true(st.symtab > 0);

	/* The local's address from the unstripped build's own .symtab. */
	full = open_fx("fx_bid_full.so");
	assert_int_equal(elfsym__count(full), elfsym__count(es));
	for (vaddr = 0x1000; vaddr < 0x2000; vaddr++) {
		got = elfsym__lookup_vaddr(full, vaddr, NULL);
		if (got && strcmp(got, "fx_lib_hidden") == 0)
			break;
	}
	assert_true(vaddr < 0x2000);
	got = elfsym__lookup_vaddr(es, vaddr, NULL);
	assert_non_null(got);
	assert_string_equal(got, "fx_lib_hidden");
	elfsym__free(full);
	elfsym__free(es);
	close(rfd);
}

static void test_elfsym_build_id_mismatch(void **state)
{
	char root[PATH_MAX];
	struct elfsym_stats st;
	struct elfsym *es;
	int rfd;

	(void)state;
	/* Another build's debug file at this build id's path: refused. */
	assert_int_equal(make_bid_root(root, sizeof(root), "fx_other.debug"), 0);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0);
	es = elfsym__open(rfd, "/usr/lib/fx_bid.so");
	assert_non_null(es);
	assert_null(elfsym__debug_file(es));
	elfsym__stats(es, &st);
	assert_true(st.debug_rejected > 0);
	assert_int_equal(st.symtab, 0);
	elfsym__free(es);
	close(rfd);
}

/* libc copied into a fake root: its debug file is found on the host instead. */
static void test_elfsym_debug_host_fallback(void **state)
{
	char root[PATH_MAX], bid[256], host_dbg[PATH_MAX];
	struct elfsym *es;
	int rfd;

	(void)state;
	testutil__build_id(LIBC_PATH, bid, sizeof(bid));
	snprintf(host_dbg, sizeof(host_dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
	if (!bid[0] || access(host_dbg, R_OK) != 0) {
		print_message("skipped: no host debug file for libc (%s)\n", host_dbg);
		skip();
	}
	snprintf(root, sizeof(root), "%s/root_libc", tmpdir);
	assert_int_equal(testutil__run("mkdir -p %s/lib && cp %s %s/lib/libc.so.6", root, LIBC_PATH, root), 0);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0);
	es = elfsym__open(rfd, "/lib/libc.so.6");
	assert_non_null(es);
	assert_non_null(elfsym__debug_file(es));
	assert_string_equal(elfsym__debug_file(es), host_dbg);
	elfsym__free(es);
	close(rfd);
}


/* A container's binary (no build id) whose .gnu_debuglink names a file that exists only on the
 * host, at the path the binary has inside its root: never used, the refusal counted and named. */
static void test_elfsym_debuglink_outside_root_refused(void **state)
{
	char root[PATH_MAX], dir[PATH_MAX], so[PATH_MAX + 16], host_dbg[PATH_MAX + 32];
	struct elfsym_stats st;
	struct elfsym *es;
	uint64_t v, size;
	int rfd;

	(void)state;
	snprintf(root, sizeof(root), "%s/root_dl", tmpdir);
	snprintf(dir, sizeof(dir), "%s/dl_hostonly", tmpdir);	/* the same path inside and out */
	assert_int_equal(testutil__run("rm -rf %s %s && mkdir -p %s%s %s && cp %s/fx_dl.so %s%s/ && "
				       "cp %s/fx_dl.so.debug %s/fx_dl.so %s/", root, dir, root, dir, dir, tmpdir,
				       root, dir, tmpdir, tmpdir, dir), 0);
	snprintf(so, sizeof(so), "%s/fx_dl.so", dir);
	snprintf(host_dbg, sizeof(host_dbg), "%s/fx_dl.so.debug", dir);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0);
	es = elfsym__open(rfd, so);
	if (!es)
		fail_msg("elfsym__open(%s in %s): %s", so, root, strerror(errno));
	elfsym__stats(es, &st);
	if (elfsym__debug_file(es))
		fail_msg("used the host's %s for a binary inside a root", elfsym__debug_file(es));
	assert_int_equal(st.symtab, 0);
	assert_true(st.debug_outside_refused >= 1);
	assert_non_null(elfsym__debug_refused(es));
	assert_string_equal(elfsym__debug_refused(es), host_dbg);
	nm_size("fx_dl_full.so", "fx_lib_hidden", &v, &size);
	assert_null(elfsym__lookup_vaddr(es, v, NULL));
	elfsym__free(es);

	/* The same file opened as a host file (the root is /) still finds it. */
	es = elfsym__open(AT_FDCWD, so);
	assert_non_null(es);
	assert_non_null(elfsym__debug_file(es));
	assert_string_equal(elfsym__lookup_vaddr(es, v, NULL), "fx_lib_hidden");
	elfsym__free(es);
	close(rfd);
}

/* A debug file from elsewhere (a cache, a symbol server) is attached by build id only. */
static void test_elfsym_attach_debug(void **state)
{
	char path[PATH_MAX];
	struct elfsym *es, *dbg;
	uint64_t v, size;

	(void)state;
	nm_size("fx_bid_full.so", "fx_lib_hidden", &v, &size);
	es = open_fx("fx_bid.so");
	assert_true(elfsym__needs_debug(es));
	assert_null(elfsym__lookup_vaddr(es, v, NULL));

	path_in(path, sizeof(path), "fx_other.debug");
	dbg = elfsym__open_debug(open(path, O_RDONLY | O_CLOEXEC), elfsym__build_id(es), path);
	assert_null(dbg);
	assert_int_equal(errno, EBADMSG);
	path_in(path, sizeof(path), "fx_bid.so");	/* right build id, no .symtab */
	dbg = elfsym__open_debug(open(path, O_RDONLY | O_CLOEXEC), elfsym__build_id(es), path);
	assert_null(dbg);
	assert_int_equal(errno, ENOEXEC);
	/* Another binary's debug file, opened for its own build id: attach refuses it. */
	path_in(path, sizeof(path), "fx_other.debug");
	{
		char other[256];

		testutil__build_id(path, other, sizeof(other));
		dbg = elfsym__open_debug(open(path, O_RDONLY | O_CLOEXEC), other, path);
		assert_non_null(dbg);
		assert_int_equal(elfsym__attach_debug(es, dbg), -EINVAL);
	}
	path_in(path, sizeof(path), "fx_bid.debug");
	dbg = elfsym__open_debug(open(path, O_RDONLY | O_CLOEXEC), elfsym__build_id(es), path);
	assert_non_null(dbg);
	assert_int_equal(elfsym__attach_debug(es, dbg), 0);
	assert_false(elfsym__needs_debug(es));
	assert_string_equal(elfsym__lookup_vaddr(es, v, NULL), "fx_lib_hidden");
	assert_string_equal(elfsym__debug_file(es), path);
	/* Exported names still resolve. */
	nm_size("fx_bid_full.so", "fx_lib_add", &v, &size);
	assert_string_equal(elfsym__lookup_vaddr(es, v + 1, NULL), "fx_lib_add");
	elfsym__free(es);
}

/* ---- real libraries ------------------------------------------------------------------------ */

/* The executable PT_LOAD of path as readelf prints it. Returns 0 or -1. */
static int exec_segment(const char *path, uint64_t *x_off, uint64_t *x_vaddr, uint64_t *x_filesz)
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

/* libcoreclr (lld layout: text p_vaddr = p_offset + 0x1000): exported functions by file offset,
 * with offsets computed from readelf's program headers. */
static void test_elfsym_coreclr_layout(void **state)
{
	uint64_t x_off = 0, x_vaddr = 0, x_filesz = 0;
	struct nmsym *v = NULL;
	struct elfsym *es;
	int n, i, checked = 0;

	(void)state;
	if (access(CORECLR_PATH, R_OK) != 0) {
		print_message("skipped: %s not installed\n", CORECLR_PATH);
		skip();
	}
	assert_int_equal(exec_segment(CORECLR_PATH, &x_off, &x_vaddr, &x_filesz), 0);
	assert_true(x_vaddr != x_off);	/* the layout this test is about */

	es = elfsym__open(AT_FDCWD, CORECLR_PATH);
	assert_non_null(es);
	n = nm_load(CORECLR_PATH, 1, &v);
	assert_true(n > 0);
	for (i = 0; i < n; i++) {
		uint64_t sym_off = 99;
		const char *got;

		if (v[i].value < x_vaddr || v[i].value - x_vaddr >= x_filesz)
			continue;
		got = elfsym__lookup(es, v[i].value - x_vaddr + x_off, &sym_off);
		assert_non_null(got);
		assert_string_equal(got, v[i].name);
		assert_int_equal(sym_off, 0);
		checked++;
	}
	assert_true(checked > 0);
	free(v);
	elfsym__free(es);
}

/* Load and lookup cost on real libraries; prints the numbers, fails only when absurd. */
static void test_elfsym_timing(void **state)
{
	const char *paths[] = { LIBC_PATH, CORECLR_PATH };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct elfsym *es;
		double t0, best = 1e9, look_ns;
		volatile uint64_t hits = 0;
		uint64_t vaddr, lo, hi, x_off, x_filesz;
		int r;

		if (access(paths[i], R_OK) != 0)
			continue;
		for (r = 0; r < 10; r++) {
			t0 = testutil__now_ms();
			es = elfsym__open(AT_FDCWD, paths[i]);
			assert_non_null(es);
			if (testutil__now_ms() - t0 < best)
				best = testutil__now_ms() - t0;
			if (r < 9)
				elfsym__free(es);
		}
		/* Lookups spread over the executable segment. */
		assert_int_equal(exec_segment(paths[i], &x_off, &lo, &x_filesz), 0);
		hi = lo + x_filesz;
		t0 = testutil__now_ms();
		for (r = 0; r < 1000000; r++) {
			vaddr = lo + ((uint64_t)r * 2654435761u) % (hi - lo);
			hits += elfsym__lookup_vaddr(es, vaddr, NULL) != NULL;
		}
		look_ns = (testutil__now_ms() - t0) * 1e6 / 1000000;
		print_message("%s: load %.3f ms (best of 10), %" PRIu64 " symbols, debug %s, "
			      "lookup %.1f ns, %" PRIu64 "/1000000 hit\n",
			      paths[i], best, elfsym__count(es),
			      elfsym__debug_file(es) ? elfsym__debug_file(es) : "none", look_ns,
			      (uint64_t)hits);
		assert_true(best < 1000);
		elfsym__free(es);
	}
}


/* ---- function ranges (.eh_frame) ----------------------------------------------------------- */

/* Value and size of a .symtab function of a fixture, as nm -S prints them. */
static void nm_size(const char *fixture, const char *name, uint64_t *value, uint64_t *size)
{
	char path[PATH_MAX], cmd[PATH_MAX + 64], line[512], got[256], type;
	uint64_t v, sz;
	FILE *p;

	path_in(path, sizeof(path), fixture);
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

/* Stripped: a local function no symbol names has one function start for all its addresses,
 * and an unsized exported routine before it does not swallow it. */
static void test_elfsym_fde_grouping(void **state)
{
	const char *locals[] = { "fx_lib_hidden", "fx_asm_hidden" };
	struct elfsym *es, *full;
	struct elfsym_stats st;
	uint64_t v, size, start, open_v, open_size;
	size_t i;

	(void)state;
	es = open_fx("fx_stripped.so");
	full = open_fx("fx_lib.so");
	elfsym__stats(es, &st);
	assert_true(st.fdes > 5);
	assert_int_equal(st.fde_malformed, 0);
	for (i = 0; i < sizeof(locals) / sizeof(locals[0]); i++) {
		nm_size("fx_lib.so", locals[i], &v, &size);
		assert_true(size > 1);
		for (uint64_t d = 0; d < size; d++) {
			if (elfsym__lookup_vaddr(es, v + d, NULL))
				fail_msg("%s+%" PRIu64 " named %s in the stripped file", locals[i], d,
					 elfsym__lookup_vaddr(es, v + d, NULL));
			assert_int_equal(elfsym__function_start(es, v + d, &start), 0);
			assert_int_equal(start, v);
		}
		/* The unstripped file names it; the function before it has another start. */
		assert_string_equal(elfsym__lookup_vaddr(full, v, NULL), locals[i]);
		if (elfsym__function_start(es, v - 1, &start) == 0)
			assert_true(start != v);
	}
	/* fx_asm_open (exported, unsized, no CFI) still names its own bytes. */
	nm_size("fx_lib.so", "fx_asm_hidden", &v, &size);
	assert_int_equal(elfsym__function_start(es, v, &start), 0);
	open_v = 0;
	{
		struct nmsym *dyn = NULL;
		char path[PATH_MAX];
		int n = nm_load((path_in(path, sizeof(path), "fx_stripped.so"), path), 1, &dyn);

		for (int k = 0; k < n; k++)
			if (strcmp(dyn[k].name, "fx_asm_open") == 0)
				open_v = dyn[k].value;
		free(dyn);
	}
	assert_true(open_v && open_v < v);
	open_size = v - open_v;
	assert_string_equal(elfsym__lookup_vaddr(es, open_v + 2, NULL), "fx_asm_open");
	assert_true(open_size >= 3);
	assert_int_equal(elfsym__function_start(es, 0, &start), -ENOENT);
	elfsym__free(full);
	elfsym__free(es);
}

/* libcoreclr ships with 9 exported functions: every other code address has its FDE. */
static void test_elfsym_fde_coreclr(void **state)
{
	uint64_t x_off = 0, x_vaddr = 0, x_filesz = 0, start, prev = 0, distinct = 0, covered = 0;
	struct elfsym_stats st;
	struct elfsym *es;

	(void)state;
	if (access(CORECLR_PATH, R_OK) != 0) {
		print_message("skipped: %s not installed\n", CORECLR_PATH);
		skip();
	}
	es = elfsym__open(AT_FDCWD, CORECLR_PATH);
	assert_non_null(es);
	elfsym__stats(es, &st);
	assert_int_equal(exec_segment(CORECLR_PATH, &x_off, &x_vaddr, &x_filesz), 0);
	for (uint64_t v = x_vaddr; v < x_vaddr + x_filesz; v += 16) {
		if (elfsym__function_start(es, v, &start))
			continue;
		assert_true(start <= v);
		covered++;
		if (start != prev)
			distinct++;
		prev = start;
	}
	print_message("libcoreclr: %" PRIu64 " FDEs, %" PRIu64 " functions met, %.1f%% of code covered\n",
		      st.fdes, distinct, 100.0 * covered * 16 / x_filesz);
	assert_true(st.fdes > 10000);
	assert_int_equal(st.fde_malformed, 0);
	assert_true(covered * 16 > x_filesz / 2);
	elfsym__free(es);
}

/* ---- opening safely ------------------------------------------------------------------------ */

static void test_elfsym_symlink_refused(void **state)
{
	char root[PATH_MAX], real_target[PATH_MAX];
	int rfd, fd, slash;
	struct elfsym *es;

	(void)state;
	snprintf(root, sizeof(root), "%s/root_links", tmpdir);
	snprintf(real_target, sizeof(real_target), "%s/fx_lib.so", tmpdir);
	assert_int_equal(testutil__run("rm -rf %s && mkdir -p %s/lib %s/inside && cp %s %s/inside/ok.so && "
			     "ln -s %s %s/lib/abs.so && ln -s ../../../../../../../..%s %s/lib/rel.so && "
			     "ln -s /inside/ok.so %s/lib/in_root.so && ln -s /proc/self/root%s %s/lib/magic.so",
			     root, root, root, real_target, root, real_target, root, real_target, root,
			     root, real_target, root), 0);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0);

	/* Absolute and climbing symlinks resolve against the root, where the host file is not. */
	es = elfsym__open(rfd, "/lib/abs.so");
	assert_null(es);
	assert_int_equal(errno, ENOENT);
	es = elfsym__open(rfd, "/lib/rel.so");
	assert_null(es);
	assert_int_equal(errno, ENOENT);
	{
		char climb[PATH_MAX + 64];

		snprintf(climb, sizeof(climb), "/../../../../../../../..%s", real_target);
		es = elfsym__open(rfd, climb);
		assert_null(es);
		assert_int_equal(errno, ENOENT);
	}
	es = elfsym__open(rfd, "/lib/magic.so");	/* no /proc inside this root */
	assert_null(es);
	/* A symlink that stays inside the root is followed within it. */
	es = elfsym__open(rfd, "/lib/in_root.so");
	assert_non_null(es);
	elfsym__free(es);

	/* Magic links are refused even where /proc is reachable (a container's own /proc). */
	fd = rootfs__open(AT_FDCWD, "/proc/self/root/etc/hostname",
			  O_RDONLY, S_IFREG, ELFSYM_MAX_FILE, 0);
	assert_int_equal(fd, -ELOOP);
	slash = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(slash >= 0);
	fd = rootfs__open(slash, "/proc/self/root/etc/hostname",
			  O_RDONLY, S_IFREG, ELFSYM_MAX_FILE, 0);
	assert_int_equal(fd, -ELOOP);
	close(slash);

	/* The walk used without openat2 refuses every symlink and "..". */
	fd = rootfs__open(rfd, "/lib/abs.so", O_RDONLY, S_IFREG, ELFSYM_MAX_FILE, ROOTFS_WALK);
	assert_int_equal(fd, -ELOOP);
	fd = rootfs__open(rfd, "/lib/in_root.so", O_RDONLY, S_IFREG, ELFSYM_MAX_FILE, ROOTFS_WALK);
	assert_int_equal(fd, -ELOOP);
	fd = rootfs__open(rfd, "/inside/../lib/abs.so",
			  O_RDONLY, S_IFREG, ELFSYM_MAX_FILE, ROOTFS_WALK);
	assert_int_equal(fd, -EXDEV);
	fd = rootfs__open(rfd, "/inside/ok.so", O_RDONLY, S_IFREG, ELFSYM_MAX_FILE, ROOTFS_WALK);
	assert_true(fd >= 0);
	es = elfsym__open_fd(fd, "/inside/ok.so", rfd);
	assert_non_null(es);
	assert_true(elfsym__count(es) > 0);
	elfsym__free(es);
	close(rfd);
}

static void test_elfsym_non_regular_refused(void **state)
{
	char root[PATH_MAX], fifo[PATH_MAX + 16], big[PATH_MAX + 16];
	struct elfsym *es;
	int rfd, fd;

	(void)state;
	snprintf(root, sizeof(root), "%s/root_special", tmpdir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", root);
	snprintf(big, sizeof(big), "%s/big.so", root);
	assert_int_equal(testutil__run("rm -rf %s && mkdir -p %s/dir", root, root), 0);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0);

	/* A FIFO nobody writes to would block a plain open(): must fail at once. */
	es = elfsym__open(rfd, "/fifo");
	assert_null(es);
	assert_int_equal(errno, EINVAL);
	es = elfsym__open(rfd, "/dir");
	assert_null(es);
	assert_int_equal(errno, EINVAL);
	es = elfsym__open(AT_FDCWD, "/dev/null");
	assert_null(es);
	assert_int_equal(errno, EINVAL);

	/* Sparse 3 GiB file: over the cap, refused before a byte is read. */
	fd = open(big, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 3LL << 30), 0);
	close(fd);
	es = elfsym__open(rfd, "/big.so");
	assert_null(es);
	assert_int_equal(errno, EFBIG);
	fd = rootfs__open(rfd, "/big.so", O_RDONLY, S_IFREG, 4096, 0);
	assert_int_equal(fd, -EFBIG);
	close(rfd);
}

/* ---- hostile input ------------------------------------------------------------------------- */

static int memfd_with(const void *buf, size_t len)
{
	int fd = memfd_create("elfsym-test", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	return fd;
}

static unsigned char *read_all(const char *path, size_t *len)
{
	unsigned char *buf = (unsigned char *)testutil__slurp(path, len);

	assert_non_null(buf);
	return buf;
}

/* Whatever came back must be usable: lookups anywhere, accessors, free. */
static void poke(struct elfsym *es)
{
	uint64_t off, v;
	struct elfsym_stats st;

	for (off = 0; off < 0x3000; off += 0x61) {
		elfsym__lookup(es, off, NULL);
		if (elfsym__file_to_vaddr(es, off, &v) == 0)
			elfsym__lookup_vaddr(es, v, &v);
	}
	elfsym__build_id(es);
	elfsym__stats(es, &st);
	elfsym__free(es);
}

static void test_elfsym_garbage(void **state)
{
	const char text[] = "#!/bin/sh\necho not an elf file\n";
	unsigned char junk[4096];
	struct elfsym *es;
	size_t i;

	(void)state;
	es = elfsym__open_fd(memfd_with("", 0), NULL, AT_FDCWD);
	assert_null(es);
	assert_int_equal(errno, ENOEXEC);
	es = elfsym__open_fd(memfd_with(text, sizeof(text)), NULL, AT_FDCWD);
	assert_null(es);
	assert_int_equal(errno, ENOEXEC);
	srand(7);
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = rand();
	es = elfsym__open_fd(memfd_with(junk, sizeof(junk)), NULL, AT_FDCWD);
	assert_null(es);
	assert_int_equal(errno, ENOEXEC);
	/* ELF magic over junk. */
	memcpy(junk, "\177ELF\2\1\1", 7);
	es = elfsym__open_fd(memfd_with(junk, sizeof(junk)), NULL, AT_FDCWD);
	if (es)
		poke(es);
	else
		assert_int_equal(errno, ENOEXEC);
	es = elfsym__open_fd(-1, NULL, AT_FDCWD);
	assert_null(es);
	assert_int_equal(errno, EBADF);
	elfsym__free(NULL);
	assert_null(elfsym__lookup(NULL, 0, NULL));
}

static void test_elfsym_truncated(void **state)
{
	char path[PATH_MAX];
	unsigned char *buf;
	struct elfsym *full;
	size_t len, cut;
	int loaded = 0, refused = 0;

	(void)state;
	path_in(path, sizeof(path), "fx_lib.so");
	buf = read_all(path, &len);
	full = open_fx("fx_lib.so");
	/* Every length below 4 KiB, then coarser steps to the end. */
	for (cut = 0; cut < len; cut += cut < 4096 ? 1 : 97) {
		struct elfsym *es = elfsym__open_fd(memfd_with(buf, cut), NULL, AT_FDCWD);

		if (!es) {
			assert_int_equal(errno, ENOEXEC);
			refused++;
			continue;
		}
		loaded++;
		assert_true(elfsym__count(es) <= elfsym__count(full));
		poke(es);
	}
	print_message("truncated: %d refused, %d loaded (fewer symbols)\n", refused, loaded);
	assert_true(refused > 0);
	elfsym__free(full);
	free(buf);
}

/* Issue 9, row 3: a string table the file declares but never stored (a sparse file: 200 MiB of
 * table on a few KiB of disk) is refused, not read: the file's other table names it, in bounded
 * time and memory. */
static void test_elfsym_sparse_table_refused(void **state)
{
	const uint64_t at = 256ull << 20, size = 200ull << 20;
	char path[PATH_MAX], sparse_path[PATH_MAX];
	struct elfsym_stats st;
	struct elfsym *es;
	struct rusage r0, r1;
	unsigned char *buf;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;
	uint64_t stroff = 0, strsize = 0;
	size_t len;
	int fd, done = 0;

	(void)state;
	path_in(path, sizeof(path), "fx_lib.so");
	buf = read_all(path, &len);
	eh = (Elf64_Ehdr *)buf;
	sh = (Elf64_Shdr *)(buf + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum && !done; i++) {
		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		stroff = sh[sh[i].sh_link].sh_offset;
		strsize = sh[sh[i].sh_link].sh_size;
		sh[sh[i].sh_link].sh_offset = at;
		sh[sh[i].sh_link].sh_size = size;
		done = 1;
	}
	assert_true(done);
	path_in(sparse_path, sizeof(sparse_path), "fx_sparse.so");
	fd = open(sparse_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, len, 0), (ssize_t)len);
	assert_int_equal(pwrite(fd, buf + stroff, strsize, (off_t)at), (ssize_t)strsize);
	assert_int_equal(ftruncate(fd, (off_t)(at + size)), 0);
	close(fd);
	getrusage(RUSAGE_SELF, &r0);
	es = elfsym__open(AT_FDCWD, sparse_path);
	getrusage(RUSAGE_SELF, &r1);
	assert_non_null(es);
	elfsym__stats(es, &st);
	print_message("sparse: %" PRIu64 " tables refused, %" PRIu64 " .dynsym symbols kept, max RSS +%ld KiB\n",
		      st.sparse, st.dynsym, r1.ru_maxrss - r0.ru_maxrss);
	assert_int_equal(st.sparse, 1);
	assert_true(st.dynsym > 0);	/* the exported functions still have their names */
	assert_true(r1.ru_maxrss - r0.ru_maxrss < 64 * 1024);	/* the 200 MiB were not read */
	elfsym__free(es);
	unlink(sparse_path);
	free(buf);
}

/* Mutation fuzz loop: flip bytes of the fixture (headers favoured) and feed it through a memfd. */
static void test_elfsym_fuzz(void **state)
{
	const char *names[] = { "fx_lib.so", "fx_pie", "fx_dl.so.debug" };
	int iters = getenv("ELFSYM_FUZZ_ITERS") ? atoi(getenv("ELFSYM_FUZZ_ITERS")) : 3000;
	int it, loaded = 0, refused = 0;
	uint32_t seed = 12345;
	size_t f;

	(void)state;
	for (f = 0; f < sizeof(names) / sizeof(names[0]); f++) {
		char path[PATH_MAX];
		unsigned char *orig, *buf;
		size_t len;

		path_in(path, sizeof(path), names[f]);
		orig = read_all(path, &len);
		buf = malloc(len);
		assert_non_null(buf);
		for (it = 0; it < iters; it++) {
			struct elfsym *es;
			int flips, k;
			size_t use = len;

			memcpy(buf, orig, len);
			seed = seed * 1103515245 + 12345;
			flips = 1 + (seed >> 16) % 8;
			for (k = 0; k < flips; k++) {
				size_t pos;

				seed = seed * 1103515245 + 12345;
				/* Half of the flips land in the ELF/program headers or the section
				 * header table at the end, where parsers trust the most. */
				if (k % 2 == 0)
					pos = (seed >> 8) % 256;
				else if (k % 4 == 1)
					pos = len - 1 - (seed >> 8) % (len < 2048 ? len : 2048);
				else
					pos = (seed >> 4) % len;
				seed = seed * 1103515245 + 12345;
				buf[pos] = (k & 1) ? (uint8_t)(seed >> 16) : buf[pos] ^ (1u << ((seed >> 16) % 8));
			}
			if ((seed >> 20) % 8 == 0)
				use = (seed >> 3) % len;
			es = elfsym__open_fd(memfd_with(buf, use), NULL, AT_FDCWD);
			if (!es) {
				assert_true(errno == ENOEXEC || errno == ENOMEM);
				refused++;
				continue;
			}
			loaded++;
			poke(es);
		}
		free(buf);
		free(orig);
	}
	print_message("fuzz: %d loaded, %d refused\n", loaded, refused);
	assert_true(loaded > 0 && refused > 0);
}

/* Offset and size of section name in path, from readelf; 0 or -1. */
static int section_range(const char *path, const char *name, size_t *off, size_t *size)
{
	char cmd[PATH_MAX + 64], line[512], got[64];
	unsigned long o, sz;
	int found = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -SW '%s'", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		char *b = strchr(line, ']');

		if (b && sscanf(b + 1, " %63s %*s %*x %lx %lx", got, &o, &sz) == 3 &&
		    strcmp(got, name) == 0 && found < 0) {
			*off = o;
			*size = sz;
			found = 0;
		}
	}
	pclose(p);
	return found;
}

/* Mutations inside .eh_frame_hdr and .eh_frame only: the FDE reader meets every lie there. */
static void test_elfsym_fuzz_eh_frame(void **state)
{
	int iters = getenv("ELFSYM_FUZZ_ITERS") ? atoi(getenv("ELFSYM_FUZZ_ITERS")) : 3000;
	size_t len, ranges[2][2];
	const char *secs[] = { ".eh_frame_hdr", ".eh_frame" };
	char path[PATH_MAX];
	unsigned char *orig, *buf;
	uint32_t seed = 777;
	int loaded = 0, with_fdes = 0;

	(void)state;
	path_in(path, sizeof(path), "fx_stripped.so");
	for (int i = 0; i < 2; i++)
		assert_int_equal(section_range(path, secs[i], &ranges[i][0], &ranges[i][1]), 0);
	orig = read_all(path, &len);
	buf = malloc(len);
	assert_non_null(buf);
	for (int it = 0; it < iters; it++) {
		struct elfsym_stats st;
		struct elfsym *es;
		int flips;

		memcpy(buf, orig, len);
		seed = seed * 1103515245 + 12345;
		flips = 1 + (seed >> 16) % 6;
		for (int k = 0; k < flips; k++) {
			size_t *r;

			seed = seed * 1103515245 + 12345;
			r = ranges[(seed >> 8) & 1];
			seed = seed * 1103515245 + 12345;
			buf[r[0] + (seed >> 4) % r[1]] = (uint8_t)(seed >> 20);
		}
		es = elfsym__open_fd(memfd_with(buf, len), NULL, AT_FDCWD);
		if (!es)
			continue;
		loaded++;
		elfsym__stats(es, &st);
		with_fdes += st.fdes > 0;
		for (uint64_t v = 0; v < 0x3000; v += 7) {
			uint64_t start;

			if (elfsym__function_start(es, v, &start) == 0)
				assert_true(start <= v);
		}
		poke(es);
	}
	print_message("eh_frame fuzz: %d loaded, %d with function ranges\n", loaded, with_fdes);
	assert_true(loaded > 0);
	free(buf);
	free(orig);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elfsym_pie_lookup),
		cmocka_unit_test(test_elfsym_nonpie_lookup),
		cmocka_unit_test(test_elfsym_agrees_with_nm),
		cmocka_unit_test(test_elfsym_libc_agrees_with_nm),
		cmocka_unit_test(test_elfsym_build_id),
		cmocka_unit_test(test_elfsym_shared_object),
		cmocka_unit_test(test_elfsym_prelinked),
		cmocka_unit_test(test_elfsym_overlapping_segments),
		cmocka_unit_test(test_elfsym_stripped_dynsym_only),
		cmocka_unit_test(test_elfsym_debuglink_same_dir),
		cmocka_unit_test(test_elfsym_debuglink_debug_subdir),
		cmocka_unit_test(test_elfsym_debuglink_crc_mismatch),
		cmocka_unit_test(test_elfsym_build_id_debug_dir),
		cmocka_unit_test(test_elfsym_build_id_mismatch),
		cmocka_unit_test(test_elfsym_debug_host_fallback),
		cmocka_unit_test(test_elfsym_debuglink_outside_root_refused),
		cmocka_unit_test(test_elfsym_attach_debug),
		cmocka_unit_test(test_elfsym_coreclr_layout),
		cmocka_unit_test(test_elfsym_timing),
		cmocka_unit_test(test_elfsym_fde_grouping),
		cmocka_unit_test(test_elfsym_fde_coreclr),
		cmocka_unit_test(test_elfsym_symlink_refused),
		cmocka_unit_test(test_elfsym_non_regular_refused),
		cmocka_unit_test(test_elfsym_garbage),
		cmocka_unit_test(test_elfsym_truncated),
		cmocka_unit_test(test_elfsym_sparse_table_refused),
		cmocka_unit_test(test_elfsym_fuzz),
		cmocka_unit_test(test_elfsym_fuzz_eh_frame),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
