/* test_symbolize.c: unit tests for user/symbols/symbolize.c on a fake /proc/<pid> whose root holds
 * an ELF fixture built at setup time, a fake runtime that claims JIT code, and fixture kallsyms. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "profiler.h"
#include "proctab.h"
#include "runtime.h"
#include "symbolize.h"
#include "symbudget.h"
#include "testutil.h"

/* Where the process maps things (its own addresses, nothing to do with this test process). */
#define LIB_START  UINT64_C(0x7f0000000000)	/* /app/libfx.so, whole file at offset 0 */
#define LIB_END    UINT64_C(0x7f0000010000)
#define JIT_START  UINT64_C(0x7f2000000000)	/* anonymous: the fake runtime's JIT code */
#define JIT_END    UINT64_C(0x7f2000100000)
#define DLL_START  UINT64_C(0x7f3000000000)	/* /app/app.dll: not ELF, first half claimed (ReadyToRun) */
#define DLL_END    UINT64_C(0x7f3000010000)
#define HEAP_START UINT64_C(0x7f4000000000)
#define HEAP_END   UINT64_C(0x7f4000001000)
#define LATE_START UINT64_C(0x7f5000000000)	/* libfx.so mapped again, only in the later maps */
#define LATE_END   UINT64_C(0x7f5000010000)
#define RESV_START UINT64_C(0x7f6000000000)	/* reserved by the runtime (---p), later libfx.so */
#define RESV_END   UINT64_C(0x7f6000010000)
#define VDSO_START UINT64_C(0x7ffd00000000)
#define VDSO_END   UINT64_C(0x7ffd00002000)

static char tmp[64];		/* /tmp/test_symbolize.XXXXXX */
static char proc_root[128];	/* tmp/proc */
static char kallsyms[128];
static char lib_path[192];	/* tmp/rootfs/app/libfx.so, /app/libfx.so inside the root */
static char dll_path[192];
static char build_id[128];
static unsigned long lib_ino, dll_ino;

static const char KALLSYMS[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000100 T do_one_initcall\n"
	"ffffffff81001000 T vfs_read\n"
	"ffffffff81001800 T _etext\n"
	"ffffffffc0001000 t ext4_get_block\t[ext4]\n"
	"ffffffffc0001400 T ext4_readdir\t[ext4]";

/* ---- helpers -------------------------------------------------------------------------------- */

/* File offset of ELF virtual address vaddr in path, through its PT_LOAD segments. */
static uint64_t vaddr_to_off(const char *path, uint64_t vaddr)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	assert_int_equal(fread(&eh, sizeof(eh), 1, f), 1);
	for (int i = 0; i < eh.e_phnum; i++) {
		assert_int_equal(fseek(f, eh.e_phoff + (long)i * eh.e_phentsize, SEEK_SET), 0);
		assert_int_equal(fread(&ph, sizeof(ph), 1, f), 1);
		if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			fclose(f);
			return vaddr - ph.p_vaddr + ph.p_offset;
		}
	}
	fclose(f);
	fail_msg("%#" PRIx64 " is in no PT_LOAD of %s", vaddr, path);
	return 0;
}

/* A function symbol of the fixture as nm sees it: value and size. */
static void nm_sym(const char *name, uint64_t *value, uint64_t *size)
{
	char cmd[512], line[512], type, got[256];
	uint64_t v, s;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -S --defined-only '%s'", lib_path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %c %255s", &v, &s, &type, got) == 4 &&
		    !strcmp(got, name)) {
			pclose(p);
			*value = v;
			*size = s;
			return;
		}
	pclose(p);
	fail_msg("nm: no %s in %s", name, lib_path);
}

/* Address in the process of fixture symbol name + delta. */
static uint64_t lib_addr(uint64_t start, const char *name, uint64_t delta)
{
	uint64_t v, s;

	nm_sym(name, &v, &s);
	return start + vaddr_to_off(lib_path, v + delta);
}

/* What write_maps adds to the first maps: */
enum {
	MAPS_LATE = 1,		/* the second libfx.so mapping */
	MAPS_RESERVED = 2,	/* the runtime's reserve: anonymous, no access */
	MAPS_RESV_LIB = 4,	/* libfx.so mapped over that reserve */
};

/* The maps of fake process pid, with what `late` (MAPS_*) adds. */
static void write_maps(int pid, int late)
{
	char name[16], text[2048];

	snprintf(text, sizeof(text),
		 "%" PRIx64 "-%" PRIx64 " r-xp 00000000 fd:01 %lu /app/libfx.so\n"
		 "%" PRIx64 "-%" PRIx64 " rwxp 00000000 00:00 0 \n"
		 "%" PRIx64 "-%" PRIx64 " r-xp 00000000 fd:01 %lu /app/app.dll\n"
		 "%" PRIx64 "-%" PRIx64 " rw-p 00000000 00:00 0 [heap]\n"
		 "%" PRIx64 "-%" PRIx64 " r-xp 00000000 00:00 0 [vdso]\n",
		 LIB_START, LIB_END, lib_ino, JIT_START, JIT_END, DLL_START, DLL_END, dll_ino,
		 HEAP_START, HEAP_END, VDSO_START, VDSO_END);
	if (late & MAPS_LATE) {
		char extra[160];

		snprintf(extra, sizeof(extra),
			 "%" PRIx64 "-%" PRIx64 " r-xp 00000000 fd:01 %lu /app/libfx.so\n",
			 LATE_START, LATE_END, lib_ino);
		strncat(text, extra, sizeof(text) - strlen(text) - 1);
	}
	if (late & (MAPS_RESERVED | MAPS_RESV_LIB)) {
		char extra[160];

		if (late & MAPS_RESV_LIB)
			snprintf(extra, sizeof(extra),
				 "%" PRIx64 "-%" PRIx64 " r-xp 00000000 fd:01 %lu /app/libfx.so\n",
				 RESV_START, RESV_END, lib_ino);
		else
			snprintf(extra, sizeof(extra), "%" PRIx64 "-%" PRIx64 " ---p 00000000 00:00 0 \n",
				 RESV_START, RESV_END);
		strncat(text, extra, sizeof(text) - strlen(text) - 1);
	}
	snprintf(name, sizeof(name), "%d", pid);
	testutil__proc_file(proc_root, name, "maps", text);
}

