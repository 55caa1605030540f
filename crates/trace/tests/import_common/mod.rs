// SPDX-License-Identifier: GPL-2.0-only
//! What the importer tests share: fixtures, importing in memory, counting.
#![allow(dead_code)]

use std::path::PathBuf;

use warmcore_trace::import::{import_bytes, Format, ImportOptions, ImportReport};
use warmcore_trace::{CpuEvent, Trace, Window};

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(name)
}

/// A zstd-compressed text fixture.
pub fn text(name: &str) -> String {
    let raw = std::fs::read(fixture(name)).unwrap();
    String::from_utf8(zstd::decode_all(&raw[..]).unwrap()).unwrap()
}

pub fn import(format: Format, name: &str, data: &[u8]) -> warmcore_trace::Result<(ImportReport, Trace)> {
    let mut out = Vec::new();
    let r = import_bytes(format, name, data, &mut out, "out.wct", ImportOptions::default())?;
    Ok((r, Trace::from_bytes("out.wct", out).unwrap()))
}

pub fn all_events(t: &Trace) -> Vec<CpuEvent> {
    t.events(None, Window::ALL).map(|e| e.unwrap()).collect()
}

pub fn count(t: &[CpuEvent], id: u32) -> usize {
    t.iter().filter(|e| e.ev.id == id).count()
}

/// `key=value` (value without spaces) from a text line.
pub fn val(line: &str, key: &str) -> u32 {
    let k = format!(" {key}=");
    let i = line.find(&k).unwrap_or_else(|| panic!("{key} in {line}")) + k.len();
    line[i..].split_whitespace().next().unwrap().parse().unwrap()
}
