// SPDX-License-Identifier: GPL-2.0-only
//! The Nest policy's rules (Nest, section 3) on small
//! constructed situations, and its switches.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

use warmcore_sim::engine::{Engine, Limits, Outcome, TICK_NS};
use warmcore_sim::nest::Nest;
use warmcore_sim::make_policy;
use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::{run, Enq, Governor, Machine, Policy, RunConfig, Sim, Tid, Wake, WakeKind};
use warmcore_trace::event::nest as nm;
use warmcore_trace::{ids, Event};

mod common;
use common::Collect;

fn simulate_with(m: Machine, g: Governor, p: Box<dyn Policy>, w: Workload, limits: Limits) -> (Engine, Outcome, Vec<(u32, Event)>) {
    let c = Collect::default();
    let mut e = Engine::new(m, g, p, w, 1, Box::new(c.clone())).unwrap();
    e.check_invariants = true;
    let out = e.run(limits).unwrap();
    let evs = c.0.borrow().clone();
    (e, out, evs)
}

fn simulate(machine: &str, g: Governor, policy: &str, w: Workload) -> (Outcome, Vec<(u32, Event)>) {
    let m = common::quiet(machine);
    let p = make_policy(policy, &m).unwrap();
    let (_, out, evs) = simulate_with(m, g, p, w, Limits::default());
    assert!(out.partial.is_none());
    (out, evs)
}

fn work_us(us: f64) -> Step {
    Step::Compute(Amount::work_us(us, 0.0))
}
fn work_j(us: f64, j: f64) -> Step {
    Step::Compute(Amount::work_us(us, j))
}
fn sleep_us(us: f64) -> Step {
    Step::Sleep(Amount::fixed(us * 1000.0))
}
fn sleep_j(us: f64, j: f64) -> Step {
    Step::Sleep(Amount::jittered(us * 1000.0, j))
}

fn stat(o: &Outcome, k: &str) -> u64 {
    o.policy_stats[k].as_u64().unwrap_or_else(|| panic!("no stat {k} in {}", o.policy_stats))
}

type PlacementCheck = Box<dyn FnMut(&Nest, &Sim, Tid, u32, Wake, u32)>;
type TickCheck = Box<dyn FnMut(&Nest, &Sim, u32)>;

/// A policy that forwards to a shared Nest, so that a test can look at the
/// nests during and after a run, and call the Nest directly.
struct Shared {
    nest: Rc<RefCell<Nest>>,
    /// Called after every placement with the Nest, the state and the choice.
    check: Option<PlacementCheck>,
    /// Called at every tick.
    on_tick: Option<TickCheck>,
}
impl Shared {
    fn new(nest: &Rc<RefCell<Nest>>) -> Shared {
        Shared { nest: nest.clone(), check: None, on_tick: None }
    }
}
impl Policy for Shared {
    fn name(&self) -> String {
        "nest".into()
    }
    fn init(&mut self, sim: &mut Sim) {
        self.nest.borrow_mut().init(sim)
    }
    fn init_task(&mut self, sim: &mut Sim, t: Tid, p: Option<Tid>) {
        self.nest.borrow_mut().init_task(sim, t, p)
    }
    fn exit_task(&mut self, sim: &mut Sim, t: Tid) {
        self.nest.borrow_mut().exit_task(sim, t)
    }
    fn select_cpu(&mut self, sim: &mut Sim, t: Tid, prev: u32, w: Wake) -> u32 {
        let c = self.nest.borrow_mut().select_cpu(sim, t, prev, w);
        if let Some(f) = &mut self.check {
            f(&self.nest.borrow(), sim, t, prev, w, c);
        }
        c
    }
    fn enqueue(&mut self, sim: &mut Sim, t: Tid, cpu: u32, flags: Enq) {
        self.nest.borrow_mut().enqueue(sim, t, cpu, flags)
    }
    fn dispatch(&mut self, sim: &mut Sim, cpu: u32) -> Option<Tid> {
        self.nest.borrow_mut().dispatch(sim, cpu)
    }
    fn running(&mut self, sim: &mut Sim, t: Tid, cpu: u32) {
        self.nest.borrow_mut().running(sim, t, cpu)
    }
    fn stopping(&mut self, sim: &mut Sim, t: Tid, cpu: u32, r: bool) {
        self.nest.borrow_mut().stopping(sim, t, cpu, r)
    }
    fn tick(&mut self, sim: &mut Sim, cpu: u32, t: Tid) {
        self.nest.borrow_mut().tick(sim, cpu, t);
        if let Some(f) = &mut self.on_tick {
            f(&self.nest.borrow(), sim, cpu);
        }
    }
    fn update_idle(&mut self, sim: &mut Sim, cpu: u32, idle: bool) {
        self.nest.borrow_mut().update_idle(sim, cpu, idle)
    }
    fn timer(&mut self, sim: &mut Sim, token: u64) {
        self.nest.borrow_mut().timer(sim, token)
    }
    fn stats(&self) -> serde_json::Value {
        self.nest.borrow().stats()
    }
}

