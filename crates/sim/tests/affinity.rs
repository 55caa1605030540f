// SPDX-License-Identifier: GPL-2.0-only
//! Allowed CPUs (sched_setaffinity) in the fair-class models and the
//! sched_ext host, the watchdog, and the guarantees `warmcore hunt` checks:
//! each rule of docs/hunt.md, "The kernel's rules the simulator follows"
//! and "What it checks", against the kernel's semantics.

use std::collections::VecDeque;

use warmcore_sim::engine::{Engine, Limits, Outcome};
use warmcore_sim::make_policy;
use warmcore_sim::policy::{Enq, Policy, Wake};
use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::{Governor, Machine, Sim, Tid};
use warmcore_trace::{ids, Event};

mod common;
use common::{ran_on, Collect};

/// The fixture of `warmcore hunt`'s tests: a scheduler that parks the
/// tasks not allowed on CPU 0 (and with ignore_affinity=true puts every
/// task on CPU 0), and counts ops.set_cpumask.
fn broken() -> String {
    format!("bpf:{}/../cli/tests/fixtures/hunt-broken", env!("CARGO_MANIFEST_DIR"))
}

const POLICIES: &[&str] = &["cfs", "eevdf", "smove", "scx:default", "scx:bpfland"];

fn run_with(m: &Machine, p: Box<dyn Policy>, w: Workload) -> (Outcome, Vec<(u32, Event)>) {
    let c = Collect::default();
    let mut e = Engine::new(m.clone(), Governor::Powersave, p, w, 1, Box::new(c.clone())).unwrap();
    let out = e.run(Limits { max_sim_ns: 60_000_000_000, ..Limits::default() }).unwrap();
    let evs = c.0.borrow().clone();
    (out, evs)
}

fn run(m: &Machine, policy: &str, w: Workload) -> (Outcome, Vec<(u32, Event)>) {
    let p = make_policy(policy, m).unwrap_or_else(|e| panic!("{policy}: {e}"));
    run_with(m, p, w)
}

fn pids_of(evs: &[(u32, Event)], n: usize) -> Vec<u32> {
    let mut v: Vec<u32> = evs.iter().filter(|(_, e)| e.id == ids::WAKEUP_NEW).map(|(_, e)| e.pid).collect();
    v.truncate(n);
    v
}

fn us(x: f64) -> Amount {
    Amount::work_us(x, 0.0)
}

/// Tasks that first allow only `cpus`, then compute and sleep in a loop.
fn narrowed(tasks: usize, cpus: &[u32]) -> Workload {
    let mut w = Workload::new("narrowed");
    let body = w.add("body", vec![Step::Compute(us(300.0)), Step::Sleep(Amount::fixed(100_000.0))]);
    let main = w.add("main", vec![Step::Compute(us(500.0)), Step::Affinity(cpus.into(), false), Step::Repeat(body, 20), Step::Exit]);
    for i in 0..tasks {
        w.initial.push((main, format!("t{i}"), None));
    }
    w
}

#[test]
fn a_running_task_that_narrows_its_cpus_moves_and_then_runs_only_there() {
    // core.c, affine_move_task: a running task whose CPU left its set is
    // moved; every later placement and balance keeps it inside the set.
    let m = common::quiet("default");
    for &policy in POLICIES {
        for cpus in [&[3u32][..], &[5, 6]] {
            let (out, evs) = run(&m, policy, narrowed(6, cpus));
            assert!(out.partial.is_none(), "{policy}: {:?}", out.partial);
            for pid in pids_of(&evs, 6) {
                let on = ran_on(&evs, pid);
                assert!(!on.is_empty(), "{policy}: {pid} never ran");
                // Its first stint, before the step, may be anywhere.
                assert!(on[1..].iter().all(|c| cpus.contains(c)), "{policy} {cpus:?}: task {pid} ran on {on:?}");
            }
        }
    }
}

