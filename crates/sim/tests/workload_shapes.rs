// SPDX-License-Identifier: GPL-2.0-only
//! The built-in workloads' shapes (docs/model.md, Workloads): work that does
//! not scale with the frequency, and the structure each copies from its
//! real program.

use warmcore_sim::engine::Outcome;
use warmcore_sim::program::{Amount, Step, Workload, REF_CYCLES_PER_US};
use warmcore_sim::{workloads, Governor, Machine};
use warmcore_trace::event::prev_state;
use warmcore_trace::{ids, Event};

mod common;
use common::simulate;

fn builtin(spec: &str, m: &Machine) -> Workload {
    let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
    let params: Vec<(String, String)> = params
        .split(',')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    workloads::build(name, &params, m).unwrap()
}

fn run(m: &Machine, g: Governor, policy: &str, w: Workload) -> (Outcome, Vec<(u32, Event)>) {
    simulate(m, g, policy, w)
}

/// One task on CPU 0 computing `ms` of work at the reference frequency,
/// with stall share `stall`.
fn alone(ms: f64, stall: f64) -> Workload {
    let mut w = Workload::new("alone");
    let p = w.add("loop", vec![Step::Compute(Amount::fixed(ms * 1e3 * REF_CYCLES_PER_US)), Step::Exit]);
    w.initial.push((p, "loop".into(), Some(0)));
    w.stall = stall;
    w
}

#[test]
fn stall_time_does_not_scale_with_frequency() {
    let m = common::quiet("default");
    let ms = 1000.0;
    let t = |s: f64| run(&m, Governor::Performance, "cfs", alone(ms, s)).0.makespan_ns as f64;
    let t0 = t(0.0);
    // The run is well above the 2 GHz reference frequency: cycles alone go
    // faster than at the reference.
    assert!(t0 < 0.8 * ms * 1e6, "{t0}");
    for s in [0.3, 1.0] {
        // time = cycles / f + stall time: the stall part is s x ms at any f.
        let want = (1.0 - s) * t0 + s * ms * 1e6;
        let got = t(s);
        assert!((got - want).abs() < 0.01 * want, "stall {s}: {got} ns, want {want}");
        assert!(got > t0);
    }
}

#[test]
fn a_stall_share_above_one_is_refused() {
    let m = common::quiet("default");
    let err = workloads::build("nas", &[("stall".into(), "1.5".into())], &m).unwrap_err();
    assert!(err.to_string().contains("at most 1"), "{err}");
    let w = builtin("nas:stall=0.5", &m);
    assert_eq!(w.stall, 0.5);
}

/// Each CPU's runs of a task: (cpu, start, end, pid), from the context
/// switches.
fn runs(evs: &[(u32, Event)]) -> Vec<(u32, u64, u64, u32)> {
    let mut cur: std::collections::HashMap<u32, (u64, u32)> = Default::default();
    let mut v = Vec::new();
    for (c, e) in evs.iter().filter(|(_, e)| e.id == ids::CTX_SWITCH) {
        if let Some((t0, pid)) = cur.remove(c) {
            v.push((*c, t0, e.ts, pid));
        }
        if e.a() != 0 {
            cur.insert(*c, (e.ts, e.a()));
        }
    }
    v
}

/// The most tasks active at once: running, or woken and waiting to run.
fn most_active(evs: &[(u32, Event)]) -> usize {
    let mut active = std::collections::HashSet::new();
    let mut most = 0;
    for (_, e) in evs {
        match e.id {
            ids::WAKEUP | ids::WAKEUP_NEW => {
                active.insert(e.pid);
            }
            ids::CTX_SWITCH => {
                if e.pid != 0 && e.b() != prev_state::RUNNABLE {
                    active.remove(&e.pid);
                }
                if e.a() != 0 {
                    active.insert(e.a());
                }
            }
            _ => {}
        }
        most = most.max(active.len());
    }
    most
}

#[test]
fn configure_is_half_short_fork_wait_chains_half_long_lone_tasks() {
    // At a steady frequency, time follows work.
    let m = common::quiet("default");
    let (out, evs) = run(&m, Governor::Performance, "cfs", builtin("configure:checks=60", &m));
    // The chain's tasks take at most 12 ms of work (cc1, 8 ms +- 50 %), the
    // long ones at least 50 ms (100 ms +- 50 %).
    let long: u64 = runs(&evs).iter().map(|r| r.2 - r.1).filter(|&d| d > 30_000_000).sum();
    let share = long as f64 / out.makespan_ns as f64;
    assert!((0.4..0.6).contains(&share), "long tasks {share:.2} of the run");
    // One or two tasks at a time: a parent goes on briefly after a fork,
    // with its child woken.
    assert_eq!(most_active(&evs), 2);
    // Without the long tasks, no run is that long.
    let (_, evs) = run(&m, Governor::Performance, "cfs", builtin("configure:checks=60,long_share=0", &m));
    assert!(runs(&evs).iter().all(|r| r.2 - r.1 < 30_000_000));
}

