// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore sweep`: a parameter study of the simulator (warmcore-sweep).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Result};
use clap::Args;
use warmcore_sweep::{sweep, Engine, Plan};

#[derive(Args)]
pub struct SweepArgs {
    /// The study: a TOML file naming machines, workloads and policies with
    /// their parameters (a list or a range { from, to, step } is an axis),
    /// governors, seeds and the metrics to keep (docs/sweep.md; examples in
    /// workloads/sweeps/).
    pub spec: PathBuf,
    /// Output directory: results.parquet (one row per run, rewritten as runs
    /// finish) and runs.jsonl (every finished run's whole report). Started
    /// again on the same directory, the sweep runs only what is missing.
    #[arg(long)]
    pub out: PathBuf,
    /// Runs at a time (0: one per CPU); with --ray auto, the local Ray
    /// instance's CPUs.
    #[arg(long, default_value_t = 0, value_parser = warmcore_args::count::<usize>(0, 4096))]
    pub jobs: usize,
    /// Run on Ray: `auto` starts a local instance, HOST:PORT joins a running
    /// cluster (the address `ray start --head` prints).
    #[arg(long, value_name = "auto|ADDRESS")]
    pub ray: Option<String>,
    /// A wheel of the warmcore Python package to ship to the Ray cluster's
    /// workers (`maturin build --release` in python/).
    #[arg(long, requires = "ray")]
    pub ray_wheel: Option<PathBuf>,
    /// Run again the runs that failed before, instead of keeping their errors.
    #[arg(long)]
    pub retry_failed: bool,
    /// Start over on a directory that holds the results of another spec
    /// (its runs.jsonl is emptied and results.parquet removed).
    #[arg(long)]
    pub force: bool,
    /// Replace a list of the spec for this sweep: machines, governors or
    /// seeds, comma-separated (--set machines=default --set seeds=1,2).
    #[arg(long = "set", value_name = "KEY=VALUES")]
    pub set: Vec<String>,
}

/// The engine `--ray` and `--jobs` ask for (shared with `warmcore reproduce`).
pub fn engine(ray: Option<&str>, jobs: usize, wheel: Option<PathBuf>) -> Result<Engine> {
    Ok(match ray {
        None => Engine::Local { jobs },
        Some(a) => {
            if a.is_empty() {
                bail!(warmcore_args::UsageError::new("--ray takes `auto` or a cluster's HOST:PORT"));
            }
            let python = crate::view::python()?;
            let address = (a != "auto").then(|| a.to_string());
            Engine::Ray { address, jobs, python, wheel }
        }
    })
}

/// Stops a sweep cleanly at Ctrl-C or SIGTERM: finished runs are kept. A
/// second one ends the process at once: the journal still holds every
/// finished run.
pub fn interrupt_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    crate::signals::on_interrupt(move |sig| {
        if s.swap(true, Ordering::SeqCst) {
            crate::signals::exit(sig);
        }
        eprintln!("sweep: stopping; finished runs are kept (Ctrl-C again to quit now)");
    });
    stop
}

pub fn run(a: SweepArgs) -> Result<()> {
    let plan = Plan::load_with(&a.spec, &a.set).map_err(warmcore_args::UsageError::new)?;
    let engine = engine(a.ray.as_deref(), a.jobs, a.ray_wheel.clone())?;
    run_plan(&plan, &a.out, &engine, a.retry_failed, a.force, true)
}

/// Runs what `out` lacks of `plan`, then prints the means by policy (when
/// `means`: a study of one workload) and where the results are (shared
/// with `warmcore field`, which ranks per workload instead).
pub fn run_plan(plan: &Plan, out: &Path, engine: &Engine, retry_failed: bool, force: bool, means: bool) -> Result<()> {
    let stop = interrupt_flag();
    let s = sweep(plan, out, engine, retry_failed, force, &stop).map_err(|e| anyhow::anyhow!(e))?;
    let results = out.join("results.parquet");
    // The means by policy: the first metrics, as many as fit a line.
    let shown: Vec<&String> = plan.metrics.iter().take(4).collect();
    let table = if means { &s.table[..] } else { &[] };
    if !table.is_empty() {
        print!("{:<48} {:>5}", "policy", "runs");
        for m in &shown {
            print!(" {:>16}", truncate(m, 16));
        }
        println!();
    }
    for (p, n, means) in table {
        print!("{:<48} {:>5}", truncate(p, 48), n);
        for v in means.iter().take(shown.len()) {
            match v {
                Some(x) => print!(" {:>16}", format_num(*x)),
                None => print!(" {:>16}", "-"),
            }
        }
        println!();
    }
    for e in &s.errors {
        eprintln!("sweep: failed: {e}");
    }
    if s.cut > 0 {
        eprintln!(
            "sweep: {} runs stopped at the spec's limit before their workload finished (their `partial`): \
             their figures are where they stopped; raise max_events or max_time",
            s.cut
        );
    }
    println!(
        "{} runs: {} ran now, {} done before, {} failed, {:.1} s; results in {}",
        s.total,
        s.ran,
        s.resumed,
        s.failed,
        s.wall_s,
        results.display()
    );
    if s.interrupted {
        eprintln!(
            "sweep: interrupted with {} of {} runs done: run the same command again to finish",
            s.resumed + s.ran,
            s.total
        );
        crate::signals::exit(crate::signals::caught().unwrap_or(signal_hook::consts::SIGINT));
    }
    if s.failed > 0 {
        bail!("{} run(s) failed: their errors are in the error column of {}", s.failed, results.display());
    }
    Ok(())
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let t: String = s.chars().take(n - 1).collect();
        format!("{t}~")
    }
}

fn format_num(x: f64) -> String {
    if x != 0.0 && (x.abs() >= 1e7 || x.abs() < 1e-3) {
        format!("{x:.4e}")
    } else {
        format!("{x:.4}")
    }
}
