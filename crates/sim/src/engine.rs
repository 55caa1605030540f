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

use std::collections::VecDeque;

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use smallvec::{smallvec, SmallVec};
use warmcore_trace::event::prev_state;
use warmcore_trace::{ids, Event};

use crate::dvfs::{CoreDvfs, Governor};
use crate::machine::Machine;
use crate::policy::{Enq, Policy, Wake, WakeKind};
use crate::program::{ProgId, Step, Workload};
use crate::queue::{Entry, EventQueue, Key};
use crate::SimError;

pub type Tid = u32;

/// The scheduler tick: HZ = 250 in the Debian configs of the papers' kernels
/// (MODEL-FACTS.md section 0).
pub const TICK_NS: u64 = 4_000_000;

/// `x.ceil() as u64` for the non-negative durations of segments, without a
/// call into libm (a baseline x86-64 build has no rounding instruction).
#[inline]
fn ceil_ns(x: f64) -> u64 {
    // `as` truncates toward zero and saturates, as after ceil().
    let i = x as u64;
    if (i as f64) < x && i < u64::MAX {
        i + 1
    } else {
        i
    }
}

/// Where the events go (a trace writer, the metrics analyzer, a counter).
pub trait Sink {
    fn emit(&mut self, cpu: u32, ev: Event) -> Result<(), String>;
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TState {
    Runnable,
    Running,
    Blocked,
    Dead,
}

/// A program being run: its steps are `steps[start..end]` of the engine's
/// flattened step table, `pc` the next one.
#[derive(Clone, Copy, Debug)]
struct Frame {
    start: u32,
    pc: u32,
    end: u32,
    /// Iterations left after this one (Repeat).
    left: u64,
    /// Loop until this time (RepeatFor), 0 otherwise.
    until: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WaitFor {
    None,
    One,
    All,
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
    frames: SmallVec<[Frame; 2]>,
    remaining: f64,
    children: u32,
    zombies: u32,
    wait: WaitFor,
    block_gen: u32,
    blocked_on: BlockedOn,
    /// The barrier it spin-waits at (Step::BarrierSpin): it stays running
    /// (or runnable, if preempted) with the spin's cycles as its work; if
    /// the spin runs out first it blocks on the barrier.
    spinning: Option<u32>,
    /// The task's PELT utilisation (0..1) as of `util_t`.
    util: f64,
    util_t: u64,
}

// The fields are read through Debug, in the deadlock message.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug)]
enum BlockedOn {
    Nothing,
    Timer,
    Child,
    PipeRead(u32),
    PipeWrite(u32),
    Futex(u32),
    Barrier(u32),
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
    prev: (u32, u32),
    pub idle_state: u8,
    pub idle_since: u64,
    avg_idle: f64,
    seg_start: u64,
    rate: f64,
    seg_gen: u32,
    wake_gen: u32,
    tick_pending: bool,
    /// Frequency seen at the last tick on this CPU, kHz (0 before any).
    pub tick_freq: u32,
    /// Tasks assigned to this CPU, running or runnable.
    pub nr: u32,
    spin_until: u64,
    spin_gen: u32,
    // PELT utilisation (0..1) for schedutil, updated at state changes.
    util: f64,
    util_t: u64,
}

/// What a queued event is about; its index is a CPU (SegEnd, Tick,
/// CpuReady, SpinEnd), a core (Dvfs), a task (Wake) or a timer slot (Timer).
/// Each (kind, index) has at most one live event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
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
    fn of(k: u8) -> Kind {
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

type QEv = Entry;

#[derive(Clone, Copy, Debug)]
enum Action {
    Schedule(u32),
    Resched(u32),
    Kick(u32),
}

struct Pipe {
    cap: u32,
    msgs: u32,
    readers: VecDeque<Tid>,
    writers: VecDeque<Tid>,
}

struct Barrier {
    count: u32,
    arrived: Vec<Tid>,
}

struct TimerSlot {
    gen: u32,
    token: u64,
    armed: bool,
}

/// A policy timer, to cancel it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerId {
    slot: u32,
    gen: u32,
}

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

/// The state a policy sees and acts on.
pub struct Sim {
    pub machine: Machine,
    pub governor: Governor,
    now: u64,
    seq: u64,
    heap: EventQueue,
    pub(crate) tasks: Vec<Task>,
    pub(crate) cpus: Vec<Cpu>,
    pub(crate) cores: Vec<CoreDvfs>,
    socket_active: Vec<u32>,
    actions: VecDeque<Action>,
    rng: ChaCha8Rng,
    sink: Box<dyn Sink>,
    sink_err: Option<String>,
    pub(crate) events: u64,
    timers: Vec<TimerSlot>,
    free_timers: Vec<u32>,
    workload: Workload,
    /// Every program's steps, one after another (a frame indexes it), and
    /// each program's range in it.
    steps: std::rc::Rc<Vec<Step>>,
    prog_span: Vec<(u32, u32)>,
    pipes: Vec<Pipe>,
    futexes: Vec<VecDeque<Tid>>,
    barriers: Vec<Barrier>,
    marks: Vec<u64>,
    pub(crate) samples: Vec<u64>,
    pub(crate) measures: u64,
    alive: u32,
    next_pid: u32,
    pub(crate) migrations: u64,
    last_exit: u64,
    zero_time_steps: u32,
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
    pub samples: Vec<u64>,
    pub measures: u64,
    pub policy_stats: serde_json::Value,
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
    /// No task runs or is about to run there.
    pub fn cpu_is_idle(&self, c: u32) -> bool {
        let cpu = &self.cpus[c as usize];
        cpu.nr == 0 && matches!(cpu.mode, Mode::Idle | Mode::Switching)
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
    pub fn nr_tasks(&self) -> u32 {
        self.tasks.len() as u32
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
    /// Record a policy's own event (NEST_CHANGE, MOVE_TIMER_*...).
    pub fn trace(&mut self, cpu: u32, pid: u32, id: u32, a: u32, b: u32) {
        self.emit(cpu, pid, id, a, b);
    }

    // ---- internals ----
    fn frame(&self, prog: ProgId, left: u64, until: u64) -> Frame {
        let (start, end) = self.prog_span[prog as usize];
        Frame { start, pc: start, end, left, until }
    }

    fn push(&mut self, t: u64, kind: Kind, a: u32, gen: u32) {
        self.seq += 1;
        self.heap.push(Entry::new(t, self.seq, Key { kind: kind as u8, index: a }, gen));
    }

    #[inline]
    fn emit(&mut self, cpu: u32, pid: u32, id: u32, a: u32, b: u32) {
        self.events += 1;
        if let Err(e) = self.sink.emit(cpu, Event::new(self.now, pid, id, a, b)) {
            if self.sink_err.is_none() {
                self.sink_err = Some(e);
            }
        }
    }

    fn emit_comm(&mut self, cpu: u32, pid: u32, comm: &str) {
        self.events += 1;
        if let Err(e) = self.sink.emit(cpu, Event::with_comm(self.now, pid, ids::EXEC, comm)) {
            if self.sink_err.is_none() {
                self.sink_err = Some(e);
            }
        }
    }

    fn migrate(&mut self, t: Tid, old: u32, new: u32, on_cpu: u32) {
        let pid = self.tasks[t as usize].pid;
        self.emit(on_cpu, pid, ids::MIGRATE, old, new);
        self.migrations += 1;
        self.tasks[t as usize].cpu = new;
        self.nr_add(old, -1);
        self.nr_add(new, 1);
    }

    fn nr_add(&mut self, c: u32, d: i32) {
        let cpu = &mut self.cpus[c as usize];
        cpu.nr = (cpu.nr as i32 + d).max(0) as u32;
        let nr = cpu.nr;
        self.emit(c, 0, ids::RQ_SIZE, nr, d as u32);
    }

    /// Cycles per ns of a thread on `c` now.
    fn rate(&self, c: u32) -> f64 {
        let core = self.machine.cpu_core[c as usize];
        let f = self.cores[core as usize].freq as f64 * 1e-6;
        let sibling_busy = self.machine.core_cpus[core as usize]
            .iter()
            .any(|&s| s != c && self.cpus[s as usize].mode == Mode::Running);
        if sibling_busy {
            f * self.machine.spec.dvfs.smt_share
        } else {
            f
        }
    }

    /// Account the work done by the running task on `c` since its segment
    /// started.
    fn sync_progress(&mut self, c: u32) {
        let cpu = &mut self.cpus[c as usize];
        if cpu.mode != Mode::Running {
            return;
        }
        let Some(t) = cpu.curr else { return };
        let done = (self.now - cpu.seg_start) as f64 * cpu.rate;
        cpu.seg_start = self.now;
        let task = &mut self.tasks[t as usize];
        task.remaining = (task.remaining - done).max(0.0);
    }

    /// (Re)start the running task's segment at the current rate.
    fn start_segment(&mut self, c: u32) {
        let rate = self.rate(c);
        let cpu = &mut self.cpus[c as usize];
        let Some(t) = cpu.curr else { return };
        cpu.rate = rate;
        cpu.seg_start = self.now;
        cpu.seg_gen = cpu.seg_gen.wrapping_add(1);
        let gen = cpu.seg_gen;
        // Always arm an end, even for no work left: a rate change at the very
        // end of a segment must not lose it.
        let rem = self.tasks[t as usize].remaining.max(0.0);
        let dt = ceil_ns(rem / rate);
        self.push(self.now + dt, Kind::SegEnd, c, gen);
    }

    /// A thread of `core` started or stopped running or spinning: rates,
    /// energy, DVFS and the socket's active-core count follow.
    fn core_changed(&mut self, core: u32) {
        let now = self.now;
        let mut threads = [0u32; 8];
        let n = self.machine.core_cpus[core as usize].len();
        threads[..n].copy_from_slice(&self.machine.core_cpus[core as usize]);
        let mut running = 0u8;
        let mut busy = false;
        let mut shallowest = u8::MAX;
        for &c in &threads[..n] {
            let cpu = &self.cpus[c as usize];
            if cpu.mode == Mode::Running {
                running += 1;
                busy = true;
            } else if cpu.mode == Mode::Idle && cpu.spin_until > now {
                busy = true;
            }
            let st = if cpu.mode == Mode::Idle { cpu.idle_state } else { 0 };
            shallowest = shallowest.min(st);
        }
        // Rates of running threads change when a sibling starts or stops.
        let st = &mut self.cores[core as usize];
        let rates_change = st.running != running;
        st.account(now, &self.machine);
        st.running = running;
        st.idle_state = shallowest;
        if rates_change {
            for &c in &threads[..n] {
                if self.cpus[c as usize].mode == Mode::Running {
                    self.sync_progress(c);
                    self.start_segment(c);
                }
            }
        }
        let st = &mut self.cores[core as usize];
        if st.busy != busy {
            st.set_busy(now, busy, &self.machine, self.governor);
            let socket = self.machine.core_socket[core as usize] as usize;
            let before = self.machine.turbo_by_active[self.socket_active[socket].max(1) as usize];
            if busy {
                self.socket_active[socket] += 1;
            } else {
                self.socket_active[socket] -= 1;
            }
            let after = self.machine.turbo_by_active[self.socket_active[socket].max(1) as usize];
            if before != after {
                self.ceiling_changed(socket as u32, after);
            }
            self.dvfs_kick(core);
        }
    }

    fn ceiling(&self, core: u32) -> u32 {
        let socket = self.machine.core_socket[core as usize] as usize;
        self.machine.turbo_by_active[self.socket_active[socket].max(1) as usize]
    }

    fn ceiling_changed(&mut self, socket: u32, ceiling: u32) {
        let cpc = self.machine.spec.cores_per_socket;
        for core in socket * cpc..(socket + 1) * cpc {
            if self.cores[core as usize].freq > ceiling {
                self.set_freq(core, ceiling);
            }
            if self.governor != Governor::Schedutil {
                self.dvfs_kick(core);
            }
        }
    }

    /// Make sure a hardware-governor core has a sample pending.
    fn dvfs_kick(&mut self, core: u32) {
        if self.governor == Governor::Schedutil {
            return;
        }
        let st = &mut self.cores[core as usize];
        if st.pending {
            return;
        }
        st.pending = true;
        st.gen = st.gen.wrapping_add(1);
        let gen = st.gen;
        // Samples fall on a global grid of hw_sample_us.
        let p = self.machine.spec.dvfs.hw_sample_us * 1000;
        let at = (self.now / p + 1) * p;
        self.push(at, Kind::Dvfs, core, gen);
    }

    fn set_freq(&mut self, core: u32, f: u32) {
        if self.cores[core as usize].freq == f {
            return;
        }
        let now = self.now;
        self.cores[core as usize].account(now, &self.machine);
        let n = self.machine.core_cpus[core as usize].len();
        for i in 0..n {
            let c = self.machine.core_cpus[core as usize][i];
            self.sync_progress(c);
        }
        self.cores[core as usize].freq = f;
        for i in 0..n {
            let c = self.machine.core_cpus[core as usize][i];
            if self.cpus[c as usize].mode == Mode::Running {
                self.start_segment(c);
            }
            self.emit(c, 0, ids::FREQ_CHANGE, f, 0);
        }
    }

    fn pelt_update(&mut self, c: u32) {
        // PELT: 32 ms half-life (MODEL-FACTS.md section 4), continuous form.
        // Only schedutil reads utilisations: the hardware governors skip it.
        if self.governor != Governor::Schedutil {
            return;
        }
        let cpu = &mut self.cpus[c as usize];
        let dt = self.now - cpu.util_t;
        if dt > 0 {
            let target = if cpu.mode == Mode::Running { 1.0 } else { 0.0 };
            let decay = (-(dt as f64) * (std::f64::consts::LN_2 / 32e6)).exp();
            cpu.util = target + (cpu.util - target) * decay;
            cpu.util_t = self.now;
        }
    }

    /// Bring a task's utilisation to now: it grew while it ran, decayed
    /// otherwise (PELT, 32 ms half-life).
    fn task_util(&mut self, t: Tid) -> f64 {
        let task = &mut self.tasks[t as usize];
        if self.governor != Governor::Schedutil {
            return task.util;
        }
        let dt = self.now.saturating_sub(task.util_t);
        if dt > 0 {
            let target = if task.state == TState::Running { 1.0 } else { 0.0 };
            let decay = (-(dt as f64) * (std::f64::consts::LN_2 / 32e6)).exp();
            task.util = target + (task.util - target) * decay;
            task.util_t = self.now;
        }
        task.util
    }

    /// schedutil: next_f = 1.25 x f_max x util, rate limited
    /// (MODEL-FACTS.md section 4). `enqueued`, a task just placed on `c`:
    /// its utilisation joins the CPU's at enqueue, before it runs, as a
    /// cfs_rq's util_avg includes its queued tasks' (a new task brings 512,
    /// MODEL-FACTS.md section 4), so the frequency asked for at a fork or a
    /// wake-up already counts the task.
    fn schedutil_update(&mut self, c: u32, enqueued: Option<Tid>) {
        if self.governor != Governor::Schedutil {
            return;
        }
        let core = self.machine.cpu_core[c as usize];
        let limit = self.machine.spec.dvfs.schedutil_rate_limit_us * 1000;
        let last = self.cores[core as usize].su_last;
        if last != u64::MAX && self.now < last + limit {
            return;
        }
        let extra = enqueued.map_or(0.0, |t| self.task_util(t));
        let n = self.machine.core_cpus[core as usize].len();
        let mut util: f64 = 0.0;
        for i in 0..n {
            let s = self.machine.core_cpus[core as usize][i];
            self.pelt_update(s);
            let mine = if s == c { extra } else { 0.0 };
            util = util.max((self.cpus[s as usize].util + mine).min(1.0));
            // The CPU's utilisation includes its current task's, which a
            // task migrating or newly created brings along.
            if let Some(t) = self.cpus[s as usize].curr {
                util = util.max(self.task_util(t));
            }
        }
        let f = crate::dvfs::request(&self.machine, util, self.machine.min_khz(), self.ceiling(core));
        self.cores[core as usize].su_last = self.now;
        self.set_freq(core, f);
    }
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
        // A core that has not ticked in this run last ticked before it,
        // during some short burst of activity; what that tick saw is what
        // the core reaches one tick after it starts: low where the hardware
        // ramps slowly (the E7-8870 v4), high where it is fast (the 6130 and
        // 5218: "when a core becomes idle there is often no clock tick that
        // observes a low frequency", shared/seeds/001, section 5.2).
        let tick_freq = crate::dvfs::freq_after_busy(&machine, governor, TICK_NS);
        let cpus = (0..n)
            .map(|_| Cpu {
                mode: Mode::Idle,
                curr: None,
                prev: (0, 0),
                idle_state: (machine.spec.idle.len() - 1) as u8,
                idle_since: 0,
                // rq->avg_idle starts at 2 x migration_cost = 1 ms
                // (MODEL-FACTS.md section 1).
                avg_idle: 1e6,
                seg_start: 0,
                rate: 0.0,
                seg_gen: 0,
                wake_gen: 0,
                tick_pending: false,
                tick_freq,
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
        let mut prog_span = Vec::with_capacity(workload.programs.len());
        let mut at = 0u32;
        for p in &workload.programs {
            prog_span.push((at, at + p.steps.len() as u32));
            at += p.steps.len() as u32;
        }
        let sim = Sim {
            governor,
            now: 0,
            seq: 0,
            heap: EventQueue::new(),
            tasks: Vec::new(),
            cpus,
            cores,
            socket_active: vec![0; sockets],
            actions: VecDeque::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            sink,
            sink_err: None,
            events: 0,
            timers: Vec::new(),
            free_timers: Vec::new(),
            pipes,
            futexes,
            barriers,
            marks: vec![0; nmarks],
            samples: Vec::new(),
            measures: 0,
            alive: 0,
            next_pid: 1,
            migrations: 0,
            last_exit: 0,
            zero_time_steps: 0,
            steps: std::rc::Rc::new(workload.programs.iter().flat_map(|p| p.steps.iter().cloned()).collect()),
            prog_span,
            workload,
            machine,
        };
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
        let initial = self.sim.workload.initial.clone();
        for (prog, comm, cpu) in initial {
            self.spawn(prog, &comm, cpu)?;
        }
        self.drain()?;
        let mut partial = None;
        loop {
            if self.sim.alive == 0 {
                break;
            }
            let end = self.sim.workload.end_ns;
            let next = self.sim.heap.peek().map(|e| e.t);
            if let Some(end) = end {
                if next.is_none_or(|t| t > end) {
                    // The workload's own end (rt-app's duration).
                    self.sim.now = end.max(self.sim.now);
                    self.sim.last_exit = self.sim.now;
                    break;
                }
            }
            // Handled while still in the heap: a new event for the same key
            // replaces it in place (queue.rs); `finish` removes it if none did.
            let Some(&ev) = self.sim.heap.peek() else {
                return Err(self.deadlock());
            };
            if ev.t > limits.max_sim_ns {
                self.sim.now = limits.max_sim_ns;
                partial = Some(format!("stopped at the simulated-time limit of {} ns", limits.max_sim_ns));
                break;
            }
            if self.sim.events >= limits.max_events {
                partial = Some(format!("stopped at the event limit of {}", limits.max_events));
                break;
            }
            debug_assert!(ev.t >= self.sim.now);
            self.sim.now = ev.t;
            self.handle(ev)?;
            self.drain()?;
            self.sim.heap.finish(&ev);
            if self.check_invariants {
                self.check();
            }
            if let Some(e) = self.sim.sink_err.take() {
                return Err(SimError::Output(e));
            }
        }
        let s = &mut self.sim;
        let end = if partial.is_some() { s.now } else { s.last_exit };
        s.now = end;
        let mut per_socket = vec![0.0; s.machine.nr_sockets() as usize];
        for core in 0..s.machine.nr_cores {
            s.cores[core as usize].account(end, &s.machine);
            per_socket[s.machine.core_socket[core as usize] as usize] += s.cores[core as usize].energy_j;
        }
        for e in per_socket.iter_mut() {
            *e += s.machine.spec.power.static_w_per_socket * end as f64 * 1e-9;
        }
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
            samples: std::mem::take(&mut s.samples),
            measures: s.measures,
            policy_stats: self.policy.stats(),
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

    fn deadlock(&self) -> SimError {
        let blocked: Vec<String> = self
            .sim
            .tasks
            .iter()
            .filter(|t| t.state == TState::Blocked)
            .take(10)
            .map(|t| format!("{} ({}, {:?})", t.pid, t.comm, t.blocked_on))
            .collect();
        let n = self.sim.tasks.iter().filter(|t| t.state == TState::Blocked).count();
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
                // No ticks on idle CPUs (NO_HZ_IDLE, MODEL-FACTS.md section 0).
                if cpu.mode != Mode::Running {
                    return Ok(());
                }
                let t = cpu.curr.unwrap();
                let f = self.sim.cur_freq(c);
                self.sim.cpus[c as usize].tick_freq = f;
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
                let ceiling = self.sim.ceiling(core);
                let now = self.sim.now;
                let (f, again) =
                    self.sim.cores[core as usize].hw_sample(now, &self.sim.machine, self.sim.governor, ceiling);
                self.sim.set_freq(core, f);
                let st = &mut self.sim.cores[core as usize];
                st.pending = false;
                if again {
                    self.sim.dvfs_kick(core);
                }
            }
            Kind::Wake => {
                let t = c;
                let task = &self.sim.tasks[t as usize];
                if task.state != TState::Blocked || task.block_gen != ev.gen {
                    return Ok(());
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
        let lat = self.sim.idle_exit_latency(c);
        let cpu = &mut self.sim.cpus[c as usize];
        if cpu.mode != Mode::Idle {
            return;
        }
        cpu.mode = Mode::Waking;
        cpu.spin_until = 0;
        // rq->avg_idle: EWMA (1/8) of idle periods, capped (MODEL-FACTS.md
        // section 1); the cap of 10 ms is an ASSUMPTION.
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
        let t = self.new_task(prog, comm, None);
        let pid = self.sim.tasks[t as usize].pid;
        self.sim.sink.note_process(pid, 0, comm, 0);
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

    fn new_task(&mut self, prog: ProgId, comm: &str, parent: Option<Tid>) -> Tid {
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
            // forked on an idle CPU (MODEL-FACTS.md section 4; we use it
            // whatever the CPU's load).
            util: 0.5,
            util_t: self.sim.now,
        });
        self.sim.alive += 1;
        (self.sim.tasks.len() - 1) as Tid
    }

    fn checked_select(&mut self, t: Tid, prev: u32, w: Wake) -> u32 {
        let c = self.policy.select_cpu(&mut self.sim, t, prev, w);
        if c < self.sim.machine.nr_cpus {
            c
        } else {
            prev
        }
    }

    /// Make a blocked task runnable, placed by the policy.
    fn wake(&mut self, t: Tid, waker: Option<Tid>, sync: bool) {
        let prev = self.sim.tasks[t as usize].cpu;
        let waker_cpu = waker.map(|w| self.sim.tasks[w as usize].cpu).unwrap_or(prev);
        let task = &mut self.sim.tasks[t as usize];
        task.state = TState::Runnable;
        task.blocked_on = BlockedOn::Nothing;
        task.wait = WaitFor::None;
        let pid = task.pid;
        let w = Wake { kind: WakeKind::Wakeup, waker, waker_cpu, sync };
        let target = self.checked_select(t, prev, w);
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
    fn stop(&mut self, c: u32, t: Tid, state: u32) {
        self.sim.task_util(t);
        let pid = self.sim.tasks[t as usize].pid;
        self.sim.pelt_update(c);
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
        let next = self.policy.dispatch(&mut self.sim, c);
        let next = next.filter(|&t| self.sim.tasks[t as usize].state == TState::Runnable);
        let (ppid, pstate) = self.sim.cpus[c as usize].prev;
        match next {
            None => {
                self.sim.emit(c, ppid, ids::CTX_SWITCH, 0, pstate);
                let now = self.sim.now;
                // Menu-like choice: the deepest state whose target residency
                // fits the expected idle time (rq->avg_idle).
                let avg = self.sim.cpus[c as usize].avg_idle;
                let st = self
                    .sim
                    .machine
                    .spec
                    .idle
                    .iter()
                    .rposition(|s| (s.target_residency_us * 1000) as f64 <= avg)
                    .unwrap_or(0) as u8;
                let cpu = &mut self.sim.cpus[c as usize];
                cpu.mode = Mode::Idle;
                cpu.idle_state = st;
                cpu.idle_since = now;
                self.sim.emit(c, 0, ids::IDLE_ENTER, st as u32, 0);
                let core = self.sim.machine.cpu_core[c as usize];
                self.sim.core_changed(core);
                self.policy.update_idle(&mut self.sim, c, true);
                // A task may have been queued here meanwhile.
                if self.sim.cpus[c as usize].nr > 0 {
                    self.sim.kick(c);
                }
            }
            Some(t) => {
                let pid = self.sim.tasks[t as usize].pid;
                self.sim.emit(c, ppid, ids::CTX_SWITCH, pid, pstate);
                let was_idle = ppid == 0;
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
                let task = &mut self.sim.tasks[t as usize];
                task.state = TState::Running;
                task.last_run_ns = now;
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

    fn block(&mut self, c: u32, t: Tid, on: BlockedOn, id: u32, a: u32, state: u32) {
        let pid = self.sim.tasks[t as usize].pid;
        self.sim.emit(c, pid, id, a, 0);
        let task = &mut self.sim.tasks[t as usize];
        task.state = TState::Blocked;
        task.blocked_on = on;
        task.block_gen = task.block_gen.wrapping_add(1);
        self.stop(c, t, state);
        self.policy.stopping(&mut self.sim, t, c, false);
        self.sim.actions.push_back(Action::Schedule(c));
    }

    /// Run `t`'s program on `c` until it computes, blocks or exits.
    fn advance(&mut self, c: u32, t: Tid) -> Result<(), SimError> {
        if let Some(b) = self.sim.tasks[t as usize].spinning.take() {
            // Its spin ran out before the barrier opened (a release clears
            // `spinning`): it sleeps there, still counted as arrived.
            self.block(c, t, BlockedOn::Barrier(b), ids::FUTEX_WAIT, b, prev_state::BLOCKED);
            return Ok(());
        }
        let steps = self.sim.steps.clone();
        loop {
            let step = {
                let task = &mut self.sim.tasks[t as usize];
                let Some(fr) = task.frames.last_mut() else {
                    self.exit(c, t);
                    return Ok(());
                };
                if fr.pc >= fr.end {
                    // End of a loop body or of the program.
                    let now = self.sim.now;
                    if fr.until > 0 && now < fr.until {
                        fr.pc = fr.start;
                    } else if fr.until == 0 && fr.left > 0 {
                        fr.left -= 1;
                        fr.pc = fr.start;
                    } else {
                        task.frames.pop();
                    }
                    self.zero_time()?;
                    continue;
                }
                let s = &steps[fr.pc as usize];
                fr.pc += 1;
                s
            };
            self.zero_time()?;
            let pid = self.sim.tasks[t as usize].pid;
            let now = self.sim.now;
            match *step {
                Step::Compute(a) => {
                    let u = if a.jitter > 0.0 { self.sim.uniform() } else { 0.0 };
                    let cycles = a.sample(u);
                    if cycles < 1.0 {
                        continue;
                    }
                    self.sim.tasks[t as usize].remaining = cycles;
                    self.sim.zero_time_steps = 0;
                    self.sim.start_segment(c);
                    return Ok(());
                }
                Step::Sleep(a) | Step::Io(a) => {
                    let u = if a.jitter > 0.0 { self.sim.uniform() } else { 0.0 };
                    let ns = a.sample(u).max(1.0) as u64;
                    let io = matches!(step, Step::Io(_));
                    let (id, st) =
                        if io { (ids::BLOCK_IO, prev_state::BLOCKED_IO) } else { (ids::BLOCK, prev_state::BLOCKED) };
                    self.block(c, t, BlockedOn::Timer, id, 0, st);
                    let gen = self.sim.tasks[t as usize].block_gen;
                    self.sim.push(now + ns, Kind::Wake, t, gen);
                    return Ok(());
                }
                Step::Fork(p) => {
                    let comm = self.sim.tasks[t as usize].comm.clone();
                    let child = self.new_task(p, &comm, Some(t));
                    self.sim.tasks[t as usize].children += 1;
                    let cpid = self.sim.tasks[child as usize].pid;
                    self.sim.emit(c, cpid, ids::FORK, pid, 0);
                    self.sim.sink.note_process(cpid, pid, &comm, now);
                    self.policy.init_task(&mut self.sim, child, Some(t));
                    let w = Wake { kind: WakeKind::Fork, waker: Some(t), waker_cpu: c, sync: false };
                    let target = self.checked_select(child, c, w);
                    self.sim.emit(c, cpid, ids::WAKEUP_NEW, target, pid);
                    self.sim.tasks[child as usize].cpu = target;
                    self.sim.nr_add(target, 1);
                    self.policy.enqueue(&mut self.sim, child, target, Enq::New);
                    self.sim.schedutil_update(target, Some(child));
                    self.sim.kick(target);
                }
                Step::Exec(ref comm) => {
                    self.sim.emit_comm(c, pid, comm);
                    self.sim.sink.note_process(pid, 0, comm, now);
                    self.sim.tasks[t as usize].comm.clone_from(comm);
                    // sched_exec: exec placement, migrating if the target
                    // differs (MODEL-FACTS.md section 1).
                    let w = Wake { kind: WakeKind::Exec, waker: Some(t), waker_cpu: c, sync: false };
                    let target = self.checked_select(t, c, w);
                    if target != c {
                        self.stop(c, t, prev_state::RUNNABLE);
                        self.sim.tasks[t as usize].state = TState::Runnable;
                        self.policy.stopping(&mut self.sim, t, c, true);
                        self.sim.migrate(t, c, target, c);
                        self.policy.enqueue(&mut self.sim, t, target, Enq::Exec);
                        self.sim.kick(target);
                        self.sim.actions.push_back(Action::Schedule(c));
                        return Ok(());
                    }
                }
                Step::Wait | Step::WaitAll => {
                    let task = &mut self.sim.tasks[t as usize];
                    if matches!(step, Step::Wait) && task.zombies > 0 {
                        task.zombies -= 1;
                        continue;
                    }
                    if task.children == 0 {
                        task.zombies = 0;
                        continue;
                    }
                    task.wait = if matches!(step, Step::Wait) { WaitFor::One } else { WaitFor::All };
                    self.block(c, t, BlockedOn::Child, ids::WAIT_PID, 0, prev_state::BLOCKED);
                    return Ok(());
                }
                Step::Exit => {
                    self.exit(c, t);
                    return Ok(());
                }
                Step::PipeWrite(p) => {
                    let pipe = &mut self.sim.pipes[p as usize];
                    if pipe.msgs >= pipe.cap {
                        pipe.writers.push_back(t);
                        // Retry the write when woken.
                        self.sim.tasks[t as usize].frames.last_mut().unwrap().pc -= 1;
                        self.block(c, t, BlockedOn::PipeWrite(p), ids::BLOCK, 0, prev_state::BLOCKED);
                        return Ok(());
                    }
                    pipe.msgs += 1;
                    if let Some(r) = pipe.readers.pop_front() {
                        // Pipe wake-ups are synchronous (WF_SYNC).
                        self.wake(r, Some(t), true);
                    }
                }
                Step::PipeRead(p) => {
                    let pipe = &mut self.sim.pipes[p as usize];
                    if pipe.msgs == 0 {
                        pipe.readers.push_back(t);
                        self.sim.tasks[t as usize].frames.last_mut().unwrap().pc -= 1;
                        self.block(c, t, BlockedOn::PipeRead(p), ids::BLOCK, 0, prev_state::BLOCKED);
                        return Ok(());
                    }
                    pipe.msgs -= 1;
                    if let Some(w) = pipe.writers.pop_front() {
                        self.wake(w, Some(t), true);
                    }
                }
                Step::FutexWait(f) => {
                    self.sim.futexes[f as usize].push_back(t);
                    self.block(c, t, BlockedOn::Futex(f), ids::FUTEX_WAIT, f, prev_state::BLOCKED);
                    return Ok(());
                }
                Step::FutexWake(f, n) => {
                    let mut woken = 0;
                    while woken < n {
                        let Some(w) = self.sim.futexes[f as usize].pop_front() else { break };
                        self.wake(w, Some(t), false);
                        woken += 1;
                    }
                    self.sim.emit(c, pid, ids::FUTEX_WAKE, f, woken);
                }
                Step::Barrier(b) | Step::BarrierSpin(b, _) => {
                    let bar = &mut self.sim.barriers[b as usize];
                    if bar.arrived.len() as u32 + 1 >= bar.count {
                        let waiters = std::mem::take(&mut bar.arrived);
                        for &w in &waiters {
                            if self.sim.tasks[w as usize].spinning.is_some() {
                                // A spinning waiter sees the barrier open
                                // and goes on: no wake-up.
                                self.release_spinner(w);
                            } else {
                                self.wake(w, Some(t), false);
                            }
                        }
                        let bar = &mut self.sim.barriers[b as usize];
                        bar.arrived = waiters;
                        bar.arrived.clear();
                    } else {
                        bar.arrived.push(t);
                        let spin = match *step {
                            Step::BarrierSpin(_, a) => {
                                let u = if a.jitter > 0.0 { self.sim.uniform() } else { 0.0 };
                                a.sample(u)
                            }
                            _ => 0.0,
                        };
                        if spin >= 1.0 {
                            // Spin: the task keeps running, with the spin's
                            // cycles as its work.
                            let task = &mut self.sim.tasks[t as usize];
                            task.spinning = Some(b);
                            task.remaining = spin;
                            self.sim.zero_time_steps = 0;
                            self.sim.start_segment(c);
                        } else {
                            self.block(c, t, BlockedOn::Barrier(b), ids::FUTEX_WAIT, b, prev_state::BLOCKED);
                        }
                        return Ok(());
                    }
                }
                Step::Repeat(p, n) => {
                    if n > 0 {
                        let fr = self.sim.frame(p, n - 1, 0);
                        self.sim.tasks[t as usize].frames.push(fr);
                    }
                }
                Step::RepeatFor(p, ns) => {
                    if ns > 0 {
                        let fr = self.sim.frame(p, 0, now + ns);
                        self.sim.tasks[t as usize].frames.push(fr);
                    }
                }
                Step::Mark(i) => self.sim.marks[i as usize] = now,
                Step::Measure(i) => {
                    let d = now - self.sim.marks[i as usize].min(now);
                    self.sim.measures += 1;
                    // Bounded memory: keep at most 4 M samples.
                    if self.sim.samples.len() < 4_000_000 {
                        self.sim.samples.push(d);
                    }
                }
            }
        }
    }

    /// The barrier a task spins at opened: it stops spinning and goes on
    /// past the barrier, where it is (running: at once; preempted: when it
    /// runs again). No wake-up, as it never slept.
    fn release_spinner(&mut self, w: Tid) {
        self.sim.tasks[w as usize].spinning = None;
        let c = self.sim.tasks[w as usize].cpu;
        if self.sim.tasks[w as usize].state == TState::Running {
            self.sim.sync_progress(c);
            self.sim.tasks[w as usize].remaining = 0.0;
            // A segment end now: its CPU's next event carries it on.
            self.sim.start_segment(c);
        } else {
            self.sim.tasks[w as usize].remaining = 0.0;
        }
    }

    fn zero_time(&mut self) -> Result<(), SimError> {
        self.sim.zero_time_steps += 1;
        if self.sim.zero_time_steps > 10_000_000 {
            return Err(SimError::Input(format!(
                "workload {} loops without computing or blocking (at {} ns)",
                self.sim.workload.name, self.sim.now
            )));
        }
        Ok(())
    }

    fn exit(&mut self, c: u32, t: Tid) {
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

#[cfg(test)]
mod tests {
    use super::ceil_ns;

    #[test]
    fn ceil_ns_is_ceil() {
        let mut x = 0.0f64;
        for v in [0.0, 0.3, 1.0, 1.0000001, 2.5, 1e15 + 0.5, 4503599627370495.5, 9007199254740993.0, 1e19, 1e30, f64::INFINITY] {
            assert_eq!(ceil_ns(v), v.ceil() as u64, "{v}");
        }
        for _ in 0..100_000 {
            x = x * 1.37 + 0.123;
            if x > 1e12 {
                x /= 1e9;
            }
            assert_eq!(ceil_ns(x), x.ceil() as u64, "{x}");
        }
    }
}
