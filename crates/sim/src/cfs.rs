// SPDX-License-Identifier: GPL-2.0-only
//! `cfs`: a model of Linux's fair class (5.9, as in Nest, section 2.1), with
//! the details of docs/model.md (Placement in the fair class; Wake-up, fork
//! and exec; Run queue and tick; Load balancing).
//!
//! - Fork and exec placement walk the domain hierarchy from the top: the
//!   least loaded group (5.9 classification: spare capacity, most idle CPUs,
//!   then lowest recent load), then the best CPU in it, scanning groups from
//!   the forking CPU's; recent (decayed) load counts, so recently used cores
//!   look busier than long-idle ones.
//! - Wakeup: wake_wide / wake_affine choose between the previous CPU and the
//!   waker's, then select_idle_sibling searches the target's die: the target,
//!   the previous CPU, the recently used CPU, an idle core, a few idle CPUs,
//!   the target's sibling, else the target.
//! - Per-CPU vruntime-ordered queues, wakeup preemption, tick preemption.
//! - Periodic load balancing per domain level (interval = span weight in ms,
//!   x32 when busy, measured from the level's last balance; every level is
//!   due at a CPU's first balance, as after an idle spell): 5.9's
//!   load_balance on runnable counts (group types has_spare / fully_busy /
//!   overloaded; migrate_util, migrate_task with prefer_sibling and
//!   adjust_numa_imbalance, migrate_load), pulling up to the imbalance,
//!   at most nr_migrate = 32 tasks, from the busiest CPU of the busiest group.
//! - NOHZ idle balancing: a busy tick with waiting tasks, once
//!   nohz.next_balance is due, kicks the first idle CPU (find_new_ilb); it
//!   runs rebalance_domains, at idle intervals, for every idle CPU whose
//!   balance is due, itself last (_nohz_idle_balance); each pulls for itself
//!   at all its levels, NUMA included. Idle CPUs get no ticks (the engine).
//! - Newly-idle balancing: load_balance as a newly idle CPU at each domain
//!   level, bottom-up, until one pulls.
//!
//! - Weights (prio.rs): a task's nice value or SCHED_IDLE sets its load
//!   weight; vruntime advances by calc_delta_fair, a slice is the task's
//!   weighted share of the period (sched_slice), the wake-up granularity is
//!   the waking task's (wakeup_gran), and an idle-policy task is preempted
//!   by any waking normal task and never preempts at wake-up
//!   (check_preempt_wakeup).
//!
//! Simplifications (stated): loads are PELT averages of the runnable
//! tasks' weights (1 for nice 0), but load_balance moves tasks counted as
//! load 1 each; task utilisation counts as one CPU per task
//! (migrate_util); no cache-hot skipping, no active balancing, no doubling
//! of balance_interval on failure; the NOHZ kick needs waiting tasks on the
//! kicking CPU (the nr_busy_cpus trigger is left out); newly-idle balancing
//! does not weigh its own cost against the expected idle time.

use std::cell::Cell;

use warmcore_trace::ids;

use crate::machine::Machine;
use crate::pelt::Decay;
use crate::policy::{Enq, Policy, Wake, WakeKind};
use crate::prio::{delta_fair, load_weight, NICE_0_LOAD};
use crate::sim::{Sim, Tid, TICK_NS};
use crate::SimError;

mod eevdf;
mod on_cfs;
pub use on_cfs::OnCfs;
pub use eevdf::{base_slice, imb_numa_nr, lag_at_dequeue, place_vruntime, sis_util_budget};

/// Which kernel's fair class the model follows: 5.9 (`cfs`, the papers'),
/// or today's (`eevdf`, cfs/eevdf.rs), which differs in the run queue and
/// in some rules of placement and balancing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    V5_9,
    Eevdf,
}

const MS: u64 = 1_000_000;
/// sched_latency 24 ms, min_granularity 3 ms, wakeup_granularity 4 ms,
/// sched_nr_latency 8: the defaults x4 (docs/model.md, Run queue and tick).
const LATENCY: u64 = 24 * MS;
const MIN_GRAN: u64 = 3 * MS;
const WAKEUP_GRAN: u64 = 4 * MS;
const NR_LATENCY: u64 = 8;
/// GENTLE_FAIR_SLEEPERS: a waking task is placed at most latency/2 behind
/// min_vruntime (docs/model.md, Wake-up, fork and exec).
const SLEEPER_CREDIT: u64 = LATENCY / 2;
/// sched_migration_cost (docs/model.md, Run queue and tick).
const MIGRATION_COST: u64 = MS / 2;
/// busy_factor (docs/model.md, Load balancing): 32 in 5.9, 16 since 5.10
/// (docs/model.md, The fair class of today).
const BUSY_FACTOR: u64 = 32;
const BUSY_FACTOR_TODAY: u64 = 16;
/// Cost of checking one CPU in select_idle_cpu, for SIS_PROP's budget.
/// ASSUMPTION: 500 ns (the kernel measures it; no published figure).
const SCAN_COST_NS: f64 = 500.0;
/// sysctl_sched_nr_migrate: the most tasks one load_balance pass detaches
/// (5.9 default 32).
const NR_MIGRATE: u64 = 32;

/// A scheduling group's statistics for load_balance, from runnable counts.
#[derive(Clone, Copy, Debug)]
struct GStat {
    nr: u64,
    weight: u64,
    idle: u64,
    /// The group's decayed load, NaN until computed.
    load: f64,
}
impl Default for GStat {
    fn default() -> Self {
        GStat { nr: 0, weight: 0, idle: 0, load: f64::NAN }
    }
}
impl GStat {
    /// 5.9 group_type, reduced to what runnable counts show: 0 has_spare
    /// (fewer tasks than CPUs), 1 fully_busy, 2 overloaded (more tasks than
    /// CPUs) (docs/model.md, Load balancing).
    fn kind(&self) -> u8 {
        match self.nr.cmp(&self.weight) {
            std::cmp::Ordering::Less => 0,
            std::cmp::Ordering::Equal => 1,
            std::cmp::Ordering::Greater => 2,
        }
    }
    fn avg(&self) -> f64 {
        self.load / self.weight.max(1) as f64
    }
}

/// A candidate group of find_idlest: its index, idle CPUs, runnable tasks,
/// weight, and its load once computed.
struct GroupPick {
    gi: usize,
    idle: u32,
    nr: u64,
    weight: u64,
    load: Option<f64>,
}

/// A PELT-style average of a count (runnable tasks), decaying with a 32 ms
/// half-life.
#[derive(Clone, Copy, Debug, Default)]
struct Avg {
    v: f64,
    n: f64,
    t: u64,
}
impl Avg {
    fn at(&self, now: u64, decay: &Decay) -> f64 {
        if now <= self.t {
            return self.v;
        }
        decay.toward(self.n, self.v, now - self.t)
    }
    fn set(&mut self, now: u64, n: f64, decay: &Decay) {
        self.v = self.at(now, decay);
        self.t = now.max(self.t);
        self.n = n;
    }
}

/// A run queue's waiting tasks in (key, task) order: a sorted vector, which
/// for the few tasks a CPU's queue holds costs a fraction of a B-tree's
/// insertion and removal (and allocates only when it grows past its
/// largest size so far).
#[derive(Clone, Debug, Default)]
struct Queue(Vec<(u64, Tid)>);

