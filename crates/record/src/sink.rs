// SPDX-License-Identifier: GPL-2.0-only
//! From the per-CPU buffers to the file: a small reorder window per CPU (a
//! BPF program interrupted between taking its timestamp and storing its entry
//! lets a nested one store a later entry first), and an output file that
//! keeps space in reserve so that a full disk still leaves a complete trace.

use std::collections::{HashMap, VecDeque};
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use warmcore_trace::output::Output;
use warmcore_trace::{ids, Event, TraceError, Writer};

/// Events held back per CPU before they are written: nested programs on one
/// CPU store at most a few entries out of order.
pub const REORDER_WINDOW: usize = 256;

/// Space kept free next to the trace for finishing it after the disk fills:
/// the writer's buffered chunks and its 1 MiB output buffer, the process
/// table, the summary and the index.
pub const RESERVE_BYTES: u64 = 16 << 20;

/// The trace file, with a reserve file beside it that is released when a
/// write finds the disk full; `full` then tells the recorder to stop.
pub struct ReserveFile {
    file: File,
    reserve: Option<PathBuf>,
    pub full: Arc<AtomicBool>,
}

impl ReserveFile {
    /// The file `out` is written into, with the reserve beside its temporary
    /// file; a stream (a pipe, /dev/null) has none.
    pub fn new(out: &Output) -> Result<ReserveFile, TraceError> {
        let file = out.file()?;
        let full = Arc::new(AtomicBool::new(false));
        let Some(tmp) = out.temp() else { return Ok(ReserveFile { file, reserve: None, full }) };
        let mut name = tmp.as_os_str().to_os_string();
        name.push(".reserve");
        let rpath = PathBuf::from(name);
        let reserve = || -> io::Result<()> {
            let r = File::create(&rpath)?;
            // SAFETY: fallocate on a file we own; failure is reported below.
            if unsafe { libc::fallocate(std::os::fd::AsRawFd::as_raw_fd(&r), 0, 0, RESERVE_BYTES as i64) } != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        };
        if let Err(e) = reserve() {
            let _ = fs::remove_file(&rpath);
            return Err(TraceError::io(out.name(), e).writing());
        }
        Ok(ReserveFile { file, reserve: Some(rpath), full })
    }

    fn release(&mut self) -> bool {
        match self.reserve.take() {
            Some(p) => {
                let _ = fs::remove_file(p);
                true
            }
            None => false,
        }
    }
}

impl Drop for ReserveFile {
    fn drop(&mut self) {
        self.release();
    }
}

impl Write for ReserveFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.file.write(buf) {
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) && self.release() => {
                self.full.store(true, Ordering::SeqCst);
                self.file.write(buf)
            }
            r => r,
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Per-CPU reorder windows in front of the writer.
pub struct Sink<W: Write> {
    pub writer: Writer<W>,
    pending: Vec<VecDeque<Event>>,
    last_ts: Vec<u64>,
    /// Events whose timestamp had to be raised to keep their CPU's order.
    pub clamped: u64,
    pub bytes_in: u64,
    pub error: Option<warmcore_trace::TraceError>,
    /// Task names as known so far with the time each was given, for the
    /// process table (CPUs are drained independently, so a child's EXEC can
    /// reach us before its FORK).
    pub comms: HashMap<u32, (String, u64)>,
}

impl<W: Write> Sink<W> {
    pub fn new(writer: Writer<W>, ncpu: usize) -> Self {
        Sink {
            writer,
            pending: (0..ncpu).map(|_| VecDeque::new()).collect(),
            last_ts: vec![0; ncpu],
            clamped: 0,
            bytes_in: 0,
            error: None,
            comms: HashMap::new(),
        }
    }

    pub fn push(&mut self, cpu: u32, ev: Event) {
        let c = cpu as usize;
        let Some(q) = self.pending.get_mut(c) else { return };
        // Insert in time order, scanning from the newest: O(1) when in order.
        let mut i = q.len();
        while i > 0 && q[i - 1].ts > ev.ts {
            i -= 1;
        }
        q.insert(i, ev);
        if q.len() > REORDER_WINDOW {
            let e = q.pop_front().unwrap();
            self.write(c, e);
        }
    }

    /// Decode a buffer of packed 24-byte entries.
    pub fn push_bytes(&mut self, cpu: u32, data: &[u8]) {
        self.bytes_in += data.len() as u64;
        for chunk in data.chunks_exact(24) {
            let ev: Event = bytemuck_read(chunk);
            self.push(cpu, ev);
        }
    }

