// SPDX-License-Identifier: GPL-2.0-only
//! A random but consistent scheduling trace, generated together with an
//! independent brute-force account of what `trace stats` must report (every
//! CPU scanned at every event), checked against the streaming analyzer, a
//! written file, and a file whose event table numbers events otherwise.
use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng};
use std::collections::{HashMap, VecDeque};

use warmcore_trace::event::prev_state::{BLOCKED, RUNNABLE};
use warmcore_trace::stats::{analyze, underload_series, Analyzer, Stats, INTERVAL_NS};
use warmcore_trace::*;

/// One state of the machine, in force from `t` until the next event.
struct Snap {
    t: u64,
    busy: Vec<bool>,
    runnable: u64,
    overload: u64,
}

/// What the brute-force account says.
#[derive(Default)]
struct Oracle {
    busy_ns: Vec<u64>,
    band_ns: HashMap<u32, u64>,
    wc_ns: u64,
    latencies: Vec<u64>,
    migrations: u64,
    timeline: Vec<Snap>,
}

struct Sim {
    rng: SmallRng,
    t: u64,
    curr: Vec<u32>,
    queue: Vec<VecDeque<u32>>,
    freq: Vec<u32>,
    sleeping: Vec<u32>,
    woken_at: HashMap<u32, u64>,
    /// Time to pass before the next event (dropped if the step emits none).
    pending_dt: u64,
    out: Vec<CpuEvent>,
    o: Oracle,
}

impl Sim {
    fn new(ncpu: usize, ntasks: u32, seed: u64) -> Sim {
        let mut s = Sim {
            rng: SmallRng::seed_from_u64(seed),
            t: 1_000_000,
            curr: vec![0; ncpu],
            queue: vec![VecDeque::new(); ncpu],
            freq: vec![0; ncpu],
            sleeping: (1..=ntasks).collect(),
            woken_at: HashMap::new(),
            pending_dt: 0,
            out: Vec::new(),
            o: Oracle { busy_ns: vec![0; ncpu], ..Default::default() },
        };
        s.snap();
        s
    }

    fn snap(&mut self) {
        let busy: Vec<bool> = self.curr.iter().map(|&p| p != 0).collect();
        let mut runnable = 0;
        let mut overload = 0;
        for (b, q) in busy.iter().zip(&self.queue) {
            let n = *b as u64 + q.len() as u64;
            runnable += n;
            overload += n.saturating_sub(1);
        }
        self.o.timeline.push(Snap { t: self.t, busy, runnable, overload });
    }

    /// Time passes: account it with the state before the next event.
    fn tick_clock(&mut self, dt: u64) {
        let n = self.curr.len();
        for c in 0..n {
            if self.curr[c] != 0 {
                self.o.busy_ns[c] += dt;
                if self.freq[c] != 0 {
                    *self.o.band_ns.entry(self.freq[c] / 100_000).or_default() += dt;
                }
            }
        }
        let some_idle = (0..n).any(|c| self.curr[c] == 0);
        let some_busy_waiting = (0..n).any(|c| self.curr[c] != 0 && !self.queue[c].is_empty());
        if some_idle && some_busy_waiting {
            self.o.wc_ns += dt;
        }
        self.t += dt;
    }

    /// Emit an event, before the state changes it makes.
    fn emit(&mut self, cpu: usize, pid: u32, id: u32, a: u32, b: u32) {
        let dt = std::mem::take(&mut self.pending_dt);
        self.tick_clock(dt);
        self.out.push(CpuEvent { cpu: cpu as u32, ev: Event::new(self.t, pid, id, a, b) });
    }

    /// CPU `c` switches to the head of its queue (idle if empty).
    fn switch(&mut self, c: usize, state: u32) {
        let prev = self.curr[c];
        let next = self.queue[c].front().copied().unwrap_or(0);
        self.emit(c, prev, ids::CTX_SWITCH, next, state);
        self.queue[c].pop_front();
        if prev != 0 {
            if state == RUNNABLE {
                self.queue[c].push_back(prev);
            } else {
                self.sleeping.push(prev);
            }
        }
        if let Some(w) = self.woken_at.remove(&next) {
            self.o.latencies.push(self.t - w);
        }
        self.curr[c] = next;
    }

