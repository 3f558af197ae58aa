/* symbolize.c: names frames. Kernel from kallsyms, native from ELF files (opened while the
 * process lives), runtime code (.NET JIT, ReadyToRun) through the process's runtimes, deferred
 * until their files are read. Names are interned once for all processes; frames per process.
 * The ELF files: symfiles.c; leaves without their frame: symleaf.c; shared: symbolize_int.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aotname.h"
#include "elfsym.h"
#include "idmap.h"
#include "intern.h"
#include "kallsyms.h"
#include "leafunwind.h"
#include "procfs.h"
#include "proctab.h"
#include "rootfs.h"
#include "runtime.h"
#include "symbolize.h"
#include "symbolize_int.h"
#include "symbudget.h"
#include "symsrv.h"
#include "util.h"
#include "vec.h"

uint32_t sym_str_id(struct symbolizer *sym, const char *s)
{
	int64_t id;

	if (!s || !*s)
		return 0;
	id = intern__id(sym->strings, s, strlen(s), NULL);
	return id < 0 ? 0 : id;
}

const char *sym_str(const struct symbolizer *sym, uint32_t id)
{
	return id ? intern__key(sym->strings, id, NULL) : NULL;
}

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts)
{
	struct symbolizer *sym = calloc(1, sizeof(*sym));

	if (!sym)
		return NULL;
	sym->opts = *opts;
	sym->kkeys = idmap__new();
	sym->file_keys = intern__new();
	sym->inode_keys = intern__new();
	sym->strings = intern__new();
	if (!sym->kkeys || !sym->file_keys || !sym->inode_keys || !sym->strings ||
	    intern__id(sym->strings, "", 0, NULL) != 0)
		goto err_free;
	sym->ksyms = ksyms__load(opts->kallsyms ? opts->kallsyms : "/proc/kallsyms");
	if (!sym->ksyms && errno == ENODATA)
		sym->stats.kernel_hidden = 1;
	return sym;

err_free:
	symbolizer__free(sym);
	errno = ENOMEM;
	return NULL;
}

void symbolizer__free(struct symbolizer *sym)
{
	if (!sym)
		return;
	for (uint32_t i = 0; i < intern__count(sym->file_keys) && sym->files; i++) {
		if (!sym->files[i])
			continue;
		symbudget__give(SB_ELF, sym->files[i]->charged + sym->files[i]->cfi_charged);
		elfsym__free(sym->files[i]->es);
		leafcfi__free(sym->files[i]->cfi);
		aotnames__free(sym->files[i]->aot);
		free(sym->files[i]);
	}
	free(sym->files);
	for (size_t i = 0; i < sym->nvdsos; i++) {
		free(sym->vdsos[i].image);
		leafcfi__free(sym->vdsos[i].cfi);
	}
	free(sym->kframes);
	idmap__free(sym->kkeys);
	intern__free(sym->file_keys);
	intern__free(sym->inode_keys);
	free(sym->inode_file);
	intern__free(sym->strings);
	ksyms__free(sym->ksyms);
	free(sym);
}
struct proc_syms *sym_proc_syms(struct symbolizer *sym, struct proc *p)
{
	struct proc_syms *ps = p->syms;

	if (ps)
		return ps;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return NULL;
	ps->renamed_gen = sym->attach_gen;	/* its frames are named with what is there now */
	ps->keys = idmap__new();
	ps->maps = intern__new();
	ps->vmas = intern__new();
	if (!ps->keys || !ps->maps || !ps->vmas) {
		idmap__free(ps->keys);
		intern__free(ps->maps);
		intern__free(ps->vmas);
		free(ps);
		return NULL;
	}
	return p->syms = ps;
}

/* The mapping of v as the profile shows it: a file, or is_jit runtime code. */
static uint32_t smap_of(struct symbolizer *sym, struct proc_syms *ps, const struct vma *v,
			const struct symfile *f, int is_jit)
{
	struct smap m;
	int64_t id;

	memset(&m, 0, sizeof(m));
	m.start = v->start;
	m.limit = v->end;
	m.offset = is_jit ? 0 : v->pgoff;
	m.filename = is_jit ? sym_str_id(sym, "[jit]") : sym_str_id(sym, v->path);
	m.build_id = f ? f->build_id : 0;
	m.is_jit = is_jit;
	id = intern__id(ps->maps, &m, sizeof(m), NULL);
	return id < 0 ? 0 : id + 1;
}