fn nest(m: &Machine, params: &str) -> Rc<RefCell<Nest>> {
    let (_, p) = warmcore_sim::parse_spec(params);
    Rc::new(RefCell::new(Nest::new(m, &p).unwrap()))
}

/// `n` workers that compute and sleep with jitter, forked by a parent that
/// waits for them all.
fn workers(n: usize, iters: u64, compute_us: f64, sleep: f64) -> Workload {
    let mut w = Workload::new("workers");
    let body = w.add("body", vec![work_j(compute_us, 0.5), sleep_j(sleep, 0.5)]);
    let worker = w.add("worker", vec![Step::Repeat(body, iters), Step::Exit]);
    let mut steps = vec![work_us(50.0)];
    steps.extend((0..n).map(|_| Step::Fork(worker)));
    steps.extend([Step::WaitAll, Step::Exit]);
    let main = w.add("main", steps);
    w.initial.push((main, "main".into(), Some(0)));
    w
}

#[test]
fn never_two_tasks_on_a_core_while_a_primary_core_is_idle() {
    // Phases of 6, then 20 (more than the 16 CPUs), then 3 concurrent
    // workers, so that the primary nest grows, overflows and has idle
    // cores.
    let m = common::quiet("default");
    let mut w = Workload::new("phases");
    let body = w.add("body", vec![work_j(1500.0, 0.5), sleep_j(400.0, 0.5)]);
    let prog = |w: &mut Workload, iters| w.add("worker", vec![Step::Repeat(body, iters), Step::Exit]);
    let (a, b, c) = (prog(&mut w, 20), prog(&mut w, 15), prog(&mut w, 30));
    let mut steps = vec![];
    for (p, n) in [(a, 6), (b, 20), (c, 3)] {
        steps.extend((0..n).map(|_| Step::Fork(p)));
        steps.push(Step::WaitAll);
    }
    steps.push(Step::Exit);
    let main = w.add("main", steps);
    w.initial.push((main, "main".into(), Some(0)));

    let n = nest(&m, "nest");
    let seen = Rc::new(RefCell::new((0u64, 0u64, 0u64)));
    let s2 = seen.clone();
    let mut p = Shared::new(&n);
    p.check = Some(Box::new(move |nest, sim, _t, prev, w, c| {
        if w.kind == WakeKind::Exec && c == prev {
            return;
        }
        let idle_primary: Vec<u32> = nest.primary().into_iter().filter(|&x| nest.available(sim, x)).collect();
        let mut s = s2.borrow_mut();
        s.0 += 1;
        if !sim.cpu_is_idle(c) {
            // The task will wait behind another one on `c`.
            s.1 += 1;
            assert!(idle_primary.is_empty(), "at {} ns: placed on busy CPU {c} while primary cores {idle_primary:?} are idle", sim.now());
        } else if nest.membership(c) == nm::PRIMARY && !idle_primary.is_empty() {
            s.2 += 1;
        }
    }));
    let (_, out, _) = simulate_with(m, Governor::Schedutil, Box::new(p), w, Limits::default());
    assert!(out.partial.is_none());
    let (all, busy, primary_idle) = *seen.borrow();
    // The situation was exercised: placements on busy CPUs (the overloaded
    // phase) and placements while the primary nest had idle cores.
    assert!(all > 500 && busy > 10 && primary_idle > 100, "{all} {busy} {primary_idle}");
}

