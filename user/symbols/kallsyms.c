/* kallsyms.c: parse /proc/kallsyms into a sorted table of kernel text symbols. */
#include "kallsyms.h"
#include "util.h"
#include "vec.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define MAX_MODULE_NAME 255u	/* MODULE_NAME_LEN is 56; "[__builtin__ftrace]" and friends fit */
#define MAX_MODULES	65535u

/*
 * About 4 bytes a symbol (the kernel has 100,000s) and its deflated name: its start is
 * base + off[i] (all of x86-64's kernel text lies in its top 2 GiB; the full addresses are kept,
 * in addr[], only when the symbols span 4 GiB or more). Nearly every symbol ends where the next
 * one starts: one bit says so, and the few others (the last of a module, one before a data
 * symbol) have their size in a short list. Modules come in runs of symbols: one entry a run.
 * The names are deflated in blocks of KSYMS_BLOCK (3 MB of them here take 0.8): a lookup
 * inflates one block and finds the name by its place in it, and every kernel address is looked
 * up once (the symbolizer keeps what it found).
 */
#define KSYMS_BLOCK	32
#define BLOCK_RAW_MAX	(KSYMS_BLOCK * (KSYMS_MAX_LINE + 1))

struct ksyms {
	uint64_t base;
	uint32_t *off;		/* start of symbol i - base; NULL when addr[] holds the starts */
	uint64_t *addr;
	uint64_t *to_next;	/* bit i: symbol i ends where symbol i + 1 starts */
	uint32_t *other_idx;	/* the other symbols, ascending ... */
	uint32_t *other_size;	/* ... and their sizes (to the end, exclusive; at most UINT32_MAX) */
	size_t n_other;
	uint32_t *run_from;	/* symbols [run_from[r], run_from[r + 1]) are in module run_mod[r] */
	uint16_t *run_mod;	/* index into modules; 0 = vmlinux */
	size_t n_runs;
	size_t n;
	char *pool;		/* while building: every name; then the deflated blocks */
	uint32_t *blocks;	/* block k is pool[blocks[k], blocks[k + 1]) */
	char **modules;		/* modules[0] is NULL (vmlinux) */
	size_t n_modules;
	struct ksyms_stats stats;
};

static inline uint64_t start_of(const struct ksyms *ks, size_t i)
{
	return ks->off ? ks->base + ks->off[i] : ks->addr[i];
}

/* A kept symbol while the table is built. */
struct ksym {
	uint64_t addr;
	uint32_t name_off;	/* into pool */
	uint32_t size;
	uint16_t module;
};

/* A parsed line while the table is built. Non-text symbols are kept as boundaries only: they
 * end the text symbol before them. */
struct ent {
	uint64_t addr;
	uint32_t name_off;
	uint32_t name_len;
	uint32_t index;
	uint32_t module;
	uint8_t is_text;
	uint8_t rank;		/* T 0, W 1, t 2, w 3: at one address the global name wins */
};

