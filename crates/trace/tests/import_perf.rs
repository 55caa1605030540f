// SPDX-License-Identifier: GPL-2.0-only
//! The perf script importer on real recordings (fixtures/, made by
//! scripts/record-fixtures.sh) and on malformed input. The expected facts are
//! read from the text with plain string searches, not with the importer.

use std::collections::BTreeSet;

use warmcore_trace::import::{import_path, Format, ImportOptions, ImportReport};
use warmcore_trace::event::prev_state;
use warmcore_trace::{ids, CpuEvent, Trace, Window};

mod import_common;
use import_common::{all_events, count, fixture, import, text, val};


/// Event lines of the text, for an event name (`sched:NAME:`).
fn lines_of<'a>(text: &'a str, event: &str) -> Vec<&'a str> {
    let tag = format!(" sched:{event}: ");
    text.lines().filter(|l| !l.starts_with('#') && l.contains(&tag)).collect()
}

fn check_counts(text: &str, evs: &[CpuEvent]) {
    let switches = lines_of(text, "sched_switch");
    assert_eq!(count(evs, ids::CTX_SWITCH), switches.len());
    let state = |s: &str| switches.iter().filter(|l| val(l, "prev_pid") != 0 && l.contains(&format!(" prev_state={s} "))).count();
    // S and I (idle kernel threads) block; D blocks on I/O.
    assert_eq!(count(evs, ids::BLOCK), state("S") + state("I"));
    assert_eq!(count(evs, ids::BLOCK_IO), state("D"));
    assert_eq!(count(evs, ids::WAKEUP), lines_of(text, "sched_waking").len());
    assert_eq!(count(evs, ids::WAKEUP_NEW), lines_of(text, "sched_wakeup_new").len());
    assert_eq!(count(evs, ids::FORK), lines_of(text, "sched_process_fork").len());
    assert_eq!(count(evs, ids::EXEC), lines_of(text, "sched_process_exec").len());
    assert_eq!(count(evs, ids::EXIT), lines_of(text, "sched_process_exit").len());
    assert_eq!(count(evs, ids::MIGRATE), lines_of(text, "sched_migrate_task").len());
    let idle: Vec<&str> = text.lines().filter(|l| l.contains(" power:cpu_idle: ")).collect();
    let exits = idle.iter().filter(|l| l.contains("state=4294967295")).count();
    assert_eq!(count(evs, ids::IDLE_EXIT), exits);
    assert_eq!(count(evs, ids::IDLE_ENTER), idle.len() - exits);
}

fn check_time_order(t: &Trace) {
    for cpu in 0..t.nr_cpus() {
        let ts: Vec<u64> = t.cpu_events(cpu, Window::ALL).map(|e| e.unwrap().ts).collect();
        assert!(ts.windows(2).all(|w| w[0] <= w[1]), "CPU {cpu} out of order");
    }
    let all = all_events(t);
    assert!(all.windows(2).all(|w| w[0].ev.ts <= w[1].ev.ts));
}

/// (child, parent) of every fork line.
fn forks(text: &str) -> BTreeSet<(u32, u32)> {
    lines_of(text, "sched_process_fork").iter().map(|l| (val(l, "child_pid"), val(l, "pid"))).collect()
}

/// child -> parent, from the fork lines.
fn parents(text: &str) -> std::collections::BTreeMap<u32, u32> {
    forks(text).into_iter().collect()
}

/// The first exec of the recording: (pid, file).
fn first_exec(text: &str) -> (u32, String) {
    let l = lines_of(text, "sched_process_exec")[0];
    let file = l.split("filename=").nth(1).unwrap().split_whitespace().next().unwrap();
    (val(l, "pid"), file.to_string())
}

/// pids that exec'd a file of this name.
fn execs(text: &str, file: &str) -> Vec<u32> {
    lines_of(text, "sched_process_exec")
        .iter()
        .filter(|l| l.contains(&format!("filename={file} ")))
        .map(|l| val(l, "pid"))
        .collect()
}

