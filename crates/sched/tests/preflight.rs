// SPDX-License-Identifier: GPL-2.0-only
//! What the loader says before it touches the kernel. The scheduler itself is
//! tested in a VM (scripts/test-sched-vm.sh).

use clap::Parser;
use warmcore_sched::{stats, Policy, SchedOpts};

// Negative numbers reach the options' parsers, as in `warmcore`.
#[derive(Parser)]
#[command(allow_negative_numbers = true)]
struct Cli {
    #[command(flatten)]
    opts: SchedOpts,
}

fn opts(args: &[&str]) -> Result<SchedOpts, clap::Error> {
    Cli::try_parse_from(std::iter::once("sched").chain(args.iter().copied())).map(|c| c.opts)
}

#[test]
fn options_parse_with_table1_defaults() {
    let o = opts(&["--policy", "nest"]).unwrap();
    let s = &o.settings;
    assert_eq!(s.policy, Policy::Nest);
    // Nest, Table 1
    assert_eq!((s.nest_p_remove, s.nest_r_max, s.nest_r_impatient, s.nest_s_max), (2, 5, 2, 2));
    assert_eq!(s.smove_delay_us, 50);
    assert!(opts(&["--policy", "cfs"]).is_err());
    assert!(opts(&["--slice-us", "5"]).is_err());
}

#[test]
fn counter_names_are_unique() {
    let mut n: Vec<&str> = stats::STAT_NAMES.to_vec();
    n.sort();
    n.dedup();
    assert_eq!(n.len(), stats::STAT_NAMES.len());
}

#[test]
fn without_sched_ext_it_points_to_the_vm() {
    let err = format!("{:#}", warmcore_sched::kernel_has_sched_ext(std::path::Path::new("/nonexistent/sched_ext")).unwrap_err());
    assert!(err.contains("no sched_ext") && err.contains("warmcore vm"), "{err}");
    assert!(!err.contains('\n'), "one line: {err}");
}

#[test]
fn freq_set_needs_a_running_scheduler() {
    let err = format!("{:#}", warmcore_sched::freq_set_at(std::path::Path::new("/nonexistent/warmcore_freq"), 0, 1_000_000).unwrap_err());
    assert!(err.contains("--freq-source=map"), "{err}");
}

/// Times and counts the loader cannot act on fail in parsing, in one line
/// that names the option and the valid range, before anything is loaded.
#[test]
fn times_and_counts_out_of_range_fail_in_parsing() {
    for args in [
        &["--stats", "0"][..],
        &["--stats=-1"],
        &["--monitor", "0"],
        &["--monitor", "inf"],
        &["--run-for", "inf"],
        &["--run-for", "1e300"],
        &["--run-for", "NaN"],
        &["--slice-us", "5"],
        &["--nest-r-max", "100000"],
        &["--nest-p-remove", "-1"],
    ] {
        let flag = args[0].split('=').next().unwrap();
        let e = match opts(args) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{args:?} parsed"),
        };
        let first = e.lines().next().unwrap();
        assert!(first.contains(flag) && first.contains("give "), "{args:?}: {e}");
    }
    assert!(opts(&["--stats", "1", "--monitor", "1"]).is_err(), "--stats and --monitor conflict");
    let o = opts(&["--run-for", "2.5", "--stats", "250ms", "--nest-r-max", "8"]).unwrap();
    assert_eq!(o.run_for, Some(std::time::Duration::from_millis(2500)));
    assert_eq!(o.stats, Some(std::time::Duration::from_millis(250)));
    assert_eq!(o.settings.nest_r_max, 8);
    assert_eq!(opts(&["--run-for", "0"]).unwrap().run_for, Some(std::time::Duration::ZERO));
}

#[test]
fn metrics_keep_the_json_line_format() {
    // The VM suite parses these lines (scripts/test-sched-vm.sh).
    let mut m = stats::Metrics { policy: "nest".into(), nest_primary_max: 3, ..Default::default() };
    m.counts.insert("select_cpu".into(), 7);
    let j: serde_json::Value = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
    assert_eq!(j["counts"]["select_cpu"], 7);
    assert_eq!(j["nest_primary_max"], 3);
    assert!(j.get("profile").is_none(), "no profile without --profile: {j}");
    m.profile.insert("select_cpu".into(), stats::OpProfile { calls: 2, total_ns: 10, mean_ns: 5.0 });
    let j: serde_json::Value = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
    assert_eq!(j["profile"]["select_cpu"]["calls"], 2);
    // and a monitor (a scx_stats client) reads them back
    let back: stats::Metrics = serde_json::from_value(j).unwrap();
    assert_eq!(back.profile["select_cpu"].mean_ns, 5.0);
}

#[test]
fn the_stats_server_describes_its_metrics() {
    let mut out = Vec::new();
    stats::server_data().describe_meta(&mut out, None).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("nest_primary_max") && text.contains("Largest primary nest"), "{text}");
}
