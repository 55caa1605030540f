// SPDX-License-Identifier: GPL-2.0-only
//! Real workloads: the project's own perf recordings (fixtures/, made by
//! scripts/record-fixtures.sh) replayed on the Nest machines' models under
//! CFS and Nest. Not a claim of a paper: a check of the models on work
//! that no workload generator wrote, reported after the claims.
//!
//! The recordings are built into the binary, so that a reproduction needs no
//! checkout of the repository; each is imported to DIR/traces/real-NAME.wct
//! before the runs, and replayed with `replay:trace=traces/real-NAME.wct`
//! (a replayed trace's path in a cell is relative to the output directory:
//! see `run_all`).

use std::path::Path;

use serde::Serialize;
use warmcore_sim::Machine;
use warmcore_trace::import::{import_bytes, Format, ImportOptions};
use warmcore_trace::output::Output;

use crate::claims::{short_machine, E7, G5218};
use crate::{fmt_opt, Cell, Results, RunSpec, Setup};

/// A recording of the repository's fixtures/.
pub struct Recording {
    /// Names the trace file and the table's rows.
    pub name: &'static str,
    /// The file in fixtures/.
    pub file: &'static str,
    pub about: &'static str,
    pub data: &'static [u8],
}

pub const RECORDINGS: &[Recording] = &[
    Recording {
        name: "configure",
        file: "perf-configure.txt.zst",
        about: "a configure-like shell script (perf script text, us timestamps)",
        data: include_bytes!("../../../fixtures/perf-configure.txt.zst"),
    },
    Recording {
        name: "make-j2",
        file: "perf-make-j2.txt.zst",
        about: "make -j2 of a 7-file C project (perf script --ns --header -I)",
        data: include_bytes!("../../../fixtures/perf-make-j2.txt.zst"),
    },
];

/// The machines of Nest's configure results (Nest, section 5.2) that the
/// claims model too.
pub const MACHINES: &[&str] = &[G5218, E7];
/// The governor of Nest's configure comparison (Nest, section 5.2), as in
/// claim 4.
pub const GOVERNOR: &str = "schedutil";
pub const POLICIES: [&str; 2] = ["cfs", "nest"];

/// The trace of a recording, relative to the output directory.
pub fn trace_file(name: &str) -> String {
    format!("traces/real-{name}.wct")
}

pub fn workload(name: &str) -> String {
    format!("replay:trace={}", trace_file(name))
}

/// Import every recording into `out`/traces (which must exist); one line
/// per recording saying what the import kept.
pub fn import_all(out: &Path) -> Result<Vec<ImportedRecording>, String> {
    let mut v = Vec::new();
    for r in RECORDINGS {
        let path = out.join(trace_file(r.name));
        let o = Output::create(&path, &[]).map_err(|e| format!("cannot write {e}"))?;
        let rep = o
            .file()
            .and_then(|f| import_bytes(Format::PerfScript, r.file, r.data, f, &trace_file(r.name), ImportOptions::default()))
            .map_err(|e| format!("importing the built-in recording {}: {e}", r.file))?;
        o.commit().map_err(|e| format!("cannot write {e}"))?;
        v.push(ImportedRecording {
            name: r.name,
            file: r.file,
            about: r.about,
            trace: trace_file(r.name),
            import: rep.summary(),
        });
    }
    Ok(v)
}

#[derive(Clone, Debug, Serialize)]
pub struct ImportedRecording {
    pub name: &'static str,
    /// The file in fixtures/ it was built from.
    pub file: &'static str,
    pub about: &'static str,
    /// Relative to the output directory.
    pub trace: String,
    /// What the importer kept and skipped.
    pub import: String,
}

/// The cells of every recording, machine and policy.
pub fn cells() -> Vec<Cell> {
    let mut v = Vec::new();
    for r in RECORDINGS {
        for m in MACHINES {
            for p in POLICIES {
                v.push(Cell::new(m, &workload(r.name), p, GOVERNOR));
            }
        }
    }
    v
}

/// The runs: every cell with the claims' seeds, none traced.
pub fn runs(s: &Setup) -> Vec<RunSpec> {
    cells()
        .into_iter()
        .flat_map(|cell| s.seeds.iter().map(move |&seed| RunSpec { cell: cell.clone(), seed, trace: false }))
        .collect()
}

/// A policy's means over the seeds.
#[derive(Clone, Debug, Serialize)]
pub struct Measures {
    /// RunReport's makespan_ns, in milliseconds.
    pub makespan_ms: f64,
    /// RunReport's underload_per_s.
    pub underload_per_s: f64,
    /// RunReport's inversions.count.
    pub inversions: f64,
}

/// One recording on one machine, CFS and Nest side by side.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub recording: String,
    pub machine: String,
    pub cpus: u32,
    pub governor: String,
    pub seeds: usize,
    /// None when a run failed; `error` says why.
    pub cfs: Option<Measures>,
    pub nest: Option<Measures>,
    pub error: Option<String>,
    /// Nest's underload relative to CFS's, in percent (negative: lower).
    pub underload_change_pct: Option<f64>,
    pub reading: String,
}

fn measures(r: &Results, c: &Cell) -> Result<Measures, String> {
    Ok(Measures { makespan_ms: r.seconds(c)? * 1e3, underload_per_s: r.underload(c)?, inversions: r.inversions(c)? })
}

