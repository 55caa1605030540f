// SPDX-License-Identifier: GPL-2.0-only
//! A sweep's specification (a TOML file) and the runs it expands to.
//!
//! ```toml
//! machines = ["xeon-gold-5218-2s"]          # a name, a machine file, or a list
//! governors = "schedutil"
//! seeds = { from = 1, to = 3 }              # or a list
//! metrics = ["makespan_ns", "energy_j"]     # paths into `warmcore sim --json`
//! [[workloads]]
//! name = "hackbench"
//! groups = [2, 4, 8]                        # a list or a range is an axis
//! [[policies]]
//! name = "smove"
//! delay_us = { from = 10, to = 200, step = 10 }
//! ```
//!
//! Every combination of machine, workload, policy, governor and seed is one
//! run. Everything is checked before any run starts, and an error names the
//! line of the file it comes from.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use toml::{Spanned, Value};
use warmcore_sim::dvfs::Frequency;
use warmcore_sim::{Limits, Machine};

/// The report's fields a metric may start with (`warmcore sim --json`);
/// tests check this list against a real report.
pub const REPORT_FIELDS: &[&str] = &[
    "machine",
    "workload",
    "policy",
    "governor",
    "seed",
    "makespan_ns",
    "energy_j",
    "energy_per_socket_j",
    "underload_per_s",
    "overload_per_s",
    "freq_residency",
    "migrations",
    "cpus_used",
    "wakeup_latency_ns",
    "inversions",
    "work_conservation_violation_ns",
    "sim_events",
    "wall_ns",
    "partial",
    "ejected",
    "metric",
    "workload_params",
    "policy_stats",
    "placements",
    "placement_scans",
];

/// Kept when the spec names no metrics.
pub const DEFAULT_METRICS: &[&str] = &[
    "makespan_ns",
    "metric.value",
    "energy_j",
    "underload_per_s",
    "overload_per_s",
    "migrations",
    "work_conservation_violation_ns",
    "sim_events",
];

/// Caps on every run unless the spec sets its own: two simulated minutes
/// and 50 million events.
pub const DEFAULT_LIMITS: Limits = Limits { max_sim_ns: 120_000_000_000, max_events: 50_000_000 };

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    machines: Option<Spanned<Value>>,
    governors: Option<Spanned<Value>>,
    seeds: Option<Spanned<Value>>,
    metrics: Option<Vec<Spanned<String>>>,
    /// Simulated seconds per run at most.
    max_time: Option<Spanned<f64>>,
    max_events: Option<Spanned<u64>>,
    #[serde(default)]
    workloads: Vec<BTreeMap<Spanned<String>, Spanned<Value>>>,
    #[serde(default)]
    policies: Vec<BTreeMap<Spanned<String>, Spanned<Value>>>,
}

/// The kind of values a parameter axis holds: its column's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Int,
    Float,
    Text,
}

/// A parameter that varies: a column `workload.NAME` or `policy.NAME`.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub column: String,
    pub kind: Kind,
}

/// One simulation of the sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub machine: String,
    pub workload: String,
    pub workload_name: String,
    pub policy: String,
    pub policy_name: String,
    pub governor: String,
    pub seed: u64,
    /// The value of each parameter axis this run has (by index in `Plan::axes`).
    pub params: Vec<(usize, String)>,
}

/// Everything a sweep runs and keeps.
#[derive(Clone, Debug)]
pub struct Plan {
    pub runs: Vec<Run>,
    pub axes: Vec<Axis>,
    pub metrics: Vec<String>,
    pub limits: Limits,
}

/// A workload or policy with its parameters expanded: the spec string
/// (`name:k=v,...`), the base name, and the varying parameters' values.
struct Variant {
    spec: String,
    name: String,
    varying: Vec<(String, String)>,
}

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn line(&self, span: std::ops::Range<usize>) -> usize {
        self.text[..span.start.min(self.text.len())].matches('\n').count() + 1
    }
    fn err<T>(&self, span: std::ops::Range<usize>, msg: impl std::fmt::Display) -> Result<T, String> {
        Err(format!("{}:{}: {msg}", self.file, self.line(span)))
    }
}

