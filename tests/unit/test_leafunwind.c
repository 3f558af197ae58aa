/* test_leafunwind.c: unit tests for user/symbols/leafunwind.c: x86-64 prologue and epilogue
 * decoding, CFI of this very program (libdw), and the insertion of the caller into a stack. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "leafunwind.h"
#include "testutil.h"

/* where() at ip_off with the bytes at ip taken from the same buffer. */
static struct leaf_where where(const uint8_t *code, size_t len, size_t ip_off)
{
	return leaf__x64_where(code, len, ip_off, code + ip_off, len - ip_off);
}

#define assert_ra(w, off)                                  \
	do {                                               \
		struct leaf_where w_ = (w);                \
		assert_int_equal(w_.outcome, LEAF_INSERTED); \
		assert_int_equal(w_.ra_off, (off));        \
	} while (0)

/* The JIT's frameless Mix of tests/apps/LeafCall (.NET 10.0.12): no prologue at all. */
static const uint8_t frameless[] = {
	0x48, 0x8d, 0x04, 0x7f,			/* lea rax, [rdi+2*rdi] */
	0x48, 0x05, 0x15, 0x7c, 0x4a, 0x7f,	/* add rax, imm32 */
	0x33, 0xd2,				/* xor edx, edx */
	0x48, 0xf7, 0xf6,			/* div rsi */
	0xc3,					/* ret */
};

static void test_leafunwind_x64_frameless(void **state)
{
	assert_ra(where(frameless, sizeof(frameless), 0), 0);
	assert_ra(where(frameless, sizeof(frameless), 4), 0);
	assert_ra(where(frameless, sizeof(frameless), 12), 0);
	assert_ra(where(frameless, sizeof(frameless), 15), 0);	/* at ret */
}

/* push rbp; mov rbp, rsp; body; pop rbp; ret. */
static const uint8_t framed[] = {
	0x55, 0x48, 0x89, 0xe5,			/* 0: push rbp; 1: mov rbp, rsp */
	0x48, 0x8d, 0x04, 0x7f,			/* 4: lea rax, [rdi+2*rdi] */
	0x5d,					/* 8: pop rbp */
	0xc3,					/* 9: ret */
};

static void test_leafunwind_x64_framed(void **state)
{
	assert_ra(where(framed, sizeof(framed), 0), 0);	/* before push rbp */
	assert_ra(where(framed, sizeof(framed), 1), 8);	/* after push, before mov */
	assert_int_equal(where(framed, sizeof(framed), 4).outcome, LEAF_FRAMED);
	assert_int_equal(where(framed, sizeof(framed), 8).outcome, LEAF_FRAMED);	/* rbp still ours */
	assert_ra(where(framed, sizeof(framed), 9), 0);	/* rbp popped */
	/* Not an instruction boundary: inside mov rbp, rsp. */
	assert_int_equal(where(framed, sizeof(framed), 2).outcome, LEAF_JIT_UNSURE);
}

/* The JIT's usual x64 Unix prologue: callee-saved pushes between push rbp and the frame. */
static const uint8_t jit_prologue[] = {
	0x55,					/* 0: push rbp */
	0x41, 0x57,				/* 1: push r15 */
	0x53,					/* 3: push rbx */
	0x48, 0x83, 0xec, 0x10,			/* 4: sub rsp, 16 */
	0x48, 0x8d, 0x6c, 0x24, 0x20,		/* 8: lea rbp, [rsp+0x20] */
	0x48, 0x8b, 0xc7,			/* 13: mov rax, rdi */
	0x48, 0x83, 0xc4, 0x10,			/* 16: add rsp, 16 */
	0x5b, 0x41, 0x5f, 0x5d,			/* 20: pop rbx; pop r15; pop rbp */
	0xc3,					/* 24: ret */
};

