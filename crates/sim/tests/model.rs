// SPDX-License-Identifier: GPL-2.0-only
//! Behaviour of the model: DVFS fits, energy, the fair-class rules.

use warmcore_sim::engine::{Engine, Limits};
use warmcore_sim::make_policy;
use warmcore_sim::program::{Amount, Step, Workload};
use warmcore_sim::{Governor, Machine};
use warmcore_trace::{ids, Event};

mod common;
use common::{fork_then, Collect};

fn simulate(m: Machine, g: Governor, policy: &str, w: Workload) -> (warmcore_sim::engine::Outcome, Vec<(u32, Event)>) {
    let c = Collect::default();
    let p = make_policy(policy, &m).unwrap();
    let mut e = Engine::new(m, g, p, w, 1, Box::new(c.clone())).unwrap();
    e.check_invariants = true;
    let out = e.run(Limits::default()).unwrap();
    let evs = c.0.borrow().clone();
    (out, evs)
}

/// One task computing `ms` milliseconds' worth of cycles at 3 GHz on CPU 0.
fn busy_loop(ms: f64) -> Workload {
    let mut w = Workload::new("busy");
    let p = w.add("loop", vec![Step::Compute(Amount::fixed(ms * 3e6)), Step::Exit]);
    w.initial.push((p, "loop".into(), Some(0)));
    w
}

/// Times of the frequency changes of CPU 0, with the start and end of the
/// task's run.
fn freq_trace(evs: &[(u32, Event)]) -> (u64, u64, Vec<(u64, u32)>) {
    let start = evs.iter().find(|(c, e)| *c == 0 && e.id == ids::CTX_SWITCH && e.a() != 0).unwrap().1.ts;
    let end = evs.iter().find(|(c, e)| *c == 0 && e.id == ids::EXIT).unwrap().1.ts;
    let f = evs.iter().filter(|(c, e)| *c == 0 && e.id == ids::FREQ_CHANGE).map(|(_, e)| (e.ts, e.a())).collect();
    (start, end, f)
}

#[test]
fn figure3_e7_reaches_max_frequency_29ms_after_start() {
    // Fewer Cores, More Hertz, section 2, Figure 3.
    let m = Machine::load("xeon-e7-8870v4").unwrap();
    let mut w = busy_loop(200.0);
    // Keep the simulation going after the loop ends, to see the way down.
    let sleeper = w.add("sleeper", vec![Step::Sleep(Amount::fixed(400e6)), Step::Exit]);
    w.initial.push((sleeper, "sleeper".into(), Some(10)));
    let (_, evs) = simulate(m, Governor::Powersave, "cfs", w);
    let (start, end, f) = freq_trace(&evs);
    assert_eq!(f[0].1, 1_200_000, "an idle core starts at the minimum");
    let at_max = f.iter().find(|x| x.1 == 3_000_000).unwrap().0;
    let up_ms = (at_max - start) as f64 / 1e6;
    assert!((26.0..=32.0).contains(&up_ms), "ramp to 3.0 GHz took {up_ms} ms");
    // The run lasts about 0.2 s (a little more: the ramp is slow).
    let run_ms = (end - start) as f64 / 1e6;
    assert!((200.0..=215.0).contains(&run_ms), "{run_ms}");
    // Down: back at the minimum about 10 ms after the end, then bounces for
    // about 100 ms, then stays at the minimum.
    let down = f.iter().find(|x| x.0 > end && x.1 == 1_200_000).unwrap().0;
    let down_ms = (down - end) as f64 / 1e6;
    assert!((7.0..=14.0).contains(&down_ms), "{down_ms}");
    let bounces: Vec<_> = f.iter().filter(|x| x.0 > down && x.1 > 1_200_000).collect();
    assert!(bounces.len() >= 2, "{bounces:?}");
    assert!(bounces.iter().all(|x| x.0 < end + 110_000_000), "{bounces:?}");
}

