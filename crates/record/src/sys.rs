// SPDX-License-Identifier: GPL-2.0-only
//! What the recorder learns from the running system: privileges, the
//! machine's topology, the processes alive at the start, RAPL energy.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use warmcore_args::UsageError;
use warmcore_trace::{CpuTopo, Machine};

fn read_trim(p: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

fn read_u64(p: impl AsRef<Path>) -> Option<u64> {
    read_trim(p)?.parse().ok()
}

/// CLOCK_MONOTONIC in ns: the clock of bpf_ktime_get_ns().
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// The capabilities the tracer needs and the process lacks, named; Ok when
/// it may load BPF programs and open perf buffers.
pub fn check_privileges() -> Result<()> {
    let status = fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .unwrap_or(0);
    let has = |c: u32| eff & (1u64 << c) != 0;
    if has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON)) {
        return Ok(());
    }
    let missing: Vec<&str> = [(CAP_BPF, "CAP_BPF"), (CAP_PERFMON, "CAP_PERFMON")]
        .iter()
        .filter(|(c, _)| !has(*c))
        .map(|(_, n)| *n)
        .collect();
    bail!(
        "missing {} {} (or CAP_SYS_ADMIN) to load BPF programs: run as root",
        if missing.len() > 1 { "capabilities" } else { "capability" },
        missing.join(" and ")
    )
}

/// CPU time this process used so far (user and system, all threads).
pub fn self_cpu_time() -> std::time::Duration {
    // SAFETY: rusage is plain integers, for which all zeroes is valid.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid rusage for getrusage to fill.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| std::time::Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Turns on the kernel's BPF run-time statistics for as long as the returned
/// descriptor stays open (they cost every BPF program two clock reads, so
/// they stay off unless asked for).
pub fn enable_bpf_stats() -> Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: bpf_enable_stats takes a plain enum value and returns a new
    // descriptor or a negative error.
    let fd = unsafe { libbpf_rs::libbpf_sys::bpf_enable_stats(libbpf_rs::libbpf_sys::BPF_STATS_RUN_TIME) };
    if fd < 0 {
        bail!(
            "--bpf-stats: the kernel did not turn on BPF run-time statistics ({}): it needs CAP_SYS_ADMIN and Linux 5.8 or later",
            std::io::Error::from_raw_os_error(-fd)
        );
    }
    // SAFETY: fd is a new descriptor nothing else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// The kernel must describe its types (BTF) for the tp_btf programs.
pub fn check_btf() -> Result<()> {
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        bail!("the kernel has no BTF (/sys/kernel/btf/vmlinux is missing): BPF tracing needs CONFIG_DEBUG_INFO_BTF=y");
    }
    Ok(())
}

/// Raise RLIMIT_MEMLOCK so that maps load on kernels that still charge it.
pub fn raise_memlock() {
    let r = libc::rlimit { rlim_cur: libc::RLIM_INFINITY, rlim_max: libc::RLIM_INFINITY };
    // SAFETY: setrlimit reads the struct we pass; failure is harmless here
    // (recent kernels account BPF memory to the cgroup instead).
    unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &r) };
}

/// Parse a CPU list such as "0-3,6".
pub fn parse_cpu_list(s: &str) -> Result<Vec<u32>> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || anyhow::anyhow!(UsageError::new(format!("bad CPU list \"{s}\": expected numbers and ranges such as 0-3,6")));
        if let Some((a, b)) = part.split_once('-') {
            let (a, b): (u32, u32) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
            if a > b {
                return Err(bad());
            }
            v.extend(a..=b);
        } else {
            v.push(part.parse().map_err(|_| bad())?);
        }
    }
    if v.is_empty() {
        bail!(UsageError::new("empty CPU list: give CPUs such as 0-3,6"));
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// Possible CPUs (the kernel's numbering, also for offline CPUs).
pub fn possible_cpus() -> u32 {
    read_trim("/sys/devices/system/cpu/possible")
        .and_then(|s| parse_cpu_list(&s).ok())
        .and_then(|v| v.last().copied())
        .map(|m| m + 1)
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1))
}

pub fn online_cpus() -> Vec<u32> {
    read_trim("/sys/devices/system/cpu/online")
        .and_then(|s| parse_cpu_list(&s).ok())
        .unwrap_or_else(|| (0..possible_cpus()).collect())
}

/// Where the per-CPU sysfs directories are. Tests point this elsewhere
/// (WARMCORE_SYSFS_CPU) to inject cpufreq readings.
pub fn sysfs_cpu_root() -> PathBuf {
    std::env::var_os("WARMCORE_SYSFS_CPU")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/sys/devices/system/cpu"))
}

