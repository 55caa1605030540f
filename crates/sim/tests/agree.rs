// SPDX-License-Identifier: GPL-2.0-only
//! The simulator's side of the cross-host agreement check
//! (docs/agreement.md, scripts/bench-agree.sh): the fork/wait chain and the
//! pipe pair of workloads/agree/ on the 4-CPU machine file of the VM, under
//! every scheduler the check compares, measured as the VM's recordings are
//! (`warmcore_trace::placement`).

use warmcore_sim::run::{run, RunConfig};
use warmcore_trace::placement::{self, Placement};
use warmcore_trace::Trace;

const POLICIES: [&str; 6] = ["eevdf", "scx:default", "scx:nest", "scx:bpfland", "scx:flash", "scx:cosmos"];

fn path(rel: &str) -> String {
    format!("{}/../../{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// One run of `workload` under `policy` on the VM's machine file: its
/// placement figures, from its trace.
fn placed(workload: &str, policy: &str) -> Placement {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.wct");
    let mut cfg = RunConfig::new(&path("machines/qemu-tcg-4.toml"), &path(workload), policy, "performance", 1);
    cfg.trace = Some(trace.clone());
    let r = run(&cfg).unwrap_or_else(|e| panic!("{policy} {workload}: {e}"));
    assert!(r.partial.is_none() && !r.ejected, "{policy} {workload}: {:?}", r.partial);
    let t = Trace::open(&trace).unwrap();
    assert_eq!(t.header.machine.nr_cpus(), 4, "the VM's 4 CPUs");
    placement::analyze(&t).unwrap().1
}

fn check_shares(p: &Placement, who: &str) {
    let total: f64 = p.run_share.iter().sum();
    assert!((total - 1.0).abs() < 1e-9 && p.cpus_used >= 1 && p.cpus_used <= p.cpus_touched, "{who}: {p:?}");
    for s in [p.on_prev, p.on_waker, p.ran_on_target, p.forks_on_parent].into_iter().flatten() {
        assert!((0.0..=1.0).contains(&s), "{who}: {p:?}");
    }
}

#[test]
fn the_chain_forks_a_hundred_links_and_wakes_each_parent_once_under_every_scheduler() {
    for policy in POLICIES {
        let p = placed("workloads/agree/chain.toml", policy);
        // Ten rounds of ten forks.
        assert_eq!(p.forks, 100, "{policy}: {p:?}");
        // Each parent is woken once, by its child's exit.
        assert_eq!(p.wakeups, 100, "{policy}: {p:?}");
        // Every waker is a task of the workload, named in the event.
        assert_eq!(p.no_waker, 0, "{policy}: {p:?}");
        check_shares(&p, policy);
    }
}

#[test]
fn the_pipe_pair_wakes_an_end_at_every_round_trip_under_every_scheduler() {
    for policy in POLICIES {
        let p = placed("workloads/agree/pipe.toml", policy);
        // The parent's one child.
        assert_eq!(p.forks, 1, "{policy}: {p:?}");
        // 2000 round trips: the parent sleeps in each until the answer
        // comes; the parent's wait for its child's exit adds at most one.
        assert!((2000..=4001).contains(&p.wakeups), "{policy}: {p:?}");
        // Two tasks touch at most two CPUs at a time, and take turns.
        assert!(p.cpus_used <= 2, "{policy}: {p:?}");
        check_shares(&p, policy);
    }
}
