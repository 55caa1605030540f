// SPDX-License-Identifier: GPL-2.0-only
//! The workloads `warmcore vm workload` runs inside the VM (tests and
//! benchmarks of the scheduler): each prints one JSON line of what it measured.

use std::time::Duration;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use anyhow::{bail, Result};

use crate::proc::{allowed_cpus, close, exec, fork_run, getcpu, mono_ns, pin_to_cpu, pipe, rd, shared, spin_us, wait_pid, wait_pid_cpu, wr};

/// A workload and its size.
#[derive(Clone, Debug)]
pub enum Workload {
    /// Fork/wait loop, pipe ping-pong pairs, more CPU hogs than CPUs, short sleepers.
    Mixed { secs: Duration },
    /// Pipe ping-pong between two processes: round trips per second.
    Pipe { msgs: u64 },
    /// hackbench-like: groups of senders and receivers over pipes: seconds.
    Hackbench { groups: u32, loops: u32 },
    /// fork, exec /bin/true, wait: processes per second.
    Forkexec { n: u32 },
    /// A parent forks a child; the child records the CPU it starts on. With
    /// `busy_us` the parent keeps running that long, else it waits at once.
    Forkcpu { n: u32, busy_us: u64 },
    /// A fork/wait chain: each process works a little, forks the next, waits.
    Chain { n: u32, work_us: u64 },
    /// N CPU hogs for SECS: CPU time over wall time, and each hog's CPU time.
    Hogs { n: u32, secs: Duration },
    /// One real-time thread per CPU waking every 20 ms for SECS: the longest
    /// time the guest ran none of them, standing still.
    Stillness { secs: Duration },
}

/// @msgs round trips of 4 bytes between two processes; returns the round
/// trips made, the seconds taken and how many of them had both ends on one
/// CPU (the child replies with the CPU it runs on).
fn pipe_pingpong(msgs: u64, deadline: Option<u64>) -> Result<(u64, f64, u64)> {
    let (a_r, a_w) = pipe()?;
    let (b_r, b_w) = pipe()?;
    let t0 = mono_ns();
    let child = fork_run(|| {
        let mut b = [0u8; 4];
        while rd(a_r, &mut b) {
            let cpu = getcpu() as u32;
            if b == [0; 4] || !wr(b_w, &cpu.to_le_bytes()) {
                break;
            }
        }
        0
    })?;
    let (mut n, mut same) = (0, 0);
    let mut b = [0u8; 4];
    while n < msgs && deadline.is_none_or(|d| mono_ns() < d) {
        if !wr(a_w, &[1, 0, 0, 0]) || !rd(b_r, &mut b) {
            bail!("pipe ping-pong broke after {n} round trips");
        }
        same += (u32::from_le_bytes(b) == getcpu() as u32) as u64;
        n += 1;
    }
    wr(a_w, &[0; 4]);
    wait_pid(child)?;
    for fd in [a_r, a_w, b_r, b_w] {
        close(fd);
    }
    Ok((n, (mono_ns() - t0) as f64 / 1e9, same))
}

fn hackbench(groups: u32, loops: u32) -> Result<f64> {
    const SENDERS: u32 = 5;
    const RECEIVERS: u32 = 5;
    let t0 = mono_ns();
    let mut pids = vec![];
    for _ in 0..groups {
        let mut rx = vec![];
        for _ in 0..RECEIVERS {
            let (r, w) = pipe()?;
            rx.push((r, w));
        }
        for &(r, w) in &rx {
            pids.push(fork_run(move || {
                close(w);
                let mut buf = [0u8; 100];
                for _ in 0..SENDERS * loops {
                    if !rd(r, &mut buf) {
                        return 1;
                    }
                }
                0
            })?);
        }
        let wfds: Vec<i32> = rx.iter().map(|&(_, w)| w).collect();
        for _ in 0..SENDERS {
            let wfds = wfds.clone();
            pids.push(fork_run(move || {
                let buf = [7u8; 100];
                for _ in 0..loops {
                    for &w in &wfds {
                        if !wr(w, &buf) {
                            return 1;
                        }
                    }
                }
                0
            })?);
        }
        for (r, w) in rx {
            close(r);
            close(w);
        }
    }
    let mut bad = 0;
    for p in pids {
        if wait_pid(p)? != 0 {
            bad += 1;
        }
    }
    if bad > 0 {
        bail!("hackbench: {bad} processes failed");
    }
    Ok((mono_ns() - t0) as f64 / 1e9)
}

