// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore sched`: run the sched_ext scheduler; `warmcore sched freq set`.

use clap::{Args, Subcommand};
use warmcore_sched::{Outcome, SchedOpts};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SchedArgs {
    #[command(subcommand)]
    sub: Option<SchedSub>,
    #[command(flatten)]
    opts: SchedOpts,
}

#[derive(Subcommand)]
enum SchedSub {
    /// Frequencies seen by a scheduler running with --freq-source=map.
    #[command(subcommand)]
    Freq(FreqCmd),
}

#[derive(Subcommand)]
enum FreqCmd {
    /// Set CPU's frequency to KHZ.
    Set { cpu: u32, khz: u32 },
}

/// Returns the process exit status.
pub fn run(a: SchedArgs) -> anyhow::Result<i32> {
    match (a.sub, a.opts.monitor) {
        (Some(SchedSub::Freq(FreqCmd::Set { cpu, khz })), _) => {
            warmcore_sched::freq_set(cpu, khz)?;
            Ok(0)
        }
        (None, Some(interval)) => {
            warmcore_sched::monitor(interval)?;
            Ok(0)
        }
        (None, None) => {
            let mut out = std::io::stdout();
            match warmcore_sched::run(&a.opts, &mut out)? {
                Outcome::Detached => Ok(0),
                Outcome::Ejected(why) => {
                    eprintln!("warmcore: the kernel ejected the scheduler: {why}");
                    Ok(1)
                }
            }
        }
    }
}
