// SPDX-License-Identifier: GPL-2.0-only
//! `smove`: the S_move strategy of Fewer Cores, More Hertz, section 3.2, as
//! in the patch published with the paper (docs/model.md, S_move as patched):
//!
//! - the fair class (`cfs`) chooses a CPU for a wake-up, fork or exec;
//! - if that CPU differs from the task's CPU and its frequency sampled at its
//!   last tick is at or below a threshold (default: the machine's minimum
//!   frequency; 0 disables), the task is placed on the waker's CPU instead
//!   and a per-task timer of D (default 50 us) is armed;
//! - the timer is cancelled when the task is picked to run;
//! - on expiry, if the task is still queued and not running, it is migrated
//!   to the CPU chosen first.
//!
//! Parameters: `smove:delay_us=50,threshold_khz=1200000` (threshold in kHz,
//! 0 disables), `timers_only=on` for the overhead experiment of
//! Fewer Cores, More Hertz, section 4.5 (Table 2): timers armed under the same
//! condition, but the task goes to the fair class's choice and the handler
//! does not migrate. `unsampled=low` counts a CPU that has not ticked yet in
//! the run as slow (by default it shows the sample the engine derives for
//! an idle machine). `balance=off` passes through to the fair class.
//!
//! Modelling notes: the sample is the APERF/MPERF average of the CPU's last
//! tick (the engine's `tick_freq`); an idle CPU gets no ticks (NO_HZ_IDLE),
//! so its sample can be stale. A
//! wake-up without a waker (timer, I/O) happens on the task's own CPU in the
//! engine, so "the waker's CPU" is then the task's previous CPU.

use std::collections::HashMap;

use warmcore_trace::ids;

use crate::cfs::{Cfs, OnCfs};
use crate::machine::Machine;
use crate::policy::{Policy, Wake};
use crate::sim::{Sim, Tid, TimerId};
use crate::SimError;

/// D: Fewer Cores, More Hertz, section 3.2 ("a default value of 50 us").
pub const DEFAULT_DELAY_US: u64 = 50;

#[derive(Default, Debug)]
struct Counters {
    placements: u64,
    /// The fair class's choice differs from the task's CPU.
    considered: u64,
    /// ... and that CPU's tick frequency was above the threshold.
    high_freq: u64,
    armed: u64,
    cancelled: u64,
    fired: u64,
    migrated: u64,
}

pub struct SMove {
    cfs: Cfs,
    delay_ns: u64,
    threshold_khz: u32,
    timers_only: bool,
    /// A CPU with no tick yet in the run counts as slow (`unsampled=low`),
    /// instead of showing the sample derived from the idle machine.
    unsampled_low: bool,
    /// Per task with an armed timer: (first choice, timer).
    pending: HashMap<Tid, (u32, TimerId)>,
    n: Counters,
}

impl SMove {
    pub fn new(m: &Machine, params: &[(String, String)]) -> Result<SMove, SimError> {
        let mut delay_us = DEFAULT_DELAY_US;
        let mut threshold_khz = m.min_khz();
        let mut timers_only = false;
        let mut unsampled_low = false;
        let mut rest = Vec::new();
        let num = |k: &str, v: &str| {
            v.parse::<u64>()
                .map_err(|_| SimError::Input(format!("smove: {k} must be a non-negative integer, not '{v}'")))
        };
        for (k, v) in params {
            match k.as_str() {
                "delay_us" => delay_us = num(k, v)?,
                "threshold_khz" => {
                    threshold_khz = u32::try_from(num(k, v)?)
                        .map_err(|_| SimError::Input(format!("smove: threshold_khz '{v}' is too large")))?
                }
                "timers_only" => {
                    timers_only = match v.as_str() {
                        "on" => true,
                        "off" => false,
                        _ => return Err(SimError::Input(format!("smove: timers_only must be on or off, not '{v}'"))),
                    }
                }
                "unsampled" => {
                    unsampled_low = match v.as_str() {
                        "low" => true,
                        "sample" => false,
                        _ => return Err(SimError::Input(format!("smove: unsampled must be low or sample, not '{v}'"))),
                    }
                }
                "balance" => rest.push((k.clone(), v.clone())),
                _ => {
                    return Err(SimError::Input(format!(
                        "unknown smove parameter '{k}'; valid: delay_us, threshold_khz, timers_only, unsampled, balance"
                    )))
                }
            }
        }
        let cfs = Cfs::new(m, &rest).map_err(|e| SimError::Input(e.to_string().replacen("cfs", "smove", 1)))?;
        Ok(SMove {
            cfs,
            delay_ns: delay_us * 1000,
            threshold_khz,
            timers_only,
            unsampled_low,
            pending: HashMap::new(),
            n: Counters::default(),
        })
    }

