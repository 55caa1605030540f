// SPDX-License-Identifier: GPL-2.0-only
//! The simulator's layers (docs/architecture.md, The simulator's layers):
//! a module of src/ imports only modules of its own layer or below, and no
//! modules import each other in a cycle. The imports are read from the
//! source: every `crate::NAME` (and `super::NAME` in a file at the top of
//! src/, whose parent is the crate root), in `use` lines and in paths alike,
//! up to the file's unit tests (`#[cfg(test)]`), which may reach anywhere.
//! A directory (src/scx/) is one module. lib.rs declares the modules and
//! re-exports their API: a name it re-exports counts as the module it comes
//! from, any other name of the root (SimError, parse_spec) as the root's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// From the bottom up. A module may import its own layer and those before.
const LAYERS: &[&[&str]] = &[
    // The crate root's own items: the error type and the spec parser.
    &["lib"],
    // What is simulated, as data: the machine, the workloads' programs, the
    // event queue.
    &["machine", "prio", "program", "queue"],
    // Models and sources over that data: DVFS governors, PELT's decay, the
    // kernel's own time, the workloads built in, from files, rt-app and
    // replayed traces.
    &["dvfs", "pelt", "kernel_time", "workloads", "wfile", "replay", "rtapp"],
    // The state the engine and the policies share, and the types it is made
    // of.
    &["sim"],
    // The machine model's methods on that state.
    &["hardware"],
    // The policy interface.
    &["policy"],
    // The policies on the state: the fair class, Haiku's schedulers, the
    // sched_ext program.
    &["cfs", "haiku", "haiku_old", "scx"],
    // The papers' policies, built on the fair class.
    &["slocal", "smove", "nest"],
    // Every policy by name.
    &["policies"],
    // The event loop and the scheduler core around the policy, with its
    // parts: the interpreter of the tasks' programs and CPU hotplug (every
    // method of the engine is in src/engine/).
    &["engine"],
    // A run from names and parameters, and its report; the hunt for
    // failures, which runs and checks generated workloads.
    &["run", "hunt"],
];

/// Imports that break the layers, each with why it is tolerated (none today).
/// Remove an entry once its import is gone; the test fails on an entry that
/// no longer matches an import, so that the list only shrinks.
const ALLOWED: &[(&str, &str)] = &[];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The identifiers right after each `prefix` in `text` (for `prefix{a, b::c}`,
/// `a` and `b`).
fn names_after(text: &str, prefix: &str) -> Vec<String> {
    let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let mut out = Vec::new();
    for (i, _) in text.match_indices(prefix) {
        // `xcrate::` or `a::super::` are other paths.
        if text[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &text[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Split the group's top level at commas.
            let (mut depth, mut start) = (0, 0);
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        out.push(ident(group[start..j].trim()));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(ident(group[start..j].trim()));
                        start = j + 1;
                    }
                    _ => {}
                }
            }
        } else {
            out.push(ident(rest));
        }
    }
    out.retain(|n| !n.is_empty() && n != "self");
    out
}

/// A file's text without its unit tests and its comment lines.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Each module of src/ with the modules it imports.
fn imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files: Vec<(String, std::path::PathBuf, bool)> = Vec::new();
    for e in std::fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            for f in std::fs::read_dir(&p).unwrap() {
                let f = f.unwrap().path();
                if f.extension().is_some_and(|x| x == "rs") {
                    files.push((stem.clone(), f, false));
                }
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            files.push((stem, p, true));
        }
    }
    let modules: BTreeSet<String> = files.iter().map(|f| f.0.clone()).collect();
    // The names lib.rs re-exports, by the module they come from.
    let lib = code(&src.join("lib.rs"));
    let mut reexported = BTreeMap::new();
    for line in lib.lines().filter_map(|l| l.trim().strip_prefix("pub use ")) {
        let (module, names) = line.split_once("::").expect("a `pub use MODULE::...` line in lib.rs");
        for n in names.trim_end_matches(';').trim_matches(|c| c == '{' || c == '}').split(',') {
            reexported.insert(n.trim().to_string(), module.to_string());
        }
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, path, top) in &files {
        let node = module.clone();
        let deps = graph.entry(node.clone()).or_default();
        if node == "lib" {
            continue;
        }
        let text = code(path);
        let mut names = names_after(&text, "crate::");
        if *top {
            names.extend(names_after(&text, "super::"));
        }
        for n in names {
            let target = if modules.contains(&n) {
                n
            } else {
                reexported.get(&n).cloned().unwrap_or_else(|| "lib".to_string())
            };
            if target != node {
                deps.insert(target);
            }
        }
    }
    graph
}

