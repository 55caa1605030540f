// SPDX-License-Identifier: GPL-2.0-only
//! The reader: maps the file, checks its structure once at open, then reads
//! chunks on demand, so that opening is instant and a time window costs only
//! the chunks that overlap it.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::{BTreeMap, BinaryHeap};
use std::fs::File;
use std::sync::OnceLock;
use std::path::Path;

use crate::error::{Result, TraceError};
use crate::event::{CpuEvent, Event, EVENT_SIZE};
use crate::format::{self, block_flags, codec, kind, BlockHeader, IndexEntry, ProcRecord, Summary, BLOCK_HEADER_SIZE, PROC_RECORD_SIZE};
use crate::meta::{Header, Process};

/// The most events a chunk may claim: a bound on what a corrupt file can make
/// the reader allocate.
pub const MAX_CHUNK_EVENTS: u32 = 1 << 20;

enum Bytes {
    Map(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// Where one chunk of events is.
#[derive(Clone, Copy, Debug)]
pub struct ChunkRef {
    /// Offset of the block header.
    pub offset: u64,
    pub codec: u8,
    pub count: u32,
    pub len: u32,
    pub crc: u32,
    pub t_first: u64,
    pub t_last: u64,
    /// `format::block_flags`: whether the records carry their ranks.
    pub flags: u16,
}

/// A half-open time window [from, to) in ns; `to == u64::MAX` means no end,
/// so that `Window::ALL` holds every timestamp, u64::MAX included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub from: u64,
    pub to: u64,
}

impl Window {
    pub const ALL: Window = Window { from: 0, to: u64::MAX };
    pub fn contains(&self, ts: u64) -> bool {
        ts >= self.from && !self.ends_before(ts)
    }

    /// Whether `ts` lies at or past the window's end.
    pub fn ends_before(&self, ts: u64) -> bool {
        ts >= self.to && self.to != u64::MAX
    }
}

pub struct Trace {
    path: String,
    bytes: Bytes,
    pub header: Header,
    /// Payload ranges of the PROCESSES blocks, decoded on first use: a large
    /// build's hundreds of thousands of processes must not slow `open`.
    proc_blocks: Vec<(usize, usize)>,
    processes: OnceLock<BTreeMap<u32, Process>>,
    /// Events each CPU could not record (from the summary; zeros if absent).
    pub lost: Vec<u64>,
    /// None when the file ends as a writer leaves it; otherwise why not.
    pub incomplete: Option<String>,
    chunks: Vec<Vec<ChunkRef>>,
}

impl Trace {
    pub fn open(path: impl AsRef<Path>) -> Result<Trace> {
        let p = path.as_ref().display().to_string();
        let f = File::open(path.as_ref()).map_err(|e| TraceError::io(&p, e))?;
        let md = f.metadata().map_err(|e| TraceError::io(&p, e))?;
        if !md.is_file() {
            return Err(TraceError::new(&p, "is not a regular file: give the path of a .wct trace"));
        }
        if md.len() < format::PRELUDE_SIZE as u64 {
            let mut head = Vec::new();
            std::io::Read::read_to_end(&mut &f, &mut head).map_err(|e| TraceError::io(&p, e))?;
            return Trace::parse(&p, Bytes::Owned(head));
        }
        // SAFETY: the map is read-only; a file truncated under us can raise
        // SIGBUS, as with any mapped reader (perf, Perfetto); we never write it.
        let map = unsafe { memmap2::Mmap::map(&f) }.map_err(|e| TraceError::io(&p, e))?;
        Trace::parse(&p, Bytes::Map(map))
    }

    /// Read a trace held in memory (tests, fuzzing, data from a pipe).
    pub fn from_bytes(name: &str, data: Vec<u8>) -> Result<Trace> {
        Trace::parse(name, Bytes::Owned(data))
    }

