// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore record`: load the BPF programs, drain the per-CPU buffers into a
//! .wct file, stop on the command's exit, the duration, SIGINT or a full disk.

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Result};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};
use warmcore_args::UsageError;
use warmcore_trace::output::Output;
use warmcore_trace::{ids, Event, EventTable, Header, Provenance, Writer, WriterOptions};

use crate::bpf_intf as intf;
use crate::bpf_skel::{BpfSkel, BpfSkelBuilder};
use crate::freq::Source;
use crate::sink::{ReserveFile, Sink};
use crate::sys;

// The BPF side writes warmcore_trace's built-in ids as they are.
const _: () = {
    assert!(intf::wc_event_id_WC_EXEC == ids::EXEC);
    assert!(intf::wc_event_id_WC_EXIT == ids::EXIT);
    assert!(intf::wc_event_id_WC_WAKEUP == ids::WAKEUP);
    assert!(intf::wc_event_id_WC_WAKEUP_NEW == ids::WAKEUP_NEW);
    assert!(intf::wc_event_id_WC_BLOCK == ids::BLOCK);
    assert!(intf::wc_event_id_WC_BLOCK_IO == ids::BLOCK_IO);
    assert!(intf::wc_event_id_WC_FORK == ids::FORK);
    assert!(intf::wc_event_id_WC_WAIT_PID == ids::WAIT_PID);
    assert!(intf::wc_event_id_WC_TICK == ids::TICK);
    assert!(intf::wc_event_id_WC_CTX_SWITCH == ids::CTX_SWITCH);
    assert!(intf::wc_event_id_WC_MIGRATE == ids::MIGRATE);
    assert!(intf::wc_prev_state_WC_PS_BLOCKED_IO == warmcore_trace::event::prev_state::BLOCKED_IO);
    assert!(intf::wc_prev_state_WC_PS_DEAD == warmcore_trace::event::prev_state::DEAD);
    assert!(std::mem::size_of::<intf::wc_event>() == warmcore_trace::event::EVENT_SIZE);
};

/// Package energy from RAPL, recorded at the start and the end on CPU 0:
/// pid 0, a = package (powercap zone index), b = energy in mJ (wraps).
pub const RAPL_ENERGY: u32 = 100;

/// The events `warmcore record` can record, by name.
pub const RECORDABLE: &[u32] = &[
    ids::EXEC,
    ids::EXIT,
    ids::WAKEUP,
    ids::WAKEUP_NEW,
    ids::BLOCK,
    ids::BLOCK_IO,
    ids::FORK,
    ids::WAIT_PID,
    ids::TICK,
    ids::CTX_SWITCH,
    ids::MIGRATE,
];

/// 2^18 entries a CPU: at a million events a second, five times the drain's
/// period.
pub const DEFAULT_BUFFER_MB: f64 = 6.0;

/// Entries in each CPU's buffer for a size in MiB: at least that size, a
/// power of two so that the programs index it with a mask.
pub fn buffer_slots(buffer_mb: f64) -> u64 {
    ((buffer_mb * 1048576.0) as u64 / warmcore_trace::event::EVENT_SIZE as u64).max(1).next_power_of_two()
}

#[derive(Clone, Debug)]
pub struct Options {
    pub out: PathBuf,
    pub cpus: Option<Vec<u32>>,
    pub pid: Option<u32>,
    pub cgroup: Option<PathBuf>,
    pub duration: Option<Duration>,
    /// Event names; None = all of RECORDABLE.
    pub events: Option<Vec<String>>,
    /// Per-CPU buffer size in MiB.
    pub buffer_mb: f64,
    pub flight_recorder: bool,
    /// Turn on the kernel's BPF run-time statistics while recording, so
    /// that the report says what the programs cost.
    pub bpf_stats: bool,
    pub command: Vec<String>,
    /// Only the command and the processes it creates: the command puts its
    /// own pid in the filter before it runs, so its first forks are kept.
    pub command_only: bool,
    /// Set to stop the recording (SIGINT sets it too).
    pub stop: Arc<AtomicBool>,
    /// Set to dump the flight recorder now (SIGUSR1 sets it too).
    pub dump_now: Arc<AtomicBool>,
}

