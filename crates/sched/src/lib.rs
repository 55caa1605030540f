// SPDX-License-Identifier: GPL-2.0-only
//! warmcore's sched_ext scheduler: the loader of src/bpf/main.bpf.c.
//!
//! `run` checks the kernel, opens, configures, loads and attaches the BPF
//! scheduler, prints statistics while it runs, and detaches it on SIGINT or
//! SIGTERM. The kernel's reason is printed if it ejects the scheduler.

pub mod bpf_intf {
    #![allow(non_upper_case_globals, non_camel_case_types, non_snake_case, dead_code)]
    include!(concat!(env!("OUT_DIR"), "/bpf_intf.rs"));
}
#[allow(clippy::all)]
mod bpf_skel {
    include!(concat!(env!("OUT_DIR"), "/bpf_skel.rs"));
}
pub mod pmqos;
pub mod stats;

use std::collections::{BTreeMap, HashMap};
use std::mem::MaybeUninit;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bpf_skel::*;
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{AsRawLibbpf, MapCore, MapFlags, MapHandle};
use scx_utils::{compat, scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_read};

/// Where the frequency map is pinned while a scheduler with --freq-source=map runs.
pub const FREQ_PIN: &str = "/sys/fs/bpf/warmcore_freq";
const SCHED_EXT_DIR: &str = "/sys/kernel/sched_ext";

pub use warmcore_sched_settings::{FreqSource, FreqSteer, Global, NestWarm, Policy, Settings, Topology, MAX_CPUS};

/// Options of `warmcore sched`: the program's settings, and how this
/// process runs it.
#[derive(clap::Args, Debug, Clone)]
pub struct SchedOpts {
    #[command(flatten)]
    pub settings: Settings,
    /// Print decision counts as one JSON line every SECS seconds (and at exit),
    /// from a monitor thread reading the scheduler's stats server.
    #[arg(long, value_name = "SECS", value_parser = warmcore_args::positive_secs)]
    pub stats: Option<Duration>,
    /// Load no scheduler: print a running scheduler's statistics every SECS
    /// seconds, as JSON lines, until interrupted.
    #[arg(long, value_name = "SECS", conflicts_with = "stats", value_parser = warmcore_args::positive_secs)]
    pub monitor: Option<Duration>,
    /// Stop after SECS seconds (detach and exit 0), as on SIGINT.
    #[arg(long, value_name = "SECS", value_parser = warmcore_args::secs)]
    pub run_for: Option<Duration>,
    /// The kernel's tick rate (CONFIG_HZ), for a kernel whose configuration
    /// cannot be read (/proc/config.gz, /boot/config-RELEASE); it overrides
    /// the configuration. Nest counts P_remove in ticks.
    #[arg(long, value_parser = warmcore_args::count::<u64>(100, 1000))]
    pub hz: Option<u64>,
}

/// Why the loader cannot start: one line each, saying what to do.
fn preflight() -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("loading a BPF scheduler needs root: run `warmcore sched` as root (sudo)");
    }
    kernel_has_sched_ext(Path::new(SCHED_EXT_DIR))?;
    if let Ok(true) = compat::is_sched_ext_enabled() {
        let other = std::fs::read_to_string(format!("{SCHED_EXT_DIR}/root/ops")).unwrap_or_default();
        bail!(
            "another sched_ext scheduler ({}) is loaded: stop it first",
            if other.trim().is_empty() { "unknown" } else { other.trim() }
        );
    }
    Ok(())
}

/// Whether the kernel has sched_ext, from its sysfs directory (`dir`, given
/// by the tests).
#[doc(hidden)]
pub fn kernel_has_sched_ext(dir: &Path) -> Result<()> {
    if !dir.exists() {
        let rel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        bail!(
            "this kernel ({}) has no sched_ext (CONFIG_SCHED_CLASS_EXT): run the scheduler in a VM, e.g. `warmcore vm -- warmcore sched --policy nest --run-for 10`",
            rel.trim()
        );
    }
    Ok(())
}