    fn parse(path: &str, bytes: Bytes) -> Result<Trace> {
        let err = |off: usize, msg: String| TraceError::at_offset(path, off as u64, msg);
        let b: &[u8] = &bytes;
        let n = b.len().min(8);
        if b[..n] != format::MAGIC[..n] {
            return Err(err(0, "expected the .wct magic \"WCTRACE\\0\": not a warmcore trace".into()));
        }
        if b.len() < format::PRELUDE_SIZE {
            return Err(err(0, format!("expected a .wct prelude of {} bytes, the file has {}: it is truncated", format::PRELUDE_SIZE, b.len())));
        }
        let version = u32::from_le_bytes(b[8..12].try_into().unwrap());
        if !(format::MIN_VERSION..=format::VERSION).contains(&version) {
            return Err(err(8, format!("expected format version {} to {}, found {version}: use a matching warmcore", format::MIN_VERSION, format::VERSION)));
        }
        let hlen = u32::from_le_bytes(b[16..20].try_into().unwrap()) as usize;
        let hend = format::PRELUDE_SIZE + hlen;
        if hend > b.len() {
            return Err(err(16, format!("expected a header of {hlen} bytes, the file ends first")));
        }
        let header: Header = serde_json::from_slice(&b[format::PRELUDE_SIZE..hend])
            .map_err(|e| err(format::PRELUDE_SIZE, format!("expected a JSON header: {e}")))?;
        let ncpu = header.machine.nr_cpus() as usize;
        if ncpu == 0 || ncpu > 1 << 16 {
            return Err(err(format::PRELUDE_SIZE, format!("expected 1 to 65536 CPUs in the machine, found {ncpu}")));
        }
        let first_block = format::pad8(hend);

        let mut t = Trace {
            path: path.to_string(),
            header,
            proc_blocks: Vec::new(),
            processes: OnceLock::new(),
            lost: vec![0; ncpu],
            incomplete: None,
            chunks: vec![Vec::new(); ncpu],
            bytes: Bytes::Owned(Vec::new()),
        };
        let mut blocks: Vec<(usize, BlockHeader)> = Vec::new();
        match Self::read_index(path, b, first_block) {
            Ok(Some(entries)) => {
                for e in entries {
                    let off = e.offset as usize;
                    let end = (e.offset as u128) + BLOCK_HEADER_SIZE as u128 + e.header.len as u128;
                    if off < first_block || !off.is_multiple_of(8) || end > b.len() as u128 || e.header.magic != format::BLOCK_MAGIC {
                        return Err(err(off, "expected an index entry naming a block inside the file".into()));
                    }
                    blocks.push((off, e.header));
                }
            }
            Ok(None) | Err(_) => {
                // No usable index: the writer did not finish. Walk the blocks.
                let mut off = first_block;
                while off < b.len() {
                    match Self::block_at(path, b, off) {
                        Ok(h) if h.kind == kind::INDEX => break,
                        Ok(h) => {
                            let payload = &b[off + BLOCK_HEADER_SIZE..off + BLOCK_HEADER_SIZE + h.len as usize];
                            if crc32fast::hash(payload) != h.crc {
                                t.incomplete = Some(format!("block at offset {off} is torn (checksum mismatch); read up to it"));
                                break;
                            }
                            blocks.push((off, h));
                            off = format::pad8(off + BLOCK_HEADER_SIZE + h.len as usize);
                        }
                        Err(e) => {
                            t.incomplete = Some(format!("{}; read up to offset {off}", e.msg));
                            break;
                        }
                    }
                }
                if t.incomplete.is_none() {
                    t.incomplete = Some("the file has no index (its writer did not finish)".into());
                }
            }
        }
        let mut have_summary = false;
        for (off, h) in blocks {
            let payload = &b[off + BLOCK_HEADER_SIZE..off + BLOCK_HEADER_SIZE + h.len as usize];
            match h.kind {
                kind::EVENTS => {
                    let cpu = h.cpu as usize;
                    if cpu >= ncpu {
                        return Err(err(off + 8, format!("expected a CPU below {ncpu}, found {cpu}")));
                    }
                    if h.count == 0 || h.count > MAX_CHUNK_EVENTS || h.t_first > h.t_last {
                        return Err(err(off, format!("expected a chunk of 1 to {MAX_CHUNK_EVENTS} events in time order")));
                    }
                    if h.flags & !block_flags::RANKS != 0 {
                        return Err(err(off + 6, format!("expected block flags 0 or {}, found {}", block_flags::RANKS, h.flags)));
                    }
                    let size = format::record_size(h.flags);
                    if h.codec == codec::RAW && h.len as usize != h.count as usize * size {
                        return Err(err(off, format!("expected {} bytes for {} raw events, found {}", h.count as usize * size, h.count, h.len)));
                    }
                    if h.codec > codec::ZSTD {
                        return Err(err(off + 5, format!("expected codec 0 (raw) or 1 (zstd), found {}", h.codec)));
                    }
                    let list = &mut t.chunks[cpu];
                    if let Some(prev) = list.last() {
                        if prev.t_last > h.t_first {
                            return Err(err(off, format!("expected CPU {cpu}'s chunks in time order")));
                        }
                    }
                    list.push(ChunkRef { offset: off as u64, codec: h.codec, count: h.count, len: h.len, crc: h.crc, t_first: h.t_first, t_last: h.t_last, flags: h.flags });
                }
                kind::PROCESSES => {
                    if !(h.len as usize).is_multiple_of(PROC_RECORD_SIZE) {
                        return Err(err(off, format!("expected process records of {PROC_RECORD_SIZE} bytes, found a block of {}", h.len)));
                    }
                    t.proc_blocks.push((off + BLOCK_HEADER_SIZE, h.len as usize));
                }
                kind::SUMMARY => {
                    let s: Summary = serde_json::from_slice(payload)
                        .map_err(|e| err(off + BLOCK_HEADER_SIZE, format!("expected a JSON summary: {e}")))?;
                    for (i, l) in s.lost.iter().enumerate().take(ncpu) {
                        t.lost[i] = *l;
                    }
                    have_summary = true;
                }
                other => return Err(err(off + 4, format!("expected a block kind 1 to 3, found {other}"))),
            }
        }
        if !have_summary && t.incomplete.is_none() {
            t.incomplete = Some("the file has no summary block".into());
        }
        t.bytes = bytes;
        Ok(t)
    }

