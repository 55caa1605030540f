// SPDX-License-Identifier: GPL-2.0-only
//! The kernel's own time (docs/model.md, The kernel's own time): fork, a
//! placement and the cache refill after a migration cost the CPU that does
//! them work in cycles.

mod common;

use warmcore_sim::kernel_time::{
    placement_cycles, refill_cycles, CTX_SWITCH_CYCLES, FORK_CYCLES, LLC_LINE_CYCLES, REFILL_LINES,
};
use warmcore_sim::program::{Amount, Step, Workload, REF_CYCLES_PER_US};
use warmcore_sim::{run, Governor, Machine, RunConfig};
use warmcore_trace::{ids, Event};

use common::simulate;

/// The default machine without SMT, so that no sibling slows a task down.
fn no_smt() -> Machine {
    let text = include_str!("../../../machines/default.toml").replace("threads_per_core = 2", "threads_per_core = 1");
    Machine::from_toml(&text, "default-no-smt").unwrap()
}

/// The cycles CPU `c` ran between `t0` and `t1` (ns), from its frequency
/// changes.
fn cycles(evs: &[(u32, Event)], c: u32, t0: u64, t1: u64) -> f64 {
    let mut khz = 0.0;
    let mut at = t0;
    let mut sum = 0.0;
    for (_, e) in evs.iter().filter(|(cpu, e)| *cpu == c && e.id == ids::FREQ_CHANGE && e.ts <= t1) {
        if e.ts > t0 {
            sum += (e.ts - at) as f64 * khz * 1e-6;
            at = e.ts;
        }
        khz = e.a() as f64;
    }
    sum + (t1 - at) as f64 * khz * 1e-6
}

#[test]
fn forks_cost_the_parent_their_copy_and_placement() {
    // A parent forks 10 children back to back, with no work of its own in
    // between: the time from the first fork to the last is the kernel's.
    let mut w = Workload::new("forks");
    let child = w.add("child", vec![Step::Exit]);
    let mut steps = vec![Step::Mark(0)];
    steps.extend((0..10).map(|_| Step::Fork(child)));
    steps.extend([Step::Measure(0), Step::WaitAll, Step::Exit]);
    let main = w.add("main", steps);
    w.initial.push((main, "main".into(), Some(0)));
    let (out, evs) = simulate(&no_smt(), Governor::Performance, "cfs", w);
    let took = out.samples[0];
    let start = evs.iter().find(|(_, e)| e.id == ids::CTX_SWITCH).unwrap().1.ts;
    let done = cycles(&evs, 0, start, start + took);
    let copies = 10.0 * FORK_CYCLES;
    // The scans of the last wake-up (the parent's, after the measure) are
    // in the total too: an upper bound.
    let most = copies + placement_cycles(out.placement_scans as u32);
    assert!(out.placement_scans > 0);
    assert!(done >= copies && done <= most + 1.0, "{done} cycles, copies {copies}, with placements {most}");
}

#[test]
fn nest_looks_at_more_cpus_per_placement_than_the_fair_class() {
    // An overloaded 160-CPU machine: Nest goes through its primary and
    // reserve nests before the fair class's own search; S_local looks at
    // no CPU when it places a task on its waker's.
    let per = |policy: &str| {
        let c = RunConfig::new("xeon-e7-8870v4", "hackbench:groups=10,loops=20", policy, "schedutil", 1);
        let r = run(&c).unwrap();
        assert!(r.placements > 0);
        (r.placement_scans as f64 / r.placements as f64, r)
    };
    let (cfs, _) = per("cfs");
    let (nest, _) = per("nest");
    let (slocal, _) = per("slocal");
    assert!(nest > cfs, "CPUs per placement: nest {nest:.1}, cfs {cfs:.1}");
    assert!(slocal < cfs, "CPUs per placement: slocal {slocal:.1}, cfs {cfs:.1}");
}

#[test]
fn a_migrated_hot_task_pays_the_refill_once() {
    // Under S_local the parent's child is queued on the parent's CPU 0 and
    // takes it while the parent sleeps; the parent, woken by its timer
    // 100 us later (cache hot), finds CPU 0 busy and moves to another core
    // of the same LLC. Its second sleep leaves that core idle, so it wakes
    // there again: no refill.
    let work = 200.0;
    let mut w = Workload::new("refill");
    let hog = w.add("hog", vec![Step::Compute(Amount::work_us(3000.0, 0.0)), Step::Exit]);
    let nap = Step::Sleep(Amount::fixed(100e3));
    let run_w = Step::Compute(Amount::work_us(work, 0.0));
    let main = w.add(
        "main",
        vec![run_w.clone(), Step::Fork(hog), nap.clone(), run_w.clone(), nap, run_w, Step::WaitAll, Step::Exit],
    );
    w.initial.push((main, "main".into(), Some(0)));
    let m = no_smt();
    let (_, evs) = simulate(&m, Governor::Performance, "slocal", w);
    let pid = 1;
    // The parent's stints: switched in on a CPU, until switched out there.
    let stints: Vec<(u32, u64, u64)> = evs
        .iter()
        .filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() == pid)
        .map(|&(c, e)| {
            let out = evs.iter().find(|(oc, o)| *oc == c && o.id == ids::CTX_SWITCH && o.pid == pid && o.ts >= e.ts);
            (c, e.ts, out.unwrap().1.ts)
        })
        .collect();
    assert!(stints.len() >= 3, "{stints:?}");
    let (c1, in1, out1) = stints[1];
    let (c2, in2, out2) = stints[2];
    assert_ne!(c1, 0, "the parent moved off CPU 0");
    assert_eq!(c2, c1, "and stayed");
    let own = work * REF_CYCLES_PER_US + CTX_SWITCH_CYCLES;
    let first = cycles(&evs, c1, in1, out1);
    let second = cycles(&evs, c2, in2, out2);
    let refill = refill_cycles(&m, 0, c1);
    assert_eq!(refill, REFILL_LINES * LLC_LINE_CYCLES);
    assert!((first - own - refill).abs() < 10.0, "after the migration: {first} cycles, own {own}, refill {refill}");
    assert!((second - own).abs() < 10.0, "after no migration: {second} cycles, own {own}");
}