#[test]
fn make_j2_recording() {
    let text = text("perf-make-j2.txt.zst");
    let raw = std::fs::read(fixture("perf-make-j2.txt.zst")).unwrap();
    let (report, t) = import(Format::PerfScript, "perf-make-j2.txt.zst", &raw).unwrap();
    let evs = all_events(&t);
    check_counts(&text, &evs);
    check_time_order(&t);
    assert_eq!(report.events as usize, evs.len());

    // Skipped lines by reason: the events not imported, and each sched_wakeup
    // (its sched_waking made the WAKEUP).
    let runtime = text.lines().filter(|l| l.contains(" sched:sched_stat_runtime: ")).count() as u64;
    assert_eq!(report.skipped.get("sched_stat_runtime"), Some(&runtime));
    let wakeups = lines_of(&text, "sched_wakeup").len() as u64;
    assert_eq!(report.skipped.get("sched_wakeup (counted by its sched_waking)"), Some(&wakeups));

    // The header's machine: `# CPU n: Core ID c, Die ID d, Socket ID s`.
    let topo: Vec<&str> = text.lines().filter(|l| l.starts_with("# CPU ") && l.contains("Core ID")).collect();
    assert_eq!(t.nr_cpus() as usize, topo.len());
    assert_eq!(t.header.machine.nr_cores(), topo.len()); // one thread a core on this machine
    let host = text.lines().find_map(|l| l.strip_prefix("# hostname : ")).unwrap();
    assert_eq!(t.header.machine.name, host.trim());
    match &t.header.provenance {
        warmcore_trace::Provenance::Import { tool, input } => {
            assert_eq!((tool.as_str(), input.as_str()), ("perf script", "perf-make-j2.txt.zst"));
        }
        p => panic!("provenance {p:?}"),
    }

    // --ns: the first event's timestamp to the ns.
    let first = text.lines().find(|l| l.contains(" sched:sched_switch: ")).unwrap();
    let ts_text = first.split("]").nth(1).unwrap().split(':').next().unwrap().trim();
    let (s, f) = ts_text.split_once('.').unwrap();
    assert_eq!(f.len(), 9);
    let want_ts: u64 = s.parse::<u64>().unwrap() * 1_000_000_000 + f.parse::<u64>().unwrap();
    let first_switch = evs.iter().find(|e| e.ev.id == ids::CTX_SWITCH).unwrap();
    assert_eq!(first_switch.ev.ts, want_ts);
    assert_eq!((first_switch.ev.pid, first_switch.ev.a()), (val(first, "prev_pid"), val(first, "next_pid")));

    // Fork links: every fork line is a FORK event and a parent in the table.
    let want = forks(&text);
    let got: BTreeSet<(u32, u32)> = evs.iter().filter(|e| e.ev.id == ids::FORK).map(|e| (e.ev.pid, e.ev.a())).collect();
    assert_eq!(got, want);
    for (child, parent) in &want {
        assert_eq!(t.processes()[child].ppid, *parent);
    }
    // make runs cc; each cc runs cc1 then as. The recording is system-wide
    // (other compilers of the machine may show up): follow make's tree. The
    // workload is the first exec perf records.
    let (make, file) = first_exec(&text);
    assert_eq!(file, "/usr/bin/make");
    let parent = parents(&text);
    let children = |file: &str, of: &[u32]| -> Vec<u32> {
        execs(&text, file).into_iter().filter(|p| parent.get(p).is_some_and(|pp| of.contains(pp))).collect()
    };
    let ccs = children("/usr/bin/cc", &[make]);
    assert_eq!(ccs.len(), 8, "7 compiles and a link");
    for cc in &ccs {
        assert_eq!(t.processes()[cc].ppid, make);
        assert_eq!(t.processes()[cc].comm, "cc");
    }
    let cc1 = children("/usr/lib/gcc/x86_64-linux-gnu/12/cc1", &ccs);
    let asm = children("/usr/bin/as", &ccs);
    assert_eq!((cc1.len(), asm.len()), (7, 7));
    for p in cc1.iter().chain(&asm) {
        assert!(ccs.contains(&t.processes()[p].ppid), "{p}'s parent is a cc");
    }
    let make = vec![make];
    assert_eq!(t.processes()[&make[0]].comm, "make");
    let comms: BTreeSet<&str> = t.processes().values().map(|p| p.comm.as_str()).collect();
    for c in ["make", "cc", "cc1", "as", "collect2", "ld"] {
        assert!(comms.contains(c), "{c} in the process table");
    }
    // EXEC carries the new comm.
    let exec_comms: BTreeSet<String> = evs.iter().filter(|e| e.ev.id == ids::EXEC).map(|e| e.ev.comm()).collect();
    assert!(exec_comms.contains("cc1") && exec_comms.contains("make"));
}

