// SPDX-License-Identifier: GPL-2.0-only
//! The streaming writer: per-CPU input in any interleaving, constant memory
//! (one chunk buffer per CPU), blocks written as soon as they fill.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::error::{Result, TraceError};
use crate::event::{ids, Event};
use crate::format::{self, block_flags, codec, kind, BlockHeader, IndexEntry, ProcRecord, Summary};
use crate::meta::Header;

#[derive(Clone, Copy, Debug)]
pub struct WriterOptions {
    /// zstd level for event chunks; None stores them raw (and lets readers
    /// map them without copying).
    pub zstd_level: Option<i32>,
    /// Events per chunk: the granularity of time-range reads.
    pub chunk_events: usize,
}

impl Default for WriterOptions {
    fn default() -> Self {
        // 4096 events = 96 KiB a chunk: small enough that a 1 % window of a
        // large trace reads little beyond it, large enough to amortise headers.
        WriterOptions { zstd_level: None, chunk_events: 4096 }
    }
}

/// Process-table entries are written out every this many event chunks, so
/// that a trace whose writer is killed still names most of its processes.
const PROCESS_FLUSH_CHUNKS: usize = 256;

struct ProcEntry {
    ppid: u32,
    comm: String,
    first_ns: u64,
    last_ns: u64,
    dirty: bool,
}

pub struct Writer<W: Write> {
    out: BufWriter<W>,
    path: String,
    offset: u64,
    opts: WriterOptions,
    bufs: Vec<Vec<Event>>,
    /// Each buffered event's rank among the events of its timestamp, when
    /// the push order is kept (`keep_push_order`).
    ranks: Option<Vec<Vec<u32>>>,
    /// Timestamp and rank of the last event pushed, when the order is kept.
    order_ts: u64,
    order_rank: u32,
    last_flushed_ts: Vec<u64>,
    index: Vec<IndexEntry>,
    lost: Vec<u64>,
    events: u64,
    procs: HashMap<u32, ProcEntry>,
    chunks_since_proc_flush: usize,
    exec_id: Option<u32>,
    fork_id: Option<u32>,
    zstd: Option<zstd::bulk::Compressor<'static>>,
}

impl Writer<File> {
    pub fn create(path: impl AsRef<Path>, header: &Header, opts: WriterOptions) -> Result<Self> {
        let p = path.as_ref().display().to_string();
        let f = File::create(path.as_ref()).map_err(|e| TraceError::io(&p, e))?;
        Writer::new(f, &p, header, opts)
    }
}

impl<W: Write> Writer<W> {
    pub fn new(out: W, path: &str, header: &Header, opts: WriterOptions) -> Result<Self> {
        let n = header.machine.nr_cpus() as usize;
        if n == 0 {
            return Err(TraceError::new(path, "the machine description has no CPUs"));
        }
        let mut w = Writer {
            out: BufWriter::with_capacity(1 << 20, out),
            path: path.to_string(),
            offset: 0,
            opts: WriterOptions { chunk_events: opts.chunk_events.max(1), ..opts },
            bufs: (0..n).map(|_| Vec::new()).collect(),
            ranks: None,
            order_ts: 0,
            order_rank: 0,
            last_flushed_ts: vec![0; n],
            index: Vec::new(),
            lost: vec![0; n],
            events: 0,
            procs: HashMap::new(),
            chunks_since_proc_flush: 0,
            exec_id: header.events.builtin_to_file(ids::EXEC),
            fork_id: header.events.builtin_to_file(ids::FORK),
            zstd: match opts.zstd_level {
                Some(level) => Some(
                    zstd::bulk::Compressor::new(level)
                        .map_err(|e| TraceError::new(path, format!("zstd level {level}: {e}")))?,
                ),
                None => None,
            },
        };
        let json = serde_json::to_vec(header).expect("header serialises");
        let mut prelude = Vec::with_capacity(format::PRELUDE_SIZE);
        prelude.extend_from_slice(&format::MAGIC);
        prelude.extend_from_slice(&format::VERSION.to_le_bytes());
        prelude.extend_from_slice(&0u32.to_le_bytes());
        prelude.extend_from_slice(&(json.len() as u32).to_le_bytes());
        prelude.extend_from_slice(&0u32.to_le_bytes());
        w.put(&prelude)?;
        w.put(&json)?;
        w.pad()?;
        Ok(w)
    }

