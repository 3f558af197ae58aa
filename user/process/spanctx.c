/* spanctx.c: find, validate and decode the span-context table of a hooked .NET process (hook ABI v1). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"
#include "proctab.h"
#include "spanctx.h"
#include "util.h"

#define MEMFD_PATH "/memfd:" SP_CTX_MEMFD_NAME
#define MEMFD_PATH_DELETED MEMFD_PATH " (deleted)"
#define SLOT_SIZE_MAX ((uint32_t)SP_CTX_SLOT_SIZE_MAX)
#define KEYS_SIZE_MAX (64u << 10)

_Static_assert(SP_SLOT_HEAD + SP_CTX_HEAD <= SLOT_SIZE_MAX, "slot bounds");

struct spanctx_keys {
	uint32_t count;
	uint32_t bad;
	uint32_t off[SP_CTX_MAX_KEYS];
	char *names;		/* NUL-terminated names, back to back: as long as they are */
};

int spanctx__is_table_path(const char *path)
{
	return !strcmp(path, MEMFD_PATH_DELETED) || !strcmp(path, MEMFD_PATH);
}

int spanctx__find_table(const struct vma *v, size_t n, uint64_t *start, uint64_t *end)
{
	const struct vma *found = NULL;

	for (size_t i = 0; i < n; i++) {
		if (v[i].kind != VMA_MEMFD || !spanctx__is_table_path(v[i].path))
			continue;
		/* One table per process, mapped whole, by construction. */
		if (found || v[i].pgoff != 0)
			return -EBADMSG;
		found = &v[i];
	}
	if (!found)
		return -ENOENT;
	*start = found->start;
	*end = found->end;
	return 0;
}

int spanctx__find_mapping(const char *maps, size_t len, uint64_t *start, uint64_t *end)
{
	struct vma *v;
	size_t n;
	int err;

	if (!maps || !start || !end)
		return -EINVAL;
	err = maps__parse(maps, len, &v, &n, NULL);
	if (err)
		return err;
	err = spanctx__find_table(v, n, start, end);
	maps__free(v, n);
	return err;
}

int spanctx__check_header(const void *hdr, size_t hdr_len, uint64_t map_start, uint64_t map_end,
			  struct spanctx_table *out)
{
	struct sp_ctx_header h;
	static const char zero[8];
	uint64_t map_len, slots_end, keys_end;

	if (!hdr || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (hdr_len < sizeof(h) || map_end <= map_start)
		return -EBADMSG;
	map_len = map_end - map_start;
	if (map_len < sizeof(h))
		return -EBADMSG;
	memcpy(&h, hdr, sizeof(h));

	if (!memcmp(h.magic, zero, sizeof(zero)))
		return -EAGAIN;		/* the hook writes the magic last */
	if (memcmp(h.magic, SP_CTX_MAGIC, sizeof(h.magic)))
		return -EBADMSG;
	if (h.abi_version != SP_CTX_ABI)
		return -EPROTONOSUPPORT;
	if (h.header_size < sizeof(h) || h.header_size > map_len)
		return -EBADMSG;
	if (h.slot_count == 0 || (h.slot_count & (h.slot_count - 1)) || h.slot_count > SP_CTX_MAX_SLOTS)
		return -EBADMSG;
	if (h.slot_size % 8 || h.slot_size < SP_SLOT_HEAD + SP_CTX_HEAD || h.slot_size > SLOT_SIZE_MAX)
		return -EBADMSG;
	if (h.slots_offset % 4096 || h.slots_offset < h.header_size)
		return -EBADMSG;
	slots_end = (uint64_t)h.slots_offset + (uint64_t)h.slot_count * h.slot_size;
	if (slots_end > map_len)
		return -EBADMSG;
	keys_end = (uint64_t)h.keys_offset + h.keys_size;
	if (h.keys_offset < h.header_size || keys_end > map_len || h.keys_size > KEYS_SIZE_MAX)
		return -EBADMSG;
	if (!(keys_end <= h.slots_offset || h.keys_offset >= slots_end))
		return -EBADMSG;	/* keys overlapping slots */
	if (h.keys_count > SP_CTX_MAX_KEYS)
		return -EBADMSG;

	out->map_start = map_start;
	out->map_end = map_end;
	out->keys_addr = map_start + h.keys_offset;
	out->keys_size = h.keys_size;
	out->keys_count = h.keys_count;
	out->ns_pid = h.pid;
	out->flags = h.flags;
	out->published_at_ns = h.published_at_ns;
	out->slots_full = h.slots_full;
	out->proc.slots_addr = map_start + h.slots_offset;
	out->proc.slot_count = h.slot_count;
	out->proc.slot_size = h.slot_size;
	if (h.flags & SPANCTX_F_DISABLED)
		return -ENOENT;
	return 0;
}

int spanctx__find(int dir_fd, struct sp_ctx_proc *proc, struct spanctx_table *tbl)
{
	char *maps = NULL;
	long maps_len;
	uint64_t start, end;
	int err, nspid;

	if (dir_fd < 0 || !proc)
		return -EINVAL;
	maps_len = read_file_alloc(dir_fd, "maps", PROC_MAPS_MAX, &maps, NULL);
	if (maps_len < 0)
		return maps_len;
	err = spanctx__find_mapping(maps, maps_len, &start, &end);
	free(maps);
	if (err)
		return err;
	if ((err = procfs__nspid(dir_fd, &nspid)))
		return err;
	return spanctx__open(dir_fd, nspid, start, end, proc, tbl);
}

int spanctx__open(int dir_fd, int nspid, uint64_t start, uint64_t end, struct sp_ctx_proc *proc,
		  struct spanctx_table *tbl)
{
	struct spanctx_table t;
	struct sp_ctx_header h;
	int err;

