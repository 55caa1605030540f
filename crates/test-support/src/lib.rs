// SPDX-License-Identifier: GPL-2.0-only
//! What the tests need of the machine, and what happens when it is missing.
//!
//! A test that cannot run here must not pass: a missing prerequisite fails
//! the test with one line naming it and how to get it. Skipping is only on
//! request, by name, in `WARMCORE_TEST_SKIP` (a comma-separated list of the
//! names of [`PREREQS`]); a skipped test prints why and appends the same
//! line to the file `WARMCORE_SKIP_LOG` names, so that `make test` can say
//! what it did not run. The Python tests (python/tests/conftest.py) follow
//! the same rules with the same names.
//!
//! ```
//! use warmcore_test_support::{require, root_missing};
//!
//! fn loads_bpf() {
//!     require!("root", root_missing());
//!     // ...
//! }
//! ```

use std::io::Write;

/// The environment variable that asks to skip tests, by prerequisite.
pub const SKIP_VAR: &str = "WARMCORE_TEST_SKIP";
/// The environment variable naming the file skipped tests are logged to.
pub const SKIP_LOG_VAR: &str = "WARMCORE_SKIP_LOG";

/// Every prerequisite a test may name, with how to get it. The README's
/// testing section lists the same names; a test below holds them together.
pub const PREREQS: &[(&str, &str)] = &[
    ("root", "run the tests as root (make test as root)"),
    ("btf", "boot a kernel built with CONFIG_DEBUG_INFO_BTF=y"),
    ("tmpfs", "run as root where mount may mount a tmpfs (a container needs CAP_SYS_ADMIN)"),
    ("cgroup2", "run as root with the cgroup v2 hierarchy mounted on /sys/fs/cgroup"),
    ("setpriv", "install util-linux"),
    ("browser", "run scripts/setup.sh (Debian's chromium and chromium-driver)"),
    ("binary", "run make build"),
    ("vm", "run scripts/setup.sh (qemu-system-x86, busybox-static, cpio)"),
];

/// How to get the prerequisite `name`; panics on a name not in [`PREREQS`],
/// so that a misspelt name in a test fails at once.
pub fn how_to_get(name: &str) -> &'static str {
    PREREQS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, how)| *how)
        .unwrap_or_else(|| panic!("'{name}' is not a prerequisite: one of {}", names()))
}

fn names() -> String {
    PREREQS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

/// Whether `WARMCORE_TEST_SKIP` asks to skip the tests that need `name`.
/// A name there that is not a prerequisite fails: a typo would otherwise
/// ask for nothing, and the test would fail with a less helpful line.
pub fn skip_requested(name: &str) -> bool {
    how_to_get(name);
    let list = std::env::var(SKIP_VAR).unwrap_or_default();
    let mut hit = false;
    for n in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        how_to_get(n);
        hit |= n == name;
    }
    hit
}

/// A prerequisite is missing: fail with one line, or, when skipping it was
/// asked for, print and log the skip and return (the caller then returns).
/// Use it through [`require!`].
pub fn missing(name: &str, what: &str) {
    let how = how_to_get(name);
    if !skip_requested(name) {
        panic!("needs {name}: {what}: {how}, or set {SKIP_VAR}={name} to skip");
    }
    let test = std::thread::current().name().unwrap_or("a test").to_string();
    let line = format!("{name}: {test}: {what}");
    eprintln!("SKIPPED {line}");
    if let Some(path) = std::env::var_os(SKIP_LOG_VAR).filter(|p| !p.is_empty()) {
        // One write of a whole line: tests run in parallel threads and
        // processes, and O_APPEND keeps such writes whole.
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{SKIP_LOG_VAR}={}: {e}", path.to_string_lossy()));
        f.write_all(format!("{line}\n").as_bytes())
            .unwrap_or_else(|e| panic!("{SKIP_LOG_VAR}={}: {e}", path.to_string_lossy()));
    }
}

