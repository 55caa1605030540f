// SPDX-License-Identifier: GPL-2.0-only
//! The trace-cmd report importer on a real recording: trace-cmd 3.1 in a
//! QEMU guest running Debian's 6.1 kernel (scripts/record-trace-cmd-vm.sh),
//! reported twice, with libtraceevent's plugin formats and raw (-R).

use std::collections::BTreeSet;

use warmcore_trace::event::prev_state;
use warmcore_trace::import::{Format, ImportReport};
use warmcore_trace::{ids, Trace, Window};

mod import_common;
use import_common::{all_events, count, fixture, text, val};


fn import(name: &str, data: &[u8]) -> warmcore_trace::Result<(ImportReport, Trace)> {
    import_common::import(Format::TraceCmd, name, data)
}

fn lines_of<'a>(text: &'a str, event: &str) -> Vec<&'a str> {
    let tag = format!(" {event}: ");
    text.lines().filter(|l| l.contains(&tag)).collect()
}

#[test]
fn plugin_and_raw_reports_of_one_recording() {
    let plugin = text("trace-cmd-forks.txt.zst");
    let raw = text("trace-cmd-forks-raw.txt.zst");
    let (rp, tp) = import("trace-cmd-forks.txt", plugin.as_bytes()).unwrap();
    let (rr, tr) = import("trace-cmd-forks-raw.txt", raw.as_bytes()).unwrap();
    let ep = all_events(&tp);
    // The plugin formats and the raw fields give the very same events.
    assert_eq!(ep, all_events(&tr));
    assert_eq!(rp, rr);
    assert_eq!(tp.processes(), tr.processes());

    // Counts from the raw text.
    let switches = lines_of(&raw, "sched_switch");
    assert_eq!(count(&ep, ids::CTX_SWITCH), switches.len());
    assert_eq!(count(&ep, ids::CTX_SWITCH), lines_of(&plugin, "sched_switch").len());
    // Raw prev_state: bit 0x1 S, 0x2 D, 0x80 I block; 0x10 X and 0x20 Z are dead.
    let st = |l: &&str| val(l, "prev_state");
    let leaving = || switches.iter().filter(|l| val(l, "prev_pid") != 0);
    assert_eq!(count(&ep, ids::BLOCK), leaving().filter(|l| st(l) & (0x1 | 0x80) != 0).count());
    assert_eq!(count(&ep, ids::BLOCK_IO), leaving().filter(|l| st(l) & 0x2 != 0).count());
    let dead = ep.iter().filter(|e| e.ev.id == ids::CTX_SWITCH && e.ev.b() == prev_state::DEAD).count();
    assert_eq!(dead, switches.iter().filter(|l| st(l) & 0x30 != 0).count());
    assert_eq!(count(&ep, ids::WAKEUP), lines_of(&raw, "sched_waking").len());
    assert_eq!(count(&ep, ids::WAKEUP_NEW), lines_of(&raw, "sched_wakeup_new").len());
    assert_eq!(count(&ep, ids::FORK), lines_of(&raw, "sched_process_fork").len());
    assert_eq!(count(&ep, ids::EXEC), lines_of(&raw, "sched_process_exec").len());
    assert_eq!(count(&ep, ids::EXIT), lines_of(&raw, "sched_process_exit").len());
    assert_eq!(count(&ep, ids::MIGRATE), lines_of(&raw, "sched_migrate_task").len());
    let idle = lines_of(&raw, "cpu_idle");
    let exits = idle.iter().filter(|l| val(l, "state") == u32::MAX).count();
    assert_eq!(count(&ep, ids::IDLE_EXIT), exits);
    assert_eq!(count(&ep, ids::IDLE_ENTER), idle.len() - exits);
    // Skipped: what was not imported, and sched_wakeup (its sched_waking counted).
    assert_eq!(rp.skipped.get("sched_process_wait").copied(), Some(lines_of(&raw, "sched_process_wait").len() as u64));
    assert_eq!(
        rp.skipped.get("sched_wakeup (counted by its sched_waking)").copied(),
        Some(lines_of(&raw, "sched_wakeup").len() as u64)
    );

    // cpus=N gives the machine.
    let n: u32 = raw.lines().find_map(|l| l.strip_prefix("cpus=")).unwrap().trim().parse().unwrap();
    assert_eq!(tp.nr_cpus(), n);
    for cpu in 0..tp.nr_cpus() {
        let ts: Vec<u64> = tp.cpu_events(cpu, Window::ALL).map(|e| e.unwrap().ts).collect();
        assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    }

    // The workload: `sh -c 'for i in $(seq 1 12); do /bin/true; ls / > /dev/null; done'`
    // under busybox: the shell execs /bin/sh, then forks 25 children (the
    // command substitution, 12 `true` and 12 `ls`); `true` execs, while
    // busybox runs `ls` and `seq` in the forked child without exec.
    let execs = |file: &str| -> Vec<u32> {
        lines_of(&raw, "sched_process_exec")
            .iter()
            .filter(|l| l.contains(&format!("filename={file} ")))
            .map(|l| val(l, "pid"))
            .collect()
    };
    let sh = execs("/bin/sh");
    assert_eq!(sh.len(), 1);
    let trues = execs("/bin/true");
    assert_eq!(trues.len(), 12);
    for p in &trues {
        assert_eq!(tp.processes()[p].ppid, sh[0]);
        assert_eq!(tp.processes()[p].comm, "true");
    }
    let children: Vec<u32> = ep.iter().filter(|e| e.ev.id == ids::FORK && e.ev.a() == sh[0]).map(|e| e.ev.pid).collect();
    assert_eq!(children.len(), 25);
    assert!(children.iter().all(|c| tp.processes()[c].ppid == sh[0]));
    assert_eq!(tp.processes()[&sh[0]].comm, "sh");
    let exec_comms: BTreeSet<String> = ep.iter().filter(|e| e.ev.id == ids::EXEC).map(|e| e.ev.comm()).collect();
    assert_eq!(exec_comms, ["sh", "true"].iter().map(|s| s.to_string()).collect());
    // Fork links, from the raw fields.
    let want: BTreeSet<(u32, u32)> =
        lines_of(&raw, "sched_process_fork").iter().map(|l| (val(l, "child_pid"), val(l, "parent_pid"))).collect();
    let got: BTreeSet<(u32, u32)> = ep.iter().filter(|e| e.ev.id == ids::FORK).map(|e| (e.ev.pid, e.ev.a())).collect();
    assert_eq!(got, want);
}

