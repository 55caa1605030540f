// SPDX-License-Identifier: GPL-2.0-only
//! The `warmcore` command: parse, call a crate, print.

use clap::{Parser, Subcommand};

mod record;
mod sim;
mod time;
mod trace;
mod view;

#[derive(Parser)]
#[command(name = "warmcore", version, about = "Frequency-aware task placement on Linux: trace, simulate, schedule")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Read, analyse, import and export .wct traces.
    #[command(subcommand)]
    Trace(trace::TraceCmd),
    /// Record the scheduler's events with eBPF into a .wct trace (needs root).
    Record(record::RecordArgs),
    /// Measure how fast a CPU's frequency ramps up under load and falls back (needs frequency readings).
    Ftl(record::FtlArgs),
    /// Simulate a workload on a modelled machine under a placement policy.
    Sim(sim::SimArgs),
    /// Compare placement policies on one machine and workload.
    Compare(sim::CompareArgs),
    /// Open a trace in the interactive viewer (a local web page).
    View(view::ViewArgs),
    /// Render a view of a trace to PNG or HTML, without a server.
    Plot(view::PlotArgs),
}

fn main() {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Trace(c) => trace::run(c),
        Cmd::Record(a) => record::run(a),
        Cmd::Ftl(a) => record::ftl(a),
        Cmd::Sim(a) => sim::sim(a),
        Cmd::Compare(a) => sim::compare(a),
        Cmd::View(a) => view::view(a),
        Cmd::Plot(a) => view::plot(a),
    };
    if let Err(e) = r {
        // One line: what is wrong and, where the error knows it, what to do.
        eprintln!("warmcore: {e:#}");
        std::process::exit(1);
    }
}
