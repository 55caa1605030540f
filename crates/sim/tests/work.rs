// SPDX-License-Identifier: GPL-2.0-only
//! A computation's work is done while its task runs, and only then: a task
//! that resumes a computation on a CPU that idled before it came gets no
//! work for the CPU's idle time.

use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::Governor;
use warmcore_trace::{ids, Event};

mod common;
use common::{quiet, simulate};

const MS: f64 = 1e6;

/// `pid`'s time on any CPU: from each switch to it to the next switch on
/// that CPU.
fn run_time(evs: &[(u32, Event)], pid: u32) -> u64 {
    let mut since = std::collections::HashMap::new();
    let mut total = 0;
    for (c, e) in evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH) {
        if let Some(t) = since.remove(c) {
            total += e.ts - t;
        }
        if e.a() == pid {
            since.insert(*c, e.ts);
        }
    }
    total
}

#[test]
fn a_preempted_task_resumed_on_a_cpu_that_idled_gets_no_work_for_the_idle_time() {
    // Every other CPU runs a short task and idles. On CPU 0, `a` computes
    // 200 ms of work at the machine's highest frequency; `b`, bound to CPU
    // 0, wakes after 150 ms and preempts it, so that an idle CPU takes `a`
    // over in the middle of its computation.
    let m = quiet("default");
    let work = 200.0 * MS * m.max_khz() as f64 * 1e-6;
    let mut w = Workload::new("resume");
    for c in 1..m.nr_cpus {
        let short = w.add("short", vec![Step::Affinity([c].into(), false), Step::Compute(Amount::work_us(1000.0, 0.0)), Step::Exit]);
        w.initial.push((short, "short".into(), Some(c)));
    }
    let a = w.add("a", vec![Step::Compute(Amount::fixed(work)), Step::Exit]);
    w.initial.push((a, "a".into(), Some(0)));
    let b = w.add(
        "b",
        vec![Step::Affinity([0].into(), false), Step::Sleep(Amount::fixed(150.0 * MS)), Step::Compute(Amount::fixed(work)), Step::Exit],
    );
    w.initial.push((b, "b".into(), Some(0)));
    for policy in ["cfs", "eevdf"] {
        let (_, evs) = simulate(&m, Governor::Performance, policy, w.clone());
        // The tasks are created in the workload's order: `a` after the
        // short ones.
        let pid_a = evs.iter().filter(|(_, e)| e.id == ids::WAKEUP_NEW).nth(m.nr_cpus as usize - 1).map(|(_, e)| e.pid);
        let pid_a = pid_a.expect("a was created");
        let moved = evs.iter().any(|(c, e)| *c != 0 && e.id == ids::CTX_SWITCH && e.a() == pid_a && e.ts as f64 > 150.0 * MS);
        assert!(moved, "{policy}: a never resumed on another CPU, the scenario did not happen");
        // At most the highest frequency: the work takes at least 200 ms of
        // running (plus the kernel's own time at each switch). Credited
        // with the idle time of the CPU that took it over, it ran 166 ms.
        let ran = run_time(&evs, pid_a) as f64;
        assert!(ran >= 200.0 * MS, "{policy}: a ran {:.3} ms for 200 ms of work", ran / MS);
    }
}
