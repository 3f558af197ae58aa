/* fuzz_spantable.c: libFuzzer target for a hooked process's span table (bpf/profiler.h, hook ABI
 * v1): the header, the key table and the records, read as spanprof reads them. The input is the
 * table; it is mapped in this process and read back through /proc/self/mem by the span-table
 * runtime (hookproc.c), then every slot's record is decoded into labels as for a sample. */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "hookproc.h"
#include "procfs.h"
#include "profile.h"
#include "proctab.h"
#include "runtime.h"
#include "spanctx.h"
#include "util.h"

extern const struct runtime_ops spanctx_runtime;	/* hookproc.c */

#define MAX_PAGES 64
#define PAGE	  4096u
#define MAX_RECS  32	/* slots decoded per input */

static uint8_t *top;	/* end of a reserved region; an unmapped page lies past it */
static int self_fd = -1, self_nspid, map_fd = -1;
static char table_path[] = "/memfd:" SP_CTX_MEMFD_NAME " (deleted)";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	uint8_t *r = mmap(NULL, (MAX_PAGES + 2) * PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert(r != MAP_FAILED);
	/* Holes on both sides: a read outside [start, end) through /proc/self/mem fails. */
	assert(munmap(r, PAGE) == 0 && munmap(r + (MAX_PAGES + 1) * PAGE, PAGE) == 0);
	top = r + (MAX_PAGES + 1) * PAGE;
	self_fd = procfs__open(getpid());
	assert(self_fd >= 0);
	assert(procfs__nspid(self_fd, &self_nspid) == 0);
	/* The sampler's ctx_procs, when this process may create BPF maps; else registration fails
	 * and the keys are read only when a record needs them (both are real paths). */
	map_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "fz_ctx_procs", sizeof(uint32_t),
				sizeof(struct sp_ctx_proc), 16, NULL);
	return 0;
}

/* Labels must be NUL-terminated, valid text, never one of spanprof's own names from a key. */
static void check_labels(const struct pf_label *l, int n)
{
	assert(n >= 0 && n <= HOOKPROC_MAX_LABELS);
	for (int i = 0; i < n; i++) {
		assert(l[i].key && l[i].key[0] && l[i].value);
		assert(strlen(l[i].key) < 256 && strlen(l[i].value) < 256);
	}
}

static void fuzz_record(const uint8_t *data, size_t size)
{
	struct spanctx_keys *keys = spanctx_keys__new();
	struct spanctx_labels *out = malloc(sizeof(*out));
	size_t rlen = size < SP_CTX_MAX + 16 ? size : SP_CTX_MAX + 16;

	assert(keys && out);
	/* The record first, the key table after it (count from its first byte). */
	if (size > rlen)
		spanctx_keys__parse(keys, data + rlen + 1, size - rlen - 1, data[rlen]);
	assert(spanctx_keys__count(keys) <= SP_CTX_MAX_KEYS);
	if (spanctx__decode(data, rlen, keys, out) == 0) {
		assert(strlen(out->head.trace_id) == 32 && strlen(out->head.span_id) == 16);
		assert(out->head.n_labels <= SPANCTX_MAX_LABELS);
		for (uint32_t i = 0; i < out->head.n_labels; i++)
			assert(out->labels[i].key && strlen(out->labels[i].value) <= out->labels[i].len);
	}
	free(out);
	spanctx_keys__free(keys);
}

static void fuzz_table(uint8_t cfg, size_t pages, const uint8_t *data, size_t size)
{
	struct runtime_env env = { .ctx_map_fd = map_fd };
	struct vma vma = { .kind = VMA_MEMFD, .path = table_path };
	struct proc p = { .pid = (uint32_t)getpid(), .dir_fd = self_fd, .root_fd = -1,
			  .nspid = self_nspid, .vmas = &vma, .nvmas = 1, .env = &env };
	size_t map_len = pages * PAGE;
	uint8_t *map = top - map_len;
	struct spanctx_table tbl;
	struct sp_ctx_header h;
	char desc[512];
	void *state;
	int err;

	memset(map, 0, map_len);
	memcpy(map, data, size < map_len ? size : map_len);
	/* cfg & 2: the header's pid is this process's (the fuzzer cannot guess it). */
	if ((cfg & 2) && map_len >= sizeof(h))
		memcpy(map + offsetof(struct sp_ctx_header, pid), &self_nspid, sizeof(uint32_t));
	vma.start = (uint64_t)(uintptr_t)map;
	vma.end = (uint64_t)(uintptr_t)top;
	err = spanctx__check_header(map, map_len, vma.start, vma.end, &tbl);
	assert(err == 0 || err == -EAGAIN || err == -EPROTONOSUPPORT || err == -EBADMSG ||
	       err == -ENOENT);
	if (!err) {
		uint64_t slots_end = tbl.proc.slots_addr + (uint64_t)tbl.proc.slot_count * tbl.proc.slot_size;

		assert(tbl.proc.slots_addr >= vma.start && slots_end <= vma.end);
		assert(tbl.keys_addr >= vma.start && tbl.keys_addr + tbl.keys_size <= vma.end);
	}

	p.maps_read_ns = now_ns();	/* just read: the runtime does not re-read them */
	state = spanctx_runtime.attach(&p, &env);
	assert(state);
	p.rt[RT_SPANCTX].state = state;
	(void)spanctx_runtime.poll(&p, state, &env);
	if (!err) {
		/* Each slot's record, as the sampler copies it: at most SP_CTX_MAX bytes after the
		 * slot head, in a buffer of exactly that size (ring buffer records are). */
		size_t sz = tbl.proc.slot_size - SP_SLOT_HEAD;

		if (sz > SP_CTX_MAX)
			sz = SP_CTX_MAX;
		for (uint32_t i = 0; i < tbl.proc.slot_count && i < MAX_RECS; i++) {
			const uint8_t *slot = map + (tbl.proc.slots_addr - vma.start) +
					      (size_t)i * tbl.proc.slot_size;
			struct pf_label labels[HOOKPROC_MAX_LABELS];
			uint8_t *rec = malloc(sz);
			int n;

			assert(rec);
			memcpy(rec, slot + SP_SLOT_HEAD, sz);
			n = hookproc__labels(&p, rec, sz, i & 1, labels, HOOKPROC_MAX_LABELS);
			if (n >= 0)
				check_labels(labels, n);
			else
				assert(n == -EAGAIN);
			free(rec);
		}
		for (uint32_t i = 0; i < SP_CTX_PROBES; i++)
			assert(spanctx__probe(data[0] | (uint32_t)size << 8, i, tbl.proc.slot_count) <
			       tbl.proc.slot_count);
	}
	spanctx_runtime.describe(&p, state, desc, sizeof(desc));
	assert(strlen(desc) < sizeof(desc));
	spanctx_runtime.detach(&p, state, &env);
	p.rt[RT_SPANCTX].state = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	/* data[0] & 1: a lone record (and key table); else a table of 1 + data[1] % 64 pages. */
	if (data[0] & 1)
		fuzz_record(data + 2, size - 2);
	else
		fuzz_table(data[0], 1 + data[1] % MAX_PAGES, data + 2, size - 2);
	return 0;
}
