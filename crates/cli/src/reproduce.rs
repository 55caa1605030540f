// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore reproduce`: run the papers' experiments in the simulator
//! (warmcore-reproduce), then draw the figures with the project's Python
//! (python/warmcore/figures.py).

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Result};
use clap::Args;
use warmcore_reproduce::{reproduce, Options, ReproduceError};

#[derive(Args)]
pub struct ReproduceArgs {
    /// Output directory: report.md, claims.json, runs.json,
    /// real-workloads.json, figures.json, the figures (PNG) and traces/
    /// (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Three seeds instead of ten, and smaller hackbench and schbench runs
    /// (seconds instead of most of an hour, which hackbench at Nest's size
    /// takes).
    #[arg(long)]
    pub quick: bool,
    /// Only these claims, comma-separated ids (1-9), e.g. --only 1,2.
    #[arg(long, value_name = "IDS")]
    pub only: Option<String>,
    /// Simulations run at a time (0: one per CPU); with --ray auto, the
    /// local Ray instance's CPUs.
    #[arg(long, default_value_t = 0, value_parser = warmcore_args::count::<usize>(0, 1024))]
    pub jobs: usize,
    /// Run the simulations on Ray, as `warmcore sweep --ray` does: `auto`
    /// starts a local instance, HOST:PORT joins a cluster (whose workers
    /// must see --out, where some runs write their traces).
    #[arg(long, value_name = "auto|ADDRESS")]
    pub ray: Option<String>,
    /// Also run each claim not reproduced across the plausible range of the
    /// unknown it hangs on (declared in its module with the range's source;
    /// two unknowns run as a grid): a sweep per band in OUT/bands/ (resumed
    /// if run again), three seeds a point, at the sizes of this run
    /// (--quick's or the full ones). report.md and claims.json (a `band`
    /// field, and `further_bands` for a claim with more than one) then say
    /// whether the paper's figure lies inside the band: "consistent under a
    /// stated assumption" (at which value) or "outside the model's range".
    /// Tens of minutes on two CPUs with --quick.
    #[arg(long)]
    pub bands: bool,
}

fn parse_only(s: &str) -> Result<Vec<u32>> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| {
            x.parse::<u32>()
                .map_err(|_| warmcore_args::UsageError::new(format!("--only takes claim ids separated by commas (e.g. 1,2), not '{x}'")).into())
        })
        .collect()
}

pub fn run(a: ReproduceArgs) -> Result<()> {
    let only = a.only.as_deref().map(parse_only).transpose()?;
    let engine = crate::sweep::engine(a.ray.as_deref(), a.jobs, None)?;
    let opts = Options { quick: a.quick, only, out: a.out.clone(), engine, bands: a.bands };
    let w = reproduce(&opts).map_err(|e| match e {
        ReproduceError::Options(m) => anyhow::Error::new(warmcore_args::UsageError(m)),
        ReproduceError::Work(m) => anyhow::Error::msg(m),
    })?;
    let yes = w.claims.iter().filter(|c| c.reproduced).count();
    for c in &w.claims {
        println!("claim {} {}: {}", c.id, c.grade.label(), c.sim_value);
        for b in c.bands() {
            println!("claim {} band: {}", c.id, warmcore_reproduce::band_line(b));
        }
    }
    println!(
        "{yes} of {} claims reproduced; report in {}",
        w.claims.len(),
        a.out.join("report.md").display()
    );
    // The figures: the project's Python with matplotlib and the bindings.
    let py = match crate::view::python() {
        Ok(p) => p,
        Err(e) => bail!("figures: {e}; claims.json and report.md are in {}", a.out.display()),
    };
    let out = Command::new(&py).args(crate::view::module_args("warmcore.figures")).arg(&a.out).output();
    match out {
        Ok(o) if o.status.success() => print!("{}", String::from_utf8_lossy(&o.stdout)),
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message");
            bail!("drawing the figures failed: {last}; claims.json and report.md are in {}", a.out.display());
        }
        Err(e) => bail!("cannot run {}: {e}: run `make build` to set up .venv", py.display()),
    }
    if w.failed_runs > 0 {
        bail!(
            "{} simulation run(s) failed: see the error fields in {} and {}",
            w.failed_runs,
            a.out.join("runs.json").display(),
            a.out.join("real-workloads.json").display()
        );
    }
    Ok(())
}
