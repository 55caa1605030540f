// SPDX-License-Identifier: GPL-2.0-only
//! Replay of a `.wct` trace as a workload (`--workload replay:trace=F.wct`).
//!
//! Each task becomes a program: its stints on a CPU become work in cycles at
//! the frequency recorded then (FREQ_CHANGE and TICK; the machine's base
//! frequency where none is known), its blocks become waits, and each wake-up
//! by another task becomes a dependency: the waker writes a one-message pipe
//! at that point of its own program, the woken task reads it. A wake-up with
//! no task as waker (timer, interrupt) becomes a sleep of the recorded
//! length. FORK and EXIT are kept; tasks that exist before the trace starts
//! are started at their first appearance.

use std::collections::HashMap;

use warmcore_trace::event::prev_state;
use warmcore_trace::{ids, Trace, Window};

use crate::program::{Amount, ProgId, Step, Workload};
use crate::SimError;

struct T {
    prog: ProgId,
    steps: Vec<Step>,
    /// Running since (ns) on this CPU.
    running: Option<(u64, u32)>,
    /// Cycles run since the last step boundary.
    cycles: f64,
    /// Blocked since (ns).
    blocked: Option<u64>,
    exited: bool,
}

impl T {
    fn flush_run(&mut self, now: u64, freq: &[u32], base: u32) {
        if let Some((since, cpu)) = self.running {
            let f = match freq.get(cpu as usize) {
                Some(&f) if f > 0 => f,
                _ => base,
            };
            self.cycles += (now.saturating_sub(since)) as f64 * f as f64 * 1e-6;
            self.running = Some((now, cpu));
        }
        if self.cycles >= 1.0 {
            self.steps.push(Step::Compute(Amount::fixed(self.cycles)));
        }
        self.cycles = 0.0;
    }
}

/// A trace to replay that is not there: said with what makes one.
pub fn check_exists(path: &str) -> Result<(), SimError> {
    if std::path::Path::new(path).exists() {
        return Ok(());
    }
    Err(SimError::Input(format!(
        "replay {path}: no such file: a trace to replay is made by `warmcore record` or `warmcore trace import`"
    )))
}

