// SPDX-License-Identifier: GPL-2.0-only
//! The servers of today (docs/model.md, Machines of today): they load, their
//! topology is the vendors' (AMD's CCDs as last-level caches of their
//! own), their turbo tables cover every active-core count from the
//! single-core maximum down to the published all-core figure, and the
//! fair class of today runs on them.

use warmcore_sim::run::{run, RunConfig};
use warmcore_sim::Machine;

/// (preset, sockets, cores a socket, CPUs, LLCs, CPUs an LLC, base,
/// single-core maximum and all-core turbo in MHz).
const TODAY: &[(&str, u32, u32, u32, usize, usize, u32, u32, u32)] = &[
    ("xeon-8592p-2s", 2, 64, 256, 2, 128, 1900, 3900, 2900),
    ("epyc-9654-2s", 2, 96, 384, 24, 16, 2400, 3700, 3550),
];

#[test]
fn the_machines_of_today_load_with_their_vendors_topology() {
    for &(name, sockets, cores, cpus, llcs, llc_cpus, base, max, _) in TODAY {
        assert!(Machine::preset_names().contains(&name), "{name} is not a preset");
        let m = Machine::load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((m.spec.sockets, m.spec.cores_per_socket, m.nr_cpus), (sockets, cores, cpus), "{name}");
        assert_eq!(m.die_cpus.len(), llcs, "{name}: last-level caches");
        assert!(m.die_cpus.iter().all(|d| d.len() == llc_cpus), "{name}: CPUs per LLC");
        assert_eq!((m.spec.freq_base_mhz, m.spec.freq_max_mhz), (base, max), "{name}");
        // Both threads of a core share its LLC.
        for c in 0..m.nr_cpus {
            let die = m.cpu_die[c as usize];
            assert!(m.siblings(c).iter().all(|&s| m.cpu_die[s as usize] == die), "{name}: CPU {c}");
        }
    }
}

#[test]
fn their_turbo_tables_cover_every_core_from_the_maximum_to_the_all_core_figure() {
    for &(name, _, cores, _, _, _, _, max, all_core) in TODAY {
        let m = Machine::load(name).unwrap();
        let t = &m.spec.turbo;
        assert!(t.last().unwrap()[0] >= cores, "{name}: table ends before {cores} cores");
        assert_eq!(t[0][1], max, "{name}: a single core reaches the maximum");
        assert_eq!(t.last().unwrap()[1], all_core, "{name}: all cores at the all-core figure");
        assert!(t.windows(2).all(|w| w[1][1] <= w[0][1]), "{name}: more active cores never run faster");
        // The machine's ceiling for each count of active cores, 1 to all.
        for n in 1..=cores as usize {
            let f = m.turbo_by_active[n];
            assert!(f >= all_core * 1000 && f <= max * 1000, "{name}: {n} cores at {f} kHz");
        }
    }
}

#[test]
fn the_fair_class_of_today_runs_on_them() {
    for &(name, ..) in TODAY {
        for g in ["powersave", "schedutil"] {
            let r = run(&RunConfig::new(name, "hackbench:groups=2,loops=10", "eevdf", g, 1))
                .unwrap_or_else(|e| panic!("{name} {g}: {e}"));
            assert!(r.partial.is_none() && r.makespan_ns > 0 && r.energy_j > 0.0, "{name} {g}");
        }
    }
}