    /// Keep the order in which events are pushed among events of the same
    /// timestamp, on all CPUs: readers give ties back in that order instead
    /// of by CPU number. For a producer that knows the order in which its
    /// events happened (the simulator) and pushes every event in global time
    /// order; `push` refuses one older than the previous. Call it before the
    /// first `push`.
    pub fn keep_push_order(mut self) -> Self {
        debug_assert_eq!(self.events, 0, "keep_push_order after events were pushed");
        self.ranks = Some(self.bufs.iter().map(|_| Vec::new()).collect());
        self
    }

    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(|e| TraceError::io(&self.path, e).writing())?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> Result<()> {
        let n = format::pad8(self.offset as usize) - self.offset as usize;
        self.put(&[0u8; 8][..n])
    }

    /// Add one event to `cpu`'s stream. Each CPU's events must come in time
    /// order at chunk granularity: a chunk is sorted before it is written, and
    /// an event older than the last written chunk of its CPU is refused. With
    /// `keep_push_order`, all events must come in global time order.
    #[inline]
    pub fn push(&mut self, cpu: u32, ev: Event) -> Result<()> {
        let c = cpu as usize;
        if c >= self.bufs.len() {
            return Err(TraceError::new(
                &self.path,
                format!("event on CPU {cpu}, but the machine has {} CPUs", self.bufs.len()),
            ));
        }
        if let Some(ranks) = &mut self.ranks {
            let rank = if self.events == 0 || ev.ts != self.order_ts {
                if self.events > 0 && ev.ts < self.order_ts {
                    return Err(TraceError::new(
                        &self.path,
                        format!(
                            "event at {} ns pushed after one at {} ns; a writer that keeps the push order needs \
                             every event in global time order",
                            ev.ts, self.order_ts
                        ),
                    ));
                }
                0
            } else {
                self.order_rank.saturating_add(1)
            };
            self.order_ts = ev.ts;
            self.order_rank = rank;
            ranks[c].push(rank);
        }
        let buf = &mut self.bufs[c];
        buf.push(ev);
        if buf.len() >= self.opts.chunk_events {
            self.flush_cpu(c)?;
        }
        if Some(ev.id) == self.exec_id {
            self.note_comm(ev.pid, &ev.comm(), ev.ts);
        } else if Some(ev.id) == self.fork_id {
            self.note_process(ev.pid, ev.a(), "", ev.ts);
        }
        self.events += 1;
        Ok(())
    }

    /// Record what is known of a process; later calls refine earlier ones.
    pub fn note_process(&mut self, pid: u32, ppid: u32, comm: &str, ts: u64) {
        let e = self.procs.entry(pid).or_insert(ProcEntry {
            ppid,
            comm: String::new(),
            first_ns: ts,
            last_ns: ts,
            dirty: true,
        });
        if ppid != 0 {
            e.ppid = ppid;
        }
        if !comm.is_empty() {
            e.comm = comm.to_string();
        }
        e.first_ns = e.first_ns.min(ts);
        e.last_ns = e.last_ns.max(ts);
        e.dirty = true;
    }

    /// Record a process's new name (after exec), keeping its parent.
    pub fn note_comm(&mut self, pid: u32, comm: &str, ts: u64) {
        self.note_process(pid, 0, comm, ts)
    }

    /// Count events that `cpu` could not record.
    pub fn add_lost(&mut self, cpu: u32, n: u64) {
        if let Some(l) = self.lost.get_mut(cpu as usize) {
            *l += n;
        }
    }

    pub fn events_written(&self) -> u64 {
        self.events
    }