/* "libc.so.6+0x1234" (file offset) for a file-backed frame with no covering symbol. */
static uint32_t module_offset(struct symbolizer *sym, uint32_t base, uint64_t file_off)
{
	char name[320];

	snprintf(name, sizeof(name), "%s+0x%" PRIx64, base ? sym_str(sym, base) : "?", file_off);
	return sym_str_id(sym, name);
}

static uint64_t *kind_counter(struct symbolizer *sym, int kind)
{
	switch (kind) {
	case NK_SYMBOL: return &sym->stats.native_named;
	case NK_FUNCTION: return &sym->stats.native_function;
	case NK_OFFSET: return &sym->stats.native_unnamed;
	default: return NULL;
	}
}

static void aot_learn(const char *name, void *an)
{
	aotnames__learn(an, name);
}

/* Symbol s of f: in a Native AOT binary, a managed method's .NET name read back from it
 * (perfmap/aotname.h), or the symbol when that is not certain (counted). */
static uint32_t aot_name(struct symbolizer *sym, struct symfile *f, const char *s)
{
	char name[1024];
	int err;

	if (!f->aot_tried) {
		f->aot_tried = 1;
		if ((f->aot = aotnames__new()))
			elfsym__each(f->es, aot_learn, f->aot);
		if (!aotnames__is_aot(f->aot)) {
			aotnames__free(f->aot);
			f->aot = NULL;
		}
	}
	if (!f->aot)
		return sym_str_id(sym, s);
	err = aotname__readback(f->aot, s, name, sizeof(name));
	if (!err) {
		sym->stats.aot_named++;
		return sym_str_id(sym, name);
	}
	if (err != -ENOENT)
		sym->stats.aot_raw++;
	return sym_str_id(sym, s);
}

/* A native frame's name: its symbol; else "libcoreclr.so!0x4af210", the start (ELF virtual
 * address) of the function .eh_frame says holds it, one name for all of a function's addresses;
 * else module+offset. Counted by kind (a frame named again is moved between the counters). */
static uint32_t file_name(struct symbolizer *sym, struct symfile *f, uint64_t file_off, int *kind)
{
	char name[320];
	const char *s = elfsym__lookup(f->es, file_off, NULL);
	uint64_t vaddr, start;

	if (s) {
		*kind = NK_SYMBOL;
		return aot_name(sym, f, s);
	}
	if (elfsym__file_to_vaddr(f->es, file_off, &vaddr) == 0 &&
	    elfsym__function_start(f->es, vaddr, &start) == 0) {
		snprintf(name, sizeof(name), "%s!0x%" PRIx64, sym_str(sym, f->base), start);
		*kind = NK_FUNCTION;
		return sym_str_id(sym, name);
	}
	*kind = NK_OFFSET;
	return module_offset(sym, f->base, file_off);
}

static uint32_t native_name(struct symbolizer *sym, struct symfile *f, struct frame *fr)
{
	uint64_t *c = kind_counter(sym, fr->kind);
	int kind;

	if (c)
		(*c)--;
	fr->name = file_name(sym, f, fr->file_off, &kind);
	fr->kind = kind;
	(*kind_counter(sym, fr->kind))++;
	return fr->name;
}

/* Runtime code that is a copy of code in one of the process's files (at orig): named as that
 * code, marked as a copy. 0, or -ENOENT (orig in no ELF file whose table is held). */
static int copy_name(struct symbolizer *sym, struct proc *p, struct proc_syms *ps, struct frame *fr,
		     uint64_t orig)
{
	const struct vma *v = proc__vma(p, orig);
	struct symfile *f;
	uint32_t file, id;
	char name[4096];
	int kind;

	if (!v || v->kind != VMA_FILE || !(f = sym_symfile(sym, ps, p, v, &file, fr->time_ns)) ||
	    !sym_table(sym, f, p, v, fr->time_ns))
		return -ENOENT;
	id = file_name(sym, f, orig - v->start + v->pgoff, &kind);
	snprintf(name, sizeof(name), "%s [copy]", id ? sym_str(sym, id) : "?");
	fr->name = sym_str_id(sym, name);
	return 0;
}

