// SPDX-License-Identifier: GPL-2.0-only
//! Cpusets (the workload steps cpuset and cpuset_cpus) in the fair-class
//! models and the sched_ext host, against kernel/cgroup/cpuset.c
//! (cpuset_attach, update_tasks_cpumask, cpuset_cpus_allowed) and
//! kernel/sched/core.c (__sched_setaffinity, __set_cpus_allowed_ptr and
//! its user_cpus_ptr test).

use warmcore_sim::engine::Outcome;
use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::{Governor, Machine};
use warmcore_trace::{ids, Event};

mod common;
use common::{ran_on, simulate};

fn run(m: &Machine, policy: &str, w: Workload) -> (Outcome, Vec<(u32, Event)>) {
    simulate(m, Governor::Powersave, policy, w)
}

fn pids(evs: &[(u32, Event)]) -> Vec<u32> {
    evs.iter().filter(|(_, e)| e.id == ids::WAKEUP_NEW).map(|(_, e)| e.pid).collect()
}

/// Work of 200 us then a 100 us sleep, 20 times.
fn busy(w: &mut Workload) -> u32 {
    w.add("body", vec![Step::Compute(Amount::work_us(200.0, 0.0)), Step::Sleep(Amount::fixed(100_000.0))])
}

/// `tasks` tasks that run `first`, then `busy` 20 times, `then`, and
/// `busy` 20 times again. Returns each task's CPUs before and after
/// `then` (the switch-ins around the first task's last `then`).
fn members(policy: &str, tasks: usize, first: Vec<Step>, then: Vec<Step>) -> Vec<Vec<u32>> {
    let m = common::quiet("default");
    let mut w = Workload::new("cpuset");
    w.cpusets = 1;
    let body = busy(&mut w);
    let mut steps = first;
    steps.push(Step::Repeat(body, 20));
    steps.extend(then);
    steps.extend([Step::Repeat(body, 20), Step::Exit]);
    let p = w.add("t", steps);
    for i in 0..tasks {
        w.initial.push((p, format!("t{i}"), None));
    }
    let (_, evs) = run(&m, policy, w);
    pids(&evs).iter().map(|&pid| ran_on(&evs, pid)).collect()
}

const POLICIES: &[&str] = &["cfs", "eevdf", "scx:default", "scx:bpfland"];

/// Whether the task came into `set` and stayed there (its stints before
/// its steps put it there may be elsewhere).
fn all_in(on: &[u32], set: &[u32]) -> bool {
    on.iter().position(|c| set.contains(c)).is_some_and(|i| on[i..].iter().all(|c| set.contains(c)))
}

#[test]
fn a_member_runs_on_its_own_cpus_within_the_cpusets() {
    // update_tasks_cpumask / cpuset_attach: the CPUs the task asked for
    // within the cpuset's.
    for &policy in POLICIES {
        let first = vec![Step::Affinity((0..4u32).collect(), false), Step::CpusetCpus(0, (2..6u32).collect()), Step::JoinCpuset(0)];
        for on in members(policy, 4, first, vec![]) {
            assert!(all_in(&on, &[2, 3]), "{policy}: {on:?}");
        }
    }
}

#[test]
fn a_member_whose_cpus_miss_the_cpuset_runs_on_the_cpusets() {
    // __set_cpus_allowed_ptr: an empty intersection with user_cpus_ptr
    // gives the cpuset's CPUs.
    for &policy in POLICIES {
        let first = vec![Step::Affinity([0u32, 1].into(), false), Step::CpusetCpus(0, [4u32, 5].into()), Step::JoinCpuset(0)];
        for on in members(policy, 3, first, vec![]) {
            assert!(all_in(&on, &[4, 5]), "{policy}: {on:?}");
        }
    }
}

#[test]
fn a_change_of_the_cpusets_cpus_moves_every_member() {
    // update_tasks_cpumask: set_cpus_allowed_ptr on each member. The
    // first task changes the cpuset's CPUs half way; every task then runs
    // on the new ones.
    for &policy in POLICIES {
        let first = vec![Step::CpusetCpus(0, (0..4u32).collect()), Step::JoinCpuset(0)];
        let m = common::quiet("default");
        let mut w = Workload::new("cpuset");
        w.cpusets = 1;
        let body = busy(&mut w);
        let mut steps = first;
        steps.extend([Step::Repeat(body, 20), Step::CpusetCpus(0, [8u32, 9].into()), Step::Repeat(body, 20), Step::Exit]);
        let lead = w.add("lead", steps);
        let other = w.add("other", vec![Step::JoinCpuset(0), Step::Repeat(body, 60), Step::Exit]);
        w.initial.push((lead, "lead".into(), None));
        w.initial.push((other, "other".into(), None));
        let (_, evs) = run(&m, policy, w);
        let p = pids(&evs);
        let change = evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() == p[0]).nth(21).unwrap().1.ts;
        for &pid in &p {
            let later: Vec<u32> =
                evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() == pid && e.ts > change + 1_000_000).map(|x| x.0).collect();
            assert!(!later.is_empty() && later.iter().all(|c| [8, 9].contains(c)), "{policy}: task {pid} after the change: {later:?}");
        }
    }
}

#[test]
fn sched_setaffinity_outside_the_cpuset_is_refused() {
    // __sched_setaffinity: the mask within cpuset_cpus_allowed is empty:
    // EINVAL, nothing changes.
    for &policy in POLICIES {
        let first = vec![Step::CpusetCpus(0, [4u32, 5].into()), Step::JoinCpuset(0), Step::Affinity([0u32].into(), false)];
        for on in members(policy, 2, first, vec![]) {
            assert!(all_in(&on, &[4, 5]), "{policy}: {on:?}");
        }
    }
}

#[test]
fn sched_ext_calls_set_cpumask_for_every_member_at_a_change() {
    // update_tasks_cpumask calls set_cpus_allowed_ptr for each task of the
    // cpuset; ext.c's set_cpus_allowed_scx calls ops.set_cpumask.
    let m = common::quiet("default");
    let mut w = Workload::new("cpuset");
    w.cpusets = 1;
    let body = busy(&mut w);
    let member = w.add("member", vec![Step::JoinCpuset(0), Step::Repeat(body, 30), Step::Exit]);
    let lead = w.add(
        "lead",
        vec![Step::Fork(member), Step::Fork(member), Step::Fork(member), Step::Compute(Amount::work_us(1000.0, 0.0)), Step::CpusetCpus(0, [0u32, 2, 3].into()), Step::WaitAll, Step::Exit],
    );
    w.initial.push((lead, "lead".into(), None));
    let broken = format!("bpf:{}/../cli/tests/fixtures/hunt-broken", env!("CARGO_MANIFEST_DIR"));
    let (out, _) = run(&m, &broken, w);
    // Each member at the change only: at its join the cpuset has every CPU,
    // its mask does not change, and __set_cpus_allowed_ptr_locked returns
    // before set_cpus_allowed_scx (cpumask_equal).
    assert_eq!(out.policy_stats["nr_set_cpumask"], 3, "{}", out.policy_stats);
    assert_eq!(out.policy_stats["last_weight"], 3, "{}", out.policy_stats);
}
