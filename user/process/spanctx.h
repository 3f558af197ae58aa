/* spanctx.h: find, validate and decode the span-context table of a hooked .NET process (hook ABI v1). */
#ifndef SPANPROF_SPANCTX_H
#define SPANPROF_SPANCTX_H

#include <stddef.h>
#include <stdint.h>

#include "profiler.h"

/*
 * Error codes, distinct so the caller can count them apart:
 *   -ENOENT          the process has no table (not .NET, hook not loaded, or the hook disabled itself)
 *   -EAGAIN          the table exists but its header is not published yet: try again later
 *   -EPROTONOSUPPORT the table speaks another hook ABI version
 *   -EBADMSG         the table is invalid (anything a hostile process could forge is checked)
 * Anything else is an I/O error from /proc/<pid> (-ESRCH, -ENOENT: gone; -EPERM, -EACCES: no
 * access; -EFAULT: the range is not mapped, ...).
 *
 * The process is given as dir_fd, its open /proc/<pid> directory (struct proc's dir_fd, or
 * procfs__open), never as a pid number: memory is read with procfs__read_mem, pread on
 * <dir_fd>/mem opened for the read and closed after, so a reused pid is never read.
 */

#define SPANCTX_F_DISABLED 1u		/* header.flags: the hook gave up and freed every slot */
#define SPANCTX_MAX_LABELS 32		/* user labels kept per decoded record; more are counted */

/* What spanctx__find() learnt about a table; proc is what the BPF map ctx_procs wants. */
struct spanctx_table {
	uint64_t map_start;		/* the mapping (== header address) */
	uint64_t map_end;
	uint64_t keys_addr;
	uint32_t keys_size;
	uint32_t keys_count;		/* at the time the header was read */
	uint32_t ns_pid;		/* header.pid: the pid inside the process's pid namespace */
	uint32_t flags;
	uint64_t published_at_ns;
	uint64_t slots_full;
	struct sp_ctx_proc proc;	/* proc_start_ticks is left 0: the caller knows the process start */
};

struct vma;

/* Whether a /proc/<pid>/maps path names the hook's table ("/memfd:spanprof-ctx (deleted)"). */
int spanctx__is_table_path(const char *path);

/*
 * The table's mapping among a process's mappings (user/proctab.h): 0 and *start, *end set;
 * -ENOENT when there is none; -EBADMSG when there is more than one or it does not start at
 * file offset 0. spanctx__find_mapping does the same on /proc/<pid>/maps text (len bytes, need
 * not be NUL-terminated; a last line without a newline counts).
 */
int spanctx__find_table(const struct vma *v, size_t n, uint64_t *start, uint64_t *end);
int spanctx__find_mapping(const char *maps, size_t len, uint64_t *start, uint64_t *end);

/*
 * Validates a header (hdr_len bytes read from map_start) against the mapping [map_start,
 * map_end) and fills *out. Returns 0, -EAGAIN, -EPROTONOSUPPORT, -EBADMSG or -ENOENT (disabled).
 */
int spanctx__check_header(const void *hdr, size_t hdr_len, uint64_t map_start, uint64_t map_end,
			  struct spanctx_table *out);

/*
 * Finds and validates the table of the process whose /proc/<pid> is dir_fd: maps, header, and
 * header.pid against the process's own namespace pid (a table inherited through fork() belongs
 * to the parent). Fills *proc and, when tbl is not NULL, *tbl. Returns 0 or one of the codes
 * above.
 */
int spanctx__find(int dir_fd, struct sp_ctx_proc *proc, struct spanctx_table *tbl);
/* The same once the mapping [start, end) and the namespace pid are known. */
int spanctx__open(int dir_fd, int nspid, uint64_t start, uint64_t end, struct sp_ctx_proc *proc,
		  struct spanctx_table *tbl);

/* Slot index of probe i (0 <= i < SP_CTX_PROBES) for tid in a table of slot_count slots. */
uint32_t spanctx__probe(uint32_t tid, uint32_t i, uint32_t slot_count);

/* Attribute key names of a table: index -> name. Opaque. */
struct spanctx_keys;

/* Constructor: returns NULL and sets errno. */
struct spanctx_keys *spanctx_keys__new(void);
void spanctx_keys__free(struct spanctx_keys *keys);	/* NULL-safe */

/*
 * Replaces the names with the first count entries ({u8 len, bytes}) of buf. Stops at an entry
 * that overruns buf or past SP_CTX_MAX_KEYS (counted in spanctx_keys__bad()). Returns the number
 * of names now known, or -EINVAL.
 */
int spanctx_keys__parse(struct spanctx_keys *keys, const uint8_t *buf, size_t len, uint32_t count);

/* Re-reads keys_count and the key table of a found table from the process whose /proc/<pid> is
 * dir_fd (one open of its mem for both reads). Count or -errno. */
int spanctx_keys__load(struct spanctx_keys *keys, int dir_fd, const struct spanctx_table *tbl);

uint32_t spanctx_keys__count(const struct spanctx_keys *keys);
uint32_t spanctx_keys__bad(const struct spanctx_keys *keys);
/* Name of key index, or NULL when unknown. Valid until the next parse/load/free. */
const char *spanctx_keys__name(const struct spanctx_keys *keys, uint32_t index);

struct spanctx_label {
	const char *key;		/* from the keys passed to decode: valid while they are */
	uint8_t key_index;
	uint8_t len;			/* value bytes (value is also NUL-terminated) */
	char value[256];
};

/*
 * One decoded OTEP 4947 record, in two parts. head is what spanctx__decode resets whole on every
 * call (a field added to it is reset with the rest); the buffers after it are 8 KB, too much to
 * clear for every sample, and are written before they are read: span_name when
 * head.span_name_len is not 0, labels[0 .. head.n_labels). Nothing else of them is to be read.
 */
struct spanctx_labels {
	struct spanctx_labels_head {
		int has_span;			/* trace id not all zero */
		uint8_t trace_flags;
		char trace_id[33];		/* 32 lowercase hex digits */
		char span_id[17];
		char local_root_span_id[17];	/* "" when absent or malformed */
		uint8_t span_name_len;		/* bytes in span_name; 0: absent */
		uint32_t n_labels;
		uint32_t unknown_keys;		/* attributes whose key has no name yet: reload keys,
						 * decode again */
		uint32_t skipped;		/* malformed, overrunning or over-cap attributes */
		int truncated;			/* attrs_data_size claimed more than was given */
	} head;
	char span_name[256];			/* NUL-terminated */
	struct spanctx_label labels[SPANCTX_MAX_LABELS];
};

/*
 * Decodes the record bytes the sampler copied (head plus attributes, len bytes; more than
 * SP_CTX_MAX are ignored). keys may be NULL (every user label is then unknown). A user key that
 * appears twice keeps its last value. Returns 0; -EINVAL when len < SP_CTX_HEAD or an argument is
 * NULL; -EAGAIN when the valid flag is clear (caught mid-write). out->head is always set (all zero
 * on -EINVAL).
 */
int spanctx__decode(const uint8_t *rec, size_t len, const struct spanctx_keys *keys,
		    struct spanctx_labels *out);

#endif /* SPANPROF_SPANCTX_H */
