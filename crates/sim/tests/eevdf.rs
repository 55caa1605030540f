// SPDX-License-Identifier: GPL-2.0-only
//! `eevdf`, the fair class of today (docs/model.md, The fair class of
//! today): each rule, against the 5.9 model `cfs` or against the same
//! policy with the kernel feature turned off.

use warmcore_sim::cfs::{base_slice, imb_numa_nr, lag_at_dequeue, place_vruntime, sis_util_budget};
use warmcore_sim::engine::Outcome;
use warmcore_sim::make_policy;
use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::{Governor, Machine};
use warmcore_trace::{ids, Event};

mod common;
use common::{simulate, stat};

const MS: u64 = 1_000_000;
const TICK: u64 = 4 * MS;

/// A run under the performance governor.
fn run_perf(m: &Machine, policy: &str, w: Workload) -> (Outcome, Vec<(u32, Event)>) {
    simulate(m, Governor::Performance, policy, w)
}

fn median(mut v: Vec<u64>) -> u64 {
    assert!(!v.is_empty());
    v.sort_unstable();
    v[v.len() / 2]
}

#[test]
fn the_base_slice_is_0_75_ms_scaled_by_the_log_of_the_cpu_count() {
    // 0.75 ms x (1 + log2(min(CPUs, 8))).
    assert_eq!(base_slice(1), 750_000);
    assert_eq!(base_slice(2), 1_500_000);
    assert_eq!(base_slice(4), 2_250_000);
    assert_eq!(base_slice(7), 2_250_000);
    assert_eq!(base_slice(8), 3_000_000);
    assert_eq!(base_slice(160), 3_000_000);
}

/// Two CPU-bound tasks pinned to CPU 0.
fn two_hogs(ms: f64) -> Workload {
    let mut w = Workload::new("hogs");
    let p = w.add("hog", vec![Step::Compute(Amount::fixed(ms * 3e6)), Step::Exit]);
    w.initial.push((p, "a".into(), Some(0)));
    w.initial.push((p, "b".into(), Some(0)));
    w
}

/// Time between consecutive switches on `cpu` while no task has exited,
/// the first stint left out.
fn stints(evs: &[(u32, Event)], cpu: u32) -> Vec<u64> {
    let end = evs.iter().find(|(_, e)| e.id == ids::EXIT).map_or(u64::MAX, |(_, e)| e.ts);
    let ts: Vec<u64> =
        evs.iter().filter(|(c, e)| *c == cpu && e.id == ids::CTX_SWITCH && e.ts < end).map(|(_, e)| e.ts).collect();
    ts.windows(2).map(|w| w[1] - w[0]).skip(1).collect()
}

#[test]
fn a_task_runs_one_base_slice_rounded_up_to_the_tick_where_cfs_ran_its_share_of_the_latency() {
    // 3 ms slices on a 16-CPU machine: the deadline passes before each
    // 4 ms tick, so the two tasks alternate at every tick. 5.9 gives each
    // half of the 24 ms latency.
    let m = common::quiet("default");
    let (_, evs) = run_perf(&m, "eevdf:balance=off", two_hogs(60.0));
    let s = stints(&evs, 0);
    assert!(s.len() >= 10, "{s:?}");
    assert!(s.iter().all(|&d| d.abs_diff(TICK) < MS / 10), "eevdf: {s:?}");
    let (_, evs) = run_perf(&m, "cfs:balance=off", two_hogs(60.0));
    let s = stints(&evs, 0);
    assert!(median(s.clone()) >= 12 * MS, "cfs: {s:?}");
}

#[test]
fn lag_is_clamped_at_dequeue_and_inflated_at_placement() {
    let v = 1 << 40;
    // V - vruntime, within max(2 slices, a tick).
    const W0: u64 = 1024;
    assert_eq!(lag_at_dequeue(v, v - MS, 3 * MS, W0), MS as i64);
    assert_eq!(lag_at_dequeue(v, v - 10 * MS, 3 * MS, W0), 6 * MS as i64);
    assert_eq!(lag_at_dequeue(v, v + 10 * MS, 3 * MS, W0), -6 * (MS as i64));
    assert_eq!(lag_at_dequeue(v, v - 10 * MS, MS, W0), 4 * MS as i64);
    // The limit is in the task's virtual time: twice as far for half the
    // weight (nice 0's 1024 against 512).
    assert_eq!(lag_at_dequeue(v, v - 20 * MS, 3 * MS, 512), 12 * MS as i64);
    // Joining one task, the lag doubles so that V moves half of it.
    assert_eq!(place_vruntime(v, MS as i64, W0, W0), v - 2 * MS);
    assert_eq!(place_vruntime(v, -(MS as i64), 3 * W0, W0), v + 4 * MS / 3);
    // On an empty queue the task starts at V.
    assert_eq!(place_vruntime(v, MS as i64, 0, W0), v);
    // After joining, V' = (W x V + w x v) / (W + w) and V' - v is the lag,
    // for equal weights and for a light task joining a heavy queue.
    for (load, w) in [(3 * W0, W0), (88761 + 1024, 15)] {
        let lag = 900_000i64;
        let x = place_vruntime(v, lag, load, w);
        let v2 = ((load as u128 * v as u128 + w as u128 * x as u128) / (load + w) as u128) as u64;
        assert!((v2 as i64 - x as i64 - lag).abs() <= 1, "{load} {w}: {}", v2 as i64 - x as i64);
    }
}

