// SPDX-License-Identifier: GPL-2.0-only
//! A level-of-detail summary of a trace, for drawing a large trace without
//! reading its events: per CPU and per time bin, at a few resolutions, the
//! time the running task spent in each frequency band (the bands of the
//! viewer's `freq` view), idle time by idle state, time by run-queue size
//! (the `runqueue` view's classes), and event counts by kind. The finest
//! level also keeps each CPU's state at every bin's start (the running task,
//! its segment's start and frequency, the frequency, nr_running), so that a
//! reader of a window's events knows what the window began with. And it
//! keeps every EXEC (pid, time, name), so that a window's tasks are named as
//! they were at the time without reading the whole trace again.
//!
//! Every figure is what the viewer's exact segments give when their time is
//! summed into the bins: a running segment goes from one CTX_SWITCH to the
//! next on its CPU (the last one to the trace's end) and has the frequency
//! known at its start (the last FREQ_CHANGE, or TICK carrying one, at or
//! before it); a run-queue segment goes from one RQ_SIZE to the next; an
//! idle state (the `idle` view) from IDLE_ENTER to the next IDLE_EXIT or
//! IDLE_ENTER, and not at all without one.
//!
//! It is built once, in parallel over CPUs, and kept beside the trace in
//! `FILE.lod` (an old reader of the trace never sees it). The side file names
//! the trace it summarises by length and a checksum of the trace's tail (the
//! index and trailer, which name every block and its checksum): a summary of
//! another file, of an older version of this one or a truncated summary is
//! refused and rebuilt, never used.
//!
//! ```text
//! magic "WCTLOD\0\0", version u32, JSON length u32, JSON (`LodMeta`),
//! then one zstd frame an array: for each level its `time` (u64) then
//! `counts` (u32), then the finest level's `state` (u64), all little-endian,
//! in (cpu, bin, column) order, then the EXECs (u64 triples: pid, ns, the
//! event's two comm words as one u64) in CPU order, each CPU's in time order.
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::{Result, TraceError};
use crate::event::ids;
use crate::reader::{Trace, Window};

pub const MAGIC: [u8; 8] = *b"WCTLOD\0\0";
pub const VERSION: u32 = 4;
/// Bins of the finest level across the trace's span.
pub const FINE_BINS: u32 = 8192;
/// Each level's bins are this many of the level below.
pub const FACTOR: u32 = 4;
pub const LEVELS: usize = 3;
/// Time columns (ns; run-queue classes in ns too).
pub const TIME_COLUMNS: &[&str] = &[
    // The freq view's categories, in its order.
    "idle", "frequency unknown", "lowest band (min to mid-base)", "below base", "above base", "highest band (to max)",
    // IDLE_ENTER's state: 0, 1, 2, 3 or deeper.
    "idle state 0", "idle state 1", "idle state 2", "idle state 3+",
    // The runqueue view's categories, in its order.
    "empty", "1 task", "2 tasks", "3-4 tasks", "5 or more",
];
pub const NT: usize = 15;
const IDLE_STATE_COL: usize = 6;
const RQ_COL: usize = 10;
/// Event counts by the file's event id; ids of KINDS or more count in column 0.
pub const KINDS: usize = 32;
/// State at each finest bin's start: running pid, its segment's start (ns)
/// and frequency (kHz), the CPU's frequency, nr_running, the start (ns) and
/// state of the idle period the CPU is in (one the trace ends). NONE where
/// unknown.
pub const STATE_COLUMNS: &[&str] =
    &["pid", "segment_start", "segment_khz", "khz", "nr_running", "idle_start", "idle_state"];
pub const NS: usize = 7;
pub const NONE: u64 = u64::MAX;
/// How much of the trace's end its identity checksums.
const TAIL: u64 = 1 << 16;

/// Which trace a summary belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ident {
    pub len: u64,
    pub tail_crc: u32,
}

