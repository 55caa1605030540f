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
//! `smove`, `nest`) implements `OnCfs` instead: the hooks it does not write
//! go to its `Cfs`.

use crate::cfs::Cfs;
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
    /// The task's nice value changed (Step::Nice).
    fn set_nice(&mut self, _sim: &mut Sim, _t: Tid) {}
    /// The task's allowed CPUs changed (Step::Affinity): a running task on a
    /// CPU it may no longer use is moved by the engine; a queued one is the
    /// policy's to move (kernel/sched/core.c, __set_cpus_allowed_ptr).
    fn set_cpumask(&mut self, _sim: &mut Sim, _t: Tid) {}
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

/// A policy on top of the fair-class model: each hook it does not write is
/// forwarded to its `Cfs`, which keeps the run queues, preemption and load
/// balancing, so the policy writes only the hooks it changes.
///
/// A hook added to `Policy` goes here too, with a forwarding default, and
/// into the blanket `impl Policy` below: that one place serves every such
/// policy. A hook without a default in `Policy` fails to compile until it
/// is; one with a default would otherwise keep that default under these
/// policies and never reach the fair class.
pub trait OnCfs {
    fn cfs(&self) -> &Cfs;
    fn cfs_mut(&mut self) -> &mut Cfs;
    fn name(&self) -> String;
    fn init(&mut self, sim: &mut Sim) {
        self.cfs_mut().init(sim)
    }
    fn init_task(&mut self, sim: &mut Sim, t: Tid, parent: Option<Tid>) {
        self.cfs_mut().init_task(sim, t, parent)
    }
    fn exit_task(&mut self, sim: &mut Sim, t: Tid) {
        self.cfs_mut().exit_task(sim, t)
    }
    fn set_nice(&mut self, sim: &mut Sim, t: Tid) {
        self.cfs_mut().set_nice(sim, t)
    }
    fn set_cpumask(&mut self, sim: &mut Sim, t: Tid) {
        self.cfs_mut().set_cpumask(sim, t)
    }
    fn select_cpu(&mut self, sim: &mut Sim, t: Tid, prev_cpu: u32, wake: Wake) -> u32 {
        self.cfs_mut().select_cpu(sim, t, prev_cpu, wake)
    }
    fn enqueue(&mut self, sim: &mut Sim, t: Tid, cpu: u32, flags: Enq) {
        self.cfs_mut().enqueue(sim, t, cpu, flags)
    }
    fn dispatch(&mut self, sim: &mut Sim, cpu: u32) -> Option<Tid> {
        self.cfs_mut().dispatch(sim, cpu)
    }
    fn running(&mut self, sim: &mut Sim, t: Tid, cpu: u32) {
        self.cfs_mut().running(sim, t, cpu)
    }
    fn stopping(&mut self, sim: &mut Sim, t: Tid, cpu: u32, runnable: bool) {
        self.cfs_mut().stopping(sim, t, cpu, runnable)
    }
    fn tick(&mut self, sim: &mut Sim, cpu: u32, t: Tid) {
        self.cfs_mut().tick(sim, cpu, t)
    }
    fn update_idle(&mut self, sim: &mut Sim, cpu: u32, idle: bool) {
        self.cfs_mut().update_idle(sim, cpu, idle)
    }
    fn timer(&mut self, sim: &mut Sim, token: u64) {
        self.cfs_mut().timer(sim, token)
    }
    fn stats(&self) -> serde_json::Value {
        self.cfs().stats()
    }
}

