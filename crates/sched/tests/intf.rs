// SPDX-License-Identifier: GPL-2.0-only
//! The loader's names for the BPF side's counters and profiled operations
//! are matched to the slots by position only: STAT_NAMES[i] names slot i of
//! `enum wc_stat`, PROF_NAMES[i] slot i of `enum wc_prof_op` (src/bpf/intf.h).
//! Each name must be its enumerator, lowercased, without the prefix, so that
//! an enumerator added, removed or moved on one side only fails here.

use warmcore_sched::stats::{PROF_NAMES, STAT_NAMES};

const INTF_H: &str = include_str!("../src/bpf/intf.h");

/// The enumerators of `enum NAME { ... };` in C source, in order, without
/// comments or values.
fn enumerators(src: &str, name: &str) -> Vec<String> {
    // Drop /* */ and // comments first: they may hold commas and braces.
    let mut code = String::new();
    let mut rest = src;
    while let Some(i) = rest.find("/*") {
        code.push_str(&rest[..i]);
        let end = rest[i + 2..].find("*/").expect("an unterminated comment in intf.h");
        code.push(' ');
        rest = &rest[i + 2 + end + 2..];
    }
    code.push_str(rest);
    let code: String = code.lines().map(|l| l.split("//").next().unwrap()).collect::<Vec<_>>().join("\n");
    let head = format!("enum {name} {{");
    let start = code.find(&head).unwrap_or_else(|| panic!("no `{head}` in intf.h")) + head.len();
    let body = &code[start..start + code[start..].find('}').expect("the enum's closing brace")];
    body.split(',')
        .map(|e| e.split('=').next().unwrap().trim().to_string())
        .filter(|e| !e.is_empty())
        .collect()
}

/// The names the loader must use for `enum NAME`: each enumerator up to the
/// count `last`, lowercased without `prefix`.
fn expected(enum_name: &str, prefix: &str, last: &str) -> Vec<String> {
    let e = enumerators(INTF_H, enum_name);
    assert_eq!(e.last().map(String::as_str), Some(last), "enum {enum_name} ends with its count {last}: {e:?}");
    e[..e.len() - 1]
        .iter()
        .map(|x| {
            x.strip_prefix(prefix)
                .unwrap_or_else(|| panic!("enum {enum_name}: {x} lacks the prefix {prefix}"))
                .to_lowercase()
        })
        .collect()
}

fn assert_same(table: &str, names: &[&str], want: &[String]) {
    assert_eq!(names.len(), want.len(), "{table} has {} names, the enum {} slots", names.len(), want.len());
    for (i, (n, w)) in names.iter().zip(want).enumerate() {
        assert_eq!(n, w, "{table}[{i}] is \"{n}\" but slot {i} of the enum is \"{w}\" (intf.h and src/stats.rs disagree)");
    }
}

#[test]
fn stat_names_follow_enum_wc_stat() {
    assert_same("STAT_NAMES", &STAT_NAMES, &expected("wc_stat", "WC_ST_", "WC_NR_STATS"));
}

#[test]
fn prof_names_follow_enum_wc_prof_op() {
    assert_same("PROF_NAMES", &PROF_NAMES, &expected("wc_prof_op", "WC_PROF_", "WC_NR_PROF"));
}

#[test]
fn the_enum_reader_skips_comments_and_values() {
    let src = "enum x {\n\tX_A = 1, /* a, b } */\n\tX_B,\t// c, d\n\tX_N,\n};\nenum y { Y_A };";
    assert_eq!(enumerators(src, "x"), ["X_A", "X_B", "X_N"]);
    assert_eq!(enumerators(src, "y"), ["Y_A"]);
}