/// The side file's JSON.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LodMeta {
    pub trace: Ident,
    pub nr_cpus: u32,
    /// The first bin's start (the trace's first event), ns.
    pub t0: u64,
    /// The finest level's bin width, ns.
    pub width: u64,
    pub bins: u32,
    pub levels: u32,
    pub factor: u32,
    /// The frequency bands' bounds, kHz: lowest below [0], below base below
    /// [1], above base below [2].
    pub bands: [f64; 3],
    pub events: u64,
    /// EXEC events kept (`Lod::execs` holds three words each).
    pub execs: u64,
    pub body_len: u64,
    pub body_crc: u32,
    /// The body's zstd frames' lengths, one an array (decompressed in parallel).
    pub frames: Vec<u64>,
}

pub struct Level {
    /// Bin width, ns.
    pub width: u64,
    pub bins: u32,
    /// (cpu, bin, NT) ns.
    pub time: Vec<u64>,
    /// (cpu, bin, KINDS).
    pub counts: Vec<u32>,
}

pub struct Lod {
    pub meta: LodMeta,
    /// Finest first.
    pub levels: Vec<Level>,
    /// (cpu, fine bin, NS).
    pub state: Vec<u64>,
    /// (pid, ns, comm) of every EXEC; comm is the event's `a | b << 32`.
    pub execs: Vec<u64>,
}

/// Where a trace's summary is kept.
pub fn side_path(trace: &Path) -> PathBuf {
    let mut s = trace.as_os_str().to_owned();
    s.push(".lod");
    PathBuf::from(s)
}

/// The identity of the file at `path` as it is now.
pub fn ident(path: &Path) -> Result<Ident> {
    use std::io::{Read, Seek, SeekFrom};
    let p = path.display().to_string();
    let mut f = std::fs::File::open(path).map_err(|e| TraceError::io(&p, e))?;
    let len = f.metadata().map_err(|e| TraceError::io(&p, e))?.len();
    let from = len.saturating_sub(TAIL);
    f.seek(SeekFrom::Start(from)).map_err(|e| TraceError::io(&p, e))?;
    let mut tail = Vec::new();
    f.read_to_end(&mut tail).map_err(|e| TraceError::io(&p, e))?;
    Ok(Ident { len, tail_crc: crc32fast::hash(&tail) })
}

/// The freq view's band bounds for this machine (its queries divide as floats).
fn bands(t: &Trace) -> [f64; 3] {
    let m = &t.header.machine;
    let (lo, base, hi) = (m.freq_min_khz as f64, m.freq_base_khz as f64, m.freq_max_khz as f64);
    [lo + (base - lo) / 2.0, base, base + (hi - base) / 2.0]
}

fn band_col(khz: u64, b: &[f64; 3]) -> usize {
    let f = khz as f64;
    if khz == 0 {
        1
    } else if f < b[0] {
        2
    } else if f < b[1] {
        3
    } else if f < b[2] {
        4
    } else {
        5
    }
}

fn rq_col(nr: u64) -> usize {
    RQ_COL + match nr {
        0 => 0,
        1 => 1,
        2 => 2,
        3 | 4 => 3,
        _ => 4,
    }
}

/// The file's ids of the events the summary follows (u32::MAX if absent).
struct Ids {
    switch: u32,
    freq: u32,
    tick: u32,
    rq: u32,
    idle_enter: u32,
    idle_exit: u32,
    exec: u32,
}

/// One CPU's finest-level arrays.
struct CpuAcc<'a> {
    t0: u64,
    width: u64,
    bins: usize,
    time: &'a mut [u64],
    counts: &'a mut [u32],
    state: &'a mut [u64],
    /// Bins whose start state is written.
    filled: usize,
    execs: Vec<u64>,
}

