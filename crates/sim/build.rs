// SPDX-License-Identifier: GPL-2.0-only
//! Builds the sched_ext program of crates/sched (src/bpf/main.bpf.c and the
//! parts it includes, the files the kernel loads) for the host, as a shared
//! object that the simulator embeds and loads once per run (`scx:NAME`
//! policies, src/scx/).
//!
//! The headers are those of the BPF build: the scx headers and vmlinux.h
//! that scx_cargo ships, libbpf's from libbpf-sys. From the program's text
//! (main.bpf.c with its parts in place, as the compiler reads it) this
//! script generates two tables that host.c compiles in: its maps (name,
//! type, sizes) and its load-time knobs (`const volatile` globals), so that
//! a map or knob added to any part needs no change here. It also keeps the
//! program's files as built, for the tests' variants (scx::Source).
//!
//! Without the feature scx (the fuzz targets' build) there is no program to
//! build, and neither clang nor the BPF headers are needed.
#![cfg_attr(not(feature = "scx"), allow(dead_code, unused_imports))]

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

#[path = "../sched/bpf_parts.rs"]
mod bpf_parts;

const PROGRAM: &str = "../sched/src/bpf/main.bpf.c";

#[cfg(not(feature = "scx"))]
fn main() {}

#[cfg(feature = "scx")]
fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let here = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let (files, program) = bpf_parts::program(&here.join(PROGRAM));
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    for f in ["../sched/src/bpf/intf.h", "../sched/bpf_parts.rs", "scx/host.c", "scx/host.h", "scx/prelude.h"] {
        println!("cargo:rerun-if-changed={f}");
    }
    println!("cargo:rerun-if-env-changed=BPF_CLANG");

    // scx_cargo unpacks its headers (and vmlinux.h) into OUT_DIR when a
    // builder is made; it also checks the compiler is clang 18 or newer.
    scx_cargo::BpfBuilder::new().unwrap_or_else(|e| {
        panic!("building the sched_ext program for the simulator needs clang 18 or newer (BPF_CLANG, default clang): {e:#}")
    });
    let scx_h = out.join("scx_utils-bpf_h");
    let libbpf_h = out.join("libbpf");
    fs::create_dir_all(libbpf_h.join("bpf")).unwrap();
    for (name, text) in libbpf_rs::libbpf_sys::API_HEADERS.iter() {
        fs::write(libbpf_h.join("bpf").join(name), text).unwrap();
    }

    fs::write(out.join("wc_scx_tables.h"), tables(&program)).unwrap();
    let program_dir = here.join("../sched/src/bpf");
    fs::write(out.join("wc_scx_source.rs"), source(&program_dir, &files)).unwrap();
    let intf = fs::read_to_string("../sched/src/bpf/intf.h").expect("reading crates/sched/src/bpf/intf.h");
    fs::write(out.join("wc_stat_names.rs"), enum_names(&intf, "wc_stat", "WC_ST_")).unwrap();
    let enums = fs::read_to_string(scx_h.join("scx/enums.autogen.bpf.h")).unwrap();
    fs::write(out.join("wc_scx_enum_undefs.h"), enum_undefs(&enums)).unwrap();

    let clang = env::var("BPF_CLANG").unwrap_or_else(|_| "clang".into());
    let mut args: Vec<String> = ["-O2", "-g0", "-fPIC", "-shared", "-fms-extensions", "-D__SCX_TARGET_ARCH_x86"]
        .iter()
        // vmlinux.h's BPF-only attributes (preserve_access_index) are
        // ignored by a host build, and said so once per type.
        .chain(&["-Wno-unknown-attributes", "-Wno-microsoft-anon-tag", "-Wno-unused-function"])
        // Every symbol resolved at link time (libc only), and the program's
        // calls bound to its own definitions: each loaded copy is closed.
        .chain(&["-Wl,-z,defs", "-Wl,-Bsymbolic"])
        .map(|s| s.to_string())
        .collect();
    for dir in [out.clone(), libbpf_h, scx_h.clone(), scx_h.join("arch/x86"), scx_h.join("bpf-compat"), here.join("scx")] {
        args.push(format!("-I{}", dir.display()));
    }
    // Last, so that a test's variant of the program (scx::build_variant)
    // is found first.
    fs::write(out.join("wc_scx_build.txt"), format!("{clang}\n{}\n{}\n{}\n", here.join("scx/host.c").display(), program_dir.display(), args.join("\n"))).unwrap();
    args.push(format!("-I{}", program_dir.display()));
    let so = out.join("warmcore_scx.so");
    let status = Command::new(&clang)
        .args(&args)
        .arg("-o")
        .arg(&so)
        .arg(here.join("scx/host.c"))
        .status()
        .unwrap_or_else(|e| panic!("running {clang} to build the sched_ext program for the simulator: {e}"));
    if !status.success() {
        panic!("{clang} could not build crates/sched/src/bpf/main.bpf.c (and its parts) for the simulator (errors above)");
    }
    println!("cargo:rustc-env=WARMCORE_SCX_SO={}", so.display());
}