    fn wake(&mut self, c: usize) {
        if self.sleeping.is_empty() {
            return;
        }
        let i = self.rng.random_range(0..self.sleeping.len() as u64) as usize;
        let pid = self.sleeping[i];
        let target = self.rng.random_range(0..self.curr.len() as u64) as usize;
        let id = if self.rng.random_range(0..10) == 0 { ids::WAKEUP_NEW } else { ids::WAKEUP };
        self.emit(c, pid, id, target as u32, self.curr[c]);
        self.sleeping.swap_remove(i);
        self.queue[target].push_back(pid);
        self.woken_at.insert(pid, self.t);
    }

    fn migrate(&mut self, c: usize) {
        let Some(&pid) = self.queue[c].back() else { return };
        let d = self.rng.random_range(0..self.curr.len() as u64) as usize;
        self.emit(c, pid, ids::MIGRATE, c as u32, d as u32);
        self.queue[c].pop_back();
        self.queue[d].push_back(pid);
        self.o.migrations += 1;
    }

    fn random_freq(&mut self) -> u32 {
        1_000_000 + 100_000 * self.rng.random_range(0..21) as u32 + 50_000 * self.rng.random_range(0..2) as u32
    }

    fn step(&mut self) {
        self.pending_dt = if self.rng.random_range(0..8) == 0 { 0 } else { self.rng.random_range(0..40_000) };
        let before = self.out.len();
        let c = self.rng.random_range(0..self.curr.len() as u64) as usize;
        let r = self.rng.random_range(0..100);
        if self.curr[c] != 0 {
            match r {
                0..30 => {
                    let f = if self.rng.random_range(0..10) == 0 { 0 } else { self.random_freq() };
                    self.emit(c, self.curr[c], ids::TICK, f, 0);
                    if f != 0 {
                        self.freq[c] = f;
                    }
                }
                30..55 => self.wake(c),
                55..80 => self.switch(c, BLOCKED),
                80..90 if !self.queue[c].is_empty() => self.switch(c, RUNNABLE),
                _ => self.migrate(c),
            }
        } else {
            match r {
                0..60 if !self.queue[c].is_empty() => self.switch(c, RUNNABLE),
                0..70 => self.migrate(c),
                70..85 => {
                    let f = self.random_freq();
                    self.emit(c, 0, ids::FREQ_CHANGE, f, 0);
                    self.freq[c] = f;
                }
                _ => self.wake(c),
            }
        }
        if self.out.len() > before {
            self.snap();
        }
    }
}

fn header(n: u32) -> Header {
    let mut machine = Machine::flat("random", n);
    machine.freq_min_khz = 1_000_000;
    machine.freq_base_khz = 2_000_000;
    machine.freq_max_khz = 3_000_000;
    Header::other(machine, "random")
}

fn generate(ncpu: usize, ntasks: u32, steps: usize, seed: u64) -> Sim {
    let mut s = Sim::new(ncpu, ntasks, seed);
    for _ in 0..steps {
        s.step();
    }
    s
}

/// The analysis of `evs`, with each interval's underload.
fn analyse(h: &Header, evs: &[CpuEvent]) -> (Stats, Vec<u64>) {
    let mut a = Analyzer::new(h);
    a.record_intervals();
    for e in evs {
        a.push(e);
    }
    a.finish_with_intervals()
}

/// Underload and overload summed over intervals, and each interval's
/// underload, by scanning the timeline:
/// an interval [s, e) sees the state in force at s and every state that
/// starts in it; the last interval ends with the last event. Underload
/// takes every state, overload only those at the end of an instant (the
/// last of one timestamp).
fn interval_sums(tl: &[Snap], first: u64, last: u64) -> (u64, u64, u64, Vec<u64>) {
    let (mut under, mut over, mut n) = (0, 0, 0);
    let mut per_interval = Vec::new();
    let mut s = first;
    let end_of_instant = |i: usize| i + 1 >= tl.len() || tl[i + 1].t != tl[i].t;
    // tl[0] is the state before the first event; tl[i] for i >= 1 follows an event.
    while s <= last {
        let e = s + INTERVAL_NS;
        let before = tl.iter().skip(1).rposition(|x| x.t < s).map(|i| i + 1).unwrap_or(0);
        let inside: Vec<usize> = (1..tl.len()).filter(|&i| tl[i].t >= s && tl[i].t < e).collect();
        let mut states: Vec<&Snap> = vec![&tl[before]];
        states.extend(inside.iter().map(|&i| &tl[i]));
        let ncpu = tl[0].busy.len();
        let used = (0..ncpu).filter(|&c| states.iter().any(|x| x.busy[c])).count() as u64;
        let max_run = states.iter().map(|x| x.runnable).max().unwrap();
        under += used.saturating_sub(max_run);
        per_interval.push(used.saturating_sub(max_run));
        let ends = std::iter::once(before).chain(inside.iter().copied().filter(|&i| end_of_instant(i)));
        over += ends.map(|i| tl[i].overload).max().unwrap();
        n += 1;
        s = e;
    }
    (under, over, n, per_interval)
}

