/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Part of main.bpf.c (one translation unit): warm, warmcore's own placement
 * (docs/warm.md).
 *
 * A core is warm for warm_window_ns after a task last ran on it: its
 * frequency is still up and its caches hold recent work. The warm set is
 * sized by demand (a core joins when a task runs on it) and shrinks on its
 * own (a core not used for a window leaves), so that it follows the load
 * down within a window instead of staying large, as Nest's primary nest does
 * until each core is met and compacted by a search (Nest, section 3.1).
 *
 * A woken or forked task goes, in order, to:
 *  1. its previous core, if idle and warm (its caches, no search);
 *  2. a fork: its parent's core, queued (warm_local), unless tasks already
 *     wait there (warm_fork_balance): in a fork/wait chain
 *     the parent waits at once and the child runs on the core it leaves,
 *     fast and awake, where an idle core would first leave its idle state;
 *     a parent that goes on running has an idle CPU, kicked at the
 *     enqueue, pull the child, so the idle state's exit is the only delay
 *     (S_move's D, section 3.2 of Fewer Cores, More Hertz, without a
 *     timer). Without it: the core its parent's previous child ran on, if
 *     idle and warm (the chain alternates between two cores, as Nest's fork
 *     hint intends);
 *  3. the lowest-numbered idle warm core of a whole idle core, on the die of
 *     its previous core (the parent's, for a fork), then on any die: the
 *     set stays compact, the highest cores left to decay out;
 *  4. the built-in selection, which spreads over idle cores, cold ones
 *     included, when the warm set has none idle: the load needs more cores;
 *  5. else its previous core's queue, from which idle CPUs pull (the base);
 *     a fork, the CPU with the fewest waiting tasks (warm_fork_balance).
 * There is no warmer thread and no reserve nest: while the set is small, a
 * core is kept fast through its performance target (warm_keeps) and, by the
 * loader, out of deep idle through its PM QoS resume latency (pmqos_hold,
 * as Nest's primary nest, section 3.2): the next link of a chain finds it
 * in C0 at its frequency instead of leaving a deep idle state first.
 * A larger set is a parallel load whose cores follow their utilisation,
 * except where a hand-off ran within the window (warm_handoff): a task
 * woken by one that blocks at once (SCX_WAKE_SYNC: a pipe's or a socket's
 * reader woken by its writer) is the next link of a chain however busy the
 * machine is, and a CPU half busy with such links runs them at the speed
 * its utilisation asks for, which is half the chain's.
 */

const volatile u64 warm_window_ns = 4000000ULL;	/* how long a core stays warm */
const volatile bool warm_prev = true;		/* step 1 */
const volatile bool warm_local = true;		/* step 2, the parent's core */
const volatile bool warm_fork = true;		/* step 2, else the elder sibling's */
const volatile bool warm_compact = true;	/* step 3 */
const volatile bool warm_die = true;		/* step 3, the die before the others */
const volatile bool warm_fork_balance = true;	/* steps 2 and 5, a fork to the least loaded CPU */
/* The warm set's CPUs ask for the top while it has at most this many. */
const volatile u32 warm_perf_cpus = 4;
/* A new task starts a slice behind the clock of virtual time. */
const volatile bool warm_fork_debit = true;
/* A CPU where a hand-off's task ran within the window asks for the top,
 * whatever the set's size. */
const volatile bool warm_handoff = true;
/* The loader holds the warm set in polling while it has at most this many
 * CPUs (0: it does not hold it). */
const volatile u32 warm_poll_cpus = 0;

/* Read by the loader: the CPUs in the warm set. */
u64 nr_warm;

/* warm: the CPUs a task ran on in the last window (a stale bit is cleared
 * when a search meets it). */
private(WARM) struct bpf_cpumask __kptr *warm_mask;

static __always_inline bool warm_fresh(s32 cpu, u64 now)
{
	struct cpu_ctx *c = cpu_ctx(cpu);

	return c && (c->warm_busy || !time_after(now, c->last_used + warm_window_ns));
}

static bool warm_has(s32 cpu)
{
	struct bpf_cpumask *m;
	bool r = false;

	bpf_rcu_read_lock();
	m = warm_mask;
	if (m)
		r = bpf_cpumask_test_cpu(cpu, (const struct cpumask *)m);
	bpf_rcu_read_unlock();
	return r;
}

/* @cpu runs a task: it is warm (again). */
static void warm_join(s32 cpu, struct cpu_ctx *c, u64 now)
{
	struct bpf_cpumask *m;
	bool was;

	c->last_used = now;
	c->warm_busy = 1;
	bpf_rcu_read_lock();
	m = warm_mask;
	was = m && bpf_cpumask_test_and_set_cpu(cpu, m);
	bpf_rcu_read_unlock();
	if (!was && m) {
		pmqos_hold[(u32)cpu & (WC_MAX_CPUS - 1)] = 1;
		__sync_fetch_and_add(&nr_warm, 1);
		stat_add(WC_ST_WARM_JOINED, 1);
	}
}

/* @cpu was not used for a window: out of the set, its target back to its
 * utilisation, which has decayed while it idled, if @perf: the kernel
 * refuses a target for another CPU than the one whose run queue an
 * operation holds (ops.tick); the next run there sets it then. */
static void warm_leave(struct bpf_cpumask *m, s32 cpu, bool perf)
{
	struct cpu_ctx *c;

	if (!bpf_cpumask_test_and_clear_cpu(cpu, m))
		return;
	pmqos_hold[(u32)cpu & (WC_MAX_CPUS - 1)] = 0;
	__sync_fetch_and_sub(&nr_warm, 1);
	stat_add(WC_ST_WARM_LEFT, 1);
	c = cpu_ctx(cpu);
	if (perf && freq_steer && c)
		perf_update(cpu, c, NULL, false, false);
}

/*
 * The lowest-numbered CPU of @cand (a scratch mask, consumed) that is warm,
 * claimed; stale members met on the way leave the set.
 */
static __always_inline s32 warm_first(struct bpf_cpumask *m, struct bpf_cpumask *cand, u64 now)
{
	s32 cpu;
	u32 k;

	bpf_for(k, 0, nr_cpus) {
		cpu = bpf_cpumask_first((const struct cpumask *)cand);
		if (!cpu_ok(cpu))
			break;
		bpf_cpumask_clear_cpu(cpu, cand);
		if (!warm_fresh(cpu, now)) {
			warm_leave(m, cpu, true);
			continue;
		}
		if (scx_bpf_test_and_clear_cpu_idle(cpu))
			return cpu;
	}
	return -1;
}

/* The order of warm_search's passes with warm_die (without it: 0 to 3). */
static const u32 warm_die_order[5] = { 0, 2, 4, 1, 3 };

/* Step 3: an idle warm CPU of a whole idle core (then of any core), on
 * @start's die, then on the others; for a set larger than warm_perf_cpus
 * (warm_die), every idle CPU of the die, warm or not, before the other
 * dies' (*@cold then says it was not warm). */
static s32 warm_search(struct task_struct *p, s32 start, u64 now, bool *cold)
{
	const struct cpumask *idle, *die;
	struct bpf_cpumask *m, *a, *b;
	s32 here = bpf_get_smp_processor_id(), found = -1;
	u32 pass, step;
	bool die_first;

	bpf_rcu_read_lock();
	m = warm_mask;
	a = mask_at(&scratch_masks, 2 * (u32)here);
	b = mask_at(&scratch_masks, 2 * (u32)here + 1);
	die = llc_cpus(start);
	if (!m || !a || !b || !die) {
		bpf_rcu_read_unlock();
		return -1;
	}
	/* A small set is a few chains, whose next link wants a warm core
	 * wherever it is; a larger one a parallel load, kept to one die as the
	 * fair class keeps a wake-up to its LLC (select_idle_sibling): the
	 * other die's cores stay idle and this die's turbo, set by its number
	 * of active cores, stays lower, and its energy with it. */
	die_first = warm_die && nr_warm > warm_perf_cpus;
	bpf_for(pass, 0, 5) {
		/* Without warm_die: 0, 1: whole idle cores; 2, 3: any idle CPU;
		 * even: the die. With it: the die's (whole idle cores, then any
		 * CPU, then any idle CPU of the die, cold ones too), then the
		 * other dies'. */
		step = die_first ? warm_die_order[pass] : pass;
		if (step == 4 && !die_first)
			break;
		if (step == 4) {
			bpf_cpumask_and(a, die, p->cpus_ptr);
			found = scx_bpf_pick_idle_cpu((const struct cpumask *)a, 0);
			*cold = found >= 0;
		} else {
			idle = step < 2 ? scx_bpf_get_idle_smtmask() : scx_bpf_get_idle_cpumask();
			bpf_cpumask_and(a, (const struct cpumask *)m, p->cpus_ptr);
			bpf_cpumask_and(a, (const struct cpumask *)a, idle);
			scx_bpf_put_idle_cpumask(idle);
			bpf_cpumask_and(b, (const struct cpumask *)a, die);
			if (step & 1)
				bpf_cpumask_xor(a, (const struct cpumask *)a, (const struct cpumask *)b);
			else
				bpf_cpumask_copy(a, (const struct cpumask *)b);
			found = warm_first(m, a, now);
		}
		if (found >= 0)
			break;
	}
	bpf_rcu_read_unlock();
	return found;
}

/*
 * A fork that found no idle CPU: the CPU @p may use with the fewest waiting
 * tasks, @start's die winning ties, as the fair class sends a fork to the
 * idlest CPU of the machine (select_task_rq_fair's slow path for
 * SD_BALANCE_FORK, find_idlest_cpu, kernel/sched/fair.c). Queued on the
 * parent's CPU instead, a burst of forks onto a busy machine piles there
 * (the wake-up storm: 593 of its 1,000 tasks on one CPU, every other CPU
 * running one), no CPU idles to pull them, and the parent, the last of
 * them in virtual time, forks ever slower (docs/warm.md).
 */
static s32 warm_least_loaded(struct task_struct *p, s32 start)
{
	const struct cpumask *die = llc_cpus(start);
	s32 cpu, best = start, q, best_q = 0x7fffffff;
	u32 i;

	bpf_for(i, 0, nr_cpus) {
		cpu = i;
		if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			continue;
		/* Twice the queue, one more off the die: ties stay on it. */
		q = 2 * scx_bpf_dsq_nr_queued(cpu);
		if (die && !bpf_cpumask_test_cpu(cpu, die))
			q++;
		if (q < best_q) {
			best = cpu;
			best_q = q;
		}
	}
	return best;
}

/* The loader holds the warm set in polling now (Settings::holds). */
static __always_inline bool warm_polled(void)
{
	return warm_poll_cpus && nr_warm <= warm_poll_cpus;
}

/* @cpu is a warm idle CPU @p may use: claimed. */
static __always_inline bool warm_take(struct task_struct *p, s32 cpu, u64 now)
{
	return cpu_ok(cpu) && bpf_cpumask_test_cpu(cpu, p->cpus_ptr) && warm_has(cpu) &&
	       warm_fresh(cpu, now) && scx_bpf_test_and_clear_cpu_idle(cpu);
}

static s32 select_warm(struct task_struct *p, s32 prev, u64 wake_flags, bool *direct)
{
	struct task_struct *cur;
	struct task_ctx *ptctx = NULL, *tctx;
	s32 cpu, start = prev;
	u64 now = now_ns();
	bool idle = false;

	if (warm_handoff && (tctx = task_ctx(p)))
		tctx->handoff = !!(wake_flags & SCX_WAKE_SYNC);
	if (wake_flags & SCX_WAKE_FORK) {
		start = bpf_get_smp_processor_id();	/* the parent's core */
		cur = bpf_get_current_task_btf();
		ptctx = cur ? task_ctx(cur) : NULL;
	}
	if (!cpu_ok(start))
		start = 0;

	if (warm_prev && !(wake_flags & SCX_WAKE_FORK) && warm_take(p, prev, now)) {
		stat_add(WC_ST_WARM_PREV, 1);
		goto found;
	}
	/* A set held in polling has idle CPUs that wake at once and fast: the
	 * steps below give the child one, without the race for the parent's
	 * core (docs/warm.md); a larger set is a load of many forks
	 * (hackbench), which the parent's core serves best, unless tasks
	 * already wait there (warm_least_loaded). */
	if (warm_local && (wake_flags & SCX_WAKE_FORK) && !warm_polled() &&
	    bpf_cpumask_test_cpu(start, p->cpus_ptr) &&
	    !(warm_fork_balance && scx_bpf_dsq_nr_queued(start) > 0)) {
		stat_add(WC_ST_WARM_LOCAL, 1);
		return start;
	}
	if (warm_fork && ptctx && warm_take(p, ptctx->fork_hint, now)) {
		cpu = ptctx->fork_hint;
		stat_add(WC_ST_WARM_FORK, 1);
		goto found_cpu;
	}
	if (warm_compact) {
		cpu = warm_search(p, start, now, &idle);
		if (cpu >= 0) {
			stat_add(idle ? WC_ST_WARM_SPREAD : WC_ST_WARM_FOUND, 1);
			goto found_cpu;
		}
	}
	cpu = scx_bpf_select_cpu_dfl(p, start, wake_flags, &idle);
	if (idle)
		stat_add(WC_ST_WARM_SPREAD, 1);
	else if (warm_fork_balance && (wake_flags & SCX_WAKE_FORK))
		cpu = warm_least_loaded(p, start);
	*direct = idle;
	if (ptctx)
		ptctx->fork_hint = cpu;
	return cpu;

found:
	cpu = prev;
found_cpu:
	if (ptctx)
		ptctx->fork_hint = cpu;
	*direct = true;
	return cpu;
}

/* One member of the set per tick, round-robin: a stale one that is idle
 * leaves, so that the set shrinks even where no search looks. */
static void warm_sweep(u64 now)
{
	struct bpf_cpumask *m;
	s32 cpu;

	bpf_rcu_read_lock();
	m = warm_mask;
	if (m) {
		cpu = bpf_cpumask_any_distribute((const struct cpumask *)m);
		if (cpu_ok(cpu) && !warm_fresh(cpu, now) && is_idle(cpu))
			warm_leave(m, cpu, false);
	}
	bpf_rcu_read_unlock();
}

/*
 * A small warm set keeps its cores at the top: the load is a few
 * sequential chains (configure, perl's start-up, a build's serial phases),
 * which run on few cores at the highest turbo the few active cores allow,
 * and the next link finds its core fast. A larger set is a parallel load:
 * its cores are busy and follow their utilisation, as Nest's primary nest
 * at the top does not (its busy cores stay there, and their energy with
 * them); but a core that ran a hand-off's task within the window runs a
 * chain's links (hackbench's senders and receivers), which a slow core
 * delays all along the chain: it stays at the top. Independent workers
 * woken by a futex or a timer (schbench, OpenMP barriers, the storm) do not
 * count: the top would cost them energy and gain them little.
 */
static bool warm_keeps(s32 cpu, struct cpu_ctx *c)
{
	if (nr_warm <= warm_perf_cpus && warm_has(cpu))
		return true;
	return warm_handoff && c->handoff_last &&
	       !time_after(now_ns(), c->handoff_last + warm_window_ns);
}

/* A run starts: the core joins the warm set, and notes a hand-off's task,
 * before its target is set, so that a core that joins a small set, or runs
 * a hand-off, asks for the top at once. */
static void warm_running(struct task_struct *p, s32 cpu, struct cpu_ctx *c)
{
	struct task_ctx *tctx;
	u64 now = now_ns();

	base_running(p, c);
	if (c) {
		warm_join(cpu, c, now);
		if (warm_handoff && (tctx = task_ctx(p)) && tctx->handoff) {
			tctx->handoff = 0;
			c->handoff_last = now;
		}
	}
	perf_running(p, cpu, c);
}

static void warm_stopping(struct task_struct *p, s32 cpu, struct cpu_ctx *c, bool runnable)
{
	perf_stopping(p, cpu, c, runnable);
	/* The window counts from the end of the last run. */
	c->last_used = now_ns();
	c->warm_busy = 0;
	base_stopping(p, c);
}

static void warm_tick(struct task_struct *p, s32 cpu, struct cpu_ctx *c)
{
	perf_tick(p, cpu, c);
	warm_sweep(now_ns());
	base_tick(p, cpu);
}
