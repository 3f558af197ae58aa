/* symbolize_fx.c: the fake /proc, fake runtime and per-test symbolizer of the test_symbolize*.c
 * programs (symbolize_fx.h). */
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
#include "symbolize_fx.h"

char tmp[64];		/* /tmp/test_symbolize.XXXXXX */
char proc_root[128];	/* tmp/proc */
char kallsyms[128];
char lib_path[192];	/* tmp/rootfs/app/libfx.so, /app/libfx.so inside the root */
char dll_path[192];
char build_id[128];
unsigned long lib_ino, dll_ino;

static const char KALLSYMS[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000100 T do_one_initcall\n"
	"ffffffff81001000 T vfs_read\n"
	"ffffffff81001800 T _etext\n"
	"ffffffffc0001000 t ext4_get_block\t[ext4]\n"
	"ffffffffc0001400 T ext4_readdir\t[ext4]";

/* ---- helpers -------------------------------------------------------------------------------- */

/* File offset of ELF virtual address vaddr in path, through its PT_LOAD segments. */
uint64_t vaddr_to_off(const char *path, uint64_t vaddr)
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
void nm_sym(const char *name, uint64_t *value, uint64_t *size)
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
uint64_t lib_addr(uint64_t start, const char *name, uint64_t delta)
{
	uint64_t v, s;

	nm_sym(name, &v, &s);
	return start + vaddr_to_off(lib_path, v + delta);
}

/* The maps of fake process pid, with what `late` (MAPS_*) adds. */
void write_maps(int pid, int late)
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
void fake_proc(int pid, int late)
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


struct jit_sym jit_syms[] = {
	{ JIT_START + 0x1000, JIT_START + 0x1100, "[App] App.Worker::Run()",
	  "[App] App.Worker::Run(int32)", "OptimizedTier1", 1 },
	{ JIT_START + 0x2000, JIT_START + 0x2100, "[App] App.Worker::Late()", NULL, NULL, 0 },
	{ DLL_START + 0x100, DLL_START + 0x200, "[App] App.Program::Main()", NULL, "PreJIT", 1 },
};
int rt_symbolize_calls, rt_claims_calls;
/* What prefetch() was told: each address, and the size of each group. */
static uint64_t rt_told[64];
size_t rt_ntold, rt_groups, rt_largest_group, rt_untold_symbolized;

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
const struct runtime_env env = { .runtimes = fake_table, .ctx_map_fd = -1 };

/* ---- fixtures ------------------------------------------------------------------------------- */

int group_setup(void **state)
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

int group_teardown(void **state)
{
	if (tmp[0])
		testutil__rm_rf(tmp);
	return 0;
}


struct fx fx;

void fx_open(const char *ksyms_path, int show_tiers, uint64_t refresh_ns)
{
	struct symbolizer_opts o = { .kallsyms = ksyms_path, .show_tiers = show_tiers,
				     .maps_refresh_ns = refresh_ns };

	fx.sym = symbolizer__new(&o);
	assert_non_null(fx.sym);
	fx.pt = proctab__new(proc_root, &env);
	assert_non_null(fx.pt);
}

int setup(void **state)
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

int teardown(void **state)
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

struct proc *get(int pid)
{
	struct proc *p = proctab__get(fx.pt, pid, 0, "app");

	assert_non_null(p);
	assert_false(p->gone);
	assert_non_null(runtime__state(p, 0));
	return p;
}

struct agg_frame frame_of(const struct proc *p, int64_t id)
{
	struct agg_frame f;

	assert_true(id >= 0);
	assert_int_equal(symbolizer__frame(fx.sym, p, (uint32_t)id, &f), 0);
	return f;
}

const char *name_of(const struct proc *p, int64_t id)
{
	return frame_of(p, id).name;
}
