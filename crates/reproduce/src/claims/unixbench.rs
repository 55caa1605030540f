// SPDX-License-Identifier: GPL-2.0-only
//! Claim 9. Haiku's scheduler post, the UnixBench results on the Core 2 Duo:
//! against Haiku's old scheduler, the new one (low latency mode) loses on
//! pipe-based context switching and shell scripts and gains on file copy.

use super::{p99_us, pct, Setup, CORE2, ON_PAR_PCT};
use crate::{near, Band, Cell, Claim, Grade, Outcome, Param, Results, Unknown};

/// Haiku's scheduler before the merge (docs/model.md, Haiku's old
/// scheduler).
const HAIKU_OLD: &str = "haiku-old";
/// The post ran the Core 2 Duo at a fixed frequency.
const GOVERNOR: &str = "performance";
/// The post's runs: each test alone and in two copies.
const COPIES: [u32; 2] = [1, 2];

/// Test `t` in `copies` copies under the old scheduler; the new one's cell
/// is this one with `HAIKU_NEW`.
fn old_cell(t: &HaikuTest, copies: u32) -> Cell {
    Cell::new(CORE2, &unixbench(t.test, copies), HAIKU_OLD, GOVERNOR)
}

pub(super) fn claim(s: &Setup) -> Claim {
    let mut cells = Vec::new();
    for t in HAIKU_TESTS {
        for copies in COPIES {
            cells.push(old_cell(t, copies));
            cells.push(old_cell(t, copies).with_policy(HAIKU_NEW));
        }
    }
    Claim {
        id: 9,
        source: "Haiku's scheduler post, the UnixBench results (Intel Core 2 Duo)",
        claim: "Against Haiku's old scheduler, the new one (low latency mode) loses on pipe-based context switching and shell scripts and gains on file copy.",
        paper_value: paper_value(),
        needs: vec![HAIKU_OLD.into(), HAIKU_NEW.into()],
        runs: s.runs(&cells, |_| false),
        check,
        bands: bands(),
    }
}

