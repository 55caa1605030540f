// SPDX-License-Identifier: GPL-2.0-only
//! Claim 7. Nest, sections 5.2 and 5.3 (impact of Nest features): without
//! the reserve nest configure is slower, most on the E7; without spinning h2
//! is slower on the 2-socket machines.

use super::{pct, short_machine, yn, Setup, E7, G5218, NEST_GOVERNOR, ON_PAR_PCT};
use crate::{near, Band, Cell, Claim, Grade, Outcome, Param, Results, Unknown};

/// configure without the reserve nest, in percent: about this loss on the
/// 6130 and 5218, up to the E7's.
const NO_RESERVE_PCT: f64 = -5.0;
const NO_RESERVE_E7_PCT: f64 = -16.0;
/// h2 without spinning on the 2-socket machines, in percent: from the
/// smaller loss to the larger.
const NO_SPIN_PCT: (f64, f64) = (-10.0, -21.0);

const NO_RESERVE: &str = "nest:reserve=off";
const NO_SPIN: &str = "nest:spin=off";

/// configure and h2 under Nest; the ablations' cells are these with the
/// feature off.
fn configure(s: &Setup, m: &str) -> Cell {
    Cell::new(m, &s.configure, "nest", NEST_GOVERNOR)
}

fn h2(s: &Setup, m: &str) -> Cell {
    Cell::new(m, &s.h2, "nest", NEST_GOVERNOR)
}

pub(super) fn claim(s: &Setup) -> Claim {
    let mut cells = Vec::new();
    for m in &s.nest_machines {
        cells.push(configure(s, m));
        cells.push(configure(s, m).with_policy(NO_RESERVE));
    }
    for m in &s.two_socket {
        cells.push(h2(s, m));
        cells.push(h2(s, m).with_policy(NO_SPIN));
    }
    let (spin_lo, spin_hi) = NO_SPIN_PCT;
    Claim {
        id: 7,
        source: "Nest, sections 5.2 and 5.3 (impact of Nest features)",
        claim: "Without the reserve nest configure is slower, most on the E7; without spinning h2 is 10-21 % slower on the 2-socket machines.",
        paper_value: format!(
            "no reserve: configure about {NO_RESERVE_PCT} % (6130, 5218), up to {NO_RESERVE_E7_PCT} % (E7); no spinning: h2 {spin_lo} % to {spin_hi} % \
             (2-socket 6130, 5218)"
        ),
        needs: vec!["nest".into(), NO_RESERVE.into(), NO_SPIN.into()],
        runs: s.runs(&cells, |_| false),
        check,
        bands: bands(),
    }
}

fn check(r: &Results, s: &Setup) -> Result<Outcome, String> {
    let mut parts = Vec::new();
    let mut reserve_ok = true;
    let mut spin_ok = true;
    let mut grades = Vec::new();
    let (spin_lo, spin_hi) = NO_SPIN_PCT;
    for m in &s.nest_machines {
        let d = r.improvement(&configure(s, m).with_policy(NO_RESERVE), "nest")?;
        parts.push(format!("configure {} no reserve {}", short_machine(m), pct(d)));
        // "about 5 %": more than half of it.
        reserve_ok &= d < -ON_PAR_PCT / 2.0;
        let magnitude = if *m == E7 { d >= NO_RESERVE_E7_PCT } else { near(d, NO_RESERVE_PCT) };
        grades.push(Grade::of(d < -ON_PAR_PCT / 2.0, magnitude));
    }
    for m in &s.two_socket {
        let d = r.improvement(&h2(s, m).with_policy(NO_SPIN), "nest")?;
        parts.push(format!("h2 {} no spinning {}", short_machine(m), pct(d)));
        spin_ok &= d < -ON_PAR_PCT;
        grades.push(Grade::of(d < -ON_PAR_PCT, (spin_hi..=spin_lo).contains(&d)));
    }
    let mut note = format!(
        "Checks: configure more than {} % slower without the reserve nest on every machine ({}), by {} % within a factor of 1.5 \
         on the 6130 and 5218 and by at most {} % on the E7; h2 more than {ON_PAR_PCT} % slower without spinning ({}), by {} % to {} %.",
        ON_PAR_PCT / 2.0,
        yn(reserve_ok),
        -NO_RESERVE_PCT,
        -NO_RESERVE_E7_PCT,
        yn(spin_ok),
        -spin_lo,
        -spin_hi
    );
    // The largest loss without the reserve nest on the 2-socket machines.
    let mut worst_reserve = 0.0f64;
    for m in &s.nest_machines {
        let (_, base) = crate::machine_freqs(m)?;
        let n = configure(s, m);
        let o = n.with_policy(NO_RESERVE);
        if *m != E7 {
            worst_reserve = worst_reserve.min(r.improvement(&o, "nest")?);
        }
        note.push_str(&format!(
            " configure {}: fair-class fallbacks Nest {:.0}, without reserve {:.0}; time with a task waiting while a CPU idles {:.0} ms and {:.0} ms; \
             wake-up latency p99 {:.0} us and {:.0} us; busy below {base} MHz {:.0} % and {:.0} %; mean frequency of busy time \
             {:.0} MHz and {:.0} MHz.",
            short_machine(m),
            r.policy_stat(&n, &["fallbacks"]).unwrap_or(f64::NAN),
            r.policy_stat(&o, &["fallbacks"]).unwrap_or(f64::NAN),
            r.mean_of(&n, |x| x.work_conservation_violation_ns as f64 / 1e6)?,
            r.mean_of(&o, |x| x.work_conservation_violation_ns as f64 / 1e6)?,
            r.mean_of(&n, super::p99_us)?,
            r.mean_of(&o, super::p99_us)?,
            r.fraction_below(&n, base)? * 100.0,
            r.fraction_below(&o, base)? * 100.0,
            r.mean_busy_mhz(&n)?,
            r.mean_busy_mhz(&o)?,
        ));
    }
    for m in &s.two_socket {
        let (_, base) = crate::machine_freqs(m)?;
        let n = h2(s, m);
        let o = n.with_policy(NO_SPIN);
        note.push_str(&format!(
            " h2 {}: busy below {base} MHz Nest {:.0} %, without spinning {:.0} %; mean frequency of busy time {:.0} MHz and {:.0} MHz.",
            short_machine(m),
            r.fraction_below(&n, base)? * 100.0,
            r.fraction_below(&o, base)? * 100.0,
            r.mean_busy_mhz(&n)?,
            r.mean_busy_mhz(&o)?,
        ));
    }
    if worst_reserve < NO_RESERVE_PCT && !near(worst_reserve, NO_RESERVE_PCT) {
        note.push_str(
            " Without the reserve nest the model's loss on the 2-socket machines is larger than the paper's: the placements the reserve nest \
             took go to the fair class instead (the fallbacks above), which picks the core idle the longest, so the \
             task runs while that core ramps up from idle where Nest would have reused a core still fast (the mean \
             frequencies above; no task waits behind another while a CPU idles). On the E7 the ramp is the measured \
             one (Fewer Cores, More Hertz, Figure 3). On the 6130 and 5218 it is the hardware's own (HWP), whose \
             speed no source gives: the model's is an ASSUMPTION (docs/model.md, Hardware P-states), and with a \
             faster ramp the loss there is smaller.",
        );
    }
    if !spin_ok {
        note.push_str(
            " Removing spinning slows h2 in the paper's direction but by less than the paper's 10-21 % on some machine. \
             The paper's reason is frequency (without spinning, too little core activity for the higher frequencies, \
             section 5.3); in the model h2's cores stay fast either way (the busy time below the nominal frequency \
             above), so that part of the loss is mostly absent.",
        );
    }
    Ok(Outcome::new(parts.join("; "), Grade::worst(grades), note))
}

