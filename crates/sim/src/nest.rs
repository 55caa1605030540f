// SPDX-License-Identifier: GPL-2.0-only
//! `nest`: the Nest placement policy (Nest, section 3), with the parameters
//! of its Table 1, on top of the fair-class model.
//!
//! As Nest on Linux, it changes only the choice of a CPU for a forked or
//! woken task; run queues, preemption and load balancing stay the fair
//! class's (`cfs`), which is also the fallback when the nests have no idle
//! core.
//!
//! - Two nests of CPUs: the primary nest (cores in use or used recently) and
//!   the reserve nest (at most R_max cores, formerly primary or recently
//!   chosen by the fallback) (section 3.1).
//! - Search order for a woken or forked task: the attached core (section
//!   3.3), the previous core, the primary nest from the previous core (the
//!   parent's for a fork), the reserve nest from a fixed core, each nest on
//!   the previous core's die first; then the fair-class choice, extended on
//!   wakeups to every die when its die has no idle CPU (section 3.4).
//! - A reserve core that is chosen is promoted to the primary nest; a core
//!   chosen by the fallback enters the reserve nest if there is room
//!   (section 3.1).
//! - Compaction: a primary core idle for more than P_remove ticks is
//!   demoted when a search meets it, unless it is the searching task's
//!   attached core (sections 3.1, 3.3).
//! - A core whose task exits and that goes idle is demoted at once
//!   (section 3.1).
//! - Impatience: a task whose previous core is busy R_impatient times in a
//!   row skips the primary nest, and the core it gets joins the primary nest
//!   directly (section 3.1). ASSUMPTIONS: the miss is counted on wakeups
//!   (a fork has no previous core of its own) and the placement that makes
//!   the R_impatient-th miss is already impatient; an impatient task that
//!   finds no idle core outside the primary nest takes an idle primary core
//!   rather than wait behind another task.
//! - Attachment: a task that ran twice in a row on the same core is attached
//!   to it (section 3.3).
//! - Spinning: a primary core whose task blocks stays in C0 at its frequency
//!   for up to S_max ticks, and stops as soon as its SMT sibling has work
//!   (section 3.2). The engine ends a spin at the time it was given, so a
//!   spin cut short by the sibling ends 1 ns later.
//! - Claim flag: a core chosen for a placement that is still in flight (the
//!   task has not started to run there) is not chosen again (section 3.4).
//!   The simulator places one task at a time and counts a placed task on its
//!   CPU at once; without the flag, a CPU's idleness is judged as a kernel
//!   without the flag sees it during the race window: tasks placed there
//!   that have not run yet are not counted, so two placements before either
//!   task runs can pick the same core.
//!
//! Each membership change is a NEST_CHANGE trace event on the CPU, with
//! a = the new membership and b = the old one (membership::{NONE, RESERVE,
//! PRIMARY}).
//!
//! With reserve=off, the cores the fallback chooses join the primary nest
//! directly, and demoted cores leave the nests.
//!
//! Every feature has a switch (`nest:spin=off,reserve=off,...`) for the
//! paper's ablations (section 5.2, 5.3, 5.4), and the four parameters of
//! Table 1 can be changed (`nest:p_remove=2,r_max=5,r_impatient=2,s_max=2`).

use warmcore_trace::event::nest as membership;
use warmcore_trace::ids;

use crate::cfs::{Cfs, OnCfs};
use crate::machine::Machine;
use crate::policy::{Policy, Wake, WakeKind};
use crate::sim::{Mode, Sim, Tid, TICK_NS};
use crate::SimError;

/// Nest, Table 1: P_remove = 2 ticks, the delay before an idle primary core
/// may be compacted.
pub const P_REMOVE_TICKS: u64 = 2;
/// Nest, Table 1: R_max = 5 cores in the reserve nest.
pub const R_MAX: u32 = 5;
/// Nest, Table 1: R_impatient = 2 successive misses.
pub const R_IMPATIENT: u32 = 2;
/// Nest, Table 1: S_max = 2 ticks of spinning.
pub const S_MAX_TICKS: u64 = 2;

