// SPDX-License-Identifier: GPL-2.0-only
//! SchedLog raw dumps (Fork/wait, section 3.1; event set in docs/papers.md,
//! Fork/wait).
//!
//! A dump is a directory holding
//! - `events`: the event-name table, one `ID NAME` line per event (decimal
//!   id; `#` starts a comment). SchedLog does not fix its ids: this table is
//!   the authority.
//! - `cpu0`, `cpu1`, ...: one binary file per CPU of 24-byte little-endian
//!   entries, `u64` timestamp (ns), `u32` pid, `u32` event id, 8 bytes of
//!   arguments, in time order. A missing `cpuN` is a CPU that logged nothing.
//!
//! Names are matched to warmcore's built-in events case-insensitively, with
//! `-` or spaces read as `_` and the spellings listed in [`ALIASES`]; their
//! ids become warmcore's. An event whose name is not built in keeps its id
//! and name in the output's table (or, where its id is a built-in event's,
//! gets a free id from [`FIRST_FOREIGN_ID`] on). Arguments are copied as they
//! are: warmcore's layouts are SchedLog's.
//!
//! SchedLog's CTX_SWITCH carries only the next pid. Where its high half is 0,
//! the importer fills warmcore's prev_state from the events SchedLog logs
//! before a switch on the same CPU: a BLOCK of the task leaving gives
//! BLOCKED, BLOCK_IO gives BLOCKED_IO, an EXIT gives DEAD, none RUNNABLE.
//! (The log cannot tell a preemption between a task's EXIT and its last
//! switch from that last switch: the first switch after the EXIT is DEAD.)

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Read, Write};
use std::path::Path;

use super::{file_name, header, open_file, read_all, ImportOptions, ImportReport, Lines, Loc, Sink};
use crate::error::{Result, TraceError};
use crate::event::{ids, prev_state, Event, EventTable, BUILTIN, EVENT_SIZE};
use crate::meta::Machine;
use crate::writer::{Writer, WriterOptions};

/// Spellings of SchedLog's events that differ from warmcore's names.
pub const ALIASES: &[(&str, &str)] = &[
    ("WAKE_UP", "WAKEUP"),
    ("WAKE_UP_NEW", "WAKEUP_NEW"),
    ("WAKEUP_NEW_TASK", "WAKEUP_NEW"),
    ("BLOCKED", "BLOCK"),
    ("BLOCKED_IO", "BLOCK_IO"),
    ("BLOCK_ON_IO", "BLOCK_IO"),
    ("WAITPID", "WAIT_PID"),
    ("CONTEXT_SWITCH", "CTX_SWITCH"),
    ("SWITCH", "CTX_SWITCH"),
    ("SCHED_SWITCH", "CTX_SWITCH"),
    ("MIGRATION", "MIGRATE"),
    ("RQSIZE", "RQ_SIZE"),
    ("NR_RUNNING", "RQ_SIZE"),
    ("IDLE_BALANCE_BEG", "IDLE_BALANCE_BEGIN"),
    ("IDLE_BALANCE_START", "IDLE_BALANCE_BEGIN"),
    ("IDLE_BALANCE_STOP", "IDLE_BALANCE_END"),
    ("PERIODIC_BALANCE_BEG", "PERIODIC_BALANCE_BEGIN"),
    ("PERIODIC_BALANCE_START", "PERIODIC_BALANCE_BEGIN"),
    ("PERIODIC_BALANCE_STOP", "PERIODIC_BALANCE_END"),
    ("BALANCE_IDLE_BEGIN", "IDLE_BALANCE_BEGIN"),
    ("BALANCE_IDLE_END", "IDLE_BALANCE_END"),
    ("BALANCE_PERIODIC_BEGIN", "PERIODIC_BALANCE_BEGIN"),
    ("BALANCE_PERIODIC_END", "PERIODIC_BALANCE_END"),
    ("FUTEXWAIT", "FUTEX_WAIT"),
    ("FUTEXWAKE", "FUTEX_WAKE"),
];

/// Ids given to non-built-in events whose own id a built-in event holds.
pub const FIRST_FOREIGN_ID: u32 = 1000;
/// The most CPU files a dump may have.
const MAX_CPU_FILES: u32 = super::MAX_CPUS;
/// The most lines the events table may have.
const MAX_TABLE_EVENTS: usize = 4096;

