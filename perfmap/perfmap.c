/* perfmap.c: perfmap object, perf-<pid>.map line reader, name interning and twin dedup. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hexnum.h"
#include "perfmap_int.h"
#include "siphash.h"
#include "symbudget.h"
#include "util.h"

#define READ_BUF	(256u << 10)
#define MAX_TIER_LEN	64

/* ---- hashing and interning ---------------------------------------------------------------- */

/*
 * Names are shared by every perfmap of the program (lib/nametab.h): most of a .NET process's
 * methods are the framework's, the same in every process. The table lives while a perfmap does.
 */
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nametab *shared_names;
static uint32_t shared_users;

static struct nametab *names_hold(void)
{
	struct nametab *t;

	pthread_mutex_lock(&shared_lock);
	if (!shared_names)
		shared_names = nametab__new();
	if ((t = shared_names))
		shared_users++;
	pthread_mutex_unlock(&shared_lock);
	return t;
}

static void names_release(void)
{
	pthread_mutex_lock(&shared_lock);
	if (shared_users && !--shared_users) {
		nametab__free(shared_names);
		shared_names = NULL;
	}
	pthread_mutex_unlock(&shared_lock);
}

/*
 * The code ranges of every perfmap come out of the program's symbol budget (symbudget.h; a
 * hostile process's 5 M-line perf map, or many processes' maps): past it a perfmap takes no more
 * ranges (counted per perfmap as budget_capped), and what they would have named shows as .NET
 * unnamed. A perfmap gives its share back when it is freed (an exited process, an idle one whose
 * maps the agent dropped).
 */
static bool budget_take(struct perfmap *pm)
{
	bool ok = symbudget__take(SB_PERF_MAPS, PERFMAP_BYTES_PER_RANGE);

	if (ok)
		pm->budget_held++;
	else
		pm->st.budget_capped++;
	return ok;
}

static void budget_give_back(struct perfmap *pm, uint64_t n)
{
	if (n > pm->budget_held)
		n = pm->budget_held;
	symbudget__give(SB_PERF_MAPS, n * PERFMAP_BYTES_PER_RANGE);
	pm->budget_held -= n;
}

void perfmap__shared_names(struct nametab_stats *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&shared_lock);
	if (shared_names)
		nametab__stats(shared_names, out);
	pthread_mutex_unlock(&shared_lock);
}

/* ---- twins: one piece of code logged to both files ---------------------------------------- */

/* Keyed (siphash.h): the ranges are what the process wrote in its perf map. */
static uint64_t twin_hash(const struct perfmap_sym *s)
{
	const uint64_t k[4] = { s->start, s->size, (uint64_t)(uintptr_t)s->name,
				(uint64_t)(uintptr_t)s->tier };

	return siphash__table(k, sizeof(k));
}

/* Entry id of the index (ids come from it: always there). */
static struct perfmap_sym sym_at(const struct addrindex *ix, uint32_t id)
{
	struct perfmap_sym s = { 0 };

	addrindex__get(ix, id, &s);
	return s;
}

static uint32_t bucket_id(const struct twin_bucket *b)
{
	return (b->map_id ? b->map_id : b->jit_id) - 1;
}

static struct twin_bucket *twin_slot(struct twin_bucket *tab, uint32_t cap,
				     const struct addrindex *ix, const struct perfmap_sym *s)
{
	uint32_t i = (uint32_t)twin_hash(s) & (cap - 1);

	for (;; i = (i + 1) & (cap - 1)) {
		struct twin_bucket *b = &tab[i];
		struct perfmap_sym o;

		if (!b->map_id && !b->jit_id)
			return b;
		o = sym_at(ix, bucket_id(b));
		if (o.start == s->start && o.size == s->size && o.name == s->name &&
		    o.tier == s->tier)
			return b;
	}
}

static int twin_grow(struct perfmap *pm)
{
	uint32_t cap = pm->twin_cap ? pm->twin_cap * 2 : 4096;
	struct twin_bucket *tab;

	if (cap < pm->twin_cap)
		return -ENOMEM;
	tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (uint32_t i = 0; i < pm->twin_cap; i++) {
		struct twin_bucket *b = &pm->twins[i];
		struct perfmap_sym s;

		if (!b->map_id && !b->jit_id)
			continue;
		s = sym_at(pm->ix, bucket_id(b));
		*twin_slot(tab, cap, pm->ix, &s) = *b;
	}
	free(pm->twins);
	pm->twins = tab;
	pm->twin_cap = cap;
	return 0;
}