#[test]
fn a_parent_changes_its_childrens_cpus_while_they_run_queue_or_sleep_and_children_inherit() {
    // dup_task_struct copies the mask; sched_setaffinity of another task
    // applies whatever its state.
    let m = common::quiet("default");
    for &policy in POLICIES {
        let mut w = Workload::new("children");
        let body = w.add("body", vec![Step::Compute(us(200.0)), Step::Sleep(Amount::fixed(300_000.0))]);
        let child = w.add("child", vec![Step::Repeat(body, 60), Step::Exit]);
        let mut steps = vec![Step::Affinity([1u32, 2].into(), false)];
        steps.extend((0..6).map(|_| Step::Fork(child)));
        steps.extend([Step::Compute(us(2_000.0)), Step::Affinity([7u32].into(), true), Step::WaitAll, Step::Exit]);
        let main = w.add("main", steps);
        w.initial.push((main, "main".into(), None));
        let (out, evs) = run(&m, policy, w);
        assert!(out.partial.is_none(), "{policy}: {:?}", out.partial);
        let kids: Vec<u32> = evs.iter().filter(|(_, e)| e.id == ids::FORK).map(|(_, e)| e.pid).collect();
        assert_eq!(kids.len(), 6);
        // Each child runs on CPUs 1 and 2 (its parent's) until the parent's
        // change, then only on CPU 7. The change is the instant the parent
        // starts waiting (its next step).
        let parent = evs.iter().find(|(_, e)| e.id == ids::FORK).unwrap().1.a();
        let change = evs.iter().find(|(_, e)| e.id == ids::WAIT_PID && e.pid == parent).unwrap().1.ts;
        let (mut before, mut after) = (0, 0);
        for k in kids {
            for (c, e) in evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() == k) {
                if e.ts < change {
                    assert!([1, 2].contains(c), "{policy}: child {k} ran on {c} before the change");
                    before += 1;
                } else {
                    assert_eq!(*c, 7, "{policy}: child {k} ran on {c} after the change");
                    after += 1;
                }
            }
        }
        assert!(before > 0 && after > 0, "{policy}: {before} runs before the change, {after} after");
    }
}

#[test]
fn a_mask_of_cpus_the_machine_lacks_changes_nothing() {
    // sched_setaffinity: a mask that does not intersect the valid CPUs is
    // EINVAL and the task keeps its CPUs; CPUs beyond the machine in a
    // mask that has others are dropped.
    let m = common::quiet("default");
    for &policy in POLICIES {
        let mut w = Workload::new("einval");
        let body = w.add("body", vec![Step::Compute(us(300.0)), Step::Sleep(Amount::fixed(50_000.0))]);
        let main = w.add(
            "main",
            vec![Step::Affinity([4u32].into(), false), Step::Affinity([999u32].into(), false), Step::Affinity([4u32, 500].into(), false), Step::Repeat(body, 10), Step::Exit],
        );
        for i in 0..3 {
            w.initial.push((main, format!("t{i}"), None));
        }
        let (out, evs) = run(&m, policy, w);
        assert!(out.partial.is_none(), "{policy}: {:?}", out.partial);
        for pid in pids_of(&evs, 3) {
            let on = ran_on(&evs, pid);
            assert!(on[1..].iter().all(|&c| c == 4), "{policy}: {pid} ran on {on:?}");
        }
    }
}

#[test]
fn sched_ext_calls_set_cpumask_with_the_new_mask() {
    // ext.c, set_cpus_allowed_scx: ops.set_cpumask(p, p->cpus_ptr) at each
    // change, with the mask the task now has.
    let m = common::quiet("default");
    let mut w = Workload::new("set_cpumask");
    let main = w.add(
        "main",
        vec![Step::Affinity([0u32, 1, 2].into(), false), Step::Compute(us(100.0)), Step::Affinity([0u32, 5].into(), false), Step::Compute(us(100.0)), Step::Exit],
    );
    w.initial.push((main, "main".into(), None));
    let (out, _) = run(&m, &broken(), w);
    assert!(out.partial.is_none(), "{:?}", out.partial);
    assert_eq!(out.policy_stats["nr_set_cpumask"], 2, "{}", out.policy_stats);
    assert_eq!(out.policy_stats["last_weight"], 2, "{}", out.policy_stats);
}

