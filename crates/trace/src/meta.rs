// SPDX-License-Identifier: GPL-2.0-only
//! What a trace says about itself: the machine, where it came from, the
//! processes it saw.

use serde::{Deserialize, Serialize};

/// Where one logical CPU sits in the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTopo {
    pub cpu: u32,
    /// Physical core id, unique in the machine: SMT siblings share it.
    pub core: u32,
    /// Die (shared last-level cache), unique in the machine.
    pub die: u32,
    pub socket: u32,
}

/// The machine a trace was taken on (or simulated).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub name: String,
    pub cpus: Vec<CpuTopo>,
    /// Frequency range in kHz; 0 where unknown.
    pub freq_min_khz: u32,
    pub freq_base_khz: u32,
    pub freq_max_khz: u32,
}

impl Machine {
    /// A flat machine of `n` CPUs, one core each, one die and socket, with an
    /// unknown frequency range: what an importer knows when its source says
    /// nothing of the topology.
    pub fn flat(name: &str, n: u32) -> Machine {
        Machine {
            name: name.to_string(),
            cpus: (0..n).map(|cpu| CpuTopo { cpu, core: cpu, die: 0, socket: 0 }).collect(),
            freq_min_khz: 0,
            freq_base_khz: 0,
            freq_max_khz: 0,
        }
    }

    pub fn nr_cpus(&self) -> u32 {
        self.cpus.len() as u32
    }

    fn count_distinct(&self, key: impl Fn(&CpuTopo) -> u32) -> usize {
        let mut v: Vec<u32> = self.cpus.iter().map(key).collect();
        v.sort_unstable();
        v.dedup();
        v.len()
    }

    pub fn nr_cores(&self) -> usize {
        self.count_distinct(|c| c.core)
    }
    pub fn nr_dies(&self) -> usize {
        self.count_distinct(|c| c.die)
    }
    pub fn nr_sockets(&self) -> usize {
        self.count_distinct(|c| c.socket)
    }

    /// The other hardware threads of `cpu`'s core.
    pub fn siblings(&self, cpu: u32) -> Vec<u32> {
        let Some(me) = self.cpus.iter().find(|c| c.cpu == cpu) else { return vec![] };
        self.cpus
            .iter()
            .filter(|c| c.core == me.core && c.cpu != cpu)
            .map(|c| c.cpu)
            .collect()
    }

    pub fn has_freq_range(&self) -> bool {
        self.freq_max_khz > 0 && self.freq_max_khz >= self.freq_min_khz
    }
}

/// Where a trace came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum Provenance {
    Simulator { config: serde_json::Value, seed: u64 },
    Tracer { kernel: String, command: Option<String> },
    Import { tool: String, input: String },
    Other { description: String },
}

/// One process (task) seen in the trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    pub comm: String,
    pub first_ns: u64,
    pub last_ns: u64,
}

/// The header block of a file, stored as JSON after the fixed prelude.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub machine: Machine,
    pub events: crate::event::EventTable,
    pub provenance: Provenance,
    /// Seconds since the Unix epoch at which the trace starts, where known.
    #[serde(default)]
    pub wall_clock_start: Option<u64>,
}

impl Header {
    /// A header for a trace of another origin (generated, built by hand),
    /// with the built-in event table and no start time.
    pub fn other(machine: Machine, description: &str) -> Header {
        Header {
            machine,
            events: crate::event::EventTable::default(),
            provenance: Provenance::Other { description: description.into() },
            wall_clock_start: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topology_counts() {
        let mut m = Machine::flat("t", 4);
        m.cpus[1].core = 0; // CPU 1 is CPU 0's sibling
        m.cpus[2].die = 1;
        m.cpus[3].die = 1;
        assert_eq!(m.nr_cores(), 3);
        assert_eq!(m.nr_dies(), 2);
        assert_eq!(m.nr_sockets(), 1);
        assert_eq!(m.siblings(0), vec![1]);
        assert!(m.siblings(2).is_empty());
        assert!(!m.has_freq_range());
    }
}
