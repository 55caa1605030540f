// SPDX-License-Identifier: GPL-2.0-only
//! Where runs run. Local: threads of this process, each running the
//! simulator as `warmcore sim` does. Ray: the project's Python driver
//! (python/warmcore/sweep_ray.py) submits each run as a Ray task that calls
//! the same simulator through the Python bindings; Ray retries a task whose
//! worker died. Both give each run's report as `warmcore sim --json` prints
//! it, so the rows are the same whatever the engine.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use warmcore_sim::{Limits, RunConfig};

/// One simulation to run, as the engines take it.
#[derive(Clone, Debug)]
pub struct Job {
    pub machine: String,
    pub workload: String,
    pub policy: String,
    pub governor: String,
    pub seed: u64,
    pub limits: Limits,
    /// Write the run's events here (`warmcore reproduce` keeps some traces).
    pub trace: Option<PathBuf>,
}

impl Job {
    fn config(&self) -> RunConfig {
        let mut cfg = RunConfig::new(&self.machine, &self.workload, &self.policy, &self.governor, self.seed);
        cfg.limits = self.limits;
        cfg.trace = self.trace.clone();
        cfg
    }

    /// The job as a Ray worker reaches it: every file it names (a machine
    /// or workload file, a replayed trace or rt-app file, `bpf:DIR`, the
    /// trace to write) by its absolute path, since a worker does not run in
    /// the caller's directory.
    pub fn for_workers(&self) -> Job {
        let (name, params) = warmcore_sim::parse_spec(&self.workload);
        let workload = match (name, params.as_slice()) {
            _ if is_file(&self.workload) => absolute(&self.workload),
            ("replay", [(k, f)]) if k == "trace" => format!("replay:trace={}", absolute(f)),
            ("rtapp", [(k, f)]) if k == "file" => format!("rtapp:file={}", absolute(f)),
            _ => self.workload.clone(),
        };
        let policy = match bpf_dir(&self.policy) {
            Some((dir, params)) => format!("bpf:{}{params}", absolute(dir)),
            None => self.policy.clone(),
        };
        Job {
            machine: if is_file(&self.machine) { absolute(&self.machine) } else { self.machine.clone() },
            workload,
            policy,
            trace: self.trace.as_deref().map(|t| std::path::absolute(t).unwrap_or_else(|_| t.to_path_buf())),
            ..self.clone()
        }
    }

    /// A worker's report of `sent` (`self.for_workers()`) named as the
    /// caller named the run, as local threads report it.
    fn named_as_sent(&self, sent: &Job, mut report: serde_json::Value) -> serde_json::Value {
        report["workload"] = self.workload.clone().into();
        report["policy"] = self.policy.clone().into();
        // An ejection names the scheduler (crate warmcore_sim, scx).
        if let (Some((dir, _)), Some((sent_dir, _))) = (bpf_dir(&self.policy), bpf_dir(&sent.policy)) {
            if let Some(rest) = report["partial"].as_str().and_then(|p| p.strip_prefix(&format!("bpf:{sent_dir}"))) {
                report["partial"] = format!("bpf:{dir}{rest}").into();
            }
        }
        report
    }
}

/// Whether the simulator reads `name` (a machine or a workload) as a file:
/// it has a '/' or ends in .toml (crate warmcore_sim: `Machine::load`,
/// `load_workload`), and is one.
fn is_file(name: &str) -> bool {
    (name.ends_with(".toml") || name.contains('/')) && Path::new(name).is_file()
}

/// `path` as a process in any directory finds it.
fn absolute(path: &str) -> String {
    std::path::absolute(path).map_or(path.to_string(), |p| p.to_string_lossy().into_owned())
}

/// The directory of a `bpf:DIR[:PARAMS]` policy, and the rest (`:PARAMS`
/// or nothing).
fn bpf_dir(policy: &str) -> Option<(&str, &str)> {
    let rest = policy.strip_prefix("bpf:")?;
    Some(rest.find(':').map_or((rest, ""), |i| rest.split_at(i)))
}

/// A finished job: the report of `warmcore sim --json`, or why it failed.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub report: Result<serde_json::Value, String>,
    pub wall_s: f64,
}

