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
 *
 * haiku-low-latency and haiku-power-saving are Haiku's scheduler (Haiku's
 * scheduler, the blog post, and the constants of its source tree: see
 * docs/model.md, Haiku's scheduler on sched_ext) and replace the base: a
 * queue per core ordered by effective priority, a queue per CPU for pinned
 * threads, quanta bounded by a maximum latency, no pulling between cores.
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
const volatile bool freq_steer = false;		/* set performance targets (see "frequency") */

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
/* nest: 1 for each CPU in the primary nest, which the loader keeps warm
 * through PM QoS (--nest-warm pmqos). */
u8 in_primary[WC_MAX_CPUS];
u64 vtime_now;

#define WC_WARM_FEED_NS (1000ULL * 1000 * 1000)
/* Queues tried per pull (see wc_dispatch). */
#define WC_PULL_TRIES 8
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
	s32 fork_hint;		/* nest: the core to try for its next child */
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

/* nest: the warmer thread of each CPU, by thread id (filled before attach). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WC_MAX_CPUS);
	__type(key, s32);
	__type(value, s32);
} warmers SEC(".maps");

/*
 * smove: each pending move has a timer of its own, taken from its waker CPU's
 * WC_SMOVE_TIMERS. A timer is never cancelled (its callback may wait for the
 * run queue lock that the cancelling CPU holds): a task that runs first
 * clears its pending flag, and the callback finds it stale and frees the
 * timer. A CPU arms a new move only on a free timer.
 */
#define WC_SMOVE_TIMERS 8

struct smove_timer {
	struct bpf_timer timer;
	s32 pid;
	u32 gen;
	s32 target;
	s32 waker;
	u32 busy;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, WC_MAX_CPUS * WC_SMOVE_TIMERS);
	__type(key, u32);
	__type(value, struct smove_timer);
} smove_timers SEC(".maps");

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

/* nest: by CPU c, the CPUs numbered c and above, so that a search visits a
 * nest's members from its start CPU on (Nest, section 3.1) by taking those
 * at or above it, then those below. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, WC_MAX_CPUS);
	__type(key, u32);
	__type(value, struct mask_slot);
} from_masks SEC(".maps");

/* nest: two scratch masks per CPU (2c, 2c + 1), for the search it runs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * WC_MAX_CPUS);
	__type(key, u32);
	__type(value, struct mask_slot);
} scratch_masks SEC(".maps");

/* nest: the warmers' watchdog feed timer. */
struct feed_timer {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct feed_timer);
} feed_timers SEC(".maps");

/* nest: the primary and reserve nests, of any width. */
private(NEST) struct bpf_cpumask __kptr *primary_mask;
private(NEST) struct bpf_cpumask __kptr *reserve_mask;

/*
 * CPUs whose queue may hold waiting tasks: a CPU with nothing to run scans
 * the other queues only when one is set, so that going idle costs the same on
 * 4 CPUs as on 1024. A bit is set after each insert and cleared only by a
 * scan that finds the queue empty and checks again afterwards, so a queue
 * with work never goes unseen; a stale bit costs one scan.
 */
private(WAIT) struct bpf_cpumask __kptr *waiting_mask;

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

static __always_inline void waiting_set(s32 cpu)
{
	struct bpf_cpumask *m;

	bpf_rcu_read_lock();
	m = waiting_mask;
	if (m)
		bpf_cpumask_set_cpu(cpu, m);
	bpf_rcu_read_unlock();
}

/* @cpu's queue was found empty: clear its bit unless work came meanwhile. */
static __always_inline void waiting_clear(s32 cpu)
{
	struct bpf_cpumask *m;

	bpf_rcu_read_lock();
	m = waiting_mask;
	if (m && bpf_cpumask_test_cpu(cpu, (const struct cpumask *)m)) {
		bpf_cpumask_clear_cpu(cpu, m);
		if (scx_bpf_dsq_nr_queued(cpu) > 0)
			bpf_cpumask_set_cpu(cpu, m);
	}
	bpf_rcu_read_unlock();
}

/*
 * A CPU whose queue may hold waiting work, round-robin among them (within
 * @die if not NULL); an invalid CPU if none.
 */
static __always_inline s32 waiting_any(const struct cpumask *die)
{
	struct bpf_cpumask *m;
	s32 cpu = -1;

	bpf_rcu_read_lock();
	m = waiting_mask;
	if (m)
		cpu = die ? bpf_cpumask_any_and_distribute((const struct cpumask *)m, die)
			  : bpf_cpumask_any_distribute((const struct cpumask *)m);
	bpf_rcu_read_unlock();
	return cpu;
}

