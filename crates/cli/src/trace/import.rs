// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore trace import`
use std::path::Path;

use anyhow::Result;
use clap::ValueEnum;
use warmcore_trace::import::{import_path, Format, ImportOptions};

/// The tool whose output is imported.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum From {
    /// Text of `perf script` (optionally with --ns and --header -I) after `perf sched record`.
    PerfScript,
    /// Text of `trace-cmd report` (plugin formats or raw `field=value`).
    TraceCmd,
    /// A SchedLog dump directory: `events` ("ID NAME" lines) and cpu0, cpu1, ... (24-byte entries).
    Schedlog,
}

pub fn run(from: From, input: &Path, output: &Path, zstd: bool) -> Result<()> {
    let format = match from {
        From::PerfScript => Format::PerfScript,
        From::TraceCmd => Format::TraceCmd,
        From::Schedlog => Format::SchedLog,
    };
    let opts = ImportOptions { zstd_level: zstd.then_some(3) };
    let report = import_path(format, input, output, opts)?;
    super::say(output, format!("{}: {}", output.display(), report.summary()));
    Ok(())
}