/* /proc/<pid> with maps and a root symlink to tmp/rootfs (no map_files: the fallback is used). */
static void fake_proc(int pid, int late)
{
	char name[16], dir[192], link[224], target[128];

	snprintf(name, sizeof(name), "%d", pid);
	testutil__proc_dir(dir, sizeof(dir), proc_root, name);
	snprintf(link, sizeof(link), "%s/root", dir);
	snprintf(target, sizeof(target), "%s/rootfs", tmp);
	assert_int_equal(symlink(target, link), 0);
	write_maps(pid, late);
}

/* ---- the fake runtime: claims the JIT range and the first half of app.dll ------------------- */

struct jit_sym {
	uint64_t lo, hi;
	const char *name, *system_name, *tier;
	int published;		/* 0: not in the "perf map" yet */
};

static struct jit_sym jit_syms[] = {
	{ JIT_START + 0x1000, JIT_START + 0x1100, "[App] App.Worker::Run()",
	  "[App] App.Worker::Run(int32)", "OptimizedTier1", 1 },
	{ JIT_START + 0x2000, JIT_START + 0x2100, "[App] App.Worker::Late()", NULL, NULL, 0 },
	{ DLL_START + 0x100, DLL_START + 0x200, "[App] App.Program::Main()", NULL, "PreJIT", 1 },
};
static int rt_symbolize_calls, rt_claims_calls;
/* What prefetch() was told: each address, and the size of each group. */
static uint64_t rt_told[64];
static size_t rt_ntold, rt_groups, rt_largest_group, rt_untold_symbolized;

static int rt_detect(const struct proc *p)
{
	return 1;
}

static void *rt_attach(struct proc *p, const struct runtime_env *env)
{
	return calloc(1, 1);
}

static int rt_poll(struct proc *p, void *state, const struct runtime_env *env)
{
	return RT_READY;
}

/* Like .NET's, it claims anonymous memory it reserved for code, whatever the maps say of it. */
static int rt_claims(const struct proc *p, void *state, uint64_t addr, int in_file)
{
	rt_claims_calls++;
	return in_file ? addr >= DLL_START && addr < DLL_START + 0x8000
		       : (addr >= JIT_START && addr < JIT_END) ||
				 (addr >= RESV_START && addr < RESV_END);
}

static int rt_symbolize(struct proc *p, void *state, uint64_t addr, uint64_t time_ns,
			struct rt_symbol *out)
{
	rt_symbolize_calls++;
	for (size_t i = 0;; i++)
		if (i == rt_ntold) {
			rt_untold_symbolized++;
			break;
		} else if (rt_told[i] == addr) {
			break;
		}
	for (size_t i = 0; i < sizeof(jit_syms) / sizeof(jit_syms[0]); i++)
		if (jit_syms[i].published && addr >= jit_syms[i].lo && addr < jit_syms[i].hi) {
			out->name = jit_syms[i].name;
			out->system_name = jit_syms[i].system_name;
			out->tier = jit_syms[i].tier;
			return 0;
		}
	/* Why it is unnamed: the end of the .dll is an image it could not read, the end of the JIT
	 * region was logged by a jitdump that stopped. */
	out->unnamed = addr >= DLL_START + 0x6000 && addr < DLL_START + 0x8000 ? RT_UNNAMED_IMAGE :
		       addr >= JIT_START + 0x8000 && addr < JIT_END ? RT_UNNAMED_JITDUMP_STOPPED :
		       RT_UNNAMED_NOT_OURS;
	return -ENOENT;
}

static void rt_prefetch(struct proc *p, void *state, const uint64_t *addrs, size_t n)
{
	rt_groups++;
	if (n > rt_largest_group)
		rt_largest_group = n;
	for (size_t i = 0; i < n && rt_ntold < sizeof(rt_told) / sizeof(rt_told[0]); i++)
		rt_told[rt_ntold++] = addrs[i];
}

static void rt_detach(struct proc *p, void *state, const struct runtime_env *env)
{
	free(state);
}

static const struct runtime_ops fake_rt = {
	.name = "fakejit", .detect = rt_detect, .attach = rt_attach, .poll = rt_poll,
	.claims = rt_claims, .symbolize = rt_symbolize, .prefetch = rt_prefetch, .detach = rt_detach,
};
static const struct runtime_ops *const fake_table[RT__MAX] = { &fake_rt };
static const struct runtime_env env = { .runtimes = fake_table, .ctx_map_fd = -1 };

/* ---- fixtures ------------------------------------------------------------------------------- */

static int group_setup(void **state)
{
	char src[PATH_MAX], dir[160];
	struct stat st;
	FILE *f;

	if (testutil__src_path(src, sizeof(src), "tests/fixtures/elf/fx_lib.c"))
		return -1;
	if (!testutil__mkdtemp(tmp, sizeof(tmp)))
		return -1;
	snprintf(proc_root, sizeof(proc_root), "%s/proc", tmp);
	snprintf(kallsyms, sizeof(kallsyms), "%s/kallsyms", tmp);
	snprintf(dir, sizeof(dir), "%s/rootfs/app", tmp);
	snprintf(lib_path, sizeof(lib_path), "%s/libfx.so", dir);
	snprintf(dll_path, sizeof(dll_path), "%s/app.dll", dir);
	testutil__mkdirs(tmp, "proc");
	testutil__mkdirs(tmp, "rootfs/app");
	if (testutil__cc("-O1 -g -fno-inline -fPIC -shared -Wl,--build-id=sha1", lib_path, src))
		return -1;
	testutil__write_file(NULL, kallsyms, KALLSYMS);
	/* A PE file, as ReadyToRun code is: not ELF. */
	f = fopen(dll_path, "w");
	if (!f)
		return -1;
	fputs("MZ", f);
	for (int i = 0; i < 40000; i++)
		fputc(i & 0xff, f);
	fclose(f);
	if (stat(lib_path, &st))
		return -1;
	lib_ino = st.st_ino;
	if (stat(dll_path, &st))
		return -1;
	dll_ino = st.st_ino;
	testutil__build_id(lib_path, build_id, sizeof(build_id));
	return build_id[0] ? 0 : -1;
}

static int group_teardown(void **state)
{
	if (tmp[0])
		testutil__rm_rf(tmp);
	return 0;
}

/* Per test: a process table on the fake /proc, a symbolizer, fresh process dirs. */
struct fx {
	struct proctab *pt;
	struct symbolizer *sym;
};

static struct fx fx;