static void test_leafunwind_x64_jit_prologue(void **state)
{
	assert_ra(where(jit_prologue, sizeof(jit_prologue), 1), 8);
	assert_ra(where(jit_prologue, sizeof(jit_prologue), 3), 16);
	assert_ra(where(jit_prologue, sizeof(jit_prologue), 4), 24);
	assert_ra(where(jit_prologue, sizeof(jit_prologue), 8), 40);	/* at lea rbp */
	assert_int_equal(where(jit_prologue, sizeof(jit_prologue), 13).outcome, LEAF_FRAMED);
	assert_int_equal(where(jit_prologue, sizeof(jit_prologue), 16).outcome, LEAF_FRAMED);
	assert_int_equal(where(jit_prologue, sizeof(jit_prologue), 23).outcome, LEAF_FRAMED);
	assert_ra(where(jit_prologue, sizeof(jit_prologue), 24), 0);
}

/* A frameless method that still moves rsp (the JIT's CallerB of one call: push rax ... add rsp). */
static const uint8_t frameless_push[] = {
	0x50,					/* 0: push rax */
	0x48, 0x83, 0xc7, 0x03,			/* 1: add rdi, 3 */
	0x48, 0x83, 0xc0, 0x07,			/* 5: add rax, 7 */
	0x48, 0x83, 0xc4, 0x08,			/* 9: add rsp, 8 */
	0xc3,					/* 13: ret */
};

static void test_leafunwind_x64_frameless_push(void **state)
{
	assert_ra(where(frameless_push, sizeof(frameless_push), 0), 0);
	assert_ra(where(frameless_push, sizeof(frameless_push), 1), 8);	/* body */
	assert_ra(where(frameless_push, sizeof(frameless_push), 5), 8);
	assert_ra(where(frameless_push, sizeof(frameless_push), 9), 8);	/* epilogue: add rsp */
	assert_ra(where(frameless_push, sizeof(frameless_push), 13), 0);
	/* The bytes at ip unknown: the body cannot be told from an epilogue. */
	assert_int_equal(leaf__x64_where(frameless_push, sizeof(frameless_push), 5, NULL, 0).outcome,
			 LEAF_JIT_UNSURE);
}

static void test_leafunwind_x64_unsure(void **state)
{
	/* rbp pushed as a scratch register, never made a frame: where would a pop leave sp? */
	static const uint8_t push_only[] = { 0x55, 0x48, 0x8b, 0xc7, 0x5d, 0xc3 };
	/* rbp set without being saved first. */
	static const uint8_t no_save[] = { 0x48, 0x89, 0xe5, 0x48, 0x8b, 0xc7, 0xc3 };
	/* sub rsp with a negative immediate (grows the other way: not a prologue we know). */
	static const uint8_t neg_sub[] = { 0x48, 0x83, 0xec, 0xf0, 0x48, 0x8b, 0xc7, 0xc3 };
	/* Nothing but prologue in the copy, ip past it. */
	static const uint8_t only_prologue[] = { 0x55, 0x53 };

	assert_int_equal(where(push_only, sizeof(push_only), 1).outcome, LEAF_JIT_UNSURE);
	assert_int_equal(where(no_save, sizeof(no_save), 3).outcome, LEAF_JIT_UNSURE);
	assert_int_equal(where(neg_sub, sizeof(neg_sub), 4).outcome, LEAF_JIT_UNSURE);
	assert_int_equal(leaf__x64_where(only_prologue, sizeof(only_prologue), 40,
					 frameless, sizeof(frameless)).outcome, LEAF_JIT_UNSURE);
	/* Truncated instructions at the end of the copy are not read past it. */
	assert_ra(leaf__x64_where((const uint8_t[]){ 0x48, 0x83 }, 2, 0, NULL, 0), 0);
	assert_ra(leaf__x64_where((const uint8_t[]){ 0x50, 0x48, 0x8b, 0xc7 }, 4, 1,
				  (const uint8_t[]){ 0x48, 0x83, 0xc4 }, 3), 8);	/* add rsp cut short: body */
}

/* Random bytes, random ips, short copies: an answer every time, no byte read outside the copies
 * (the sanitizer build checks that). */
