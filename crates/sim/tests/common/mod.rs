// SPDX-License-Identifier: GPL-2.0-only
//! What the simulator's tests share: a sink that keeps every event, and
//! every built-in workload at a size that runs in milliseconds.
#![allow(dead_code)]

use std::cell::RefCell;
use std::rc::Rc;

use warmcore_sim::engine::{Engine, Limits, Outcome, Sink};
use warmcore_sim::make_policy;
use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::{Governor, Machine};
use warmcore_trace::{ids, Event};

/// Keeps every (cpu, event) the engine emits; clones share the list.
#[derive(Clone, Default)]
pub struct Collect(pub Rc<RefCell<Vec<(u32, Event)>>>);

impl Sink for Collect {
    fn emit(&mut self, cpu: u32, ev: Event) -> Result<(), String> {
        self.0.borrow_mut().push((cpu, ev));
        Ok(())
    }
}

/// Every built-in workload (each unixbench test), small.
pub const SMALL_WORKLOADS: &[&str] = &[
    "configure:checks=20",
    "kbuild:files=64,seq_pre=20,burst=16,seq_post=10",
    "perl-startup:iterations=20",
    "hackbench:groups=2,loops=10",
    "periodic:tasks=8,duration_ms=50",
    "schbench:runtime_ms=200,workers=4",
    "nas:iterations=10",
    "mkl-dnn:iterations=20",
    "h2:transactions=20",
    "unixbench:test=0,operations=50",
    "unixbench:test=1,operations=50",
    "unixbench:test=2,operations=50",
    "unixbench:test=3,operations=40",
    "unixbench:test=4,operations=40",
    "unixbench:test=5,operations=50",
    "unixbench:test=7,operations=50,copies=2",
];

/// A parent on CPU 0 forks a 1 ms child, then either waits at once or keeps
/// computing for 2 ms before waiting.
pub fn fork_then(parent_waits: bool) -> Workload {
    let mut w = Workload::new("fork");
    let child = w.add("child", vec![Step::Compute(Amount::fixed(3e6)), Step::Exit]);
    let mut steps = vec![Step::Fork(child)];
    if !parent_waits {
        steps.push(Step::Compute(Amount::fixed(6e6)));
    }
    steps.extend([Step::WaitAll, Step::Exit]);
    let main = w.add("main", steps);
    w.initial.push((main, "main".into(), Some(0)));
    w
}

/// The events of one kind.
pub fn of(evs: &[(u32, Event)], id: u32) -> Vec<(u32, Event)> {
    evs.iter().filter(|(_, e)| e.id == id).cloned().collect()
}

/// CPUs on which `pid` was switched in, in order, repeats merged.
pub fn ran_on(evs: &[(u32, Event)], pid: u32) -> Vec<u32> {
    let mut v: Vec<u32> = evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() == pid).map(|x| x.0).collect();
    v.dedup();
    v
}

/// A counter of the policy's.
pub fn stat(out: &Outcome, k: &str) -> u64 {
    out.policy_stats[k].as_u64().unwrap_or_else(|| panic!("no {k} in {}", out.policy_stats))
}

/// A run of `policy` to its end (not partial), engine invariants checked,
/// with every event.
pub fn simulate(m: &Machine, g: Governor, policy: &str, w: Workload) -> (Outcome, Vec<(u32, Event)>) {
    let c = Collect::default();
    let p = make_policy(policy, m).unwrap_or_else(|e| panic!("{policy}: {e}"));
    let mut e = Engine::new(m.clone(), g, p, w, 1, Box::new(c.clone())).unwrap();
    e.check_invariants = true;
    let out = e.run(Limits::default()).unwrap_or_else(|e| panic!("{policy}: {e}"));
    assert!(out.partial.is_none(), "{policy}: {:?}", out.partial);
    let evs = c.0.borrow().clone();
    (out, evs)
}

/// A preset machine without its background daemons, for tests of one
/// mechanism in isolation.
pub fn quiet(name: &str) -> Machine {
    let mut spec = Machine::load(name).unwrap().spec;
    spec.background = None;
    Machine::new(spec).unwrap()
}

/// The machines the placement tests run on: one socket, four sockets with
/// shared frequency, two sockets with per-core frequency.
pub const MACHINES: &[&str] = &["default", "xeon-e7-8870v4", "xeon-gold-5218-2s"];

/// The CPUs that ran a task of the workload (not one of `skip`, the
/// policy's warmers).
pub fn workload_cpus(evs: &[(u32, Event)], skip: &[u32]) -> std::collections::BTreeSet<u32> {
    evs.iter()
        .filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() != 0 && !skip.contains(&e.a()))
        .map(|(c, _)| *c)
        .collect()
}

/// The VM test's chain: a parent forks a child that computes 5 ms and
/// waits for it, `n` times.
pub fn fork_wait_chain(n: u64) -> Workload {
    let mut w = Workload::new("chain");
    let child = w.add("child", vec![Step::Compute(Amount::work_us(5000.0, 0.0)), Step::Exit]);
    let step = w.add("step", vec![Step::Compute(Amount::work_us(50.0, 0.0)), Step::Fork(child), Step::Wait]);
    let main = w.add("main", vec![Step::Repeat(step, n), Step::Exit]);
    w.initial.push((main, "main".into(), Some(0)));
    w
}

