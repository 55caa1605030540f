// SPDX-License-Identifier: GPL-2.0-only
//! Trace analysis (`warmcore trace stats`): one pass over the events in
//! global time order, O(1) amortised work per event (O(CPUs) per 4 ms
//! interval only at the end), no allocation per event once the tables have
//! grown, and memory bounded by the CPUs, the runnable tasks and the
//! frequency-inversion candidates of the last millisecond, whatever the
//! number of pids or events.
//!
//! The simulator feeds its events to an [`Analyzer`] as it makes them; a file
//! is analysed with [`analyze`]. Every figure is defined below, where it is
//! computed; the definitions in short:
//!
//! * **Busy time** of a CPU: time it runs a task other than idle (pid 0),
//!   from a CTX_SWITCH whose next pid is not 0 to the CPU's next CTX_SWITCH.
//!   The state before a CPU's first CTX_SWITCH is not recorded; the task
//!   that switch names as the previous one can only have been running since
//!   the trace's first event (any other switch on that CPU would have been
//!   recorded), so that time is counted as busy; if it names idle, the CPU
//!   was idle. Lost events can make this wrong, as they can everything else.
//! * **Runnable set**: a task enters it at WAKEUP or WAKEUP_NEW, waiting on
//!   the target CPU; it runs when a CTX_SWITCH names it as next; it waits on
//!   its CPU again when switched out with prev_state RUNNABLE (preempted);
//!   it leaves at a switch-out with any other prev_state, or at EXIT while
//!   waiting. MIGRATE moves a waiting task to the new CPU's queue. A task
//!   first seen running (a trace that starts mid-flight) joins at that point.
//!   For these online measures a CPU counts as idle until its first
//!   CTX_SWITCH (what a simulated machine is at the start, and what a CPU
//!   without a recorded switch most likely is).
//! * **Frequency** of a CPU: piecewise constant, set by FREQ_CHANGE and by
//!   TICK with a non-zero frequency; unknown before the CPU's first sample.
//! * **Order**: events are taken in the order given. A file keeps the order
//!   in which events of one nanosecond happened when its writer knew it (the
//!   simulator's traces); otherwise the reader gives such ties by CPU
//!   number, which can put a task's CTX_SWITCH on one CPU before the WAKEUP
//!   that a task on another CPU made at the same time. Two such inversions
//!   are recognised so that no task is counted twice: a WAKEUP at the time
//!   of a switch-in that found the task not runnable is that switch-in's
//!   wake-up (counted, latency 0, the task's state left alone); a switch-out
//!   on a CPU of a task already running on another CPU is stale (the CPU
//!   changes, the task does not).
//! * **Instants**: overload and work conservation take the state at the end
//!   of each instant (after every event of one timestamp), so that a task
//!   queued behind one that leaves at the same time (the simulator's
//!   hand-offs, whose operations take no time) stacks nothing, whatever the
//!   order of the instant's events; the engine's own run-queue sizes agree.
//!   Underload's "most tasks runnable at once" is taken after every event:
//!   a task that wakes another and then blocks or exits counts as runnable
//!   with it, as in a kernel, where the waker is still on its CPU for the
//!   microseconds of its exit or block path (the overlap of a fork/wait
//!   chain's hand-off, Nest, section 5.2).
//!
//! The other measures are documented on the items that compute them:
//! [`Stats::underload_per_s`], [`Stats::overload_per_s`],
//! [`Stats::migrations`], [`Stats::wakeup_latency_ns`],
//! [`Stats::work_conservation_violation_ns`], [`Stats::inversions`],
//! [`Stats::freq_residency`].

use hdrhistogram::Histogram;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::event::{ids, prev_state, CpuEvent};
use crate::meta::Header;
use crate::reader::{Trace, Window};

/// Length of an underload/overload interval: 4 ms, the tick at 250 Hz, as
/// in Nest, section 5.2.
pub const INTERVAL_NS: u64 = 4_000_000;

/// How soon after a wakeup the waker's CPU must go idle for a frequency
/// inversion: 1 ms (the definition `trace stats` documents). The pattern is
/// that of Fewer Cores, More Hertz, sections 1 and 2: the waker blocks or exits soon after waking or forking
/// a task that was placed on a slower, previously idle core.
pub const INVERSION_IDLE_WINDOW_NS: u64 = 1_000_000;

/// Width of a frequency-residency band: 100 MHz.
pub const BAND_KHZ: u32 = 100_000;

/// Bands kept while counting: 0 to 102.4 GHz; higher samples land in the top one.
const MAX_BANDS: usize = 1024;

/// Largest wakeup latency the histogram resolves (one hour); longer ones are
/// counted as one hour.
const LATENCY_MAX_NS: u64 = 3_600_000_000_000;

/// Latency percentiles in ns.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Percentiles {
    pub p50: u64,
    pub p99: u64,
    pub p999: u64,
}

/// Frequency-inversion episodes: how many, and the time their woken tasks
/// ran below the waker's frequency.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inversions {
    pub count: u64,
    pub ns: u64,
}