#[test]
fn skylake_ramps_faster_than_broadwell() {
    let m = Machine::load("xeon-gold-6130-2s").unwrap();
    let (_, evs) = simulate(m, Governor::Powersave, "cfs", busy_loop(50.0));
    let (start, _, f) = freq_trace(&evs);
    let at_max = f.iter().find(|x| x.1 == 3_700_000).unwrap().0;
    let up_ms = (at_max - start) as f64 / 1e6;
    assert!(up_ms < 8.0, "{up_ms}");
    // Above the minimum well before the first 4 ms tick.
    let first_up = f.iter().find(|x| x.0 > start && x.1 > 1_000_000).unwrap().0;
    assert!(first_up - start < 2_000_000);
}

#[test]
fn schedutil_follows_pelt_and_performance_floors_at_base() {
    let m = Machine::load("xeon-e7-8870v4").unwrap();
    let (_, evs) = simulate(m.clone(), Governor::Schedutil, "cfs", busy_loop(200.0));
    let (start, _, f) = freq_trace(&evs);
    // 1.25 x util x 3.0 GHz reaches 3.0 GHz at util 0.8; a new task starts
    // at util 0.5, so after 32 ms x log2(2.5) = 42 ms of PELT (docs/model.md,
    // PELT and schedutil); the 4 ms tick samples it. At the start it asks for
    // 1.25 x 0.5 x 3.0 = 1.875 GHz, floored to 1.8 GHz.
    let at_max = f.iter().find(|x| x.1 == 3_000_000).unwrap().0;
    let up_ms = (at_max - start) as f64 / 1e6;
    assert!((42.0..=48.0).contains(&up_ms), "{up_ms}");
    assert!(f.iter().any(|x| x.0 == start && x.1 == 1_800_000), "{f:?}");
    let (_, evs) = simulate(m, Governor::Performance, "cfs", busy_loop(50.0));
    let (_, _, f) = freq_trace(&evs);
    assert!(f.iter().all(|x| x.1 >= 2_100_000), "performance never goes below base");
    assert!(f.iter().any(|x| x.1 == 3_000_000));
}

#[test]
fn smt_siblings_share_frequency_and_throughput() {
    let m = Machine::load("default").unwrap();
    let sib = m.siblings(0)[1];
    let mut w = Workload::new("pair");
    let p = w.add("loop", vec![Step::Compute(Amount::fixed(100.0 * 3e6)), Step::Exit]);
    w.initial.push((p, "a".into(), Some(0)));
    w.initial.push((p, "b".into(), Some(sib)));
    let (out_pair, evs) = simulate(m.clone(), Governor::Performance, "cfs:balance=off", w);
    // The sibling reports the same frequency changes as CPU 0.
    let f0: Vec<_> = evs.iter().filter(|(c, e)| *c == 0 && e.id == ids::FREQ_CHANGE).map(|x| (x.1.ts, x.1.a())).collect();
    let f1: Vec<_> = evs.iter().filter(|(c, e)| *c == sib && e.id == ids::FREQ_CHANGE).map(|x| (x.1.ts, x.1.a())).collect();
    assert_eq!(f0, f1);
    let mut w = Workload::new("alone");
    let p = w.add("loop", vec![Step::Compute(Amount::fixed(100.0 * 3e6)), Step::Exit]);
    w.initial.push((p, "a".into(), Some(0)));
    let (out_alone, _) = simulate(m, Governor::Performance, "cfs:balance=off", w);
    let ratio = out_pair.makespan_ns as f64 / out_alone.makespan_ns as f64;
    assert!((1.4..1.75).contains(&ratio), "two threads on one core are slower: {ratio}");
}

