// SPDX-License-Identifier: GPL-2.0-only
//! A sweep's spec (axes, checks with the spec's line) and its local engine
//! (rows, failures, resuming).

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt32Type};
use arrow_array::{Array, ArrowPrimitiveType, PrimitiveArray, RecordBatch};

use warmcore_sweep::spec::{Kind, REPORT_FIELDS};
use warmcore_sweep::store::{self, Store};
use warmcore_sweep::{sweep, Engine, Plan};

const SPEC: &str = r#"
machines = "default"
seeds = { from = 1, to = 2 }
metrics = ["makespan_ns", "metric.value", "energy_j"]

[[workloads]]
name = "hackbench"
groups = [1, 2]
loops = 10

[[policies]]
name = "cfs"

[[policies]]
name = "smove"
delay_us = { from = 10, to = 30, step = 10 }
timers_only = true
"#;

fn plan() -> Plan {
    Plan::parse("spec.toml", SPEC, &[]).unwrap()
}

#[test]
fn every_combination_is_one_run_and_every_varying_parameter_an_axis() {
    let p = plan();
    // 1 machine x 2 workloads x (1 + 3) policies x 1 governor x 2 seeds.
    assert_eq!(p.runs.len(), 16);
    let cols: Vec<(&str, Kind)> = p.axes.iter().map(|a| (a.column.as_str(), a.kind)).collect();
    assert_eq!(cols, [("workload.groups", Kind::Int), ("policy.delay_us", Kind::Int)]);
    let policies: HashSet<&str> = p.runs.iter().map(|r| r.policy.as_str()).collect();
    assert!(policies.contains("smove:delay_us=20,timers_only=on"), "{policies:?}");
    assert!(policies.contains("cfs"));
    assert!(p.runs.iter().all(|r| r.workload.ends_with(",loops=10")));
    let seeds: HashSet<u64> = p.runs.iter().map(|r| r.seed).collect();
    assert_eq!(seeds, HashSet::from([1, 2]));
}

#[test]
fn set_replaces_a_list_of_the_spec() {
    let p = Plan::parse("s", SPEC, &["seeds=7".into(), "machines=default,ryzen5-3400g".into()]).unwrap();
    assert_eq!(p.runs.len(), 16);
    assert!(p.runs.iter().all(|r| r.seed == 7));
    let e = Plan::parse("s", SPEC, &["workloads=x".into()]).unwrap_err();
    assert!(e.contains("--set takes machines"), "{e}");
    let e = Plan::parse("s", SPEC, &["machines=nope".into()]).unwrap_err();
    assert!(e.starts_with("--set machines: unknown machine 'nope'"), "{e}");
}

#[test]
fn an_epp_is_a_value_of_the_governor_axis_and_must_suit_every_machine() {
    let govs = "governors = [\"powersave\", \"powersave:epp=power\"]\nseeds =";
    let two = SPEC.replacen("machines = \"default\"", "machines = \"xeon-gold-5218-2s\"", 1).replacen("seeds =", govs, 1);
    let p = Plan::parse("spec.toml", &two, &[]).unwrap();
    assert_eq!(p.runs.len(), 32);
    let g: HashSet<&str> = p.runs.iter().map(|r| r.governor.as_str()).collect();
    assert_eq!(g, HashSet::from(["powersave", "powersave:epp=power"]));
    // The default machine's intel_pstate has no HWP, so no EPP.
    let e = Plan::parse("spec.toml", &SPEC.replacen("seeds =", govs, 1), &[]).unwrap_err();
    assert!(e.starts_with("spec.toml:3:") && e.contains("no HWP"), "{e}");
    let e = Plan::parse("s", SPEC, &["governors=powersave:epp=power".into()]).unwrap_err();
    assert!(e.starts_with("--set governors:") && e.contains("energy-performance"), "{e}");
}

/// The error for SPEC with `from` replaced by `to`.
fn error(from: &str, to: &str) -> String {
    assert!(SPEC.contains(from), "{from}");
    Plan::parse("spec.toml", &SPEC.replacen(from, to, 1), &[]).unwrap_err()
}