pub fn load(path: &str) -> Result<Workload, SimError> {
    let err = |m: String| SimError::Input(format!("replay {path}: {m}"));
    check_exists(path)?;
    let tr = Trace::open(path).map_err(|e| err(e.to_string()))?;
    let table = &tr.header.events;
    let id = |b: u32| table.builtin_to_file(b).unwrap_or(u32::MAX);
    let (sw, wk, wkn, fork, exit, fc, tick) = (
        id(ids::CTX_SWITCH),
        id(ids::WAKEUP),
        id(ids::WAKEUP_NEW),
        id(ids::FORK),
        id(ids::EXIT),
        id(ids::FREQ_CHANGE),
        id(ids::TICK),
    );
    let base = if tr.header.machine.freq_base_khz > 0 { tr.header.machine.freq_base_khz } else { 2_000_000 };
    let mut freq = vec![0u32; tr.header.machine.nr_cpus() as usize];
    let mut w = Workload::new("replay");
    let mut tasks: HashMap<u32, T> = HashMap::new();
    let mut order: Vec<u32> = Vec::new();
    let mut initial: Vec<(u32, u64)> = Vec::new();
    let start = tr.span().map(|s| s.0).unwrap_or(0);
    // Programs are numbered as tasks appear; bodies are filled at the end.
    let new_task = |pid: u32, w: &mut Workload, tasks: &mut HashMap<u32, T>, order: &mut Vec<u32>| {
        let prog = w.add(&format!("pid{pid}"), Vec::new());
        tasks.insert(pid, T { prog, steps: Vec::new(), running: None, cycles: 0.0, blocked: None, exited: false });
        order.push(pid);
    };
    for ev in tr.events(None, Window::ALL) {
        let ce = ev.map_err(|e| err(e.to_string()))?;
        let (cpu, e) = (ce.cpu, ce.ev);
        let now = e.ts;
        if e.id == fc || (e.id == tick && e.a() > 0) {
            if let Some(f) = freq.get_mut(cpu as usize) {
                *f = e.a();
            }
            continue;
        }
        // Make sure a task exists; tasks first seen outside FORK existed
        // before the trace.
        let mut ensure = |pid: u32, w: &mut Workload, tasks: &mut HashMap<u32, T>| {
            if pid != 0 && !tasks.contains_key(&pid) {
                new_task(pid, w, tasks, &mut order);
                initial.push((pid, now.saturating_sub(start)));
            }
        };
        if e.id == fork {
            let (child, parent) = (e.pid, e.a());
            if child == 0 || tasks.contains_key(&child) {
                continue;
            }
            ensure(parent, &mut w, &mut tasks);
            new_task(child, &mut w, &mut tasks, &mut order);
            let cp = tasks[&child].prog;
            if let Some(p) = tasks.get_mut(&parent) {
                p.flush_run(now, &freq, base);
                p.steps.push(Step::Fork(cp));
            }
        } else if e.id == sw {
            let (prev, next, st) = (e.pid, e.a(), e.b());
            if prev != 0 {
                ensure(prev, &mut w, &mut tasks);
                let t = tasks.get_mut(&prev).unwrap();
                if t.running.is_some() {
                    t.flush_run(now, &freq, base);
                }
                t.running = None;
                if st == prev_state::BLOCKED || st == prev_state::BLOCKED_IO {
                    t.blocked = Some(now);
                }
            }
            if next != 0 {
                ensure(next, &mut w, &mut tasks);
                let t = tasks.get_mut(&next).unwrap();
                if let Some(since) = t.blocked.take() {
                    // Woken without a recorded waker task: a timed wait.
                    t.steps.push(Step::Sleep(Amount::fixed(now.saturating_sub(since) as f64)));
                }
                t.running = Some((now, cpu));
            }
        } else if e.id == wk || e.id == wkn {
            let (pid, waker) = (e.pid, e.b());
            if e.id == wkn || pid == waker {
                continue;
            }
            let blocked = tasks.get(&pid).and_then(|t| t.blocked).is_some();
            if !blocked || waker == 0 || !tasks.contains_key(&waker) {
                continue;
            }
            let pipe = w.pipe(1);
            let wt = tasks.get_mut(&waker).unwrap();
            wt.flush_run(now, &freq, base);
            wt.steps.push(Step::PipeWrite(pipe));
            let t = tasks.get_mut(&pid).unwrap();
            t.blocked = None;
            t.steps.push(Step::PipeRead(pipe));
        } else if e.id == exit {
            if let Some(t) = tasks.get_mut(&e.pid) {
                t.flush_run(now, &freq, base);
                t.running = None;
                // The Exit step goes last: a dying task's wake-ups (its
                // parent's) are recorded just after its EXIT.
                t.exited = true;
            }
        }
    }
    if tasks.is_empty() {
        return Err(err("the trace has no task to replay".into()));
    }
    for pid in &order {
        let t = tasks.get_mut(pid).unwrap();
        if t.running.is_some() {
            let end = tr.span().map(|s| s.1).unwrap_or(0);
            t.flush_run(end, &freq, base);
        }
        t.steps.push(Step::Exit);
        let prog = t.prog as usize;
        w.programs[prog].steps = std::mem::take(&mut t.steps);
    }
    for (pid, at) in initial {
        let t = &tasks[&pid];
        let comm = tr.processes().get(&pid).map(|p| p.comm.clone()).unwrap_or_default();
        let comm = if comm.is_empty() { format!("pid{pid}") } else { comm };
        let p = w.programs.len() as ProgId;
        w.programs.push(crate::program::Program {
            name: format!("start{pid}"),
            steps: vec![Step::Sleep(Amount::fixed(at.max(1) as f64)), Step::Repeat(t.prog, 1), Step::Exit],
        });
        w.initial.push((p, comm, None));
    }
    w.validate().map_err(err)?;
    Ok(w)
}
