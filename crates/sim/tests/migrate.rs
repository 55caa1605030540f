// SPDX-License-Identifier: GPL-2.0-only
//! Migration-disabled sections (the workload steps migrate_disable and
//! migrate_enable) in the fair-class models and the sched_ext host, against
//! the kernel's rules: kernel/sched/core.c (migrate_disable,
//! migrate_enable, is_cpu_allowed, select_task_rq,
//! __set_cpus_allowed_ptr_locked) and kernel/sched/ext.c
//! (task_can_run_on_remote_rq, do_enqueue_task).

use warmcore_sim::engine::{Engine, Limits, Outcome};
use warmcore_sim::make_policy;
use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::{Governor, Machine};
use warmcore_trace::{ids, Event};

mod common;
use common::{ran_on, Collect};

const MS: u64 = 1_000_000;

fn run(m: &Machine, policy: &str, w: Workload) -> (Outcome, Vec<(u32, Event)>) {
    let c = Collect::default();
    let p = make_policy(policy, m).unwrap_or_else(|e| panic!("{policy}: {e}"));
    let mut e = Engine::new(m.clone(), Governor::Performance, p, w, 1, Box::new(c.clone())).unwrap();
    e.check_invariants = true;
    let out = e.run(Limits { max_sim_ns: 60_000_000_000, ..Limits::default() }).unwrap();
    let evs = c.0.borrow().clone();
    (out, evs)
}

fn pids(evs: &[(u32, Event)]) -> Vec<u32> {
    evs.iter().filter(|(_, e)| e.id == ids::WAKEUP_NEW).map(|(_, e)| e.pid).collect()
}

fn ms(x: f64) -> Amount {
    Amount::fixed(x * 3e6)
}

/// Two tasks on CPU 0 (allowed there only, then everywhere) that compute
/// 30 ms, sleep 1 ms and compute again, inside a migration-disabled
/// section entered on CPU 0 or not; the rest of the machine idle.
fn two_on_cpu0(disabled: bool) -> Workload {
    let mut w = Workload::new("two");
    let mut steps = vec![Step::Affinity([0u32].into(), false)];
    if disabled {
        steps.push(Step::MigrateDisable);
    }
    steps.extend([
        Step::Affinity((0..16u32).collect(), false),
        Step::Compute(ms(30.0)),
        Step::Sleep(Amount::fixed(1e6)),
        Step::Compute(ms(10.0)),
    ]);
    if disabled {
        steps.push(Step::MigrateEnable);
    }
    steps.push(Step::Exit);
    let p = w.add("t", steps);
    w.initial.push((p, "a".into(), Some(0)));
    w.initial.push((p, "b".into(), Some(0)));
    w
}

const POLICIES: &[&str] = &["cfs", "eevdf", "scx:default", "scx:bpfland"];

#[test]
fn a_migration_disabled_task_stays_on_its_cpu() {
    // is_cpu_allowed holds it to its CPU: load balancing leaves it
    // (can_migrate_task on cpus_ptr), its wake-up is not placed
    // (select_task_rq), and a sched_ext program that checks
    // is_migration_disabled keeps it local. Without the section the other
    // CPUs, idle, take one of the two.
    let m = common::quiet("default");
    for &policy in POLICIES {
        let (out, evs) = run(&m, policy, two_on_cpu0(true));
        assert!(out.partial.is_none(), "{policy}: {:?}", out.partial);
        for pid in pids(&evs) {
            // Its first stint may be elsewhere, before it is held on CPU 0.
            let on = ran_on(&evs, pid);
            assert_eq!(on.last(), Some(&0), "{policy}: task {pid}: {on:?}");
            assert!(on.len() <= 2, "{policy}: task {pid}: {on:?}");
        }
        let (_, evs) = run(&m, policy, two_on_cpu0(false));
        let moved = pids(&evs).iter().any(|&pid| ran_on(&evs, pid).last() != Some(&0));
        assert!(moved, "{policy}: without the section neither task left CPU 0");
    }
}