static void test_leafunwind_x64_random(void **state)
{
	uint8_t code[64], at[16];
	uint64_t x = 0x9E3779B97F4A7C15ull;

	for (int i = 0; i < 200000; i++) {
		size_t len, at_len, ip_off;
		struct leaf_where w;

		for (size_t k = 0; k < sizeof(code); k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			/* Mostly prologue and epilogue opcodes, so the decoders go deep. */
			code[k] = (x & 3) ? (uint8_t[]){ 0x55, 0x53, 0x41, 0x57, 0x48, 0x83, 0xec,
							  0x8d, 0x6c, 0x24, 0x5d, 0xc3, 0xc4,
							  0x89, 0xe5, 0x81 }[(x >> 8) & 15]
					  : (uint8_t)(x >> 16);
		}
		memcpy(at, code + (x >> 24) % 48, sizeof(at));
		len = 1 + (x >> 32) % sizeof(code);
		at_len = (x >> 40) % (sizeof(at) + 1);
		ip_off = (x >> 48) % (len + 8);
		w = leaf__x64_where(code, len, ip_off, at_len ? at : NULL, at_len);
		assert_true(w.outcome == LEAF_INSERTED || w.outcome == LEAF_FRAMED ||
			    w.outcome == LEAF_JIT_UNSURE);
	}
}

/* ---- insertion -------------------------------------------------------------------------------- */

static int code_lo_hi(void *arg, uint64_t addr)
{
	return addr >= 0x1000 && addr < 0x9000;
}

static void test_leafunwind_insert(void **state)
{
	uint64_t words[4] = { 0x2222, 0x5555, 0x77, 0x3333 };
	uint64_t frames[8] = { 0x1111, 0x4444, 0x6666 };
	size_t n = 3;
	struct leaf_where w = { LEAF_INSERTED, 0 };

	assert_int_equal(leaf__insert(w, words, 4, frames, &n, 8, code_lo_hi, NULL), LEAF_INSERTED);
	assert_int_equal(n, 4);
	assert_int_equal(frames[0], 0x1111);
	assert_int_equal(frames[1], 0x2222);
	assert_int_equal(frames[2], 0x4444);
	assert_int_equal(frames[3], 0x6666);

	/* The walk already has it: nothing added. */
	n = 3;
	frames[1] = 0x5555;
	w.ra_off = 8;
	assert_int_equal(leaf__insert(w, words, 4, frames, &n, 8, code_lo_hi, NULL), LEAF_DUPLICATE);
	assert_int_equal(n, 3);

	/* Not code: never invent a frame. */
	w.ra_off = 16;
	assert_int_equal(leaf__insert(w, words, 4, frames, &n, 8, code_lo_hi, NULL), LEAF_NOT_CODE);
	assert_int_equal(n, 3);

	/* Past the copied words, or not word aligned. */
	w.ra_off = 32;
	assert_int_equal(leaf__insert(w, words, 4, frames, &n, 8, code_lo_hi, NULL), LEAF_BEYOND_WORDS);
	w.ra_off = 4;
	assert_int_equal(leaf__insert(w, words, 4, frames, &n, 8, code_lo_hi, NULL), LEAF_BEYOND_WORDS);
	w.ra_off = -8;
	assert_int_equal(leaf__insert(w, words, 4, frames, &n, 8, code_lo_hi, NULL), LEAF_BEYOND_WORDS);

	/* Any other answer passes through, the stack untouched. */
	w.outcome = LEAF_FRAMED;
	assert_int_equal(leaf__insert(w, words, 4, frames, &n, 8, code_lo_hi, NULL), LEAF_FRAMED);
	assert_int_equal(n, 3);
}

