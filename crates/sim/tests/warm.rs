// SPDX-License-Identifier: GPL-2.0-only
//! `scx:warm` (crates/sched/src/bpf/warm.bpf.c): each mechanism of
//! docs/warm.md, checked on the program the kernel loads, against the same
//! run with the mechanism switched off or against the built-in selection.

use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::{Governor, Machine};
use warmcore_trace::{ids, Event};

mod common;
use common::{of, ran_on, simulate, stat};

const MACHINES: &[&str] = &["default", "xeon-e7-8870v4", "xeon-gold-5218-2s"];

/// CPUs that ran a task of the workload.
fn cpus(evs: &[(u32, Event)]) -> std::collections::BTreeSet<u32> {
    evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() != 0).map(|(c, _)| *c).collect()
}

/// A parent forks a child that computes 5 ms and waits for it, `n` times.
fn fork_wait_chain(n: u64) -> Workload {
    let mut w = Workload::new("chain");
    let child = w.add("child", vec![Step::Compute(Amount::work_us(5000.0, 0.0)), Step::Exit]);
    let step = w.add("step", vec![Step::Compute(Amount::work_us(50.0, 0.0)), Step::Fork(child), Step::Wait]);
    let main = w.add("main", vec![Step::Repeat(step, n), Step::Exit]);
    w.initial.push((main, "main".into(), Some(0)));
    w
}

#[test]
fn warm_keeps_a_fork_wait_chain_on_two_cpus() {
    for &name in MACHINES {
        let m = common::quiet(name);
        // Each child queues on its parent's CPU (and the idle CPU kicked
        // then pulls it before the parent waits: docs/warm.md).
        let (out, _) = simulate(&m, Governor::Powersave, "scx:warm", fork_wait_chain(100));
        assert!(stat(&out, "warm_local") >= 100, "{name}: {}", out.policy_stats);
        // Without it, each child after the first goes where its elder
        // sibling ran.
        let (out, evs) = simulate(&m, Governor::Powersave, "scx:warm:local=off", fork_wait_chain(100));
        let warm = cpus(&evs);
        assert!(warm.len() <= 2, "{name}: local=off: the chain ran on {warm:?}");
        assert!(stat(&out, "warm_fork") >= 95, "{name}: {}", out.policy_stats);
        let (_, evs) = simulate(&m, Governor::Powersave, "scx:default", fork_wait_chain(100));
        assert!(warm.len() < cpus(&evs).len(), "{name}: warm {warm:?}, default {:?}", cpus(&evs));
        // Without either and the search, the built-in selection takes the
        // idle CPUs round-robin.
        let (out, evs) = simulate(&m, Governor::Powersave, "scx:warm:local=off,fork=off,compact=off", fork_wait_chain(100));
        assert_eq!(stat(&out, "warm_local") + stat(&out, "warm_fork") + stat(&out, "warm_found"), 0);
        assert!(cpus(&evs).len() > 2, "{name}: {:?}", cpus(&evs));
    }
}

#[test]
fn warm_a_child_whose_parent_runs_on_is_pulled_by_an_idle_cpu() {
    for &name in MACHINES {
        let m = common::quiet(name);
        // The parent computes 6 ms after the fork: an idle CPU, kicked when
        // the child was queued, takes it after its idle state's exit.
        let (out, evs) = simulate(&m, Governor::Powersave, "scx:warm", common::fork_then(false));
        let child = of(&evs, ids::WAKEUP_NEW).last().unwrap().1.pid;
        let on = ran_on(&evs, child);
        assert!(on.len() == 1 && on[0] != 0, "{name}: the child ran on {on:?}");
        assert!(stat(&out, "pulled") >= 1 && stat(&out, "warm_local") >= 1, "{name}: {}", out.policy_stats);
        let fork = of(&evs, ids::WAKEUP_NEW).last().unwrap().1.ts;
        let start = evs.iter().find(|(_, e)| e.id == ids::CTX_SWITCH && e.a() == child).unwrap().1.ts;
        let deepest = m.spec.idle.iter().map(|s| s.exit_latency_us).max().unwrap() * 1000;
        assert!(start - fork <= deepest + 100_000, "{name}: the child waited {} ns", start - fork);
    }
}

/// Tasks on CPUs 1 and 5 run 1 ms and sleep 0.3 ms, 50 times.
fn two_sleepers() -> Workload {
    let mut w = Workload::new("sleepers");
    let body = w.add("body", vec![Step::Compute(Amount::work_us(1000.0, 0.0)), Step::Sleep(Amount::fixed(3e5))]);
    let main = w.add("main", vec![Step::Repeat(body, 50), Step::Exit]);
    w.initial.push((main, "a".into(), Some(1)));
    w.initial.push((main, "b".into(), Some(5)));
    w
}

#[test]
fn warm_keeps_a_woken_task_on_its_idle_warm_cpu() {
    let m = common::quiet("xeon-gold-5218-2s");
    let (out, evs) = simulate(&m, Governor::Powersave, "scx:warm", two_sleepers());
    let pids: Vec<u32> = of(&evs, ids::WAKEUP_NEW).iter().map(|(_, e)| e.pid).collect();
    for &p in &pids {
        assert_eq!(ran_on(&evs, p).len(), 1, "{p}: {:?}", ran_on(&evs, p));
    }
    assert!(stat(&out, "warm_prev") >= 90, "{}", out.policy_stats);
    // Without it, the search finds the same CPUs (each is its die's
    // lowest idle warm one): the counter is the step's.
    let (out, evs) = simulate(&m, Governor::Powersave, "scx:warm:prev=off", two_sleepers());
    assert_eq!(stat(&out, "warm_prev"), 0);
    assert!(stat(&out, "warm_found") >= 90, "{}", out.policy_stats);
    for &p in &pids {
        assert_eq!(ran_on(&evs, p).len(), 1);
    }
}

