// SPDX-License-Identifier: GPL-2.0-only
use anyhow::Result;
use warmcore_trace::{Provenance, Trace, Window};

use crate::time::show_ns;

pub fn run(t: &Trace) -> Result<()> {
    let h = &t.header;
    let m = &h.machine;
    println!("file:        {}", t.path());
    match &t.incomplete {
        None => println!("status:      complete"),
        Some(why) => println!("status:      INCOMPLETE: {why}"),
    }
    let source = match &h.provenance {
        Provenance::Simulator { config, seed } => format!("simulator, seed {seed}, {config}"),
        Provenance::Tracer { kernel, command } => {
            format!("tracer, kernel {kernel}{}", command.as_ref().map(|c| format!(", command: {c}")).unwrap_or_default())
        }
        Provenance::Import { tool, input } => format!("imported from {tool} ({input})"),
        Provenance::Other { description } => description.clone(),
    };
    println!("source:      {source}");
    println!(
        "machine:     {}: {} CPUs, {} cores, {} dies, {} sockets",
        m.name,
        m.nr_cpus(),
        m.nr_cores(),
        m.nr_dies(),
        m.nr_sockets()
    );
    if m.has_freq_range() {
        println!(
            "frequency:   {} - {} MHz (base {} MHz)",
            m.freq_min_khz / 1000,
            m.freq_max_khz / 1000,
            m.freq_base_khz / 1000
        );
    } else {
        println!("frequency:   unknown");
    }
    match t.span() {
        Some((a, b)) => println!("span:        {} ({a} .. {b} ns)", show_ns(b - a)),
        None => println!("span:        no events"),
    }
    println!("processes:   {}", t.processes().len());
    let lost: u64 = t.lost.iter().sum();
    println!("events:      {}", t.event_count());
    if lost > 0 {
        let per: Vec<String> =
            t.lost.iter().enumerate().filter(|(_, &l)| l > 0).map(|(c, l)| format!("cpu{c}={l}")).collect();
        println!("lost events: {lost} ({})", per.join(" "));
    } else {
        println!("lost events: 0");
    }
    let mut counts = std::collections::BTreeMap::<u32, u64>::new();
    for e in t.events(None, Window::ALL) {
        *counts.entry(e?.ev.id).or_default() += 1;
    }
    println!("per event:");
    for (id, n) in counts {
        println!("  {:<24} {:>12}", h.events.name(id), n);
    }
    Ok(())
}
