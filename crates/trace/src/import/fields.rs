// SPDX-License-Identifier: GPL-2.0-only
//! The values of the kernel's `field=value` print format, which `perf
//! script` and `trace-cmd report` share: task states, numbers, pids,
//! timestamps, task names with spaces, and the imported events' fields.

use super::{Rec, WakeKind};
use crate::event::prev_state;

/// The state a sched_switch left its task in, from the kernel's letters
/// (`R`, `R+`, `S`, `D`, `D|K`, `X`, ...) or a raw number.
pub(crate) fn parse_prev_state(s: &str) -> std::result::Result<u32, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty prev_state; expected a task state such as R, S or D".into());
    }
    if let Some(v) = parse_int(s) {
        // Raw values as kernels since 4.14 report them (one bit per state
        // letter of the print format): 0 R, 0x1 S, 0x2 D, 0x4 T, 0x8 t,
        // 0x10 X, 0x20 Z, 0x40 P, 0x80 I; a preempted task reports
        // TASK_REPORT_MAX, the bit above the last (0x100 on those kernels).
        return Ok(if v == 0 || v.is_power_of_two() && v >= 0x100 {
            prev_state::RUNNABLE
        } else if v & 0x2 != 0 {
            prev_state::BLOCKED_IO
        } else if v & (0x10 | 0x20) != 0 {
            prev_state::DEAD
        } else {
            prev_state::BLOCKED
        });
    }
    let mut io = false;
    let mut dead = false;
    let mut runnable = false;
    for c in s.chars() {
        match c {
            'R' | '+' => runnable = true,
            'D' => io = true,
            'X' | 'Z' => dead = true,
            // S sleeping, T stopped, t traced, P parked, I idle, K wakekill,
            // W waking, N noload: blocked for our purpose. libtraceevent's
            // sched_switch plugin prints the bits 0x40 and 0x80 (parked and
            // idle on kernels since 4.14) as `x` and `W`: blocked too.
            'S' | 'T' | 't' | 'P' | 'I' | 'K' | 'W' | 'N' | 'x' | '|' => {}
            _ => return Err(format!("unknown prev_state `{s}`; expected task state letters such as R, R+, S, D, X, Z")),
        }
    }
    Ok(if dead {
        prev_state::DEAD
    } else if io {
        prev_state::BLOCKED_IO
    } else if runnable && s.starts_with('R') {
        prev_state::RUNNABLE
    } else {
        prev_state::BLOCKED
    })
}

/// A decimal (or 0x-hex) unsigned number.
pub(crate) fn parse_int(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).ok();
    }
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

pub(crate) fn parse_u32(s: &str, what: &str) -> std::result::Result<u32, String> {
    let t = s.trim();
    parse_int(t)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| format!("bad {what} `{t}`; expected an unsigned 32-bit number"))
}

/// A pid, which tools print as a signed number (-1 at times for "none").
pub(crate) fn parse_pid(s: &str, what: &str) -> std::result::Result<u32, String> {
    let t = s.trim();
    if t == "-1" {
        return Ok(0);
    }
    parse_u32(t, what)
}

/// `SECS.FRAC` with 1 to 9 fractional digits (us from plain `perf script`,
/// ns from `perf script --ns` or `trace-cmd report -t`), as ns.
pub(crate) fn parse_ts(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    if secs.is_empty() || frac.is_empty() || frac.len() > 9 {
        return None;
    }
    if !secs.bytes().all(|c| c.is_ascii_digit()) || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let s: u64 = secs.parse().ok()?;
    let f: u64 = frac.parse().ok()?;
    let f = f * 10u64.pow(9 - frac.len() as u32);
    s.checked_mul(1_000_000_000)?.checked_add(f)
}

/// The value of `key=` in `fields`, searching from `from`: up to the next
/// `next=` key (for values with spaces, such as task names), or else up to
/// the next whitespace. Returns the value and where the search may go on.
pub(crate) fn field<'a>(fields: &'a str, key: &str, next: Option<&str>, from: usize) -> Option<(&'a str, usize)> {
    let start = find_key(fields, key, from)? + key.len() + 1;
    let rest = &fields[start..];
    let end = match next.and_then(|n| find_key(fields, n, start)) {
        Some(n) => n - start,
        None => rest.find(char::is_whitespace).unwrap_or(rest.len()),
    };
    let v = rest[..end].trim_end();
    Some((v, start + end))
}

