// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore hunt`: random workloads from a seed, each run deterministically
//! under a sched_ext policy and checked (docs/hunt.md, What it checks); a
//! failure is shrunk to a small workload that fails the same way.
//!
//! Run `i` of seed `S` is the workload and simulator seed `case_seed(S, i)`
//! makes on the machine it picks: the same `(S, i)` is the same run on any
//! thread, so a hunt's result does not depend on how many run at once.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use warmcore_trace::{ids, Event};

use crate::engine::{Engine, Limits};
use crate::sim::Sink;
use crate::program::{Amount, Step, Workload};
use crate::{Governor, Machine, SimError};

/// The machines a hunt uses unless told: 2 to 160 CPUs, one to four
/// sockets, with and without SMT.
pub const DEFAULT_MACHINES: &[&str] = &["core2duo-e8400", "ryzen5-3400g", "default", "xeon-gold-5218-2s", "xeon-e7-8870v4"];

/// A run that has not ended after this much simulated time fails: the
/// workloads are made to end within a few simulated seconds, and every
/// scheduler's watchdog ejects it long before (30 s at most, SCX_WATCHDOG_MAX_TIMEOUT).
pub const RUN_LIMIT_NS: u64 = 120_000_000_000;

/// What broke in a failed run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The watchdog ejected the scheduler (SCX_EXIT_ERROR_STALL).
    Stall,
    /// The scheduler was ejected for another reason (scx_bpf_error, an
    /// invalid CPU or queue, a task on a CPU it may not use).
    Error,
    /// A task waited runnable more than a second while a CPU it may use idled.
    Starvation,
    /// A task ran on a CPU outside its allowed set.
    Affinity,
    /// The run did not end: tasks left that never finish.
    Unfinished,
}

impl Kind {
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Stall => "stall",
            Kind::Error => "error",
            Kind::Starvation => "starvation",
            Kind::Affinity => "affinity",
            Kind::Unfinished => "unfinished",
        }
    }
}

/// A failed run: what broke, and the simulator's one line about it.
#[derive(Clone, Debug)]
pub struct Failure {
    pub kind: Kind,
    pub what: String,
}

/// One generated run.
#[derive(Clone, Debug)]
pub struct Case {
    pub index: u64,
    pub machine: String,
    pub seed: u64,
    pub workload: Workload,
}

