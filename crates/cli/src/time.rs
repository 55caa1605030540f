// SPDX-License-Identifier: GPL-2.0-only
//! Times on the command line: "1.5s", "200ms", "40us", "123ns" or bare ns.

pub fn parse_ns(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let scale = match unit {
        "" | "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(format!("unknown unit {unit:?} in {s:?}: use ns, us, ms or s")),
    };
    let v: f64 = num.parse().map_err(|_| format!("expected a time such as 1.5s, 200ms or 12345 (ns), found {s:?}"))?;
    if !(v >= 0.0 && v.is_finite()) {
        return Err(format!("expected a non-negative time, found {s:?}"));
    }
    Ok((v * scale).round() as u64)
}

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
        assert_eq!(parse_ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_ns("200ms"), Ok(200_000_000));
        assert_eq!(parse_ns("40us"), Ok(40_000));
        assert_eq!(parse_ns("123"), Ok(123));
        assert!(parse_ns("5 parsecs").is_err());
        assert!(parse_ns("-1s").is_err());
        assert_eq!(show_ns(1_500_000), "1.500 ms");
    }
}
