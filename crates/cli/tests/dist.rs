// SPDX-License-Identifier: GPL-2.0-only
//! What the packages of `make dist` install beside the binary, generated from
//! its command line: the man pages (`man warmcore-sched` renders them) and
//! the completions (bash completes `warmcore sim --pol` to `--policy`); and
//! `warmcore --version`, which names the commit.

use std::process::{Command, Output};

fn warmcore(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warmcore")).args(args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs a tool the test needs, failing in one line if it is not installed.
fn tool(cmd: &mut Command, package: &str) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("cannot run {:?}: {e}: install {package} (scripts/setup.sh)", cmd.get_program()))
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let o = warmcore(&["--version"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let head = Command::new("git").args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "--short=12", "HEAD"]).output().unwrap();
    let commit = text(&head.stdout).trim().to_string();
    assert!(head.status.success() && commit.len() == 12, "this test needs git and a clone");
    assert_eq!(out, format!("warmcore {} ({commit})\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn man_renders_a_page_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let man1 = dir.path().join("man1");
    std::fs::create_dir(&man1).unwrap();
    let o = warmcore(&["manpages", man1.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for page in ["warmcore", "warmcore-sim", "warmcore-sched", "warmcore-trace-stats", "warmcore-vm-workload-hogs", "warmcore-plot-sweep"] {
        assert!(man1.join(format!("{page}.1")).is_file(), "no page {page}.1");
    }
    // The hidden command that writes them has none; clap's help neither.
    assert!(!man1.join("warmcore-manpages.1").exists() && !man1.join("warmcore-help.1").exists());
    let o = tool(
        Command::new("man").arg("warmcore-sched").env("MANPATH", dir.path()).env("MANPAGER", "cat").env("MANWIDTH", "100"),
        "man-db",
    );
    assert!(o.status.success(), "man warmcore-sched: {}", text(&o.stderr));
    let page = text(&o.stdout);
    for needle in ["warmcore-sched", "SYNOPSIS", "--policy", "nest", "--run-for"] {
        assert!(page.contains(needle), "`man warmcore-sched` lacks {needle}:\n{page}");
    }
}

#[test]
fn bash_completes_an_option_of_a_command() {
    let o = warmcore(&["completions", "bash"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let script = text(&o.stdout);
    // What bash does on TAB after `warmcore sim --pol`, then `warmcore tr`.
    let complete = |line: &str| {
        let words: Vec<&str> = line.split(' ').collect();
        let call = format!(
            "{script}\nCOMP_WORDS=({line}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; _warmcore warmcore {} {}; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            words.len() - 1,
            words[words.len() - 1],
            words[words.len() - 2],
        );
        let o = tool(Command::new("bash").arg("-c").arg(call), "bash");
        assert!(o.status.success(), "{}", text(&o.stderr));
        text(&o.stdout).lines().map(str::to_string).collect::<Vec<_>>()
    };
    assert_eq!(complete("warmcore sim --pol"), ["--policy"]);
    assert_eq!(complete("warmcore tr"), ["trace"]);
}

#[test]
fn bad_input_of_the_generators_is_a_usage_error() {
    let o = warmcore(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("bash"), "names the shells it knows: {}", text(&o.stderr));
    let dir = tempfile::tempdir().unwrap();
    let o = warmcore(&["manpages", dir.path().join("no-dir").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("create it first"), "{}", text(&o.stderr));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing written");
}
