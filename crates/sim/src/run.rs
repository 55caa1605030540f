// SPDX-License-Identifier: GPL-2.0-only
//! One simulation run from names and parameters to a report.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use warmcore_trace::output::Output;
use warmcore_trace::stats::{Analyzer, Stats};
use warmcore_trace::{CpuEvent, Event, EventTable, Header, Provenance, Writer, WriterOptions};

use crate::engine::{Engine, Limits, Sink};
use crate::dvfs::Frequency;
use crate::{parse_spec, Machine, SimError};

#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Preset name or path to a machine file.
    pub machine: String,
    /// `name[:key=value,...]`.
    pub workload: String,
    pub policy: String,
    pub governor: String,
    pub seed: u64,
    pub trace: Option<PathBuf>,
    pub limits: Limits,
}

impl RunConfig {
    pub fn new(machine: &str, workload: &str, policy: &str, governor: &str, seed: u64) -> RunConfig {
        RunConfig {
            machine: machine.into(),
            workload: workload.into(),
            policy: policy.into(),
            governor: governor.into(),
            seed,
            trace: None,
            limits: Limits::default(),
        }
    }
}

/// The workload's own measure.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct WorkloadMetric {
    pub name: String,
    /// "lower" or "higher" is better.
    pub better: String,
    pub value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentiles: Option<serde_json::Value>,
}

/// What `warmcore sim --json` prints. underload, overload, frequency
/// residency, migrations, wake-up latency, inversions and work-conservation
/// violations come from the shared trace analysis (warmcore_trace::stats),
/// fed with the run's events, so that they agree with `warmcore trace stats`
/// on the run's trace.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunReport {
    pub machine: String,
    pub workload: String,
    pub policy: String,
    pub governor: String,
    pub seed: u64,
    pub makespan_ns: u64,
    pub energy_j: f64,
    pub energy_per_socket_j: Vec<f64>,
    pub underload_per_s: Option<f64>,
    pub overload_per_s: Option<f64>,
    pub freq_residency: Option<serde_json::Value>,
    pub migrations: u64,
    /// CPUs that ran a task (the trace analysis's `cpus_used`).
    #[serde(default)]
    pub cpus_used: u32,
    pub wakeup_latency_ns: Option<serde_json::Value>,
    pub inversions: Option<serde_json::Value>,
    pub work_conservation_violation_ns: u64,
    pub sim_events: u64,
    pub wall_ns: u64,
    /// Why the run stopped early, if it did (the result is then partial).
    pub partial: Option<String>,
    /// A sched_ext policy's scheduler was ejected (the reason, with its
    /// simulated time, is in `partial`).
    pub ejected: bool,
    pub metric: WorkloadMetric,
    pub workload_params: Vec<(String, String)>,
    pub policy_stats: serde_json::Value,
    /// Placements (select_cpu calls) and the CPUs the policy looked at in
    /// them, which the placing CPU paid for (docs/model.md, The kernel's
    /// own time).
    #[serde(default)]
    pub placements: u64,
    #[serde(default)]
    pub placement_scans: u64,
}

/// Feeds every event to the shared trace analysis and, when asked, to a
/// trace file that keeps the order in which they happened within one
/// nanosecond (`Writer::keep_push_order`), so that the report and
/// `warmcore trace stats` on the file see the same sequence: the engine's.
struct StatsSink {
    writer: Option<(Writer<File>, Output)>,
    analysis: Analysis,
    /// Events not yet sent to the analysis, in the engine's order.
    pending: Vec<CpuEvent>,
}

/// Events handed to the analysis at once: enough that the hand-over (a
/// wake-up of its thread) costs little beside analysing them; at 1,024 it
/// cost more than the thread gained.
const BATCH: usize = 16384;
/// Batches sent and not yet analysed, at most: the engine waits for the
/// analysis rather than run further ahead, so memory stays flat.
const IN_FLIGHT: usize = 4;

/// The trace analysis on a thread of its own, beside the engine's: the
/// engine hands it batches of events in its order and never reads its
/// state before the end, so the report is the same as on one thread, and
/// a run takes the longer of the two instead of their sum. The batches'
/// buffers come back for the engine to fill again.
struct Analysis {
    batches: Option<std::sync::mpsc::SyncSender<Vec<CpuEvent>>>,
    emptied: std::sync::mpsc::Receiver<Vec<CpuEvent>>,
    worker: Option<std::thread::JoinHandle<Analyzer>>,
}

const ANALYSIS_STOPPED: &str = "the trace analysis's thread stopped before the run ended";

impl Analysis {
    fn start(mut analyzer: Analyzer) -> Result<Analysis, SimError> {
        let (batches, todo) = std::sync::mpsc::sync_channel::<Vec<CpuEvent>>(IN_FLIGHT);
        let (give_back, emptied) = std::sync::mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("warmcore-analysis".into())
            .spawn(move || {
                for mut batch in todo {
                    for e in &batch {
                        analyzer.push(e);
                    }
                    batch.clear();
                    // The engine may have finished and gone: the buffer is then dropped.
                    let _ = give_back.send(batch);
                }
                analyzer
            })
            .map_err(|e| SimError::Output(format!("starting the trace analysis's thread: {e}")))?;
        Ok(Analysis { batches: Some(batches), emptied, worker: Some(worker) })
    }