	if (dir_fd < 0 || !proc)
		return -EINVAL;
	err = procfs__read_mem(dir_fd, start, &h, sizeof(h));
	if (err)
		return err;
	err = spanctx__check_header(&h, sizeof(h), start, end, &t);
	if (tbl)
		*tbl = t;
	if (err)
		return err;
	if ((uint32_t)nspid != t.ns_pid)
		return -EBADMSG;	/* inherited through fork(), or forged */
	*proc = t.proc;
	return 0;
}

uint32_t spanctx__probe(uint32_t tid, uint32_t i, uint32_t slot_count)
{
	return (SP_SLOT_HASH(tid) + i) & (slot_count - 1);
}

struct spanctx_keys *spanctx_keys__new(void)
{
	return calloc(1, sizeof(struct spanctx_keys));
}

void spanctx_keys__free(struct spanctx_keys *keys)
{
	if (keys)
		free(keys->names);
	free(keys);
}

int spanctx_keys__parse(struct spanctx_keys *keys, const uint8_t *buf, size_t len, uint32_t count)
{
	size_t pos = 0, npos = 0;
	uint32_t i;
	char *names;

	if (!keys || (!buf && len))
		return -EINVAL;
	/* Every name takes its length byte's room in buf: len + 1 bytes hold them all. */
	if (!(names = malloc(len + 1)))
		return -ENOMEM;
	free(keys->names);
	keys->names = names;
	keys->count = 0;
	keys->bad = 0;
	if (count > SP_CTX_MAX_KEYS) {
		keys->bad += count - SP_CTX_MAX_KEYS;
		count = SP_CTX_MAX_KEYS;
	}
	for (i = 0; i < count; i++) {
		uint8_t n;

		if (pos >= len) {
			keys->bad += count - i;
			break;
		}
		n = buf[pos];
		if ((size_t)n > len - pos - 1) {
			keys->bad += count - i;	/* overruns: this and every later entry are lost */
			break;
		}
		keys->off[i] = (uint32_t)npos;
		memcpy(keys->names + npos, buf + pos + 1, n);
		/* A NUL inside a name would silently shorten it for C callers: make it visible. */
		for (size_t j = 0; j < n; j++)
			if (keys->names[npos + j] == '\0')
				keys->names[npos + j] = '?';
		keys->names[npos + n] = '\0';
		npos += (size_t)n + 1;
		pos += (size_t)n + 1;
		keys->count = i + 1;
	}
	return (int)keys->count;
}

int spanctx_keys__load(struct spanctx_keys *keys, int dir_fd, const struct spanctx_table *tbl)
{
	struct sp_ctx_header h;
	uint8_t *buf = NULL;
	int mem, err;

	if (!keys || !tbl || tbl->keys_size > KEYS_SIZE_MAX)
		return -EINVAL;
	mem = procfs__open_mem(dir_fd);
	if (mem < 0)
		return mem;
	err = procfs__pread_mem(mem, tbl->map_start, &h, sizeof(h));
	if (err)
		goto close_mem;
	if (h.keys_count > SP_CTX_MAX_KEYS) {
		err = -EBADMSG;
		goto close_mem;
	}
	buf = malloc(tbl->keys_size ? tbl->keys_size : 1);
	if (!buf) {
		err = -ENOMEM;
		goto close_mem;
	}
	err = procfs__pread_mem(mem, tbl->keys_addr, buf, tbl->keys_size);
	if (!err)
		err = spanctx_keys__parse(keys, buf, tbl->keys_size, h.keys_count);
	free(buf);
close_mem:
	close(mem);
	return err;
}

uint32_t spanctx_keys__count(const struct spanctx_keys *keys)
{
	return keys ? keys->count : 0;
}

uint32_t spanctx_keys__bad(const struct spanctx_keys *keys)
{
	return keys ? keys->bad : 0;
}

const char *spanctx_keys__name(const struct spanctx_keys *keys, uint32_t index)
{
	if (!keys || index >= keys->count)
		return NULL;
	return keys->names + keys->off[index];
}

static void hex(char *dst, const uint8_t *src, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		dst[2 * i] = digits[src[i] >> 4];
		dst[2 * i + 1] = digits[src[i] & 15];
	}
	dst[2 * n] = '\0';
}

