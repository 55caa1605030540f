// SPDX-License-Identifier: GPL-2.0-only
//! `scx:warm` (crates/sched/src/bpf/warm.bpf.c): each mechanism of
//! docs/warm.md, checked on the program the kernel loads, against the same
//! run with the mechanism switched off or against the built-in selection.

use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::{Governor, Machine};
use warmcore_trace::{ids, Event};

mod common;
use common::{
    deepest_exit_ns, fork_wait_chain, light_run, mean_wakeup_latency, of, pile, pile_first_runs, ran_on, simulate, stat,
    workload_cpus, MACHINES,
};

/// CPUs that ran a task of the workload.
fn cpus(evs: &[(u32, Event)]) -> std::collections::BTreeSet<u32> {
    workload_cpus(evs, &[])
}

#[test]
fn warm_keeps_a_fork_wait_chain_on_two_cpus() {
    for &name in MACHINES {
        let m = common::quiet(name);
        // Not held in polling: each child queues on its parent's CPU (and
        // the idle CPU kicked then pulls it before the parent waits:
        // docs/warm.md).
        let (out, _) = simulate(&m, Governor::Powersave, "scx:warm:poll_cpus=0", fork_wait_chain(100));
        assert!(stat(&out, "warm_local") >= 100, "{name}: {}", out.policy_stats);
        // Held in polling (the default), or without step 3, each child after
        // the first goes where its elder sibling ran.
        for policy in ["scx:warm", "scx:warm:local=off,poll_cpus=0"] {
            let (out, evs) = simulate(&m, Governor::Powersave, policy, fork_wait_chain(100));
            let warm = cpus(&evs);
            assert!(warm.len() <= 2, "{name}: {policy}: the chain ran on {warm:?}");
            assert!(stat(&out, "warm_fork") >= 95 && stat(&out, "warm_local") == 0, "{name}: {policy}: {}", out.policy_stats);
        }
        let (_, evs) = simulate(&m, Governor::Powersave, "scx:warm:local=off", fork_wait_chain(100));
        let warm = cpus(&evs);
        let (_, evs) = simulate(&m, Governor::Powersave, "scx:default", fork_wait_chain(100));
        assert!(warm.len() < cpus(&evs).len(), "{name}: warm {warm:?}, default {:?}", cpus(&evs));
        // Without either and the search, the built-in selection takes the
        // idle CPUs round-robin.
        let (out, evs) = simulate(&m, Governor::Powersave, "scx:warm:local=off,fork=off,compact=off", fork_wait_chain(100));
        assert_eq!(stat(&out, "warm_local") + stat(&out, "warm_fork") + stat(&out, "warm_found"), 0);
        assert!(cpus(&evs).len() > 2, "{name}: {:?}", cpus(&evs));
    }
}

#[test]
fn warm_a_child_whose_parent_runs_on_is_pulled_by_an_idle_cpu() {
    for &name in MACHINES {
        let m = common::quiet(name);
        // The parent computes 6 ms after the fork: an idle CPU, kicked when
        // the child was queued, takes it after its idle state's exit (a
        // set not held in polling: step 3 applies).
        let (out, evs) = simulate(&m, Governor::Powersave, "scx:warm:poll_cpus=0", common::fork_then(false));
        let child = of(&evs, ids::WAKEUP_NEW).last().unwrap().1.pid;
        let on = ran_on(&evs, child);
        assert!(on.len() == 1 && on[0] != 0, "{name}: the child ran on {on:?}");
        assert!(stat(&out, "pulled") >= 1 && stat(&out, "warm_local") >= 1, "{name}: {}", out.policy_stats);
        let fork = of(&evs, ids::WAKEUP_NEW).last().unwrap().1.ts;
        let start = evs.iter().find(|(_, e)| e.id == ids::CTX_SWITCH && e.a() == child).unwrap().1.ts;
        assert!(start - fork <= deepest_exit_ns(&m) + 100_000, "{name}: the child waited {} ns", start - fork);
    }
}