static __always_inline bool work_waiting(void)
{
	struct bpf_cpumask *m;
	bool r = true;

	bpf_rcu_read_lock();
	m = waiting_mask;
	if (m)
		r = !bpf_cpumask_empty((const struct cpumask *)m);
	bpf_rcu_read_unlock();
	return r;
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

/*
 * S_move's test: @cpu ran at or below its threshold at its last tick (S_move
 * as patched samples at the tick; a CPU that never ticked reads 0, at its
 * minimum). On the map, a CPU without a frequency is never low.
 */
static bool freq_low(s32 cpu)
{
	u32 key = cpu, *f, thr;
	struct cpu_ctx *c;

	if ((u32)cpu >= WC_MAX_CPUS)
		return false;
	if (freq_source == WC_FREQ_MAP) {
		thr = smove_threshold_khz[(u32)cpu & (WC_MAX_CPUS - 1)];
		f = bpf_map_lookup_elem(&freq_map, &key);
		return thr && f && *f && *f <= thr;
	}
	thr = smove_threshold_perf[(u32)cpu & (WC_MAX_CPUS - 1)];
	c = cpu_ctx(cpu);
	return thr && c && c->perf_sample <= thr;
}

/* A CPU idle as the kernel sees it, or (nest) only running its warmer. */
static __always_inline bool warming(s32 cpu)
{
	struct cpu_ctx *c = cpu_ctx(cpu);

	return c && c->warming;
}

/*
 * Kick a CPU that @p may use and that does nothing, so that it pulls waiting
 * work; prefer @hint's die. Returns the CPU or -1.
 */
static s32 kick_idle_for(struct task_struct *p, s32 from)
{
	struct cpu_ctx *c;
	s32 cpu;

	cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (cpu >= 0) {
		c = cpu_ctx(cpu);
		if (c)
			c->pull_hint = from;
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		stat_add(WC_ST_KICKS, 1);
		return cpu;
	}
	if (warmers_on()) {
		bpf_for(cpu, 0, nr_cpus) {
			if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
				continue;
			c = cpu_ctx(cpu);
			if (c && c->warming) {
				c->pull_hint = from;
				scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
				stat_add(WC_ST_KICKS, 1);
				return cpu;
			}
		}
	}
	return -1;
}

/* ------------------------------------------------------------ frequency */

/*
 * Once a sched_ext scheduler is enabled, schedutil asks each CPU for the
 * performance target the scheduler set (docs/model.md, sched_ext and
 * schedutil), and the kernel starts every target at the maximum. With
 * freq_steer, the target follows utilisation as the fair class computes it
 * (PELT: a running average of time busy, halving every 2^25 ns), a CPU's
 * being the larger of its own and its running task's, so that a task keeps
 * its history when it moves, and schedutil adds its usual headroom. Nest
 * keeps its primary cores at the maximum (Nest, section 3.2: the primary
 * nest is kept warm) and lets the others follow their utilisation.
 *
 * The average is kept here in periods of 2^15 ns, 2^10 of them to a
 * half-life, fine enough for the sub-millisecond runs of a fork/wait chain.
 */
#define WC_UTIL_PERIOD_SHIFT 15
#define WC_UTIL_HALF_LIFE_SHIFT 10
#define WC_UTIL_FULL (1ULL << 20)

/* 2^32 x 2^(-2^k / 2^10): the decay over 2^k periods. */
static const u64 util_decay_pow2[WC_UTIL_HALF_LIFE_SHIFT] = {
	0xffd3a752, 0xffa75652, 0xff4ecb59, 0xfe9e115c, 0xfd3e0c0d,
	0xfa83b2db, 0xf5257d15, 0xeac0c6e8, 0xd744fccb, 0xb504f334,
};

static __always_inline u64 util_decay(u64 v, u64 periods)
{
	u32 k;

	if ((periods >> WC_UTIL_HALF_LIFE_SHIFT) >= 32)
		return 0;
	v >>= periods >> WC_UTIL_HALF_LIFE_SHIFT;
	for (k = 0; k < WC_UTIL_HALF_LIFE_SHIFT; k++)
		if (periods & (1ULL << k))
			v = (v * util_decay_pow2[k]) >> 32;
	return v;
}

/* Bring @util from *@t to @now, busy (or not) all along. *@t advances by
 * whole periods, so that no time is lost to rounding. */
static __always_inline void util_update(u64 *util, u64 *t, u64 now, bool busy)
{
	u64 n;

	if (!*t || time_before(now, *t)) {
		*t = now;
		return;
	}
	n = (now - *t) >> WC_UTIL_PERIOD_SHIFT;
	if (!n)
		return;
	*t += n << WC_UTIL_PERIOD_SHIFT;
	if (busy)
		*util = WC_UTIL_FULL - util_decay(WC_UTIL_FULL - *util, n);
	else
		*util = util_decay(*util, n);
}

/* Changes of a target below this (of SCX_CPUPERF_ONE) are not passed on. */
#define WC_PERF_SLACK 8

/*
 * Set @cpu's target to @perf unless it is within WC_PERF_SLACK of the last
 * one set: each call runs the governor's update hook, and a change below a
 * frequency step changes nothing. The floor and the top always pass.
 */
static __always_inline void perf_set(s32 cpu, struct cpu_ctx *c, u32 perf)
{
	u32 last = c->perf_target;

	if (perf == last || (perf && perf < SCX_CPUPERF_ONE &&
			     perf + WC_PERF_SLACK > last && last + WC_PERF_SLACK > perf))
		return;
	c->perf_target = perf;
	scx_bpf_cpuperf_set(cpu, perf);
}

/*
 * @cpu's performance target: the maximum if @keep_max, else from its
 * utilisation and @tctx's (the task placed there or running there, or NULL),
 * brought to now. A task that just woke or was forked brings its
 * utilisation on top of the CPU's, as the fair class adds a task's to its
 * run queue's at enqueue, when schedutil is asked; a running task's counts
 * for at least its own.
 */
static void perf_update(s32 cpu, struct cpu_ctx *c, struct task_ctx *tctx, bool task_ran,
			bool keep_max)
{
	u64 u, now = now_ns();

	util_update(&c->util, &c->util_t, now, c->busy);
	u = c->util;
	if (tctx) {
		util_update(&tctx->util, &tctx->util_t, now, task_ran);
		if (tctx->woke) {
			tctx->woke = 0;
			u += tctx->util;
			if (u > WC_UTIL_FULL)
				u = WC_UTIL_FULL;
		} else if (tctx->util > u) {
			u = tctx->util;
		}
	}
	if (keep_max)
		u = WC_UTIL_FULL;
	perf_set(cpu, c, u * SCX_CPUPERF_ONE / WC_UTIL_FULL);
}

static bool primary_has(s32 cpu);

/* @p was placed on @cpu: schedutil, asked now, counts it there. */
static void perf_placed(struct task_struct *p, struct task_ctx *tctx, s32 cpu)
{
	struct cpu_ctx *c;

	if (!freq_steer || !cpu_ok(cpu) || !(c = cpu_ctx(cpu)))
		return;
	if (!tctx)
		tctx = task_ctx(p);
	perf_update(cpu, c, tctx, false, policy == WC_POLICY_NEST && primary_has(cpu));
}

/* ---------------------------------------------------------------- smove */

static int smove_timer_cb(void *map, int *key, struct smove_timer *t)
{
	struct task_struct *p, *q;
	struct task_ctx *tctx;
	s32 target = t->target;
	bool pending;

	p = bpf_task_from_pid(t->pid);
	if (!p) {
		t->busy = 0;
		return 0;
	}
	tctx = task_ctx(p);
	pending = tctx && tctx->smove_pending && tctx->smove_gen == t->gen;
	if (pending)
		tctx->smove_pending = 0;
	bpf_task_release(p);
	t->busy = 0;
	if (!pending || !cpu_ok(target) || !cpu_ok(t->waker))
		return 0;
	/* Not run on the waker's CPU within D: this task, still in the
	 * waker's queue, moves to the CPU the default selection chose. */
	stat_add(WC_ST_TIMERS_FIRED, 1);
	bpf_for_each(scx_dsq, q, t->waker, 0) {
		if (q->pid != t->pid)
			continue;
		if (bpf_cpumask_test_cpu(target, q->cpus_ptr) &&
		    scx_bpf_dsq_move(BPF_FOR_EACH_ITER, q, SCX_DSQ_LOCAL_ON | target, 0))
			stat_add(WC_ST_SMOVE_MOVED, 1);
		break;
	}
	return 0;
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

/* A free move timer of @waker's, taken; NULL if all are armed. */
static struct smove_timer *smove_timer_get(s32 waker)
{
	struct cpu_ctx *c = cpu_ctx(waker);
	struct smove_timer *t;
	u32 i, key;

	if (!c)
		return NULL;
	bpf_for(i, 0, WC_SMOVE_TIMERS) {
		key = waker * WC_SMOVE_TIMERS + (c->smove_next + i) % WC_SMOVE_TIMERS;
		t = bpf_map_lookup_elem(&smove_timers, &key);
		if (t && __sync_val_compare_and_swap(&t->busy, 0, 1) == 0) {
			c->smove_next = (c->smove_next + i + 1) % WC_SMOVE_TIMERS;
			return t;
		}
	}
	return NULL;
}

static s32 select_smove(struct task_struct *p, s32 prev, u64 wake_flags, bool *direct)
{
	s32 waker = bpf_get_smp_processor_id();
	struct smove_timer *t;
	struct task_ctx *tctx;
	s32 cfs;
	bool idle = false;

	cfs = peek_idle(p, prev, true);
	if (cfs >= 0 && cfs != waker && cpu_ok(waker) &&
	    (wake_flags & (SCX_WAKE_FORK | SCX_WAKE_TTWU)) &&
	    bpf_cpumask_test_cpu(waker, p->cpus_ptr) && !warming(waker)) {
		if (!freq_low(cfs)) {
			stat_add(WC_ST_SMOVE_FAST, 1);
			goto direct;
		}
		tctx = task_ctx(p);
		if (!tctx)
			goto direct;
		t = smove_timer_get(waker);
		if (!t) {
			stat_add(WC_ST_TIMERS_BUSY, 1);
			goto direct;
		}
		tctx->smove_gen++;
		tctx->smove_pending = 1;
		t->pid = p->pid;
		t->gen = tctx->smove_gen;
		t->target = cfs;
		t->waker = waker;
		if (bpf_timer_start(&t->timer, smove_delay_ns, 0)) {
			tctx->smove_pending = 0;
			t->busy = 0;
			goto direct;
		}
		stat_add(WC_ST_TIMERS_ARMED, 1);
		stat_add(WC_ST_WAKER_PLACED, 1);
		return waker;
	}
direct:
	if (cfs >= 0 && scx_bpf_test_and_clear_cpu_idle(cfs)) {
		*direct = true;
		return cfs;
	}
	cfs = scx_bpf_select_cpu_dfl(p, prev, wake_flags, &idle);
	*direct = idle;
	return cfs;
}

/* ---------------------------------------------------------------- nest */

static bool nest_claim_cpu(s32 cpu)
{
	struct cpu_ctx *c = cpu_ctx(cpu);

	if (!c)
		return false;
	if (c->warming) {
		/* The warmer gives the core up; only one placement may take it. */
		if (nest_claim && __sync_val_compare_and_swap(&c->claimed, 0, 1) != 0) {
			stat_add(WC_ST_NEST_CLAIM_LOST, 1);
			return false;
		}
		return true;
	}
	if (nest_claim) {
		/* The kernel's idle bit, cleared atomically: at most one task per core. */
		if (!scx_bpf_test_and_clear_cpu_idle(cpu))
			return false;
		return true;
	}
	return is_idle(cpu);
}

static bool nest_usable(s32 cpu)
{
	return is_idle(cpu) || (nest_warm && warming(cpu));
}

/* Demote @cpu from the primary nest: to the reserve if room, else out. */
static void nest_demote(struct bpf_cpumask *primary, struct bpf_cpumask *reserve, s32 cpu)
{
	if (!bpf_cpumask_test_and_clear_cpu(cpu, primary))
		return;
	__sync_fetch_and_sub(&nr_primary, 1);
	stat_add(WC_ST_NEST_DEMOTIONS, 1);
	if ((u32)cpu < WC_MAX_CPUS)
		in_primary[(u32)cpu & (WC_MAX_CPUS - 1)] = 0;
	if (freq_steer) {
		struct cpu_ctx *c = cpu_ctx(cpu);

		if (c)
			perf_update(cpu, c, NULL, false, false);
	}
	if (nest_reserve && nr_reserve < nest_r_max &&
	    !bpf_cpumask_test_and_set_cpu(cpu, reserve))
		__sync_fetch_and_add(&nr_reserve, 1);
}

static void nest_add_primary(struct bpf_cpumask *primary, struct bpf_cpumask *reserve, s32 cpu)
{
	u64 n;

	if (bpf_cpumask_test_and_clear_cpu(cpu, reserve)) {
		__sync_fetch_and_sub(&nr_reserve, 1);
		stat_add(WC_ST_NEST_PROMOTIONS, 1);
	}
	if (!bpf_cpumask_test_and_set_cpu(cpu, primary)) {
		n = __sync_fetch_and_add(&nr_primary, 1) + 1;
		if (n > max_primary)
			max_primary = n;
		if ((u32)cpu < WC_MAX_CPUS)
			in_primary[(u32)cpu & (WC_MAX_CPUS - 1)] = 1;
		if (freq_steer) {
			struct cpu_ctx *c = cpu_ctx(cpu);

			if (c)
				perf_set(cpu, c, SCX_CPUPERF_ONE);
		}
	}
}

/*
 * Try the CPUs of @set in number order, taking them out of it: compact the
 * primary nest's cores unused for P_remove ticks as they are met (section
 * 3.1), claim the first usable one. A core whose warmer spins counts as
 * idle, as the paper's spinning idle loop does (section 3.2).
 */
static __always_inline s32 nest_visit(struct bpf_cpumask *set, const struct cpumask *idle,
				      bool is_primary, u64 now)
{
	struct bpf_cpumask *primary = primary_mask, *reserve = reserve_mask;
	struct cpu_ctx *c;
	s32 cpu;
	u32 k;

	bpf_for(k, 0, nr_cpus) {
		cpu = bpf_cpumask_first((const struct cpumask *)set);
		if (!cpu_ok(cpu))
			break;
		bpf_cpumask_clear_cpu(cpu, set);
		c = cpu_ctx(cpu);
		if (!c || !(bpf_cpumask_test_cpu(cpu, idle) || (nest_warm && c->warming)))
			continue;
		/* last_used may be newer than @now (set on another CPU since). */
		if (is_primary && nest_compaction && !c->warming &&
		    time_after(now, c->last_used + nest_p_remove_ticks * tick_ns())) {
			if (primary && reserve)
				nest_demote(primary, reserve, cpu);
			stat_add(WC_ST_NEST_COMPACTIONS, 1);
			continue;
		}
		if (nest_claim_cpu(cpu))
			return cpu;
	}
	return -1;
}

/*
 * Search a nest for a usable core among its members only: @prev's die first
 * (section 3.1), then the other dies; within each, from @start on.
 */
static s32 nest_search(struct task_struct *p, s32 start, s32 prev, bool is_primary, u64 now)
{
	struct bpf_cpumask *primary, *reserve, *mask, *a, *b;
	const struct cpumask *idle, *die, *from;
	s32 here = bpf_get_smp_processor_id(), found = -1;
	u32 pass;

	idle = scx_bpf_get_idle_cpumask();
	bpf_rcu_read_lock();
	primary = primary_mask;
	reserve = reserve_mask;
	a = mask_at(&scratch_masks, 2 * (u32)here);
	b = mask_at(&scratch_masks, 2 * (u32)here + 1);
	die = llc_cpus(prev);
	from = (const struct cpumask *)mask_at(&from_masks, start);
	if (!primary || !reserve || !a || !b || !die || !from)
		goto out;
	mask = is_primary ? primary : reserve;
	for (pass = 0; pass < 2; pass++) {
		/* a: this pass's members the task may use. */
		bpf_cpumask_and(a, (const struct cpumask *)mask, p->cpus_ptr);
		if (nest_die_first) {
			bpf_cpumask_and(b, (const struct cpumask *)a, die);
			if (pass == 0)
				bpf_cpumask_copy(a, (const struct cpumask *)b);
			else
				bpf_cpumask_xor(a, (const struct cpumask *)a, (const struct cpumask *)b);
		} else if (pass == 1) {
			break;
		}
		/* b: those from @start on, visited first; a: those below. */
		bpf_cpumask_and(b, (const struct cpumask *)a, from);
		bpf_cpumask_xor(a, (const struct cpumask *)a, (const struct cpumask *)b);
		found = nest_visit(b, idle, is_primary, now);
		if (found < 0)
			found = nest_visit(a, idle, is_primary, now);
		if (found >= 0) {
			if (pass == 1)
				stat_add(WC_ST_NEST_OTHER_DIE, 1);
			break;
		}
	}
out:
	bpf_rcu_read_unlock();
	scx_bpf_put_idle_cpumask(idle);
	return found;
}

/* After a fork placed @p on @cpu from the parent's core @start. */
/*
 * The fork hint (not in the paper; --nest-no-fork-hint turns it off). A
 * child is first offered the core its parent's previous child went to or,
 * for a first child, the core its parent was forked from. When that core is
 * busy (a short task woke there), the child goes where the search finds room
 * and the busy core becomes the chain's home: the fork after next (the first
 * that does not start on the stand-in core) tries the home first, so that
 * the chain returns to its two cores instead of adopting a third. A hint may
 * be in either nest (a reserve core is promoted, as by the reserve search).
 */
static void fork_hint_set(struct task_struct *p, s32 start, s32 cpu, s32 busy)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct task_ctx *tctx = task_ctx(p), *ptctx = cur ? task_ctx(cur) : NULL;

	if (!tctx || !ptctx)
		return;
	tctx->fork_hint = start;
	if (cpu_ok(busy) && busy != cpu) {
		tctx->fork_home = -1;
		tctx->fork_home_next = busy;
		ptctx->fork_home = busy;
	} else {
		tctx->fork_home = ptctx->fork_home_next;
		tctx->fork_home_next = -1;
	}
	ptctx->fork_hint = cpu;
}

/* @h is a usable core of either nest for a child forked on @start, on
 * @start's die (the die comes first, section 3.1); claimed. */
static bool nest_hint_ok(struct task_struct *p, s32 h, s32 start,
			 struct bpf_cpumask *primary, struct bpf_cpumask *reserve)
{
	return cpu_ok(h) && h != start && bpf_cpumask_test_cpu(h, p->cpus_ptr) &&
	       (!nest_die_first || llc_of(h) == llc_of(start)) &&
	       (bpf_cpumask_test_cpu(h, (const struct cpumask *)primary) ||
		bpf_cpumask_test_cpu(h, (const struct cpumask *)reserve)) &&
	       nest_usable(h) && nest_claim_cpu(h);
}

/* The core the fork hint offers the child @p of the current task, claimed,
 * or -1; *@busy is the hint if it was busy. */
static s32 nest_fork_hint_pick(struct task_struct *p, s32 start, struct bpf_cpumask *primary,
			       struct bpf_cpumask *reserve, s32 *busy)
{
	struct task_ctx *ptctx = task_ctx(bpf_get_current_task_btf());
	s32 h;

	if (!ptctx)
		return -1;
	h = ptctx->fork_home;
	if (nest_hint_ok(p, h, start, primary, reserve)) {
		ptctx->fork_home = -1;
		return h;
	}
	h = ptctx->fork_hint;
	if (nest_hint_ok(p, h, start, primary, reserve))
		return h;
	if (cpu_ok(h) && h != start)
		*busy = h;
	return -1;
}

static s32 select_nest(struct task_struct *p, s32 prev, u64 wake_flags, bool *direct)
{
	struct bpf_cpumask *primary, *reserve;
	struct task_ctx *tctx = task_ctx(p);
	struct cpu_ctx *c;
	bool impatient = false, idle = false;
	s32 cpu = -1, start = prev, busy = -1;
	u64 now = now_ns();

	if (wake_flags & SCX_WAKE_FORK)
		start = bpf_get_smp_processor_id();	/* the parent's core */
	if (!cpu_ok(start))
		start = 0;

	bpf_rcu_read_lock();
	primary = primary_mask;
	reserve = reserve_mask;
	if (!primary || !reserve)
		goto fallback;

	/*
	 * Section 3.1: a wake-up that finds its previous core busy is a miss;
	 * R_impatient misses in a row make the task impatient, from this
	 * placement on. A wake-up to an idle previous core (attached or not)
	 * ends the run of misses.
	 */
	if (tctx && !(wake_flags & SCX_WAKE_FORK)) {
		if (cpu_ok(prev) && nest_usable(prev))
			tctx->impatience = 0;
		else
			tctx->impatience++;
	}
	if (tctx && nest_impatience && tctx->impatience >= nest_r_impatient)
		impatient = true;

	/*
	 * A fork: the parent's core, where the search starts (section 3.1), is
	 * busy with the parent. Try first the fork hint (see fork_hint_set):
	 * in a fork/wait chain, the core where the grandparent waits, still
	 * warm, so that the chain alternates between two cores as Nest intends
	 * for one task running at a time, instead of moving at each fork to
	 * the next core of the primary nest in CPU order.
	 */
	if ((wake_flags & SCX_WAKE_FORK) && nest_fork_hint) {
		cpu = nest_fork_hint_pick(p, start, primary, reserve, &busy);
		if (cpu >= 0) {
			nest_add_primary(primary, reserve, cpu);
			stat_add(WC_ST_NEST_FORK_HINT, 1);
			goto found;
		}
	}

	/* Section 3.3: the attached core first, even if compactable. */
	if (!impatient && tctx && nest_attach && tctx->hist[0] == tctx->hist[1] &&
	    cpu_ok(tctx->hist[0]) &&
	    bpf_cpumask_test_cpu(tctx->hist[0], (const struct cpumask *)primary) &&
	    bpf_cpumask_test_cpu(tctx->hist[0], p->cpus_ptr) &&
	    nest_usable(tctx->hist[0]) && nest_claim_cpu(tctx->hist[0])) {
		cpu = tctx->hist[0];
		c = cpu_ctx(cpu);
		if (c)
			c->last_used = now;
		stat_add(WC_ST_NEST_ATTACHED, 1);
		goto found;
	}

	if (!impatient) {
		cpu = nest_search(p, start, start, true, now);
		if (cpu >= 0) {
			stat_add(WC_ST_NEST_PRIMARY, 1);
			goto found;
		}
	}
	if (nest_reserve) {
		cpu = nest_search(p, nest_reserve_start, start, false, now);
		if (cpu >= 0) {
			nest_add_primary(primary, reserve, cpu);
			stat_add(WC_ST_NEST_RESERVE, 1);
			goto placed_new;
		}
	}

	/* Fall back to the default selection: the task's die, then (section
	 * 3.4) every die. */
	cpu = peek_idle(p, start, nest_wc_dies);
	if (cpu >= 0 && scx_bpf_test_and_clear_cpu_idle(cpu)) {
		stat_add(WC_ST_NEST_FALLBACK, 1);
		if (llc_of(cpu) != llc_of(start))
			stat_add(WC_ST_NEST_OTHER_DIE, 1);
		if (impatient || !nest_reserve) {
			nest_add_primary(primary, reserve, cpu);
		} else if (nr_reserve < nest_r_max &&
			   !bpf_cpumask_test_cpu(cpu, (const struct cpumask *)primary) &&
			   !bpf_cpumask_test_and_set_cpu(cpu, reserve)) {
			__sync_fetch_and_add(&nr_reserve, 1);
		}
		goto placed_new;
	}
	stat_add(WC_ST_NEST_NONE, 1);
	bpf_rcu_read_unlock();
	if (impatient && tctx)
		tctx->impatience = 0;
	return cpu_ok(prev) ? prev : start;

placed_new:
	if (impatient) {
		stat_add(WC_ST_NEST_IMPATIENT, 1);
		if (tctx)
			tctx->impatience = 0;
	}
found:
	bpf_rcu_read_unlock();
	if ((wake_flags & SCX_WAKE_FORK) && nest_fork_hint)
		fork_hint_set(p, start, cpu, busy);
	c = cpu_ctx(cpu);
	if (c) {
		c->last_used = now;
		if (c->warming)
			scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	}
	*direct = true;
	return cpu;

fallback:
	bpf_rcu_read_unlock();
	cpu = scx_bpf_select_cpu_dfl(p, prev, wake_flags, &idle);
	*direct = idle;
	return cpu;
}

/* ---------------------------------------------------------------- haiku */

/*
 * Haiku's scheduler (docs/model.md, Haiku's scheduler on sched_ext). Times
 * are in ns here, in us in Haiku's tree; the ratios are the same.
 */
#define HK_US 1000ULL
#define HK_MAX_LOAD 1000
#define HK_LOAD_INTERVAL (1000 * HK_US)
#define HK_TARGET_LOAD 550
#define HK_MEDIUM_LOAD 625
#define HK_HIGH_LOAD 700
#define HK_VERY_HIGH_LOAD 850
#define HK_LOAD_DIFFERENCE 200
#define HK_CACHE_EXPIRE (100000 * HK_US)
#define HK_NORMAL_PRIO 10		/* B_NORMAL_PRIORITY */
#define HK_URGENT_DISPLAY_PRIO 20	/* B_URGENT_DISPLAY_PRIORITY */
/* Beyond this many ready threads per CPU the latency bound is dropped. */
#define HK_QUANTUM_COUNTS 20
#define HK_SCHED_IDLE 5			/* Linux's SCHED_IDLE policy */
/* DSQ order: effective priority first (highest first), then arrival. */
#define HK_PRIO_SHIFT 56
#define HK_PRIO_TOP 128
#define HK_SEQ_MID (1ULL << 55)
#define HK_SEQ_MASK ((1ULL << HK_PRIO_SHIFT) - 1)

/* power saving: the core small tasks are packed on, -1 none yet. */
s32 hk_small_core = -1;
/* Arrival order in the queues: at the back counts up from HK_SEQ_MID, at
 * the front (a thread put back before its quantum ended) down from it. */
u64 hk_seq_back, hk_seq_front;

/* The quantum timer of each CPU (Haiku's cpu->quantum_timer). Never
 * cancelled: a run's stopping makes it stale (see wc_stopping). */
struct hk_timer {
	struct bpf_timer timer;
	u32 gen;
	s32 cpu;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, WC_MAX_CPUS);
	__type(key, u32);
	__type(value, struct hk_timer);
} hk_timers SEC(".maps");

