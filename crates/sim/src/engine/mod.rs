// SPDX-License-Identifier: GPL-2.0-only
//! The discrete-event engine: time in ns, one heap of events with a stable
//! tie-break (insertion sequence), a seeded ChaCha RNG. Deterministic: the
//! same inputs and seed give the same events in the same order.
//!
//! Hot paths are O(1) or O(log n) (the heap); stale events (a segment end
//! whose task was preempted, a DVFS sample of a core that changed state) are
//! dropped by generation numbers instead of being searched for, and a new
//! event for the same CPU, core, task or timer replaces its stale
//! predecessor in the heap (queue.rs).
//!
//! This file holds the event loop (`Engine::run`, `handle`, and `drain` for
//! what handlers and policies ask for) and the scheduler core around the
//! policy: task creation, wake-ups, blocking, exit, preemption, context
//! switches, idle entry and exit, ticks. The engine's other methods are in
//! its two parts:
//! - interp.rs: the interpreter of the tasks' programs (`advance`);
//! - hotplug.rs: CPU hotplug (`set_online`).
//!
//! Its neighbours:
//! - sim.rs: `Sim`, `Task`, `Cpu`, what a policy reads and may do;
//! - hardware.rs: rates, DVFS, PELT and schedutil, idle-state choice,
//!   energy.
//!
//! The types of the policy interface are re-exported here, where the rest of
//! the workspace has always found them.

mod hotplug;
mod interp;

use std::collections::VecDeque;

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use smallvec::{smallvec, SmallVec};
use warmcore_trace::event::prev_state;
use warmcore_trace::ids;

use crate::dvfs::{CoreDvfs, Governor};
use crate::kernel_time;
use crate::machine::Machine;
use crate::policy::{Enq, Policy, Wake, WakeKind};
use crate::program::{ProgId, Step, Workload, MAX_LIVE_TASKS, MAX_PENDING_EVENTS};
use crate::queue::{Entry, EventQueue};
use crate::SimError;

use crate::sim::{Action, Barrier, BlockedOn, Kind, Pipe, SocketEnergy, WaitFor};
pub use crate::sim::{CountSink, Cpu, Mode, Sim, Sink, TState, Task, Tid, TimerId, TICK_NS};

type QEv = Entry;

/// Limits that stop a run early, with a partial result.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_sim_ns: u64,
    pub max_events: u64,
}
impl Default for Limits {
    fn default() -> Self {
        // ASSUMPTION: generous defaults that stop runaway runs: one simulated
        // hour, 10^10 trace events.
        Limits { max_sim_ns: 3_600_000_000_000, max_events: 10_000_000_000 }
    }
}

/// Engine = state + policy.
pub struct Engine {
    pub sim: Sim,
    pub policy: Box<dyn Policy>,
    /// Check the engine's invariants after every event (tests; slow).
    pub check_invariants: bool,
}

/// What a run produced (metrics that need the analyzer are added by run.rs).
#[derive(Clone, Debug)]
pub struct Outcome {
    pub makespan_ns: u64,
    pub energy_j: f64,
    pub energy_per_socket_j: Vec<f64>,
    pub trace_events: u64,
    pub queue_events: u64,
    pub migrations: u64,
    /// Why the run stopped early, if it did.
    pub partial: Option<String>,
    /// The policy's scheduler was ejected (the reason is in `partial`).
    pub ejected: bool,
    pub samples: Vec<u64>,
    pub measures: u64,
    pub policy_stats: serde_json::Value,
    /// Placements, and the CPUs the policy looked at in them.
    pub placements: u64,
    pub placement_scans: u64,
}

