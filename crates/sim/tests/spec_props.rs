// SPDX-License-Identifier: GPL-2.0-only
//! Workload specs (`name:key=value,...`) made at random from every built-in
//! workload, its keys and values at and past their ranges: each is built or
//! refused in one line, none panics, and what is built is bounded
//! (docs/conventions.md, Bounds). Seeded, so every run tries the same.

use warmcore_sim::program::MAX_LIVE_TASKS;
use warmcore_sim::run::load_workload;
use warmcore_sim::workloads::WORKLOADS;
use warmcore_sim::Machine;

const KEYS: &[&str] = &[
    "groups", "fds", "loops", "jobs", "files", "checks", "iterations", "threads", "workers", "message", "copies", "test",
    "operations", "tasks", "planes", "transactions", "pipe_msgs", "jitter", "stall", "seq_pre", "burst", "nope",
];
const VALUES: &[&str] =
    &["0", "1", "2", "-1", "1.5", "1e3", "100000", "1000000000", "99999999999999999999", "inf", "NaN", "x", ""];

#[test]
fn random_workload_specs_are_built_or_refused_in_one_line() {
    let m = Machine::load("default").unwrap();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    for _ in 0..3000 {
        let name = WORKLOADS[next(WORKLOADS.len())];
        let params: Vec<String> =
            (0..next(3)).map(|_| format!("{}={}", KEYS[next(KEYS.len())], VALUES[next(VALUES.len())])).collect();
        let spec = if params.is_empty() { name.to_string() } else { format!("{name}:{}", params.join(",")) };
        match load_workload(&spec, &m) {
            Ok(w) => assert!(w.initial.len() as u64 <= MAX_LIVE_TASKS && w.validate().is_ok(), "{spec}"),
            Err(e) => {
                let e = e.to_string();
                assert!(!e.is_empty() && !e.contains('\n'), "{spec}: {e}");
            }
        }
    }
}
