// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore field`: every scheduler warmcore hosts on the field's
//! workloads and machines, run as a sweep and ranked per workload.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use warmcore_sweep::{Engine, Plan};

/// The study, built in so that the command works from any directory; its
/// file in the tree is the one definition (`--spec` takes another).
const FIELD_SPEC: &str = include_str!("../../../workloads/sweeps/field.toml");

#[derive(Args)]
pub struct FieldArgs {
    /// Output directory: the sweep's results.parquet and runs.jsonl, then
    /// field.md (the ranked tables and who wins where) and field.png.
    /// Started again on the same directory, only missing runs run.
    #[arg(long)]
    pub out: PathBuf,
    /// Another study than the built-in one (workloads/sweeps/field.toml),
    /// in the format of `warmcore sweep`.
    #[arg(long)]
    pub spec: Option<PathBuf>,
    /// Replace a list of the study for this run: machines, governors or
    /// seeds (--set machines=xeon-gold-5218-2s --set seeds=1).
    #[arg(long = "set", value_name = "KEY=VALUES")]
    pub set: Vec<String>,
    /// Runs at a time (0: one per CPU).
    #[arg(long, default_value_t = 0, value_parser = warmcore_args::count::<usize>(0, 4096))]
    pub jobs: usize,
    /// Run again the runs that failed before.
    #[arg(long)]
    pub retry_failed: bool,
    /// Start over on a directory that holds the results of another study.
    #[arg(long)]
    pub force: bool,
    /// The scheduler every winner is also compared with, and the baseline
    /// of --goals: the fair class of today by default.
    #[arg(long, default_value = "eevdf")]
    pub baseline: String,
    /// Also judge one scheduler's goals (docs/warm.md, Goals) against the
    /// best of the others and the baseline, on each machine, governor and
    /// workload: DIR/goals.md and DIR/goals.png (--goals scx:warm).
    #[arg(long, value_name = "POLICY")]
    pub goals: Option<String>,
    /// The frequency-sensitive workloads of --goals, as the study names
    /// them: the fork/wait chains (Fewer Cores, More Hertz, section 2),
    /// configure, perl's start-up and kbuild's sequential phases.
    #[arg(long, value_name = "W,...", default_value = "configure,perl-startup,kbuild:files=0")]
    pub sensitive: String,
}

pub fn run(a: FieldArgs) -> Result<()> {
    let plan = match &a.spec {
        Some(f) => Plan::load_with(f, &a.set),
        None => Plan::parse("workloads/sweeps/field.toml (built in)", FIELD_SPEC, &a.set),
    }
    .map_err(warmcore_args::UsageError::new)?;
    // Said before the study runs, not after its thousands of runs.
    if let Some(p) = &a.goals {
        let mut names: Vec<&str> = Vec::new();
        for r in &plan.runs {
            if !names.contains(&r.policy.as_str()) {
                names.push(&r.policy);
            }
        }
        if !names.contains(&p.as_str()) {
            return Err(warmcore_args::UsageError::new(format!("--goals {p}: no such scheduler in the study; name one of its policies: {}", names.join(", "))).into());
        }
    }
    crate::sweep::run_plan(&plan, &a.out, &Engine::Local { jobs: a.jobs }, a.retry_failed, a.force, false)?;
    let mut args = vec![crate::view::path_arg(&a.out), "--baseline".into(), a.baseline];
    if let Some(p) = a.goals {
        args.extend(["--goals".into(), p, "--sensitive".into(), a.sensitive]);
    }
    crate::view::run_python("warmcore.field", args)
}
