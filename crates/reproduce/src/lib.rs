// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore reproduce`: the findings of the papers (Fewer Cores, More Hertz;
//! Nest; see docs/papers.md), re-run in the simulator on the papers' modelled
//! machines.
//!
//! Experiments are data: each [`Claim`] lists its runs (machine, workload
//! with parameters, policy, governor, seeds), and a check that turns the
//! runs' reports into a simulated value and a verdict. The runs of all the
//! selected claims are deduplicated, run in parallel (each is deterministic:
//! seeded), and written out as DIR/runs.json, DIR/claims.json, DIR/report.md
//! and DIR/figures.json (the plan python/warmcore/figures.py draws).
//!
//! After the claims, a reproduction without `--only` replays the project's
//! own perf recordings on the Nest machines' models ([`real`]): the "Real
//! workloads" section of report.md and DIR/real-workloads.json.
//!
//! A claim whose policies this build does not have is left out (not listed),
//! never faked.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use serde::Serialize;
use warmcore_sim::{Limits, Machine, RunReport};
pub use warmcore_sweep::{Engine, Job};

pub mod bands;
mod claims;
pub use bands::{Band, BandResult, Param, Unknown, UnknownResult, Verdict};
pub use claims::{all_claims, Setup};
pub mod real;

/// A configuration run over several seeds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Cell {
    pub machine: String,
    pub workload: String,
    pub policy: String,
    pub governor: String,
}

impl Cell {
    pub fn new(machine: &str, workload: &str, policy: &str, governor: &str) -> Cell {
        Cell { machine: machine.into(), workload: workload.into(), policy: policy.into(), governor: governor.into() }
    }
    pub fn with_policy(&self, policy: &str) -> Cell {
        Cell { policy: policy.into(), ..self.clone() }
    }
    pub fn label(&self) -> String {
        format!("{} {} {} {}", self.machine, self.workload, self.policy, self.governor)
    }
}

/// One run: a cell, a seed, and whether its events go to a trace file.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunSpec {
    pub cell: Cell,
    pub seed: u64,
    pub trace: bool,
}

/// How far a claim holds in the simulator (`GRADING` states the rule).
/// Ordered from the worst: a claim's grade is the worst of its parts'.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Grade {
    #[serde(rename = "not reproduced")]
    NotReproduced,
    #[serde(rename = "direction only")]
    DirectionOnly,
    /// The check had nothing to judge (the policy never acted, or made the
    /// same decisions as its baseline).
    #[serde(rename = "not tested")]
    NotTested,
    #[serde(rename = "reproduced")]
    Reproduced,
}

impl Grade {
    pub fn label(self) -> &'static str {
        match self {
            Grade::NotReproduced => "not reproduced",
            Grade::DirectionOnly => "direction only",
            Grade::NotTested => "not tested",
            Grade::Reproduced => "reproduced",
        }
    }

    /// A part with the paper's direction or not, and, when it has it, the
    /// paper's magnitude or not.
    pub fn of(direction: bool, magnitude: bool) -> Grade {
        match (direction, magnitude) {
            (false, _) => Grade::NotReproduced,
            (true, false) => Grade::DirectionOnly,
            (true, true) => Grade::Reproduced,
        }
    }

    /// The grade of a claim from its parts'.
    pub fn worst(parts: impl IntoIterator<Item = Grade>) -> Grade {
        parts.into_iter().min().unwrap_or(Grade::NotTested)
    }
}

/// A simulated magnitude "within a factor of 1.5" of a paper's single
/// figure: same sign, and at most 1.5 times larger or smaller.
pub const MAGNITUDE_FACTOR: f64 = 1.5;

pub fn near(sim: f64, paper: f64) -> bool {
    let r = sim / paper;
    r.is_finite() && (1.0 / MAGNITUDE_FACTOR..=MAGNITUDE_FACTOR).contains(&r)
}

/// The rule, as report.md states it before any result.
pub const GRADING: &str = "Each claim gets one of four grades. **reproduced**: the simulated effect has the paper's \
direction (beyond the papers' own +-5 % \"on par\" band, or the bound the claim states) and a magnitude inside the \
paper's stated range, or within a factor of 1.5 of its single figure. **direction only**: the direction holds, the \
magnitude does not. **not reproduced**: the direction does not hold. **not tested**: the check had nothing to judge \
(the policy never acted, or made exactly the decisions of the policy it is compared with); the note says why. A claim \
with several parts gets the worst of their grades, in the order not reproduced, direction only, not tested, \
reproduced. `reproduced` in claims.json is true for the first grade only. Magnitudes are reported, never tuned for.";

/// What a check concludes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outcome {
    pub sim_value: String,
    pub grade: Grade,
    /// `grade == Reproduced`.
    pub reproduced: bool,
    pub note: String,
}

impl Outcome {
    pub fn new(sim_value: String, grade: Grade, note: String) -> Outcome {
        Outcome { sim_value, grade, reproduced: grade == Grade::Reproduced, note }
    }
}