/*
 * Record entry id in its key's bucket. Map entries with one key form a chain (twin_prev), so
 * a jitdump record hides all of them: the same (range, name) logged again is the same code,
 * and the jitdump copy carries its time.
 */
static int twin_note(struct perfmap *pm, uint32_t id, int source)
{
	struct perfmap_sym s = sym_at(pm->ix, id);
	struct twin_bucket *b;

	if (pm->twins_jit_only && source == PERFMAP_SRC_MAP)
		return 0;	/* no record will come to hide it */
	if ((pm->twin_n + 1) * 2 > pm->twin_cap && twin_grow(pm))
		return -ENOMEM;
	if (source == PERFMAP_SRC_MAP && id >= pm->twin_prev_cap) {
		uint32_t cap = pm->twin_prev_cap ? pm->twin_prev_cap : 4096;
		uint32_t *prev;

		while (cap <= id)
			cap *= 2;
		prev = realloc(pm->twin_prev, (size_t)cap * sizeof(*prev));
		if (!prev)
			return -ENOMEM;
		pm->twin_prev = prev;
		pm->twin_prev_cap = cap;
	}
	b = twin_slot(pm->twins, pm->twin_cap, pm->ix, &s);
	if (!b->map_id && !b->jit_id)
		pm->twin_n++;
	if (source == PERFMAP_SRC_MAP) {
		pm->twin_prev[id] = b->map_id;
		b->map_id = id + 1;
		return 0;
	}
	b->jit_id = id + 1;	/* set first: the bucket must never look empty */
	for (uint32_t m = b->map_id; m; m = pm->twin_prev[m - 1]) {
		if (!addrindex__hidden(pm->ix, m - 1)) {
			addrindex__hide(pm->ix, m - 1);
			pm->st.dups++;
		}
	}
	b->map_id = 0;
	return 0;
}

/*
 * The jitdump stopped (it never resumes; runtime 10's stops at its first stub block): no record
 * will hide a map entry any more, so the table keeps the jitdump's entries only (a map line the
 * jitdump already has is still skipped), and the map entries' chains go. Otherwise it would hold
 * every perf map line of the process for nothing. 0 or -ENOMEM (the table stays as it was).
 */
static int twins_jit_only(struct perfmap *pm)
{
	uint32_t n = 0, cap = 16;
	struct twin_bucket *tab;

	for (uint32_t i = 0; i < pm->twin_cap; i++)
		n += pm->twins[i].jit_id != 0;
	while (cap < 2 * (n + 1))
		cap *= 2;
	tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (uint32_t i = 0; i < pm->twin_cap; i++) {
		uint32_t jit = pm->twins[i].jit_id;
		struct perfmap_sym s;

		if (!jit)
			continue;
		s = sym_at(pm->ix, jit - 1);
		*twin_slot(tab, cap, pm->ix, &s) = (struct twin_bucket){ 0, jit };
	}
	free(pm->twins);
	free(pm->twin_prev);
	pm->twins = tab;
	pm->twin_cap = cap;
	pm->twin_n = n;
	pm->twin_prev = NULL;
	pm->twin_prev_cap = 0;
	pm->twins_jit_only = true;
	return 0;
}

void perfmap_jitdump_stopped(struct perfmap *pm)
{
	pm->jd_ended = true;	/* a table started later keeps the jitdump's entries only */
	if (pm->twins && !pm->twins_jit_only)
		twins_jit_only(pm);	/* out of memory: the table stays as it was, still right */
}

/* The second source just started: index what the first one produced. */
static int twins_start(struct perfmap *pm)
{
	uint64_t n = addrindex__count(pm->ix);
	int err = twin_grow(pm);

	for (uint64_t id = 0; !err && id < n; id++)
		if (!addrindex__hidden(pm->ix, (uint32_t)id))
			err = twin_note(pm, (uint32_t)id, sym_at(pm->ix, (uint32_t)id).source);
	if (err) {
		free(pm->twins);
		pm->twins = NULL;
		pm->twin_cap = pm->twin_n = 0;
		/* entries hidden so far stay hidden: they were twins */
	} else if (pm->jd_ended) {
		perfmap_jitdump_stopped(pm);
	}
	return err;
}

