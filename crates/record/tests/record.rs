// SPDX-License-Identifier: GPL-2.0-only
//! The recorder on the machine itself: these tests load BPF programs, so they
//! need root (CAP_BPF, CAP_PERFMON) and a kernel with BTF, and some a tmpfs
//! to fill or a cgroup v2 hierarchy. A missing one fails the test, unless
//! WARMCORE_TEST_SKIP names it (see warmcore-test-support).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Duration;

use warmcore_record::{record, Options, StopReason};
use warmcore_trace::event::prev_state;
use warmcore_test_support::require;
use warmcore_trace::{ids, Trace, Window};

/// One recording at a time: they trace the whole machine and share signals.
static SERIAL: Mutex<()> = Mutex::new(());

const TESTLOAD: &str = env!("CARGO_BIN_EXE_warmcore-testload");

macro_rules! need_bpf {
    () => {
        require!("root", warmcore_test_support::root_missing());
        require!("btf", warmcore_test_support::btf_missing());
    };
}

/// `key value` lines printed by the test workload.
fn keys(path: &Path) -> HashMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(' ').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

fn sh(script: String) -> Vec<String> {
    vec!["/bin/sh".into(), "-c".into(), script]
}

fn check_cpu_order(t: &Trace) {
    for cpu in 0..t.nr_cpus() {
        let mut last = 0;
        for e in t.cpu_events(cpu, Window::ALL) {
            let e = e.unwrap();
            assert!(e.ts >= last, "CPU {cpu}: event at {} after one at {last}", e.ts);
            last = e.ts;
        }
    }
}

#[test]
fn known_workload_counts_links_and_order() {
    need_bpf!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.wct");
    let (f1, f2) = (dir.path().join("forks"), dir.path().join("pp"));
    let (n, m) = (25u32, 400u32);
    let mut o = Options::new(&out);
    o.command = sh(format!("{TESTLOAD} forks {n} > {}; {TESTLOAD} pingpong {m} > {}", f1.display(), f2.display()));
    let r = record(&o, &mut |l| eprintln!("{l}")).unwrap();
    assert_eq!(r.reason, StopReason::CommandExited);
    assert!(r.command_status.unwrap().success());
    assert_eq!(r.lost.iter().sum::<u64>(), 0, "lost events: {:?}", r.lost);

    let t = Trace::open(&out).unwrap();
    assert!(t.incomplete.is_none(), "{:?}", t.incomplete);
    assert_eq!(t.event_count(), r.events);
    check_cpu_order(&t);
    let evs: Vec<_> = t.events(None, Window::ALL).map(|e| e.unwrap()).collect();

    // N forks: each child forked by the parent, woken new, exec'd, exited.
    let k = keys(&f1);
    let parent: u32 = k["parent"].parse().unwrap();
    let children: HashSet<u32> = k["children"].split(',').map(|c| c.parse().unwrap()).collect();
    assert_eq!(children.len(), n as usize);
    let forked: HashSet<u32> =
        evs.iter().filter(|e| e.ev.id == ids::FORK && e.ev.a() == parent).map(|e| e.ev.pid).collect();
    assert_eq!(forked, children, "FORK events with parent {parent}");
    let count = |id: u32, pred: &dyn Fn(&warmcore_trace::Event) -> bool| {
        evs.iter().filter(|e| e.ev.id == id && children.contains(&e.ev.pid) && pred(&e.ev)).count()
    };
    assert_eq!(count(ids::WAKEUP_NEW, &|e| e.b() == parent), n as usize);
    assert_eq!(count(ids::EXEC, &|e| e.comm() == "true"), n as usize);
    assert_eq!(count(ids::EXIT, &|_| true), n as usize);
    for c in &children {
        let p = &t.processes()[c];
        assert_eq!(p.ppid, parent, "process table: parent of {c}");
        assert_eq!(p.comm, "true");
    }
    // The parent waited for each child.
    let waits = evs.iter().filter(|e| e.ev.id == ids::WAIT_PID && e.ev.pid == parent).count();
    assert!(waits >= n as usize, "{waits} WAIT_PID by the parent");

    // M pipe round trips, both ends on CPU 0: at least one of them blocks per
    // round trip, and every block ends with a wake-up before it runs again.
    let k = keys(&f2);
    let (ping, pong): (u32, u32) = (k["ping"].parse().unwrap(), k["pong"].parse().unwrap());
    assert_eq!(k["rounds"], m.to_string());
    assert!(evs.iter().any(|e| e.ev.id == ids::FORK && e.ev.pid == pong && e.ev.a() == ping));
    assert_eq!(t.processes()[&pong].ppid, ping);
    let pair = [ping, pong];
    let wakeups = evs.iter().filter(|e| e.ev.id == ids::WAKEUP && pair.contains(&e.ev.pid)).count();
    let blocks = evs
        .iter()
        .filter(|e| e.ev.id == ids::CTX_SWITCH && pair.contains(&e.ev.pid) && e.ev.b() == prev_state::BLOCKED)
        .count();
    assert!(blocks + 1 >= m as usize, "{blocks} blocks for {m} round trips");
    assert!(wakeups + 1 >= blocks && wakeups <= 2 * m as usize + 10, "{wakeups} wake-ups, {blocks} blocks");
    let mut asleep: HashMap<u32, bool> = HashMap::new();
    for e in &evs {
        let ev = e.ev;
        match ev.id {
            ids::CTX_SWITCH if pair.contains(&ev.pid) => {
                asleep.insert(ev.pid, ev.b() == prev_state::BLOCKED || ev.b() == prev_state::BLOCKED_IO);
            }
            ids::WAKEUP if pair.contains(&ev.pid) => {
                asleep.insert(ev.pid, false);
            }
            _ => {}
        }
        if ev.id == ids::CTX_SWITCH && pair.contains(&ev.a()) {
            assert!(!asleep.get(&ev.a()).copied().unwrap_or(false), "{} ran again without a wake-up at {}", ev.a(), ev.ts);
        }
    }
    // Switches on CPU 0 name both ends.
    let on0: HashSet<u32> =
        t.cpu_events(0, Window::ALL).map(|e| e.unwrap()).filter(|e| e.id == ids::CTX_SWITCH).map(|e| e.pid).collect();
    assert!(on0.contains(&ping) && on0.contains(&pong));
}