/// One frequency band [lo_mhz, hi_mhz) and the fraction of busy time (at a
/// known frequency) spent in it.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct Band {
    pub lo_mhz: u32,
    pub hi_mhz: u32,
    pub fraction: f64,
}

/// Figures that are not part of the JSON object but that the readable report
/// shows (and that tests and the simulator may read).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Detail {
    /// Busy time of each CPU in ns (see the module documentation).
    pub busy_ns: Vec<u64>,
    /// Busy time at a known frequency: the denominator of the residency.
    pub busy_known_freq_ns: u64,
    /// Wakeups that made a sleeping task runnable (latency samples taken).
    pub wakeups: u64,
    /// Intervals of [`INTERVAL_NS`] covered, the last one possibly partial.
    pub intervals: u64,
    /// Sum of the underload of all intervals (task-intervals).
    pub underload: u64,
    /// Sum of the overload of all intervals (task-intervals).
    pub overload: u64,
}

/// The result of the analysis. Its JSON form has exactly the keys `trace stats --json` documents;
/// what the trace cannot support is null.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Stats {
    /// Events analysed.
    pub events: u64,
    /// CPUs of the machine.
    pub cpus: u32,
    /// Last event's timestamp minus the first's.
    pub duration_ns: u64,
    /// Events the recorder reports it could not record.
    pub lost_events: u64,
    /// Underload per second (Nest, section 5.2). Time is
    /// cut into [`INTERVAL_NS`] intervals from the first event. The underload
    /// of an interval is the number of CPUs that ran a task at any point in
    /// it minus the largest number of tasks runnable at one time in it, when
    /// positive. Underload per second is the sum over the intervals (the
    /// last one may be partial) divided by the duration in seconds; 0 for a
    /// trace of zero duration.
    pub underload_per_s: f64,
    /// Overload per second. Nest (section 5.2) names
    /// overload "multiple tasks trying to run on a single core" without a
    /// formula; here the overload at an instant is the number of runnable
    /// tasks beyond one per CPU, summed over the CPUs that have any (a CPU
    /// running one task with two waiting adds 2; a task waiting on an idle
    /// CPU adds 0), taken at the end of each instant (module docs). The
    /// overload of an interval is its largest value in the interval, and the sum over the intervals is divided by the duration
    /// in seconds, exactly as for underload.
    pub overload_per_s: f64,
    /// MIGRATE events.
    pub migrations: u64,
    /// CPUs that ran a task at some point (Nest, section 5.2, counts the
    /// cores a policy uses): a policy that keeps work on few warm cores
    /// touches fewer of them than one that spreads it.
    pub cpus_used: u32,
    /// Time from a WAKEUP or WAKEUP_NEW that makes a sleeping task runnable
    /// to the CTX_SWITCH that runs it, anywhere. Percentiles from an HDR
    /// histogram of 3 significant digits (relative error at most 0.1 %,
    /// exact below 2048 ns). Null when no woken task ran.
    pub wakeup_latency_ns: Option<Percentiles>,
    /// Total time during which at least one CPU is idle while another CPU
    /// has a task waiting (runnable, not running) behind the task it runs.
    /// A task waiting on an idle CPU is on its way to run there (a wakeup
    /// that CPU has not served yet) and makes no violation.
    pub work_conservation_violation_ns: u64,
    /// Frequency inversions (Fewer Cores, More Hertz, section 2): a task woken or
    /// forked from a CPU running a task at a known frequency F starts its
    /// first run after that wakeup on another CPU whose frequency is known
    /// and below F, and the waker's CPU switches to idle within
    /// [`INVERSION_IDLE_WINDOW_NS`] of the wakeup (before or after the woken
    /// task starts). `ns` sums the time those tasks ran at a frequency below
    /// F during that first run. Not counted: wakeups from an idle CPU or at an
    /// unknown frequency, and an episode whose task finished its first run and
    /// was woken again before the waker's CPU went idle. Null when the trace
    /// has no frequency data.
    pub inversions: Option<Inversions>,
    /// Fraction of busy time at a known frequency spent in each 100 MHz band
    /// [lo, hi), from the band of the machine's minimum frequency (or the
    /// lowest observed, if lower or if the machine has no range) to the band
    /// of its maximum (or the highest observed). The fractions sum to 1.
    /// Busy time before a CPU's first switch or first frequency sample is not
    /// in it. Null when no busy time has a known frequency.
    pub freq_residency: Option<Vec<Band>>,
    /// Per-CPU busy time and other figures of the readable report; not in JSON.
    #[serde(skip)]
    pub detail: Detail,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Other,
    Switch,
    Wakeup,
    Migrate,
    Tick,
    Freq,
    Exit,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
enum TaskState {
    /// Not runnable (sleeping, dead, or not seen yet).
    #[default]
    Off,
    Waiting(u32),
    Running(u32),
}

