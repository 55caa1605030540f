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
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use crate::error::{Result, TraceError};
use crate::event::{ids, prev_state, Event, EventTable};
use crate::meta::{CpuTopo, Header, Machine, Provenance};
use crate::writer::{Writer, WriterOptions};

pub mod perf_script;
pub mod schedlog;
pub mod trace_cmd;

/// The longest text line an importer accepts (bytes).
pub const MAX_LINE: usize = 64 * 1024;
/// The most CPUs an input may name: a bound on what a corrupt input can make
/// the writer allocate.
pub const MAX_CPUS: u32 = 4096;
/// Distinct skip reasons kept by name; further ones are counted together.
const MAX_SKIP_REASONS: usize = 64;

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

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
            let open = || -> Result<Box<dyn BufRead + '_>> { open_slice(name, data) };
            import_text(format, name, &open, out, out_name, opts)
        }
    }
}

/// Import the file (or, for SchedLog, the dump directory) `input` into the
/// `.wct` file `output`.
pub fn import_path(format: Format, input: &Path, output: &Path, opts: ImportOptions) -> Result<ImportReport> {
    let out_name = output.display().to_string();
    let name = file_name(input);
    let in_name = input.display().to_string();
    // Write next to the output and rename at the end: a failed import leaves
    // no partial file and keeps an older output of the same name.
    let mut tmp_name = output.as_os_str().to_owned();
    tmp_name.push(".part");
    let tmp = std::path::PathBuf::from(tmp_name);
    let r = if format == Format::SchedLog {
        schedlog::import_dir(input, &tmp, opts)
    } else if input.is_dir() {
        Err(TraceError::new(&in_name, format!("is a directory; expected a {} text file", format.tool())))
    } else {
        // Open the input before creating the output, so that a wrong path leaves nothing behind.
        open_file(&in_name, input).and_then(|_| {
            let out = File::create(&tmp).map_err(|e| TraceError::io(&out_name, e))?;
            let open = || -> Result<Box<dyn BufRead>> { open_file(&in_name, input) };
            import_text(format, &name, &open, out, &out_name, opts)
        })
    };
    match r {
        Ok(rep) => {
            std::fs::rename(&tmp, output).map_err(|e| TraceError::io(&out_name, e))?;
            Ok(rep)
        }
        Err(mut e) => {
            let _ = std::fs::remove_file(&tmp);
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

fn open_slice<'a>(name: &str, data: &'a [u8]) -> Result<Box<dyn BufRead + 'a>> {
    if data.starts_with(&ZSTD_MAGIC) {
        let d = zstd_decoder(name, data)?;
        Ok(Box::new(BufReader::new(d)))
    } else {
        Ok(Box::new(data))
    }
}

fn zstd_decoder<'a, R: BufRead + 'a>(name: &str, r: R) -> Result<zstd::stream::read::Decoder<'a, R>> {
    let mut d = zstd::stream::read::Decoder::with_buffer(r).map_err(|e| TraceError::new(name, format!("zstd: {e}")))?;
    // Bound the decoder's window (128 MiB): a hostile frame cannot demand more.
    d.window_log_max(27).map_err(|e| TraceError::new(name, format!("zstd: {e}")))?;
    Ok(d)
}

pub(crate) fn open_file(name: &str, path: &Path) -> Result<Box<dyn BufRead>> {
    let f = File::open(path).map_err(|e| TraceError::io(name, e))?;
    let mut r = BufReader::with_capacity(1 << 16, f);
    let head = r.fill_buf().map_err(|e| TraceError::io(name, e))?;
    if head.starts_with(&ZSTD_MAGIC) {
        Ok(Box::new(BufReader::new(zstd_decoder(name, r)?)))
    } else {
        Ok(Box::new(r))
    }
}