    /// The entries of the trailer's index, or None without a trailer.
    fn read_index(path: &str, b: &[u8], first_block: usize) -> Result<Option<Vec<IndexEntry>>> {
        if b.len() < first_block + format::TRAILER_SIZE || b[b.len() - 8..] != format::TRAILER_MAGIC {
            return Ok(None);
        }
        let toff = b.len() - format::TRAILER_SIZE;
        let ioff = u64::from_le_bytes(b[toff..toff + 8].try_into().unwrap());
        if ioff < first_block as u64 || ioff >= toff as u64 {
            return Err(TraceError::at_offset(path, toff as u64, "expected the index offset inside the file"));
        }
        let ioff = ioff as usize;
        let h = Self::block_at(path, b, ioff)?;
        if h.kind != kind::INDEX || !(h.len as usize).is_multiple_of(std::mem::size_of::<IndexEntry>()) {
            return Err(TraceError::at_offset(path, ioff as u64, "expected the index block"));
        }
        let payload = &b[ioff + BLOCK_HEADER_SIZE..ioff + BLOCK_HEADER_SIZE + h.len as usize];
        if crc32fast::hash(payload) != h.crc {
            return Err(TraceError::at_offset(path, ioff as u64, "expected the index's checksum to match"));
        }
        Ok(Some(payload.chunks_exact(std::mem::size_of::<IndexEntry>()).map(bytemuck::pod_read_unaligned).collect()))
    }