/// Hogs on CPUs 0-3 and two sleeping tasks (tids 4 and 5, on CPUs 5 and 6),
/// stopped at `at_ns`: a state to call the Nest on directly.
fn hogs_and_sleepers(m: &Machine, n: &Rc<RefCell<Nest>>, at_ns: u64) -> Engine {
    let mut w = Workload::new("hogs");
    let hog = w.add("hog", vec![work_us(1e6), Step::Exit]);
    let sleeper = w.add("sleeper", vec![work_us(50.0), sleep_us(1e6), Step::Exit]);
    for c in 0..4 {
        w.initial.push((hog, "hog".into(), Some(c)));
    }
    w.initial.push((sleeper, "s".into(), Some(5)));
    w.initial.push((sleeper, "t".into(), Some(6)));
    let limits = Limits { max_sim_ns: at_ns, ..Limits::default() };
    let (e, out, _) = simulate_with(m.clone(), Governor::Schedutil, Box::new(Shared::new(n)), w, limits);
    assert!(out.partial.is_some());
    e
}

fn wakeup(cpu: u32) -> Wake {
    Wake { kind: WakeKind::Wakeup, waker: None, waker_cpu: cpu, sync: false }
}

#[test]
fn an_impatient_task_grows_the_primary_nest() {
    // Direct calls place no task, so no placement ever completes: without
    // claim=off, every chosen core would stay claimed.
    let m = common::quiet("default");
    for impatience in ["on", "off", "r_impatient=3"] {
        let n = nest(&m, &format!("nest:claim=off,impatience={impatience}").replace("impatience=r_", "r_"));
        let mut e = hogs_and_sleepers(&m, &n, 5_000_000);
        let sim = &mut e.sim;
        let mut nest = n.borrow_mut();
        let s: Tid = 4;
        // Through the fallback into the reserve, then promoted on use.
        assert_eq!(nest.select_cpu(sim, s, 5, wakeup(5)), 5);
        assert_eq!(nest.membership(5), nm::RESERVE);
        assert_eq!(nest.select_cpu(sim, s, 5, wakeup(5)), 5);
        assert_eq!(nest.primary(), vec![5]);
        // Its previous core (0) is busy: a first miss, the primary nest
        // still serves it.
        assert_eq!(nest.select_cpu(sim, s, 0, wakeup(0)), 5);
        assert_eq!(nest.primary(), vec![5]);
        // A second miss in a row: impatient, it skips the primary nest and
        // the core it gets joins the primary nest.
        let c = nest.select_cpu(sim, s, 0, wakeup(0));
        if impatience == "on" {
            assert_ne!(c, 5);
            assert_eq!(nest.membership(c), nm::PRIMARY);
            assert_eq!(nest.primary().len(), 2);
            assert_eq!(nest.counters().impatient_expansions, 1);
            // The counter was reset: the next miss is patient again.
            assert_eq!(nest.select_cpu(sim, s, 0, wakeup(0)), c.min(5));
        } else {
            // Off, or patient for one more miss.
            assert_eq!(c, 5);
            assert_eq!(nest.primary(), vec![5]);
            assert_eq!(nest.counters().impatient_expansions, 0);
            if impatience == "r_impatient=3" {
                assert_ne!(nest.select_cpu(sim, s, 0, wakeup(0)), 5);
                assert_eq!(nest.counters().impatient_expansions, 1);
            }
        }
    }
}