#[test]
fn configure_recording() {
    let text = text("perf-configure.txt.zst");
    let (_, t) = import_path_tmp(Format::PerfScript, "perf-configure.txt.zst");
    let evs = all_events(&t);
    check_counts(&text, &evs);
    check_time_order(&t);
    // No header: a flat machine of (highest CPU + 1) CPUs, named after the input.
    let max_cpu = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split('[').nth(1)?.split(']').next()?.parse::<u32>().ok())
        .max()
        .unwrap();
    assert_eq!(t.nr_cpus(), max_cpu + 1);
    assert_eq!(t.header.machine.name, "perf-configure.txt.zst");
    // Plain perf script: us timestamps.
    assert!(evs.iter().all(|e| e.ev.ts % 1000 == 0));
    // The configure script (the first exec: the workload) forks each tool it runs.
    let (configure, file) = first_exec(&text);
    assert_eq!(file, "./configure");
    let parent = parents(&text);
    for (tool, n) in [("/usr/bin/sed", 8), ("/usr/bin/tr", 8), ("/usr/bin/rm", 4), ("/usr/bin/cc", 4)] {
        let pids: Vec<u32> =
            execs(&text, tool).into_iter().filter(|p| parent.get(p) == Some(&configure)).collect();
        assert_eq!(pids.len(), n, "{tool}");
        for p in pids {
            assert_eq!(t.processes()[&p].ppid, configure, "{tool} {p}");
        }
    }
    assert_eq!(t.processes()[&configure].comm, "configure");
    // Exiting tasks leave the CPU dead: every switch away from a task after
    // its exit event says so.
    let exited: BTreeSet<u32> = evs.iter().filter(|e| e.ev.id == ids::EXIT).map(|e| e.ev.pid).collect();
    let dead: Vec<&CpuEvent> = evs.iter().filter(|e| e.ev.id == ids::CTX_SWITCH && e.ev.b() == prev_state::DEAD).collect();
    assert!(!dead.is_empty());
    assert!(dead.iter().all(|e| exited.contains(&e.ev.pid)));
}

fn import_path_tmp(format: Format, name: &str) -> (ImportReport, Trace) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.wct");
    let r = import_path(format, &fixture(name), &out, ImportOptions { zstd_level: Some(3) }).unwrap();
    (r, Trace::open(&out).unwrap())
}

#[test]
fn file_and_memory_imports_agree() {
    let raw = std::fs::read(fixture("perf-configure.txt.zst")).unwrap();
    let (r1, t1) = import(Format::PerfScript, "perf-configure.txt.zst", &raw).unwrap();
    let (r2, t2) = import_path_tmp(Format::PerfScript, "perf-configure.txt.zst");
    assert_eq!(r1, r2);
    assert_eq!(all_events(&t1), all_events(&t2));
    assert_eq!(t1.processes(), t2.processes());
    // Uncompressed text gives the same.
    let (r3, t3) = import(Format::PerfScript, "perf-configure.txt.zst", text("perf-configure.txt.zst").as_bytes()).unwrap();
    assert_eq!(r1, r3);
    assert_eq!(all_events(&t1), all_events(&t3));
}