    /// The block header at `off`, checked to lie, with its payload, in the file.
    fn block_at(path: &str, b: &[u8], off: usize) -> Result<BlockHeader> {
        let err = |msg: String| TraceError::at_offset(path, off as u64, msg);
        if !off.is_multiple_of(8) || off.checked_add(BLOCK_HEADER_SIZE).is_none_or(|e| e > b.len()) {
            return Err(err(format!("expected a {BLOCK_HEADER_SIZE}-byte block header, the file ends first")));
        }
        let h: BlockHeader = bytemuck::pod_read_unaligned(&b[off..off + BLOCK_HEADER_SIZE]);
        if h.magic != format::BLOCK_MAGIC {
            return Err(err("expected a block header (magic \"WBLK\")".into()));
        }
        if off + BLOCK_HEADER_SIZE + h.len as usize > b.len() {
            return Err(err(format!("expected a block payload of {} bytes, the file ends first", h.len)));
        }
        Ok(h)
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn nr_cpus(&self) -> u32 {
        self.chunks.len() as u32
    }

    /// The chunks of one CPU's stream, in time order.
    pub fn chunks(&self, cpu: u32) -> &[ChunkRef] {
        self.chunks.get(cpu as usize).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// Events stored for each CPU.
    pub fn cpu_event_counts(&self) -> Vec<u64> {
        self.chunks.iter().map(|v| v.iter().map(|c| c.count as u64).sum()).collect()
    }

    pub fn event_count(&self) -> u64 {
        self.cpu_event_counts().iter().sum()
    }

    /// First and last timestamps, or None for a trace without events.
    pub fn span(&self) -> Option<(u64, u64)> {
        let first = self.chunks.iter().filter_map(|v| v.first()).map(|c| c.t_first).min()?;
        let last = self.chunks.iter().filter_map(|v| v.last()).map(|c| c.t_last).max()?;
        Some((first, last))
    }

    /// The process table, by pid: later records for a pid refine earlier ones.
    pub fn processes(&self) -> &BTreeMap<u32, Process> {
        self.processes.get_or_init(|| {
            let mut map = BTreeMap::<u32, Process>::new();
            for &(start, len) in &self.proc_blocks {
                for raw in self.bytes[start..start + len].chunks_exact(PROC_RECORD_SIZE) {
                    let r: ProcRecord = bytemuck::pod_read_unaligned(raw);
                    let end = r.comm.iter().position(|&c| c == 0).unwrap_or(r.comm.len());
                    let comm = String::from_utf8_lossy(&r.comm[..end]).into_owned();
                    map.entry(r.pid)
                        .and_modify(|q| {
                            q.first_ns = q.first_ns.min(r.first_ns);
                            q.last_ns = q.last_ns.max(r.last_ns);
                            if r.ppid != 0 {
                                q.ppid = r.ppid;
                            }
                            if !comm.is_empty() {
                                q.comm = comm.clone();
                            }
                        })
                        .or_insert(Process { pid: r.pid, ppid: r.ppid, comm, first_ns: r.first_ns, last_ns: r.last_ns });
                }
                // Read once: a long trace's records take as much room again
                // as the table built from them.
                self.release_range(start, len);
            }
            map
        })
    }

    pub fn comm(&self, pid: u32) -> Option<&str> {
        self.processes().get(&pid).map(|p| p.comm.as_str()).filter(|c| !c.is_empty())
    }

    /// The events of one chunk: borrowed from the map when stored raw and
    /// aligned, decompressed otherwise. The checksum is verified.
    pub fn load_chunk(&self, c: &ChunkRef) -> Result<Cow<'_, [Event]>> {
        Ok(self.load_ranked(c)?.0)
    }

    /// The events of one chunk and their ranks (empty if the chunk has none).
    pub fn load_ranked(&self, c: &ChunkRef) -> Result<(Cow<'_, [Event]>, Cow<'_, [u32]>)> {
        let start = c.offset as usize + BLOCK_HEADER_SIZE;
        let payload = &self.bytes[start..start + c.len as usize];
        if crc32fast::hash(payload) != c.crc {
            return Err(TraceError::at_offset(&self.path, start as u64, "expected the chunk's checksum to match: the data is corrupt"));
        }
        let n_ev = c.count as usize * EVENT_SIZE;
        fn split<'b>(raw: &'b [u8], n_ev: usize) -> (Cow<'b, [Event]>, Cow<'b, [u32]>) {
            let (evs, ranks) = raw.split_at(n_ev);
            let evs = match bytemuck::try_cast_slice::<u8, Event>(evs) {
                Ok(e) => Cow::Borrowed(e),
                Err(_) => Cow::Owned(evs.chunks_exact(EVENT_SIZE).map(bytemuck::pod_read_unaligned).collect()),
            };
            let ranks = match bytemuck::try_cast_slice::<u8, u32>(ranks) {
                Ok(r) => Cow::Borrowed(r),
                Err(_) => Cow::Owned(ranks.chunks_exact(4).map(bytemuck::pod_read_unaligned).collect()),
            };
            (evs, ranks)
        }
        match c.codec {
            codec::RAW => Ok(split(payload, n_ev)),
            _ => {
                let want = c.count as usize * format::record_size(c.flags);
                let raw = zstd::bulk::decompress(payload, want).map_err(|e| {
                    TraceError::at_offset(&self.path, start as u64, format!("expected a zstd chunk: {e}"))
                })?;
                if raw.len() != want {
                    return Err(TraceError::at_offset(&self.path, start as u64, format!("expected {want} bytes after decompression, found {}", raw.len())));
                }
                let (evs, ranks) = split(&raw, n_ev);
                Ok((Cow::Owned(evs.into_owned()), Cow::Owned(ranks.into_owned())))
            }
        }
    }

