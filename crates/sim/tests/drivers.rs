// SPDX-License-Identifier: GPL-2.0-only
//! The frequency drivers of today (docs/model.md, Frequency drivers of
//! today): each machine names its driver, the EPP presets are the
//! kernel's, what the kernel refuses is refused, and the EPP scales the
//! hardware's ramp as the model's assumption says.

use warmcore_sim::dvfs::{apply_epp, avg_freq_after_busy, Frequency, EPP_STEPS_PER_DOUBLING};
use warmcore_sim::machine::Driver;
use warmcore_sim::run::{run, RunConfig};
use warmcore_sim::{Governor, Machine, SimError};

fn epp(machine: &str, spec: &str) -> Result<Option<u8>, String> {
    let m = Machine::load(machine).unwrap();
    Frequency::parse(spec, &m).map(|f| f.epp).map_err(|e| match e {
        SimError::Input(msg) => msg,
        other => panic!("{spec} on {machine}: not an input error: {other}"),
    })
}

#[test]
fn every_preset_names_its_driver_and_the_epp_it_boots_with() {
    use Driver::*;
    for (name, driver, boot_epp) in [
        ("default", IntelPstate, None),
        ("xeon-e7-8870v4", IntelPstate, None),
        ("xeon-gold-6130-2s", IntelPstate, Some(128)),
        ("xeon-gold-6130-4s", IntelPstate, Some(128)),
        ("xeon-gold-5218-2s", IntelPstate, Some(128)),
        ("ryzen5-3400g", AcpiCpufreq, None),
        ("ryzen5-pro-4650g", AcpiCpufreq, None),
        ("core2duo-e8400", AcpiCpufreq, None),
        // intel_epp_default: balance_performance is 32 on Emerald Rapids.
        ("xeon-8592p-2s", IntelPstate, Some(32)),
        ("epyc-9654-2s", AmdPstate, Some(128)),
    ] {
        let m = Machine::load(name).unwrap();
        assert_eq!((m.spec.dvfs.driver, m.spec.dvfs.epp), (Some(driver), boot_epp), "{name}");
    }
}

#[test]
fn the_presets_are_the_kernels_values() {
    let names = ["performance", "balance_performance", "balance_power", "power"];
    // intel_pstate: HWP_EPP_* of msr-index.h; balance_performance from
    // intel_epp_default on Emerald Rapids.
    for (machine, values) in [
        ("xeon-gold-5218-2s", [0, 128, 192, 255]),
        ("xeon-8592p-2s", [0, 32, 192, 255]),
        // amd-pstate: AMD_CPPC_EPP_*.
        ("epyc-9654-2s", [0, 128, 191, 255]),
    ] {
        for (n, v) in names.iter().zip(values) {
            assert_eq!(epp(machine, &format!("powersave:epp={n}")), Ok(Some(v)), "{machine} {n}");
        }
        let boot = Machine::load(machine).unwrap().spec.dvfs.epp;
        assert_eq!(epp(machine, "powersave:epp=default"), Ok(boot), "{machine}");
        assert_eq!(epp(machine, "powersave:epp=77"), Ok(Some(77)), "{machine}");
        assert_eq!(epp(machine, "powersave"), Ok(None), "{machine}");
    }
    // The EPP stays writable in intel_pstate's passive mode.
    assert_eq!(epp("xeon-8592p-2s", "schedutil:epp=power"), Ok(Some(255)));
    // The kernel takes 0 under performance.
    assert_eq!(epp("xeon-8592p-2s", "performance:epp=performance"), Ok(Some(0)));
}

#[test]
fn what_the_kernel_refuses_is_refused_in_one_line() {
    for (machine, spec, says) in [
        // No EPP: acpi-cpufreq, intel_pstate without HWP.
        ("ryzen5-3400g", "powersave:epp=power", "acpi-cpufreq"),
        ("xeon-e7-8870v4", "powersave:epp=power", "no HWP"),
        // -EBUSY under performance.
        ("xeon-8592p-2s", "performance:epp=power", "refuses"),
        ("epyc-9654-2s", "performance:epp=1", "refuses"),
        // amd-pstate's passive mode has no EPP attribute.
        ("epyc-9654-2s", "schedutil:epp=power", "passive"),
        ("xeon-8592p-2s", "powersave:epp=256", "0 to 255"),
        ("xeon-8592p-2s", "powersave:epp=turbo", "balance_power"),
        ("xeon-8592p-2s", "powersave:boost=1", "epp"),
        ("xeon-8592p-2s", "powersave:epp=0,epp=1", "epp"),
        ("xeon-8592p-2s", "ondemand", "powersave"),
    ] {
        let e = epp(machine, spec).expect_err(spec);
        assert!(e.contains(says) && !e.contains('\n'), "{machine} {spec}: {e}");
    }
}