/* Idle cores per package (die), counted by low latency's core choice. */
struct hk_pkg_count {
	u16 idle[WC_MAX_CPUS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct hk_pkg_count);
} hk_pkg_scratch SEC(".maps");

static __always_inline bool haiku_on(void)
{
	return policy == WC_POLICY_HAIKU_LOW_LATENCY || policy == WC_POLICY_HAIKU_POWER_SAVING;
}

static __always_inline bool hk_ps(void)
{
	return policy == WC_POLICY_HAIKU_POWER_SAVING;
}

/* Each mode's constants (Haiku's low_latency.cpp and power_saving.cpp). */
static __always_inline u64 hk_base_quantum(void)
{
	return (hk_ps() ? 2000 : 1000) * HK_US;
}

static __always_inline u64 hk_minimal_quantum(void)
{
	return (hk_ps() ? 500 : 100) * HK_US;
}

static __always_inline u64 hk_max_latency(void)
{
	return (hk_ps() ? 20000 : 5000) * HK_US;
}

static __always_inline u32 hk_core_of(s32 cpu)
{
	return cpu_core[(u32)cpu & (WC_MAX_CPUS - 1)];
}

static __always_inline u32 hk_next_sibling(u32 cpu)
{
	struct cpu_ctx *c = cpu_ctx(cpu);

	return c ? c->hk_next : cpu;
}