/// `require!("root", why_missing)`: where `why_missing` (an
/// `Option<String>`) is `Some`, fail the test, or skip it on request by
/// returning from the test function. The list of `WARMCORE_TEST_SKIP` is
/// checked either way, so that a misspelt name fails where it would not
/// have been needed too.
#[macro_export]
macro_rules! require {
    ($name:expr, $missing:expr) => {
        $crate::skip_requested($name);
        if let Some(what) = $missing {
            $crate::missing($name, &what);
            return;
        }
    };
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Root, for loading BPF programs; `None` when this process is root.
pub fn root_missing() -> Option<String> {
    (!is_root()).then(|| "loading BPF programs needs CAP_BPF and CAP_PERFMON".to_string())
}

/// A kernel with BTF, which CO-RE BPF programs are relocated against.
pub fn btf_missing() -> Option<String> {
    let p = "/sys/kernel/btf/vmlinux";
    (!std::path::Path::new(p).exists()).then(|| format!("the kernel has no BTF ({p})"))
}

/// The files of `tests_dir` that its `main.rs` does not declare with
/// `#[path = "NAME.rs"]`, sorted.
pub fn undeclared_test_files(tests_dir: &std::path::Path) -> Vec<String> {
    let main = std::fs::read_to_string(tests_dir.join("main.rs"))
        .unwrap_or_else(|e| panic!("cannot read {}/main.rs: {e}", tests_dir.display()));
    let entries = std::fs::read_dir(tests_dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", tests_dir.display()));
    let mut out: Vec<String> = entries
        .map(|e| e.expect("a directory entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".rs") && name != "main.rs" && !main.contains(&format!("#[path = \"{name}\"]")))
        .collect();
    out.sort();
    out
}

/// Every crate's integration tests are one binary, `tests/main.rs`, with
/// autotests off (cargo would otherwise link each file as a binary of its
/// own): a file added to `tests/` runs only once main.rs declares it. Each
/// tests/main.rs calls this from a test with its `CARGO_MANIFEST_DIR`, so that
/// an undeclared file fails rather than stays silently unrun.
pub fn every_test_file_is_declared(manifest_dir: &str) {
    let undeclared = undeclared_test_files(&std::path::Path::new(manifest_dir).join("tests"));
    assert!(
        undeclared.is_empty(),
        "tests/{} not declared in tests/main.rs, so it does not run: add it there",
        undeclared.join(", tests/")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tests/ directory with a main.rs that declares `declared`, beside
    /// the files `present`.
    fn tests_dir(tag: &str, declared: &[&str], present: &[&str]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("warmcore-test-support-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let main: String = declared.iter().map(|n| format!("#[path = \"{n}\"]\nmod {};\n", n.trim_end_matches(".rs"))).collect();
        std::fs::write(dir.join("main.rs"), main).unwrap();
        for n in present {
            std::fs::write(dir.join(n), "").unwrap();
        }
        dir
    }

    #[test]
    fn an_undeclared_test_file_is_found_and_a_declared_one_is_not() {
        let dir = tests_dir("decl", &["a.rs"], &["a.rs", "b.rs", "c.rs", "notes.txt"]);
        assert_eq!(undeclared_test_files(&dir), ["b.rs", "c.rs"]);
        std::fs::write(dir.join("main.rs"), "#[path = \"a.rs\"]\n#[path = \"b.rs\"]\n#[path = \"c.rs\"]\n").unwrap();
        assert!(undeclared_test_files(&dir).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_crate_check_fails_naming_the_undeclared_file() {
        let root = tests_dir("crate", &[], &[]);
        let tests = root.join("tests");
        std::fs::create_dir_all(&tests).unwrap();
        std::fs::write(tests.join("main.rs"), "").unwrap();
        std::fs::write(tests.join("new.rs"), "").unwrap();
        let err = std::panic::catch_unwind(|| every_test_file_is_declared(root.to_str().unwrap())).unwrap_err();
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        std::fs::remove_dir_all(&root).unwrap();
        assert!(msg.contains("tests/new.rs not declared"), "{msg}");
    }

    #[test]
    fn the_readme_names_every_prerequisite() {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
        let section = readme.split("\n## Testing").nth(1).expect("README.md has a section ## Testing");
        let section = section.split("\n## ").next().unwrap();
        for (name, _) in PREREQS {
            assert!(section.contains(&format!("`{name}`")), "README's testing section does not name `{name}`");
        }
    }

    #[test]
    fn python_tests_know_the_same_prerequisites() {
        let conftest =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../python/tests/conftest.py")).unwrap();
        for (name, how) in PREREQS {
            assert!(conftest.contains(&format!("\"{name}\": \"{how}\"")), "conftest.py's PREREQS lacks {name}: {how}");
        }
    }

    #[test]
    #[should_panic(expected = "not a prerequisite")]
    fn an_unknown_name_fails() {
        how_to_get("chromium");
    }
}
