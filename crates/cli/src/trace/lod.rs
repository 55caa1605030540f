// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore trace lod FILE [--force]`: build (or keep) the level-of-detail
//! summary beside a trace, and say what it holds.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use warmcore_trace::lod::{self, Origin};
use warmcore_trace::Trace;

use crate::time::show_ns;

pub fn run(t: &Trace, force: bool) -> Result<()> {
    let start = Instant::now();
    let side = lod::side_path(Path::new(t.path()));
    // Progress on a terminal: a large trace takes seconds.
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let say = |done: usize, of: usize| {
        if tty && (done % 8 == 0 || done == of) {
            eprint!("\rbuilding: {done}/{of} CPUs{}", if done == of { "\n" } else { "" });
        }
    };
    let (l, origin) = if force {
        let mut l = lod::build_with(t, lod::ident(Path::new(t.path()))?, &say)?;
        l.write(&side)?;
        (l, Origin::Built("--force".into()))
    } else {
        lod::open_or_build_with(t, &say)?
    };
    let took = start.elapsed().as_secs_f64();
    let mut out = String::new();
    match &origin {
        Origin::Read => writeln!(out, "{}: current, kept", side.display())?,
        Origin::Built(why) => writeln!(out, "{}: built in {took:.2} s (previous: {why})", side.display())?,
        Origin::BuiltNotSaved(_, e) => anyhow::bail!("built the summary but could not save it: {e}"),
    }
    let m = &l.meta;
    writeln!(out, "events:      {} on {} CPUs", m.events, m.nr_cpus)?;
    for lv in &l.levels {
        writeln!(out, "level:       {} bins of {}", lv.bins, show_ns(lv.width))?;
    }
    writeln!(out, "per bin:     {}; counts of {} event kinds", lod::TIME_COLUMNS.join(", "), lod::KINDS)?;
    writeln!(out, "size:        {} bytes on disk", std::fs::metadata(&side)?.len())?;
    // A closed stdout (`| head`) is no error.
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(out.as_bytes()).and_then(|_| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}
