// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore trace stats` on generated files.
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Command;

use warmcore_trace::event::prev_state::{BLOCKED, RUNNABLE};
use warmcore_trace::stats::analyze;
use warmcore_trace::*;

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("trace_stats");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A consistent random schedule: tasks wake onto random CPUs, run, block,
/// get preempted and migrate; with frequencies if `freq`.
fn generate(path: &Path, ncpu: usize, ntasks: u32, events: usize, freq: bool) {
    let mut machine = Machine::flat("gen", ncpu as u32);
    if freq {
        machine.freq_min_khz = 800_000;
        machine.freq_base_khz = 2_000_000;
        machine.freq_max_khz = 3_500_000;
    }
    let h = Header::other(machine, "generated");
    let mut w = Writer::create(path, &h, WriterOptions { zstd_level: Some(1), chunk_events: 256 }).unwrap();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut curr = vec![0u32; ncpu];
    let mut queue = vec![VecDeque::<u32>::new(); ncpu];
    let mut sleeping: Vec<u32> = (100..100 + ntasks).collect();
    let mut t = 0u64;
    let mut n = 0;
    while n < events {
        t += 1 + rand(30_000);
        let c = rand(ncpu as u64) as usize;
        let mut push = |pid: u32, id: u32, a: u32, b: u32| {
            w.push(c as u32, Event::new(t, pid, id, a, b)).unwrap();
            n += 1;
        };
        let r = rand(100);
        if curr[c] == 0 {
            if let Some(next) = queue[c].pop_front() {
                push(0, ids::CTX_SWITCH, next, RUNNABLE);
                curr[c] = next;
            } else if r < 30 && freq {
                push(0, ids::FREQ_CHANGE, 800_000 + 100_000 * rand(28) as u32, 0);
            } else if !sleeping.is_empty() {
                let pid = sleeping.swap_remove(rand(sleeping.len() as u64) as usize);
                let target = rand(ncpu as u64) as usize;
                push(pid, ids::WAKEUP_NEW, target as u32, 0);
                queue[target].push_back(pid);
            }
        } else if r < 25 {
            let f = if freq { 800_000 + 100_000 * rand(28) as u32 } else { 0 };
            push(curr[c], ids::TICK, f, 0);
        } else if r < 50 && !sleeping.is_empty() {
            let pid = sleeping.swap_remove(rand(sleeping.len() as u64) as usize);
            let target = rand(ncpu as u64) as usize;
            push(pid, ids::WAKEUP, target as u32, curr[c]);
            queue[target].push_back(pid);
        } else if r < 85 {
            let next = queue[c].pop_front().unwrap_or(0);
            push(curr[c], ids::CTX_SWITCH, next, BLOCKED);
            sleeping.push(curr[c]);
            curr[c] = next;
        } else if let Some(pid) = queue[c].pop_back() {
            let d = rand(ncpu as u64) as usize;
            push(pid, ids::MIGRATE, c as u32, d as u32);
            queue[d].push_back(pid);
        }
    }
    w.finish().unwrap();
}

fn warmcore(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_warmcore")).args(args).output().unwrap()
}

#[test]
fn json_output_is_the_analysis_with_exactly_the_issue_keys() {
    let p = tmp("freq.wct");
    generate(&p, 8, 5, 20_000, true);
    let out = warmcore(&["trace", "stats", p.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The output is the library's analysis of the file, printed as JSON.
    let want = analyze(&Trace::open(&p).unwrap()).unwrap();
    assert_eq!(String::from_utf8(out.stdout.clone()).unwrap(), serde_json::to_string_pretty(&want).unwrap() + "\n");
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut keys: Vec<&str> = got.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "cpus",
            "cpus_used",
            "duration_ns",
            "events",
            "freq_residency",
            "inversions",
            "lost_events",
            "migrations",
            "overload_per_s",
            "underload_per_s",
            "wakeup_latency_ns",
            "work_conservation_violation_ns"
        ]
    );
    assert_eq!(got["events"], 20_000);
    assert_eq!(got["cpus"], 8);
    // This schedule has every kind of figure.
    assert!(got["freq_residency"].as_array().unwrap().len() == 28);
    assert!(got["wakeup_latency_ns"]["p50"].as_u64().unwrap() > 0);
    assert!(got["migrations"].as_u64().unwrap() > 0);
    assert!(got["underload_per_s"].as_f64().unwrap() > 0.0);
    assert!(got["overload_per_s"].as_f64().unwrap() > 0.0);
    assert!(got["work_conservation_violation_ns"].as_u64().unwrap() > 0);
}

#[test]
fn fields_without_support_are_null() {
    let p = tmp("nofreq.wct");
    generate(&p, 4, 6, 5_000, false);
    let out = warmcore(&["trace", "stats", p.to_str().unwrap(), "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["freq_residency"].is_null() && v["inversions"].is_null(), "{v}");
    assert!(v["wakeup_latency_ns"].is_object());
}

#[test]
fn readable_report_shows_busy_time_per_cpu() {
    let p = tmp("report.wct");
    generate(&p, 6, 10, 8_000, true);
    let out = warmcore(&["trace", "stats", p.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for c in 0..6 {
        assert!(text.contains(&format!("cpu{c} ")), "no line for cpu{c}:\n{text}");
    }
    for needle in ["busy time", "frequency residency", "underload", "overload", "migrations", "wakeup latency", "work-conservation", "frequency inversions"] {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }
}

#[test]
fn bad_input_gives_one_line_and_a_failure() {
    let p = tmp("garbage.wct");
    std::fs::write(&p, b"this is not a trace, but long enough to hold a prelude of some bytes").unwrap();
    for args in [vec!["trace", "stats", p.to_str().unwrap()], vec!["trace", "stats", "/nonexistent/x.wct", "--json"]] {
        let out = warmcore(&args);
        assert!(!out.status.success());
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(args[2]) && !err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn an_incomplete_trace_is_analysed_up_to_its_last_chunk_with_a_warning() {
    let p = tmp("whole.wct");
    generate(&p, 4, 6, 5_000, true);
    let bytes = std::fs::read(&p).unwrap();
    let cut = tmp("cut.wct");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let out = warmcore(&["trace", "stats", cut.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("incomplete"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_object().unwrap().len(), 12);
    let n = v["events"].as_u64().unwrap();
    assert!(n > 0 && n < 5_000, "{n} events");
}

#[test]
fn placement_adds_one_key_the_library_computes_and_leaves_the_others_alone() {
    let p = tmp("placement.wct");
    generate(&p, 4, 7, 5_000, false);
    let path = p.to_str().unwrap();
    let with = warmcore(&["trace", "stats", path, "--json", "--placement"]);
    assert!(with.status.success(), "{}", String::from_utf8_lossy(&with.stderr));
    let plain = warmcore(&["trace", "stats", path, "--json"]);
    let mut got: serde_json::Value = serde_json::from_slice(&with.stdout).unwrap();
    let (_, want) = warmcore_trace::placement::analyze(&Trace::open(&p).unwrap()).unwrap();
    assert_eq!(got["placement"], serde_json::to_value(&want).unwrap());
    assert!(want.wakeups > 0, "the generated schedule wakes tasks: {want:?}");
    got.as_object_mut().unwrap().remove("placement");
    assert_eq!(got, serde_json::from_slice::<serde_json::Value>(&plain.stdout).unwrap());
    // The readable report says it too.
    let text = warmcore(&["trace", "stats", path, "--placement"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains(&format!("placement:      {} wake-ups", want.wakeups)));
}