    fn write(&mut self, c: usize, mut e: Event) {
        if e.ts < self.last_ts[c] {
            e.ts = self.last_ts[c];
            self.clamped += 1;
        }
        self.last_ts[c] = e.ts;
        if e.id == ids::FORK {
            // A child starts with its parent's name, unless it has exec'd since.
            let name = self.comms.get(&e.a()).map(|c| c.0.clone()).unwrap_or_default();
            if self.comms.get(&e.pid).is_none_or(|c| c.1 <= e.ts) {
                self.comms.insert(e.pid, (name, e.ts));
            }
        } else if e.id == ids::EXEC && self.comms.get(&e.pid).is_none_or(|c| c.1 <= e.ts) {
            self.comms.insert(e.pid, (e.comm(), e.ts));
        }
        if self.error.is_none() {
            if let Err(err) = self.writer.push(c as u32, e) {
                self.error = Some(err);
            }
        }
    }

    /// Name the tasks alive at the start.
    pub fn note_task(&mut self, pid: u32, ppid: u32, comm: &str, ts: u64) {
        self.writer.note_process(pid, ppid, comm, ts);
        self.comms.insert(pid, (comm.to_string(), ts));
    }

    /// Give every task its latest name (the writer keeps the last one it was
    /// told); EXEC carries 8 bytes of a name: take the full one of tasks
    /// still alive.
    pub fn complete_names(&mut self) {
        for (&pid, (c, ts)) in &self.comms {
            let mut name = c.clone();
            if c.len() == 8 {
                if let Ok(full) = std::fs::read_to_string(format!("/proc/{pid}/comm")) {
                    let full = full.trim();
                    if full.len() > 8 && full.starts_with(c.as_str()) {
                        name = full.to_string();
                    }
                }
            }
            if !name.is_empty() {
                self.writer.note_comm(pid, &name, *ts);
            }
        }
    }

    /// Write out everything held back.
    pub fn drain(&mut self) {
        for c in 0..self.pending.len() {
            while let Some(e) = self.pending[c].pop_front() {
                self.write(c, e);
            }
        }
    }
}

fn bytemuck_read(b: &[u8]) -> Event {
    Event {
        ts: u64::from_le_bytes(b[0..8].try_into().unwrap()),
        pid: u32::from_le_bytes(b[8..12].try_into().unwrap()),
        id: u32::from_le_bytes(b[12..16].try_into().unwrap()),
        arg: b[16..24].try_into().unwrap(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warmcore_trace::{Header, Machine, Trace, WriterOptions};

    fn header() -> Header {
        Header::other(Machine::flat("t", 2), "test")
    }

    #[test]
    fn reorders_within_window_and_clamps_beyond() {
        let mut out = Vec::new();
        {
            let w = Writer::new(&mut out, "mem", &header(), WriterOptions { zstd_level: None, chunk_events: 4 }).unwrap();
            let mut s = Sink::new(w, 2);
            // A nested entry stored before the one it interrupted.
            for ts in [10, 30, 20, 40] {
                s.push(0, Event::new(ts, 1, 10, 0, 0));
            }
            for i in 0..(REORDER_WINDOW as u64 + 10) {
                s.push(1, Event::new(100 + i, 1, 10, 0, 0));
            }
            // Far too late for the window: clamped, not refused.
            s.push(1, Event::new(5, 1, 10, 0, 0));
            s.drain();
            assert_eq!(s.clamped, 1);
            s.writer.finish().unwrap();
        }
        let t = Trace::from_bytes("mem", out).unwrap();
        let ts: Vec<u64> = t.cpu_events(0, warmcore_trace::Window::ALL).map(|e| e.unwrap().ts).collect();
        assert_eq!(ts, vec![10, 20, 30, 40]);
        let ts1: Vec<u64> = t.cpu_events(1, warmcore_trace::Window::ALL).map(|e| e.unwrap().ts).collect();
        assert!(ts1.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(ts1.len(), REORDER_WINDOW + 11);
    }

    #[test]
    fn decodes_packed_entries() {
        let e = Event::new(7, 42, 3, 1, 99);
        let bytes: Vec<u8> = [e, e].iter().flat_map(|e| {
            let mut v = e.ts.to_le_bytes().to_vec();
            v.extend(e.pid.to_le_bytes());
            v.extend(e.id.to_le_bytes());
            v.extend(e.arg);
            v
        }).collect();
        assert_eq!(bytemuck_read(&bytes[24..]), e);
    }
}