int64_t symbolizer__kernel(struct symbolizer *sym, uint64_t addr, int leaf)
{
	const char *name = NULL, *module = NULL;
	char buf[64], kname[KSYMS_MAX_LINE];
	uint64_t off;
	int added;
	int64_t id;

	if (!leaf)
		addr--;
	id = idmap__id(sym->kkeys, addr, &added);
	if (id < 0 || !added)
		return id < 0 ? id : (int64_t)(id | SYM_KERNEL_FRAME);
	if (id >= SYM_KERNEL_FRAME || VEC_RESERVE(sym->kframes, sym->kcap, (size_t)id + 1))
		return -ENOMEM;
	if (sym->ksyms)
		name = ksyms__lookup(sym->ksyms, addr, &off, &module, kname, sizeof(kname));
	sym->kframes[id].tracing = !name || (module && !strcmp(module, "bpf")) ||
				   !strncmp(name, "bpf_prog_", 9) || !strncmp(name, "bpf_trace_run", 13) ||
				   !strncmp(name, "__bpf_trace_", 12) || !strncmp(name, "__traceiter_", 12);
	if (!name) {
		snprintf(buf, sizeof(buf), "[kernel] 0x%" PRIx64, addr);
		name = sym->stats.kernel_hidden ? "[kernel]" : buf;
	}
	sym->stats.kernel++;
	sym->stats.frames++;
	sym->kframes[id].addr = addr;
	sym->kframes[id].name = sym_str_id(sym, name);
	return sym->kframes[id].name ? (int64_t)(id | SYM_KERNEL_FRAME) : -ENOMEM;
}

int symbolizer__kernel_tracing(const struct symbolizer *sym, int64_t id)
{
	return id >= 0 && (id & SYM_KERNEL_FRAME) && sym->kframes[id & ~(int64_t)SYM_KERNEL_FRAME].tracing;
}

static int64_t user_frame(struct symbolizer *sym, struct proc *p, struct proc_syms *ps,
			  uint64_t addr, int leaf, uint64_t time_ns);

int64_t symbolizer__user(struct symbolizer *sym, struct proc *p, uint64_t addr, int leaf,
			 uint64_t time_ns)
{
	struct proc_syms *ps = sym_proc_syms(sym, p);
	struct fcache *c;
	int64_t id;

	if (!ps)
		return -ENOMEM;
	if (!leaf)
		addr--;
	if (!ps->fcache && !(ps->fcache = calloc(FCACHE_SLOTS, sizeof(*ps->fcache))))
		return -ENOMEM;
	c = &ps->fcache[(addr * 0x9e3779b97f4a7c15ull) >> (64 - FCACHE_BITS)];
	if (c->addr == addr + 1)
		return c->id;
	id = user_frame(sym, p, ps, addr, leaf, time_ns);
	if (id >= 0)
		*c = (struct fcache){ addr + 1, id };
	return id;
}

int symbolizer__ends_chain(const struct proc *p, int64_t id)
{
	const struct proc_syms *ps = p->syms;

	return ps && id >= 0 && id < SYM_KERNEL_FRAME && (size_t)id < ps->cap &&
	       ps->frames[id].off_code;
}

/* Whether v is anonymous memory that is not executable. */
static int is_data(const struct vma *v)
{
	return v->kind == VMA_ANON && !v->exec;
}

/* Whether maps that show addr in v (NULL: in no mapping) may not tell what ran there at time_ns:
 * they were read before it, and show no code there. */
static int stale_at(const struct proc *p, const struct vma *v, uint64_t time_ns)
{
	return (!v || is_data(v)) && p->maps_read_ns <= time_ns;
}

/* The frame id of lookup address addr in p (named now, or pending for the runtime). */
static int name_user_frame(struct symbolizer *sym, struct proc *p, struct proc_syms *ps,
			   struct frame *fr, const struct vma *v, int leaf);

