// SPDX-License-Identifier: GPL-2.0-only
//! Spin-then-block barrier waits (Step::BarrierSpin), as OpenMP runtimes
//! wait: a waiter that the last thread reaches in time never sleeps.

use warmcore_sim::engine::{Engine, Limits, Outcome};
use warmcore_sim::make_policy;
use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::{workloads, Governor, Machine};
use warmcore_trace::event::prev_state;
use warmcore_trace::{ids, Event};

mod common;
use common::Collect;

fn simulate(m: &Machine, policy: &str, w: Workload) -> (Outcome, Vec<(u32, Event)>) {
    let c = Collect::default();
    let p = make_policy(policy, m).unwrap();
    let mut e = Engine::new(m.clone(), Governor::Powersave, p, w, 1, Box::new(c.clone())).unwrap();
    e.check_invariants = true;
    let out = e.run(Limits::default()).unwrap();
    assert!(out.partial.is_none());
    let evs = c.0.borrow().clone();
    (out, evs)
}

fn count(evs: &[(u32, Event)], id: u32, pid: Option<u32>) -> usize {
    evs.iter().filter(|(_, e)| e.id == id && pid.is_none_or(|p| e.pid == p)).count()
}

fn first(evs: &[(u32, Event)], id: u32, pid: u32) -> u64 {
    evs.iter().find(|(_, e)| e.id == id && e.pid == pid).unwrap_or_else(|| panic!("no event {id} of pid {pid}")).1.ts
}

/// Frequency of `cpu` at time `t` (its last FREQ_CHANGE), kHz.
fn freq_at(evs: &[(u32, Event)], cpu: u32, t: u64) -> u32 {
    evs.iter().rfind(|(c, e)| *c == cpu && e.id == ids::FREQ_CHANGE && e.ts <= t).unwrap().1.a()
}

/// Two threads meet at a barrier: A (pid 1, CPU 0) after `a` cycles, B (pid
/// 2, CPU 2, another core) after `b` cycles; each then computes 0.1 ms and
/// exits. `spin`: None waits with Step::Barrier, Some(cycles) with
/// Step::BarrierSpin.
fn two(a: f64, b: f64, spin: Option<f64>) -> Workload {
    let mut w = Workload::new("meet");
    let bar = w.barrier(2);
    let wait = match spin {
        Some(s) => Step::BarrierSpin(bar, Amount::fixed(s)),
        None => Step::Barrier(bar),
    };
    let pa = w.add("a", vec![Step::Compute(Amount::fixed(a)), wait.clone(), Step::Compute(Amount::fixed(2e5)), Step::Exit]);
    let pb = w.add("b", vec![Step::Compute(Amount::fixed(b)), wait, Step::Compute(Amount::fixed(2e5)), Step::Exit]);
    w.initial.push((pa, "a".into(), Some(0)));
    w.initial.push((pb, "b".into(), Some(2)));
    w
}

const GHZ_MIN: f64 = 1.2;
const GHZ_MAX: f64 = 3.0;

#[test]
fn arrivals_within_the_spin_never_block() {
    let m = Machine::load("default").unwrap();
    // A arrives after at most 1.7 ms, B after at least 8 ms; A's spin of
    // 60e6 cycles lasts at least 20 ms.
    let (_, evs) = simulate(&m, "cfs", two(2e6, 24e6, Some(60e6)));
    assert_eq!(count(&evs, ids::FUTEX_WAIT, None), 0, "nobody slept at the barrier");
    assert_eq!(count(&evs, ids::WAKEUP, None), 0, "nobody was woken");
    // A left its CPU only when it exited, and its CPU never idled meanwhile.
    let a_out: Vec<u32> = evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.pid == 1).map(|(_, e)| e.b()).collect();
    assert_eq!(a_out, vec![prev_state::DEAD]);
    let start = first(&evs, ids::CTX_SWITCH, 0);
    let a_exit = first(&evs, ids::EXIT, 1);
    assert!(!evs.iter().any(|(c, e)| *c == 0 && e.id == ids::IDLE_ENTER && e.ts > start && e.ts < a_exit));
    // It counts as running while it spins: it takes ticks. Its own work
    // ends by 1.7 ms, and after the barrier takes at most 0.2 ms.
    let spin_ticks = evs
        .iter()
        .filter(|(c, e)| *c == 0 && e.id == ids::TICK && e.pid == 1 && e.ts > 2_000_000 && e.ts + 200_000 < a_exit)
        .count();
    assert!(spin_ticks >= 1, "A ticked while it spun");
    // B, the last to arrive, went on at once; A went on after B arrived.
    assert!(a_exit > (24e6 / GHZ_MAX) as u64);
}