impl Options {
    pub fn new(out: impl Into<PathBuf>) -> Options {
        Options {
            out: out.into(),
            cpus: None,
            pid: None,
            cgroup: None,
            duration: None,
            events: None,
            buffer_mb: DEFAULT_BUFFER_MB,
            flight_recorder: false,
            bpf_stats: false,
            command: Vec::new(),
            command_only: false,
            stop: Arc::new(AtomicBool::new(false)),
            dump_now: Arc::new(AtomicBool::new(false)),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    CommandExited,
    Duration,
    /// By this signal (SIGINT, SIGTERM), or 0 when `Options::stop` was set.
    Interrupted(i32),
    DiskFull,
}

#[derive(Debug)]
pub struct Report {
    pub out: PathBuf,
    pub events: u64,
    /// Bytes of entries the buffers delivered (24 per event).
    pub bytes_recorded: u64,
    pub file_bytes: u64,
    pub elapsed: Duration,
    /// Per CPU: entries that could not be stored (streaming) or that were
    /// overwritten or not stored (flight recorder).
    pub lost: Vec<u64>,
    pub reason: StopReason,
    pub command_status: Option<ExitStatus>,
    pub freq_source: String,
    /// (package, joules) consumed during the recording, where RAPL exists.
    pub energy: Option<Vec<(u32, f64)>>,
    /// Flight-recorder snapshots written on request (SIGUSR1).
    pub snapshots: Vec<PathBuf>,
    /// Entries whose timestamp was raised to keep their CPU's order.
    pub clamped: u64,
    /// The BPF programs' total run time and runs while attached, when the
    /// kernel's BPF statistics were on (--bpf-stats or the sysctl).
    pub bpf_run: Option<(Duration, u64)>,
    /// CPU time the recorder itself used from the attach to the end.
    pub recorder_cpu: Duration,
}

/// The loaded programs' run time and runs as the kernel counts them; None
/// when its BPF statistics are off.
fn prog_run_time(skel: &BpfSkel) -> Option<(Duration, u64)> {
    use libbpf_rs::libbpf_sys as libbpf;
    use libbpf_rs::AsRawLibbpf;
    let (mut ns, mut runs) = (0u64, 0u64);
    for p in skel.object().progs() {
        // SAFETY: the pointer is the live bpf_program `p` wraps, which the
        // skeleton keeps for the duration of the borrow.
        let fd = unsafe { libbpf::bpf_program__fd(p.as_libbpf_object().as_ptr()) };
        if fd < 0 {
            continue; // not loaded (its events were not asked for)
        }
        // SAFETY: bpf_prog_info is plain integers and pointers, for which
        // all zeroes is valid (and what the kernel expects of unused fields).
        let mut info: libbpf::bpf_prog_info = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of_val(&info) as u32;
        // SAFETY: the kernel writes at most `len` bytes, the size of `info`;
        // its pointer fields are null, so it writes nothing through them.
        if unsafe { libbpf::bpf_prog_get_info_by_fd(fd, &mut info, &mut len) } == 0 {
            ns += info.run_time_ns;
            runs += info.run_cnt;
        }
    }
    (runs > 0).then(|| (Duration::from_nanos(ns), runs))
}

/// The event mask of a list of names, naming the first unknown one.
pub fn parse_events(names: Option<&[String]>) -> Result<u64> {
    let table = EventTable::default();
    let Some(names) = names else {
        return Ok(RECORDABLE.iter().fold(0, |m, &id| m | 1u64 << id));
    };
    let mut mask = 0u64;
    for n in names.iter().flat_map(|s| s.split(',')).map(str::trim).filter(|s| !s.is_empty()) {
        match table.id(n).filter(|id| RECORDABLE.contains(id)) {
            Some(id) => mask |= 1u64 << id,
            None => {
                let known: Vec<String> = RECORDABLE.iter().map(|&i| table.name(i)).collect();
                bail!(UsageError::new(format!("unknown event \"{n}\": warmcore record knows {}", known.join(", "))))
            }
        }
    }
    if mask == 0 {
        bail!(UsageError::new("no events given to --events"));
    }
    Ok(mask)
}

/// A kernel function's address (root sees real addresses in kallsyms).
fn kernel_symbol(name: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/kallsyms").ok()?;
    s.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        let (a, t, n) = (it.next()?, it.next()?, it.next()?);
        if matches!(t, "T" | "t") && n == name {
            u64::from_str_radix(a, 16).ok().filter(|&a| a != 0)
        } else {
            None
        }
    })
}

