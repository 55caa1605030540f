// SPDX-License-Identifier: GPL-2.0-only
//! `trace-cmd report` text.
//!
//! An event line is `COMM-PID [CPU] SECS.FRAC: EVENT: FIELDS` (COMM may hold
//! spaces and dashes: the pid follows the last dash; `<idle>-0` is a CPU's
//! idle task, `<...>` an unknown name). Newer trace-cmd versions may print
//! latency flags (`d..2.`) between the CPU and the timestamp; they are
//! skipped. The timestamp has 6 digits (us) or 9 (`report -t`). Header lines
//! (`cpus=N`, `version = N`, `CPU N is empty`, ...) come before the events.
//!
//! FIELDS are the kernel's `field=value` print format, the raw numbers of
//! `report -R`, or libtraceevent's plugin formats where a plugin is loaded:
//! - sched_switch: `PREV_COMM:PREV_PID [PRIO] STATE ==> NEXT_COMM:NEXT_PID [PRIO]`,
//! - sched_wakeup, sched_wakeup_new (and sched_waking where a plugin
//!   handles it): `COMM:PID [PRIO] [success=N] CPU:NNN`.

use super::perf_script::tokens;
use super::{
    parse_pid, parse_prev_state, parse_raw_fields, parse_ts, parse_u32, wake_kind, Head, HeaderFact, Parsed, Rec,
    TextFormat,
};

pub(crate) struct TraceCmd;

impl TextFormat for TraceCmd {
    const TOOL: &'static str = "trace-cmd report";
    const SHAPE: &'static str = "`COMM-PID [CPU] SECS.FRAC: EVENT: FIELDS`";

    fn parse_line(line: &str) -> Result<Parsed<'_>, String> {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            return Ok(Parsed::Meta(None));
        }
        if let Some(n) = t.strip_prefix("cpus=") {
            return n
                .trim()
                .parse()
                .map(|n| Parsed::Meta(Some(HeaderFact::NrCpus(n))))
                .map_err(|_| format!("bad CPU count `{n}`"));
        }
        match parse_head(line) {
            Ok(h) => Ok(Parsed::Event(h)),
            // The report's other header lines: "version = 6", "CPU 1 is
            // empty", "CPU0 data recorded at offset=...", "trace-cmd: ...".
            Err(_) if is_header_line(t) => Ok(Parsed::Meta(None)),
            Err(e) => Err(e),
        }
    }

    fn parse_event<'a>(h: &Head<'a>) -> Result<Rec<'a>, String> {
        let f = h.fields;
        match h.event {
            "sched_switch" if !f.contains("prev_comm=") => parse_plugin_switch(f),
            "sched_waking" | "sched_wakeup" | "sched_wakeup_new" if !f.contains("target_cpu=") => {
                parse_plugin_wake(h.event, f)
            }
            _ => parse_raw_fields(h.event, f),
        }
    }
}

fn is_header_line(t: &str) -> bool {
    t.starts_with("version =")
        || t.starts_with("trace-cmd: ")
        || t.starts_with("CPU") && (t.ends_with(" is empty") || t.contains(" data recorded at "))
        || t.starts_with('[') && t.ends_with(']') && !t.contains(' ')
}

/// `COMM:PID [PRIO]` (or `COMM:PID`): the name and the pid.
fn comm_pid(s: &str) -> Result<(&str, u32), String> {
    let s = s.trim();
    let s = match s.rfind(" [") {
        Some(i) if s.ends_with(']') => s[..i].trim_end(),
        _ => s,
    };
    let (comm, pid) = s.rsplit_once(':').ok_or_else(|| format!("bad task `{s}`; expected COMM:PID"))?;
    Ok((comm, parse_pid(pid, "pid")?))
}

fn parse_plugin_switch(f: &str) -> Result<Rec<'_>, String> {
    let (prev, next) = f
        .split_once(" ==> ")
        .ok_or_else(|| "no ` ==> `; expected `COMM:PID [PRIO] STATE ==> COMM:PID [PRIO]`".to_string())?;
    let prev = prev.trim_end();
    let (task, state) = prev
        .rsplit_once(' ')
        .ok_or_else(|| format!("bad previous task `{prev}`; expected `COMM:PID [PRIO] STATE`"))?;
    let (prev_comm, prev_pid) = comm_pid(task)?;
    let (next_comm, next_pid) = comm_pid(next)?;
    Ok(Rec::Switch { prev_comm, prev_pid, state: parse_prev_state(state)?, next_comm, next_pid })
}

fn parse_plugin_wake<'a>(event: &str, f: &'a str) -> Result<Rec<'a>, String> {
    let i = f.rfind(" CPU:").ok_or_else(|| "no ` CPU:NNN`; expected `COMM:PID [PRIO] CPU:NNN`".to_string())?;
    let target = parse_u32(&f[i + 5..], "target CPU")?;
    let mut task = f[..i].trim_end();
    if let Some(j) = task.rfind(" success=") {
        task = &task[..j];
    }
    let (comm, pid) = comm_pid(task)?;
    Ok(Rec::Wake { kind: wake_kind(event), comm, pid, target })
}

