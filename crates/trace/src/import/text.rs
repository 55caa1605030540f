// SPDX-License-Identifier: GPL-2.0-only
//! The shared engine of the two text importers (`perf script`, `trace-cmd
//! report`): the lines a format splits into, the first pass that checks every
//! line and learns the machine, and the second that turns records into
//! events. Each format brings only its [`TextFormat`].

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use super::fields::IDLE_EXIT_STATE;
use super::sink::{header, Loc, Sink};
use super::topology::machine;
use super::{perf_script, trace_cmd, Format, ImportOptions, ImportReport, Lines, MAX_CPUS};
use crate::error::{Result, TraceError};
use crate::event::{ids, prev_state, Event};
use crate::writer::{Writer, WriterOptions};

/// The common part of an event line: the task running when it was recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head<'a> {
    pub comm: &'a str,
    pub tid: u32,
    pub cpu: u32,
    pub ts: u64,
    /// The event name without its system (`sched_switch`, `cpu_idle`).
    pub event: &'a str,
    pub fields: &'a str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WakeKind {
    Waking,
    Wakeup,
    WakeupNew,
}

/// One imported event's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rec<'a> {
    Switch { prev_comm: &'a str, prev_pid: u32, state: u32, next_comm: &'a str, next_pid: u32 },
    Wake { kind: WakeKind, comm: &'a str, pid: u32, target: u32 },
    Fork { parent_comm: &'a str, parent: u32, child_comm: &'a str, child: u32 },
    Exec { comm: &'a str, pid: u32 },
    Exit { comm: &'a str, pid: u32 },
    Migrate { comm: &'a str, pid: u32, orig: u32, dest: u32 },
    Freq { cpu: u32, khz: u32 },
    Idle { cpu: u32, state: u32 },
}

/// The events the text importers turn into warmcore events.
pub(crate) const IMPORTED: &[&str] = &[
    "sched_switch",
    "sched_waking",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_process_fork",
    "sched_process_exec",
    "sched_process_exit",
    "sched_migrate_task",
    "cpu_frequency",
    "cpu_idle",
];

/// What a line of a text format is.
pub(crate) enum Parsed<'a> {
    /// A comment, a blank line or a header line, with what it says (if anything).
    Meta(Option<HeaderFact>),
    Event(Head<'a>),
}

/// Facts about the machine from header lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HeaderFact {
    NrCpus(u32),
    Hostname(String),
    /// cpu, core, die, socket as the tool numbers them.
    Topo(u32, u32, u32, u32),
}

/// A text format: how to split a line and read one event's fields.
pub(crate) trait TextFormat {
    const TOOL: &'static str;
    /// The shape of an event line, for error messages.
    const SHAPE: &'static str;
    fn parse_line(line: &str) -> std::result::Result<Parsed<'_>, String>;
    fn parse_event<'a>(head: &Head<'a>) -> std::result::Result<Rec<'a>, String>;
}

/// What the first pass learnt of the input.
pub(super) struct Pass1 {
    pub max_cpu: Option<u32>,
    pub has_waking: bool,
    pub nr_cpus: Option<u32>,
    pub hostname: Option<String>,
    pub topo: BTreeMap<u32, (u32, u32, u32)>,
}

fn check_cpu(name: &str, line: u64, what: &str, cpu: u32) -> Result<u32> {
    if cpu >= MAX_CPUS {
        return Err(TraceError::at_line(name, line, format!("{what} {cpu}: expected a CPU number below {MAX_CPUS}")));
    }
    Ok(cpu)
}

/// The CPUs an event names, for sizing the machine.
fn rec_cpus(h: &Head, r: &Rec) -> [Option<(&'static str, u32)>; 3] {
    let line_cpu = Some(("CPU", h.cpu));
    match *r {
        Rec::Wake { target, .. } => [line_cpu, Some(("target CPU", target)), None],
        Rec::Migrate { orig, dest, .. } => [line_cpu, Some(("orig_cpu", orig)), Some(("dest_cpu", dest))],
        Rec::Freq { cpu, .. } | Rec::Idle { cpu, .. } => [line_cpu, Some(("cpu_id", cpu)), None],
        _ => [line_cpu, None, None],
    }
}

fn parse_rec<'a, F: TextFormat>(name: &str, lineno: u64, head: &Head<'a>) -> Result<Option<Rec<'a>>> {
    if !IMPORTED.contains(&head.event) {
        return Ok(None);
    }
    F::parse_event(head).map(Some).map_err(|msg| {
        TraceError::at_line(name, lineno, format!("{}: {msg}", head.event))
    })
}

