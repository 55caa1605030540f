// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore sim` and `warmcore compare`: thin wrappers over warmcore-sim.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;
use warmcore_sim::run::improvement_pct;
use warmcore_sim::{run, Limits, RunConfig, RunReport, SimError};

#[derive(Args)]
pub struct SimArgs {
    /// Machine preset (default, xeon-e7-8870v4, xeon-gold-6130-2s,
    /// xeon-gold-6130-4s, xeon-gold-5218-2s, ryzen5-3400g, ryzen5-pro-4650g,
    /// core2duo-e8400; servers of today: xeon-8592p-2s, epyc-9654-2s) or a
    /// path to a machine .toml file.
    #[arg(long, default_value = "default")]
    pub machine: String,
    /// Workload and its parameters: name[:key=value,...], e.g.
    /// hackbench:groups=25,loops=50. Built in: configure, kbuild,
    /// perl-startup, hackbench, periodic, schbench, nas, nas-lu, mkl-dnn,
    /// h2, unixbench; also rtapp:file=F.json (rt-app), replay:trace=F.wct,
    /// hunt:seed=S,run=I (run I of `warmcore hunt --seed S`), or a workload
    /// .toml file (see workloads/).
    #[arg(long)]
    pub workload: String,
    /// Placement policy, with parameters: name[:key=value,...]. Built in:
    /// cfs (the Linux fair class of 5.9, as the papers ran it), eevdf (the
    /// fair class of today, Linux 7.3: balance, place_lag, run_to_parity,
    /// sis_util =on|off, preempt=lazy|full), slocal, smove (delay_us, threshold_khz, timers_only,
    /// unsampled=low|sample),
    /// nest (spin, reserve, compaction, ... =on|off; p_remove, r_max,
    /// r_impatient, s_max): the papers' kernel patches, modelled on the
    /// fair class; haiku-low-latency, haiku-power-saving: simplified Rust
    /// references of Haiku's scheduler (one priority, no penalties);
    /// haiku-old: a reference model of Haiku's scheduler before that one
    /// (one run queue for the machine, 3 ms quantum).
    /// scx:NAME runs the sched_ext program of `warmcore sched` itself, NAME
    /// one of default, slocal, smove, nest, haiku-low-latency,
    /// haiku-power-saving (Haiku's scheduler in full), warm (warmcore's own
    /// placement, docs/warm.md), with its options as
    /// parameters
    /// (scx:smove:delay_us=50 is --smove-delay-us 50, scx:nest:reserve=off is
    /// --nest-no-reserve).
    #[arg(long, default_value = "cfs")]
    pub policy: String,
    /// Frequency governor: powersave (hardware-controlled), schedutil,
    /// performance; with the machine's driver's energy-performance
    /// preference as a parameter where it has one
    /// (powersave:epp=balance_power; performance, balance_performance,
    /// balance_power, power, default or 0-255; docs/model.md, Frequency
    /// drivers of today).
    #[arg(long, default_value = "powersave")]
    pub governor: String,
    /// Seed of the run's random generator: same inputs and seed, same result.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the run's events to this .wct trace.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Stop after this much simulated time, in seconds (partial result);
    /// without it, after one simulated hour.
    #[arg(long, value_name = "SECS", value_parser = warmcore_args::positive_secs)]
    pub max_time: Option<Duration>,
    /// Stop after this many trace events (partial result); without it,
    /// after 10^10.
    #[arg(long, value_parser = warmcore_args::count::<u64>(1, u64::MAX))]
    pub max_events: Option<u64>,
}

#[derive(Args)]
pub struct CompareArgs {
    /// Machine preset or machine file (see `warmcore sim --help`).
    #[arg(long, default_value = "default")]
    pub machine: String,
    /// Workload and its parameters: name[:key=value,...].
    #[arg(long)]
    pub workload: String,
    /// Comma-separated policies, each with its parameters
    /// (cfs,smove:delay_us=50,threshold_khz=1200000,scx:nest:warm=off);
    /// improvements are relative to the first.
    #[arg(long, default_value = "cfs")]
    pub policies: String,
    /// Frequency governor: powersave, schedutil, performance, with an EPP
    /// where the machine's driver has one (powersave:epp=power; see
    /// `warmcore sim --help`).
    #[arg(long, default_value = "powersave")]
    pub governor: String,
    /// Runs per policy, with seeds 1..=N (all the runs side by side, a
    /// thread per CPU).
    #[arg(long, default_value_t = 3, value_parser = warmcore_args::count::<u32>(1, 10_000))]
    pub runs: u32,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
}