#[test]
fn energy_is_static_plus_v2f_dynamic_power() {
    // A machine whose frequency jumps to the ceiling and whose idle power is 0.
    let text = include_str!("../../../machines/default.toml")
        .replace("hw_tau_up_ms = 18.0", "hw_tau_up_ms = 0.0001")
        .replace("power_w = 1.2", "power_w = 0.0")
        .replace("power_w = 0.8", "power_w = 0.0")
        .replace("power_w = 0.1", "power_w = 0.0");
    let m = Machine::from_toml(&text, "test").unwrap();
    let (out, evs) = simulate(m.clone(), Governor::Performance, "cfs", busy_loop(100.0));
    let (start, end, _) = freq_trace(&evs);
    let p = &m.spec.power;
    // Busy at 3.0 GHz = max: V = v_max.
    let busy_s = (end - start) as f64 * 1e-9;
    let want = p.static_w_per_socket * out.makespan_ns as f64 * 1e-9 + p.dyn_coeff * p.v_max * p.v_max * 3.0 * busy_s;
    let err = (out.energy_j - want).abs() / want;
    assert!(err < 0.01, "energy {} J, expected {want} J", out.energy_j);
    assert_eq!(out.energy_per_socket_j.len(), 1);
}

#[test]
fn fork_spreads_to_idle_cores() {
    let m = Machine::load("default").unwrap();
    let mut w = Workload::new("spread");
    let child = w.add("child", vec![Step::Compute(Amount::fixed(20e6)), Step::Exit]);
    let main = w.add("main", vec![Step::Fork(child), Step::Fork(child), Step::Fork(child), Step::Fork(child), Step::WaitAll, Step::Exit]);
    w.initial.push((main, "main".into(), Some(0)));
    let (_, evs) = simulate(m.clone(), Governor::Powersave, "cfs", w);
    let mut cores: Vec<u32> = evs
        .iter()
        .filter(|(_, e)| e.id == ids::WAKEUP_NEW && e.b() != 0)
        .map(|(_, e)| m.cpu_core[e.a() as usize])
        .collect();
    assert_eq!(cores.len(), 4);
    cores.push(m.cpu_core[0]);
    cores.sort_unstable();
    cores.dedup();
    assert_eq!(cores.len(), 5, "each child on its own idle core, away from the parent's");
}

#[test]
fn fork_wait_chain_disperses_at_low_frequency() {
    // Fewer Cores, More Hertz, section 2: a fork/wait chain on an idle machine under
    // powersave uses many cores, at low frequency.
    let m = Machine::load("xeon-e7-8870v4").unwrap();
    let mut w = warmcore_sim::workloads::build("configure", &[("checks".into(), "60".into())], &m).unwrap();
    w.name = "configure".into();
    let (_, evs) = simulate(m.clone(), Governor::Powersave, "cfs", w);
    let mut cpus: Vec<u32> = evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() != 0).map(|x| x.0).collect();
    cpus.sort_unstable();
    cpus.dedup();
    assert!(cpus.len() >= 20, "only {} CPUs used", cpus.len());
    let ticks: Vec<u32> = evs.iter().filter(|(_, e)| e.id == ids::TICK).map(|x| x.1.a()).collect();
    let mean = ticks.iter().map(|&f| f as f64).sum::<f64>() / ticks.len() as f64;
    assert!(mean < 2_000_000.0, "mean tick frequency {mean} kHz");
}

#[test]
fn load_balancing_relieves_an_overloaded_cpu() {
    let m = Machine::load("default").unwrap();
    let mk = || {
        let mut w = Workload::new("pile");
        let p = w.add("loop", vec![Step::Compute(Amount::fixed(100.0 * 2.6e6)), Step::Exit]);
        for i in 0..4 {
            w.initial.push((p, format!("t{i}"), Some(0)));
        }
        w
    };
    let (on, evs) = simulate(m.clone(), Governor::Performance, "cfs", mk());
    let (off, _) = simulate(m, Governor::Performance, "cfs:balance=off", mk());
    assert!(off.makespan_ns > 350_000_000, "{}", off.makespan_ns);
    assert!(on.makespan_ns < 200_000_000, "{}", on.makespan_ns);
    assert!(evs.iter().any(|(_, e)| e.id == ids::MIGRATE));
}

