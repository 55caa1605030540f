// SPDX-License-Identifier: GPL-2.0-only
//! Machines: topology, frequencies, turbo table, DVFS, idle states and power.
//!
//! A machine is a TOML file (machines/*.toml); the papers' machines are built
//! in as presets. Every figure in a preset says where it comes from.

use serde::{Deserialize, Serialize};
use warmcore_trace::{CpuTopo, Machine as TraceMachine};

use crate::SimError;

/// The presets, embedded in the binary.
pub const PRESETS: &[(&str, &str)] = &[
    ("default", include_str!("../../../machines/default.toml")),
    ("xeon-e7-8870v4", include_str!("../../../machines/xeon-e7-8870v4.toml")),
    ("xeon-gold-6130-2s", include_str!("../../../machines/xeon-gold-6130-2s.toml")),
    ("xeon-gold-6130-4s", include_str!("../../../machines/xeon-gold-6130-4s.toml")),
    ("xeon-gold-5218-2s", include_str!("../../../machines/xeon-gold-5218-2s.toml")),
    ("ryzen5-3400g", include_str!("../../../machines/ryzen5-3400g.toml")),
    ("ryzen5-pro-4650g", include_str!("../../../machines/ryzen5-pro-4650g.toml")),
    ("core2duo-e8400", include_str!("../../../machines/core2duo-e8400.toml")),
    ("xeon-8592p-2s", include_str!("../../../machines/xeon-8592p-2s.toml")),
    ("epyc-9654-2s", include_str!("../../../machines/epyc-9654-2s.toml")),
];

/// The highest frequency a machine file may give, in MHz: 100 GHz.
pub const MAX_MHZ: u32 = 100_000;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DvfsSpec {
    pub hw_sample_us: u64,
    pub hw_tau_up_ms: f64,
    pub hw_tau_down_ms: f64,
    pub hw_bounce_window_ms: f64,
    pub hw_bounce_period_ms: f64,
    pub hw_bounce_len_ms: f64,
    pub hw_bounce_mhz: u32,
    pub schedutil_rate_limit_us: u64,
    pub freq_step_mhz: u32,
    pub smt_share: f64,
    /// Hardware-managed P-states (HWP): under schedutil the hardware may
    /// run a core above the governor's request (docs/model.md, Hardware
    /// P-states).
    #[serde(default)]
    pub hwp: bool,
    /// The kernel's cpufreq driver (docs/model.md, Frequency drivers of
    /// today); None: the file names none, and no EPP can be asked for.
    #[serde(default)]
    pub driver: Option<Driver>,
    /// The energy-performance preference the kernel leaves at boot, 0 to
    /// 255: the ramp above is the hardware's under it. Required with a
    /// driver that has one.
    #[serde(default)]
    pub epp: Option<u8>,
    /// intel_pstate's balance_performance on this model when it is not
    /// 128 (`intel_epp_default`).
    #[serde(default)]
    pub epp_balance_performance: Option<u8>,
}

/// A cpufreq driver, by the name the kernel gives its module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum Driver {
    /// Active mode under powersave and performance, passive (intel_cpufreq)
    /// under schedutil; an EPP with HWP.
    #[serde(rename = "intel_pstate")]
    IntelPstate,
    /// Active mode (amd-pstate-epp, with an EPP) under powersave and
    /// performance, passive under schedutil.
    #[serde(rename = "amd-pstate")]
    AmdPstate,
    /// ACPI P-states: no EPP.
    #[serde(rename = "acpi-cpufreq")]
    AcpiCpufreq,
}