/// The seed of run `i` of a hunt seeded `seed` (splitmix64 of the pair).
pub fn case_seed(seed: u64, i: u64) -> u64 {
    let mut z = seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(0x6a09_e667_f3bc_c909);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

struct Draw(ChaCha8Rng);

impl Draw {
    /// Uniform in lo..=hi.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.0.next_u64() % (hi - lo + 1)
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    /// A set of allowed CPUs of the kinds that break schedulers: one CPU,
    /// CPU 0 alone, every CPU but 0, a range, a sparse set, one CPU the
    /// machine lacks beside one it has, every CPU.
    fn mask(&mut self, n: u32) -> Vec<u32> {
        let n64 = n as u64;
        match self.range(0, 6) {
            0 => vec![self.range(0, n64 - 1) as u32],
            1 => vec![0],
            2 if n > 1 => (1..n).collect(),
            3 => {
                let a = self.range(0, n64 - 1) as u32;
                let b = self.range(a as u64, (a as u64 + 4).min(n64 - 1)) as u32;
                (a..=b).collect()
            }
            4 => {
                let mut m: Vec<u32> = (0..n).filter(|_| self.chance(0.25)).collect();
                if m.is_empty() {
                    m.push(self.range(0, n64 - 1) as u32);
                }
                m
            }
            5 => vec![n + self.range(0, 3) as u32, self.range(0, n64 - 1) as u32],
            _ => (0..n).collect(),
        }
    }
    /// Work in microseconds: mostly short, sometimes long.
    fn work_us(&mut self) -> f64 {
        if self.chance(0.7) {
            self.range(5, 300) as f64
        } else {
            self.range(1_000, 20_000) as f64
        }
    }
}

/// Run `index` of a hunt seeded `seed` over `machines` (each with its CPU
/// count): a workload of 1 to 4 tasks per CPU (at most 48) that compute,
/// sleep, change their nice value, policy and allowed CPUs, disable
/// migration around a computation, join a cpuset and change its CPUs, fork
/// children and change theirs, each for at most a few simulated seconds;
/// sometimes a task that takes a CPU offline and back, a few times; and
/// in some runs tasks that live for seconds (`long_tasks`).
pub fn generate(seed: u64, index: u64, machines: &[(String, u32)]) -> Case {
    let cs = case_seed(seed, index);
    let mut d = Draw(ChaCha8Rng::seed_from_u64(cs));
    // SCHED_IDLE and migration-disabled sections come from a stream of
    // their own: every other draw is as before they existed, so a run of
    // an earlier hunt keeps its tasks, with these steps added.
    let mut x = Draw(ChaCha8Rng::seed_from_u64(cs ^ 0x1d1e_5ced_0000_0001));
    let (machine, n) = machines[d.range(0, machines.len() as u64 - 1) as usize].clone();
    let mut w = Workload::new(&format!("hunt-{seed}-{index}"));
    let tasks = match d.range(0, 4) {
        0 => 1,
        1 => d.range(1, (n as u64).min(8)),
        2 => n as u64,
        3 => 2 * n as u64,
        _ => d.range(1, 4 * n as u64),
    }
    .clamp(1, 48);
    // A cpuset, often of a few CPUs, that some tasks join and whose CPUs
    // some change while they run.
    let cpuset = x.chance(0.2).then(|| x.mask(n));
    let mut cpuset_made = false;
    for i in 0..tasks {
        let mut body = Vec::new();
        let pinned_section = x.chance(0.15);
        if pinned_section {
            body.push(Step::MigrateDisable);
        }
        body.push(Step::Compute(Amount::work_us(d.work_us(), 0.0)));
        // A section may hold a sleep (preemptible and sleeping sections,
        // as under PREEMPT_RT) or end before it.
        let sleep_inside = pinned_section && x.chance(0.3);
        if pinned_section && !sleep_inside {
            body.push(Step::MigrateEnable);
        }
        if d.chance(0.6) {
            body.push(Step::Sleep(Amount::fixed(d.range(10, 2_000) as f64 * 1e3)));
        }
        if sleep_inside {
            body.push(Step::MigrateEnable);
        }
        if x.chance(0.05) {
            body.push(Step::SchedIdle(x.chance(0.5)));
        }
        if cpuset.is_some() && x.chance(0.03) {
            body.push(Step::CpusetCpus(0, x.mask(n).into_boxed_slice()));
        }
        if d.chance(0.2) {
            body.push(Step::Affinity(d.mask(n).into_boxed_slice(), false));
        }
        if d.chance(0.1) {
            body.push(Step::Nice(d.range(0, 39) as i8 - 20));
        }
        let body = w.add(&format!("t{i}-body"), body);
        let mut steps = Vec::new();
        if d.chance(0.3) {
            steps.push(Step::Nice(d.range(0, 39) as i8 - 20));
        }
        if x.chance(0.1) {
            steps.push(Step::SchedIdle(true));
        }
        if let Some(cpus) = cpuset.as_ref().filter(|_| x.chance(0.5)) {
            if !std::mem::replace(&mut cpuset_made, true) {
                steps.push(Step::CpusetCpus(0, cpus.clone().into_boxed_slice()));
            }
            steps.push(Step::JoinCpuset(0));
        }
        if d.chance(0.4) {
            steps.push(Step::Affinity(d.mask(n).into_boxed_slice(), false));
        }
        steps.push(Step::Repeat(body, d.range(1, 30)));
        if d.chance(0.2) {
            let child = vec![
                Step::Compute(Amount::work_us(d.work_us(), 0.0)),
                Step::Sleep(Amount::fixed(d.range(10, 5_000) as f64 * 1e3)),
                Step::Compute(Amount::work_us(d.work_us(), 0.0)),
                Step::Exit,
            ];
            let child = w.add(&format!("t{i}-child"), child);
            for _ in 0..d.range(1, 4) {
                steps.push(Step::Fork(child));
            }
            if d.chance(0.6) {
                steps.push(Step::Affinity(d.mask(n).into_boxed_slice(), true));
            }
            steps.push(Step::WaitAll);
        }
        steps.push(Step::Exit);
        let prog = w.add(&format!("t{i}"), steps);
        let cpu = d.chance(0.2).then(|| d.range(0, n as u64 - 1) as u32);
        w.initial.push((prog, format!("t{i}"), cpu));
    }
    // CPU hotplug from a stream of its own, after every other draw: the
    // runs of earlier hunts keep their tasks, with this one added.
    let mut h = Draw(ChaCha8Rng::seed_from_u64(cs ^ 0x1d1e_5ced_0000_0002));
    if n > 1 && h.chance(0.15) {
        // One CPU down at a time: never the last online one.
        let mut steps = Vec::new();
        for _ in 0..h.range(1, 3) {
            let cpu = h.range(0, n as u64 - 1) as u32;
            steps.push(Step::Sleep(Amount::fixed(h.range(100, 50_000) as f64 * 1e3)));
            steps.push(Step::CpuOnline(cpu, false));
            steps.push(Step::Sleep(Amount::fixed(h.range(100, 100_000) as f64 * 1e3)));
            steps.push(Step::CpuOnline(cpu, true));
        }
        steps.push(Step::Exit);
        let prog = w.add("hotplug", steps);
        w.initial.push((prog, "hotplug".into(), None));
    }
    // Long runs from a fourth stream, after every other draw, as hotplug:
    // the other tasks above last about 0.2 simulated seconds, too short for
    // the 1 s starvation bound to fail, so some runs add tasks that live
    // for seconds.
    let mut l = Draw(ChaCha8Rng::seed_from_u64(cs ^ 0x1d1e_5ced_0000_0003));
    if l.chance(LONG_RUNS) {
        long_tasks(&mut l, &mut w, n);
    }
    // A cpuset only a body's step names is made there.
    w.cpusets = w.programs.iter().flat_map(|p| &p.steps).any(|s| matches!(s, Step::JoinCpuset(_) | Step::CpusetCpus(..))) as u32;
    Case { index, machine, seed: cs, workload: w }
}

/// The workload `hunt:seed=S,run=I`: run `I` of a hunt seeded `S`, made for
/// `machine`, the machine that run picked (`Case::machine`). The pick takes
/// one draw whatever the list of machines, so the run depends on the seed,
/// the run and the machine's CPU count only: a Ray worker rebuilds it from
/// those (`warmcore hunt --ray`).
pub fn named(params: &[(String, String)], machine: &Machine) -> Result<Workload, SimError> {
    let usage = "workload hunt takes two parameters: hunt:seed=S,run=I (whole numbers)";
    let (mut seed, mut run) = (None, None);
    for (k, v) in params {
        let v: u64 = v.parse().map_err(|_| SimError::Input(format!("{usage}, not {k}={v}")))?;
        match k.as_str() {
            "seed" => seed = Some(v),
            "run" => run = Some(v),
            _ => return Err(SimError::Input(format!("{usage}, not {k}"))),
        }
    }
    match (seed, run) {
        (Some(s), Some(i)) => Ok(generate(s, i, &[(machine.spec.name.clone(), machine.nr_cpus)]).workload),
        _ => Err(SimError::Input(usage.into())),
    }
}

/// The share of runs that last seconds (`long_tasks`).
pub const LONG_RUNS: f64 = 0.15;

/// Tasks that keep a run going for 2 to 8 simulated seconds: loops of
/// long computations (20 ms to 1 s) and sleeps (1 ms to 1.5 s), some at a
/// nice value or on a few CPUs, more of them than CPUs on small machines;
/// and sometimes a task whose timer wakes it every 0.3 to 3 s to fork a
/// storm of short children.
fn long_tasks(l: &mut Draw, w: &mut Workload, n: u32) {
    let span_ms = l.range(2_000, 8_000);
    for i in 0..l.range(1, (2 * n as u64).min(8)) {
        let (run_ms, sleep_ms) = (l.range(20, 1_000), l.range(1, 1_500));
        let body = w.add(
            &format!("long{i}-body"),
            vec![Step::Compute(Amount::work_us(run_ms as f64 * 1e3, 0.2)), Step::Sleep(Amount::fixed(sleep_ms as f64 * 1e6))],
        );
        let mut steps = Vec::new();
        if l.chance(0.3) {
            steps.push(Step::Nice(l.range(0, 39) as i8 - 20));
        }
        if l.chance(0.3) {
            steps.push(Step::Affinity(l.mask(n).into_boxed_slice(), false));
        }
        // span_ms at the reference frequency (2 GHz): from half that on
        // the fastest cores to longer on slow ones or when shared.
        steps.push(Step::Repeat(body, (span_ms / (run_ms + sleep_ms)).max(1)));
        steps.push(Step::Exit);
        let prog = w.add(&format!("long{i}"), steps);
        w.initial.push((prog, format!("long{i}"), None));
    }
    if l.chance(0.5) {
        let child = w.add("storm-child", vec![Step::Compute(Amount::work_us(l.range(5, 500) as f64, 0.5)), Step::Exit]);
        let mut body = vec![Step::Sleep(Amount::fixed(l.range(300, 3_000) as f64 * 1e6))];
        body.extend(std::iter::repeat_n(Step::Fork(child), l.range(2, 32) as usize));
        body.push(Step::WaitAll);
        let body = w.add("storm-body", body);
        let prog = w.add("storm", vec![Step::Repeat(body, l.range(1, 4)), Step::Exit]);
        w.initial.push((prog, "storm".into(), None));
    }
}

/// Run `w` on `machine` under `policy` with the simulator's seed `seed`,
/// and check it: None if it passed, the failure otherwise. An error is a
/// bad input (an unknown policy, a workload past the simulator's limits).
pub fn check(machine: &Machine, policy: &str, w: &Workload, seed: u64) -> Result<Option<Failure>, SimError> {
    check_timed(machine, policy, w, seed).map(|c| c.failure)
}

/// A checked run: its failure if any, and how much it exercised the
/// scheduler.
#[derive(Clone, Debug)]
pub struct Checked {
    pub failure: Option<Failure>,
    /// Simulated time the run took.
    pub sim_ns: u64,
    /// Runnable task-time: the time each task spent runnable (`Runnable`),
    /// summed over the tasks.
    pub runnable_ns: u64,
}

/// As `check`, with the simulated and runnable task-time the run took.
pub fn check_timed(machine: &Machine, policy: &str, w: &Workload, seed: u64) -> Result<Checked, SimError> {
    let p = crate::policies::make_policy(policy, machine)?;
    let mut e = Engine::new(machine.clone(), Governor::Powersave, p, w.clone(), seed, Box::new(Runnable::default()))?;
    let (failure, end) = match e.run(Limits { max_sim_ns: RUN_LIMIT_NS, ..Limits::default() }) {
        Ok(out) => (classify(&out), out.makespan_ns),
        Err(SimError::Deadlock(why)) => (Some(Failure { kind: Kind::Unfinished, what: why }), e.sim.now()),
        Err(e) => return Err(e),
    };
    let runnable_ns = e.into_sink().finish(end).ok().and_then(|v| v.as_u64()).unwrap_or(0);
    Ok(Checked { failure, sim_ns: end, runnable_ns })
}

/// A sink that keeps no event and integrates the number of runnable tasks
/// over time. Runnable is waiting or running, as the engine counts a CPU's
/// tasks (`Sim::nr_add`, its RQ_SIZE events) after the kernel's
/// `rq->nr_running` (kernel/sched/core.c, `activate_task` and
/// `deactivate_task`), the span between sched_ext's `ops.runnable` and
/// `ops.quiescent`: the time a scheduler has a task in its hands, whether
/// it waits for a CPU or holds one. A policy's daemons count too.
#[derive(Default)]
struct Runnable {
    tasks: i64,
    since_ns: u64,
    task_ns: u64,
}

impl Runnable {
    fn until(&mut self, ns: u64) {
        if ns > self.since_ns {
            self.task_ns += self.tasks.max(0) as u64 * (ns - self.since_ns);
            self.since_ns = ns;
        }
    }
}

impl Sink for Runnable {
    fn emit(&mut self, cpu: u32, ev: Event) -> Result<(), String> {
        self.emit_fields(cpu, ev.ts, ev.pid, ev.id, ev.a(), ev.b())
    }
    #[inline]
    fn emit_fields(&mut self, _cpu: u32, ts: u64, _pid: u32, id: u32, _a: u32, b: u32) -> Result<(), String> {
        if id == ids::RQ_SIZE {
            self.until(ts);
            // The change, -1 or +1, is the second argument.
            self.tasks += b as i32 as i64;
        }
        Ok(())
    }
    fn finish(mut self: Box<Self>, end_ns: u64) -> Result<serde_json::Value, String> {
        self.until(end_ns);
        Ok(self.task_ns.into())
    }
}

/// The failure a run's outcome shows, if any.
fn classify(out: &crate::engine::Outcome) -> Option<Failure> {
    let why = out.partial.clone()?;
    Some(Failure { kind: kind_of(&why, out.ejected), what: why })
}

/// The failure kind a line of `check` or a report's `partial` names.
pub fn kind_of(what: &str, ejected: bool) -> Kind {
    if what.contains("runnable task stall") {
        Kind::Stall
    } else if what.contains("broken guarantee: starvation") {
        Kind::Starvation
    } else if what.contains("broken guarantee: affinity") {
        Kind::Affinity
    } else if ejected {
        Kind::Error
    } else {
        Kind::Unfinished
    }
}

/// The smallest workload found that still fails as `kind` does: greedy
/// delta debugging over the initial tasks, then each program's steps, then
/// the repeat counts, until nothing more can go or `budget` runs are spent;
/// then the fewest CPUs it still fails on (`smaller`), and the machine of
/// those. Programs no task runs any more are dropped.
/// `stop` ends the search early with what it has.
pub fn shrink(
    machine: &Machine,
    policy: &str,
    w: &Workload,
    seed: u64,
    kind: &Kind,
    budget: u32,
    stop: &std::sync::atomic::AtomicBool,
) -> (Workload, Machine, u32) {
    let mut best = w.clone();
    let mut runs = 0;
    let budget = budget.max(1);
    let fails_on = |m: &Machine, cand: &Workload, runs: &mut u32| -> bool {
        *runs += 1;
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            *runs = budget;
            return false;
        }
        cand.validate().is_ok() && matches!(check(m, policy, cand, seed), Ok(Some(f)) if f.kind == *kind)
    };
    let fails = |cand: &Workload, runs: &mut u32| fails_on(machine, cand, runs);
    loop {
        let mut changed = false;
        // Tasks: halves first, then one by one.
        let mut chunk = best.initial.len() / 2;
        while chunk >= 1 && runs < budget {
            let mut i = 0;
            while i < best.initial.len() && best.initial.len() > 1 && runs < budget {
                let mut cand = best.clone();
                let end = (i + chunk).min(cand.initial.len());
                cand.initial.drain(i..end);
                if !cand.initial.is_empty() && fails(&cand, &mut runs) {
                    best = cand;
                    changed = true;
                } else {
                    i += chunk;
                }
            }
            chunk /= 2;
        }
        // Steps, one by one.
        for p in 0..best.programs.len() {
            let mut j = 0;
            while j < best.programs[p].steps.len() && runs < budget {
                let mut cand = best.clone();
                cand.programs[p].steps.remove(j);
                if fails(&cand, &mut runs) {
                    best = cand;
                    changed = true;
                } else {
                    j += 1;
                }
            }
        }
        // Repeat counts and work: halved while it still fails.
        for p in 0..best.programs.len() {
            for j in 0..best.programs[p].steps.len() {
                loop {
                    if runs >= budget {
                        break;
                    }
                    let mut cand = best.clone();
                    match &mut cand.programs[p].steps[j] {
                        Step::Repeat(_, n) if *n > 1 => *n /= 2,
                        Step::Compute(a) if a.mean >= 2.0 * crate::program::REF_CYCLES_PER_US => {
                            a.mean = (a.mean / crate::program::REF_CYCLES_PER_US / 2.0).floor() * crate::program::REF_CYCLES_PER_US
                        }
                        _ => break,
                    }
                    if fails(&cand, &mut runs) {
                        best = cand;
                        changed = true;
                    } else {
                        break;
                    }
                }
            }
        }
        if !changed || runs >= budget {
            break;
        }
    }
    let best = prune(&best);
    let mut m = machine.clone();
    'cpus: while runs < budget {
        for cand in smaller(&m) {
            if runs >= budget {
                break 'cpus;
            }
            if fails_on(&cand, &best, &mut runs) {
                m = cand;
                continue 'cpus;
            }
        }
        break;
    }
    (best, m, runs)
}