    /// Tell the kernel that a chunk's pages are no longer needed, so that a
    /// pass over a large trace does not keep the whole file resident. The map
    /// is read-only and file-backed: a later read of the chunk faults the
    /// pages back in from the page cache or the file.
    fn release(&self, c: &ChunkRef) {
        self.release_range(c.offset as usize, BLOCK_HEADER_SIZE + c.len as usize);
    }

    /// The pages wholly inside `len` bytes from `offset`, as `release`.
    fn release_range(&self, offset: usize, len: usize) {
        const PAGE: usize = 4096;
        if let Bytes::Map(m) = &self.bytes {
            let start = offset.next_multiple_of(PAGE);
            let end = (offset + len) / PAGE * PAGE;
            if end > start {
                // SAFETY: DontNeed on a read-only, file-backed shared map loses
                // nothing; the range lies inside the map.
                let _ = unsafe { m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start) };
            }
        }
    }

    /// One CPU's events in `w`, in time order.
    pub fn cpu_events(&self, cpu: u32, w: Window) -> CpuEvents<'_> {
        let chunks = self.chunks(cpu);
        let first = chunks.partition_point(|c| c.t_last < w.from);
        CpuEvents {
            trace: self,
            cpu,
            w,
            chunks,
            next_chunk: first,
            cur: Cow::Borrowed(&[]),
            cur_ranks: Cow::Borrowed(&[]),
            pos: 0,
            failed: false,
        }
    }

    /// The events of `cpus` (all CPUs if None) in `w`, in global time order;
    /// events of the same time come in the order they happened where the
    /// file keeps it (ranks), by CPU number otherwise, each CPU's in its
    /// stream's order.
    pub fn events(&self, cpus: Option<&[u32]>, w: Window) -> Merged<'_> {
        let list: Vec<u32> = match cpus {
            Some(c) => c.iter().copied().filter(|&c| c < self.nr_cpus()).collect(),
            None => (0..self.nr_cpus()).collect(),
        };
        let mut m = Merged { streams: Vec::new(), heap: BinaryHeap::new(), pending_err: None };
        for cpu in list {
            let mut s = self.cpu_events(cpu, w);
            match s.next_ranked() {
                Some(Ok((ev, rank))) => {
                    m.heap.push(Reverse((ev.ts, rank, cpu, m.streams.len())));
                    m.streams.push((s, ev));
                }
                Some(Err(e)) => {
                    m.pending_err.get_or_insert(e);
                }
                None => {}
            }
        }
        m
    }
}