/// As many 20 ms tasks as `m` has CPUs, all started on CPU 0.
pub fn pile(m: &Machine) -> Workload {
    let mut w = Workload::new("pile");
    let busy = w.add("busy", vec![Step::Compute(Amount::work_us(20_000.0, 0.0)), Step::Exit]);
    for i in 0..m.nr_cpus {
        w.initial.push((busy, format!("busy{i}"), Some(0)));
    }
    w
}

/// `pile` run: each task's first switch-in (ns) by pid, checked to be
/// within a tick and the deepest idle state's exit for every one.
pub fn pile_first_runs(m: &Machine, name: &str, evs: &[(u32, Event)]) -> std::collections::BTreeMap<u32, u64> {
    let mut first = std::collections::BTreeMap::new();
    for (_, e) in evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() != 0) {
        first.entry(e.a()).or_insert(e.ts);
    }
    assert_eq!(first.len() as u32, m.nr_cpus);
    let worst = *first.values().max().unwrap();
    assert!(worst <= 4_000_000 + deepest_exit_ns(m), "{name}: a task waited until {worst} ns: {first:?}");
    first
}

/// The exit latency of `m`'s deepest idle state, ns.
pub fn deepest_exit_ns(m: &Machine) -> u64 {
    m.spec.idle.iter().map(|s| s.exit_latency_us).max().unwrap() * 1000
}

/// 16 tasks run 1 ms and sleep 0.2 ms, 30 times, together; then one task
/// alone runs 1 ms and sleeps 1 ms, 100 times.
pub fn burst_then_tail() -> Workload {
    let mut w = Workload::new("burst");
    let burst = w.add("burst", vec![Step::Compute(Amount::work_us(1000.0, 0.0)), Step::Sleep(Amount::fixed(2e5))]);
    let busy = w.add("busy", vec![Step::Repeat(burst, 30), Step::Exit]);
    let body = w.add("tail", vec![Step::Compute(Amount::work_us(1000.0, 0.0)), Step::Sleep(Amount::fixed(1e6))]);
    let mut main: Vec<Step> = (0..16).map(|_| Step::Fork(busy)).collect();
    main.extend([Step::WaitAll, Step::Repeat(body, 100), Step::Exit]);
    let main = w.add("main", main);
    w.initial.push((main, "main".into(), Some(0)));
    w
}

/// A task on CPU 2 runs 200 us every 5 ms, 100 times.
pub fn light_periodic() -> Workload {
    let mut w = Workload::new("light");
    let tick = w.add("tick", vec![Step::Compute(Amount::work_us(200.0, 0.0)), Step::Sleep(Amount::fixed(4.8e6))]);
    let main = w.add("main", vec![Step::Repeat(tick, 100), Step::Exit]);
    w.initial.push((main, "main".into(), Some(2)));
    w
}

/// The frequency (kHz) at each switch-in of `pid` after `from` ns.
pub fn freq_at_switch_in(evs: &[(u32, Event)], pid: u32, from: u64) -> Vec<u32> {
    let mut freq = std::collections::HashMap::new();
    let mut v = vec![];
    for (c, e) in evs {
        if e.id == ids::FREQ_CHANGE {
            freq.insert(*c, e.a());
        } else if e.id == ids::CTX_SWITCH && e.a() == pid && e.ts >= from {
            v.push(freq[c]);
        }
    }
    v
}

/// `light_periodic` under `policy`: its events, the task's pid, and the
/// mean frequency (kHz) at its switch-ins after the first 100 ms.
pub fn light_run(m: &Machine, g: Governor, policy: &str) -> (Vec<(u32, Event)>, u32, f64) {
    let (_, evs) = simulate(m, g, policy, light_periodic());
    let pid = of(&evs, ids::WAKEUP_NEW).last().unwrap().1.pid;
    let f = freq_at_switch_in(&evs, pid, 100_000_000);
    assert!(f.len() > 50, "{policy}: {} runs", f.len());
    let mean = f.iter().map(|&k| k as f64).sum::<f64>() / f.len() as f64;
    (evs, pid, mean)
}

/// `light_periodic` under `policy` and powersave (no performance target:
/// the idle state is what differs): the mean frequency (kHz) at the task's
/// switch-ins and its mean wake-up latency (ns), after the first 100 ms.
pub fn light_wakeups(m: &Machine, policy: &str) -> (f64, f64) {
    let (evs, pid, mean_f) = light_run(m, Governor::Powersave, policy);
    (mean_f, mean_wakeup_latency(&evs, pid, 100_000_000))
}

/// The mean time (ns) from each wake-up of `pid` after `from` ns to its
/// switch-in.
pub fn mean_wakeup_latency(evs: &[(u32, Event)], pid: u32, from: u64) -> f64 {
    let mut woke = None;
    let mut lat = vec![];
    for (_, e) in evs {
        if e.id == ids::WAKEUP && e.pid == pid && e.ts >= from {
            woke = Some(e.ts);
        } else if e.id == ids::CTX_SWITCH && e.a() == pid {
            if let Some(w) = woke.take() {
                lat.push(e.ts - w);
            }
        }
    }
    assert!(!lat.is_empty(), "no wake-up of {pid} after {from} ns");
    lat.iter().sum::<u64>() as f64 / lat.len() as f64
}
