// SPDX-License-Identifier: GPL-2.0-only
//! The papers' simple placement policies (slocal, smove, haiku-*) on small
//! constructed situations, and every policy on every workload.

use warmcore_sim::{make_policy, POLICIES};
use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::{run, Governor, Machine, RunConfig};
use warmcore_trace::{ids, Event};

mod common;
use common::{fork_then, of, ran_on, simulate, stat, SMALL_WORKLOADS};





#[test]
fn smove_keeps_a_forked_child_local_when_the_parent_waits_within_d() {
    let m = Machine::load("default").unwrap();
    // At the start no CPU has ticked: every CPU counts as low frequency, and
    // the fair class sends the child to another idle core.
    let (out, evs) = simulate(&m, Governor::Powersave, "smove", fork_then(true));
    let armed = of(&evs, ids::MOVE_TIMER_ARMED);
    assert_eq!(armed.len(), 1, "{armed:?}");
    let (cpu, ev) = armed[0];
    assert_eq!(ev.pid, 2, "the child's timer");
    assert_eq!(cpu, 0);
    assert_eq!(ev.b(), 0, "placed on the parent's CPU");
    assert_ne!(m.cpu_core[ev.a() as usize], m.cpu_core[0], "the fair class chose another core");
    assert_eq!(ran_on(&evs, 2), vec![0], "the child ran on the parent's CPU only");
    assert_eq!(of(&evs, ids::MOVE_TIMER_CANCELLED).len(), 1);
    assert!(of(&evs, ids::MOVE_TIMER_FIRED).is_empty());
    assert!(of(&evs, ids::MIGRATE).is_empty());
    assert_eq!((stat(&out, "armed"), stat(&out, "cancelled"), stat(&out, "fired")), (1, 1, 0));
    assert_eq!(stat(&out, "timers_triggered"), 0);
}

#[test]
fn smove_migrates_the_child_to_the_first_choice_when_the_parent_keeps_running() {
    let m = Machine::load("default").unwrap();
    let (out, evs) = simulate(&m, Governor::Powersave, "smove", fork_then(false));
    let armed = of(&evs, ids::MOVE_TIMER_ARMED);
    assert_eq!(armed.len(), 1);
    let first = armed[0].1.a();
    let fired = of(&evs, ids::MOVE_TIMER_FIRED);
    assert_eq!(fired.len(), 1);
    let f = fired[0].1;
    assert_eq!((f.pid, f.a(), f.b()), (2, first, 1));
    assert_eq!(f.ts - armed[0].1.ts, 50_000, "D = 50 us");
    let mig: Vec<_> = of(&evs, ids::MIGRATE).into_iter().filter(|(_, e)| e.pid == 2).collect();
    assert_eq!(mig.len(), 1);
    assert_eq!((mig[0].1.a(), mig[0].1.b(), mig[0].1.ts), (0, first, f.ts));
    assert_eq!(ran_on(&evs, 2), vec![first]);
    assert!(of(&evs, ids::MOVE_TIMER_CANCELLED).is_empty());
    assert_eq!((stat(&out, "armed"), stat(&out, "fired"), stat(&out, "migrated")), (1, 1, 1));
    assert_eq!(stat(&out, "timers_triggered"), 1);
    // A longer D lets the child wait for the parent's CPU... which it does
    // not get within 200 us either; the timer fires 200 us after the fork.
    let (_, evs) = simulate(&m, Governor::Powersave, "smove:delay_us=200", fork_then(false));
    let a = of(&evs, ids::MOVE_TIMER_ARMED)[0].1.ts;
    assert_eq!(of(&evs, ids::MOVE_TIMER_FIRED)[0].1.ts - a, 200_000);
}

/// Every CPU runs a 10 ms task at the start (so every CPU has a tick
/// sample); 20 ms later a task forks a child and keeps computing.
fn warm_then_fork() -> (Machine, Workload) {
    let m = Machine::load("default").unwrap();
    let mut w = Workload::new("warm");
    let warm = w.add("warm", vec![Step::Compute(Amount::fixed(30e6)), Step::Exit]);
    for c in 0..m.nr_cpus {
        w.initial.push((warm, format!("warm{c}"), Some(c)));
    }
    let child = w.add("child", vec![Step::Compute(Amount::fixed(3e6)), Step::Exit]);
    let main = w.add(
        "main",
        vec![
            Step::Sleep(Amount::fixed(20e6)),
            Step::Fork(child),
            Step::Compute(Amount::fixed(6e6)),
            Step::WaitAll,
            Step::Exit,
        ],
    );
    w.initial.push((main, "main".into(), Some(0)));
    (m, w)
}

