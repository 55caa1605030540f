// SPDX-License-Identifier: GPL-2.0-only
//! Per-core frequency control and energy.
//!
//! - `powersave`: hardware-controlled (intel_pstate active / HWP). The
//!   hardware keeps an exponential average of the core's busy share, rising
//!   with time constant `hw_tau_up_ms` and falling with `hw_tau_down_ms`, and
//!   every `hw_sample_us` asks for 1.25 x average x max turbo (the 1.25 x busy
//!   rule of intel_pstate's get_target_pstate, docs/model.md, Hardware
//!   P-states),
//!   floored to the bus step, clamped to [min, turbo ceiling of the socket].
//!   After the core falls idle its frequency bounces for a while
//!   (Fewer Cores, More Hertz, section 2). The constants are fitted per
//!   machine.
//! - `performance`: the same hardware, with the floor at the base frequency
//!   (Nest, section 2.3: "the hardware can still freely choose
//!   between the nominal frequency and the turbo frequencies").
//! - `schedutil`: 1.25 x util x f_max over PELT utilisation (32 ms half-life),
//!   rate limited (docs/model.md, PELT and schedutil); the request is
//!   applied at once (the raw transition takes tens of microseconds, Fewer
//!   Cores, More Hertz, section 2). The utilisation is the CPU's, or its current task's if
//!   higher (a new task starts at half), plus that of a task being enqueued
//!   at a fork or wake-up; frequency invariance and util_est are not
//!   modelled.
//!
//! SMT siblings share their core's frequency: state is per core.
//!
//! A run's governor may carry the energy-performance preference of the
//! machine's driver (`powersave:epp=balance_power`, `Frequency`): it scales
//! the hardware's time constants above (`apply_epp`; docs/model.md,
//! Frequency drivers of today).

use crate::machine::{Driver, Machine};
use crate::SimError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Governor {
    Powersave,
    Schedutil,
    Performance,
}

pub const GOVERNORS: &[&str] = &["powersave", "schedutil", "performance"];

impl Governor {
    pub fn parse(s: &str) -> Result<Governor, crate::SimError> {
        match s {
            "powersave" => Ok(Governor::Powersave),
            "schedutil" => Ok(Governor::Schedutil),
            "performance" => Ok(Governor::Performance),
            _ => Err(crate::SimError::Input(format!("unknown governor '{s}'; valid: {}", GOVERNORS.join(", ")))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Governor::Powersave => "powersave",
            Governor::Schedutil => "schedutil",
            Governor::Performance => "performance",
        }
    }
    /// The lowest frequency the governor allows, kHz.
    pub fn floor(self, m: &Machine) -> u32 {
        match self {
            Governor::Performance => m.base_khz(),
            _ => m.min_khz(),
        }
    }
}

/// energy_performance_preference's names (sysfs), in the kernel's order.
pub const EPP_PRESETS: &[&str] = &["performance", "balance_performance", "balance_power", "power"];

/// The value of each of `EPP_PRESETS` under the machine's driver, or None
/// if it has no EPP: intel_pstate's `epp_values` (`HWP_EPP_*`, with
/// balance_performance per model from `intel_epp_default`), amd-pstate's
/// `AMD_CPPC_EPP_*`.
pub fn epp_presets(m: &Machine) -> Option<[u8; 4]> {
    let d = &m.spec.dvfs;
    match d.driver? {
        _ if d.epp.is_none() => None,
        Driver::IntelPstate => Some([0x00, d.epp_balance_performance.unwrap_or(0x80), 0xC0, 0xFF]),
        Driver::AmdPstate => Some([0x00, 0x80, 0xBF, 0xFF]),
        Driver::AcpiCpufreq => None,
    }
}

/// EPP steps per doubling of the hardware's time to speed up
/// (ASSUMPTION, range 32 to 128: docs/model.md, Frequency drivers of today).
pub const EPP_STEPS_PER_DOUBLING: f64 = 64.0;

/// A run's frequency setting: `GOVERNOR[:epp=PRESET]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frequency {
    pub governor: Governor,
    /// The EPP the run asked for; None: the machine's own.
    pub epp: Option<u8>,
}

