// SPDX-License-Identifier: GPL-2.0-only
//! The integration tests of the warmcore binary, as one binary: cargo builds and links
//! each test target on its own, and every one links the whole crate graph.
//! Each file here is a module, run as before (`cargo test --test cli NAME::`
//! runs one file's tests). `#[path]` makes each file's own `mod` lines
//! resolve in this directory, as when the file was a crate root.

#[path = "bad_input.rs"]
mod bad_input;
#[path = "cli.rs"]
mod cli;
#[path = "dist.rs"]
mod dist;
#[path = "hunt.rs"]
mod hunt;
#[path = "outputs.rs"]
mod outputs;
#[path = "sched.rs"]
mod sched;
#[path = "stands_alone.rs"]
mod stands_alone;
#[path = "statuses.rs"]
mod statuses;
#[path = "trace_chains.rs"]
mod trace_chains;
#[path = "trace_stats.rs"]
mod trace_stats;

/// A file added to tests/ runs only once declared above.
#[test]
fn every_test_file_is_declared() {
    warmcore_test_support::every_test_file_is_declared(env!("CARGO_MANIFEST_DIR"));
}
