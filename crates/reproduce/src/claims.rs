// SPDX-License-Identifier: GPL-2.0-only
//! The claims, each with the paper's number, its runs and its check. The
//! thresholds are the papers' own: both treat differences within +-5 % as
//! "on par" (Fewer Cores, More Hertz, section 4.1; Nest, section 5), so a
//! claimed speedup or slowdown has the paper's direction when the simulated
//! one exceeds 5 % in the claimed direction, unless a claim states another
//! bound; it is reproduced when its magnitude is also the paper's (inside
//! the stated range, or within a factor of 1.5 of a single figure: see
//! `GRADING`). Magnitudes are reported, never tuned for.

use crate::{near, Cell, Claim, Grade, Outcome, Results, RunSpec};

pub const E7: &str = "xeon-e7-8870v4";
pub const G6130: &str = "xeon-gold-6130-2s";
pub const G5218: &str = "xeon-gold-5218-2s";
/// The Core 2 Duo of Haiku's scheduler post (docs/model.md, Machines and
/// turbo tables: the exact model is an ASSUMPTION).
pub const CORE2: &str = "core2duo-e8400";

/// The papers' "on par" band, in percent.
pub const ON_PAR_PCT: f64 = 5.0;

/// Workload sizes, machines and seeds of a full or a quick reproduction.
#[derive(Clone, Debug)]
pub struct Setup {
    pub quick: bool,
    pub seeds: Vec<u64>,
    /// Machines of the Nest configure comparison (Nest, section 5.2, Figure
    /// 5).
    pub nest_machines: Vec<&'static str>,
    /// The 2-socket machines of the Nest NAS and h2 results.
    pub two_socket: Vec<&'static str>,
    pub configure: String,
    /// The kernel build's fork/wait chains alone: kbuild's steps before its
    /// parallel phase, without the burst of parallel work between them
    /// (Fewer Cores, More Hertz, section 2).
    pub kbuild_seq: String,
    /// The kernel build's phase before the long parallel one, whose length
    /// the paper gives: the chains and the burst between them (Fewer Cores,
    /// More Hertz, section 4.4, Figure 7).
    pub kbuild_pre: String,
    pub perl: String,
    pub mkl: String,
    /// The NAS barrier kernels (BT, CG, MG, UA and the like), class C.
    pub nas: String,
    /// NAS LU's wavefront, class C (Nest, section 5.4).
    pub nas_lu: String,
    /// NAS LU, class B: nas_lu.B-160 of Fewer Cores, More Hertz (section
    /// 4.1).
    pub nas_lu_b: String,
    /// hackbench on the E7 (Fewer Cores, More Hertz, section 4.4).
    pub hackbench_fcmh: String,
    /// hackbench on the 5218 (Nest, section 5.6).
    pub hackbench_nest: String,
    pub h2: String,
    /// (threads, schbench spec) for Fewer Cores, More Hertz, Table 2.
    pub schbench: Vec<(u32, String)>,
}

fn schbench(threads: u32, runtime_ms: u32) -> (u32, String) {
    // Two message threads, each with half of the workers.
    (threads, format!("schbench:message=2,workers={},runtime_ms={runtime_ms}", threads / 2))
}

impl Setup {
    /// Simulated runs are cheap (well under a second each for most), so the
    /// quick setup keeps the workloads' default sizes and every machine, and
    /// cuts the seeds to three and the largest workloads (hackbench, schbench's
    /// thread counts) down. Not to one: a comparison of two policies on one
    /// seed can hinge on a single placement (S_move on configure on the 6130
    /// arms 314 timers and gains 9.4 % with seed 1, and 0 or 1 timer and
    /// -0.3 to +2.9 % with seeds 2 to 6).
    pub fn new(quick: bool) -> Setup {
        let common = Setup {
            quick,
            seeds: vec![1, 2, 3],
            nest_machines: vec![G6130, G5218, E7],
            two_socket: vec![G6130, G5218],
            configure: "configure".into(),
            kbuild_seq: "kbuild:burst=0,files=0,seq_post=0".into(),
            kbuild_pre: "kbuild:files=0,seq_post=0".into(),
            perl: "perl-startup".into(),
            mkl: "mkl-dnn".into(),
            nas: "nas".into(),
            nas_lu: "nas-lu".into(),
            // Class B's 102^3 grid: 100 planes.
            nas_lu_b: "nas-lu:planes=100".into(),
            hackbench_fcmh: "hackbench:groups=25,loops=100".into(),
            hackbench_nest: "hackbench:groups=25,loops=100".into(),
            h2: "h2".into(),
            schbench: [64, 256, 1024].iter().map(|&t| schbench(t, 1000)).collect(),
        };
        if quick {
            common
        } else {
            Setup {
                // Ten runs, as both papers (Fewer Cores, More Hertz,
                // section 4; Nest, section 5.1).
                seeds: (1..=10).collect(),
                // hackbench-10000 of Fewer Cores, More Hertz (section 4.4):
                // 10 000 threads, 250 groups of 40; the paper gives no loop
                // count, so it keeps 40 loops.
                hackbench_fcmh: "hackbench:groups=250,loops=40".into(),
                // hackbench -g 100 -l 10000 of Nest (section 5.6): the
                // paper's size (about 3.5 minutes of wall time a run).
                hackbench_nest: "hackbench:groups=100,loops=10000".into(),
                // 30 s, as Table 2's runs (schbench's default).
                schbench: [64, 128, 192, 256, 512, 768, 1024].iter().map(|&t| schbench(t, 30_000)).collect(),
                ..common
            }
        }
    }

    /// The runs of `cells`; beside each run of a paper's model (slocal,
    /// smove, nest with their defaults), the same run of the sched_ext
    /// program's policy of that name (scx:NAME), shown in the report but not
    /// used by the checks.
    fn runs(&self, cells: &[Cell], trace: impl Fn(&Cell) -> bool) -> Vec<RunSpec> {
        let mut v = Vec::new();
        let mut scx = Vec::new();
        for c in cells {
            for &seed in &self.seeds {
                v.push(RunSpec { cell: c.clone(), seed, trace: seed == self.seeds[0] && trace(c) });
            }
            if SCX_TWINS.contains(&c.policy.as_str()) {
                let twin = c.with_policy(&format!("scx:{}", c.policy));
                if !cells.contains(&twin) && !scx.contains(&twin) {
                    scx.push(twin);
                }
            }
        }
        for c in scx {
            for &seed in &self.seeds {
                v.push(RunSpec { cell: c.clone(), seed, trace: false });
            }
        }
        v
    }
}