impl CpuAcc<'_> {
    fn bin(&self, ts: u64) -> usize {
        (((ts - self.t0) / self.width) as usize).min(self.bins - 1)
    }

    /// Add the time [a, b) to column `col` of the bins it covers.
    fn add(&mut self, col: usize, a: u64, b: u64) {
        let mut a = a;
        while a < b {
            let k = self.bin(a);
            let edge = if k == self.bins - 1 { b } else { (self.t0 + (k as u64 + 1) * self.width).min(b) };
            self.time[k * NT + col] += edge - a;
            a = edge;
        }
    }

    /// Write the start state of every bin that starts at or before `ts`.
    fn fill_to(&mut self, ts: u64, st: &[u64; NS]) {
        let last = if ts == u64::MAX { self.bins } else { self.bin(ts) + 1 };
        while self.filled < last {
            let bin_start = self.t0 + self.filled as u64 * self.width;
            if bin_start > ts {
                break;
            }
            self.state[self.filled * NS..(self.filled + 1) * NS].copy_from_slice(st);
            self.filled += 1;
        }
    }
}

fn build_cpu(t: &Trace, cpu: u32, end: u64, ids: &Ids, bands: &[f64; 3], acc: &mut CpuAcc) -> Result<()> {
    let mut khz: u64 = 0;
    // The running segment: start, pid, and its frequency once known (it is
    // the one after every event of its start's timestamp).
    let mut seg: Option<(u64, u32, Option<u64>)> = None;
    let mut idle: Option<(u64, u64)> = None;
    let mut rq: Option<(u64, u64)> = None;
    let state = |seg: &Option<(u64, u32, Option<u64>)>, khz: u64, rq: &Option<(u64, u64)>, idle: &Option<(u64, u64)>| {
        let nr = rq.map_or(NONE, |r| r.1);
        let (is, ist) = idle.unwrap_or((NONE, NONE));
        match seg {
            Some((s, pid, f)) => [*pid as u64, *s, f.unwrap_or(khz), khz, nr, is, ist],
            None => [NONE, NONE, NONE, khz, nr, is, ist],
        }
    };
    let close_seg = |acc: &mut CpuAcc, seg: &(u64, u32, Option<u64>), khz: u64, to: u64| {
        let col = if seg.1 == 0 { 0 } else { band_col(seg.2.unwrap_or(khz), bands) };
        acc.add(col, seg.0, to);
    };
    for ev in t.cpu_events(cpu, Window::ALL) {
        let ev = ev?;
        if let Some(s) = &mut seg {
            if s.2.is_none() && ev.ts > s.0 {
                s.2 = Some(khz);
            }
        }
        // Bins that start at or before this event begin with the state
        // before it (the first event of their start's time fills them).
        let st = state(&seg, khz, &rq, &idle);
        acc.fill_to(ev.ts, &st);
        let k = acc.bin(ev.ts);
        acc.counts[k * KINDS + if (ev.id as usize) < KINDS { ev.id as usize } else { 0 }] += 1;
        let id = ev.id;
        if id == ids.exec {
            acc.execs.extend([ev.pid as u64, ev.ts, ev.a() as u64 | (ev.b() as u64) << 32]);
        }
        if id == ids.switch {
            if let Some(s) = seg {
                close_seg(acc, &s, khz, ev.ts);
            }
            seg = Some((ev.ts, ev.a(), None));
        } else if id == ids.freq || (id == ids.tick && ev.a() > 0) {
            khz = ev.a() as u64;
        } else if id == ids.rq {
            if let Some((s, nr)) = rq {
                acc.add(rq_col(nr), s, ev.ts);
            }
            rq = Some((ev.ts, ev.a() as u64));
        } else if id == ids.idle_enter || id == ids.idle_exit {
            if let Some((s, st)) = idle {
                acc.add(IDLE_STATE_COL + st.min(3) as usize, s, ev.ts);
            }
            idle = if id == ids.idle_enter { Some((ev.ts, ev.a() as u64)) } else { None };
        }
    }
    if let Some(s) = seg {
        close_seg(acc, &s, khz, end);
    }
    if let Some((s, nr)) = rq {
        acc.add(rq_col(nr), s, end);
    }
    if let Some(s) = &mut seg {
        s.2.get_or_insert(khz);
    }
    // An idle period the trace does not end is neither counted nor a state
    // (the idle view does not draw it either).
    let st = state(&seg, khz, &rq, &None);
    let from = acc.filled;
    acc.fill_to(u64::MAX, &st);
    if let Some((s, _)) = idle {
        for k in acc.bin(s)..from {
            if acc.state[k * NS + 5] == s {
                acc.state[k * NS + 5..k * NS + 7].fill(NONE);
            }
        }
    }
    Ok(())
}

