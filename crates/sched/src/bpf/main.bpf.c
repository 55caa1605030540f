/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * warmcore's sched_ext scheduler.
 *
 * Base (every policy but Haiku's): a vtime-ordered queue per CPU; a task's
 * slice shrinks as more tasks wait on its CPU; a CPU with nothing of its own
 * pulls work from the other CPUs' queues (same die first), and idle CPUs
 * are woken when work waits, so that no task waits on a busy CPU while a
 * CPU it may use is idle (slocal waits for the tick of the busy CPU, as
 * S_local relies on the load balancer; smove waits for its timer).
 *
 * Placement policies, chosen at load time:
 *  - default: sched_ext's built-in idle-CPU selection.
 *  - slocal:  Fewer Cores, More Hertz, section 3.1: the
 *             woken or forked task goes to the waker's CPU.
 *  - smove:   Fewer Cores, More Hertz, section 3.2, and docs/model.md, S_move as patched: if the
 *             CPU the default selection chose ran at a low frequency at its
 *             last tick, the task goes to the waker's CPU and a timer of its
 *             own moves it to the chosen CPU D us later unless it ran first.
 *  - nest:    Nest, section 3, parameters from Table 1.
 *  - warm:    warmcore's own (docs/warm.md): a small set of warm cores
 *             sized by demand and shrinking within a window, filled
 *             compactly, spread beyond only when none is idle; its cores
 *             ask for the top frequency while they are in it.
 *
 * haiku-low-latency and haiku-power-saving are Haiku's scheduler (Haiku's
 * scheduler, the blog post, and the constants of its source tree: see
 * docs/model.md, Haiku's scheduler on sched_ext) and replace the base: a
 * queue per core ordered by effective priority, a queue per CPU for pinned
 * threads, quanta bounded by a maximum latency, no pulling between cores.
 *
 * One translation unit in several files, so that the kernel's build and the
 * simulator's host build each compile the whole program at once and every
 * helper stays static (inlined or a BPF subprogram, as before the split).
 * This file holds what every policy shares: the load-time knobs and the
 * globals the loader reads, the CPU and task contexts, the shared maps and
 * helpers, and the struct_ops operations, each a switch on the policy that
 * calls its part once (the default policy's case calls the base itself).
 * The parts, included below in this order, each use only what comes before
 * it (freq.bpf.c declares the two tests of the policies after it):
 *   balance.bpf.c - the base's work conservation: the mask of queues that
 *                   may hold work, pulling from them, kicking idle CPUs
 *   freq.bpf.c    - performance targets from utilisation (freq_steer)
 *   base.bpf.c    - the base's queueing, dispatch, charge and tick, which
 *                   each policy but Haiku's builds its operations on
 *   slocal.bpf.c  - S_local: the waker's CPU
 *   smove.bpf.c   - S_move: the frequency test and the move timers
 *   nest.bpf.c    - Nest: the primary and reserve nests, their search,
 *                   compaction, the fork hint, the warmers and their feed
 *   warm.bpf.c    - warm: the warm set, its search and its decay
 *   haiku.bpf.c   - Haiku's scheduler, which replaces the base
 */
#include <scx/common.bpf.h>
#include "intf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

/* Set by the loader before load. */
const volatile u32 nr_cpus = 1;
const volatile u32 policy = WC_POLICY_DEFAULT;
const volatile u32 freq_source = WC_FREQ_KERNEL;
const volatile bool profile = false;
const volatile u64 slice_max_ns = 5000000ULL;
const volatile u64 slice_min_ns = 250000ULL;
const volatile u32 cpu_llc[WC_MAX_CPUS];	/* die (last-level cache) of each CPU */
/* haiku: each CPU's core, as the core's lowest-numbered CPU. */
const volatile u32 cpu_core[WC_MAX_CPUS];
/* smove: a CPU is "low" when its frequency is at or below its threshold,
 * 0 disabling the test: on --freq-source=map, in kHz; else on the scale of
 * scx_bpf_cpuperf_cur (SCX_CPUPERF_ONE at the CPU's highest performance
 * level, as the kernel's frequency invariance counts it). */
const volatile u32 smove_threshold_khz[WC_MAX_CPUS];
const volatile u32 smove_threshold_perf[WC_MAX_CPUS];
const volatile u64 smove_delay_ns = 50000ULL;	/* Fewer Cores, More Hertz, section 3.2: D = 50 us */
const volatile bool freq_steer = false;		/* set performance targets (freq.bpf.c) */

/* Nest, Table 1. */
const volatile u64 nest_p_remove_ticks = 2;
const volatile u32 nest_r_max = 5;
const volatile u32 nest_r_impatient = 2;
const volatile u64 nest_s_max_ticks = 2;
const volatile s32 nest_reserve_start = 0;	/* the CPU the loader started on */
const volatile bool nest_attach = true;		/* section 3.3 */
const volatile bool nest_reserve = true;	/* section 3.1 */
const volatile bool nest_compaction = true;	/* section 3.1 */
const volatile bool nest_impatience = true;	/* section 3.1 */
const volatile bool nest_exit_demote = true;	/* section 3.1, last sentence */
const volatile bool nest_die_first = true;	/* section 3.1 */
const volatile bool nest_wc_dies = true;	/* section 3.4 */
const volatile bool nest_claim = true;		/* section 3.4 */
const volatile bool nest_warm = true;		/* section 3.2, with warmer threads */
const volatile bool nest_fork_hint = true;	/* see select_nest */

/* The kernel's tick rate, from its configuration (Nest counts P_remove and
 * S_max in ticks). */
extern unsigned long CONFIG_HZ __kconfig;

static __always_inline u64 tick_ns(void)
{
	return 1000000000ULL / (CONFIG_HZ ? CONFIG_HZ : 250);
}

/* Read by the loader. */
u64 nr_primary, nr_reserve, max_primary;
/* 1 for each CPU the loader may hold in polling through PM QoS: nest's
 * primary nest (--nest-warm pmqos), warm's warm set (--warm-poll-cpus). */
u8 pmqos_hold[WC_MAX_CPUS];
u64 vtime_now;

struct cpu_ctx {
	u64 run_start;		/* the running task's CPU time when it started here */
	u64 last_used;		/* nest: last time a task ran here */
	u64 warm_start;		/* nest: when the warmer started */
	u64 warm_ticks;		/* nest: ticks the warmer ran in this idle period */
	u64 warm_last_run;	/* nest: last time the warmer ran (watchdog feed) */
	s32 warmer_pid;		/* nest: this CPU's warmer, 0 = none */
	s32 pull_hint;		/* CPU whose queue to try first when pulling */
	u32 claimed;		/* nest: placement claim flag (section 3.4) */
	u8 warming;		/* nest: the warmer runs now */
	u8 warm_spin;		/* nest: this warmer run is a spin (not a feed) */
	u8 warm_allowed;	/* nest: the next idle period may warm */
	u8 warm_feed;		/* nest: run the warmer briefly (watchdog) */
	u8 exited_here;		/* nest: the last task to stop here exited */
	u8 compact_tried;	/* nest: someone tried this compactable core */
	u8 busy;		/* a task runs here (freq_steer) */
	u8 warm_busy;		/* warm: a task runs here (warm whatever last_used says) */
	u64 handoff_last;	/* warm: when a hand-off's task last started here */
	u64 util;		/* freq_steer: busy-time average, WC_UTIL_FULL scale */
	u64 util_t;		/* freq_steer: time util is brought to */
	u32 perf_sample;	/* smove: scx_bpf_cpuperf_cur at the last tick */
	u32 perf_target;	/* freq_steer: the target last set */
	u32 smove_next;		/* smove: the next of this CPU's move timers to try */
	/* haiku, kept in the core's first CPU's context: */
	s64 hk_load;		/* the interval's load: hk_cur_load plus the threads
				 * that went to sleep in it (scale 1000 per CPU) */
	s64 hk_cur_load;	/* the needed loads of the core's ready threads */
	u64 hk_load_t;		/* when the measurement interval started */
	u64 hk_active_ns;	/* time the core's CPUs ran threads */
	u32 hk_epoch;		/* measurement interval number */
	u32 hk_ncpus;		/* the core's CPUs */
	u8 hk_high;		/* in the high-load set */
	/* haiku, per CPU: */
	u32 hk_prio;		/* effective priority of the running thread, 0 idle */
	u32 hk_qgen;		/* run number: a quantum timer of an older run is stale */
	u32 hk_next;		/* the next CPU of the core (the last one's is the first) */
	u32 hk_tail;		/* (first CPU) the core's last CPU linked, at init */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, WC_MAX_CPUS);
	__type(key, u32);
	__type(value, struct cpu_ctx);
} cpu_ctxs SEC(".maps");

struct task_ctx {
	s32 hist[2];		/* nest: the last two CPUs the task ran on */
	u32 impatience;		/* nest: successive misses of its previous core */
	s32 fork_hint;		/* nest, warm: the core to try for its next child */
	s32 fork_home;		/* nest: a chain's core to return to, tried first */
	s32 fork_home_next;	/* nest: the home its child will try first */
	u32 smove_gen;		/* smove: generation of the armed move */
	u8 smove_pending;	/* smove: armed and not yet run (stale-flag cancel) */
	u8 is_warmer;
	u8 woke;		/* freq_steer: new, or slept since it last ran */
	u8 handoff;		/* warm: its last wake-up was a hand-off (SCX_WAKE_SYNC) */
	s32 warmer_cpu;
	u64 util;		/* freq_steer: running-time average, WC_UTIL_FULL scale */
	u64 util_t;
	/* haiku (names after Haiku's ThreadData) */
	u64 hk_time_used;	/* of the current quantum */
	u64 hk_went_sleep;	/* when it last slept */
	u64 hk_went_sleep_active;	/* its core's active time then */
	u64 hk_avail;		/* time available: running or sleeping, not waiting */
	u64 hk_active;		/* time run since the last load measurement */
	u64 hk_last_measure;	/* hk_avail at the last load measurement */
	s64 hk_load;		/* needed load: the load it would produce alone */
	s32 hk_core;		/* its core (first CPU), -1 none */
	u32 hk_epoch;		/* its core's interval when it went to sleep */
	u32 hk_add_penalty;	/* the cycling penalty, one more per run */
	u8 hk_base;		/* base priority, from nice */
	u8 hk_penalty;		/* priority penalty */
	u8 hk_eff;		/* effective priority, kept (recomputed on changes) */
	u8 hk_ready;		/* counted in its core's load */
	u8 hk_back;		/* its quantum ended: queue at the back, rebalance */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

/* Statistics and the profile (struct wc_cpu_stats), summed by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct wc_cpu_stats);
} stats SEC(".maps");

/* --freq-source=map: kHz per CPU, written by `warmcore sched freq set` or a test. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, WC_MAX_CPUS);
	__type(key, u32);
	__type(value, u32);
} freq_map SEC(".maps");

/* A cpumask in a map, created in ops.init. */
struct mask_slot {
	struct bpf_cpumask __kptr *mask;
};

/* The CPUs of each die (last-level cache), by die id: searches within a die
 * are cpumask operations, not scans. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, WC_MAX_CPUS);
	__type(key, u32);
	__type(value, struct mask_slot);
} llc_masks SEC(".maps");

static __always_inline struct cpu_ctx *cpu_ctx(s32 cpu)
{
	u32 key = cpu;

	return bpf_map_lookup_elem(&cpu_ctxs, &key);
}

static __always_inline struct task_ctx *task_ctx(struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, p, 0, 0);
}

static __always_inline void stat_add(u32 idx, u64 v)
{
	u32 key = 0;
	struct wc_cpu_stats *s = bpf_map_lookup_elem(&stats, &key);

	if (s && idx < WC_NR_STATS)
		s->cnt[idx] += v;
}

static __always_inline u64 prof_start(void)
{
	return profile ? bpf_ktime_get_ns() : 0;
}

static __always_inline void prof_end(u32 op, u64 t0)
{
	u32 key = 0;
	struct wc_cpu_stats *s;

	if (!profile)
		return;
	s = bpf_map_lookup_elem(&stats, &key);
	if (s && op < WC_NR_PROF) {
		s->prof_calls[op]++;
		s->prof_ns[op] += bpf_ktime_get_ns() - t0;
	}
}

static __always_inline u64 now_ns(void)
{
	return bpf_ktime_get_ns();
}

static __always_inline bool cpu_ok(s32 cpu)
{
	return cpu >= 0 && cpu < nr_cpus && cpu < WC_MAX_CPUS;
}

static __always_inline u32 llc_of(s32 cpu)
{
	u32 c = cpu;

	if (c >= WC_MAX_CPUS)
		return 0;
	/* The compiler would drop the mask after the test, and may compute
	 * the address before it (out of a loop), unbounded for the verifier. */
	barrier_var(c);
	return cpu_llc[c & (WC_MAX_CPUS - 1)];
}

/* The CPUs of @cpu's die; NULL before init. A kptr read outside an explicit
 * RCU section: sched_ext's operations are non-sleepable, hence RCU-protected. */
static __always_inline const struct cpumask *llc_cpus(s32 cpu)
{
	u32 key = llc_of(cpu);
	struct mask_slot *m = bpf_map_lookup_elem(&llc_masks, &key);

	return m ? (const struct cpumask *)m->mask : NULL;
}

/* The mask in @map at @key; NULL before init. */
static __always_inline struct bpf_cpumask *mask_at(void *map, u32 key)
{
	struct mask_slot *m = bpf_map_lookup_elem(map, &key);

	return m ? m->mask : NULL;
}

static __always_inline bool is_idle(s32 cpu)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();
	bool r = bpf_cpumask_test_cpu(cpu, idle);

	scx_bpf_put_idle_cpumask(idle);
	return r;
}

