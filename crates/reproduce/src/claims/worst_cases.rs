// SPDX-License-Identifier: GPL-2.0-only
//! Claim 3. Fewer Cores, More Hertz, section 4.1 (worst cases) and 4.4:
//! S_local's worst cases are mkl-dnn and NAS LU, S_move's is hackbench, and
//! S_move is far better than S_local in the worst case.

use std::collections::BTreeMap;

use super::{pct, yn, Setup, E7, FCMH_GOVERNOR, ON_PAR_PCT};
use crate::{near, Band, Cell, Claim, Grade, Outcome, Param, Results, Unknown};

/// S_local against CFS on its worst cases, in percent (section 4.1).
const MKL_SLOCAL_PCT: f64 = -80.0;
const NAS_LU_SLOCAL_PCT: f64 = -17.0;
/// S_move's worst case, hackbench, in percent (section 4.4). "Far better"
/// has no figure.
const HACKBENCH_SMOVE_PCT: f64 = -8.4;

/// The worst-case workloads under CFS, each with its name in the claim; the
/// strategies' cells are these with another policy.
fn workloads(s: &Setup) -> [(&'static str, Cell); 3] {
    let cell = |w: &str| Cell::new(E7, w, "cfs", FCMH_GOVERNOR);
    [("mkl-dnn", cell(&s.mkl)), ("nas_lu", cell(&s.nas_lu_b)), ("hackbench", cell(&s.hackbench_fcmh))]
}

pub(super) fn claim(s: &Setup) -> Claim {
    let mut cells = Vec::new();
    for (_, c) in workloads(s) {
        for p in ["cfs", "slocal", "smove"] {
            cells.push(c.with_policy(p));
        }
    }
    Claim {
        id: 3,
        source: "Fewer Cores, More Hertz, sections 4.1 and 4.4",
        claim: "S_local's worst cases are mkl-dnn and NAS LU; S_move's worst case is hackbench; S_move is far better than S_local in the worst case.",
        paper_value: format!(
            "S_local: mkl-dnn {MKL_SLOCAL_PCT} %, nas_lu {NAS_LU_SLOCAL_PCT} %; S_move: hackbench {HACKBENCH_SMOVE_PCT} %"
        ),
        needs: vec!["slocal".into(), "smove".into()],
        runs: s.runs(&cells, |_| false),
        check,
        bands: bands(),
    }
}

fn check(r: &Results, s: &Setup) -> Result<Outcome, String> {
    let mut rows = Vec::new();
    let mut worst_local = f64::INFINITY;
    let mut worst_move = f64::INFINITY;
    let mut worst_move_w = "";
    let mut imp = BTreeMap::new();
    let [mkl, ..] = workloads(s);
    for (name, c) in workloads(s) {
        let l = r.improvement(&c.with_policy("slocal"), "cfs")?;
        let m = r.improvement(&c.with_policy("smove"), "cfs")?;
        rows.push(format!("{name}: S_local {}, S_move {}", pct(l), pct(m)));
        worst_local = worst_local.min(l);
        if m < worst_move {
            worst_move = m;
            worst_move_w = name;
        }
        imp.insert(name, (l, m));
    }
    let (mkl_l, _) = imp["mkl-dnn"];
    let (nas_l, _) = imp["nas_lu"];
    let a = mkl_l < -ON_PAR_PCT;
    let b = nas_l < -ON_PAR_PCT;
    let c = worst_move > worst_local;
    let d = worst_move_w == "hackbench";
    let grade = Grade::worst([
        Grade::of(a, near(mkl_l, MKL_SLOCAL_PCT)),
        Grade::of(b, near(nas_l, NAS_LU_SLOCAL_PCT)),
        Grade::of(c, true),
        Grade::of(d, near(worst_move, HACKBENCH_SMOVE_PCT)),
    ]);
    let sim_value = format!(
        "{}; worst case: S_local {}, S_move {} ({})",
        rows.join("; "),
        pct(worst_local),
        pct(worst_move),
        worst_move_w
    );
    let mut note = format!(
        "Check: S_local more than {ON_PAR_PCT} % worse on mkl-dnn ({}) and on NAS LU ({}), S_move's worst case better than S_local's ({}), \
         and S_move's worst case hackbench ({}); magnitudes within a factor of 1.5 of {MKL_SLOCAL_PCT} % ({}), {NAS_LU_SLOCAL_PCT} % ({}) \
         and {HACKBENCH_SMOVE_PCT} % ({}). ",
        yn(a),
        yn(b),
        yn(c),
        yn(d),
        yn(near(mkl_l, MKL_SLOCAL_PCT)),
        yn(near(nas_l, NAS_LU_SLOCAL_PCT)),
        yn(near(worst_move, HACKBENCH_SMOVE_PCT)),
    );
    let mkl = mkl.1;
    note.push_str(&format!(
        "mkl-dnn work-conservation violations: CFS {:.1} ms, S_local {:.1} ms, S_move {:.1} ms; overload/s CFS {:.1}, S_local {:.1}, S_move {:.1}.",
        r.mean_of(&mkl, |x| x.work_conservation_violation_ns as f64 / 1e6)?,
        r.mean_of(&mkl.with_policy("slocal"), |x| x.work_conservation_violation_ns as f64 / 1e6)?,
        r.mean_of(&mkl.with_policy("smove"), |x| x.work_conservation_violation_ns as f64 / 1e6)?,
        r.mean_of(&mkl, |x| x.overload_per_s.unwrap_or(0.0))?,
        r.mean_of(&mkl.with_policy("slocal"), |x| x.overload_per_s.unwrap_or(0.0))?,
        r.mean_of(&mkl.with_policy("smove"), |x| x.overload_per_s.unwrap_or(0.0))?,
    ));
    if !d {
        note.push_str(&format!(
            " S_move's worst case here is {worst_move_w} ({}), far beyond the paper's worst of {} %: the deferred \
             migrations leave the barrier threads waiting (the work-conservation and overload figures above).",
            pct(worst_move),
            -HACKBENCH_SMOVE_PCT
        ));
    }
    // Losses several times the paper's.
    if mkl_l < 3.0 * MKL_SLOCAL_PCT || nas_l < 3.0 * NAS_LU_SLOCAL_PCT {
        note.push_str(
            " The simulated losses are several times the paper's: S_local stacks the threads a barrier releases on the \
             waker's core again at every barrier (the overload and work-conservation figures above), and they wait there \
             for balancing. In the paper, daemons (systemd) that woke and blocked at once triggered the idle balancing \
             that spread them (Fewer Cores, More Hertz, section 4.4); the model runs such daemons (docs/model.md, \
             Background tasks), but the stacked CPU's own tick already kicks idle balancing about once per barrier, so the \
             daemons change little. What sets the loss is that wait against the length of a work item between barriers, \
             which no source gives (mkl-dnn's 100 us and NAS LU's blocks are ASSUMPTIONS).",
        );
    }
    Ok(Outcome::new(sim_value, grade, note))
}

/// mkl-dnn's work item between two barriers: what S_local's loss there
/// hangs on (the note above), which no source gives.
const MKL_ITEM: Unknown = Unknown::new(
    "mkl-dnn's work item between barriers",
    Param::Workload { workload: "mkl-dnn", key: "item_us" },
    "us",
    100.0,
    &[25.0, 100.0, 1000.0],
    "no source gives the length of mkl-dnn's work between barriers on the E7 (Fewer Cores, More Hertz, section 4.1, \
     names the benchmark only); the model's 100 us is an ASSUMPTION, and the range is a wide one, from a fraction of \
     a 4 ms tick to a quarter of it.",
);

fn bands() -> Vec<Band> {
    let band = Band::new(
        &[MKL_ITEM],
        "S_local against CFS on mkl-dnn, %",
        (MKL_SLOCAL_PCT, MKL_SLOCAL_PCT),
        |s| {
            let [(_, mkl), ..] = workloads(s);
            vec![mkl.clone(), mkl.with_policy("slocal")]
        },
        |r, s| {
            let [(_, mkl), ..] = workloads(s);
            r.improvement(&mkl.with_policy("slocal"), "cfs")
        },
    );
    vec![band.missing(
        "what spread the threads S_local stacks at each barrier sooner in the paper than the model's balancing does (the \
         paper credits daemons that wake and block, which the model runs: the note above); not identified",
    )]
}