impl Frequency {
    /// Parse a governor with its parameters for machine `m`: what the
    /// kernel would refuse is refused, in one line.
    pub fn parse(spec: &str, m: &Machine) -> Result<Frequency, SimError> {
        let (name, params) = crate::parse_spec(spec);
        let governor = Governor::parse(name)?;
        let bad = |msg: String| Err(SimError::Input(format!("governor '{spec}': {msg}")));
        let mut epp = None;
        for (k, v) in &params {
            if k != "epp" || epp.is_some() {
                return bad("the one parameter a governor takes is epp (powersave:epp=balance_power)".into());
            }
            epp = Some(v.as_str());
        }
        let Some(v) = epp else { return Ok(Frequency { governor, epp: None }) };
        let driver = m.spec.dvfs.driver.map_or("no driver", |d| d.name());
        let Some(presets) = epp_presets(m) else {
            return bad(format!(
                "machine {} ({driver}{}) has no energy-performance preference; epp needs intel_pstate with HWP or amd-pstate",
                m.spec.name,
                if m.spec.dvfs.hwp { "" } else { ", no HWP" }
            ));
        };
        let value = if v == "default" {
            m.spec.dvfs.epp.unwrap_or_default()
        } else if let Some(i) = EPP_PRESETS.iter().position(|p| *p == v) {
            presets[i]
        } else {
            match v.parse::<u8>() {
                Ok(n) => n,
                Err(_) => return bad(format!("epp is one of {}, default or a number from 0 to 255, not '{v}'", EPP_PRESETS.join(", "))),
            }
        };
        match governor {
            // intel_pstate_set_energy_pref_index, amd_pstate_set_energy_pref_index.
            Governor::Performance if value != 0 => {
                return bad("under performance the kernel writes EPP 0 and refuses another (-EBUSY)".into())
            }
            // amd-pstate's passive and guided modes have no EPP attribute.
            Governor::Schedutil if m.spec.dvfs.driver == Some(Driver::AmdPstate) => {
                return bad("amd-pstate runs schedutil in passive or guided mode, which has no energy_performance_preference".into())
            }
            _ => {}
        }
        Ok(Frequency { governor, epp: Some(value) })
    }

    /// `GOVERNOR` or `GOVERNOR:epp=N`, the EPP as a number.
    pub fn name(&self) -> String {
        match self.epp {
            None => self.governor.name().into(),
            Some(e) => format!("{}:epp={e}", self.governor.name()),
        }
    }

    /// The machine under this setting: its hardware under the EPP asked
    /// for. Not under performance, which the model keeps as the papers'
    /// (docs/model.md, Frequency drivers of today).
    pub fn apply(&self, m: &mut Machine) {
        if let (Some(e), false) = (self.epp, self.governor == Governor::Performance) {
            apply_epp(m, e);
        }
    }
}

/// The hardware under EPP `epp` instead of the machine file's: its time
/// to speed up doubles every `EPP_STEPS_PER_DOUBLING` steps toward power,
/// and its time to slow down halves (ASSUMPTION: docs/model.md, Frequency
/// drivers of today). The file's own EPP leaves the machine as it is.
pub fn apply_epp(m: &mut Machine, epp: u8) {
    let Some(own) = m.spec.dvfs.epp else { return };
    if epp == own {
        return;
    }
    let s = ((epp as f64 - own as f64) / EPP_STEPS_PER_DOUBLING).exp2();
    m.spec.dvfs.hw_tau_up_ms *= s;
    m.spec.dvfs.hw_tau_down_ms /= s;
}

/// One physical core's frequency and energy state.
#[derive(Clone, Debug)]
pub struct CoreDvfs {
    pub freq: u32,
    /// Threads running now.
    pub running: u8,
    /// Shallowest idle state among its threads (when not busy).
    pub idle_state: u8,
    /// Running or spinning: in C0 for the hardware.
    pub busy: bool,
    pub pending: bool,
    pub gen: u32,
    /// Last schedutil update (u64::MAX: never).
    pub su_last: u64,
    /// The last requests of schedutil and of the hardware's own algorithm,
    /// kHz: with HWP under schedutil the core runs at the higher.
    pub(crate) su_req: u32,
    pub(crate) hw_req: u32,
    avg: f64,
    avg_t: u64,
    idle_since: Option<u64>,
    /// The last decay of `avg` computed: its gap, its time constant and
    /// the factor. A core's samples come at a fixed period, so most gaps
    /// are the one before (three quarters of configure's), and `exp` is
    /// not called again for them.
    last_decay: (u64, f64, f64),
}

impl CoreDvfs {
    pub fn new(freq: u32) -> CoreDvfs {
        CoreDvfs {
            freq,
            running: 0,
            idle_state: 0,
            busy: false,
            pending: false,
            gen: 0,
            su_last: u64::MAX,
            su_req: freq,
            hw_req: freq,
            avg: 0.0,
            avg_t: 0,
            // Long idle at the start: no bouncing.
            idle_since: None,
            // A time constant no spec has: the first decay is computed.
            last_decay: (0, f64::NAN, 1.0),
        }
    }

    fn update_avg(&mut self, now: u64, m: &Machine) {
        if now <= self.avg_t {
            return;
        }
        let target = if self.busy { 1.0 } else { 0.0 };
        let tau = if target > self.avg { m.spec.dvfs.hw_tau_up_ms } else { m.spec.dvfs.hw_tau_down_ms } * 1e6;
        let gap = now - self.avg_t;
        let decay = match self.last_decay {
            (g, t, d) if g == gap && t == tau => d,
            _ => {
                let d = (-(gap as f64) / tau).exp();
                self.last_decay = (gap, tau, d);
                d
            }
        };
        self.avg = target + (self.avg - target) * decay;
        self.avg_t = now;
    }

