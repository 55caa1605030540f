// SPDX-License-Identifier: GPL-2.0-only
//! The command as a user meets it: help, exit codes, one-line errors.

use std::process::{Command, Output};

fn warmcore(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warmcore")).args(args).output().expect("warmcore runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A synthetic trace of about `events` events on 4 CPUs, in a directory
/// removed with the returned guard, and its path.
fn synth_trace(events: u32) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.wct").to_str().unwrap().to_owned();
    let o = warmcore(&["trace", "synth", "-o", &f, "--events", &events.to_string(), "--cpus", "4"]);
    assert!(o.status.success(), "{}", stderr(&o));
    (dir, f)
}

/// Every subcommand, found by walking `--help` output, answers `--help`.
#[test]
fn every_subcommand_has_help() {
    let mut todo: Vec<Vec<String>> = vec![vec![]];
    let mut seen = 0;
    while let Some(path) = todo.pop() {
        let mut args: Vec<&str> = path.iter().map(|s| s.as_str()).collect();
        args.push("--help");
        let o = warmcore(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        seen += 1;
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let mut in_commands = false;
        for line in text.lines() {
            if line.starts_with("Commands:") {
                in_commands = true;
                continue;
            }
            if in_commands {
                let Some(name) = line.split_whitespace().next() else { break };
                if !line.starts_with("  ") {
                    break;
                }
                // A wrapped description is indented deeper than a command.
                if line.starts_with("   ") {
                    continue;
                }
                if name != "help" {
                    let mut p = path.clone();
                    p.push(name.to_string());
                    todo.push(p);
                }
            }
        }
    }
    assert!(seen >= 4, "walked only {seen} commands");
}

#[test]
fn bad_files_give_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("notes.txt");
    std::fs::write(&foreign, "these are not events\n").unwrap();
    for (path, want) in [
        (foreign.to_str().unwrap(), "not a warmcore trace"),
        ("/no/such/file.wct", "No such file"),
        (dir.path().to_str().unwrap(), "not a regular file"),
    ] {
        let o = warmcore(&["trace", "info", path]);
        assert_eq!(o.status.code(), Some(2), "{path}");
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains(want) && e.contains(path), "{e}");
    }
}

