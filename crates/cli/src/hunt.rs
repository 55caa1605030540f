// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore hunt`: generated workloads run under a sched_ext policy until
//! one fails or the budget is spent; a failure is shrunk and written as a
//! workload file that `warmcore sim` replays (docs/hunt.md).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use warmcore_args::UsageError;
use warmcore_sim::hunt::{self, Case, Failure};
use warmcore_sim::{Limits, Machine, RunConfig, SimError};
use warmcore_sweep::{Engine, Job};

#[derive(Args)]
pub struct HuntArgs {
    /// The sched_ext scheduler to hunt in: scx:NAME (warmcore's policies,
    /// the peers scx:bpfland, scx:flash, scx:cosmos) or bpf:DIR, with
    /// parameters as `warmcore sim` takes them.
    #[arg(long)]
    pub policy: String,
    /// Machines the generated runs use, comma-separated presets or machine
    /// files (see `warmcore sim --help`); without it, core2duo-e8400,
    /// ryzen5-3400g, default, xeon-gold-5218-2s and xeon-e7-8870v4.
    #[arg(long, value_delimiter = ',')]
    pub machine: Vec<String>,
    /// The budget in runs: stop after this many generated workloads.
    #[arg(long, conflicts_with = "sim_time", value_parser = warmcore_args::count::<u64>(1, u64::MAX))]
    pub runs: Option<u64>,
    /// The budget in simulated time: stop once the runs together simulated
    /// this long (1.5s, 200ms; a bare number is seconds).
    #[arg(long, value_name = "TIME", value_parser = warmcore_args::positive_secs)]
    pub sim_time: Option<Duration>,
    /// The hunt's seed: the same seed, policy and machines make the same runs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The first run's number (to resume an interrupted hunt).
    #[arg(long, default_value_t = 0)]
    pub start: u64,
    /// Runs at a time, on threads of this process (0: one per CPU); with
    /// --ray auto, the local Ray instance's CPUs.
    #[arg(long, default_value_t = 0, value_parser = warmcore_args::count::<usize>(0, 4096))]
    pub jobs: usize,
    /// Run on Ray, as `warmcore sweep --ray` does: `auto` starts a local
    /// instance, HOST:PORT joins a running cluster (the address `ray start
    /// --head` prints). Each worker rebuilds its run from the seed and the
    /// run's number (the workload hunt:seed=S,run=I); the result is the same
    /// as on threads, and a failure is shrunk on this machine.
    #[arg(long, value_name = "auto|ADDRESS")]
    pub ray: Option<String>,
    /// A wheel of the warmcore Python package to ship to the Ray cluster's
    /// workers (`maturin build --release` in python/).
    #[arg(long, requires = "ray")]
    pub ray_wheel: Option<PathBuf>,
    /// The most runs spent shrinking a failure.
    #[arg(long, default_value_t = 400, value_parser = warmcore_args::count::<u32>(1, 1_000_000))]
    pub shrink_runs: u32,
    /// Output directory: summary.json, and for a failure run-N/ with the
    /// generated workload, the shrunk reproducer, its trace and a summary.
    #[arg(long)]
    pub out: PathBuf,
}

/// Without a budget: 100 runs.
const DEFAULT_RUNS: u64 = 100;