#[test]
fn deadlock_names_the_blocked_tasks() {
    let m = Machine::load("default").unwrap();
    let mut w = Workload::new("stuck");
    let f = w.futex();
    let p = w.add("waiter", vec![Step::Compute(Amount::fixed(1e5)), Step::FutexWait(f), Step::Exit]);
    w.initial.push((p, "waiter".into(), None));
    let pol = make_policy("cfs", &m).unwrap();
    let mut e = Engine::new(m, Governor::Powersave, pol, w, 1, Box::new(Collect::default())).unwrap();
    let err = e.run(Limits::default()).unwrap_err().to_string();
    assert!(err.contains("deadlock") && err.contains("waiter") && err.contains("Futex"), "{err}");
}

#[test]
fn limits_stop_cleanly_with_a_partial_result() {
    let m = Machine::load("default").unwrap();
    let pol = make_policy("cfs", &m).unwrap();
    let mut e = Engine::new(m, Governor::Powersave, pol, busy_loop(500.0), 1, Box::new(Collect::default())).unwrap();
    let out = e.run(Limits { max_sim_ns: 50_000_000, max_events: u64::MAX }).unwrap();
    assert!(out.partial.unwrap().contains("time limit"));
    assert_eq!(out.makespan_ns, 50_000_000);
}

/// A policy built on `cfs` through the public interface only, in the manner
/// of S_move (docs/model.md, S_move as patched): a forked child goes to the parent's
/// CPU, with a 50 us timer that moves it to the fair class's choice if it has
/// not run by then.
struct Deferred {
    cfs: warmcore_sim::cfs::Cfs,
    first: std::collections::HashMap<u32, (u32, warmcore_sim::engine::TimerId)>,
}

impl warmcore_sim::Policy for Deferred {
    fn name(&self) -> String {
        "deferred".into()
    }
    fn init_task(&mut self, sim: &mut warmcore_sim::Sim, t: u32, parent: Option<u32>) {
        self.cfs.init_task(sim, t, parent)
    }
    fn exit_task(&mut self, sim: &mut warmcore_sim::Sim, t: u32) {
        self.cfs.exit_task(sim, t)
    }
    fn select_cpu(&mut self, sim: &mut warmcore_sim::Sim, t: u32, prev: u32, w: warmcore_sim::Wake) -> u32 {
        let choice = self.cfs.select_cpu(sim, t, prev, w);
        if w.kind == warmcore_sim::WakeKind::Fork && choice != w.waker_cpu {
            let id = sim.set_timer(sim.now() + 50_000, t as u64);
            self.first.insert(t, (choice, id));
            return w.waker_cpu;
        }
        choice
    }
    fn enqueue(&mut self, sim: &mut warmcore_sim::Sim, t: u32, cpu: u32, f: warmcore_sim::Enq) {
        self.cfs.enqueue(sim, t, cpu, f)
    }
    fn dispatch(&mut self, sim: &mut warmcore_sim::Sim, cpu: u32) -> Option<u32> {
        self.cfs.dispatch(sim, cpu)
    }
    fn running(&mut self, sim: &mut warmcore_sim::Sim, t: u32, cpu: u32) {
        if let Some((_, id)) = self.first.remove(&t) {
            sim.cancel_timer(id);
        }
        self.cfs.running(sim, t, cpu)
    }
    fn stopping(&mut self, sim: &mut warmcore_sim::Sim, t: u32, cpu: u32, r: bool) {
        self.cfs.stopping(sim, t, cpu, r)
    }
    fn tick(&mut self, sim: &mut warmcore_sim::Sim, cpu: u32, t: u32) {
        self.cfs.tick(sim, cpu, t)
    }
    fn update_idle(&mut self, sim: &mut warmcore_sim::Sim, cpu: u32, idle: bool) {
        self.cfs.update_idle(sim, cpu, idle)
    }
    fn timer(&mut self, sim: &mut warmcore_sim::Sim, token: u64) {
        let t = token as u32;
        if let Some((cpu, _)) = self.first.remove(&t) {
            if self.cfs.is_queued(t) {
                self.cfs.move_queued(sim, t, cpu);
            }
        }
    }
}

