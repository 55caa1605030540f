// SPDX-License-Identifier: GPL-2.0-only
//! What a policy sees of the simulation: `Sim`, the state it reads and acts
//! on through the methods under "what a policy may read" and "what a policy
//! may do", and the tasks (`Task`) and CPUs (`Cpu`) in it. The `Policy`
//! trait itself, the hooks through which the engine calls a policy, is in
//! policy.rs.
//!
//! `Sim` also holds what the rest of the simulator keeps between events; the
//! fields a policy must not touch are crate-private. The other jobs on the
//! same state live in their own files:
//! - engine/mod.rs: the event loop and the scheduler core around the policy
//!   (wake-ups, blocking, preemption, context switches, ticks);
//! - engine/interp.rs: the interpreter of the tasks' programs (steps, pipes,
//!   futexes, barriers);
//! - hardware.rs: the machine model (execution rates, SMT, turbo ceilings,
//!   DVFS, PELT and schedutil, idle states, energy).
//!
//! The types that state is made of are defined here too, those the engine
//! and the interpreter keep in it included (the queued events' kinds and
//! actions, the sink, a task's program frames, pipes and barriers): the jobs
//! above import this module and never each other's types, which keeps the
//! simulator's layers free of cycles (docs/architecture.md, The simulator's
//! layers; tests/layers.rs checks them).

use std::collections::VecDeque;

use rand_chacha::rand_core::RngCore;
use rand_chacha::ChaCha8Rng;
use smallvec::SmallVec;
use warmcore_trace::{ids, Event};

use crate::dvfs::{CoreDvfs, Governor};
use crate::machine::Machine;
use crate::program::{ProgId, Step, Workload};
use crate::queue::{Entry, EventQueue, Key};

/// Where the events go (a trace writer, the metrics analyzer, a counter).
pub trait Sink {
    fn emit(&mut self, cpu: u32, ev: Event) -> Result<(), String>;
    /// `emit` of the event made of these fields, which the engine calls for
    /// every event: a sink that keeps events builds it where it keeps it,
    /// instead of reading it back from the caller's stack, where its fields
    /// were just stored one by one (a stall at each event).
    #[inline]
    fn emit_fields(&mut self, cpu: u32, ts: u64, pid: u32, id: u32, a: u32, b: u32) -> Result<(), String> {
        self.emit(cpu, Event::new(ts, pid, id, a, b))
    }
    fn note_process(&mut self, _pid: u32, _ppid: u32, _comm: &str, _ts: u64) {}
    /// End of the run: flush, and return what the sink computed.
    fn finish(self: Box<Self>, _end_ns: u64) -> Result<serde_json::Value, String> {
        Ok(serde_json::Value::Null)
    }
}

/// A sink that only counts.
#[derive(Default)]
pub struct CountSink {
    pub events: u64,
}
impl Sink for CountSink {
    fn emit(&mut self, _cpu: u32, _ev: Event) -> Result<(), String> {
        self.events += 1;
        Ok(())
    }
}

