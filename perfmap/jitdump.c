/* jitdump.c: incremental reader of jit-<pid>.dump (Linux perf jitdump format, as .NET writes it). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perfmap_int.h"

/*
 * Format (tools/perf/util/jitdump.h; .NET's writer is pal/src/misc/perfjitdump.cpp, checked
 * against runtime 10.0.12): a header {u32 magic, version, total_size, elf_mach, pad1, pid;
 * u64 timestamp, flags}, then records {u32 id, total_size; u64 timestamp} + body. .NET writes
 * only JIT_CODE_LOAD: {u32 pid, tid; u64 vma, code_addr, code_size, code_index}, the
 * NUL-terminated name, then code_size code bytes, which we skip without buffering.
 */
#define JD_MAGIC		0x4A695444u
#define JD_MAGIC_SWAPPED	0x4454694Au
#define JD_VERSION		1
#define JD_HDR_PREFIX		12	/* magic, version, total_size */
#define JD_HDR_MIN		40
#define JD_HDR_MAX		4096
#define JD_REC_HDR		16
#define JD_LOAD_FIXED		40	/* code-load body before the name */
#define JIT_CODE_LOAD		0
#define JITDUMP_FLAGS_ARCH_TIMESTAMP	1ULL

enum jd_phase {
	JD_HEADER = 0,	/* assembling the file header */
	JD_RECHDR,	/* assembling a record header */
	JD_LOAD,	/* assembling a code-load body up to the end of the name */
	JD_SKIP,	/* skipping the rest of a record */
	JD_STOPPED,	/* framing lost: everything after is ignored */
	JD_BAD,		/* not a jitdump we can read: every feed fails */
};

static uint32_t rd32(const struct jd_reader *jd, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return jd->swap ? __builtin_bswap32(v) : v;
}

static uint64_t rd64(const struct jd_reader *jd, const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return jd->swap ? __builtin_bswap64(v) : v;
}

void jd_reader_free(struct jd_reader *jd)
{
	free(jd->pend);
	jd->pend = NULL;
	jd->pend_len = jd->pend_cap = 0;
}

uint64_t jd_reader_partial(const struct jd_reader *jd)
{
	switch (jd->phase) {
	case JD_HEADER:
	case JD_RECHDR:
		return jd->pend_len;
	case JD_LOAD:
		return JD_REC_HDR + jd->pend_len;
	case JD_SKIP:
		return jd->rec_size - jd->skip_left;
	default:
		return 0;
	}
}

static int pend_reserve(struct jd_reader *jd, size_t want)
{
	size_t cap = jd->pend_cap ? jd->pend_cap : 256;
	uint8_t *p;

	if (want <= jd->pend_cap)
		return 0;
	while (cap < want)
		cap *= 2;
	p = realloc(jd->pend, cap);
	if (!p)
		return -ENOMEM;
	jd->pend = p;
	jd->pend_cap = cap;
	return 0;
}

/* Move input into pend until it holds want bytes. Returns 1 when it does, 0 when the input
 * ran out first, -ENOMEM. */
static int gather(struct jd_reader *jd, size_t want, const uint8_t **p, const uint8_t *end)
{
	size_t n;

	if (jd->pend_len >= want)
		return 1;
	if (pend_reserve(jd, want))
		return -ENOMEM;
	n = want - jd->pend_len;
	if (n > (size_t)(end - *p))
		n = (size_t)(end - *p);
	memcpy(jd->pend + jd->pend_len, *p, n);
	jd->pend_len += n;
	*p += n;
	return jd->pend_len == want;
}

/* The first 12 bytes: endianness, version, header size. */
static int header_prefix(struct perfmap *pm)
{
	struct jd_reader *jd = &pm->jd;
	uint32_t magic, version, size;

	memcpy(&magic, jd->pend, sizeof(magic));
	if (magic == JD_MAGIC_SWAPPED)
		jd->swap = true;
	else if (magic != JD_MAGIC)
		return -EINVAL;
	version = rd32(jd, jd->pend + 4);
	size = rd32(jd, jd->pend + 8);
	if (version != JD_VERSION || size < JD_HDR_MIN || size > JD_HDR_MAX)
		return -EINVAL;
	jd->hdr_size = size;
	return 0;
}

static void header_done(struct perfmap *pm)
{
	struct jd_reader *jd = &pm->jd;
	uint64_t flags = rd64(jd, jd->pend + 32);

	pm->st.jitdump_version = rd32(jd, jd->pend + 4);
	pm->st.jitdump_pid = rd32(jd, jd->pend + 20);
	pm->st.jitdump_flags = flags;
	/* CPU-counter times cannot be compared with bpf_ktime_get_ns(): drop them (load_ns 0),
	 * records then rank by arrival like perf map lines. */
	jd->arch_ts = flags & JITDUMP_FLAGS_ARCH_TIMESTAMP;
	jd->pend_len = 0;
	jd->phase = JD_RECHDR;
}