/// A possible frequency inversion, carried by the woken task.
#[derive(Clone, Copy, Debug)]
struct Cand {
    waker_cpu: u32,
    /// The waker's CPU's frequency at the wakeup, kHz.
    fw: u32,
    wake_ts: u64,
    started: bool,
    run_done: bool,
    idle_ok: bool,
    below_ns: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Task {
    state: TaskState,
    /// Time of the wakeup whose latency is pending.
    wake_ts: Option<u64>,
    cand: Option<Cand>,
}

impl Task {
    /// Its first run is over and waits for the waker's CPU to go idle.
    fn awaits_idle(&self) -> bool {
        self.cand.is_some_and(|c| c.run_done && !c.idle_ok)
    }
}

/// The first run of a possibly inverted task on this CPU.
#[derive(Clone, Copy, Debug)]
struct InvRun {
    pid: u32,
    fw: u32,
    below_ns: u64,
}

#[derive(Clone, Debug, Default)]
struct Cpu {
    /// Running pid, 0 = idle.
    curr: u32,
    switched: bool,
    /// Start of the current segment of constant (curr, freq).
    seg_start: u64,
    freq: u32,
    waiting: u32,
    busy_ns: u64,
    /// Last interval in which this CPU ran a task (see `set_curr`).
    used_interval: u64,
    inv: Option<InvRun>,
    /// Inversion candidates woken from this CPU: (pid, wake_ts).
    wakes: Vec<(u32, u64)>,
    prune_at: usize,
}

/// Contributions of one CPU to the machine-wide counts.
#[derive(Clone, Copy)]
struct Contrib {
    idle: u32,
    busy_wait: u32,
    nonempty: u32,
}

fn contrib(c: &Cpu) -> Contrib {
    Contrib {
        idle: (c.curr == 0) as u32,
        busy_wait: (c.curr != 0 && c.waiting > 0) as u32,
        nonempty: (c.curr != 0 || c.waiting > 0) as u32,
    }
}

fn band_of(khz: u32) -> usize {
    ((khz / BAND_KHZ) as usize).min(MAX_BANDS - 1)
}

/// Pids below this are kept in a table indexed by pid (a simulator's pids
/// count up from 1), the others in a map: the table spares the hashing and
/// probing that every switch and wake-up needs, its size bounded by
/// DENSE_PIDS entries (under 2 MB).
const DENSE_PIDS: usize = 1 << 15;

/// The tasks the analysis holds state for, by pid.
#[derive(Default)]
struct Tasks {
    dense: Vec<Option<Task>>,
    far: FxHashMap<u32, Task>,
    len: usize,
}

impl Tasks {
    #[inline]
    fn get(&self, pid: &u32) -> Option<&Task> {
        match self.dense.get(*pid as usize) {
            Some(t) => t.as_ref(),
            None if (*pid as usize) < DENSE_PIDS => None,
            None => self.far.get(pid),
        }
    }
    #[inline]
    fn get_mut(&mut self, pid: &u32) -> Option<&mut Task> {
        match self.dense.get_mut(*pid as usize) {
            Some(t) => t.as_mut(),
            None if (*pid as usize) < DENSE_PIDS => None,
            None => self.far.get_mut(pid),
        }
    }
    /// The task's state, a new one if it has none.
    #[inline]
    fn get_or_default(&mut self, pid: u32) -> &mut Task {
        let p = pid as usize;
        if p >= DENSE_PIDS {
            let far = &mut self.far;
            if !far.contains_key(&pid) {
                self.len += 1;
            }
            return far.entry(pid).or_default();
        }
        if p >= self.dense.len() {
            self.dense.resize(p + 1, None);
        }
        let slot = &mut self.dense[p];
        if slot.is_none() {
            self.len += 1;
        }
        slot.get_or_insert_with(Task::default)
    }
    fn insert(&mut self, pid: u32, t: Task) {
        *self.get_or_default(pid) = t;
    }
    fn remove(&mut self, pid: &u32) {
        let gone = match self.dense.get_mut(*pid as usize) {
            Some(t) => t.take().is_some(),
            None => self.far.remove(pid).is_some(),
        };
        if gone {
            self.len -= 1;
        }
    }
    fn len(&self) -> usize {
        self.len
    }
}

/// The streaming analysis: `push` every event in global time order, then
/// `finish`.
pub struct Analyzer {
    kinds: Vec<Kind>,
    far_kinds: Vec<(u32, Kind)>,
    cpus: Vec<Cpu>,
    tasks: Tasks,
    machine_min_khz: u32,
    machine_max_khz: u32,

    events: u64,
    lost: u64,
    migrations: u64,
    wakeups: u64,
    first_ts: Option<u64>,
    last_ts: u64,

    n_idle: u32,
    /// CPUs running a task with another waiting behind it.
    n_busy_wait: u32,
    n_nonempty: u32,
    total_waiting: u64,
    wc_ns: u64,

    iv_idx: u64,
    iv_end: u64,
    iv_used: u64,
    iv_max_runnable: u64,
    iv_max_over: u64,
    underload: u64,
    /// Each closed interval's underload, in order, when asked for
    /// ([`underload_series`]).
    interval_underload: Option<Vec<u64>>,
    overload: u64,
    intervals: u64,

    latency: Histogram<u64>,
    band_ns: Vec<u64>,
    busy_known_freq_ns: u64,
    freq_seen: bool,
    freq_min_seen: u32,
    freq_max_seen: u32,