/// At 30 ms: task s (tid 4) ran twice on CPU 5 (attached to it), CPUs 5 and
/// 4 in the primary nest (4 through task t's impatience); CPU 4 used just now
/// if `touch4`, else never (idle for more than P_remove ticks). Then s wakes
/// with a busy previous core (1); the CPU it gets, and CPU 4's membership.
fn attached_scenario(params: &str, touch4: bool) -> (u32, u32, u64, u64) {
    let m = common::quiet("default");
    let n = nest(&m, params);
    let mut e = hogs_and_sleepers(&m, &n, 30_000_000);
    let sim = &mut e.sim;
    let mut nest = n.borrow_mut();
    let (s, t): (Tid, Tid) = (4, 5);
    // A second stint of s on 5: attached (section 3.3).
    nest.running(sim, s, 5);
    nest.stopping(sim, s, 5, false);
    assert_eq!(nest.select_cpu(sim, s, 5, wakeup(5)), 5);
    assert_eq!(nest.select_cpu(sim, s, 5, wakeup(5)), 5);
    assert_eq!(nest.primary(), vec![5]);
    // t misses its busy previous core twice: its second placement adds the
    // fair class's choice, the idle core 4 (the first found from CPU 0), to
    // the primary nest.
    assert_eq!(nest.select_cpu(sim, t, 0, wakeup(0)), 5);
    assert_eq!(nest.select_cpu(sim, t, 0, wakeup(0)), 4);
    assert_eq!(nest.primary(), vec![4, 5]);
    if touch4 {
        nest.running(sim, t, 4);
        nest.stopping(sim, t, 4, false);
    }
    let c = nest.select_cpu(sim, s, 1, wakeup(1));
    let k = nest.counters();
    (c, nest.membership(4), k.attached_hits, k.compactions)
}

#[test]
fn the_attached_core_comes_first() {
    // Direct calls place no task: claim=off, else every chosen core would
    // stay claimed.
    let (c, _, attached, _) = attached_scenario("nest:claim=off", true);
    assert_eq!((c, attached), (5, 1));
    // Without attachment, the primary search from CPU 1 meets 4 first.
    let (c, _, attached, _) = attached_scenario("nest:claim=off,attach=off", true);
    assert_eq!((c, attached), (4, 0));
}

#[test]
fn compaction_demotes_a_primary_core_idle_for_more_than_p_remove_ticks_when_met() {
    let (c, m4, _, compactions) = attached_scenario("nest:claim=off,attach=off", false);
    assert_eq!((c, m4, compactions), (5, nm::RESERVE, 1));
    let (c, m4, _, compactions) = attached_scenario("nest:claim=off,attach=off,compaction=off", false);
    assert_eq!((c, m4, compactions), (4, nm::PRIMARY, 0));
    // With a longer delay (8 ticks = 32 ms > 30 ms), 4 is not yet stale.
    let (c, m4, _, compactions) = attached_scenario("nest:claim=off,attach=off,p_remove=8", false);
    assert_eq!((c, m4, compactions), (4, nm::PRIMARY, 0));
}

/// CPUs that ran a task (CTX_SWITCH to a task).
fn cpus_used(evs: &[(u32, Event)], from_ns: u64) -> BTreeSet<u32> {
    evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() != 0 && e.ts >= from_ns).map(|(c, _)| *c).collect()
}

fn fork_wait_chain(n: u64) -> Workload {
    let mut w = Workload::new("chain");
    let child = w.add("child", vec![work_j(2000.0, 0.3), Step::Exit]);
    let step = w.add("step", vec![work_us(100.0), Step::Fork(child), Step::Wait]);
    let main = w.add("main", vec![Step::Repeat(step, n), Step::Exit]);
    w.initial.push((main, "main".into(), Some(0)));
    w
}

