// SPDX-License-Identifier: GPL-2.0
/* profiler.bpf.c: the sampler. One perf_event program per CPU: stacks plus the thread's span record. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "profiler.h"

#define PF_EXITING	  0x00000004	/* include/linux/sched.h */
#define PF_KTHREAD	  0x00200000	/* include/linux/sched.h */
#define MAX_PID_NS_LEVEL  32
#define STACK_BYTES	  (SP_MAX_FRAMES * 8)
#define CTX_ATTRS_INLINE  96	/* attribute bytes of a span record read with its slot's head */

char LICENSE[] SEC("license") = "GPL";

/* Set by user space before load. */
const volatile bool filter_pids = false;
const volatile bool follow_forks = false;	/* children of filtered processes join the filter */
/* Off-CPU time only for the processes in pid_filter, even without filter_pids: the agent's .NET
 * processes, added by user space as it finds them. */
const volatile bool offcpu_filter = false;
const volatile __u64 wakeup_bytes = 1 << 20;	/* wake the consumer past this much data */
const volatile __u32 variant = 0;		/* SP_VAR_*: benchmark variants only */
const volatile __u64 offcpu_threshold_ns = 1000000;	/* --off-cpu-threshold */
/* Threads with a block record (offcpu_blocks: kernel memory, charged to our memory cgroup, about
 * 2 KiB each) at once: --off-cpu-max-threads, at most half of them in one cgroup (its budget's
 * threads). offcpu_threads counts them: one more at each record made, one less at each thread's
 * exit (offcpu_exit). */
const volatile __u64 offcpu_max_threads = SP_OFFCPU_MAX_THREADS;
__u64 offcpu_threads = 0;
/* Long blocks a cgroup may send a second (--off-cpu-max-rate), and when the off-CPU ring wakes
 * its consumer. */
const volatile __u64 offcpu_max_rate = SP_OFFCPU_MAX_RATE;
const volatile __u64 offcpu_wakeup_bytes = 1 << 18;
/* Set by user space when it attaches the off-CPU programs again after a pause (CLOCK_MONOTONIC):
 * a block that began before the pause is timed from here, not billed across the pause. */
__u64 offcpu_resume_ns = 0;
/*
 * A thread's return to user space after a context switch, where the kernel reports it (the
 * rseq_update tracepoint, for every thread registered with rseq, as glibc 2.35+ registers each):
 * set by user space once offcpu_resume has seen its own thread come back from each of a few
 * sleeps on one CPU (offcpu_probe_tid; offcpu_probe_seen counts them). Then a long block's
 * stacks and span are taken there. From Linux 6.19 the tracepoint fires only where the thread's
 * CPU or concurrency id changed, and the probe fails there.
 */
__u32 offcpu_resume_ok = 0;
__u32 offcpu_probe_tid = 0;
__u32 offcpu_probe_seen = 0;
__u32 probe_cpu = ~0u;	/* the CPU of the probe's last return (SP_VAR_RSEQ_ON_CHANGE) */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);		/* resized by user space: -p pids, or offcpu_filter's */
	__type(key, __u32);
	__type(value, __u8);
} pid_filter SEC(".maps");

/*
 * pid_filter's keys again, as bits by tgid (64 to an element): an array lookup, which the verifier
 * inlines, where the hash's costs about 70 ns, so that a thread of a process not profiled leaves
 * the switch program (and an unprofiled sample the sampler) at about the cost of a load. Kept
 * with pid_filter, set after an entry is added and cleared before one is deleted, by user space
 * (mapped) and on_fork. A tgid past its end (pid_max raised since) is looked up in pid_filter.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);		/* resized by user space: pid_max / 64 */
	__type(key, __u32);
	__type(value, __u64);
} pid_bits SEC(".maps");

/* Whether tgid's process is in pid_filter. */
static __always_inline bool in_filter(__u32 tgid)
{
	__u32 w = tgid / 64;
	__u64 *bits = bpf_map_lookup_elem(&pid_bits, &w);

	if (bits)
		return *bits & (1ull << (tgid % 64));
	return bpf_map_lookup_elem(&pid_filter, &tgid) != NULL;
}

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);	/* hooked processes; resized by user space. An LRU:
					 * past it, the least recently sampled make room */
	__type(key, __u32);
	__type(value, struct sp_ctx_proc);
} ctx_procs SEC(".maps");

#include "gens.bpf.h"

struct scratch {
	__u8 buf[SP_SAMPLE_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");


struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/*
 * Off-CPU (--off-cpu). A place where threads block: the process (pid and start, against reuse),
 * the user registers at the syscall and its number, and the return addresses of the frames above
 * it. The registers alone do not tell places apart: every wait of a .NET thread ends in the same
 * libc futex call on the thread's own condition variable, so two call paths at the same depth of
 * its stack have the same ones. A thread's stack has its own addresses, so a place is one thread's.
 */
struct offcpu_site {
	__u32 tgid;
	__u32 reserved;
	__u64 start_ticks;
	__u64 ip, sp, bp, nr;	/* sp 0: no registers (other architectures): never cached */
	__u64 frames;		/* the return addresses of the frames above, hashed (offcpu_frames) */
};

/*
 * What tells apart two places where a thread blocks with the same registers: the return addresses
 * of the frames above the syscall, hashed, at most FRAME_HASHED of them, as far as FRAME_WORDS
 * words of stack at its sp hold them (2 KiB: the method that blocked and its callers in .NET's
 * waits; a contended lock's runtime frames take most of it). Two call paths that differ only
 * further up still share a place.
 */
#define FRAME_WORDS  256
#define FRAME_HASHED 16
struct offcpu_frames {
	__u64 hash;
	__u16 fp_off;		/* where the first frame record is, from sp */
	__u8 n;			/* records hashed: 0, none found */
	__u8 reserved[5];
};

/* A place a thread knows to be in offcpu_sites, and where its frames were: a block with its
 * registers walks them again there, without the search. */
struct offcpu_known {
	struct offcpu_site site;
	struct offcpu_frames frames;
	__u8 shorts;		/* its blocks, all short so far, up to OFFCPU_TRUSTED_SHORTS */
	__u8 had_long;		/* a block here was long: its frames are read at every block */
	__u8 twin;		/* another known place has (or had) the same registers */
	__u8 reserved[5];
};
#define OFFCPU_TRUSTED_SHORTS 16

/* The stacks taken the first time a thread blocked at a place; frames as in sp_sample's data. */
struct offcpu_stacks {
	__u32 flags;		/* SP_F_* of the stacks and leaf */
	__u16 n_user, n_kernel;
	__u16 user_scan_at;
	__u16 reserved[3];
	__u64 leaf_ip, leaf_sp, leaf_bp;
	__u64 leaf_words[SP_LEAF_WORDS];
	__u64 frames[2 * SP_MAX_FRAMES];
};

/* A repeat block at a known place costs a lookup here, not a stack walk. An LRU: the places
 * blocked at least recently make room. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);		/* resized by user space with --off-cpu */
	__type(key, struct offcpu_site);
	__type(value, struct offcpu_stacks);
} offcpu_sites SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_stacks);
} offcpu_stacks_scratch SEC(".maps");

#define OFFCPU_KNOWN 12	/* places a thread remembers having put in offcpu_sites */

/*
 * New places a cgroup may put in offcpu_sites (a process, where the task's cgroup is the root or
 * cgroup v2 is not mounted): OFFCPU_PLACES_BURST at once, then OFFCPU_PLACES_PER_SEC a second. A
 * thread that blocks at ever new places (a hostile one, say, revisiting each to keep it) would
 * otherwise push every other process's places out of the cache, and their long blocks would lose
 * their stacks; past its first half, one cgroup can replace at most an eighth of the cache
 * (OFFCPU_SITES in user/session/bpfsession.c) a second. Past the budget, a block at a new place is
 * timed and keeps its span, without stacks. Checked only where a new place's stacks would be
 * walked, which costs far more.
 */
#define OFFCPU_PLACES_BURST	1024
#define OFFCPU_PLACES_PER_SEC	256

/* A token bucket: what was taken, less its rate for every tick since (OFFCPU_TICKS a second, so
 * that what a second lets in is spread over it, not taken in a burst at its start). */
#define OFFCPU_TICKS 16
struct offcpu_bucket {
	__u64 tick;		/* bpf_ktime_get_ns() / (1e9 / OFFCPU_TICKS) when used was last paid */
	__u64 used;
};

/*
 * A cgroup's long blocks sent: at most offcpu_max_rate a second, however many it has. Each costs its
 * stacks (microseconds of BPF, in the blocked thread's own time) and the consumer a record, and a
 * process whose threads block long very often would otherwise fill the off-CPU ring that every
 * process's long blocks share. Past the rate they are thinned by their time, as the CPU sampler
 * thins CPU time. While the cgroup's long blocks a second (smoothed over about a second of ticks)
 * are more than the target, three quarters of the rate, a quantum of time stands for each block
 * sent: a block at least a quantum long is sent with its own time, a shorter one with the chance
 * its time / the quantum, carrying a quantum. The quantum is the smoothed blocked time a second
 * over the target, each block's time counted up to the quantum then in force: at the quantum
 * where that holds, the chances add up to the target. So what is sent stands for the blocked time
 * by stack and span on average, the longest blocks each exactly, and a burst shorter than a
 * second thins nothing. A token bucket (a second's rate, an eighth of it at once) bounds what is
 * sent: a long block past it is counted, with the time it stood for, and not sent. The quarter
 * between target and rate keeps the bucket from running dry by chance (thinned to the rate
 * itself, it did so often enough to cut 1 s blocks) and leaves room while the quantum catches
 * up; and once half of the bucket's eighth is taken, a quantum from the tick's own blocks thins a
 * flood that the smoothed rate has not seen yet, rather than the bucket cutting it.
 */