const SAMPLE: &str = "\
            make 10068 [000]   553.421637: sched:sched_process_exec: filename=/usr/bin/make pid=10068 old_pid=10068
            make 10068 [000]   553.421700: sched:sched_stat_runtime: comm=make pid=10068 runtime=1000 [ns]
       lto cgu.1 10070 [001]   553.421800:       sched:sched_waking: comm=make pid=10068 prio=120 target_cpu=000
            make 10068 [000]   553.421900:       sched:sched_switch: prev_comm=make prev_pid=10068 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
";

fn err(data: &[u8]) -> String {
    import(Format::PerfScript, "in.txt", data).err().expect("an error").to_string()
}

#[test]
fn sample_with_comm_with_spaces() {
    let (r, t) = import(Format::PerfScript, "in.txt", SAMPLE.as_bytes()).unwrap();
    let evs = all_events(&t);
    assert_eq!(evs.len(), 4); // EXEC, WAKEUP, BLOCK, CTX_SWITCH
    assert_eq!(t.processes()[&10070].comm, "lto cgu.1");
    let w = evs.iter().find(|e| e.ev.id == ids::WAKEUP).unwrap();
    assert_eq!((w.cpu, w.ev.pid, w.ev.a(), w.ev.b()), (1, 10068, 0, 10070));
    assert_eq!(r.skipped.get("sched_stat_runtime"), Some(&1));
    assert_eq!(t.nr_cpus(), 2);
}

#[test]
fn wakeups_come_from_sched_wakeup_without_sched_waking() {
    let data = "\
    a 5 [001] 1.000001: sched:sched_wakeup: comm=b pid=6 prio=120 target_cpu=000
    a 5 [001] 1.000002: sched:sched_wakeup_new: comm=c pid=7 prio=120 target_cpu=001
";
    let (r, t) = import(Format::PerfScript, "in.txt", data.as_bytes()).unwrap();
    let evs = all_events(&t);
    assert_eq!(count(&evs, ids::WAKEUP), 1);
    assert_eq!(count(&evs, ids::WAKEUP_NEW), 1);
    assert!(r.skipped.is_empty());
}

#[test]
fn malformed_lines_give_the_line_and_what_was_expected() {
    let lines: Vec<&str> = SAMPLE.lines().collect();
    // Truncated line.
    let cut = format!("{}\n{}\n", lines[0], &lines[3][..45]);
    assert_eq!(
        err(cut.as_bytes()),
        "in.txt:2: no event name after the timestamp; expected `COMM PID [CPU] SECS.FRAC: EVENT: FIELDS`"
    );
    let cut = format!("{}\n{}\n", lines[0], &lines[3][..38]);
    assert_eq!(
        err(cut.as_bytes()),
        "in.txt:2: no `PID [CPU] SECS.FRAC:` sequence; expected `COMM PID [CPU] SECS.FRAC: EVENT: FIELDS`"
    );
    // Truncated inside the fields of an imported event.
    let cut = format!("{}\n{}\n", lines[0], &lines[3][..120]);
    assert_eq!(err(cut.as_bytes()), "in.txt:2: sched_switch: no `prev_state=` field");
    // Bad number.
    let bad = SAMPLE.replace("prev_pid=10068", "prev_pid=10x68");
    assert_eq!(err(bad.as_bytes()), "in.txt:4: sched_switch: bad prev_pid `10x68`; expected an unsigned 32-bit number");
    let bad = SAMPLE.replace("553.421800:", "553.42180x:");
    assert_eq!(
        err(bad.as_bytes()),
        "in.txt:3: bad timestamp `553.42180x`; expected SECS.FRAC with 1 to 9 digits; expected `COMM PID [CPU] SECS.FRAC: EVENT: FIELDS`"
    );
    let bad = SAMPLE.replace("prev_state=S", "prev_state=Q");
    assert_eq!(
        err(bad.as_bytes()),
        "in.txt:4: sched_switch: unknown prev_state `Q`; expected task state letters such as R, R+, S, D, X, Z"
    );
    // Events not imported are not checked: a broken sched_stat_runtime passes.
    let lenient = SAMPLE.replace("runtime=1000 [ns]", "runtime=??");
    assert!(import(Format::PerfScript, "in.txt", lenient.as_bytes()).is_ok());
    // Out of order on one CPU.
    let swapped = format!("{}\n{}\n{}\n", lines[3], lines[2], lines[0]);
    assert_eq!(
        err(swapped.as_bytes()),
        "in.txt:3: event at 553421637000 ns on CPU 0 comes after one at 553421900000 ns on that CPU; expected each CPU's events in time order"
    );
    // Binary garbage.
    let mut garbage = format!("{}\n", lines[0]).into_bytes();
    garbage.extend_from_slice(&[0xff, 0xfe, 0, 1, 2]);
    assert_eq!(
        err(&garbage),
        "in.txt:2: byte 1 is not UTF-8 text; expected a text line (is this a binary file?)"
    );
    // A huge line.
    let long = format!("{}\n{}\n", lines[0], "x".repeat(100_000));
    assert_eq!(err(long.as_bytes()), "in.txt:2: line longer than 65536 bytes; expected a text line (is this a binary file?)");
    // Empty input, or only comments.
    assert_eq!(err(b""), "in.txt:1: no event lines; expected `COMM PID [CPU] SECS.FRAC: EVENT: FIELDS` lines from perf script");
    // CPU number out of range.
    let bad = SAMPLE.replace("[001]", "[99999]");
    assert_eq!(err(bad.as_bytes()), "in.txt:3: CPU 99999: expected a CPU number below 4096");
}

