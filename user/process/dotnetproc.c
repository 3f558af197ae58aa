/* dotnetproc.c: per-process .NET state (the runtime's hooks, runtime.h): finds and reads its perf
 * map / jitdump through its root, names JIT and ReadyToRun code. Perf maps turned on and undone:
 * dotnetenable.c; sparse reading and idle release: dotnetsparse.c; the bounded perf map policy:
 * dotnetbounded.c; what they share: dotnetproc_int.h. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/sysmacros.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "diagipc.h"
#include "dotnet.h"
#include "dotnetproc.h"
#include "dotnetproc_int.h"
#include "dotnetstubs.h"
#include "log.h"
#include "procfs.h"
#include "proctab.h"
#include "r2r.h"
#include "rootfs.h"
#include "rtversion.h"
#include "util.h"
#include "vec.h"

#define REOPEN_NS (RUNTIME_BACKOFF_MAX_NS)	/* the file still missing while the other is read */
#define MAX_IMAGES 1024		/* file-backed mappings looked at as ReadyToRun images, per process */

void dn_set_state(struct dotnet_state *d, enum dotnetproc_state st, const char *fmt, ...)
{
	va_list ap;

	d->state = st;
	va_start(ap, fmt);
	vsnprintf(d->detail, sizeof(d->detail), fmt, ap);
	va_end(ap);
}

/* ---- the runtime's version and its perf map hazards -------------------------------------- */

/* The runtime's version, from the libcoreclr.so the process maps, read inside its root once; the
 * file read must be the very one mapped. Sets d->gate (unknown: every hazard assumed). */
static void read_version(const struct proc *p, struct dotnet_state *d)
{
	const struct vma *v = NULL;
	struct stat st;
	int fd;

	if (d->ver_read)
		return;
	d->ver_read = 1;
	d->ver_err = -ENOENT;
	for (size_t i = 0; i < p->nvmas && !v; i++)
		if (p->vmas[i].kind == VMA_FILE && dotnet__is_runtime_path(p->vmas[i].path))
			v = &p->vmas[i];
	if (v && p->root_fd >= 0) {
		fd = rootfs__open(p->root_fd, v->path, O_RDONLY, S_IFREG, 0, 0);
		if (fd < 0)
			d->ver_err = fd;
		else if (fstat(fd, &st) ||
			 ((uint64_t)major(st.st_dev) << 32 | minor(st.st_dev)) != v->dev ||
			 st.st_ino != v->ino)
			d->ver_err = -ESTALE;	/* another file at that path now (an upgrade) */
		else
			d->ver_err = rtversion__read_fd(fd, &d->ver);
		if (fd >= 0)
			close(fd);
	}
	rtversion__gate(d->ver_err ? NULL : &d->ver, &d->gate);
}

/* Whether perf maps may be turned on in it over the diagnostics IPC; when not, the process is
 * left as it is, with the reason as its state (its JIT frames are then counted as
 * RT_UNNAMED_WITHHELD; ReadyToRun code and copied stubs are still named). */
