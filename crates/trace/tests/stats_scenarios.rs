// SPDX-License-Identifier: GPL-2.0-only
//! Hand-built traces whose every figure is worked out in the comments.
use warmcore_trace::event::prev_state::{BLOCKED, DEAD, RUNNABLE};
use warmcore_trace::stats::{Analyzer, Band, Stats};
use warmcore_trace::*;

const MS: u64 = 1_000_000;
const GHZ: u32 = 1_000_000; // in kHz

fn header(n: u32, freq: Option<(u32, u32)>) -> Header {
    let mut machine = Machine::flat("test", n);
    if let Some((lo, hi)) = freq {
        machine.freq_min_khz = lo;
        machine.freq_base_khz = lo;
        machine.freq_max_khz = hi;
    }
    Header::other(machine, "test")
}

// The builders of hand-made traces: an event, a switch, a wake-up.
use warmcore_trace::event::build::{event as e, switch, wakeup as wake};

fn run(h: &Header, evs: &[CpuEvent]) -> Stats {
    let mut a = Analyzer::new(h);
    for ev in evs {
        a.push(ev);
    }
    a.finish()
}

/// HDR percentiles are within 0.1 % (3 significant digits).
fn close(got: u64, want: u64) -> bool {
    (got as f64 - want as f64).abs() <= want as f64 * 1e-3
}

#[test]
fn busy_time_counts_from_the_first_event_for_a_cpu_found_running() {
    // CPU0 runs task 10 from 1000 to 5000: busy 4000.
    // CPU1's first switch at 3000 names task 20 as previous: it ran since the
    // trace's first event (1000), so busy 2000. A tick at 9000 ends the trace.
    let evs = [
        switch(0, 1000, 0, 10, RUNNABLE),
        switch(1, 3000, 20, 0, BLOCKED),
        switch(0, 5000, 10, 0, BLOCKED),
        e(1, 9000, 0, ids::TICK, 0, 0),
    ];
    let s = run(&header(2, None), &evs);
    assert_eq!(s.detail.busy_ns, vec![4000, 2000]);
    assert_eq!((s.events, s.cpus, s.duration_ns), (4, 2, 8000));
    assert_eq!(s.cpus_used, 2);
    // No frequency, no wakeup: null, not zero.
    assert_eq!(s.freq_residency, None);
    assert_eq!(s.inversions, None);
    assert_eq!(s.wakeup_latency_ns, None);
    assert_eq!(s.migrations, 0);
}

#[test]
fn cpus_used_counts_the_cpus_that_ran_a_task() {
    // Four CPUs: 0 and 2 run tasks, 1 only ticks, 3 says nothing.
    let evs = [
        switch(0, 0, 0, 1, RUNNABLE),
        switch(2, 100, 0, 2, RUNNABLE),
        e(1, 200, 0, ids::TICK, 0, 0),
        switch(2, 300, 2, 0, BLOCKED),
        switch(0, 400, 1, 0, DEAD),
    ];
    let s = run(&header(4, None), &evs);
    assert_eq!((s.cpus, s.cpus_used), (4, 2));
}

#[test]
fn work_conservation_latency_and_migrations() {
    // Two CPUs, no frequency data.
    let evs = [
        // t=0: CPU0 runs task 1; CPU1 idle.
        switch(0, 0, 0, 1, RUNNABLE),
        // t=100: task 2 woken onto busy CPU0 while CPU1 idles: violation starts.
        wake(0, 100, 2, 0, 1),
        // t=600: task 2 moves to CPU1's queue: it waits on the idle CPU itself,
        // which is no violation. Violation 100..600 = 500.
        e(1, 600, 2, ids::MIGRATE, 0, 1),
        // t=700: CPU1 runs task 2: latency 700-100 = 600.
        switch(1, 700, 0, 2, RUNNABLE),
        // t=1000: CPU0 idles (task 1 blocks).
        switch(0, 1000, 1, 0, BLOCKED),
        // t=1500: task 3 woken onto busy CPU1 while CPU0 idles: violation.
        wake(1, 1500, 3, 1, 2),
        // t=2000: CPU1 runs 3 (latency 500), 2 is preempted and waits there.
        switch(1, 2000, 2, 3, RUNNABLE),
        // t=2600: task 2 moves to idle CPU0's queue: violation 1500..2600 = 1100.
        e(0, 2600, 2, ids::MIGRATE, 1, 0),
        // t=2700: CPU0 runs 2 (preempted, not woken: no latency sample).
        switch(0, 2700, 0, 2, RUNNABLE),
        switch(0, 3000, 2, 0, DEAD),
        switch(1, 3000, 3, 0, BLOCKED),
    ];
    let s = run(&header(2, None), &evs);
    assert_eq!(s.work_conservation_violation_ns, 500 + 1100);
    assert_eq!(s.migrations, 2);
    // Samples 500 and 600: the median is the first, p99 and p99.9 the second.
    let p = s.wakeup_latency_ns.expect("two wakeups ran");
    assert_eq!((p.p50, p.p99, p.p999), (500, 600, 600));
    assert_eq!(s.detail.wakeups, 2);
    // CPU0: 0..1000 and 2700..3000; CPU1: 700..3000.
    assert_eq!(s.detail.busy_ns, vec![1300, 2300]);
    assert_eq!(s.duration_ns, 3000);
}

