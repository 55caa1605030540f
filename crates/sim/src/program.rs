// SPDX-License-Identifier: GPL-2.0-only
//! What simulated tasks run: programs of steps.
//!
//! Work is counted in cycles, so that its duration follows the frequency of
//! the core that runs it, but for the workload's memory-stall share
//! (`Workload::stall`), which lasts as long at any frequency. Workload parameters give work in microseconds "at
//! the reference frequency" of 2 GHz (REF_CYCLES_PER_US): an ASSUMPTION that
//! makes a workload the same program on every machine.

/// Cycles in one microsecond of work at the 2 GHz reference frequency.
pub const REF_CYCLES_PER_US: f64 = 2000.0;

/// The most tasks a workload file (or rt-app file) may start at once: far
/// past any machine modelled here, and a bound on what a file can make the
/// simulator allocate before it runs.
pub const MAX_INITIAL_TASKS: u64 = MAX_LIVE_TASKS;

/// The most tasks alive at once in a run: ten times the largest built-in
/// workload's (hackbench:groups=250, 10,000 threads). A workload that forks
/// past it stops with an error instead of exhausting memory.
pub const MAX_LIVE_TASKS: u64 = 100_000;

/// The most events pending in a run's queue at once: each task and CPU has
/// at most a few (queue.rs keys events by task or CPU and kind), so a run
/// within [`MAX_LIVE_TASKS`] stays far below this.
pub const MAX_PENDING_EVENTS: usize = 10_000_000;

pub type ProgId = u32;

/// An amount drawn uniformly in [mean x (1 - jitter), mean x (1 + jitter)].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Amount {
    pub mean: f64,
    pub jitter: f64,
}