#[test]
fn streaming_figures_match_a_brute_force_account() {
    let (mut all_under, mut all_over) = (0, 0);
    // Loaded machines (more tasks than CPUs) and lightly loaded ones.
    for (ncpu, ntasks, steps, seed) in
        [(2, 8, 20_000, 1), (8, 32, 40_000, 7), (24, 96, 30_000, 99), (4, 3, 20_000, 3), (16, 10, 30_000, 11)]
    {
        let sim = generate(ncpu, ntasks, steps, seed);
        let (s, per_interval) = analyse(&header(ncpu as u32), &sim.out);
        let o = &sim.o;
        let first = sim.out[0].ev.ts;
        let last = sim.out.last().unwrap().ev.ts;
        assert_eq!(s.events, sim.out.len() as u64);
        assert_eq!(s.duration_ns, last - first);
        // The generator's clock started before its first event, all idle:
        // nothing ran before the first event, so the busy times agree.
        assert_eq!(s.detail.busy_ns, o.busy_ns, "busy, {ncpu} CPUs");
        assert_eq!(s.work_conservation_violation_ns, o.wc_ns, "wc, {ncpu} CPUs");
        assert!(o.wc_ns > 0, "the generator should make some violations");
        assert_eq!(s.migrations, o.migrations);

        let (under, over, n, brute_per_interval) = interval_sums(&o.timeline, first, last);
        assert_eq!(s.detail.intervals, n);
        assert_eq!(s.detail.underload, under, "underload, {ncpu} CPUs");
        // The series the figures draw, interval by interval.
        assert_eq!(per_interval, brute_per_interval, "underload per interval, {ncpu} CPUs");
        assert_eq!(s.detail.overload, over, "overload, {ncpu} CPUs");
        all_under += under;
        all_over += over;

        let mut lat = o.latencies.clone();
        lat.sort_unstable();
        let rank = |q: f64| lat[((q * lat.len() as f64).ceil() as usize).max(1) - 1];
        let p = s.wakeup_latency_ns.unwrap();
        for (got, q) in [(p.p50, 0.5), (p.p99, 0.99), (p.p999, 0.999)] {
            let want = rank(q);
            assert!((got as f64 - want as f64).abs() <= want as f64 * 1e-3 + 1.0, "q{q}: {got} vs {want}");
        }

        let known: u64 = o.band_ns.values().sum();
        assert_eq!(s.detail.busy_known_freq_ns, known);
        let bands = s.freq_residency.unwrap();
        assert_eq!((bands[0].lo_mhz, bands.last().unwrap().hi_mhz), (1000, 3100));
        for b in &bands {
            let want = *o.band_ns.get(&(b.lo_mhz / 100)).unwrap_or(&0) as f64 / known as f64;
            assert!((b.fraction - want).abs() < 1e-12, "band {}: {} vs {want}", b.lo_mhz, b.fraction);
        }
        let inv = s.inversions.unwrap();
        assert!(inv.count <= s.detail.wakeups && inv.ns <= s.detail.busy_ns.iter().sum::<u64>());
    }
    assert!(all_under > 0 && all_over > 0, "the generator should make underload and overload");
}

