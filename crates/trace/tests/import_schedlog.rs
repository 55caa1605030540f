// SPDX-License-Identifier: GPL-2.0-only
//! The SchedLog importer on fixtures/schedlog-make-j2 (the real make -j2 perf
//! recording converted by scripts/perf2schedlog.py) and on malformed dumps.

use std::path::Path;

use warmcore_trace::import::schedlog::FIRST_FOREIGN_ID;
use warmcore_trace::import::{import_bytes, import_path, Format, ImportOptions, ImportReport};
use warmcore_trace::event::prev_state;
use warmcore_trace::{ids, CpuEvent, Event, Trace};

mod import_common;
use import_common::{all_events, fixture};


fn import_dir(dir: &Path) -> warmcore_trace::Result<(ImportReport, Trace)> {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("t.wct");
    let r = import_path(Format::SchedLog, dir, &out, ImportOptions::default())?;
    Ok((r, Trace::open(&out).unwrap()))
}

fn bundle(table: &str, cpus: &[Vec<u8>]) -> Vec<u8> {
    let mut v = table.as_bytes().to_vec();
    v.push(0);
    for c in cpus {
        v.extend_from_slice(&(c.len() as u32).to_le_bytes());
        v.extend_from_slice(c);
    }
    v
}

fn import_bundle(data: &[u8]) -> warmcore_trace::Result<(ImportReport, Trace)> {
    let mut out = Vec::new();
    let r = import_bytes(Format::SchedLog, "dump", data, &mut out, "out.wct", ImportOptions::default())?;
    Ok((r, Trace::from_bytes("out.wct", out).unwrap()))
}

fn entry(ts: u64, pid: u32, id: u32, a: u32, b: u32) -> Vec<u8> {
    bytemuck::bytes_of(&Event::new(ts, pid, id, a, b)).to_vec()
}