/// A parent on CPU 1 forks a child that computes 20 ms in a
/// migration-disabled section (or not), then 5 ms; 1 ms after the fork the
/// parent allows its children CPU 7 only. Returns the child's CPUs and
/// how long after its first run it first ran on CPU 7.
fn child_moved(disabled: bool, policy: &str) -> (Vec<u32>, u64) {
    let m = common::quiet("default");
    let mut w = Workload::new("moved");
    let mut steps = vec![Step::Compute(ms(20.0))];
    if disabled {
        steps.insert(0, Step::MigrateDisable);
        steps.push(Step::MigrateEnable);
    }
    steps.extend([Step::Compute(ms(5.0)), Step::Exit]);
    let child = w.add("child", steps);
    let main = w.add(
        "main",
        vec![Step::Fork(child), Step::Compute(ms(1.0)), Step::Affinity([7u32].into(), true), Step::WaitAll, Step::Exit],
    );
    w.initial.push((main, "main".into(), Some(1)));
    let (out, evs) = run(&m, policy, w);
    assert!(out.partial.is_none(), "{policy}: {:?}", out.partial);
    let pid = pids(&evs)[1];
    let ins: Vec<(u32, u64)> = evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() == pid).map(|(c, e)| (*c, e.ts)).collect();
    let first = ins[0].1;
    let on7 = ins.iter().find(|(c, _)| *c == 7).map_or(u64::MAX, |(_, t)| *t);
    (ran_on(&evs, pid), on7 - first)
}

#[test]
fn an_affinity_change_waits_for_migrate_enable() {
    // affine_move_task: another task's sched_setaffinity of a
    // migration-disabled task takes effect at its migrate_enable, where it
    // leaves its CPU; otherwise at once.
    for &policy in POLICIES {
        let (cpus, after) = child_moved(true, policy);
        assert_eq!(cpus.last(), Some(&7), "{policy}: {cpus:?}");
        assert!(cpus.len() >= 2 && after > 5 * MS, "{policy}: moved {after} ns after its first run: {cpus:?}");
        let (cpus, after) = child_moved(false, policy);
        assert_eq!(cpus.last(), Some(&7), "{policy}: {cpus:?}");
        assert!(after < 5 * MS, "{policy}: without the section it moved only after {after} ns");
    }
}

#[test]
fn a_migration_disabled_task_cannot_take_its_own_cpu_out_of_its_set() {
    // __set_cpus_allowed_ptr_locked: EBUSY for the current task, migration
    // disabled, whose CPU the new set lacks: nothing changes, and after
    // migrate_enable it still runs where it may.
    let m = common::quiet("default");
    for &policy in POLICIES {
        let mut w = Workload::new("ebusy");
        let p = w.add(
            "t",
            vec![Step::MigrateDisable, Step::Affinity([5u32].into(), false), Step::Compute(ms(2.0)), Step::MigrateEnable, Step::Compute(ms(2.0)), Step::Exit],
        );
        w.initial.push((p, "t".into(), Some(2)));
        let (out, evs) = run(&m, policy, w);
        assert!(out.partial.is_none(), "{policy}: {:?}", out.partial);
        let pid = pids(&evs)[0];
        assert!(!ran_on(&evs, pid).contains(&5), "{policy}: {:?}", ran_on(&evs, pid));
    }
}

