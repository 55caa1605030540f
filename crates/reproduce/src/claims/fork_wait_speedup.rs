// SPDX-License-Identifier: GPL-2.0-only
//! Claim 2. Fewer Cores, More Hertz, sections 4.1 and 4.4 (Figure 7): S_move
//! and S_local speed up fork/wait-heavy work, perl start-up and the kernel
//! build's mostly sequential phase before the long parallel one.

use super::{armed, kbuild_full, pct, yn, Setup, E7, FCMH_GOVERNOR, ON_PAR_PCT};
use crate::{near, Cell, Claim, Grade, Outcome, Results};

/// perl-benchmark start-up under S_local and S_move against CFS, in percent
/// (section 4.1).
const PERL_SLOCAL_PCT: f64 = 58.0;
const PERL_SMOVE_PCT: f64 = 56.0;
/// The kernel build's phase before the long parallel one, CFS and S_move, in
/// seconds (section 4.4, Figure 7), and S_move's gain as the paper rounds it.
const KBUILD_PRE_CFS_S: f64 = 4.4;
const KBUILD_PRE_SMOVE_S: f64 = 2.9;
const KBUILD_PRE_GAIN_PCT: f64 = 34.0;

const POLICIES: [&str; 3] = ["cfs", "slocal", "smove"];

/// perl start-up and the kernel build's phase before the parallel one under
/// CFS; the strategies' cells are these with another policy.
fn perl(s: &Setup) -> Cell {
    Cell::new(E7, &s.perl, "cfs", FCMH_GOVERNOR)
}

fn kbuild_pre(s: &Setup) -> Cell {
    Cell::new(E7, &s.kbuild_pre, "cfs", FCMH_GOVERNOR)
}

pub(super) fn claim(s: &Setup) -> Claim {
    let mut cells = Vec::new();
    for p in POLICIES {
        cells.push(perl(s).with_policy(p));
        cells.push(kbuild_pre(s).with_policy(p));
    }
    cells.push(kbuild_full("cfs"));
    cells.push(kbuild_full("smove"));
    Claim {
        id: 2,
        source: "Fewer Cores, More Hertz, sections 4.1 and 4.4, Figure 7",
        claim: "S_move and S_local speed up fork/wait-heavy work: perl start-up and the kernel build's mostly sequential phase before the long parallel one.",
        paper_value: format!(
            "perl-benchmark startup: S_local {PERL_SLOCAL_PCT:+} %, S_move {PERL_SMOVE_PCT:+} %; kbuild phase before the long parallel one \
             {KBUILD_PRE_CFS_S} s (CFS) -> {KBUILD_PRE_SMOVE_S} s (S_move), -{KBUILD_PRE_GAIN_PCT} %"
        ),
        needs: vec!["slocal".into(), "smove".into()],
        runs: s.runs(&cells, super::is_freq_figure),
        check,
        bands: Vec::new(),
    }
}

