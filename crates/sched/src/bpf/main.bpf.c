/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * warmcore's sched_ext scheduler.
 *
 * Base (every policy): a vtime-ordered queue per CPU; a task's slice shrinks
 * as more tasks wait on its CPU; a CPU with nothing of its own pulls work
 * from the other CPUs' queues (same die first), and idle CPUs are woken when
 * work waits, so that no task waits on a busy CPU while a CPU it may use is
 * idle (slocal waits for the tick of the busy CPU, as S_local relies on the
 * load balancer; smove waits for its timer).
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
 * helpers, and the struct_ops operations, which dispatch per policy. The
 * parts, included below in this order, each use only what comes before it:
 *   balance.bpf.c - the base's work conservation: the mask of queues that
 *                   may hold work, pulling from them, kicking idle CPUs
 *   freq.bpf.c    - performance targets from utilisation (freq_steer)
 *   smove.bpf.c   - S_move: the frequency test and the move timers
 *   nest.bpf.c    - Nest: the primary and reserve nests, their search,
 *                   compaction, the fork hint, the warmers' feed
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

/* How far ahead of the clock a task may queue, in slices (wc_enqueue). */
#define WC_LEAD_SLICES 10

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

/* Nest's warmer threads exist (Nest, section 3.2). */
static __always_inline bool warmers_on(void)
{
	return policy == WC_POLICY_NEST && nest_warm;
}

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
#include "smove.bpf.c"
#include "nest.bpf.c"
#include "warm.bpf.c"
#include "haiku.bpf.c"

/* ---------------------------------------------------------------- ops */

s32 BPF_STRUCT_OPS(wc_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	u64 t0 = prof_start();
	struct task_ctx *tctx = NULL;
	bool direct = false, idle = false;
	s32 cpu, waker;

	stat_add(WC_ST_SELECT_CPU, 1);
	if (warmers_on())
		tctx = task_ctx(p);
	if (tctx && tctx->is_warmer) {
		cpu = tctx->warmer_cpu;
		goto out;
	}

	switch (policy) {
	case WC_POLICY_SLOCAL:
		waker = bpf_get_smp_processor_id();
		if ((wake_flags & (SCX_WAKE_FORK | SCX_WAKE_TTWU)) && cpu_ok(waker) &&
		    bpf_cpumask_test_cpu(waker, p->cpus_ptr)) {
			stat_add(WC_ST_WAKER_PLACED, 1);
			cpu = waker;
			direct = scx_bpf_test_and_clear_cpu_idle(cpu);
		} else {
			cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &direct);
		}
		break;
	case WC_POLICY_SMOVE:
		cpu = select_smove(p, prev_cpu, wake_flags, &direct);
		break;
	case WC_POLICY_NEST:
		cpu = select_nest(p, prev_cpu, wake_flags, &direct);
		break;
	case WC_POLICY_WARM:
		cpu = select_warm(p, prev_cpu, wake_flags, &direct);
		break;
	case WC_POLICY_HAIKU_LOW_LATENCY:
	case WC_POLICY_HAIKU_POWER_SAVING:
		/* Haiku places a thread when it is queued (hk_enqueue). */
		cpu = cpu_ok(prev_cpu) && bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr)
			      ? prev_cpu : scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);
		goto out;
	default:
		cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);
		direct = idle;
		break;
	}
	if (direct) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_max_ns, 0);
		stat_add(WC_ST_DIRECT_IDLE, 1);
	}
	perf_placed(p, tctx, cpu);
out:
	prof_end(WC_PROF_SELECT_CPU, t0);
	return cpu;
}