static int64_t user_frame(struct symbolizer *sym, struct proc *p, struct proc_syms *ps,
			  uint64_t addr, int leaf, uint64_t time_ns)
{
	const struct vma *v;
	struct frame *fr;
	int added;
	int64_t id;

	/* A process that forges stacks gets one frame for all it shows past the cap. */
	if (sym->opts.max_frames && idmap__count(ps->keys) >= sym->opts.max_frames &&
	    idmap__find(ps->keys, addr) < 0) {
		sym->stats.truncated++;
		addr = TRUNCATED_ADDR;
	}
	id = idmap__id(ps->keys, addr, &added);
	if (id < 0 || !added)
		return id;
	if (id >= SYM_KERNEL_FRAME || VEC_RESERVE(ps->frames, ps->cap, (size_t)id + 1))
		return -ENOMEM;
	fr = &ps->frames[id];
	fr->addr = addr;
	fr->time_ns = time_ns;
	sym->stats.frames++;
	if (addr == TRUNCATED_ADDR) {
		fr->name = sym_str_id(sym, "[truncated: too many distinct frames in this process]");
		return fr->name ? id : -ENOMEM;
	}

	/* A mapping we have not seen yet: the process mapped something since we last looked; or
	 * data where code should be, in maps older than the sample (the runtime maps its images
	 * over memory it reserved without access). */
	v = proc__vma(p, addr);
	if ((!v || stale_at(p, v, time_ns)) && !proc__refresh_maps(p, sym->opts.maps_refresh_ns))
		v = proc__vma(p, addr);
	if (stale_at(p, v, time_ns) && !p->gone) {
		fr->unmapped = 1;	/* the maps are older than the sample: again in finish */
		ps->nunmapped++;
	}
	return name_user_frame(sym, p, ps, fr, v, leaf) ? -ENOMEM : id;
}

/* Name fr (its address and first sample time set) from v, the mapping its address is in (NULL:
 * none): 0, or -ENOMEM. */
static int name_user_frame(struct symbolizer *sym, struct proc *p, struct proc_syms *ps,
			   struct frame *fr, const struct vma *v, int leaf)
{
	struct symfile *f = NULL;
	uint64_t addr = fr->addr, time_ns = fr->time_ns;
	uint32_t file = 0;
	/*
	 * A return address in anonymous memory that was not executable after the sample (heap,
	 * stack, arena): the frame-pointer walk followed an rbp that a frameless caller (glibc's,
	 * say) used for data, and what it found past here are no callers (seen: one heap word, 126
	 * times over). Only what the maps said after the sample counts: the runtime maps code over
	 * memory it reserved, and a W^X double mapping (memfd) is data in one view, code in another.
	 */
	if (v && !leaf && is_data(v) && p->maps_read_ns > time_ns) {
		sym->stats.off_code++;
		fr->off_code = 1;
		fr->name = sym_str_id(sym, "[callers lost: frame chain left code]");
		return fr->name ? 0 : -ENOMEM;
	}
	if (v && v->kind == VMA_FILE)
		f = sym_symfile(sym, ps, p, v, &file, time_ns);
	if (f) {
		fr->base = f->base;
		fr->file = file;
		fr->file_off = addr - v->start + v->pgoff;
	}
	if (f && sym_table(sym, f, p, v, time_ns)) {
		fr->map = smap_of(sym, ps, v, f, 0);
		return native_name(sym, f, fr) ? 0 : -ENOMEM;
	}
	if (f && f->is_elf) {	/* its table is not held (symbol budget): module+offset */
		sym->stats.native_unnamed++;
		sym->stats.elf_not_held++;
		fr->kind = NK_OFFSET;
		fr->map = smap_of(sym, ps, v, f, 0);
		fr->name = module_offset(sym, f->base, fr->file_off);
		return fr->name ? 0 : -ENOMEM;
	}
	/* Runtime code (JIT, ReadyToRun): named at the end of the window, after the last poll. */
	if (runtime__claims(p, addr, f != NULL)) {
		fr->pending = 1;
		ps->npending++;
		if (v)
			fr->map = smap_of(sym, ps, v, f, f == NULL);
		return 0;
	}
	if (f) {
		sym->stats.native_unnamed++;
		fr->kind = NK_OFFSET;
		fr->map = smap_of(sym, ps, v, f, 0);
		fr->name = module_offset(sym, f->base, fr->file_off);
	} else {
		sym->stats.unknown++;
		if (v) {
			struct smap m = { .start = v->start, .limit = v->end,
					  .filename = sym_str_id(sym, v->path) };
			int64_t mid = intern__id(ps->maps, &m, sizeof(m), NULL);

			fr->map = mid < 0 ? 0 : mid + 1;
		}
		fr->name = sym_str_id(sym, v && v->kind == VMA_VDSO ? v->path : "[unknown]");
	}
	return fr->name ? 0 : -ENOMEM;
}