struct offcpu_sends {
	struct offcpu_bucket bucket;
	__u64 tick;		/* the tick seen and seen_ns count in */
	__u64 seen;		/* long blocks in it */
	__u64 seen_ns;		/* their time, each up to the quantum (a tick while there is none) */
	__u64 per_sec;		/* long blocks, the ticks before this one smoothed: a second's */
	__u64 ns_per_sec;	/* their time, as seen_ns, smoothed the same way */
	__u64 weight;		/* the ticks smoothed, in 16ths: 256 after a second or more */
	__u64 quantum;		/* 0: within the rate, nothing is thinned */
};

/* A cgroup's budgets: new places, long blocks sent, threads with a block record. */
struct offcpu_budget {
	struct offcpu_bucket places;
	struct offcpu_sends sends;
	__u64 threads;		/* its threads with a block record: at most half of
				 * offcpu_max_threads, so one cgroup cannot take them all (an entry
				 * the LRU let go starts again at 0: the node's cap still holds) */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);		/* resized by user space with --off-cpu */
	__type(key, __u64);		/* cgroup id, or 1 << 63 | tgid */
	__type(value, struct offcpu_budget);
} offcpu_budgets SEC(".maps");

/* A profiled thread that blocked, as it was when it switched out: when, where, and its span
 * record (read then: only the thread itself writes it, and it cannot while blocked). */
struct offcpu_block {
	__u64 start;		/* switch-out time: its run queue's clock, or with !on_rq_clock
				 * bpf_ktime_get_ns(); 0: not blocked */
	__u64 pcount;		/* sched_info.pcount then: the runs it had had */
	struct offcpu_site site;
	struct offcpu_frames frames;	/* the site's */
	__u32 cpu;
	__u16 ctx_len;
	__u16 ctx_status;
	__u8 on_rq_clock;
	__u8 known_next;	/* the slot of known[] to fill next */
	__u8 known_at;		/* the slot of known[] of this block's place; OFFCPU_KNOWN: none */
	__u8 ns_tid_err;	/* ns_tid failed: no span record can be found */
	__u8 over_budget;	/* a new place past its cgroup's budget: no stacks (site.tgid 0) */
	/* Where the thread's returns to user space are reported (offcpu_resume_ok, rseq_seen), a
	 * block's switch-out only times it; a long one is sent as the thread returns, with the
	 * stacks and span read there, in its own context, and the kernel stack taken as it was
	 * woken (offcpu_kstacks). */
	__u8 resume;		/* this block is sent at the thread's return, not from its place */
	__u8 pending;		/* a long block waits for the return */
	__u8 rseq_seen;		/* its returns are reported: registered with rseq when its record
				 * was made, or offcpu_resume has seen it return since a miss */
	__u8 reserved2[5];
	__u64 pending_ns;	/* its blocked time (scaled up if thinned), the blocks' sum if the
				 * thread blocked again before returning */
	__u64 pending_woke;	/* its wake-up, CLOCK_MONOTONIC */
	__u64 pending_ip, pending_sp;	/* the user registers it blocked with */
	/* The thread's constants, read at its first block: its process's start (a load from the
	 * group leader's task, another thread's, costs a cache miss a block), its own start and
	 * its id in its pid namespace. Valid while its global tid is seen_tid: only an exec by
	 * another thread of the process changes this thread's tid, leader and pid. */
	__u64 budget_key;	/* the offcpu_budgets entry its record is counted in */
	__u32 seen_tid;
	__u32 ns_tid;
	__u64 proc_ticks;
	__u64 thread_ticks;
	/* Its process's pid_filter entry and span table as last looked up, with the generations
	 * (gens, plus one: 0 is never current) they are current for. */
	__u64 filter_gen;
	__u64 table_gen;
	struct sp_ctx_proc table;	/* slot_count 0: none */
	/* Places whose stacks this thread put in (or found in) offcpu_sites: a block at one of them
	 * skips the hash lookup. A long block whose place left the cache clears them. */
	struct offcpu_known known[OFFCPU_KNOWN];
	__u8 ctx[SP_CTX_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_block);
} offcpu_blocks SEC(".maps");

/* The kernel stack of a thread's last long block sent at its return, taken as it was woken (its
 * return has a stack of its own): made at a thread's first such block, gone with the thread. */
struct offcpu_kstack {
	__u32 n;		/* frames */
	__u32 err;		/* the walk failed */
	__u64 ips[SP_MAX_FRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_kstack);
} offcpu_kstacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);	/* resized by user space */
} events SEC(".maps");

/* The long blocks' own ring: however often the threads of a process block, the CPU samples in
 * events keep their room. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);	/* resized by user space with --off-cpu */
} offcpu_events SEC(".maps");

static __always_inline void count_add(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += n;
}

static __always_inline void count(__u32 which)
{
	count_add(which, 1);
}

/*
 * Thread id inside the task's own pid namespace: what gettid() returned to the hook. The task is
 * the current one (a BTF pointer): its fields are plain loads, not helper calls. Only a task in a
 * nested pid namespace needs the helper, to index numbers[] by its level.
 */
static __always_inline int ns_tid(struct task_struct *task, __u32 *tid)
{
	struct pid *pid = task->thread_pid;
	unsigned int level;

	if (!pid)
		return -1;
	level = pid->level;
	if (level == 0) {
		*tid = pid->numbers[0].nr;
		return 0;
	}
	if (level > MAX_PID_NS_LEVEL)
		return -1;
	return bpf_core_read(tid, sizeof(*tid), &pid->numbers[level].nr);
}

/*
 * Copy the thread's OTEP 4947 record into dst (SP_CTX_MAX bytes available) and return its
 * length, or 0 with *status saying why there is none. The thread is the current one: tid is its
 * id in its own pid namespace (ns_tid), ticks its start time (task->start_boottime in
 * SP_USER_HZ ticks). Every read is bounded and checked: the table lives in a process we do not
 * trust.
 */
static __always_inline __u32 read_span(__u32 tid, __u64 ticks, const struct sp_ctx_proc *cp,
				       __u8 *dst, __u16 *status)
{
	struct {
		struct sp_slot_head head;
		__u8 rec[SP_CTX_HEAD + CTX_ATTRS_INLINE];
	} sl = {};
	__u32 attrs, mask, h, i;
	__u64 room, first, slot = 0, ids[2];
	bool found = false;

	mask = cp->slot_count - 1;
	h = SP_SLOT_HASH(tid);
	/* What of a slot the first read takes: its head, the record's and the first attribute
	 * bytes, never past the slot (the table's last one may end its mapping). */
	first = cp->slot_size < sizeof(sl) ? cp->slot_size : sizeof(sl);
	if (first < SP_SLOT_HEAD + SP_CTX_HEAD) {
		*status = SP_CNT_CTX_READ_ERR;
		return 0;
	}

	for (i = 0; i < SP_CTX_PROBES; i++) {
		slot = cp->slots_addr + (__u64)((h + i) & mask) * cp->slot_size;
		/* The slot's head and the record's in one read (user space registered only tables
		 * whose slots hold both). A page of the table no thread has written yet is not mapped
		 * in and cannot be read from here (no faults in this context): it holds only free
		 * slots. */
		if (bpf_probe_read_user(&sl, first, (void *)slot))
			break;
		if (sl.head.tid == 0)
			break;	/* slots are never freed, so an empty one ends the probe chain */
		if (sl.head.tid == tid) {
			/* Same tid but another start time: a dead thread's slot not yet reclaimed.
			 * One tick of slack: a time namespace's boot offset need not be whole ticks. */
			found = sl.head.start_ticks + 1 >= ticks && sl.head.start_ticks <= ticks + 1;
			break;
		}
	}
	if (!found) {
		*status = SP_CNT_CTX_NO_SLOT;
		return 0;
	}

	/*
	 * The record's head came with the slot's, and the attribute bytes it declares (the slot may
	 * be larger) came too unless there are more than the first read took; those are read again,
	 * whole, into dst. Two reads cannot tear: only this thread writes its slot, and it is the
	 * one interrupted here. The first read goes to the stack and what it took is copied to dst:
	 * a copy from user space into a heap object (the off-CPU task storage) pays the kernel's
	 * hardened-usercopy check of that object, which cost more than the rest of a short block's
	 * switch-out (docs/benchmarks.md).
	 */
	room = cp->slot_size;
	if (room > SP_SLOT_HEAD + SP_CTX_MAX)
		room = SP_SLOT_HEAD + SP_CTX_MAX;
	if (room < SP_SLOT_HEAD + SP_CTX_HEAD) {
		*status = SP_CNT_CTX_READ_ERR;
		return 0;
	}
	/* The whole first read's record bytes, attributes or not: a fixed copy, no helper call. */
	__builtin_memcpy(dst, sl.rec, sizeof(sl.rec));
	if (dst[SP_CTX_OFF_VALID] == 0) {	/* valid flag clear: the thread was interrupted mid-write */
		*status = SP_CNT_CTX_INVALID;
		return 0;
	}
	attrs = dst[SP_CTX_OFF_ATTRS_LEN] | (__u32)dst[SP_CTX_OFF_ATTRS_LEN + 1] << 8;
	room -= SP_SLOT_HEAD + SP_CTX_HEAD;
	if (attrs > room)
		attrs = room;
	barrier_var(attrs);	/* keep the bound checks on the register the helper gets */
	if (attrs > SP_CTX_MAX - SP_CTX_HEAD) {
		*status = SP_CNT_CTX_READ_ERR;
		return 0;
	}
	if (attrs + SP_SLOT_HEAD + SP_CTX_HEAD > first &&
	    bpf_probe_read_user(dst + SP_CTX_HEAD, attrs, (void *)(slot + SP_SLOT_HEAD + SP_CTX_HEAD))) {
		*status = SP_CNT_CTX_READ_ERR;
		return 0;
	}
	__builtin_memcpy(ids, dst, sizeof(ids));	/* trace id */
	if ((ids[0] | ids[1]) == 0) {
		/* No span; user labels set outside any span still travel (like pprof.Do). */
		*status = SP_CNT_CTX_NONE;
		return attrs ? SP_CTX_HEAD + attrs : 0;
	}
	*status = SP_CNT_CTX_OK;
	return SP_CTX_HEAD + attrs;
}