void BPF_STRUCT_OPS(wc_enqueue, struct task_struct *p, u64 enq_flags)
{
	u64 t0 = prof_start();
	struct task_ctx *tctx = NULL;
	s32 cpu = scx_bpf_task_cpu(p), here = bpf_get_smp_processor_id();
	u64 vtime = p->scx.dsq_vtime, slice;
	s32 nq;

	if (haiku_on()) {
		hk_enqueue(p, enq_flags);
		goto out;
	}
	/* Only warmers (nest) and pending moves (smove) need the task's context. */
	if (warmers_on() || policy == WC_POLICY_SMOVE)
		tctx = task_ctx(p);
	if (tctx && tctx->is_warmer) {
		scx_bpf_dsq_insert(p, WC_WARM_DSQ_BASE + tctx->warmer_cpu, SCX_SLICE_INF, 0);
		goto out;
	}
	if (enq_flags & SCX_ENQ_LAST) {
		/* Nothing else wants this CPU: keep running the task. */
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_max_ns, enq_flags);
		goto out;
	}
	if (!cpu_ok(cpu))
		cpu = 0;

	/* Fairness: a sleeper gets at most one slice of credit, and a task
	 * queues at most WC_LEAD_SLICES slices ahead of the clock. A task of
	 * weight 1 (nice 19) is charged 100 times the tick it ran; without the
	 * bound it waits that long behind each task of its CPU, seconds when
	 * S_local stacks a dozen there, and the watchdog ejects the scheduler.
	 * A task of weight 100 never leads by more than a slice and a tick. */
	if (time_before(vtime, vtime_now - slice_max_ns))
		vtime = vtime_now - slice_max_ns;
	if (time_after(vtime, vtime_now + WC_LEAD_SLICES * slice_max_ns))
		vtime = vtime_now + WC_LEAD_SLICES * slice_max_ns;

	nq = scx_bpf_dsq_nr_queued(cpu);
	slice = slice_max_ns / (nq + 1);
	if (slice < slice_min_ns)
		slice = slice_min_ns;
	scx_bpf_dsq_insert_vtime(p, cpu, slice, vtime, enq_flags);
	waiting_set(cpu);
	stat_add(WC_ST_QUEUED, 1);
	perf_placed(p, tctx, cpu);

	/* Work conservation: an idle target runs it, else an idle CPU pulls it
	 * (slocal leaves it to the busy CPU's tick; smove to its timer). */
	if (cpu != here && scx_bpf_test_and_clear_cpu_idle(cpu)) {
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		goto out;
	}
	if (policy == WC_POLICY_NEST && warming(cpu)) {
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		goto out;
	}
	if (policy == WC_POLICY_SLOCAL)
		goto out;
	if (tctx && tctx->smove_pending)
		goto out;
	kick_idle_for(p, cpu);
out:
	prof_end(WC_PROF_ENQUEUE, t0);
}

void BPF_STRUCT_OPS(wc_dispatch, s32 cpu, struct task_struct *prev)
{
	u64 t0 = prof_start();
	struct cpu_ctx *c = cpu_ctx(cpu);
	u32 i;
	s32 src, hint;

	if (haiku_on()) {
		hk_dispatch(cpu);
		goto out;
	}
	/* A warmer that waited for long runs first, for at most a tick: the
	 * watchdog must see every runnable task run, even under overload. */
	if (c && c->warm_feed) {
		c->warm_feed = 0;
		c->warm_spin = 0;
		c->warm_ticks = nest_s_max_ticks;
		if (scx_bpf_dsq_move_to_local(WC_WARM_DSQ_BASE + cpu, 0))
			goto out;
	}

	if (scx_bpf_dsq_move_to_local(cpu, 0))
		goto out;
	waiting_clear(cpu);

	/* Pull: the hinted queue, then this die, then the others. */
	if (!work_waiting())
		goto warm;
	if (c) {
		hint = c->pull_hint;
		c->pull_hint = -1;
		if (hint != cpu && pull_from(hint))
			goto out;
	}
	/* Among the queues that may hold work (a stale bit is cleared as it
	 * is met), round-robin. A queue whose tasks may not run here stays
	 * marked: the tries are bounded, and a CPU those tasks may use is
	 * kicked when they are queued. */
	bpf_for(i, 0, WC_PULL_TRIES) {
		src = waiting_any(llc_cpus(cpu));
		if (!cpu_ok(src))
			break;
		if (src != cpu && pull_from(src))
			goto out;
	}
	bpf_for(i, 0, WC_PULL_TRIES) {
		src = waiting_any(NULL);
		if (!cpu_ok(src))
			break;
		if (src != cpu && pull_from(src))
			goto out;
	}

warm:
	/* Nest, section 3.2: a primary core left idle by a task
	 * that blocked is kept warm for up to S_max ticks. */
	if (warmers_on() && c && c->warmer_pid) {
		if (prev && prev->pid != c->warmer_pid && (prev->scx.flags & SCX_TASK_QUEUED))
			goto out;	/* prev keeps its CPU */
		if (c->warm_allowed && primary_has(cpu)) {
			c->warm_allowed = 0;
			c->warm_ticks = 0;
			c->warm_spin = 1;
			if (scx_bpf_dsq_move_to_local(WC_WARM_DSQ_BASE + cpu, 0))
				stat_add(WC_ST_WARM_SPINS, 1);
		}
	}
out:
	prof_end(WC_PROF_DISPATCH, t0);
}