impl Queue {
    fn insert(&mut self, e: (u64, Tid)) {
        if let Err(i) = self.0.binary_search(&e) {
            self.0.insert(i, e);
        }
    }
    fn remove(&mut self, e: &(u64, Tid)) -> bool {
        match self.0.binary_search(e) {
            Ok(i) => {
                self.0.remove(i);
                true
            }
            Err(_) => false,
        }
    }
    fn first(&self) -> Option<&(u64, Tid)> {
        self.0.first()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    fn iter(&self) -> std::slice::Iter<'_, (u64, Tid)> {
        self.0.iter()
    }
}

/// A set of CPUs, one bit each: testing and setting a CPU's membership at
/// every queue change costs no search.
#[derive(Clone, Debug)]
struct CpuSet {
    bits: Vec<u64>,
    len: u32,
}

impl CpuSet {
    fn new(nr_cpus: u32) -> CpuSet {
        CpuSet { bits: vec![0; nr_cpus.div_ceil(64) as usize], len: 0 }
    }
    fn set(&mut self, c: u32, member: bool) {
        let (w, bit) = ((c / 64) as usize, 1u64 << (c % 64));
        if (self.bits[w] & bit != 0) != member {
            self.bits[w] ^= bit;
            if member {
                self.len += 1;
            } else {
                self.len -= 1;
            }
        }
    }
    fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The members in increasing order.
    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.bits.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let b = rest.trailing_zeros();
                rest &= rest - 1;
                Some(w as u32 * 64 + b)
            })
        })
    }
}

#[derive(Clone, Debug, Default)]
struct Rq {
    queue: Queue,
    min_vr: u64,
    curr: Option<Tid>,
    /// Recent load: average of runnable tasks (includes the decaying load of
    /// tasks that ran here recently, as 5.9's load_avg with blocked load).
    load: Avg,
    /// `load` at one instant, (time, value), kept until `load` changes: the
    /// group scans of placement and balancing read each CPU's load several
    /// times at the same instant.
    load_memo: Cell<(u64, f64)>,
    /// Per domain level, when this CPU last balanced at it (sd->last_balance);
    /// None before its first balance: at the start of a run every level is
    /// due, as on a machine that was idle (no ilb kicks) before the run.
    last_balance: [Option<u64>; 3],
    nohz_kicked: bool,
    /// The queued tasks' summed weight (the running task's not counted).
    q_weight: u64,
    /// `eevdf`: the sum of the queued tasks' weighted vruntimes, and the
    /// last V.
    sum_vr: u128,
    v0: u64,
}
impl Rq {
    fn nr_running(&self) -> u64 {
        self.queue.len() as u64 + self.curr.is_some() as u64
    }
}

#[derive(Clone, Debug, Default)]
struct TaskData {
    /// Load weight (prio.rs, load_weight).
    weight: u64,
    vr: u64,
    /// The CPU whose min_vruntime `vr` is relative to.
    vr_cpu: u32,
    exec_start: u64,
    picked_at: u64,
    load: Avg,
    last_wakee: Option<Tid>,
    wakee_flips: u32,
    flips_decay: u64,
    recent_used_cpu: u32,
    queued_on: Option<u32>,
    /// `eevdf`: virtual deadline, lag saved when the task left a queue,
    /// the end of the slice RUN_TO_PARITY protects, and the CPU of the
    /// task's last waker.
    deadline: u64,
    vlag: i64,
    vprot: u64,
    wake_cpu: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    Smt = 0,
    Mc = 1,
    Numa = 2,
}

#[derive(Default, Debug)]
struct Counters {
    fork_placements: u64,
    exec_migrations: u64,
    wakeups: u64,
    wake_affine: u64,
    idle_core_found: u64,
    periodic_pulls: u64,
    newidle_pulls: u64,
    nohz_kicks: u64,
    nohz_passes: u64,
    nohz_pulls: u64,
    wakeup_preemptions: u64,
    tick_preemptions: u64,
}

pub struct Cfs {
    rq: Vec<Rq>,
    td: Vec<TaskData>,
    /// CPUs whose queue holds waiting tasks.
    waiting: CpuSet,
    /// Per die: a fully idle core may exist (sd_llc_shared->has_idle_cores).
    has_idle_cores: Vec<bool>,
    /// Per die, its CPUs in id order, and each CPU's position in its die.
    llc_pos: Vec<u32>,
    nohz_next: u64,
    levels: Vec<Level>,
    n: Counters,
    balance: bool,
    /// The scheduling groups of each domain (see `groups`), built once:
    /// per core at SMT (its CPUs one by one), per die at MC (its cores),
    /// and the dies at NUMA.
    smt_groups: Vec<Vec<Vec<u32>>>,
    mc_groups: Vec<Vec<Vec<u32>>>,
    numa_groups: Vec<Vec<u32>>,
    /// Per CPU and level (`Level as usize`): the index of its own group
    /// among `groups` (the local group), found once; u32::MAX if none
    /// holds it.
    local_group: Vec<[u32; 3]>,
    kernel: Kernel,
    /// `eevdf`'s own state (None under 5.9).
    ev: Option<eevdf::State>,
    /// The loads' decay, remembered per gap.
    decay: Decay,
}

impl Cfs {
    /// The 5.9 model (`cfs`).
    pub fn new(m: &Machine, params: &[(String, String)]) -> Result<Cfs, SimError> {
        Self::build(m, params, Kernel::V5_9, None)
    }

    /// Today's fair class (`eevdf`): `cfs`'s parameters plus the kernel
    /// features `place_lag`, `run_to_parity`, `sis_util` (on or off) and
    /// `preempt` (lazy or full).
    pub fn new_eevdf(m: &Machine, params: &[(String, String)]) -> Result<Cfs, SimError> {
        let (st, rest) = eevdf::State::new(m, params)?;
        Self::build(m, &rest, Kernel::Eevdf, Some(st))
    }

    fn build(m: &Machine, params: &[(String, String)], kernel: Kernel, ev: Option<eevdf::State>) -> Result<Cfs, SimError> {
        let mut balance = true;
        for (k, v) in params {
            match (k.as_str(), v.as_str()) {
                ("balance", "on") => balance = true,
                ("balance", "off") => balance = false,
                ("balance", _) => return Err(SimError::Input(format!("cfs: balance must be on or off, not '{v}'"))),
                _ => return Err(SimError::Input(format!("unknown cfs parameter '{k}'; valid: balance"))),
            }
        }
        let n = m.nr_cpus as usize;
        let mut llc_pos = vec![0; n];
        for cpus in &m.die_cpus {
            for (i, &c) in cpus.iter().enumerate() {
                llc_pos[c as usize] = i as u32;
            }
        }
        let mut levels = Vec::new();
        if m.spec.threads_per_core > 1 {
            levels.push(Level::Smt);
        }
        levels.push(Level::Mc);
        if m.die_cpus.len() > 1 {
            levels.push(Level::Numa);
        }
        let smt_groups = m.core_cpus.iter().map(|cpus| cpus.iter().map(|&c| vec![c]).collect()).collect();
        let mc_groups = m
            .die_cpus
            .iter()
            .map(|cpus| {
                cpus.iter()
                    .filter(|&&c| m.core_cpus[m.cpu_core[c as usize] as usize][0] == c)
                    .map(|&c| m.core_cpus[m.cpu_core[c as usize] as usize].clone())
                    .collect()
            })
            .collect();
        let mut cfs = Cfs {
            smt_groups,
            mc_groups,
            numa_groups: m.die_cpus.clone(),
            local_group: Vec::new(),
            rq: vec![Rq { load_memo: Cell::new((u64::MAX, 0.0)), v0: eevdf::V_START, ..Rq::default() }; n],
            td: Vec::new(),
            waiting: CpuSet::new(m.nr_cpus),
            has_idle_cores: vec![true; m.die_cpus.len()],
            llc_pos,
            nohz_next: 0,
            levels,
            n: Counters::default(),
            balance,
            kernel,
            ev,
            decay: Decay::default(),
        };
        cfs.local_group = (0..m.nr_cpus)
            .map(|c| {
                [Level::Smt, Level::Mc, Level::Numa].map(|level| {
                    cfs.groups(m, level, c).iter().position(|g| g.contains(&c)).map_or(u32::MAX, |i| i as u32)
                })
            })
            .collect();
        Ok(cfs)
    }

