// SPDX-License-Identifier: GPL-2.0-only
//! `perf script` text of a `perf sched record`.
//!
//! An event line is `COMM PID [CPU] SECS.FRAC: [PERIOD] SYSTEM:EVENT: FIELDS`:
//! COMM may hold spaces; PID may be `PID/TID` (`-F pid,tid`); the timestamp
//! has 6 digits (us) or 9 (`--ns`); some perf versions print the sample
//! period before the event name, and some the event without its system.
//! FIELDS are the kernel's `field=value` print format.
//!
//! With `perf script --header -I`, the comment lines `# nrcpus avail : N`,
//! `# hostname : NAME` and `# CPU n: Core ID c, Die ID d, Socket ID s` (older
//! perf: without the die) describe the machine.

use super::{parse_raw_fields, parse_ts, Head, HeaderFact, Parsed, Rec, TextFormat};

pub(crate) struct PerfScript;

impl TextFormat for PerfScript {
    const TOOL: &'static str = "perf script";
    const SHAPE: &'static str = "`COMM PID [CPU] SECS.FRAC: EVENT: FIELDS`";

    fn parse_line(line: &str) -> Result<Parsed<'_>, String> {
        let t = line.trim();
        if t.is_empty() {
            return Ok(Parsed::Meta(None));
        }
        if let Some(c) = t.strip_prefix('#') {
            return Ok(Parsed::Meta(header_fact(c.trim())));
        }
        match parse_head(line) {
            Ok(h) => Ok(Parsed::Event(h)),
            // A call-chain line (recorded with -g): `\t ffffffff8108a2b1 schedule+0x41 ([kernel.kallsyms])`.
            Err(_) if is_callchain(line) => Ok(Parsed::Meta(None)),
            Err(e) => Err(e),
        }
    }

    fn parse_event<'a>(h: &Head<'a>) -> Result<Rec<'a>, String> {
        parse_raw_fields(h.event, h.fields)
    }
}

fn is_callchain(line: &str) -> bool {
    let mut t = tokens(line);
    line.starts_with(char::is_whitespace)
        && t.next().is_some_and(|(_, a)| a.len() >= 4 && a.bytes().all(|c| c.is_ascii_hexdigit()))
        && t.next().is_some()
}

fn header_fact(c: &str) -> Option<HeaderFact> {
    if let Some(v) = c.strip_prefix("nrcpus avail") {
        let v = v.trim_start().strip_prefix(':')?.trim();
        return v.parse().ok().map(HeaderFact::NrCpus);
    }
    if let Some(v) = c.strip_prefix("hostname") {
        let v = v.trim_start().strip_prefix(':')?.trim();
        return (!v.is_empty()).then(|| HeaderFact::Hostname(v.to_string()));
    }
    // "CPU 0: Core ID 0, Die ID 0, Socket ID 0"
    let rest = c.strip_prefix("CPU ")?;
    let (cpu, rest) = rest.split_once(':')?;
    let cpu: u32 = cpu.trim().parse().ok()?;
    let mut core = None;
    let mut die = 0;
    let mut socket = None;
    for part in rest.split(',') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("Core ID ") {
            core = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("Die ID ") {
            die = v.trim().parse().ok()?;
        } else if let Some(v) = part.strip_prefix("Socket ID ") {
            socket = v.trim().parse().ok();
        }
    }
    Some(HeaderFact::Topo(cpu, core?, die, socket?))
}

fn is_cpu_token(t: &str) -> Option<u32> {
    let inner = t.strip_prefix('[')?.strip_suffix(']')?;
    if inner.is_empty() || !inner.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    inner.parse().ok()
}

fn pid_token(t: &str) -> Option<u32> {
    // perf prints `:-1 -1` for a thread it no longer knows (one that just
    // exited): taken as pid 0, an unknown task.
    if t == "-1" {
        return Some(0);
    }
    // "PID" or "PID/TID": the task is the thread.
    let tid = t.rsplit('/').next()?;
    if tid.is_empty() || !tid.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if t.contains('/') {
        let pid = t.split('/').next()?;
        if !pid.bytes().all(|c| c.is_ascii_digit() || c == b'-') {
            return None;
        }
    }
    tid.parse().ok()
}