/// A scalar as the simulator's parameter strings take it: booleans as on/off.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Integer(i) => Some(i.to_string()),
        Value::Float(f) => Some(f.to_string()),
        Value::Boolean(b) => Some(if *b { "on" } else { "off" }.into()),
        _ => None,
    }
}

/// The values a key takes: a scalar (one), a list, or a range
/// `{ from, to, step }` (inclusive; step 1 unless given).
fn values(cx: &Ctx, key: &str, v: &Spanned<Value>) -> Result<Vec<String>, String> {
    let span = v.span();
    match v.get_ref() {
        Value::Array(items) => {
            if items.is_empty() {
                return cx.err(span, format!("{key} is an empty list"));
            }
            items
                .iter()
                .map(|x| scalar(x).map_or_else(|| cx.err(span.clone(), format!("{key}: a list of strings or numbers, not {x}")), Ok))
                .collect()
        }
        Value::Table(t) => range(cx, key, span, t),
        x => scalar(x).map(|s| vec![s]).map_or_else(|| cx.err(span, format!("{key}: unsupported value {x}")), Ok),
    }
}

fn range(cx: &Ctx, key: &str, span: std::ops::Range<usize>, t: &toml::Table) -> Result<Vec<String>, String> {
    if let Some(k) = t.keys().find(|k| !["from", "to", "step"].contains(&k.as_str())) {
        return cx.err(span, format!("{key}: a range takes from, to and step, not '{k}'"));
    }
    let (Some(from), Some(to)) = (t.get("from"), t.get("to")) else {
        return cx.err(span, format!("{key}: a range needs from and to, e.g. {{ from = 10, to = 200, step = 10 }}"));
    };
    let step = t.get("step");
    const MAX: usize = 100_000;
    match (from, to, step) {
        (Value::Integer(a), Value::Integer(b), None | Some(Value::Integer(_))) => {
            let s = step.and_then(Value::as_integer).unwrap_or(1);
            if s <= 0 || b < a {
                return cx.err(span, format!("{key}: a range needs from <= to and a positive step"));
            }
            if ((b - a) / s) as usize >= MAX {
                return cx.err(span, format!("{key}: the range has more than {MAX} values"));
            }
            Ok((*a..=*b).step_by(s as usize).map(|x| x.to_string()).collect())
        }
        _ => {
            let num = |v: &Value| v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
            let (Some(a), Some(b), Some(s)) = (num(from), num(to), step.map_or(Some(1.0), num)) else {
                return cx.err(span, format!("{key}: a range's from, to and step are numbers"));
            };
            if !(s > 0.0 && b >= a && a.is_finite() && b.is_finite()) {
                return cx.err(span, format!("{key}: a range needs from <= to and a positive step"));
            }
            let n = ((b - a) / s + 1e-9).floor() as usize + 1;
            if n > MAX {
                return cx.err(span, format!("{key}: the range has more than {MAX} values"));
            }
            // Each value from its index, so that rounding does not accumulate.
            Ok((0..n).map(|i| (a + s * i as f64).to_string()).collect())
        }
    }
}