#[test]
fn flight_recorder_overwrites_and_counts() {
    need_bpf!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.wct");
    let pp = dir.path().join("pp");
    let mut o = Options::new(&out);
    o.flight_recorder = true;
    o.buffer_mb = 0.002; // 128 entries a CPU
    let slots = warmcore_record::buffer_slots(o.buffer_mb);
    assert_eq!(slots, 128);
    o.command = sh(format!("{TESTLOAD} pingpong 3000 > {}; sleep 1.5", pp.display()));
    let dump = o.dump_now.clone();
    let marker = pp.clone();
    // Ask for a snapshot (SIGUSR1's job) once the workload has run.
    let asker = std::thread::spawn(move || {
        for _ in 0..600 {
            if std::fs::read_to_string(&marker).is_ok_and(|s| s.contains("rounds")) {
                dump.store(true, Ordering::SeqCst);
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let r = record(&o, &mut |l| eprintln!("{l}")).unwrap();
    asker.join().unwrap();
    assert_eq!(r.reason, StopReason::CommandExited);
    let t = Trace::open(&out).unwrap();
    assert!(t.incomplete.is_none());
    check_cpu_order(&t);
    let counts = t.cpu_event_counts();
    // Each CPU keeps at most its ring's worth; CPU 0 (the ping-pong's) filled
    // its ring many times over and counted what it overwrote.
    for (c, &n) in counts.iter().enumerate() {
        assert!(n <= slots, "CPU {c} kept {n} events, ring of {slots}");
    }
    assert_eq!(counts[0], slots);
    assert!(t.lost[0] > 10 * slots, "CPU 0 lost {}", t.lost[0]);
    assert_eq!(t.lost, r.lost);
    // What is kept is the newest: nothing from before the ping-pong's fork.
    let pong: u32 = keys(&pp)["pong"].parse().unwrap();
    assert!(!t.events(None, Window::ALL).any(|e| {
        let e = e.unwrap().ev;
        e.id == ids::FORK && e.pid == pong
    }));
    // The snapshot is a trace of its own.
    assert_eq!(r.snapshots.len(), 1, "snapshots: {:?}", r.snapshots);
    let s = Trace::open(&r.snapshots[0]).unwrap();
    assert!(s.incomplete.is_none());
    assert!(s.event_count() > 0 && s.lost[0] > 0);
}

#[test]
fn a_full_buffer_counts_what_it_drops() {
    need_bpf!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d.wct");
    let pp = dir.path().join("pp");
    let mut o = Options::new(&out);
    o.buffer_mb = 0.002; // 128 entries a CPU: far less than 50 ms of ping-pong
    o.events = Some(vec!["ctx_switch".into()]);
    o.command = sh(format!("{TESTLOAD} pingpong 20000 > {}", pp.display()));
    let r = record(&o, &mut |l| eprintln!("{l}")).unwrap();
    assert_eq!(r.reason, StopReason::CommandExited);
    let t = Trace::open(&out).unwrap();
    assert!(t.incomplete.is_none(), "{:?}", t.incomplete);
    assert_eq!(t.lost, r.lost);
    check_cpu_order(&t);
    // 20000 round trips are at least 40000 switches: each one was either
    // stored or counted as lost.
    let switches = t.events(None, Window::ALL).filter(|e| e.as_ref().unwrap().ev.id == ids::CTX_SWITCH).count() as u64;
    let lost: u64 = r.lost.iter().sum();
    assert!(lost > 0, "nothing lost with 128 entries a CPU");
    assert!(switches + lost >= 40_000, "{switches} switches stored, {lost} lost");
    assert!(switches > 128, "the drain gave slots back: {switches} switches stored");
}

#[test]
fn interrupt_midway_leaves_a_complete_trace() {
    need_bpf!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("i.wct");
    // An older file of that name is kept until the new trace is finished.
    std::fs::write(&out, b"old").unwrap();
    let o = Options::new(&out);
    let watch = dir.path().to_path_buf();
    // A workload that is still running when SIGINT arrives.
    let load = std::thread::spawn(|| {
        std::process::Command::new(TESTLOAD).args(["pingpong", "20000"]).output().unwrap()
    });
    let interrupter = std::thread::spawn(move || {
        // The handler is in place once the temporary file beside the output exists.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !temporary_files(&watch).iter().any(|n| n.ends_with(".part")) {
            assert!(std::time::Instant::now() < deadline, "no temporary file in 60 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: sends SIGINT to this process, whose handler record() set.
        unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
    });
    let r = record(&o, &mut |l| eprintln!("{l}")).unwrap();
    interrupter.join().unwrap();
    assert_eq!(r.reason, StopReason::Interrupted(libc::SIGINT));
    assert!(temporary_files(dir.path()).is_empty(), "{:?}", temporary_files(dir.path()));
    let t = Trace::open(&out).unwrap();
    assert!(t.incomplete.is_none(), "{:?}", t.incomplete);
    assert_eq!(t.event_count(), r.events);
    assert!(r.events > 100, "{} events", r.events);
    check_cpu_order(&t);
    assert!(load.join().unwrap().status.success());
}

/// The hidden files a recording writes beside its output (the trace being
/// written, its disk reserve).
fn temporary_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

/// The output is checked before anything is loaded, as every command's
/// (warmcore_trace::output), so this needs neither root nor BPF: a
/// directory, a name in a missing directory, a link to nothing are refused
/// in one line naming them, and nothing is left behind.
#[test]
fn a_bad_output_is_refused_before_recording() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::os::unix::fs::symlink("nowhere", d.join("dangling")).unwrap();
    for (out, want) in [
        (d.to_path_buf(), "is a directory"),
        (d.join("no/such.wct"), "create it first"),
        (d.join("dangling"), "symbolic link to nothing"),
    ] {
        let e = record(&Options::new(&out), &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains(want) && e.to_string().contains(&out.display().to_string()), "{e}");
        assert!(e.is::<warmcore_trace::TraceError>(), "a usage error, exit status 2: {e:?}");
    }
    let left: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["dangling"]);
}

/// A recording that fails once started (its command cannot run) leaves an
/// older file of the output's name whole, and no temporary file.
#[test]
fn a_failed_recording_keeps_the_older_file() {
    need_bpf!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.wct");
    std::fs::write(&out, b"old").unwrap();
    let mut o = Options::new(&out);
    o.command = vec!["/no/such/command".into()];
    let e = record(&o, &mut |_| {}).unwrap_err().to_string();
    assert!(e.contains("cannot run /no/such/command"), "{e}");
    assert_eq!(std::fs::read(&out).unwrap(), b"old");
    assert!(temporary_files(dir.path()).is_empty(), "{:?}", temporary_files(dir.path()));
}

#[test]
fn bad_input_is_named() {
    need_bpf!();
    let dir = tempfile::tempdir().unwrap();
    let err = |f: &dyn Fn(&mut Options)| {
        let mut o = Options::new(dir.path().join("x.wct"));
        f(&mut o);
        record(&o, &mut |_| {}).unwrap_err().to_string()
    };
    assert!(err(&|o| o.cpus = Some(vec![0, 4095])).contains("no CPU 4095"));
    assert!(err(&|o| o.pid = Some(999_999_999)).contains("no process with pid 999999999"));
    assert!(err(&|o| o.events = Some(vec!["wakeup".into(), "sched_bogus".into()])).contains("unknown event \"sched_bogus\""));
    assert!(err(&|o| o.cgroup = Some(PathBuf::from("no/such/group"))).contains("no cgroup"));
    assert!(err(&|o| o.command_only = true).contains("--command-only needs a command"));
    let both = |o: &mut Options| {
        (o.command_only, o.command, o.pid) = (true, vec!["true".into()], Some(1));
    };
    assert!(err(&both).contains("exclude each other"));
    assert!(!dir.path().join("x.wct").exists());
}

#[test]
fn full_disk_stops_with_a_complete_trace() {
    need_bpf!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    // The reserve (16 MiB) plus about 1 MiB for events.
    let st = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=17m", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap();
    require!("tmpfs", (!st.success()).then(|| format!("cannot mount a small tmpfs to fill ({st})")));
    let out = mnt.join("d.wct");
    let mut o = Options::new(&out);
    o.command = vec![TESTLOAD.into(), "pingpong".into(), "60000".into()];
    let r = record(&o, &mut |l| eprintln!("{l}"));
    let t = Trace::open(&out).map(|t| (t.incomplete.clone(), t.event_count()));
    let _ = std::process::Command::new("umount").arg(&mnt).status();
    let r = r.unwrap();
    assert_eq!(r.reason, StopReason::DiskFull);
    let (incomplete, n) = t.unwrap();
    assert!(incomplete.is_none(), "{incomplete:?}");
    assert_eq!(n, r.events);
    assert!(n > 10_000, "{n} events");
}

#[test]
fn tick_carries_cpufreq_readings_when_there_are_some() {
    need_bpf!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // A cpufreq tree with known readings stands in for a cpufreq driver.
    let fake = dir.path().join("cpu");
    let ncpu = warmcore_record::sys::possible_cpus();
    let khz = |c: u32| 1_000_000 + 111_111 * c;
    for c in 0..ncpu {
        let d = fake.join(format!("cpu{c}/cpufreq"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("scaling_cur_freq"), format!("{}\n", khz(c))).unwrap();
        std::fs::write(d.join("cpuinfo_max_freq"), "3000000\n").unwrap();
        std::fs::write(d.join("cpuinfo_min_freq"), "800000\n").unwrap();
    }
    std::env::set_var("WARMCORE_SYSFS_CPU", &fake);
    let out = dir.path().join("t.wct");
    let mut o = Options::new(&out);
    o.events = Some(vec!["tick".into(), "ctx_switch".into()]);
    o.command = vec![TESTLOAD.into(), "pingpong".into(), "3000".into()];
    let r = record(&o, &mut |l| eprintln!("{l}"));
    std::env::remove_var("WARMCORE_SYSFS_CPU");
    let r = r.unwrap();
    assert!(r.freq_source.contains("cpufreq"), "{}", r.freq_source);
    let t = Trace::open(&out).unwrap();
    assert_eq!((t.header.machine.freq_min_khz, t.header.machine.freq_max_khz), (800_000, 3_000_000));
    let mut ticks = 0;
    for e in t.events(None, Window::ALL) {
        let e = e.unwrap();
        assert!(e.ev.id == ids::TICK || e.ev.id == ids::CTX_SWITCH);
        if e.ev.id == ids::TICK {
            assert_eq!(e.ev.a(), khz(e.cpu), "TICK on CPU {}", e.cpu);
            ticks += 1;
        }
    }
    assert!(ticks > 0);
}

/// Whether an event is about one of `set`: its task, or the task switched to.
fn about(e: &warmcore_trace::Event, set: &[u32]) -> bool {
    set.contains(&e.pid) || (e.id == ids::CTX_SWITCH && set.contains(&e.a()))
}

#[test]
fn pid_filter_keeps_the_process_and_its_children() {
    need_bpf!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let pp = dir.path().join("pp");
    let mut load = std::process::Command::new("/bin/sh")
        .args(["-c", &format!("exec {TESTLOAD} pingpong 40000000 > {}", pp.display())])
        .spawn()
        .unwrap();
    let ping = load.id();
    // The pong child exists before the recording starts.
    while !std::fs::read_to_string(&pp).is_ok_and(|s| s.contains("pong")) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let pong: u32 = keys(&pp)["pong"].parse().unwrap();
    let out = dir.path().join("p.wct");
    let mut o = Options::new(&out);
    o.pid = Some(ping);
    o.duration = Some(Duration::from_millis(400));
    let r = record(&o, &mut |l| eprintln!("{l}"));
    load.kill().ok();
    load.wait().ok();
    // SAFETY: ends the workload's child, which this test started.
    unsafe { libc::kill(pong as i32, libc::SIGKILL) };
    let r = r.unwrap();
    assert_eq!(r.reason, StopReason::Duration);
    let t = Trace::open(&out).unwrap();
    let mut n = 0;
    for e in t.events(None, Window::ALL) {
        let e = e.unwrap().ev;
        assert!(about(&e, &[ping, pong]), "event about neither {ping} nor {pong}: {e:?}");
        n += 1;
    }
    assert!(n > 100, "{n} events");
}

#[test]
fn command_only_keeps_the_command_and_its_first_forks() {
    need_bpf!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (out, f) = (dir.path().join("c.wct"), dir.path().join("forks"));
    let n = 10u32;
    let mut o = Options::new(&out);
    // The shell becomes the workload, which forks at once: the forks a --pid
    // filter set after the spawn would miss.
    o.command = sh(format!("exec {TESTLOAD} forks {n} > {}", f.display()));
    o.command_only = true;
    let r = record(&o, &mut |l| eprintln!("{l}")).unwrap();
    assert_eq!(r.reason, StopReason::CommandExited);
    assert!(r.command_status.unwrap().success());
    let k = keys(&f);
    let parent: u32 = k["parent"].parse().unwrap();
    let children: HashSet<u32> = k["children"].split(',').map(|c| c.parse().unwrap()).collect();
    let mut set: Vec<u32> = children.iter().copied().collect();
    set.push(parent);
    let t = Trace::open(&out).unwrap();
    let evs: Vec<_> = t.events(None, Window::ALL).map(|e| e.unwrap().ev).collect();
    for e in &evs {
        assert!(about(e, &set), "event about a task outside the command: {e:?}");
    }
    let forked: HashSet<u32> = evs.iter().filter(|e| e.id == ids::FORK && e.a() == parent).map(|e| e.pid).collect();
    assert_eq!(forked, children, "FORK events with parent {parent}");
    let exits = evs.iter().filter(|e| e.id == ids::EXIT && children.contains(&e.pid)).count();
    assert_eq!(exits, n as usize);
}

#[test]
fn cgroup_filter_keeps_the_cgroup_and_its_descendants_only() {
    need_bpf!();
    let is_v2 = |p: &Path| {
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: statfs fills the struct we pass.
        unsafe {
            let mut st: libc::statfs = std::mem::zeroed();
            libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type as i64 == 0x6367_7270
        }
    };
    let root = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"].into_iter().map(PathBuf::from).find(|r| is_v2(r));
    require!("cgroup2", root.is_none().then(|| "no cgroup v2 hierarchy mounted".to_string()));
    let root = root.unwrap();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cg = root.join(format!("warmcore-test-{}", std::process::id()));
    let sub = cg.join("sub");
    if let Err(e) = std::fs::create_dir(&cg).and_then(|_| std::fs::create_dir(&sub)) {
        let _ = std::fs::remove_dir(&cg);
        require!("cgroup2", Some(format!("cannot create cgroups under {} ({e})", root.display())));
    }
    let dir = tempfile::tempdir().unwrap();
    let pp = dir.path().join("pp");
    // The shell joins the nested cgroup before it becomes the workload, long
    // enough to outlast both cgroups' windows (it is killed at the end).
    let mut load = std::process::Command::new("/bin/sh")
        .args(["-c", &format!("echo $$ > {}/cgroup.procs && exec {TESTLOAD} pingpong 40000000 > {}", sub.display(), pp.display())])
        .spawn()
        .unwrap();
    while !std::fs::read_to_string(&pp).is_ok_and(|s| s.contains("pong")) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let k = keys(&pp);
    let pair: [u32; 2] = [k["ping"].parse().unwrap(), k["pong"].parse().unwrap()];
    // The workload's own cgroup, then its parent: both hold it, nothing else.
    // Recorded in windows of 400 ms until one holds enough of the workload's
    // events: on a loaded machine the pair may barely run in one window.
    let mut results = Vec::new();
    for (name, group) in [("sub", &sub), ("parent", &cg)] {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        for attempt in 0.. {
            let out = dir.path().join(format!("{name}-{attempt}.wct"));
            let mut o = Options::new(&out);
            o.cgroup = Some(group.clone());
            o.duration = Some(Duration::from_millis(400));
            let r = record(&o, &mut |l| eprintln!("{l}"));
            let enough = r.is_ok() && Trace::open(&out).is_ok_and(|t| t.events(None, Window::ALL).count() > 100);
            results.push((name, out, r));
            if enough || std::time::Instant::now() > deadline {
                break;
            }
        }
    }
    load.kill().ok();
    load.wait().ok();
    // SAFETY: ends the workload's child, which this test started.
    unsafe { libc::kill(pair[1] as i32, libc::SIGKILL) };
    std::thread::sleep(Duration::from_millis(50));
    let _ = std::fs::remove_dir(&sub);
    let _ = std::fs::remove_dir(&cg);
    // Every window holds the workload's events only; the last of each
    // cgroup holds enough of them.
    let mut last = std::collections::HashMap::new();
    for (name, out, r) in results {
        r.unwrap();
        let t = Trace::open(&out).unwrap();
        let mut n = 0;
        for e in t.events(None, Window::ALL) {
            let e = e.unwrap().ev;
            assert!(about(&e, &pair), "{name}: event outside the cgroup: {e:?}");
            n += 1;
        }
        last.insert(name, n);
    }
    for (name, n) in last {
        assert!(n > 100, "{name}: {n} events in the last window");
    }
}

/// With --bpf-stats the report gives the programs' own run time: at least one
/// run per recorded event, and none without the statistics.
#[test]
fn bpf_stats_report_the_programs_run_time() {
    need_bpf!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::new(dir.path().join("s.wct"));
    o.command = sh(format!("{TESTLOAD} forks 20 > /dev/null"));
    o.bpf_stats = true;
    let r = record(&o, &mut |l| eprintln!("{l}")).unwrap();
    let (t, runs) = r.bpf_run.expect("run time with --bpf-stats");
    // An event is one program run (a switch that blocks writes two events).
    assert!(runs * 2 >= r.events && r.events > 0, "{runs} runs for {} events", r.events);
    assert!(t > Duration::ZERO && t < r.elapsed, "{t:?} of program time in {:?}", r.elapsed);

    let sysctl = std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").unwrap_or_default();
    if sysctl.trim() == "0" {
        o.bpf_stats = false;
        let r = record(&o, &mut |l| eprintln!("{l}")).unwrap();
        assert_eq!(r.bpf_run, None, "statistics off, yet a run time");
    }
}
