// SPDX-License-Identifier: GPL-2.0-only
//! The machine file parser (machines/*.toml) on any input: a machine whose
//! derived tables hold together, or a one-line error. Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use warmcore_sim::machine::Machine;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Machine::from_toml(text, "fuzz.toml") {
        Ok(m) => {
            assert_eq!(m.cpu_core.len(), m.nr_cpus as usize);
            assert!(m.min_khz() <= m.base_khz() && m.base_khz() <= m.max_khz());
            for cpu in 0..m.nr_cpus {
                assert!(m.siblings(cpu).contains(&cpu));
            }
            let t = m.trace_machine();
            assert_eq!(t.cpus.len(), m.nr_cpus as usize);
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
    }
});