fn limits(max_time: Option<Duration>, max_events: Option<u64>) -> Limits {
    let mut l = Limits::default();
    if let Some(t) = max_time {
        l.max_sim_ns = t.as_nanos() as u64;
    }
    if let Some(e) = max_events {
        l.max_events = e;
    }
    l
}

/// The unit a metric reads best in, from its name's suffix, and the divisor
/// to get there: times in ns are shown in ms (the JSON keeps raw values).
fn display_unit(metric: &str) -> (&'static str, f64) {
    if metric.ends_with("_ns") {
        ("ms", 1e6)
    } else if metric.ends_with("_us") {
        ("us", 1.0)
    } else {
        ("", 1.0)
    }
}

fn ms(ns: f64) -> String {
    format!("{:.3} ms", ns / 1e6)
}

pub fn sim(a: SimArgs) -> Result<()> {
    if a.trace.as_deref().is_some_and(warmcore_trace::output::is_stdout) {
        bail!(warmcore_args::UsageError::new("--trace: the report goes to standard output: give a file, a pipe or /dev/null"));
    }
    replayed_trace(&a.workload)?;
    let mut cfg = RunConfig::new(&a.machine, &a.workload, &a.policy, &a.governor, a.seed);
    cfg.trace = a.trace.clone();
    cfg.limits = limits(a.max_time, a.max_events);
    let r = run(&cfg)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print_report(&r);
    }
    if r.ejected {
        // The report and the trace up to the ejection are kept.
        bail!("{}", r.partial.as_deref().unwrap_or("the scheduler was ejected"));
    }
    Ok(())
}

/// A replayed trace is read as every trace is (crate::trace::open): an
/// incomplete one gets a warning, or with --strict is refused.
fn replayed_trace(workload: &str) -> Result<()> {
    if let ("replay", params) = warmcore_sim::parse_spec(workload) {
        if let [(k, f)] = params.as_slice() {
            if k == "trace" {
                warmcore_sim::replay::check_exists(f)?;
                crate::trace::open(std::path::Path::new(f))?;
            }
        }
    }
    Ok(())
}

fn print_report(r: &RunReport) {
    println!("machine    {}", r.machine);
    println!("workload   {}", r.workload);
    println!("policy     {} ({})", r.policy, r.governor);
    if let Some(p) = &r.partial {
        println!("PARTIAL    {p}");
    }
    println!("makespan   {}", ms(r.makespan_ns as f64));
    println!("energy     {:.3} J", r.energy_j);
    println!("migrations {}", r.migrations);
    // What the placements cost the placing CPUs (docs/model.md, The kernel's own time).
    let per = r.placement_scans as f64 / r.placements.max(1) as f64;
    println!("placements {} ({per:.1} CPUs looked at each)", r.placements);
    println!("{:<10} {:.6}", r.metric.name, r.metric.value);
    if !r.policy_stats.is_null() {
        println!("decisions  {}", r.policy_stats);
    }
    println!("events     {} in {:.3} s", r.sim_events, r.wall_ns as f64 / 1e9);
}

#[derive(Serialize)]
struct PolicyResult {
    policy: String,
    mean: f64,
    std: f64,
    improvement_pct: f64,
    energy_j: f64,
    energy_improvement_pct: f64,
}

#[derive(Serialize)]
struct Comparison {
    machine: String,
    workload: String,
    governor: String,
    runs: u32,
    metric: String,
    results: Vec<PolicyResult>,
}

fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len().max(1) as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 { v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (m, var.sqrt())
}


/// Split `--policies`: commas separate policies, and also a policy's
/// parameters (`cfs,smove:delay_us=50,threshold_khz=1200000,nest`): a
/// `key=value` item without a `:` belongs to the policy before it.
fn split_policies(list: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match out.last_mut() {
            Some(last) if item.contains('=') && !item.contains(':') && last.contains(':') => {
                last.push(',');
                last.push_str(item);
            }
            _ => out.push(item.to_string()),
        }
    }
    out
}