    /// Hand `batch` over, and an empty buffer back in its place.
    fn send(&mut self, batch: &mut Vec<CpuEvent>) -> Result<(), String> {
        let next = self.emptied.try_recv().unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let full = std::mem::replace(batch, next);
        match &self.batches {
            Some(tx) if tx.send(full).is_ok() => Ok(()),
            _ => Err(ANALYSIS_STOPPED.into()),
        }
    }

    /// The analyzer once every batch sent is analysed.
    fn finish(&mut self) -> Result<Analyzer, String> {
        self.batches = None;
        match self.worker.take().map(|w| w.join()) {
            Some(Ok(a)) => Ok(a),
            _ => Err(ANALYSIS_STOPPED.into()),
        }
    }
}

impl StatsSink {
    // Inlined into `emit_fields`, so that the event goes from registers
    // into `pending`: the writer reads it back from there, which leaves
    // `ev` unused after the push (used again, it was copied through the
    // stack, a stall at each event).
    #[inline(always)]
    fn keep(&mut self, cpu: u32, ev: Event) -> Result<(), String> {
        self.pending.push(CpuEvent { cpu, ev });
        let written = match (&mut self.writer, self.pending.last()) {
            (Some((w, _)), Some(e)) => w.push(e.cpu, e.ev).map_err(|e| e.to_string()),
            _ => Ok(()),
        };
        if self.pending.len() == BATCH {
            self.analysis.send(&mut self.pending)?;
        }
        written
    }
}

impl Sink for StatsSink {
    fn emit_fields(&mut self, cpu: u32, ts: u64, pid: u32, id: u32, a: u32, b: u32) -> Result<(), String> {
        self.keep(cpu, Event::new(ts, pid, id, a, b))
    }
    fn emit(&mut self, cpu: u32, ev: Event) -> Result<(), String> {
        self.keep(cpu, ev)
    }
    fn note_process(&mut self, pid: u32, ppid: u32, comm: &str, ts: u64) {
        if let Some((w, _)) = &mut self.writer {
            if ppid == 0 && !comm.is_empty() {
                w.note_comm(pid, comm, ts);
            } else {
                w.note_process(pid, ppid, comm, ts);
            }
        }
    }
    fn finish(mut self: Box<Self>, _end: u64) -> Result<serde_json::Value, String> {
        if !self.pending.is_empty() {
            self.analysis.send(&mut self.pending)?;
        }
        if let Some((w, out)) = self.writer.take() {
            w.finish().and_then(|_| out.commit()).map_err(|e| e.to_string())?;
        }
        let stats = self.analysis.finish()?.finish();
        serde_json::to_value(&stats).map_err(|e| e.to_string())
    }
}

/// Improvement in percent, higher is better whatever the metric's direction
/// (Fewer Cores, More Hertz, section 4: "higher is always better"; Nest,
/// section 5.1), for `compare` and `reproduce`.
pub fn improvement_pct(base: f64, x: f64, lower_is_better: bool) -> f64 {
    if base == 0.0 {
        return 0.0;
    }
    if lower_is_better {
        (base - x) / base * 100.0
    } else {
        (x - base) / base * 100.0
    }
}

fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((q / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The workload a spec names (`name[:key=value,...]`, a workload file, a
/// replayed trace or an rt-app file), built for `machine`.
pub fn load_workload(spec: &str, machine: &Machine) -> Result<crate::program::Workload, SimError> {
    // A workload file whose path has a ':' (a directory named for a time or
    // a host): the whole argument, before it is read as NAME:PARAMS.
    if spec.ends_with(".toml") || (spec.contains('/') && std::path::Path::new(spec).is_file()) {
        return crate::wfile::load(spec);
    }
    let (wname, wparams) = parse_spec(spec);
    Ok(if wname.ends_with(".toml") || wname.contains('/') {
        if !wparams.is_empty() {
            return Err(SimError::Input(format!("workload file {wname} takes no parameters")));
        }
        crate::wfile::load(wname)?
    } else if wname == "replay" {
        match wparams.as_slice() {
            [(k, f)] if k == "trace" => crate::replay::load(f)?,
            _ => return Err(SimError::Input("workload replay takes one parameter: replay:trace=FILE.wct".into())),
        }
    } else if wname == "rtapp" {
        match wparams.as_slice() {
            [(k, f)] if k == "file" => crate::rtapp::load(f)?,
            _ => return Err(SimError::Input("workload rtapp takes one parameter: rtapp:file=F.json".into())),
        }
    } else if wname == "hunt" {
        crate::hunt::named(&wparams, machine)?
    } else {
        crate::workloads::build(wname, &wparams, machine)?
    })
}

/// Resolve names, run, and report.
pub fn run(cfg: &RunConfig) -> Result<RunReport, SimError> {
    let t0 = Instant::now();
    let mut machine = Machine::load(&cfg.machine)?;
    let freq = Frequency::parse(&cfg.governor, &machine)?;
    freq.apply(&mut machine);
    let governor = freq.governor;
    let policy = crate::policies::make_policy(&cfg.policy, &machine)?;
    let workload = load_workload(&cfg.workload, &machine)?;
    let metric_spec = workload.metric.clone();
    let params = workload.params.clone();
    let header = Header {
        machine: machine.trace_machine(),
        events: EventTable::default(),
        provenance: Provenance::Simulator {
            config: serde_json::json!({
                "machine": machine.spec.name,
                "workload": cfg.workload,
                "policy": cfg.policy,
                "governor": freq.name(),
            }),
            seed: cfg.seed,
        },
        wall_clock_start: None,
    };
    let writer = match &cfg.trace {
        Some(path) => {
            // Never over one of the run's inputs: a replayed trace, a
            // workload, rt-app or machine file (crate warmcore_trace::output).
            let (wname, wparams) = parse_spec(&cfg.workload);
            let mut inputs = vec![Path::new(&cfg.machine), Path::new(wname)];
            inputs.extend(wparams.iter().map(|(_, v)| Path::new(v)));
            // An output it may not write is refused as bad input, before the run.
            let out = Output::create(path, &inputs).map_err(|e| SimError::Input(format!("writing the trace: {e}")))?;
            let file = out.file().map_err(|e| SimError::Output(e.to_string()))?;
            let w = Writer::new(file, out.name(), &header, WriterOptions::default())
                .map_err(|e| SimError::Output(e.to_string()))?
                .keep_push_order();
            Some((w, out))
        }
        None => None,
    };
    let analysis = Analysis::start(Analyzer::new(&header))?;
    let sink: Box<dyn Sink> = Box::new(StatsSink { writer, analysis, pending: Vec::with_capacity(BATCH) });
    let mname = machine.spec.name.clone();
    let mut engine = Engine::new(machine, governor, policy, workload, cfg.seed, sink)?;
    let out = engine.run(cfg.limits)?;
    let stats = engine.into_sink().finish(out.makespan_ns).map_err(SimError::Output)?;
    let stats: Stats = serde_json::from_value(stats).map_err(|e| SimError::Output(e.to_string()))?;

    let metric = match metric_spec {
        Some(spec) => {
            let mut s = out.samples.clone();
            s.sort_unstable();
            let unit = if spec.name.ends_with("_us") { 1000.0 } else { 1.0 };
            let pct = serde_json::json!({
                "p50": percentile(&s, 50.0) as f64 / unit,
                "p90": percentile(&s, 90.0) as f64 / unit,
                "p99": percentile(&s, 99.0) as f64 / unit,
                "p99.5": percentile(&s, 99.5) as f64 / unit,
                "p99.9": percentile(&s, 99.9) as f64 / unit,
                "count": s.len(),
            });
            let value = match spec.kind {
                crate::program::MetricKind::Latency => {
                    if spec.name.ends_with("_us") {
                        // schbench reports the 99th percentile.
                        percentile(&s, 99.0) as f64 / unit
                    } else {
                        s.iter().sum::<u64>() as f64 / s.len().max(1) as f64
                    }
                }
                crate::program::MetricKind::Throughput => {
                    out.measures as f64 / (out.makespan_ns.max(1) as f64 * 1e-9)
                }
            };
            let better = if spec.kind == crate::program::MetricKind::Throughput { "higher" } else { "lower" };
            let percentiles = if spec.name.ends_with("_us") { Some(pct) } else { None };
            WorkloadMetric { name: spec.name, better: better.into(), value, percentiles }
        }
        None => WorkloadMetric {
            name: "completion_time_ns".into(),
            better: "lower".into(),
            value: out.makespan_ns as f64,
            percentiles: None,
        },
    };
    Ok(RunReport {
        machine: mname,
        workload: cfg.workload.clone(),
        policy: cfg.policy.clone(),
        governor: freq.name(),
        seed: cfg.seed,
        makespan_ns: out.makespan_ns,
        energy_j: out.energy_j,
        energy_per_socket_j: out.energy_per_socket_j,
        underload_per_s: Some(stats.underload_per_s),
        overload_per_s: Some(stats.overload_per_s),
        freq_residency: stats.freq_residency.as_ref().map(|b| serde_json::to_value(b).unwrap_or_default()),
        migrations: stats.migrations,
        cpus_used: stats.cpus_used,
        wakeup_latency_ns: stats.wakeup_latency_ns.map(|p| serde_json::to_value(p).unwrap_or_default()),
        inversions: stats.inversions.map(|i| serde_json::to_value(i).unwrap_or_default()),
        work_conservation_violation_ns: stats.work_conservation_violation_ns,
        sim_events: out.trace_events,
        wall_ns: t0.elapsed().as_nanos() as u64,
        partial: out.partial,
        ejected: out.ejected,
        metric,
        workload_params: params,
        policy_stats: out.policy_stats,
        placements: out.placements,
        placement_scans: out.placement_scans,
    })
}
