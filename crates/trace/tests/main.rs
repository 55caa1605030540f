// SPDX-License-Identifier: GPL-2.0-only
//! The integration tests of the trace format, as one binary: cargo builds and links
//! each test target on its own, and every one links the whole crate graph.
//! Each file here is a module, run as before (`cargo test --test trace NAME::`
//! runs one file's tests). `#[path]` makes each file's own `mod` lines
//! resolve in this directory, as when the file was a crate root.

#[cfg(feature = "parquet")]
#[path = "export_parquet.rs"]
mod export_parquet;
#[path = "export_perfetto.rs"]
mod export_perfetto;
#[path = "import_perf.rs"]
mod import_perf;
#[path = "import_schedlog.rs"]
mod import_schedlog;
#[path = "import_trace_cmd.rs"]
mod import_trace_cmd;
#[path = "placement.rs"]
mod placement;
#[path = "roundtrip.rs"]
mod roundtrip;
#[path = "stats_random.rs"]
mod stats_random;
#[path = "stats_scenarios.rs"]
mod stats_scenarios;

/// A file added to tests/ runs only once declared above.
#[test]
fn every_test_file_is_declared() {
    warmcore_test_support::every_test_file_is_declared(env!("CARGO_MANIFEST_DIR"));
}
