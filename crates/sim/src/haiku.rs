// SPDX-License-Identifier: GPL-2.0-only
//! `haiku-low-latency` and `haiku-power-saving`: the Haiku scheduler
//! (Haiku's scheduler: Dziepak, "New scheduler merged") as a simulator policy,
//! with its own run queues (not the fair class). The constants are those of
//! docs/model.md, Haiku's constants; the rules follow the design of Haiku's
//! scheduler and Haiku's src/system/kernel/scheduler.
//!
//! - One run queue per core, shared by the core's SMT threads (Haiku's scheduler, the
//!   paragraph on run queues). A task is queued at the back; a CPU takes the
//!   front of its core's queue.
//! - Time slice: the mode's base quantum for a normal-priority thread (base
//!   quantum x the first multiplier), bounded by the maximum latency divided
//!   by the number of ready threads per CPU of the core, but never below the
//!   minimal quantum (Haiku's scheduler, the paragraph on time slices). A thread's
//!   used time carries over its sleeps until its quantum ends; a quantum
//!   timer on each busy CPU ends it.
//! - Load (scale 0..1000): each thread's "needed load" is the share of its
//!   available time (running or sleeping, not waiting) it ran, averaged over
//!   intervals of at least 1000 us (Haiku's scheduler, the paragraph on load); a core's
//!   load is the sum of the needed loads of its ready threads, kept for the
//!   rest of the 1000 us interval for threads that went to sleep in it,
//!   divided by its number of CPUs. Cores above "high" (700) form the
//!   high-load set until they fall below "medium" (625).
//! - Wake-up: a thread whose cache is still warm (its core was active less
//!   than 100 ms since it slept in low latency mode; less than 100 ms of wall
//!   time in power saving) goes through the mode's rebalance decision from
//!   its previous core; otherwise, and for new threads, the mode's core
//!   choice. Then a CPU of the chosen core: the previous CPU if idle, else an
//!   idle CPU of the core, else any (the thread waits in the core's queue).
//! - Low latency core choice: an idle core of a fully idle package (the most
//!   recently idled), else of the package with most idle cores, else the
//!   least loaded core (normal set, then high set). Rebalance: move to the
//!   least loaded core only if it is lighter by more than the load difference
//!   (200) and by at least the thread's load per CPU.
//! - Power saving core choice: the "small task core" (the most loaded core
//!   of the normal set, chosen once and kept), unless the thread's load would
//!   take it to "high"; then the least loaded core, an idle core of the least
//!   idle package, the least loaded high core. Rebalance packs small tasks on
//!   the small task core while their core is below "medium", and moves load
//!   off a core above "high" (giving up the small task core above "very
//!   high").
//! - Quantum end: if other threads wait in the core's queue, the thread is
//!   preempted, goes through rebalance (it may move to another core) and is
//!   queued at the back; if none wait, it simply gets a new quantum.
//! - Work conservation only as far as Haiku goes: the CPUs of a core share
//!   its queue; an idle core never takes threads from another core's queue.
//!
//! Simplified (stated): every task has the normal priority and there are no
//! priority penalties, so each queue is FIFO and a waking thread never
//! preempts a running one (in Haiku the penalties of CPU-bound threads let
//! woken threads preempt them); no real-time priorities or interrupt
//! balancing; stolen (interrupt) time is ignored; the
//! time-slice bound also applies beyond 20 ready threads; the core load key
//! is refreshed at each decision (Haiku refreshes it at interval ends and on
//! load changes); idle-core order is by the time each core last went idle;
//! ties between equally loaded cores go to the lowest core number.
//! Exec does not re-place a task (Haiku has no exec balancing).
//!
//! Allowed CPUs (pinned threads, affinity masks, cpusets, migration-disabled
//! sections, CPU hotplug), which the modelled version of Haiku's scheduler
//! does not have, are kept as the other policies keep them: a core none of
//! whose CPUs the thread may use is replaced by the allowed core Haiku
//! would choose among those (the one idled last with an idle CPU the
//! thread may use, else the least loaded); a CPU is chosen among those the
//! thread may use; a CPU of a core takes from its queue the first thread
//! it may run; a queued thread whose allowed CPUs changed moves to an
//! allowed core, and its CPU is woken.
//! Without any of them every decision is Haiku's.

