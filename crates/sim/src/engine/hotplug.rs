// SPDX-License-Identifier: GPL-2.0-only
//! CPU hotplug (Step::CpuOnline): a CPU taken offline and brought back, as
//! a write to /sys/devices/system/cpu/cpuN/online does (docs/model.md, CPU
//! hotplug).
//!
//! Going down (kernel/sched/core.c): sched_cpu_deactivate clears
//! the CPU from the active mask, so that no placement or balancing picks it
//! (`Sim::may_run`, `Sim::cpu_is_idle`); balance_push moves every task
//! queued or running there to select_fallback_rq's CPU (the running one
//! here, the queued ones by the class when it is told, ext.c's
//! scx_rq_deactivate; `Policy::cpu_offline`), save a task
//! whose migration is disabled, which finishes its section there first
//! (the kernel's hotplug waits for it in sched_cpu_wait_empty). The CPU
//! then idles in its deepest state until it comes back (sched_cpu_activate,
//! scx_rq_activate; `Policy::cpu_online`).

use warmcore_trace::ids;

use crate::engine::Engine;
use crate::sim::{Mode, TState, Tid};
use crate::SimError;

impl Engine {
    /// Take CPU `cpu` offline (`online` false) or bring it back. Offlining
    /// the last online CPU is refused, as the kernel refuses it (EBUSY),
    /// and so is a CPU the machine lacks. True if `me`, the task that asked,
    /// left its CPU.
    pub(crate) fn set_online(&mut self, me: Tid, cpu: u32, online: bool) -> Result<bool, SimError> {
        let n = self.sim.machine.nr_cpus;
        let what = if online { "cpu_online" } else { "cpu_offline" };
        if cpu >= n {
            return Err(SimError::Input(format!(
                "workload {}: {what} = {cpu}, but the machine has CPUs 0 to {}: name one of them",
                self.sim.workload.name,
                n - 1
            )));
        }
        if self.sim.offline[cpu as usize] != online {
            // Already so: the write changes nothing.
            return Ok(false);
        }
        if online {
            self.sim.offline[cpu as usize] = false;
            self.sim.nr_online += 1;
            // sched_cpu_activate: cpuset_cpu_active before the class is told.
            let left = self.cpusets_follow_hotplug(me);
            self.policy.cpu_online(&mut self.sim, cpu);
            return Ok(left);
        }
        if self.sim.nr_online == 1 {
            return Err(SimError::Input(format!(
                "workload {}: cpu_offline = {cpu} at {} ns would take the last online CPU down, which the kernel refuses (EBUSY): bring another CPU online first",
                self.sim.workload.name, self.sim.now
            )));
        }
        self.sim.offline[cpu as usize] = true;
        self.sim.nr_online -= 1;
        // sched_cpu_deactivate: cpuset_cpu_inactive takes the CPU out of
        // the cpusets' effective CPUs, and their members' masks, before
        // balance_push moves what is left.
        let mut left = self.cpusets_follow_hotplug(me);
        // The tasks there that no online CPU allows lose their affinity
        // first, as select_fallback_rq does when balance_push moves them.
        let here: Vec<Tid> = (0..self.sim.tasks.len() as Tid)
            .filter(|&t| {
                let task = &self.sim.tasks[t as usize];
                task.cpu == cpu && matches!(task.state, TState::Runnable | TState::Running) && task.migration_disabled == 0
            })
            .collect();
        for &t in &here {
            self.fallback(t, cpu);
        }
        if let Some(t) = self.sim.cpus[cpu as usize].curr {
            left |= self.move_off_disallowed(t) && t == me;
        }
        // The class is told once the running task has left: a sched_ext
        // scheduler the kernel exits is loaded again when the CPU is down,
        // its tasks elsewhere.
        self.policy.cpu_offline(&mut self.sim, cpu);
        let c = &self.sim.cpus[cpu as usize];
        if c.mode == Mode::Idle && c.idle_state != self.sim.choose_idle_state(cpu) {
            // An idle CPU going down: its deepest state from now on.
            let st = self.sim.choose_idle_state(cpu);
            self.sim.emit(cpu, 0, ids::IDLE_EXIT, 0, 0);
            let c = &mut self.sim.cpus[cpu as usize];
            c.idle_state = st;
            c.spin_until = 0;
            self.sim.emit(cpu, 0, ids::IDLE_ENTER, st as u32, 0);
            let core = self.sim.machine.cpu_core[cpu as usize];
            self.sim.core_changed(core);
        }
        Ok(left)
    }

    /// select_fallback_rq (kernel/sched/core.c): the CPU `t` moves to from
    /// `prev`. When no online CPU allows it, its allowed CPUs become its
    /// cpuset's (cpuset_cpus_allowed_fallback), or every CPU if none of
    /// those is online, and its own sched_setaffinity mask is dropped
    /// (do_set_cpus_allowed): the kernel's "process N (COMM) no longer
    /// affine to cpuM". The policy is told, as of any affinity change.
    pub(crate) fn fallback(&mut self, t: Tid, prev: u32) -> u32 {
        let c = self.sim.fallback_cpu(t, prev);
        if self.sim.may_run(t, c) {
            return c;
        }
        let cs = self.sim.tasks[t as usize].cpuset.and_then(|i| self.sim.cpusets[i as usize].clone());
        let cs = cs.filter(|m| (0..self.sim.machine.nr_cpus).any(|c| self.sim.online(c) && m[c as usize / 64] >> (c % 64) & 1 == 1));
        let task = &mut self.sim.tasks[t as usize];
        task.cpus = cs;
        task.user_cpus = None;
        task.pinned = None;
        self.policy.set_cpumask(&mut self.sim, t);
        self.sim.fallback_cpu(t, prev)
    }
}