/// Tasks on CPUs 1 and 5 run 1 ms and sleep 0.3 ms, 50 times.
fn two_sleepers() -> Workload {
    let mut w = Workload::new("sleepers");
    let body = w.add("body", vec![Step::Compute(Amount::work_us(1000.0, 0.0)), Step::Sleep(Amount::fixed(3e5))]);
    let main = w.add("main", vec![Step::Repeat(body, 50), Step::Exit]);
    w.initial.push((main, "a".into(), Some(1)));
    w.initial.push((main, "b".into(), Some(5)));
    w
}

#[test]
fn warm_keeps_a_woken_task_on_its_idle_warm_cpu() {
    let m = common::quiet("xeon-gold-5218-2s");
    let (out, evs) = simulate(&m, Governor::Powersave, "scx:warm", two_sleepers());
    let pids: Vec<u32> = of(&evs, ids::WAKEUP_NEW).iter().map(|(_, e)| e.pid).collect();
    for &p in &pids {
        assert_eq!(ran_on(&evs, p).len(), 1, "{p}: {:?}", ran_on(&evs, p));
    }
    assert!(stat(&out, "warm_prev") >= 90, "{}", out.policy_stats);
    // Without it, the search finds the same CPUs (each is its die's
    // lowest idle warm one): the counter is the step's.
    let (out, evs) = simulate(&m, Governor::Powersave, "scx:warm:prev=off", two_sleepers());
    assert_eq!(stat(&out, "warm_prev"), 0);
    assert!(stat(&out, "warm_found") >= 90, "{}", out.policy_stats);
    for &p in &pids {
        assert_eq!(ran_on(&evs, p).len(), 1);
    }
}

#[test]
fn warm_set_grows_under_load_and_shrinks_within_a_window() {
    let m = common::quiet("xeon-gold-5218-2s");
    let w = common::burst_then_tail();
    let (out, _) = simulate(&m, Governor::Powersave, "scx:warm", w.clone());
    let (joined, left) = (stat(&out, "warm_joined"), stat(&out, "warm_left"));
    assert!(joined >= 16, "grew: {}", out.policy_stats);
    // In the set at the end: the tail's CPU and the one it may have moved
    // from; the burst's CPUs left within a window of their last run.
    assert!(joined - left <= 2, "shrank: {}", out.policy_stats);
    // A window longer than the whole tail keeps them.
    let (out, _) = simulate(&m, Governor::Powersave, "scx:warm:window_us=1000000", w);
    assert!(stat(&out, "warm_joined") - stat(&out, "warm_left") >= 16, "{}", out.policy_stats);
}

#[test]
fn warm_spreads_over_idle_cpus_when_the_set_has_none_idle() {
    for &name in MACHINES {
        let m = common::quiet(name);
        let (out, evs) = simulate(&m, Governor::Performance, "scx:warm", pile(&m));
        pile_first_runs(&m, name, &evs);
        assert_eq!(cpus(&evs).len() as u32, m.nr_cpus, "{name}: every CPU ran one");
        assert!(stat(&out, "warm_joined") >= m.nr_cpus as u64 / 2, "{name}: {}", out.policy_stats);
    }
}

#[test]
fn warm_cpus_ask_for_the_top_frequency_only_with_the_hint() {
    let m = common::quiet("xeon-gold-5218-2s");
    let top = m.turbo_by_active[1] as f64;
    // Not held in polling (poll_cpus=0), whose C0 keeps the frequency too:
    // the hint alone. A window longer than the sleep: the core stays in the
    // set, at the top.
    let kept = light_run(&m, Governor::Schedutil, "scx:warm:window_us=10000,poll_cpus=0").2;
    assert!(kept > 0.9 * top, "kept: {kept} kHz, the top is {top}");
    // Without the hint its target follows the task's 4 % utilisation down.
    let off = light_run(&m, Governor::Schedutil, "scx:warm:window_us=10000,perf_cpus=0,poll_cpus=0").2;
    assert!(off < 0.5 * top, "perf_cpus=0: {off} kHz");
}