static int finish_frame(struct symbolizer *sym, struct proc *p, struct proc_syms *ps,
			struct frame *fr)
{
	struct rt_symbol rs = { 0 };
	char name[4096];
	int first = fr->name == 0;
	uint64_t orig;

	if (runtime__symbolize(p, fr->addr, fr->time_ns, &rs) == 0) {
		sym->stats.jit_named++;
		if (!first && fr->unnamed) {
			sym->stats.jit_unnamed--;	/* named at last */
			sym->stats.unnamed_by[fr->unnamed]--;
		}
		if (sym->opts.show_tiers && rs.tier && rs.tier[0])
			snprintf(name, sizeof(name), "%s [%s]", rs.name, rs.tier);
		else
			snprintf(name, sizeof(name), "%s", rs.name);
		fr->name = sym_str_id(sym, name);
		fr->system_name = sym_str_id(sym, rs.system_name);
		fr->pending = 0;
		ps->npending--;
		return fr->name ? 0 : -ENOMEM;
	}
	if (!first)
		return 0;	/* still unnamed: keeps its fallback, tried again next window */
	/* Runtime code copied out of its library (written down only when perf maps were on from
	 * the start): named as the code it copies, once. */
	if (!fr->base && runtime__copy_of(p, fr->addr, &orig) == 0 &&
	    copy_name(sym, p, ps, fr, orig) == 0) {
		sym->stats.jit_copied++;
		fr->pending = 0;
		ps->npending--;
		return fr->name ? 0 : -ENOMEM;
	}
	/* Managed code without a name is .NET unnamed, whatever it looks like (a ReadyToRun .dll's
	 * code shows as module+offset): the report says why, not "native". */
	if (fr->base && rs.unnamed == RT_UNNAMED_NOT_OURS) {
		sym->stats.native_unnamed++;
		fr->kind = NK_OFFSET;
	} else {
		fr->unnamed = rs.unnamed > RT_UNNAMED_NOT_OURS && rs.unnamed < RT_UNNAMED__MAX ?
			      rs.unnamed : RT_UNNAMED_NO_ENTRY;
		sym->stats.jit_unnamed++;
		sym->stats.unnamed_by[fr->unnamed]++;
	}
	fr->name = fr->base ? module_offset(sym, fr->base, fr->file_off) : sym_str_id(sym, "[unknown]");
	/* A file-backed frame the runtime does not know stays module+offset; nothing more will come
	 * from an exited process either. */
	if (fr->base || p->gone) {
		fr->pending = 0;
		ps->npending--;
	}
	return fr->name ? 0 : -ENOMEM;
}

/* Debug files that arrived from the symbol servers: attached to their files. Looked at when the
 * symbol servers have news, and every SCAN_NS for files whose fetch failed (symsrv asks again
 * once its retry time has passed). */
#define SCAN_NS (60 * 1000000000ull)
static void take_debug_files(struct symbolizer *sym)
{
	struct symsrv *ss = sym->opts.symsrv;
	uint64_t gen, now;

	if (!ss)
		return;
	gen = symsrv__generation(ss);
	now = now_ns();
	if (gen == sym->symsrv_gen && now < sym->next_scan_ns)
		return;
	sym->symsrv_gen = gen;
	sym->next_scan_ns = now + SCAN_NS;
	sym->nawaiting = 0;
	for (uint32_t i = 0; i < intern__count(sym->file_keys); i++) {
		struct symfile *f = sym->files[i];
		const char *bid;
		struct elfsym *dbg;

		if (!f || !f->es || f->no_debug || !elfsym__needs_debug(f->es))
			continue;
		bid = elfsym__build_id(f->es);
		f->awaiting = 0;
		switch (symsrv__want(ss, bid, sym_str(sym, f->base))) {
		case SYMSRV_READY:
			dbg = symsrv__take(ss, bid);
			if (dbg && elfsym__attach_debug(f->es, dbg) == 0) {
				uint64_t b = elfsym__bytes(f->es);

				/* Charged past the budget if need be: fetched for this, never evicted. */
				if (b > f->charged)
					symbudget__force(SB_ELF, b - f->charged);
				f->charged = b > f->charged ? b : f->charged;
				f->attached_gen = ++sym->attach_gen;
				sym->stats.debug_attached++;
			} else {
				f->no_debug = 1;
			}
			break;
		case SYMSRV_PENDING:
			f->awaiting = 1;
			sym->nawaiting++;
			break;
		default:
			break;
		}
	}
}