fn forkexec(n: u32, deadline: Option<u64>) -> Result<(u32, f64)> {
    let t0 = mono_ns();
    let path = std::ffi::CString::new("/bin/true").unwrap();
    let mut done = 0;
    while done < n && deadline.is_none_or(|d| mono_ns() < d) {
        let pid = fork_run(|| exec(&path))?;
        if wait_pid(pid)? != 0 {
            bail!("/bin/true failed in the fork/exec loop");
        }
        done += 1;
    }
    Ok((done, (mono_ns() - t0) as f64 / 1e9))
}

/// The longest time in @secs in which the guest woke none of its real-time
/// threads, one per CPU, and when it began (s of CLOCK_MONOTONIC, the clock
/// of the kernel's log). The real-time class runs above any sched_ext
/// scheduler, so a scheduler that starves its own tasks leaves these
/// threads waking on time: only a guest that ran nothing at all, as when
/// its host runs no vCPU, leaves every one of them unwoken, and its clock
/// then jumps by that time, as the sched_ext watchdog sees it.
fn stillness(secs: Duration) -> Result<(f64, f64)> {
    const PERIOD: Duration = Duration::from_millis(20);
    let t0 = mono_ns();
    let end = t0 + secs.as_nanos() as u64;
    let threads: Vec<_> = allowed_cpus()?
        .into_iter()
        .map(|cpu| {
            std::thread::spawn(move || -> Result<Vec<u64>> {
                pin_to_cpu(cpu)?;
                let prio = libc::sched_param { sched_priority: 50 };
                // SAFETY: pid 0 is this thread; `prio` is a valid sched_param.
                if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &prio) } != 0 {
                    bail!("SCHED_FIFO: {} (run as root)", std::io::Error::last_os_error());
                }
                let mut woke = vec![];
                while mono_ns() < end {
                    std::thread::sleep(PERIOD);
                    woke.push(mono_ns());
                }
                Ok(woke)
            })
        })
        .collect();
    let mut woke = vec![t0];
    for t in threads {
        woke.extend(t.join().map_err(|_| anyhow::anyhow!("a stillness thread panicked"))??);
    }
    woke.sort_unstable();
    let (gap, at) = woke.windows(2).map(|w| (w[1] - w[0], w[0])).max().unwrap_or((0, t0));
    Ok((gap as f64 / 1e9, at as f64 / 1e9))
}

