// SPDX-License-Identifier: GPL-2.0-only
//! The `warmcore` command: parse, call a crate, print.

use clap::{Parser, Subcommand};

mod dist;
mod field;
mod hunt;
mod record;
mod reproduce;
mod sched;
mod signals;
mod sim;
mod sweep;
mod time;
mod trace;
mod view;
mod vm;

#[derive(Parser)]
#[command(name = "warmcore", version = warmcore_version::VERSION, about = "Frequency-aware task placement on Linux: trace, simulate, schedule")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// Refuse an incomplete trace (a recording cut short) instead of
    /// reading it as far as it goes with a warning.
    #[arg(long, global = true)]
    strict: bool,
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
    /// Run a parameter study of the simulator: every combination of a spec's axes, resumable, locally or on Ray.
    Sweep(sweep::SweepArgs),
    /// Every scheduler warmcore hosts on the field's workloads and machines, ranked per workload.
    Field(field::FieldArgs),
    /// Search a sched_ext scheduler for stalls and broken guarantees with generated workloads; shrink each failure to a reproducer.
    Hunt(hunt::HuntArgs),
    /// Re-run the papers' experiments in the simulator: report, claims, figures.
    Reproduce(reproduce::ReproduceArgs),
    /// Open a trace in the interactive viewer (a local web page).
    View(view::ViewArgs),
    /// Render a view of a trace to PNG or HTML, without a server.
    Plot(view::PlotArgs),
    /// Run warmcore's sched_ext scheduler (needs a kernel with sched_ext).
    Sched(sched::SchedArgs),
    /// Boot a kernel with sched_ext under QEMU and run a command inside.
    Vm(vm::VmArgs),
    /// Print the completion script of a shell (bash, zsh, fish, ...).
    Completions(dist::CompletionsArgs),
    /// Write the man pages of every command into a directory (make dist).
    #[command(hide = true)]
    Manpages(dist::ManpagesArgs),
}

/// Commands that decide their own exit status (the scheduler, the VM).
fn exit_with(code: i32) {
    if code != 0 {
        std::process::exit(code);
    }
}

/// The command line, every command of which takes a negative number as an
/// option's value: `--run-for -1` then reaches the option's parser, which
/// names the range it takes, instead of reading as an unknown flag `-1`.
fn command() -> clap::Command {
    fn negatives(c: clap::Command) -> clap::Command {
        let subs: Vec<String> = c.get_subcommands().map(|s| s.get_name().to_string()).collect();
        subs.into_iter().fold(c.allow_negative_numbers(true), |c, s| c.mut_subcommand(s, negatives))
    }
    negatives(<Cli as clap::CommandFactory>::command())
}

/// A command-line error in one line, as every other error: clap's message,
/// its tip if it has one, and which `--help` to read. Help and version
/// requests print as clap prints them.
fn parse_args() -> Cli {
    use clap::error::ErrorKind;
    use clap::FromArgMatches;
    let e = match command().try_get_matches().and_then(|m| Cli::from_arg_matches(&m)) {
        Ok(cli) => return cli,
        Err(e) => e,
    };
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let text = e.to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut what = lines.next().unwrap_or("bad arguments").trim_start_matches("error: ").to_string();
    let mut tip = None;
    for l in lines {
        if let Some(t) = l.strip_prefix("tip: ") {
            tip = Some(t);
        } else if l.starts_with("Usage:") || l.starts_with("For more") {
            break;
        } else {
            // What follows: the missing arguments, the possible values.
            what = format!("{what} {l}");
        }
    }
    // The subcommand the arguments name, for its --help.
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut path = vec!["warmcore".to_string()];
    for arg in std::env::args().skip(1) {
        match cmd.find_subcommand(&arg) {
            Some(sub) => {
                path.push(arg);
                cmd = sub.clone();
            }
            None if arg.starts_with('-') => continue,
            None => break,
        }
    }
    let command = path.join(" ");
    match tip {
        Some(tip) => eprintln!("warmcore: {what}; {tip} (see `{command} --help`)"),
        None => eprintln!("warmcore: {what} (see `{command} --help`)"),
    }
    std::process::exit(warmcore_args::status::USAGE);
}

fn main() {
    let cli = parse_args();
    trace::STRICT.store(cli.strict, std::sync::atomic::Ordering::Relaxed);
    // A closed stdout (`warmcore sim ... | head -1`) ends a command quietly,
    // as it ends cat (exit status 141, killed by SIGPIPE), once its files are
    // in place: they print after writing. Not the recorder, the scheduler and
    // the VM, which must finish a trace, detach, or stop QEMU.
    if !matches!(cli.cmd, Cmd::Record(_) | Cmd::Ftl(_) | Cmd::Sched(_) | Cmd::Vm(_)) {
        // SAFETY: restoring a signal's default action, before any thread.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    // Ctrl-C or SIGTERM while a command writes: its temporary files are
    // removed, so each output keeps its previous content (or stays absent),
    // and one line says so. The sweep keeps finished runs (its own handler);
    // the recorder, the scheduler and the VM stop in their own way.
    if matches!(cli.cmd, Cmd::Trace(_) | Cmd::Sim(_) | Cmd::Compare(_) | Cmd::Reproduce(_)) {
        signals::on_interrupt(|sig| {
            let left = warmcore_trace::output::abandon_all();
            if left.is_empty() {
                eprintln!("warmcore: interrupted");
            } else {
                eprintln!("warmcore: interrupted: not written, left as they were: {}", left.join(", "));
            }
            signals::exit(sig);
        });
    }
    let r = match cli.cmd {
        Cmd::Trace(c) => trace::run(c),
        Cmd::Record(a) => record::run(a),
        Cmd::Ftl(a) => record::ftl(a),
        Cmd::Sim(a) => sim::sim(a),
        Cmd::Compare(a) => sim::compare(a),
        Cmd::Sweep(a) => sweep::run(a),
        Cmd::Field(a) => field::run(a),
        Cmd::Hunt(a) => hunt::run(a),
        Cmd::Reproduce(a) => reproduce::run(a),
        Cmd::View(a) => view::view(a),
        Cmd::Plot(a) => view::plot(a),
        Cmd::Sched(a) => sched::run(a).map(exit_with),
        Cmd::Vm(a) => vm::run(a).map(exit_with),
        Cmd::Completions(a) => dist::completions(a),
        Cmd::Manpages(a) => dist::manpages(a),
    };
    if let Err(e) = r {
        // One line: what is wrong and, where the error knows it, what to do.
        eprintln!("warmcore: {e:#}");
        std::process::exit(status(&e));
    }
}

/// The exit status of every command's error, decided here for all of them
/// (docs/conventions.md, Exit statuses): 2 when the command refused what it
/// was given (a bad option, name, value or file), 1 when the work failed.
fn status(e: &anyhow::Error) -> i32 {
    use warmcore_args::{status, UsageError};
    use warmcore_sim::SimError;
    let usage = e.chain().any(|c| {
        c.is::<UsageError>()
            || matches!(c.downcast_ref::<SimError>(), Some(SimError::Input(_)))
            // A file that cannot be read, is not what it should be, or may
            // not be written; not a write that failed.
            || c.downcast_ref::<warmcore_trace::TraceError>().is_some_and(|t| !t.writing)
    });
    if usage {
        status::USAGE
    } else {
        status::FAILURE
    }
}
