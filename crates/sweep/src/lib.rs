// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore sweep`: every combination of a spec's axes is one simulator
//! run; results go to a Parquet table as runs finish; a sweep started again
//! on the same directory runs only what is missing.

pub mod engine;
pub mod spec;
pub mod store;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use warmcore_args::UsageError;

pub use engine::{Engine, Job, Outcome};
pub use spec::Plan;
use store::{run_key, Record, Store};

/// How a sweep ended.
#[derive(Debug)]
pub struct Summary {
    pub total: usize,
    /// Finished before this start, in the same directory.
    pub resumed: usize,
    /// Finished by this start.
    pub ran: usize,
    pub failed: usize,
    /// Stopped at the spec's limit of events or simulated time before their
    /// workload finished (the report's `partial`, not an ejection).
    pub cut: usize,
    pub interrupted: bool,
    pub wall_s: f64,
    /// Mean of each metric by policy, over the plan's finished rows.
    pub table: Vec<(String, usize, Vec<Option<f64>>)>,
    /// The first errors, with their run.
    pub errors: Vec<String>,
}

/// How often results.parquet is rewritten while runs finish.
const TABLE_EVERY: Duration = Duration::from_secs(2);

/// Progress on stderr: a bar on a terminal, else a line every 10 s.
struct Progress {
    bar: ProgressBar,
    plain: bool,
    last_line: Instant,
    t0: Instant,
    total: usize,
}

impl Progress {
    fn new(total: usize) -> Progress {
        let plain = !std::io::IsTerminal::is_terminal(&std::io::stderr());
        let bar = if plain { ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::hidden()) } else { ProgressBar::new(total as u64) };
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} runs {msg} {per_sec} eta {eta}")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        Progress { bar, plain, last_line: Instant::now(), t0: Instant::now(), total }
    }

    fn update(&mut self, done: usize, failed: usize) {
        self.bar.set_position(done as u64);
        self.bar.set_message(if failed > 0 { format!("({failed} failed)") } else { String::new() });
        if self.plain && (self.last_line.elapsed() >= Duration::from_secs(10) || done == self.total) {
            self.last_line = Instant::now();
            let rate = done as f64 / self.t0.elapsed().as_secs_f64().max(1e-9);
            let eta = if rate > 0.0 { (self.total - done) as f64 / rate } else { f64::NAN };
            eprintln!("sweep: {done}/{} runs, {failed} failed, {rate:.2} runs/s, {eta:.0} s left", self.total);
        }
    }
}

/// Run what `plan` has that `dir` lacks on `engine`; stop early when `stop`
/// is set (Ctrl-C), keeping every finished run. A directory that cannot be
/// the sweep's is refused with a [`UsageError`]; other errors are failures.
pub fn sweep(
    plan: &Plan,
    dir: &Path,
    engine: &Engine,
    retry_failed: bool,
    force: bool,
    stop: &AtomicBool,
) -> Result<Summary, Box<dyn std::error::Error + Send + Sync>> {
    let t0 = Instant::now();
    let mut store = Store::open(dir).map_err(UsageError)?;
    store.claim(plan, force).map_err(UsageError)?;
    if store.dropped_lines > 0 {
        eprintln!("sweep: dropped {} unreadable line(s) of {}/runs.jsonl (a run cut short): they run again", store.dropped_lines, dir.display());
    }
    let keys: Vec<String> = plan.runs.iter().map(|r| run_key(r, plan)).collect();
    let is_done = |store: &Store, k: &String| store.done.get(k).is_some_and(|rec| !(retry_failed && rec.error.is_some()));
    // A key listed twice (two entries naming the same run) runs once.
    let mut todo: Vec<usize> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, k) in keys.iter().enumerate() {
        if !is_done(&store, k) && seen.insert(k) {
            todo.push(i);
        }
    }
    let resumed = plan.runs.len() - todo.len();
    let jobs: Vec<Job> = todo
        .iter()
        .map(|&i| {
            let r = &plan.runs[i];
            Job {
                machine: r.machine.clone(),
                workload: r.workload.clone(),
                policy: r.policy.clone(),
                governor: r.governor.clone(),
                seed: r.seed,
                limits: plan.limits,
                trace: None,
            }
        })
        .collect();
    store.write_table(plan, &keys)?;
    let mut progress = Progress::new(plan.runs.len());
    let (mut ran, mut failed) = (0, 0);
    progress.update(resumed, 0);
    let mut last_table = Instant::now();
    engine.run(&jobs, stop, &mut |j, o| {
        let i = todo[j];
        let r = &plan.runs[i];
        let (report, error) = match o.report {
            Ok(v) => (Some(v), None),
            Err(e) => {
                failed += 1;
                (None, Some(e))
            }
        };
        // The simulator's own timing when it reports one, else the engine's.
        let wall_s = report.as_ref().and_then(|v| v["wall_ns"].as_f64()).map_or(o.wall_s, |ns| ns / 1e9);
        store.add(Record {
            key: keys[i].clone(),
            machine: r.machine.clone(),
            workload: r.workload.clone(),
            policy: r.policy.clone(),
            governor: r.governor.clone(),
            seed: r.seed,
            report,
            error,
            wall_s,
            version: store::VERSION.into(),
        })?;
        ran += 1;
        progress.update(resumed + ran, failed);
        if last_table.elapsed() >= TABLE_EVERY {
            store.write_table(plan, &keys)?;
            last_table = Instant::now();
        }
        Ok(())
    })?;
    store.write_table(plan, &keys)?;
    progress.bar.finish_and_clear();
    let interrupted = stop.load(std::sync::atomic::Ordering::SeqCst) && resumed + ran < plan.runs.len();
    Ok(summarize(plan, &keys, &store, resumed, ran, interrupted, t0.elapsed().as_secs_f64()))
}

fn summarize(plan: &Plan, keys: &[String], store: &Store, resumed: usize, ran: usize, interrupted: bool, wall_s: f64) -> Summary {
    let mut by_policy: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
    let mut errors = Vec::new();
    let (mut failed, mut cut) = (0, 0);
    for (r, k) in plan.runs.iter().zip(keys) {
        if let Some(rec) = store.done.get(k) {
            by_policy.entry(r.policy.as_str()).or_default().push(rec);
            if rec.report.as_ref().is_some_and(|x| x["partial"].is_string() && x["ejected"] != true) {
                cut += 1;
            }
            if let Some(e) = &rec.error {
                failed += 1;
                if errors.len() < 5 {
                    errors.push(format!("{} {} {} {} seed {}: {e}", r.machine, r.workload, r.policy, r.governor, r.seed));
                }
            }
        }
    }
    let table = by_policy
        .into_iter()
        .map(|(p, recs)| {
            let means = plan
                .metrics
                .iter()
                .map(|m| {
                    let v: Vec<f64> = recs.iter().filter_map(|rec| rec.report.as_ref().and_then(|x| store::metric(x, m))).collect();
                    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
                })
                .collect();
            (p.to_string(), recs.len(), means)
        })
        .collect();
    Summary { total: plan.runs.len(), resumed, ran, failed, cut, interrupted, wall_s, table, errors }
}
