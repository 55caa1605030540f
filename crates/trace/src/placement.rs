// SPDX-License-Identifier: GPL-2.0-only
//! Placement decisions (`warmcore trace stats --placement`): where wake-ups
//! and forks put tasks, read the same way from a kernel's recording and from
//! a simulated run, so that the two can be compared on what does not depend
//! on timing (docs/agreement.md). The definitions:
//!
//! * A **wake-up** is a WAKEUP that makes a sleeping task runnable, as in
//!   [`crate::stats`]: a wake-up of a task still runnable (the kernel wakes a
//!   task that has not switched out yet without choosing a CPU) places
//!   nothing. Its **target** is the CPU it chose (the event's `a`).
//! * **On the previous CPU**: the target is the CPU the task last ran on
//!   (its last switch-in). Wake-ups of a task not seen running yet are left
//!   out of this share.
//! * **On the waker's CPU**: the event names its waker (`b` != 0) and the
//!   target is the CPU the event was recorded on. The kernel records a
//!   wake-up on the waker's CPU, except one it queues to the target CPU
//!   (`ttwu_queue_wakelist`), which it does only for another CPU: the
//!   recorder writes that one on the target, with no waker
//!   (crates/record), and it counts as away from the waker. A wake-up by an
//!   interrupt (a timer, I/O) has no waker either and counts the same way.
//! * **Ran on the target**: the task's first run after the wake-up was on
//!   the target. A sched_ext scheduler may choose one CPU in `select_cpu`
//!   and dispatch the task to another; the fair class may pull it before it
//!   runs.
//! * A **fork** is a WAKEUP_NEW that names a parent; **on the parent's
//!   CPU**: its target is the CPU it was recorded on (the kernel wakes a new
//!   task from its parent).
//! * **Migrations per wake-up**: MIGRATE events over wake-ups. A wake-up on
//!   another CPU than the previous one moves the task (one MIGRATE); so do
//!   load balancing and a dispatch from another CPU's queue. A fork moves
//!   nothing (the kernel sets a new task's CPU without the event, and so
//!   does the simulator).
//! * **Run share**: per CPU, the part of the run time of the trace's own
//!   tasks (those named by a WAKEUP, WAKEUP_NEW, FORK, EXEC or EXIT event:
//!   in a recording, the ones the recorder followed) spent on it.
//!   `cpus_touched` counts the CPUs with any; `cpus_used` those with at
//!   least [`USED_SHARE`] of it, so that one stray placement does not count
//!   as a CPU the workload uses.
//!
//! Unlike [`crate::stats`], this keeps one entry per task seen (its last
//! CPU), so its memory grows with the pids of the trace: it runs only when
//! asked for.

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use crate::error::Result;
use crate::event::{ids, CpuEvent};
use crate::meta::Header;
use crate::reader::{Trace, Window};
use crate::stats::{Analyzer, Stats};

/// The least share of the run time on a CPU for `cpus_used`: 5 %, as the
/// VM's chain workload counts the CPUs it uses (crates/vm, `workload.rs`).
pub const USED_SHARE: f64 = 0.05;

/// The placement figures (module documentation); a share is null when
/// nothing was counted for it.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Placement {
    /// Wake-ups that made a sleeping task runnable.
    pub wakeups: u64,
    /// Share of the wake-ups, of tasks seen running before, placed on the
    /// CPU the task last ran on.
    pub on_prev: Option<f64>,
    /// Share of the wake-ups placed on the waker's CPU.
    pub on_waker: Option<f64>,
    /// Wake-ups that name no waker (queued to another CPU, or interrupts).
    pub no_waker: u64,
    /// Share of the wake-ups whose task first ran on the target, of those
    /// whose task ran before the trace ended.
    pub ran_on_target: Option<f64>,
    /// Forks (WAKEUP_NEW naming a parent).
    pub forks: u64,
    /// Share of the forks placed on the parent's CPU.
    pub forks_on_parent: Option<f64>,
    /// MIGRATE events.
    pub migrations: u64,
    /// `migrations` over `wakeups`.
    pub migrations_per_wakeup: Option<f64>,
    /// Per CPU, its share of the run time of the trace's tasks.
    pub run_share: Vec<f64>,
    /// CPUs that ran one of the trace's tasks.
    pub cpus_touched: u32,
    /// CPUs with at least [`USED_SHARE`] of their run time.
    pub cpus_used: u32,
}

/// The event ids a file gives the events read here.
struct Ids {
    wakeup: Option<u32>,
    wakeup_new: Option<u32>,
    switch: Option<u32>,
    migrate: Option<u32>,
    named: [Option<u32>; 3],
}

/// The streaming computation: `push` every event in global time order,
/// then `finish`. It holds the [`Analyzer`] of `trace stats`, which says
/// whether a woken task was runnable already, and gives its figures too.
pub struct Placements {
    a: Analyzer,
    ids: Ids,
    last_cpu: FxHashMap<u32, u32>,
    /// The target of each wake-up whose task has not run since.
    pending: FxHashMap<u32, u32>,
    ours: FxHashSet<u32>,
    /// Per CPU: the task running and since when; None before its first switch.
    curr: Vec<Option<(u32, u64)>>,
    run_ns: Vec<u64>,
    first_ts: Option<u64>,
    now: u64,
    wakeups: u64,
    prev_known: u64,
    on_prev: u64,
    on_waker: u64,
    no_waker: u64,
    ran: u64,
    ran_on_target: u64,
    forks: u64,
    forks_on_parent: u64,
    migrations: u64,
}

