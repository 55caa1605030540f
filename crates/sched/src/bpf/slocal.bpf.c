/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Part of main.bpf.c (one translation unit): S_local (Fewer Cores, More
 * Hertz, section 3.1). The woken or forked task goes to the waker's CPU;
 * work that waits there behind a busy CPU is offered to an idle one only at
 * that CPU's tick (base_tick), as S_local relies on the load balancer.
 */

static s32 select_slocal(struct task_struct *p, s32 prev, u64 wake_flags, bool *direct)
{
	s32 waker = bpf_get_smp_processor_id(), cpu;

	if ((wake_flags & (SCX_WAKE_FORK | SCX_WAKE_TTWU)) && cpu_ok(waker) &&
	    bpf_cpumask_test_cpu(waker, p->cpus_ptr)) {
		stat_add(WC_ST_WAKER_PLACED, 1);
		cpu = waker;
		*direct = scx_bpf_test_and_clear_cpu_idle(cpu);
		return cpu;
	}
	return scx_bpf_select_cpu_dfl(p, prev, wake_flags, direct);
}
