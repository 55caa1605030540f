// SPDX-License-Identifier: GPL-2.0-only
//! The exit status of every command for representative bad input of each
//! kind (docs/conventions.md, Exit statuses): 2 when the command refuses what
//! it was given (a bad option, name, value or file), 1 when the work fails,
//! with one line on standard error either way.

use std::path::Path;
use std::process::Command;

const USAGE: i32 = 2;
const FAILURE: i32 = 1;

#[test]
fn every_command_exits_2_on_bad_input_and_1_when_the_work_fails() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_warmcore")).current_dir(d).args(args).output().unwrap();
    let o = run(&["trace", "synth", "-o", "whole.wct", "--events", "3000", "--cpus", "2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let whole = std::fs::read(d.join("whole.wct")).unwrap();
    std::fs::write(d.join("cut.wct"), &whole[..whole.len() / 2]).unwrap();
    std::fs::write(d.join("notes.txt"), "these are not events\n").unwrap();
    std::fs::create_dir(d.join("a-dir")).unwrap();
    // A write that fails: the work, not what the command was given.
    assert!(Path::new("/dev/full").exists(), "/dev/full is needed to make a write fail");

    #[rustfmt::skip]
    let table: &[(&[&str], i32, &str)] = &[
        // A bad option or value, refused by the command line's parser.
        (&["sim", "--polcy", "cfs"], USAGE, "unexpected argument"),
        (&["sim", "--workload", "hackbench", "--max-time", "-1"], USAGE, "negative"),
        (&["record", "--duration", "0"], USAGE, "above 0"),
        // A bad name.
        (&["sim", "--workload", "nosuch"], USAGE, "nosuch"),
        (&["sim", "--workload", "hackbench", "--policy", "nosuch"], USAGE, "nosuch"),
        (&["sim", "--workload", "hackbench", "--machine", "nosuch"], USAGE, "nosuch"),
        (&["compare", "--workload", "hackbench", "--policies", "cfs,nosuch", "--runs", "1"], USAGE, "nosuch"),
        (&["trace", "dump", "whole.wct", "--event", "NOPE"], USAGE, "no event named"),
        // A value out of range.
        (&["sim", "--workload", "hackbench:groups=0"], USAGE, "groups must be a whole number"),
        (&["trace", "dump", "whole.wct", "--cpu", "9"], USAGE, "no CPU 9"),
        (&["trace", "dump", "whole.wct", "--from", "2ms", "--to", "1ms"], USAGE, "is not before --to"),
        (&["record", "--cpus", "3-1"], USAGE, "bad CPU list"),
        (&["ftl", "--cpu", "99999", "-o", "f.png"], USAGE, "no CPU 99999"),
        (&["reproduce", "--out", "r", "--only", "x"], USAGE, "--only takes claim ids"),
        (&["reproduce", "--out", "r", "--only", "99"], USAGE, "unknown claim id 99"),
        (&["reproduce", "--out", "notes.txt", "--only", "1"], USAGE, "choose a writable --out"),
        (&["vm", "--kernel", "missing-vmlinuz", "--", "true"], USAGE, "--kernel missing-vmlinuz: no such file"),
        (&["field", "--out", "f", "--set", "machines=nosuch"], USAGE, "nosuch"),
        // An EPP the machine's driver lacks, or one the kernel refuses.
        (&["sim", "--workload", "hackbench", "--machine", "ryzen5-3400g", "--governor", "powersave:epp=power"], USAGE, "acpi-cpufreq"),
        (&["compare", "--workload", "hackbench", "--machine", "xeon-8592p-2s", "--governor", "performance:epp=power", "--runs", "1"], USAGE, "refuses"),
        (&["field", "--out", "f", "--set", "governors=schedutil:epp=power", "--set", "machines=epyc-9654-2s"], USAGE, "passive"),
        (&["hunt", "--policy", "scx:nosuch", "--out", "h"], USAGE, "nosuch"),
        (&["hunt", "--policy", "scx:default", "--machine", "default,nosuch", "--out", "h"], USAGE, "nosuch"),
        (&["hunt", "--policy", "scx:default", "--runs", "0", "--out", "h"], USAGE, "--runs"),
        (&["hunt", "--policy", "scx:default", "--runs", "1", "--sim-time", "1s", "--out", "h"], USAGE, "cannot be used with"),
        (&["hunt", "--policy", "scx:default", "--out", "notes.txt"], USAGE, "not a directory"),
        // An input file that cannot be read, or is not what it should be.
        (&["trace", "info", "missing.wct"], USAGE, "No such file"),
        (&["trace", "stats", "notes.txt"], USAGE, "not a warmcore trace"),
        (&["trace", "dump", "cut.wct", "--strict"], USAGE, "incomplete trace"),
        (&["trace", "import", "--from", "perf-script", "notes.txt", "-o", "i.wct"], USAGE, "notes.txt"),
        (&["sim", "--workload", "replay:trace=notes.txt"], USAGE, "not a warmcore trace"),
        (&["sim", "--workload", "replay:trace=missing.wct"], USAGE, "made by `warmcore record` or `warmcore trace import`"),
        (&["sweep", "missing.toml", "--out", "s"], USAGE, "cannot read missing.toml"),
        (&["sweep", "notes.txt", "--out", "s"], USAGE, "notes.txt"),
        (&["view", "notes.txt"], USAGE, "not a warmcore trace"),
        (&["plot", "missing.wct", "-o", "p.png"], USAGE, "No such file"),
        // An output the command may not write.
        (&["trace", "export", "whole.wct", "--parquet", "whole.wct"], USAGE, "is an input of this command"),
        (&["trace", "export", "whole.wct", "--perfetto", "a-dir"], USAGE, "is a directory"),
        (&["trace", "synth", "-o", "no-dir/s.wct"], USAGE, "create it first"),
        (&["sim", "--workload", "hackbench", "--trace", "-"], USAGE, "report goes to standard output"),
        (&["sim", "--workload", "hackbench", "--trace", "a-dir"], USAGE, "is a directory"),
        (&["record", "-o", "a-dir"], USAGE, "is a directory"),
        (&["ftl", "-o", "no-dir/f.png"], USAGE, "create it first"),
        // The viewer's own checks (Python): a bad view, an output it cannot draw.
        (&["plot", "whole.wct", "--view", "nosuch", "-o", "p.png"], USAGE, "nosuch"),
        (&["plot", "whole.wct", "-o", "p.txt"], USAGE, ".png or .html"),
        // The work failed: a write that fails.
        (&["trace", "export", "whole.wct", "--parquet", "/dev/full"], FAILURE, "/dev/full"),
        (&["trace", "synth", "-o", "/dev/full", "--events", "100000"], FAILURE, "/dev/full"),
        (&["sim", "--workload", "hackbench:groups=1,loops=50", "--trace", "/dev/full"], FAILURE, "/dev/full"),
    ];
    for (args, want, says) in table {
        let o = run(args);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(*want), "{args:?}: {e}");
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{args:?}: {e}");
        assert!(e.contains(says), "{args:?}: {e}");
    }
    // Nothing was written by a refused command.
    for f in ["i.wct", "p.png", "p.txt", "s", "r", "no-dir", "f.png", "f", "h"] {
        assert!(!d.join(f).exists(), "{f} was written");
    }
}
