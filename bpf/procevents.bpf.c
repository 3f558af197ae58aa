// SPDX-License-Identifier: GPL-2.0
/* procevents.bpf.c: process events that user space must see at once: a span table mapped, an exec. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "profiler.h"

#define MAX_ERRNO   4095
#define WAKE_BYTES  (64 << 10)	/* execs wake the consumer only past this much data */
#define NSEC_PER_SEC 1000000000ull

char LICENSE[] SEC("license") = "GPL";

/* The sampler's map (profiler.bpf.c), shared through bpf_map__reuse_fd: an exec ends the old
 * program's span table at once, so no sample of the new one reads memory by the old layout. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct sp_ctx_proc);
} ctx_procs SEC(".maps");

/* Span-table events per process in the current one-second window: a process that maps the
 * table's name in a loop costs a bounded number of events. */
struct budget {
	__u64 window_ns;
	__u32 n;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct budget);
} ctx_budget SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_EV_CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 << 10);	/* resized by user space */
} events SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += 1;
}

static __always_inline __u64 start_ticks(struct task_struct *task)
{
	return BPF_CORE_READ(task, group_leader, start_boottime) / SP_NSEC_PER_TICK;
}

/* One more span-table event for tgid within its budget? */
static __always_inline bool within_budget(__u32 tgid, __u64 now)
{
	struct budget *b = bpf_map_lookup_elem(&ctx_budget, &tgid), fresh = { .window_ns = now, .n = 1 };

	if (!b) {
		if (bpf_map_update_elem(&ctx_budget, &tgid, &fresh, BPF_ANY)) {
			count(SP_EV_CNT_BUDGET_FULL);
			return false;
		}
		return true;
	}
	if (now - b->window_ns >= NSEC_PER_SEC) {
		b->window_ns = now;
		b->n = 0;
	}
	if (b->n >= SP_EV_CTX_PER_SEC) {
		count(SP_EV_CNT_THROTTLED);
		return false;
	}
	b->n++;
	return true;
}

static __always_inline void send(struct sp_proc_event *ev, __u64 flags)
{
	if (bpf_ringbuf_output(&events, ev, sizeof(*ev), flags)) {
		count(SP_EV_CNT_LOST_RINGBUF);
		return;
	}
	count(ev->type == SP_EV_CTX_MAPPED ? SP_EV_CNT_CTX_MAPPED : SP_EV_CNT_EXEC);
}

/*
 * The hook's table: memfd_create(SP_CTX_MEMFD_NAME) remembers the fd, and the process's next
 * mmap(2) of that fd is the event (only then is the table in /proc/<pid>/maps). This kernel class
 * may lack fentry (no ftrace), so the one hook is the raw sys_exit tracepoint: any other syscall
 * costs one load and two compares. Measured on this VM (getppid, thread CPU time): ~120 ns
 * without, ~140 ns with, the same as a program that does nothing (the syscall slow path).
 */
#if defined(__TARGET_ARCH_x86)
#define NR_MMAP		9
#define NR_MEMFD_CREATE 319
#define SYSCALL_NR(regs) ((regs)->orig_ax)	/* a BTF pointer: a plain load, no helper call */
#elif defined(__TARGET_ARCH_arm64)
#define NR_MMAP		222
#define NR_MEMFD_CREATE 279
#define SYSCALL_NR(regs) ((regs)->syscallno)
#else
#error "procevents.bpf.c: syscall numbers for this architecture"
#endif

/* memfd_create(SP_CTX_MEMFD_NAME) seen, mmap not yet: tgid -> fd. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __s32);
} ctx_memfds SEC(".maps");

static __always_inline void memfd_created(struct pt_regs *regs, long ret, __u32 tgid)
{
	const char want[] = SP_CTX_MEMFD_NAME;
	char name[sizeof(want)];
	__s32 fd = ret;

	/* The name was just copied in by the kernel: resident, readable without a fault. */
	if (ret < 0 || bpf_probe_read_user(name, sizeof(name), (void *)PT_REGS_PARM1_CORE_SYSCALL(regs)))
		return;
	for (int i = 0; i < (int)sizeof(want); i++)
		if (name[i] != want[i])
			return;
	bpf_map_update_elem(&ctx_memfds, &tgid, &fd, BPF_ANY);
}

static __always_inline void mapped(struct pt_regs *regs, long ret, __u32 tgid)
{
	__s32 *fd = bpf_map_lookup_elem(&ctx_memfds, &tgid);
	struct sp_proc_event ev = {};

	if (!fd || (unsigned long)ret >= (unsigned long)-MAX_ERRNO ||
	    (__s32)PT_REGS_PARM5_CORE_SYSCALL(regs) != *fd)
		return;
	bpf_map_delete_elem(&ctx_memfds, &tgid);
	ev.time_ns = bpf_ktime_get_ns();
	ev.tgid = tgid;
	if (!within_budget(tgid, ev.time_ns))
		return;
	ev.type = SP_EV_CTX_MAPPED;
	ev.proc_start_ticks = start_ticks(bpf_get_current_task_btf());
	ev.addr = ret;
	ev.len = PT_REGS_PARM2_CORE_SYSCALL(regs);
	bpf_get_current_comm(ev.comm, sizeof(ev.comm));
	/* The hook registers its table before its first span: wake the consumer now. */
	send(&ev, BPF_RB_FORCE_WAKEUP);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	long nr = SYSCALL_NR(regs);

	if (nr == NR_MMAP)
		mapped(regs, ret, bpf_get_current_pid_tgid() >> 32);
	else if (nr == NR_MEMFD_CREATE)
		memfd_created(regs, ret, bpf_get_current_pid_tgid() >> 32);
	return 0;
}

/* Same pid, same start time, another program: its frames, mappings and span table are stale. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	struct sp_proc_event ev = {};
	__u64 wake;

	ev.tgid = BPF_CORE_READ(task, tgid);
	bpf_map_delete_elem(&ctx_procs, &ev.tgid);
	ev.time_ns = bpf_ktime_get_ns();
	ev.type = SP_EV_EXEC;
	ev.proc_start_ticks = start_ticks(task);
	bpf_core_read_str(ev.comm, sizeof(ev.comm), &task->comm);
	/* Samples of the new program are handled after this (user space drains events first). */
	wake = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > WAKE_BYTES ? BPF_RB_FORCE_WAKEUP
									 : BPF_RB_NO_WAKEUP;
	send(&ev, wake);
	return 0;
}