#[test]
fn plugin_state_letters() {
    // libtraceevent's plugin prints the kernel's 0x80 (I) as W and a
    // preemption (0x100) as R: check against the raw numbers line by line.
    let plugin = text("trace-cmd-forks.txt.zst");
    let raw = text("trace-cmd-forks-raw.txt.zst");
    let p = lines_of(&plugin, "sched_switch");
    let r = lines_of(&raw, "sched_switch");
    assert_eq!(p.len(), r.len());
    let mut seen = BTreeSet::new();
    for (pl, rl) in p.iter().zip(&r) {
        let letters = pl.split(" ==> ").next().unwrap().rsplit(' ').next().unwrap();
        seen.insert((letters.to_string(), val(rl, "prev_state")));
    }
    assert!(seen.contains(&("W".to_string(), 128)), "{seen:?}");
    assert!(seen.contains(&("S".to_string(), 1)), "{seen:?}");
}

const SAMPLE: &str = "\
cpus=2
       trace-cmd-93    [000]     8.271261: sched_switch:         trace-cmd:93 [120] R ==> rcu_preempt:15 [120]
     rcu_preempt-15    [000]     8.271425: sched_switch:         rcu_preempt:15 [120] W ==> trace-cmd:93 [120]
       trace-cmd-94    [001]     8.291620: sched_waking:         comm=rcu_preempt pid=15 prio=120 target_cpu=000
       trace-cmd-94    [001]     8.292186: sched_wakeup:         rcu_preempt:15 [120] CPU:001
";

fn err(data: &str) -> String {
    import("in.txt", data.as_bytes()).err().expect("an error").to_string()
}