/// Tasks on CPUs 2, 4, ... (`n` of them) each run 200 us every 5 ms, 100
/// times.
fn periodic_on(n: u32) -> Workload {
    let mut w = Workload::new("light");
    let tick = w.add("tick", vec![Step::Compute(Amount::work_us(200.0, 0.0)), Step::Sleep(Amount::fixed(4.8e6))]);
    let main = w.add("main", vec![Step::Repeat(tick, 100), Step::Exit]);
    for i in 1..=n {
        w.initial.push((main, format!("light{i}"), Some(2 * i)));
    }
    w
}

/// The mean wake-up latency (ns) of `n` periodic tasks under `policy`,
/// after the first 100 ms.
fn periodic_wakeup_latency(m: &Machine, policy: &str, n: u32) -> f64 {
    let (_, evs) = simulate(m, Governor::Powersave, policy, periodic_on(n));
    let pids: Vec<u32> = of(&evs, ids::WAKEUP_NEW).iter().map(|(_, e)| e.pid).collect();
    pids.iter().map(|&p| mean_wakeup_latency(&evs, p, 100_000_000)).sum::<f64>() / pids.len() as f64
}

#[test]
fn warm_holds_a_small_set_in_polling_through_pm_qos() {
    // common::light_periodic's task: its core stays in the set (a 10 ms
    // window).
    let m = common::quiet("xeon-gold-5218-2s");
    let shallowest_exit = m.spec.idle.iter().map(|s| s.exit_latency_us).filter(|&l| l > 0).min().unwrap() * 1000;
    // Held in the polling state (poll_cpus, default 4), the core stays in
    // C0 at its frequency and wakes at once; not held, it sleeps in a
    // deeper state, its frequency falls and each wake-up pays the exit.
    let (f_held, lat_held) = common::light_wakeups(&m, "scx:warm:window_us=10000");
    let (f_off, lat_off) = common::light_wakeups(&m, "scx:warm:window_us=10000,poll_cpus=0");
    assert!(f_held > 1.2 * f_off, "frequency at switch-in: held {f_held:.0} kHz, not held {f_off:.0} kHz");
    assert!(lat_held < shallowest_exit as f64, "held: {lat_held:.0} ns to wake, the shallowest exit is {shallowest_exit} ns");
    assert!(lat_off >= shallowest_exit as f64, "not held: {lat_off:.0} ns to wake");
    // Six such tasks make a set of six: held with poll_cpus=8, not with the
    // default 4 (a parallel load's idle cores may sleep deep).
    let small = periodic_wakeup_latency(&m, "scx:warm:window_us=10000,poll_cpus=8", 6);
    let large = periodic_wakeup_latency(&m, "scx:warm:window_us=10000", 6);
    assert!(small < shallowest_exit as f64, "six held: {small:.0} ns to wake");
    assert!(large >= shallowest_exit as f64, "six not held: {large:.0} ns to wake");
}

/// A parent on CPU 0 forks 24 children 100 us apart, each computing 20 ms:
/// more than a die's 16 cores of the 5218, fewer than its 32 CPUs.
fn half_load() -> Workload {
    let mut w = Workload::new("half");
    let child = w.add("child", vec![Step::Compute(Amount::work_us(20_000.0, 0.0)), Step::Exit]);
    let step = w.add("step", vec![Step::Fork(child), Step::Compute(Amount::work_us(100.0, 0.0))]);
    let main = w.add("main", vec![Step::Repeat(step, 24), Step::WaitAll, Step::Exit]);
    w.initial.push((main, "main".into(), Some(0)));
    w
}

