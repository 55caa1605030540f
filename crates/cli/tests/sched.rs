// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore sched` before it touches the kernel: as a user who is not root.
//! The scheduler itself runs in the VM suite (python/tests/vm).

use std::process::{Command, Output};

/// Run warmcore as the user nobody: through setpriv when this test runs as
/// root, directly otherwise. None if setpriv is missing and skipping it was
/// asked for.
fn as_nobody(args: &[&str]) -> Option<Output> {
    let exe = env!("CARGO_BIN_EXE_warmcore");
    let root = warmcore_test_support::is_root();
    let mut c = if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", exe]);
        c
    } else {
        Command::new(exe)
    };
    match c.args(args).output() {
        Ok(o) => Some(o),
        Err(e) if root && e.kind() == std::io::ErrorKind::NotFound => {
            warmcore_test_support::missing("setpriv", "no setpriv to drop root");
            None
        }
        Err(e) => panic!("running {exe}: {e}"),
    }
}

#[test]
fn not_root_says_so_in_one_line() {
    for args in [&["sched", "--policy", "nest"][..], &["sched", "--policy", "default", "--stats", "1"][..]] {
        let Some(o) = as_nobody(args) else { return };
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("needs root"), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(o.stdout.is_empty(), "{args:?}: nothing on stdout");
    }
}
