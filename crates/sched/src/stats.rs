// SPDX-License-Identifier: GPL-2.0-only
//! Decision counts and the per-operation profile (in the spirit of Haiku's
//! scheduler profiler, Haiku's scheduler, the profiler: calls, total and mean time), summed
//! over the per-CPU records of the BPF side.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags};
use std::io::Write;

use scx_stats::prelude::*;
use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};

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
    "smove_moved",
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
    "nest_fork_hint",
    "haiku_preempt",
    "haiku_quantum_end",
    "haiku_timer",
    "haiku_moved",
    "haiku_cold",
    "haiku_warm",
    "haiku_small_core",
    "haiku_pinned",
    "warm_prev",
    "warm_fork",
    "warm_found",
    "warm_spread",
    "warm_joined",
    "warm_left",
    "warm_local",
];

/// Operation names, in the order of `enum wc_prof_op`.
pub const PROF_NAMES: [&str; intf::wc_prof_op_WC_NR_PROF as usize] =
    ["select_cpu", "enqueue", "dispatch", "running", "stopping", "tick", "quantum_timer"];

/// One operation of the profile.
#[derive(Serialize, Deserialize, Debug, Clone, Default, Stats)]
pub struct OpProfile {
    #[stat(desc = "Calls")]
    pub calls: u64,
    #[stat(desc = "Total time in the operation (ns)")]
    pub total_ns: u64,
    #[stat(desc = "Mean time per call (ns)")]
    pub mean_ns: f64,
}

/// What `--stats` prints (one JSON object a line) and the stats server
/// answers (`--monitor`, or any scx_stats client). Counts are totals since
/// the scheduler was attached.
#[derive(Serialize, Deserialize, Debug, Clone, Default, Stats)]
#[stat(top)]
pub struct Metrics {
    #[stat(desc = "Placement policy")]
    pub policy: String,
    #[stat(desc = "Seconds since the scheduler was attached")]
    pub elapsed_s: f64,
    #[stat(desc = "Decision counts, by name (src/bpf/intf.h, enum wc_stat)")]
    pub counts: BTreeMap<String, u64>,
    #[stat(desc = "Cores in Nest's primary nest now")]
    pub nest_primary: u64,
    #[stat(desc = "Cores in Nest's reserve nest now")]
    pub nest_reserve: u64,
    #[stat(desc = "Largest primary nest so far")]
    pub nest_primary_max: u64,
    #[stat(desc = "Cores held in the polling idle state now (--nest-warm pmqos, --warm-poll-cpus)")]
    #[serde(default)]
    pub warm_cpus: u64,
    #[stat(desc = "Per-operation profile (with --profile)")]
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub profile: BTreeMap<String, OpProfile>,
    #[stat(desc = "Instructions the kernel's verifier processed, by program, when this attachment was loaded (bpf_prog_info.verified_insns)")]
    #[serde(default)]
    pub verified_insns: BTreeMap<String, u64>,
}

impl Metrics {
    /// Add the counts of an earlier attachment (after CPU hotplug).
    pub fn add(&mut self, earlier: &Metrics) {
        for (k, v) in &earlier.counts {
            *self.counts.entry(k.clone()).or_default() += v;
        }
        for (k, p) in &earlier.profile {
            let e = self.profile.entry(k.clone()).or_default();
            e.calls += p.calls;
            e.total_ns += p.total_ns;
            e.mean_ns = if e.calls > 0 { e.total_ns as f64 / e.calls as f64 } else { 0.0 };
        }
        self.nest_primary_max = self.nest_primary_max.max(earlier.nest_primary_max);
    }
}

/// The stats server's data: one request ("top", the default) answered with
/// the current Metrics by the loader's main loop.
pub fn server_data() -> StatsServerData<(), Metrics> {
    let open: Box<dyn StatsOpener<(), Metrics>> = Box::new(move |(req_ch, res_ch)| {
        let read: Box<dyn StatsReader<(), Metrics>> = Box::new(move |_args, (req_ch, res_ch)| {
            req_ch.send(())?;
            res_ch.recv()?.to_json()
        });
        let _ = (req_ch, res_ch);
        Ok(read)
    });
    StatsServerData::new()
        .add_meta(OpProfile::meta())
        .add_meta(Metrics::meta())
        .add_ops("top", StatsOps { open, close: None })
}

/// Print the running scheduler's Metrics every @intv as JSON lines, through
/// its stats server, until @stop.
pub fn monitor(intv: Duration, stop: impl Fn() -> bool) -> Result<()> {
    scx_utils::monitor_stats::<Metrics>(&[], intv, stop, |m| {
        let mut o = std::io::stdout().lock();
        writeln!(o, "{}", serde_json::to_string(&m)?)?;
        o.flush()?;
        Ok(())
    })
}

pub(crate) fn read(skel: &BpfSkel<'_>, opts: &SchedOpts, elapsed: Duration) -> Result<Metrics> {
    let vals = skel
        .maps
        .stats
        .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
        .context("reading the statistics map")?
        .unwrap_or_default();
    // SAFETY: wc_cpu_stats is plain integers, for which zero is valid.
    let mut sum: intf::wc_cpu_stats = unsafe { std::mem::zeroed() };
    for v in &vals {
        if v.len() < std::mem::size_of::<intf::wc_cpu_stats>() {
            continue;
        }
        // SAFETY: v holds at least one wc_cpu_stats (checked above), plain
        // integers, read without an alignment assumption.
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
    let profile = if !opts.settings.profile {
        BTreeMap::new()
    } else {
        PROF_NAMES
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let (c, t) = (sum.prof_calls[i], sum.prof_ns[i]);
                let mean = if c > 0 { t as f64 / c as f64 } else { 0.0 };
                (n.to_string(), OpProfile { calls: c, total_ns: t, mean_ns: mean })
            })
            .collect()
    };
    let bss = skel.maps.bss_data.as_ref().unwrap();
    Ok(Metrics {
        policy: opts.settings.policy.name().to_string(),
        elapsed_s: elapsed.as_secs_f64(),
        counts,
        nest_primary: bss.nr_primary,
        nest_reserve: bss.nr_reserve,
        nest_primary_max: bss.max_primary,
        warm_cpus: 0,
        profile,
        verified_insns: BTreeMap::new(),
    })
}