/// Read the whole of a (possibly zstd-compressed) binary file, at most `limit`
/// bytes after decompression.
pub(crate) fn read_all(name: &str, r: &mut dyn BufRead, limit: u64) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    r.take(limit + 1).read_to_end(&mut v).map_err(|e| TraceError::new(name, format!("read: {e}")))?;
    if v.len() as u64 > limit {
        return Err(TraceError::new(name, format!("larger than {limit} bytes; expected a smaller file")));
    }
    Ok(v)
}

/// Reads lines of at most [`MAX_LINE`] bytes, counting them from 1.
pub(crate) struct Lines<'a> {
    name: &'a str,
    r: Box<dyn BufRead + 'a>,
    buf: Vec<u8>,
    pub line: u64,
}

impl<'a> Lines<'a> {
    pub fn new(name: &'a str, r: Box<dyn BufRead + 'a>) -> Self {
        Lines { name, r, buf: Vec::new(), line: 0 }
    }

    /// The next line (its number, its text without the end of line); None
    /// at the end of the input.
    pub fn next_line(&mut self) -> Result<Option<(u64, &str)>> {
        self.buf.clear();
        loop {
            let avail = match self.r.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(TraceError::at_line(self.name, self.line + 1, format!("read failed: {e}")));
                }
            };
            if avail.is_empty() {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                break;
            }
            let (take, done) = match avail.iter().position(|&c| c == b'\n') {
                Some(i) => (i + 1, true),
                None => (avail.len(), false),
            };
            if self.buf.len() + take > MAX_LINE + 1 {
                return Err(TraceError::at_line(
                    self.name,
                    self.line + 1,
                    format!("line longer than {MAX_LINE} bytes; expected a text line (is this a binary file?)"),
                ));
            }
            self.buf.extend_from_slice(&avail[..take]);
            self.r.consume(take);
            if done {
                break;
            }
        }
        self.line += 1;
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        match std::str::from_utf8(&self.buf) {
            Ok(s) => Ok(Some((self.line, s))),
            Err(e) => Err(TraceError::at_line(
                self.name,
                self.line,
                format!("byte {} is not UTF-8 text; expected a text line (is this a binary file?)", e.valid_up_to() + 1),
            )),
        }
    }
}

// ---------------------------------------------------------------------------
// The shared engine of the two text importers.

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