/// Where ` key=` (or `key=` at the start) is, at or after `from`.
fn find_key(s: &str, key: &str, from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(off) = s.get(i..)?.find(key) {
        let at = i + off;
        let after = at + key.len();
        if s[after..].starts_with('=') && (at == 0 || s.as_bytes()[at - 1].is_ascii_whitespace()) {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

pub(crate) fn need<'a>(fields: &'a str, key: &str, next: Option<&str>, from: usize) -> std::result::Result<(&'a str, usize), String> {
    field(fields, key, next, from).ok_or_else(|| format!("no `{key}=` field"))
}

/// The comm a task has after exec: the base name of the file, at most 15
/// bytes (TASK_COMM_LEN - 1), as the kernel sets it.
pub(crate) fn exec_comm(filename: &str) -> &str {
    let base = filename.rsplit('/').next().unwrap_or(filename);
    let mut end = base.len().min(15);
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    &base[..end]
}

/// The events of `perf script` and `trace-cmd report` that share the kernel's
/// `field=value` print format (the same in both tools).
pub(crate) fn parse_raw_fields<'a>(event: &str, f: &'a str) -> std::result::Result<Rec<'a>, String> {
    Ok(match event {
        "sched_switch" => {
            let (prev_comm, i) = need(f, "prev_comm", Some("prev_pid"), 0)?;
            let (prev_pid, i) = need(f, "prev_pid", None, i)?;
            let (state, i) = need(f, "prev_state", None, i)?;
            let (next_comm, i) = need(f, "next_comm", Some("next_pid"), i)?;
            let (next_pid, _) = need(f, "next_pid", None, i)?;
            Rec::Switch {
                prev_comm,
                prev_pid: parse_pid(prev_pid, "prev_pid")?,
                state: parse_prev_state(state)?,
                next_comm,
                next_pid: parse_pid(next_pid, "next_pid")?,
            }
        }
        "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => {
            let (comm, i) = need(f, "comm", Some("pid"), 0)?;
            let (pid, i) = need(f, "pid", None, i)?;
            let (target, _) = need(f, "target_cpu", None, i)?;
            Rec::Wake {
                kind: wake_kind(event),
                comm,
                pid: parse_pid(pid, "pid")?,
                target: parse_u32(target, "target_cpu")?,
            }
        }
        "sched_process_fork" => {
            // The print format says comm= pid=; raw records (trace-cmd
            // report -R) name the fields parent_comm= parent_pid=.
            let (parent_comm, i) = match field(f, "comm", Some("pid"), 0) {
                Some(v) => v,
                None => need(f, "parent_comm", Some("parent_pid"), 0)?,
            };
            let (parent, i) = match field(f, "pid", None, i) {
                Some(v) => v,
                None => need(f, "parent_pid", None, i)?,
            };
            let (child_comm, i) = need(f, "child_comm", Some("child_pid"), i)?;
            let (child, _) = need(f, "child_pid", None, i)?;
            Rec::Fork {
                parent_comm,
                parent: parse_pid(parent, "pid")?,
                child_comm,
                child: parse_pid(child, "child_pid")?,
            }
        }
        "sched_process_exec" => {
            let (filename, i) = need(f, "filename", Some("pid"), 0)?;
            let (pid, _) = need(f, "pid", None, i)?;
            Rec::Exec { comm: exec_comm(filename), pid: parse_pid(pid, "pid")? }
        }
        "sched_process_exit" => {
            let (comm, i) = need(f, "comm", Some("pid"), 0)?;
            let (pid, _) = need(f, "pid", None, i)?;
            Rec::Exit { comm, pid: parse_pid(pid, "pid")? }
        }
        "sched_migrate_task" => {
            let (comm, i) = need(f, "comm", Some("pid"), 0)?;
            let (pid, i) = need(f, "pid", None, i)?;
            let (orig, i) = need(f, "orig_cpu", None, i)?;
            let (dest, _) = need(f, "dest_cpu", None, i)?;
            Rec::Migrate {
                comm,
                pid: parse_pid(pid, "pid")?,
                orig: parse_u32(orig, "orig_cpu")?,
                dest: parse_u32(dest, "dest_cpu")?,
            }
        }
        "cpu_frequency" => {
            let (state, i) = need(f, "state", None, 0)?;
            let (cpu, _) = need(f, "cpu_id", None, i)?;
            Rec::Freq { khz: parse_u32(state, "state (kHz)")?, cpu: parse_u32(cpu, "cpu_id")? }
        }
        "cpu_idle" => {
            let (state, i) = need(f, "state", None, 0)?;
            let (cpu, _) = need(f, "cpu_id", None, i)?;
            Rec::Idle { state: parse_u32(state, "state")?, cpu: parse_u32(cpu, "cpu_id")? }
        }
        _ => return Err(format!("event {event} is not imported")),
    })
}