/// The switches and parameters.
#[derive(Clone, Debug)]
pub struct NestConfig {
    /// Idle spinning on primary cores (section 3.2).
    pub spin: bool,
    /// The reserve nest (section 3.1); off: fallback cores join the primary
    /// nest directly.
    pub reserve: bool,
    /// Nest compaction (section 3.1).
    pub compaction: bool,
    /// Impatience (section 3.1).
    pub impatience: bool,
    /// The attached core (section 3.3).
    pub attach: bool,
    /// The previous core as the first choice after the attached one
    /// (section 3.1, 5.4).
    pub prev: bool,
    /// Wakeup work conservation across dies (section 3.4).
    pub conservation: bool,
    /// The placement claim flag (section 3.4).
    pub claim: bool,
    /// Immediate demotion of a core whose task exits (section 3.1).
    pub exit_demotion: bool,
    /// Search each nest on the previous core's die first (section 3.1).
    pub die_first: bool,
    pub p_remove_ticks: u64,
    pub r_max: u32,
    pub r_impatient: u32,
    pub s_max_ticks: u64,
}

impl Default for NestConfig {
    fn default() -> Self {
        NestConfig {
            spin: true,
            reserve: true,
            compaction: true,
            impatience: true,
            attach: true,
            prev: true,
            conservation: true,
            claim: true,
            exit_demotion: true,
            die_first: true,
            p_remove_ticks: P_REMOVE_TICKS,
            r_max: R_MAX,
            r_impatient: R_IMPATIENT,
            s_max_ticks: S_MAX_TICKS,
        }
    }
}

const SWITCHES: &[&str] =
    &["spin", "reserve", "compaction", "impatience", "attach", "prev", "conservation", "claim", "exit_demotion", "die_first"];
const NUMBERS: &[&str] = &["p_remove", "r_max", "r_impatient", "s_max"];

impl NestConfig {
    pub fn parse(params: &[(String, String)]) -> Result<NestConfig, SimError> {
        let mut c = NestConfig::default();
        for (k, v) in params {
            if SWITCHES.contains(&k.as_str()) {
                let on = match v.as_str() {
                    "on" => true,
                    "off" => false,
                    _ => return Err(SimError::Input(format!("nest: {k} must be on or off, not '{v}'"))),
                };
                match k.as_str() {
                    "spin" => c.spin = on,
                    "reserve" => c.reserve = on,
                    "compaction" => c.compaction = on,
                    "impatience" => c.impatience = on,
                    "attach" => c.attach = on,
                    "prev" => c.prev = on,
                    "conservation" => c.conservation = on,
                    "claim" => c.claim = on,
                    "exit_demotion" => c.exit_demotion = on,
                    _ => c.die_first = on,
                }
            } else if NUMBERS.contains(&k.as_str()) {
                let (lo, hi, what) = match k.as_str() {
                    "p_remove" => (0, 1000, "ticks"),
                    "r_max" => (0, 4096, "cores"),
                    "r_impatient" => (1, 1000, "misses"),
                    _ => (0, 1000, "ticks"),
                };
                let n: u64 = match v.parse() {
                    Ok(n) if (lo..=hi).contains(&n) => n,
                    _ => {
                        return Err(SimError::Input(format!(
                            "nest: {k} must be a whole number of {what} from {lo} to {hi}, not '{v}'"
                        )))
                    }
                };
                match k.as_str() {
                    "p_remove" => c.p_remove_ticks = n,
                    "r_max" => c.r_max = n as u32,
                    "r_impatient" => c.r_impatient = n as u32,
                    _ => c.s_max_ticks = n,
                }
            } else {
                return Err(SimError::Input(format!(
                    "unknown nest parameter '{k}'; valid: {} (on or off), {} (numbers)",
                    SWITCHES.join(", "),
                    NUMBERS.join(", ")
                )));
            }
        }
        Ok(c)
    }
}

