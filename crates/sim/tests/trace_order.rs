// SPDX-License-Identifier: GPL-2.0-only
//! A simulated trace keeps the order in which events of one nanosecond
//! happened, and the analysis of its events agrees with the engine's own
//! run-queue sizes (RQ_SIZE): no task is counted runnable that the engine
//! does not have on a queue.

use std::collections::BTreeMap;

use warmcore_sim::{run, RunConfig};
use warmcore_trace::stats::{analyze, INTERVAL_NS};
use warmcore_trace::{ids, Trace, Window};

/// Overload (sum over the 4 ms intervals of each interval's largest
/// overload) and work-conservation violation (ns) as the engine's RQ_SIZE
/// events imply them, with the analysis's definitions (stats.rs): the
/// state at the end of each instant; a CPU's overload is its queue beyond
/// one task; a violation is a CPU without a running task while a CPU
/// running one has more on its queue. Which task runs comes from
/// CTX_SWITCH, how many are on a queue only from RQ_SIZE.
fn from_rq_size(t: &Trace) -> (u64, u64) {
    let n = t.nr_cpus() as usize;
    let mut nr = vec![0u32; n];
    let mut running = vec![false; n];
    let mut by_ts: BTreeMap<u64, Vec<(usize, u32, u32, u32)>> = BTreeMap::new();
    for e in t.events(None, Window::ALL) {
        let e = e.unwrap();
        by_ts.entry(e.ev.ts).or_default().push((e.cpu as usize, e.ev.id, e.ev.a(), e.ev.b()));
    }
    let first = *by_ts.keys().next().expect("the trace has events");
    let (mut overload, mut wc) = (0u64, 0u64);
    let mut iv_end = first + INTERVAL_NS;
    let mut iv_max = 0u64;
    let mut prev: Option<(u64, u64, bool)> = None; // (ts, overload, violation) at the end of an instant
    for (&ts, evs) in &by_ts {
        if let Some((pts, over, viol)) = prev {
            if viol {
                wc += ts - pts;
            }
            while ts >= iv_end {
                overload += iv_max;
                iv_max = over;
                iv_end += INTERVAL_NS;
            }
        }
        for &(cpu, id, a, _) in evs {
            match id {
                ids::RQ_SIZE => nr[cpu] = a,
                ids::CTX_SWITCH => running[cpu] = a != 0,
                _ => {}
            }
        }
        let over: u64 = nr.iter().map(|&x| x.saturating_sub(1) as u64).sum();
        let idle = running.iter().any(|r| !r);
        let stacked = (0..n).any(|c| running[c] && nr[c] >= 2);
        iv_max = iv_max.max(over);
        prev = Some((ts, over, idle && stacked));
    }
    (overload + iv_max, wc)
}

#[test]
fn analysis_agrees_with_the_engines_run_queues_for_every_policy() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let cases = [
        ("xeon-gold-5218-2s", "configure", "schedutil"),
        ("xeon-gold-5218-2s", "hackbench:groups=2,loops=20", "schedutil"),
        ("xeon-e7-8870v4", "mkl-dnn", "powersave"),
    ];
    let mut checked = 0;
    let (mut some_overload, mut some_violation) = (false, false);
    for policy in ["cfs", "slocal", "smove", "nest", "scx:default", "scx:nest"] {
        for (m, w, g) in cases {
            let mut cfg = RunConfig::new(m, w, policy, g, 3);
            let path = dir.join(format!("{checked}.wct"));
            cfg.trace = Some(path.clone());
            let r = run(&cfg).unwrap_or_else(|e| panic!("{policy} {w}: {e}"));
            assert!(r.partial.is_none(), "{policy} {w}");
            let t = Trace::open(&path).unwrap();
            let s = analyze(&t).unwrap();
            let (over, wc) = from_rq_size(&t);
            let label = format!("{policy} {m} {w}");
            some_overload |= over > 0;
            some_violation |= wc > 0;
            assert_eq!(s.detail.overload, over, "{label}: overload from the events against RQ_SIZE");
            assert_eq!(s.work_conservation_violation_ns, wc, "{label}: work conservation against RQ_SIZE");
            // The report is the analysis of the same events in the same order.
            assert_eq!(r.overload_per_s, Some(s.overload_per_s), "{label}");
            assert_eq!(r.underload_per_s, Some(s.underload_per_s), "{label}");
            assert_eq!(r.work_conservation_violation_ns, s.work_conservation_violation_ns, "{label}");
            checked += 1;
        }
    }
    assert_eq!(checked, 18);
    assert!(some_overload && some_violation, "the runs compare non-zero figures too");
}

