// SPDX-License-Identifier: GPL-2.0-only
//! `haiku-old`: Haiku's scheduler before the new one was merged (hrev46689,
//! the old side of Haiku's scheduler post's UnixBench comparison), as a
//! simulator reference policy. On machines with more than one CPU Haiku
//! used its "simple SMP" scheduler; its rules (docs/model.md, Haiku's old
//! scheduler):
//!
//! - One run queue for the whole machine, ordered by priority, first in
//!   first out within a priority; a CPU that reschedules takes a thread from
//!   it, whichever CPU the thread last ran on.
//! - Selection: the front of the queue, except that a normal (not real-time)
//!   thread is passed over for the next lower priority level with
//!   probability 2^-d, d the difference of the two priorities (at most 15),
//!   and again from there; the last non-idle level is never passed over.
//! - When a thread becomes ready, the CPU running the lowest priority
//!   (scanning from a start that rotates at each call, the current CPU kept
//!   on ties) is asked to reschedule if the thread's priority is higher: an
//!   idle CPU is woken, a busy one preempted.
//! - Fixed quantum of 3 ms; at its end the thread goes to the back of its
//!   priority level and the front is taken (itself again if alone).
//!
//! Simplified (stated): every workload task has the normal priority (10),
//! the simulator having no priorities, so the selection's random skip never
//! fires in its runs (it is tested on constructed queues).
//!
//! Allowed CPUs beyond Haiku's pinning (affinity masks, cpusets,
//! migration-disabled sections) are kept as its pinning is: a CPU takes
//! only threads it may run, and the scan for the lowest-priority CPU looks
//! at the CPUs a thread not pinned may use. An offline CPU is skipped by
//! every scan (the model's rule: Haiku's CPU disabling is not modelled).

use std::collections::VecDeque;

use crate::machine::Machine;
use crate::policy::{Enq, Policy, Wake, WakeKind};
use crate::sim::{Sim, Tid, TimerId};
use crate::SimError;

/// Haiku's priorities (docs/model.md, Haiku's old scheduler).
pub const IDLE_PRIORITY: i32 = 0;
pub const NORMAL_PRIORITY: i32 = 10;
pub const FIRST_REAL_TIME_PRIORITY: i32 = 100;
/// The fixed quantum, ns.
pub const QUANTUM: u64 = 3_000_000;

/// The index of the thread a CPU takes from a queue of priorities ordered
/// from highest to lowest, skipping threads `eligible` refuses (pinned to
/// another CPU). `random15` gives 15-bit random numbers, as Haiku's fast
/// random generator: a normal thread is passed over for the next lower
/// level when the number shifted right by 15 - d is 0 (probability 2^-d).
pub fn pick(prios: &[i32], eligible: impl Fn(usize) -> bool, mut random15: impl FnMut() -> u32) -> Option<usize> {
    let mut i = 0;
    while i < prios.len() && prios[i] > IDLE_PRIORITY {
        if !eligible(i) {
            i += 1;
            continue;
        }
        if prios[i] >= FIRST_REAL_TIME_PRIORITY {
            return Some(i);
        }
        let lower = (i + 1..prios.len()).find(|&j| prios[j] != prios[i]);
        let Some(j) = lower.filter(|&j| prios[j] > IDLE_PRIORITY) else { return Some(i) };
        let d = prios[i] - prios[j];
        if d > 15 || random15() >> (15 - d) != 0 {
            return Some(i);
        }
        i = j;
    }
    // Only idle-priority threads (or none) left: the first eligible one.
    (i..prios.len()).find(|&k| eligible(k))
}

#[derive(Default, Debug)]
struct Counters {
    /// Ready threads whose chosen CPU was asked to reschedule (woken if idle).
    notified: u64,
    quantum_ends: u64,
    quantum_renewals: u64,
    /// Selections that did not take the front of the queue.
    passed_over: u64,
}

pub struct HaikuOld {
    /// The run queue: (priority, thread), highest priority first.
    queue: VecDeque<(i32, Tid)>,
    /// Per CPU: the running thread, its quantum timer and the timer's
    /// generation (a stale timer is ignored).
    running: Vec<Option<Tid>>,
    timers: Vec<Option<TimerId>>,
    timer_gen: Vec<u32>,
    /// Where the scan for the lowest-priority CPU starts.
    next_cpu: u32,
    n: Counters,
}

impl HaikuOld {
    pub fn new(m: &Machine, params: &[(String, String)]) -> Result<HaikuOld, SimError> {
        if let Some((k, _)) = params.first() {
            return Err(SimError::Input(format!("unknown haiku-old parameter '{k}'; it takes none")));
        }
        let n = m.nr_cpus as usize;
        Ok(HaikuOld {
            queue: VecDeque::new(),
            running: vec![None; n],
            timers: vec![None; n],
            timer_gen: vec![0; n],
            next_cpu: 0,
            n: Counters::default(),
        })
    }

    /// The priority of what `cpu` runs: the idle thread's while no task runs
    /// or is assigned there (Haiku looks at the thread the CPU runs, which
    /// changes only when the CPU switches).
    fn cpu_priority(sim: &Sim, cpu: u32) -> i32 {
        if sim.cpu_is_idle(cpu) {
            IDLE_PRIORITY
        } else {
            NORMAL_PRIORITY
        }
    }