/// Every run of a comparison (each policy with seeds 1..=runs, in that
/// order), side by side on the machine's CPUs: the runs are independent and
/// deterministic, so the results are those of one run after another. The
/// first run in that order that fails is the error, as it would be then.
fn run_all(policies: &[&str], a: &CompareArgs) -> Result<Vec<RunReport>> {
    let runs: Vec<(&str, u64)> =
        policies.iter().flat_map(|&p| (1..=a.runs as u64).map(move |seed| (p, seed))).collect();
    let results: Vec<Mutex<Option<Result<RunReport, SimError>>>> = runs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    // Runs after a failed one are not started: their results would not be read.
    let first_fail = AtomicUsize::new(usize::MAX);
    std::thread::scope(|scope| {
        for _ in 0..warmcore_sweep::engine::workers(0).min(runs.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= runs.len() || i > first_fail.load(Ordering::SeqCst) {
                    return;
                }
                let (p, seed) = runs[i];
                let r = run(&RunConfig::new(&a.machine, &a.workload, p, &a.governor, seed));
                if r.is_err() {
                    first_fail.fetch_min(i, Ordering::SeqCst);
                }
                *results[i].lock().unwrap() = Some(r);
            });
        }
    });
    let mut out = Vec::with_capacity(runs.len());
    for r in results {
        match r.into_inner().unwrap() {
            Some(r) => out.push(r?),
            None => break,
        }
    }
    Ok(out)
}

pub fn compare(a: CompareArgs) -> Result<()> {
    let policies = split_policies(&a.policies);
    let policies: Vec<&str> = policies.iter().map(String::as_str).collect();
    if policies.is_empty() {
        bail!(warmcore_args::UsageError::new("--policies needs at least one policy name"));
    }
    let mut rows = Vec::new();
    let mut metric = String::new();
    let mut lower = true;
    let mut machine = a.machine.clone();
    replayed_trace(&a.workload)?;
    let mut reports = run_all(&policies, &a)?.into_iter();
    for p in &policies {
        let mut vals = Vec::new();
        let mut energy = Vec::new();
        for seed in 1..=a.runs as u64 {
            let Some(r) = reports.next() else { bail!("run of {p} with seed {seed} is missing") };
            if let Some(why) = &r.partial {
                bail!("run of {p} with seed {seed} stopped early: {why}");
            }
            metric = r.metric.name.clone();
            lower = r.metric.better == "lower";
            machine = r.machine.clone();
            vals.push(r.metric.value);
            energy.push(r.energy_j);
        }
        let (m, s) = mean_std(&vals);
        let (e, _) = mean_std(&energy);
        rows.push((p.to_string(), m, s, e));
    }
    let (base, base_e) = (rows[0].1, rows[0].3);
    let results: Vec<PolicyResult> = rows
        .into_iter()
        .map(|(policy, mean, std, e)| PolicyResult {
            policy,
            mean,
            std,
            improvement_pct: improvement_pct(base, mean, lower),
            energy_j: e,
            energy_improvement_pct: improvement_pct(base_e, e, true),
        })
        .collect();
    let c = Comparison { machine, workload: a.workload, governor: a.governor, runs: a.runs, metric, results };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&c)?);
        return Ok(());
    }
    let (unit, scale) = display_unit(&c.metric);
    println!("{} on {} ({}), {} run(s) each; metric {}", c.workload, c.machine, c.governor, c.runs, c.metric);
    let (mean, std) = (format!("mean {unit}"), format!("std {unit}"));
    let w = c.results.iter().map(|r| r.policy.len()).max().unwrap_or(0).max(24);
    println!("{:<w$} {:>16} {:>12} {:>10} {:>12} {:>10}", "policy", mean.trim(), std.trim(), "improv.%", "energy J", "energy %");
    for r in &c.results {
        println!(
            "{:<w$} {:>16.3} {:>12.3} {:>10.2} {:>12.3} {:>10.2}",
            r.policy,
            r.mean / scale,
            r.std / scale,
            r.improvement_pct,
            r.energy_j,
            r.energy_improvement_pct
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::split_policies;

    #[test]
    fn policies_with_several_parameters() {
        assert_eq!(
            split_policies("cfs, smove:delay_us=50,threshold_khz=1200000,nest:spin=off,slocal"),
            ["cfs", "smove:delay_us=50,threshold_khz=1200000", "nest:spin=off", "slocal"]
        );
        assert_eq!(split_policies("cfs,,slocal"), ["cfs", "slocal"]);
    }
}
