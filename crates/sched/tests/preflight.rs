// SPDX-License-Identifier: GPL-2.0-only
//! What the loader says before it touches the kernel. The scheduler itself is
//! tested in a VM (scripts/test-sched-vm.sh).

use clap::Parser;
use warmcore_sched::{run, stats, Policy, SchedOpts};

#[derive(Parser)]
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
    assert_eq!(o.policy, Policy::Nest);
    // Nest, Table 1
    assert_eq!((o.nest_p_remove, o.nest_r_max, o.nest_r_impatient, o.nest_s_max), (2, 5, 2, 2));
    assert_eq!(o.smove_delay_us, 50);
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
    if std::path::Path::new("/sys/kernel/sched_ext").exists() || unsafe { libc::geteuid() } != 0 {
        return; // this kernel has sched_ext: the VM test covers loading
    }
    let o = opts(&["--policy", "slocal"]).unwrap();
    let err = match run(&o, &mut Vec::new()) {
        Err(e) => format!("{e:#}"),
        Ok(_) => panic!("loaded a scheduler on a kernel without sched_ext"),
    };
    assert!(err.contains("no sched_ext") && err.contains("warmcore vm"), "{err}");
    assert!(!err.contains('\n'), "one line: {err}");
}

#[test]
fn freq_set_needs_a_running_scheduler() {
    if std::path::Path::new(warmcore_sched::FREQ_PIN).exists() {
        return;
    }
    let err = format!("{:#}", warmcore_sched::freq_set(0, 1_000_000).unwrap_err());
    assert!(err.contains("--freq-source=map"), "{err}");
}

#[test]
fn stats_and_monitor_periods_must_be_positive() {
    for (flag, v) in [("--stats", "0"), ("--stats=-1", ""), ("--monitor", "0"), ("--monitor", "inf")] {
        let args: Vec<&str> = [flag, v].into_iter().filter(|a| !a.is_empty()).collect();
        let o = opts(&args).unwrap();
        let flag = flag.split('=').next().unwrap();
        let err = if flag == "--monitor" {
            format!("{:#}", warmcore_sched::monitor(o.monitor.unwrap()).unwrap_err())
        } else {
            match run(&o, &mut Vec::new()) {
                Err(e) => format!("{e:#}"),
                Ok(_) => panic!("ran with {flag} {v}"),
            }
        };
        if flag == "--stats" && !err.contains("--stats") {
            // root and sched_ext checks come first
            assert!(err.contains("root") || err.contains("sched_ext"), "{err}");
            continue;
        }
        assert!(err.contains(flag) && err.contains("positive"), "{flag} {v}: {err}");
        assert!(!err.contains('\n'), "one line: {err}");
    }
    assert!(opts(&["--stats", "1", "--monitor", "1"]).is_err(), "--stats and --monitor conflict");
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