#[test]
fn a_written_file_gives_the_same_figures_with_its_own_event_numbers() {
    let ncpu = 6;
    let mut sim = generate(ncpu, 20, 30_000, 5);
    // A file written without keep_push_order keeps no order between events
    // of different CPUs at the same time: the reader gives them by CPU
    // number. Compare with that order.
    sim.out.sort_by_key(|e| (e.ev.ts, e.cpu));
    let h = header(ncpu as u32);
    let (want, want_intervals) = analyse(&h, &sim.out);
    let dir = tempfile::tempdir().unwrap();

    // As written, compressed, with lost events in the summary.
    let p = dir.path().join("a.wct");
    let mut w = Writer::create(&p, &h, WriterOptions { zstd_level: Some(1), chunk_events: 500 }).unwrap();
    for e in &sim.out {
        w.push(e.cpu, e.ev).unwrap();
    }
    w.add_lost(3, 11);
    w.finish().unwrap();
    let got = analyze(&Trace::open(&p).unwrap()).unwrap();
    assert_eq!(got, Stats { lost_events: 11, ..want.clone() });
    // The file's underload interval by interval (what the figures draw).
    assert_eq!(underload_series(&Trace::open(&p).unwrap()).unwrap(), want_intervals);

    // A file whose table gives every event another id (say, an importer's
    // numbering): the analysis reads the file's own table.
    let mut h2 = h.clone();
    h2.events.names = h.events.names.iter().map(|(i, n)| (i + 1000, n.clone())).collect();
    let p2 = dir.path().join("b.wct");
    let mut w = Writer::create(&p2, &h2, WriterOptions::default()).unwrap();
    for e in &sim.out {
        let mut ev = e.ev;
        ev.id += 1000;
        w.push(e.cpu, ev).unwrap();
    }
    w.finish().unwrap();
    assert_eq!(analyze(&Trace::open(&p2).unwrap()).unwrap(), want);

    // Read with the default table, the renumbered events mean nothing: the
    // figures differ (guards against the analyzer ignoring the table).
    let mut a = Analyzer::new(&h);
    for e in &sim.out {
        let mut ev = e.ev;
        ev.id += 1000;
        a.push(&CpuEvent { cpu: e.cpu, ev });
    }
    let blind = a.finish();
    assert_eq!(blind.migrations, 0);
    assert_ne!(blind, want);
}

#[test]
fn a_file_that_keeps_the_push_order_gives_ties_back_as_they_happened() {
    let ncpu = 6;
    let sim = generate(ncpu, 20, 30_000, 13);
    let h = header(ncpu as u32);
    let (want, _) = analyse(&h, &sim.out);
    // The generator makes ties across CPUs in no particular CPU order.
    let by_cpu_differs = sim.out.windows(2).any(|w| w[0].ev.ts == w[1].ev.ts && w[0].cpu > w[1].cpu);
    assert!(by_cpu_differs, "the generator should make ties that CPU order would reorder");
    let dir = tempfile::tempdir().unwrap();
    for (name, zstd, chunk) in [("raw.wct", None, 300), ("zstd.wct", Some(1), 7)] {
        let p = dir.path().join(name);
        let mut w = Writer::create(&p, &h, WriterOptions { zstd_level: zstd, chunk_events: chunk }).unwrap().keep_push_order();
        for e in &sim.out {
            w.push(e.cpu, e.ev).unwrap();
        }
        w.finish().unwrap();
        let t = Trace::open(&p).unwrap();
        let back: Vec<CpuEvent> = t.events(None, Window::ALL).map(|e| e.unwrap()).collect();
        assert!(back == sim.out, "{name}: events come back in push order");
        assert_eq!(analyze(&t).unwrap(), want, "{name}");
        // A window that starts inside a run of ties keeps their order too.
        let mid = sim.out.windows(2).position(|w| w[0].ev.ts == w[1].ev.ts).unwrap();
        let from = sim.out[mid].ev.ts;
        let part: Vec<CpuEvent> = t.events(None, Window { from, to: u64::MAX }).map(|e| e.unwrap()).collect();
        let first = sim.out.iter().position(|e| e.ev.ts == from).unwrap();
        assert!(part == sim.out[first..], "{name}: window from {from}");
    }
    // Pushing out of global time order is refused.
    let p = dir.path().join("bad.wct");
    let mut w = Writer::create(&p, &h, WriterOptions::default()).unwrap().keep_push_order();
    w.push(0, Event::new(10, 1, ids::TICK, 0, 0)).unwrap();
    assert!(w.push(1, Event::new(9, 1, ids::TICK, 0, 0)).is_err());
}