struct builder {
	struct ksyms *ks;
	struct ksym *syms;	/* the kept symbols, in address order */
	struct ent *ents;
	size_t n, cap;
	size_t pool_len, pool_cap;
	size_t modules_cap;
	uint32_t last_module;	/* module lines come in runs: one compare finds the index */
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int type_rank(char t, int *is_text)
{
	*is_text = 1;
	switch (t) {
	case 'T': return 0;
	case 'W': return 1;
	case 't': return 2;
	case 'w': return 3;
	}
	*is_text = 0;
	return 4;
}

/* Index of module name (interned), 0 when name is empty. Returns -ENOMEM / -E2BIG. */
static int module_index(struct builder *b, const char *name, size_t len, uint32_t *out)
{
	struct ksyms *ks = b->ks;
	size_t i;
	char *copy;

	if (len == 0) {
		*out = 0;
		return 0;
	}
	if (b->last_module && strlen(ks->modules[b->last_module]) == len &&
	    memcmp(ks->modules[b->last_module], name, len) == 0) {
		*out = b->last_module;
		return 0;
	}
	for (i = 1; i < ks->n_modules; i++) {
		if (strlen(ks->modules[i]) == len && memcmp(ks->modules[i], name, len) == 0) {
			*out = b->last_module = i;
			return 0;
		}
	}
	if (ks->n_modules >= MAX_MODULES)
		return -E2BIG;
	if (VEC_RESERVE(ks->modules, b->modules_cap, ks->n_modules + 1))
		return -ENOMEM;
	copy = strndup(name, len);
	if (!copy)
		return -ENOMEM;
	ks->modules[ks->n_modules] = copy;
	*out = b->last_module = ks->n_modules++;
	ks->stats.modules++;
	return 0;
}

static int push_ent(struct builder *b, const struct ent *e, const char *name)
{
	if (VEC_RESERVE(b->ents, b->cap, b->n + 1))
		return -ENOMEM;
	b->ents[b->n] = *e;
	if (e->is_text) {
		if (b->pool_len + e->name_len + 1 > b->pool_cap) {
			size_t cap = b->pool_cap ? b->pool_cap * 2 : 65536;
			char *np;

			while (cap < b->pool_len + e->name_len + 1)
				cap *= 2;
			np = realloc(b->ks->pool, cap);
			if (!np)
				return -ENOMEM;
			b->ks->pool = np;
			b->pool_cap = cap;
		}
		b->ents[b->n].name_off = b->pool_len;
		memcpy(b->ks->pool + b->pool_len, name, e->name_len);
		b->ks->pool[b->pool_len + e->name_len] = '\0';
		b->pool_len += e->name_len + 1;
	}
	b->n++;
	return 0;
}

/* One line "addr type name[\t[module]]" without its newline. Returns 0 (kept or counted) or
 * -ENOMEM. */
static int parse_line(struct builder *b, const char *p, size_t len)
{
	struct ksyms_stats *st = &b->ks->stats;
	const char *end = p + len, *name, *mod = NULL;
	size_t ndigits = 0, name_len, mod_len = 0;
	uint64_t addr = 0;
	struct ent e = { 0 };
	int is_text, d, err;
	char type;

	st->lines++;
	if (len > KSYMS_MAX_LINE)
		goto malformed;
	while (p < end && (d = hexval(*p)) >= 0) {
		if (++ndigits > 16)
			goto malformed;
		addr = addr << 4 | (uint64_t)d;
		p++;
	}
	if (ndigits == 0 || p + 3 > end || p[0] != ' ' || p[2] != ' ')
		goto malformed;
	type = p[1];
	p += 3;
	name = p;
	while (p < end && *p != '\t' && *p != ' ')
		p++;
	name_len = p - name;
	if (name_len == 0)
		goto malformed;
	while (p < end && (*p == '\t' || *p == ' '))
		p++;
	if (p < end) {
		/* "[module]" and nothing after it. */
		if (*p != '[' || end[-1] != ']' || end - p < 3)
			goto malformed;
		mod = p + 1;
		mod_len = end - 1 - mod;
		if (mod_len > MAX_MODULE_NAME || memchr(mod, ']', mod_len) || memchr(mod, ' ', mod_len))
			goto malformed;
	}

	e.rank = type_rank(type, &is_text);
	/* Any other letter (data, bss, rodata, ...) is a boundary; anything else is not kallsyms. */
	if (!is_text && !((type >= 'a' && type <= 'z') || (type >= 'A' && type <= 'Z')))
		goto malformed;
	if (addr == 0) {
		st->zero_addr++;
		return 0;
	}
	/* Absolute symbols are values (percpu offsets and such), not places in the text. */
	if (type == 'a' || type == 'A') {
		st->other++;
		return 0;
	}
	if (b->n >= KSYMS_MAX_SYMS) {
		st->capped++;
		return 0;
	}
	err = module_index(b, mod, mod_len, &e.module);
	if (err == -E2BIG) {
		st->capped++;
		return 0;
	}
	if (err)
		return err;
	e.addr = addr;
	e.is_text = is_text;
	e.name_len = is_text ? name_len : 0;
	e.index = b->n;
	if (is_text)
		st->text++;
	else
		st->other++;
	return push_ent(b, &e, name);

malformed:
	st->malformed++;
	return 0;
}

/* Address order; at one address text before boundaries, then the preferred name. */
static int ent_cmp(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->is_text != y->is_text)
		return x->is_text > y->is_text ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->name_len != y->name_len)
		return x->name_len < y->name_len ? -1 : 1;
	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return 0;
}

/* The names of the n kept symbols, deflated by blocks of KSYMS_BLOCK into a pool of exactly
 * their size (the building pool was sized for the whole file: aliases and data symbols too). */
