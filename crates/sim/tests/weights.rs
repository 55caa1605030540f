// SPDX-License-Identifier: GPL-2.0-only
//! Nice values and SCHED_IDLE in the fair-class models and the sched_ext
//! host, against the kernel's rules (docs/model.md, Weights): the load
//! weights of kernel/sched/core.c's sched_prio_to_weight share a CPU,
//! WEIGHT_IDLEPRIO and check_preempt_wakeup's rules for idle-policy tasks,
//! and the weight and policy a sched_ext program reads in the task.

use std::collections::HashMap;

use warmcore_sim::engine::{Engine, Limits, Outcome};
use warmcore_sim::make_policy;
use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::Governor;
use warmcore_trace::{ids, Event};

mod common;
use common::{simulate, Collect};

const MS: u64 = 1_000_000;

/// Two CPU-bound tasks on CPU 0, `a` with the steps `a_first` before its
/// work and `b` with `b_first`, each 300 ms of work at 3 GHz.
fn pair(a_first: Vec<Step>, b_first: Vec<Step>) -> Workload {
    let mut w = Workload::new("pair");
    for (name, first) in [("a", a_first), ("b", b_first)] {
        let mut steps = first;
        steps.extend([Step::Compute(Amount::fixed(300.0 * 3e6)), Step::Exit]);
        let p = w.add(name, steps);
        w.initial.push((p, name.into(), Some(0)));
    }
    w
}

/// CPU time per pid on `cpu` until the first task exits: each switch-in
/// to the next switch there.
fn cpu_time(evs: &[(u32, Event)], cpu: u32) -> HashMap<u32, u64> {
    let end = evs.iter().find(|(_, e)| e.id == ids::EXIT).map_or(u64::MAX, |(_, e)| e.ts);
    let mut out = HashMap::new();
    let mut cur: Option<(u32, u64)> = None;
    for (_, e) in evs.iter().filter(|(c, e)| *c == cpu && e.id == ids::CTX_SWITCH && e.ts < end) {
        if let Some((pid, since)) = cur {
            *out.entry(pid).or_insert(0) += e.ts - since;
        }
        cur = Some((e.a(), e.ts));
    }
    if let Some((pid, since)) = cur {
        *out.entry(pid).or_insert(0) += end - since;
    }
    out
}

/// The pids of the first `n` tasks created, in order.
fn pids(evs: &[(u32, Event)], n: usize) -> Vec<u32> {
    let mut v: Vec<u32> = evs.iter().filter(|(_, e)| e.id == ids::WAKEUP_NEW).map(|(_, e)| e.pid).collect();
    v.truncate(n);
    v
}

/// The share of CPU 0 task `a` had while both ran.
fn share_of_a(policy: &str, w: Workload) -> f64 {
    let m = common::quiet("default");
    let (_, evs) = simulate(&m, Governor::Performance, &format!("{policy}:balance=off"), w);
    let p = pids(&evs, 2);
    let t = cpu_time(&evs, 0);
    let (a, b) = (t.get(&p[0]).copied().unwrap_or(0), t.get(&p[1]).copied().unwrap_or(0));
    assert!(a + b > 200 * MS, "{policy}: {a} + {b}");
    a as f64 / (a + b) as f64
}

#[test]
fn nice_values_share_a_cpu_by_the_kernels_weights() {
    // sched_prio_to_weight: nice 0 is 1024, nice 5 is 335, nice -5 3121: a
    // nice-0 task beside a nice-5 one gets 1024 / 1359 = 75 % of the CPU,
    // beside a nice -5 one 1024 / 4145 = 25 %. The nice value is set by
    // the task's first step, while it runs (reweight_task).
    for policy in ["cfs", "eevdf"] {
        let even = share_of_a(policy, pair(vec![], vec![]));
        assert!((even - 0.5).abs() < 0.03, "{policy}: nice 0 against nice 0: {even}");
        let s = share_of_a(policy, pair(vec![], vec![Step::Nice(5)]));
        assert!((s - 1024.0 / 1359.0).abs() < 0.04, "{policy}: nice 0 against nice 5: {s}");
        let s = share_of_a(policy, pair(vec![], vec![Step::Nice(-5)]));
        assert!((s - 1024.0 / 4145.0).abs() < 0.04, "{policy}: nice 0 against nice -5: {s}");
    }
}