/* Whether the event interrupted user mode: its kernel stack is then empty. */
static __always_inline bool in_user_mode(struct bpf_perf_event_data *ctx)
{
#if defined(__TARGET_ARCH_x86)
	/* The context's regs follow the UAPI layout, where cs is a whole u64 after ip (newer
	 * kernels' headers make it a union that the verifier will not let us read by halves). */
	__u64 cs = *(__u64 *)((char *)&ctx->regs + __builtin_offsetof(struct pt_regs, ip) + 8);

	return (cs & 3) == 3;
#else
	return false;
#endif
}

/*
 * The user registers and the top SP_LEAF_WORDS words of the user stack: a leaf that has not set
 * up its frame keeps its return address there (user space decides which word). A sample taken
 * in the kernel uses the registers saved at the syscall or interrupt entry, like the user stack
 * walk does. x86-64 only for now: elsewhere the flags stay clear.
 */
static __always_inline void read_leaf(struct sp_sample *s, struct task_struct *task)
{
#if defined(__TARGET_ARCH_x86)
	/* A BTF pointer: plain loads. In user mode these are the interrupted registers. */
	struct pt_regs *ur = (struct pt_regs *)bpf_task_pt_regs(task);

	if (!ur) {
		count(SP_CNT_LEAF_REGS_ERR);
		return;
	}
	s->leaf_ip = ur->ip;
	s->leaf_sp = ur->sp;
	s->leaf_bp = ur->bp;
	s->flags |= SP_F_LEAF_REGS;
	if (bpf_probe_read_user(s->leaf_words, sizeof(s->leaf_words), (void *)s->leaf_sp)) {
		count(SP_CNT_LEAF_WORDS_ERR);
		return;
	}
	s->flags |= SP_F_LEAF_WORDS;
#endif
}

/*
 * `record -- COMMAND`: a process the filter holds passes it on to the processes it forks, so the
 * command's children are profiled from their first instruction. Threads share the tgid: no entry.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	__u32 w = ctgid / 64;
	__u64 *bits;

	if (!follow_forks || ptgid == ctgid || !in_filter(ptgid))
		return 0;
	if (bpf_map_update_elem(&pid_filter, &ctgid, &one, BPF_ANY)) {
		count(SP_CNT_FILTER_FULL);
		return 0;
	}
	bits = bpf_map_lookup_elem(&pid_bits, &w);
	if (bits)
		__sync_fetch_and_or(bits, 1ull << (ctgid % 64));
	return 0;
}

#define SCAN_WORDS   64		/* user stack words searched for a frame pointer */
#define SCAN_TRIES   12		/* candidates checked */
#define SCAN_DEPTH   3		/* frame records a candidate must lead through */
#define USER_TOP     (1ull << 47)	/* x86-64 user addresses are below it */

/* Whether fp looks like a frame record: 16-byte aligned (the x86-64 ABI's stack alignment after
 * push rbp), holding an older frame pointer further up (within 1 MiB) or 0, and a return address
 * in user space. */
static __always_inline bool frame_record(__u64 fp, __u64 rec[2])
{
	if ((fp & 15) || bpf_probe_read_user(rec, 16, (void *)fp))
		return false;
	return (rec[0] == 0 || (rec[0] > fp && rec[0] < fp + (1 << 20) && !(rec[0] & 15))) &&
	       rec[1] > 4096 && rec[1] < USER_TOP;
}

/* Per-CPU room of the scan: the words at the user sp (SCAN_WORDS of them for the rescue, up to
 * FRAME_WORDS for a blocked thread's place), then the frames walked. */
struct scan_buf {
	__u64 sp, n;			/* the window's: where it was read, words read */
	__u64 words[FRAME_WORDS];
	__u64 frames[SP_MAX_FRAMES + 1];	/* one more: a power of two the index is masked by */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scan_buf);
} scan_bufs SEC(".maps");

/* The room of offcpu_resume and offcpu_exit, which send a long block from the thread's own context:
 * they run with interrupts on (the sampler can interrupt them on their CPU, and has its own room)
 * and, on a preemptible kernel, may be preempted there, and the other run on that CPU meanwhile:
 * busy says so. */
struct resume_room {
	__u32 busy;
	__u32 reserved;
	struct scratch rec;
	struct scan_buf scan;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct resume_room);
} resume_rooms SEC(".maps");

struct scan_ctx {
	struct scan_buf *b;
	__u64 sp, fp;
	__u32 tries, n;
};

/* Whether the stack word v, at address slot, could be a saved frame pointer: 16-byte aligned, further
 * up the same stack (within 64 KiB). Both searches for the first frame record (scan_word on user
 * memory, find_word in the window) start from it. */
static __always_inline bool fp_candidate(__u64 v, __u64 slot)
{
	return v > slot && v <= slot + 65536 && !(v & 15);
}

/* bpf_loop callbacks (the verifier checks a callback once, not every turn of a loop). */
static long scan_word(__u64 i, struct scan_ctx *c)
{
	__u64 slot = c->sp + i * 8, v, f, rec[2];
	__u32 d;

	if (i >= SCAN_WORDS || c->tries >= SCAN_TRIES)
		return 1;
	v = c->b->words[i];
	if (!fp_candidate(v, slot))
		return 0;
	c->tries++;
	for (d = 0, f = v; d < SCAN_DEPTH; d++) {
		if (!frame_record(f, rec) || rec[0] == 0)
			return 0;	/* a real chain does not end this close to a blocked leaf */
		f = rec[0];
	}
	c->fp = v;
	return 1;
}

static long walk_frame(__u64 i, struct scan_ctx *c)
{
	__u64 rec[2];

	if (c->n >= SP_MAX_FRAMES || !frame_record(c->fp, rec))
		return 1;
	c->b->frames[c->n & SP_MAX_FRAMES /* 127: bounds the index for the verifier */] = rec[1];
	c->n++;
	if (rec[0] == 0)
		return 1;
	c->fp = rec[0];
	return 0;
}

/*
 * A blocked thread's user stack usually starts in libc's futex or syscall wrappers, built without
 * frame pointers: they use rbp for data, so the frame-pointer walk stops after the leaf and the
 * managed code that blocked is lost. Their callers (libcoreclr, JIT code) keep frames, and the
 * wrappers' frames hold pointers to them. So: search the SCAN_WORDS words at the user sp for the
 * first one that looks like a frame pointer (a 16-byte aligned address further up this stack that
 * starts a chain of frame records), then walk the frames from there, after the n frames the walk
 * found. A pointer to a local buffer can pass for one and give a first frame or two that are
 * data: user space drops those (it knows the mappings). The wrappers' direct caller, whose return
 * address lies below the first frame record, is not found. Returns the frames added. b: the
 * calling program's own per-CPU room.
 */
static __always_inline __u32 rescue_user_stack(struct sp_sample *s, __u32 n, struct scan_buf *b)
{
	struct scan_ctx c = { .sp = s->leaf_sp, .b = b };
	__u32 room = SP_MAX_FRAMES - n;

	if (!(s->flags & SP_F_LEAF_REGS) || n >= SP_MAX_FRAMES)
		return 0;
	if (!c.b || bpf_probe_read_user(c.b->words, SCAN_WORDS * 8, (void *)c.sp))
		return 0;
	/* A candidate must start a chain of SCAN_DEPTH frame records: a pointer into the stack that
	 * is data, not a saved frame pointer, rarely does. */
	bpf_loop(SCAN_WORDS, scan_word, &c, 0);
	if (!c.fp)
		return 0;
	bpf_loop(SP_MAX_FRAMES, walk_frame, &c, 0);
	if (c.n > room)
		c.n = room;
	if (c.n == 0 || n > SP_MAX_FRAMES - 1 ||
	    bpf_probe_read_kernel(s->data + n * 8, c.n * 8, c.b->frames))
		return 0;
	return c.n;
}

/* The frame record at fp in the window of n words read at sp: the index of its first word (the
 * older frame pointer; the return address follows), or -1 when it is not all in the window or does
 * not look like one (as frame_record). */
static __always_inline long window_record(const __u64 *w, __u64 n, __u64 sp, __u64 fp)
{
	__u64 i = (fp - sp) / 8, next, ret;

	if (fp <= sp || (fp & 15) || i + 1 >= n || i + 1 >= FRAME_WORDS)
		return -1;
	next = w[i];
	ret = w[i + 1];
	if (!((next == 0 || (next > fp && next < fp + (1 << 20) && !(next & 15))) &&
	      ret > 4096 && ret < USER_TOP))
		return -1;
	return i;
}

/*
 * The window: the first n words (at most FRAME_WORDS) of the blocked thread's stack at its sp, read
 * in one copy, or as many as are left to the end of sp's page near the top of a shallow stack.
 * Returns the words read, 0 when none could be.
 */
static __always_inline __u64 read_window(struct scan_buf *b, __u64 sp, __u64 n)
{
	__u64 page = (4096 - (sp & 4095)) / 8;

	b->sp = sp;
	b->n = 0;
	if (n == 0 || n > FRAME_WORDS)
		return 0;
	if (bpf_probe_read_user(b->words, n * 8, (void *)sp)) {
		if (page >= n || page == 0)
			return 0;
		n = page;
		barrier_var(n);
		if (n > FRAME_WORDS || bpf_probe_read_user(b->words, n * 8, (void *)sp))
			return 0;
	}
	b->n = n;
	return n;
}