/// Counters of Nest's decisions, in `stats()`.
#[derive(Default, Debug, Clone)]
pub struct NestCounters {
    pub placements: u64,
    pub attached_hits: u64,
    pub prev_hits: u64,
    pub primary_hits: u64,
    pub reserve_hits: u64,
    pub fallbacks: u64,
    /// Fallbacks that found no idle CPU (the task waits on a busy one).
    pub fallback_busy: u64,
    /// Fallbacks that found an idle CPU on another die only through
    /// wakeup work conservation.
    pub conservation_hits: u64,
    pub exec_stays: u64,
    pub promotions: u64,
    pub demotions: u64,
    pub compactions: u64,
    pub exit_demotions: u64,
    pub impatient_expansions: u64,
    /// Impatient placements that found no idle core outside the primary
    /// nest and took a primary one.
    pub impatient_primary: u64,
    /// Idle cores skipped because a placement on them is in flight.
    pub claim_skips: u64,
    pub spins: u64,
    pub spin_ns: u64,
    /// Spins stopped early because the sibling got work.
    pub spin_sibling_stops: u64,
    pub max_primary: u32,
    pub max_reserve: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct TaskState {
    /// The last two CPUs the task ran on, latest first (section 3.3).
    hist: [Option<u32>; 2],
    /// Successive placements that found the previous core busy.
    impatience: u32,
    /// The CPU a placement of this task is in flight to.
    inflight: Option<u32>,
}

pub struct Nest {
    cfs: Cfs,
    cfg: NestConfig,
    /// Per CPU: membership::{NONE, RESERVE, PRIMARY}.
    member: Vec<u32>,
    /// Per CPU: last time a task ran there (start or end of a stint).
    last_used: Vec<u64>,
    /// Per CPU: placements in flight to it (tasks placed, not yet run).
    inflight: Vec<u32>,
    /// Per CPU: the task that last left it exited.
    exited_here: Vec<bool>,
    /// Per CPU: a task just blocked there (the next idle period may spin).
    blocked_here: Vec<bool>,
    /// Per CPU: end of the current spin (0: not spinning).
    spin_until: Vec<u64>,
    tasks: Vec<TaskState>,
    nr_primary: u32,
    nr_reserve: u32,
    /// The fixed core the reserve search starts from: CPU 0, where the
    /// simulator starts a workload (the paper uses the core where Nest was
    /// started, section 3.1).
    reserve_start: u32,
    n: NestCounters,
}

impl Nest {
    pub fn new(m: &Machine, params: &[(String, String)]) -> Result<Nest, SimError> {
        let cfg = NestConfig::parse(params)?;
        let n = m.nr_cpus as usize;
        Ok(Nest {
            cfs: Cfs::new(m, &[])?,
            cfg,
            member: vec![membership::NONE; n],
            last_used: vec![0; n],
            inflight: vec![0; n],
            exited_here: vec![false; n],
            blocked_here: vec![false; n],
            spin_until: vec![0; n],
            tasks: Vec::new(),
            nr_primary: 0,
            nr_reserve: 0,
            reserve_start: 0,
            n: NestCounters::default(),
        })
    }

    pub fn config(&self) -> &NestConfig {
        &self.cfg
    }
    pub fn counters(&self) -> &NestCounters {
        &self.n
    }
    /// A CPU's membership: membership::{NONE, RESERVE, PRIMARY}.
    pub fn membership(&self, cpu: u32) -> u32 {
        self.member[cpu as usize]
    }
    pub fn primary(&self) -> Vec<u32> {
        (0..self.member.len() as u32).filter(|&c| self.member[c as usize] == membership::PRIMARY).collect()
    }
    pub fn reserve(&self) -> Vec<u32> {
        (0..self.member.len() as u32).filter(|&c| self.member[c as usize] == membership::RESERVE).collect()
    }
    /// Last time a task ran on `cpu` (ns).
    pub fn last_used(&self, cpu: u32) -> u64 {
        self.last_used[cpu as usize]
    }
    /// Whether `cpu` has been idle long enough to be compacted.
    pub fn compactable(&self, sim: &Sim, cpu: u32) -> bool {
        sim.now().saturating_sub(self.last_used[cpu as usize]) > self.cfg.p_remove_ticks * TICK_NS
    }

