// SPDX-License-Identifier: GPL-2.0-only
//! Runs through the public entry point: every workload, determinism, bad input.

use warmcore_sim::{run, RunConfig};

mod common;
use common::SMALL_WORKLOADS;

fn cfg(m: &str, w: &str, p: &str, g: &str) -> RunConfig {
    RunConfig::new(m, w, p, g, 7)
}

#[test]
fn every_workload_completes_under_every_governor() {
    for w in SMALL_WORKLOADS {
        for g in ["powersave", "schedutil", "performance"] {
            let r = run(&cfg("default", w, "cfs", g)).unwrap_or_else(|e| panic!("{w} {g}: {e}"));
            assert!(r.partial.is_none(), "{w}");
            assert!(r.makespan_ns > 0 && r.energy_j > 0.0 && r.sim_events > 0, "{w}");
        }
    }
    let r = run(&cfg("default", "schbench:runtime_ms=200,workers=4", "cfs", "powersave")).unwrap();
    assert_eq!(r.metric.name, "wakeup_latency_us");
    assert!(r.metric.percentiles.is_some());
}

#[test]
fn same_seed_same_trace_and_json() {
    let dir = std::env::temp_dir().join(format!("warmcore-sim-det-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut reports = Vec::new();
    for i in 0..2 {
        let mut c = cfg("xeon-gold-5218-2s", "hackbench:groups=2,loops=10", "cfs", "schedutil");
        c.trace = Some(dir.join(format!("t{i}.wct")));
        let mut r = serde_json::to_value(run(&c).unwrap()).unwrap();
        r["wall_ns"] = 0.into();
        reports.push(r);
    }
    assert_eq!(reports[0], reports[1]);
    let a = std::fs::read(dir.join("t0.wct")).unwrap();
    let b = std::fs::read(dir.join("t1.wct")).unwrap();
    assert!(a == b, "traces differ");
    let t = warmcore_trace::Trace::open(dir.join("t0.wct")).unwrap();
    assert_eq!(t.header.machine.nr_cpus(), 64);
    // The report's analysis agrees with the analysis of the written trace.
    let s = serde_json::to_value(warmcore_trace::stats::analyze(&t).unwrap()).unwrap();
    for k in ["underload_per_s", "overload_per_s", "migrations", "wakeup_latency_ns", "inversions", "freq_residency"] {
        assert_eq!(s[k], reports[0][k], "{k}");
    }
    assert_eq!(s["events"], reports[0]["sim_events"]);
    let mut c = cfg("xeon-gold-5218-2s", "hackbench:groups=2,loops=10", "cfs", "schedutil");
    c.seed = 8;
    let other = run(&c).unwrap();
    assert_ne!(serde_json::to_value(&other).unwrap()["makespan_ns"], reports[0]["makespan_ns"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_input_names_the_culprit_and_the_choices() {
    let e = |c: RunConfig| run(&c).unwrap_err().to_string();
    let m = e(cfg("vax", "configure", "cfs", "powersave"));
    assert!(m.contains("unknown machine 'vax'") && m.contains("xeon-gold-5218-2s"), "{m}");
    let m = e(cfg("default", "bogus", "cfs", "powersave"));
    assert!(m.contains("unknown workload 'bogus'") && m.contains("hackbench"), "{m}");
    let m = e(cfg("default", "configure", "bfs", "powersave"));
    assert!(m.contains("unknown policy 'bfs'") && m.contains("cfs"), "{m}");
    let m = e(cfg("default", "configure", "cfs", "ondemand"));
    assert!(m.contains("unknown governor 'ondemand'") && m.contains("schedutil"), "{m}");
    let m = e(cfg("default", "hackbench:grups=3", "cfs", "powersave"));
    assert!(m.contains("unknown parameter 'grups'") && m.contains("groups"), "{m}");
    let m = e(cfg("default", "hackbench:groups=x", "cfs", "powersave"));
    assert!(m.contains("groups"), "{m}");
    assert!(!m.contains('\n'));
}

#[test]
fn fork_wait_chain_shows_inversions_and_underload() {
    // Fewer Cores, More Hertz, section 2, and Nest, section 5.2: a fork/wait
    // chain on an idle E7 under powersave inverts frequencies and underloads.
    let r = run(&cfg("xeon-e7-8870v4", "configure:checks=60", "cfs", "powersave")).unwrap();
    let inv = r.inversions.expect("frequencies are known");
    assert!(inv["count"].as_u64().unwrap() > 20, "{inv}");
    assert!(r.underload_per_s.unwrap() > 50.0, "{:?}", r.underload_per_s);
    // Most busy time at low frequency.
    let bands = r.freq_residency.unwrap();
    let low: f64 = bands
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["hi_mhz"].as_u64().unwrap() <= 2000)
        .map(|b| b["fraction"].as_f64().unwrap())
        .sum();
    assert!(low > 0.5, "{bands}");
}

#[test]
fn replay_of_a_simulated_trace_reproduces_its_tasks() {
    let dir = std::env::temp_dir().join(format!("warmcore-sim-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let orig = dir.join("orig.wct");
    let mut c = cfg("default", "configure:checks=20", "cfs", "performance");
    c.trace = Some(orig.clone());
    let a = run(&c).unwrap();
    let mut c = cfg("default", &format!("replay:trace={}", orig.display()), "cfs", "performance");
    let replayed = dir.join("replayed.wct");
    c.trace = Some(replayed.clone());
    let b = run(&c).unwrap();
    assert!(b.partial.is_none());
    let ratio = b.makespan_ns as f64 / a.makespan_ns as f64;
    assert!((0.8..1.5).contains(&ratio), "replay took {ratio} x the original");
    let n = |p: &std::path::Path| warmcore_trace::Trace::open(p).unwrap().processes().len();
    // The replay adds one starter per task that existed before the trace.
    assert!(n(&replayed) >= n(&orig), "{} {}", n(&replayed), n(&orig));
    let m = run(&cfg("default", "replay:trace=/nonexistent.wct", "cfs", "powersave")).unwrap_err().to_string();
    assert!(m.contains("/nonexistent.wct"), "{m}");
    std::fs::remove_dir_all(&dir).ok();
}
