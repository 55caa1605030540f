// SPDX-License-Identifier: GPL-2.0-only
//! Importers: traces from tools people already use, turned into `.wct`.
//!
//! - `perf script` text of a `perf sched record` ([`perf_script`]),
//! - `trace-cmd report` text ([`trace_cmd`]),
//! - SchedLog raw dumps: one binary file per CPU plus the "id name" table
//!   ([`schedlog`]).
//!
//! Every importer runs from bytes in memory ([`import_bytes`]) as well as from
//! files ([`import_path`]); both read zstd-compressed input transparently.
//! A malformed input gives one [`TraceError`] naming the input and the line
//! (text) or byte offset (binary) and what was expected there; never a panic.
//! Memory stays bounded: text is read one line at a time (at most
//! [`MAX_LINE`] bytes a line), binary dumps one entry at a time, and the
//! writer keeps one chunk per CPU.
//!
//! The parts they share, one file each: `input` reads plain or zstd bytes
//! and bounded lines, `text` is the engine of the two text formats (each
//! format brings a `TextFormat`), `fields` reads the kernel's `field=value`
//! print format both tools print, `topology` infers the machine, and `sink`
//! writes the events and keeps the report.
//!
//! The two text importers read their input twice: a first pass checks every
//! line and learns the machine (the CPUs the events name, the topology lines
//! of `perf script --header`) and whether the trace has `sched_waking`; the
//! second pass writes.
//!
//! Wake-ups: the kernel emits `sched_waking` on the waker's CPU when a wake-up
//! starts and `sched_wakeup` when it completes, possibly on the target CPU.
//! When the input has any `sched_waking`, each WAKEUP comes from
//! `sched_waking` (on the waker's CPU, `b` = the task running there) and every
//! `sched_wakeup` is skipped as its duplicate; an input without
//! `sched_waking` (older kernels, or only `sched_wakeup` recorded) takes its
//! WAKEUPs from `sched_wakeup`, on the CPU that emitted it. So each wake-up
//! is counted once. `sched_wakeup_new` is a separate tracepoint and always
//! gives WAKEUP_NEW.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::Path;

use crate::error::{Result, TraceError};

mod fields;
mod input;
mod sink;
mod text;
mod topology;

pub mod perf_script;
pub mod schedlog;
pub mod trace_cmd;

pub use fields::IDLE_EXIT_STATE;
pub(crate) use fields::{parse_pid, parse_prev_state, parse_raw_fields, parse_ts, parse_u32, wake_kind};
pub(crate) use input::{open_file, read_all, Lines};
pub(crate) use sink::{header, Loc, Sink};
pub(crate) use text::{Head, HeaderFact, Parsed, Rec, TextFormat, WakeKind};

/// The longest text line an importer accepts (bytes).
pub const MAX_LINE: usize = 64 * 1024;
/// The most CPUs an input may name: a bound on what a corrupt input can make
/// the writer allocate.
pub const MAX_CPUS: u32 = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    PerfScript,
    TraceCmd,
    SchedLog,
}

impl Format {
    pub fn tool(self) -> &'static str {
        match self {
            Format::PerfScript => "perf script",
            Format::TraceCmd => "trace-cmd report",
            Format::SchedLog => "SchedLog",
        }
    }
}

/// What an import did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    pub events: u64,
    pub cpus: u32,
    pub processes: u64,
    /// Input lines (or entries) not turned into events, by reason.
    pub skipped: BTreeMap<String, u64>,
}

impl ImportReport {
    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }

    /// One line: events, CPUs, processes, skipped lines by reason.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} events on {} CPUs, {} processes, {} skipped",
            self.events,
            self.cpus,
            self.processes,
            self.skipped_total()
        );
        if !self.skipped.is_empty() {
            let mut v: Vec<(&String, &u64)> = self.skipped.iter().collect();
            v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let parts: Vec<String> = v.iter().map(|(r, n)| format!("{r}: {n}")).collect();
            s.push_str(&format!(" ({})", parts.join(", ")));
        }
        s
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct ImportOptions {
    /// zstd level for the output's event chunks (None: raw chunks).
    pub zstd_level: Option<i32>,
}

/// Import from bytes in memory into `out`. `name` names the input in errors
/// and in the output's provenance. zstd-compressed data is decompressed.
///
/// For [`Format::SchedLog`] the bytes are a bundle (see
/// [`schedlog::split_bundle`]): the "id name" table text, a NUL byte, then
/// each CPU's dump preceded by its length as a little-endian u32.
pub fn import_bytes<W: Write>(
    format: Format,
    name: &str,
    data: &[u8],
    out: W,
    out_name: &str,
    opts: ImportOptions,
) -> Result<ImportReport> {
    match format {
        Format::SchedLog => schedlog::import_bundle(name, data, out, out_name, opts),
        _ => {
            let open = || -> Result<Box<dyn BufRead + '_>> { input::open_slice(name, data) };
            text::import_text(format, name, &open, out, out_name, opts)
        }
    }
}

/// Import the file (or, for SchedLog, the dump directory) `input` into the
/// `.wct` file `output`.
pub fn import_path(format: Format, input: &Path, output: &Path, opts: ImportOptions) -> Result<ImportReport> {
    let out_name = output.display().to_string();
    let name = file_name(input);
    let in_name = input.display().to_string();
    // Written aside and renamed at the end (crate::output): a failed import
    // leaves no partial file and keeps an older output of the same name.
    let out = crate::output::Output::create(output, &[input])?;
    let r = if format == Format::SchedLog {
        out.file().and_then(|f| schedlog::import_dir(input, f, &out_name, opts))
    } else if input.is_dir() {
        Err(TraceError::new(&in_name, format!("is a directory; expected a {} text file", format.tool())))
    } else {
        open_file(&in_name, input).and_then(|_| {
            let open = || -> Result<Box<dyn BufRead>> { open_file(&in_name, input) };
            text::import_text(format, &name, &open, out.file()?, &out_name, opts)
        })
    };
    match r {
        Ok(rep) => {
            out.commit()?;
            Ok(rep)
        }
        Err(mut e) => {
            // Errors name the input as given on the command line.
            if e.path == name {
                e.path = in_name.clone();
            }
            Err(e)
        }
    }
}

/// The file name of a path, without its directories: what provenance records.
pub fn file_name(p: &Path) -> String {
    p.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| p.display().to_string())
}