/// On the two CPUs of the Core 2 Duo: a CPU hog on CPU 0, and a task
/// there that a waker on CPU 1 wakes with a futex after each 6 ms of its
/// work, to run 30 us. A second hog keeps CPU 1 the more loaded, so that
/// wake_affine sends the task back to CPU 0 each time. A wake-up waits
/// at most a tick, so none comes before the task waits again.
fn hog_and_woken() -> Workload {
    let mut w = Workload::new("woken");
    let f = w.futex();
    let hog = w.add("hog", vec![Step::Compute(Amount::fixed(400.0 * 3e6)), Step::Exit]);
    let rbody = w.add("rbody", vec![Step::FutexWait(f), Step::Compute(Amount::fixed(0.03 * 3e6))]);
    let reader = w.add("reader", vec![Step::Repeat(rbody, 30), Step::Exit]);
    let wbody = w.add("wbody", vec![Step::Compute(Amount::fixed(6.0 * 3e6)), Step::FutexWake(f, 1)]);
    let waker = w.add("waker", vec![Step::Repeat(wbody, 30), Step::Exit]);
    w.initial.push((hog, "hog0".into(), Some(0)));
    w.initial.push((reader, "reader".into(), Some(0)));
    w.initial.push((waker, "waker".into(), Some(1)));
    w.initial.push((hog, "hog1".into(), Some(1)));
    w
}

/// For each wake-up placed on CPU 0, the time until the woken task runs
/// there.
fn wake_latencies(evs: &[(u32, Event)]) -> Vec<u64> {
    let mut out = Vec::new();
    let mut pending: Option<(u32, u64)> = None;
    for (cpu, e) in evs {
        if e.id == ids::WAKEUP && e.a() == 0 {
            pending = Some((e.pid, e.ts));
        } else if *cpu == 0 && e.id == ids::CTX_SWITCH {
            if let Some((pid, at)) = pending {
                if e.a() == pid {
                    out.push(e.ts - at);
                    pending = None;
                }
            }
        }
    }
    out
}

#[test]
fn a_task_that_slept_keeps_its_lag_and_preempts_at_once_place_lag() {
    // The task's first wait behind the hog leaves it owed service when it
    // blocks after 30 us; placed with that lag before V, it makes the hog
    // ineligible and preempts it at each wake-up. Placed at V (lag lost),
    // it waits for the hog's slice to end at a tick.
    let m = common::quiet("core2duo-e8400");
    let (_, evs) = run_perf(&m, "eevdf:balance=off,preempt=full", hog_and_woken());
    let with = wake_latencies(&evs);
    let (_, evs) = run_perf(&m, "eevdf:balance=off,preempt=full,place_lag=off", hog_and_woken());
    let without = wake_latencies(&evs);
    assert!(with.len() >= 25 && without.len() >= 25, "{with:?} {without:?}");
    assert!(median(with.clone()) < 50_000, "with lag: {with:?}");
    assert!(median(without.clone()) > 500_000, "without lag: {without:?}");
}

#[test]
fn a_remote_wake_up_preempts_at_the_next_tick_under_lazy_preemption() {
    // Debian's 7.x kernels run the lazy preemption model: the reschedule
    // the waker's wake-up asks of CPU 0 waits for its tick; under full
    // preemption it is immediate.
    let m = common::quiet("core2duo-e8400");
    let (lazy_out, evs) = run_perf(&m, "eevdf:balance=off", hog_and_woken());
    let lazy = wake_latencies(&evs);
    let (_, evs) = run_perf(&m, "eevdf:balance=off,preempt=full", hog_and_woken());
    let full = wake_latencies(&evs);
    assert!(stat(&lazy_out, "lazy_preemptions") > 0);
    assert!(median(full.clone()) < 50_000, "full: {full:?}");
    assert!(median(lazy.clone()) > 500_000, "lazy: {lazy:?}");
    assert!(lazy.iter().all(|&d| d <= TICK + 100_000), "lazy: {lazy:?}");
}

