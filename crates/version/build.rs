// SPDX-License-Identifier: GPL-2.0-only
//! The commit the build is made from: `git rev-parse HEAD` in the checkout,
//! else $WARMCORE_COMMIT (a build from a source archive), else "unknown".
//! Reruns when HEAD moves (a commit, a checkout), not on every edit: a build
//! with uncommitted changes names the commit they are made on.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=WARMCORE_COMMIT");
    let commit = git(&["rev-parse", "--short=12", "HEAD"])
        .or_else(|| std::env::var("WARMCORE_COMMIT").ok().filter(|c| !c.is_empty()))
        .unwrap_or_else(|| "unknown".into());
    // HEAD, the branch it names and the packed refs: what a commit or a
    // checkout changes. Only files that exist (cargo reruns every time for
    // a missing one).
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for w in watched {
        if let Some(p) = git(&["rev-parse", "--path-format=absolute", "--git-path", &w]) {
            if std::path::Path::new(&p).exists() {
                println!("cargo:rerun-if-changed={p}");
            }
        }
    }
    println!("cargo:rustc-env=WARMCORE_COMMIT={commit}");
}