/// Run `w`; what it measured, as one JSON object.
pub fn run(w: &Workload) -> Result<serde_json::Value> {
    let j = match w.clone() {
        Workload::Mixed { secs } => {
            let ncpu = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(4);
            let end = mono_ns() + secs.as_nanos() as u64;
            let mut pids = vec![];
            // fork/wait loop
            pids.push(fork_run(move || {
                while mono_ns() < end {
                    match fork_run(|| 0).and_then(wait_pid) {
                        Ok(0) => {}
                        _ => return 1,
                    }
                }
                0
            })?);
            // two pipe ping-pong pairs
            for _ in 0..2 {
                pids.push(fork_run(move || if pipe_pingpong(u64::MAX, Some(end)).is_ok() { 0 } else { 1 })?);
            }
            // more hogs than CPUs
            for _ in 0..ncpu + 2 {
                pids.push(fork_run(move || {
                    let mut x = 0u64;
                    while mono_ns() < end {
                        for i in 0..10000u64 {
                            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
                        }
                        std::hint::black_box(x);
                    }
                    0
                })?);
            }
            // short sleepers
            for _ in 0..2 {
                pids.push(fork_run(move || {
                    while mono_ns() < end {
                        spin_us(50);
                        std::thread::sleep(Duration::from_micros(500));
                    }
                    0
                })?);
            }
            let n = pids.len();
            let mut failed = 0;
            for p in pids {
                if wait_pid(p)? != 0 {
                    failed += 1;
                }
            }
            serde_json::json!({"workload": "mixed", "processes": n, "failed": failed, "secs": secs.as_secs_f64()})
        }
        Workload::Pipe { msgs } => {
            let (n, s, same) = pipe_pingpong(msgs, None)?;
            serde_json::json!({"workload": "pipe", "msgs": n, "secs": s, "msgs_per_s": n as f64 / s,
                "same_cpu": same as f64 / n.max(1) as f64})
        }
        Workload::Hackbench { groups, loops } => {
            let s = hackbench(groups, loops)?;
            serde_json::json!({"workload": "hackbench", "groups": groups, "loops": loops, "secs": s})
        }
        Workload::Forkexec { n } => {
            let (n, s) = forkexec(n, None)?;
            serde_json::json!({"workload": "forkexec", "n": n, "secs": s, "procs_per_s": n as f64 / s})
        }
        Workload::Forkcpu { n, busy_us } => {
            // sh[0]: child's first CPU, sh[1]: ns from fork to the child's start
            let sh = shared(2);
            let (mut same, mut delays, mut other, mut other_fast) = (0u32, vec![], 0u32, 0u32);
            for _ in 0..n {
                let pcpu = getcpu();
                let t = mono_ns();
                sh[0].store(u64::MAX, Relaxed);
                let pid = fork_run(move || {
                    sh[0].store(getcpu() as u64, Relaxed);
                    sh[1].store(mono_ns() - t, Relaxed);
                    0
                })?;
                if busy_us > 0 {
                    spin_us(busy_us);
                }
                wait_pid(pid)?;
                let (ccpu, start_ns) = (sh[0].load(Relaxed) as i32, sh[1].load(Relaxed));
                if ccpu == pcpu && getcpu() == pcpu {
                    same += 1;
                } else if ccpu != pcpu {
                    other += 1;
                    if start_ns < 1_000_000 {
                        other_fast += 1;
                    }
                }
                delays.push(start_ns);
                std::thread::sleep(Duration::from_millis(2));
            }
            delays.sort();
            serde_json::json!({"workload": "forkcpu", "n": n, "busy_us": busy_us,
                "same_cpu": same, "child_on_parent_cpu": n - other, "other_cpu": other, "other_cpu_within_1ms": other_fast,
                "median_start_ns": delays[delays.len() / 2]})
        }
        Workload::Chain { n, work_us } => {
            // sh[c]: how many times a link of the chain was seen on CPU c
            let sh = shared(64);
            fn link(left: u32, work_us: u64, sh: &'static [AtomicU64]) -> i32 {
                let mark = || {
                    let c = getcpu();
                    if (0..64).contains(&c) {
                        sh[c as usize].fetch_add(1, Relaxed);
                    }
                };
                mark();
                spin_us(work_us);
                mark();
                if left == 0 {
                    return 0;
                }
                fork_run(move || link(left - 1, work_us, sh)).and_then(wait_pid).unwrap_or(1)
            }
            // a chain of depth n would need n live processes: run it in rounds of 10
            let mut rc = 0;
            for _ in 0..n.div_ceil(10) {
                rc |= link(10, work_us, sh);
            }
            let hist: Vec<u64> = sh.iter().map(|c| c.load(Relaxed)).collect();
            let total: u64 = hist.iter().sum();
            let touched = hist.iter().filter(|&&c| c > 0).count();
            // "Uses" a CPU: at least 5% of the chain's samples ran there
            // (a stray placement behind a daemon's wake-up does not count).
            let used = hist.iter().filter(|&&c| c * 20 >= total.max(1)).count();
            let last = hist.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
            serde_json::json!({"workload": "chain", "n": n, "status": rc,
                "cpus_used": used, "cpus_touched": touched, "per_cpu": &hist[..last]})
        }
        Workload::Hogs { n, secs } => {
            let end = mono_ns() + secs.as_nanos() as u64;
            let t0 = mono_ns();
            let mut pids = vec![];
            for _ in 0..n {
                pids.push(fork_run(move || {
                    let mut x = 1u64;
                    while mono_ns() < end {
                        x = x.wrapping_mul(3).wrapping_add(1);
                        std::hint::black_box(x);
                    }
                    0
                })?);
            }
            // Each hog's own CPU time too: two hogs sharing a CPU get half
            // of what the others get, however fast the host runs the guest.
            let per_task = pids.into_iter().map(|p| wait_pid_cpu(p).map(|(_, cpu)| cpu)).collect::<Result<Vec<_>>>()?;
            let wall = (mono_ns() - t0) as f64 / 1e9;
            let cpu: f64 = per_task.iter().sum();
            serde_json::json!({"workload": "hogs", "n": n, "wall_s": wall, "cpu_s": cpu, "per_task_cpu_s": per_task})
        }
        Workload::Stillness { secs } => {
            let (longest, at) = stillness(secs)?;
            serde_json::json!({"workload": "stillness", "secs": secs.as_secs_f64(), "longest_s": longest, "at_s": at})
        }
    };
    Ok(j)
}
