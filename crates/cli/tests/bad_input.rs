// SPDX-License-Identifier: GPL-2.0-only
//! Bad input that used to lose data or never end: workloads without bound,
//! traces cut short, closed pipes, empty windows (docs/conventions.md).

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn warmcore_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warmcore")).current_dir(dir).args(args).output().expect("warmcore runs")
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Refused before the run, in one line naming what is wrong.
fn refused(dir: &Path, args: &[&str], want: &str) {
    let o = warmcore_in(dir, args);
    let e = err(&o);
    assert!(!o.status.success(), "{args:?} was taken");
    assert!(!e.contains("panicked"), "{args:?}: {e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{args:?}: {e}");
    assert!(e.contains(want), "{args:?}: {e}");
}

#[test]
fn workloads_without_bound_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (w, want) in [
        ("hackbench:groups=0", "groups must be a whole number from 1 to"),
        ("hackbench:loops=99999999999999999999", "loops must be a whole number from 1 to 1000000000"),
        ("hackbench:groups=1.5", "groups must be a whole number"),
        ("hackbench:groups=50000", "tasks: at most 100000"),
        ("kbuild:jobs=0", "jobs must be a whole number from 1"),
    ] {
        refused(d, &["sim", "--workload", w], want);
    }
    // Programs that repeat each other in a cycle: refused at load, naming it.
    let cyclic = r#"
name = "cycle"
[[program]]
name = "a"
steps = [ { compute_us = 10 }, { repeat = "b", times = 2 } ]
[[program]]
name = "b"
steps = [ { fork = "c" }, { wait = true } ]
[[program]]
name = "c"
steps = [ { repeat = "a", times = 1 }, { exit = true } ]
[[task]]
program = "a"
"#;
    std::fs::write(d.join("cycle.toml"), cyclic).unwrap();
    refused(d, &["sim", "--workload", "cycle.toml"], "a -> b -> c -> a");
    // A fork without bound (no cycle: one program forks sleepers again and
    // again) stops at the live-task limit.
    let forever = r#"
name = "forks"
[[program]]
name = "sleeper"
steps = [ { sleep_us = 1000000000 }, { exit = true } ]
[[program]]
name = "one"
steps = [ { fork = "sleeper" } ]
[[program]]
name = "main"
steps = [ { repeat = "one", times = 1000000000 }, { wait_all = true }, { exit = true } ]
[[task]]
program = "main"
"#;
    std::fs::write(d.join("forever.toml"), forever).unwrap();
    refused(d, &["sim", "--workload", "forever.toml"], "100000 tasks alive");
}

#[test]
fn the_limits_admit_the_largest_built_in_workloads() {
    let dir = tempfile::tempdir().unwrap();
    for w in ["hackbench:groups=250,loops=1", "kbuild:files=100000,seq_pre=0,burst=0,seq_post=0"] {
        let o = warmcore_in(dir.path(), &["sim", "--workload", w, "--max-time", "10ms"]);
        assert!(o.status.success(), "{w}: {}", err(&o));
    }
}

/// A small finished trace, and its bytes.
fn small_trace(d: &Path) -> Vec<u8> {
    let o = warmcore_in(d, &["trace", "synth", "-o", "whole.wct", "--events", "3000", "--cpus", "2"]);
    assert!(o.status.success(), "{}", err(&o));
    std::fs::read(d.join("whole.wct")).unwrap()
}

#[test]
fn every_reader_of_a_cut_trace_warns_or_fails_never_silently() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let whole = small_trace(d);
    let readers: &[&[&str]] = &[
        &["trace", "info", "cut.wct"],
        &["trace", "dump", "cut.wct"],
        &["trace", "stats", "cut.wct"],
        &["trace", "chains", "cut.wct"],
        &["trace", "export", "cut.wct", "--parquet", "/dev/null"],
        &["trace", "export", "cut.wct", "--perfetto", "/dev/null"],
        &["trace", "lod", "cut.wct"],
        &["sim", "--workload", "replay:trace=cut.wct", "--max-time", "1ms"],
    ];
    // Inside the prelude, the header, the chunks, the index, the trailer.
    let n = whole.len();
    let cuts = [0, 7, 20, 100, n / 4, n / 2, 3 * n / 4, n - 40, n - 9, n - 1];
    for &cut in &cuts {
        std::fs::write(d.join("cut.wct"), &whole[..cut]).unwrap();
        for args in readers {
            let o = warmcore_in(d, args);
            let e = err(&o);
            assert!(!e.contains("panicked"), "{args:?} at {cut}: {e}");
            let said = e.contains("incomplete trace") || !o.status.success();
            assert!(said, "{args:?} at {cut} of {n} bytes said nothing");
            if o.status.success() {
                assert!(e.lines().any(|l| l.contains("usable")), "{args:?} at {cut}: {e}");
            }
        }
        // --strict turns the warning into an error.
        let o = warmcore_in(d, &["trace", "dump", "cut.wct", "--strict"]);
        assert!(!o.status.success(), "--strict took a trace cut at {cut}");
    }
    let _ = std::fs::remove_file(d.join("cut.wct.lod"));
}

