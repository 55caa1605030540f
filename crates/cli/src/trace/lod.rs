// SPDX-License-Identifier: GPL-2.0-only
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use warmcore_trace::lod::{self, Origin};
use warmcore_trace::Trace;

use crate::time::show_ns;

pub fn run(t: &Trace, force: bool) -> Result<()> {
    let start = Instant::now();
    let side = lod::side_path(Path::new(t.path()));
    let (l, origin) = if force {
        let mut l = lod::build(t, lod::ident(Path::new(t.path()))?)?;
        l.write(&side)?;
        (l, Origin::Built("--force".into()))
    } else {
        lod::open_or_build(t)?
    };
    let took = start.elapsed().as_secs_f64();
    match &origin {
        Origin::Read => println!("{}: current, kept", side.display()),
        Origin::Built(why) => println!("{}: built in {took:.2} s (previous: {why})", side.display()),
        Origin::BuiltNotSaved(_, e) => anyhow::bail!("built the summary but could not save it: {e}"),
    }
    let m = &l.meta;
    println!("events:      {} on {} CPUs", m.events, m.nr_cpus);
    for lv in &l.levels {
        println!("level:       {} bins of {}", lv.bins, show_ns(lv.width));
    }
    println!("per bin:     {}; counts of {} event kinds", lod::TIME_COLUMNS.join(", "), lod::KINDS);
    println!("size:        {} bytes on disk", std::fs::metadata(&side)?.len());
    Ok(())
}
