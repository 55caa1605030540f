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
    // shared/seeds/001, Table 1
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
    if std::path::Path::new("/sys/kernel/sched_ext").exists() {
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