/* The frames walked from the record at fp: their return addresses hashed, at most max of them.
 * Global functions (this one and find_frames): the verifier checks each once, not at every call. */
__noinline int walk_window(const struct scan_buf *b, __u64 fp, __u32 max, struct offcpu_frames *fw)
{
	__u64 n, sp;
	__u32 d;
	long r;

	if (!b || !fw)
		return 0;
	n = b->n;
	sp = b->sp;
	fw->hash = 0;
	fw->fp_off = fp > sp ? fp - sp : 0;
	fw->n = 0;
	for (d = 0; d < FRAME_HASHED && d < max && fp; d++) {
		r = window_record(b->words, n, sp, fp);
		if (r < 0 || r >= FRAME_WORDS - 1)
			break;
		fw->hash = (fw->hash ^ b->words[r + 1]) * 0x100000001b3ull;	/* FNV-1a's prime */
		fw->n = d + 1;
		fp = b->words[r];
	}
	return 0;
}

struct find_ctx {
	const struct scan_buf *b;
	__u64 fp;
};

/* bpf_loop callback of find_frames: whether the window's word i starts the frames. */
static long find_word(__u64 i, struct find_ctx *c)
{
	const struct scan_buf *b = c->b;
	__u64 n = b->n, sp = b->sp, v, slot, f;
	long r;
	int d;

	if (i >= SCAN_WORDS || i >= n)
		return 1;
	v = b->words[i];
	slot = sp + i * 8;
	if (!fp_candidate(v, slot))
		return 0;
	for (d = 0, f = v; d < SCAN_DEPTH; d++) {
		r = window_record(b->words, n, sp, f);
		if (r < 0 || r >= FRAME_WORDS - 1)
			break;
		f = b->words[r];
		if (f == 0)
			break;
	}
	if (d == SCAN_DEPTH || (d > 0 && f && f - sp >= n * 8)) {
		c->fp = v;
		return 1;
	}
	return 0;
}

/*
 * The frames above a blocked thread's syscall, from the window, found as rescue_user_stack finds
 * them (libc's wrappers keep no frame pointer): the first word that points further up the stack
 * and starts a chain of frame records (or one that leaves the window). None (n 0) when there is
 * no such word.
 */
__noinline int find_frames(const struct scan_buf *b, struct offcpu_frames *fw)
{
	struct find_ctx c = { .b = b };

	if (!b)
		return 0;
	bpf_loop(SCAN_WORDS, find_word, &c, 0);
	return walk_window(b, c.fp, FRAME_HASHED, fw);
}

/*
 * The span record of the current thread after the stacks (off bytes of data), if its process is
 * hooked (same process, not a reused pid). Returns the record's bytes to send.
 */
static __always_inline __u64 fill_span(struct sp_sample *s, struct task_struct *task, __u32 tgid,
				       __u64 off)
{
	struct sp_ctx_proc *cp;
	__u64 size;
	__u32 tid;

	s->ctx_len = 0;
	s->ctx_status = SP_CNT_CTX_UNHOOKED;
	if (off > 2 * STACK_BYTES)
		return sizeof(*s);	/* unreachable; keeps the verifier's bounds */
	barrier_var(off);
	cp = variant & SP_VAR_NO_SPAN ? NULL : bpf_map_lookup_elem(&ctx_procs, &tgid);
	if (cp && cp->proc_start_ticks == s->proc_start_ticks && cp->slot_count &&
	    (cp->slot_count & (cp->slot_count - 1)) == 0) {
		if (ns_tid(task, &tid))
			s->ctx_status = SP_CNT_TASK_ERR;
		else
			s->ctx_len = read_span(tid, task->start_boottime / SP_NSEC_PER_TICK, cp,
					       s->data + off, &s->ctx_status);
	}
	size = sizeof(*s) + off + s->ctx_len;
	return size > SP_SAMPLE_MAX ? SP_SAMPLE_MAX : size;
}

/*
 * Fill the scratch record for the current thread (task, tgid:tid): task fields, user and kernel
 * stacks (none of the kernel when the event interrupted user mode; ks's when given), the leaf's
 * registers, the span record. Returns the bytes to send. Shared by the CPU sampler and the off-CPU
 * programs, all in the thread's own context: its user stack and its span record are its own.
 * rescue: the program's room for rescue_user_stack (a blocked thread's stack), or NULL.
 */
static __always_inline __u64 fill_record(void *ctx, struct sp_sample *s, struct task_struct *task,
					 __u32 tgid, __u32 tid, bool user_mode,
					 struct scan_buf *rescue, const struct offcpu_kstack *ks)
{
	struct task_struct *leader;
	__u64 off, nu;
	long n;

	s->time_ns = bpf_ktime_get_ns();
	s->tgid = tgid;
	s->tid = tid;
	s->cpu = bpf_get_smp_processor_id();
	s->flags = 0;
	s->n_user = 0;
	s->n_kernel = 0;
	s->ctx_len = 0;
	s->ctx_status = SP_CNT_CTX_UNHOOKED;
	s->off_ns = 0;
	s->user_scan_at = 0;
	leader = task->group_leader;
	s->proc_start_ticks = leader->start_boottime / SP_NSEC_PER_TICK;
	/* Plain loads, like the rest of the task's fields. A load that faults reads as zero: an
	 * empty name, which user space fills in from /proc. */
	__builtin_memcpy(s->comm, task->comm, sizeof(s->comm));
	__builtin_memcpy(s->pcomm, leader->comm, sizeof(s->pcomm));

	/* User stack, leaf first. Kernel threads have none. */
	off = 0;
	if (!(task->flags & PF_KTHREAD) && !(variant & SP_VAR_NO_USTACK)) {
		n = bpf_get_stack(ctx, s->data, STACK_BYTES, BPF_F_USER_STACK);
		if (n < 0) {
			s->flags |= SP_F_USTACK_ERR;
			count(SP_CNT_USTACK_ERR);
			n = 0;
		}
		if (n > STACK_BYTES)
			n = STACK_BYTES;
		if (n == STACK_BYTES)
			s->flags |= SP_F_USTACK_TRUNC;
		nu = n / 8;
		if (nu && !(variant & SP_VAR_NO_LEAF))
			read_leaf(s, task);
		if (rescue && nu && nu <= 2 && (n = rescue_user_stack(s, nu, rescue))) {
			s->user_scan_at = nu;
			nu += n;
			s->flags |= SP_F_USTACK_SCAN;
		}
		if (nu > SP_MAX_FRAMES)
			nu = SP_MAX_FRAMES;
		s->n_user = nu;
		off = nu * 8;
	}

	/* Kernel stack after it; none when the event interrupted user mode (the walk would only
	 * find that out). */
	if (off > STACK_BYTES)
		return 0;	/* unreachable; keeps the verifier's bounds */
	if (ks) {
		n = ks->n * 8;
		barrier_var(n);
		if (n > STACK_BYTES)
			n = STACK_BYTES;
		if (ks->err || (n > 0 && bpf_probe_read_kernel(s->data + off, n, ks->ips)))
			n = -1;
	} else {
		n = user_mode || (variant & SP_VAR_NO_KSTACK) ? 0 :
			bpf_get_stack(ctx, s->data + off, STACK_BYTES, 0);
	}
	if (n < 0) {
		s->flags |= SP_F_KSTACK_ERR;
		count(SP_CNT_KSTACK_ERR);
		n = 0;
	}
	if (n > STACK_BYTES)
		n = STACK_BYTES;
	s->n_kernel = n / 8;
	off += s->n_kernel * 8;

	return fill_span(s, task, tgid, off);
}

/*
 * No wake-up per record: user space drains the rings every poll interval, and a wake-up is an
 * irq_work self-IPI per sample (costly, especially in VMs). Only a filling ring wakes it. A full
 * ring's loss is counted as lost (its own counter per ring).
 */
static __always_inline int send_record(void *ring, __u64 wakeup, __u32 lost, struct sp_sample *s,
				       __u64 size)
{
	__u64 wake = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) > wakeup ?
			     BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;

	if (bpf_ringbuf_output(ring, s, size, wake)) {
		count(lost);
		return -1;
	}
	count(SP_CNT_SENT);
	return 0;
}

SEC("perf_event")
int sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, zero = 0;
	struct sp_sample *s;
	__u64 size;

	if (tid == 0)
		return 0;	/* the idle task */
	if (filter_pids && !in_filter(tgid))
		return 0;
	count(SP_CNT_SAMPLES);

	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s) {
		count(SP_CNT_LOST_SCRATCH);
		return 0;
	}
	/* the task's fields, and its leader's, are plain loads */
	size = fill_record(ctx, s, bpf_get_current_task_btf(), tgid, tid, in_user_mode(ctx), NULL,
			   NULL);
	count(s->ctx_status);
	if (variant & SP_VAR_NO_OUTPUT)
		return 0;
	send_record(&events, wakeup_bytes, SP_CNT_LOST_RINGBUF, s, size);
	return 0;
}

/* task_struct's rseq area from Linux 6.19 (struct rseq_data), the pointer itself before. */
struct rseq_data___new {
	struct rseq *usrptr;
} __attribute__((preserve_access_index));
struct task_struct___rseq_new {
	struct rseq_data___new rseq;
} __attribute__((preserve_access_index));

/* Whether t is registered with rseq (glibc 2.35+ registers every thread): where the kernel reports
 * returns to user space (offcpu_resume_ok), it reports t's after each switch-out, so its first
 * block can wait for its return as every later one does. */