/*
 * Linux nice onto Haiku's base priorities: nice 0 is B_NORMAL_PRIORITY
 * (10); nice -1 to -20 rise to B_URGENT_DISPLAY_PRIORITY (20), two nice
 * levels a step; nice 1 to 19 fall to B_LOWEST_ACTIVE_PRIORITY (1), about
 * two a step; SCHED_IDLE is 1. Haiku's real-time priorities (100 and up)
 * belong to Linux's RT class, which sched_ext does not schedule.
 */
static u8 hk_base_prio(const struct task_struct *p)
{
	s32 nice = p->static_prio - 120;

	if (p->policy == HK_SCHED_IDLE)
		return 1;
	if (nice < -20)
		nice = -20;
	if (nice > 19)
		nice = 19;
	if (nice <= 0)
		return HK_NORMAL_PRIO - nice / 2;
	return HK_NORMAL_PRIO - (nice * 9 + 18) / 19;
}

/* The quantum of an effective priority (ThreadData::ComputeQuantumLengths):
 * the base quantum at 20 and above, x the first multiplier at 10, x the
 * second at 0, linear in between. */
static u64 hk_prio_quantum(u32 prio)
{
	u64 q0 = hk_base_quantum();
	u64 q1 = q0 * (hk_ps() ? 3 : 2), q2 = q0 * (hk_ps() ? 10 : 5);

	if (prio >= HK_URGENT_DISPLAY_PRIO)
		return q0;
	if (prio > HK_NORMAL_PRIO)
		return q1 - (q1 - q0) * (prio - HK_NORMAL_PRIO) / (HK_URGENT_DISPLAY_PRIO - HK_NORMAL_PRIO);
	return q2 - (q2 - q1) * prio / HK_NORMAL_PRIO;
}