int dn_gate_allows(const struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
{
	read_version(p, d);
	if (d->gate.may_enable)
		return 1;
	if (!d->withheld) {
		d->withheld = 1;
		dn_set_state(d, DOTNETPROC_WITHHELD, "%s", d->gate.reason);
		if (o->verbose)
			log_info("pid %u: %s", p->pid, d->gate.reason);
	}
	return 0;
}

/* Perf maps on that we did not turn on (its environment, another tool) in a runtime with the
 * deadlock: read as usual (the user's choice), said once. */
static void warn_hazard(const struct proc *p, struct dotnet_state *d)
{
	if (d->warned || d->enabled_by_us)
		return;
	read_version(p, d);
	if (!(d->gate.hazards & RTHAZ_DEADLOCK_128401))
		return;
	d->warned = 1;
	log_warn("pid %u (%s) has perf maps on in .NET runtime %s, which has "
		"a known deadlock with perf maps on (dotnet/runtime#128401): the process may hang; "
		"10.0.11 and later are fixed", p->pid, p->comm, d->ver.text);
}

static int detect(const struct proc *p)
{
	for (size_t i = 0; i < p->nvmas; i++)
		if (p->vmas[i].kind == VMA_FILE && dotnet__is_runtime_path(p->vmas[i].path))
			return 1;
	return 0;
}

static void *attach(struct proc *p, const struct runtime_env *env)
{
	struct dotnet_state *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->files.map_fd = -1;
	d->files.jitdump_fd = -1;
	d->pm = perfmap__new(NULL);
	d->stubs = dnstubs__new();
	if (!d->pm || !d->stubs) {
		perfmap__free(d->pm);
		dnstubs__free(d->stubs);
		free(d);
		return NULL;
	}
	dn_set_state(d, DOTNETPROC_WAITING, "not sampled yet: nothing read");
	/* Where idle processes' data is let go (the agent), a process starts sparse: most of a
	 * node's processes are idle when the agent starts, and their whole indexes would be let go
	 * two quiet windows later anyway. A busy one goes whole after a few reads (below). */
	if (env->idle_release_ns) {
		dn_sparse_start(d);
		if (env->verbose)
			log_info("pid %u: read sparsely from its first sample on",
				p->pid);
	}
	return d;
}

/*
 * The runtime writes its files as the process's user, as new files with one link. Anything else
 * was put there (a bind mount or a hard link of a file the process could never write: a root-only
 * file of the host), and we would read it as root: checked on what was opened, not on the path.
 * Refused (fd closed, -1) with the reason in the state.
 */
static void not_its_own(const struct proc *p, struct dotnet_state *d, int *fd, const char *stem,
			const char *ext)
{
	struct statfs sf;
	struct stat st;

	int64_t born, changed;

	if (*fd < 0)
		return;
	if (fstat(*fd, &st)) {
		close(*fd);
		*fd = -1;
		return;
	}
	/* A file last written before the process started belongs to an earlier process that had the
	 * same pid (pids wrap): not refused, just not ours; it is left alone and perf maps are turned
	 * on, which makes the runtime write it anew. One second of slack for the 10 ms start ticks. */
	born = (int64_t)realtime_ns() - (int64_t)proc__age_ns(p);
	changed = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	if (p->start_ticks && changed < born - 1000000000ll) {
		close(*fd);
		*fd = -1;
		d->stale++;
		return;
	}
	/* Mounted there after on_remote_fs looked (a race): the file system's own answer. */
	if (!(p->env && p->env->allow_remote_files) && !fstatfs(*fd, &sf) &&
	    procfs__fsmagic_remote(sf.f_type)) {
		dn_set_state(d, DOTNETPROC_REFUSED, "refused %s/%s-%d.%s: on a remote or FUSE file system "
			  "(magic 0x%lx; --allow-remote-files reads it)", d->files.dir, stem, p->nspid,
			  ext, (unsigned long)sf.f_type);
		if (p->env && p->env->remote_refused)
			(*p->env->remote_refused)++;
		close(*fd);
		*fd = -1;
		return;
	}
	if (p->uid < 0 ||
	    (S_ISREG(st.st_mode) && st.st_nlink == 1 && (int64_t)st.st_uid == p->uid))
		return;
	dn_set_state(d, DOTNETPROC_REFUSED, "refused %s/%s-%d.%s: %s", d->files.dir, stem, p->nspid, ext,
		  st.st_nlink != 1 ? "a hard link (not the runtime's file)" :
				     "not owned by the process's user (not the runtime's file)");
	close(*fd);
	*fd = -1;
}

/*
 * A file on a remote or FUSE file system is never opened (unless allowed): a server that does not
 * answer would hold us in an uninterruptible read. Asked of the process's mountinfo, which names
 * every mount (a bind mount over the file itself too) without touching the file system. 0, or
 * -EREMOTE after setting the state.
 */
static int on_remote_fs(struct proc *p, struct dotnet_state *d)
{
	static const char *const fmts[] = { "%s/perf-%d.map", "%s/jit-%d.dump" };
	char path[DOTNET_DIR_MAX + 64], type[64];

	if (p->env && p->env->allow_remote_files)
		return 0;
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		snprintf(path, sizeof(path), fmts[i], d->files.dir, p->nspid);
		if (procfs__fstype(p->dir_fd, path, type, sizeof(type)) || !procfs__fstype_remote(type))
			continue;
		dn_set_state(d, DOTNETPROC_REFUSED, "refused %s: on a %s file system (remote or FUSE: "
			  "its reads may hang; --allow-remote-files reads it)", path, type);
		if (p->env && p->env->remote_refused)
			(*p->env->remote_refused)++;
		return -EREMOTE;
	}
	return 0;
}