fn check(r: &Results, s: &Setup) -> Result<Outcome, String> {
    let (_, base) = crate::machine_freqs(E7)?;
    let perl = perl(s);
    let kb = kbuild_pre(s);
    let perl_local = r.improvement(&perl.with_policy("slocal"), "cfs")?;
    let perl_move = r.improvement(&perl.with_policy("smove"), "cfs")?;
    let kb_cfs = r.seconds(&kb)?;
    let kb_move = r.seconds(&kb.with_policy("smove"))?;
    let kb_local = r.seconds(&kb.with_policy("slocal"))?;
    let kb_gain = (kb_cfs - kb_move) / kb_cfs * 100.0;
    let kb_paper = KBUILD_PRE_GAIN_PCT;
    let sim_value = format!(
        "perl-startup: S_local {}, S_move {}; kbuild phase before the parallel one {:.3} s (CFS) -> {:.3} s (S_move, {}), {:.3} s (S_local)",
        pct(perl_local),
        pct(perl_move),
        kb_cfs,
        kb_move,
        pct(-kb_gain),
        kb_local
    );
    let full_gain = r.improvement(&kbuild_full("smove"), "cfs")?;
    let sim_value = format!("{sim_value}; whole kbuild: S_move {}", pct(full_gain));
    let ok = perl_local > ON_PAR_PCT && perl_move > ON_PAR_PCT && kb_gain > ON_PAR_PCT;
    let move_acted = armed(r, &perl.with_policy("smove")) != 0.0 || armed(r, &kb.with_policy("smove")) != 0.0;
    let g_move = |dir: bool, mag: bool| if move_acted { Grade::of(dir, mag) } else { Grade::NotTested };
    let grade = Grade::worst([
        Grade::of(perl_local > ON_PAR_PCT, near(perl_local, PERL_SLOCAL_PCT)),
        g_move(perl_move > ON_PAR_PCT, near(perl_move, PERL_SMOVE_PCT)),
        g_move(kb_gain > ON_PAR_PCT, near(kb_gain, kb_paper)),
    ]);
    let mut diag = Vec::new();
    for p in POLICIES {
        for (n, c) in [("perl", &perl), ("kbuild pre.", &kb)] {
            let c = c.with_policy(p);
            diag.push(format!(
                "{n} {p}: {:.0} % busy below {base} MHz, {:.0} inversions",
                r.fraction_below(&c, base)? * 100.0,
                r.inversions(&c)?
            ));
        }
    }
    let armed = r.policy_stat(&perl.with_policy("smove"), &["armed"]).ok();
    let high = r.policy_stat(&perl.with_policy("smove"), &["high_freq"]).ok();
    let mut note = format!(
        "Check: both strategies improve perl start-up by more than {ON_PAR_PCT} % and S_move shortens the kernel build's phase before the parallel one by more than {ON_PAR_PCT} % (direction: {}); \
         each gain within a factor of 1.5 of the paper's (S_local perl {}, S_move perl {}, S_move kbuild phase before the parallel one {}). {}.",
        yn(ok),
        yn(near(perl_local, PERL_SLOCAL_PCT)),
        yn(near(perl_move, PERL_SMOVE_PCT)),
        yn(near(kb_gain, kb_paper)),
        diag.join("; ")
    );
    note.push_str(&format!(
        " The phase is sized from the paper's figures under CFS (docs/model.md, Workloads: kbuild): 4 s of fork/wait steps at \
         1.2 GHz and a 0.5 s burst of parallel compile jobs between them (Figures 1 and 7), so its CFS time ({kb_cfs:.2} s) checks \
         that sizing, not a result; S_move's time is the model's own: its gain is {:.2}x the paper's {kb_paper} % (the bound is {}x).",
        kb_gain / kb_paper,
        crate::MAGNITUDE_FACTOR
    ));
    if kb_gain > kb_paper && !near(kb_gain, kb_paper) {
        note.push_str(
            " S_move gains more on the kernel build than in the paper: it keeps each fork/wait step on the waker's core, which runs \
             at the E7's single-core turbo (3.0 GHz) against CFS's 1.2 GHz, while the burst takes as long under both. The paper's \
             1.5x over the phase implies that much of the real chains' time does not scale with the frequency (file system, page \
             faults, memory; the model's stall share is 0.1) or that their core does not stay at turbo; no source measures either.",
        );
    }
    if !move_acted {
        note.push_str(" S_move armed no timer on perl or the kernel build: its parts are not tested.");
    }
    if let (Some(a), Some(h)) = (armed, high) {
        note.push_str(&format!(" S_move on perl: {a:.0} timers armed, {h:.0} placements left to CFS because the chosen CPU's last tick saw a high frequency."));
    }
    if !ok {
        note.push_str(" Not reproduced in full: the simulator shows the improvements above instead; compare the busy time below the nominal frequency under CFS and under the strategies: a gain needs CFS's picks to be slow cores.");
    }
    Ok(Outcome::new(sim_value, grade, note))
}