static void copy_value(char *dst, const uint8_t *src, uint8_t n)
{
	memcpy(dst, src, n);
	dst[n] = '\0';
}

int spanctx__decode(const uint8_t *rec, size_t len, const struct spanctx_keys *keys,
		    struct spanctx_labels *out)
{
	struct spanctx_labels_head *h;
	size_t attrs, end, p;

	if (!out)
		return -EINVAL;
	/* The head only: the buffers are written as values are found (this runs for every sample
	 * of a hooked process). */
	h = &out->head;
	memset(h, 0, sizeof(*h));
	if (!rec || len < SP_CTX_HEAD)
		return -EINVAL;
	if (len > SP_CTX_MAX)
		len = SP_CTX_MAX;
	hex(h->trace_id, rec, 16);
	hex(h->span_id, rec + 16, 8);
	for (int i = 0; i < 16; i++)
		h->has_span |= rec[i] != 0;
	if (!rec[SP_CTX_OFF_VALID])
		return -EAGAIN;
	h->trace_flags = rec[SP_CTX_OFF_FLAGS];

	attrs = (size_t)rec[SP_CTX_OFF_ATTRS_LEN] | (size_t)rec[SP_CTX_OFF_ATTRS_LEN + 1] << 8;
	if (attrs > len - SP_CTX_HEAD) {
		h->truncated = 1;
		attrs = len - SP_CTX_HEAD;
	}
	p = SP_CTX_HEAD;
	end = SP_CTX_HEAD + attrs;
	while (p < end) {
		uint8_t key, n;
		const uint8_t *v;

		if (end - p < 2) {
			h->skipped++;	/* a lone byte: half an attribute header */
			break;
		}
		key = rec[p];
		n = rec[p + 1];
		p += 2;
		if (n > end - p) {
			h->skipped++;	/* overruns the record: nothing after it can be trusted */
			break;
		}
		v = rec + p;
		p += n;

		if (key == SP_KEY_LOCAL_ROOT_SPAN_ID) {
			int ok = n == 16;

			for (int i = 0; ok && i < 16; i++)
				ok = isxdigit(v[i]);
			if (!ok) {
				h->skipped++;
				continue;
			}
			for (int i = 0; i < 16; i++)
				h->local_root_span_id[i] = (char)tolower(v[i]);
			h->local_root_span_id[16] = '\0';
		} else if (key == SP_KEY_SPAN_NAME) {
			copy_value(out->span_name, v, n);
			h->span_name_len = n;
		} else {
			const char *name = spanctx_keys__name(keys, key);
			struct spanctx_label *l = NULL;

			if (!name) {
				h->unknown_keys++;
				continue;
			}
			for (uint32_t i = 0; i < h->n_labels; i++)
				if (out->labels[i].key_index == key)
					l = &out->labels[i];
			if (!l) {
				if (h->n_labels == SPANCTX_MAX_LABELS) {
					h->skipped++;
					continue;
				}
				l = &out->labels[h->n_labels++];
			}
			l->key = name;
			l->key_index = key;
			l->len = n;
			copy_value(l->value, v, n);
		}
	}
	return 0;
}
