// SPDX-License-Identifier: GPL-2.0-only
//! The integration tests of the scheduler's loader, as one binary: cargo builds and links
//! each test target on its own, and every one links the whole crate graph.
//! Each file here is a module, run as before (`cargo test --test sched NAME::`
//! runs one file's tests). `#[path]` makes each file's own `mod` lines
//! resolve in this directory, as when the file was a crate root.

#[path = "intf.rs"]
mod intf;
#[path = "preflight.rs"]
mod preflight;
#[path = "settings.rs"]
mod settings;

/// A file added to tests/ runs only once declared above.
#[test]
fn every_test_file_is_declared() {
    warmcore_test_support::every_test_file_is_declared(env!("CARGO_MANIFEST_DIR"));
}
