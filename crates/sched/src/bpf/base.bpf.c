/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Part of main.bpf.c (one translation unit): the base every policy but
 * Haiku's builds its operations on. A queue per CPU ordered by virtual time,
 * a slice that shrinks as more tasks wait there, a CPU with nothing of its
 * own pulling from the others (balance.bpf.c), and a run charged to the
 * task's virtual time inversely to its weight.
 */

/* How far ahead of the clock a task may queue, in slices (base_enqueue). */
#define WC_LEAD_SLICES 10

/*
 * Queue @p on its CPU's queue (or let it run on when nothing else wants the
 * CPU), and wake that CPU if it idles. Returns the CPU when @p waits there
 * behind a running task, for the policy to offer the work elsewhere; -1
 * otherwise. @tctx is @p's context or NULL.
 */
static s32 base_enqueue(struct task_struct *p, u64 enq_flags, struct task_ctx *tctx)
{
	s32 cpu = scx_bpf_task_cpu(p), here = bpf_get_smp_processor_id();
	u64 vtime = p->scx.dsq_vtime, slice;
	s32 nq;

	if (enq_flags & SCX_ENQ_LAST) {
		/* Nothing else wants this CPU: keep running the task. */
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_max_ns, enq_flags);
		return -1;
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

	/* Work conservation: an idle target runs it. */
	if (cpu != here && scx_bpf_test_and_clear_cpu_idle(cpu)) {
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		return -1;
	}
	return cpu;
}

/*
 * The first task of @cpu's own queue, else one pulled from another: the
 * hinted queue, then this die's, then the others'. False if none was found.
 */
static bool base_dispatch(s32 cpu, struct cpu_ctx *c)
{
	u32 i;
	s32 src, hint;

	if (scx_bpf_dsq_move_to_local(cpu, 0))
		return true;
	waiting_clear(cpu);

	if (!work_waiting())
		return false;
	if (c) {
		hint = c->pull_hint;
		c->pull_hint = -1;
		if (hint != cpu && pull_from(hint))
			return true;
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
			return true;
	}
	bpf_for(i, 0, WC_PULL_TRIES) {
		src = waiting_any(NULL);
		if (!cpu_ok(src))
			break;
		if (src != cpu && pull_from(src))
			return true;
	}
	return false;
}

/* @p starts a run: the clock of virtual time moves up to it. The run is
 * charged in base_stopping, on this same CPU: keeping its start here spares
 * the hot path a task-storage lookup and a clock read. */
static __always_inline void base_running(struct task_struct *p, struct cpu_ctx *c)
{
	if (time_before(vtime_now, p->scx.dsq_vtime))
		vtime_now = p->scx.dsq_vtime;
	if (c)
		c->run_start = p->se.sum_exec_runtime;
}

/* Virtual time advances by the CPU time used, inversely to the weight. */
static __always_inline void base_stopping(struct task_struct *p, struct cpu_ctx *c)
{
	u64 used = p->se.sum_exec_runtime - c->run_start;

	p->scx.dsq_vtime += used * 100 / (p->scx.weight ? p->scx.weight : 100);
}

/*
 * The slice shrinks as more tasks wait on @cpu, and the waiting work is
 * offered to an idle CPU (for slocal, the only balancing). True if work
 * waits and no idle CPU was found for it.
 */
static bool base_tick(struct task_struct *p, s32 cpu)
{
	s32 nq = scx_bpf_dsq_nr_queued(cpu);
	u64 s;

	if (nq <= 0)
		return false;
	s = slice_max_ns / (nq + 1);
	if (s < slice_min_ns)
		s = slice_min_ns;
	if (p->scx.slice > s)
		scx_bpf_task_set_slice(p, s);
	return kick_idle_for(p, cpu) < 0;
}