static int pack_names(struct ksyms *ks, const struct ksym *syms, size_t n)
{
	size_t nblk = (n + KSYMS_BLOCK - 1) / KSYMS_BLOCK, len = 0, cap = 0;
	uint8_t *raw = malloc(BLOCK_RAW_MAX), *pool = NULL, *fit;
	z_stream z = { 0 };	/* one stream for every block: its state is big to set up */
	bool z_open = false;
	int err = -ENOMEM;

	ks->blocks = malloc((nblk + 1) * sizeof(*ks->blocks));
	if (!raw || !ks->blocks || deflateInit(&z, 6) != Z_OK)
		goto out;
	z_open = true;
	for (size_t k = 0; k < nblk; k++) {
		size_t rl = 0;
		uLongf zl;

		for (size_t i = k * KSYMS_BLOCK; i < n && i < (k + 1) * KSYMS_BLOCK; i++) {
			size_t l = strlen(ks->pool + syms[i].name_off) + 1;

			memcpy(raw + rl, ks->pool + syms[i].name_off, l);
			rl += l;
		}
		zl = deflateBound(&z, rl);
		if (len + zl > cap) {
			size_t c = cap ? cap * 2 : 256u << 10;
			uint8_t *np;

			while (c < len + zl)
				c *= 2;
			if (!(np = realloc(pool, c)))
				goto out;
			pool = np;
			cap = c;
		}
		z.next_in = raw;
		z.avail_in = (uInt)rl;
		z.next_out = pool + len;
		z.avail_out = (uInt)zl;
		if (deflate(&z, Z_FINISH) != Z_STREAM_END)
			goto out;
		ks->blocks[k] = (uint32_t)len;
		len += zl - z.avail_out;
		deflateReset(&z);
		if (len > UINT32_MAX)
			goto out;
	}
	ks->blocks[nblk] = (uint32_t)len;
	free(ks->pool);
	fit = realloc(pool, len ? len : 1);
	ks->pool = (char *)(fit ? fit : pool);
	pool = NULL;
	err = 0;
out:
	if (z_open)
		deflateEnd(&z);
	free(raw);
	free(pool);
	return err;
}

/* The table as lookups read it: the kept symbols' starts, sizes and modules. */
static int keep_table(struct ksyms *ks, const struct ksym *syms, size_t n)
{
	bool narrow = !n || syms[n - 1].addr - syms[0].addr <= UINT32_MAX;
	size_t n_other = 0, n_runs = 0;

	for (size_t i = 0; i < n; i++) {
		n_other += i + 1 == n || syms[i].addr + syms[i].size != syms[i + 1].addr;
		n_runs += !i || syms[i].module != syms[i - 1].module;
	}
	ks->to_next = calloc((n + 63) / 64 + 1, sizeof(*ks->to_next));
	ks->other_idx = malloc((n_other ? n_other : 1) * sizeof(*ks->other_idx));
	ks->other_size = malloc((n_other ? n_other : 1) * sizeof(*ks->other_size));
	ks->run_from = malloc((n_runs ? n_runs : 1) * sizeof(*ks->run_from));
	ks->run_mod = malloc((n_runs ? n_runs : 1) * sizeof(*ks->run_mod));
	if (narrow)
		ks->off = malloc((n ? n : 1) * sizeof(*ks->off));
	else
		ks->addr = malloc(n * sizeof(*ks->addr));
	if (!ks->to_next || !ks->other_idx || !ks->other_size || !ks->run_from || !ks->run_mod ||
	    (!ks->off && !ks->addr))
		return -ENOMEM;
	ks->base = n ? syms[0].addr : 0;
	for (size_t i = 0; i < n; i++) {
		if (narrow)
			ks->off[i] = (uint32_t)(syms[i].addr - ks->base);
		else
			ks->addr[i] = syms[i].addr;
		if (i + 1 < n && syms[i].addr + syms[i].size == syms[i + 1].addr) {
			ks->to_next[i / 64] |= 1ULL << (i % 64);
		} else {
			ks->other_idx[ks->n_other] = (uint32_t)i;
			ks->other_size[ks->n_other++] = syms[i].size;
		}
		if (!i || syms[i].module != syms[i - 1].module) {
			ks->run_from[ks->n_runs] = (uint32_t)i;
			ks->run_mod[ks->n_runs++] = syms[i].module;
		}
	}
	ks->n = n;
	return 0;
}