#[test]
fn a_fork_wait_chain_stays_on_two_cores_under_nest_where_cfs_disperses_it() {
    let (_, evs_n) = simulate("default", Governor::Schedutil, "nest", fork_wait_chain(200));
    let (_, evs_c) = simulate("default", Governor::Schedutil, "cfs", fork_wait_chain(200));
    let end = evs_n.last().unwrap().1.ts;
    let (n_all, n_late) = (cpus_used(&evs_n, 0), cpus_used(&evs_n, end / 10));
    let c_late = cpus_used(&evs_c, end / 10);
    assert!(n_late.len() <= 2, "nest used {n_late:?} after the start ({n_all:?} in all)");
    assert!(n_all.len() <= 3, "{n_all:?}");
    assert!(c_late.len() >= 6, "cfs used {c_late:?}");
}

/// Membership of each CPU over time from the NEST_CHANGE events, with the
/// (ts, cpu, from, to) changes.
fn changes(evs: &[(u32, Event)]) -> Vec<(u64, u32, u32, u32)> {
    evs.iter().filter(|(_, e)| e.id == ids::NEST_CHANGE).map(|(c, e)| (e.ts, *c, e.b(), e.a())).collect()
}

/// 8 concurrent workers for about 50 ms, then asleep, and a fork/wait chain
/// from CPU 0 whose forks meet the primary cores the workers left.
fn grow_then_shrink() -> Workload {
    let mut w = Workload::new("grow-shrink");
    let body = w.add("body", vec![work_j(1000.0, 0.5), sleep_j(300.0, 0.5)]);
    // The workers then sleep (an exit would demote their cores at once).
    let worker = w.add("worker", vec![Step::Repeat(body, 30), sleep_us(150_000.0), Step::Exit]);
    let child = w.add("child", vec![work_j(500.0, 0.3), Step::Exit]);
    let step = w.add("step", vec![work_us(100.0), Step::Fork(child), Step::Wait, sleep_us(3000.0)]);
    let mut steps: Vec<Step> = (0..8).map(|_| Step::Fork(worker)).collect();
    steps.extend([Step::Repeat(step, 40), Step::WaitAll, Step::Exit]);
    let main = w.add("main", steps);
    w.initial.push((main, "main".into(), Some(0)));
    w
}

#[test]
fn compaction_removes_only_cores_unused_for_more_than_p_remove_ticks() {
    let (out, evs) = simulate("default", Governor::Schedutil, "nest", grow_then_shrink());
    let exits: BTreeSet<(u64, u32)> = evs.iter().filter(|(_, e)| e.id == ids::EXIT).map(|(c, e)| (e.ts, *c)).collect();
    // Last time each CPU switched (a task started or stopped there).
    let mut last_switch: HashMap<u32, u64> = HashMap::new();
    let mut compactions = 0;
    for (c, e) in &evs {
        if e.id == ids::CTX_SWITCH {
            last_switch.insert(*c, e.ts);
        }
        if e.id == ids::NEST_CHANGE && e.b() == nm::PRIMARY && !exits.contains(&(e.ts, *c)) {
            compactions += 1;
            let idle_for = e.ts - last_switch.get(c).copied().unwrap_or(0);
            assert!(idle_for > 2 * TICK_NS, "CPU {c} compacted at {} ns after {idle_for} ns idle", e.ts);
        }
    }
    assert!(compactions > 0);
    assert_eq!(compactions, stat(&out, "compactions"));
    let (off, evs) = simulate("default", Governor::Schedutil, "nest:compaction=off", grow_then_shrink());
    assert_eq!(stat(&off, "compactions"), 0);
    let exits: BTreeSet<(u64, u32)> = evs.iter().filter(|(_, e)| e.id == ids::EXIT).map(|(c, e)| (e.ts, *c)).collect();
    assert!(changes(&evs).iter().all(|&(ts, c, from, _)| from != nm::PRIMARY || exits.contains(&(ts, c))));
}