    /// The CPU running the lowest priority among those the scan looks at
    /// for `t` (`scanned`): the current one unless another runs a strictly
    /// lower one, scanning from the rotating start.
    fn lowest_cpu(&mut self, sim: &Sim, t: Tid, current: u32) -> (u32, i32) {
        let n = sim.nr_cpus();
        let mut best = Self::scanned(sim, t, current).then(|| (current, Self::cpu_priority(sim, current)));
        for k in 0..n {
            let c = (self.next_cpu + k) % n;
            if !Self::scanned(sim, t, c) {
                continue;
            }
            let p = Self::cpu_priority(sim, c);
            if best.is_none_or(|(_, b)| p < b) {
                best = Some((c, p));
            }
        }
        self.next_cpu = (self.next_cpu + 1) % n;
        best.unwrap_or((current, Self::cpu_priority(sim, current)))
    }

    /// Whether the scan for `t` looks at `cpu`: an online CPU, and for a
    /// thread not pinned one it may use (a pinned one is asked for only
    /// when the scan lands on its CPU, as in Haiku).
    fn scanned(sim: &Sim, t: Tid, cpu: u32) -> bool {
        sim.online(cpu) && (sim.task(t).pinned.is_some() || sim.may_run(t, cpu))
    }

    /// The CPU to ask to reschedule for a thread becoming ready on
    /// `current`, and whether it is asked: only when it runs a lower
    /// priority, which with every task at the normal priority means idle.
    fn notify(&mut self, sim: &Sim, t: Tid, current: u32) -> (u32, bool) {
        let (target, prio) = self.lowest_cpu(sim, t, current);
        let asked = Self::eligible(sim, t, target) && NORMAL_PRIORITY > prio;
        if asked {
            self.n.notified += 1;
        }
        (target, asked)
    }

    fn eligible(sim: &Sim, t: Tid, cpu: u32) -> bool {
        sim.may_run(t, cpu)
    }

    fn arm_quantum(&mut self, sim: &mut Sim, cpu: u32) {
        let g = &mut self.timer_gen[cpu as usize];
        *g = g.wrapping_add(1);
        let token = (*g as u64) << 32 | cpu as u64;
        self.timers[cpu as usize] = Some(sim.set_timer(sim.now() + QUANTUM, token));
    }
}

impl Policy for HaikuOld {
    fn name(&self) -> String {
        "haiku-old".into()
    }

    fn select_cpu(&mut self, sim: &mut Sim, t: Tid, prev: u32, w: Wake) -> u32 {
        // Exec keeps the thread where it runs.
        if w.kind == WakeKind::Exec {
            return prev;
        }
        // The engine wakes the chosen CPU if it is idle.
        self.notify(sim, t, w.waker_cpu).0
    }

    fn enqueue(&mut self, sim: &mut Sim, t: Tid, cpu: u32, flags: Enq) {
        // The back of its priority level.
        let at = self.queue.iter().position(|&(p, _)| p < NORMAL_PRIORITY).unwrap_or(self.queue.len());
        self.queue.insert(at, (NORMAL_PRIORITY, t));
        // A thread back from a quantum's end is ready again too: an idle
        // CPU is asked to take it. (Wake-ups and new threads chose theirs in
        // select_cpu; a task the workload places is on its idle CPU.)
        if flags == Enq::Preempted {
            let (target, notified) = self.notify(sim, t, cpu);
            if notified {
                sim.kick(target);
            }
        }
    }

    fn dispatch(&mut self, sim: &mut Sim, cpu: u32) -> Option<Tid> {
        let prios: Vec<i32> = self.queue.iter().map(|&(p, _)| p).collect();
        let ok: Vec<bool> = self.queue.iter().map(|&(_, t)| Self::eligible(sim, t, cpu)).collect();
        let i = pick(&prios, |k| ok[k], || (sim.uniform() * 32768.0) as u32)?;
        if i > 0 {
            self.n.passed_over += 1;
        }
        self.queue.remove(i).map(|(_, t)| t)
    }

    /// A queued thread whose allowed CPUs changed: the lowest-priority CPU
    /// it may use is asked to take it, as for a thread becoming ready.
    fn set_cpumask(&mut self, sim: &mut Sim, t: Tid) {
        if !self.queue.iter().any(|&(_, u)| u == t) {
            return;
        }
        let (target, notified) = self.notify(sim, t, sim.task(t).cpu);
        if notified {
            sim.kick(target);
        }
    }

    fn has_work(&self, sim: &Sim, cpu: u32) -> bool {
        self.queue.iter().any(|&(_, t)| Self::eligible(sim, t, cpu))
    }

    fn running(&mut self, sim: &mut Sim, t: Tid, cpu: u32) {
        self.running[cpu as usize] = Some(t);
        self.arm_quantum(sim, cpu);
    }

    fn stopping(&mut self, sim: &mut Sim, _t: Tid, cpu: u32, _runnable: bool) {
        if let Some(id) = self.timers[cpu as usize].take() {
            sim.cancel_timer(id);
        }
        self.running[cpu as usize] = None;
    }

    fn timer(&mut self, sim: &mut Sim, token: u64) {
        let cpu = (token & 0xffff_ffff) as u32;
        if self.timer_gen[cpu as usize] != (token >> 32) as u32 {
            return;
        }
        self.timers[cpu as usize] = None;
        if self.running[cpu as usize].is_none() {
            return;
        }
        if self.has_work(sim, cpu) {
            self.n.quantum_ends += 1;
            sim.resched(cpu);
        } else {
            // Alone: Haiku reschedules, takes the same thread and gives it
            // a new quantum.
            self.n.quantum_renewals += 1;
            self.arm_quantum(sim, cpu);
        }
    }

    fn stats(&self) -> serde_json::Value {
        serde_json::json!({
            "notified": self.n.notified,
            "quantum_ends": self.n.quantum_ends,
            "quantum_renewals": self.n.quantum_renewals,
            "passed_over": self.n.passed_over,
        })
    }
}