fn change_pct(base: f64, x: f64) -> f64 {
    if base == 0.0 {
        0.0
    } else {
        (x - base) / base * 100.0
    }
}

/// The one-line reading of a row.
fn reading(cfs: &Measures, nest: &Measures) -> String {
    let u = change_pct(cfs.underload_per_s, nest.underload_per_s);
    let m = change_pct(cfs.makespan_ms, nest.makespan_ms);
    let verdict = if nest.underload_per_s < cfs.underload_per_s {
        format!("Nest lowers underload by {:.0} %", -u)
    } else if nest.underload_per_s == cfs.underload_per_s {
        "Nest leaves underload unchanged".to_string()
    } else {
        format!("Nest does NOT lower underload: {:+.0} %", u)
    };
    format!(
        "{verdict} ({:.1} -> {:.1} per s); makespan {:+.1} %; inversions {:.0} -> {:.0}",
        cfs.underload_per_s, nest.underload_per_s, m, cfs.inversions, nest.inversions
    )
}

/// A row per recording and machine, from the runs of `cells()`.
pub fn rows(r: &Results) -> Vec<Row> {
    let mut v = Vec::new();
    for rec in RECORDINGS {
        for m in MACHINES {
            let cell = Cell::new(m, &workload(rec.name), "cfs", GOVERNOR);
            let seeds = r.done.iter().filter(|d| d.spec.cell == cell).count();
            let cfs = measures(r, &cell);
            let nest = measures(r, &cell.with_policy("nest"));
            let (change, reading, error) = match (&cfs, &nest) {
                (Ok(c), Ok(n)) => (Some(change_pct(c.underload_per_s, n.underload_per_s)), reading(c, n), None),
                (Err(e), _) | (_, Err(e)) => (None, "no reading: a run failed".to_string(), Some(e.clone())),
            };
            v.push(Row {
                recording: rec.name.into(),
                machine: m.to_string(),
                cpus: Machine::load(m).map(|x| x.nr_cpus).unwrap_or(0),
                governor: GOVERNOR.into(),
                seeds,
                cfs: cfs.ok(),
                nest: nest.ok(),
                error,
                underload_change_pct: change,
                reading,
            });
        }
    }
    v
}

/// The section of report.md.
pub fn section_md(recs: &[ImportedRecording], rows: &[Row]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "\n## Real workloads\n");
    let _ = writeln!(
        s,
        "Not a claim of the papers: the project's own perf recordings (fixtures/, built into the binary), imported \
         to .wct and replayed (`replay:trace=`) on the 5218 and E7 models under CFS and Nest, with schedutil, the \
         governor Nest's configure results compare against (Nest, section 5.2; as claim 4). Underload is Nest's measure (section 5.2); the runs and \
         these rows are in real-workloads.json.\n"
    );
    for r in recs {
        let _ = writeln!(s, "- `{}`: {}, from {}; imported: {}.", r.trace, r.about, r.file, r.import);
    }
    let _ = writeln!(
        s,
        "\nWhat a replay keeps: each task's runs on a CPU (as cycles at the recorded frequency, 2 GHz where the \
         recording has none, as here), its forks and exits, and each wake-up by another task as a dependency (the \
         woken task waits for its waker to reach that point). What it cannot keep: the recordings come from a \
         2-CPU VM, so a replay is a 2-CPU workload's dependency graph placed on a 64- or 160-CPU model; a wake-up \
         by a timer or an interrupt becomes a sleep of the recorded length, so time spent waiting for I/O or \
         timers does not change with the scheduler and bounds the makespan; and the recordings are system-wide, \
         so the VM's other tasks at the time (in the configure recording, a compiler and mandb take most of the \
         CPU time) are replayed with the script. The makespan is the whole replay's: the configure replay's last \
         task to end is one of those other tasks (a tokio-rt-worker thread woken by a timer near the end of the \
         recording), so its makespan is the same under both policies and says nothing of the script's; make -j2's \
         replay ends with make.\n"
    );
    let _ = writeln!(
        s,
        "| recording | machine | seeds | makespan ms CFS | Nest | underload/s CFS | Nest | change | inversions CFS | Nest |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let f = |m: &Option<Measures>, g: fn(&Measures) -> f64, prec: usize| fmt_opt(m.as_ref().map(g), prec);
        let _ = writeln!(
            s,
            "| {} | {} ({} CPUs) | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.recording,
            short_machine(&r.machine),
            r.cpus,
            r.seeds,
            f(&r.cfs, |m| m.makespan_ms, 2),
            f(&r.nest, |m| m.makespan_ms, 2),
            f(&r.cfs, |m| m.underload_per_s, 1),
            f(&r.nest, |m| m.underload_per_s, 1),
            r.underload_change_pct.map(|x| format!("{x:+.0} %")).unwrap_or_else(|| "-".into()),
            f(&r.cfs, |m| m.inversions, 0),
            f(&r.nest, |m| m.inversions, 0),
        );
    }
    let _ = writeln!(
        s,
        "\nMakespan: RunReport's makespan_ns; underload: underload_per_s; inversions: inversions.count (means over \
         the seeds).\n"
    );
    for r in rows {
        let why = r.error.as_deref().map(|e| format!(" ({e})")).unwrap_or_default();
        let _ = writeln!(s, "- {} on the {}: {}{why}.", r.recording, short_machine(&r.machine), r.reading);
    }
    s
}
