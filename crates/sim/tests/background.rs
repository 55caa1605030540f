// SPDX-License-Identifier: GPL-2.0-only
//! A machine's background daemons (docs/model.md, Background tasks): they
//! wake at about their rate, never keep a run going or hide a deadlock, and
//! a daemon that blocks on a CPU leaves it newly idle, which balances.

use warmcore_sim::engine::{Engine, Limits};
use warmcore_sim::machine::BackgroundSpec;
use warmcore_sim::make_policy;
use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::{Governor, Machine, SimError};
use warmcore_trace::ids;

mod common;
use common::Collect;

const MS: u64 = 1_000_000;

fn with_background(name: &str, daemons: u32, period_ms: f64) -> Machine {
    let mut spec = Machine::load(name).unwrap().spec;
    spec.background = Some(BackgroundSpec { daemons, period_ms, run_us: 50.0 });
    Machine::new(spec).unwrap()
}

/// `n` tasks of `ms` milliseconds of cycles at 3 GHz, all on CPU 0.
fn pile(n: usize, ms: f64) -> Workload {
    let mut w = Workload::new("pile");
    let p = w.add("loop", vec![Step::Compute(Amount::fixed(ms * 3e6)), Step::Exit]);
    for i in 0..n {
        w.initial.push((p, format!("t{i}"), Some(0)));
    }
    w
}

fn run(m: &Machine, policy: &str, w: Workload) -> (Result<warmcore_sim::engine::Outcome, SimError>, Collect) {
    let c = Collect::default();
    let p = make_policy(policy, m).unwrap();
    let mut e = Engine::new(m.clone(), Governor::Performance, p, w, 1, Box::new(c.clone())).unwrap();
    e.check_invariants = true;
    (e.run(Limits::default()), c)
}

#[test]
fn daemons_wake_at_their_rate_and_the_run_ends_with_the_workload() {
    let m = with_background("default", 4, 10.0);
    let (out, c) = run(&m, "cfs", pile(1, 500.0));
    let out = out.unwrap();
    assert!(out.partial.is_none());
    // The lone task runs 500 ms; the run ends when it exits, whatever the
    // daemons still have pending.
    assert!(out.makespan_ns < 520 * MS, "makespan {} ns", out.makespan_ns);
    let evs = c.0.borrow();
    // The daemons start before the workload: pids 1 to 4.
    let daemon_pids: std::collections::BTreeSet<u32> = (1..=4).collect();
    let started = evs.iter().filter(|(_, e)| e.id == ids::WAKEUP_NEW).count();
    assert_eq!(started, 5);
    // 4 daemons, each every 10 ms on average, for 500 ms: about 200.
    let wakeups = evs.iter().filter(|(_, e)| e.id == ids::WAKEUP && daemon_pids.contains(&e.pid)).count();
    assert!((140..=260).contains(&wakeups), "{wakeups} daemon wake-ups in 500 ms");
}

#[test]
fn a_deadlocked_workload_is_still_reported_with_daemons_running() {
    let m = with_background("default", 2, 5.0);
    let mut w = Workload::new("stuck");
    let pipe = w.pipe(1);
    let p = w.add("reader", vec![Step::PipeRead(pipe), Step::Exit]);
    w.initial.push((p, "reader".into(), Some(0)));
    let (out, _) = run(&m, "cfs", w);
    match out {
        Err(SimError::Deadlock(msg)) => {
            assert!(msg.contains("reader") && !msg.contains("daemon"), "{msg}")
        }
        other => panic!("expected a deadlock, got {:?}", other.map(|o| o.makespan_ns)),
    }
}

#[test]
fn a_daemon_that_blocks_on_an_idle_cpu_pulls_waiting_work_there() {
    // Eight long tasks wait on CPU 0 of the E7; daemons wake on idle CPUs,
    // run 50 us and sleep: each CPU they leave is newly idle and balances.
    let m = with_background("xeon-e7-8870v4", 8, 5.0);
    let (out, c) = run(&m, "slocal", pile(8, 100.0));
    out.unwrap();
    let evs = c.0.borrow();
    let daemon_pids: std::collections::BTreeSet<u32> = (1..=8).collect();
    let after_daemon = evs.iter().filter(|(cpu, e)| {
        e.id == ids::IDLE_BALANCE_END
            && e.a() > 0
            && evs.iter().any(|(c2, x)| {
                c2 == cpu && x.ts == e.ts && x.id == ids::CTX_SWITCH && daemon_pids.contains(&x.pid)
            })
    });
    assert!(after_daemon.count() > 0, "no newly-idle pull where a daemon blocked");
}