/// The built-in id of a SchedLog event name, if it is one of warmcore's.
pub fn builtin_id(name: &str) -> Option<u32> {
    let mut n: String = name.trim().to_ascii_uppercase().replace(['-', ' '], "_");
    for p in ["EVENT_", "EVT_", "SCHEDLOG_"] {
        if let Some(s) = n.strip_prefix(p) {
            n = s.to_string();
        }
    }
    for s in ["_EVENT", "_EVT"] {
        if let Some(x) = n.strip_suffix(s) {
            n = x.to_string();
        }
    }
    let n = ALIASES.iter().find(|(a, _)| *a == n).map(|(_, b)| b.to_string()).unwrap_or(n);
    BUILTIN.iter().find(|(_, b)| *b == n).map(|(i, _)| *i)
}

/// The file's event table mapped onto the output's: file id -> output id,
/// and the output's table.
pub(crate) struct IdMap {
    map: HashMap<u32, u32>,
    pub table: EventTable,
}

impl IdMap {
    pub fn get(&self, file_id: u32) -> Option<u32> {
        self.map.get(&file_id).copied()
    }
}

/// Parse the `ID NAME` table.
pub(crate) fn parse_table(name: &str, r: Box<dyn BufRead + '_>) -> Result<IdMap> {
    let mut lines = Lines::new(name, r);
    let mut file: Vec<(u32, String, u64)> = Vec::new();
    while let Some((n, line)) = lines.next_line()? {
        let t = line.split('#').next().unwrap_or("").trim();
        if t.is_empty() {
            continue;
        }
        let mut parts = t.splitn(2, char::is_whitespace);
        let id_text = parts.next().unwrap_or("");
        let ev_name = parts.next().unwrap_or("").trim();
        let id: u32 = id_text
            .parse()
            .map_err(|_| TraceError::at_line(name, n, format!("bad event id `{id_text}`; expected `ID NAME` with a decimal id")))?;
        if ev_name.is_empty() || ev_name.contains(char::is_whitespace) {
            return Err(TraceError::at_line(name, n, format!("bad event name `{ev_name}`; expected `ID NAME` with a one-word name")));
        }
        if let Some((_, other, l)) = file.iter().find(|(i, _, _)| *i == id) {
            return Err(TraceError::at_line(name, n, format!("id {id} is already `{other}` on line {l}; expected each id once")));
        }
        if file.len() >= MAX_TABLE_EVENTS {
            return Err(TraceError::at_line(name, n, format!("more than {MAX_TABLE_EVENTS} events; expected a smaller table")));
        }
        file.push((id, ev_name.to_string(), n));
    }
    if file.is_empty() {
        return Err(TraceError::at_line(name, lines.line.max(1), "no events; expected `ID NAME` lines"));
    }
    let mut table = EventTable::default();
    let mut map = HashMap::new();
    let mut next_free = FIRST_FOREIGN_ID;
    for (id, ev_name, n) in &file {
        if let Some(b) = builtin_id(ev_name) {
            map.insert(*id, b);
            continue;
        }
        if table.names.iter().any(|(_, x)| x.eq_ignore_ascii_case(ev_name)) {
            return Err(TraceError::at_line(name, *n, format!("event name `{ev_name}` appears twice; expected each name once")));
        }
        let out_id = if table.names.iter().any(|(i, _)| i == id) {
            while table.names.iter().any(|(i, _)| *i == next_free) || file.iter().any(|(i, _, _)| *i == next_free) {
                next_free += 1;
            }
            next_free
        } else {
            *id
        };
        table.names.push((out_id, ev_name.clone()));
        map.insert(*id, out_id);
    }
    Ok(IdMap { map, table })
}

