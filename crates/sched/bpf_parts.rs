// SPDX-License-Identifier: GPL-2.0-only
//! The files of a BPF program: its main file and what that includes with
//! `#include "NAME"` from beside it, recursively: one translation unit in
//! several files. Every program that compiles one reads it here: this
//! crate's build.rs (main.bpf.c for the kernel), and crates/sim's
//! build_program.rs (for the host: warmcore's program, the peers', bpf:DIR),
//! so that a part added to a program needs no change in either.

use std::fs;
use std::path::{Path, PathBuf};

/// A program's source file as the compiler reads it: its text with each
/// `#include "NAME"` of a file beside the including one replaced by that
/// file (once: a second include adds nothing, as its guard would), and the
/// files read, `file` first and then each in the order the compiler meets
/// them. Includes that name no file beside the including one (the scx
/// headers, anything on the include path) are left as they are.
pub fn expand(file: &Path) -> Result<(Vec<PathBuf>, String), String> {
    fn go(file: &Path, files: &mut Vec<PathBuf>) -> Result<String, String> {
        files.push(file.to_path_buf());
        let text = fs::read_to_string(file).map_err(|e| format!("reading {}: {e}", file.display()))?;
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
                Some(p) => out.push_str(&go(&p, files)?),
                None => out.push_str(line),
            }
        }
        Ok(out)
    }
    let mut files = Vec::new();
    let text = go(file, &mut files)?;
    Ok((files, text))
}
