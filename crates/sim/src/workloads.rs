// SPDX-License-Identifier: GPL-2.0-only
//! Built-in workload generators, each with parameters (`name:key=value,...`)
//! whose defaults come from the papers or docs/model.md (Workloads), or are
//! stated assumptions.
//!
//! Work amounts are in microseconds at the 2 GHz reference frequency (see
//! program.rs); "jitter" spreads each amount uniformly by +- that fraction.

use crate::machine::Machine;
use crate::program::{Amount, MetricKind, MetricSpec, Step, Workload, MAX_LIVE_TASKS};
use crate::SimError;

pub const WORKLOADS: &[&str] =
    &["configure", "kbuild", "perl-startup", "hackbench", "periodic", "schbench", "nas", "nas-lu", "mkl-dnn", "h2", "unixbench"];

/// The most tasks a count of tasks (threads, jobs, groups' members, copies)
/// may ask for: the simulator's limit of tasks alive at once.
const MAX_TASKS: u64 = MAX_LIVE_TASKS;
/// The most repetitions (loops, iterations, files, operations) a parameter
/// may ask for: a billion, past any run of the papers (a simulated hour
/// stops a run first) and far inside what the counters hold.
const MAX_REPEAT: u64 = 1_000_000_000;

/// Typed access to `key=value` parameters, refusing unknown keys.
struct Params<'a> {
    workload: &'a str,
    given: &'a [(String, String)],
    used: Vec<(String, String)>,
    known: Vec<&'static str>,
}

impl<'a> Params<'a> {
    fn new(workload: &'a str, given: &'a [(String, String)]) -> Self {
        Params { workload, given, used: Vec::new(), known: Vec::new() }
    }
    fn num(&mut self, key: &'static str, default: f64) -> Result<f64, SimError> {
        self.known.push(key);
        let v = match self.given.iter().rev().find(|(k, _)| k == key) {
            Some((_, v)) => v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).ok_or_else(|| {
                SimError::Input(format!("{}: parameter {key} must be a non-negative number, not '{v}'", self.workload))
            })?,
            None => default,
        };
        self.used.push((key.to_string(), v.to_string()));
        Ok(v)
    }
    /// A whole number from `min` to `max`: a count of tasks or repetitions,
    /// bounded so that the workload's size is known before it runs.
    fn int(&mut self, key: &'static str, default: u64, min: u64, max: u64) -> Result<u64, SimError> {
        let given = self.given.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        let v = self.num(key, default as f64).ok().filter(|v| v.fract() == 0.0 && *v >= min as f64 && *v <= max as f64);
        v.map(|v| v as u64).ok_or_else(|| {
            let given = given.unwrap_or_default();
            SimError::Input(format!("{}: parameter {key} must be a whole number from {min} to {max}, not '{given}'", self.workload))
        })
    }
    /// A share, in 0..=1.
    fn share(&mut self, key: &'static str, default: f64) -> Result<f64, SimError> {
        let v = self.num(key, default)?;
        if v > 1.0 {
            return Err(SimError::Input(format!("{}: parameter {key} must be at most 1, not {v}", self.workload)));
        }
        Ok(v)
    }
    fn finish(self, w: &mut Workload) -> Result<(), SimError> {
        for (k, _) in self.given {
            if !self.known.contains(&k.as_str()) {
                return Err(SimError::Input(format!(
                    "unknown parameter '{k}' for workload {}; valid: {}",
                    self.workload,
                    self.known.join(", ")
                )));
            }
        }
        w.params = self.used;
        Ok(())
    }
}

/// Refuse a workload whose parameters ask for more tasks than may be alive at once.
fn too_many(workload: &str, what: &str, n: u64) -> Result<(), SimError> {
    if n > MAX_TASKS {
        return Err(SimError::Input(format!("{workload}: {what} = {n} tasks: at most {MAX_TASKS} may be alive at once")));
    }
    Ok(())
}

fn work(us: f64, jitter: f64) -> Step {
    Step::Compute(Amount::work_us(us, jitter))
}
fn sleep_us(us: f64, jitter: f64) -> Step {
    Step::Sleep(Amount::jittered(us * 1000.0, jitter))
}