/// A cycle of the graph, if it has one, as the path around it.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit<'a>(
        n: &'a str,
        g: &'a BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| *p == n) {
            let mut c: Vec<String> = path[i..].iter().map(|s| s.to_string()).collect();
            c.push(n.to_string());
            return Some(c);
        }
        if !done.insert(n) {
            return None;
        }
        path.push(n);
        for d in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(d, g, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

/// Upward imports not allowed, allowed ones no longer there, cycles, and
/// modules in no layer, as lines.
fn problems(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut out = Vec::new();
    for m in graph.keys().filter(|m| layer(m).is_none()) {
        out.push(format!("src/{m} is in no layer: add it to LAYERS in tests/layers.rs and docs/architecture.md"));
    }
    let mut kept: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, deps) in graph {
        for d in deps {
            if ALLOWED.contains(&(m.as_str(), d.as_str())) {
                continue;
            }
            if let (Some(a), Some(b)) = (layer(m), layer(d)) {
                if b > a {
                    out.push(format!("{m} imports {d}, a higher layer"));
                }
            }
            kept.entry(m.clone()).or_default().insert(d.clone());
        }
    }
    for (m, d) in ALLOWED {
        if !graph.get(*m).is_some_and(|deps| deps.contains(*d)) {
            out.push(format!("{m} no longer imports {d}: remove the entry from ALLOWED"));
        }
    }
    if let Some(c) = cycle(&kept) {
        out.push(format!("import cycle: {}", c.join(" -> ")));
    }
    out
}

#[test]
fn the_simulator_keeps_its_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = imports(&src);
    assert!(graph.contains_key("engine") && graph["engine"].contains("sim"), "the reading of imports found none: {graph:?}");
    let p = problems(&graph);
    assert!(p.is_empty(), "{}", p.join("\n"));
}

#[test]
fn the_check_reads_grouped_and_inline_imports() {
    let text = "use crate::{machine::Machine, parse_spec, program::{Step, Workload}};\n\
                let x = crate::dvfs::request(); use super::ceil_ns; let y = mycrate::other;";
    assert_eq!(names_after(text, "crate::"), ["machine", "parse_spec", "program", "dvfs"]);
    assert_eq!(names_after(text, "super::"), ["ceil_ns"]);
}

#[test]
fn the_check_finds_an_upward_import_and_a_cycle() {
    let g = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    // The allowed imports, so that only the ones under test are reported.
    let mut edges: Vec<(&str, &str)> = ALLOWED.to_vec();
    edges.push(("machine", "engine"));
    let p = problems(&g(&edges));
    assert_eq!(p, ["machine imports engine, a higher layer"]);
    let mut edges: Vec<(&str, &str)> = ALLOWED.to_vec();
    edges.extend([("slocal", "smove"), ("smove", "nest"), ("nest", "slocal")]);
    let p = problems(&g(&edges));
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].starts_with("import cycle: ") && p[0].contains("nest -> slocal"), "{p:?}");
    let p = problems(&g(&[("cfs", "sim")]));
    assert_eq!(p.len(), ALLOWED.len(), "every allowed import missing is reported: {p:?}");
    let p = problems(&g(&[("newpolicy", "sim")]));
    assert!(p.iter().any(|l| l.starts_with("src/newpolicy is in no layer")), "{p:?}");
}