static void test_leafunwind_insert_full(void **state)
{
	uint64_t words[1] = { 0x2222 };
	uint64_t frames[3] = { 0x1111, 0x4444, 0x6666 };
	size_t n = 3;
	struct leaf_where w = { LEAF_INSERTED, 0 };

	/* A full stack loses its outermost frame. */
	assert_int_equal(leaf__insert(w, words, 1, frames, &n, 3, code_lo_hi, NULL), LEAF_INSERTED);
	assert_int_equal(n, 3);
	assert_int_equal(frames[1], 0x2222);
	assert_int_equal(frames[2], 0x4444);

	/* A stack of the leaf alone gains its caller. */
	n = 1;
	assert_int_equal(leaf__insert(w, words, 1, frames, &n, 3, code_lo_hi, NULL), LEAF_INSERTED);
	assert_int_equal(n, 2);
	assert_int_equal(frames[1], 0x2222);
}

/* ---- CFI of this program ---------------------------------------------------------------------- */

static volatile long cfi_sink;

__attribute__((noinline, noipa)) long cfi_leaf(long x)
{
	return x * 3 + 1;
}

__attribute__((noinline, noipa)) long cfi_framed(long x)
{
	return cfi_leaf(x) * 5 + cfi_sink;
}

static int first_base(struct dl_phdr_info *info, size_t size, void *arg)
{
	*(uint64_t *)arg = info->dlpi_addr;
	return 1;	/* the first object is the program itself */
}

static uint64_t vaddr_of(const void *fn)
{
	uint64_t base = 0;

	dl_iterate_phdr(first_base, &base);
	return (uint64_t)(uintptr_t)fn - base;
}

/* Offset of the first instruction after endbr64, if the compiler put one there. */
static size_t entry_skip(const uint8_t *c)
{
	return c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa ? 4 : 0;
}

static void test_leafunwind_cfi_self(void **state)
{
	struct leafcfi *c = leafcfi__open_fd(open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
	const uint8_t *leaf = (const uint8_t *)cfi_leaf, *fr = (const uint8_t *)cfi_framed;
	uint64_t lv = vaddr_of(cfi_leaf), fv = vaddr_of(cfi_framed);
	size_t ls = entry_skip(leaf), fs = entry_skip(fr), mov = 0;

	assert_non_null(c);
	assert_int_equal(cfi_framed(1), 20 + cfi_sink);
	/* At any function's entry the return address is at [sp]. */
	assert_ra(leafcfi__where(c, lv + ls), 0);
	assert_ra(leafcfi__where(c, fv + fs), 0);
	/* gcc -O2 -fno-omit-frame-pointer: the framed one pushes rbp, then sets it. */
	assert_int_equal(fr[fs], 0x55);
	assert_ra(leafcfi__where(c, fv + fs + 1), 8);
	for (size_t i = fs + 1; i < fs + 32 && !mov; i++)
		if (fr[i] == 0x48 && fr[i + 1] == 0x89 && fr[i + 2] == 0xe5)
			mov = i + 3;
	assert_true(mov > 0);
	assert_int_equal(leafcfi__where(c, fv + mov).outcome, LEAF_FRAMED);
	/* No FDE covers the ELF header. */
	assert_int_equal(leafcfi__where(c, 0).outcome, LEAF_NO_CFI);
	leafcfi__free(c);
}

/* A hostile container truncates a library after its CFI was opened: answers stay, never SIGBUS
 * (the CFI must not be read through a mapping of a file another process can shrink). */
static void test_leafunwind_cfi_truncated(void **state)
{
	const uint8_t *leaf = (const uint8_t *)cfi_leaf;
	uint64_t lv = vaddr_of(cfi_leaf);
	size_t ls = entry_skip(leaf), len;
	char path[PATH_MAX];
	char *self = testutil__slurp("/proc/self/exe", &len);
	struct leafcfi *c;
	int fd;

	assert_non_null(self);
	assert_int_equal(testutil__temp_file(path, sizeof(path), self, len), 0);
	free(self);
	fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	c = leafcfi__open_fd(dup(fd));
	assert_non_null(c);
	assert_int_equal(ftruncate(fd, 0), 0);
	close(fd);
	unlink(path);
	assert_ra(leafcfi__where(c, lv + ls), 0);
	assert_int_equal(leafcfi__where(c, 0).outcome, LEAF_NO_CFI);
	leafcfi__free(c);
}

/* A copy of this program whose section sec claims size bytes at the file's end (or, with
 * BIG_LOAD, whose PT_LOAD segment holding the CFI runs on to that end), the file extended to
 * hold them: written (zeros) when stored, else a hole. HIDE_EH renames its .eh_frame sections
 * (".xh_frame"), NO_EH_PHDR drops its PT_GNU_EH_FRAME. Returns the open fd. */
enum { HIDE_EH = 1, NO_EH_PHDR = 2, BIG_LOAD = 4 };

static int big_section(char *path, size_t cap, const char *sec, uint64_t size, int stored,
		       int how)
{
	static char zeros[1 << 20];
	size_t len;
	char *self = testutil__slurp("/proc/self/exe", &len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)self;
	Elf64_Shdr *sh, *str;
	Elf64_Phdr *ph, *ehp = NULL;
	uint64_t at;
	int fd;

	assert_non_null(self);
	at = (len + 4095) & ~4095ul;
	sh = (Elf64_Shdr *)(self + eh->e_shoff);
	str = &sh[eh->e_shstrndx];
	for (int i = 0; i < eh->e_shnum; i++) {
		char *name = self + str->sh_offset + sh[i].sh_name;

		if (sec && !strcmp(name, sec)) {
			sh[i].sh_offset = at;
			sh[i].sh_size = size;
		}
		if ((how & HIDE_EH) && !strncmp(name, ".eh_frame", 9))
			name[1] = 'x';
	}
	ph = (Elf64_Phdr *)(self + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_GNU_EH_FRAME)
			ehp = &ph[i];
	assert_non_null(ehp);
	for (int i = 0; (how & BIG_LOAD) && i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr <= ehp->p_vaddr &&
		    ehp->p_vaddr < ph[i].p_vaddr + ph[i].p_filesz)
			ph[i].p_filesz = at + size - ph[i].p_offset;
	if (how & NO_EH_PHDR)
		ehp->p_type = PT_NULL;
	assert_int_equal(testutil__temp_file(path, cap, self, len), 0);
	fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)(at + size)), 0);
	for (uint64_t off = 0; stored && off < size; off += sizeof(zeros))
		assert_true(pwrite(fd, zeros, size - off < sizeof(zeros) ? size - off : sizeof(zeros),
				   (off_t)(at + off)) > 0);
	free(self);
	return fd;
}