/*
 * The effective priority, kept and recomputed only when a penalty changes
 * (Haiku's scheduler, on the profiler's findings): the base priority minus
 * the penalty, minus the cycling penalty modulo that, so that it cycles
 * from base - penalty down to 1 and back, one step a run.
 */
static __always_inline void hk_compute_eff(struct task_ctx *t)
{
	s32 e = (s32)t->hk_base - t->hk_penalty;

	if (e > 0)
		e -= t->hk_add_penalty % (u32)e;
	t->hk_eff = e > 0 ? e : 1;
}

/* A quantum used up raises the penalty, down to a floor of a fifth of the
 * base priority (ThreadData::_IncreasePenalty). */
static __always_inline void hk_increase_penalty(struct task_ctx *t)
{
	s32 floor = t->hk_base / 5;

	if (floor < 1)
		floor = 1;
	if ((s32)t->hk_base - t->hk_penalty > floor)
		t->hk_penalty++;
	hk_compute_eff(t);
}

/*
 * A core's load, per CPU, 0..1000 (CoreEntry::GetLoad), after closing the
 * measurement interval if 1 ms has passed: the threads that slept during
 * the last interval then stop counting. The high-load set has hysteresis:
 * in above "high", out below "medium".
 */
static s64 hk_core_load(s32 core)
{
	struct cpu_ctx *c = cpu_ctx(core);
	u64 now = now_ns();
	s64 raw;
	u64 l;

	if (!c)
		return 0;
	if (time_after(now, c->hk_load_t + HK_LOAD_INTERVAL)) {
		c->hk_load = c->hk_cur_load;
		c->hk_epoch++;
		c->hk_load_t = now;
	}
	raw = c->hk_load;
	l = raw > 0 ? (u64)raw / (c->hk_ncpus ? c->hk_ncpus : 1) : 0;
	if (l > HK_MAX_LOAD)
		l = HK_MAX_LOAD;
	if (l > HK_HIGH_LOAD)
		c->hk_high = 1;
	else if (l < HK_MEDIUM_LOAD)
		c->hk_high = 0;
	return l;
}

/* Add @v to @core's current load, and to its interval's load if @both. */
static __always_inline void hk_load_add(s32 core, s64 v, bool both)
{
	struct cpu_ctx *c = cpu_ctx(core);

	if (!c || !v)
		return;
	__sync_fetch_and_add(&c->hk_cur_load, v);
	if (both)
		__sync_fetch_and_add(&c->hk_load, v);
}

/*
 * The thread's needed load (compute_load of Haiku's load_tracking.h): the
 * share of its available time it ran, measured once at least 1 ms of it
 * has passed, averaged with the past by the number of intervals; its
 * core's load follows.
 */
static void hk_compute_load(struct task_ctx *t)
{
	u64 dt, n;
	s64 old = t->hk_load, nl;

	if (!t->hk_last_measure) {
		t->hk_last_measure = t->hk_avail;
		return;
	}
	dt = t->hk_avail - t->hk_last_measure;
	if (dt < HK_LOAD_INTERVAL)
		return;
	nl = t->hk_active * HK_MAX_LOAD / dt;
	if (nl > HK_MAX_LOAD)
		nl = HK_MAX_LOAD;
	t->hk_active = 0;
	t->hk_last_measure = t->hk_avail;
	n = (dt + HK_LOAD_INTERVAL / 4) / HK_LOAD_INTERVAL;
	if (n > 10)
		t->hk_load = nl;
	else
		t->hk_load = (t->hk_load + nl * ((1 << n) - 1)) >> n;
	if (t->hk_ready && cpu_ok(t->hk_core))
		hk_load_add(t->hk_core, t->hk_load - old, true);
}

/* Move the thread's load to @core (ThreadData::ChooseCoreAndCPU). */
static void hk_set_core(struct task_ctx *t, s32 core)
{
	struct cpu_ctx *c = cpu_ctx(core);

	if (t->hk_core == core || !c)
		return;
	if (t->hk_ready && cpu_ok(t->hk_core))
		hk_load_add(t->hk_core, -t->hk_load, true);
	t->hk_epoch = c->hk_epoch - 1;
	if (t->hk_ready)
		hk_load_add(core, t->hk_load, true);
	t->hk_core = core;
}

/* All of @core's CPUs are allowed to @p (a core's queue serves them all). */
static bool hk_core_allowed(const struct task_struct *p, s32 core)
{
	u32 cpu = core, i;

	if (p->nr_cpus_allowed >= nr_cpus)
		return true;
	bpf_for(i, 0, WC_MAX_SMT) {
		if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			return false;
		cpu = hk_next_sibling(cpu);
		if (cpu == (u32)core)
			break;
	}
	return true;
}

/* Every CPU of @core is idle. */
static bool hk_core_idle(s32 core, const struct cpumask *idle)
{
	u32 cpu = core, i;

	bpf_for(i, 0, WC_MAX_SMT) {
		if (!bpf_cpumask_test_cpu(cpu, idle))
			return false;
		cpu = hk_next_sibling(cpu);
		if (cpu == (u32)core)
			break;
	}
	return true;
}