    inv_count: u64,
    inv_ns: u64,

    /// Tasks switched in at `unwoken_ts` while not runnable: a WAKEUP of
    /// one of them at that time is its late-read wake-up (module docs, Order).
    unwoken: Vec<u32>,
    unwoken_ts: u64,

    /// CPUs whose task counts changed since `take_touched`, when asked for.
    touched: Option<Vec<u32>>,
}

impl Analyzer {
    /// An analyzer for traces of `header`'s machine, reading event ids
    /// through the header's own event table.
    pub fn new(header: &Header) -> Analyzer {
        let table = &header.events;
        let mut kinds = Vec::new();
        let mut far_kinds = Vec::new();
        for (b, k) in [
            (ids::CTX_SWITCH, Kind::Switch),
            (ids::WAKEUP, Kind::Wakeup),
            (ids::WAKEUP_NEW, Kind::Wakeup),
            (ids::MIGRATE, Kind::Migrate),
            (ids::TICK, Kind::Tick),
            (ids::FREQ_CHANGE, Kind::Freq),
            (ids::EXIT, Kind::Exit),
        ] {
            let Some(id) = table.builtin_to_file(b) else { continue };
            if id < 4096 {
                if kinds.len() <= id as usize {
                    kinds.resize(id as usize + 1, Kind::Other);
                }
                kinds[id as usize] = k;
            } else {
                far_kinds.push((id, k));
            }
        }
        let n = header.machine.nr_cpus().max(1) as usize;
        let m = &header.machine;
        let (machine_min_khz, machine_max_khz) =
            if m.has_freq_range() { (m.freq_min_khz, m.freq_max_khz) } else { (0, 0) };
        Analyzer {
            kinds,
            far_kinds,
            cpus: vec![Cpu { prune_at: 64, used_interval: u64::MAX, ..Cpu::default() }; n],
            tasks: Tasks::default(),
            machine_min_khz,
            machine_max_khz,
            events: 0,
            lost: 0,
            migrations: 0,
            wakeups: 0,
            first_ts: None,
            last_ts: 0,
            n_idle: n as u32,
            n_busy_wait: 0,
            n_nonempty: 0,
            total_waiting: 0,
            wc_ns: 0,
            iv_idx: 0,
            iv_end: 0,
            iv_used: 0,
            iv_max_runnable: 0,
            iv_max_over: 0,
            underload: 0,
            interval_underload: None,
            overload: 0,
            intervals: 0,
            latency: Histogram::new_with_bounds(1, LATENCY_MAX_NS, 3).expect("valid histogram bounds"),
            band_ns: vec![0; MAX_BANDS],
            busy_known_freq_ns: 0,
            freq_seen: false,
            freq_min_seen: u32::MAX,
            freq_max_seen: 0,
            inv_count: 0,
            inv_ns: 0,
            unwoken: Vec::new(),
            unwoken_ts: 0,
            touched: None,
        }
    }

    /// Keep each interval's underload, for
    /// [`Analyzer::finish_with_intervals`]: one number per 4 ms of trace,
    /// the only memory of the analysis that grows with the trace's length,
    /// so only when asked.
    pub fn record_intervals(&mut self) {
        self.interval_underload = Some(Vec::new());
    }

    /// Add events the recorder lost (reported in `lost_events`).
    pub fn add_lost(&mut self, n: u64) {
        self.lost += n;
    }

    /// Tasks the analyzer holds state for: the runnable ones and a few whose
    /// inversion candidate is not settled yet. Bounds its memory.
    pub fn tracked_tasks(&self) -> usize {
        self.tasks.len()
    }

    // What other analyses (chains.rs) read of the state this one follows,
    // so that the frequency and the running tasks are tracked in one place.

    /// CPUs of the machine.
    pub(crate) fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// The frequency of CPU `c` in kHz, 0 while unknown.
    pub(crate) fn cpu_freq(&self, c: usize) -> u32 {
        self.cpus[c].freq
    }

    /// The task CPU `c` runs, 0 for idle.
    pub(crate) fn cpu_curr(&self, c: usize) -> u32 {
        self.cpus[c].curr
    }

    /// The CPU `pid` runs on, if it runs.
    pub(crate) fn running_on(&self, pid: u32) -> Option<u32> {
        match self.tasks.get(&pid)?.state {
            TaskState::Running(c) => Some(c),
            _ => None,
        }
    }

    /// `pid` is runnable (running or waiting): a wake-up of it starts nothing.
    pub(crate) fn is_runnable(&self, pid: u32) -> bool {
        self.tasks.get(&pid).is_some_and(|t| t.state != TaskState::Off)
    }

    /// Record the CPUs whose running task or queue changes, for
    /// [`Analyzer::take_touched`].
    pub(crate) fn track_touched(&mut self) {
        self.touched = Some(Vec::new());
    }

