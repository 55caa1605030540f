// SPDX-License-Identifier: GPL-2.0-only
//! Times in reports. Times on the command line are parsed by warmcore-args.

/// A time in ns shown in the unit that reads best.
pub fn show_ns(ns: u64) -> String {
    match ns {
        n if n >= 1_000_000_000 => format!("{:.3} s", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{:.3} ms", n as f64 / 1e6),
        n if n >= 1_000 => format!("{:.3} us", n as f64 / 1e3),
        n => format!("{n} ns"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(show_ns(1_500_000), "1.500 ms");
        assert_eq!(show_ns(999), "999 ns");
    }
}
