/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Part of main.bpf.c (one translation unit): the CPUs' performance targets.
 */

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
static bool warm_keeps(s32 cpu, struct cpu_ctx *c);

/* The CPUs kept at the top: Nest's primary nest, warm's warm set. */
static __always_inline bool perf_keep(s32 cpu, struct cpu_ctx *c)
{
	switch (policy) {
	case WC_POLICY_NEST:
		return primary_has(cpu);
	case WC_POLICY_WARM:
		return warm_keeps(cpu, c);
	default:
		return false;
	}
}

/* @p was placed on @cpu: schedutil, asked now, counts it there. */
static void perf_placed(struct task_struct *p, struct task_ctx *tctx, s32 cpu)
{
	struct cpu_ctx *c;

	if (!freq_steer || !cpu_ok(cpu) || !(c = cpu_ctx(cpu)))
		return;
	if (!tctx)
		tctx = task_ctx(p);
	perf_update(cpu, c, tctx, false, perf_keep(cpu, c));
}

/* @p starts a run on @cpu, which was idle, as @p was not running, until now. */
static void perf_running(struct task_struct *p, s32 cpu, struct cpu_ctx *c)
{
	if (freq_steer && c) {
		perf_update(cpu, c, task_ctx(p), false, perf_keep(cpu, c));
		c->busy = 1;
	}
}

/* @p's run on @cpu ends: the run counts as busy time of both. */
static void perf_stopping(struct task_struct *p, s32 cpu, struct cpu_ctx *c, bool runnable)
{
	struct task_ctx *tctx;
	u64 now;

	if (!freq_steer)
		return;
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
		perf_update(cpu, c, NULL, false, perf_keep(cpu, c));
	}
}

/* A tick of @p on @cpu. */
static void perf_tick(struct task_struct *p, s32 cpu, struct cpu_ctx *c)
{
	if (freq_steer && c)
		perf_update(cpu, c, task_ctx(p), true, perf_keep(cpu, c));
}
