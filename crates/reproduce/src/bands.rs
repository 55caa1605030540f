// SPDX-License-Identifier: GPL-2.0-only
//! Bands: a claim the simulator does not reproduce hangs on a number no
//! public source gives (a work item's length, a ramp's speed). Its module
//! declares that unknown, the parameter through which the simulator takes
//! it and a plausible range with the range's source; `reproduce --bands`
//! runs the claim's cells at points across the range (a sweep of
//! crates/sweep, three seeds a point) and says whether the paper's figure
//! lies inside the band of simulated values: "consistent under a stated
//! assumption", at which value of the unknown, or "outside the model's
//! range", naming the mechanism the model lacks where it is known. The
//! range comes from its source, never from the paper's figure.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use serde::Serialize;
use warmcore_sim::{Machine, RunReport};
use warmcore_sweep::spec::{Axis, Kind, Plan, Run, DEFAULT_METRICS};
use warmcore_sweep::store::{run_key, Store};
use warmcore_sweep::Engine;

use crate::{Cell, Done, Results, RunSpec, Setup, MAX_EVENTS, MAX_SIM_NS};

/// Seeds of each point of a band.
pub const BAND_SEEDS: usize = 3;

/// Where the simulator takes an unknown.
#[derive(Clone, Copy, Debug)]
pub enum Param {
    /// `key=value` in the spec of each cell's workload named `workload`.
    Workload { workload: &'static str, key: &'static str },
    /// `key=value` in the workload's spec with `keep` scaled so that
    /// `key` x `keep` stays as the cell has it: a split of the same threads
    /// (schbench's message threads against their workers).
    Split { workload: &'static str, key: &'static str, keep: &'static str },
    /// A field of the machine file of the preset `machine`, a TOML path
    /// (`dvfs.hw_tau_up_ms`; an idle state by its name, `idle.C6.power_w`).
    Machine { machine: &'static str, key: &'static str },
}

impl Param {
    /// The sweep's column of the unknown.
    pub fn column(&self) -> String {
        match self {
            Param::Workload { key, .. } | Param::Split { key, .. } => format!("workload.{key}"),
            Param::Machine { key, .. } => format!("machine.{key}"),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Param::Workload { workload, key } => format!("workload parameter `{workload}:{key}`"),
            Param::Split { workload, key, keep } => {
                format!("workload parameter `{workload}:{key}`, `{keep}` scaled to keep {key} x {keep}")
            }
            Param::Machine { machine, key } => format!("machine field `{key}` of {machine}"),
        }
    }
}

/// A number a claim hangs on that no public source gives.
#[derive(Clone, Debug)]
pub struct Unknown {
    pub name: &'static str,
    pub param: Param,
    pub unit: &'static str,
    /// The value the model runs with.
    pub model: f64,
    /// The points run, increasing; the first and last are the range's ends.
    pub points: &'static [f64],
    /// Where the range comes from (or that nothing bounds it).
    pub source: &'static str,
}

impl Unknown {
    pub const fn new(
        name: &'static str,
        param: Param,
        unit: &'static str,
        model: f64,
        points: &'static [f64],
        source: &'static str,
    ) -> Unknown {
        Unknown { name, param, unit, model, points, source }
    }

    fn ends(&self) -> (f64, f64) {
        (self.points[0], self.points[self.points.len() - 1])
    }
}

/// A claim's band: its unknowns (one, or two run as a grid), and the
/// simulated quantity compared with the paper's figure.
pub struct Band {
    pub unknowns: Vec<Unknown>,
    /// What `measure` gives, with its unit.
    pub measure_name: &'static str,
    /// The paper's figure as an interval (both ends equal for one figure),
    /// written from the claim's named figures.
    pub paper: (f64, f64),
    /// The mechanism the model lacks, when the figure lies outside the band
    /// and the claim's note knows it.
    pub missing: &'static str,
    /// The cells `measure` reads.
    pub cells: fn(&Setup) -> Vec<Cell>,
    pub measure: fn(&Results, &Setup) -> Result<f64, String>,
}

/// The most unknowns a band runs: two make a grid, more would make a
/// sweep too long for `make bench`.
pub const MAX_UNKNOWNS: usize = 2;

impl Band {
    pub fn new(
        unknowns: &[Unknown],
        measure_name: &'static str,
        paper: (f64, f64),
        cells: fn(&Setup) -> Vec<Cell>,
        measure: fn(&Results, &Setup) -> Result<f64, String>,
    ) -> Band {
        Band { unknowns: unknowns.to_vec(), measure_name, paper, missing: "", cells, measure }
    }