    fn span(m: &Machine, level: Level, cpu: u32) -> &[u32] {
        match level {
            Level::Smt => m.siblings(cpu),
            Level::Mc => &m.die_cpus[m.cpu_die[cpu as usize] as usize],
            Level::Numa => &m.socket_cpus[0][..0],
        }
    }

    /// imbalance_pct per level (docs/model.md, Placement in the fair class).
    fn imbalance_pct(level: Level) -> u64 {
        match level {
            Level::Smt => 110,
            Level::Mc => 117,
            Level::Numa => 125,
        }
    }

    fn lowest_shared_level(m: &Machine, a: u32, b: u32) -> Level {
        if m.cpu_core[a as usize] == m.cpu_core[b as usize] {
            Level::Smt
        } else if m.cpu_die[a as usize] == m.cpu_die[b as usize] {
            Level::Mc
        } else {
            Level::Numa
        }
    }

    fn load(&self, now: u64, c: u32) -> f64 {
        let rq = &self.rq[c as usize];
        let (t, v) = rq.load_memo.get();
        if t == now {
            return v;
        }
        let v = rq.load.at(now, &self.decay);
        rq.load_memo.set((now, v));
        v
    }

    fn update_load(&mut self, now: u64, c: u32) {
        let curr_w = self.rq[c as usize].curr.map_or(0, |t| self.td[t as usize].weight);
        let rq = &mut self.rq[c as usize];
        // The runnable tasks' weights in units of a nice-0 task: their count
        // when all are nice 0.
        let load = (rq.q_weight + curr_w) as f64 / NICE_0_LOAD as f64;
        rq.load.set(now, load, &self.decay);
        rq.load_memo.set((u64::MAX, 0.0));
    }

    fn set_waiting(&mut self, c: u32) {
        let member = !self.rq[c as usize].queue.is_empty();
        self.waiting.set(c, member);
    }

    /// The key of `t` in its queue: vruntime under 5.9, the virtual
    /// deadline under `eevdf` (whose tree is ordered by deadline).
    fn key(&self, t: Tid) -> u64 {
        let d = &self.td[t as usize];
        if self.kernel == Kernel::Eevdf {
            d.deadline
        } else {
            d.vr
        }
    }

    fn q_insert(&mut self, c: u32, t: Tid) {
        let k = self.key(t);
        let d = &self.td[t as usize];
        let rq = &mut self.rq[c as usize];
        rq.queue.insert((k, t));
        rq.sum_vr += d.vr as u128 * d.weight as u128;
        rq.q_weight += d.weight;
    }

    fn q_remove(&mut self, c: u32, t: Tid) {
        let k = self.key(t);
        let d = &self.td[t as usize];
        let rq = &mut self.rq[c as usize];
        if rq.queue.remove(&(k, t)) {
            rq.sum_vr -= d.vr as u128 * d.weight as u128;
            rq.q_weight -= d.weight;
        }
    }

    fn curr_vr(&self, now: u64, c: u32) -> Option<u64> {
        self.rq[c as usize].curr.map(|t| {
            let d = &self.td[t as usize];
            d.vr + delta_fair(now.saturating_sub(d.exec_start), d.weight)
        })
    }