/// Sum `n`-bin groups of a (cpu, bin, cols) array.
fn coarsen<T: Copy + Default + std::ops::AddAssign + Send + Sync>(a: &[T], bins: usize, cols: usize, n: usize) -> Vec<T> {
    let out_bins = bins.div_ceil(n);
    let mut out = vec![T::default(); a.len() / bins * out_bins];
    out.par_chunks_mut(out_bins * cols).zip(a.par_chunks(bins * cols)).for_each(|(o, src)| {
        for (b, row) in src.chunks(cols).enumerate() {
            let dst = &mut o[(b / n) * cols..(b / n + 1) * cols];
            for (d, s) in dst.iter_mut().zip(row) {
                *d += *s;
            }
        }
    });
    out
}

/// Build the summary of an open trace (reading all of it once, CPUs in parallel).
pub fn build(t: &Trace, trace: Ident) -> Result<Lod> {
    build_with(t, trace, &|_, _| {})
}

/// `build`, calling `progress(CPUs done, CPUs)` as each CPU is summarised.
pub fn build_with(t: &Trace, trace: Ident, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<Lod> {
    let ncpu = t.nr_cpus() as usize;
    let (t0, last) = t.span().unwrap_or((0, 0));
    let bins = FINE_BINS as usize;
    // Wide enough that the last event's ns lies in the last bin.
    let width = (last - t0) / FINE_BINS as u64 + 1;
    let ev = &t.header.events;
    let id = |b| ev.builtin_to_file(b).unwrap_or(u32::MAX);
    let ids = Ids {
        switch: id(ids::CTX_SWITCH),
        freq: id(ids::FREQ_CHANGE),
        tick: id(ids::TICK),
        rq: id(ids::RQ_SIZE),
        idle_enter: id(ids::IDLE_ENTER),
        idle_exit: id(ids::IDLE_EXIT),
        exec: id(ids::EXEC),
    };
    let bands = bands(t);
    let mut time = vec![0u64; ncpu * bins * NT];
    let mut counts = vec![0u32; ncpu * bins * KINDS];
    let mut state = vec![NONE; ncpu * bins * NS];
    let done = std::sync::atomic::AtomicUsize::new(0);
    let execs: Vec<Vec<u64>> = time
        .par_chunks_mut(bins * NT)
        .zip(counts.par_chunks_mut(bins * KINDS))
        .zip(state.par_chunks_mut(bins * NS))
        .enumerate()
        .map(|(cpu, ((time, counts), state))| {
            let mut acc = CpuAcc { t0, width, bins, time, counts, state, filled: 0, execs: Vec::new() };
            build_cpu(t, cpu as u32, last, &ids, &bands, &mut acc)?;
            progress(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1, ncpu);
            Ok(acc.execs)
        })
        .collect::<Result<_>>()?;
    let execs = execs.concat();
    let mut levels = vec![Level { width, bins: FINE_BINS, time, counts }];
    for l in 1..LEVELS {
        let f = FACTOR as usize;
        let below = &levels[l - 1];
        let b = below.bins as usize;
        let level = Level {
            width: below.width * f as u64,
            bins: b.div_ceil(f) as u32,
            time: coarsen(&below.time, b, NT, f),
            counts: coarsen(&below.counts, b, KINDS, f),
        };
        levels.push(level);
    }
    let meta = LodMeta {
        trace,
        nr_cpus: ncpu as u32,
        t0,
        width,
        bins: FINE_BINS,
        levels: LEVELS as u32,
        factor: FACTOR,
        bands,
        events: t.event_count(),
        execs: execs.len() as u64 / 3,
        body_len: 0,
        body_crc: 0,
        frames: Vec::new(),
    };
    Ok(Lod { meta, levels, state, execs })
}

impl Lod {
    /// Write the side file (to a temporary name, then renamed: a reader never
    /// sees half of one).
    pub fn write(&mut self, path: &Path) -> Result<()> {
        let p = path.display().to_string();
        let mut arrays: Vec<&[u8]> = Vec::new();
        for l in &self.levels {
            arrays.push(bytemuck::cast_slice(&l.time));
            arrays.push(bytemuck::cast_slice(&l.counts));
        }
        arrays.push(bytemuck::cast_slice(&self.state));
        arrays.push(bytemuck::cast_slice(&self.execs));
        // Mostly zeros: level 1 compresses them at hundreds of MB/s.
        let frames = arrays.par_iter().map(|a| zstd::bulk::compress(a, 1)).collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| TraceError::io(&p, e))?;
        self.meta.frames = frames.iter().map(|f| f.len() as u64).collect();
        let body = frames.concat();
        self.meta.body_len = body.len() as u64;
        self.meta.body_crc = crc32fast::hash(&body);
        let json = serde_json::to_vec(&self.meta).map_err(|e| TraceError::new(&p, e.to_string()))?;
        // Written aside and renamed (crate::output): a reader never sees half of one.
        let out = crate::output::Output::create(path, &[])?;
        let mut f = std::io::BufWriter::new(out.file()?);
        let mut write = || -> std::io::Result<()> {
            f.write_all(&MAGIC)?;
            f.write_all(&VERSION.to_le_bytes())?;
            f.write_all(&(json.len() as u32).to_le_bytes())?;
            f.write_all(&json)?;
            f.write_all(&body)?;
            f.flush()
        };
        write().map_err(|e| TraceError::io(&p, e).writing())?;
        drop(f);
        out.commit()
    }

    /// Read a side file, refusing one that does not belong to `trace` (of
    /// `nr_cpus` CPUs: the arrays' size is checked before they are allocated).
    pub fn read(path: &Path, trace: Ident, nr_cpus: u32) -> Result<Lod> {
        let p = path.display().to_string();
        let err = |m: String| TraceError::new(&p, m);
        let b = std::fs::read(path).map_err(|e| TraceError::io(&p, e))?;
        if b.len() < 16 || b[..8] != MAGIC {
            return Err(err("expected a level-of-detail summary (magic \"WCTLOD\")".into()));
        }
        let version = u32::from_le_bytes(b[8..12].try_into().unwrap());
        if version != VERSION {
            return Err(err(format!("expected summary version {VERSION}, found {version}")));
        }
        let jlen = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
        let json = b.get(16..16 + jlen).ok_or_else(|| err("is truncated in its header".into()))?;
        let meta: LodMeta = serde_json::from_slice(json).map_err(|e| err(format!("expected a JSON header: {e}")))?;
        if meta.trace != trace {
            return Err(err("summarises another version of the trace (or another file): stale".into()));
        }
        let body = &b[16 + jlen..];
        if body.len() as u64 != meta.body_len || crc32fast::hash(body) != meta.body_crc {
            return Err(err("is truncated or corrupt (its checksum does not match)".into()));
        }
        let (ncpu, f) = (meta.nr_cpus as usize, meta.factor.max(1) as usize);
        if meta.bins != FINE_BINS || meta.levels as usize != LEVELS || f != FACTOR as usize || meta.nr_cpus != nr_cpus
            || meta.width == 0
            || meta.execs > meta.events
        {
            return Err(err(format!("expected this version's bins and levels, for the trace's {nr_cpus} CPUs")));
        }
        // Decompressed straight into the arrays (no second copy of the
        // hundreds of MB a large trace's summary holds), in parallel.
        let mut levels = Vec::new();
        let (mut width, mut bins) = (meta.width, meta.bins as usize);
        for _ in 0..LEVELS {
            levels.push(Level { width, bins: bins as u32, time: vec![0u64; ncpu * bins * NT], counts: vec![0u32; ncpu * bins * KINDS] });
            width *= f as u64;
            bins = bins.div_ceil(f);
        }
        let mut state = vec![0u64; ncpu * meta.bins as usize * NS];
        let mut execs = vec![0u64; meta.execs as usize * 3];
        let mut dests: Vec<&mut [u8]> = Vec::new();
        for l in &mut levels {
            dests.push(bytemuck::cast_slice_mut(&mut l.time));
            dests.push(bytemuck::cast_slice_mut(&mut l.counts));
        }
        dests.push(bytemuck::cast_slice_mut(&mut state));
        dests.push(bytemuck::cast_slice_mut(&mut execs));
        if meta.frames.len() != dests.len() || meta.frames.iter().sum::<u64>() != body.len() as u64 {
            return Err(err(format!("expected {} zstd frames filling the body", dests.len())));
        }
        let mut frames = Vec::new();
        let mut off = 0;
        for &n in &meta.frames {
            frames.push(&body[off..off + n as usize]);
            off += n as usize;
        }
        dests.into_par_iter().zip(frames).try_for_each(|(dest, frame)| {
            let n = zstd::bulk::Decompressor::new()
                .and_then(|mut d| d.decompress_to_buffer(frame, dest.as_mut()))
                .map_err(|e| err(format!("expected a zstd frame: {e}")))?;
            if n != dest.len() {
                return Err(err(format!("expected an array of {} bytes, found {n}", dest.len())));
            }
            Ok(())
        })?;
        Ok(Lod { meta, levels, state, execs })
    }
}