#[test]
fn a_sched_idle_task_weighs_less_than_nice_19() {
    // WEIGHT_IDLEPRIO (3) whatever the nice value: beside a nice-0 task it
    // gets at most a few slices in 300 ms, fewer than a nice-19 task
    // (weight 15), and nice -20 does not lift it.
    for policy in ["cfs", "eevdf"] {
        let idle = 1.0 - share_of_a(policy, pair(vec![], vec![Step::Nice(-20), Step::SchedIdle(true)]));
        let nice19 = 1.0 - share_of_a(policy, pair(vec![], vec![Step::Nice(19)]));
        assert!(idle < 0.03, "{policy}: SCHED_IDLE got {idle}");
        assert!(idle < nice19, "{policy}: SCHED_IDLE got {idle}, nice 19 {nice19}");
        // Back to SCHED_NORMAL, the task weighs its nice value again.
        let back = share_of_a(policy, pair(vec![], vec![Step::SchedIdle(true), Step::SchedIdle(false)]));
        assert!((back - 0.5).abs() < 0.03, "{policy}: back to normal: {back}");
    }
}

/// On CPU 0 alone, a CPU-bound task with the steps `hog_first` before its work,
/// and a task that sleeps 5 ms and computes 100 us, 30 times, with
/// `sleeper_first` before. Returns each wake-up's wait until it ran, ns,
/// while the hog ran.
fn wake_waits(policy: &str, hog_first: Vec<Step>, sleeper_first: Vec<Step>) -> Vec<u64> {
    let m = common::quiet("default");
    let mut w = Workload::new("wake");
    // Both allowed on CPU 0 only: the sleeper's wake-up cannot go to an
    // idle CPU.
    let only0 = || Step::Affinity([0u32].into(), false);
    let mut steps = vec![only0()];
    steps.extend(hog_first);
    steps.extend([Step::Compute(Amount::fixed(400.0 * 3e6)), Step::Exit]);
    let hog = w.add("hog", steps);
    let body = w.add("body", vec![Step::Sleep(Amount::fixed(5e6)), Step::Compute(Amount::fixed(0.1 * 3e6))]);
    let mut steps = vec![only0()];
    steps.extend(sleeper_first);
    steps.extend([Step::Repeat(body, 30), Step::Exit]);
    let sleeper = w.add("sleeper", steps);
    w.initial.push((hog, "hog".into(), Some(0)));
    w.initial.push((sleeper, "sleeper".into(), Some(0)));
    let (_, evs) = simulate(&m, Governor::Performance, &format!("{policy}:balance=off"), w);
    let pid = pids(&evs, 2)[1];
    let end = evs.iter().find(|(_, e)| e.id == ids::EXIT).map_or(u64::MAX, |(_, e)| e.ts);
    let mut waits = Vec::new();
    let mut woken = None;
    for (_, e) in evs.iter().filter(|(_, e)| e.ts < end) {
        if e.id == ids::WAKEUP && e.pid == pid {
            woken = Some(e.ts);
        } else if e.id == ids::CTX_SWITCH && e.a() == pid {
            if let Some(t) = woken.take() {
                waits.push(e.ts - t);
            }
        }
    }
    assert!(waits.len() >= 10, "{policy}: {} wake-ups seen beside the hog", waits.len());
    waits
}

/// A wait shorter than this is a preemption at the wake-up: a wake-up and
/// a context switch take the model well under it, a tick is 4 ms.
const IMMEDIATE: u64 = 500_000;

#[test]
fn a_waking_normal_task_preempts_an_idle_policy_task_at_once() {
    // check_preempt_wakeup(_fair): "Idle tasks are by definition preempted
    // by non-idle tasks": at once, whatever the idle task's slice (eevdf's
    // RUN_TO_PARITY would otherwise protect it).
    for policy in ["cfs", "eevdf"] {
        let waits = wake_waits(policy, vec![Step::SchedIdle(true)], vec![]);
        let worst = waits.iter().max().copied().unwrap_or(0);
        assert!(worst < IMMEDIATE, "{policy}: a wake-up waited {worst} ns: {waits:?}");
    }
}

#[test]
fn a_waking_idle_policy_task_never_preempts() {
    // check_preempt_wakeup(_fair): an idle-policy task does not preempt a
    // normal one at wake-up (its preemption is the tick's), even when it
    // has slept long enough to be owed the CPU: it waits for the running
    // task's slice to end at a tick. Nice 0 against nice 0, the woken task
    // preempts at once.
    for policy in ["cfs", "eevdf"] {
        let waits = wake_waits(policy, vec![], vec![Step::SchedIdle(true)]);
        let immediate = waits.iter().filter(|&&w| w < IMMEDIATE).count();
        assert!(immediate < waits.len() / 4, "{policy}: {immediate} wake-ups ran at once: {waits:?}");
        let normal = wake_waits(policy, vec![], vec![]);
        let immediate = normal.iter().filter(|&&w| w < IMMEDIATE).count();
        assert!(immediate > normal.len() / 2, "{policy}: nice 0: {normal:?}");
    }
}