    fn update_min_vr(&mut self, now: u64, c: u32) {
        if self.kernel == Kernel::Eevdf {
            return;
        }
        let left = self.rq[c as usize].queue.first().map(|e| e.0);
        let cur = self.curr_vr(now, c);
        let m = match (left, cur) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return,
        };
        let rq = &mut self.rq[c as usize];
        rq.min_vr = rq.min_vr.max(m);
    }

    /// sched_slice: the share of the period of `nr` tasks for a task of
    /// weight `w` in a queue weighing `load` with it; period / nr when all
    /// are nice 0.
    fn slice(nr: u64, w: u64, load: u64) -> u64 {
        let nr = nr.max(1);
        let period = if nr > NR_LATENCY { nr * MIN_GRAN } else { LATENCY };
        (period as u128 * w as u128 / load.max(1) as u128) as u64
    }
    /// The summed weight of the tasks runnable on `c`, the running one
    /// included (cfs_rq->load).
    fn rq_weight(&self, c: u32) -> u64 {
        let rq = &self.rq[c as usize];
        rq.q_weight + rq.curr.map_or(0, |t| self.td[t as usize].weight)
    }

    /// Groups of the domain of `cpu` at a level: cores at SMT's parent (MC),
    /// in the order of their first CPUs in the die, dies at NUMA; at SMT each
    /// CPU is a group.
    fn groups(&self, m: &Machine, level: Level, cpu: u32) -> &[Vec<u32>] {
        match level {
            Level::Smt => &self.smt_groups[m.cpu_core[cpu as usize] as usize],
            Level::Mc => &self.mc_groups[m.cpu_die[cpu as usize] as usize],
            Level::Numa => &self.numa_groups,
        }
    }

    /// find_idlest_group_cpu: an idle CPU with the shallowest idle state,
    /// ties to the most recently idled; else the least loaded.
    /// Runnable count of `c`, not counting the task being placed if it runs
    /// there (exec): 5.9 classifies groups "without p".
    fn nr_without(&self, c: u32, exclude: Option<u32>) -> u64 {
        self.rq[c as usize].nr_running() - (exclude == Some(c)) as u64
    }

    fn idle_without(&self, sim: &Sim, c: u32, exclude: Option<u32>) -> bool {
        sim.note_scan(1);
        self.idle_without_unnoted(sim, c, exclude)
    }

    /// `idle_without` for a scan that notes the CPUs it looks at itself.
    fn idle_without_unnoted(&self, sim: &Sim, c: u32, exclude: Option<u32>) -> bool {
        if exclude == Some(c) {
            self.nr_without(c, exclude) == 0
        } else {
            self.idle_unnoted(sim, c)
        }
    }

    fn idlest_cpu(&self, sim: &Sim, group: &[u32], from: u32, exclude: Option<u32>) -> u32 {
        let now = sim.now();
        let mut best: Option<(u64, std::cmp::Reverse<u64>, u32)> = None;
        let mut least = (f64::MAX, from);
        let n = group.len();
        let start = group.iter().position(|&c| c == from).unwrap_or(0);
        for i in 0..n {
            let c = group[(start + i) % n];
            if !sim.online(c) {
                continue;
            }
            // find_idlest_group_cpu: a CPU running only SCHED_IDLE tasks is
            // taken at once (since 5.4).
            if exclude != Some(c) && self.sched_idle_cpu(sim, c) {
                return c;
            }
            if self.idle_without(sim, c, exclude) {
                // The exec'ing task's own CPU is hot: no exit latency, idle
                // since now.
                let key = if exclude == Some(c) {
                    (0, std::cmp::Reverse(sim.now()), c)
                } else {
                    (sim.idle_exit_latency(c), std::cmp::Reverse(sim.cpu(c).idle_since), c)
                };
                if best.is_none_or(|b| (key.0, key.1) < (b.0, b.1)) {
                    best = Some(key);
                }
            } else {
                let l = self.load(now, c);
                if l < least.0 {
                    least = (l, c);
                }
            }
        }
        best.map(|b| b.2).unwrap_or(least.1)
    }

    /// Slow path for fork and exec (find_idlest_cpu, 5.9 rules).
    fn find_idlest(&self, sim: &Sim, cpu0: u32, exclude: Option<u32>) -> u32 {
        let m = &sim.machine;
        let now = sim.now();
        let mut cpu = cpu0;
        let mut li = self.levels.len();
        while li > 0 {
            let level = self.levels[li - 1];
            if level == Level::Smt {
                // The lowest level's groups are single CPUs.
                let core = m.siblings(cpu);
                cpu = self.idlest_cpu(sim, core, cpu, exclude);
                break;
            }
            let groups = self.groups(m, level, cpu);
            let local_idx = self.local_group[cpu as usize][level as usize] as usize;
            // A group's idle CPUs, runnable tasks and weight; its load (a sum
            // of decaying averages) only when a comparison needs it.
            let stats = |gi: usize| {
                let g = &groups[gi];
                // Each CPU looked at once (`idle_without`, in one count).
                sim.note_scan(g.len() as u32);
                let mut idle = 0u32;
                let mut nr = 0u64;
                for &c in g {
                    let r = self.nr_without(c, exclude);
                    idle += self.idle_without_unnoted(sim, c, exclude) as u32;
                    nr += r;
                }
                GroupPick { gi, idle, nr, weight: g.len() as u64, load: None }
            };
            let load = |s: &mut GroupPick| -> f64 {
                *s.load.get_or_insert_with(|| groups[s.gi].iter().fold(0.0, |acc, &c| acc + self.load(now, c)))
            };
            let mut local = stats(local_idx);
            let ng = groups.len();
            let mut idlest: Option<GroupPick> = None;
            for i in 1..ng {
                let mut s = stats((local_idx + i) % ng);
                let better = match idlest.as_mut() {
                    None => true,
                    Some(b) => {
                        let (st, bt) = (s.nr >= s.weight, b.nr >= b.weight);
                        if st != bt {
                            !st
                        } else if !st {
                            // has_spare: most idle CPUs, then lowest load.
                            s.idle > b.idle || (s.idle == b.idle && load(&mut s) < load(b))
                        } else {
                            load(&mut s) / (s.weight as f64) < load(b) / (b.weight as f64)
                        }
                    }
                };
                if better {
                    idlest = Some(s);
                }
            }
            let go = match idlest.as_mut() {
                None => false,
                Some(s) => {
                    let (ls, is) = (local.nr >= local.weight, s.nr >= s.weight);
                    if ls != is {
                        ls
                    } else if !ls {
                        if level == Level::Numa && self.kernel == Kernel::Eevdf {
                            // Since 5.18: stay while the local node would
                            // run at most imb_numa_nr tasks and the idle
                            // CPUs differ by at most 2 (adjust_numa_imbalance),
                            // then as below on idle CPUs.
                            let imb = self.ev.as_ref().map_or(1, |e| e.imb_numa_nr);
                            let diff = (local.idle as i64 - s.idle as i64).unsigned_abs();
                            let stay = local.nr < imb && diff <= eevdf::NUMA_IMBALANCE_MIN;
                            !stay && s.idle > local.idle
                        } else if level == Level::Numa && local.idle > 0 {
                            false
                        } else {
                            s.idle > local.idle
                        }
                    } else {
                        let pct = Self::imbalance_pct(level) as f64 / 100.0;
                        load(s) / (s.weight as f64) * pct < load(&mut local) / (local.weight as f64)
                    }
                }
            };
            if go {
                let g = &groups[idlest.unwrap().gi];
                cpu = self.idlest_cpu(sim, g, g[0], exclude);
                if level == Level::Mc {
                    break;
                }
            }
            li -= 1;
        }
        cpu
    }

    fn record_wakee(&mut self, now: u64, waker: Tid, wakee: Tid) {
        let d = &mut self.td[waker as usize];
        // wakee_flips decay: halved at most once per second.
        if now > d.flips_decay + 1_000_000_000 {
            d.wakee_flips /= 2;
            d.flips_decay = now;
        }
        if d.last_wakee != Some(wakee) {
            d.last_wakee = Some(wakee);
            d.wakee_flips += 1;
        }
    }

    fn wake_wide(&self, m: &Machine, waker: Tid, wakee: Tid, cpu: u32) -> bool {
        let factor = m.die_cpus[m.cpu_die[cpu as usize] as usize].len() as u32;
        let mut master = self.td[waker as usize].wakee_flips;
        let mut slave = self.td[wakee as usize].wakee_flips;
        if master < slave {
            std::mem::swap(&mut master, &mut slave);
        }
        !(slave < factor || master < slave * factor)
    }

    fn wake_affine(&self, sim: &Sim, t: Tid, this: u32, prev: u32, sync: bool) -> u32 {
        let m = &sim.machine;
        let now = sim.now();
        // WA_IDLE
        let share = m.cpu_die[this as usize] == m.cpu_die[prev as usize];
        if sim.cpu_is_idle(this) && share {
            return if sim.cpu_is_idle(prev) { prev } else { this };
        }
        if sync && self.rq[this as usize].nr_running() == 1 {
            return this;
        }
        // Since 5.11 an idle previous CPU wins before the weights.
        if self.kernel == Kernel::Eevdf && sim.cpu_is_idle(prev) && self.rq[prev as usize].nr_running() == 0 {
            return prev;
        }
        // WA_WEIGHT
        let tl = self.td[t as usize].load.at(now, &self.decay);
        let mut this_eff = self.load(now, this);
        if sync {
            if let Some(c) = self.rq[this as usize].curr {
                this_eff -= self.td[c as usize].load.at(now, &self.decay);
            }
        }
        this_eff = (this_eff + tl) * 100.0;
        let pct = Self::imbalance_pct(Self::lowest_shared_level(m, this, prev)) as f64;
        let prev_eff = (self.load(now, prev) - tl) * (100.0 + (pct - 100.0) / 2.0);
        if this_eff < prev_eff {
            this
        } else {
            prev
        }
    }

    fn llc_scan<'a>(&self, m: &'a Machine, target: u32) -> impl Iterator<Item = u32> + 'a {
        let cpus = &m.die_cpus[m.cpu_die[target as usize] as usize];
        let start = self.llc_pos[target as usize] as usize;
        let n = cpus.len();
        // Wrapped without a division (a sixth of the wake-up scan's time).
        (0..n).map(move |i| cpus[if start + i < n { start + i } else { start + i - n }])
    }

    /// Whether `c` is idle; each test is one CPU looked at, which a
    /// placement pays for (docs/model.md, The kernel's own time).
    fn idle(&self, sim: &Sim, c: u32) -> bool {
        sim.note_scan(1);
        self.idle_unnoted(sim, c)
    }

    /// `idle` for a scan that notes the CPUs it looks at itself (a group's
    /// at once).
    fn idle_unnoted(&self, sim: &Sim, c: u32) -> bool {
        self.rq[c as usize].nr_running() == 0 && sim.cpu_is_idle(c)
    }

    /// Whether every task of `c`'s run queue, and at least one, is
    /// SCHED_IDLE (fair.c, sched_idle_cpu: `rq->nr_running ==
    /// rq->cfs.idle_h_nr_running`, since 5.4, so in both kernels modelled).
    fn sched_idle_cpu(&self, sim: &Sim, c: u32) -> bool {
        let rq = &self.rq[c as usize];
        sim.any_sched_idle && rq.nr_running() > 0 && rq.curr.into_iter().chain(rq.queue.iter().map(|&(_, t)| t)).all(|t| sim.task(t).sched_idle)
    }

    /// select_idle_sibling's test of a CPU: `available_idle_cpu(cpu) ||
    /// sched_idle_cpu(cpu)` (fair.c): a CPU running only SCHED_IDLE tasks
    /// counts as idle, since the woken task preempts them at once.
    fn idle_for_wakeup(&self, sim: &Sim, c: u32) -> bool {
        self.idle(sim, c) || self.sched_idle_cpu(sim, c)
    }

    /// `this`: the CPU the wake-up runs on, whose idle average sizes the
    /// scan (`this_rq()` in the kernel).
    pub fn select_idle_sibling(&mut self, sim: &Sim, t: Tid, prev: u32, target: u32, this: u32) -> u32 {
        let m = &sim.machine;
        if self.idle_for_wakeup(sim, target) {
            return target;
        }
        let share = |a: u32, b: u32| m.cpu_die[a as usize] == m.cpu_die[b as usize];
        if prev != target && share(prev, target) && self.idle_for_wakeup(sim, prev) {
            return prev;
        }
        // Since 5.16 the previous CPU becomes recent_used_cpu at every
        // wake-up; in 5.9 only when the recent one is taken.
        let today = self.kernel == Kernel::Eevdf;
        let recent = self.td[t as usize].recent_used_cpu;
        if today {
            self.td[t as usize].recent_used_cpu = prev;
        }
        if recent != prev && recent != target && share(recent, target) && self.idle_for_wakeup(sim, recent) {
            self.td[t as usize].recent_used_cpu = prev;
            return recent;
        }
        let die = m.cpu_die[target as usize] as usize;
        if today {
            return self.select_idle_smt_cpu_eevdf(sim, prev, target, die);
        }
        if m.spec.threads_per_core > 1 && self.has_idle_cores[die] {
            let found = self
                .llc_scan(m, target)
                .find(|&c| m.siblings(c).iter().all(|&s| self.idle(sim, s)));
            match found {
                Some(c) => {
                    self.n.idle_core_found += 1;
                    return c;
                }
                None => self.has_idle_cores[die] = false,
            }
        }
        // select_idle_cpu with SIS_PROP's budget (docs/model.md, Placement in
        // the fair class).
        let llc_weight = m.die_cpus[die].len() as f64;
        let a = sim.avg_idle(this) / 512.0;
        let c = SCAN_COST_NS + 1.0;
        let nr = if a > 4.0 * c { (llc_weight * a / c) as usize } else { 4 };
        // The kernel's loop starts at the target and gives up when its
        // budget reaches zero: nr - 1 CPUs looked at, the target first.
        if let Some(found) = self.llc_scan(m, target).take(nr - 1).find(|&c| self.idle_for_wakeup(sim, c)) {
            return found;
        }
        if let Some(&s) = m.siblings(target).iter().find(|&&s| s != target && self.idle_for_wakeup(sim, s)) {
            return s;
        }
        target
    }

    fn dequeue_queued(&mut self, t: Tid) {
        if let Some(c) = self.td[t as usize].queued_on.take() {
            self.q_remove(c, t);
            self.set_waiting(c);
        }
    }

    /// Move a waiting task from `from` to `to` (load balancing).
    fn pull(&mut self, sim: &mut Sim, from: u32, to: u32) -> Option<Tid> {
        // The kernel detaches from the tail of the task list, skipping
        // cache-hot tasks; we take the last (largest vruntime) waiting task
        // that may run on `to` (can_migrate_task).
        let &(_, t) = self.rq[from as usize].queue.iter().rev().find(|&&(_, t)| sim.may_run(t, to))?;
        self.requeue(sim, t, from, to);
        Some(t)
    }

    /// Move waiting task `t` from `from`'s queue to `to`'s, keeping its
    /// vruntime relative to each queue's minimum, as migration does.
    fn requeue(&mut self, sim: &mut Sim, t: Tid, from: u32, to: u32) {
        let now = sim.now();
        if self.kernel == Kernel::Eevdf {
            self.migrate_eevdf(now, from, to, t);
            self.set_waiting(from);
        } else {
            self.dequeue_queued(t);
            let d = &mut self.td[t as usize];
            d.vr = d.vr.saturating_sub(self.rq[from as usize].min_vr) + self.rq[to as usize].min_vr;
            d.vr_cpu = to;
        }
        self.td[t as usize].queued_on = Some(to);
        self.q_insert(to, t);
        self.set_waiting(to);
        sim.set_task_cpu(t, to);
        self.update_load(now, from);
        self.update_load(now, to);
    }

    /// Move a task waiting in one of the fair class's queues to `to`'s queue
    /// (for policies built on this one, e.g. a deferred migration when a
    /// timer fires). False if the task is not waiting in a queue.
    pub fn move_queued(&mut self, sim: &mut Sim, t: Tid, to: u32) -> bool {
        let Some(from) = self.td.get(t as usize).and_then(|d| d.queued_on) else { return false };
        if !sim.may_run(t, to) {
            return false;
        }
        if from == to {
            return true;
        }
        self.requeue(sim, t, from, to);
        sim.kick(to);
        true
    }

    /// Whether `t` waits in one of the fair class's queues (not running).
    pub fn is_queued(&self, t: Tid) -> bool {
        self.td.get(t as usize).is_some_and(|d| d.queued_on.is_some())
    }

    /// Balance interval of a domain level (docs/model.md, Load balancing): span
    /// weight in ms, x busy_factor on a busy CPU, at least one tick.
    fn interval(&self, sim: &Sim, level: Level, cpu: u32, busy: bool) -> u64 {
        let weight = match level {
            Level::Numa => sim.nr_cpus() as u64,
            _ => Self::span(&sim.machine, level, cpu).len().max(1) as u64,
        };
        let factor = if self.kernel == Kernel::Eevdf { BUSY_FACTOR_TODAY } else { BUSY_FACTOR };
        (weight * MS * if busy { factor } else { 1 }).max(TICK_NS)
    }

    /// rebalance_domains: balance `cpu` at every level whose interval has
    /// passed, bottom-up; after a pull the CPU counts as busy for the levels
    /// above. `pid` is the running task (0 when balancing for an idle CPU).
    /// Returns the tasks pulled.
    fn rebalance_domains(&mut self, sim: &mut Sim, cpu: u32, pid: u32, mut idle: bool) -> u32 {
        let now = sim.now();
        let mut total = 0;
        for li in 0..self.levels.len() {
            let level = self.levels[li];
            let interval = self.interval(sim, level, cpu, !idle);
            if self.rq[cpu as usize].last_balance[li].is_some_and(|last| now < last + interval) {
                continue;
            }
            self.rq[cpu as usize].last_balance[li] = Some(now);
            if level == Level::Mc && self.kernel == Kernel::Eevdf {
                self.update_idle_cpu_scan(sim, cpu);
            }
            sim.trace(cpu, pid, ids::PERIODIC_BALANCE_BEGIN, li as u32, 0);
            let pulled = self.load_balance(sim, cpu, level, idle);
            sim.trace(cpu, pid, ids::PERIODIC_BALANCE_END, li as u32, pulled);
            if pulled > 0 {
                idle = false;
                total += pulled;
            }
        }
        total
    }

    /// _nohz_idle_balance, run by the kicked idle-load-balance CPU `ilb`:
    /// rebalance_domains for every idle CPU whose balance is due, in CPU-id
    /// order, the ilb itself last; stops if the ilb gets work. Then
    /// nohz.next_balance becomes the earliest next balance of the idle CPUs.
    fn nohz_idle_balance(&mut self, sim: &mut Sim, ilb: u32) {
        let now = sim.now();
        self.n.nohz_passes += 1;
        let n = sim.nr_cpus();
        let mut next = u64::MAX;
        for c in (0..n).filter(|&c| c != ilb).chain(std::iter::once(ilb)) {
            if c != ilb && (!self.idle(sim, c) || !self.rq[ilb as usize].queue.is_empty()) {
                continue;
            }
            let pulled = self.rebalance_domains(sim, c, 0, true);
            self.n.nohz_pulls += pulled as u64;
            if self.idle(sim, c) || c == ilb {
                for li in 0..self.levels.len() {
                    let last = self.rq[c as usize].last_balance[li].unwrap_or(0);
                    let due = last + self.interval(sim, self.levels[li], c, false);
                    next = next.min(due);
                }
            }
        }
        self.nohz_next = next.max(now + TICK_NS);
    }

    /// load_balance for `dst` at one level (5.9 find_busiest_group,
    /// calculate_imbalance, find_busiest_queue, detach_tasks; docs/model.md,
    /// Load balancing), on runnable counts and the model's PELT loads. Moves up to
    /// the computed imbalance, at most NR_MIGRATE tasks, from the busiest CPU
    /// of the busiest group; only waiting tasks move (no active balance).
    /// Returns the tasks moved.
    fn load_balance(&mut self, sim: &mut Sim, dst: u32, level: Level, dst_idle: bool) -> u32 {
        let now = sim.now();
        let (src, count) = {
            let groups = self.groups(&sim.machine, level, dst);
            // Runnable and idle counts first; the decayed loads only where
            // a comparison needs them (overloaded or fully busy groups).
            let stat = |g: &[u32]| {
                let mut s = GStat { weight: g.len() as u64, ..GStat::default() };
                // Each CPU looked at once (`idle`, in one count).
                sim.note_scan(g.len() as u32);
                for &c in g {
                    s.nr += self.rq[c as usize].nr_running();
                    s.idle += self.idle_unnoted(sim, c) as u64;
                }
                s
            };
            let load_of = |g: &[u32]| g.iter().map(|&c| self.load(now, c)).sum::<f64>();
            let li = match self.local_group[dst as usize][level as usize] {
                u32::MAX => return 0,
                i => i as usize,
            };
            let mut local = stat(&groups[li]);
            let mut all = local;
            let mut busiest: Option<(usize, GStat)> = None;
            let ng = groups.len();
            for i in 1..ng {
                let gi = (li + i) % ng;
                let mut s = stat(&groups[gi]);
                all.nr += s.nr;
                all.weight += s.weight;
                if s.nr == 0 {
                    continue;
                }
                // update_sd_pick_busiest: highest group type; among groups
                // with spare capacity, fewest idle CPUs then most tasks;
                // otherwise highest average load.
                let better = match &mut busiest {
                    None => true,
                    Some((_, b)) if s.kind() != b.kind() => s.kind() > b.kind(),
                    Some((_, b)) if s.kind() == 0 => s.idle < b.idle || (s.idle == b.idle && s.nr > b.nr),
                    Some((bgi, b)) => {
                        s.load = load_of(&groups[gi]);
                        if b.load.is_nan() {
                            b.load = load_of(&groups[*bgi]);
                        }
                        s.avg() > b.avg()
                    }
                };
                if better {
                    busiest = Some((gi, s));
                }
            }
            let Some((bi, mut b)) = busiest else { return 0 };
            if local.kind() != 0 {
                // Loads count from here on only for a local group without
                // spare capacity (its checks, and migrate_load).
                local.load = load_of(&groups[li]);
                if b.load.is_nan() {
                    b.load = load_of(&groups[bi]);
                }
                all.load = groups.iter().map(|g| load_of(g)).sum();
            }
            let avg = all.avg();
            // find_busiest_group's checks.
            if local.kind() > b.kind() {
                return 0;
            }
            if local.kind() == 2 {
                let pct = Self::imbalance_pct(level) as f64 / 100.0;
                if local.avg() >= b.avg() || local.avg() >= avg || b.avg() <= pct * local.avg() {
                    return 0;
                }
            }
            // SD_PREFER_SIBLING (MC and NUMA children) forces balancing when
            // the busiest group runs more than one task more than the local.
            let force = local.kind() == 0 && b.nr > local.nr + 1;
            if !force && b.kind() != 2 && (!dst_idle || (b.weight > 1 && local.idle <= b.idle + 1) || b.nr == 1) {
                return 0;
            }
            // calculate_imbalance, in tasks.
            let imbalance = if local.kind() == 0 {
                if b.kind() == 2 {
                    // migrate_util: the local group's spare capacity, one
                    // task per CPU without a task; at least one task for an
                    // idle CPU.
                    (local.weight - local.nr).max(dst_idle as u64)
                } else {
                    // migrate_task: half the difference in tasks
                    // (prefer_sibling, or single-CPU groups at SMT); at NUMA,
                    // adjust_numa_imbalance allows up to 2 tasks' imbalance.
                    let diff = b.nr.saturating_sub(local.nr);
                    if self.kernel == Kernel::Eevdf {
                        // Today: a busy CPU evens out nothing
                        // (sibling_imbalance); at NUMA a difference of up to
                        // 2 stays while the local node would run at most
                        // imb_numa_nr tasks (adjust_numa_imbalance).
                        let imb = self.ev.as_ref().map_or(1, |e| e.imb_numa_nr);
                        if !dst_idle || (level == Level::Numa && local.nr < imb && diff <= eevdf::NUMA_IMBALANCE_MIN) {
                            0
                        } else {
                            diff / 2
                        }
                    } else if level == Level::Numa && b.nr <= 2 {
                        0
                    } else {
                        diff / 2
                    }
                }
            } else {
                // migrate_load: toward the domain's average load; a task
                // (load 1) moves while at least half of it fits.
                let x = ((b.avg() - avg) * b.weight as f64).min((avg - local.avg()) * local.weight as f64);
                if x > 0.0 {
                    (x + 0.5) as u64
                } else {
                    0
                }
            };
            if imbalance == 0 {
                return 0;
            }
            // find_busiest_queue: the CPU with the most tasks that has tasks
            // waiting.
            let src = groups[bi]
                .iter()
                .copied()
                .filter(|&c| {
                    c != dst
                        && !self.rq[c as usize].queue.is_empty()
                        && sim.cpu(c).mode == crate::sim::Mode::Running
                })
                .max_by_key(|&c| (self.rq[c as usize].nr_running(), std::cmp::Reverse(c)));
            let Some(src) = src else { return 0 };
            (src, imbalance.min(NR_MIGRATE).min(self.rq[src as usize].queue.len() as u64))
        };
        let mut moved = 0;
        for _ in 0..count {
            if self.pull(sim, src, dst).is_none() {
                break;
            }
            moved += 1;
        }
        if moved > 0 {
            sim.kick(dst);
        }
        moved
    }
}