    fn flush_cpu(&mut self, c: usize) -> Result<()> {
        let mut buf = std::mem::take(&mut self.bufs[c]);
        if buf.is_empty() {
            self.bufs[c] = buf;
            return Ok(());
        }
        // With ranks the events come in global time order: sorted already.
        let ranks = self.ranks.as_mut().map(|r| std::mem::take(&mut r[c]));
        if ranks.is_none() && !buf.is_sorted_by_key(|e| e.ts) {
            buf.sort_by_key(|e| e.ts);
        }
        let (t_first, t_last) = (buf[0].ts, buf[buf.len() - 1].ts);
        if t_first < self.last_flushed_ts[c] {
            return Err(TraceError::new(
                &self.path,
                format!(
                    "CPU {c}: event at {t_first} ns comes after one at {} ns already written; \
                     feed each CPU's events in time order",
                    self.last_flushed_ts[c]
                ),
            ));
        }
        self.last_flushed_ts[c] = t_last;
        let joined;
        let (flags, raw): (u16, &[u8]) = match &ranks {
            Some(r) => {
                let mut v = Vec::with_capacity(buf.len() * format::record_size(block_flags::RANKS));
                v.extend_from_slice(bytemuck::cast_slice(&buf));
                v.extend_from_slice(bytemuck::cast_slice(r));
                joined = v;
                (block_flags::RANKS, &joined)
            }
            None => (0, bytemuck::cast_slice(&buf)),
        };
        let compressed;
        let (codec, bytes): (u8, &[u8]) = match self.zstd.as_mut() {
            Some(z) => {
                compressed = z.compress(raw).map_err(|e| TraceError::new(&self.path, format!("zstd: {e}")))?;
                (codec::ZSTD, &compressed)
            }
            None => (codec::RAW, raw),
        };
        self.block(kind::EVENTS, codec, flags, c as u32, buf.len() as u32, t_first, t_last, bytes)?;
        buf.clear();
        self.bufs[c] = buf;
        if let (Some(all), Some(mut r)) = (self.ranks.as_mut(), ranks) {
            r.clear();
            all[c] = r;
        }
        self.chunks_since_proc_flush += 1;
        if self.chunks_since_proc_flush >= PROCESS_FLUSH_CHUNKS {
            self.flush_processes()?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn block(
        &mut self,
        kind: u8,
        codec: u8,
        flags: u16,
        cpu: u32,
        count: u32,
        t_first: u64,
        t_last: u64,
        payload: &[u8],
    ) -> Result<()> {
        let h = BlockHeader {
            magic: format::BLOCK_MAGIC,
            kind,
            codec,
            flags,
            cpu,
            count,
            t_first,
            t_last,
            len: payload.len() as u32,
            crc: crc32fast::hash(payload),
        };
        if kind != format::kind::INDEX {
            self.index.push(IndexEntry { offset: self.offset, header: h });
        }
        self.put(bytemuck::bytes_of(&h))?;
        self.put(payload)?;
        self.pad()
    }

    fn flush_processes(&mut self) -> Result<()> {
        self.chunks_since_proc_flush = 0;
        let mut dirty: Vec<ProcRecord> = self
            .procs
            .iter_mut()
            .filter(|(_, e)| e.dirty)
            .map(|(&pid, e)| {
                e.dirty = false;
                let mut comm = [0u8; 16];
                let n = e.comm.len().min(16);
                comm[..n].copy_from_slice(&e.comm.as_bytes()[..n]);
                ProcRecord { pid, ppid: e.ppid, first_ns: e.first_ns, last_ns: e.last_ns, comm }
            })
            .collect();
        if dirty.is_empty() {
            return Ok(());
        }
        dirty.sort_by_key(|p| p.pid);
        self.block(kind::PROCESSES, codec::RAW, 0, 0, dirty.len() as u32, 0, 0, bytemuck::cast_slice(&dirty))
    }

    /// Write what is buffered, the process table, the summary and the index.
    /// Returns the number of events written.
    pub fn finish(mut self) -> Result<u64> {
        for c in 0..self.bufs.len() {
            self.flush_cpu(c)?;
        }
        self.flush_processes()?;
        let summary = Summary { lost: self.lost.clone(), events: self.events };
        let json = serde_json::to_vec(&summary).expect("summary serialises");
        self.block(kind::SUMMARY, codec::RAW, 0, 0, 0, 0, 0, &json)?;
        let index_offset = self.offset;
        let index = std::mem::take(&mut self.index);
        self.block(kind::INDEX, codec::RAW, 0, 0, index.len() as u32, 0, 0, bytemuck::cast_slice(&index))?;
        let mut trailer = Vec::with_capacity(format::TRAILER_SIZE);
        trailer.extend_from_slice(&index_offset.to_le_bytes());
        trailer.extend_from_slice(&format::TRAILER_MAGIC);
        self.put(&trailer)?;
        self.out.flush().map_err(|e| TraceError::io(&self.path, e).writing())?;
        Ok(self.events)
    }

    /// Write out every buffered chunk now, e.g. before a risky operation, so
    /// that a reader of the partial file sees everything pushed so far.
    pub fn flush(&mut self) -> Result<()> {
        for c in 0..self.bufs.len() {
            self.flush_cpu(c)?;
        }
        self.flush_processes()?;
        self.out.flush().map_err(|e| TraceError::io(&self.path, e).writing())
    }
}
