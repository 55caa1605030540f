// SPDX-License-Identifier: GPL-2.0-only
//! `bpf:DIR`: a sched_ext scheduler of one's own, from a directory holding
//! its BPF sources and a recipe (DIR/recipe.toml, docs/peers.md), built for
//! the host on first use exactly as build.rs builds the built-in programs
//! (same compiler, flags, scx headers and host layer), into a cache keyed
//! by what the build reads: $XDG_CACHE_HOME/warmcore/bpf (or
//! ~/.cache/warmcore/bpf), beside the VM's kernels.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use super::build_program::{self, Toolchain};

/// The toolchain and the host layer the binary was built with: part of the
/// cache key, so that a rebuilt warmcore builds the program again.
const TOOLCHAIN: &str = include_str!(concat!(env!("OUT_DIR"), "/wc_scx_toolchain.txt"));
const HOST_LAYER: &[&str] = &[
    include_str!("../../scx/host.c"),
    include_str!("../../scx/host.h"),
    include_str!("../../scx/prelude.h"),
    include_str!("../../scx/tables.h"),
    include_str!("build_program.rs"),
];

fn cache_dir() -> Result<PathBuf, String> {
    let base = match (std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME")) {
        (Some(x), _) if !x.is_empty() => PathBuf::from(x),
        (_, Some(h)) if !h.is_empty() => PathBuf::from(h).join(".cache"),
        _ => return Err("no cache directory: set HOME or XDG_CACHE_HOME".into()),
    };
    Ok(base.join("warmcore").join("bpf"))
}

/// The program of `dir`: its host build (from the cache, or built now),
/// its recipe's path as errors name it, and the recipe.
pub fn build(dir: &Path) -> Result<(Vec<u8>, String, String), String> {
    let recipe_path = dir.join("recipe.toml");
    let recipe = std::fs::read_to_string(&recipe_path)
        .map_err(|e| format!("{}: {e} (a bpf:DIR directory holds its BPF sources and recipe.toml)", recipe_path.display()))?;
    let recipe_name = recipe_path.display().to_string();
    let table: toml::Table = recipe.parse().map_err(|e: toml::de::Error| {
        let line = e.span().map(|s| recipe[..s.start.min(recipe.len())].matches('\n').count() + 1).unwrap_or(1);
        format!("{recipe_name}:{line}: {}", e.message())
    })?;
    let sources: Vec<String> = match table.get("sources") {
        None => vec!["main.bpf.c".into()],
        Some(v) => v
            .as_array()
            .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect::<Option<Vec<_>>>())
            .ok_or_else(|| format!("{recipe_name}: sources: expected a list of file names"))?,
    };
    // The key: every file the units read, the toolchain, the host layer.
    let mut h = DefaultHasher::new();
    TOOLCHAIN.hash(&mut h);
    HOST_LAYER.hash(&mut h);
    // The compiler runs in a directory of its own: a relative DIR is made
    // absolute, or its sources would not be found from there.
    let dir = &std::path::absolute(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let units: Vec<PathBuf> = sources.iter().map(|s| dir.join(s)).collect();
    for u in &units {
        let (files, _) = build_program::expand(u)?;
        for f in files {
            f.strip_prefix(dir).unwrap_or(&f).hash(&mut h);
            std::fs::read(&f).map_err(|e| format!("{}: {e}", f.display()))?.hash(&mut h);
        }
    }
    let key = format!("{:016x}", h.finish());
    let cache = cache_dir()?;
    let done = cache.join(&key).join("program.so");
    if let Ok(so) = std::fs::read(&done) {
        return Ok((so, recipe_name, recipe));
    }
    // Built beside its final place, then renamed there: a concurrent build
    // of the same sources (another process, or another thread of this one)
    // finds one or the other whole.
    static BUILDS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let work = cache.join(format!("{key}.{}.{n}", std::process::id()));
    let tc = Toolchain::from_text(TOOLCHAIN);
    tc.check()?;
    let r = build_program::build(&tc, &units, &work).map_err(|e| one_line(&e));
    let so = match r {
        Ok(so) => so,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&work);
            return Err(e);
        }
    };
    let bytes = std::fs::read(&so).map_err(|e| e.to_string())?;
    if std::fs::rename(&work, cache.join(&key)).is_err() {
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok((bytes, recipe_name, recipe))
}

/// A compiler's failure as one line: its first error (file:line:col:
/// error: what), else its first line.
fn one_line(e: &str) -> String {
    e.lines()
        .find(|l| l.contains("error:"))
        .or_else(|| e.lines().find(|l| !l.trim().is_empty()))
        .unwrap_or("the build failed")
        .trim()
        .to_string()
}