#[test]
fn empty_and_reversed_windows_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    small_trace(d);
    for args in [
        &["trace", "dump", "whole.wct", "--from", "5ms", "--to", "1ms"][..],
        &["trace", "dump", "whole.wct", "--from", "1ms", "--to", "1ms"],
        &["trace", "export", "whole.wct", "--parquet", "w.parquet", "--from", "2", "--to", "1"],
        &["plot", "whole.wct", "--from", "5ms", "--to", "1ms", "-o", "w.png"],
    ] {
        refused(d, args, "is not before --to");
    }
    assert!(!d.join("w.parquet").exists() && !d.join("w.png").exists());
}

/// `warmcore ... | head -1`: the command ends at the closed pipe without a
/// panic, killed by SIGPIPE as `cat` is, or done before it.
#[test]
fn every_command_piped_into_head_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    small_trace(d);
    let cmds: &[&[&str]] = &[
        &["sim", "--workload", "hackbench:groups=1,loops=5"],
        &["sim", "--workload", "hackbench:groups=1,loops=5", "--json"],
        &["compare", "--workload", "hackbench:groups=1,loops=5", "--runs", "1", "--policies", "cfs,slocal"],
        &["trace", "info", "whole.wct"],
        &["trace", "dump", "whole.wct"],
        &["trace", "stats", "whole.wct"],
        &["trace", "chains", "whole.wct"],
        &["trace", "export", "whole.wct", "--parquet", "-"],
        &["trace", "synth", "-o", "s.wct", "--events", "1000"],
        &["--help"],
    ];
    for args in cmds {
        let mut child = Command::new(env!("CARGO_BIN_EXE_warmcore"))
            .current_dir(d)
            .args(*args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read one line, then close the pipe, as head -1 does.
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = Vec::new();
        out.read_until(b'\n', &mut line).unwrap();
        drop(out);
        let mut e = String::new();
        child.stderr.take().unwrap().read_to_string(&mut e).unwrap();
        let status = child.wait().unwrap();
        assert!(!e.contains("panicked") && !e.contains("Broken pipe"), "{args:?}: {e}");
        assert!(status.success() || status.signal() == Some(libc::SIGPIPE), "{args:?}: {status:?} {e}");
    }
}

/// A sched_ext scheduler of one's own (`bpf:DIR`) whose recipe or source is
/// wrong, or a peer's recipe error: one line naming the file and line, and
/// a non-zero exit.
#[test]
fn bad_bpf_directories_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prog = d.join("prog");
    std::fs::create_dir(&prog).unwrap();
    // A minimal scheduler: the global queue only.
    std::fs::write(
        prog.join("main.bpf.c"),
        "#include <scx/common.bpf.h>\nchar _license[] SEC(\"license\") = \"GPL\";\nconst volatile u64 slice_ns = 1000000;\n\
         void BPF_STRUCT_OPS(mini_enqueue, struct task_struct *p, u64 enq_flags)\n{\n\tscx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, slice_ns, enq_flags);\n}\n\
         SCX_OPS_DEFINE(mini_ops, .enqueue = (void *)mini_enqueue, .name = \"mini\");\n",
    )
    .unwrap();
    let recipe = "loader = \"none: this test\"\n[options]\nslice_us = 1000\n[rodata]\nslice_ns = \"slice_us * 1000\"\n";
    std::fs::write(prog.join("recipe.toml"), recipe).unwrap();
    let spec = format!("bpf:{}", prog.display());
    let o = warmcore_in(d, &["sim", "--workload", "configure:checks=2", "--policy", &spec]);
    assert!(o.status.success(), "{}", err(&o));
    let path = prog.join("recipe.toml").display().to_string();
    std::fs::write(prog.join("recipe.toml"), recipe.replace("slice_ns = ", "slice_nsec = ")).unwrap();
    refused(d, &["sim", "--workload", "configure", "--policy", &spec], &format!("{path}:5: the program has no global slice_nsec"));
    std::fs::write(prog.join("recipe.toml"), format!("{recipe}[[after_load]]\nsyscall = \"enable_primary_cpu\"\n")).unwrap();
    refused(d, &["sim", "--workload", "configure", "--policy", &spec], &format!("{path}:6: the program has no SEC(\"syscall\") program enable_primary_cpu"));
    std::fs::write(prog.join("recipe.toml"), recipe).unwrap();
    let c = std::fs::read_to_string(prog.join("main.bpf.c")).unwrap();
    std::fs::write(prog.join("main.bpf.c"), c.replace("slice_ns, enq_flags", "slice_nanos, enq_flags")).unwrap();
    refused(d, &["sim", "--workload", "configure", "--policy", &spec], "main.bpf.c:6:40: error: use of undeclared identifier 'slice_nanos'");
    refused(d, &["sim", "--workload", "configure", "--policy", &format!("bpf:{}", d.join("none").display())], "recipe.toml");
    // Installed where the compiler is not (a wheel, the Debian package): a
    // program not yet built says what it needs, in one line.
    std::fs::write(prog.join("main.bpf.c"), c.replace("slice_ns, enq_flags", "slice_ns / 2, enq_flags")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_warmcore"))
        .current_dir(d)
        .env("PATH", d.join("no-bin"))
        .args(["sim", "--workload", "configure", "--policy", &spec])
        .output()
        .unwrap();
    let e = err(&o);
    assert!(!o.status.success() && e.trim_end().lines().count() == 1, "{e}");
    assert!(e.contains("which is not installed") && e.contains("apt install clang-19"), "{e}");
}
