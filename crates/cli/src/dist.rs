// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore completions` and `warmcore manpages`: the shell completions and
//! the man pages, generated from the command line's definitions (clap), so
//! that they never drift from `--help`. The packages of `make dist` install
//! both (scripts/dist.sh).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    shell: clap_complete::Shell,
}

#[derive(Args)]
pub struct ManpagesArgs {
    /// The directory to write warmcore.1 and a page per command into
    /// (warmcore-sim.1, warmcore-trace-stats.1, ...).
    dir: PathBuf,
}

pub fn completions(a: CompletionsArgs) -> Result<()> {
    let mut cmd = crate::command();
    clap_complete::generate(a.shell, &mut cmd, "warmcore", &mut std::io::stdout());
    Ok(())
}

pub fn manpages(a: ManpagesArgs) -> Result<()> {
    let mut cmd = crate::command();
    cmd.build();
    let mut pages = Vec::new();
    collect(&cmd, &mut pages)?;
    for (name, text) in &pages {
        warmcore_trace::output::write(&a.dir.join(format!("{name}.1")), &[], text)?;
    }
    eprintln!("{} man pages in {}", pages.len(), a.dir.display());
    Ok(())
}

/// The page of `cmd`, then those of its subcommands, named as git names its
/// own (warmcore-trace-stats): what `man warmcore-sched` finds. `build`
/// gave each subcommand that name as its display name.
fn collect(cmd: &clap::Command, pages: &mut Vec<(String, Vec<u8>)>) -> Result<()> {
    let mut text = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut text)?;
    pages.push((cmd.get_display_name().unwrap_or(cmd.get_name()).to_string(), text));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        collect(sub, pages)?;
    }
    Ok(())
}
