// SPDX-License-Identifier: GPL-2.0-only
//! Compile the BPF side and generate its skeleton and the bindings of the
//! shared header.
//!
//! The BPF object is compiled against the `vmlinux.h` that scx_cargo ships
//! (a crate, so the build needs no network and no BTF of the build machine)
//! rather than one dumped by bpftool from the build machine's
//! /sys/kernel/btf/vmlinux: every field access is a CO-RE relocation resolved
//! against the running kernel's BTF at load time, so the header only has to
//! name the types, and a build on a machine without bpftool, BTF or the same
//! kernel gives the same object.
//! `-fms-extensions`: the shipped header (from a 7.x kernel's BTF) needs it.

fn main() -> anyhow::Result<()> {
    scx_cargo::BpfBuilder::new()?
        .add_cflag("-fms-extensions")
        .add_cflag("-Wno-microsoft-anon-tag")
        .enable_intf("src/bpf/intf.h", "bpf_intf.rs")
        .enable_skel("src/bpf/main.bpf.c", "bpf")
        .build()
}
