/* symbolize_fx.h: what test_symbolize.c and test_symbolize_runtime.c share (symbolize_fx.c): a fake
 * /proc/<pid> whose root holds an ELF fixture built at group setup, a fake runtime that claims JIT
 * code and the first half of a PE file, fixture kallsyms, and a process table with a symbolizer per
 * test. */
#ifndef SPANPROF_SYMBOLIZE_FX_H
#define SPANPROF_SYMBOLIZE_FX_H

#include <stddef.h>
#include <stdint.h>

#include "proctab.h"
#include "runtime.h"
#include "symbolize.h"

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

/* What write_maps adds to the first maps: */
enum {
	MAPS_LATE = 1,		/* the second libfx.so mapping */
	MAPS_RESERVED = 2,	/* the runtime's reserve: anonymous, no access */
	MAPS_RESV_LIB = 4,	/* libfx.so mapped over that reserve */
};

/* The fake runtime's code: what its "perf map" names (published 0: not in it yet). */
struct jit_sym {
	uint64_t lo, hi;
	const char *name, *system_name, *tier;
	int published;		/* 0: not in the "perf map" yet */
};

/* Per test: a process table on the fake /proc, a symbolizer, fresh process dirs. */
struct fx {
	struct proctab *pt;
	struct symbolizer *sym;
};

/* The group's files: tmp (/tmp/test_symbolize.XXXXXX), the fake /proc under it, the fixture
 * library and PE file inside tmp/rootfs/app (/app inside the process's root), their inodes. */
extern char tmp[64];
extern char proc_root[128];
extern char kallsyms[128];
extern char lib_path[192];
extern char dll_path[192];
extern char build_id[128];
extern unsigned long lib_ino, dll_ino;
/* Ground truth from the fixture library (nm, its program headers), and the fake process dirs:
 * write_maps writes pid's maps (late: MAPS_* flags), fake_proc the whole /proc/<pid>. */
uint64_t vaddr_to_off(const char *path, uint64_t vaddr);
void nm_sym(const char *name, uint64_t *value, uint64_t *size);
uint64_t lib_addr(uint64_t start, const char *name, uint64_t delta);
void write_maps(int pid, int late);
void fake_proc(int pid, int late);
/* The fake runtime: its methods, and what it was asked (reset by setup). */
extern struct jit_sym jit_syms[];
extern int rt_symbolize_calls, rt_claims_calls;
extern size_t rt_ntold, rt_groups, rt_largest_group, rt_untold_symbolized;
extern const struct runtime_env env;
/* Group setup builds the files; setup/teardown give each test fake processes 1001 and 1002, and
 * fx_open the table and symbolizer (fx). get/frame_of/name_of assert what they return. */
int group_setup(void **state);
int group_teardown(void **state);
extern struct fx fx;
void fx_open(const char *ksyms_path, int show_tiers, uint64_t refresh_ns);
int setup(void **state);
int teardown(void **state);
struct proc *get(int pid);
struct agg_frame frame_of(const struct proc *p, int64_t id);
const char *name_of(const struct proc *p, int64_t id);

#endif
