// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore record` and `warmcore ftl`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::Args;
use warmcore_record::{Options, StopReason};

#[derive(Args)]
pub struct RecordArgs {
    /// The trace to write (.wct).
    #[arg(short = 'o', long = "output", default_value = "warmcore.wct")]
    out: PathBuf,
    /// Only these CPUs, e.g. 0-3,6.
    #[arg(long)]
    cpus: Option<String>,
    /// Only this process and the processes it creates.
    #[arg(long, conflicts_with = "cgroup")]
    pid: Option<u32>,
    /// Only tasks in this cgroup or below it (v2; a path, absolute or under /sys/fs/cgroup).
    #[arg(long)]
    cgroup: Option<PathBuf>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECS", value_parser = warmcore_args::positive_secs)]
    duration: Option<Duration>,
    /// Events to record, comma-separated (default: all), e.g. ctx_switch,wakeup,tick.
    #[arg(long, value_delimiter = ',')]
    events: Option<Vec<String>>,
    /// Size of each CPU's buffer in MiB (rounded up to a power of two of
    /// 24-byte entries).
    #[arg(long, default_value_t = warmcore_record::record::DEFAULT_BUFFER_MB)]
    buffer_mb: f64,
    /// Keep only the newest events of each CPU in its buffer (overwriting the
    /// oldest, counting them as lost) and write them at the end or on SIGUSR1.
    #[arg(long)]
    flight_recorder: bool,
    /// Turn on the kernel's BPF run-time statistics while recording and
    /// report the programs' own run time with the recorder's CPU time.
    #[arg(long)]
    bpf_stats: bool,
    /// Only the command and the processes it creates (without it, a
    /// command's recording holds every task of the machine, as perf sched
    /// record's does).
    #[arg(long, requires = "command", conflicts_with_all = ["pid", "cgroup"])]
    command_only: bool,
    /// The command to run and trace until it exits.
    #[arg(last = true)]
    command: Vec<String>,
}

pub fn run(a: RecordArgs) -> Result<()> {
    let mut o = Options::new(&a.out);
    o.cpus = a.cpus.as_deref().map(warmcore_record::sys::parse_cpu_list).transpose()?;
    o.pid = a.pid;
    o.cgroup = a.cgroup;
    o.duration = a.duration;
    o.events = a.events;
    o.buffer_mb = a.buffer_mb;
    o.flight_recorder = a.flight_recorder;
    o.bpf_stats = a.bpf_stats;
    o.command = a.command;
    o.command_only = a.command_only;
    let r = warmcore_record::record(&o, &mut |line| eprintln!("warmcore record: {line}"))?;
    let secs = r.elapsed.as_secs_f64().max(1e-9);
    let lost: u64 = r.lost.iter().sum();
    eprintln!(
        "warmcore record: {}: {} events in {:.2} s ({:.0} events/s), {} bytes on disk ({:.1} bytes/event)",
        r.out.display(),
        r.events,
        secs,
        r.events as f64 / secs,
        r.file_bytes,
        r.file_bytes as f64 / (r.events.max(1)) as f64
    );
    if lost > 0 {
        let per: Vec<String> =
            r.lost.iter().enumerate().filter(|(_, &l)| l > 0).map(|(c, l)| format!("cpu{c}={l}")).collect();
        let what = if o.flight_recorder { "overwritten or dropped" } else { "lost (buffer full: raise --buffer-mb)" };
        eprintln!("warmcore record: {lost} events {what}: {}", per.join(" "));
    } else {
        eprintln!("warmcore record: no event lost");
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    match r.bpf_run {
        Some((t, runs)) => eprintln!(
            "warmcore record: cost: BPF programs {:.1} ms in {runs} runs ({:.0} ns each); recorder {:.1} ms of CPU",
            ms(t),
            t.as_nanos() as f64 / runs as f64,
            ms(r.recorder_cpu)
        ),
        None => eprintln!(
            "warmcore record: cost: recorder {:.1} ms of CPU (the BPF programs' own time: --bpf-stats)",
            ms(r.recorder_cpu)
        ),
    }
    if let Some(e) = &r.energy {
        for (pkg, j) in e {
            eprintln!("warmcore record: package {pkg}: {j:.3} J");
        }
    }
    match r.reason {
        StopReason::DiskFull => bail!(
            "{}: the disk is full: recording stopped; the trace holds the {} events written before, complete",
            r.out.display(),
            r.events
        ),
        StopReason::Interrupted(_) => eprintln!("warmcore record: interrupted: the trace is complete up to the interrupt"),
        _ => {}
    }
    if let Some(st) = r.command_status {
        if !st.success() {
            eprintln!("warmcore record: the command exited with {st}");
        }
    }
    // Interrupted by a signal: its status, once the trace is in place.
    if let StopReason::Interrupted(sig @ 1..) = r.reason {
        crate::signals::exit(sig);
    }
    Ok(())
}

#[derive(Args)]
pub struct FtlArgs {
    /// The CPU to load (default: the last online CPU).
    #[arg(long)]
    cpu: Option<u32>,
    /// Where to draw the frequency curve.
    #[arg(short = 'o', long = "output", default_value = "ftl.png")]
    out: PathBuf,
}

pub fn ftl(a: FtlArgs) -> Result<()> {
    let cpu = match a.cpu {
        Some(c) => c,
        None => *warmcore_record::sys::online_cpus().last().unwrap_or(&0),
    };
    let r = warmcore_record::ftl::run(cpu, &a.out)?;
    let ms = |v: Option<u64>| v.map(|n| format!("{:.1} ms", n as f64 / 1e6)).unwrap_or_else(|| "not within the samples".into());
    println!(
        "CPU {cpu}: idle {} MHz, max {} MHz; time to reach the max: {}; to fall back: {}; curve: {}",
        r.idle_khz / 1000,
        r.max_khz / 1000,
        ms(r.up_ns),
        ms(r.down_ns),
        a.out.display()
    );
    Ok(())
}