impl Engine {
    pub fn new(
        machine: Machine,
        governor: Governor,
        policy: Box<dyn Policy>,
        workload: Workload,
        seed: u64,
        sink: Box<dyn Sink>,
    ) -> Result<Engine, SimError> {
        workload.validate().map_err(SimError::Input)?;
        let n = machine.nr_cpus as usize;
        let floor = governor.floor(&machine);
        let deepest = (machine.spec.idle.len() - 1) as u8;
        let cores = (0..machine.nr_cores)
            .map(|_| {
                let mut c = CoreDvfs::new(floor);
                c.idle_state = deepest;
                c
            })
            .collect();
        // Before its first tick in the run, a CPU's sample is the one its
        // last tick before the run took: the average over one tick of work
        // started from idle, low where the hardware ramps slowly (the E7-8870
        // v4), higher where it is fast (the 6130 and 5218: "when a core
        // becomes idle there is often no clock tick that observes a low
        // frequency", Nest, section 5.2). docs/model.md, S_move as patched;
        // smove:unsampled=low is the other choice.
        let tick_freq = crate::dvfs::avg_freq_after_busy(&machine, governor, TICK_NS);
        let cpus = (0..n)
            .map(|_| Cpu {
                mode: Mode::Idle,
                curr: None,
                prev: (0, 0),
                idle_state: (machine.spec.idle.len() - 1) as u8,
                idle_since: 0,
                // rq->avg_idle starts at 2 x migration_cost = 1 ms
                // (docs/model.md, Placement in the fair class).
                avg_idle: 1e6,
                resume_latency_us: None,
                seg_start: 0,
                rate: 0.0,
                seg_gen: 0,
                seg_deferred: 0,
                wake_gen: 0,
                tick_pending: false,
                tick_freq,
                ticked: false,
                aperf: 0.0,
                mperf: 0,
                c0: false,
                c0_t: 0,
                tick_aperf: 0.0,
                tick_mperf: 0,
                nr: 0,
                spin_until: 0,
                spin_gen: 0,
                util: 0.0,
                util_t: 0,
            })
            .collect();
        let pipes = workload
            .pipes
            .iter()
            .map(|&cap| Pipe { cap, msgs: 0, readers: VecDeque::new(), writers: VecDeque::new() })
            .collect();
        let futexes = (0..workload.futexes).map(|_| VecDeque::new()).collect();
        let barriers = workload.barriers.iter().map(|&count| Barrier { count, arrived: Vec::new() }).collect();
        let nmarks = workload
            .programs
            .iter()
            .flat_map(|p| p.steps.iter())
            .filter_map(|s| match s {
                Step::Mark(i) | Step::Measure(i) => Some(*i as usize + 1),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let sockets = machine.nr_sockets() as usize;
        let mut prog_span = Vec::with_capacity(workload.programs.len() + 1);
        let mut at = 0u32;
        for p in &workload.programs {
            prog_span.push((at, at + p.steps.len() as u32));
            at += p.steps.len() as u32;
        }
        // A daemon's program, after the workload's: one computation longer
        // than any run (10^18 cycles, years at any frequency).
        let daemon_prog = prog_span.len() as ProgId;
        prog_span.push((at, at + 1));
        let mut steps: Vec<Step> = workload.programs.iter().flat_map(|p| p.steps.iter().cloned()).collect();
        steps.push(Step::Compute(crate::program::Amount::fixed(1e18)));
        // The machine's background daemons: a loop program, then its body
        // (sleep, then run), after the daemon's.
        let background = machine.spec.background.as_ref().filter(|b| b.daemons > 0).map(|b| {
            let lp = prog_span.len() as ProgId;
            prog_span.push((at + 1, at + 2));
            prog_span.push((at + 2, at + 4));
            steps.push(Step::Repeat(lp + 1, u64::MAX));
            steps.push(Step::Sleep(crate::program::Amount::jittered(b.period_ms * 1e6, 1.0)));
            steps.push(Step::Compute(crate::program::Amount::work_us(b.run_us, 0.0)));
            (lp, b.daemons)
        });
        let sim = Sim {
            governor,
            now: 0,
            seq: 0,
            heap: EventQueue::new(),
            deferred_segments: Vec::new(),
            tasks: Vec::new(),
            cpus,
            offline: vec![false; n],
            nr_online: n as u32,
            cores,
            socket_active: vec![0; sockets],
            socket_energy: vec![SocketEnergy::default(); sockets],
            actions: VecDeque::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            sink,
            sink_err: None,
            events: 0,
            timers: Vec::new(),
            free_timers: Vec::new(),
            pipes,
            cpusets: vec![None; workload.cpusets as usize],
            futexes,
            barriers,
            marks: vec![0; nmarks],
            samples: Vec::new(),
            measures: 0,
            alive: 0,
            waiting_on_tasks: 0,
            next_pid: 1,
            migrations: 0,
            last_exit: 0,
            zero_time_steps: 0,
            abort: None,
            perf_target: None,
            daemon_prog,
            background,
            scanned: std::cell::Cell::new(0),
            placements: 0,
            placement_scans: 0,
            any_sched_idle: false,
            decay: Default::default(),
            steps: std::rc::Rc::new(steps),
            prog_span,
            workload,
            machine,
        };
        let mut sim = sim;
        for socket in 0..sockets as u32 {
            sim.refresh_socket_power(socket);
        }
        Ok(Engine { sim, policy, check_invariants: std::env::var_os("WARMCORE_SIM_CHECK").is_some() })
    }

    /// Run to completion, or until a limit; a deadlock is an error.
    pub fn run(&mut self, limits: Limits) -> Result<Outcome, SimError> {
        let s = &mut self.sim;
        for c in 0..s.machine.nr_cpus {
            let st = s.cpus[c as usize].idle_state as u32;
            s.emit(c, 0, ids::IDLE_ENTER, st, 0);
            let f = s.cores[s.machine.cpu_core[c as usize] as usize].freq;
            s.emit(c, 0, ids::FREQ_CHANGE, f, 0);
        }
        self.policy.init(&mut self.sim);
        for d in self.policy.daemons() {
            self.spawn_daemon(&d.comm, d.cpu)?;
        }
        if let Some((prog, n)) = self.sim.background {
            for i in 0..n {
                self.start_task(prog, &format!("daemon{i}"), None, true)?;
            }
        }
        let initial = self.sim.workload.initial.clone();
        for (prog, comm, cpu) in initial {
            self.spawn(prog, &comm, cpu)?;
        }
        self.drain()?;
        self.sim.arm_deferred_segments();
        let mut partial = None;
        loop {
            if self.sim.alive == 0 {
                break;
            }
            // The earliest event, the held one included (queue.rs, `hold`).
            let next = self.sim.heap.next();
            if let Some(end) = self.sim.workload.end_ns {
                if next.is_none_or(|e| e.t > end) {
                    // The workload's own end (rt-app's duration).
                    self.sim.now = end.max(self.sim.now);
                    self.sim.last_exit = self.sim.now;
                    break;
                }
            }
            let Some(ev) = next else {
                return Err(self.deadlock());
            };
            if ev.t > limits.max_sim_ns {
                self.sim.now = limits.max_sim_ns;
                partial = Some(format!("stopped at the simulated-time limit of {} ns", limits.max_sim_ns));
                break;
            }
            if self.sim.heap.len() > MAX_PENDING_EVENTS {
                return Err(SimError::Input(format!(
                    "{} events pending at {} s, past the simulator's limit of {MAX_PENDING_EVENTS}: the workload asks for fewer tasks or objects",
                    self.sim.heap.len(),
                    self.sim.now as f64 / 1e9
                )));
            }
            if self.sim.events >= limits.max_events {
                partial = Some(format!("stopped at the event limit of {}", limits.max_events));
                break;
            }
            debug_assert!(ev.t >= self.sim.now);
            self.sim.now = ev.t;
            // Handled while still in the heap: a new event for the same key
            // replaces it in place (queue.rs); `finish` removes it if none did.
            // A held event is taken out before.
            let held = self.sim.heap.take_held(&ev);
            self.handle(ev)?;
            self.drain()?;
            self.sim.arm_deferred_segments();
            if !held {
                self.sim.heap.finish(&ev);
            }
            if self.check_invariants {
                self.check();
            }
            if let Some(e) = self.sim.sink_err.take() {
                return Err(SimError::Output(e));
            }
            if self.sim.abort.is_some() {
                break;
            }
        }
        // A broken guarantee fails a run the kernel would not have ended.
        if self.sim.abort.is_none() {
            self.sim.abort = self.policy.broken();
        }
        let ejected = self.sim.abort.is_some();
        if let Some(why) = self.sim.abort.take() {
            partial = Some(why);
        }
        let s = &mut self.sim;
        let end = if partial.is_some() { s.now } else { s.last_exit };
        s.now = end;
        let per_socket = s.energy_per_socket(end);
        if let Some(e) = s.sink_err.take() {
            return Err(SimError::Output(e));
        }
        Ok(Outcome {
            makespan_ns: end,
            energy_j: per_socket.iter().sum(),
            energy_per_socket_j: per_socket,
            trace_events: s.events,
            queue_events: s.seq,
            migrations: s.migrations,
            partial,
            ejected,
            samples: std::mem::take(&mut s.samples),
            measures: s.measures,
            policy_stats: self.policy.stats(),
            placements: s.placements,
            placement_scans: s.placement_scans,
        })
    }

    /// Give back the sink (to finish a trace file).
    pub fn into_sink(self) -> Box<dyn Sink> {
        self.sim.sink
    }
    pub fn nr_tasks(&self) -> u32 {
        self.sim.tasks.len() as u32
    }

    /// Engine invariants (debug builds): run-queue counts match task states.
    fn check(&self) {
        let waiting = self.sim.tasks.iter().filter(|t| Self::on_tasks(t)).count();
        assert_eq!(self.sim.waiting_on_tasks as usize, waiting, "tasks waiting on tasks at {} ns", self.sim.now);
        let mut nr = vec![0u32; self.sim.cpus.len()];
        for t in &self.sim.tasks {
            if matches!(t.state, TState::Runnable | TState::Running) {
                nr[t.cpu as usize] += 1;
            }
        }
        for (c, cpu) in self.sim.cpus.iter().enumerate() {
            assert_eq!(cpu.nr, nr[c], "cpu {c} nr at {} ns", self.sim.now);
            if let Some(t) = cpu.curr {
                assert_eq!(self.sim.tasks[t as usize].cpu, c as u32, "curr of cpu {c}");
                assert_eq!(cpu.mode, Mode::Running);
            }
        }
    }

    /// Whether every task of the workload still alive is blocked on
    /// something only another of them could release: then only the
    /// background daemons, which never touch the workload's objects, would
    /// ever run again.
    fn workload_stuck(&self) -> bool {
        self.sim.alive > 0 && self.sim.waiting_on_tasks == self.sim.alive
    }

    fn deadlock(&self) -> SimError {
        let stuck = |t: &&Task| t.state == TState::Blocked && !t.daemon;
        let blocked: Vec<String> = self
            .sim
            .tasks
            .iter()
            .filter(stuck)
            .take(10)
            .map(|t| format!("{} ({}, {:?})", t.pid, t.comm, t.blocked_on))
            .collect();
        let n = self.sim.tasks.iter().filter(stuck).count();
        SimError::Deadlock(format!(
            "workload deadlocked at {} ns: {n} task(s) blocked for ever: {}{}",
            self.sim.now,
            blocked.join(", "),
            if n > 10 { ", ..." } else { "" }
        ))
    }

    fn handle(&mut self, ev: QEv) -> Result<(), SimError> {
        let c = ev.index();
        match Kind::of(ev.kind()) {
            Kind::SegEnd => {
                let cpu = &self.sim.cpus[c as usize];
                if cpu.seg_gen != ev.gen || cpu.mode != Mode::Running {
                    return Ok(());
                }
                let t = cpu.curr.unwrap();
                self.sim.tasks[t as usize].remaining = 0.0;
                self.sim.sync_progress(c);
                self.advance(c, t)?;
            }
            Kind::Tick => {
                let cpu = &mut self.sim.cpus[c as usize];
                cpu.tick_pending = false;
                // No ticks on idle CPUs (NO_HZ_IDLE, docs/model.md, Kernel configuration).
                if cpu.mode != Mode::Running {
                    return Ok(());
                }
                let t = cpu.curr.unwrap();
                let f = self.sim.cur_freq(c);
                self.sim.tick_sample(c);
                let pid = self.sim.tasks[t as usize].pid;
                self.sim.emit(c, pid, ids::TICK, f, 0);
                self.sim.schedutil_update(c, None);
                self.policy.tick(&mut self.sim, c, t);
                self.arm_tick(c);
            }
            Kind::CpuReady => {
                let cpu = &mut self.sim.cpus[c as usize];
                if cpu.wake_gen != ev.gen || cpu.mode != Mode::Waking {
                    return Ok(());
                }
                cpu.mode = Mode::Switching;
                cpu.prev = (0, 0);
                self.sim.emit(c, 0, ids::IDLE_EXIT, 0, 0);
                self.schedule(c)?;
            }
            Kind::Dvfs => {
                let core = c;
                let st = &self.sim.cores[core as usize];
                if st.gen != ev.gen || !st.pending {
                    return Ok(());
                }
                self.sim.dvfs_sample(core);
            }
            Kind::Wake => {
                let t = c;
                let task = &self.sim.tasks[t as usize];
                if task.state != TState::Blocked || task.block_gen != ev.gen {
                    return Ok(());
                }
                // With daemons about, the heap never empties: a stuck
                // workload is found when one of them wakes.
                if task.daemon && self.workload_stuck() {
                    return Err(self.deadlock());
                }
                self.wake(t, None, false);
            }
            Kind::Timer => {
                let ts = &mut self.sim.timers[c as usize];
                if !ts.armed || ts.gen != ev.gen {
                    return Ok(());
                }
                ts.armed = false;
                let token = ts.token;
                self.sim.free_timers.push(c);
                self.policy.timer(&mut self.sim, token);
            }
            Kind::SpinEnd => {
                let cpu = &mut self.sim.cpus[c as usize];
                if cpu.spin_gen != ev.gen {
                    return Ok(());
                }
                cpu.spin_until = 0;
                if cpu.mode == Mode::Idle {
                    let core = self.sim.machine.cpu_core[c as usize];
                    self.sim.core_changed(core);
                }
            }
        }
        Ok(())
    }

    /// Carry out what handlers and policies asked for, in order.
    fn drain(&mut self) -> Result<(), SimError> {
        while let Some(a) = self.sim.actions.pop_front() {
            match a {
                Action::Schedule(c) => self.schedule(c)?,
                Action::Resched(c) => {
                    let mode = self.sim.cpus[c as usize].mode;
                    match mode {
                        Mode::Running => self.preempt(c)?,
                        Mode::Idle => self.kick_now(c),
                        _ => {}
                    }
                }
                Action::Kick(c) => {
                    if self.sim.cpus[c as usize].mode == Mode::Idle {
                        self.kick_now(c);
                    }
                }
            }
        }
        Ok(())
    }

    fn kick_now(&mut self, c: u32) {
        let now = self.sim.now;
        if self.sim.offline[c as usize] && self.sim.cpus[c as usize].nr == 0 {
            // Nothing wakes an offline CPU that has nothing to finish.
            return;
        }
        let lat = self.sim.idle_exit_latency(c);
        let cpu = &mut self.sim.cpus[c as usize];
        if cpu.mode != Mode::Idle {
            return;
        }
        cpu.mode = Mode::Waking;
        cpu.spin_until = 0;
        // rq->avg_idle: EWMA (1/8) of idle periods, capped (docs/model.md,
        // Placement in the fair class); the cap of 10 ms is an ASSUMPTION.
        let idle = (now - cpu.idle_since) as f64;
        cpu.avg_idle = (cpu.avg_idle + (idle - cpu.avg_idle) / 8.0).min(10e6);
        cpu.wake_gen = cpu.wake_gen.wrapping_add(1);
        let gen = cpu.wake_gen;
        self.sim.push(now + lat, Kind::CpuReady, c, gen);
    }

    fn arm_tick(&mut self, c: u32) {
        let cpu = &mut self.sim.cpus[c as usize];
        if cpu.tick_pending {
            return;
        }
        cpu.tick_pending = true;
        // Ticks fall on the global jiffies grid.
        let at = (self.sim.now / TICK_NS + 1) * TICK_NS;
        self.sim.push(at, Kind::Tick, c, 0);
    }

    fn spawn(&mut self, prog: ProgId, comm: &str, cpu: Option<u32>) -> Result<(), SimError> {
        self.start_task(prog, comm, cpu, false)
    }

    /// Start a policy's daemon on its CPU (never counted in `alive`).
    fn spawn_daemon(&mut self, comm: &str, cpu: u32) -> Result<(), SimError> {
        if cpu >= self.sim.machine.nr_cpus {
            return Err(SimError::Input(format!("{}: daemon {comm} wants CPU {cpu}", self.policy.name())));
        }
        self.start_task(self.sim.daemon_prog, comm, Some(cpu), true)
    }

    /// A task that no other task created: placed on `cpu`, or by the policy
    /// as a fork.
    fn start_task(&mut self, prog: ProgId, comm: &str, cpu: Option<u32>, daemon: bool) -> Result<(), SimError> {
        self.room_for_task()?;
        let t = self.new_task(prog, comm, None);
        if daemon {
            self.sim.alive -= 1;
            let task = &mut self.sim.tasks[t as usize];
            task.daemon = true;
            task.pinned = cpu;
        }
        let pid = self.sim.tasks[t as usize].pid;
        self.sim.sink.note_process(pid, 0, comm, self.sim.now);
        self.policy.init_task(&mut self.sim, t, None);
        let target = match cpu {
            Some(c) if c < self.sim.machine.nr_cpus => c,
            Some(c) => {
                return Err(SimError::Input(format!(
                    "initial task {comm} wants CPU {c}, but the machine has {} CPUs",
                    self.sim.machine.nr_cpus
                )))
            }
            None => {
                let w = Wake { kind: WakeKind::Fork, waker: None, waker_cpu: 0, sync: false };
                self.checked_select(t, 0, w)
            }
        };
        self.sim.emit(target, pid, ids::WAKEUP_NEW, target, 0);
        self.sim.tasks[t as usize].cpu = target;
        self.sim.nr_add(target, 1);
        self.policy.enqueue(&mut self.sim, t, target, if cpu.is_some() { Enq::Initial } else { Enq::New });
        self.sim.kick(target);
        Ok(())
    }

    /// Refuse a task past the limit of tasks alive at once.
    pub(crate) fn room_for_task(&self) -> Result<(), SimError> {
        if self.sim.alive as u64 >= MAX_LIVE_TASKS {
            return Err(SimError::Input(format!(
                "the workload has {MAX_LIVE_TASKS} tasks alive at {} s, the simulator's limit: it forks without bound, or asks for fewer tasks",
                self.sim.now as f64 / 1e9
            )));
        }
        Ok(())
    }

    pub(crate) fn new_task(&mut self, prog: ProgId, comm: &str, parent: Option<Tid>) -> Tid {
        let pid = self.sim.next_pid;
        self.sim.next_pid += 1;
        let cpu = parent.map(|p| self.sim.tasks[p as usize].cpu).unwrap_or(0);
        self.sim.tasks.push(Task {
            pid,
            comm: comm.to_string(),
            parent,
            state: TState::Runnable,
            cpu,
            last_run_ns: 0,
            frames: smallvec![self.sim.frame(prog, 0, 0)],
            remaining: 0.0,
            children: 0,
            zombies: 0,
            wait: WaitFor::None,
            block_gen: 0,
            blocked_on: BlockedOn::Nothing,
            spinning: None,
            // A new task starts at half utilisation: util_avg = 512 when
            // forked on an idle CPU (docs/model.md, PELT and schedutil; we use it
            // whatever the CPU's load).
            util: 0.5,
            util_t: self.sim.now,
            pinned: None,
            cpus: parent.and_then(|p| self.sim.tasks[p as usize].cpus.clone()),
            nice: parent.map_or(0, |p| self.sim.tasks[p as usize].nice),
            sched_idle: parent.is_some_and(|p| self.sim.tasks[p as usize].sched_idle),
            migration_disabled: 0,
            cpuset: parent.and_then(|p| self.sim.tasks[p as usize].cpuset),
            user_cpus: parent.and_then(|p| self.sim.tasks[p as usize].user_cpus.clone()),
            daemon: false,
            owed: 0.0,
            last_cpu: u32::MAX,
            last_stop_ns: 0,
            fork_copied: false,
        });
        self.sim.alive += 1;
        (self.sim.tasks.len() - 1) as Tid
    }

    /// The policy's placement of `t`; the waker (the parent for a fork, the
    /// task itself for exec) pays for the CPUs the policy looked at.
    pub(crate) fn checked_select(&mut self, t: Tid, prev: u32, w: Wake) -> u32 {
        // core.c, select_task_rq: the class is not asked for a task whose
        // migration is disabled; it stays on its CPU.
        if self.sim.tasks[t as usize].migration_disabled > 0 {
            return self.sim.tasks[t as usize].cpu;
        }
        self.sim.scanned.set(0);
        let c = self.policy.select_cpu(&mut self.sim, t, prev, w);
        let scanned = self.sim.scanned.get();
        self.sim.placements += 1;
        self.sim.placement_scans += scanned as u64;
        if let Some(payer) = w.waker {
            self.sim.tasks[payer as usize].owed += kernel_time::placement_cycles(scanned);
        }
        let c = if c < self.sim.machine.nr_cpus { c } else { prev };
        // core.c, select_task_rq: a CPU the task may not run on is replaced
        // by select_fallback_rq's.
        if self.sim.may_run(t, c) {
            c
        } else {
            self.fallback(t, prev)
        }
    }

    /// Make a blocked task runnable, placed by the policy.
    pub(crate) fn wake(&mut self, t: Tid, waker: Option<Tid>, sync: bool) {
        let prev = self.sim.tasks[t as usize].cpu;
        let waker_cpu = waker.map(|w| self.sim.tasks[w as usize].cpu).unwrap_or(prev);
        let task = &mut self.sim.tasks[t as usize];
        if Self::on_tasks(task) {
            self.sim.waiting_on_tasks -= 1;
        }
        task.state = TState::Runnable;
        task.blocked_on = BlockedOn::Nothing;
        task.wait = WaitFor::None;
        let pid = task.pid;
        let w = Wake { kind: WakeKind::Wakeup, waker, waker_cpu, sync };
        let target = self.checked_select(t, prev, w);
        if let Some(wk) = waker {
            // A timer or I/O wake-up (no waker) runs in an interrupt that
            // the model does not charge.
            let remote = if target != waker_cpu { kernel_time::REMOTE_WAKEUP_CYCLES } else { 0.0 };
            self.sim.tasks[wk as usize].owed += kernel_time::WAKEUP_CYCLES + remote;
        }
        let waker_pid = waker.map(|w| self.sim.tasks[w as usize].pid).unwrap_or(0);
        self.sim.emit(waker_cpu, pid, ids::WAKEUP, target, waker_pid);
        if target != prev {
            let pid = self.sim.tasks[t as usize].pid;
            self.sim.emit(waker_cpu, pid, ids::MIGRATE, prev, target);
            self.sim.migrations += 1;
            self.sim.tasks[t as usize].cpu = target;
        }
        self.sim.nr_add(target, 1);
        self.policy.enqueue(&mut self.sim, t, target, Enq::Wakeup);
        self.sim.schedutil_update(target, Some(t));
        self.sim.kick(target);
    }

    /// The running task on `c` is preempted.
    fn preempt(&mut self, c: u32) -> Result<(), SimError> {
        let t = self.sim.cpus[c as usize].curr.unwrap();
        self.sim.sync_progress(c);
        self.stop(c, t, prev_state::RUNNABLE);
        self.sim.tasks[t as usize].state = TState::Runnable;
        self.policy.stopping(&mut self.sim, t, c, true);
        self.policy.enqueue(&mut self.sim, t, c, Enq::Preempted);
        self.schedule(c)
    }

    /// Take `t` off `c` (it blocks, exits or is preempted).
    pub(crate) fn stop(&mut self, c: u32, t: Tid, state: u32) {
        // The end it would have had is queued first (hardware.rs,
        // `defer_segment`): the generation taken below makes it stale.
        self.sim.arm_deferred_segment(c);
        self.sim.task_util(t);
        let pid = self.sim.tasks[t as usize].pid;
        self.sim.pelt_update(c);
        self.sim.tasks[t as usize].last_stop_ns = self.sim.now;
        let cpu = &mut self.sim.cpus[c as usize];
        cpu.curr = None;
        cpu.mode = Mode::Switching;
        cpu.prev = (pid, state);
        cpu.seg_gen = cpu.seg_gen.wrapping_add(1);
        if state != prev_state::RUNNABLE {
            self.sim.nr_add(c, -1);
        }
        let core = self.sim.machine.cpu_core[c as usize];
        self.sim.core_changed(core);
    }

    /// Choose what `c` runs next, or let it idle.
    fn schedule(&mut self, c: u32) -> Result<(), SimError> {
        if self.sim.cpus[c as usize].mode != Mode::Switching {
            return Ok(());
        }
        // An offline CPU runs only what stays there to finish a
        // migration-disabled section (hotplug.rs).
        let next = if self.sim.offline[c as usize] && self.sim.cpus[c as usize].nr == 0 {
            None
        } else {
            self.policy.dispatch(&mut self.sim, c)
        };
        let next = next.filter(|&t| self.sim.tasks[t as usize].state == TState::Runnable);
        let (ppid, pstate) = self.sim.cpus[c as usize].prev;
        match next {
            None => {
                self.sim.emit(c, ppid, ids::CTX_SWITCH, 0, pstate);
                let now = self.sim.now;
                let st = self.sim.choose_idle_state(c);
                let cpu = &mut self.sim.cpus[c as usize];
                cpu.mode = Mode::Idle;
                cpu.idle_state = st;
                cpu.idle_since = now;
                self.sim.emit(c, 0, ids::IDLE_ENTER, st as u32, 0);
                let core = self.sim.machine.cpu_core[c as usize];
                self.sim.core_changed(core);
                self.policy.update_idle(&mut self.sim, c, true);
                // A task may have been queued here meanwhile.
                if self.policy.has_work(&self.sim, c) {
                    self.sim.kick(c);
                }
            }
            Some(t) => {
                let pid = self.sim.tasks[t as usize].pid;
                self.sim.emit(c, ppid, ids::CTX_SWITCH, pid, pstate);
                let was_idle = ppid == 0;
                if !self.sim.may_run(t, c) {
                    // A guarantee the kernel keeps whatever the policy does
                    // (is_cpu_allowed): a policy that breaks it ends the run.
                    let task = &self.sim.tasks[t as usize];
                    let why = if task.may_run(c) {
                        format!("broken guarantee: affinity: {} ran on CPU {c}, which is offline", task.who())
                    } else {
                        format!("broken guarantee: affinity: {} ran on CPU {c}, outside its allowed CPUs", task.who())
                    };
                    let name = self.policy.name();
                    self.sim.abort(format!("{name} at {} ns: {why}", self.sim.now));
                }
                let old = self.sim.tasks[t as usize].cpu;
                if old != c {
                    self.sim.migrate(t, old, c, c);
                }
                self.sim.pelt_update(c);
                self.sim.task_util(t);
                let now = self.sim.now;
                let cpu = &mut self.sim.cpus[c as usize];
                cpu.mode = Mode::Running;
                cpu.curr = Some(t);
                // The task's work on this CPU starts now: the rate changes
                // below bring it up to now from here, not from the CPU's
                // last segment (which may be an idle time ago).
                cpu.seg_start = now;
                // The switch itself, and the refill of the caches a hot task
                // left on another core (docs/model.md, The kernel's own time).
                let task = &self.sim.tasks[t as usize];
                let mut cost = if ppid != pid { kernel_time::CTX_SWITCH_CYCLES } else { 0.0 };
                if task.last_cpu != c
                    && task.last_cpu != u32::MAX
                    && now - task.last_stop_ns.min(now) < kernel_time::CACHE_HOT_NS
                {
                    cost += kernel_time::refill_cycles(&self.sim.machine, task.last_cpu, c);
                }
                let task = &mut self.sim.tasks[t as usize];
                task.state = TState::Running;
                task.last_run_ns = now;
                task.last_cpu = c;
                task.owed += cost;
                if task.remaining > 0.0 {
                    // It resumes a computation: the kernel's work goes first.
                    task.remaining += std::mem::take(&mut task.owed);
                }
                if was_idle {
                    self.policy.update_idle(&mut self.sim, c, false);
                }
                self.policy.running(&mut self.sim, t, c);
                let core = self.sim.machine.cpu_core[c as usize];
                self.sim.core_changed(core);
                self.arm_tick(c);
                self.sim.schedutil_update(c, None);
                if self.sim.tasks[t as usize].remaining > 0.0 {
                    self.sim.start_segment(c);
                } else {
                    self.advance(c, t)?;
                }
            }
        }
        Ok(())
    }

    /// A workload task blocked on what only another task can release.
    fn on_tasks(task: &Task) -> bool {
        !task.daemon && task.state == TState::Blocked && !matches!(task.blocked_on, BlockedOn::Timer | BlockedOn::Nothing)
    }

    pub(crate) fn block(&mut self, c: u32, t: Tid, on: BlockedOn, id: u32, a: u32, state: u32) {
        let pid = self.sim.tasks[t as usize].pid;
        self.sim.emit(c, pid, id, a, 0);
        let task = &mut self.sim.tasks[t as usize];
        task.state = TState::Blocked;
        task.blocked_on = on;
        task.block_gen = task.block_gen.wrapping_add(1);
        if Self::on_tasks(task) {
            self.sim.waiting_on_tasks += 1;
        }
        self.stop(c, t, state);
        self.policy.stopping(&mut self.sim, t, c, false);
        self.sim.actions.push_back(Action::Schedule(c));
    }

    pub(crate) fn exit(&mut self, c: u32, t: Tid) {
        let pid = self.sim.tasks[t as usize].pid;
        self.sim.emit(c, pid, ids::EXIT, 0, 0);
        self.sim.tasks[t as usize].state = TState::Dead;
        self.sim.tasks[t as usize].frames = SmallVec::new();
        self.stop(c, t, prev_state::DEAD);
        self.policy.stopping(&mut self.sim, t, c, false);
        self.policy.exit_task(&mut self.sim, t);
        self.sim.alive -= 1;
        self.sim.last_exit = self.sim.now;
        if let Some(p) = self.sim.tasks[t as usize].parent {
            let par = &mut self.sim.tasks[p as usize];
            if par.state != TState::Dead {
                par.children -= 1;
                let wake = match par.wait {
                    WaitFor::One => true,
                    WaitFor::All => par.children == 0,
                    WaitFor::None => {
                        par.zombies += 1;
                        false
                    }
                };
                if wake && par.state == TState::Blocked {
                    self.wake(p, Some(t), false);
                }
            }
        }
        self.sim.actions.push_back(Action::Schedule(c));
    }
}
