// SPDX-License-Identifier: GPL-2.0-only
//! SIGINT and SIGTERM, for the commands that stop in their own way when
//! interrupted (docs/conventions.md, Exit statuses): they exit with 128 and
//! the signal's number, 130 or 143, as a shell reports a process killed by it.

use std::sync::atomic::{AtomicI32, Ordering};

use signal_hook::consts::{SIGINT, SIGTERM};

/// The last SIGINT or SIGTERM received, 0 before any.
static CAUGHT: AtomicI32 = AtomicI32::new(0);

/// Call `on(signal)` on a thread of its own at each SIGINT or SIGTERM,
/// instead of their default action.
pub fn on_interrupt(mut on: impl FnMut(i32) + Send + 'static) {
    // Fails only for a signal that cannot be caught, which these are not.
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]).expect("SIGINT and SIGTERM can be caught");
    std::thread::spawn(move || {
        for sig in signals.forever() {
            CAUGHT.store(sig, Ordering::SeqCst);
            on(sig);
        }
    });
}

/// The signal that interrupted the command, if one did.
pub fn caught() -> Option<i32> {
    Some(CAUGHT.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// Exit as a command interrupted by `sig` does.
pub fn exit(sig: i32) -> ! {
    std::process::exit(warmcore_args::status::signal(sig))
}
