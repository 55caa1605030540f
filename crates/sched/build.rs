// SPDX-License-Identifier: GPL-2.0-only
//! Builds the BPF scheduler (src/bpf/main.bpf.c and the parts it includes)
//! into a skeleton, and the shared header (src/bpf/intf.h) into Rust
//! bindings.

mod bpf_parts;

fn main() {
    // scx_cargo watches its input's directory; the parts are named here too,
    // so that the build follows what main.bpf.c includes, wherever it lives.
    let (files, _) = bpf_parts::expand(std::path::Path::new("src/bpf/main.bpf.c")).unwrap_or_else(|e| panic!("{e}"));
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    println!("cargo:rerun-if-changed=bpf_parts.rs");
    let mut b = scx_cargo::BpfBuilder::new()
        .expect("scx_cargo: no BPF build environment (clang 18 or newer, BPF_CLANG)");
    // -fms-extensions: the BTF of 7.x kernels (the vmlinux.h that scx_cargo
    // ships) uses anonymous struct members that need it.
    b.add_cflag("-fms-extensions")
        .add_cflag("-Wno-microsoft-anon-tag")
        .enable_intf("src/bpf/intf.h", "bpf_intf.rs")
        .enable_skel("src/bpf/main.bpf.c", "bpf");
    b.build().expect("building the BPF scheduler");
}
