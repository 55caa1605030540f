// SPDX-License-Identifier: GPL-2.0-only
//! Haiku's old scheduler (`haiku-old`): its selection rule on constructed
//! queues, its shared queue, quantum and placement on small runs; and the
//! `unixbench` file copy tests.

use warmcore_sim::haiku_old::{pick, QUANTUM};
use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::{run, Governor, Machine, RunConfig};
use warmcore_trace::event::prev_state;
use warmcore_trace::ids;

mod common;
use common::{fork_then, of, ran_on, simulate, stat};

/// How often each index is picked over every 15-bit random number.
fn picks(prios: &[i32]) -> Vec<u32> {
    let mut n = vec![0; prios.len()];
    for r in 0..1u32 << 15 {
        n[pick(prios, |_| true, || r).unwrap()] += 1;
    }
    n
}

#[test]
fn a_lower_priority_is_picked_with_probability_two_to_the_minus_difference() {
    // One level apart: half the time; two apart: a quarter.
    assert_eq!(picks(&[10, 10, 9]), vec![1 << 14, 0, 1 << 14]);
    assert_eq!(picks(&[10, 8]), vec![3 << 13, 1 << 13]);
    // The rule repeats from the lower level with a new number: 12 -> 11
    // -> 10. Only the top bit of each draw matters at a difference of 1.
    let mut n = [0; 3];
    for a in [0, 1 << 14] {
        for b in [0, 1 << 14] {
            let mut draws = [a, b].into_iter();
            n[pick(&[12, 11, 10], |_| true, || draws.next().unwrap()).unwrap()] += 1;
        }
    }
    assert_eq!(n, [2, 1, 1]);
    // One priority: first in, first out.
    assert_eq!(picks(&[10, 10, 10]), vec![1 << 15, 0, 0]);
}

#[test]
fn real_time_large_gaps_and_the_last_normal_level_are_never_passed_over() {
    assert_eq!(picks(&[100, 99]), vec![1 << 15, 0]);
    // A difference above 15.
    assert_eq!(picks(&[30, 10]), vec![1 << 15, 0]);
    // At 15 the lower one is picked once in 2^15.
    assert_eq!(picks(&[25, 10]), vec![(1 << 15) - 1, 1]);
    // The next level is the idle priority.
    assert_eq!(picks(&[10, 0]), vec![1 << 15, 0]);
    // A thread pinned elsewhere is skipped; an empty queue gives none.
    assert_eq!(pick(&[10, 10], |i| i == 1, || 1 << 14), Some(1));
    assert_eq!(pick(&[], |_| true, || 0), None);
    assert_eq!(pick(&[10], |_| false, || 0), None);
}

/// Three CPU-bound tasks of 20 ms started together.
fn three() -> Workload {
    let mut w = Workload::new("three");
    let p = w.add("loop", vec![Step::Compute(Amount::fixed(20.0 * 3e6)), Step::Exit]);
    for i in 0..3 {
        w.initial.push((p, format!("t{i}"), None));
    }
    w
}

#[test]
fn one_queue_for_the_machine_with_a_3_ms_quantum() {
    let m = Machine::load("core2duo-e8400").unwrap();
    let (out, evs) = simulate(&m, Governor::Performance, "haiku-old", three());
    // The first preemption comes one quantum after the start.
    let start = evs.iter().find(|(_, e)| e.id == ids::CTX_SWITCH && e.a() != 0).unwrap().1.ts;
    let pre = evs.iter().find(|(_, e)| e.id == ids::CTX_SWITCH && e.pid != 0 && e.b() == prev_state::RUNNABLE);
    assert_eq!(pre.expect("a preemption").1.ts - start, QUANTUM);
    assert!(stat(&out, "quantum_ends") >= 10, "{}", out.policy_stats);
    // No affinity: a task preempted on one CPU is taken by whichever CPU
    // reschedules next, so each task runs on both.
    for pid in 1..=3 {
        let cpus: std::collections::BTreeSet<u32> = ran_on(&evs, pid).into_iter().collect();
        assert_eq!(cpus.len(), 2, "task {pid} ran on {cpus:?}");
    }
    // 60 ms of work on 2 CPUs, never one idle while a task waits: 30 ms,
    // plus at most a quantum at the end when one task is left alone.
    assert!(out.makespan_ns < 30_000_000 + QUANTUM, "{} ns", out.makespan_ns);
}