/// The program's files as a Rust array of (name under `dir`, text), main.bpf.c
/// first: the source the built-in program was built from.
fn source(dir: &std::path::Path, files: &[PathBuf]) -> String {
    let mut s = String::from("[\n");
    for f in files {
        let name = f.strip_prefix(dir).unwrap_or_else(|_| panic!("{} is not under {}", f.display(), dir.display()));
        writeln!(s, "    ({:?}, include_str!({:?})),", name.to_str().unwrap(), f.to_str().unwrap()).unwrap();
    }
    s.push(']');
    s
}

/// The enumerators of `enum NAME` in intf.h, without `prefix`, in lower
/// case and in order, as a Rust array of strings: the counters of
/// `enum wc_stat` as `warmcore sched --stats` names them, the policies of
/// `enum wc_policy` as `warmcore sched --policy` names them. An explicit
/// value must be the enumerator's position (the names are indexed by it).
fn enum_names(intf: &str, name: &str, prefix: &str) -> String {
    let body = intf
        .split(&format!("enum {name} {{"))
        .nth(1)
        .and_then(|r| r.split('}').next())
        .unwrap_or_else(|| panic!("intf.h has no enum {name}"));
    let names: Vec<String> = body
        .lines()
        .filter_map(|l| l.trim().strip_prefix(prefix))
        .enumerate()
        .map(|(i, l)| {
            let decl = l.split([',', '/']).next().unwrap();
            let (n, value) = decl.split_once('=').unwrap_or((decl, ""));
            let value = value.trim();
            assert!(value.is_empty() || value.parse() == Ok(i), "intf.h: {prefix}{} is not {i}", n.trim());
            format!("{:?}", n.trim().to_lowercase())
        })
        .collect();
    format!("[{}]", names.join(", "))
}

/// `#undef` of every SCX_* name that the scx headers turn into a variable
/// filled by the loader: on the host they are vmlinux.h's enum constants.
fn enum_undefs(text: &str) -> String {
    let mut s = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("#define ") {
            if let Some(name) = rest.split_whitespace().next() {
                if name.starts_with("SCX_") {
                    writeln!(s, "#undef {name}").unwrap();
                }
            }
        }
    }
    s
}

/// The maps and knobs of the program, as C tables for host.c.
fn tables(text: &str) -> String {
    let mut s = String::from("/* Generated by crates/sim/build.rs from main.bpf.c and its parts. */\n");
    s.push_str("static struct wc_map wc_maps[] = {\n");
    for (name, body) in maps(text) {
        let has = |m: &str| body.contains(&format!("({m},"));
        let count = |m: &str| format!("sizeof(*{name}.{m}) / sizeof(int)");
        let size = |ty: &str, sz: &str| {
            if has(ty) {
                format!("sizeof(*{name}.{ty})")
            } else if has(sz) {
                count(sz)
            } else {
                "0".into()
            }
        };
        let max = if has("max_entries") { count("max_entries") } else { "0".into() };
        writeln!(
            s,
            "\t{{ .name = \"{name}\", .def = &{name}, .type = {}, .key_size = {}, .value_size = {}, .max_entries = {max} }},",
            count("type"),
            size("key", "key_size"),
            size("value", "value_size"),
        )
        .unwrap();
    }
    s.push_str("};\n\nstatic const struct wc_knob wc_knobs[] = {\n");
    for (name, array) in knobs(text) {
        if array {
            writeln!(s, "\t{{ \"{name}\", (void *)&{name}, sizeof({name}[0]), sizeof({name}) / sizeof({name}[0]) }},")
                .unwrap();
        } else {
            writeln!(s, "\t{{ \"{name}\", (void *)&{name}, sizeof({name}), 1 }},").unwrap();
        }
    }
    s.push_str("};\n\n");
    let ops = text
        .split("SCX_OPS_DEFINE(")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .map(str::trim)
        .expect("main.bpf.c defines no SCX_OPS_DEFINE(name, ...)");
    writeln!(s, "#define WC_OPS {ops}").unwrap();
    s
}

/// `struct { ... } NAME SEC(".maps");`: each map's name and body.
fn maps(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("SEC(\".maps\")") {
        let before = &rest[..at];
        let close = before.rfind('}').expect("a map without a struct body");
        let name = before[close + 1..].trim().to_string();
        let open = before[..close].rfind("struct {").expect("a map without `struct {`");
        found.push((name, before[open..close].to_string()));
        rest = &rest[at + 1..];
    }
    found
}

/// Top-level `const volatile TYPE NAME[ N ] = ...;`: each knob's name and
/// whether it is an array.
fn knobs(text: &str) -> Vec<(String, bool)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("const volatile "))
        .filter_map(|l| {
            let decl = l.split(['=', ';']).next()?.trim();
            let array = decl.contains('[');
            let decl = decl.split('[').next()?.trim();
            let name = decl.rsplit(|c: char| c.is_whitespace() || c == '*').next()?;
            Some((name.to_string(), array))
        })
        .collect()
}