fn broken() -> String {
    format!("bpf:{}/../cli/tests/fixtures/hunt-broken", env!("CARGO_MANIFEST_DIR"))
}

fn run_scx(w: Workload) -> Outcome {
    let m = common::quiet("default");
    let p = make_policy(&broken(), &m).unwrap();
    let mut e = Engine::new(m.clone(), Governor::Powersave, p, w, 1, Box::new(Collect::default())).unwrap();
    let out = e.run(Limits::default()).unwrap();
    assert!(out.partial.is_none(), "{:?}", out.partial);
    out
}

#[test]
fn sched_ext_gives_the_program_the_kernels_weight_and_policy() {
    // ext.c: p->scx.weight is sched_weight_to_cgroup of the load weight:
    // nice 5's 335 is 33 (100 for nice 0); a SCHED_IDLE task's
    // WEIGHT_IDLEPRIO is 1, and p->policy is SCHED_IDLE. A child forked
    // after the change is SCHED_IDLE from its creation: ops.enable sees it.
    let mut w = Workload::new("nice");
    let main = w.add("main", vec![Step::Nice(5), Step::Sleep(Amount::fixed(1e6)), Step::Compute(Amount::work_us(100.0, 0.0)), Step::Exit]);
    w.initial.push((main, "main".into(), None));
    let out = run_scx(w);
    assert_eq!(out.policy_stats["min_task_weight"], 33, "{}", out.policy_stats);
    assert_eq!(out.policy_stats["idle_ran"], 0, "{}", out.policy_stats);

    let mut w = Workload::new("idle");
    let child = w.add("child", vec![Step::Compute(Amount::work_us(100.0, 0.0)), Step::Exit]);
    let main = w.add("main", vec![Step::SchedIdle(true), Step::Fork(child), Step::WaitAll, Step::Exit]);
    w.initial.push((main, "main".into(), None));
    let out = run_scx(w);
    let s = &out.policy_stats;
    assert_eq!((s["idle_weight"].as_u64(), s["min_task_weight"].as_u64()), (Some(1), Some(1)), "{s}");
    assert_eq!(s["idle_enabled"], 1, "the child is SCHED_IDLE at ops.enable: {s}");
    assert!(s["idle_ran"].as_u64().unwrap() >= 1, "{s}");
}

#[test]
fn a_cpu_running_only_idle_policy_tasks_counts_as_idle_for_a_wake_up() {
    // fair.c, select_idle_sibling (since 5.4, so in both kernels modelled):
    // `available_idle_cpu(prev) || sched_idle_cpu(prev)`. On a two-CPU
    // machine a waker pinned to CPU 0 wakes a reader through a pipe (a
    // synchronous wake-up: wake_affine targets CPU 0, which is busy) while
    // CPU 1 runs a SCHED_IDLE hog: the reader goes back to CPU 1, its
    // previous CPU, every time. Counted as busy, CPU 1 would lose it to
    // the target, CPU 0.
    let m = common::quiet("core2duo-e8400");
    for policy in ["cfs", "eevdf"] {
        let mut w = Workload::new("sched-idle-cpu");
        let pipe = w.pipe(64);
        let hog = w.add("hog", vec![Step::Affinity([1u32].into(), false), Step::SchedIdle(true), Step::Compute(Amount::fixed(200.0 * 3e6)), Step::Exit]);
        let wbody = w.add("wbody", vec![Step::Compute(Amount::fixed(2.0 * 3e6)), Step::PipeWrite(pipe)]);
        let waker = w.add("waker", vec![Step::Affinity([0u32].into(), false), Step::Repeat(wbody, 40), Step::Exit]);
        let rbody = w.add("rbody", vec![Step::PipeRead(pipe), Step::Compute(Amount::fixed(0.1 * 3e6))]);
        let reader = w.add("reader", vec![Step::Repeat(rbody, 40), Step::Exit]);
        w.initial.push((hog, "hog".into(), Some(1)));
        w.initial.push((waker, "waker".into(), Some(0)));
        w.initial.push((reader, "reader".into(), Some(1)));
        let (_, evs) = simulate(&m, Governor::Performance, policy, w);
        let reader = pids(&evs, 3)[2];
        let on: Vec<u32> = evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() == reader).map(|x| x.0).collect();
        let on1 = on.iter().filter(|&&c| c == 1).count();
        assert!(on.len() >= 30 && on1 * 10 >= on.len() * 9, "{policy}: the reader ran on {on:?}");
    }
}