/// One CPU's dump, read entry by entry.
fn import_cpu<W: Write>(
    sink: &mut Sink<W>,
    ids_: &IdMap,
    cpu: u32,
    name: &str,
    r: &mut dyn Read,
) -> Result<()> {
    let blocked = [ids::BLOCK, ids::BLOCK_IO, ids::EXIT];
    // The state the task running on this CPU announced before leaving it.
    let mut pending: Option<(u32, u32)> = None;
    let mut offset = 0u64;
    let mut buf = [0u8; EVENT_SIZE];
    loop {
        let got = read_full(r, &mut buf).map_err(|e| TraceError::at_offset(name, offset, format!("read failed: {e}")))?;
        if got == 0 {
            break;
        }
        if got < EVENT_SIZE {
            return Err(TraceError::at_offset(
                name,
                offset,
                format!("truncated entry of {got} bytes; expected {EVENT_SIZE}-byte entries"),
            ));
        }
        let ev: Event = bytemuck::pod_read_unaligned(&buf);
        let file_id = ev.id;
        let Some(id) = ids_.get(file_id) else {
            return Err(TraceError::at_offset(
                name,
                offset,
                format!("event id {file_id} is not in the events table; expected one of its ids"),
            ));
        };
        let mut ev = Event { id, ..ev };
        if blocked.contains(&id) {
            let state = match id {
                ids::BLOCK => prev_state::BLOCKED,
                ids::BLOCK_IO => prev_state::BLOCKED_IO,
                _ => prev_state::DEAD,
            };
            pending = Some((ev.pid, state));
        }
        if id == ids::CTX_SWITCH {
            if ev.b() == 0 {
                let state = match pending {
                    Some((pid, s)) if pid == ev.pid => s,
                    _ => prev_state::RUNNABLE,
                };
                ev = Event::new(ev.ts, ev.pid, id, ev.a(), state);
            }
            pending = None;
            sink.note(ev.a(), 0, "", ev.ts);
        }
        sink.note(ev.pid, 0, "", ev.ts);
        sink.push(Loc::Offset(offset), cpu, ev)?;
        offset += EVENT_SIZE as u64;
    }
    Ok(())
}

fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn new_sink<W: Write>(out: W, out_name: &str, cpus: u32, table: EventTable, input: &str, opts: ImportOptions) -> Result<Sink<W>> {
    let mut h = header(Machine::flat(input, cpus), "SchedLog", input);
    h.events = table;
    let w = Writer::new(out, out_name, &h, WriterOptions { zstd_level: opts.zstd_level, ..Default::default() })?;
    Ok(Sink::new(w, input, cpus))
}

/// The CPU files of a dump directory, by CPU number.
fn cpu_files(dir: &Path, dname: &str) -> Result<BTreeMap<u32, std::path::PathBuf>> {
    let mut cpus = BTreeMap::new();
    let rd = std::fs::read_dir(dir).map_err(|e| TraceError::io(dname, e))?;
    for ent in rd {
        let ent = ent.map_err(|e| TraceError::io(dname, e))?;
        let fname = ent.file_name().to_string_lossy().into_owned();
        let Some(num) = fname.strip_prefix("cpu") else { continue };
        let num = num.strip_suffix(".zst").unwrap_or(num);
        if num.is_empty() || !num.bytes().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let cpu: u32 = num.parse().unwrap_or(u32::MAX);
        if cpu >= MAX_CPU_FILES {
            return Err(TraceError::new(
                &ent.path().display().to_string(),
                format!("CPU {cpu}: expected CPU files cpu0 to cpu{}", MAX_CPU_FILES - 1),
            ));
        }
        if cpus.insert(cpu, ent.path()).is_some() {
            return Err(TraceError::new(dname, format!("two files for CPU {cpu}; expected one of cpu{cpu}, cpu{cpu}.zst")));
        }
    }
    if cpus.is_empty() {
        return Err(TraceError::new(dname, "no cpu0, cpu1, ... files; expected a SchedLog dump directory"));
    }
    Ok(cpus)
}

/// Import a dump directory into `output` (written in place: see
/// [`super::import_path`] for the safe way).
pub fn import_dir<W: Write>(dir: &Path, out: W, out_name: &str, opts: ImportOptions) -> Result<ImportReport> {
    let dname = dir.display().to_string();
    if !dir.is_dir() {
        return Err(TraceError::new(&dname, "not a directory; expected a SchedLog dump directory (events, cpu0, cpu1, ...)"));
    }
    let tpath = dir.join("events");
    let tname = tpath.display().to_string();
    let table = parse_table(&tname, open_file(&tname, &tpath)?)?;
    let cpus = cpu_files(dir, &dname)?;
    let ncpus = cpus.keys().next_back().map_or(1, |&c| c + 1);
    let mut sink = new_sink(out, out_name, ncpus, table.table.clone(), &file_name(dir), opts)?;
    for (&cpu, path) in &cpus {
        let pname = path.display().to_string();
        let mut r = open_file(&pname, path)?;
        sink.name = pname.clone();
        import_cpu(&mut sink, &table, cpu, &pname, &mut r)?;
    }
    sink.finish()
}