fn cpu_token(t: &str) -> Option<u32> {
    let inner = t.strip_prefix('[')?.strip_suffix(']')?;
    if inner.is_empty() || !inner.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    inner.parse().ok()
}

/// Latency flags as trace-cmd prints them: `d..2.`, `.N.1.`, ...
fn is_flags(t: &str) -> bool {
    t.len() <= 8 && t.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'.')
}

fn parse_head(line: &str) -> Result<Head<'_>, String> {
    let toks: Vec<(usize, &str)> = tokens(line).take(64).collect();
    let mut found = None;
    for i in 1..toks.len() {
        let Some(cpu) = cpu_token(toks[i].1) else { continue };
        // The timestamp follows, maybe after the latency flags.
        for j in [i + 1, i + 2] {
            match toks.get(j) {
                Some((_, t)) if t.ends_with(':') && parse_ts(&t[..t.len() - 1]).is_some() => {
                    found = Some((i, cpu, j));
                    break;
                }
                Some((_, t)) if j == i + 1 && is_flags(t) => continue,
                _ => break,
            }
        }
        if found.is_some() {
            break;
        }
    }
    let Some((i, cpu, j)) = found else {
        return Err(match toks.iter().position(|t| cpu_token(t.1).is_some()) {
            Some(i) => match toks.get(i + 1) {
                Some((_, t)) => format!("bad timestamp `{t}` after the CPU; expected SECS.FRAC:"),
                None => "no timestamp after the CPU".to_string(),
            },
            None => "no `[CPU]` column".to_string(),
        });
    };
    let task = line[..toks[i].0].trim();
    let (comm, pid) = task
        .rsplit_once('-')
        .ok_or_else(|| format!("bad task `{task}`; expected COMM-PID"))?;
    let tid = parse_pid(pid, "pid").map_err(|e| format!("{e} in `{task}`"))?;
    let ts_tok = toks[j].1;
    let ts = parse_ts(&ts_tok[..ts_tok.len() - 1]).expect("checked above");
    let Some(&(ev_off, ev_tok)) = toks.get(j + 1) else {
        return Err("no event name after the timestamp".into());
    };
    let ev = ev_tok.strip_suffix(':').ok_or_else(|| format!("bad event name `{ev_tok}`; expected `EVENT:`"))?;
    let event = ev.rsplit(':').next().unwrap_or(ev);
    if event.is_empty() {
        return Err(format!("bad event name `{ev_tok}`; expected `EVENT:`"));
    }
    let fields = line[ev_off + ev_tok.len()..].trim();
    Ok(Head { comm, tid, cpu, ts, event, fields })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::prev_state;

    #[test]
    fn heads() {
        let h = parse_head("     rcu_preempt-15    [000]     6.646671: sched_switch:         prev_comm=x").unwrap();
        assert_eq!((h.comm, h.tid, h.cpu, h.ts, h.event, h.fields), ("rcu_preempt", 15, 0, 6_646_671_000, "sched_switch", "prev_comm=x"));
        let h = parse_head("  kworker/u4:1-mm-42 [001] d..2. 12.000000001: sched_waking: a").unwrap();
        assert_eq!((h.comm, h.tid, h.cpu, h.ts), ("kworker/u4:1-mm", 42, 1, 12_000_000_001));
        let h = parse_head("          <idle>-0     [001]     6.645020: cpu_idle:  state=1 cpu_id=1").unwrap();
        assert_eq!((h.comm, h.tid), ("<idle>", 0));
        assert!(parse_head("sh-96 [000] 6.64x: sched_switch: a").is_err());
        assert!(parse_head("sh96 [000] 6.64: sched_switch: a").is_err());
    }

    #[test]
    fn plugin_formats() {
        let r = parse_plugin_switch("lto cgu:1:96 [120] R+ ==> swapper/1:0 [120]").unwrap();
        assert_eq!(
            r,
            Rec::Switch { prev_comm: "lto cgu:1", prev_pid: 96, state: prev_state::RUNNABLE, next_comm: "swapper/1", next_pid: 0 }
        );
        let r = parse_plugin_wake("sched_wakeup", "ksoftirqd/1:16 [120] success=1 CPU:001").unwrap();
        assert_eq!(r, Rec::Wake { kind: super::super::WakeKind::Wakeup, comm: "ksoftirqd/1", pid: 16, target: 1 });
        assert!(parse_plugin_wake("sched_wakeup", "ksoftirqd/1:16 [120]").is_err());
        assert!(parse_plugin_switch("a:1 [120] S => b:2 [120]").is_err());
    }
}
