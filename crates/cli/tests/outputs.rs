// SPDX-License-Identifier: GPL-2.0-only
//! Every command that reads an input file and writes an output, with the
//! output set to the input by another name and to things that are not a
//! regular file: the input is never changed, nothing that is not a file the
//! command made is replaced or removed, and nothing outside the command's
//! directory changes (docs/conventions.md, Outputs).

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use warmcore_test_support::{is_root, require};

/// Each entry of `dir`, recursively, with what it is: a file's bytes, a
/// link's target, a node's device number, a directory.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let t = m.file_type();
            let what = if t.is_symlink() {
                format!("link to {}", std::fs::read_link(&p).unwrap().display())
            } else if t.is_dir() {
                todo.push(p.clone());
                "dir".into()
            } else if t.is_char_device() {
                format!("char {}", m.rdev())
            } else {
                format!("file {} ino {} {:?}", m.len(), m.ino(), std::fs::read(&p).unwrap())
            };
            out.insert(p.strip_prefix(dir).unwrap().to_path_buf(), what);
        }
    }
    out
}

fn mknod(path: &Path, major: u32, minor: u32) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string; mknod has no other precondition.
    let r = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(major, minor)) };
    assert_eq!(r, 0, "mknod {}: {}", path.display(), std::io::Error::last_os_error());
}

/// The commands, each given the directory, its input and an output path.
fn commands(input: &str, out: &str) -> Vec<Vec<String>> {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        v(&["trace", "export", input, "--perfetto", out]),
        v(&["trace", "export", input, "--parquet", out]),
        v(&["sim", "--machine", "default", "--workload", &format!("replay:trace={input}"), "--trace", out]),
        v(&["trace", "import", "--from", "perf-script", "perf.txt.zst", "-o", out]),
    ]
}

#[test]
fn outputs_never_overwrite_inputs_nor_what_is_not_a_file() {
    require!("root", (!is_root()).then(|| "mknod makes the device nodes the outputs are set to".to_string()));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |args: &[String]| Command::new(env!("CARGO_BIN_EXE_warmcore")).current_dir(d).args(args).output().unwrap();
    let o = run(&["trace", "synth", "-o", "in.wct", "--events", "3000", "--cpus", "2"].map(String::from));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A perf script recording for the importer.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/perf-make-j2.txt.zst");
    std::fs::copy(fixture, d.join("perf.txt.zst")).unwrap();
    std::fs::hard_link(d.join("in.wct"), d.join("hard.wct")).unwrap();
    std::os::unix::fs::symlink("in.wct", d.join("soft.wct")).unwrap();
    std::os::unix::fs::symlink("perf.txt.zst", d.join("soft.txt")).unwrap();
    std::fs::create_dir(d.join("a-dir")).unwrap();
    mknod(&d.join("null"), 1, 3);
    mknod(&d.join("full"), 1, 7);
    std::os::unix::fs::symlink("nowhere", d.join("dangling")).unwrap();

    for (i, cmd) in commands("in.wct", "OUT").iter().enumerate() {
        let input = if cmd.contains(&"perf.txt.zst".to_string()) { "perf.txt.zst" } else { "in.wct" };
        let other = if input == "perf.txt.zst" { vec!["soft.txt"] } else { vec!["hard.wct", "soft.wct"] };
        // Refused, and nothing changes.
        let mut refused = vec![input, "a-dir", "no-such-dir/out", "dangling"];
        refused.extend(other);
        for out in refused {
            let before = snapshot(d);
            let args: Vec<String> = cmd.iter().map(|a| if a == "OUT" { out.to_string() } else { a.clone() }).collect();
            let o = run(&args);
            let e = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success(), "{args:?} was taken");
            assert_eq!(e.trim_end().lines().count(), 1, "{args:?}: {e}");
            assert!(!e.contains("panicked"), "{args:?}: {e}");
            assert_eq!(snapshot(d), before, "{args:?} changed the directory");
        }
        // A device node is written in place, never removed: /dev/null
        // takes the output, /dev/full fails it.
        for (out, ok) in [("null", true), ("full", false)] {
            let before = snapshot(d);
            let args: Vec<String> = cmd.iter().map(|a| if a == "OUT" { out.to_string() } else { a.clone() }).collect();
            let o = run(&args);
            assert_eq!(o.status.success(), ok, "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
            assert_eq!(snapshot(d), before, "{args:?} changed the directory");
        }
        // A link to a file: the file is written, the link kept; nothing else
        // is left behind (no temporary file).
        let target = format!("target-{i}");
        std::fs::write(d.join(&target), b"old").unwrap();
        let link = format!("link-{i}");
        std::os::unix::fs::symlink(&target, d.join(&link)).unwrap();
        let before = snapshot(d);
        let args: Vec<String> = cmd.iter().map(|a| if a == "OUT" { link.clone() } else { a.clone() }).collect();
        let o = run(&args);
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        let after = snapshot(d);
        let changed: Vec<_> = after.keys().filter(|k| after.get(*k) != before.get(*k)).collect();
        assert_eq!(changed, [Path::new(&target)], "{args:?}");
        assert_eq!(after.len(), before.len());
    }
}