/// Expand `[[workloads]]` or `[[policies]]` entries into their variants,
/// each checked by `check` on the first machine; a failure names the line
/// of the parameter the simulator's message quotes, else the entry's name.
fn variants(
    cx: &Ctx,
    what: &str,
    one: &str,
    entries: &[BTreeMap<Spanned<String>, Spanned<Value>>],
    check: &dyn Fn(&str) -> Result<(), String>,
) -> Result<Vec<Variant>, String> {
    let mut out = Vec::new();
    for entry in entries {
        let Some((name_key, name_v)) = entry.iter().find(|(k, _)| k.get_ref() == "name") else {
            let span = entry.keys().next().map_or(0..0, |k| k.span());
            return cx.err(span, format!("a [[{what}]] entry needs a name"));
        };
        let names = values(cx, "name", name_v)?;
        let name_span = name_key.span();
        // Every parameter's values; a key with more than one is an axis.
        let mut params: Vec<(&Spanned<String>, Vec<String>)> = Vec::new();
        for (k, v) in entry {
            if k.get_ref() != "name" {
                params.push((k, values(cx, k.get_ref(), v)?));
            }
        }
        for name in &names {
            let mut combos: Vec<Vec<String>> = vec![vec![]];
            for (_, vals) in &params {
                combos = combos
                    .into_iter()
                    .flat_map(|c| vals.iter().map(move |v| [c.clone(), vec![v.clone()]].concat()))
                    .collect();
            }
            for combo in combos {
                let kv: Vec<String> = params.iter().zip(&combo).map(|((k, _), v)| format!("{}={v}", k.get_ref())).collect();
                let spec = if kv.is_empty() { name.clone() } else { format!("{name}:{}", kv.join(",")) };
                if let Err(e) = check(&spec) {
                    let span = params
                        .iter()
                        .find(|(k, _)| e.contains(&format!("'{}'", k.get_ref())))
                        .or_else(|| params.iter().find(|(k, _)| names_word(&e, k.get_ref())))
                        .map_or(name_span.clone(), |(k, _)| k.span());
                    return cx.err(span, format!("{one} {spec}: {e}"));
                }
                let varying = params
                    .iter()
                    .zip(&combo)
                    .filter(|((_, vals), _)| vals.len() > 1)
                    .map(|((k, _), v)| (k.get_ref().clone(), v.clone()))
                    .collect();
                out.push(Variant { spec, name: name.clone(), varying });
            }
        }
    }
    if out.is_empty() {
        return cx.err(0..0, format!("the spec has no [[{what}]] entry"));
    }
    Ok(out)
}

/// Whether `msg` has `word` as a word of its own (a parameter named in
/// the simulator's message, quoted or not).
fn names_word(msg: &str, word: &str) -> bool {
    let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    msg.match_indices(word).any(|(i, _)| !part(msg[..i].chars().next_back()) && !part(msg[i + word.len()..].chars().next()))
}

fn kind_of(values: &[&str]) -> Kind {
    if values.iter().all(|v| v.parse::<i64>().is_ok()) {
        Kind::Int
    } else if values.iter().all(|v| v.parse::<f64>().is_ok()) {
        Kind::Float
    } else {
        Kind::Text
    }
}

impl Plan {
    /// Read and check a spec file; `file` names it in messages.
    pub fn load(path: &Path) -> Result<Plan, String> {
        Plan::load_with(path, &[])
    }