#[test]
fn smove_does_nothing_when_the_chosen_cpu_ticked_above_the_threshold() {
    let (m, w) = warm_then_fork();
    // Performance: every tick samples at least the base frequency (2.1 GHz),
    // above the default threshold (the minimum, 1.2 GHz).
    let (out, evs) = simulate(&m, Governor::Performance, "smove", w.clone());
    assert!(of(&evs, ids::TICK).iter().all(|(_, e)| e.a() >= 2_100_000));
    assert!(of(&evs, ids::MOVE_TIMER_ARMED).is_empty());
    assert_eq!(stat(&out, "armed"), 0);
    assert!(stat(&out, "high_freq") >= 1, "{}", out.policy_stats);
    // The forked child went where the fair class put it: not the parent's.
    let fork = of(&evs, ids::FORK);
    assert_eq!(fork.len(), 1);
    let child = fork[0].1.pid;
    let new = of(&evs, ids::WAKEUP_NEW).into_iter().find(|(_, e)| e.pid == child).unwrap();
    let parent_cpu = new.0;
    assert_ne!(new.1.a(), parent_cpu);
    // The same run with the threshold at the maximum frequency does arm.
    let (out, evs) = simulate(&m, Governor::Performance, "smove:threshold_khz=3000000", w.clone());
    assert_eq!(stat(&out, "armed"), 1);
    assert_eq!(of(&evs, ids::MOVE_TIMER_ARMED).len(), 1);
    // A threshold of 0 disables S_move, even at the start.
    let (out, evs) = simulate(&m, Governor::Powersave, "smove:threshold_khz=0", fork_then(false));
    assert_eq!(stat(&out, "armed"), 0);
    assert!(of(&evs, ids::MOVE_TIMER_ARMED).is_empty());
}

#[test]
fn smove_timers_only_arms_but_never_moves() {
    // Fewer Cores, More Hertz, section 4.5, Table 2: timers under S_move's condition,
    // a handler that does not migrate; the task goes where CFS chose.
    let m = Machine::load("default").unwrap();
    let (out, evs) = simulate(&m, Governor::Powersave, "smove:timers_only=on,delay_us=1", fork_then(false));
    let armed = of(&evs, ids::MOVE_TIMER_ARMED);
    assert_eq!(armed.len(), 1);
    assert_eq!(armed[0].1.a(), armed[0].1.b(), "placed on the first choice");
    // The first choice is an idle core in C6 (133 us exit latency), so the
    // 1 us timer fires before the child runs, and does nothing.
    let fired = of(&evs, ids::MOVE_TIMER_FIRED);
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0].1.b(), 0);
    assert_eq!((stat(&out, "fired"), stat(&out, "migrated")), (1, 0));
    assert!(of(&evs, ids::MIGRATE).is_empty());
}

/// A task on CPU 5 waits on a futex; a task on CPU 0 wakes it after 1 ms and
/// keeps computing.
fn futex_wakeup() -> Workload {
    let mut w = Workload::new("wake");
    let f = w.futex();
    let sleeper = w.add("sleeper", vec![Step::FutexWait(f), Step::Compute(Amount::fixed(3e5)), Step::Exit]);
    let waker = w.add(
        "waker",
        vec![Step::Compute(Amount::fixed(3e6)), Step::FutexWake(f, 1), Step::Compute(Amount::fixed(3e6)), Step::Exit],
    );
    w.initial.push((sleeper, "sleeper".into(), Some(5)));
    w.initial.push((waker, "waker".into(), Some(0)));
    w
}

