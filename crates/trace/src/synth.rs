// SPDX-License-Identifier: GPL-2.0-only
//! Synthetic traces of any size, for benchmarks, fuzzing seeds and tools'
//! tests. The schedule is plausible rather than modelled (the simulator models
//! machines): each CPU alternates between running tasks and idling, tasks wake
//! each other across CPUs, fork and exit, and every 4 ms tick carries a
//! frequency that drifts between the machine's minimum and maximum. Event
//! semantics are kept consistent (a switch's previous task is the one running),
//! so that the analysis can be exercised on the result; but a task may be
//! picked on two CPUs at once, which no kernel does.

use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::error::Result;
use crate::event::{ids, prev_state, Event};
use crate::meta::{CpuTopo, Header, Machine, Provenance};
use crate::writer::{Writer, WriterOptions};

/// The tick period of the Linux configurations the papers use (4 ms, HZ=250).
const TICK_NS: u64 = 4_000_000;

/// Linux's pid_max at its largest on 64-bit machines (PID_MAX_LIMIT, 2^22).
const PID_MAX_LIMIT: u32 = 1 << 22;
/// The first pid a forked task gets (below it: the tasks that start alive).
const FIRST_PID: u32 = 1000;

#[derive(Clone, Debug)]
pub struct SynthOptions {
    pub events: u64,
    pub cpus: u32,
    pub seed: u64,
    pub zstd_level: Option<i32>,
}

/// A machine of `cpus` CPUs as 2-way SMT cores, 20 cores a socket, 1.2-3.0 GHz.
pub fn synth_machine(cpus: u32) -> Machine {
    let threads_per_socket = 40;
    Machine {
        name: format!("synthetic-{cpus}"),
        cpus: (0..cpus)
            .map(|cpu| {
                let socket = cpu / threads_per_socket;
                CpuTopo { cpu, core: cpu / 2, die: socket, socket }
            })
            .collect(),
        freq_min_khz: 1_200_000,
        freq_base_khz: 2_100_000,
        freq_max_khz: 3_000_000,
    }
}

struct CpuState {
    now: u64,
    running: u32,
    next_tick: u64,
    freq_khz: u32,
}

/// The pid a fork gets: the first at or after `next` that no live task holds,
/// wrapping at `pid_max` to FIRST_PID, as the kernel's cyclic allocator does;
/// so a trace of any length names fewer than `pid_max` tasks.
fn free_pid(next: u32, live: &[u32], pid_max: u32) -> u32 {
    let mut pid = if next >= pid_max { FIRST_PID } else { next };
    while live.contains(&pid) {
        pid = if pid + 1 >= pid_max { FIRST_PID } else { pid + 1 };
    }
    pid
}