#[test]
fn converted_make_j2_matches_the_perf_import() {
    let dir = fixture("schedlog-make-j2");
    let (report, t) = import_dir(&dir).unwrap();
    // The entries, read independently: 24 bytes each.
    let mut entries = 0;
    for cpu in 0..t.nr_cpus() {
        let len = std::fs::metadata(dir.join(format!("cpu{cpu}"))).unwrap().len();
        assert_eq!(len % 24, 0);
        entries += len / 24;
        assert_eq!(t.cpu_event_counts()[cpu as usize], len / 24);
    }
    assert_eq!(report.events, entries);
    assert!(report.skipped.is_empty());

    // The perf import of the recording the dump was made from.
    let raw = std::fs::read(fixture("perf-make-j2.txt.zst")).unwrap();
    let mut out = Vec::new();
    import_bytes(Format::PerfScript, "perf", &raw, &mut out, "p.wct", ImportOptions::default()).unwrap();
    let perf = Trace::from_bytes("p.wct", out).unwrap();

    // Foreign event: CPU_IDLE keeps its id and name (the table is the authority).
    let cpu_idle = t.header.events.id("CPU_IDLE").unwrap();
    assert_eq!(cpu_idle, 40);
    let ours: Vec<CpuEvent> = all_events(&t).into_iter().filter(|e| e.ev.id != cpu_idle).collect();
    let theirs: Vec<CpuEvent> = all_events(&perf)
        .into_iter()
        .filter(|e| e.ev.id != ids::IDLE_ENTER && e.ev.id != ids::IDLE_EXIT)
        .collect();
    // Same events, ids mapped onto warmcore's, CTX_SWITCH's prev_state
    // rebuilt from the BLOCK / BLOCK_IO / EXIT entries before each switch.
    // One thing SchedLog's log cannot tell: whether the first switch after
    // an EXIT is the task's last (dead) or a preemption before it; so the
    // switches of exited tasks are compared as "RUNNABLE or DEAD".
    let exited: std::collections::BTreeSet<u32> =
        theirs.iter().filter(|e| e.ev.id == ids::EXIT).map(|e| e.ev.pid).collect();
    let key = |e: &CpuEvent| {
        let mut arg = e.ev.arg;
        if e.ev.id == ids::CTX_SWITCH && exited.contains(&e.ev.pid) && e.ev.b() == prev_state::DEAD {
            arg[4..].copy_from_slice(&prev_state::RUNNABLE.to_le_bytes());
        }
        (e.cpu, e.ev.ts, e.ev.id, e.ev.pid, arg)
    };
    let mut a: Vec<_> = ours.iter().map(key).collect();
    let mut b: Vec<_> = theirs.iter().map(key).collect();
    a.sort();
    b.sort();
    let only_a: Vec<_> = a.iter().filter(|x| b.binary_search(x).is_err()).take(5).collect();
    let only_b: Vec<_> = b.iter().filter(|x| a.binary_search(x).is_err()).take(5).collect();
    assert!(only_a.is_empty() && only_b.is_empty(), "only in SchedLog: {only_a:?}\nonly in perf: {only_b:?}");
    assert_eq!(a.len(), b.len());
    // Every exit is followed by one DEAD switch of that task.
    let dead = |t: &[CpuEvent]| t.iter().filter(|e| e.ev.id == ids::CTX_SWITCH && e.ev.b() == prev_state::DEAD).count();
    let followed = exited.iter().filter(|p| theirs.iter().any(|e| e.ev.id == ids::CTX_SWITCH && e.ev.pid == **p)).count();
    assert_eq!(dead(&ours), followed);
    assert_eq!(dead(&theirs), followed);
    let idle_count = all_events(&perf).iter().filter(|e| e.ev.id == ids::IDLE_ENTER || e.ev.id == ids::IDLE_EXIT).count();
    assert_eq!(all_events(&t).iter().filter(|e| e.ev.id == cpu_idle).count(), idle_count);

    // Fork links and comms survive (EXEC's 8-byte comm).
    for (pid, p) in perf.processes() {
        if p.ppid != 0 {
            assert_eq!(t.processes()[pid].ppid, p.ppid);
        }
    }
    // Comms come from EXEC alone here (8 bytes).
    let mut named = 0;
    for (pid, p) in t.processes() {
        if !p.comm.is_empty() {
            let full = &perf.processes()[pid].comm;
            assert_eq!(p.comm, full[..full.len().min(8)]);
            named += 1;
        }
    }
    assert_eq!(named, ours.iter().filter(|e| e.ev.id == ids::EXEC).map(|e| e.ev.pid).collect::<std::collections::BTreeSet<_>>().len());
    // The workload (the first exec) is make, with its 8 cc children.
    let make = ours.iter().find(|e| e.ev.id == ids::EXEC).unwrap().ev.pid;
    assert_eq!(t.processes()[&make].comm, "make");
    assert_eq!(t.processes().values().filter(|p| p.ppid == make && p.comm == "cc").count(), 8);
    match &t.header.provenance {
        warmcore_trace::Provenance::Import { tool, input } => {
            assert_eq!((tool.as_str(), input.as_str()), ("SchedLog", "schedlog-make-j2"))
        }
        p => panic!("{p:?}"),
    }
}

#[test]
fn bundle_round_trip_and_foreign_ids() {
    // A table that numbers events its own way, with a foreign event whose id
    // is WAKEUP's in warmcore.
    let table = "# comment\n7 CTX_SWITCH\n8 BLOCK\n3 RUNQ_PEEK\n";
    let cpu0 = [entry(10, 5, 8, 0, 0), entry(10, 5, 7, 6, 0), entry(20, 6, 3, 99, 1)].concat();
    let cpu1 = entry(15, 9, 7, 0, 0);
    let (r, t) = import_bundle(&bundle(table, &[cpu0, cpu1])).unwrap();
    assert_eq!(r.events, 4);
    assert_eq!(t.nr_cpus(), 2);
    let evs = all_events(&t);
    assert_eq!(evs[0].ev, Event::new(10, 5, ids::BLOCK, 0, 0));
    // The switch after a BLOCK of the leaving task: BLOCKED.
    assert_eq!(evs[1].ev, Event::new(10, 5, ids::CTX_SWITCH, 6, prev_state::BLOCKED));
    assert_eq!((evs[2].cpu, evs[2].ev), (1, Event::new(15, 9, ids::CTX_SWITCH, 0, 0)));
    assert_eq!(evs[3].ev.id, FIRST_FOREIGN_ID);
    assert_eq!(t.header.events.name(FIRST_FOREIGN_ID), "RUNQ_PEEK");
    assert_eq!((evs[3].ev.a(), evs[3].ev.b()), (99, 1));
}