/// Split an in-memory bundle: the events table text, a NUL byte, then each
/// CPU's dump (CPU 0, 1, ...) preceded by its length as a little-endian u32.
pub fn split_bundle<'a>(name: &str, data: &'a [u8]) -> Result<(&'a [u8], Vec<&'a [u8]>)> {
    let nul = data
        .iter()
        .position(|&c| c == 0)
        .ok_or_else(|| TraceError::at_offset(name, data.len() as u64, "no NUL after the events table; expected a SchedLog bundle"))?;
    let (table, mut rest) = (&data[..nul], &data[nul + 1..]);
    let mut cpus = Vec::new();
    let mut off = nul as u64 + 1;
    while !rest.is_empty() {
        if rest.len() < 4 {
            return Err(TraceError::at_offset(name, off, "truncated length; expected a 4-byte CPU dump length"));
        }
        let len = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
        if rest.len() - 4 < len {
            return Err(TraceError::at_offset(
                name,
                off,
                format!("CPU {} dump of {len} bytes, but only {} remain; expected the whole dump", cpus.len(), rest.len() - 4),
            ));
        }
        if cpus.len() as u32 >= MAX_CPU_FILES {
            return Err(TraceError::at_offset(name, off, format!("more than {MAX_CPU_FILES} CPUs; expected fewer")));
        }
        cpus.push(&rest[4..4 + len]);
        rest = &rest[4 + len..];
        off += 4 + len as u64;
    }
    if cpus.is_empty() {
        return Err(TraceError::at_offset(name, off, "no CPU dumps after the events table; expected at least one"));
    }
    Ok((table, cpus))
}

/// Import a bundle (see [`split_bundle`]) held in memory.
pub fn import_bundle<W: Write>(name: &str, data: &[u8], out: W, out_name: &str, opts: ImportOptions) -> Result<ImportReport> {
    let (table_bytes, cpus) = split_bundle(name, data)?;
    let tname = format!("{name}:events");
    let table = parse_table(&tname, Box::new(table_bytes))?;
    let mut sink = new_sink(out, out_name, cpus.len() as u32, table.table.clone(), name, opts)?;
    for (cpu, bytes) in cpus.iter().enumerate() {
        let pname = format!("{name}:cpu{cpu}");
        let mut r: &[u8] = bytes;
        sink.name = pname.clone();
        import_cpu(&mut sink, &table, cpu as u32, &pname, &mut r)?;
    }
    sink.finish()
}

/// Read a dump file whole (tests and tools), decompressing zstd.
pub fn read_dump_file(path: &Path) -> Result<Vec<u8>> {
    let name = path.display().to_string();
    let mut r = open_file(&name, path)?;
    read_all(&name, &mut r, 1 << 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_onto_builtins() {
        assert_eq!(builtin_id("ctx_switch"), Some(ids::CTX_SWITCH));
        assert_eq!(builtin_id("EVENT_WAKE_UP"), Some(ids::WAKEUP));
        assert_eq!(builtin_id("idle-balance-beg"), Some(ids::IDLE_BALANCE_BEGIN));
        assert_eq!(builtin_id("TICK"), Some(ids::TICK));
        assert_eq!(builtin_id("CPU_IDLE"), None);
    }

    #[test]
    fn foreign_ids_are_kept_or_moved() {
        let t = parse_table("t", Box::new(&b"0 EXEC\n9 CTX_SWITCH\n40 MY_EVENT\n3 OTHER # clashes with WAKEUP\n"[..])).unwrap();
        assert_eq!(t.get(0), Some(ids::EXEC));
        assert_eq!(t.get(9), Some(ids::CTX_SWITCH));
        assert_eq!(t.get(40), Some(40));
        assert_eq!(t.table.name(40), "MY_EVENT");
        assert_eq!(t.get(3), Some(FIRST_FOREIGN_ID));
        assert_eq!(t.table.name(FIRST_FOREIGN_ID), "OTHER");
        assert_eq!(t.get(5), None);
    }

    #[test]
    fn bad_tables() {
        let e = parse_table("t", Box::new(&b"0 EXEC\nx FORK\n"[..])).err().unwrap();
        assert_eq!(e.to_string(), "t:2: bad event id `x`; expected `ID NAME` with a decimal id");
        let e = parse_table("t", Box::new(&b"0 EXEC\n0 FORK\n"[..])).err().unwrap();
        assert_eq!(e.to_string(), "t:2: id 0 is already `EXEC` on line 1; expected each id once");
    }
}
