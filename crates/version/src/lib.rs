// SPDX-License-Identifier: GPL-2.0-only
//! warmcore's version, defined once: the workspace's version and the commit
//! it was built from (build.rs). `warmcore --version` prints it, and the
//! sweep's run keys hash it, so that a simulator built from another commit
//! runs again what an older one ran.

/// The workspace's version and the commit: `0.1.0 (1a2b3c4d5e6f)`.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("WARMCORE_COMMIT"), ")");

/// The commit the binary was built from, "unknown" outside a checkout
/// without $WARMCORE_COMMIT.
pub const COMMIT: &str = env!("WARMCORE_COMMIT");