#[test]
fn underload_of_a_known_pattern_over_two_intervals() {
    // Four CPUs, intervals [0,4ms) and [4ms,8ms).
    let evs = [
        // Interval 0: one task hops over three CPUs, never two at once.
        switch(0, 0, 0, 1, RUNNABLE),
        switch(0, MS, 1, 0, BLOCKED),
        wake(0, 3 * MS / 2, 1, 1, 0),
        switch(1, 3 * MS / 2, 0, 1, RUNNABLE),
        switch(1, 5 * MS / 2, 1, 0, BLOCKED),
        wake(1, 3 * MS, 1, 2, 0),
        switch(2, 3 * MS, 0, 1, RUNNABLE),
        switch(2, 7 * MS / 2, 1, 0, BLOCKED),
        // => CPUs used 3, at most 1 runnable: underload 2.
        // Interval 1: tasks 1 and 2 run together on CPU0 and CPU1, then
        // task 1 runs alone on CPU3.
        wake(0, 9 * MS / 2, 1, 0, 0),
        switch(0, 9 * MS / 2, 0, 1, RUNNABLE),
        wake(1, 5 * MS, 2, 1, 0),
        switch(1, 5 * MS, 0, 2, RUNNABLE),
        switch(0, 6 * MS, 1, 0, BLOCKED),
        switch(1, 6 * MS, 2, 0, BLOCKED),
        wake(3, 7 * MS, 1, 3, 0),
        switch(3, 7 * MS, 0, 1, RUNNABLE),
        switch(3, 15 * MS / 2, 1, 0, BLOCKED),
        // => CPUs used 3 (0, 1, 3), at most 2 runnable: underload 1.
    ];
    let s = run(&header(4, None), &evs);
    assert_eq!(s.detail.intervals, 2);
    assert_eq!(s.detail.underload, 3);
    assert_eq!(s.duration_ns, 15 * MS / 2);
    // 3 over 7.5 ms = 400 per second.
    assert!((s.underload_per_s - 400.0).abs() < 1e-9, "{}", s.underload_per_s);
    assert_eq!(s.detail.overload, 0);
    assert_eq!(s.overload_per_s, 0.0);
    // Every wakeup here lands on an idle CPU that runs it at once.
    assert_eq!(s.work_conservation_violation_ns, 0);
    let p = s.wakeup_latency_ns.unwrap();
    assert_eq!((p.p50, p.p99, p.p999), (0, 0, 0));
}