static void fx_open(const char *ksyms_path, int show_tiers, uint64_t refresh_ns)
{
	struct symbolizer_opts o = { .kallsyms = ksyms_path, .show_tiers = show_tiers,
				     .maps_refresh_ns = refresh_ns };

	fx.sym = symbolizer__new(&o);
	assert_non_null(fx.sym);
	fx.pt = proctab__new(proc_root, &env);
	assert_non_null(fx.pt);
}

static int setup(void **state)
{
	memset(&fx, 0, sizeof(fx));
	for (size_t i = 0; i < sizeof(jit_syms) / sizeof(jit_syms[0]); i++)
		jit_syms[i].published = i != 1;
	rt_symbolize_calls = rt_claims_calls = 0;
	rt_ntold = rt_groups = rt_largest_group = rt_untold_symbolized = 0;
	fake_proc(1001, 0);
	fake_proc(1002, 0);
	return 0;
}

static int teardown(void **state)
{
	if (fx.pt) {
		for (uint32_t i = 0; i < proctab__count(fx.pt); i++) {
			struct proc *p = proctab__at(fx.pt, i);

			if (!p)
				continue;
			if (fx.sym)
				symbolizer__forget(fx.sym, p);
			runtime__detach_all(p);
		}
		proctab__free(fx.pt);
	}
	symbolizer__free(fx.sym);
	return testutil__empty_dir(proc_root);
}

static struct proc *get(int pid)
{
	struct proc *p = proctab__get(fx.pt, pid, 0, "app");

	assert_non_null(p);
	assert_false(p->gone);
	assert_non_null(runtime__state(p, 0));
	return p;
}

static struct agg_frame frame_of(const struct proc *p, int64_t id)
{
	struct agg_frame f;

	assert_true(id >= 0);
	assert_int_equal(symbolizer__frame(fx.sym, p, (uint32_t)id, &f), 0);
	return f;
}

static const char *name_of(const struct proc *p, int64_t id)
{
	return frame_of(p, id).name;
}

/* ---- native ---------------------------------------------------------------------------------- */

/* A native address is named from the ELF file, opened through the process's root. */
static void test_symbolize_native_named_from_elf(void **state)
{
	struct proc *p;
	int64_t id;

	assert_int_not_equal(access("/app/libfx.so", F_OK), 0);	/* only inside the root */
	fx_open(kallsyms, 0, 0);
	p = get(1001);
	id = symbolizer__user(fx.sym, p, lib_addr(LIB_START, "fx_lib_mul", 4), 1, 1);
	assert_string_equal(name_of(p, id), "fx_lib_mul");
	id = symbolizer__user(fx.sym, p, lib_addr(LIB_START, "fx_lib_add", 0), 1, 1);
	assert_string_equal(name_of(p, id), "fx_lib_add");
	/* Mangled C++ names come out demangled. */
	id = symbolizer__user(fx.sym, p, lib_addr(LIB_START, "_ZN7fixture3Lib3addEii", 2), 1, 1);
	assert_string_equal(name_of(p, id), "fixture::Lib::add(int, int)");
}

/* A library rewritten in place (cp over it: same inode) is new content: a process that maps it
 * afterwards gets the new file's names, not the cached old ones. */
static void test_symbolize_file_replaced_same_inode(void **state)
{
	char saved[256], other_src[256], other[256];
	uint64_t addr = lib_addr(LIB_START, "fx_lib_mul", 4);
	struct stat before, after;
	struct proc *p1, *p2;
	const char *got;
	int64_t id;

	snprintf(saved, sizeof(saved), "%s/libfx.saved", tmp);
	snprintf(other_src, sizeof(other_src), "%s/other.c", tmp);
	snprintf(other, sizeof(other), "%s/libother.so", tmp);
	testutil__write_file(NULL, other_src,
			     "static volatile int s;\n"
			     "#define F(n) __attribute__((noinline, used)) int other_##n(int x) "
			     "{ s += x * n; return s ^ (x << n); }\n"
			     "F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11) F(12)\n"
			     "F(13) F(14) F(15) F(16) F(17) F(18) F(19) F(20) F(21) F(22)\n");
	assert_int_equal(testutil__cc("-O0 -fPIC -shared -Wl,--build-id=sha1", other, other_src), 0);
	assert_int_equal(testutil__run("cp %s %s", lib_path, saved), 0);

	fx_open(kallsyms, 0, 0);
	p1 = get(1001);
	id = symbolizer__user(fx.sym, p1, addr, 1, 1);
	assert_string_equal(name_of(p1, id), "fx_lib_mul");

	assert_int_equal(stat(lib_path, &before), 0);
	assert_int_equal(testutil__run("cp %s %s", other, lib_path), 0);	/* truncates, rewrites */
	assert_int_equal(stat(lib_path, &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);

	p2 = get(1002);
	id = symbolizer__user(fx.sym, p2, addr, 1, 1);
	got = name_of(p2, id);
	assert_int_equal(testutil__run("cp %s %s", saved, lib_path), 0);
	if (strcmp(got, "fx_lib_mul") == 0)
		fail_msg("the replaced library's old symbols were used");
	assert_true(strncmp(got, "other_", 6) == 0 || strstr(got, "libfx.so") != NULL);
	/* The process that saw the old file keeps its frame. */
	assert_string_equal(name_of(p1, symbolizer__user(fx.sym, p1, addr, 1, 1)), "fx_lib_mul");
}

/* A process whose files cannot be opened any more (it exited before its samples were read) gets
 * the symbols already read for the same device and inode. */
static void test_symbolize_exited_process_shares_inode(void **state)
{
	char dir[192], link[224];
	uint64_t addr = lib_addr(LIB_START, "fx_lib_mul", 4);
	struct proc *p1, *p3;

	fx_open(kallsyms, 0, 0);
	p1 = get(1001);
	assert_string_equal(name_of(p1, symbolizer__user(fx.sym, p1, addr, 1, 1)), "fx_lib_mul");
	testutil__proc_dir(dir, sizeof(dir), proc_root, "1003");
	snprintf(link, sizeof(link), "%s/root", dir);
	assert_int_equal(symlink("/nonexistent-root", link), 0);
	write_maps(1003, 0);
	p3 = get(1003);
	assert_string_equal(name_of(p3, symbolizer__user(fx.sym, p3, addr, 1, 1)), "fx_lib_mul");
}

/* An address of the file that no symbol covers is module+offset (file offset). */
static void test_symbolize_no_symbol_is_module_offset(void **state)
{
	struct symbolizer_stats st;
	struct proc *p;
	int64_t id;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	id = symbolizer__user(fx.sym, p, LIB_START + 0x10, 1, 1);	/* the ELF header */
	assert_string_equal(name_of(p, id), "libfx.so+0x10");
	/* Non-ELF file (not claimed there): the same fallback. */
	id = symbolizer__user(fx.sym, p, DLL_START + 0x9000, 1, 1);
	assert_string_equal(name_of(p, id), "app.dll+0x9000");
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.native_unnamed, 2);
	assert_int_equal(st.native_named, 0);
}