/// What a queued event is about; its index is a CPU (SegEnd, Tick,
/// CpuReady, SpinEnd), a core (Dvfs), a task (Wake) or a timer slot (Timer).
/// Each (kind, index) has at most one live event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    SegEnd,
    Tick,
    CpuReady,
    Dvfs,
    Wake,
    Timer,
    SpinEnd,
}
impl Kind {
    #[inline]
    pub(crate) fn of(k: u8) -> Kind {
        match k {
            0 => Kind::SegEnd,
            1 => Kind::Tick,
            2 => Kind::CpuReady,
            3 => Kind::Dvfs,
            4 => Kind::Wake,
            5 => Kind::Timer,
            _ => Kind::SpinEnd,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Action {
    Schedule(u32),
    Resched(u32),
    Kick(u32),
}

/// A program being run: its steps are `steps[start..end]` of the engine's
/// flattened step table, `pc` the next one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frame {
    pub(crate) start: u32,
    pub(crate) pc: u32,
    pub(crate) end: u32,
    /// Iterations left after this one (Repeat).
    pub(crate) left: u64,
    /// Loop until this time (RepeatFor), 0 otherwise.
    pub(crate) until: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WaitFor {
    None,
    One,
    All,
}

// The fields are read through Debug, in the deadlock message.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug)]
pub(crate) enum BlockedOn {
    Nothing,
    Timer,
    Child,
    PipeRead(u32),
    PipeWrite(u32),
    Futex(u32),
    Barrier(u32),
}

pub(crate) struct Pipe {
    pub(crate) cap: u32,
    pub(crate) msgs: u32,
    pub(crate) readers: VecDeque<Tid>,
    pub(crate) writers: VecDeque<Tid>,
}

pub(crate) struct Barrier {
    pub(crate) count: u32,
    pub(crate) arrived: Vec<Tid>,
}

pub type Tid = u32;

/// The scheduler tick: HZ = 250 in the Debian configs of the papers' kernels
/// (docs/model.md, Kernel configuration).
pub const TICK_NS: u64 = 4_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TState {
    Runnable,
    Running,
    Blocked,
    Dead,
}

pub struct Task {
    pub pid: u32,
    pub comm: String,
    pub parent: Option<Tid>,
    pub state: TState,
    /// The CPU it runs on, is queued on, or last ran on.
    pub cpu: u32,
    /// Time it last started running (ns).
    pub last_run_ns: u64,
    /// Program and loop bodies, innermost last (kept inline: two deep for
    /// most workloads).
    pub(crate) frames: SmallVec<[Frame; 2]>,
    pub(crate) remaining: f64,
    pub(crate) children: u32,
    pub(crate) zombies: u32,
    pub(crate) wait: WaitFor,
    pub(crate) block_gen: u32,
    pub(crate) blocked_on: BlockedOn,
    /// The barrier it spin-waits at (Step::BarrierSpin): it stays running
    /// (or runnable, if preempted) with the spin's cycles as its work; if
    /// the spin runs out first it blocks on the barrier. A busy-wait on a
    /// pipe (Step::PipeSpinRead) is here too (engine/interp.rs, PIPE_SPIN).
    pub(crate) spinning: Option<u32>,
    /// The task's PELT utilisation (0..1) as of `util_t`.
    pub(crate) util: f64,
    pub(crate) util_t: u64,
    /// The one CPU it may run on (a policy's daemon), or None for any.
    pub pinned: Option<u32>,
    /// The CPUs it may run on, set by sched_setaffinity (Step::Affinity;
    /// bit n of word n / 64 for CPU n), or None for every CPU. Inherited at
    /// fork (kernel/fork.c, dup_task_struct copies cpus_mask).
    pub cpus: Option<Box<[u64]>>,
    /// Its nice value (Step::Nice), inherited at fork.
    pub nice: i8,
    /// SCHED_IDLE (Step::SchedIdle) rather than SCHED_NORMAL, inherited at
    /// fork (sched_fork keeps the parent's policy).
    pub sched_idle: bool,
    /// migrate_disable() depth (Step::MigrateDisable): while above 0 the
    /// task runs only on `cpu` (is_migration_disabled). A child starts at 0.
    pub migration_disabled: u32,
    /// Its cpuset (Step::JoinCpuset), inherited at fork; None: the root.
    pub cpuset: Option<u32>,
    /// The CPUs sched_setaffinity asked for (user_cpus_ptr), None for
    /// every CPU: `cpus` is this within the cpuset's CPUs.
    pub user_cpus: Option<Box<[u64]>>,
    /// A policy's daemon: always runnable, never counted among the tasks
    /// whose end ends the run.
    pub daemon: bool,
    /// The kernel's work done on its behalf that it has not yet paid,
    /// cycles (kernel_time.rs): paid before its next step.
    pub(crate) owed: f64,
    /// The CPU it last ran on (u32::MAX before its first run) and when it
    /// stopped there, for the cache refill after a migration.
    pub(crate) last_cpu: u32,
    pub(crate) last_stop_ns: u64,
    /// Its fork step's copy is done: the next run of that step creates
    /// the child.
    pub(crate) fork_copied: bool,
}

impl Task {
    /// "COMM[PID]", as the kernel's messages name a task.
    pub fn who(&self) -> String {
        format!("{}[{}]", self.comm, self.pid)
    }

    /// Whether it may run on CPU `c`.
    pub fn may_run(&self, c: u32) -> bool {
        // is_cpu_allowed: migrate_disable_switch narrows cpus_ptr to the
        // task's CPU; the affinity it had waits for migrate_enable.
        if self.migration_disabled > 0 {
            return c == self.cpu;
        }
        self.pinned.is_none_or(|p| p == c)
            && self.cpus.as_ref().is_none_or(|m| m.get(c as usize / 64).is_some_and(|w| w >> (c % 64) & 1 == 1))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A task runs.
    Running,
    /// The current task left; the next is being chosen.
    Switching,
    /// In an idle state.
    Idle,
    /// Leaving an idle state (exit latency).
    Waking,
}

pub struct Cpu {
    pub mode: Mode,
    pub curr: Option<Tid>,
    /// (pid, prev_state) of the task that left, for the next CTX_SWITCH.
    pub(crate) prev: (u32, u32),
    pub idle_state: u8,
    pub idle_since: u64,
    pub(crate) avg_idle: f64,
    pub(crate) seg_start: u64,
    pub(crate) rate: f64,
    pub(crate) seg_gen: u32,
    /// The insertion sequence of a segment end not yet armed (0: none;
    /// hardware.rs, `defer_segment`).
    pub(crate) seg_deferred: u64,
    pub(crate) wake_gen: u32,
    pub(crate) tick_pending: bool,
    /// The frequency sample of the CPU's last tick, kHz: the average over
    /// the time it spent in C0 since the tick before (APERF/MPERF).
    pub tick_freq: u32,
    /// Whether the CPU ticked in this run (before, `tick_freq` is derived
    /// from the machine's state at the start).
    pub(crate) ticked: bool,
    /// The CPU's APERF and MPERF: kHz x ns and ns spent in C0 (running or
    /// spinning), counted up to `c0_t`, and their values at the last tick.
    pub(crate) aperf: f64,
    pub(crate) mperf: u64,
    pub(crate) c0: bool,
    pub(crate) c0_t: u64,
    pub(crate) tick_aperf: f64,
    pub(crate) tick_mperf: u64,
    /// Tasks assigned to this CPU, running or runnable.
    pub nr: u32,
    pub(crate) spin_until: u64,
    pub(crate) spin_gen: u32,
    /// The PM QoS resume latency limit, us (None: no constraint): the
    /// cpuidle governor skips idle states with a longer exit latency.
    pub(crate) resume_latency_us: Option<u64>,
    // PELT utilisation (0..1) for schedutil, updated at state changes.
    pub(crate) util: f64,
    pub(crate) util_t: u64,
}

pub(crate) struct TimerSlot {
    pub(crate) gen: u32,
    pub(crate) token: u64,
    pub(crate) armed: bool,
}

/// A policy timer, to cancel it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerId {
    slot: u32,
    gen: u32,
}

/// A socket's energy, counted up to `since`, and the power its cores have
/// drawn since then.
#[derive(Clone, Copy, Default)]
pub(crate) struct SocketEnergy {
    pub(crate) energy: f64,
    pub(crate) since: u64,
    pub(crate) power: f64,
    /// A core's frequency or state moved after `power` was worked out. The
    /// power is worked out again only when energy is next counted: the
    /// hardware governors sample every core on one grid, so many cores of a
    /// socket change at one instant, and the power of the last change is
    /// the only one that draws energy.
    pub(crate) power_stale: bool,
}

/// The state a policy sees and acts on.
pub struct Sim {
    pub machine: Machine,
    pub governor: Governor,
    pub(crate) now: u64,
    pub(crate) seq: u64,
    pub(crate) heap: EventQueue,
    /// CPUs whose segment end waits to be armed (hardware.rs, `defer_segment`).
    pub(crate) deferred_segments: Vec<u32>,
    pub(crate) tasks: Vec<Task>,
    pub(crate) cpus: Vec<Cpu>,
    /// Per CPU: taken offline (Step::CpuOnline); and how many are online.
    pub(crate) offline: Vec<bool>,
    pub(crate) nr_online: u32,
    pub(crate) cores: Vec<CoreDvfs>,
    pub(crate) socket_active: Vec<u32>,
    /// Per socket: the energy of its cores so far and their power now.
    pub(crate) socket_energy: Vec<SocketEnergy>,
    pub(crate) actions: VecDeque<Action>,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) sink: Box<dyn Sink>,
    pub(crate) sink_err: Option<String>,
    pub(crate) events: u64,
    pub(crate) timers: Vec<TimerSlot>,
    pub(crate) free_timers: Vec<u32>,
    pub(crate) workload: Workload,
    /// Every program's steps, one after another (a frame indexes it), and
    /// each program's range in it.
    pub(crate) steps: std::rc::Rc<Vec<Step>>,
    pub(crate) prog_span: Vec<(u32, u32)>,
    pub(crate) pipes: Vec<Pipe>,
    /// Each cpuset's CPUs (mask words), None for every CPU.
    pub(crate) cpusets: Vec<Option<Box<[u64]>>>,
    pub(crate) futexes: Vec<VecDeque<Tid>>,
    pub(crate) barriers: Vec<Barrier>,
    pub(crate) marks: Vec<u64>,
    pub(crate) samples: Vec<u64>,
    pub(crate) measures: u64,
    pub(crate) alive: u32,
    /// Of those, the tasks blocked on something only another task can
    /// release (a pipe, a futex, a barrier, a child).
    pub(crate) waiting_on_tasks: u32,
    pub(crate) next_pid: u32,
    pub(crate) migrations: u64,
    pub(crate) last_exit: u64,
    pub(crate) zero_time_steps: u32,
    /// Why the run must stop now (a policy's scheduler was ejected).
    pub(crate) abort: Option<String>,
    /// Each CPU's performance target (0..1) set by a sched_ext policy,
    /// which schedutil reads in place of utilisation.
    pub(crate) perf_target: Option<Vec<f64>>,
    /// The program a daemon runs: compute for ever.
    pub(crate) daemon_prog: ProgId,
    /// The program the machine's background daemons run (sleep, run, again),
    /// and how many run.
    pub(crate) background: Option<(ProgId, u32)>,
    /// CPUs the policy looked at in the placement under way (`note_scan`).
    pub(crate) scanned: std::cell::Cell<u32>,
    pub(crate) placements: u64,
    pub(crate) placement_scans: u64,
    /// Whether any task has been SCHED_IDLE: until one is, no CPU runs only
    /// SCHED_IDLE tasks, and the fair class's wake-up scan need not look.
    pub(crate) any_sched_idle: bool,
    /// The utilisations' decay, remembered per gap.
    pub(crate) decay: crate::pelt::Decay,
}

impl Sim {
    // ---- what a policy may read ----
    pub fn now(&self) -> u64 {
        self.now
    }
    pub fn nr_cpus(&self) -> u32 {
        self.machine.nr_cpus
    }
    pub fn cpu(&self, c: u32) -> &Cpu {
        &self.cpus[c as usize]
    }
    /// No task runs or is about to run there, and it is online (an
    /// offline CPU is in no scheduling domain: no scan finds it).
    pub fn cpu_is_idle(&self, c: u32) -> bool {
        let cpu = &self.cpus[c as usize];
        cpu.nr == 0 && matches!(cpu.mode, Mode::Idle | Mode::Switching) && !self.offline[c as usize]
    }
    /// Whether CPU `c` is online (cpu_active: not taken offline by
    /// Step::CpuOnline).
    pub fn online(&self, c: u32) -> bool {
        !self.offline[c as usize]
    }
    /// Exit latency of the CPU's current idle state (0 if not idle), ns.
    pub fn idle_exit_latency(&self, c: u32) -> u64 {
        let cpu = &self.cpus[c as usize];
        if cpu.mode != Mode::Idle || cpu.spin_until > self.now {
            return 0;
        }
        self.machine.spec.idle[cpu.idle_state as usize].exit_latency_us * 1000
    }
    /// Frequency at the CPU's last tick, kHz: what a scheduler can sample.
    pub fn tick_freq(&self, c: u32) -> u32 {
        self.cpus[c as usize].tick_freq
    }
    /// Whether the CPU has ticked in this run.
    pub fn ticked(&self, c: u32) -> bool {
        self.cpus[c as usize].ticked
    }
    /// The exact current frequency (the simulator knows it; a kernel does not).
    pub fn cur_freq(&self, c: u32) -> u32 {
        self.cores[self.machine.cpu_core[c as usize] as usize].freq
    }
    /// EWMA of the CPU's idle periods (rq->avg_idle), ns.
    pub fn avg_idle(&self, c: u32) -> f64 {
        self.cpus[c as usize].avg_idle
    }
    pub fn task(&self, t: Tid) -> &Task {
        &self.tasks[t as usize]
    }
    /// Whether task `t` may run on CPU `c` (is_cpu_allowed in
    /// kernel/sched/core.c, for a task of a user process): allowed, and
    /// online, unless its migration is disabled there (balance_push lets
    /// such a task run on a CPU going down until its migrate_enable).
    pub fn may_run(&self, t: Tid, c: u32) -> bool {
        let task = &self.tasks[t as usize];
        task.may_run(c) && (task.migration_disabled > 0 || !self.offline[c as usize])
    }
    pub fn nr_tasks(&self) -> u32 {
        self.tasks.len() as u32
    }
    /// The policy looked at `cpus` more CPUs in the placement under way;
    /// the placement costs the placing CPU time in proportion
    /// (docs/model.md, The kernel's own time). A policy that never calls
    /// it places for free.
    pub fn note_scan(&self, cpus: u32) {
        self.scanned.set(self.scanned.get() + cpus);
    }
    /// Set the count of CPUs looked at in the placement under way: a policy
    /// that asked another for its choice and does not use it.
    pub fn set_scanned(&self, cpus: u32) {
        self.scanned.set(cpus);
    }
    /// core.c, select_fallback_rq: the first CPU the task may run on in
    /// `prev`'s node (socket), else the first of the machine's. Also where
    /// a task is moved when its CPU leaves its allowed set (affine_move_task
    /// takes cpumask_any_and_distribute's CPU; the first is one of them).
    pub fn fallback_cpu(&self, t: Tid, prev: u32) -> u32 {
        let node = self.machine.cpu_socket.get(prev as usize).copied();
        (0..self.machine.nr_cpus)
            .find(|&c| Some(self.machine.cpu_socket[c as usize]) == node && self.may_run(t, c))
            .or_else(|| (0..self.machine.nr_cpus).find(|&c| self.may_run(t, c)))
            .unwrap_or(prev)
    }
    /// A uniform number in [0, 1) from the run's seeded generator.
    pub fn uniform(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    // ---- what a policy may do ----
    /// Preempt the CPU's current task (after the current operation).
    pub fn resched(&mut self, c: u32) {
        self.actions.push_back(Action::Resched(c));
    }
    /// Wake an idle CPU so that it calls dispatch.
    pub fn kick(&mut self, c: u32) {
        self.actions.push_back(Action::Kick(c));
    }
    /// Reassign a runnable (queued, not running) task to another CPU.
    pub fn set_task_cpu(&mut self, t: Tid, c: u32) {
        let task = &self.tasks[t as usize];
        if task.state != TState::Runnable || task.cpu == c {
            return;
        }
        let old = task.cpu;
        self.migrate(t, old, c, old);
    }
    /// Arm a timer at absolute time `at`; `token` comes back to `Policy::timer`.
    pub fn set_timer(&mut self, at: u64, token: u64) -> TimerId {
        let slot = match self.free_timers.pop() {
            Some(s) => s,
            None => {
                self.timers.push(TimerSlot { gen: 0, token: 0, armed: false });
                (self.timers.len() - 1) as u32
            }
        };
        let ts = &mut self.timers[slot as usize];
        ts.gen = ts.gen.wrapping_add(1);
        ts.token = token;
        ts.armed = true;
        let gen = ts.gen;
        self.push(at.max(self.now), Kind::Timer, slot, gen);
        TimerId { slot, gen }
    }
    /// Cancel a timer; false if it already fired or was cancelled.
    pub fn cancel_timer(&mut self, id: TimerId) -> bool {
        let ts = &mut self.timers[id.slot as usize];
        if ts.armed && ts.gen == id.gen {
            ts.armed = false;
            ts.gen = ts.gen.wrapping_add(1);
            self.free_timers.push(id.slot);
            true
        } else {
            false
        }
    }
    /// An idle CPU stops spinning now (it enters its idle state).
    pub fn stop_spin(&mut self, c: u32) {
        let cpu = &mut self.cpus[c as usize];
        if cpu.mode != Mode::Idle || cpu.spin_until <= self.now {
            return;
        }
        cpu.spin_until = 0;
        cpu.spin_gen = cpu.spin_gen.wrapping_add(1);
        let core = self.machine.cpu_core[c as usize];
        self.core_changed(core);
    }
    /// Keep an idle CPU spinning (in C0, at its frequency) until `until` or
    /// until it gets work.
    pub fn spin(&mut self, c: u32, until: u64) {
        let cpu = &mut self.cpus[c as usize];
        if cpu.mode != Mode::Idle || until <= self.now {
            return;
        }
        let was = cpu.spin_until > self.now;
        cpu.spin_until = until;
        cpu.spin_gen = cpu.spin_gen.wrapping_add(1);
        let gen = cpu.spin_gen;
        self.push(until, Kind::SpinEnd, c, gen);
        if !was {
            let core = self.machine.cpu_core[c as usize];
            self.core_changed(core);
        }
    }
    pub fn is_spinning(&self, c: u32) -> bool {
        self.cpus[c as usize].spin_until > self.now && self.cpus[c as usize].mode == Mode::Idle
    }
    /// End the run now, with this reason: the policy can no longer
    /// schedule (a sched_ext scheduler ejected).
    pub fn abort(&mut self, why: String) {
        if self.abort.is_none() {
            self.abort = Some(why);
        }
    }
    /// A CPU's PM QoS resume latency (pm_qos_resume_latency_us; None for
    /// no constraint): its idle states are those that exit within it.
    pub fn set_resume_latency(&mut self, c: u32, us: Option<u64>) {
        self.cpus[c as usize].resume_latency_us = us;
    }
    /// A CPU's performance target (0..1), as a sched_ext scheduler sets it
    /// with scx_bpf_cpuperf_set: from then on schedutil follows the targets.
    pub fn set_perf_target(&mut self, c: u32, perf: f64) {
        let n = self.cpus.len();
        self.perf_target.get_or_insert_with(|| vec![0.0; n])[c as usize] = perf.clamp(0.0, 1.0);
    }
    /// Record a policy's own event (NEST_CHANGE, MOVE_TIMER_*...).
    pub fn trace(&mut self, cpu: u32, pid: u32, id: u32, a: u32, b: u32) {
        self.emit(cpu, pid, id, a, b);
    }

    // ---- internals, shared with engine/ and hardware.rs ----
    pub(crate) fn push(&mut self, t: u64, kind: Kind, a: u32, gen: u32) {
        self.seq += 1;
        self.push_as(t, self.seq, kind, a, gen);
    }

    /// `push` with the insertion sequence taken earlier (hardware.rs,
    /// `defer_segment`).
    pub(crate) fn push_as(&mut self, t: u64, seq: u64, kind: Kind, a: u32, gen: u32) {
        self.heap.push(Entry::new(t, seq, Key { kind: kind as u8, index: a }, gen));
    }

    /// `push_as` at the current instant of an event queued after the
    /// instant's others, held beside the heap (queue.rs, `hold`).
    pub(crate) fn hold_as(&mut self, seq: u64, kind: Kind, a: u32, gen: u32) {
        self.heap.hold(Entry::new(self.now, seq, Key { kind: kind as u8, index: a }, gen));
    }

    #[inline]
    pub(crate) fn emit(&mut self, cpu: u32, pid: u32, id: u32, a: u32, b: u32) {
        self.events += 1;
        if let Err(e) = self.sink.emit_fields(cpu, self.now, pid, id, a, b) {
            if self.sink_err.is_none() {
                self.sink_err = Some(e);
            }
        }
    }

    pub(crate) fn emit_comm(&mut self, cpu: u32, pid: u32, comm: &str) {
        self.events += 1;
        if let Err(e) = self.sink.emit(cpu, Event::with_comm(self.now, pid, ids::EXEC, comm)) {
            if self.sink_err.is_none() {
                self.sink_err = Some(e);
            }
        }
    }

    pub(crate) fn migrate(&mut self, t: Tid, old: u32, new: u32, on_cpu: u32) {
        let pid = self.tasks[t as usize].pid;
        self.emit(on_cpu, pid, ids::MIGRATE, old, new);
        self.migrations += 1;
        self.tasks[t as usize].cpu = new;
        self.nr_add(old, -1);
        self.nr_add(new, 1);
    }

    pub(crate) fn nr_add(&mut self, c: u32, d: i32) {
        let cpu = &mut self.cpus[c as usize];
        cpu.nr = (cpu.nr as i32 + d).max(0) as u32;
        let nr = cpu.nr;
        self.emit(c, 0, ids::RQ_SIZE, nr, d as u32);
    }
}
