// SPDX-License-Identifier: GPL-2.0
/* procevents.bpf.c: process events that user space must see at once: a span table mapped, an exec. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "profiler.h"

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

/* One span-table event: the table at [addr, addr + len) in the current process. */
static __always_inline void table_mapped(__u64 addr, __u64 len)
{
	struct sp_proc_event ev = {};

	ev.tgid = bpf_get_current_pid_tgid() >> 32;
	ev.time_ns = bpf_ktime_get_ns();
	if (!within_budget(ev.tgid, ev.time_ns))
		return;
	ev.type = SP_EV_CTX_MAPPED;
	ev.proc_start_ticks = start_ticks(bpf_get_current_task_btf());
	ev.addr = addr;
	ev.len = len;
	bpf_get_current_comm(ev.comm, sizeof(ev.comm));
	/* The hook registers its table before its first span: wake the consumer now. */
	send(&ev, BPF_RB_FORCE_WAKEUP);
}

/*
 * The hook's announcement (SP_PRCTL_ANNOUNCE, bpf/profiler.h): task_prctl_unknown fires only for a
 * prctl option the kernel does not know, never on another syscall. The first of the two sources
 * (Linux 6.13+; user space tries it first). A process may announce anything: user space checks
 * the mapping and the header before it registers a table, and the budget bounds the events.
 */
SEC("tp_btf/task_prctl_unknown")
int BPF_PROG(on_prctl_unknown, int option, unsigned long arg2, unsigned long arg3,
	     unsigned long arg4, unsigned long arg5)
{
	if (option == SP_PRCTL_ANNOUNCE && arg4 == SP_CTX_ABI)
		table_mapped(arg2, arg3);
	return 0;
}

/*
 * The second source, for kernels before 6.13 (or a hook that does not announce): the process maps
 * the memfd it created as SP_CTX_MEMFD_NAME. fexit on
 * shmem_mmap, the .mmap of every shmem file (memfds included), fires only when such a file is
 * mapped: no other syscall of any task pays anything. No syscall tracepoint: one on sys_enter or
 * sys_exit sends every task of the node through the syscall slow path (+85-95 ns per getppid
 * here, docs/benchmarks.md). Checked against Linux 6.18 (mm/shmem.c, mm/vma.c): shmem has .mmap,
 * not .mmap_prepare, and __mmap_new_vma calls it with vm_start/vm_end set; the VMA enters the
 * tree a moment later, and user space retries its maps read until the table is there. The name
 * is on the file's dentry: MFD_NAME_PREFIX (mm/memfd.c) then the name given to memfd_create.
 * The function name is the same on every architecture.
 */
#define MFD_NAME_PREFIX "memfd:"

SEC("fexit/shmem_mmap")
int BPF_PROG(on_shmem_mmap, struct file *file, struct vm_area_struct *vma, int ret)
{
	const char want[] = MFD_NAME_PREFIX SP_CTX_MEMFD_NAME;
	char name[sizeof(want) - 1];
	const unsigned char *dname;
	struct dentry *d;

	if (ret)
		return 0;
	d = BPF_CORE_READ(file, f_path.dentry);
	if (BPF_CORE_READ(d, d_name.len) != sizeof(name))
		return 0;
	dname = BPF_CORE_READ(d, d_name.name);
	if (bpf_probe_read_kernel(name, sizeof(name), dname))
		return 0;
	for (int i = 0; i < (int)sizeof(name); i++)
		if (name[i] != want[i])
			return 0;
	table_mapped(BPF_CORE_READ(vma, vm_start),
		     BPF_CORE_READ(vma, vm_end) - BPF_CORE_READ(vma, vm_start));
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
