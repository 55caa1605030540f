/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * warmcore record: SchedLog's event collection (Fork/wait, section 3.1) on
 * the scheduler's BTF tracepoints. Every event is one 24-byte entry
 * (timestamp, pid, id, 8-byte argument) stored in a buffer private to the CPU
 * it happens on: CPU c owns slots [c * slots, (c + 1) * slots) of `ring`, an
 * array user space maps, used as a ring (struct wc_cpu_buf in intf.h).
 *
 * - streaming: an entry that finds its CPU's ring full is counted in the
 *   CPU's `dropped`, never lost silently; user space drains on a fixed
 *   period, so no event costs a wake-up;
 * - flight recorder: the oldest entries are overwritten; `head` counts every
 *   entry ever written, so user space knows how many were.
 *
 * There is no shared ring: every producer writes only its own CPU's buffer,
 * with one atomic add and no lock.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "intf.h"

char _license[] SEC("license") = "GPL";

/* Set by user space before load. */
const volatile unsigned long long events_mask = ~0ULL;
const volatile unsigned int flight = 0;
/* Entries per CPU: a power of two. */
const volatile unsigned long long slots = 1;
const volatile unsigned int filter = WC_FILTER_NONE;
const volatile unsigned long long filter_cgid = 0;
const volatile unsigned int filter_cglevel = 0;
const volatile unsigned int filter_cpus = 0;
const volatile unsigned char cpu_allowed[WC_MAX_CPUS];
const volatile unsigned int freq_src = WC_FREQ_NONE;
/* The reference cycles' rate (the TSC's), to turn cycles/ref into kHz. */
const volatile unsigned long long ref_khz = 0;

/* Shared with user space through the mapped .bss. */
volatile unsigned int paused;
/* On lines of their own: each CPU writes its own buffer's first line. */
struct wc_cpu_buf bufs[WC_MAX_CPUS] __attribute__((aligned(64)));

/* The entries; user space sizes it to slots per possible CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, u32);
	__type(value, struct wc_event);
	__uint(max_entries, 1);
} ring SEC(".maps");

/* tgids followed by the --pid filter. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, u32);
	__type(value, u8);
	__uint(max_entries, WC_MAX_TRACKED);
} tracked SEC(".maps");

/* Hardware counters opened by user space on each CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} cycles SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} refcycles SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, u32);
	__type(value, struct wc_freq_state);
	__uint(max_entries, 1);
} freq_state SEC(".maps");

/* Frequency per CPU in kHz, refreshed by user space from cpufreq. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, u32);
	__uint(max_entries, WC_MAX_CPUS);
} cpu_khz SEC(".maps");

#define TASK_RUNNING_STATE 0x0000
#define EXIT_ZOMBIE_STATE 0x0020
#define EXIT_DEAD_STATE 0x0010
#define TASK_DEAD_STATE 0x0080
/* x86's TIF_NEED_RESCHED bit in thread_info.flags. */
#define TIF_NEED_RESCHED_BIT 3

static __always_inline bool wanted(u32 id)
{
	return events_mask & (1ULL << id);
}

static __always_inline bool cpu_ok(u32 cpu)
{
	if (!filter_cpus)
		return true;
	if (cpu >= WC_MAX_CPUS)
		return false;
	return cpu_allowed[cpu];
}

static __always_inline bool task_ok(struct task_struct *p)
{
	if (filter == WC_FILTER_NONE)
		return true;
	if (!p)
		return false;
	if (filter == WC_FILTER_PID) {
		u32 tgid = BPF_CORE_READ(p, tgid);
		return tgid && bpf_map_lookup_elem(&tracked, &tgid);
	}
	/* The cgroup or a descendant: its ancestor at the filter's level. */
	struct cgroup *cg = BPF_CORE_READ(p, cgroups, dfl_cgrp);
	if (!cg || BPF_CORE_READ(cg, level) < (int)filter_cglevel)
		return false;
	struct cgroup *anc = NULL;
	bpf_probe_read_kernel(&anc, sizeof(anc), &cg->ancestors[filter_cglevel]);
	return anc && BPF_CORE_READ(anc, kn, id) == filter_cgid;
}

static __always_inline u64 pack(u32 a, u32 b)
{
	return (u64)a | ((u64)b << 32);
}

#define barrier() asm volatile("" ::: "memory")

/*
 * Slots kept free in streaming mode for programs that nest between the room
 * check and the reservation: a task, a soft and a hard interrupt, two
 * entries each, with room to spare.
 */
#define NEST_ROOM 8