/// Write a synthetic trace of about `opts.events` events; returns the count.
pub fn generate(path: &Path, opts: &SynthOptions) -> Result<u64> {
    let machine = synth_machine(opts.cpus.max(1));
    let header = Header {
        machine: machine.clone(),
        events: Default::default(),
        provenance: Provenance::Other {
            description: format!("synthetic: {} events on {} CPUs, seed {}", opts.events, opts.cpus, opts.seed),
        },
        wall_clock_start: None,
    };
    let out = crate::output::Output::create(path, &[])?;
    let mut w = Writer::new(out.file()?, out.name(), &header, WriterOptions { zstd_level: opts.zstd_level, ..Default::default() })?;
    let mut rng = SmallRng::seed_from_u64(opts.seed);
    let n = machine.nr_cpus();
    let mut cpus: Vec<CpuState> = (0..n)
        .map(|_| CpuState { now: 0, running: 0, next_tick: TICK_NS, freq_khz: machine.freq_min_khz })
        .collect();
    let mut next_pid = FIRST_PID;
    let mut live: Vec<u32> = (0..n * 2).map(|i| 100 + i).collect();
    // Forks outnumber exits, so the live set is capped (a fork past the cap
    // exits instead): the set stays small enough to search, which keeps the
    // rate of events constant however long the trace, while every event still
    // names a process (forks keep coming, so the process table grows with the
    // trace: about 22 k forks per million events, ten times a kernel build's,
    // until pids wrap, which makes the viewer's process table a hard case).
    let live_cap = 8 * n as usize;
    for &pid in &live {
        w.note_process(pid, 1, &format!("task-{pid}"), 0);
    }
    while w.events_written() < opts.events {
        let c = rng.random_range(0..n) as usize;
        let st = &mut cpus[c];
        st.now += rng.random_range(1_000..200_000);
        let now = st.now;
        if now >= st.next_tick {
            st.next_tick += TICK_NS;
            if st.running != 0 {
                // Busy cores climb, idle ones fall back, with some noise.
                let step: i64 = rng.random_range(-100_000..300_000);
                let f = (st.freq_khz as i64 + step).clamp(machine.freq_min_khz as i64, machine.freq_max_khz as i64);
                st.freq_khz = f as u32;
                w.push(c as u32, Event::new(st.next_tick - TICK_NS, st.running, ids::TICK, st.freq_khz, 0))?;
                continue;
            }
            st.freq_khz = machine.freq_min_khz;
            w.push(c as u32, Event::new(st.next_tick - TICK_NS, 0, ids::FREQ_CHANGE, st.freq_khz, 0))?;
        }
        let roll = rng.random_range(0..100);
        let prev = st.running;
        if roll < 45 {
            // Switch to another task or to idle.
            let next = if rng.random_bool(0.3) { 0 } else { live[rng.random_range(0..live.len())] };
            if next != prev {
                let state = if rng.random_bool(0.5) { prev_state::BLOCKED } else { prev_state::RUNNABLE };
                if prev != 0 && state == prev_state::BLOCKED {
                    w.push(c as u32, Event::new(now, prev, ids::BLOCK, 0, 0))?;
                }
                w.push(c as u32, Event::new(now, prev, ids::CTX_SWITCH, next, state))?;
                st.running = next;
            }
        } else if roll < 85 {
            let target = rng.random_range(0..n);
            let wakee = live[rng.random_range(0..live.len())];
            w.push(c as u32, Event::new(now, wakee, ids::WAKEUP, target, prev))?;
        } else if roll < 92 {
            let to = rng.random_range(0..n);
            let pid = live[rng.random_range(0..live.len())];
            w.push(c as u32, Event::new(now, pid, ids::MIGRATE, c as u32, to))?;
        } else if roll < 97 && prev != 0 && live.len() < live_cap {
            let child = free_pid(next_pid, &live, PID_MAX_LIMIT);
            next_pid = child + 1;
            w.push(c as u32, Event::new(now, child, ids::FORK, prev, 0))?;
            w.push(c as u32, Event::new(now, child, ids::WAKEUP_NEW, rng.random_range(0..n), prev))?;
            if rng.random_bool(0.5) {
                w.push(c as u32, Event::with_comm(now, child, ids::EXEC, ["sh", "cc1", "as", "ld"][rng.random_range(0..4)]))?;
            }
            live.push(child);
        } else if prev != 0 && live.len() > n as usize {
            w.push(c as u32, Event::new(now, prev, ids::EXIT, 0, 0))?;
            w.push(c as u32, Event::new(now, prev, ids::CTX_SWITCH, 0, prev_state::DEAD))?;
            if let Some(i) = live.iter().position(|&p| p == prev) {
                live.swap_remove(i);
            }
            st.running = 0;
        }
    }
    let n = w.finish()?;
    out.commit()?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Trace, Window};

    #[test]
    fn pids_wrap_at_pid_max_and_skip_live_tasks() {
        assert_eq!(free_pid(1005, &[1, 2], 2000), 1005);
        assert_eq!(free_pid(1005, &[1005, 1006], 2000), 1007);
        assert_eq!(free_pid(2000, &[], 2000), FIRST_PID);
        assert_eq!(free_pid(1999, &[1999, FIRST_PID], 2000), FIRST_PID + 1);
    }

    #[test]
    fn generates_a_consistent_trace() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.wct");
        let opts = SynthOptions { events: 50_000, cpus: 8, seed: 1, zstd_level: None };
        let n = generate(&p, &opts).unwrap();
        assert!(n >= 50_000);
        let t = Trace::open(&p).unwrap();
        assert_eq!(t.event_count(), n);
        // Every switch names as previous task the one the last switch put on.
        for cpu in 0..8 {
            let mut running = 0;
            for e in t.cpu_events(cpu, Window::ALL) {
                let e = e.unwrap();
                if e.id == ids::CTX_SWITCH {
                    assert_eq!(e.pid, running, "cpu {cpu} at {}", e.ts);
                    running = e.a();
                }
            }
        }
        // The live set is capped, so that the generator keeps its pace on
        // long traces: tasks alive at once stay near 8 per CPU (seen in time
        // order, which differs a little from the order they were made in;
        // without the cap, hundreds would be alive by the end).
        let mut alive: i64 = 16;
        let mut most = alive;
        for e in t.events(None, Window::ALL) {
            match e.unwrap().ev.id {
                ids::FORK => alive += 1,
                ids::EXIT => alive -= 1,
                _ => {}
            }
            most = most.max(alive);
        }
        assert!(most <= 80, "{most} tasks alive at once");
        assert!(most > 32, "the cap was never approached ({most})");
        // The same seed gives the same file.
        let q = dir.path().join("s2.wct");
        generate(&q, &opts).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), std::fs::read(&q).unwrap());
    }
}
