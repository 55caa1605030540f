// SPDX-License-Identifier: GPL-2.0-only
//! Wake-up chains (`warmcore trace chains`): who woke or forked each task,
//! on which CPU and at which frequency, and how long the woken task then ran
//! below that frequency: the fork/wait pattern behind frequency inversion
//! (Fewer Cores, More Hertz, section 2) link by link.
//!
//! A **link** is one wake-up that made a sleeping task runnable (WAKEUP), or
//! one fork (FORK and/or WAKEUP_NEW): the waker (pid, CPU, that CPU's
//! frequency at the wake-up) and the wakee (pid, the CPU it then ran on
//! first, that CPU's frequency then). The link lasts from the wake-up until
//! the wakee blocks or exits, or until its next link, or until the trace
//! ends; `run_ns` is the time the wakee ran in it, on any CPU, and
//! `below_ns` the part of it at a known frequency below the waker's.
//!
//! `below_ns` is counted for every link, whatever the waker does next;
//! `trace stats` counts an inversion only when the waker's CPU also goes
//! idle within 1 ms and only over the wakee's first run
//! ([`crate::stats::Stats::inversions`]), so its total is a part of this one.
//!
//! A link's **parent** is the waker's own latest link: the wake-up that made
//! the waker run when it woke this one. Following parents goes back in time
//! (who woke me, who woke them, ...), following children forward (whom I
//! woke, whom they woke, ...); a **chain** is a link with all its ancestors
//! and descendants. In a fork/wait pattern (a shell forks a child and waits,
//! the child exits and wakes the shell, which forks the next) that is one
//! line through the shell and its children.
//!
//! The frequencies and the running tasks are those [`crate::stats`] follows
//! (its module documentation defines them), read from its [`Analyzer`] as the
//! events go by. A wake-up of a task that is already runnable starts no
//! link, as it starts no latency there. Tasks running when the trace starts
//! have no link until they are woken.

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::error::{Result, TraceError};
use crate::event::{ids, prev_state, CpuEvent};
use crate::meta::Header;
use crate::reader::{Trace, Window};
use crate::stats::Analyzer;

/// One wake-up or fork (module documentation).
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Its index in the trace's links.
    pub id: u32,
    /// The wake-up's time, ns.
    pub ts: u64,
    /// A fork (FORK or WAKEUP_NEW) rather than a wake-up.
    pub fork: bool,
    /// The waking (or parent) task; 0 if none ran (an interrupt on an idle CPU).
    pub waker: u32,
    /// The CPU the wake-up happened on.
    pub waker_cpu: u32,
    /// That CPU's frequency at the wake-up, kHz; None while unknown.
    pub waker_khz: Option<u32>,
    /// The woken (or new) task.
    pub wakee: u32,
    /// The CPU the wake-up chose.
    pub target_cpu: u32,
    /// The CPU the wakee first ran on after the wake-up; None if it did not run.
    pub cpu: Option<u32>,
    /// When it started running.
    pub start: Option<u64>,
    /// The frequency of `cpu` when it started, kHz; None while unknown.
    pub khz: Option<u32>,
    /// When the link ended (module documentation).
    pub end: u64,
    /// Time the wakee ran during the link.
    pub run_ns: u64,
    /// Part of `run_ns` at a known frequency below `waker_khz`; None when
    /// the waker's frequency is unknown.
    pub below_ns: Option<u64>,
    /// The waker's own latest link, None if it has none.
    pub parent: Option<u32>,
}

/// What a CPU ran since `since`, at which frequency.
#[derive(Clone, Copy, Default)]
struct Seg {
    curr: u32,
    freq: u32,
    since: u64,
}

/// The event ids a file gives the events chains read.
struct Ids {
    wakeup: Option<u32>,
    wakeup_new: Option<u32>,
    fork: Option<u32>,
    switch: Option<u32>,
    exit: Option<u32>,
}

/// The streaming computation: `push` every event in global time order (as
/// to [`Analyzer::push`]), then `finish`.
pub struct Chains {
    a: Analyzer,
    ids: Ids,
    links: Vec<Link>,
    /// The latest link of each task, and whether it is still open.
    latest: FxHashMap<u32, (u32, bool)>,
    segs: Vec<Seg>,
    touched: Vec<u32>,
    now: Option<u64>,
    /// WAKEUP, WAKEUP_NEW and FORK events read, and CTX_SWITCH events.
    wakeups: u64,
    switches: u64,
}