/* Open whichever of the two files is not open yet. */
void dn_open_files(struct proc *p, struct dotnet_state *d)
{
	struct dotnet_jit_files f;

	d->last_open_ns = now_ns();
	/* The directory comes from the environment, fixed at exec: read it once. */
	if (p->root_fd < 0 ||
	    (!d->files.dir[0] && dotnet__jit_dir(p->dir_fd, d->files.dir, sizeof(d->files.dir))) ||
	    on_remote_fs(p, d) || dotnet__open_jit_files_in(p->root_fd, d->files.dir, p->nspid, &f))
		return;
	not_its_own(p, d, &f.map_fd, "perf", "map");
	not_its_own(p, d, &f.jitdump_fd, "jit", "dump");
	if (d->files.map_fd < 0 && f.map_fd >= 0) {
		d->files.map_fd = f.map_fd;
		f.map_fd = -1;
	}
	if (d->files.jitdump_fd < 0 && f.jitdump_fd >= 0) {
		d->files.jitdump_fd = f.jitdump_fd;
		f.jitdump_fd = -1;
	}
	if (f.map_err == -ELOOP || f.jitdump_err == -ELOOP)
		dn_set_state(d, DOTNETPROC_REFUSED,
			  "refused %s/%s-%d.%s: a symlink (possible escape from the container)", f.dir,
			  f.map_err == -ELOOP ? "perf" : "jit", p->nspid,
			  f.map_err == -ELOOP ? "map" : "dump");
	else if (f.map_err == -EINVAL || f.jitdump_err == -EINVAL)
		dn_set_state(d, DOTNETPROC_REFUSED, "refused a perf map / jitdump in %s: not a regular file",
			  f.dir);
	dotnet__close_jit_files(&f);
}

/* Idle enough to have its mappings freed: perf maps off after long idleness all the same. */
static void idle_poll(struct proc *p, void *state, const struct runtime_env *o)
{
	dn_bounded(p, state, o);
}

/* A read of one file returned n: a truncation reads both again (paced), an error is logged. 1
 * unless n is 0 (nothing new). */
static int file_read(struct proc *p, struct dotnet_state *d, const struct runtime_env *o,
		     int64_t n, const char *what)
{
	int grew = n != 0;

	if (n == -ESTALE)
		n = dn_restart_paced(p, d);
	if (n < 0 && o->verbose)
		log_warn("pid %u: %s: %s", p->pid, what, strerror(-n));
	return grew;
}

int dn_read_files(struct proc *p, struct dotnet_state *d, const struct runtime_env *o)
{
	int grew = 0;

	/* The jitdump first: a perf map line it already holds is then skipped, where the other
	 * way round both would be kept (the map entry hidden). */
	if (d->files.jitdump_fd >= 0 && d->pm)
		grew |= file_read(p, d, o, perfmap__read_jitdump_fd(d->pm, d->files.jitdump_fd),
				  "jitdump");
	if (d->files.map_fd >= 0 && d->pm)
		grew |= file_read(p, d, o, perfmap__read_map_fd(d->pm, d->files.map_fd), "perf map");
	return grew;
}