#[test]
fn warm_keeps_a_parallel_load_on_one_die() {
    let m = common::quiet("xeon-gold-5218-2s");
    // The dies the tasks ran on (the parent's is CPU 0's). A large set's
    // forks queue on the parent's CPU (step 3): without it they reach the
    // search.
    let dies = |policy: &str| -> std::collections::BTreeSet<u32> {
        let (_, evs) = simulate(&m, Governor::Schedutil, policy, half_load());
        cpus(&evs).into_iter().map(|c| m.cpu_die[c as usize]).collect()
    };
    // A set larger than perf_cpus: the die's idle CPUs, SMT siblings
    // included, before the other die's idle cores.
    let warm = dies("scx:warm:local=off");
    // Without it, the built-in selection takes the other die's idle cores.
    let off = dies("scx:warm:local=off,die=off");
    assert!(warm.len() == 1 && off.len() == 2, "dies: warm {warm:?}, die=off {off:?}");
}

/// A parent on CPU 0 forks 300 tasks that each run 100 us and sleep 100 us
/// for 50 ms: the tuning suite's wake-up storm, smaller, still more demand
/// than the machine has CPUs.
fn storm() -> Workload {
    let mut w = Workload::new("storm");
    let body = w.add("period", vec![Step::Compute(Amount::work_us(100.0, 0.0)), Step::Sleep(Amount::fixed(1e5))]);
    let task = w.add("task", vec![Step::RepeatFor(body, 50_000_000), Step::Exit]);
    let mut main: Vec<Step> = (0..300).map(|_| Step::Fork(task)).collect();
    main.extend([Step::WaitAll, Step::Exit]);
    let main = w.add("main", main);
    w.initial.push((main, "main".into(), Some(0)));
    w
}

#[test]
fn warm_sends_a_fork_to_the_least_loaded_cpu_when_none_is_idle() {
    let m = common::quiet("xeon-gold-5218-2s");
    // When the last task was forked, and the most tasks one CPU's queue
    // held.
    let run = |policy: &str| -> (u64, u32) {
        let (_, evs) = simulate(&m, Governor::Schedutil, policy, storm());
        let last_fork = of(&evs, ids::FORK).last().unwrap().1.ts;
        let deepest = of(&evs, ids::RQ_SIZE).iter().map(|(_, e)| e.a()).max().unwrap();
        (last_fork, deepest)
    };
    // Once every CPU is busy, each fork goes to the shortest queue: no
    // queue grows far past the tasks' share (300 on 64 CPUs), and the
    // parent, with as few ahead of it as any, forks on.
    let (_, deepest) = run("scx:warm");
    assert!(deepest <= 20, "a queue of {deepest}");
    // Without it, the children queue on the parent's CPU, where the woken
    // ones return: they pile there.
    let (_, deepest_off) = run("scx:warm:fork_balance=off");
    assert!(deepest_off >= 100, "fork_balance=off: a queue of {deepest_off}");
    // A new task that starts level with the clock of virtual time
    // (fork_debit=off) queues ahead of its parent there too, and the
    // parent forks slower behind the pile.
    let (fork_at, _) = run("scx:warm:fork_debit=off");
    let (fork_off, _) = run("scx:warm:fork_balance=off,fork_debit=off");
    assert!(3 * fork_at < 2 * fork_off, "last fork at {fork_at} ns, {fork_off} ns with fork_balance=off");
}