/* A CPU idle as the kernel sees it, or (nest) only running its warmer. */
static __always_inline bool warming(s32 cpu)
{
	struct cpu_ctx *c = cpu_ctx(cpu);

	return c && c->warming;
}

/*
 * The default selection without claiming the CPU: @prev if idle, else an
 * idle CPU on @prev's die, else (@other_dies) any idle CPU, each picked
 * round-robin as the kernel's own idle selection does. -1 if none.
 */
static s32 peek_idle(struct task_struct *p, s32 prev, bool other_dies)
{
	const struct cpumask *idle, *die = llc_cpus(prev);
	s32 cpu = -1, c;

	idle = scx_bpf_get_idle_cpumask();
	if (cpu_ok(prev) && bpf_cpumask_test_cpu(prev, idle) &&
	    bpf_cpumask_test_cpu(prev, p->cpus_ptr)) {
		cpu = prev;
		goto out;
	}
	if (die && bpf_cpumask_subset(die, p->cpus_ptr)) {
		cpu = bpf_cpumask_any_and_distribute(die, idle);
	} else if (die) {
		/* A task kept from part of the die (rare): look CPU by CPU. */
		bpf_for(c, 0, nr_cpus) {
			if (bpf_cpumask_test_cpu(c, die) && bpf_cpumask_test_cpu(c, idle) &&
			    bpf_cpumask_test_cpu(c, p->cpus_ptr)) {
				cpu = c;
				break;
			}
		}
	}
	if (!cpu_ok(cpu) && other_dies)
		cpu = bpf_cpumask_any_and_distribute(idle, p->cpus_ptr);
out:
	scx_bpf_put_idle_cpumask(idle);
	return cpu_ok(cpu) ? cpu : -1;
}