#[test]
fn slocal_places_a_woken_task_on_the_wakers_cpu() {
    let m = Machine::load("default").unwrap();
    let wakeup = |policy: &str| {
        let (out, evs) = simulate(&m, Governor::Powersave, policy, futex_wakeup());
        let w = of(&evs, ids::WAKEUP);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].0, 0, "recorded on the waker's CPU");
        (out, w[0].1.a())
    };
    let (_, fair) = wakeup("cfs");
    assert_ne!(fair, 0, "the fair class keeps it off the busy waker's CPU");
    let (out, local) = wakeup("slocal");
    assert_eq!(local, 0);
    assert_eq!(stat(&out, "local_wakeups"), 1);
    assert_eq!(stat(&out, "overridden"), 1);
    // Forks too: the child goes to the parent's CPU, and runs there once
    // the parent waits.
    let (out, evs) = simulate(&m, Governor::Powersave, "slocal", fork_then(true));
    let new: Vec<_> = of(&evs, ids::WAKEUP_NEW).into_iter().filter(|(_, e)| e.pid == 2).collect();
    assert_eq!(new[0].1.a(), 0);
    assert_eq!(ran_on(&evs, 2), vec![0]);
    assert_eq!(stat(&out, "local_forks"), 1);
    // While the parent keeps running the child waits behind it, until the
    // fair class's balancing (a NOHZ kick at the next tick) lets an idle CPU
    // pull it: S_local's weakness (Fewer Cores, More Hertz, section 3.1).
    let (_, evs) = simulate(&m, Governor::Powersave, "slocal", fork_then(false));
    let new: Vec<_> = of(&evs, ids::WAKEUP_NEW).into_iter().filter(|(_, e)| e.pid == 2).collect();
    assert_eq!(new[0].1.a(), 0);
    let first_run = evs.iter().find(|(_, e)| e.id == ids::CTX_SWITCH && e.a() == 2).unwrap().1.ts;
    assert!(first_run - new[0].1.ts > 1_000_000, "the child waited for more than 1 ms");
}

#[test]
fn slocal_keeps_the_fair_choice_without_a_waker() {
    // A timer wake-up has no waker: the fair class places it.
    let m = Machine::load("default").unwrap();
    let mut w = Workload::new("timer");
    let p = w.add("napper", vec![Step::Sleep(Amount::fixed(1e6)), Step::Compute(Amount::fixed(1e5)), Step::Exit]);
    w.initial.push((p, "napper".into(), Some(3)));
    let (out, evs) = simulate(&m, Governor::Powersave, "slocal", w);
    assert_eq!(of(&evs, ids::WAKEUP)[0].1.a(), 3);
    assert_eq!(stat(&out, "local_wakeups"), 0);
    assert_eq!(stat(&out, "fair_choices"), 1);
}

#[test]
fn policy_parameters_are_checked() {
    let m = Machine::load("default").unwrap();
    let err = |s: &str| make_policy(s, &m).err().unwrap_or_else(|| panic!("{s} accepted")).to_string();
    let e = err("smove:delay_us=x");
    assert!(e.contains("delay_us") && !e.contains('\n'), "{e}");
    let e = err("smove:bogus=1");
    assert!(e.contains("unknown smove parameter 'bogus'") && e.contains("threshold_khz"), "{e}");
    let e = err("slocal:bogus=1");
    assert!(e.contains("bogus") && e.contains("slocal"), "{e}");
    assert!(make_policy("smove:delay_us=25,threshold_khz=1500000,balance=off", &m).is_ok());
    for p in POLICIES {
        assert_eq!(make_policy(p, &m).unwrap().name(), *p);
    }
}

#[test]
fn every_policy_runs_every_workload_to_completion() {
    for p in POLICIES {
        for w in SMALL_WORKLOADS {
            for g in ["powersave", "schedutil"] {
                let r = run(&RunConfig::new("default", w, p, g, 3)).unwrap_or_else(|e| panic!("{p} {w} {g}: {e}"));
                assert!(r.partial.is_none(), "{p} {w} {g}");
                assert!(r.makespan_ns > 0 && r.energy_j > 0.0, "{p} {w} {g}");
                assert!(r.policy_stats.is_object(), "{p} {w} {g}: policy_stats");
            }
        }
    }
}