/// Build a built-in workload.
pub fn build(name: &str, params: &[(String, String)], m: &Machine) -> Result<Workload, SimError> {
    let mut p = Params::new(name, params);
    let mut w = Workload::new(name);
    match name {
        "configure" => configure(&mut w, &mut p)?,
        "kbuild" => kbuild(&mut w, &mut p, m)?,
        "perl-startup" => perl_startup(&mut w, &mut p)?,
        "hackbench" => hackbench(&mut w, &mut p)?,
        "periodic" => periodic(&mut w, &mut p)?,
        "schbench" => schbench(&mut w, &mut p)?,
        "nas" => nas(&mut w, &mut p, m)?,
        "nas-lu" => nas_lu(&mut w, &mut p, m)?,
        "mkl-dnn" => mkl_dnn(&mut w, &mut p, m)?,
        "h2" => h2(&mut w, &mut p)?,
        "unixbench" => unixbench(&mut w, &mut p)?,
        _ => {
            return Err(SimError::Input(format!(
                "unknown workload '{name}'; valid: {} (or rtapp:file=F.json, replay:trace=F.wct, hunt:seed=S,run=I, or a path to a workload .toml file)",
                WORKLOADS.join(", ")
            )))
        }
    }
    w.stall = p.share("stall", stall_default(name))?;
    p.finish(&mut w)?;
    Ok(w)
}

/// The share of a workload's computation time at the reference frequency
/// that is memory stall, which does not shrink at a higher frequency
/// (docs/model.md, Workloads).
fn stall_default(name: &str) -> f64 {
    match name {
        // schbench's worker spins on the clock (usec_spin, gettimeofday):
        // its time is the same at any frequency.
        "schbench" => 1.0,
        // rt-app's run is a calibrated busy loop.
        "periodic" => 0.0,
        // ASSUMPTION: class C grids far larger than the caches, and an
        // in-memory database.
        "nas" | "nas-lu" | "h2" => 0.3,
        // ASSUMPTION: compilers, shells, fork and exec, pipes, convolutions.
        _ => 0.1,
    }
}

/// autoconf/cmake configure: a shell runs checks one after another; each
/// check forks a subshell that runs the compiler driver, which forks cc1 and
/// then as, waiting for each: a fork/wait chain. A parent goes on for a
/// moment after its fork before it waits, so one or two tasks run at a time
/// (Nest, section 5.2; Fewer Cores, More Hertz, section 2). This short-task
/// pattern is about half of the run, the rest longer tasks that run alone
/// (Nest, section 5.2): `long_share` of the run's work, in tasks of
/// `long_us` forked and waited for between the checks.
/// ASSUMPTIONS: 300 checks; shell work 300 us between checks, subshell 200
/// us, driver 1 ms, cc1 8 ms, as 1.5 ms (a check takes about 11 ms, in the
/// 10-50 ms range of docs/model.md, Workloads); a parent's 10 us after a
/// fork; long tasks of 100 ms; jitter 0.5.
fn configure(w: &mut Workload, p: &mut Params) -> Result<(), SimError> {
    let checks = p.int("checks", 300, 1, MAX_REPEAT)?;
    let shell = p.num("shell_us", 300.0)?;
    let sub = p.num("subshell_us", 200.0)?;
    let driver = p.num("driver_us", 1000.0)?;
    let cc1 = p.num("cc1_us", 8000.0)?;
    let asm = p.num("as_us", 1500.0)?;
    let after_fork = p.num("after_fork_us", 10.0)?;
    let long_share = p.share("long_share", 0.5)?;
    let long = p.num("long_us", 100_000.0)?;
    let j = p.num("jitter", 0.5)?;
    let cc1_p = w.add("cc1", vec![Step::Exec("cc1".into()), work(cc1, j), Step::Exit]);
    let as_p = w.add("as", vec![Step::Exec("as".into()), work(asm, j), Step::Exit]);
    let gcc = w.add(
        "gcc",
        vec![
            Step::Exec("gcc".into()),
            work(driver / 2.0, j),
            Step::Fork(cc1_p),
            Step::Wait,
            work(driver / 2.0, j),
            Step::Fork(as_p),
            Step::Wait,
            Step::Exit,
        ],
    );
    let subshell = w.add("subshell", vec![work(sub, j), Step::Fork(gcc), work(after_fork, j), Step::Wait, Step::Exit]);
    let check = w.add("check", vec![work(shell, j), Step::Fork(subshell), work(after_fork, j), Step::Wait]);
    // As many long tasks as make their share of the whole run's work, spread
    // evenly between the checks.
    let check_us = shell + sub + driver + cc1 + asm + 2.0 * after_fork;
    let n_long = if long > 0.0 && long_share < 1.0 {
        (checks as f64 * check_us * long_share / (1.0 - long_share) / long).round() as u64
    } else {
        0
    };
    let mut main = vec![Step::Exec("sh".into())];
    if let Some(per_block) = checks.checked_div(n_long) {
        let long_p = w.add("long", vec![Step::Exec("long".into()), work(long, j), Step::Exit]);
        let block =
            w.add("block", vec![Step::Repeat(check, per_block), Step::Fork(long_p), work(after_fork, j), Step::Wait]);
        main.push(Step::Repeat(block, n_long));
        main.push(Step::Repeat(check, checks % n_long));
    } else {
        main.push(Step::Repeat(check, checks));
    }
    main.push(Step::Exit);
    let main = w.add("configure", main);
    w.initial.push((main, "configure".into(), Some(0)));
    Ok(())
}