/// Which engine, and how to reach it.
#[derive(Clone, Debug)]
pub enum Engine {
    /// `jobs` threads of this process.
    Local { jobs: usize },
    /// Ray: a local instance with `jobs` CPUs (address None) or the cluster
    /// at `address`; `python` runs the driver; `wheel`, if given, is shipped
    /// to the cluster's workers.
    Ray { address: Option<String>, jobs: usize, python: PathBuf, wheel: Option<PathBuf> },
}

/// All CPUs when `jobs` is 0.
pub fn workers(jobs: usize) -> usize {
    if jobs == 0 {
        std::thread::available_parallelism().map(|p| p.get()).unwrap_or(1)
    } else {
        jobs
    }
}

impl Engine {
    /// Run `jobs`, calling `done(index, outcome)` on this thread as each
    /// finishes, until all have or `stop` is set (then runs under way are
    /// abandoned: a local thread finishes its run unseen, Ray's driver is
    /// interrupted).
    pub fn run(&self, jobs: &[Job], stop: &AtomicBool, done: &mut dyn FnMut(usize, Outcome) -> Result<(), String>) -> Result<(), String> {
        if jobs.is_empty() {
            return Ok(());
        }
        match self {
            Engine::Local { jobs: n } => run_local(jobs, workers(*n), stop, done),
            Engine::Ray { address, jobs: n, python, wheel } => {
                run_ray(jobs, address.as_deref(), workers(*n), python, wheel.as_deref(), stop, done)
            }
        }
    }
}

fn run_one(job: &Job) -> Outcome {
    let t0 = Instant::now();
    let cfg = job.config();
    // A panic is a bug of the simulator, but it ends this run only.
    let r = std::panic::catch_unwind(|| warmcore_sim::run(&cfg));
    let report = match r {
        Ok(Ok(rep)) => serde_json::to_value(&rep).map_err(|e| e.to_string()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(p) => Err(format!(
            "the simulator panicked: {}",
            p.downcast_ref::<String>().map(String::as_str).or(p.downcast_ref::<&str>().copied()).unwrap_or("?")
        )),
    };
    Outcome { report, wall_s: t0.elapsed().as_secs_f64() }
}

fn run_local(
    jobs: &[Job],
    workers: usize,
    stop: &AtomicBool,
    done: &mut dyn FnMut(usize, Outcome) -> Result<(), String>,
) -> Result<(), String> {
    let jobs: Arc<Vec<Job>> = Arc::new(jobs.to_vec());
    let next = Arc::new(AtomicUsize::new(0));
    let quit = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    for _ in 0..workers.min(jobs.len()) {
        let (jobs, next, quit, tx) = (jobs.clone(), next.clone(), quit.clone(), tx.clone());
        // Detached: on a stop the caller returns without waiting for the
        // runs under way, which end with the process.
        std::thread::spawn(move || loop {
            let i = next.fetch_add(1, Ordering::SeqCst);
            if i >= jobs.len() || quit.load(Ordering::SeqCst) {
                break;
            }
            if tx.send((i, run_one(&jobs[i]))).is_err() {
                break;
            }
        });
    }
    drop(tx);
    let mut left = jobs.len();
    let r = loop {
        if left == 0 {
            break Ok(());
        }
        if stop.load(Ordering::SeqCst) {
            break Ok(());
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok((i, o)) => {
                left -= 1;
                if let Err(e) = done(i, o) {
                    break Err(e);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break Err("a worker thread ended without its result".into()),
        }
    };
    quit.store(true, Ordering::SeqCst);
    r
}

/// Check that a Ray cluster's address answers, so that a wrong one is one
/// line instead of the driver's minute of retries.
pub fn check_ray_address(address: &str) -> Result<(), String> {
    let hostport = address.strip_prefix("ray://").unwrap_or(address);
    let hint = "start the cluster with `ray start --head`, give its HOST:PORT, or use --ray auto";
    let addrs: Vec<_> = hostport
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve the Ray address '{address}' ({e}): {hint}"))?
        .collect();
    let mut last = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, Duration::from_secs(5)) {
            Ok(_) => return Ok(()),
            Err(e) => last = Some(e),
        }
    }
    Err(format!(
        "cannot reach the Ray cluster at {address} ({}): {hint}",
        last.map_or("no address".to_string(), |e| e.to_string())
    ))
}

/// Check that `python` has Ray and the warmcore package, in one line if not.
pub fn check_ray_python(python: &std::path::Path) -> Result<(), String> {
    let out = Command::new(python)
        .args(["-c", "import ray, warmcore"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}: run `make build` to set up .venv, or set WARMCORE_PYTHON", python.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message");
        return Err(format!(
            "--ray needs the ray and warmcore packages in {} ({last}): run `make build`, or `pip install ray` there",
            python.display()
        ));
    }
    Ok(())
}

