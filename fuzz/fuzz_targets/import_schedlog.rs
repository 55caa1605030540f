// SPDX-License-Identifier: GPL-2.0-only
//! Any input to the schedlog importer gives a valid trace or a one-line error, and
//! a trace it writes reads back with as many events as it reported.
#![no_main]

use libfuzzer_sys::fuzz_target;
use warmcore_trace::import::{import_bytes, Format, ImportOptions};
use warmcore_trace::{Trace, Window};

fuzz_target!(|data: &[u8]| {
    let mut out = Vec::new();
    match import_bytes(Format::SchedLog, "fuzz", data, &mut out, "out.wct", ImportOptions::default()) {
        Ok(report) => {
            let t = Trace::from_bytes("out.wct", out).expect("an imported trace reads back");
            assert!(t.incomplete.is_none());
            assert_eq!(t.events(None, Window::ALL).map(|e| e.unwrap()).count() as u64, report.events);
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
    }
});