/// Linux kernel build with make -jN (Fewer Cores, More Hertz, section 2): a mostly
/// sequential fork/wait phase, a parallel phase of N jobs, a sequential tail.
/// make goes on for a moment after a fork before it waits, as configure's
/// shell does. The phase before the parallel one takes 4.4 s on the E7
/// under CFS (section 4.4): one or two tasks at a time at the lowest
/// frequency, 1.2 GHz, from 0 to 2 s and from 2.5 to 4.5 s, with a short
/// burst of parallel work at a high frequency between them (section 2,
/// Figure 1; section 4.4, Figure 7). Sizes (docs/model.md, Workloads:
/// kbuild): `seq_pre` steps of a 2 ms shell and 110 us of make (100 before
/// the fork, 10 after) fill the 4 s of sequential work under CFS, `burst`
/// compile jobs fill the 0.5 s burst. ASSUMPTIONS: 100 sequential steps
/// after the parallel phase; 1000 compile jobs of 40 ms (jitter 0.7); jobs
/// defaults to the number of CPUs.
fn kbuild(w: &mut Workload, p: &mut Params, m: &Machine) -> Result<(), SimError> {
    let jobs = p.int("jobs", m.nr_cpus as u64, 1, MAX_TASKS)?;
    let files = p.int("files", 1000, 0, MAX_REPEAT)?;
    let seq_pre = p.int("seq_pre", 990, 0, MAX_REPEAT)?;
    let burst = p.int("burst", 1280, 0, MAX_REPEAT)?;
    let seq_post = p.int("seq_post", 100, 0, MAX_REPEAT)?;
    let step = p.num("seq_us", 2000.0)?;
    let cc = p.num("cc_us", 40000.0)?;
    let after_fork = p.num("after_fork_us", 10.0)?;
    let j = p.num("jitter", 0.7)?;
    let short = w.add("short", vec![Step::Exec("sh".into()), work(step, j), Step::Exit]);
    let seq = w.add("seq", vec![work(100.0, j), Step::Fork(short), work(after_fork, j), Step::Wait]);
    let cc_p = w.add("cc1", vec![Step::Exec("cc1".into()), work(cc, j), Step::Exit]);
    let one = w.add("job", vec![work(200.0, j), Step::Fork(cc_p), Step::Wait]);
    let mut main = vec![Step::Exec("make".into()), Step::Repeat(seq, seq_pre / 2)];
    parallel(w, &mut main, one, burst, jobs);
    main.push(Step::Repeat(seq, seq_pre - seq_pre / 2));
    parallel(w, &mut main, one, files, jobs);
    main.push(Step::Repeat(seq, seq_post));
    main.push(Step::Exit);
    let main = w.add("make", main);
    w.initial.push((main, "make".into(), Some(0)));
    Ok(())
}

