// SPDX-License-Identifier: GPL-2.0-only
//! Builds the sched_ext programs the simulator runs as `scx:NAME` policies
//! for the host, each as a shared object that the simulator embeds and
//! loads once per run (src/scx/):
//! - warmcore's own (crates/sched/src/bpf/main.bpf.c and the parts it
//!   includes, the files the kernel loads): `scx:default`, `scx:nest`, ...;
//! - the scx project's schedulers named in peers/Cargo.toml ("peers"): their
//!   BPF files as their own build compiles them, unmodified, from the
//!   sources `cargo fetch --manifest-path peers/Cargo.toml` put in cargo's
//!   registry; the files are the ones the peer's recipe (peers/NAME.toml)
//!   lists, checked against the peer's own build.rs. A peer whose sources
//!   are not there is left out with a warning saying how to fetch them, and
//!   its name says the same at run time.
//!
//! The headers are those of the BPF build: the scx headers and vmlinux.h
//! that scx_cargo ships, libbpf's from libbpf-sys. src/scx/build_program.rs
//! does the build (the programs' tables, BPF's arithmetic, the link with
//! scx/host.c); this script finds the sources and writes the generated
//! headers every program shares (the SCX_* enum names, the BPF helpers).
//!
//! Without the feature scx (the fuzz targets' build) there is no program to
//! build, and neither clang nor the BPF headers are needed.
#![cfg_attr(not(feature = "scx"), allow(dead_code, unused_imports))]
// build_program.rs serves the crate too (run-time builds).
#![allow(dead_code)]

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

#[path = "src/scx/build_program.rs"]
mod build_program;

const PROGRAM: &str = "../sched/src/bpf/main.bpf.c";
const PEERS: &str = "../../peers";

#[cfg(not(feature = "scx"))]
fn main() {}

/// A peer as peers/Cargo.toml and its lock name it.
struct Peer {
    /// The crate, scx_NAME.
    krate: String,
    /// NAME: `scx:NAME`, peers/NAME.toml.
    name: String,
    version: String,
    recipe: PathBuf,
    /// The crate's unpacked sources in cargo's registry, if fetched.
    dir: Option<PathBuf>,
}