/// The machine: topology from sysfs, frequency range from cpufreq where the
/// machine has a cpufreq driver (0 = unknown otherwise).
pub fn machine() -> Machine {
    let n = possible_cpus();
    let root = Path::new("/sys/devices/system/cpu");
    let mut cores: BTreeMap<(u64, u64), u32> = BTreeMap::new();
    let mut dies: BTreeMap<(u64, u64), u32> = BTreeMap::new();
    let mut cpus = Vec::new();
    for cpu in 0..n {
        let t = root.join(format!("cpu{cpu}/topology"));
        let pkg = read_u64(t.join("physical_package_id")).unwrap_or(0);
        let core = read_u64(t.join("core_id")).unwrap_or(cpu as u64);
        let die = read_u64(t.join("die_id")).unwrap_or(0);
        let nc = cores.len() as u32;
        let core = *cores.entry((pkg, core)).or_insert(nc);
        let nd = dies.len() as u32;
        let die = *dies.entry((pkg, die)).or_insert(nd);
        cpus.push(CpuTopo { cpu, core, die, socket: pkg as u32 });
    }
    let f = sysfs_cpu_root().join("cpu0/cpufreq");
    let min = read_u64(f.join("cpuinfo_min_freq")).unwrap_or(0) as u32;
    let max = read_u64(f.join("cpuinfo_max_freq")).unwrap_or(0) as u32;
    let base = read_u64(f.join("base_frequency")).map(|b| b as u32).unwrap_or(0);
    Machine {
        name: read_trim("/proc/sys/kernel/hostname").unwrap_or_else(|| "localhost".into()),
        cpus,
        freq_min_khz: min,
        freq_base_khz: base,
        freq_max_khz: max,
    }
}

pub fn kernel_release() -> String {
    read_trim("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into())
}

/// A task alive at the start of the recording.
#[derive(Clone, Debug)]
pub struct Task {
    pub tid: u32,
    pub tgid: u32,
    /// The process's parent for a process's main thread; the process
    /// itself for its other threads.
    pub ppid: u32,
    pub comm: String,
}

/// Every task in /proc now.
pub fn tasks() -> Vec<Task> {
    let mut out = Vec::new();
    let Ok(procs) = fs::read_dir("/proc") else { return out };
    for p in procs.flatten() {
        let Some(tgid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let ppid = read_trim(p.path().join("stat"))
            .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.to_string()))
            .and_then(|r| r.split_whitespace().nth(1).and_then(|x| x.parse().ok()))
            .unwrap_or(0);
        let Ok(threads) = fs::read_dir(p.path().join("task")) else { continue };
        for t in threads.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
            let comm = read_trim(t.path().join("comm")).unwrap_or_default();
            out.push(Task { tid, tgid, ppid: if tid == tgid { ppid } else { tgid }, comm });
        }
    }
    out
}

/// pid and its descendant processes now (tgids).
pub fn process_tree(root: u32, tasks: &[Task]) -> Vec<u32> {
    let mut set = vec![root];
    let mut changed = true;
    while changed {
        changed = false;
        for t in tasks.iter().filter(|t| t.tid == t.tgid) {
            if set.contains(&t.ppid) && !set.contains(&t.tgid) {
                set.push(t.tgid);
                changed = true;
            }
        }
    }
    set
}

/// One RAPL package domain's energy counter.
#[derive(Clone, Debug)]
pub struct RaplZone {
    pub index: u32,
    pub path: PathBuf,
}

/// The package domains of the powercap RAPL driver; empty where absent.
pub fn rapl_zones() -> Vec<RaplZone> {
    let mut v = Vec::new();
    let Ok(d) = fs::read_dir("/sys/class/powercap") else { return v };
    for e in d.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // Top-level zones only ("intel-rapl:0"), not sub-zones ("intel-rapl:0:1").
        let Some(idx) = name.strip_prefix("intel-rapl:").and_then(|s| s.parse::<u32>().ok()) else { continue };
        if read_trim(e.path().join("name")).is_some_and(|n| n.starts_with("package")) {
            v.push(RaplZone { index: idx, path: e.path().join("energy_uj") });
        }
    }
    v.sort_by_key(|z| z.index);
    v
}

pub fn rapl_read(z: &RaplZone) -> Option<u64> {
    read_u64(&z.path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert_eq!(parse_cpu_list("3,1,1").unwrap(), vec![1, 3]);
        assert!(parse_cpu_list("2-1").is_err());
        assert!(parse_cpu_list("x").unwrap_err().to_string().contains("bad CPU list"));
    }

    #[test]
    fn tree_follows_parents() {
        let t = |tid, tgid, ppid| Task { tid, tgid, ppid, comm: String::new() };
        let tasks = vec![t(10, 10, 1), t(11, 11, 10), t(12, 11, 11), t(13, 13, 11), t(20, 20, 1)];
        let mut v = process_tree(10, &tasks);
        v.sort();
        assert_eq!(v, vec![10, 11, 13]);
    }
}
