// SPDX-License-Identifier: GPL-2.0-only
//! Exporters: a `.wct` trace (or a time window of it) written in formats that
//! other tools read. Both stream: they read events in global time order and
//! write as they go, so their memory does not grow with the trace.
//!
//! - [`perfetto`]: a Perfetto protobuf trace (ftrace event bundles per CPU),
//!   which ui.perfetto.dev opens with its native scheduling, cpufreq and
//!   cpuidle tracks.
//! - [`parquet`]: one row per event, for pandas, Polars and DuckDB.

#[cfg(feature = "parquet")]
pub mod parquet;
pub mod perfetto;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

use crate::error::{Result, TraceError};
use crate::event::{EventTable, BUILTIN};

/// Maps a file's own event ids to the built-in ids (`ids::*`) whose names they
/// carry, so that exporters work on files that number events otherwise. Ids
/// the file names otherwise, or does not name, map to nothing.
pub(crate) struct BuiltinMap {
    dense: Vec<u32>,
    sparse: BTreeMap<u32, u32>,
}

/// File ids below this are looked up in a flat table.
const DENSE_IDS: u32 = 4096;

impl BuiltinMap {
    pub(crate) fn new(table: &EventTable) -> BuiltinMap {
        let mut m = BuiltinMap { dense: vec![0; DENSE_IDS as usize], sparse: BTreeMap::new() };
        for &(builtin, _) in BUILTIN {
            if let Some(file_id) = table.builtin_to_file(builtin) {
                if file_id < DENSE_IDS {
                    m.dense[file_id as usize] = builtin;
                } else {
                    m.sparse.insert(file_id, builtin);
                }
            }
        }
        m
    }

    /// The built-in id of a file id, or None. (Built-in ids start at 1.)
    #[inline]
    pub(crate) fn get(&self, file_id: u32) -> Option<u32> {
        let b = if file_id < DENSE_IDS { self.dense[file_id as usize] } else { *self.sparse.get(&file_id)? };
        (b != 0).then_some(b)
    }
}

/// Create an output file, naming it in the error.
pub(crate) fn create(path: &Path) -> Result<File> {
    let p = path.display().to_string();
    File::create(path).map_err(|e| TraceError::new(&p, format!("cannot write the output: {}", TraceError::io(&p, e).msg)))
}

/// Run `body` on a new file at `path`; if it fails, remove what was written,
/// so that a failed export leaves no half-written file behind. `input` is
/// the trace's path: writing over the file being read is refused (the
/// reader maps it).
pub(crate) fn with_output<T>(input: &str, path: &Path, body: impl FnOnce(File, &str) -> Result<T>) -> Result<T> {
    let name = path.display().to_string();
    if same_file(Path::new(input), path) {
        return Err(TraceError::new(&name, "is the trace being exported: choose another output file"));
    }
    let f = create(path)?;
    let r = body(f, &name);
    if r.is_err() {
        let _ = std::fs::remove_file(path);
    }
    r
}

fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Per-name counts of events an exporter had no equivalent for.
pub type LeftOut = BTreeMap<String, u64>;