static long max_rss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* A .eh_frame that is all hole, or bigger than the cap, is refused before anything is read; so is
 * the .debug_frame way (libdw would read every debug section) when a debug section is a hole. */
static void test_leafunwind_cfi_sparse(void **state)
{
	char path[PATH_MAX];
	long rss = max_rss_kb();
	int fd = big_section(path, sizeof(path), ".eh_frame", 256u << 20, 0, 0);

	errno = 0;
	assert_null(leafcfi__open_fd(fd));
	assert_int_equal(errno, EFBIG);
	unlink(path);
	/* stored on disk but over the cap */
	fd = big_section(path, sizeof(path), ".eh_frame", LEAF_CFI_MAX_BYTES + 4096, 1, 0);
	errno = 0;
	assert_null(leafcfi__open_fd(fd));
	assert_int_equal(errno, EFBIG);
	unlink(path);
	/* no .eh_frame at all, and a .debug_info of 256 MiB that is all hole */
	fd = big_section(path, sizeof(path), ".debug_info", 256u << 20, 0, HIDE_EH | NO_EH_PHDR);
	errno = 0;
	assert_null(leafcfi__open_fd(fd));
	assert_int_equal(errno, ENOENT);
	unlink(path);
	/* no .eh_frame sections: libdw would go by PT_GNU_EH_FRAME and read on to the end of the
	 * PT_LOAD segment holding it, here 256 MiB more that are all hole */
	fd = big_section(path, sizeof(path), NULL, 256u << 20, 0, HIDE_EH | BIG_LOAD);
	errno = 0;
	assert_null(leafcfi__open_fd(fd));
	assert_int_equal(errno, ENOENT);
	unlink(path);
	assert_true(max_rss_kb() - rss < (64 << 10));
	/* the same file without the big segment: its CFI comes from the program headers */
	fd = big_section(path, sizeof(path), NULL, 4096, 1, HIDE_EH);
	{
		struct leafcfi *c = leafcfi__open_fd(fd);

		assert_non_null(c);
		assert_ra(leafcfi__where(c, vaddr_of(cfi_leaf) + entry_skip((const uint8_t *)cfi_leaf)), 0);
		leafcfi__free(c);
	}
	unlink(path);
}