impl Chains {
    pub fn new(header: &Header) -> Chains {
        let mut a = Analyzer::new(header);
        a.track_touched();
        let t = &header.events;
        let segs = vec![Seg::default(); a.nr_cpus()];
        Chains {
            a,
            ids: Ids {
                wakeup: t.builtin_to_file(ids::WAKEUP),
                wakeup_new: t.builtin_to_file(ids::WAKEUP_NEW),
                fork: t.builtin_to_file(ids::FORK),
                switch: t.builtin_to_file(ids::CTX_SWITCH),
                exit: t.builtin_to_file(ids::EXIT),
            },
            links: Vec::new(),
            latest: FxHashMap::default(),
            segs,
            touched: Vec::new(),
            now: None,
            wakeups: 0,
            switches: 0,
        }
    }

    pub fn push(&mut self, e: &CpuEvent) {
        // The analyzer's clock: an event older than the last happens at its time.
        let t = self.now.map_or(e.ev.ts, |n| n.max(e.ev.ts));
        if self.now.is_none() {
            for s in &mut self.segs {
                s.since = t;
            }
        }
        self.now = Some(t);
        let c = e.cpu as usize;
        if c >= self.segs.len() {
            self.a.push(e);
            return;
        }
        let id = Some(e.ev.id);
        let (pid, a, b) = (e.ev.pid, e.ev.a(), e.ev.b());
        // Wake-ups are read before the analyzer sees them: whether the task
        // was runnable, and the waker's frequency at that moment.
        if id == self.ids.fork && pid != 0 {
            self.wakeups += 1;
            self.wake(c, t, a, pid, None, true);
        } else if (id == self.ids.wakeup || id == self.ids.wakeup_new) && pid != 0 {
            self.wakeups += 1;
            let fork = id == self.ids.wakeup_new;
            let waker = if b != 0 { b } else { self.a.cpu_curr(c) };
            // A FORK already made this task's link: WAKEUP_NEW only places it.
            let forked = self
                .latest
                .get(&pid)
                .map(|&(l, _)| l as usize)
                .filter(|&l| fork && self.links[l].fork && self.links[l].cpu.is_none() && self.links[l].waker == waker);
            match forked {
                Some(l) => self.links[l].target_cpu = a,
                None if !self.a.is_runnable(pid) => self.wake(c, t, waker, pid, Some(a), fork),
                None => self.late_wake(c, t, waker, pid, a, fork),
            }
        }
        // A switch-out read after the task's switch-in elsewhere is stale.
        let ends = (id == self.ids.switch && pid != 0 && b != prev_state::RUNNABLE
            && self.a.running_on(pid).is_none_or(|d| d as usize == c))
            || (id == self.ids.exit && pid != 0);
        if id == self.ids.switch {
            self.switches += 1;
        }
        self.a.push(e);
        // Close the segments of the CPUs whose task or frequency changed.
        let mut touched = std::mem::take(&mut self.touched);
        self.a.take_touched(&mut touched);
        self.update(c, t);
        for &d in &touched {
            if d as usize != c {
                self.update(d as usize, t);
            }
        }
        self.touched = touched;
        if ends {
            self.close(pid, t);
        }
    }

    /// A new link from the task running on CPU `c` (`waker`) to `wakee`.
    fn wake(&mut self, c: usize, t: u64, waker: u32, wakee: u32, target: Option<u32>, fork: bool) {
        self.close(wakee, t);
        let freq = self.a.cpu_freq(c);
        let id = self.links.len() as u32;
        self.links.push(Link {
            id,
            ts: t,
            fork,
            waker,
            waker_cpu: c as u32,
            waker_khz: (freq != 0).then_some(freq),
            wakee,
            target_cpu: target.unwrap_or(c as u32),
            cpu: None,
            start: None,
            khz: None,
            end: t,
            run_ns: 0,
            below_ns: (freq != 0).then_some(0),
            parent: if waker != 0 { self.latest.get(&waker).map(|&(l, _)| l) } else { None },
        });
        self.latest.insert(wakee, (id, true));
    }