#[test]
fn a_late_arrival_makes_the_spinners_block_after_the_spin() {
    let m = Machine::load("default").unwrap();
    let spin = 40e6;
    let (_, plain) = simulate(&m, "cfs", two(2e6, 200e6, None));
    let (_, spun) = simulate(&m, "cfs", two(2e6, 200e6, Some(spin)));
    // Without spin, A sleeps on arrival; with it, A sleeps once the spin's
    // cycles are done, between spin / f_max and spin / f_min later.
    let t0 = first(&plain, ids::FUTEX_WAIT, 1);
    let t1 = first(&spun, ids::FUTEX_WAIT, 1);
    assert_eq!(count(&spun, ids::FUTEX_WAIT, Some(1)), 1);
    let d = (t1 - t0) as f64;
    assert!(d >= spin / GHZ_MAX && d <= spin / GHZ_MIN, "A blocked {d} ns after arriving");
    // Then B wakes it as with a plain barrier.
    for evs in [&plain, &spun] {
        let wakes: Vec<&Event> = evs.iter().filter(|(_, e)| e.id == ids::WAKEUP).map(|(_, e)| e).collect();
        assert_eq!(wakes.len(), 1);
        assert_eq!((wakes[0].pid, wakes[0].b()), (1, 2), "B woke A");
    }
    // Before t0 the two runs are the same.
    let before = |evs: &[(u32, Event)]| -> Vec<(u32, Event)> { evs.iter().filter(|(_, e)| e.ts < t0).cloned().collect() };
    assert_eq!(before(&plain), before(&spun));
}

#[test]
fn a_spinning_cpu_stays_busy_and_its_frequency_rises() {
    let m = Machine::load("default").unwrap();
    let (_, plain) = simulate(&m, "cfs", two(2e6, 200e6, None));
    let (_, spun) = simulate(&m, "cfs", two(2e6, 200e6, Some(40e6)));
    let t0 = first(&plain, ids::FUTEX_WAIT, 1);
    let t1 = first(&spun, ids::FUTEX_WAIT, 1);
    // Without spin, CPU 0 idles at once; with it, not until A blocks.
    assert!(plain.iter().any(|(c, e)| *c == 0 && e.id == ids::IDLE_ENTER && e.ts == t0));
    assert!(!spun.iter().any(|(c, e)| *c == 0 && e.id == ids::IDLE_ENTER && e.ts > 0 && e.ts < t1));
    // Under powersave the busy core's frequency keeps rising while A spins,
    // and ends higher than the idle core's of the plain run at that time.
    let (f0, f1) = (freq_at(&spun, 0, t0), freq_at(&spun, 0, t1));
    assert!(f1 > f0, "frequency {f0} kHz at arrival, {f1} kHz at the end of the spin");
    assert!(f1 > freq_at(&plain, 0, t1));
}

#[test]
fn a_zero_spin_is_a_plain_barrier() {
    let m = Machine::load("default").unwrap();
    let (o1, e1) = simulate(&m, "cfs", two(2e6, 20e6, None));
    let (o2, e2) = simulate(&m, "cfs", two(2e6, 20e6, Some(0.0)));
    assert_eq!(e1, e2);
    assert_eq!(o1.makespan_ns, o2.makespan_ns);
    assert_eq!(count(&e1, ids::FUTEX_WAIT, Some(1)), 1);
}

/// One CPU: a spinning waiter shares it with the thread it waits for.
fn one_cpu() -> Machine {
    let mut spec = Machine::load("default").unwrap().spec;
    spec.cores_per_socket = 1;
    spec.threads_per_core = 1;
    Machine::new(spec).unwrap()
}

