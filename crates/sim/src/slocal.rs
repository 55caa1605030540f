// SPDX-License-Identifier: GPL-2.0-only
//! `slocal`: the S_local strategy of Fewer Cores, More Hertz, section 3.1: a
//! created or woken task is placed on the CPU of the task that created or
//! woke it (for a fork, the parent's CPU), whose core is likely running at a
//! high frequency.
//!
//! Everything else is the fair class (`cfs`): queueing, wakeup and tick
//! preemption, and load balancing, which is what relieves an oversubscribed
//! waker CPU in the paper ("mitigated by the periodic load balancer").
//! Wake-ups without a waker (a timer or I/O completion) and exec keep the
//! fair class's choice: there is no waker's core to prefer there.

use crate::cfs::{Cfs, OnCfs};
use crate::machine::Machine;
use crate::policy::{Policy, Wake, WakeKind};
use crate::sim::{Sim, Tid};
use crate::SimError;

#[derive(Default, Debug)]
struct Counters {
    /// Wake-ups placed on the waker's CPU.
    local_wakeups: u64,
    /// Forks placed on the parent's CPU.
    local_forks: u64,
    /// Placements left to the fair class (exec, wake-ups without a waker).
    fair_choices: u64,
    /// Local placements that differ from where the fair class would have put
    /// the task (the decisions S_local actually changes).
    overridden: u64,
}

pub struct SLocal {
    cfs: Cfs,
    n: Counters,
}

impl SLocal {
    pub fn new(m: &Machine, params: &[(String, String)]) -> Result<SLocal, SimError> {
        // The fair class's own parameters (balance=on|off) pass through.
        let cfs = Cfs::new(m, params).map_err(|e| SimError::Input(e.to_string().replacen("cfs", "slocal", 1)))?;
        Ok(SLocal { cfs, n: Counters::default() })
    }
}

impl OnCfs for SLocal {
    fn cfs(&self) -> &Cfs {
        &self.cfs
    }
    fn cfs_mut(&mut self) -> &mut Cfs {
        &mut self.cfs
    }
    fn name(&self) -> String {
        "slocal".into()
    }
    fn select_cpu(&mut self, sim: &mut Sim, t: Tid, prev: u32, w: Wake) -> u32 {
        // The fair class still sees the placement (its wakee bookkeeping and
        // counters), but its choice is only used where S_local has no waker.
        let fair = self.cfs.select_cpu(sim, t, prev, w);
        let local = match w.kind {
            WakeKind::Wakeup | WakeKind::Fork if w.waker.is_some() => w.waker_cpu,
            _ => {
                self.n.fair_choices += 1;
                return fair;
            }
        };
        // S_local takes the waker's CPU without looking at any other: the
        // fair class's search above is bookkeeping, not code that runs.
        sim.set_scanned(0);
        if w.kind == WakeKind::Fork {
            self.n.local_forks += 1;
        } else {
            self.n.local_wakeups += 1;
        }
        if local != fair {
            self.n.overridden += 1;
        }
        local
    }
    fn stats(&self) -> serde_json::Value {
        let n = &self.n;
        serde_json::json!({
            "local_wakeups": n.local_wakeups,
            "local_forks": n.local_forks,
            "fair_choices": n.fair_choices,
            "overridden": n.overridden,
            "cfs": self.cfs.stats(),
        })
    }
}