static uint64_t size_of(const struct ksyms *ks, size_t i)
{
	size_t k;

	if (ks->to_next[i / 64] & (1ULL << (i % 64)))
		return start_of(ks, i + 1) - start_of(ks, i);
	k = u32_lower_bound(ks->other_idx, ks->n_other, (uint32_t)i);
	return k < ks->n_other && ks->other_idx[k] == i ? ks->other_size[k] : 0;
}

static uint16_t module_of(const struct ksyms *ks, size_t i)
{
	size_t r = u32_lower_bound(ks->run_from, ks->n_runs, (uint32_t)i + 1);	/* runs past i */

	return r ? ks->run_mod[r - 1] : 0;
}

static int build_table(struct builder *b)
{
	struct ksyms *ks = b->ks;
	size_t i, j, n = 0;

	/* The kernel lists vmlinux in address order; sort only when the input is not. Aliases are
	 * resolved per address run below, so their order inside a run does not matter here. */
	for (i = 1; i < b->n && b->ents[i - 1].addr <= b->ents[i].addr; i++)
		;
	if (i < b->n)
		qsort(b->ents, b->n, sizeof(*b->ents), ent_cmp);
	b->syms = calloc(b->n ? b->n : 1, sizeof(*b->syms));
	if (!b->syms)
		return -ENOMEM;
	for (i = 0; i < b->n; i = j) {
		const struct ent *e = &b->ents[i];
		uint64_t end;

		for (j = i + 1; j < b->n && b->ents[j].addr == e->addr; j++) {
			if (!b->ents[j].is_text)
				continue;
			if (e->is_text)
				ks->stats.aliases++;
			if (ent_cmp(&b->ents[j], e) < 0)
				e = &b->ents[j];
		}
		if (!e->is_text)
			continue;
		/* No sizes in kallsyms: up to the next symbol, and only a bounded tail where the
		 * next symbol belongs to someone else (module gaps, end of the list). */
		if (j < b->n && b->ents[j].module == e->module) {
			end = b->ents[j].addr;
		} else {
			end = e->addr + KSYMS_TAIL_MAX < e->addr ? UINT64_MAX : e->addr + KSYMS_TAIL_MAX;
			if (j < b->n && b->ents[j].addr < end)
				end = b->ents[j].addr;
		}
		b->syms[n++] = (struct ksym){
			.addr = e->addr, .name_off = e->name_off, .module = (uint16_t)e->module,
			.size = end - e->addr > UINT32_MAX ? UINT32_MAX : (uint32_t)(end - e->addr),
		};
	}
	return pack_names(ks, b->syms, n) ?: keep_table(ks, b->syms, n);
}

struct ksyms *ksyms__parse(const char *buf, size_t len)
{
	struct builder b = { 0 };
	const char *p = buf, *end, *nl;
	int err;

	b.ks = calloc(1, sizeof(*b.ks));
	if (!b.ks) {
		errno = ENOMEM;
		return NULL;
	}
	b.ks->modules = calloc(16, sizeof(char *));
	if (!b.ks->modules) {
		err = -ENOMEM;
		goto free_ks;
	}
	b.modules_cap = 16;
	b.ks->n_modules = 1;
	if (len > KSYMS_MAX_BYTES) {
		/* Keep whole lines only. */
		b.ks->stats.capped++;
		len = KSYMS_MAX_BYTES;
		while (len > 0 && buf[len - 1] != '\n')
			len--;
	}
	end = buf ? buf + len : buf;
	/* Size the arrays once: growing them by doubling costs copies and fresh pages. */
	for (nl = buf; nl && nl < end && (nl = memchr(nl, '\n', end - nl)); nl++)
		b.cap++;
	b.cap = b.cap + 1 < KSYMS_MAX_SYMS ? b.cap + 1 : KSYMS_MAX_SYMS;
	b.ents = malloc(b.cap * sizeof(*b.ents));
	b.pool_cap = len + 1;
	b.ks->pool = malloc(b.pool_cap);
	if (!b.ents || !b.ks->pool) {
		err = -ENOMEM;
		goto free_ks;
	}
	while (p && p < end) {
		nl = memchr(p, '\n', end - p);
		if (!nl)
			nl = end;
		if (nl > p) {
			err = parse_line(&b, p, nl - p);
			if (err)
				goto free_ks;
		}
		p = nl + 1;
	}
	if (b.ks->stats.text == 0) {
		/* Everything zero: kptr_restrict (or not root) hides the addresses. */
		err = b.ks->stats.zero_addr ? -ENODATA : -EINVAL;
		goto free_ks;
	}
	err = build_table(&b);
	if (err)
		goto free_ks;
	free(b.ents);
	free(b.syms);
	return b.ks;

free_ks:
	free(b.ents);
	free(b.syms);
	ksyms__free(b.ks);
	errno = -err;
	return NULL;
}