    fn ts(&mut self, t: Tid) -> &mut TaskState {
        let i = t as usize;
        if self.tasks.len() <= i {
            self.tasks.resize(i + 1, TaskState::default());
        }
        &mut self.tasks[i]
    }

    /// Whether Nest may place a task on `c`: nothing runs there and no task
    /// waits there; with the claim flag, also no placement in flight to it.
    /// Without the flag, tasks placed there that have not run yet are not
    /// seen (the race of section 3.4).
    pub fn available(&self, sim: &Sim, c: u32) -> bool {
        // One CPU looked at, which a placement pays for (docs/model.md, The
        // kernel's own time).
        sim.note_scan(1);
        let cpu = sim.cpu(c);
        if cpu.curr.is_some() || cpu.mode == Mode::Running {
            return false;
        }
        let inflight = self.inflight[c as usize];
        if self.cfg.claim {
            cpu.nr == 0 && inflight == 0
        } else {
            cpu.nr.saturating_sub(inflight) == 0
        }
    }

    fn set_member(&mut self, sim: &mut Sim, c: u32, to: u32, pid: u32) {
        let from = self.member[c as usize];
        if from == to {
            return;
        }
        match from {
            membership::PRIMARY => self.nr_primary -= 1,
            membership::RESERVE => self.nr_reserve -= 1,
            _ => {}
        }
        match to {
            membership::PRIMARY => self.nr_primary += 1,
            membership::RESERVE => self.nr_reserve += 1,
            _ => {}
        }
        self.member[c as usize] = to;
        self.n.max_primary = self.n.max_primary.max(self.nr_primary);
        self.n.max_reserve = self.n.max_reserve.max(self.nr_reserve);
        sim.trace(c, pid, ids::NEST_CHANGE, to, from);
    }

    /// Into the primary nest (a promotion if it was in the reserve).
    fn add_primary(&mut self, sim: &mut Sim, c: u32, pid: u32) {
        match self.member[c as usize] {
            membership::PRIMARY => return,
            membership::RESERVE => self.n.promotions += 1,
            _ => {}
        }
        self.set_member(sim, c, membership::PRIMARY, pid);
    }

    /// Out of the primary nest: to the reserve if there is room, else out.
    fn demote(&mut self, sim: &mut Sim, c: u32, pid: u32) {
        if self.member[c as usize] != membership::PRIMARY {
            return;
        }
        self.n.demotions += 1;
        let to = if self.cfg.reserve && self.nr_reserve < self.cfg.r_max {
            membership::RESERVE
        } else {
            membership::NONE
        };
        self.set_member(sim, c, to, pid);
    }

    /// Into the reserve nest if it has room (a core the fallback chose).
    fn add_reserve(&mut self, sim: &mut Sim, c: u32, pid: u32) {
        if self.member[c as usize] == membership::NONE && self.cfg.reserve && self.nr_reserve < self.cfg.r_max {
            self.set_member(sim, c, membership::RESERVE, pid);
        }
    }

    /// The CPUs of the machine from `start`, wrapping, on `die`'s die first
    /// when die_first is on (section 3.1).
    fn order(&self, sim: &Sim, start: u32, near: u32) -> Vec<u32> {
        let n = sim.nr_cpus();
        let all = (0..n).map(move |i| (start + i) % n);
        if !self.cfg.die_first {
            return all.collect();
        }
        let die = sim.machine.cpu_die[near as usize];
        let same = all.clone().filter(|&c| sim.machine.cpu_die[c as usize] == die);
        let other = all.filter(|&c| sim.machine.cpu_die[c as usize] != die);
        same.chain(other).collect()
    }