#[test]
fn sis_util_scans_fewer_cpus_as_the_llc_fills_and_none_from_85_percent() {
    // update_idle_cpu_scan's curve, for 16 CPUs.
    assert_eq!(sis_util_budget(16, 0), 16);
    // Half busy: 16 x (1 - (0.5 x 1.17)^2) = 10.5.
    assert_eq!(sis_util_budget(16, 8 * 1024), 10);
    assert_eq!(sis_util_budget(16, 14 * 1024), 0);
    assert_eq!(sis_util_budget(16, 16 * 1024), 0);
    assert!((1..16).all(|i| sis_util_budget(16, i * 1024) <= sis_util_budget(16, (i - 1) * 1024)));
}

/// 16 CPU hogs on the 16 CPUs of the default machine, and a pair of tasks
/// that wake each other through pipes meanwhile.
fn full_llc_with_ping_pong() -> Workload {
    let mut w = Workload::new("full");
    let (a, b) = (w.pipe(655), w.pipe(655));
    let hog = w.add("hog", vec![Step::Compute(Amount::fixed(400.0 * 3e6)), Step::Exit]);
    let pbody = w.add("ping", vec![Step::PipeWrite(a), Step::PipeRead(b)]);
    let ping = w.add("pinger", vec![Step::RepeatFor(pbody, 350 * MS), Step::PipeWrite(a), Step::Exit]);
    let qbody = w.add("pong", vec![Step::PipeRead(a), Step::Compute(Amount::fixed(30e3)), Step::PipeWrite(b)]);
    let pong = w.add("ponger", vec![Step::RepeatFor(qbody, 350 * MS), Step::Exit]);
    for i in 0..16 {
        w.initial.push((hog, format!("hog{i}"), None));
    }
    w.initial.push((ping, "ping".into(), None));
    w.initial.push((pong, "pong".into(), None));
    w
}

#[test]
fn with_the_llc_busy_select_idle_cpu_stops_scanning_sis_util() {
    let m = common::quiet("default");
    let (on, _) = run_perf(&m, "eevdf", full_llc_with_ping_pong());
    let (off, _) = run_perf(&m, "eevdf:sis_util=off", full_llc_with_ping_pong());
    assert!(stat(&on, "sis_util_updates") > 0);
    assert!(stat(&on, "sis_util_skips") > 0, "{}", on.policy_stats);
    assert_eq!(stat(&off, "sis_util_skips"), 0);
    assert!(on.placement_scans < off.placement_scans, "{} vs {}", on.placement_scans, off.placement_scans);
}

#[test]
fn imb_numa_nr_is_the_number_of_llcs_or_an_eighth_of_a_single_llc() {
    assert_eq!(imb_numa_nr(&Machine::load("xeon-e7-8870v4").unwrap()), 4);
    assert_eq!(imb_numa_nr(&Machine::load("xeon-gold-6130-2s").unwrap()), 2);
    assert_eq!(imb_numa_nr(&Machine::load("default").unwrap()), 2);
}

/// A parent on CPU 0 forks three 5 ms children and goes on computing.
fn three_forks() -> Workload {
    let mut w = Workload::new("forks");
    let child = w.add("child", vec![Step::Compute(Amount::fixed(5.0 * 3e6)), Step::Exit]);
    let main = w.add(
        "main",
        vec![
            Step::Fork(child),
            Step::Fork(child),
            Step::Fork(child),
            Step::Compute(Amount::fixed(20.0 * 3e6)),
            Step::WaitAll,
            Step::Exit,
        ],
    );
    w.initial.push((main, "main".into(), Some(0)));
    w
}

/// The sockets the forked children were placed on (WAKEUP_NEW's target;
/// the first is the main task's start).
fn child_sockets(m: &Machine, evs: &[(u32, Event)]) -> Vec<u32> {
    evs.iter().filter(|(_, e)| e.id == ids::WAKEUP_NEW).skip(1).map(|(_, e)| m.cpu_socket[e.a() as usize]).collect()
}

#[test]
fn a_fork_leaves_the_node_once_it_would_run_more_than_imb_numa_nr_tasks() {
    // 5.9 keeps forks on the local node while it has an idle CPU; today
    // only while the node would run at most imb_numa_nr (2 on two sockets
    // of one LLC each) tasks.
    let m = common::quiet("xeon-gold-6130-2s");
    let (_, evs) = run_perf(&m, "cfs:balance=off", three_forks());
    assert_eq!(child_sockets(&m, &evs), vec![0, 0, 0]);
    let (_, evs) = run_perf(&m, "eevdf:balance=off", three_forks());
    assert_eq!(child_sockets(&m, &evs), vec![0, 1, 1]);
}