fn bpf_err(what: &str, e: libbpf_rs::Error) -> anyhow::Error {
    let msg = e.to_string();
    if msg.contains("Operation not permitted") || msg.contains("EPERM") {
        anyhow!("{what} the BPF programs: operation not permitted: needs CAP_BPF and CAP_PERFMON (run as root)")
    } else {
        anyhow!("{what} the BPF programs failed: {msg}")
    }
}

const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

fn is_cgroup2(p: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else { return false };
    // SAFETY: statfs fills the struct we pass for a NUL-terminated path.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type as i64 == CGROUP2_SUPER_MAGIC
    }
}

/// The id and the level (0 for the hierarchy's root) of a cgroup v2 given by
/// path: absolute, or relative to the v2 hierarchy's root (/sys/fs/cgroup,
/// or /sys/fs/cgroup/unified on hybrid systems).
fn cgroup_id(p: &Path) -> Result<(u64, u32)> {
    let path = if p.is_absolute() {
        p.to_path_buf()
    } else {
        let root = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
            .iter()
            .map(Path::new)
            .find(|r| is_cgroup2(r))
            .ok_or_else(|| UsageError::new(format!("no cgroup {}: no cgroup v2 hierarchy is mounted", p.display())))?;
        root.join(p)
    };
    let md = std::fs::metadata(&path).map_err(|e| UsageError::new(format!("no cgroup {}: {e}", path.display())))?;
    if !md.is_dir() || !is_cgroup2(&path) {
        bail!(UsageError::new(format!("no cgroup {}: not a cgroup v2 directory", path.display())));
    }
    // Its level: how many of its ancestors are still in the hierarchy.
    let real = std::fs::canonicalize(&path).map_err(|e| UsageError::new(format!("no cgroup {}: {e}", path.display())))?;
    let level = real.ancestors().skip(1).take_while(|a| is_cgroup2(a)).count() as u32;
    // On cgroup v2 a cgroup's id is its directory's inode number.
    Ok((md.ino(), level))
}

struct Signals {
    ids: Vec<signal_hook::SigId>,
    /// The SIGINT or SIGTERM received, 0 before one.
    caught: Arc<AtomicUsize>,
}

impl Signals {
    fn install(stop: &Arc<AtomicBool>, dump: &Arc<AtomicBool>) -> Result<Signals> {
        let mut ids = Vec::new();
        let caught = Arc::new(AtomicUsize::new(0));
        for s in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            ids.push(signal_hook::flag::register_usize(s, Arc::clone(&caught), s as usize)?);
            ids.push(signal_hook::flag::register(s, Arc::clone(stop))?);
        }
        ids.push(signal_hook::flag::register(signal_hook::consts::SIGUSR1, Arc::clone(dump))?);
        Ok(Signals { ids, caught })
    }

    fn caught(&self) -> i32 {
        self.caught.load(Ordering::SeqCst) as i32
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// The skeleton, loaded and attached, with the entries mapped.
struct Loaded<'obj> {
    skel: BpfSkel<'obj>,
    slots: u64,
    ring: Mapping,
}

/// The `ring` map's entries, mapped read-only.
struct Mapping {
    ptr: *mut libc::c_void,
    len: usize,
}