    /// The CPUs touched since the last call (see `track_touched`), handed
    /// over in `buf`, which comes back emptied: one buffer for a whole pass.
    pub(crate) fn take_touched(&mut self, buf: &mut Vec<u32>) {
        buf.clear();
        if let Some(t) = &mut self.touched {
            std::mem::swap(t, buf);
        }
    }

    #[inline]
    fn kind(&self, id: u32) -> Kind {
        match self.kinds.get(id as usize) {
            Some(&k) => k,
            None => self.far_kinds.iter().find(|(i, _)| *i == id).map(|&(_, k)| k).unwrap_or(Kind::Other),
        }
    }

    fn busy_cpus(&self) -> u64 {
        (self.cpus.len() as u32 - self.n_idle) as u64
    }

    fn runnable(&self) -> u64 {
        self.total_waiting + self.busy_cpus()
    }

    /// Runnable tasks beyond one per CPU (see `Stats::overload_per_s`):
    /// sum over CPUs of max(0, tasks on it - 1) = runnable - non-empty CPUs.
    fn overload_now(&self) -> u64 {
        self.runnable() - self.n_nonempty as u64
    }

    /// Some CPU is idle while a busy CPU has a task waiting.
    fn violation(&self) -> bool {
        self.n_idle > 0 && self.n_busy_wait > 0
    }

    /// Change a CPU and keep the machine-wide counts in step.
    #[inline]
    fn with_cpu(&mut self, c: usize, f: impl FnOnce(&mut Cpu)) {
        if let Some(t) = &mut self.touched {
            t.push(c as u32);
        }
        let before = contrib(&self.cpus[c]);
        f(&mut self.cpus[c]);
        let after = contrib(&self.cpus[c]);
        self.n_idle = self.n_idle + after.idle - before.idle;
        self.n_busy_wait = self.n_busy_wait + after.busy_wait - before.busy_wait;
        self.n_nonempty = self.n_nonempty + after.nonempty - before.nonempty;
    }

    fn add_waiting(&mut self, c: usize) {
        self.total_waiting += 1;
        self.with_cpu(c, |cpu| cpu.waiting += 1);
    }

    fn remove_waiting(&mut self, c: usize) {
        if self.cpus[c].waiting > 0 {
            self.total_waiting -= 1;
            self.with_cpu(c, |cpu| cpu.waiting -= 1);
        }
    }

    /// Account the segment of CPU `c` that ends at `t`.
    #[inline]
    fn flush(&mut self, c: usize, t: u64) {
        let cpu = &mut self.cpus[c];
        let dt = t.saturating_sub(cpu.seg_start);
        if cpu.curr != 0 && dt > 0 {
            cpu.busy_ns += dt;
            if cpu.freq != 0 {
                self.band_ns[band_of(cpu.freq)] += dt;
                self.busy_known_freq_ns += dt;
                if let Some(r) = &mut cpu.inv {
                    if cpu.freq < r.fw {
                        r.below_ns += dt;
                    }
                }
            }
        }
        cpu.seg_start = cpu.seg_start.max(t);
    }

    /// Make `pid` the running task of CPU `c` (flushed already), counting
    /// the CPUs used in the current interval: a CPU is counted when it starts
    /// running a task unless it already ran one in this interval; every CPU
    /// busy when an interval opens is counted then.
    fn set_curr(&mut self, c: usize, pid: u32) {
        let old = self.cpus[c].curr;
        let iv = self.iv_idx;
        if old == 0 && pid != 0 && self.cpus[c].used_interval != iv {
            self.iv_used += 1;
        }
        self.with_cpu(c, |cpu| {
            cpu.curr = pid;
            if old != 0 || pid != 0 {
                cpu.used_interval = iv;
            }
        });
    }

    /// Move time forward to `t`: work-conservation time and intervals.
    fn advance(&mut self, t: u64) {
        if t <= self.last_ts {
            return;
        }
        self.end_instant();
        if self.violation() {
            self.wc_ns += t - self.last_ts;
        }
        if t >= self.iv_end {
            self.close_interval();
            let start = self.iv_end;
            // Whole intervals before the one holding t have no events: the
            // state is constant over them.
            let empty = (t - start) / INTERVAL_NS;
            if empty > 0 {
                let under = self.busy_cpus().saturating_sub(self.runnable());
                self.underload += empty * under;
                if let Some(v) = &mut self.interval_underload {
                    v.extend(std::iter::repeat_n(under, empty as usize));
                }
                self.overload += empty * self.overload_now();
                self.intervals += empty;
            }
            self.iv_idx += empty + 1;
            self.iv_end = start + (empty + 1) * INTERVAL_NS;
            self.open_interval();
        }
        self.last_ts = t;
    }

    /// Every event of the instant `last_ts` is in (module docs, Instants).
    fn end_instant(&mut self) {
        self.iv_max_over = self.iv_max_over.max(self.overload_now());
    }

    fn open_interval(&mut self) {
        self.iv_used = self.busy_cpus();
        self.iv_max_runnable = self.runnable();
        self.iv_max_over = self.overload_now();
    }

    fn close_interval(&mut self) {
        let under = self.iv_used.saturating_sub(self.iv_max_runnable);
        self.underload += under;
        if let Some(v) = &mut self.interval_underload {
            v.push(under);
        }
        self.overload += self.iv_max_over;
        self.intervals += 1;
    }