use std::collections::VecDeque;

use crate::machine::Machine;
use crate::policy::{Enq, Policy, Wake, WakeKind};
use crate::sim::{Sim, Tid, TimerId};
use crate::SimError;

const US: u64 = 1000;
/// Load scale and measurement interval (docs/model.md, Haiku's constants):
/// 0..1000, measured over 1000 us intervals.
const MAX_LOAD: i64 = 1000;
const LOAD_INTERVAL: u64 = 1000 * US;
/// A measurement interval counts as n intervals when it lasts n x 1000 us,
/// give or take a quarter interval.
const INTERVAL_SLACK: u64 = LOAD_INTERVAL / 4;
/// Thresholds (docs/model.md, Haiku's constants): low 200, target 550,
/// medium 625, high 700, very high 850, difference 200. Low and target concern
/// interrupt balancing and frequency requests, which we do not model.
const MEDIUM_LOAD: i64 = 625;
const HIGH_LOAD: i64 = 700;
const VERY_HIGH_LOAD: i64 = 850;
const LOAD_DIFFERENCE: i64 = 200;
/// A cache is considered cold after 100 ms (docs/model.md, Haiku's constants).
const CACHE_EXPIRE: u64 = 100_000 * US;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    LowLatency,
    PowerSaving,
}

/// A mode's time-slice constants.
#[derive(Clone, Copy, Debug)]
struct Quanta {
    base: u64,
    minimal: u64,
    /// The first multiplier gives a normal-priority thread's base quantum
    /// (the second one is for the lowest priorities, unused here).
    multiplier: u64,
    max_latency: u64,
}