    /// A wake-up read after the switch-in it caused, at the same time on
    /// another CPU (ties given by CPU number, stats.rs, Order): the link
    /// starts where the task already runs.
    fn late_wake(&mut self, c: usize, t: u64, waker: u32, wakee: u32, target: u32, fork: bool) {
        let Some(d) = self.a.running_on(wakee).map(|d| d as usize) else { return };
        let s = self.segs[d];
        let started_now = self.latest.get(&wakee).is_some_and(|&(l, open)| open && self.links[l as usize].start == Some(t));
        if s.curr != wakee || s.since != t || started_now {
            return;
        }
        self.wake(c, t, waker, wakee, Some(target), fork);
        let l = self.links.last_mut().expect("just made");
        l.cpu = Some(d as u32);
        l.start = Some(t);
        l.khz = (s.freq != 0).then_some(s.freq);
    }

    /// The open link of `pid` ends at `t`, with the time it ran until then
    /// (EXIT comes before the task's last switch-out).
    fn close(&mut self, pid: u32, t: u64) {
        if !matches!(self.latest.get(&pid), Some((_, true))) {
            return;
        }
        if let Some(d) = self.a.running_on(pid).map(|d| d as usize).filter(|&d| self.segs[d].curr == pid) {
            self.account(d, t);
            self.segs[d].since = self.segs[d].since.max(t);
        }
        if let Some((l, open)) = self.latest.get_mut(&pid) {
            *open = false;
            self.links[*l as usize].end = t;
        }
    }

    /// Account CPU `c`'s segment up to `t` if its task or frequency changed,
    /// and start the link of a task it starts running.
    fn update(&mut self, c: usize, t: u64) {
        let (curr, freq) = (self.a.cpu_curr(c), self.a.cpu_freq(c));
        let s = self.segs[c];
        if s.curr == curr && s.freq == freq {
            return;
        }
        self.account(c, t);
        self.segs[c] = Seg { curr, freq, since: t };
        if curr != 0 && curr != s.curr {
            if let Some(&(l, true)) = self.latest.get(&curr) {
                let l = &mut self.links[l as usize];
                if l.start.is_none() {
                    l.cpu = Some(c as u32);
                    l.start = Some(t);
                    l.khz = (freq != 0).then_some(freq);
                }
            }
        }
    }

    /// Add CPU `c`'s segment up to `t` to the open link of the task it runs.
    fn account(&mut self, c: usize, t: u64) {
        let s = self.segs[c];
        let dt = t.saturating_sub(s.since);
        if s.curr == 0 || dt == 0 {
            return;
        }
        let Some(&(l, true)) = self.latest.get(&s.curr) else { return };
        let l = &mut self.links[l as usize];
        if l.start.is_none() {
            return;
        }
        l.run_ns += dt;
        if let (Some(below), Some(fw)) = (&mut l.below_ns, l.waker_khz) {
            if s.freq != 0 && s.freq < fw {
                *below += dt;
            }
        }
    }

    /// The links, the open ones ended at the last event's time.
    pub fn finish(mut self) -> Links {
        if let Some(t) = self.now {
            for c in 0..self.segs.len() {
                self.account(c, t);
            }
            for l in &mut self.links {
                if self.latest.get(&l.wakee) == Some(&(l.id, true)) {
                    l.end = t;
                }
            }
        }
        Links { links: self.links, wakeups: self.wakeups, switches: self.switches }
    }
}

/// The links of a trace, and what it had to make them from.
#[derive(Debug, Clone)]
pub struct Links {
    pub links: Vec<Link>,
    /// WAKEUP, WAKEUP_NEW and FORK events read.
    pub wakeups: u64,
    /// CTX_SWITCH events read: without them no wakee is seen running.
    pub switches: u64,
}

impl Links {
    /// The chain through the links `seeds`: them, their ancestors and
    /// descendants, in time order.
    pub fn chain(&self, seeds: &[u32]) -> Vec<u32> {
        let parents: Vec<Option<u32>> = self.links.iter().map(|l| l.parent).collect();
        chain(&parents, seeds)
    }