#[test]
fn bad_specs_are_reported_with_their_line_before_any_run() {
    let cases = [
        // An unknown axis (top-level key).
        ("seeds =", "colours = 3\nseeds =", "spec.toml:3:", "unknown field `colours`"),
        ("machines = \"default\"", "machines = [\"default\", \"nope\"]", "spec.toml:2:", "unknown machine 'nope'"),
        ("name = \"hackbench\"", "name = \"hackbenc\"", "spec.toml:7:", "unknown workload 'hackbenc'"),
        ("name = \"cfs\"", "name = \"cfz\"", "spec.toml:12:", "unknown policy 'cfz'"),
        // A parameter the policy does not take: the line of the parameter.
        ("timers_only = true", "timers_only = true\nspeed = [1, 2]", "spec.toml:18:", "unknown smove parameter 'speed'"),
        ("groups = [1, 2]", "groups = [1, 2]\nsize = 3", "spec.toml:9:", "unknown parameter 'size' for workload hackbench"),
        ("\"energy_j\"]", "\"energy\"]", "spec.toml:4:", "unknown metric 'energy'"),
        ("step = 10 }", "step = 0 }", "spec.toml:16:", "positive step"),
        ("seeds = { from = 1, to = 2 }", "seeds = [\"one\"]", "spec.toml:3:", "seeds are whole numbers"),
        ("[[workloads]]", "[[workloads]]\nloops = 3\n[[workloads]]", "spec.toml:7:", "needs a name"),
    ];
    for (from, to, line, what) in cases {
        let e = error(from, to);
        assert!(e.starts_with(line) && e.contains(what), "{to}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    let e = Plan::parse("spec.toml", "machines = \"default\"\n", &[]).unwrap_err();
    assert!(e.contains("no [[workloads]] entry"), "{e}");
}

#[test]
fn the_metrics_a_spec_may_name_are_the_reports_fields() {
    let cfg = warmcore_sim::RunConfig::new("default", "hackbench:groups=1,loops=5", "cfs", "powersave", 1);
    let report = serde_json::to_value(warmcore_sim::run(&cfg).unwrap()).unwrap();
    let keys: HashSet<&str> = report.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, REPORT_FIELDS.iter().copied().collect::<HashSet<_>>());
    assert_eq!(store::metric(&report, "metric.value"), report["metric"]["value"].as_f64());
    assert!(store::metric(&report, "makespan_ns").unwrap() > 0.0);
    assert_eq!(store::metric(&report, "metric.nope"), None);
}

#[test]
fn a_run_key_names_the_version_and_the_commit_that_ran_it() {
    let p = plan();
    let r = &p.runs[0];
    // A simulator rebuilt from another commit runs again what an older one ran.
    assert_ne!(store::key_for(r, &p, "0.1.0 (aaaaaaaaaaaa)"), store::key_for(r, &p, "0.1.0 (bbbbbbbbbbbb)"));
    assert_eq!(store::run_key(r, &p), store::key_for(r, &p, store::VERSION));
    assert!(store::VERSION.contains(&format!("({})", warmcore_version::COMMIT)), "{}", store::VERSION);
    assert_ne!(warmcore_version::COMMIT, "unknown", "built in a checkout, the version names its commit");
}

fn local() -> Engine {
    Engine::Local { jobs: 2 }
}

/// The results table, without wall time (which differs between two runs of
/// one sweep).
fn table(dir: &std::path::Path) -> RecordBatch {
    let f = std::fs::File::open(dir.join("results.parquet")).unwrap();
    let mut batches: Vec<RecordBatch> =
        parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(f, 1024).unwrap().map(Result::unwrap).collect();
    assert_eq!(batches.len(), 1, "a sweep this small is one batch");
    let batch = batches.pop().unwrap();
    let keep: Vec<usize> = (0..batch.num_columns()).filter(|&i| batch.schema().field(i).name() != "wall_s").collect();
    batch.project(&keep).unwrap()
}

fn column<'a, T: ArrowPrimitiveType>(t: &'a RecordBatch, name: &str) -> &'a PrimitiveArray<T> {
    t.column_by_name(name).unwrap().as_primitive::<T>()
}

#[test]
fn a_sweep_started_again_runs_only_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan();
    let stop = AtomicBool::new(false);
    let s = sweep(&p, dir.path(), &local(), false, false, &stop).unwrap();
    assert_eq!((s.ran, s.resumed, s.failed, s.interrupted), (16, 0, 0, false));
    let first = table(dir.path());
    assert_eq!(first.num_rows(), 16);
    let makespan = column::<Float64Type>(&first, "makespan_ns");
    assert!(makespan.null_count() == 0 && makespan.values().iter().all(|&x| x > 0.0), "{first:?}");
    assert_eq!(first.column_by_name("error").unwrap().null_count(), 16);
    let run = column::<UInt32Type>(&first, "run");
    assert_eq!((run.value(0), run.value(15)), (0, 15));
    let f = std::fs::File::open(dir.path().join("results.parquet")).unwrap();
    let meta = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f).unwrap().schema().metadata().clone();
    let axes: Vec<String> = serde_json::from_str(&meta["warmcore.axes"]).unwrap();
    assert_eq!(
        axes,
        ["machine", "workload", "workload_name", "policy", "policy_name", "governor", "seed", "workload.groups", "policy.delay_us"]
    );
    let s = sweep(&p, dir.path(), &local(), false, false, &stop).unwrap();
    assert_eq!((s.ran, s.resumed), (0, 16));
    assert_eq!(table(dir.path()), first);

    // A journal whose last line was cut short: that run runs again.
    let journal = dir.path().join("runs.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let cut = text.len() - text.lines().last().unwrap().len() / 2 - 1;
    std::fs::write(&journal, &text[..cut]).unwrap();
    let s = sweep(&p, dir.path(), &local(), false, false, &stop).unwrap();
    assert_eq!((s.ran, s.resumed), (1, 15));
    assert_eq!(table(dir.path()), first);
    let lines = std::fs::read_to_string(&journal).unwrap();
    assert_eq!(lines.lines().count(), 16);
    assert!(lines.lines().all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));
}

