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

/* The sampler's generations, shared the same way: every change made here to ctx_procs adds one
 * to SP_GEN_CTX_PROCS, after it. */
#include "gens.bpf.h"

static __always_inline void ctx_procs_changed(void)
{
	__u32 which = SP_GEN_CTX_PROCS;
	__u64 *g = bpf_map_lookup_elem(&gens, &which);

	if (g)
		__sync_fetch_and_add(g, 1);
}

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

#define MAX_PID_NS_LEVEL 32

/* The current process's pid in its own pid namespace (the header's pid), or 0. */
static __always_inline __u32 ns_tgid(struct task_struct *task)
{
	struct pid *pid = BPF_CORE_READ(task, group_leader, thread_pid);
	unsigned int level;
	__u32 nr = 0;

	if (!pid)
		return 0;
	level = BPF_CORE_READ(pid, level);
	if (level > MAX_PID_NS_LEVEL)
		return 0;
	if (bpf_core_read(&nr, sizeof(nr), &pid->numbers[level].nr))
		return 0;
	return nr;
}

/*
 * The announced table goes into the sampler's map at once, so that the process's next sample
 * reads it: user space registers it only when its loop gets to the event, which under load came
 * 0.9 s after the announcement (Native AOT SpanService, 2 CPUs busy besides), and every sample in
 * between had no labels. The checks are those of spanctx__check_header that decide where and how
 * much the sampler reads, and the header's pid; the table is the announcing process's own memory,
 * so a process that lies labels only its own samples wrongly, as it could through its records.
 * An entry of this process (same start time) stays as user space made it; one of a dead process
 * whose pid this one reuses is replaced. User space checks the table again (the mapping's
 * name, the key table) and removes the entry when it does not accept it, when the process is not
 * a target, and at the process's exit.
 */
static __always_inline void register_at_once(__u32 tgid, __u64 addr, __u64 len, __u64 start)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct sp_ctx_header h;
	struct sp_ctx_proc cp = {}, *old;
	const char magic[] = SP_CTX_MAGIC;
	__u64 slots_end;

	if (len < sizeof(h) || bpf_probe_read_user(&h, sizeof(h), (void *)addr))
		return;
	for (int i = 0; i < 8; i++)
		if (h.magic[i] != magic[i])
			return;
	if (h.abi_version != SP_CTX_ABI || h.header_size < sizeof(h) || h.header_size > len)
		return;
	if (h.slot_count == 0 || (h.slot_count & (h.slot_count - 1)) || h.slot_count > SP_CTX_MAX_SLOTS)
		return;
	if (h.slot_size % 8 || h.slot_size < SP_SLOT_HEAD + SP_CTX_HEAD ||
	    h.slot_size > SP_CTX_SLOT_SIZE_MAX)
		return;
	if (h.slots_offset % 4096 || h.slots_offset < h.header_size)
		return;
	slots_end = (__u64)h.slots_offset + (__u64)h.slot_count * h.slot_size;
	if (slots_end > len || h.pid != ns_tgid(task))
		return;
	cp.slots_addr = addr + h.slots_offset;
	cp.proc_start_ticks = start;
	cp.slot_count = h.slot_count;
	cp.slot_size = h.slot_size;
	old = bpf_map_lookup_elem(&ctx_procs, &tgid);
	if (old && old->proc_start_ticks == start)
		return;	/* this process's, as user space registered it */
	if (!bpf_map_update_elem(&ctx_procs, &tgid, &cp, BPF_ANY)) {
		ctx_procs_changed();
		count(SP_EV_CNT_CTX_EARLY);
	}
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
	if (option == SP_PRCTL_ANNOUNCE && arg4 == SP_CTX_ABI) {
		register_at_once(bpf_get_current_pid_tgid() >> 32, arg2, arg3,
				 start_ticks(bpf_get_current_task_btf()));
		table_mapped(arg2, arg3);
	}
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
	if (!bpf_map_delete_elem(&ctx_procs, &ev.tgid))
		ctx_procs_changed();
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
