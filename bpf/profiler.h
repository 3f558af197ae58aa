/* profiler.h: the one ABI shared by bpf/profiler.bpf.c, user space and the hook's thread table. */
#ifndef SPANPROF_PROFILER_H
#define SPANPROF_PROFILER_H

/*
 * Fixed-width types only. The BPF side gets them from vmlinux.h, user space from linux/types.h;
 * nothing here may clash with vmlinux.h.
 */
#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define SP_MAX_FRAMES	 127	/* per stack, user and kernel each (kernel.perf_event_max_stack) */
#define SP_COMM_LEN	 16
#define SP_CTX_MAX	 640	/* OTEP 4947 record: 28-byte head + attributes, recommended max */
#define SP_CTX_HEAD	 28
/* OTEP 4947 record head: trace_id[16] span_id[8] valid:u8 trace_flags:u8 attrs_data_size:u16. */
#define SP_CTX_OFF_TRACE_ID  0
#define SP_CTX_OFF_SPAN_ID   16
#define SP_CTX_OFF_VALID     24
#define SP_CTX_OFF_FLAGS     25
#define SP_CTX_OFF_ATTRS_LEN 26	/* little-endian u16 (native order on every supported arch) */
#define SP_CTX_PROBES	 8	/* linear-probe steps in the hook's thread table */
#define SP_USER_HZ	 100	/* /proc/<pid>/stat start times are in these ticks */
#define SP_NSEC_PER_TICK (1000000000ull / SP_USER_HZ)
#define SP_LEAF_WORDS	 8	/* u64 words of the user stack copied from the leaf's sp */
#define SP_OFFCPU_MAX_THREADS 32768	/* --off-cpu-max-threads: threads with a block record */
#define SP_OFFCPU_MAX_RATE 500	/* --off-cpu-max-rate: long blocks a cgroup sends a second (each
				 * costs its thread 10-20 us of stacks: about 1 % of a CPU) */

/*
 * Variants of the sampler without one of its parts, for measuring what each costs
 * (scripts/bench-sampler.sh; SPANPROF_BPF_VARIANT names them, read by build/spanprof-test only).
 * A profile taken with one lacks what it skips.
 */
#define SP_VAR_NO_USTACK	(1u << 0)	/* no user stack walk */
#define SP_VAR_NO_KSTACK	(1u << 1)	/* no kernel stack walk */
#define SP_VAR_NO_LEAF		(1u << 2)	/* no leaf registers and stack words */
#define SP_VAR_NO_SPAN		(1u << 3)	/* no span table probes and record copy */
#define SP_VAR_NO_OUTPUT	(1u << 4)	/* no ring buffer write */
#define SP_VAR_OFFCPU_FLOOR	(1u << 5)	/* the off-CPU program returns at once: what an
						 * attached sched_switch program costs */
#define SP_VAR_OFFCPU_TIMES	(1u << 6)	/* the off-CPU program times blocks and nothing
						 * else (no place, stacks or span): the least
						 * any off-CPU timer does */
