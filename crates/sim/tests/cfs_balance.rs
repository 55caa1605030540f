// SPDX-License-Identifier: GPL-2.0-only
//! The fair-class model's load balancing: NOHZ idle balancing spreads a pile
//! of tasks over every socket, an idle-balance pass moves more than one task
//! (up to nr_migrate), and a machine with one task is left alone.

use warmcore_sim::engine::{Engine, Limits, Outcome};
use warmcore_sim::make_policy;
use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::{Governor, Machine};
use warmcore_trace::{ids, Event};

mod common;
use common::Collect;

const MS: u64 = 1_000_000;
/// sysctl_sched_nr_migrate in 5.9.
const NR_MIGRATE: u32 = 32;

fn simulate(m: &Machine, policy: &str, w: Workload) -> (Outcome, Vec<(u32, Event)>) {
    let c = Collect::default();
    let p = make_policy(policy, m).unwrap_or_else(|e| panic!("{policy}: {e}"));
    let mut e = Engine::new(m.clone(), Governor::Performance, p, w, 1, Box::new(c.clone())).unwrap();
    e.check_invariants = true;
    let out = e.run(Limits::default()).unwrap_or_else(|e| panic!("{policy}: {e}"));
    assert!(out.partial.is_none());
    let evs = c.0.borrow().clone();
    (out, evs)
}

/// `n` CPU-bound tasks of `ms` milliseconds' worth of cycles at 3 GHz, all
/// started on CPU 0.
fn pile(n: usize, ms: f64) -> Workload {
    let mut w = Workload::new("pile");
    let p = w.add("loop", vec![Step::Compute(Amount::fixed(ms * 3e6)), Step::Exit]);
    for i in 0..n {
        w.initial.push((p, format!("t{i}"), Some(0)));
    }
    w
}

/// The cfs statistics, also when wrapped by another policy.
fn cfs_stat(out: &Outcome, k: &str) -> u64 {
    let s = &out.policy_stats;
    let v = if s.get("cfs").is_some() { &s["cfs"][k] } else { &s[k] };
    v.as_u64().unwrap_or_else(|| panic!("no {k} in {s}"))
}

/// Time at which each socket first switches a task in, relative to the start.
fn first_run_per_socket(m: &Machine, evs: &[(u32, Event)]) -> Vec<Option<u64>> {
    let t0 = evs.iter().map(|(_, e)| e.ts).min().unwrap();
    let mut first = vec![None; m.socket_cpus.len()];
    for (cpu, e) in evs {
        if e.id == ids::CTX_SWITCH && e.a() != 0 {
            let s = m.cpu_socket[*cpu as usize] as usize;
            if first[s].is_none() {
                first[s] = Some(e.ts - t0);
            }
        }
    }
    first
}

/// CPUs running a task at time `at` since the start (from each CPU's last
/// switch before then).
fn running_at(evs: &[(u32, Event)], at: u64) -> usize {
    let t0 = evs.iter().map(|(_, e)| e.ts).min().unwrap();
    let mut last = std::collections::BTreeMap::new();
    for (cpu, e) in evs {
        if e.id == ids::CTX_SWITCH && e.ts - t0 <= at {
            last.insert(*cpu, e.a());
        }
    }
    last.values().filter(|&&next| next != 0).count()
}

#[test]
fn a_pile_on_cpu0_spreads_to_every_socket_of_the_e7() {
    let m = common::quiet("xeon-e7-8870v4");
    assert_eq!(m.socket_cpus.len(), 4);
    for policy in ["cfs", "slocal"] {
        let (out, evs) = simulate(&m, policy, pile(160, 1000.0));
        let first = first_run_per_socket(&m, &evs);
        // The NUMA level's idle interval is 160 ms (its span weight); every
        // socket must get work well within one such interval plus the first
        // kicks, not after the 5.12 s busy interval.
        for (s, t) in first.iter().enumerate() {
            let t = t.unwrap_or_else(|| panic!("{policy}: socket {s} never ran a task"));
            assert!(t < 200 * MS, "{policy}: socket {s} first ran a task at {t} ns");
        }
        // And the pile spreads over (nearly) all 160 CPUs early in the run.
        let busy = running_at(&evs, 400 * MS);
        assert!(busy >= 150, "{policy}: only {busy} CPUs run a task at 400 ms");
        assert!(cfs_stat(&out, "nohz_pulls") > 0, "{policy}: {}", out.policy_stats);
        // It stays spread (busy CPUs balance across NUMA only every 5.12 s,
        // so nothing pulls the tasks back together).
        let later = running_at(&evs, 1000 * MS);
        assert!(later >= 150, "{policy}: only {later} CPUs run a task at 1 s");
    }
}