#include "balance.bpf.c"
#include "freq.bpf.c"
#include "base.bpf.c"
#include "slocal.bpf.c"
#include "smove.bpf.c"
#include "nest.bpf.c"
#include "warm.bpf.c"
#include "haiku.bpf.c"

/* ---------------------------------------------------------------- ops */

s32 BPF_STRUCT_OPS(wc_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	u64 t0 = prof_start();
	bool direct = false;
	s32 cpu;

	stat_add(WC_ST_SELECT_CPU, 1);
	switch (policy) {
	case WC_POLICY_SLOCAL:
		cpu = select_slocal(p, prev_cpu, wake_flags, &direct);
		break;
	case WC_POLICY_SMOVE:
		cpu = select_smove(p, prev_cpu, wake_flags, &direct);
		break;
	case WC_POLICY_NEST:
		/* A warmer stays on its CPU, in its own queue (nest_enqueue). */
		cpu = nest_warmer_cpu(p);
		if (cpu >= 0)
			goto out;
		cpu = select_nest(p, prev_cpu, wake_flags, &direct);
		break;
	case WC_POLICY_WARM:
		cpu = select_warm(p, prev_cpu, wake_flags, &direct);
		break;
	case WC_POLICY_HAIKU_LOW_LATENCY:
	case WC_POLICY_HAIKU_POWER_SAVING:
		cpu = hk_select_cpu(p, prev_cpu, wake_flags);
		goto out;
	default:
		cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &direct);
		break;
	}
	if (direct) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_max_ns, 0);
		stat_add(WC_ST_DIRECT_IDLE, 1);
	}
	perf_placed(p, NULL, cpu);