/// Cores on which `pid` was switched in.
fn cores_of(m: &Machine, evs: &[(u32, Event)], pid: u32) -> Vec<u32> {
    let mut v: Vec<u32> = ran_on(evs, pid).into_iter().map(|c| m.cpu_core[c as usize]).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Two small periodic tasks: 1 ms of work every 10 ms, 20 times.
fn two_periodic() -> Workload {
    let mut w = Workload::new("two-periodic");
    let body = w.add("period", vec![Step::Compute(Amount::fixed(2.6e6)), Step::Sleep(Amount::fixed(9e6))]);
    let p = w.add("periodic", vec![Step::Repeat(body, 20), Step::Exit]);
    w.initial.push((p, "a".into(), None));
    w.initial.push((p, "b".into(), None));
    w
}

#[test]
fn haiku_power_saving_packs_small_tasks_where_low_latency_spreads_them() {
    let m = Machine::load("default").unwrap();
    let (out, evs) = simulate(&m, Governor::Performance, "haiku-low-latency", two_periodic());
    let (a, b) = (cores_of(&m, &evs, 1), cores_of(&m, &evs, 2));
    assert_eq!((a.len(), b.len()), (1, 1), "each stays on its core: {a:?} {b:?}");
    assert_ne!(a, b, "low latency gives each task its own idle core");
    assert!(stat(&out, "idle_core_choices") >= 2, "{}", out.policy_stats);
    assert!(stat(&out, "wake_warm") >= 30, "{}", out.policy_stats);

    let (out, evs) = simulate(&m, Governor::Performance, "haiku-power-saving", two_periodic());
    let (a, b) = (cores_of(&m, &evs, 1), cores_of(&m, &evs, 2));
    assert_eq!(a, b, "power saving packs both on one core");
    assert_eq!(a.len(), 1);
    assert_eq!(out.policy_stats["small_task_core"].as_u64(), Some(a[0] as u64));
    assert!(stat(&out, "small_task_core_choices") >= 2, "{}", out.policy_stats);
    // Only that core's CPUs ever ran a task.
    let used: std::collections::BTreeSet<u32> = evs
        .iter()
        .filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() != 0)
        .map(|(c, _)| m.cpu_core[*c as usize])
        .collect();
    assert_eq!(used.len(), 1, "{used:?}");
}

/// Four CPU-bound tasks all started on CPU 0.
fn pile_on_cpu0() -> Workload {
    let mut w = Workload::new("pile");
    let p = w.add("loop", vec![Step::Compute(Amount::fixed(100.0 * 2.6e6)), Step::Exit]);
    for i in 0..4 {
        w.initial.push((p, format!("t{i}"), Some(0)));
    }
    w
}

#[test]
fn haiku_low_latency_rebalances_an_overloaded_core_at_quantum_ends() {
    let m = Machine::load("default").unwrap();
    let (out, evs) = simulate(&m, Governor::Performance, "haiku-low-latency", pile_on_cpu0());
    // The core's two CPUs take the first two; the others wait in the core's
    // queue, and quantum ends move tasks to less loaded cores.
    assert!(stat(&out, "quantum_ends") >= 1, "{}", out.policy_stats);
    assert!(stat(&out, "rebalance_moves") >= 2, "{}", out.policy_stats);
    let cores: std::collections::BTreeSet<u32> = (1..=4).flat_map(|pid| cores_of(&m, &evs, pid)).collect();
    assert!(cores.len() >= 3, "tasks ran on cores {cores:?}");
    assert!(evs.iter().any(|(_, e)| e.id == ids::MIGRATE && m.cpu_core[e.a() as usize] != m.cpu_core[e.b() as usize]));
    // On one core (two SMT threads) the work would take about
    // 400 ms / (2 x 0.62) = 320 ms; spread, little more than one task's
    // 100 ms.
    assert!(out.makespan_ns < 200_000_000, "{} ns", out.makespan_ns);
}

/// Six tasks started on CPU 0, each running 3 ms and sleeping 2 ms, 30
/// times: a needed load of about 600 each, 1800 per CPU on core 0.
fn periodic_pile_on_cpu0() -> Workload {
    let mut w = Workload::new("periodic-pile");
    let body = w.add("period", vec![Step::Compute(Amount::fixed(3.0 * 2.6e6)), Step::Sleep(Amount::fixed(2e6))]);
    let p = w.add("periodic", vec![Step::Repeat(body, 30), Step::Exit]);
    for i in 0..6 {
        w.initial.push((p, format!("t{i}"), Some(0)));
    }
    w
}

#[test]
fn haiku_power_saving_moves_load_off_a_core_above_high() {
    let m = Machine::load("default").unwrap();
    let (out, evs) = simulate(&m, Governor::Performance, "haiku-power-saving", periodic_pile_on_cpu0());
    let moved = stat(&out, "wake_warm_moved") + stat(&out, "rebalance_moves");
    assert!(moved >= 1, "{}", out.policy_stats);
    let cores: std::collections::BTreeSet<u32> = (1..=6).flat_map(|pid| cores_of(&m, &evs, pid)).collect();
    assert!(cores.len() >= 2, "tasks ran on cores {cores:?}");
    // Power saving moves only what makes the loads closer: it still packs,
    // using fewer cores than low latency does for the same tasks.
    let (_, ll) = simulate(&m, Governor::Performance, "haiku-low-latency", periodic_pile_on_cpu0());
    let ll_cores: std::collections::BTreeSet<u32> = (1..=6).flat_map(|pid| cores_of(&m, &ll, pid)).collect();
    assert!(cores.len() < ll_cores.len(), "power saving {cores:?}, low latency {ll_cores:?}");
}