fn err(data: &[u8]) -> String {
    import_bundle(data).err().expect("an error").to_string()
}

#[test]
fn malformed_dumps_give_the_offset() {
    let table = "0 EXEC\n9 CTX_SWITCH\n";
    let good = [entry(10, 5, 9, 6, 0), entry(20, 6, 9, 5, 0)].concat();
    assert!(import_bundle(&bundle(table, &[good.clone()])).is_ok());
    // Truncated entry.
    assert_eq!(
        err(&bundle(table, &[good[..40].to_vec()])),
        "dump:cpu0: at offset 24: truncated entry of 16 bytes; expected 24-byte entries"
    );
    // An id the table does not name.
    let bad = [entry(10, 5, 9, 6, 0), entry(20, 6, 4, 5, 0)].concat();
    assert_eq!(
        err(&bundle(table, &[bad])),
        "dump:cpu0: at offset 24: event id 4 is not in the events table; expected one of its ids"
    );
    // Out of order.
    let bad = [entry(20, 5, 9, 6, 0), entry(10, 6, 9, 5, 0)].concat();
    assert_eq!(
        err(&bundle(table, &[bad])),
        "dump:cpu0: at offset 24: event at 10 ns on CPU 0 comes after one at 20 ns on that CPU; expected each CPU's events in time order"
    );
    // Bad tables.
    assert_eq!(err(&bundle("0 EXEC\n9\n", &[good.clone()])), "dump:events:2: bad event name ``; expected `ID NAME` with a one-word name");
    assert_eq!(err(&bundle("", &[good.clone()])), "dump:events:1: no events; expected `ID NAME` lines");
    // Broken bundles.
    assert_eq!(err(b"0 EXEC\n"), "dump: at offset 7: no NUL after the events table; expected a SchedLog bundle");
    let mut b = bundle(table, &[good.clone()]);
    b.truncate(b.len() - 1);
    assert_eq!(err(&b), "dump: at offset 21: CPU 0 dump of 48 bytes, but only 47 remain; expected the whole dump");
    // Garbage never panics.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let base = bundle(table, &[good.clone(), good]);
    for _ in 0..500 {
        let mut v = base.clone();
        for _ in 0..3 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x as usize) % v.len();
            v[i] = (x >> 40) as u8;
        }
        let _ = import_bundle(&v);
    }
    for n in 0..base.len() {
        let _ = import_bundle(&base[..n]);
    }
}

#[test]
fn dump_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let e = import_dir(d).err().unwrap().to_string();
    assert!(e.ends_with("events: No such file or directory (os error 2) (check the path)"), "{e}");
    std::fs::write(d.join("events"), "0 EXEC\n9 CTX_SWITCH\n").unwrap();
    let e = import_dir(d).err().unwrap().to_string();
    assert!(e.ends_with(": no cpu0, cpu1, ... files; expected a SchedLog dump directory"), "{e}");
    // A CPU that logged nothing may be missing: the machine has max + 1 CPUs.
    std::fs::write(d.join("cpu2"), entry(5, 1, 9, 0, 0)).unwrap();
    let (r, t) = import_dir(d).unwrap();
    assert_eq!((r.events, t.nr_cpus()), (1, 3));
    std::fs::write(d.join("cpu0"), [0u8; 30]).unwrap();
    let e = import_dir(d).err().unwrap().to_string();
    assert!(e.ends_with("cpu0: at offset 24: truncated entry of 6 bytes; expected 24-byte entries"), "{e}");
}
