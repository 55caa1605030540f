// SPDX-License-Identifier: GPL-2.0-only
//! Any bytes given to the reader give a trace or a one-line error; reading
//! every event of whatever opened gives events or one-line errors. Never a
//! panic, never a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use warmcore_trace::{Trace, Window};

fuzz_target!(|data: &[u8]| {
    match Trace::from_bytes("fuzz.wct", data.to_vec()) {
        Ok(t) => {
            let _ = t.span();
            let _ = t.event_count();
            for e in t.events(None, Window::ALL) {
                if let Err(e) = e {
                    assert!(!e.to_string().contains('\n'));
                }
            }
        }
        Err(e) => assert!(!e.to_string().contains('\n')),
    }
});