pub struct CpuEvents<'a> {
    trace: &'a Trace,
    cpu: u32,
    w: Window,
    chunks: &'a [ChunkRef],
    next_chunk: usize,
    cur: Cow<'a, [Event]>,
    /// The ranks of `cur`, empty if its chunk has none.
    cur_ranks: Cow<'a, [u32]>,
    pos: usize,
    failed: bool,
}

impl CpuEvents<'_> {
    pub fn cpu(&self) -> u32 {
        self.cpu
    }

    /// The next event and its rank among the trace's events of its time
    /// (0 where the file has no ranks).
    #[inline]
    pub fn next_ranked(&mut self) -> Option<Result<(Event, u32)>> {
        loop {
            if let Some(ev) = self.cur.get(self.pos) {
                if self.w.ends_before(ev.ts) {
                    return None;
                }
                let rank = self.cur_ranks.get(self.pos).copied().unwrap_or(0);
                self.pos += 1;
                return Some(Ok((*ev, rank)));
            }
            if self.next_chunk > 0 && !self.cur.is_empty() {
                self.trace.release(&self.chunks[self.next_chunk - 1]);
                self.cur = Cow::Borrowed(&[]);
                self.cur_ranks = Cow::Borrowed(&[]);
            }
            if self.failed || self.next_chunk >= self.chunks.len() {
                return None;
            }
            let c = self.chunks[self.next_chunk];
            self.next_chunk += 1;
            if self.w.ends_before(c.t_first) {
                return None;
            }
            match self.trace.load_ranked(&c) {
                Ok((evs, ranks)) => {
                    self.pos = evs.partition_point(|e| e.ts < self.w.from);
                    self.cur = evs;
                    self.cur_ranks = ranks;
                }
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

impl Iterator for CpuEvents<'_> {
    type Item = Result<Event>;

    #[inline]
    fn next(&mut self) -> Option<Result<Event>> {
        self.next_ranked().map(|r| r.map(|(ev, _)| ev))
    }
}

/// A k-way merge of per-CPU streams, by (time, rank, CPU).
pub struct Merged<'a> {
    streams: Vec<(CpuEvents<'a>, Event)>,
    heap: BinaryHeap<Reverse<(u64, u32, u32, usize)>>,
    pending_err: Option<TraceError>,
}

impl Iterator for Merged<'_> {
    type Item = Result<CpuEvent>;

    fn next(&mut self) -> Option<Result<CpuEvent>> {
        if let Some(e) = self.pending_err.take() {
            self.heap.clear();
            return Some(Err(e));
        }
        // Replace the top in place: one sift-down per event instead of a pop
        // and a push, which matters with a hundred or more CPUs.
        let mut top = self.heap.peek_mut()?;
        let Reverse((_, _, cpu, i)) = *top;
        let (stream, ev) = &mut self.streams[i];
        let out = CpuEvent { cpu, ev: *ev };
        match stream.next_ranked() {
            Some(Ok((next, rank))) => {
                *ev = next;
                *top = Reverse((next.ts, rank, cpu, i));
            }
            Some(Err(e)) => {
                PeekMut::pop(top);
                self.pending_err = Some(e);
            }
            None => {
                PeekMut::pop(top);
            }
        }
        Some(Ok(out))
    }
}