#[cfg(feature = "scx")]
fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let here = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let (files, _) = build_program::expand(&here.join(PROGRAM)).unwrap_or_else(|e| panic!("{e}"));
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    for f in ["../sched/src/bpf/intf.h", "../sched/bpf_parts.rs", "scx/host.c", "scx/host.h", "scx/prelude.h", "scx/tables.h", "src/scx/build_program.rs"] {
        println!("cargo:rerun-if-changed={f}");
    }
    println!("cargo:rerun-if-env-changed=BPF_CLANG");
    println!("cargo:rerun-if-env-changed=CARGO_HOME");

    // scx_cargo unpacks its headers (and vmlinux.h) into OUT_DIR when a
    // builder is made; it also checks the compiler is clang 18 or newer.
    scx_cargo::BpfBuilder::new().unwrap_or_else(|e| {
        panic!("building the sched_ext programs for the simulator needs clang 18 or newer (BPF_CLANG, default clang): {e:#}")
    });
    let scx_h = out.join("scx_utils-bpf_h");
    let libbpf_h = out.join("libbpf");
    fs::create_dir_all(libbpf_h.join("bpf")).unwrap();
    for (name, text) in libbpf_rs::libbpf_sys::API_HEADERS.iter() {
        fs::write(libbpf_h.join("bpf").join(name), text).unwrap();
    }
    let helper_defs = fs::read_to_string(libbpf_h.join("bpf/bpf_helper_defs.h")).expect("libbpf's bpf_helper_defs.h");
    fs::write(out.join("wc_scx_helpers.h"), build_program::helper_redirects(&helper_defs)).unwrap();
    let enums = fs::read_to_string(scx_h.join("scx/enums.autogen.bpf.h")).unwrap();
    fs::write(out.join("wc_scx_enum_undefs.h"), build_program::enum_undefs(&enums)).unwrap();
    let intf = fs::read_to_string("../sched/src/bpf/intf.h").expect("reading crates/sched/src/bpf/intf.h");
    fs::write(out.join("wc_stat_names.rs"), enum_names(&intf, "wc_stat", "WC_ST_")).unwrap();

    let clang = env::var("BPF_CLANG").unwrap_or_else(|_| "clang".into());
    let vmlinux = scx_h.join("arch/x86/vmlinux.h");
    let mut cflags: Vec<String> = ["-g0", "-fPIC", "-fms-extensions", "-D__SCX_TARGET_ARCH_x86"]
        .iter()
        // vmlinux.h's BPF-only attributes (preserve_access_index) are
        // ignored by a host build, and said so once per type; the peers
        // drop const from idle masks as their BPF build allows.
        .chain(&[
            "-Wno-unknown-attributes",
            "-Wno-microsoft-anon-tag",
            "-Wno-unused-function",
            "-Wno-incompatible-pointer-types-discards-qualifiers",
        ])
        .map(|s| s.to_string())
        .collect();
    cflags.push(format!("-DWC_LINUX_KERNEL_VERSION={}", kernel_version(&vmlinux)));
    for dir in [out.clone(), libbpf_h, scx_h.clone(), scx_h.join("arch/x86"), scx_h.join("bpf-compat"), here.join("scx")] {
        cflags.push(format!("-I{}", dir.display()));
    }
    let tc = build_program::Toolchain { clang: clang.clone(), cflags, host_c: here.join("scx/host.c") };
    fs::write(out.join("wc_scx_toolchain.txt"), tc.to_text()).unwrap();

    // The programs: warmcore's, then each peer whose sources are here.
    let peers = peers(&here.join(PEERS));
    let mut jobs: Vec<(String, Vec<PathBuf>)> = vec![("warmcore".into(), vec![here.join(PROGRAM)])];
    let mut peer_sources = Vec::new();
    for p in &peers {
        println!("cargo:rerun-if-changed={}", p.recipe.display());
        let Some(dir) = &p.dir else {
            println!(
                "cargo:warning=scx:{} is left out: the sources of {} {} are not in cargo's registry; `cargo fetch --manifest-path peers/Cargo.toml` fetches them",
                p.name, p.krate, p.version
            );
            continue;
        };
        let units = recipe_sources(p, dir);
        let mut files = Vec::new();
        for u in &units {
            let (read, _) = build_program::expand(&dir.join(u)).unwrap_or_else(|e| panic!("{e}"));
            for f in read {
                println!("cargo:rerun-if-changed={}", f.display());
                if !files.contains(&f) {
                    files.push(f);
                }
            }
        }
        jobs.push((p.name.clone(), units.iter().map(|u| dir.join(u)).collect()));
        peer_sources.push((p.name.clone(), dir.clone(), units, files));
    }
    let built: Vec<(String, Result<PathBuf, String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|(name, sources)| {
                let tc = &tc;
                let dir = out.join(format!("program-{name}"));
                s.spawn(move || (name.clone(), build_program::build(tc, sources, &dir)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut so_of = std::collections::BTreeMap::new();
    for (name, r) in built {
        match r {
            Ok(so) => {
                so_of.insert(name, so);
            }
            Err(e) => panic!("building the sched_ext program {name} for the simulator:\n{e}"),
        }
    }

    // warmcore's program: its files as built, for the tests' variants.
    let program_dir = here.join("../sched/src/bpf");
    fs::write(out.join("wc_scx_source.rs"), source(&program_dir, &files)).unwrap();
    println!("cargo:rustc-env=WARMCORE_SCX_SO={}", so_of["warmcore"].display());

    // The peers, by name.
    let mut rs = String::from("[\n");
    for p in &peers {
        let recipe = p.recipe.display();
        match peer_sources.iter().find(|(n, ..)| *n == p.name) {
            Some((_, dir, units, files)) => {
                let so = so_of[&p.name].display();
                writeln!(rs, "    PeerBuild {{ name: {:?}, krate: {:?}, version: {:?}, recipe: include_str!({:?}), recipe_path: {:?},", p.name, p.krate, p.version, recipe.to_string(), recipe.to_string()).unwrap();
                writeln!(rs, "        so: Some(include_bytes!({:?})),", so.to_string()).unwrap();
                writeln!(rs, "        units: &{:?},", units).unwrap();
                writeln!(rs, "        files: &{} }},", source(dir, files)).unwrap();
            }
            None => {
                writeln!(rs, "    PeerBuild {{ name: {:?}, krate: {:?}, version: {:?}, recipe: include_str!({:?}), recipe_path: {:?}, so: None, units: &[], files: &[] }},", p.name, p.krate, p.version, recipe.to_string(), recipe.to_string()).unwrap();
            }
        }
    }
    rs.push(']');
    fs::write(out.join("wc_scx_peers.rs"), rs).unwrap();
}

/// The peers of peers/Cargo.toml (its dependencies, in order) at the
/// versions of its lock, with their sources if cargo has fetched them.
fn peers(dir: &Path) -> Vec<Peer> {
    let manifest_path = dir.join("Cargo.toml");
    let lock_path = dir.join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", manifest_path.display());
    println!("cargo:rerun-if-changed={}", lock_path.display());
    let manifest: toml::Table = fs::read_to_string(&manifest_path)
        .unwrap_or_else(|e| panic!("{}: {e}", manifest_path.display()))
        .parse()
        .unwrap_or_else(|e| panic!("{}: {e}", manifest_path.display()));
    let lock: toml::Table = fs::read_to_string(&lock_path)
        .unwrap_or_else(|e| panic!("{}: {e}", lock_path.display()))
        .parse()
        .unwrap_or_else(|e| panic!("{}: {e}", lock_path.display()));
    let packages = lock.get("package").and_then(|p| p.as_array()).cloned().unwrap_or_default();
    let registry = registry_src();
    let mut out = Vec::new();
    let deps = manifest.get("dependencies").and_then(|d| d.as_table()).cloned().unwrap_or_default();
    for krate in deps.keys() {
        let version = packages
            .iter()
            .filter_map(|p| p.as_table())
            .find(|p| p.get("name").and_then(|n| n.as_str()) == Some(krate))
            .and_then(|p| p.get("version"))
            .and_then(|v| v.as_str())
            .unwrap_or_else(|| panic!("{}: no version of {krate}", lock_path.display()))
            .to_string();
        let name = krate.strip_prefix("scx_").unwrap_or(krate).to_string();
        let recipe = dir.join(format!("{name}.toml"));
        assert!(recipe.is_file(), "{} names {krate}, but there is no recipe {}", manifest_path.display(), recipe.display());
        let wanted = format!("{krate}-{version}");
        let found = registry.iter().map(|index| index.join(&wanted)).find(|d| d.join("Cargo.toml").is_file());
        if found.is_none() {
            // Cargo takes its registry for immutable and never finds a
            // change there: a file that never exists reruns this script at
            // every build until the sources are fetched.
            println!("cargo:rerun-if-changed={}", PathBuf::from(env::var("OUT_DIR").unwrap()).join("peer-sources-missing").display());
        }
        out.push(Peer { krate: krate.clone(), name, version, recipe, dir: found });
    }
    out
}

fn cargo_home() -> PathBuf {
    env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env::var_os("HOME").unwrap_or_default()).join(".cargo"))
}

/// The index directories of cargo's registry/src, sorted.
fn registry_src() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(cargo_home().join("registry/src"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// The translation units the recipe lists (`sources`), which must be the
/// ones the peer's own build.rs compiles (`enable_skel`, `add_source`).
fn recipe_sources(p: &Peer, dir: &Path) -> Vec<String> {
    let recipe: toml::Table = fs::read_to_string(&p.recipe)
        .unwrap_or_else(|e| panic!("{}: {e}", p.recipe.display()))
        .parse()
        .unwrap_or_else(|e| panic!("{}: {e}", p.recipe.display()));
    let sources: Vec<String> = recipe
        .get("sources")
        .and_then(|s| s.as_array())
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_else(|| vec!["src/bpf/main.bpf.c".into()]);
    let build_rs = fs::read_to_string(dir.join("build.rs")).unwrap_or_default();
    let mut theirs = Vec::new();
    for call in [".enable_skel(\"", ".add_source(\""] {
        for part in build_rs.split(call).skip(1) {
            if let Some(f) = part.split('"').next() {
                theirs.push(f.to_string());
            }
        }
    }
    let (mut a, mut b) = (sources.clone(), theirs.clone());
    a.sort();
    b.sort();
    assert!(
        a == b,
        "{}: sources {:?}, but {}'s build.rs compiles {:?}",
        p.recipe.display(),
        sources,
        p.krate,
        theirs
    );
    sources
}

/// KERNEL_VERSION(major, minor, 0) of the vmlinux.h the programs are built
/// against (its file is named vmlinux-vX.Y...).
fn kernel_version(vmlinux: &Path) -> u32 {
    let target = fs::read_link(vmlinux).unwrap_or_else(|_| vmlinux.to_path_buf());
    let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let v = name.strip_prefix("vmlinux-v").unwrap_or("");
    let mut parts = v.split(|c: char| !c.is_ascii_digit()).filter_map(|p| p.parse::<u32>().ok());
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    assert!(major > 0, "cannot read the kernel version of {}", target.display());
    (major << 16) | (minor << 8)
}

/// The program's files as a Rust array of (name under `dir`, text), the
/// first unit first: the source the built-in program was built from.
fn source(dir: &Path, files: &[PathBuf]) -> String {
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
/// `enum wc_stat` as `warmcore sched --stats` names them. An explicit value
/// must be the enumerator's position (the names are indexed by it).
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