/// Machines like `m` with fewer CPUs, largest cut first: half its sockets,
/// half its cores per socket (one die if the dies no longer divide them),
/// no SMT. A workload's CPUs the machine lacks are dropped from its masks
/// (none left: the step changes nothing), as on any machine.
pub fn smaller(m: &Machine) -> Vec<Machine> {
    let s = &m.spec;
    let mut cuts: Vec<crate::machine::MachineSpec> = Vec::new();
    if s.sockets > 1 {
        cuts.push(crate::machine::MachineSpec { sockets: s.sockets / 2, ..s.clone() });
    }
    if s.cores_per_socket > 1 {
        let cores = s.cores_per_socket / 2;
        let dies = if cores.is_multiple_of(s.dies_per_socket) { s.dies_per_socket } else { 1 };
        cuts.push(crate::machine::MachineSpec { cores_per_socket: cores, dies_per_socket: dies, ..s.clone() });
    }
    if s.threads_per_core > 1 {
        cuts.push(crate::machine::MachineSpec { threads_per_core: 1, ..s.clone() });
    }
    cuts.into_iter()
        .filter_map(|mut spec| {
            let cpus = spec.sockets * spec.cores_per_socket * spec.threads_per_core;
            spec.description = format!("{} with {cpus} of its CPUs (a hunt's reproducer)", s.name);
            Machine::new(spec).ok()
        })
        .collect()
}