    /// Feed one event. Events must come in global time order; one that is
    /// earlier than the last is taken to happen at the last's time. An event
    /// of a CPU the machine does not have is counted and otherwise ignored.
    pub fn push(&mut self, e: &CpuEvent) {
        self.events += 1;
        let t = match self.first_ts {
            None => {
                self.first_ts = Some(e.ev.ts);
                self.last_ts = e.ev.ts;
                self.iv_end = e.ev.ts.saturating_add(INTERVAL_NS);
                for cpu in &mut self.cpus {
                    cpu.seg_start = e.ev.ts;
                }
                self.open_interval();
                e.ev.ts
            }
            Some(_) => {
                let t = e.ev.ts.max(self.last_ts);
                self.advance(t);
                t
            }
        };
        let c = e.cpu as usize;
        if c >= self.cpus.len() {
            return;
        }
        match self.kind(e.ev.id) {
            Kind::Switch => self.on_switch(c, e.ev.pid, e.ev.a(), e.ev.b(), t),
            Kind::Wakeup => self.on_wakeup(c, e.ev.pid, e.ev.a(), t),
            Kind::Migrate => self.on_migrate(e.ev.pid, e.ev.b()),
            Kind::Tick | Kind::Freq => {
                if e.ev.a() != 0 {
                    self.set_freq(c, e.ev.a(), t);
                }
            }
            Kind::Exit => self.on_exit(e.ev.pid),
            Kind::Other => return,
        }
        self.iv_max_runnable = self.iv_max_runnable.max(self.runnable());
    }

    fn set_freq(&mut self, c: usize, khz: u32, t: u64) {
        self.freq_seen = true;
        self.freq_min_seen = self.freq_min_seen.min(khz);
        self.freq_max_seen = self.freq_max_seen.max(khz);
        if self.cpus[c].freq != khz {
            self.flush(c, t);
            self.cpus[c].freq = khz;
        }
    }

    fn on_switch(&mut self, c: usize, prev: u32, next: u32, state: u32, t: u64) {
        if !self.cpus[c].switched {
            self.cpus[c].switched = true;
            // Before its first switch the CPU ran `prev` since the start.
            if prev != 0 && self.cpus[c].curr == 0 {
                self.cpus[c].busy_ns += t - self.first_ts.unwrap_or(t);
            }
        }
        self.flush(c, t);

        // A switch-out read after the task's switch-in elsewhere is stale.
        let stale = prev != 0
            && self.tasks.get(&prev).is_some_and(|tk| matches!(tk.state, TaskState::Running(d) if d as usize != c));
        if prev != 0 && !stale {
            self.end_inv_run(c, prev);
            // One map look-up in the common case.
            let old = self.tasks.get_mut(&prev).map(|tk| {
                let old = tk.state;
                if state == prev_state::RUNNABLE {
                    tk.state = TaskState::Waiting(c as u32);
                } else {
                    tk.state = TaskState::Off;
                }
                old
            });
            if let Some(TaskState::Waiting(x)) = old {
                self.remove_waiting(x as usize);
            }
            if state == prev_state::RUNNABLE {
                if old.is_none() {
                    self.tasks.insert(prev, Task { state: TaskState::Waiting(c as u32), ..Task::default() });
                }
                self.add_waiting(c);
            } else {
                self.release(prev);
            }
        }

        if next != 0 {
            let freq = self.cpus[c].freq;
            let tk = self.tasks.get_or_default(next);
            let old = tk.state;
            tk.state = TaskState::Running(c as u32);
            let woken = tk.wake_ts.take();
            let mut watch = None;
            if let Some(cand) = &mut tk.cand {
                if !cand.started {
                    cand.started = true;
                    if cand.waker_cpu as usize != c && freq != 0 && freq < cand.fw {
                        watch = Some(InvRun { pid: next, fw: cand.fw, below_ns: 0 });
                    } else {
                        tk.cand = None;
                    }
                }
            }
            if old == TaskState::Off {
                if self.unwoken_ts != t {
                    self.unwoken.clear();
                    self.unwoken_ts = t;
                }
                self.unwoken.push(next);
            }
            if let Some(w) = woken {
                self.latency.saturating_record(t - w.min(t));
            }
            if watch.is_some() {
                self.cpus[c].inv = watch;
            }
            match old {
                TaskState::Waiting(x) => self.remove_waiting(x as usize),
                TaskState::Running(d) if d as usize != c && self.cpus.get(d as usize).is_some_and(|k| k.curr == next) => {
                    // Its switch-out on `d` was lost: `d` is taken to be idle.
                    let d = d as usize;
                    self.flush(d, t);
                    self.cpus[d].inv = None;
                    self.set_curr(d, 0);
                }
                _ => {}
            }
        }
        self.set_curr(c, next);
        if next == 0 {
            self.resolve_idle(c, t);
        }
    }