pub fn run(a: HuntArgs) -> Result<()> {
    let names: Vec<String> = if a.machine.is_empty() {
        hunt::DEFAULT_MACHINES.iter().map(|s| s.to_string()).collect()
    } else {
        a.machine.iter().map(|s| s.trim().to_string()).collect()
    };
    if names.iter().any(|n| n.is_empty()) {
        bail!(UsageError::new("--machine takes a comma-separated list of machines, with no empty name"));
    }
    let mut machines = Vec::new();
    for n in &names {
        let m = Machine::load(n)?;
        // The policy is built on every machine first: a bad name, parameter
        // or scheduler is refused before any run.
        warmcore_sim::make_policy(&a.policy, &m)?;
        machines.push(m);
    }
    if a.out.exists() && !a.out.is_dir() {
        bail!(UsageError::new(format!("--out {}: not a directory", a.out.display())));
    }
    let shapes: Vec<(String, u32)> = names.iter().cloned().zip(machines.iter().map(|m| m.nr_cpus)).collect();
    let end = match (a.runs, a.sim_time) {
        (Some(n), _) => a.start.saturating_add(n),
        (None, Some(_)) => u64::MAX,
        (None, None) => a.start + DEFAULT_RUNS,
    };
    let sim_budget = a.sim_time.map(|d| d.as_nanos() as u64);
    let jobs = warmcore_sweep::engine::workers(a.jobs);
    // Checked before the hunt starts: a wrong address is one line.
    let engine = crate::sweep::engine(a.ray.as_deref(), a.jobs, a.ray_wheel.clone())?;
    if let Engine::Ray { address: Some(addr), python, .. } = &engine {
        warmcore_sweep::engine::check_ray_address(addr).map_err(anyhow::Error::msg)?;
        warmcore_sweep::engine::check_ray_python(python).map_err(anyhow::Error::msg)?;
    }
    // Made only once every argument is known good: a refused hunt leaves
    // nothing behind.
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;

    let stop = Arc::new(AtomicBool::new(false));
    {
        let s = stop.clone();
        crate::signals::on_interrupt(move |sig| {
            if s.swap(true, Ordering::SeqCst) {
                crate::signals::exit(sig);
            }
            eprintln!("hunt: stopping; what was found is kept (Ctrl-C again to quit now)");
        });
    }
    let next = AtomicU64::new(a.start);
    let first_fail = AtomicU64::new(u64::MAX);
    let sim_ns = AtomicU64::new(0);
    let runnable_ns = AtomicU64::new(0);
    // Wall time spent building the policy and running the simulator, the
    // part `warmcore sim` would spend on the same runs: the rest of the
    // hunt's wall time is its own (make bench's reliability figures).
    let check_wall_ns = AtomicU64::new(0);
    let done: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());
    let found: Mutex<Vec<(Case, Failure)>> = Mutex::new(Vec::new());
    let skipped: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let t0 = Instant::now();
    let policy = a.policy.as_str();
    // Ray's workers do not count runnable task-time (it is the hunt's own
    // sink, not in the report they send back).
    let on_ray = matches!(engine, Engine::Ray { .. });
    let tally = Tally {
        sim_ns: &sim_ns,
        runnable_ns: &runnable_ns,
        check_wall_ns: &check_wall_ns,
        first_fail: &first_fail,
        done: &done,
        found: &found,
        skipped: &skipped,
    };
    std::thread::scope(|scope| -> Result<()> {
        let local = if on_ray { 0 } else { jobs };
        for _ in 0..local {
            scope.spawn(|| loop {
                if stop.load(Ordering::SeqCst) || sim_budget.is_some_and(|b| sim_ns.load(Ordering::SeqCst) >= b) {
                    return;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= end || i > first_fail.load(Ordering::SeqCst) {
                    return;
                }
                let case = hunt::generate(a.seed, i, &shapes);
                let m = &machines[names.iter().position(|n| *n == case.machine).unwrap_or(0)];
                let t = Instant::now();
                let checked = hunt::check_timed(m, policy, &case.workload, case.seed);
                check_wall_ns.fetch_add(t.elapsed().as_nanos() as u64, Ordering::SeqCst);
                tally.add(&case, checked);
                done.lock().unwrap().insert(i);
            });
        }
        if on_ray {
            let r = hunt_on_ray(&engine, &a, &names, &machines, &shapes, end, sim_budget, &stop, &tally);
            // The progress below ends with the hunt's runs.
            next.store(end, Ordering::SeqCst);
            r?;
        }
        // Progress, every few seconds of a long hunt.
        scope.spawn(|| {
            let mut last = Instant::now();
            while !(stop.load(Ordering::SeqCst)
                || next.load(Ordering::SeqCst) >= end.min(first_fail.load(Ordering::SeqCst).saturating_add(1))
                || sim_budget.is_some_and(|b| sim_ns.load(Ordering::SeqCst) >= b))
            {
                std::thread::sleep(Duration::from_millis(100));
                if last.elapsed() >= Duration::from_secs(5) {
                    last = Instant::now();
                    eprintln!(
                        "hunt: {} runs, {:.1} simulated s, {:.0} s",
                        done.lock().unwrap().len(),
                        sim_ns.load(Ordering::SeqCst) as f64 * 1e-9,
                        t0.elapsed().as_secs_f64()
                    );
                }
            }
        });
        Ok(())
    })?;
    let done = done.into_inner().unwrap();
    let sim_s = sim_ns.load(Ordering::SeqCst) as f64 * 1e-9;
    let runnable_s = runnable_ns.load(Ordering::SeqCst) as f64 * 1e-9;
    for s in skipped.lock().unwrap().iter() {
        eprintln!("hunt: a generated workload was refused by the simulator (not counted as a failure): {s}");
    }
    // The first failure by run number: the same whatever --jobs.
    let mut found = found.into_inner().unwrap();
    found.sort_by_key(|(c, _)| c.index);
    let interrupted = stop.load(Ordering::SeqCst);
    let mut summary = serde_json::json!({
        "policy": a.policy,
        "seed": a.seed,
        "machines": names,
        "start": a.start,
        "runs": done.len(),
        "simulated_s": sim_s,
        "runnable_task_s": if on_ray { serde_json::Value::Null } else { runnable_s.into() },
        "wall_s": t0.elapsed().as_secs_f64(),
        "simulator_wall_s": check_wall_ns.load(Ordering::SeqCst) as f64 * 1e-9,
        "refused": skipped.lock().unwrap().len(),
        "failure": null,
    });
    let result = match found.into_iter().next() {
        Some((case, f)) => {
            let m = &machines[names.iter().position(|n| *n == case.machine).unwrap_or(0)];
            let (line, dir) = report(&a, &case, &f, m, &stop)?;
            summary["failure"] = serde_json::json!({ "run": case.index, "kind": f.kind.name(), "what": f.what, "dir": dir });
            Some((line, dir))
        }
        None => None,
    };
    let path = a.out.join("summary.json");
    warmcore_trace::output::write(&path, &[], serde_json::to_string_pretty(&summary)?.as_bytes())?;
    let runnable = if on_ray { String::new() } else { format!(", {runnable_s:.1} runnable task-s") };
    println!(
        "hunt: {} runs of {} ({:.1} simulated s{runnable}, {:.1} s), {}",
        done.len(),
        a.policy,
        sim_s,
        t0.elapsed().as_secs_f64(),
        if result.is_some() { "1 failure" } else { "no failure" }
    );
    if interrupted && result.is_none() {
        // Every run before the first one not done has been checked.
        let resume = (a.start..).find(|i| !done.contains(i)).unwrap_or(a.start);
        eprintln!("hunt: interrupted; resume with the same command and --start {resume}");
        crate::signals::exit(crate::signals::caught().unwrap_or(signal_hook::consts::SIGINT));
    }
    if let Some((line, dir)) = result {
        bail!("{line}; reproducer in {}", dir.display());
    }
    Ok(())
}

