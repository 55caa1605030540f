// SPDX-License-Identifier: GPL-2.0-only
//! Where a sweep keeps its results: `runs.jsonl`, a journal with one line
//! per finished run (its key, configuration and whole report), appended and
//! flushed as each run ends, so that an interrupted sweep loses no finished
//! run; and `results.parquet`, the table of the plan's rows made from it,
//! replaced whole (written aside, then renamed) so that a reader never sees
//! half a file.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use serde::{Deserialize, Serialize};
use twox_hash::XxHash3_128;
use warmcore_trace::output::Output;

use crate::spec::{Kind, Plan, Run};

/// What the key and the rows say the results came from: the version and
/// the commit, so that a simulator rebuilt from another commit runs again.
pub const VERSION: &str = warmcore_version::VERSION;

/// A run's key: a hash of everything that decides its result, and of the
/// version that ran it.
pub fn run_key(run: &Run, plan: &Plan) -> String {
    key_for(run, plan, VERSION)
}

/// The key of `run` as the simulator of `version` would run it.
pub fn key_for(run: &Run, plan: &Plan, version: &str) -> String {
    let cfg = serde_json::json!({
        "machine": run.machine,
        "workload": run.workload,
        "policy": run.policy,
        "governor": run.governor,
        "seed": run.seed,
        "max_sim_ns": plan.limits.max_sim_ns,
        "max_events": plan.limits.max_events,
        "version": version,
    });
    format!("{:032x}", XxHash3_128::oneshot(cfg.to_string().as_bytes()))
}

/// One finished run, as the journal keeps it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub key: String,
    pub machine: String,
    pub workload: String,
    pub policy: String,
    pub governor: String,
    pub seed: u64,
    /// The report of `warmcore sim --json`, or None if the run failed.
    pub report: Option<serde_json::Value>,
    pub error: Option<String>,
    pub wall_s: f64,
    pub version: String,
}

/// A sweep's directory, locked for as long as this lives.
pub struct Store {
    dir: PathBuf,
    journal: File,
    _lock: File,
    /// Finished runs by key.
    pub done: HashMap<String, Record>,
    /// Lines of the journal that could not be read (a line cut short when
    /// a sweep was killed while writing it).
    pub dropped_lines: usize,
}

