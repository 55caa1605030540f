// SPDX-License-Identifier: GPL-2.0-only
//! The scx project's schedulers the simulator runs as `scx:NAME` ("peers"):
//! those peers/Cargo.toml names, at the versions of its lock, built for
//! the host by build.rs from the sources `cargo fetch --manifest-path
//! peers/Cargo.toml` put in cargo's registry, with their recipes
//! (peers/NAME.toml).

/// A peer as built.
pub struct PeerBuild {
    /// `scx:NAME`.
    pub name: &'static str,
    /// The crate (scx_NAME) and its version.
    pub krate: &'static str,
    pub version: &'static str,
    /// peers/NAME.toml, and its path.
    pub recipe: &'static str,
    pub recipe_path: &'static str,
    /// The host build, None if the sources were not fetched.
    pub so: Option<&'static [u8]>,
    /// The translation units, then every file they read, under the crate.
    pub units: &'static [&'static str],
    pub files: &'static [(&'static str, &'static str)],
}

pub static PEERS: &[PeerBuild] = &include!(concat!(env!("OUT_DIR"), "/wc_scx_peers.rs"));

pub fn find(name: &str) -> Option<&'static PeerBuild> {
    PEERS.iter().find(|p| p.name == name)
}

/// The recipe's path as the user knows it: relative to the repository.
pub fn recipe_name(p: &PeerBuild) -> String {
    match p.recipe_path.rfind("/peers/") {
        Some(i) => p.recipe_path[i + 1..].to_string(),
        None => p.recipe_path.to_string(),
    }
}
