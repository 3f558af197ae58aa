/* proctab.c: process table keyed by (pid, start time); mappings from /proc/<pid>/maps. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dotnet.h"
#include "hexnum.h"
#include "intern.h"
#include "proctab.h"
#include "profiler.h"
#include "util.h"


struct proctab {
	char proc_root[64];
	struct intern *keys;	/* (pid, start_ticks) -> idx */
	struct proc **procs;
	uint32_t n, cap;
};

struct proctab *proctab__new(const char *proc_root)
{
	struct proctab *pt = calloc(1, sizeof(*pt));

	if (!pt)
		return NULL;
	snprintf(pt->proc_root, sizeof(pt->proc_root), "%s", proc_root ? proc_root : "/proc");
	pt->keys = intern__new();
	if (!pt->keys) {
		free(pt);
		errno = ENOMEM;
		return NULL;
	}
	return pt;
}

void maps__free(struct vma *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)v[i].path);
	free(v);
}

static void proc_free(struct proc *p)
{
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
	intern__free(pt->keys);
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

/* One maps line: "start-end perms offset major:minor inode   path". */
static int parse_line(const char *s, const char *end, struct vma *v)
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
	v->path = strndup(path, end - path);
	if (!v->path)
		return -ENOMEM;
	v->kind = classify(v->path);
	return 0;
}

static int vma_cmp(const void *a, const void *b)
{
	const struct vma *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int maps__parse(const char *buf, size_t len, struct vma **out, size_t *n, size_t *bad)
{
	const char *s = buf, *end = buf + len;
	struct vma *v = NULL, *nv;
	size_t cnt = 0, cap = 0, nbad = 0;
	int err;

	while (s < end) {
		const char *eol = memchr(s, '\n', end - s);

		if (!eol)
			eol = end;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				err = -ENOMEM;
				goto err_free;
			}
			v = nv;
		}
		err = parse_line(s, eol, &v[cnt]);
		if (err == -ENOMEM)
			goto err_free;
		if (err)
			nbad++;
		else
			cnt++;
		s = eol + 1;
	}
	if (cnt)
		qsort(v, cnt, sizeof(*v), vma_cmp);
	*out = v;
	*n = cnt;
	if (bad)
		*bad = nbad;
	return 0;

err_free:
	maps__free(v, cnt);
	return err;
}

int proc__read_maps(struct proc *p)
{
	struct vma *v;
	size_t n;
	char *buf;
	long len;
	int err;

	p->maps_read_ns = now_ns();
	p->maps_reads++;
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
	if (err)
		return err;
	/* Symbol files and mapping ids survive a re-read: carry them over by identity. */
	for (size_t i = 0, j = 0; i < n && p->nvmas; i++) {
		while (j < p->nvmas && p->vmas[j].start < v[i].start)
			j++;
		if (j < p->nvmas && p->vmas[j].start == v[i].start && p->vmas[j].end == v[i].end &&
		    p->vmas[j].ino == v[i].ino && p->vmas[j].pgoff == v[i].pgoff &&
		    !strcmp(p->vmas[j].path, v[i].path)) {
			v[i].file = p->vmas[j].file;
			v[i].mapping_id = p->vmas[j].mapping_id;
		}
	}
	for (size_t i = 0; i < n && !p->is_dotnet; i++)
		if (v[i].kind == VMA_FILE && dotnet__is_runtime_path(v[i].path))
			p->is_dotnet = 1;
	maps__free(p->vmas, p->nvmas);
	p->vmas = v;
	p->nvmas = n;
	return 0;
}

/* Field 22 of /proc/<pid>/stat, the start time in ticks. */
static int stat_start_ticks(int dir_fd, uint64_t *ticks)
{
	char buf[1024];
	long len = read_small_file(dir_fd, "stat", buf, sizeof(buf));

	return len < 0 ? len : dotnet__parse_starttime(buf, len, ticks);
}

/* dir_fd: /proc/<pid> already checked to be this process, or -1 to open and check it here. */
static void proc_open(struct proctab *pt, struct proc *p, int dir_fd)
{
	char path[96], status[8192];
	uint64_t ticks = 0;
	long len;

	p->dir_fd = dir_fd;
	if (p->dir_fd < 0) {
		snprintf(path, sizeof(path), "%s/%u", pt->proc_root, p->pid);
		p->dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (p->dir_fd < 0)
			goto gone;
		/* The pid may already belong to a newer process: compare start times (10 ms ticks). */
		if (p->start_ticks &&
		    (stat_start_ticks(p->dir_fd, &ticks) || ticks != p->start_ticks))
			goto gone;
	}
	p->root_fd = openat(p->dir_fd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	len = read_small_file(p->dir_fd, "status", status, sizeof(status));
	if (len < 0 || dotnet__parse_nspid(status, len, &p->nspid))
		p->nspid = p->pid;
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
	struct { uint32_t pid; uint64_t start; } __attribute__((packed)) key = { pid, start_ticks };
	struct proc *p = NULL, **np;
	int64_t id = intern__id(pt->keys, &key, sizeof(key), NULL);

	if (id < 0)
		goto close_dir;
	if (id < pt->n) {
		p = pt->procs[id];
		goto close_dir;
	}
	/* New, or an earlier attempt ran out of memory after interning: ids are dense, id == n. */
	if (pt->n == pt->cap) {
		uint32_t cap = pt->cap ? pt->cap * 2 : 64;

		np = realloc(pt->procs, cap * sizeof(*np));
		if (!np)
			goto close_dir;
		pt->procs = np;
		pt->cap = cap;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		goto close_dir;
	p->pid = pid;
	p->start_ticks = start_ticks;
	p->idx = id;
	p->dir_fd = -1;
	p->root_fd = -1;
	p->nspid = pid;
	if (comm)
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
	pt->procs[pt->n++] = p;
	proc_open(pt, p, dir_fd);
	return p;

close_dir:
	if (dir_fd >= 0)
		close(dir_fd);
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
	if (len <= 0 || dotnet__parse_starttime(stat, len, &ticks)) {
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

const struct vma *proc__vma(struct proc *p, uint64_t addr, uint64_t min_interval_ns)
{
	const struct vma *v = find(p, addr);

	if (v || p->gone || now_ns() - p->maps_read_ns < min_interval_ns)
		return v;
	if (proc__read_maps(p))
		return NULL;
	return find(p, addr);
}