out:
	prof_end(WC_PROF_SELECT_CPU, t0);
	return cpu;
}

void BPF_STRUCT_OPS(wc_enqueue, struct task_struct *p, u64 enq_flags)
{
	u64 t0 = prof_start();
	s32 cpu;

	switch (policy) {
	case WC_POLICY_SLOCAL:
		/* Work waiting behind a busy CPU is left to that CPU's tick
		 * (base_tick), as S_local leaves it to the load balancer. */
		base_enqueue(p, enq_flags, NULL);
		break;
	case WC_POLICY_SMOVE:
		smove_enqueue(p, enq_flags);
		break;
	case WC_POLICY_NEST:
		nest_enqueue(p, enq_flags);
		break;
	case WC_POLICY_HAIKU_LOW_LATENCY:
	case WC_POLICY_HAIKU_POWER_SAVING:
		hk_enqueue(p, enq_flags);
		break;
	default:
		cpu = base_enqueue(p, enq_flags, NULL);
		if (cpu >= 0)
			kick_idle_for(p, cpu);
		break;
	}
	prof_end(WC_PROF_ENQUEUE, t0);
}

void BPF_STRUCT_OPS(wc_dispatch, s32 cpu, struct task_struct *prev)
{
	u64 t0 = prof_start();

	switch (policy) {
	case WC_POLICY_NEST:
		nest_dispatch(cpu, prev);
		break;
	case WC_POLICY_HAIKU_LOW_LATENCY:
	case WC_POLICY_HAIKU_POWER_SAVING:
		hk_dispatch(cpu);
		break;
	default:
		base_dispatch(cpu, cpu_ctx(cpu));
		break;
	}
	prof_end(WC_PROF_DISPATCH, t0);
}