/*
 * The least loaded core @p may use among the cores below the high-load set,
 * else among those in it (Haiku's two core heaps); with @most, the most
 * loaded below it (power saving's small task core, whatever @p may use).
 * -1 if none.
 */
static s32 hk_pick_core(const struct task_struct *p, bool most)
{
	s32 cpu, best = -1, best_high = -1;
	s64 l, bl = 0, bhl = 0;
	bool high;

	bpf_for(cpu, 0, nr_cpus) {
		if (hk_core_of(cpu) != (u32)cpu)
			continue;
		if (!most && !hk_core_allowed(p, cpu))
			continue;
		l = hk_core_load(cpu);
		high = false;
		{
			struct cpu_ctx *c = cpu_ctx(cpu);

			high = c && c->hk_high;
		}
		if (high) {
			if (!most && (best_high < 0 || l < bhl)) {
				best_high = cpu;
				bhl = l;
			}
			continue;
		}
		if (best < 0 || (most ? l > bl : l < bl)) {
			best = cpu;
			bl = l;
		}
	}
	return best >= 0 ? best : best_high;
}

/*
 * Low latency's core choice (low_latency.cpp, choose_core): an idle core of
 * a package all idle, else of the package with the most idle cores, else
 * the least loaded core. Packages are dies (last-level caches) here.
 */
static s32 hk_ll_choose_core(const struct task_struct *p)
{
	const struct cpumask *idle, *die;
	struct hk_pkg_count *pc;
	u32 key = 0, d;
	s32 cpu, best = -1, score, best_score = -1;

	pc = bpf_map_lookup_elem(&hk_pkg_scratch, &key);
	if (!pc)
		return hk_pick_core(p, false);
	idle = scx_bpf_get_idle_cpumask();
	bpf_for(cpu, 0, nr_cpus) {
		if (hk_core_of(cpu) == (u32)cpu)
			pc->idle[llc_of(cpu) & (WC_MAX_CPUS - 1)] = 0;
	}
	bpf_for(cpu, 0, nr_cpus) {
		if (hk_core_of(cpu) == (u32)cpu && hk_core_idle(cpu, idle))
			pc->idle[llc_of(cpu) & (WC_MAX_CPUS - 1)]++;
	}
	bpf_for(cpu, 0, nr_cpus) {
		if (hk_core_of(cpu) != (u32)cpu || !hk_core_idle(cpu, idle) || !hk_core_allowed(p, cpu))
			continue;
		d = llc_of(cpu) & (WC_MAX_CPUS - 1);
		die = llc_cpus(cpu);
		score = pc->idle[d];
		if (die && bpf_cpumask_subset(die, idle))
			score += WC_MAX_CPUS;	/* a whole idle package first */
		if (score > best_score) {
			best = cpu;
			best_score = score;
		}
	}
	scx_bpf_put_idle_cpumask(idle);
	return best >= 0 ? best : hk_pick_core(p, false);
}

/* Power saving's small task core (power_saving.cpp): chosen once, the most
 * loaded core below the high-load set, and kept. */
static s32 hk_small_task_core(const struct task_struct *p)
{
	s32 core = hk_pick_core(p, true), old;

	if (core < 0)
		return hk_small_core;
	old = __sync_val_compare_and_swap(&hk_small_core, -1, core);
	return old < 0 ? core : old;
}

/* Power saving's core choice: pack on the small task core unless the
 * thread would take it to "high"; then the least loaded core. (Haiku's next
 * step, an idle core of the least idle package, is reached only when every
 * core is in the high-load set, which has no idle core.) */
static s32 hk_ps_choose_core(const struct task_struct *p, struct task_ctx *t)
{
	s32 core = hk_small_task_core(p);

	if (cpu_ok(core) && hk_core_allowed(p, core) && hk_core_load(core) + t->hk_load < HK_HIGH_LOAD) {
		stat_add(WC_ST_HAIKU_SMALL_CORE, 1);
		return core;
	}
	return hk_pick_core(p, false);
}

/* Low latency's rebalance: move to the least loaded core only if it is
 * lighter by more than the load difference, and by the thread's load. */
static s32 hk_ll_rebalance(const struct task_struct *p, struct task_ctx *t)
{
	s32 core = t->hk_core, other = hk_pick_core(p, false);
	struct cpu_ctx *c = cpu_ctx(core);
	s64 cl, ol, diff;

	if (other < 0 || other == core || !c)
		return core;
	cl = hk_core_load(core);
	ol = hk_core_load(other);
	if (ol + HK_LOAD_DIFFERENCE >= cl)
		return core;
	diff = cl - ol - HK_LOAD_DIFFERENCE;
	return diff >= t->hk_load / (c->hk_ncpus ? c->hk_ncpus : 1) ? other : core;
}

/* Power saving's rebalance: move load off a core above "high"; a core
 * below "medium" sends its small tasks to the small task core. */
static s32 hk_ps_rebalance(const struct task_struct *p, struct task_ctx *t)
{
	s32 core = t->hk_core, other, small;
	struct cpu_ctx *c = cpu_ctx(core);
	s64 cl, tl;

	if (!c)
		return core;
	cl = hk_core_load(core);
	tl = t->hk_load / (c->hk_ncpus ? c->hk_ncpus : 1);
	if (cl > HK_HIGH_LOAD) {
		if (hk_small_core == core) {
			hk_small_core = -1;
			small = hk_small_task_core(p);
			if (tl > cl / 3 || !cpu_ok(small) || !hk_core_allowed(p, small))
				return core;
			return cl > HK_VERY_HIGH_LOAD ? small : core;
		}
		if (tl >= cl / 2)
			return core;
		other = hk_pick_core(p, false);
		if (other < 0)
			return core;
		return (cl - tl) - (hk_core_load(other) + tl) >= HK_LOAD_DIFFERENCE / 2 ? other : core;
	}
	if (cl >= HK_MEDIUM_LOAD)
		return core;
	small = hk_small_task_core(p);
	if (!cpu_ok(small) || !hk_core_allowed(p, small))
		return core;
	return hk_core_load(small) + tl < HK_HIGH_LOAD ? small : core;
}

/* The cache is cold: low latency counts the core's active time since the
 * thread slept, power saving the time (has_cache_expired of each mode). */
static bool hk_cache_expired(struct task_ctx *t)
{
	struct cpu_ctx *c;

	if (hk_ps())
		return t->hk_went_sleep && now_ns() - t->hk_went_sleep > HK_CACHE_EXPIRE;
	c = cpu_ctx(t->hk_core);
	return t->hk_went_sleep_active && c && c->hk_active_ns - t->hk_went_sleep_active > HK_CACHE_EXPIRE;
}

/* The CPU of @core to run the thread (ThreadData::_ChooseCPU): @prev if it
 * runs something of lower priority, else the CPU with the lowest. */
static s32 hk_choose_cpu(const struct task_struct *p, struct task_ctx *t, s32 core, s32 prev)
{
	u32 cpu = core, i, prio, best_prio = 0;
	s32 best = -1;
	struct cpu_ctx *c;

	if (cpu_ok(prev) && hk_core_of(prev) == (u32)core && bpf_cpumask_test_cpu(prev, p->cpus_ptr) &&
	    (c = cpu_ctx(prev)) && c->hk_prio < t->hk_eff)
		return prev;
	bpf_for(i, 0, WC_MAX_SMT) {
		c = cpu_ctx(cpu);
		prio = c ? c->hk_prio : 0;
		if (bpf_cpumask_test_cpu(cpu, p->cpus_ptr) && (best < 0 || prio < best_prio)) {
			best = cpu;
			best_prio = prio;
		}
		cpu = hk_next_sibling(cpu);
		if (cpu == (u32)core)
			break;
	}
	return best >= 0 ? best : core;
}

