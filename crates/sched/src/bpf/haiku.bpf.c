/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Part of main.bpf.c (one translation unit): Haiku's scheduler
 * (docs/model.md, Haiku's scheduler on sched_ext), which replaces the base.
 */

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
 * cancelled: a run's stopping makes it stale (see hk_stopping). */
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

	/* Reschedule the CPU chosen if it idles or runs a lower priority. A
	 * thread woken onto its own idle CPU needs no kick: the wake-up
	 * reschedules that CPU's idle task itself (core.c, wakeup_preempt),
	 * and the kick's irq_work was a quarter of the pipe gap to warm
	 * (BENCHMARKS.md). */
	tc = cpu_ctx(target);
	if (!tc)
		return;
	if (scx_bpf_test_and_clear_cpu_idle(target)) {
		if (!wake || target != cpu)
			scx_bpf_kick_cpu(target, SCX_KICK_IDLE);
	} else if (tc->hk_prio && tc->hk_prio < t->hk_eff) {
		scx_bpf_kick_cpu(target, SCX_KICK_PREEMPT);
		stat_add(WC_ST_HAIKU_PREEMPT, 1);
	}
}

/* Haiku places a thread when it is queued (hk_enqueue): it stays where it
 * was until then. */
static s32 hk_select_cpu(struct task_struct *p, s32 prev, u64 wake_flags)
{
	bool idle = false;

	return cpu_ok(prev) && bpf_cpumask_test_cpu(prev, p->cpus_ptr)
		       ? prev : scx_bpf_select_cpu_dfl(p, prev, wake_flags, &idle);
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
	struct task_ctx *t;
	struct hk_timer *ht;
	u32 key = cpu;
	u64 q;

	if (!c)
		return;
	c->run_start = p->se.sum_exec_runtime;
	t = task_ctx(p);
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

/* A run ended: activity, load, the quantum, and (if it sleeps) what its
 * wake-up needs (ThreadData::Continues and GoesAway). */
static void hk_stopping(struct task_struct *p, s32 cpu, struct cpu_ctx *c, bool runnable)
{
	u64 ran = p->se.sum_exec_runtime - c->run_start;
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

/* Quanta end by the quantum timer; the tick only steps the performance
 * target, as Haiku does at its load updates. */
static void hk_tick(struct task_struct *p, s32 cpu, struct cpu_ctx *c)
{
	if (freq_steer && c)
		hk_perf(cpu, c, task_ctx(p));
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

/* A thread that dies ready takes its load off its core. */
static void hk_exit_task(struct task_ctx *t)
{
	if (t->hk_ready && cpu_ok(t->hk_core)) {
		hk_load_add(t->hk_core, -t->hk_load, true);
		t->hk_ready = 0;
	}
}

/* Each CPU's quantum timer and place in its core, each core's queue
 * (ops.init), in CPU order. */
static s32 hk_init(void)
{
	s32 cpu, err;

	bpf_for(cpu, 0, nr_cpus) {
		err = hk_cpu_init(cpu);
		if (err)
			return err;
	}
	return 0;
}