/// What libbpf should take for the program's __kconfig externs beside the
/// kernel's configuration: CONFIG_HZ from --hz, or nothing when it can read
/// the configuration itself.
fn kconfig(hz: Option<u64>) -> Result<Option<std::ffi::CString>> {
    if let Some(hz) = hz {
        return Ok(Some(std::ffi::CString::new(format!("CONFIG_HZ={hz}\n"))?));
    }
    let rel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let boot = format!("/boot/config-{}", rel.trim());
    if Path::new("/proc/config.gz").exists() || Path::new(&boot).exists() {
        return Ok(None);
    }
    bail!("cannot read this kernel's configuration (/proc/config.gz or {boot}) for its tick rate CONFIG_HZ: install it, or give the rate with --hz (Debian's kernels: 250)")
}

fn read_sysfs_u32(path: &str) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Set one CPU's frequency in the running scheduler's map (--freq-source=map).
pub fn freq_set(cpu: u32, khz: u32) -> Result<()> {
    freq_set_at(Path::new(FREQ_PIN), cpu, khz)
}

/// `freq_set` on the map pinned at `pin` (given by the tests).
#[doc(hidden)]
pub fn freq_set_at(pin: &Path, cpu: u32, khz: u32) -> Result<()> {
    if !pin.exists() {
        bail!("no frequency map at {}: start `warmcore sched --freq-source=map` first", pin.display());
    }
    let map = MapHandle::from_pinned_path(pin).context("opening the frequency map")?;
    let n = map.info().map(|i| i.info.max_entries).unwrap_or(0);
    if cpu >= n {
        bail!("CPU {cpu} is out of range (the map holds {n} CPUs)");
    }
    map.update(&cpu.to_ne_bytes(), &khz.to_ne_bytes(), MapFlags::ANY)
        .context("writing the frequency map")?;
    Ok(())
}

/// libbpf's warnings, less those about the struct_ops members this kernel
/// lacks (scx_utils describes the newest sched_ext; members left at zero are
/// skipped, which is harmless and would otherwise greet every start).
fn libbpf_warning(_: libbpf_rs::PrintLevel, msg: String) {
    if !msg.contains("not found in kernel, skipping it as it's set to zero") {
        eprint!("{msg}");
    }
}

/// The warmer threads of Nest section 3.2: one pinned, lowest-priority,
/// always-runnable thread per CPU, which the BPF side runs only on an idle
/// primary core and preempts as soon as another task wants the core.
struct Warmers {
    stop: Arc<AtomicBool>,
    go: Arc<AtomicBool>,
    handles: Vec<std::thread::JoinHandle<()>>,
    tids: Vec<(i32, i32)>,
}

impl Warmers {
    fn spawn(cpus: &[usize]) -> Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let go = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let mut handles = vec![];
        for &cpu in cpus {
            let (stop, go, tx) = (stop.clone(), go.clone(), tx.clone());
            handles.push(std::thread::Builder::new().name(format!("wc-warm{cpu}")).spawn(move || {
                // SAFETY: plain system calls on this thread, with a zeroed
                // cpu_set_t and a sched_param that live across each call.
                let (tid, pinned, idle) = unsafe {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(cpu, &mut set);
                    let pinned = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                    let param = libc::sched_param { sched_priority: 0 };
                    let idle = libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
                    (libc::gettid(), pinned, idle)
                };
                let res = if pinned != 0 {
                    Err(format!("pinning the warmer thread to CPU {cpu}: {}", std::io::Error::last_os_error()))
                } else if idle != 0 {
                    Err(format!("making CPU {cpu}'s warmer thread SCHED_IDLE: {}", std::io::Error::last_os_error()))
                } else {
                    Ok((tid, cpu as i32))
                };
                let failed = res.is_err();
                let _ = tx.send(res);
                if failed {
                    return;
                }
                // Sleep until the scheduler is attached, then spin.
                while !go.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })?);
        }
        drop(tx);
        // Dropped on an error, the threads stop.
        let mut w = Warmers { stop, go, handles, tids: vec![] };
        for r in rx.iter().take(cpus.len()) {
            w.tids.push(r.map_err(anyhow::Error::msg)?);
        }
        Ok(w)
    }
}