#define SP_VAR_OFFCPU_NO_PLACE	(1u << 7)	/* no place check: every block as at a known one */
#define SP_VAR_OFFCPU_NO_END	(1u << 8)	/* no switch-in: blocks start, never end */
#define SP_VAR_OFFCPU_PLACES	(1u << 9)	/* every block's stacks and span at its switch-out
						 * (the places' cache), none at its return to user
						 * space: what a kernel without rseq_update does */
#define SP_VAR_RSEQ_ON_CHANGE	(1u << 10)	/* rseq_update taken only where the thread's
						 * CPU changed since it blocked (or, for the
						 * probe, since its last one): what Linux 6.19+
						 * reports */

/*
 * One counter per outcome the sampler can meet. Every failure site increments exactly one.
 * X(enum suffix, short name shown by -v and /metrics, what it counts): the one table both the
 * enum and every report are generated from.
 */
#define SP_COUNTERS(X)                                                                         \
	X(SAMPLES, "samples", "perf events that passed the filter and were handled")          \
	X(SENT, "sent", "records written to the ring buffer")                                   \
	X(LOST_RINGBUF, "lost_ringbuf", "ring buffer full: sample lost")                        \
	X(LOST_SCRATCH, "lost_scratch", "per-CPU scratch lookup failed: sample lost")           \
	X(USTACK_ERR, "ustack_err", "user stack read failed: sample kept, marked")              \
	X(KSTACK_ERR, "kstack_err", "kernel stack read failed: sample kept, marked")            \
	X(TASK_ERR, "task_err", "task fields (start time, comm, ns tid) unreadable: kept")      \
	X(CTX_UNHOOKED, "ctx_unhooked", "process has no span table (not .NET or not hooked)")   \
	X(CTX_NO_SLOT, "ctx_no_slot", "hooked process, but this thread has no slot")            \
	X(CTX_READ_ERR, "ctx_read_err", "the thread's record unreadable")                       \
	X(CTX_INVALID, "ctx_invalid", "record caught mid-write (valid flag clear): no labels")  \
	X(CTX_NONE, "ctx_none", "valid record, no span active (zero trace id)")                 \
	X(CTX_OK, "ctx_ok", "valid record with a span: labels attached")                        \
	X(FILTER_FULL, "filter_full", "a child of a profiled command found the pid filter full")  \
	X(LEAF_REGS_ERR, "leaf_regs_err", "user registers unavailable: leaf caller not recoverable")\
	X(LEAF_WORDS_ERR, "leaf_words_err", "top of the user stack unreadable: leaf caller not recoverable")\
	X(OFFCPU_LONG, "offcpu_long", "off-CPU blocks at or above the threshold: sent with stacks, " \
	  "unless counted below")                                                                     \
	X(OFFCPU_LONG_NS, "offcpu_long_ns", "their blocked time, ns (sent or lost)")                  \
	X(OFFCPU_THINNED, "offcpu_thinned", "long blocks of a cgroup past 3/4 of its "              \
	  "--off-cpu-max-rate, not sent: others sent carrying a quantum of time stand for them")       \
	X(OFFCPU_RATE, "offcpu_rate", "long blocks past the bound on what a cgroup sends in a "       \
	  "sixteenth of a second: counted, not sent, not stood for")                                   \
	X(OFFCPU_RATE_NS, "offcpu_rate_ns", "the blocked time they stood for, ns (not in the "      \
	  "profile)")                                                                                 \
	X(OFFCPU_LOST_RINGBUF, "offcpu_lost_ringbuf", "off-CPU ring buffer full: long block lost")   \
	X(OFFCPU_RING_THINNED, "offcpu_ring_thinned", "long blocks left out while the off-CPU ring " \
	  "buffer was over half full: others sent with their time scaled up stand for them")          \
	X(OFFCPU_SHORT, "offcpu_short", "off-CPU blocks below the threshold: counted, not sent")     \
	X(OFFCPU_SHORT_NS, "offcpu_short_ns", "their blocked time, ns")                              \
	X(OFFCPU_PREEMPT, "offcpu_preempt", "profiled threads that have blocked before, switched "  \
	  "out runnable (preempted, yielded): not blocking, counted only")                          \
	X(OFFCPU_NO_STORAGE, "offcpu_no_storage", "no per-thread block record (--off-cpu-max-threads " \
	  "threads have one, or half of them in its cgroup, or no memory): block lost")              \
	X(OFFCPU_SITE_HIT, "offcpu_site_hit", "blocks at a place blocked at before: its stacks "     \
	  "cached, only the span read")                                                              \
	X(OFFCPU_FRAMES_READ, "offcpu_frames_read", "blocks whose frames above the syscall were "     \
	  "read (a copy of the stack): at a new place, or one its registers alone do not tell")      \
	X(OFFCPU_SITE_LOST, "offcpu_site_lost", "long blocks whose place left the stack cache while " \
	  "blocked: sent without stacks, marked")                                                     \
	X(OFFCPU_PLACE_BUDGET, "offcpu_place_budget", "blocks at a new place of a cgroup past its "   \
	  "places a second: stacks not taken, place not cached")                                      \
	X(OFFCPU_BUDGET_NO_STACKS, "offcpu_budget_no_stacks", "long blocks among those: sent "       \
	  "without stacks, marked")                                                                   \
	X(OFFCPU_RESUMED, "offcpu_resumed", "long blocks whose stacks and span were taken as their "  \
	  "thread returned to user space (rseq_update), not at their switch-out")                     \
	X(OFFCPU_RESUME_MISSED, "offcpu_resume_missed", "long blocks whose thread blocked again or "  \
	  "was seen in user space without its return being reported (an exit, an exec, the program " \
	  "paused): not sent")                                                                         \
	X(OFFCPU_RESUME_MISSED_NS, "offcpu_resume_missed_ns", "the blocked time they stood for, ns "   \
	  "(not in the profile)")

enum sp_counter {
#define SP_COUNTER_ENUM(id, name, help) SP_CNT_##id,
	SP_COUNTERS(SP_COUNTER_ENUM)
#undef SP_COUNTER_ENUM
	SP_CNT__MAX,
};

/* Sample flags. */
#define SP_F_USTACK_ERR	 (1u << 0)
#define SP_F_KSTACK_ERR	 (1u << 1)
#define SP_F_TASK_ERR	 (1u << 2)
#define SP_F_USTACK_TRUNC (1u << 3)	/* user stack hit SP_MAX_FRAMES */
#define SP_F_LEAF_REGS	 (1u << 4)	/* leaf_ip/sp/bp hold the user registers */
#define SP_F_LEAF_WORDS	 (1u << 5)	/* leaf_words hold the user stack from leaf_sp */
#define SP_F_OFFCPU	 (1u << 6)	/* an off-CPU block, not a CPU sample: off_ns holds its length,
					 * time_ns the wake-up, the stacks where it blocked */
#define SP_F_USTACK_SCAN (1u << 7)	/* user frames from user_scan_at on come from a frame
					 * pointer found on the stack (off-CPU records: libc wrappers
					 * without frames); its first ones may be data */

/*
 * Ring buffer record. The header is followed by data[]: n_user u64 user frames (leaf first),
 * n_kernel u64 kernel frames (leaf first), then ctx_len bytes of the thread's OTEP 4947 record
 * (head plus attributes) when the process is hooked and the record was valid with a span, or
 * without one but with user labels.
 * Only the filled part is sent.
 */
struct sp_sample {
	__u64 time_ns;		/* bpf_ktime_get_ns(): CLOCK_MONOTONIC, the clock of jitdump */
	__u64 proc_start_ticks;	/* group leader's start time in SP_USER_HZ ticks, as field 22 of
				 * /proc/<pid>/stat: tells a reused pid apart */
	__u32 tgid;
	__u32 tid;
	__u32 cpu;
	__u32 flags;		/* SP_F_* */
	__u16 n_user;
	__u16 n_kernel;
	__u16 ctx_len;
	__u16 ctx_status;	/* enum sp_counter value of the span read (SP_CNT_CTX_*) */
	char comm[SP_COMM_LEN];	/* thread name */
	char pcomm[SP_COMM_LEN];	/* process (group leader) name */
	/* The user registers at the sample (the syscall's entry state when it hit the kernel) and
	 * the words at their sp: where a leaf that has no frame (yet, or any more) keeps its return
	 * address, which the frame-pointer walk skips. */
	__u64 leaf_ip, leaf_sp, leaf_bp;
	__u64 leaf_words[SP_LEAF_WORDS];
	__u64 off_ns;		/* SP_F_OFFCPU: blocked time (switch-out to wake-up), else 0 */
	__u16 user_scan_at;	/* SP_F_USTACK_SCAN: user frames from this index on were walked
				 * from a frame pointer found on the stack */
	__u16 reserved[3];
	__u8 data[];
};

#define SP_SAMPLE_MAX (sizeof(struct sp_sample) + 2 * SP_MAX_FRAMES * 8 + SP_CTX_MAX)

/*
 * Span table of a hooked process, registered by user space in the BPF map ctx_procs (key: host
 * tgid). user space validates the table header before it registers it.
 */
struct sp_ctx_proc {
	__u64 slots_addr;	/* user address of slot 0 */
	__u64 proc_start_ticks;	/* must equal the sample's, else the pid was reused: ignored */
	__u32 slot_count;	/* power of two */
	__u32 slot_size;	/* bytes per slot, >= SP_SLOT_HEAD + SP_CTX_HEAD */
};

/*
 * Hook ABI version 1 (hook/README.md is the full description). The hook creates a memfd named
 * SP_CTX_MEMFD_NAME and maps it once; /proc/<pid>/maps shows "/memfd:spanprof-ctx (deleted)".
 * The mapping starts with struct sp_ctx_header; slots_offset leads to slot_count slots of
 * slot_size bytes; each slot is struct sp_slot_head followed by the OTEP 4947 record.
 */
#define SP_CTX_MEMFD_NAME "spanprof-ctx"
/*
 * Once the table is mapped (and its header written), the hook announces it:
 * prctl(SP_PRCTL_ANNOUNCE, table address, table length, SP_CTX_ABI, 0). No kernel knows the
 * option, so the call fails with EINVAL, and the kernel's task_prctl_unknown tracepoint (Linux
 * 6.13+), which fires on nothing else, tells the sampler at once. "SPCT"; kernel prctl options
 * are small numbers or other four-letter tags (PR_SET_VMA is "SVMA").
 */
#define SP_PRCTL_ANNOUNCE 0x53504354
#define SP_CTX_MAGIC	  "SPANPROF"	/* 8 bytes, no NUL */
#define SP_CTX_ABI	  1
/*
 * Generations (the gens map, shared by both BPF objects and mapped by user space): each counts
 * the changes to a map that the off-CPU program caches per thread, so a thread looks the map up
 * again only after one. Every change to ctx_procs, and every removal from pid_filter (a thread
 * caches only that its process is in it), adds one, after the change.
 */
#define SP_GEN_CTX_PROCS  0
#define SP_GEN_PID_FILTER 1
#define SP_GEN__MAX	  2

#define SP_CTX_MAX_SLOTS  65536
#define SP_CTX_MAX_KEYS	  255
#define SP_CTX_SLOT_SIZE_MAX 4096	/* largest slot_size a reader accepts */

struct sp_ctx_header {
	char magic[8];		/* SP_CTX_MAGIC */
	__u32 abi_version;	/* SP_CTX_ABI */
	__u32 header_size;	/* sizeof(struct sp_ctx_header) at that version, or more */
	__u32 slot_count;	/* power of two, <= SP_CTX_MAX_SLOTS */
	__u32 slot_size;	/* multiple of 8, >= SP_SLOT_HEAD + SP_CTX_HEAD */
	__u32 slots_offset;	/* from the mapping start; page aligned */
	__u32 keys_offset;	/* attribute key table: keys_count entries of {u8 len, bytes} */
	__u32 keys_size;	/* capacity in bytes of the key table */
	__u32 keys_count;	/* entries published so far; append-only, written last */
	__u32 pid;		/* getpid() inside the process's own pid namespace */
	__u32 flags;
	__u64 published_at_ns;	/* CLOCK_REALTIME when the table was created */
	__u64 slots_full;	/* threads that found no free slot within SP_CTX_PROBES */
	__u64 reserved[2];
};

struct sp_slot_head {
	__u32 tid;		/* thread id in the process's pid namespace (gettid()); 0 = free */
	__u32 reserved;		/* the hook's claim generation and busy bit; readers ignore it */
	__u64 start_ticks;	/* thread start, /proc/thread-self/stat field 22, less timens offset;
				 * matched within one tick */
};
#define SP_SLOT_HEAD 16

/* Slot index for a thread: probe (sp_slot_hash(tid) + i) & (slot_count - 1), i < SP_CTX_PROBES. */
#define SP_SLOT_HASH(tid) ((__u32)(tid) * 2654435761u)

/* Attribute keys with a fixed index; user labels follow from SP_KEY_USER. */
#define SP_KEY_LOCAL_ROOT_SPAN_ID 0	/* value: 16 lowercase hex digits */
#define SP_KEY_SPAN_NAME	  1	/* value: the local root span's name (utf-8, <= 255 bytes) */
#define SP_KEY_USER		  2

/*
 * Process events (bpf/procevents.bpf.c, its own object and ring buffer): what makes user space
 * look at a process at once instead of at its next poll.
 */
enum sp_event_type {
	SP_EV_CTX_MAPPED = 1,	/* the process mmap'd the memfd it created as SP_CTX_MEMFD_NAME */
	SP_EV_EXEC = 2,		/* the process exec'd: same pid and start time, another program */
};

#define SP_EV_CTX_PER_SEC   8	/* span-table events per process and second; past it: throttled */

struct sp_proc_event {
	__u64 time_ns;		/* bpf_ktime_get_ns(), the clock of struct sp_sample */
	__u64 proc_start_ticks;	/* as in struct sp_sample */
	__u64 addr;		/* SP_EV_CTX_MAPPED: the mapping's start and length */
	__u64 len;
	__u32 type;		/* enum sp_event_type */
	__u32 tgid;
	char comm[SP_COMM_LEN];	/* SP_EV_EXEC: the new program's name */
};

/* X(enum suffix, short name, what it counts), like SP_COUNTERS. */
#define SP_EV_COUNTERS(X)                                                                      \
	X(CTX_MAPPED, "ev_ctx_mapped", "span-table mappings seen and sent")                     \
	X(EXEC, "ev_exec", "execs seen and sent")                                               \
	X(THROTTLED, "ev_throttled", "span-table mappings past SP_EV_CTX_PER_SEC: not sent")    \
	X(LOST_RINGBUF, "ev_lost_ringbuf", "event ring buffer full: event lost")                \
	X(BUDGET_FULL, "ev_budget_full", "per-process throttle table update failed: not sent")   \
	X(CTX_EARLY, "ev_ctx_early", "announced span tables the sampler reads at once (checked here)")

enum sp_ev_counter {
#define SP_EV_COUNTER_ENUM(id, name, help) SP_EV_CNT_##id,
	SP_EV_COUNTERS(SP_EV_COUNTER_ENUM)
#undef SP_EV_COUNTER_ENUM
	SP_EV_CNT__MAX,
};

#ifndef __bpf__
_Static_assert(sizeof(struct sp_proc_event) == 56, "sp_proc_event layout is ABI");
_Static_assert(sizeof(struct sp_sample) == 72 + 24 + 8 * SP_LEAF_WORDS + 16, "sp_sample layout is ABI");
_Static_assert(sizeof(struct sp_ctx_proc) == 24, "sp_ctx_proc layout is ABI");
_Static_assert(sizeof(struct sp_ctx_header) == 80, "sp_ctx_header layout is ABI");
_Static_assert(sizeof(struct sp_slot_head) == SP_SLOT_HEAD, "sp_slot_head layout is ABI");
#endif

#endif /* SPANPROF_PROFILER_H */
