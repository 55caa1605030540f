// SPDX-License-Identifier: GPL-2.0-only
//! The placement figures (`trace stats --placement`) of hand-built traces
//! whose every figure is worked out in the comments.
use warmcore_trace::event::prev_state::{BLOCKED, DEAD, RUNNABLE};
use warmcore_trace::placement::{Placement, Placements};
use warmcore_trace::*;

fn header(n: u32) -> Header {
    Header::other(Machine::flat("test", n), "test")
}

// The builders of hand-made traces: an event, a switch, a wake-up.
use warmcore_trace::event::build::{event as e, switch, wakeup as wake};

fn run(n: u32, evs: &[CpuEvent]) -> (stats::Stats, Placement) {
    let mut p = Placements::new(&header(n));
    for ev in evs {
        p.push(ev);
    }
    p.finish()
}

/// A fork/wait chain over three CPUs: the parent (1) on CPU 0 forks child
/// 2 onto CPU 1 and waits; 2 forks 3 onto its own CPU and waits; 3 exits
/// and wakes 2 on CPU 1 (on the waker's CPU and on 2's previous one); 2
/// exits and wakes 1, placed on CPU 2 (neither), which first runs on CPU 0
/// (not the target), moved there (one MIGRATE).
fn chain() -> Vec<CpuEvent> {
    vec![
        e(0, 0, 1, ids::EXEC, 0, 0),
        switch(0, 0, 0, 1, RUNNABLE),
        e(0, 100, 2, ids::FORK, 1, 0),
        e(0, 100, 2, ids::WAKEUP_NEW, 1, 1),
        switch(1, 110, 0, 2, RUNNABLE),
        switch(0, 120, 1, 0, BLOCKED), // 1 ran 0..120 on CPU 0
        e(1, 200, 3, ids::FORK, 2, 0),
        e(1, 200, 3, ids::WAKEUP_NEW, 1, 2),
        switch(1, 220, 2, 3, BLOCKED), // 2 ran 110..220 on CPU 1
        e(1, 400, 3, ids::EXIT, 0, 0),
        wake(1, 400, 2, 1, 3),
        switch(1, 410, 3, 2, DEAD), // 3 ran 220..410 on CPU 1
        e(1, 500, 2, ids::EXIT, 0, 0),
        wake(1, 500, 1, 2, 2),
        e(1, 505, 1, ids::MIGRATE, 2, 0),
        switch(1, 510, 2, 0, DEAD), // 2 ran 410..510 on CPU 1
        switch(0, 520, 0, 1, RUNNABLE),
        switch(0, 600, 1, 0, DEAD), // 1 ran 520..600 on CPU 0
    ]
}

#[test]
fn a_fork_wait_chain_s_wake_ups_forks_migrations_and_cpus() {
    let (s, p) = run(3, &chain());
    assert_eq!(p.wakeups, 2);
    // 2 went back to CPU 1, where it last ran; 1 was placed on CPU 2, not 0.
    assert_eq!(p.on_prev, Some(0.5));
    // 2's wake-up was recorded on CPU 1 by its waker 3 and placed there.
    assert_eq!(p.on_waker, Some(0.5));
    assert_eq!(p.no_waker, 0);
    // 2 ran first on CPU 1, its target; 1 on CPU 0, not its target 2.
    assert_eq!(p.ran_on_target, Some(0.5));
    // 3 was forked onto its parent's CPU (1), 2 away from it.
    assert_eq!((p.forks, p.forks_on_parent), (2, Some(0.5)));
    assert_eq!((p.migrations, p.migrations_per_wakeup), (1, Some(0.5)));
    // Run time: CPU 0 120 + 80 = 200, CPU 1 110 + 190 + 100 = 400, CPU 2 none.
    let want = [200.0 / 600.0, 400.0 / 600.0, 0.0];
    assert!(p.run_share.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-12), "{:?}", p.run_share);
    assert_eq!((p.cpus_touched, p.cpus_used), (2, 2));
    // The statistics of the same pass are those of the analyzer alone.
    let mut a = stats::Analyzer::new(&header(3));
    for ev in &chain() {
        a.push(ev);
    }
    assert_eq!(s, a.finish());
}

#[test]
fn a_queued_wake_up_is_away_from_the_waker_and_a_runnable_task_s_places_nothing() {
    let evs = [
        e(0, 0, 5, ids::EXEC, 0, 0),
        switch(0, 0, 0, 5, RUNNABLE),
        e(0, 10, 6, ids::WAKEUP_NEW, 0, 5),
        switch(0, 20, 5, 6, BLOCKED),
        switch(0, 30, 6, 0, BLOCKED),
        // Queued to CPU 1 and recorded there, with no waker: not on the
        // waker's CPU, and not on 5's previous CPU (0).
        wake(1, 40, 5, 1, 0),
        switch(1, 50, 0, 5, RUNNABLE),
        // 5 wakes 6 on CPU 1 (the waker's), then 6 again while it waits
        // to run: the second places nothing.
        wake(1, 60, 6, 1, 5),
        wake(1, 70, 6, 1, 5),
        switch(1, 80, 5, 6, BLOCKED),
        // A task of another program, never named, runs on CPU 2.
        switch(2, 90, 0, 99, RUNNABLE),
        switch(2, 95, 99, 0, BLOCKED),
        // A task with no parent is no fork.
        e(2, 96, 8, ids::WAKEUP_NEW, 2, 0),
    ];
    let (_, p) = run(3, &evs);
    assert_eq!((p.wakeups, p.no_waker), (2, 1));
    assert_eq!(p.on_waker, Some(0.5));
    // 5 last ran on CPU 0 and was placed on 1; 6 last ran on 0, placed on 1.
    assert_eq!(p.on_prev, Some(0.0));
    assert_eq!((p.forks, p.forks_on_parent), (1, Some(1.0)));
    assert_eq!((p.migrations, p.migrations_per_wakeup), (0, Some(0.0)));
    // 99 was never named by a wake-up, fork, exec or exit: CPU 2 ran none
    // of the trace's tasks.
    assert_eq!(p.run_share[2], 0.0);
    assert_eq!(p.cpus_touched, 2);
}

#[test]
fn nothing_to_count_gives_nulls_not_zeros() {
    let (_, p) = run(2, &[switch(0, 0, 0, 7, RUNNABLE), switch(0, 10, 7, 0, BLOCKED)]);
    assert_eq!((p.wakeups, p.forks, p.migrations), (0, 0, 0));
    assert_eq!((p.on_prev, p.on_waker, p.ran_on_target, p.forks_on_parent, p.migrations_per_wakeup), (None, None, None, None, None));
    assert_eq!((p.cpus_touched, p.cpus_used), (0, 0));
}