#[test]
fn a_mask_equal_to_the_tasks_own_changes_nothing() {
    // core.c, __set_cpus_allowed_ptr_locked: when the new mask equals
    // p->cpus_mask it returns before __do_set_cpus_allowed, so neither
    // ops.set_cpumask nor the change's dequeue and enqueue (ops.quiescent,
    // ops.runnable) happens. The same CPUs in another order, or a mask that
    // names CPUs the machine lacks besides them, are the same mask.
    let m = common::quiet("default");
    let mut w = Workload::new("same-mask");
    let step = || Step::Compute(us(100.0));
    let main = w.add(
        "main",
        vec![
            Step::Affinity([0u32, 1, 2].into(), false),
            step(),
            Step::Affinity([2u32, 1, 0].into(), false),
            step(),
            Step::Affinity([0u32, 1, 2, 900].into(), false),
            step(),
            Step::Affinity([0u32, 5].into(), false),
            step(),
            Step::Exit,
        ],
    );
    w.initial.push((main, "main".into(), None));
    let (out, _) = run(&m, &broken(), w);
    assert!(out.partial.is_none(), "{:?}", out.partial);
    let s = &out.policy_stats;
    assert_eq!(s["nr_set_cpumask"], 2, "{s}");
    assert_eq!((s["nr_quiescent_save"].as_u64(), s["nr_runnable_restore"].as_u64()), (Some(2), Some(2)), "{s}");
    assert_eq!(s["nr_out_of_turn"], 0, "{s}");
}

#[test]
fn sched_ext_refuses_an_insert_into_the_local_queue_of_a_cpu_the_task_may_not_use() {
    // ext.c, dispatch_to_local_dsq: task_can_run_on_remote_rq(..., true)
    // ejects the scheduler with the kernel's message.
    let m = common::quiet("default");
    let (out, _) = run(&m, &format!("{}:ignore_affinity=true", broken()), narrowed(1, &[3]));
    let why = out.partial.expect("ejected");
    assert!(out.ejected, "{why}");
    assert!(why.contains("SCX_DSQ_LOCAL[_ON] target CPU 0 not allowed for t0["), "{why}");
    // The same scheduler runs tasks that may use CPU 0 to their end.
    let (out, _) = run(&m, &format!("{}:ignore_affinity=true", broken()), narrowed(2, &[0, 3]));
    assert!(out.partial.is_none(), "{:?}", out.partial);
}

#[test]
fn the_watchdog_ejects_a_task_left_runnable_past_the_timeout_with_the_kernels_message() {
    // ext.c, check_rq_for_timeouts: "COMM[PID] failed to run for S.MMMs",
    // SCX_EXIT_ERROR_STALL ("runnable task stall"), after timeout_ms (2 s
    // in the fixture), checked every half timeout. Both CPUs stay busy, so
    // the starvation bound does not apply.
    let m = common::quiet("core2duo-e8400");
    let mut w = Workload::new("stall");
    let hog = w.add("hog", vec![Step::Compute(us(5_000_000.0)), Step::Exit]);
    // After its change it sleeps: its wake-up goes to ops.enqueue, which parks it.
    let parked = w.add("parked", vec![Step::Affinity([1u32].into(), false), Step::Sleep(Amount::fixed(1e6)), Step::Compute(us(100.0)), Step::Exit]);
    w.initial.push((hog, "hog".into(), Some(0)));
    w.initial.push((hog, "hog".into(), Some(1)));
    w.initial.push((parked, "parked".into(), Some(1)));
    let (out, _) = run(&m, &broken(), w);
    let why = out.partial.expect("ejected");
    assert!(out.ejected, "{why}");
    let at = why.find("runnable task stall: parked[").unwrap_or_else(|| panic!("{why}"));
    let secs: f64 = why[at..].split("failed to run for ").nth(1).unwrap().trim_end_matches('s').parse().unwrap();
    assert!((2.0..=3.0).contains(&secs), "{why}");
    assert!(out.makespan_ns >= 2_000_000_000 && out.makespan_ns <= 3_100_000_000, "{}", out.makespan_ns);
}

