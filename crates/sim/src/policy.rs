// SPDX-License-Identifier: GPL-2.0-only
//! The policy interface, mirroring sched_ext's operations.
//!
//! A policy owns its run queues. The engine calls:
//! - `select_cpu` when a task wakes up, is created (fork) or execs: the CPU
//!   the task is assigned to (sched_ext `ops.select_cpu`);
//! - `enqueue` when the task becomes runnable on that CPU, or is preempted
//!   (`ops.enqueue`);
//! - `dispatch` when a CPU needs its next task: return one of the policy's
//!   queued tasks, from any queue (`ops.dispatch`, moving a task to the local
//!   queue); a task assigned to another CPU is migrated;
//! - `running` / `stopping` around each stint on a CPU, `tick` every 4 ms on
//!   busy CPUs, `update_idle` when a CPU goes idle or busy, `timer` when one
//!   of the policy's timers fires, `init_task` / `exit_task`.
//!
//! Through `Sim` a policy reads the time, the topology, each CPU's current
//! task, idle state and frequency at its last tick, and asks for preemption
//! (`resched`), an idle CPU's wake-up (`kick`), a queued task's reassignment
//! (`set_task_cpu`), timers, idle spinning and its own trace events. In
//! `select_cpu` it reports each CPU it looks at (`note_scan`): the placing
//! CPU pays for them (docs/model.md, The kernel's own time); a policy that
//! reports none places for free.
//!
//! A policy that changes only some decisions of the fair class (`slocal`,
//! `smove`, `nest`) implements `cfs::OnCfs` instead: the hooks it does not
//! write go to its `Cfs`. The registry of every policy by name is
//! `policies.rs`.

use crate::sim::{Sim, Tid};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeKind {
    Wakeup,
    Fork,
    Exec,
}

/// Why a task is being placed.
#[derive(Clone, Copy, Debug)]
pub struct Wake {
    pub kind: WakeKind,
    /// The task that wakes or creates it (None for timer and I/O wake-ups).
    pub waker: Option<Tid>,
    /// The CPU the wake-up happens on.
    pub waker_cpu: u32,
    /// The waker is about to block (pipe and futex hand-offs; WF_SYNC).
    pub sync: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enq {
    /// Woken up.
    Wakeup,
    /// Created by fork.
    New,
    /// Placed again after exec.
    Exec,
    /// Preempted (or its slice ended): still runnable on the same CPU.
    Preempted,
    /// Placed at the start of the run on a given CPU.
    Initial,
}

/// A task the policy needs beside the workload's, pinned to one CPU and
/// always runnable (Nest's warmer threads); it does not keep a run going.
#[derive(Clone, Debug)]
pub struct Daemon {
    pub comm: String,
    pub cpu: u32,
}

pub trait Policy {
    fn name(&self) -> String;
    fn init(&mut self, _sim: &mut Sim) {}
    fn init_task(&mut self, _sim: &mut Sim, _t: Tid, _parent: Option<Tid>) {}
    fn exit_task(&mut self, _sim: &mut Sim, _t: Tid) {}
    /// The task's weight changed: its nice value (Step::Nice) or its policy
    /// (Step::SchedIdle) (`set_load_weight`, `reweight_task`).
    fn set_nice(&mut self, _sim: &mut Sim, _t: Tid) {}
    /// The task's migration was disabled or enabled again (its outermost
    /// Step::MigrateDisable or Step::MigrateEnable): `sim.may_run` already
    /// holds it to its CPU.
    fn set_migration_disabled(&mut self, _sim: &mut Sim, _t: Tid) {}
    /// The task's allowed CPUs changed (Step::Affinity): a running task on a
    /// CPU it may no longer use is moved by the engine; a queued one is the
    /// policy's to move (kernel/sched/core.c, __set_cpus_allowed_ptr).
    fn set_cpumask(&mut self, _sim: &mut Sim, _t: Tid) {}
    /// CPU `cpu` went offline (Step::CpuOnline; `sim.online` already says
    /// so): the tasks queued there move off it, as balance_push moves them
    /// (move_queued_task, to select_fallback_rq's CPU); the engine moves the
    /// running one. By default the move an affinity change makes.
    fn cpu_offline(&mut self, sim: &mut Sim, cpu: u32) {
        for t in 0..sim.nr_tasks() {
            let task = sim.task(t);
            if task.cpu == cpu && task.state == crate::sim::TState::Runnable && !sim.may_run(t, cpu) {
                self.set_cpumask(sim, t);
            }
        }
    }
    /// CPU `cpu` is back online (Step::CpuOnline): placement and balancing
    /// find it again.
    fn cpu_online(&mut self, _sim: &mut Sim, _cpu: u32) {}
    fn select_cpu(&mut self, sim: &mut Sim, t: Tid, prev_cpu: u32, wake: Wake) -> u32;
    fn enqueue(&mut self, sim: &mut Sim, t: Tid, cpu: u32, flags: Enq);
    fn dispatch(&mut self, sim: &mut Sim, cpu: u32) -> Option<Tid>;
    fn running(&mut self, _sim: &mut Sim, _t: Tid, _cpu: u32) {}
    fn stopping(&mut self, _sim: &mut Sim, _t: Tid, _cpu: u32, _runnable: bool) {}
    fn tick(&mut self, _sim: &mut Sim, _cpu: u32, _t: Tid) {}
    fn update_idle(&mut self, _sim: &mut Sim, _cpu: u32, _idle: bool) {}
    fn timer(&mut self, _sim: &mut Sim, _token: u64) {}
    /// Tasks to start with the workload (after `init`).
    fn daemons(&self) -> Vec<Daemon> {
        Vec::new()
    }
    /// Whether a CPU that is going idle has work it should look at again:
    /// by default, tasks assigned to it.
    fn has_work(&self, sim: &Sim, cpu: u32) -> bool {
        sim.cpu(cpu).nr > 0
    }
    /// A guarantee every scheduler must meet that the policy broke in the
    /// run, if any (docs/hunt.md): the run fails with it at its end.
    fn broken(&self) -> Option<String> {
        None
    }
    /// Counters of the policy's decisions, for the JSON output.
    fn stats(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}