fn first_pass<'a, F: TextFormat>(name: &str, r: Box<dyn BufRead + 'a>) -> Result<Pass1> {
    let mut p = Pass1 { max_cpu: None, has_waking: false, nr_cpus: None, hostname: None, topo: BTreeMap::new() };
    let mut lines = Lines::new(name, r);
    let mut seen_event = false;
    while let Some((n, line)) = lines.next_line()? {
        let parsed = F::parse_line(line).map_err(|msg| {
            if seen_event {
                TraceError::at_line(name, n, format!("{msg}; expected {}", F::SHAPE))
            } else {
                TraceError::at_line(
                    name,
                    n,
                    format!("{msg}; expected {} (is this {} output?)", F::SHAPE, F::TOOL),
                )
            }
        })?;
        match parsed {
            Parsed::Meta(Some(HeaderFact::NrCpus(c))) => {
                p.nr_cpus = Some(check_cpu(name, n, "number of CPUs", c)?);
            }
            Parsed::Meta(Some(HeaderFact::Hostname(h))) => p.hostname = Some(h),
            Parsed::Meta(Some(HeaderFact::Topo(cpu, core, die, socket))) => {
                check_cpu(name, n, "CPU", cpu)?;
                p.topo.insert(cpu, (core, die, socket));
            }
            Parsed::Meta(None) => {}
            Parsed::Event(h) => {
                seen_event = true;
                check_cpu(name, n, "CPU", h.cpu)?;
                p.max_cpu = Some(p.max_cpu.map_or(h.cpu, |m| m.max(h.cpu)));
                if let Some(rec) = parse_rec::<F>(name, n, &h)? {
                    for (what, c) in rec_cpus(&h, &rec).into_iter().flatten() {
                        check_cpu(name, n, what, c)?;
                        p.max_cpu = Some(p.max_cpu.map_or(c, |m| m.max(c)));
                    }
                    if let Rec::Wake { kind: WakeKind::Waking, .. } = rec {
                        p.has_waking = true;
                    }
                }
            }
        }
    }
    if !seen_event {
        return Err(TraceError::at_line(
            name,
            lines.line.max(1),
            format!("no event lines; expected {} lines from {}", F::SHAPE, F::TOOL),
        ));
    }
    Ok(p)
}

pub(super) fn import_text<'s, W: Write>(
    format: Format,
    name: &str,
    open: &dyn Fn() -> Result<Box<dyn BufRead + 's>>,
    out: W,
    out_name: &str,
    opts: ImportOptions,
) -> Result<ImportReport> {
    match format {
        Format::PerfScript => run_text::<perf_script::PerfScript, W>(name, open, out, out_name, opts),
        Format::TraceCmd => run_text::<trace_cmd::TraceCmd, W>(name, open, out, out_name, opts),
        Format::SchedLog => unreachable!("SchedLog dumps are binary"),
    }
}

