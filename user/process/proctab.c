/* proctab.c: process table keyed by (pid, start time); mappings from /proc/<pid>/maps. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hexnum.h"
#include "procfs.h"
#include "proctab.h"
#include "profiler.h"
#include "util.h"
#include "vec.h"


/*
 * Processes live in a dense array (their idx) with a free list, found by (pid, start_ticks)
 * through chained hash buckets; removal frees the index for reuse, so a node's churn of
 * short-lived processes costs nothing once they are gone.
 */
#define NO_IDX UINT32_MAX
#define MAPS_COST_FACTOR 50	/* a maps re-read waits at least 50 times what the last one cost */

struct proctab {
	char proc_root[64];
	const struct runtime_env *env;
	struct proc **procs;	/* by idx; NULL: free */
	uint32_t *next;		/* by idx: next in its bucket, or the free list */
	size_t cap, next_cap;
	uint32_t n;		/* indexes handed out so far */
	uint32_t live;
	uint32_t free_head;
	uint32_t *buckets;
	uint32_t nbuckets;	/* power of two */
};

struct proctab *proctab__new(const char *proc_root, const struct runtime_env *env)
{
	struct proctab *pt = calloc(1, sizeof(*pt));

	if (!pt)
		return NULL;
	snprintf(pt->proc_root, sizeof(pt->proc_root), "%s", proc_root ? proc_root : "/proc");
	pt->env = env;
	pt->free_head = NO_IDX;
	pt->nbuckets = 256;
	pt->buckets = malloc(pt->nbuckets * sizeof(*pt->buckets));
	if (!pt->buckets) {
		free(pt);
		errno = ENOMEM;
		return NULL;
	}
	memset(pt->buckets, 0xff, pt->nbuckets * sizeof(*pt->buckets));
	return pt;
}

static uint32_t bucket(const struct proctab *pt, uint32_t pid, uint64_t start_ticks)
{
	uint64_t h = (pid * 0x9e3779b97f4a7c15ull) ^ (start_ticks * 0xc2b2ae3d27d4eb4full);

	return (h >> 32) & (pt->nbuckets - 1);
}

static void link_proc(struct proctab *pt, struct proc *p)
{
	uint32_t b = bucket(pt, p->pid, p->start_ticks);

	pt->next[p->idx] = pt->buckets[b];
	pt->buckets[b] = p->idx;
}

/* Keep chains short: double the buckets when there are more processes than buckets. */
static void grow_buckets(struct proctab *pt)
{
	uint32_t n = pt->nbuckets * 2, *nb = malloc(n * sizeof(*nb));

	if (!nb)
		return;	/* longer chains, still correct */
	free(pt->buckets);
	pt->buckets = nb;
	pt->nbuckets = n;
	memset(nb, 0xff, n * sizeof(*nb));
	for (uint32_t i = 0; i < pt->n; i++)
		if (pt->procs[i] && !pt->procs[i]->execed)	/* an exec'd entry is found by idx only */
			link_proc(pt, pt->procs[i]);
}

static struct proc *lookup(const struct proctab *pt, uint32_t pid, uint64_t start_ticks)
{
	for (uint32_t i = pt->buckets[bucket(pt, pid, start_ticks)]; i != NO_IDX; i = pt->next[i])
		if (pt->procs[i]->pid == pid && pt->procs[i]->start_ticks == start_ticks)
			return pt->procs[i];
	return NULL;
}

void maps__free(struct vma *v, size_t n)
{
	(void)n;	/* the paths live in the array's own block */
	free(v);
}

/* The effective uid (as this host sees it) from "Uid:" in /proc/<pid>/status, or -1. */
static int64_t proc_euid(int dir_fd)
{
	char buf[8192], *s;
	unsigned long real, eff;
	long len = read_small_file(dir_fd, "status", buf, sizeof(buf));

	s = len > 0 ? strstr(buf, "\nUid:") : NULL;
	if (!s || sscanf(s + 5, "%lu %lu", &real, &eff) != 2)
		return -1;
	return eff;
}

static void proc_free(struct proc *p)
{
	if (!p)
		return;
	if (p->ident_free)
		p->ident_free(p->ident);
	runtime__release(p);
	if (p->dir_fd >= 0)
		close(p->dir_fd);
	if (p->root_fd >= 0)
		close(p->root_fd);
	maps__free(p->vmas, p->nvmas);
	free(p);
}

void proctab__free(struct proctab *pt)
{
	if (!pt)
		return;
	for (uint32_t i = 0; i < pt->n; i++)
		proc_free(pt->procs[i]);
	free(pt->procs);
	free(pt->next);
	free(pt->buckets);
	free(pt);
}