/// A WAKEUP made on the waker's CPU and the CTX_SWITCH that runs the woken
/// task on another CPU at the same nanosecond come back from the file in
/// the order the engine made them, whichever CPU number is lower.
#[test]
fn ties_come_back_in_the_order_they_happened() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.wct");
    let mut cfg = RunConfig::new("xeon-gold-5218-2s", "configure", "nest", "schedutil", 1);
    cfg.trace = Some(path.clone());
    run(&cfg).unwrap();
    let t = Trace::open(&path).unwrap();
    let evs: Vec<_> = t.events(None, Window::ALL).map(|e| e.unwrap()).collect();
    let mut woken_at: BTreeMap<u32, u64> = BTreeMap::new();
    let (mut same_instant, mut lower_cpu_first) = (0, 0);
    for (i, e) in evs.iter().enumerate() {
        match e.ev.id {
            ids::WAKEUP | ids::WAKEUP_NEW => {
                woken_at.insert(e.ev.pid, e.ev.ts);
            }
            ids::CTX_SWITCH if e.ev.a() != 0 => {
                let next = e.ev.a();
                // A switch-in at the time of a wake-up of that task that the
                // file gives later would be a wake-up read after its run.
                let late = evs[i + 1..]
                    .iter()
                    .take_while(|x| x.ev.ts == e.ev.ts)
                    .find(|x| x.ev.id == ids::WAKEUP && x.ev.pid == next);
                assert!(late.is_none(), "switch-in of {next} at {} ns before its wake-up", e.ev.ts);
                if woken_at.get(&next) == Some(&e.ev.ts) {
                    same_instant += 1;
                    let w = evs[..i].iter().rev().find(|x| x.ev.id == ids::WAKEUP && x.ev.pid == next);
                    if w.is_some_and(|w| w.cpu > e.cpu) {
                        lower_cpu_first += 1;
                    }
                }
            }
            _ => {}
        }
    }
    let _ = std::fs::remove_file(&path);
    // The case the order matters for occurs in this run.
    assert!(lower_cpu_first > 0, "{same_instant} same-instant runs, none on a lower CPU than the waker's");
}

/// The analysis runs on a thread of its own and takes the engine's events
/// in batches: over a run of many batches, more than the engine may send
/// ahead of it, every figure of the report is still the analysis of the
/// run's own trace, event for event.
#[test]
fn the_report_is_the_analysis_of_its_trace_over_many_batches() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("storm.wct");
    let storm = "periodic:tasks=1000,run_us=100,sleep_us=100,duration_ms=40";
    let mut cfg = RunConfig::new("xeon-e7-8870v4", storm, "cfs", "schedutil", 1);
    cfg.trace = Some(path.clone());
    let r = serde_json::to_value(run(&cfg).unwrap()).unwrap();
    let s = serde_json::to_value(analyze(&Trace::open(&path).unwrap()).unwrap()).unwrap();
    assert!(s["events"].as_u64().unwrap() > 200_000, "{} events: too few batches to show it", s["events"]);
    for key in [
        "migrations",
        "cpus_used",
        "underload_per_s",
        "overload_per_s",
        "wakeup_latency_ns",
        "inversions",
        "freq_residency",
        "work_conservation_violation_ns",
    ] {
        assert!(!s[key].is_null(), "{key}");
        assert_eq!(r[key], s[key], "{key}");
    }
}
