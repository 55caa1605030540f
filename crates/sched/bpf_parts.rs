// SPDX-License-Identifier: GPL-2.0-only
//! The files of the BPF scheduler: src/bpf/main.bpf.c and what it includes
//! with `#include "NAME"` from beside it, recursively: one translation unit
//! in several files. Both programs that compile it read it here, this
//! crate's build.rs (for the kernel) and crates/sim/build.rs (for the host),
//! so that a part added to main.bpf.c needs no change in either.

use std::fs;
use std::path::{Path, PathBuf};

/// The program's files, `main` first and then each included file once, in
/// the order the compiler meets them; and the program's text as the
/// compiler reads it, each included file in place of its first `#include`
/// line (a second include of a file adds nothing, as its guard would).
/// Includes that name no file beside the including one (the scx headers,
/// anything on the include path) are left as they are.
pub fn program(main: &Path) -> (Vec<PathBuf>, String) {
    let mut files = Vec::new();
    let text = expand(main, &mut files);
    (files, text)
}

fn expand(file: &Path, files: &mut Vec<PathBuf>) -> String {
    files.push(file.to_path_buf());
    let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let part = line
            .trim_start()
            .strip_prefix("#include")
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix('"'))
            .and_then(|r| r.split('"').next())
            .map(|name| dir.join(name))
            .filter(|p| p.is_file());
        match part {
            Some(p) if files.contains(&p) => {}
            Some(p) => out.push_str(&expand(&p, files)),
            None => out.push_str(line),
        }
    }
    out
}
