// SPDX-License-Identifier: GPL-2.0-only
//! One definition of every setting: `warmcore sched` and the simulator's
//! `scx:NAME` set the program's globals to the same values on the same
//! machine, for every option of every policy.

use clap::Parser;
use warmcore_sched::{bpf_intf, globals_as_loaded, Policy, SchedOpts, Settings, MAX_CPUS};
use warmcore_sim::scx::{topology, ScxPolicy};
use warmcore_sim::Machine;

#[derive(Parser)]
#[command(allow_negative_numbers = true)]
struct Cli {
    #[command(flatten)]
    opts: SchedOpts,
}

/// `warmcore sched`'s options for `scx:POLICY:params`.
fn as_options(policy: Policy, params: &[(String, String)]) -> Settings {
    let all = Settings::params(policy);
    let mut argv = vec!["sched".to_string(), "--policy".into(), policy.name().into()];
    for (k, v) in params {
        let p = all.iter().find(|p| p.key == *k).unwrap();
        if p.switch {
            if (v == "off") == p.inverted {
                argv.push(format!("--{}", p.long));
            }
        } else {
            argv.extend([format!("--{}", p.long), v.clone()]);
        }
    }
    Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}")).opts.settings
}

/// Each parameter of `policy` set to a value other than its default, one at
/// a time, after the defaults.
fn cases(policy: Policy) -> Vec<Vec<(String, String)>> {
    let mut out = vec![vec![]];
    let default = Settings::from_params(policy.name(), &[]).unwrap();
    for p in Settings::params(policy) {
        let tries: &[&str] = if p.switch { &["off", "on"] } else { &["off", "on", "threads", "pmqos", "3", "700", "1200000"] };
        let changed = tries.iter().map(|v| vec![(p.key.clone(), v.to_string())]).find(|kv| {
            Settings::from_params(policy.name(), kv).is_ok_and(|s| s != default)
        });
        out.push(changed.unwrap_or_else(|| panic!("scx:{}: no value of {} changes the settings", policy.name(), p.key)));
    }
    out
}

#[test]
fn the_kernel_loader_and_the_simulator_set_the_same_globals() {
    for name in ["default", "xeon-e7-8870v4"] {
        let machine = Machine::load(name).unwrap();
        let topo = topology(&machine);
        for policy in Policy::ALL {
            for params in cases(policy) {
                let what = format!("{name}, scx:{}:{params:?}", policy.name());
                let settings = as_options(policy, &params);
                assert_eq!(settings, Settings::from_params(policy.name(), &params).unwrap(), "{what}");
                let sim = ScxPolicy::new(&machine, policy.name(), &params).unwrap();
                let set: Vec<&str> = settings.globals(&topo).iter().map(|g| g.name).collect();
                let mut compared = 0;
                for (global, i, v) in globals_as_loaded(&settings, &topo).unwrap() {
                    // The scx headers' globals (their enums and features,
                    // which the loader's scx_ops_open! fills from the running
                    // kernel) are not the program's knobs; the host build
                    // defines them itself.
                    if sim.global(&global, 0).is_none() && !set.contains(&global.as_str()) {
                        continue;
                    }
                    assert_eq!(sim.global(&global, i), Some(v), "{what}: {global}[{i}]");
                    compared += 1;
                }
                assert!(compared > 2 * machine.nr_cpus as usize, "{what}: only {compared} values compared");
            }
        }
    }
}

#[test]
fn the_settings_number_policies_and_cpus_as_the_program_does() {
    let ids = [
        bpf_intf::wc_policy_WC_POLICY_DEFAULT,
        bpf_intf::wc_policy_WC_POLICY_SLOCAL,
        bpf_intf::wc_policy_WC_POLICY_SMOVE,
        bpf_intf::wc_policy_WC_POLICY_NEST,
        bpf_intf::wc_policy_WC_POLICY_HAIKU_LOW_LATENCY,
        bpf_intf::wc_policy_WC_POLICY_HAIKU_POWER_SAVING,
        bpf_intf::wc_policy_WC_POLICY_WARM,
    ];
    assert_eq!(Policy::ALL.map(|p| p.id()), ids);
    assert_eq!(MAX_CPUS, bpf_intf::wc_consts_WC_MAX_CPUS);
}