#[test]
fn sample() {
    let (r, t) = import("in.txt", SAMPLE.as_bytes()).unwrap();
    let evs = all_events(&t);
    assert_eq!(evs.len(), 4); // 2 CTX_SWITCH, 1 BLOCK, 1 WAKEUP
    assert_eq!((evs[0].ev.id, evs[0].ev.pid, evs[0].ev.a(), evs[0].ev.b()), (ids::CTX_SWITCH, 93, 15, prev_state::RUNNABLE));
    assert_eq!(r.skipped.len(), 1);
    // Without sched_waking, sched_wakeup makes the WAKEUP.
    let only_wakeup: String = SAMPLE.lines().filter(|l| !l.contains("sched_waking")).map(|l| format!("{l}\n")).collect();
    let (r, t) = import("in.txt", only_wakeup.as_bytes()).unwrap();
    let w = all_events(&t).into_iter().find(|e| e.ev.id == ids::WAKEUP).unwrap();
    assert_eq!((w.cpu, w.ev.pid, w.ev.a(), w.ev.b()), (1, 15, 1, 94));
    assert!(r.skipped.is_empty());
}

#[test]
fn malformed_lines() {
    assert_eq!(
        err(&SAMPLE.replace("rcu_preempt:15 [120] CPU:001", "rcu_preempt:15 [120]")),
        "in.txt:5: sched_wakeup: no ` CPU:NNN`; expected `COMM:PID [PRIO] CPU:NNN`"
    );
    assert_eq!(
        err(&SAMPLE.replace("R ==> rcu", "R => rcu")),
        "in.txt:2: sched_switch: no ` ==> `; expected `COMM:PID [PRIO] STATE ==> COMM:PID [PRIO]`"
    );
    assert_eq!(
        err(&SAMPLE.replace("trace-cmd:93 [120] R", "trace-cmd:9x3 [120] R")),
        "in.txt:2: sched_switch: bad pid `9x3`; expected an unsigned 32-bit number"
    );
    assert_eq!(
        err(&SAMPLE.replace("8.271425:", "8.27142x:")),
        "in.txt:3: bad timestamp `8.27142x:` after the CPU; expected SECS.FRAC:; expected `COMM-PID [CPU] SECS.FRAC: EVENT: FIELDS`"
    );
    let lines: Vec<&str> = SAMPLE.lines().collect();
    assert_eq!(
        err(&format!("{}\n{}\n{}\n", lines[0], lines[2], lines[1])),
        "in.txt:3: event at 8271261000 ns on CPU 0 comes after one at 8271425000 ns on that CPU; expected each CPU's events in time order"
    );
    assert_eq!(
        err(&format!("{}\n{}\n", lines[0], &lines[1][..40])),
        "in.txt:2: bad timestamp `8.27126` after the CPU; expected SECS.FRAC:; \
         expected `COMM-PID [CPU] SECS.FRAC: EVENT: FIELDS` (is this trace-cmd report output?)"
    );
    assert_eq!(
        err(&format!("{}\n{}\n", lines[1], &lines[2][..42])),
        "in.txt:2: no event name after the timestamp; expected `COMM-PID [CPU] SECS.FRAC: EVENT: FIELDS`"
    );
    assert_eq!(
        err("cpus=x\n"),
        "in.txt:1: bad CPU count `x`; expected `COMM-PID [CPU] SECS.FRAC: EVENT: FIELDS` (is this trace-cmd report output?)"
    );
}

#[test]
fn a_perf_script_file_is_refused() {
    let perf = std::fs::read(fixture("perf-make-j2.txt.zst")).unwrap();
    let e = import("perf.txt", &perf).err().unwrap().to_string();
    // The header comments pass; the first event line has no COMM-PID.
    let first = text("perf-make-j2.txt.zst").lines().position(|l| !l.starts_with('#') && !l.is_empty()).unwrap() + 1;
    assert!(e.starts_with(&format!("perf.txt:{first}: bad task `")), "{e}");
    assert!(e.ends_with("expected COMM-PID; expected `COMM-PID [CPU] SECS.FRAC: EVENT: FIELDS` (is this trace-cmd report output?)"), "{e}");
}