#[test]
fn a_task_left_runnable_a_second_while_a_cpu_it_may_use_idles_breaks_the_starvation_bound() {
    // Noted at the watchdog's round after a second of waiting (2 s here,
    // its rounds being every half timeout); the run goes on, and the
    // watchdog then ejects the scheduler as the kernel does.
    let m = common::quiet("core2duo-e8400");
    let (out, _) = run(&m, &broken(), narrowed(1, &[1]));
    let why = out.partial.expect("stopped");
    assert!(why.contains("runnable task stall: t0["), "{why}");
    let b = out.policy_stats["broken_guarantee"].as_str().unwrap_or_else(|| panic!("{}", out.policy_stats)).to_string();
    assert!(b.contains("at 2000") && b.contains("broken guarantee: starvation: t0[") && b.contains("CPU 1"), "{b}");
    // A correct scheduler meets the bound on the same workload.
    let (out, _) = run(&m, "scx:default", narrowed(1, &[1]));
    assert!(out.partial.is_none() && out.policy_stats.get("broken_guarantee").is_none(), "{:?}", out.partial);
}

/// A policy that ignores allowed CPUs: one FIFO queue that every CPU takes
/// from, as a buggy scheduler might.
#[derive(Default)]
struct Careless(VecDeque<Tid>);

impl Policy for Careless {
    fn name(&self) -> String {
        "careless".into()
    }
    fn select_cpu(&mut self, _sim: &mut Sim, _t: Tid, prev: u32, _w: Wake) -> u32 {
        prev
    }
    fn enqueue(&mut self, sim: &mut Sim, t: Tid, _cpu: u32, _flags: Enq) {
        self.0.push_back(t);
        for c in 0..sim.nr_cpus() {
            sim.kick(c);
        }
    }
    fn dispatch(&mut self, _sim: &mut Sim, _cpu: u32) -> Option<Tid> {
        self.0.pop_front()
    }
    fn has_work(&self, _sim: &Sim, _cpu: u32) -> bool {
        !self.0.is_empty()
    }
}

#[test]
fn a_task_run_outside_its_allowed_cpus_ends_the_run_whatever_the_policy() {
    // is_cpu_allowed: the engine checks every switch.
    let m = common::quiet("default");
    let (out, _) = run_with(&m, Box::new(Careless::default()), narrowed(8, &[2]));
    let why = out.partial.expect("stopped");
    assert!(why.contains("broken guarantee: affinity: t") && why.contains("outside its allowed CPUs"), "{why}");
    // Without masks the same policy runs to the end.
    let mut w = narrowed(8, &[2]);
    w.programs[1].steps.remove(1);
    let (out, _) = run_with(&m, Box::new(Careless::default()), w);
    assert!(out.partial.is_none(), "{:?}", out.partial);
}

#[test]
fn a_task_allowed_on_one_cpu_is_placed_there_without_select_cpu() {
    // core.c, select_task_rq: nr_cpus_allowed == 1 takes cpumask_any, and
    // every placement the policy makes outside the set falls back inside it.
    let m = common::quiet("xeon-gold-5218-2s");
    for policy in ["scx:default", "scx:nest", "scx:flash", "cfs"] {
        let (out, evs) = run(&m, policy, narrowed(3, &[40]));
        assert!(out.partial.is_none(), "{policy}: {:?}", out.partial);
        for pid in pids_of(&evs, 3) {
            let wakes: Vec<u32> = evs.iter().filter(|(_, e)| e.id == ids::WAKEUP && e.pid == pid).map(|(_, e)| e.a()).collect();
            assert!(!wakes.is_empty() && wakes.iter().all(|&c| c == 40), "{policy}: {pid} woke on {wakes:?}");
        }
    }
}

#[test]
fn a_cpu_woken_from_idle_gives_ops_dispatch_no_prev() {
    // ext.c, balance_one: ops.dispatch gets prev only when it ran on this
    // CPU in the same __schedule (prev_on_scx); a CPU leaving idle has the
    // idle task as prev. Given the task that last ran there, scx_flash kept
    // it "running" while it was queued elsewhere, and the watchdog fired.
    let text = include_str!("fixtures/hunt-flash-idle-prev.toml");
    let w = warmcore_sim::wfile::parse(text, "hunt-flash-idle-prev.toml").unwrap();
    let m = Machine::load("ryzen5-3400g").unwrap();
    let failure = warmcore_sim::hunt::check(&m, "scx:flash", &w, 11_750_303_387_857_441_468).unwrap();
    assert!(failure.is_none(), "{:?}", failure.map(|f| f.what));
}