impl Policy for Cfs {
    fn name(&self) -> String {
        match self.kernel {
            Kernel::V5_9 => "cfs".into(),
            Kernel::Eevdf => "eevdf".into(),
        }
    }

    fn init_task(&mut self, sim: &mut Sim, t: Tid, parent: Option<Tid>) {
        let t = t as usize;
        if self.td.len() <= t {
            self.td.resize(t + 1, TaskData::default());
        }
        let now = sim.now();
        let cpu = parent.map(|p| sim.task(p).cpu).unwrap_or(0);
        let pvr = parent.map(|p| {
            let d = &self.td[p as usize];
            d.vr.saturating_sub(self.rq[d.vr_cpu as usize].min_vr)
        });
        let weight = load_weight(sim.task(t as Tid).nice, sim.task(t as Tid).sched_idle);
        let d = &mut self.td[t];
        d.weight = weight;
        // A new task's load starts full (load_avg = weight, docs/model.md,
        // PELT and schedutil).
        let l = weight as f64 / NICE_0_LOAD as f64;
        d.load = Avg { v: l, n: l, t: now };
        d.recent_used_cpu = cpu;
        d.vr_cpu = cpu;
        d.vr = pvr.unwrap_or(0) + self.rq[cpu as usize].min_vr;
    }