pub(crate) fn wake_kind(event: &str) -> WakeKind {
    match event {
        "sched_waking" => WakeKind::Waking,
        "sched_wakeup_new" => WakeKind::WakeupNew,
        _ => WakeKind::Wakeup,
    }
}

/// power:cpu_idle's state for "leaving idle" (PWR_EVENT_EXIT, -1 as u32).
pub const IDLE_EXIT_STATE: u32 = u32::MAX;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(parse_ts("481.015225"), Some(481_015_225_000));
        assert_eq!(parse_ts("481.015225414"), Some(481_015_225_414));
        assert_eq!(parse_ts("0.5"), Some(500_000_000));
        assert_eq!(parse_ts("481.0152254141"), None);
        assert_eq!(parse_ts("481"), None);
        assert_eq!(parse_ts("-1.5"), None);
        assert_eq!(parse_ts("99999999999999999999.1"), None);
    }

    #[test]
    fn states() {
        assert_eq!(parse_prev_state("R"), Ok(prev_state::RUNNABLE));
        assert_eq!(parse_prev_state("R+"), Ok(prev_state::RUNNABLE));
        assert_eq!(parse_prev_state("S"), Ok(prev_state::BLOCKED));
        assert_eq!(parse_prev_state("I"), Ok(prev_state::BLOCKED));
        assert_eq!(parse_prev_state("D"), Ok(prev_state::BLOCKED_IO));
        assert_eq!(parse_prev_state("D|K"), Ok(prev_state::BLOCKED_IO));
        assert_eq!(parse_prev_state("X"), Ok(prev_state::DEAD));
        assert_eq!(parse_prev_state("Z"), Ok(prev_state::DEAD));
        assert_eq!(parse_prev_state("0"), Ok(prev_state::RUNNABLE));
        assert_eq!(parse_prev_state("2"), Ok(prev_state::BLOCKED_IO));
        assert_eq!(parse_prev_state("128"), Ok(prev_state::BLOCKED));
        assert_eq!(parse_prev_state("256"), Ok(prev_state::RUNNABLE));
        assert_eq!(parse_prev_state("16"), Ok(prev_state::DEAD));
        assert!(parse_prev_state("Q").is_err());
    }

    #[test]
    fn fields_with_spaces() {
        let f = "comm=lto cgu.1 pid=8243 prio=120 target_cpu=001";
        let (c, i) = field(f, "comm", Some("pid"), 0).unwrap();
        assert_eq!(c, "lto cgu.1");
        assert_eq!(field(f, "pid", None, i).unwrap().0, "8243");
        assert_eq!(field(f, "target_cpu", None, i).unwrap().0, "001");
        assert!(field(f, "cpu", None, 0).is_none());
    }

    #[test]
    fn exec_comm_is_the_base_name() {
        assert_eq!(exec_comm("/usr/lib/gcc/x86_64-linux-gnu/12/cc1"), "cc1");
        assert_eq!(exec_comm("/x/a-very-long-program-name"), "a-very-long-pro");
    }
}