#[test]
fn a_core_whose_task_exits_is_demoted() {
    for demote in ["on", "off"] {
        let (out, evs) = simulate("default", Governor::Schedutil, &format!("nest:exit_demotion={demote}"), fork_wait_chain(50));
        let mut member: HashMap<u32, u32> = HashMap::new();
        let mut checked = 0;
        for (i, (c, e)) in evs.iter().enumerate() {
            if e.id == ids::NEST_CHANGE {
                member.insert(*c, e.a());
            }
            if e.id != ids::EXIT || member.get(c) != Some(&nm::PRIMARY) {
                continue;
            }
            // The events of this CPU at this instant, after the exit.
            let same: Vec<&Event> = evs[i..].iter().filter(|(x, f)| x == c && f.ts == e.ts).map(|(_, f)| f).collect();
            if !same.iter().any(|f| f.id == ids::IDLE_ENTER) {
                continue;
            }
            checked += 1;
            let demoted = same.iter().any(|f| f.id == ids::NEST_CHANGE && f.b() == nm::PRIMARY && f.a() != nm::PRIMARY);
            assert_eq!(demoted, demote == "on", "exit on primary CPU {c} at {} ns", e.ts);
        }
        assert!(checked > 10, "{checked}");
        assert_eq!(stat(&out, "exit_demotions") > 0, demote == "on");
    }
}

/// A task that joins the primary nest, computes 40 ms, sleeps 6 ms (less
/// than S_max = 2 ticks), and computes again; the frequency of its core when
/// it comes back.
fn freq_after_short_sleep(policy: &str) -> (u32, Outcome) {
    let mut w = Workload::new("nap");
    let short = w.add("short", vec![work_us(200.0), sleep_us(200.0)]);
    let t = w.add("t", vec![Step::Repeat(short, 3), work_us(80_000.0), sleep_us(6000.0), work_us(2000.0), Step::Exit]);
    w.initial.push((t, "t".into(), Some(2)));
    let (out, evs) = simulate("default", Governor::Powersave, policy, w);
    // The last wake-up: the last CTX_SWITCH to the task.
    let (cpu, back) = evs.iter().rev().find(|(_, e)| e.id == ids::CTX_SWITCH && e.a() != 0).map(|(c, e)| (*c, e.ts)).unwrap();
    let f = evs.iter().rev().find(|(c, e)| *c == cpu && e.id == ids::FREQ_CHANGE && e.ts <= back).unwrap().1.a();
    (f, out)
}

#[test]
fn spinning_keeps_an_idle_primary_core_at_its_frequency() {
    let (f_spin, on) = freq_after_short_sleep("nest");
    let (f_nospin, off) = freq_after_short_sleep("nest:spin=off");
    assert!(stat(&on, "spins") >= 1 && stat(&on, "spin_ns") > 0);
    assert_eq!(stat(&off, "spins"), 0);
    let (f_zero, zero) = freq_after_short_sleep("nest:s_max=0");
    assert_eq!((stat(&zero, "spins"), f_zero), (0, f_nospin));
    // Each spin lasts at most S_max = 2 ticks.
    assert!(stat(&on, "spin_ns") <= stat(&on, "spins") * 2 * TICK_NS);
    assert_eq!(f_spin, 3_000_000, "the spinning core stays at the top");
    assert!(f_nospin < f_spin, "{f_nospin} {f_spin}");
    // The task came back faster at the higher frequency.
    assert!(on.makespan_ns < off.makespan_ns);
}

#[test]
fn spinning_stops_as_soon_as_the_sibling_has_work() {
    // Tasks come and go on both threads of the cores: whenever a CPU runs
    // (a tick), its sibling does not spin.
    let m = common::quiet("default");
    let n = nest(&m, "nest");
    let mut p = Shared::new(&n);
    let ticks = Rc::new(RefCell::new(0u64));
    let t2 = ticks.clone();
    p.on_tick = Some(Box::new(move |_, sim, cpu| {
        *t2.borrow_mut() += 1;
        for &s in sim.machine.siblings(cpu) {
            assert!(s == cpu || !sim.is_spinning(s), "CPU {s} spins at {} ns while its sibling {cpu} runs", sim.now());
        }
    }));
    let (_, out, _) = simulate_with(m, Governor::Schedutil, Box::new(p), workers(12, 40, 3000.0, 2000.0), Limits::default());
    assert!(*ticks.borrow() > 100);
    assert!(stat(&out, "spins") > 10);
    assert!(stat(&out, "spin_sibling_stops") > 0, "{}", out.policy_stats);
}

