// SPDX-License-Identifier: GPL-2.0-only
//! The property every importer's fuzz target checks.

use warmcore_trace::import::{import_bytes, Format, ImportOptions};
use warmcore_trace::{Trace, Window};

/// Any input gives a valid trace or a one-line error, and a trace the
/// importer writes reads back with as many events as it reported.
pub fn check_import(format: Format, data: &[u8]) {
    let mut out = Vec::new();
    match import_bytes(format, "fuzz", data, &mut out, "out.wct", ImportOptions::default()) {
        Ok(report) => {
            let t = Trace::from_bytes("out.wct", out).expect("an imported trace reads back");
            assert!(t.incomplete.is_none());
            assert_eq!(t.events(None, Window::ALL).map(|e| e.unwrap()).count() as u64, report.events);
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
    }
}
