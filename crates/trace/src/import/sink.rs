// SPDX-License-Identifier: GPL-2.0-only
//! Where an import's events go: the writer, with the per-CPU time order an
//! input must keep, the process table and the counts of the report.

use std::collections::BTreeMap;
use std::io::Write;

use super::ImportReport;
use crate::error::{Result, TraceError};
use crate::event::{Event, EventTable};
use crate::meta::{Header, Machine, Provenance};
use crate::writer::Writer;

/// Distinct skip reasons kept by name; further ones are counted together.
const MAX_SKIP_REASONS: usize = 64;

/// Writes events and keeps the counts of an import.
pub(crate) struct Sink<W: Write> {
    pub w: Writer<W>,
    /// The input named in errors (SchedLog: the CPU's file).
    pub name: String,
    last_ts: Vec<u64>,
    pub report: ImportReport,
    pids: std::collections::HashSet<u32>,
}

impl<W: Write> Sink<W> {
    pub fn new(w: Writer<W>, name: &str, cpus: u32) -> Self {
        Sink {
            w,
            name: name.to_string(),
            last_ts: vec![0; cpus as usize],
            report: ImportReport { cpus, ..Default::default() },
            pids: Default::default(),
        }
    }

    /// Push one event, refusing time going backwards on a CPU.
    pub fn push(&mut self, at: Loc, cpu: u32, ev: Event) -> Result<()> {
        let Some(last) = self.last_ts.get_mut(cpu as usize) else {
            return Err(at.err(&self.name, format!("CPU {cpu} is outside the machine's {} CPUs", self.report.cpus)));
        };
        if ev.ts < *last {
            return Err(at.err(
                &self.name,
                format!(
                    "event at {} ns on CPU {cpu} comes after one at {} ns on that CPU; expected each CPU's events in time order",
                    ev.ts, *last
                ),
            ));
        }
        *last = ev.ts;
        self.w.push(cpu, ev)?;
        self.report.events += 1;
        Ok(())
    }

    pub fn note(&mut self, pid: u32, ppid: u32, comm: &str, ts: u64) {
        // pid 0 is each CPU's idle task (swapper/N): not a process.
        if pid == 0 {
            return;
        }
        let comm = if comm.starts_with('<') && comm.ends_with('>') { "" } else { comm };
        self.w.note_process(pid, ppid, comm, ts);
        self.pids.insert(pid);
    }

    pub fn skip(&mut self, reason: &str) {
        skip(&mut self.report.skipped, reason);
    }

    pub fn finish(mut self) -> Result<ImportReport> {
        self.report.processes = self.pids.len() as u64;
        self.w.finish()?;
        Ok(self.report)
    }
}

pub(crate) fn skip(map: &mut BTreeMap<String, u64>, reason: &str) {
    if let Some(n) = map.get_mut(reason) {
        *n += 1;
    } else if map.len() < MAX_SKIP_REASONS {
        map.insert(reason.to_string(), 1);
    } else {
        *map.entry("other".to_string()).or_insert(0) += 1;
    }
}

/// Where in an input an event came from, for errors.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Loc {
    Line(u64),
    Offset(u64),
}

impl Loc {
    pub fn err(self, name: &str, msg: String) -> TraceError {
        match self {
            Loc::Line(l) => TraceError::at_line(name, l, msg),
            Loc::Offset(o) => TraceError::at_offset(name, o, msg),
        }
    }
}

pub(crate) fn header(machine: Machine, tool: &str, input: &str) -> Header {
    Header {
        machine,
        events: EventTable::default(),
        provenance: Provenance::Import { tool: tool.to_string(), input: input.to_string() },
        wall_clock_start: None,
    }
}