#[test]
fn haiku_quantum_is_the_modes_normal_priority_quantum() {
    let m = Machine::load("default").unwrap();
    // Alone on its core a task is never preempted: its quantum is renewed.
    let mut w = Workload::new("alone");
    let p = w.add("loop", vec![Step::Compute(Amount::fixed(20.0 * 2.6e6)), Step::Exit]);
    w.initial.push((p, "t".into(), Some(0)));
    let (out, evs) = simulate(&m, Governor::Performance, "haiku-low-latency", w);
    assert_eq!(stat(&out, "quantum_ends"), 0);
    // About 20 ms of work in quanta of 2 ms (base 1000 us x 2).
    let r = stat(&out, "quantum_renewals");
    assert!((8..=11).contains(&r), "{r}");
    assert_eq!(of(&evs, ids::CTX_SWITCH).iter().filter(|(_, e)| e.a() == 1).count(), 1, "never switched out");
    // With others waiting in the core's queue, the first preemption comes
    // one quantum after the start: 2 ms in low latency, 6 ms (2000 us x 3)
    // in power saving; the bound of the maximum latency (5 ms, 20 ms) over
    // one waiting thread per CPU does not cut it.
    for (policy, q) in [("haiku-low-latency", 2_000_000u64), ("haiku-power-saving", 6_000_000)] {
        let (_, evs) = simulate(&m, Governor::Performance, policy, pile_on_cpu0());
        let start = evs.iter().find(|(_, e)| e.id == ids::CTX_SWITCH && e.a() != 0).unwrap().1.ts;
        let pre = evs
            .iter()
            .find(|(_, e)| {
                e.id == ids::CTX_SWITCH && e.pid != 0 && e.b() == warmcore_trace::event::prev_state::RUNNABLE
            })
            .expect("a preemption")
            .1
            .ts;
        assert_eq!(pre - start, q, "{policy}");
    }
}

#[test]
fn haiku_cache_warmth_is_core_active_time_in_low_latency_and_wall_time_in_power_saving() {
    // A task runs 1 ms, sleeps 150 ms, runs again. Its core stays idle
    // meanwhile: in low latency its cache is still warm (the core was not
    // active for 100 ms); in power saving it is cold (150 ms > 100 ms).
    let m = Machine::load("default").unwrap();
    let mk = |sleep_ms: f64| {
        let mut w = Workload::new("nap");
        let p = w.add(
            "napper",
            vec![
                Step::Compute(Amount::fixed(2.6e6)),
                Step::Sleep(Amount::fixed(sleep_ms * 1e6)),
                Step::Compute(Amount::fixed(2.6e6)),
                Step::Exit,
            ],
        );
        w.initial.push((p, "napper".into(), None));
        w
    };
    let (out, _) = simulate(&m, Governor::Performance, "haiku-low-latency", mk(150.0));
    assert_eq!((stat(&out, "wake_warm"), stat(&out, "wake_cold")), (1, 0), "{}", out.policy_stats);
    let (out, _) = simulate(&m, Governor::Performance, "haiku-power-saving", mk(150.0));
    assert_eq!((stat(&out, "wake_warm"), stat(&out, "wake_cold")), (0, 1), "{}", out.policy_stats);
    // In low latency the cache goes cold when the core ran other work for
    // 100 ms: here a busy task on the SMT sibling of the napper's CPU.
    let mut w = mk(150.0);
    w.initial[0].2 = Some(0);
    let busy = w.add("busy", vec![Step::Compute(Amount::fixed(200.0 * 2.6e6)), Step::Exit]);
    w.initial.push((busy, "busy".into(), Some(m.siblings(0)[1])));
    let (out, _) = simulate(&m, Governor::Performance, "haiku-low-latency", w);
    assert_eq!((stat(&out, "wake_warm"), stat(&out, "wake_cold")), (0, 1), "{}", out.policy_stats);
    let (out, _) = simulate(&m, Governor::Performance, "haiku-power-saving", mk(50.0));
    assert_eq!((stat(&out, "wake_warm"), stat(&out, "wake_cold")), (1, 0), "{}", out.policy_stats);
}
