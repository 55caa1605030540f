// SPDX-License-Identifier: GPL-2.0-only
//! The integration tests of the simulator, as one binary: cargo builds and links
//! each test target on its own, and every one links the whole crate graph.
//! Each file here is a module, run as before (`cargo test --test sim NAME::`
//! runs one file's tests). `#[path]` makes each file's own `mod` lines
//! resolve in this directory, as when the file was a crate root.

#[path = "affinity.rs"]
mod affinity;
#[path = "agree.rs"]
mod agree;
#[path = "background.rs"]
mod background;
#[path = "barrier.rs"]
mod barrier;
#[path = "cfs_balance.rs"]
mod cfs_balance;
#[path = "cpuset.rs"]
mod cpuset;
#[path = "drivers.rs"]
mod drivers;
#[path = "eevdf.rs"]
mod eevdf;
#[path = "haiku_old.rs"]
mod haiku_old;
#[path = "hotplug.rs"]
mod hotplug;
#[path = "hunt_named.rs"]
mod hunt_named;
#[path = "kernel_time.rs"]
mod kernel_time;
#[path = "layers.rs"]
mod layers;
#[path = "machines_today.rs"]
mod machines_today;
#[path = "migrate.rs"]
mod migrate;
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
#[path = "warm.rs"]
mod warm;
#[path = "weights.rs"]
mod weights;
#[path = "work.rs"]
mod work;
#[path = "workload_shapes.rs"]
mod workload_shapes;

/// A file added to tests/ runs only once declared above.
#[test]
fn every_test_file_is_declared() {
    warmcore_test_support::every_test_file_is_declared(env!("CARGO_MANIFEST_DIR"));
}