#[test]
fn overload_and_idle_intervals_in_between() {
    // Two CPUs.
    let evs = [
        switch(0, 0, 0, 1, RUNNABLE),
        // Tasks 2 and 3 queue behind task 1 on CPU0: 3 tasks on one CPU,
        // overload 2 from 2 ms. CPU1 idles meanwhile: violation from 1 ms.
        wake(0, MS, 2, 0, 1),
        wake(0, 2 * MS, 3, 0, 1),
        // 3 ms: task 3 moves to CPU1 and runs: overload 1, violation ends
        // (1..3 ms = 2 ms). Latency of 3: 1 ms.
        e(1, 3 * MS, 3, ids::MIGRATE, 0, 1),
        switch(1, 3 * MS, 0, 3, RUNNABLE),
        // Interval 0: max overload 2.
        // Interval 1 opens at 4 ms with overload 1; task 1 is preempted by
        // task 2 (latency 4 ms): still overload 1.
        switch(0, 5 * MS, 1, 2, RUNNABLE),
        switch(0, 6 * MS, 2, 1, BLOCKED),
        switch(1, 6 * MS, 3, 0, BLOCKED),
        // From 6 ms task 1 runs alone on CPU0: overload 0. Interval 1: max 1.
        // Intervals 2 and 3 ([8,12), [12,16) ms) have no event: overload 0.
        // CPU1 used in interval 1 (until 6 ms) but not after.
        switch(0, 17 * MS, 1, 0, BLOCKED),
        // Interval 4 [16, 20) holds the last event: overload 0.
    ];
    let s = run(&header(2, None), &evs);
    assert_eq!(s.detail.intervals, 5);
    assert_eq!(s.detail.overload, 3);
    assert!((s.overload_per_s - 3.0 / 0.017).abs() < 1e-9);
    // Underload: interval 0: used 2, max runnable 3: 0. Interval 1: used 2,
    // max runnable 3: 0. Intervals 2-4: CPU0 alone, 1 task: 0.
    assert_eq!(s.detail.underload, 0);
    assert_eq!(s.work_conservation_violation_ns, 2 * MS);
    let p = s.wakeup_latency_ns.unwrap();
    // Samples 1 ms and 4 ms.
    assert!(close(p.p50, MS) && close(p.p99, 4 * MS), "{p:?}");
    assert_eq!(s.migrations, 1);
    // CPU0 0..17 ms; CPU1 3..6 ms.
    assert_eq!(s.detail.busy_ns, vec![17 * MS, 3 * MS]);
}

#[test]
fn underload_counts_idle_intervals_between_events_as_zero() {
    // One CPU hops between two CPUs in interval 0 (underload 1), then nothing
    // happens for 10 intervals but task 1 keeps running on CPU1.
    let evs = [
        switch(0, 0, 0, 1, RUNNABLE),
        switch(0, MS, 1, 0, BLOCKED),
        wake(0, MS, 1, 1, 0),
        switch(1, MS, 0, 1, RUNNABLE),
        e(1, 44 * MS, 1, ids::TICK, 0, 0),
    ];
    let s = run(&header(2, None), &evs);
    // Intervals 0..=11 (44 ms opens interval 11, which ends the trace).
    assert_eq!(s.detail.intervals, 12);
    assert_eq!(s.detail.underload, 1);
    assert_eq!(s.detail.busy_ns, vec![MS, 43 * MS]);
}

/// Two CPUs with frequencies: one inversion of known duration, one wakeup to
/// a slower CPU whose waker's CPU idles too late.
fn inversion_trace() -> Vec<CpuEvent> {
    vec![
        e(0, 0, 0, ids::FREQ_CHANGE, 3 * GHZ, 0),
        e(1, 0, 0, ids::FREQ_CHANGE, GHZ, 0),
        switch(0, 0, 0, 100, RUNNABLE),
        // Parent 100 (CPU0 at 3 GHz) forks 101 onto CPU1 (1 GHz).
        e(0, 1000, 101, ids::WAKEUP_NEW, 1, 100),
        // 101 starts on the slower CPU.
        switch(1, 1500, 0, 101, RUNNABLE),
        // The parent waits: CPU0 idles 1000 ns after the wakeup (< 1 ms).
        switch(0, 2000, 100, 0, BLOCKED),
        // CPU1 speeds up: 2 GHz (still below 3), then 3 GHz (not below).
        e(1, 10_000, 0, ids::FREQ_CHANGE, 2 * GHZ, 0),
        e(1, 20_000, 101, ids::TICK, 3 * GHZ, 0),
        switch(1, 30_000, 101, 0, DEAD),
        // => one inversion; below 3 GHz from 1500 to 20000: 18500 ns.
        //
        // Second wakeup: CPU1 (3 GHz, task 102) wakes 103 onto CPU0, now at
        // 1 GHz; 103 runs 10 us there, but CPU1 idles 1.05 ms after the
        // wakeup: no inversion.
        switch(1, 40_000, 0, 102, RUNNABLE),
        e(0, 41_000, 0, ids::FREQ_CHANGE, GHZ, 0),
        wake(1, 50_000, 103, 0, 102),
        switch(0, 60_000, 0, 103, RUNNABLE),
        switch(0, 70_000, 103, 0, BLOCKED),
        switch(1, 1_100_000, 102, 0, BLOCKED),
    ]
}