/* ELF tables come out of the symbol budget: one that does not fit is not kept (module+offset,
 * counted) and is tried again 10 s later; one unused for a while is dropped and read again for
 * the next new frame; what a table holds is given back with it. */
static void test_symbolize_elf_tables_within_budget(void **state)
{
	const uint64_t s = 1000000000ull;
	uint64_t mul = lib_addr(LIB_START, "fx_lib_mul", 4), add = lib_addr(LIB_START, "fx_lib_add", 0);
	struct symbudget_stats sb;
	struct symbolizer_stats st;
	char want[64];
	struct proc *p;
	int64_t id;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	symbudget__set(1);	/* no table fits */
	id = symbolizer__user(fx.sym, p, mul, 1, 1 * s);
	snprintf(want, sizeof(want), "libfx.so+0x%" PRIx64, mul - LIB_START);
	assert_string_equal(name_of(p, id), want);
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.elf_over_budget, 1);
	assert_int_equal(st.elf_not_held, 1);
	symbudget__stats(&sb);
	assert_int_equal(sb.used_by[SB_ELF], 0);
	assert_int_equal(sb.refused_by[SB_ELF], 1);

	symbudget__set(0);	/* room again: not read before 10 s have passed ... */
	id = symbolizer__user(fx.sym, p, add, 1, 5 * s);
	assert_string_not_equal(name_of(p, id), "fx_lib_add");
	id = symbolizer__user(fx.sym, p, add + 1, 1, 12 * s);	/* ... then read for a new frame */
	assert_string_equal(name_of(p, id), "fx_lib_add");
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.elf_reloaded, 1);
	symbudget__stats(&sb);
	assert_true(sb.used_by[SB_ELF] > 0);

	/* Unused for 20 s with a 10 s idle bound: dropped, its bytes given back. */
	symbolizer__release_idle(fx.sym, 32 * s, 10 * s);
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.elf_idle_released, 1);
	symbudget__stats(&sb);
	assert_int_equal(sb.used_by[SB_ELF], 0);
	/* Frames named keep their names; a new one reads the table again at once. */
	assert_string_equal(name_of(p, id), "fx_lib_add");
	id = symbolizer__user(fx.sym, p, mul + 1, 1, 33 * s);
	assert_string_equal(name_of(p, id), "fx_lib_mul");
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.elf_reloaded, 2);
	symbolizer__forget(fx.sym, p);	/* as a process leaving does: its frames freed */
	symbolizer__free(fx.sym);	/* gives back what it holds */
	fx.sym = NULL;
	symbudget__stats(&sb);
	assert_int_equal(sb.used_by[SB_ELF], 0);
}

/* A return address (not the leaf) is looked up at addr - 1: the call is in the caller. */
static void test_symbolize_return_address_looked_up_before(void **state)
{
	uint64_t v, s, end;
	struct agg_frame f;
	struct proc *p;
	int64_t ret, leaf;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	nm_sym("fx_lib_mul", &v, &s);
	assert_true(s > 1);
	end = LIB_START + vaddr_to_off(lib_path, v + s - 1) + 1;	/* just past fx_lib_mul */

	ret = symbolizer__user(fx.sym, p, end, 0, 1);
	f = frame_of(p, ret);
	assert_string_equal(f.name, "fx_lib_mul");
	assert_int_equal(f.address, end - 1);
	leaf = symbolizer__user(fx.sym, p, end, 1, 1);
	assert_int_not_equal(leaf, ret);
	assert_string_not_equal(name_of(p, leaf), "fx_lib_mul");
	/* The leaf at end - 1 is the very frame of the return address end. */
	assert_int_equal(symbolizer__user(fx.sym, p, end - 1, 1, 1), ret);
}

/* One (process, address), one frame id; other processes have frames of their own. */
static void test_symbolize_same_address_same_id(void **state)
{
	struct symbolizer_stats st;
	struct proc *p, *q;
	uint64_t a = lib_addr(LIB_START, "fx_lib_add", 1), b = lib_addr(LIB_START, "fx_lib_mul", 1);
	int64_t ia, ib, iq;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	q = get(1002);
	ia = symbolizer__user(fx.sym, p, a, 1, 1);
	ib = symbolizer__user(fx.sym, p, b, 1, 2);
	assert_int_not_equal(ia, ib);
	assert_int_equal(symbolizer__user(fx.sym, p, a, 1, 3), ia);
	assert_int_equal(symbolizer__user(fx.sym, p, b + 1, 0, 3), ib);	/* return address b + 1 */
	iq = symbolizer__user(fx.sym, q, b, 1, 4);
	assert_string_equal(name_of(q, iq), "fx_lib_mul");
	assert_string_equal(name_of(p, ib), "fx_lib_mul");
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.frames, 3);
	assert_int_equal(st.native_named, 3);
}

/* A mapping that appears later (dlopen) is found: a miss re-reads the maps. */
static void test_symbolize_new_mapping_found_after_maps_change(void **state)
{
	uint64_t a = lib_addr(LATE_START, "fx_lib_add", 3);
	struct proc *p;
	int64_t id;

	fx_open(kallsyms, 0, 0);
	p = get(1002);
	assert_null(proc__vma(p, a));
	write_maps(1002, MAPS_LATE);
	p->maps_read_ns -= 1000000000ull;	/* a while later (re-reads wait 50 times their cost) */
	id = symbolizer__user(fx.sym, p, a, 1, 1);
	assert_string_equal(name_of(p, id), "fx_lib_add");
	assert_non_null(proc__vma(p, a));
}

/* ... but not more often than maps_refresh_ns allows. */
static void test_symbolize_maps_not_reread_too_soon(void **state)
{
	uint64_t a = lib_addr(LATE_START, "fx_lib_add", 3);
	struct proc *p;
	int64_t id;

	fx_open(kallsyms, 0, UINT64_MAX);
	p = get(1002);
	write_maps(1002, MAPS_LATE);
	id = symbolizer__user(fx.sym, p, a, 1, 1);
	assert_string_equal(name_of(p, id), "[unknown]");
	assert_false(frame_of(p, id).has_mapping);
	assert_null(proc__vma(p, a));
}