static int poll(struct proc *p, void *state, const struct runtime_env *o)
{
	struct dotnet_state *d = state;
	int have, missing, grew = 0;
	int64_t n;

	/* The answer to EnablePerfMap, once it came (the files may be there before it). */
	if (d->enabling)
		dn_take_enable(p, d, 0);
	dn_bounded(p, d, o);
	/* Nothing is read for a process until it is sampled, nor kept while it is idle. */
	if (!p->sampled || dn_idle(p, d, o))
		return RT_WAIT;
	if (d->state == DOTNETPROC_WAITING && d->files.map_fd < 0 && d->files.jitdump_fd < 0 &&
	    !d->enabling)
		dn_set_state(d, DOTNETPROC_WAITING, "no perf map yet");
	if (o->naming_next) {
		dn_quiet_window(p, d, o);
		dn_prev_window(d);
	}
	if (d->sparse && (o->naming_next || p->gone)) {
		d->sparse_read_now = 0;
		if ((n = dn_sparse_read(p, d)) < 0)
			return (int)n;
	} else if (!d->sparse && !d->pm && (n = dn_restart(p, d)) < 0) {
		return (int)n;
	}

	have = d->files.map_fd >= 0 || d->files.jitdump_fd >= 0;
	missing = d->files.map_fd < 0 || d->files.jitdump_fd < 0;
	/* With nothing open, the caller's backoff paces the retries; with one file open, the other
	 * (often never written, e.g. PerfMapType 3) is looked for now and then. */
	if (!p->gone && d->state != DOTNETPROC_REFUSED && missing &&
	    (!have || now_ns() - d->last_open_ns >= REOPEN_NS))
		dn_open_files(p, d);
	if (d->files.map_fd < 0 && d->files.jitdump_fd < 0 && d->state != DOTNETPROC_REFUSED)
		dn_try_enable(p, d, o);	/* once, and only when o allows it */
	else
		dn_try_add_jitdump(p, d, o);	/* its own perf map alone, in a runtime that holds it back */
	/* Not while our start afresh is out: the files it truncates are read from their start
	 * when it is answered, the index kept for the frames sampled before (a truncation found
	 * here would let it go). */
	if (!d->pm_talk)
		grew |= dn_read_files(p, d, o);
	have = d->files.map_fd >= 0 || d->files.jitdump_fd >= 0;
	if (have)
		warn_hazard(p, d);
	if (have && d->state == DOTNETPROC_WAITING)
		dn_set_state(d, DOTNETPROC_READING, "reading %s%s%s", d->files.map_fd >= 0 ? "perf map" : "",
			  d->files.map_fd >= 0 && d->files.jitdump_fd >= 0 ? " + " : "",
			  d->files.jitdump_fd >= 0 ? "jitdump" : "");
	if (p->gone)
		return RT_DONE;	/* what the files hold now is all there will be */
	/* A talk out: its answer at once. Files that grew: read again at once (the runtime is
	 * compiling). Files that did not: the backoff paces the next read (most processes, most of
	 * the time: each read costs system calls); a window's end reads them all (engine__cut). */
	return d->enabling || (have && grew) ? RT_READY : RT_WAIT;
}

/* Anything outside the ELF files' symbols may be JIT or ReadyToRun code, except the vDSO. A
 * sparse process's next read covers it. */