    /// set_load_weight and reweight_task: the task's weight follows its
    /// nice value and policy. Under 5.9 its vruntime stays
    /// (reweight_entity); under `eevdf` its lag and deadline scale.
    fn set_nice(&mut self, sim: &mut Sim, t: Tid) {
        let w = load_weight(sim.task(t).nice, sim.task(t).sched_idle);
        let now = sim.now();
        if self.td[t as usize].weight == w {
            return;
        }
        if self.kernel == Kernel::Eevdf {
            self.reweight_eevdf(now, t, w);
        } else if let Some(c) = self.td[t as usize].queued_on {
            // The queue's weight sum changes with it.
            self.q_remove(c, t);
            self.td[t as usize].weight = w;
            self.q_insert(c, t);
        } else if let Some(c) = (0..self.rq.len() as u32).find(|&c| self.rq[c as usize].curr == Some(t)) {
            // update_curr: the run so far counts at the old weight.
            let vr = self.curr_vr(now, c).unwrap_or(0);
            let d = &mut self.td[t as usize];
            d.vr = vr;
            d.exec_start = now;
            d.weight = w;
        } else {
            self.td[t as usize].weight = w;
        }
        let cpu = sim.task(t).cpu;
        if self.td[t as usize].queued_on.is_some() || self.rq[cpu as usize].curr == Some(t) {
            self.update_load(now, cpu);
        }
    }