#[test]
fn a_large_imbalance_moves_several_tasks_per_pass_up_to_nr_migrate() {
    let m = common::quiet("xeon-e7-8870v4");
    let (_, evs) = simulate(&m, "cfs", pile(160, 200.0));
    // Balance passes run on behalf of idle CPUs (pid 0) by the NOHZ ilb;
    // PERIODIC_BALANCE_END: a = level, b = tasks pulled.
    let idle_passes: Vec<u32> =
        evs.iter().filter(|(_, e)| e.id == ids::PERIODIC_BALANCE_END && e.pid == 0).map(|(_, e)| e.b()).collect();
    assert!(!idle_passes.is_empty());
    let max = *idle_passes.iter().max().unwrap();
    assert!(max > 1, "no idle-balance pass pulled more than one task (max {max})");
    assert!(max <= NR_MIGRATE, "a pass pulled {max} tasks, more than nr_migrate");
    // Every pass's pull shows up as that many migrations to its CPU at the
    // same instant.
    for (cpu, e) in evs.iter().filter(|(_, e)| e.id == ids::PERIODIC_BALANCE_END && e.b() > 1) {
        let moved = evs.iter().filter(|(_, x)| x.id == ids::MIGRATE && x.ts == e.ts && x.b() == *cpu).count();
        assert!(moved >= e.b() as usize, "cpu {cpu}: pass reports {} pulled, {moved} migrations", e.b());
    }
}

#[test]
fn one_task_is_left_alone() {
    for machine in ["xeon-e7-8870v4", "default"] {
        let m = common::quiet(machine);
        for policy in ["cfs", "slocal", "smove", "nest"] {
            let (out, evs) = simulate(&m, policy, pile(1, 300.0));
            let migrations = evs.iter().filter(|(_, e)| e.id == ids::MIGRATE).count();
            assert_eq!(migrations, 0, "{machine} {policy}: {migrations} migrations of a lone task");
            assert_eq!(cfs_stat(&out, "nohz_kicks"), 0, "{machine} {policy}");
            assert_eq!(cfs_stat(&out, "periodic_pulls"), 0, "{machine} {policy}");
        }
    }
}

#[test]
fn two_tasks_on_one_cpu_are_split_by_the_idle_balance() {
    // Two tasks on CPU 0 of an otherwise idle machine: the busy tick kicks
    // the ilb, which pulls exactly one of them (half the difference). The
    // model has no active balancing, so they may stay on one core's two
    // SMT threads, but they no longer share one CPU: faster than 2 x 300 ms.
    let m = common::quiet("xeon-e7-8870v4");
    let (out, evs) = simulate(&m, "cfs", pile(2, 300.0));
    let migrations = evs.iter().filter(|(_, e)| e.id == ids::MIGRATE).count();
    assert_eq!(migrations, 1, "{}", out.policy_stats);
    assert!(out.makespan_ns < 550 * MS, "makespan {} ns", out.makespan_ns);
}

#[test]
fn a_small_imbalance_stays_on_its_socket() {
    // Two tasks on one CPU of socket 2: the ilb (the first idle CPU, on
    // socket 0) balances for every idle CPU; at NUMA level
    // adjust_numa_imbalance leaves a 2-task imbalance alone, so the task
    // that moves goes to a CPU of the same socket (MC level).
    let m = common::quiet("xeon-e7-8870v4");
    let src = m.socket_cpus[2][5];
    let mut w = Workload::new("pair");
    let p = w.add("loop", vec![Step::Compute(Amount::fixed(300.0 * 3e6)), Step::Exit]);
    for i in 0..2 {
        w.initial.push((p, format!("t{i}"), Some(src)));
    }
    let (out, evs) = simulate(&m, "cfs", w);
    let moves: Vec<u32> = evs.iter().filter(|(_, e)| e.id == ids::MIGRATE).map(|(_, e)| e.b()).collect();
    assert_eq!(moves.len(), 1, "{moves:?} {}", out.policy_stats);
    assert_eq!(m.cpu_socket[moves[0] as usize], 2, "moved to CPU {}", moves[0]);
}

#[test]
fn a_newly_idle_cpu_balances_its_own_levels_and_pulls_what_the_imbalance_allows() {
    // Eight long tasks on CPU 0 of the 5218 and a 1 ms task on CPU 1, on
    // another core of the same die. When that task exits, CPU 1 balances as
    // a newly idle CPU: nothing at SMT level (its sibling is idle), then at
    // MC level its idle core has spare capacity against CPU 0's overloaded
    // one, so it pulls the core's two CPUs' worth (migrate_util), before
    // any tick could balance.
    let m = common::quiet("xeon-gold-5218-2s");
    let mut w = pile(8, 200.0);
    let short = w.add("short", vec![Step::Compute(Amount::fixed(1.0 * 3e6)), Step::Exit]);
    w.initial.push((short, "short".into(), Some(1)));
    let (out, evs) = simulate(&m, "cfs", w);
    let first = evs
        .iter()
        .find(|(cpu, e)| *cpu == 1 && e.id == ids::IDLE_BALANCE_END && e.a() > 0)
        .map(|(_, e)| *e)
        .unwrap_or_else(|| panic!("CPU 1 never pulled when newly idle: {}", out.policy_stats));
    let t0 = evs.iter().map(|(_, e)| e.ts).min().unwrap();
    assert!(first.ts - t0 < 2 * MS, "the first newly-idle pull came at {} ns", first.ts - t0);
    assert_eq!(first.a(), 2, "pulled {} tasks", first.a());
    let moved = evs.iter().filter(|(_, x)| x.id == ids::MIGRATE && x.ts == first.ts && x.b() == 1).count();
    assert_eq!(moved, 2);
    assert!(cfs_stat(&out, "newidle_pulls") >= 2);
}