#[test]
fn a_preempted_spinner_is_released_without_a_wakeup() {
    let m = one_cpu();
    // A 1 s spin at any frequency: far longer than the run if the spinner
    // is preempted so that the other thread can arrive.
    let spin = 3e9;
    let mut w = Workload::new("share");
    let bar = w.barrier(2);
    let mk = |w: &mut Workload, name: &str, cycles: f64| {
        w.add(
            name,
            vec![
                Step::Compute(Amount::fixed(cycles)),
                Step::BarrierSpin(bar, Amount::fixed(spin)),
                Step::Compute(Amount::fixed(2e5)),
                Step::Exit,
            ],
        )
    };
    let pa = mk(&mut w, "a", 2e6);
    let pb = mk(&mut w, "b", 40e6);
    w.initial.push((pa, "a".into(), Some(0)));
    w.initial.push((pb, "b".into(), Some(0)));
    for policy in ["cfs", "slocal", "smove"] {
        let (out, evs) = simulate(&m, policy, w.clone());
        assert_eq!(count(&evs, ids::FUTEX_WAIT, None), 0, "{policy}");
        assert_eq!(count(&evs, ids::WAKEUP, None), 0, "{policy}");
        // The spinner was preempted (still runnable) at least once.
        assert!(evs.iter().any(|(_, e)| e.id == ids::CTX_SWITCH && e.pid == 1 && e.b() == prev_state::RUNNABLE));
        assert!((out.makespan_ns as f64) < spin / GHZ_MAX / 2.0, "{policy}: {} ns", out.makespan_ns);
        assert_eq!(count(&evs, ids::EXIT, None), 2);
    }
}

fn kv(s: &str) -> Vec<(String, String)> {
    warmcore_sim::parse_spec(s).1
}

#[test]
fn nas_spins_by_default_and_mkl_dnn_blocks() {
    let m = Machine::load("default").unwrap();
    let spins = |w: &Workload| -> Vec<Step> {
        w.programs.iter().flat_map(|p| p.steps.iter()).filter(|s| matches!(s, Step::Barrier(_) | Step::BarrierSpin(..))).cloned().collect()
    };
    // mkl-dnn's threads block and unblock (Fewer Cores, More Hertz, 4.4).
    let w = workloads::build("mkl-dnn", &[], &m).unwrap();
    assert_eq!(spins(&w), vec![Step::Barrier(0)]);
    let w = workloads::build("mkl-dnn", &kv("x:spin_us=3000"), &m).unwrap();
    assert_eq!(spins(&w), vec![Step::BarrierSpin(0, Amount::fixed(3000.0 * 2000.0))]);
    let name = "nas";
    // libgomp: 300 000 spins, 3 ms at 100 000 spins per ms.
    let w = workloads::build(name, &[], &m).unwrap();
    assert_eq!(spins(&w), vec![Step::BarrierSpin(0, Amount::fixed(3000.0 * 2000.0))], "{name}");
    // More threads than CPUs: 100 spins.
    let w = workloads::build(name, &kv("x:threads=20"), &m).unwrap();
    assert_eq!(spins(&w), vec![Step::BarrierSpin(0, Amount::fixed(2000.0))], "{name}");
    let w = workloads::build(name, &kv("x:spin_us=0"), &m).unwrap();
    assert_eq!(spins(&w), vec![Step::Barrier(0)], "{name}");
    assert!(w.params.contains(&("spin_us".to_string(), "0".to_string())));
    assert!(workloads::build(name, &kv("x:spin_us=-1"), &m).is_err());
}

#[test]
fn nas_threads_block_only_without_spin() {
    let m = Machine::load("default").unwrap();
    let run = |spec: &str| {
        let w = workloads::build("nas", &kv(spec), &m).unwrap();
        simulate(&m, "cfs", w).1
    };
    // 4 threads, 20 barriers: without spin the 3 early threads sleep at
    // every barrier and the last wakes them; with libgomp's spin (3 ms
    // against waits of at most 0.4 ms) nobody sleeps. The only other
    // wake-up: the main thread's, if it waits for its workers to exit.
    let plain = run("nas:threads=4,iterations=20,spin_us=0");
    assert_eq!(count(&plain, ids::FUTEX_WAIT, None), 60);
    assert_eq!(count(&plain, ids::WAKEUP, None), 60 + count(&plain, ids::WAIT_PID, None));
    let spun = run("nas:threads=4,iterations=20");
    assert_eq!(count(&spun, ids::FUTEX_WAIT, None), 0);
    assert_eq!(count(&spun, ids::WAKEUP, None), count(&spun, ids::WAIT_PID, None));
    assert!(count(&spun, ids::WAIT_PID, None) <= 1);
    assert_eq!(count(&spun, ids::EXIT, None), 4);
}