    /// Read and check a spec file, with some of its lists replaced
    /// (`machines=a,b`, `governors=...`, `seeds=1,2`).
    pub fn load_with(path: &Path, set: &[String]) -> Result<Plan, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Plan::parse(&path.display().to_string(), &text, set)
    }

    pub fn parse(file: &str, text: &str, set: &[String]) -> Result<Plan, String> {
        let cx = Ctx { file, text };
        let spec: SpecFile = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(String::new(), |s| format!("{}:", cx.line(s)));
            format!("{file}:{line} {}", e.message().trim())
        })?;
        let mut sets: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for kv in set {
            match kv.split_once('=') {
                Some((k @ ("machines" | "governors" | "seeds"), v)) if !v.is_empty() => {
                    sets.insert(k, v.split(',').map(|x| x.trim().to_string()).collect());
                }
                _ => return Err(format!("--set takes machines=..., governors=... or seeds=... (comma-separated), not '{kv}'")),
            }
        }
        // Each value with where it comes from, for messages.
        let list = |key: &str, v: &Option<Spanned<Value>>, default: &str| -> Result<Vec<(String, String)>, String> {
            if let Some(vals) = sets.get(key) {
                return Ok(vals.iter().map(|x| (x.clone(), format!("--set {key}"))).collect());
            }
            match v {
                Some(v) => Ok(values(&cx, key, v)?.into_iter().map(|s| (s, format!("{file}:{}", cx.line(v.span())))).collect()),
                None => Ok(vec![(default.to_string(), file.to_string())]),
            }
        };
        let mut machines = Vec::new();
        for (m, at) in list("machines", &spec.machines, "default")? {
            let loaded = Machine::load(&m).map_err(|e| format!("{at}: {e}"))?;
            machines.push((m, loaded));
        }
        // A governor with an EPP (powersave:epp=power) must suit every
        // machine's driver.
        let mut governors = Vec::new();
        for (g, at) in list("governors", &spec.governors, "powersave")? {
            for (_, m) in &machines {
                Frequency::parse(&g, m).map_err(|e| format!("{at}: {e}"))?;
            }
            governors.push(g);
        }
        let mut seeds = Vec::new();
        for (s, at) in list("seeds", &spec.seeds, "1")? {
            seeds.push(s.parse::<u64>().map_err(|_| format!("{at}: seeds are whole numbers, not '{s}'"))?);
        }
        let first = &machines[0].1;
        let workloads = variants(&cx, "workloads", "workload", &spec.workloads, &|w| {
            warmcore_sim::load_workload(w, first).map(|_| ()).map_err(|e| e.to_string())
        })?;
        let policies = variants(&cx, "policies", "policy", &spec.policies, &|p| {
            warmcore_sim::make_policy(p, first).map(|_| ()).map_err(|e| e.to_string())
        })?;
        let metrics = match &spec.metrics {
            None => DEFAULT_METRICS.iter().map(|s| s.to_string()).collect(),
            Some(ms) => {
                let mut out = Vec::new();
                for m in ms {
                    let head = m.get_ref().split('.').next().unwrap_or("");
                    if !REPORT_FIELDS.contains(&head) {
                        return cx.err(
                            m.span(),
                            format!("unknown metric '{}'; a metric is a path into the report of `warmcore sim --json`, starting with one of {}", m.get_ref(), REPORT_FIELDS.join(", ")),
                        );
                    }
                    out.push(m.get_ref().clone());
                }
                out
            }
        };
        let mut limits = DEFAULT_LIMITS;
        if let Some(t) = &spec.max_time {
            if !(*t.get_ref() > 0.0 && t.get_ref().is_finite()) {
                return cx.err(t.span(), "max_time is a positive number of simulated seconds");
            }
            limits.max_sim_ns = (t.get_ref() * 1e9) as u64;
        }
        if let Some(e) = &spec.max_events {
            if *e.get_ref() == 0 {
                return cx.err(e.span(), "max_events is a positive number");
            }
            limits.max_events = *e.get_ref();
        }

        // The parameter axes, in order of first appearance; then the runs.
        let mut axes: Vec<Axis> = Vec::new();
        let mut axis_values: Vec<Vec<String>> = Vec::new();
        let mut column = |col: String, v: &str| -> usize {
            let i = axes.iter().position(|a| a.column == col).unwrap_or_else(|| {
                axes.push(Axis { column: col, kind: Kind::Text });
                axis_values.push(Vec::new());
                axes.len() - 1
            });
            axis_values[i].push(v.to_string());
            i
        };
        let w_params: Vec<Vec<(usize, String)>> = workloads
            .iter()
            .map(|w| w.varying.iter().map(|(k, v)| (column(format!("workload.{k}"), v), v.clone())).collect())
            .collect();
        let p_params: Vec<Vec<(usize, String)>> = policies
            .iter()
            .map(|p| p.varying.iter().map(|(k, v)| (column(format!("policy.{k}"), v), v.clone())).collect())
            .collect();
        for (a, vals) in axes.iter_mut().zip(&axis_values) {
            a.kind = kind_of(&vals.iter().map(String::as_str).collect::<Vec<_>>());
        }
        let mut runs = Vec::new();
        for (m, _) in &machines {
            for (w, wp) in workloads.iter().zip(&w_params) {
                for (p, pp) in policies.iter().zip(&p_params) {
                    for g in &governors {
                        for &seed in &seeds {
                            runs.push(Run {
                                machine: m.clone(),
                                workload: w.spec.clone(),
                                workload_name: w.name.clone(),
                                policy: p.spec.clone(),
                                policy_name: p.name.clone(),
                                governor: g.clone(),
                                seed,
                                params: [wp.clone(), pp.clone()].concat(),
                            });
                        }
                    }
                }
            }
        }
        Ok(Plan { runs, axes, metrics, limits })
    }
}