#[test]
fn policies_can_defer_migrations_with_timers() {
    use warmcore_sim::Policy as _;
    let m = Machine::load("default").unwrap();
    let run = |parent_waits: bool| {
        let w = fork_then(parent_waits);
        let c = Collect::default();
        let p = Deferred { cfs: warmcore_sim::cfs::Cfs::new(&m, &[]).unwrap(), first: Default::default() };
        assert_eq!(p.name(), "deferred");
        let mut e = Engine::new(m.clone(), Governor::Performance, Box::new(p), w, 1, Box::new(c.clone())).unwrap();
        e.check_invariants = true;
        e.run(Limits::default()).unwrap();
        let evs = c.0.borrow().clone();
        evs
    };
    // The parent waits at once: the child runs on the parent's CPU, no move.
    let evs = run(true);
    let child_runs: Vec<u32> =
        evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH && e.a() == 2).map(|x| x.0).collect();
    assert_eq!(child_runs, vec![0]);
    assert!(!evs.iter().any(|(_, e)| e.id == ids::MIGRATE));
    // The parent keeps running: 50 us later the child moves to cfs's choice.
    let evs = run(false);
    let fork_t = evs.iter().find(|(_, e)| e.id == ids::FORK).unwrap().1.ts;
    let mig = evs.iter().find(|(_, e)| e.id == ids::MIGRATE).expect("migrated").1;
    assert_eq!(mig.ts - fork_t, 50_000);
    assert_eq!(mig.a(), 0);
    assert_ne!(mig.b(), 0);
}

#[test]
fn schedutil_counts_a_forked_task_at_enqueue() {
    // A parent on CPU 0 forks a child that CFS places on an idle core: the
    // frequency asked for at the fork already counts the child's half
    // utilisation (docs/model.md, PELT and schedutil), so its first tick, 4 ms in,
    // sees 1.25 x 0.5 x f_max or more, not the minimum.
    let m = Machine::load("xeon-gold-6130-2s").unwrap();
    let mut w = Workload::new("fork");
    let child = w.add("child", vec![Step::Compute(Amount::fixed(10e6)), Step::Exit]);
    let main = w.add("main", vec![Step::Fork(child), Step::Compute(Amount::fixed(10e6)), Step::WaitAll, Step::Exit]);
    w.initial.push((main, "main".into(), Some(0)));
    let (_, evs) = simulate(m.clone(), Governor::Schedutil, "cfs", w);
    let child_pid = evs.iter().find(|(_, e)| e.id == ids::FORK).unwrap().1.pid;
    let cpu = evs.iter().find(|(_, e)| e.id == ids::WAKEUP_NEW && e.pid == child_pid).unwrap().1.a();
    assert_ne!(cpu, 0, "the child goes to an idle core");
    let tick = evs.iter().find(|(c, e)| *c == cpu && e.id == ids::TICK && e.pid == child_pid).unwrap().1;
    assert!(tick.a() as f64 >= 0.6 * m.max_khz() as f64, "first tick at {} kHz", tick.a());
}

#[test]
fn an_unticked_core_shows_the_average_of_one_tick_of_work() {
    use warmcore_sim::dvfs::avg_freq_after_busy as freq_after_busy;
    const TICK: u64 = 4_000_000;
    // The E7-8870 v4's hardware takes 29 ms from minimum to maximum: one
    // tick in, it is still near the minimum. Skylake's ramps faster.
    let e7 = Machine::load("xeon-e7-8870v4").unwrap();
    let sky = Machine::load("xeon-gold-6130-2s").unwrap();
    let slow = freq_after_busy(&e7, Governor::Powersave, TICK);
    assert!(slow < e7.base_khz(), "{slow}");
    let e7_share = (slow - e7.min_khz()) as f64 / (e7.max_khz() - e7.min_khz()) as f64;
    let s = freq_after_busy(&sky, Governor::Powersave, TICK);
    let sky_share = (s - sky.min_khz()) as f64 / (sky.max_khz() - sky.min_khz()) as f64;
    assert!(sky_share >= e7_share, "Skylake {sky_share} vs Broadwell {e7_share}");
    // Under schedutil: a new task's half utilisation, grown over 4 ms.
    let su = freq_after_busy(&sky, Governor::Schedutil, TICK);
    assert!(su as f64 >= 0.625 * sky.max_khz() as f64 - 100_000.0 && su < sky.max_khz(), "{su}");
    assert!(freq_after_busy(&sky, Governor::Performance, TICK) >= sky.base_khz());
}