impl Mapping {
    fn new(skel: &BpfSkel<'_>, len: usize) -> Result<Mapping> {
        let fd = skel.maps.ring.as_fd().as_raw_fd();
        // SAFETY: the ring map is BPF_F_MMAPABLE and `len` bytes long; it is
        // unmapped on drop.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, fd, 0) };
        if ptr == libc::MAP_FAILED {
            bail!("mapping the per-CPU buffers: {}", std::io::Error::last_os_error());
        }
        Ok(Mapping { ptr, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: mapped with this length for self's lifetime. The programs
        // write only slots the readers are not reading (see drain).
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping what new() mapped.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

fn bss(skel: &BpfSkel<'_>) -> *mut crate::bpf_skel::types::bss {
    skel.maps.bss_data.as_deref().map(|b| b as *const _ as *mut _).expect("the BPF object has a .bss")
}

/// intf.h's wc_cpu_buf with atomic words: the programs use them meanwhile.
#[repr(C)]
struct CpuBuf {
    head: AtomicU64,
    published: AtomicU64,
    nest: AtomicU64,
    dropped: AtomicU64,
    bpf_pad: [u64; 4],
    tail: AtomicU64,
    user_pad: [u64; 7],
}

const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<CpuBuf>() == size_of::<intf::wc_cpu_buf>());
    assert!(offset_of!(CpuBuf, head) == offset_of!(intf::wc_cpu_buf, head));
    assert!(offset_of!(CpuBuf, published) == offset_of!(intf::wc_cpu_buf, published));
    assert!(offset_of!(CpuBuf, dropped) == offset_of!(intf::wc_cpu_buf, dropped));
    assert!(offset_of!(CpuBuf, tail) == offset_of!(intf::wc_cpu_buf, tail));
};

fn cpu_buf<'a>(skel: &'a BpfSkel<'_>, c: usize) -> &'a CpuBuf {
    // SAFETY: the .bss is mapped for the skeleton's lifetime, and CpuBuf has
    // wc_cpu_buf's layout (checked above) with atomics for the shared words.
    unsafe { &*(std::ptr::addr_of!((*bss(skel)).bufs[c]) as *const CpuBuf) }
}

fn set_paused(skel: &BpfSkel<'_>, on: bool) {
    // SAFETY: as in cpu_buf; `paused` is read by the BPF programs.
    unsafe { std::ptr::write_volatile(&mut (*bss(skel)).paused, on as u32) };
}

/// The entries [from, to) of CPU c's buffer, as at most two byte runs.
fn entries<'a>(l: &'a Loaded<'_>, c: usize, from: u64, to: u64) -> [&'a [u8]; 2] {
    let size = warmcore_trace::event::EVENT_SIZE;
    // Never more than the slice holds (the programs keep to that already).
    let from = from.max(to.saturating_sub(l.slots));
    let base = c * l.slots as usize * size;
    let (first, n) = ((from & (l.slots - 1)) as usize, (to - from) as usize);
    let till_end = (l.slots as usize - first).min(n);
    let data = l.ring.bytes();
    [
        &data[base + first * size..base + (first + till_end) * size],
        &data[base..base + (n - till_end) * size],
    ]
}

/// Streaming: move what each CPU has published into the sink, and give the
/// slots back. `all` takes everything up to head, once the programs are
/// detached.
fn drain(l: &Loaded<'_>, sink: &mut Sink<ReserveFile>, ncpu: usize, all: bool) {
    for c in 0..ncpu {
        let b = cpu_buf(&l.skel, c);
        let from = b.tail.load(Ordering::Relaxed);
        let to = if all { b.head.load(Ordering::Acquire) } else { b.published.load(Ordering::Acquire) };
        // A nested program may have lowered `published` below what was read.
        if to <= from {
            continue;
        }
        for run in entries(l, c, from, to) {
            sink.push_bytes(c as u32, run);
        }
        // Release: the entries are read before their slots are handed back.
        b.tail.store(to, Ordering::Release);
    }
}

/// Copy the flight recorder's rings (paused meanwhile) into the trace `out`.
fn dump_flight(
    l: &Loaded<'_>,
    out: Output,
    header: &Header,
    tasks: &[sys::Task],
    t0: u64,
    extra: &[(u32, Event)],
) -> Result<(u64, Vec<u64>, u64)> {
    let ncpu = header.machine.nr_cpus() as usize;
    set_paused(&l.skel, true);
    // Let programs that started before the pause store their entries.
    std::thread::sleep(Duration::from_millis(20));
    let heads: Vec<u64> = (0..ncpu).map(|c| cpu_buf(&l.skel, c).head.load(Ordering::Acquire)).collect();
    let r = (move || -> Result<(u64, Vec<u64>, u64)> {
        let w = Writer::new(ReserveFile::new(&out)?, out.name(), header, WriterOptions::default())?;
        let mut sink = Sink::new(w, ncpu);
        for t in tasks {
            sink.note_task(t.tid, t.ppid, &t.comm, t0);
        }
        let mut lost = vec![0u64; ncpu];
        for (&(cpu, ev), _) in extra.iter().zip(0..) {
            if ev.ts <= t0 {
                sink.push(cpu, ev);
            }
        }
        for c in 0..ncpu {
            let head = heads[c];
            let n = head.min(l.slots);
            lost[c] = head - n + cpu_buf(&l.skel, c).dropped.load(Ordering::Acquire);
            for run in entries(l, c, head - n, head) {
                sink.push_bytes(c as u32, run);
            }
        }
        for &(cpu, ev) in extra.iter().filter(|(_, e)| e.ts > t0) {
            sink.push(cpu, ev);
        }
        sink.drain();
        if let Some(e) = sink.error.take() {
            return Err(e.into());
        }
        for (c, &n) in lost.iter().enumerate() {
            sink.writer.add_lost(c as u32, n);
        }
        sink.complete_names();
        let clamped = sink.clamped;
        let events = sink.writer.finish()?;
        out.commit()?;
        Ok((events, lost, clamped))
    })();
    set_paused(&l.skel, false);
    r
}

fn snapshot_path(out: &Path, k: usize) -> PathBuf {
    let stem = out.file_stem().unwrap_or_default().to_string_lossy();
    out.with_file_name(format!("{stem}.{k}.wct"))
}

fn rapl_events(zones: &[sys::RaplZone]) -> Vec<(u32, Event)> {
    let ts = sys::mono_ns();
    zones
        .iter()
        .filter_map(|z| sys::rapl_read(z).map(|uj| (0, Event::new(ts, 0, RAPL_ENERGY, z.index, (uj / 1000) as u32))))
        .collect()
}

/// Record until the command exits, the duration ends, SIGINT or a full disk.
/// `log` receives one-line notes (frequency source, snapshots).
pub fn record(opts: &Options, log: &mut dyn FnMut(&str)) -> Result<Report> {
    // The output first, under the rules of every output
    // (warmcore_trace::output): a path it may not write is refused before
    // anything else, and the trace is written aside and renamed when it is
    // finished, so a recording that fails leaves an older file as it was.
    // The signals before it: from then on SIGINT or SIGTERM stop the
    // recording, which finishes its trace, instead of leaving the file.
    let signals = Signals::install(&opts.stop, &opts.dump_now)?;
    let out = Output::create(&opts.out, &[])?;
    sys::check_privileges()?;
    sys::check_btf()?;
    let machine = sys::machine();
    let ncpu = machine.nr_cpus() as usize;
    let online = sys::online_cpus();
    let cpus: Vec<u32> = match &opts.cpus {
        Some(list) => {
            if let Some(bad) = list.iter().find(|c| !online.contains(c)) {
                bail!(UsageError::new(format!("no CPU {bad}: this machine's online CPUs are {}", fmt_cpus(&online))));
            }
            list.clone()
        }
        None => online.clone(),
    };
    let mask = parse_events(opts.events.as_deref())?;
    if opts.pid.is_some() && opts.cgroup.is_some() {
        bail!(UsageError::new("--pid and --cgroup exclude each other: give one"));
    }
    if opts.command_only && opts.command.is_empty() {
        bail!(UsageError::new("--command-only needs a command: warmcore record --command-only -- COMMAND"));
    }
    if opts.command_only && (opts.pid.is_some() || opts.cgroup.is_some()) {
        bail!(UsageError::new("--command-only, --pid and --cgroup exclude each other: give one"));
    }
    let by_pid = opts.pid.is_some() || opts.command_only;
    if let Some(p) = opts.pid {
        if p == 0 || !Path::new(&format!("/proc/{p}")).exists() {
            bail!(UsageError::new(format!("no process with pid {p}")));
        }
    }
    let cgid = opts.cgroup.as_deref().map(cgroup_id).transpose()?;
    if !(opts.buffer_mb > 0.0 && opts.buffer_mb <= 4096.0) {
        bail!(UsageError::new(format!("--buffer-mb {}: give a per-CPU size above 0 and at most 4096 MiB", opts.buffer_mb)));
    }
    let wants = |id: u32| mask & (1u64 << id) != 0;

    let freq = if wants(ids::TICK) { Source::detect(&cpus) } else { Source::None("TICK not recorded".into()) };
    log(&format!("frequency: {}", freq.describe()));
    let zones = sys::rapl_zones();
    if zones.is_empty() {
        log("energy: no RAPL package domain in powercap: energy not recorded");
    }

    sys::raise_memlock();
    let ncpu_possible = libbpf_rs::num_possible_cpus().map_err(|e| bpf_err("counting CPUs for", e))? as u32;
    let slots = buffer_slots(opts.buffer_mb);
    let ring_slots = ncpu_possible as u64 * slots;
    if ring_slots > u32::MAX as u64 {
        bail!(UsageError::new(format!("--buffer-mb {} is too large for {ncpu_possible} possible CPUs", opts.buffer_mb)));
    }
    let tick_fn = kernel_symbol("tick_nohz_handler").or_else(|| kernel_symbol("tick_sched_timer"));
    let mut open_obj = MaybeUninit::uninit();
    let mut open = BpfSkelBuilder::default().open(&mut open_obj).map_err(|e| bpf_err("opening", e))?;
    {
        let ro = open.maps.rodata_data.as_deref_mut().expect("the BPF object has .rodata");
        ro.events_mask = mask;
        ro.tick_fn = tick_fn.unwrap_or(0);
        ro.flight = opts.flight_recorder as u32;
        ro.slots = slots;
        if let Some(list) = &opts.cpus {
            ro.filter_cpus = 1;
            for &c in list {
                if (c as usize) < ro.cpu_allowed.len() {
                    ro.cpu_allowed[c as usize] = 1;
                }
            }
        }
        if by_pid {
            ro.filter = intf::wc_filter_WC_FILTER_PID;
        } else if let Some((id, level)) = cgid {
            ro.filter = intf::wc_filter_WC_FILTER_CGROUP;
            ro.filter_cgid = id;
            ro.filter_cglevel = level;
        }
        match &freq {
            Source::Counters(c) => {
                ro.freq_src = intf::wc_freq_src_WC_FREQ_PERF;
                ro.ref_khz = c.ref_khz;
            }
            Source::Cpufreq(_) => ro.freq_src = intf::wc_freq_src_WC_FREQ_MAP,
            Source::None(_) => ro.freq_src = intf::wc_freq_src_WC_FREQ_NONE,
        }
    }
    open.maps.ring.set_max_entries(ring_slots as u32).map_err(|e| bpf_err("sizing the per-CPU buffers of", e))?;
    let p = &mut open.progs;
    p.wc_switch.set_autoload(wants(ids::CTX_SWITCH) || wants(ids::BLOCK) || wants(ids::BLOCK_IO));
    p.wc_wakeup.set_autoload(wants(ids::WAKEUP));
    p.wc_waking.set_autoload(wants(ids::WAKEUP));
    p.wc_wakeup_new.set_autoload(wants(ids::WAKEUP_NEW));
    p.wc_migrate.set_autoload(wants(ids::MIGRATE));
    p.wc_fork.set_autoload(wants(ids::FORK) || by_pid);
    p.wc_exec.set_autoload(wants(ids::EXEC));
    p.wc_exit.set_autoload(wants(ids::EXIT));
    p.wc_wait.set_autoload(wants(ids::WAIT_PID));
    p.wc_tick.set_autoload(wants(ids::TICK) && tick_fn.is_some());
    if wants(ids::TICK) && tick_fn.is_none() {
        log("tick: no tick_nohz_handler or tick_sched_timer in /proc/kallsyms: TICK not recorded");
    }
    let mut skel = open.load().map_err(|e| bpf_err("loading", e))?;

    let tasks = sys::tasks();
    if let Some(pid) = opts.pid {
        let tgid = tasks.iter().find(|t| t.tid == pid).map(|t| t.tgid).unwrap_or(pid);
        for t in sys::process_tree(tgid, &tasks) {
            skel.maps
                .tracked
                .update(&t.to_ne_bytes(), &[1u8], MapFlags::ANY)
                .map_err(|e| bpf_err("filling the pid filter of", e))?;
        }
    }
    if let Source::Counters(c) = &freq {
        for (cpu, cy, rc) in &c.fds {
            let k = cpu.to_ne_bytes();
            skel.maps.cycles.update(&k, &cy.as_raw_fd().to_ne_bytes(), MapFlags::ANY).map_err(|e| bpf_err("passing counters to", e))?;
            skel.maps.refcycles.update(&k, &rc.as_raw_fd().to_ne_bytes(), MapFlags::ANY).map_err(|e| bpf_err("passing counters to", e))?;
        }
    }
    let refresh_freq = |skel: &BpfSkel<'_>| {
        if let Source::Cpufreq(f) = &freq {
            for &c in &cpus {
                let khz = f.read(c).unwrap_or(0);
                let _ = skel.maps.cpu_khz.update(&c.to_ne_bytes(), &khz.to_ne_bytes(), MapFlags::ANY);
            }
        }
    };
    refresh_freq(&skel);