static int expect(const char **s, const char *end, char c)
{
	if (*s >= end || **s != c)
		return -1;
	(*s)++;
	return 0;
}

static void skip_spaces(const char **s, const char *end)
{
	while (*s < end && **s == ' ')
		(*s)++;
}

static enum vma_kind classify(const char *path)
{
	if (path[0] == '/' && strncmp(path, "/memfd:", 7) == 0)
		return VMA_MEMFD;
	if (path[0] == '/')
		return VMA_FILE;
	if (!strcmp(path, "[vdso]") || !strcmp(path, "[vsyscall]"))
		return VMA_VDSO;
	return VMA_ANON;
}

/* One maps line: "start-end perms offset major:minor inode   path". v->path is left pointing
 * into the line, *path_len its length. */
static int parse_line(const char *s, const char *end, struct vma *v, size_t *path_len)
{
	uint64_t major, minor;
	const char *path;

	memset(v, 0, sizeof(*v));
	if (hexnum__parse(&s, end, &v->start) || expect(&s, end, '-') ||
	    hexnum__parse(&s, end, &v->end) || expect(&s, end, ' ') || end - s < 5)
		return -1;
	v->exec = s[2] == 'x';
	s += 4;
	if (expect(&s, end, ' ') || hexnum__parse(&s, end, &v->pgoff) || expect(&s, end, ' ') ||
	    hexnum__parse(&s, end, &major) || expect(&s, end, ':') || hexnum__parse(&s, end, &minor) ||
	    expect(&s, end, ' '))
		return -1;
	while (s < end && *s >= '0' && *s <= '9')
		v->ino = v->ino * 10 + (*s++ - '0');
	if (v->end <= v->start)
		return -1;
	v->dev = major << 32 | minor;
	skip_spaces(&s, end);
	path = s;
	*path_len = end - path;
	v->path = path;
	return 0;
}