struct ksyms *ksyms__load(const char *path)
{
	struct ksyms *ks;
	int capped, err;
	char *buf;
	long len = read_file_alloc(AT_FDCWD, path, KSYMS_MAX_BYTES, &buf, &capped);

	if (len < 0) {
		errno = -len;
		return NULL;
	}
	if (capped)
		while (len > 0 && buf[len - 1] != '\n')
			len--;	/* drop the cut line */
	ks = ksyms__parse(buf, len);
	err = errno;
	if (ks)
		ks->stats.capped += capped;
	free(buf);
	errno = err;
	return ks;
}

/* The name of symbol i into name (len bytes): its block inflated, then found in it. */
static const char *name_of(const struct ksyms *ks, size_t i, char *name, size_t len)
{
	uint8_t raw[BLOCK_RAW_MAX];
	uLongf rl = sizeof(raw);
	size_t k = i / KSYMS_BLOCK, at = 0;
	const uint8_t *z = (const uint8_t *)ks->pool + ks->blocks[k];

	if (!len || uncompress(raw, &rl, z, ks->blocks[k + 1] - ks->blocks[k]) != Z_OK)
		return NULL;
	for (size_t skip = i % KSYMS_BLOCK; skip && at < rl; at++)
		skip -= raw[at] == 0;
	if (at >= rl)
		return NULL;
	snprintf(name, len, "%.*s", (int)strnlen((const char *)raw + at, rl - at),
		 (const char *)raw + at);
	return name;
}

const char *ksyms__lookup(const struct ksyms *ks, uint64_t addr, uint64_t *sym_off,
			  const char **module, char *name, size_t len)
{
	size_t lo = 0, hi;

	if (!ks || ks->n == 0)
		return NULL;
	hi = ks->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (start_of(ks, mid) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	if (addr - start_of(ks, lo - 1) >= size_of(ks, lo - 1))
		return NULL;
	if (sym_off)
		*sym_off = addr - start_of(ks, lo - 1);
	if (module)
		*module = ks->modules[module_of(ks, lo - 1)];
	return name_of(ks, lo - 1, name, len);
}

uint64_t ksyms__count(const struct ksyms *ks)
{
	return ks ? ks->n : 0;
}

void ksyms__stats(const struct ksyms *ks, struct ksyms_stats *out)
{
	size_t nblk;

	memset(out, 0, sizeof(*out));
	if (!ks)
		return;
	*out = ks->stats;
	nblk = (ks->n + KSYMS_BLOCK - 1) / KSYMS_BLOCK;
	out->bytes = sizeof(*ks) + ks->n * (ks->off ? sizeof(*ks->off) : sizeof(*ks->addr)) +
		     ((ks->n + 63) / 64 + 1) * sizeof(*ks->to_next) +
		     ks->n_other * (sizeof(*ks->other_idx) + sizeof(*ks->other_size)) +
		     ks->n_runs * (sizeof(*ks->run_from) + sizeof(*ks->run_mod)) +
		     (ks->blocks ? (nblk + 1) * sizeof(*ks->blocks) + ks->blocks[nblk] : 0) +
		     ks->n_modules * sizeof(*ks->modules);
	for (size_t i = 1; i < ks->n_modules; i++)
		out->bytes += strlen(ks->modules[i]) + 1;
}

void ksyms__free(struct ksyms *ks)
{
	size_t i;

	if (!ks)
		return;
	for (i = 1; i < ks->n_modules; i++)
		free(ks->modules[i]);
	free(ks->modules);
	free(ks->off);
	free(ks->addr);
	free(ks->to_next);
	free(ks->other_idx);
	free(ks->other_size);
	free(ks->run_from);
	free(ks->run_mod);
	free(ks->pool);
	free(ks->blocks);
	free(ks);
}
