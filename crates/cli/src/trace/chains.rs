// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore trace chains FILE [--pid P] [--json]`: the wake-up and fork
//! links of warmcore_trace::chains, one a line, or as one JSON object.

use std::fmt::Write as _;

use anyhow::{bail, Result};
use serde::Serialize;
use warmcore_trace::chains::{links, Link, Links};
use warmcore_trace::Trace;

use crate::time::show_ns;

/// A link with the tasks' names, for --json.
#[derive(Serialize)]
struct Row<'a> {
    #[serde(flatten)]
    link: &'a Link,
    waker_comm: Option<&'a str>,
    wakee_comm: Option<&'a str>,
}

#[derive(Serialize)]
struct Report<'a> {
    file: &'a str,
    pid: Option<u32>,
    /// Links in time order; `parent` is the id of the link that woke the waker.
    links: Vec<Row<'a>>,
    /// Sum of the links' below_ns; null without frequency data.
    below_ns: Option<u64>,
}

pub fn run(t: &Trace, pid: Option<u32>, json: bool) -> Result<()> {
    let all = links(t)?;
    let ids: Vec<u32> = match pid {
        None => (0..all.links.len() as u32).collect(),
        Some(p) => {
            let ids = all.chain_of_pid(p);
            if ids.is_empty() {
                bail!(warmcore_args::UsageError::new(format!("{}: pid {p} woke no task and was woken by none in this trace", t.path())));
            }
            ids
        }
    };
    let chosen: Vec<&Link> = ids.iter().map(|&i| &all.links[i as usize]).collect();
    let below = all.has_freq().then(|| chosen.iter().filter_map(|l| l.below_ns).sum());
    let text = if json {
        let rows = chosen
            .iter()
            .map(|&l| Row { link: l, waker_comm: comm(t, l.waker), wakee_comm: comm(t, l.wakee) })
            .collect();
        let r = Report { file: t.path(), pid, links: rows, below_ns: below };
        serde_json::to_string_pretty(&r)? + "\n"
    } else {
        table(t, &all, &chosen, below)
    };
    super::stats::emit(&text)
}

fn comm(t: &Trace, pid: u32) -> Option<&str> {
    if pid == 0 { None } else { t.comm(pid) }
}

fn mhz(khz: Option<u32>) -> String {
    khz.map(|k| (k / 1000).to_string()).unwrap_or_else(|| "-".into())
}

fn task(t: &Trace, pid: u32) -> String {
    match pid {
        0 => "<idle>".into(),
        p => format!("{}:{p}", comm(t, p).unwrap_or("-")),
    }
}

/// The readable table: one link a line, in time order, like `perf sched`.
fn table(t: &Trace, all: &Links, chosen: &[&Link], below: Option<u64>) -> String {
    let base = t.span().map(|s| s.0).unwrap_or(0);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:>6} {:>6} {:>16} {:<4} {:<22} {:>3} {:>5}    {:<22} {:>3} {:>5} {:>12} {:>12}",
        "LINK", "PARENT", "TIME(s)", "KIND", "WAKER", "CPU", "MHz", "WAKEE", "CPU", "MHz", "RAN", "BELOW"
    );
    for l in chosen {
        let ts = l.ts - base;
        let _ = writeln!(
            o,
            "{:>6} {:>6} {:>6}.{:09} {:<4} {:<22} {:>3} {:>5} -> {:<22} {:>3} {:>5} {:>12} {:>12}",
            l.id,
            l.parent.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
            ts / 1_000_000_000,
            ts % 1_000_000_000,
            if l.fork { "fork" } else { "wake" },
            task(t, l.waker),
            l.waker_cpu,
            mhz(l.waker_khz),
            task(t, l.wakee),
            l.cpu.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
            mhz(l.khz),
            show_ns(l.run_ns),
            l.below_ns.map(show_ns).unwrap_or_else(|| "-".into()),
        );
    }
    let _ = write!(o, "{} links", chosen.len());
    match below {
        Some(b) => {
            let n = chosen.iter().filter(|l| l.below_ns.is_some_and(|b| b > 0)).count();
            let _ = writeln!(o, "; {n} ran below their waker's frequency, {} in all", show_ns(b));
        }
        None => {
            let _ = writeln!(o, "; no frequency data (no FREQ_CHANGE, no TICK with a frequency): no time below");
        }
    }
    if all.switches == 0 {
        let _ = writeln!(o, "no CTX_SWITCH events: no woken task is seen running");
    }
    o
}
