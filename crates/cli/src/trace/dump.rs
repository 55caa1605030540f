// SPDX-License-Identifier: GPL-2.0-only
use std::io::Write;

use anyhow::{bail, Result};
use warmcore_trace::{ids, Event, Trace};

pub fn run(t: &Trace, cpus: &[u32], from: Option<u64>, to: Option<u64>, events: &[String], absolute: bool) -> Result<()> {
    super::check_cpus(t, cpus)?;
    let table = &t.header.events;
    let mut want = Vec::new();
    for name in events {
        match table.id(name) {
            Some(id) => want.push(id),
            None => {
                let names: Vec<&str> = table.names.iter().map(|(_, n)| n.as_str()).collect();
                bail!(warmcore_args::UsageError::new(format!("{}: no event named {name:?}; this trace's events are: {}", t.path(), names.join(", "))));
            }
        }
    }
    let w = super::window(t, from, to)?;
    let base = if absolute { 0 } else { t.span().map(|s| s.0).unwrap_or(0) };
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    let cpus = if cpus.is_empty() { None } else { Some(cpus) };
    for e in t.events(cpus, w) {
        let e = e?;
        if !want.is_empty() && !want.contains(&e.ev.id) {
            continue;
        }
        let ts = e.ev.ts - base;
        let r = writeln!(
            out,
            "{:>6}.{:09} [{:03}] {:>7} {:<16} {:<20} {}",
            ts / 1_000_000_000,
            ts % 1_000_000_000,
            e.cpu,
            e.ev.pid,
            if e.ev.pid == 0 { "<idle>" } else { t.comm(e.ev.pid).unwrap_or("-") },
            table.name(e.ev.id),
            describe(t, &e.ev)
        );
        if r.is_err() {
            return Ok(()); // stdout closed (a pager quit): not an error
        }
    }
    let _ = out.flush();
    Ok(())
}

/// The arguments of an event in words. Ids are looked up by the file's own
/// names, so that a file that numbers events otherwise still reads right.
fn describe(t: &Trace, e: &Event) -> String {
    let name = t.header.events.name(e.id);
    let builtin = ids_by_name(&name);
    let (a, b) = (e.a(), e.b());
    match builtin {
        Some(ids::EXEC) => format!("comm={}", e.comm()),
        Some(ids::WAKEUP) => format!("target_cpu={a} waker={b}"),
        Some(ids::WAKEUP_NEW) => format!("target_cpu={a} parent={b}"),
        Some(ids::FORK) => format!("parent={a}"),
        Some(ids::WAIT_PID) => format!("child={a}"),
        Some(ids::TICK) => format!("freq_khz={a} need_resched={b}"),
        Some(ids::CTX_SWITCH) => format!("next={a} prev_state={}", prev_state(b)),
        Some(ids::MIGRATE) => format!("from_cpu={a} to_cpu={b}"),
        Some(ids::RQ_SIZE) => format!("nr_running={a} delta={}", b as i32),
        Some(ids::FREQ_CHANGE) => format!("freq_khz={a}"),
        Some(ids::IDLE_ENTER) => format!("state={a}"),
        Some(ids::NEST_CHANGE) => format!("nest={}", ["none", "reserve", "primary"].get(a as usize).unwrap_or(&"?")),
        Some(ids::MOVE_TIMER_ARMED) => format!("first_choice={a} placed_on={b}"),
        Some(ids::MOVE_TIMER_FIRED) => format!("first_choice={a} migrated={b}"),
        Some(ids::FUTEX_WAIT) => format!("uaddr_lo={a:#x}"),
        Some(ids::FUTEX_WAKE) => format!("uaddr_lo={a:#x} woken={b}"),
        Some(_) => String::new(),
        None => format!("arg={:#018x}", u64::from_le_bytes(e.arg)),
    }
}

fn ids_by_name(name: &str) -> Option<u32> {
    warmcore_trace::event::BUILTIN.iter().find(|(_, n)| *n == name).map(|(i, _)| *i)
}

fn prev_state(s: u32) -> &'static str {
    use warmcore_trace::event::prev_state::*;
    match s {
        RUNNABLE => "R",
        BLOCKED => "S",
        BLOCKED_IO => "D",
        DEAD => "X",
        _ => "?",
    }
}