/// S_move with the other choice of a CPU's sample before its first tick in
/// the run (docs/model.md, S_move as patched): claims 4 and 8 report what
/// they would give with it.
pub const SMOVE_UNSAMPLED_LOW: &str = "smove:unsampled=low";
const TIMERS_UNSAMPLED_LOW: &str = "smove:timers_only=on,unsampled=low";

/// The papers' policies that the sched_ext program implements too.
pub const SCX_TWINS: &[&str] = &["slocal", "smove", "nest"];

pub fn short_machine(m: &str) -> &str {
    match m {
        E7 => "E7-8870v4",
        G6130 => "6130-2s",
        G5218 => "5218-2s",
        CORE2 => "Core 2 Duo",
        other => other,
    }
}

pub fn short_workload(w: &str) -> &str {
    if w.starts_with("kbuild:burst=0,files=0") {
        "kbuild seq."
    } else if w.starts_with("kbuild:files=0") {
        "kbuild pre."
    } else {
        w.split(':').next().unwrap_or(w)
    }
}

/// The kernel build of Fewer Cores Figures 1 and 7 (make -j with one job per
/// CPU), drawn as frequency over time.
pub const KBUILD_FULL: &str = "kbuild";

/// The runs drawn as Fewer Cores Figures 1 and 7: the whole kernel build on
/// the E7 under powersave, CFS and S_move.
pub fn is_freq_figure(c: &Cell) -> bool {
    c.machine == E7 && c.workload == KBUILD_FULL && c.governor == "powersave" && (c.policy == "cfs" || c.policy == "smove")
}

/// The runs drawn as Nest Figure 3: configure on the 5218 under schedutil.
pub fn is_underload_figure(c: &Cell) -> bool {
    c.machine == G5218 && c.workload.starts_with("configure") && c.governor == "schedutil" && (c.policy == "cfs" || c.policy == "nest")
}

fn pct(x: f64) -> String {
    format!("{x:+.1} %")
}