impl Store {
    pub fn open(dir: &Path) -> Result<Store, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}: choose a writable --out", dir.display()))?;
        let lock = File::create(dir.join(".lock")).map_err(|e| format!("cannot write in {}: {e}: choose a writable --out", dir.display()))?;
        // SAFETY: flock on a descriptor this function owns; no memory is shared.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(format!("another sweep is writing {}: wait for it or choose another --out", dir.display()));
        }
        let path = dir.join("runs.jsonl");
        let mut done = HashMap::new();
        let mut dropped_lines = 0;
        let mut valid_len = 0u64;
        if let Ok(f) = File::open(&path) {
            let mut r = BufReader::new(f);
            let mut line = String::new();
            loop {
                line.clear();
                let n = r.read_line(&mut line).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                if n == 0 {
                    break;
                }
                match serde_json::from_str::<Record>(line.trim_end()) {
                    Ok(rec) if line.ends_with('\n') => {
                        valid_len += n as u64;
                        done.insert(rec.key.clone(), rec);
                    }
                    _ => dropped_lines += 1,
                }
            }
        }
        let journal = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        // A line cut short by a kill would glue onto the next one: cut it off.
        if dropped_lines > 0 {
            journal.set_len(valid_len).map_err(|e| format!("cannot repair {}: {e}", path.display()))?;
        }
        Ok(Store { dir: dir.to_path_buf(), journal, _lock: lock, done, dropped_lines })
    }

    /// Claim the directory for `plan`: one whose journal holds runs, none of
    /// which is one of `plan`'s, holds another spec's results and is refused,
    /// unless `force` says to start over, which empties the journal and
    /// removes the table. A spec narrowed or extended (`--set seeds=...`)
    /// shares runs with the one before and resumes it.
    pub fn claim(&mut self, plan: &Plan, force: bool) -> Result<(), String> {
        let same = |rec: &Record, r: &Run| {
            (&rec.machine, &rec.workload, &rec.policy, &rec.governor, rec.seed) == (&r.machine, &r.workload, &r.policy, &r.governor, r.seed)
        };
        if self.done.is_empty() || self.done.values().any(|rec| plan.runs.iter().any(|r| same(rec, r))) {
            return Ok(());
        }
        if !force {
            return Err(format!(
                "{} holds the results of another sweep spec (none of its {} runs is one of this spec's): give another --out, or --force to start over (its results are removed)",
                self.dir.display(),
                self.done.len()
            ));
        }
        self.journal.set_len(0).map_err(|e| format!("cannot empty {}: {e}", self.dir.join("runs.jsonl").display()))?;
        self.done.clear();
        let table = self.dir.join("results.parquet");
        if std::fs::symlink_metadata(&table).is_ok_and(|m| m.is_file()) {
            std::fs::remove_file(&table).map_err(|e| format!("cannot remove {}: {e}", table.display()))?;
        }
        Ok(())
    }

    /// Append a finished run to the journal, on disk before this returns.
    pub fn add(&mut self, rec: Record) -> Result<(), String> {
        let mut line = serde_json::to_string(&rec).map_err(|e| e.to_string())?;
        line.push('\n');
        self.journal
            .write_all(line.as_bytes())
            .and_then(|_| self.journal.sync_data())
            .map_err(|e| format!("cannot write {}: {e}", self.dir.join("runs.jsonl").display()))?;
        self.done.insert(rec.key.clone(), rec);
        Ok(())
    }

    /// Write the plan's finished rows, in the plan's order, to results.parquet.
    pub fn write_table(&self, plan: &Plan, keys: &[String]) -> Result<usize, String> {
        let batch = table(plan, keys, &self.done)?;
        let path = self.dir.join("results.parquet");
        // Written aside and renamed (warmcore_trace::output): a reader never sees half a file.
        let out = Output::create(&path, &[]).map_err(|e| format!("cannot write {e}"))?;
        let f = out.file().map_err(|e| format!("cannot write {e}"))?;
        let props = WriterProperties::builder().set_compression(Compression::ZSTD(ZstdLevel::default())).build();
        let mut w = ArrowWriter::try_new(f, batch.schema(), Some(props)).map_err(|e| e.to_string())?;
        w.write(&batch).map_err(|e| e.to_string())?;
        w.close().map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        out.commit().map_err(|e| format!("cannot write {e}"))?;
        Ok(batch.num_rows())
    }
}

/// A metric's value: the number at `path` (dots between keys) in a report.
pub fn metric(report: &serde_json::Value, path: &str) -> Option<f64> {
    let v = path.split('.').try_fold(report, |v, k| v.get(k))?;
    v.as_f64().or_else(|| v.as_bool().map(|b| b as u8 as f64))
}

/// The columns every table has that are axes of the study.
const AXIS_COLUMNS: &[&str] = &["machine", "workload", "workload_name", "policy", "policy_name", "governor", "seed"];

