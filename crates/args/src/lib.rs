// SPDX-License-Identifier: GPL-2.0-only
//! Durations and counts on the command line: one parser, one set of limits.
//!
//! Every option of `warmcore` (and of the scheduler's loader, whose options
//! live in warmcore-sched) that takes a time or a count is parsed here, as a
//! clap `value_parser`. A value the program cannot represent or act on is
//! refused before anything runs: negative, NaN, infinite, past what the type
//! holds, or past the limits below. The message is one line naming the valid
//! range; clap puts the option and the value in front of it, e.g.
//!
//! ```text
//! invalid value 'inf' for '--run-for <SECS>': infinite: give a number of seconds from 0 to 31536000 (365 days), or a time with a unit: 1.5s, 200ms, 40us, 123ns
//! ```
//!
//! Times are a number with an optional unit, `ns`, `us`, `ms` or `s`; a bare
//! number is seconds, in every option (`--run-for 2`, `--from 1.5`). Counts
//! are whole decimal numbers.
//!
//! A value refused after parsing (a name, a file, a value inside a spec) is a
//! [`UsageError`]: like the parser's refusals it exits with
//! [`status::USAGE`], where a failure of the work exits with
//! [`status::FAILURE`] (docs/conventions.md, Exit statuses).

use std::time::Duration;

/// The longest time any option takes: 365 days. Longer than any run,
/// recording, VM session, statistics period, simulated time or trace window
/// of this project, and far inside what a `Duration` (and `Instant` + it) or
/// a u64 count of nanoseconds (584 years) holds.
pub const MAX_SECS: u64 = 365 * 24 * 3600;

/// The unit of a bare number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Ns,
    Us,
    Ms,
    S,
}

impl Unit {
    fn ns(self) -> f64 {
        match self {
            Unit::Ns => 1.0,
            Unit::Us => 1e3,
            Unit::Ms => 1e6,
            Unit::S => 1e9,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Unit::Ns => "nanoseconds",
            Unit::Us => "microseconds",
            Unit::Ms => "milliseconds",
            Unit::S => "seconds",
        }
    }
}

/// A time from `min` (0, or just above 0 if `positive`) to [`MAX_SECS`]:
/// `1.5s`, `200ms`, `40us`, `123ns`, or a bare number in `bare`.
pub fn parse_time(s: &str, bare: Unit, positive: bool) -> Result<Duration, String> {
    let max_in_bare = MAX_SECS as f64 * 1e9 / bare.ns();
    let range = if positive {
        format!("above 0 and at most {max_in_bare}")
    } else {
        format!("from 0 to {max_in_bare}")
    };
    let help = |why: &str| {
        format!(
            "{why}give a number of {} {range} ({} days), or a time with a unit: 1.5s, 200ms, 40us, 123ns",
            bare.name(),
            MAX_SECS / 86400
        )
    };
    let t = s.trim();
    // The unit is a suffix: a leading 'e' may be an exponent (1e3) and
    // "inf" or "NaN" are numbers to refuse, not units.
    let (num, scale) = [("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)]
        .iter()
        .find_map(|&(u, sc)| t.strip_suffix(u).map(|n| (n.trim_end(), sc)))
        .unwrap_or((t, bare.ns()));
    let v: f64 = num.parse().map_err(|_| help("not a number: "))?;
    if v.is_nan() {
        return Err(help("not a number: "));
    }
    if v.is_sign_negative() && v != 0.0 {
        return Err(help("negative: "));
    }
    if v.is_infinite() {
        return Err(help("infinite: "));
    }
    let ns = v * scale;
    if ns > MAX_SECS as f64 * 1e9 {
        return Err(help("too large: "));
    }
    let ns = ns.round() as u64;
    if positive && ns == 0 {
        return Err(help("zero: "));
    }
    Ok(Duration::from_nanos(ns))
}

/// Seconds from 0 to [`MAX_SECS`] (0: at once).
pub fn secs(s: &str) -> Result<Duration, String> {
    parse_time(s, Unit::S, false)
}

/// Seconds above 0, to [`MAX_SECS`] (periods, timeouts).
pub fn positive_secs(s: &str) -> Result<Duration, String> {
    parse_time(s, Unit::S, true)
}

/// A time from 0 to [`MAX_SECS`] in nanoseconds (trace windows); a bare
/// number is seconds, as in every other option.
pub fn ns(s: &str) -> Result<u64, String> {
    parse_time(s, Unit::S, false).map(|d| d.as_nanos() as u64)
}

/// A window `from..to` (either end may be open) that is not empty: `to`
/// after `from`. Times as [`ns`] gives them.
pub fn window(from: Option<u64>, to: Option<u64>) -> Result<(), String> {
    match (from, to) {
        (Some(f), Some(t)) if t <= f => Err(format!(
            "--from ({} s) is not before --to ({} s): the window is empty; give --to a later time than --from",
            f as f64 / 1e9,
            t as f64 / 1e9
        )),
        _ => Ok(()),
    }
}

/// A whole number from `min` to `max` (both included).
pub fn parse_count(s: &str, min: u64, max: u64) -> Result<u64, String> {
    let help = |why: &str| format!("{why}give a whole number from {min} to {max}");
    let t = s.trim();
    let digits = t.strip_prefix('+').unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        let why = if t.starts_with('-') && t.len() > 1 { "negative: " } else { "not a whole number: " };
        return Err(help(why));
    }
    match digits.parse::<u64>() {
        Ok(v) if v < min => Err(help("too small: ")),
        Ok(v) if v > max => Err(help("too large: ")),
        Ok(v) => Ok(v),
        Err(_) => Err(help("too large: ")),
    }
}

/// A clap value parser of counts from `min` to `max` into the option's
/// integer type (`max` must fit it):
/// `#[arg(long, value_parser = warmcore_args::count::<u32>(1, 256))]`.
pub fn count<T>(min: u64, max: u64) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    assert!(min <= max && T::try_from(max).is_ok(), "count range {min}..={max} does not fit the option's type");
    move |s| parse_count(s, min, max).map(|v| T::try_from(v).ok().expect("checked in range"))
}