    /// The band with the mechanism the model lacks named.
    pub fn missing(self, missing: &'static str) -> Band {
        Band { missing, ..self }
    }

    /// The points of the band: every combination of the unknowns' points,
    /// the first unknown's outermost.
    pub fn grid(&self) -> Vec<Vec<f64>> {
        self.unknowns.iter().fold(vec![vec![]], |acc, u| {
            acc.iter().flat_map(|g| u.points.iter().map(move |&v| [g.as_slice(), &[v]].concat())).collect()
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Verdict {
    #[serde(rename = "consistent under a stated assumption")]
    Consistent,
    #[serde(rename = "outside the model's range")]
    Outside,
    /// No point of the band finished.
    #[serde(rename = "not measured")]
    NotMeasured,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Consistent => "consistent under a stated assumption",
            Verdict::Outside => "outside the model's range",
            Verdict::NotMeasured => "not measured",
        }
    }
}

/// One point of a band: the unknowns' values and the measure's mean over
/// the seeds, or why it has none.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub value: f64,
    /// The second unknown's value, in a band of two.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_value: Option<f64>,
    pub sim: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An unknown as claims.json gives it.
#[derive(Clone, Debug, Serialize)]
pub struct UnknownResult {
    pub unknown: String,
    pub parameter: String,
    pub unit: String,
    pub range: [f64; 2],
    pub model_value: f64,
    pub source: String,
}

impl UnknownResult {
    fn of(u: &Unknown) -> UnknownResult {
        let (lo, hi) = u.ends();
        UnknownResult {
            unknown: u.name.into(),
            parameter: u.param.describe(),
            unit: u.unit.into(),
            range: [lo, hi],
            model_value: u.model,
            source: u.source.into(),
        }
    }
}

/// The `band` field of claims.json.
#[derive(Clone, Debug, Serialize)]
pub struct BandResult {
    /// The (first) unknown.
    #[serde(flatten)]
    pub first: UnknownResult,
    /// The second unknown, in a band of two.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second: Option<UnknownResult>,
    pub measure: String,
    pub paper: [f64; 2],
    pub seeds: usize,
    pub points: Vec<Point>,
    /// The measure at the range's low and high end (in a band of two, at
    /// the grid's corners where both are low and both high).
    pub at_ends: [Option<f64>; 2],
    /// In a band of two, the measure at the grid's four corners: the first
    /// unknown low, then high, each with the second low, then high.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_corners: Option<[[Option<f64>; 2]; 2]>,
    /// The lowest and highest simulated value over the points.
    pub band: Option<[f64; 2]>,
    pub verdict: Verdict,
    /// Where the verdict is consistent: the (first) unknown's value at which
    /// the band meets the paper's figure (linear between the points).
    pub at_value: Option<f64>,
    /// In a band of two, the second unknown's value there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_second_value: Option<f64>,
    /// Where it is outside: the mechanism the model lacks, if known.
    pub missing: Option<String>,
    /// The sweep's directory, relative to the output directory.
    pub sweep: String,
}

/// Judge a band's points against the paper's interval.
pub fn judge(unknowns: &[Unknown], measure: &str, paper: (f64, f64), missing: &str, points: Vec<Point>, sweep: String) -> BandResult {
    let ok: Vec<&Point> = points.iter().filter(|p| p.sim.is_some()).collect();
    let at = |v: f64, w: Option<f64>| points.iter().find(|p| p.value == v && p.second_value == w).and_then(|p| p.sim);
    let (lo, hi) = unknowns[0].ends();
    let second = unknowns.get(1).map(Unknown::ends);
    let band = (!ok.is_empty()).then(|| {
        let sims = ok.iter().filter_map(|p| p.sim);
        [sims.clone().fold(f64::INFINITY, f64::min), sims.fold(f64::NEG_INFINITY, f64::max)]
    });
    let (p_lo, p_hi) = (paper.0.min(paper.1), paper.0.max(paper.1));
    let (verdict, at_point) = match band {
        None => (Verdict::NotMeasured, None),
        Some([min, max]) if p_lo <= max && p_hi >= min => {
            // A simulated value both in the band and in the paper's interval.
            let t = ((p_lo + p_hi) / 2.0).clamp(min, max);
            (Verdict::Consistent, meeting(&ok, t))
        }
        Some(_) => (Verdict::Outside, None),
    };
    BandResult {
        first: UnknownResult::of(&unknowns[0]),
        second: unknowns.get(1).map(UnknownResult::of),
        measure: measure.into(),
        paper: [paper.0, paper.1],
        seeds: BAND_SEEDS,
        at_ends: [at(lo, second.map(|s| s.0)), at(hi, second.map(|s| s.1))],
        at_corners: second.map(|(s_lo, s_hi)| [[at(lo, Some(s_lo)), at(lo, Some(s_hi))], [at(hi, Some(s_lo)), at(hi, Some(s_hi))]]),
        band,
        verdict,
        at_value: at_point.map(|p| p.0),
        at_second_value: at_point.and_then(|p| p.1),
        missing: (verdict == Verdict::Outside && !missing.is_empty()).then(|| missing.to_string()),
        points,
        sweep,
    }
}

/// Where the band reaches `t`: along the first unknown, linear between the
/// points, at the lowest value of the second unknown where it does; else
/// the point nearest `t` (the second unknown carries the band across it).
fn meeting(ok: &[&Point], t: f64) -> Option<(f64, Option<f64>)> {
    let mut seconds: Vec<Option<f64>> = Vec::new();
    for p in ok {
        if !seconds.contains(&p.second_value) {
            seconds.push(p.second_value);
        }
    }
    seconds.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    for w in seconds {
        let row: Vec<(f64, f64)> = ok.iter().filter(|p| p.second_value == w).filter_map(|p| p.sim.map(|s| (p.value, s))).collect();
        if let Some(v) = crossing(&row, t) {
            return Some((v, w));
        }
    }
    ok.iter()
        .filter_map(|p| p.sim.map(|s| (p, (s - t).abs())))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(p, _)| (p.value, p.second_value))
}

/// The first value of the unknown at which the piecewise-linear band
/// reaches `t`.
fn crossing(ok: &[(f64, f64)], t: f64) -> Option<f64> {
    if let Some(p) = ok.iter().find(|p| p.1 == t) {
        return Some(p.0);
    }
    ok.windows(2).find_map(|w| {
        let ((v0, s0), (v1, s1)) = (w[0], w[1]);
        ((s0 - t) * (s1 - t) < 0.0).then(|| v0 + (t - s0) / (s1 - s0) * (v1 - v0))
    })
}

/// `spec` with `key=value`, replacing the key's value if it has one.
pub fn set_param(spec: &str, key: &str, value: f64) -> String {
    let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
    let mut kv: Vec<String> =
        params.split(',').filter(|p| !p.is_empty() && p.split('=').next() != Some(key)).map(str::to_string).collect();
    kv.push(format!("{key}={value}"));
    format!("{name}:{}", kv.join(","))
}

/// The value of `key` in `spec`, if it gives one.
fn get_param(spec: &str, key: &str) -> Option<f64> {
    spec.split_once(':')?.1.split(',').find_map(|kv| kv.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
}

/// The preset `machine`'s file with each `(key, value)` of `fields` set,
/// as TOML text, checked as the simulator would load it.
pub fn derive_machine(machine: &str, fields: &[(&str, f64)]) -> Result<String, String> {
    let (_, text) = warmcore_sim::machine::PRESETS
        .iter()
        .find(|p| p.0 == machine)
        .ok_or_else(|| format!("band: {machine} is not a preset"))?;
    let mut doc: toml::Table = toml::from_str(text).map_err(|e| format!("band: {machine}: {e}"))?;
    for &(key, value) in fields {
        let missing = || format!("band: {machine} has no field `{key}`");
        let seg: Vec<&str> = key.split('.').collect();
        let in_array = matches!(doc.get(seg[0]), Some(toml::Value::Array(_)));
        let field = match (seg.as_slice(), in_array) {
            // An array of tables (the idle states): its entry by name.
            ([array, name, field], true) => doc
                .get_mut(*array)
                .and_then(|v| v.as_array_mut())
                .and_then(|a| {
                    a.iter_mut()
                        .filter_map(|v| v.as_table_mut())
                        .find(|t| t.get("name").and_then(|n| n.as_str()) == Some(name))
                })
                .and_then(|t| t.get_mut(*field)),
            ([table, field], _) => doc.get_mut(*table).and_then(|t| t.as_table_mut()).and_then(|t| t.get_mut(*field)),
            ([field], _) => doc.get_mut(*field),
            _ => None,
        }
        .ok_or_else(missing)?;
        *field = match field {
            toml::Value::Integer(_) => toml::Value::Integer(value.round() as i64),
            _ => toml::Value::Float(value),
        };
    }
    let text = toml::to_string(&doc).map_err(|e| format!("band: {machine}: {e}"))?;
    Machine::from_toml(&text, machine).map_err(|e| format!("band: {machine}: {e}"))?;
    Ok(text)
}

/// A cell with the unknowns at `values`: its workload's spec with each
/// workload parameter, its machine replaced by `machine` (the derived file
/// of this point) where a machine field is one of them.
pub fn apply(cell: &Cell, unknowns: &[Unknown], values: &[f64], machine: Option<&Path>) -> Result<Cell, String> {
    let mut c = cell.clone();
    for (u, &v) in unknowns.iter().zip(values) {
        match u.param {
            Param::Workload { workload, key } if c.workload.split(':').next() == Some(workload) => {
                c.workload = set_param(&c.workload, key, v);
            }
            Param::Split { workload, key, keep } if c.workload.split(':').next() == Some(workload) => {
                let need = |k: &str| get_param(&c.workload, k).ok_or_else(|| format!("band: {} gives no `{k}`", c.workload));
                let threads = need(key)? * need(keep)?;
                let per = threads / v;
                if per < 1.0 || per.fract() != 0.0 {
                    return Err(format!("band: {} cannot be split into {key}={v}: {threads} is not a multiple", c.workload));
                }
                c.workload = set_param(&set_param(&c.workload, key, v), keep, per);
            }
            Param::Machine { machine: preset, .. } if c.machine == preset => {
                let path = machine.ok_or_else(|| format!("band: no machine file derived from {preset}"))?;
                c.machine = path.display().to_string();
            }
            _ => {}
        }
    }
    Ok(c)
}

/// Run `band` of claim `id` across its unknowns' grid as a sweep in
/// OUT/bands/claim-ID (OUT/bands/claim-ID-N for its N-th band from the
/// second on; resumed if started before), and judge it.
pub fn run_band(id: u32, n: usize, band: &Band, s: &Setup, out: &Path, engine: &Engine, stop: &AtomicBool) -> Result<BandResult, String> {
    let us = &band.unknowns;
    if us.is_empty() || us.len() > MAX_UNKNOWNS {
        return Err(format!("band of claim {id}: {} unknowns, a band takes 1 to {MAX_UNKNOWNS}", us.len()));
    }
    let rel = if n == 0 { format!("bands/claim-{id}") } else { format!("bands/claim-{id}-{}", n + 1) };
    let dir = out.join(&rel);
    let grid = band.grid();
    // Each point's machine file, where a machine field is an unknown.
    let presets: Vec<&str> = us
        .iter()
        .filter_map(|u| match u.param {
            Param::Machine { machine, .. } => Some(machine),
            _ => None,
        })
        .collect();
    if presets.windows(2).any(|w| w[0] != w[1]) {
        return Err(format!("band of claim {id}: its machine fields are of two machines; a band derives one"));
    }
    let mut machines = Vec::new();
    for values in &grid {
        let Some(preset) = presets.first() else {
            machines.push(None);
            continue;
        };
        let fields: Vec<(&str, f64)> = us
            .iter()
            .zip(values)
            .filter_map(|(u, &v)| match u.param {
                Param::Machine { key, .. } => Some((key, v)),
                _ => None,
            })
            .collect();
        let mdir = out.join("bands/machines");
        std::fs::create_dir_all(&mdir).map_err(|e| format!("cannot create {}: {e}", mdir.display()))?;
        let name: Vec<String> = fields.iter().map(|(k, v)| format!("{k}-{v}")).collect();
        let path = std::path::absolute(mdir.join(format!("{preset}-{}.toml", name.join("-")))).map_err(|e| e.to_string())?;
        crate::write_file(&path, &derive_machine(preset, &fields)?)?;
        machines.push(Some(path));
    }
    let cells = (band.cells)(s);
    let seeds: Vec<u64> = s.seeds.iter().copied().take(BAND_SEEDS).collect();
    // Each run with the cell its measure reads it as.
    let mut runs = Vec::new();
    let mut origin = Vec::new();
    for (i, (values, machine)) in grid.iter().zip(&machines).enumerate() {
        for c in &cells {
            let a = apply(c, us, values, machine.as_deref())?;
            for &seed in &seeds {
                let name = |x: &str| x.split(':').next().unwrap_or(x).to_string();
                runs.push(Run {
                    machine: a.machine.clone(),
                    workload: crate::job_workload(&a.workload, out),
                    workload_name: name(&a.workload),
                    policy: a.policy.clone(),
                    policy_name: name(&a.policy),
                    governor: a.governor.clone(),
                    seed,
                    params: values.iter().enumerate().map(|(k, v)| (k, v.to_string())).collect(),
                });
                origin.push((i, c.clone(), seed));
            }
        }
    }
    let plan = Plan {
        runs,
        axes: us.iter().map(|u| Axis { column: u.param.column(), kind: Kind::Float }).collect(),
        metrics: DEFAULT_METRICS.iter().map(|m| m.to_string()).collect(),
        limits: warmcore_sim::Limits { max_sim_ns: MAX_SIM_NS, max_events: MAX_EVENTS },
    };
    let over: Vec<String> = us
        .iter()
        .map(|u| {
            let pts: Vec<String> = u.points.iter().map(|v| v.to_string()).collect();
            format!("{} ({}) at {} {}", u.name, u.param.column(), pts.join(", "), u.unit)
        })
        .collect();
    eprintln!("bands: claim {id}: {}, {} runs, into {}", over.join(" by "), plan.runs.len(), dir.display());
    // A directory of another setup's band is started over.
    warmcore_sweep::sweep(&plan, &dir, engine, false, true, stop).map_err(|e| e.to_string())?;
    let store = Store::open(&dir)?;
    let mut by_point: Vec<Vec<Done>> = vec![Vec::new(); grid.len()];
    for (run, (i, cell, seed)) in plan.runs.iter().zip(origin) {
        let report = match store.done.get(&run_key(run, &plan)) {
            Some(rec) => match (&rec.report, &rec.error) {
                (Some(v), _) => serde_json::from_value::<RunReport>(v.clone()).map_err(|e| format!("an unreadable report: {e}")),
                (None, e) => Err(e.clone().unwrap_or_else(|| "failed".into())),
            },
            None => Err("not run: interrupted".into()),
        };
        by_point[i].push(Done { spec: RunSpec { cell, seed, trace: false }, report, trace: None });
    }
    let points = grid
        .iter()
        .zip(by_point)
        .map(|(values, done)| {
            let (value, second_value) = (values[0], values.get(1).copied());
            match (band.measure)(&Results::new(done), s) {
                Ok(x) if x.is_finite() => Point { value, second_value, sim: Some(x), error: None },
                Ok(x) => Point { value, second_value, sim: None, error: Some(format!("the measure is {x}")) },
                Err(e) => Point { value, second_value, sim: None, error: Some(e) },
            }
        })
        .collect();
    Ok(judge(us, band.measure_name, band.paper, band.missing, points, rel))
}
