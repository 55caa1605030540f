// SPDX-License-Identifier: GPL-2.0-only
//! A generated trace for the exporters' tests: plausible scheduling on a few
//! CPUs (switches, wakeups, forks, execs, exits, migrations, ticks), with or
//! without frequency data and idle events, plus events the exporters have no
//! equivalent for, in a file whose event table may number events otherwise.
#![allow(dead_code)]

use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng};
use std::path::Path;

use warmcore_trace::event::BUILTIN;
use warmcore_trace::*;

pub struct Opts {
    pub cpus: u32,
    pub steps: usize,
    pub freq: bool,
    pub idle: bool,
    /// Number the events from 101 on instead of the built-in ids.
    pub renumber: bool,
    pub seed: u64,
}

impl Default for Opts {
    fn default() -> Self {
        Opts { cpus: 4, steps: 20_000, freq: true, idle: false, renumber: false, seed: 7 }
    }
}

/// An id no table names: exporters must keep it, shown as EVENT_<id>.
pub const UNNAMED_ID: u32 = 99;

pub fn table(renumber: bool) -> EventTable {
    if renumber {
        EventTable { names: BUILTIN.iter().map(|&(id, n)| (id + 100, n.to_string())).collect() }
    } else {
        EventTable::default()
    }
}

pub fn comm_of(pid: u32) -> String {
    format!("task{pid}")
}

/// Write the trace to `path`; returns the events in the reader's order
/// (time, then CPU).
pub fn write(path: &Path, o: &Opts) -> Vec<CpuEvent> {
    let events = table(o.renumber);
    let id = |b: u32| events.builtin_to_file(b).unwrap();
    let mut machine = Machine::flat("gen", o.cpus);
    if o.freq {
        machine.freq_min_khz = 800_000;
        machine.freq_base_khz = 2_000_000;
        machine.freq_max_khz = 3_600_000;
    }
    let header = Header {
        machine,
        events: events.clone(),
        provenance: Provenance::Other { description: "exporter test".into() },
        wall_clock_start: None,
    };
    let mut w = Writer::create(path, &header, WriterOptions { zstd_level: None, chunk_events: 500 }).unwrap();
    let mut r = SmallRng::seed_from_u64(o.seed);
    let mut out = Vec::new();
    let mut push = |w: &mut Writer<std::fs::File>, cpu: u32, ev: Event| {
        w.push(cpu, ev).unwrap();
        out.push(CpuEvent { cpu, ev });
    };
    let mut tasks: Vec<u32> = (100..112).collect();
    for &p in &tasks {
        w.note_process(p, 1, &comm_of(p), 0);
    }
    let mut next_pid = 1000u32;
    let mut running = vec![0u32; o.cpus as usize];
    let mut idle = vec![false; o.cpus as usize];
    let mut ts = 1_000_000_000u64;
    for _ in 0..o.steps {
        ts += 3 + r.random_range(0..20_000);
        let cpu = r.random_range(0..o.cpus as u64) as u32;
        let c = cpu as usize;
        let cur = running[c];
        let pick = |r: &mut SmallRng, tasks: &[u32]| tasks[r.random_range(0..tasks.len() as u64) as usize];
        match r.random_range(0..100) {
            0..=29 => {
                let next = if r.random_range(0..4) == 0 { 0 } else { pick(&mut r, &tasks) };
                if next == cur {
                    continue;
                }
                if o.idle && cur == 0 && idle[c] {
                    push(&mut w, cpu, Event::new(ts, 0, id(ids::IDLE_EXIT), 0, 0));
                    idle[c] = false;
                }
                let state = if cur == 0 { 0 } else { r.random_range(0..4) as u32 };
                push(&mut w, cpu, Event::new(ts, cur, id(ids::CTX_SWITCH), next, state));
                running[c] = next;
                if o.idle && next == 0 {
                    push(&mut w, cpu, Event::new(ts + 1, 0, id(ids::IDLE_ENTER), r.random_range(0..3) as u32, 0));
                    idle[c] = true;
                }
            }
            30..=49 => {
                let woken = pick(&mut r, &tasks);
                let target = r.random_range(0..o.cpus as u64) as u32;
                push(&mut w, cpu, Event::new(ts, woken, id(ids::WAKEUP), target, cur));
            }
            50..=69 => {
                let khz = if o.freq { 800_000 + 100_000 * r.random_range(0..29) as u32 } else { 0 };
                push(&mut w, cpu, Event::new(ts, cur, id(ids::TICK), khz, 0));
            }
            70..=74 if o.freq => {
                let khz = 800_000 + 100_000 * r.random_range(0..29) as u32;
                push(&mut w, cpu, Event::new(ts, cur, id(ids::FREQ_CHANGE), khz, 0));
            }
            75..=79 => {
                let p = pick(&mut r, &tasks);
                let to = r.random_range(0..o.cpus as u64) as u32;
                push(&mut w, cpu, Event::new(ts, p, id(ids::MIGRATE), cpu, to));
            }
            80..=83 if tasks.len() < 64 => {
                let parent = if cur == 0 { 1 } else { cur };
                let child = next_pid;
                next_pid += 1;
                let target = r.random_range(0..o.cpus as u64) as u32;
                w.note_process(child, parent, &comm_of(child), ts);
                push(&mut w, cpu, Event::new(ts, child, id(ids::FORK), parent, 0));
                push(&mut w, cpu, Event::new(ts + 1, child, id(ids::WAKEUP_NEW), target, parent));
                push(&mut w, cpu, Event::with_comm(ts + 2, child, id(ids::EXEC), &comm_of(child)));
                tasks.push(child);
            }
            84..=85 if cur != 0 && tasks.len() > 4 => {
                push(&mut w, cpu, Event::new(ts, cur, id(ids::EXIT), 0, 0));
                tasks.retain(|&p| p != cur);
            }
            86..=90 => push(&mut w, cpu, Event::new(ts, cur, id(ids::BLOCK), 0, 0)),
            91..=95 => push(&mut w, cpu, Event::new(ts, cur, id(ids::RQ_SIZE), r.random_range(0..8) as u32, 1)),
            96 => push(&mut w, cpu, Event::new(ts, cur, UNNAMED_ID, 0xdead, 0xbeef)),
            _ => {}
        }
    }
    w.finish().unwrap();
    out.sort_by_key(|e| (e.ev.ts, e.cpu));
    out
}
