// SPDX-License-Identifier: GPL-2.0-only
//! Where a CPU's frequency comes from: hardware counters (cycles and
//! reference cycles, read by BPF at each tick), else cpufreq's current
//! frequency, else nothing (TICK then carries a = 0: frequency absent).

use std::fs;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;

use crate::sys;

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
const PERF_COUNT_HW_REF_CPU_CYCLES: u64 = 9;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;

/// perf_event_attr, as far as a counting event needs it (the kernel accepts
/// the size we declare: PERF_ATTR_SIZE_VER4 = 104 bytes).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
}
const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 104);

fn open_counter(cpu: u32, config: u64) -> std::io::Result<OwnedFd> {
    let attr = PerfEventAttr {
        type_: PERF_TYPE_HARDWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        ..Default::default()
    };
    // SAFETY: perf_event_open reads `attr` (of the size it declares) and
    // returns a new fd or -1.
    let fd = unsafe {
        libc::syscall(libc::SYS_perf_event_open, &attr as *const PerfEventAttr, -1i32, cpu as i32, -1i32, PERF_FLAG_FD_CLOEXEC)
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a new descriptor that we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Cycles and reference-cycles counters on every CPU.
pub struct Counters {
    /// (cpu, cycles fd, ref-cycles fd)
    pub fds: Vec<(u32, OwnedFd, OwnedFd)>,
    /// The reference cycles' rate in kHz.
    pub ref_khz: u64,
}

/// The reference clock's rate: the nominal frequency in the CPU's model name
/// ("... @ 2.20GHz"), which is the rate reference cycles count at.
fn nominal_khz() -> Option<u64> {
    let info = fs::read_to_string("/proc/cpuinfo").ok()?;
    let model = info.lines().find(|l| l.starts_with("model name"))?;
    let ghz = model.rsplit_once('@')?.1.trim().strip_suffix("GHz")?;
    let g: f64 = ghz.trim().parse().ok()?;
    Some((g * 1e6).round() as u64)
}

/// Open the counters on each CPU, or say why not.
pub fn open_counters(cpus: &[u32]) -> Result<Counters, String> {
    let mut fds = Vec::new();
    for &c in cpus {
        let cy = open_counter(c, PERF_COUNT_HW_CPU_CYCLES).map_err(|e| format!("cycles counter on CPU {c}: {e}"))?;
        let rc = open_counter(c, PERF_COUNT_HW_REF_CPU_CYCLES).map_err(|e| format!("ref-cycles counter on CPU {c}: {e}"))?;
        fds.push((c, cy, rc));
    }
    let ref_khz = nominal_khz().ok_or("no nominal frequency in /proc/cpuinfo to scale reference cycles")?;
    Ok(Counters { fds, ref_khz })
}

/// cpufreq's current frequency (scaling_cur_freq) of each CPU.
pub struct Cpufreq {
    pub files: Vec<(u32, PathBuf)>,
}

impl Cpufreq {
    /// The cpufreq files of `cpus`, if every one of them has a readable one.
    pub fn open(cpus: &[u32]) -> Option<Cpufreq> {
        let root = sys::sysfs_cpu_root();
        let files: Vec<(u32, PathBuf)> =
            cpus.iter().map(|&c| (c, root.join(format!("cpu{c}/cpufreq/scaling_cur_freq")))).collect();
        if files.is_empty() || !files.iter().all(|(_, p)| read_khz(p).is_some()) {
            return None;
        }
        Some(Cpufreq { files })
    }

    pub fn read(&self, cpu: u32) -> Option<u32> {
        self.files.iter().find(|(c, _)| *c == cpu).and_then(|(_, p)| read_khz(p))
    }
}

fn read_khz(p: &std::path::Path) -> Option<u32> {
    fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// The source chosen for a recording.
pub enum Source {
    Counters(Counters),
    Cpufreq(Cpufreq),
    /// Why there is none.
    None(String),
}

impl Source {
    pub fn detect(cpus: &[u32]) -> Source {
        let why_not_counters = match open_counters(cpus) {
            Ok(c) => return Source::Counters(c),
            Err(e) => e,
        };
        match Cpufreq::open(cpus) {
            Some(f) => Source::Cpufreq(f),
            None => Source::None(format!("no hardware counters ({why_not_counters}) and no cpufreq driver")),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Source::Counters(c) => format!("cycles/ref-cycles counters (reference {} MHz)", c.ref_khz / 1000),
            Source::Cpufreq(_) => "cpufreq scaling_cur_freq".into(),
            Source::None(why) => format!("absent: {why}; TICK events carry frequency 0"),
        }
    }
}
