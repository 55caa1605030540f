/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The one contract between warmcore's BPF scheduler (main.bpf.c) and its
 * Rust loader: constants, the policy and counter numbering, the layout of the
 * per-CPU statistics record.
 */
#ifndef __WARMCORE_INTF_H
#define __WARMCORE_INTF_H

#ifndef __VMLINUX_H__
typedef unsigned char u8;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;
#endif

enum wc_consts {
	/* Sizes of the per-CPU arrays; CPU sets use bpf_cpumask, of any width. */
	WC_MAX_CPUS = 1024,
	/* DSQ ids: a task queue per CPU (id = cpu), a warmer queue per CPU. */
	WC_WARM_DSQ_BASE = 1 << 20,
	/* haiku-*: a queue per core, id = base + the core's first CPU. */
	WC_CORE_DSQ_BASE = 2 << 20,
	/* The most CPUs of one core (hardware threads). */
	WC_MAX_SMT = 8,
	WC_TASK_COMM_LEN = 16,
};

enum wc_policy {
	WC_POLICY_DEFAULT = 0,
	WC_POLICY_SLOCAL = 1,
	WC_POLICY_SMOVE = 2,
	WC_POLICY_NEST = 3,
	WC_POLICY_HAIKU_LOW_LATENCY = 4,
	WC_POLICY_HAIKU_POWER_SAVING = 5,
	WC_POLICY_WARM = 6,
};

enum wc_freq_source {
	WC_FREQ_KERNEL = 0,
	WC_FREQ_MAP = 1,
};

/*
 * Decision counters, one slot each in struct wc_cpu_stats.cnt. The loader
 * names each after its enumerator, lowercased without WC_ST_ (STAT_NAMES in
 * src/stats.rs, checked by tests/intf.rs); likewise the profiled operations
 * below without WC_PROF_ (PROF_NAMES).
 */
enum wc_stat {
	WC_ST_SELECT_CPU,	/* select_cpu calls */
	WC_ST_DIRECT_IDLE,	/* woken task sent straight to an idle CPU */
	WC_ST_QUEUED,		/* task put in a CPU's queue */
	WC_ST_PULLED,		/* an idle CPU took work from another CPU's queue */
	WC_ST_KICKS,		/* idle CPUs woken to pull waiting work */
	WC_ST_WAKER_PLACED,	/* task placed on the waker's CPU (slocal, smove) */
	WC_ST_SMOVE_FAST,	/* smove: chosen CPU not at low frequency, placed there */
	WC_ST_TIMERS_ARMED,	/* smove: move timers armed */
	WC_ST_TIMERS_FIRED,	/* smove: timer expired with the task still waiting */
	WC_ST_SMOVE_MOVED,	/* smove: ... and the task moved to the chosen CPU */
	WC_ST_TIMERS_CANCELLED,	/* smove: task ran before the timer (stale-flag cancel) */
	WC_ST_TIMERS_BUSY,	/* smove: all the waker CPU's timers in use, placed directly */
	WC_ST_NEST_ATTACHED,	/* nest: attached core hit */
	WC_ST_NEST_PRIMARY,	/* nest: idle core found in the primary nest */
	WC_ST_NEST_RESERVE,	/* nest: idle core found in the reserve nest */
	WC_ST_NEST_FALLBACK,	/* nest: idle core found outside the nests */
	WC_ST_NEST_NONE,	/* nest: no idle core anywhere */
	WC_ST_NEST_PROMOTIONS,	/* nest: reserve -> primary */
	WC_ST_NEST_DEMOTIONS,	/* nest: primary -> reserve or out (exit, compaction) */
	WC_ST_NEST_COMPACTIONS,	/* nest: demotions by compaction */
	WC_ST_NEST_IMPATIENT,	/* nest: placements of impatient tasks */
	WC_ST_NEST_OTHER_DIE,	/* nest: core found on another die than the task's */
	WC_ST_NEST_CLAIM_LOST,	/* nest: a core lost to a concurrent placement */
	WC_ST_WARM_SPINS,	/* nest: warmer runs on an idle primary core */
	WC_ST_WARM_NS,		/* nest: total time the warmers ran */
	WC_ST_WARM_PREEMPTED,	/* nest: warmer gave the core up to a task */
	WC_ST_NEST_FORK_HINT,	/* nest: child placed on its parent's fork hint */
	WC_ST_HAIKU_PREEMPT,	/* haiku: a queued thread preempted a lower-priority one */
	WC_ST_HAIKU_QUANTUM_END,	/* haiku: quanta used up (penalties raised) */
	WC_ST_HAIKU_TIMER,	/* haiku: the quantum timer ended a running thread's quantum */
	WC_ST_HAIKU_MOVED,	/* haiku: a rebalance moved a thread to another core */
	WC_ST_HAIKU_COLD,	/* haiku: a wake-up with its cache cold chose a core afresh */
	WC_ST_HAIKU_WARM,	/* haiku: a wake-up with its cache warm stayed or rebalanced */
	WC_ST_HAIKU_SMALL_CORE,	/* haiku power saving: placed on the small task core */
	WC_ST_HAIKU_PINNED,	/* haiku: queued on a CPU's own queue (pinned) */
	WC_ST_WARM_PREV,	/* warm: woken task kept on its idle warm previous CPU */
	WC_ST_WARM_FORK,	/* warm: child placed on its parent's previous child's CPU */
	WC_ST_WARM_FOUND,	/* warm: idle warm CPU found by the search */
	WC_ST_WARM_SPREAD,	/* warm: no idle warm CPU, an idle CPU outside the set */
	WC_ST_WARM_JOINED,	/* warm: CPUs that joined the warm set */
	WC_ST_WARM_LEFT,	/* warm: CPUs that left it, unused for a window */
	WC_ST_WARM_LOCAL,	/* warm: child queued on its parent's CPU */
	WC_NR_STATS,
};

/* Operations profiled with --profile. */
enum wc_prof_op {
	WC_PROF_SELECT_CPU,
	WC_PROF_ENQUEUE,
	WC_PROF_DISPATCH,
	WC_PROF_RUNNING,
	WC_PROF_STOPPING,
	WC_PROF_TICK,
	WC_PROF_QUANTUM_TIMER,	/* haiku: the quantum timer's callback */
	WC_NR_PROF,
};

/* One per CPU (a BPF_MAP_TYPE_PERCPU_ARRAY of one element); user space sums. */
struct wc_cpu_stats {
	u64 cnt[WC_NR_STATS];
	u64 prof_calls[WC_NR_PROF];
	u64 prof_ns[WC_NR_PROF];
};

#endif /* __WARMCORE_INTF_H */