/// make's jobserver running `files` compile jobs in at most `jobs` slots at
/// once: a slot per job token, each running its share of the jobs one
/// after another, and make waiting for all of them.
fn parallel(w: &mut Workload, main: &mut Vec<Step>, one: u32, files: u64, jobs: u64) {
    if files == 0 {
        return;
    }
    let per_slot = files / jobs;
    let extra = files % jobs;
    let slot = w.add("make-slot", vec![Step::Repeat(one, per_slot), Step::Exit]);
    let slot_x = w.add("make-slot", vec![Step::Repeat(one, per_slot + 1), Step::Exit]);
    for i in 0..jobs.min(files) {
        main.push(Step::Fork(if i < extra { slot_x } else { slot }));
    }
    main.push(Step::WaitAll);
}

/// perl-benchmark startup: a serial loop of system(perl -e 1): fork, exec,
/// a short run, exit, wait (docs/model.md, Workloads). ASSUMPTIONS: 200
/// iterations, perl start-up 3 ms, parent work 100 us.
fn perl_startup(w: &mut Workload, p: &mut Params) -> Result<(), SimError> {
    let n = p.int("iterations", 200, 1, MAX_REPEAT)?;
    let run = p.num("perl_us", 3000.0)?;
    let parent = p.num("parent_us", 100.0)?;
    let j = p.num("jitter", 0.2)?;
    let child = w.add("perl", vec![Step::Exec("perl".into()), work(run, j), Step::Exit]);
    let it = w.add("iter", vec![work(parent, j), Step::Fork(child), Step::Wait]);
    let main = w.add("perlbench", vec![Step::Repeat(it, n), Step::Exit]);
    w.initial.push((main, "perlbench".into(), Some(0)));
    Ok(())
}

/// hackbench (docs/model.md, Workloads): groups of 20 senders and 20
/// receivers over pipes; each sender writes `loops` messages to each receiver
/// of its group. Start: every task blocks on a futex, the main task wakes
/// them all. Pipe capacity 655 messages (64 KiB / 100 B). ASSUMPTIONS: a
/// write costs 3 us and a read 2 us of work.
fn hackbench(w: &mut Workload, p: &mut Params) -> Result<(), SimError> {
    let groups = p.int("groups", 10, 1, MAX_TASKS / 2)?;
    let fds = p.int("fds", 20, 1, MAX_TASKS / 2)?;
    let loops = p.int("loops", 100, 1, MAX_REPEAT)?;
    let wr = p.num("write_us", 3.0)?;
    let rd = p.num("read_us", 2.0)?;
    let cap = p.int("pipe_msgs", 655, 1, MAX_REPEAT)? as u32;
    too_many("hackbench", "groups x fds x 2", groups * fds * 2)?;
    let start = w.futex();
    let mut main = vec![Step::Exec("hackbench".into())];
    for _ in 0..groups {
        let pipes: Vec<u32> = (0..fds).map(|_| w.pipe(cap)).collect();
        let mut body = Vec::new();
        for &pp in &pipes {
            body.push(work(wr, 0.2));
            body.push(Step::PipeWrite(pp));
        }
        let send_body = w.add("send", body);
        let sender = w.add("sender", vec![Step::FutexWait(start), Step::Repeat(send_body, loops), Step::Exit]);
        for &pp in &pipes {
            let rbody = w.add("recv", vec![Step::PipeRead(pp), work(rd, 0.2)]);
            let receiver = w.add("receiver", vec![Step::FutexWait(start), Step::Repeat(rbody, loops * fds), Step::Exit]);
            main.push(Step::Fork(receiver));
        }
        for _ in 0..fds {
            main.push(Step::Fork(sender));
        }
    }
    // Let every task reach the start futex, then wake them all.
    main.push(Step::Sleep(Amount::fixed(1e6)));
    main.push(Step::FutexWake(start, u32::MAX));
    main.push(Step::Mark(0));
    main.push(Step::WaitAll);
    main.push(Step::Measure(0));
    main.push(Step::Exit);
    let main = w.add("hackbench", main);
    w.initial.push((main, "hackbench".into(), Some(0)));
    w.metric = Some(MetricSpec { name: "hackbench_time_ns".into(), kind: MetricKind::Latency });
    Ok(())
}