#[test]
fn kbuild_phase_before_the_parallel_one_lasts_about_4_4_s_on_the_e7_under_cfs() {
    // Its steps are sized from the paper's figures at the lowest frequency,
    // one or two tasks at a time, with a burst of parallel work in the
    // middle (Fewer Cores, More Hertz, sections 2 and 4.4): CFS's dispersal
    // keeps the steps there.
    let m = common::quiet("xeon-e7-8870v4");
    let (out, evs) = run(&m, Governor::Powersave, "cfs", builtin("kbuild:files=0,seq_post=0", &m));
    let s = out.makespan_ns as f64 / 1e9;
    assert!((3.9..4.9).contains(&s), "{s} s");
    // The burst runs a compile job on every CPU.
    assert!(most_active(&evs) >= m.nr_cpus as usize);
    // Without it, the chains alone: at most two tasks at a time, for 4 s.
    let (chains, evs) = run(&m, Governor::Powersave, "cfs", builtin("kbuild:burst=0,files=0,seq_post=0", &m));
    let c = chains.makespan_ns as f64 / 1e9;
    assert!((3.5..4.5).contains(&c), "{c} s");
    assert_eq!(most_active(&evs), 2);
    // Kept on warm cores (S_move), the phase is shorter.
    let (fast, _) = run(&m, Governor::Powersave, "smove", builtin("kbuild:files=0,seq_post=0", &m));
    assert!((fast.makespan_ns as f64) < 0.8 * out.makespan_ns as f64);
}

#[test]
fn mkl_dnn_threads_block_at_barriers_instead_of_spinning() {
    let m = common::quiet("default");
    let iters = 20;
    let futex_waits = |spec: &str| {
        let (_, evs) = run(&m, Governor::Powersave, "cfs", builtin(spec, &m));
        evs.iter().filter(|(_, e)| e.id == ids::FUTEX_WAIT).count() as u64
    };
    // Every thread but the last to arrive sleeps at every barrier.
    let blocked = futex_waits(&format!("mkl-dnn:iterations={iters}"));
    assert_eq!(blocked, (m.nr_cpus as u64 - 1) * iters);
    // Spinning first, as libgomp does, most waits end before the spin does.
    let spun = futex_waits(&format!("mkl-dnn:iterations={iters},spin_us=3000"));
    assert!(spun * 4 < blocked, "{spun} sleeps after a spin, {blocked} without");
}

#[test]
fn nas_lu_sweeps_are_a_wavefront_of_busy_waits() {
    let m = common::quiet("default");
    // 4 planes: with 8 threads a sweep takes 4 + 7 block times (the
    // pipeline fills and drains), with 1 thread 4. The barrier kernel of
    // the same work shows what 8 threads cost otherwise (the turbo ceiling).
    let time = |spec: &str| run(&m, Governor::Performance, "cfs", builtin(spec, &m)).0.makespan_ns as f64;
    let lu = |t: u32| time(&format!("nas-lu:threads={t},planes=4,iterations=20,jitter=0"));
    let nas = |t: u32| time(&format!("nas:threads={t},iterations=20,jitter=0"));
    // Half the work is the right-hand side, half the sweeps.
    let want = 0.5 + 0.5 * (4.0 + 7.0) / 4.0;
    let got = (lu(8) / lu(1)) / (nas(8) / nas(1));
    assert!((got - want).abs() < 0.1 * want, "{got}, want {want}");
    // Waiting on a neighbour is a spin: the only sleeps are at the three
    // barriers of each iteration (spin_us=0), by all but the last thread.
    let (_, evs) = run(&m, Governor::Performance, "cfs", builtin("nas-lu:threads=8,planes=4,iterations=20,spin_us=0", &m));
    let sleeps = evs.iter().filter(|(_, e)| e.id == ids::FUTEX_WAIT).count();
    assert_eq!(sleeps, 3 * 20 * 7);
    assert_eq!(evs.iter().filter(|(_, e)| e.id == ids::BLOCK).count(), 0);
}

#[test]
fn schbench_message_thread_waits_for_a_worker_then_sleeps() {
    let m = common::quiet("default");
    // One message thread (pid 2) with 4 workers; c = s = 30 ms, 2 s.
    let (out, evs) = run(&m, Governor::Performance, "cfs", builtin("schbench:message=1,workers=4,runtime_ms=2000", &m));
    assert_eq!(out.makespan_ns, 2_000_000_000, "the run ends at its run time");
    let batches: Vec<u64> = evs.iter().filter(|(_, e)| e.id == ids::FUTEX_WAKE && e.pid == 2).map(|(_, e)| e.ts).collect();
    let waits = evs.iter().filter(|(_, e)| e.id == ids::FUTEX_WAIT && e.pid == 2).count();
    // It waits on its futex once per batch, and the workers wake it.
    assert!(waits + 1 >= batches.len() && waits <= batches.len(), "{waits} waits, {} batches", batches.len());
    // A batch follows a worker's 30 ms and the message thread's 30-37.5 ms
    // sleep.
    let gaps: Vec<u64> = batches.windows(2).map(|w| w[1] - w[0]).collect();
    let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64 / 1e6;
    assert!((60.0..70.0).contains(&mean), "{mean} ms between batches");
    assert!(out.measures > 4 * 20, "{} wake-ups measured", out.measures);
}