/// The exit statuses of `warmcore` (docs/conventions.md, Exit statuses).
pub mod status {
    /// The work failed (a write, a run, a dependency).
    pub const FAILURE: i32 = 1;
    /// The command was given a bad option, name, value or file.
    pub const USAGE: i32 = 2;
    /// Killed by a signal: 128 and its number, as a shell reports it.
    pub fn signal(sig: i32) -> i32 {
        128 + sig
    }
}

/// What a command refuses to start on: a bad option, name, value or file
/// (an unreadable or malformed input, an output it may not write). It exits
/// with [`status::USAGE`], where a failure of the work exits with
/// [`status::FAILURE`]; the message is one line saying what to do.
#[derive(Debug)]
pub struct UsageError(pub String);

impl UsageError {
    pub fn new(msg: impl std::fmt::Display) -> UsageError {
        UsageError(msg.to_string())
    }
}

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_with_and_without_units() {
        assert_eq!(ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(ns("200ms"), Ok(200_000_000));
        assert_eq!(ns("40us"), Ok(40_000));
        assert_eq!(ns("123ns"), Ok(123));
        assert_eq!(ns("123 ns"), Ok(123));
        assert_eq!(ns("2"), Ok(2_000_000_000), "a bare number is seconds");
        assert_eq!(ns("1e-6"), Ok(1000));
        assert_eq!(secs("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(secs("0"), Ok(Duration::ZERO));
        assert_eq!(secs("-0"), Ok(Duration::ZERO));
        assert_eq!(positive_secs("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(secs(&MAX_SECS.to_string()), Ok(Duration::from_secs(MAX_SECS)));
    }

    #[test]
    fn times_that_cannot_be_represented_are_refused_with_the_range() {
        for (v, why) in [
            ("inf", "infinite"),
            ("-inf", "negative"),
            ("infinity", "infinite"),
            ("NaN", "not a number"),
            ("1e300", "too large"),
            ("1e300s", "too large"),
            ("31536001", "too large"),
            ("-1", "negative"),
            ("-1ms", "negative"),
            ("", "not a number"),
            ("5 parsecs", "not a number"),
            ("s", "not a number"),
        ] {
            let e = secs(v).unwrap_err();
            assert!(e.starts_with(why) && e.contains("from 0 to 31536000 (365 days)"), "{v}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let e = positive_secs("0").unwrap_err();
        assert!(e.starts_with("zero") && e.contains("above 0 and at most 31536000"), "{e}");
        assert!(positive_secs("1e-12").is_err(), "rounds to 0 ns");
        assert!(ns("1e300").unwrap_err().contains("from 0 to 31536000 (365 days)"));
    }

    #[test]
    fn empty_and_reversed_windows_are_refused() {
        assert!(window(Some(1), Some(2)).is_ok() && window(None, Some(0)).is_ok() && window(Some(5), None).is_ok());
        for (f, t) in [(2, 1), (5, 5)] {
            assert!(window(Some(f), Some(t)).unwrap_err().contains("is not before --to"));
        }
    }

    #[test]
    fn counts_in_range() {
        let p = count::<u32>(1, 256);
        assert_eq!(p("4"), Ok(4));
        assert_eq!(p("+4"), Ok(4));
        assert_eq!(p(" 256 "), Ok(256));
        for (v, why) in [
            ("0", "too small"),
            ("257", "too large"),
            ("-1", "negative"),
            ("1e3", "not a whole number"),
            ("1.5", "not a whole number"),
            ("inf", "not a whole number"),
            ("", "not a whole number"),
            ("99999999999999999999999", "too large"),
        ] {
            let e = p(v).unwrap_err();
            assert!(e.starts_with(why) && e.ends_with("give a whole number from 1 to 256"), "{v}: {e}");
        }
        assert_eq!(count::<u64>(0, u64::MAX)(&u64::MAX.to_string()), Ok(u64::MAX));
    }

    /// Random strings made of the pieces times and counts are written with:
    /// every one is either taken, within the range, or refused in one line
    /// naming the range; none panics. Seeded, so every run tries the same.
    #[test]
    fn parsers_take_or_refuse_any_string() {
        const PIECES: &[&str] = &[
            "0", "1", "9", "00", ".", "-", "+", "e", "E", "5", "inf", "nan", "s", "ms", "us", "ns", " ", "x", "1e400",
            "99999999999999999999", "\u{b5}s", "\n",
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let n = next() % 6;
            let s: String = (0..n).map(|_| PIECES[(next() % PIECES.len() as u64) as usize]).collect();
            for bare in [Unit::Ns, Unit::S] {
                match parse_time(&s, bare, true) {
                    Ok(d) => assert!(d > Duration::ZERO && d <= Duration::from_secs(MAX_SECS), "{s:?}: {d:?}"),
                    Err(e) => assert!(e.contains("above 0 and at most") && !e.contains('\n'), "{s:?}: {e}"),
                }
            }
            match parse_count(&s, 1, 1000) {
                Ok(v) => assert!((1..=1000).contains(&v), "{s:?}: {v}"),
                Err(e) => assert!(e.ends_with("give a whole number from 1 to 1000") && !e.contains('\n'), "{s:?}: {e}"),
            }
        }
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn a_range_past_the_type_is_a_programming_error() {
        let _ = count::<u8>(0, 256);
    }
}