impl Amount {
    pub fn fixed(mean: f64) -> Amount {
        Amount { mean, jitter: 0.0 }
    }
    pub fn jittered(mean: f64, jitter: f64) -> Amount {
        Amount { mean, jitter: jitter.clamp(0.0, 1.0) }
    }
    /// Work of `us` microseconds at the reference frequency, in cycles.
    pub fn work_us(us: f64, jitter: f64) -> Amount {
        Amount::jittered(us * REF_CYCLES_PER_US, jitter)
    }
    /// `u` is uniform in [0, 1).
    pub fn sample(&self, u: f64) -> f64 {
        if self.jitter == 0.0 {
            self.mean
        } else {
            self.mean * (1.0 - self.jitter + 2.0 * self.jitter * u)
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Run this many cycles.
    Compute(Amount),
    /// Sleep this many ns (a timer wakes the task).
    Sleep(Amount),
    /// Block on I/O for this many ns.
    Io(Amount),
    /// Create a child that runs program P; the parent goes on.
    Fork(ProgId),
    /// Replace the program image: a new comm, and exec placement.
    Exec(String),
    /// Wait for one child to exit (returns at once if there is none).
    Wait,
    /// Wait for all children to exit.
    WaitAll,
    Exit,
    /// Write one message to pipe N (blocks while the pipe is full).
    PipeWrite(u32),
    /// Read one message from pipe N (blocks while it is empty).
    PipeRead(u32),
    /// Read one message from pipe N, busy-waiting while it is empty: the
    /// task stays running, burning cycles, until a write hands it one. A
    /// flag polled in a loop (NAS LU's neighbour flags).
    PipeSpinRead(u32),
    /// Block on futex N until woken.
    FutexWait(u32),
    /// Wake up to `n` waiters of futex N.
    FutexWake(u32, u32),
    /// Wait until `count` tasks have reached barrier N.
    Barrier(u32),
    /// Wait at barrier N as an OpenMP runtime does: spin (stay running,
    /// burning cycles) for up to this many cycles, then block as `Barrier`
    /// if the barrier has not opened meanwhile. The spin is counted in
    /// cycles, like a spin count, so it is shorter at a higher frequency and
    /// does not advance while the task is preempted. A spin of less than one
    /// cycle is `Barrier`.
    BarrierSpin(u32, Amount),
    /// Run program P `n` times, then go on.
    Repeat(ProgId, u64),
    /// Run program P again and again until this many ns after the loop began.
    RepeatFor(ProgId, u64),
    /// Record the current time as the start of a measured interval, slot N.
    Mark(u32),
    /// Record a measured interval: now minus mark N, under the workload's metric.
    Measure(u32),
    /// Set the task's nice value (-20 to 19), as setpriority(2) does; its
    /// children inherit it. The fair-class models (`cfs`, `eevdf`) weigh
    /// the task by it and the sched_ext program (`scx:NAME`) sees it as the
    /// task's weight; the papers' policies weigh every task alike.
    Nice(i8),
    /// sched_setscheduler(2) to SCHED_IDLE (true) or back to SCHED_NORMAL
    /// (false); children forked later inherit it. The fair class gives an
    /// idle-policy task the least weight and its own wake-up preemption
    /// rules; a sched_ext program sees its weight and `p->policy`.
    SchedIdle(bool),
    /// migrate_disable(): the task stays on its CPU until the matching
    /// MigrateEnable (they nest); it may still be preempted and sleep.
    MigrateDisable,
    /// migrate_enable(): at the outermost one the task may move again,
    /// and leaves its CPU at once if its allowed CPUs no longer hold it.
    MigrateEnable,
    /// Move the task into cpuset N (a write to its cgroup.procs,
    /// cpuset_attach); children forked later are born in it.
    JoinCpuset(u32),
    /// Write cpuset N's CPUs (cpuset.cpus; none of the machine's: the
    /// parent's, every CPU); each member's allowed CPUs follow.
    CpusetCpus(u32, Box<[u32]>),
    /// sched_setaffinity(2): allow these CPUs (those the machine lacks are
    /// ignored; none left is EINVAL and changes nothing), for the task
    /// itself, or (`true`) for each of its live children, running, queued
    /// or sleeping. Children forked later inherit the task's own mask.
    Affinity(Box<[u32]>, bool),
    /// Take CPU N offline (false) or bring it back online (true), as a
    /// write of 0 or 1 to /sys/devices/system/cpu/cpuN/online: its tasks
    /// move to other CPUs and nothing runs there until it is back
    /// (docs/model.md, CPU hotplug). The last online CPU cannot go.
    CpuOnline(u32, bool),
}

#[derive(Clone, Debug)]
pub struct Program {
    pub name: String,
    pub steps: Vec<Step>,
}

/// A complete workload: its programs, the tasks that exist at the start, and
/// its synchronisation objects.
#[derive(Clone, Debug)]
pub struct Workload {
    pub name: String,
    pub programs: Vec<Program>,
    /// (program, comm, CPU to start on, or None for fork placement).
    pub initial: Vec<(ProgId, String, Option<u32>)>,
    /// Capacity of each pipe in messages.
    pub pipes: Vec<u32>,
    pub futexes: u32,
    /// Participants of each barrier.
    pub barriers: Vec<u32>,
    /// Cpusets (cgroup v2 children of the root), each with every CPU
    /// until a step writes its CPUs.
    pub cpusets: u32,
    /// The workload's own metric, if it has one other than completion time:
    /// (name, unit, kind).
    pub metric: Option<MetricSpec>,
    /// The parameters used, for the trace header and the JSON.
    pub params: Vec<(String, String)>,
    /// The workload ends at this time whatever its tasks are doing
    /// (rt-app's global duration); None: when its last task exits.
    pub end_ns: Option<u64>,
    /// The share (0..=1) of each computation's time at the reference
    /// frequency spent stalled on memory: that part lasts as long in ns at
    /// any frequency, the rest is cycles (docs/model.md, Workloads). 0: all
    /// cycles. Spins at barriers are all cycles whatever this is.
    pub stall: f64,
}

#[derive(Clone, Debug)]
pub struct MetricSpec {
    pub name: String,
    /// "latency": percentiles of Measure intervals (lower is better);
    /// "throughput": Measure count per second of makespan (higher is better).
    pub kind: MetricKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    Latency,
    Throughput,
}

impl Workload {
    pub fn new(name: &str) -> Workload {
        Workload {
            name: name.to_string(),
            programs: Vec::new(),
            initial: Vec::new(),
            pipes: Vec::new(),
            futexes: 0,
            barriers: Vec::new(),
            cpusets: 0,
            metric: None,
            params: Vec::new(),
            end_ns: None,
            stall: 0.0,
        }
    }
    pub fn add(&mut self, name: &str, steps: Vec<Step>) -> ProgId {
        self.programs.push(Program { name: name.to_string(), steps });
        (self.programs.len() - 1) as ProgId
    }
    pub fn pipe(&mut self, capacity: u32) -> u32 {
        self.pipes.push(capacity.max(1));
        (self.pipes.len() - 1) as u32
    }
    pub fn futex(&mut self) -> u32 {
        self.futexes += 1;
        self.futexes - 1
    }
    pub fn barrier(&mut self, count: u32) -> u32 {
        self.barriers.push(count.max(1));
        (self.barriers.len() - 1) as u32
    }

    /// Check references between programs and objects.
    pub fn validate(&self) -> Result<(), String> {
        let np = self.programs.len() as u32;
        if !(0.0..=1.0).contains(&self.stall) {
            return Err(format!("workload {}: stall share must be in 0..1, not {}", self.name.escape_debug(), self.stall));
        }
        if self.initial.is_empty() {
            return Err(format!("workload {} starts no task", self.name.escape_debug()));
        }
        for (p, _, _) in &self.initial {
            if *p >= np {
                return Err(format!("workload {}: initial task runs unknown program {p}", self.name.escape_debug()));
            }
        }
        if let Some(cycle) = self.cycle() {
            return Err(format!(
                "workload {}: programs lead back to themselves: {cycle}; a program may not fork or repeat itself, directly or through others",
                self.name.escape_debug()
            ));
        }
        for prog in &self.programs {
            for s in &prog.steps {
                let bad = match *s {
                    Step::Fork(p) | Step::Repeat(p, _) | Step::RepeatFor(p, _) => p >= np,
                    Step::PipeRead(i) | Step::PipeSpinRead(i) | Step::PipeWrite(i) => i as usize >= self.pipes.len(),
                    Step::FutexWait(i) | Step::FutexWake(i, _) => i >= self.futexes,
                    Step::Barrier(i) | Step::BarrierSpin(i, _) => i as usize >= self.barriers.len(),
                    Step::JoinCpuset(i) | Step::CpusetCpus(i, _) => i >= self.cpusets,
                    _ => false,
                };
                if bad {
                    return Err(format!(
                        "workload {}: program {} refers to a missing object in {s:?}",
                        self.name.escape_debug(),
                        prog.name.escape_debug()
                    ));
                }
            }
        }
        Ok(())
    }

    /// A cycle of programs that fork or repeat each other (`a -> b -> a`),
    /// which would nest without end, or None.
    fn cycle(&self) -> Option<String> {
        let np = self.programs.len();
        let next = |p: usize| {
            self.programs[p].steps.iter().filter_map(move |s| match *s {
                Step::Fork(q) | Step::Repeat(q, _) | Step::RepeatFor(q, _) if (q as usize) < np => Some(q as usize),
                _ => None,
            })
        };
        // Depth-first, without recursion: 0 unseen, 1 on the path, 2 done.
        let mut state = vec![0u8; np];
        for root in 0..np {
            if state[root] != 0 {
                continue;
            }
            let mut path: Vec<(usize, Vec<usize>)> = vec![(root, next(root).collect())];
            state[root] = 1;
            while let Some((p, todo)) = path.last_mut() {
                let p = *p;
                match todo.pop() {
                    Some(q) if state[q] == 1 => {
                        let from = path.iter().position(|(x, _)| *x == q).unwrap_or(0);
                        let mut names: Vec<&str> = path[from..].iter().map(|(x, _)| self.programs[*x].name.as_str()).collect();
                        names.push(&self.programs[q].name);
                        return Some(names.join(" -> "));
                    }
                    Some(q) if state[q] == 0 => {
                        state[q] = 1;
                        path.push((q, next(q).collect()));
                    }
                    Some(_) => {}
                    None => {
                        state[p] = 2;
                        path.pop();
                    }
                }
            }
        }
        None
    }
}
