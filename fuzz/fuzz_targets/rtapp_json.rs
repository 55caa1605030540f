// SPDX-License-Identifier: GPL-2.0-only
//! The rt-app JSON reader (`--workload rtapp:file=F.json`) on any input: a
//! workload that validates, or a one-line error. Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match warmcore_sim::rtapp::parse(text, "fuzz.json") {
        Ok(w) => assert!(w.validate().is_ok()),
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
    }
});