/* Frames of files whose debug file came since p's frames were last named: named again. */
static int rename_frames(struct symbolizer *sym, struct proc *p)
{
	struct proc_syms *ps = p->syms;

	if (!ps || ps->renamed_gen == sym->attach_gen)
		return 0;
	for (size_t i = 0; i < idmap__count(ps->keys); i++) {
		struct frame *fr = &ps->frames[i];
		struct symfile *f = fr->file ? sym->files[fr->file - 1] : NULL;

		if (f && f->attached_gen > ps->renamed_gen && fr->kind != NK_NONE && f->es &&
		    !native_name(sym, f, fr))
			return -ENOMEM;
	}
	ps->renamed_gen = sym->attach_gen;
	return 0;
}

/* Frames in no mapping, or in data, of maps read before their sample, left [unknown] (or to the
 * runtime) because the maps could not be read again so soon: named now from the maps as they are
 * (read again if they may be yet; else the next window tries). */
static int retry_unmapped(struct symbolizer *sym, struct proc *p, struct proc_syms *ps)
{
	if (!ps || !ps->nunmapped || proc__refresh_maps(p, 0))
		return 0;
	for (size_t i = 0; ps->nunmapped && i < idmap__count(ps->keys); i++) {
		struct frame *fr = &ps->frames[i];
		const struct vma *v;

		if (!fr->unmapped)
			continue;
		fr->unmapped = 0;
		ps->nunmapped--;
		if (!(v = proc__vma(p, fr->addr)) || is_data(v))
			continue;	/* no code there still */
		if (fr->pending) {
			/* claimed by the runtime as its own anonymous code: the runtime's to name,
			 * unless a file is mapped there now (an image over the runtime's reserve) */
			if (v->kind != VMA_FILE)
				continue;
			fr->pending = 0;
			ps->npending--;
		} else {
			sym->stats.unknown--;
		}
		sym->stats.unmapped_named++;
		fr->map = 0;
		if (name_user_frame(sym, p, ps, fr, v, 1))
			return -ENOMEM;
	}
	return 0;
}

/* Name the frames left to the runtime, a group at a time: told the group's addresses first, the
 * runtime fetches what their lookups read all at once (a million methods' index does not stay
 * cached, least of all between windows), so their waits on memory overlap. */
static int finish_pending(struct symbolizer *sym, struct proc *p, struct proc_syms *ps)
{
	uint64_t addrs[RUNTIME_PREFETCH_MAX];
	size_t group[RUNTIME_PREFETCH_MAX], f = 0, n = idmap__count(ps->keys);

	while (ps->npending && f < n) {
		size_t m = 0;

		for (; f < n && m < RUNTIME_PREFETCH_MAX; f++)
			if (ps->frames[f].pending) {
				group[m] = f;
				addrs[m++] = ps->frames[f].addr;
			}
		runtime__prefetch(p, addrs, m);
		for (size_t k = 0; k < m; k++)
			if (finish_frame(sym, p, ps, &ps->frames[group[k]]))
				return -ENOMEM;
	}
	return 0;
}

int symbolizer__finish_proc(struct symbolizer *sym, struct proc *p)
{
	struct proc_syms *ps = p->syms;

	take_debug_files(sym);
	if (rename_frames(sym, p) || retry_unmapped(sym, p, ps))
		return -ENOMEM;
	return ps ? finish_pending(sym, p, ps) : 0;
}

int symbolizer__finish(struct symbolizer *sym, struct proctab *pt)
{
	for (uint32_t i = 0; i < proctab__count(pt); i++) {
		struct proc *p = proctab__at(pt, i);

		if (p && symbolizer__finish_proc(sym, p))
			return -ENOMEM;
	}
	return 0;
}