/// The HWP ramp of the 5218: what configure's loss without the reserve nest
/// hangs on there (the note above).
const HWP_RAMP: Unknown = Unknown::new(
    "the Xeon Gold 5218's HWP ramp (time constant of its rise)",
    Param::Machine { machine: G5218, key: "dvfs.hw_tau_up_ms" },
    "ms",
    3.0,
    &[0.5, 3.0, 18.0],
    "no published figure gives the HWP ramp of the 6130 or 5218 (docs/model.md, Hardware P-states). Bounded above by \
     the E7's ramp under the OS's control, measured in Fewer Cores, More Hertz, Figure 3 (29 ms to turbo; the E7 \
     model's 18 ms fitted to it), which the hardware's own control was built to beat; nothing bounds it below: 0.5 ms, \
     one decision of the model's hardware governor, is the fastest the model can act.",
);

/// h2's wait between transactions (a lock or I/O wait): what h2's loss
/// without spinning hangs on (the note above: the longer a worker blocks,
/// the longer its core idles and the less spinning's activity counts).
const H2_WAIT: Unknown = Unknown::new(
    "h2's wait between transactions (its lock contention)",
    Param::Workload { workload: "h2", key: "sleep_us" },
    "us",
    50.0,
    &[10.0, 50.0, 250.0, 1000.0],
    "no source gives how long an h2 client waits on the database's locks: DaCapo's h2 (its h2.cnf) runs a TPC-C-like \
     load with some lock contention and no figure of it, and Nest, section 5.3, says only that h2 stays on about ten \
     cores; the model's 50 us is an ASSUMPTION and the range a wide one, from a fraction of a transaction (10 us) to \
     about three transactions (1 ms), where the workers block more than they run.",
);

fn bands() -> Vec<Band> {
    let reserve = Band::new(
        &[HWP_RAMP],
        "configure without the reserve nest against Nest on the 5218, %",
        (NO_RESERVE_PCT, NO_RESERVE_PCT),
        |s| vec![configure(s, G5218), configure(s, G5218).with_policy(NO_RESERVE)],
        |r, s| r.improvement(&configure(s, G5218).with_policy(NO_RESERVE), "nest"),
    );
    let spin = Band::new(
        &[H2_WAIT],
        "h2 without spinning against Nest on the 5218, %",
        NO_SPIN_PCT,
        |s| vec![h2(s, G5218), h2(s, G5218).with_policy(NO_SPIN)],
        |r, s| r.improvement(&h2(s, G5218).with_policy(NO_SPIN), "nest"),
    )
    .missing(
        "what kept h2's cores slow without spinning in the paper (section 5.3: too little core activity for the higher \
         frequencies); in the model they stay fast either way",
    );
    vec![reserve, spin]
}