    /// The chains through a task: those of the links that woke it or that
    /// it made (a task running since the trace began has only the latter).
    pub fn chain_of_pid(&self, pid: u32) -> Vec<u32> {
        let seeds: Vec<u32> = self.links.iter().filter(|l| l.wakee == pid || l.waker == pid).map(|l| l.id).collect();
        self.chain(&seeds)
    }

    /// Whether any link has a known waker frequency.
    pub fn has_freq(&self) -> bool {
        self.links.iter().any(|l| l.waker_khz.is_some())
    }
}

/// The chain through `seeds` given each link's parent (`parents[i]` for link
/// i): the seeds, their ancestors and their descendants, sorted. Links are
/// numbered in time order, so sorted is in time order. Parents out of range
/// are ignored; seeds out of range are left out.
pub fn chain(parents: &[Option<u32>], seeds: &[u32]) -> Vec<u32> {
    let n = parents.len();
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (i, p) in parents.iter().enumerate() {
        if let Some(p) = p.filter(|&p| (p as usize) < n) {
            children[p as usize].push(i as u32);
        }
    }
    let mut seen = vec![false; n];
    let mut out = Vec::new();
    let mut todo: Vec<u32> = seeds.iter().copied().filter(|&s| (s as usize) < n).collect();
    // Forward: the seeds and everything they lead to.
    while let Some(i) = todo.pop() {
        if std::mem::replace(&mut seen[i as usize], true) {
            continue;
        }
        out.push(i);
        todo.extend(&children[i as usize]);
    }
    // Back: each seed's ancestors (a parent is always an earlier link, so
    // this ends even on a malformed input once it meets a seen link).
    for &s in seeds.iter().filter(|&&s| (s as usize) < n) {
        let mut p = parents[s as usize];
        while let Some(i) = p.filter(|&i| (i as usize) < n && !seen[i as usize]) {
            seen[i as usize] = true;
            out.push(i);
            p = parents[i as usize];
        }
    }
    out.sort_unstable();
    out
}

