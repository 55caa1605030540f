// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore trace stats FILE [--json] [--placement]`: the figures of
//! warmcore_trace::stats (and warmcore_trace::placement), as one JSON object
//! or as a readable report.

use anyhow::Result;
use warmcore_trace::placement::Placement;
use warmcore_trace::stats::{analyze, Stats};
use warmcore_trace::Trace;

use crate::time::show_ns;

pub fn run(t: &Trace, json: bool, placement: bool) -> Result<()> {
    let (s, p) = if placement {
        let (s, p) = warmcore_trace::placement::analyze(t)?;
        (s, Some(p))
    } else {
        (analyze(t)?, None)
    };
    if json {
        // An incomplete trace was named on stderr when it was opened.
        let text = match &p {
            None => serde_json::to_string_pretty(&s)?,
            Some(p) => {
                // The statistics' keys, then `placement` (a Value would sort the keys).
                #[derive(serde::Serialize)]
                struct WithPlacement<'a> {
                    #[serde(flatten)]
                    stats: &'a Stats,
                    placement: &'a Placement,
                }
                serde_json::to_string_pretty(&WithPlacement { stats: &s, placement: p })?
            }
        };
        emit(&(text + "\n"))
    } else {
        let mut text = report(t, &s);
        if let Some(p) = &p {
            text += &placement_report(p);
        }
        emit(&text)
    }
}

/// The readable lines of `--placement`.
fn placement_report(p: &Placement) -> String {
    let share = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{:.1}%", 100.0 * v));
    let cpus: Vec<String> = p.run_share.iter().enumerate().map(|(c, s)| format!("cpu{c} {:.1}%", 100.0 * s)).collect();
    format!(
        "placement:      {} wake-ups: {} on the previous CPU, {} on the waker's ({} name no waker), {} ran first on their target\n\
         \x20               {} forks: {} on the parent's CPU; {} migrations, {} per wake-up\n\
         \x20               run time of the trace's tasks: {}; {} CPUs touched, {} with at least 5%\n",
        p.wakeups,
        share(p.on_prev),
        share(p.on_waker),
        p.no_waker,
        share(p.ran_on_target),
        p.forks,
        share(p.forks_on_parent),
        p.migrations,
        p.migrations_per_wakeup.map_or("-".to_string(), |v| format!("{v:.2}")),
        cpus.join(", "),
        p.cpus_touched,
        p.cpus_used
    )
}

/// Write to stdout; a closed stdout (`| head`, a pager quit) is no error.
pub(super) fn emit(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// The readable report.
fn report(t: &Trace, s: &Stats) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let d = &s.detail;
    let _ = writeln!(o, "file:           {}", t.path());
    if let Some(why) = &t.incomplete {
        let _ = writeln!(o, "status:         INCOMPLETE: {why}");
    }
    let _ = writeln!(o, "events:         {} on {} CPUs over {}", s.events, s.cpus, show_ns(s.duration_ns));
    let _ = writeln!(o, "lost events:    {}", s.lost_events);
    let total_busy: u64 = d.busy_ns.iter().sum();
    let _ = writeln!(
        o,
        "busy time:      {} in all, {:.1} CPUs busy on average",
        show_ns(total_busy),
        if s.duration_ns > 0 { total_busy as f64 / s.duration_ns as f64 } else { 0.0 }
    );
    let cells: Vec<String> = d
        .busy_ns
        .iter()
        .enumerate()
        .map(|(c, &b)| format!("cpu{c:<4} {:>12} {:5.1}%", show_ns(b), pct(b, s.duration_ns)))
        .collect();
    for row in cells.chunks(3) {
        let _ = writeln!(o, "  {}", row.join("   "));
    }
    match &s.freq_residency {
        None => {
            let _ = writeln!(o, "frequency:      no frequency data (no TICK with a frequency, no FREQ_CHANGE)");
        }
        Some(bands) => {
            let _ = writeln!(
                o,
                "frequency residency ({:.1}% of busy time at a known frequency):",
                pct(d.busy_known_freq_ns, total_busy)
            );
            for b in bands {
                let bar = "#".repeat((b.fraction * 50.0).round() as usize);
                let _ = writeln!(o, "  {:>5}-{:<5} MHz {:6.2}% {bar}", b.lo_mhz, b.hi_mhz, b.fraction * 100.0);
            }
        }
    }
    let _ = writeln!(
        o,
        "underload:      {:.2} per s ({} task-intervals over {} intervals of 4 ms)",
        s.underload_per_s, d.underload, d.intervals
    );
    let _ = writeln!(o, "overload:       {:.2} per s ({} task-intervals)", s.overload_per_s, d.overload);
    let _ = writeln!(o, "migrations:     {}", s.migrations);
    let _ = writeln!(o, "CPUs used:      {} of {}", s.cpus_used, s.cpus);
    match &s.wakeup_latency_ns {
        None => {
            let _ = writeln!(o, "wakeup latency: no woken task ran");
        }
        Some(p) => {
            let _ = writeln!(
                o,
                "wakeup latency: p50 {}  p99 {}  p99.9 {}  ({} wakeups)",
                show_ns(p.p50),
                show_ns(p.p99),
                show_ns(p.p999),
                d.wakeups
            );
        }
    }
    let _ = writeln!(
        o,
        "work-conservation violation: {} ({:.2}% of the time a CPU idles while another has a waiting task)",
        show_ns(s.work_conservation_violation_ns),
        pct(s.work_conservation_violation_ns, s.duration_ns)
    );
    match &s.inversions {
        None => {
            let _ = writeln!(o, "frequency inversions: no frequency data");
        }
        Some(i) => {
            let _ = writeln!(o, "frequency inversions: {} episodes, {} run below the waker's frequency", i.count, show_ns(i.ns));
        }
    }
    o
}