/* A frame sampled after the maps were read, in a mapping they do not hold yet, while they may not
 * be read again so soon: [unknown] for now, named at the end of the window from the maps as
 * they are then, and counted as such. */
static void test_symbolize_unmapped_frame_named_at_finish(void **state)
{
	uint64_t a = lib_addr(LATE_START, "fx_lib_add", 3);
	struct symbolizer_stats st;
	struct proc *p;
	int64_t id;

	fx_open(kallsyms, 0, UINT64_MAX);
	p = get(1002);
	write_maps(1002, MAPS_LATE);
	id = symbolizer__user(fx.sym, p, a, 1, p->maps_read_ns + 1);
	assert_string_equal(name_of(p, id), "[unknown]");
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.unknown, 1);
	p->maps_read_ns -= 1000000000ull;	/* the end of the window, a while later */
	assert_int_equal(symbolizer__finish_proc(fx.sym, p), 0);
	assert_string_equal(name_of(p, id), "fx_lib_add");
	assert_true(frame_of(p, id).has_mapping);
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.unknown, 0);
	assert_int_equal(st.unmapped_named, 1);
	assert_int_equal(st.native_named, 1);
	/* The same address again: the named frame, from the cache. */
	assert_int_equal(symbolizer__user(fx.sym, p, a, 1, p->maps_read_ns + 2), id);
}

/* The runtime maps an image over memory it had reserved (no access): maps read before the sample
 * show that memory as data, and the runtime claims it as its own code. Return addresses and
 * leaves sampled there while the maps may not be read again so soon are named at the end of the
 * window from the maps read then: the image's code, not [unknown] runtime code. */
static void test_symbolize_image_mapped_over_reserve_named_at_finish(void **state)
{
	uint64_t ret = lib_addr(RESV_START, "fx_lib_add", 3), leaf = lib_addr(RESV_START, "fx_lib_mul", 1);
	struct symbolizer_stats st;
	struct agg_frame f;
	struct proc *p;
	int64_t ir, il;

	write_maps(1002, MAPS_RESERVED);
	fx_open(kallsyms, 0, UINT64_MAX);
	p = get(1002);
	assert_non_null(proc__vma(p, ret));
	write_maps(1002, MAPS_RESV_LIB);
	ir = symbolizer__user(fx.sym, p, ret + 1, 0, p->maps_read_ns + 1);
	il = symbolizer__user(fx.sym, p, leaf, 1, p->maps_read_ns + 1);
	assert_false(symbolizer__ends_chain(p, ir));
	p->maps_read_ns -= 1000000000ull;	/* the end of the window, a while later */
	assert_int_equal(symbolizer__finish_proc(fx.sym, p), 0);
	f = frame_of(p, ir);
	assert_string_equal(f.name, "fx_lib_add");
	assert_true(f.has_mapping);
	assert_string_equal(f.mapping.filename, "/app/libfx.so");
	assert_false(f.mapping.is_jit);
	f = frame_of(p, il);
	assert_string_equal(f.name, "fx_lib_mul");
	assert_string_equal(f.mapping.filename, "/app/libfx.so");
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.unknown, 0);
	assert_int_equal(st.unmapped_named, 2);
	assert_int_equal(st.native_named, 2);
}

/* The mapping of a native frame, as the profile shows it. */
static void test_symbolize_frame_gives_mapping(void **state)
{
	struct agg_frame f;
	struct proc *p;
	int64_t id;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	id = symbolizer__user(fx.sym, p, lib_addr(LIB_START, "fx_lib_add", 0), 1, 1);
	f = frame_of(p, id);
	assert_true(f.has_mapping);
	assert_int_equal(f.mapping.start, LIB_START);
	assert_int_equal(f.mapping.limit, LIB_END);
	assert_int_equal(f.mapping.offset, 0);
	assert_string_equal(f.mapping.filename, "/app/libfx.so");
	assert_non_null(f.mapping.build_id);
	assert_string_equal(f.mapping.build_id, build_id);
	assert_true(f.mapping.has_functions);
	assert_false(f.mapping.is_jit);
	assert_null(f.system_name);

	/* Anonymous memory no runtime claims: named "[unknown]", in its mapping. */
	id = symbolizer__user(fx.sym, p, HEAP_START + 8, 1, 1);
	f = frame_of(p, id);
	assert_string_equal(f.name, "[unknown]");
	assert_true(f.has_mapping);
	assert_int_equal(f.mapping.start, HEAP_START);
	assert_string_equal(f.mapping.filename, "[heap]");
	/* The vDSO by its name. */
	id = symbolizer__user(fx.sym, p, VDSO_START + 0x100, 1, 1);
	assert_string_equal(name_of(p, id), "[vdso]");
	/* No mapping at all. */
	id = symbolizer__user(fx.sym, p, 0x1000, 1, 1);
	f = frame_of(p, id);
	assert_string_equal(f.name, "[unknown]");
	assert_false(f.has_mapping);
	/* Ids that do not exist. */
	assert_int_equal(symbolizer__frame(fx.sym, p, 9999, &f), -ENOENT);
	assert_int_equal(symbolizer__frame(fx.sym, NULL, 0, &f), -ENOENT);
	assert_int_equal(symbolizer__frame(fx.sym, p, SYM_KERNEL_FRAME | 9999, &f), -ENOENT);
}

/* A return address in anonymous memory that is not executable ends the stack: the frame-pointer
 * walk followed a data rbp there (a frameless glibc caller). Not so for a leaf, for code, or for
 * an address in no mapping at all (maybe mapped since the maps were read). */
static void test_symbolize_return_address_in_data_ends_chain(void **state)
{
	struct symbolizer_stats st;
	struct proc *p;
	int64_t id;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	id = symbolizer__user(fx.sym, p, HEAP_START + 0x41, 0, 1);
	assert_true(symbolizer__ends_chain(p, id));
	assert_string_equal(name_of(p, id), "[callers lost: frame chain left code]");
	id = symbolizer__user(fx.sym, p, HEAP_START + 0x80, 1, 1);	/* a leaf there: as it was */
	assert_false(symbolizer__ends_chain(p, id));
	assert_string_equal(name_of(p, id), "[unknown]");
	id = symbolizer__user(fx.sym, p, lib_addr(LIB_START, "fx_lib_add", 1), 0, 1);
	assert_false(symbolizer__ends_chain(p, id));
	id = symbolizer__user(fx.sym, p, JIT_START + 0x1011, 0, 1);	/* anonymous, executable */
	assert_false(symbolizer__ends_chain(p, id));
	id = symbolizer__user(fx.sym, p, 0x2001, 0, 1);
	assert_false(symbolizer__ends_chain(p, id));
	assert_false(symbolizer__ends_chain(p, -1));
	assert_false(symbolizer__ends_chain(p, 9999));
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.off_code, 1);
}