/// A claim of a paper, its runs and its check.
pub struct Claim {
    pub id: u32,
    /// Seed file and section.
    pub source: &'static str,
    /// One sentence.
    pub claim: &'static str,
    /// The paper's own number(s), written from the claim's module's named
    /// figures, which its check compares with.
    pub paper_value: String,
    /// Policy specifications (with parameters) the claim needs.
    pub needs: Vec<String>,
    pub runs: Vec<RunSpec>,
    pub check: fn(&Results, &Setup) -> Result<Outcome, String>,
    /// The unknowns the claim hangs on, where it is not reproduced, and how
    /// `--bands` runs it across their ranges: a band a part of the claim
    /// that hangs on a number of its own.
    pub bands: Vec<Band>,
}

impl Claim {
    /// The first of `needs` this build's simulator refuses, with its message.
    pub fn missing_policy(&self) -> Option<(String, String)> {
        let m = Machine::load("default").ok()?;
        self.needs
            .iter()
            .find_map(|p| warmcore_sim::make_policy(p, &m).err().map(|e| (p.clone(), e.to_string())))
    }
    pub fn evaluate(&self, r: &Results, s: &Setup) -> Outcome {
        match (self.check)(r, s) {
            Ok(o) => o,
            Err(why) => Outcome::new("n/a".into(), Grade::NotReproduced, why),
        }
    }
}

/// One finished run.
#[derive(Clone, Debug)]
pub struct Done {
    pub spec: RunSpec,
    pub report: Result<RunReport, String>,
    /// Trace path relative to the output directory.
    pub trace: Option<String>,
}

/// The finished runs, with the measures the checks use.
#[derive(Clone, Debug, Default)]
pub struct Results {
    pub done: Vec<Done>,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

pub use warmcore_sim::run::improvement_pct;

impl Results {
    pub fn new(done: Vec<Done>) -> Results {
        Results { done }
    }

    /// The complete reports of a cell, one per seed; an error if a run of
    /// it failed, stopped early, or was not run.
    pub fn reports(&self, c: &Cell) -> Result<Vec<&RunReport>, String> {
        let mut out = Vec::new();
        for d in self.done.iter().filter(|d| &d.spec.cell == c) {
            match &d.report {
                Ok(r) if r.partial.is_none() => out.push(r),
                Ok(r) => {
                    return Err(format!(
                        "run {} seed {} stopped early: {}",
                        c.label(),
                        d.spec.seed,
                        r.partial.as_deref().unwrap_or("")
                    ))
                }
                Err(e) => return Err(format!("run {} seed {} failed: {e}", c.label(), d.spec.seed)),
            }
        }
        if out.is_empty() {
            return Err(format!("no run of {}", c.label()));
        }
        Ok(out)
    }

    pub fn mean_of(&self, c: &Cell, f: impl Fn(&RunReport) -> f64) -> Result<f64, String> {
        let v: Vec<f64> = self.reports(c)?.into_iter().map(f).collect();
        Ok(mean(&v))
    }

    /// Mean of the workload's metric.
    pub fn metric(&self, c: &Cell) -> Result<f64, String> {
        self.mean_of(c, |r| r.metric.value)
    }

    /// Mean completion time in seconds.
    pub fn seconds(&self, c: &Cell) -> Result<f64, String> {
        self.mean_of(c, |r| r.makespan_ns as f64 / 1e9)
    }

    pub fn energy(&self, c: &Cell) -> Result<f64, String> {
        self.mean_of(c, |r| r.energy_j)
    }

    pub fn underload(&self, c: &Cell) -> Result<f64, String> {
        self.mean_of(c, |r| r.underload_per_s.unwrap_or(0.0))
    }

    pub fn inversions(&self, c: &Cell) -> Result<f64, String> {
        self.mean_of(c, |r| {
            r.inversions.as_ref().and_then(|v| v.get("count")).and_then(|v| v.as_f64()).unwrap_or(0.0)
        })
    }

    /// Improvement of `c` over the same cell under `base_policy`, in percent.
    pub fn improvement(&self, c: &Cell, base_policy: &str) -> Result<f64, String> {
        let base = c.with_policy(base_policy);
        let lower = self.reports(c)?[0].metric.better == "lower";
        Ok(improvement_pct(self.metric(&base)?, self.metric(c)?, lower))
    }

    /// Each run's frequency residency bands.
    fn residency(&self, c: &Cell) -> Result<Vec<&Vec<serde_json::Value>>, String> {
        self.reports(c)?
            .into_iter()
            .map(|r| {
                r.freq_residency
                    .as_ref()
                    .and_then(|b| b.as_array())
                    .ok_or_else(|| format!("run {} has no frequency residency", c.label()))
            })
            .collect()
    }

    /// Fraction of busy time (at a known frequency) in bands that lie below
    /// `mhz`.
    pub fn fraction_below(&self, c: &Cell, mhz: u32) -> Result<f64, String> {
        let v: Vec<f64> = self
            .residency(c)?
            .into_iter()
            .map(|bands| {
                bands
                    .iter()
                    .filter(|b| b.get("hi_mhz").and_then(|x| x.as_u64()).is_some_and(|hi| hi <= mhz as u64))
                    .filter_map(|b| b.get("fraction").and_then(|x| x.as_f64()))
                    .sum()
            })
            .collect();
        Ok(mean(&v))
    }

