/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Part of main.bpf.c (one translation unit): the base's work conservation.
 * A CPU with nothing of its own pulls from the queues that may hold work,
 * and a CPU that queues work it cannot run soon kicks an idle one.
 */

/* Queues tried per pull (see base_dispatch). */
#define WC_PULL_TRIES 8

/*
 * CPUs whose queue may hold waiting tasks: a CPU with nothing to run scans
 * the other queues only when one is set, so that going idle costs the same on
 * 4 CPUs as on 1024. A bit is set after each insert and cleared only by a
 * scan that finds the queue empty and checks again afterwards, so a queue
 * with work never goes unseen; a stale bit costs one scan.
 */
private(WAIT) struct bpf_cpumask __kptr *waiting_mask;

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

/*
 * Kick a CPU that @p may use and that does nothing, so that it pulls waiting
 * work from @from. Returns the CPU or -1.
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
	return -1;
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
