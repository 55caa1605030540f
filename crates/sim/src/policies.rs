// SPDX-License-Identifier: GPL-2.0-only
//! Every policy by name: the one place that names them all, above the
//! policies and below the engine (docs/architecture.md, The simulator's
//! layers).

use crate::policy::Policy;

/// The names `make_policy` accepts.
pub const POLICIES: &[&str] =
    &["cfs", "eevdf", "slocal", "smove", "nest", "haiku-low-latency", "haiku-power-saving", "haiku-old"];

/// Build a policy from `name[:key=value,...]`.
pub fn make_policy(spec: &str, machine: &crate::Machine) -> Result<Box<dyn Policy>, crate::SimError> {
    let (name, params) = crate::parse_spec(spec);
    match name {
        "cfs" => Ok(Box::new(crate::cfs::Cfs::new(machine, &params)?)),
        "eevdf" => Ok(Box::new(crate::cfs::Cfs::new_eevdf(machine, &params)?)),
        "slocal" => Ok(Box::new(crate::slocal::SLocal::new(machine, &params)?)),
        "smove" => Ok(Box::new(crate::smove::SMove::new(machine, &params)?)),
        "haiku-low-latency" => Ok(Box::new(crate::haiku::Haiku::new(machine, crate::haiku::Mode::LowLatency, &params)?)),
        "haiku-power-saving" => Ok(Box::new(crate::haiku::Haiku::new(machine, crate::haiku::Mode::PowerSaving, &params)?)),
        "haiku-old" => Ok(Box::new(crate::haiku_old::HaikuOld::new(machine, &params)?)),
        "nest" => Ok(Box::new(crate::nest::Nest::new(machine, &params)?)),
        #[cfg(feature = "scx")]
        "scx" => {
            // scx:NAME[:key=value,...]: the sched_ext program's policy NAME.
            let rest = spec.split_once(':').map_or("", |r| r.1);
            let (scx_name, scx_params) = crate::parse_spec(rest);
            Ok(Box::new(crate::scx::ScxPolicy::new(machine, scx_name, &scx_params)?))
        }
        #[cfg(feature = "scx")]
        "bpf" => {
            // bpf:DIR[:key=value,...]: the sched_ext program in DIR, with its recipe.
            let rest = spec.split_once(':').map_or("", |r| r.1);
            let (dir, params) = crate::parse_spec(rest);
            Ok(Box::new(crate::scx::ScxPolicy::from_dir(machine, dir, &params)?))
        }
        _ => Err(crate::SimError::Input(format!(
            "unknown policy '{name}'; valid: {}, {}",
            POLICIES.join(", "),
            scx_policy_names()
        ))),
    }
}

fn scx_policy_names() -> String {
    #[cfg(feature = "scx")]
    return format!("{}, bpf:DIR", crate::scx::ScxPolicy::names().join(", "));
    #[cfg(not(feature = "scx"))]
    return "scx:NAME (not in this build: warmcore-sim's feature scx)".into();
}