/// rt-app's simplest task: N tasks alternating R of work and S of sleep for
/// a duration. Defaults: 4 tasks, 1 ms / 4 ms, 1 s (ASSUMPTIONS).
fn periodic(w: &mut Workload, p: &mut Params) -> Result<(), SimError> {
    let n = p.int("tasks", 4, 1, MAX_TASKS)?;
    let run = p.num("run_us", 1000.0)?;
    let sl = p.num("sleep_us", 4000.0)?;
    let dur = p.num("duration_ms", 1000.0)?;
    let body = w.add("period", vec![work(run, 0.0), sleep_us(sl, 0.0)]);
    let task = w.add("periodic", vec![Step::RepeatFor(body, (dur * 1e6) as u64), Step::Exit]);
    let mut main = vec![];
    for _ in 0..n {
        main.push(Step::Fork(task));
    }
    main.push(Step::WaitAll);
    main.push(Step::Exit);
    let main = w.add("rt-app", main);
    w.initial.push((main, "rt-app".into(), Some(0)));
    Ok(())
}

/// schbench (docs/model.md, Workloads): `message` threads each with
/// `workers` workers. A worker spins c, queues itself on its message thread,
/// wakes it with a futex and waits on its own; the message thread waits on
/// its futex until a worker wakes it, sleeps s plus up to s/4, then wakes
/// every queued worker (one timestamp for the batch) and waits again. A
/// worker's wake-up while its message thread sleeps is lost, as in
/// schbench, where the message thread resets its futex before each batch.
/// Metric: wake-up latency from the batch timestamp to the worker running.
/// Defaults from schbench: 2 message threads, 16 workers, s = c = 30 ms,
/// 30 s; the run ends then, whatever its threads are doing.
fn schbench(w: &mut Workload, p: &mut Params) -> Result<(), SimError> {
    let msg = p.int("message", 2, 1, MAX_TASKS)?;
    let workers = p.int("workers", 16, 1, MAX_TASKS)?;
    too_many("schbench", "message x (workers + 1)", msg * (workers + 1))?;
    let c = p.num("cputime_us", 30000.0)?;
    let s = p.num("sleep_us", 30000.0)?;
    let dur = p.num("runtime_ms", 30000.0)?;
    let mut main = vec![];
    for m in 0..msg {
        let worker_fut = w.futex();
        let msg_fut = w.futex();
        let wbody = w.add(
            "worker-loop",
            vec![work(c, 0.0), Step::FutexWake(msg_fut, 1), Step::FutexWait(worker_fut), Step::Measure(m as u32)],
        );
        let worker = w.add("worker", vec![Step::Repeat(wbody, u64::MAX), Step::Exit]);
        // Sleep s + up to s/4 jitter: mean 1.125 s, jitter 1/9.
        let mbody = w.add(
            "message-loop",
            vec![
                Step::Mark(m as u32),
                Step::FutexWake(worker_fut, u32::MAX),
                Step::FutexWait(msg_fut),
                Step::Sleep(Amount::jittered(s * 1.125e3, 1.0 / 9.0)),
            ],
        );
        let mut mt = vec![];
        for _ in 0..workers {
            mt.push(Step::Fork(worker));
        }
        mt.push(Step::Repeat(mbody, u64::MAX));
        mt.push(Step::Exit);
        let mt = w.add("message", mt);
        main.push(Step::Fork(mt));
    }
    main.push(Step::WaitAll);
    main.push(Step::Exit);
    let main = w.add("schbench", main);
    w.initial.push((main, "schbench".into(), Some(0)));
    w.metric = Some(MetricSpec { name: "wakeup_latency_us".into(), kind: MetricKind::Latency });
    w.end_ns = Some((dur * 1e6) as u64);
    Ok(())
}

/// How long an OpenMP thread spins at a barrier before it sleeps, in us at
/// the reference frequency: libgomp without OMP_WAIT_POLICY spins 300 000
/// iterations, "3 msec" by its own estimate of 100 000 spins per ms, and
/// only 100 iterations when there are more threads than CPUs
/// (docs/model.md, Workloads; gcc libgomp/env.c). ASSUMPTION: that
/// estimate holds at the 2 GHz reference frequency (3000 us and 1 us).
fn omp_spin_default(threads: u64, m: &Machine) -> f64 {
    if threads > m.nr_cpus as u64 {
        1.0
    } else {
        3000.0
    }
}