impl Drop for Warmers {
    /// The threads stop on every path out of a run, an error's included.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// The frequency map pinned for `warmcore sched freq set`, unpinned when
/// the run ends, however it ends.
struct PinnedMap;

impl PinnedMap {
    fn pin(map: &mut libbpf_rs::MapMut) -> Result<PinnedMap> {
        let _ = std::fs::remove_file(FREQ_PIN);
        if !Path::new("/sys/fs/bpf").join(".").exists() {
            bail!("/sys/fs/bpf is missing: mount bpffs there (mount -t bpf bpf /sys/fs/bpf)");
        }
        map.pin(FREQ_PIN)
            .with_context(|| format!("pinning the frequency map at {FREQ_PIN} (is bpffs mounted on /sys/fs/bpf?)"))?;
        Ok(PinnedMap)
    }
}

impl Drop for PinnedMap {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(FREQ_PIN);
    }
}

/// The machine as the program's settings need it ([`Topology`], from sysfs),
/// and its online CPUs.
fn topology(qos_paths: &pmqos::Paths) -> Result<(Topology, Vec<usize>)> {
    let topo = scx_utils::Topology::new().context("reading the CPU topology")?;
    let nr = *scx_utils::NR_CPU_IDS;
    if nr > MAX_CPUS as usize {
        bail!("{nr} CPUs: this build handles at most {MAX_CPUS}");
    }
    let mut llc = vec![0u32; nr];
    let mut online = vec![];
    for (id, cpu) in &topo.all_cpus {
        if *id < nr {
            llc[*id] = cpu.llc_id as u32;
            online.push(*id);
        }
    }
    let mut core = vec![MAX_CPUS; nr];
    for c in topo.all_cores.values() {
        if c.cpus.len() > bpf_intf::wc_consts_WC_MAX_SMT as usize {
            bail!("a core with more than {} hardware threads: this build handles at most that many", bpf_intf::wc_consts_WC_MAX_SMT);
        }
        let first = c.cpus.keys().copied().min().unwrap_or(0) as u32;
        for &cpu in c.cpus.keys().filter(|&&cpu| cpu < nr) {
            core[cpu] = first;
        }
    }
    let cpufreq = |cpu: usize, file: &str| read_sysfs_u32(&format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/{file}"));
    let topo = Topology {
        nr_cpus: nr as u32,
        llc,
        core,
        min_khz: (0..nr).map(|c| cpufreq(c, "cpuinfo_min_freq").unwrap_or(0)).collect(),
        reference_khz: (0..nr)
            .map(|c| cpufreq(c, "base_frequency").or_else(|| cpufreq(c, "cpuinfo_max_freq")).unwrap_or(0))
            .collect(),
        schedutil: (0..nr).any(|c| {
            std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"))
                .is_ok_and(|g| g.trim() == "schedutil")
        }),
        pmqos: qos_paths.available(&online),
        // SAFETY: sched_getcpu has no preconditions.
        loader_cpu: unsafe { libc::sched_getcpu() }.max(0) as u32,
    };
    Ok((topo, online))
}

/// Where each `const volatile` global of the program lives in its `.rodata`:
/// (offset, element size, elements), from the object's BTF.
fn rodata_layout(obj: &libbpf_rs::OpenObject) -> Result<HashMap<String, (usize, usize, usize)>> {
    use libbpf_rs::btf::types::{Array, DataSec, Var};
    // SAFETY: the pointer comes from a live open object, which outlives `btf`.
    let btf = libbpf_rs::btf::Btf::from_bpf_object(unsafe { obj.as_libbpf_object().as_ref() })?
        .context("the BPF object has no BTF")?;
    let sec: DataSec = btf.type_by_name(".rodata").context("the BPF object has no .rodata")?;
    let mut layout = HashMap::new();
    for info in sec.iter() {
        let Some(var) = btf.type_by_id::<Var>(info.ty) else { continue };
        let Some(name) = var.name() else { continue };
        let ty = var.next_type().context("a global without a type")?.skip_mods_and_typedefs();
        let n = Array::try_from(ty).map_or(1, |a| a.capacity()).max(1);
        layout.insert(name.to_string_lossy().into_owned(), (info.offset as usize, info.size / n, n));
    }
    Ok(layout)
}

/// Write the program's globals into its `.rodata` before it loads, by their
/// names as the settings give them (the simulator sets the same names in its
/// host build).
#[doc(hidden)]
pub fn set_globals(obj: &libbpf_rs::OpenObject, rodata: &mut [u8], globals: &[Global]) -> Result<()> {
    let layout = rodata_layout(obj)?;
    for g in globals {
        let &(offset, size, n) =
            layout.get(g.name).with_context(|| format!("the BPF program has no global {}", g.name))?;
        if g.index as usize >= n || !matches!(size, 1 | 2 | 4 | 8) {
            bail!("the BPF program's global {} has no element {} of a scalar type", g.name, g.index);
        }
        let at = offset + g.index as usize * size;
        rodata[at..at + size].copy_from_slice(&g.value.to_ne_bytes()[..size]);
    }
    Ok(())
}

/// The program's globals as the loader left them: each element of each
/// `const volatile` global (for the tests, which compare them with the
/// simulator's).
#[doc(hidden)]
pub fn read_globals(obj: &libbpf_rs::OpenObject, rodata: &[u8]) -> Result<Vec<(String, u32, u64)>> {
    let mut out = vec![];
    for (name, (offset, size, n)) in rodata_layout(obj)? {
        for i in 0..n {
            let at = offset + i * size;
            let mut b = [0u8; 8];
            b[..size.min(8)].copy_from_slice(&rodata[at..at + size.min(8)]);
            out.push((name.clone(), i as u32, u64::from_ne_bytes(b)));
        }
    }
    out.sort();
    Ok(out)
}

/// The program opened, not loaded, with its globals set from `settings` on
/// `topo` (for the tests: no kernel is needed to open it).
#[doc(hidden)]
pub fn globals_as_loaded(settings: &Settings, topo: &Topology) -> Result<Vec<(String, u32, u64)>> {
    let mut open_object = MaybeUninit::uninit();
    let mut skel = BpfSkelBuilder::default().open(&mut open_object)?;
    let globals = settings.globals(topo);
    let rodata = skel.maps.rodata.initial_value_mut().context("the program has no .rodata")?;
    // The object is borrowed again for its BTF: copy the bytes out and back.
    let mut bytes = rodata.to_vec();
    set_globals(skel.open_object_mut(), &mut bytes, &globals)?;
    skel.maps.rodata.initial_value_mut().unwrap().copy_from_slice(&bytes);
    read_globals(skel.open_object_mut(), &bytes)
}

/// The kernel's count of CPU hotplug events, as an attachment must present it.
fn hotplug_seq() -> Result<u64> {
    let path = "/sys/kernel/sched_ext/hotplug_seq";
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    text.trim().parse().with_context(|| format!("{path}: not a number: {text:?}"))
}

/// `--monitor SECS`: print the statistics of the scheduler running in another
/// process (through its scx_stats server) until SIGINT or SIGTERM.
pub fn monitor(intv: Duration) -> Result<()> {
    if intv.is_zero() {
        bail!("--monitor 0: give a positive number of seconds");
    }
    let shutdown = Arc::new(AtomicBool::new(false));
    let s = shutdown.clone();
    let _ = ctrlc::set_handler(move || s.store(true, Ordering::Relaxed));
    eprintln!("warmcore sched: statistics of the running scheduler every {} s (waiting for one if none runs; Ctrl-C to stop)", intv.as_secs_f64());
    stats::monitor(intv, || shutdown.load(Ordering::Relaxed))
}

/// How the run ended.
pub enum Outcome {
    /// Detached on a signal or after --run-for.
    Detached,
    /// The kernel ejected the scheduler: its reason.
    Ejected(String),
}

/// How one attachment of the scheduler ended.
enum Ended {
    /// By a signal, --run-for, or the kernel (its reason), with the last
    /// statistics.
    Done(Outcome, stats::Metrics),
    /// The kernel asked for a restart (CPU hotplug): its reason, and the
    /// statistics so far.
    Restart(String, stats::Metrics),
}

/// Load and run the scheduler until SIGINT/SIGTERM, --run-for, or ejection.
/// When the kernel exits it for CPU hotplug, it starts again on the new set
/// of CPUs, as the scx schedulers do, and its statistics go on.
pub fn run(opts: &SchedOpts, out: &mut dyn std::io::Write) -> Result<Outcome> {
    preflight()?;
    opts.settings.check().map_err(anyhow::Error::msg)?;
    if opts.stats.is_some_and(|p| p.is_zero()) {
        bail!("--stats 0: give a positive number of seconds");
    }
    scx_utils::try_set_rlimit_infinity();
    let shutdown = Arc::new(AtomicBool::new(false));
    {
        let s = shutdown.clone();
        // A second load in the same process (tests) keeps the first handler.
        let _ = ctrlc::set_handler(move || s.store(true, Ordering::Relaxed));
    }
    let start = Instant::now();
    // A time past what an Instant holds (not from the command line, which
    // stops at warmcore_args::MAX_SECS) is no deadline.
    let deadline = opts.run_for.and_then(|d| start.checked_add(d));
    // The stats server (scx_stats): its requests are answered by run_once.
    let server = scx_stats::StatsServer::<(), stats::Metrics>::new(stats::server_data())
        .launch()
        .context("starting the stats server")?;
    let (res_ch, req_ch) = server.channels();
    let monitor_stop = Arc::new(AtomicBool::new(false));
    if let Some(p) = opts.stats {
        let stop = monitor_stop.clone();
        std::thread::Builder::new().name("wc-stats".into()).spawn(move || {
            // Let the scheduler run one period before the first line.
            std::thread::sleep(p);
            if let Err(e) = stats::monitor(p, || stop.load(Ordering::Relaxed)) {
                eprintln!("warmcore sched: statistics: {e:#}");
            }
        })?;
    }
    let left = pmqos::restore_leftovers(&pmqos::Paths::default())?;
    if left > 0 {
        eprintln!("warmcore sched: restored the PM QoS resume latency of {left} CPUs, left held by a run that did not end cleanly");
    }
    let mut before = stats::Metrics::default();
    let ended = loop {
        let session = Session { opts, shutdown: &shutdown, start, deadline, before: &before, req_ch: &req_ch, res_ch: &res_ch };
        match run_once(&session) {
            Ok(Ended::Restart(why, m)) => {
                eprintln!("warmcore sched: the kernel stopped the scheduler ({why}): starting it again on the CPUs now online, statistics kept");
                before = m;
            }
            other => break other,
        }
    };
    monitor_stop.store(true, Ordering::Relaxed);
    let Ended::Done(outcome, last) = ended? else { unreachable!("restarts loop") };
    if opts.stats.is_some() {
        writeln!(out, "{}", serde_json::to_string(&last)?)?;
    }
    if let Outcome::Detached = outcome {
        eprintln!("warmcore sched: detached after {:.1} s", start.elapsed().as_secs_f64());
    }
    Ok(outcome)
}

/// What one attachment needs from the whole run.
struct Session<'a> {
    opts: &'a SchedOpts,
    shutdown: &'a AtomicBool,
    start: Instant,
    deadline: Option<Instant>,
    /// The statistics of earlier attachments (after CPU hotplug).
    before: &'a stats::Metrics,
    req_ch: &'a crossbeam::channel::Receiver<()>,
    res_ch: &'a crossbeam::channel::Sender<stats::Metrics>,
}