struct Pass1 {
    max_cpu: Option<u32>,
    has_waking: bool,
    nr_cpus: Option<u32>,
    hostname: Option<String>,
    topo: BTreeMap<u32, (u32, u32, u32)>,
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

/// The machine: the header's CPU count and topology where given, otherwise a
/// flat machine of (highest CPU named + 1) CPUs.
fn machine(name: &str, p: &Pass1) -> Machine {
    let from_events = p.max_cpu.map_or(1, |m| m + 1);
    let n = from_events.max(p.nr_cpus.unwrap_or(0)).max(p.topo.keys().next_back().map_or(0, |&c| c + 1));
    let mut m = Machine::flat(p.hostname.as_deref().unwrap_or(name), n);
    if !p.topo.is_empty() {
        // The tool numbers cores within a die or socket, and dies within a
        // socket; the machine wants them unique in the machine.
        let mut cores: BTreeMap<(u32, u32, u32), u32> = BTreeMap::new();
        let mut dies: BTreeMap<(u32, u32), u32> = BTreeMap::new();
        for (&cpu, &(core, die, socket)) in &p.topo {
            let nc = cores.len() as u32;
            let c = *cores.entry((socket, die, core)).or_insert(nc);
            let nd = dies.len() as u32;
            let d = *dies.entry((socket, die)).or_insert(nd);
            m.cpus[cpu as usize] = CpuTopo { cpu, core: c, die: d, socket };
        }
        // CPUs the header did not describe: a core of their own each.
        let mut next = cores.len() as u32;
        for c in m.cpus.iter_mut() {
            if !p.topo.contains_key(&c.cpu) {
                c.core = next;
                next += 1;
            }
        }
    }
    m
}

/// The state a sched_switch left its task in, from the kernel's letters
/// (`R`, `R+`, `S`, `D`, `D|K`, `X`, ...) or a raw number.
pub(crate) fn parse_prev_state(s: &str) -> std::result::Result<u32, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty prev_state; expected a task state such as R, S or D".into());
    }
    if let Some(v) = parse_int(s) {
        // Raw values as kernels since 4.14 report them (one bit per state
        // letter of the print format): 0 R, 0x1 S, 0x2 D, 0x4 T, 0x8 t,
        // 0x10 X, 0x20 Z, 0x40 P, 0x80 I; a preempted task reports
        // TASK_REPORT_MAX, the bit above the last (0x100 on those kernels).
        return Ok(if v == 0 || v.is_power_of_two() && v >= 0x100 {
            prev_state::RUNNABLE
        } else if v & 0x2 != 0 {
            prev_state::BLOCKED_IO
        } else if v & (0x10 | 0x20) != 0 {
            prev_state::DEAD
        } else {
            prev_state::BLOCKED
        });
    }
    let mut io = false;
    let mut dead = false;
    let mut runnable = false;
    for c in s.chars() {
        match c {
            'R' | '+' => runnable = true,
            'D' => io = true,
            'X' | 'Z' => dead = true,
            // S sleeping, T stopped, t traced, P parked, I idle, K wakekill,
            // W waking, N noload: blocked for our purpose. libtraceevent's
            // sched_switch plugin prints the bits 0x40 and 0x80 (parked and
            // idle on kernels since 4.14) as `x` and `W`: blocked too.
            'S' | 'T' | 't' | 'P' | 'I' | 'K' | 'W' | 'N' | 'x' | '|' => {}
            _ => return Err(format!("unknown prev_state `{s}`; expected task state letters such as R, R+, S, D, X, Z")),
        }
    }
    Ok(if dead {
        prev_state::DEAD
    } else if io {
        prev_state::BLOCKED_IO
    } else if runnable && s.starts_with('R') {
        prev_state::RUNNABLE
    } else {
        prev_state::BLOCKED
    })
}

/// A decimal (or 0x-hex) unsigned number.
pub(crate) fn parse_int(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).ok();
    }
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

pub(crate) fn parse_u32(s: &str, what: &str) -> std::result::Result<u32, String> {
    let t = s.trim();
    parse_int(t)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| format!("bad {what} `{t}`; expected an unsigned 32-bit number"))
}

/// A pid, which tools print as a signed number (-1 at times for "none").
pub(crate) fn parse_pid(s: &str, what: &str) -> std::result::Result<u32, String> {
    let t = s.trim();
    if t == "-1" {
        return Ok(0);
    }
    parse_u32(t, what)
}

/// `SECS.FRAC` with 1 to 9 fractional digits (us from plain `perf script`,
/// ns from `perf script --ns` or `trace-cmd report -t`), as ns.
pub(crate) fn parse_ts(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    if secs.is_empty() || frac.is_empty() || frac.len() > 9 {
        return None;
    }
    if !secs.bytes().all(|c| c.is_ascii_digit()) || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let s: u64 = secs.parse().ok()?;
    let f: u64 = frac.parse().ok()?;
    let f = f * 10u64.pow(9 - frac.len() as u32);
    s.checked_mul(1_000_000_000)?.checked_add(f)
}

/// The value of `key=` in `fields`, searching from `from`: up to the next
/// `next=` key (for values with spaces, such as task names), or else up to
/// the next whitespace. Returns the value and where the search may go on.
pub(crate) fn field<'a>(fields: &'a str, key: &str, next: Option<&str>, from: usize) -> Option<(&'a str, usize)> {
    let start = find_key(fields, key, from)? + key.len() + 1;
    let rest = &fields[start..];
    let end = match next.and_then(|n| find_key(fields, n, start)) {
        Some(n) => n - start,
        None => rest.find(char::is_whitespace).unwrap_or(rest.len()),
    };
    let v = rest[..end].trim_end();
    Some((v, start + end))
}

