// SPDX-License-Identifier: GPL-2.0-only
//! The built-in workloads' shapes (docs/model.md, Workloads): work that does
//! not scale with the frequency, and the structure each copies from its
//! real program.

use warmcore_sim::engine::Outcome;
use warmcore_sim::program::{Amount, Step, Workload, REF_CYCLES_PER_US};
use warmcore_sim::{workloads, Governor, Machine};
use warmcore_trace::Event;

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
    let m = Machine::load("default").unwrap();
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
    let m = Machine::load("default").unwrap();
    let err = workloads::build("nas", &[("stall".into(), "1.5".into())], &m).unwrap_err();
    assert!(err.to_string().contains("at most 1"), "{err}");
    let w = builtin("nas:stall=0.5", &m);
    assert_eq!(w.stall, 0.5);
}