/// What `open_or_build` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Origin {
    /// The side file was current.
    Read,
    /// Built and written beside the trace; the string says why it was built.
    Built(String),
    /// Built, but the side file could not be written (the string says why):
    /// the summary is used from memory.
    BuiltNotSaved(String, String),
}

/// The trace's summary: read from beside it when that is current, built
/// (and saved) otherwise.
pub fn open_or_build(t: &Trace) -> Result<(Lod, Origin)> {
    open_or_build_with(t, &|_, _| {})
}

/// `open_or_build`, calling `progress(CPUs done, CPUs)` while it builds.
pub fn open_or_build_with(t: &Trace, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<(Lod, Origin)> {
    let path = Path::new(t.path());
    let id = ident(path)?;
    let side = side_path(path);
    let why = match Lod::read(&side, id, t.nr_cpus()) {
        Ok(l) => return Ok((l, Origin::Read)),
        Err(e) if side.exists() => e.to_string(),
        Err(_) => "none yet".to_string(),
    };
    let mut lod = build_with(t, id, progress)?;
    match lod.write(&side) {
        Ok(()) => Ok((lod, Origin::Built(why))),
        Err(e) => Ok((lod, Origin::BuiltNotSaved(why, e.to_string()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Event;
    use crate::meta::{Header, Machine};
    use crate::writer::{Writer, WriterOptions};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn machine(cpus: u32) -> Machine {
        crate::synth::synth_machine(cpus)
    }

    /// A random trace of switches, frequency changes, ticks, run-queue sizes,
    /// EXECs and idle states on a few CPUs, with ties in time.
    fn random_trace(dir: &Path, seed: u64) -> (PathBuf, Vec<Vec<Event>>) {
        let mut rng = SmallRng::seed_from_u64(seed);
        let cpus = rng.random_range(1..5u32);
        let path = dir.join(format!("r{seed}.wct"));
        let header = Header::other(machine(cpus), "random");
        let mut w = Writer::create(&path, &header, WriterOptions::default()).unwrap();
        let mut all = vec![Vec::new(); cpus as usize];
        let start = rng.random_range(0..1_000_000u64);
        for (c, evs) in all.iter_mut().enumerate() {
            let mut ts = start + rng.random_range(0..50_000u64);
            for _ in 0..rng.random_range(0..1500) {
                ts += if rng.random_bool(0.2) { 0 } else { rng.random_range(1..20_000) };
                let e = match rng.random_range(0..7) {
                    0 | 1 => Event::new(ts, 1, ids::CTX_SWITCH, if rng.random_bool(0.3) { 0 } else { rng.random_range(1..50) }, 0),
                    2 => Event::new(ts, 0, ids::FREQ_CHANGE, rng.random_range(0..3_200_000), 0),
                    3 => Event::new(ts, 0, ids::TICK, if rng.random_bool(0.3) { 0 } else { rng.random_range(1_000_000..3_200_000) }, 0),
                    4 => Event::new(ts, 0, ids::RQ_SIZE, rng.random_range(0..7), 0),
                    5 => Event::with_comm(ts, rng.random_range(1..50), ids::EXEC, ["sh", "cc1", "a-long-name"][rng.random_range(0..3)]),
                    _ => Event::new(ts, 0, if rng.random_bool(0.5) { ids::IDLE_ENTER } else { ids::IDLE_EXIT }, rng.random_range(0..5), 0),
                };
                w.push(c as u32, e).unwrap();
                evs.push(e);
            }
        }
        w.finish().unwrap();
        (path, all)
    }

    /// The exact segments' time summed into bins, computed the slow, obvious
    /// way: per segment, its frequency searched among all events.
    fn brute(evs: &[Event], t0: u64, width: u64, end: u64, bands: &[f64; 3]) -> Vec<u64> {
        let mut out = vec![0u64; FINE_BINS as usize * NT];
        let last = FINE_BINS as usize - 1;
        let mut add = |col: usize, a: u64, b: u64| {
            for k in 0..=last {
                let lo = t0 + k as u64 * width;
                let hi = if k == last { u64::MAX } else { lo + width };
                if a.max(lo) < b.min(hi) {
                    out[k * NT + col] += b.min(hi) - a.max(lo);
                }
            }
        };
        let freq_at = |ts: u64| {
            evs.iter()
                .filter(|e| e.ts <= ts && (e.id == ids::FREQ_CHANGE || (e.id == ids::TICK && e.a() > 0)))
                .last()
                .map_or(0, |e| e.a() as u64)
        };
        let next = |i: usize, f: &dyn Fn(&Event) -> bool| evs[i + 1..].iter().find(|e| f(e)).map_or(end, |e| e.ts);
        let ended = |i: usize| evs[i + 1..].iter().any(|n| n.id == ids::IDLE_ENTER || n.id == ids::IDLE_EXIT);
        for (i, e) in evs.iter().enumerate() {
            match e.id {
                ids::CTX_SWITCH => {
                    let col = if e.a() == 0 { 0 } else { band_col(freq_at(e.ts), bands) };
                    add(col, e.ts, next(i, &|n| n.id == ids::CTX_SWITCH));
                }
                ids::RQ_SIZE => add(rq_col(e.a() as u64), e.ts, next(i, &|n| n.id == ids::RQ_SIZE)),
                ids::IDLE_ENTER if ended(i) => add(IDLE_STATE_COL + e.a().min(3) as usize, e.ts,
                                       next(i, &|n| n.id == ids::IDLE_ENTER || n.id == ids::IDLE_EXIT)),
                _ => {}
            }
        }
        out
    }

    #[test]
    fn bins_equal_the_exact_segments_summed() {
        let dir = tempfile::tempdir().unwrap();
        for seed in 0..12 {
            let (path, all) = random_trace(dir.path(), seed);
            let t = Trace::open(&path).unwrap();
            let lod = build(&t, ident(&path).unwrap()).unwrap();
            let Some((t0, end)) = t.span() else { continue };
            assert_eq!(lod.meta.t0, t0);
            let (bins, width) = (FINE_BINS as usize, lod.meta.width);
            for (c, evs) in all.iter().enumerate() {
                let want = brute(evs, t0, width, end, &lod.meta.bands);
                let got = &lod.levels[0].time[c * bins * NT..(c + 1) * bins * NT];
                assert!(want == got, "seed {seed} cpu {c}: times differ");
                let counts = &lod.levels[0].counts[c * bins * KINDS..(c + 1) * bins * KINDS];
                assert_eq!(counts.iter().map(|&n| n as usize).sum::<usize>(), evs.len());
                for k in [ids::CTX_SWITCH, ids::TICK] {
                    let n = evs.iter().filter(|e| e.id == k).count();
                    assert_eq!(counts.chunks(KINDS).map(|r| r[k as usize] as usize).sum::<usize>(), n);
                }
                // The state at a bin's start is that after the events before it.
                for k in [0, bins / 3, bins - 1] {
                    let at = t0 + k as u64 * width;
                    let st = &lod.state[(c * bins + k) * NS..(c * bins + k + 1) * NS];
                    let last_sw = evs.iter().filter(|e| e.ts < at && e.id == ids::CTX_SWITCH).last();
                    assert_eq!(st[0], last_sw.map_or(NONE, |e| e.a() as u64), "seed {seed} cpu {c} bin {k}");
                    assert_eq!(st[1], last_sw.map_or(NONE, |e| e.ts));
                    // In an idle period (one that ends) at the bin's start?
                    let last_idle = evs.iter().rposition(|e| e.ts < at && (e.id == ids::IDLE_ENTER || e.id == ids::IDLE_EXIT));
                    let open = last_idle.filter(|&i| evs[i].id == ids::IDLE_ENTER)
                        .filter(|&i| evs[i + 1..].iter().any(|n| n.id == ids::IDLE_ENTER || n.id == ids::IDLE_EXIT));
                    assert_eq!(st[5], open.map_or(NONE, |i| evs[i].ts), "seed {seed} cpu {c} bin {k}");
                    assert_eq!(st[6], open.map_or(NONE, |i| evs[i].a() as u64));
                }
            }
            // Every EXEC, CPU by CPU, in time order, with its name's words.
            let want: Vec<u64> = all.iter().flatten().filter(|e| e.id == ids::EXEC)
                .flat_map(|e| [e.pid as u64, e.ts, e.a() as u64 | (e.b() as u64) << 32]).collect();
            assert!(lod.execs == want, "seed {seed}: EXECs differ");
            assert_eq!(lod.meta.execs as usize * 3, want.len());
            // Coarser levels are sums of the finer ones.
            for l in 1..LEVELS {
                let s0: u64 = lod.levels[l - 1].time.iter().sum();
                let s1: u64 = lod.levels[l].time.iter().sum();
                assert_eq!(s0, s1);
                assert_eq!(lod.levels[l].width, lod.levels[l - 1].width * FACTOR as u64);
            }
        }
    }

    #[test]
    fn a_summary_of_another_file_or_stale_or_truncated_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (a, _) = random_trace(dir.path(), 100);
        let (b, _) = random_trace(dir.path(), 101);
        let t = Trace::open(&a).unwrap();
        let (lod, origin) = open_or_build(&t).unwrap();
        assert_eq!(origin, Origin::Built("none yet".into()));
        let side = side_path(&a);
        assert!(side.exists());
        assert_eq!(open_or_build(&t).unwrap().1, Origin::Read);
        let again = Lod::read(&side, ident(&a).unwrap(), t.nr_cpus()).unwrap();
        assert!(again.levels[0].time == lod.levels[0].time && again.state == lod.state && again.execs == lod.execs);
        assert!(!lod.execs.is_empty());
        // Another file's summary.
        let err = Lod::read(&side, ident(&b).unwrap(), t.nr_cpus()).err().unwrap();
        assert!(err.to_string().contains("stale"), "{err}");
        // Truncated.
        let bytes = std::fs::read(&side).unwrap();
        std::fs::write(&side, &bytes[..bytes.len() - 10]).unwrap();
        let err = Lod::read(&side, ident(&a).unwrap(), t.nr_cpus()).err().unwrap();
        assert!(err.to_string().contains("truncated"), "{err}");
        // Rebuilt by open_or_build, which says why.
        let (_, origin) = open_or_build(&t).unwrap();
        assert!(matches!(&origin, Origin::Built(w) if w.contains("truncated")), "{origin:?}");
        // The trace rewritten (another trace at its path): stale.
        std::fs::copy(&b, &a).unwrap();
        let t = Trace::open(&a).unwrap();
        let (_, origin) = open_or_build(&t).unwrap();
        assert!(matches!(&origin, Origin::Built(w) if w.contains("stale")), "{origin:?}");
        // Garbage.
        std::fs::write(&side, b"not a summary").unwrap();
        assert!(Lod::read(&side, ident(&a).unwrap(), t.nr_cpus()).is_err());
    }
}