void BPF_STRUCT_OPS(wc_running, struct task_struct *p)
{
	u64 t0 = prof_start(), now;
	s32 cpu = scx_bpf_task_cpu(p);
	struct cpu_ctx *c = cpu_ctx(cpu);
	struct task_ctx *tctx;

	if (haiku_on()) {
		if (c) {
			c->run_start = p->se.sum_exec_runtime;
			hk_running(p, cpu, c);
		}
		goto out;
	}
	if (time_before(vtime_now, p->scx.dsq_vtime))
		vtime_now = p->scx.dsq_vtime;
	/* The run is charged in stopping, on this same CPU: keeping its start
	 * here spares the hot path a task-storage lookup and a clock read. */
	if (c)
		c->run_start = p->se.sum_exec_runtime;
	if (policy == WC_POLICY_WARM && c)
		warm_join(cpu, c, now_ns());
	if (freq_steer && c) {
		/* The CPU was idle, the task was not running, until now. */
		perf_update(cpu, c, task_ctx(p), false, perf_keep(cpu));
		c->busy = 1;
	}
	if (policy != WC_POLICY_SMOVE && policy != WC_POLICY_NEST)
		goto out;

	tctx = task_ctx(p);
	if (tctx && tctx->smove_pending) {
		/* The stale-flag cancel: the timer callback will find it stale. */
		tctx->smove_pending = 0;
		stat_add(WC_ST_TIMERS_CANCELLED, 1);
	}
	if (policy != WC_POLICY_NEST)
		goto out;
	now = now_ns();
	if (tctx && !tctx->is_warmer) {
		if (tctx->hist[0] != cpu) {
			tctx->hist[1] = tctx->hist[0];
			tctx->hist[0] = cpu;
		} else {
			tctx->hist[1] = cpu;
		}
	}
	if (c) {
		c->claimed = 0;
		if (tctx && tctx->is_warmer) {
			c->warming = 1;
			c->warm_start = now;
			c->warm_last_run = now;
		} else {
			c->warming = 0;
			c->last_used = now;
			c->exited_here = 0;
		}
	}
out:
	prof_end(WC_PROF_RUNNING, t0);
}