#[test]
fn a_file_of_another_format_is_refused_on_its_first_line() {
    let tc = std::fs::read(fixture("trace-cmd-forks.txt.zst")).unwrap();
    assert_eq!(
        import(Format::PerfScript, "tc.txt", &tc).err().unwrap().to_string(),
        "tc.txt:1: no `[CPU]` column (record with the CPU field, the default of perf script); \
         expected `COMM PID [CPU] SECS.FRAC: EVENT: FIELDS` (is this perf script output?)"
    );
    let wct = std::fs::read(fixture("schedlog-make-j2/cpu0")).unwrap();
    assert!(import(Format::PerfScript, "cpu0", &wct).err().unwrap().to_string().starts_with("cpu0:1: "));
}

#[test]
fn errors_from_files_name_the_path_and_leave_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.txt");
    std::fs::write(&input, "garbage line\n").unwrap();
    let out = dir.path().join("o.wct");
    let e = import_path(Format::PerfScript, &input, &out, ImportOptions::default()).err().unwrap();
    assert_eq!(e.path, input.display().to_string());
    assert!(!out.exists());
    // An older output of the same name is kept.
    std::fs::write(&out, b"old").unwrap();
    assert!(import_path(Format::PerfScript, &input, &out, ImportOptions::default()).is_err());
    assert_eq!(std::fs::read(&out).unwrap(), b"old");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "no partial file left");
    let e = import_path(Format::PerfScript, &dir.path().join("missing"), &out, ImportOptions::default()).err().unwrap();
    assert!(e.to_string().contains("check the path"), "{e}");
}

#[test]
fn every_truncation_and_corruption_is_an_error_or_a_trace_never_a_panic() {
    let text = text("perf-make-j2.txt.zst");
    let head: String = text.lines().filter(|l| !l.starts_with('#')).take(40).collect::<Vec<_>>().join("\n");
    let b = head.as_bytes();
    for n in (0..b.len()).step_by(7) {
        let _ = import(Format::PerfScript, "t", &b[..n]);
        let _ = import(Format::TraceCmd, "t", &b[..n]);
    }
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..300 {
        let mut v = b.to_vec();
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x as usize) % v.len();
            v[i] = (x >> 32) as u8;
        }
        let _ = import(Format::PerfScript, "t", &v);
    }
}

#[test]
fn summary_line() {
    let (r, _) = import(Format::PerfScript, "in.txt", SAMPLE.as_bytes()).unwrap();
    assert_eq!(r.summary(), "4 events on 2 CPUs, 2 processes, 1 skipped (sched_stat_runtime: 1)");
}