/* ... judged only by maps read after the sample: older ones may show as data what was mapped
 * as code since (and they are not read again more often than maps_refresh_ns allows). */
static void test_symbolize_data_in_older_maps_does_not_end_chain(void **state)
{
	struct proc *p;
	int64_t id;

	fx_open(kallsyms, 0, UINT64_MAX);
	p = get(1001);
	id = symbolizer__user(fx.sym, p, HEAP_START + 0x41, 0, p->maps_read_ns + 1);
	assert_false(symbolizer__ends_chain(p, id));
	assert_string_equal(name_of(p, id), "[unknown]");
}

/* ---- kernel ---------------------------------------------------------------------------------- */

static void test_symbolize_kernel_frames(void **state)
{
	struct symbolizer_stats st;
	struct agg_frame f;
	int64_t a, b, c;

	fx_open(kallsyms, 0, 0);
	a = symbolizer__kernel(fx.sym, 0xffffffff81001234, 1);
	assert_true(a >= 0);
	assert_true(a & SYM_KERNEL_FRAME);
	assert_int_equal(symbolizer__frame(fx.sym, NULL, a, &f), 0);
	assert_string_equal(f.name, "vfs_read");
	assert_int_equal(f.address, 0xffffffff81001234);
	assert_true(f.has_mapping);
	assert_string_equal(f.mapping.filename, "[kernel.kallsyms]");
	/* A return address: looked up at addr - 1. */
	b = symbolizer__kernel(fx.sym, 0xffffffff81001000, 0);
	assert_true(b & SYM_KERNEL_FRAME);
	assert_int_equal(symbolizer__frame(fx.sym, NULL, b, &f), 0);
	assert_string_equal(f.name, "do_one_initcall");
	assert_int_equal(f.address, 0xffffffff81000fff);
	assert_int_equal(symbolizer__kernel(fx.sym, 0xffffffff81001234, 1), a);
	/* Modules; and an address kallsyms does not cover. */
	c = symbolizer__kernel(fx.sym, 0xffffffffc0001010, 1);
	assert_int_equal(symbolizer__frame(fx.sym, NULL, c, &f), 0);
	assert_string_equal(f.name, "ext4_get_block");
	c = symbolizer__kernel(fx.sym, 0xffffffff80000000, 1);
	assert_int_equal(symbolizer__frame(fx.sym, NULL, c, &f), 0);
	assert_string_equal(f.name, "[kernel] 0xffffffff80000000");
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.kernel, 4);
	assert_int_equal(st.frames, 4);
	assert_false(st.kernel_hidden);
}

/* kallsyms with every address zeroed (kptr_restrict): kernel frames are "[kernel]". */
static void test_symbolize_kernel_hidden(void **state)
{
	char path[192];
	struct symbolizer_stats st;
	struct agg_frame f;
	int64_t a;

	snprintf(path, sizeof(path), "%s/kallsyms.hidden", tmp);
	testutil__write_file(NULL, path, "0000000000000000 T _stext\n0000000000000000 T vfs_read\n");
	fx_open(path, 0, 0);
	symbolizer__stats(fx.sym, &st);
	assert_true(st.kernel_hidden);
	a = symbolizer__kernel(fx.sym, 0xffffffff81001234, 1);
	assert_int_equal(symbolizer__frame(fx.sym, NULL, a, &f), 0);
	assert_string_equal(f.name, "[kernel]");
}

/* ---- runtime code ------------------------------------------------------------------------------ */

/* JIT code the runtime claims is pending until finish, then named with the runtime's name. */
static void test_symbolize_runtime_frame_named_at_finish(void **state)
{
	struct symbolizer_stats st;
	struct agg_frame f;
	struct proc *p;
	int64_t id;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	id = symbolizer__user(fx.sym, p, JIT_START + 0x1010, 1, 77);
	assert_true(id >= 0);
	assert_true(rt_claims_calls > 0);
	assert_int_equal(rt_symbolize_calls, 0);	/* not named before the runtime's last poll */
	f = frame_of(p, id);
	assert_string_equal(f.name, "[unknown]");
	assert_true(f.has_mapping);
	assert_true(f.mapping.is_jit);
	assert_string_equal(f.mapping.filename, "[jit]");
	assert_int_equal(f.mapping.start, JIT_START);

	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_int_equal(rt_symbolize_calls, 1);
	f = frame_of(p, id);
	assert_string_equal(f.name, "[App] App.Worker::Run()");	/* no tier without show_tiers */
	assert_non_null(f.system_name);
	assert_string_equal(f.system_name, "[App] App.Worker::Run(int32)");
	assert_true(f.mapping.is_jit);
	/* Named frames are not asked for again. */
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_int_equal(rt_symbolize_calls, 1);
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.jit_named, 1);
	assert_int_equal(st.jit_unnamed, 0);
}

/* Many new frames: named a group at a time, the runtime told each group's addresses before it
 * names them (its hint to fetch them all at once), every frame named once. */
static void test_symbolize_runtime_frames_named_in_groups(void **state)
{
	enum { N = 40 };
	struct agg_frame f;
	struct proc *p;
	int64_t id[N];

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	for (int k = 0; k < N; k++) {
		id[k] = symbolizer__user(fx.sym, p, JIT_START + 0x1000 + 4 * k, 1, 77);
		assert_true(id[k] >= 0);
	}
	assert_int_equal(rt_ntold, 0);
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_int_equal(rt_symbolize_calls, N);
	assert_int_equal(rt_untold_symbolized, 0);	/* told before named */
	assert_int_equal(rt_ntold, N);			/* each once */
	assert_int_equal(rt_groups, (N + RUNTIME_PREFETCH_MAX - 1) / RUNTIME_PREFETCH_MAX);
	assert_int_equal(rt_largest_group, RUNTIME_PREFETCH_MAX);
	for (int k = 0; k < N; k++) {
		f = frame_of(p, id[k]);
		assert_string_equal(f.name, "[App] App.Worker::Run()");
	}
	/* Nothing left to name: nothing told. */
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_int_equal(rt_ntold, N);
}