int symbolizer__awaiting(const struct symbolizer *sym)
{
	return sym->nawaiting;
}

int symbolizer__frame(const struct symbolizer *sym, const struct proc *p, uint32_t id,
		      struct agg_frame *out)
{
	const struct proc_syms *ps = p ? p->syms : NULL;
	const struct frame *fr;
	const struct smap *m;

	memset(out, 0, sizeof(*out));
	if (id & SYM_KERNEL_FRAME) {
		id &= ~SYM_KERNEL_FRAME;
		if (id >= idmap__count(sym->kkeys))
			return -ENOENT;
		out->name = sym_str(sym, sym->kframes[id].name);
		out->address = sym->kframes[id].addr;
		out->has_mapping = 1;
		out->mapping = (struct pf_mapping){ .start = 0xffff800000000000ull,
						    .limit = UINT64_MAX,
						    .filename = "[kernel.kallsyms]",
						    .has_functions = 1 };
		return 0;
	}
	if (!ps || id >= idmap__count(ps->keys))
		return -ENOENT;
	fr = &ps->frames[id];
	out->name = fr->name ? sym_str(sym, fr->name) : "[unknown]";
	out->system_name = sym_str(sym, fr->system_name);
	out->address = fr->addr;
	if (fr->map && (m = intern__key(ps->maps, fr->map - 1, NULL))) {
		out->has_mapping = 1;
		out->mapping = (struct pf_mapping){ .start = m->start, .limit = m->limit,
						    .offset = m->offset,
						    .filename = sym_str(sym, m->filename),
						    .build_id = sym_str(sym, m->build_id),
						    .has_functions = 1, .is_jit = m->is_jit };
	}
	return 0;
}

void symbolizer__forget(struct symbolizer *sym, struct proc *p)
{
	struct proc_syms *ps = p->syms;

	if (!ps)
		return;
	sym->stats.forgotten += idmap__count(ps->keys);
	idmap__free(ps->keys);
	intern__free(ps->maps);
	intern__free(ps->vmas);
	free(ps->vma_file);
	for (size_t i = 0; ps->leaf_keys && i < intern__count(ps->leaf_keys); i++)
		free(ps->methods[i].code);
	intern__free(ps->leaf_keys);
	free(ps->methods);
	free(ps->frames);
	free(ps->fcache);
	free(ps->lcache);
	free(ps);
	p->syms = NULL;
}

const char *symbolizer__string(const struct symbolizer *sym, uint32_t id)
{
	return sym_str(sym, id);
}

void symbolizer__stats(const struct symbolizer *sym, struct symbolizer_stats *out)
{
	struct ksyms_stats ks;

	*out = sym->stats;
	out->bytes = idmap__bytes(sym->kkeys) + sym->kcap * sizeof(*sym->kframes) +
		     intern__bytes(sym->file_keys) + intern__bytes(sym->inode_keys) +
		     sym->inode_cap * sizeof(*sym->inode_file) +
		     sym->files_cap * sizeof(*sym->files) + intern__bytes(sym->strings);
	for (uint32_t i = 0; i < intern__count(sym->file_keys); i++)
		out->bytes += sym->files[i] ? sizeof(*sym->files[i]) : 0;
	ksyms__stats(sym->ksyms, &ks);
	out->kernel_symbols_bytes = ks.bytes;
}

uint64_t symbolizer__proc_bytes(const struct proc *p)
{
	const struct proc_syms *ps = p->syms;
	uint64_t bytes;

	if (!ps)
		return 0;
	bytes = sizeof(*ps) + idmap__bytes(ps->keys) + ps->cap * sizeof(*ps->frames) +
		intern__bytes(ps->maps) + intern__bytes(ps->vmas) +
		ps->vma_cap * sizeof(*ps->vma_file) + ps->methods_cap * sizeof(*ps->methods) +
		(ps->fcache ? FCACHE_SLOTS * sizeof(*ps->fcache) : 0) +
		(ps->lcache ? LCACHE_SLOTS * sizeof(*ps->lcache) : 0);
	if (ps->leaf_keys) {
		bytes += intern__bytes(ps->leaf_keys);
		for (uint32_t i = 0; i < intern__count(ps->leaf_keys); i++)
			bytes += ps->methods[i].len;
	}
	return bytes;
}