/// Every claim, for this setup.
pub fn all_claims(s: &Setup) -> Vec<Claim> {
    let ps = "powersave";
    let su = "schedutil";
    let mut v = Vec::new();

    // 1. Fewer Cores, More Hertz, section 2 (Figure 1): under CFS the sequential
    // fork/wait phases of the kernel build run at the lowest frequency.
    let c1 = vec![
        Cell::new(E7, &s.kbuild_seq, "cfs", ps),
        Cell::new(E7, &s.configure, "cfs", ps),
        Cell::new(E7, KBUILD_FULL, "cfs", ps),
    ];
    v.push(Claim {
        id: 1,
        source: "Fewer Cores, More Hertz, section 2, Figure 1",
        claim: "Under CFS, fork/wait chains run mostly at low frequency on the Xeon E7-8870 v4 (powersave).",
        paper_value: "the mostly sequential phases use all cores at the lowest frequency, 1.2 GHz (nominal 2.1 GHz)",
        needs: vec!["cfs".into()],
        runs: s.runs(&c1, is_freq_figure),
        check: check1,
    });

    // 2. Fewer Cores, More Hertz, sections 4.1 and 4.4.
    let mut c2 = Vec::new();
    for p in ["cfs", "slocal", "smove"] {
        c2.push(Cell::new(E7, &s.perl, p, ps));
        c2.push(Cell::new(E7, &s.kbuild_pre, p, ps));
    }
    c2.push(Cell::new(E7, KBUILD_FULL, "cfs", ps));
    c2.push(Cell::new(E7, KBUILD_FULL, "smove", ps));
    v.push(Claim {
        id: 2,
        source: "Fewer Cores, More Hertz, sections 4.1 and 4.4, Figure 7",
        claim: "S_move and S_local speed up fork/wait-heavy work: perl start-up and the kernel build's mostly sequential phase before the long parallel one.",
        paper_value: "perl-benchmark startup: S_local +58 %, S_move +56 %; kbuild phase before the long parallel one 4.4 s (CFS) -> 2.9 s (S_move), -34 %",
        needs: vec!["slocal".into(), "smove".into()],
        runs: s.runs(&c2, is_freq_figure),
        check: check2,
    });

    // 3. Fewer Cores, More Hertz, section 4.1 (worst cases) and 4.4.
    let mut c3 = Vec::new();
    for w in [&s.mkl, &s.nas_lu_b, &s.hackbench_fcmh] {
        for p in ["cfs", "slocal", "smove"] {
            c3.push(Cell::new(E7, w, p, ps));
        }
    }
    v.push(Claim {
        id: 3,
        source: "Fewer Cores, More Hertz, sections 4.1 and 4.4",
        claim: "S_local's worst cases are mkl-dnn and NAS LU; S_move's worst case is hackbench; S_move is far better than S_local in the worst case.",
        paper_value: "S_local: mkl-dnn -80 %, nas_lu -17 %; S_move: hackbench -8.4 %",
        needs: vec!["slocal".into(), "smove".into()],
        runs: s.runs(&c3, |_| false),
        check: check3,
    });

    // 4. Nest, section 5.2, Figures 3, 4, 5 and 7.
    let mut c4 = Vec::new();
    for m in &s.nest_machines {
        for p in ["cfs", "nest", "smove", SMOVE_UNSAMPLED_LOW] {
            c4.push(Cell::new(m, &s.configure, p, su));
        }
    }
    v.push(Claim {
        id: 4,
        source: "Nest, section 5.2, Figures 3, 4, 5 and 7",
        claim: "Nest runs configure faster than CFS-schedutil on the 6130, 5218 and E7 models, almost eliminates underload and uses less CPU energy; S_move gains under 5 % on the 6130 and 5218.",
        paper_value: "Nest +10 % to +37 % (E7 up to 37 %); underload almost eliminated; energy up to -19 %; S_move under 5 % on 6130/5218 (9 % on LLVM)",
        needs: vec!["nest".into(), "smove".into(), SMOVE_UNSAMPLED_LOW.into()],
        runs: s.runs(&c4, is_underload_figure),
        check: check4,
    });

    // 5. Nest, section 5.4, Figure 12.
    let mut c5 = Vec::new();
    for m in &s.two_socket {
        for w in [&s.nas, &s.nas_lu] {
            for p in ["cfs", "nest"] {
                c5.push(Cell::new(m, w, p, su));
            }
        }
    }
    v.push(Claim {
        id: 5,
        source: "Nest, section 5.4, Figure 12",
        claim: "Nest gives the same performance as CFS on NAS on the 2-socket machines.",
        paper_value: "within +-5 % of CFS-schedutil on the 2-socket 6130 and 5218",
        needs: vec!["nest".into()],
        runs: s.runs(&c5, |_| false),
        check: check5,
    });

    // 6. Nest, section 5.6.
    let c6 = vec![Cell::new(G5218, &s.hackbench_nest, "cfs", su), Cell::new(G5218, &s.hackbench_nest, "nest", su)];
    v.push(Claim {
        id: 6,
        source: "Nest, section 5.6",
        claim: "Nest slows hackbench down a lot on the 5218.",
        paper_value: "hackbench -g 100 -l 10000: 22.5 s (CFS-schedutil) -> 76 s or more (Nest-schedutil), 3.4x",
        needs: vec!["nest".into()],
        runs: s.runs(&c6, |_| false),
        check: check6,
    });

    // 7. Nest, sections 5.2 and 5.3 (ablations).
    let mut c7 = Vec::new();
    for m in &s.nest_machines {
        c7.push(Cell::new(m, &s.configure, "nest", su));
        c7.push(Cell::new(m, &s.configure, "nest:reserve=off", su));
    }
    for m in &s.two_socket {
        c7.push(Cell::new(m, &s.h2, "nest", su));
        c7.push(Cell::new(m, &s.h2, "nest:spin=off", su));
    }
    v.push(Claim {
        id: 7,
        source: "Nest, sections 5.2 and 5.3 (impact of Nest features)",
        claim: "Without the reserve nest configure is slower, most on the E7; without spinning h2 is 10-21 % slower on the 2-socket machines.",
        paper_value: "no reserve: configure about -5 % (6130, 5218), up to -16 % (E7); no spinning: h2 -10 % to -21 % (2-socket 6130, 5218)",
        needs: vec!["nest".into(), "nest:reserve=off".into(), "nest:spin=off".into()],
        runs: s.runs(&c7, |_| false),
        check: check7,
    });

    // 8. Fewer Cores, More Hertz, section 4.5, Table 2.
    let mut c8: Vec<Cell> = s.schbench.iter().map(|(_, w)| Cell::new(E7, w, "smove:timers_only=on", ps)).collect();
    c8.extend(s.schbench.iter().map(|(_, w)| Cell::new(E7, w, TIMERS_UNSAMPLED_LOW, ps)));
    v.push(Claim {
        id: 8,
        source: "Fewer Cores, More Hertz, section 4.5, Table 2",
        claim: "With S_move's timers armed (no migration), schbench's timers triggered grow with the number of threads and fall once the machine is overloaded.",
        paper_value: "64: 2971, 128: 13910, 192: 63965, 256: 93001, then 512: 512, 768: 959, 1024: 1290 timers (160 hardware threads)",
        needs: vec!["smove:timers_only=on".into(), TIMERS_UNSAMPLED_LOW.into()],
        runs: s.runs(&c8, |_| false),
        check: check8,
    });

    // 9. Haiku's scheduler post, the UnixBench results on the Core 2 Duo.
    let mut c9 = Vec::new();
    for t in HAIKU_TESTS {
        for copies in [1, 2] {
            for p in ["haiku-old", HAIKU_NEW] {
                c9.push(Cell::new(CORE2, &unixbench(t.test, copies), p, "performance"));
            }
        }
    }
    v.push(Claim {
        id: 9,
        source: "Haiku's scheduler post, the UnixBench results (Intel Core 2 Duo)",
        claim: "Against Haiku's old scheduler, the new one (low latency mode) loses on pipe-based context switching and shell scripts and gains on file copy.",
        paper_value: "1 thread: context switching -24.7 %, shell scripts 1 -10.0 %, 8 -31.6 %, file copy 1024 +12.4 %, 256 +14.1 %, 4096 +10.0 %; \
                      2 threads: -15.7 %, -24.5 %, -35.9 %, +2.6 %, +1.7 %, +638.9 %",
        needs: vec!["haiku-old".into(), HAIKU_NEW.into()],
        runs: s.runs(&c9, |_| false),
        check: check9,
    });
    v
}