/// Where ` key=` (or `key=` at the start) is, at or after `from`.
fn find_key(s: &str, key: &str, from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(off) = s.get(i..)?.find(key) {
        let at = i + off;
        let after = at + key.len();
        if s[after..].starts_with('=') && (at == 0 || s.as_bytes()[at - 1].is_ascii_whitespace()) {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

pub(crate) fn need<'a>(fields: &'a str, key: &str, next: Option<&str>, from: usize) -> std::result::Result<(&'a str, usize), String> {
    field(fields, key, next, from).ok_or_else(|| format!("no `{key}=` field"))
}

/// The comm a task has after exec: the base name of the file, at most 15
/// bytes (TASK_COMM_LEN - 1), as the kernel sets it.
pub(crate) fn exec_comm(filename: &str) -> &str {
    let base = filename.rsplit('/').next().unwrap_or(filename);
    let mut end = base.len().min(15);
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    &base[..end]
}

/// The events of `perf script` and `trace-cmd report` that share the kernel's
/// `field=value` print format (the same in both tools).
pub(crate) fn parse_raw_fields<'a>(event: &str, f: &'a str) -> std::result::Result<Rec<'a>, String> {
    Ok(match event {
        "sched_switch" => {
            let (prev_comm, i) = need(f, "prev_comm", Some("prev_pid"), 0)?;
            let (prev_pid, i) = need(f, "prev_pid", None, i)?;
            let (state, i) = need(f, "prev_state", None, i)?;
            let (next_comm, i) = need(f, "next_comm", Some("next_pid"), i)?;
            let (next_pid, _) = need(f, "next_pid", None, i)?;
            Rec::Switch {
                prev_comm,
                prev_pid: parse_pid(prev_pid, "prev_pid")?,
                state: parse_prev_state(state)?,
                next_comm,
                next_pid: parse_pid(next_pid, "next_pid")?,
            }
        }
        "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => {
            let (comm, i) = need(f, "comm", Some("pid"), 0)?;
            let (pid, i) = need(f, "pid", None, i)?;
            let (target, _) = need(f, "target_cpu", None, i)?;
            Rec::Wake {
                kind: wake_kind(event),
                comm,
                pid: parse_pid(pid, "pid")?,
                target: parse_u32(target, "target_cpu")?,
            }
        }
        "sched_process_fork" => {
            // The print format says comm= pid=; raw records (trace-cmd
            // report -R) name the fields parent_comm= parent_pid=.
            let (parent_comm, i) = match field(f, "comm", Some("pid"), 0) {
                Some(v) => v,
                None => need(f, "parent_comm", Some("parent_pid"), 0)?,
            };
            let (parent, i) = match field(f, "pid", None, i) {
                Some(v) => v,
                None => need(f, "parent_pid", None, i)?,
            };
            let (child_comm, i) = need(f, "child_comm", Some("child_pid"), i)?;
            let (child, _) = need(f, "child_pid", None, i)?;
            Rec::Fork {
                parent_comm,
                parent: parse_pid(parent, "pid")?,
                child_comm,
                child: parse_pid(child, "child_pid")?,
            }
        }
        "sched_process_exec" => {
            let (filename, i) = need(f, "filename", Some("pid"), 0)?;
            let (pid, _) = need(f, "pid", None, i)?;
            Rec::Exec { comm: exec_comm(filename), pid: parse_pid(pid, "pid")? }
        }
        "sched_process_exit" => {
            let (comm, i) = need(f, "comm", Some("pid"), 0)?;
            let (pid, _) = need(f, "pid", None, i)?;
            Rec::Exit { comm, pid: parse_pid(pid, "pid")? }
        }
        "sched_migrate_task" => {
            let (comm, i) = need(f, "comm", Some("pid"), 0)?;
            let (pid, i) = need(f, "pid", None, i)?;
            let (orig, i) = need(f, "orig_cpu", None, i)?;
            let (dest, _) = need(f, "dest_cpu", None, i)?;
            Rec::Migrate {
                comm,
                pid: parse_pid(pid, "pid")?,
                orig: parse_u32(orig, "orig_cpu")?,
                dest: parse_u32(dest, "dest_cpu")?,
            }
        }
        "cpu_frequency" => {
            let (state, i) = need(f, "state", None, 0)?;
            let (cpu, _) = need(f, "cpu_id", None, i)?;
            Rec::Freq { khz: parse_u32(state, "state (kHz)")?, cpu: parse_u32(cpu, "cpu_id")? }
        }
        "cpu_idle" => {
            let (state, i) = need(f, "state", None, 0)?;
            let (cpu, _) = need(f, "cpu_id", None, i)?;
            Rec::Idle { state: parse_u32(state, "state")?, cpu: parse_u32(cpu, "cpu_id")? }
        }
        _ => return Err(format!("event {event} is not imported")),
    })
}

