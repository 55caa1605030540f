// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore hunt` (docs/hunt.md): it finds the planted bugs of the fixture
//! scheduler (tests/fixtures/hunt-broken) and writes reproducers that
//! `warmcore sim` replays to the same failure, finds nothing in
//! `scx:default`, and gives the same result whatever `--jobs`.

use std::path::Path;
use std::process::{Command, Output};

fn warmcore(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warmcore")).current_dir(dir).args(args).output().expect("warmcore runs")
}

fn broken() -> String {
    format!("bpf:{}/tests/fixtures/hunt-broken", env!("CARGO_MANIFEST_DIR"))
}

/// The replay command of a failure's directory, as failure.txt gives it.
fn replay_args(run_dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(run_dir.join("failure.txt")).unwrap();
    let line = text.lines().find_map(|l| l.strip_prefix("replay: warmcore ")).expect("a replay line");
    line.split(' ').map(str::to_string).collect()
}

/// Hunt `policy` on the default machine; the failure's directory.
fn hunt_finds(d: &Path, policy: &str, out: &str, says: &str) -> std::path::PathBuf {
    let o = warmcore(d, &["hunt", "--policy", policy, "--machine", "default", "--runs", "30", "--seed", "3", "--jobs", "2", "--out", out]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    let last = e.trim_end().lines().last().unwrap();
    assert!(last.starts_with("warmcore: ") && last.contains(says) && last.contains("reproducer in"), "{e}");
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join(out).join("summary.json")).unwrap()).unwrap();
    let run = summary["failure"]["run"].as_u64().expect("a failure in summary.json");
    let dir = d.join(out).join(format!("run-{run}"));
    for f in ["original.toml", "repro.toml", "repro.wct", "failure.txt"] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    dir
}

#[test]
fn a_hunt_finds_the_planted_stall_and_its_reproducer_replays() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    // Tasks not allowed on CPU 0 are never run: the watchdog ejects it.
    let dir = hunt_finds(d, &broken(), "h", "runnable task stall");
    let repro = std::fs::read_to_string(dir.join("repro.toml")).unwrap();
    let tasks = repro.matches("[[task]]").count();
    assert!((1..=8).contains(&tasks), "{repro}");
    assert!(repro.contains("affinity"), "the failure needs an allowed-CPU change: {repro}");
    // The reproducer fails again under `warmcore sim`, the same way.
    let args = replay_args(&dir);
    let o = Command::new(env!("CARGO_BIN_EXE_warmcore")).current_dir(d).args(&args).output().unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(!o.status.success(), "{args:?}: {all}");
    assert!(all.contains("runnable task stall"), "{all}");
    // The same hunt on one thread finds the same run and reproducer.
    let o = warmcore(d, &["hunt", "--policy", &broken(), "--machine", "default", "--runs", "30", "--seed", "3", "--jobs", "1", "--out", "h1"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(d.join("h1").join(dir.file_name().unwrap()).join("repro.toml")).unwrap(), repro);
}

#[test]
fn a_hunt_finds_an_insert_the_kernel_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let dir = hunt_finds(d, &format!("{}:ignore_affinity=true", broken()), "h", "not allowed for");
    let args = replay_args(&dir);
    let o = Command::new(env!("CARGO_BIN_EXE_warmcore")).current_dir(d).args(&args).output().unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(!o.status.success() && all.contains("SCX_DSQ_LOCAL[_ON] target CPU 0 not allowed for"), "{all}");
}

/// The short hunt: a fixed seed and number of runs on each of
/// warmcore's own policies (Nest in each way of keeping cores warm) finds
/// nothing.
#[test]
fn a_short_hunt_finds_nothing_in_any_of_warmcore_s_policies() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    for policy in [
        "scx:default",
        "scx:slocal",
        "scx:smove",
        "scx:nest:warm=pmqos",
        "scx:nest:warm=threads",
        "scx:nest:warm=off",
        "scx:haiku-low-latency",
        "scx:haiku-power-saving",
        "scx:warm",
    ] {
        let out = policy.replace([':', '='], "-");
        let o = warmcore(d, &["hunt", "--policy", policy, "--runs", "100", "--seed", "3", "--jobs", "2", "--out", &out]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{policy}: {e}");
        let s = String::from_utf8_lossy(&o.stdout);
        assert!(s.starts_with(&format!("hunt: 100 runs of {policy}")) && s.contains("no failure"), "{s}");
        let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join(&out).join("summary.json")).unwrap()).unwrap();
        assert_eq!(summary["runs"], 100, "{policy}");
        assert!(summary["failure"].is_null(), "{policy}: {summary}");
        // Every run has a task that computes: each adds runnable task-time.
        assert!(summary["simulated_s"].as_f64().unwrap() > 0.0 && summary["runnable_task_s"].as_f64().unwrap() > 0.0, "{summary}");
    }
}

/// `bpf:DIR` with a relative DIR builds from the directory it names (the
/// compiler runs elsewhere), in an empty cache so that it is built here.
#[test]
fn a_relative_bpf_dir_is_built() {
    let cache = tempfile::tempdir().unwrap();
    let cli = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = Command::new(env!("CARGO_BIN_EXE_warmcore"))
        .current_dir(cli)
        .env("XDG_CACHE_HOME", cache.path())
        .args(["sim", "--machine", "default", "--workload", "periodic:tasks=2,run_us=100,sleep_us=100,duration_ms=10", "--policy", "bpf:tests/fixtures/hunt-broken", "--json"])
        .output()
        .expect("warmcore runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("a JSON report");
    assert!(j["makespan_ns"].as_u64().is_some_and(|m| m > 0), "{j}");
}