fn check1(r: &Results, s: &Setup) -> Result<Outcome, String> {
    let (min, base) = crate::machine_freqs(E7)?;
    let mut parts = Vec::new();
    let mut ok = true;
    let mut mostly_min = true;
    let mut notes = Vec::new();
    for (name, w) in [("kbuild sequential phase", &s.kbuild_seq), ("configure", &s.configure)] {
        let c = Cell::new(E7, w, "cfs", "powersave");
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
             and more than half at the minimum frequency, the paper's 1.2 GHz, in both (magnitude: {}). {}.",
            yn(mostly_min),
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

/// Timers S_move armed in the runs of `c` (NaN if it does not say).
fn armed(r: &Results, c: &Cell) -> f64 {
    r.policy_stat(c, &["armed"]).unwrap_or(f64::NAN)
}

/// Whether two cells' runs made the same decisions, so that comparing them
/// tests nothing: on every seed, either the same run (completion time to the
/// nanosecond, energy to the last bit, underload), or one whose migrations
/// differ by at most one in twenty placements and whose completion time by
/// at most 1 % (the policies then placed nearly every task where the other did;
/// what differs is the cost of their searches, docs/model.md, The kernel's
/// own time).
fn identical_runs(r: &Results, a: &Cell, b: &Cell) -> bool {
    let key = |x: &warmcore_sim::RunReport| (x.makespan_ns, x.energy_j.to_bits(), x.underload_per_s.map(f64::to_bits));
    let same = |x: &warmcore_sim::RunReport, y: &warmcore_sim::RunReport| {
        let placements = x.placements.max(y.placements) as f64;
        let (tx, ty) = (x.makespan_ns as f64, y.makespan_ns as f64);
        key(x) == key(y)
            || (x.migrations.abs_diff(y.migrations) as f64 <= 0.05 * placements && (tx - ty).abs() <= 0.01 * tx.max(ty))
    };
    match (r.reports(a), r.reports(b)) {
        (Ok(x), Ok(y)) => x.len() == y.len() && x.iter().zip(&y).all(|(x, y)| same(x, y)),
        _ => false,
    }
}

fn check2(r: &Results, s: &Setup) -> Result<Outcome, String> {
    let (_, base) = crate::machine_freqs(E7)?;
    let perl = Cell::new(E7, &s.perl, "cfs", "powersave");
    let kb = Cell::new(E7, &s.kbuild_pre, "cfs", "powersave");
    let perl_local = r.improvement(&perl.with_policy("slocal"), "cfs")?;
    let perl_move = r.improvement(&perl.with_policy("smove"), "cfs")?;
    let kb_cfs = r.seconds(&kb)?;
    let kb_move = r.seconds(&kb.with_policy("smove"))?;
    let kb_local = r.seconds(&kb.with_policy("slocal"))?;
    let kb_gain = (kb_cfs - kb_move) / kb_cfs * 100.0;
    let kb_paper = 34.0;
    let sim_value = format!(
        "perl-startup: S_local {}, S_move {}; kbuild phase before the parallel one {:.3} s (CFS) -> {:.3} s (S_move, {}), {:.3} s (S_local)",
        pct(perl_local),
        pct(perl_move),
        kb_cfs,
        kb_move,
        pct(-kb_gain),
        kb_local
    );
    let full = Cell::new(E7, KBUILD_FULL, "cfs", "powersave");
    let full_gain = r.improvement(&full.with_policy("smove"), "cfs")?;
    let sim_value = format!("{sim_value}; whole kbuild: S_move {}", pct(full_gain));
    let ok = perl_local > ON_PAR_PCT && perl_move > ON_PAR_PCT && kb_gain > ON_PAR_PCT;
    // The paper: +58 %, +56 %, -34 % (4.4 s -> 2.9 s).
    let move_acted = armed(r, &perl.with_policy("smove")) != 0.0 || armed(r, &kb.with_policy("smove")) != 0.0;
    let g_move = |dir: bool, mag: bool| if move_acted { Grade::of(dir, mag) } else { Grade::NotTested };
    let grade = Grade::worst([
        Grade::of(perl_local > ON_PAR_PCT, near(perl_local, 58.0)),
        g_move(perl_move > ON_PAR_PCT, near(perl_move, 56.0)),
        g_move(kb_gain > ON_PAR_PCT, near(kb_gain, kb_paper)),
    ]);
    let mut diag = Vec::new();
    for p in ["cfs", "slocal", "smove"] {
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
        yn(near(perl_local, 58.0)),
        yn(near(perl_move, 56.0)),
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

fn check3(r: &Results, s: &Setup) -> Result<Outcome, String> {
    let mut rows = Vec::new();
    let mut worst_local = f64::INFINITY;
    let mut worst_move = f64::INFINITY;
    let mut worst_move_w = "";
    let mut imp = std::collections::BTreeMap::new();
    for (name, w) in [("mkl-dnn", &s.mkl), ("nas_lu", &s.nas_lu_b), ("hackbench", &s.hackbench_fcmh)] {
        let c = Cell::new(E7, w, "cfs", "powersave");
        let l = r.improvement(&c.with_policy("slocal"), "cfs")?;
        let m = r.improvement(&c.with_policy("smove"), "cfs")?;
        rows.push(format!("{name}: S_local {}, S_move {}", pct(l), pct(m)));
        worst_local = worst_local.min(l);
        if m < worst_move {
            worst_move = m;
            worst_move_w = name;
        }
        imp.insert(name, (l, m));
    }
    let (mkl_l, _) = imp["mkl-dnn"];
    let (nas_l, _) = imp["nas_lu"];
    let a = mkl_l < -ON_PAR_PCT;
    let b = nas_l < -ON_PAR_PCT;
    let c = worst_move > worst_local;
    let d = worst_move_w == "hackbench";
    // The paper: S_local -80 % (mkl-dnn), -17 % (NAS LU); S_move's worst
    // -8.4 % (hackbench); "far better" has no figure.
    let grade = Grade::worst([
        Grade::of(a, near(mkl_l, -80.0)),
        Grade::of(b, near(nas_l, -17.0)),
        Grade::of(c, true),
        Grade::of(d, near(worst_move, -8.4)),
    ]);
    let sim_value = format!(
        "{}; worst case: S_local {}, S_move {} ({})",
        rows.join("; "),
        pct(worst_local),
        pct(worst_move),
        worst_move_w
    );
    let mut note = format!(
        "Check: S_local more than {ON_PAR_PCT} % worse on mkl-dnn ({}) and on NAS LU ({}), S_move's worst case better than S_local's ({}), \
         and S_move's worst case hackbench ({}); magnitudes within a factor of 1.5 of -80 % ({}), -17 % ({}) and -8.4 % ({}). ",
        yn(a),
        yn(b),
        yn(c),
        yn(d),
        yn(near(mkl_l, -80.0)),
        yn(near(nas_l, -17.0)),
        yn(near(worst_move, -8.4)),
    );
    let mkl = Cell::new(E7, &s.mkl, "cfs", "powersave");
    note.push_str(&format!(
        "mkl-dnn work-conservation violations: CFS {:.1} ms, S_local {:.1} ms, S_move {:.1} ms; overload/s CFS {:.1}, S_local {:.1}, S_move {:.1}.",
        r.mean_of(&mkl, |x| x.work_conservation_violation_ns as f64 / 1e6)?,
        r.mean_of(&mkl.with_policy("slocal"), |x| x.work_conservation_violation_ns as f64 / 1e6)?,
        r.mean_of(&mkl.with_policy("smove"), |x| x.work_conservation_violation_ns as f64 / 1e6)?,
        r.mean_of(&mkl, |x| x.overload_per_s.unwrap_or(0.0))?,
        r.mean_of(&mkl.with_policy("slocal"), |x| x.overload_per_s.unwrap_or(0.0))?,
        r.mean_of(&mkl.with_policy("smove"), |x| x.overload_per_s.unwrap_or(0.0))?,
    ));
    if !d {
        note.push_str(&format!(
            " S_move's worst case here is {worst_move_w} ({}), far beyond the paper's worst of 8.4 %: the deferred \
             migrations leave the barrier threads waiting (the work-conservation and overload figures above).",
            pct(worst_move)
        ));
    }
    // The paper's S_local losses: 80 % (mkl-dnn), 17 % (NAS LU).
    if mkl_l < -3.0 * 80.0 || nas_l < -3.0 * 17.0 {
        note.push_str(
            " The simulated losses are several times the paper's: S_local stacks the threads a barrier releases on the \
             waker's core again at every barrier (the overload and work-conservation figures above), and they wait there \
             for balancing. In the paper, daemons (systemd) that woke and blocked at once triggered the idle balancing \
             that spread them (Fewer Cores, More Hertz, section 4.4); the model runs such daemons (docs/model.md, \
             Background tasks), but the stacked CPU's own tick already kicks idle balancing about once per barrier, so the \
             daemons change little. What sets the loss is that wait against the length of a work item between barriers, \
             which no source gives (mkl-dnn's 100 us and NAS LU's blocks are ASSUMPTIONS).",
        );
    }
    Ok(Outcome::new(sim_value, grade, note))
}

fn check4(r: &Results, s: &Setup) -> Result<Outcome, String> {
    let mut parts = Vec::new();
    let mut fast = true;
    let mut under = true;
    let mut energy = true;
    let mut smove_small = true;
    let mut notes = Vec::new();
    let mut total_armed = 0.0;
    let mut grades = Vec::new();
    let mut idle_smove = Vec::new();
    let mut best_nest = f64::MIN;
    let mut best_energy = f64::MIN;
    for m in &s.nest_machines {
        let c = Cell::new(m, &s.configure, "cfs", "schedutil");
        let n = c.with_policy("nest");
        let sp = r.improvement(&n, "cfs")?;
        let sm = r.improvement(&c.with_policy("smove"), "cfs")?;
        let (uc, un) = (r.underload(&c)?, r.underload(&n)?);
        let (ec, en) = (r.energy(&c)?, r.energy(&n)?);
        let de = (ec - en) / ec * 100.0;
        parts.push(format!(
            "{}: Nest {}, underload {:.0} -> {:.0}/s, energy {}, S_move {}",
            short_machine(m),
            pct(sp),
            uc,
            un,
            pct(-de),
            pct(sm)
        ));
        fast &= sp > ON_PAR_PCT;
        // "almost eliminated": at most a quarter of CFS's underload.
        under &= un <= 0.25 * uc;
        energy &= en < ec;
        // The paper: +10 % to +37 %; energy up to -19 %.
        grades.push(Grade::of(sp > ON_PAR_PCT, (10.0..=37.0).contains(&sp)));
        grades.push(Grade::of(un <= 0.25 * uc, true));
        grades.push(Grade::of(en < ec, de <= 19.0));
        let armed = armed(r, &c.with_policy("smove"));
        if *m != E7 {
            smove_small &= sm < ON_PAR_PCT;
            // A policy that never acted ran CFS's placements: nothing to judge.
            if armed == 0.0 {
                grades.push(Grade::NotTested);
                idle_smove.push(short_machine(m));
            } else {
                grades.push(Grade::of(sm < ON_PAR_PCT, true));
            }
        }
        let (_, base) = crate::machine_freqs(m)?;
        total_armed += armed;
        best_nest = best_nest.max(sp);
        best_energy = best_energy.max(de);
        notes.push(format!(
            "{}: busy time below {base} MHz CFS {:.0} %, Nest {:.0} %; S_move armed {armed:.0} timers, {:.0} placements kept on CFS's CPU at high frequency",
            short_machine(m),
            r.fraction_below(&c, base)? * 100.0,
            r.fraction_below(&n, base)? * 100.0,
            r.policy_stat(&c.with_policy("smove"), &["high_freq"]).unwrap_or(f64::NAN),
        ));
    }
    let grade = Grade::worst(grades);
    let mut note = format!(
        "Checks: Nest more than {ON_PAR_PCT} % faster on every machine ({}), by +10 % to +37 % ({}); Nest underload at most a quarter of CFS's ({}); \
         Nest energy lower ({}), by at most 19 % ({}); S_move under {ON_PAR_PCT} % on the 6130/5218 ({}). {}.",
        yn(fast),
        yn(grades_ok_speed(r, s)?),
        yn(under),
        yn(energy),
        yn(best_energy <= 19.0),
        yn(smove_small),
        notes.join("; ")
    );
    if !idle_smove.is_empty() {
        note.push_str(&format!(
            " S_move armed no timer on the {}: it made CFS's decisions there, so \"S_move under {ON_PAR_PCT} %\" is not tested.",
            idle_smove.join(" and ")
        ));
    }
    let mut other = Vec::new();
    let mut hinges = false;
    for m in &s.nest_machines {
        let c = Cell::new(m, &s.configure, SMOVE_UNSAMPLED_LOW, "schedutil");
        let sm = r.improvement(&c, "cfs")?;
        other.push(format!("{} {} ({:.0} timers)", short_machine(m), pct(sm), armed(r, &c)));
        hinges |= *m != E7 && sm >= ON_PAR_PCT;
    }
    note.push_str(&format!(
        " With the other start sample (a CPU not yet ticked in the run counts as slow, smove:unsampled=low) S_move gives {}: \
         the S_move part {}.",
        other.join(", "),
        if hinges {
            "hinges on that choice, because configure's tasks are too short for most CPUs to tick: every fork lands on a CPU \
             whose only sample is the start one"
        } else {
            "does not hinge on that choice"
        }
    ));
    if total_armed == 0.0 {
        note.push_str(
            " S_move never armed a timer under schedutil, on any machine: no tick of a core CFS chose saw the minimum \
             frequency, the reason the paper gives for the 6130 and 5218 (section 5.2); the paper saw slightly higher \
             S_move gains on the E7, the model none.",
        );
    }
    // The paper: Nest up to 37 % faster, up to 19 % less CPU energy.
    if best_nest > 37.0 * 1.1 || best_energy > 19.0 * 1.1 {
        note.push_str(&format!(
            " Magnitudes: best Nest speedup {best_nest:.0} % (paper: up to 37 %), best energy saving {best_energy:.0} % \
             (paper: up to 19 %); the modelled configure is a pure fork/wait chain of short tasks, a best case for Nest."
        ));
    }
    Ok(Outcome::new(parts.join("; "), grade, note))
}

/// Nest's configure speedup inside the paper's +10 % to +37 % on every machine.
fn grades_ok_speed(r: &Results, s: &Setup) -> Result<bool, String> {
    let mut ok = true;
    for m in &s.nest_machines {
        let sp = r.improvement(&Cell::new(m, &s.configure, "nest", "schedutil"), "cfs")?;
        ok &= (10.0..=37.0).contains(&sp);
    }
    Ok(ok)
}

fn yn(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn check5(r: &Results, s: &Setup) -> Result<Outcome, String> {
    let mut parts = Vec::new();
    let mut ok = true;
    let mut grades = Vec::new();
    let mut same = Vec::new();
    let mut counts = Vec::new();
    // Figure 12 ran the barrier kernels and LU's wavefront alike.
    for m in &s.two_socket {
        for w in [&s.nas, &s.nas_lu] {
            let name = short_workload(w);
            let c = Cell::new(m, w, "cfs", "schedutil");
            let n = c.with_policy("nest");
            let sp = r.improvement(&n, "cfs")?;
            parts.push(format!("{} {name}: Nest {}", short_machine(m), pct(sp)));
            ok &= sp.abs() <= ON_PAR_PCT;
            if identical_runs(r, &c, &n) {
                grades.push(Grade::NotTested);
                same.push(format!("{} ({name})", short_machine(m)));
            } else {
                // "The same performance": the band is the claim's magnitude.
                grades.push(Grade::of(sp.abs() <= ON_PAR_PCT, true));
            }
            counts.push(format!(
                " {} {name}: migrations CFS {:.0}, Nest {:.0}; overload/s CFS {:.1}, Nest {:.1}.",
                short_machine(m),
                r.mean_of(&c, |x| x.migrations as f64)?,
                r.mean_of(&n, |x| x.migrations as f64)?,
                r.mean_of(&c, |x| x.overload_per_s.unwrap_or(0.0))?,
                r.mean_of(&n, |x| x.overload_per_s.unwrap_or(0.0))?,
            ));
        }
    }
    let mut note = format!(
        "Check: Nest within +-{ON_PAR_PCT} % of CFS on each 2-socket machine, for the barrier kernels (nas) and LU's wavefront (nas-lu) ({}).",
        yn(ok)
    );
    if !same.is_empty() {
        note.push_str(&format!(
            " On the {} Nest's runs make CFS's decisions (the migrations below differ by at most one in twenty placements, \
             the completion times by at most 1 %, what remains is the cost of Nest's longer searches): with one thread \
             per CPU every thread keeps a core of its own under either policy, so the model's NAS never reaches a \
             decision in which Nest and CFS differ, and the check is not tested there.",
            same.join(", ")
        ));
    }
    note.push_str(&counts.concat());
    Ok(Outcome::new(parts.join("; "), Grade::worst(grades), note))
}

fn check6(r: &Results, s: &Setup) -> Result<Outcome, String> {
    let c = Cell::new(G5218, &s.hackbench_nest, "cfs", "schedutil");
    let n = c.with_policy("nest");
    let (tc, tn) = (r.metric(&c)? / 1e9, r.metric(&n)? / 1e9);
    let ratio = tn / tc;
    // "a large slowdown": more than 20 %, the largest class of Nest's
    // Table 4 (Nest, section 5.5).
    let ok = ratio > 1.2;
    // The paper: 3.4x "or more": at least 3.4 / 1.5.
    let magnitude = ratio >= 3.4 / crate::MAGNITUDE_FACTOR;
    let grade = Grade::of(ok, magnitude);
    let sim_value = format!("{tc:.3} s (CFS) -> {tn:.3} s (Nest), {ratio:.2}x");
    let mut note = format!(
        "Check: Nest more than 20 % slower (the largest slowdown class of Nest's Table 4): {}; at least 3.4x / 1.5 = 2.27x (the paper's 3.4x or more): {}. ",
        yn(ok),
        yn(magnitude)
    );
    let per_placement = |x: &warmcore_sim::RunReport| x.placement_scans as f64 / x.placements.max(1) as f64;
    note.push_str(&format!(
        "The simulator charges the kernel's own time (fork, exec, wake-ups, context switches, cache refills after \
         migrations, and each placement by the CPUs it looks at: docs/model.md, The kernel's own time); CPUs looked at \
         per placement: CFS {:.1}, Nest {:.1}. ",
        r.mean_of(&c, per_placement)?,
        r.mean_of(&n, per_placement)?,
    ));
    if !magnitude {
        note.push_str(
            "The paper ties the slowdown to instruction-cache misses in Nest's longer core-selection code (30M with CFS, \
             49M to 319M with Nest); the model charges a placement by the CPUs it looks at, not by the length of its code, \
             and those misses at L3 latency come to seconds of CPU time, not the 53 s lost, so it stays short of the paper's factor.",
        );
        let moves = |x: &warmcore_sim::RunReport| x.migrations as f64;
        if r.mean_of(&n, moves)? < r.mean_of(&c, moves)? {
            note.push_str(" Nest also moves tasks less often than CFS, which saves it cache refills that CFS pays.");
        }
    }
    note.push_str(&format!(
        " Migrations CFS {:.0}, Nest {:.0}; wake-up latency p99 CFS {:.0} us, Nest {:.0} us.",
        r.mean_of(&c, |x| x.migrations as f64)?,
        r.mean_of(&n, |x| x.migrations as f64)?,
        r.mean_of(&c, p99_us)?,
        r.mean_of(&n, p99_us)?,
    ));
    Ok(Outcome::new(sim_value, grade, note))
}

fn p99_us(x: &warmcore_sim::RunReport) -> f64 {
    x.wakeup_latency_ns.as_ref().and_then(|v| v.get("p99")).and_then(|v| v.as_f64()).unwrap_or(0.0) / 1e3
}

fn check7(r: &Results, s: &Setup) -> Result<Outcome, String> {
    let mut parts = Vec::new();
    let mut reserve_ok = true;
    let mut spin_ok = true;
    let mut grades = Vec::new();
    for m in &s.nest_machines {
        let c = Cell::new(m, &s.configure, "nest:reserve=off", "schedutil");
        let d = r.improvement(&c, "nest")?;
        parts.push(format!("configure {} no reserve {}", short_machine(m), pct(d)));
        // "about 5 %": more than half of it.
        reserve_ok &= d < -ON_PAR_PCT / 2.0;
        // The paper: about -5 % (6130, 5218), up to -16 % (E7).
        let magnitude = if *m == E7 { d >= -16.0 } else { near(d, -5.0) };
        grades.push(Grade::of(d < -ON_PAR_PCT / 2.0, magnitude));
    }
    for m in &s.two_socket {
        let c = Cell::new(m, &s.h2, "nest:spin=off", "schedutil");
        let d = r.improvement(&c, "nest")?;
        parts.push(format!("h2 {} no spinning {}", short_machine(m), pct(d)));
        spin_ok &= d < -ON_PAR_PCT;
        // The paper: -10 % to -21 %.
        grades.push(Grade::of(d < -ON_PAR_PCT, (-21.0..=-10.0).contains(&d)));
    }
    let mut note = format!(
        "Checks: configure more than {} % slower without the reserve nest on every machine ({}), by 5 % within a factor of 1.5 \
         on the 6130 and 5218 and by at most 16 % on the E7; h2 more than {ON_PAR_PCT} % slower without spinning ({}), by 10 % to 21 %.",
        ON_PAR_PCT / 2.0,
        yn(reserve_ok),
        yn(spin_ok)
    );
    // The largest loss without the reserve nest on the 2-socket machines.
    let mut worst_reserve = 0.0f64;
    for m in &s.nest_machines {
        let (_, base) = crate::machine_freqs(m)?;
        let n = Cell::new(m, &s.configure, "nest", "schedutil");
        let o = n.with_policy("nest:reserve=off");
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
            r.mean_of(&n, p99_us)?,
            r.mean_of(&o, p99_us)?,
            r.fraction_below(&n, base)? * 100.0,
            r.fraction_below(&o, base)? * 100.0,
            r.mean_busy_mhz(&n)?,
            r.mean_busy_mhz(&o)?,
        ));
    }
    for m in &s.two_socket {
        let (_, base) = crate::machine_freqs(m)?;
        let n = Cell::new(m, &s.h2, "nest", "schedutil");
        let o = n.with_policy("nest:spin=off");
        note.push_str(&format!(
            " h2 {}: busy below {base} MHz Nest {:.0} %, without spinning {:.0} %; mean frequency of busy time {:.0} MHz and {:.0} MHz.",
            short_machine(m),
            r.fraction_below(&n, base)? * 100.0,
            r.fraction_below(&o, base)? * 100.0,
            r.mean_busy_mhz(&n)?,
            r.mean_busy_mhz(&o)?,
        ));
    }
    // The paper: about 5 % on the 2-socket machines.
    if worst_reserve < -5.0 && !near(worst_reserve, -5.0) {
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

const TIMER_KEYS: &[&str] = &["timers_triggered", "fired"];

fn check8(r: &Results, s: &Setup) -> Result<Outcome, String> {
    let mut counts = Vec::new();
    let mut detail = Vec::new();
    let mut moves = Vec::new();
    let (_, base) = crate::machine_freqs(E7)?;
    let run_s = s.schbench.first().map_or(Ok(f64::NAN), |(_, w)| schbench_run_s(w))?;
    for (t, w) in &s.schbench {
        let c = Cell::new(E7, w, "smove:timers_only=on", "powersave");
        counts.push((*t, r.policy_stat(&c, TIMER_KEYS)?, r.metric(&c)?));
        let considered = r.policy_stat(&c, &["considered"]).unwrap_or(f64::NAN);
        moves.push((*t, considered / run_s));
        let high = r.policy_stat(&c, &["high_freq"]).unwrap_or(f64::NAN);
        detail.push(format!(
            "{t} threads: {considered:.0} placements checked, {high:.0} found the chosen CPU fast at its last tick, {:.0} % of busy time below {base} MHz",
            r.fraction_below(&c, base)? * 100.0
        ));
    }
    let (peak_i, peak) = counts
        .iter()
        .enumerate()
        .map(|(i, x)| (i, x.1))
        .fold((0, f64::MIN), |a, b| if b.1 > a.1 { b } else { a });
    let first = counts[0].1;
    let last = counts[counts.len() - 1].1;
    // Growth up to the peak, and a fall after it to under half of it.
    let grows = peak_i > 0 && peak > first;
    let falls = peak_i + 1 < counts.len() && last < peak / 2.0;
    let ok = grows && falls;
    // The paper's counts come from 30 s runs, the model's from 30 s (full)
    // or 1 s (quick): the magnitude compared is the shape, each count relative to the
    // count at the paper's peak among the thread counts run.
    let paper: Vec<f64> = counts.iter().map(|(t, _, _)| paper_timers(*t)).collect();
    let magnitude = match paper.iter().copied().enumerate().fold(None, |b: Option<(usize, f64)>, (i, x)| {
        if x.is_nan() || b.is_some_and(|b| b.1 >= x) {
            b
        } else {
            Some((i, x))
        }
    }) {
        Some((pi, pp)) if counts[pi].1 > 0.0 => {
            counts.iter().zip(&paper).all(|((_, n, _), p)| p.is_nan() || near(n / counts[pi].1, p / pp))
        }
        _ => false,
    };
    let grade = if counts.iter().all(|(_, n, _)| *n == 0.0) { Grade::NotTested } else { Grade::of(ok, magnitude) };
    let sim_value = counts
        .iter()
        .map(|(t, n, lat)| format!("{t}: {n:.0} timers (p99 {lat:.0} us)"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut note = format!(
        "Check: the count grows from the smallest thread count to its peak ({}) and falls below half the peak at the largest ({}); peak at {} threads; \
         each count relative to the count at the paper's peak within a factor of 1.5 of the paper's ratio ({}). \
         The simulated schbench runs {run_s} s (schbench: 30 s), so counts are smaller than the paper's. {}.",
        yn(grows),
        yn(falls),
        counts[peak_i].0,
        yn(magnitude),
        detail.join("; ")
    );
    note.push_str(&moves_against_timers(&moves));
    note.push_str(&latencies_against_paper(&counts));
    // Timers close to the number of threads: the workers' forks, when the
    // CPUs have not ticked yet (no sample counts as the minimum frequency).
    if counts.iter().all(|(t, n, _)| *n <= 2.0 * *t as f64) {
        note.push_str(
            " Every count is within twice the number of threads: the timers come from the start of the run (creating \
             the workers and their first wake-ups, onto CPUs that have not ticked yet and so count as at the minimum \
             frequency; a 50 ms schbench arms as many as a 3 s one). Afterwards the CPUs chosen for wake-ups are fast \
             at their last tick at every thread count (each worker spins 30 ms, long enough for its core to ramp up), \
             so the count follows the number of threads instead of rising and falling with the load as in the paper.",
        );
    }
    if grade == Grade::NotTested {
        note.push_str(" S_move armed no timer in any run: not tested.");
    }
    let mut other = Vec::new();
    for (t, w) in &s.schbench {
        other.push(format!("{t}: {:.0}", r.policy_stat(&Cell::new(E7, w, TIMERS_UNSAMPLED_LOW, "powersave"), TIMER_KEYS)?));
    }
    let same = s.schbench.iter().zip(&counts).all(|((_, w), (_, n, _))| {
        r.policy_stat(&Cell::new(E7, w, TIMERS_UNSAMPLED_LOW, "powersave"), TIMER_KEYS).is_ok_and(|o| o == *n)
    });
    note.push_str(&format!(
        " With the other start sample (a CPU not yet ticked counts as slow, unsampled=low): {} timers{}.",
        other.join(", "),
        if same { ", the same counts: the E7's start sample is at its minimum either way" } else { "" }
    ));
    Ok(Outcome::new(sim_value, grade, note))
}

/// A schbench spec's run time in seconds (its `runtime_ms`, else
/// schbench's default, Table 2's).
pub(crate) fn schbench_run_s(spec: &str) -> Result<f64, String> {
    match spec.split([':', ',']).find_map(|kv| kv.strip_prefix("runtime_ms=")) {
        Some(ms) => ms.parse::<f64>().map(|ms| ms / 1e3).map_err(|e| format!("schbench spec {spec}: runtime_ms: {e}")),
        None => Ok(TABLE2_RUN_S),
    }
}

/// S_move checks the frequency only for a placement that moves the task off
/// its CPU, so a run's moves bound its timers. Compared per second with the
/// paper's timers (Table 2 counts 30 s runs), they show where no frequency
/// sample could give the paper's counts. `moves`: (threads, moves a second).
fn moves_against_timers(moves: &[(u32, f64)]) -> String {
    let rows: Vec<(u32, f64, f64)> = moves
        .iter()
        .map(|&(t, m)| (t, m, paper_timers(t) / TABLE2_RUN_S))
        .filter(|(_, m, p)| m.is_finite() && p.is_finite())
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let list = rows
        .iter()
        .map(|(t, m, p)| format!("{t} threads {m:.0} against {p:.0}"))
        .collect::<Vec<_>>()
        .join(", ");
    let short: Vec<String> = rows.iter().filter(|(_, m, p)| m < p).map(|(t, _, _)| t.to_string()).collect();
    let mut out = format!(
        " A timer needs a wake-up or fork that moves the task off its CPU (S_move checks no other placement), so the \
         model's moves a second (the start's included) bound its timers a second; the paper's timers a second (its \
         counts over 30 s) beside them: {list}."
    );
    if !short.is_empty() {
        out.push_str(&format!(
            " At {} threads the moves fall short of the paper's timers, so no frequency sample could give its counts: \
             in the model's fair class a woken task goes back to its previous CPU whenever that CPU is idle (as 5.4's \
             wake_affine and select_idle_sibling do when the previous CPU is idle), so it moves only when another task \
             holds that CPU. What moved the paper's wake-ups that often is not identified (docs/model.md, schbench).",
            short.join(" and ")
        ));
    }
    out
}

/// The model's wake-up latency (99th percentile) beside Table 2's (99.5th,
/// the kernel without timers). `counts`: (threads, timers, latency in us).
fn latencies_against_paper(counts: &[(u32, f64, f64)]) -> String {
    let list: Vec<String> = counts
        .iter()
        .filter(|(t, _, _)| paper_latency_us(*t).is_finite())
        .map(|(t, _, l)| format!("{t} threads {l:.0} against {:.0} us", paper_latency_us(*t)))
        .collect();
    if list.is_empty() {
        return String::new();
    }
    let mut out = format!(" Wake-up latency, the model's 99th percentile against the paper's 99.5th: {}.", list.join(", "));
    let long: Vec<String> =
        counts.iter().filter(|(t, _, l)| *l > 5.0 * paper_latency_us(*t)).map(|(t, _, _)| t.to_string()).collect();
    if !long.is_empty() {
        out.push_str(&format!(
            " At {} threads the model's wake-ups wait over five times as long as the paper's: they already queue \
             behind spinning workers there.",
            long.join(" and ")
        ));
    }
    out
}

/// Fewer Cores, More Hertz, Table 2, one row a thread count: the 99.5th
/// percentile of schbench's wake-up latency on the kernel without timers
/// (us), and the timers triggered, over 30 s runs.
const TABLE2: &[(u32, f64, f64)] = &[
    (64, 78.0, 2971.0),
    (128, 86.0, 13910.0),
    (192, 119.0, 63965.0),
    (256, 2292.0, 93001.0),
    (512, 36544.0, 512.0),
    (768, 60224.0, 959.0),
    (1024, 76416.0, 1290.0),
];
/// The length of Table 2's runs (schbench's default), in seconds.
const TABLE2_RUN_S: f64 = 30.0;

/// Table 2's row for a thread count, or NaNs for one it does not have.
fn table2(threads: u32) -> (f64, f64) {
    TABLE2.iter().find(|r| r.0 == threads).map_or((f64::NAN, f64::NAN), |r| (r.1, r.2))
}

fn paper_latency_us(threads: u32) -> f64 {
    table2(threads).0
}

fn paper_timers(threads: u32) -> f64 {
    table2(threads).1
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

fn check9(r: &Results, _s: &Setup) -> Result<Outcome, String> {
    let mut grades = Vec::new();
    let mut columns = Vec::new();
    let mut detail = Vec::new();
    // The worst grade among context switching and shell scripts; whether a
    // file copy gain of the post came out on par.
    let (mut ctx, mut shell, mut copy_flat) = (Grade::Reproduced, Grade::Reproduced, false);
    for (k, copies) in [1, 2].into_iter().enumerate() {
        let mut parts = Vec::new();
        for t in HAIKU_TESTS {
            let old = Cell::new(CORE2, &unixbench(t.test, copies), "haiku-old", "performance");
            let new = old.with_policy(HAIKU_NEW);
            let d = r.improvement(&new, "haiku-old")?;
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