static __always_inline bool rseq_registered(struct task_struct *t)
{
	struct task_struct___rseq_new *n = (void *)t;

	if (bpf_core_field_exists(n->rseq.usrptr))
		return BPF_CORE_READ(n, rseq.usrptr) != NULL;
	if (bpf_core_field_exists(t->rseq))
		return BPF_CORE_READ(t, rseq) != NULL;
	return false;
}

/*
 * The clock of the run queue p is on (sched_clock; the one its sched_info.last_queued is in), or
 * 0 when this kernel does not say (no group scheduling: no way here from a task to its run queue;
 * the `runqueues` symbol needs CONFIG_KALLSYMS_ALL).
 */
static __always_inline __u64 rq_clock_of(struct task_struct *p)
{
	struct cfs_rq *cfs;
	struct rq *rq;

	if (!bpf_core_field_exists(p->se.cfs_rq) || !bpf_core_field_exists(cfs->rq))
		return 0;
	cfs = p->se.cfs_rq;
	if (!cfs)
		return 0;
	rq = cfs->rq;
	return rq ? rq->clock : 0;
}

/* A record's stacks to or from a cached place's (the same fields, two structs): the counts, the
 * leaf's registers and words, and the frames; the number of frames copied is its value. */
#define COPY_STACKS(dst, dst_frames, src, src_frames) ({				\
	__u64 __n = (__u64)(src)->n_user + (src)->n_kernel;				\
	(dst)->n_user = (src)->n_user;							\
	(dst)->n_kernel = (src)->n_kernel;						\
	(dst)->user_scan_at = (src)->user_scan_at;					\
	(dst)->leaf_ip = (src)->leaf_ip;						\
	(dst)->leaf_sp = (src)->leaf_sp;						\
	(dst)->leaf_bp = (src)->leaf_bp;						\
	__builtin_memcpy((dst)->leaf_words, (src)->leaf_words, sizeof((dst)->leaf_words)); \
	if (__n > 2 * SP_MAX_FRAMES)							\
		__n = 2 * SP_MAX_FRAMES;						\
	bpf_probe_read_kernel(dst_frames, __n * 8, src_frames);			\
	__n;										\
})

/*
 * The key of the budgets the current task's blocks count in, taken at its first block:
 * - in a pid namespace below the host's (a container; spanprof runs in the host's), the
 *   outermost of them, the container's own: whatever namespaces it makes under it, pid or cgroup,
 *   and whatever cgroups, it has one budget (a nested cgroup namespace, rooted at a cgroup the
 *   container made, was once another);
 * - else the root cgroup of its cgroup namespace where it has one of its own (a new cgroup
 *   namespace is rooted at its maker's cgroup), else its cgroup, or its process where that is the
 *   root (or cgroup v2 is not mounted).
 */
static __always_inline __u64 budget_key(struct task_struct *cur)
{
	struct cgroup *root = cur->nsproxy->cgroup_ns->root_cset->dfl_cgrp;
	struct pid *pid = cur->thread_pid;
	struct pid_namespace *ns = NULL;
	__u32 inum = 0;
	__u64 cgroup;

	if (pid && pid->level > 0 && !bpf_core_read(&ns, sizeof(ns), &pid->numbers[1].ns) && ns &&
	    !bpf_core_read(&inum, sizeof(inum), &ns->ns.inum) && inum)
		return 1ull << 62 | inum;
	if (root && root->level > 0)
		return root->kn->id;
	cgroup = bpf_get_current_cgroup_id();
	return cgroup > 1 ? cgroup : 1ull << 63 | cur->tgid;
}

/* The budgets with this key, made afresh when there are none. */
static __always_inline struct offcpu_budget *budget_of(__u64 key, __u64 tick)
{
	struct offcpu_budget fresh = { .places.tick = tick, .sends.tick = tick }, *v;

	v = bpf_map_lookup_elem(&offcpu_budgets, &key);
	if (!v) {
		bpf_map_update_elem(&offcpu_budgets, &key, &fresh, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&offcpu_budgets, &key);
	}
	return v;
}

/* Whether one more may be taken from a bucket now. CPUs racing may let one more in each, or pay a
 * tick down twice: bounded by the CPUs, not by the load. Only what is let in is counted, so a
 * refused burst leaves no debt behind it. */
static __always_inline void bucket_pay(struct offcpu_bucket *v, __u64 tick, __u64 per_sec)
{
	__u64 paid;

	if (tick > v->tick) {
		paid = (tick - v->tick) * per_sec / OFFCPU_TICKS;
		v->used = v->used > paid ? v->used - paid : 0;
		v->tick = tick;
	}
}

static __always_inline bool bucket_take(struct offcpu_bucket *v, __u64 tick, __u64 per_sec,
					__u64 burst)
{
	bucket_pay(v, tick, per_sec);
	if (v->used >= burst)
		return false;
	__sync_fetch_and_add(&v->used, 1);
	return true;
}

/* The tick (OFFCPU_TICKS a second) of a bpf_ktime_get_ns() time. */
static __always_inline __u64 tick_of(__u64 ns)
{
	return ns / (1000000000ull / OFFCPU_TICKS);
}

/* Whether the budgets with this key let one more place in offcpu_sites now. */
static __always_inline bool place_budget_take(__u64 key)
{
	__u64 tick = tick_of(bpf_ktime_get_ns());
	struct offcpu_budget *v = budget_of(key, tick);

	return v && bucket_take(&v->places, tick, OFFCPU_PLACES_PER_SEC, OFFCPU_PLACES_BURST);
}

/* a * b / c, without overflow where b and c are below 2^32 (saturated past 2^64). */
static __always_inline __u64 mul_div(__u64 a, __u64 b, __u64 c)
{
	__u64 q = a / c, lim;

	if (!b)
		return 0;
	lim = ~0ull / b;
	asm volatile("" : "+r"(lim));	/* compared as is: clang would make it a 128-bit multiply */
	if (q > lim)
		return ~0ull;
	return q * b + a % c * b / c;
}

/* A sum smoothed over ticks with the tick ended's part added (the sum before it weighs 15/16), then
 * kept/16 of it (16: the next tick; less for ticks with nothing since). No overflow below 2^60. */
static __always_inline __u64 smoothed(__u64 sum, __u64 add, __u64 kept)
{
	return (sum * (OFFCPU_TICKS - 1) / OFFCPU_TICKS + add) * kept / OFFCPU_TICKS;
}

/* Whether a long block of delta ns, counted in the budgets with this key, is sent, and the time
 * it stands for in *off_ns (delta, or a quantum when thinned), or counted as left out. */
static __always_inline bool send_budget_take(__u64 key, __u64 now, __u64 delta, __u64 *off_ns)
{
	__u64 tick = tick_of(now), target = offcpu_max_rate - offcpu_max_rate / 4;
	__u64 burst = (offcpu_max_rate + 7) / 8, quantum, cap, gap, w, r, q;
	struct offcpu_budget *v = budget_of(key, tick);
	struct offcpu_sends *s;

	if (!v) {
		count(SP_CNT_OFFCPU_RATE);
		count_add(SP_CNT_OFFCPU_RATE_NS, delta);
		return false;
	}
	s = &v->sends;
	if (tick > s->tick) {
		/* The tick ended goes in with the weight 1, each one before with 15/16 of the next
		 * one's: at a steady rate the sums are a second's. Ticks with no long block since
		 * take a sixteenth off each (close enough to 15/16 each). Until the weights add up
		 * to a second the sums are scaled up to one, from a quarter second's at least, so
		 * that a flood is thinned within a few ticks and a burst of one tick is not. CPUs
		 * racing here may fold a tick twice or lose a few blocks of it: the quantum is off
		 * for a tick, the bucket still holds. */
		gap = tick - s->tick - 1;
		gap = gap < OFFCPU_TICKS ? OFFCPU_TICKS - gap : 0;
		s->per_sec = smoothed(s->per_sec, s->seen, gap);
		s->ns_per_sec = smoothed(s->ns_per_sec, s->seen_ns, gap);
		s->weight = smoothed(s->weight, OFFCPU_TICKS, gap);
		w = s->weight > OFFCPU_TICKS * OFFCPU_TICKS / 4 ? s->weight :
								   OFFCPU_TICKS * OFFCPU_TICKS / 4;
		s->quantum = s->per_sec * OFFCPU_TICKS * OFFCPU_TICKS / w > target ?
				     s->ns_per_sec / w * OFFCPU_TICKS * OFFCPU_TICKS / target : 0;
		s->seen = 0;
		s->seen_ns = 0;
		s->tick = tick;
	}
	quantum = s->quantum;
	cap = quantum ? quantum : 1000000000ull / OFFCPU_TICKS;
	/* Past half the bound's burst: a quantum from this tick's own blocks too, the one that would
	 * have sent the target's share of a tick of them, so that a flood the smoothed rate has not
	 * seen yet is thinned (stood for) rather than cut at the bound. */
	bucket_pay(&s->bucket, tick, offcpu_max_rate);
	if (s->bucket.used >= burst / 2) {
		q = s->seen_ns / (target / OFFCPU_TICKS ? target / OFFCPU_TICKS : 1);
		if (q > quantum)
			quantum = q;
	}
	__sync_fetch_and_add(&s->seen, 1);
	__sync_fetch_and_add(&s->seen_ns, delta < cap ? delta : cap);
	*off_ns = delta;
	if (delta < quantum) {
		r = (__u64)bpf_get_prandom_u32() << 32 | bpf_get_prandom_u32();
		if (r % quantum >= delta) {
			count(SP_CNT_OFFCPU_THINNED);
			return false;
		}
		*off_ns = quantum;
	}
	if (!bucket_take(&s->bucket, tick, offcpu_max_rate, burst)) {
		count(SP_CNT_OFFCPU_RATE);
		count_add(SP_CNT_OFFCPU_RATE_NS, *off_ns);	/* the time it stood for */
		return false;
	}
	return true;
}