/// NAS-like OpenMP kernel (docs/model.md, Workloads): one thread per CPU,
/// iterations of parallel regions ended by barriers, where threads spin
/// `spin_us` before they block (libgomp's default wait policy; see
/// omp_spin_default; spin_us=0: block at once). ASSUMPTIONS: 200
/// iterations of 2 ms per thread (jitter 0.1).
fn nas(w: &mut Workload, p: &mut Params, m: &Machine) -> Result<(), SimError> {
    let threads = p.int("threads", m.nr_cpus as u64, 1, MAX_TASKS)?;
    let iters = p.int("iterations", 200, 1, MAX_REPEAT)?;
    let region = p.num("region_us", 2000.0)?;
    let j = p.num("jitter", 0.1)?;
    let spin = p.num("spin_us", omp_spin_default(threads, m))?;
    barrier_threads(w, threads, iters, work(region, j), spin, ["region", "omp", "nas"]);
    Ok(())
}

/// NAS LU (NPB OpenMP, docs/model.md, Workloads): each SSOR iteration
/// computes the right-hand side in a parallel loop ended by a barrier, then
/// sweeps the grid's k planes twice as a wavefront: in the lower sweep a
/// thread busy-waits on its left neighbour's flag for each plane, computes
/// its block of the plane and sets its own flag for its right neighbour;
/// the upper sweep runs the other way. Each sweep ends at a barrier. The
/// flags are pipes read by polling (Step::PipeSpinRead); the barriers spin
/// `spin_us` first as in `nas`. 250 iterations, as LU runs (its `itmax`
/// for classes B and C): with fewer, the start (forking a thread a CPU)
/// outweighs the solver, and a policy is judged on its forks. ASSUMPTIONS:
/// 2 ms per thread an iteration, half for the right-hand side and a quarter
/// per sweep; 160 planes (class C: 162 - 2); jitter 0.1.
fn nas_lu(w: &mut Workload, p: &mut Params, m: &Machine) -> Result<(), SimError> {
    let threads = p.int("threads", m.nr_cpus as u64, 1, MAX_TASKS)? as usize;
    let iters = p.int("iterations", 250, 1, MAX_REPEAT)?;
    let planes = p.int("planes", 160, 1, MAX_REPEAT)?;
    let region = p.num("region_us", 2000.0)?;
    let j = p.num("jitter", 0.1)?;
    let spin = p.num("spin_us", omp_spin_default(threads as u64, m))?;
    let b = w.barrier(threads as u32);
    let wait = if spin > 0.0 { Step::BarrierSpin(b, Amount::work_us(spin, 0.0)) } else { Step::Barrier(b) };
    // lower[i]: thread i to i + 1; upper[i]: thread i + 1 to i.
    let lower: Vec<u32> = (1..threads).map(|_| w.pipe(u32::MAX)).collect();
    let upper: Vec<u32> = (1..threads).map(|_| w.pipe(u32::MAX)).collect();
    let block = work(region / 4.0 / planes as f64, j);
    let mut main = vec![];
    for i in 0..threads {
        let mut low = vec![];
        if i > 0 {
            low.push(Step::PipeSpinRead(lower[i - 1]));
        }
        low.push(block.clone());
        if i + 1 < threads {
            low.push(Step::PipeWrite(lower[i]));
        }
        let mut up = vec![];
        if i + 1 < threads {
            up.push(Step::PipeSpinRead(upper[i]));
        }
        up.push(block.clone());
        if i > 0 {
            up.push(Step::PipeWrite(upper[i - 1]));
        }
        let low = w.add("blts", low);
        let up = w.add("buts", up);
        let ssor = w.add(
            "ssor",
            vec![
                work(region / 2.0, j),
                wait.clone(),
                Step::Repeat(low, planes),
                wait.clone(),
                Step::Repeat(up, planes),
                wait.clone(),
            ],
        );
        if i == 0 {
            main.push(Step::Repeat(ssor, iters));
        } else {
            let worker = w.add("omp", vec![Step::Repeat(ssor, iters), Step::Exit]);
            main.insert(0, Step::Fork(worker));
        }
    }
    main.push(Step::WaitAll);
    main.push(Step::Exit);
    let main = w.add("nas-lu", main);
    w.initial.push((main, "nas-lu".into(), Some(0)));
    Ok(())
}