#[test]
fn one_frequency_inversion_of_known_duration() {
    let s = run(&header(2, Some((GHZ, 3 * GHZ))), &inversion_trace());
    let inv = s.inversions.expect("the trace has frequencies");
    assert_eq!((inv.count, inv.ns), (1, 18_500));
    // Latencies 500 (101) and 10000 (103).
    let p = s.wakeup_latency_ns.unwrap();
    assert!(p.p50 == 500 && close(p.p999, 10_000), "{p:?}");
    // No CPU idles while another has a waiting task: both wakeups target an
    // idle CPU.
    assert_eq!(s.work_conservation_violation_ns, 0);
}

#[test]
fn an_early_idle_waker_also_counts_and_local_or_faster_starts_do_not() {
    let h = header(3, Some((GHZ, 3 * GHZ)));
    let evs = [
        e(0, 0, 0, ids::FREQ_CHANGE, 3 * GHZ, 0),
        e(1, 0, 0, ids::FREQ_CHANGE, GHZ, 0),
        e(2, 0, 0, ids::FREQ_CHANGE, 3 * GHZ, 0),
        switch(0, 0, 0, 1, RUNNABLE),
        // Task 1 wakes 2 onto CPU1 and idles at once, before 2 runs.
        wake(0, 100, 2, 1, 1),
        switch(0, 200, 1, 0, BLOCKED),
        // 2 runs at 1 GHz from 300 to 800: inversion of 500 ns.
        switch(1, 300, 0, 2, RUNNABLE),
        // 2 wakes 3 onto CPU2, as fast as CPU1: not slower, no inversion.
        wake(1, 400, 3, 2, 2),
        switch(2, 450, 0, 3, RUNNABLE),
        switch(1, 800, 2, 0, BLOCKED),
        // 3 (CPU2, 3 GHz) wakes 4 onto CPU2 itself (local): no inversion,
        // 4 runs after 3 blocks.
        wake(2, 900, 4, 2, 3),
        switch(2, 1000, 3, 4, BLOCKED),
        switch(2, 2000, 4, 0, BLOCKED),
    ];
    let s = run(&h, &evs);
    assert_eq!(s.inversions, Some(stats::Inversions { count: 1, ns: 500 }));
}

#[test]
fn frequency_residency_per_band() {
    let s = run(&header(2, Some((GHZ, 3 * GHZ))), &inversion_trace());
    // Busy segments at known frequencies:
    //   CPU0: 0..2000 at 3 GHz (2000), 60000..70000 at 1 GHz (10000)
    //   CPU1: 1500..10000 at 1 GHz (8500), 10000..20000 at 2 GHz (10000),
    //         20000..30000 at 3 GHz (10000), 40000..1100000 at 3 GHz (1060000)
    // Total 1100500 ns.
    let total = 1_100_500.0;
    let bands = s.freq_residency.expect("frequencies known");
    // Bands of 100 MHz from the machine's 1000 MHz to its 3000 MHz: 21 bands.
    assert_eq!(bands.len(), 21);
    assert_eq!(bands[0], Band { lo_mhz: 1000, hi_mhz: 1100, fraction: 18_500.0 / total });
    assert_eq!(bands[10], Band { lo_mhz: 2000, hi_mhz: 2100, fraction: 10_000.0 / total });
    assert_eq!(bands[20], Band { lo_mhz: 3000, hi_mhz: 3100, fraction: 1_072_000.0 / total });
    let others: f64 = bands.iter().enumerate().filter(|(i, _)| ![0, 10, 20].contains(i)).map(|(_, b)| b.fraction).sum();
    assert_eq!(others, 0.0);
    assert!((bands.iter().map(|b| b.fraction).sum::<f64>() - 1.0).abs() < 1e-12);
    assert_eq!(s.detail.busy_known_freq_ns, 1_100_500);
}