#define OFFCPU_RING_MIN_ROOM 4096	/* less room than this counts as full: a record may not fit */

/*
 * Whether a long block is sent with the off-CPU ring this full, and the time it stands for in
 * *off_ns. Several cgroups, each within its rate, can together fill the ring faster than user
 * space reads it, and a full ring loses blocks with their time. So past half full a block is sent
 * with the chance (room left / half the ring) squared, its time scaled up by the inverse, and the
 * others are counted (offcpu_ring_thinned): what is sent stands for all of it, on average, by stack
 * and span. Squared, a ring that user space stops reading for a while (a CPU-starved node) fills
 * ever slower: with the chance room / half, 40,000 long blocks a second took its last half in
 * about 60 ms (the room falls exponentially); squared, about 1.6 s. With less than
 * OFFCPU_RING_MIN_ROOM left, a block is lost as to a full ring (nothing stands for it), and
 * counted so.
 */
static __always_inline bool ring_room_take(__u64 *off_ns)
{
	__u64 size = bpf_ringbuf_query(&offcpu_events, BPF_RB_RING_SIZE);
	__u64 used = bpf_ringbuf_query(&offcpu_events, BPF_RB_AVAIL_DATA);
	__u64 half = size / 2, room;

	if (used <= half || !half)
		return true;
	room = size > used ? size - used : 0;
	if (room < OFFCPU_RING_MIN_ROOM) {
		count(SP_CNT_OFFCPU_LOST_RINGBUF);	/* full: lost, as a failed write is */
		return false;
	}
	if (bpf_get_prandom_u32() % half >= room || bpf_get_prandom_u32() % half >= room) {
		count(SP_CNT_OFFCPU_RING_THINNED);
		return false;
	}
	*off_ns = mul_div(mul_div(*off_ns, half, room), half, room);
	return true;
}

/* The user registers p entered the kernel with (its syscall's number in nr); zeros on other
 * architectures. */
static __always_inline void user_regs(struct task_struct *p, __u64 *ip, __u64 *sp, __u64 *bp,
				      __u64 *nr)
{
	struct pt_regs *ur;

	*ip = *sp = *bp = *nr = 0;
#if defined(__TARGET_ARCH_x86)
	ur = (struct pt_regs *)bpf_task_pt_regs(p);
	if (ur) {
		*ip = ur->ip;
		*sp = ur->sp;
		*bp = ur->bp;
		*nr = ur->orig_ax;
	}
#endif
}

/*
 * A long block of a thread whose returns to user space are reported, as it is woken (p is the
 * thread switching in: not the current task): its kernel stack now, as it blocked (saved when it
 * switched out; its return has a stack of its own), its user stack and span record at its return,
 * in its own context (offcpu_resume). A thread that blocks again before it returns (in the same
 * syscall) adds that block's time to this one.
 */
static __always_inline void resume_pend(struct task_struct *p, struct offcpu_block *b, __u64 woke,
					__u64 off_ns)
{
	struct offcpu_kstack *ks;
	__u64 bp, nr;
	long n;

	ks = bpf_task_storage_get(&offcpu_kstacks, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ks) {
		n = variant & SP_VAR_NO_KSTACK ? 0 : bpf_get_task_stack(p, ks->ips, sizeof(ks->ips), 0);
		ks->err = n < 0;
		ks->n = n > 0 ? n / 8 : 0;
	}
	b->pending_ns = b->pending ? b->pending_ns + off_ns : off_ns;
	b->pending_woke = woke;
	user_regs(p, &b->pending_ip, &b->pending_sp, &bp, &nr);
	b->pending = 1;
}

/* A long block still waits for its thread's return as the thread blocks again. With the user
 * registers it blocked with, it is still in that syscall (woken and blocked again): the next long
 * block adds to it. Else it returned unreported (an exec, the program paused; a preempted
 * offcpu_resume on a preemptible kernel): counted, not sent, and the thread's blocks are taken at
 * their switch-outs until a return of its is seen again. A return missed the same way at the same
 * place looks like the first case: the two blocks are sent as one, from that place. */
static __always_inline void pending_again(struct task_struct *prev, struct offcpu_block *b)
{
	__u64 ip, sp, bp, nr;

	user_regs(prev, &ip, &sp, &bp, &nr);
	if (ip == b->pending_ip && sp == b->pending_sp)
		return;
	count(SP_CNT_OFFCPU_RESUME_MISSED);
	count_add(SP_CNT_OFFCPU_RESUME_MISSED_NS, b->pending_ns);
	b->pending = 0;
	b->rseq_seen = 0;
}

/* A block at the thread's known place known_at ended: one more short one there, or a long one,
 * whose stacks were needed: from then on every block there has its frames read, so that a path
 * that shares its registers is told apart at its next block, however rare. */
static __always_inline void place_ended(struct offcpu_block *b, bool long_block)
{
	__u32 i = b->known_at;

	if (i >= OFFCPU_KNOWN)
		return;
	if (long_block)
		b->known[i].had_long = 1;
	else if (b->known[i].shorts < OFFCPU_TRUSTED_SHORTS)
		b->known[i].shorts++;
}

/*
 * The end of next's block, as it switches in. The block ran from its switch-out to its wake-up,
 * which is when it was queued here: the run-queue wait after it (sched_info.last_queued, in the
 * run queue's clock) is CPU contention, like preemption, not blocking, and is taken off. A long
 * block is sent with the stacks of its place and the span record read at its switch-out.
 */
static __always_inline void offcpu_end(struct task_struct *p, struct offcpu_block *b)
{
	struct task_struct *leader;
	struct offcpu_stacks *st;
	struct sp_sample *rec;
	__u64 now, woke, start, end, clock, delta, n, ctx_len, off_ns;
	__u32 zero = 0;

	start = b->start;
	b->start = 0;
	/* It ran since that switch-out (woken and run while the program was detached, and now
	 * back from a preemption): no block ends here. */
	if (p->sched_info.pcount != b->pcount)
		return;
	/* A short block costs no clock read: both ends are the run queue's clock when it has one. */
	clock = 0;
	if (b->on_rq_clock) {
		end = p->sched_info.last_queued;
		if (!end)
			end = clock = rq_clock_of(p);
	} else {
		end = bpf_ktime_get_ns();
	}
	delta = end > start ? end - start : 0;
	place_ended(b, delta >= offcpu_threshold_ns);
	if (delta < offcpu_threshold_ns) {
		count(SP_CNT_OFFCPU_SHORT);
		count_add(SP_CNT_OFFCPU_SHORT_NS, delta);
		return;
	}
	/* A long one: its wake-up in CLOCK_MONOTONIC, and if it began before a pause, timed from the
	 * resume (a short one is off by less than the threshold, once per thread and pause). */
	now = bpf_ktime_get_ns();
	woke = now;
	if (b->on_rq_clock) {
		if (!clock)
			clock = rq_clock_of(p);
		if (clock >= end && clock - end < now)
			woke = now - (clock - end);
	}
	if (woke - delta < offcpu_resume_ns) {
		delta = woke > offcpu_resume_ns ? woke - offcpu_resume_ns : 0;
		if (delta < offcpu_threshold_ns) {
			count(SP_CNT_OFFCPU_SHORT);
			count_add(SP_CNT_OFFCPU_SHORT_NS, delta);
			return;
		}
	}
	count(SP_CNT_OFFCPU_LONG);
	count_add(SP_CNT_OFFCPU_LONG_NS, delta);
	if (!send_budget_take(b->budget_key, now, delta, &off_ns))
		return;
	/* Sent at the return: the ring's room is looked at there, where the record is written (a
	 * look now would let every thread woken meanwhile in). */
	if (b->resume) {
		resume_pend(p, b, woke, off_ns);
		return;
	}
	if (!ring_room_take(&off_ns))
		return;
	rec = bpf_map_lookup_elem(&scratch, &zero);
	if (!rec) {
		count(SP_CNT_LOST_SCRATCH);
		return;
	}
	st = b->site.tgid ? bpf_map_lookup_elem(&offcpu_sites, &b->site) : NULL;
	rec->time_ns = woke;
	rec->tgid = p->tgid;
	rec->tid = p->pid;
	rec->cpu = b->cpu;
	rec->off_ns = off_ns;
	rec->proc_start_ticks = b->site.start_ticks;
	leader = p->group_leader;
	__builtin_memcpy(rec->comm, p->comm, sizeof(rec->comm));
	__builtin_memcpy(rec->pcomm, leader->comm, sizeof(rec->pcomm));
	rec->ctx_status = b->ctx_status;
	rec->user_scan_at = 0;
	n = 0;
	if (st) {
		rec->flags = SP_F_OFFCPU | st->flags;
		n = COPY_STACKS(rec, rec->data, st, st->frames);
	} else {
		/* Its place left the cache while it was blocked (or had no registers), or was new past
		 * its cgroup's budget: kept, marked; the next block there takes its stacks again. */
		if (b->over_budget) {
			count(SP_CNT_OFFCPU_BUDGET_NO_STACKS);
		} else {
			count(SP_CNT_OFFCPU_SITE_LOST);
			__builtin_memset(b->known, 0, sizeof(b->known));
		}
		rec->flags = SP_F_OFFCPU | SP_F_USTACK_ERR | SP_F_KSTACK_ERR;
		rec->n_user = 0;
		rec->n_kernel = 0;
	}
	ctx_len = b->ctx_len;
	if (ctx_len > SP_CTX_MAX)
		ctx_len = 0;
	rec->ctx_len = ctx_len;
	bpf_probe_read_kernel(rec->data + n * 8, ctx_len, b->ctx);
	send_record(&offcpu_events, offcpu_wakeup_bytes, SP_CNT_OFFCPU_LOST_RINGBUF, rec,
		    sizeof(*rec) + n * 8 + ctx_len);
}

