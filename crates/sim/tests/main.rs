// SPDX-License-Identifier: GPL-2.0-only
//! The integration tests of the simulator, as one binary: cargo builds and links
//! each test target on its own, and every one links the whole crate graph.
//! Each file here is a module, run as before (`cargo test --test sim NAME::`
//! runs one file's tests). `#[path]` makes each file's own `mod` lines
//! resolve in this directory, as when the file was a crate root.

#[path = "background.rs"]
mod background;
#[path = "barrier.rs"]
mod barrier;
#[path = "cfs_balance.rs"]
mod cfs_balance;
#[path = "haiku_old.rs"]
mod haiku_old;
#[path = "kernel_time.rs"]
mod kernel_time;
#[path = "model.rs"]
mod model;
#[path = "nest.rs"]
mod nest;
#[path = "peers.rs"]
mod peers;
#[path = "policies.rs"]
mod policies;
#[path = "scx.rs"]
mod scx;
#[path = "smoke.rs"]
mod smoke;
#[path = "spec_props.rs"]
mod spec_props;
#[path = "trace_order.rs"]
mod trace_order;
#[path = "workload_shapes.rs"]
mod workload_shapes;

/// With autotests off, a file added here runs only once declared above:
/// fail rather than leave it silently unrun.
#[test]
fn every_test_file_is_declared() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".rs") && name != "main.rs" {
            assert!(main.contains(&format!("#[path = \"{name}\"]")), "tests/{name} is not declared in tests/main.rs, so it does not run: add it there");
        }
    }
}