/// `trace export` to standard output streams the file; its summary goes to
/// standard error.
#[test]
fn an_export_streams_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_warmcore")).current_dir(dir.path()).args(args).output().unwrap();
    assert!(run(&["trace", "synth", "-o", "in.wct", "--events", "2000", "--cpus", "2"]).status.success());
    let o = run(&["trace", "export", "in.wct", "--parquet", "-"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.starts_with(b"PAR1"), "not a parquet file on stdout");
    assert!(String::from_utf8_lossy(&o.stderr).contains("rows"));
    let o = run(&["sim", "--workload", "hackbench", "--trace", "-"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("report goes to standard output"));
}

/// SIGINT or SIGTERM at random moments (seeded: every run tries the same)
/// of each writer (export, import, sim --trace, a sweep's table): the output
/// is the previous file or the whole new one, no temporary file is left, and
/// an interrupted command says so in its last line and exits 130 or 143.
#[test]
fn an_interrupted_writer_leaves_the_previous_file_or_the_whole_new_one() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_warmcore")).current_dir(d).args(args).output().unwrap();
    assert!(run(&["trace", "synth", "-o", "in.wct", "--events", "300000", "--cpus", "4"]).status.success());
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/perf-configure.txt.zst");
    std::fs::copy(fixture, d.join("perf.txt.zst")).unwrap();
    // 44 short runs, one at a time.
    let spec = "machines = \"default\"\nseeds = [1, 2]\nmetrics = [\"makespan_ns\"]\n\
                [[workloads]]\nname = \"hackbench\"\ngroups = [1, 2]\nloops = 200\n\
                [[policies]]\nname = \"cfs\"\n\
                [[policies]]\nname = \"smove\"\ndelay_us = { from = 10, to = 100, step = 10 }\n";
    std::fs::write(d.join("spec.toml"), spec).unwrap();
    let writers: &[(&[&str], &str)] = &[
        (&["trace", "export", "in.wct", "--parquet", "out.parquet"], "out.parquet"),
        (&["trace", "import", "--from", "perf-script", "perf.txt.zst", "-o", "out.wct"], "out.wct"),
        (&["sim", "--workload", "hackbench:groups=2,loops=300", "--trace", "sim.wct"], "sim.wct"),
        (&["sweep", "spec.toml", "--out", "sw", "--jobs", "1"], "sw/results.parquet"),
    ];
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for (args, out) in writers {
        for sig in [libc::SIGINT, libc::SIGTERM] {
            for _ in 0..4 {
                let delay_ms = next() % 250;
                // Each sweep starts afresh (it would resume the runs done before).
                let _ = std::fs::remove_dir_all(d.join("sw"));
                let out_dir = d.join(out).parent().unwrap().to_path_buf();
                std::fs::create_dir_all(&out_dir).unwrap();
                std::fs::write(d.join(out), b"old").unwrap();
                let child = Command::new(env!("CARGO_BIN_EXE_warmcore"))
                    .current_dir(d)
                    .args(*args)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                std::thread::sleep(std::time::Duration::from_millis(delay_ms));
                // SAFETY: signalling the child this test started.
                unsafe { libc::kill(child.id() as i32, sig) };
                let o = child.wait_with_output().unwrap();
                let e = String::from_utf8_lossy(&o.stderr);
                let code = (o.status.code(), o.status.signal());
                // Done before the signal, interrupted, or killed before the
                // handler was in place.
                let interrupted = code.0 == Some(128 + sig);
                assert!(code.0 == Some(0) || interrupted || code.1 == Some(sig), "{args:?} {sig}: {code:?}: {e}");
                if interrupted {
                    assert!(e.trim_end().lines().last().unwrap_or("").contains("interrupted"), "{args:?}: {e}");
                }
                let bytes = std::fs::read(d.join(out)).unwrap();
                let whole = if out.ends_with(".parquet") {
                    bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1")
                } else {
                    let info = run(&["trace", "info", out]);
                    info.status.success() && String::from_utf8_lossy(&info.stdout).contains("status:      complete")
                };
                assert!(bytes == b"old" || whole, "{args:?} {sig} after {delay_ms} ms: {} bytes", bytes.len());
                let names: Vec<String> = std::fs::read_dir(&out_dir)
                    .unwrap()
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect();
                assert!(names.iter().all(|n| !n.ends_with(".part")), "{args:?} {sig}: {names:?}");
            }
        }
    }
}

/// SIGTERM during `warmcore record`: the recording stops, its trace is
/// finished and put in place of the older file, no temporary file is left,
/// and the command says so and exits 143. Loading the recorder's BPF
/// programs needs root and a kernel with BTF.
#[test]
fn a_recording_stopped_by_sigterm_is_complete_and_exits_143() {
    use std::io::Read;
    require!("root", warmcore_test_support::root_missing());
    require!("btf", warmcore_test_support::btf_missing());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("r.wct"), b"old").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_warmcore"))
        .current_dir(d)
        .args(["record", "-o", "r.wct", "--duration", "120"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let hidden = || -> Vec<String> {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect()
    };
    // Recording once its trace is being written beside the output.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !hidden().iter().any(|n| n.ends_with(".part")) {
        assert!(std::time::Instant::now() < deadline, "no temporary file in 60 s");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(std::fs::read(d.join("r.wct")).unwrap(), b"old", "the older file is kept while recording");
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut e = String::new();
    child.stderr.take().unwrap().read_to_string(&mut e).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{e}");
    assert!(e.contains("interrupted: the trace is complete up to the interrupt"), "{e}");
    assert!(hidden().is_empty(), "{:?}", hidden());
    let info = Command::new(env!("CARGO_BIN_EXE_warmcore")).current_dir(d).args(["trace", "info", "r.wct"]).output().unwrap();
    assert!(String::from_utf8_lossy(&info.stdout).contains("status:      complete"), "{}", String::from_utf8_lossy(&info.stderr));
}