/// mkl-dnn-like (Fewer Cores, More Hertz, section 4.4): threads on all
/// CPUs with short work items between barriers, where "all threads keep
/// blocking and unblocking" (the paper): a thread that reaches a barrier
/// sleeps on a futex at once and the last one wakes the others
/// (`spin_us`=0; a spin-then-block wait as in `nas` with spin_us > 0).
/// ASSUMPTIONS: 2000 iterations of 100 us.
fn mkl_dnn(w: &mut Workload, p: &mut Params, m: &Machine) -> Result<(), SimError> {
    let threads = p.int("threads", m.nr_cpus as u64, 1, MAX_TASKS)?;
    let iters = p.int("iterations", 2000, 1, MAX_REPEAT)?;
    let item = p.num("item_us", 100.0)?;
    let j = p.num("jitter", 0.3)?;
    let spin = p.num("spin_us", 0.0)?;
    barrier_threads(w, threads, iters, work(item, j), spin, ["item", "mkl", "mkl-dnn"]);
    Ok(())
}

/// `threads` threads (the main one and its forked workers) each run `iters`
/// iterations of `item` followed by a barrier of all of them, spinning up
/// to `spin_us` there before blocking (0: block at once). `names`: the
/// iteration body, the worker program, the main program.
fn barrier_threads(w: &mut Workload, threads: u64, iters: u64, item: Step, spin_us: f64, names: [&str; 3]) {
    let b = w.barrier(threads as u32);
    let wait = if spin_us > 0.0 { Step::BarrierSpin(b, Amount::work_us(spin_us, 0.0)) } else { Step::Barrier(b) };
    let body = w.add(names[0], vec![item, wait]);
    let worker = w.add(names[1], vec![Step::Repeat(body, iters), Step::Exit]);
    let mut main = vec![];
    for _ in 1..threads {
        main.push(Step::Fork(worker));
    }
    main.push(Step::Repeat(body, iters));
    main.push(Step::WaitAll);
    main.push(Step::Exit);
    let main = w.add(names[2], main);
    w.initial.push((main, names[2].into(), Some(0)));
}

/// DaCapo h2-like (Nest, section 5.3): a pool of about 10
/// threads doing short transactions separated by brief sleeps.
/// ASSUMPTIONS: 10 threads, 400 transactions each of 300 us work and 50 us
/// sleep (a lock or I/O wait).
fn h2(w: &mut Workload, p: &mut Params) -> Result<(), SimError> {
    let threads = p.int("threads", 10, 1, MAX_TASKS)?;
    let tx = p.int("transactions", 400, 1, MAX_REPEAT)?;
    let run = p.num("tx_us", 300.0)?;
    let sl = p.num("sleep_us", 50.0)?;
    let body = w.add("tx", vec![work(run, 0.5), sleep_us(sl, 0.5)]);
    let worker = w.add("h2-worker", vec![Step::Repeat(body, tx), Step::Exit]);
    let mut main = vec![Step::Exec("java".into())];
    for _ in 0..threads {
        main.push(Step::Fork(worker));
    }
    main.push(Step::WaitAll);
    main.push(Step::Exit);
    let main = w.add("h2", main);
    w.initial.push((main, "java".into(), Some(0)));
    Ok(())
}