/* Store n (1 or 2) entries in this CPU's buffer. */
static __always_inline void emit(u32 cpu, struct wc_event *ev, u32 n)
{
	if (cpu >= WC_MAX_CPUS)
		return;
	struct wc_cpu_buf *b = &bufs[cpu];
	if (paused || (!flight && b->head + n + NEST_ROOM > *(volatile u64 *)&b->tail + slots)) {
		__sync_fetch_and_add(&b->dropped, n);
		return;
	}
	/* A plain increment is safe: a program that interrupts this one on
	 * this CPU restores the count before this one goes on. */
	b->nest++;
	barrier();
	u64 seq = __sync_fetch_and_add(&b->head, n);
	for (u32 i = 0; i < 2; i++) {
		if (i >= n)
			break;
		u32 key = cpu * slots + ((seq + i) & (slots - 1));
		struct wc_event *slot = bpf_map_lookup_elem(&ring, &key);
		if (slot)
			*slot = ev[i];
	}
	barrier();
	if (--b->nest || flight)
		return;
	/* Outermost: no entry below head is half-written on this CPU. A
	 * program that nests between these two lines publishes a later head,
	 * which this one may lower again; its entries are then published by
	 * the next event, or read at the end, when user space takes all up
	 * to head. */
	u64 head = *(volatile u64 *)&b->head;
#if defined(__TARGET_ARCH_x86)
	/* x86 keeps stores in order: the entries are visible before this. */
	*(volatile u64 *)&b->published = head;
#else
	__sync_lock_test_and_set(&b->published, head);
#endif
}

static __always_inline void emit1(u32 pid, u32 id, u64 arg)
{
	u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_ok(cpu))
		return;
	struct wc_event ev = { .ts = bpf_ktime_get_ns(), .pid = pid, .id = id, .arg = arg };
	emit(cpu, &ev, 1);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(wc_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_ok(cpu))
		return 0;
	bool prev_ok = task_ok(prev);
	if (!prev_ok && !task_ok(next))
		return 0;
	u32 ps = WC_PS_RUNNABLE;
	if (!preempt && prev_state != TASK_RUNNING_STATE) {
		if (prev_state & (TASK_DEAD_STATE | EXIT_ZOMBIE_STATE | EXIT_DEAD_STATE))
			ps = WC_PS_DEAD;
		else if (BPF_CORE_READ_BITFIELD(prev, in_iowait))
			ps = WC_PS_BLOCKED_IO;
		else
			ps = WC_PS_BLOCKED;
	}
	struct wc_event ev[2];
	u32 n = 0;
	u64 ts = bpf_ktime_get_ns();
	u32 prev_pid = prev->pid;
	/* SchedLog's BLOCK / BLOCK_IO, just before the switch they cause. */
	if (!prev_ok) {
		/* Only the next task is followed: the switch, not the block. */
	} else if (ps == WC_PS_BLOCKED && wanted(WC_BLOCK)) {
		ev[0] = (struct wc_event){ .ts = ts, .pid = prev_pid, .id = WC_BLOCK, .arg = 0 };
		n = 1;
	} else if (ps == WC_PS_BLOCKED_IO && wanted(WC_BLOCK_IO)) {
		ev[0] = (struct wc_event){ .ts = ts, .pid = prev_pid, .id = WC_BLOCK_IO, .arg = 0 };
		n = 1;
	}
	if (wanted(WC_CTX_SWITCH)) {
		ev[n & 1] = (struct wc_event){
			.ts = ts, .pid = prev_pid, .id = WC_CTX_SWITCH, .arg = pack(next->pid, ps)
		};
		n++;
	}
	if (n)
		emit(cpu, ev, n);
	return 0;
}