/* The quantum of the thread about to run on @cpu (ThreadData::
 * ComputeQuantum): its priority's, bounded by the maximum latency divided
 * by the ready threads per CPU of the core (those queued and those running,
 * CoreEntry::ThreadCount), never below the minimal one. */
static u64 hk_quantum(struct task_ctx *t, s32 cpu)
{
	u32 core = hk_core_of(cpu), sib = core, i;
	struct cpu_ctx *c = cpu_ctx(core), *sc;
	u64 q = hk_prio_quantum(t->hk_eff), lat;
	s32 n;

	n = scx_bpf_dsq_nr_queued(WC_CORE_DSQ_BASE + core) + scx_bpf_dsq_nr_queued(cpu);
	bpf_for(i, 0, WC_MAX_SMT) {
		sc = cpu_ctx(sib);
		if (sc && sc->hk_prio)
			n++;
		sib = hk_next_sibling(sib);
		if (sib == core)
			break;
	}
	if (c && c->hk_ncpus > 1)
		n /= (s32)c->hk_ncpus;
	if (n < HK_QUANTUM_COUNTS) {
		lat = hk_max_latency() / (n > 0 ? n : 1);
		if (lat < hk_minimal_quantum())
			lat = hk_minimal_quantum();
		if (q > lat)
			q = lat;
	}
	return q;
}

/* What is left of the quantum, from the part already used (GetQuantumLeft). */
static u64 hk_quantum_left(struct task_ctx *t, s32 cpu)
{
	u64 q = hk_quantum(t, cpu);

	q = q > t->hk_time_used ? q - t->hk_time_used : 0;
	return q > hk_minimal_quantum() ? q : hk_minimal_quantum();
}

/* After a run of @ran ns: has the quantum ended (HasQuantumEnded)? A
 * remainder under half the minimal quantum ends it too. An ended quantum
 * raises both penalties and starts the next from nothing. */
static bool hk_quantum_ended(struct task_ctx *t, s32 cpu, u64 ran)
{
	u64 q = hk_quantum(t, cpu);

	t->hk_time_used += ran;
	if (t->hk_time_used + hk_minimal_quantum() / 2 < q)
		return false;
	t->hk_add_penalty++;
	hk_increase_penalty(t);
	t->hk_time_used = 0;
	stat_add(WC_ST_HAIKU_QUANTUM_END, 1);
	return true;
}

/*
 * CPU performance (CPUEntry::_RequestPerformanceLevel): steps toward the
 * load "target" (550): down by (550 - load) x 550 / 1000 of the range when
 * below, up by (load - 550) x 450 / 1000 above, the load being the larger of
 * the thread's and its core's.
 */
static void hk_perf(s32 cpu, struct cpu_ctx *c, struct task_ctx *t)
{
	s64 load = hk_core_load(hk_core_of(cpu)), cur = c->perf_target, d;

	if (t && t->hk_load > load)
		load = t->hk_load;
	if (load < HK_TARGET_LOAD) {
		d = (HK_TARGET_LOAD - load) * HK_TARGET_LOAD / HK_MAX_LOAD;
		cur -= d * SCX_CPUPERF_ONE / HK_MAX_LOAD;
	} else {
		d = (load - HK_TARGET_LOAD) * (HK_MAX_LOAD - HK_TARGET_LOAD) / HK_MAX_LOAD;
		cur += d * SCX_CPUPERF_ONE / HK_MAX_LOAD;
	}
	if (cur < 0)
		cur = 0;
	if (cur > SCX_CPUPERF_ONE)
		cur = SCX_CPUPERF_ONE;
	perf_set(cpu, c, cur);
}

static int hk_timer_cb(void *map, int *key, struct hk_timer *t)
{
	u64 t0 = prof_start();
	struct cpu_ctx *c = cpu_ctx(t->cpu);

	/* The run it was armed for still goes on: its quantum is over. */
	if (c && c->hk_qgen == t->gen && c->hk_prio) {
		scx_bpf_kick_cpu(t->cpu, SCX_KICK_PREEMPT);
		stat_add(WC_ST_HAIKU_TIMER, 1);
	}
	prof_end(WC_PROF_QUANTUM_TIMER, t0);
	return 0;
}

/* The DSQ order key: higher effective priority first, then arrival (at the
 * front for a thread put back before its quantum ended). */
static __always_inline u64 hk_key(struct task_ctx *t, bool front)
{
	u64 seq = front ? HK_SEQ_MID - 1 - __sync_fetch_and_add(&hk_seq_front, 1)
			: HK_SEQ_MID + __sync_fetch_and_add(&hk_seq_back, 1);

	return ((u64)(HK_PRIO_TOP - t->hk_eff) << HK_PRIO_SHIFT) | (seq & HK_SEQ_MASK);
}

/*
 * Haiku's enqueue (scheduler.cpp): a pinned thread goes to its CPU's queue;
 * a thread put back before its quantum ended to the front of its core's
 * queue; one whose quantum ended, or that wakes with its cache warm, goes
 * through the mode's rebalance; a new thread, or one whose cache is cold,
 * through the mode's core choice. Then a CPU of the core, preempted if it
 * runs something of lower priority.
 */
static void hk_enqueue(struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *t = task_ctx(p);
	s32 cpu = scx_bpf_task_cpu(p), core, target;
	bool wake = enq_flags & SCX_ENQ_WAKEUP, front = false;
	u64 now = now_ns(), dsq, slept;
	struct cpu_ctx *tc;

	if (!t || !cpu_ok(cpu)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, hk_minimal_quantum(), enq_flags);
		return;
	}
	/* A thread that slept for more than half a base quantum loses its
	 * penalty (ShouldCancelPenalty). */
	if (!t->hk_ready && t->hk_went_sleep && now - t->hk_went_sleep > hk_base_quantum() / 2 &&
	    t->hk_penalty) {
		t->hk_penalty = 0;
		hk_compute_eff(t);
	}

	if (p->nr_cpus_allowed == 1 || (!wake && p->migration_disabled)) {
		/* (A task preempted with migration disabled must stay.) */
		target = cpu;
		core = hk_core_of(cpu);
		dsq = cpu;
		stat_add(WC_ST_HAIKU_PINNED, 1);
	} else {
		bool known = cpu_ok(t->hk_core) && hk_core_allowed(p, t->hk_core);

		if (known && !wake && !t->hk_back) {
			core = t->hk_core;
			front = true;
		} else if (known && (!wake || !hk_cache_expired(t))) {
			core = hk_ps() ? hk_ps_rebalance(p, t) : hk_ll_rebalance(p, t);
			if (core != t->hk_core)
				stat_add(WC_ST_HAIKU_MOVED, 1);
			if (wake)
				stat_add(WC_ST_HAIKU_WARM, 1);
		} else {
			core = hk_ps() ? hk_ps_choose_core(p, t) : hk_ll_choose_core(p);
			if (wake)
				stat_add(WC_ST_HAIKU_COLD, 1);
		}
		if (!cpu_ok(core))
			core = hk_core_of(cpu);
		target = hk_choose_cpu(p, t, core, cpu);
		dsq = WC_CORE_DSQ_BASE + core;
	}
	t->hk_back = 0;
	hk_set_core(t, core);
	if (!t->hk_ready) {
		/* It becomes ready: its load counts on its core again, and the
		 * time it slept was available to it. */
		tc = cpu_ctx(core);
		hk_load_add(core, t->hk_load, !tc || tc->hk_epoch != t->hk_epoch);
		t->hk_ready = 1;
		slept = t->hk_went_sleep && now > t->hk_went_sleep ? now - t->hk_went_sleep : 0;
		if (slept) {
			t->hk_avail += slept;
			hk_compute_load(t);
		}
	}

	if (enq_flags & SCX_ENQ_LAST) {
		/* Nothing else wants this CPU: the thread goes on (Haiku's
		 * ChooseNextThread keeps the old thread when it is alone). */
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, hk_quantum_left(t, cpu), enq_flags);
		return;
	}
	scx_bpf_dsq_insert_vtime(p, dsq, hk_quantum_left(t, target), hk_key(t, front), enq_flags);

	/* Reschedule the CPU chosen if it idles or runs a lower priority. */
	tc = cpu_ctx(target);
	if (!tc)
		return;
	if (scx_bpf_test_and_clear_cpu_idle(target)) {
		scx_bpf_kick_cpu(target, SCX_KICK_IDLE);
	} else if (tc->hk_prio && tc->hk_prio < t->hk_eff) {
		scx_bpf_kick_cpu(target, SCX_KICK_PREEMPT);
		stat_add(WC_ST_HAIKU_PREEMPT, 1);
	}
}