impl Mode {
    /// docs/model.md, Haiku's constants: low latency 1000 / 100 / {2, 5} / 5000 us;
    /// power saving 2000 / 500 / {3, 10} / 20000 us.
    fn quanta(self) -> Quanta {
        match self {
            Mode::LowLatency => Quanta { base: 1000 * US, minimal: 100 * US, multiplier: 2, max_latency: 5000 * US },
            Mode::PowerSaving => Quanta { base: 2000 * US, minimal: 500 * US, multiplier: 3, max_latency: 20000 * US },
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Core {
    cpus: Vec<u32>,
    package: usize,
    queue: VecDeque<Tid>,
    /// Sum of the needed loads of the ready threads.
    cur_load: i64,
    /// The interval's load: cur_load at the interval start, plus threads
    /// that became ready in it; threads that sleep stay counted until the
    /// interval ends.
    load: i64,
    epoch: u32,
    last_update: u64,
    high: bool,
    /// Time its CPUs spent running threads (for low latency's cache test).
    active_ns: u64,
    /// When it last became fully idle.
    idle_since: u64,
}

#[derive(Clone, Debug, Default)]
struct Td {
    core: Option<usize>,
    ready: bool,
    queued: bool,
    /// Needed load, 0..1000.
    load: i64,
    /// The core epoch the thread's load was last counted in.
    epoch: u32,
    /// Available time (running or sleeping) so far, and the part of it since
    /// the last load measurement that was spent running.
    avail: u64,
    meas_start: Option<u64>,
    meas_active: u64,
    went_sleep: Option<u64>,
    went_sleep_active: u64,
    time_used: u64,
    quantum_ended: bool,
    run_start: u64,
}

#[derive(Default, Debug)]
struct Counters {
    new_threads: u64,
    wake_warm: u64,
    wake_warm_moved: u64,
    wake_cold: u64,
    exec_kept: u64,
    small_task_core_choices: u64,
    idle_core_choices: u64,
    quantum_ends: u64,
    quantum_renewals: u64,
    rebalance_moves: u64,
}

pub struct Haiku {
    mode: Mode,
    q: Quanta,
    cores: Vec<Core>,
    cpu_core: Vec<usize>,
    packages: Vec<Vec<usize>>,
    td: Vec<Td>,
    /// Per CPU: the running thread and its quantum timer.
    running: Vec<Option<Tid>>,
    timers: Vec<Option<TimerId>>,
    timer_gen: Vec<u32>,
    small_task_core: Option<usize>,
    n: Counters,
}

impl Haiku {
    pub fn new(m: &Machine, mode: Mode, params: &[(String, String)]) -> Result<Haiku, SimError> {
        let name = match mode {
            Mode::LowLatency => "haiku-low-latency",
            Mode::PowerSaving => "haiku-power-saving",
        };
        if let Some((k, _)) = params.first() {
            return Err(SimError::Input(format!("unknown {name} parameter '{k}'; it takes none")));
        }
        let cores: Vec<Core> = (0..m.nr_cores as usize)
            .map(|c| Core { cpus: m.core_cpus[c].clone(), package: m.core_socket[c] as usize, ..Default::default() })
            .collect();
        let mut packages = vec![Vec::new(); m.nr_sockets() as usize];
        for (i, c) in cores.iter().enumerate() {
            packages[c.package].push(i);
        }
        let n = m.nr_cpus as usize;
        Ok(Haiku {
            mode,
            q: mode.quanta(),
            cores,
            cpu_core: m.cpu_core.iter().map(|&c| c as usize).collect(),
            packages,
            td: Vec::new(),
            running: vec![None; n],
            timers: vec![None; n],
            timer_gen: vec![0; n],
            small_task_core: None,
            n: Counters::default(),
        })
    }

    // ---- load ----

    /// A core's load key, 0..1000.
    fn core_load(&self, c: usize) -> i64 {
        (self.cores[c].load / self.cores[c].cpus.len() as i64).clamp(0, MAX_LOAD)
    }

    /// Start a new measurement interval if the last one ended; update the
    /// core's high-load membership (with hysteresis between medium and high).
    fn update_core(&mut self, now: u64, c: usize) {
        let core = &mut self.cores[c];
        if now >= core.last_update + LOAD_INTERVAL {
            core.load = core.cur_load;
            core.epoch = core.epoch.wrapping_add(1);
            core.last_update = now;
        }
        let key = self.core_load(c);
        let core = &mut self.cores[c];
        if key > HIGH_LOAD {
            core.high = true;
        } else if key < MEDIUM_LOAD {
            core.high = false;
        }
    }

    fn refresh(&mut self, now: u64) {
        for c in 0..self.cores.len() {
            self.update_core(now, c);
        }
    }

    fn add_load(&mut self, now: u64, c: usize, load: i64, epoch: u32) {
        let core = &mut self.cores[c];
        core.cur_load += load;
        if core.epoch != epoch {
            core.load += load;
        }
        self.update_core(now, c);
    }

    /// Remove a thread's load; `force` also from the current interval (the
    /// thread left the core or exited, it will not come back).
    fn remove_load(&mut self, now: u64, c: usize, load: i64, force: bool) -> u32 {
        let core = &mut self.cores[c];
        core.cur_load = (core.cur_load - load).max(0);
        if force {
            core.load = (core.load - load).max(core.cur_load);
            self.update_core(now, c);
        }
        self.cores[c].epoch
    }

    /// Update a thread's needed load from its available and active time; a
    /// ready thread's change carries over to its core.
    fn compute_needed_load(&mut self, now: u64, t: Tid) {
        let d = &mut self.td[t as usize];
        let Some(start) = d.meas_start else {
            d.meas_start = Some(d.avail);
            return;
        };
        let delta = d.avail - start;
        if delta < LOAD_INTERVAL {
            return;
        }
        let old = d.load;
        let new = ((d.meas_active as i64 * MAX_LOAD) / delta.max(1) as i64).clamp(0, MAX_LOAD);
        d.meas_active = 0;
        d.meas_start = Some(d.avail);
        let n = (delta + INTERVAL_SLACK) / LOAD_INTERVAL;
        d.load = if n > 10 { new } else { (old + new * ((1 << n) - 1)) / (1 << n) };
        let delta_load = d.load - old;
        if delta_load != 0 {
            if let Some(c) = d.core {
                let core = &mut self.cores[c];
                core.cur_load += delta_load;
                core.load += delta_load;
                self.update_core(now, c);
            }
        }
    }

    // ---- the cores' sets ----

    fn least_loaded(&self, high: bool) -> Option<usize> {
        (0..self.cores.len()).filter(|&c| self.cores[c].high == high).min_by_key(|&c| (self.core_load(c), c))
    }

    fn most_loaded_normal(&self) -> Option<usize> {
        (0..self.cores.len())
            .filter(|&c| !self.cores[c].high)
            .max_by_key(|&c| (self.core_load(c), std::cmp::Reverse(c)))
    }

    /// Whether CPU `c` is idle: no thread of Haiku's runs there and the
    /// simulator has it idle.
    fn cpu_idle(&self, sim: &Sim, c: u32) -> bool {
        self.running[c as usize].is_none() && sim.cpu_is_idle(c)
    }

    /// Whether `t` may run on CPU `c` and it is idle.
    fn idle_for(&self, sim: &Sim, t: Tid, c: u32) -> bool {
        sim.may_run(t, c) && self.cpu_idle(sim, c)
    }

    /// Whether all of a core's CPUs are idle; each core looked at is paid
    /// for by the placement (docs/model.md, The kernel's own time).
    fn core_idle(&self, sim: &Sim, c: usize) -> bool {
        sim.note_scan(1);
        self.cores[c].cpus.iter().all(|&x| self.cpu_idle(sim, x))
    }

    fn idle_cores(&self, sim: &Sim, p: usize) -> Vec<usize> {
        self.packages[p].iter().copied().filter(|&c| self.core_idle(sim, c)).collect()
    }

    /// The most recently idled core of a list.
    fn last_idled(&self, cores: &[usize]) -> Option<usize> {
        cores.iter().copied().max_by_key(|&c| (self.cores[c].idle_since, std::cmp::Reverse(c)))
    }

    // ---- the modes' decisions ----

    fn cache_expired(&self, sim: &Sim, t: Tid) -> bool {
        let d = &self.td[t as usize];
        let Some(slept) = d.went_sleep else { return false };
        match self.mode {
            Mode::LowLatency => {
                let Some(c) = d.core else { return true };
                self.cores[c].active_ns.saturating_sub(d.went_sleep_active) > CACHE_EXPIRE
            }
            Mode::PowerSaving => sim.now() - slept > CACHE_EXPIRE,
        }
    }

    fn choose_core(&mut self, sim: &Sim, t: Tid) -> usize {
        match self.mode {
            Mode::LowLatency => {
                // A core of a fully idle package (the one idled last), else
                // of the package with most idle cores.
                let idle: Vec<Vec<usize>> = (0..self.packages.len()).map(|p| self.idle_cores(sim, p)).collect();
                let full = (0..self.packages.len())
                    .filter(|&p| idle[p].len() == self.packages[p].len())
                    .max_by_key(|&p| (idle[p].iter().map(|&c| self.cores[c].idle_since).max(), std::cmp::Reverse(p)));
                let pkg = full.or_else(|| {
                    (0..self.packages.len())
                        .filter(|&p| !idle[p].is_empty())
                        .max_by_key(|&p| (idle[p].len(), std::cmp::Reverse(p)))
                });
                if let Some(c) = pkg.and_then(|p| self.last_idled(&idle[p])) {
                    self.n.idle_core_choices += 1;
                    return c;
                }
                self.least_loaded(false).or_else(|| self.least_loaded(true)).unwrap_or(0)
            }
            Mode::PowerSaving => {
                let load = self.td[t as usize].load;
                if let Some(c) = self.choose_small_task_core() {
                    if self.core_load(c) + load < HIGH_LOAD {
                        self.n.small_task_core_choices += 1;
                        return c;
                    }
                }
                if let Some(c) = self.least_loaded(false) {
                    return c;
                }
                // An idle core of the least idle package that has one.
                let pkg = (0..self.packages.len())
                    .map(|p| (p, self.idle_cores(sim, p)))
                    .filter(|(_, v)| !v.is_empty())
                    .min_by_key(|(p, v)| (v.len(), *p));
                if let Some(c) = pkg.and_then(|(_, v)| self.last_idled(&v)) {
                    self.n.idle_core_choices += 1;
                    return c;
                }
                self.least_loaded(true).unwrap_or(0)
            }
        }
    }

    /// The small task core: the most loaded core of the normal set, chosen
    /// once and kept until it is given up.
    fn choose_small_task_core(&mut self) -> Option<usize> {
        let Some(c) = self.most_loaded_normal() else { return self.small_task_core };
        Some(*self.small_task_core.get_or_insert(c))
    }

    /// Where a thread already on a core should be: its core or another.
    fn rebalance(&mut self, t: Tid) -> usize {
        let d = &self.td[t as usize];
        let core = d.core.unwrap_or(0);
        let core_load = self.core_load(core);
        let thread_load = d.load / self.cores[core].cpus.len() as i64;
        match self.mode {
            Mode::LowLatency => {
                let Some(other) = self.least_loaded(false).or_else(|| self.least_loaded(true)) else { return core };
                let other_load = self.core_load(other);
                if other == core || other_load + LOAD_DIFFERENCE >= core_load {
                    return core;
                }
                let difference = core_load - other_load - LOAD_DIFFERENCE;
                if difference >= thread_load {
                    other
                } else {
                    core
                }
            }
            Mode::PowerSaving => {
                if core_load > HIGH_LOAD {
                    if self.small_task_core == Some(core) {
                        // The small task core is full: give it up.
                        self.small_task_core = None;
                        let stc = self.choose_small_task_core();
                        return match stc {
                            Some(s) if thread_load <= core_load / 3 && core_load > VERY_HIGH_LOAD => s,
                            _ => core,
                        };
                    }
                    if thread_load >= core_load / 2 {
                        return core;
                    }
                    let Some(other) = self.most_loaded_normal().or_else(|| self.least_loaded(true)) else {
                        return core;
                    };
                    let core_new = core_load - thread_load;
                    let other_new = self.core_load(other) + thread_load;
                    return if core_new - other_new >= LOAD_DIFFERENCE / 2 { other } else { core };
                }
                if core_load >= MEDIUM_LOAD {
                    return core;
                }
                match self.choose_small_task_core() {
                    Some(s) if self.core_load(s) + thread_load < HIGH_LOAD => s,
                    _ => core,
                }
            }
        }
    }

    /// A CPU of `core` for `t`, among those it may use: its previous CPU
    /// if idle, else an idle CPU, else the previous CPU or the core's first.
    fn choose_cpu(&self, sim: &Sim, t: Tid, core: usize, prev: u32) -> u32 {
        let cpus = &self.cores[core].cpus;
        let may = |c: u32| sim.may_run(t, c);
        let idle = |c: u32| {
            sim.note_scan(1);
            self.idle_for(sim, t, c)
        };
        if cpus.contains(&prev) && idle(prev) {
            return prev;
        }
        if let Some(&c) = cpus.iter().find(|&&c| idle(c)) {
            return c;
        }
        if cpus.contains(&prev) && may(prev) {
            prev
        } else {
            cpus.iter().copied().find(|&c| may(c)).unwrap_or(cpus[0])
        }
    }

    /// `core` if `t` may use one of its CPUs; else, among the cores it may
    /// use, the one idled last that has an idle CPU it may use, else the
    /// least loaded (Haiku's own choices within the allowed cores).
    fn allowed_core(&self, sim: &Sim, t: Tid, core: usize) -> usize {
        let may = |c: usize| self.cores[c].cpus.iter().any(|&x| sim.may_run(t, x));
        if may(core) {
            return core;
        }
        let allowed: Vec<usize> = (0..self.cores.len()).filter(|&c| may(c)).collect();
        let idle: Vec<usize> = allowed.iter().copied().filter(|&c| self.cores[c].cpus.iter().any(|&x| self.idle_for(sim, t, x))).collect();
        self.last_idled(&idle).or_else(|| allowed.iter().copied().min_by_key(|&c| (self.core_load(c), c))).unwrap_or(core)
    }

    /// Assign `t` to `core`: its load follows if it is ready.
    fn assign(&mut self, now: u64, t: Tid, core: usize) {
        let d = &self.td[t as usize];
        if d.core == Some(core) {
            return;
        }
        let (old, load, ready) = (d.core, d.load, d.ready);
        let epoch = self.cores[core].epoch.wrapping_sub(1);
        if ready {
            if let Some(o) = old {
                self.remove_load(now, o, load, true);
            }
            self.add_load(now, core, load, epoch);
        }
        let d = &mut self.td[t as usize];
        d.epoch = epoch;
        d.core = Some(core);
    }

    fn quantum(&self, core: usize) -> u64 {
        let c = &self.cores[core];
        let ready = c.queue.len() as u64 / c.cpus.len() as u64;
        let bound = self.q.max_latency.checked_div(ready).map_or(self.q.max_latency, |b| b.max(self.q.minimal));
        (self.q.base * self.q.multiplier).min(bound)
    }

    fn arm_quantum(&mut self, sim: &mut Sim, cpu: u32, t: Tid) {
        let core = self.cpu_core[cpu as usize];
        let left = self.quantum(core).saturating_sub(self.td[t as usize].time_used).max(self.q.minimal);
        let g = &mut self.timer_gen[cpu as usize];
        *g = g.wrapping_add(1);
        let token = (*g as u64) << 32 | cpu as u64;
        self.timers[cpu as usize] = Some(sim.set_timer(sim.now() + left, token));
    }

    /// Account the running thread's time on `cpu` up to now.
    fn account(&mut self, now: u64, t: Tid, cpu: u32) {
        let core = self.cpu_core[cpu as usize];
        let d = &mut self.td[t as usize];
        let ran = now.saturating_sub(d.run_start);
        d.run_start = now;
        d.avail += ran;
        d.meas_active += ran;
        d.time_used += ran;
        self.cores[core].active_ns += ran;
    }
}

impl Policy for Haiku {
    fn name(&self) -> String {
        match self.mode {
            Mode::LowLatency => "haiku-low-latency".into(),
            Mode::PowerSaving => "haiku-power-saving".into(),
        }
    }

    fn init_task(&mut self, _sim: &mut Sim, t: Tid, parent: Option<Tid>) {
        let i = t as usize;
        if self.td.len() <= i {
            self.td.resize(i + 1, Td::default());
        }
        // A new thread inherits its creator's needed load.
        let load = parent.map(|p| self.td[p as usize].load).unwrap_or(0);
        self.td[i] = Td { load, ..Default::default() };
    }

    fn exit_task(&mut self, sim: &mut Sim, t: Tid) {
        let now = sim.now();
        let d = &mut self.td[t as usize];
        let (core, load, ready) = (d.core.take(), d.load, d.ready);
        d.ready = false;
        if let Some(c) = core {
            if ready {
                self.remove_load(now, c, load, true);
            } else {
                // Its load left the core's current sum when it stopped; it
                // leaves the interval's load now.
                let core = &mut self.cores[c];
                core.load = (core.load - load).max(core.cur_load);
                self.update_core(now, c);
            }
        }
    }

    fn select_cpu(&mut self, sim: &mut Sim, t: Tid, prev: u32, w: Wake) -> u32 {
        let now = sim.now();
        self.refresh(now);
        let core = match w.kind {
            WakeKind::Exec => {
                self.n.exec_kept += 1;
                return prev;
            }
            WakeKind::Fork => {
                self.n.new_threads += 1;
                self.choose_core(sim, t)
            }
            WakeKind::Wakeup => {
                if self.td[t as usize].core.is_some() && !self.cache_expired(sim, t) {
                    self.n.wake_warm += 1;
                    let c = self.rebalance(t);
                    if Some(c) != self.td[t as usize].core {
                        self.n.wake_warm_moved += 1;
                    }
                    c
                } else {
                    self.n.wake_cold += 1;
                    self.choose_core(sim, t)
                }
            }
        };
        let core = self.allowed_core(sim, t, core);
        self.assign(now, t, core);
        self.choose_cpu(sim, t, core, prev)
    }

    fn enqueue(&mut self, sim: &mut Sim, t: Tid, cpu: u32, flags: Enq) {
        let now = sim.now();
        let mut cpu = cpu;
        match flags {
            Enq::Preempted => {
                // Quantum end with others waiting: rebalance, then the back
                // of the (possibly new) core's queue.
                self.refresh(now);
                let old = self.td[t as usize].core;
                let core = self.rebalance(t);
                let core = self.allowed_core(sim, t, core);
                if old != Some(core) {
                    self.n.rebalance_moves += 1;
                    self.assign(now, t, core);
                    let target = self.choose_cpu(sim, t, core, cpu);
                    sim.set_task_cpu(t, target);
                    cpu = target;
                }
            }
            Enq::Initial => {
                // Placed by the workload on a CPU: that CPU's core, and an
                // idle CPU of it if that CPU is taken.
                let core = self.cpu_core[cpu as usize];
                self.assign(now, t, core);
                if self.running[cpu as usize].is_some() || !self.cores[core].queue.is_empty() {
                    let target = self.choose_cpu(sim, t, core, cpu);
                    sim.set_task_cpu(t, target);
                    cpu = target;
                }
            }
            Enq::New | Enq::Wakeup | Enq::Exec => {
                // A CPU the engine gave instead of the policy's (one the
                // task may not use was chosen, or the engine moved it off
                // one): its core.
                let own = self.cpu_core[cpu as usize];
                if self.td[t as usize].core.is_some_and(|c| !self.cores[c].cpus.contains(&cpu)) {
                    self.assign(now, t, own);
                }
            }
        }
        let core = self.td[t as usize].core.unwrap_or(self.cpu_core[cpu as usize]);
        if !self.td[t as usize].ready {
            let d = &mut self.td[t as usize];
            d.ready = true;
            let slept = d.went_sleep.map(|s| now - s).unwrap_or(0);
            d.avail += slept;
            let (load, epoch) = (d.load, d.epoch);
            self.add_load(now, core, load, epoch);
            if slept > 0 {
                self.compute_needed_load(now, t);
            }
        }
        self.td[t as usize].queued = true;
        self.cores[core].queue.push_back(t);
        sim.kick(cpu);
    }

    fn dispatch(&mut self, sim: &mut Sim, cpu: u32) -> Option<Tid> {
        let core = self.cpu_core[cpu as usize];
        let q = &mut self.cores[core].queue;
        let i = q.iter().position(|&t| sim.may_run(t, cpu))?;
        let t = q.remove(i)?;
        self.td[t as usize].queued = false;
        Some(t)
    }

    /// A queued thread whose allowed CPUs changed: if no CPU of its core
    /// may run it, it moves to an allowed core (`allowed_core`); its CPU becomes one
    /// it may use, which is woken to take it.
    fn set_cpumask(&mut self, sim: &mut Sim, t: Tid) {
        let d = &self.td[t as usize];
        let (Some(core), true) = (d.core, d.queued) else { return };
        let prev = sim.task(t).cpu;
        let to = self.allowed_core(sim, t, core);
        if to != core {
            let q = &mut self.cores[core].queue;
            if let Some(i) = q.iter().position(|&u| u == t) {
                q.remove(i);
            }
            self.assign(sim.now(), t, to);
            self.cores[to].queue.push_back(t);
        }
        let cpu = self.choose_cpu(sim, t, to, prev);
        if cpu != prev {
            sim.set_task_cpu(t, cpu);
        }
        sim.kick(cpu);
    }

    fn running(&mut self, sim: &mut Sim, t: Tid, cpu: u32) {
        let now = sim.now();
        self.running[cpu as usize] = Some(t);
        let d = &mut self.td[t as usize];
        d.run_start = now;
        // A thread that runs on another core than its own (an SMT sibling
        // of the same core took it) stays with its core's load.
        let core = self.cpu_core[cpu as usize];
        if d.core != Some(core) {
            self.assign(now, t, core);
        }
        self.arm_quantum(sim, cpu, t);
    }

    fn stopping(&mut self, sim: &mut Sim, t: Tid, cpu: u32, runnable: bool) {
        let now = sim.now();
        if let Some(id) = self.timers[cpu as usize].take() {
            sim.cancel_timer(id);
        }
        self.running[cpu as usize] = None;
        self.account(now, t, cpu);
        // Has the quantum ended? Too little left counts as ended.
        let core = self.cpu_core[cpu as usize];
        let q = self.quantum(core);
        let d = &mut self.td[t as usize];
        let left = q.saturating_sub(d.time_used);
        if std::mem::take(&mut d.quantum_ended) || left <= self.q.minimal / 2 {
            d.time_used = 0;
        }
        if runnable {
            self.compute_needed_load(now, t);
        } else {
            // The load is measured again when it wakes, with the time it
            // slept as available time.
            let c = self.td[t as usize].core.unwrap_or(core);
            let active = self.cores[c].active_ns;
            let load = self.td[t as usize].load;
            let epoch = self.remove_load(now, c, load, false);
            let d = &mut self.td[t as usize];
            d.went_sleep = Some(now);
            d.went_sleep_active = active;
            d.epoch = epoch;
            d.ready = false;
        }
    }

    fn update_idle(&mut self, sim: &mut Sim, cpu: u32, idle: bool) {
        if idle {
            let core = self.cpu_core[cpu as usize];
            if self.core_idle(sim, core) {
                self.cores[core].idle_since = sim.now();
            }
        }
    }

    fn timer(&mut self, sim: &mut Sim, token: u64) {
        let cpu = (token & 0xffff_ffff) as u32;
        let gen = (token >> 32) as u32;
        if self.timer_gen[cpu as usize] != gen {
            return;
        }
        self.timers[cpu as usize] = None;
        let Some(t) = self.running[cpu as usize] else { return };
        let core = self.cpu_core[cpu as usize];
        if self.cores[core].queue.is_empty() {
            // Nobody waits: a new quantum, no rebalancing.
            self.n.quantum_renewals += 1;
            let now = sim.now();
            self.account(now, t, cpu);
            self.compute_needed_load(now, t);
            self.td[t as usize].time_used = 0;
            self.arm_quantum(sim, cpu, t);
        } else {
            self.n.quantum_ends += 1;
            self.td[t as usize].quantum_ended = true;
            sim.resched(cpu);
        }
    }

    fn stats(&self) -> serde_json::Value {
        let n = &self.n;
        serde_json::json!({
            "mode": match self.mode { Mode::LowLatency => "low latency", Mode::PowerSaving => "power saving" },
            "new_threads": n.new_threads,
            "wake_warm": n.wake_warm,
            "wake_warm_moved": n.wake_warm_moved,
            "wake_cold": n.wake_cold,
            "exec_kept": n.exec_kept,
            "idle_core_choices": n.idle_core_choices,
            "small_task_core_choices": n.small_task_core_choices,
            "quantum_ends": n.quantum_ends,
            "quantum_renewals": n.quantum_renewals,
            "rebalance_moves": n.rebalance_moves,
            "small_task_core": self.small_task_core,
            "high_load_cores": self.cores.iter().filter(|c| c.high).count(),
        })
    }
}
