// SPDX-License-Identifier: GPL-2.0-only
//! warmcore's simulator: machines with per-core DVFS and energy, the Linux
//! fair-class model, a sched_ext-like policy interface, workloads, and a
//! deterministic discrete-event engine. See docs/architecture.md and, for
//! what the model relies on, docs/model.md.

pub mod cfs;
pub mod dvfs;
pub mod engine;
pub mod haiku;
pub mod haiku_old;
mod hardware;
pub mod hunt;
pub mod kernel_time;
pub mod machine;
pub mod nest;
pub mod pelt;
pub mod policies;
pub mod policy;
pub mod prio;
pub mod program;
pub mod queue;
pub mod replay;
pub mod rtapp;
pub mod run;
#[cfg(feature = "scx")]
pub mod scx;
pub mod sim;
pub mod slocal;
pub mod smove;
pub mod wfile;
pub mod workloads;

pub use dvfs::Governor;
pub use engine::{Engine, Limits};
pub use machine::Machine;
pub use policies::{make_policy, POLICIES};
pub use policy::{Enq, Policy, Wake, WakeKind};
pub use run::{load_workload, run, RunConfig, RunReport};
pub use sim::{Sim, Tid};

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Bad input: the message names what is wrong and the valid choices.
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Deadlock(String),
    #[error("writing the trace: {0}")]
    Output(String),
}

/// Split `name:key=value,key=value` into the name and its parameters.
pub fn parse_spec(spec: &str) -> (&str, Vec<(String, String)>) {
    let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let params = rest
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k.trim().to_string(), v.trim().to_string())
        })
        .collect();
    (name.trim(), params)
}