/// The links of a whole trace. A trace without any wake-up or fork event is
/// an error: nothing links its tasks.
pub fn links(trace: &Trace) -> Result<Links> {
    let mut ch = Chains::new(&trace.header);
    for e in trace.events(None, Window::ALL) {
        ch.push(&e?);
    }
    let l = ch.finish();
    if l.wakeups == 0 {
        return Err(TraceError::new(
            trace.path(),
            "no WAKEUP, WAKEUP_NEW or FORK events: nothing says who woke whom".to_string(),
        ));
    }
    Ok(l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::prev_state::{BLOCKED, DEAD, RUNNABLE};
    use crate::meta::Machine;

    const MS: u64 = 1_000_000;
    const GHZ: u32 = 1_000_000; // kHz

    use crate::event::build::{event as e, freq, switch};

    fn header(n: u32) -> Header {
        Header::other(Machine::flat("test", n), "test")
    }
    fn run(n: u32, evs: &[CpuEvent]) -> Links {
        let mut c = Chains::new(&header(n));
        for ev in evs {
            c.push(ev);
        }
        c.finish()
    }

    #[test]
    fn a_wakee_on_a_slower_cpu_runs_below_its_wakers_frequency() {
        // Task 10 runs on CPU0 at 3 GHz and wakes 20 onto CPU1 (1.2 GHz) at
        // 2 ms, then blocks. 20 runs from 3 ms; CPU1 speeds up to 2 GHz at
        // 5 ms (still below) and to 3 GHz at 6 ms (not below); 20 blocks at
        // 8 ms. Ran 5 ms, 3 of them below 3 GHz.
        let evs = [
            freq(0, 0, 3 * GHZ),
            freq(1, 0, 1_200_000),
            switch(0, 1 * MS, 0, 10, RUNNABLE),
            e(0, 2 * MS, 20, ids::WAKEUP, 1, 10),
            switch(0, 2 * MS, 10, 0, BLOCKED),
            switch(1, 3 * MS, 0, 20, RUNNABLE),
            freq(1, 5 * MS, 2 * GHZ),
            freq(1, 6 * MS, 3 * GHZ),
            switch(1, 8 * MS, 20, 0, BLOCKED),
            e(1, 10 * MS, 0, ids::TICK, 0, 0),
        ];
        let l = run(2, &evs).links;
        assert_eq!(l.len(), 1);
        let k = &l[0];
        assert_eq!((k.ts, k.fork, k.waker, k.waker_cpu, k.waker_khz), (2 * MS, false, 10, 0, Some(3 * GHZ)));
        assert_eq!((k.wakee, k.target_cpu, k.cpu, k.start, k.khz), (20, 1, Some(1), Some(3 * MS), Some(1_200_000)));
        assert_eq!((k.end, k.run_ns, k.below_ns, k.parent), (8 * MS, 5 * MS, Some(3 * MS), None));
    }

    #[test]
    fn a_wakee_at_the_same_frequency_is_never_below() {
        // Both CPUs at 2 GHz: 20 runs 4 ms, none of it below; it exits.
        let evs = [
            freq(0, 0, 2 * GHZ),
            freq(1, 0, 2 * GHZ),
            switch(0, 0, 0, 10, RUNNABLE),
            e(0, 1 * MS, 20, ids::WAKEUP, 1, 10),
            switch(1, 1 * MS, 0, 20, RUNNABLE),
            e(1, 5 * MS, 20, ids::EXIT, 0, 0),
            switch(1, 5 * MS, 20, 0, DEAD),
            switch(0, 9 * MS, 10, 0, BLOCKED),
        ];
        let l = run(2, &evs).links;
        assert_eq!(l.len(), 1);
        assert_eq!((l[0].cpu, l[0].khz, l[0].run_ns, l[0].below_ns, l[0].end), (Some(1), Some(2 * GHZ), 4 * MS, Some(0), 5 * MS));
    }

    #[test]
    fn forks_and_exit_wake_ups_make_one_chain_across_cpus() {
        // The fork/wait pattern: shell 1 on CPU0 (3 GHz) forks 2 onto CPU1
        // (1 GHz) and waits; 2 forks 3 onto CPU2 (1 GHz) and waits; 3 exits
        // and wakes 2; 2 exits and wakes 1. FORK then WAKEUP_NEW make one
        // link each. Task 9 on CPU3 wakes by itself, in another chain.
        let evs = [
            freq(0, 0, 3 * GHZ),
            freq(1, 0, GHZ),
            freq(2, 0, GHZ),
            switch(0, 0, 0, 1, RUNNABLE),
            e(0, 1 * MS, 2, ids::FORK, 1, 0),
            e(0, 1 * MS, 2, ids::WAKEUP_NEW, 1, 1),
            switch(0, 1 * MS, 1, 0, BLOCKED),
            switch(1, 2 * MS, 0, 2, RUNNABLE),
            e(1, 3 * MS, 3, ids::FORK, 2, 0),
            e(1, 3 * MS, 3, ids::WAKEUP_NEW, 2, 2),
            switch(1, 3 * MS, 2, 0, BLOCKED),
            switch(2, 3 * MS, 0, 3, RUNNABLE),
            e(2, 7 * MS, 2, ids::WAKEUP, 1, 3),
            e(2, 7 * MS, 3, ids::EXIT, 0, 0),
            switch(2, 7 * MS, 3, 0, DEAD),
            switch(1, 7 * MS, 0, 2, RUNNABLE),
            e(1, 8 * MS, 1, ids::WAKEUP, 0, 2),
            e(1, 8 * MS, 2, ids::EXIT, 0, 0),
            switch(1, 8 * MS, 2, 0, DEAD),
            switch(0, 8 * MS, 0, 1, RUNNABLE),
            e(3, 8 * MS, 9, ids::WAKEUP, 3, 0),
            switch(3, 9 * MS, 0, 9, RUNNABLE),
            switch(0, 10 * MS, 1, 0, BLOCKED),
        ];
        let ls = run(4, &evs);
        let l = &ls.links;
        let got: Vec<_> = l.iter().map(|k| (k.fork, k.waker, k.wakee, k.waker_cpu, k.cpu, k.parent)).collect();
        assert_eq!(
            got,
            vec![
                (true, 1, 2, 0, Some(1), None),
                (true, 2, 3, 1, Some(2), Some(0)),
                (false, 3, 2, 2, Some(1), Some(1)),
                (false, 2, 1, 1, Some(0), Some(2)),
                (false, 0, 9, 3, Some(3), None),
            ]
        );
        // 2 ran 1 ms on CPU1, below its parent's 3 GHz, before forking; 3
        // ran 4 ms on CPU2 at 1 GHz, as fast as its parent's CPU1: none below.
        assert_eq!(l[0].below_ns, Some(MS));
        assert_eq!((l[1].run_ns, l[1].below_ns), (4 * MS, Some(0)));
        // 1 runs until it blocks at 10 ms; 9 until the trace ends then.
        assert_eq!((l[3].end, l[3].run_ns, l[4].end, l[4].waker_khz), (10 * MS, 2 * MS, 10 * MS, None));
        assert_eq!(ls.chain_of_pid(3), vec![0, 1, 2, 3]);
        assert_eq!(ls.chain(&[2]), vec![0, 1, 2, 3]);
        assert_eq!(ls.chain_of_pid(9), vec![4]);
        assert_eq!(ls.chain_of_pid(77), Vec::<u32>::new());
        let cpus: std::collections::BTreeSet<_> = l.iter().take(4).flat_map(|k| [k.waker_cpu, k.cpu.unwrap()]).collect();
        assert_eq!(cpus.len(), 3);
    }

    #[test]
    fn without_frequency_events_frequencies_are_unknown() {
        let evs = [
            switch(0, 0, 0, 10, RUNNABLE),
            e(0, 1 * MS, 20, ids::WAKEUP, 1, 10),
            switch(1, 2 * MS, 0, 20, RUNNABLE),
            switch(1, 4 * MS, 20, 0, BLOCKED),
        ];
        let ls = run(2, &evs);
        assert!(!ls.has_freq());
        let k = &ls.links[0];
        assert_eq!((k.waker_khz, k.khz, k.below_ns, k.run_ns), (None, None, None, 2 * MS));
    }

    #[test]
    fn waking_a_runnable_task_makes_no_link_and_preemption_does_not_end_one() {
        // 20 is woken at 1 ms, preempted at 3 ms (runnable), woken again at
        // 4 ms (no link: it is runnable), runs again from 5 to 6 ms.
        let evs = [
            freq(0, 0, 2 * GHZ),
            freq(1, 0, GHZ),
            switch(0, 0, 0, 10, RUNNABLE),
            e(0, 1 * MS, 20, ids::WAKEUP, 1, 10),
            switch(1, 2 * MS, 0, 20, RUNNABLE),
            switch(1, 3 * MS, 20, 30, RUNNABLE),
            e(0, 4 * MS, 20, ids::WAKEUP, 1, 10),
            switch(1, 5 * MS, 30, 20, RUNNABLE),
            switch(1, 6 * MS, 20, 0, BLOCKED),
        ];
        let ls = run(2, &evs);
        assert_eq!(ls.links.len(), 1);
        assert_eq!((ls.links[0].run_ns, ls.links[0].below_ns, ls.links[0].end), (2 * MS, Some(2 * MS), 6 * MS));
    }

    #[test]
    fn a_wake_up_read_after_its_switch_in_still_makes_the_link() {
        // At 2 ms CPU0 (2 GHz, task 10) wakes 20, which CPU1 (1 GHz) runs at
        // once; the reader gives CPU1's switch first. 20 blocks at 5 ms.
        let evs = [
            freq(0, 0, 2 * GHZ),
            freq(1, 0, GHZ),
            switch(0, 0, 0, 10, RUNNABLE),
            switch(1, 2 * MS, 0, 20, RUNNABLE),
            e(0, 2 * MS, 20, ids::WAKEUP, 1, 10),
            switch(1, 5 * MS, 20, 0, BLOCKED),
        ];
        let l = run(2, &evs).links;
        assert_eq!(l.len(), 1);
        assert_eq!((l[0].waker, l[0].cpu, l[0].start, l[0].khz), (10, Some(1), Some(2 * MS), Some(GHZ)));
        assert_eq!((l[0].run_ns, l[0].below_ns, l[0].end), (3 * MS, Some(3 * MS), 5 * MS));
    }

    #[test]
    fn chain_tolerates_bad_input() {
        // A parent out of range, a seed out of range, a cycle.
        assert_eq!(chain(&[Some(9), Some(0)], &[1, 5]), vec![0, 1]);
        assert_eq!(chain(&[Some(1), Some(0)], &[0]), vec![0, 1]);
    }
}