/// `pairs` pairs of tasks that hand a token back and forth `rounds` times,
/// each computing 20 us with it, after a first millisecond: through pipes
/// (a writer wakes its reader with SCX_WAKE_SYNC), or through futexes (no
/// hand-off flag).
fn ping_pong(pairs: u32, rounds: u64, pipes: bool) -> Workload {
    let mut w = Workload::new("ping-pong");
    let mut main = vec![];
    for _ in 0..pairs {
        let (give, take): (Vec<Step>, Vec<Step>) = if pipes {
            let (a, b) = (w.pipe(1), w.pipe(1));
            (vec![Step::PipeWrite(a), Step::PipeRead(b)], vec![Step::PipeRead(a), Step::PipeWrite(b)])
        } else {
            let (a, b) = (w.futex(), w.futex());
            (vec![Step::FutexWake(a, 1), Step::FutexWait(b)], vec![Step::FutexWait(a), Step::FutexWake(b, 1)])
        };
        let work = || Step::Compute(Amount::work_us(20.0, 0.0));
        let first = w.add("ping", vec![work(), give[0].clone(), give[1].clone()]);
        // The partner sleeps before it answers: each CPU is busy about a
        // fifth of the time, which its utilisation follows.
        let second = w.add("pong", vec![take[0].clone(), work(), Step::Sleep(Amount::fixed(6e4)), take[1].clone()]);
        // The first round waits until its partner waits (a futex's wake-up
        // with no waiter is lost).
        let ping = w.add("pinger", vec![Step::Sleep(Amount::fixed(1e6)), Step::Repeat(first, rounds), Step::Exit]);
        let pong = w.add("ponger", vec![Step::Repeat(second, rounds), Step::Exit]);
        main.extend([Step::Fork(pong), Step::Fork(ping)]);
    }
    main.extend([Step::WaitAll, Step::Exit]);
    let main = w.add("main", main);
    w.initial.push((main, "main".into(), Some(0)));
    w
}

/// The mean frequency (kHz) at the switch-ins of every task of `evs` after
/// the first 20 ms.
fn mean_switch_in_khz(evs: &[(u32, Event)]) -> f64 {
    let pids: Vec<u32> = of(evs, ids::WAKEUP_NEW).iter().map(|(_, e)| e.pid).collect();
    let f: Vec<u32> = pids.iter().flat_map(|&p| common::freq_at_switch_in(evs, p, 20_000_000)).collect();
    assert!(f.len() > 1000, "{} switch-ins", f.len());
    f.iter().map(|&k| k as f64).sum::<f64>() / f.len() as f64
}

#[test]
fn warm_cpus_that_run_a_hand_off_ask_for_the_top_in_a_large_set() {
    for &name in MACHINES {
        let m = common::quiet(name);
        // Eight pairs: a set of more than perf_cpus (4) CPUs, each busy a
        // fifth to a half of the time.
        let run = |policy: &str, pipes: bool| {
            let (out, evs) = simulate(&m, Governor::Schedutil, policy, ping_pong(8, 2000, pipes));
            assert!(stat(&out, "warm_joined") > 4, "{name}: {policy}: {}", out.policy_stats);
            (mean_switch_in_khz(&evs), evs)
        };
        let (on, _) = run("scx:warm", true);
        let (off, _) = run("scx:warm:handoff=off", true);
        // At least the turbo of 16 active cores a socket (the 16 tasks'
        // most), where their utilisation alone asks for less.
        let top = m.turbo_by_active[16.min(m.turbo_by_active.len() - 1)] as f64;
        assert!(on >= 0.95 * top, "{name}: at switch-in {on:.0} kHz, the top is {top}");
        assert!(off < 0.9 * on, "{name}: at switch-in {on:.0} kHz, {off:.0} kHz with handoff=off");
        // A futex's wake-up is no hand-off: the same run either way.
        let (_, futex_on) = run("scx:warm", false);
        let (_, futex_off) = run("scx:warm:handoff=off", false);
        assert!(futex_on == futex_off, "{name}: the futex run differs with handoff=off");
    }
}

#[test]
fn warm_starts_a_new_task_a_slice_behind_so_a_forking_parent_keeps_its_share() {
    let m = common::quiet("xeon-gold-5218-2s");
    // When the last of the storm's 300 tasks was forked: the parent forks
    // onto a machine its children fill, and shares its CPU with the tasks
    // that wake there.
    let last_fork = |policy: &str| {
        let (_, evs) = simulate(&m, Governor::Schedutil, policy, storm());
        of(&evs, ids::FORK).last().unwrap().1.ts
    };
    let behind = last_fork("scx:warm");
    let level = last_fork("scx:warm:fork_debit=off");
    // 12.4 ms against 31.8 ms when this was written.
    assert!(2 * behind < level, "last fork at {behind} ns, {level} ns with fork_debit=off");
}