    /// `pid` leaves CPU `c`: close its first run if it is being watched.
    fn end_inv_run(&mut self, c: usize, pid: u32) {
        let Some(r) = self.cpus[c].inv else { return };
        if r.pid != pid {
            return;
        }
        self.cpus[c].inv = None;
        if let Some(tk) = self.tasks.get_mut(&pid) {
            if let Some(cand) = &mut tk.cand {
                cand.run_done = true;
                cand.below_ns = r.below_ns;
                if cand.idle_ok {
                    self.inv_count += 1;
                    self.inv_ns += r.below_ns;
                    tk.cand = None;
                }
            }
        }
    }

    /// CPU `c` has just gone idle: every task it woke within the window
    /// meets the idle condition; older ones never will.
    fn resolve_idle(&mut self, c: usize, t: u64) {
        if self.cpus[c].wakes.is_empty() {
            return;
        }
        let mut wakes = std::mem::take(&mut self.cpus[c].wakes);
        for &(pid, wt) in &wakes {
            let Some(tk) = self.tasks.get_mut(&pid) else { continue };
            let Some(cand) = &mut tk.cand else { continue };
            if cand.wake_ts != wt || cand.waker_cpu as usize != c {
                continue;
            }
            if wt.saturating_add(INVERSION_IDLE_WINDOW_NS) >= t {
                cand.idle_ok = true;
                if cand.run_done {
                    self.inv_count += 1;
                    self.inv_ns += cand.below_ns;
                }
            }
            // Settled either way (the first idle after the wakeup decides).
            if cand.idle_ok && cand.run_done || wt.saturating_add(INVERSION_IDLE_WINDOW_NS) < t {
                tk.cand = None;
                if tk.state == TaskState::Off {
                    self.tasks.remove(&pid);
                }
            }
        }
        wakes.clear();
        self.cpus[c].wakes = wakes;
    }

    fn on_wakeup(&mut self, c: usize, pid: u32, target: u32, t: u64) {
        if pid == 0 {
            return;
        }
        let target = if (target as usize) < self.cpus.len() { target as usize } else { c };
        if self.unwoken_ts == t {
            if let Some(i) = self.unwoken.iter().position(|&p| p == pid) {
                self.unwoken.swap_remove(i);
                self.wakeups += 1;
                self.latency.saturating_record(0);
                return;
            }
        }
        let tk = self.tasks.get_or_default(pid);
        if tk.state != TaskState::Off {
            return; // already runnable: nothing starts
        }
        tk.state = TaskState::Waiting(target as u32);
        tk.wake_ts = Some(t);
        tk.cand = None;
        let waker = &self.cpus[c];
        if waker.curr != 0 && waker.freq != 0 {
            tk.cand = Some(Cand {
                waker_cpu: c as u32,
                fw: waker.freq,
                wake_ts: t,
                started: false,
                run_done: false,
                idle_ok: false,
                below_ns: 0,
            });
            let cpu = &mut self.cpus[c];
            cpu.wakes.push((pid, t));
            if cpu.wakes.len() >= cpu.prune_at {
                // Candidates whose window has passed can no longer qualify.
                let tasks = &mut self.tasks;
                cpu.wakes.retain(|&(p, wt)| {
                    let live = wt.saturating_add(INVERSION_IDLE_WINDOW_NS) >= t;
                    if !live {
                        if let Some(tk) = tasks.get_mut(&p) {
                            if tk.cand.is_some_and(|k| k.wake_ts == wt) {
                                tk.cand = None;
                                if tk.state == TaskState::Off {
                                    tasks.remove(&p);
                                }
                            }
                        }
                    }
                    live
                });
                cpu.prune_at = (cpu.wakes.len() * 2).max(64);
            }
        }
        self.wakeups += 1;
        self.add_waiting(target);
    }

    fn on_migrate(&mut self, pid: u32, to: u32) {
        self.migrations += 1;
        if (to as usize) >= self.cpus.len() {
            return;
        }
        let Some(tk) = self.tasks.get_mut(&pid) else { return };
        if let TaskState::Waiting(x) = tk.state {
            if x != to {
                tk.state = TaskState::Waiting(to);
                self.remove_waiting(x as usize);
                self.add_waiting(to as usize);
            }
        }
    }

    fn on_exit(&mut self, pid: u32) {
        let Some(tk) = self.tasks.get(&pid) else { return };
        match tk.state {
            TaskState::Running(_) => {} // its last switch-out removes it
            TaskState::Waiting(x) => {
                self.remove_waiting(x as usize);
                self.release(pid);
            }
            TaskState::Off => {}
        }
    }

    /// A task has stopped being runnable: forget it, unless an inversion
    /// candidate of its still waits for the waker's CPU to go idle (it is
    /// forgotten when that is settled). So the map holds only runnable
    /// tasks and a few recent candidates, whatever the number of pids.
    fn release(&mut self, pid: u32) {
        let Some(tk) = self.tasks.get_mut(&pid) else { return };
        if tk.awaits_idle() {
            tk.state = TaskState::Off;
            tk.wake_ts = None;
        } else {
            self.tasks.remove(&pid);
        }
    }

