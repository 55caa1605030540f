// SPDX-License-Identifier: GPL-2.0-only
//! The scx project's schedulers that warmcore hosts beside its own (the
//! "peers"), as their real loaders for the VM: each release that
//! `peers/Cargo.toml` names is built once with `cargo install --locked`
//! into the cache beside the kernel's, and `warmcore vm --peers` puts the
//! loaders into the initramfs beside `warmcore`.
//!
//! Each release gets a directory of its own, `peers/NAME-VERSION`, so that
//! a new release builds anew while the old one stays usable; all of them
//! share one cargo target directory (`peers/target`), where their common
//! dependencies (libbpf-rs, scx_utils, ...) are compiled once: the first
//! build of the three takes 10 minutes on a quiet 2-core machine (40 with
//! other builds beside it), the next ones reuse it.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// `peers/Cargo.toml`, the one place the peers and their versions are named.
const MANIFEST: &str = include_str!("../../../peers/Cargo.toml");

/// One peer: a crate of the package registry whose binary has its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    pub name: String,
    pub version: String,
}

impl Peer {
    /// The directory `cargo install --root` fills for this release.
    pub fn root(&self, cache: &Path) -> PathBuf {
        cache.join("peers").join(format!("{}-{}", self.name, self.version))
    }

    /// The loader, once built.
    pub fn binary(&self, cache: &Path) -> PathBuf {
        self.root(cache).join("bin").join(&self.name)
    }
}

/// The peers `peers/Cargo.toml` names, by name.
pub fn list() -> Result<Vec<Peer>> {
    parse(MANIFEST)
}

fn parse(manifest: &str) -> Result<Vec<Peer>> {
    let doc: toml::Table = manifest.parse().context("peers/Cargo.toml")?;
    let Some(deps) = doc.get("dependencies").and_then(|d| d.as_table()) else {
        bail!("peers/Cargo.toml: no [dependencies] table naming the peers");
    };
    deps.iter()
        .map(|(name, v)| {
            // Exact versions only: the cache is keyed by them.
            let req = v.as_str().or_else(|| v.get("version").and_then(|x| x.as_str())).unwrap_or("");
            match req.strip_prefix('=') {
                Some(ver) if !ver.is_empty() && ver.chars().all(|c| c.is_ascii_alphanumeric() || ".-+".contains(c)) => {
                    Ok(Peer { name: name.clone(), version: ver.to_string() })
                }
                _ => bail!("peers/Cargo.toml: {name} = {v}: give an exact version (\"=X.Y.Z\")"),
            }
        })
        .collect()
}

/// Build (once) every peer's loader into `cache`; each loader's path, in
/// name order. Progress goes to stderr; a loader that fails to
/// build is an error naming it (cargo's output above says why).
pub fn install(cache: &Path) -> Result<Vec<(Peer, PathBuf)>> {
    let peers = list()?;
    let missing: Vec<&Peer> = peers.iter().filter(|p| !p.binary(cache).is_file()).collect();
    if !missing.is_empty() {
        check_build_environment()?;
    }
    let target = cache.join("peers").join("target");
    for (i, p) in missing.iter().enumerate() {
        eprintln!(
            "vm-peers: building {} {} with cargo install ({} of {}; the first build of all takes 10 to 40 min on 2 cores)",
            p.name,
            p.version,
            i + 1,
            missing.len()
        );
        let root = p.root(cache);
        std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
        let st = Command::new("cargo")
            .args(["install", "--locked", "--root"])
            .arg(&root)
            .arg(format!("{}@{}", p.name, p.version))
            .env("CARGO_TARGET_DIR", &target)
            .status()
            .context("running cargo install (cargo must be on PATH: scripts/setup.sh checks it)")?;
        if !st.success() {
            bail!(
                "vm-peers: {} {} did not build (cargo install {}, output above); the other peers' loaders are kept in {}",
                p.name,
                p.version,
                st,
                cache.join("peers").display()
            );
        }
        if !p.binary(cache).is_file() {
            bail!("vm-peers: cargo install of {} {} left no {}", p.name, p.version, p.binary(cache).display());
        }
    }
    Ok(peers.into_iter().map(|p| {
        let b = p.binary(cache);
        (p, b)
    }).collect())
}

/// The loaders build their BPF side with scx_cargo, as `warmcore sched`
/// does: clang 18 or newer named by BPF_CLANG, and the static libelf that
/// libbpf links against where LIBBPF_SYS_LIBRARY_PATH points. The Makefile
/// sets both; a bare `warmcore vm peers` needs them from the caller.
fn check_build_environment() -> Result<()> {
    for var in ["BPF_CLANG", "LIBBPF_SYS_LIBRARY_PATH"] {
        if std::env::var_os(var).is_none_or(|v| v.is_empty()) {
            bail!(
                "vm-peers: {var} is not set: building the peers' loaders needs BPF_CLANG and LIBBPF_SYS_LIBRARY_PATH as the Makefile sets them (run `make test-vm`, or export them)"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_names_each_peer_with_an_exact_version() {
        let peers = list().unwrap();
        assert!(!peers.is_empty());
        for p in &peers {
            assert!(p.name.starts_with("scx_"), "{p:?}");
            assert!(p.version.split('.').count() == 3, "{p:?}");
        }
        let cache = Path::new("/c");
        let p = &peers[0];
        assert_eq!(p.binary(cache), PathBuf::from(format!("/c/peers/{}-{}/bin/{}", p.name, p.version, p.name)));
    }

    #[test]
    fn a_range_of_versions_is_refused() {
        let e = parse("[dependencies]\nscx_x = \"1.1\"\n").unwrap_err().to_string();
        assert!(e.contains("scx_x = \"1.1\": give an exact version"), "{e}");
        let e = parse("[package]\nname = \"x\"\n").unwrap_err().to_string();
        assert!(e.contains("no [dependencies]"), "{e}");
        let ok = parse("[dependencies]\nscx_x = { version = \"=2.0.1\" }\n").unwrap();
        assert_eq!(ok, vec![Peer { name: "scx_x".into(), version: "2.0.1".into() }]);
    }
}