    /// core.c, affine_move_task: a queued task whose CPU left its allowed
    /// set moves to an allowed one (move_queued_task).
    fn set_cpumask(&mut self, sim: &mut Sim, t: Tid) {
        let cpu = sim.task(t).cpu;
        if self.is_queued(t) && !sim.may_run(t, cpu) {
            let to = sim.fallback_cpu(t, cpu);
            self.move_queued(sim, t, to);
        }
    }

    fn select_cpu(&mut self, sim: &mut Sim, t: Tid, prev: u32, w: Wake) -> u32 {
        let now = sim.now();
        match w.kind {
            WakeKind::Fork | WakeKind::Exec => {
                if self.kernel == Kernel::Eevdf {
                    self.td[t as usize].wake_cpu = w.waker_cpu;
                }
                let exclude = if w.kind == WakeKind::Exec { Some(prev) } else { None };
                let c = self.find_idlest(sim, prev, exclude);
                if w.kind == WakeKind::Fork {
                    self.n.fork_placements += 1;
                } else if c != prev {
                    self.n.exec_migrations += 1;
                }
                c
            }
            WakeKind::Wakeup => {
                self.n.wakeups += 1;
                let mut target = prev;
                let today = self.kernel == Kernel::Eevdf;
                if today {
                    self.td[t as usize].wake_cpu = w.waker_cpu;
                }
                if let Some(waker) = w.waker {
                    self.record_wakee(now, waker, t);
                    let affine = !self.wake_wide(&sim.machine, waker, t, w.waker_cpu);
                    if affine && w.waker_cpu != prev {
                        target = self.wake_affine(sim, t, w.waker_cpu, prev, w.sync);
                        if target == w.waker_cpu {
                            self.n.wake_affine += 1;
                            // 5.9 only: since 5.16 the wakee's previous
                            // CPU becomes its recent_used_cpu instead.
                            if !today {
                                self.td[waker as usize].recent_used_cpu = w.waker_cpu;
                            }
                        }
                    }
                }
                self.select_idle_sibling(sim, t, prev, target, w.waker_cpu)
            }
        }
    }

    fn enqueue(&mut self, sim: &mut Sim, t: Tid, cpu: u32, flags: Enq) {
        if self.kernel == Kernel::Eevdf {
            return self.enqueue_eevdf(sim, t, cpu, flags);
        }
        let now = sim.now();
        let c = cpu as usize;
        self.update_min_vr(now, cpu);
        let min = self.rq[c].min_vr;
        let nr = self.rq[c].nr_running();
        let load = self.rq_weight(cpu);
        let d = &mut self.td[t as usize];
        if d.vr_cpu != cpu {
            d.vr = d.vr.saturating_sub(self.rq[d.vr_cpu as usize].min_vr) + min;
            d.vr_cpu = cpu;
        }
        match flags {
            // START_DEBIT: one virtual slice (sched_vslice) after
            // min_vruntime.
            Enq::New | Enq::Initial => {
                d.vr = d.vr.max(min + delta_fair(Self::slice(nr + 1, d.weight, load + d.weight), d.weight))
            }
            Enq::Wakeup => d.vr = d.vr.max(min.saturating_sub(SLEEPER_CREDIT)),
            Enq::Exec | Enq::Preempted => {}
        }
        if flags != Enq::Preempted {
            d.load.set(now, d.weight as f64 / NICE_0_LOAD as f64, &self.decay);
        }
        let (vr, w) = (d.vr, d.weight);
        d.queued_on = Some(cpu);
        self.q_insert(cpu, t);
        self.set_waiting(cpu);
        self.update_load(now, cpu);
        // check_preempt_wakeup: an idle-policy task is preempted by a
        // waking normal one; an idle-policy task waking never preempts;
        // otherwise preempt if the current task leads by more than the
        // waking task's wakeup granularity (wakeup_gran: calc_delta_fair).
        if matches!(flags, Enq::Wakeup | Enq::New) {
            if let (Some(cvr), Some(curr)) = (self.curr_vr(now, cpu), self.rq[c].curr) {
                let (curr_idle, t_idle) = (sim.task(curr).sched_idle, sim.task(t).sched_idle);
                if (curr_idle && !t_idle) || (!t_idle && cvr > vr + delta_fair(WAKEUP_GRAN, w)) {
                    self.n.wakeup_preemptions += 1;
                    sim.resched(cpu);
                }
            }
        }
    }

