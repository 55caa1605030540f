// SPDX-License-Identifier: GPL-2.0-only
//! Decision counts and the per-operation profile (in the spirit of Haiku's
//! scheduler profiler, shared/seeds/002: calls, total and mean time), summed
//! over the per-CPU records of the BPF side.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags};
use serde::Serialize;

use crate::bpf_intf as intf;
use crate::bpf_skel::BpfSkel;
use crate::SchedOpts;

/// Counter names, in the order of `enum wc_stat` (src/bpf/intf.h).
pub const STAT_NAMES: [&str; intf::wc_stat_WC_NR_STATS as usize] = [
    "select_cpu",
    "direct_idle",
    "queued",
    "pulled",
    "kicks",
    "waker_placed",
    "smove_fast",
    "timers_armed",
    "timers_fired",
    "timers_cancelled",
    "timers_busy",
    "nest_attached",
    "nest_primary",
    "nest_reserve",
    "nest_fallback",
    "nest_none",
    "nest_promotions",
    "nest_demotions",
    "nest_compactions",
    "nest_impatient",
    "nest_other_die",
    "nest_claim_lost",
    "warm_spins",
    "warm_ns",
    "warm_preempted",
];

/// Operation names, in the order of `enum wc_prof_op`.
pub const PROF_NAMES: [&str; intf::wc_prof_op_WC_NR_PROF as usize] =
    ["select_cpu", "enqueue", "dispatch", "running", "stopping", "tick"];

#[derive(Serialize, Debug, Clone)]
pub struct OpProfile {
    pub calls: u64,
    pub total_ns: u64,
    pub mean_ns: f64,
}

#[derive(Serialize, Debug, Clone)]
pub struct Metrics {
    pub policy: String,
    pub elapsed_s: f64,
    pub counts: BTreeMap<String, u64>,
    pub nest_primary: u64,
    pub nest_reserve: u64,
    pub nest_primary_max: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<BTreeMap<String, OpProfile>>,
}

pub(crate) fn read(skel: &BpfSkel<'_>, opts: &SchedOpts, elapsed: Duration) -> Result<Metrics> {
    let vals = skel
        .maps
        .stats
        .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
        .context("reading the statistics map")?
        .unwrap_or_default();
    let mut sum: intf::wc_cpu_stats = unsafe { std::mem::zeroed() };
    for v in &vals {
        if v.len() < std::mem::size_of::<intf::wc_cpu_stats>() {
            continue;
        }
        let s: intf::wc_cpu_stats = unsafe { std::ptr::read_unaligned(v.as_ptr() as *const _) };
        for i in 0..sum.cnt.len() {
            sum.cnt[i] += s.cnt[i];
        }
        for i in 0..sum.prof_calls.len() {
            sum.prof_calls[i] += s.prof_calls[i];
            sum.prof_ns[i] += s.prof_ns[i];
        }
    }
    let counts = STAT_NAMES.iter().zip(sum.cnt.iter()).map(|(n, v)| (n.to_string(), *v)).collect();
    let profile = opts.profile.then(|| {
        PROF_NAMES
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let (c, t) = (sum.prof_calls[i], sum.prof_ns[i]);
                let mean = if c > 0 { t as f64 / c as f64 } else { 0.0 };
                (n.to_string(), OpProfile { calls: c, total_ns: t, mean_ns: mean })
            })
            .collect()
    });
    let bss = skel.maps.bss_data.as_ref().unwrap();
    Ok(Metrics {
        policy: opts.policy.name().to_string(),
        elapsed_s: elapsed.as_secs_f64(),
        counts,
        nest_primary: bss.nr_primary,
        nest_reserve: bss.nr_reserve,
        nest_primary_max: bss.max_primary,
        profile,
    })
}