#[test]
fn alone_a_task_gets_new_quanta_and_is_never_switched_out() {
    let m = Machine::load("core2duo-e8400").unwrap();
    let mut w = Workload::new("alone");
    let p = w.add("loop", vec![Step::Compute(Amount::fixed(20.0 * 3e6)), Step::Exit]);
    w.initial.push((p, "t".into(), Some(0)));
    let (out, evs) = simulate(&m, Governor::Performance, "haiku-old", w);
    assert_eq!(stat(&out, "quantum_ends"), 0);
    assert_eq!(stat(&out, "quantum_renewals"), 6, "20 ms in quanta of 3 ms");
    assert_eq!(of(&evs, ids::CTX_SWITCH).iter().filter(|(_, e)| e.a() == 1).count(), 1);
}

#[test]
fn a_new_task_goes_to_the_idle_cpu_unless_its_parent_blocks_first() {
    let m = Machine::load("core2duo-e8400").unwrap();
    // The parent keeps running: the idle CPU, woken for the child, takes it.
    let (out, evs) = simulate(&m, Governor::Performance, "haiku-old", fork_then(false));
    assert_eq!(ran_on(&evs, 2), vec![1]);
    assert!(stat(&out, "notified") >= 1, "{}", out.policy_stats);
    // The parent waits at once: its own CPU reschedules first and takes the
    // child from the shared queue before the woken CPU is up.
    let (_, evs) = simulate(&m, Governor::Performance, "haiku-old", fork_then(true));
    assert_eq!(ran_on(&evs, 2), vec![0]);
}

fn ops_per_s(workload: &str, policy: &str) -> f64 {
    let r = run(&RunConfig::new("core2duo-e8400", workload, policy, "performance", 1)).unwrap();
    assert!(r.partial.is_none(), "{workload}");
    assert_eq!(r.metric.name, "unixbench_ops_per_s");
    r.metric.value
}

#[test]
fn file_copy_moves_more_bytes_per_second_with_larger_buffers() {
    // Each operation is one buffer: KiB/s is ops/s x the buffer's KiB.
    let kib = |test: u32, buf: f64| ops_per_s(&format!("unixbench:test={test}"), "haiku-old") * buf / 1024.0;
    let (k1024, k256, k4096) = (kib(5, 1024.0), kib(6, 256.0), kib(7, 4096.0));
    assert!(k256 < k1024 && k1024 < k4096, "{k256} {k1024} {k4096} KiB/s");
    // The per-call cost dominates small buffers: 256-byte buffers copy
    // more buffers per second than 1024-byte ones.
    assert!(k256 * 4.0 > k1024);
}

#[test]
fn copies_run_side_by_side() {
    // Two copying processes on two CPUs: about twice the operations per
    // second of one.
    for policy in ["haiku-old", "haiku-low-latency"] {
        let one = ops_per_s("unixbench:test=5", policy);
        let two = ops_per_s("unixbench:test=5,copies=2", policy);
        assert!((1.8..=2.05).contains(&(two / one)), "{policy}: {one} -> {two}");
    }
}

#[test]
fn unknown_unixbench_test_lists_the_tests() {
    let e = run(&RunConfig::new("core2duo-e8400", "unixbench:test=8", "haiku-old", "performance", 1)).unwrap_err();
    let e = e.to_string();
    assert!(e.contains("0 to 7") && e.contains("copy4096") && !e.contains('\n'), "{e}");
}