/// What the runs found, as they finish.
struct Tally<'a> {
    sim_ns: &'a AtomicU64,
    runnable_ns: &'a AtomicU64,
    check_wall_ns: &'a AtomicU64,
    first_fail: &'a AtomicU64,
    done: &'a Mutex<BTreeSet<u64>>,
    found: &'a Mutex<Vec<(Case, Failure)>>,
    skipped: &'a Mutex<Vec<String>>,
}

impl Tally<'_> {
    /// A run checked on this machine: its times, and its failure if any.
    fn add(&self, case: &Case, checked: Result<hunt::Checked, SimError>) {
        match checked {
            Ok(c) => {
                self.sim_ns.fetch_add(c.sim_ns, Ordering::SeqCst);
                self.runnable_ns.fetch_add(c.runnable_ns, Ordering::SeqCst);
                if let Some(f) = c.failure {
                    self.first_fail.fetch_min(case.index, Ordering::SeqCst);
                    self.found.lock().unwrap().push((case.clone(), f));
                }
            }
            // A workload past the simulator's limits is the generator's
            // fault, never the scheduler's.
            Err(e) => self.skipped.lock().unwrap().push(format!("run {}: {e}", case.index)),
        }
    }
}

/// Runs at a time sent to Ray: their workloads are built here first, to
/// know each run's machine, and a local instance is started for each batch.
const RAY_BATCH: u64 = 10_000;