/// The post's changes, one list per number of copies: the first names
/// every test, the others give the numbers in the same order.
fn paper_value() -> String {
    let short = |i: usize, t: &HaikuTest| match (i, t.name.rsplit_once(' ')) {
        // Consecutive tests of one kind name the kind once.
        (i, Some((kind, n))) if i > 0 && HAIKU_TESTS[i - 1].name.starts_with(kind) => n.to_string(),
        _ => t.name.to_string(),
    };
    COPIES
        .iter()
        .enumerate()
        .map(|(k, copies)| {
            let changes: Vec<String> = HAIKU_TESTS
                .iter()
                .enumerate()
                .map(|(i, t)| if k == 0 { format!("{} {:+.1} %", short(i, t), t.paper[k]) } else { format!("{:+.1} %", t.paper[k]) })
                .collect();
            format!("{copies} thread{}: {}", if *copies == 1 { "" } else { "s" }, changes.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The new scheduler of Haiku's scheduler post: the sched_ext program in
/// low latency mode, the mode the post ran.
pub const HAIKU_NEW: &str = "scx:haiku-low-latency";

/// A UnixBench test of Haiku's scheduler post, with the post's change from
/// the old scheduler to the new one on the Core 2 Duo, in percent, with 1
/// and 2 copies running.
pub struct HaikuTest {
    /// The `unixbench` workload's test number.
    pub test: u32,
    pub name: &'static str,
    pub paper: [f64; 2],
}

pub const HAIKU_TESTS: &[HaikuTest] = &[
    HaikuTest { test: 2, name: "context switching", paper: [-24.7, -15.7] },
    HaikuTest { test: 3, name: "shell scripts 1", paper: [-10.0, -24.5] },
    HaikuTest { test: 4, name: "shell scripts 8", paper: [-31.6, -35.9] },
    HaikuTest { test: 5, name: "file copy 1024", paper: [12.4, 2.6] },
    HaikuTest { test: 6, name: "file copy 256", paper: [14.1, 1.7] },
    HaikuTest { test: 7, name: "file copy 4096", paper: [10.0, 638.9] },
];

/// The `unixbench` workload running `test` in `copies` copies.
pub fn unixbench(test: u32, copies: u32) -> String {
    if copies == 1 {
        format!("unixbench:test={test}")
    } else {
        format!("unixbench:test={test},copies={copies}")
    }
}

fn check(r: &Results, _s: &Setup) -> Result<Outcome, String> {
    let mut grades = Vec::new();
    let mut columns = Vec::new();
    let mut detail = Vec::new();
    // The worst grade among context switching and shell scripts; whether a
    // file copy gain of the post came out on par.
    let (mut ctx, mut shell, mut copy_flat) = (Grade::Reproduced, Grade::Reproduced, false);
    for (k, copies) in COPIES.into_iter().enumerate() {
        let mut parts = Vec::new();
        for t in HAIKU_TESTS {
            let old = old_cell(t, copies);
            let new = old.with_policy(HAIKU_NEW);
            let d = r.improvement(&new, HAIKU_OLD)?;
            let p = t.paper[k];
            // A change within the papers' on-par band is the post's own
            // "no difference"; beyond it, the sign and a magnitude within a
            // factor of 1.5.
            let grade = if p.abs() <= ON_PAR_PCT {
                Grade::of(d.abs() <= ON_PAR_PCT, true)
            } else {
                Grade::of(d * p.signum() > ON_PAR_PCT, near(d, p))
            };
            match t.test {
                2 => ctx = ctx.min(grade),
                3 | 4 => shell = shell.min(grade),
                _ => copy_flat |= p > ON_PAR_PCT && d.abs() <= ON_PAR_PCT,
            }
            grades.push(grade);
            parts.push(format!("{} {}", t.name, pct(d)));
            detail.push(format!(
                "{} x{copies}: {:.0} -> {:.0} ops/s, wake-up latency p99 {:.1} -> {:.1} us",
                t.name,
                r.metric(&old)?,
                r.metric(&new)?,
                r.mean_of(&old, p99_us)?,
                r.mean_of(&new, p99_us)?,
            ));
        }
        columns.push(format!("{} thread{}: {}", copies, if copies == 1 { "" } else { "s" }, parts.join(", ")));
    }
    let mut note = format!(
        "Runs: haiku-old (Haiku's scheduler before the merge, docs/model.md, Haiku's old scheduler) against {HAIKU_NEW} on the \
         Core 2 Duo model at a fixed 3.0 GHz, each test alone (1 thread) and in 2 copies (2 threads). Check, per test: a \
         change of the post beyond +-{ON_PAR_PCT} % has its sign beyond +-{ON_PAR_PCT} % and a magnitude within a factor \
         of 1.5; one within the band (file copy 1024 and 256 with 2 threads) stays within it. The grade is the worst part's. {}.",
        detail.join("; ")
    );
    if ctx == Grade::NotReproduced {
        note.push_str(
            " Context switching does not lose where the test runs alone or in pairs above: in the model the new \
             scheduler places the pipe pair as the old one does (the throughputs above; at one copy the same to the \
             operation), so the post's loss, which it ties to the new scheduler keeping threads on their cores, does \
             not show.",
        );
    }
    if ctx == Grade::DirectionOnly {
        note.push_str(
            " Context switching loses for a reason of the model's: under the old scheduler the writer blocks on its \
             read at once and its own CPU takes the woken reader from the shared queue before the halted CPU it \
             notified is up, so each pair shares one CPU; the new one keeps each thread on its core (cache \
             affinity), and every hand-off waits for the other core to leave its halt. The size of the loss follows \
             the assumed 1 us halt exit against the assumed 2 us pipe operation, not the post's.",
        );
    }
    if shell <= Grade::DirectionOnly {
        note.push_str(
            " Where shell scripts lose less than in the post: with a CPU free (one script at a time), the new \
             scheduler's placement of a forked child on the idle core costs one halt exit (1 us) against \
             milliseconds of script; with the machine full (8 or 16 scripts) both keep both CPUs busy. The post ties \
             these losses to the new scheduler's cost with short-lived threads (its bug #10454); the simulator charges \
             the kernel's operations alike under both (docs/model.md, The kernel's own time) and the scheduler's own \
             code only by the CPUs a placement looks at, which on two CPUs is little.",
        );
    }
    if copy_flat {
        note.push_str(
            " The file copy gains do not reproduce: the post credits them to cache affinity (file copy uses the cache \
             most) and the whole kernel changed between the two revisions (\"significant changes in locking\"); the \
             simulator models no kernel locks and caches only as a refill after a migration, and a copying process \
             with a CPU to itself runs the same under either scheduler.",
        );
    }
    Ok(Outcome::new(columns.join("; "), Grade::worst(grades), note))
}

/// The cost of a pipe operation on the post's Core 2 Duo: what the size of
/// context switching's change hangs on (the note above).
const PIPE_OP: Unknown = Unknown::new(
    "a pipe write or read on the post's Core 2 Duo under Haiku",
    Param::Workload { workload: "unixbench", key: "pipe_us" },
    "us",
    2.0,
    &[1.0, 2.0, 20.0],
    "the post gives UnixBench's scores, not the cost of one pipe operation, and no source measures Haiku's pipes on \
     that machine; the model's 2 us is an ASSUMPTION and the range a wide one, from about the halt's exit (1 us) to \
     ten times the model's.",
);

fn bands() -> Vec<Band> {
    let ctx = &HAIKU_TESTS[0];
    let band = Band::new(
        &[PIPE_OP],
        "context switching, 1 thread, new scheduler against the old, %",
        (ctx.paper[0], ctx.paper[0]),
        |_| {
            let old = old_cell(&HAIKU_TESTS[0], COPIES[0]);
            vec![old.clone(), old.with_policy(HAIKU_NEW)]
        },
        |r, _| r.improvement(&old_cell(&HAIKU_TESTS[0], COPIES[0]).with_policy(HAIKU_NEW), HAIKU_OLD),
    );
    vec![band.missing(
        "what the post ties the loss to, the new scheduler keeping the pipe's two threads on cores of their own: alone \
         on the machine, both schedulers place the pair alike in the model",
    )]
}