    /// Close the analysis at the last event's time.
    pub fn finish(self) -> Stats {
        self.finish_with_intervals().0
    }

    /// [`Analyzer::finish`], with each interval's underload when
    /// [`Analyzer::record_intervals`] asked for them (empty otherwise).
    pub fn finish_with_intervals(mut self) -> (Stats, Vec<u64>) {
        let ncpu = self.cpus.len();
        let duration_ns = self.first_ts.map(|f| self.last_ts - f).unwrap_or(0);
        if self.first_ts.is_some() {
            self.end_instant();
            let t = self.last_ts;
            for c in 0..ncpu {
                self.flush(c, t);
                if let Some(r) = self.cpus[c].inv.take() {
                    if let Some(cand) = self.tasks.get(&r.pid).and_then(|tk| tk.cand) {
                        if cand.idle_ok {
                            self.inv_count += 1;
                            self.inv_ns += r.below_ns;
                        }
                    }
                }
            }
            self.close_interval();
        }
        let secs = duration_ns as f64 / 1e9;
        let per_s = |x: u64| if duration_ns > 0 { x as f64 / secs } else { 0.0 };
        let wakeup_latency_ns = (!self.latency.is_empty()).then(|| Percentiles {
            p50: self.latency.value_at_quantile(0.5),
            p99: self.latency.value_at_quantile(0.99),
            p999: self.latency.value_at_quantile(0.999),
        });
        let freq_residency = (self.busy_known_freq_ns > 0).then(|| {
            let mut lo = band_of(self.freq_min_seen);
            let mut hi = band_of(self.freq_max_seen);
            if self.machine_max_khz > 0 {
                if self.machine_min_khz > 0 {
                    lo = lo.min(band_of(self.machine_min_khz));
                }
                hi = hi.max(band_of(self.machine_max_khz));
            }
            (lo..=hi)
                .map(|b| Band {
                    lo_mhz: b as u32 * (BAND_KHZ / 1000),
                    hi_mhz: (b as u32 + 1) * (BAND_KHZ / 1000),
                    fraction: self.band_ns[b] as f64 / self.busy_known_freq_ns as f64,
                })
                .collect()
        });
        let intervals = self.interval_underload.take().unwrap_or_default();
        let stats = Stats {
            events: self.events,
            cpus: ncpu as u32,
            duration_ns,
            lost_events: self.lost,
            underload_per_s: per_s(self.underload),
            overload_per_s: per_s(self.overload),
            migrations: self.migrations,
            cpus_used: self.cpus.iter().filter(|c| c.busy_ns > 0).count() as u32,
            wakeup_latency_ns,
            work_conservation_violation_ns: self.wc_ns,
            inversions: self.freq_seen.then_some(Inversions { count: self.inv_count, ns: self.inv_ns }),
            freq_residency,
            detail: Detail {
                busy_ns: self.cpus.iter().map(|c| c.busy_ns).collect(),
                busy_known_freq_ns: self.busy_known_freq_ns,
                wakeups: self.wakeups,
                intervals: self.intervals,
                underload: self.underload,
                overload: self.overload,
            },
        };
        (stats, intervals)
    }
}

/// Each CPU's run-queue size (its running task and those waiting on it) over
/// time, derived from switches, wake-ups and migrations as the analysis
/// follows them: one (cpu, ts, nr_running) for every change, for traces
/// without RQ_SIZE events (perf and trace-cmd recordings). Tasks that were
/// waiting before the trace began are not known until they run.
pub fn runqueue_series(trace: &Trace) -> Result<Vec<(u32, u64, u32)>> {
    let mut a = Analyzer::new(&trace.header);
    a.track_touched();
    let mut last = vec![0u32; a.cpus.len()];
    let mut out = Vec::new();
    let mut touched = Vec::new();
    for e in trace.events(None, Window::ALL) {
        let e = e?;
        a.push(&e);
        a.take_touched(&mut touched);
        for &c in &touched {
            let cpu = &a.cpus[c as usize];
            let nr = cpu.waiting + (cpu.curr != 0) as u32;
            if nr != last[c as usize] {
                last[c as usize] = nr;
                out.push((c, e.ev.ts, nr));
            }
        }
    }
    Ok(out)
}

/// The underload of each [`INTERVAL_NS`] interval from the trace's first
/// event, as the analysis counts it (the figure of Nest, section 5.2, Figure
/// 3): its sum is [`Detail::underload`], so the series and
/// [`Stats::underload_per_s`] never disagree.
pub fn underload_series(trace: &Trace) -> Result<Vec<u64>> {
    let mut a = Analyzer::new(&trace.header);
    a.record_intervals();
    for e in trace.events(None, Window::ALL) {
        a.push(&e?);
    }
    Ok(a.finish_with_intervals().1)
}

/// Analyse a whole trace: every event in global time order, and the lost
/// counts its summary reports.
pub fn analyze(trace: &Trace) -> Result<Stats> {
    let mut a = Analyzer::new(&trace.header);
    a.add_lost(trace.lost.iter().sum());
    for e in trace.events(None, Window::ALL) {
        a.push(&e?);
    }
    Ok(a.finish())
}