#[test]
fn residency_bands_come_from_samples_without_a_machine_range() {
    // No machine range: bands span the observed 1.2 and 1.45 GHz.
    let evs = [
        e(0, 0, 0, ids::TICK, 1_200_000, 0),
        switch(0, 0, 0, 5, RUNNABLE),
        e(0, 300, 5, ids::TICK, 1_450_000, 0),
        switch(0, 1000, 5, 0, BLOCKED),
    ];
    let s = run(&header(1, None), &evs);
    let bands = s.freq_residency.unwrap();
    let got: Vec<(u32, u32)> = bands.iter().map(|b| (b.lo_mhz, b.hi_mhz)).collect();
    assert_eq!(got, vec![(1200, 1300), (1300, 1400), (1400, 1500)]);
    assert_eq!(bands[0].fraction, 0.3);
    assert_eq!(bands[2].fraction, 0.7);
    // Frequency data exists, so inversions is a number, here zero.
    assert_eq!(s.inversions, Some(stats::Inversions { count: 0, ns: 0 }));
}

#[test]
fn tick_without_frequency_is_not_frequency_data() {
    let evs = [switch(0, 0, 0, 5, RUNNABLE), e(0, 500, 5, ids::TICK, 0, 0), switch(0, 1000, 5, 0, BLOCKED)];
    let s = run(&header(1, Some((GHZ, 3 * GHZ))), &evs);
    assert_eq!(s.freq_residency, None);
    assert_eq!(s.inversions, None);
}

#[test]
fn json_has_exactly_the_issue_keys() {
    let s = run(&header(2, Some((GHZ, 3 * GHZ))), &inversion_trace());
    let v = serde_json::to_value(&s).unwrap();
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    keys.sort();
    let mut want = vec![
        "events",
        "cpus",
        "duration_ns",
        "lost_events",
        "underload_per_s",
        "overload_per_s",
        "migrations",
        "cpus_used",
        "wakeup_latency_ns",
        "work_conservation_violation_ns",
        "inversions",
        "freq_residency",
    ];
    want.sort();
    assert_eq!(keys, want);
    let obj_keys = |x: &serde_json::Value| {
        let mut k: Vec<String> = x.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(obj_keys(&v["wakeup_latency_ns"]), ["p50", "p99", "p999"]);
    assert_eq!(obj_keys(&v["inversions"]), ["count", "ns"]);
    for b in v["freq_residency"].as_array().unwrap() {
        assert_eq!(obj_keys(b), ["fraction", "hi_mhz", "lo_mhz"]);
    }
    assert_eq!(v["inversions"]["ns"], 18_500);

    // Without frequency data or wakeups: the same keys, those fields null.
    let s = run(&header(1, None), &[switch(0, 0, 0, 5, RUNNABLE), switch(0, 10, 5, 0, BLOCKED)]);
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v.as_object().unwrap().len(), 12);
    for k in ["wakeup_latency_ns", "inversions", "freq_residency"] {
        assert!(v[k].is_null(), "{k} should be null: {v}");
    }
    assert_eq!(v["work_conservation_violation_ns"], 0);
    assert_eq!(v["migrations"], 0);
    // JSON reads back to the same figures (per-CPU detail aside).
    let back: Stats = serde_json::from_value(v).unwrap();
    assert_eq!(back, Stats { detail: Default::default(), ..s });
}

#[test]
fn empty_input_gives_zeros_and_nulls() {
    let s = Analyzer::new(&header(4, None)).finish();
    assert_eq!((s.events, s.cpus, s.duration_ns), (0, 4, 0));
    assert_eq!((s.underload_per_s, s.overload_per_s), (0.0, 0.0));
    assert_eq!(s.wakeup_latency_ns, None);
    assert_eq!(s.detail.busy_ns, vec![0; 4]);
}

#[test]
fn memory_holds_runnable_tasks_not_every_pid_seen() {
    // 100000 short-lived tasks on 4 CPUs, each woken by task 1 on CPU0
    // (3 GHz) onto a slower CPU every 30 us, run 15 us, then blocked or dead.
    // Each is an inversion candidate until 1 ms has passed without CPU0
    // going idle: the analyzer keeps only those (about 33) and the runnable.
    let h = header(4, Some((GHZ, 3 * GHZ)));
    let mut a = Analyzer::new(&h);
    for c in 0..4 {
        a.push(&e(c, 0, 0, ids::FREQ_CHANGE, 3 * GHZ - c * GHZ / 2, 0));
    }
    a.push(&switch(0, 0, 0, 1, RUNNABLE));
    let mut t = 10;
    let mut most = 0;
    for pid in 10..100_010u32 {
        let cpu = 1 + pid % 3;
        a.push(&wake(0, t, pid, cpu, 1));
        a.push(&switch(cpu, t + 5_000, 0, pid, RUNNABLE));
        a.push(&switch(cpu, t + 20_000, pid, 0, if pid % 2 == 0 { BLOCKED } else { DEAD }));
        most = most.max(a.tracked_tasks());
        t += 30_000;
    }
    assert!((30..200).contains(&most), "{most} tasks tracked");
    let s = a.finish();
    // CPU0 never idles: no inversion, though every task ran on a slower CPU.
    assert_eq!(s.inversions, Some(stats::Inversions { count: 0, ns: 0 }));
    assert_eq!(s.detail.wakeups, 100_000);
}