#[test]
fn warm_set_grows_under_load_and_shrinks_within_a_window() {
    let m = common::quiet("xeon-gold-5218-2s");
    // 16 tasks run 1 ms and sleep 0.2 ms, 30 times, together; then one task
    // alone runs 1 ms and sleeps 1 ms, 100 times.
    let mut w = Workload::new("burst");
    let burst = w.add("burst", vec![Step::Compute(Amount::work_us(1000.0, 0.0)), Step::Sleep(Amount::fixed(2e5))]);
    let busy = w.add("busy", vec![Step::Repeat(burst, 30), Step::Exit]);
    let body = w.add("tail", vec![Step::Compute(Amount::work_us(1000.0, 0.0)), Step::Sleep(Amount::fixed(1e6))]);
    let mut main: Vec<Step> = (0..16).map(|_| Step::Fork(busy)).collect();
    main.extend([Step::WaitAll, Step::Repeat(body, 100), Step::Exit]);
    let main = w.add("main", main);
    w.initial.push((main, "main".into(), Some(0)));
    let (out, _) = simulate(&m, Governor::Powersave, "scx:warm", w.clone());
    let (joined, left) = (stat(&out, "warm_joined"), stat(&out, "warm_left"));
    assert!(joined >= 16, "grew: {}", out.policy_stats);
    // In the set at the end: the tail's CPU and the one it may have moved
    // from; the burst's CPUs left within a window of their last run.
    assert!(joined - left <= 2, "shrank: {}", out.policy_stats);
    // A window longer than the whole tail keeps them.
    let (out, _) = simulate(&m, Governor::Powersave, "scx:warm:window_us=1000000", w);
    assert!(stat(&out, "warm_joined") - stat(&out, "warm_left") >= 16, "{}", out.policy_stats);
}

#[test]
fn warm_spreads_over_idle_cpus_when_the_set_has_none_idle() {
    for &name in MACHINES {
        let m = common::quiet(name);
        // As many 20 ms tasks as CPUs, all started on CPU 0.
        let mut w = Workload::new("pile");
        let busy = w.add("busy", vec![Step::Compute(Amount::work_us(20_000.0, 0.0)), Step::Exit]);
        for i in 0..m.nr_cpus {
            w.initial.push((busy, format!("busy{i}"), Some(0)));
        }
        let (out, evs) = simulate(&m, Governor::Performance, "scx:warm", w);
        let mut first = std::collections::BTreeMap::new();
        for (_, e) in evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() != 0) {
            first.entry(e.a()).or_insert(e.ts);
        }
        assert_eq!(first.len() as u32, m.nr_cpus);
        let worst = *first.values().max().unwrap();
        let deepest = m.spec.idle.iter().map(|s| s.exit_latency_us).max().unwrap() * 1000;
        assert!(worst <= 4_000_000 + deepest, "{name}: a task waited until {worst} ns: {first:?}");
        assert_eq!(cpus(&evs).len() as u32, m.nr_cpus, "{name}: every CPU ran one");
        assert!(stat(&out, "warm_joined") >= m.nr_cpus as u64 / 2, "{name}: {}", out.policy_stats);
    }
}

/// A task on CPU 2 runs 200 us every 5 ms, 100 times.
fn light_periodic() -> Workload {
    let mut w = Workload::new("light");
    let tick = w.add("tick", vec![Step::Compute(Amount::work_us(200.0, 0.0)), Step::Sleep(Amount::fixed(4.8e6))]);
    let main = w.add("main", vec![Step::Repeat(tick, 100), Step::Exit]);
    w.initial.push((main, "main".into(), Some(2)));
    w
}

/// The mean frequency (kHz) of the task's CPU at its switch-ins after the
/// first 100 ms, under schedutil.
fn light_mean_khz(m: &Machine, policy: &str) -> f64 {
    let (_, evs) = simulate(m, Governor::Schedutil, policy, light_periodic());
    let pid = of(&evs, ids::WAKEUP_NEW).last().unwrap().1.pid;
    let mut freq = std::collections::HashMap::new();
    let mut v = vec![];
    for (c, e) in &evs {
        if e.id == ids::FREQ_CHANGE {
            freq.insert(*c, e.a());
        } else if e.id == ids::CTX_SWITCH && e.a() == pid && e.ts >= 100_000_000 {
            v.push(freq[c] as f64);
        }
    }
    assert!(v.len() > 50, "{policy}: {} runs", v.len());
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn warm_cpus_ask_for_the_top_frequency_only_with_the_hint() {
    let m = common::quiet("xeon-gold-5218-2s");
    let top = m.turbo_by_active[1] as f64;
    // A window longer than the sleep: the core stays in the set, at the top.
    let kept = light_mean_khz(&m, "scx:warm:window_us=10000");
    assert!(kept > 0.9 * top, "kept: {kept} kHz, the top is {top}");
    // Without the hint its target follows the task's 4 % utilisation down.
    let off = light_mean_khz(&m, "scx:warm:window_us=10000,perf_cpus=0");
    assert!(off < 0.5 * top, "perf_cpus=0: {off} kHz");
}