    /// Search one nest for an available core. In the primary nest, cores
    /// idle for more than P_remove ticks are compacted as they are met.
    fn search(&mut self, sim: &mut Sim, nest: u32, start: u32, near: u32, pid: u32) -> Option<u32> {
        for c in self.order(sim, start, near) {
            if self.member[c as usize] != nest {
                continue;
            }
            if !self.available(sim, c) {
                if self.cfg.claim && self.inflight[c as usize] > 0 && sim.cpu(c).curr.is_none() {
                    self.n.claim_skips += 1;
                }
                continue;
            }
            if nest == membership::PRIMARY && self.cfg.compaction && self.compactable(sim, c) {
                self.n.compactions += 1;
                self.demote(sim, c, pid);
                continue;
            }
            return Some(c);
        }
        None
    }

    fn choose(&mut self, sim: &mut Sim, t: Tid, prev: u32, w: Wake) -> u32 {
        let pid = sim.task(t).pid;
        let st = *self.ts(t);
        self.n.placements += 1;

        // Exec: the task keeps its CPU if that CPU is in a nest (it is warm
        // and the task runs there now). ASSUMPTION: the paper describes only
        // fork and wakeup; otherwise the fair class's exec placement.
        if w.kind == WakeKind::Exec {
            if self.member[prev as usize] != membership::NONE {
                self.n.exec_stays += 1;
                return prev;
            }
            return self.fallback(sim, t, prev, w, false, pid);
        }

        // Section 3.1: a task whose previous core is busy R_impatient times
        // in a row is impatient. Forks have no previous core of their own.
        let mut impatient = false;
        if self.cfg.impatience && w.kind == WakeKind::Wakeup {
            let miss = !self.available(sim, prev);
            let s = self.ts(t);
            s.impatience = if miss { s.impatience + 1 } else { 0 };
            impatient = s.impatience >= self.cfg.r_impatient;
        }

        if !impatient {
            // Section 3.3: the attached core first, even if compactable.
            if self.cfg.attach && w.kind == WakeKind::Wakeup {
                if let [Some(a), Some(b)] = st.hist {
                    if a == b && self.member[a as usize] == membership::PRIMARY && self.available(sim, a) {
                        self.n.attached_hits += 1;
                        return a;
                    }
                }
            }
            // The previous core, if it is a usable primary core.
            if self.cfg.prev
                && w.kind == WakeKind::Wakeup
                && self.member[prev as usize] == membership::PRIMARY
                && self.available(sim, prev)
            {
                if self.cfg.compaction && self.compactable(sim, prev) {
                    self.n.compactions += 1;
                    self.demote(sim, prev, pid);
                } else {
                    self.n.prev_hits += 1;
                    return prev;
                }
            }
            // The primary nest from the previous core (the parent's for a
            // fork: the engine passes the parent's CPU).
            if let Some(c) = self.search(sim, membership::PRIMARY, prev, prev, pid) {
                self.n.primary_hits += 1;
                return c;
            }
        }
        // The reserve nest from a fixed core.
        if self.cfg.reserve {
            if let Some(c) = self.search(sim, membership::RESERVE, self.reserve_start, prev, pid) {
                self.n.reserve_hits += 1;
                self.add_primary(sim, c, pid);
                if impatient {
                    self.n.impatient_expansions += 1;
                    self.ts(t).impatience = 0;
                }
                return c;
            }
        }
        self.fallback(sim, t, prev, w, impatient, pid)
    }