#[test]
fn runqueue_series_follows_switches_wakeups_and_migrations() {
    use warmcore_trace::stats::runqueue_series;
    // CPU0 runs 10 from 1000. At 2000 it wakes 20 onto CPU1 (1 task there),
    // at 3000 it wakes 30 onto CPU1 (2). CPU1 switches to 20 at 4000 (still
    // 2: 20 runs, 30 waits); 30 migrates to CPU2 at 5000 (CPU1 1, CPU2 1);
    // 20 blocks at 6000 (CPU1 0); 10 blocks at 7000 (CPU0 0).
    let evs = [
        switch(0, 1000, 0, 10, RUNNABLE),
        wake(0, 2000, 20, 1, 10),
        wake(0, 3000, 30, 1, 10),
        switch(1, 4000, 0, 20, RUNNABLE),
        e(1, 5000, 30, ids::MIGRATE, 1, 2),
        switch(1, 6000, 20, 0, BLOCKED),
        switch(0, 7000, 10, 0, BLOCKED),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rq.wct");
    let mut w = Writer::create(&path, &header(3, None), WriterOptions::default()).unwrap();
    for ev in &evs {
        w.push(ev.cpu, ev.ev).unwrap();
    }
    w.finish().unwrap();
    let t = Trace::open(&path).unwrap();
    let got = runqueue_series(&t).unwrap();
    let want =
        vec![(0, 1000, 1), (1, 2000, 1), (1, 3000, 2), (1, 5000, 1), (2, 5000, 1), (1, 6000, 0), (0, 7000, 0)];
    assert_eq!(got, want);
}

/// A file without ranks gives events of one nanosecond by CPU number: at
/// 1000 ns task 7's switch-in on CPU 0 (and its exit) comes before the
/// wake-up its waker made on CPU 1; at 2000 ns task 5, preempted on CPU 1
/// and pulled to CPU 0, is switched in there before its switch-out on
/// CPU 1. Read naively, 7 would wait on CPU 0 and 5 on CPU 1 for ever:
/// overload and work-conservation violation from 3000 ns, when both CPUs
/// run a task and CPU 2 idles. The wake-up is the switch-in's own (latency
/// 0) and the switch-out is stale: neither makes a runnable task.
#[test]
fn ties_read_by_cpu_number_leave_no_phantom_task() {
    let h = header(3, None);
    let evs = [
        switch(1, 0, 0, 9, RUNNABLE),
        switch(0, 1000, 0, 7, RUNNABLE),
        switch(0, 1000, 7, 0, DEAD),
        wake(1, 1000, 7, 0, 9),
        wake(1, 1600, 5, 1, 9),
        switch(1, 1600, 9, 5, BLOCKED),
        switch(0, 2000, 0, 5, RUNNABLE),
        switch(1, 2000, 5, 0, RUNNABLE),
        wake(0, 3000, 9, 1, 5),
        switch(1, 3000, 0, 9, RUNNABLE),
        switch(0, 9000, 5, 0, BLOCKED),
        e(1, 12000, 9, ids::TICK, 0, 0),
    ];
    let s = run(&h, &evs);
    assert_eq!(s.detail.overload, 0, "no task waits behind another");
    assert_eq!(s.work_conservation_violation_ns, 0, "no task waits while a CPU idles");
    assert_eq!(s.detail.wakeups, 3);
    assert_eq!(s.wakeup_latency_ns.map(|p| p.p50), Some(0));
    assert_eq!(s.detail.busy_ns, vec![7000, 1600 + 400 + 9000, 0]);
}