impl Placements {
    pub fn new(header: &Header) -> Placements {
        let a = Analyzer::new(header);
        let t = &header.events;
        let n = a.nr_cpus();
        Placements {
            a,
            ids: Ids {
                wakeup: t.builtin_to_file(ids::WAKEUP),
                wakeup_new: t.builtin_to_file(ids::WAKEUP_NEW),
                switch: t.builtin_to_file(ids::CTX_SWITCH),
                migrate: t.builtin_to_file(ids::MIGRATE),
                named: [ids::FORK, ids::EXEC, ids::EXIT].map(|i| t.builtin_to_file(i)),
            },
            last_cpu: FxHashMap::default(),
            pending: FxHashMap::default(),
            ours: FxHashSet::default(),
            curr: vec![None; n],
            run_ns: vec![0; n],
            first_ts: None,
            now: 0,
            wakeups: 0,
            prev_known: 0,
            on_prev: 0,
            on_waker: 0,
            no_waker: 0,
            ran: 0,
            ran_on_target: 0,
            forks: 0,
            forks_on_parent: 0,
            migrations: 0,
        }
    }

    /// Add events the recorder lost (in the statistics' `lost_events`).
    pub fn add_lost(&mut self, n: u64) {
        self.a.add_lost(n);
    }

    pub fn push(&mut self, e: &CpuEvent) {
        // The analyzer's clock: an event older than the last happens at its time.
        let t = self.first_ts.map_or(e.ev.ts, |_| self.now.max(e.ev.ts));
        self.first_ts.get_or_insert(t);
        self.now = t;
        let c = e.cpu as usize;
        let id = Some(e.ev.id);
        let (pid, a, b) = (e.ev.pid, e.ev.a(), e.ev.b());
        if c < self.curr.len() && pid != 0 {
            if id == self.ids.wakeup {
                self.ours.insert(pid);
                // Read before the analyzer sees it: was the task asleep?
                if !self.a.is_runnable(pid) {
                    self.wake(c, pid, a, b);
                }
            } else if id == self.ids.wakeup_new {
                self.ours.insert(pid);
                // A task with no parent (the simulator's first tasks) was not forked.
                if b != 0 {
                    self.forks += 1;
                    self.forks_on_parent += (a as usize == c) as u64;
                }
            } else if id == self.ids.switch {
                self.switch(c, pid, a, t);
            } else if id == self.ids.migrate {
                self.migrations += 1;
            } else if self.ids.named.contains(&id) {
                self.ours.insert(pid);
            }
        } else if c < self.curr.len() && id == self.ids.switch {
            self.switch(c, 0, a, t);
        }
        self.a.push(e);
    }

    fn wake(&mut self, c: usize, pid: u32, target: u32, waker: u32) {
        self.wakeups += 1;
        if let Some(&p) = self.last_cpu.get(&pid) {
            self.prev_known += 1;
            self.on_prev += (p == target) as u64;
        }
        if waker == 0 {
            self.no_waker += 1;
        } else if target as usize == c {
            self.on_waker += 1;
        }
        self.pending.insert(pid, target);
    }

    fn switch(&mut self, c: usize, prev: u32, next: u32, t: u64) {
        // Before its first switch the CPU ran `prev` since the trace began.
        let (running, since) = self.curr[c].unwrap_or((prev, self.first_ts.unwrap_or(t)));
        if running != 0 && self.ours.contains(&running) {
            self.run_ns[c] += t.saturating_sub(since);
        }
        self.curr[c] = Some((next, t));
        if next != 0 {
            self.last_cpu.insert(next, c as u32);
            if let Some(target) = self.pending.remove(&next) {
                self.ran += 1;
                self.ran_on_target += (target as usize == c) as u64;
            }
        }
    }

    /// The placement figures and the statistics of the same events.
    pub fn finish(mut self) -> (Stats, Placement) {
        for c in 0..self.curr.len() {
            if let Some((p, since)) = self.curr[c] {
                if p != 0 && self.ours.contains(&p) {
                    self.run_ns[c] += self.now.saturating_sub(since);
                }
            }
        }
        let share = |part: u64, whole: u64| (whole > 0).then(|| part as f64 / whole as f64);
        let total: u64 = self.run_ns.iter().sum();
        let run_share: Vec<f64> = self.run_ns.iter().map(|&r| share(r, total).unwrap_or(0.0)).collect();
        let p = Placement {
            wakeups: self.wakeups,
            on_prev: share(self.on_prev, self.prev_known),
            on_waker: share(self.on_waker, self.wakeups),
            no_waker: self.no_waker,
            ran_on_target: share(self.ran_on_target, self.ran),
            forks: self.forks,
            forks_on_parent: share(self.forks_on_parent, self.forks),
            migrations: self.migrations,
            migrations_per_wakeup: share(self.migrations, self.wakeups),
            cpus_touched: run_share.iter().filter(|&&s| s > 0.0).count() as u32,
            cpus_used: run_share.iter().filter(|&&s| s >= USED_SHARE).count() as u32,
            run_share,
        };
        (self.a.finish(), p)
    }
}

/// The statistics and the placement figures of a whole trace, in one pass.
pub fn analyze(trace: &Trace) -> Result<(Stats, Placement)> {
    let mut p = Placements::new(&trace.header);
    p.add_lost(trace.lost.iter().sum());
    for e in trace.events(None, Window::ALL) {
        p.push(&e?);
    }
    Ok(p.finish())
}