/* The vDSO from memory, as the symbolizer copies it from a process: its clock_gettime has CFI. */
static void test_leafunwind_cfi_vdso_image(void **state)
{
	const uint8_t *base = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	uint64_t len, fn = 0, vaddr;
	struct leafcfi *c;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Sym sym;
	uint8_t *img;
	Elf *e;

	if (!base)
		skip();
	/* The image is the ELF file: its section headers are its end. */
	len = eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize;
	assert_true(len > 0 && len <= (64u << 10));
	img = malloc(len);
	assert_non_null(img);
	memcpy(img, base, len);
	elf_version(EV_CURRENT);
	e = elf_memory((char *)img, len);
	assert_non_null(e);
	while ((scn = elf_nextscn(e, scn)) && !fn) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++)
			if (gelf_getsym(d, i, &sym) &&
			    !strcmp(elf_strptr(e, sh.sh_link, sym.st_name) ?: "", "__vdso_clock_gettime"))
				fn = sym.st_value;
	}
	elf_end(e);
	assert_true(fn != 0);

	c = leafcfi__open_image(img, len);
	assert_non_null(c);
	assert_int_equal(leafcfi__vaddr(c, fn, &vaddr), 0);	/* linked at its offsets */
	assert_int_equal(vaddr, fn);
	assert_ra(leafcfi__where(c, fn), 0);
	assert_int_equal(leafcfi__vaddr(c, len + 4096, &vaddr), -ENOENT);
	leafcfi__free(c);
	/* Not ELF: refused, the buffer freed (the sanitizer build checks that). */
	assert_null(leafcfi__open_image(calloc(1, 64), 64));
	assert_int_equal(errno, ENOEXEC);
	assert_null(leafcfi__open_image(NULL, 0));
}

static void test_leafunwind_cfi_bad_input(void **state)
{
	static const char junk[] = "not an ELF file at all, just text\n";
	char path[PATH_MAX];

	assert_null(leafcfi__open_fd(-1));
	assert_int_equal(errno, EBADF);
	assert_int_equal(testutil__temp_file(path, sizeof(path), junk, sizeof(junk)), 0);
	assert_null(leafcfi__open_fd(open(path, O_RDONLY | O_CLOEXEC)));
	assert_int_equal(errno, ENOEXEC);
	unlink(path);
	assert_int_equal(leafcfi__where(NULL, 0x1000).outcome, LEAF_NO_CFI);
	leafcfi__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_leafunwind_x64_frameless),
		cmocka_unit_test(test_leafunwind_x64_framed),
		cmocka_unit_test(test_leafunwind_x64_jit_prologue),
		cmocka_unit_test(test_leafunwind_x64_frameless_push),
		cmocka_unit_test(test_leafunwind_x64_unsure),
		cmocka_unit_test(test_leafunwind_x64_random),
		cmocka_unit_test(test_leafunwind_insert),
		cmocka_unit_test(test_leafunwind_insert_full),
		cmocka_unit_test(test_leafunwind_cfi_self),
		cmocka_unit_test(test_leafunwind_cfi_truncated),
		cmocka_unit_test(test_leafunwind_cfi_sparse),
		cmocka_unit_test(test_leafunwind_cfi_vdso_image),
		cmocka_unit_test(test_leafunwind_cfi_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