static void test_symbolize_runtime_frame_show_tiers(void **state)
{
	struct agg_frame f;
	struct proc *p;
	int64_t id, id2;

	fx_open(kallsyms, 1, 0);
	p = get(1001);
	id = symbolizer__user(fx.sym, p, JIT_START + 0x1010, 1, 77);
	id2 = symbolizer__user(fx.sym, p, DLL_START + 0x180, 0, 77);	/* a return address */
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	f = frame_of(p, id);
	assert_string_equal(f.name, "[App] App.Worker::Run() [OptimizedTier1]");
	assert_string_equal(f.system_name, "[App] App.Worker::Run(int32)");
	/* ReadyToRun code in a file the runtime claims: named by it, in its file mapping. */
	f = frame_of(p, id2);
	assert_string_equal(f.name, "[App] App.Program::Main() [PreJIT]");
	assert_null(f.system_name);
	assert_true(f.has_mapping);
	assert_string_equal(f.mapping.filename, "/app/app.dll");
	assert_false(f.mapping.is_jit);
}

/* A claimed frame the runtime cannot name yet: "[unknown]", and tried again at the next finish. */
static void test_symbolize_unnamed_runtime_frame_retried(void **state)
{
	struct symbolizer_stats st;
	struct proc *p;
	int64_t id;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	id = symbolizer__user(fx.sym, p, JIT_START + 0x2020, 1, 5);
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_string_equal(name_of(p, id), "[unknown]");
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.jit_unnamed, 1);
	assert_int_equal(st.jit_named, 0);
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);	/* still nothing */
	assert_string_equal(name_of(p, id), "[unknown]");
	assert_int_equal(rt_symbolize_calls, 2);

	jit_syms[1].published = 1;	/* the perf map line arrives */
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_string_equal(name_of(p, id), "[App] App.Worker::Late()");
	assert_null(frame_of(p, id).system_name);
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.jit_unnamed, 0);
	assert_int_equal(st.jit_named, 1);
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_int_equal(rt_symbolize_calls, 3);
}

/* A claimed file-backed frame the runtime does not know: module+offset, not asked again. */
static void test_symbolize_unnamed_claimed_file_frame_is_module_offset(void **state)
{
	struct symbolizer_stats st;
	struct proc *p;
	int64_t id;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	id = symbolizer__user(fx.sym, p, DLL_START + 0x4000, 1, 5);
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_string_equal(name_of(p, id), "app.dll+0x4000");
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_int_equal(rt_symbolize_calls, 1);
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.native_unnamed, 1);
	assert_int_equal(st.jit_unnamed, 0);
}

/* Managed code the runtime cannot name is .NET unnamed, by cause, even in a file-backed mapping
 * (a ReadyToRun .dll): still shown as module+offset, never counted as native. */
static void test_symbolize_unnamed_managed_file_frame_counts_as_dotnet(void **state)
{
	struct symbolizer_stats st;
	struct proc *p;
	int64_t id;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	id = symbolizer__user(fx.sym, p, DLL_START + 0x7000, 1, 5);
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_string_equal(name_of(p, id), "app.dll+0x7000");
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.native_unnamed, 0);
	assert_int_equal(st.jit_unnamed, 1);
	assert_int_equal(st.unnamed_by[RT_UNNAMED_IMAGE], 1);
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_int_equal(rt_symbolize_calls, 1);	/* not asked again */
}

/* forget frees a process's frames and counts them. */
static void test_symbolize_forget_frees_frames(void **state)
{
	struct symbolizer_stats st;
	struct agg_frame f;
	struct proc *p, *q;
	int64_t id, idq;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	q = get(1002);
	id = symbolizer__user(fx.sym, p, lib_addr(LIB_START, "fx_lib_add", 0), 1, 1);
	symbolizer__user(fx.sym, p, JIT_START + 0x1010, 1, 1);
	symbolizer__user(fx.sym, p, HEAP_START, 1, 1);
	idq = symbolizer__user(fx.sym, q, lib_addr(LIB_START, "fx_lib_add", 0), 1, 1);
	assert_non_null(p->syms);
	symbolizer__forget(fx.sym, p);
	assert_null(p->syms);
	assert_int_equal(symbolizer__frame(fx.sym, p, id, &f), -ENOENT);
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.forgotten, 3);
	/* The other process keeps its frames; a pending frame of a forgotten one is no more. */
	assert_string_equal(name_of(q, idq), "fx_lib_add");
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	assert_int_equal(rt_symbolize_calls, 0);
	symbolizer__forget(fx.sym, p);	/* twice: nothing */
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.forgotten, 3);
}

/* Every kind is counted once per distinct frame. */
static void test_symbolize_stats_count_each_kind(void **state)
{
	struct symbolizer_stats st;
	struct proc *p;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	symbolizer__user(fx.sym, p, lib_addr(LIB_START, "fx_lib_add", 0), 1, 1);	/* named */
	symbolizer__user(fx.sym, p, lib_addr(LIB_START, "fx_lib_add", 0), 1, 1);	/* again */
	symbolizer__user(fx.sym, p, lib_addr(LIB_START, "fx_lib_mul", 0), 1, 1);	/* named */
	symbolizer__user(fx.sym, p, LIB_START + 0x20, 1, 1);	/* module+offset */
	symbolizer__user(fx.sym, p, JIT_START + 0x1010, 1, 1);	/* jit, named at finish */
	symbolizer__user(fx.sym, p, JIT_START + 0x2010, 1, 1);	/* jit, unnamed */
	symbolizer__user(fx.sym, p, JIT_START + 0x9000, 1, 1);	/* jit, unnamed */
	symbolizer__user(fx.sym, p, 0x2000, 1, 1);		/* no mapping */
	symbolizer__kernel(fx.sym, 0xffffffff81000100, 1);
	symbolizer__kernel(fx.sym, 0xffffffff81000100, 1);
	assert_int_equal(symbolizer__finish(fx.sym, fx.pt), 0);
	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.frames, 8);
	assert_int_equal(st.native_named, 2);
	assert_int_equal(st.native_unnamed, 1);
	assert_int_equal(st.jit_named, 1);
	assert_int_equal(st.jit_unnamed, 2);
	assert_int_equal(st.unnamed_by[RT_UNNAMED_NO_ENTRY], 1);
	assert_int_equal(st.unnamed_by[RT_UNNAMED_JITDUMP_STOPPED], 1);
	assert_int_equal(st.unnamed_by[RT_UNNAMED_IMAGE], 0);
	assert_int_equal(st.unknown, 1);
	assert_int_equal(st.kernel, 1);
	assert_int_equal(st.forgotten, 0);
}