void BPF_STRUCT_OPS(wc_running, struct task_struct *p)
{
	u64 t0 = prof_start();
	s32 cpu = scx_bpf_task_cpu(p);
	struct cpu_ctx *c = cpu_ctx(cpu);

	switch (policy) {
	case WC_POLICY_SMOVE:
		smove_running(p, cpu, c);
		break;
	case WC_POLICY_NEST:
		nest_running(p, cpu, c);
		break;
	case WC_POLICY_WARM:
		warm_running(p, cpu, c);
		break;
	case WC_POLICY_HAIKU_LOW_LATENCY:
	case WC_POLICY_HAIKU_POWER_SAVING:
		hk_running(p, cpu, c);
		break;
	default:
		base_running(p, c);
		perf_running(p, cpu, c);
		break;
	}
	prof_end(WC_PROF_RUNNING, t0);
}

void BPF_STRUCT_OPS(wc_stopping, struct task_struct *p, bool runnable)
{
	u64 t0 = prof_start();
	s32 cpu = scx_bpf_task_cpu(p);
	struct cpu_ctx *c = cpu_ctx(cpu);

	if (!c)
		goto out;
	switch (policy) {
	case WC_POLICY_NEST:
		nest_stopping(p, cpu, c, runnable);
		break;
	case WC_POLICY_WARM:
		warm_stopping(p, cpu, c, runnable);
		break;
	case WC_POLICY_HAIKU_LOW_LATENCY:
	case WC_POLICY_HAIKU_POWER_SAVING:
		hk_stopping(p, cpu, c, runnable);
		break;
	default:
		perf_stopping(p, cpu, c, runnable);
		base_stopping(p, c);
		break;
	}
out:
	prof_end(WC_PROF_STOPPING, t0);
}