void BPF_STRUCT_OPS(wc_stopping, struct task_struct *p, bool runnable)
{
	u64 t0 = prof_start(), now, used;
	s32 cpu = scx_bpf_task_cpu(p);
	struct cpu_ctx *c = cpu_ctx(cpu);
	struct task_ctx *tctx;

	if (!c)
		goto out;
	if (haiku_on()) {
		used = p->se.sum_exec_runtime - c->run_start;
		hk_stopping(p, cpu, c, runnable, used);
		goto out;
	}
	if (freq_steer) {
		tctx = task_ctx(p);
		now = now_ns();
		if (tctx)
			util_update(&tctx->util, &tctx->util_t, now, true);
		util_update(&c->util, &c->util_t, now, true);
		c->busy = 0;
		/* A task that sleeps takes its utilisation away (the fair class
		 * removes it at dequeue). */
		if (!runnable) {
			if (tctx)
				tctx->woke = 1;
			perf_update(cpu, c, NULL, false, perf_keep(cpu));
		}
	}
	if (policy == WC_POLICY_WARM) {
		/* The window counts from the end of the last run. */
		c->last_used = now_ns();
		c->warm_busy = 0;
	}
	if (policy == WC_POLICY_NEST) {
		tctx = task_ctx(p);
		now = now_ns();
		if (tctx && tctx->is_warmer) {
			c->warming = 0;
			c->warm_last_run = now;
			/* A spin keeps the core in use (section 3.2: it is kept warm
			 * because it is expected back soon): P_remove counts from its
			 * end, so that a core left by a task that blocked stays in the
			 * primary nest for up to S_max + P_remove ticks. Without this,
			 * a fork/wait chain whose links last about P_remove (as under
			 * emulation) finds its grandparent's core compacted at each
			 * fork and hops to another core. */
			if (c->warm_spin)
				c->last_used = now;
			c->warm_spin = 0;
			if (c->warm_start && now > c->warm_start)
				stat_add(WC_ST_WARM_NS, now - c->warm_start);
			c->warm_start = 0;
			goto out;
		}
		c->last_used = now;
		if (!runnable) {
			c->warm_allowed = 1;
			c->exited_here = !!(p->flags & PF_EXITING);
		}
	}
	/* Virtual time advances by the CPU time used, inversely to the weight. */
	used = p->se.sum_exec_runtime - c->run_start;
	p->scx.dsq_vtime += used * 100 / (p->scx.weight ? p->scx.weight : 100);
out:
	prof_end(WC_PROF_STOPPING, t0);
}

void BPF_STRUCT_OPS(wc_tick, struct task_struct *p)
{
	u64 t0 = prof_start();
	s32 cpu = scx_bpf_task_cpu(p);
	struct task_ctx *tctx = warmers_on() ? task_ctx(p) : NULL;
	struct cpu_ctx *c = cpu_ctx(cpu);
	s32 nq, i;
	u64 s;

	if (haiku_on()) {
		/* Quanta end by the quantum timer; the tick only steps the
		 * performance target, as Haiku does at its load updates. */
		if (freq_steer && c)
			hk_perf(cpu, c, task_ctx(p));
		goto out;
	}
	if (freq_steer && c)
		perf_update(cpu, c, tctx ? tctx : task_ctx(p), true, perf_keep(cpu));

	if (policy == WC_POLICY_WARM)
		warm_sweep(now_ns());

	/* smove samples the frequency at the tick (docs/model.md, S_move as patched). */
	if (policy == WC_POLICY_SMOVE && freq_source == WC_FREQ_KERNEL && c)
		c->perf_sample = scx_bpf_cpuperf_cur(cpu);

	if (tctx && tctx->is_warmer) {
		/* Spin at most S_max ticks, and never while any task waits. */
		if (c)
			c->warm_ticks++;
		if (!c || c->warm_ticks >= nest_s_max_ticks) {
			scx_bpf_task_set_slice(p, 0);
			goto out;
		}
		bpf_for(i, 0, WC_PULL_TRIES) {
			nq = waiting_any(NULL);
			if (!cpu_ok(nq))
				break;
			if (scx_bpf_dsq_nr_queued(nq) > 0) {
				scx_bpf_task_set_slice(p, 0);
				stat_add(WC_ST_WARM_PREEMPTED, 1);
				break;
			}
			waiting_clear(nq);
		}
		goto out;
	}

	/* The slice shrinks as more tasks wait; waiting work is offered to an
	 * idle CPU (for slocal this is the only balancing). */
	nq = scx_bpf_dsq_nr_queued(cpu);
	if (nq > 0) {
		s = slice_max_ns / (nq + 1);
		if (s < slice_min_ns)
			s = slice_min_ns;
		if (p->scx.slice > s)
			scx_bpf_task_set_slice(p, s);
		kick_idle_for(p, cpu);
	}
	/* A warmer waiting for long runs briefly: the watchdog must see it run. */
	if (c && c->warmer_pid && time_after(now_ns(), c->warm_last_run + WC_WARM_FEED_NS) &&
	    scx_bpf_dsq_nr_queued(WC_WARM_DSQ_BASE + cpu) > 0) {
		c->warm_feed = 1;
		scx_bpf_task_set_slice(p, 0);
	}
out:
	prof_end(WC_PROF_TICK, t0);
}