#[test]
fn reserve_off_never_uses_the_reserve_nest() {
    let (on, evs) = simulate("default", Governor::Schedutil, "nest", grow_then_shrink());
    assert!(changes(&evs).iter().any(|c| c.3 == nm::RESERVE));
    assert!(stat(&on, "reserve_hits") > 0 && stat(&on, "max_reserve") > 0);
    let (off, evs) = simulate("default", Governor::Schedutil, "nest:reserve=off", grow_then_shrink());
    assert!(changes(&evs).iter().all(|c| c.3 != nm::RESERVE));
    assert_eq!(stat(&off, "reserve_hits") + stat(&off, "max_reserve") + stat(&off, "promotions"), 0);
}

#[test]
fn reserve_nest_never_exceeds_r_max() {
    for r in [5u64, 2] {
        let (out, evs) = simulate("default", Governor::Schedutil, &format!("nest:r_max={r}"), workers(14, 20, 1000.0, 300.0));
        let mut member: HashMap<u32, u32> = HashMap::new();
        let mut max = 0;
        for (ts, c, _, to) in changes(&evs) {
            member.insert(c, to);
            let _ = ts;
            max = max.max(member.values().filter(|&&m| m == nm::RESERVE).count() as u64);
        }
        assert!(max <= r && max == stat(&out, "max_reserve"), "{max} {}", out.policy_stats);
    }
}

#[test]
fn each_switch_turns_its_feature_off() {
    let wl = grow_then_shrink;
    let (on, _) = simulate("default", Governor::Schedutil, "nest", wl());
    for (switch, stat_name) in [
        ("attach", "attached_hits"),
        ("prev", "prev_hits"),
        ("impatience", "impatient_expansions"),
        ("spin", "spins"),
        ("compaction", "compactions"),
    ] {
        assert!(stat(&on, stat_name) > 0, "{stat_name} with every feature: {}", on.policy_stats);
        let (off, _) = simulate("default", Governor::Schedutil, &format!("nest:{switch}=off"), wl());
        assert_eq!(stat(&off, stat_name), 0, "{switch}=off");
    }
}

#[test]
fn wakeup_work_conservation_looks_at_every_die() {
    // A 2-socket machine, 40 workers: the wakee's die is often full while
    // the other has idle CPUs.
    let wl = || workers(40, 10, 1500.0, 600.0);
    let (on, _) = simulate("xeon-gold-6130-2s", Governor::Schedutil, "nest", wl());
    let (off, _) = simulate("xeon-gold-6130-2s", Governor::Schedutil, "nest:conservation=off", wl());
    assert!(stat(&on, "conservation_hits") > 0, "{}", on.policy_stats);
    assert_eq!(stat(&off, "conservation_hits"), 0);
    assert!(stat(&off, "fallback_busy") > stat(&on, "fallback_busy"));
}

#[test]
fn the_claim_flag_keeps_two_placements_in_flight_off_one_core() {
    // A parent forks two children back to back, again and again: the second
    // placement happens before the first child runs (its CPU wakes from an
    // idle state; the second fork's copy takes less than that).
    let mut w = Workload::new("pairs");
    let child = w.add("child", vec![work_us(1000.0), Step::Exit]);
    let pair = w.add("pair", vec![work_us(200.0), Step::Fork(child), Step::Fork(child), Step::WaitAll, sleep_us(500.0)]);
    let main = w.add("main", vec![Step::Repeat(pair, 30), Step::Exit]);
    w.initial.push((main, "main".into(), Some(0)));
    let same_target = |policy: &str| {
        let (out, evs) = simulate("default", Governor::Schedutil, policy, w.clone());
        let news: Vec<(u64, u32)> = evs.iter().filter(|(_, e)| e.id == ids::WAKEUP_NEW).map(|(_, e)| (e.ts, e.a())).collect();
        // The two forks of one pair are the parent's fork time apart; pairs
        // are at least 1.7 ms apart.
        let pair_placements = |p: &[(u64, u32)]| p[1].0 - p[0].0 < 200_000 && p[0].1 == p[1].1;
        (news.windows(2).filter(|p| pair_placements(p)).count(), out)
    };
    let (with, on) = same_target("nest");
    let (without, _) = same_target("nest:claim=off");
    assert_eq!(with, 0);
    assert!(without > 5, "{without}");
    assert!(stat(&on, "claim_skips") > 0);
}

