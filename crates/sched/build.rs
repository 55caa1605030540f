// SPDX-License-Identifier: GPL-2.0-only
//! Builds the BPF scheduler (src/bpf/main.bpf.c) into a skeleton, and the
//! shared header (src/bpf/intf.h) into Rust bindings.

fn main() {
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
