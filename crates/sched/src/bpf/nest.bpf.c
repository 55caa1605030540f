/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Part of main.bpf.c (one translation unit): Nest (Nest, section 3,
 * parameters from Table 1): its placement, and its operations on the base's
 * (the primary nest's bookkeeping at each run, the warmer threads).
 */

/* How long a warmer may wait before it runs for the watchdog's sake. The
 * feed timer looks every half of it, so that a warmer parked on an idle CPU
 * waits at most 0.75 s: within the 1 s that the hunt's starvation bound
 * gives any runnable task while a CPU it may use is idle (docs/hunt.md;
 * with 1 s, such a warmer waited up to 1.5 s). */
#define WC_WARM_FEED_NS (500ULL * 1000 * 1000)

/* nest: the warmer thread of each CPU, by thread id (filled before attach). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WC_MAX_CPUS);
	__type(key, s32);
	__type(value, s32);
} warmers SEC(".maps");

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
		pmqos_hold[(u32)cpu & (WC_MAX_CPUS - 1)] = 0;
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
			pmqos_hold[(u32)cpu & (WC_MAX_CPUS - 1)] = 1;
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
		/* a: this pass's members the task may use; without warmer
		 * threads, only the idle ones, the only ones nest_visit takes
		 * or compacts: on a loaded machine the busy members are then
		 * dropped at once rather than met one by one at every wake-up
		 * (BENCHMARKS.md, the storm under scx:nest). */
		bpf_cpumask_and(a, (const struct cpumask *)mask, p->cpus_ptr);
		if (!nest_warm)
			bpf_cpumask_and(a, (const struct cpumask *)a, idle);
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

/* The CPU whose warmer @p is, -1 if it is none. */
static __always_inline s32 nest_warmer_cpu(struct task_struct *p)
{
	struct task_ctx *tctx;

	if (!nest_warm)
		return -1;
	tctx = task_ctx(p);
	return tctx && tctx->is_warmer ? tctx->warmer_cpu : -1;
}

/* No CPU idles for @p's waiting work (kick_idle_for): one that only runs its
 * warmer gives its core up. */
static void nest_kick_warming(struct task_struct *p, s32 from)
{
	struct cpu_ctx *c;
	s32 cpu;

	if (!nest_warm)
		return;
	bpf_for(cpu, 0, nr_cpus) {
		if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			continue;
		c = cpu_ctx(cpu);
		if (c && c->warming) {
			c->pull_hint = from;
			scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
			stat_add(WC_ST_KICKS, 1);
			return;
		}
	}
}

/* A warmer waits in its CPU's own queue (nest_dispatch runs it); a task
 * queued on a CPU that only runs its warmer preempts it. */
static void nest_enqueue(struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = nest_warm ? task_ctx(p) : NULL;
	s32 cpu;

	if (tctx && tctx->is_warmer) {
		scx_bpf_dsq_insert(p, WC_WARM_DSQ_BASE + tctx->warmer_cpu, SCX_SLICE_INF, 0);
		return;
	}
	cpu = base_enqueue(p, enq_flags, tctx);
	if (cpu < 0)
		return;
	if (warming(cpu))
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	else if (kick_idle_for(p, cpu) < 0)
		nest_kick_warming(p, cpu);
}

static void nest_dispatch(s32 cpu, struct task_struct *prev)
{
	struct cpu_ctx *c = cpu_ctx(cpu);

	/* A warmer that waited for long runs first, for at most a tick: the
	 * watchdog must see every runnable task run, even under overload. */
	if (c && c->warm_feed) {
		c->warm_feed = 0;
		c->warm_spin = 0;
		c->warm_ticks = nest_s_max_ticks;
		if (scx_bpf_dsq_move_to_local(WC_WARM_DSQ_BASE + cpu, 0))
			return;
	}
	if (base_dispatch(cpu, c))
		return;

	/* Section 3.2: a primary core left idle by a task that blocked is kept
	 * warm for up to S_max ticks. */
	if (!nest_warm || !c || !c->warmer_pid)
		return;
	if (prev && prev->pid != c->warmer_pid && (prev->scx.flags & SCX_TASK_QUEUED))
		return;	/* prev keeps its CPU */
	if (c->warm_allowed && primary_has(cpu)) {
		c->warm_allowed = 0;
		c->warm_ticks = 0;
		c->warm_spin = 1;
		if (scx_bpf_dsq_move_to_local(WC_WARM_DSQ_BASE + cpu, 0))
			stat_add(WC_ST_WARM_SPINS, 1);
	}
}

/* A run starts: the task's last two CPUs (section 3.3), and the core in use
 * or warming. */
static void nest_running(struct task_struct *p, s32 cpu, struct cpu_ctx *c)
{
	struct task_ctx *tctx;
	u64 now;

	base_running(p, c);
	perf_running(p, cpu, c);
	tctx = task_ctx(p);
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
}

static void nest_stopping(struct task_struct *p, s32 cpu, struct cpu_ctx *c, bool runnable)
{
	struct task_ctx *tctx;
	u64 now;

	perf_stopping(p, cpu, c, runnable);
	tctx = task_ctx(p);
	now = now_ns();
	if (tctx && tctx->is_warmer) {
		c->warming = 0;
		c->warm_last_run = now;
		/* A spin keeps the core in use (section 3.2: it is kept warm
		 * because it is expected back soon): P_remove counts from its
		 * end, so that a core left by a task that blocked stays in the
		 * primary nest for up to S_max + P_remove ticks. Without this, a
		 * fork/wait chain whose links last about P_remove (as under
		 * emulation) finds its grandparent's core compacted at each fork
		 * and hops to another core. */
		if (c->warm_spin)
			c->last_used = now;
		c->warm_spin = 0;
		if (c->warm_start && now > c->warm_start)
			stat_add(WC_ST_WARM_NS, now - c->warm_start);
		c->warm_start = 0;
		return;
	}
	c->last_used = now;
	if (!runnable) {
		c->warm_allowed = 1;
		c->exited_here = !!(p->flags & PF_EXITING);
	}
	base_stopping(p, c);
}

static void nest_tick(struct task_struct *p, s32 cpu, struct cpu_ctx *c)
{
	struct task_ctx *tctx = nest_warm ? task_ctx(p) : NULL;
	s32 nq, i;

	perf_tick(p, cpu, c);
	if (tctx && tctx->is_warmer) {
		/* Spin at most S_max ticks, and never while any task waits. */
		if (c)
			c->warm_ticks++;
		if (!c || c->warm_ticks >= nest_s_max_ticks) {
			scx_bpf_task_set_slice(p, 0);
			return;
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
		return;
	}
	if (base_tick(p, cpu))
		nest_kick_warming(p, cpu);
	/* A warmer waiting for long runs briefly: the watchdog must see it run. */
	if (c && c->warmer_pid && time_after(now_ns(), c->warm_last_run + WC_WARM_FEED_NS) &&
	    scx_bpf_dsq_nr_queued(WC_WARM_DSQ_BASE + cpu) > 0) {
		c->warm_feed = 1;
		scx_bpf_task_set_slice(p, 0);
	}
}

/* Section 3.1: a core left idle by a terminating task is demoted. */
static void nest_update_idle(s32 cpu, bool idle)
{
	struct bpf_cpumask *primary, *reserve;
	struct cpu_ctx *c;

	if (!idle || !nest_exit_demote)
		return;
	c = cpu_ctx(cpu);
	if (!c || !c->exited_here)
		return;
	c->exited_here = 0;
	bpf_rcu_read_lock();
	primary = primary_mask;
	reserve = reserve_mask;
	if (primary && reserve)
		nest_demote(primary, reserve, cpu);
	bpf_rcu_read_unlock();
}

/* A warmer thread (the loader fills `warmers` before it attaches) is its
 * CPU's. */
static void nest_init_task(struct task_struct *p, struct task_ctx *tctx)
{
	s32 pid = p->pid, *wcpu;
	struct cpu_ctx *c;

	wcpu = bpf_map_lookup_elem(&warmers, &pid);
	if (!wcpu || !cpu_ok(*wcpu))
		return;
	c = cpu_ctx(*wcpu);
	tctx->is_warmer = 1;
	tctx->warmer_cpu = *wcpu;
	if (c) {
		c->warmer_pid = pid;
		c->warm_last_run = now_ns();
	}
}

static void nest_exit_task(struct task_ctx *tctx)
{
	struct cpu_ctx *c;

	if (!tctx->is_warmer)
		return;
	c = cpu_ctx(tctx->warmer_cpu);
	if (c)
		c->warmer_pid = 0;
}

/* The warmers' watchdog feed (ops.init). */
static s32 nest_init(void)
{
	struct feed_timer *ft;
	u32 key = 0;

	if (!nest_warm)
		return 0;
	ft = bpf_map_lookup_elem(&feed_timers, &key);
	if (!ft)
		return -ENOENT;
	bpf_timer_init(&ft->timer, &feed_timers, CLOCK_MONOTONIC);
	bpf_timer_set_callback(&ft->timer, feed_timer_cb);
	bpf_timer_start(&ft->timer, WC_WARM_FEED_NS / 2, 0);
	return 0;
}