    fn dispatch(&mut self, sim: &mut Sim, cpu: u32) -> Option<Tid> {
        let c = cpu as usize;
        let kicked = std::mem::take(&mut self.rq[c].nohz_kicked);
        if kicked && self.balance && self.rq[c].queue.is_empty() {
            self.nohz_idle_balance(sim, cpu);
        }
        if self.rq[c].queue.is_empty() && self.balance {
            // newidle_balance: skipped when the CPU expects a short idle
            // period.
            if sim.avg_idle(cpu) >= MIGRATION_COST as f64 && !self.waiting.is_empty() {
                // load_balance as CPU_NEWLY_IDLE at each level, bottom-up,
                // until one pulls (docs/model.md, Load balancing).
                sim.trace(cpu, 0, ids::IDLE_BALANCE_BEGIN, 0, 0);
                let mut pulled = 0;
                for li in 0..self.levels.len() {
                    let level = self.levels[li];
                    // Only waiting tasks move, and at a level only from the
                    // other groups: CPUs whose nearest shared level with
                    // this one is this level. Without any, the level's
                    // statistics would be computed for nothing.
                    let m = &sim.machine;
                    if !self.waiting.iter().any(|c| c != cpu && Self::lowest_shared_level(m, cpu, c) == level) {
                        continue;
                    }
                    pulled = self.load_balance(sim, cpu, level, true);
                    if pulled > 0 {
                        break;
                    }
                }
                self.n.newidle_pulls += pulled as u64;
                sim.trace(cpu, 0, ids::IDLE_BALANCE_END, pulled, 0);
            }
        }
        let t = if self.kernel == Kernel::Eevdf {
            self.pick_eevdf(sim.now(), cpu)?
        } else {
            self.rq[c].queue.first()?.1
        };
        self.q_remove(cpu, t);
        self.td[t as usize].queued_on = None;
        self.set_waiting(cpu);
        Some(t)
    }

    fn running(&mut self, sim: &mut Sim, t: Tid, cpu: u32) {
        let now = sim.now();
        let d = &mut self.td[t as usize];
        d.exec_start = now;
        d.picked_at = now;
        self.rq[cpu as usize].curr = Some(t);
        self.update_min_vr(now, cpu);
        if self.kernel == Kernel::Eevdf {
            self.running_eevdf(cpu, t);
        }
    }

    fn stopping(&mut self, sim: &mut Sim, t: Tid, cpu: u32, runnable: bool) {
        let now = sim.now();
        if self.kernel == Kernel::Eevdf {
            // update_entity_lag at dequeue, while the task still counts
            // in V; a preempted task keeps its place, an exec that moves
            // takes this lag along.
            self.save_lag(now, cpu, t);
        }
        let d = &mut self.td[t as usize];
        d.vr += delta_fair(now.saturating_sub(d.exec_start), d.weight);
        d.exec_start = now;
        self.rq[cpu as usize].curr = None;
        if !runnable {
            d.load.set(now, 0.0, &self.decay);
        }
        self.update_min_vr(now, cpu);
        self.update_load(now, cpu);
    }

    fn exit_task(&mut self, _sim: &mut Sim, t: Tid) {
        self.dequeue_queued(t);
    }

    fn update_idle(&mut self, sim: &mut Sim, cpu: u32, idle: bool) {
        if idle {
            let m = &sim.machine;
            if m.siblings(cpu).iter().all(|&s| self.idle(sim, s)) {
                self.has_idle_cores[m.cpu_die[cpu as usize] as usize] = true;
            }
        }
    }

    fn tick(&mut self, sim: &mut Sim, cpu: u32, t: Tid) {
        let now = sim.now();
        let c = cpu as usize;
        if self.kernel == Kernel::Eevdf {
            self.tick_eevdf(sim, cpu, t);
            return self.tick_balance(sim, cpu, t);
        }
        // check_preempt_tick (docs/model.md, Run queue and tick).
        let nr = self.rq[c].nr_running();
        let ideal = Self::slice(nr, self.td[t as usize].weight, self.rq_weight(cpu));
        let ran = now - self.td[t as usize].picked_at;
        if nr > 1 {
            if ran > ideal {
                self.n.tick_preemptions += 1;
                sim.resched(cpu);
            } else if ran >= MIN_GRAN {
                if let (Some(&(lvr, _)), Some(cvr)) = (self.rq[c].queue.first(), self.curr_vr(now, cpu)) {
                    if cvr > lvr + ideal {
                        self.n.tick_preemptions += 1;
                        sim.resched(cpu);
                    }
                }
            }
        }
        self.tick_balance(sim, cpu, t)
    }

    fn stats(&self) -> serde_json::Value {
        let n = &self.n;
        let mut v = serde_json::json!({
            "fork_placements": n.fork_placements,
            "exec_migrations": n.exec_migrations,
            "wakeups": n.wakeups,
            "wake_affine": n.wake_affine,
            "idle_core_found": n.idle_core_found,
            "periodic_pulls": n.periodic_pulls,
            "newidle_pulls": n.newidle_pulls,
            "nohz_kicks": n.nohz_kicks,
            "nohz_passes": n.nohz_passes,
            "nohz_pulls": n.nohz_pulls,
            "wakeup_preemptions": n.wakeup_preemptions,
            "tick_preemptions": n.tick_preemptions,
        });
        if self.kernel == Kernel::Eevdf {
            self.stats_eevdf(&mut v);
        }
        v
    }
}

impl Cfs {
    /// The tick's balancing, the same in both kernels: periodic balancing
    /// and the NOHZ kick.
    fn tick_balance(&mut self, sim: &mut Sim, cpu: u32, t: Tid) {
        let now = sim.now();
        let c = cpu as usize;
        if !self.balance {
            return;
        }
        let t_pid = sim.task(t).pid;
        // Periodic balancing per level: interval = span weight ms, x32 on a
        // busy CPU (docs/model.md, Load balancing).
        self.n.periodic_pulls += self.rebalance_domains(sim, cpu, t_pid, false) as u64;
        // nohz_balancer_kick: a busy CPU with waiting tasks (nr_running >= 2)
        // kicks the idle-load-balance CPU once nohz.next_balance is due
        // (docs/model.md, Load balancing). find_new_ilb: the first idle CPU in
        // CPU-id order, machine-wide.
        if !self.rq[c].queue.is_empty() && now >= self.nohz_next {
            self.nohz_next = now + TICK_NS;
            if let Some(x) = (0..sim.nr_cpus()).find(|&x| self.idle(sim, x)) {
                self.rq[x as usize].nohz_kicked = true;
                self.n.nohz_kicks += 1;
                sim.kick(x);
            }
        }
    }
}