    /// Mean frequency of busy time (at a known frequency), in MHz, each
    /// residency band counted at its middle.
    pub fn mean_busy_mhz(&self, c: &Cell) -> Result<f64, String> {
        let mut v = Vec::new();
        for bands in self.residency(c)? {
            let (mut sum, mut total) = (0.0, 0.0);
            for b in bands {
                let field = |k: &str| b.get(k).and_then(|x| x.as_f64()).unwrap_or(0.0);
                sum += field("fraction") * (field("lo_mhz") + field("hi_mhz")) / 2.0;
                total += field("fraction");
            }
            if total > 0.0 {
                v.push(sum / total);
            }
        }
        Ok(mean(&v))
    }

    /// Mean of the first of `keys` found in the policy's counters (searched
    /// at the top level of `policy_stats`).
    pub fn policy_stat(&self, c: &Cell, keys: &[&str]) -> Result<f64, String> {
        let reports = self.reports(c)?;
        let mut v = Vec::new();
        for r in reports {
            let x = keys
                .iter()
                .find_map(|k| r.policy_stats.get(*k).and_then(|x| x.as_f64()))
                .ok_or_else(|| format!("run {} reports none of the counters {}", c.label(), keys.join(", ")))?;
            v.push(x);
        }
        Ok(mean(&v))
    }
}

/// The machine's nominal (base) and minimum frequency in MHz.
pub fn machine_freqs(name: &str) -> Result<(u32, u32), String> {
    let m = Machine::load(name).map_err(|e| e.to_string())?;
    Ok((m.spec.freq_min_mhz, m.spec.freq_base_mhz))
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    pub quick: bool,
    pub only: Option<Vec<u32>>,
    pub out: PathBuf,
    /// Where the runs run (`Engine::Local { jobs: 0 }`: a thread per CPU).
    pub engine: Engine,
    /// Run each claim not reproduced across the range of its unknown.
    pub bands: bool,
}

/// Claims left out, with the reason.
pub type Skipped = Vec<(u32, String)>;

/// The claims selected by `only` among those this build can run; the ids
/// of those left out because a policy is missing, with the reason.
pub fn select(claims: Vec<Claim>, only: Option<&[u32]>) -> Result<(Vec<Claim>, Skipped), String> {
    let ids: Vec<u32> = claims.iter().map(|c| c.id).collect();
    if let Some(only) = only {
        if only.is_empty() {
            return Err("--only needs at least one claim id".into());
        }
        for id in only {
            if !ids.contains(id) {
                return Err(format!(
                    "unknown claim id {id} in --only; valid: {}",
                    ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    let mut keep = Vec::new();
    let mut skipped = Vec::new();
    for c in claims {
        if let Some(only) = only {
            if !only.contains(&c.id) {
                continue;
            }
        }
        match c.missing_policy() {
            Some((p, why)) => {
                if only.is_some() {
                    return Err(format!("claim {} needs policy '{p}', which this build does not have ({why})", c.id));
                }
                skipped.push((c.id, format!("needs policy '{p}', not in this build")));
            }
            None => keep.push(c),
        }
    }
    Ok((keep, skipped))
}

/// The distinct runs of the claims, a run traced if any claim asks for it.
pub fn plan_runs(claims: &[Claim]) -> Vec<(RunSpec, Vec<u32>)> {
    let mut map: BTreeMap<(Cell, u64), (bool, BTreeSet<u32>)> = BTreeMap::new();
    for c in claims {
        for r in &c.runs {
            let e = map.entry((r.cell.clone(), r.seed)).or_default();
            e.0 |= r.trace;
            e.1.insert(c.id);
        }
    }
    map.into_iter()
        .map(|((cell, seed), (trace, ids))| (RunSpec { cell, seed, trace }, ids.into_iter().collect()))
        .collect()
}

fn file_part(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect()
}

/// The trace file of a run, relative to the output directory.
pub fn trace_name(i: usize, s: &RunSpec) -> String {
    format!(
        "traces/{:03}-{}-{}-{}-{}-s{}.wct",
        i,
        file_part(&s.cell.machine),
        file_part(&s.cell.workload),
        file_part(&s.cell.policy),
        file_part(&s.cell.governor),
        s.seed
    )
}

/// The workload of a cell as a run takes it: a replayed trace named by a
/// relative path (the real workloads' traces/real-NAME.wct) is in the output
/// directory, whatever the directory of the process that runs it.
pub(crate) fn job_workload(w: &str, out: &Path) -> String {
    match w.strip_prefix("replay:trace=") {
        Some(p) if Path::new(p).is_relative() => {
            let p = out.join(p);
            format!("replay:trace={}", std::path::absolute(&p).unwrap_or(p).display())
        }
        _ => w.to_string(),
    }
}

/// Caps on each run, so that no run hangs the command: ten simulated
/// minutes and 4 billion events (about 15 minutes of wall time; the full
/// reproduction's largest run, hackbench at Nest's -g 100 -l 10000, makes
/// about 860 million under CFS in about 3.5 minutes, the largest quick run
/// under 2 million). A run that hits one is reported as stopped early and
/// its claims as not reproduced.
pub const MAX_SIM_NS: u64 = 600_000_000_000;
pub const MAX_EVENTS: u64 = 4_000_000_000;

/// Run every spec on `engine` (threads of this process, or Ray), printing
/// one line per finished run to stderr. Results come back in the order of
/// `specs`; a run that did not finish (the engine failed, or `stop` was
/// set) is an error.
pub fn run_all(specs: &[RunSpec], out: &Path, engine: &Engine, stop: &AtomicBool) -> Vec<Done> {
    let n = specs.len();
    let traces: Vec<Option<String>> = specs.iter().enumerate().map(|(i, s)| s.trace.then(|| trace_name(i, s))).collect();
    let jobs: Vec<Job> = specs
        .iter()
        .zip(&traces)
        .map(|(s, t)| Job {
            machine: s.cell.machine.clone(),
            workload: job_workload(&s.cell.workload, out),
            policy: s.cell.policy.clone(),
            governor: s.cell.governor.clone(),
            seed: s.seed,
            limits: Limits { max_sim_ns: MAX_SIM_NS, max_events: MAX_EVENTS },
            trace: t.as_ref().map(|t| out.join(t)),
        })
        .collect();
    let mut slots: Vec<Option<Result<RunReport, String>>> = vec![None; n];
    let mut finished = 0;
    let r = engine.run(&jobs, stop, &mut |i, o| {
        let s = &specs[i];
        let report = o.report.and_then(|v| serde_json::from_value::<RunReport>(v).map_err(|e| format!("an unreadable report: {e}")));
        finished += 1;
        let status = match &report {
            Ok(r) if r.partial.is_some() => " (stopped early)".to_string(),
            Ok(_) => String::new(),
            Err(e) => format!(" FAILED: {e}"),
        };
        eprintln!(
            "[{finished}/{n}] {} {} {} {} seed {} {:.1} s{status}",
            s.cell.machine, s.cell.workload, s.cell.policy, s.cell.governor, s.seed, o.wall_s
        );
        slots[i] = Some(report);
        Ok(())
    });
    let unfinished = match r {
        Err(e) => e,
        Ok(()) => "interrupted".to_string(),
    };
    specs
        .iter()
        .zip(slots)
        .zip(traces)
        .map(|((spec, report), trace)| {
            let report = report.unwrap_or_else(|| Err(format!("not run: {unfinished}")));
            let trace = if report.is_ok() { trace } else { None };
            Done { spec: spec.clone(), report, trace }
        })
        .collect()
}

/// One entry of claims.json.
#[derive(Clone, Debug, Serialize)]
pub struct ClaimResult {
    pub id: u32,
    pub source: String,
    pub claim: String,
    pub paper_value: String,
    pub sim_value: String,
    pub grade: Grade,
    /// True for the grade "reproduced" only.
    pub reproduced: bool,
    pub note: String,
    /// With `--bands`: the claim across its (first) band's range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub band: Option<BandResult>,
    /// With `--bands`: the claim's other bands, where it has more than one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub further_bands: Vec<BandResult>,
}

#[derive(Serialize)]
struct RunEntry<'a> {
    index: usize,
    machine: &'a str,
    workload: &'a str,
    policy: &'a str,
    governor: &'a str,
    seed: u64,
    claims: &'a [u32],
    trace: Option<&'a str>,
    error: Option<&'a str>,
    report: Option<&'a RunReport>,
}

impl<'a> RunEntry<'a> {
    fn of(index: usize, d: &'a Done, claims: &'a [u32], trace: Option<&'a str>) -> RunEntry<'a> {
        RunEntry {
            index,
            machine: &d.spec.cell.machine,
            workload: &d.spec.cell.workload,
            policy: &d.spec.cell.policy,
            governor: &d.spec.cell.governor,
            seed: d.spec.seed,
            claims,
            trace,
            error: d.report.as_ref().err().map(|s| s.as_str()),
            report: d.report.as_ref().ok(),
        }
    }
}

/// Everything a finished reproduction writes.
pub struct Written {
    pub claims: Vec<ClaimResult>,
    pub failed_runs: usize,
}

/// Check that `dir` can be written (create it, write and remove a file).
pub fn prepare_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir.join("traces"))
        .map_err(|e| format!("cannot create output directory {}: {e}: choose a writable --out", dir.display()))?;
    let probe = dir.join(".warmcore-write-test");
    std::fs::write(&probe, b"").map_err(|e| format!("cannot write in {}: {e}: choose a writable --out", dir.display()))?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

pub(crate) fn write_file(path: &Path, s: &str) -> Result<(), String> {
    warmcore_trace::output::write(path, &[], s.as_bytes()).map_err(|e| format!("cannot write {e}"))
}

/// Run the selected claims and write runs.json, claims.json, figures.json
/// and report.md into `opts.out` (figures are drawn afterwards by Python).
/// Why a reproduction stopped: its options (claim ids, the output
/// directory: a usage error) or the work itself.
#[derive(Debug)]
pub enum ReproduceError {
    Options(String),
    Work(String),
}

impl std::fmt::Display for ReproduceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReproduceError::Options(m) | ReproduceError::Work(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ReproduceError {}

impl From<String> for ReproduceError {
    fn from(m: String) -> Self {
        ReproduceError::Work(m)
    }
}

pub fn reproduce(opts: &Options) -> Result<Written, ReproduceError> {
    let setup = Setup::new(opts.quick);
    let (claims, skipped) = select(all_claims(&setup), opts.only.as_deref()).map_err(ReproduceError::Options)?;
    prepare_dir(&opts.out).map_err(ReproduceError::Options)?;
    // The real workloads are part of a whole reproduction; --only picks
    // claims.
    let with_real = opts.only.is_none();
    let recordings = if with_real {
        // A workload spec's parameters end at a comma.
        if std::path::absolute(&opts.out).unwrap_or_else(|_| opts.out.clone()).to_string_lossy().contains(',') {
            return Err(ReproduceError::Options(format!(
                "the path of {} has a comma, which a replayed trace's workload spec cannot hold: choose another --out",
                opts.out.display()
            )));
        }
        real::import_all(&opts.out)?
    } else {
        Vec::new()
    };
    let plan = plan_runs(&claims);
    let mut specs: Vec<RunSpec> = plan.iter().map(|p| p.0.clone()).collect();
    let n_claim_runs = specs.len();
    if with_real {
        specs.extend(real::runs(&setup));
    }
    let t0 = Instant::now();
    let mut done = run_all(&specs, &opts.out, &opts.engine, &AtomicBool::new(false));
    let wall = t0.elapsed().as_secs_f64();
    let real_results = Results::new(done.split_off(n_claim_runs));
    let results = Results::new(done);
    let failed_runs = results.done.iter().chain(&real_results.done).filter(|d| d.report.is_err()).count();

    let entries: Vec<RunEntry> = results
        .done
        .iter()
        .zip(&plan)
        .enumerate()
        .map(|(i, (d, (_, ids)))| RunEntry::of(i, d, ids, d.trace.as_deref()))
        .collect();
    write_file(&opts.out.join("runs.json"), &json(&entries))?;

    let claim_results: Vec<ClaimResult> = claims
        .iter()
        .map(|c| {
            let o = c.evaluate(&results, &setup);
            ClaimResult {
                id: c.id,
                source: c.source.into(),
                claim: c.claim.into(),
                paper_value: c.paper_value.clone(),
                sim_value: o.sim_value,
                grade: o.grade,
                reproduced: o.reproduced,
                note: o.note,
                band: None,
                further_bands: Vec::new(),
            }
        })
        .collect();
    let mut claim_results = claim_results;
    if opts.bands {
        run_bands(&claims, &mut claim_results, &setup, opts)?;
    }
    write_file(&opts.out.join("claims.json"), &json(&claim_results))?;
    let figures = figure_plan(&results);
    write_file(&opts.out.join("figures.json"), &json(&figures))?;
    let real = if with_real {
        let rows = real::rows(&real_results);
        write_file(&opts.out.join("real-workloads.json"), &json(&real_json(&recordings, &rows, &real_results)))?;
        Some(real::section_md(&recordings, &rows))
    } else {
        None
    };
    let mut md = report_md(opts, &claims, &claim_results, &skipped, &results, &figures, wall);
    md.push_str(&bands_md(&claim_results));
    md.push_str(&real.unwrap_or_else(|| {
        "\n## Real workloads\n\nNot run: `--only` selects claims; a reproduction without it replays the project's \
         perf recordings.\n"
            .to_string()
    }));
    write_file(&opts.out.join("report.md"), &md)?;
    Ok(Written { claims: claim_results, failed_runs })
}

/// The bands of the claims not reproduced that declare an unknown, one
/// sweep each, into their results. Ctrl-C stops the one under way and
/// skips the rest; what finished is kept.
fn run_bands(claims: &[Claim], res: &mut [ClaimResult], s: &Setup, opts: &Options) -> Result<(), String> {
    let todo: Vec<(&Claim, &mut ClaimResult)> =
        claims.iter().zip(res.iter_mut()).filter(|(c, r)| !c.bands.is_empty() && r.grade != Grade::Reproduced).collect();
    eprintln!("bands: {} claim(s) not reproduced with an unknown declared", todo.len());
    let stop = AtomicBool::new(false);
    for (c, r) in todo {
        for (n, b) in c.bands.iter().enumerate() {
            let band = bands::run_band(c.id, n, b, s, &opts.out, &opts.engine, &stop)?;
            eprintln!("bands: claim {}: {}", c.id, band_line(&band));
            if r.band.is_none() {
                r.band = Some(band);
            } else {
                r.further_bands.push(band);
            }
        }
    }
    Ok(())
}

fn num(x: f64) -> String {
    if x.abs() >= 100.0 || x == x.round() {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

impl BandResult {
    /// The unknowns, the first first.
    pub fn unknowns(&self) -> Vec<&UnknownResult> {
        std::iter::once(&self.first).chain(&self.second).collect()
    }

    /// Each unknown's range, joined by " by ".
    fn ranges(&self) -> String {
        let r: Vec<String> =
            self.unknowns().iter().map(|u| format!("{} from {} to {} {}", u.unknown, num(u.range[0]), num(u.range[1]), u.unit)).collect();
        r.join(" by ")
    }

    /// The measure at the range's ends, or at the grid's corners.
    fn ends(&self) -> String {
        let end = |x: Option<f64>| x.map_or("-".into(), num);
        match (&self.second, self.at_corners) {
            (Some(w), Some(c)) => {
                let u = &self.first;
                let mut out = Vec::new();
                for (i, v) in u.range.iter().enumerate() {
                    for (j, x) in w.range.iter().enumerate() {
                        out.push(format!("{} ({} {}, {} {})", end(c[i][j]), num(*v), u.unit, num(*x), w.unit));
                    }
                }
                out.join(", ")
            }
            _ => format!("{} {} at the ends", end(self.at_ends[0]), end(self.at_ends[1])),
        }
    }

    /// Where a consistent band meets the paper's figure: " (at ...)".
    fn at(&self) -> String {
        let mut at = Vec::new();
        if let Some(v) = self.at_value {
            at.push(format!("{} {}", num(v), self.first.unit));
        }
        if let (Some(v), Some(w)) = (self.at_second_value, &self.second) {
            at.push(format!("{} {}", num(v), w.unit));
        }
        if at.is_empty() {
            String::new()
        } else {
            format!(" (at {})", at.join(", "))
        }
    }

    fn paper_text(&self) -> String {
        if self.paper[0] == self.paper[1] {
            num(self.paper[0])
        } else {
            format!("{} to {}", num(self.paper[0]), num(self.paper[1]))
        }
    }
}

impl ClaimResult {
    /// Every band of the claim that was run.
    pub fn bands(&self) -> impl Iterator<Item = &BandResult> {
        self.band.iter().chain(&self.further_bands)
    }
}

/// A band in one line: the band, the paper's figure and the verdict.
pub fn band_line(b: &BandResult) -> String {
    let whole = b.band.map_or("none".into(), |[lo, hi]| format!("{} to {}", num(lo), num(hi)));
    let mut s = format!("{}: {}, band {}; paper {}: {}{}", b.ranges(), b.ends(), whole, b.paper_text(), b.verdict.label(), b.at());
    if let Some(m) = &b.missing {
        s.push_str(&format!("; missing: {m}"));
    }
    s
}

/// report.md's section of the bands.
pub fn bands_md(res: &[ClaimResult]) -> String {
    let with: Vec<(&ClaimResult, &BandResult)> = res.iter().flat_map(|r| r.bands().map(move |b| (r, b))).collect();
    if with.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\n## Bands\n\nEach claim not reproduced, run across the plausible range of the unknown it hangs on (its source \
         beside it; the range is never fitted to the paper's figure), three seeds a point; with two unknowns, over the \
         grid of their points. *consistent under a stated assumption*: the paper's figure lies inside the band of \
         simulated values, at the value of the unknown given; *outside the model's range*: no value in the range gives \
         it.\n\n\
         | claim | unknown | parameter | range | model | measure | at the range's ends | band | paper | verdict |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (r, b) in &with {
        let each = |f: &dyn Fn(&UnknownResult) -> String| b.unknowns().iter().map(|u| f(u)).collect::<Vec<_>>().join("; ");
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {}{} |",
            r.id,
            md_cell(&each(&|u| u.unknown.clone())),
            md_cell(&each(&|u| u.parameter.clone())),
            each(&|u| format!("{} to {} {}", num(u.range[0]), num(u.range[1]), u.unit)),
            each(&|u| num(u.model_value)),
            md_cell(&b.measure),
            md_cell(&b.ends()),
            b.band.map_or("-".into(), |[lo, hi]| format!("{} to {}", num(lo), num(hi))),
            b.paper_text(),
            b.verdict.label(),
            b.at(),
        );
    }
    for (r, b) in &with {
        let pts: Vec<String> = b
            .points
            .iter()
            .map(|p| {
                let mut at = format!("{} {}", num(p.value), b.first.unit);
                if let (Some(v), Some(w)) = (p.second_value, &b.second) {
                    at.push_str(&format!(", {} {}", num(v), w.unit));
                }
                match (p.sim, &p.error) {
                    (Some(x), _) => format!("{at}: {}", num(x)),
                    (None, e) => format!("{at}: failed ({})", e.as_deref().unwrap_or("")),
                }
            })
            .collect();
        // The unknown is named just before; with two, each source says whose.
        let sources: Vec<String> = match &b.second {
            None => vec![b.first.source.clone()],
            Some(_) => b.unknowns().iter().map(|u| format!("{}: {}", u.unknown, u.source)).collect(),
        };
        let _ = writeln!(
            s,
            "\nClaim {}: {}. Source of the range{}: {} Points: {}.{} Runs: {}/results.parquet.",
            r.id,
            b.unknowns().iter().map(|u| u.unknown.as_str()).collect::<Vec<_>>().join(" by "),
            if b.second.is_some() { "s" } else { "" },
            sources.join(" "),
            pts.join("; "),
            b.missing.as_ref().map_or(String::new(), |m| format!(" Missing from the model: {m}.")),
            b.sweep
        );
    }
    s
}

/// DIR/real-workloads.json.
#[derive(Serialize)]
struct RealJson<'a> {
    governor: &'a str,
    recordings: &'a [real::ImportedRecording],
    /// A row per recording and machine, CFS and Nest side by side.
    real_workloads: &'a [real::Row],
    /// Every run, as in runs.json.
    runs: Vec<RunEntry<'a>>,
}

fn real_json<'a>(recordings: &'a [real::ImportedRecording], rows: &'a [real::Row], r: &'a Results) -> RealJson<'a> {
    let runs = r
        .done
        .iter()
        .enumerate()
        .map(|(i, d)| RunEntry::of(i, d, &[], None))
        .collect();
    RealJson { governor: real::GOVERNOR, recordings, real_workloads: rows, runs }
}

fn json<T: Serialize>(v: &T) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// A figure for python/warmcore/figures.py to draw.
#[derive(Clone, Debug, Serialize)]
pub struct Figure {
    /// "freq" (per-core frequency over time), "underload" (per 4 ms
    /// interval), "speedup" (bars relative to CFS).
    pub kind: &'static str,
    pub file: String,
    pub title: String,
    /// freq and underload: one series per traced run.
    pub series: Vec<Series>,
    /// speedup: groups of bars.
    pub groups: Vec<BarGroup>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Series {
    pub label: String,
    pub trace: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct BarGroup {
    pub label: String,
    /// Indices into runs.json of the baseline's runs.
    pub baseline: Vec<usize>,
    pub bars: Vec<Bar>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Bar {
    pub label: String,
    pub runs: Vec<usize>,
}

fn traced(r: &Results, pick: impl Fn(&Cell) -> bool) -> Vec<(&Cell, &str)> {
    r.done
        .iter()
        .filter(|d| pick(&d.spec.cell))
        .filter_map(|d| d.trace.as_deref().map(|t| (&d.spec.cell, t)))
        .collect()
}

/// Which figures the runs allow: Fewer Cores Figures 1 and 7 (frequency of
/// each core over time for the fork/wait chain, CFS and S_move), Nest
/// Figure 3 (underload, CFS and Nest), Nest Figure 5 (speedups).
pub fn figure_plan(r: &Results) -> Vec<Figure> {
    let mut figs = Vec::new();
    let freq = traced(r, claims::is_freq_figure);
    if !freq.is_empty() {
        let c = freq[0].0;
        figs.push(Figure {
            kind: "freq",
            file: "fig-freq.png".into(),
            title: format!("Frequency of each core over time: {} on {} ({})", c.workload, c.machine, c.governor),
            series: freq.iter().map(|(c, t)| Series { label: c.policy.clone(), trace: t.to_string() }).collect(),
            groups: vec![],
        });
    }
    let under = traced(r, claims::is_underload_figure);
    if !under.is_empty() {
        let c = under[0].0;
        figs.push(Figure {
            kind: "underload",
            file: "fig-underload.png".into(),
            title: format!("Underload per 4 ms interval: {} on {} ({})", c.workload, c.machine, c.governor),
            series: under.iter().map(|(c, t)| Series { label: c.policy.clone(), trace: t.to_string() }).collect(),
            groups: vec![],
        });
    }
    // Speedup bars: every (machine, workload, governor) with a cfs baseline
    // and other policies, except the timer-count experiment.
    let mut groups: BTreeMap<(String, String, String), BTreeMap<String, Vec<usize>>> = BTreeMap::new();
    for (i, d) in r.done.iter().enumerate() {
        if d.report.as_ref().map_or(true, |x| x.partial.is_some()) || d.spec.cell.policy.contains("timers_only") {
            continue;
        }
        let c = &d.spec.cell;
        groups
            .entry((c.machine.clone(), c.workload.clone(), c.governor.clone()))
            .or_default()
            .entry(c.policy.clone())
            .or_default()
            .push(i);
    }
    let bar_groups: Vec<BarGroup> = groups
        .into_iter()
        .filter(|(_, p)| p.contains_key("cfs") && p.len() > 1)
        .map(|((m, w, g), mut p)| {
            let baseline = p.remove("cfs").unwrap_or_default();
            BarGroup {
                label: format!("{}\n{}\n{}", claims::short_machine(&m), claims::short_workload(&w), g),
                baseline,
                bars: p.into_iter().map(|(label, runs)| Bar { label, runs }).collect(),
            }
        })
        .collect();
    if !bar_groups.is_empty() {
        figs.push(Figure {
            kind: "speedup",
            file: "fig-speedup.png".into(),
            title: "Improvement relative to CFS with the same governor (higher is better)".into(),
            series: vec![],
            groups: bar_groups,
        });
    }
    figs
}

fn fmt_opt(x: Option<f64>, prec: usize) -> String {
    match x {
        Some(v) => format!("{v:.prec$}"),
        None => "-".into(),
    }
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[allow(clippy::too_many_arguments)]
fn report_md(
    opts: &Options,
    claims: &[Claim],
    res: &[ClaimResult],
    skipped: &[(u32, String)],
    results: &Results,
    figures: &[Figure],
    wall: f64,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# warmcore reproduce{}{}\n",
        if opts.quick { " --quick" } else { "" },
        if opts.bands { " --bands" } else { "" }
    );
    let _ = writeln!(s, "{GRADING}\n");
    let count = |g: Grade| res.iter().filter(|r| r.grade == g).count();
    let _ = writeln!(
        s,
        "The papers' claims, re-run in warmcore's simulator on the modelled machines: {} runs in {:.1} s of wall time. \
         Of {} claims, {} reproduced, {} direction only, {} not reproduced, {} not tested.\n",
        results.done.len(),
        wall,
        res.len(),
        count(Grade::Reproduced),
        count(Grade::DirectionOnly),
        count(Grade::NotReproduced),
        count(Grade::NotTested),
    );
    let _ = writeln!(
        s,
        "Policies `slocal`, `smove` and `nest` are the simulator's models of the papers' kernel patches, built on its \
         model of the Linux fair class; the checks use them. Beside each, `scx:NAME` is the sched_ext program that \
         `warmcore sched` loads (crates/sched/src/bpf/main.bpf.c), run by the simulator on the same cell: the \
         scheduler a user runs. They differ: the program's base is per-CPU vtime queues with idle CPUs pulling \
         waiting work, not the fair class with its load balancing; S_move's timer is one per waker CPU in the \
         program (a placement while it is busy goes to the chosen CPU at once), one per task in the model; Nest's \
         program adds a fork hint (a fork/wait chain returns to its two cores), counts impatience, falls back and \
         keeps cores warm in its own ways (warmer threads, not idle-loop spinning); and under schedutil every CPU \
         running the program is asked for its top frequency, since the program sets no performance target \
         (docs/sched-ext-in-the-simulator.md).\n"
    );
    let _ = writeln!(s, "| id | claim | paper | simulator | grade |");
    let _ = writeln!(s, "|---|---|---|---|---|");
    for r in res {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            r.id,
            md_cell(&r.claim),
            md_cell(&r.paper_value),
            md_cell(&r.sim_value),
            if r.reproduced { r.grade.label().to_string() } else { format!("**{}**", r.grade.label()) }
        );
    }
    for (id, why) in skipped {
        let _ = writeln!(s, "\nClaim {id} was not run: it {why}.");
    }
    if !figures.is_empty() {
        let _ = writeln!(s, "\n## Figures\n");
        for f in figures {
            let _ = writeln!(s, "- [{}]({}): {}", f.file, f.file, f.title);
        }
    }
    for (c, r) in claims.iter().zip(res) {
        let _ = writeln!(s, "\n## Claim {}: {}\n", c.id, c.claim);
        let _ = writeln!(s, "Source: {}. Paper: {}.\n", c.source, c.paper_value);
        let _ = writeln!(
            s,
            "Simulator: {}. Grade: {}.\n\n{}\n",
            r.sim_value,
            r.grade.label(),
            r.note
        );
        let cells: BTreeSet<&Cell> = c.runs.iter().map(|r| &r.cell).collect();
        let _ = writeln!(
            s,
            "| machine | workload | policy | governor | runs | metric (mean) | time s | energy J | underload/s | busy below base | inversions |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|");
        for cell in cells {
            let n = results.done.iter().filter(|d| &d.spec.cell == cell).count();
            let ok = results.reports(cell).is_ok();
            let metric = results.reports(cell).ok().map(|r| r[0].metric.name.clone()).unwrap_or_default();
            let below = machine_freqs(&cell.machine).ok().and_then(|(_, base)| results.fraction_below(cell, base).ok());
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {}{} | {} {} | {} | {} | {} | {} | {} |",
                cell.machine,
                md_cell(&cell.workload),
                md_cell(&cell.policy),
                cell.governor,
                n,
                if ok { "" } else { " (failed)" },
                fmt_opt(results.metric(cell).ok(), 3),
                metric,
                fmt_opt(results.seconds(cell).ok(), 4),
                fmt_opt(results.energy(cell).ok(), 2),
                fmt_opt(results.underload(cell).ok(), 1),
                below.map(|b| format!("{:.0} %", b * 100.0)).unwrap_or_else(|| "-".into()),
                fmt_opt(results.inversions(cell).ok(), 0),
            );
        }
        // The speedup bars are relative to CFS: a claim is in them only
        // with a CFS run beside another policy's.
        let has_cfs = |cell: &Cell| c.runs.iter().any(|r| r.cell == cell.with_policy("cfs"));
        let figs: Vec<&Figure> = figures
            .iter()
            .filter(|f| {
                f.series.iter().any(|x| c.runs.iter().any(|r| r.trace && x.trace.contains(&file_part(&r.cell.workload))))
                    || (f.kind == "speedup" && c.runs.iter().any(|r| r.cell.policy != "cfs" && has_cfs(&r.cell)))
            })
            .collect();
        if !figs.is_empty() {
            let _ = writeln!(s);
            for f in figs {
                let _ = writeln!(s, "![{}]({})", f.title, f.file);
            }
        }
    }
    s
}

#[cfg(test)]
mod tests;
