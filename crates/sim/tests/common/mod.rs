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