fn run_text<'s, F: TextFormat, W: Write>(
    name: &str,
    open: &dyn Fn() -> Result<Box<dyn BufRead + 's>>,
    out: W,
    out_name: &str,
    opts: ImportOptions,
) -> Result<ImportReport> {
    let p = first_pass::<F>(name, open()?)?;
    let m = machine(name, &p);
    let cpus = m.nr_cpus();
    let hdr = header(m, F::TOOL, name);
    let w = Writer::new(out, out_name, &hdr, WriterOptions { zstd_level: opts.zstd_level, ..Default::default() })?;
    let mut sink = Sink::new(w, name, cpus);
    let mut lines = Lines::new(name, open()?);
    while let Some((n, line)) = lines.next_line()? {
        // The first pass accepted every line: parse errors cannot happen here
        // unless the input changed under us, and then they are reported.
        let parsed = F::parse_line(line).map_err(|m| TraceError::at_line(name, n, m))?;
        let Parsed::Event(h) = parsed else { continue };
        let at = Loc::Line(n);
        sink.note(h.tid, 0, h.comm, h.ts);
        let Some(rec) = parse_rec::<F>(name, n, &h)? else {
            sink.skip(h.event);
            continue;
        };
        emit(&mut sink, at, &h, rec, p.has_waking)?;
    }
    sink.finish()
}

fn emit<W: Write>(sink: &mut Sink<W>, at: Loc, h: &Head, rec: Rec, has_waking: bool) -> Result<()> {
    let (ts, cpu) = (h.ts, h.cpu);
    match rec {
        Rec::Switch { prev_comm, prev_pid, state, next_comm, next_pid } => {
            sink.note(prev_pid, 0, prev_comm, ts);
            sink.note(next_pid, 0, next_comm, ts);
            if prev_pid != 0 {
                match state {
                    prev_state::BLOCKED => sink.push(at, cpu, Event::new(ts, prev_pid, ids::BLOCK, 0, 0))?,
                    prev_state::BLOCKED_IO => sink.push(at, cpu, Event::new(ts, prev_pid, ids::BLOCK_IO, 0, 0))?,
                    _ => {}
                }
            }
            sink.push(at, cpu, Event::new(ts, prev_pid, ids::CTX_SWITCH, next_pid, state))?;
        }
        Rec::Wake { kind, comm, pid, target } => {
            sink.note(pid, 0, comm, ts);
            let id = match kind {
                WakeKind::Waking => ids::WAKEUP,
                WakeKind::Wakeup if has_waking => {
                    sink.skip("sched_wakeup (counted by its sched_waking)");
                    return Ok(());
                }
                WakeKind::Wakeup => ids::WAKEUP,
                WakeKind::WakeupNew => ids::WAKEUP_NEW,
            };
            sink.push(at, cpu, Event::new(ts, pid, id, target, h.tid))?;
        }
        Rec::Fork { parent_comm, parent, child_comm, child } => {
            sink.note(parent, 0, parent_comm, ts);
            sink.push(at, cpu, Event::new(ts, child, ids::FORK, parent, 0))?;
            sink.note(child, parent, child_comm, ts);
        }
        Rec::Exec { comm, pid } => {
            sink.push(at, cpu, Event::with_comm(ts, pid, ids::EXEC, comm))?;
            // The writer keeps 8 bytes of the comm from EXEC; the table keeps it whole.
            sink.note(pid, 0, comm, ts);
        }
        Rec::Exit { comm, pid } => {
            sink.note(pid, 0, comm, ts);
            sink.push(at, cpu, Event::new(ts, pid, ids::EXIT, 0, 0))?;
        }
        Rec::Migrate { comm, pid, orig, dest } => {
            sink.note(pid, 0, comm, ts);
            sink.push(at, cpu, Event::new(ts, pid, ids::MIGRATE, orig, dest))?;
        }
        Rec::Freq { cpu: c, khz } => sink.push(at, c, Event::new(ts, 0, ids::FREQ_CHANGE, khz, 0))?,
        Rec::Idle { cpu: c, state } => {
            let ev = if state == IDLE_EXIT_STATE {
                Event::new(ts, 0, ids::IDLE_EXIT, 0, 0)
            } else {
                Event::new(ts, 0, ids::IDLE_ENTER, state, 0)
            };
            sink.push(at, c, ev)?;
        }
    }
    Ok(())
}
