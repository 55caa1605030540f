// SPDX-License-Identifier: GPL-2.0-only
//! The project stands alone in a clone: no file of the repository refers to
//! a document outside it, or to a path of the machine it was written on.
//! Sources are cited by paper and section or by a file of docs/
//! (docs/papers.md, docs/model.md, docs/architecture.md).
//!
//! Every file `git ls-files` lists is read as bytes, text or not; a file
//! compressed with zstd is also read decompressed. A line fails if it holds
//! one of `OUTSIDE`, or one of `ABSOLUTE` where an absolute path starts
//! (not as the tail of a longer path such as /sys/kernel/sched_ext/root/ops).
//! The files of `ALLOWED` are still read: what they hold is printed, and
//! does not fail the test.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Names of documents that are not part of the repository.
const OUTSIDE: &[&str] = &["shared/seeds", "shared/DESIGN", "MODEL-FACTS", "../shared"];

/// Directories of a particular machine, as the start of an absolute path.
const ABSOLUTE: &[&str] = &["/work/", "/root/", "/home/"];

/// This file names the patterns it looks for.
const THIS_TEST: &str = "crates/cli/tests/stands_alone.rs";

/// Files whose matches are reported but allowed, with the reason.
const ALLOWED: &[(&str, &str)] = &[
    (THIS_TEST, "the patterns of this test"),
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The tracked files, as git names them (relative to the root).
fn tracked_files(root: &Path) -> Vec<String> {
    let out = Command::new("git").arg("-C").arg(root).args(["ls-files", "-z"]).output().unwrap_or_else(|e| {
        panic!("cannot run git ls-files in {}: {e}; this test needs git and a clone", root.display())
    });
    assert!(
        out.status.success(),
        "git ls-files failed in {}: {}",
        root.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let files: Vec<String> = out
        .stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8(p.to_vec()).expect("a tracked path that is not UTF-8"))
        .collect();
    assert!(!files.is_empty(), "git ls-files lists no file in {}", root.display());
    files
}

/// A byte that can continue a path leftwards: the pattern is then the tail
/// of a longer path or an expansion (`$DIR/root/`, `{X}/home/`), not the
/// start of an absolute path.
fn continues_path(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"_-./}){$~@+%".contains(&b)
}

/// What in `line` refers outside the repository.
fn offences(line: &[u8]) -> Vec<&'static str> {
    let mut found = Vec::new();
    for &p in OUTSIDE {
        if find_all(line, p.as_bytes()).next().is_some() {
            found.push(p);
        }
    }
    for &p in ABSOLUTE {
        let starts_path = find_all(line, p.as_bytes()).any(|at| {
            let before = &line[..at];
            match before.last() {
                None => true,
                // file:///home/...: a URL of a local path.
                Some(b'/') => before.ends_with(b"file://"),
                Some(&b) => !continues_path(b),
            }
        });
        if starts_path {
            found.push(p);
        }
    }
    found
}

fn find_all<'a>(hay: &'a [u8], needle: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    hay.windows(needle.len()).enumerate().filter(move |(_, w)| *w == needle).map(|(i, _)| i)
}

/// (line number, patterns) of every offending line of `bytes`.
fn scan(bytes: &[u8]) -> Vec<(usize, Vec<&'static str>)> {
    bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .filter_map(|(i, line)| {
            let o = offences(line);
            (!o.is_empty()).then_some((i + 1, o))
        })
        .collect()
}

#[test]
fn no_file_refers_outside_the_repository() {
    let root = repo_root();
    let files = tracked_files(&root);
    for (path, _) in ALLOWED {
        assert!(files.iter().any(|f| f == path), "ALLOWED names {path}, which git does not track: remove it");
    }
    let mut failures = Vec::new();
    let mut allowed = Vec::new();
    let mut checked = 0;
    for f in &files {
        let full = root.join(f);
        let bytes = match std::fs::read(&full) {
            Ok(b) => b,
            // Tracked but deleted in this working tree: nothing to read.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!("not checked: {f} is tracked but absent from the working tree");
                continue;
            }
            Err(e) => panic!("cannot read {}: {e}", full.display()),
        };
        checked += 1;
        let mut views = vec![(f.clone(), bytes)];
        if f.ends_with(".zst") {
            let plain = zstd::decode_all(&views[0].1[..]).unwrap_or_else(|e| panic!("{f}: not zstd ({e})"));
            views.push((format!("{f} (decompressed)"), plain));
        }
        let reason = ALLOWED.iter().find(|(p, _)| p == f).map(|(_, r)| *r);
        for (name, bytes) in &views {
            for (line, pats) in scan(bytes) {
                let msg = format!("{name}:{line}: {}", pats.join(", "));
                match reason {
                    Some(r) => allowed.push(format!("{msg} (allowed: {r})")),
                    None => failures.push(msg),
                }
            }
        }
    }
    for a in &allowed {
        eprintln!("{a}");
    }
    assert!(checked > 0);
    assert!(
        failures.is_empty(),
        "{} line(s) refer outside the repository; cite a paper and section (docs/papers.md) or a file of docs/ instead:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_patterns_match_what_they_should() {
    assert_eq!(offences(b"see shared/seeds/000, section 3.2"), vec!["shared/seeds"]);
    assert_eq!(offences(b"(MODEL-FACTS.md section 4)"), vec!["MODEL-FACTS"]);
    assert_eq!(offences(b"include ../shared/x"), vec!["../shared"]);
    assert_eq!(offences(b"out = \"/home/u/out\""), vec!["/home/"]);
    assert_eq!(offences(b"/work/main/x"), vec!["/work/"]);
    assert_eq!(offences(b"cd /root/warmcore"), vec!["/root/"]);
    assert_eq!(offences(b"file:///home/u/x.html"), vec!["/home/"]);
    // Tails of longer paths, expansions and URLs are not absolute paths.
    assert!(offences(b"cat /sys/kernel/sched_ext/root/ops").is_empty());
    assert!(offences(b"format!(\"{SCHED_EXT_DIR}/root/ops\")").is_empty());
    assert!(offences(b"$HOME/work/x").is_empty());
    assert!(offences(b"https://example.org/home/x").is_empty());
    assert!(offences(b"Nest, section 3.2; docs/model.md, PELT and schedutil").is_empty());
}