impl<P: OnCfs> Policy for P {
    fn name(&self) -> String {
        OnCfs::name(self)
    }
    fn init(&mut self, sim: &mut Sim) {
        OnCfs::init(self, sim)
    }
    fn init_task(&mut self, sim: &mut Sim, t: Tid, parent: Option<Tid>) {
        OnCfs::init_task(self, sim, t, parent)
    }
    fn exit_task(&mut self, sim: &mut Sim, t: Tid) {
        OnCfs::exit_task(self, sim, t)
    }
    fn set_nice(&mut self, sim: &mut Sim, t: Tid) {
        OnCfs::set_nice(self, sim, t)
    }
    fn set_cpumask(&mut self, sim: &mut Sim, t: Tid) {
        OnCfs::set_cpumask(self, sim, t)
    }
    fn select_cpu(&mut self, sim: &mut Sim, t: Tid, prev_cpu: u32, wake: Wake) -> u32 {
        OnCfs::select_cpu(self, sim, t, prev_cpu, wake)
    }
    fn enqueue(&mut self, sim: &mut Sim, t: Tid, cpu: u32, flags: Enq) {
        OnCfs::enqueue(self, sim, t, cpu, flags)
    }
    fn dispatch(&mut self, sim: &mut Sim, cpu: u32) -> Option<Tid> {
        OnCfs::dispatch(self, sim, cpu)
    }
    fn running(&mut self, sim: &mut Sim, t: Tid, cpu: u32) {
        OnCfs::running(self, sim, t, cpu)
    }
    fn stopping(&mut self, sim: &mut Sim, t: Tid, cpu: u32, runnable: bool) {
        OnCfs::stopping(self, sim, t, cpu, runnable)
    }
    fn tick(&mut self, sim: &mut Sim, cpu: u32, t: Tid) {
        OnCfs::tick(self, sim, cpu, t)
    }
    fn update_idle(&mut self, sim: &mut Sim, cpu: u32, idle: bool) {
        OnCfs::update_idle(self, sim, cpu, idle)
    }
    fn timer(&mut self, sim: &mut Sim, token: u64) {
        OnCfs::timer(self, sim, token)
    }
    fn stats(&self) -> serde_json::Value {
        OnCfs::stats(self)
    }
}

/// The names `make_policy` accepts.
pub const POLICIES: &[&str] =
    &["cfs", "eevdf", "slocal", "smove", "nest", "haiku-low-latency", "haiku-power-saving", "haiku-old"];

/// Build a policy from `name[:key=value,...]`.
pub fn make_policy(spec: &str, machine: &crate::Machine) -> Result<Box<dyn Policy>, crate::SimError> {
    let (name, params) = crate::parse_spec(spec);
    match name {
        "cfs" => Ok(Box::new(crate::cfs::Cfs::new(machine, &params)?)),
        "eevdf" => Ok(Box::new(crate::cfs::Cfs::new_eevdf(machine, &params)?)),
        "slocal" => Ok(Box::new(crate::slocal::SLocal::new(machine, &params)?)),
        "smove" => Ok(Box::new(crate::smove::SMove::new(machine, &params)?)),
        "haiku-low-latency" => Ok(Box::new(crate::haiku::Haiku::new(machine, crate::haiku::Mode::LowLatency, &params)?)),
        "haiku-power-saving" => Ok(Box::new(crate::haiku::Haiku::new(machine, crate::haiku::Mode::PowerSaving, &params)?)),
        "haiku-old" => Ok(Box::new(crate::haiku_old::HaikuOld::new(machine, &params)?)),
        "nest" => Ok(Box::new(crate::nest::Nest::new(machine, &params)?)),
        #[cfg(feature = "scx")]
        "scx" => {
            // scx:NAME[:key=value,...]: the sched_ext program's policy NAME.
            let rest = spec.split_once(':').map_or("", |r| r.1);
            let (scx_name, scx_params) = crate::parse_spec(rest);
            Ok(Box::new(crate::scx::ScxPolicy::new(machine, scx_name, &scx_params)?))
        }
        #[cfg(feature = "scx")]
        "bpf" => {
            // bpf:DIR[:key=value,...]: the sched_ext program in DIR, with its recipe.
            let rest = spec.split_once(':').map_or("", |r| r.1);
            let (dir, params) = crate::parse_spec(rest);
            Ok(Box::new(crate::scx::ScxPolicy::from_dir(machine, dir, &params)?))
        }
        _ => Err(crate::SimError::Input(format!(
            "unknown policy '{name}'; valid: {}, {}",
            POLICIES.join(", "),
            scx_policy_names()
        ))),
    }
}

fn scx_policy_names() -> String {
    #[cfg(feature = "scx")]
    return format!("{}, bpf:DIR", crate::scx::ScxPolicy::names().join(", "));
    #[cfg(not(feature = "scx"))]
    return "scx:NAME (not in this build: warmcore-sim's feature scx)".into();
}