impl Driver {
    pub fn name(self) -> &'static str {
        match self {
            Driver::IntelPstate => "intel_pstate",
            Driver::AmdPstate => "amd-pstate",
            Driver::AcpiCpufreq => "acpi-cpufreq",
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IdleState {
    pub name: String,
    pub exit_latency_us: u64,
    pub target_residency_us: u64,
    /// Power of a core whose threads are all in this state, in W.
    pub power_w: f64,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PowerSpec {
    pub static_w_per_socket: f64,
    /// C in P = C x V^2 x f (W, V, GHz) for one busy core.
    pub dyn_coeff: f64,
    pub v_min: f64,
    pub v_max: f64,
}

/// The machine's own background tasks: daemons that sleep, wake on a timer,
/// run briefly and sleep again, whatever the workload does (docs/model.md,
/// Background tasks). They never keep a run going.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BackgroundSpec {
    pub daemons: u32,
    /// Mean sleep between two runs of one daemon, drawn uniformly in
    /// [0, 2 x period].
    pub period_ms: f64,
    /// Work per run, in microseconds at the reference frequency.
    pub run_us: f64,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    /// Dies (last-level caches) per socket; 1 on all the papers' machines
    /// (Nest, section 5.1).
    #[serde(default = "one")]
    pub dies_per_socket: u32,
    /// "linux": the first thread of every core, then the second threads;
    /// "packed": siblings adjacent.
    #[serde(default = "linux")]
    pub numbering: String,
    pub freq_min_mhz: u32,
    pub freq_base_mhz: u32,
    pub freq_max_mhz: u32,
    /// [up to N active cores on the socket, MHz], N increasing.
    pub turbo: Vec<[u32; 2]>,
    pub dvfs: DvfsSpec,
    pub idle: Vec<IdleState>,
    pub power: PowerSpec,
    /// None: nothing runs but the workload.
    #[serde(default)]
    pub background: Option<BackgroundSpec>,
}

fn one() -> u32 {
    1
}
fn linux() -> String {
    "linux".into()
}

/// A machine ready for simulation: the spec plus derived topology tables.
#[derive(Clone, Debug)]
pub struct Machine {
    pub spec: MachineSpec,
    pub nr_cpus: u32,
    pub nr_cores: u32,
    /// Per CPU: core, die, socket.
    pub cpu_core: Vec<u32>,
    pub cpu_die: Vec<u32>,
    pub cpu_socket: Vec<u32>,
    /// Per core: its CPUs (hardware threads), lowest first.
    pub core_cpus: Vec<Vec<u32>>,
    pub core_socket: Vec<u32>,
    /// Per die: its CPUs in id order.
    pub die_cpus: Vec<Vec<u32>>,
    /// Per socket: its CPUs in id order.
    pub socket_cpus: Vec<Vec<u32>>,
    /// Turbo ceiling in kHz by active cores on a socket (index = count).
    pub turbo_by_active: Vec<u32>,
}

impl Machine {
    pub fn preset_names() -> Vec<&'static str> {
        PRESETS.iter().map(|p| p.0).collect()
    }

    /// A preset by name, or a TOML file by path (anything with a '/' or
    /// ending in .toml).
    pub fn load(name_or_path: &str) -> Result<Machine, SimError> {
        if let Some((_, text)) = PRESETS.iter().find(|p| p.0 == name_or_path) {
            return Machine::from_toml(text, name_or_path);
        }
        if name_or_path.ends_with(".toml") || name_or_path.contains('/') {
            let text = std::fs::read_to_string(name_or_path)
                .map_err(|e| SimError::Input(format!("cannot read machine file {name_or_path}: {e}")))?;
            return Machine::from_toml(&text, name_or_path);
        }
        Err(SimError::Input(format!(
            "unknown machine '{name_or_path}'; valid: {} (or a path to a .toml file)",
            Machine::preset_names().join(", ")
        )))
    }

    /// The machine file of this machine, which `from_toml` reads back.
    pub fn to_toml(&self) -> String {
        toml::to_string(&self.spec).expect("a machine's spec has a TOML form")
    }

    pub fn from_toml(text: &str, origin: &str) -> Result<Machine, SimError> {
        let spec: MachineSpec = toml::from_str(text).map_err(|e| {
            let msg = e.message().trim().replace('\n', " ");
            // Name the line and its key: toml's message alone may not say
            // which field had a value of the wrong type.
            let at = e
                .span()
                .map(|sp| {
                    let line_no = text[..sp.start.min(text.len())].matches('\n').count();
                    let line = text.lines().nth(line_no).unwrap_or("");
                    let key = line.split('=').next().unwrap_or("").trim();
                    if line.contains('=') && !key.is_empty() {
                        format!(" (line {}, field `{key}`)", line_no + 1)
                    } else {
                        format!(" (line {})", line_no + 1)
                    }
                })
                .unwrap_or_default();
            SimError::Input(format!("machine {origin}: {msg}{at}"))
        })?;
        Machine::new(spec).map_err(|e| SimError::Input(format!("machine {origin}: {e}")))
    }

    pub fn new(spec: MachineSpec) -> Result<Machine, String> {
        let s = &spec;
        let bad = |field: &str, why: &str| Err(format!("field `{field}` {why}"));
        if s.sockets == 0 || s.sockets > 64 {
            return bad("sockets", "must be between 1 and 64");
        }
        if s.cores_per_socket == 0 || s.cores_per_socket > 512 {
            return bad("cores_per_socket", "must be between 1 and 512");
        }
        if s.threads_per_core == 0 || s.threads_per_core > 8 {
            return bad("threads_per_core", "must be between 1 and 8");
        }
        if s.dies_per_socket == 0 || !s.cores_per_socket.is_multiple_of(s.dies_per_socket) {
            return bad("dies_per_socket", "must divide cores_per_socket");
        }
        if s.numbering != "linux" && s.numbering != "packed" {
            return bad("numbering", "must be \"linux\" or \"packed\"");
        }
        if s.freq_min_mhz == 0 || s.freq_min_mhz > s.freq_base_mhz || s.freq_base_mhz > s.freq_max_mhz {
            return bad("freq_min_mhz", "must be > 0 and freq_min_mhz <= freq_base_mhz <= freq_max_mhz");
        }
        // Frequencies are kept in kHz in a u32 (traces, the policies).
        if s.freq_max_mhz > MAX_MHZ {
            return bad("freq_max_mhz", &format!("must be at most {MAX_MHZ} MHz"));
        }
        if s.turbo.is_empty() {
            return bad("turbo", "must list at least one [active cores, MHz] pair");
        }
        let mut prev = 0;
        for t in &s.turbo {
            if t[0] <= prev {
                return bad("turbo", "active-core counts must increase");
            }
            if t[1] < s.freq_base_mhz || t[1] > s.freq_max_mhz {
                return bad("turbo", "frequencies must lie between freq_base_mhz and freq_max_mhz");
            }
            prev = t[0];
        }
        if prev < s.cores_per_socket {
            return bad("turbo", "must cover every active-core count up to cores_per_socket");
        }
        let d = &s.dvfs;
        let p = &s.power;
        // TOML has nan and inf: no model takes them.
        for (field, v) in [
            ("dvfs.hw_tau_up_ms", d.hw_tau_up_ms),
            ("dvfs.hw_tau_down_ms", d.hw_tau_down_ms),
            ("dvfs.hw_bounce_window_ms", d.hw_bounce_window_ms),
            ("dvfs.hw_bounce_period_ms", d.hw_bounce_period_ms),
            ("dvfs.hw_bounce_len_ms", d.hw_bounce_len_ms),
            ("dvfs.smt_share", d.smt_share),
            ("power.static_w_per_socket", p.static_w_per_socket),
            ("power.dyn_coeff", p.dyn_coeff),
            ("power.v_min", p.v_min),
            ("power.v_max", p.v_max),
        ]
        .into_iter()
        .chain(s.idle.iter().map(|i| ("idle.power_w", i.power_w)))
        {
            if !v.is_finite() {
                return bad(field, "must be a finite number");
            }
        }
        if let Some(b) = &s.background {
            if b.daemons > 1024 {
                return bad("background.daemons", "must be at most 1024");
            }
            if !(b.period_ms.is_finite() && b.period_ms >= 0.001) {
                return bad("background.period_ms", "must be a number >= 0.001");
            }
            if !(b.run_us.is_finite() && b.run_us >= 0.0 && b.run_us <= b.period_ms * 1000.0) {
                return bad("background.run_us", "must be a number between 0 and period_ms x 1000");
            }
        }
        if d.hw_sample_us == 0 {
            return bad("dvfs.hw_sample_us", "must be > 0");
        }
        if d.hw_tau_up_ms <= 0.0 || d.hw_tau_down_ms <= 0.0 {
            return bad("dvfs.hw_tau_up_ms", "and hw_tau_down_ms must be > 0");
        }
        if d.hw_bounce_window_ms < 0.0 || d.hw_bounce_len_ms < 0.0 || d.hw_bounce_period_ms <= d.hw_bounce_len_ms {
            return bad("dvfs.hw_bounce_period_ms", "must exceed hw_bounce_len_ms (both >= 0)");
        }
        if d.freq_step_mhz == 0 || d.freq_step_mhz > MAX_MHZ {
            return bad("dvfs.freq_step_mhz", &format!("must be > 0 and at most {MAX_MHZ}"));
        }
        if d.hw_bounce_mhz > MAX_MHZ {
            return bad("dvfs.hw_bounce_mhz", &format!("must be at most {MAX_MHZ}"));
        }
        if !(d.smt_share > 0.0 && d.smt_share <= 1.0) {
            return bad("dvfs.smt_share", "must be in (0, 1]");
        }
        // The EPP lives in HWP's or CPPC's request register: only those
        // drivers, on hardware that chooses its own frequency, have one.
        let has_epp = matches!(d.driver, Some(Driver::IntelPstate | Driver::AmdPstate)) && d.hwp;
        if d.driver == Some(Driver::AmdPstate) && !d.hwp {
            return bad("dvfs.driver", "amd-pstate needs hwp = true (CPPC: the hardware chooses above the request)");
        }
        if d.epp.is_some() != has_epp {
            return bad(
                "dvfs.epp",
                if has_epp {
                    "is required with this driver: the EPP the kernel leaves at boot, under which the ramp holds"
                } else {
                    "needs driver = \"intel_pstate\" or \"amd-pstate\" with hwp = true"
                },
            );
        }
        if d.epp_balance_performance.is_some() && !(has_epp && d.driver == Some(Driver::IntelPstate)) {
            return bad("dvfs.epp_balance_performance", "needs driver = \"intel_pstate\" with hwp = true");
        }
        if s.idle.is_empty() {
            return bad("idle", "must list at least one idle state");
        }
        for w in s.idle.windows(2) {
            if w[1].exit_latency_us < w[0].exit_latency_us {
                return bad("idle", "states must be listed from shallowest to deepest");
            }
        }
        if p.dyn_coeff < 0.0 || p.static_w_per_socket < 0.0 || p.v_min <= 0.0 || p.v_max < p.v_min {
            return bad("power", "coefficients must be >= 0 and v_min <= v_max");
        }

        let threads = s.threads_per_core;
        let nr_cores = s.sockets * s.cores_per_socket;
        let nr_cpus = nr_cores * threads;
        let cores_per_die = s.cores_per_socket / s.dies_per_socket;
        let mut cpu_core = vec![0; nr_cpus as usize];
        let mut cpu_die = vec![0; nr_cpus as usize];
        let mut cpu_socket = vec![0; nr_cpus as usize];
        let mut core_cpus = vec![Vec::new(); nr_cores as usize];
        for core in 0..nr_cores {
            for t in 0..threads {
                let cpu = if s.numbering == "linux" { t * nr_cores + core } else { core * threads + t };
                cpu_core[cpu as usize] = core;
                cpu_socket[cpu as usize] = core / s.cores_per_socket;
                cpu_die[cpu as usize] = core / cores_per_die;
                core_cpus[core as usize].push(cpu);
            }
        }
        for c in core_cpus.iter_mut() {
            c.sort_unstable();
        }
        let core_socket = (0..nr_cores).map(|c| c / s.cores_per_socket).collect();
        let nr_dies = s.sockets * s.dies_per_socket;
        let mut die_cpus = vec![Vec::new(); nr_dies as usize];
        let mut socket_cpus = vec![Vec::new(); s.sockets as usize];
        for cpu in 0..nr_cpus {
            die_cpus[cpu_die[cpu as usize] as usize].push(cpu);
            socket_cpus[cpu_socket[cpu as usize] as usize].push(cpu);
        }
        let mut turbo_by_active = vec![0u32; s.cores_per_socket as usize + 1];
        for (n, slot) in turbo_by_active.iter_mut().enumerate() {
            let n = (n as u32).max(1);
            let mhz = s.turbo.iter().find(|t| t[0] >= n).map(|t| t[1]).unwrap_or(s.freq_base_mhz);
            *slot = mhz * 1000;
        }
        Ok(Machine {
            nr_cpus,
            nr_cores,
            cpu_core,
            cpu_die,
            cpu_socket,
            core_cpus,
            core_socket,
            die_cpus,
            socket_cpus,
            turbo_by_active,
            spec,
        })
    }

    pub fn min_khz(&self) -> u32 {
        self.spec.freq_min_mhz * 1000
    }
    pub fn base_khz(&self) -> u32 {
        self.spec.freq_base_mhz * 1000
    }
    pub fn max_khz(&self) -> u32 {
        self.spec.freq_max_mhz * 1000
    }
    pub fn nr_sockets(&self) -> u32 {
        self.spec.sockets
    }
    pub fn siblings(&self, cpu: u32) -> &[u32] {
        &self.core_cpus[self.cpu_core[cpu as usize] as usize]
    }

    /// The description stored in a trace header.
    pub fn trace_machine(&self) -> TraceMachine {
        TraceMachine {
            name: self.spec.name.clone(),
            cpus: (0..self.nr_cpus)
                .map(|cpu| CpuTopo {
                    cpu,
                    core: self.cpu_core[cpu as usize],
                    die: self.cpu_die[cpu as usize],
                    socket: self.cpu_socket[cpu as usize],
                })
                .collect(),
            freq_min_khz: self.min_khz(),
            freq_base_khz: self.base_khz(),
            freq_max_khz: self.max_khz(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_presets_load_with_papers_topology() {
        for name in Machine::preset_names() {
            Machine::load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let e7 = Machine::load("xeon-e7-8870v4").unwrap();
        assert_eq!(e7.nr_cpus, 160);
        assert_eq!(e7.nr_cores, 80);
        assert_eq!(e7.siblings(0), &[0, 80]);
        assert_eq!(e7.cpu_socket[20], 1);
        // Nest Table 3: 3.0 GHz for 1-2 active cores, 2.8 for 3, 2.7 for 4, 2.6 above.
        assert_eq!(&e7.turbo_by_active[1..6], &[3_000_000, 3_000_000, 2_800_000, 2_700_000, 2_600_000]);
        assert_eq!(e7.turbo_by_active[20], 2_600_000);
        let g = Machine::load("xeon-gold-5218-2s").unwrap();
        assert_eq!(g.nr_cpus, 64);
        assert_eq!(g.turbo_by_active[9], 3_100_000);
        assert_eq!(g.turbo_by_active[16], 2_800_000);
        assert_eq!(Machine::load("xeon-gold-6130-4s").unwrap().nr_cpus, 128);
        assert_eq!(Machine::load("default").unwrap().nr_cpus, 16);
    }

    #[test]
    fn wrong_files_name_the_field() {
        let e = Machine::load("nope").unwrap_err().to_string();
        assert!(e.contains("unknown machine 'nope'") && e.contains("xeon-e7-8870v4"), "{e}");
        let good = PRESETS[0].1;
        let missing = good.replace("cores_per_socket = 8\n", "");
        let e = Machine::from_toml(&missing, "x.toml").unwrap_err().to_string();
        assert!(e.contains("cores_per_socket"), "{e}");
        let typo = good.replace("sockets = 1", "sockets = 1\nsokets = 2");
        let e = Machine::from_toml(&typo, "x.toml").unwrap_err().to_string();
        assert!(e.contains("sokets"), "{e}");
        let bad_turbo = good.replace("[8, 2600]", "[6, 2600]");
        let e = Machine::from_toml(&bad_turbo, "x.toml").unwrap_err().to_string();
        assert!(e.contains("turbo"), "{e}");
        let bad_type = good.replace("freq_min_mhz = 1200", "freq_min_mhz = \"fast\"");
        let e = Machine::from_toml(&bad_type, "x.toml").unwrap_err().to_string();
        assert!(e.contains("freq_min_mhz") || e.contains("invalid type"), "{e}");
    }

    #[test]
    fn values_the_models_cannot_take_are_refused() {
        let good = PRESETS[0].1;
        // kHz in a u32: 5 THz would overflow it.
        let fast = good.replace("freq_max_mhz = 3000", "freq_max_mhz = 5000000");
        let e = Machine::from_toml(&fast, "x.toml").unwrap_err().to_string();
        assert!(e.contains("freq_max_mhz") && e.contains("100000"), "{e}");
        let step = good.replace("freq_step_mhz = 100", "freq_step_mhz = 4294967");
        assert!(Machine::from_toml(&step, "x.toml").unwrap_err().to_string().contains("freq_step_mhz"));
        for (from, to, field) in [
            ("smt_share = 0.62", "smt_share = nan", "smt_share"),
            ("power_w = 1.2", "power_w = inf", "power_w"),
        ] {
            let e = Machine::from_toml(&good.replace(from, to), "x.toml").unwrap_err().to_string();
            assert!(e.contains(field) && e.contains("finite"), "{e}");
        }
    }
}