/* ---- object ------------------------------------------------------------------------------- */

struct perfmap *perfmap__new(const struct perfmap_limits *limits)
{
	struct perfmap *pm = calloc(1, sizeof(*pm));

	if (!pm)
		goto err_nomem;
	if (limits)
		pm->lim = *limits;
	if (!pm->lim.max_file_bytes)
		pm->lim.max_file_bytes = PERFMAP_DEF_MAX_FILE;
	if (!pm->lim.max_line)
		pm->lim.max_line = PERFMAP_DEF_MAX_LINE;
	if (!pm->lim.max_record)
		pm->lim.max_record = PERFMAP_DEF_MAX_RECORD;
	if (!pm->lim.max_entries)
		pm->lim.max_entries = PERFMAP_DEF_MAX_ENTRIES;
	if (!pm->lim.max_range || pm->lim.max_range > ADDRINDEX_MAX_SIZE)
		pm->lim.max_range = pm->lim.max_range ? ADDRINDEX_MAX_SIZE : PERFMAP_DEF_MAX_RANGE;
	pm->ix = addrindex__new();
	pm->names.tab = names_hold();
	if (!pm->ix || !pm->names.tab)
		goto err_free_pm;
	return pm;

err_free_pm:
	addrindex__free(pm->ix);
	if (pm->names.tab)
		names_release();
	free(pm);
err_nomem:
	errno = ENOMEM;
	return NULL;
}

void perfmap__free(struct perfmap *pm)
{
	if (!pm)
		return;
	addrindex__free(pm->ix);
	budget_give_back(pm, pm->budget_held);
	nameset__clear(&pm->names);
	names_release();
	free(pm->map.line);
	jd_reader_free(&pm->jd);
	free(pm->twins);
	free(pm->twin_prev);
	free(pm->filter);
	free(pm);
}

void perfmap__free_ranges(struct perfmap *pm)
{
	if (!pm)
		return;
	addrindex__free(pm->ix);
	pm->ix = NULL;
	budget_give_back(pm, pm->budget_held);
}

void perfmap__set_feed_time(struct perfmap *pm, uint64_t now_ns)
{
	if (pm)
		pm->pinned_now = now_ns;
}

void perfmap__set_jitdump_replay(struct perfmap *pm, uint64_t until_ns)
{
	if (pm)
		pm->jd_replay_until = until_ns;
}