#[test]
fn nest_is_deterministic_and_configure_concentrates() {
    let c = RunConfig::new("xeon-gold-6130-2s", "configure:checks=40", "nest", "schedutil", 3);
    let a = serde_json::to_value(run(&c).unwrap()).unwrap();
    let b = serde_json::to_value(run(&c).unwrap()).unwrap();
    assert_eq!(a["makespan_ns"], b["makespan_ns"]);
    assert_eq!(a["policy_stats"], b["policy_stats"]);
    let cfs = run(&RunConfig::new("xeon-gold-6130-2s", "configure:checks=40", "cfs", "schedutil", 3)).unwrap();
    assert!(a["makespan_ns"].as_u64().unwrap() < cfs.makespan_ns, "{} vs cfs {}", a["makespan_ns"], cfs.makespan_ns);
    assert!(a["underload_per_s"].as_f64().unwrap() < cfs.underload_per_s.unwrap());
}

#[test]
fn bad_parameters_name_the_parameter_and_the_choices() {
    let m = common::quiet("default");
    let err = |s: &str| make_policy(s, &m).err().unwrap().to_string();
    let e = err("nest:spin=maybe");
    assert!(e.contains("spin") && e.contains("on or off") && e.contains("maybe"), "{e}");
    let e = err("nest:warp=on");
    assert!(e.contains("'warp'") && e.contains("reserve") && e.contains("p_remove"), "{e}");
    let e = err("nest:r_max=-1");
    assert!(e.contains("r_max") && e.contains("0 to"), "{e}");
    let e = err("nest:r_impatient=0");
    assert!(e.contains("r_impatient") && e.contains("1 to"), "{e}");
    assert!(!e.contains('\n'));
    assert!(make_policy("nest:p_remove=1,r_max=3,r_impatient=4,s_max=0,spin=off", &m).is_ok());
}

#[test]
fn each_nest_is_searched_on_the_previous_cores_die_first() {
    // Two dies: CPUs 0-15 and 32-47 on die 0, 16-31 and 48-63 on die 1.
    let m = common::quiet("xeon-gold-6130-2s");
    for die_first in ["on", "off"] {
        let n = nest(&m, &format!("nest:claim=off,die_first={die_first}"));
        let mut e = hogs_and_sleepers(&m, &n, 5_000_000);
        let sim = &mut e.sim;
        let mut nest = n.borrow_mut();
        let (s, t): (Tid, Tid) = (4, 5);
        // 20 (die 1) through the fallback into the reserve, promoted when s
        // (previous core 5, die 0) finds no other nest core.
        assert_eq!(nest.select_cpu(sim, t, 20, wakeup(20)), 20);
        assert_eq!(nest.select_cpu(sim, s, 5, wakeup(5)), 20);
        // s misses its busy previous core 0 twice: the second time it gets
        // the fair class's idle core on die 0 (4) into the primary nest.
        assert_eq!(nest.select_cpu(sim, s, 0, wakeup(0)), 20);
        assert_eq!(nest.select_cpu(sim, s, 0, wakeup(0)), 4);
        assert_eq!(nest.primary(), vec![4, 20]);
        // From CPU 10 (die 0), in CPU order 20 comes before 4 (after the
        // wrap); die first, 4 is found first.
        let c = nest.select_cpu(sim, t, 10, wakeup(10));
        assert_eq!(c, if die_first == "on" { 4 } else { 20 });
    }
}