/// The runs `a.start..end` on Ray's workers, each rebuilt there from the
/// workload `hunt:seed=S,run=I` on the machine it picked, until the budget
/// is spent, a failure is found with every run before it done, or `stop`.
/// A report with `partial` is a failure of the kind it names; a run the
/// worker could not finish (a deadlock, or a workload the simulator
/// refuses) is checked again here, which tells one from the other.
#[allow(clippy::too_many_arguments)]
fn hunt_on_ray(
    engine: &Engine,
    a: &HuntArgs,
    names: &[String],
    machines: &[Machine],
    shapes: &[(String, u32)],
    end: u64,
    sim_budget: Option<u64>,
    stop: &AtomicBool,
    t: &Tally,
) -> Result<()> {
    let machine_of = |case: &Case| &machines[names.iter().position(|n| *n == case.machine).unwrap_or(0)];
    let mut from = a.start;
    while from < end && !stop.load(Ordering::SeqCst) && !sim_budget.is_some_and(|b| t.sim_ns.load(Ordering::SeqCst) >= b) {
        let upto = end.min(from.saturating_add(RAY_BATCH));
        let cases: Vec<Case> = (from..upto).map(|i| hunt::generate(a.seed, i, shapes)).collect();
        let jobs: Vec<Job> = cases
            .iter()
            .map(|c| Job {
                machine: c.machine.clone(),
                workload: format!("hunt:seed={},run={}", a.seed, c.index),
                policy: a.policy.clone(),
                governor: "powersave".into(),
                seed: c.seed,
                limits: Limits { max_sim_ns: hunt::RUN_LIMIT_NS, ..Limits::default() },
                trace: None,
            })
            .collect();
        // The engine stops at an interrupt, once the budget is spent, or
        // once the first failure is known to be the first.
        let halt = AtomicBool::new(false);
        let over = AtomicBool::new(false);
        let ran = std::thread::scope(|scope| {
            scope.spawn(|| {
                while !over.load(Ordering::SeqCst) {
                    if stop.load(Ordering::SeqCst) {
                        halt.store(true, Ordering::SeqCst);
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
            let r = engine.run(&jobs, &halt, &mut |k, o| {
                let case = &cases[k];
                t.check_wall_ns.fetch_add((o.wall_s * 1e9) as u64, Ordering::SeqCst);
                match o.report {
                    Ok(r) => {
                        t.sim_ns.fetch_add(r["makespan_ns"].as_u64().unwrap_or(0), Ordering::SeqCst);
                        if let Some(what) = r["partial"].as_str() {
                            let kind = hunt::kind_of(what, r["ejected"].as_bool().unwrap_or(false));
                            t.found.lock().unwrap().push((case.clone(), Failure { kind, what: what.to_string() }));
                        }
                    }
                    Err(_) => t.add(case, hunt::check_timed(machine_of(case), &a.policy, &case.workload, case.seed)),
                }
                let mut done = t.done.lock().unwrap();
                done.insert(case.index);
                let first = t.found.lock().unwrap().iter().map(|(c, _)| c.index).min();
                let spent = sim_budget.is_some_and(|b| t.sim_ns.load(Ordering::SeqCst) >= b);
                if spent || first.is_some_and(|f| (a.start..f).all(|i| done.contains(&i))) {
                    halt.store(true, Ordering::SeqCst);
                }
                Ok(())
            });
            over.store(true, Ordering::SeqCst);
            r
        });
        ran.map_err(anyhow::Error::msg)?;
        if !t.found.lock().unwrap().is_empty() {
            break;
        }
        from = upto;
    }
    Ok(())
}

/// Shrink a failure and write it out: run-N/original.toml (the generated
/// workload), repro.toml (the shrunk one), machine.toml (the machine when
/// shrinking took CPUs away), repro.wct (its trace) and failure.txt (the
/// summary and the command that replays it). The one-line
/// summary, and the directory.
fn report(a: &HuntArgs, case: &Case, f: &Failure, m: &Machine, stop: &AtomicBool) -> Result<(String, PathBuf)> {
    let dir = a.out.join(format!("run-{}", case.index));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let write = |name: &str, text: &str| -> Result<PathBuf> {
        let p = dir.join(name);
        warmcore_trace::output::write(&p, &[], text.as_bytes())?;
        Ok(p)
    };
    write("original.toml", &warmcore_sim::wfile::to_toml(&case.workload).map_err(anyhow::Error::msg)?)?;
    eprintln!("hunt: run {} failed ({}): {}; shrinking", case.index, f.kind.name(), f.what);
    let (small, sm, runs) = hunt::shrink(m, &a.policy, &case.workload, case.seed, &f.kind, a.shrink_runs, stop);
    let repro = write("repro.toml", &warmcore_sim::wfile::to_toml(&small).map_err(anyhow::Error::msg)?)?;
    let machine_file = if sm.nr_cpus < m.nr_cpus { Some(write("machine.toml", &sm.to_toml())?) } else { None };
    let machine = machine_file.as_ref().map_or(case.machine.clone(), |p| p.to_string_lossy().into_owned());
    // The reproducer replayed as `warmcore sim` runs it, with its trace.
    let mut cfg = RunConfig::new(&machine, &repro.to_string_lossy(), &a.policy, "powersave", case.seed);
    cfg.trace = Some(dir.join("repro.wct"));
    cfg.limits.max_sim_ns = hunt::RUN_LIMIT_NS;
    let replay = warmcore_sim::run(&cfg);
    let what = match &replay {
        Ok(r) => r.partial.clone().filter(|w| hunt::kind_of(w, r.ejected) == f.kind),
        Err(warmcore_sim::SimError::Deadlock(w)) if f.kind == hunt::Kind::Unfinished => Some(w.clone()),
        Err(_) => None,
    };
    let command = format!(
        "warmcore sim --machine {} --policy {} --workload {} --seed {}",
        machine_file.as_deref().map_or(case.machine.clone(), quote),
        a.policy,
        quote(&repro),
        case.seed
    );
    let (what, note) = match what {
        Some(w) => (w, String::new()),
        // Said, not hidden: the generated workload still fails (original.toml).
        None => (f.what.clone(), "; the shrunk workload does not fail the same way when replayed: the generated one does (original.toml)".into()),
    };
    let line = format!(
        "{}: {} ({} of {} tasks and {} of {} CPUs left after {} shrinking runs{note})",
        f.kind.name(),
        what,
        small.initial.len(),
        case.workload.initial.len(),
        sm.nr_cpus,
        m.nr_cpus,
        runs
    );
    write("failure.txt", &format!("{line}\nreplay: {command}\n"))?;
    eprintln!("hunt: replay with: {command}");
    Ok((line, dir))
}

fn quote(p: &Path) -> String {
    let s = p.to_string_lossy();
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:,".contains(c)) {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
