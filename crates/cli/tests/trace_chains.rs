// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore trace chains` on a simulated configure run and on bad input.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use warmcore_trace::chains::links;
use warmcore_trace::stats::analyze;
use warmcore_trace::*;

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("trace_chains");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn warmcore(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_warmcore")).args(args).output().unwrap()
}

/// A short configure run: a shell forking one short-lived child after another.
fn configure() -> PathBuf {
    let p = tmp("configure.wct");
    let out = warmcore(&[
        "sim", "--machine", "default", "--workload", "configure", "--policy", "cfs", "--governor", "powersave",
        "--trace", p.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    p
}

#[test]
fn json_is_the_analysis_and_a_pid_follows_its_chain_across_cpus() {
    let p = configure();
    let t = Trace::open(&p).unwrap();
    let all = links(&t).unwrap();
    let out = warmcore(&["trace", "chains", p.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["links"].as_array().unwrap();
    assert_eq!(rows.len(), all.links.len());
    // Every fork of the run is a link, and every wake-up of a waiting shell.
    assert!(rows.iter().filter(|r| r["fork"] == true).count() >= 1000, "{}", rows.len());
    let r = &rows[1];
    let l = &all.links[1];
    assert_eq!((r["waker"].as_u64(), r["wakee"].as_u64(), r["parent"].as_u64()), (Some(l.waker as u64), Some(l.wakee as u64), Some(0)));
    assert_eq!(r["waker_comm"], "sh");
    let below: u64 = all.links.iter().filter_map(|l| l.below_ns).sum();
    assert_eq!(v["below_ns"].as_u64(), Some(below));
    // Powersave starts every CPU slow; a shell on a CPU that has sped up
    // forks children onto idle, slow ones: some time runs below.
    assert!(below > 0);
    // trace stats' inversions are some of these links, over part of their time.
    let inv = analyze(&t).unwrap().inversions.unwrap();
    assert!(inv.count > 0 && inv.ns <= below, "{inv:?} {below}");

    // The chain of a child of the first shell: back to the first fork, on
    // through its own children, across at least three CPUs.
    let child = all.links[1].wakee;
    let out = warmcore(&["trace", "chains", p.to_str().unwrap(), "--pid", &child.to_string(), "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["links"].as_array().unwrap();
    assert_eq!(rows[0]["id"], 0);
    assert!(rows.iter().any(|r| r["wakee"] == child));
    let cpus: BTreeSet<u64> = rows.iter().flat_map(|r| [r["waker_cpu"].as_u64(), r["cpu"].as_u64()]).flatten().collect();
    assert!(cpus.len() >= 3, "{cpus:?}");
    // Each link's parent is in the chain, before it.
    let ids: BTreeSet<u64> = rows.iter().map(|r| r["id"].as_u64().unwrap()).collect();
    for r in rows {
        if let Some(p) = r["parent"].as_u64() {
            assert!(ids.contains(&p) && p < r["id"].as_u64().unwrap());
        }
    }

    // The table: a header, one line a link, a summary.
    let out = warmcore(&["trace", "chains", p.to_str().unwrap(), "--pid", &child.to_string()]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("WAKER") && lines[0].contains("BELOW"), "{text}");
    assert_eq!(lines.len(), rows.len() + 2, "{text}");
    assert!(lines[1].contains("fork") && lines[1].contains(" -> ") && lines[1].contains("sh:"), "{}", lines[1]);
    assert!(lines.last().unwrap().starts_with(&format!("{} links; ", rows.len())), "{text}");
}

#[test]
fn bad_input_gives_one_line_and_a_failure() {
    let p = configure();
    // A trace with switches but no wake-up or fork.
    let q = tmp("nowake.wct");
    let h = Header::other(Machine::flat("t", 2), "test");
    let mut w = Writer::create(&q, &h, WriterOptions::default()).unwrap();
    w.push(0, Event::new(1000, 0, ids::CTX_SWITCH, 10, 0)).unwrap();
    w.push(0, Event::new(2000, 10, ids::CTX_SWITCH, 0, 1)).unwrap();
    w.finish().unwrap();
    let missing = tmp("missing.wct");
    let cases: [(&[&str], &str); 3] = [
        (&["trace", "chains", p.to_str().unwrap(), "--pid", "999999"], "pid 999999"),
        (&["trace", "chains", q.to_str().unwrap()], "no WAKEUP, WAKEUP_NEW or FORK events"),
        (&["trace", "chains", missing.to_str().unwrap(), "--json"], "missing.wct"),
    ];
    for (args, needle) in cases {
        let out = warmcore(args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(needle) && !err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty());
    }
}
