// SPDX-License-Identifier: GPL-2.0-only
//! Claim 1. Fewer Cores, More Hertz, section 2 (Figure 1): under CFS the
//! sequential fork/wait phases of the kernel build run at the lowest
//! frequency.

use super::{kbuild_full, Setup, E7, FCMH_GOVERNOR};
use crate::{Cell, Claim, Grade, Outcome, Results};

/// The paper's lowest frequency of the E7, the one the chains run at, in GHz
/// (the model's minimum frequency, which the check reads from the machine).
const PAPER_MIN_GHZ: f64 = 1.2;
/// The E7's nominal frequency, in GHz.
const PAPER_NOMINAL_GHZ: f64 = 2.1;

/// The fork/wait chains the check reads, each with its name in the claim's
/// text.
fn chains(s: &Setup) -> [(&'static str, Cell); 2] {
    [
        ("kbuild sequential phase", Cell::new(E7, &s.kbuild_seq, "cfs", FCMH_GOVERNOR)),
        ("configure", Cell::new(E7, &s.configure, "cfs", FCMH_GOVERNOR)),
    ]
}

pub(super) fn claim(s: &Setup) -> Claim {
    // The whole kernel build is run for the frequency figure only.
    let mut cells: Vec<Cell> = chains(s).into_iter().map(|(_, c)| c).collect();
    cells.push(kbuild_full("cfs"));
    Claim {
        id: 1,
        source: "Fewer Cores, More Hertz, section 2, Figure 1",
        claim: "Under CFS, fork/wait chains run mostly at low frequency on the Xeon E7-8870 v4 (powersave).",
        paper_value: format!(
            "the mostly sequential phases use all cores at the lowest frequency, {PAPER_MIN_GHZ} GHz (nominal {PAPER_NOMINAL_GHZ} GHz)"
        ),
        needs: vec!["cfs".into()],
        runs: s.runs(&cells, super::is_freq_figure),
        check,
        bands: Vec::new(),
    }
}

fn check(r: &Results, s: &Setup) -> Result<Outcome, String> {
    let (min, base) = crate::machine_freqs(E7)?;
    let mut parts = Vec::new();
    let mut ok = true;
    let mut mostly_min = true;
    let mut notes = Vec::new();
    for (name, c) in chains(s) {
        let below = r.fraction_below(&c, base)?;
        let at_min = r.fraction_below(&c, min + 100)?;
        parts.push(format!("{name}: {:.0} % of busy time below {base} MHz ({:.0} % at {min} MHz)", below * 100.0, at_min * 100.0));
        ok &= below > 0.5;
        // "use all cores at the lowest frequency": most of the time there.
        mostly_min &= at_min > 0.5;
        notes.push(format!(
            "{name}: {:.0} frequency inversions, underload {:.1}/s",
            r.inversions(&c)?,
            r.underload(&c)?
        ));
    }
    let grade = Grade::of(ok, mostly_min);
    let note = if ok {
        format!(
            "Check: more than half of the busy time below the nominal frequency in both fork/wait chains (direction), \
             and more than half at the minimum frequency, the paper's {PAPER_MIN_GHZ} GHz, in both (magnitude: {}). {}.",
            super::yn(mostly_min),
            notes.join("; ")
        )
    } else {
        format!(
            "Check: more than half of the busy time below the nominal frequency in both fork/wait chains; not met. {}. \
             In the model the cores that CFS picks are not slow for most of the busy time: see the frequency figure.",
            notes.join("; ")
        )
    };
    Ok(Outcome::new(parts.join("; "), grade, note))
}