    /// Whether `c` counts as a low-frequency CPU: its last tick's sample is
    /// at or below the threshold.
    fn low_freq(&self, sim: &Sim, c: u32) -> bool {
        self.threshold_khz > 0 && (sim.tick_freq(c) <= self.threshold_khz || self.unsampled_low && !sim.ticked(c))
    }

    fn cancel(&mut self, sim: &mut Sim, t: Tid) {
        if let Some((_, id)) = self.pending.remove(&t) {
            if sim.cancel_timer(id) {
                self.n.cancelled += 1;
                let pid = sim.task(t).pid;
                let cpu = sim.task(t).cpu;
                sim.trace(cpu, pid, ids::MOVE_TIMER_CANCELLED, 0, 0);
            }
        }
    }
}

impl OnCfs for SMove {
    fn cfs(&self) -> &Cfs {
        &self.cfs
    }
    fn cfs_mut(&mut self) -> &mut Cfs {
        &mut self.cfs
    }
    fn name(&self) -> String {
        "smove".into()
    }
    fn exit_task(&mut self, sim: &mut Sim, t: Tid) {
        self.cancel(sim, t);
        self.cfs.exit_task(sim, t)
    }
    fn select_cpu(&mut self, sim: &mut Sim, t: Tid, prev: u32, w: Wake) -> u32 {
        // A timer still armed from an earlier placement (an exec'ing task
        // that kept running) is superseded.
        self.cancel(sim, t);
        self.n.placements += 1;
        let first = self.cfs.select_cpu(sim, t, prev, w);
        if first == prev {
            return first;
        }
        self.n.considered += 1;
        // The frequency test reads the chosen CPU's last sample.
        sim.note_scan(1);
        if !self.low_freq(sim, first) {
            self.n.high_freq += 1;
            return first;
        }
        let instead = if self.timers_only { first } else { w.waker_cpu };
        if instead == first && !self.timers_only {
            return first;
        }
        let id = sim.set_timer(sim.now() + self.delay_ns, t as u64);
        self.pending.insert(t, (first, id));
        self.n.armed += 1;
        let pid = sim.task(t).pid;
        sim.trace(w.waker_cpu, pid, ids::MOVE_TIMER_ARMED, first, instead);
        instead
    }
    fn running(&mut self, sim: &mut Sim, t: Tid, cpu: u32) {
        self.cancel(sim, t);
        self.cfs.running(sim, t, cpu)
    }
    // Not forwarded: the fair class arms no timers, so every token is one
    // of ours (a task).
    fn timer(&mut self, sim: &mut Sim, token: u64) {
        let t = token as Tid;
        let Some((first, _)) = self.pending.remove(&t) else { return };
        self.n.fired += 1;
        let queued = self.cfs.is_queued(t);
        let migrate = !self.timers_only && queued && sim.task(t).cpu != first;
        if migrate {
            self.cfs.move_queued(sim, t, first);
            self.n.migrated += 1;
        }
        let pid = sim.task(t).pid;
        let cpu = sim.task(t).cpu;
        sim.trace(cpu, pid, ids::MOVE_TIMER_FIRED, first, migrate as u32);
    }
    fn stats(&self) -> serde_json::Value {
        let n = &self.n;
        serde_json::json!({
            "delay_us": self.delay_ns / 1000,
            "threshold_khz": self.threshold_khz,
            "timers_only": self.timers_only,
            "placements": n.placements,
            "considered": n.considered,
            "high_freq": n.high_freq,
            "armed": n.armed,
            "cancelled": n.cancelled,
            "fired": n.fired,
            // Fewer Cores, More Hertz, Table 2 ("timers triggered"): timers whose
            // handler ran, i.e. that expired before the task was picked.
            "timers_triggered": n.fired,
            "migrated": n.migrated,
            "cfs": self.cfs.stats(),
        })
    }
}
