// SPDX-License-Identifier: GPL-2.0-only
use warmcore_trace::*;

fn header(n: u32) -> Header {
    Header::other(Machine::flat("test", n), "test")
}

/// Events on 4 CPUs, pushed interleaved, with a chunk size that splits them.
fn write(path: &std::path::Path, zstd: Option<i32>) -> Vec<CpuEvent> {
    let mut w = Writer::create(path, &header(4), WriterOptions { zstd_level: zstd, chunk_events: 7 }).unwrap();
    let mut all = Vec::new();
    for i in 0..1000u64 {
        let cpu = ((i * 7) % 4) as u32;
        let ev = Event::new(i * 10 + cpu as u64, 100 + (i % 13) as u32, ids::TICK, 1_200_000 + i as u32, 0);
        w.push(cpu, ev).unwrap();
        all.push(CpuEvent { cpu, ev });
    }
    w.push(1, Event::new(20_000, 42, ids::FORK, 7, 0)).unwrap();
    w.push(1, Event::with_comm(20_001, 42, ids::EXEC, "make")).unwrap();
    all.push(CpuEvent { cpu: 1, ev: Event::new(20_000, 42, ids::FORK, 7, 0) });
    all.push(CpuEvent { cpu: 1, ev: Event::with_comm(20_001, 42, ids::EXEC, "make") });
    w.add_lost(2, 5);
    assert_eq!(w.finish().unwrap(), 1002);
    all.sort_by_key(|e| (e.ev.ts, e.cpu));
    all
}

#[test]
fn round_trip_raw_and_zstd() {
    for zstd in [None, Some(3)] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.wct");
        let want = write(&p, zstd);
        let t = Trace::open(&p).unwrap();
        assert!(t.incomplete.is_none());
        assert_eq!(t.event_count(), 1002);
        assert_eq!(t.lost, vec![0, 0, 5, 0]);
        let got: Vec<CpuEvent> = t.events(None, Window::ALL).map(|e| e.unwrap()).collect();
        assert_eq!(got, want);
        let p42 = &t.processes()[&42];
        assert_eq!((p42.ppid, p42.comm.as_str(), p42.first_ns, p42.last_ns), (7, "make", 20_000, 20_001));
        assert_eq!(t.span(), Some((0, 20_001)));
    }
}

#[test]
fn windows_and_single_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wct");
    let all = write(&p, None);
    let t = Trace::open(&p).unwrap();
    let w = Window { from: 2_345, to: 6_789 };
    let got: Vec<CpuEvent> = t.events(Some(&[1, 3]), w).map(|e| e.unwrap()).collect();
    let want: Vec<CpuEvent> =
        all.iter().copied().filter(|e| w.contains(e.ev.ts) && (e.cpu == 1 || e.cpu == 3)).collect();
    assert!(!want.is_empty());
    assert_eq!(got, want);
    let cpu2: Vec<Event> = t.cpu_events(2, Window::ALL).map(|e| e.unwrap()).collect();
    assert_eq!(cpu2.len(), all.iter().filter(|e| e.cpu == 2).count());
}

#[test]
fn killed_writer_leaves_a_readable_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wct");
    write(&p, None);
    let full = std::fs::read(&p).unwrap();
    // Cut the file in the middle of a block: everything before it must read.
    let cut = full.len() / 2 + 3;
    let t = Trace::from_bytes("cut.wct", full[..cut].to_vec()).unwrap();
    assert!(t.incomplete.is_some());
    let n = t.events(None, Window::ALL).filter(|e| e.is_ok()).count() as u64;
    assert!(n > 0 && n < 1002, "read {n} events");
}

#[test]
fn corrupt_and_foreign_files_give_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wct");
    write(&p, Some(1));
    let full = std::fs::read(&p).unwrap();
    let e = Trace::from_bytes("x", b"PK\x03\x04 this is a zip file, not a trace".to_vec()).err().unwrap();
    assert!(e.to_string().contains("at offset 0") && e.to_string().contains("magic"), "{e}");
    let e = Trace::from_bytes("x", full[..10].to_vec()).err().unwrap();
    assert!(e.to_string().contains("prelude"), "{e}");
    // Flip a byte inside the first chunk's payload: reading it must fail cleanly.
    let t = Trace::from_bytes("ok", full.clone()).unwrap();
    let c = t.chunks(0)[0];
    let mut bad = full.clone();
    bad[c.offset as usize + 48] ^= 0xff;
    let t = Trace::from_bytes("bad.wct", bad).unwrap();
    let errs: Vec<_> = t.events(None, Window::ALL).filter_map(|e| e.err()).collect();
    assert_eq!(errs.len(), 1);
    assert!(errs[0].to_string().starts_with("bad.wct: at offset"), "{}", errs[0]);
    assert!(!errs[0].to_string().contains('\n'));
}

#[test]
fn out_of_order_input_is_refused_not_reordered_silently() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path().join("t.wct"), &header(1), WriterOptions { zstd_level: None, chunk_events: 2 }).unwrap();
    w.push(0, Event::new(100, 1, ids::TICK, 0, 0)).unwrap();
    w.push(0, Event::new(200, 1, ids::TICK, 0, 0)).unwrap();
    let e = w.push(0, Event::new(50, 1, ids::TICK, 0, 0)).and_then(|_| w.push(0, Event::new(60, 1, ids::TICK, 0, 0)));
    assert!(e.unwrap_err().to_string().contains("time order"));
    assert!(w.push(9, Event::default()).unwrap_err().to_string().contains("machine has 1 CPUs"));
}

/// Every timestamp is in Window::ALL, the largest included (found by fuzzing
/// the SchedLog importer: a dump's last event at u64::MAX was not read back).
#[test]
fn the_largest_timestamp_is_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wct");
    let mut w = Writer::create(&p, &header(1), WriterOptions::default()).unwrap();
    w.push(0, Event::new(5, 1, ids::TICK, 0, 0)).unwrap();
    w.push(0, Event::new(u64::MAX, 1, ids::TICK, 0, 0)).unwrap();
    w.finish().unwrap();
    let t = Trace::open(&p).unwrap();
    let ts: Vec<u64> = t.events(None, Window::ALL).map(|e| e.unwrap().ev.ts).collect();
    assert_eq!(ts, vec![5, u64::MAX]);
    assert_eq!(t.cpu_events(0, Window { from: 0, to: 6 }).count(), 1);
}
