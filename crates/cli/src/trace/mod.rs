// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore trace ...`

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;
use warmcore_trace::{Trace, Window};

use warmcore_args::ns as parse_ns;

mod chains;
mod dump;
mod import;
mod export;
mod info;
mod lod;
mod stats;

#[derive(Subcommand)]
pub enum TraceCmd {
    /// Header, machine, counts per event, lost events and time span of a trace.
    Info {
        file: PathBuf,
    },
    /// Print events as text, one a line, in global time order.
    Dump {
        file: PathBuf,
        /// Only this CPU (repeat for several).
        #[arg(long)]
        cpu: Vec<u32>,
        /// Start of the window, relative to the trace's first event (1.5s, 200ms, 40us, 123ns; a bare number is seconds).
        #[arg(long, value_parser = parse_ns)]
        from: Option<u64>,
        /// End of the window (exclusive), relative to the trace's first event.
        #[arg(long, value_parser = parse_ns)]
        to: Option<u64>,
        /// Only events of this name (repeat for several); see `trace info` for the names.
        #[arg(long)]
        event: Vec<String>,
        /// Print absolute timestamps instead of times since the first event.
        #[arg(long)]
        absolute: bool,
    },
    /// Write a synthetic trace of a given size (for benchmarks and tests of tools).
    Synth {
        /// The output .wct file.
        #[arg(short, long)]
        output: PathBuf,
        /// Number of events, about (at most 10^10, 240 GB).
        #[arg(long, default_value_t = 1_000_000, value_parser = warmcore_args::count::<u64>(1, 10_000_000_000))]
        events: u64,
        /// Number of CPUs.
        #[arg(long, default_value_t = 16, value_parser = warmcore_args::count::<u32>(1, 65536))]
        cpus: u32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Compress chunks with zstd at this level (1-19).
        #[arg(long, value_parser = clap::value_parser!(i32).range(1..=19))]
        zstd: Option<i32>,
    },
    /// Busy time, frequency residency, underload/overload, migrations, wakeup
    /// latency, work-conservation violations and frequency inversions.
    Stats {
        file: PathBuf,
        /// Print one JSON object instead of the readable report.
        #[arg(long)]
        json: bool,
        /// Also where wake-ups and forks placed tasks (the previous CPU, the
        /// waker's, migrations per wake-up, each CPU's share of the run time;
        /// the JSON key `placement`). Its memory grows with the trace's pids.
        #[arg(long)]
        placement: bool,
    },
    /// Wake-up chains: who woke or forked each task, on which CPU and at which
    /// frequency, where the task then ran, and how long it ran below its
    /// waker's frequency (frequency inversion, link by link).
    Chains {
        file: PathBuf,
        /// Only the chains through this task: the links that woke it or that
        /// it made, back to the first waker and forward to the last wakee.
        #[arg(long)]
        pid: Option<u32>,
        /// Print one JSON object instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Build the level-of-detail summary that `warmcore view` draws large
    /// traces from (FILE.lod beside the trace): per CPU and time bin, busy
    /// time by frequency band, idle time by idle state, time by run-queue
    /// size and event counts. A current summary is kept; a stale one rebuilt.
    Lod {
        /// The .wct trace.
        file: PathBuf,
        /// Rebuild even if the summary beside the trace is current.
        #[arg(long)]
        force: bool,
    },
    /// Convert another tool's trace (perf script, trace-cmd report, SchedLog dump) to .wct.
    Import {
        /// The tool that made the input.
        #[arg(long, value_enum)]
        from: import::From,
        /// The input: a text file (zstd-compressed is fine) or a SchedLog dump directory.
        input: PathBuf,
        /// The .wct file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Compress the output's event chunks with zstd.
        #[arg(long)]
        zstd: bool,
    },
    /// Write a trace (or a window of it) for other tools: a Perfetto trace
    /// (open it in ui.perfetto.dev) and/or a parquet table, one row per event.
    #[command(arg_required_else_help = true)]
    Export {
        /// The .wct trace to export.
        file: PathBuf,
        /// Write a Perfetto protobuf trace here (e.g. OUT.pftrace).
        #[arg(long, value_name = "OUT")]
        perfetto: Option<PathBuf>,
        /// Write a parquet table here (e.g. OUT.parquet).
        #[arg(long, value_name = "OUT")]
        parquet: Option<PathBuf>,
        /// Start of the window, relative to the trace's first event (1.5s, 200ms, 40us, 123ns; a bare number is seconds).
        #[arg(long, value_parser = parse_ns)]
        from: Option<u64>,
        /// End of the window (exclusive), relative to the trace's first event.
        #[arg(long, value_parser = parse_ns)]
        to: Option<u64>,
    },
}

pub fn run(cmd: TraceCmd) -> Result<()> {
    match cmd {
        TraceCmd::Info { file } => info::run(&open(&file)?),
        TraceCmd::Dump { file, cpu, from, to, event, absolute } => {
            dump::run(&open(&file)?, &cpu, from, to, &event, absolute)
        }
        TraceCmd::Synth { output, events, cpus, seed, zstd } => {
            let opts = warmcore_trace::synth::SynthOptions { events, cpus, seed, zstd_level: zstd };
            let n = warmcore_trace::synth::generate(&output, &opts)?;
            say(&output, format!("wrote {n} events on {cpus} CPUs to {}", output.display()));
            Ok(())
        }
        TraceCmd::Stats { file, json, placement } => stats::run(&open(&file)?, json, placement),
        TraceCmd::Chains { file, pid, json } => chains::run(&open(&file)?, pid, json),
        TraceCmd::Lod { file, force } => lod::run(&open(&file)?, force),
        TraceCmd::Import { from, input, output, zstd } => import::run(from, &input, &output, zstd),
        TraceCmd::Export { file, perfetto, parquet, from, to } => {
            if perfetto.is_none() && parquet.is_none() {
                anyhow::bail!(warmcore_args::UsageError::new("trace export: give --perfetto OUT.pftrace and/or --parquet OUT.parquet"));
            }
            export::run(&open(&file)?, perfetto.as_deref(), parquet.as_deref(), from, to)
        }
    }
}

/// A writer's summary line: on stdout, or on stderr when the output itself
/// goes to stdout.
pub fn say(output: &std::path::Path, line: String) {
    if warmcore_trace::output::is_stdout(output) {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
}

/// `--strict`: an incomplete trace is an error, not a warning.
pub static STRICT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Open a trace for any command that reads one: an incomplete trace (a
/// recording cut short) gets one warning line saying how much of it is
/// usable, or, with `--strict`, is an error.
pub fn open(file: &std::path::Path) -> Result<Trace> {
    let t = Trace::open(file)?;
    if let Some(why) = &t.incomplete {
        let usable = match t.span() {
            Some((a, b)) => format!("{} events over {} are usable", t.event_count(), crate::time::show_ns(b - a)),
            None => "no event is usable".to_string(),
        };
        if STRICT.load(std::sync::atomic::Ordering::Relaxed) {
            anyhow::bail!(warmcore_args::UsageError::new(format!(
                "{}: incomplete trace ({why}); {usable}; without --strict it is read as far as it goes",
                t.path()
            )));
        }
        eprintln!("warmcore: warning: {}: incomplete trace ({why}); {usable} (--strict refuses it)", t.path());
    }
    Ok(t)
}

/// A window given relative to the trace's start, as absolute timestamps;
/// an empty or reversed one is refused.
pub fn window(t: &Trace, from: Option<u64>, to: Option<u64>) -> Result<Window> {
    warmcore_args::window(from, to).map_err(warmcore_args::UsageError::new)?;
    let base = t.span().map(|s| s.0).unwrap_or(0);
    Ok(Window {
        from: from.map(|f| base.saturating_add(f)).unwrap_or(0),
        to: to.map(|x| base.saturating_add(x)).unwrap_or(u64::MAX),
    })
}

/// Check CPU numbers against the trace, naming the first bad one.
pub fn check_cpus(t: &Trace, cpus: &[u32]) -> Result<()> {
    if let Some(bad) = cpus.iter().find(|&&c| c >= t.nr_cpus()) {
        anyhow::bail!(warmcore_args::UsageError::new(format!("{}: no CPU {bad}: the trace has CPUs 0-{}", t.path(), t.nr_cpus() - 1)));
    }
    Ok(())
}

