/* test_symbolize.c: unit tests for user/symbols/symbolize.c: native frames from ELF files (inodes,
 * budgets, maps read again, frames named at the finish, return addresses in data) and kernel frames,
 * on the fake /proc of symbolize_fx.c. */
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

/* A stack taken in a tracepoint starts in the BPF program and the code that ran it: those frames are
 * told apart by name, the scheduler's are not. */
static void test_symbolize_kernel_tracing(void **state)
{
	char path[192];
	const uint64_t tracing[] = { 0xffffffffa0000010, 0xffffffff81002010, 0xffffffff81003010,
				     0xffffffff81004010, 0xffffffff80000000 };
	const uint64_t kept[] = { 0xffffffff81005010, 0xffffffff81006010 };

	snprintf(path, sizeof(path), "%s/kallsyms.tracing", tmp);
	testutil__write_file(NULL, path,
			     "ffffffff81000000 T _stext\n"
			     "ffffffff81002000 T bpf_trace_run4\n"
			     "ffffffff81003000 t __bpf_trace_sched_switch\n"
			     "ffffffff81004000 T __traceiter_sched_switch\n"
			     "ffffffff81005000 t __schedule\n"
			     "ffffffff81006000 T schedule\n"
			     "ffffffff81007000 T _etext\n"
			     "ffffffffa0000000 t bpf_prog_6deef7357e7b4530_on_switch\t[bpf]\n");
	fx_open(path, 0, 0);
	for (size_t i = 0; i < sizeof(tracing) / sizeof(*tracing); i++)
		assert_true(symbolizer__kernel_tracing(fx.sym, symbolizer__kernel(fx.sym, tracing[i], 1)));
	for (size_t i = 0; i < sizeof(kept) / sizeof(*kept); i++)
		assert_false(symbolizer__kernel_tracing(fx.sym, symbolizer__kernel(fx.sym, kept[i], 1)));
	assert_false(symbolizer__kernel_tracing(fx.sym, -1));
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
		T(test_symbolize_kernel_tracing),
	};
#undef T

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