/// A parent that keeps CPUs 0 and 1 busy with six children, then allows
/// them CPUs 0 and 7 while most of them wait their turn (the fixture parks
/// a task that may not use CPU 0).
fn children_moved_while_queued() -> Workload {
    let mut w = Workload::new("moved-while-queued");
    let child = w.add("child", vec![Step::Compute(us(3_000.0)), Step::Exit]);
    let mut steps = vec![Step::Affinity([0u32, 1].into(), false)];
    steps.extend((0..6).map(|_| Step::Fork(child)));
    steps.extend([Step::Compute(us(500.0)), Step::Affinity([0u32, 7].into(), true), Step::WaitAll, Step::Exit]);
    let main = w.add("main", steps);
    w.initial.push((main, "main".into(), None));
    w
}

#[test]
fn sched_ext_calls_dequeue_only_for_a_task_the_program_holds() {
    // ext.c, ops_dequeue: ops.dequeue is called for a task in the
    // program's custody (SCX_OPSS_QUEUED: ops.enqueue kept it), with the
    // dequeue's flags (__do_set_cpus_allowed: DEQUEUE_SAVE |
    // DEQUEUE_NOCLOCK); it is then enqueued again on an allowed CPU.
    let m = common::quiet("default");
    let (out, evs) = run(&m, &format!("{}:custody=true", broken()), children_moved_while_queued());
    assert!(out.partial.is_none(), "{:?}", out.partial);
    let n = out.policy_stats["nr_dequeue"].as_u64().unwrap();
    assert!(n > 0, "{}", out.policy_stats);
    assert_eq!(out.policy_stats["last_deq_flags"], 0x0a, "{}", out.policy_stats);
    // Each child ran to its end once: none was dispatched from a stale slot.
    let exits = evs.iter().filter(|(_, e)| e.id == ids::EXIT).count();
    assert_eq!(exits, 7);
    // A task the program inserted into a queue at ops.enqueue is the
    // kernel's (SCX_OPSS_NONE): it is taken out without ops.dequeue.
    let (out, _) = run(&m, &broken(), children_moved_while_queued());
    assert!(out.partial.is_none(), "{:?}", out.partial);
    assert_eq!(out.policy_stats["nr_dequeue"], 0, "{}", out.policy_stats);
}

#[test]
fn a_property_change_brackets_the_task_with_quiescent_and_runnable() {
    // ext.c, dequeue_task_scx with DEQUEUE_SAVE: ops.dequeue if the program
    // holds the task, ops.stopping if it runs, ops.quiescent with the
    // flags; enqueue_task_scx with ENQUEUE_RESTORE: ops.runnable with the
    // flags, then ops.enqueue for a queued task and ops.running for the
    // running one, which goes straight back to its CPU (sticky_cpu). The
    // fixture counts the calls out of turn (running or stopping outside
    // runnable..quiescent, runnable or quiescent twice in a row).
    let m = common::quiet("default");
    let mut w = Workload::new("nice");
    let step = || Step::Compute(us(500.0));
    let p = w.add("t", vec![step(), Step::Nice(5), step(), Step::Nice(-5), step(), Step::SchedIdle(true), step(), Step::Exit]);
    w.initial.push((p, "t".into(), None));
    let (out, _) = run(&m, &broken(), w);
    assert!(out.partial.is_none(), "{:?}", out.partial);
    let s = &out.policy_stats;
    assert_eq!(s["nr_out_of_turn"], 0, "{s}");
    assert_eq!((s["nr_quiescent_save"].as_u64(), s["nr_runnable_restore"].as_u64()), (Some(3), Some(3)), "{s}");
    assert_eq!(s["nr_enqueue_restore"], 0, "a running task is not given to ops.enqueue: {s}");
    assert_eq!((s["last_quiescent_flags"].as_u64(), s["last_runnable_flags"].as_u64()), (Some(0x0a), Some(0x0a)), "{s}");
    // Queued children, some in the program's custody, whose allowed CPUs
    // change: each queued one goes through ops.enqueue again.
    let (out, _) = run(&m, &format!("{}:custody=true", broken()), children_moved_while_queued());
    assert!(out.partial.is_none(), "{:?}", out.partial);
    let s = &out.policy_stats;
    let n = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{k}: {s}"));
    assert_eq!(n("nr_out_of_turn"), 0, "{s}");
    assert_eq!(n("nr_quiescent_save"), n("nr_runnable_restore"), "{s}");
    assert!(n("nr_enqueue_restore") > 0 && n("nr_dequeue") <= n("nr_enqueue_restore"), "{s}");
}

