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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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
    /// A field of the machine file of the preset `machine`, a TOML path
    /// (`dvfs.hw_tau_up_ms`; an idle state by its name, `idle.C6.power_w`).
    Machine { machine: &'static str, key: &'static str },
}

impl Param {
    /// The sweep's column of the unknown.
    pub fn column(&self) -> String {
        match self {
            Param::Workload { key, .. } => format!("workload.{key}"),
            Param::Machine { key, .. } => format!("machine.{key}"),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Param::Workload { workload, key } => format!("workload parameter `{workload}:{key}`"),
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

/// A claim's band: its unknown, and the simulated quantity compared with
/// the paper's figure.
pub struct Band {
    pub unknown: Unknown,
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

/// One point of a band: the unknown's value and the measure's mean over the
/// seeds, or why it has none.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub value: f64,
    pub sim: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The `band` field of claims.json.
#[derive(Clone, Debug, Serialize)]
pub struct BandResult {
    pub unknown: String,
    pub parameter: String,
    pub unit: String,
    pub range: [f64; 2],
    pub model_value: f64,
    pub source: String,
    pub measure: String,
    pub paper: [f64; 2],
    pub seeds: usize,
    pub points: Vec<Point>,
    /// The measure at the range's low and high end.
    pub at_ends: [Option<f64>; 2],
    /// The lowest and highest simulated value over the points.
    pub band: Option<[f64; 2]>,
    pub verdict: Verdict,
    /// Where the verdict is consistent: the unknown's value at which the
    /// band meets the paper's figure (linear between the points).
    pub at_value: Option<f64>,
    /// Where it is outside: the mechanism the model lacks, if known.
    pub missing: Option<String>,
    /// The sweep's directory, relative to the output directory.
    pub sweep: String,
}

/// Judge a band's points against the paper's interval.
pub fn judge(unknown: &Unknown, measure: &str, paper: (f64, f64), missing: &str, points: Vec<Point>, sweep: String) -> BandResult {
    let ok: Vec<(f64, f64)> = points.iter().filter_map(|p| p.sim.map(|s| (p.value, s))).collect();
    let end = |v: f64| points.iter().find(|p| p.value == v).and_then(|p| p.sim);
    let (lo, hi) = (unknown.points[0], unknown.points[unknown.points.len() - 1]);
    let band = (!ok.is_empty()).then(|| {
        let min = ok.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let max = ok.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
        [min, max]
    });
    let (p_lo, p_hi) = (paper.0.min(paper.1), paper.0.max(paper.1));
    let (verdict, at_value) = match band {
        None => (Verdict::NotMeasured, None),
        Some([min, max]) if p_lo <= max && p_hi >= min => {
            // A simulated value both in the band and in the paper's interval.
            let t = ((p_lo + p_hi) / 2.0).clamp(min, max);
            (Verdict::Consistent, crossing(&ok, t))
        }
        Some(_) => (Verdict::Outside, None),
    };
    BandResult {
        unknown: unknown.name.into(),
        parameter: unknown.param.describe(),
        unit: unknown.unit.into(),
        range: [lo, hi],
        model_value: unknown.model,
        source: unknown.source.into(),
        measure: measure.into(),
        paper: [paper.0, paper.1],
        seeds: BAND_SEEDS,
        at_ends: [end(lo), end(hi)],
        band,
        verdict,
        at_value,
        missing: (verdict == Verdict::Outside && !missing.is_empty()).then(|| missing.to_string()),
        points,
        sweep,
    }
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

/// The preset `machine`'s file with `key` set to `value`, as TOML text,
/// checked as the simulator would load it.
pub fn derive_machine(machine: &str, key: &str, value: f64) -> Result<String, String> {
    let (_, text) = warmcore_sim::machine::PRESETS
        .iter()
        .find(|p| p.0 == machine)
        .ok_or_else(|| format!("band: {machine} is not a preset"))?;
    let mut doc: toml::Table = toml::from_str(text).map_err(|e| format!("band: {machine}: {e}"))?;
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
    let text = toml::to_string(&doc).map_err(|e| format!("band: {machine}: {e}"))?;
    Machine::from_toml(&text, machine).map_err(|e| format!("band: {machine}: {e}"))?;
    Ok(text)
}

/// A cell with the unknown at `value`: its workload's spec with the
/// parameter, or its machine replaced by the derived file in `machines`.
fn apply(cell: &Cell, param: &Param, value: f64, machines: &BTreeMap<u64, PathBuf>) -> Cell {
    match param {
        Param::Workload { workload, key } if cell.workload.split(':').next() == Some(*workload) => {
            Cell { workload: set_param(&cell.workload, key, value), ..cell.clone() }
        }
        Param::Machine { machine, .. } if cell.machine == *machine => {
            Cell { machine: machines[&value.to_bits()].display().to_string(), ..cell.clone() }
        }
        _ => cell.clone(),
    }
}

/// Run `band` of claim `id` across its unknown's range as a sweep in
/// OUT/bands/claim-ID (resumed if started before), and judge it.
pub fn run_band(id: u32, band: &Band, s: &Setup, out: &Path, engine: &Engine, stop: &AtomicBool) -> Result<BandResult, String> {
    let u = &band.unknown;
    let rel = format!("bands/claim-{id}");
    let dir = out.join(&rel);
    let mut machines = BTreeMap::new();
    if let Param::Machine { machine, key } = u.param {
        let mdir = out.join("bands/machines");
        std::fs::create_dir_all(&mdir).map_err(|e| format!("cannot create {}: {e}", mdir.display()))?;
        for &v in u.points {
            let path = std::path::absolute(mdir.join(format!("{machine}-{key}-{v}.toml"))).map_err(|e| e.to_string())?;
            crate::write_file(&path, &derive_machine(machine, key, v)?)?;
            machines.insert(v.to_bits(), path);
        }
    }
    let cells = (band.cells)(s);
    let seeds: Vec<u64> = s.seeds.iter().copied().take(BAND_SEEDS).collect();
    // Each run with the cell its measure reads it as.
    let mut runs = Vec::new();
    let mut origin = Vec::new();
    for (i, &v) in u.points.iter().enumerate() {
        for c in &cells {
            let a = apply(c, &u.param, v, &machines);
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
                    params: vec![(0, v.to_string())],
                });
                origin.push((i, c.clone(), seed));
            }
        }
    }
    let plan = Plan {
        runs,
        axes: vec![Axis { column: u.param.column(), kind: Kind::Float }],
        metrics: DEFAULT_METRICS.iter().map(|m| m.to_string()).collect(),
        limits: warmcore_sim::Limits { max_sim_ns: MAX_SIM_NS, max_events: MAX_EVENTS },
    };
    eprintln!(
        "bands: claim {id}: {} ({}) at {} {}, {} runs, into {}",
        u.name,
        u.param.column(),
        u.points.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", "),
        u.unit,
        plan.runs.len(),
        dir.display()
    );
    // A directory of another setup's band is started over.
    warmcore_sweep::sweep(&plan, &dir, engine, false, true, stop).map_err(|e| e.to_string())?;
    let store = Store::open(&dir)?;
    let mut by_point: Vec<Vec<Done>> = vec![Vec::new(); u.points.len()];
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
    let points = u
        .points
        .iter()
        .zip(by_point)
        .map(|(&value, done)| match (band.measure)(&Results::new(done), s) {
            Ok(x) if x.is_finite() => Point { value, sim: Some(x), error: None },
            Ok(x) => Point { value, sim: None, error: Some(format!("the measure is {x}")) },
            Err(e) => Point { value, sim: None, error: Some(e) },
        })
        .collect();
    Ok(judge(u, band.measure_name, band.paper, band.missing, points, rel))
}
