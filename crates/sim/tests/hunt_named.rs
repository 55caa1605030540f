// SPDX-License-Identifier: GPL-2.0-only
//! The workload `hunt:seed=S,run=I` (docs/hunt.md, On Ray): run I of a hunt
//! rebuilt from the seed, the run and the machine it picked, the same
//! workload as the hunt's and the same run under `warmcore sim`.

use warmcore_sim::hunt::{self, DEFAULT_MACHINES};
use warmcore_sim::{load_workload, wfile, Machine, RunConfig};

fn shapes() -> Vec<(String, u32)> {
    DEFAULT_MACHINES.iter().map(|n| (n.to_string(), Machine::load(n).unwrap().nr_cpus)).collect()
}

#[test]
fn the_named_workload_is_the_hunts_run() {
    let shapes = shapes();
    for i in 0..40 {
        let case = hunt::generate(3, i, &shapes);
        let m = Machine::load(&case.machine).unwrap();
        let w = load_workload(&format!("hunt:seed=3,run={i}"), &m).unwrap();
        assert_eq!(wfile::to_toml(&w).unwrap(), wfile::to_toml(&case.workload).unwrap(), "run {i} on {}", case.machine);
    }
}

#[test]
fn a_named_run_under_sim_is_the_hunts_check() {
    let shapes = vec![("default".to_string(), Machine::load("default").unwrap().nr_cpus)];
    for i in 0..3 {
        let case = hunt::generate(5, i, &shapes);
        let m = Machine::load("default").unwrap();
        let checked = hunt::check_timed(&m, "scx:default", &case.workload, case.seed).unwrap();
        let mut cfg = RunConfig::new("default", &format!("hunt:seed=5,run={i}"), "scx:default", "powersave", case.seed);
        cfg.limits.max_sim_ns = hunt::RUN_LIMIT_NS;
        let r = warmcore_sim::run(&cfg).unwrap();
        assert_eq!(r.makespan_ns, checked.sim_ns, "run {i}");
        assert_eq!(r.partial, checked.failure.map(|f| f.what), "run {i}");
    }
}

#[test]
fn bad_parameters_are_one_line() {
    let m = Machine::load("default").unwrap();
    for spec in ["hunt", "hunt:seed=1", "hunt:seed=x,run=1", "hunt:seed=1,run=2,tasks=3"] {
        let e = load_workload(spec, &m).unwrap_err().to_string();
        assert!(e.contains("hunt:seed=S,run=I") && !e.contains('\n'), "{spec}: {e}");
    }
}