#[test]
fn eevdf_parameters_are_checked() {
    let m = Machine::load("default").unwrap();
    for bad in ["eevdf:place_lag=maybe", "eevdf:preempt=none", "eevdf:bogus=1", "eevdf:balance=x"] {
        let e = make_policy(bad, &m).err().unwrap_or_else(|| panic!("{bad} accepted")).to_string();
        assert!(e.contains("eevdf") || e.contains("balance"), "{bad}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
    assert!(make_policy("eevdf:place_lag=off,run_to_parity=off,sis_util=off,preempt=full,balance=off", &m).is_ok());
}

/// Time between a busy CPU's periodic balances at the MC level.
fn mc_balance_intervals(evs: &[(u32, Event)], cpu: u32) -> Vec<u64> {
    let ts: Vec<u64> = evs
        .iter()
        .filter(|(c, e)| *c == cpu && e.id == ids::PERIODIC_BALANCE_BEGIN && e.a() == 1)
        .map(|(_, e)| e.ts)
        .collect();
    ts.windows(2).map(|w| w[1] - w[0]).collect()
}

#[test]
fn a_busy_cpu_balances_at_16_times_the_span_where_5_9_waited_32_times() {
    // One CPU-bound task on CPU 0 of the default machine, whose MC domain
    // spans 16 CPUs: busy_factor 16 (since 5.10) against 5.9's 32.
    let m = common::quiet("default");
    let mut w = Workload::new("one");
    let p = w.add("hog", vec![Step::Compute(Amount::fixed(1300.0 * 3e6)), Step::Exit]);
    w.initial.push((p, "hog".into(), Some(0)));
    let (_, evs) = run_perf(&m, "eevdf", w.clone());
    let today = mc_balance_intervals(&evs, 0);
    let (_, evs) = run_perf(&m, "cfs", w);
    let then = mc_balance_intervals(&evs, 0);
    assert!(today.len() >= 3 && !then.is_empty(), "{today:?} {then:?}");
    // The interval, rounded up to the 4 ms tick.
    assert!(today.iter().all(|&d| (256 * MS..256 * MS + TICK).contains(&d)), "eevdf: {today:?}");
    assert!(then.iter().all(|&d| (512 * MS..512 * MS + TICK).contains(&d)), "cfs: {then:?}");
}

/// Two tasks share CPU 16 (socket 1) for about 200 ms and exit; a task
/// asleep on CPU 16 since the start is woken (futex, not synchronous) by a
/// task that has run on CPU 0 (socket 0) all along, shortly after.
fn wake_after_busy_prev() -> Workload {
    let mut w = Workload::new("busy-prev");
    let f = w.futex();
    let burst = w.add("burst", vec![Step::Compute(Amount::fixed(100.0 * 3e6)), Step::Exit]);
    let sleeper = w.add("sleeper", vec![Step::FutexWait(f), Step::Compute(Amount::fixed(1.0 * 3e6)), Step::Exit]);
    let waker = w.add(
        "waker",
        vec![Step::Compute(Amount::fixed(210.0 * 3e6)), Step::FutexWake(f, 1), Step::Compute(Amount::fixed(3e6)), Step::Exit],
    );
    w.initial.push((sleeper, "sleeper".into(), Some(16)));
    w.initial.push((burst, "burst1".into(), Some(16)));
    w.initial.push((burst, "burst2".into(), Some(16)));
    w.initial.push((waker, "waker".into(), Some(0)));
    w
}

#[test]
fn an_idle_previous_cpu_wins_wake_affine_before_the_loads_are_weighed() {
    // The previous CPU is idle but its decaying load (two tasks until just
    // now) outweighs the waker's: 5.9's weight rule sends the task to the
    // waker's socket; since 5.11 an idle previous CPU wins first.
    let m = common::quiet("xeon-gold-6130-2s");
    let target = |policy: &str| {
        let (_, evs) = run_perf(&m, policy, wake_after_busy_prev());
        let wakes: Vec<u32> = evs.iter().filter(|(_, e)| e.id == ids::WAKEUP).map(|(_, e)| e.a()).collect();
        assert_eq!(wakes.len(), 1, "{policy}: {wakes:?}");
        wakes[0]
    };
    assert_eq!(m.cpu_socket[target("cfs:balance=off") as usize], 0);
    assert_eq!(target("eevdf:balance=off"), 16);
}