#[test]
fn dump_filters_and_names_bad_arguments() {
    let (_dir, f) = synth_trace(2000);
    let f = f.as_str();
    let o = warmcore(&["trace", "dump", f, "--cpu", "2", "--event", "ctx_switch", "--to", "5ms"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.lines().count() > 0);
    for line in out.lines() {
        assert!(line.contains("[002]") && line.contains("CTX_SWITCH"), "{line}");
        let secs: f64 = line.split_whitespace().next().unwrap().parse().unwrap();
        assert!(secs < 0.005, "{line}");
    }
    let o = warmcore(&["trace", "dump", f, "--cpu", "4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no CPU 4"));
    let o = warmcore(&["trace", "dump", f, "--event", "NOPE"]);
    assert!(stderr(&o).contains("no event named \"NOPE\""));
    let o = warmcore(&["trace", "dump", f, "--from", "3 fortnights"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn trace_lod_builds_keeps_and_rebuilds_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.wct");
    let f = f.to_str().unwrap();
    let out = |o: &Output| String::from_utf8_lossy(&o.stdout).into_owned();
    let o = warmcore(&["trace", "synth", "-o", f, "--events", "5000", "--cpus", "4"]);
    // "wrote N events ...": at least 5000 (a fork or an exit writes its events whole).
    let n = out(&o).split_whitespace().nth(1).and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
    assert!(o.status.success() && n >= 5000, "{}", out(&o));
    let lod = format!("{f}.lod");
    let o = warmcore(&["trace", "lod", f]);
    assert!(o.status.success() && out(&o).contains("built") && out(&o).contains(&format!("{n} on 4 CPUs")), "{}", stderr(&o));
    assert!(out(&warmcore(&["trace", "lod", f])).contains("current, kept"));
    // A truncated summary is rebuilt, saying why.
    let bytes = std::fs::read(&lod).unwrap();
    std::fs::write(&lod, &bytes[..bytes.len() / 2]).unwrap();
    let o = warmcore(&["trace", "lod", f]);
    assert!(out(&o).contains("built") && out(&o).contains("truncated"), "{}", out(&o));
    assert_eq!(std::fs::read(&lod).unwrap().len(), bytes.len());
    // Not a trace: one line, exit 2.
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "not events\n").unwrap();
    let o = warmcore(&["trace", "lod", notes.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(!dir.path().join("notes.txt.lod").exists());
}

#[test]
fn bad_options_give_one_line_naming_the_help_to_read() {
    for (args, want, help) in [
        (&["sim", "--polcy", "x"][..], "similar argument exists: '--policy'", "warmcore sim --help"),
        (&["sim"][..], "--workload", "warmcore sim --help"),
        (&["sched", "--policy", "foo"][..], "possible values: default, slocal, smove, nest", "warmcore sched --help"),
        (&["trace", "dump", "--cpu", "x", "f.wct"][..], "invalid value 'x'", "warmcore trace dump --help"),
        (&["simm"][..], "unrecognized subcommand 'simm'", "warmcore --help"),
    ] {
        let o = warmcore(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(e.starts_with("warmcore: ") && e.contains(want) && e.contains(help), "{args:?}: {e}");
    }
    // Help is still help, on stdout, with status 0.
    let o = warmcore(&["sim", "--help"]);
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("Usage: warmcore sim"));
}

/// The pipe workload counts the round trips whose two ends shared a CPU: all
/// of them when both processes may run on one CPU only.
#[test]
fn pipe_workload_counts_round_trips_on_one_cpu() {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_warmcore"));
    cmd.args(["vm", "workload", "pipe", "--msgs", "300"]);
    // SAFETY: between fork and exec the closure makes one system call,
    // sched_setaffinity, which is async-signal-safe, and allocates nothing.
    unsafe {
        cmd.pre_exec(|| warmcore_vm::proc::pin_to_cpu(0));
    }
    let o = cmd.output().expect("warmcore runs");
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON line");
    assert_eq!(j["msgs"], 300);
    assert_eq!(j["same_cpu"], 1.0);
}

/// Times and counts that cannot be represented (infinite, NaN, negative,
/// past what a Duration or the option's type holds, past the documented
/// limit) are refused by the option parser: status 2, one line naming the
/// option, the value and the valid range, and no panic. sched, record and vm
/// need root, BPF or a VM to run, but their options are parsed first.
#[test]
fn times_and_counts_out_of_range_are_refused_in_one_line() {
    for (args, opt, value, range) in [
        (&["sched", "--run-for", "inf"][..], "--run-for", "inf", "from 0 to 31536000"),
        (&["record", "--duration", "1e300"], "--duration", "1e300", "above 0 and at most 31536000"),
        (&["vm", "--timeout", "1e300", "--", "true"], "--timeout", "1e300", "above 0 and at most 31536000"),
        (&["vm", "--timeout", "18446744073709551615", "--", "true"], "--timeout", "18446744073709551615", "at most 31536000"),
        (&["record", "--duration=-1"], "--duration", "-1", "above 0"),
        (&["vm", "--timeout", "-5", "--", "true"], "--timeout", "-5", "negative: give"),
        (&["sched", "--run-for", "-0.5"], "--run-for", "-0.5", "negative: give"),
        (&["sched", "--stats", "NaN"], "--stats", "NaN", "above 0"),
        (&["sched", "--monitor", "0"], "--monitor", "0", "above 0"),
        (&["sched", "--nest-s-max", "1e9"], "--nest-s-max", "1e9", "whole number from 0 to 1000000"),
        (&["sim", "--workload", "configure", "--max-time", "inf"], "--max-time", "inf", "above 0"),
        (&["sim", "--workload", "configure", "--max-events", "0"], "--max-events", "0", "from 1 to"),
        (&["compare", "--workload", "configure", "--runs", "0"], "--runs", "0", "from 1 to 10000"),
        (&["vm", "--cpus", "-1", "--", "true"], "--cpus", "-1", "from 1 to 256"),
        (&["vm", "workload", "hogs", "--secs", "1e300"], "--secs", "1e300", "from 0 to 31536000"),
        (&["vm", "workload", "hackbench", "--loops", "4294967296"], "--loops", "4294967296", "from 1 to 1000000"),
        (&["trace", "dump", "f.wct", "--to", "1e300"], "--to", "1e300", "from 0 to 31536000 (365 days)"),
    ] {
        let o = warmcore(args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(e.contains(opt) && e.contains(&format!("'{value}'")) && e.contains(range), "{args:?}: {e}");
    }
}

/// Good times get past the parser: a VM whose kernel is missing fails on
/// that (a usage error, status 2), not on its --timeout; a simulation and a
/// workload run.
#[test]
fn good_times_and_counts_are_taken() {
    let o = warmcore(&["vm", "--timeout", "2.5", "--kernel", "/no/such/kernel", "--", "true"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("--kernel /no/such/kernel: no such file"), "{e}");
    assert!(!e.contains("--timeout") && !e.contains("panicked"), "{e}");
    let o = warmcore(&["sim", "--workload", "configure", "--max-time", "20ms", "--max-events", "100000", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = warmcore(&["vm", "workload", "hogs", "--n", "1", "--secs", "0.05"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON line");
    assert!(j["wall_s"].as_f64().unwrap() >= 0.05, "{j}");
}

/// The stillness workload measures the time none of its real-time threads
/// ran: a process stopped for half a second reports a standstill at least
/// that long.
#[test]
fn stillness_measures_the_time_its_process_was_stopped() {
    warmcore_test_support::require!("root", warmcore_test_support::root_missing());
    let child = Command::new(env!("CARGO_BIN_EXE_warmcore"))
        .args(["vm", "workload", "stillness", "--secs", "5"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("warmcore runs");
    let pid = child.id().to_string();
    // Its threads exist once it has taken its start time: stop it after.
    let ncpu = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count()) <= ncpu {
        assert!(std::time::Instant::now() < deadline, "the stillness threads never started");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let signal = |s: &str| assert!(Command::new("kill").args([s, &pid]).status().unwrap().success());
    signal("-STOP");
    std::thread::sleep(std::time::Duration::from_millis(500));
    signal("-CONT");
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON line");
    assert!(j["longest_s"].as_f64().unwrap() >= 0.5, "{j}");
}

/// compare runs its policies x seeds side by side: each policy's row is
/// made of its own runs (`sim` with seeds 1..=runs), whichever finished
/// first.
#[test]
fn compare_gives_each_policy_the_figures_of_its_own_runs() {
    let w = "hackbench:groups=1,loops=5";
    let o = warmcore(&["compare", "--workload", w, "--policies", "cfs,slocal", "--runs", "3", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let c: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    for (i, p) in ["cfs", "slocal"].into_iter().enumerate() {
        let vals: Vec<f64> = (1..=3)
            .map(|seed| {
                let o = warmcore(&["sim", "--workload", w, "--policy", p, "--seed", &seed.to_string(), "--json"]);
                assert!(o.status.success(), "{}", stderr(&o));
                let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
                r["metric"]["value"].as_f64().expect("a metric")
            })
            .collect();
        let row = &c["results"][i];
        assert_eq!(row["policy"], p, "{c}");
        assert_eq!(row["mean"].as_f64(), Some(vals.iter().sum::<f64>() / 3.0), "{p}: {vals:?} {c}");
    }
    // The two policies differ: a row given the other policy's runs would fail above.
    assert_ne!(c["results"][0]["mean"], c["results"][1]["mean"], "{c}");
}

#[test]
fn a_closed_pipe_ends_trace_commands_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let (_dir, f) = synth_trace(200_000);
    let f = f.as_str();
    // `warmcore trace dump FILE | head -1`.
    let mut child = Command::new(env!("CARGO_BIN_EXE_warmcore"))
        .args(["trace", "dump", f])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(!line.is_empty());
    let o = child.wait_with_output().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(o.status.signal(), Some(libc::SIGPIPE), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

/// A workload file is read by its path, ':' included: ':' starts a built-in
/// workload's parameters only when the argument names no file.
#[test]
fn a_workload_file_path_may_hold_a_colon() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("run:12");
    std::fs::create_dir(&sub).unwrap();
    let w = sub.join("w.toml");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/../../workloads/pipeline.toml"), &w).unwrap();
    let w = w.to_str().unwrap();
    let o = warmcore(&["sim", "--machine", "default", "--workload", w, "--policy", "cfs", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("a JSON report");
    assert!(j["makespan_ns"].as_u64().is_some_and(|m| m > 0), "{j}");
    // A missing file with a ':' in its path is still named as a workload.
    let o = warmcore(&["sim", "--workload", &format!("{}/none.toml", sub.display()), "--policy", "cfs"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