/* The CPU each task's latest wake-up started on (sched_waking), plus one. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, u32);
} waking_cpu SEC(".maps");

/* sched_waking runs on the waker's CPU, in the waker, before the placement. */
SEC("tp_btf/sched_waking")
int BPF_PROG(wc_waking, struct task_struct *p)
{
	if (!task_ok(p))
		return 0;
	u32 *c = bpf_task_storage_get(&waking_cpu, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (c)
		*c = bpf_get_smp_processor_id() + 1;
	return 0;
}

/*
 * WAKEUP: b is the waker, the task running here. When the wake-up was queued
 * to the target CPU (ttwu_queue_wakelist), this runs there, in an interrupt
 * or the idle loop, and the waker is unknown: b = 0. Queued is told by the
 * CPU the wake-up started on (sched_waking). p->sched_remote_wakeup does not
 * tell it: the kernel sets it only when it queues a wake-up, and leaves it
 * set for the wake-ups that follow.
 */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(wc_wakeup, struct task_struct *p)
{
	if (!task_ok(p))
		return 0;
	u32 *c = bpf_task_storage_get(&waking_cpu, p, 0, 0);
	u32 waker = 0;
	if (!c || *c == bpf_get_smp_processor_id() + 1)
		waker = (u32)bpf_get_current_pid_tgid();
	emit1(p->pid, WC_WAKEUP, pack(p->thread_info.cpu, waker));
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(wc_wakeup_new, struct task_struct *p)
{
	if (!task_ok(p))
		return 0;
	emit1(p->pid, WC_WAKEUP_NEW, pack(p->thread_info.cpu, (u32)bpf_get_current_pid_tgid()));
	return 0;
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(wc_migrate, struct task_struct *p, int dest_cpu)
{
	if (!task_ok(p))
		return 0;
	/* Called before the task's CPU is changed: p->cpu is the old one. */
	emit1(p->pid, WC_MIGRATE, pack(p->thread_info.cpu, dest_cpu));
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(wc_fork, struct task_struct *parent, struct task_struct *child)
{
	if (filter == WC_FILTER_PID) {
		u32 ptgid = parent->tgid;
		if (!bpf_map_lookup_elem(&tracked, &ptgid))
			return 0;
		u32 ctgid = child->tgid;
		u8 one = 1;
		bpf_map_update_elem(&tracked, &ctgid, &one, BPF_ANY);
	} else if (!task_ok(child)) {
		return 0;
	}
	if (wanted(WC_FORK))
		emit1(child->pid, WC_FORK, pack(parent->pid, 0));
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(wc_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	if (!task_ok(p))
		return 0;
	u64 comm = 0;
	/* The new name is set before this tracepoint; SchedLog keeps 8 bytes. */
	bpf_probe_read_kernel(&comm, sizeof(comm), p->comm);
	emit1(p->pid, WC_EXEC, comm);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(wc_exit, struct task_struct *p)
{
	if (!task_ok(p))
		return 0;
	emit1(p->pid, WC_EXIT, 0);
	return 0;
}

SEC("tp_btf/sched_process_wait")
int BPF_PROG(wc_wait, struct pid *pid)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	if (!task_ok(cur))
		return 0;
	u32 nr = 0;
	if (pid)
		nr = BPF_CORE_READ(pid, numbers[0].nr);
	emit1(cur->pid, WC_WAIT_PID, pack(nr, 0));
	return 0;
}

static __always_inline u32 tick_khz(u32 cpu)
{
	if (freq_src == WC_FREQ_MAP) {
		u32 *v = bpf_map_lookup_elem(&cpu_khz, &cpu);
		return v ? *v : 0;
	}
	if (freq_src != WC_FREQ_PERF)
		return 0;
	struct bpf_perf_event_value c = {}, r = {};
	if (bpf_perf_event_read_value(&cycles, BPF_F_CURRENT_CPU, &c, sizeof(c)) ||
	    bpf_perf_event_read_value(&refcycles, BPF_F_CURRENT_CPU, &r, sizeof(r)))
		return 0;
	u32 zero = 0;
	struct wc_freq_state *st = bpf_map_lookup_elem(&freq_state, &zero);
	if (!st)
		return 0;
	u32 khz = 0;
	/* Both count only while the CPU is not halted: their ratio is the
	 * frequency relative to the reference clock since the last tick. */
	if (st->ref && r.counter > st->ref && c.counter >= st->cycles)
		khz = ref_khz * (c.counter - st->cycles) / (r.counter - st->ref);
	st->cycles = c.counter;
	st->ref = r.counter;
	return khz;
}

static __always_inline int on_tick(void)
{
	u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_ok(cpu))
		return 0;
	struct task_struct *cur = bpf_get_current_task_btf();
	if (!task_ok(cur))
		return 0;
	u32 need = (cur->thread_info.flags >> TIF_NEED_RESCHED_BIT) & 1;
	struct wc_event ev = {
		.ts = bpf_ktime_get_ns(), .pid = cur->pid, .id = WC_TICK,
		.arg = pack(tick_khz(cpu), need)
	};
	emit(cpu, &ev, 1);
	return 0;
}

/*
 * The scheduler tick, seen where it is armed: the per-CPU tick hrtimer
 * expiring with the tick handler as its function (tick_nohz_handler since
 * 6.9, tick_sched_timer before; user space passes its address). A
 * tracepoint rather than fentry/sched_tick, so that it also works on kernels
 * without ftrace.
 */
const volatile unsigned long long tick_fn = 0;

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(wc_tick, struct hrtimer *timer, ktime_t *now)
{
	if ((unsigned long long)timer->function != tick_fn)
		return 0;
	return on_tick();
}