static void record_header(struct perfmap *pm)
{
	struct jd_reader *jd = &pm->jd;

	jd->rec_id = rd32(jd, jd->pend);
	jd->rec_size = rd32(jd, jd->pend + 4);
	jd->rec_ts = rd64(jd, jd->pend + 8);
	jd->pend_len = 0;
	if (jd->rec_size < JD_REC_HDR || jd->rec_size > pm->lim.max_record) {
		/* The stream has no sync marker: any "next record" we guessed could be code bytes
		 * read as a record. Stop rather than invent entries. */
		pm->st.malformed++;
		pm->st.jitdump_stopped = 1;
		jd->phase = JD_STOPPED;
		perfmap_jitdump_stopped(pm);
		return;
	}
	jd->skip_left = jd->rec_size - JD_REC_HDR;
	if (jd->rec_id != JIT_CODE_LOAD) {
		pm->st.skipped++;
		jd->phase = jd->skip_left ? JD_SKIP : JD_RECHDR;
	} else if (jd->rec_size < JD_REC_HDR + JD_LOAD_FIXED + 1) {
		pm->st.malformed++;	/* too small for a name: framing is intact, skip it */
		jd->phase = jd->skip_left ? JD_SKIP : JD_RECHDR;
	} else {
		jd->phase = JD_LOAD;
	}
}

/* Assemble the code-load body up to the name's NUL. Returns 1 when the record was handled, 0
 * when more input is needed, -ENOMEM. */
static int load_body(struct perfmap *pm, const uint8_t **p, const uint8_t *end)
{
	struct jd_reader *jd = &pm->jd;
	size_t body = jd->rec_size - JD_REC_HDR;
	size_t limit = JD_LOAD_FIXED + (size_t)pm->lim.max_line + 1;
	size_t take;
	const uint8_t *nul;
	int r;

	if (limit > body)
		limit = body;
	r = gather(jd, JD_LOAD_FIXED, p, end);
	if (r <= 0)
		return r;
	take = limit - jd->pend_len;
	if (take > (size_t)(end - *p))
		take = (size_t)(end - *p);
	nul = memchr(*p, '\0', take);
	if (nul)
		take = (size_t)(nul - *p) + 1;
	if (pend_reserve(jd, jd->pend_len + take))
		return -ENOMEM;
	memcpy(jd->pend + jd->pend_len, *p, take);
	jd->pend_len += take;
	*p += take;
	if (!nul) {
		if (jd->pend_len < limit)
			return 0;
		if (limit == body)
			pm->st.malformed++;	/* the name runs past the record */
		else
			pm->st.capped++;	/* name longer than max_line */
	} else {
		uint64_t code_addr = rd64(jd, jd->pend + 16);
		uint64_t code_size = rd64(jd, jd->pend + 24);
		uint64_t load_ns = jd->arch_ts || jd->rec_ts <= pm->jd_replay_until ? 0 : jd->rec_ts;

		r = perfmap_add(pm, code_addr, code_size, load_ns, (const char *)jd->pend + JD_LOAD_FIXED,
				jd->pend_len - JD_LOAD_FIXED - 1, PERFMAP_SRC_JITDUMP);
		if (r)
			return r;
	}
	jd->skip_left = body - jd->pend_len;
	jd->pend_len = 0;
	jd->phase = jd->skip_left ? JD_SKIP : JD_RECHDR;
	return 1;
}

int perfmap__feed_jitdump(struct perfmap *pm, const void *buf, size_t len)
{
	struct jd_reader *jd;
	const uint8_t *p, *end;
	int r = 1;

	if (!pm || (!buf && len))
		return -EINVAL;
	jd = &pm->jd;
	if (jd->phase == JD_BAD)
		return -EINVAL;
	len = perfmap_file_room(pm, &jd->fed, &jd->capped_file, len);
	for (p = buf, end = p + len; p < end && r > 0;) {
		switch (jd->phase) {
		case JD_HEADER:
			r = gather(jd, jd->hdr_size ? jd->hdr_size : JD_HDR_PREFIX, &p, end);
			if (r <= 0)
				break;
			if (!jd->hdr_size) {
				if (header_prefix(pm)) {
					pm->st.malformed++;
					jd->phase = JD_BAD;
					jd_reader_free(jd);
					return -EINVAL;
				}
			} else {
				header_done(pm);
			}
			break;
		case JD_RECHDR:
			r = gather(jd, JD_REC_HDR, &p, end);
			if (r > 0)
				record_header(pm);
			break;
		case JD_LOAD:
			r = load_body(pm, &p, end);
			break;
		case JD_SKIP: {
			uint64_t n = jd->skip_left;

			if (n > (uint64_t)(end - p))
				n = (uint64_t)(end - p);
			p += n;
			jd->skip_left -= n;
			if (!jd->skip_left)
				jd->phase = JD_RECHDR;
			break;
		}
		default:	/* JD_STOPPED */
			p = end;
			break;
		}
	}
	return r < 0 ? r : 0;
}