/* p's block record goes, counted off offcpu_threads and its budget's threads. The kernel refuses
 * the delete while another program on this CPU holds task storage: at the thread's exit it is
 * counted off all the same (the record goes with the task), else it stays, counted, and its next
 * block tries again. */
static __always_inline void record_drop(struct task_struct *p, struct offcpu_block *b, bool exiting)
{
	__u64 key = b->budget_key;
	struct offcpu_budget *v;

	if (bpf_task_storage_delete(&offcpu_blocks, p) && !exiting)
		return;
	bpf_task_storage_delete(&offcpu_kstacks, p);	/* if it has one: it goes with the record */
	v = bpf_map_lookup_elem(&offcpu_budgets, &key);
	if (v && v->threads)
		__sync_fetch_and_add(&v->threads, -1);
	__sync_fetch_and_add(&offcpu_threads, -1);
}

/* A generation (gens), plus one: what a thread's cache holds when it is current. */
static __always_inline __u64 gen_now(__u32 which)
{
	__u64 *g = bpf_map_lookup_elem(&gens, &which);

	return g ? *g + 1 : 0;
}

/* The span table of the thread's process: its copy in the thread's block record, looked up
 * again only when ctx_procs has changed since (a hash lookup per block costs more than the
 * whole of the rest of a short block's switch-out). */
static __always_inline const struct sp_ctx_proc *thread_table(struct offcpu_block *b, __u32 tgid)
{
	__u64 g = gen_now(SP_GEN_CTX_PROCS);
	struct sp_ctx_proc *cp;

	if (b->table_gen != g) {
		cp = bpf_map_lookup_elem(&ctx_procs, &tgid);
		if (cp)
			b->table = *cp;
		else
			b->table.slot_count = 0;
		b->table_gen = g;
	}
	return b->table.slot_count ? &b->table : NULL;
}

/* The block starts now: the run queue's clock (prev runs here) where there is one. */
static __always_inline void offcpu_start(struct task_struct *prev, struct offcpu_block *b)
{
	__u64 clock = rq_clock_of(prev);

	b->on_rq_clock = clock != 0;
	b->start = clock ? clock : bpf_ktime_get_ns();
}

/* Whether a known place has the registers of the thread's current one (b->site, frames aside). */
static __always_inline bool same_registers(const struct offcpu_site *k, const struct offcpu_site *s)
{
	return k->sp == s->sp && k->ip == s->ip && k->bp == s->bp && k->nr == s->nr &&
	       k->tgid == s->tgid && k->start_ticks == s->start_ticks;
}

/*
 * The known place the thread's current one is by its registers alone: the slot of the one with
 * them if no other has had them (twin) and its blocks, OFFCPU_TRUSTED_SHORTS at least, were all
 * short; else OFFCPU_KNOWN when none has them, OFFCPU_KNOWN + 1 when their frames must tell.
 * Global functions (this one, known_frames, remember_site): the verifier checks each once.
 */
__noinline int known_registers(const struct offcpu_block *b)
{
	int i;

	if (!b)
		return OFFCPU_KNOWN;
	for (i = 0; i < OFFCPU_KNOWN; i++) {
		const struct offcpu_known *k = &b->known[i];

		if (same_registers(&k->site, &b->site))
			return !k->twin && !k->had_long && k->shorts >= OFFCPU_TRUSTED_SHORTS ?
				       i : OFFCPU_KNOWN + 1;
	}
	return OFFCPU_KNOWN;
}

/* The known place with the current one's registers whose frames are in the window (read at its
 * sp) where they were: its slot, their walk in b->frames; OFFCPU_KNOWN when none. */
__noinline int known_frames(struct offcpu_block *b, const struct scan_buf *sb)
{
	int i;

	if (!b || !sb)
		return OFFCPU_KNOWN;
	for (i = 0; i < OFFCPU_KNOWN; i++) {
		const struct offcpu_known *k = &b->known[i];

		if (!same_registers(&k->site, &b->site))
			continue;
		walk_window(sb, b->site.sp + k->frames.fp_off, k->frames.n, &b->frames);
		if (b->frames.n == k->frames.n && b->frames.hash == k->frames.hash)
			return i;
	}
	__builtin_memset(&b->frames, 0, sizeof(b->frames));
	return OFFCPU_KNOWN;
}

/* The thread's current place is in offcpu_sites: remember it among its known places, in the
 * oldest one's slot; it and the others with its registers are twins. */
__noinline int remember_site(struct offcpu_block *b)
{
	__u32 i, j, twin = 0;

	if (!b)
		return 0;
	i = b->known_next < OFFCPU_KNOWN ? b->known_next : 0;
	for (j = 0; j < OFFCPU_KNOWN; j++) {
		if (j != i && same_registers(&b->known[j].site, &b->site)) {
			b->known[j].twin = 1;
			twin = 1;
		}
	}
	barrier_var(i);
	if (i >= OFFCPU_KNOWN)
		return 0;	/* unreachable; keeps the verifier's bounds */
	b->known[i].site = b->site;
	b->known[i].frames = b->frames;
	b->known[i].shorts = 0;
	b->known[i].had_long = 0;
	b->known[i].twin = twin;
	b->known_at = i;
	b->known_next = (i + 1) % OFFCPU_KNOWN;
	return 0;
}

