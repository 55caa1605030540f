// SPDX-License-Identifier: GPL-2.0-only
//! The machine of a text import, inferred from what the first pass learnt:
//! the CPUs the events name and the topology of `perf script --header`.

use std::collections::BTreeMap;

use super::text::Pass1;
use crate::meta::{CpuTopo, Machine};

/// The machine: the header's CPU count and topology where given, otherwise a
/// flat machine of (highest CPU named + 1) CPUs.
pub(super) fn machine(name: &str, p: &Pass1) -> Machine {
    let from_events = p.max_cpu.map_or(1, |m| m + 1);
    let n = from_events.max(p.nr_cpus.unwrap_or(0)).max(p.topo.keys().next_back().map_or(0, |&c| c + 1));
    let mut m = Machine::flat(p.hostname.as_deref().unwrap_or(name), n);
    if !p.topo.is_empty() {
        // The tool numbers cores within a die or socket, and dies within a
        // socket; the machine wants them unique in the machine.
        let mut cores: BTreeMap<(u32, u32, u32), u32> = BTreeMap::new();
        let mut dies: BTreeMap<(u32, u32), u32> = BTreeMap::new();
        for (&cpu, &(core, die, socket)) in &p.topo {
            let nc = cores.len() as u32;
            let c = *cores.entry((socket, die, core)).or_insert(nc);
            let nd = dies.len() as u32;
            let d = *dies.entry((socket, die)).or_insert(nd);
            m.cpus[cpu as usize] = CpuTopo { cpu, core: c, die: d, socket };
        }
        // CPUs the header did not describe: a core of their own each.
        let mut next = cores.len() as u32;
        for c in m.cpus.iter_mut() {
            if !p.topo.contains_key(&c.cpu) {
                c.core = next;
                next += 1;
            }
        }
    }
    m
}