void BPF_STRUCT_OPS(wc_tick, struct task_struct *p)
{
	u64 t0 = prof_start();
	s32 cpu = scx_bpf_task_cpu(p);
	struct cpu_ctx *c = cpu_ctx(cpu);

	switch (policy) {
	case WC_POLICY_SMOVE:
		smove_tick(p, cpu, c);
		break;
	case WC_POLICY_NEST:
		nest_tick(p, cpu, c);
		break;
	case WC_POLICY_WARM:
		warm_tick(p, cpu, c);
		break;
	case WC_POLICY_HAIKU_LOW_LATENCY:
	case WC_POLICY_HAIKU_POWER_SAVING:
		hk_tick(p, cpu, c);
		break;
	default:
		perf_tick(p, cpu, c);
		base_tick(p, cpu);
		break;
	}
	prof_end(WC_PROF_TICK, t0);
}

void BPF_STRUCT_OPS(wc_update_idle, s32 cpu, bool idle)
{
	switch (policy) {
	case WC_POLICY_NEST:
		nest_update_idle(cpu, idle);
		break;
	default:
		break;
	}
}

void BPF_STRUCT_OPS(wc_enable, struct task_struct *p)
{
	p->scx.dsq_vtime = vtime_now;
	if (policy == WC_POLICY_WARM && warm_fork_debit)
		p->scx.dsq_vtime += slice_max_ns;
}

s32 BPF_STRUCT_OPS(wc_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	struct task_ctx *tctx;

	tctx = bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tctx)
		return -ENOMEM;
	tctx->hist[0] = -1;
	tctx->hist[1] = -2;
	tctx->fork_hint = -1;
	tctx->fork_home = -1;
	tctx->fork_home_next = -1;
	tctx->warmer_cpu = -1;
	/* A new task counts as half busy, as the fair class starts it. */
	tctx->util = WC_UTIL_FULL / 2;
	tctx->util_t = now_ns();
	tctx->woke = 1;
	switch (policy) {
	case WC_POLICY_NEST:
		nest_init_task(p, tctx);
		break;
	case WC_POLICY_HAIKU_LOW_LATENCY:
	case WC_POLICY_HAIKU_POWER_SAVING:
		hk_init_task(p, tctx);
		break;
	default:
		break;
	}
	return 0;
}

void BPF_STRUCT_OPS(wc_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	struct task_ctx *tctx = task_ctx(p);

	if (!tctx)
		return;
	switch (policy) {
	case WC_POLICY_NEST:
		nest_exit_task(tctx);
		break;
	case WC_POLICY_HAIKU_LOW_LATENCY:
	case WC_POLICY_HAIKU_POWER_SAVING:
		hk_exit_task(tctx);
		break;
	default:
		break;
	}
}

/* Create the mask of @map at @key if it has none (ops.init, sleepable). */
static __always_inline s32 mask_create(void *map, u32 key)
{
	struct mask_slot *m = bpf_map_lookup_elem(map, &key);
	struct bpf_cpumask *mask;

	if (!m)
		return -ENOENT;
	if (m->mask)
		return 0;
	mask = bpf_cpumask_create();
	if (!mask)
		return -ENOMEM;
	mask = bpf_kptr_xchg(&m->mask, mask);
	if (mask)
		bpf_cpumask_release(mask);
	return 0;
}

