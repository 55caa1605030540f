/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Part of main.bpf.c (one translation unit): S_move (Fewer Cores, More
 * Hertz, section 3.2, and docs/model.md, S_move as patched).
 */

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

/* A task whose move is pending waits for its timer, not for an idle CPU. */
static void smove_enqueue(struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = task_ctx(p);
	s32 cpu = base_enqueue(p, enq_flags, tctx);

	if (cpu >= 0 && !(tctx && tctx->smove_pending))
		kick_idle_for(p, cpu);
}

static void smove_running(struct task_struct *p, s32 cpu, struct cpu_ctx *c)
{
	struct task_ctx *tctx;

	base_running(p, c);
	perf_running(p, cpu, c);
	tctx = task_ctx(p);
	if (tctx && tctx->smove_pending) {
		/* The stale-flag cancel: the timer callback will find it stale. */
		tctx->smove_pending = 0;
		stat_add(WC_ST_TIMERS_CANCELLED, 1);
	}
}

static void smove_tick(struct task_struct *p, s32 cpu, struct cpu_ctx *c)
{
	perf_tick(p, cpu, c);
	/* S_move samples the frequency at the tick (docs/model.md, S_move as
	 * patched). */
	if (freq_source == WC_FREQ_KERNEL && c)
		c->perf_sample = scx_bpf_cpuperf_cur(cpu);
	base_tick(p, cpu);
}

/* Each CPU's move timers (ops.init). */
static s32 smove_init(void)
{
	struct smove_timer *t;
	u32 key, i;
	s32 cpu;

	bpf_for(cpu, 0, nr_cpus) {
		bpf_for(i, 0, WC_SMOVE_TIMERS) {
			key = cpu * WC_SMOVE_TIMERS + i;
			t = bpf_map_lookup_elem(&smove_timers, &key);
			if (!t)
				return -ENOENT;
			bpf_timer_init(&t->timer, &smove_timers, CLOCK_MONOTONIC);
			bpf_timer_set_callback(&t->timer, smove_timer_cb);
		}
	}
	return 0;
}