#[test]
fn the_machine_files_own_epp_leaves_the_hardware_as_it_is() {
    let m = Machine::load("xeon-8592p-2s").unwrap();
    let mut same = m.clone();
    apply_epp(&mut same, 32);
    assert_eq!(
        (same.spec.dvfs.hw_tau_up_ms, same.spec.dvfs.hw_tau_down_ms),
        (m.spec.dvfs.hw_tau_up_ms, m.spec.dvfs.hw_tau_down_ms)
    );
    let a = run(&RunConfig::new("xeon-8592p-2s", "configure:checks=20", "eevdf", "powersave", 1)).unwrap();
    let b = run(&RunConfig::new("xeon-8592p-2s", "configure:checks=20", "eevdf", "powersave:epp=default", 1)).unwrap();
    assert_eq!((a.makespan_ns, a.sim_events, a.energy_j), (b.makespan_ns, b.sim_events, b.energy_j));
    assert_eq!((a.governor.as_str(), b.governor.as_str()), ("powersave", "powersave:epp=32"));
}

#[test]
fn each_step_toward_power_slows_the_ramp_up_and_speeds_the_fall() {
    let m = Machine::load("xeon-gold-5218-2s").unwrap();
    let d = &m.spec.dvfs;
    for e in [0u8, 64, 192, 255] {
        let mut x = m.clone();
        apply_epp(&mut x, e);
        let s = ((e as f64 - 128.0) / EPP_STEPS_PER_DOUBLING).exp2();
        assert!((x.spec.dvfs.hw_tau_up_ms - d.hw_tau_up_ms * s).abs() < 1e-12, "epp {e}");
        assert!((x.spec.dvfs.hw_tau_down_ms - d.hw_tau_down_ms / s).abs() < 1e-12, "epp {e}");
    }
    // What a tick sees of a core that starts to run: faster at a lower EPP.
    let ramp = |e: u8, ms: u64| {
        let mut x = m.clone();
        apply_epp(&mut x, e);
        avg_freq_after_busy(&x, Governor::Powersave, ms * 1_000_000)
    };
    for ms in [2, 4, 8] {
        assert!(ramp(0, ms) > ramp(128, ms) && ramp(128, ms) > ramp(255, ms), "{ms} ms");
    }
}

#[test]
fn a_lower_epp_finishes_a_fork_chain_sooner() {
    let go = |g: &str| run(&RunConfig::new("xeon-gold-5218-2s", "configure:checks=30", "cfs", g, 1)).unwrap();
    let (perf, power) = (go("powersave:epp=performance"), go("powersave:epp=power"));
    assert!(perf.makespan_ns < power.makespan_ns, "{} vs {}", perf.makespan_ns, power.makespan_ns);
    // The model's performance keeps the papers' reading: EPP 0 changes nothing there.
    let (a, b) = (go("performance"), go("performance:epp=performance"));
    assert_eq!((a.makespan_ns, a.energy_j), (b.makespan_ns, b.energy_j));
}

#[test]
fn a_machine_file_names_a_driver_that_can_carry_its_epp() {
    let good = Machine::load("xeon-8592p-2s").unwrap();
    let text = warmcore_sim::machine::PRESETS.iter().find(|p| p.0 == "xeon-8592p-2s").unwrap().1;
    assert!(good.spec.dvfs.hwp);
    for (from, to, field) in [
        ("driver = \"intel_pstate\"", "driver = \"acpi-cpufreq\"", "dvfs.epp"),
        ("driver = \"intel_pstate\"", "driver = \"intel_cpufreq\"", "intel_pstate"),
        ("epp = 32\n", "", "dvfs.epp"),
        ("hwp = true", "hwp = false", "dvfs.epp"),
        ("driver = \"intel_pstate\"", "driver = \"amd-pstate\"", "epp_balance_performance"),
    ] {
        assert!(text.contains(from), "{from}");
        let e = Machine::from_toml(&text.replacen(from, to, 1), "x.toml").unwrap_err().to_string();
        assert!(e.contains(field), "{to}: {e}");
    }
}
