/* fuzz_otelctx.c: libFuzzer target for the OTEP 4719 process context: the protobuf
 * ProcessContext payload (otelctx__decode), and header plus payload read from this process's
 * memory by the runtime (otelctx.c) as from a process that publishes one, with its key map
 * checked against a span table. */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "otelctx.h"
#include "procfs.h"
#include "proctab.h"
#include "runtime.h"
#include "spanctx.h"
#include "util.h"

extern const struct runtime_ops otelctx_runtime;	/* otelctx.c */

#define PAGE 4096u

static uint8_t *ctx_page;	/* the OTEL_CTX mapping: one page, unmapped pages around it */
static uint8_t *table;		/* a valid span table (keys "tenant", "region") for the cross-check */
static int self_fd = -1, self_nspid;
static char ctx_path[] = "[anon:OTEL_CTX]", table_path[] = "/memfd:spanprof-ctx (deleted)";

static uint8_t *guarded_page(void)
{
	uint8_t *r = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert(r != MAP_FAILED);
	assert(munmap(r, PAGE) == 0 && munmap(r + 2 * PAGE, PAGE) == 0);
	return r + PAGE;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const uint8_t keys[] = { 6, 't', 'e', 'n', 'a', 'n', 't', 6, 'r', 'e', 'g', 'i', 'o', 'n' };
	struct sp_ctx_header h = { .magic = SP_CTX_MAGIC, .abi_version = SP_CTX_ABI,
				   .header_size = sizeof(h), .slot_count = 1, .slot_size = 64,
				   .slots_offset = 2048, .keys_offset = 128, .keys_size = 1024,
				   .keys_count = 2 };

	self_fd = procfs__open(getpid());
	assert(self_fd >= 0);
	assert(procfs__nspid(self_fd, &self_nspid) == 0);
	ctx_page = guarded_page();
	table = guarded_page();
	h.pid = (uint32_t)self_nspid;
	memcpy(table, &h, sizeof(h));
	memcpy(table + h.keys_offset, keys, sizeof(keys));
	return 0;
}

static void check_attrs(const struct otelctx_attr *a, size_t n)
{
	assert(n <= OTELCTX_MAX_ATTRS);
	for (size_t i = 0; i < n; i++) {
		assert(a[i].key && a[i].value);
		assert(strlen(a[i].value) <= OTELCTX_VALUE_MAX);
	}
}

static void check_ctx(const struct otelctx *c)
{
	const struct otelctx_attr *a;
	const char *v;
	size_t n;

	n = otelctx__resource_attrs(c, &a);
	check_attrs(a, n);
	n = otelctx__extra_attrs(c, &a);
	check_attrs(a, n);
	if ((v = otelctx__get(c, "service.name")))
		assert(strlen(v) <= OTELCTX_VALUE_MAX);
	if ((v = otelctx__schema_version(c)))
		assert(strlen(v) <= OTELCTX_VALUE_MAX);
	assert(otelctx__key_count(c) <= OTELCTX_MAX_KEYS);
	for (uint32_t i = 0; i < otelctx__key_count(c); i++)
		assert(otelctx__key(c, i));
	assert(!otelctx__key(c, otelctx__key_count(c)));
	(void)otelctx__has_key_map(c);
	(void)otelctx__key_map_bad(c);
	(void)otelctx__skipped(c);
	(void)otelctx__truncated(c);
}

static void fuzz_decode(const uint8_t *data, size_t size)
{
	struct otelctx *c = otelctx__new();
	uint8_t *copy = malloc(size ? size : 1);	/* exactly the payload: overreads show */
	int err;

	assert(c && copy);
	memcpy(copy, data, size);
	err = otelctx__decode(c, copy, size);
	assert(err == 0 || err == -EBADMSG || err == -ENOMEM);
	check_ctx(c);
	/* Decoding again into the same context replaces what it held. */
	err = otelctx__decode(c, copy, size / 2);
	check_ctx(c);
	free(copy);
	otelctx__free(c);
}

/* cfg & 2: payload_ptr points at the payload (the fuzzer cannot guess an address); cfg & 4:
 * payload_size is the payload's; cfg & 8: a span table is mapped too. */
static void fuzz_read(uint8_t cfg, const uint8_t *data, size_t size)
{
	struct runtime_env env = { .ctx_map_fd = -1 };
	struct vma vmas[2] = {
		{ .kind = VMA_ANON, .path = ctx_path },
		{ .kind = VMA_MEMFD, .path = table_path },
	};
	struct proc p = { .pid = (uint32_t)getpid(), .dir_fd = self_fd, .root_fd = -1,
			  .nspid = self_nspid, .vmas = vmas, .nvmas = (cfg & 8) ? 2 : 1, .env = &env };
	struct otelctx_header h = { 0 };
	const struct otelctx_attr *attrs;
	size_t hlen = size < sizeof(h) ? size : sizeof(h), plen = size - hlen, n;
	uint8_t *payload = malloc(plen ? plen : 1);
	const char *name;
	char desc[512];
	void *state;

	assert(payload);
	memcpy(&h, data, hlen);
	memcpy(payload, data + hlen, plen);
	if (cfg & 2)
		h.payload_ptr = (uint64_t)(uintptr_t)payload;
	if (cfg & 4)
		h.payload_size = (uint32_t)plen;
	memset(ctx_page, 0, PAGE);
	memcpy(ctx_page, &h, sizeof(h));
	vmas[0].start = (uint64_t)(uintptr_t)ctx_page;
	vmas[0].end = vmas[0].start + PAGE;
	vmas[0].pgoff = vmas[0].start >> 12;
	vmas[1].start = (uint64_t)(uintptr_t)table;
	vmas[1].end = vmas[1].start + PAGE;

	p.maps_read_ns = now_ns();	/* just read: the runtime does not re-read them */
	assert(otelctx_runtime.detect(&p));
	state = otelctx_runtime.attach(&p, &env);
	assert(state);
	p.rt[RT_OTELCTX].state = state;
	/* Twice: the second read finds published_at_ns unchanged. */
	(void)otelctx_runtime.poll(&p, state, &env);
	(void)otelctx_runtime.poll(&p, state, &env);
	if ((name = otelctx__service_name(&p)))
		assert(strlen(name) <= OTELCTX_VALUE_MAX);
	if (!otelctx__resource(&p, &attrs, &n))
		check_attrs(attrs, n);
	otelctx_runtime.describe(&p, state, desc, sizeof(desc));
	assert(strlen(desc) < sizeof(desc));
	otelctx_runtime.detach(&p, state, &env);
	p.rt[RT_OTELCTX].state = NULL;
	free(payload);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	/* data[0] & 1: the payload alone; else header (32 bytes) and payload, read from memory. */
	if (data[0] & 1)
		fuzz_decode(data + 1, size - 1);
	else
		fuzz_read(data[0], data + 1, size - 1);
	return 0;
}