static int claims(const struct proc *p, void *state, uint64_t addr, int in_file)
{
	const struct vma *v = proc__vma(p, addr);
	struct dotnet_state *d = state;

	if (v && v->kind == VMA_VDSO)
		return 0;
	d->claimed++;
	dn_sparse_want(d, addr);
	return 1;
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

/* The directory of path inside p's root (O_PATH), or -errno. */
static int image_dir(const struct proc *p, const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (!slash || slash == path || (size_t)(slash - path) >= sizeof(dir))
		return -EINVAL;
	memcpy(dir, path, slash - path);
	dir[slash - path] = 0;
	return rootfs__open(p->root_fd, dir, O_PATH, S_IFDIR, 0, 0);
}

/*
 * The image behind file mapping v, opened once per process through its root (never leaving it)
 * and checked to be the very inode mapped; the parsed table is shared by every process that maps
 * the same file. NULL when the process has too many.
 */
static struct dn_image *image_of(struct proc *p, struct dotnet_state *d, const struct vma *v)
{
	struct dn_image *im;
	struct stat st;
	int fd;

	for (size_t i = 0; i < d->nimages; i++)
		if (d->images[i].dev == v->dev && d->images[i].ino == v->ino)
			return &d->images[i];
	if (d->nimages >= MAX_IMAGES || VEC_RESERVE(d->images, d->images_cap, d->nimages + 1))
		return NULL;
	im = &d->images[d->nimages++];
	memset(im, 0, sizeof(*im));
	im->dev = v->dev;
	im->ino = v->ino;
	im->managed = ends_with(v->path, ".dll") || ends_with(v->path, ".exe");
	fd = p->root_fd >= 0 ? rootfs__open(p->root_fd, v->path, O_RDONLY, S_IFREG, 0, 0) : -1;
	if (fd < 0)
		return im;
	/* A path another file now sits at (replaced, or a container remapping it) is not read. */
	if (!fstat(fd, &st) && ((uint64_t)major(st.st_dev) << 32 | minor(st.st_dev)) == v->dev &&
	    st.st_ino == v->ino) {
		/* A composite image's component assemblies are read next to it, inside the root. */
		int dir_fd = image_dir(p, v->path);

		im->img = r2r__get_in(fd, dir_fd);
		if (dir_fd >= 0)
			close(dir_fd);
	}
	close(fd);
	if (im->img) {
		struct r2r_image_stats rs;

		r2r__stats(im->img, &rs);
		im->managed = rs.status != R2R_NOT_PE && rs.status != R2R_NOT_CLI;
	}
	return im;
}

/* Precompiled code named from its image, whatever the perf maps hold: 0, or -ENOENT with the
 * reason in out->unnamed. */
static int symbolize_image(struct proc *p, struct dotnet_state *d, uint64_t addr,
			   struct rt_symbol *out)
{
	const struct vma *v = proc__vma(p, addr);
	struct dn_image *im;
	const char *name;
	uint32_t rva;

	if (!v || v->kind != VMA_FILE) {
		struct perfmap_stats ps;

		perfmap__stats(d->pm, &ps);
		out->unnamed = ps.jitdump_stopped && d->files.map_fd < 0 ? RT_UNNAMED_JITDUMP_STOPPED :
									    RT_UNNAMED_NO_ENTRY;
		if (d->withheld && d->files.map_fd < 0 && d->files.jitdump_fd < 0)
			out->unnamed = RT_UNNAMED_WITHHELD;
		return -ENOENT;
	}
	im = image_of(p, d, v);
	if (!im || !im->img || r2r__file_to_rva(im->img, addr - v->start + v->pgoff, &rva) ||
	    !(name = r2r__lookup(im->img, rva, NULL, NULL))) {
		struct r2r_image_stats rs;

		r2r__stats(im ? im->img : NULL, &rs);
		out->unnamed = !im || !im->managed ? RT_UNNAMED_NOT_OURS :
			       im->img && rs.status == R2R_OK ? RT_UNNAMED_NO_ENTRY : RT_UNNAMED_IMAGE;
		return -ENOENT;
	}
	d->r2r_named++;
	out->name = name + perfmap__method_offset(name, strlen(name));
	out->system_name = name;
	out->tier = "PreJIT";	/* what the runtime's jitdump calls precompiled code */
	return 0;
}

static int symbolize(struct proc *p, void *state, uint64_t addr, uint64_t time_ns,
		     struct rt_symbol *out)
{
	struct dotnet_state *d = state;
	const struct perfmap_sym *s;

	/* Sparse, and not read for this address (a sample's leaf, whose method's range is needed
	 * now): read at once, once a window; else at the window's end. */
	if (d->sparse && !dn_in_filter(d, addr)) {
		dn_sparse_want(d, addr);
		if (d->sparse && !d->sparse_read_now) {
			d->sparse_read_now = 1;
			dn_sparse_read(p, d);
		}
	}
	if (!d->sparse && !d->pm)	/* it went whole just now */
		dn_restart(p, d);
	s = d->pm ? perfmap__lookup(d->pm, addr, time_ns) : NULL;

	/* Code logged after the sample: a perf map enabled late logs existing code with the time of
	 * the enabling, so the code was there before its record. Take what the range holds now. */
	if (!s && time_ns && d->pm)
		s = perfmap__lookup(d->pm, addr, 0);
	/* Code that was there before our last start afresh (a frame in flight). */
	for (size_t i = d->nprev; !s && i-- > 0;)
		s = perfmap__lookup(d->prev[i], addr, 0);
	if (!s) {
		int err = symbolize_image(p, d, addr, out);

		if (err)	/* a frame left to name again: not a quiet window */
			d->claimed++;
		return err;
	}
	out->name = s->name + perfmap__method_offset(s->name, strlen(s->name));
	out->system_name = s->name;
	out->tier = s->tier;
	/* A method's range, for reading its prologue; stubs (one line per stub or per block of
	 * them) are hand-written code whose start says nothing about its frame. */
	if (strncmp(s->name, "stub", 4)) {
		out->start = s->start;
		out->size = s->size;
	}
	return 0;
}

static void prefetch(struct proc *p, void *state, const uint64_t *addrs, size_t n)
{
	struct dotnet_state *d = state;

	(void)p;
	perfmap__prefetch(d->pm, addrs, n);	/* NULL-safe */
}

/* No perf map names it: it may be the runtime's copy of its own code (dotnetstubs.h). */
static int copy_of(struct proc *p, void *state, uint64_t addr, uint64_t *orig)
{
	struct dotnet_state *d = state;

	return dnstubs__copy_of(d->stubs, p, addr, orig);
}

static void detach(struct proc *p, void *state, const struct runtime_env *o)
{
	struct dotnet_state *d = state;
	uint32_t hr;

	dn_end_enabling(p, d, o);
	dn_end_bounded(p, d, o);
	/* Told to stop at once: no talk. The entry in the state directory stays, so the next
	 * spanprof start turns its perf maps off (as after a kill -9). */
	if (d->enabled_by_us && o && o->talks_held && !p->execed && proc__alive(p)) {
		dotnet__close_jit_files(&d->files);
		perfmap__free(d->pm);
		dn_free_prev(d);
		dn_sparse_end(d);
		dnstubs__free(d->stubs);
		free(d);
		return;
	}
	/* Leave the process as we found it: perf map writing costs it CPU while it jits, and the
	 * files we made it write would stay in its /tmp for good. After an exec the runtime we
	 * talked to is gone: nothing to turn off (its socket, if any, is the new program's). */
	if (d->enabled_by_us && p->root_fd >= 0 &&
	    (p->execed || diagipc__disable_perfmap(p->dir_fd, p->root_fd, p->pid, p->nspid, &hr) == 0 ||
	     !proc__alive(p)))
		dn_remove_files(p, d, 0);
	if (d->enabled_by_us)
		dn_forget_enabled(p);
	/* record -- COMMAND turned them on through the environment: gone with the process. */
	else if (o && o->perfmaps_ours && p->root_fd >= 0 && !proc__alive(p))
		dn_remove_files(p, d, 0);
	/* The jitdump we turned on beside its own perf map: gone with the process (its perf map
	 * is the user's). While it lives it stays on: off, the perf map would go off too. */
	else if (d->jitdump_added && p->root_fd >= 0 && !proc__alive(p))
		dn_remove_files(p, d, 1);
	dotnet__close_jit_files(&d->files);
	perfmap__free(d->pm);
	dn_free_prev(d);
	dn_sparse_end(d);
	for (size_t i = 0; i < d->nimages; i++)
		r2r__put(d->images[i].img);
	free(d->images);
	dnstubs__free(d->stubs);
	free(d);
}

static void describe(const struct proc *p, const void *state, char *buf, size_t len)
{
	const struct dotnet_state *d = state;
	struct perfmap_stats ps;

	perfmap__stats(d->pm, &ps);
	snprintf(buf, len, "%s; %" PRIu64 " code ranges%s", d->detail, ps.entries,
		 ps.jitdump_stopped ? "; jitdump stopped (runtime bug dotnet/runtime#132935)" : "");
	if (d->r2r_named) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "; %" PRIu64 " frames named from ReadyToRun images (%zu mapped files looked at)",
			 d->r2r_named, d->nimages);
	}
	{
		struct dnstubs_stats ss;

		dnstubs__stats(d->stubs, &ss);
		if (ss.found || ss.searches || ss.capped) {
			size_t n = strlen(buf);

			snprintf(buf + n, len - n, "; %u runtime stub addresses named as the "
				 "libcoreclr.so code they copy (%u searches, %u not found, %u past the cap)",
				 ss.found, ss.searches, ss.not_found, ss.capped);
		}
	}
	if (d->ver_read) {
		size_t n = strlen(buf);

		if (d->ver_err)
			snprintf(buf + n, len - n, "; runtime version unknown (%s)", strerror(-d->ver_err));
		else
			snprintf(buf + n, len - n, "; runtime %s%s%.7s%s", d->ver.text,
				 d->ver.commit[0] ? " (commit " : "", d->ver.commit,
				 d->ver.commit[0] ? ")" : "");
	}
	if (d->stale) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "; passed over %u stale files of an earlier process with its pid",
			 d->stale);
	}
	if (ps.budget_capped) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "; %" PRIu64 " code ranges not kept: the symbol budget "
			 "(--max-symbol-mb) is spent", ps.budget_capped);
	}
	if (d->released) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "; symbols freed %u times while idle", d->released);
	}
	if (d->sparse_reads_total || d->went_whole || d->went_sparse) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "; sparse%s: %" PRIu64 " reads for %zu sampled addresses,"
			 " whole again %u, let go quiet %u", d->sparse ? "" : " before",
			 d->sparse_reads_total, d->sparse ? dn_nfilter(d) : 0, d->went_whole,
			 d->went_sparse);
	}
	if (d->cap_restarts || d->idle_offs || d->over_cap_warned) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "; perf map started afresh %u times past the cap, turned "
			 "off %u times idle, on again %u%s", d->cap_restarts, d->idle_offs, d->on_agains,
			 d->over_cap_warned ? "; its own perf map past the cap (not ours: left alone)" : "");
	}
	if (ps.malformed || ps.capped || d->restarts) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, "; %" PRIu64 " malformed lines/records, %" PRIu64
			 " dropped at a cap, %u restarts (%u more deferred; a read from the start took"
			 " up to %" PRIu64 " ms)", ps.malformed, ps.capped, d->restarts,
			 d->restarts_deferred, d->read_max_ns / 1000000);
	}
}