#[test]
fn the_tick_samples_the_average_frequency_since_the_last_tick() {
    // APERF/MPERF: the E7's slow ramp under powersave changes the frequency
    // between ticks, so the average differs from the frequency at the tick.
    let m = Machine::load("xeon-e7-8870v4").unwrap();
    let c = Collect::default();
    let p = make_policy("cfs", &m).unwrap();
    let mut e = Engine::new(m.clone(), Governor::Powersave, p, busy_loop(8.0), 1, Box::new(c.clone())).unwrap();
    let out = e.run(Limits::default()).unwrap();
    let evs = c.0.borrow().clone();
    let ticks: Vec<u64> = evs.iter().filter(|(cpu, ev)| *cpu == 0 && ev.id == ids::TICK).map(|(_, ev)| ev.ts).collect();
    assert!(ticks.len() >= 3, "{} ticks in {} ns", ticks.len(), out.makespan_ns);
    let (from, to) = (ticks[ticks.len() - 2], ticks[ticks.len() - 1]);
    // The frequency history of CPU 0's core, integrated over (from, to].
    let mut f = m.min_khz() as f64;
    let mut area = 0.0;
    let mut t = from;
    let mut changed = false;
    for (_, ev) in evs.iter().filter(|(cpu, ev)| *cpu == 0 && ev.id == ids::FREQ_CHANGE) {
        if ev.ts <= from {
            f = ev.a() as f64;
        } else if ev.ts <= to {
            area += f * (ev.ts - t) as f64;
            t = ev.ts;
            f = ev.a() as f64;
            changed = true;
        }
    }
    area += f * (to - t) as f64;
    let want = (area / (to - from) as f64).round() as u32;
    assert!(changed, "the frequency should still ramp between the last two ticks");
    assert_eq!(e.sim.tick_freq(0), want);
    assert_ne!(e.sim.tick_freq(0), e.sim.cur_freq(0));
    // A CPU that never ran keeps the sample derived for the idle machine.
    let start = warmcore_sim::dvfs::avg_freq_after_busy(&m, Governor::Powersave, 4_000_000);
    assert!(!e.sim.ticked(5));
    assert_eq!(e.sim.tick_freq(5), start);
}

#[test]
fn with_hwp_the_hardware_runs_a_core_above_schedutils_request() {
    // intel_cpufreq in passive mode with HWP: schedutil's request is the
    // floor, the hardware's own choice can be higher. A busy loop then
    // reaches the top frequency sooner than schedutil alone would take it.
    let hwp = Machine::load("xeon-gold-6130-2s").unwrap();
    assert!(hwp.spec.dvfs.hwp);
    let mut plain = hwp.clone();
    plain.spec.dvfs.hwp = false;
    let top = hwp.turbo_by_active[1];
    let reach = |m: &Machine| {
        let (out, evs) = simulate(m.clone(), Governor::Schedutil, "cfs", busy_loop(40.0));
        let at = evs.iter().find(|(c, e)| *c == 0 && e.id == ids::FREQ_CHANGE && e.a() >= top).map(|(_, e)| e.ts);
        (out.makespan_ns, at.unwrap_or(u64::MAX))
    };
    let (t_hwp, top_hwp) = reach(&hwp);
    let (t_plain, top_plain) = reach(&plain);
    assert!(top_hwp < top_plain, "top frequency at {top_hwp} ns with HWP, {top_plain} ns without");
    assert!(t_hwp < t_plain, "{t_hwp} ns with HWP, {t_plain} ns without");
}