#[test]
fn a_failed_run_keeps_its_error_in_its_row_and_the_sweep_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = plan();
    // The engine does not check: a run the simulator refuses fails alone.
    p.runs[3].workload = "hackbench:groups=x".into();
    let stop = AtomicBool::new(false);
    let s = sweep(&p, dir.path(), &local(), false, false, &stop).unwrap();
    assert_eq!((s.ran, s.failed), (16, 1));
    let t = table(dir.path());
    assert_eq!(t.num_rows(), 16);
    let error = t.column_by_name("error").unwrap().as_string::<i32>();
    let failed: Vec<usize> = (0..t.num_rows()).filter(|&i| error.is_valid(i)).collect();
    assert_eq!(failed.len(), 1);
    let i = failed[0];
    assert_eq!(column::<UInt32Type>(&t, "run").value(i), 3);
    assert!(error.value(i).contains("groups"), "{}", error.value(i));
    assert!(column::<Float64Type>(&t, "makespan_ns").is_null(i));
    // Kept, not retried, unless asked.
    let s = sweep(&p, dir.path(), &local(), false, false, &stop).unwrap();
    assert_eq!(s.ran, 0);
    let s = sweep(&p, dir.path(), &local(), true, false, &stop).unwrap();
    assert_eq!((s.ran, s.failed), (1, 1));
}

#[test]
fn a_directory_of_another_spec_is_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let mut p = plan();
    p.runs.truncate(2);
    sweep(&p, dir.path(), &local(), false, false, &stop).unwrap();
    let before = std::fs::read(dir.path().join("runs.jsonl")).unwrap();
    let mut other = plan();
    other.runs.drain(..2);
    other.runs.truncate(1);
    let e = sweep(&other, dir.path(), &local(), false, false, &stop).err().unwrap();
    assert!(e.is::<warmcore_args::UsageError>(), "a usage error, exit status 2: {e}");
    let e = e.to_string();
    assert!(e.contains("holds the results of another sweep spec") && e.contains("--force"), "{e}");
    assert_eq!(std::fs::read(dir.path().join("runs.jsonl")).unwrap(), before);
    // The same spec resumes, extended too; --force starts the other one over.
    assert_eq!(sweep(&p, dir.path(), &local(), false, false, &stop).unwrap().ran, 0);
    let mut more = plan();
    more.runs.truncate(3);
    assert_eq!(sweep(&more, dir.path(), &local(), false, false, &stop).unwrap().ran, 1);
    let mut other = plan();
    other.runs.drain(..3);
    other.runs.truncate(1);
    let s = sweep(&other, dir.path(), &local(), false, true, &stop).unwrap();
    assert_eq!((s.ran, s.resumed), (1, 0));
    assert_eq!(table(dir.path()).num_rows(), 1);
}

#[test]
fn one_directory_takes_one_sweep_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let _first = Store::open(dir.path()).unwrap();
    let e = Store::open(dir.path()).err().unwrap();
    assert!(e.contains("another sweep is writing"), "{e}");
}

#[test]
fn a_job_sent_to_ray_names_every_file_by_its_absolute_path() {
    // Tests run in the crate's directory.
    let abs = |p: &str| std::path::absolute(p).unwrap().to_string_lossy().into_owned();
    let job = |machine: &str, workload: &str, policy: &str| warmcore_sweep::Job {
        machine: machine.into(),
        workload: workload.into(),
        policy: policy.into(),
        governor: "powersave".into(),
        seed: 1,
        limits: warmcore_sim::Limits::default(),
        trace: Some("out/t.wct".into()),
    };
    let sent = job("../../machines/default.toml", "../../workloads/pipeline.toml", "bpf:../cli/tests/fixtures/hunt-broken:slice_us=5").for_workers();
    assert_eq!(sent.machine, abs("../../machines/default.toml"));
    assert_eq!(sent.workload, abs("../../workloads/pipeline.toml"));
    assert_eq!(sent.policy, format!("bpf:{}:slice_us=5", abs("../cli/tests/fixtures/hunt-broken")));
    assert_eq!(sent.trace, Some(std::path::absolute("out/t.wct").unwrap()));
    for (w, file) in [("replay:trace=t.wct", "t.wct"), ("rtapp:file=r.json", "r.json")] {
        let sent = job("default", w, "scx:nest").for_workers().workload;
        assert_eq!(sent, w.replace(file, &abs(file)));
    }
    // Names, not files: as they are.
    let sent = job("default", "hackbench:groups=2", "scx:nest:warm=off").for_workers();
    assert_eq!((sent.machine.as_str(), sent.workload.as_str(), sent.policy.as_str()), ("default", "hackbench:groups=2", "scx:nest:warm=off"));
}