/// UnixBench-like tests (Haiku's scheduler reports UnixBench scores), chosen
/// by `test`: 0 = execl throughput (a process exec'ing itself), 1 = pipe
/// throughput (one process writing then reading a pipe), 2 = pipe-based
/// context switching (two processes ping-ponging over two pipes), 3 = shell
/// scripts with 1 concurrent, 4 = shell scripts with 8 concurrent, 5, 6, 7 =
/// file copy (fstime's copy test) with 1024-byte buffers and 2000 blocks,
/// 256 and 500, 4096 and 8000: one process reading a buffer from one file
/// and writing it to another, both rewound at the end of the file (max
/// blocks KiB). `copies` runs that many copies of the test at once, as
/// UnixBench's parallel runs. The metric is operations per second of the run
/// (higher is better); a file copy's operation is one buffer copied.
/// ASSUMPTIONS: exec 150 us, pipe operation 2 us, a script forks 4
/// utilities of 1 ms each; a file read or write call 2.4 us plus 0.45 us per
/// KiB moved (docs/model.md, Workloads); 2000 operations per copy (100
/// scripts per copy).
fn unixbench(w: &mut Workload, p: &mut Params) -> Result<(), SimError> {
    let test = p.int("test", 2, 0, 7).map_err(|e| {
        SimError::Input(format!("{e}: 0 execl, 1 pipe, 2 context, 3 shell1, 4 shell8, 5 copy1024, 6 copy256, 7 copy4096"))
    })?;
    let ops = p.int("operations", 2000, 1, MAX_REPEAT)?;
    let exec = p.num("exec_us", 150.0)?;
    let pipe_op = p.num("pipe_us", 2.0)?;
    let util = p.num("utility_us", 1000.0)?;
    let file_call = p.num("file_call_us", 2.4)?;
    let per_kib = p.num("file_kib_us", 0.45)?;
    let copies = p.int("copies", 1, 1, MAX_TASKS)?;
    let main = match test {
        0 => {
            let body = w.add("execl", vec![Step::Exec("execl".into()), work(exec, 0.1), Step::Measure(0)]);
            w.add("execl", vec![Step::Repeat(body, ops), Step::Exit])
        }
        1 => {
            let pp = w.pipe(128);
            let body = w.add("pipe", vec![Step::PipeWrite(pp), work(pipe_op, 0.1), Step::PipeRead(pp), work(pipe_op, 0.1), Step::Measure(0)]);
            w.add("pipe", vec![Step::Repeat(body, ops), Step::Exit])
        }
        2 => {
            let (a, b) = (w.pipe(128), w.pipe(128));
            let pong_body = w.add("pong", vec![Step::PipeRead(a), work(pipe_op, 0.1), Step::PipeWrite(b)]);
            let pong = w.add("pong", vec![Step::Repeat(pong_body, ops), Step::Exit]);
            let ping_body =
                w.add("ping", vec![work(pipe_op, 0.1), Step::PipeWrite(a), Step::PipeRead(b), Step::Measure(0)]);
            w.add("context1", vec![Step::Fork(pong), Step::Repeat(ping_body, ops), Step::WaitAll, Step::Exit])
        }
        3 | 4 => {
            let copies = if test == 3 { 1 } else { 8 };
            let u = w.add("utility", vec![Step::Exec("util".into()), work(util, 0.5), Step::Exit]);
            let script = w.add(
                "script",
                vec![
                    Step::Exec("sh".into()),
                    work(200.0, 0.5),
                    Step::Fork(u),
                    Step::Wait,
                    Step::Fork(u),
                    Step::Wait,
                    Step::Fork(u),
                    Step::Wait,
                    Step::Fork(u),
                    Step::Wait,
                    Step::Exit,
                ],
            );
            let body = w.add("looper", vec![Step::Fork(script), Step::Wait, Step::Measure(0)]);
            let per_copy = (ops / 20).max(1);
            let copy = w.add("looper", vec![Step::Repeat(body, per_copy), Step::Exit]);
            let mut m = vec![];
            for _ in 0..copies {
                m.push(Step::Fork(copy));
            }
            m.push(Step::WaitAll);
            m.push(Step::Exit);
            w.add("shell", m)
        }
        5..=7 => {
            let (bufsize, max_blocks) = [(1024, 2000), (256, 500), (4096, 8000)][test as usize - 5];
            let call = file_call + per_kib * bufsize as f64 / 1024.0;
            let block = w.add("fstime", vec![work(call, 0.1), work(call, 0.1), Step::Measure(0)]);
            // A pass copies the whole file, then both files are rewound.
            let per_pass = max_blocks * 1024 / bufsize;
            let pass = w.add("fstime", vec![Step::Repeat(block, per_pass), work(2.0 * file_call, 0.1)]);
            w.add("fstime", vec![Step::Repeat(pass, ops / per_pass), Step::Repeat(block, ops % per_pass), Step::Exit])
        }
        _ => unreachable!("unixbench: test is range-checked above"),
    };
    let main = if copies == 1 {
        main
    } else {
        let mut m: Vec<Step> = (0..copies).map(|_| Step::Fork(main)).collect();
        m.push(Step::WaitAll);
        m.push(Step::Exit);
        w.add("unixbench", m)
    };
    w.initial.push((main, "unixbench".into(), Some(0)));
    w.metric = Some(MetricSpec { name: "unixbench_ops_per_s".into(), kind: MetricKind::Throughput });
    Ok(())
}