    /// The fair class's choice, with wakeup work conservation across dies.
    fn fallback(&mut self, sim: &mut Sim, t: Tid, prev: u32, w: Wake, impatient: bool, pid: u32) -> u32 {
        self.n.fallbacks += 1;
        let mut c = self.cfs.select_cpu(sim, t, prev, w);
        if w.kind == WakeKind::Exec && c == prev {
            // The exec'ing task stays where it runs.
            return c;
        }
        if w.kind == WakeKind::Wakeup && self.cfg.conservation && !self.available(sim, c) {
            // Section 3.4: the fair class only searched one die; search the
            // others, from the next die on.
            let m = &sim.machine;
            let nd = m.die_cpus.len();
            let d0 = m.cpu_die[c as usize] as usize;
            for i in 1..nd {
                let d = (d0 + i) % nd;
                let target = sim.machine.die_cpus[d][0];
                let x = self.cfs.select_idle_sibling(sim, t, prev, target, w.waker_cpu);
                if self.available(sim, x) {
                    self.n.conservation_hits += 1;
                    c = x;
                    break;
                }
            }
        }
        if !self.available(sim, c) {
            // No idle core outside the nests: an impatient task (which
            // skipped the primary nest) still takes an idle primary core
            // rather than wait behind another task. ASSUMPTION: the paper
            // does not say; impatience is meant to grow the nest, not to
            // overload a core.
            if impatient {
                if let Some(x) = self.search(sim, membership::PRIMARY, prev, prev, pid) {
                    self.n.primary_hits += 1;
                    self.n.impatient_primary += 1;
                    self.ts(t).impatience = 0;
                    return x;
                }
            }
        }
        if self.available(sim, c) {
            if impatient || !self.cfg.reserve {
                if impatient {
                    self.n.impatient_expansions += 1;
                }
                self.add_primary(sim, c, pid);
            } else {
                self.add_reserve(sim, c, pid);
            }
        } else {
            self.n.fallback_busy += 1;
        }
        if impatient {
            self.ts(t).impatience = 0;
        }
        c
    }

    fn stop_spin(&mut self, sim: &mut Sim, c: u32) {
        let now = sim.now();
        let until = self.spin_until[c as usize];
        if until > now {
            self.n.spin_ns -= until - now;
            self.n.spin_sibling_stops += 1;
            // End the spin now: the engine ends a spin at its end time, so
            // ask for one that ends 1 ns from now.
            sim.spin(c, now + 1);
        }
        self.spin_until[c as usize] = 0;
    }
}

impl OnCfs for Nest {
    fn cfs(&self) -> &Cfs {
        &self.cfs
    }

    fn cfs_mut(&mut self) -> &mut Cfs {
        &mut self.cfs
    }

    fn name(&self) -> String {
        "nest".into()
    }

    fn init_task(&mut self, sim: &mut Sim, t: Tid, parent: Option<Tid>) {
        *self.ts(t) = TaskState::default();
        self.cfs.init_task(sim, t, parent);
    }

    fn exit_task(&mut self, sim: &mut Sim, t: Tid) {
        let c = sim.task(t).cpu;
        self.exited_here[c as usize] = true;
        if let Some(x) = self.ts(t).inflight.take() {
            self.inflight[x as usize] = self.inflight[x as usize].saturating_sub(1);
        }
        self.cfs.exit_task(sim, t);
    }

    fn select_cpu(&mut self, sim: &mut Sim, t: Tid, prev: u32, w: Wake) -> u32 {
        let c = self.choose(sim, t, prev, w);
        if !(w.kind == WakeKind::Exec && c == prev) {
            // The claim: a placement to `c` is in flight until the task runs.
            if let Some(x) = self.ts(t).inflight.replace(c) {
                self.inflight[x as usize] = self.inflight[x as usize].saturating_sub(1);
            }
            self.inflight[c as usize] += 1;
        }
        c
    }