/* Put @cpu in its die's mask, and fill from_masks[@cpu] from the one above
 * it (called from the highest CPU down); create @cpu's scratch masks. */
static s32 cpu_masks_init(s32 cpu)
{
	struct bpf_cpumask *mask, *above;
	s32 err;

	err = mask_create(&llc_masks, llc_of(cpu));
	if (!err)
		err = mask_create(&from_masks, cpu);
	if (!err)
		err = mask_create(&scratch_masks, 2 * (u32)cpu);
	if (!err)
		err = mask_create(&scratch_masks, 2 * (u32)cpu + 1);
	if (err)
		return err;
	bpf_rcu_read_lock();
	mask = mask_at(&llc_masks, llc_of(cpu));
	if (mask)
		bpf_cpumask_set_cpu(cpu, mask);
	mask = mask_at(&from_masks, cpu);
	above = cpu + 1 < nr_cpus ? mask_at(&from_masks, cpu + 1) : NULL;
	if (mask && above)
		bpf_cpumask_copy(mask, (const struct cpumask *)above);
	if (mask)
		bpf_cpumask_set_cpu(cpu, mask);
	bpf_rcu_read_unlock();
	return 0;
}

s32 BPF_STRUCT_OPS_SLEEPABLE(wc_init)
{
	struct bpf_cpumask *m;
	struct cpu_ctx *c;
	s32 cpu, err;

	bpf_for(cpu, 0, nr_cpus) {
		err = scx_bpf_create_dsq(cpu, -1);
		if (err)
			return err;
		err = scx_bpf_create_dsq(WC_WARM_DSQ_BASE + cpu, -1);
		if (err)
			return err;
		c = cpu_ctx(cpu);
		if (c)
			c->pull_hint = -1;
		/* The kernel starts every target at the maximum; an idle CPU
		 * asks for nothing (a CPU that never runs would otherwise hold
		 * its SMT sibling's core at the top). */
		if (freq_steer && c) {
			c->perf_target = SCX_CPUPERF_ONE;	/* the kernel's start */
			perf_set(cpu, c, 0);
		}
		err = cpu_masks_init(nr_cpus - 1 - cpu);
		if (err)
			return err;
	}
	m = bpf_cpumask_create();
	if (!m)
		return -ENOMEM;
	m = bpf_kptr_xchg(&primary_mask, m);
	if (m)
		bpf_cpumask_release(m);
	m = bpf_cpumask_create();
	if (!m)
		return -ENOMEM;
	m = bpf_kptr_xchg(&reserve_mask, m);
	if (m)
		bpf_cpumask_release(m);
	m = bpf_cpumask_create();
	if (!m)
		return -ENOMEM;
	m = bpf_kptr_xchg(&waiting_mask, m);
	if (m)
		bpf_cpumask_release(m);
	m = bpf_cpumask_create();
	if (!m)
		return -ENOMEM;
	m = bpf_kptr_xchg(&warm_mask, m);
	if (m)
		bpf_cpumask_release(m);

	switch (policy) {
	case WC_POLICY_SMOVE:
		return smove_init();
	case WC_POLICY_NEST:
		return nest_init();
	case WC_POLICY_HAIKU_LOW_LATENCY:
	case WC_POLICY_HAIKU_POWER_SAVING:
		return hk_init();
	default:
		return 0;
	}
}

void BPF_STRUCT_OPS(wc_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(warmcore_ops,
	       .select_cpu = (void *)wc_select_cpu,
	       .enqueue = (void *)wc_enqueue,
	       .dispatch = (void *)wc_dispatch,
	       .running = (void *)wc_running,
	       .stopping = (void *)wc_stopping,
	       .tick = (void *)wc_tick,
	       .update_idle = (void *)wc_update_idle,
	       .enable = (void *)wc_enable,
	       .init_task = (void *)wc_init_task,
	       .exit_task = (void *)wc_exit_task,
	       .init = (void *)wc_init,
	       .exit = (void *)wc_exit,
	       .timeout_ms = 5000,
	       .name = "warmcore");