/* The queue head's key of @dsq, ~0 if empty. */
static __always_inline u64 hk_head_key(u64 dsq)
{
	struct task_struct *q;
	u64 k = ~0ULL;

	bpf_for_each(scx_dsq, q, dsq, 0) {
		k = q->scx.dsq_vtime;
		break;
	}
	return k;
}

/* The higher priority of the CPU's pinned queue and its core's queue
 * (CPUEntry::ChooseNextThread). A CPU never takes another core's threads. */
static void hk_dispatch(s32 cpu)
{
	u64 core_dsq = WC_CORE_DSQ_BASE + hk_core_of(cpu);

	if (hk_head_key(cpu) <= hk_head_key(core_dsq)) {
		if (scx_bpf_dsq_move_to_local(cpu, 0))
			return;
	}
	if (!scx_bpf_dsq_move_to_local(core_dsq, 0))
		scx_bpf_dsq_move_to_local(cpu, 0);
}

/* About to run: the quantum left, recomputed from what it used (the
 * post's stricter time slices), and the quantum timer armed for it. */
static void hk_running(struct task_struct *p, s32 cpu, struct cpu_ctx *c)
{
	struct task_ctx *t = task_ctx(p);
	struct hk_timer *ht;
	u32 key = cpu;
	u64 q;

	if (!t)
		return;
	c->hk_prio = t->hk_eff;
	c->hk_qgen++;
	q = hk_quantum_left(t, cpu);
	scx_bpf_task_set_slice(p, q);
	ht = bpf_map_lookup_elem(&hk_timers, &key);
	if (ht) {
		ht->gen = c->hk_qgen;
		ht->cpu = cpu;
		bpf_timer_start(&ht->timer, q, 0);
	}
	if (freq_steer)
		hk_perf(cpu, c, t);
}

/* A run of @ran ns ended: activity, load, the quantum, and (if it sleeps)
 * what its wake-up needs (ThreadData::Continues and GoesAway). */
static void hk_stopping(struct task_struct *p, s32 cpu, struct cpu_ctx *c, bool runnable, u64 ran)
{
	struct task_ctx *t = task_ctx(p);
	struct cpu_ctx *cc;

	c->hk_qgen++;	/* this run's quantum timer is stale */
	c->hk_prio = 0;
	if (!t)
		return;
	cc = cpu_ctx(hk_core_of(cpu));
	if (cc)
		__sync_fetch_and_add(&cc->hk_active_ns, ran);
	t->hk_avail += ran;
	t->hk_active += ran;
	if (runnable) {
		hk_compute_load(t);
		t->hk_back = hk_quantum_ended(t, cpu, ran);
		return;
	}
	if (!hk_quantum_ended(t, cpu, ran)) {
		/* A thread that blocks within its quantum cycles too. */
		t->hk_add_penalty++;
		hk_compute_eff(t);
	}
	t->hk_went_sleep = now_ns();
	t->hk_went_sleep_active = cc ? cc->hk_active_ns : 0;
	if (t->hk_ready && cpu_ok(t->hk_core)) {
		/* Its load stays in the interval's unless it exits. */
		cc = cpu_ctx(t->hk_core);
		hk_load_add(t->hk_core, -t->hk_load, p->flags & PF_EXITING);
		t->hk_epoch = cc ? cc->hk_epoch : 0;
		t->hk_ready = 0;
	}
}

/* A new thread inherits its parent's load and penalties (ThreadData::Init). */
static void hk_init_task(struct task_struct *p, struct task_ctx *t)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct task_ctx *pt = cur ? task_ctx(cur) : NULL;
	s32 floor;

	t->hk_core = -1;
	t->hk_base = hk_base_prio(p);
	if (pt && pt != t) {
		t->hk_load = pt->hk_load;
		floor = t->hk_base - (t->hk_base / 5 > 1 ? t->hk_base / 5 : 1);
		t->hk_penalty = pt->hk_penalty < floor ? pt->hk_penalty : (floor > 0 ? floor : 0);
		t->hk_add_penalty = pt->hk_add_penalty;
	}
	hk_compute_eff(t);
}

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

static bool primary_has(s32 cpu)
{
	struct bpf_cpumask *primary;
	bool r = false;

	bpf_rcu_read_lock();
	primary = primary_mask;
	if (primary)
		r = bpf_cpumask_test_cpu(cpu, (const struct cpumask *)primary);
	bpf_rcu_read_unlock();
	return r;
}

static bool pull_from(s32 src)
{
	if (!cpu_ok(src))
		return false;
	if (scx_bpf_dsq_nr_queued(src) <= 0) {
		waiting_clear(src);
		return false;
	}
	if (scx_bpf_dsq_move_to_local(src, 0)) {
		stat_add(WC_ST_PULLED, 1);
		return true;
	}
	return false;
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
	if (freq_steer && c) {
		/* The CPU was idle, the task was not running, until now. */
		perf_update(cpu, c, task_ctx(p), false, policy == WC_POLICY_NEST && primary_has(cpu));
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
			perf_update(cpu, c, NULL, false, policy == WC_POLICY_NEST && primary_has(cpu));
		}
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
		perf_update(cpu, c, tctx ? tctx : task_ctx(p), true,
			    policy == WC_POLICY_NEST && primary_has(cpu));

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

/* haiku: @cpu's quantum timer; a core's queue and CPU count at its first
 * CPU; @cpu linked into its core's loop (called in CPU order, so the first
 * CPU of a core comes first). */
static s32 hk_cpu_init(s32 cpu)
{
	struct cpu_ctx *c, *me = cpu_ctx(cpu), *tail;
	struct hk_timer *ht;
	u32 key = cpu, core = hk_core_of(cpu);
	s32 err;

	if (core >= nr_cpus)
		return 0;	/* offline */
	c = cpu_ctx(core);
	if (!c || !me)
		return -ENOENT;
	if (core == (u32)cpu) {
		me->hk_next = cpu;
		me->hk_tail = cpu;
	} else {
		tail = cpu_ctx(c->hk_tail);
		if (!tail)
			return -ENOENT;
		tail->hk_next = cpu;
		me->hk_next = core;
		c->hk_tail = cpu;
	}

	ht = bpf_map_lookup_elem(&hk_timers, &key);
	if (!ht)
		return -ENOENT;
	bpf_timer_init(&ht->timer, &hk_timers, CLOCK_MONOTONIC);
	bpf_timer_set_callback(&ht->timer, hk_timer_cb);
	if (core == (u32)cpu) {
		err = scx_bpf_create_dsq(WC_CORE_DSQ_BASE + core, -1);
		if (err)
			return err;
	}
	c->hk_ncpus++;
	return 0;
}

static int feed_timer_cb(void *map, int *key, struct feed_timer *ft)
{
	struct cpu_ctx *c;
	u64 now = now_ns();
	s32 cpu;

	/* Idle CPUs do not tick: wake those whose warmer waited too long. */
	bpf_for(cpu, 0, nr_cpus) {
		c = cpu_ctx(cpu);
		if (!c || !c->warmer_pid || c->warming)
			continue;
		if (time_after(now, c->warm_last_run + WC_WARM_FEED_NS)) {
			c->warm_feed = 1;
			scx_bpf_kick_cpu(cpu, 0);
		}
	}
	bpf_timer_start(&ft->timer, WC_WARM_FEED_NS / 2, 0);
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