/// The table: one row per finished run of the plan, every axis and metric a column.
pub fn table(plan: &Plan, keys: &[String], done: &HashMap<String, Record>) -> Result<RecordBatch, String> {
    let rows: Vec<(u32, &Run, &Record)> = plan
        .runs
        .iter()
        .zip(keys)
        .enumerate()
        .filter_map(|(i, (r, k))| done.get(k).map(|rec| (i as u32, r, rec)))
        .collect();
    let text = |f: &dyn Fn(&Run, &Record) -> Option<String>| -> ArrayRef {
        Arc::new(rows.iter().map(|(_, r, rec)| f(r, rec)).collect::<StringArray>())
    };
    let mut fields = Vec::new();
    let mut cols: Vec<ArrayRef> = Vec::new();
    let mut push = |name: &str, ty: DataType, nullable: bool, col: ArrayRef| {
        fields.push(Field::new(name, ty, nullable));
        cols.push(col);
    };
    push("run", DataType::UInt32, false, Arc::new(rows.iter().map(|x| x.0).collect::<UInt32Array>()));
    push("key", DataType::Utf8, false, text(&|_, rec| Some(rec.key.clone())));
    push("machine", DataType::Utf8, false, text(&|r, _| Some(r.machine.clone())));
    push("workload", DataType::Utf8, false, text(&|r, _| Some(r.workload.clone())));
    push("workload_name", DataType::Utf8, false, text(&|r, _| Some(r.workload_name.clone())));
    push("policy", DataType::Utf8, false, text(&|r, _| Some(r.policy.clone())));
    push("policy_name", DataType::Utf8, false, text(&|r, _| Some(r.policy_name.clone())));
    push("governor", DataType::Utf8, false, text(&|r, _| Some(r.governor.clone())));
    push("seed", DataType::UInt64, false, Arc::new(rows.iter().map(|x| x.1.seed).collect::<UInt64Array>()));
    for (i, axis) in plan.axes.iter().enumerate() {
        let value = |r: &Run| r.params.iter().find(|(a, _)| *a == i).map(|(_, v)| v.clone());
        let col: ArrayRef = match axis.kind {
            Kind::Int => Arc::new(rows.iter().map(|(_, r, _)| value(r).and_then(|v| v.parse::<i64>().ok())).collect::<Int64Array>()),
            Kind::Float => Arc::new(rows.iter().map(|(_, r, _)| value(r).and_then(|v| v.parse::<f64>().ok())).collect::<Float64Array>()),
            Kind::Text => text(&|r, _| value(r)),
        };
        let ty = col.data_type().clone();
        push(&axis.column, ty, true, col);
    }
    for m in &plan.metrics {
        let col = rows.iter().map(|(_, _, rec)| rec.report.as_ref().and_then(|rep| metric(rep, m))).collect::<Float64Array>();
        push(m, DataType::Float64, true, Arc::new(col));
    }
    // The workload's own measure, named, with its direction: a reader ranks
    // by `metric.value` without knowing each workload.
    let report_text = |key: &'static str| text(&move |_, rec| rec.report.as_ref().and_then(|x| x["metric"][key].as_str().map(String::from)));
    push("metric_name", DataType::Utf8, true, report_text("name"));
    push("metric_better", DataType::Utf8, true, report_text("better"));
    push("partial", DataType::Utf8, true, text(&|_, rec| rec.report.as_ref().and_then(|x| x["partial"].as_str().map(String::from))));
    push(
        "ejected",
        DataType::Boolean,
        true,
        Arc::new(rows.iter().map(|(_, _, rec)| rec.report.as_ref().and_then(|x| x["ejected"].as_bool())).collect::<BooleanArray>()),
    );
    push("error", DataType::Utf8, true, text(&|_, rec| rec.error.clone()));
    push("wall_s", DataType::Float64, false, Arc::new(rows.iter().map(|x| x.2.wall_s).collect::<Float64Array>()));
    push("version", DataType::Utf8, false, text(&|_, rec| Some(rec.version.clone())));
    // Which columns are the study's axes (the rest describe or measure a
    // run), for readers such as `warmcore plot sweep`.
    let axes: Vec<&str> = AXIS_COLUMNS.iter().copied().chain(plan.axes.iter().map(|a| a.column.as_str())).collect();
    let meta = HashMap::from([("warmcore.axes".to_string(), serde_json::to_string(&axes).map_err(|e| e.to_string())?)]);
    RecordBatch::try_new(Arc::new(Schema::new_with_metadata(fields, meta)), cols).map_err(|e| e.to_string())
}