    pub fn set_busy(&mut self, now: u64, busy: bool, m: &Machine, _g: Governor) {
        self.update_avg(now, m);
        self.busy = busy;
        self.idle_since = if busy { None } else { Some(now) };
    }

    /// One hardware sample: the new frequency, and whether more samples are
    /// needed (false once the core is steady at its floor or ceiling).
    pub fn hw_sample(&mut self, now: u64, m: &Machine, g: Governor, ceiling: u32) -> (u32, bool) {
        self.update_avg(now, m);
        let d = &m.spec.dvfs;
        let floor = g.floor(m);
        let mut f = request(m, self.avg, floor, ceiling.max(floor));
        let mut bouncing = false;
        if let Some(since) = self.idle_since {
            let dt = (now - since) as f64 * 1e-6;
            let window = d.hw_bounce_window_ms;
            if dt < window && d.hw_bounce_len_ms > 0.0 {
                bouncing = true;
                let phase = dt % d.hw_bounce_period_ms;
                if dt >= d.hw_bounce_period_ms && phase < d.hw_bounce_len_ms {
                    f = f.max(d.hw_bounce_mhz * 1000).min(ceiling.max(floor));
                }
            }
        }
        let steady = if self.busy { f >= ceiling } else { f <= floor && !bouncing };
        (f, !steady)
    }
}

/// The dynamic power of a busy core at `f_khz` when its socket's voltage
/// is the one `v_khz` needs, W: C x V^2 x f, V linear in frequency between
/// the machine's minimum and maximum (docs/model.md, Energy; coefficients
/// in the machine file).
pub fn dynamic_power(m: &Machine, f_khz: u32, v_khz: u32) -> f64 {
    dynamic_power_at(m, f_khz, voltage(m, v_khz))
}

/// The voltage that `v_khz` needs, linear in frequency between the
/// machine's minimum and maximum (a socket's, for all its busy cores).
pub fn voltage(m: &Machine, v_khz: u32) -> f64 {
    let p = &m.spec.power;
    let (fmin, fmax) = (m.min_khz() as f64, m.max_khz() as f64);
    let x = if fmax > fmin { ((v_khz as f64 - fmin) / (fmax - fmin)).clamp(0.0, 1.0) } else { 1.0 };
    p.v_min + (p.v_max - p.v_min) * x
}

/// The dynamic power of a busy core at `f_khz` and voltage `v`, W.
pub fn dynamic_power_at(m: &Machine, f_khz: u32, v: f64) -> f64 {
    m.spec.power.dyn_coeff * v * v * f_khz as f64 * 1e-6
}

/// 1.25 x `share` x f_max (busy share for the hardware, utilisation for
/// schedutil: docs/model.md, Hardware P-states and PELT and schedutil),
/// floored to the bus step and
/// clamped to [floor, ceiling], kHz.
pub fn request(m: &Machine, share: f64, floor: u32, ceiling: u32) -> u32 {
    let step = m.spec.dvfs.freq_step_mhz * 1000;
    let want = 1.25 * share * m.max_khz() as f64;
    ((want as u32) / step * step).clamp(floor, ceiling)
}

/// The average frequency over the first `ns` of a core that leaves a long
/// idle to run alone on its socket, kHz: what APERF/MPERF shows at a tick
/// `ns` into the run. For the hardware governors, the ramp of `hw_sample`;
/// for schedutil, the request over a new task's utilisation (half) grown
/// over the time.
pub fn avg_freq_after_busy(m: &Machine, g: Governor, ns: u64) -> u32 {
    let ceiling = m.turbo_by_active[1];
    let floor = g.floor(m);
    if ns == 0 {
        return floor;
    }
    let mut area = 0.0;
    if g == Governor::Schedutil {
        const STEPS: u64 = 64;
        for i in 0..STEPS {
            let t = (i * ns / STEPS) as f64;
            let util = 1.0 - 0.5 * crate::pelt::decay(t);
            area += request(m, util, m.min_khz(), ceiling) as f64 * (ns / STEPS) as f64;
        }
        return (area / (ns / STEPS * STEPS) as f64).round() as u32;
    }
    let mut core = CoreDvfs::new(floor);
    core.set_busy(0, true, m, g);
    let period = m.spec.dvfs.hw_sample_us * 1000;
    let mut t = 0;
    while t < ns {
        let next = (t + period).min(ns);
        area += core.freq as f64 * (next - t) as f64;
        t = next;
        if t % period == 0 {
            core.freq = core.hw_sample(t, m, g, ceiling).0;
        }
    }
    (area / ns as f64).round() as u32
}