const struct runtime_ops dotnet_runtime = {
	.name = "dotnet",
	.detect = detect,
	.attach = attach,
	.poll = poll,
	.idle_poll = idle_poll,
	.claims = claims,
	.symbolize = symbolize,
	.prefetch = prefetch,
	.copy_of = copy_of,
	.describe = describe,
	.detach = detach,
	/* The library code the stub copies are matched against goes while nothing needs it. */
	.release_idle = dnstubs__release_idle,
};

enum dotnetproc_state dotnetproc__state(const struct proc *p, const char **detail)
{
	const struct dotnet_state *d = runtime__state(p, RT_DOTNET);

	if (detail)
		*detail = d ? d->detail : "";
	return d ? d->state : DOTNETPROC_NEW;
}

void dotnetproc__stats(const struct proc *p, struct perfmap_stats *out)
{
	const struct dotnet_state *d = runtime__state(p, RT_DOTNET);

	memset(out, 0, sizeof(*out));
	if (!d)
		return;
	perfmap__stats(d->pm, out);
	out->held_bytes += d->wanted_cap * sizeof(*d->wanted);
}

int dotnetproc__withheld(const struct proc *p)
{
	const struct dotnet_state *d = runtime__state(p, RT_DOTNET);

	return d && d->withheld ? (int)d->gate.withheld : RTWITHHELD_NONE;
}

int dotnetproc__sparse(const struct proc *p)
{
	const struct dotnet_state *d = runtime__state(p, RT_DOTNET);

	return d && d->sparse;
}
