// SPDX-License-Identifier: GPL-2.0-only
//! The parquet exporter, read back with the parquet crate's arrow reader.

#[path = "export_common/mod.rs"]
mod common;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use warmcore_trace::export::parquet as pq;
use warmcore_trace::*;

struct Row {
    ts: u64,
    cpu: u32,
    pid: u32,
    event: String,
    a: u32,
    b: u32,
    arg: u64,
    comm: Option<String>,
}

fn read(path: &std::path::Path) -> (Vec<Row>, usize, Vec<RecordBatch>) {
    let f = std::fs::File::open(path).unwrap();
    let builder = ParquetRecordBatchReaderBuilder::try_new(f).unwrap();
    let groups = builder.metadata().num_row_groups();
    let batches: Vec<RecordBatch> = builder.build().unwrap().map(|b| b.unwrap()).collect();
    let mut rows = Vec::new();
    for b in &batches {
        let col = |n: &str| b.column_by_name(n).unwrap().clone();
        let (ts, cpu, pid, ev, aa, bb, arg, comm) =
            (col("ts_ns"), col("cpu"), col("pid"), col("event"), col("arg_a"), col("arg_b"), col("arg"), col("comm"));
        let ev = ev.as_dictionary::<Int32Type>();
        let names = ev.values().as_string::<i32>();
        for i in 0..b.num_rows() {
            rows.push(Row {
                ts: ts.as_primitive::<UInt64Type>().value(i),
                cpu: cpu.as_primitive::<UInt32Type>().value(i),
                pid: pid.as_primitive::<UInt32Type>().value(i),
                event: names.value(ev.keys().value(i) as usize).to_string(),
                a: aa.as_primitive::<UInt32Type>().value(i),
                b: bb.as_primitive::<UInt32Type>().value(i),
                arg: arg.as_primitive::<UInt64Type>().value(i),
                comm: comm.is_valid(i).then(|| comm.as_string::<i32>().value(i).to_string()),
            });
        }
    }
    (rows, groups, batches)
}

fn check(t: &Trace, want: &[CpuEvent], rows: &[Row]) {
    assert_eq!(rows.len(), want.len());
    for (r, e) in rows.iter().zip(want) {
        assert_eq!((r.ts, r.cpu, r.pid), (e.ev.ts, e.cpu, e.ev.pid));
        assert_eq!(r.event, t.header.events.name(e.ev.id));
        assert_eq!((r.a, r.b, r.arg), (e.ev.a(), e.ev.b(), u64::from_le_bytes(e.ev.arg)));
        assert_eq!(r.comm.as_deref(), t.comm(e.ev.pid));
    }
}

#[test]
fn rows_types_and_values() {
    let o = common::Opts { renumber: true, ..Default::default() };
    let dir = tempfile::tempdir().unwrap();
    let (p, out) = (dir.path().join("t.wct"), dir.path().join("t.parquet"));
    let want = common::write(&p, &o);
    let t = Trace::open(&p).unwrap();
    let s = pq::export(&t, Window::ALL, &out).unwrap();
    assert_eq!(s.rows, want.len() as u64);
    let (rows, groups, batches) = read(&out);
    assert_eq!(groups, 1);
    let schema = batches[0].schema();
    let types: Vec<(&str, DataType, bool)> =
        schema.fields().iter().map(|f| (f.name().as_str(), f.data_type().clone(), f.is_nullable())).collect();
    let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    assert_eq!(
        types,
        vec![
            ("ts_ns", DataType::UInt64, false),
            ("cpu", DataType::UInt32, false),
            ("pid", DataType::UInt32, false),
            ("event", dict, false),
            ("arg_a", DataType::UInt32, false),
            ("arg_b", DataType::UInt32, false),
            ("arg", DataType::UInt64, false),
            ("comm", DataType::Utf8, true),
        ]
    );
    check(&t, &want, &rows);
    // The file's own names, renumbered ids and an id it does not name.
    assert!(rows.iter().any(|r| r.event == "CTX_SWITCH"));
    assert!(rows.iter().any(|r| r.event == format!("EVENT_{}", common::UNNAMED_ID)));
    // pid 0 (idle) has no process-table entry: comm is null there.
    assert!(rows.iter().any(|r| r.pid == 0 && r.comm.is_none()));
    assert!(rows.iter().any(|r| r.comm.as_deref() == Some("task100")));
}

#[test]
fn row_groups_are_bounded_and_windows_cut() {
    // Enough events for three row groups.
    let o = common::Opts { cpus: 8, steps: 1_300_000, seed: 9, ..Default::default() };
    let dir = tempfile::tempdir().unwrap();
    let (p, out) = (dir.path().join("t.wct"), dir.path().join("t.parquet"));
    let want = common::write(&p, &o);
    assert!(want.len() > 2 * pq::ROW_GROUP_ROWS, "{} events", want.len());
    let t = Trace::open(&p).unwrap();
    let s = pq::export(&t, Window::ALL, &out).unwrap();
    let (rows, groups, _) = read(&out);
    let f = std::fs::File::open(&out).unwrap();
    let meta = ParquetRecordBatchReaderBuilder::try_new(f).unwrap().metadata().clone();
    for g in meta.row_groups() {
        assert!(g.num_rows() as usize <= pq::ROW_GROUP_ROWS);
    }
    assert_eq!(groups, want.len().div_ceil(pq::ROW_GROUP_ROWS));
    assert_eq!(s.row_groups, groups as u64);
    check(&t, &want, &rows);

    let (a, b) = t.span().unwrap();
    let w = Window { from: a + (b - a) / 4, to: a + (b - a) / 4 + 1_000_000_000 };
    let part = dir.path().join("part.parquet");
    pq::export(&t, w, &part).unwrap();
    let (rows, _, _) = read(&part);
    let want: Vec<CpuEvent> = want.into_iter().filter(|e| w.contains(e.ev.ts)).collect();
    assert!(!want.is_empty());
    check(&t, &want, &rows);
}

#[test]
fn unwritable_output_is_one_line_naming_it() {
    let o = common::Opts { steps: 100, ..Default::default() };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.wct");
    common::write(&p, &o);
    let t = Trace::open(&p).unwrap();
    let out = dir.path().join("missing/t.parquet");
    let e = pq::export(&t, Window::ALL, &out).unwrap_err().to_string();
    assert!(e.contains("missing/t.parquet") && !e.contains('\n'), "{e}");
}
