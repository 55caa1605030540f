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
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("report goes to standard output"));
}

/// SIGINT at several moments of each writer (export, import, sim --trace):
/// the output is the previous file or the whole new one, and no temporary
/// file is left. (The moments vary; the check holds at each.)
#[test]
fn an_interrupted_writer_leaves_the_previous_file_or_the_whole_new_one() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_warmcore")).current_dir(d).args(args).output().unwrap();
    assert!(run(&["trace", "synth", "-o", "in.wct", "--events", "300000", "--cpus", "4"]).status.success());
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/perf-configure.txt.zst");
    std::fs::copy(fixture, d.join("perf.txt.zst")).unwrap();
    let writers: &[(&[&str], &str)] = &[
        (&["trace", "export", "in.wct", "--parquet", "out.parquet"], "out.parquet"),
        (&["trace", "import", "--from", "perf-script", "perf.txt.zst", "-o", "out.wct"], "out.wct"),
        (&["sim", "--workload", "hackbench:groups=2,loops=300", "--trace", "sim.wct"], "sim.wct"),
    ];
    for (args, out) in writers {
        for delay_ms in [0, 5, 20, 60, 200] {
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
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            let o = child.wait_with_output().unwrap();
            let e = String::from_utf8_lossy(&o.stderr);
            let code = (o.status.code(), o.status.signal());
            assert!(matches!(code, (Some(0 | 130), _) | (None, Some(libc::SIGINT))), "{args:?}: {code:?}: {e}");
            if code.0 == Some(130) {
                assert!(e.trim_end().lines().last().unwrap_or("").contains("interrupted"), "{args:?}: {e}");
            }
            let bytes = std::fs::read(d.join(out)).unwrap();
            let whole = if out.ends_with(".parquet") {
                bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1")
            } else {
                let info = run(&["trace", "info", out]);
                info.status.success() && String::from_utf8_lossy(&info.stdout).contains("status:      complete")
            };
            assert!(bytes == b"old" || whole, "{args:?} after {delay_ms} ms: {} bytes", bytes.len());
            let names: Vec<String> =
                std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
            assert!(names.iter().all(|n| !n.ends_with(".part")), "{args:?}: {names:?}");
        }
    }
}