/* ---- leaves without their frame --------------------------------------------------------------- */

/* A native leaf at its entry (CFI: return address at [sp]) gets its caller from the copied stack;
 * a word that is not code, a stale ip, no registers, the vDSO and JIT code without a method range
 * keep the walked stack, each counted. */
static void test_symbolize_leaf_caller(void **state)
{
	uint64_t ip = lib_addr(LIB_START, "fx_lib_mul", 0), caller = lib_addr(LIB_START, "fx_lib_add", 1);
	uint64_t words[SP_LEAF_WORDS] = { caller }, frames[4];
	struct leaf_regs r = { ip, 0x7ffc0000f000, 0x7ffc0000f100, words, SP_LEAF_WORDS };
	struct symbolizer_stats st;
	struct proc *p;
	size_t n;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	frames[0] = ip, frames[1] = LIB_START + 0x20, n = 2;
	assert_int_equal(symbolizer__leaf(fx.sym, p, &r, frames, &n, 4, 1), LEAF_INSERTED);
	assert_int_equal(n, 3);
	assert_int_equal(frames[1], caller);
	assert_int_equal(frames[2], LIB_START + 0x20);

	/* The walk has it already. */
	frames[0] = ip, frames[1] = caller, n = 2;
	assert_int_equal(symbolizer__leaf(fx.sym, p, &r, frames, &n, 4, 1), LEAF_DUPLICATE);
	assert_int_equal(n, 2);
	/* A word in the heap is no return address. */
	words[0] = HEAP_START + 8;
	assert_int_equal(symbolizer__leaf(fx.sym, p, &r, frames, &n, 4, 1), LEAF_NOT_CODE);
	assert_int_equal(n, 2);
	/* Registers of another ip than the walk's leaf. */
	frames[0] = ip + 1;
	assert_int_equal(symbolizer__leaf(fx.sym, p, &r, frames, &n, 4, 1), LEAF_IP_MISMATCH);
	assert_int_equal(symbolizer__leaf(fx.sym, p, NULL, frames, &n, 4, 1), LEAF_NO_REGS);
	r.ip = frames[0] = VDSO_START + 0x10;
	assert_int_equal(symbolizer__leaf(fx.sym, p, &r, frames, &n, 4, 1), LEAF_NO_CFI);
	r.ip = frames[0] = HEAP_START + 0x10;
	assert_int_equal(symbolizer__leaf(fx.sym, p, &r, frames, &n, 4, 1), LEAF_NO_CODE);
	r.ip = frames[0] = JIT_START + 0x1010;	/* the fake runtime gives no range */
	assert_int_equal(symbolizer__leaf(fx.sym, p, &r, frames, &n, 4, 1), LEAF_JIT_NO_RANGE);
	assert_int_equal(n, 2);

	symbolizer__stats(fx.sym, &st);
	assert_int_equal(st.leaf[LEAF_INSERTED], 1);
	assert_int_equal(st.leaf[LEAF_DUPLICATE], 1);
	assert_int_equal(st.leaf[LEAF_NOT_CODE], 1);
	assert_int_equal(st.leaf[LEAF_IP_MISMATCH], 1);
	assert_int_equal(st.leaf[LEAF_NO_REGS], 1);
	assert_int_equal(st.leaf[LEAF_NO_CFI], 1);
	assert_int_equal(st.leaf[LEAF_NO_CODE], 1);
	assert_int_equal(st.leaf[LEAF_JIT_NO_RANGE], 1);
}

/* A JIT leaf the runtime does not know yet makes its runtime due at once: the runtime reads its
 * files on a backoff while they do not grow, and the samples after this one need the new code. */
static void test_symbolize_unknown_jit_leaf_wakes_the_runtime(void **state)
{
	uint64_t words[SP_LEAF_WORDS] = { 0 }, frames[4];
	struct leaf_regs r = { JIT_START + 0x3010, 0x7ffc0000f000, 0x7ffc0000f100, words, SP_LEAF_WORDS };
	struct proc *p;
	size_t n = 2;

	fx_open(kallsyms, 0, 0);
	p = get(1001);
	assert_non_null(p->rt[0].state);
	frames[0] = r.ip, frames[1] = LIB_START + 0x20;
	p->rt[0].next_poll_ns = 1000000000000ull;	/* backing off */
	assert_int_equal(symbolizer__leaf(fx.sym, p, &r, frames, &n, 4, 1), LEAF_JIT_NO_RANGE);
	assert_int_equal(p->rt[0].next_poll_ns, 0);
	(void)state;
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_symbolize_native_named_from_elf),
		T(test_symbolize_file_replaced_same_inode),
		T(test_symbolize_exited_process_shares_inode),
		T(test_symbolize_no_symbol_is_module_offset),
		T(test_symbolize_elf_tables_within_budget),
		T(test_symbolize_return_address_looked_up_before),
		T(test_symbolize_same_address_same_id),
		T(test_symbolize_new_mapping_found_after_maps_change),
		T(test_symbolize_maps_not_reread_too_soon),
		T(test_symbolize_unmapped_frame_named_at_finish),
		T(test_symbolize_image_mapped_over_reserve_named_at_finish),
		T(test_symbolize_frame_gives_mapping),
		T(test_symbolize_return_address_in_data_ends_chain),
		T(test_symbolize_data_in_older_maps_does_not_end_chain),
		T(test_symbolize_kernel_frames),
		T(test_symbolize_kernel_hidden),
		T(test_symbolize_runtime_frame_named_at_finish),
		T(test_symbolize_runtime_frames_named_in_groups),
		T(test_symbolize_runtime_frame_show_tiers),
		T(test_symbolize_unnamed_runtime_frame_retried),
		T(test_symbolize_unnamed_claimed_file_frame_is_module_offset),
		T(test_symbolize_unnamed_managed_file_frame_counts_as_dotnet),
		T(test_symbolize_forget_frees_frames),
		T(test_symbolize_stats_count_each_kind),
		T(test_symbolize_leaf_caller),
		T(test_symbolize_unknown_jit_leaf_wakes_the_runtime),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