static void feed_clock(struct perfmap *pm)
{
	struct timespec ts;

	if (pm->pinned_now) {
		pm->feed_now = pm->pinned_now;
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	pm->feed_now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

size_t perfmap_file_room(struct perfmap *pm, uint64_t *fed, bool *capped, size_t len)
{
	uint64_t room = *fed < pm->lim.max_file_bytes ? pm->lim.max_file_bytes - *fed : 0;

	if (len > room) {
		if (!*capped) {
			*capped = true;
			pm->st.capped++;
		}
		len = (size_t)room;
	}
	*fed += len;
	pm->st.bytes += len;
	feed_clock(pm);
	return len;
}

/* ---- tiers and insertion ------------------------------------------------------------------ */

static inline bool tier_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

size_t perfmap__split_tier(const char *name, size_t len, const char **tier, size_t *tier_len)
{
	size_t close, open;

	*tier = name ? name + len : "";
	*tier_len = 0;
	if (!name || len < 4 || name[len - 1] != ']')
		return len;
	close = len - 1;
	for (open = close; open > 0 && tier_char(name[open - 1]); open--)
		;
	/* name[open - 1] must be '[', with a name before it and a word starting with a letter */
	if (open < 2 || name[open - 1] != '[' || open == close || close - open > MAX_TIER_LEN)
		return len;
	if (!((name[open] >= 'A' && name[open] <= 'Z') || (name[open] >= 'a' && name[open] <= 'z')))
		return len;
	*tier = name + open;
	*tier_len = close - open;
	return open - 1;
}

/* A stub block (.NET's ReportStubBlock, "stub ReportStubBlock<Kind>" or "stub<N> ...") holds
 * other stubs; it must not hide the single stubs logged inside it. */
static bool is_stub_block(const char *name, size_t len)
{
	return len > 5 && !memcmp(name, "stub", 4) && memmem(name, len, "Block<", 6);
}

/* ---- the filter ----------------------------------------------------------------------------- */

/* Index of the first filter address >= addr (nfilter when none). */
static size_t filter_from(const struct perfmap *pm, uint64_t addr)
{
	return u64_lower_bound(pm->filter, pm->nfilter, addr);
}

static bool covers_filter(const struct perfmap *pm, uint64_t start, uint64_t size)
{
	size_t i = filter_from(pm, start);

	return i < pm->nfilter && pm->filter[i] - start < size;
}

int perfmap__set_filter(struct perfmap *pm, const uint64_t *addrs, size_t n)
{
	uint64_t *f;

	if (!pm)
		return -EINVAL;
	if (!(f = malloc((n ? n : 1) * sizeof(*f))))
		return -ENOMEM;
	if (n)
		memcpy(f, addrs, n * sizeof(*f));
	free(pm->filter);
	pm->filter = f;
	pm->nfilter = u64_sort_unique(f, n);
	return 0;
}

const uint64_t *perfmap__filter(const struct perfmap *pm, size_t *n)
{
	*n = pm && pm->filter ? pm->nfilter : 0;
	return pm ? pm->filter : NULL;
}

int perfmap__filter_has(const struct perfmap *pm, uint64_t addr)
{
	size_t i;

	if (!pm || !pm->filter)
		return pm != NULL;
	i = filter_from(pm, addr);
	return i < pm->nfilter && pm->filter[i] == addr;
}

int perfmap_add(struct perfmap *pm, uint64_t start, uint64_t size, uint64_t load_ns,
		const char *name, size_t len, int source)
{
	struct perfmap_sym sym;
	const char *tier;
	size_t tier_len, name_len;
	int64_t id;
	int err;

	if (!size || size > pm->lim.max_range || start + size < start || !len) {
		pm->st.malformed++;
		return 0;
	}
	if (source == PERFMAP_SRC_MAP)
		pm->st.lines++;
	else
		pm->st.records++;
	if (pm->filter && !covers_filter(pm, start, size)) {
		pm->st.filtered++;
		return 0;
	}
	if (addrindex__count(pm->ix) >= pm->lim.max_entries) {
		pm->st.capped++;
		return 0;
	}
	/* Before the names are stored: a range past the budget costs nothing. */
	if (!budget_take(pm))
		return 0;
	name_len = perfmap__split_tier(name, len, &tier, &tier_len);
	sym.start = start;
	sym.size = size;
	sym.load_ns = load_ns;
	sym.source = source;
	sym.name = nameset__get(&pm->names, name, name_len);
	sym.tier = tier_len ? nameset__get(&pm->names, tier, tier_len) : "";
	if (!sym.name || !sym.tier) {
		budget_give_back(pm, 1);
		return -ENOMEM;
	}

	if (!pm->twins && ((source == PERFMAP_SRC_MAP && pm->have_jit) ||
			   (source == PERFMAP_SRC_JITDUMP && pm->have_map))) {
		err = twins_start(pm);
		if (err) {
			budget_give_back(pm, 1);
			return err;
		}
	}
	if (pm->twins && source == PERFMAP_SRC_MAP &&
	    twin_slot(pm->twins, pm->twin_cap, pm->ix, &sym)->jit_id) {
		pm->st.dups++;	/* the jitdump already has it, with a time */
		budget_give_back(pm, 1);
		return 0;
	}
	id = addrindex__add(pm->ix, &sym, load_ns ? load_ns : pm->feed_now,
			    is_stub_block(name, name_len) ? ADDRINDEX_BLOCK : 0);
	if (id < 0) {
		budget_give_back(pm, 1);	/* not added after all */
		if (id == -ENOMEM)
			return -ENOMEM;
		pm->st.capped++;
		return 0;
	}
	if (source == PERFMAP_SRC_MAP)
		pm->have_map = true;
	else
		pm->have_jit = true;
	if (pm->twins)
		return twin_note(pm, (uint32_t)id, source);
	return 0;
}

/* ---- perf map lines ----------------------------------------------------------------------- */

static bool skip_blanks(const char **pp, const char *end)
{
	const char *p = *pp;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p == *pp)
		return false;
	*pp = p;
	return true;
}

/* One line without its newline: "START SIZE NAME", name = rest of the line. */
static int map_line(struct perfmap *pm, const char *s, size_t len)
{
	const char *p = s, *end = s + len;
	uint64_t start, size;

	if (len && s[len - 1] == '\r')
		end--;
	if ((size_t)(end - s) > pm->lim.max_line) {
		pm->st.capped++;
		return 0;
	}
	if (memchr(s, '\0', (size_t)(end - s)) || hexnum__parse(&p, end, &start) ||
	    !skip_blanks(&p, end) || hexnum__parse(&p, end, &size) || !skip_blanks(&p, end) ||
	    p == end) {
		pm->st.malformed++;
		return 0;
	}
	return perfmap_add(pm, start, size, 0, p, (size_t)(end - p), PERFMAP_SRC_MAP);
}

static int line_append(struct perfmap *pm, const char *p, size_t n)
{
	struct map_reader *m = &pm->map;

	if (m->len + n > m->cap) {
		size_t cap = m->cap ? m->cap : 256;
		char *line;

		while (cap < m->len + n)
			cap *= 2;
		line = realloc(m->line, cap);
		if (!line)
			return -ENOMEM;
		m->line = line;
		m->cap = cap;
	}
	memcpy(m->line + m->len, p, n);
	m->len += n;
	return 0;
}

int perfmap__feed_map(struct perfmap *pm, const char *buf, size_t len)
{
	struct map_reader *m;
	const char *p, *end;
	int err = 0;

	if (!pm || (!buf && len))
		return -EINVAL;
	m = &pm->map;
	len = perfmap_file_room(pm, &m->fed, &m->capped_file, len);
	for (p = buf, end = buf + len; p < end && !err;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t seg = (size_t)((nl ? nl : end) - p);
		const char *next = nl ? nl + 1 : end;

		if (m->discarding) {
			m->discarding = !nl;
		} else if (!m->len && nl) {
			err = map_line(pm, p, seg);	/* whole line in this buffer: no copy */
		} else if (m->len + seg > pm->lim.max_line + (size_t)1) {
			/* +1: a '\r' before the newline is not part of the line */
			pm->st.capped++;
			m->len = 0;
			m->discarding = !nl;
		} else {
			err = line_append(pm, p, seg);
			if (!err && nl) {
				err = map_line(pm, m->line, m->len);
				m->len = 0;
			}
		}
		p = next;
	}
	return err;
}

/* ---- file descriptors --------------------------------------------------------------------- */

typedef int (*feed_fn)(struct perfmap *pm, const void *buf, size_t len);

static int feed_map_fn(struct perfmap *pm, const void *buf, size_t len)
{
	return perfmap__feed_map(pm, buf, len);
}

static int feed_jd_fn(struct perfmap *pm, const void *buf, size_t len)
{
	return perfmap__feed_jitdump(pm, buf, len);
}

static int64_t read_fd(struct perfmap *pm, int fd, uint64_t *off, const uint64_t *fed, feed_fn feed,
		       bool *stale)
{
	struct stat sb;
	int64_t total = 0;
	uint8_t *buf;
	int err = 0;

	if (!pm)
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	if (fstat(fd, &sb))
		return -errno;
	if (S_ISREG(sb.st_mode) && (uint64_t)sb.st_size < *off) {
		if (stale)
			*stale = true;
		return -ESTALE;	/* truncated: the file was rewritten, e.g. for a reused pid */
	}
	if (S_ISREG(sb.st_mode) && (uint64_t)sb.st_size == *off) {
		/* Nothing new, the common poll: the process has stopped compiling for now, and
		 * what it compiled in runs becomes one run, for lookups to search once. */
		addrindex__settle(pm->ix);
		return 0;
	}
	/* Held only while reading: fifty idle processes would otherwise keep fifty buffers. */
	if (!(buf = malloc(READ_BUF)))
		return -ENOMEM;
	buf[0] = 0;
	while (*fed < pm->lim.max_file_bytes) {
		uint64_t room = pm->lim.max_file_bytes - *fed;
		ssize_t n = pread(fd, buf, room < READ_BUF ? (size_t)room : READ_BUF, (off_t)*off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		if (n == 0)
			break;
		*off += (uint64_t)n;
		total += n;
		if ((err = feed(pm, buf, (size_t)n)))
			goto out;
	}
	if (*fed >= pm->lim.max_file_bytes && (uint64_t)sb.st_size > *off)
		err = feed(pm, buf, 1);	/* over the cap: dropped, counted once */
out:
	free(buf);
	return err ? err : total;
}

int64_t perfmap__read_map_fd(struct perfmap *pm, int fd)
{
	bool stale = false;
	int64_t r = read_fd(pm, fd, pm ? &pm->map_off : NULL, pm ? &pm->map.fed : NULL, feed_map_fn,
			    &stale);

	if (stale)
		pm->st.map_stale = 1;
	return r;
}

/*
 * A jitdump that ends inside a record and has not moved for JITDUMP_STALL_NS has stopped being
 * written (runtime 10 stops at its first stub block, dotnet/runtime#132935, while its perf map
 * goes on): the twin table is let go as after a stop. Should it move again, a map line it then
 * repeats is kept beside it (the same name twice: no harm).
 */
#define JITDUMP_STALL_NS (30 * 1000000000ll)

/* When the file was last written, on the feed clock: its modification time, so that a read from
 * the start (after the process was idle) knows at once that the writer stopped long ago. A file
 * whose time is in the future, or that cannot be asked, was written now. */
static int64_t jd_written_at(const struct perfmap *pm, int fd)
{
	struct stat st;
	int64_t age;

	if (fstat(fd, &st))
		return (int64_t)pm->feed_now;
	age = (int64_t)realtime_ns() - (st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec);
	return (int64_t)pm->feed_now - (age > 0 ? age : 0);
}

int64_t perfmap__read_jitdump_fd(struct perfmap *pm, int fd)
{
	int64_t n = read_fd(pm, fd, pm ? &pm->jd_off : NULL, pm ? &pm->jd.fed : NULL, feed_jd_fn, NULL);

	if (!pm || n < 0)
		return n;
	feed_clock(pm);
	if (n > 0 || !pm->jd_moved_known) {
		pm->jd_moved_ns = jd_written_at(pm, fd);
		pm->jd_moved_known = true;
	}
	if ((int64_t)pm->feed_now - pm->jd_moved_ns > JITDUMP_STALL_NS && jd_reader_partial(&pm->jd))
		perfmap_jitdump_stopped(pm);
	return n;
}

/* ---- queries ------------------------------------------------------------------------------ */

const struct perfmap_sym *perfmap__lookup(struct perfmap *pm, uint64_t addr, uint64_t time_ns)
{
	/* Filtered: ranges covering other addresses may be missing, so no answer is sure there. */
	if (!pm || !perfmap__filter_has(pm, addr))
		return NULL;
	return addrindex__lookup(pm->ix, addr, time_ns);
}

void perfmap__prefetch(struct perfmap *pm, const uint64_t *addrs, size_t n)
{
	for (size_t k = 0; pm && k < n; k += PERFMAP_PREFETCH_MAX)
		addrindex__prefetch(pm->ix, addrs + k,
				    n - k < PERFMAP_PREFETCH_MAX ? n - k : PERFMAP_PREFETCH_MAX);
}

void perfmap__stats(const struct perfmap *pm, struct perfmap_stats *out)
{
	struct addrindex_shape sh;

	memset(out, 0, sizeof(*out));
	if (!pm)
		return;
	*out = pm->st;
	addrindex__shape(pm->ix, &sh);
	out->entries = sh.entries - sh.hidden;
	out->runs = sh.runs;
	out->jitdump_partial = jd_reader_partial(&pm->jd);
	out->partial = pm->map.len + out->jitdump_partial;
	/* What this perfmap holds on its own (the names it refers to are shared: counted apart). */
	out->held_bytes = sizeof(*pm) + sh.bytes + nameset__bytes(&pm->names) + pm->map.cap +
			  pm->nfilter * sizeof(*pm->filter) +
			  pm->jd.pend_cap + (uint64_t)pm->twin_cap * sizeof(*pm->twins) +
			  (uint64_t)pm->twin_prev_cap * sizeof(*pm->twin_prev);
}