/// The workload without the programs no task runs, forks or repeats.
fn prune(w: &Workload) -> Workload {
    let np = w.programs.len();
    let mut used = vec![false; np];
    let mut todo: Vec<usize> = w.initial.iter().map(|(p, _, _)| *p as usize).collect();
    while let Some(p) = todo.pop() {
        if std::mem::replace(&mut used[p], true) {
            continue;
        }
        for s in &w.programs[p].steps {
            if let Step::Fork(q) | Step::Repeat(q, _) | Step::RepeatFor(q, _) = *s {
                todo.push(q as usize);
            }
        }
    }
    let new_id: Vec<u32> = used.iter().scan(0u32, |n, &u| {
        let id = *n;
        *n += u as u32;
        Some(id)
    }).collect();
    let mut out = w.clone();
    out.programs = w.programs.iter().zip(&used).filter(|(_, u)| **u).map(|(p, _)| p.clone()).collect();
    for p in &mut out.programs {
        for s in &mut p.steps {
            if let Step::Fork(q) | Step::Repeat(q, _) | Step::RepeatFor(q, _) = s {
                *q = new_id[*q as usize];
            }
        }
    }
    for (p, _, _) in &mut out.initial {
        *p = new_id[*p as usize];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_a_function_of_seed_and_index() {
        let m = vec![("default".to_string(), 16), ("core2duo-e8400".to_string(), 2)];
        let a = generate(7, 3, &m);
        let b = generate(7, 3, &m);
        assert_eq!(crate::wfile::to_toml(&a.workload).unwrap(), crate::wfile::to_toml(&b.workload).unwrap());
        assert_eq!((a.machine, a.seed), (b.machine, b.seed));
        let c = generate(7, 4, &m);
        assert_ne!(crate::wfile::to_toml(&a.workload).unwrap(), crate::wfile::to_toml(&c.workload).unwrap());
    }

    #[test]
    fn generated_workloads_are_written_and_read_back_unchanged() {
        let m = vec![("default".to_string(), 16)];
        for i in 0..50 {
            let c = generate(1, i, &m);
            c.workload.validate().unwrap();
            let text = crate::wfile::to_toml(&c.workload).unwrap();
            let back = crate::wfile::parse(&text, "x").unwrap();
            assert_eq!(back.initial, c.workload.initial, "{text}");
            for (a, b) in back.programs.iter().zip(&c.workload.programs) {
                assert_eq!((&a.name, &a.steps), (&b.name, &b.steps), "{text}");
            }
        }
    }

    #[test]
    fn runs_draw_sched_idle_and_closed_migration_disabled_sections() {
        let m = vec![("default".to_string(), 16)];
        let (mut idle, mut sections) = (0, 0);
        for i in 0..200 {
            let c = generate(5, i, &m);
            let steps = || c.workload.programs.iter().flat_map(|p| p.steps.iter());
            idle += steps().any(|s| matches!(s, Step::SchedIdle(_))) as u32;
            let (on, off) = (
                steps().filter(|s| matches!(s, Step::MigrateDisable)).count(),
                steps().filter(|s| matches!(s, Step::MigrateEnable)).count(),
            );
            assert_eq!(on, off, "run {i}: every section ends");
            sections += (on > 0) as u32;
        }
        assert!(idle > 10 && sections > 10, "{idle} runs with SCHED_IDLE, {sections} with sections");
    }

    #[test]
    fn runs_take_cpus_offline_and_back_and_keep_their_other_tasks() {
        let m = vec![("default".to_string(), 16)];
        let mut hotplug = 0;
        for i in 0..200 {
            let c = generate(5, i, &m);
            let steps: Vec<&Step> = c.workload.programs.iter().flat_map(|p| p.steps.iter()).collect();
            let (off, on) = (
                steps.iter().filter(|s| matches!(s, Step::CpuOnline(_, false))).count(),
                steps.iter().filter(|s| matches!(s, Step::CpuOnline(_, true))).count(),
            );
            assert_eq!(off, on, "run {i}: every CPU comes back");
            if off > 0 {
                hotplug += 1;
                // The same tasks as without it, the controller after them
                // (before a long run's tasks).
                let after = c.workload.initial.iter().find(|t| !t.1.starts_with('t')).unwrap();
                assert_eq!(after.1, "hotplug");
            }
        }
        assert!(hotplug > 10, "{hotplug} runs with CPU hotplug");
    }

    #[test]
    fn some_runs_last_seconds_and_keep_their_other_tasks() {
        let m = vec![("core2duo-e8400".to_string(), 2)];
        let mut long = Vec::new();
        for i in 0..200 {
            let c = generate(5, i, &m);
            let names: Vec<&str> = c.workload.initial.iter().map(|t| t.1.as_str()).collect();
            // The generator's other tasks first, in their order, then these.
            let first = names.iter().position(|n| n.starts_with("long")).unwrap_or(names.len());
            assert!(names[..first].iter().all(|n| n.starts_with('t') || *n == "hotplug"), "run {i}: {names:?}");
            assert!(names[first..].iter().all(|n| n.starts_with("long") || *n == "storm"), "run {i}: {names:?}");
            if first < names.len() {
                long.push(c);
            }
        }
        assert!((15..=50).contains(&long.len()), "{} long runs of 200", long.len());
        // They do last seconds when run.
        let machine = Machine::load("core2duo-e8400").unwrap();
        for c in &long[..2] {
            let r = check_timed(&machine, "cfs", &c.workload, c.seed).unwrap();
            assert!(r.failure.is_none(), "{r:?}");
            assert!(r.sim_ns >= 1_000_000_000, "run {}: {r:?}", c.index);
        }
    }

    #[test]
    fn runnable_time_counts_waiting_and_running_not_sleeping() {
        let machine = Machine::load("core2duo-e8400").unwrap();
        let work = || Step::Compute(Amount::work_us(10_000.0, 0.0));
        // Three tasks on CPU 0 alone: all three runnable until the first
        // ends, so between two and three times the run's length.
        let mut w = Workload::new("three");
        let p = w.add("t", vec![Step::Affinity(vec![0].into_boxed_slice(), false), work(), Step::Exit]);
        for i in 0..3 {
            w.initial.push((p, format!("t{i}"), Some(0)));
        }
        let r = check_timed(&machine, "cfs", &w, 1).unwrap();
        assert!(r.failure.is_none(), "{r:?}");
        assert!(r.runnable_ns > 2 * r.sim_ns && r.runnable_ns <= 3 * r.sim_ns, "{r:?}");
        // One task that mostly sleeps: runnable only while it computes.
        let mut w = Workload::new("sleeper");
        let p = w.add("s", vec![work(), Step::Sleep(Amount::fixed(200e6)), work(), Step::Exit]);
        w.initial.push((p, "s".into(), None));
        let r = check_timed(&machine, "cfs", &w, 1).unwrap();
        assert!(r.sim_ns >= 200_000_000 && r.runnable_ns < r.sim_ns / 5 && r.runnable_ns >= 5_000_000, "{r:?}");
    }

    #[test]
    fn prune_drops_unused_programs_and_renumbers() {
        let mut w = Workload::new("p");
        let dead = w.add("dead", vec![Step::Exit]);
        let child = w.add("child", vec![Step::Exit]);
        let main = w.add("main", vec![Step::Fork(child), Step::WaitAll]);
        w.initial.push((main, "main".into(), None));
        let _ = dead;
        let p = prune(&w);
        assert_eq!(p.programs.len(), 2);
        assert_eq!(p.programs[1].steps[0], Step::Fork(0));
        assert_eq!(p.initial[0].0, 1);
    }
}