    let mut events = EventTable::default();
    if !zones.is_empty() {
        events.names.push((RAPL_ENERGY, "RAPL_ENERGY".into()));
    }
    let command = (!opts.command.is_empty()).then(|| opts.command.join(" "));
    let header = Header {
        machine,
        events,
        provenance: Provenance::Tracer { kernel: sys::kernel_release(), command: command.clone() },
        wall_clock_start: SystemTime::now().duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs()),
    };
    let t0 = sys::mono_ns();
    let mut extra = rapl_events(&zones);
    let energy_start = extra.clone();

    let mut streaming: Option<(Sink<ReserveFile>, Arc<AtomicBool>)> = None;
    if !opts.flight_recorder {
        let file = ReserveFile::new(&out)?;
        let full = Arc::clone(&file.full);
        let w = Writer::new(file, out.name(), &header, WriterOptions::default())?;
        let mut sink = Sink::new(w, ncpu);
        for t in &tasks {
            sink.note_task(t.tid, t.ppid, &t.comm, t0);
        }
        for &(cpu, ev) in &extra {
            sink.push(cpu, ev);
        }
        extra.clear();
        streaming = Some((sink, full));
    }

    // Mapping the entries maps every page at once: before the attach, as
    // start-up rather than cost.
    let ring = Mapping::new(&skel, ring_slots as usize * warmcore_trace::event::EVENT_SIZE)?;
    let bpf_stats = if opts.bpf_stats { Some(sys::enable_bpf_stats()?) } else { None };
    skel.attach().map_err(|e| bpf_err("attaching", e))?;
    let cpu_at_attach = sys::self_cpu_time();
    let loaded = Loaded { skel, slots, ring };
    let start = Instant::now();
    let mut child: Option<Child> = None;
    if let Some(argv) = opts.command.split_first() {
        let mut cmd = Command::new(argv.0);
        cmd.args(argv.1);
        if opts.command_only {
            // The pid of a spawned command is known only once it runs, too
            // late for the forks it makes first: the child puts itself in
            // the filter between fork and exec, before it runs anything.
            let tracked = loaded.skel.maps.tracked.as_fd().as_raw_fd();
            // SAFETY: the closure runs in the forked child before exec and
            // only makes system calls (getpid, bpf) on memory of its own stack.
            unsafe {
                cmd.pre_exec(move || {
                    let pid = libc::getpid() as u32;
                    let one = 1u8;
                    let rc = libbpf_rs::libbpf_sys::bpf_map_update_elem(
                        tracked,
                        (&pid as *const u32).cast(),
                        (&one as *const u8).cast(),
                        0,
                    );
                    if rc != 0 {
                        return Err(std::io::Error::from_raw_os_error(-rc));
                    }
                    Ok(())
                });
            }
        }
        match cmd.spawn() {
            Ok(c) => child = Some(c),
            Err(e) => {
                drop(loaded);
                if let Some((sink, _)) = streaming {
                    let _ = sink.writer.finish();
                }
                bail!("cannot run {}: {e}", argv.0);
            }
        }
    }

    let mut snapshots = Vec::new();
    let mut command_status = None;
    let reason;
    {
        loop {
            // Drain on a fixed period rather than on every sample: a poll that
            // woke per event would make the tracer trace itself in a loop. Not
            // much longer: at a few million events a second on one CPU, the
            // default buffer fills in under 100 ms.
            std::thread::sleep(Duration::from_millis(50));
            if let Some((sink, _)) = &mut streaming {
                drain(&loaded, sink, ncpu, false);
            }
            refresh_freq(&loaded.skel);
            if let Some(c) = child.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    command_status = Some(st);
                    reason = StopReason::CommandExited;
                    break;
                }
            }
            if opts.stop.load(Ordering::SeqCst) {
                reason = StopReason::Interrupted(signals.caught());
                break;
            }
            if opts.duration.is_some_and(|d| start.elapsed() >= d) {
                reason = StopReason::Duration;
                break;
            }
            if let Some((sink, full)) = &mut streaming {
                if full.load(Ordering::SeqCst) {
                    reason = StopReason::DiskFull;
                    break;
                }
                if let Some(e) = sink.error.take() {
                    bail!("{e}");
                }
            }
            if opts.flight_recorder && opts.dump_now.swap(false, Ordering::SeqCst) {
                let p = snapshot_path(&opts.out, snapshots.len() + 1);
                let (n, _, _) = dump_flight(&loaded, Output::create(&p, &[])?, &header, &tasks, t0, &extra)?;
                log(&format!("flight recorder: dumped {n} events to {}", p.display()));
                snapshots.push(p);
            }
        }
        // Stop the programs, then take what the buffers still hold.
        let bpf_run = prog_run_time(&loaded.skel);
        drop(bpf_stats);
        let mut loaded = loaded;
        // Detaching waits for the programs still running: then every entry
        // below head is complete.
        loaded.skel.links = Default::default();
        let elapsed = start.elapsed();
        if let Some(c) = child.as_mut() {
            if command_status.is_none() {
                // Interrupted: the command got the terminal's SIGINT too; give
                // it a moment, then leave it be (it is the user's process).
                command_status = c.try_wait().ok().flatten();
            }
        }
        let end = rapl_events(&zones);
        let energy = (!zones.is_empty()).then(|| {
            energy_start
                .iter()
                .zip(&end)
                .map(|((_, a), (_, b))| (a.a(), b.b().wrapping_sub(a.b()) as f64 / 1000.0))
                .collect()
        });
        drop(signals);
        let mut reason = reason;
        let (events, lost, clamped, bytes_recorded) = match streaming {
            Some((mut sink, full)) => {
                drain(&loaded, &mut sink, ncpu, true);
                for &(cpu, ev) in &end {
                    sink.push(cpu, Event { ts: sys::mono_ns(), ..ev });
                }
                sink.drain();
                if let Some(e) = sink.error.take() {
                    bail!("{e}");
                }
                let lost: Vec<u64> = (0..ncpu).map(|c| cpu_buf(&loaded.skel, c).dropped.load(Ordering::Acquire)).collect();
                for (c, &n) in lost.iter().enumerate() {
                    sink.writer.add_lost(c as u32, n);
                }
                sink.complete_names();
                let bytes = sink.bytes_in;
                let clamped = sink.clamped;
                let events = sink.writer.finish()?;
                out.commit()?;
                // The disk may have filled while the last events were written.
                if full.load(Ordering::SeqCst) {
                    reason = StopReason::DiskFull;
                }
                (events, lost, clamped, bytes)
            }
            None => {
                extra.extend(end.iter().map(|&(c, e)| (c, Event { ts: sys::mono_ns(), ..e })));
                let (events, lost, clamped) = dump_flight(&loaded, out, &header, &tasks, t0, &extra)?;
                (events, lost, clamped, events * 24)
            }
        };
        let file_bytes = std::fs::metadata(&opts.out).map(|m| m.len()).unwrap_or(0);
        Ok(Report {
            out: opts.out.clone(),
            events,
            bytes_recorded,
            file_bytes,
            elapsed,
            lost,
            reason,
            command_status,
            freq_source: freq.describe(),
            energy,
            snapshots,
            clamped,
            bpf_run,
            recorder_cpu: sys::self_cpu_time().saturating_sub(cpu_at_attach),
        })
    }
}

pub fn fmt_cpus(cpus: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { cpus[i].to_string() } else { format!("{}-{}", cpus[i], cpus[j]) });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names() {
        assert_eq!(parse_events(Some(&["fork,exec".into()])).unwrap(), (1 << ids::FORK) | (1 << ids::EXEC));
        let e = parse_events(Some(&["ctx_switch".into(), "bogus".into()])).unwrap_err().to_string();
        assert!(e.contains("unknown event \"bogus\""), "{e}");
        // Known to the trace format but not recordable here.
        assert!(parse_events(Some(&["NEST_CHANGE".into()])).is_err());
        assert_eq!(parse_events(None).unwrap().count_ones() as usize, RECORDABLE.len());
    }

    #[test]
    fn cpu_ranges() {
        assert_eq!(fmt_cpus(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(fmt_cpus(&[3]), "3");
    }
}
