/* abi_probe.c: prints the hook ABI of bpf/profiler.h (and spanctx.h's flag) as "NAME VALUE" lines, for
 * AbiTests.cs, which compiles it against the headers (the repository's, or a changed copy) and
 * compares every value with the C# mirror in hook/src/Table.cs and Record.cs. */
#include <stddef.h>
#include <stdio.h>

#include "profiler.h"
#include "spanctx.h"

#define I(x)	  printf("%s %lld\n", #x, (long long)(x))
#define S(x)	  printf("%s %s\n", #x, x)
#define OFF(s, f) printf("offsetof(%s.%s) %zu\n", #s, #f, offsetof(struct s, f))
#define SIZE(s)	  printf("sizeof(%s) %zu\n", #s, sizeof(struct s))

int main(void)
{
	I(SP_CTX_ABI);
	S(SP_CTX_MAGIC);
	S(SP_CTX_MEMFD_NAME);
	I(SP_PRCTL_ANNOUNCE);
	I(SP_CTX_MAX);
	I(SP_CTX_HEAD);
	I(SP_CTX_OFF_TRACE_ID);
	I(SP_CTX_OFF_SPAN_ID);
	I(SP_CTX_OFF_VALID);
	I(SP_CTX_OFF_FLAGS);
	I(SP_CTX_OFF_ATTRS_LEN);
	I(SP_CTX_PROBES);
	I(SP_USER_HZ);
	I(SP_CTX_MAX_SLOTS);
	I(SP_CTX_MAX_KEYS);
	I(SP_SLOT_HEAD);
	I(SP_SLOT_HASH(1));
	I(SP_KEY_LOCAL_ROOT_SPAN_ID);
	I(SP_KEY_SPAN_NAME);
	I(SP_KEY_USER);
	I(SPANCTX_F_DISABLED);
	SIZE(sp_ctx_header);
	OFF(sp_ctx_header, magic);
	OFF(sp_ctx_header, abi_version);
	OFF(sp_ctx_header, header_size);
	OFF(sp_ctx_header, slot_count);
	OFF(sp_ctx_header, slot_size);
	OFF(sp_ctx_header, slots_offset);
	OFF(sp_ctx_header, keys_offset);
	OFF(sp_ctx_header, keys_size);
	OFF(sp_ctx_header, keys_count);
	OFF(sp_ctx_header, pid);
	OFF(sp_ctx_header, flags);
	OFF(sp_ctx_header, published_at_ns);
	OFF(sp_ctx_header, slots_full);
	OFF(sp_ctx_header, reserved);
	SIZE(sp_slot_head);
	OFF(sp_slot_head, tid);
	OFF(sp_slot_head, reserved);
	OFF(sp_slot_head, start_ticks);
	return 0;
}