fn broken() -> String {
    format!("bpf:{}/../cli/tests/fixtures/hunt-broken", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn sched_ext_refuses_to_move_a_migration_disabled_task_to_another_cpus_local_queue() {
    // ext.c, task_can_run_on_remote_rq (enforced, from
    // dispatch_to_local_dsq): a program that inserts a migration-disabled
    // task (given to ops.enqueue under SCX_OPS_ENQ_MIGRATION_DISABLED) into
    // another CPU's local queue is ejected with the kernel's message, before
    // the allowed-CPU test.
    let m = common::quiet("default");
    let mut w = Workload::new("md");
    // The program sends the task to CPU 0's and CPU 1's local queues in
    // turn: one of its wake-ups goes to the CPU it is not held on.
    let nap = || Step::Sleep(Amount::fixed(1e6));
    let p = w.add(
        "t",
        vec![Step::MigrateDisable, nap(), Step::Compute(ms(1.0)), nap(), Step::Compute(ms(1.0)), Step::MigrateEnable, Step::Exit],
    );
    w.initial.push((p, "t".into(), None));
    let (out, _) = run(&m, &format!("{}:ignore_affinity=true,alternate=true", broken()), w.clone());
    let why = out.partial.expect("ejected");
    assert!(out.ejected, "{why}");
    assert!(why.contains("SCX_DSQ_LOCAL[_ON] cannot move migration disabled t["), "{why}");
    assert!(why.contains("] from CPU ") && (why.ends_with(" to 0") || why.ends_with(" to 1")), "{why}");
    // Without the section the same program runs the task to its end.
    w.programs[0].steps.retain(|s| !matches!(s, Step::MigrateDisable | Step::MigrateEnable));
    let (out, _) = run(&m, &format!("{}:ignore_affinity=true,alternate=true", broken()), w);
    assert!(out.partial.is_none(), "{:?}", out.partial);
}

/// The fixture's counts of ops.set_cpumask: (calls, calls with a one-CPU
/// mask, the last mask's weight), and whether the run ended cleanly.
fn cpumask_calls(m: &Machine, policy: &str, w: Workload) -> (u64, u64, u64) {
    let (out, evs) = run(m, policy, w);
    assert!(out.partial.is_none(), "{:?}", out.partial);
    for pid in pids(&evs) {
        let on = ran_on(&evs, pid);
        assert!(on.windows(2).all(|w| w[0] == w[1]), "{pid} left its CPU in its section: {on:?}");
    }
    let s = &out.policy_stats;
    let n = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{k}: {s}"));
    (n("nr_set_cpumask"), n("nr_one_cpu_masks"), n("last_weight"))
}

#[test]
fn sched_ext_sees_the_one_cpu_mask_while_a_section_is_switched_out() {
    // core.c, migrate_disable_switch: a task switched out in a section has
    // p->cpus_ptr narrowed to its CPU (SCA_MIGRATE_DISABLE), once, and
    // ext.c's set_cpus_allowed_scx tells ops.set_cpumask; migrate_enable
    // gives its own mask back (SCA_MIGRATE_ENABLE), told again. A section
    // never switched out changes nothing (migrate_disable alone does not).
    let m = common::quiet("default");
    let nap = || Step::Sleep(Amount::fixed(1e6));
    let one = |steps: Vec<Step>| {
        let mut w = Workload::new("md");
        let p = w.add("t", steps);
        w.initial.push((p, "t".into(), None));
        w
    };
    let sleeps = one(vec![
        Step::MigrateDisable,
        Step::Compute(ms(1.0)),
        nap(),
        Step::Compute(ms(1.0)),
        nap(),
        Step::Compute(ms(1.0)),
        Step::MigrateEnable,
        Step::Exit,
    ]);
    // The fixture's custody mode runs a task on any CPU its mask allows.
    let custody = format!("{}:custody=true", broken());
    assert_eq!(cpumask_calls(&m, &custody, sleeps), (2, 1, 16));
    let runs = one(vec![Step::MigrateDisable, Step::Compute(ms(1.0)), Step::MigrateEnable, Step::Exit]);
    assert_eq!(cpumask_calls(&m, &custody, runs), (0, 0, 0));
    // Preempted in its section (three tasks on two CPUs, 20 ms slices): the
    // narrowing waits for the CPU to run another task, the program holds
    // the task meanwhile (custody, SCX_OPS_ENQ_MIGRATION_DISABLED) and
    // gets it back through ops.dequeue and ops.enqueue (DEQUEUE_SAVE,
    // ENQUEUE_RESTORE), and every task ends on the CPU it started on.
    let m = common::quiet("core2duo-e8400");
    let mut w = Workload::new("md3");
    let p = w.add("t", vec![Step::MigrateDisable, Step::Compute(ms(60.0)), Step::MigrateEnable, Step::Exit]);
    for i in 0..3 {
        w.initial.push((p, format!("t{i}"), None));
    }
    let (calls, narrowed, last) = cpumask_calls(&m, &custody, w);
    assert!(narrowed > 0, "no task was switched out in its section");
    assert_eq!((calls, last), (2 * narrowed, 2));
}