    fn running(&mut self, sim: &mut Sim, t: Tid, cpu: u32) {
        let now = sim.now();
        self.last_used[cpu as usize] = now;
        self.exited_here[cpu as usize] = false;
        self.blocked_here[cpu as usize] = false;
        let s = self.ts(t);
        let x = s.inflight.take();
        // Section 3.3: a history of the last two cores the task ran on.
        if s.hist[0] != Some(cpu) || s.hist[1] != Some(cpu) {
            s.hist = [Some(cpu), s.hist[0]];
        }
        if let Some(x) = x {
            self.inflight[x as usize] = self.inflight[x as usize].saturating_sub(1);
        }
        self.cfs.running(sim, t, cpu);
    }

    fn stopping(&mut self, sim: &mut Sim, t: Tid, cpu: u32, runnable: bool) {
        self.last_used[cpu as usize] = sim.now();
        self.blocked_here[cpu as usize] = !runnable;
        self.cfs.stopping(sim, t, cpu, runnable);
    }

    fn tick(&mut self, sim: &mut Sim, cpu: u32, t: Tid) {
        self.last_used[cpu as usize] = sim.now();
        self.cfs.tick(sim, cpu, t);
    }

    fn update_idle(&mut self, sim: &mut Sim, cpu: u32, idle: bool) {
        let now = sim.now();
        let c = cpu as usize;
        if idle {
            // A spin cut short by a kick that brought no work.
            if self.spin_until[c] > now {
                self.n.spin_ns -= self.spin_until[c] - now;
            }
            self.spin_until[c] = 0;
            let blocked = std::mem::take(&mut self.blocked_here[c]);
            let exited = std::mem::take(&mut self.exited_here[c]);
            if exited && self.cfg.exit_demotion && self.member[c] == membership::PRIMARY {
                // Section 3.1: the core's task exited and the core is idle.
                self.n.exit_demotions += 1;
                self.demote(sim, cpu, 0);
            } else if blocked
                && self.cfg.spin
                && self.cfg.s_max_ticks > 0
                && self.member[c] == membership::PRIMARY
                && !sim.machine.siblings(cpu).iter().any(|&s| s != cpu && sim.cpu(s).curr.is_some())
            {
                // Section 3.2: spin up to S_max ticks, unless the sibling
                // already keeps the core warm.
                let until = now + self.cfg.s_max_ticks * TICK_NS;
                sim.spin(cpu, until);
                self.spin_until[c] = until;
                self.n.spins += 1;
                self.n.spin_ns += until - now;
            }
        } else {
            if self.spin_until[c] > now {
                // The spinning core got work: the spin ends here.
                self.n.spin_ns -= self.spin_until[c] - now;
            }
            self.spin_until[c] = 0;
            for i in 0..sim.machine.siblings(cpu).len() {
                let s = sim.machine.siblings(cpu)[i];
                if s != cpu {
                    self.stop_spin(sim, s);
                }
            }
        }
        self.cfs.update_idle(sim, cpu, idle);
    }

    fn stats(&self) -> serde_json::Value {
        let n = &self.n;
        serde_json::json!({
            "placements": n.placements,
            "attached_hits": n.attached_hits,
            "prev_hits": n.prev_hits,
            "primary_hits": n.primary_hits,
            "reserve_hits": n.reserve_hits,
            "fallbacks": n.fallbacks,
            "fallback_busy": n.fallback_busy,
            "conservation_hits": n.conservation_hits,
            "exec_stays": n.exec_stays,
            "promotions": n.promotions,
            "demotions": n.demotions,
            "compactions": n.compactions,
            "exit_demotions": n.exit_demotions,
            "impatient_expansions": n.impatient_expansions,
            "impatient_primary": n.impatient_primary,
            "claim_skips": n.claim_skips,
            "spins": n.spins,
            "spin_ns": n.spin_ns,
            "spin_sibling_stops": n.spin_sibling_stops,
            "primary_size": self.nr_primary,
            "reserve_size": self.nr_reserve,
            "max_primary": n.max_primary,
            "max_reserve": n.max_reserve,
            "cfs": self.cfs.stats(),
        })
    }
}