pub(crate) fn wake_kind(event: &str) -> WakeKind {
    match event {
        "sched_waking" => WakeKind::Waking,
        "sched_wakeup_new" => WakeKind::WakeupNew,
        _ => WakeKind::Wakeup,
    }
}

/// power:cpu_idle's state for "leaving idle" (PWR_EVENT_EXIT, -1 as u32).
pub const IDLE_EXIT_STATE: u32 = u32::MAX;

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

fn import_text<'s, W: Write>(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(parse_ts("481.015225"), Some(481_015_225_000));
        assert_eq!(parse_ts("481.015225414"), Some(481_015_225_414));
        assert_eq!(parse_ts("0.5"), Some(500_000_000));
        assert_eq!(parse_ts("481.0152254141"), None);
        assert_eq!(parse_ts("481"), None);
        assert_eq!(parse_ts("-1.5"), None);
        assert_eq!(parse_ts("99999999999999999999.1"), None);
    }

    #[test]
    fn states() {
        assert_eq!(parse_prev_state("R"), Ok(prev_state::RUNNABLE));
        assert_eq!(parse_prev_state("R+"), Ok(prev_state::RUNNABLE));
        assert_eq!(parse_prev_state("S"), Ok(prev_state::BLOCKED));
        assert_eq!(parse_prev_state("I"), Ok(prev_state::BLOCKED));
        assert_eq!(parse_prev_state("D"), Ok(prev_state::BLOCKED_IO));
        assert_eq!(parse_prev_state("D|K"), Ok(prev_state::BLOCKED_IO));
        assert_eq!(parse_prev_state("X"), Ok(prev_state::DEAD));
        assert_eq!(parse_prev_state("Z"), Ok(prev_state::DEAD));
        assert_eq!(parse_prev_state("0"), Ok(prev_state::RUNNABLE));
        assert_eq!(parse_prev_state("2"), Ok(prev_state::BLOCKED_IO));
        assert_eq!(parse_prev_state("128"), Ok(prev_state::BLOCKED));
        assert_eq!(parse_prev_state("256"), Ok(prev_state::RUNNABLE));
        assert_eq!(parse_prev_state("16"), Ok(prev_state::DEAD));
        assert!(parse_prev_state("Q").is_err());
    }

    #[test]
    fn fields_with_spaces() {
        let f = "comm=lto cgu.1 pid=8243 prio=120 target_cpu=001";
        let (c, i) = field(f, "comm", Some("pid"), 0).unwrap();
        assert_eq!(c, "lto cgu.1");
        assert_eq!(field(f, "pid", None, i).unwrap().0, "8243");
        assert_eq!(field(f, "target_cpu", None, i).unwrap().0, "001");
        assert!(field(f, "cpu", None, 0).is_none());
    }

    #[test]
    fn exec_comm_is_the_base_name() {
        assert_eq!(exec_comm("/usr/lib/gcc/x86_64-linux-gnu/12/cc1"), "cc1");
        assert_eq!(exec_comm("/x/a-very-long-program-name"), "a-very-long-pro");
    }
}