void BPF_STRUCT_OPS(wc_update_idle, s32 cpu, bool idle)
{
	struct bpf_cpumask *primary, *reserve;
	struct cpu_ctx *c;

	if (!idle || policy != WC_POLICY_NEST || !nest_exit_demote)
		return;
	c = cpu_ctx(cpu);
	if (!c || !c->exited_here)
		return;
	/* Section 3.1: a core left idle by a terminating task is demoted. */
	c->exited_here = 0;
	bpf_rcu_read_lock();
	primary = primary_mask;
	reserve = reserve_mask;
	if (primary && reserve)
		nest_demote(primary, reserve, cpu);
	bpf_rcu_read_unlock();
}

void BPF_STRUCT_OPS(wc_enable, struct task_struct *p)
{
	p->scx.dsq_vtime = vtime_now;
}

s32 BPF_STRUCT_OPS(wc_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	struct task_ctx *tctx;
	s32 pid = p->pid, *wcpu;

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
	if (haiku_on())
		hk_init_task(p, tctx);
	wcpu = bpf_map_lookup_elem(&warmers, &pid);
	if (wcpu && cpu_ok(*wcpu)) {
		struct cpu_ctx *c = cpu_ctx(*wcpu);

		tctx->is_warmer = 1;
		tctx->warmer_cpu = *wcpu;
		if (c) {
			c->warmer_pid = pid;
			c->warm_last_run = now_ns();
		}
	}
	return 0;
}

void BPF_STRUCT_OPS(wc_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	struct task_ctx *tctx = task_ctx(p);
	struct cpu_ctx *c;

	if (tctx && tctx->is_warmer) {
		c = cpu_ctx(tctx->warmer_cpu);
		if (c)
			c->warmer_pid = 0;
	}
	/* haiku: a thread that dies ready takes its load off its core. */
	if (tctx && haiku_on() && tctx->hk_ready && cpu_ok(tctx->hk_core)) {
		hk_load_add(tctx->hk_core, -tctx->hk_load, true);
		tctx->hk_ready = 0;
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
	struct smove_timer *t;
	struct feed_timer *ft;
	struct cpu_ctx *c;
	u32 key, i;
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
		if (haiku_on()) {
			err = hk_cpu_init(cpu);
			if (err)
				return err;
		}
		if (policy == WC_POLICY_SMOVE) {
			bpf_for(i, 0, WC_SMOVE_TIMERS) {
				key = cpu * WC_SMOVE_TIMERS + i;
				t = bpf_map_lookup_elem(&smove_timers, &key);
				if (!t)
					return -ENOENT;
				bpf_timer_init(&t->timer, &smove_timers, CLOCK_MONOTONIC);
				bpf_timer_set_callback(&t->timer, smove_timer_cb);
			}
		}
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

	if (warmers_on()) {
		key = 0;
		ft = bpf_map_lookup_elem(&feed_timers, &key);
		if (!ft)
			return -ENOENT;
		bpf_timer_init(&ft->timer, &feed_timers, CLOCK_MONOTONIC);
		bpf_timer_set_callback(&ft->timer, feed_timer_cb);
		bpf_timer_start(&ft->timer, WC_WARM_FEED_NS / 2, 0);
	}
	return 0;
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
