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
#[path = "roundtrip.rs"]
mod roundtrip;
#[path = "stats_random.rs"]
mod stats_random;
#[path = "stats_scenarios.rs"]
mod stats_scenarios;

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