static int vma_cmp(const void *a, const void *b)
{
	const struct vma *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * A .NET process has a thousand mappings or more, most of them anonymous or a few segments of
 * one file each: the array and the paths (one copy for a run of mappings of one file, anonymous
 * ones between them included) are one block of exactly their size, not a string per line.
 */
int maps__parse(const char *buf, size_t len, struct vma **out, size_t *n, size_t *bad)
{
	const char *s = buf, *end = buf + len, *prev = NULL, *stored = NULL;	/* prev's copy */
	struct vma *v = NULL, *res;
	size_t cnt = 0, cap = 0, nbad = 0, pool = 0, prev_len = 0;
	uint32_t *plen = NULL;
	char *dst;

	while (s < end) {
		const char *eol = memchr(s, '\n', end - s);
		size_t l;

		if (!eol)
			eol = end;
		if (cnt == cap) {
			size_t c = cap ? cap * 2 : 256;
			struct vma *nv = realloc(v, c * sizeof(*v));
			uint32_t *np = nv ? realloc(plen, c * sizeof(*np)) : NULL;

			if (nv)
				v = nv;
			if (!np) {
				free(v);
				free(plen);
				return -ENOMEM;
			}
			plen = np;
			cap = c;
		}
		if (parse_line(s, eol, &v[cnt], &l)) {
			nbad++;
		} else {
			plen[cnt] = (uint32_t)l;
			if (l && (l != prev_len || memcmp(prev, v[cnt].path, l)))
				pool += l + 1;
			if (l) {
				prev = v[cnt].path;
				prev_len = l;
			}
			cnt++;
		}
		s = eol + 1;
	}
	res = malloc(cnt * sizeof(*res) + pool + 1);
	if (!res) {
		free(v);
		free(plen);
		return -ENOMEM;
	}
	dst = (char *)(res + cnt);
	prev = NULL;
	prev_len = 0;

	for (size_t i = 0; i < cnt; i++) {
		const char *src = v[i].path;
		size_t l = plen[i];

		res[i] = v[i];
		if (!l) {
			res[i].path = "";
		} else if (prev && l == prev_len && !memcmp(prev, src, l)) {
			res[i].path = stored;
		} else {
			memcpy(dst, src, l);
			dst[l] = 0;
			res[i].path = stored = dst;
			dst += l + 1;
		}
		if (l) {
			prev = src;
			prev_len = l;
		}
		res[i].kind = classify(res[i].path);
	}
	free(v);
	free(plen);
	if (cnt)
		qsort(res, cnt, sizeof(*res), vma_cmp);
	*out = res;
	*n = cnt;
	if (bad)
		*bad = nbad;
	return 0;
}

uint64_t maps__bytes(const struct vma *v, size_t n)
{
	uint64_t bytes = n * sizeof(*v);
	const char *prev = NULL;

	/* a run of mappings of one file shares one copy of its path */
	for (size_t i = 0; i < n; i++)
		if (v[i].path[0] && v[i].path != prev)
			bytes += strlen(prev = v[i].path) + 1;
	return bytes;
}

int proc__read_maps(struct proc *p)
{
	struct vma *v;
	size_t n;
	char *buf;
	long len;
	int err;

	p->maps_read_ns = now_ns();
	if (p->gone || p->dir_fd < 0)
		return -ESRCH;
	len = read_file_alloc(p->dir_fd, "maps", PROC_MAPS_MAX, &buf, NULL);
	if (len < 0) {
		if (len == -ESRCH || len == -ENOENT)
			p->gone = 1;
		return len;
	}
	if (len == 0) {	/* a zombie or exited process reads as empty */
		free(buf);
		p->gone = 1;
		return -ESRCH;
	}
	err = maps__parse(buf, len, &v, &n, NULL);
	free(buf);
	p->maps_cost_ns = now_ns() - p->maps_read_ns;
	if (err)
		return err;
	maps__free(p->vmas, p->nvmas);
	p->vmas = v;
	p->nvmas = n;
	p->maps_bytes = maps__bytes(v, n);
	p->maps_released = 0;
	runtime__maps_changed(p);
	return 0;
}

void proc__release_maps(struct proc *p)
{
	maps__free(p->vmas, p->nvmas);
	p->vmas = NULL;
	p->nvmas = 0;
	p->maps_bytes = 0;
	p->maps_read_ns = 0;
	p->maps_released = 1;
}

int proc__refresh_maps(struct proc *p, uint64_t min_interval_ns)
{
	if (p->gone)
		return -ESRCH;
	/* A process with a huge map (tens of thousands of mappings) is re-read less often: re-reads
	 * cost at most about 2 % of a core, whoever asks for them. */
	if (min_interval_ns < MAPS_COST_FACTOR * p->maps_cost_ns)
		min_interval_ns = MAPS_COST_FACTOR * p->maps_cost_ns;
	if (!p->maps_released && now_ns() - p->maps_read_ns < min_interval_ns)
		return -EAGAIN;
	return proc__read_maps(p);
}

int proc__alive(struct proc *p)
{
	/* A lookup in the directory of a process that is gone fails (ESRCH): one system call, where
	 * reading its stat was three and made the kernel add up every thread's times. */
	if (!p->gone && (p->dir_fd < 0 || faccessat(p->dir_fd, "stat", F_OK, 0)))
		p->gone = 1;
	return !p->gone;
}

/* dir_fd: /proc/<pid> already checked to be this process, or -1 to open and check it here. */
static void proc_open(struct proctab *pt, struct proc *p, int dir_fd)
{
	char path[96];
	uint64_t ticks = 0;

	p->dir_fd = dir_fd;
	if (p->dir_fd < 0) {
		snprintf(path, sizeof(path), "%s/%u", pt->proc_root, p->pid);
		p->dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (p->dir_fd < 0)
			goto gone;
		/* The pid may already belong to a newer process: compare start times (10 ms ticks). */
		if (p->start_ticks &&
		    (procfs__starttime(p->dir_fd, &ticks) || ticks != p->start_ticks))
			goto gone;
	}
	p->root_fd = procfs__open_root(p->dir_fd);
	if (p->root_fd < 0)
		p->root_fd = -1;
	if (procfs__nspid(p->dir_fd, &p->nspid))
		p->nspid = p->pid;
	p->uid = proc_euid(p->dir_fd);
	proc__read_maps(p);
	return;
gone:
	if (p->dir_fd >= 0)
		close(p->dir_fd);
	p->dir_fd = -1;
	p->gone = 1;
}

/* proctab__get, with dir_fd as for proc_open; dir_fd is consumed. */
static struct proc *get(struct proctab *pt, uint32_t pid, uint64_t start_ticks, const char *comm,
			int dir_fd)
{
	struct proc *p = lookup(pt, pid, start_ticks);
	uint32_t idx;

	if (p)
		goto close_dir;
	if (pt->free_head == NO_IDX && (VEC_RESERVE(pt->procs, pt->cap, pt->n + 1) ||
					VEC_RESERVE(pt->next, pt->next_cap, pt->n + 1)))
		goto close_dir;
	p = calloc(1, sizeof(*p));
	if (!p)
		goto close_dir;
	if (pt->free_head != NO_IDX) {
		idx = pt->free_head;
		pt->free_head = pt->next[idx];
	} else {
		idx = pt->n++;
	}
	p->pid = pid;
	p->start_ticks = start_ticks;
	p->idx = idx;
	p->dir_fd = -1;
	p->root_fd = -1;
	p->nspid = pid;
	p->uid = -1;
	p->env = pt->env;
	if (comm)
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
	pt->procs[idx] = p;
	link_proc(pt, p);
	if (++pt->live > pt->nbuckets)
		grow_buckets(pt);
	proc_open(pt, p, dir_fd);
	return p;

close_dir:
	if (dir_fd >= 0)
		close(dir_fd);
	return p;
}

static void unlink_proc(struct proctab *pt, struct proc *p);

void proctab__remove(struct proctab *pt, struct proc *p)
{
	unlink_proc(pt, p);
	pt->procs[p->idx] = NULL;
	pt->next[p->idx] = pt->free_head;
	pt->free_head = p->idx;
	pt->live--;
	proc_free(p);
}

struct proc *proctab__find(const struct proctab *pt, uint32_t pid, uint64_t start_ticks)
{
	return lookup(pt, pid, start_ticks);
}

/* Take p out of its bucket: lookups find the entry that replaces it (proctab__remove copes). */
static void unlink_proc(struct proctab *pt, struct proc *p)
{
	uint32_t *link = &pt->buckets[bucket(pt, p->pid, p->start_ticks)];

	while (*link != NO_IDX && *link != p->idx)
		link = &pt->next[*link];
	if (*link == p->idx)
		*link = pt->next[p->idx];
}

struct proc *proctab__exec(struct proctab *pt, struct proc *p, const char *comm, uint64_t exec_ns)
{
	struct proc *np;

	if (pt->procs[p->idx] != p || p->execed) {
		errno = EINVAL;
		return NULL;
	}
	unlink_proc(pt, p);
	p->execed = 1;
	np = get(pt, p->pid, p->start_ticks, comm, -1);
	if (!np) {
		p->execed = 0;
		link_proc(pt, p);
		errno = ENOMEM;
		return NULL;
	}
	p->gone = 1;
	np->exec_ns = exec_ns;
	np->before_exec = p->idx + 1;
	return np;
}

struct proc *proctab__at_time(const struct proctab *pt, struct proc *p, uint64_t time_ns)
{
	/* Bounded by the table: each step goes to an older entry of the same process. */
	for (uint32_t steps = 0; p && p->exec_ns > time_ns && p->before_exec && steps < pt->n; steps++) {
		struct proc *old = proctab__at(pt, p->before_exec - 1);

		if (!old || !old->execed || old->pid != p->pid || old->start_ticks != p->start_ticks)
			break;	/* already freed: the newest entry is the best there is */
		p = old;
	}
	return p;
}

struct proc *proctab__get(struct proctab *pt, uint32_t pid, uint64_t start_ticks, const char *comm)
{
	return get(pt, pid, start_ticks, comm, -1);
}

struct proc *proctab__open(struct proctab *pt, uint32_t pid)
{
	char path[96], stat[1024], comm[16] = "", *open_paren, *close_paren;
	uint64_t ticks;
	int dir_fd;
	long len;

	snprintf(path, sizeof(path), "%s/%u", pt->proc_root, pid);
	dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0) {
		errno = ESRCH;
		return NULL;
	}
	len = read_small_file(dir_fd, "stat", stat, sizeof(stat));
	if (len <= 0 || procfs__parse_starttime(stat, len, &ticks)) {
		close(dir_fd);
		errno = ESRCH;
		return NULL;
	}
	open_paren = strchr(stat, '(');
	close_paren = strrchr(stat, ')');
	if (open_paren && close_paren > open_paren)
		snprintf(comm, sizeof(comm), "%.*s", (int)(close_paren - open_paren - 1), open_paren + 1);
	/* The stat just read comes from this very directory: no second check needed. */
	return get(pt, pid, ticks, comm, dir_fd);
}

struct proc *proctab__at(const struct proctab *pt, uint32_t idx)
{
	return idx < pt->n ? pt->procs[idx] : NULL;
}

uint32_t proctab__count(const struct proctab *pt)
{
	return pt->n;
}

uint32_t proctab__live(const struct proctab *pt)
{
	return pt->live;
}

static const struct vma *find(const struct proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nvmas;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < p->vmas[mid].start)
			hi = mid;
		else if (addr >= p->vmas[mid].end)
			lo = mid + 1;
		else
			return &p->vmas[mid];
	}
	return NULL;
}

uint64_t proc__age_ns(const struct proc *p)
{
	uint64_t start = p->start_ticks * SP_NSEC_PER_TICK, now = boottime_ns();

	return now > start ? now - start : 0;
}

int proc__young(const struct proc *p)
{
	return proc__age_ns(p) < RUNTIME_YOUNG_NS;
}

const struct vma *proc__vma(const struct proc *p, uint64_t addr)
{
	return find(p, addr);
}