/// The instructions the kernel's verifier processed for each loaded program
/// (what veristat counts): the statistics carry them and the VM tests bound
/// them, so that a change that grows the program shows before it nears the
/// kernel's limit.
fn verified_insns(skel: &BpfSkel) -> BTreeMap<String, u64> {
    skel.object()
        .progs()
        .filter_map(|p| {
            // SAFETY: the program is the loaded object's, alive here.
            let fd = unsafe { libbpf_rs::libbpf_sys::bpf_program__fd(p.as_libbpf_object().as_ptr()) };
            if fd < 0 {
                return None; // not loaded (update_idle outside nest)
            }
            let mut info = libbpf_rs::libbpf_sys::bpf_prog_info::default();
            let mut len = std::mem::size_of_val(&info) as u32;
            // SAFETY: info is a bpf_prog_info of len bytes, fd a program's.
            let r = unsafe { libbpf_rs::libbpf_sys::bpf_prog_get_info_by_fd(fd, &mut info, &mut len) };
            (r == 0).then(|| (p.name().to_string_lossy().into_owned(), u64::from(info.verified_insns)))
        })
        .collect()
}

fn run_once(se: &Session) -> Result<Ended> {
    let opts = se.opts;
    // The kernel refuses to enable a scheduler opened before the last CPU
    // hotplug, and asks for a restart. scx_ops_open! reads the sequence
    // number after the topology below: a CPU that comes or goes between
    // the two would leave this attachment on a stale set of CPUs (warmers
    // pinned to a CPU gone, PM QoS missing one come back).
    let hotplug_seq = hotplug_seq()?;
    let set = &opts.settings;
    let qos_paths = pmqos::Paths::default();
    // Warm cores only where a CPU is online: a warmer made for an offline
    // CPU would wait where nobody runs it until the watchdog ejects the
    // scheduler.
    let (topo, online) = topology(&qos_paths)?;
    let warm_mode = set.warm(&topo);
    if set.policy == Policy::Nest && set.nest_warm.is_none() && warm_mode == NestWarm::Threads {
        eprintln!("warmcore sched: nest: no PM QoS resume latency files in sysfs: warmer threads keep the cores warm");
    }
    if set.policy == Policy::Warm && set.warm_poll_cpus > 0 && !topo.pmqos {
        eprintln!("warmcore sched: warm: no PM QoS resume latency files in sysfs: warm cores use every idle state");
    }
    if warm_mode == NestWarm::Pmqos && !topo.pmqos {
        bail!("--nest-warm pmqos: this kernel has no {}/cpuN/power/pm_qos_resume_latency_us: use --nest-warm threads", qos_paths.sysfs_cpu.display());
    }
    let warm = warm_mode == NestWarm::Threads;
    let warmers = if warm { Some(Warmers::spawn(&online)?) } else { None };
    let mut qos = if warm_mode == NestWarm::Pmqos { Some(pmqos::PmQos::new(qos_paths, &online)?) } else { None };

    libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Warn, libbpf_warning)));
    let mut open_object = MaybeUninit::uninit();
    let builder = BpfSkelBuilder::default();
    let kconfig = kconfig(opts.hz)?;
    let open_opts = kconfig.as_ref().map(|k| {
        // SAFETY: bpf_object_open_opts is a plain C struct for which all
        // zeroes is the default of every option.
        let mut o: libbpf_rs::libbpf_sys::bpf_object_open_opts = unsafe { std::mem::zeroed() };
        o.sz = std::mem::size_of_val(&o) as _;
        o.kconfig = k.as_ptr();
        o
    });
    let mut skel = scx_ops_open!(builder, &mut open_object, warmcore_ops, open_opts)?;
    skel.struct_ops.warmcore_ops_mut().hotplug_seq = hotplug_seq;
    {
        let ops = skel.struct_ops.warmcore_ops_mut();
        // ENQ_LAST: a warmer whose S_max ran out must not be kept running
        // just because nothing else is runnable (the kernel's default).
        ops.flags = *compat::SCX_OPS_ENQ_EXITING
            | *compat::SCX_OPS_ENQ_LAST
            | *compat::SCX_OPS_KEEP_BUILTIN_IDLE;
        // Only Nest acts on idle transitions; other policies skip the call
        // the kernel would make at each one.
        if set.policy != Policy::Nest {
            ops.update_idle = std::ptr::null_mut();
        }
    }
    if set.policy == Policy::Smove && set.freq_source == FreqSource::Kernel && topo.reference_khz.first() == Some(&0) {
        eprintln!("warmcore sched: smove: this machine reports no CPU frequencies (no cpufreq), so no CPU ever counts as slow; use --freq-source=map to set them");
    }
    {
        let mut rodata = skel.maps.rodata.initial_value_mut().context("the BPF program has no .rodata")?.to_vec();
        set_globals(skel.open_object_mut(), &mut rodata, &set.globals(&topo))?;
        skel.maps.rodata.initial_value_mut().unwrap().copy_from_slice(&rodata);
    }
    if set.policy != Policy::Nest {
        skel.progs.wc_update_idle.set_autoload(false);
    }
    let mut skel = scx_ops_load!(skel, warmcore_ops, uei).context("loading the BPF scheduler")?;
    let verified = verified_insns(&skel);
    let mut _pinned = None;
    if let Some(w) = &warmers {
        for (tid, cpu) in &w.tids {
            skel.maps
                .warmers
                .update(&tid.to_ne_bytes(), &cpu.to_ne_bytes(), MapFlags::ANY)
                .context("registering the warmer threads")?;
        }
    }
    if set.freq_source == FreqSource::Map {
        _pinned = Some(PinnedMap::pin(&mut skel.maps.freq_map)?);
    }
    // scx_ops_attach! attaches the struct_ops map by itself; left to the
    // skeleton's attach as well, libbpf would warn that it holds no link.
    // SAFETY: the map pointer comes from the loaded skeleton, alive here.
    unsafe {
        libbpf_rs::libbpf_sys::bpf_map__set_autoattach(skel.maps.warmcore_ops.as_libbpf_object().as_ptr(), false);
    }
    let link = scx_ops_attach!(skel, warmcore_ops).context("attaching the scheduler")?;
    if let Some(w) = &warmers {
        w.go.store(true, Ordering::Relaxed);
    }
    eprintln!("warmcore sched: policy {} attached on {} CPUs", set.policy.name(), online.len());

    let read = |skel: &BpfSkel, qos: &Option<pmqos::PmQos>| -> Result<stats::Metrics> {
        let mut m = stats::read(skel, opts, se.start.elapsed())?;
        m.add(se.before);
        m.warm_cpus = qos.as_ref().map_or(0, |q| q.held() as u64);
        m.verified_insns = verified.clone();
        Ok(m)
    };
    // PM QoS follows the primary nest (warm set) closely: a core that joins it should
    // be warm before its next idle period.
    let poll = if qos.is_some() { Duration::from_millis(10) } else { Duration::from_millis(100) };
    let mut exited = false;
    loop {
        if uei_exited!(&skel, uei) {
            exited = true;
            break;
        }
        if se.shutdown.load(Ordering::Relaxed) || se.deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if se.req_ch.recv_timeout(poll).is_ok() {
            se.res_ch.send(read(&skel, &qos)?).context("answering the stats server")?;
        }
        if let Some(q) = &mut qos {
            let bss = skel.maps.bss_data.as_ref().unwrap();
            q.update(|c| set.holds(bss.pmqos_hold.get(c).is_some_and(|&b| b != 0), bss.nr_warm), Instant::now())?;
        }
    }
    let last = read(&skel, &qos)?;
    drop(link);
    if !exited {
        return Ok(Ended::Done(Outcome::Detached, last));
    }
    let uei = uei_read!(&skel, uei);
    let why = match uei.report() {
        Ok(()) => "the kernel unregistered the scheduler".to_string(),
        Err(e) => format!("{e}"),
    };
    if uei.should_restart() {
        return Ok(Ended::Restart(why, last));
    }
    Ok(Ended::Done(Outcome::Ejected(why), last))
}