#[test]
fn sched_ext_ignores_a_dispatch_of_a_task_the_program_no_longer_holds() {
    // ext.c, finish_dispatch: an insert from ops.dispatch takes the task
    // only in SCX_OPSS_QUEUED with the sequence number the insert saw
    // (SCX_OPSS_QSEQ); a task running, asleep, exited or already inserted
    // is left alone. The fixture's `stale` mode inserts the task it
    // dispatched last again at every ops.dispatch: the runs are those of
    // the program without it, task for task and event for event.
    let m = common::quiet("default");
    let custody = format!("{}:custody=true", broken());
    for w in [narrowed(6, &[0, 1]), children_moved_while_queued()] {
        let (out, evs) = run(&m, &format!("{custody},stale=true"), w.clone());
        assert!(out.partial.is_none(), "{:?}", out.partial);
        let (_, plain) = run(&m, &custody, w);
        assert!(evs == plain, "a stale insert changed the run: {}", out.policy_stats);
    }
    let (out, _) = run(&m, &format!("{custody},stale=true"), narrowed(6, &[0, 1]));
    assert!(out.policy_stats["nr_stale_inserts"].as_u64() > Some(10), "{}", out.policy_stats);
}

#[test]
fn hunt_shrinks_a_failure_on_a_large_machine_to_the_fewest_cpus_that_fail() {
    // The fixture never runs a task not allowed on CPU 0: on the 160-CPU E7
    // a task allowed on CPU 1 alone stalls, as it does on any machine that
    // has a CPU 1. The shrinker halves sockets and cores and drops SMT while
    // the run still fails: two CPUs are left, and the machine file it gives
    // reads back to the same machine, which fails again.
    let m = Machine::load("xeon-e7-8870v4").unwrap();
    let mut w = Workload::new("parked");
    let p = w.add("t", vec![Step::Affinity([1u32].into(), false), Step::Compute(us(500.0)), Step::Exit]);
    let q = w.add("u", vec![Step::Compute(us(500.0)), Step::Exit]);
    w.initial.push((p, "t".into(), None));
    w.initial.push((q, "u".into(), None));
    let f = warmcore_sim::hunt::check(&m, &broken(), &w, 1).unwrap().expect("the parked task stalls");
    assert_eq!(f.kind, warmcore_sim::hunt::Kind::Stall, "{}", f.what);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (small, sm, runs) = warmcore_sim::hunt::shrink(&m, &broken(), &w, 1, &f.kind, 200, &stop);
    assert!(runs < 200, "the budget ran out");
    assert_eq!((sm.nr_cpus, small.initial.len()), (2, 1), "{}", sm.to_toml());
    let back = Machine::from_toml(&sm.to_toml(), "machine.toml").unwrap();
    assert_eq!((back.nr_cpus, back.spec.sockets), (2, 1));
    let again = warmcore_sim::hunt::check(&back, &broken(), &small, 1).unwrap();
    assert_eq!(again.map(|f| f.kind), Some(warmcore_sim::hunt::Kind::Stall));
}

#[test]
fn haikus_models_keep_every_task_within_its_allowed_cpus() {
    // Haiku's scheduler of the models has no CPU masks: the models keep
    // the kernel's rule (is_cpu_allowed) for running, queued and sleeping
    // tasks whose CPUs change (haiku.rs, haiku_old.rs).
    let m = common::quiet("default");
    for policy in ["haiku-low-latency", "haiku-power-saving", "haiku-old"] {
        for cpus in [&[3u32][..], &[5, 6]] {
            let (out, evs) = run(&m, policy, narrowed(6, cpus));
            assert!(out.partial.is_none(), "{policy}: {:?}", out.partial);
            for pid in pids_of(&evs, 6) {
                let on = ran_on(&evs, pid);
                assert!(on[1..].iter().all(|c| cpus.contains(c)), "{policy} {cpus:?}: task {pid} ran on {on:?}");
            }
        }
        let (out, _) = run(&m, policy, children_moved_while_queued());
        assert!(out.partial.is_none(), "{policy}: {:?}", out.partial);
    }
}