/// Split a `perf script` event line.
fn parse_head(line: &str) -> Result<Head<'_>, String> {
    // Tokens with their byte offsets.
    let toks: Vec<(usize, &str)> = tokens(line).take(64).collect();
    // The first `[CPU]` token followed by a timestamp and preceded by a pid.
    let mut found = None;
    for i in 1..toks.len().saturating_sub(1) {
        if let (Some(cpu), Some(ts)) = (is_cpu_token(toks[i].1), toks[i + 1].1.strip_suffix(':')) {
            if let Some(tid) = pid_token(toks[i - 1].1) {
                found = Some((i, cpu, tid, ts));
                break;
            }
        }
    }
    let Some((i, cpu, tid, ts_text)) = found else {
        return Err(if toks.iter().any(|t| is_cpu_token(t.1).is_some()) {
            "no `PID [CPU] SECS.FRAC:` sequence".to_string()
        } else {
            "no `[CPU]` column (record with the CPU field, the default of perf script)".to_string()
        });
    };
    let ts = parse_ts(ts_text).ok_or_else(|| format!("bad timestamp `{ts_text}`; expected SECS.FRAC with 1 to 9 digits"))?;
    let comm = line[..toks[i - 1].0].trim();
    // An optional sample period, then the event name ending in ':'.
    let mut j = i + 2;
    if toks.get(j).is_some_and(|t| t.1.bytes().all(|c| c.is_ascii_digit())) {
        j += 1;
    }
    let Some(&(ev_off, ev_tok)) = toks.get(j) else {
        return Err("no event name after the timestamp".into());
    };
    let ev = ev_tok
        .strip_suffix(':')
        .ok_or_else(|| format!("bad event name `{ev_tok}`; expected `SYSTEM:EVENT:`"))?;
    let event = ev.rsplit(':').next().unwrap_or(ev);
    if event.is_empty() {
        return Err(format!("bad event name `{ev_tok}`; expected `SYSTEM:EVENT:`"));
    }
    let fields = line[ev_off + ev_tok.len()..].trim();
    Ok(Head { comm, tid, cpu, ts, event, fields })
}

pub(crate) fn tokens(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let b = line.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            return None;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        Some((start, &line[start..i]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads() {
        let h = parse_head("       lto cgu.1  8243 [001]   486.866787:       sched:sched_wakeup: comm=dpkg pid=7732 prio=120 target_cpu=001").unwrap();
        assert_eq!((h.comm, h.tid, h.cpu, h.ts, h.event), ("lto cgu.1", 8243, 1, 486_866_787_000, "sched_wakeup"));
        assert_eq!(h.fields, "comm=dpkg pid=7732 prio=120 target_cpu=001");
        let h = parse_head("perf  8234/8235  [000]   486.864470123:          1 sched_switch: prev_comm=a").unwrap();
        assert_eq!((h.comm, h.tid, h.cpu, h.ts, h.event), ("perf", 8235, 0, 486_864_470_123, "sched_switch"));
        let h = parse_head("             :-1    -1 [001]   551.668287:       sched:sched_switch: prev_comm=sed").unwrap();
        assert_eq!((h.comm, h.tid, h.cpu), (":-1", 0, 1));
        assert!(parse_head("perf 12 486.8: sched:sched_switch: x").is_err());
        assert!(parse_head("perf 12 [000] 486.8x: sched:sched_switch: x").is_err());
    }

    #[test]
    fn callchains_are_not_events() {
        assert!(is_callchain("\t    ffffffff8108a2b1 schedule+0x41 ([kernel.kallsyms])"));
        assert!(!is_callchain("perf 12 [000] 1.000000: sched:sched_switch: x"));
        assert!(matches!(PerfScript::parse_line("\t ffffffff8108a2b1 schedule+0x41 ([kernel.kallsyms])"), Ok(Parsed::Meta(None))));
    }

    #[test]
    fn header_lines() {
        assert_eq!(header_fact("CPU 3: Core ID 1, Die ID 0, Socket ID 2"), Some(HeaderFact::Topo(3, 1, 0, 2)));
        assert_eq!(header_fact("CPU 3: Core ID 1, Socket ID 2"), Some(HeaderFact::Topo(3, 1, 0, 2)));
        assert_eq!(header_fact("nrcpus avail : 8"), Some(HeaderFact::NrCpus(8)));
        assert_eq!(header_fact("CPU cache info:"), None);
    }
}