/*
 * Off-CPU, the design of bcc's offcputime and `perf record --off-cpu`, on one tracepoint: at
 * switch-out the thread is still the current task, so its user stack, kernel stack and span
 * record are read there (its own context), with the time: the span record into its task storage,
 * the stacks into the cache of places (offcpu_sites), once per place. The block ends when the
 * thread switches in again (offcpu_end, with next): a block at or above the threshold is sent
 * then, a shorter one only counted (count and nanoseconds). The time is blocked time, switch-out
 * to wake-up. No sched_wakeup program: every wake-up on the node would pay its entry, and the
 * wake-up time is in the task already. The switch-in side cannot take the user stack (not the
 * thread's context), and fexit/schedule, which would run in the woken thread, is refused by the
 * kernel for tracing programs.
 *
 * A preempted or yielding thread (switched out runnable) is not blocking: nothing is done at its
 * switch-out, and its switch-in counts it (a thread that has blocked before has task storage, and
 * no block open). A thread of an unprofiled process costs a load at switch-in (it has no task
 * storage) and at switch-out nothing (preempted) or the pid filter (blocking). A thread whose
 * process left the filter gives its record back at its next block.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 tgid = prev->tgid, zero = 0;
	const struct sp_ctx_proc *cp;
	struct offcpu_stacks *st;
	struct offcpu_budget *v;
	struct offcpu_block *b;
	struct scan_buf *sb;
	struct sp_sample *rec;
	__u64 ticks, n, fgen, ip, sp, bp, nr, key;
	bool known;
	__u32 m;

	if (variant & SP_VAR_OFFCPU_FLOOR)
		return 0;
	/* A task that has no task storage at all (every thread not profiled) costs a load here. A
	 * profiled thread with no block open last switched out runnable (preempted or yielding):
	 * not blocking, counted here, where its record is looked up anyway. */
	if (!(variant & SP_VAR_OFFCPU_NO_END) && next->bpf_storage) {
		b = bpf_task_storage_get(&offcpu_blocks, next, 0, 0);
		if (b && b->start)
			offcpu_end(next, b);
		else if (b)
			count(SP_CNT_OFFCPU_PREEMPT);
	}

	if (preempt || prev_state == 0 /* TASK_RUNNING */)
		return 0;	/* counted at its switch-in */
	/* A thread that found its process in the filter before, and nothing has left the filter
	 * since, is in it still: its record says so without the filter's lookup. An unprofiled
	 * thread that blocks leaves here. */
	b = prev->bpf_storage ? bpf_task_storage_get(&offcpu_blocks, prev, 0, 0) : NULL;
	fgen = 0;
	if (filter_pids || offcpu_filter) {
		/* Read before the lookup (a removal between the two moves it again), and only by a
		 * thread with a record: one without stores 0, never current, and is looked up again
		 * at its next block. */
		fgen = b ? gen_now(SP_GEN_PID_FILTER) : 0;
		if ((!b || b->filter_gen != fgen) && !in_filter(tgid)) {
			/* Its process is no longer profiled: its record goes (its switches are not
			 * counted, and its memory is another thread's). */
			if (b)
				record_drop(prev, b, false);
			return 0;
		}
	}
	/* An exiting thread is left alone: its record has gone (offcpu_exit) and is not made again. */
	if (prev->pid == 0 || (prev->flags & (PF_KTHREAD | PF_EXITING)))
		return 0;
	if (!b) {
		/* A new record, if fewer than offcpu_max_threads have one, and fewer than half of
		 * them in its cgroup (CPUs making theirs at once may pass either by one each). */
		key = budget_key(prev);
		v = offcpu_threads < offcpu_max_threads ?
			    budget_of(key, tick_of(bpf_ktime_get_ns())) : NULL;
		if (!v || v->threads >= (offcpu_max_threads + 1) / 2 ||
		    !(b = bpf_task_storage_get(&offcpu_blocks, prev, 0,
					       BPF_LOCAL_STORAGE_GET_F_CREATE))) {
			count(SP_CNT_OFFCPU_NO_STORAGE);
			return 0;
		}
		__sync_fetch_and_add(&offcpu_threads, 1);
		__sync_fetch_and_add(&v->threads, 1);
		b->budget_key = key;
		b->rseq_seen = rseq_registered(prev);
	}
	b->filter_gen = fgen;
	b->pcount = prev->sched_info.pcount;
	if (variant & SP_VAR_OFFCPU_TIMES) {
		b->site.tgid = 0;
		b->ctx_len = 0;
		offcpu_start(prev, b);
		return 0;
	}
	/* Where its returns are reported, the block is only timed: a long one's stacks and span
	 * are read at its return (offcpu_end, offcpu_resume). */
	if (b->pending)
		pending_again(prev, b);
	b->resume = offcpu_resume_ok && b->rseq_seen && !(variant & SP_VAR_OFFCPU_PLACES);
	if (b->resume) {
		b->known_at = OFFCPU_KNOWN;
		b->site.tgid = 0;
		b->cpu = bpf_get_smp_processor_id();
		offcpu_start(prev, b);
		return 0;
	}
	if (b->seen_tid != prev->pid) {
		b->seen_tid = prev->pid;
		b->proc_ticks = prev->group_leader->start_boottime / SP_NSEC_PER_TICK;
		b->thread_ticks = prev->start_boottime / SP_NSEC_PER_TICK;
		b->ns_tid_err = ns_tid(prev, &b->ns_tid) != 0;
	}
	ticks = b->proc_ticks;
	ip = sp = bp = nr = 0;
	if (!(variant & SP_VAR_OFFCPU_NO_PLACE))
		user_regs(prev, &ip, &sp, &bp, &nr);
	b->site.tgid = tgid;
	b->site.reserved = 0;
	b->site.start_ticks = ticks;
	b->site.ip = ip;
	b->site.sp = sp;
	b->site.bp = bp;
	b->site.nr = nr;
	b->site.frames = 0;
	b->cpu = bpf_get_smp_processor_id();
	/*
	 * The stacks cost microseconds and most blocks are short, only counted: a place seen before
	 * keeps the stacks taken there the first time, and only the span record is read (prev is the
	 * current task: the record is its own). The thread's own list of places it knows to be in
	 * the cache spares the hash lookup.
	 *
	 * The registers do not tell apart two paths that block at the same depth of the thread's
	 * stack: a known place with these registers is this one if its frames are still there. That
	 * costs a copy of the window (about as much again as the rest of a short block's switch-out
	 * here), so a place that is the only one with its registers and has had OFFCPU_TRUSTED_SHORTS
	 * blocks, all short (no block has needed its stacks), is taken on its registers; after a
	 * long block there, every block there is checked. The one block this can get wrong is the
	 * first long one of a new path at the registers of such a place.
	 */
	known = variant & SP_VAR_OFFCPU_NO_PLACE;
	__builtin_memset(&b->frames, 0, sizeof(b->frames));
	b->known_at = OFFCPU_KNOWN;
	if (!known && sp) {
		m = known_registers(b);
		if (m < OFFCPU_KNOWN) {
			b->frames = b->known[m].frames;
			b->known_at = m;
			known = true;
		} else if ((sb = bpf_map_lookup_elem(&scan_bufs, &zero)) &&
			   read_window(sb, sp, FRAME_WORDS)) {
			count(SP_CNT_OFFCPU_FRAMES_READ);
			if (m != OFFCPU_KNOWN)	/* a known place has these registers */
				m = known_frames(b, sb);
			if (m < OFFCPU_KNOWN) {
				b->known_at = m;
				known = true;
			} else {
				find_frames(sb, &b->frames);
			}
		}
		b->site.frames = b->frames.hash;
	}
	st = NULL;
	b->over_budget = 0;
	if (!known && b->site.sp) {
		st = bpf_map_lookup_elem(&offcpu_sites, &b->site);
		if (st) {
			remember_site(b);
		} else if (!place_budget_take(b->budget_key)) {
			count(SP_CNT_OFFCPU_PLACE_BUDGET);
			b->over_budget = 1;
			b->site.tgid = 0;	/* no stacks: a long block is sent without them */
		}
	}
	if (known || st || b->over_budget) {
		if (!b->over_budget)
			count(SP_CNT_OFFCPU_SITE_HIT);
		b->ctx_len = 0;
		b->ctx_status = SP_CNT_CTX_UNHOOKED;
		cp = variant & SP_VAR_NO_SPAN ? NULL : thread_table(b, tgid);
		if (cp && cp->proc_start_ticks == ticks && cp->slot_count &&
		    (cp->slot_count & (cp->slot_count - 1)) == 0) {
			if (b->ns_tid_err)
				b->ctx_status = SP_CNT_TASK_ERR;
			else
				b->ctx_len = read_span(b->ns_tid, b->thread_ticks, cp, b->ctx,
						       &b->ctx_status);
		}
		offcpu_start(prev, b);
		return 0;
	}

	/* A new place: the whole record in the per-CPU scratch, as the CPU sampler takes it. The
	 * kernel stack starts in this program and the tracepoint code that ran it (bpf_trace_run4,
	 * and __traceiter_sched_switch or not, by kernel and by how many probes the tracepoint has):
	 * user space drops those frames by name (symbolizer__kernel_tracing). */
	rec = bpf_map_lookup_elem(&scratch, &zero);
	st = bpf_map_lookup_elem(&offcpu_stacks_scratch, &zero);
	if (!rec || !st) {
		count(SP_CNT_LOST_SCRATCH);
		return 0;
	}
	fill_record(ctx, rec, prev, tgid, prev->pid, false, bpf_map_lookup_elem(&scan_bufs, &zero),
		    NULL);
	st->flags = rec->flags;
	n = COPY_STACKS(st, st->frames, rec, rec->data);
	b->ctx_status = rec->ctx_status;
	b->ctx_len = rec->ctx_len;
	if (b->ctx_len > SP_CTX_MAX)
		b->ctx_len = 0;
	bpf_probe_read_kernel(b->ctx, b->ctx_len, rec->data + n * 8);
	if (b->site.sp && !bpf_map_update_elem(&offcpu_sites, &b->site, st, BPF_ANY))
		remember_site(b);
	else if (!b->site.sp)
		b->site.tgid = 0;	/* not cached: the switch-in finds no stacks */
	offcpu_start(prev, b);
	return 0;
}

/*
 * The long block waiting for the return of cur, the current task (its return to user space, or
 * its exit, woken to exit): its user stack and span read here, in its own context, its kernel
 * stack as taken when it was woken.
 */
static __always_inline void resume_send(void *ctx, struct task_struct *cur, struct offcpu_block *b)
{
	struct offcpu_kstack *ks;
	struct resume_room *r;
	struct sp_sample *rec;
	__u64 size, off_ns;
	__u32 zero = 0;

	b->pending = 0;
	off_ns = b->pending_ns;
	if (!ring_room_take(&off_ns))
		return;
	r = bpf_map_lookup_elem(&resume_rooms, &zero);
	if (!r || r->busy) {
		count(SP_CNT_LOST_SCRATCH);
		return;
	}
	r->busy = 1;
	rec = (struct sp_sample *)r->rec.buf;
	ks = bpf_task_storage_get(&offcpu_kstacks, cur, 0, 0);
	size = fill_record(ctx, rec, cur, cur->tgid, cur->pid, !ks, &r->scan, ks);
	rec->flags |= SP_F_OFFCPU | (ks ? 0 : SP_F_KSTACK_ERR);
	rec->time_ns = b->pending_woke;
	rec->off_ns = off_ns;
	rec->cpu = b->cpu;
	count(SP_CNT_OFFCPU_RESUMED);
	send_record(&offcpu_events, offcpu_wakeup_bytes, SP_CNT_OFFCPU_LOST_RINGBUF, rec, size);
	r->busy = 0;
}

/*
 * A thread's block record goes at its exit, so that offcpu_threads (and its cgroup's budget's
 * threads) count live threads. Attached with the off-CPU program and kept while it is paused: a
 * record the kernel freed with its task instead would stay in the count for good. An exiting
 * thread gets no new one. Its cost is
 * a load at every thread exit on the node, and a hash lookup at the exit of a thread with a record.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(offcpu_exit, struct task_struct *p)
{
	struct offcpu_block *b;

	b = p->bpf_storage ? bpf_task_storage_get(&offcpu_blocks, p, 0, 0) : NULL;
	if (!b)
		return 0;
	if (b->pending && p == bpf_get_current_task_btf())
		resume_send(ctx, p, b);	/* a thread woken to exit: its user memory is still there */
	record_drop(p, b, true);
	return 0;
}

/*
 * A thread returns to user space after a context switch (the rseq_update tracepoint: the kernel
 * refreshes the rseq area of every registered thread it switched out, before it runs user code
 * again). A profiled thread with a long block waiting sends it from here, in its own context:
 * its user registers are still those it blocked with (a signal is delivered after this), and its
 * span record is the one it blocked in (only the thread writes it). So the stacks and span are
 * read only for long blocks, and each is the block's own, not its place's. Costs every thread of
 * the node with rseq a load after each switch-out (no task storage: unprofiled), a profiled one
 * its record's lookup.
 */
SEC("tp_btf/rseq_update")
int BPF_PROG(offcpu_resume, struct task_struct *t)
{
	struct task_struct *cur = t;	/* the current task: the tracepoint's is */
	struct offcpu_block *b;

	if (!cur->bpf_storage) {
		if (offcpu_probe_tid && cur->pid == offcpu_probe_tid) {
			if ((variant & SP_VAR_RSEQ_ON_CHANGE) &&
			    probe_cpu == bpf_get_smp_processor_id())
				return 0;
			probe_cpu = bpf_get_smp_processor_id();
			offcpu_probe_seen++;	/* the one thread: no race */
		}
		return 0;
	}
	b = bpf_task_storage_get(&offcpu_blocks, cur, 0, 0);
	if (!b)
		return 0;
	if ((variant & SP_VAR_RSEQ_ON_CHANGE) && b->cpu == bpf_get_smp_processor_id())
		return 0;
	if (!b->rseq_seen)
		b->rseq_seen = 1;
	if (b->pending)
		resume_send(ctx, cur, b);
	return 0;
}