/// Stops the driver on every way out: an interrupt, an error, a panic.
struct Driver(Child);

impl Driver {
    /// Whether the driver has ended within `limit`.
    fn ended_within(&mut self, limit: Duration) -> bool {
        let t0 = Instant::now();
        loop {
            if !matches!(self.0.try_wait(), Ok(None)) {
                return true;
            }
            if t0.elapsed() >= limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            // SIGINT first: the driver shuts its local Ray instance down.
            // SAFETY: kill(2) on the pid of a child this process started and has not reaped.
            unsafe { libc::kill(self.0.id() as i32, libc::SIGINT) };
            if !self.ended_within(Duration::from_secs(20)) {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }
    }
}

fn run_ray(
    jobs: &[Job],
    address: Option<&str>,
    cpus: usize,
    python: &std::path::Path,
    wheel: Option<&std::path::Path>,
    stop: &AtomicBool,
    done: &mut dyn FnMut(usize, Outcome) -> Result<(), String>,
) -> Result<(), String> {
    if let Some(a) = address {
        check_ray_address(a)?;
    }
    check_ray_python(python)?;
    let mut cmd = Command::new(python);
    cmd.args(["-m", "warmcore.sweep_ray"]);
    match address {
        Some(a) => cmd.args(["--address", a]),
        None => cmd.args(["--cpus", &cpus.to_string()]),
    };
    if let Some(w) = wheel {
        cmd.arg("--wheel").arg(w);
    }
    // The driver's own stdin carries the jobs, its stdout the results (one
    // JSON object a line each way); Ray's messages go to stderr. It has a
    // process group of its own, so that a Ctrl-C at the terminal reaches
    // this process only, which then stops the driver.
    use std::os::unix::process::CommandExt;
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).process_group(0);
    let child = cmd.spawn().map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    let mut driver = Driver(child);
    let mut stdin = driver.0.stdin.take().expect("piped stdin");
    let stdout = driver.0.stdout.take().expect("piped stdout");
    let sent: Vec<Job> = jobs.iter().map(Job::for_workers).collect();
    let lines: Vec<String> = sent
        .iter()
        .enumerate()
        .map(|(i, j)| {
            serde_json::json!({
                "index": i,
                "machine": j.machine,
                "workload": j.workload,
                "policy": j.policy,
                "governor": j.governor,
                "seed": j.seed,
                "max_sim_ns": j.limits.max_sim_ns,
                "max_events": j.limits.max_events,
                "trace": j.trace,
            })
            .to_string()
        })
        .collect();
    std::thread::spawn(move || {
        for l in lines {
            if writeln!(stdin, "{l}").is_err() {
                return;
            }
        }
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut left = jobs.len();
    while left > 0 {
        if stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                let v: serde_json::Value =
                    serde_json::from_str(&line).map_err(|e| format!("the Ray driver sent an unreadable line ({e}): {line}"))?;
                let i = v["index"].as_u64().filter(|&i| (i as usize) < jobs.len()).ok_or("the Ray driver sent a result without a valid index")? as usize;
                let report = match v.get("report") {
                    Some(r) if !r.is_null() => Ok(jobs[i].named_as_sent(&sent[i], r.clone())),
                    _ => Err(v["error"].as_str().unwrap_or("no report and no error").to_string()),
                };
                left -= 1;
                done(i, Outcome { report, wall_s: v["wall_s"].as_f64().unwrap_or(0.0) })?;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = driver.0.wait().map(|s| s.to_string()).unwrap_or_default();
                return Err(format!("the Ray driver ended ({status}) with {left} run(s) unfinished: see its messages above"));
            }
        }
    }
    // Every result is in: the driver shuts its Ray instance down and ends
    // (or is stopped on drop).
    driver.ended_within(Duration::from_secs(30));
    Ok(())
}
